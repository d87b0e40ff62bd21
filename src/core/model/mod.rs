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
    /// DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2); `None` for dense MLA.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub indexer: Option<IndexerSpec>,
}

/// The lightning indexer of DeepSeek Sparse Attention (DeepSeek-V3.2-Exp `inference/model.py`
/// `Indexer`; config.json `index_n_heads`, `index_head_dim`, `index_topk`): per layer `wq_b`
/// (`q_lora_rank → heads × head_dim`), `wk` (`h → head_dim`), a LayerNorm on the key
/// (`head_dim` weight + bias) and `weights_proj` (`h → heads`). It caches one key of
/// `head_dim` per token and layer in FP8 with an FP32 scale per 128 (`k_cache`,
/// `k_scale_cache`), scores every cached token with it, and the MLA attention then reads only
/// the `topk` best tokens' latents.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct IndexerSpec {
    pub heads: u64,
    pub head_dim: u64,
    /// Tokens each query attends to (2048 in DeepSeek-V3.2).
    pub topk: u64,
}

/// The indexer's key-cache quantisation block (`block_size = 128` in DeepSeek-V3.2-Exp
/// `inference/model.py`): one FP32 scale per 128 FP8 values.
pub const INDEXER_SCALE_BLOCK: u64 = 128;

impl ModelSpec {
    /// Tokens one query attends to under DeepSeek Sparse Attention; `None` = dense attention.
    pub fn attention_topk(&self) -> Option<u64> {
        self.mla.as_ref()?.indexer.as_ref().map(|i| i.topk.max(1))
    }

    /// Positions a query at `depth` attends to: all of them, or the top-k.
    pub fn attended_depth(&self, depth: f64) -> f64 {
        match self.attention_topk() {
            Some(k) => depth.min(k as f64),
            None => depth,
        }
    }

    /// FLOPs per token per position of depth of the sparse-attention indexer over all layers
    /// (its `heads × head_dim` dot products, 2 FLOPs each); 0 for dense attention.
    pub fn indexer_flops_per_depth(&self) -> f64 {
        self.mla
            .as_ref()
            .and_then(|m| m.indexer.as_ref())
            .map_or(0.0, |i| {
                2.0 * self.attention_layer_count() as f64 * (i.heads * i.head_dim) as f64
            })
    }
}

impl IndexerSpec {
    /// Bytes of indexer key cache per token and layer: FP8 keys plus their FP32 scales (132 B
    /// for DeepSeek-V3.2's 128-wide key).
    pub fn key_bytes_per_token(&self) -> u64 {
        self.head_dim
            .saturating_add(4 * self.head_dim.div_ceil(INDEXER_SCALE_BLOCK))
    }
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

/// The kind of recurrent (fixed-state) mixer in the layers that are not full attention.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum RecurrentKind {
    /// Mamba-2 SSD mixer (transformers `modeling_mamba2.py` `Mamba2Mixer`).
    #[default]
    Mamba2,
    /// Gated DeltaNet linear attention (transformers `modeling_qwen3_next.py`
    /// `Qwen3NextGatedDeltaNet`).
    GatedDeltaNet,
    /// Mamba-1 selective scan as Jamba builds it (transformers `modeling_jamba.py`
    /// `JambaMambaMixer`, with its dt / B / C RMSNorms): one "head" of `d_inner`, no groups.
    Mamba1,
    /// LFM2's gated short convolution (transformers `modeling_lfm2.py` `Lfm2ShortConv`):
    /// `in_proj` h → 3h (B, C, x), a depthwise `conv1d` of `L_cache` taps over the hidden
    /// channels, `out_proj` h → h. Its only state is the conv window, `(L_cache − 1) × h`
    /// (llama.cpp `n_embd_r()`); no SSM state. Sized as `heads` = h channels of `head_dim` 1,
    /// `state` 0, `groups` 0, so `d_inner = conv_dim = h`.
    ShortConv,
}

