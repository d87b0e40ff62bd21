//! Training on a cluster: memory per GPU of a layout from the estimate, and the step time from
//! what the GPUs compute, the bytes they move through memory, and the collectives they wait for.
//!
//! Per micro-batch of `T = micro-batch × sequence` tokens, one pipeline stage on one GPU does
//! - GEMMs: `passes × 2 × P_matmul ÷ (tp · pp) × T` FLOPs (forward 2, backward 4 for a full
//!   fine-tune, 2 for adapters, +2 for full recomputation) at [`GEMM_EFFICIENCY`] of the dense
//!   peak;
//! - attention: FlashAttention's causal `QKᵀ` and `AV`, `2 · seq · heads · head_dim` FLOPs per
//!   token and layer forward, 2.5× that backward (Dao 2023, "FlashAttention-2", §3: the backward
//!   pass runs five matmuls to the forward's two), at [`ATTENTION_EFFICIENCY`];
//! - the element-wise work between them (norms, activations, residual adds, rotary, dropout):
//!   the activation bytes a layer writes, `34 · T · hidden` (Korthikanti et al. 2022, "Reducing
//!   Activation Recomputation in Large Transformer Models", eq. 1 without the attention scores
//!   FlashAttention does not keep), written, read back and their gradients written
//!   ([`ELEMENTWISE_PASSES`]), at the GPU's memory bandwidth;
//! - tensor parallel: four all-reduces of `T × hidden` BF16 values per layer (two forward, two
//!   backward; Shoeybi et al. 2019, "Megatron-LM", §3), six with recomputation, on the critical
//!   path;
//! - pipeline: the activations of the micro-batch sent to the next stage and their gradient
//!   back, and the 1F1B bubble: `(m + pp − 1)` micro-batch slots for `m` micro-batches
//!   (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters
//!   Using Megatron-LM", §2.2.1).
//!
//! Once per step the data-parallel ranks reduce the gradients (FP32, [`GRAD_REDUCE_BYTES`]),
//! overlapped with the last micro-batch's backward pass (PyTorch DDP buckets, DeepSpeed
//! `overlap_comm`); ZeRO-3 and FSDP gather the BF16 parameters before every forward and backward
//! and reduce-scatter the gradients after, prefetched behind the compute of the micro-batch.
//! The optimizer then reads and writes its states once ([`optimizer_bytes_per_param`]).

use super::collective::{Collective, time};
use super::{Cluster, ClusterInputs, Layout, Sharding, pow2_divisors};
use crate::core::catalog::Accelerator;
use crate::core::estimate::{
    CUDA_CONTEXT, ComponentKind, Estimate, estimate_owned, estimate_with, trainable_params,
};
use crate::core::fit::FitSettings;
use crate::core::model::{MlpKind, ModelSpec};
use crate::core::placement::capacity::{gpu_capacity, host_link};
use crate::core::placement::cost::hourly_usd;
use crate::core::precision::WeightPrecision;
use crate::core::scenario::{Checkpointing, Framework, Mode, Offload, Optimizer, Scenario};
use crate::core::units::Bytes;
use serde::{Deserialize, Serialize};

/// Fraction of the dense BF16 peak that the large GEMMs of a transformer layer reach under
/// cuBLAS/CUTLASS (heuristic: NVIDIA's "Matrix Multiplication Background" guide shows large
/// BF16 GEMMs at 70–80 % of an A100's 312 TFLOP/s; Megatron-LM's 52 % end-to-end MFU at 1T
/// parameters leaves the rest to attention, element-wise work and communication).
pub const GEMM_EFFICIENCY: f64 = 0.75;
/// The A100 SXM's maximum achievable matmul throughput over its peak, 267.9 of 312 TFLOP/s
/// (ml-engineering `compute/accelerator/README.md`, "Maximum Achievable Matmul FLOPS comparison
/// table"; the same figure as the catalog's `mamf_tflops`).
pub const A100_MAMF_SHARE: f64 = 267.9 / 312.0;

/// Fraction of `a`'s dense peak its training GEMMs reach: [`GEMM_EFFICIENCY`] is stated for
/// the A100, whose best `matmul` reaches [`A100_MAMF_SHARE`] of its peak; a part with a
/// measured ceiling (`mamf_tflops`) reaches the same share of *its* ceiling — an H100 SXM's best
/// `matmul` is 792.1 of 989 TFLOP/s (80.1 %), so its GEMMs reach 0.75 × 80.1 / 85.9 = 70 % of its
/// peak. Parts without a measurement keep [`GEMM_EFFICIENCY`].
pub fn gemm_efficiency(a: &Accelerator) -> f64 {
    match a.mamf_tflops {
        Some(m) if m > 0.0 && a.fp16_tflops > 0.0 => {
            GEMM_EFFICIENCY * (m / a.fp16_tflops).min(1.0) / A100_MAMF_SHARE
        }
        _ => GEMM_EFFICIENCY,
    }
}
/// Fraction of the peak FlashAttention-2 reaches forward and backward: 50–73 % of the
/// theoretical maximum on an A100 (Dao 2023, "FlashAttention-2", §4.1), "only 35 % utilization
/// on the H100" whose tensor cores it does not drive asynchronously (Shah et al. 2024,
/// "FlashAttention-3", abstract).
pub const ATTENTION_EFFICIENCY: f64 = 0.5;
pub const ATTENTION_EFFICIENCY_HOPPER: f64 = 0.35;

