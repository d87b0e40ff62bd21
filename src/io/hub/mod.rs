//! Models by name: headers read from the Hugging Face Hub (or a mirror) and from URLs.
//!
//! Only headers come over the network: `config.json` and `model.safetensors.index.json`, each
//! safetensors shard's 8-byte length and JSON header (two range requests), or a GGUF file's
//! metadata and tensor infos (range requests that grow only as far as the parser needs). The
//! bytes go through the same readers as local files (`io::import`), with the same bounds, so a
//! remote model gives exactly the parameters and bytes its local copy would. What was read is
//! cached (see [`cache`]); a cached request makes no network request at all.
//!
//! The network is used only inside [`open`] and [`list_repo`], which the CLI calls for `--hf` /
//! `--url` and the GUI for "Open from Hugging Face…". Nothing runs at start-up or in the
//! background. The Hub conventions follow huggingface_hub (`constants.py`: `HF_ENDPOINT`,
//! `HF_HOME`, `HF_TOKEN`, `HF_TOKEN_PATH`; `file_download.py` `hf_hub_url`: the
//! `{endpoint}/{repo}/resolve/{revision}/{file}` scheme; `hf_api.py` `model_info`:
//! `{endpoint}/api/models/{repo}/revision/{revision}`).

pub mod cache;
mod error;
mod http;
mod read;
mod repo;

pub use error::{HubError, HubErrorKind};
pub use http::Token;
use read::*;
pub use repo::{
    GgufChoice, RemoteFile, RepoListing, parse_repo, quant_in_name, quant_tag, resolve_url,
};
use repo::{check_repo_file, encode, split_part};

use crate::core::precision::WeightPrecision;
use crate::io::import::gguf::{self, GgufHeader};
use crate::io::import::safetensors::{self, SafetensorsHeader};
use crate::io::import::{ImportError, ImportedModel, hf, hf_model};
use cache::{CachedFile, Format, Manifest};
use http::Http;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// huggingface_hub's default endpoint.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";
/// The first range read of a GGUF file; each further read doubles, up to [`GGUF_MAX_RANGE`].
/// A header is metadata (vocabularies of 32k–256k tokens: a few MB) then 24+ bytes per tensor.
pub const GGUF_FIRST_RANGE: u64 = 256 * 1024;
pub const GGUF_MAX_RANGE: u64 = 16 * 1024 * 1024;
/// The most header bytes read from one GGUF file. The largest published vocabularies with their
/// merges take some tens of MB; more than this is not a model header.
pub const GGUF_MAX_HEADER: u64 = 256 * 1024 * 1024;
/// The most safetensors shards read for one model: the largest published checkpoints have a few
/// hundred (DeepSeek-V3: 163 in its model.safetensors.index.json); each costs two requests.
pub const MAX_SHARDS: usize = 2048;
/// The most bytes accepted for config.json, an index or the repository listing.
pub const MAX_JSON: u64 = 64 * 1024 * 1024;
/// The default time one request may take, body included (`HEADROOM_HUB_TIMEOUT_S`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The default time all the requests of one model may take together
/// (`HEADROOM_HUB_DEADLINE_S`): a 163-shard checkpoint takes 327 requests, some seconds.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(300);

/// Seconds from an environment variable (a positive number), else `default`.
fn secs_from_env(var: &str, default: Duration) -> Duration {
    std::env::var(var)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
        .map_or(default, Duration::from_secs_f64)
}

/// What to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    Hub {
        /// `ORG/NAME` (or a legacy `NAME`).
        repo: String,
        revision: String,
        /// One file of the repo (a GGUF, a safetensors file, or config.json).
        file: Option<String>,
        /// A GGUF quantisation to pick, as named in file names: `q4_k_m`, `q8_0`, `f16`.
        quant: Option<String>,
    },
    /// A `.gguf` or `.safetensors` file at a URL.
    Url(String),
}

/// How to reach the network and where to cache.
#[derive(Clone, Debug)]
pub struct Options {
    pub endpoint: String,
    pub token: Option<Token>,
    /// `None`: no cache (every open reads again; nothing is written).
    pub cache_root: Option<PathBuf>,
    pub timeout: Duration,
    /// The most time all the requests of one [`open`] or [`list_repo`] may take together
    /// (`None`: no overall bound beyond `timeout` per request).
    pub deadline: Option<Duration>,
    pub cancel: Option<Arc<AtomicBool>>,
    /// No request at all: answer from the cache or fail (`HF_HUB_OFFLINE=1`, as huggingface_hub).
    pub offline: bool,
}

