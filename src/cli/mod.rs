//! The headless command line over the core.
pub mod detect;
pub mod catalog;
pub mod report;
pub mod app;
