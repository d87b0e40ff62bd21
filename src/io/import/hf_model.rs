//! From safetensors headers (and the config.json beside them, when there is one) to a model:
//! exact bytes per dtype from the tensors, the shape from the config or inferred from the tensor
//! names and shapes.

use super::error::{ErrorKind, ImportError, Location, file_name};
use super::hf::{ConfigExtras, config_error, layer_key, parse_json};
use super::safetensors::{Dtype, SafetensorsHeader, Tensor};
use super::{ImportedModel, bytes_by_type_sorted};
use crate::core::hf_config::parse_hf_config_value;
use crate::core::model::{FileWeights, MlpKind, ModelSpec, MoeSpec, ShapeSource};
use crate::core::precision::WeightPrecision;
use crate::core::units::Bytes;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// Builds the model from the headers of one or more files and, when given, the path and text
/// of the config.json beside them.
pub fn build(
    shards: &[(PathBuf, SafetensorsHeader)],
    config: Option<(&Path, &str)>,
    source: &str,
    name_hint: &str,
    mut notes: Vec<String>,
) -> Result<ImportedModel, ImportError> {
    let tensors = all_tensors(shards)?;
    let (cfg_spec, extras) = read_config(config, &mut notes)?;
    let (prefix, layer_count) = decoder_stack(&tensors, &mut notes);
    // Layers past the config's num_hidden_layers (DeepSeek-V3's multi-token-prediction layer 61)
    // are in the files but not in the model transformers builds: not counted.
    let cfg_layers = cfg_spec.as_ref().map_or(u64::MAX, |s| s.layers);
    let tally = Tally::of(&tensors, prefix, cfg_layers, &mut notes);
    let dominant = tally
        .by_dtype
        .iter()
        .max_by_key(|(_, b)| **b)
        .map(|(d, _)| *d);
    let (weights, packed) = precision(&tensors, &extras, dominant, &mut notes);
    let mut spec = match cfg_spec {
        Some(s) => {
            if layer_count > 0 && layer_count < s.layers {
                notes.push(format!(
                    "config.json says {} layers, the tensors have {layer_count}",
                    s.layers
                ));
            }
            s
        }
        None => infer_spec(&tensors, prefix, layer_count, name_hint, &mut notes),
    };
    let dom = dominant.map_or("no tensors", Dtype::name);
    let mut format = format!("safetensors {dom}");
    if shards.len() > 1 {
        format.push_str(&format!(" ({} shards)", shards.len()));
    }
    let bytes_by_type = bytes_by_type_sorted(
        tally
            .by_dtype
            .iter()
            .map(|(d, b)| (d.name().to_string(), *b)),
    );
    if bytes_by_type.len() > 1 {
        let parts: Vec<String> = bytes_by_type
            .iter()
            .map(|(d, b)| format!("{d} {}", Bytes(*b).display_gib()))
            .collect();
        notes.push(format!("bytes per dtype: {}", parts.join(", ")));
    }
    spec.file_weights = Some(FileWeights {
        path: source.to_string(),
        total_bytes: tally.total,
        params: if packed { 0 } else { tally.elements },
        layer_bytes: tally.layer_bytes,
        runtime_extra_bytes: 0,
        format: format.clone(),
        expert_bytes_by_layer: Vec::new(),
    });
    check_plausible(&spec, shards, config.is_some())?;
    Ok(ImportedModel::new(
        spec,
        weights,
        &format,
        tally.total,
        notes,
        bytes_by_type,
    ))
}

/// The tensors of all shards, each once (a name given twice is refused), with at least one.
fn all_tensors(shards: &[(PathBuf, SafetensorsHeader)]) -> Result<Vec<&Tensor>, ImportError> {
    let count: usize = shards.iter().map(|(_, h)| h.tensors.len()).sum();
    let mut tensors: Vec<&Tensor> = Vec::with_capacity(count);
    let mut from: Vec<&Path> = Vec::with_capacity(count);
    for (p, h) in shards {
        for t in &h.tensors {
            tensors.push(t);
            from.push(p);
        }
    }
    if let Some((first, second)) = name_twice(&tensors) {
        let (p, prev) = (from[second], from[first]);
        let twice = if prev == p {
            "is given twice in the header".to_string()
        } else {
            format!("is also in {}", file_name(prev))
        };
        return Err(ImportError {
            file: file_name(p),
            location: Location::File,
            kind: ErrorKind::Invalid(format!("tensor '{}' {twice}", tensors[second].name)),
        });
    }
    if tensors.is_empty() {
        // Nothing to size: an estimate of 0 B of weights would read as an answer.
        return Err(ImportError {
            file: first_file(shards),
            location: Location::File,
            kind: ErrorKind::NotAModel(
                "the header lists no tensors: there are no weights to size".into(),
            ),
        });
    }
    Ok(tensors)
}

