//! KV cache of inference: `2 × L × n_kv × d × bytes` per token (vLLM paper, Kwon et al. 2023,
//! §2.2; MLA: DeepSeek-V2 paper §2.1.2, cache `d_c + d_h^R` per token per layer), sized the way
//! each runtime allocates it: llama.cpp pads the context, PagedAttention rounds to 16-token
//! blocks, sliding-window layers keep only their window.
//!
//! Hybrid and state-space models (see [`crate::core::model::RecurrentSpec`]): only the
//! full-attention layers cache K and V; each recurrent layer keeps a fixed conv + SSM state per
//! sequence instead (llama.cpp `llama_memory_recurrent`, F32), whatever the context. That state
//! is part of this component: `recurrent layers × state bytes per layer × sequences`.

use super::component::{ComponentKind, ComponentList, Provenance};
use super::{Job, formula, gib, scale_by_ratio};
use crate::core::format::group_digits;
use crate::core::precision::KvPrecision;
use crate::core::scenario::{KvAllocation, Runtime};
use crate::core::units::Bytes;

/// llama.cpp pads n_ctx to a multiple of 256 (src/llama-context.cpp, `llama_context`
/// constructor: `GGML_PAD(cparams.n_ctx, 256)`).
const LLAMA_CPP_CTX_PAD: u64 = 256;
/// PagedAttention's block size (vLLM `--block-size` default, Kwon et al. 2023 §4.1).
const PAGED_BLOCK_TOKENS: u64 = 16;

/// Cells of llama.cpp's sliding-window cache with the default `swa_full = false`:
/// `GGML_PAD(min(n_ctx, n_swa · n_seq + n_ubatch), 256)` (src/llama-kv-cache-iswa.cpp,
/// `llama_kv_cache_iswa` constructor, unified cache), where `n_ctx` is the padded context of all
/// sequences together.
fn llama_cpp_swa_cells(window: u64, ctx_per_seq: u64, seqs: u64, ubatch: u64) -> u64 {
    let n_ctx = ctx_per_seq.saturating_mul(seqs);
    let wanted = window.saturating_mul(seqs).saturating_add(ubatch);
    n_ctx
        .min(wanted)
        .div_ceil(LLAMA_CPP_SWA_PAD)
        .saturating_mul(LLAMA_CPP_SWA_PAD)
}

/// The SWA cache is always padded to 256 cells (src/llama-kv-cache-iswa.cpp;
/// ggml-org/llama.cpp#17037).
const LLAMA_CPP_SWA_PAD: u64 = 256;

/// The KV numbers the speed and fit engines need.
pub(super) struct KvSums {
    /// KV bytes per token of one sequence, all layers.
    pub(super) per_token: Bytes,
    /// KV bytes of the whole job (all sequences), before tensor-parallel replication.
    pub(super) total: Bytes,
    /// KV bytes read per decode step per sequence at full context.
    pub(super) read_per_token: Bytes,
}

