#!/usr/bin/env bash
# Input-to-frame latency of the real window while the Context slider is dragged (issue: "lag while
# dragging"), at 1920x1080 under Xvfb with Mesa's software rasteriser (llvmpipe), on a release
# build. A measurement, not a CI check: run it on an otherwise idle machine.
#   benches/drag_latency.sh [BINARY] [WxH] [--max-p95-ms N]
# BINARY defaults to target/release/headroom (build it first: cargo build --release).
# Needs Xvfb (apt-get install xvfb) and python-xlib, which it installs into target/latency-venv.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/headroom}; size=${2:-1920x1080}; shift $(( $# > 2 ? 2 : $# )) || true
[ -x "$bin" ] || { echo "drag_latency: no binary at $bin (cargo build --release)" >&2; exit 2; }
command -v Xvfb >/dev/null || { echo "drag_latency: Xvfb is not installed (apt-get install xvfb)" >&2; exit 2; }
venv=target/latency-venv
[ -x $venv/bin/python ] || python3 -m venv $venv
$venv/bin/python -c 'import Xlib' 2>/dev/null ||
  $venv/bin/python -m pip install --quiet --disable-pip-version-check python-xlib==0.33

d=120; while [ -e /tmp/.X$d-lock ] || [ -e /tmp/.X11-unix/X$d ]; do d=$((d+1)); done
Xvfb :$d -screen 0 "${size}x24" -nolisten tcp >/dev/null 2>&1 & xpid=$!
cfg=$(mktemp -d); log=$cfg/app.log
cleanup() { kill "${apid:-}" "$xpid" 2>/dev/null || true; rm -rf "$cfg"; }
trap cleanup EXIT
sleep 1
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
# A fresh config and data folder, so a saved window state or user catalog does not change the run.
DISPLAY=:$d WAYLAND_DISPLAY= HOME=$cfg HEADROOM_CONFIG_DIR=$cfg LIBGL_ALWAYS_SOFTWARE=1 \
  HEADROOM_WINDOW_SIZE=$size HEADROOM_LATENCY_PROBE=1 "$bin" >"$log" 2>&1 & apid=$!
DISPLAY=:$d $venv/bin/python benches/drag_latency.py --log "$log" "$@"