/// FlashAttention-2's fraction of the peak on `a` ([`ATTENTION_EFFICIENCY`]): Hopper and later
/// NVIDIA parts (H100, H200, GH200, B200) at the Hopper figure.
pub fn attention_efficiency(a: &Accelerator) -> f64 {
    let n = a.name.to_ascii_uppercase();
    let hopper = a.vendor == crate::core::catalog::Vendor::Nvidia
        && ["H100", "H200", "H800", "H20", "B200", "B100", "GB200"]
            .iter()
            .any(|x| n.contains(x));
    if hopper {
        ATTENTION_EFFICIENCY_HOPPER
    } else {
        ATTENTION_EFFICIENCY
    }
}
/// Bytes of activations a layer writes per token and hidden unit (Korthikanti et al. 2022, eq. 1).
pub const ACTIVATION_BYTES_PER_TOKEN_HIDDEN: f64 = 34.0;
/// Memory passes over those activations per step: written forward, read backward, gradients
/// written (heuristic: one pass each).
pub const ELEMENTWISE_PASSES: f64 = 5.0;
/// GPU time lost per kernel between back-to-back launches from eager PyTorch, µs (heuristic: a
/// CUDA kernel launch costs ~5 µs, NVIDIA's "CUDA C++ Best Practices Guide", §"Kernel launch
/// overhead"), and the kernels a transformer layer runs forward (norms, projections, rotary,
/// attention, activation, residuals, casts: ~20; twice that backward).
pub const KERNEL_GAP_US: f64 = 5.0;
pub const KERNELS_PER_LAYER_FORWARD: f64 = 20.0;
/// Bytes the loss moves per logit (vocabulary entry per token) on the stage with the output
/// head: the BF16 logits read and cast to FP32 (2 + 4), the softmax's max and exp-sum passes
/// read them (4 + 4) and write the FP32 probabilities kept for backward (4); backward reads them
/// (4), writes the FP32 gradient (4), and casts it to BF16 (4 + 2) — torchtitan's `loss_fn`
/// (`cross_entropy(pred.float(), …)`, train.py), Megatron-LM's FP32 vocab-parallel cross
/// entropy (`megatron/core/tensor_parallel/cross_entropy.py`). Split over the TP ranks.
pub const LOSS_BYTES_PER_LOGIT: f64 = 32.0;
/// Bytes per element to cast a BF16 activation to FP8 with dynamic scaling: read for its
/// absolute maximum (2), read and written as FP8 (2 + 1) — torchao `float8` (`tensor_to_amax`,
/// then `hp_tensor_to_float8_dynamic`), Transformer Engine's current scaling.
pub const FP8_CAST_BYTES: f64 = 5.0;
/// Bytes per gradient element in the data-parallel reduction: FP32 (torchtitan's default
/// `mixed_precision_reduce = "float32"`; Llama 3 paper, arXiv 2407.21783, §3.3.2: "we … perform
/// reduce-scatter in FP32").
pub const GRAD_REDUCE_BYTES: f64 = 4.0;
/// Bytes per parameter element gathered by ZeRO-3/FSDP: BF16.
pub const PARAM_GATHER_BYTES: f64 = 2.0;

/// Tokens per optimizer step when the user sets no global batch: 4M (Llama 2 paper, Touvron et
/// al. 2023, §2.2: "a global batch-size of 4M tokens"). Fixed, so adding nodes past the batch's
/// sequences stops paying.
pub const DEFAULT_BATCH_TOKENS: u64 = 1 << 22;

/// The default global batch in sequences of `context` tokens.
pub fn default_global_batch(context: u64) -> u64 {
    (DEFAULT_BATCH_TOKENS / context.max(1)).max(1)
}

/// Bytes the optimizer step reads and writes per parameter it updates: AdamW reads the FP32
/// master, gradient and two moments (16 B), writes master and moments (12 B) and the BF16 copy
/// (2 B); 8-bit AdamW's moments are 1 B each; SGD with momentum has one FP32 moment; Adafactor
/// factored second moments (~0 B per parameter).
pub fn optimizer_bytes_per_param(o: Optimizer) -> f64 {
    match o {
        Optimizer::AdamW => 30.0,
        Optimizer::AdamW8bit => 18.0,
        Optimizer::Sgd => 22.0,
        Optimizer::Adafactor => 18.0,
    }
}

/// Memory of one GPU under a layout.
#[derive(Copy, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PerGpu {
    pub weights: Bytes,
    pub gradients: Bytes,
    pub optimizer: Bytes,
    pub master_weights: Bytes,
    pub activations: Bytes,
    pub overhead: Bytes,
}

impl PerGpu {
    pub fn total(&self) -> Bytes {
        self.weights
            + self.gradients
            + self.optimizer
            + self.master_weights
            + self.activations
            + self.overhead
    }
}

/// Where a step's time goes, seconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepTime {
    /// GEMMs, attention and element-wise work of all micro-batches on one GPU.
    pub compute: f64,
    /// Tensor-parallel all-reduces.
    pub tensor_parallel: f64,
    /// Pipeline sends and the 1F1B bubble.
    pub pipeline: f64,
    /// Data-parallel gradient reduction and ZeRO-3/FSDP gathers not hidden behind compute.
    pub data_parallel: f64,
    /// The optimizer step.
    pub optimizer: f64,
    /// Expert-parallel all-to-all (token dispatch and combine of the MoE layers), exposed.
    #[serde(default)]
    pub expert_parallel: f64,
}

impl StepTime {
    pub fn total(&self) -> f64 {
        self.compute
            + self.tensor_parallel
            + self.pipeline
            + self.data_parallel
            + self.optimizer
            + self.expert_parallel
    }
}

/// One layout of a training job on a cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainPlan {
    pub layout: Layout,
    /// One GPU's memory in each pipeline stage, first stage first (one entry without pipeline
    /// parallelism); `per_gpu` is the heaviest.
    #[serde(default)]
    pub stages: Vec<PerGpu>,
    /// The activation checkpointing the plan runs with: the scenario's, or stronger where only
    /// recomputation makes the layout fit (see [`best_layout`]).
    #[serde(default)]
    pub checkpointing: Checkpointing,
    pub nodes: u64,
    pub gpus: u64,
    pub per_gpu: PerGpu,
    /// Usable memory per GPU.
    pub usable_per_gpu: Bytes,
    pub fits: bool,
    pub micro_batch: u64,
    /// Micro-batches per step per data-parallel rank (gradient accumulation × pipeline).
    pub micro_batches: u64,
    pub global_batch: u64,
    pub step: StepTime,
    pub step_seconds: f64,
    pub tokens_per_s: f64,
    /// Model FLOPs utilisation: (6·N + 12·layers·d_attn·seq) FLOPs per token (PaLM's
    /// convention, Chowdhery et al. 2022, appendix B) over the cluster's dense peak.
    pub mfu: f64,
    /// Communication per step per GPU, bytes (all collectives and sends).
    pub comm_bytes_per_gpu: f64,
    pub run_hours: f64,
    pub usd_per_hour: Option<f64>,
    pub run_usd: Option<f64>,
}