/// Place the KV cache (inference only; training keeps no cache).
pub(super) fn place(job: &Job, list: &mut ComponentList, notes: &mut Vec<String>) -> KvSums {
    let (s, spec, n) = (job.s, job.spec, job.devices);
    let (k_elements, v_elements) = spec.kv_elements_per_token_layer();
    let latent_layer = Bytes(
        s.kv.k
            .bytes_for(k_elements)
            .saturating_add(s.kv.v.bytes_for(v_elements)),
    );
    // DeepSeek Sparse Attention: each layer also caches the indexer's FP8 key of every token.
    let indexer = spec.mla.as_ref().and_then(|m| m.indexer.as_ref());
    let indexer_layer = Bytes(indexer.map_or(0, |i| i.key_bytes_per_token()));
    let per_token_layer = latent_layer.saturating_add(indexer_layer);
    // Layers with a cache of their own: Gemma 3n's KV-shared layers read an earlier layer's.
    let (cache_layers, _) = spec.kv_cache_layers();
    let attn_layers = spec.attention_layer_count();
    let per_token = per_token_layer.saturating_mul(cache_layers);
    // Training keeps no cache; an embedding pass keeps one only under llama.cpp for a decoder.
    if job.training || (s.mode.is_embed() && !crate::core::embed::keeps_kv_cache(s)) {
        return KvSums {
            per_token,
            total: Bytes::ZERO,
            read_per_token: Bytes::ZERO,
        };
    }
    let ctx = s.context;
    let (alloc_ctx, pad_note) = allocated_context(job);
    let w = sliding_window(job, alloc_ctx);
    let global = cache_layers.saturating_sub(w.local);
    // Every attention layer reads a cache at decode, its own or the one it shares.
    let read_local = w.local_readers;
    let read_global = attn_layers.saturating_sub(read_local);
    let state_per_seq = Bytes(spec.recurrent_state_bytes_per_sequence());
    let state = state_per_seq.saturating_mul(s.batch);
    let kv = per_token_layer
        .saturating_mul(global)
        .saturating_mul(alloc_ctx)
        .saturating_mul(s.batch)
        .saturating_add(
            per_token_layer
                .saturating_mul(w.local)
                .saturating_mul(w.cells),
        );
    let total = kv.saturating_add(state);
    // A decode step reads (and rewrites) each sequence's recurrent state once. With sparse
    // attention the indexer scores every cached key, and attention reads only the top-k tokens'
    // latents (DeepSeek-V3.2 §2.1: O(L·k) core attention).
    let global_read = match indexer {
        Some(ix) => latent_layer
            .saturating_mul(ctx.min(ix.topk.max(1)))
            .saturating_add(indexer_layer.saturating_mul(ctx)),
        None => per_token_layer.saturating_mul(ctx),
    };
    let read_per_token = global_read
        .saturating_mul(read_global)
        .saturating_add(
            per_token_layer
                .saturating_mul(read_local)
                .saturating_mul(w.window.min(ctx)),
        )
        .saturating_add(state_per_seq);
    // Tensor parallel splits KV heads; with fewer KV heads than GPUs they are replicated, and
    // MLA's latent is replicated on every GPU. The recurrent state splits by its heads.
    let per_gpu = if job.cpu_only || n == 1 {
        total
    } else {
        let kv_gpu = if spec.mla.is_some() {
            kv
        } else {
            let per = spec.kv_heads.div_ceil(n).max(1);
            Bytes(scale_by_ratio(kv.0, per, spec.kv_heads.max(1)))
        };
        let heads = spec.recurrent.as_ref().map_or(1, |r| r.heads.max(1));
        let state_gpu = Bytes(scale_by_ratio(state.0, heads.div_ceil(n).max(1), heads));
        kv_gpu.saturating_add(state_gpu)
    };
    let mut text = kv_formula(
        job,
        per_token_layer,
        k_elements,
        (alloc_ctx, pad_note),
        &w,
        kv,
    );
    if spec.recurrent.is_some() {
        text = recurrent_formula(job, text, state_per_seq, total);
    }
    if spec.kv_shared_layers > 0 {
        text = formula!(
            job.explain,
            "{text}; the last {} layers reuse the K/V of earlier layers and cache nothing",
            spec.kv_shared_layers.min(spec.layers)
        );
    }
    let provenance = if spec.is_estimated() {
        Provenance::Heuristic
    } else {
        Provenance::Derived
    };
    list.gpu(
        ComponentKind::KvCache,
        "KV cache",
        per_gpu,
        provenance,
        text,
    );
    allocation_note(
        job,
        per_token_layer.saturating_mul(global),
        alloc_ctx,
        notes,
    );
    if s.runtime == Runtime::Mlx {
        mlx_cache_note(job, w.local > 0, notes);
    }
    KvSums {
        per_token,
        total,
        read_per_token,
    }
}

/// The context each sequence's cache is allocated for, as the runtime rounds it, and the words
/// for the rounding.
fn allocated_context(job: &Job) -> (u64, &'static str) {
    let s = job.s;
    let ctx = s.context;
    match (s.runtime, s.kv_allocation) {
        (Runtime::LlamaCpp, _) => (
            ctx.div_ceil(LLAMA_CPP_CTX_PAD)
                .saturating_mul(LLAMA_CPP_CTX_PAD),
            "n_ctx padded to 256 by llama.cpp",
        ),
        (Runtime::Mlx, _) => (
            crate::core::mlx::kv_cells(ctx),
            "mlx-lm's KVCache grows in steps of 256 tokens",
        ),
        (_, KvAllocation::Paged) => (
            ctx.div_ceil(PAGED_BLOCK_TOKENS)
                .saturating_mul(PAGED_BLOCK_TOKENS),
            "PagedAttention 16-token blocks",
        ),
        _ => (ctx, "contiguous, reserved for the full length"),
    }
}

