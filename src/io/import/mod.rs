//! Importing model files: GGUF, safetensors (one file or a folder of shards) and Hugging Face
//! `config.json` (with `model.safetensors.index.json` beside it).
//!
//! Only headers are read, through buffered streams: tensor data is never touched, and every
//! count or length a header claims is checked against what the rest of the file can hold before
//! anything is allocated. Errors are one line naming the file and the byte offset (binary) or the
//! line:column (JSON).

pub mod bounded_json;
pub mod diffusers;
mod error;
pub mod gguf;
pub mod hf;
pub(crate) mod hf_model;
pub mod mmproj;
pub mod safetensors;

pub use error::{ErrorKind, ImportError, Location};

use crate::core::format::{self, one_line};
use crate::core::model::ModelSpec;
use crate::core::precision::WeightPrecision;
use crate::core::scenario::Mode;
use crate::core::units::Bytes;
use std::io::Read;
use std::path::{Path, PathBuf};

/// A model read from files.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportedModel {
    /// The architecture; `file_weights` is set when the weights are exact (from tensor headers or
    /// an index's `total_size`).
    pub spec: ModelSpec,
    /// The preset that best matches the stored weights: a GGUF file type (Q4_K_M → `Q4KM`), a
    /// safetensors dtype (BF16 → `Bf16`), a quantisation method (GPTQ, AWQ, bitsandbytes).
    pub weights: Option<WeightPrecision>,
    /// One line: name, architecture, layers, parameters, format, size.
    pub summary: String,
    /// What was inferred, assumed or worth knowing.
    pub notes: Vec<String>,
    /// Exact bytes per storage type (ggml type or safetensors dtype), largest first; empty when
    /// the bytes are not known per tensor.
    pub bytes_by_type: Vec<(String, u64)>,
}

/// Imports a `.gguf` file (split files together), a `.safetensors` file (a shard brings its
/// siblings), a folder of shards, or a `config.json` / `*.index.json`. Files with another
/// extension are recognised by their first bytes.
pub fn import_path(path: &Path) -> Result<ImportedModel, ImportError> {
    let md = std::fs::metadata(path).map_err(|e| ImportError::io(path, &e))?;
    if md.is_dir() {
        return import_dir(path);
    }
    let lower = error::file_name(path).to_ascii_lowercase();
    if lower.ends_with(".gguf") {
        return import_gguf(path);
    }
    if lower.ends_with(".safetensors") {
        return hf::import_safetensors_file(path);
    }
    if lower.ends_with(".index.json") {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        return if !hf::list_with_suffix(dir, ".safetensors")?.is_empty() {
            hf::import_safetensors_dir(dir)
        } else if dir.join(hf::CONFIG).is_file() {
            hf::import_config(&dir.join(hf::CONFIG))
        } else {
            Err(ImportError {
                file: error::file_name(path),
                location: Location::File,
                kind: ErrorKind::NotAModel(
                    "an index without config.json or shards beside it".into(),
                ),
            })
        };
    }
    if lower.ends_with(".json") {
        return hf::import_config(path);
    }
    // Unknown extension: look at the first bytes.
    let mut head = [0u8; 9];
    let n = {
        let mut f = std::fs::File::open(path).map_err(|e| ImportError::io(path, &e))?;
        let mut n = 0;
        while n < head.len() {
            match f.read(&mut head[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) => return Err(ImportError::io(path, &e)),
            }
        }
        n
    };
    if n >= 4 && head[..4] == gguf::MAGIC {
        return import_gguf(path);
    }
    if n == 9 && head[8] == b'{' {
        return hf::import_safetensors_file(path);
    }
    Err(ImportError {
        file: error::file_name(path),
        location: Location::File,
        kind: ErrorKind::NotAModel("not a model file: expected a .gguf or .safetensors file, a config.json, or a folder of safetensors shards".into()),
    })
}