impl Options {
    /// From the environment, as huggingface_hub reads it: `HF_ENDPOINT`, `HF_TOKEN` (else the
    /// token file `huggingface-cli login` writes: `$HF_TOKEN_PATH`, else `$HF_HOME/token`, else
    /// `~/.cache/huggingface/token`), and the cache root ([`cache::default_root`]).
    /// Proxies (`HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`) are read by the HTTP client.
    /// `HEADROOM_HUB_TIMEOUT_S` and `HEADROOM_HUB_DEADLINE_S` bound one request and all of them.
    pub fn from_env() -> Options {
        let endpoint = std::env::var("HF_ENDPOINT")
            .ok()
            .map(|e| e.trim().trim_end_matches('/').to_string())
            .filter(|e| !e.is_empty())
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
        Options {
            endpoint,
            token: token_from_env(),
            cache_root: cache::default_root(),
            timeout: secs_from_env("HEADROOM_HUB_TIMEOUT_S", DEFAULT_TIMEOUT),
            deadline: Some(secs_from_env("HEADROOM_HUB_DEADLINE_S", DEFAULT_DEADLINE)),
            cancel: None,
            offline: std::env::var("HF_HUB_OFFLINE").is_ok_and(|v| {
                matches!(
                    v.trim().to_ascii_lowercase().as_str(),
                    "1" | "true" | "yes" | "on"
                )
            }),
        }
    }
}

/// `HF_TOKEN`, else the token file (huggingface_hub `utils/_auth.py` `get_token`).
pub fn token_from_env() -> Option<Token> {
    if let Some(t) = std::env::var("HF_TOKEN").ok().and_then(|t| Token::new(&t)) {
        return Some(t);
    }
    let path = std::env::var_os("HF_TOKEN_PATH")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| hf_home().map(|h| h.join("token")))?;
    // Bounded: a token is 37 bytes; `HF_TOKEN_PATH=/dev/zero` must not fill the memory.
    crate::io::read_text_limited(&path, crate::io::limits::TOKEN_FILE)
        .ok()
        .and_then(|t| Token::new(&t))
}

/// `$HF_HOME`, else `$XDG_CACHE_HOME/huggingface`, else `~/.cache/huggingface`.
fn hf_home() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("HF_HOME")
        .or_else(|| var("XDG_CACHE_HOME").map(|c| c.join("huggingface")))
        .or_else(|| {
            directories::BaseDirs::new().map(|b| b.home_dir().join(".cache").join("huggingface"))
        })
}

/// What an open did on the network.
#[derive(Clone, Debug, PartialEq)]
pub struct Opened {
    pub model: ImportedModel,
    /// Body bytes received and requests sent by this call (0 and 0 when served from the cache).
    pub bytes_transferred: u64,
    pub requests: u64,
    pub from_cache: bool,
    /// The cache entry, when there is a cache.
    pub cache_entry: Option<PathBuf>,
}

/// Progress of an open: `done` of `total` steps, and what is being read.
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize, &str);

/// Lists a repository at a revision (one request to the Hub API). A listing read before is kept
/// in the cache, and answers when the network is down (no network, timeout), so a model opened
/// once can be picked again offline.
pub fn list_repo(repo: &str, revision: &str, opts: &Options) -> Result<RepoListing, HubError> {
    let mut http = Http::new(opts);
    let saved = opts
        .cache_root
        .as_ref()
        .map(|root| repo_dir(root, &opts.endpoint, repo, revision).join(LISTING));
    match list_with(&mut http, repo, revision, opts).map_err(|e| hub_error(e, repo, revision, opts))
    {
        Ok(l) => {
            if let Some(p) = &saved
                && let Ok(text) = serde_json::to_vec(&l)
            {
                // Best effort: a listing that cannot be saved is still a listing.
                let _ = cache::write_atomic(p, &text);
            }
            Ok(l)
        }
        Err(e) if matches!(e.kind, HubErrorKind::Network | HubErrorKind::Timeout) => saved
            .and_then(|p| crate::io::read_limited(&p, crate::io::limits::CACHE_MANIFEST).ok())
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or(e),
        Err(e) => Err(e),
    }
}

/// The saved listing of a repo at a revision.
const LISTING: &str = "listing.json";

