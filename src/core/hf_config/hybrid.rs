//! Hybrid linear-attention and state-space configs: Qwen3-Next's Gated DeltaNet layers and
//! Mamba-2.
//!
//! Keys, as the transformers configuration classes define them:
//! - `configuration_qwen3_next.py` `Qwen3NextConfig` (commit
//!   249ef8164cfbd8e288c2f6d8395539b9e90e8300): `layer_types` ("linear_attention" /
//!   "full_attention"), else `full_attention_interval` (default 4: layer `i` is full attention
//!   when `(i + 1) % interval == 0`), `linear_num_key_heads`, `linear_num_value_heads`,
//!   `linear_key_head_dim`, `linear_value_head_dim`, `linear_conv_kernel_dim`.
//! - `configuration_mamba2.py` `Mamba2Config` (commit f2a39d495c8c365996a33c6ae9506ad9c9339f4b):
//!   `hidden_size`, `num_hidden_layers`, `vocab_size`, `num_heads`, `head_dim`, `state_size`,
//!   `n_groups`, `expand`, `conv_kernel`, `use_bias`, `use_conv_bias`, `tie_word_embeddings`.
//! - `configuration_jamba.py` `JambaConfig` (commit 161d2bed0075063d3c6f605e370b87bd097ff2b4):
//!   layer `i` is attention when `i % attn_layer_period == attn_layer_offset` (default 8, 4) and
//!   MoE when `i % expert_layer_period == expert_layer_offset` (default 2, 1); `mamba_d_state`
//!   (16), `mamba_d_conv` (4), `mamba_expand` (2), `mamba_dt_rank` ("auto" = ⌈h / 16⌉),
//!   `mamba_conv_bias` (true), `mamba_proj_bias` (false).

use super::obj::{Obj, bad};
use super::{ConfigError, MAX_FFN, MAX_HEAD_DIM, MAX_HEADS, MAX_HIDDEN, MAX_LAYERS, MAX_VOCAB};
use crate::core::model::{MlpKind, ModelSpec, MoeSpec, RecurrentKind, RecurrentSpec, ShapeSource};
use serde_json::Value;

/// A state size or conv kernel no real model comes near.
pub(super) const MAX_STATE: u64 = 65_536;

/// Gated DeltaNet layers, when the config names `linear_num_value_heads` (Qwen3-Next, and the
/// Qwen3.5 text configs that share its keys); `None` otherwise.
pub(super) fn parse_linear_attention(
    c: &Obj,
    layers: u64,
) -> Result<Option<RecurrentSpec>, ConfigError> {
    let Some(heads) = c.count("linear_num_value_heads", 1, MAX_HEADS)? else {
        return Ok(None);
    };
    let groups = c.req("linear_num_key_heads", 1, MAX_HEADS)?;
    if !heads.is_multiple_of(groups) {
        return Err(bad(
            c.key("linear_num_key_heads"),
            format!("{groups} does not divide the {heads} linear value heads"),
        ));
    }
    Ok(Some(RecurrentSpec {
        kind: RecurrentKind::GatedDeltaNet,
        attention_layers: full_attention_layers(c, layers)?,
        heads,
        head_dim: c.req("linear_value_head_dim", 1, MAX_HEAD_DIM)?,
        state: c.req("linear_key_head_dim", 1, MAX_HEAD_DIM)?,
        groups,
        conv_kernel: c
            .count("linear_conv_kernel_dim", 1, MAX_STATE)?
            .unwrap_or(4),
        conv_bias: false,
        proj_bias: false,
        dt_rank: 0,
        mlp_only_layers: Vec::new(),
        mixers_without_mlp: false,
    }))
}

/// The full-attention layers: `layer_types`, else every `full_attention_interval`-th.
fn full_attention_layers(c: &Obj, layers: u64) -> Result<Vec<u64>, ConfigError> {
    match c.layer_type_names(layers)? {
        Some(names) => Ok(names
            .iter()
            .enumerate()
            .filter(|(_, n)| **n != "linear_attention")
            .map(|(i, _)| i as u64)
            .collect()),
        None => {
            let p = c.count("full_attention_interval", 1, layers)?.unwrap_or(4);
            Ok((0..layers).filter(|i| (i + 1).is_multiple_of(p)).collect())
        }
    }
}

