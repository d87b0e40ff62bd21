//! Each engine's scheduler settings on a machine: the defaults the engine picks for that GPU, or
//! what the user fixed. The sources are the engines' own argument handling.

use super::inputs::{Engine, ServingInputs};
use crate::core::catalog::{Accelerator, MemoryKind, Vendor};
use crate::core::scenario::{Runtime, Scenario};
use crate::core::units::Bytes;
use serde::{Deserialize, Serialize};

/// vLLM's KV block size (`--block-size` default 16; vllm/config/cache.py `CacheConfig`).
pub const VLLM_BLOCK_TOKENS: u64 = 16;
/// GPUs with at least this much memory, A100s excepted, get vLLM's larger scheduler defaults
/// (vllm/engine/arg_utils.py, `EngineArgs.get_batch_defaults`: `device_memory >= 70 GiB` and no
/// "a100" in the device name; the comment there cites vLLM PR 17885, large budgets hurt A100).
const VLLM_LARGE_GPU: Bytes = Bytes::gib(70);

/// Whether vLLM gives `acc` its large-GPU defaults.
fn vllm_large(acc: &Accelerator) -> bool {
    acc.memory >= VLLM_LARGE_GPU && !acc.id.to_ascii_lowercase().contains("a100")
}

/// The resolved settings of one engine on one machine.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EngineSettings {
    pub engine: Engine,
    /// Most sequences scheduled at once (vLLM `max_num_seqs`, SGLang `max_running_requests`,
    /// llama-server `--parallel`, transformers: the static batch).
    pub max_num_seqs: u64,
    /// Tokens one scheduler step may process (vLLM `max_num_batched_tokens`, SGLang
    /// `chunked_prefill_size`, llama-server `-b`); transformers prefills a whole batch at once.
    pub max_num_batched_tokens: u64,
    /// KV allocation granularity in tokens (vLLM blocks; SGLang and llama.cpp cells: 1).
    pub block_tokens: u64,
    pub prefix_caching: bool,
    /// Whether the user set `max_num_seqs` (else the plan may choose it, e.g. llama-server's slots).
    pub seqs_fixed: bool,
}

/// The engine that serves the scenario on accelerator `acc` (`None`: CPU).
pub fn resolve_engine(s: &Scenario, inputs: &ServingInputs, acc: Option<&Accelerator>) -> Engine {
    let cuda_like = acc.is_some_and(|a| {
        matches!(
            (a.vendor, a.memory_kind),
            (Vendor::Nvidia, _) | (Vendor::Amd, MemoryKind::Discrete)
        )
    });
    let wanted = match inputs.engine {
        Engine::Auto => match s.runtime {
            Runtime::Vllm => Engine::Vllm,
            Runtime::Transformers => Engine::Transformers,
            // No MLX serving engine is modelled: llama-server is the Apple engine the plans use.
            Runtime::LlamaCpp | Runtime::Mlx => Engine::LlamaServer,
            Runtime::Generic if cuda_like => Engine::Vllm,
            Runtime::Generic => Engine::LlamaServer,
        },
        e => e,
    };
    // vLLM, SGLang and transformers need CUDA or ROCm; elsewhere llama.cpp serves.
    match wanted {
        Engine::Vllm | Engine::Sglang | Engine::Transformers if !cuda_like => Engine::LlamaServer,
        e => e,
    }
}

/// The settings `engine` runs with on GPU `acc`.
pub fn settings(engine: Engine, inputs: &ServingInputs, acc: &Accelerator) -> EngineSettings {
    let large = vllm_large(acc);
    // SGLang sizes its chunk by memory alone (python/sglang/srt/server_args.py: < 35 GiB 2048,
    // < 160 GiB 8192, else 16384).
    let sglang_chunk = match acc.memory {
        m if m < Bytes::gib(35) => 2048,
        m if m < Bytes::gib(160) => 8192,
        _ => 16384,
    };
    let (seqs, tokens, block, cache) = match engine {
        // `vllm serve` (OPENAI_API_SERVER usage context): max_num_seqs 1024 and
        // max_num_batched_tokens 8192 on ≥ 70 GiB GPUs, else 256 and 2048
        // (vllm/engine/arg_utils.py, `_set_default_args`); prefix caching on by default in V1.
        Engine::Vllm | Engine::Auto => (
            if large { 1024 } else { 256 },
            if large { 8192 } else { 2048 },
            VLLM_BLOCK_TOKENS,
            true,
        ),
        // SGLang: max_running_requests is bounded by the token pool (see pool.rs);
        // RadixAttention on.
        Engine::Sglang => (4096, sglang_chunk, 1, true),
        // llama-server: -b 2048 logical batch (common/common.h `n_batch`), slots chosen by the
        // plan, prompt cache per slot (`cache_prompt` true) but no cross-slot prefix sharing.
        Engine::LlamaServer => (256, 2048, 1, false),
        // generate(): the whole static batch's prompts in one forward pass.
        Engine::Transformers => (64, u64::MAX, 1, false),
    };
    EngineSettings {
        engine,
        max_num_seqs: inputs.max_num_seqs.unwrap_or(seqs),
        max_num_batched_tokens: inputs.max_num_batched_tokens.unwrap_or(tokens),
        block_tokens: block,
        prefix_caching: inputs.prefix_caching.unwrap_or(cache),
        seqs_fixed: inputs.max_num_seqs.is_some(),
    }
}
