//! Hugging Face layouts: safetensors files and shard folders, config.json, and
//! model.safetensors.index.json.

use super::ImportedModel;
use super::error::{ErrorKind, ImportError, Location, file_name, json_message};
use super::hf_model::build;
use super::safetensors::{self};
use crate::core::hf_config::{ConfigError, parse_hf_config_value};
use crate::core::model::{FileWeights, ModelSpec};
use crate::core::precision::WeightPrecision;
use crate::core::units::Bytes;
use std::collections::BTreeSet;
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
    let bytes = crate::io::read_limited(path, crate::io::limits::JSON_FILE)
        .map_err(|e| ImportError::io(path, &e))?;
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

/// A config.json (or other small JSON file) as a tree, bounded ([`super::bounded_json`]).
pub(super) fn parse_json(path: &Path, text: &str) -> Result<serde_json::Value, ImportError> {
    parse_json_within(path, text, super::bounded_json::CONFIG_BOUNDS)
}

fn parse_json_within(
    path: &Path,
    text: &str,
    bounds: super::bounded_json::Bounds,
) -> Result<serde_json::Value, ImportError> {
    super::bounded_json::from_str_within(text, bounds).map_err(|e| ImportError {
        file: file_name(path),
        location: Location::LineCol {
            line: e.line(),
            column: e.column(),
        },
        kind: {
            let m = json_message(&e);
            // Valid JSON past the bounds is not a syntax error.
            if m.contains("not a model config") {
                ErrorKind::Invalid(m)
            } else {
                ErrorKind::Json(m)
            }
        },
    })
}

/// A config.json's text read once: the architecture and the extras (dtype, quantisation).
pub(super) fn read_config(
    path: &Path,
    text: &str,
) -> Result<(ModelSpec, ConfigExtras), ImportError> {
    let v = parse_json(path, text)?;
    let spec = parse_hf_config_value(&v).map_err(|e| config_error(path, text, e))?;
    Ok((spec, ConfigExtras::from_json(&v)))
}

/// The architecture of a config.json given on its own (`--config FILE`): parsed once within the
/// bounds of [`super::bounded_json`]; errors name the file as given and the line:column.
pub fn config_spec(path: &Path, text: &str) -> Result<ModelSpec, ImportError> {
    read_config(path, text).map(|(s, _)| s).map_err(|mut e| {
        e.file = path.display().to_string();
        e
    })
}

