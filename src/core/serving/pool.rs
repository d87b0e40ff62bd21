//! The KV pool: how many tokens of KV cache an engine can hold once the weights, the
//! activations of its largest step and its runtime are placed, and so how many requests of a
//! given length run at once.
//!
//! - vLLM (V1): `gpu_memory_utilization × GPU memory − weights − peak activations of the
//!   profiling run − non-torch memory` (vllm/v1/worker/gpu_worker.py,
//!   `Worker.determine_available_memory`), cut into blocks of 16 tokens × every layer's K and V
//!   (vllm/v1/core/kv_cache_utils.py, `get_num_blocks`). The profiling run is one forward pass of
//!   `max_num_batched_tokens` tokens and a sampler pass over `max_num_seqs` rows
//!   (vllm/v1/worker/gpu_model_runner.py, `profile_run`, `_dummy_sampler_run`).
//! - SGLang: `mem_fraction_static × GPU memory − weights` (python/sglang/srt/model_executor/
//!   model_runner.py, `profile_max_num_token`); activations live in the rest.
//! - llama-server: the `-c` that fits beside the weights and the compute buffers, shared by the
//!   `--parallel` slots (tools/server/server.cpp: each slot gets `n_ctx / n_parallel`).
//! - transformers: static batches of contiguous caches in what is left beside the weights.

use super::engine::EngineSettings;
use super::inputs::Engine;
use crate::core::estimate::{ComponentKind, Estimate};
use crate::core::model::ModelSpec;
use crate::core::speed::step::StepModel;
use crate::core::units::Bytes;
use serde::{Deserialize, Serialize};

/// Memory the CUDA runtime holds outside PyTorch's tensors (CUDA context, cuBLAS workspaces):
/// vLLM's profiling log reads `non_torch_memory=0.35GiB` on one RTX 3090 (vllm-project/vllm#10517).
/// With tensor parallelism NCCL's buffers and vLLM's custom all-reduce IPC buffers add to it
/// (heuristic: 1 GiB per GPU).
const NON_TORCH_ONE_GPU: Bytes = Bytes::mib(358);
const NON_TORCH_TP: Bytes = Bytes::gib(1);
/// What `cudaMemGetInfo` reports as total is ~1 % below the nominal size: 79.19 GiB of an 80 GB
/// H100, 79.15 GiB of an A100 80 GB (vLLM's start-up logs); vLLM's budget is that total ×
/// `gpu_memory_utilization`.
const CUDA_VISIBLE: f64 = 0.99;
/// The sampler pass of the profiling run keeps ~9.6 vocabulary-wide 4-byte rows per scheduled
/// sequence alive at its peak (FP32 logits, their softmax and log-softmax, the top-k/top-p sort's
/// values and int64 indices, the random draws; vllm/v1/sample/sampler.py): vLLM's profiling on an
/// H100 with `max_num_seqs` 1024 logs activation peaks of 4.76 GiB for Llama-3.1-8B (vocabulary
/// 128,256), 5.56 GiB for Qwen3-0.6B (151,936) and 7.38 GiB for gpt-oss (201,088) — 9.7, 9.6
/// and 9.6 rows. Counted in tenths.
const SAMPLER_ROW_TENTHS: u64 = 96;

/// SGLang's default `mem_fraction_static` by tensor-parallel size (python/sglang/srt/
/// server_args.py, `ServerArgs.__post_init__`: 0.88 on one GPU, 0.87 at TP 2, 0.85 at TP 4,
/// 0.81 at TP 8).
pub fn sglang_mem_fraction(tp: u64) -> f64 {
    match tp {
        0 | 1 => 0.88,
        2 | 3 => 0.87,
        4..=7 => 0.85,
        _ => 0.81,
    }
}

/// The pool of one replica.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KvPool {
    /// Memory per GPU the engine may use.
    pub budget_per_gpu: Bytes,
    /// Weights per GPU.
    pub weights_per_gpu: Bytes,
    /// Activations of the largest step (vLLM's profiling peak), per GPU.
    pub activations_per_gpu: Bytes,
    /// Runtime memory outside the profiled tensors, per GPU.
    pub runtime_per_gpu: Bytes,
    /// KV bytes per GPU.
    pub kv_per_gpu: Bytes,
    /// Tokens of KV the pool holds (vLLM: blocks × 16).
    pub tokens: u64,
    /// vLLM's "# GPU blocks" (tokens ÷ block size for the cell-based engines).
    pub blocks: u64,
    pub block_tokens: u64,
}

