//! Speed model: decode and prefill tokens per second of a placement, per runtime and backend.
//!
//! Decode (one step, `B` sequences):
//!   `t = bytes read ÷ achievable bandwidth + B · weights · dot cost ÷ vector rate + layers · fixed`
//! where bytes read = active weights + `B` × KV at the current depth, achievable bandwidth =
//! `min(efficiency × peak, compute units × per-unit rate)`. vLLM's batched decode is a roofline
//! instead: `max(bytes ÷ bandwidth, B · FLOPs ÷ GEMM rate) + layers · fixed`.
//! Prefill: the prompt in ubatches of `U` tokens, each at its own depth ([`prefill`]): per
//! ubatch `t = max(FLOPs ÷ rate of the kernel used, weight bytes touched ÷ bandwidth)` plus the
//! materialised attention scores without FlashAttention, with the dense weights, the MoE expert
//! GEMMs (by their token tile), and attention each at their own kernel's rate (INT8/MMQ, FP16
//! tensor at its accumulate convention, Metal simdgroup, CPU SIMD), at the clock a power-limited
//! board holds. Constants per backend: [`profile`]; derivations and
//! the check against published llama-bench results: docs/speed.md.

pub mod bench;
pub mod cpu;
pub mod metal;
pub mod prefill;
pub mod profile;
pub mod step;

use super::catalog::{Accelerator, Machine, MemoryKind, Vendor};
use super::estimate::Estimate;
use super::precision::WeightPrecision;
use super::scenario::{Scenario, SplitStyle};
use super::units::{Bytes, GbPerSec};
pub use cpu::{CpuFacts, CpuIsa, cpu_facts};
pub use profile::{Backend, Profile, Profiles, backend_for};
use serde::{Deserialize, Serialize};

/// The constants the speed model uses (all adjustable, all shown in reports).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SpeedConstants {
    /// One throughput profile per runtime/backend.
    pub profiles: Profiles,
    /// Fraction of the peak DRAM bandwidth ZeRO-Offload's CPU Adam reaches (heuristic; CPU
    /// inference uses the CPU profile's `bandwidth_efficiency`).
    pub cpu_bandwidth_efficiency: f64,
    /// Share of a unified-memory chip's bandwidth its CPU cluster can draw: an M1 Max's CPU
    /// cores reach ~243 of 400 GB/s (AnandTech, "Apple's M1 Pro, M1 Max SoCs Investigated",
    /// 2021-10-25, memory bandwidth test); the GPU is what saturates the rest.
    pub unified_cpu_bandwidth_fraction: f64,
    /// Fraction of the PCIe link's one-direction bandwidth reached by bulk host→device copies.
    pub pcie_efficiency: f64,
    /// Model FLOPs utilisation in training (heuristic 0.35; Megatron reports 0.4–0.55 at scale).
    pub training_mfu: f64,
    /// FP32 FLOP per cycle per core for a CPU (AVX2: 2 FMA units × 8 lanes × 2 = 32).
    pub cpu_flops_per_cycle: f64,
    /// CPU clock assumed for the CPU FLOPS estimate, GHz.
    pub cpu_ghz: f64,
    /// Latency of one small all-reduce over NVLink / over PCIe, µs (order of magnitude of
    /// nccl-tests `all_reduce_perf` at 8 B–64 KiB; github.com/NVIDIA/nccl-tests).
    pub allreduce_latency_nvlink_us: f64,
    pub allreduce_latency_pcie_us: f64,
    /// DRAM bandwidth one CPU core can draw, GB/s (Little's law: a core keeps ~32 cache-line
    /// misses in flight — the L2's miss queue, "superqueue" in Intel's optimization manual — and
    /// 32 × 64 B over ~100 ns of DRAM latency ≈ 20 GB/s). llama.cpp's tools/llama-bench/README.md
    /// ("Different numbers of threads", llama 7B Q4_0) decodes at 4.05 t/s on one thread: 3.56 GiB
    /// a token ≈ 15.5 GB/s, this × the CPU profile's 0.7. Caps `--threads N` at `N ×` this.
    pub cpu_core_bandwidth_gbs: f64,
}

impl Default for SpeedConstants {
    fn default() -> Self {
        SpeedConstants {
            profiles: Profiles::default(),
            cpu_bandwidth_efficiency: 0.55,
            unified_cpu_bandwidth_fraction: 0.6,
            pcie_efficiency: 0.8,
            training_mfu: 0.35,
            cpu_flops_per_cycle: 32.0,
            cpu_ghz: 3.0,
            allreduce_latency_nvlink_us: 10.0,
            allreduce_latency_pcie_us: 25.0,
            cpu_core_bandwidth_gbs: 20.0,
        }
    }
}

/// A GPU as the speed model sees it (from a catalog [`Accelerator`]).
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuDevice {
    pub bandwidth: GbPerSec,
    /// Dense FP16 tensor TFLOPS with FP32 accumulate.
    pub fp16_tflops: f64,
    /// … with FP16 accumulate.
    pub fp16_acc16_tflops: f64,
    /// Dense INT8 tensor TOPS (the FP16-accumulate FP16 rate when the part has none).
    pub int8_tops: f64,
    /// FP32 vector (non-tensor) TFLOPS.
    pub vector_tflops: f64,
    pub compute_units: Option<u32>,
    pub unified: bool,
    /// FP8 tensor cores (Ada, Hopper, Blackwell, CDNA3): FP8 weights run W8A8 at `int8_tops`.
    #[serde(default)]
    pub fp8: bool,
    /// Dense FP4 tensor TFLOPS where NVFP4 runs natively (Blackwell), else 0.
    #[serde(default)]
    pub fp4_tflops: f64,
    /// Board power per TFLOPS of FP32 vector rate at boost, W (the catalog's `tdp_w ÷
    /// vector_tflops`); 0 = unknown.
    #[serde(default)]
    pub watts_per_vector_tflop: f64,
    /// The part's vendor (kernels pick their tiles by it: [`Profile::moe_tile_on`]; Vulkan runs
    /// its matmuls through `VK_NV_cooperative_matrix2` on NVIDIA: [`GpuDevice::nvidia`]); `None`
    /// in settings written before it was recorded.
    #[serde(default)]
    pub vendor: Option<crate::core::catalog::Vendor>,
    /// An AMD data-center part (CDNA, MFMA matrix cores): ggml-cuda's HIP build takes its MMA
    /// FlashAttention kernel there whatever the head grouping (`amd_mfma_available`).
    #[serde(default)]
    pub amd_cdna: bool,
}

/// Whether accelerator `a` has FP8 tensor cores (Ada Lovelace, Hopper and Blackwell NVIDIA
/// parts; AMD CDNA3), by its catalog id.
pub fn fp8_tensor_cores(a: &Accelerator) -> bool {
    // Case-insensitive prefixes without allocating, looked among those of the id's first letter
    // only: this runs for every placement's speed.
    let id = a.id.as_bytes();
    let prefixes: &[&str] = match id.first().map(u8::to_ascii_lowercase) {
        Some(b'h') => &["h100", "h200", "h20"],
        Some(b'b') => &["b100", "b200", "b300"],
        Some(b'g') => &["gb200", "gb10"],
        Some(b'j') => &["jetson-agx-thor"],
        Some(b'l') => &["l40s", "l4"],
        Some(b'r') => &["rtx-40", "rtx-50", "rtx-6000-ada", "rtx-pro-6000"],
        Some(b'm') => &["mi300", "mi325", "mi355"],
        _ => return false,
    };
    a.int8_tops.is_some()
        && prefixes
            .iter()
            .any(|k| id.len() >= k.len() && id[..k.len()].eq_ignore_ascii_case(k.as_bytes()))
}

