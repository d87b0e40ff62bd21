//! From a GGUF header to a model: the architecture's metadata keys (llama.cpp
//! `src/llama-arch.cpp` `LLM_KV_NAMES`) and the tensors' shapes and types become a
//! [`ModelSpec`] with the file's exact weight bytes.

use super::{GgufHeader, Value};
use crate::core::format::one_line;
use crate::core::ggml::file_type_name;
use crate::core::model::{
    FileWeights, IndexerSpec, MlaSpec, MlpKind, ModelSpec, MoeSpec, RecurrentKind, RecurrentSpec,
    ShapeSource, SlidingWindow,
};
use crate::core::precision::WeightPrecision;
use crate::core::units::Bytes;
use crate::io::import::error::{ImportError, count_str};
use crate::io::import::{ImportedModel, bytes_by_type_sorted, implausible, nearest_precision};
use std::collections::HashSet;
use std::collections::{BTreeMap, BTreeSet};

/// Architectures without an output head (encoders): llama.cpp creates no `output` for them.
const ENCODER_ARCHES: [&str; 7] = [
    "bert",
    "nomic-bert",
    "nomic-bert-moe",
    "jina-bert-v2",
    "neo-bert",
    "modern-bert",
    "t5encoder",
];

/// The layer index of a `blk.N.…` tensor.
pub fn blk_index(name: &str) -> Option<u64> {
    let rest = name.strip_prefix("blk.")?;
    let (n, tail) = rest.split_once('.')?;
    if n.is_empty() || tail.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.parse().ok()
}

/// (min, max) of a per-model or per-layer integer value (`head_count_kv` may be an array).
fn per_layer(v: Option<&Value>) -> Option<(u64, u64)> {
    match v? {
        Value::Array(a) if a.kept && !a.items.is_empty() => {
            let xs: Vec<u64> = a.items.iter().filter_map(Value::as_u64).collect();
            if xs.len() != a.items.len() {
                return None;
            }
            Some((*xs.iter().min()?, *xs.iter().max()?))
        }
        v => v.as_u64().map(|x| (x, x)),
    }
}

/// A per-layer integer value for each of `layers` layers: a kept array of exactly that many
/// integers, or one integer for every layer (llama.cpp `get_key_or_arr`). `None` otherwise.
fn per_layer_values(v: Option<&Value>, layers: u64) -> Option<Vec<u64>> {
    match v? {
        Value::Array(a) if a.kept && a.len == layers => a.items.iter().map(Value::as_u64).collect(),
        Value::Array(_) => None,
        v => {
            let x = v.as_u64()?;
            Some(vec![x; usize::try_from(layers).ok()?])
        }
    }
}

/// Architectures whose per-layer `head_count_kv` / `feed_forward_length` of 0 mark the layers
/// without attention / without an MLP, which [`recurrent_spec`] reads exactly.
fn per_layer_kinds_read(arch: &str) -> bool {
    matches!(arch, "lfm2" | "lfm2moe" | "nemotron_h" | "nemotron_h_moe")
}

/// Layers `il` of `n` that llama.cpp's `set_swa_pattern(p)` marks as sliding: `il % p < p - 1`.
fn swa_local_layers(n: u64, p: u64) -> u64 {
    if p == 0 {
        return n;
    }
    (n / p) * (p - 1) + (n % p).min(p - 1)
}

/// Layers without a router (`ffn_gate_inp`) between the first and the last MoE layer: the dense
/// ones an interleaved MoE keeps (llama4, Qwen-MoE `mlp_only_layers`).
fn dense_between(moe: &BTreeSet<u64>, layers: u64) -> Vec<u64> {
    let (Some(&first), Some(&last)) = (moe.first(), moe.last()) else {
        return Vec::new();
    };
    let last = last.min(layers.saturating_sub(1));
    if last < first || last - first > 1 << 16 {
        return Vec::new();
    }
    (first..=last).filter(|i| !moe.contains(i)).collect()
}

/// llama.cpp file type → the preset headroom models it with (exact where one exists).
fn precision_for_file_type(ftype: u64) -> Option<WeightPrecision> {
    use WeightPrecision as W;
    Some(match ftype & !1024 {
        0 => W::Fp32,
        1 => W::Fp16,
        2 => W::Q4_0,
        7 => W::Q8_0,
        8 => W::Q5_0,
        10 | 21 => W::Q2K,
        11..=13 => W::Q3KM,
        14 | 15 => W::Q4KM,
        16 | 17 => W::Q5KM,
        18 => W::Q6K,
        19 => W::Iq2Xxs,
        20 => W::Iq2Xs,
        23 => W::Iq3Xxs,
        25 => W::Iq4Nl,
        27 => W::Iq3M,
        29 => W::Iq2M,
        30 => W::Iq4Xs,
        32 => W::Bf16,
        38 => W::Mxfp4,
        39 => W::Nvfp4,
        _ => return None,
    })
}

