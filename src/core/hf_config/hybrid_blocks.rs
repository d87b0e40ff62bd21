//! Hybrid configs whose layers are not all alike: LFM2 (gated short convolutions and GQA
//! attention, each followed by a SwiGLU MLP) and Nemotron-H (ONE block per layer: a Mamba-2
//! mixer, attention, or a squared-ReLU MLP).
//!
//! Keys, as the configuration classes define them:
//! - transformers `src/transformers/models/lfm2/configuration_lfm2.py` `Lfm2Config.__init__`
//!   (commit 05cd1ec14dbe16127778060fb68c34105873015c): `layer_types` ("conv" /
//!   "full_attention"), else `full_attn_idxs` (absent: every layer attends), `conv_L_cache` (3),
//!   `conv_bias` (false), the MLP width `block_ff_dim` (it wins over `intermediate_size`:
//!   `kwargs.get("block_ff_dim", intermediate_size)`), `block_auto_adjust_ff_dim` (true),
//!   `block_ffn_dim_multiplier` (1.0), `block_multiple_of` (256), and `tie_embedding` (it wins
//!   over `tie_word_embeddings`, default true). `modeling_lfm2.py` `Lfm2MLP.__init__` (commit
//!   0096ba4f66d4f5f7b1d4e162f8a75d0894b40ea8) turns the declared width into the real one, see
//!   [`lfm2_mlp_width`]; `Lfm2Attention` has q/k RMSNorms of `head_dim` and no biases.
//! - Nemotron-H: vLLM `vllm/transformers_utils/configs/nemotron_h.py` `NemotronHConfig.__init__`
//!   (commit a59ddf748721ca8c4c538c77364d8540f15ed5cc; defaults "similar … to that of the
//!   NemotronH-v0.1 model", i.e. Nemotron-H-8B): `hybrid_override_pattern`, one character per
//!   layer, 'M' Mamba-2, '*' attention, '-' MLP, its length `num_hidden_layers`; the Mamba keys
//!   are stored as `mamba_num_heads`, `mamba_head_dim`, `ssm_state_size`, `n_groups` (argument
//!   `mamba_n_groups`, 8), `conv_kernel` (`mamba_d_conv`, 4), `expand` (`mamba_expand`, 2),
//!   `use_conv_bias` (`mamba_conv_bias`, true), `mamba_proj_bias` (false), `use_bias` (false);
//!   attention `num_attention_heads`, `num_key_value_heads`, `attention_head_dim` (128);
//!   `intermediate_size`, `mlp_bias`, `attention_bias`, `tie_word_embeddings` (false).
//!   transformers `src/transformers/models/nemotron_h/configuration_nemotron_h.py`
//!   `NemotronHConfig` (commit 13923c63d59f73faebae79b2ee3fafc7e3a35201) reads the same keys,
//!   accepts `layers_block_type` (a list: "mamba" / "attention" / "mlp" / "moe", or
//!   "linear_attention" / "full_attention") in place of the pattern, and adds 'E' (MoE, the
//!   Nemotron 3 models: see [`nemotron_moe`]; the latent MoE of Nemotron 3 Super is refused).
//! - `modeling_nemotron_h.py` (commit 008d9e9577b0eb0149aa6bb0c44da582b10e0b6e):
//!   `NemotronHMamba2Mixer` is `mamba_num_heads × mamba_head_dim` wide (not `expand ×
//!   hidden_size`, which Nemotron Nano 2 does not satisfy) with `in_proj` / `out_proj` bias
//!   `use_bias` (`mamba_proj_bias` is not read); `NemotronHMLP` is `up_proj` / `down_proj`
//!   (bias `mlp_bias`), relu²; `NemotronHBlock` is one RMSNorm + the mixer; `norm_f` at the end.
//!   llama.cpp `src/llama-model.cpp` `load_hparams` (`LLM_ARCH_NEMOTRON_H`) agrees: a layer is
//!   recurrent iff its `head_count_kv` and `feed_forward_length` are both 0.

