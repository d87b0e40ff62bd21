//! Model architecture (`ModelSpec`), its tensor inventory and exact parameter count.
//!
//! The parameter count is the sum of a tensor inventory (embedding, per-layer attention, MLP or
//! experts, norms, output head), so the same inventory drives weight bytes for mixed-precision
//! formats (GGUF k-quant mixes keep some tensors at higher types).

use super::precision::TensorClass;
use serde::{Deserialize, Serialize};

/// How a shape was obtained.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum ShapeSource {
    /// From a config.json / GGUF / preset: exact.
    #[default]
    Exact,
    /// Derived from a parameter count by [`ModelSpec::generic`]: plausible, not exact.
    Estimated,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum MlpKind {
    /// SwiGLU / GeGLU: gate, up and down projections (3 matrices).
    #[default]
    Gated,
    /// GELU/ReLU MLP: up and down (2 matrices).
    Plain,
}

/// Mixture of experts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct MoeSpec {
    /// Routed experts per MoE layer.
    pub experts: u64,
    /// Experts active per token (top-k).
    pub active_experts: u64,
    /// FFN width of one routed expert.
    pub expert_ffn: u64,
    /// Shared (always active) experts per MoE layer.
    pub shared_experts: u64,
    /// FFN width of one shared expert (0 = same as `expert_ffn`).
    pub shared_ffn: u64,
    /// A sigmoid gate on the shared expert output (Qwen2-MoE: `shared_expert_gate`, h → 1).
    pub shared_expert_gate: bool,
    /// The first k layers keep a dense MLP of `intermediate` width (DeepSeek `first_k_dense_replace`).
    pub first_dense_layers: u64,
    /// Router has a bias (gpt-oss) or a correction bias (DeepSeek-V3 `e_score_correction_bias`).
    pub router_bias: bool,
}

/// Multi-head latent attention (DeepSeek-V2/V3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct MlaSpec {
    pub kv_lora_rank: u64,
    /// 0 = queries are not low-rank (DeepSeek-V2-Lite).
    pub q_lora_rank: u64,
    pub qk_rope_head_dim: u64,
    pub qk_nope_head_dim: u64,
    pub v_head_dim: u64,
}

/// Sliding-window attention: `local_layers` of the layers attend to at most `window` tokens.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct SlidingWindow {
    pub window: u64,
    /// How many layers are local (sliding). Mistral v0.1: all; Gemma 2: half; Gemma 3: 5 of 6.
    pub local_layers: u64,
}

/// A decoder-only transformer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelSpec {
    pub name: String,
    /// Hugging Face `model_type` (llama, qwen2, …) or GGUF `general.architecture`.
    pub arch: String,
    pub layers: u64,
    pub hidden: u64,
    pub heads: u64,
    pub kv_heads: u64,
    /// Per-head dimension, explicit (Gemma: 256 with hidden 3072 / 16 heads ≠ 192).
    pub head_dim: u64,
    /// Dense MLP width.
    pub intermediate: u64,
    pub vocab: u64,
    pub tied_embeddings: bool,
    /// Biases on q, k, v (Qwen2, gpt-oss).
    pub qkv_bias: bool,
    /// Bias on the attention output projection (gpt-oss).
    pub o_bias: bool,
    /// Biases on the MLP / expert projections (gpt-oss).
    pub mlp_bias: bool,
    /// Per-head RMSNorm on q and k (Qwen3, Gemma 3).
    pub qk_norm: bool,
    /// Learned attention sinks, one per head (gpt-oss).
    pub attn_sinks: bool,
    /// Norm vectors of size `hidden` per layer (2 for Llama; 4 for Gemma 2/3).
    pub norms_per_layer: u64,
    pub mlp: MlpKind,
    pub moe: Option<MoeSpec>,
    pub mla: Option<MlaSpec>,
    pub sliding: Option<SlidingWindow>,
    /// Longest context the model was trained for (`max_position_embeddings`).
    pub max_context: u64,
    pub source: ShapeSource,
    /// A parameter count given by the user (the slider); when set it is the total, and the shape is
    /// only used for the KV cache and activations.
    pub nominal_params: Option<u64>,
    /// Exact weight bytes from a model file (GGUF/safetensors), overriding the precision estimate.
    pub file_weights: Option<FileWeights>,
}