/// The first shard's file name, for errors about the whole model.
fn first_file(shards: &[(PathBuf, SafetensorsHeader)]) -> String {
    shards
        .first()
        .map(|(p, _)| file_name(p))
        .unwrap_or_default()
}

/// The config.json beside the weights: its shape when it parses as one (else a note, and the
/// shape is inferred), and its dtype and quantisation.
fn read_config(
    config: Option<(&Path, &str)>,
    notes: &mut Vec<String>,
) -> Result<(Option<ModelSpec>, ConfigExtras), ImportError> {
    let Some((cp, text)) = config else {
        return Ok((None, ConfigExtras::default()));
    };
    let json = parse_json(cp, text)?;
    let extras = ConfigExtras::from_json(&json);
    match parse_hf_config_value(&json) {
        Ok(s) => Ok((Some(s), extras)),
        Err(e) => {
            notes.push(format!(
                "config.json not used ({}): the shape is inferred from the tensors",
                config_error(cp, text, e)
            ));
            Ok((None, extras))
        }
    }
}

/// The decoder's layers: the layer stack holding the most bytes (a vision tower's blocks hold
/// less), as its name prefix and its number of layers.
fn decoder_stack<'a>(tensors: &[&'a Tensor], notes: &mut Vec<String>) -> (&'a str, u64) {
    let mut by_prefix: HashMap<&str, (u64, BTreeSet<u64>)> = HashMap::new();
    for t in tensors {
        if let Some((prefix, i)) = layer_key(&t.name) {
            let e = by_prefix.entry(prefix).or_default();
            e.0 = e.0.saturating_add(t.bytes());
            e.1.insert(i);
        }
    }
    let prefix = by_prefix
        .iter()
        .max_by_key(|(p, (b, _))| (*b, std::cmp::Reverse(**p)))
        .map_or("", |(p, _)| *p);
    let layer_count = by_prefix.get(prefix).map_or(0, |(_, ix)| ix.len() as u64);
    if by_prefix.len() > 1 {
        let mut others: Vec<&str> = by_prefix.keys().copied().filter(|p| *p != prefix).collect();
        others.sort();
        notes.push(format!(
            "layer bytes count the '{prefix}.N' tensors; other stacks ({}) count as outside the layers",
            others.join(", ")
        ));
    }
    (prefix, layer_count)
}

/// The bytes and elements of the tensors the model loads, in all and in the decoder's layers.
struct Tally {
    total: u64,
    elements: u64,
    layer_bytes: u64,
    by_dtype: BTreeMap<Dtype, u64>,
}

impl Tally {
    /// Sums the tensors; layers of the stack `prefix` from `cfg_layers` on are left out (and
    /// noted).
    fn of(tensors: &[&Tensor], prefix: &str, cfg_layers: u64, notes: &mut Vec<String>) -> Tally {
        let (mut extra_bytes, mut extra_layers) = (0u64, BTreeSet::new());
        let mut tally = Tally {
            total: 0,
            elements: 0,
            layer_bytes: 0,
            by_dtype: BTreeMap::new(),
        };
        for t in tensors {
            let layer = layer_key(&t.name)
                .filter(|(p, _)| *p == prefix)
                .map(|(_, i)| i);
            if let Some(i) = layer
                && i >= cfg_layers
            {
                extra_bytes = extra_bytes.saturating_add(t.bytes());
                extra_layers.insert(i);
                continue;
            }
            tally.total = tally.total.saturating_add(t.bytes());
            tally.elements = tally.elements.saturating_add(t.elements);
            let e = tally.by_dtype.entry(t.dtype).or_default();
            *e = e.saturating_add(t.bytes());
            if layer.is_some() {
                tally.layer_bytes = tally.layer_bytes.saturating_add(t.bytes());
            }
        }
        if !extra_layers.is_empty() {
            notes.push(format!(
                "the files hold {} layer(s) beyond config.json's {cfg_layers} ({}; multi-token prediction?): not loaded by transformers, not counted",
                extra_layers.len(),
                Bytes(extra_bytes).display_gib()
            ));
        }
        tally
    }
}

