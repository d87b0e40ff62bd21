//! The third tier: what fits in neither VRAM nor RAM is read from the disk.
//!
//! - **Storage facts**: [`StorageKind`] carries a typical drive's sustained sequential read rate
//!   and the interface limit, each with its source; a machine's [`Storage`] comes from the catalog
//!   or, where an entry has none, from [`default_storage`] (per machine kind).
//! - **Placement** ([`place`]): llama.cpp memory-maps the GGUF (`src/llama-mmap.cpp`,
//!   `llama_mmap`: `mmap(PROT_READ, MAP_SHARED)` with `posix_fadvise(POSIX_FADV_SEQUENTIAL)`), so
//!   weights that are not copied to the GPU are read through the page cache: what stays resident is
//!   what RAM holds beside the KV cache and buffers, the rest comes from the SSD (`--no-mmap` and
//!   `--mlock` turn the tier off). accelerate's `device_map="auto"` with `offload_folder` puts
//!   what `max_memory` leaves over on disk and loads it on every forward pass
//!   (`accelerate.big_modeling`, `infer_auto_device_map`). vLLM has no disk tier. For training,
//!   DeepSpeed ZeRO-Infinity keeps optimiser states and parameters on NVMe
//!   (`offload_optimizer`/`offload_param` with `device: nvme`, `nvme_path`; Rajbhandari et al.
//!   2021, arXiv 2104.07857).
//! - **Speed**: the resident part runs at the speed the speed model (`speed::placement_speed`,
//!   called through the fit engine) gives for the same split; the bytes a token
//!   reads from the disk add `bytes ÷ sustained read rate`. Which bytes a token reads follows the
//!   page cache's LRU-like eviction: see [`disk_reads`].
//!
//! Our reasoning behind the defaults and the page-cache model is in `docs/storage.md`.

use super::capacity::layers_that_fit;
use super::catalog::{Accelerator, Machine, MachineKind, MemoryKind, PcieLink, Vendor};
use super::estimate::{ComponentKind, Estimate};
use super::fit::{EstimateCache, FitResult, FitSettings, TrainingSpeed, Verdict};
use super::format;
use super::model::{MlpKind, ModelSpec};
use super::note::{DiskReader, Note};
use super::scenario::{Framework, Offload, Runtime};
use super::speed::{Backend, Speed};
use super::units::{Bytes, GbPerSec, size_str};
use serde::{Deserialize, Serialize};

/// What a machine's model folder sits on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StorageKind {
    /// A spinning disk.
    Hdd,
    /// A SATA SSD.
    Sata,
    /// NVMe SSD on PCIe 3.0 x4.
    NvmeGen3,
    /// NVMe SSD on PCIe 4.0 x4.
    NvmeGen4,
    /// NVMe SSD on PCIe 5.0 x4.
    NvmeGen5,
    /// Apple's internal SSD (M-series Macs).
    AppleInternal,
    /// A cloud instance's local NVMe (instance store / local SSD), per device.
    CloudLocalNvme,
    /// Network block storage (AWS EBS gp3, GCP Persistent Disk): throughput-capped.
    NetworkBlock,
}

impl StorageKind {
    pub const ALL: [StorageKind; 8] = [
        StorageKind::Hdd,
        StorageKind::Sata,
        StorageKind::NvmeGen3,
        StorageKind::NvmeGen4,
        StorageKind::NvmeGen5,
        StorageKind::AppleInternal,
        StorageKind::CloudLocalNvme,
        StorageKind::NetworkBlock,
    ];