use super::hybrid::MAX_STATE;
use super::obj::{Obj, bad, describe};
use super::{
    ConfigError, MAX_CONTEXT, MAX_FFN, MAX_HEAD_DIM, MAX_HEADS, MAX_HIDDEN, MAX_LAYERS, MAX_VOCAB,
};
use crate::core::model::{MlpKind, ModelSpec, MoeSpec, RecurrentKind, RecurrentSpec, ShapeSource};
use crate::core::model_limits::MAX_EXPERTS;
use serde_json::Value;

/// `Lfm2Config` defaults: `conv_L_cache`, `block_multiple_of`, `block_ffn_dim_multiplier`.
const LFM2_CONV_L_CACHE: u64 = 3;
const LFM2_MULTIPLE_OF: u64 = 256;
const LFM2_FFN_DIM_MULTIPLIER: f64 = 1.0;
/// A `block_ffn_dim_multiplier` no real model comes near.
const MAX_FFN_MULTIPLIER: f64 = 64.0;

/// `NemotronHConfig` defaults (vLLM's class, see the module docs): `n_groups`, `conv_kernel`.
const NEMOTRON_H_GROUPS: u64 = 8;
const NEMOTRON_H_CONV_KERNEL: u64 = 4;

/// The real SwiGLU width of an LFM2 MLP (`Lfm2MLP.__init__`): the declared `block_ff_dim`
/// (else `intermediate_size`) `I`; with `block_auto_adjust_ff_dim`, `I = int(2·I/3)`, then, when
/// `block_ffn_dim_multiplier` is not null, `I = int(multiplier · I)` rounded up to a multiple of
/// `block_multiple_of`. LFM2-1.2B: 12,288 → 8192 → 8192.
pub(super) fn lfm2_mlp_width(c: &Obj, intermediate: Option<u64>) -> Result<u64, ConfigError> {
    let (key, declared) = match c.count("block_ff_dim", 1, MAX_FFN)? {
        Some(w) => ("block_ff_dim", w),
        None => (
            "intermediate_size",
            intermediate.ok_or_else(|| ConfigError::MissingKey(c.key("intermediate_size")))?,
        ),
    };
    if !c.flag("block_auto_adjust_ff_dim")?.unwrap_or(true) {
        return Ok(declared);
    }
    // int(2 * I / 3): exact in integers for any width below 2^50.
    let mut width = declared.saturating_mul(2) / 3;
    if let Some(f) = ffn_multiplier(c)? {
        let multiple = c
            .count("block_multiple_of", 1, MAX_FFN)?
            .unwrap_or(LFM2_MULTIPLE_OF);
        // int(multiplier * I), as Python truncates a float.
        width = (f * width as f64) as u64;
        width = width.div_ceil(multiple).saturating_mul(multiple);
    }
    if width == 0 || width > MAX_FFN {
        return Err(bad(
            c.key(key),
            format!("{declared} adjusts to an MLP width of {width}, which is absurd"),
        ));
    }
    Ok(width)
}

/// `block_ffn_dim_multiplier`: absent → the class default 1.0; null → None (no rounding).
fn ffn_multiplier(c: &Obj) -> Result<Option<f64>, ConfigError> {
    let k = "block_ffn_dim_multiplier";
    match c.map.get(k) {
        None => Ok(Some(LFM2_FFN_DIM_MULTIPLIER)),
        Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(f) if f > 0.0 && f <= MAX_FFN_MULTIPLIER => Ok(Some(f)),
            _ => Err(bad(
                c.key(k),
                format!("must be above 0 and at most {MAX_FFN_MULTIPLIER}, got {n}"),
            )),
        },
        Some(other) => Err(bad(
            c.key(k),
            format!("expected a number, got {}", describe(other)),
        )),
    }
}

/// LFM2's short-convolution layers: every layer but the attention ones (`layer_types`, else
/// `full_attn_idxs`, else none: `Lfm2Config` then makes every layer attention).
pub(super) fn parse_short_conv(
    c: &Obj,
    layers: u64,
    hidden: u64,
) -> Result<RecurrentSpec, ConfigError> {
    Ok(RecurrentSpec {
        kind: RecurrentKind::ShortConv,
        attention_layers: lfm2_attention_layers(c, layers)?,
        // A depthwise conv over the hidden channels: h "heads" of one channel each.
        heads: hidden,
        head_dim: 1,
        state: 0,
        groups: 0,
        conv_kernel: c
            .count("conv_L_cache", 1, MAX_STATE)?
            .unwrap_or(LFM2_CONV_L_CACHE),
        conv_bias: c.flag("conv_bias")?.unwrap_or(false),
        proj_bias: false,
        dt_rank: 0,
        mlp_only_layers: Vec::new(),
        mixers_without_mlp: false,
    })
}