/// Weights read from a model file: exact bytes and parameter count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct FileWeights {
    /// The file (or folder) the numbers were read from, for provenance.
    pub path: String,
    /// Total bytes of all tensors as stored.
    pub total_bytes: u64,
    /// Total elements of all tensors.
    pub params: u64,
    /// Bytes of the repeated layer tensors (`blk.N.*` / `model.layers.N.*`), all layers together.
    pub layer_bytes: u64,
    /// Extra bytes the runtime allocates beyond the file (llama.cpp: a tied quantised embedding
    /// loaded again as the output matrix on the GPU).
    pub runtime_extra_bytes: u64,
    /// A short description: "GGUF Q4_K_M (mostly Q4_K)", "safetensors BF16".
    pub format: String,
}

impl Default for ModelSpec {
    fn default() -> Self {
        // Llama-3-8B (meta-llama/Meta-Llama-3-8B config.json).
        ModelSpec {
            name: "Llama 3 8B".into(),
            arch: "llama".into(),
            layers: 32,
            hidden: 4096,
            heads: 32,
            kv_heads: 8,
            head_dim: 128,
            intermediate: 14336,
            vocab: 128256,
            tied_embeddings: false,
            qkv_bias: false,
            o_bias: false,
            mlp_bias: false,
            qk_norm: false,
            attn_sinks: false,
            norms_per_layer: 2,
            mlp: MlpKind::Gated,
            moe: None,
            mla: None,
            sliding: None,
            max_context: 8192,
            source: ShapeSource::Exact,
            nominal_params: None,
            file_weights: None,
        }
    }
}

/// Total and active (per token, MoE) parameters.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ParamCount {
    pub total: u64,
    pub active: u64,
}

/// One class of tensors and how many elements it holds in one layer (or outside the layers).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TensorGroup {
    pub class: TensorClass,
    /// Elements of this group in ONE layer (or in total for non-layer groups).
    pub elements: u64,
    /// Elements active per token (MoE: top-k experts only).
    pub active_elements: u64,
    /// A matrix's row length (for block-quant rounding); 0 = vector.
    pub row: u64,
}

impl ModelSpec {
    fn m(a: u64, b: u64) -> u64 {
        a.saturating_mul(b)
    }

    /// Whether layer `i` uses the MoE block.
    pub fn is_moe_layer(&self, i: u64) -> bool {
        match &self.moe {
            Some(m) => i >= m.first_dense_layers,
            None => false,
        }
    }

