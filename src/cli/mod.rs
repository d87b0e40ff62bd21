//! The headless command line over the core.
pub mod app;
pub mod args;
pub mod calibrate;
pub mod catalog;
pub mod detect;
pub mod estimate;
pub mod fit;
pub mod recommend;
pub mod report;
pub mod scenario;
pub mod values;