impl TrainPlan {
    /// "TP 8 × PP 2 × DP 4, ZeRO-1", with ", full recompute" or ", selective recompute" when
    /// the plan recomputes activations.
    pub fn layout_text(&self) -> String {
        match self.checkpointing {
            Checkpointing::None => self.layout.to_string(),
            c => format!("{}, {} recompute", self.layout, c.cli_name()),
        }
    }
}

/// The model's shape numbers the step model needs.
struct Shape {
    layers: f64,
    hidden: f64,
    heads: f64,
    d_attn: f64,
    /// Matmul parameters active per token, outside the output head.
    body: f64,
    /// The output head (vocab × hidden).
    head: f64,
    active: f64,
    total: f64,
    trainable: f64,
    /// Share of the parameters that are routed experts (0 for dense models).
    routed: f64,
    /// MoE layers and experts per token (top-k).
    moe_layers: f64,
    top_k: f64,
}

fn shape(s: &Scenario, est: &Estimate) -> Shape {
    let m = &s.model;
    let head = (m.vocab * m.hidden) as f64;
    let active = est.params.active as f64;
    // The active count holds the head (and one embedding row: a lookup, not a GEMM).
    let body = (active - head).max(active * 0.1);
    Shape {
        layers: m.layers.max(1) as f64,
        hidden: m.hidden.max(1) as f64,
        heads: m.heads.max(1) as f64,
        d_attn: (m.heads * m.head_dim).max(1) as f64,
        body,
        head,
        active,
        total: est.params.total as f64,
        trainable: trainable_params(s, &est.params) as f64,
        routed: routed_share(m),
        moe_layers: m.moe_layer_count() as f64,
        top_k: m
            .moe
            .as_ref()
            .map_or(0, |x| x.active_experts.min(x.experts)) as f64,
    }
}

/// Share of `m`'s parameters that are routed experts (their matrices and biases; the shared
/// expert and the router stay with the dense part): Σ over the MoE layers of the routed tensors
/// over the architecture's total. 0 for dense models.
fn routed_share(m: &ModelSpec) -> f64 {
    if m.moe.as_ref().is_none_or(|x| x.experts <= 1) {
        return 0.0;
    }
    let routed: f64 = m
        .layer_groups()
        .iter()
        .filter(|g| g.moe)
        .map(|g| {
            let one: u64 = m
                .layer_tensors(g.first)
                .iter()
                .filter(|t| t.routed)
                .map(|t| t.elements)
                .sum();
            one as f64 * g.count as f64
        })
        .sum();
    let total = m.arch_param_count().total as f64;
    if total > 0.0 {
        (routed / total).min(1.0)
    } else {
        0.0
    }
}

/// One GPU's model states under `l` relative to the TP split (`÷ tp`) of the dense plan: the
/// dense part ÷ TP as before; with expert parallelism the routed experts ÷ EP, each expert whole
/// (`--expert-tensor-parallel-size 1`; Megatron-Core's MoE README,
/// `megatron/core/transformer/moe/README.md`, "Expert Parallelism" and its argument table;
/// DeepSpeed-MoE, Rajbhandari et al. 2022, arXiv 2201.05596, §4), so `tp ÷ ep` of their TP
/// split. 1 without expert parallelism (the experts split over the TP ranks, Megatron-Core's
/// default expert tensor parallel = TP).
fn expert_factor(sh: &Shape, l: &Layout) -> f64 {
    if l.ep <= 1 {
        return 1.0;
    }
    1.0 - sh.routed + sh.routed * l.tp.max(1) as f64 / l.ep as f64
}

/// The scenario as the estimate sees one data-parallel shard group of `layout`.
fn shard_scenario(s: &Scenario, c: &Cluster, layout: &Layout) -> Scenario {
    let mut e = s.clone();
    let (n, framework) = match layout.sharding {
        Sharding::None => (1, s.framework),
        Sharding::Zero1 | Sharding::Zero2 | Sharding::Zero3 => (layout.dp, Framework::DeepSpeed),
        Sharding::Fsdp => (layout.dp, Framework::Fsdp),
        Sharding::Hsdp => (layout.dp.min(c.gpus_per_node), Framework::Fsdp),
    };
    e.gpus = n.max(1);
    e.zero = layout.sharding.zero_stage();
    e.framework = if framework == Framework::Fsdp && n <= 1 {
        Framework::Transformers
    } else {
        framework
    };
    e
}

/// Share of the model's weights the heaviest pipeline stage holds: its layers and, past one
/// stage, the output head (or the embedding) — Megatron places the embedding on the first stage
/// and the head on the last.
fn stage_share(sh: &Shape, pp: u64) -> f64 {
    stage_share_of(sh, pp, 0)
}

/// Share of the model's weights pipeline stage `i` of `pp` holds: its `layers ÷ pp` layers, the
/// embedding on the first, the output head on the last (Megatron-LM's placement).
fn stage_share_of(sh: &Shape, pp: u64, i: u64) -> f64 {
    if pp <= 1 {
        return 1.0;
    }
    let layers = (sh.total - 2.0 * sh.head).max(sh.total * 0.5);
    let ends = if i == 0 || i + 1 == pp { sh.head } else { 0.0 };
    ((layers / pp as f64 + ends) / sh.total).min(1.0)
}

/// One GPU's memory in each pipeline stage of `layout`, first stage first: the stage's share of
/// the model states ([`stage_share_of`]) ÷ TP, and the activations of the micro-batches 1F1B
/// keeps in flight there (`pp − i` of stage `i`'s `layers ÷ pp` layers; Narayanan et al. 2021,
/// §2.2.1) ÷ TP. One entry without pipeline parallelism.
fn stages_of(s: &Scenario, est: &Estimate, layout: &Layout) -> Vec<PerGpu> {
    let sh = shape(s, est);
    let pp = layout.pp.max(1);
    let tp = layout.tp.max(1) as f64;
    let act = est.per_gpu_kind(ComponentKind::Activations);
    // The caching allocator's reserve is a share of what the GPU allocates (core::estimate's
    // training reserve): of the stage's own allocation, not of the unsplit estimate's; the CUDA
    // context stays per GPU.
    let ctx = CUDA_CONTEXT.min(est.per_gpu_kind(ComponentKind::Overhead));
    let allocated = est.peak_allocated().as_f64().max(1.0);
    let reserve = est
        .per_gpu_kind(ComponentKind::Overhead)
        .saturating_sub(ctx)
        .as_f64()
        / allocated;
    (0..pp)
        .map(|i| {
            let split = stage_share_of(&sh, pp, i) / tp;
            // Expert parallelism splits the routed experts' states that the data-parallel
            // ranks do not already shard (the distributed optimizer / ZeRO-1 shards the
            // optimizer states and master weights over DP, experts' over DP ÷ EP ranks: the
            // same share per GPU).
            let ef = expert_factor(&sh, layout);
            let sharded = layout.sharding.zero_stage() >= 1;
            let k = |kind: ComponentKind| {
                let f = match kind {
                    ComponentKind::Optimizer | ComponentKind::MasterWeights if sharded => 1.0,
                    _ => ef,
                };
                est.per_gpu_kind(kind).scale(split * f)
            };
            let mut g = PerGpu {
                weights: k(ComponentKind::Weights),
                gradients: k(ComponentKind::Gradients),
                optimizer: k(ComponentKind::Optimizer),
                master_weights: k(ComponentKind::MasterWeights),
                activations: act.scale((pp - i) as f64 / pp as f64 / tp),
                overhead: Bytes(0),
            };
            g.overhead = ctx + g.total().scale(reserve);
            g
        })
        .collect()
}

