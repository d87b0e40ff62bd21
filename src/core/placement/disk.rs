//! The third tier: what fits in neither VRAM nor RAM is read from the disk.
//!
//! - **Placement** ([`from_disk`]): llama.cpp memory-maps the GGUF (`src/llama-mmap.cpp`,
//!   `llama_mmap`: `mmap(PROT_READ, MAP_SHARED)` with `posix_fadvise(POSIX_FADV_SEQUENTIAL)`), so
//!   weights that are not copied to the GPU are read through the page cache: what stays resident is
//!   what RAM holds beside the KV cache and buffers, the rest comes from the SSD (`--no-mmap` and
//!   `--mlock` turn the tier off). accelerate's `device_map="auto"` with `offload_folder` puts
//!   what `max_memory` leaves over on disk and loads it on every forward pass
//!   (`accelerate.big_modeling`, `infer_auto_device_map`). vLLM has no disk tier. For training
//!   ([`zero_infinity`]), DeepSpeed ZeRO-Infinity keeps optimiser states and parameters on NVMe
//!   (`offload_optimizer`/`offload_param` with `device: nvme`, `nvme_path`; Rajbhandari et al.
//!   2021, arXiv 2104.07857).
//! - **Speed**: the resident part runs at the speed the speed model gives for the same split
//!   ([`super::Job::speed`]); the bytes a token reads from the disk add `bytes ÷ sustained read
//!   rate`. Which bytes a token reads follows the page cache's LRU-like eviction: see
//!   [`disk_reads`].
//! - **Storage facts** (the drive kinds, a machine's disk, the defaults per machine kind) are
//!   catalog types: [`crate::core::catalog::Storage`].
//!
//! Our reasoning behind the defaults and the page-cache model is in `docs/storage.md`.

use super::capacity::layers_that_fit;
use super::note::{DiskReader, Note};
use super::{Job, Placement, Run, Tier, speed};
use crate::core::catalog::storage_of;
use crate::core::estimate::{ComponentKind, Estimate};
use crate::core::fit::{TrainingSpeed, Verdict};
use crate::core::model::{MlpKind, ModelSpec};
use crate::core::scenario::{Framework, Offload, Runtime};
use crate::core::speed::Speed;
use crate::core::units::{Bytes, GbPerSec};

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

/// Which layers the disk tier keeps on the GPUs and what the host side holds.
struct HostSide<'a> {
    /// Whole layers on the GPUs (as for offload; 0 without a discrete GPU).
    gpu_layers: u64,
    /// The estimate the split is cut from (one GPU, or CPU only).
    est: &'a Estimate,
    /// The share of the repeated layers not on the GPUs.
    host_frac: f64,
    /// Whether the weights outside the layers (embeddings, head) are on the host.
    outer_on_host: bool,
    /// The model file.
    file: Bytes,
    /// Weights not on the GPUs.
    host_weights: Bytes,
    /// What must stay in RAM: buffers and the KV cache of the layers the CPU runs.
    anon: Bytes,
}