    pub const fn label(self) -> &'static str {
        match self {
            StorageKind::Hdd => "hard disk",
            StorageKind::Sata => "SATA SSD",
            StorageKind::NvmeGen3 => "NVMe PCIe 3.0",
            StorageKind::NvmeGen4 => "NVMe PCIe 4.0",
            StorageKind::NvmeGen5 => "NVMe PCIe 5.0",
            StorageKind::AppleInternal => "Apple internal SSD",
            StorageKind::CloudLocalNvme => "local NVMe (instance store)",
            StorageKind::NetworkBlock => "network block storage",
        }
    }

    /// Sustained sequential read of a typical drive of this kind, GB/s (see [`Self::source`]).
    pub const fn typical_read(self) -> GbPerSec {
        GbPerSec(match self {
            StorageKind::Hdd => 0.25,
            StorageKind::Sata => 0.55,
            StorageKind::NvmeGen3 => 3.5,
            StorageKind::NvmeGen4 => 7.0,
            StorageKind::NvmeGen5 => 14.5,
            StorageKind::AppleInternal => 7.4,
            StorageKind::CloudLocalNvme => 6.5,
            StorageKind::NetworkBlock => GP3_BASELINE_GBS,
        })
    }

    /// What the interface itself can carry, one direction, GB/s: SATA 6 Gb/s with 8b/10b
    /// encoding = 0.6 GB/s (SATA-IO revision 3.0); NVMe on four PCIe lanes ([`PcieLink`]).
    pub fn interface_limit(self) -> Option<GbPerSec> {
        let x4 = |generation| PcieLink {
            generation,
            lanes: 4,
        };
        match self {
            StorageKind::Sata => Some(GbPerSec(0.6)),
            StorageKind::NvmeGen3 => Some(x4(3).bandwidth()),
            StorageKind::NvmeGen4 => Some(x4(4).bandwidth()),
            StorageKind::NvmeGen5 => Some(x4(5).bandwidth()),
            StorageKind::NetworkBlock => Some(GbPerSec(GP3_MAX_GBS)),
            _ => None,
        }
    }

    /// Where [`Self::typical_read`] comes from.
    pub const fn source(self) -> &'static str {
        match self {
            StorageKind::Hdd => {
                "Seagate IronWolf Pro datasheet: max. sustained transfer rate 214–285 MB/s (https://www.seagate.com/products/nas-drives/ironwolf-pro-hard-drive/)"
            }
            StorageKind::Sata => {
                "Samsung 870 EVO: sequential read up to 560 MB/s (https://semiconductor.samsung.com/consumer-storage/internal-ssd/870evo/); SATA 6 Gb/s carries 600 MB/s"
            }
            StorageKind::NvmeGen3 => {
                "Samsung 970 EVO Plus: sequential read up to 3,500 MB/s (https://semiconductor.samsung.com/consumer-storage/internal-ssd/970evoplus/); PCIe 3.0 x4 carries 3.94 GB/s"
            }
            StorageKind::NvmeGen4 => {
                "Samsung 980 PRO 7,000 MB/s, 990 PRO 7,450 MB/s sequential read (https://semiconductor.samsung.com/consumer-storage/internal-ssd/990-pro/); PCIe 4.0 x4 carries 7.88 GB/s"
            }
            StorageKind::NvmeGen5 => {
                "Crucial T705 14,500 MB/s, Samsung 9100 PRO 14,700 MB/s sequential read (https://semiconductor.samsung.com/consumer-storage/internal-ssd/9100-pro/); PCIe 5.0 x4 carries 15.75 GB/s"
            }
            StorageKind::AppleInternal => {
                "Apple: MacBook Pro (M1 Pro/Max) SSD read up to 7.4 GB/s (https://www.apple.com/newsroom/2021/10/introducing-the-new-macbook-pro/); smaller configurations read slower"
            }
            StorageKind::CloudLocalNvme => {
                "DeepSpeedExamples deepnvme/zero_inference/README.md: Azure H100 VM NVMes at ~6.5 GB/s read each; clouds publish IOPS, not GB/s, for instance stores"
            }
            StorageKind::NetworkBlock => {
                "AWS EBS gp3: baseline 125 MiB/s, up to 1,000 MiB/s provisioned (https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html)"
            }
        }
    }
}

