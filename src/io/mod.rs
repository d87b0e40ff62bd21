//! Everything that touches the outside world: catalog files, model files, detection, export.
pub mod calibration;
pub mod catalog;
pub mod clock;
pub mod detect;
pub mod export;
pub mod hub;
pub mod import;
pub mod json;