/// Hybrid and state-space models: the layers that keep a fixed-size recurrent state per
/// sequence instead of a KV cache (Mamba-2, Qwen3-Next's Gated DeltaNet, LFM2's short
/// convolutions, Nemotron-H's Mamba-2 layers).
///
/// Each layer is one of three kinds: full attention (listed in `attention_layers`), MLP only
/// (listed in `mlp_only_layers`: no mixer, no cache, no state; Nemotron-H's '-' layers) or
/// recurrent (all the others). A mixer layer (attention or recurrent) also carries the MLP
/// unless `mixers_without_mlp` (Nemotron-H: one block per layer).
///
/// The dimensions follow llama.cpp's hparams (`src/llama-hparams.cpp` `n_embd_r()` /
/// `n_embd_s()`): `d_inner = heads × head_dim`, `conv_dim = d_inner + 2 × groups × state`.
/// Mamba-2: heads = `num_heads`, head_dim = `head_dim`, state = `state_size`, groups =
/// `n_groups`. Gated DeltaNet: heads = `linear_num_value_heads`, head_dim =
/// `linear_value_head_dim`, state = `linear_key_head_dim`, groups = `linear_num_key_heads`
/// (then `conv_dim = 2 × key_dim + value_dim`, as `Qwen3NextGatedDeltaNet.conv_dim`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct RecurrentSpec {
    pub kind: RecurrentKind,
    /// The layers (0-based, ascending) that are full attention with a KV cache; every other
    /// layer is recurrent. Empty for a pure state-space model (Mamba-2).
    pub attention_layers: Vec<u64>,
    pub heads: u64,
    pub head_dim: u64,
    pub state: u64,
    pub groups: u64,
    /// Causal conv1d kernel width (`conv_kernel`, `linear_conv_kernel_dim`).
    pub conv_kernel: u64,
    /// conv1d has a bias (Mamba-2 `use_conv_bias`; Gated DeltaNet: none).
    pub conv_bias: bool,
    /// in_proj / out_proj have biases (Mamba-2 `use_bias`, Jamba `mamba_proj_bias`).
    pub proj_bias: bool,
    /// Mamba-1 `time_step_rank` (`dt_rank`): the width of `x_proj`'s dt part and of `dt_proj`'s
    /// input. 0 for the other kinds.
    #[serde(skip_serializing_if = "is_zero")]
    pub dt_rank: u64,
    /// The layers (0-based, ascending) that hold only an MLP: neither attention nor a recurrent
    /// mixer (Nemotron-H `hybrid_override_pattern` '-'). Empty for the other models.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mlp_only_layers: Vec<u64>,
    /// The attention and recurrent layers have no MLP of their own (Nemotron-H's
    /// `NemotronHBlock`: one norm and one mixer per layer); false = every layer's mixer is
    /// followed by the MLP (Qwen3-Next, Jamba, LFM2).
    #[serde(skip_serializing_if = "is_false")]
    pub mixers_without_mlp: bool,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// An encoder-only transformer's parts outside the layers (transformers `modeling_bert.py`
/// `BertEmbeddings`: word, learned absolute position (`max_position_embeddings`) and token-type
/// (`type_vocab_size`) embeddings summed, then a LayerNorm with weight and bias; `BertPooler`:
/// a dense `h × h` with bias on the first token; XLM-RoBERTa reuses both). Its layers are
/// post-LayerNorm (two LayerNorms with biases, `norms_per_layer` 4), with biased q/k/v/o and a
/// plain GELU MLP with biases; its attention is bidirectional and there is no output head.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct EncoderSpec {
    /// `max_position_embeddings` rows of learned positions.
    pub positions: u64,
    /// `type_vocab_size` rows of token types (2 for BERT, 1 for XLM-RoBERTa).
    pub token_types: u64,
    /// The checkpoint has `BertPooler` (`pooler.dense`).
    pub pooler: bool,
    /// A cross-encoder (reranker) head with this many outputs: `XLMRobertaClassificationHead`
    /// (`classifier.dense` h × h + h, `classifier.out_proj` h × N + N), as the BGE rerankers ship
    /// it (`XLMRobertaForSequenceClassification`, `num_labels` 1). 0 = an embedding model.
    #[serde(skip_serializing_if = "is_zero")]
    pub classifier_outputs: u64,
}