/// AWS EBS gp3 baseline throughput, 125 MiB/s in GB/s.
pub const GP3_BASELINE_GBS: f64 = 125.0 * 1_048_576.0 / 1e9;
/// AWS EBS gp3 provisioned maximum, 1,000 MiB/s in GB/s.
pub const GP3_MAX_GBS: f64 = 1000.0 * 1_048_576.0 / 1e9;

/// A machine's disk: where the model file sits and, for ZeRO-Infinity, `nvme_path`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Storage {
    /// Capacity ("1 TiB").
    #[serde(with = "size_str")]
    pub capacity: Bytes,
    pub kind: StorageKind,
    /// Sustained sequential read, GB/s, when known for this drive (else the kind's typical rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_gbs: Option<f64>,
    /// Free space (detected machines only).
    #[serde(
        default,
        with = "size_str::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub free: Option<Bytes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl Storage {
    pub fn new(kind: StorageKind, capacity: Bytes) -> Storage {
        Storage {
            capacity,
            kind,
            read_gbs: None,
            free: None,
            source: None,
        }
    }
    /// The sustained read rate used: the drive's own figure or its kind's, never above the
    /// interface.
    pub fn read(&self) -> GbPerSec {
        let r = self
            .read_gbs
            .filter(|x| x.is_finite() && *x > 0.0)
            .unwrap_or(self.kind.typical_read().0);
        GbPerSec(match self.kind.interface_limit() {
            Some(l) => r.min(l.0),
            None => r,
        })
    }
    /// "7.00 GB/s".
    pub fn describe_rate(&self) -> String {
        format!("{} GB/s", format::rate(self.read().0))
    }
    /// Room for model files: the free space where known, else the capacity.
    pub fn room(&self) -> Bytes {
        self.free.unwrap_or(self.capacity)
    }
    /// "NVMe PCIe 4.0, 1.00 TiB, 7.00 GB/s".
    pub fn describe(&self) -> String {
        format!(
            "{}, {}, {}",
            self.kind.label(),
            format::bytes(self.capacity),
            self.describe_rate()
        )
    }
}

/// The disk a machine of `kind` has when its catalog entry names none (docs/storage.md): laptops
/// and mini PCs a 1 TB PCIe 4.0 NVMe, desktops 2 TB, workstations 4 TB, Apple machines their
/// internal SSD (1 TB), cloud instances a 1 TiB network volume at the gp3 baseline.
pub fn default_storage(kind: MachineKind, apple: bool) -> Storage {
    let (k, cap) = match kind {
        _ if apple => (StorageKind::AppleInternal, Bytes::gb(1000)),
        MachineKind::Apple => (StorageKind::AppleInternal, Bytes::gb(1000)),
        MachineKind::Laptop | MachineKind::MiniPc => (StorageKind::NvmeGen4, Bytes::gb(1000)),
        MachineKind::Desktop => (StorageKind::NvmeGen4, Bytes::gb(2000)),
        MachineKind::Workstation => (StorageKind::NvmeGen4, Bytes::gb(4000)),
        MachineKind::Cloud => (StorageKind::NetworkBlock, Bytes::gib(1024)),
    };
    Storage {
        source: Some("default for the machine kind (docs/storage.md)".into()),
        ..Storage::new(k, cap)
    }
}

/// The machine's disk: its catalog entry, else the default for its kind.
pub fn storage_of(m: &Machine, acc: Option<&Accelerator>) -> Storage {
    match &m.storage {
        Some(s) => s.clone(),
        None => default_storage(m.kind, acc.is_some_and(|a| a.vendor == Vendor::Apple)),
    }
}

/// ZeRO-Infinity's model states: 20 bytes per parameter — FP16 parameters and gradients (2 + 2),
/// FP32 parameters, momentum, variance and gradients (4 × 4) (Rajbhandari et al. 2021,
/// arXiv 2104.07857, §3: 240 · n_l · h² bytes for 12 · n_l · h² parameters).
pub fn zero_infinity_model_states(params: u64) -> Bytes {
    Bytes(params.saturating_mul(ZERO_INFINITY_BYTES_PER_PARAM))
}