    /// The tensors of layer `i`, grouped by class.
    pub fn layer_tensors(&self, i: u64) -> Vec<TensorGroup> {
        let h = self.hidden;
        let mut v = Vec::with_capacity(8);
        let g = |class, elements, row| TensorGroup { class, elements, active_elements: elements, row };
        // Attention.
        if let Some(mla) = &self.mla {
            let qk = mla.qk_nope_head_dim.saturating_add(mla.qk_rope_head_dim);
            let q = if mla.q_lora_rank > 0 {
                Self::m(h, mla.q_lora_rank)
                    .saturating_add(Self::m(mla.q_lora_rank, Self::m(self.heads, qk)))
            } else {
                Self::m(h, Self::m(self.heads, qk))
            };
            v.push(g(TensorClass::AttnQ, q, h));
            // kv_a_proj_with_mqa: h → kv_lora_rank + rope; kv_b_proj: kv_lora_rank → heads·(nope + v).
            v.push(g(TensorClass::AttnK, Self::m(h, mla.kv_lora_rank.saturating_add(mla.qk_rope_head_dim)), h));
            v.push(g(
                TensorClass::AttnV,
                Self::m(mla.kv_lora_rank, Self::m(self.heads, mla.qk_nope_head_dim.saturating_add(mla.v_head_dim))),
                mla.kv_lora_rank,
            ));
            v.push(g(TensorClass::AttnOut, Self::m(Self::m(self.heads, mla.v_head_dim), h), self.heads * mla.v_head_dim));
            // q_a_layernorm + kv_a_layernorm.
            let small = if mla.q_lora_rank > 0 { mla.q_lora_rank } else { 0 } + mla.kv_lora_rank;
            v.push(g(TensorClass::Small, small, 0));
        } else {
            let qd = Self::m(self.heads, self.head_dim);
            let kvd = Self::m(self.kv_heads, self.head_dim);
            v.push(g(TensorClass::AttnQ, Self::m(h, qd), h));
            v.push(g(TensorClass::AttnK, Self::m(h, kvd), h));
            v.push(g(TensorClass::AttnV, Self::m(h, kvd), h));
            v.push(g(TensorClass::AttnOut, Self::m(qd, h), qd));
            let mut small = 0u64;
            if self.qkv_bias {
                small = small.saturating_add(qd).saturating_add(kvd.saturating_mul(2));
            }
            if self.o_bias {
                small = small.saturating_add(h);
            }
            if self.qk_norm {
                small = small.saturating_add(self.head_dim.saturating_mul(2));
            }
            if self.attn_sinks {
                small = small.saturating_add(self.heads);
            }
            if small > 0 {
                v.push(g(TensorClass::Small, small, 0));
            }
        }
        // MLP.
        let mats = match self.mlp {
            MlpKind::Gated => 3,
            MlpKind::Plain => 2,
        };
        let updown = |width: u64| -> (u64, u64, u64) {
            // (gate+up elements, down elements, bias elements)
            let gu = Self::m(Self::m(h, width), mats - 1);
            let down = Self::m(h, width);
            let bias = if self.mlp_bias { Self::m(width, mats - 1).saturating_add(h) } else { 0 };
            (gu, down, bias)
        };
        match &self.moe {
            Some(moe) if self.is_moe_layer(i) => {
                let (gu, down, bias) = updown(moe.expert_ffn);
                let e = moe.experts;
                let k = moe.active_experts.min(e);
                v.push(TensorGroup {
                    class: TensorClass::FfnGateUp,
                    elements: Self::m(gu, e),
                    active_elements: Self::m(gu, k),
                    row: h,
                });
                v.push(TensorGroup {
                    class: TensorClass::FfnDown,
                    elements: Self::m(down, e),
                    active_elements: Self::m(down, k),
                    row: moe.expert_ffn,
                });
                let mut small = Self::m(h, e).saturating_add(Self::m(bias, e)); // router + expert biases
                let mut small_active = Self::m(h, e).saturating_add(Self::m(bias, k));
                if moe.router_bias {
                    small = small.saturating_add(e);
                    small_active = small_active.saturating_add(e);
                }
                if moe.shared_experts > 0 {
                    let w = if moe.shared_ffn > 0 { moe.shared_ffn } else { moe.expert_ffn };
                    let (sgu, sdown, sbias) = updown(w);
                    let n = moe.shared_experts;
                    v.push(g(TensorClass::FfnGateUp, Self::m(sgu, n), h));
                    v.push(g(TensorClass::FfnDown, Self::m(sdown, n), w));
                    small = small.saturating_add(Self::m(sbias, n));
                    small_active = small_active.saturating_add(Self::m(sbias, n));
                    if moe.shared_expert_gate {
                        small = small.saturating_add(h);
                        small_active = small_active.saturating_add(h);
                    }
                }
                v.push(TensorGroup { class: TensorClass::Small, elements: small, active_elements: small_active, row: 0 });
            }
            _ => {
                let (gu, down, bias) = updown(self.intermediate);
                v.push(g(TensorClass::FfnGateUp, gu, h));
                v.push(g(TensorClass::FfnDown, down, self.intermediate));
                if bias > 0 {
                    v.push(g(TensorClass::Small, bias, 0));
                }
            }
        }
        v.push(g(TensorClass::Small, Self::m(self.norms_per_layer, h), 0));
        v
    }