impl<'a> HostSide<'a> {
    fn of(job: &Job<'a>) -> HostSide<'a> {
        let e1 = job.one_gpu();
        let l = e1.workload.layers.max(1);
        let (k, est) = match job.gpus.as_ref().filter(|g| !g.unified) {
            Some(g) => (layers_that_fit(e1, g.capacity, g.count), e1),
            None => (0, job.cpu_est),
        };
        let w = &est.workload;
        let host_frac = (l - k) as f64 / l as f64;
        let outer_on_host = k < l;
        let host_weights = w
            .layer_weights
            .scale(host_frac)
            .saturating_add(if outer_on_host {
                w.outer_weights
            } else {
                Bytes::ZERO
            });
        let anon = if k == 0 {
            est.total()
                .saturating_sub(est.kind_total(ComponentKind::Weights))
        } else {
            est.host_total().saturating_add(w.kv_total.scale(host_frac))
        };
        HostSide {
            gpu_layers: k,
            est,
            host_frac,
            outer_on_host,
            file: w.layer_weights.saturating_add(w.outer_weights),
            host_weights,
            anon,
        }
    }
    /// Of the host weights, the bytes one token reads.
    fn read_per_token(&self) -> f64 {
        let w = &self.est.workload;
        let outer_read = w
            .active_weight_bytes_per_token
            .min(w.outer_weights)
            .as_f64();
        let layer_read = w.active_weight_bytes_per_token.as_f64() - outer_read;
        layer_read * self.host_frac + if self.outer_on_host { outer_read } else { 0.0 }
    }
}

/// Inference from the disk: what the GPUs and RAM cannot hold is read from it, through the page
/// cache (llama.cpp mmap) or from accelerate's `offload_folder`; the resident part at the speed
/// model's rate for the same split (the page cache is RAM). vLLM has no disk tier.
pub fn from_disk(job: &Job) -> Tier {
    let s = job.s;
    if s.runtime == Runtime::Vllm {
        return Err(Some(Note::NoDiskTierVllm));
    }
    let disk = storage_of(job.m, job.acc);
    let h = HostSide::of(job);
    if h.anon > job.ram {
        return Err(Some(Note::NoDiskTierRam {
            need: h.anon,
            usable: job.ram,
        }));
    }
    if h.file > disk.room() {
        return Err(Some(Note::DiskTooSmall {
            file: h.file,
            disk: disk.kind,
            room: disk.room(),
        }));
    }
    let cache_room = job.ram.saturating_sub(h.anon);
    let resident = h.host_weights.min(cache_room);
    let on_disk = h.host_weights.saturating_sub(resident);
    if on_disk.0 == 0 {
        return Err(None);
    }
    let reads = disk_reads(
        &s.model,
        s.runtime,
        h.host_weights.as_f64(),
        h.read_per_token(),
        cache_room.as_f64(),
        on_disk.as_f64(),
        s.ubatch,
    );
    let (sp, backend) = job.speed(h.est, h.gpu_layers);
    let (decode, prefill) = with_disk(
        sp.decode_tokens_per_s,
        sp.prefill_tokens_per_s,
        s.batch,
        s.ubatch,
        reads,
        disk.read(),
    );
    let speed = Speed {
        decode_tokens_per_s: decode,
        prefill_tokens_per_s: prefill,
    };
    let mut p = Placement::new(
        Verdict::Disk,
        h.gpu_layers,
        h.anon.saturating_add(resident),
        job.ram.signed_sub(h.anon.saturating_add(h.host_weights)),
        Run::Inference { speed, backend },
    );
    p.disk_bytes = on_disk;
    p.notes.push(Note::OnDisk {
        bytes: on_disk,
        reader: match s.runtime {
            Runtime::Transformers => DiskReader::OffloadFolder,
            _ => DiskReader::Mmap,
        },
        per_token: Bytes::from_f64(reads.per_token),
        disk: disk.kind,
        read: disk.read(),
    });
    p.notes.push(Note::Slow {
        decode_tokens_per_s: decode,
    });
    Ok(p)
}

/// ZeRO-Infinity: the GPU part fits, host RAM does not hold the offloaded optimiser states (and
/// parameters): put them on NVMe. DeepSpeed only (`offload_optimizer`/`offload_param` with
/// `device: nvme`); the other frameworks offload to CPU memory at most.
pub fn zero_infinity(job: &Job) -> Tier {
    let s = job.s;
    let Some(g) = job.gpus.as_ref().filter(|g| !g.unified) else {
        return Err(None);
    };
    if s.offload == Offload::None {
        return Err(None);
    }
    if matches!(
        s.framework,
        Framework::Fsdp | Framework::Torchtune | Framework::Unsloth
    ) {
        return Err(Some(Note::NoDiskTierFramework(s.framework)));
    }
    if g.need > g.capacity {
        return Err(None);
    }
    let est = g.est;
    let params_offloaded = s.offload == Offload::OptimizerParams;
    let mut on_nvme = est
        .host_kind(ComponentKind::Optimizer)
        .saturating_add(est.host_kind(ComponentKind::MasterWeights));
    if params_offloaded {
        on_nvme = on_nvme.saturating_add(est.host_kind(ComponentKind::Weights));
    }
    let host = est.host_total();
    let ram = host.saturating_sub(on_nvme);
    if on_nvme.0 == 0 || ram > job.ram {
        return Err(None);
    }
    let disk = storage_of(job.m, job.acc);
    if on_nvme > disk.room() {
        return Err(Some(Note::NvmeTooSmall {
            need: on_nvme,
            disk: disk.kind,
            room: disk.room(),
        }));
    }
    // Each step reads the optimiser states and writes them back (CPU Adam), and with parameter
    // offload reads the FP16 parameters in the forward and the backward pass.
    let weights = est.host_kind(ComponentKind::Weights).as_f64();
    let moved = 2.0 * (on_nvme.as_f64() - if params_offloaded { weights } else { 0.0 })
        + if params_offloaded { 2.0 * weights } else { 0.0 };
    let extra = moved / disk.read().bytes_per_sec().max(1.0);
    let training = add_step_time(speed::training(job, g), extra);
    let mut p = Placement::new(
        Verdict::Disk,
        job.layers,
        ram,
        job.ram.signed_sub(host),
        Run::Training(training),
    );
    p.disk_bytes = on_nvme;
    p.notes.push(Note::ZeroInfinity {
        on_nvme,
        params: params_offloaded,
        disk: disk.kind,
        moved_per_step: Bytes::from_f64(moved),
    });
    Ok(p)
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

#[cfg(test)]
mod tests {
    use super::*;

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