/// Bytes per parameter of ZeRO-Infinity's model states (§3 of the paper).
pub const ZERO_INFINITY_BYTES_PER_PARAM: u64 = 20;

/// ZeRO-Infinity's model-state working memory per GPU: the FP16 parameters and gradients of the
/// largest single operator, the h → ffn linear layer: 4 · h · ffn bytes (§3 of the paper: 4 · h ·
/// 4h for ffn = 4h).
pub fn zero_infinity_working_memory(spec: &ModelSpec) -> Bytes {
    let ffn = spec.intermediate.max(
        spec.moe
            .as_ref()
            .map_or(0, |m| m.expert_ffn.max(m.shared_ffn)),
    );
    let widest = ffn.max(spec.heads.saturating_mul(spec.head_dim));
    Bytes(4u64.saturating_mul(spec.hidden).saturating_mul(widest))
}

/// The share of the repeated layers' parameters that are routed experts, and the share of those
/// one token activates (top-k of n). (0, 0) for dense models.
fn routed_share(spec: &ModelSpec) -> (f64, f64) {
    let Some(m) = &spec.moe else {
        return (0.0, 0.0);
    };
    if m.experts == 0 {
        return (0.0, 0.0);
    }
    let mats = match spec.mlp {
        MlpKind::Gated => 3.0,
        MlpKind::Plain => 2.0,
    };
    let routed = spec.moe_layer_count() as f64
        * m.experts as f64
        * mats
        * spec.hidden as f64
        * m.expert_ffn as f64;
    let layers: f64 = (0..spec.layers)
        .map(|i| spec.layer_params(i).total as f64)
        .sum();
    if layers <= 0.0 {
        return (0.0, 0.0);
    }
    (
        (routed / layers).clamp(0.0, 1.0),
        (m.active_experts as f64 / m.experts as f64).clamp(0.0, 1.0),
    )
}

/// Bytes a decode step and a prefill ubatch read from the disk.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct DiskReads {
    pub per_token: f64,
    pub per_ubatch: f64,
}

/// What the disk tier reads, by runtime.
///
/// - llama.cpp (mmap): the page cache evicts roughly least-recently-used pages (Linux
///   `mm/workingset.c`). A page is still cached when it comes round again only if less than the
///   cache was read in between. Dense layers are read in the same order every token, so once the
///   host weights exceed the cache every page has been evicted before its next use and the whole
///   host part is read again each token (the LRU cyclic-scan case). MoE: the always-read parts
///   (attention, shared experts, router) stay cached; routed experts are drawn at random, so a
///   read hits with the probability that the expert is among the cached share of the pool.
/// - accelerate (`offload_folder`): the modules on disk are loaded on each forward pass; RAM is
///   full with the modules `max_memory` put on the CPU, so they come from the disk every time.
///
/// `host_weights`: weights not on the GPU (whole model file on a CPU-only run); `host_read`: of
/// those, what one token reads; `cache`: RAM left for the page cache; `disk`: the part of
/// `host_weights` that does not fit it.
pub fn disk_reads(
    spec: &ModelSpec,
    runtime: Runtime,
    host_weights: f64,
    host_read: f64,
    cache: f64,
    disk: f64,
    ubatch: u64,
) -> DiskReads {
    let (pool_frac, act_frac) = routed_share(spec);
    let pool = host_weights * pool_frac;
    let routed_read = pool * act_frac;
    let always = (host_read - routed_read).max(0.0);
    // The share of the expert pool a ubatch of u tokens touches (independent top-k draws).
    let touched_frac = 1.0 - (1.0 - act_frac).powf(ubatch.max(1) as f64);
    let ubatch_read = always + pool * touched_frac;
    if disk <= 0.0 {
        return DiskReads {
            per_token: 0.0,
            per_ubatch: 0.0,
        };
    }
    match runtime {
        Runtime::Transformers => {
            let share = |read: f64| (read / host_weights.max(1.0)).clamp(0.0, 1.0);
            DiskReads {
                per_token: disk * share(host_read),
                per_ubatch: disk * share(ubatch_read),
            }
        }
        _ => {
            let lru = |read: f64, routed: f64, pool_used: f64| {
                if read > cache {
                    read
                } else {
                    let hit = if pool_used > 0.0 {
                        ((cache - always) / pool_used).clamp(0.0, 1.0)
                    } else {
                        1.0
                    };
                    routed * (1.0 - hit)
                }
            };
            DiskReads {
                per_token: lru(host_read, routed_read, pool),
                per_ubatch: lru(ubatch_read, pool * touched_frac, pool),
            }
        }
    }
}

