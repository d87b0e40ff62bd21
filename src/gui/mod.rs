//! The desktop app (eframe/egui): inputs on the left, Breakdown | Machines | Serving | CPU vs GPU |
//! Report in the centre.
//!
//! - [`state`]: the persisted [`State`] (scenario + UI choices), `#[serde(default)]` throughout.
//! - [`app`]: [`HeadroomApp`], the frame loop, job results, the top bar, status bar and summary
//!   strip; `command`: the [`Command`]s views push while drawing, applied after it.
//! - `data`: what the views read (catalog, machines, derived numbers, notices) and `View`, the
//!   one-frame access a view gets.
//! - `derived`: caches of the core's answers (estimate, fits, solvers, teaching curves,
//!   placements on the compared machines, table rows), rebuilt only when inputs change. No
//!   model arithmetic lives in the GUI: it asks `core` and draws.
//! - `jobs`: detection, file dialogs and file IO on worker threads (never on the UI thread).
//! - One struct per view, each with its own `ui()`: `inputs::InputsPanel`,
//!   `breakdown::BreakdownTab`, `machines::MachinesTab`, `serving::ServingTab` (many users: the
//!   plans of `core::serving`, cached in `derived`), `teach::TeachTab`, `report::ReportTab`.
//! - `recommend`: the strip of recommendation cards under the tabs; `hub_dialog`: "Open from
//!   Hugging Face...".
//! - `status`: status-bar messages; `frame_stats`: the frame-time log; `style`: colours, badges.
//!
//! Environment: `HEADROOM_FRAME_STATS=1` (or `=N`) logs the mean and max CPU time of `App::ui`
//! every 120 (or N) frames; `HEADROOM_QUIT_AFTER_FRAMES=N` closes the window after N frames
//! (smoke tests under Xvfb). Both keep the window repainting while active.
//! `HEADROOM_TAB=machines` (or `breakdown`, `serving`, `cluster`, `cpu-vs-gpu`, `report`) opens on that tab;
//! `HEADROOM_WINDOW_SIZE=1920x1080` opens the window at that inner size (scripted screenshots);
//! `HEADROOM_SCENARIO=FILE` opens a saved scenario and `HEADROOM_FOCUS=MACHINE` focuses a machine
//! (the CPU-vs-GPU tab's) at start; `HEADROOM_VERIFY=1` (or `=FILE.gguf`) opens "Verify with
//! llama-bench" (and names its GGUF). `HEADROOM_RENDERER=wgpu` draws with wgpu instead of OpenGL
//! (glow), see [`renderer`].

pub mod app;
mod breakdown;
mod cluster;
mod command;
mod data;
mod derived;
mod frame_stats;
pub mod hub_dialog;
mod icon;
mod image;
mod inputs;
pub mod jobs;
mod machines;
mod quality;
mod recommend;
mod report;
mod serving;
pub mod state;
mod status;
mod style;
mod teach;
pub mod verify;

pub use app::HeadroomApp;
pub use command::Command;
pub use jobs::FileAction;
pub use state::{MachineFilter, SortColumn, State, Tab};
pub use status::Status;

use crate::core::catalog::Catalog;

/// The catalog the app starts with: the built-in one with the user's catalog files merged over
/// it, plus one warning per user file that could not be read.
pub fn load_catalog() -> (Catalog, Vec<String>) {
    crate::io::catalog::load_default()
}

/// The window's renderer: OpenGL through glow, or wgpu when `HEADROOM_RENDERER=wgpu`.
///
/// Under software rendering (Mesa's llvmpipe: a machine or VM without a GPU driver, remote
/// desktops) a glow frame of this window costs about a fifth of the CPU time of a wgpu frame —
/// 21 against 103 ms at 1920×1080 under Xvfb (`HEADROOM_QUIT_AFTER_FRAMES` runs, user + system
/// time per frame) — and that is what a dragged slider waits for: the input-to-frame latency of
/// `benches/drag_latency.sh` falls from a median of 106 to 28–36 ms. wgpu's GL backend draws into
/// its own texture and copies it to the window, and its surface queues two frames by default
/// (egui-wgpu `SurfaceConfig::HIGH_THROUGHPUT`). On a GPU both renderers take well under a
/// millisecond.
fn renderer() -> eframe::Renderer {
    match std::env::var("HEADROOM_RENDERER") {
        Ok(v) if v.trim().eq_ignore_ascii_case("wgpu") => eframe::Renderer::Wgpu,
        _ => eframe::Renderer::Glow,
    }
}

/// Opens the window and runs the app until it is closed.
pub fn run_app() -> eframe::Result<()> {
    let size = std::env::var("HEADROOM_WINDOW_SIZE")
        .ok()
        .and_then(|v| {
            let (w, h) = v.trim().split_once('x')?;
            Some([w.parse::<f32>().ok()?, h.parse::<f32>().ok()?])
        })
        .filter(|[w, h]| (320.0..=8192.0).contains(w) && (240.0..=8192.0).contains(h))
        .unwrap_or([1280.0, 800.0]);
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("headroom - will this LLM run?")
            .with_app_id("headroom")
            .with_icon(icon::window_icon())
            .with_inner_size(size)
            .with_min_inner_size([960.0, 600.0]),
        renderer: renderer(),
        ..Default::default()
    };
    eframe::run_native(
        "headroom",
        options,
        Box::new(|cc| Ok(Box::new(HeadroomApp::new(cc)))),
    )
}
