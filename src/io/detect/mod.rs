//! "Will it run on MY machine?": detect this machine's RAM, CPU and GPUs.
//!
//! A thin IO layer over pure conversion functions, in the manner of bottom's collection layer
//! (one file per source) and llmfit's split between running a probe and parsing its output:
//!
//! | source | what | IO (this machine only) | pure, tested everywhere |
//! |---|---|---|---|
//! | sysinfo 0.40 | RAM total/available, CPU brand, cores, OS | `system` | — |
//! | NVML (feature `nvml`) | every NVIDIA GPU: memory, PCIe, bus, clocks, driver, processes | [`nvidia`] `probe` | [`nvidia::gpu_from_nvml`], [`nvidia::bandwidth_gbs`], [`nvidia::format_cuda_version`] |
//! | `sysctl` (macOS) | `hw.memsize`, `machdep.cpu.brand_string`, `iogpu.wired_limit_mb` | [`apple`] `probe` | [`apple::parse_sysctl`], [`apple::unified_memory`] |
//! | `/sys/class/drm` (Linux) | AMD GPUs/APUs: VRAM, GTT, PCIe link | [`amd::read_drm`] (takes a root, so a fixture tree works) | [`amd::gpu_from_sysfs`] |
//!
//! Every failure becomes a line in [`DetectedMachine::notes`] — never a panic, never a silent
//! empty list. NVML always leaves exactly one summary note starting with `"NVML: "`.
//!
//! [`match_accelerator`] ties a detected GPU to a catalog accelerator; [`local_machine`] turns the
//! whole detection into a catalog [`Machine`](crate::core::catalog::Machine) with id `"local"`.
//! Tests and the GUI inject a [`FakeDetector`]; the real one is [`SystemDetector`].

pub mod amd;
pub mod apple;
pub mod disk;
mod local;
mod matching;
pub mod nvidia;
mod system;

pub mod probe;
pub use local::{LOCAL_GPU_ID, LOCAL_MACHINE_ID, catalog_with_local, local_machine};
pub use matching::{NameTokens, match_accelerator, match_accelerator_with_vram, name_tokens};
pub use system::SystemDetector;

use crate::core::catalog::{Catalog, Vendor};
use crate::core::format;
use crate::core::units::{Bytes, GbPerSec};
use serde::{Deserialize, Serialize};

/// Everything detected about this machine. Serialises to the `headroom detect --json` contract
/// (bytes as integers); field names are a contract: add fields, never rename.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DetectedMachine {
    /// Installed RAM (Linux: `/proc/meminfo` MemTotal).
    pub ram_total: Bytes,
    /// RAM available to a new process now (Linux: MemAvailable).
    pub ram_available: Bytes,
    pub cpu: CpuInfo,
    /// "Debian GNU/Linux 12 (bookworm)", "macOS 15.1".
    pub os: String,
    /// Discrete (or APU) GPUs, in the order the driver lists them.
    pub gpus: Vec<DetectedGpu>,
    /// Apple Silicon: the unified pool and how much of it Metal lets the GPU wire.
    pub unified_memory: Option<UnifiedMemory>,
    /// The disk behind the current folder (sysinfo: kind, size, free space).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage: Option<crate::core::catalog::Storage>,
    /// What could not be read and what was assumed, in plain words.
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuInfo {
    /// Brand string: "AMD Ryzen 9 7950X 16-Core Processor", "Apple M2".
    pub name: String,
    /// Physical cores.
    pub cores: u32,
    /// Logical CPUs (hardware threads).
    pub threads: u32,
}

/// Where a GPU entry came from.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuSource {
    /// NVIDIA Management Library: complete.
    #[default]
    Nvml,
    /// Linux `/sys/class/drm` (amdgpu): partial (no clocks, bus width or processes).
    Sysfs,
    /// Built by a [`FakeDetector`].
    Fake,
}

/// One process holding GPU memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuProcess {
    pub pid: u32,
    /// `None` when the name could not be read (another user's process, another PID namespace).
    pub name: Option<String>,
    /// `None` when the driver does not say (Windows WDDM).
    pub used: Option<Bytes>,
}

