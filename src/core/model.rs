//! Model architecture (`ModelSpec`), its tensor inventory and exact parameter count.
//!
//! The parameter count is the sum of a tensor inventory (embedding, per-layer attention, MLP or
//! experts, norms, output head), so the same inventory drives weight bytes for mixed-precision
//! formats (GGUF k-quant mixes keep some tensors at higher types).
//!
//! The inventory follows the module structure of the Hugging Face `transformers` implementations
//! (`modeling_llama.py`, `modeling_qwen2.py`, `modeling_gemma2.py`, `modeling_gemma3.py`,
//! `modeling_mixtral.py`, `modeling_qwen2_moe.py`, `modeling_qwen3_moe.py`, `modeling_deepseek_v3.py`,
//! `modeling_gpt_oss.py`), one entry per stored tensor. The totals match the published checkpoint
//! sizes exactly (see the tests here and in `tests/hf_config.rs`, each citing its source):
//! Llama-3-8B 8,030,261,248; Mistral-7B-v0.1 7,241,732,096; Mixtral-8x7B 46,702,792,704;
//! DeepSeek-V3 671,026,419,200; gpt-oss-20b 20,914,757,184; …

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
#[serde(default, deny_unknown_fields)]
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
    /// Qwen2-MoE `decoder_sparse_step`: layer `i` (0-based) is sparse only when `(i + 1) % step == 0`.
    /// 0 or 1 = every layer (past `first_dense_layers`).
    pub sparse_step: u64,
    /// Layers (0-based) that keep a dense MLP whatever the rules above say: Qwen2/3-MoE
    /// `mlp_only_layers`; DeepSeek `moe_layer_freq` > 1 is expanded into this list by the parser.
    pub dense_layers: Vec<u64>,
}

/// Multi-head latent attention (DeepSeek-V2/V3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct MlaSpec {
    pub kv_lora_rank: u64,
    /// 0 = queries are not low-rank (DeepSeek-V2-Lite: `q_lora_rank: null`).
    pub q_lora_rank: u64,
    pub qk_rope_head_dim: u64,
    pub qk_nope_head_dim: u64,
    pub v_head_dim: u64,
}

/// Sliding-window attention: `local_layers` of the layers attend to at most `window` tokens.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct SlidingWindow {
    pub window: u64,
    /// How many layers are local (sliding). Mistral v0.1: all; Gemma 2: half; Gemma 3: 5 of 6.
    /// Ignored when `period` > 0 (the period decides).
    pub local_layers: u64,
    /// Interleave period. When > 0, layer `i` (0-based) is global (full attention) when
    /// `(i + 1) % period == 0` and local otherwise: Gemma 2 and gpt-oss 2 (local, global, …),
    /// Gemma 3 6 (five local, then one global). 0 = the LAST `local_layers` layers are local
    /// (Mistral v0.1: all of them; Qwen2 with `use_sliding_window`: those from `max_window_layers` on).
    pub period: u64,
}

/// A decoder-only transformer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
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
    /// Longest context the model was trained for (`max_position_embeddings`); 0 = unknown.
    pub max_context: u64,
    /// Parameters of a vision encoder and projector stored in the same checkpoint (Gemma 3:
    /// SigLIP-So400m + projector = 0.42 B). Loaded with the weights, so counted in the total;
    /// not read per generated token, so not in the active count.
    pub vision_params: u64,
    /// Multi-token-prediction modules shipped in the checkpoint (DeepSeek-V3
    /// `num_nextn_predict_layers` = 1). They are not part of the main model (DeepSeek-V3's
    /// README_WEIGHTS: "Main Model Weights … 671B", MTP "11.5B unique parameters") and are
    /// NOT counted; recorded so the difference to the file size can be explained.
    pub mtp_layers: u64,
    pub source: ShapeSource,
    /// A parameter count given by the user (the slider); when set it is the total, and the shape is
    /// only used for the KV cache and activations.
    pub nominal_params: Option<u64>,
    /// Exact weight bytes from a model file (GGUF/safetensors), overriding the precision estimate.
    pub file_weights: Option<FileWeights>,
}

/// Weights read from a model file: exact bytes and parameter count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
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
    /// Bytes of the routed experts in each layer (index = layer; 0 for a dense layer), summed
    /// from the tensors llama.cpp's `--n-cpu-moe` moves: names matching
    /// `blk\.N\.ffn_(up|down|gate|gate_up)_(ch|)exps` (common/common.h `LLM_FFN_EXPS_REGEX`).
    /// Empty for dense files and formats that do not name experts this way.
    pub expert_bytes_by_layer: Vec<u64>,
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
            vision_params: 0,
            mtp_layers: 0,
            source: ShapeSource::Exact,
            nominal_params: None,
            file_weights: None,
        }
    }
}

