//! A Diffusers pipeline folder (`--diffusers DIR`): `model_index.json`, each component's
//! `config.json` (`core::diffusion::folder` turns them into a pipeline) and, where the weights
//! are there, their safetensors headers for each component's exact parameter count. Only
//! headers are read. Errors are one line naming the file and the key or line:column.

use super::bounded_json;
use super::error::{ErrorKind, ImportError, Location, file_name, json_message};
use super::safetensors::{self, Dtype};
use crate::core::diffusion::Pipeline;
use crate::core::diffusion::folder::{self, FolderError, IndexEntry};
use crate::core::precision::WeightPrecision;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A pipeline read from a folder.
#[derive(Clone, Debug)]
pub struct DiffusersFolder {
    pub pipeline: Pipeline,
    /// The denoiser's stored precision: its `quantization_config` (bitsandbytes NF4 / 8-bit) or
    /// its safetensors dtype; `None` when neither says.
    pub stored: Option<WeightPrecision>,
    /// What was read, for the user (which components had weights files).
    pub notes: Vec<String>,
}

/// `path` as shown in messages: the folder as given, joined with the file inside it.
fn shown(dir: &Path, inner: &str) -> String {
    dir.join(inner).display().to_string()
}

fn folder_error(dir: &Path, e: FolderError) -> ImportError {
    let why = if e.key.is_empty() {
        e.why
    } else {
        format!("{}: {}", e.key, e.why)
    };
    ImportError {
        file: shown(dir, &e.file),
        location: Location::File,
        kind: ErrorKind::Invalid(why),
    }
}

/// A JSON file of the folder, parsed within the importers' bounds.
fn read_json(dir: &Path, inner: &str) -> Result<Value, ImportError> {
    let p = dir.join(inner);
    let text = std::fs::read_to_string(&p).map_err(|e| ImportError {
        file: shown(dir, inner),
        location: Location::File,
        kind: ErrorKind::Io(e.to_string()),
    })?;
    bounded_json::from_str(&text).map_err(|e| ImportError {
        file: shown(dir, inner),
        location: Location::LineCol {
            line: e.line(),
            column: e.column(),
        },
        kind: ErrorKind::Json(json_message(&e)),
    })
}

/// The weights files of a component folder: every `*.safetensors`, the non-variant ones when
/// a variant (`*.fp16.safetensors`) sits beside them (`from_pretrained` loads one set).
fn weight_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(all) = super::hf::list_with_suffix(dir, ".safetensors") else {
        return Vec::new();
    };
    let variant = |p: &PathBuf| {
        let n = file_name(p);
        n.trim_end_matches(".safetensors").contains('.')
    };
    let plain: Vec<PathBuf> = all.iter().filter(|p| !variant(p)).cloned().collect();
    if plain.is_empty() { all } else { plain }
}

/// Parameters and the commonest dtype in a component's safetensors headers (`None` without
/// weights files).
fn header_params(dir: &Path) -> Result<Option<(u64, Dtype)>, ImportError> {
    let files = weight_files(dir);
    if files.is_empty() {
        return Ok(None);
    }
    let mut n = 0u64;
    let mut by_type: Vec<(Dtype, u64)> = Vec::new();
    for f in &files {
        let h = safetensors::read_file(f)?;
        for t in &h.tensors {
            n = n.saturating_add(t.elements);
            match by_type.iter_mut().find(|(d, _)| *d == t.dtype) {
                Some((_, c)) => *c += t.elements,
                None => by_type.push((t.dtype, t.elements)),
            }
        }
    }
    let top = by_type.iter().max_by_key(|(_, c)| *c).map(|(d, _)| *d);
    Ok(top.map(|d| (n, d)))
}

/// The precision a denoiser is stored at: bitsandbytes' `quantization_config`, else its
/// safetensors dtype.
fn stored_precision(config: &Value, dtype: Option<Dtype>) -> Option<WeightPrecision> {
    if let Some(q) = config.get("quantization_config") {
        let flag = |k: &str| q.get(k).and_then(Value::as_bool).unwrap_or(false);
        if flag("load_in_4bit") {
            return Some(if flag("bnb_4bit_use_double_quant") {
                WeightPrecision::Nf4DoubleQuant
            } else {
                WeightPrecision::Nf4
            });
        }
        if flag("load_in_8bit") {
            return Some(WeightPrecision::Int8);
        }
    }
    match dtype? {
        Dtype::F32 => Some(WeightPrecision::Fp32),
        Dtype::F16 => Some(WeightPrecision::Fp16),
        Dtype::BF16 => Some(WeightPrecision::Bf16),
        Dtype::F8_E4M3 | Dtype::F8_E5M2 => Some(WeightPrecision::Fp8),
        _ => None,
    }
}

/// Reads the pipeline folder `dir`.
pub fn read_folder(dir: &Path) -> Result<DiffusersFolder, ImportError> {
    if !dir.join("model_index.json").is_file() {
        return Err(ImportError {
            file: dir.display().to_string(),
            location: Location::File,
            kind: ErrorKind::NotAModel(
                "no model_index.json: not a Diffusers pipeline folder".into(),
            ),
        });
    }
    let index = read_json(dir, "model_index.json")?;
    let (class, entries) = folder::index_entries(&index).map_err(|e| folder_error(dir, e))?;
    let mut components: Vec<(IndexEntry, Value)> = Vec::with_capacity(entries.len());
    for e in entries {
        let v = read_json(dir, &format!("{}/config.json", e.folder))?;
        components.push((e, v));
    }
    let name = file_name(dir);
    let mut p = folder::pipeline(&name, &class, &components).map_err(|e| folder_error(dir, e))?;
    let mut notes = Vec::new();
    let mut stored = None;
    let mut text_i = 0;
    for (e, v) in &components {
        let found = header_params(&dir.join(&e.folder))?;
        // bitsandbytes packs two 4-bit values per byte and stores its scales beside them: the
        // element counts of a quantized component are not its parameters.
        let packed = v.get("quantization_config").is_some();
        match found {
            Some(_) if packed => notes.push(format!(
                "{}: quantized weights (quantization_config): parameters from its config.json, not the packed tensors",
                e.folder
            )),
            Some((n, _)) => notes.push(format!(
                "{}: {} parameters from its safetensors headers",
                e.folder,
                crate::core::format::group_digits(n)
            )),
            None => {}
        }
        let n = found.filter(|_| !packed).map(|(n, _)| n);
        match e.class.as_str() {
            c if folder::DENOISERS.contains(&c) => {
                p.denoiser_file_params = n;
                stored = stored_precision(v, found.map(|(_, d)| d));
            }
            "AutoencoderKL" => p.vae_file_params = n,
            _ => {
                if let Some(t) = p.text_encoders.get_mut(text_i) {
                    t.file_params = n;
                }
                text_i += 1;
            }
        }
    }
    if notes.is_empty() {
        notes.push(
            "no safetensors weights in the folder: every component sized from its config.json"
                .into(),
        );
    }
    Ok(DiffusersFolder {
        pipeline: p,
        stored,
        notes,
    })
}
