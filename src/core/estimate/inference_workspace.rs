//! Inference working memory: llama.cpp's compute and output buffers, the prefill activations of
//! the PyTorch runtimes (one layer in flight), and the logits.
//!
//! llama.cpp reserves a worst-case graph of `n_ubatch` tokens with every output
//! (src/llama-context.cpp, `llama_context::graph_reserve`), so the compute buffer holds
//! `n_ubatch × n_vocab` f32 logits and, without FlashAttention, the `n_head × n_ctx × n_ubatch`
//! f32 KQ matrix. vLLM profiles the activation peak with `max_num_batched_tokens`
//! (vllm/worker/gpu_worker.py, `Worker.determine_available_memory`).

use super::component::{ComponentKind, ComponentList, Provenance};
use super::{Job, ffn_shape, formula, gib};
use crate::core::format::group_digits;
use crate::core::scenario::Runtime;
use crate::core::units::Bytes;

/// The shapes every inference workspace formula uses.
#[derive(Clone, Copy)]
struct Shape {
    /// Tokens in one prefill micro-batch.
    q: u64,
    /// Hidden size.
    h: u64,
    /// Attention heads on one GPU.
    heads_dev: u64,
    /// FFN width a token passes through (active experts for MoE).
    ffn_w: u64,
    /// Up-projections of that width (2 for gated MLPs).
    mats: u64,
    /// Positions attended to.
    kv_len: u64,
    vocab: u64,
}

/// Place the inference workspace for the scenario's runtime.
pub(super) fn place(job: &Job, list: &mut ComponentList) {
    let (s, spec) = (job.s, job.spec);
    let (ffn_w, mats) = ffn_shape(spec);
    let embed = s.mode.is_embed();
    let shape = Shape {
        q: if embed {
            crate::core::embed::tokens_in_flight(s)
        } else if s.runtime == Runtime::Mlx {
            // mlx-lm evaluates the prompt one `--prefill-step-size` chunk at a time.
            crate::core::mlx::prefill_step(s)
                .min(s.context.saturating_mul(s.batch))
                .max(1)
        } else {
            s.ubatch.min(s.context.saturating_mul(s.batch)).max(1)
        },
        h: spec.hidden,
        heads_dev: spec
            .heads
            .div_ceil(if job.cpu_only { 1 } else { job.devices })
            .max(1),
        ffn_w,
        mats,
        // An embedding pass attends over its own sequence and puts out a pooled `h` per
        // sequence, no vocabulary logits.
        kv_len: if embed {
            s.prompt_tokens.max(1)
        } else {
            s.context
        },
        vocab: if embed { 0 } else { spec.vocab },
    };
    match s.runtime {
        Runtime::LlamaCpp => llama_cpp_buffers(job, &shape, list),
        _ => pytorch_prefill(job, &shape, list),
    }
}

/// llama.cpp's compute buffer (GPU), host compute buffer and output buffer.
fn llama_cpp_buffers(job: &Job, shape: &Shape, list: &mut ComponentList) {
    let (s, explain, n) = (job.s, job.explain, job.devices);
    let Shape {
        q,
        h,
        heads_dev,
        ffn_w,
        mats,
        kv_len,
        vocab,
    } = *shape;
    // Compute buffer = the largest of the attention, FFN and logits peaks of the
    // reserved graph (ggml-alloc reuses memory between them), plus the f32 residual
    // stream, input and norm tensors of one ubatch.
    let ctx_pad = kv_len.div_ceil(256).saturating_mul(256);
    let attn = if s.flash_attention {
        Bytes(q.saturating_mul(h).saturating_mul(4).saturating_mul(3))
    } else {
        Bytes(
            heads_dev
                .saturating_mul(ctx_pad)
                .saturating_mul(q)
                .saturating_mul(4),
        )
    };
    let ffn = Bytes(
        q.saturating_mul(ffn_w.div_ceil(n))
            .saturating_mul(4)
            .saturating_mul(mats),
    );
    let logits = Bytes(q.saturating_mul(vocab).saturating_mul(4));
    // Four f32 tensors of the residual stream (input embeddings, norm, attention and
    // FFN outputs) and the f32 KQ mask of n_ctx × n_ubatch.
    let base = Bytes(q.saturating_mul(h).saturating_mul(4).saturating_mul(4));
    let mask = Bytes(ctx_pad.saturating_mul(q).saturating_mul(4));
    let peak = attn.max(ffn).max(logits);
    let which = if peak == logits {
        formula!(explain, "logits {q} × {} vocab × 4 B", group_digits(vocab))
    } else if peak == attn && !s.flash_attention {
        formula!(
            explain,
            "KQ {heads_dev} heads × {} n_ctx × {q} ubatch × 4 B (FlashAttention off)",
            group_digits(ctx_pad)
        )
    } else if peak == attn {
        formula!(explain, "attention {q} × {h} × 4 B × 3")
    } else {
        formula!(explain, "FFN {q} × {ffn_w} × 4 B × {mats}")
    };
    list.gpu(
        ComponentKind::Activations,
        "Compute buffer (llama.cpp)",
        peak + base + mask,
        Provenance::Derived,
        formula!(explain,
            "max(attention, FFN, logits) = {which} = {} + KQ mask {} × {q} × 4 B + residual {q} × {h} × 4 B × 4 = {}",
            gib(peak),
            group_digits(ctx_pad),
            gib(peak + base + mask)
        ),
    );
    // The host compute buffer holds the CPU side of the graph split: the token
    // embeddings of one ubatch and the mask.
    let host_cb = Bytes(q.saturating_mul(h).saturating_mul(4)) + mask;
    list.host(
        ComponentKind::Activations,
        "Host compute buffer (llama.cpp)",
        host_cb,
        Provenance::Derived,
        formula!(
            explain,
            "embeddings {q} × {h} × 4 B + KQ mask {} × {q} × 4 B = {}",
            group_digits(ctx_pad),
            gib(host_cb)
        ),
    );
    let out = Bytes(s.batch.saturating_mul(vocab).saturating_mul(4));
    list.host(
        ComponentKind::Activations,
        "Output buffer (llama.cpp, host)",
        out,
        Provenance::Derived,
        formula!(
            explain,
            "{} × {} vocab × 4 B f32 logits = {}",
            crate::core::format::count(s.batch, "sequence", "sequences"),
            group_digits(vocab),
            gib(out)
        ),
    );
}