impl GpuDevice {
    pub fn from_accelerator(a: &Accelerator) -> GpuDevice {
        GpuDevice {
            fp8: fp8_tensor_cores(a),
            ..GpuDevice::without_fp8_check(a)
        }
    }
    /// [`Self::from_accelerator`] for a model stored at `w`: whether the part has FP8 tensor
    /// cores is read only for FP8 weights, the one case it changes ([`step::Kernel::for_weights`]),
    /// so the per-placement speed query skips the id check otherwise (`fp8` is then `false`).
    pub fn for_weights(a: &Accelerator, w: WeightPrecision) -> GpuDevice {
        if matches!(w, WeightPrecision::Fp8 | WeightPrecision::Fp8Block) {
            GpuDevice::from_accelerator(a)
        } else {
            GpuDevice::without_fp8_check(a)
        }
    }
    fn without_fp8_check(a: &Accelerator) -> GpuDevice {
        let acc16 = a.fp16_acc16_tflops.unwrap_or(a.fp16_tflops);
        GpuDevice {
            fp8: false,
            fp4_tflops: a.fp4_tflops.unwrap_or(0.0).max(0.0),
            bandwidth: a.bandwidth,
            fp16_tflops: a.fp16_tflops,
            fp16_acc16_tflops: acc16,
            int8_tops: a.int8_tops.unwrap_or(acc16),
            // Apple GPUs before M5 have no matrix units: their FP16 rate is the FP32 ALU rate
            // (the catalog's convention for Apple parts, docs/speed.md "Accelerator facts").
            vector_tflops: a.vector_tflops.unwrap_or(if a.vendor == Vendor::Apple {
                a.fp16_tflops
            } else {
                a.fp16_tflops / 4.0
            }),
            compute_units: a.compute_units,
            unified: a.memory_kind == MemoryKind::Unified,
            vendor: Some(a.vendor),
            amd_cdna: a.vendor == crate::core::catalog::Vendor::Amd
                && a.segment == crate::core::catalog::Segment::Datacenter,
            watts_per_vector_tflop: match (a.tdp_w, a.vector_tflops) {
                (Some(w), Some(t)) if w > 0.0 && t > 0.0 => w / t,
                _ => 0.0,
            },
        }
    }
    /// An NVIDIA part.
    pub fn nvidia(&self) -> bool {
        self.vendor == Some(crate::core::catalog::Vendor::Nvidia)
    }
    /// The share of its boost clock the part holds under a sustained GEMM (prefill) with profile
    /// `p`. The power the chip needs at boost goes with the work it does there (its vector
    /// FLOP/s at boost × the energy per unit of work); dynamic power is `C·V²·f` with the voltage
    /// rising about in step with the clock in the boost range, so power goes as `f³`, and a board
    /// whose power per vector TFLOPS is below what the boost clock needs runs at
    /// `(W per TFLOPS ÷ needed)^(1/3)` of it. 1 where either is unknown, never above 1.
    pub fn sustained_clock_share(&self, p: &Profile) -> f64 {
        if self.watts_per_vector_tflop > 0.0 && p.boost_watts_per_vector_tflop > 0.0 {
            let power = self.watts_per_vector_tflop / p.boost_watts_per_vector_tflop;
            // A board with the power its boost needs holds it (and skips the cube root, a
            // measurable share of a whole-catalog fit).
            if power >= 1.0 {
                1.0
            } else {
                power.cbrt().clamp(0.2, 1.0)
            }
        } else {
            1.0
        }
    }
    /// Bandwidth the batch-1 kernels of profile `p` reach, bytes/s.
    pub fn achievable_bps(&self, p: &Profile) -> f64 {
        let eff = self.bandwidth.0 * p.bandwidth_efficiency.clamp(0.01, 1.0);
        let cap = match (p.gbs_per_compute_unit, self.compute_units) {
            (Some(per), Some(n)) if per > 0.0 && n > 0 => per * n as f64,
            _ => f64::INFINITY,
        };
        (eff.min(cap) * 1e9).max(1.0)
    }
}

/// The CPU of a machine as the speed model sees it.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuDevice {
    /// Peak bandwidth the CPU cores can draw (unified chips: their cluster's share).
    pub bandwidth: GbPerSec,
    pub cores: u32,
    /// Sustained all-core clock: the CPU's base clock where [`cpu_facts`] lists it, else
    /// [`SpeedConstants::cpu_ghz`].
    pub ghz: f64,
    pub flops_per_cycle: f64,
    /// The int8 dot-product path the quantised prompt GEMMs run on (from the CPU's name).
    #[serde(default)]
    pub isa: CpuIsa,
}

impl CpuDevice {
    /// The CPU of `m` (`acc`: its GPU, to know whether the memory is shared with it).
    pub fn from_machine(m: &Machine, acc: Option<&Accelerator>, k: &SpeedConstants) -> CpuDevice {
        CpuDevice::from_machine_with(m, acc, k, cpu_facts(&m.cpu))
    }
    /// [`Self::from_machine`] with the facts of its CPU already read ([`cpu_facts`] of its name;
    /// a catalog keeps its machines': [`crate::core::catalog::Catalog::machine_parts`]).
    pub fn from_machine_with(
        m: &Machine,
        acc: Option<&Accelerator>,
        k: &SpeedConstants,
        facts: CpuFacts,
    ) -> CpuDevice {
        let unified = acc.is_some_and(|a| a.memory_kind == MemoryKind::Unified);
        let bw = if unified {
            m.ram_bandwidth.0 * k.unified_cpu_bandwidth_fraction.clamp(0.05, 1.0)
        } else {
            m.ram_bandwidth.0
        };
        CpuDevice {
            bandwidth: GbPerSec(bw),
            cores: m.cpu_cores.max(1),
            ghz: facts.base_ghz.unwrap_or(k.cpu_ghz),
            flops_per_cycle: k.cpu_flops_per_cycle,
            isa: facts.isa,
        }
    }
    /// The CPU of `m` as the scenario's launch settings use it (`--threads`).
    pub fn for_scenario(
        m: &Machine,
        acc: Option<&Accelerator>,
        s: &Scenario,
        k: &SpeedConstants,
    ) -> CpuDevice {
        CpuDevice::for_scenario_with(m, acc, s, k, cpu_facts(&m.cpu))
    }
    /// [`Self::for_scenario`] with the facts of its CPU already read.
    pub fn for_scenario_with(
        m: &Machine,
        acc: Option<&Accelerator>,
        s: &Scenario,
        k: &SpeedConstants,
        facts: CpuFacts,
    ) -> CpuDevice {
        CpuDevice::from_machine_with(m, acc, k, facts)
            .with_threads(s.launch.threads, k.cpu_core_bandwidth_gbs)
    }
    /// The CPU as `-t threads` of llama.cpp use it (`None`: every core): compute on
    /// `min(threads, cores)` cores (more threads than cores add no SIMD units; llama.cpp's
    /// `--threads` help: "number of CPU threads to use during generation"), and the bandwidth
    /// those cores can draw: `min(all cores' bandwidth, used × core_gbs)` (ggml-cpu splits each
    /// matrix row-wise into equal chunks per thread, `ggml_compute_forward_mul_mat`, so each
    /// thread streams its share of the weights, at most what one core keeps in flight:
    /// [`SpeedConstants::cpu_core_bandwidth_gbs`]).
    pub fn with_threads(mut self, threads: Option<u32>, core_gbs: f64) -> CpuDevice {
        if let Some(t) = threads.filter(|t| *t > 0) {
            let used = t.min(self.cores.max(1));
            let reach = if core_gbs > 0.0 {
                f64::from(used) * core_gbs
            } else {
                self.bandwidth.0 * f64::from(used) / f64::from(self.cores.max(1))
            };
            self.bandwidth = GbPerSec(self.bandwidth.0.min(reach));
            self.cores = used;
        }
        self
    }
    /// Int8 ops/s (2 per multiply-accumulate) of all cores on their dot-product path.
    pub fn int8_ops(&self) -> f64 {
        (self.cores.max(1) as f64 * self.ghz.max(0.1) * 1e9 * 2.0 * self.isa.int8_macs_per_cycle())
            .max(1.0)
    }
    /// FP32 SIMD FLOP/s of all cores.
    pub fn flops(&self) -> f64 {
        (self.cores.max(1) as f64 * self.ghz.max(0.1) * 1e9 * self.flops_per_cycle.max(1.0))
            .max(1.0)
    }
}