/// The cache folder of a repo at a revision on an endpoint: `models/ORG--NAME/REV` for the
/// Hub itself, `endpoints/ENDPOINT/models/ORG--NAME/REV` for a mirror (`HF_ENDPOINT`), so one
/// server's answers are never taken for another's.
fn repo_dir(root: &Path, endpoint: &str, repo: &str, revision: &str) -> PathBuf {
    let base = if endpoint == DEFAULT_ENDPOINT {
        root.to_path_buf()
    } else {
        root.join("endpoints").join(cache::key_part(endpoint))
    };
    base.join("models")
        .join(cache::key_part(&repo.replace('/', "--")))
        .join(cache::key_part(revision))
}

fn list_with(
    http: &mut Http,
    repo: &str,
    revision: &str,
    opts: &Options,
) -> Result<RepoListing, HubError> {
    let url = format!(
        "{}/api/models/{repo}/revision/{}?blobs=true",
        opts.endpoint,
        encode(revision, false)
    );
    let r = http.get_small(&url, repo, MAX_JSON)?;
    let v: serde_json::Value = serde_json::from_slice(&r.body).map_err(|e| {
        HubError::new(
            HubErrorKind::Invalid,
            format!("{repo}: the Hub's file list is not JSON ({e})"),
        )
    })?;
    let Some(siblings) = v.get("siblings").and_then(|s| s.as_array()) else {
        return Err(HubError::new(
            HubErrorKind::Invalid,
            format!("{repo}: the Hub's answer has no file list (\"siblings\")"),
        ));
    };
    let files = siblings
        .iter()
        .filter_map(|s| {
            let path = s.get("rfilename")?.as_str()?.to_string();
            let size = s
                .get("lfs")
                .and_then(|l| l.get("size"))
                .or_else(|| s.get("size"))
                .and_then(|x| x.as_u64());
            Some(RemoteFile { path, size })
        })
        .collect();
    Ok(RepoListing {
        repo: repo.to_string(),
        revision: revision.to_string(),
        commit: v.get("sha").and_then(|s| s.as_str()).map(str::to_string),
        files,
    })
}

/// Hub errors in the user's words, said once: a gated repo says where to accept the licence
/// and, when no token was sent, to set HF_TOKEN; when one was sent, that it was refused.
fn hub_error(e: HubError, repo: &str, revision: &str, opts: &Options) -> HubError {
    let endpoint = &opts.endpoint;
    match e.kind {
        HubErrorKind::Gated if opts.token.is_some() => HubError::new(
            HubErrorKind::Gated,
            format!(
                "{repo} is gated or private and {} refused the token sent ({}): accept the licence at {endpoint}/{repo} with the account the token belongs to, or check that HF_TOKEN (or the token file) holds a token with read access",
                http::host_of(endpoint),
                e.status_text()
            ),
        ),
        HubErrorKind::Gated => HubError::new(
            HubErrorKind::Gated,
            format!(
                "{repo} is gated or private ({}): accept the licence at {endpoint}/{repo} and set HF_TOKEN",
                e.status_text()
            ),
        ),
        HubErrorKind::NotFound if e.message.contains("no such revision") => HubError::new(
            HubErrorKind::NotFound,
            format!("{repo}: revision '{revision}' not found ({})", e.message),
        ),
        _ => e,
    }
}

/// The cache entry folder of a request.
fn entry_of(root: &Path, endpoint: &str, req: &Request) -> PathBuf {
    match req {
        Request::Hub {
            repo,
            revision,
            file,
            quant,
        } => {
            let pick = match (file, quant) {
                (Some(f), _) => format!("file-{}", cache::key_part(f)),
                (None, Some(q)) => format!("quant-{}", cache::key_part(&q.to_ascii_lowercase())),
                (None, None) => "default".into(),
            };
            repo_dir(root, endpoint, repo, revision).join(pick)
        }
        Request::Url(u) => root.join("urls").join(cache::fnv64(u)),
    }
}