    /// Tensors outside the layers: token embedding, final norm, output head (when not tied).
    pub fn outer_tensors(&self) -> Vec<TensorGroup> {
        let emb = Self::m(self.vocab, self.hidden);
        let mut v = vec![
            TensorGroup { class: TensorClass::TokenEmbedding, elements: emb, active_elements: emb, row: self.hidden },
            TensorGroup { class: TensorClass::Small, elements: self.hidden, active_elements: self.hidden, row: 0 },
        ];
        if !self.tied_embeddings {
            v.push(TensorGroup { class: TensorClass::Output, elements: emb, active_elements: emb, row: self.hidden });
        }
        v
    }

    /// Parameters of layer `i` (total, active).
    pub fn layer_params(&self, i: u64) -> ParamCount {
        self.layer_tensors(i).iter().fold(ParamCount::default(), |a, t| ParamCount {
            total: a.total.saturating_add(t.elements),
            active: a.active.saturating_add(t.active_elements),
        })
    }

    /// Exact parameter count from the architecture (or the file, when imported).
    pub fn param_count(&self) -> ParamCount {
        let mut pc = self.outer_tensors().iter().fold(ParamCount::default(), |a, t| ParamCount {
            total: a.total.saturating_add(t.elements),
            active: a.active.saturating_add(t.active_elements),
        });
        // Layers come in at most two kinds (dense first, then MoE): count each kind once.
        let dense_n = match &self.moe {
            Some(m) => m.first_dense_layers.min(self.layers),
            None => self.layers,
        };
        let moe_n = self.layers - dense_n;
        if dense_n > 0 {
            let p = self.layer_params(0);
            pc.total = pc.total.saturating_add(p.total.saturating_mul(dense_n));
            pc.active = pc.active.saturating_add(p.active.saturating_mul(dense_n));
        }
        if moe_n > 0 {
            let p = self.layer_params(dense_n);
            pc.total = pc.total.saturating_add(p.total.saturating_mul(moe_n));
            pc.active = pc.active.saturating_add(p.active.saturating_mul(moe_n));
        }
        let given = match (&self.file_weights, self.nominal_params) {
            (Some(fw), _) if fw.params > 0 => Some(fw.params),
            (_, Some(n)) => Some(n),
            _ => None,
        };
        if let Some(n) = given {
            // The file (or the user) is the truth for the total; keep the architecture's active share.
            let ratio = if pc.total > 0 { pc.active as f64 / pc.total as f64 } else { 1.0 };
            return ParamCount { total: n, active: ((n as f64) * ratio).round() as u64 };
        }
        pc
    }

    /// Number of layers that use a sliding window, and the window.
    pub fn local_layers(&self) -> (u64, u64) {
        match &self.sliding {
            Some(s) if s.window > 0 => (s.local_layers.min(self.layers), s.window),
            _ => (0, 0),
        }
    }

    /// KV-cache elements per token per layer: (K, V). MLA caches the compressed latent and the
    /// decoupled RoPE key (kv_lora_rank + qk_rope_head_dim), with no separate V.
    pub fn kv_elements_per_token_layer(&self) -> (u64, u64) {
        if let Some(mla) = &self.mla {
            (mla.kv_lora_rank.saturating_add(mla.qk_rope_head_dim), 0)
        } else {
            let e = Self::m(self.kv_heads, self.head_dim);
            (e, e)
        }
    }

    /// Whether this shape is real or estimated from a parameter count.
    pub fn is_estimated(&self) -> bool {
        self.source == ShapeSource::Estimated
    }