/// The preset for a file without `general.file_type`, from its dominant tensor type.
fn precision_for_ggml_type(name: &str) -> Option<WeightPrecision> {
    use WeightPrecision as W;
    Some(match name {
        "F32" => W::Fp32,
        "F16" => W::Fp16,
        "BF16" => W::Bf16,
        "Q8_0" => W::Q8_0,
        "Q6_K" => W::Q6K,
        "Q5_K" => W::Q5KM,
        "Q5_0" => W::Q5_0,
        "Q4_K" => W::Q4KM,
        "Q4_0" => W::Q4_0,
        "Q3_K" => W::Q3KM,
        "Q2_K" => W::Q2K,
        "IQ4_XS" => W::Iq4Xs,
        "IQ4_NL" => W::Iq4Nl,
        "IQ3_XXS" => W::Iq3Xxs,
        "IQ2_XS" => W::Iq2Xs,
        "IQ2_XXS" => W::Iq2Xxs,
        "MXFP4" => W::Mxfp4,
        "NVFP4" => W::Nvfp4,
        _ => return None,
    })
}

/// The metadata of the file's architecture: `{arch}.{key}` lookups.
struct Meta<'a> {
    header: &'a GgufHeader,
    arch: String,
}

impl Meta<'_> {
    fn key(&self, s: &str) -> String {
        format!("{}.{s}", self.arch)
    }
    fn get(&self, s: &str) -> Option<&Value> {
        self.header.get(&self.key(s))
    }
    fn get_u(&self, s: &str) -> Option<u64> {
        self.get(s).and_then(Value::as_u64)
    }
}

/// What the tensors say: bytes and parameters (multi-token-prediction layers set apart), bytes
/// per ggml type, the tensor-name suffixes present, the layers with a router and the routed
/// experts' bytes per layer.
#[derive(Default)]
struct TensorStats<'a> {
    total: u64,
    params: u64,
    layer_bytes: u64,
    max_blk: Option<u64>,
    by_type: BTreeMap<&'static str, u64>,
    matrix_by_type: BTreeMap<&'static str, u64>,
    suffixes: HashSet<&'a str>,
    moe_layers: BTreeSet<u64>,
    expert_bytes_by_layer: Vec<u64>,
    mtp_bytes: u64,
    mtp_count: u64,
}

impl<'a> TensorStats<'a> {
    /// Multi-token-prediction layers (blk.N for N ≥ `main_layers`) are counted apart: llama.cpp
    /// creates them with TENSOR_SKIP and does not load them unless asked to (load_mtp).
    fn of(h: &'a GgufHeader, main_layers: Option<u64>, mtp_layers: u64) -> Self {
        let mut st = TensorStats::default();
        for t in &h.tensors {
            if let (Some(i), Some(main)) = (blk_index(&t.name), main_layers)
                && mtp_layers > 0
                && i >= main
            {
                st.mtp_bytes = st.mtp_bytes.saturating_add(t.bytes);
                st.mtp_count += 1;
                continue;
            }
            st.total = st.total.saturating_add(t.bytes);
            st.params = st.params.saturating_add(t.elements);
            *st.by_type.entry(t.ggml_type.name).or_default() += t.bytes;
            if t.dims.len() >= 2 {
                *st.matrix_by_type.entry(t.ggml_type.name).or_default() += t.bytes;
            }
            if let Some(i) = blk_index(&t.name) {
                st.add_layer_tensor(i, t);
            }
        }
        st
    }

    fn add_layer_tensor(&mut self, layer: u64, t: &'a super::TensorInfo) {
        self.layer_bytes = self.layer_bytes.saturating_add(t.bytes);
        if crate::core::placement::experts::is_routed_expert_tensor(&t.name)
            && let Ok(slot) = usize::try_from(layer)
            && slot < crate::core::model_limits::MAX_LAYERS as usize
        {
            if self.expert_bytes_by_layer.len() <= slot {
                self.expert_bytes_by_layer.resize(slot + 1, 0);
            }
            self.expert_bytes_by_layer[slot] =
                self.expert_bytes_by_layer[slot].saturating_add(t.bytes);
        }
        self.max_blk = Some(self.max_blk.map_or(layer, |m| m.max(layer)));
        if let Some((_, suffix)) = t.name[4..].split_once('.') {
            self.suffixes.insert(suffix);
            if suffix == "ffn_gate_inp.weight" {
                self.moe_layers.insert(layer);
            }
        }
    }

    fn has(&self, suffix: &str) -> bool {
        self.suffixes.contains(suffix)
    }

    /// The type holding most bytes among the matrices (norms and biases stay F32 in every mix).
    fn dominant(&self) -> Option<&'static str> {
        let pool = if self.matrix_by_type.is_empty() {
            &self.by_type
        } else {
            &self.matrix_by_type
        };
        pool.iter()
            .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
            .map(|(n, _)| *n)
    }
}

