//! Hugging Face layouts: safetensors files and shard folders, config.json, and
//! model.safetensors.index.json.

use super::error::{ErrorKind, ImportError, Location, file_name, json_message};
use super::safetensors::{self, Dtype, SafetensorsHeader, Tensor};
use super::{ImportedModel, bytes_by_type_sorted, summary_line};
use crate::core::hf_config::{ConfigError, parse_hf_config};
use crate::core::model::{FileWeights, MlpKind, ModelSpec, MoeSpec, ShapeSource};
use crate::core::precision::WeightPrecision;
use crate::core::units::Bytes;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

pub const CONFIG: &str = "config.json";
pub const INDEX: &str = "model.safetensors.index.json";

/// `name-00001-of-00004.safetensors` → ("name", 4).
fn shard_pattern(name: &str) -> Option<(&str, u64)> {
    let stem = name.strip_suffix(".safetensors")?;
    let (rest, of) = stem.rsplit_once("-of-")?;
    let (prefix, no) = rest.rsplit_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(of) || !digits(no) {
        return None;
    }
    Some((prefix, of.parse().ok()?))
}

fn read_text(path: &Path) -> Result<String, ImportError> {
    let bytes = std::fs::read(path).map_err(|e| ImportError::io(path, &e))?;
    String::from_utf8(bytes).map_err(|e| {
        let (line, column) = super::error::line_col(e.as_bytes(), e.utf8_error().valid_up_to());
        ImportError {
            file: file_name(path),
            location: Location::LineCol { line, column },
            kind: ErrorKind::InvalidUtf8 {
                what: "the text".into(),
            },
        }
    })
}

fn parse_json(path: &Path, text: &str) -> Result<serde_json::Value, ImportError> {
    serde_json::from_str(text).map_err(|e| ImportError {
        file: file_name(path),
        location: Location::LineCol {
            line: e.line(),
            column: e.column(),
        },
        kind: ErrorKind::Json(json_message(&e)),
    })
}

/// Line:column of the first `"key"` in a JSON text.
fn locate_key(text: &str, key: &str) -> Location {
    // A nested key ("text_config.hidden_size") is found by its last part.
    let last = key.rsplit('.').next().unwrap_or(key);
    let found = [key, last]
        .iter()
        .find_map(|k| text.find(&serde_json::to_string(k).unwrap_or_default()));
    match found {
        Some(i) => {
            let (line, column) = super::error::line_col(text.as_bytes(), i);
            Location::LineCol { line, column }
        }
        None => Location::File,
    }
}

/// A config.json error as an import error: JSON errors keep their line:column; a bad value
/// points at its key.
fn config_error(path: &Path, text: &str, e: ConfigError) -> ImportError {
    let (location, kind) = match e {
        ConfigError::Json {
            line,
            column,
            message,
        } => {
            let m = match message.rfind(" at line ") {
                Some(p) => message[..p].to_string(),
                None => message,
            };
            (Location::LineCol { line, column }, ErrorKind::Json(m))
        }
        ConfigError::BadValue { ref key, .. } => {
            (locate_key(text, key), ErrorKind::Invalid(e.to_string()))
        }
        other => (Location::File, ErrorKind::Invalid(other.to_string())),
    };
    ImportError {
        file: file_name(path),
        location,
        kind,
    }
}

/// What headroom reads from config.json besides the architecture: the stored dtype and the
/// quantisation method.
#[derive(Default)]
struct ConfigExtras {
    dtype: Option<String>,
    quant_method: Option<String>,
    bits: Option<u64>,
}

impl ConfigExtras {
    fn from_json(v: &serde_json::Value) -> Self {
        let text_cfg = v.get("text_config");
        let pick = |k: &str| v.get(k).or_else(|| text_cfg.and_then(|t| t.get(k)));
        let q = pick("quantization_config");
        ConfigExtras {
            dtype: pick("torch_dtype")
                .or_else(|| pick("dtype"))
                .and_then(|d| d.as_str())
                .map(str::to_string),
            quant_method: q
                .and_then(|q| q.get("quant_method"))
                .and_then(|m| m.as_str())
                .map(|s| s.to_ascii_lowercase()),
            bits: q.and_then(|q| q.get("bits")).and_then(|b| b.as_u64()),
        }
    }
    fn precision(&self) -> Option<WeightPrecision> {
        use WeightPrecision as W;
        match self.quant_method.as_deref() {
            Some("gptq") if self.bits.unwrap_or(4) == 4 => return Some(W::Gptq4),
            Some("awq") => return Some(W::Awq4),
            Some("fp8") => return Some(W::Fp8),
            Some("bitsandbytes") => {
                return Some(if self.bits == Some(8) {
                    W::Int8
                } else {
                    W::Nf4
                });
            }
            _ => {}
        }
        match self.dtype.as_deref() {
            Some("bfloat16") => Some(W::Bf16),
            Some("float16") => Some(W::Fp16),
            Some("float32") => Some(W::Fp32),
            _ => None,
        }
    }
}

