//! The real detector: sysinfo for RAM/CPU/OS, NVML for NVIDIA, sysfs for AMD (Linux), sysctl for
//! Apple Silicon (macOS).

use super::{CpuInfo, DetectedMachine, Detector, amd, nvidia};
use crate::core::catalog::Catalog;
use crate::core::units::Bytes;
use std::path::PathBuf;
use sysinfo::{CpuRefreshKind, MemoryRefreshKind, RefreshKind, System};

/// Detects this machine and matches its GPUs against `catalog`. Each [`Detector::detect`] call
/// reads afresh (a few ms without NVIDIA; NVML's init takes longer), so run it off the UI thread.
#[derive(Clone, Debug)]
pub struct SystemDetector {
    catalog: Catalog,
    sysfs_root: PathBuf,
}

impl Default for SystemDetector {
    /// No catalog: GPUs stay unmatched. Prefer [`SystemDetector::new`] with the built-in catalog.
    fn default() -> Self {
        SystemDetector::new(Catalog::default())
    }
}

impl SystemDetector {
    pub fn new(catalog: Catalog) -> Self {
        SystemDetector {
            catalog,
            sysfs_root: PathBuf::from("/sys"),
        }
    }

    /// Reads AMD GPUs from `root/class/drm` instead of `/sys` (tests).
    pub fn with_sysfs_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.sysfs_root = root.into();
        self
    }
}

struct Basics {
    ram_total: Bytes,
    ram_available: Bytes,
    cpu: CpuInfo,
    os: String,
}

fn os_string() -> String {
    let base = System::long_os_version()
        .or_else(|_| System::name())
        .unwrap_or_else(|_| std::env::consts::OS.to_string());
    match System::kernel_version() {
        Ok(k) if cfg!(target_os = "linux") => format!("{base}, kernel {k}"),
        _ => base,
    }
}

fn basics(notes: &mut Vec<String>) -> Basics {
    let kind = RefreshKind::nothing()
        .with_memory(MemoryRefreshKind::nothing().with_ram())
        .with_cpu(CpuRefreshKind::nothing());
    let sys = match System::new_with_specifics(kind) {
        Ok(s) => s,
        Err(e) => {
            notes.push(format!(
                "System: RAM and CPU not detected: sysinfo failed ({e}); RAM shown as 0"
            ));
            return Basics {
                ram_total: Bytes::ZERO,
                ram_available: Bytes::ZERO,
                cpu: CpuInfo::default(),
                os: os_string(),
            };
        }
    };
    let threads = sys.cpus().len() as u32;
    let cores = match System::physical_core_count() {
        Ok(c) => c as u32,
        Err(e) => {
            notes.push(format!(
                "System: physical core count not readable ({e}); using the logical count"
            ));
            threads
        }
    };
    let name = sys
        .cpus()
        .first()
        .map(|c| c.brand().trim().to_string())
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| {
            notes.push("System: CPU brand not readable".into());
            "unknown CPU".into()
        });
    let ram_total = Bytes(sys.total_memory());
    if ram_total.0 == 0 {
        notes.push("System: total RAM not readable".into());
    }
    if let Some(lim) = sys.cgroup_limits()
        && lim.total_memory > 0
        && lim.total_memory < ram_total.0
    {
        notes.push(format!(
            "System: this process runs in a container limited to {} of the machine's {} RAM",
            Bytes(lim.total_memory),
            ram_total
        ));
    }
    Basics {
        ram_total,
        ram_available: Bytes(sys.available_memory()),
        cpu: CpuInfo {
            name,
            cores,
            threads,
        },
        os: os_string(),
    }
}

impl Detector for SystemDetector {
    fn detect(&self) -> DetectedMachine {
        let mut notes = Vec::new();
        let b = basics(&mut notes);
        let mut gpus = nvidia::probe(&mut notes);
        if cfg!(target_os = "linux") {
            let drm = amd::read_drm(&self.sysfs_root);
            let n = gpus.len();
            gpus.extend(amd::gpus_from_drm(&drm, n, &mut notes));
        }
        #[cfg(target_os = "macos")]
        let unified = super::apple::probe(&mut notes).1;
        #[cfg(not(target_os = "macos"))]
        let unified = None;
        let storage = super::disk::probe(None, unified.is_some(), &mut notes);
        let mut d = DetectedMachine {
            ram_total: b.ram_total,
            ram_available: b.ram_available,
            cpu: b.cpu,
            os: b.os,
            gpus,
            unified_memory: unified,
            storage,
            notes,
        };
        if d.gpus.is_empty() && d.unified_memory.is_none() {
            d.notes.push("No GPU detected: sizing for CPU only".into());
        }
        d.match_catalog(&self.catalog);
        d
    }
}