/// Removes the folders `stage` created under `root` for an entry that was not kept, when they
/// are empty (a failed first read must not leave `models/ORG--NAME/REV/` behind).
fn remove_empty_parents(root: &Path, entry: &Path) {
    let mut dir = entry.parent();
    while let Some(d) = dir {
        if d == root || !d.starts_with(root) || std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

/// Reads a model's headers (or answers from the cache) and imports them.
pub fn open(req: &Request, opts: &Options, progress: Progress) -> Result<Opened, HubError> {
    if let Request::Hub {
        repo,
        revision,
        file,
        ..
    } = req
    {
        parse_repo(&format!("{repo}@{revision}"))?;
        if let Some(f) = file {
            check_repo_file(f)?;
        }
    }
    if let Request::Url(u) = req
        && !(u.starts_with("https://") || u.starts_with("http://"))
    {
        return Err(HubError::bad(format!("--url: '{u}' is not an http(s) URL")));
    }
    let entry = opts
        .cache_root
        .as_ref()
        .map(|r| entry_of(r, &opts.endpoint, req));
    // What was wrong with a damaged cache entry, said if reading again fails too.
    let mut damaged: Option<String> = None;
    if let Some(e) = &entry {
        cache::remove_stale_partials(e);
        match cache::load(e) {
            Ok(Some(m)) => match import_entry(e, &m) {
                Ok(model) => {
                    progress(1, 1, "from the cache");
                    return Ok(Opened {
                        model,
                        bytes_transferred: 0,
                        requests: 0,
                        from_cache: true,
                        cache_entry: Some(e.clone()),
                    });
                }
                Err(err) => damaged = Some(err.message),
            },
            Ok(None) => {}
            Err(why) => damaged = Some(why),
        }
        if damaged.is_some() {
            // Read again from the network (or fail saying which folder was damaged).
            let _ = std::fs::remove_dir_all(e);
        }
    }
    let damaged_note = |mut err: HubError| {
        if let (Some(why), Some(e)) = (&damaged, &entry) {
            err.message = format!(
                "{} (the cache entry {} was damaged and has been removed: {})",
                err.message,
                e.display(),
                crate::core::format::one_line(why)
            );
        }
        err
    };
    let staging = match &entry {
        Some(e) => cache::stage(e).map_err(damaged_note)?,
        None => {
            let tmp = std::env::temp_dir().join(format!("headroom-hub-{}", std::process::id()));
            cache::stage(&tmp.join("entry"))?
        }
    };
    let result = fetch_into(&staging, req, opts, progress).and_then(|m| {
        let model = import_entry(&staging, &m)?;
        Ok((m, model))
    });
    let cache_entry = match (&result, &entry) {
        (Ok(_), Some(e)) => cache::commit(&staging, e).map(|()| Some(e.clone())),
        _ => {
            // Nothing is kept from a failed read, nor without a cache.
            let _ = std::fs::remove_dir_all(&staging);
            match (&entry, &opts.cache_root) {
                (Some(e), Some(root)) => remove_empty_parents(root, e),
                _ => {
                    if let Some(parent) = staging.parent() {
                        let _ = std::fs::remove_dir(parent);
                    }
                }
            }
            Ok(None)
        }
    };
    let (m, model) = result.map_err(damaged_note)?;
    Ok(Opened {
        model,
        bytes_transferred: m.bytes_transferred,
        requests: m.requests,
        from_cache: false,
        cache_entry: cache_entry?,
    })
}

/// Downloads the headers into `dir` and writes the manifest.
fn fetch_into(
    dir: &Path,
    req: &Request,
    opts: &Options,
    progress: Progress,
) -> Result<Manifest, HubError> {
    let mut http = Http::new(opts);
    let mut m = match req {
        Request::Url(url) => fetch_url(&mut http, dir, url, progress)?,
        Request::Hub {
            repo,
            revision,
            file,
            quant,
        } => fetch_hub(
            &mut http,
            dir,
            repo,
            revision,
            file.as_deref(),
            quant.as_deref(),
            opts,
            progress,
        )
        .map_err(|e| hub_error(e, repo, revision, opts))?,
    };
    m.bytes_transferred = http.bytes;
    m.requests = http.requests;
    let text = serde_json::to_string_pretty(&m)
        .map_err(|e| HubError::new(HubErrorKind::Cache, format!("cache manifest: {e}")))?;
    cache::write(dir, cache::MANIFEST, text.as_bytes())?;
    Ok(m)
}

fn last_segment(url: &str) -> String {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    path.rsplit('/').next().unwrap_or(path).to_string()
}

fn fetch_url(
    http: &mut Http,
    dir: &Path,
    url: &str,
    progress: Progress,
) -> Result<Manifest, HubError> {
    let name = last_segment(url);
    let lower = name.to_ascii_lowercase();
    let source = url.split(['?', '#']).next().unwrap_or(url).to_string();
    progress(0, 1, &name);
    let (format, file) = if lower.ends_with(".gguf") {
        let h = fetch_gguf(http, url, &name)?;
        (Format::Gguf, cache_header(dir, 0, &name, h)?)
    } else if lower.ends_with(".safetensors") {
        let h = fetch_safetensors(http, url, &name)?;
        (Format::Safetensors, cache_header(dir, 0, &name, h)?)
    } else {
        return Err(HubError::bad(format!(
            "--url: {name} is not a .gguf or .safetensors file"
        )));
    };
    progress(1, 1, &name);
    let stem = name
        .trim_end_matches(".gguf")
        .trim_end_matches(".safetensors")
        .to_string();
    let mut files = vec![file];
    if format == Format::Gguf {
        // A split GGUF brings its other parts, beside it at the same URL.
        let extra = split_siblings(dir, &files[0])?;
        let path = url.split(['?', '#']).next().unwrap_or(url);
        let base = &path[..path.rfind('/').map_or(0, |i| i + 1)];
        for (i, part) in extra.iter().enumerate() {
            let part_url = format!("{base}{}", last_segment(part));
            progress(i + 1, extra.len() + 1, part);
            let h = fetch_gguf(http, &part_url, part)?;
            files.push(cache_header(dir, i + 1, part, h)?);
        }
    }
    Ok(Manifest {
        source,
        name: split_part(&name).map(|p| p.0).unwrap_or(stem),
        commit: None,
        format,
        config: false,
        index: false,
        files,
        bytes_transferred: 0,
        requests: 0,
    })
}

/// The other parts a split GGUF's first file names (`split.count`), as paths beside it.
fn split_siblings(dir: &Path, first: &CachedFile) -> Result<Vec<String>, HubError> {
    let h = read_cached_gguf(dir, first)?;
    let count = h.get_u64("split.count").unwrap_or(1);
    if count <= 1 {
        return Ok(Vec::new());
    }
    let Some((prefix, no, of)) = split_part(&first.name) else {
        return Err(HubError::new(
            HubErrorKind::Invalid,
            format!(
                "{}: split.count is {count} but the name is not PREFIX-NNNNN-of-NNNNN.gguf, so the other parts cannot be found",
                first.name
            ),
        ));
    };
    if of != count || no != 1 {
        return Err(HubError::new(
            HubErrorKind::Invalid,
            format!(
                "{}: split.count is {count}; open the first part (-00001-of-{count:05}.gguf)",
                first.name
            ),
        ));
    }
    if count as usize > MAX_SHARDS {
        return Err(too_many(&first.name, count as usize));
    }
    Ok((2..=count)
        .map(|i| format!("{prefix}-{i:05}-of-{count:05}.gguf"))
        .collect())
}

fn too_many(what: &str, n: usize) -> HubError {
    HubError::new(
        HubErrorKind::TooManyShards,
        format!("{what}: {n} weight files, more than headroom reads ({MAX_SHARDS})"),
    )
}

#[allow(clippy::too_many_arguments)]
fn fetch_hub(
    http: &mut Http,
    dir: &Path,
    repo: &str,
    revision: &str,
    file: Option<&str>,
    quant: Option<&str>,
    opts: &Options,
    progress: Progress,
) -> Result<Manifest, HubError> {
    progress(0, 1, "listing the repository");
    let listing = list_with(http, repo, revision, opts)?;
    // Pin every file read to the commit the listing saw.
    let at = listing
        .commit
        .clone()
        .unwrap_or_else(|| revision.to_string());
    let url = |f: &str| resolve_url(&opts.endpoint, repo, &at, f);
    let name = repo.rsplit('/').next().unwrap_or(repo).to_string();
    let source = format!("{}/{repo}@{revision}", opts.endpoint);
    let mut m = Manifest {
        source,
        name,
        commit: listing.commit.clone(),
        format: Format::Config,
        config: false,
        index: false,
        files: Vec::new(),
        bytes_transferred: 0,
        requests: 0,
    };
    let pick = pick_files(&listing, repo, revision, file, quant)?;
    let mut r = RepoReader {
        http,
        dir,
        repo,
        listing: &listing,
        url: &url,
    };
    match pick {
        HubPick::SafetensorsFile(f) => {
            m.files.push(r.safetensors(&f, 0)?);
            m.format = Format::Safetensors;
            if listing.has(hf::CONFIG) {
                r.json(hf::CONFIG)?;
                m.config = true;
            }
            progress(1, 1, &f);
        }
        HubPick::Config => {
            r.json(hf::CONFIG)?;
            m.config = true;
            progress(1, 1, hf::CONFIG);
        }
        HubPick::Gguf(f) => r.gguf_model(&f, &mut m, progress)?,
        HubPick::Checkpoint => r.checkpoint(revision, &mut m, progress)?,
    }
    Ok(m)
}

/// What `--hf` reads from a repository, chosen from its listing before any file is read.
enum HubPick {
    /// One GGUF model, by its first file (a split model brings its other parts).
    Gguf(String),
    /// The safetensors file --hf-file names, and config.json beside it when there is one.
    SafetensorsFile(String),
    /// config.json alone (--hf-file config.json).
    Config,
    /// The checkpoint: config.json, the index and the shards it names, else every safetensors
    /// file (or config.json alone).
    Checkpoint,
}

/// Which files to read: the one --hf-file names, the GGUF of the --weights quant, else the
/// checkpoint or the repository's only GGUF model.
fn pick_files(
    listing: &RepoListing,
    repo: &str,
    revision: &str,
    file: Option<&str>,
    quant: Option<&str>,
) -> Result<HubPick, HubError> {
    let ggufs = listing.ggufs();
    let gguf = match (file, quant) {
        (Some(f), _) => return pick_named_file(listing, repo, revision, f, &ggufs),
        (None, Some(q)) if !ggufs.is_empty() => pick_quant(listing, repo, q, &ggufs)?,
        _ => {
            if !listing.safetensors().is_empty() || ggufs.is_empty() {
                None
            } else if ggufs.len() == 1 {
                Some(ggufs[0].file.clone())
            } else {
                return Err(HubError::new(
                    HubErrorKind::Ambiguous,
                    format!(
                        "{repo} holds {} GGUF models: pick one with --weights QUANT or --hf-file{}",
                        ggufs.len(),
                        gguf_hint(&ggufs)
                    ),
                ));
            }
        }
    };
    Ok(gguf.map_or(HubPick::Checkpoint, HubPick::Gguf))
}

/// The file --hf-file names: it must be in the listing, and a GGUF, a safetensors file or
/// config.json.
fn pick_named_file(
    listing: &RepoListing,
    repo: &str,
    revision: &str,
    f: &str,
    ggufs: &[GgufChoice],
) -> Result<HubPick, HubError> {
    if !listing.has(f) {
        return Err(HubError::new(
            HubErrorKind::NotFound,
            format!(
                "{repo}: no file '{f}' at revision '{revision}'{}",
                gguf_hint(ggufs)
            ),
        ));
    }
    let lower = f.to_ascii_lowercase();
    if lower.ends_with(".gguf") {
        Ok(HubPick::Gguf(f.to_string()))
    } else if lower.ends_with(".safetensors") {
        Ok(HubPick::SafetensorsFile(f.to_string()))
    } else if f == hf::CONFIG {
        Ok(HubPick::Config)
    } else {
        Err(HubError::bad(format!(
            "--hf-file: {f} is not a .gguf, .safetensors or config.json file"
        )))
    }
}

/// The GGUF file of quant `q` (--weights); `None` when there is none but the repository has a
/// safetensors checkpoint.
fn pick_quant(
    listing: &RepoListing,
    repo: &str,
    q: &str,
    ggufs: &[GgufChoice],
) -> Result<Option<String>, HubError> {
    let q = q.to_ascii_uppercase();
    let hits: Vec<&GgufChoice> = ggufs
        .iter()
        .filter(|g| g.quant.as_deref() == Some(q.as_str()))
        .collect();
    match hits.as_slice() {
        [one] => Ok(Some(one.file.clone())),
        [] if !listing.safetensors().is_empty() => Ok(None),
        [] => Err(HubError::new(
            HubErrorKind::NotFound,
            format!("{repo}: no GGUF file for {q}{}", gguf_hint(ggufs)),
        )),
        many => Err(HubError::new(
            HubErrorKind::Ambiguous,
            format!(
                "{repo}: {} GGUF files are {q}: pick one with --hf-file ({})",
                many.len(),
                many.iter()
                    .map(|g| g.file.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// Reads files of one repository at the commit its listing saw, into the entry folder.
struct RepoReader<'a> {
    http: &'a mut Http,
    dir: &'a Path,
    repo: &'a str,
    listing: &'a RepoListing,
    url: &'a dyn Fn(&str) -> String,
}

impl RepoReader<'_> {
    fn json(&mut self, name: &str) -> Result<String, HubError> {
        fetch_json(self.http, self.dir, &(self.url)(name), name)
    }

    fn safetensors(&mut self, f: &str, i: usize) -> Result<CachedFile, HubError> {
        let h = fetch_safetensors(self.http, &(self.url)(f), f)?;
        cache_header(self.dir, i, f, h)
    }

    fn gguf(&mut self, f: &str, i: usize) -> Result<CachedFile, HubError> {
        let h = fetch_gguf(self.http, &(self.url)(f), f)?;
        cache_header(self.dir, i, f, h)
    }

    /// A GGUF model: its first file, then the other parts a split model names; the model is
    /// named after the file.
    fn gguf_model(
        &mut self,
        f: &str,
        m: &mut Manifest,
        progress: Progress,
    ) -> Result<(), HubError> {
        let repo = self.repo;
        m.format = Format::Gguf;
        progress(0, 1, f);
        let first = self.gguf(f, 0)?;
        let extra = split_siblings(self.dir, &first)?;
        m.files.push(first);
        let total = extra.len() + 1;
        for (i, part) in extra.iter().enumerate() {
            if !self.listing.has(part) {
                return Err(HubError::new(
                    HubErrorKind::NotFound,
                    format!("{repo}: {part}, a part of the split model {f}, is missing"),
                ));
            }
            progress(i + 1, total, part);
            m.files.push(self.gguf(part, i + 1)?);
        }
        progress(total, total, "done");
        if let Some((prefix, _, _)) = split_part(f) {
            m.name = prefix.rsplit('/').next().unwrap_or(&prefix).to_string();
        } else {
            m.name = f
                .rsplit('/')
                .next()
                .unwrap_or(f)
                .trim_end_matches(".gguf")
                .to_string();
        }
        Ok(())
    }

    /// A safetensors checkpoint: config.json, the index and the shards it names, else every
    /// safetensors file; config.json alone when there are no weights.
    fn checkpoint(
        &mut self,
        revision: &str,
        m: &mut Manifest,
        progress: Progress,
    ) -> Result<(), HubError> {
        let repo = self.repo;
        if self.listing.has(hf::CONFIG) {
            self.json(hf::CONFIG)?;
            m.config = true;
        }
        let shards: Vec<String> = if self.listing.has(hf::INDEX) {
            let text = self.json(hf::INDEX)?;
            m.index = true;
            shards_of_index(&text)?
        } else {
            self.listing.safetensors()
        };
        if shards.is_empty() {
            if !m.config {
                return Err(HubError::new(
                    HubErrorKind::NotFound,
                    format!(
                        "{repo}: no config.json, .safetensors or .gguf file at revision '{revision}'"
                    ),
                ));
            }
            return Ok(());
        }
        if shards.len() > MAX_SHARDS {
            return Err(too_many(repo, shards.len()));
        }
        m.format = Format::Safetensors;
        let total = shards.len();
        for (i, s) in shards.iter().enumerate() {
            if !self.listing.has(s) {
                return Err(HubError::new(
                    HubErrorKind::NotFound,
                    format!("{repo}: the shard {s} named by {} is missing", hf::INDEX),
                ));
            }
            progress(i, total, s);
            m.files.push(self.safetensors(s, i)?);
        }
        progress(total, total, "done");
        Ok(())
    }
}

fn gguf_hint(ggufs: &[GgufChoice]) -> String {
    if ggufs.is_empty() {
        return String::new();
    }
    let mut q: Vec<String> = ggufs
        .iter()
        .map(|g| g.quant.clone().unwrap_or_else(|| g.file.clone()))
        .collect();
    q.dedup();
    let more = q.len().saturating_sub(12);
    q.truncate(12);
    format!(
        " (GGUF: {}{})",
        q.join(", "),
        if more > 0 {
            format!(", … {more} more")
        } else {
            String::new()
        }
    )
}

/// The shard names of an index's `weight_map` (plain names beside it, as the local import).
fn shards_of_index(text: &str) -> Result<Vec<String>, HubError> {
    let bad = |m: String| HubError::new(HubErrorKind::Invalid, format!("{}: {m}", hf::INDEX));
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| bad(format!("invalid JSON: {e}")))?;
    let map = v
        .get("weight_map")
        .and_then(|m| m.as_object())
        .ok_or_else(|| bad("no \"weight_map\" object".into()))?;
    let mut files = std::collections::BTreeSet::new();
    for (t, f) in map {
        let f = f
            .as_str()
            .ok_or_else(|| bad(format!("weight_map entry '{t}' is not a file name")))?;
        if f.contains('/') || f.contains('\\') || f == ".." || f.is_empty() {
            return Err(bad(format!(
                "weight_map entry '{t}' names a file outside the folder: {f}"
            )));
        }
        files.insert(f.to_string());
        if files.len() > MAX_SHARDS {
            return Err(too_many(hf::INDEX, files.len()));
        }
    }
    Ok(files.into_iter().collect())
}

/// Imports a (staged or cached) entry with the local importers.
fn import_entry(dir: &Path, m: &Manifest) -> Result<ImportedModel, HubError> {
    let read_text = |name: &str| -> Result<String, HubError> {
        let p = dir.join(name);
        crate::io::read_text_limited(&p, MAX_JSON).map_err(|e| cache::cache_err(&p, &e))
    };
    let mut model = match m.format {
        Format::Config => {
            let p = dir.join(hf::CONFIG);
            let mut imp = hf::import_config(&p).map_err(|e| HubError::built(&m.source, e))?;
            if let Some(fw) = &mut imp.spec.file_weights {
                fw.path = m.source.clone();
            }
            imp
        }
        Format::Safetensors => {
            let mut shards = Vec::with_capacity(m.files.len());
            for f in &m.files {
                shards.push((PathBuf::from(&f.name), read_cached_safetensors(dir, f)?));
            }
            let config = if m.config {
                Some(read_text(hf::CONFIG)?)
            } else {
                None
            };
            hf_model::build(
                &shards,
                config.as_deref().map(|t| (Path::new(hf::CONFIG), t)),
                &m.source,
                &m.name,
                Vec::new(),
            )
            .map_err(|e| HubError::built(&m.source, e))?
        }
        Format::Gguf => {
            let mut merged: Option<GgufHeader> = None;
            let mut names = std::collections::HashSet::new();
            for f in &m.files {
                let h = read_cached_gguf(dir, f)?;
                for t in &h.tensors {
                    if !names.insert(t.name.clone()) {
                        return Err(HubError::new(
                            HubErrorKind::Invalid,
                            format!("{}: tensor '{}' is also in another part", f.name, t.name),
                        ));
                    }
                }
                match &mut merged {
                    None => merged = Some(h),
                    Some(acc) => {
                        acc.tensors.extend(h.tensors);
                        acc.file_len = acc.file_len.saturating_add(h.file_len);
                    }
                }
            }
            let Some(h) = merged else {
                return Err(HubError::new(
                    HubErrorKind::Cache,
                    "cache: no GGUF header".into(),
                ));
            };
            let mut imp = gguf::to_model(&h, &m.source, &m.name)
                .map_err(|e| HubError::built(&m.source, e))?;
            if m.files.len() > 1 {
                imp.notes
                    .insert(0, format!("split GGUF: read all {} parts", m.files.len()));
            }
            imp
        }
    };
    model.notes.push(match &m.commit {
        Some(c) => format!(
            "read from {} (commit {}): headers only, {} bytes in {} requests",
            m.source,
            c.chars().take(12).collect::<String>(),
            m.bytes_transferred,
            m.requests
        ),
        None => format!(
            "read from {}: headers only, {} bytes in {} requests",
            m.source, m.bytes_transferred, m.requests
        ),
    });
    Ok(model)
}

/// The CLI's model source: `--hf ORG/NAME[@REV]` (with `--hf-file` or the `--weights` quant
/// picker) or `--url`. `None` when neither is given. Environment as [`Options::from_env`].
pub fn import_for_cli(
    hf: Option<&str>,
    hf_file: Option<&str>,
    url: Option<&str>,
    weights: Option<WeightPrecision>,
) -> Result<Option<ImportedModel>, HubError> {
    let req = match (hf, url) {
        (Some(_), Some(_)) => {
            return Err(HubError::bad(
                "--hf and --url cannot be used together".into(),
            ));
        }
        (Some(h), None) => {
            let (repo, revision) = parse_repo(h)?;
            Request::Hub {
                repo,
                revision,
                file: hf_file.map(str::to_string),
                quant: weights.map(quant_tag),
            }
        }
        (None, Some(u)) => {
            if hf_file.is_some() {
                return Err(HubError::bad("--hf-file needs --hf ORG/NAME".into()));
            }
            Request::Url(u.trim().to_string())
        }
        (None, None) => {
            if hf_file.is_some() {
                return Err(HubError::bad("--hf-file needs --hf ORG/NAME".into()));
            }
            return Ok(None);
        }
    };
    let opened = open(&req, &Options::from_env(), &mut |_, _, _| {})?;
    let mut model = opened.model;
    if opened.from_cache {
        let entry = opened
            .cache_entry
            .map(|e| e.display().to_string())
            .unwrap_or_default();
        model.notes.push(format!(
            "answered from the cache ({entry}): no network request this time"
        ));
    }
    Ok(Some(model))
}