/// Gemma 3n's additions to a Gemma-style decoder (transformers
/// `models/gemma3n/modeling_gemma3n.py`, llama.cpp `LLM_ARCH_GEMMA3N`): per-layer embeddings
/// (PLE), Alternating Updates (AltUp) and the Learned Augmented Residual Layer (LAuReL). Its
/// tensors are listed in `gemma3n.rs`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Gemma3nSpec {
    /// `hidden_size_per_layer_input`: the width of each layer's slice of the per-layer
    /// embedding (256).
    pub ple_dim: u64,
    /// `vocab_size_per_layer_input`: rows of the per-layer embedding table (262,144).
    pub ple_vocab: u64,
    /// `altup_num_inputs`: the hidden-state copies AltUp carries (4).
    pub altup_inputs: u64,
    /// `laurel_rank`: the low rank of LAuReL's two projections (64).
    pub laurel_rank: u64,
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
    /// Gated attention output (Qwen3-Next `Qwen3NextAttention`: `q_proj` is
    /// `h × 2·n_h·d`, the second half a sigmoid gate on the attention output).
    #[serde(skip_serializing_if = "is_false")]
    pub attn_output_gate: bool,
    /// Norm vectors of size `hidden` per layer (2 for Llama; 4 for Gemma 2/3).
    pub norms_per_layer: u64,
    pub mlp: MlpKind,
    pub moe: Option<MoeSpec>,
    pub mla: Option<MlaSpec>,
    pub sliding: Option<SlidingWindow>,
    /// Recurrent (linear-attention / state-space) layers; `None` = every layer is attention.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recurrent: Option<RecurrentSpec>,
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
    /// An encoder-only model (BERT, XLM-RoBERTa): its embedding-side parts; `None` for decoders.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encoder: Option<EncoderSpec>,
    /// Gemma 3n's per-layer embeddings, AltUp and LAuReL; `None` for other models.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gemma3n: Option<Gemma3nSpec>,
    /// The last `kv_shared_layers` layers reuse the K and V of the last earlier layer of their
    /// kind and cache nothing themselves (Gemma 3n `num_kv_shared_layers`; llama.cpp
    /// `n_layer_kv_from_start`). 0 = every attention layer has its own cache.
    #[serde(skip_serializing_if = "is_zero")]
    pub kv_shared_layers: u64,
    /// Layers that attend to the image tokens instead of the text (Llama 3.2 Vision's
    /// `cross_attention_layers`, transformers `MllamaCrossAttentionDecoderLayer`): their K/V are
    /// the images', sized with the vision encoder (`estimate::vision`), and they keep no
    /// per-token cache. 0 = none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cross_attention_layers: u64,
    /// The checkpoint's MTP layers read the model's own token embedding and output head instead
    /// of storing copies (Qwen3.5 `mtp_use_dedicated_embeddings: false`; transformers
    /// `Qwen3_5TextConfig`). DeepSeek-V3 stores copies (false). Either way the runtimes bind the
    /// target's to the drafter, so its memory never counts them twice
    /// (`core::estimate::shared_with_model`); this records what the checkpoint holds.
    #[serde(skip_serializing_if = "is_false")]
    pub mtp_shares_embeddings: bool,
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
            attn_output_gate: false,
            norms_per_layer: 2,
            mlp: MlpKind::Gated,
            moe: None,
            mla: None,
            sliding: None,
            recurrent: None,
            max_context: 8192,
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
    /// Whether these layers are recurrent (no KV cache; see [`RecurrentSpec`]).
    pub recurrent: bool,
    /// Whether these layers hold only an MLP (no attention, no recurrent mixer; see
    /// [`RecurrentSpec::mlp_only_layers`]).
    pub mlp_only: bool,
}

mod gemma3n;
mod generic;
mod inventory;
mod recurrent;
#[cfg(test)]
mod tests;