/// The attention layers of an LFM2 config (see [`parse_short_conv`]).
fn lfm2_attention_layers(c: &Obj, layers: u64) -> Result<Vec<u64>, ConfigError> {
    if let Some(names) = c.layer_type_names(layers)? {
        let mut out = Vec::new();
        for (i, n) in names.iter().enumerate() {
            match *n {
                "full_attention" => out.push(i as u64),
                "conv" => {}
                other => {
                    return Err(bad(
                        c.key("layer_types"),
                        format!(
                            "layer {i} is \"{other}\": expected \"conv\" or \"full_attention\""
                        ),
                    ));
                }
            }
        }
        return Ok(out);
    }
    if c.raw("full_attn_idxs").is_some() {
        let mut v = c.layer_list("full_attn_idxs", layers)?;
        v.sort_unstable();
        v.dedup();
        return Ok(v);
    }
    Ok((0..layers).collect())
}

/// One Nemotron-H layer's block.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Block {
    Mamba,
    Attention,
    Mlp,
    /// Nemotron 3's 'E': a mixture of relu² experts and one shared expert, nothing else.
    Moe,
}

/// The key of Nemotron-H's layer layout.
const PATTERN: &str = "hybrid_override_pattern";

/// The blocks of a Nemotron-H config, from `hybrid_override_pattern` (else
/// `layers_block_type`), checked against `num_hidden_layers` when the config names it.
fn nemotron_blocks(c: &Obj) -> Result<Vec<Block>, ConfigError> {
    let (k, blocks) = if let Some(p) = c.text(PATTERN)? {
        if p.chars().count() as u64 > MAX_LAYERS {
            return Err(bad(
                c.key(PATTERN),
                format!("has more than {MAX_LAYERS} layers"),
            ));
        }
        let mut v = Vec::with_capacity(p.len());
        for (i, ch) in p.chars().enumerate() {
            v.push(match ch {
                'M' => Block::Mamba,
                '*' => Block::Attention,
                '-' => Block::Mlp,
                'E' => Block::Moe,
                other => {
                    return Err(bad(
                        c.key(PATTERN),
                        format!(
                            "layer {i} is '{}': expected 'M' (Mamba-2), '*' (attention), '-' (MLP) or 'E' (MoE)",
                            other.escape_default()
                        ),
                    ));
                }
            });
        }
        (PATTERN, v)
    } else {
        let k = "layers_block_type";
        match c.raw(k) {
            Some(Value::Array(a)) if a.len() as u64 <= MAX_LAYERS => {
                let mut v = Vec::with_capacity(a.len());
                for (i, t) in a.iter().enumerate() {
                    v.push(match t.as_str() {
                        Some("mamba" | "linear_attention") => Block::Mamba,
                        Some("attention" | "full_attention") => Block::Attention,
                        Some("mlp") => Block::Mlp,
                        Some("moe") => Block::Moe,
                        _ => {
                            return Err(bad(
                                c.key(k),
                                format!(
                                    "layer {i} is {}: expected \"mamba\", \"attention\", \"mlp\" or \"moe\"",
                                    describe(t)
                                ),
                            ));
                        }
                    });
                }
                (k, v)
            }
            Some(Value::Array(_)) => {
                return Err(bad(c.key(k), format!("has more than {MAX_LAYERS} layers")));
            }
            Some(other) => {
                return Err(bad(
                    c.key(k),
                    format!("expected a list, got {}", describe(other)),
                ));
            }
            None => return Err(ConfigError::MissingKey(c.key(PATTERN))),
        }
    };
    if blocks.is_empty() {
        return Err(bad(c.key(k), "names no layers"));
    }
    if let Some(n) = c.count("num_hidden_layers", 1, MAX_LAYERS)?
        && n != blocks.len() as u64
    {
        return Err(bad(
            c.key(k),
            format!("has {} layers but num_hidden_layers is {n}", blocks.len()),
        ));
    }
    Ok(blocks)
}