    /// A plausible dense shape for a model known only by its parameter count, derived from the
    /// Llama 3 / Qwen 2.5 families (GQA, head_dim 128, SwiGLU with I ≈ 3.5·h, vocab 128k).
    /// Marked [`ShapeSource::Estimated`].
    pub fn generic(params: u64) -> ModelSpec {
        // (params, layers) anchors from real models: Qwen2.5-0.5B 24, 1.5B 28, 3B 36, Llama-3-8B 32,
        // Qwen2.5-14B 48, 32B 64, Llama-3-70B 80, Llama-3.1-405B 126.
        const ANCHORS: [(f64, f64); 8] = [
            (0.5e9, 24.0),
            (1.5e9, 28.0),
            (3.0e9, 36.0),
            (8.0e9, 32.0),
            (14.0e9, 48.0),
            (32.0e9, 64.0),
            (70.0e9, 80.0),
            (405.0e9, 126.0),
        ];
        let p = (params.max(1_000_000)) as f64;
        let lp = p.ln();
        let layers = if p <= ANCHORS[0].0 {
            ANCHORS[0].1 * (p / ANCHORS[0].0).powf(0.25)
        } else if p >= ANCHORS[7].0 {
            ANCHORS[7].1 * (p / ANCHORS[7].0).powf(0.25)
        } else {
            let mut l = ANCHORS[7].1;
            for w in ANCHORS.windows(2) {
                let (p0, l0) = w[0];
                let (p1, l1) = w[1];
                if p >= p0 && p <= p1 {
                    let t = (lp - p0.ln()) / (p1.ln() - p0.ln());
                    l = l0 + t * (l1 - l0);
                    break;
                }
            }
            l
        };
        let layers = (layers.round() as u64).clamp(2, 4096);
        let vocab: u64 = if p < 2e9 { 151_936 } else { 128_256 };
        // Per layer: attention (2 + 2g)·h² with GQA ratio g = 1/8 (n_kv = n_h / 8, min 1),
        // gated MLP 3·3.5·h²; plus 2·V·h embeddings (tied below 2B: V·h).
        let g = 0.125;
        let a = layers as f64 * (2.0 + 2.0 * g + 3.0 * 3.5);
        let emb = if p < 2e9 { 1.0 } else { 2.0 } * vocab as f64;
        let h = ((-emb + (emb * emb + 4.0 * a * p).sqrt()) / (2.0 * a)).max(64.0);
        let head_dim = 128u64.min(((h / 64.0).round() as u64 * 64).max(64));
        let heads = ((h / head_dim as f64).round() as u64).max(1);
        let hidden = heads * head_dim;
        let kv_heads = (heads / 8).max(1);
        let intermediate = ((3.5 * hidden as f64 / 256.0).round() as u64 * 256).max(256);
        ModelSpec {
            name: format!("Generic {} model", crate::core::format_params(params)),
            arch: "generic".into(),
            layers,
            hidden,
            heads,
            kv_heads,
            head_dim,
            intermediate,
            vocab,
            tied_embeddings: p < 2e9,
            max_context: 131_072,
            source: ShapeSource::Estimated,
            nominal_params: Some(params),
            ..ModelSpec::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama3_8b_exact() {
        // meta-llama/Meta-Llama-3-8B: 8,030,261,248 parameters (safetensors metadata total / 2 bytes).
        assert_eq!(ModelSpec::default().param_count().total, 8_030_261_248);
    }

    #[test]
    fn generic_shape_is_close_to_the_asked_count() {
        for p in [1e8, 5e8, 1.5e9, 7e9, 13e9, 70e9, 405e9, 1e12, 2e12] {
            let s = ModelSpec::generic(p as u64);
            assert_eq!(s.param_count().total, p as u64);
            let got = ModelSpec { nominal_params: None, ..s.clone() }.param_count().total as f64;
            assert!((got / p - 1.0).abs() < 0.12, "{p}: {got} {s:?}");
            assert!(s.is_estimated());
        }
    }
}
