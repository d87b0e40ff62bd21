//! From a GGUF header to a model: the architecture's metadata keys (llama.cpp
//! `src/llama-arch.cpp` `LLM_KV_NAMES`) and the tensors' shapes and types become a
//! [`ModelSpec`] with the file's exact weight bytes.

use super::{GgufHeader, Value, file_type_name};
use crate::core::format::one_line;
use crate::core::model::{
    FileWeights, MlaSpec, MlpKind, ModelSpec, MoeSpec, ShapeSource, SlidingWindow,
};
use crate::core::precision::WeightPrecision;
use crate::core::units::Bytes;
use crate::io::import::error::{ImportError, count_str};
use crate::io::import::{
    ImportedModel, bytes_by_type_sorted, implausible, nearest_precision, summary_line,
};
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
        32 => W::Bf16,
        38 => W::Mxfp4,
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
        "MXFP4" => W::Mxfp4,
        _ => return None,
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
    let mut notes: Vec<String> = Vec::new();
    let arch = h.get_str("general.architecture").unwrap_or("").to_string();
    let k = |s: &str| format!("{arch}.{s}");
    let get = |s: &str| h.get(&k(s));
    let get_u = |s: &str| get(s).and_then(Value::as_u64);

    // Tensor statistics.
    let mut total: u64 = 0;
    let mut params: u64 = 0;
    let mut layer_bytes: u64 = 0;
    let mut max_blk: Option<u64> = None;
    let mut by_type: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut matrix_by_type: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut suffixes: HashSet<&str> = HashSet::new();
    let mut moe_layers: BTreeSet<u64> = BTreeSet::new();
    let mut expert_bytes_by_layer: Vec<u64> = Vec::new();
    // Multi-token-prediction layers (blk.N for N ≥ block_count − nextn_predict_layers): llama.cpp
    // creates them with TENSOR_SKIP and does not load them unless asked to (load_mtp).
    let mtp_layers = get_u("nextn_predict_layers").unwrap_or(0);
    let main_layers = get_u("block_count").map(|b| b.saturating_sub(mtp_layers));
    let (mut mtp_bytes, mut mtp_count) = (0u64, 0u64);
    for t in &h.tensors {
        if let (Some(i), Some(m)) = (blk_index(&t.name), main_layers)
            && mtp_layers > 0
            && i >= m
        {
            mtp_bytes = mtp_bytes.saturating_add(t.bytes);
            mtp_count += 1;
            continue;
        }
        total = total.saturating_add(t.bytes);
        params = params.saturating_add(t.elements);
        *by_type.entry(t.ggml_type.name).or_default() += t.bytes;
        if t.dims.len() >= 2 {
            *matrix_by_type.entry(t.ggml_type.name).or_default() += t.bytes;
        }
        if let Some(i) = blk_index(&t.name) {
            layer_bytes = layer_bytes.saturating_add(t.bytes);
            if crate::core::experts::is_routed_expert_tensor(&t.name)
                && let Ok(slot) = usize::try_from(i)
                && slot < crate::core::model_limits::MAX_LAYERS as usize
            {
                if expert_bytes_by_layer.len() <= slot {
                    expert_bytes_by_layer.resize(slot + 1, 0);
                }
                expert_bytes_by_layer[slot] = expert_bytes_by_layer[slot].saturating_add(t.bytes);
            }
            max_blk = Some(max_blk.map_or(i, |m: u64| m.max(i)));
            if let Some((_, suffix)) = t.name[4..].split_once('.') {
                suffixes.insert(suffix);
                if suffix == "ffn_gate_inp.weight" {
                    moe_layers.insert(i);
                }
            }
        }
    }
    let has = |s: &str| suffixes.contains(s);
    // The type holding most bytes among the matrices (norms and biases stay F32 in every mix).
    let pool = if matrix_by_type.is_empty() {
        &by_type
    } else {
        &matrix_by_type
    };
    let dominant = pool
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
        .map(|(n, _)| *n);
    let tensor = |n: &str| h.tensor(n);
    let tok_embd = tensor("token_embd.weight");
    let blk0 = |s: &str| tensor(&format!("blk.0.{s}"));

    // Architecture.
    let mut exact = !arch.is_empty();
    if arch.is_empty() {
        notes.push("general.architecture is missing (llama.cpp would refuse this file): shape inferred from the tensors".into());
    }
    if mtp_layers > 0 {
        notes.push(format!(
            "{mtp_layers} multi-token-prediction layer(s) ({mtp_count} tensors, {}) are in the file but llama.cpp skips them at load: not counted",
            Bytes(mtp_bytes).display_gib()
        ));
    }
    let layers = match main_layers {
        Some(n) => n,
        None => {
            exact = false;
            max_blk.map_or(0, |m| m.saturating_add(1))
        }
    };
    let hidden = match get_u("embedding_length") {
        Some(n) => n,
        None => {
            exact = false;
            tok_embd.and_then(|t| t.dims.first().copied()).unwrap_or(0)
        }
    };
    let (_, heads) = per_layer(get("attention.head_count")).unwrap_or_else(|| {
        exact = false;
        (0, 0)
    });
    let (kv_min, kv_heads) = per_layer(get("attention.head_count_kv")).unwrap_or((heads, heads));
    if kv_min != kv_heads {
        notes.push(format!("attention.head_count_kv varies per layer ({kv_min}–{kv_heads}): the KV cache is sized with {kv_heads} on every layer, an upper bound"));
    }
    let head_dim = get_u("attention.key_length").unwrap_or(hidden.checked_div(heads).unwrap_or(0));
    let intermediate = match per_layer(get("feed_forward_length")) {
        Some((lo, hi)) => {
            if lo != hi {
                notes.push(format!("feed_forward_length varies per layer ({lo}–{hi}); the exact bytes come from the tensors"));
            }
            hi
        }
        None => blk0("ffn_up.weight")
            .and_then(|t| t.dims.get(1).copied())
            .unwrap_or(0),
    };
    let vocab_tokens = h
        .get("tokenizer.ggml.tokens")
        .and_then(Value::as_array)
        .map(|a| a.len);
    let vocab = match (tok_embd.and_then(|t| t.dims.get(1).copied()), vocab_tokens) {
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
    };
    let norms_per_layer = {
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
        if n == 0 && blk0("attn_norm.weight").is_none() {
            2
        } else {
            n
        }
    };
    let gated = has("ffn_gate.weight")
        || has("ffn_gate_exps.weight")
        || has("ffn_gate_up_exps.weight")
        || has("ffn_gate_shexp.weight");
    let plain = has("ffn_up.weight") || has("ffn_up_exps.weight");
    let mlp = if gated || !plain {
        MlpKind::Gated
    } else {
        MlpKind::Plain
    };

    let moe = match get_u("expert_count") {
        Some(e) if e > 0 => {
            let first = |s: &str| {
                h.tensors
                    .iter()
                    .find(|t| t.name.starts_with("blk.") && t.name.ends_with(s))
            };
            let expert_ffn = get_u("expert_feed_forward_length")
                .or_else(|| {
                    first(".ffn_gate_exps.weight")
                        .or_else(|| first(".ffn_up_exps.weight"))
                        .and_then(|t| t.dims.get(1).copied())
                })
                .unwrap_or(0);
            let shexp = first(".ffn_up_shexp.weight");
            let shared = get_u("expert_shared_count").unwrap_or(u64::from(shexp.is_some()));
            let shared_ffn = get_u("expert_shared_feed_forward_length")
                .or_else(|| {
                    shexp
                        .and_then(|t| t.dims.get(1).copied())
                        .map(|w| w / shared.max(1))
                })
                .unwrap_or(0);
            let active = get_u("expert_used_count").unwrap_or(0);
            if active == 0 {
                notes.push(format!(
                    "{}.expert_used_count is missing: speed assumes every expert is active",
                    one_line(&arch)
                ));
            }
            Some(MoeSpec {
                experts: e,
                active_experts: if active == 0 { e } else { active },
                expert_ffn,
                shared_experts: shared,
                shared_ffn,
                shared_expert_gate: has("ffn_gate_inp_shexp.weight"),
                first_dense_layers: get_u("leading_dense_block_count")
                    .unwrap_or_else(|| moe_layers.first().copied().unwrap_or(0).min(layers)),
                dense_layers: dense_between(&moe_layers, layers),
                router_bias: has("exp_probs_b.bias") || has("ffn_gate_inp.bias"),
                sparse_step: get_u("interleave_moe_layer_step").unwrap_or(0),
            })
        }
        _ => None,
    };
    let mla = match get_u("attention.kv_lora_rank") {
        Some(r) if r > 0 => {
            let rope = get_u("rope.dimension_count").unwrap_or(0);
            let key_len = get_u("attention.key_length_mla")
                .or(get_u("attention.key_length"))
                .unwrap_or(0);
            let v_len = get_u("attention.value_length_mla")
                .or(get_u("attention.value_length"))
                .unwrap_or(0);
            Some(MlaSpec {
                kv_lora_rank: r,
                q_lora_rank: get_u("attention.q_lora_rank").unwrap_or(0),
                qk_rope_head_dim: rope,
                qk_nope_head_dim: key_len.saturating_sub(rope),
                v_head_dim: v_len,
            })
        }
        _ => None,
    };
    let sliding = match get_u("attention.sliding_window") {
        Some(w) if w > 0 => {
            // (local layers, period): llama.cpp's set_swa_pattern(p) makes layer il local when
            // il % p < p - 1, i.e. global when (il + 1) % p == 0 (SlidingWindow::period).
            let periodic = |p: u64| (swa_local_layers(layers, p), p);
            let (local, period) = match get("attention.sliding_window_pattern") {
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
                _ => match arch.as_str() {
                    // set_swa_pattern() per architecture in llama-model.cpp.
                    "gemma2" | "gpt-oss" => periodic(2),
                    "gemma3" | "gemma3n" => periodic(6),
                    "cohere2" => periodic(4),
                    _ => {
                        notes.push(format!("attention.sliding_window {w}: no pattern in the file, assumed on every layer"));
                        (layers, 0)
                    }
                },
            };
            Some(SlidingWindow {
                window: w,
                local_layers: local.min(layers),
                period,
            })
        }
        _ => None,
    };

    // Tied embeddings: llama.cpp creates the output from token_embd with TENSOR_DUPLICATED
    // (llama-model.cpp). The input layer always stays on the CPU; the output layer goes to the GPU
    // with -ngl, so there the same matrix is loaded a second time.
    let is_encoder = ENCODER_ARCHES.contains(&arch.as_str());
    let tied = tensor("output.weight").is_none() && tok_embd.is_some() && !is_encoder;
    let mut runtime_extra = 0;
    if let (true, Some(te)) = (tied, tok_embd) {
        runtime_extra = te.bytes;
        notes.push(format!(
            "output.weight is absent (tied embeddings): llama.cpp builds the output matrix from token_embd ({}); with the output layer on a GPU it loads that copy there while token_embd stays in host memory: +{} ({} bytes) beyond the file",
            te.ggml_type.name,
            Bytes(te.bytes).display_gib(),
            te.bytes
        ));
    }

    // Precision and format.
    let ftype = h.get_u64("general.file_type");
    let ftype_name = ftype.map(|f| {
        file_type_name(f)
            .map(str::to_string)
            .unwrap_or_else(|| format!("file type {f}"))
    });
    let bpw = if params > 0 {
        total as f64 * 8.0 / params as f64
    } else {
        0.0
    };
    let weights = match ftype.and_then(precision_for_file_type).or_else(|| {
        if ftype.is_none() {
            dominant.and_then(precision_for_ggml_type)
        } else {
            None
        }
    }) {
        Some(p) => Some(p),
        None if params > 0 => {
            let p = nearest_precision(bpw, true);
            if let Some(p) = p {
                notes.push(format!(
                    "{} has no preset of its own: the nearest is {} by bits per weight ({}); the exact bytes come from the file",
                    ftype_name.clone().unwrap_or_else(|| dominant.unwrap_or("this mix").to_string()),
                    p.label(),
                    crate::core::format::bits(bpw)
                ));
            }
            p
        }
        None => None,
    };
    let format = match (&ftype_name, dominant) {
        (Some(f), Some(d)) => format!("GGUF {f} (mostly {d})"),
        (Some(f), None) => format!("GGUF {f}"),
        (None, Some(d)) => format!("GGUF (mostly {d})"),
        (None, None) => "GGUF (no tensors)".to_string(),
    };
    if h.tensors.is_empty() {
        notes.push("the file has no tensors (a vocabulary-only GGUF?)".into());
    }
    if !exact && !arch.is_empty() {
        notes.push(format!("some of {}.block_count / embedding_length / attention.head_count are missing: the shape is partly inferred", one_line(&arch)));
    }
    // Strings from the file go into one-line messages and labels: control characters escaped.

    let name = one_line(
        h.get_str("general.name")
            .filter(|s| !s.trim().is_empty())
            .unwrap_or(name_hint),
    )
    .into_owned();
    let spec = ModelSpec {
        name,
        arch: if arch.is_empty() {
            "unknown".into()
        } else {
            one_line(&arch).into_owned()
        },
        layers,
        hidden,
        heads,
        kv_heads,
        head_dim,
        intermediate,
        vocab,
        tied_embeddings: tied,
        qkv_bias: has("attn_q.bias") || has("attn_qkv.bias"),
        o_bias: has("attn_output.bias"),
        mlp_bias: has("ffn_up.bias") || has("ffn_up_exps.bias") || has("ffn_down.bias"),
        qk_norm: has("attn_q_norm.weight") || has("attn_k_norm.weight"),
        attn_sinks: has("attn_sinks.weight") || has("attn_sinks"),
        norms_per_layer,
        mlp,
        moe,
        mla,
        sliding,
        max_context: get_u("context_length").unwrap_or(0),
        source: if exact {
            ShapeSource::Exact
        } else {
            ShapeSource::Estimated
        },
        nominal_params: None,
        mtp_layers,
        file_weights: Some(FileWeights {
            path: source.to_string(),
            total_bytes: total,
            params,
            layer_bytes,
            runtime_extra_bytes: runtime_extra,
            format: format.clone(),
            expert_bytes_by_layer,
        }),
        ..ModelSpec::default()
    };
    if spec.max_context == 0 {
        notes.push(format!("{}.context_length is missing", one_line(&arch)));
    }
    if let Some((field, v)) = implausible(&spec) {
        // Point at the metadata entry the value came from, else at the tensors it was read from.
        let key = field.gguf_key().unwrap_or("");
        let at = h
            .metadata
            .iter()
            .find(|e| !key.is_empty() && e.key == k(key))
            .map(|e| e.offset)
            .or(tok_embd.map(|t| t.header_offset))
            .unwrap_or(8);
        return Err(ImportError::invalid_at(
            at,
            format!(
                "{} {} is not plausible (over {})",
                field.label(),
                count_str(v),
                field.max()
            ),
        ));
    }
    let summary = summary_line(&spec, &format, total);
    Ok(ImportedModel {
        spec,
        weights,
        summary,
        notes,
        bytes_by_type: bytes_by_type_sorted(by_type.into_iter().map(|(k, v)| (k.to_string(), v))),
    })
}
