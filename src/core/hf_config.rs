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

use super::model::{MlaSpec, MlpKind, ModelSpec, MoeSpec, ShapeSource, SlidingWindow};
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
    #[error("missing key \"{0}\"")]
    MissingKey(String),
    #[error("key \"{key}\": {message}")]
    BadValue { key: String, message: String },
}

/// `model_type`s with their own rules. Others parse as Llama-style decoders.
pub const SUPPORTED_ARCHS: &[&str] = &[
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "gemma",
    "gemma2",
    "gemma3",
    "gemma3_text",
    "phi3",
    "deepseek_v2",
    "deepseek_v3",
    "gpt_oss",
];

// Sanity bounds: one set for every reader (core::model_limits).
use super::model_limits::{
    MAX_CONTEXT, MAX_EXPERTS, MAX_FFN, MAX_HEAD_DIM, MAX_HEADS, MAX_HIDDEN, MAX_LAYERS, MAX_RANK,
    MAX_VOCAB,
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

/// transformers `SiglipVisionConfig` defaults (models/siglip/configuration_siglip.py).
const SIGLIP_VISION_DEFAULTS: &[(&str, u64)] = &[
    ("hidden_size", 768),
    ("intermediate_size", 3072),
    ("num_hidden_layers", 12),
    ("num_channels", 3),
    ("image_size", 224),
    ("patch_size", 16),
];

/// Architecture families with their own rules.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Family {
    Llama,
    Mistral,
    Mixtral,
    Qwen2,
    Qwen2Moe,
    Qwen3,
    Qwen3Moe,
    Gemma,
    Gemma2,
    Gemma3,
    Phi3,
    DeepseekV2,
    DeepseekV3,
    GptOss,
    Other,
}

impl Family {
    fn of(model_type: &str) -> Family {
        match model_type {
            "llama" => Family::Llama,
            "mistral" => Family::Mistral,
            "mixtral" => Family::Mixtral,
            "qwen2" => Family::Qwen2,
            "qwen2_moe" => Family::Qwen2Moe,
            "qwen3" => Family::Qwen3,
            "qwen3_moe" => Family::Qwen3Moe,
            "gemma" => Family::Gemma,
            "gemma2" => Family::Gemma2,
            "gemma3" | "gemma3_text" => Family::Gemma3,
            "phi3" => Family::Phi3,
            "deepseek_v2" => Family::DeepseekV2,
            "deepseek_v3" => Family::DeepseekV3,
            "gpt_oss" => Family::GptOss,
            _ => Family::Other,
        }
    }

    fn is_qwen(self) -> bool {
        matches!(
            self,
            Family::Qwen2 | Family::Qwen2Moe | Family::Qwen3 | Family::Qwen3Moe
        )
    }

    fn is_deepseek(self) -> bool {
        matches!(self, Family::DeepseekV2 | Family::DeepseekV3)
    }

    /// The class default of `tie_word_embeddings` (each `*Config.__init__` in transformers).
    fn ties_by_default(self) -> bool {
        match self {
            Family::Gemma | Family::Gemma2 | Family::Gemma3 => true,
            // PretrainedConfig's default: an unknown arch's config.json without the key ties.
            Family::Other => true,
            _ => false,
        }
    }
}

/// One JSON object being read, with the prefix its keys get in error messages and the
/// defaults for keys it may omit.
struct Obj<'a> {
    map: &'a Map<String, Value>,
    prefix: &'static str,
    defaults: &'static [(&'static str, u64)],
}

fn bad(key: String, message: impl Into<String>) -> ConfigError {
    ConfigError::BadValue {
        key,
        message: message.into(),
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("the string \"{}\"", s.chars().take(40).collect::<String>()),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// A JSON value as a whole non-negative number (`4096` or `4096.0`).
fn as_count(v: &Value) -> Result<u64, String> {
    match v {
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                Ok(u)
            } else if n.as_i64().is_some() {
                Err(format!("must not be negative, got {n}"))
            } else {
                match n.as_f64() {
                    Some(f) if f < 0.0 => Err(format!("must not be negative, got {n}")),
                    Some(f) if f.fract() == 0.0 && f <= 9_007_199_254_740_992.0 => Ok(f as u64),
                    _ => Err(format!("expected a whole number, got {n}")),
                }
            }
        }
        other => Err(format!("expected a number, got {}", describe(other))),
    }
}

