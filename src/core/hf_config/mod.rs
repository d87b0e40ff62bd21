//! Parsing a Hugging Face `config.json` text into a [`ModelSpec`] (text in, spec out).
//!
//! Model types with their own rules (biases, norms, MoE layout, sliding windows, defaults):
//! [`SUPPORTED_ARCHS`]. Any other `model_type` with the standard keys (`hidden_size`,
//! `num_hidden_layers`, `num_attention_heads`, `intermediate_size`, `vocab_size`, optional
//! `num_key_value_heads`, `head_dim`, `attention_bias`, `mlp_bias`, `tie_word_embeddings`, MoE and
//! MLA keys) parses as a Llama-style decoder (gated MLP, two RMSNorms per layer).
//!
//! Missing keys: a top-level config.json written by `save_pretrained` holds every
//! model-specific key, so a missing one is an error naming it. Nested sub-configs are written
//! as a diff against their class defaults, so Gemma 3's `text_config` (and `vision_config`)
//! take transformers' `Gemma3TextConfig` (`SiglipVisionConfig`) defaults for the keys they omit.
//! `tie_word_embeddings` is left out by `save_pretrained` when it equals `PretrainedConfig`'s
//! default (true) and the class default, so an absent key means true for Gemma and for unknown
//! archs, and the class default (false) for the others listed.

use super::format::one_line;
use super::model::{MlaSpec, MlpKind, ModelSpec, MoeSpec, RecurrentSpec, ShapeSource};
use serde_json::{Map, Value};

/// What went wrong reading a config.json. Messages are written for users.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error("line {line}:{column}: invalid JSON: {message}")]
    Json {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("missing key \"{}\"", one_line(.0))]
    MissingKey(String),
    // The message may quote the file's own strings: shown escaped, on one line.
    #[error("key \"{}\": {}", one_line(.key), one_line(.message))]
    BadValue { key: String, message: String },
}

/// `model_type`s with their own rules. Others parse as Llama-style decoders.
pub const SUPPORTED_ARCHS: &[&str] = &[
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    // Qwen2.5-VL: Qwen2's decoder plus the vision tower of `vision.rs`.
    "qwen2_5_vl",
    // LLaVA-1.5: a Llama decoder in `text_config` plus the CLIP tower of `vision.rs`.
    "llava",
    // LLaVA-NeXT: LLaVA-1.5's tower with anyres tiling, a Mistral or Llama decoder.
    "llava_next",
    // Llama 3.2 Vision: a Llama decoder with cross-attention layers and a tiled ViT.
    "mllama",
    "qwen3",
    "qwen3_moe",
    "qwen3_next",
    "mamba2",
    "jamba",
    "lfm2",
    "nemotron_h",
    "gemma",
    "gemma2",
    "gemma3",
    "gemma3_text",
    // Its nested `text_config` ("gemma3n_text") is read by the same rules.
    "gemma3n",
    "phi3",
    "deepseek_v2",
    "deepseek_v3",
    "gpt_oss",
];

// Sanity bounds: one set for every reader (core::model_limits).
use super::model_limits::{
    MAX_CONTEXT, MAX_FFN, MAX_HEAD_DIM, MAX_HEADS, MAX_HIDDEN, MAX_LAYERS, MAX_VOCAB,
};
/// No real model comes near 10^15 parameters (the largest published are ~10^12).
const MAX_PARAMS: u64 = 1_000_000_000_000_000;

/// transformers `Gemma3TextConfig.__init__` defaults (models/gemma3/configuration_gemma3.py),
/// which the nested `text_config` of a Gemma 3 checkpoint leaves out (gemma-3-4b-it names only
/// hidden_size, intermediate_size, num_hidden_layers, rope_scaling and sliding_window).
const GEMMA3_TEXT_DEFAULTS: &[(&str, u64)] = &[
    ("vocab_size", 262_208),
    ("hidden_size", 2304),
    ("intermediate_size", 9216),
    ("num_hidden_layers", 26),
    ("num_attention_heads", 8),
    ("num_key_value_heads", 4),
    ("head_dim", 256),
    ("max_position_embeddings", 131_072),
    ("sliding_window", 4096),
    ("sliding_window_pattern", 6),
];