/// Total and active (per token, MoE) parameters.
///
/// `active` counts what one generated token reads: every layer tensor of a dense model, the
/// attention, router, shared experts and top-k routed experts of a MoE layer, the final norm and
/// output head, and ONE row of the input embedding (a lookup, not a matrix product; the whole
/// matrix when it is tied, because it is then the output head too). This is DeepSeek's and
/// OpenAI's convention (DeepSeek-V3 README_WEIGHTS: "Activation parameters: 36.6B (including
/// 0.9B for the output Head)"; gpt-oss model card: 3.61B active of 20.91B); Mistral (Mixtral
/// "12.9B") and Qwen (Qwen3-30B-A3B "3.3B") also count the whole input embedding, V·h − h more.
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
    /// Routed experts' tensors (matrices and their biases): what llama.cpp names
    /// `blk.N.ffn_{gate,up,down,gate_up}_exps.*` and what `--n-cpu-moe` moves to RAM. Shared
    /// experts, the router and everything else are not routed.
    pub routed: bool,
}

/// Layers that share one tensor inventory: `count` layers like layer `first`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LayerGroup {
    /// The first (0-based) layer of this kind; `layer_tensors(first)` is every member's inventory.
    pub first: u64,
    /// How many layers are of this kind.
    pub count: u64,
    /// Whether these layers carry the MoE block.
    pub moe: bool,
}

impl ModelSpec {
    /// `a · b`, saturating: absurd shapes give u64::MAX instead of a panic or a wrap.
    fn m(a: u64, b: u64) -> u64 {
        a.saturating_mul(b)
    }

    /// Whether layer `i` (0-based) uses the MoE block.
    ///
    /// Rule: `i ≥ first_k_dense_replace` (DeepSeek, `modeling_deepseek_v3.py`), and
    /// `(i + 1) % decoder_sparse_step == 0`, and `i ∉ mlp_only_layers` (Qwen2-MoE,
    /// `modeling_qwen2_moe.py`). Mixtral, Qwen3-MoE and gpt-oss use the block in every layer.
    pub fn is_moe_layer(&self, i: u64) -> bool {
        let Some(m) = &self.moe else { return false };
        if m.experts == 0 || i < m.first_dense_layers {
            return false;
        }
        (i + 1).is_multiple_of(m.sparse_step.max(1)) && !m.dense_layers.contains(&i)
    }

    /// How many of the `layers` layers use the MoE block, in closed form (no per-layer loop):
    /// `⌊L/s⌋ − ⌊k/s⌋` layers `i ∈ [k, L)` with `(i + 1) % s == 0` (k = first dense layers,
    /// s = sparse step), less the listed dense layers among them.
    pub fn moe_layer_count(&self) -> u64 {
        let Some(m) = &self.moe else { return 0 };
        if m.experts == 0 {
            return 0;
        }
        let l = self.layers;
        let k = m.first_dense_layers.min(l);
        let s = m.sparse_step.max(1);
        let mut listed: Vec<u64> = m
            .dense_layers
            .iter()
            .copied()
            .filter(|&d| d >= k && d < l && (d + 1).is_multiple_of(s))
            .collect();
        listed.sort_unstable();
        listed.dedup();
        (l / s - k / s).saturating_sub(listed.len() as u64)
    }

    /// The layers grouped by inventory: at most two kinds (dense, MoE), each with its first layer
    /// and its count, so that sums over layers cost two inventories instead of `layers`.
    /// The counts add up to `layers`.
    pub fn layer_groups(&self) -> Vec<LayerGroup> {
        let l = self.layers;
        let moe_n = self.moe_layer_count().min(l);
        let dense_n = l - moe_n;
        let mut v = Vec::with_capacity(2);
        if dense_n > 0 {
            let first = (0..l).find(|&i| !self.is_moe_layer(i)).unwrap_or(0);
            v.push(LayerGroup {
                first,
                count: dense_n,
                moe: false,
            });
        }
        if moe_n > 0 {
            let k = self.moe.as_ref().map_or(0, |m| m.first_dense_layers.min(l));
            let first = (k..l).find(|&i| self.is_moe_layer(i)).unwrap_or(k);
            v.push(LayerGroup {
                first,
                count: moe_n,
                moe: true,
            });
        }
        v.sort_by_key(|g| g.first);
        v
    }

