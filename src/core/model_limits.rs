//! Plausibility limits of a model's shape: one set, used when reading a Hugging Face
//! `config.json` ([`crate::core::hf_config`]) and when importing a GGUF or safetensors file
//! (`io::import`). Each limit is an order of magnitude or more above any published model and low
//! enough that no product of them overflows before the final parameter check.
//!
//! [`ModelField`] names each checked value once: its label in messages, its GGUF metadata key
//! (under `{arch}.`, llama.cpp `src/llama-arch.cpp` `LLM_KV_NAMES`) and its `config.json` key
//! (transformers' `PretrainedConfig` subclasses).

use super::model::ModelSpec;

pub const MAX_LAYERS: u64 = 4096;
pub const MAX_HIDDEN: u64 = 1 << 20;
pub const MAX_HEADS: u64 = 1 << 16;
pub const MAX_HEAD_DIM: u64 = 1 << 16;
pub const MAX_VOCAB: u64 = 1 << 24;
pub const MAX_FFN: u64 = 1 << 24;
pub const MAX_EXPERTS: u64 = 1 << 16;
pub const MAX_CONTEXT: u64 = 1 << 36;
/// Low-rank dimensions (MLA's `kv_lora_rank`, `q_lora_rank`): at most the hidden size's limit.
pub const MAX_RANK: u64 = MAX_HIDDEN;
/// Norm tensors per layer (real models have 2–4).
pub const MAX_NORMS_PER_LAYER: u64 = 64;

/// A checked value of a model's shape.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ModelField {
    Layers,
    MtpLayers,
    Hidden,
    Heads,
    KvHeads,
    HeadDim,
    Ffn,
    Vocab,
    Context,
    NormsPerLayer,
    Experts,
    ExpertsUsed,
    ExpertFfn,
    SharedExperts,
    SharedFfn,
    LeadingDenseLayers,
    MoeLayerStep,
    KvLoraRank,
    QLoraRank,
    RopeHeadDim,
    NopeHeadDim,
    ValueHeadDim,
    SlidingWindow,
    SlidingPeriod,
}

impl ModelField {
    /// The value's name in messages ("block count 2^40 is not plausible").
    pub const fn label(self) -> &'static str {
        use ModelField as F;
        match self {
            F::Layers => "block count",
            F::MtpLayers => "multi-token-prediction layer count",
            F::Hidden => "embedding length",
            F::Heads => "attention head count",
            F::KvHeads => "KV head count",
            F::HeadDim => "head dimension",
            F::Ffn => "feed-forward length",
            F::Vocab => "vocabulary size",
            F::Context => "context length",
            F::NormsPerLayer => "norms per layer",
            F::Experts => "expert count",
            F::ExpertsUsed => "experts used",
            F::ExpertFfn => "expert feed-forward length",
            F::SharedExperts => "shared expert count",
            F::SharedFfn => "shared expert feed-forward length",
            F::LeadingDenseLayers => "leading dense block count",
            F::MoeLayerStep => "MoE layer step",
            F::KvLoraRank => "kv_lora_rank",
            F::QLoraRank => "q_lora_rank",
            F::RopeHeadDim => "RoPE head dimension",
            F::NopeHeadDim => "no-RoPE head dimension",
            F::ValueHeadDim => "value head dimension",
            F::SlidingWindow => "sliding window",
            F::SlidingPeriod => "sliding window period",
        }
    }

    /// The largest plausible value.
    pub const fn max(self) -> u64 {
        use ModelField as F;
        match self {
            F::Layers
            | F::MtpLayers
            | F::LeadingDenseLayers
            | F::MoeLayerStep
            | F::SlidingPeriod => MAX_LAYERS,
            F::Hidden => MAX_HIDDEN,
            F::Heads | F::KvHeads => MAX_HEADS,
            F::HeadDim | F::RopeHeadDim | F::NopeHeadDim | F::ValueHeadDim => MAX_HEAD_DIM,
            F::Ffn | F::ExpertFfn | F::SharedFfn => MAX_FFN,
            F::Vocab => MAX_VOCAB,
            F::Context | F::SlidingWindow => MAX_CONTEXT,
            F::NormsPerLayer => MAX_NORMS_PER_LAYER,
            F::Experts | F::ExpertsUsed | F::SharedExperts => MAX_EXPERTS,
            F::KvLoraRank | F::QLoraRank => MAX_RANK,
        }
    }

    /// The GGUF metadata key, without the `{arch}.` prefix; `None` when the value is read from
    /// the tensors (vocabulary size, norms) or derived.
    pub const fn gguf_key(self) -> Option<&'static str> {
        use ModelField as F;
        Some(match self {
            F::Layers => "block_count",
            F::MtpLayers => "nextn_predict_layers",
            F::Hidden => "embedding_length",
            F::Heads => "attention.head_count",
            F::KvHeads => "attention.head_count_kv",
            F::HeadDim => "attention.key_length",
            F::Ffn => "feed_forward_length",
            F::Context => "context_length",
            F::Experts => "expert_count",
            F::ExpertsUsed => "expert_used_count",
            F::ExpertFfn => "expert_feed_forward_length",
            F::SharedExperts => "expert_shared_count",
            F::SharedFfn => "expert_shared_feed_forward_length",
            F::LeadingDenseLayers => "leading_dense_block_count",
            F::KvLoraRank => "attention.kv_lora_rank",
            F::QLoraRank => "attention.q_lora_rank",
            F::RopeHeadDim => "rope.dimension_count",
            F::SlidingWindow => "attention.sliding_window",
            F::Vocab
            | F::NormsPerLayer
            | F::MoeLayerStep
            | F::NopeHeadDim
            | F::ValueHeadDim
            | F::SlidingPeriod => return None,
        })
    }

    /// The `config.json` key (the first of its spellings); `None` when it has none.
    pub const fn hf_key(self) -> Option<&'static str> {
        use ModelField as F;
        Some(match self {
            F::Layers => "num_hidden_layers",
            F::MtpLayers => "num_nextn_predict_layers",
            F::Hidden => "hidden_size",
            F::Heads => "num_attention_heads",
            F::KvHeads => "num_key_value_heads",
            F::HeadDim => "head_dim",
            F::Ffn => "intermediate_size",
            F::Vocab => "vocab_size",
            F::Context => "max_position_embeddings",
            F::Experts => "num_local_experts",
            F::ExpertsUsed => "num_experts_per_tok",
            F::ExpertFfn => "moe_intermediate_size",
            F::SharedExperts => "n_shared_experts",
            F::SharedFfn => "shared_expert_intermediate_size",
            F::LeadingDenseLayers => "first_k_dense_replace",
            F::MoeLayerStep => "decoder_sparse_step",
            F::KvLoraRank => "kv_lora_rank",
            F::QLoraRank => "q_lora_rank",
            F::RopeHeadDim => "qk_rope_head_dim",
            F::NopeHeadDim => "qk_nope_head_dim",
            F::ValueHeadDim => "v_head_dim",
            F::SlidingWindow => "sliding_window",
            F::SlidingPeriod => "sliding_window_pattern",
            F::NormsPerLayer => return None,
        })
    }
}

