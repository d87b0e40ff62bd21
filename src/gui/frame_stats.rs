//! `HEADROOM_FRAME_STATS` and `HEADROOM_QUIT_AFTER_FRAMES`: the CPU time of `App::ui` logged
//! every N frames, and a window that closes itself after N frames (smoke tests under Xvfb).

use super::state::Tab;
use std::time::Duration;

#[derive(Default)]
pub(crate) struct FrameStats {
    /// Log the mean/max time of `App::ui` every this many frames.
    every: Option<u32>,
    quit_after: Option<u64>,
    n: u32,
    sum: Duration,
    max: Duration,
    frames: u64,
}

impl FrameStats {
    pub fn from_env() -> Self {
        let every = std::env::var("HEADROOM_FRAME_STATS")
            .ok()
            .and_then(|v| match v.trim() {
                "" | "0" | "false" => None,
                "1" | "true" => Some(120),
                n => n.parse::<u32>().ok().filter(|n| *n > 0),
            });
        let quit_after = std::env::var("HEADROOM_QUIT_AFTER_FRAMES")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|n| *n > 0);
        FrameStats {
            every,
            quit_after,
            ..FrameStats::default()
        }
    }

    /// Records one frame; returns whether the app must keep repainting (measuring or counting).
    pub fn record(&mut self, took: Duration, ctx: &egui::Context, tab: Tab) -> bool {
        self.frames += 1;
        if let Some(every) = self.every {
            self.n += 1;
            self.sum += took;
            self.max = self.max.max(took);
            if self.n >= every {
                let mean = self.sum.as_secs_f64() * 1000.0 / self.n as f64;
                eprintln!(
                    "headroom frame stats: {} frames on the {} tab: App::ui mean {}, max {}",
                    self.n,
                    tab.label(),
                    crate::core::format::millis_hundredths(mean),
                    crate::core::format::millis_hundredths(self.max.as_secs_f64() * 1000.0)
                );
                self.n = 0;
                self.sum = Duration::ZERO;
                self.max = Duration::ZERO;
            }
        }
        if let Some(q) = self.quit_after
            && self.frames >= q
        {
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
            return false;
        }
        self.every.is_some() || self.quit_after.is_some()
    }
}

/// `HEADROOM_LATENCY_PROBE=1`: machine-readable lines on stderr for the drag-latency harness
/// (`benches/drag_latency.py`): where a widget is (once per label) and, for every frame, when
/// `App::ui` ended (microseconds since the Unix epoch, the clock the harness reads too) and how
/// long it took. Off unless the variable is set; it never asks for a repaint.
pub(crate) fn probe_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var("HEADROOM_LATENCY_PROBE").is_ok_and(|v| !matches!(v.trim(), "" | "0"))
    })
}

/// The probe's line for `label`'s rectangle in window pixels (logged once per label).
pub(crate) fn probe_widget(label: &'static str, rect: egui::Rect, pixels_per_point: f32) {
    static SEEN: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    if !probe_enabled() {
        return;
    }
    let mut seen = SEEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if seen.contains(&label) {
        return;
    }
    seen.push(label);
    let px = |v: f32| (v * pixels_per_point).round() as i64;
    eprintln!(
        "headroom probe: widget {label} x={} y={} w={} h={}",
        px(rect.left()),
        px(rect.top()),
        px(rect.width()),
        px(rect.height())
    );
}

/// The probe's line for one frame: when `App::ui` ended and its CPU time.
pub(crate) fn probe_frame(took: Duration) {
    if !probe_enabled() {
        return;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    eprintln!(
        "headroom probe: frame end_us={} ui_us={}",
        now.as_micros(),
        took.as_micros()
    );
}
