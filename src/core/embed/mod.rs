//! Embedding and reranking models (`Mode::Embed`): each input is one forward pass over its
//! tokens, and what comes out is a pooled vector (embeddings) or a score (rerankers); nothing is
//! generated.
//!
//! - **Memory**: the weights and one forward pass's activations; no KV cache outlives a request.
//!   llama.cpp allocates none for its encoder architectures (`src/llama-model.cpp`
//!   `llama_model::create_memory`: `res = nullptr` for `LLM_ARCH_BERT`, `LLM_ARCH_NOMIC_BERT`, …)
//!   but does give a decoder run with `--embedding` (Qwen3-Embedding) its usual KV cache of
//!   `n_ctx` cells; the PyTorch servers (sentence-transformers, Text Embeddings Inference, vLLM's
//!   pooling runner) hold only the pass's activations.
//! - **Speed**: the prefill rate — an embedding is a prompt without a reply. Sequences per
//!   second = prefill tokens/s ÷ tokens per sequence; one batch takes `batch × tokens` ÷ that
//!   rate.

use crate::core::scenario::{Runtime, Scenario};
use serde::{Deserialize, Serialize};

/// Whether the runtime keeps a KV cache for this embedding scenario: llama.cpp for a decoder
/// (an encoder has none anywhere; the PyTorch servers keep none).
pub fn keeps_kv_cache(s: &Scenario) -> bool {
    s.runtime == Runtime::LlamaCpp && s.model.encoder.is_none()
}

/// Tokens one forward pass holds at once: every sequence of the batch, whole (an encoder sees
/// all its tokens at once, and the PyTorch servers pad a batch to one tensor). llama.cpp splits
/// the batch into micro-batches of `ubatch` tokens (a sequence of a non-causal model must fit
/// one: `llama_context::encode` asserts `n_ubatch >= n_tokens`).
pub fn tokens_in_flight(s: &Scenario) -> u64 {
    let all = s.prompt_tokens.max(1).saturating_mul(s.batch.max(1));
    match s.runtime {
        Runtime::LlamaCpp => all.min(s.ubatch.max(s.prompt_tokens).max(1)),
        _ => all,
    }
}

/// Embedding throughput on one machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EmbedSpeed {
    /// Tokens per input sequence.
    pub tokens_per_sequence: u64,
    /// Input tokens processed per second (the prefill rate).
    pub tokens_per_s: f64,
    /// Sequences embedded (or pairs scored) per second.
    pub sequences_per_s: f64,
    /// Seconds for one batch of `batch` sequences.
    pub batch_s: f64,
}

/// Throughput from the placement's prefill rate; `None` where nothing runs.
pub fn speed(s: &Scenario, prefill_tokens_per_s: f64) -> Option<EmbedSpeed> {
    if !(prefill_tokens_per_s.is_finite() && prefill_tokens_per_s > 0.0) {
        return None;
    }
    let t = s.prompt_tokens.max(1);
    Some(EmbedSpeed {
        tokens_per_sequence: t,
        tokens_per_s: prefill_tokens_per_s,
        sequences_per_s: prefill_tokens_per_s / t as f64,
        batch_s: (t.saturating_mul(s.batch.max(1))) as f64 / prefill_tokens_per_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::EncoderSpec;

    #[test]
    fn sequences_per_second_are_the_prefill_rate_over_the_length() {
        let s = Scenario {
            prompt_tokens: 512,
            batch: 32,
            ..Scenario::default()
        };
        let e = speed(&s, 51_200.0).unwrap();
        assert_eq!(e.sequences_per_s, 100.0);
        assert!((e.batch_s - 0.32).abs() < 1e-12);
        assert!(speed(&s, 0.0).is_none());
    }

    #[test]
    fn only_llama_cpp_with_a_decoder_keeps_a_kv_cache() {
        let mut s = Scenario {
            runtime: Runtime::LlamaCpp,
            ..Scenario::default()
        };
        assert!(keeps_kv_cache(&s));
        s.model.encoder = Some(EncoderSpec::default());
        assert!(!keeps_kv_cache(&s));
        s.model.encoder = None;
        s.runtime = Runtime::Vllm;
        assert!(!keeps_kv_cache(&s));
    }
}