    /// The tensors of layer `i`, grouped by class.
    ///
    /// Attention (GQA, `modeling_llama.py`): q `h × n_h·d`, k and v `h × n_kv·d` each, o `n_h·d × h`;
    /// q/k/v biases `n_h·d + 2·n_kv·d` (Qwen2, gpt-oss), o bias `h` (gpt-oss), q/k RMSNorm `2·d`
    /// (Qwen3, Gemma 3), sinks `n_h` (gpt-oss). Phi-3's fused `qkv_proj` and `gate_up_proj` hold the
    /// same elements as the separate matrices.
    ///
    /// MLA (`modeling_deepseek_v3.py`): q_a `h × r_q` + q_a_layernorm `r_q` + q_b `r_q × n_h·(d_nope + d_rope)`
    /// (or q `h × n_h·(d_nope + d_rope)` when `q_lora_rank` is null), kv_a_proj_with_mqa
    /// `h × (r_kv + d_rope)` + kv_a_layernorm `r_kv`, kv_b `r_kv × n_h·(d_nope + d_v)`, o `n_h·d_v × h`.
    ///
    /// MLP: gated `3·h·I` (gate, up, down), plain `2·h·I`; biases `2·I + h` (gated) when `mlp_bias`.
    /// MoE layer: E routed experts of `3·h·I_e` (+ biases, gpt-oss), router `h·E` (+ `E` bias:
    /// gpt-oss router bias, DeepSeek-V3 `e_score_correction_bias`), shared experts `n_s·3·h·I_s`,
    /// Qwen2-MoE shared-expert gate `h`. Active: top-k routed experts, everything else in full.
    ///
    /// Norms: `norms_per_layer · h` (input and post-attention RMSNorm: 2; Gemma 2/3 add the
    /// pre- and post-feedforward norms: 4).
    pub fn layer_tensors(&self, i: u64) -> Vec<TensorGroup> {
        self.layer_tensors_of(self.is_moe_layer(i))
    }

