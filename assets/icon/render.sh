#!/usr/bin/env bash
# Renders headroom.svg to the PNG sizes the desktop entry and the window use (hicolor theme sizes).
# Needs rsvg-convert (Debian: librsvg2-bin). The PNGs are committed; rerun after editing the SVG.
set -euo pipefail
cd "$(dirname "$0")"
for s in 16 32 48 64 128 256 512; do
  rsvg-convert -w "$s" -h "$s" headroom.svg -o "headroom-$s.png"
done