/// The sliding-window layers as the runtime caches them.
struct Window {
    /// Sliding-window layers with a cache of their own (0: the runtime gives every layer the
    /// full context).
    local: u64,
    /// Sliding-window layers that read a window at decode, KV-shared ones included.
    local_readers: u64,
    /// Their window, tokens.
    window: u64,
    /// Cells one such layer keeps for the whole job (all sequences).
    cells: u64,
}

/// The sliding-window layers of the job's model on its runtime, at an allocated context of
/// `alloc_ctx` tokens per sequence.
fn sliding_window(job: &Job, alloc_ctx: u64) -> Window {
    let (s, spec) = (job.s, job.spec);
    // llama.cpp implements sliding-window caches only for some architectures (Gemma 2/3,
    // gpt-oss, Cohere 2 …); a Mistral-v0.1 GGUF gets the full n_ctx on every layer.
    let swa_runtime = s.runtime != Runtime::LlamaCpp
        || !matches!(
            spec.arch.as_str(),
            "llama" | "mistral" | "qwen2" | "generic"
        );
    let (readers, window) = if swa_runtime {
        spec.local_layers()
    } else {
        (0, 0)
    };
    let local = if readers > 0 {
        spec.kv_cache_layers().1
    } else {
        0
    };
    let cells = if local == 0 {
        0
    } else if s.runtime == Runtime::LlamaCpp {
        llama_cpp_swa_cells(window, alloc_ctx, s.batch, s.ubatch)
    } else if s.runtime == Runtime::Mlx {
        crate::core::mlx::rotating_cells(window, s.context, crate::core::mlx::prefill_step(s))
            .saturating_mul(s.batch)
    } else {
        let t = window.min(alloc_ctx);
        let t = if s.kv_allocation == KvAllocation::Paged {
            t.div_ceil(PAGED_BLOCK_TOKENS)
                .saturating_mul(PAGED_BLOCK_TOKENS)
        } else {
            t
        };
        t.saturating_mul(s.batch)
    };
    Window {
        local,
        local_readers: readers,
        window,
        cells,
    }
}

/// The KV cache's formula: bytes per token and layer, the allocated context (tokens,
/// and the words for their rounding), the sequences and the sliding-window layers.
fn kv_formula(
    job: &Job,
    per_token_layer: Bytes,
    k_elements: u64,
    (alloc_ctx, pad_note): (u64, &str),
    w: &Window,
    total: Bytes,
) -> String {
    let (s, spec, explain) = (job.s, job.spec, job.explain);
    let (local, local_cells) = (w.local, w.cells);
    let kv_name = |p: KvPrecision| p.cli_name();
    let kv_types = if s.kv.k == s.kv.v {
        kv_name(s.kv.k).to_string()
    } else {
        formula!(explain, "K {} / V {}", kv_name(s.kv.k), kv_name(s.kv.v))
    };
    let per_layer_formula = if let Some(ix) = spec.mla.as_ref().and_then(|m| m.indexer.as_ref()) {
        formula!(
            explain,
            "(kv_lora_rank + rope) {k_elements} elements + the sparse-attention indexer's key {} B (FP8 {} + FP32 scales)",
            ix.key_bytes_per_token(),
            ix.head_dim
        )
    } else if spec.mla.is_some() {
        formula!(explain, "(kv_lora_rank + rope) {k_elements} elements")
    } else {
        formula!(
            explain,
            "2 × {} KV heads × {} head_dim",
            spec.kv_heads,
            spec.head_dim
        )
    };
    let window_part = if local == 0 {
        String::new()
    } else if s.runtime == Runtime::LlamaCpp {
        formula!(
            explain,
            " ({local} sliding-window layers hold {} cells for all sequences: min(n_ctx, n_swa × n_seq + n_ubatch) padded to 256)",
            group_digits(local_cells)
        )
    } else if s.runtime == Runtime::Mlx {
        formula!(
            explain,
            " ({local} sliding-window layers hold {} tokens: mlx-lm's RotatingKVCache keeps the window + a prefill step − 1 while a chunk is appended)",
            group_digits(local_cells / s.batch.max(1))
        )
    } else {
        formula!(
            explain,
            " ({local} sliding-window layers hold {} tokens)",
            group_digits(local_cells / s.batch.max(1))
        )
    };
    formula!(
        explain,
        "{per_layer_formula} at {kv_types} = {} B/token/layer × {} layers × {} tokens ({pad_note}) × {}{window_part} = {}",
        group_digits(per_token_layer.0),
        spec.kv_cache_layers().0,
        group_digits(alloc_ctx),
        crate::core::format::count(s.batch, "sequence", "sequences"),
        gib(total)
    )
}