/// The dense shape: from the metadata, else from the tensors (then not exact).
struct Shape {
    layers: u64,
    hidden: u64,
    heads: u64,
    kv_heads: u64,
    head_dim: u64,
    intermediate: u64,
    vocab: u64,
    norms_per_layer: u64,
    mlp: MlpKind,
    /// Every size came from the metadata.
    exact: bool,
}

fn dense_shape(
    meta: &Meta,
    stats: &TensorStats,
    main_layers: Option<u64>,
    notes: &mut Vec<String>,
) -> Shape {
    let h = meta.header;
    let tok_embd = h.tensor("token_embd.weight");
    let blk0 = |s: &str| h.tensor(&format!("blk.0.{s}"));
    let mut exact = !meta.arch.is_empty();
    let layers = match main_layers {
        Some(n) => n,
        None => {
            exact = false;
            stats.max_blk.map_or(0, |m| m.saturating_add(1))
        }
    };
    let hidden = match meta.get_u("embedding_length") {
        Some(n) => n,
        None => {
            exact = false;
            tok_embd.and_then(|t| t.dims.first().copied()).unwrap_or(0)
        }
    };
    let (_, heads) = per_layer(meta.get("attention.head_count")).unwrap_or_else(|| {
        exact = false;
        (0, 0)
    });
    let (kv_min, kv_heads) =
        per_layer(meta.get("attention.head_count_kv")).unwrap_or((heads, heads));
    if kv_min != kv_heads && !(kv_min == 0 && per_layer_kinds_read(&meta.arch)) {
        notes.push(format!("attention.head_count_kv varies per layer ({kv_min}–{kv_heads}): the KV cache is sized with {kv_heads} on every layer, an upper bound"));
    }
    let head_dim = meta
        .get_u("attention.key_length")
        .unwrap_or(hidden.checked_div(heads).unwrap_or(0));
    let intermediate = match per_layer(meta.get("feed_forward_length")) {
        Some((lo, hi)) => {
            if lo != hi && !(lo == 0 && per_layer_kinds_read(&meta.arch)) {
                notes.push(format!("feed_forward_length varies per layer ({lo}–{hi}); the exact bytes come from the tensors"));
            }
            hi
        }
        None => blk0("ffn_up.weight")
            .and_then(|t| t.dims.get(1).copied())
            .unwrap_or(0),
    };
    Shape {
        layers,
        hidden,
        heads,
        kv_heads,
        head_dim,
        intermediate,
        vocab: vocab_size(h, notes),
        norms_per_layer: norms_per_layer(h, hidden),
        mlp: mlp_kind(stats),
        exact,
    }
}

/// The vocabulary: token_embd's rows, else the tokenizer's token count.
fn vocab_size(h: &GgufHeader, notes: &mut Vec<String>) -> u64 {
    let rows = h
        .tensor("token_embd.weight")
        .and_then(|t| t.dims.get(1).copied());
    let tokens = h
        .get("tokenizer.ggml.tokens")
        .and_then(Value::as_array)
        .map(|a| a.len);
    match (rows, tokens) {
        (Some(v), Some(n)) => {
            if v != n {
                notes.push(format!(
                    "token_embd has {v} rows but the tokenizer lists {n} tokens: using {v}"
                ));
            }
            v
        }
        (Some(v), None) => v,
        (None, Some(n)) => n,
        (None, None) => 0,
    }
}

/// The hidden-sized norms of layer 0 (q/k norms aside); 2 when layer 0 has no `attn_norm`.
fn norms_per_layer(h: &GgufHeader, hidden: u64) -> u64 {
    let n = h
        .tensors
        .iter()
        .filter(|t| {
            t.name.starts_with("blk.0.")
                && t.name.contains("norm")
                && !t.name.contains("attn_q_norm")
                && !t.name.contains("attn_k_norm")
                && t.dims.len() == 1
                && t.elements == hidden
        })
        .count() as u64;
    if n == 0 && h.tensor("blk.0.attn_norm.weight").is_none() {
        2
    } else {
        n
    }
}

fn mlp_kind(stats: &TensorStats) -> MlpKind {
    let gated = stats.has("ffn_gate.weight")
        || stats.has("ffn_gate_exps.weight")
        || stats.has("ffn_gate_up_exps.weight")
        || stats.has("ffn_gate_shexp.weight");
    let plain = stats.has("ffn_up.weight") || stats.has("ffn_up_exps.weight");
    if gated || !plain {
        MlpKind::Gated
    } else {
        MlpKind::Plain
    }
}

