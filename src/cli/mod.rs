//! The headless command line over the core.

/// `headroom --version`: the crate version and the built-in catalogs' date (the newest date in
/// their `*date` fields, found by `build.rs`).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (catalog ",
    env!("HEADROOM_CATALOG_DATE"),
    ")"
);

pub mod app;
pub mod args;
pub mod calibrate;
pub mod catalog;
pub mod cluster;
pub mod detect;
pub mod estimate;
pub mod fit;
pub mod image;
pub mod launch_line;
pub mod quality;
pub mod recommend;
pub mod report;
pub mod scenario;
pub mod serve;
pub mod values;
pub mod verify;