/// The KV formula of a hybrid or state-space model: the attention layers' KV (`kv_text`),
/// then the recurrent layers' fixed state per sequence and the sum.
fn recurrent_formula(job: &Job, kv_text: String, state_per_seq: Bytes, total: Bytes) -> String {
    let (s, spec, explain) = (job.s, job.spec, job.explain);
    let Some(r) = &spec.recurrent else {
        return kv_text;
    };
    let (conv, ssm) = r.state_elements();
    let attn = if spec.attention_layer_count() == 0 {
        "no attention layers, so no K/V".to_string()
    } else {
        formula!(
            explain,
            "{} attention layers: {kv_text}",
            spec.attention_layer_count()
        )
    };
    // Nemotron-H's MLP-only layers have neither a cache nor a state.
    let attn = match spec.mlp_only_layer_count() {
        0 => attn,
        n => format!("{attn} ({n} MLP-only layers cache nothing)"),
    };
    formula!(
        explain,
        "{attn}; + recurrent state (fixed, any context): {} recurrent layers × ({} conv + {} state elements) × 4 B (F32) = {} B/sequence × {} = {}",
        spec.recurrent_layer_count(),
        group_digits(conv),
        group_digits(ssm),
        group_digits(state_per_seq.0),
        crate::core::format::count(s.batch, "sequence", "sequences"),
        gib(total)
    )
}

/// How mlx-lm stores the cache types asked for: Q8_0/Q4_0 stand for `--kv-bits 8`/`4` (the same
/// bytes, see [`crate::core::mlx::kv_bits`]), which mlx-lm applies only from
/// `--quantized-kv-start` tokens on and never to sliding-window caches
/// (`RotatingKVCache.to_quantized` raises "NYI"); FP8 has no MLX cache type.
fn mlx_cache_note(job: &Job, sliding: bool, notes: &mut Vec<String>) {
    let kv = job.s.kv;
    if kv.k == KvPrecision::Fp8 || kv.v == KvPrecision::Fp8 {
        notes.push("MLX has no FP8 KV cache: mlx-lm keeps the cache in the model's 16-bit dtype or quantises it with --kv-bits 4/8; the FP8 bytes shown are what vLLM would hold.".into());
        return;
    }
    let (Some(kb), Some(vb)) = (
        crate::core::mlx::kv_bits(kv.k),
        crate::core::mlx::kv_bits(kv.v),
    ) else {
        return;
    };
    let bits = if kb == vb {
        kb.to_string()
    } else {
        formula!(
            job.explain,
            "{kb} (K) / {vb} (V) — mlx-lm takes one --kv-bits for both"
        )
    };
    let window = if sliding {
        "; the sliding-window layers' RotatingKVCache stays 16-bit (mlx-lm does not quantise it)"
    } else {
        ""
    };
    notes.push(formula!(job.explain,
        "MLX: a quantised cache is mlx-lm --kv-bits {bits} --kv-group-size 64 (a 16-bit scale and bias per 64 values: the bytes of {}), applied once the cache holds --quantized-kv-start tokens (mlx_lm.generate's default 5000; mlx_lm.server has no such flag){window}.",
        kv.cli_name()
    ));
}

/// The note on how the allocation wastes or reserves memory (`per_token_global`: KV bytes per
/// token of the full-context layers).
fn allocation_note(job: &Job, per_token_global: Bytes, alloc_ctx: u64, notes: &mut Vec<String>) {
    let s = job.s;
    if s.kv_allocation == KvAllocation::Paged
        && alloc_ctx > s.context
        && s.runtime != Runtime::LlamaCpp
    {
        let waste = per_token_global
            .saturating_mul(alloc_ctx - s.context)
            .saturating_mul(s.batch);
        notes.push(formula!(job.explain,
            "PagedAttention rounds each sequence up to 16-token blocks: {} of the KV cache is block waste (< 1 block per sequence).",
            gib(waste)
        ));
    } else if s.kv_allocation == KvAllocation::Contiguous && s.batch > 1 {
        // One sequence has nothing to share its reservation with: said only for a batch.
        notes.push("Contiguous KV reserves the full length for every sequence; the vLLM paper found only 20–38 % of such reservations holding tokens. PagedAttention allocates 16-token blocks on demand.".into());
    }
}