/// How a model spread over several GPUs runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum MultiGpu {
    /// llama.cpp `--split-mode layer` (its default): whole layers per GPU, run one after another,
    /// so decode is no faster than one GPU (llama.cpp tools/main/README.md, "--split-mode").
    #[default]
    LayerSplit,
    /// llama.cpp `--split-mode row`: each weight matrix split by rows, results gathered per layer.
    RowSplit,
    /// vLLM / Megatron tensor parallelism: bytes ÷ n per GPU, two all-reduces per layer
    /// (Shoeybi et al. 2019, Megatron-LM §3).
    TensorParallel,
}

/// Per-machine multipliers from the user's own llama-bench run (`headroom calibrate`).
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tuning {
    /// Multiplies the achievable bandwidth (decode).
    pub bandwidth_factor: f64,
    /// Multiplies the prefill rate.
    pub prefill_factor: f64,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            bandwidth_factor: 1.0,
            prefill_factor: 1.0,
        }
    }
}

/// Everything one speed call needs.
#[derive(Clone, Debug)]
pub struct SpeedQuery<'a> {
    pub scenario: &'a Scenario,
    pub est: &'a Estimate,
    pub backend: Backend,
    pub gpu: Option<GpuDevice>,
    /// GPUs the GPU layers are spread over (unified: 1).
    pub gpus: u64,
    /// GPU↔GPU bandwidth, one direction, GB/s (NVLink, else the PCIe link).
    pub gpu_link: GbPerSec,
    /// Whether `gpu_link` is NVLink/Infinity Fabric (for the all-reduce latency).
    pub nvlink: bool,
    pub cpu: CpuDevice,
    /// Host↔GPU link, one direction, GB/s.
    pub link: GbPerSec,
    pub gpu_layers: u64,
    pub batch: u64,
    pub ubatch: u64,
    /// Tokens already in the KV cache when decoding / prefilling.
    pub depth: u64,
    pub style: SplitStyle,
    pub multi: MultiGpu,
    pub tuning: Tuning,
    /// The model's shape for this query's scenario and estimate, made once and shared by every
    /// query on that estimate ([`ModelShape`]); `None`: read from them on each call.
    pub shape: Option<&'a ModelShape>,
}

impl<'a> SpeedQuery<'a> {
    /// The query for the scenario on machine `m` with accelerator `acc`, every layer on its GPU(s)
    /// (CPU only without one), decoding after the scenario's prompt.
    pub fn on_machine(
        s: &'a Scenario,
        est: &'a Estimate,
        m: &Machine,
        acc: Option<&Accelerator>,
        k: &SpeedConstants,
    ) -> SpeedQuery<'a> {
        Self::on_machine_with_cpu(s, est, m, acc, CpuDevice::for_scenario(m, acc, s, k))
    }

    /// [`Self::on_machine`] with the machine's CPU as the caller already made it
    /// ([`CpuDevice::for_scenario`]: reading the CPU's facts from its name is done once per
    /// machine, not once per query).
    pub fn on_machine_with_cpu(
        s: &'a Scenario,
        est: &'a Estimate,
        m: &Machine,
        acc: Option<&Accelerator>,
        cpu: CpuDevice,
    ) -> SpeedQuery<'a> {
        let backend = backend_for(s.runtime, acc);
        let gpu = acc.map(|a| GpuDevice::for_weights(a, s.weights));
        let unified = acc.is_some_and(|a| a.memory_kind == MemoryKind::Unified);
        let gpus = match acc {
            None => 0,
            Some(_) if unified => 1,
            Some(_) => m.gpu_count.max(1) as u64,
        };
        let link = acc
            .and_then(|a| a.pcie)
            .map(|p| p.bandwidth())
            .unwrap_or(GbPerSec(16.0));
        let (gpu_link, nvlink) = match acc.and_then(|a| a.gpu_link_gbs) {
            // Catalog figures are both directions together.
            Some(g) if g > 0.0 => (GbPerSec(g / 2.0), true),
            _ => (link, false),
        };
        SpeedQuery {
            scenario: s,
            est,
            backend,
            gpu,
            gpus,
            gpu_link,
            nvlink,
            cpu,
            link,
            gpu_layers: if acc.is_some() {
                est.workload.layers
            } else {
                0
            },
            batch: s.batch.max(1),
            // mlx-lm prefills in steps of `--prefill-step-size` (2048), not llama.cpp's ubatch.
            ubatch: if backend == Backend::Mlx {
                crate::core::mlx::prefill_step(s)
            } else {
                s.ubatch.max(1)
            },
            depth: s.prompt_tokens.min(s.context),
            style: SplitStyle::CpuLayers,
            multi: if backend == Backend::Vllm {
                MultiGpu::TensorParallel
            } else {
                MultiGpu::LayerSplit
            },
            tuning: Tuning::default(),
            shape: None,
        }
    }
    /// The same query on the CPU alone.
    pub fn cpu_only(mut self) -> Self {
        self.gpu = None;
        self.gpus = 0;
        self.gpu_layers = 0;
        self.backend = Backend::Cpu;
        self
    }
}

/// Decode and prefill speed of a placement.
#[derive(Copy, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Speed {
    /// Generated tokens per second, all sequences together.
    pub decode_tokens_per_s: f64,
    /// Prompt tokens per second.
    pub prefill_tokens_per_s: f64,
}

fn finite(x: f64) -> f64 {
    if x.is_finite() && x > 0.0 { x } else { 0.0 }
}

/// Whether the weights run through integer (quantised) kernels.
pub fn is_quantised(w: WeightPrecision) -> bool {
    !matches!(
        w,
        WeightPrecision::Fp32 | WeightPrecision::Fp16 | WeightPrecision::Bf16
    )
}

/// The shape numbers the model needs, from the scenario and its estimate.
#[derive(Copy, Clone, Debug)]
struct Shape {
    layers: f64,
    /// Weight bytes of the repeated layers read per decoded token (active experts only).
    layer_read: f64,
    /// Output head (and other outer weights) read per token.
    outer_read: f64,
    /// Layer weight bytes of the whole model (all experts).
    layer_total: f64,
    /// Active weights (elements) per token.
    active_params: f64,
    /// KV bytes read per token per sequence at the query depth.
    kv_at_depth: f64,
    /// Attention FLOPs per token per unit of depth: 4 · layers · heads · head_dim.
    attn_per_depth: f64,
    hidden: f64,
    /// MoE: (experts, active per token).
    moe: Option<(f64, f64)>,
    /// Layers that carry the MoE block (0 for a dense model).
    moe_layers: f64,
    quant: bool,
    weights: WeightPrecision,
    /// Routed-expert weights (elements) one token multiplies with: MoE layers × top-k × the
    /// expert's three matrices (gate, up, down); 0 for a dense model.
    routed_active: f64,
    /// Output head elements (vocab × hidden), part of `active_params`: in prefill its GEMM runs
    /// for the last token only.
    head_params: f64,
    /// Attention scores per token per attended position: attention layers × query heads.
    scores_per_depth: f64,
    /// Query heads per K/V head (GQA group; 1 for MHA and MLA's shared latent).
    gqa_group: f64,
    /// Recurrent state bytes per sequence (in `kv_at_depth`, read once whatever the depth).
    kv_state: f64,
    /// Share of the attention layers that attend within a sliding window, and the window.
    local_share: f64,
    window: f64,
}

