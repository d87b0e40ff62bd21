//! Gemma 3n (`model_type` "gemma3n", its language model in `text_config`, "gemma3n_text").
//!
//! Keys and class defaults: transformers `src/transformers/models/gemma3n/configuration_gemma3n.py`
//! `Gemma3nTextConfig` (commit 018548097621d331be9d60ab6cafdd71cfa67a43; the defaults describe
//! gemma-3n-E4B): `hidden_size_per_layer_input` (256), `vocab_size_per_layer_input` (262,144),
//! `altup_num_inputs` (4), `laurel_rank` (64), `num_kv_shared_layers` (15), `sliding_window`
//! (512), `layer_types` (absent: `full_attention` when `(i + 1) % 5 == 0`, else sliding),
//! `intermediate_size` one width or a list of one per layer (`__post_init__` expands a single
//! width to a list, so a saved config.json holds the list), `tie_word_embeddings` (true).
//! The architecture is in `modeling_gemma3n.py` (see `core::model` `gemma3n.rs`); llama.cpp
//! maps the same keys to `gemma3n.embedding_length_per_layer_input`,
//! `gemma3n.altup.num_inputs`, `gemma3n.laurel_rank` and `gemma3n.attention.shared_kv_layers`
//! (`src/llama-model.cpp` `load_hparams`, `LLM_ARCH_GEMMA3N`: sliding-window pattern 5).
//!
//! The vision (MobileNet-V5) and audio (USM conformer) towers of the checkpoint are not
//! counted: llama.cpp runs the text model only, and its GGUF's `general.parameter_count`
//! (E4B 6,866,696,688) is what the inventory gives.

use super::obj::{Obj, bad, describe};
use super::parts::sliding_from_flags;
use super::{
    ConfigError, MAX_CONTEXT, MAX_FFN, MAX_HEAD_DIM, MAX_HEADS, MAX_HIDDEN, MAX_LAYERS, MAX_VOCAB,
};
use crate::core::model::{Gemma3nSpec, MlpKind, ModelSpec, ShapeSource};
use serde_json::Value;

/// transformers `Gemma3nTextConfig` class defaults for the counted keys (see the module docs),
/// which a nested `text_config` written as a diff would leave out.
pub(super) const GEMMA3N_TEXT_DEFAULTS: &[(&str, u64)] = &[
    ("vocab_size", 262_400),
    ("hidden_size", 2048),
    ("num_hidden_layers", 35),
    ("num_attention_heads", 8),
    ("num_key_value_heads", 2),
    ("head_dim", 256),
    ("max_position_embeddings", 32_768),
    ("sliding_window", 512),
    ("vocab_size_per_layer_input", 262_144),
    ("hidden_size_per_layer_input", 256),
    ("altup_num_inputs", 4),
    ("num_kv_shared_layers", 15),
    ("laurel_rank", 64),
];

/// `Gemma3nTextConfig.intermediate_size`'s default, when the key is absent.
const GEMMA3N_INTERMEDIATE: u64 = 16_384;
/// Gemma 3n's default layer pattern: every 5th layer attends fully.
const GEMMA3N_PATTERN: u64 = 5;
/// More AltUp streams than any published model (4) by far.
const MAX_ALTUP_INPUTS: u64 = 64;

/// A Gemma 3n text config as an exact [`ModelSpec`].
pub(super) fn parse_gemma3n(
    c: &Obj,
    top: &Obj,
    name: String,
    arch: String,
) -> Result<ModelSpec, ConfigError> {
    let hidden = c.req("hidden_size", 1, MAX_HIDDEN)?;
    let layers = c.req("num_hidden_layers", 1, MAX_LAYERS)?;
    let heads = c.req("num_attention_heads", 1, MAX_HEADS)?;
    let kv_heads = c.req("num_key_value_heads", 1, heads)?;
    c.kv_heads_divide(heads, kv_heads)?;
    let window = c.req("sliding_window", 1, MAX_CONTEXT)?;
    let sliding: Vec<bool> = match c.layer_types(layers)? {
        Some(t) => t,
        None => (0..layers)
            .map(|i| !(i + 1).is_multiple_of(GEMMA3N_PATTERN))
            .collect(),
    };
    let attention_bias = c.flag("attention_bias")?.unwrap_or(false);
    let tied = match c.flag("tie_word_embeddings")? {
        Some(t) => t,
        None => top.flag("tie_word_embeddings")?.unwrap_or(true),
    };
    Ok(ModelSpec {
        name,
        arch,
        layers,
        hidden,
        heads,
        kv_heads,
        head_dim: c.req("head_dim", 1, MAX_HEAD_DIM)?,
        intermediate: mlp_width(c, layers)?,
        vocab: c.req("vocab_size", 1, MAX_VOCAB)?,
        tied_embeddings: tied,
        qkv_bias: attention_bias,
        o_bias: attention_bias,
        mlp_bias: false,
        // Gemma3nTextAttention: q_norm and k_norm of head_dim (v_norm has no scale).
        qk_norm: true,
        attn_sinks: false,
        attn_output_gate: false,
        // Gemma 3's four norms around attention and the MLP.
        norms_per_layer: 4,
        mlp: MlpKind::Gated,
        moe: None,
        mla: None,
        sliding: sliding_from_flags(window, &sliding),
        recurrent: None,
        max_context: c.req("max_position_embeddings", 1, MAX_CONTEXT)?,
        vision_params: 0,
        mtp_layers: 0,
        encoder: None,
        gemma3n: Some(Gemma3nSpec {
            ple_dim: c.req("hidden_size_per_layer_input", 1, MAX_HIDDEN)?,
            ple_vocab: c.req("vocab_size_per_layer_input", 1, MAX_VOCAB)?,
            altup_inputs: c.req("altup_num_inputs", 1, MAX_ALTUP_INPUTS)?,
            laurel_rank: c.req("laurel_rank", 1, MAX_HIDDEN)?,
        }),
        kv_shared_layers: c.req("num_kv_shared_layers", 0, layers)?,
        cross_attention_layers: 0,
        mtp_shares_embeddings: false,
        source: ShapeSource::Exact,
        nominal_params: None,
        file_weights: None,
    })
}

/// The MLP width: `intermediate_size` as one number or as a list of one per layer, all equal
/// (a MatFormer slice with different widths per layer is refused, naming the key).
fn mlp_width(c: &Obj, layers: u64) -> Result<u64, ConfigError> {
    let k = "intermediate_size";
    let list = match c.raw(k) {
        None => return Ok(GEMMA3N_INTERMEDIATE),
        Some(Value::Array(a)) => a,
        Some(_) => return c.req(k, 1, MAX_FFN),
    };
    if list.len() as u64 != layers {
        return Err(bad(
            c.key(k),
            format!("has {} widths for {layers} layers", list.len()),
        ));
    }
    let mut widths = list.iter().map(|v| match v {
        Value::Number(_) => super::obj::as_count(v).map_err(|m| bad(c.key(k), m)),
        other => Err(bad(
            c.key(k),
            format!("expected a list of widths, got {}", describe(other)),
        )),
    });
    let first = widths.next().unwrap_or(Ok(0))?;
    for w in widths {
        let w = w?;
        if w != first {
            return Err(bad(
                c.key(k),
                format!(
                    "layers of different MLP widths ({first} and {w}) are not supported; every layer is sized alike"
                ),
            ));
        }
    }
    if first == 0 || first > MAX_FFN {
        return Err(bad(
            c.key(k),
            format!("must be between 1 and {MAX_FFN}, got {first}"),
        ));
    }
    Ok(first)
}