/// One detected GPU. `Option` fields are `None` when the source could not read them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DetectedGpu {
    /// As the driver names it: "NVIDIA GeForce RTX 4090".
    pub name: String,
    pub vendor: Option<Vendor>,
    pub vram_total: Bytes,
    /// Unallocated now: what a new model can use (before its runtime reserve).
    pub vram_free: Bytes,
    /// Allocated by the desktop and other processes.
    pub vram_used: Bytes,
    /// amdgpu GTT: system memory the GPU can map (APUs use it as their pool).
    pub gtt_total: Option<Bytes>,
    /// Current PCIe link generation (drops at idle on power-saving links).
    pub pcie_gen: Option<u32>,
    /// Current PCIe link width (lanes).
    pub pcie_width: Option<u32>,
    /// Highest generation the card and slot together support.
    pub pcie_max_gen: Option<u32>,
    pub pcie_max_width: Option<u32>,
    /// Memory bus width in bits.
    pub memory_bus_width: Option<u32>,
    /// Highest memory clock NVML reports, MHz.
    pub max_memory_clock_mhz: Option<u32>,
    /// Derived peak bandwidth, GB/s: see [`nvidia::bandwidth_gbs`]. The catalog value wins when matched.
    pub bandwidth_gbs: Option<f64>,
    pub driver_version: Option<String>,
    /// Highest CUDA version the driver supports: "12.4".
    pub cuda_version: Option<String>,
    pub processes: Vec<GpuProcess>,
    /// Catalog accelerator id this GPU matched.
    pub matched: Option<String>,
    pub source: GpuSource,
}

/// Apple Silicon's unified memory and the GPU's share of it (docs/apple-unified-memory.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct UnifiedMemory {
    /// "Apple M2", "Apple M3 Max".
    pub chip: String,
    /// `hw.memsize`.
    pub total: Bytes,
    /// What Metal's `recommendedMaxWorkingSetSize` gives by default: 2/3 of RAM up to 32 GiB, 3/4 above.
    pub default_gpu_limit: Bytes,
    /// `iogpu.wired_limit_mb` when set (non-zero).
    pub wired_limit_mb: Option<u64>,
    /// The cap that applies: the override when set, else the default.
    pub gpu_limit: Bytes,
    /// Catalog accelerator id the chip matched.
    pub matched: Option<String>,
}

impl DetectedMachine {
    /// Fills `matched` for every GPU and the unified chip, saying in `notes` what did not match.
    /// Idempotent: clears earlier matches first.
    pub fn match_catalog(&mut self, catalog: &Catalog) {
        self.notes
            .retain(|n| !n.starts_with(matching::MATCH_NOTE_PREFIX));
        for (i, g) in self.gpus.iter_mut().enumerate() {
            let vram = (g.vram_total.0 > 0).then_some(g.vram_total);
            let outcome = matching::match_detail(&g.name, vram, catalog);
            g.matched = outcome.id;
            if g.matched.is_some() {
                continue;
            }
            for (id, mem) in outcome.refused_for_vram {
                self.notes.push(format!(
                    "{}GPU {i} \"{}\" has the name of '{id}' but {} of VRAM, not {}: taken as a different variant",
                    matching::MATCH_NOTE_PREFIX,
                    g.name,
                    format::gib_one_decimal(g.vram_total),
                    format::gib_one_decimal(mem)
                ));
            }
            self.notes.push(format!(
                "{}GPU {i} \"{}\" is not in the catalog: conservative defaults apply (bandwidth {}, FP16 {} TFLOPS)",
                matching::MATCH_NOTE_PREFIX,
                g.name,
                match g.bandwidth_gbs {
                    Some(b) => format!(
                        "{} from bus width × memory clock",
                        format::bandwidth(GbPerSec(b))
                    ),
                    None => format!(
                        "{} assumed",
                        format::bandwidth(GbPerSec(local::DEFAULT_BANDWIDTH_GBS))
                    ),
                },
                local::DEFAULT_FP16_TFLOPS
            ));
        }
        if let Some(u) = &mut self.unified_memory {
            u.matched = match_accelerator(&u.chip, catalog);
            if u.matched.is_none() {
                self.notes.push(format!(
                    "{}chip \"{}\" is not in the catalog: bandwidth and compute use conservative defaults",
                    matching::MATCH_NOTE_PREFIX,
                    u.chip
                ));
            }
        }
    }
}

/// Something that can describe this machine. Implementations are `Send + Sync` so detection can
/// run off the UI thread (`std::thread::spawn(move || det.detect())`).
pub trait Detector: Send + Sync {
    fn detect(&self) -> DetectedMachine;
}

impl<D: Detector + ?Sized> Detector for std::sync::Arc<D> {
    fn detect(&self) -> DetectedMachine {
        (**self).detect()
    }
}

impl<D: Detector + ?Sized> Detector for Box<D> {
    fn detect(&self) -> DetectedMachine {
        (**self).detect()
    }
}

/// A detector that returns a fixed [`DetectedMachine`], for GUI and fit tests.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FakeDetector {
    pub machine: DetectedMachine,
}

impl FakeDetector {
    pub fn new(machine: DetectedMachine) -> Self {
        FakeDetector { machine }
    }