/// The model's shape as the speed model reads it ([`shape`]: from the query's scenario, its
/// estimate and its depth, nothing else), made once per estimate and shared by the queries on it
/// (a whole-catalog fit makes one or more per machine on the same few estimates). A query uses it
/// only at the depth it was made for; its maker keeps it with the estimate it was made from.
#[derive(Clone, Debug)]
pub struct ModelShape {
    depth: u64,
    sh: Shape,
    /// The scenario's prompt in ubatches with their FLOPs, made by the first prefill on this
    /// shape ([`prefill::PromptPlan`]).
    prompt: std::cell::OnceCell<prefill::PromptPlan>,
}

impl ModelShape {
    /// The shape of `q`'s scenario and estimate at `q`'s depth.
    pub fn of(q: &SpeedQuery) -> ModelShape {
        ModelShape {
            depth: q.depth,
            sh: shape(q),
            prompt: std::cell::OnceCell::new(),
        }
    }
}

fn shape(q: &SpeedQuery) -> Shape {
    let s = q.scenario;
    let w = &q.est.workload;
    let spec = &s.model;
    let layer_read = w
        .active_weight_bytes_per_token
        .saturating_sub(w.outer_weights)
        .as_f64()
        .max(0.0);
    let outer_read = (w.active_weight_bytes_per_token.as_f64() - layer_read).max(0.0);
    let ctx = s.context.max(1) as f64;
    let d = (q.depth as f64).min(ctx);
    Shape {
        layers: w.layers.max(1) as f64,
        layer_read,
        outer_read,
        layer_total: w.layer_weights.as_f64(),
        active_params: (q.est.params.active as f64).max(1.0),
        // The KV read grows with depth; a hybrid's recurrent state is read whole at any depth.
        kv_at_depth: {
            let state = spec.recurrent_state_bytes_per_sequence() as f64;
            match spec.attention_topk() {
                // Sparse attention: the latents of at most top-k tokens, the indexer keys of
                // every token (kv_read_per_token holds both at the full context).
                Some(k) => {
                    let (k_el, v_el) = spec.kv_elements_per_token_layer();
                    let latent = (s.kv.k.bytes_for(k_el) + s.kv.v.bytes_for(v_el)) as f64
                        * spec.attention_layer_count() as f64;
                    let k = k as f64;
                    let rest =
                        (w.kv_read_per_token.as_f64() - state - latent * ctx.min(k)).max(0.0);
                    rest * d / ctx + latent * d.min(k) + state
                }
                None => (w.kv_read_per_token.as_f64() - state).max(0.0) * d / ctx + state,
            }
        },
        attn_per_depth: 4.0
            * spec.attention_layer_count() as f64
            * (spec.heads * spec.head_dim) as f64,
        hidden: spec.hidden.max(1) as f64,
        moe: spec
            .moe
            .as_ref()
            .filter(|m| m.experts > 0)
            .map(|m| (m.experts as f64, m.active_experts.max(1) as f64)),
        moe_layers: if spec.moe.as_ref().is_some_and(|m| m.experts > 0) {
            spec.moe_layer_count().min(spec.layers) as f64
        } else {
            0.0
        },
        quant: is_quantised(s.weights),
        weights: s.weights,
        routed_active: spec
            .moe
            .as_ref()
            .filter(|m| m.experts > 0)
            .map_or(0.0, |m| {
                spec.moe_layer_count() as f64
                    * m.active_experts.min(m.experts) as f64
                    * 3.0
                    * spec.hidden as f64
                    * m.expert_ffn as f64
            }),
        head_params: spec.vocab as f64 * spec.hidden as f64,
        scores_per_depth: (spec.attention_layer_count() * spec.heads) as f64,
        gqa_group: if spec.mla.is_some() || spec.kv_heads == 0 {
            1.0
        } else {
            (spec.heads as f64 / spec.kv_heads as f64).max(1.0)
        },
        kv_state: spec.recurrent_state_bytes_per_sequence() as f64,
        local_share: {
            let (local, window) = spec.local_layers();
            let attn = spec.attention_layer_count();
            if window > 0 && attn > 0 {
                local.min(attn) as f64 / attn as f64
            } else {
                0.0
            }
        },
        window: match spec.local_layers() {
            (n, w) if n > 0 && w > 0 => w as f64,
            _ => f64::INFINITY,
        },
    }
}

/// GEMM rate (FLOP/s) of the kernel profile `p` uses on `g` for these weights with `tokens`
/// columns, the expert GEMMs of a mixture of experts at their share of it ([`expert_rate`]).
fn gpu_gemm_rate(p: &Profile, g: &GpuDevice, sh: &Shape, tokens: f64) -> f64 {
    let tile = p.moe_tile_on(g.vendor);
    expert_rate(p, gpu_dense_rate(p, g, sh), sh.moe, tokens, tile)
}

/// The rate of the expert GEMMs (`mul_mat_id`) of a ubatch of `tokens` next to the dense rate:
/// the profile's MoE factor times, where the kernel's token tile `tile` is modelled (> 0), the
/// tile efficiency at `tokens · k / E` tokens per expert ([`prefill::moe_tile_efficiency`]);
/// the dense rate for a dense model.
fn expert_rate(p: &Profile, dense: f64, moe: Option<(f64, f64)>, tokens: f64, tile: f64) -> f64 {
    let Some((e, k)) = moe.filter(|(e, _)| *e > 0.0) else {
        return dense;
    };
    let fill = if tile > 0.0 {
        prefill::moe_tile_efficiency(
            tokens.max(1.0) * k.min(e) / e,
            prefill::moe_kernel_tile(tile, tokens),
        )
    } else {
        1.0
    };
    (dense * p.moe_gemm_efficiency.clamp(0.01, 1.0) * fill).max(1.0)
}

/// The rate attention runs at on `g` (FLOP/s): F16 K/V on the tensor cores accumulating in FP32
/// — the FlashAttention kernels keep FP32 accumulators (ggml-cuda `fattn-mma-f16.cuh`, Vulkan
/// `flash_attn_cm1/cm2.comp`, Metal `kernel_flash_attn_ext`) and the non-FA `KQ` product is set
/// to `GGML_PREC_F32` (`build_attn_mha`): the FP32-accumulate tensor rate (on GeForce half the
/// FP16-accumulate one) at the backend's 16-bit efficiency.
fn gpu_attention_rate(p: &Profile, g: &GpuDevice) -> f64 {
    (g.fp16_tflops * 1e12 * f16_efficiency(p, g)).max(1.0)
}

/// The backend's 16-bit GEMM rate on `g` (FLOP/s) at its accumulate convention.
fn gpu_f16_rate(p: &Profile, g: &GpuDevice) -> f64 {
    let peak = if p.f16_accumulate_fp16 {
        g.fp16_acc16_tflops
    } else {
        g.fp16_tflops
    };
    (peak * 1e12 * f16_efficiency(p, g)).max(1.0)
}