/// Memory per GPU of `layout`: the shard group's estimate, the model states of the heaviest
/// stage split over the tensor-parallel ranks, and the activations of one micro-batch of the
/// whole model ÷ tp (under 1F1B the first stage holds `pp` micro-batches of its `layers ÷ pp`
/// layers; sequence parallelism splits every activation over the tensor-parallel ranks).
pub fn per_gpu(s: &Scenario, c: &Cluster, layout: &Layout) -> (PerGpu, Estimate) {
    let est = estimate_owned(shard_scenario(s, c, layout), false);
    (per_gpu_of(s, &est, layout), est)
}

/// [`per_gpu`] from the shard group's estimate `est`.
fn per_gpu_of(s: &Scenario, est: &Estimate, layout: &Layout) -> PerGpu {
    stages_of(s, est, layout)[0]
}

/// The layouts the engines offer for `s` on `c`: tensor parallel inside a node in powers of two
/// that divide the attention heads and the KV heads (Megatron-LM requires both), pipeline stages
/// in powers of two up to the layers, the rest data parallel; ZeRO-2/3 do not run under
/// pipeline parallelism (DeepSpeed's pipeline engine supports ZeRO-1 only), hybrid sharding
/// needs more than one node. The inputs' fixed choices filter the list.
pub fn layouts(s: &Scenario, c: &Cluster, inputs: &ClusterInputs) -> Vec<Layout> {
    let m = &s.model;
    let total = c.gpus();
    let mut out = Vec::new();
    for tp in pow2_divisors(c.gpus_per_node) {
        let heads_ok = m.heads.max(1).is_multiple_of(tp)
            && (m.kv_heads == 0 || m.kv_heads.is_multiple_of(tp) || tp.is_multiple_of(m.kv_heads));
        if !heads_ok || inputs.tp.is_some_and(|x| x != tp) {
            continue;
        }
        for pp in pow2_divisors(total / tp) {
            if pp > m.layers.max(1) || inputs.pp.is_some_and(|x| x != pp) {
                continue;
            }
            let dp = total / (tp * pp);
            for sharding in shardings(s.framework, pp, c.nodes, tp)
                .into_iter()
                // ZeRO-Offload partitions the optimizer states: stage 1 and up.
                .filter(|x| s.offload == Offload::None || *x != Sharding::None)
            {
                if inputs.sharding.is_some_and(|x| x != sharding) {
                    continue;
                }
                for ep in ep_options(m, tp * dp, sharding) {
                    if inputs.ep.is_some_and(|x| x != ep) {
                        continue;
                    }
                    out.push(Layout {
                        tp,
                        pp,
                        dp,
                        sharding,
                        ep,
                    });
                }
            }
        }
    }
    out
}

/// Expert-parallel sizes for `tp × dp` GPUs per stage under `sharding`: for a mixture of
/// experts, powers of two that divide both the routed experts (Megatron-Core: each EP rank holds
/// `num_experts ÷ EP` of them) and `tp × dp` (the world divides by ETP × EP × PP, ETP 1:
/// `megatron/core/parallel_state.py` `initialize_model_parallel`), under Megatron's DDP or
/// distributed optimizer (DDP, ZeRO-1); 1 otherwise.
fn ep_options(m: &ModelSpec, tp_dp: u64, sharding: Sharding) -> Vec<u64> {
    let experts = m.moe.as_ref().map_or(0, |x| x.experts);
    if experts <= 1 || !matches!(sharding, Sharding::None | Sharding::Zero1) {
        return vec![1];
    }
    pow2_divisors(tp_dp)
        .filter(|e| experts.is_multiple_of(*e))
        .collect()
}

/// Why `--ep` cannot run for `m`, or `None`: expert parallelism needs a mixture of experts
/// whose routed experts the size divides.
pub fn ep_error(m: &ModelSpec, ep: u64) -> Option<String> {
    let experts = m.moe.as_ref().map_or(0, |x| x.experts);
    if ep <= 1 {
        None
    } else if experts <= 1 {
        Some(format!(
            "--ep {ep}: expert parallelism needs a mixture-of-experts model"
        ))
    } else if !experts.is_multiple_of(ep) {
        Some(format!(
            "--ep {ep}: must divide the model's {experts} routed experts"
        ))
    } else {
        None
    }
}

/// Shardings a framework runs at this pipeline depth and node count.
fn shardings(f: Framework, pp: u64, nodes: u64, tp: u64) -> Vec<Sharding> {
    let base: &[Sharding] = match f {
        Framework::DeepSpeed => &[
            Sharding::None,
            Sharding::Zero1,
            Sharding::Zero2,
            Sharding::Zero3,
        ],
        Framework::Fsdp => &[Sharding::Fsdp, Sharding::Hsdp],
        _ => &[Sharding::None, Sharding::Fsdp, Sharding::Hsdp],
    };
    base.iter()
        .copied()
        .filter(|x| pp == 1 || matches!(x, Sharding::None | Sharding::Zero1 | Sharding::Fsdp))
        .filter(|x| *x != Sharding::Hsdp || (nodes > 1 && pp == 1 && tp == 1))
        .collect()
}