/// The mixture of experts, when `expert_count` says there is one.
fn moe_spec(
    meta: &Meta,
    stats: &TensorStats,
    layers: u64,
    notes: &mut Vec<String>,
) -> Option<MoeSpec> {
    let experts = meta.get_u("expert_count").filter(|e| *e > 0)?;
    let h = meta.header;
    let first = |s: &str| {
        h.tensors
            .iter()
            .find(|t| t.name.starts_with("blk.") && t.name.ends_with(s))
    };
    let expert_ffn = meta
        .get_u("expert_feed_forward_length")
        .or_else(|| {
            first(".ffn_gate_exps.weight")
                .or_else(|| first(".ffn_up_exps.weight"))
                .and_then(|t| t.dims.get(1).copied())
        })
        .unwrap_or(0);
    let shexp = first(".ffn_up_shexp.weight");
    let shared = meta
        .get_u("expert_shared_count")
        .unwrap_or(u64::from(shexp.is_some()));
    let shared_ffn = meta
        .get_u("expert_shared_feed_forward_length")
        .or_else(|| {
            shexp
                .and_then(|t| t.dims.get(1).copied())
                .map(|w| w / shared.max(1))
        })
        .unwrap_or(0);
    let active = meta.get_u("expert_used_count").unwrap_or(0);
    if active == 0 {
        notes.push(format!(
            "{}.expert_used_count is missing: speed assumes every expert is active",
            one_line(&meta.arch)
        ));
    }
    Some(MoeSpec {
        experts,
        active_experts: if active == 0 { experts } else { active },
        expert_ffn,
        shared_experts: shared,
        shared_ffn,
        shared_expert_gate: stats.has("ffn_gate_inp_shexp.weight"),
        first_dense_layers: meta
            .get_u("leading_dense_block_count")
            .unwrap_or_else(|| stats.moe_layers.first().copied().unwrap_or(0).min(layers)),
        dense_layers: dense_between(&stats.moe_layers, layers),
        router_bias: stats.has("exp_probs_b.bias") || stats.has("ffn_gate_inp.bias"),
        sparse_step: meta.get_u("interleave_moe_layer_step").unwrap_or(0),
    })
}

/// Multi-head latent attention, when `attention.kv_lora_rank` says there is one.
fn mla_spec(meta: &Meta) -> Option<MlaSpec> {
    let rank = meta.get_u("attention.kv_lora_rank").filter(|r| *r > 0)?;
    let rope = meta.get_u("rope.dimension_count").unwrap_or(0);
    let key_len = meta
        .get_u("attention.key_length_mla")
        .or(meta.get_u("attention.key_length"))
        .unwrap_or(0);
    let v_len = meta
        .get_u("attention.value_length_mla")
        .or(meta.get_u("attention.value_length"))
        .unwrap_or(0);
    Some(MlaSpec {
        kv_lora_rank: rank,
        q_lora_rank: meta.get_u("attention.q_lora_rank").unwrap_or(0),
        qk_rope_head_dim: rope,
        qk_nope_head_dim: key_len.saturating_sub(rope),
        v_head_dim: v_len,
        // DeepSeek-V3.2 (`deepseek32`): llama.cpp's LLM_KV_ATTENTION_INDEXER_* keys.
        indexer: meta
            .get_u("attention.indexer.head_count")
            .filter(|h| *h > 0)
            .map(|heads| IndexerSpec {
                heads,
                head_dim: meta.get_u("attention.indexer.key_length").unwrap_or(0),
                topk: meta.get_u("attention.indexer.top_k").unwrap_or(0),
            }),
    })
}

/// The sliding window, when `attention.sliding_window` says there is one, and which layers use
/// it.
fn sliding_window(meta: &Meta, layers: u64, notes: &mut Vec<String>) -> Option<SlidingWindow> {
    let window = meta.get_u("attention.sliding_window").filter(|w| *w > 0)?;
    // (local layers, period): llama.cpp's set_swa_pattern(p) makes layer il local when
    // il % p < p - 1, i.e. global when (il + 1) % p == 0 (SlidingWindow::period).
    let periodic = |p: u64| (swa_local_layers(layers, p), p);
    let (local, period) = match meta.get("attention.sliding_window_pattern") {
        Some(Value::Array(a)) if a.kept => {
            let n = a
                .items
                .iter()
                .filter(|v| {
                    v.as_bool()
                        .unwrap_or_else(|| v.as_u64().is_some_and(|x| x != 0))
                })
                .count() as u64;
            notes.push(format!("attention.sliding_window_pattern marks {n} of {} layers as sliding; modelled as the last {n}", a.len));
            (n, 0)
        }
        Some(v) if v.as_u64().is_some() => periodic(v.as_u64().unwrap_or(0)),
        _ => match meta.arch.as_str() {
            // set_swa_pattern() per architecture in llama-model.cpp.
            "gemma2" | "gpt-oss" => periodic(2),
            "gemma3" => periodic(6),
            // LLM_ARCH_GEMMA3N: hparams.set_swa_pattern(5).
            "gemma3n" => periodic(5),
            "cohere2" => periodic(4),
            _ => {
                notes.push(format!("attention.sliding_window {window}: no pattern in the file, assumed on every layer"));
                (layers, 0)
            }
        },
    };
    Some(SlidingWindow {
        window,
        local_layers: local.min(layers),
        period,
    })
}