/// The profile's 16-bit GEMM efficiency on `g`: ggml-vulkan's matmul shaders run through
/// `VK_NV_cooperative_matrix2` on NVIDIA parts (`mul_mm_cm2.comp`, chosen when the device has
/// `coopmat2`: ggml-vulkan.cpp `ggml_vk_get_device` / `ggml_vk_load_shaders`) and through
/// `VK_KHR_cooperative_matrix` elsewhere, each at its own share of the tensor rate.
fn f16_efficiency(p: &Profile, g: &GpuDevice) -> f64 {
    if g.nvidia() && p.coopmat2_gemm_efficiency > 0.0 {
        p.coopmat2_gemm_efficiency
    } else {
        p.f16_gemm_efficiency
    }
}

/// The token tile of the GEMM kernel that re-reads the weights per tile (the profile's
/// `gemm_token_tile`), 0 where the weights are read once: CUDA and ROCm run only quantised
/// weights through their own MMQ kernel and hand 16-bit weights to cuBLAS / hipBLAS
/// (ggml-cuda.cu `ggml_cuda_mul_mat`: `ggml_cuda_op_mul_mat_cublas`).
fn weight_pass_tile(p: &Profile, backend: Backend, sh: &Shape) -> f64 {
    match backend {
        Backend::Cuda | Backend::Rocm if !sh.quant => 0.0,
        b if b.is_llama_cpp() => p.gemm_token_tile,
        _ => 0.0,
    }
}

/// GEMM rate (FLOP/s) of the dense (non-expert) weights' kernel for these weights.
fn gpu_dense_rate(p: &Profile, g: &GpuDevice, sh: &Shape) -> f64 {
    let f16_rate = gpu_f16_rate(p, g);
    let rate = if sh.quant {
        let t = p.quant_tensor_efficiency.map(|e| g.int8_tops * 1e12 * e);
        let v = (p.quant_vector_multiple > 0.0)
            .then_some(g.vector_tflops * 1e12 * p.quant_vector_multiple);
        match (t, v) {
            (Some(t), Some(v)) => 1.0 / (1.0 / t.max(1.0) + 1.0 / v.max(1.0)),
            (Some(t), None) => t,
            (None, Some(v)) => v,
            (None, None) => f16_rate,
        }
    } else if sh.weights == WeightPrecision::Fp32 {
        g.vector_tflops * 1e12 * p.f16_gemm_efficiency
    } else if sh.weights == WeightPrecision::Bf16
        && p.bf16_scalar_gemm_share > 0.0
        && !(g.nvidia() && p.coopmat2_gemm_efficiency > 0.0)
    {
        // No 16-bit matrix path for BF16: the scalar shader on the FP32 ALUs.
        g.vector_tflops * 1e12 * p.bf16_scalar_gemm_share
    } else {
        f16_rate
    };
    rate.max(1.0)
}

/// TF32 tensor rate ÷ FP16 tensor rate: 156 ÷ 312 TFLOPS on the A100 and 495 ÷ 989 on the H100
/// SXM (NVIDIA A100 and H100 datasheets, dense). PyTorch runs FP32 convolutions in TF32 by
/// default (`torch.backends.cudnn.allow_tf32 = True`); an FP32 image pipeline is assumed to run
/// its matmuls so too (`torch.backends.cuda.matmul.allow_tf32`).
pub const TF32_SHARE: f64 = 0.5;

/// FLOP/s of the dense GEMMs and convolutions of a runtime that computes in 16-bit (or FP32
/// with `fp32`) whatever its weights are stored as — it dequantises before multiplying, as
/// Diffusers' quantization backends and stable-diffusion.cpp do: the unquantised branch of the
/// prefill rate (`f16_gemm_efficiency` of profile `p`). FP32 runs at the TF32 tensor rate
/// where the part has one ([`TF32_SHARE`] of its FP16 rate), else at the vector rate.
pub fn dense_gemm_rate(p: &Profile, g: &GpuDevice, fp32: bool) -> f64 {
    if fp32 {
        let tf32 = g.fp16_tflops * TF32_SHARE;
        return (tf32.max(g.vector_tflops) * 1e12 * p.f16_gemm_efficiency).max(1.0);
    }
    let sh = Shape {
        weights: WeightPrecision::Bf16,
        quant: false,
        moe: None,
        moe_layers: 0.0,
        layers: 0.0,
        layer_read: 0.0,
        outer_read: 0.0,
        layer_total: 0.0,
        active_params: 0.0,
        kv_at_depth: 0.0,
        attn_per_depth: 0.0,
        hidden: 0.0,
        routed_active: 0.0,
        head_params: 0.0,
        scores_per_depth: 0.0,
        gqa_group: 1.0,
        kv_state: 0.0,
        local_share: 0.0,
        window: f64::INFINITY,
    };
    gpu_dense_rate(p, g, &sh)
}

/// The CPU's rate for the same (profile `p`'s `f16_gemm_efficiency` of the cores' SIMD rate).
pub fn cpu_dense_rate(p: &Profile, c: &CpuDevice) -> f64 {
    (c.flops() * p.f16_gemm_efficiency).max(1.0)
}

/// The CPU's rate for the dense weights of `sh`: quantised weights run ggml's int8 block dot
/// products at the profile's share of the cores' int8 path ([`cpu`]); F16 weights the FP32
/// SIMD FMAs after conversion.
fn cpu_dense_gemm_rate(p: &Profile, c: &CpuDevice, sh: &Shape) -> f64 {
    match p.quant_tensor_efficiency {
        Some(e) if sh.quant => (c.int8_ops() * e).max(1.0),
        _ => (c.flops() * p.f16_gemm_efficiency).max(1.0),
    }
}

/// Share of all routed experts a ubatch of `u` tokens touches: `1 − (1 − k/E)^u`.
fn experts_touched(moe: Option<(f64, f64)>, u: f64) -> f64 {
    match moe {
        Some((e, k)) if e > 0.0 => 1.0 - (1.0 - (k / e).min(1.0)).powf(u.max(1.0)),
        _ => 1.0,
    }
}

/// One all-reduce of `bytes` over `n` GPUs (ring: 2(n−1)/n of the message crosses each link).
fn allreduce_s(q: &SpeedQuery, k: &SpeedConstants, n: f64, bytes: f64) -> f64 {
    if n <= 1.0 {
        return 0.0;
    }
    let lat = if q.nvlink {
        k.allreduce_latency_nvlink_us
    } else {
        k.allreduce_latency_pcie_us
    } * 1e-6;
    lat + 2.0 * (n - 1.0) / n * bytes / (q.gpu_link.bytes_per_sec().max(1.0))
}

/// The PyTorch serving runtimes with every layer on the GPUs: the batched step model
/// ([`step::StepModel`]) that `core::serving` also uses, so one user's speed here is the one a
/// serving plan starts from. vLLM runs tensor parallel over the GPUs and prefills the prompt in
/// one step (up to its 8,192-token budget); transformers runs the layers one GPU after another.
fn pytorch_speed(q: &SpeedQuery, k: &SpeedConstants, g: GpuDevice) -> Speed {
    let transformers = q.backend == Backend::Transformers;
    let tp = if transformers || q.multi != MultiGpu::TensorParallel {
        1
    } else {
        q.gpus.max(1)
    };
    let mut m = step::StepModel::new(&step::StepInputs {
        scenario: q.scenario,
        est: q.est,
        gpu: g,
        profile: k.profiles.get(q.backend),
        kernel: step::Kernel::for_weights(q.scenario.weights, &g),
        costs: step::StepCosts::of(q.backend),
        tp,
        gpu_link: q.gpu_link,
        nvlink: q.nvlink,
        consts: k,
        bandwidth_factor: q.tuning.bandwidth_factor,
    });
    if transformers {
        m.dispatch_bound = true;
        m.kv_passes = step::DYNAMIC_CACHE_KV_PASSES;
    }
    let b = q.batch.max(1) as f64;
    let depth = q.depth as f64;
    let decode = b / m.time(b, depth, 0.0, 0.0);
    let chunk = if transformers {
        depth.max(1.0) * b
    } else {
        depth.clamp(1.0, 8192.0)
    };
    let prefill = chunk / m.time(0.0, 0.0, chunk, 0.0) * q.tuning.prefill_factor.max(0.01);
    Speed {
        decode_tokens_per_s: finite(decode),
        prefill_tokens_per_s: finite(prefill),
    }
}