/// transformers `LlamaConfig.__init__` defaults (models/llama/configuration_llama.py), which the
/// nested `text_config` of a LLaVA checkpoint leaves out (llava-1.5-7b-hf names only
/// max_position_embeddings, rms_norm_eps and vocab_size).
pub(crate) const LLAMA_TEXT_DEFAULTS: &[(&str, u64)] = &[
    ("vocab_size", 32_000),
    ("hidden_size", 4096),
    ("intermediate_size", 11_008),
    ("num_hidden_layers", 32),
    ("num_attention_heads", 32),
    ("max_position_embeddings", 2048),
];

/// transformers `MistralConfig.__init__` defaults (models/mistral/configuration_mistral.py), which
/// llava-v1.6-mistral-7b-hf's `text_config` leaves out (its `sliding_window` is null: none).
pub(crate) const MISTRAL_TEXT_DEFAULTS: &[(&str, u64)] = &[
    ("vocab_size", 32_000),
    ("hidden_size", 4096),
    ("intermediate_size", 14_336),
    ("num_hidden_layers", 32),
    ("num_attention_heads", 32),
    ("num_key_value_heads", 8),
    ("max_position_embeddings", 131_072),
];

/// transformers `SiglipVisionConfig` defaults (models/siglip/configuration_siglip.py).
const SIGLIP_VISION_DEFAULTS: &[(&str, u64)] = &[
    ("hidden_size", 768),
    ("intermediate_size", 3072),
    ("num_hidden_layers", 12),
    ("num_channels", 3),
    ("image_size", 224),
    ("patch_size", 16),
];

mod encoder;
mod gemma3n;
mod hybrid;
mod hybrid_blocks;
mod obj;
mod parts;
mod vision;

pub use vision::{DYNAMIC_DEFAULT_SIDE, vision_tower};

use obj::{Obj, bad, describe};
use parts::{Family, parse_mla, parse_moe, parse_sliding, siglip_params};

/// Parse a config.json text into an exact [`ModelSpec`] (see the module docs for the rules).
///
/// Errors: invalid JSON → [`ConfigError::Json`] with line:column; a required key absent →
/// [`ConfigError::MissingKey`] naming it (`text_config.` prefixed when nested); a value of the
/// wrong type, negative, fractional or absurd → [`ConfigError::BadValue`] naming the key.
pub fn parse_hf_config(text: &str) -> Result<ModelSpec, ConfigError> {
    parse_hf_config_value(&parse_json(text)?)
}