/// The PyTorch runtimes (vLLM, transformers, generic) and MLX (its lazy graph frees each
/// layer's intermediates once the next layer has consumed them): one layer's prefill activations
/// and the logits.
fn pytorch_prefill(job: &Job, shape: &Shape, list: &mut ComponentList) {
    let (s, spec, explain, n) = (job.s, job.spec, job.explain, job.devices);
    let Shape {
        q,
        h,
        heads_dev,
        ffn_w,
        mats,
        kv_len,
        vocab,
    } = *shape;
    let eager = s.runtime == Runtime::Transformers && !s.flash_attention;
    // vLLM's attention backends and MLX's `mx.fast.scaled_dot_product_attention` (mlx-lm's
    // attention in every model) never hold the score matrix.
    let fa = s.flash_attention || matches!(s.runtime, Runtime::Vllm | Runtime::Mlx);
    let hid = Bytes(q.saturating_mul(h).saturating_mul(2).saturating_mul(4));
    let qkv = Bytes(
        q.saturating_mul(heads_dev.saturating_add(2 * spec.kv_heads.div_ceil(n).max(1)))
            .saturating_mul(spec.head_dim)
            .saturating_mul(2),
    );
    let score_b = if eager { 6 } else { 2 }; // eager: scores in BF16 + softmax upcast to FP32
    let scores = if fa {
        Bytes::ZERO
    } else {
        Bytes(
            heads_dev
                .saturating_mul(q)
                .saturating_mul(kv_len)
                .saturating_mul(score_b),
        )
    };
    let ffn = Bytes(
        q.saturating_mul(ffn_w.div_ceil(n))
            .saturating_mul(2)
            .saturating_mul(mats + 1),
    );
    let act = hid + qkv + scores.max(ffn);
    let attn_txt = if fa {
        "FlashAttention: no score matrix (O(N))".to_string()
    } else {
        formula!(
            explain,
            "scores {heads_dev} heads × {q} × {} × {score_b} B = {} (O(N²))",
            group_digits(kv_len),
            gib(scores)
        )
    };
    list.gpu(
        ComponentKind::Activations,
        "Prefill activations (one layer in flight)",
        act,
        Provenance::Derived,
        formula!(explain,
            "chunk of {q} tokens: hidden {q} × {h} × 2 B × 4 + q/k/v {} + max({attn_txt}, MLP {q} × {ffn_w} × 2 B × {}) = {}",
            gib(qkv),
            mats + 1,
            gib(act)
        ),
    );
    // Logits: generate() keeps the last position; a transformers forward keeps every
    // prompt position (transformers 5: in the model dtype).
    let (logits, txt) = if s.runtime == Runtime::Transformers {
        let l = Bytes(
            s.batch
                .saturating_mul(s.context)
                .saturating_mul(vocab)
                .saturating_mul(2),
        );
        (
            l,
            formula!(
                explain,
                "{} × {} positions × {} vocab × 2 B (a forward keeps logits for every prompt position) = {}",
                crate::core::format::count(s.batch, "sequence", "sequences"),
                group_digits(s.context),
                group_digits(vocab),
                gib(l)
            ),
        )
    } else {
        let l = Bytes(s.batch.saturating_mul(vocab).saturating_mul(4));
        (
            l,
            formula!(
                explain,
                "{} × {} vocab × 4 B (last position only, f32) = {}",
                crate::core::format::count(s.batch, "sequence", "sequences"),
                group_digits(vocab),
                gib(l)
            ),
        )
    };
    if s.mode.is_embed() {
        // What an embedding pass hands back: one pooled vector per sequence.
        let out = Bytes(s.batch.saturating_mul(h).saturating_mul(4));
        list.gpu(
            ComponentKind::Activations,
            "Pooled embeddings",
            out,
            Provenance::Derived,
            formula!(
                explain,
                "{} × {h} hidden × 4 B (one f32 vector per sequence) = {}",
                crate::core::format::count(s.batch, "sequence", "sequences"),
                gib(out)
            ),
        );
        return;
    }
    list.gpu(
        ComponentKind::Activations,
        "Logits",
        logits,
        Provenance::Derived,
        txt,
    );
}
