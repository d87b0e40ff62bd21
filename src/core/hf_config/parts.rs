//! The architecture families and the optional blocks of a config: mixture of experts,
//! multi-head latent attention, sliding windows, a SigLIP vision tower.

use super::ConfigError;
use super::obj::Obj;
use crate::core::model::{IndexerSpec, MlaSpec, MoeSpec, SlidingWindow};
use crate::core::model_limits::{
    MAX_CONTEXT, MAX_EXPERTS, MAX_FFN, MAX_HEAD_DIM, MAX_HEADS, MAX_HIDDEN, MAX_LAYERS, MAX_RANK,
};

/// Architecture families with their own rules.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Family {
    Llama,
    Mistral,
    Mixtral,
    Qwen2,
    Qwen2Moe,
    Qwen3,
    Qwen3Moe,
    Qwen3Next,
    Jamba,
    Lfm2,
    /// LFM2's MoE members (`lfm2_moe`, LFM2-8B-A1B): LFM2's layers, the first
    /// `num_dense_layers` with a dense SwiGLU of `intermediate_size`, the rest MoE.
    Lfm2Moe,
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
    pub(super) fn of(model_type: &str) -> Family {
        match model_type {
            // Llama 3.2 Vision's text model (transformers `MllamaTextModel`): Llama's self-attention
            // layers; its cross-attention layers have the same q/k/v/o and MLP shapes.
            "llama" | "mllama_text_model" => Family::Llama,
            "mistral" => Family::Mistral,
            "mixtral" => Family::Mixtral,
            // Qwen2.5-VL's decoder is Qwen2's (transformers `modeling_qwen2_5_vl.py`
            // `Qwen2_5_VLAttention`: q/k/v with biases).
            "qwen2" | "qwen2_5_vl" | "qwen2_5_vl_text" => Family::Qwen2,
            "qwen2_moe" => Family::Qwen2Moe,
            "qwen3" => Family::Qwen3,
            "qwen3_moe" => Family::Qwen3Moe,
            // Qwen3.5 is Qwen3-Next's decoder: transformers `modular_qwen3_5_moe.py` builds
            // `Qwen3_5MoeAttention` on `Qwen3NextAttention` (q/k norms, gated output) and
            // `Qwen3_5MoeSparseMoeBlock` on `Qwen3NextSparseMoeBlock` (sigmoid-gated shared
            // expert); the dense `qwen3_5` shares the attention and Gated DeltaNet.
            "qwen3_next" | "qwen3_5" | "qwen3_5_text" | "qwen3_5_moe" | "qwen3_5_moe_text" => {
                Family::Qwen3Next
            }
            "jamba" => Family::Jamba,
            "lfm2" => Family::Lfm2,
            "lfm2_moe" => Family::Lfm2Moe,
            "gemma" => Family::Gemma,
            "gemma2" => Family::Gemma2,
            "gemma3" | "gemma3_text" => Family::Gemma3,
            "phi3" => Family::Phi3,
            "deepseek_v2" => Family::DeepseekV2,
            // DeepSeek-V3.2: V3's layout with the sparse-attention indexer.
            "deepseek_v3" | "deepseek_v32" => Family::DeepseekV3,
            "gpt_oss" => Family::GptOss,
            _ => Family::Other,
        }
    }

    pub(super) fn is_qwen(self) -> bool {
        matches!(
            self,
            Family::Qwen2 | Family::Qwen2Moe | Family::Qwen3 | Family::Qwen3Moe | Family::Qwen3Next
        )
    }

    pub(super) fn is_deepseek(self) -> bool {
        matches!(self, Family::DeepseekV2 | Family::DeepseekV3)
    }

    /// The class default of `tie_word_embeddings` (each `*Config.__init__` in transformers).
    pub(super) fn ties_by_default(self) -> bool {
        match self {
            // Lfm2Config: tie_word_embeddings=True.
            Family::Gemma | Family::Gemma2 | Family::Gemma3 | Family::Lfm2 | Family::Lfm2Moe => {
                true
            }
            // PretrainedConfig's default: an unknown arch's config.json without the key ties.
            Family::Other => true,
            _ => false,
        }
    }
}

/// The MoE block: experts (`num_local_experts` Mixtral/gpt-oss, `num_experts` Qwen-MoE,
/// `n_routed_experts` DeepSeek), top-k (`num_experts_per_tok`, gpt-oss also `experts_per_token`),
/// expert width (`moe_intermediate_size`, else `intermediate_size` for Mixtral/gpt-oss), shared
/// experts (`n_shared_experts` of the expert width, DeepSeek; one of
/// `shared_expert_intermediate_size` with a sigmoid gate, Qwen2-MoE) and the layer layout
/// (`first_k_dense_replace` + `moe_layer_freq`, DeepSeek; `decoder_sparse_step` +
/// `mlp_only_layers`, Qwen-MoE).
pub(super) fn parse_moe(c: &Obj, fam: Family, layers: u64) -> Result<Option<MoeSpec>, ConfigError> {
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
        None if fam.is_qwen() || fam.is_deepseek() || fam == Family::Lfm2Moe => {
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
        // Qwen2MoeSparseMoeBlock.shared_expert_gate: Linear(h, 1, bias=False); Qwen3-Next's
        // Qwen3NextSparseMoeBlock keeps it (modeling_qwen3_next.py).
        shared_expert_gate = matches!(fam, Family::Qwen2Moe | Family::Qwen3Next);
    }
    // Lfm2MoeDecoderLayer: `layer_idx >= num_dense_layers` takes the MoE block
    // (transformers `modeling_lfm2_moe.py`); DeepSeek: `first_k_dense_replace`.
    let first_dense_key = if fam == Family::Lfm2Moe {
        "num_dense_layers"
    } else {
        "first_k_dense_replace"
    };
    let first_dense_layers = c.count(first_dense_key, 0, layers)?.unwrap_or(0);
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
        // Lfm2MoeSparseMoeBlock: an `expert_bias` of E (fp32, in the checkpoint) when
        // `use_expert_bias`; its gate is Linear(h, E, bias=False).
        Family::Lfm2Moe => c.flag("use_expert_bias")?.unwrap_or(false),
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
pub(super) fn parse_mla(c: &Obj) -> Result<Option<MlaSpec>, ConfigError> {
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
        indexer: match c.count("index_n_heads", 1, MAX_HEADS)? {
            Some(heads) => Some(IndexerSpec {
                heads,
                head_dim: c.req("index_head_dim", 1, MAX_HEAD_DIM)?,
                topk: c.req("index_topk", 1, MAX_CONTEXT)?,
            }),
            None => None,
        },
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
pub(super) fn parse_sliding(
    c: &Obj,
    fam: Family,
    layers: u64,
) -> Result<Option<SlidingWindow>, ConfigError> {
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
pub(super) fn sliding_from_flags(window: u64, local: &[bool]) -> Option<SlidingWindow> {
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
pub(super) fn siglip_params(v: &Obj, text_hidden: u64) -> Result<u64, ConfigError> {
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