/// [`parse_hf_config`] of an already parsed config.json (callers that read the JSON once for
/// other keys too, or with their own bounds on what a file may hold).
pub fn parse_hf_config_value(root: &Value) -> Result<ModelSpec, ConfigError> {
    let Value::Object(root_map) = root else {
        return Err(bad(
            "(top level)".into(),
            format!("expected an object {{…}}, got {}", describe(root)),
        ));
    };
    let empty = Map::new();
    let top = Obj {
        map: root_map,
        prefix: "",
        defaults: &[],
    };
    let top_type = top.text("model_type")?.unwrap_or("").to_string();
    let text = language_model(&top, &top_type, &empty)?;
    let c = &text.obj;
    let fam = Family::of(&text.kind);
    let (name, arch) = name_and_arch(&top, &top_type, &text.kind)?;
    if text.kind == "mamba2" {
        return checked(hybrid::parse_mamba2(c, name, arch)?, c);
    }
    if encoder::is_encoder(&text.kind) {
        return checked(encoder::parse_bert(c, name, arch)?, c);
    }
    if text.kind == "nemotron_h" {
        return checked(hybrid_blocks::parse_nemotron_h(c, name, arch)?, c);
    }
    if text.kind == "gemma3n_text" {
        return checked(gemma3n::parse_gemma3n(c, &top, name, arch)?, c);
    }

    let shape = Shape::read(c)?;
    let tied = tied_embeddings(c, &top, text.nested, fam)?;
    let biases = Biases::read(c, fam)?;
    let mut moe = parse_moe(c, fam, shape.layers)?;
    if fam == Family::Jamba {
        moe = hybrid::jamba_moe_layout(c, moe, shape.layers)?;
    }
    let sliding = parse_sliding(c, fam, shape.layers)?;
    let intermediate = if fam == Family::Lfm2 {
        hybrid_blocks::lfm2_mlp_width(c, shape.intermediate)?
    } else {
        dense_width(c, shape.layers, shape.intermediate, &moe)?
    };
    let vision_params = vision_params(root, &top, &top_type, shape.hidden)?;
    let mtp_layers = mtp_layers(c)?;
    let recurrent = recurrent_layers(c, fam, &shape)?;
    let attn_output_gate = match c.flag("attn_output_gate")? {
        Some(g) => g,
        // Qwen3NextAttention always gates (q_proj is 2·n_h·d wide).
        None => fam == Family::Qwen3Next,
    };

    // The file's own strings become labels and one-line summaries: control characters escaped.
    let spec = ModelSpec {
        name,
        arch,
        layers: shape.layers,
        hidden: shape.hidden,
        heads: shape.heads,
        kv_heads: shape.kv_heads,
        head_dim: match &shape.mla {
            Some(m) => m.qk_nope_head_dim + m.qk_rope_head_dim,
            None => shape.head_dim,
        },
        intermediate,
        vocab: shape.vocab,
        tied_embeddings: tied,
        qkv_bias: biases.qkv,
        o_bias: biases.o,
        mlp_bias: biases.mlp,
        qk_norm: biases.qk_norm,
        attn_sinks: fam == Family::GptOss,
        attn_output_gate,
        norms_per_layer: biases.norms_per_layer,
        mlp: MlpKind::Gated,
        moe,
        mla: shape.mla,
        sliding,
        recurrent,
        max_context: shape.max_context,
        vision_params,
        mtp_layers,
        encoder: None,
        gemma3n: None,
        kv_shared_layers: 0,
        // Llama 3.2 Vision: the text model's layers that attend to the image tokens.
        cross_attention_layers: c.layer_list("cross_attention_layers", shape.layers)?.len() as u64,
        // Qwen3.5: `mtp_use_dedicated_embeddings` false (its class default) = the MTP layer reads
        // the model's embedding and head.
        mtp_shares_embeddings: mtp_layers > 0
            && c.flag("mtp_use_dedicated_embeddings")? == Some(false),
        source: ShapeSource::Exact,
        nominal_params: None,
        file_weights: None,
    };
    checked(spec, c)
}

/// The parameters of a vision tower stored in the same checkpoint as the language model:
/// Gemma 3's SigLIP tower and projector, Qwen2.5-VL's tower; 0 for a text-only config.
fn vision_params(root: &Value, top: &Obj, top_type: &str, hidden: u64) -> Result<u64, ConfigError> {
    if top_type == "gemma3" {
        let empty = Map::new();
        let v = Obj {
            map: top.object("vision_config")?.unwrap_or(&empty),
            prefix: "vision_config.",
            defaults: SIGLIP_VISION_DEFAULTS,
        };
        return siglip_params(&v, hidden);
    }
    Ok(vision::vision_tower(root)?.map_or(0, |t| t.params))
}

/// Multi-token-prediction layers: DeepSeek `num_nextn_predict_layers`, Qwen3.5
/// `mtp_num_hidden_layers`.
fn mtp_layers(c: &Obj) -> Result<u64, ConfigError> {
    Ok(match c.count("num_nextn_predict_layers", 0, MAX_LAYERS)? {
        Some(n) => n,
        None => c
            .count("mtp_num_hidden_layers", 0, MAX_LAYERS)?
            .unwrap_or(0),
    })
}

