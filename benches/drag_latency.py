#!/usr/bin/env python3
"""Input-to-frame latency of the real headroom window while the Context slider is dragged.

Run it through `benches/drag_latency.sh` (which starts Xvfb, the release build with
`HEADROOM_LATENCY_PROBE=1`, and this script); it needs python-xlib.

How it measures, on the X server itself (no timing inside the app is trusted for the result):
- The app prints where the Context slider is (`headroom probe: widget Context x= y= w= h=`).
- The script asks the X DAMAGE extension to report every change to the app's window pixels
  (DamageReportRawRectangles: one event per drawing request, so every presented frame shows up).
- It presses the mouse on the slider with the XTEST extension, then moves the pointer along the
  slider in steps. For each move it takes the time just after the move reached the server
  (XSync) and waits for the window to be drawn again; the move's latency is the time from the
  move to the last damage of the burst that follows it (the frame that shows the move's result:
  egui may draw more than one frame for one input, and the last one is the one that stays).
  A burst ends after QUIET_MS without damage; that wait is not part of the latency.
- The app's own `ui` time per frame (its probe lines) is read from its log for the breakdown.

Prints the median, 95th percentile and maximum in milliseconds and exits 0; `--max-p95-ms N`
makes it exit 1 when the 95th percentile is above N.
"""
import argparse
import re
import select
import statistics
import sys
import time

from Xlib import X, display
from Xlib.ext import damage, xtest

QUIET_MS = 120.0  # no damage for this long ends a frame burst (several frames at 60 Hz)
SETTLE_S = 0.15  # pause between moves, so each move starts from an idle window
TIMEOUT_S = 3.0  # a move with no damage within this is reported as lost
MIN_FRAME_PX = 256 * 256  # damage smaller than this is the pointer's sprite, not a frame


def read_probe(log_path, label, timeout_s=60.0):
    """The widget rectangle the app printed for `label`, waiting for the app to start."""
    pat = re.compile(
        r"headroom probe: widget %s x=(-?\d+) y=(-?\d+) w=(\d+) h=(\d+)" % re.escape(label)
    )
    end = time.time() + timeout_s
    while time.time() < end:
        try:
            with open(log_path, encoding="utf-8", errors="replace") as f:
                m = pat.search(f.read())
        except FileNotFoundError:
            m = None
        if m:
            return tuple(int(v) for v in m.groups())
        time.sleep(0.2)
    sys.exit(f"drag_latency: no '{label}' probe line in {log_path} after {timeout_s:.0f} s")


def app_window(d):
    """The largest viewable top-level window (the app: Xvfb runs no window manager)."""
    best = None
    for w in d.screen().root.query_tree().children:
        try:
            if w.get_attributes().map_state != X.IsViewable:
                continue
            g = w.get_geometry()
        except Exception:  # a window that went away meanwhile
            continue
        if best is None or g.width * g.height > best[1]:
            best = (w, g.width * g.height, g.x, g.y)
    if best is None:
        sys.exit("drag_latency: no viewable window on the display")
    return best[0], best[2], best[3]


def drain(d, until):
    """Damage event times (time.time()) until `until` or QUIET_MS after the last one."""
    times = []
    while True:
        now = time.time()
        last = times[-1] if times else None
        deadline = until if last is None else min(until, last + QUIET_MS / 1000.0)
        if now >= deadline:
            return times
        while d.pending_events():
            ev = d.next_event()
            # A presented frame redraws the whole window; Xvfb's software cursor damages only
            # the few pixels under the pointer, which is not a frame.
            if ev.__class__.__name__ == "DamageNotify" and ev.area.width * ev.area.height >= MIN_FRAME_PX:
                times.append(time.time())
        if times and times[-1] != last:
            continue
        select.select([d], [], [], max(0.0, deadline - time.time()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", required=True, help="the app's stderr log (probe lines)")
    ap.add_argument("--moves", type=int, default=60)
    ap.add_argument("--max-p95-ms", type=float, default=None)
    ap.add_argument("--verbose", action="store_true", help="print every move's frame times")
    a = ap.parse_args()

    x0, y0, w, h = read_probe(a.log, "Context")
    time.sleep(1.0)  # the first frames after start-up
    d = display.Display()
    if not d.has_extension("DAMAGE") or not d.has_extension("XTEST"):
        sys.exit("drag_latency: the X server lacks DAMAGE or XTEST")
    d.damage_query_version()
    win, wx, wy = app_window(d)
    dmg = win.damage_create(damage.DamageReportRawRectangles)
    d.sync()

    y = wy + y0 + h // 2
    left, right = wx + x0 + 4, wx + x0 + w - 4
    xtest.fake_input(d, X.MotionNotify, x=left, y=y)
    d.sync()
    drain(d, time.time() + 0.5)
    xtest.fake_input(d, X.ButtonPress, 1)
    d.sync()
    drain(d, time.time() + 0.5)

    lat = []
    first = []
    lost = 0
    t_start = time.time()
    for i in range(a.moves):
        # Back and forth over the slider, as a hand drags it.
        k = i % 30
        frac = k / 29.0 if (i // 30) % 2 == 0 else 1.0 - k / 29.0
        x = int(left + frac * (right - left))
        time.sleep(SETTLE_S)
        while d.pending_events():  # drop what came in meanwhile (the last move's late frames)
            d.next_event()
        xtest.fake_input(d, X.MotionNotify, x=x, y=y)
        d.sync()
        t0 = time.time()
        times = drain(d, t0 + TIMEOUT_S)
        if times:
            first.append((times[0] - t0) * 1000.0)
            lat.append((times[-1] - t0) * 1000.0)
            if a.verbose:
                print(f"move {i}: x={x} frames at " + ", ".join(f"{(t - t0) * 1000.0:.1f}" for t in times) + " ms")
        else:
            lost += 1
    xtest.fake_input(d, X.ButtonRelease, 1)
    d.sync()
    d.damage_destroy(dmg)
    d.close()

    ui_ms = []
    with open(a.log, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"headroom probe: frame end_us=(\d+) ui_us=(\d+)", line)
            if m and int(m.group(1)) / 1e6 >= t_start:
                ui_ms.append(int(m.group(2)) / 1000.0)

    if not lat:
        sys.exit("drag_latency: no move was followed by a frame")

    def pct(v, q):
        v = sorted(v)
        return v[min(len(v) - 1, round(q * (len(v) - 1)))]

    p95 = pct(first, 0.95)
    print(
        f"drag_latency: {len(first)} moves ({lost} without a frame): input to the frame that "
        f"shows it median {statistics.median(first):.1f} ms, p95 {p95:.1f} ms, "
        f"max {max(first):.1f} ms"
    )
    print(
        f"drag_latency: input to the last frame of its burst (egui's hover and fade animations "
        f"included) median {statistics.median(lat):.1f} ms, p95 {pct(lat, 0.95):.1f} ms, "
        f"max {max(lat):.1f} ms"
    )
    if ui_ms:
        ui_ms.sort()
        print(
            f"drag_latency: the app's ui() per frame over {len(ui_ms)} frames: "
            f"median {statistics.median(ui_ms):.1f} ms, max {ui_ms[-1]:.1f} ms"
        )
    if a.max_p95_ms is not None and p95 > a.max_p95_ms:
        print(f"drag_latency: p95 {p95:.1f} ms is above {a.max_p95_ms} ms", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
