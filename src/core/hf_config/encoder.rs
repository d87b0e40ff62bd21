//! Encoder-only configs (BERT, RoBERTa, XLM-RoBERTa: the BGE, E5 and GTE embedding models and the
//! BGE rerankers), keys as transformers defines them (`configuration_bert.py` `BertConfig`,
//! `configuration_xlm_roberta.py` `XLMRobertaConfig`): `vocab_size`, `hidden_size`,
//! `num_hidden_layers`, `num_attention_heads`, `intermediate_size`, `max_position_embeddings`
//! (class default 512), `type_vocab_size` (class default 2). The layer shapes follow
//! `modeling_bert.py` (`BertSelfAttention`: q/k/v `h × h` with biases; `BertSelfOutput`,
//! `BertIntermediate`, `BertOutput`: biased dense layers and two LayerNorms with biases).

use super::obj::{Obj, bad};
use super::{ConfigError, MAX_FFN, MAX_HEADS, MAX_HIDDEN, MAX_LAYERS, MAX_VOCAB};
use crate::core::model::{EncoderSpec, MlpKind, ModelSpec, ShapeSource};
use crate::core::model_limits::MAX_CONTEXT;

/// The `model_type`s read as encoders.
pub(super) fn is_encoder(model_type: &str) -> bool {
    matches!(model_type, "bert" | "roberta" | "xlm-roberta")
}

/// An encoder config as an exact [`ModelSpec`]. The pooler is counted: `BertModel` and
/// `XLMRobertaModel` build it by default (`add_pooling_layer=True`) and the BGE/E5/GTE
/// checkpoints ship `pooler.dense`; a `*ForSequenceClassification` (a reranker) has the
/// classification head instead.
pub(super) fn parse_bert(c: &Obj, name: String, arch: String) -> Result<ModelSpec, ConfigError> {
    let hidden = c.req("hidden_size", 1, MAX_HIDDEN)?;
    let heads = c.req("num_attention_heads", 1, MAX_HEADS)?;
    if !hidden.is_multiple_of(heads) {
        return Err(bad(
            c.key("num_attention_heads"),
            format!("{heads} does not divide hidden_size {hidden}"),
        ));
    }
    let positions = c
        .count("max_position_embeddings", 1, MAX_CONTEXT)?
        .unwrap_or(512);
    // A cross-encoder (`*ForSequenceClassification`): the classification head instead of the
    // pooler (`add_pooling_layer=False`), `num_labels` outputs (`id2label`'s size, default 2;
    // the BGE rerankers name 1).
    let classifier = c.raw("architectures").is_some_and(|a| {
        a.as_array().is_some_and(|v| {
            v.iter().any(|x| {
                x.as_str()
                    .is_some_and(|s| s.ends_with("ForSequenceClassification"))
            })
        })
    });
    let labels = match c.raw("id2label") {
        Some(serde_json::Value::Object(m)) if !m.is_empty() => m.len() as u64,
        _ => c.count("num_labels", 1, 1 << 16)?.unwrap_or(2),
    };
    // RoBERTa offsets positions by the padding index + 1 (`create_position_ids_from_input_ids`):
    // 514 positions hold 512 tokens.
    let max_context = if arch.contains("roberta") {
        positions.saturating_sub(2).max(1)
    } else {
        positions
    };
    Ok(ModelSpec {
        name,
        arch,
        layers: c.req("num_hidden_layers", 1, MAX_LAYERS)?,
        hidden,
        heads,
        kv_heads: heads,
        head_dim: hidden / heads,
        intermediate: c.req("intermediate_size", 1, MAX_FFN)?,
        vocab: c.req("vocab_size", 1, MAX_VOCAB)?,
        // No output head: the word embedding is the one V × h matrix.
        tied_embeddings: true,
        qkv_bias: true,
        o_bias: true,
        mlp_bias: true,
        qk_norm: false,
        attn_sinks: false,
        attn_output_gate: false,
        // Two LayerNorms a layer, each a weight and a bias.
        norms_per_layer: 4,
        mlp: MlpKind::Plain,
        moe: None,
        mla: None,
        sliding: None,
        recurrent: None,
        max_context,
        vision_params: 0,
        mtp_layers: 0,
        encoder: Some(EncoderSpec {
            positions,
            token_types: c.count("type_vocab_size", 0, 16)?.unwrap_or(2),
            pooler: !classifier,
            classifier_outputs: if classifier { labels } else { 0 },
        }),
        gemma3n: None,
        kv_shared_layers: 0,
        cross_attention_layers: 0,
        mtp_shares_embeddings: false,
        source: ShapeSource::Exact,
        nominal_params: None,
        file_weights: None,
    })
}
