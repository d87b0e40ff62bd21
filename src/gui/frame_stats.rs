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
