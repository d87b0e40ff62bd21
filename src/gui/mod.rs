//! The desktop app (eframe/egui): inputs on the left, Breakdown | Machines | CPU vs GPU | Report
//! in the centre.
//!
//! - [`state`]: the persisted [`State`] (scenario + UI choices), `#[serde(default)]` throughout.
//! - [`app`]: [`HeadroomApp`], the frame loop, [`Command`]s applied after drawing, job results.
//! - `derived`: the estimate, fits, solvers and teaching curves, recomputed only when inputs change.
//! - `jobs`: detection, file dialogs and file IO on worker threads (never on the UI thread).
//! - `inputs`, `breakdown`, `machines`, `teach`, `report`: the views.
//!
//! Environment: `HEADROOM_FRAME_STATS=1` (or `=N`) logs the mean and max CPU time of `App::ui`
//! every 120 (or N) frames; `HEADROOM_QUIT_AFTER_FRAMES=N` closes the window after N frames
//! (smoke tests under Xvfb). Both keep the window repainting while active.
//! `HEADROOM_TAB=machines` (or `breakdown`, `cpu-vs-gpu`, `report`) opens on that tab.

pub mod app;
mod breakdown;
mod derived;
pub mod hub_dialog;
mod inputs;
pub mod jobs;
mod machines;
mod recommend;
mod report;
pub mod state;
mod style;
mod teach;

pub use app::{Command, HeadroomApp};
pub use jobs::FileAction;
pub use state::{MachineFilter, SortColumn, State, Tab};

use crate::core::catalog::Catalog;

/// The catalog the app starts with: the built-in one with the user's catalog files merged over
/// it, plus one warning per user file that could not be read.
pub fn load_catalog() -> (Catalog, Vec<String>) {
    crate::io::catalog::load_default()
}

/// Opens the window and runs the app until it is closed.
pub fn run_app() -> eframe::Result<()> {
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("headroom - will this LLM run?")
            .with_app_id("headroom")
            .with_inner_size([1280.0, 800.0])
            .with_min_inner_size([960.0, 600.0]),
        ..Default::default()
    };
    eframe::run_native(
        "headroom",
        options,
        Box::new(|cc| Ok(Box::new(HeadroomApp::new(cc)))),
    )
}