/// The recurrent (non-attention) layers of a hybrid: Jamba's Mamba layers, LFM2's short
/// convolutions, or the linear-attention layers of Qwen3-Next and kin.
fn recurrent_layers(
    c: &Obj,
    fam: Family,
    shape: &Shape,
) -> Result<Option<RecurrentSpec>, ConfigError> {
    if fam == Family::Jamba {
        Ok(Some(hybrid::parse_jamba(c, shape.layers, shape.hidden)?))
    } else if matches!(fam, Family::Lfm2 | Family::Lfm2Moe) {
        Ok(Some(hybrid_blocks::parse_short_conv(
            c,
            shape.layers,
            shape.hidden,
        )?))
    } else {
        hybrid::parse_linear_attention(c, shape.layers)
    }
}

/// The spec, unless its shape comes to more parameters than any real model.
fn checked(spec: ModelSpec, c: &Obj) -> Result<ModelSpec, ConfigError> {
    let total = spec.param_count().total;
    if total > MAX_PARAMS {
        return Err(bad(
            c.key("num_hidden_layers"),
            format!("this shape comes to {total} parameters, more than any real model (10^15)"),
        ));
    }
    Ok(spec)
}

/// The display name (`_name_or_path`, else the arch) and the arch (`model_type`), control
/// characters escaped: the file's own strings become labels and one-line summaries.
fn name_and_arch(
    top: &Obj,
    top_type: &str,
    text_kind: &str,
) -> Result<(String, String), ConfigError> {
    let arch = if !top_type.is_empty() {
        top_type.to_string()
    } else if !text_kind.is_empty() {
        text_kind.to_string()
    } else {
        "unknown".to_string()
    };
    let name = match top
        .text("_name_or_path")?
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        Some(p) => display_name(p),
        None => format!("{arch} (config.json)"),
    };
    Ok((one_line(&name).into_owned(), one_line(&arch).into_owned()))
}

/// The JSON value of the text, errors with line:column.
fn parse_json(text: &str) -> Result<Value, ConfigError> {
    serde_json::from_str(text).map_err(|e| {
        let (line, column) = (e.line(), e.column());
        let full = e.to_string();
        let suffix = format!(" at line {line} column {column}");
        let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
        ConfigError::Json {
            line,
            column,
            message,
        }
    })
}

/// The language model's config: the top level, or `text_config` in a multimodal wrapper.
struct TextConfig<'a> {
    obj: Obj<'a>,
    /// Its `model_type` (the wrapper's when it has none).
    kind: String,
    /// Whether it is nested in `text_config`.
    nested: bool,
}

/// Multimodal wrappers nest the language model in `text_config`.
fn language_model<'a>(
    top: &Obj<'a>,
    top_type: &str,
    empty: &'a Map<String, Value>,
) -> Result<TextConfig<'a>, ConfigError> {
    let text_cfg = top.object("text_config")?;
    let nested: Option<&Map<String, Value>> = if top_type == "gemma3" || top_type == "gemma3n" {
        // Gemma3Config (Gemma3nConfig) builds a default text config when text_config is absent.
        Some(text_cfg.unwrap_or(empty))
    } else if top.map.contains_key("num_hidden_layers") {
        None
    } else {
        text_cfg
    };
    let Some(map) = nested else {
        return Ok(TextConfig {
            obj: Obj {
                map: top.map,
                prefix: "",
                defaults: &[],
            },
            kind: top_type.to_string(),
            nested: false,
        });
    };
    let probe = Obj {
        map,
        prefix: "text_config.",
        defaults: &[],
    };
    let kind = match probe.text("model_type")? {
        Some(t) => t.to_string(),
        None if top_type == "gemma3" => "gemma3_text".to_string(),
        None if top_type == "gemma3n" => "gemma3n_text".to_string(),
        None => top_type.to_string(),
    };
    let defaults = match kind.as_str() {
        "gemma3_text" => GEMMA3_TEXT_DEFAULTS,
        // LlavaConfig builds its text config from the class defaults for the keys it omits.
        "llama" if top_type == "llava" || top_type == "llava_next" => LLAMA_TEXT_DEFAULTS,
        "mistral" if top_type == "llava_next" => MISTRAL_TEXT_DEFAULTS,
        "gemma3n_text" => gemma3n::GEMMA3N_TEXT_DEFAULTS,
        _ => &[],
    };
    Ok(TextConfig {
        obj: Obj {
            map,
            prefix: "text_config.",
            defaults,
        },
        kind,
        nested: true,
    })
}