/// The vision tower of a model's config.json (`core::hf_config::vision_tower`): `path` is the
/// config.json itself, a folder holding it, or a weight file beside it. `None` when there is no
/// config.json there or its model has no tower read from config.
pub fn vision_tower_of(
    path: &Path,
) -> Result<Option<crate::core::vision::VisionEncoder>, ImportError> {
    let config = if path.is_dir() {
        path.join(CONFIG)
    } else if file_name(path).to_ascii_lowercase().ends_with(".json") {
        path.to_path_buf()
    } else {
        path.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .join(CONFIG)
    };
    if !config.is_file() {
        return Ok(None);
    }
    let text = read_text(&config)?;
    let v = parse_json(&config, &text)?;
    crate::core::hf_config::vision_tower(&v).map_err(|e| config_error(&config, &text, e))
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
pub(super) fn config_error(path: &Path, text: &str, e: ConfigError) -> ImportError {
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
pub(super) struct ConfigExtras {
    pub(super) dtype: Option<String>,
    pub(super) quant_method: Option<String>,
    pub(super) bits: Option<u64>,
    /// TensorRT Model Optimizer's `quant_algo` ("NVFP4", "FP8") or compressed-tensors'
    /// `format` ("nvfp4-pack-quantized"), lower case.
    pub(super) quant_algo: Option<String>,
    /// mlx-lm's own quantisation (`"quantization": {"group_size": 64, "bits": 4, "mode":
    /// "affine"}`, written by `mlx_lm/utils.py` `quantize_model`): the mode, lower case.
    pub(super) mlx_mode: Option<String>,
}

impl ConfigExtras {
    pub(super) fn from_json(v: &serde_json::Value) -> Self {
        let text_cfg = v.get("text_config");
        let pick = |k: &str| v.get(k).or_else(|| text_cfg.and_then(|t| t.get(k)));
        let q = pick("quantization_config");
        // mlx-lm writes `quantization` (and a copy as `quantization_config`) with a group size
        // and bits but no `quant_method`.
        let mlx = pick("quantization").or(q).filter(|m| {
            m.get("quant_method").is_none()
                && m.get("group_size").is_some()
                && m.get("bits").is_some()
        });
        let q = q.or(mlx);
        ConfigExtras {
            mlx_mode: mlx.map(|m| {
                m.get("mode")
                    .and_then(|x| x.as_str())
                    .unwrap_or("affine")
                    .to_ascii_lowercase()
            }),
            dtype: pick("torch_dtype")
                .or_else(|| pick("dtype"))
                .and_then(|d| d.as_str())
                .map(str::to_string),
            quant_method: q
                .and_then(|q| q.get("quant_method"))
                .and_then(|m| m.as_str())
                .map(|s| s.to_ascii_lowercase()),
            bits: q.and_then(|q| q.get("bits")).and_then(|b| b.as_u64()),
            quant_algo: q
                .and_then(|q| q.get("quant_algo").or_else(|| q.get("format")))
                .and_then(|m| m.as_str())
                .map(|s| s.to_ascii_lowercase()),
        }
    }
    pub(super) fn precision(&self) -> Option<WeightPrecision> {
        use WeightPrecision as W;
        match self.mlx_mode.as_deref() {
            Some("mxfp4") => return Some(W::Mxfp4),
            Some("affine") => {
                if let Some(p) = self.bits.and_then(|b| W::mlx_of_bits(b as u32)) {
                    return Some(p);
                }
            }
            _ => {}
        }
        match self.quant_method.as_deref() {
            Some("gptq") if self.bits.unwrap_or(4) == 4 => return Some(W::Gptq4),
            Some("awq") => return Some(W::Awq4),
            Some("fp8") => return Some(W::Fp8),
            // TensorRT Model Optimizer (`quant_method: modelopt`, `quant_algo: NVFP4`) and
            // llm-compressor (`format: nvfp4-pack-quantized`) NVFP4 checkpoints.
            _ if self
                .quant_algo
                .as_deref()
                .is_some_and(|a| a.contains("nvfp4")) =>
            {
                return Some(W::Nvfp4);
            }
            Some("modelopt") if self.quant_algo.as_deref() == Some("fp8") => return Some(W::Fp8),
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
    let v = parse_json_within(index, &text, super::bounded_json::INDEX_BOUNDS)?;
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
    let (mut spec, extras) = read_config(path, &text)?;
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
                    expert_bytes_by_layer: Vec::new(),
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
    Ok(ImportedModel::new(
        spec,
        weights,
        &format,
        total,
        notes,
        Vec::new(),
    ))
}

/// `…layers.N.…`, `…h.N.…`, `…blocks.N.…`: (prefix up to the index, N).
pub fn layer_key(name: &str) -> Option<(&str, u64)> {
    const WORDS: [&str; 6] = ["layers", "h", "blocks", "block", "layer", "blk"];
    // A word, its number, and at least one part after them; no allocation (called for every
    // tensor of a header that may hold a million).
    let mut start = 0usize;
    let mut parts = name.split('.');
    let (mut w, mut n) = (parts.next()?, parts.next()?);
    for next in parts {
        if WORDS.contains(&w)
            && !n.is_empty()
            && n.bytes().all(|b| b.is_ascii_digit())
            && n.len() <= 9
        {
            return Some((&name[..start + w.len()], n.parse().ok()?));
        }
        start += w.len() + 1;
        (w, n) = (n, next);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// mlx-lm's `quantize_model` writes `quantization` (and a copy as `quantization_config`)
    /// with the group size and bits, no `quant_method`.
    #[test]
    fn mlx_community_quantization_block() {
        let q = json!({"group_size": 64, "bits": 4});
        let v = json!({"torch_dtype": "bfloat16", "quantization": q, "quantization_config": q});
        assert_eq!(
            ConfigExtras::from_json(&v).precision(),
            Some(WeightPrecision::Mlx4)
        );
        let v = json!({"quantization": {"group_size": 64, "bits": 8, "mode": "affine"}});
        assert_eq!(
            ConfigExtras::from_json(&v).precision(),
            Some(WeightPrecision::Mlx8)
        );
        let v = json!({"quantization": {"group_size": 32, "bits": 4, "mode": "mxfp4"}});
        assert_eq!(
            ConfigExtras::from_json(&v).precision(),
            Some(WeightPrecision::Mxfp4)
        );
        // GPTQ's block has a quant_method: not MLX.
        let v =
            json!({"quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}});
        assert_eq!(
            ConfigExtras::from_json(&v).precision(),
            Some(WeightPrecision::Gptq4)
        );
    }
}