/// Plan `layout` of the training scenario `s` on cluster `c`.
pub fn train_plan(
    s: &Scenario,
    c: &Cluster,
    layout: Layout,
    inputs: &ClusterInputs,
    st: &FitSettings,
) -> TrainPlan {
    let est = estimate_owned(shard_scenario(s, c, &layout), false);
    plan_with(s, c, layout, inputs, st, &est)
}

/// [`train_plan`] with the shard group's estimate at hand.
fn plan_with(
    s: &Scenario,
    c: &Cluster,
    layout: Layout,
    inputs: &ClusterInputs,
    st: &FitSettings,
    est: &Estimate,
) -> TrainPlan {
    let stages = stages_of(s, est, &layout);
    let per_gpu = stages[0];
    let usable = gpu_capacity(c.machine, Some(c.acc), s, st);
    let sh = shape(s, est);
    // Under pipeline parallelism each rank's batch runs through the stages in micro-batches of
    // `--pp-micro-batch` sequences, one by default (Megatron-LM's `--micro-batch-size` is
    // usually 1 with PP).
    let local = s.batch.max(1);
    let micro_batch = if layout.pp > 1 {
        inputs.pp_micro_batch.unwrap_or(1).max(1)
    } else {
        local
    };
    let per_rank = micro_batch * layout.dp;
    let asked = inputs
        .global_batch
        .unwrap_or_else(|| default_global_batch(s.context));
    // More data-parallel ranks than the global batch has sequences leaves ranks without work:
    // the layout does not run (the batch is a training choice, not the cluster's).
    let batch_fits = asked >= per_rank;
    let global_batch = asked.max(per_rank);
    let m = global_batch.div_ceil(per_rank).max(1);
    let offloaded = est.host_kind(ComponentKind::Optimizer).0 > 0;
    let step = step_time(s, c, &layout, &sh, (micro_batch, m), offloaded, st);
    let tokens = (global_batch * s.context.max(1)) as f64;
    let step_seconds = step.total().max(1e-9);
    let tokens_per_s = tokens / step_seconds;
    let peak = c.acc.fp16_tflops * 1e12 * c.gpus() as f64;
    let model_flops = 6.0 * sh.active + 12.0 * sh.layers * sh.d_attn * s.context as f64;
    let run_hours = s.train_tokens as f64 / tokens_per_s / 3600.0;
    let usd_per_hour = c.hourly_usd(hourly_usd(c.machine, Some(c.acc), st));
    TrainPlan {
        layout,
        stages,
        checkpointing: s.checkpointing,
        nodes: c.nodes,
        gpus: c.gpus(),
        per_gpu,
        usable_per_gpu: usable,
        fits: per_gpu.total() <= usable && batch_fits,
        micro_batch,
        micro_batches: m,
        global_batch,
        step,
        step_seconds,
        tokens_per_s,
        mfu: if peak > 0.0 {
            model_flops * tokens_per_s / peak
        } else {
            0.0
        },
        comm_bytes_per_gpu: comm_bytes(s, &layout, &sh, micro_batch, m),
        run_hours,
        usd_per_hour,
        run_usd: usd_per_hour.map(|h| h * run_hours),
    }
}

/// FLOP passes over the weights per token: forward 2, backward 4 (full) or 2 (adapters: input
/// gradients only), full recomputation one more forward.
fn passes(s: &Scenario) -> (f64, f64) {
    let recompute = if s.checkpointing == Checkpointing::Full {
        1.0
    } else {
        0.0
    };
    let backward = if s.mode == Mode::Full { 4.0 } else { 2.0 };
    (2.0 * (1.0 + recompute) + backward, recompute)
}

/// Seconds of one micro-batch's compute on one GPU of the heaviest stage.
fn micro_batch_compute(
    s: &Scenario,
    c: &Cluster,
    l: &Layout,
    sh: &Shape,
    b: u64,
    st: &FitSettings,
) -> f64 {
    let a: &Accelerator = c.acc;
    let tp = l.tp as f64;
    let pp = l.pp as f64;
    let t = (b * s.context.max(1)) as f64;
    let seq = s.context.max(1) as f64;
    let (p, recompute) = passes(s);
    let matmul = (sh.body / pp + sh.head) / tp;
    let peak = a.fp16_tflops.max(0.01) * 1e12;
    // FP8 training (torchao float8, Transformer Engine) runs the linear layers' GEMMs on the FP8
    // tensor cores; attention and the rest stay in BF16.
    let gemm_peak = match s.weights {
        WeightPrecision::Fp8 | WeightPrecision::Fp8Block => {
            a.int8_tops.filter(|x| *x > 0.0).map_or(peak, |x| x * 1e12)
        }
        _ => peak,
    };
    let gemm = p * matmul * t / (gemm_peak * gemm_efficiency(a));
    let layers = (sh.layers / pp).ceil();
    let attn_fwd = 2.0 * seq * sh.d_attn * layers / tp * t;
    let bw = a.bandwidth.0 * 1e9 * st.speed.profiles.transformers.bandwidth_efficiency;
    let elem_passes = ELEMENTWISE_PASSES + recompute;
    // Without FlashAttention the scores, their softmax and its dropout mask are materialised:
    // 5 · heads · seq² bytes per sequence and layer (Korthikanti et al. 2022, eq. 1), through
    // memory like the rest, and the two attention matmuls run as batched GEMMs over the full
    // (unmasked) square.
    let (attn, scores) = if s.flash_attention {
        (
            attn_fwd * (1.0 + recompute + 2.5) / (peak * attention_efficiency(a)),
            0.0,
        )
    } else {
        (
            2.0 * attn_fwd * (1.0 + recompute + 2.0) / (peak * gemm_efficiency(a)),
            5.0 * sh.heads * seq * t * layers / tp,
        )
    };
    let loss = LOSS_BYTES_PER_LOGIT * s.model.vocab as f64 * t / tp;
    let elem = ((ACTIVATION_BYTES_PER_TOKEN_HIDDEN * t * sh.hidden * layers / tp + scores)
        * elem_passes
        + fp8_cast_bytes(s, a, t, layers / tp, recompute)
        + loss)
        / bw.max(1.0);
    // QLoRA dequantises each 4-bit base weight to BF16 for every GEMM pass.
    let dequant = if s.mode == Mode::Qlora {
        (p / 2.0) * matmul * 2.5 / bw.max(1.0)
    } else {
        0.0
    };
    let launches =
        KERNELS_PER_LAYER_FORWARD * (1.0 + recompute + 2.0) * layers * KERNEL_GAP_US * 1e-6;
    gemm + attn + elem + dequant + launches
}