    /// The inventory of a dense (`moe_layer` false) or MoE layer; see [`Self::layer_tensors`].
    fn layer_tensors_of(&self, moe_layer: bool) -> Vec<TensorGroup> {
        let h = self.hidden;
        let mut v = Vec::with_capacity(10);
        let g = |class, elements, row| TensorGroup {
            class,
            elements,
            active_elements: elements,
            row,
            routed: false,
        };
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
            v.push(g(
                TensorClass::AttnK,
                Self::m(h, mla.kv_lora_rank.saturating_add(mla.qk_rope_head_dim)),
                h,
            ));
            v.push(g(
                TensorClass::AttnV,
                Self::m(
                    mla.kv_lora_rank,
                    Self::m(
                        self.heads,
                        mla.qk_nope_head_dim.saturating_add(mla.v_head_dim),
                    ),
                ),
                mla.kv_lora_rank,
            ));
            let o_in = Self::m(self.heads, mla.v_head_dim);
            v.push(g(TensorClass::AttnOut, Self::m(o_in, h), o_in));
            // q_a_layernorm (only with a low-rank query) + kv_a_layernorm.
            v.push(g(
                TensorClass::Small,
                mla.q_lora_rank.saturating_add(mla.kv_lora_rank),
                0,
            ));
        } else {
            let qd = Self::m(self.heads, self.head_dim);
            let kvd = Self::m(self.kv_heads, self.head_dim);
            v.push(g(TensorClass::AttnQ, Self::m(h, qd), h));
            v.push(g(TensorClass::AttnK, Self::m(h, kvd), h));
            v.push(g(TensorClass::AttnV, Self::m(h, kvd), h));
            v.push(g(TensorClass::AttnOut, Self::m(qd, h), qd));
            let mut small = 0u64;
            if self.qkv_bias {
                small = small
                    .saturating_add(qd)
                    .saturating_add(kvd.saturating_mul(2));
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
        let mats: u64 = match self.mlp {
            MlpKind::Gated => 3,
            MlpKind::Plain => 2,
        };
        let updown = |width: u64| -> (u64, u64, u64) {
            // (gate+up elements, down elements, bias elements)
            let gu = Self::m(Self::m(h, width), mats - 1);
            let down = Self::m(h, width);
            let bias = if self.mlp_bias {
                Self::m(width, mats - 1).saturating_add(h)
            } else {
                0
            };
            (gu, down, bias)
        };
        match &self.moe {
            Some(moe) if moe_layer => {
                let (gu, down, bias) = updown(moe.expert_ffn);
                let e = moe.experts;
                let k = moe.active_experts.min(e);
                v.push(TensorGroup {
                    class: TensorClass::FfnGateUp,
                    elements: Self::m(gu, e),
                    active_elements: Self::m(gu, k),
                    row: h,
                    routed: true,
                });
                v.push(TensorGroup {
                    class: TensorClass::FfnDown,
                    elements: Self::m(down, e),
                    active_elements: Self::m(down, k),
                    row: moe.expert_ffn,
                    routed: true,
                });
                // Routed experts' biases (gpt-oss `gate_up_proj_bias`, `down_proj_bias`): they
                // travel with the experts (llama.cpp `ffn_*_exps.bias`).
                if bias > 0 {
                    v.push(TensorGroup {
                        class: TensorClass::Small,
                        elements: Self::m(bias, e),
                        active_elements: Self::m(bias, k),
                        row: 0,
                        routed: true,
                    });
                }
                // Router (h × E, read in full for every token).
                let mut small = Self::m(h, e);
                let mut small_active = Self::m(h, e);
                if moe.router_bias {
                    small = small.saturating_add(e);
                    small_active = small_active.saturating_add(e);
                }
                if moe.shared_experts > 0 {
                    let w = if moe.shared_ffn > 0 {
                        moe.shared_ffn
                    } else {
                        moe.expert_ffn
                    };
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
                v.push(TensorGroup {
                    class: TensorClass::Small,
                    elements: small,
                    active_elements: small_active,
                    row: 0,
                    routed: false,
                });
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

    /// Tensors outside the layers, the token embedding first: embedding `V·h`, final norm `h`,
    /// output head `V·h` when not tied (`tie_word_embeddings: false`), and the vision tower of a
    /// multimodal checkpoint (`vision_params`).
    ///
    /// Active: one embedding row (`h`, a lookup) unless tied (then the whole matrix, it is the
    /// head); the norm and head in full; the vision tower not at all (it runs on images only).
    /// The vision tower is classed as `TokenEmbedding` so that it is neither read per token nor
    /// quantised by bitsandbytes/GPTQ/AWQ estimates (those toolkits quantise the decoder's
    /// linear layers only); llama.cpp keeps it in a separate mmproj file.
    pub fn outer_tensors(&self) -> Vec<TensorGroup> {
        let emb = Self::m(self.vocab, self.hidden);
        let emb_active = if self.tied_embeddings {
            emb
        } else {
            self.hidden.min(emb)
        };
        let mut v = vec![
            TensorGroup {
                class: TensorClass::TokenEmbedding,
                elements: emb,
                active_elements: emb_active,
                row: self.hidden,
                routed: false,
            },
            TensorGroup {
                class: TensorClass::Small,
                elements: self.hidden,
                active_elements: self.hidden,
                row: 0,
                routed: false,
            },
        ];
        if !self.tied_embeddings {
            v.push(TensorGroup {
                class: TensorClass::Output,
                elements: emb,
                active_elements: emb,
                row: self.hidden,
                routed: false,
            });
        }
        if self.vision_params > 0 {
            v.push(TensorGroup {
                class: TensorClass::TokenEmbedding,
                elements: self.vision_params,
                active_elements: 0,
                row: 0,
                routed: false,
            });
        }
        v
    }

    /// Parameters of layer `i` (total, active): the sum of [`Self::layer_tensors`].
    pub fn layer_params(&self, i: u64) -> ParamCount {
        sum(&self.layer_tensors(i))
    }

    /// Parameters from the architecture alone: Σ outer tensors + Σ over [`Self::layer_groups`] of
    /// `count × layer inventory`. Exact for the archs in `hf_config` (golden tests cite the
    /// checkpoint sizes they match); ignores `nominal_params` and `file_weights`.
    pub fn arch_param_count(&self) -> ParamCount {
        let mut pc = sum(&self.outer_tensors());
        for grp in self.layer_groups() {
            let p = sum(&self.layer_tensors_of(grp.moe));
            pc.total = pc.total.saturating_add(p.total.saturating_mul(grp.count));
            pc.active = pc.active.saturating_add(p.active.saturating_mul(grp.count));
        }
        pc
    }

    /// Parameter count: the architecture's ([`Self::arch_param_count`]), unless a model file
    /// (`file_weights.params`) or the user (`nominal_params`) gives the total; then that total,
    /// with the architecture's active/total ratio.
    ///
    /// A dense model's active count is its total (every parameter takes part in every token);
    /// an MoE's is what one token reads (see [`ParamCount`]).
    pub fn param_count(&self) -> ParamCount {
        let mut pc = self.per_token_params();
        if self.moe.is_none() {
            pc.active = pc.total;
        }
        pc
    }

    /// Total parameters, and the parameters one generated token multiplies with (the embedding
    /// counted as one row lookup): the basis of `2 × P` FLOPs per token.
    pub fn per_token_params(&self) -> ParamCount {
        let pc = self.arch_param_count();
        let given = match (&self.file_weights, self.nominal_params) {
            (Some(fw), _) if fw.params > 0 => Some(fw.params),
            (_, Some(n)) => Some(n),
            _ => None,
        };
        if let Some(n) = given {
            // The file (or the user) is the truth for the total; keep the architecture's active share.
            let ratio = if pc.total > 0 {
                pc.active as f64 / pc.total as f64
            } else {
                1.0
            };
            return ParamCount {
                total: n,
                active: ((n as f64) * ratio).round() as u64,
            };
        }
        pc
    }

    /// Number of layers that use a sliding window, and the window: `(local, window)`.
    /// With an interleave period p: `L − ⌊L/p⌋` (Gemma 2: 42 → 21; Gemma 3 4B: 34 → 29);
    /// otherwise `min(local_layers, L)`. `(0, 0)` without sliding attention.
    pub fn local_layers(&self) -> (u64, u64) {
        match &self.sliding {
            Some(s) if s.window > 0 => {
                let n = match self.layers.checked_div(s.period) {
                    Some(global) => self.layers - global,
                    None => s.local_layers.min(self.layers),
                };
                (n, s.window)
            }
            _ => (0, 0),
        }
    }

    /// Whether layer `i` attends within the sliding window (see [`SlidingWindow::period`]):
    /// `(i + 1) % p != 0` with a period (transformers `Gemma3TextConfig.layer_types`), else one of
    /// the last `local_layers` layers (Qwen2: `i ≥ max_window_layers`; Mistral v0.1: all).
    pub fn is_local_layer(&self, i: u64) -> bool {
        match &self.sliding {
            Some(s) if s.window > 0 && i < self.layers => {
                if s.period > 0 {
                    !(i + 1).is_multiple_of(s.period)
                } else {
                    i >= self.layers - s.local_layers.min(self.layers)
                }
            }
            _ => false,
        }
    }

    /// KV-cache elements per token per layer: (K, V), `n_kv · d` each (domain brief §2).
    /// MLA caches the compressed latent and the decoupled RoPE key (`kv_lora_rank +
    /// qk_rope_head_dim` = 512 + 64 for DeepSeek-V3), with no separate V (DeepSeek-V2 paper §2.1.2).
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
    /// Marked [`ShapeSource::Estimated`]; `nominal_params` keeps the asked P as the total.
    ///
    /// Layers L are interpolated log-linearly in P between real models' (P, L) anchors; the width
    /// solves `P = L·(2 + 2g + 10.5)·h² + e·V·h` for h (g = 1/8, the GQA ratio; e = 1 while the
    /// embedding is tied, 2 untied, ramped from 1 to 2 between 1.5B and 3B), rounded to heads of
    /// 128 (64 below h = 96): KV heads 1 below 16 heads, 2 below 32, 4 below 60, then 8 (Llama 3
    /// 70B/405B), the query heads a multiple of them. Every dimension (layers, heads, KV heads,
    /// width, MLP width) is non-decreasing in P, so a bigger model never needs less memory; the
    /// shape sums to within 12 % of P from 0.5B up (coarser below, where one head is a large part
    /// of the width). generic(70B) is Llama-3-70B's shape.
    pub fn generic(params: u64) -> ModelSpec {
        // (params, layers) anchors from real models: Qwen2.5-0.5B 24, Qwen2.5-1.5B 28,
        // Llama-3.2-3B 28, Llama-3-8B 32, Qwen2.5-14B 48, Qwen2.5-32B 64, Llama-3-70B 80,
        // Llama-3.1-405B 126 (monotone, so that depth never shrinks as P grows).
        const ANCHORS: [(f64, f64); 8] = [
            (0.5e9, 24.0),
            (1.5e9, 28.0),
            (3.0e9, 28.0),
            (8.0e9, 32.0),
            (14.0e9, 48.0),
            (32.0e9, 64.0),
            (70.0e9, 80.0),
            (405.0e9, 126.0),
        ];
        let p = (params.max(1_000_000)) as f64;
        let lp = p.ln();
        let l_cont = if p <= ANCHORS[0].0 {
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
        let layers = (l_cont.round() as u64).clamp(2, 4096);
        // One vocabulary for every size (the Llama 3 family's, 1B to 405B), so that a bigger model
        // never gets a smaller one (and smaller logits).
        let vocab: u64 = 128_256;
        let tied = p < 2e9;
        // Per layer: attention (2 + 2g)·h², gated MLP 3·3.5·h²; embeddings e·V·h. The continuous
        // depth and a smooth e keep h increasing with P.
        let g = 0.125;
        let a = l_cont * (2.0 + 2.0 * g + 3.0 * 3.5);
        let ramp = ((p / 1.5e9).ln() / 2f64.ln()).clamp(0.0, 1.0);
        let emb = (1.0 + ramp) * vocab as f64;
        let h = ((-emb + (emb * emb + 4.0 * a * p).sqrt()) / (2.0 * a)).max(64.0);
        let head_dim = 128u64.min(((h / 64.0).round() as u64 * 64).max(64));
        let x = h / head_dim as f64;
        let kv_heads: u64 = match x {
            x if x < 16.0 => 1,
            x if x < 32.0 => 2,
            x if x < 60.0 => 4,
            _ => 8,
        };
        let heads = ((x / kv_heads as f64).round() as u64).max(1) * kv_heads;
        let hidden = heads * head_dim;
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
            tied_embeddings: tied,
            max_context: 131_072,
            source: ShapeSource::Estimated,
            nominal_params: Some(params),
            ..ModelSpec::default()
        }
    }
}

/// Σ elements and Σ active elements of some tensor groups.
fn sum(groups: &[TensorGroup]) -> ParamCount {
    groups
        .iter()
        .fold(ParamCount::default(), |a, t| ParamCount {
            total: a.total.saturating_add(t.elements),
            active: a.active.saturating_add(t.active_elements),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Mistral-7B-v0.1 (mistralai/Mistral-7B-v0.1 config.json).
    fn mistral_7b() -> ModelSpec {
        ModelSpec {
            name: "Mistral 7B v0.1".into(),
            arch: "mistral".into(),
            vocab: 32000,
            max_context: 32768,
            sliding: Some(SlidingWindow {
                window: 4096,
                local_layers: 32,
                period: 0,
            }),
            ..ModelSpec::default()
        }
    }

    /// Mixtral-8x7B-v0.1 (mistralai/Mixtral-8x7B-v0.1 config.json).
    fn mixtral() -> ModelSpec {
        ModelSpec {
            arch: "mixtral".into(),
            vocab: 32000,
            moe: Some(MoeSpec {
                experts: 8,
                active_experts: 2,
                expert_ffn: 14336,
                ..MoeSpec::default()
            }),
            ..ModelSpec::default()
        }
    }

    /// DeepSeek-V3 (deepseek-ai/DeepSeek-V3 config.json).
    fn deepseek_v3() -> ModelSpec {
        ModelSpec {
            arch: "deepseek_v3".into(),
            layers: 61,
            hidden: 7168,
            heads: 128,
            kv_heads: 128,
            head_dim: 192,
            intermediate: 18432,
            vocab: 129280,
            moe: Some(MoeSpec {
                experts: 256,
                active_experts: 8,
                expert_ffn: 2048,
                shared_experts: 1,
                first_dense_layers: 3,
                router_bias: true,
                ..MoeSpec::default()
            }),
            mla: Some(MlaSpec {
                kv_lora_rank: 512,
                q_lora_rank: 1536,
                qk_rope_head_dim: 64,
                qk_nope_head_dim: 128,
                v_head_dim: 128,
            }),
            mtp_layers: 1,
            ..ModelSpec::default()
        }
    }

    #[test]
    fn llama3_8b_exact() {
        // meta-llama/Meta-Llama-3-8B: model.safetensors.index.json total_size 16,060,522,496 bytes
        // of BF16 = 8,030,261,248 parameters.
        let s = ModelSpec::default();
        assert_eq!(s.param_count().total, 8_030_261_248);
        // Per layer: 4096·(4096 + 2·1024 + 4096) + 3·4096·14336 + 2·4096 = 218,112,000.
        assert_eq!(s.layer_params(0).total, 218_112_000);
        // A dense model's active count is its total; per token it multiplies with one
        // embedding row, not the 128256 × 4096 table.
        assert_eq!(s.param_count().active, 8_030_261_248);
        assert_eq!(
            s.per_token_params().active,
            8_030_261_248 - 128_256 * 4096 + 4096
        );
    }

    #[test]
    fn mistral_7b_v01_exact_with_a_window_on_every_layer() {
        // mistralai/Mistral-7B-v0.1: model.safetensors.index.json total_size 14,483,464,192 bytes / 2.
        let s = mistral_7b();
        assert_eq!(s.param_count().total, 7_241_732_096);
        assert_eq!(s.local_layers(), (32, 4096));
        assert!((0..32).all(|i| s.is_local_layer(i)));
        assert!(!s.is_local_layer(32));
    }

    #[test]
    fn mixtral_total_and_active() {
        // mistralai/Mixtral-8x7B-v0.1: total_size 93,405,585,408 bytes / 2 = 46,702,792,704.
        let s = mixtral();
        let p = s.param_count();
        assert_eq!(p.total, 46_702_792_704);
        // Mistral's "12.9B active" counts the whole input embedding; we count one row of it.
        assert_eq!(p.active, 12_748_857_344);
        let with_table = p.active + 32000 * 4096 - 4096;
        assert!(
            (with_table as f64 / 12.9e9 - 1.0).abs() < 0.005,
            "{with_table}"
        );
    }

    #[test]
    fn deepseek_v3_main_model_is_671b_and_36_6b_active() {
        // DeepSeek-V3 README_WEIGHTS.md: main model 671B total, 36.6B activated (incl. the 0.9B
        // output head); the MTP module is NOT part of it (mtp_layers is recorded, not counted).
        let s = deepseek_v3();
        let p = s.param_count();
        assert_eq!(p.total, 671_026_419_200);
        assert!(
            (p.active as f64 / 36.6e9 - 1.0).abs() < 0.005,
            "{}",
            p.active
        );
        assert_eq!(
            s.layer_groups(),
            vec![
                LayerGroup {
                    first: 0,
                    count: 3,
                    moe: false
                },
                LayerGroup {
                    first: 3,
                    count: 58,
                    moe: true
                },
            ]
        );
        // MLA caches 512 + 64 elements per token per layer.
        assert_eq!(s.kv_elements_per_token_layer(), (576, 0));
    }

    #[test]
    fn moe_layer_count_matches_the_per_layer_rule() {
        for layers in [1u64, 2, 7, 24, 48, 61] {
            for first in [0u64, 1, 3] {
                for step in [0u64, 1, 2, 3] {
                    for dense in [vec![], vec![0, 5], vec![23, 23, 47, 100]] {
                        let s = ModelSpec {
                            layers,
                            moe: Some(MoeSpec {
                                experts: 4,
                                active_experts: 2,
                                expert_ffn: 64,
                                first_dense_layers: first,
                                sparse_step: step,
                                dense_layers: dense.clone(),
                                ..MoeSpec::default()
                            }),
                            ..ModelSpec::default()
                        };
                        let brute = (0..layers).filter(|&i| s.is_moe_layer(i)).count() as u64;
                        assert_eq!(
                            s.moe_layer_count(),
                            brute,
                            "{layers} {first} {step} {dense:?}"
                        );
                        let groups = s.layer_groups();
                        assert_eq!(groups.iter().map(|g| g.count).sum::<u64>(), layers);
                        for g in &groups {
                            assert_eq!(s.is_moe_layer(g.first), g.moe);
                        }
                        // The grouped sum equals the layer-by-layer sum.
                        let by_layer: u64 = (0..layers).map(|i| s.layer_params(i).total).sum();
                        let outer: u64 = s.outer_tensors().iter().map(|t| t.elements).sum();
                        assert_eq!(s.param_count().total, by_layer + outer);
                    }
                }
            }
        }
    }

    #[test]
    fn qwen2_moe_sparse_step_and_mlp_only_layers() {
        let s = ModelSpec {
            layers: 8,
            moe: Some(MoeSpec {
                experts: 4,
                sparse_step: 2,
                dense_layers: vec![3],
                ..MoeSpec::default()
            }),
            ..ModelSpec::default()
        };
        let moe: Vec<u64> = (0..8).filter(|&i| s.is_moe_layer(i)).collect();
        assert_eq!(moe, vec![1, 5, 7]);
        assert_eq!(s.moe_layer_count(), 3);
    }

    #[test]
    fn interleaved_windows_follow_the_period() {
        // Gemma 3 4B: 34 layers, global every 6th (layers 5, 11, …, 29).
        let s = ModelSpec {
            layers: 34,
            sliding: Some(SlidingWindow {
                window: 1024,
                local_layers: 0,
                period: 6,
            }),
            ..ModelSpec::default()
        };
        assert_eq!(s.local_layers(), (29, 1024));
        let global: Vec<u64> = (0..34).filter(|&i| !s.is_local_layer(i)).collect();
        assert_eq!(global, vec![5, 11, 17, 23, 29]);
        // Qwen2 with use_sliding_window: the last layers.
        let q = ModelSpec {
            layers: 4,
            sliding: Some(SlidingWindow {
                window: 64,
                local_layers: 1,
                period: 0,
            }),
            ..ModelSpec::default()
        };
        assert_eq!(
            (0..4).map(|i| q.is_local_layer(i)).collect::<Vec<_>>(),
            vec![false, false, false, true]
        );
        assert_eq!(ModelSpec::default().local_layers(), (0, 0));
    }

    #[test]
    fn tied_embedding_is_read_in_full() {
        // Qwen2.5-0.5B ties its 151936 × 896 embedding: total 494,032,768 (Qwen model card "0.49B";
        // transformers num_parameters() prints 494032768).
        let s = ModelSpec {
            layers: 24,
            hidden: 896,
            heads: 14,
            kv_heads: 2,
            head_dim: 64,
            intermediate: 4864,
            vocab: 151936,
            tied_embeddings: true,
            qkv_bias: true,
            ..ModelSpec::default()
        };
        let p = s.param_count();
        assert_eq!(p.total, 494_032_768);
        assert_eq!(p.active, p.total);
        assert_eq!(s.outer_tensors().len(), 2);
    }

    #[test]
    fn vision_tower_is_stored_not_read() {
        let s = ModelSpec {
            vision_params: 1000,
            ..ModelSpec::default()
        };
        let base = ModelSpec::default().param_count();
        assert_eq!(s.param_count().total, base.total + 1000);
        assert_eq!(
            s.per_token_params().active,
            ModelSpec::default().per_token_params().active
        );
    }

    #[test]
    fn absurd_shapes_saturate_instead_of_panicking() {
        let s = ModelSpec {
            layers: u64::MAX,
            hidden: u64::MAX,
            heads: u64::MAX,
            head_dim: u64::MAX,
            vocab: u64::MAX,
            moe: Some(MoeSpec {
                experts: u64::MAX,
                active_experts: u64::MAX,
                expert_ffn: u64::MAX,
                shared_experts: 1,
                ..MoeSpec::default()
            }),
            mla: Some(MlaSpec {
                kv_lora_rank: u64::MAX,
                q_lora_rank: u64::MAX,
                qk_rope_head_dim: u64::MAX,
                qk_nope_head_dim: u64::MAX,
                v_head_dim: u64::MAX,
            }),
            ..ModelSpec::default()
        };
        assert_eq!(s.param_count().total, u64::MAX);
        let _ = s.layer_tensors(0);
        let _ = s.kv_elements_per_token_layer();
    }

    #[test]
    fn serde_round_trips_and_rejects_unknown_fields() {
        let s = deepseek_v3();
        let j = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<ModelSpec>(&j).unwrap(), s);
        // Missing fields take the defaults (Llama-3-8B) ...
        let partial: ModelSpec = serde_json::from_str(r#"{"name": "x", "layers": 2}"#).unwrap();
        assert_eq!(partial.hidden, 4096);
        assert_eq!(partial.layers, 2);
        // ... unknown ones are errors, in the spec and in its parts.
        assert!(serde_json::from_str::<ModelSpec>(r#"{"hiden": 4096}"#).is_err());
        assert!(
            serde_json::from_str::<ModelSpec>(r#"{"moe": {"experts": 8, "topk": 2}}"#).is_err()
        );
        assert!(
            serde_json::from_str::<ModelSpec>(r#"{"sliding": {"window": 8, "size": 2}}"#).is_err()
        );
        assert!(serde_json::from_str::<ModelSpec>(r#"{"mla": {"rank": 8}}"#).is_err());
        assert!(serde_json::from_str::<ModelSpec>(r#"{"file_weights": {"bytes": 8}}"#).is_err());
    }

    #[test]
    fn generic_shape_is_close_to_the_asked_count() {
        for p in [
            1e8, 5e8, 1.5e9, 2e9, 3e9, 7e9, 13e9, 70e9, 405e9, 1e12, 2e12,
        ] {
            let s = ModelSpec::generic(p as u64);
            assert_eq!(s.param_count().total, p as u64);
            let got = ModelSpec {
                nominal_params: None,
                ..s.clone()
            }
            .param_count()
            .total as f64;
            // Below 0.5B one head of 128 is a quarter of the width or more.
            let tol = if p < 5e8 { 0.25 } else { 0.12 };
            assert!((got / p - 1.0).abs() < tol, "{p}: {got} {s:?}");
            assert!(s.is_estimated());
            assert!(
                s.kv_heads >= 1 && s.heads.is_multiple_of(s.kv_heads),
                "{s:?}"
            );
            assert_eq!(s.hidden, s.heads * s.head_dim);
        }
    }

    #[test]
    fn generic_70b_is_llama_3_70b() {
        // meta-llama/Meta-Llama-3-70B: 80 layers, 8192 wide, 64 heads, 8 KV heads, MLP 28672.
        let s = ModelSpec::generic(70_000_000_000);
        assert_eq!(
            (s.layers, s.hidden, s.heads, s.kv_heads, s.intermediate),
            (80, 8192, 64, 8, 28672)
        );
    }

    #[test]
    fn generic_dimensions_never_shrink_as_the_count_grows() {
        let mut last = ModelSpec::generic(1_000_000);
        for i in 1..=4000 {
            let p = 10f64.powf(6.0 + 6.4 * i as f64 / 4000.0) as u64;
            let s = ModelSpec::generic(p);
            let dims = |m: &ModelSpec| {
                [
                    m.layers,
                    m.heads,
                    m.kv_heads,
                    m.head_dim,
                    m.hidden,
                    m.intermediate,
                    m.vocab,
                ]
            };
            assert!(
                dims(&s).iter().zip(dims(&last)).all(|(a, b)| *a >= b),
                "{p}: {:?} after {:?}",
                dims(&s),
                dims(&last)
            );
            assert!(s.heads.is_multiple_of(s.kv_heads), "{p}: {s:?}");
            last = s;
        }
    }

    #[test]
    fn generic_is_monotonic_in_size() {
        let mut last = 0u64;
        for p in [1e8, 5e8, 1e9, 3e9, 7e9, 13e9, 34e9, 70e9, 180e9, 405e9] {
            let s = ModelSpec::generic(p as u64);
            let arch = s.arch_param_count().total;
            assert!(arch > last, "{p}: {arch} ≤ {last}");
            last = arch;
        }
    }
}
