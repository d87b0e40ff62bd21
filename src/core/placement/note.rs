//! The notes the fit engine attaches to a machine's result ("20 of 32 layers on the GPU, 12 on
//! the CPU", "runs, but at 0.18 tok/s …"). A note keeps its numbers and becomes text only when a
//! surface shows or serialises it, so fitting the whole catalog formats nothing (the fit
//! engine does no per-machine string work on the numbers path).
//!
//! Every note renders through [`std::fmt::Display`]; in JSON a note is its text.

use crate::core::catalog::StorageKind;
use crate::core::format;
use crate::core::scenario::Framework;
use crate::core::units::{Bytes, GbPerSec};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Why a unified-memory GPU may use the share it may.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum UnifiedLimit {
    /// The machine's catalog entry (or the user) sets the limit.
    Configured,
    /// Apple's Metal `recommendedMaxWorkingSetSize` default.
    MetalDefault,
    /// An AMD APU's default GTT share (heuristic).
    ApuDefault,
}

/// Where the disk tier reads weights from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DiskReader {
    /// llama.cpp maps the file; pages come through the page cache.
    Mmap,
    /// accelerate's `offload_folder`: loaded from disk every forward pass.
    OffloadFolder,
}

/// How the GPU's share of unified memory is raised on this platform.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RaiseHow {
    /// macOS: `sudo sysctl iogpu.wired_limit_mb=N`, until the next reboot.
    Sysctl,
    /// Linux amdgpu: the GTT size on the kernel command line (`amdgpu.gttsize=N`, in MiB, and
    /// `ttm.pages_limit` in 4 KiB pages), after a reboot.
    KernelGtt,
}

/// A raise of the unified GPU's limit: to what, how, and what it leaves the OS.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GpuLimitRaise {
    pub to: Bytes,
    /// What stays for the OS and the other programs (the fit's OS reserve).
    pub leaves: Bytes,
    pub how: RaiseHow,
}

impl GpuLimitRaise {
    /// The limit in MiB as the command takes it.
    pub fn mib(&self) -> u64 {
        self.to.0 >> 20
    }
    /// The command that sets it.
    pub fn command(&self) -> String {
        match self.how {
            RaiseHow::Sysctl => format!("sudo sysctl iogpu.wired_limit_mb={}", self.mib()),
            RaiseHow::KernelGtt => format!(
                "amdgpu.gttsize={} ttm.pages_limit={}",
                self.mib(),
                self.to.0 >> 12
            ),
        }
    }
    /// When it lasts and what it risks.
    pub const fn risk(&self) -> &'static str {
        match self.how {
            RaiseHow::Sysctl => {
                "until the next reboot; wired memory cannot be paged out, so when other apps need more than is left macOS swaps, stalls or kills them"
            }
            RaiseHow::KernelGtt => {
                "on the kernel command line, after a reboot; what the GPU takes is not there for other programs"
            }
        }
    }
}

impl fmt::Display for GpuLimitRaise {
    /// "43,417 MiB, leaving 4.80 GiB to the OS: `sudo sysctl iogpu.wired_limit_mb=43417`
    /// (until the next reboot; …)".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} MiB, leaving {} to the OS: `{}` ({})",
            format::group_digits(self.mib()),
            self.leaves.display_gib(),
            self.command(),
            self.risk()
        )
    }
}