/// Bytes FP8 training moves to cast the activation operands of its GEMMs, for `t` tokens
/// through `layers` layers (already ÷ TP): each linear layer's input forward and its output
/// gradient backward are read for their absolute maximum, read again and written as FP8
/// ([`FP8_CAST_BYTES`] per element). Per token and layer the operands are the attention input
/// (hidden), the attention output (heads × head_dim), the MLP input (hidden) and the MLP's inner
/// activation (ffn) forward; the gradients of Q, K, V, the attention output, the up (and gate)
/// projection and the MLP output backward — the fused projections of Megatron-Core and
/// Transformer Engine (a framework that casts one input per separate linear casts more). Full
/// recomputation casts the forward operands again. 0 outside FP8 training.
fn fp8_cast_bytes(s: &Scenario, a: &Accelerator, t: f64, layers: f64, recompute: f64) -> f64 {
    let fp8 = matches!(s.weights, WeightPrecision::Fp8 | WeightPrecision::Fp8Block)
        && a.int8_tops.is_some_and(|x| x > 0.0);
    if !fp8 {
        return 0.0;
    }
    let m = &s.model;
    let (h, d, kv, ffn) = (
        m.hidden as f64,
        (m.heads * m.head_dim) as f64,
        (m.kv_heads.max(1) * m.head_dim) as f64,
        m.intermediate as f64,
    );
    let up = if m.mlp == MlpKind::Gated { 2.0 } else { 1.0 };
    let forward = h + d + h + ffn;
    let backward = (d + 2.0 * kv) + h + up * ffn + h;
    FP8_CAST_BYTES * (forward * (1.0 + recompute) + backward) * t * layers
}

/// One step's time of micro-batches `(b sequences, m of them)`; `offloaded`: ZeRO-Offload
/// keeps the optimizer states in host RAM and steps them with CPU Adam.
fn step_time(
    s: &Scenario,
    c: &Cluster,
    l: &Layout,
    sh: &Shape,
    (b, m): (u64, u64),
    offloaded: bool,
    st: &FitSettings,
) -> StepTime {
    let t = (b * s.context.max(1)) as f64;
    let (_, recompute) = passes(s);
    let layers = (sh.layers / l.pp as f64).ceil();
    let compute_mb = micro_batch_compute(s, c, l, sh, b, st);
    // Tensor parallel inside the node.
    let tp_mb = if l.tp > 1 {
        (4.0 + 2.0 * recompute)
            * layers
            * time(Collective::AllReduce, t * sh.hidden * 2.0, l.tp, c.intra())
    } else {
        0.0
    };
    // Pipeline sends: across nodes when the stages span them.
    let stage_link = if c.nodes > 1 {
        c.inter(l.tp)
    } else {
        c.intra()
    };
    let send_mb = if l.pp > 1 {
        2.0 * stage_link.send(t * sh.hidden * 2.0)
    } else {
        0.0
    };
    let (gather_mb, dp_step, param_gather) = data_parallel(c, l, sh, compute_mb);
    let ep_mb = all_to_all_time(c, l, sh, t, recompute);
    let slot = compute_mb + tp_mb + send_mb + gather_mb + ep_mb;
    let slots = (m + l.pp - 1) as f64;
    let dp_exposed =
        dp_step_exposed(l, dp_step, param_gather, compute_mb) + dp_step / sh.layers.max(1.0);
    // Sharded optimizer states: the experts' over DP ÷ EP ranks, the same share per GPU.
    let updated = sh.trainable * stage_share(sh, l.pp)
        / l.tp as f64
        / if l.sharding.zero_stage() >= 1 {
            l.dp as f64
        } else {
            1.0 / expert_factor(sh, l)
        };
    let bw = c.acc.bandwidth.0 * 1e9 * st.speed.profiles.transformers.bandwidth_efficiency;
    let optimizer = if offloaded {
        // ZeRO-Offload: CPU Adam reads and writes ~16 B per parameter of host memory for the
        // partitions of every GPU of the node (one RAM for all of them), and each GPU's
        // gradients go down and its updated BF16 parameters come back over its own PCIe link
        // (2 + 2 B per parameter; Ren et al. 2021, "ZeRO-Offload", §4).
        let ram = c.machine.ram_bandwidth.bytes_per_sec() * st.speed.cpu_bandwidth_efficiency;
        let link = host_link(c.acc).bytes_per_sec() * st.speed.pcie_efficiency;
        updated * c.gpus_per_node as f64 * 16.0 / ram.max(1.0) + updated * 4.0 / link.max(1.0)
    } else {
        updated * optimizer_bytes_per_param(s.optimizer) / bw.max(1.0)
    };
    StepTime {
        compute: compute_mb * m as f64,
        tensor_parallel: tp_mb * m as f64,
        pipeline: send_mb * m as f64 + (slots - m as f64) * slot,
        data_parallel: gather_mb * m as f64 + if dp_step > 0.0 { dp_exposed } else { 0.0 },
        optimizer,
        expert_parallel: ep_mb * m as f64,
    }
}

/// Bytes one GPU dispatches per MoE layer and pass for `t` tokens of its micro-batch: its
/// `t ÷ tp` tokens (sequence parallel) × top-k × hidden in BF16 (Megatron-Core's MoE README,
/// `megatron/core/transformer/moe/README.md`, the `alltoall` token dispatcher; DeepSpeed-MoE,
/// arXiv 2201.05596, §5.2), and the all-to-alls per MoE layer: dispatch and combine forward,
/// both again backward (their gradients), and the forward's again under full recomputation.
fn all_to_all_payload(l: &Layout, sh: &Shape, t: f64, recompute: f64) -> (f64, f64) {
    let bytes = t / l.tp.max(1) as f64 * sh.top_k * sh.hidden * 2.0;
    (bytes, 4.0 + 2.0 * recompute)
}