/// One `.safetensors` file. A shard (`…-00001-of-00004.safetensors`) brings its siblings.
pub fn import_safetensors_file(path: &Path) -> Result<ImportedModel, ImportError> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = file_name(path);
    if let Some((prefix, of)) = shard_pattern(&name)
        && of > 1
    {
        let mut notes = vec![format!("{name} is one shard of {of}: imported all of them")];
        let files = if dir.join(INDEX).is_file() {
            shards_from_index(&dir.join(INDEX))?.0
        } else {
            (1..=of)
                .map(|i| dir.join(format!("{prefix}-{i:05}-of-{of:05}.safetensors")))
                .collect()
        };
        return import_shards(dir, &files, &mut notes);
    }
    let header = safetensors::read_file(path)?;
    let config = read_config_beside(dir)?;
    build(
        &[(path.to_path_buf(), header)],
        config.as_ref().map(|(p, t)| (p.as_path(), t.as_str())),
        &path.display().to_string(),
        &name,
        Vec::new(),
    )
}

/// config.json in `dir`, when there is one: its path and text.
fn read_config_beside(dir: &Path) -> Result<Option<(PathBuf, String)>, ImportError> {
    let p = dir.join(CONFIG);
    if !p.is_file() {
        return Ok(None);
    }
    let text = read_text(&p)?;
    Ok(Some((p, text)))
}

/// The shard files named by an index's `weight_map`, and its `metadata`.
fn shards_from_index(index: &Path) -> Result<(Vec<PathBuf>, serde_json::Value), ImportError> {
    let text = read_text(index)?;
    let v = parse_json(index, &text)?;
    let dir = index.parent().unwrap_or(Path::new("."));
    let Some(map) = v.get("weight_map").and_then(|m| m.as_object()) else {
        return Err(ImportError {
            file: file_name(index),
            location: locate_key(&text, "weight_map"),
            kind: ErrorKind::Invalid("no \"weight_map\" object".into()),
        });
    };
    let mut files = BTreeSet::new();
    for (tensor, f) in map {
        let Some(f) = f.as_str() else {
            return Err(ImportError {
                file: file_name(index),
                location: locate_key(&text, tensor),
                kind: ErrorKind::Invalid(format!("weight_map entry '{tensor}' is not a file name")),
            });
        };
        // Only plain names beside the index: no paths out of the folder.
        if f.contains('/') || f.contains('\\') || f == ".." {
            return Err(ImportError {
                file: file_name(index),
                location: locate_key(&text, tensor),
                kind: ErrorKind::Invalid(format!(
                    "weight_map entry '{tensor}' names a file outside the folder: {f}"
                )),
            });
        }
        files.insert(f.to_string());
    }
    let meta = v
        .get("metadata")
        .cloned()
        .unwrap_or(serde_json::Value::Null);
    Ok((files.into_iter().map(|f| dir.join(f)).collect(), meta))
}

/// A folder: every `*.safetensors` shard (those the index names, when there is one).
pub fn import_safetensors_dir(dir: &Path) -> Result<ImportedModel, ImportError> {
    let mut notes = Vec::new();
    let files = if dir.join(INDEX).is_file() {
        shards_from_index(&dir.join(INDEX))?.0
    } else {
        let mut all = list_with_suffix(dir, ".safetensors")?;
        let (consolidated, hf): (Vec<_>, Vec<_>) = all
            .iter()
            .cloned()
            .partition(|p| file_name(p).starts_with("consolidated"));
        if !consolidated.is_empty() && !hf.is_empty() {
            notes.push(format!("the folder holds both consolidated*.safetensors (Mistral format) and Hugging Face shards: read only the {} Hugging Face file(s)", hf.len()));
            all = hf;
        }
        all
    };
    import_shards(dir, &files, &mut notes)
}