/// Speed of a placement: `q.gpu_layers` of the layers on `q.gpus` GPUs, the rest on the CPU.
pub fn placement_speed(q: &SpeedQuery, k: &SpeedConstants) -> Speed {
    if let Some(g) = q.gpu
        && matches!(q.backend, Backend::Vllm | Backend::Transformers)
        && q.gpu_layers >= q.est.workload.layers
        && q.style == SplitStyle::CpuLayers
    {
        return pytorch_speed(q, k, g);
    }
    let p = Placed::new(q, k);
    let decode = match p.gpu {
        None => p.b / p.cpu_decode(1.0, true),
        Some(g) => p.gpu_decode(g),
    };
    let prefill = p.prompt_prefill();
    Speed {
        decode_tokens_per_s: finite(decode),
        prefill_tokens_per_s: finite(prefill),
    }
}

/// What the decode and the prefill of a layer placement share: the query, its shape, and the
/// CPU's and the link's rates.
struct Placed<'a> {
    q: &'a SpeedQuery<'a>,
    k: &'a SpeedConstants,
    /// The query's shape: borrowed from the one made for its estimate ([`ModelShape`]).
    sh: std::borrow::Cow<'a, Shape>,
    /// Layers.
    l: f64,
    /// Sequences decoded together.
    b: f64,
    cpu_p: &'a Profile,
    cpu_bps: f64,
    link_bps: f64,
    /// Attention FLOPs per token at the query depth.
    attn_tok: f64,
    /// KV bytes read per step (all sequences).
    kv: f64,
    /// The GPU when any layer is on it, and the GPUs the layers are on.
    gpu: Option<GpuDevice>,
    n_gpus: f64,
    /// The last expert-GEMM efficiency computed, keyed by (tokens, tile): a prompt's ubatches
    /// share it, and its Poisson sum is the costliest arithmetic of a ubatch.
    moe_share: std::cell::Cell<(f64, f64, f64)>,
}

/// What every ubatch of a prompt shares on the GPU ([`Placed::gpu_prefill_rates`]).
pub(super) struct GpuPrefillRates {
    g: GpuDevice,
    /// Layers on the GPU.
    gl: f64,
    /// GPUs that run one ubatch's work side by side.
    par: f64,
    /// Dense-GEMM and attention FLOP/s at the sustained clock, bytes/s.
    dense: f64,
    attn: f64,
    bps: f64,
}

/// KV bytes one decode step reads per sequence. Without FlashAttention llama.cpp computes
/// `KQ = K·Q` and `KQV = V·softmax(KQ)` as `ggml_mul_mat` with the K/V heads broadcast over their
/// group of query heads (`llm_graph_context::build_attn_mha`, non-FA branch); the batch-1
/// mat-vec kernels (CUDA `mul_mat_vec`, Metal `kernel_mul_mv_f16_f32`, ggml-cpu `vec_dot_f16`)
/// run one query head per row set and read its K/V head again for each of them: the cache is
/// read `heads ÷ kv_heads` times. The FlashAttention kernels load each K/V tile once for the
/// heads that share it, and the recurrent state of a hybrid is read once either way.
fn decode_kv_bytes(sh: &Shape, q: &SpeedQuery) -> f64 {
    let reads = if q.backend.is_llama_cpp() && !q.scenario.flash_attention {
        sh.gqa_group
    } else if q.scenario.flash_attention && q.gpu.is_some() {
        // An ungrouped FlashAttention decode kernel reads the cache below the weights' rate
        // (ROCm's vector kernel, Vulkan without coopmat2): as if it read more bytes.
        let grouped = sh.gqa_group >= 2.0 || q.scenario.model.mla.is_some();
        1.0 / prefill::flash_decode_kv_share(q.backend, q.gpu.is_some_and(|g| g.nvidia()), grouped)
    } else {
        1.0
    };
    let attn = (sh.kv_at_depth - sh.kv_state).max(0.0);
    attn * reads + sh.kv_state.min(sh.kv_at_depth)
}

/// Attention FLOPs of one token at `depth`: every position, or under sparse attention the
/// top-k positions plus the indexer over every position; a sliding-window layer at most its
/// window.
fn attention_flops(sh: &Shape, s: &Scenario, depth: f64) -> f64 {
    attention_flops_over(sh, s, depth, depth.min(sh.window))
}

/// Attention FLOPs of one token that attends `global` positions in the full-attention layers
/// and `local` in the sliding-window ones (llama.cpp keeps `window + ubatch` cells for those:
/// `llama_kv_cache_iswa`), plus a sparse-attention indexer over `global`.
fn attention_flops_over(sh: &Shape, s: &Scenario, global: f64, local: f64) -> f64 {
    sh.attn_per_depth
        * ((1.0 - sh.local_share) * s.model.attended_depth(global) + sh.local_share * local)
        + s.model.indexer_flops_per_depth() * global
}

impl<'a> Placed<'a> {
    fn new(q: &'a SpeedQuery<'a>, k: &'a SpeedConstants) -> Self {
        let sh = match q.shape {
            Some(m) if m.depth == q.depth => std::borrow::Cow::Borrowed(&m.sh),
            _ => std::borrow::Cow::Owned(shape(q)),
        };
        let l = sh.layers;
        let b = q.batch.max(1) as f64;
        let d = q.depth as f64;
        let cpu_p = &k.profiles.cpu;
        let cpu_bps = (q.cpu.bandwidth.bytes_per_sec()
            * cpu_p.bandwidth_efficiency.clamp(0.01, 1.0))
        .max(1.0)
            * q.tuning.bandwidth_factor.max(0.01);
        let link_bps = (q.link.bytes_per_sec() * k.pcie_efficiency).max(1.0);
        let attn_tok = attention_flops(&sh, q.scenario, d);
        let kv = decode_kv_bytes(&sh, q) * b;
        let (gpu, n_gpus) = match q.gpu {
            Some(g) if q.gpu_layers > 0 => (Some(g), q.gpus.max(1) as f64),
            _ => (None, 1.0),
        };
        Placed {
            q,
            k,
            sh,
            l,
            b,
            cpu_p,
            cpu_bps,
            link_bps,
            attn_tok,
            kv,
            gpu,
            n_gpus,
            moe_share: std::cell::Cell::new((f64::NAN, f64::NAN, 1.0)),
        }
    }

    /// Decode time of `frac` of the layers (and the outer weights when `outer`) on the CPU.
    fn cpu_decode(&self, frac: f64, outer: bool) -> f64 {
        let (sh, b, cpu_p) = (&self.sh, self.b, self.cpu_p);
        if frac <= 0.0 && !outer {
            return 0.0;
        }
        let bytes = sh.layer_read * frac + self.kv * frac + if outer { sh.outer_read } else { 0.0 };
        let weights = sh.active_params * frac;
        bytes / self.cpu_bps
            + b * (weights * cpu_p.dot_flops_per_weight + self.attn_tok * frac) / self.q.cpu.flops()
            + self.l * frac * cpu_p.layer_overhead_us * 1e-6
    }