impl<'a> Obj<'a> {
    fn key(&self, k: &str) -> String {
        format!("{}{}", self.prefix, k)
    }

    /// The value of `k`; null counts as absent (transformers treats `None` as "use the default").
    fn raw(&self, k: &str) -> Option<&'a Value> {
        match self.map.get(k) {
            None | Some(Value::Null) => None,
            Some(v) => Some(v),
        }
    }

    fn default_of(&self, k: &str) -> Option<u64> {
        self.defaults.iter().find(|(n, _)| *n == k).map(|&(_, v)| v)
    }

    /// An optional count within `[min, max]` (the class default when absent, if there is one).
    fn count(&self, k: &str, min: u64, max: u64) -> Result<Option<u64>, ConfigError> {
        let v = match self.raw(k) {
            None => return Ok(self.default_of(k)),
            Some(v) => as_count(v).map_err(|m| bad(self.key(k), m))?,
        };
        if v < min || v > max {
            return Err(bad(
                self.key(k),
                format!("must be between {min} and {max}, got {v}"),
            ));
        }
        Ok(Some(v))
    }

    /// A required count within `[min, max]`.
    fn req(&self, k: &str, min: u64, max: u64) -> Result<u64, ConfigError> {
        self.count(k, min, max)?
            .ok_or_else(|| ConfigError::MissingKey(self.key(k)))
    }

    fn flag(&self, k: &str) -> Result<Option<bool>, ConfigError> {
        match self.raw(k) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(bad(
                self.key(k),
                format!("expected true or false, got {}", describe(other)),
            )),
        }
    }

    fn text(&self, k: &str) -> Result<Option<&'a str>, ConfigError> {
        match self.raw(k) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(other) => Err(bad(
                self.key(k),
                format!("expected a string, got {}", describe(other)),
            )),
        }
    }

    /// A nested object (absent or null → None).
    fn object(&self, k: &str) -> Result<Option<&'a Map<String, Value>>, ConfigError> {
        match self.raw(k) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(other) => Err(bad(
                self.key(k),
                format!("expected an object, got {}", describe(other)),
            )),
        }
    }

    /// A list of layer indices, each below `layers`.
    fn layer_list(&self, k: &str, layers: u64) -> Result<Vec<u64>, ConfigError> {
        match self.raw(k) {
            None => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| {
                    let i = as_count(v).map_err(|m| bad(self.key(k), m))?;
                    if i >= layers {
                        return Err(bad(
                            self.key(k),
                            format!("layer {i} does not exist (the model has {layers} layers)"),
                        ));
                    }
                    Ok(i)
                })
                .collect(),
            Some(other) => Err(bad(
                self.key(k),
                format!("expected a list of layer numbers, got {}", describe(other)),
            )),
        }
    }

    /// `layer_types` as "is this layer sliding?" flags, when present.
    fn layer_types(&self, layers: u64) -> Result<Option<Vec<bool>>, ConfigError> {
        let k = "layer_types";
        let a = match self.raw(k) {
            None => return Ok(None),
            Some(Value::Array(a)) => a,
            Some(other) => {
                return Err(bad(
                    self.key(k),
                    format!("expected a list, got {}", describe(other)),
                ));
            }
        };
        if a.len() as u64 != layers {
            return Err(bad(
                self.key(k),
                format!("has {} entries for {layers} layers", a.len()),
            ));
        }
        a.iter()
            .map(|v| match v {
                // transformers: "sliding_attention" / "full_attention"; any other kind attends fully
                // as far as the cache is concerned.
                Value::String(s) => Ok(s == "sliding_attention"),
                other => Err(bad(
                    self.key(k),
                    format!("expected layer type names, got {}", describe(other)),
                )),
            })
            .collect::<Result<Vec<bool>, _>>()
            .map(Some)
    }
}

