//! The headless command line over the core.
pub mod app;
pub mod calibrate;
pub mod catalog;
pub mod detect;
pub mod recommend;
pub mod report;