/// The stored precision, from packed-format tensors (GPTQ/AWQ, bitsandbytes, MXFP4, NVFP4), else the
/// dominant dtype, else config.json; and whether the tensors are packed (their element count is
/// then not the parameter count).
fn precision(
    tensors: &[&Tensor],
    extras: &ConfigExtras,
    dominant: Option<Dtype>,
    notes: &mut Vec<String>,
) -> (Option<WeightPrecision>, bool) {
    let any_end = |s: &str| tensors.iter().any(|t| t.name.ends_with(s));
    let any_has = |s: &str| tensors.iter().any(|t| t.name.contains(s));
    let mut packed = false;
    let weights = if any_end(".qweight") {
        packed = true;
        Some(if extras.quant_method.as_deref() == Some("awq") {
            WeightPrecision::Awq4
        } else {
            WeightPrecision::Gptq4
        })
    } else if any_has("quant_state.bitsandbytes__nf4") || any_has("quant_state.bitsandbytes__fp4") {
        packed = true;
        Some(if any_end(".nested_absmax") {
            WeightPrecision::Nf4DoubleQuant
        } else {
            WeightPrecision::Nf4
        })
    } else if any_end(".weight_scale_2") || any_end(".weight_global_scale") {
        // NVFP4: TensorRT Model Optimizer stores `weight` as packed uint8 pairs, `weight_scale`
        // (E4M3, one per 16) and the per-tensor `weight_scale_2`; llm-compressor names them
        // `weight_packed`, `weight_scale` and `weight_global_scale`.
        packed = true;
        notes.push("NVFP4 packed weights (two E2M1 values a byte, an E4M3 scale per 16)".into());
        Some(WeightPrecision::Nvfp4)
    } else if any_end(".SCB") {
        Some(WeightPrecision::Int8)
    } else if extras.mlx_mode.is_some() && any_end(".scales") {
        // mlx-lm's layout (`mx.quantize`): `weight` packed into uint32 words, `scales` and (affine)
        // `biases` per group beside it.
        packed = true;
        notes.push(
            "MLX quantised tensors (values packed in uint32 words, a scale and a bias per group): the exact bytes come from the files"
                .into(),
        );
        extras.precision()
    } else if any_end("_blocks") && any_end("_scales") {
        packed = true;
        notes.push("MXFP4 blocks (gpt-oss style): the exact bytes come from the files".into());
        // The `mxfp4` preset is this layout (routed experts in MXFP4 blocks, the rest BF16).
        Some(WeightPrecision::Mxfp4)
    } else {
        match dominant {
            Some(Dtype::F32) => Some(WeightPrecision::Fp32),
            Some(Dtype::F16) => Some(WeightPrecision::Fp16),
            Some(Dtype::BF16) => Some(WeightPrecision::Bf16),
            Some(Dtype::F8_E4M3 | Dtype::F8_E5M2) => Some(WeightPrecision::Fp8),
            Some(Dtype::I8) => Some(WeightPrecision::Int8),
            _ => extras.precision(),
        }
    };
    if packed {
        notes.push("packed quantised tensors: their element count is not the parameter count, which comes from the architecture".into());
    }
    (weights, packed)
}

/// Refuses a shape no real model has (read from a damaged or hostile file).
fn check_plausible(
    spec: &ModelSpec,
    shards: &[(PathBuf, SafetensorsHeader)],
    with_config: bool,
) -> Result<(), ImportError> {
    let Some((field, v)) = super::implausible(spec) else {
        return Ok(());
    };
    let (what, max) = (field.label(), field.max());
    let from = if with_config {
        "config.json and the tensors"
    } else {
        "the tensor shapes"
    };
    Err(ImportError {
        file: first_file(shards),
        location: Location::File,
        kind: ErrorKind::Invalid(format!(
            "{what} {v} read from {from} is not plausible (over {max})"
        )),
    })
}

/// The first pair of tensors (in order) that share a name. A header may list a million
/// tensors: their names are hashed (std's randomly keyed SipHash, so no file can choose
/// collisions) and the hashes sorted, and only equal hashes compare their names; a map of the
/// names themselves took a quarter of a 100 MB header's import time.
fn name_twice(tensors: &[&Tensor]) -> Option<(usize, usize)> {
    use std::hash::BuildHasher as _;
    let keys = std::hash::RandomState::new();
    let mut hashed: Vec<(u64, usize)> = tensors
        .iter()
        .enumerate()
        .map(|(i, t)| (keys.hash_one(t.name.as_str()), i))
        .collect();
    hashed.sort_unstable();
    let mut best: Option<(usize, usize)> = None;
    for run in hashed.chunk_by(|a, b| a.0 == b.0).filter(|r| r.len() > 1) {
        for (k, &(_, i)) in run.iter().enumerate() {
            for &(_, j) in &run[k + 1..] {
                if tensors[i].name == tensors[j].name && best.is_none_or(|(_, b)| j < b) {
                    best = Some((i, j));
                }
            }
        }
    }
    best
}