/// Tied embeddings: llama.cpp creates the output from token_embd with TENSOR_DUPLICATED
/// (llama-model.cpp). The input layer always stays on the CPU; the output layer goes to the GPU
/// with -ngl, so there the same matrix is loaded a second time. Returns (tied, the bytes of that
/// second copy).
fn tied_output(meta: &Meta, notes: &mut Vec<String>) -> (bool, u64) {
    let h = meta.header;
    let tok_embd = h.tensor("token_embd.weight");
    let is_encoder = ENCODER_ARCHES.contains(&meta.arch.as_str());
    let tied = h.tensor("output.weight").is_none() && tok_embd.is_some() && !is_encoder;
    match (tied, tok_embd) {
        (true, Some(te)) => {
            notes.push(format!(
                "output.weight is absent (tied embeddings): llama.cpp builds the output matrix from token_embd ({}); with the output layer on a GPU it loads that copy there while token_embd stays in host memory: +{} ({} bytes) beyond the file",
                te.ggml_type.name,
                Bytes(te.bytes).display_gib(),
                te.bytes
            ));
            (tied, te.bytes)
        }
        _ => (tied, 0),
    }
}

/// The preset the weights are modelled with, and the format as shown ("GGUF Q4_K_M (mostly
/// Q4_K)").
fn precision_and_format(
    h: &GgufHeader,
    stats: &TensorStats,
    notes: &mut Vec<String>,
) -> (Option<WeightPrecision>, String) {
    let dominant = stats.dominant();
    let ftype = h.get_u64("general.file_type");
    let ftype_name = ftype.map(|f| {
        file_type_name(f)
            .map(str::to_string)
            .unwrap_or_else(|| format!("file type {f}"))
    });
    let preset = ftype.and_then(precision_for_file_type).or_else(|| {
        if ftype.is_none() {
            dominant.and_then(precision_for_ggml_type)
        } else {
            None
        }
    });
    let weights = match preset {
        Some(p) => Some(p),
        None if stats.params > 0 => {
            let bpw = stats.total as f64 * 8.0 / stats.params as f64;
            let nearest = nearest_precision(bpw, true);
            if let Some(p) = nearest {
                notes.push(format!(
                    "{} has no preset of its own: the nearest is {} by bits per weight ({}); the exact bytes come from the file",
                    ftype_name.clone().unwrap_or_else(|| dominant.unwrap_or("this mix").to_string()),
                    p.label(),
                    crate::core::format::bits(bpw)
                ));
            }
            nearest
        }
        None => None,
    };
    let format = match (&ftype_name, dominant) {
        (Some(f), Some(d)) => format!("GGUF {f} (mostly {d})"),
        (Some(f), None) => format!("GGUF {f}"),
        (None, Some(d)) => format!("GGUF (mostly {d})"),
        (None, None) => "GGUF (no tensors)".to_string(),
    };
    (weights, format)
}

/// Fails when the spec holds an implausible value, pointing at the metadata entry the value came
/// from, else at the tensors it was read from.
fn check_plausible(spec: &ModelSpec, meta: &Meta) -> Result<(), ImportError> {
    let Some((field, v)) = implausible(spec) else {
        return Ok(());
    };
    let h = meta.header;
    let key = field.gguf_key().unwrap_or("");
    let at = h
        .metadata
        .iter()
        .find(|e| !key.is_empty() && e.key == meta.key(key))
        .map(|e| e.offset)
        .or(h.tensor("token_embd.weight").map(|t| t.header_offset))
        .unwrap_or(8);
    Err(ImportError::invalid_at(
        at,
        format!(
            "{} {} is not plausible (over {})",
            field.label(),
            count_str(v),
            field.max()
        ),
    ))
}