impl KvPool {
    /// Requests of `len` tokens that fit at once (each rounded up to whole blocks).
    pub fn sequences_at(&self, model: &StepModel, len: u64) -> u64 {
        let len = len.div_ceil(self.block_tokens.max(1)) * self.block_tokens.max(1);
        let per = model.kv_seq_bytes(len as f64);
        if per <= 0.0 {
            return 0;
        }
        (self.kv_per_gpu.as_f64() / per).floor() as u64
    }
}

/// Peak activations of vLLM's profiling run on one GPU: one forward pass of `tokens` tokens
/// (the MLP's gate/up output and its activation alive together, or a fused-MoE's intermediate
/// caches, plus the residual stream), or the sampler over `seqs` rows, whichever is larger.
pub fn vllm_profile_peak(spec: &ModelSpec, tokens: u64, seqs: u64, tp: u64) -> Bytes {
    let tp = tp.max(1);
    let mlp = match &spec.moe {
        Some(m) if m.experts > 0 => {
            let inter = m.expert_ffn.div_ceil(tp);
            tokens
                .saturating_mul(m.active_experts.max(1))
                .saturating_mul(inter.saturating_mul(3).saturating_add(spec.hidden))
        }
        _ => tokens.saturating_mul(spec.intermediate.div_ceil(tp).saturating_mul(3)),
    };
    let residual = tokens.saturating_mul(spec.hidden).saturating_mul(2);
    let forward = Bytes(mlp.saturating_add(residual).saturating_mul(2));
    let sampler = Bytes(
        seqs.saturating_mul(spec.vocab)
            .saturating_mul(4)
            .saturating_mul(SAMPLER_ROW_TENTHS)
            / 10,
    );
    forward.max(sampler)
}

/// The memory a replica's GPUs offer the engine.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct GpuBudget {
    /// Memory of one GPU (layer split: of all of them).
    pub memory: Bytes,
    /// What the fit found usable per GPU for the runtime (e.g. the Metal working set).
    pub usable: Bytes,
    pub tp: u64,
    /// vLLM `--gpu-memory-utilization`.
    pub vllm_utilization: f64,
    /// SGLang `--mem-fraction-static` (`None`: its default).
    pub sglang_fraction: Option<f64>,
    /// Share of the estimate's weights per GPU one GPU holds (1; pipeline parallel: its
    /// stage's).
    pub weight_share: f64,
}

/// The pool `set.engine` builds on `gpu`, with `est` the estimate at this tensor-parallel size.
pub fn pool(
    set: &EngineSettings,
    spec: &ModelSpec,
    est: &Estimate,
    model: &StepModel,
    gpu: GpuBudget,
) -> KvPool {
    let GpuBudget {
        memory,
        usable,
        tp,
        vllm_utilization,
        sglang_fraction,
        weight_share,
    } = gpu;
    let weights = est
        .per_gpu_kind(ComponentKind::Weights)
        .scale(weight_share.clamp(0.0, 1.0));
    let (budget, activations, runtime) = match set.engine {
        Engine::Vllm | Engine::Auto => (
            memory.scale(CUDA_VISIBLE * vllm_utilization),
            vllm_profile_peak(spec, set.max_num_batched_tokens, set.max_num_seqs, tp),
            if tp > 1 {
                NON_TORCH_TP
            } else {
                NON_TORCH_ONE_GPU
            },
        ),
        // SGLang measures the free memory after loading the weights, so the CUDA context and
        // NCCL buffers come out of the fraction too.
        Engine::Sglang => (
            memory.scale(CUDA_VISIBLE * sglang_fraction.unwrap_or_else(|| sglang_mem_fraction(tp))),
            Bytes::ZERO,
            if tp > 1 {
                NON_TORCH_TP
            } else {
                NON_TORCH_ONE_GPU
            },
        ),
        // llama.cpp and transformers: what the estimate puts beside weights and KV.
        Engine::LlamaServer | Engine::Transformers => (
            usable,
            est.per_gpu_kind(ComponentKind::Activations),
            est.per_gpu_kind(ComponentKind::Overhead),
        ),
    };
    let kv = budget
        .saturating_sub(weights)
        .saturating_sub(activations)
        .saturating_sub(runtime);
    let block = set.block_tokens.max(1);
    let per_block = model.kv_seq_bytes(block as f64).max(1.0);
    let blocks = (kv.as_f64() / per_block).floor() as u64;
    KvPool {
        budget_per_gpu: budget,
        weights_per_gpu: weights,
        activations_per_gpu: activations,
        runtime_per_gpu: runtime,
        kv_per_gpu: kv,
        tokens: blocks.saturating_mul(block),
        blocks,
        block_tokens: block,
    }
}