fn import_shards(
    dir: &Path,
    files: &[PathBuf],
    notes: &mut Vec<String>,
) -> Result<ImportedModel, ImportError> {
    if files.is_empty() {
        return Err(ImportError {
            file: file_name(dir),
            location: Location::File,
            kind: ErrorKind::NotAModel("no .safetensors files in the folder".into()),
        });
    }
    let mut shards = Vec::with_capacity(files.len());
    for f in files {
        if !f.is_file() {
            return Err(ImportError {
                file: file_name(f),
                location: Location::File,
                kind: ErrorKind::Io("shard missing from the folder".into()),
            });
        }
        shards.push((f.clone(), safetensors::read_file(f)?));
    }
    let config = read_config_beside(dir)?;
    let name = file_name(dir);
    build(
        &shards,
        config.as_ref().map(|(p, t)| (p.as_path(), t.as_str())),
        &dir.display().to_string(),
        &name,
        std::mem::take(notes),
    )
}

pub fn list_with_suffix(dir: &Path, suffix: &str) -> Result<Vec<PathBuf>, ImportError> {
    let rd = std::fs::read_dir(dir).map_err(|e| ImportError::io(dir, &e))?;
    let mut v: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && file_name(p).to_ascii_lowercase().ends_with(suffix))
        .collect();
    v.sort();
    Ok(v)
}

/// config.json alone, or with the shards or the index beside it.
pub fn import_config(path: &Path) -> Result<ImportedModel, ImportError> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if file_name(path) == CONFIG && !list_with_suffix(dir, ".safetensors")?.is_empty() {
        return import_safetensors_dir(dir);
    }
    let text = read_text(path)?;
    let mut spec = parse_hf_config(&text).map_err(|e| config_error(path, &text, e))?;
    let extras = parse_json(path, &text)
        .map(|v| ConfigExtras::from_json(&v))
        .unwrap_or_default();
    let weights = extras.precision();
    let mut notes = Vec::new();
    let index = dir.join(INDEX);
    let mut format = String::from("config.json");
    if index.is_file() {
        let (_, meta) = shards_from_index(&index)?;
        let total = meta.get("total_size").and_then(|t| {
            t.as_u64().or_else(|| {
                t.as_f64()
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                    .map(|f| f as u64)
            })
        });
        match total {
            Some(total) => {
                let params = meta
                    .get("total_parameters")
                    .and_then(|p| p.as_u64())
                    .unwrap_or(0);
                // The index has no per-tensor sizes: the layers' share comes from the architecture.
                let arch = ModelSpec {
                    file_weights: None,
                    nominal_params: None,
                    ..spec.clone()
                };
                let all = arch.param_count().total.max(1);
                let outer: u64 = arch.outer_tensors().iter().map(|t| t.elements).sum();
                let layer_share = all.saturating_sub(outer) as f64 / all as f64;
                format = format!(
                    "safetensors{} (index total_size)",
                    weights
                        .map(|w| format!(" {}", w.label()))
                        .unwrap_or_default()
                );
                spec.file_weights = Some(FileWeights {
                    path: index.display().to_string(),
                    total_bytes: total,
                    params,
                    layer_bytes: (total as f64 * layer_share).round() as u64,
                    runtime_extra_bytes: 0,
                    format: format.clone(),
                });
                notes.push(format!(
                    "weights from {INDEX} metadata.total_size ({total} bytes, {}); the shards are not here, so the layers' share is apportioned from the architecture",
                    Bytes(total).display_gib()
                ));
            }
            None => notes.push(format!(
                "{INDEX} has no metadata.total_size: weights estimated from the architecture"
            )),
        }
    } else {
        notes.push("no weight files beside config.json: weights estimated from the architecture and the precision".into());
    }
    let total = spec.file_weights.as_ref().map_or(0, |f| f.total_bytes);
    let summary = summary_line(&spec, &format, total);
    Ok(ImportedModel {
        spec,
        weights,
        summary,
        notes,
        bytes_by_type: Vec::new(),
    })
}

/// `…layers.N.…`, `…h.N.…`, `…blocks.N.…`: (prefix up to the index, N).
pub fn layer_key(name: &str) -> Option<(&str, u64)> {
    const WORDS: [&str; 6] = ["layers", "h", "blocks", "block", "layer", "blk"];
    let mut start = 0usize;
    let parts: Vec<&str> = name.split('.').collect();
    for i in 0..parts.len().saturating_sub(2) {
        let (w, n) = (parts[i], parts[i + 1]);
        if WORDS.contains(&w)
            && !n.is_empty()
            && n.bytes().all(|b| b.is_ascii_digit())
            && n.len() <= 9
        {
            let end = start + w.len();
            return Some((&name[..end], n.parse().ok()?));
        }
        start += parts[i].len() + 1;
    }
    None
}

