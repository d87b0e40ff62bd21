//! The pure core: model specs, precisions, estimation, speed, fit, catalog types and scenarios.
//!
//! Nothing in here touches egui, sysinfo, NVML, rfd or the file system; every other layer depends
//! on it, never the other way.

pub mod catalog;
pub mod cluster;
pub mod diffusion;
pub mod embed;
pub mod estimate;
pub mod fit;
pub mod format;
pub mod ggml;
pub mod hf_config;
pub mod launch_line;
pub mod mlx;
pub mod model;
pub mod model_limits;
pub mod placement;
pub mod precision;
pub mod quality;
pub mod recommend;
pub mod scenario;
pub mod serving;
pub mod speculative;
pub mod speed;
pub mod teach;
pub mod units;
pub mod verify;
pub mod vision;

pub use estimate::{Component, ComponentKind, Estimate, Placement, Provenance, estimate};
pub use model::{ModelSpec, ParamCount};
pub use precision::{KvPrecision, KvTypes, WeightPrecision};
pub use scenario::{Mode, Runtime, Scenario};
pub use units::Bytes;