/// Seconds of expert-parallel all-to-all per micro-batch on one GPU of the heaviest stage:
/// [`all_to_all_payload`] per MoE layer of the stage, of which `(ep − 1) ÷ ep` leaves the GPU.
/// The EP group is `ep` consecutive ranks (Megatron-Core's expert rank order `tp-ep-dp-pp`
/// with ETP 1): the part to ranks in the same node runs on the fabric, the part to other nodes
/// on the GPU's share of the node's network (every GPU of the node sends at once), the two
/// concurrently; one link latency per all-to-all. Exposed: Megatron-Core runs the dispatch
/// between the router and the expert GEMMs. 0 without expert parallelism.
fn all_to_all_time(c: &Cluster, l: &Layout, sh: &Shape, t: f64, recompute: f64) -> f64 {
    if l.ep <= 1 || sh.moe_layers <= 0.0 {
        return 0.0;
    }
    let (bytes, passes) = all_to_all_payload(l, sh, t, recompute);
    let ep = l.ep as f64;
    let in_node = c.gpus_per_node.clamp(1, l.ep);
    let (near, far) = (in_node as f64 - 1.0, (l.ep - in_node) as f64);
    let intra = c.intra();
    let inter = c.inter(1);
    let latency = if far > 0.0 {
        inter.latency_s
    } else {
        intra.latency_s
    };
    let one = (bytes * near / ep / intra.bytes_per_s.max(1.0))
        .max(bytes * far / ep / inter.bytes_per_s.max(1.0))
        + latency;
    passes * (sh.moe_layers / l.pp as f64).ceil() * one
}

/// The part of the once-a-step data-parallel communication `dp_step` (of which `param_gather`
/// is ZeRO-1/2's all-gather of the updated parameters) that no compute hides, seconds. The
/// gradient reduction hides behind the last micro-batch's backward (⅔ of its compute; PyTorch
/// DDP buckets, DeepSpeed `overlap_comm`). Tensor- and pipeline-parallel layouts run on
/// Megatron-LM (`io::export::launch_cluster` launches them with `--use-distributed-optimizer
/// --overlap-grad-reduce --overlap-param-gather`), whose distributed optimizer gathers each
/// bucket of updated parameters while the next step's first forward pass runs (⅓ of a
/// micro-batch's compute; Megatron-LM `megatron/core/distributed/distributed_data_parallel.py`,
/// `overlap_param_gather`); DeepSpeed gathers them after the optimizer step, in the reduction's
/// window.
fn dp_step_exposed(l: &Layout, dp_step: f64, param_gather: f64, compute_mb: f64) -> f64 {
    let megatron = l.tp > 1 || l.pp > 1 || l.ep > 1;
    if megatron && param_gather > 0.0 {
        (dp_step - param_gather - compute_mb * 2.0 / 3.0).max(0.0)
            + (param_gather - compute_mb / 3.0).max(0.0)
    } else {
        (dp_step - compute_mb * 2.0 / 3.0).max(0.0)
    }
}

/// Data-parallel communication: (exposed ZeRO-3/FSDP gather time per micro-batch, gradient
/// reduction per step, the ZeRO-1/2 parameter all-gather within it), seconds.
fn data_parallel(c: &Cluster, l: &Layout, sh: &Shape, compute_mb: f64) -> (f64, f64, f64) {
    if l.dp <= 1 {
        return (0.0, 0.0, 0.0);
    }
    // Expert parallelism: each GPU reduces its own experts' gradients (over the DP ÷ EP ranks
    // holding the same experts) and the dense part's.
    let share = stage_share(sh, l.pp) / l.tp as f64 * expert_factor(sh, l);
    let params = sh.total * share;
    let grads = sh.trainable * share;
    // Ranks of one data-parallel group inside one node.
    let per_node = (c.gpus_per_node / (l.tp * l.pp).min(c.gpus_per_node)).clamp(1, l.dp);
    let spans = l.dp > per_node;
    let dp_link = if spans { c.inter(per_node) } else { c.intra() };
    let grad_bytes = grads * GRAD_REDUCE_BYTES;
    match l.sharding {
        Sharding::None => (
            0.0,
            time(Collective::AllReduce, grad_bytes, l.dp, dp_link),
            0.0,
        ),
        Sharding::Zero1 | Sharding::Zero2 => {
            let gather = time(
                Collective::AllGather,
                grads * PARAM_GATHER_BYTES,
                l.dp,
                dp_link,
            );
            (
                0.0,
                time(Collective::ReduceScatter, grad_bytes, l.dp, dp_link) + gather,
                gather,
            )
        }
        Sharding::Zero3 | Sharding::Fsdp => {
            let gathers = 2.0
                * time(
                    Collective::AllGather,
                    params * PARAM_GATHER_BYTES,
                    l.dp,
                    dp_link,
                );
            let rs = time(Collective::ReduceScatter, grad_bytes, l.dp, dp_link);
            if l.pp > 1 {
                // Under pipeline parallelism the parameters stay gathered across the
                // micro-batches (torchtitan sets `reshard_after_forward = False` with PP; Llama 3
                // paper §3.3.2): one gather and one reduce-scatter per step.
                return (0.0, gathers / 2.0 + rs, 0.0);
            }
            let comm = gathers + rs;
            (
                (comm - compute_mb).max(0.0) + comm / sh.layers.max(1.0),
                0.0,
                0.0,
            )
        }
        Sharding::Hsdp => {
            let n = per_node.min(l.dp);
            let intra = c.intra();
            let gathers = 2.0 * time(Collective::AllGather, params * PARAM_GATHER_BYTES, n, intra);
            let rs = time(Collective::ReduceScatter, grad_bytes, n, intra);
            let comm = gathers + rs;
            let replicas = l.dp.div_ceil(n);
            (
                (comm - compute_mb).max(0.0) + comm / sh.layers.max(1.0),
                time(
                    Collective::AllReduce,
                    grad_bytes / n as f64,
                    replicas,
                    c.inter(n),
                ),
                0.0,
            )
        }
    }
}