    /// Decode tokens/s with the query's layers on GPU `g` and the rest on the CPU or streamed.
    fn gpu_decode(&self, g: GpuDevice) -> f64 {
        let (q, k, sh) = (self.q, self.k, &self.sh);
        let (l, b, kv, n_gpus, attn_tok) = (self.l, self.b, self.kv, self.n_gpus, self.attn_tok);
        let p = k.profiles.get(q.backend);
        let gl = q.gpu_layers.min(sh.layers as u64) as f64;
        let frac = gl / l;
        let outer_on_gpu = gl >= l;
        let bps = g.achievable_bps(p) * q.tuning.bandwidth_factor.max(0.01);
        let bytes =
            sh.layer_read * frac + kv * frac + if outer_on_gpu { sh.outer_read } else { 0.0 };
        let weights = sh.active_params * frac;
        // Several GPUs: what runs in parallel, and what it costs per layer to combine.
        let (par, comm) = match q.multi {
            _ if n_gpus <= 1.0 => (1.0, 0.0),
            MultiGpu::LayerSplit => (1.0, 0.0),
            MultiGpu::RowSplit | MultiGpu::TensorParallel => {
                let msg = b * sh.hidden * 2.0;
                (n_gpus, 2.0 * gl * allreduce_s(q, k, n_gpus, msg))
            }
        };
        // The weights' batch-1 mat-vecs take the longer of their bytes and their ALU work
        // where the profile models it (Metal: `speed::metal`); the attention over the KV cache
        // runs in its own kernels after them.
        let w_bytes = bytes - kv * frac;
        let t_alu = if p.mv_alu_efficiency > 0.0 && b <= 8.0 && q.backend.is_llama_cpp() {
            let share = w_bytes / (sh.layer_read + sh.outer_read).max(1.0);
            metal::token_issue_cycles(&q.est.workload.active_elements_by_type, q.batch) * share
                / (metal::lane_cycles_per_s(g.vector_tflops) * p.mv_alu_efficiency * par)
        } else {
            0.0
        };
        let t_mem = (w_bytes / (bps * par)).max(t_alu) + kv * frac / (bps * par);
        // The router's kernels of the MoE layers on the GPU, where the profile counts them.
        let moe_fixed = sh.moe_layers * frac * p.moe_layer_overhead_us * 1e-6;
        let fixed = gl * p.decode_layer_us(g.unified) * 1e-6 + moe_fixed;
        let t_gpu = if q.backend == Backend::Vllm || q.backend == Backend::Transformers {
            // Batched decode is a roofline: the weights are read once for all B sequences.
            let flops = b * (2.0 * weights + attn_tok * frac);
            let rate = gpu_gemm_rate(p, &g, sh, b) * par;
            t_mem.max(flops / rate) + fixed + comm
        } else {
            // llama.cpp: mat-vec kernels up to 8 sequences (mmvq), then MMQ GEMMs.
            let t_cmp = if b <= 8.0 {
                b * weights * p.dot_flops_per_weight / (g.vector_tflops.max(0.01) * 1e12 * par)
            } else {
                b * 2.0 * weights / (gpu_gemm_rate(p, &g, sh, b) * par)
            };
            t_mem + t_cmp + fixed + comm
        };
        let t_rest = match q.style {
            _ if outer_on_gpu => 0.0,
            SplitStyle::CpuLayers => self.cpu_decode(1.0 - frac, true),
            // Streaming: weights (not KV, which stays on the GPU) cross the link each step.
            SplitStyle::Streaming => {
                (sh.layer_read * (1.0 - frac) + sh.outer_read) / self.link_bps
                    + kv * (1.0 - frac) / (bps * par)
            }
        };
        b / (t_gpu + t_rest)
    }

    /// [`expert_rate`] for a ubatch of `tokens`, its tile efficiency computed once per
    /// (tokens, tile).
    fn expert_rate_at(&self, p: &Profile, dense: f64, tokens: f64) -> f64 {
        let Some((e, k)) = self.sh.moe.filter(|(e, _)| *e > 0.0) else {
            return dense;
        };
        let tile = p.moe_tile_on(self.gpu.and_then(|g| g.vendor));
        let fill = if tile > 0.0 {
            let (t, w, eff) = self.moe_share.get();
            if t == tokens && w == tile {
                eff
            } else {
                let eff = prefill::moe_tile_efficiency(
                    tokens.max(1.0) * k.min(e) / e,
                    prefill::moe_kernel_tile(tile, tokens),
                );
                self.moe_share.set((tokens, tile, eff));
                eff
            }
        } else {
            1.0
        };
        (dense * p.moe_gemm_efficiency.clamp(0.01, 1.0) * fill).max(1.0)
    }

    /// The rates every ubatch of a prompt shares with the query's layers on GPU `g`: they do
    /// not depend on the ubatch's size or depth, so a prompt computes them once.
    pub(super) fn gpu_prefill_rates(&self, g: GpuDevice) -> GpuPrefillRates {
        let (q, k, sh) = (self.q, self.k, &self.sh);
        let p = k.profiles.get(q.backend);
        let gl = q.gpu_layers.min(sh.layers as u64) as f64;
        let par = match q.multi {
            _ if self.n_gpus <= 1.0 => 1.0,
            // Layer split: one ubatch passes the GPUs one after another (llama.cpp pipelines
            // only several ubatches of one batch, PR 6017).
            MultiGpu::LayerSplit => 1.0,
            MultiGpu::RowSplit | MultiGpu::TensorParallel => self.n_gpus,
        };
        // GEMM-bound: the rates scale with the clock the board's power holds.
        let pf = q.tuning.prefill_factor.max(0.01) * g.sustained_clock_share(p);
        GpuPrefillRates {
            g,
            gl,
            par,
            dense: gpu_dense_rate(p, &g, sh) * par * pf,
            // With FlashAttention the kernel path's own rate where it is not the 16-bit GEMM
            // rate ([`prefill::flash_attention_rate`]).
            attn: q
                .scenario
                .flash_attention
                .then(|| {
                    prefill::flash_attention_rate(
                        q.backend,
                        &g,
                        sh.gqa_group,
                        q.scenario.model.head_dim as f64,
                    )
                })
                .flatten()
                .unwrap_or_else(|| gpu_attention_rate(p, &g))
                * par
                * pf,
            bps: g.achievable_bps(p) * par,
        }
    }