/// Decode and prefill with disk reads added to the resident speed (`tokens ÷ (time resident +
/// bytes ÷ rate)`).
pub fn with_disk(
    decode: f64,
    prefill: f64,
    batch: u64,
    ubatch: u64,
    reads: DiskReads,
    rate: GbPerSec,
) -> (f64, f64) {
    let bps = rate.bytes_per_sec().max(1.0);
    let add = |tok_s: f64, tokens: f64, bytes: f64| {
        if tok_s <= 0.0 || !tok_s.is_finite() {
            return 0.0;
        }
        let t = tokens / tok_s + bytes / bps;
        if t > 0.0 { tokens / t } else { 0.0 }
    };
    (
        add(decode, batch.max(1) as f64, reads.per_token),
        add(prefill, ubatch.max(1) as f64, reads.per_ubatch),
    )
}

/// After GPU and RAM: put what is left on the disk, or say why it cannot be. Called by the fit
/// engine when nothing else fits (`r.verdict == None`).
pub fn place(
    r: &mut FitResult,
    notes: &mut Vec<Note>,
    cache: &EstimateCache,
    m: &Machine,
    acc: Option<&Accelerator>,
    st: &FitSettings,
    speed: &dyn Fn(&Estimate, u64) -> (Speed, Backend),
) {
    let s = cache.scenario();
    let disk = storage_of(m, acc);
    if s.mode.is_training() {
        place_training(r, notes, cache, m, acc, st, &disk);
        return;
    }
    if s.runtime == Runtime::Vllm {
        notes.push(Note::NoDiskTierVllm);
        return;
    }
    let discrete = acc.is_some_and(|a| a.memory_kind == MemoryKind::Discrete);
    let (Some(e0), Some(e1)) = (cache.peek(0), cache.peek(1)) else {
        return;
    };
    let g = m.gpu_count.max(1) as u64;
    // GPU layers: as many whole layers as the GPUs hold (as for offload).
    let w = &e1.workload;
    let l = w.layers.max(1);
    let (k, est) = if discrete {
        (layers_that_fit(e1, r.gpu_capacity, g), e1)
    } else {
        (0, e0)
    };
    let w = &est.workload;
    let host_frac = (l - k) as f64 / l as f64;
    let outer_on_host = k < l;
    let file = w.layer_weights.saturating_add(w.outer_weights);
    let host_weights = w
        .layer_weights
        .scale(host_frac)
        .saturating_add(if outer_on_host {
            w.outer_weights
        } else {
            Bytes::ZERO
        });
    // What must stay in RAM: buffers and the KV cache of the layers the CPU runs.
    let anon = if k == 0 {
        est.total()
            .saturating_sub(est.kind_total(ComponentKind::Weights))
    } else {
        est.host_total().saturating_add(w.kv_total.scale(host_frac))
    };
    if anon > r.ram_capacity {
        notes.push(Note::NoDiskTierRam {
            need: anon,
            usable: r.ram_capacity,
        });
        return;
    }
    if file > disk.room() {
        notes.push(Note::DiskTooSmall {
            file,
            disk: disk.kind,
            room: disk.room(),
        });
        return;
    }
    let cache_room = r.ram_capacity.saturating_sub(anon);
    let resident = host_weights.min(cache_room);
    let on_disk = host_weights.saturating_sub(resident);
    if on_disk.0 == 0 {
        return;
    }
    let outer_read = w
        .active_weight_bytes_per_token
        .min(w.outer_weights)
        .as_f64();
    let layer_read = w.active_weight_bytes_per_token.as_f64() - outer_read;
    let host_read = layer_read * host_frac + if outer_on_host { outer_read } else { 0.0 };
    let reads = disk_reads(
        &s.model,
        s.runtime,
        host_weights.as_f64(),
        host_read,
        cache_room.as_f64(),
        on_disk.as_f64(),
        s.ubatch,
    );
    // The resident part at the speed model's rate for the same split (the page cache is RAM).
    let (sp, backend) = speed(est, k);
    let (decode, prefill) = with_disk(
        sp.decode_tokens_per_s,
        sp.prefill_tokens_per_s,
        s.batch,
        s.ubatch,
        reads,
        disk.read(),
    );
    r.verdict = Verdict::Disk;
    r.backend = Some(backend);
    r.gpu_layers = k;
    r.ram_required = anon.saturating_add(resident);
    r.disk_bytes = on_disk;
    r.headroom_bytes = r.ram_capacity.signed_sub(anon.saturating_add(host_weights));
    r.decode_tokens_per_s = decode;
    r.prefill_tokens_per_s = prefill;
    r.ttft_s = if prefill > 0.0 {
        s.prompt_tokens as f64 / prefill
    } else {
        0.0
    };
    notes.push(Note::OnDisk {
        bytes: on_disk,
        reader: match s.runtime {
            Runtime::Transformers => DiskReader::OffloadFolder,
            _ => DiskReader::Mmap,
        },
        per_token: Bytes::from_f64(reads.per_token),
        disk: disk.kind,
        read: disk.read(),
    });
    notes.push(Note::Slow {
        decode_tokens_per_s: decode,
    });
}