/// The Mamba-2 mixer of Nemotron-H's 'M' layers (see the module docs).
fn nemotron_mamba(c: &Obj) -> Result<RecurrentSpec, ConfigError> {
    let heads = c.req("mamba_num_heads", 1, MAX_HEADS)?;
    let head_dim = c.req("mamba_head_dim", 1, MAX_HEAD_DIM)?;
    if heads.saturating_mul(head_dim) > MAX_FFN {
        return Err(bad(
            c.key("mamba_num_heads"),
            format!("{heads} heads × {head_dim} mamba_head_dim is absurd"),
        ));
    }
    let groups = match c.count("n_groups", 1, heads)? {
        Some(g) => g,
        None => c
            .count("mamba_n_groups", 1, heads)?
            .unwrap_or(NEMOTRON_H_GROUPS.min(heads)),
    };
    if !heads.is_multiple_of(groups) {
        return Err(bad(
            c.key("n_groups"),
            format!("{groups} does not divide the {heads} Mamba heads"),
        ));
    }
    let conv_kernel = match c.count("conv_kernel", 1, MAX_STATE)? {
        Some(k) => k,
        None => c
            .count("mamba_d_conv", 1, MAX_STATE)?
            .unwrap_or(NEMOTRON_H_CONV_KERNEL),
    };
    let conv_bias = match c.flag("use_conv_bias")? {
        Some(b) => b,
        None => c.flag("mamba_conv_bias")?.unwrap_or(true),
    };
    Ok(RecurrentSpec {
        kind: RecurrentKind::Mamba2,
        attention_layers: Vec::new(),
        heads,
        head_dim,
        state: c.req("ssm_state_size", 1, MAX_STATE)?,
        groups,
        conv_kernel,
        conv_bias,
        proj_bias: c.flag("use_bias")?.unwrap_or(false),
        dt_rank: 0,
        mlp_only_layers: Vec::new(),
        mixers_without_mlp: true,
    })
}

/// The MoE block of Nemotron 3's 'E' layers (`None` without any), as transformers
/// `modeling_nemotron_h.py` `NemotronHMOE` builds it: `n_routed_experts` relu² experts of
/// `moe_intermediate_size` (up and down projections, `NemotronHMLP`), a router
/// (`NemotronHTopkRouter`: `weight` E × h and `e_score_correction_bias` E) choosing
/// `num_experts_per_tok`, and ONE shared `NemotronHMLP` of `moe_shared_expert_intermediate_size`
/// (llama.cpp `LLM_ARCH_NEMOTRON_H_MOE`: `ffn_up_shexp` / `ffn_down_shexp`, one of each). A
/// latent MoE (`moe_latent_size`, Nemotron 3 Super: the experts work in a narrower space behind
/// `fc1_latent_proj` / `fc2_latent_proj`) is refused.
fn nemotron_moe(c: &Obj, moe_layers: &[u64], layers: u64) -> Result<Option<MoeSpec>, ConfigError> {
    if moe_layers.is_empty() {
        return Ok(None);
    }
    if c.raw("moe_latent_size").is_some_and(|v| !v.is_null()) {
        return Err(bad(
            c.key("moe_latent_size"),
            "a latent mixture of experts (Nemotron 3 Super) is not modelled yet",
        ));
    }
    let experts = c.req("n_routed_experts", 1, MAX_EXPERTS)?;
    let shared_ffn = c
        .count("moe_shared_expert_intermediate_size", 0, MAX_FFN)?
        .unwrap_or(0);
    Ok(Some(MoeSpec {
        experts,
        active_experts: c.req("num_experts_per_tok", 1, experts)?,
        expert_ffn: c.req("moe_intermediate_size", 1, MAX_FFN)?,
        shared_experts: u64::from(shared_ffn > 0),
        shared_ffn,
        shared_expert_gate: false,
        first_dense_layers: 0,
        router_bias: true,
        sparse_step: 0,
        // Every layer that is not 'E' (their blocks have no MoE, or no feed-forward at all).
        dense_layers: (0..layers)
            .filter(|i| moe_layers.binary_search(i).is_err())
            .collect(),
    }))
}