fn import_dir(dir: &Path) -> Result<ImportedModel, ImportError> {
    if !hf::list_with_suffix(dir, ".safetensors")?.is_empty() {
        return hf::import_safetensors_dir(dir);
    }
    let ggufs = hf::list_with_suffix(dir, ".gguf")?;
    if let Some(first) = ggufs.first() {
        // One model, possibly split (name-00001-of-00003.gguf …): all the same prefix.
        let prefixes: std::collections::BTreeSet<String> = ggufs
            .iter()
            .map(|p| split_prefix(p).unwrap_or_else(|| error::file_name(p)))
            .collect();
        if prefixes.len() == 1 {
            return import_gguf(first);
        }
        return Err(ImportError {
            file: error::file_name(dir),
            location: Location::File,
            kind: ErrorKind::NotAModel(format!(
                "the folder holds {} different GGUF models: pick one file",
                prefixes.len()
            )),
        });
    }
    if dir.join(hf::CONFIG).is_file() {
        return hf::import_config(&dir.join(hf::CONFIG));
    }
    Err(ImportError {
        file: error::file_name(dir),
        location: Location::File,
        kind: ErrorKind::NotAModel("the folder has no .safetensors, .gguf or config.json".into()),
    })
}

/// `model-00001-of-00003.gguf` → `model` (llama.cpp's `llama_split_prefix`).
fn split_prefix(path: &Path) -> Option<String> {
    let name = error::file_name(path);
    let stem = name.strip_suffix(".gguf")?;
    let (rest, of) = stem.rsplit_once("-of-")?;
    let (prefix, no) = rest.rsplit_once('-')?;
    let digits = |s: &str| s.len() >= 5 && s.bytes().all(|b| b.is_ascii_digit());
    (digits(of) && digits(no)).then(|| prefix.to_string())
}

/// Imports a GGUF file; when it is one part of a split model (`split.count` > 1), all parts.
pub fn import_gguf(path: &Path) -> Result<ImportedModel, ImportError> {
    let header = gguf::read_file(path)?;
    let count = header.get_u64("split.count").unwrap_or(1);
    let name = error::file_name(path);
    let stem = name.strip_suffix(".gguf").unwrap_or(&name).to_string();
    if count <= 1 {
        return gguf::to_model(&header, &path.display().to_string(), &stem)
            .map_err(|e| e.in_file(path));
    }
    let Some(prefix) = split_prefix(path) else {
        return Err(ImportError {
            file: name,
            location: Location::File,
            kind: ErrorKind::Invalid(format!(
                "split.count is {count} but the name is not PREFIX-NNNNN-of-NNNNN.gguf, so the other parts cannot be found"
            )),
        });
    };
    let parts: Vec<PathBuf> = (1..=count)
        .map(|i| path.with_file_name(format!("{prefix}-{i:05}-of-{count:05}.gguf")))
        .collect();
    let mut merged: Option<gguf::GgufHeader> = None;
    let mut names = std::collections::HashSet::new();
    for p in &parts {
        if !p.is_file() {
            return Err(ImportError {
                file: error::file_name(p),
                location: Location::File,
                kind: ErrorKind::Io(format!("part of the split model {name} is missing")),
            });
        }
        let h = if p == path {
            header.clone()
        } else {
            gguf::read_file(p)?
        };
        for t in &h.tensors {
            if !names.insert(t.name.clone()) {
                return Err(ImportError::invalid_at(
                    t.header_offset,
                    format!("tensor '{}' is also in another part", t.name),
                )
                .in_file(p));
            }
        }
        match &mut merged {
            None => merged = Some(h),
            Some(m) => {
                m.tensors.extend(h.tensors);
                m.file_len = m.file_len.saturating_add(h.file_len);
            }
        }
    }
    let merged = merged.unwrap_or(header);
    let mut m = gguf::to_model(
        &merged,
        &format!("{} (+{} parts)", parts[0].display(), count - 1),
        &prefix,
    )
    .map_err(|e| e.in_file(&parts[0]))?;
    m.notes
        .insert(0, format!("split GGUF: read all {count} parts"));
    Ok(m)
}

/// The precision the estimate holds the weights at for `mode` when `weights` is asked for, as
/// `core::estimate::weights::place` decides it: QLoRA stores the frozen base in NF4 (with double
/// quantisation unless plain NF4 was asked), a full fine-tune trains 16- or 32-bit weights (BF16
/// when a quantised type was asked), inference and LoRA keep the asked precision.
pub fn held_precision(mode: Mode, weights: WeightPrecision) -> WeightPrecision {
    match mode {
        Mode::Qlora
            if !matches!(
                weights,
                WeightPrecision::Nf4 | WeightPrecision::Nf4DoubleQuant
            ) =>
        {
            WeightPrecision::Nf4DoubleQuant
        }
        Mode::Full
            if !matches!(
                weights,
                WeightPrecision::Fp32 | WeightPrecision::Fp16 | WeightPrecision::Bf16
            ) =>
        {
            WeightPrecision::Bf16
        }
        _ => weights,
    }
}