/// Bytes one GPU sends per step over all its collectives and pipeline links.
fn comm_bytes(s: &Scenario, l: &Layout, sh: &Shape, b: u64, m: u64) -> f64 {
    let t = (b * s.context.max(1)) as f64;
    let (_, recompute) = passes(s);
    let layers = (sh.layers / l.pp as f64).ceil();
    let ring = |n: u64, f: f64| {
        if n > 1 {
            f * (n - 1) as f64 / n as f64
        } else {
            0.0
        }
    };
    let tp = (4.0 + 2.0 * recompute) * layers * ring(l.tp, 2.0) * t * sh.hidden * 2.0;
    let pp = if l.pp > 1 {
        2.0 * t * sh.hidden * 2.0
    } else {
        0.0
    };
    let (a2a, a2a_passes) = all_to_all_payload(l, sh, t, recompute);
    let ep = if sh.moe_layers > 0.0 {
        a2a_passes * (sh.moe_layers / l.pp as f64).ceil() * ring(l.ep, a2a)
    } else {
        0.0
    };
    let share = stage_share(sh, l.pp) / l.tp as f64 * expert_factor(sh, l);
    let dp_step = match l.sharding {
        Sharding::None => ring(l.dp, 2.0) * sh.trainable * share * GRAD_REDUCE_BYTES,
        Sharding::Zero1 | Sharding::Zero2 => {
            ring(l.dp, 1.0) * sh.trainable * share * (GRAD_REDUCE_BYTES + PARAM_GATHER_BYTES)
        }
        Sharding::Zero3 | Sharding::Fsdp | Sharding::Hsdp => {
            m as f64
                * ring(l.dp, 1.0)
                * (2.0 * sh.total * share * PARAM_GATHER_BYTES
                    + sh.trainable * share * GRAD_REDUCE_BYTES)
        }
    };
    (tp + pp + ep) * m as f64 + dp_step
}

/// Activation checkpointing the planner may use for `asked`: the asked one first, then the
/// stronger ones (selective, then full recomputation), as Megatron-LM's `--recompute-*` and
/// torchtitan's `activation_checkpoint.mode` offer: a layout that only fits by recomputing runs
/// that way instead of needing more nodes.
fn checkpointing_options(asked: Checkpointing) -> impl Iterator<Item = Checkpointing> {
    Checkpointing::ALL
        .into_iter()
        .filter(move |c| recompute_rank(*c) >= recompute_rank(asked))
}

fn recompute_rank(c: Checkpointing) -> u8 {
    match c {
        Checkpointing::None => 0,
        Checkpointing::Selective => 1,
        Checkpointing::Full => 2,
    }
}

/// The best layout of `s` on `c`: among those that fit, the most tokens per second, with the
/// scenario's activation checkpointing or a stronger one ([`checkpointing_options`]); `None`
/// when none fits.
pub fn best_layout(
    s: &Scenario,
    c: &Cluster,
    inputs: &ClusterInputs,
    st: &FitSettings,
) -> Option<TrainPlan> {
    // Layouts share estimates: one per (checkpointing, shard group, stage, framework).
    let mut memo: Vec<((u8, u64, u8, Framework), Estimate)> = Vec::new();
    let mut best: Option<TrainPlan> = None;
    for ck in checkpointing_options(s.checkpointing) {
        let sc = Scenario {
            checkpointing: ck,
            ..s.clone()
        };
        for l in layouts(&sc, c, inputs) {
            let es = shard_scenario(&sc, c, &l);
            let key = (recompute_rank(ck), es.gpus, es.zero, es.framework);
            let i = match memo.iter().position(|(k, _)| *k == key) {
                Some(i) => i,
                None => {
                    memo.push((key, estimate_with(&es, false)));
                    memo.len() - 1
                }
            };
            let p = plan_with(&sc, c, l, inputs, st, &memo[i].1);
            if p.fits
                && best
                    .as_ref()
                    .is_none_or(|b| p.tokens_per_s > b.tokens_per_s)
            {
                best = Some(p);
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::catalog::{MemoryKind, Segment, Vendor};
    use crate::core::model::ModelSpec;

    /// Llama 3.1 8B's layer (hidden 4,096, 32 heads and 8 KV heads of 128, SwiGLU ffn 14,336)
    /// in FP8: per token, forward operands 4,096 (attention input), 4,096 (attention output),
    /// 4,096 (MLP input) and 14,336 (MLP inner): 26,624; backward gradients 4,096 + 2 × 1,024
    /// (QKV), 4,096 (output projection), 2 × 14,336 (gate and up) and 4,096 (down): 43,008;
    /// 69,632 elements × 5 B = 348,160 B per token and layer. Full recomputation casts the
    /// forward operands again: 26,624 × 5 = 133,120 B more. BF16 training casts nothing.
    #[test]
    fn fp8_casts_by_hand() {
        let mut s = Scenario {
            model: ModelSpec {
                hidden: 4096,
                heads: 32,
                kv_heads: 8,
                head_dim: 128,
                intermediate: 14336,
                mlp: MlpKind::Gated,
                ..ModelSpec::default()
            },
            weights: WeightPrecision::Fp8,
            ..Scenario::default()
        };
        let a = Accelerator {
            int8_tops: Some(1979.0),
            ..Accelerator::new(
                "h",
                "H",
                Vendor::Nvidia,
                Segment::Datacenter,
                MemoryKind::Discrete,
            )
        };
        assert_eq!(fp8_cast_bytes(&s, &a, 1.0, 1.0, 0.0), 348_160.0);
        assert_eq!(fp8_cast_bytes(&s, &a, 1.0, 1.0, 1.0), 348_160.0 + 133_120.0);
        assert_eq!(fp8_cast_bytes(&s, &a, 10.0, 2.0, 0.0), 20.0 * 348_160.0);
        s.weights = WeightPrecision::Bf16;
        assert_eq!(fp8_cast_bytes(&s, &a, 1.0, 1.0, 0.0), 0.0);
    }

    /// A step's reduction of 1.0 s of which 0.4 s is the ZeRO-1 parameter all-gather, behind a
    /// micro-batch of 0.6 s: DeepSpeed hides 0.4 s (⅔ of the micro-batch) of the whole, 0.6 s
    /// exposed; Megatron-LM (a TP/PP layout) hides the reduce-scatter's 0.6 s behind 0.4 s of
    /// backward (0.2 s exposed) and the gather's 0.4 s behind the next forward's 0.2 s (0.2 s
    /// exposed): 0.4 s.
    #[test]
    fn megatron_overlaps_the_parameter_gather() {
        let l = |tp: u64| Layout {
            tp,
            pp: 1,
            dp: 8,
            sharding: Sharding::Zero1,
            ep: 1,
        };
        assert!((dp_step_exposed(&l(1), 1.0, 0.4, 0.6) - 0.6).abs() < 1e-12);
        assert!((dp_step_exposed(&l(2), 1.0, 0.4, 0.6) - 0.4).abs() < 1e-12);
        // Nothing to overlap: no exposure.
        assert_eq!(dp_step_exposed(&l(2), 0.3, 0.1, 0.6), 0.0);
    }
}