/// ZeRO-Infinity: the GPU part fits, host RAM does not hold the offloaded optimiser states (and
/// parameters): put them on NVMe. DeepSpeed only (`offload_optimizer`/`offload_param` with
/// `device: nvme`); the other frameworks offload to CPU memory at most.
#[allow(clippy::too_many_arguments)]
fn place_training(
    r: &mut FitResult,
    notes: &mut Vec<Note>,
    cache: &EstimateCache,
    m: &Machine,
    acc: Option<&Accelerator>,
    st: &FitSettings,
    disk: &Storage,
) {
    let s = cache.scenario();
    if s.offload == Offload::None || acc.is_none_or(|a| a.memory_kind != MemoryKind::Discrete) {
        return;
    }
    if matches!(
        s.framework,
        Framework::Fsdp | Framework::Torchtune | Framework::Unsloth
    ) {
        notes.push(Note::NoDiskTierFramework(s.framework));
        return;
    }
    let g = m.gpu_count.max(1) as u64;
    let Some(est) = cache.peek(g) else {
        return;
    };
    if r.gpu_required > r.gpu_capacity {
        return;
    }
    let mut on_nvme = est
        .host_kind(ComponentKind::Optimizer)
        .saturating_add(est.host_kind(ComponentKind::MasterWeights));
    let params_offloaded = s.offload == Offload::OptimizerParams;
    if params_offloaded {
        on_nvme = on_nvme.saturating_add(est.host_kind(ComponentKind::Weights));
    }
    let host = est.host_total();
    let ram = host.saturating_sub(on_nvme);
    if on_nvme.0 == 0 || ram > r.ram_capacity {
        return;
    }
    if on_nvme > disk.room() {
        notes.push(Note::NvmeTooSmall {
            need: on_nvme,
            disk: disk.kind,
            room: disk.room(),
        });
        return;
    }
    notes.retain(|n| !matches!(n, Note::HostRamShort { .. }));
    r.verdict = Verdict::Disk;
    r.gpu_layers = r.total_layers;
    r.ram_required = ram;
    r.disk_bytes = on_nvme;
    r.headroom_bytes = r.ram_capacity.signed_sub(host);
    // Each step reads the optimiser states and writes them back (CPU Adam), and with parameter
    // offload reads the FP16 parameters in the forward and the backward pass.
    let weights = est.host_kind(ComponentKind::Weights).as_f64();
    let moved = 2.0 * (on_nvme.as_f64() - if params_offloaded { weights } else { 0.0 })
        + if params_offloaded { 2.0 * weights } else { 0.0 };
    let extra = moved / disk.read().bytes_per_sec().max(1.0);
    if let Some(t) = super::fit::training_speed(s, est, g, m, acc, st) {
        r.training = Some(add_step_time(t, extra));
    }
    notes.push(Note::ZeroInfinity {
        on_nvme,
        params: params_offloaded,
        disk: disk.kind,
        moved_per_step: Bytes::from_f64(moved),
    });
}