/// The attention and width keys of the language model.
struct Shape {
    hidden: u64,
    layers: u64,
    heads: u64,
    kv_heads: u64,
    mla: Option<MlaSpec>,
    /// 0 with MLA (its heads are sized by the MLA keys).
    head_dim: u64,
    vocab: u64,
    /// Required only where a dense MLP exists ([`dense_width`]).
    intermediate: Option<u64>,
    max_context: u64,
}

impl Shape {
    fn read(c: &Obj) -> Result<Shape, ConfigError> {
        let hidden = c.req("hidden_size", 1, MAX_HIDDEN)?;
        let layers = c.req("num_hidden_layers", 1, MAX_LAYERS)?;
        let (heads, kv_heads) = c.attention_heads()?;
        let mla = parse_mla(c)?;
        let head_dim = match c.count("head_dim", 1, MAX_HEAD_DIM)? {
            Some(d) => d,
            // MLA sizes its heads with qk_nope_head_dim + qk_rope_head_dim and v_head_dim.
            None if mla.is_some() => 0,
            None if hidden.is_multiple_of(heads) => hidden / heads,
            None => {
                return Err(bad(
                    c.key("num_attention_heads"),
                    format!(
                        "hidden_size {hidden} is not a multiple of {heads} heads, and there is no head_dim"
                    ),
                ));
            }
        };
        Ok(Shape {
            hidden,
            layers,
            heads,
            kv_heads,
            mla,
            head_dim,
            vocab: c.req("vocab_size", 1, MAX_VOCAB)?,
            intermediate: c.count("intermediate_size", 1, MAX_FFN)?,
            max_context: c
                .count("max_position_embeddings", 1, MAX_CONTEXT)?
                .unwrap_or(0),
        })
    }
}

/// Embeddings: the text config's key, else the wrapper's, else the class default.
fn tied_embeddings(c: &Obj, top: &Obj, nested: bool, fam: Family) -> Result<bool, ConfigError> {
    // Lfm2Config: `kwargs.get("tie_embedding", tie_word_embeddings)`, the original key first.
    if matches!(fam, Family::Lfm2 | Family::Lfm2Moe)
        && let Some(t) = c.flag("tie_embedding")?
    {
        return Ok(t);
    }
    Ok(match c.flag("tie_word_embeddings")? {
        Some(t) => t,
        None if nested => top
            .flag("tie_word_embeddings")?
            .unwrap_or(fam.ties_by_default()),
        None => fam.ties_by_default(),
    })
}

/// Biases and norms, as each modeling_*.py builds them.
struct Biases {
    qkv: bool,
    o: bool,
    mlp: bool,
    qk_norm: bool,
    norms_per_layer: u64,
}

impl Biases {
    fn read(c: &Obj, fam: Family) -> Result<Biases, ConfigError> {
        let attention_bias = c.flag("attention_bias")?.unwrap_or(fam == Family::GptOss);
        let (qkv, o) = match fam {
            // Qwen2Attention: q/k/v Linear(bias=True), o_proj bias=False.
            Family::Qwen2 | Family::Qwen2Moe => (true, false),
            // Mistral, Mixtral and Phi-3 hard-code bias=False; DeepSeek's MLA projections have
            // none.
            Family::Mistral
            | Family::Mixtral
            | Family::Phi3
            | Family::DeepseekV2
            | Family::DeepseekV3 => (false, false),
            // Llama, Qwen3, Gemma, gpt-oss and the rest: `attention_bias` on q, k, v and o.
            _ => (attention_bias, attention_bias),
        };
        let mlp = match fam {
            // GptOssExperts: gate_up_proj_bias and down_proj_bias.
            Family::GptOss => true,
            Family::Llama | Family::Other => c.flag("mlp_bias")?.unwrap_or(false),
            _ => false,
        };
        Ok(Biases {
            qkv,
            o,
            mlp,
            qk_norm: matches!(
                fam,
                Family::Qwen3
                    | Family::Qwen3Moe
                    | Family::Qwen3Next
                    | Family::Gemma3
                    | Family::Lfm2
                    | Family::Lfm2Moe
            ),
            norms_per_layer: if matches!(fam, Family::Gemma2 | Family::Gemma3) {
                4
            } else {
                2
            },
        })
    }
}

