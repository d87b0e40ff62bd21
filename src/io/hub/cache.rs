//! The cache of what was read from the network: one folder per request (repo + revision + the
//! file picked, or the URL) holding the small files (config.json, the index), the header bytes
//! of each weight file and a manifest with the files' sizes, ETags and the commit. A request
//! found here is answered with no network at all. An entry is written to a staging folder and
//! renamed into place only after the model imported, so nothing is cached from a failed read.

use super::{HubError, HubErrorKind};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const MANIFEST: &str = "manifest.json";

/// The default cache root: `$HEADROOM_CACHE` when set, else the platform cache folder
/// (`~/.cache/headroom/hub` on Linux, `~/Library/Caches/headroom/hub` on macOS,
/// `%LOCALAPPDATA%\headroom\cache\hub` on Windows).
pub fn default_root() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HEADROOM_CACHE").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    directories::ProjectDirs::from("", "", "headroom").map(|d| d.cache_dir().join("hub"))
}

/// One weight file's header as cached.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CachedFile {
    /// The file's path in the repository (or its URL's last segment).
    pub name: String,
    /// Its full length on the server.
    pub size: u64,
    pub etag: Option<String>,
    /// The file in the entry folder holding the first bytes read (the header).
    pub prefix: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub enum Format {
    Gguf,
    Safetensors,
    Config,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    /// Where the model came from, for provenance: `https://huggingface.co/ORG/NAME@REV` or the
    /// URL (never a token).
    pub source: String,
    /// The name the model is shown under when its files do not name it.
    pub name: String,
    /// The commit the revision pointed to when read (Hub only).
    pub commit: Option<String>,
    pub format: Format,
    /// `config.json` saved in the entry.
    pub config: bool,
    /// `model.safetensors.index.json` saved in the entry.
    pub index: bool,
    pub files: Vec<CachedFile>,
    /// Body bytes the first read took, and its requests.
    pub bytes_transferred: u64,
    pub requests: u64,
}

/// A file-system-safe key part: ASCII letters, digits, `.`, `_`, `-` kept, anything else `%XX`.
pub fn key_part(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || (b == b'.' && !out.is_empty()) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.is_empty() {
        out.push('_');
    }
    out
}

/// FNV-1a 64 of a string: a short stable folder name for a URL.
pub fn fnv64(s: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

pub fn cache_err(path: &Path, e: &std::io::Error) -> HubError {
    HubError::new(
        HubErrorKind::Cache,
        format!("cache {}: {e}", path.display()),
    )
}

/// The manifest of a complete entry: `Ok(None)` when there is none, an error saying what is
/// wrong when there is one that cannot be read (a damaged entry).
pub fn load(entry: &Path) -> Result<Option<Manifest>, String> {
    let p = entry.join(MANIFEST);
    let text = match crate::io::read_text_limited(&p, crate::io::limits::CACHE_MANIFEST) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", p.display())),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| format!("{}: not a headroom cache manifest ({e})", p.display()))
}

/// Removes what dead processes left beside `entry`: staging folders `.NAME.partial-PID-N` and
/// temporary files `.NAME.partial-PID` of a run that was killed (Ctrl-C) before it finished.
/// A process is dead when `/proc/PID` is gone (Linux); elsewhere, when its leftover is more
/// than a day old. Best effort: what cannot be removed stays.
pub fn remove_stale_partials(entry: &Path) {
    let Some(dir) = entry.parent() else { return };
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let me = std::process::id();
    for e in rd.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let Some(pid) = partial_pid(&name) else {
            continue;
        };
        if pid == me || alive(pid, &e) {
            continue;
        }
        let p = e.path();
        if p.is_dir() {
            let _ = std::fs::remove_dir_all(&p);
        } else {
            let _ = std::fs::remove_file(&p);
        }
    }
}

/// The PID in `.NAME.partial-PID` or `.NAME.partial-PID-N`.
fn partial_pid(name: &str) -> Option<u32> {
    if !name.starts_with('.') {
        return None;
    }
    let (_, tail) = name.rsplit_once(".partial-")?;
    tail.split('-').next()?.parse().ok()
}

fn alive(pid: u32, e: &std::fs::DirEntry) -> bool {
    if Path::new("/proc/self").exists() {
        return Path::new(&format!("/proc/{pid}")).exists();
    }
    let day = std::time::Duration::from_secs(24 * 3600);
    e.metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_none_or(|age| age < day)
}

/// A fresh staging folder beside where `entry` will live.
pub fn stage(entry: &Path) -> Result<PathBuf, HubError> {
    let parent = entry.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| cache_err(parent, &e))?;
    let name = entry
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for i in 0..1000u32 {
        let p = parent.join(format!(".{name}.partial-{}-{i}", std::process::id()));
        match std::fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(cache_err(&p, &e)),
        }
    }
    Err(HubError::new(
        HubErrorKind::Cache,
        format!("cache {}: cannot create a staging folder", parent.display()),
    ))
}

/// Moves a staged entry into place (another process may have put the same entry there first:
/// then the staged copy is dropped).
pub fn commit(staged: &Path, entry: &Path) -> Result<(), HubError> {
    if matches!(load(entry), Ok(Some(_))) {
        let _ = std::fs::remove_dir_all(staged);
        return Ok(());
    }
    if entry.exists() {
        let _ = std::fs::remove_dir_all(entry);
    }
    std::fs::rename(staged, entry).map_err(|e| {
        let _ = std::fs::remove_dir_all(staged);
        cache_err(entry, &e)
    })
}

pub fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), HubError> {
    let p = dir.join(name);
    std::fs::write(&p, bytes).map_err(|e| cache_err(&p, &e))
}

/// Writes a whole file or nothing (a temporary file beside it, then a rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), HubError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| cache_err(dir, &e))?;
    let tmp = dir.join(format!(
        ".{}.partial-{}",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    std::fs::write(&tmp, bytes).map_err(|e| cache_err(&tmp, &e))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        cache_err(path, &e)
    })
}