/// The recurrent layers of the hybrid and state-space architectures llama.cpp reads into
/// `llama_memory_recurrent`, from the `{arch}.ssm.*` keys (`src/llama-arch.cpp`:
/// `ssm.conv_kernel`, `ssm.inner_size`, `ssm.state_size`, `ssm.time_step_rank`,
/// `ssm.group_count`; `src/llama-hparams.cpp` `n_embd_r()` / `n_embd_s()` size the state from
/// them). `mamba2`: every layer, `n_head = time_step_rank`. `qwen3next`, `qwen35`, `qwen35moe`
/// (Gated DeltaNet): `num_v_heads = time_step_rank`, `num_k_heads = group_count`,
/// `head_k_dim = state_size`, `head_v_dim = inner_size / num_v_heads`; layer `i` is full
/// attention when `(i + 1) % full_attention_interval == 0` (default 4, llama-model.cpp
/// `load_hparams`). `nemotron_h` (Mamba-2 as `mamba2`): `load_hparams` makes a layer recurrent
/// iff its `attention.head_count_kv` and `feed_forward_length` are both 0, so a layer with KV
/// heads is attention and one with only a feed-forward length is an MLP, and no layer has
/// both. `nemotron_h_moe` (Nemotron 3) has the same per-layer layout (llama.cpp builds both
/// with `llm_build_nemotron_h`): its 'E' layers are feed-forward-only layers whose routed
/// experts are their `ffn_*_exps` tensors, read by [`moe_spec`]. `lfm2`, `lfm2moe`: see
/// [`short_conv_spec`]. Other architectures with recurrent layers (mamba, jamba,
/// granitehybrid, falcon-h1, rwkv…) get a note and are sized as attention everywhere.
fn recurrent_spec(
    meta: &Meta,
    stats: &TensorStats,
    (layers, hidden): (u64, u64),
    notes: &mut Vec<String>,
) -> Option<RecurrentSpec> {
    let kind = match meta.arch.as_str() {
        "mamba2" | "nemotron_h" | "nemotron_h_moe" => RecurrentKind::Mamba2,
        "qwen3next" | "qwen35" | "qwen35moe" => RecurrentKind::GatedDeltaNet,
        // llama.cpp `src/models/lfm2moe.cpp` `llama_model_lfm2moe::load_arch_hparams` reads
        // the same `shortconv.l_cache` and per-layer KV heads as LFM2, plus the MoE keys
        // (`leading_dense_block_count`, `expert_feed_forward_length`) that [`moe_spec`] reads.
        "lfm2" | "lfm2moe" => return short_conv_spec(meta, stats, (layers, hidden), notes),
        _ => {
            if meta.get_u("ssm.inner_size").is_some() || meta.get_u("rwkv.head_size").is_some() {
                notes.push(format!(
                    "{} has recurrent (state-space / linear-attention) layers, which are not modelled yet: the KV cache is sized as if every layer attended",
                    one_line(&meta.arch)
                ));
            }
            return None;
        }
    };
    use crate::core::model_limits::{MAX_FFN, MAX_HEAD_DIM, MAX_HEADS};
    let d_inner = meta.get_u("ssm.inner_size")?;
    let heads = meta.get_u("ssm.time_step_rank").filter(|&h| h > 0)?;
    let state = meta.get_u("ssm.state_size").unwrap_or(0);
    let groups = meta.get_u("ssm.group_count").unwrap_or(1);
    let conv_kernel = meta.get_u("ssm.conv_kernel").unwrap_or(4);
    if d_inner > MAX_FFN
        || heads > MAX_HEADS
        || state > MAX_HEAD_DIM
        || groups > heads
        || conv_kernel > MAX_HEAD_DIM
    {
        notes.push(format!(
            "{}.ssm.* holds implausible sizes (inner {d_inner}, heads {heads}, state {state}, groups {groups}, kernel {conv_kernel}): the recurrent state is not sized",
            one_line(&meta.arch)
        ));
        return None;
    }
    let (mut attention_layers, mut mlp_only_layers) = (Vec::new(), Vec::new());
    let nemotron = matches!(meta.arch.as_str(), "nemotron_h" | "nemotron_h_moe");
    if nemotron {
        let kv = per_layer_values(meta.get("attention.head_count_kv"), layers);
        let ff = per_layer_values(meta.get("feed_forward_length"), layers);
        let (Some(kv), Some(ff)) = (kv, ff) else {
            notes.push(format!(
                "{} has no per-layer attention.head_count_kv / feed_forward_length for its {layers} layers: the recurrent state is not sized",
                one_line(&meta.arch)
            ));
            return None;
        };
        for (i, (&k, &f)) in (0u64..).zip(kv.iter().zip(&ff)) {
            if k > 0 {
                attention_layers.push(i);
            } else if f > 0 {
                mlp_only_layers.push(i);
            }
        }
    } else if kind == RecurrentKind::GatedDeltaNet {
        let p = meta.get_u("full_attention_interval").unwrap_or(4).max(1);
        attention_layers = (0..layers).filter(|i| (i + 1).is_multiple_of(p)).collect();
    }
    Some(RecurrentSpec {
        kind,
        attention_layers,
        heads,
        head_dim: d_inner / heads,
        state,
        groups,
        conv_kernel,
        conv_bias: stats.has("ssm_conv1d.bias"),
        proj_bias: false,
        dt_rank: 0,
        mixers_without_mlp: nemotron,
        mlp_only_layers,
    })
}