    /// Seconds of one ubatch of `u` tokens (FLOPs `f`, weight bytes `touched`) with the
    /// query's layers on the GPU of `r` and the rest on the CPU.
    fn gpu_ubatch_seconds(
        &self,
        r: &GpuPrefillRates,
        f: &prefill::UbatchFlops,
        touched: f64,
        u: f64,
    ) -> f64 {
        let (q, k, sh) = (self.q, self.k, &self.sh);
        let p = k.profiles.get(q.backend);
        let (g, gl, par, dense, attn, bps) = (r.g, r.gl, r.par, r.dense, r.attn, r.bps);
        let (l, n_gpus, cpu_bps) = (self.l, self.n_gpus, self.cpu_bps);
        let frac = gl / l;
        let comm = if par > 1.0 {
            2.0 * gl * allreduce_s(q, k, n_gpus, u * sh.hidden * 2.0)
        } else {
            0.0
        };
        let expert = self.expert_rate_at(p, dense, u);
        let t_flops = f.dense / dense + f.experts / expert + f.attention / attn;
        let t_kq = (f.scores * p.kq_bytes_per_score + f.expert_bytes) / bps;
        // Every layer's FLOPs run on the GPU: with CPU layers llama.cpp copies their weights
        // over PCIe for batches ≥ 32 tokens (llama.cpp PR 6083, GGML_CUDA_MIN_BATCH_OFFLOAD).
        // The weight passes beyond the first, one per token tile of the GEMM kernels
        // ([`prefill::streamed_weight_bytes`]), add their reads to the GEMMs' time.
        let rereads = match weight_pass_tile(p, q.backend, sh) {
            tile if tile > 0.0 => {
                let streamed = prefill::streamed_weight_bytes(sh, u, tile, p.moe_tile_on(g.vendor));
                (streamed - touched).max(0.0) * frac / bps
            }
            _ => 0.0,
        };
        let t_cmp =
            t_flops.max(touched * frac / bps) + rereads + t_kq + gl * p.layer_overhead_us * 1e-6;
        let off_bytes = sh.layer_total * (1.0 - frac) + if gl >= l { 0.0 } else { sh.outer_read };
        // Unified memory has no link: Metal takes the same large-batch matmuls
        // (`ggml_backend_metal_device_offload_op`, batch ≥ 32) and the scheduler copies the
        // CPU layers' weights into a GPU buffer of the same RAM — a memcpy, which reads and
        // writes each byte at the CPU's bandwidth.
        let t_copy = if g.unified {
            2.0 * off_bytes / cpu_bps
        } else if u >= 32.0 {
            off_bytes / self.link_bps
        } else {
            off_bytes / cpu_bps
        };
        t_cmp + comm + t_copy
    }
}

/// How [`formula_text`] writes one optional term of a profile from its value.
type TermText = fn(f64) -> String;

/// The speed formula of a backend with its constants, for reports.
pub fn formula_text(b: Backend, k: &SpeedConstants) -> String {
    let p = k.profiles.get(b);
    let bw = match p.gbs_per_compute_unit {
        Some(c) => format!(
            "min({} × bandwidth, compute units × {c} GB/s)",
            p.bandwidth_efficiency
        ),
        None => format!("({} × bandwidth)", p.bandwidth_efficiency),
    };
    let quant = match (p.quant_tensor_efficiency, p.quant_vector_multiple > 0.0) {
        (Some(t), true) => format!(
            "1 ÷ (1 ÷ ({t} × INT8 TOPS) + 1 ÷ ({} × vector TFLOPS))",
            p.quant_vector_multiple
        ),
        (Some(t), false) if b == Backend::Cpu => format!(
            "{t} × cores × base GHz × 2 × int8 MACs/cycle (AVX2 32, VNNI 64, NEON dotprod 64, i8mm 128)"
        ),
        (Some(t), false) if matches!(b, Backend::Metal | Backend::Mlx) => {
            format!("{t} × GPU FP32 TFLOPS")
        }
        (Some(t), false) => format!("{t} × INT8 TOPS"),
        (None, true) => format!("{} × vector TFLOPS", p.quant_vector_multiple),
        (None, false) => "the F16 rate".into(),
    };
    let decode = match b {
        Backend::Vllm | Backend::Transformers => {
            let c = step::StepCosts::of(b);
            format!(
                "step = {}(max(bytes ÷ ({} × bandwidth × kernel), FLOPs ÷ GEMM rate){}layers × {} µs) + {} µs + {} µs per sequence (speed/step.rs; kernels per precision: docs/serving.md)",
                if b == Backend::Transformers {
                    "max"
                } else {
                    ""
                },
                p.bandwidth_efficiency,
                if b == Backend::Transformers {
                    ", "
                } else {
                    " + "
                },
                p.layer_overhead_us,
                c.step_us,
                c.per_seq_us
            )
        }
        _ if p.moe_layer_overhead_us > 0.0 => format!(
            "decode token = bytes ÷ {bw} + weights × {} FLOP ÷ vector rate + layers × {} µs + MoE layers × {} µs",
            p.dot_flops_per_weight, p.layer_overhead_us, p.moe_layer_overhead_us
        ),
        _ if p.mv_alu_efficiency > 0.0 => format!(
            "decode token = max(weight bytes ÷ {bw}, weights × ALU issue cycles by type (speed/metal.rs) ÷ ({} × vector TFLOPS ÷ 2)) + KV bytes ÷ {bw} + layers × {} µs",
            p.mv_alu_efficiency, p.layer_overhead_us
        ),
        _ => format!(
            "decode token = bytes ÷ {bw} + weights × {} FLOP ÷ vector rate + layers × {} µs",
            p.dot_flops_per_weight, p.layer_overhead_us
        ),
    };
    let decode = if p.unified_layer_overhead_us > 0.0 && b.is_llama_cpp() {
        format!(
            "{decode} (+ layers × {} µs on a GPU that shares the host's memory)",
            p.unified_layer_overhead_us
        )
    } else {
        decode
    };
    let mut extra = String::new();
    if p.moe_token_tile > 0.0 {
        let amd_intel = if p.moe_token_tile_amd_intel > 0.0 {
            format!(", {} on AMD and Intel", p.moe_token_tile_amd_intel)
        } else {
            String::new()
        };
        extra.push_str(&format!(
            " × tile efficiency ({} tokens per tile{amd_intel}) + {} B per hidden element per token and routed expert ÷ bandwidth",
            p.moe_token_tile,
            prefill::EXPERT_OUTPUT_BYTES_PER_HIDDEN
        ));
    }
    if p.gemm_token_tile > 0.0 {
        let which = if matches!(b, Backend::Cuda | Backend::Rocm) {
            "quantised weights"
        } else {
            "weights"
        };
        extra.push_str(&format!(
            "; + the {which} read again per {}-token tile ÷ bandwidth",
            p.gemm_token_tile
        ));
    }
    // The profile's optional terms, each shown where the profile uses it.
    let terms: [(f64, TermText); 3] = [
        (p.bf16_scalar_gemm_share, |v| {
            format!("; BF16 without BF16 matrix cores: {v} × vector TFLOPS")
        }),
        (p.kq_bytes_per_score, |v| {
            format!("; without FlashAttention + {v} B per attention score ÷ bandwidth")
        }),
        (p.boost_watts_per_vector_tflop, |v| {
            format!("; clock × min(1, (W per vector TFLOPS ÷ {v})^(1/3))")
        }),
    ];
    for (v, text) in terms {
        if v > 0.0 {
            extra.push_str(&text(v));
        }
    }
    let moe = if p.moe_gemm_efficiency == 1.0 {
        "MoE experts at that rate".to_string()
    } else {
        format!("MoE × {}", p.moe_gemm_efficiency)
    };
    format!(
        "{}: {decode}; prefill = FLOPs ÷ rate per ubatch, rate = quantised: {quant}; F16: {} × FP16 tensor rate ({} accumulate); {moe}{extra}",
        b.label(),
        p.f16_gemm_efficiency,
        if p.f16_accumulate_fp16 {
            "FP16"
        } else {
            "FP32"
        },
    )
}

/// Training throughput: `6·P` FLOPs per token for a full fine-tune (`8·P` with full recompute),
/// `4·P` for LoRA/QLoRA (no weight gradients for the frozen base), over `gpus` at `training_mfu`.
pub fn training_tokens_per_s(
    flops_per_token: f64,
    gpus: u64,
    tflops: f64,
    k: &SpeedConstants,
) -> f64 {
    let f = (tflops.max(0.0) * 1e12 * k.training_mfu * gpus.max(1) as f64).max(1.0);
    finite(f / flops_per_token.max(1.0))
}

/// Seconds to move `bytes` over a link.
pub fn transfer_seconds(bytes: Bytes, link: GbPerSec, k: &SpeedConstants) -> f64 {
    bytes.as_f64() / (link.bytes_per_sec() * k.pcie_efficiency).max(1.0)
}