    /// A CPU-only box: 8 cores / 16 threads, the given RAM, NVML "not detected".
    pub fn cpu_only(ram_total: Bytes, ram_available: Bytes) -> Self {
        FakeDetector::new(DetectedMachine {
            ram_total,
            ram_available,
            cpu: CpuInfo {
                name: "Fake CPU".into(),
                cores: 8,
                threads: 16,
            },
            os: "Fake OS".into(),
            gpus: Vec::new(),
            unified_memory: None,
            storage: None,
            notes: vec!["NVML: not detected: fake detector (no NVIDIA driver)".into()],
        })
    }

    /// A desktop with 64 GiB RAM (48 GiB available) and one NVIDIA GPU on PCIe 4.0 x16.
    /// `matched` stays `None`: call [`FakeDetector::matched`] or let [`local_machine`] match by name.
    pub fn with_gpu(name: &str, vram_total: Bytes, vram_free: Bytes) -> Self {
        let mut f = FakeDetector::cpu_only(Bytes::gib(64), Bytes::gib(48));
        f.machine.notes = vec!["NVML: fake detector, 1 GPU".into()];
        f.push_gpu(name, vram_total, vram_free)
    }

    /// Adds one more NVIDIA GPU (several-GPU machines).
    pub fn push_gpu(mut self, name: &str, vram_total: Bytes, vram_free: Bytes) -> Self {
        self.machine.gpus.push(DetectedGpu {
            name: name.into(),
            vendor: Some(Vendor::Nvidia),
            vram_total,
            vram_free,
            vram_used: vram_total.saturating_sub(vram_free),
            pcie_gen: Some(4),
            pcie_width: Some(16),
            pcie_max_gen: Some(4),
            pcie_max_width: Some(16),
            source: GpuSource::Fake,
            ..Default::default()
        });
        self
    }

    /// A desktop (64 GiB RAM, 48 GiB available) whose NVIDIA GPUs are what NVML answered in
    /// `probe`, failures included: every NVML error can be injected without a driver. The notes
    /// are the ones the real detector writes. `matched` stays `None` (see [`FakeDetector::matched`]).
    pub fn nvml(probe: nvidia::NvmlProbe) -> Self {
        let mut f = FakeDetector::cpu_only(Bytes::gib(64), Bytes::gib(48));
        f.machine.notes.clear();
        f.machine.gpus = nvidia::gpus_from_probe(probe, &mut f.machine.notes);
        if f.machine.gpus.is_empty() {
            f.machine
                .notes
                .push("No GPU detected: sizing for CPU only".into());
        }
        f
    }

    /// An Apple Silicon Mac: `chip` ("Apple M2"), `ram` installed, optional `iogpu.wired_limit_mb`.
    pub fn apple(chip: &str, ram: Bytes, wired_limit_mb: Option<u64>) -> Self {
        let unified = apple::unified_memory(chip, ram, wired_limit_mb);
        FakeDetector::new(DetectedMachine {
            ram_total: ram,
            ram_available: ram.scale(0.6),
            cpu: CpuInfo {
                name: chip.into(),
                cores: 8,
                threads: 8,
            },
            os: "macOS (fake)".into(),
            gpus: Vec::new(),
            unified_memory: Some(unified),
            storage: None,
            notes: vec!["NVML: not detected: not available on macOS".into()],
        })
    }

    pub fn with_ram(mut self, total: Bytes, available: Bytes) -> Self {
        self.machine.ram_total = total;
        self.machine.ram_available = available;
        self
    }

    pub fn with_note(mut self, note: &str) -> Self {
        self.machine.notes.push(note.into());
        self
    }

    /// Fills `matched` against `catalog`, as the real detector does.
    pub fn matched(mut self, catalog: &Catalog) -> Self {
        self.machine.match_catalog(catalog);
        self
    }
}

impl Detector for FakeDetector {
    fn detect(&self) -> DetectedMachine {
        self.machine.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync + 'static>() {}

    #[test]
    fn detectors_can_leave_the_ui_thread() {
        assert_send_sync::<DetectedMachine>();
        assert_send_sync::<SystemDetector>();
        assert_send_sync::<FakeDetector>();
        assert_send_sync::<Box<dyn Detector>>();
        let d: Box<dyn Detector> = Box::new(FakeDetector::with_gpu(
            "NVIDIA GeForce RTX 4090",
            Bytes::gib(24),
            Bytes::gib(23),
        ));
        let got = std::thread::spawn(move || d.detect()).join().unwrap();
        assert_eq!(got.gpus[0].vram_used, Bytes::gib(1));
    }

    #[test]
    fn json_round_trips() {
        let m = FakeDetector::apple("Apple M2", Bytes::gib(16), Some(12000)).machine;
        let s = serde_json::to_string(&m).unwrap();
        let back: DetectedMachine = serde_json::from_str(&s).unwrap();
        assert_eq!(back, m);
    }
}