/// Re-sizes the weights of a model read from a file at another precision than the file's.
///
/// A model file's exact tensor bytes (`file_weights`) hold at the precision the file stores
/// (`stored`; `None` when no preset matches it). When the weights are held at another precision
/// `to` (an explicit `--weights`, or a training mode that re-quantises the base), those bytes do
/// not apply: the file's bytes are dropped and the estimate sums the architecture's tensors at
/// `to`, the path presets take, so each tensor class gets the type a quantiser gives it
/// (llama.cpp `src/llama-quant.cpp` `llama_tensor_get_type`: token embeddings, the output
/// matrix and the mixes' attn_v/ffn_down at their own types, norms at F32). When the
/// architecture does not account for the file's parameters (an inferred or partial shape), the
/// file's count is kept as the total. Returns a note saying what was done, or `None` when the
/// file's bytes still apply.
pub fn resize_weights(
    spec: &mut ModelSpec,
    stored: Option<WeightPrecision>,
    to: WeightPrecision,
) -> Option<String> {
    if stored == Some(to) {
        return None;
    }
    let (fw, off) = spec.drop_file_weights()?;
    Some(format!(
        "weights at {}: the file stores {} ({}); sized from the architecture's tensors at {} as a quantiser lays them out, not from the file's bytes{}",
        to.label(),
        one_line(&fw.format),
        Bytes(fw.total_bytes).display_gib(),
        to.label(),
        if off {
            format!(" ({} parameters as in the file)", format::params(fw.params))
        } else {
            String::new()
        }
    ))
}

/// The first value of `spec` beyond the plausibility bounds (one set: core::model_limits).
pub(crate) use crate::core::model_limits::implausible;

/// The nearest preset by bits per weight (GGUF presets and 16/32-bit floats when `gguf`).
pub(crate) fn nearest_precision(bpw: f64, gguf: bool) -> Option<WeightPrecision> {
    if !bpw.is_finite() || bpw <= 0.0 {
        return None;
    }
    WeightPrecision::ALL
        .into_iter()
        .filter(|p| {
            !gguf || p.is_gguf() || matches!(p, WeightPrecision::Fp16 | WeightPrecision::Fp32)
        })
        .min_by(|a, b| {
            (a.bits_per_weight() - bpw)
                .abs()
                .total_cmp(&(b.bits_per_weight() - bpw).abs())
        })
}

pub(crate) fn bytes_by_type_sorted(it: impl Iterator<Item = (String, u64)>) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = it.filter(|(_, b)| *b > 0).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

impl ImportedModel {
    /// A finished import, its summary line written from the spec, the format and the total bytes
    /// (see [`summary_line`]).
    pub(crate) fn new(
        spec: ModelSpec,
        weights: Option<WeightPrecision>,
        format: &str,
        total_bytes: u64,
        notes: Vec<String>,
        bytes_by_type: Vec<(String, u64)>,
    ) -> ImportedModel {
        let summary = summary_line(&spec, format, total_bytes);
        ImportedModel {
            spec,
            weights,
            summary,
            notes,
            bytes_by_type,
        }
    }
}

/// "Llama 3 8B: llama, 32 layers, 8.03B parameters, GGUF Q4_K_M (mostly Q4_K), 4.58 GiB".
fn summary_line(spec: &ModelSpec, format: &str, total_bytes: u64) -> String {
    let params = spec.param_count().total;
    let mut s = format!("{}: {}, {} layers", spec.name, spec.arch, spec.layers);
    if params > 0 {
        s.push_str(&format!(", {} parameters", format::params(params)));
    }
    s.push_str(&format!(", {format}"));
    if total_bytes > 0 {
        s.push_str(&format!(", {}", Bytes(total_bytes).display_gib()));
    }
    if spec.is_estimated() {
        s.push_str(" (shape inferred)");
    }
    s
}
