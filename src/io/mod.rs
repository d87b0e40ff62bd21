//! Everything that touches the outside world: catalog files, model files, detection, export.
pub mod json;
pub mod detect;
pub mod import;
pub mod catalog;
pub mod export;
