//! The pure core: model specs, precisions, estimation, speed, fit, catalog types and scenarios.
//!
//! Nothing in here touches egui, sysinfo, NVML, rfd or the file system; every other layer depends
//! on it, never the other way.

pub mod catalog;
pub mod estimate;
pub mod fit;
pub mod hf_config;
pub mod model;
pub mod precision;
pub mod recommend;
pub mod scenario;
pub mod speed;
pub mod units;

pub use estimate::{Component, ComponentKind, Estimate, Placement, Provenance, estimate};
pub use model::{ModelSpec, ParamCount};
pub use precision::{KvPrecision, KvTypes, WeightPrecision};
pub use scenario::{Mode, Runtime, Scenario};
pub use units::Bytes;

/// "8.03B", "70.6B", "1.50T", "494M".
pub fn format_params(p: u64) -> String {
    let x = p as f64;
    if x >= 1e12 {
        format!("{:.2}T", x / 1e12)
    } else if x >= 1e9 {
        format!("{:.2}B", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.0}M", x / 1e6)
    } else {
        format!("{p}")
    }
}