/// A training speed with `extra` seconds added to every step.
fn add_step_time(t: TrainingSpeed, extra: f64) -> TrainingSpeed {
    let step = t.step_seconds + extra.max(0.0);
    let f = if step > 0.0 {
        t.step_seconds / step
    } else {
        1.0
    };
    TrainingSpeed {
        step_seconds: step,
        tokens_per_s: t.tokens_per_s * f,
        run_hours: if f > 0.0 { t.run_hours / f } else { 0.0 },
        run_usd: t.run_usd.map(|u| if f > 0.0 { u / f } else { 0.0 }),
    }
}

/// The resident and disk parts of a scenario on a machine, for the teaching curve: decode tok/s
/// with `gpu_bytes` on the GPU at `vram`, `ram_bytes` in RAM at `ram` and `disk_bytes` on disk at
/// `ssd` (every byte read once per token; the three bandwidths are the effective rates).
pub fn tier_decode(
    gpu_bytes: f64,
    ram_bytes: f64,
    disk_bytes: f64,
    vram: GbPerSec,
    ram: GbPerSec,
    ssd: GbPerSec,
) -> f64 {
    let t = gpu_bytes / vram.bytes_per_sec().max(1.0)
        + ram_bytes / ram.bytes_per_sec().max(1.0)
        + disk_bytes / ssd.bytes_per_sec().max(1.0);
    if t > 0.0 { 1.0 / t } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_stay_under_the_interface() {
        for k in StorageKind::ALL {
            let s = Storage::new(k, Bytes::gib(1));
            if let Some(l) = k.interface_limit() {
                assert!(s.read().0 <= l.0 + 1e-9, "{k:?}");
            }
            assert!(s.read().0 > 0.0);
        }
        // A drive faster than its link is held to the link: PCIe 3.0 x4 = 3.94 GB/s.
        let fast = Storage {
            read_gbs: Some(7.0),
            ..Storage::new(StorageKind::NvmeGen3, Bytes::gib(1))
        };
        assert!((fast.read().0 - 3.938).abs() < 0.01);
        // gp3 baseline: 125 MiB/s = 0.131 GB/s.
        assert!((GP3_BASELINE_GBS - 0.131_072).abs() < 1e-6);
    }

    #[test]
    fn dense_cyclic_scan_reads_everything_moe_reads_misses_only() {
        let dense = ModelSpec::default();
        // 40 GB host weights, 30 GB cache: a cyclic scan larger than the cache misses every page.
        let r = disk_reads(&dense, Runtime::LlamaCpp, 40e9, 40e9, 30e9, 10e9, 512);
        assert_eq!(r.per_token, 40e9);
        assert_eq!(r.per_ubatch, 40e9);
        // accelerate re-reads only what sits on disk.
        let a = disk_reads(&dense, Runtime::Transformers, 40e9, 40e9, 30e9, 10e9, 512);
        assert_eq!(a.per_token, 10e9);
    }
}