/// One note on a fit result.
#[derive(Clone, Debug, PartialEq)]
pub enum Note {
    /// "as asked: -ngl 32 (32 of 80 layers on the GPU)".
    AskedGpuLayers {
        asked: u64,
        placed: u64,
        layers: u64,
    },
    /// "as asked: --n-cpu-moe 12".
    AskedCpuMoe {
        asked: u64,
    },
    /// "as asked: --tensor-split: GPU 0 25 layers (20.1 GiB), GPU 1 7 layers + output (8.02
    /// GiB); 22.4 GiB usable per GPU".
    TensorSplit {
        /// Repeating layers per GPU, in the GPUs' order.
        layers: Vec<u64>,
        /// What each GPU needs (0: it holds nothing).
        bytes: Vec<Bytes>,
        /// The GPU with the output layer, when every layer is on the GPUs.
        output: Option<usize>,
        usable: Bytes,
    },
    /// "does not fit: the asked split needs 30.1 GiB per GPU (22.4 GiB usable) and 12.0 GiB of
    /// RAM (60.0 GiB usable)".
    AskedSplitShort {
        gpu_need: Bytes,
        gpu_usable: Bytes,
        ram_need: Bytes,
        ram_usable: Bytes,
    },
    /// "GPU may use 21.33 GiB of 32.00 GiB unified memory (Metal default: …)".
    UnifiedShare {
        gpu: Bytes,
        ram: Bytes,
        limit: UnifiedLimit,
    },
    /// "vLLM uses 90 % of VRAM" (`--gpu-memory-utilization`).
    VllmShare {
        utilization: f64,
    },
    /// llama.cpp `-ngl 99 --n-cpu-moe N`.
    ExpertOffload {
        cpu_moe_layers: u64,
        moe_layers_in_ram: u64,
        ram_bytes: Bytes,
    },
    /// `gpu` of `layers` whole layers on the GPU, the rest on the CPU (or streamed over PCIe).
    LayerOffload {
        gpu: u64,
        layers: u64,
        streamed: bool,
    },
    /// Unified memory: `gpu` of `layers` whole layers on the GPU (`gpu_bytes` of the GPU's share),
    /// the rest run by the CPU from the same pool, `pool` of `usable` in all.
    UnifiedOffload {
        gpu: u64,
        layers: u64,
        gpu_bytes: Bytes,
        pool: Bytes,
        usable: Bytes,
    },
    /// Raising the unified GPU's limit to `raise.to` would put the whole model on the GPU.
    GpuLimitRaise(GpuLimitRaise),
    /// The fit assumes the unified GPU's limit raised (the settings ask for it).
    GpuLimitRaised(GpuLimitRaise),
    /// Host RAM cannot hold what stays on the host.
    HostRamShort {
        need: Bytes,
        usable: Bytes,
    },
    TrainingNeedsGpu,
    NoHourlyPrice,
    NoDiskTierVllm,
    /// The disk tier would need more RAM than usable for the KV cache and buffers.
    NoDiskTierRam {
        need: Bytes,
        usable: Bytes,
    },
    /// The model file does not fit on the disk.
    DiskTooSmall {
        file: Bytes,
        disk: StorageKind,
        room: Bytes,
    },
    /// The disk tier's placement and what a token reads.
    OnDisk {
        bytes: Bytes,
        reader: DiskReader,
        per_token: Bytes,
        disk: StorageKind,
        read: GbPerSec,
    },
    /// "runs, but at 0.21 tok/s (a token every 4.80 s)".
    Slow {
        decode_tokens_per_s: f64,
    },
    /// A training framework that offloads to CPU memory only.
    NoDiskTierFramework(Framework),
    /// ZeRO-Infinity's NVMe part does not fit on the disk.
    NvmeTooSmall {
        need: Bytes,
        disk: StorageKind,
        room: Bytes,
    },
    /// ZeRO-Infinity: optimiser states (and parameters) on NVMe.
    ZeroInfinity {
        on_nvme: Bytes,
        params: bool,
        disk: StorageKind,
        moved_per_step: Bytes,
    },
    /// The runtime runs only on Apple silicon and this machine has no Apple GPU (MLX).
    NeedsAppleSilicon,
    /// MLX keeps every layer on the GPU: what does not fit in the GPU's share has nowhere to go.
    MlxAllOnGpu {
        need: Bytes,
        usable: Bytes,
    },
    /// mlx-lm's own warning: the model takes more than 0.9 of the wired limit.
    MlxNearWiredLimit {
        weights: Bytes,
        limit: Bytes,
    },
    /// Any other text (a calibration, a note read back from JSON).
    Text(String),
}