/// Parse a config.json text into an exact [`ModelSpec`] (see the module docs for the rules).
///
/// Errors: invalid JSON → [`ConfigError::Json`] with line:column; a required key absent →
/// [`ConfigError::MissingKey`] naming it (`text_config.` prefixed when nested); a value of the
/// wrong type, negative, fractional or absurd → [`ConfigError::BadValue`] naming the key.
pub fn parse_hf_config(text: &str) -> Result<ModelSpec, ConfigError> {
    let root: Value = serde_json::from_str(text).map_err(|e| {
        let (line, column) = (e.line(), e.column());
        let full = e.to_string();
        let suffix = format!(" at line {line} column {column}");
        let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
        ConfigError::Json {
            line,
            column,
            message,
        }
    })?;
    let Value::Object(root_map) = &root else {
        return Err(bad(
            "(top level)".into(),
            format!("expected an object {{…}}, got {}", describe(&root)),
        ));
    };
    let empty = Map::new();
    let top = Obj {
        map: root_map,
        prefix: "",
        defaults: &[],
    };
    let top_type = top.text("model_type")?.unwrap_or("").to_string();

    // Multimodal wrappers nest the language model in `text_config`.
    let text_cfg = top.object("text_config")?;
    let nested: Option<&Map<String, Value>> = if top_type == "gemma3" {
        // Gemma3Config builds a default Gemma3TextConfig when text_config is absent.
        Some(text_cfg.unwrap_or(&empty))
    } else if root_map.contains_key("num_hidden_layers") {
        None
    } else {
        text_cfg
    };
    let (c, kind) = match nested {
        Some(map) => {
            let probe = Obj {
                map,
                prefix: "text_config.",
                defaults: &[],
            };
            let kind = match probe.text("model_type")? {
                Some(t) => t.to_string(),
                None if top_type == "gemma3" => "gemma3_text".to_string(),
                None => top_type.clone(),
            };
            let defaults = if kind == "gemma3_text" {
                GEMMA3_TEXT_DEFAULTS
            } else {
                &[]
            };
            (
                Obj {
                    map,
                    prefix: "text_config.",
                    defaults,
                },
                kind,
            )
        }
        None => (
            Obj {
                map: root_map,
                prefix: "",
                defaults: &[],
            },
            top_type.clone(),
        ),
    };
    let fam = Family::of(&kind);

    // Shape.
    let hidden = c.req("hidden_size", 1, MAX_HIDDEN)?;
    let layers = c.req("num_hidden_layers", 1, MAX_LAYERS)?;
    let heads = c.req("num_attention_heads", 1, MAX_HEADS)?;
    let kv_heads = c.count("num_key_value_heads", 1, heads)?.unwrap_or(heads);
    if !heads.is_multiple_of(kv_heads) {
        return Err(bad(
            c.key("num_key_value_heads"),
            format!("{kv_heads} does not divide the {heads} attention heads"),
        ));
    }
    let mla = parse_mla(&c)?;
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
    let vocab = c.req("vocab_size", 1, MAX_VOCAB)?;
    let intermediate = c.count("intermediate_size", 1, MAX_FFN)?;
    let max_context = c
        .count("max_position_embeddings", 1, MAX_CONTEXT)?
        .unwrap_or(0);

    // Embeddings: the text config's key, else the wrapper's, else the class default.
    let tied = match c.flag("tie_word_embeddings")? {
        Some(t) => t,
        None => match nested {
            Some(_) => top
                .flag("tie_word_embeddings")?
                .unwrap_or(fam.ties_by_default()),
            None => fam.ties_by_default(),
        },
    };

    // Biases and norms, as each modeling_*.py builds them.
    let attention_bias = c.flag("attention_bias")?.unwrap_or(fam == Family::GptOss);
    let (qkv_bias, o_bias) = match fam {
        // Qwen2Attention: q/k/v Linear(bias=True), o_proj bias=False.
        Family::Qwen2 | Family::Qwen2Moe => (true, false),
        // Mistral, Mixtral and Phi-3 hard-code bias=False; DeepSeek's MLA projections have none.
        Family::Mistral
        | Family::Mixtral
        | Family::Phi3
        | Family::DeepseekV2
        | Family::DeepseekV3 => (false, false),
        // Llama, Qwen3, Gemma, gpt-oss and the rest: `attention_bias` on q, k, v and o.
        _ => (attention_bias, attention_bias),
    };
    let mlp_bias = match fam {
        // GptOssExperts: gate_up_proj_bias and down_proj_bias.
        Family::GptOss => true,
        Family::Llama | Family::Other => c.flag("mlp_bias")?.unwrap_or(false),
        _ => false,
    };
    let qk_norm = matches!(fam, Family::Qwen3 | Family::Qwen3Moe | Family::Gemma3);
    let norms_per_layer = if matches!(fam, Family::Gemma2 | Family::Gemma3) {
        4
    } else {
        2
    };

    let moe = parse_moe(&c, fam, layers)?;
    let sliding = parse_sliding(&c, fam, layers)?;

    // A dense MLP exists somewhere: its width is required.
    let spec_moe_layers = {
        let probe = ModelSpec {
            layers,
            moe: moe.clone(),
            ..ModelSpec::default()
        };
        probe.moe_layer_count()
    };
    let intermediate = match intermediate {
        Some(i) => i,
        None if spec_moe_layers < layers => {
            return Err(ConfigError::MissingKey(c.key("intermediate_size")));
        }
        None => 0,
    };

    // Gemma 3's vision tower (SigLIP) and projector live in the same checkpoint.
    let vision_params = if top_type == "gemma3" {
        let v = Obj {
            map: top.object("vision_config")?.unwrap_or(&empty),
            prefix: "vision_config.",
            defaults: SIGLIP_VISION_DEFAULTS,
        };
        siglip_params(&v, hidden)?
    } else {
        0
    };

    let mtp_layers = c
        .count("num_nextn_predict_layers", 0, MAX_LAYERS)?
        .unwrap_or(0);

    let arch = if !top_type.is_empty() {
        top_type.clone()
    } else if !kind.is_empty() {
        kind.clone()
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

    let spec = ModelSpec {
        name,
        arch,
        layers,
        hidden,
        heads,
        kv_heads,
        head_dim: match &mla {
            Some(m) => m.qk_nope_head_dim + m.qk_rope_head_dim,
            None => head_dim,
        },
        intermediate,
        vocab,
        tied_embeddings: tied,
        qkv_bias,
        o_bias,
        mlp_bias,
        qk_norm,
        attn_sinks: fam == Family::GptOss,
        norms_per_layer,
        mlp: MlpKind::Gated,
        moe,
        mla,
        sliding,
        max_context,
        vision_params,
        mtp_layers,
        source: ShapeSource::Exact,
        nominal_params: None,
        file_weights: None,
    };
    let total = spec.param_count().total;
    if total > MAX_PARAMS {
        return Err(bad(
            c.key("num_hidden_layers"),
            format!("this shape comes to {total} parameters, more than any real model (10^15)"),
        ));
    }
    Ok(spec)
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

/// The MoE block: experts (`num_local_experts` Mixtral/gpt-oss, `num_experts` Qwen-MoE,
/// `n_routed_experts` DeepSeek), top-k (`num_experts_per_tok`, gpt-oss also `experts_per_token`),
/// expert width (`moe_intermediate_size`, else `intermediate_size` for Mixtral/gpt-oss), shared
/// experts (`n_shared_experts` of the expert width, DeepSeek; one of
/// `shared_expert_intermediate_size` with a sigmoid gate, Qwen2-MoE) and the layer layout
/// (`first_k_dense_replace` + `moe_layer_freq`, DeepSeek; `decoder_sparse_step` +
/// `mlp_only_layers`, Qwen-MoE).
fn parse_moe(c: &Obj, fam: Family, layers: u64) -> Result<Option<MoeSpec>, ConfigError> {
    let mut experts = None;
    for k in ["num_local_experts", "num_experts", "n_routed_experts"] {
        if let Some(e) = c.count(k, 0, MAX_EXPERTS)? {
            experts = Some(e);
            break;
        }
    }
    let experts = match experts {
        Some(e) if e > 0 => e,
        // Qwen-MoE with num_experts 0 is dense.
        _ => return Ok(None),
    };
    let active = match c.count("num_experts_per_tok", 1, experts)? {
        Some(k) => k,
        None => c
            .count("experts_per_token", 1, experts)?
            .ok_or_else(|| ConfigError::MissingKey(c.key("num_experts_per_tok")))?,
    };
    let expert_ffn = match c.count("moe_intermediate_size", 1, MAX_FFN)? {
        Some(w) => w,
        None if fam.is_qwen() || fam.is_deepseek() => {
            return Err(ConfigError::MissingKey(c.key("moe_intermediate_size")));
        }
        None => c.req("intermediate_size", 1, MAX_FFN)?,
    };
    let mut shared_experts = c.count("n_shared_experts", 0, MAX_EXPERTS)?.unwrap_or(0);
    let mut shared_ffn = 0;
    let mut shared_expert_gate = false;
    if let Some(w) = c
        .count("shared_expert_intermediate_size", 0, MAX_FFN)?
        .filter(|&w| w > 0)
    {
        if shared_experts == 0 {
            shared_experts = 1;
        }
        shared_ffn = w;
        // Qwen2MoeSparseMoeBlock.shared_expert_gate: Linear(h, 1, bias=False).
        shared_expert_gate = fam == Family::Qwen2Moe;
    }
    let first_dense_layers = c.count("first_k_dense_replace", 0, layers)?.unwrap_or(0);
    let sparse_step = c.count("decoder_sparse_step", 0, layers)?.unwrap_or(1);
    let mut dense_layers = c.layer_list("mlp_only_layers", layers)?;
    if fam.is_deepseek() {
        // DeepseekV3DecoderLayer: MoE when i >= first_k_dense_replace and i % moe_layer_freq == 0.
        let freq = c.count("moe_layer_freq", 1, layers)?.unwrap_or(1);
        if freq > 1 {
            dense_layers.extend((first_dense_layers..layers).filter(|i| !i.is_multiple_of(freq)));
        }
    }
    dense_layers.sort_unstable();
    dense_layers.dedup();
    let router_bias = match fam {
        // GptOssTopKRouter: Linear(h, E) with bias.
        Family::GptOss => true,
        // DeepSeek-V3 "noaux_tc" routing keeps e_score_correction_bias (E) in the checkpoint.
        Family::DeepseekV3 => c.text("topk_method")?.unwrap_or("noaux_tc") == "noaux_tc",
        _ => false,
    };
    Ok(Some(MoeSpec {
        experts,
        active_experts: active,
        expert_ffn,
        shared_experts,
        shared_ffn,
        shared_expert_gate,
        first_dense_layers,
        router_bias,
        sparse_step,
        dense_layers,
    }))
}

/// Multi-head latent attention (DeepSeek-V2/V3): present when `kv_lora_rank` is.
fn parse_mla(c: &Obj) -> Result<Option<MlaSpec>, ConfigError> {
    let Some(kv_lora_rank) = c.count("kv_lora_rank", 1, MAX_RANK)? else {
        return Ok(None);
    };
    Ok(Some(MlaSpec {
        kv_lora_rank,
        // null (DeepSeek-V2-Lite) = full-rank queries.
        q_lora_rank: c.count("q_lora_rank", 0, MAX_RANK)?.unwrap_or(0),
        qk_rope_head_dim: c.req("qk_rope_head_dim", 1, MAX_HEAD_DIM)?,
        qk_nope_head_dim: c.req("qk_nope_head_dim", 0, MAX_HEAD_DIM)?,
        v_head_dim: c.req("v_head_dim", 1, MAX_HEAD_DIM)?,
    }))
}

/// Sliding-window attention, per family:
/// - Mistral (v0.1: 4096), Mixtral, Phi-3, unknown archs: `sliding_window` on every layer
///   (unless `use_sliding_window` is false, or `layer_types` says which).
/// - Qwen2/Qwen3(-MoE): only with `use_sliding_window: true` (the published configs carry a
///   `sliding_window` but set it false), on `layer_types`' sliding layers, else on layers
///   `i ≥ max_window_layers` (default 28), as `Qwen2Config` builds its `layer_types`.
/// - Gemma 2: every other layer from layer 0. Gemma 3: `layer_types`, else global every
///   `sliding_window_pattern` (default 6) layers. gpt-oss: `layer_types`, else alternating.
/// - Llama, Gemma 1, DeepSeek: none.
fn parse_sliding(c: &Obj, fam: Family, layers: u64) -> Result<Option<SlidingWindow>, ConfigError> {
    let window = c
        .count("sliding_window", 0, MAX_CONTEXT)?
        .filter(|&w| w > 0);
    let use_sw = c.flag("use_sliding_window")?;
    let types = c.layer_types(layers)?;
    let Some(window) = window else {
        return Ok(None);
    };
    let local: Vec<bool> = match fam {
        Family::Llama | Family::Gemma | Family::DeepseekV2 | Family::DeepseekV3 => return Ok(None),
        f if f.is_qwen() => {
            if use_sw != Some(true) {
                return Ok(None);
            }
            match types {
                Some(t) => t,
                None => {
                    let from = c
                        .count("max_window_layers", 0, MAX_LAYERS)?
                        .unwrap_or(28)
                        .min(layers);
                    (0..layers).map(|i| i >= from).collect()
                }
            }
        }
        Family::Gemma2 => {
            types.unwrap_or_else(|| (0..layers).map(|i| !(i + 1).is_multiple_of(2)).collect())
        }
        Family::Gemma3 => match types {
            Some(t) => t,
            None => {
                let p = match c.count("sliding_window_pattern", 1, MAX_LAYERS)? {
                    Some(p) => p,
                    None => c
                        .count("_sliding_window_pattern", 1, MAX_LAYERS)?
                        .unwrap_or(6),
                };
                (0..layers).map(|i| !(i + 1).is_multiple_of(p)).collect()
            }
        },
        Family::GptOss => {
            types.unwrap_or_else(|| (0..layers).map(|i| !(i + 1).is_multiple_of(2)).collect())
        }
        _ => {
            if use_sw == Some(false) {
                return Ok(None);
            }
            types.unwrap_or_else(|| vec![true; layers as usize])
        }
    };
    Ok(sliding_from_flags(window, &local))
}

/// Compress per-layer "is sliding" flags into a [`SlidingWindow`]: all layers, a period
/// (global when `(i + 1) % p == 0`), or (irregular patterns) a count of local layers.
fn sliding_from_flags(window: u64, local: &[bool]) -> Option<SlidingWindow> {
    let l = local.len() as u64;
    let n = local.iter().filter(|&&b| b).count() as u64;
    if n == 0 {
        return None;
    }
    if n == l {
        return Some(SlidingWindow {
            window,
            local_layers: l,
            period: 0,
        });
    }
    let period = (2..=l).find(|&p| {
        local
            .iter()
            .enumerate()
            .all(|(i, &b)| b != (i as u64 + 1).is_multiple_of(p))
    });
    match period {
        Some(p) => Some(SlidingWindow {
            window,
            local_layers: n,
            period: p,
        }),
        // Irregular: the count is exact, the positions are taken as the last layers.
        None => Some(SlidingWindow {
            window,
            local_layers: n,
            period: 0,
        }),
    }
}

/// Parameters of a SigLIP vision tower plus Gemma 3's multimodal projector
/// (transformers `modeling_siglip.py`, `modeling_gemma3.py`), with h_v = vision hidden,
/// I_v = vision MLP width, c channels, patch p, image s:
/// patch conv `h_v·c·p² + h_v`; position embedding `(s/p)²·h_v`; per layer q/k/v/o `4·(h_v² + h_v)`,
/// two LayerNorms `4·h_v`, MLP `h_v·I_v + I_v + I_v·h_v + h_v`; post LayerNorm `2·h_v`; the
/// attention-pooling head when `vision_use_head` (default true; Gemma 3 sets false);
/// projector `h_v·h_text` + soft-embedding RMSNorm `h_v`.
/// Gemma 3 4B: 416,866,032 + 2,950,272 = 419,816,304.
fn siglip_params(v: &Obj, text_hidden: u64) -> Result<u64, ConfigError> {
    let hv = v.req("hidden_size", 1, MAX_HIDDEN)?;
    let iv = v.req("intermediate_size", 1, MAX_FFN)?;
    let lv = v.req("num_hidden_layers", 0, MAX_LAYERS)?;
    let ch = v.req("num_channels", 1, 64)?;
    let img = v.req("image_size", 1, 1 << 16)?;
    let patch = v.req("patch_size", 1, 1 << 12)?;
    let use_head = v.flag("vision_use_head")?.unwrap_or(true);
    let m = |a: u64, b: u64| a.saturating_mul(b);
    let patches = m(img / patch, img / patch);
    let embed = m(m(hv, ch), m(patch, patch))
        .saturating_add(hv)
        .saturating_add(m(patches, hv));
    let mlp = m(hv, iv)
        .saturating_add(iv)
        .saturating_add(m(iv, hv))
        .saturating_add(hv);
    let layer = m(4, m(hv, hv).saturating_add(hv))
        .saturating_add(m(4, hv))
        .saturating_add(mlp);
    let head = if use_head {
        // probe + MultiheadAttention (in_proj 3h×h + 3h, out_proj h×h + h) + LayerNorm + MLP.
        hv.saturating_add(m(3, m(hv, hv).saturating_add(hv)))
            .saturating_add(m(hv, hv).saturating_add(hv))
            .saturating_add(m(2, hv))
            .saturating_add(mlp)
    } else {
        0
    };
    let projector = m(hv, text_hidden).saturating_add(hv);
    Ok(embed
        .saturating_add(m(lv, layer))
        .saturating_add(m(2, hv))
        .saturating_add(head)
        .saturating_add(projector))
}

#[cfg(test)]
mod tests {
    use super::*;

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