/// The first value of `spec` beyond its limit: (field, value).
pub fn implausible(spec: &ModelSpec) -> Option<(ModelField, u64)> {
    use ModelField as F;
    let mut checks: Vec<(ModelField, u64)> = vec![
        (F::Layers, spec.layers),
        (F::MtpLayers, spec.mtp_layers),
        (F::Hidden, spec.hidden),
        (F::Heads, spec.heads),
        (F::KvHeads, spec.kv_heads),
        (F::HeadDim, spec.head_dim),
        (F::Ffn, spec.intermediate),
        (F::Vocab, spec.vocab),
        (F::Context, spec.max_context),
        (F::NormsPerLayer, spec.norms_per_layer),
    ];
    if let Some(m) = &spec.moe {
        checks.extend([
            (F::Experts, m.experts),
            (F::ExpertsUsed, m.active_experts),
            (F::ExpertFfn, m.expert_ffn),
            (F::SharedExperts, m.shared_experts),
            (F::SharedFfn, m.shared_ffn),
            (F::LeadingDenseLayers, m.first_dense_layers),
            (F::MoeLayerStep, m.sparse_step),
        ]);
    }
    if let Some(m) = &spec.mla {
        checks.extend([
            (F::KvLoraRank, m.kv_lora_rank),
            (F::QLoraRank, m.q_lora_rank),
            (F::RopeHeadDim, m.qk_rope_head_dim),
            (F::NopeHeadDim, m.qk_nope_head_dim),
            (F::ValueHeadDim, m.v_head_dim),
        ]);
    }
    if let Some(w) = &spec.sliding {
        checks.extend([(F::SlidingWindow, w.window), (F::SlidingPeriod, w.period)]);
    }
    checks.into_iter().find(|(f, v)| *v > f.max())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_model_is_plausible_and_a_huge_one_names_its_field() {
        let mut m = ModelSpec::generic(8_000_000_000);
        assert_eq!(implausible(&m), None);
        m.layers = 1 << 40;
        assert_eq!(implausible(&m), Some((ModelField::Layers, 1 << 40)));
        assert_eq!(ModelField::Layers.gguf_key(), Some("block_count"));
        assert_eq!(ModelField::Layers.hf_key(), Some("num_hidden_layers"));
        m.layers = 32;
        m.vocab = MAX_VOCAB + 1;
        let (f, _) = implausible(&m).unwrap();
        assert_eq!((f.label(), f.gguf_key()), ("vocabulary size", None));
    }
}