/// LFM2's short-convolution layers (llama.cpp `src/llama-model.cpp` `load_hparams`,
/// `LLM_ARCH_LFM2`): `shortconv.l_cache` is the conv kernel, and a layer is recurrent iff its
/// `attention.head_count_kv` is 0. The state is `(l_cache − 1) × n_embd` per layer
/// (`llama-hparams.cpp` `n_embd_r()`); the conv has a bias when `shortconv.conv.bias` exists.
fn short_conv_spec(
    meta: &Meta,
    stats: &TensorStats,
    (layers, hidden): (u64, u64),
    notes: &mut Vec<String>,
) -> Option<RecurrentSpec> {
    use crate::core::model_limits::{MAX_HEAD_DIM, MAX_HIDDEN};
    let arch = one_line(&meta.arch);
    let Some(conv_kernel) = meta.get_u("shortconv.l_cache") else {
        notes.push(format!(
            "{arch}.shortconv.l_cache is missing: the short-convolution layers' state is not sized"
        ));
        return None;
    };
    let kv = per_layer_values(meta.get("attention.head_count_kv"), layers);
    let (Some(kv), true) = (kv, conv_kernel <= MAX_HEAD_DIM && hidden <= MAX_HIDDEN) else {
        notes.push(format!(
            "{arch} has no per-layer attention.head_count_kv for its {layers} layers, or an implausible shortconv.l_cache {conv_kernel}: the short-convolution layers' state is not sized"
        ));
        return None;
    };
    Some(RecurrentSpec {
        kind: RecurrentKind::ShortConv,
        attention_layers: (0u64..)
            .zip(&kv)
            .filter(|&(_, &k)| k > 0)
            .map(|(i, _)| i)
            .collect(),
        heads: hidden,
        head_dim: 1,
        state: 0,
        groups: 0,
        conv_kernel,
        conv_bias: stats.has("shortconv.conv.bias"),
        proj_bias: false,
        dt_rank: 0,
        mlp_only_layers: Vec::new(),
        mixers_without_mlp: false,
    })
}

/// [`recurrent_spec`], and for a pure state-space model (no attention head count) the SSM's
/// heads as the shape's, which is then exact without `attention.head_count`.
fn recurrent_layers(
    meta: &Meta,
    stats: &TensorStats,
    shape: &mut Shape,
    notes: &mut Vec<String>,
) -> Option<RecurrentSpec> {
    let recurrent = recurrent_spec(meta, stats, (shape.layers, shape.hidden), notes);
    if let Some(r) = recurrent.as_ref().filter(|r| r.attention_layers.is_empty())
        && shape.heads == 0
    {
        (shape.heads, shape.kv_heads, shape.head_dim) = (r.heads, r.heads, r.head_dim);
        shape.exact = shape.layers > 0 && shape.hidden > 0;
    }
    recurrent
}

/// Gemma 3n's per-layer embeddings, AltUp and LAuReL from a `gemma3n` GGUF (llama.cpp
/// `src/llama-model.cpp` `load_tensors`, `LLM_ARCH_GEMMA3N`): the width per layer
/// `embedding_length_per_layer_input`, `altup.num_inputs`, `laurel_rank`, and the table's rows
/// from `per_layer_token_embd.weight` (`ne = [n_embd_altup × n_layer, n_vocab]`).
fn gemma3n_spec(meta: &Meta, h: &GgufHeader) -> Option<crate::core::model::Gemma3nSpec> {
    if meta.arch != "gemma3n" {
        return None;
    }
    let table = h.tensor("per_layer_token_embd.weight")?;
    Some(crate::core::model::Gemma3nSpec {
        ple_dim: meta.get_u("embedding_length_per_layer_input")?,
        ple_vocab: table.dims.get(1).copied()?,
        altup_inputs: meta.get_u("altup.num_inputs")?,
        laurel_rank: meta.get_u("laurel_rank")?,
    })
}