/// Layer 0's tensors, once: the lookups of [`infer_spec`] scan them, not the whole header.
struct Layer0<'a> {
    /// `{prefix}.0.`
    prefix: String,
    tensors: Vec<&'a Tensor>,
}

impl<'a> Layer0<'a> {
    fn of(tensors: &[&'a Tensor], prefix: &str) -> Layer0<'a> {
        let prefix = format!("{prefix}.0.");
        let tensors = tensors
            .iter()
            .filter(|t| t.name.starts_with(&prefix))
            .copied()
            .collect();
        Layer0 { prefix, tensors }
    }

    /// The first of layer 0's tensors whose name ends in one of `ends`.
    fn find(&self, ends: &[&str]) -> Option<&'a Tensor> {
        self.tensors
            .iter()
            .find(|t| ends.iter().any(|e| t.name.ends_with(e)))
            .copied()
    }

    fn has(&self, ends: &[&str]) -> bool {
        self.find(ends).is_some()
    }
}

/// Dimension `i` of a tensor's shape.
fn dim(t: Option<&Tensor>, i: usize) -> Option<u64> {
    t.and_then(|t| t.shape.get(i).copied())
}

/// A spec from tensor names and shapes alone (no config.json), marked estimated.
fn infer_spec(
    tensors: &[&Tensor],
    prefix: &str,
    layers: u64,
    name_hint: &str,
    notes: &mut Vec<String>,
) -> ModelSpec {
    let l0 = Layer0::of(tensors, prefix);
    let head = tensors
        .iter()
        .find(|t| t.name.ends_with("lm_head.weight") || t.name == "output.weight")
        .copied();
    let attention = attention_shape(tensors, head, &l0, notes);
    let (intermediate, mlp) = mlp_shape(&l0);
    let moe = experts(&l0, notes);
    let hidden = attention.hidden;
    let norms = l0
        .tensors
        .iter()
        .filter(|t| {
            t.name.contains("norm")
                && !t.name.contains("q_norm")
                && !t.name.contains("k_norm")
                && t.shape == [hidden]
        })
        .count() as u64;
    notes.push("no config.json: the architecture is inferred from the tensor shapes (context length unknown, assumed 4096)".into());
    ModelSpec {
        name: name_hint.to_string(),
        arch: "unknown".into(),
        layers,
        hidden,
        heads: attention.heads,
        kv_heads: attention.kv_heads,
        head_dim: attention.head_dim,
        intermediate,
        vocab: attention.vocab,
        tied_embeddings: head.is_none(),
        qkv_bias: l0.has(&["q_proj.bias"]),
        o_bias: l0.has(&["o_proj.bias"]),
        mlp_bias: l0.has(&["up_proj.bias", "fc1.bias"]),
        qk_norm: l0.has(&Q_NORM),
        attn_sinks: l0.has(&["sinks"]),
        norms_per_layer: if norms == 0 { 2 } else { norms },
        mlp,
        moe,
        mla: None,
        sliding: None,
        max_context: 4096,
        source: ShapeSource::Estimated,
        nominal_params: None,
        file_weights: None,
        ..ModelSpec::default()
    }
}

const Q_NORM: [&str; 2] = ["q_norm.weight", "q_layernorm.weight"];

/// The widths the embedding and the attention projections give.
struct AttentionShape {
    hidden: u64,
    vocab: u64,
    head_dim: u64,
    heads: u64,
    kv_heads: u64,
}

/// The width and vocabulary from the embedding (else the projections and the output head), and
/// the heads from the q/k projections, with head_dim from the q norm or the first size that
/// divides them.
fn attention_shape(
    tensors: &[&Tensor],
    head: Option<&Tensor>,
    l0: &Layer0,
    notes: &mut Vec<String>,
) -> AttentionShape {
    let embed = tensors
        .iter()
        .find(|t| {
            t.shape.len() == 2
                && [
                    "embed_tokens.weight",
                    "wte.weight",
                    "word_embeddings.weight",
                    "tok_embeddings.weight",
                ]
                .iter()
                .any(|e| t.name.ends_with(e))
        })
        .copied();
    let q = l0.find(&["q_proj.weight", ".wq.weight", "attention.query.weight"]);
    let k = l0.find(&["k_proj.weight", ".wk.weight", "attention.key.weight"]);
    let fused_qkv = l0.find(&[
        "qkv_proj.weight",
        "query_key_value.weight",
        "c_attn.weight",
        "Wqkv.weight",
    ]);
    let hidden = dim(embed, 1)
        .or(dim(q, 1))
        .or(dim(fused_qkv, 1))
        .unwrap_or(0);
    let vocab = dim(embed, 0).or(dim(head, 0)).unwrap_or(0);
    let q_out = dim(q, 0).unwrap_or(0);
    let k_out = dim(k, 0).unwrap_or(0);
    let head_dim = match dim(l0.find(&Q_NORM), 0) {
        Some(d) if d > 0 => d,
        _ => {
            let d = [128u64, 64, 256, 96, 80, 32]
                .into_iter()
                .find(|d| q_out > 0 && q_out.is_multiple_of(*d) && k_out.is_multiple_of(*d))
                .unwrap_or(128);
            notes.push(format!("head_dim is not in the tensors: assumed {d}"));
            d
        }
    };
    let (heads, kv_heads) = if q_out > 0 {
        (
            q_out / head_dim,
            if k_out > 0 {
                k_out / head_dim
            } else {
                q_out / head_dim
            },
        )
    } else {
        notes.push(
            "no separate q/k projections found: head counts assumed from hidden / head_dim".into(),
        );
        let h = (hidden / head_dim).max(1);
        (h, h)
    };
    AttentionShape {
        hidden,
        vocab,
        head_dim,
        heads,
        kv_heads,
    }
}

/// The dense MLP's width and kind (gated when there is a gate projection).
fn mlp_shape(l0: &Layer0) -> (u64, MlpKind) {
    let gate = l0.find(&["mlp.gate_proj.weight", "feed_forward.w1.weight"]);
    let up = l0.find(&[
        "mlp.up_proj.weight",
        "feed_forward.w3.weight",
        "mlp.fc1.weight",
        "mlp.c_fc.weight",
        "dense_h_to_4h.weight",
    ]);
    let gate_up = l0.find(&["mlp.gate_up_proj.weight"]);
    match (gate_up, up, gate) {
        (Some(gu), _, _) => (gu.shape.first().copied().unwrap_or(0) / 2, MlpKind::Gated),
        (None, Some(u), g) => (
            u.shape.first().copied().unwrap_or(0),
            if g.is_some() {
                MlpKind::Gated
            } else {
                MlpKind::Plain
            },
        ),
        (None, None, Some(g)) => (g.shape.first().copied().unwrap_or(0), MlpKind::Gated),
        (None, None, None) => (0, MlpKind::Gated),
    }
}

/// Mixture of experts: `…0.mlp.experts.E.…` or fused `…0.mlp.experts.gate_up_proj` [E, h, 2I].
fn experts(l0: &Layer0, notes: &mut Vec<String>) -> Option<MoeSpec> {
    let ex_prefix = format!("{}mlp.experts.", l0.prefix);
    let mut expert_ids = BTreeSet::new();
    let mut expert_ffn = 0;
    for t in l0.tensors.iter().filter(|t| t.name.starts_with(&ex_prefix)) {
        let rest = &t.name[ex_prefix.len()..];
        if let Some((e, tail)) = rest.split_once('.')
            && let Ok(e) = e.parse::<u64>()
        {
            expert_ids.insert(e);
            if tail.starts_with("up_proj") || tail.starts_with("w3") {
                expert_ffn = t.shape.first().copied().unwrap_or(0);
            }
        } else if rest.starts_with("gate_up_proj") && t.shape.len() == 3 {
            expert_ids.extend(0..t.shape[0].min(1 << 16));
            expert_ffn = t.shape[2] / 2;
        }
    }
    (!expert_ids.is_empty()).then(|| {
        let shared = l0.find(&[
            "shared_expert.up_proj.weight",
            "shared_experts.up_proj.weight",
        ]);
        notes.push(
            "experts found: the number active per token is not in the tensors; assumed 2".into(),
        );
        MoeSpec {
            experts: expert_ids.len() as u64,
            active_experts: 2.min(expert_ids.len() as u64),
            expert_ffn,
            shared_experts: u64::from(shared.is_some()),
            shared_ffn: dim(shared, 0).unwrap_or(0),
            shared_expert_gate: l0.has(&["shared_expert_gate.weight"]),
            first_dense_layers: 0,
            router_bias: l0.has(&["e_score_correction_bias", "router.bias"]),
            ..MoeSpec::default()
        }
    })
}