/// Builds the model from the headers of one or more files and, when given, the path and text
/// of the config.json beside them.
pub fn build(
    shards: &[(PathBuf, SafetensorsHeader)],
    config: Option<(&Path, &str)>,
    source: &str,
    name_hint: &str,
    mut notes: Vec<String>,
) -> Result<ImportedModel, ImportError> {
    // Tensors of all shards, each once.
    let mut seen: HashMap<&str, &Path> = HashMap::new();
    let mut tensors: Vec<&Tensor> = Vec::new();
    for (p, h) in shards {
        for t in &h.tensors {
            if let Some(prev) = seen.insert(&t.name, p) {
                return Err(ImportError {
                    file: file_name(p),
                    location: Location::File,
                    kind: ErrorKind::Invalid(format!(
                        "tensor '{}' is also in {}",
                        t.name,
                        file_name(prev)
                    )),
                });
            }
            tensors.push(t);
        }
    }
    // Config beside the weights.
    let mut cfg_spec: Option<ModelSpec> = None;
    let mut extras = ConfigExtras::default();
    if let Some((cp, text)) = config {
        let json = parse_json(cp, text)?;
        extras = ConfigExtras::from_json(&json);
        match parse_hf_config(text) {
            Ok(s) => cfg_spec = Some(s),
            Err(e) => notes.push(format!(
                "config.json not used ({}): the shape is inferred from the tensors",
                config_error(cp, text, e)
            )),
        }
    }

    // The decoder's layers are the layer stack holding the most bytes (a vision tower's blocks
    // hold less).
    let mut by_prefix: HashMap<&str, (u64, BTreeSet<u64>)> = HashMap::new();
    for t in &tensors {
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
    // Layers past the config's num_hidden_layers (DeepSeek-V3's multi-token-prediction layer 61)
    // are in the files but not in the model transformers builds: not counted.
    let cfg_layers = cfg_spec.as_ref().map_or(u64::MAX, |s| s.layers);
    let (mut extra_bytes, mut extra_layers) = (0u64, BTreeSet::new());
    let mut total = 0u64;
    let mut elements = 0u64;
    let mut layer_bytes = 0u64;
    let mut by_dtype: BTreeMap<Dtype, u64> = BTreeMap::new();
    for t in &tensors {
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
        total = total.saturating_add(t.bytes());
        elements = elements.saturating_add(t.elements);
        let e = by_dtype.entry(t.dtype).or_default();
        *e = e.saturating_add(t.bytes());
        if layer.is_some() {
            layer_bytes = layer_bytes.saturating_add(t.bytes());
        }
    }
    if !extra_layers.is_empty() {
        notes.push(format!(
            "the files hold {} layer(s) beyond config.json's {cfg_layers} ({}; multi-token prediction?): not loaded by transformers, not counted",
            extra_layers.len(),
            Bytes(extra_bytes).display_gib()
        ));
    }

    let any_end = |s: &str| tensors.iter().any(|t| t.name.ends_with(s));
    let any_has = |s: &str| tensors.iter().any(|t| t.name.contains(s));
    let dominant = by_dtype.iter().max_by_key(|(_, b)| **b).map(|(d, _)| *d);

    // Precision and packed formats.
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
    } else if any_end(".SCB") {
        Some(WeightPrecision::Int8)
    } else if any_end("_blocks") && any_end("_scales") {
        packed = true;
        notes.push(
            "MXFP4 blocks (gpt-oss style): no preset matches; the exact bytes come from the files"
                .into(),
        );
        None
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
    let bytes_by_type =
        bytes_by_type_sorted(by_dtype.iter().map(|(d, b)| (d.name().to_string(), *b)));
    if bytes_by_type.len() > 1 {
        let parts: Vec<String> = bytes_by_type
            .iter()
            .map(|(d, b)| format!("{d} {}", Bytes(*b).display_gib()))
            .collect();
        notes.push(format!("bytes per dtype: {}", parts.join(", ")));
    }
    spec.file_weights = Some(FileWeights {
        path: source.to_string(),
        total_bytes: total,
        params: if packed { 0 } else { elements },
        layer_bytes,
        runtime_extra_bytes: 0,
        format: format.clone(),
    });
    if let Some((field, v)) = super::implausible(&spec) {
        let (what, max) = (field.label(), field.max());
        let file = shards
            .first()
            .map(|(p, _)| file_name(p))
            .unwrap_or_default();
        let from = if config.is_some() {
            "config.json and the tensors"
        } else {
            "the tensor shapes"
        };
        return Err(ImportError {
            file,
            location: Location::File,
            kind: ErrorKind::Invalid(format!(
                "{what} {v} read from {from} is not plausible (over {max})"
            )),
        });
    }
    let summary = summary_line(&spec, &format, total);
    Ok(ImportedModel {
        spec,
        weights,
        summary,
        notes,
        bytes_by_type,
    })
}

/// A spec from tensor names and shapes alone (no config.json), marked estimated.
fn infer_spec(
    tensors: &[&Tensor],
    prefix: &str,
    layers: u64,
    name_hint: &str,
    notes: &mut Vec<String>,
) -> ModelSpec {
    let l0 = format!("{prefix}.0.");
    let in0 = |ends: &[&str]| {
        tensors
            .iter()
            .find(|t| t.name.starts_with(&l0) && ends.iter().any(|e| t.name.ends_with(e)))
            .copied()
    };
    let dim = |t: Option<&Tensor>, i: usize| t.and_then(|t| t.shape.get(i).copied());

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
    let head = tensors
        .iter()
        .find(|t| t.name.ends_with("lm_head.weight") || t.name == "output.weight")
        .copied();
    let q = in0(&["q_proj.weight", ".wq.weight", "attention.query.weight"]);
    let k = in0(&["k_proj.weight", ".wk.weight", "attention.key.weight"]);
    let q_norm = in0(&["q_norm.weight", "q_layernorm.weight"]);
    let fused_qkv = in0(&[
        "qkv_proj.weight",
        "query_key_value.weight",
        "c_attn.weight",
        "Wqkv.weight",
    ]);
    let gate = in0(&["mlp.gate_proj.weight", "feed_forward.w1.weight"]);
    let up = in0(&[
        "mlp.up_proj.weight",
        "feed_forward.w3.weight",
        "mlp.fc1.weight",
        "mlp.c_fc.weight",
        "dense_h_to_4h.weight",
    ]);
    let gate_up = in0(&["mlp.gate_up_proj.weight"]);

    let hidden = dim(embed, 1)
        .or(dim(q, 1))
        .or(dim(fused_qkv, 1))
        .unwrap_or(0);
    let vocab = dim(embed, 0).or(dim(head, 0)).unwrap_or(0);
    let q_out = dim(q, 0).unwrap_or(0);
    let k_out = dim(k, 0).unwrap_or(0);
    let head_dim = match dim(q_norm, 0) {
        Some(d) if d > 0 => d,
        _ => {
            let d = [128u64, 64, 256, 96, 80, 32]
                .into_iter()
                .find(|d| q_out > 0 && q_out % d == 0 && k_out % d == 0)
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
    let (intermediate, mlp) = match (gate_up, up, gate) {
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
    };

    // Mixture of experts: `…0.mlp.experts.E.…` or fused `…0.mlp.experts.gate_up_proj` [E, h, 2I].
    let ex_prefix = format!("{l0}mlp.experts.");
    let mut expert_ids = BTreeSet::new();
    let mut expert_ffn = 0;
    for t in tensors.iter().filter(|t| t.name.starts_with(&ex_prefix)) {
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
    let moe = (!expert_ids.is_empty()).then(|| {
        let shared = in0(&[
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
            shared_expert_gate: in0(&["shared_expert_gate.weight"]).is_some(),
            first_dense_layers: 0,
            router_bias: in0(&["e_score_correction_bias", "router.bias"]).is_some(),
            ..MoeSpec::default()
        }
    });
    let norms = tensors
        .iter()
        .filter(|t| {
            t.name.starts_with(&l0)
                && t.name.contains("norm")
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
        heads,
        kv_heads,
        head_dim,
        intermediate,
        vocab,
        tied_embeddings: head.is_none(),
        qkv_bias: in0(&["q_proj.bias"]).is_some(),
        o_bias: in0(&["o_proj.bias"]).is_some(),
        mlp_bias: in0(&["up_proj.bias", "fc1.bias"]).is_some(),
        qk_norm: q_norm.is_some(),
        attn_sinks: in0(&["sinks"]).is_some(),
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
