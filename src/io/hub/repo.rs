//! Repository ids, revisions, resolve URLs, listings and picking a GGUF file from them.

use super::*;

/// `ORG/NAME[@REVISION]` → (repo, revision; `main` when not given).
pub fn parse_repo(s: &str) -> Result<(String, String), HubError> {
    let s = s.trim();
    let (repo, rev) = match s.split_once('@') {
        Some((r, v)) => (r, v),
        None => (s, "main"),
    };
    let ok_part = |p: &str| {
        !p.is_empty()
            && p.len() <= 96
            && !p.starts_with(['.', '-'])
            && !p.contains("..")
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    };
    let parts: Vec<&str> = repo.split('/').collect();
    if parts.is_empty() || parts.len() > 2 || !parts.iter().all(|p| ok_part(p)) {
        return Err(HubError::bad(format!(
            "--hf: '{s}' is not a repo id: expected ORG/NAME or ORG/NAME@REVISION"
        )));
    }
    let rev_ok = !rev.is_empty()
        && rev.len() <= 256
        && !rev
            .split('/')
            .any(|p| p.is_empty() || p == "." || p == "..")
        && rev
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'));
    if !rev_ok {
        return Err(HubError::bad(format!(
            "--hf: '{rev}' is not a revision (a branch, tag or commit)"
        )));
    }
    Ok((repo.to_string(), rev.to_string()))
}

/// A file path inside a repo: no `..`, no absolute paths, plain characters.
pub(super) fn check_repo_file(f: &str) -> Result<(), HubError> {
    let ok = !f.is_empty()
        && f.len() <= 1024
        && !f.starts_with('/')
        && !f.split('/').any(|p| p.is_empty() || p == "." || p == "..")
        && !f
            .chars()
            .any(|c| c.is_control() || matches!(c, '\\' | '?' | '#' | '%'));
    if ok {
        Ok(())
    } else {
        Err(HubError::bad(format!(
            "'{f}' is not a file name in a repository"
        )))
    }
}

/// Percent-encodes a path segment (keeps `/` when `keep_slash`).
pub(super) fn encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'_' | b'.' | b'~')
            || (keep_slash && b == b'/')
        {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The resolve URL of a file at a revision (huggingface_hub `hf_hub_url`).
pub fn resolve_url(endpoint: &str, repo: &str, revision: &str, file: &str) -> String {
    format!(
        "{endpoint}/{repo}/resolve/{}/{}",
        encode(revision, false),
        encode(file, true)
    )
}

/// One file of a repository listing.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RemoteFile {
    pub path: String,
    /// Bytes, when the listing says.
    pub size: Option<u64>,
}

/// A repository at a revision.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RepoListing {
    pub repo: String,
    pub revision: String,
    /// The commit the revision points to.
    pub commit: Option<String>,
    pub files: Vec<RemoteFile>,
}

/// One GGUF model in a repository: a file, or the parts of a split one (listed by its first part).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GgufChoice {
    /// The file to open (the first part of a split model).
    pub file: String,
    /// The quantisation named in the file name (`Q4_K_M`), when one is.
    pub quant: Option<String>,
    pub parts: u64,
    /// All parts' bytes together.
    pub size: Option<u64>,
}

impl RepoListing {
    pub(super) fn has(&self, f: &str) -> bool {
        self.files.iter().any(|x| x.path == f)
    }
    pub(super) fn size_of(&self, f: &str) -> Option<u64> {
        self.files.iter().find(|x| x.path == f).and_then(|x| x.size)
    }
    /// The top-level safetensors files, Hugging Face shards preferred over `consolidated*`.
    pub fn safetensors(&self) -> Vec<String> {
        let all: Vec<String> = self
            .files
            .iter()
            .filter(|f| {
                !f.path.contains('/') && f.path.to_ascii_lowercase().ends_with(".safetensors")
            })
            .map(|f| f.path.clone())
            .collect();
        let (cons, hf): (Vec<String>, Vec<String>) = all
            .iter()
            .cloned()
            .partition(|f| f.starts_with("consolidated"));
        if !hf.is_empty() { hf } else { cons }
    }
    /// The GGUF models, multimodal projectors (`mmproj*`) left out, by file name.
    pub fn ggufs(&self) -> Vec<GgufChoice> {
        let mut out: Vec<GgufChoice> = Vec::new();
        for f in &self.files {
            let lower = f.path.to_ascii_lowercase();
            let base = lower.rsplit('/').next().unwrap_or(&lower);
            if !lower.ends_with(".gguf") || base.starts_with("mmproj") {
                continue;
            }
            match split_part(&f.path) {
                Some((prefix, no, of)) => {
                    if no != 1 {
                        continue;
                    }
                    let names: Vec<String> = (1..=of)
                        .map(|i| format!("{prefix}-{i:05}-of-{of:05}.gguf"))
                        .collect();
                    let size = names
                        .iter()
                        .map(|n| self.size_of(n))
                        .try_fold(0u64, |a, s| s.map(|s| a.saturating_add(s)));
                    out.push(GgufChoice {
                        file: f.path.clone(),
                        quant: quant_in_name(&f.path),
                        parts: of,
                        size,
                    });
                }
                None => out.push(GgufChoice {
                    file: f.path.clone(),
                    quant: quant_in_name(&f.path),
                    parts: 1,
                    size: f.size,
                }),
            }
        }
        out
    }
}

/// `dir/name-00001-of-00003.gguf` → (`dir/name`, 1, 3) (llama.cpp `llama_split_path`).
pub(super) fn split_part(path: &str) -> Option<(String, u64, u64)> {
    let stem = path.strip_suffix(".gguf")?;
    let (rest, of) = stem.rsplit_once("-of-")?;
    let (prefix, no) = rest.rsplit_once('-')?;
    let digits = |s: &str| s.len() == 5 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(of) || !digits(no) {
        return None;
    }
    Some((prefix.to_string(), no.parse().ok()?, of.parse().ok()?))
}

/// The words of a path: split on `/`, `-` and `.`.
pub(super) fn words(path: &str) -> impl Iterator<Item = &str> {
    path.split(['/', '-', '.']).filter(|w| !w.is_empty())
}

/// The GGUF quantisation named in a file name: `Llama-3-8B-Q4_K_M.gguf` → `Q4_K_M`
/// (llama.cpp `llama_ftype` names, as [`crate::core::ggml::file_type_name`] spells them).
pub fn quant_in_name(path: &str) -> Option<String> {
    let known: Vec<&str> = (0..64)
        .filter_map(crate::core::ggml::file_type_name)
        .collect();
    words(path)
        .map(|w| w.to_ascii_uppercase())
        .filter(|w| known.contains(&w.as_str()))
        .last()
}

/// The file-name tag of a weight precision for the quant picker (`q4_k_m`, `f16`).
pub fn quant_tag(w: WeightPrecision) -> String {
    match w {
        WeightPrecision::Fp16 => "f16".into(),
        WeightPrecision::Bf16 => "bf16".into(),
        WeightPrecision::Fp32 => "f32".into(),
        other => other.cli_name().to_string(),
    }
}