/// Builds the imported model from a header (split files merged into one header first).
/// `source` is the path shown for provenance, `name_hint` the name used without `general.name`.
/// Fails when the architecture holds an implausible value (a block count of 2^40, …); the error
/// points at its metadata entry.
pub fn to_model(
    h: &GgufHeader,
    source: &str,
    name_hint: &str,
) -> Result<ImportedModel, ImportError> {
    let meta = Meta {
        header: h,
        arch: h.get_str("general.architecture").unwrap_or("").to_string(),
    };
    let mtp_layers = meta.get_u("nextn_predict_layers").unwrap_or(0);
    let main_layers = meta
        .get_u("block_count")
        .map(|b| b.saturating_sub(mtp_layers));
    let stats = TensorStats::of(h, main_layers, mtp_layers);
    let mut notes = opening_notes(&meta, &stats, mtp_layers);
    let mut shape = dense_shape(&meta, &stats, main_layers, &mut notes);
    let recurrent = recurrent_layers(&meta, &stats, &mut shape, &mut notes);
    let moe = moe_spec(&meta, &stats, shape.layers, &mut notes);
    let mla = mla_spec(&meta);
    let sliding = sliding_window(&meta, shape.layers, &mut notes);
    let (tied, runtime_extra) = tied_output(&meta, &mut notes);
    let (weights, format) = precision_and_format(h, &stats, &mut notes);
    if h.tensors.is_empty() {
        // Nothing to size: an estimate of 0 B of weights would read as an answer.
        return Err(ImportError::invalid_at(
            16,
            "the file has no tensors (a vocabulary-only GGUF?): there are no weights to size",
        ));
    }
    if !shape.exact && !meta.arch.is_empty() {
        notes.push(format!("some of {}.block_count / embedding_length / attention.head_count are missing: the shape is partly inferred", one_line(&meta.arch)));
    }
    // Strings from the file go into one-line messages and labels: control characters escaped.
    let name = one_line(
        h.get_str("general.name")
            .filter(|s| !s.trim().is_empty())
            .unwrap_or(name_hint),
    )
    .into_owned();
    let has = |s: &str| stats.has(s);
    let spec = ModelSpec {
        name,
        arch: if meta.arch.is_empty() {
            "unknown".into()
        } else {
            one_line(&meta.arch).into_owned()
        },
        layers: shape.layers,
        hidden: shape.hidden,
        heads: shape.heads,
        kv_heads: shape.kv_heads,
        head_dim: shape.head_dim,
        intermediate: shape.intermediate,
        vocab: shape.vocab,
        tied_embeddings: tied,
        qkv_bias: has("attn_q.bias") || has("attn_qkv.bias"),
        o_bias: has("attn_output.bias"),
        mlp_bias: has("ffn_up.bias") || has("ffn_up_exps.bias") || has("ffn_down.bias"),
        qk_norm: has("attn_q_norm.weight") || has("attn_k_norm.weight"),
        attn_sinks: has("attn_sinks.weight") || has("attn_sinks"),
        // Qwen3-Next / Qwen3.5 attention: q_proj also holds the output gate.
        attn_output_gate: recurrent
            .as_ref()
            .is_some_and(|r| r.kind == RecurrentKind::GatedDeltaNet),
        norms_per_layer: shape.norms_per_layer,
        mlp: shape.mlp,
        moe,
        mla,
        sliding,
        recurrent,
        max_context: meta.get_u("context_length").unwrap_or(0),
        source: if shape.exact {
            ShapeSource::Exact
        } else {
            ShapeSource::Estimated
        },
        nominal_params: None,
        mtp_layers,
        file_weights: Some(FileWeights {
            path: source.to_string(),
            total_bytes: stats.total,
            params: stats.params,
            layer_bytes: stats.layer_bytes,
            runtime_extra_bytes: runtime_extra,
            format: format.clone(),
            expert_bytes_by_layer: stats.expert_bytes_by_layer.clone(),
        }),
        gemma3n: gemma3n_spec(&meta, h),
        // llama.cpp `gemma3n.attention.shared_kv_layers` (`n_layer_kv_from_start` = layers − it).
        kv_shared_layers: meta
            .get_u("attention.shared_kv_layers")
            .unwrap_or(0)
            .min(shape.layers),
        ..ModelSpec::default()
    };
    if spec.max_context == 0 && !meta.arch.is_empty() {
        notes.push(format!(
            "{}.context_length is missing",
            one_line(&meta.arch)
        ));
    }
    check_plausible(&spec, &meta)?;
    check_heads(&meta, &stats, &spec)?;
    let by_type = bytes_by_type_sorted(stats.by_type.into_iter().map(|(k, v)| (k.to_string(), v)));
    Ok(ImportedModel::new(
        spec,
        weights,
        &format,
        stats.total,
        notes,
        by_type,
    ))
}

/// The notes on the file as a whole: a missing architecture, multi-token-prediction layers
/// llama.cpp skips at load.
fn opening_notes(meta: &Meta, stats: &TensorStats, mtp_layers: u64) -> Vec<String> {
    let mut notes = Vec::new();
    if meta.arch.is_empty() {
        notes.push("general.architecture is missing (llama.cpp would refuse this file): shape inferred from the tensors".into());
    }
    if mtp_layers > 0 {
        notes.push(format!(
            "{mtp_layers} multi-token-prediction layer(s) ({} tensors, {}) are in the file but llama.cpp skips them at load: not counted",
            stats.mtp_count,
            Bytes(stats.mtp_bytes).display_gib()
        ));
    }
    notes
}

/// Attention with no heads is refused: the KV cache would be 0 B/token without a word
/// (config.json with 0 heads is refused the same way). Architectures without attention (Mamba,
/// RWKV) have no attention tensors and no head count.
fn check_heads(meta: &Meta, stats: &TensorStats, spec: &ModelSpec) -> Result<(), ImportError> {
    let attention = stats.has("attn_q.weight")
        || stats.has("attn_k.weight")
        || stats.has("attn_qkv.weight")
        || stats.has("attn_kv_a_mqa.weight");
    if attention && spec.heads == 0 {
        let key = meta.key("attention.head_count");
        let (at, what) = match meta.header.metadata.iter().find(|e| e.key == key) {
            Some(e) => (e.offset, format!("{} is 0", one_line(&key))),
            None if meta.arch.is_empty() => (
                8,
                "general.architecture is missing, so ARCH.attention.head_count cannot be read,"
                    .to_string(),
            ),
            None => (8, format!("{} is missing", one_line(&key))),
        };
        return Err(ImportError::invalid_at(
            at,
            format!("{what} but the layers have attention tensors: the KV cache cannot be sized"),
        ));
    }
    Ok(())
}