impl Note {
    /// Whether the CLI repeats the note under a disk-tier row.
    pub fn is_disk_tier(&self) -> bool {
        matches!(
            self,
            Note::OnDisk { .. } | Note::Slow { .. } | Note::ZeroInfinity { .. }
        )
    }
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::AskedGpuLayers {
                asked,
                placed,
                layers,
            } => write!(
                f,
                "as asked: -ngl {asked} ({} of {} layers on the GPU)",
                placed.min(layers),
                layers
            ),
            Note::TensorSplit {
                layers,
                bytes,
                output,
                usable,
            } => {
                write!(f, "as asked: --tensor-split:")?;
                for (i, (l, b)) in layers.iter().zip(bytes).enumerate() {
                    let sep = if i == 0 { " " } else { ", " };
                    let out = if *output == Some(i) { " + output" } else { "" };
                    write!(
                        f,
                        "{sep}GPU {i} {} layers{out} ({})",
                        format::group_digits(*l),
                        b.display_gib()
                    )?;
                }
                write!(f, "; {} usable per GPU", usable.display_gib())
            }
            Note::AskedCpuMoe { asked } => write!(f, "as asked: -ngl 99 --n-cpu-moe {asked}"),
            Note::AskedSplitShort {
                gpu_need,
                gpu_usable,
                ram_need,
                ram_usable,
            } => write!(
                f,
                "does not fit: the asked split needs {} per GPU ({} usable) and {} of RAM ({} usable)",
                gpu_need.display_gib(),
                gpu_usable.display_gib(),
                ram_need.display_gib(),
                ram_usable.display_gib()
            ),
            Note::UnifiedShare { gpu, ram, limit } => write!(
                f,
                "GPU may use {} of {} unified memory{}",
                gpu.display_gib(),
                ram.display_gib(),
                match limit {
                    UnifiedLimit::Configured => " (configured limit)",
                    UnifiedLimit::MetalDefault => " (Metal default: 2/3 up to 32 GB, 3/4 above)",
                    UnifiedLimit::ApuDefault => " (APU default share, heuristic)",
                }
            ),
            Note::UnifiedOffload {
                gpu,
                layers,
                gpu_bytes,
                pool,
                usable,
            } => write!(
                f,
                "{gpu} of {layers} layers on the GPU ({}), {} on the CPU from the same memory: {} of {} usable unified memory",
                gpu_bytes.display_gib(),
                layers.saturating_sub(*gpu),
                pool.display_gib(),
                usable.display_gib()
            ),
            Note::GpuLimitRaise(r) => {
                write!(f, "the whole model fits on the GPU with its limit raised to {r}")
            }
            Note::GpuLimitRaised(r) => write!(f, "GPU limit raised to {r}"),
            Note::VllmShare { utilization } => {
                write!(
                    f,
                    "vLLM uses {} of VRAM",
                    crate::core::format::percent(*utilization)
                )
            }
            Note::ExpertOffload {
                cpu_moe_layers,
                moe_layers_in_ram,
                ram_bytes,
            } => write!(
                f,
                "every layer on the GPU but the routed experts of layers 0-{} ({} MoE layers, {}) in RAM: llama.cpp -ngl 99 --n-cpu-moe {}",
                cpu_moe_layers.saturating_sub(1),
                moe_layers_in_ram,
                ram_bytes.display_gib(),
                cpu_moe_layers
            ),
            Note::LayerOffload {
                gpu,
                layers,
                streamed,
            } => write!(
                f,
                "{gpu} of {layers} layers on the GPU, {} on the CPU{}",
                layers.saturating_sub(*gpu),
                if *streamed {
                    " (weights streamed over PCIe)"
                } else {
                    ""
                }
            ),
            Note::HostRamShort { need, usable } => write!(
                f,
                "host RAM needs {} but {} is usable",
                need.display_gib(),
                usable.display_gib()
            ),
            Note::TrainingNeedsGpu => f.write_str("training needs a GPU in this model"),
            Note::NoHourlyPrice => f.write_str("no hourly price in the catalog: no cost shown"),
            Note::NoDiskTierVllm => f.write_str(
                "no disk tier: vLLM keeps weights in GPU memory (and --cpu-offload-gb in RAM), never on disk",
            ),
            Note::NoDiskTierRam { need, usable } => write!(
                f,
                "no disk tier: RAM cannot hold even the KV cache and buffers ({} needed, {} usable)",
                format::bytes(*need),
                format::bytes(*usable)
            ),
            Note::DiskTooSmall { file, disk, room } => write!(
                f,
                "does not fit on the disk either: the model file is {} but the {} has {}",
                format::bytes(*file),
                disk.label(),
                format::bytes(*room)
            ),
            Note::OnDisk {
                bytes,
                reader,
                per_token,
                disk,
                read,
            } => write!(
                f,
                "{} on the disk ({}); each token reads {} from the {} at {} GB/s",
                format::bytes(*bytes),
                match reader {
                    DiskReader::OffloadFolder => {
                        "accelerate offload_folder: loaded from disk every forward pass"
                    }
                    DiskReader::Mmap => "llama.cpp mmap: read through the page cache",
                },
                format::bytes(*per_token),
                disk.label(),
                format::rate(read.0)
            ),
            Note::Slow {
                decode_tokens_per_s: d,
            } => {
                if *d > 0.0 && d.is_finite() {
                    write!(
                        f,
                        "runs, but at {} (a token every {})",
                        format::tokens_per_s(*d),
                        format::duration(1.0 / d)
                    )
                } else {
                    f.write_str("runs, but too slowly to rate")
                }
            }
            Note::NoDiskTierFramework(fw) => write!(
                f,
                "no disk tier: {} offloads to CPU memory only; NVMe offload needs DeepSpeed ZeRO-Infinity",
                fw.label()
            ),
            Note::NvmeTooSmall { need, disk, room } => write!(
                f,
                "does not fit on the disk either: ZeRO-Infinity needs {} on NVMe but the {} has {}",
                format::bytes(*need),
                disk.label(),
                format::bytes(*room)
            ),
            Note::ZeroInfinity {
                on_nvme,
                params,
                disk,
                moved_per_step,
            } => write!(
                f,
                "ZeRO-Infinity: {} of optimiser states{} on NVMe ({}); {} moved per step",
                format::bytes(*on_nvme),
                if *params { " and parameters" } else { "" },
                disk.label(),
                format::bytes(*moved_per_step)
            ),
            Note::NeedsAppleSilicon => f.write_str(
                "MLX runs only on Apple silicon (Metal GPU): this machine has none — use llama.cpp or vLLM here",
            ),
            Note::MlxAllOnGpu { need, usable } => write!(
                f,
                "MLX keeps every layer on the GPU (no CPU offload like llama.cpp's -ngl): it needs {} of the GPU's {} share (mlx-lm wires up to Metal's recommended working set)",
                need.display_gib(),
                usable.display_gib()
            ),
            Note::MlxNearWiredLimit { weights, limit } => write!(
                f,
                "the weights take {} of the {} wired limit (over 90 %): mlx-lm warns that generation \"can be slow\"",
                weights.display_gib(),
                limit.display_gib()
            ),
            Note::Text(t) => f.write_str(t),
        }
    }
}

impl Serialize for Note {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Note {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Note::Text)
    }
}

impl From<String> for Note {
    fn from(s: String) -> Self {
        Note::Text(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_read_as_before() {
        let n = Note::LayerOffload {
            gpu: 20,
            layers: 32,
            streamed: false,
        };
        assert_eq!(n.to_string(), "20 of 32 layers on the GPU, 12 on the CPU");
        let n = Note::LayerOffload {
            gpu: 20,
            layers: 32,
            streamed: true,
        };
        assert!(
            n.to_string()
                .ends_with("12 on the CPU (weights streamed over PCIe)")
        );
        assert_eq!(
            Note::VllmShare { utilization: 0.9 }.to_string(),
            "vLLM uses 90 % of VRAM"
        );
        assert_eq!(
            Note::Slow {
                decode_tokens_per_s: 0.0
            }
            .to_string(),
            "runs, but too slowly to rate"
        );
        // JSON carries the text; reading it back keeps the text.
        let j = serde_json::to_string(&Note::TrainingNeedsGpu).unwrap();
        assert_eq!(j, "\"training needs a GPU in this model\"");
        let back: Note = serde_json::from_str(&j).unwrap();
        assert_eq!(back.to_string(), "training needs a GPU in this model");
    }
}