/// A Mamba-2 config (`model_type` "mamba2") as an exact [`ModelSpec`]: every layer is a
/// `Mamba2Block` (RMSNorm + `Mamba2Mixer`, no MLP, no attention).
pub(super) fn parse_mamba2(c: &Obj, name: String, arch: String) -> Result<ModelSpec, ConfigError> {
    let hidden = c.req("hidden_size", 1, MAX_HIDDEN)?;
    let layers = c.req("num_hidden_layers", 1, MAX_LAYERS)?;
    let heads = c.req("num_heads", 1, MAX_HEADS)?;
    let expand = c.count("expand", 1, 64)?.unwrap_or(2);
    let d_inner = hidden.saturating_mul(expand);
    if d_inner > MAX_FFN {
        return Err(bad(
            c.key("expand"),
            format!("{expand} × {hidden} is absurd"),
        ));
    }
    let head_dim = c.req("head_dim", 1, MAX_HEAD_DIM)?;
    // Mamba2Mixer: intermediate_size = expand × hidden_size, split into num_heads × head_dim.
    if heads.saturating_mul(head_dim) != d_inner {
        return Err(bad(
            c.key("num_heads"),
            format!("{heads} heads × {head_dim} head_dim ≠ expand {expand} × hidden_size {hidden}"),
        ));
    }
    let groups = c.count("n_groups", 1, heads)?.unwrap_or(1);
    let recurrent = RecurrentSpec {
        kind: RecurrentKind::Mamba2,
        attention_layers: Vec::new(),
        heads,
        head_dim,
        state: c.req("state_size", 1, MAX_STATE)?,
        groups,
        conv_kernel: c.count("conv_kernel", 1, MAX_STATE)?.unwrap_or(4),
        conv_bias: c.flag("use_conv_bias")?.unwrap_or(true),
        proj_bias: c.flag("use_bias")?.unwrap_or(false),
        dt_rank: 0,
        mlp_only_layers: Vec::new(),
        mixers_without_mlp: false,
    };
    Ok(ModelSpec {
        name,
        arch,
        layers,
        hidden,
        // No attention layer exists; the head shape is the SSM's, for the activation estimates.
        heads,
        kv_heads: heads,
        head_dim,
        intermediate: 0,
        vocab: c.req("vocab_size", 1, MAX_VOCAB)?,
        // Mamba2Config's class default.
        tied_embeddings: c.flag("tie_word_embeddings")?.unwrap_or(false),
        qkv_bias: false,
        o_bias: false,
        mlp_bias: false,
        qk_norm: false,
        attn_sinks: false,
        attn_output_gate: false,
        encoder: None,
        gemma3n: None,
        kv_shared_layers: 0,
        cross_attention_layers: 0,
        mtp_shares_embeddings: false,
        // Mamba2Block: one RMSNorm before the mixer.
        norms_per_layer: 1,
        mlp: MlpKind::Gated,
        moe: None,
        mla: None,
        sliding: None,
        recurrent: Some(recurrent),
        max_context: 0,
        vision_params: 0,
        mtp_layers: 0,
        source: ShapeSource::Exact,
        nominal_params: None,
        file_weights: None,
    })
}

/// A `(period, offset)` pair of Jamba's layer layout, the class defaults when absent.
fn period_offset(
    c: &Obj,
    keys: (&str, &str),
    defaults: (u64, u64),
    layers: u64,
) -> Result<(u64, u64), ConfigError> {
    let period = c.count(keys.0, 1, layers.max(1))?.unwrap_or(defaults.0);
    let offset = c.count(keys.1, 0, MAX_LAYERS)?.unwrap_or(defaults.1);
    if offset >= period {
        // JambaConfig._check_supported_offset refuses it too.
        return Err(bad(
            c.key(keys.1),
            format!("{offset} must be smaller than the period {period}"),
        ));
    }
    Ok((period, offset))
}

/// Jamba's Mamba-1 layers: every layer but the attention ones.
pub(super) fn parse_jamba(c: &Obj, layers: u64, hidden: u64) -> Result<RecurrentSpec, ConfigError> {
    let (p, off) = period_offset(
        c,
        ("attn_layer_period", "attn_layer_offset"),
        (8, 4),
        layers,
    )?;
    let expand = c.count("mamba_expand", 1, 64)?.unwrap_or(2);
    let d_inner = hidden.saturating_mul(expand);
    if d_inner > MAX_FFN {
        return Err(bad(
            c.key("mamba_expand"),
            format!("{expand} × {hidden} is absurd"),
        ));
    }
    let dt_rank = match c.raw("mamba_dt_rank") {
        None | Some(Value::String(_)) => hidden.div_ceil(16),
        Some(_) => c.req("mamba_dt_rank", 1, MAX_FFN)?,
    };
    Ok(RecurrentSpec {
        kind: RecurrentKind::Mamba1,
        attention_layers: (0..layers).filter(|i| i % p == off).collect(),
        heads: 1,
        head_dim: d_inner,
        state: c.count("mamba_d_state", 1, MAX_STATE)?.unwrap_or(16),
        groups: 0,
        conv_kernel: c.count("mamba_d_conv", 1, MAX_STATE)?.unwrap_or(4),
        conv_bias: c.flag("mamba_conv_bias")?.unwrap_or(true),
        proj_bias: c.flag("mamba_proj_bias")?.unwrap_or(false),
        dt_rank,
        mlp_only_layers: Vec::new(),
        mixers_without_mlp: false,
    })
}

/// Jamba's MoE layers: `i % expert_layer_period == expert_layer_offset`; the others keep a dense
/// MLP of `intermediate_size` (`JambaConfig.layers_num_experts`).
pub(super) fn jamba_moe_layout(
    c: &Obj,
    moe: Option<MoeSpec>,
    layers: u64,
) -> Result<Option<MoeSpec>, ConfigError> {
    let (p, off) = period_offset(
        c,
        ("expert_layer_period", "expert_layer_offset"),
        (2, 1),
        layers,
    )?;
    Ok(moe.map(|m| MoeSpec {
        sparse_step: 1,
        dense_layers: (0..layers).filter(|i| i % p != off).collect(),
        ..m
    }))
}