/// The attention shape of Nemotron-H's '*' layers: (heads, KV heads, head_dim).
fn nemotron_attention(c: &Obj, hidden: u64) -> Result<(u64, u64, u64), ConfigError> {
    let (heads, kv_heads) = c.attention_heads()?;
    let head_dim = match c.count("head_dim", 1, MAX_HEAD_DIM)? {
        Some(d) => d,
        None => match c.count("attention_head_dim", 1, MAX_HEAD_DIM)? {
            Some(d) => d,
            None if hidden.is_multiple_of(heads) => hidden / heads,
            None => return Err(ConfigError::MissingKey(c.key("attention_head_dim"))),
        },
    };
    Ok((heads, kv_heads, head_dim))
}

/// A Nemotron-H config (`model_type` "nemotron_h") as an exact [`ModelSpec`]: each layer ONE
/// block after one RMSNorm, Mamba-2 ('M', a fixed state), GQA attention ('*', the KV cache),
/// a non-gated relu² MLP ('-') or a mixture of relu² experts ('E', Nemotron 3).
pub(super) fn parse_nemotron_h(
    c: &Obj,
    name: String,
    arch: String,
) -> Result<ModelSpec, ConfigError> {
    let hidden = c.req("hidden_size", 1, MAX_HIDDEN)?;
    let blocks = nemotron_blocks(c)?;
    let at = |b: Block| -> Vec<u64> {
        (0u64..)
            .zip(&blocks)
            .filter(|&(_, &x)| x == b)
            .map(|(i, _)| i)
            .collect()
    };
    let (mamba, attention, mlp) = (at(Block::Mamba), at(Block::Attention), at(Block::Mlp));
    let moe_layers = at(Block::Moe);
    let moe = nemotron_moe(c, &moe_layers, blocks.len() as u64)?;
    let mut recurrent = if mamba.is_empty() {
        RecurrentSpec {
            kind: RecurrentKind::Mamba2,
            mixers_without_mlp: true,
            ..RecurrentSpec::default()
        }
    } else {
        nemotron_mamba(c)?
    };
    let (heads, kv_heads, head_dim) = if attention.is_empty() {
        // No attention layer: the SSM's head shape, for the activation estimates.
        (recurrent.heads, recurrent.heads, recurrent.head_dim)
    } else {
        nemotron_attention(c, hidden)?
    };
    let intermediate = if mlp.is_empty() {
        c.count("intermediate_size", 1, MAX_FFN)?.unwrap_or(0)
    } else {
        c.req("intermediate_size", 1, MAX_FFN)?
    };
    let attention_bias = c.flag("attention_bias")?.unwrap_or(false);
    recurrent.attention_layers = attention;
    // An 'E' layer is a feed-forward-only layer whose feed-forward is the MoE block.
    let mut ffn_only = mlp;
    ffn_only.extend(&moe_layers);
    ffn_only.sort_unstable();
    recurrent.mlp_only_layers = ffn_only;
    Ok(ModelSpec {
        name,
        arch,
        layers: blocks.len() as u64,
        hidden,
        heads,
        kv_heads,
        head_dim,
        intermediate,
        vocab: c.req("vocab_size", 1, MAX_VOCAB)?,
        // NemotronHConfig's class default.
        tied_embeddings: c.flag("tie_word_embeddings")?.unwrap_or(false),
        qkv_bias: attention_bias,
        o_bias: attention_bias,
        mlp_bias: c.flag("mlp_bias")?.unwrap_or(false),
        qk_norm: false,
        attn_sinks: false,
        attn_output_gate: false,
        // NemotronHBlock: one RMSNorm before its one mixer.
        norms_per_layer: 1,
        mlp: MlpKind::Plain,
        moe,
        mla: None,
        sliding: None,
        recurrent: Some(recurrent),
        max_context: c
            .count("max_position_embeddings", 1, MAX_CONTEXT)?
            .unwrap_or(0),
        vision_params: 0,
        mtp_layers: 0,
        encoder: None,
        gemma3n: None,
        kv_shared_layers: 0,
        cross_attention_layers: 0,
        mtp_shares_embeddings: false,
        source: ShapeSource::Exact,
        nominal_params: None,
        file_weights: None,
    })
}