/// The dense MLP's width: required when a dense MLP exists somewhere, else 0.
fn dense_width(
    c: &Obj,
    layers: u64,
    intermediate: Option<u64>,
    moe: &Option<MoeSpec>,
) -> Result<u64, ConfigError> {
    let moe_layers = ModelSpec {
        layers,
        moe: moe.clone(),
        ..ModelSpec::default()
    }
    .moe_layer_count();
    match intermediate {
        Some(i) => Ok(i),
        None if moe_layers < layers => Err(ConfigError::MissingKey(c.key("intermediate_size"))),
        None => Ok(0),
    }
}

/// `_name_or_path` as a name: a hub id (`org/model`) as is, a local path by its last part.
fn display_name(p: &str) -> String {
    let local = p.starts_with('/')
        || p.starts_with('.')
        || p.starts_with('~')
        || p.contains('\\')
        || p.contains(':');
    if local {
        p.rsplit(['/', '\\'])
            .find(|s| !s.is_empty())
            .unwrap_or(p)
            .to_string()
    } else {
        p.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::obj::as_count;
    use super::parts::sliding_from_flags;
    use super::*;
    use crate::core::model::SlidingWindow;

    #[test]
    fn counts_accept_whole_floats_and_reject_the_rest() {
        assert_eq!(as_count(&serde_json::json!(4096)), Ok(4096));
        assert_eq!(as_count(&serde_json::json!(4096.0)), Ok(4096));
        assert!(
            as_count(&serde_json::json!(-1))
                .unwrap_err()
                .contains("negative")
        );
        assert!(
            as_count(&serde_json::json!(-1.5))
                .unwrap_err()
                .contains("negative")
        );
        assert!(
            as_count(&serde_json::json!(40.5))
                .unwrap_err()
                .contains("whole")
        );
        assert!(
            as_count(&serde_json::json!("4096"))
                .unwrap_err()
                .contains("string")
        );
        assert!(
            as_count(&serde_json::json!(true))
                .unwrap_err()
                .contains("true")
        );
    }

    #[test]
    fn sliding_flags_compress_to_a_period() {
        // Gemma 3: five local then one global.
        let f: Vec<bool> = (0..34u64).map(|i| !(i + 1).is_multiple_of(6)).collect();
        assert_eq!(
            sliding_from_flags(1024, &f),
            Some(SlidingWindow {
                window: 1024,
                local_layers: 29,
                period: 6
            })
        );
        let all = vec![true; 32];
        assert_eq!(
            sliding_from_flags(4096, &all),
            Some(SlidingWindow {
                window: 4096,
                local_layers: 32,
                period: 0
            })
        );
        assert_eq!(sliding_from_flags(4096, &[false; 8]), None);
        // Irregular: exact count, no period.
        let odd = [true, false, false, true, true, false];
        assert_eq!(
            sliding_from_flags(64, &odd),
            Some(SlidingWindow {
                window: 64,
                local_layers: 3,
                period: 0
            })
        );
    }

    #[test]
    fn local_paths_become_their_last_part() {
        assert_eq!(
            display_name("meta-llama/Meta-Llama-3-8B"),
            "meta-llama/Meta-Llama-3-8B"
        );
        assert_eq!(display_name("/home/me/models/my-llama/"), "my-llama");
        assert_eq!(display_name("C:\\models\\qwen"), "qwen");
    }
}
