//! Catalog files: the built-in RON catalogs (embedded at compile time) and the user's own.
//!
//! File shape (documented in `catalogs/README.md`): one RON struct per file,
//! `(accelerators: [...], machines: [...], models: [...])`, each list optional. Unknown fields are
//! errors, and so is a model spec that leaves out a size field (it would silently take Llama 3 8B's
//! value from `ModelSpec::default()`). Errors read `file:line:col: what is wrong`.
//!
//! User catalogs are the `*.ron` files in `<config dir>/catalogs` ([`user_dir`]). They merge over the
//! built-ins in file-name order (same id = override); a broken user file is reported and skipped.

use crate::core::catalog::{Accelerator, Catalog, Machine, MemoryKind, ModelPreset, Price};
use crate::core::format::one_line;
use crate::core::precision::{KvTypes, WeightPrecision};
use crate::core::quality::{QualityKind, QualityTable};
use crate::core::speed::bench::Benchmark;
use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The built-in catalog files, embedded at compile time: (name used in messages, text).
pub const BUILTIN_FILES: [(&str, &str); 7] = [
    (
        "catalogs/accelerators.ron",
        include_str!("../../catalogs/accelerators.ron"),
    ),
    (
        "catalogs/machines-laptops.ron",
        include_str!("../../catalogs/machines-laptops.ron"),
    ),
    (
        "catalogs/machines-apple.ron",
        include_str!("../../catalogs/machines-apple.ron"),
    ),
    (
        "catalogs/machines-desktops.ron",
        include_str!("../../catalogs/machines-desktops.ron"),
    ),
    (
        "catalogs/machines-cloud.ron",
        include_str!("../../catalogs/machines-cloud.ron"),
    ),
    (
        "catalogs/models.ron",
        include_str!("../../catalogs/models.ron"),
    ),
    (
        "catalogs/benchmarks.ron",
        include_str!("../../catalogs/benchmarks.ron"),
    ),
];

/// The built-in quality measurements (`catalogs/quality.ron`): what each precision costs.
pub const QUALITY_FILE: (&str, &str) = (
    "catalogs/quality.ron",
    include_str!("../../catalogs/quality.ron"),
);

/// The built-in quality table, parsed once (checked by the test suite: `tests/catalog.rs`).
pub fn quality() -> &'static QualityTable {
    static TABLE: OnceLock<QualityTable> = OnceLock::new();
    TABLE.get_or_init(|| match parse_quality(QUALITY_FILE.0, QUALITY_FILE.1) {
        Ok(t) => t,
        Err(e) => panic!("the built-in quality table is invalid:\n{e}"),
    })
}

/// Parses and validates a quality table: every row names a known precision and a built-in model
/// preset, cites a source, and holds finite figures in their ranges.
pub fn parse_quality(name: &str, text: &str) -> Result<QualityTable, CatalogError> {
    let t: QualityTable = ron_options()
        .from_str(text)
        .map_err(|e| CatalogError::Syntax {
            file: name.into(),
            line: e.span.start.line,
            col: e.span.start.col,
            message: e.code.to_string(),
        })?;
    let msgs = check_quality(&t, builtin());
    if msgs.is_empty() {
        return Ok(t);
    }
    let problems = msgs
        .into_iter()
        .map(|(id, message)| Problem {
            file: name.into(),
            position: text
                .find(&format!("id: \"{id}\""))
                .map(|at| line_col(text, at)),
            message,
        })
        .collect();
    Err(CatalogError::Invalid {
        file: name.into(),
        problems,
    })
}

/// The problems of a quality table, as (row id, message).
pub fn check_quality(t: &QualityTable, cat: &Catalog) -> Vec<(String, String)> {
    let mut errs = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for r in &t.quality {
        let mut e = |m: String| errs.push((r.id.clone(), format!("quality {}: {m}", r.id)));
        if r.id.trim().is_empty() || !seen.insert(r.id.as_str()) {
            e("empty or duplicate id".into());
        }
        let known = match r.kind {
            QualityKind::Weights => WeightPrecision::from_cli(&r.precision).is_some(),
            QualityKind::Kv => KvTypes::parse(&r.precision).is_some(),
        };
        if !known {
            e(format!("unknown precision '{}'", r.precision));
        }
        match (r.no_preset, cat.model(&r.model).is_some()) {
            (false, false) => e(format!(
                "model '{}' is not a catalog preset (set no_preset: true for a model without one)",
                r.model
            )),
            (true, true) => e(format!(
                "model '{}' is a catalog preset, but no_preset is set",
                r.model
            )),
            _ => {}
        }
        for (field, v) in [
            ("source", &r.source),
            ("detail", &r.detail),
            ("model_name", &r.model_name),
            ("baseline", &r.baseline),
            ("dataset", &r.dataset),
        ] {
            if v.trim().is_empty() {
                e(format!("{field} is empty"));
            }
        }
        let finite = |x: Option<f64>| x.is_none_or(f64::is_finite);
        if !(r.params_b.is_finite() && r.params_b > 0.0) || r.context == Some(0) {
            e("params_b and context must be positive".into());
        }
        if r.recovery_pct
            .is_some_and(|p| !(p.is_finite() && p > 0.0 && p <= 200.0))
        {
            e("recovery_pct must be a percentage in (0, 200]".into());
        }
        if r.kld.is_some_and(|k| !(k.is_finite() && k >= 0.0)) || !finite(r.delta_ppl) {
            e("kld must be finite and ≥ 0, delta_ppl finite".into());
        }
        if r.same_top_pct.is_some_and(|p| !(0.0..=100.0).contains(&p))
            || !positive_when_set(r.ppl)
            || !positive_when_set(r.size_gib)
        {
            e("same_top_pct must be 0–100, ppl and size_gib positive".into());
        }
        if r.kld.is_none()
            && r.delta_ppl.is_none()
            && r.same_top_pct.is_none()
            && r.recovery_pct.is_none()
        {
            e("no figure (kld, delta_ppl, same_top_pct or recovery_pct)".into());
        }
    }
    errs
}

/// Spec fields a model entry must write: left out, they would take Llama 3 8B's values.
pub const REQUIRED_SPEC_FIELDS: [&str; 8] = [
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "head_dim",
    "intermediate",
    "vocab",
    "max_context",
];

/// One problem found in a file, at a position when it is known.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub file: String,
    /// 1-based line and column of the entry (or field) the problem is about.
    pub position: Option<(usize, usize)>,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some((line, col)) => {
                write!(f, "{}:{line}:{col}: {}", self.file, one_line(&self.message))
            }
            None => write!(f, "{}: {}", self.file, one_line(&self.message)),
        }
    }
}

/// What went wrong with a catalog file. Messages are written for users.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CatalogError {
    #[error("{file}: cannot read the file: {}", one_line(.message))]
    Read { file: String, message: String },
    /// Not valid RON, or not the catalog's shape (wrong type, unknown field, bad size string).
    #[error("{file}:{line}:{col}: {}", one_line(.message))]
    Syntax {
        file: String,
        line: usize,
        col: usize,
        message: String,
    },
    /// The file parses, but entries are invalid (duplicate ids, missing references, bad values).
    #[error("{}", render_problems(.problems))]
    Invalid {
        file: String,
        problems: Vec<Problem>,
    },
}

fn render_problems(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(Problem::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The shape of one catalog file.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
struct CatalogFile {
    accelerators: Vec<Accelerator>,
    machines: Vec<Machine>,
    models: Vec<ModelPreset>,
    benchmarks: Vec<Benchmark>,
}

/// A second, loose reading of the models, to see which spec keys are written (`ModelSpec` fills
/// missing fields from its `Default`, Llama 3 8B).
#[derive(Deserialize)]
struct ShadowFile {
    #[serde(default)]
    models: Vec<ShadowPreset>,
}

#[derive(Deserialize)]
struct ShadowPreset {
    #[serde(default)]
    id: String,
    #[serde(default)]
    spec: Option<ron::Value>,
}

fn ron_options() -> ron::Options {
    // `implicit_some`: optional fields are written plainly (`gpu: "rtx-4090"`); `Some(..)` still works.
    ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
}

/// The built-in catalog, parsed once. The built-in files are checked by the test suite
/// (`tests/catalog.rs`), so this does not fail in a tested build.
pub fn builtin() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| match builtin_checked() {
        Ok(c) => c,
        Err(e) => panic!("the built-in catalog is invalid:\n{e}"),
    })
}

/// Parses and validates the built-in files (all of them together: machines reference
/// accelerators from another file).
pub fn builtin_checked() -> Result<Catalog, CatalogError> {
    let mut all = Catalog::default();
    for (name, text) in BUILTIN_FILES {
        let c = parse_raw(name, text)?;
        all.accelerators.extend(c.accelerators);
        all.machines.extend(c.machines);
        all.models.extend(c.models);
        all.benchmarks.extend(c.benchmarks);
    }
    let msgs = check(&all);
    if msgs.is_empty() {
        Ok(all)
    } else {
        Err(CatalogError::Invalid {
            file: "catalogs".into(),
            problems: locate(&BUILTIN_FILES, &msgs),
        })
    }
}

/// Parses one catalog file and validates it. References (a machine's `gpu`) may point at the file's
/// own accelerators or at built-in ones.
pub fn parse_file(file_name: &str, text: &str) -> Result<Catalog, CatalogError> {
    parse_against(file_name, text, builtin())
}

/// The folder of the user's catalogs: `<platform config dir>/catalogs`.
pub fn user_dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "headroom").map(|d| d.config_dir().join("catalogs"))
}

/// [`load`] with the platform's user folder.
pub fn load_default() -> (Catalog, Vec<String>) {
    load(user_dir().as_deref())
}

/// The built-in catalog with the user's `*.ron` files merged over it (file-name order; same id
/// replaces). Each broken file gives one warning and is skipped; the rest still load. A missing
/// folder is not an error.
pub fn load(user_dir: Option<&Path>) -> (Catalog, Vec<String>) {
    let mut cat = builtin().clone();
    let mut warnings = Vec::new();
    let Some(dir) = user_dir else {
        return (cat, warnings);
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (cat, warnings),
        Err(e) => {
            warnings.push(format!(
                "{}: cannot list the user catalog folder: {e}",
                dir.display()
            ));
            return (cat, warnings);
        }
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x.eq_ignore_ascii_case("ron")))
        .collect();
    files.sort();
    for path in files {
        match load_one(&path, &cat) {
            Ok(merged) => cat = merged,
            Err(e) => warnings.push(format!(
                "{e}\n(skipped {}; the built-in catalog and the other files still load)",
                path.display()
            )),
        }
    }
    (cat, warnings)
}

fn load_one(path: &Path, base: &Catalog) -> Result<Catalog, CatalogError> {
    let name = path.display().to_string();
    let text =
        crate::io::read_text_limited(path, crate::io::limits::CATALOG_FILE).map_err(|e| {
            CatalogError::Read {
                file: name.clone(),
                message: e.to_string(),
            }
        })?;
    let file_cat = parse_against(&name, &text, base)?;
    let mut merged = base.clone();
    merged.merge(file_cat);
    let msgs = check(&merged);
    if msgs.is_empty() {
        Ok(merged)
    } else {
        Err(CatalogError::Invalid {
            problems: locate(&[(name.as_str(), text.as_str())], &msgs),
            file: name,
        })
    }
}

fn parse_against(name: &str, text: &str, base: &Catalog) -> Result<Catalog, CatalogError> {
    let cat = parse_raw(name, text)?;
    // Validate the file's own entries; references may resolve to the base's accelerators.
    let mut ctx = cat.clone();
    for a in &base.accelerators {
        if ctx.accelerator(&a.id).is_none() {
            ctx.accelerators.push(a.clone());
        }
    }
    // Benchmarks may name the base's machines and models.
    if !cat.benchmarks.is_empty() {
        for m in &base.machines {
            if ctx.machine(&m.id).is_none() {
                ctx.machines.push(m.clone());
            }
        }
        for p in &base.models {
            if ctx.model(&p.id).is_none() {
                ctx.models.push(p.clone());
            }
        }
    }
    let msgs = check(&ctx);
    if msgs.is_empty() {
        Ok(cat)
    } else {
        Err(CatalogError::Invalid {
            file: name.into(),
            problems: locate(&[(name, text)], &msgs),
        })
    }
}

/// RON text → catalog, without cross-entry validation.
fn parse_raw(name: &str, text: &str) -> Result<Catalog, CatalogError> {
    let opts = ron_options();
    let file: CatalogFile = opts.from_str(text).map_err(|e| CatalogError::Syntax {
        file: name.into(),
        line: e.span.start.line,
        col: e.span.start.col,
        message: e.code.to_string(),
    })?;
    let problems = spec_key_problems(name, text, &opts);
    if !problems.is_empty() {
        return Err(CatalogError::Invalid {
            file: name.into(),
            problems,
        });
    }
    Ok(Catalog {
        accelerators: file.accelerators,
        machines: file.machines,
        models: file.models,
        benchmarks: file.benchmarks,
        accelerator_index: Default::default(),
    })
}

/// Size fields the models in `text` leave out, with positions. (Unknown fields are already
/// rejected by serde: `ModelSpec` denies them.)
fn spec_key_problems(name: &str, text: &str, opts: &ron::Options) -> Vec<Problem> {
    let Ok(shadow) = opts.from_str::<ShadowFile>(text) else {
        return Vec::new(); // the typed reading succeeded; nothing more to learn here
    };
    let mut out = Vec::new();
    for p in &shadow.models {
        let Some(spec) = &p.spec else { continue };
        let entry_at = find_entry(text, Section::Models, &p.id, false);
        let present = map_keys(spec);
        let missing: Vec<&str> = REQUIRED_SPEC_FIELDS
            .iter()
            .copied()
            .filter(|k| !present.iter().any(|p| p == k))
            .collect();
        if !missing.is_empty() {
            out.push(Problem {
                file: name.into(),
                position: entry_at.map(|a| line_col(text, a)),
                message: format!(
                    "model '{}': spec is missing {} (left out, they would silently take Llama 3 8B's values)",
                    p.id,
                    missing.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ")
                ),
            });
        }
    }
    out
}

/// The map inside a RON value (`(a: 1)`, `Some((a: 1))`), if any.
fn as_map(v: &ron::Value) -> Option<&ron::Map> {
    match v {
        ron::Value::Map(m) => Some(m),
        ron::Value::Option(Some(inner)) => as_map(inner),
        _ => None,
    }
}

fn map_keys(v: &ron::Value) -> Vec<String> {
    as_map(v)
        .map(|m| {
            m.iter()
                .filter_map(|(k, _)| match k {
                    ron::Value::String(s) => Some(s.clone()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Full checks: `Catalog::validate` plus the loader's own (ids, prices, limits, model shapes).
/// Messages start with `accelerator|machine|model '<id>':` like `validate`'s.
pub fn check(cat: &Catalog) -> Vec<String> {
    let mut errs = cat.validate();
    for a in &cat.accelerators {
        check_accelerator(a, &mut errs);
    }
    for m in &cat.machines {
        check_machine(cat, m, &mut errs);
    }
    for p in &cat.models {
        check_model(p, &mut errs);
    }
    errs
}

/// An optional figure is unset, or finite and positive.
fn positive_when_set(x: Option<f64>) -> bool {
    x.is_none_or(|v| v.is_finite() && v > 0.0)
}

/// The id and name every catalog entry needs; `e` prefixes the entry.
fn check_id_and_name(id: &str, name: &str, e: &dyn Fn(&str) -> String, errs: &mut Vec<String>) {
    if id.trim().is_empty() || id.chars().any(char::is_whitespace) {
        errs.push(e("id must be non-empty, without spaces"));
    }
    if name.trim().is_empty() {
        errs.push(e("name is empty"));
    }
}

fn check_accelerator(a: &Accelerator, errs: &mut Vec<String>) {
    let e = |m: &str| format!("accelerator '{}': {m}", a.id);
    check_id_and_name(&a.id, &a.name, &e, errs);
    if !positive_when_set(a.int8_tops)
        || !positive_when_set(a.tdp_w)
        || !positive_when_set(a.gpu_link_gbs)
    {
        errs.push(e(
            "int8_tops, tdp_w and gpu_link_gbs must be positive when set",
        ));
    }
    if let Some(p) = a.pcie
        && (!(1..=6).contains(&p.generation) || p.lanes == 0)
    {
        errs.push(e("pcie must be generation 1-6 with at least one lane"));
    }
}

fn check_machine(cat: &Catalog, m: &Machine, errs: &mut Vec<String>) {
    let e = |msg: &str| format!("machine '{}': {msg}", m.id);
    check_id_and_name(&m.id, &m.name, &e, errs);
    if m.cpu_cores == 0 {
        errs.push(e("cpu_cores must be at least 1"));
    }
    if !positive_when_set(m.power_w) {
        errs.push(e("power_w must be positive when set"));
    }
    if let Some(p) = &m.price {
        let (Price::Hourly {
            region,
            price_date,
            source,
            ..
        }
        | Price::Purchase {
            region,
            price_date,
            source,
            ..
        }) = p;
        for (v, n) in [
            (region, "region"),
            (price_date, "price_date"),
            (source, "source"),
        ] {
            if v.trim().is_empty() {
                errs.push(e(&format!("price {n} is empty")));
            }
        }
    }
    if let Some(limit) = m.gpu_memory_limit {
        let unified = m
            .gpu
            .as_deref()
            .and_then(|g| cat.accelerator(g))
            .is_some_and(|a| a.memory_kind == MemoryKind::Unified);
        if !unified {
            errs.push(e(
                "gpu_memory_limit applies only to machines with a unified-memory accelerator",
            ));
        }
        if limit.0 == 0 || limit > m.ram {
            errs.push(e(
                "gpu_memory_limit must be positive and at most the machine's ram",
            ));
        }
    }
}

fn check_model(p: &ModelPreset, errs: &mut Vec<String>) {
    let e = |msg: &str| format!("model '{}': {msg}", p.id);
    if p.id.trim().is_empty()
        || p.id.chars().any(char::is_whitespace)
        || p.id != p.id.to_ascii_lowercase()
    {
        errs.push(e(
            "id must be lowercase, without spaces (lookups lowercase the query)",
        ));
    }
    if p.published_params == Some(0) {
        errs.push(e("published_params must be positive when set"));
    }
    let s = &p.spec;
    if s.max_context == 0 {
        errs.push(e("max_context must be positive"));
    }
    if let Some(moe) = &s.moe
        && (moe.experts == 0
            || moe.active_experts == 0
            || moe.active_experts > moe.experts
            || moe.expert_ffn == 0)
    {
        errs.push(e(
            "moe needs experts >= active_experts >= 1 and a positive expert_ffn",
        ));
    }
    if let Some(w) = &s.sliding
        && (w.window == 0 || w.local_layers > s.layers)
    {
        errs.push(e(
            "sliding needs a positive window and local_layers <= layers",
        ));
    }
    if let Some(mla) = &s.mla
        && (mla.kv_lora_rank == 0 || mla.qk_rope_head_dim == 0 || mla.v_head_dim == 0)
    {
        errs.push(e(
            "mla needs positive kv_lora_rank, qk_rope_head_dim and v_head_dim",
        ));
    }
    if s.kv_shared_layers >= s.layers && s.kv_shared_layers > 0 {
        errs.push(e(
            "kv_shared_layers must be below layers (some layer has to keep the cache)",
        ));
    }
    if let Some(g) = &s.gemma3n
        && (g.ple_dim == 0 || g.ple_vocab == 0 || g.altup_inputs == 0 || g.laurel_rank == 0)
    {
        errs.push(e(
            "gemma3n needs positive ple_dim, ple_vocab, altup_inputs and laurel_rank",
        ));
    }
}

#[derive(Copy, Clone, PartialEq, Debug)]
enum Section {
    Accelerators,
    Machines,
    Models,
}

impl Section {
    fn key(self) -> &'static str {
        match self {
            Section::Accelerators => "accelerators",
            Section::Machines => "machines",
            Section::Models => "models",
        }
    }
}

/// Attaches file and position to `validate`-style messages (`kind 'id': ...`).
fn locate(files: &[(&str, &str)], msgs: &[String]) -> Vec<Problem> {
    msgs.iter()
        .map(|msg| {
            let found = parse_subject(msg).and_then(|(section, id)| {
                let last = msg.ends_with("duplicate id");
                let mut hit = None;
                for (name, text) in files {
                    if let Some(at) = find_entry(text, section, id, last) {
                        hit = Some((*name, line_col(text, at)));
                        if !last {
                            break;
                        }
                    }
                }
                hit
            });
            match found {
                Some((file, pos)) => Problem {
                    file: file.into(),
                    position: Some(pos),
                    message: msg.clone(),
                },
                None => Problem {
                    file: files.first().map(|f| f.0).unwrap_or_default().into(),
                    position: None,
                    message: msg.clone(),
                },
            }
        })
        .collect()
}

/// `"machine 'x': ..."` → (Machines, "x").
fn parse_subject(msg: &str) -> Option<(Section, &str)> {
    let (kind, rest) = msg.split_once(" '")?;
    let (id, _) = rest.split_once("':")?;
    let section = match kind {
        "accelerator" => Section::Accelerators,
        "machine" => Section::Machines,
        "model" => Section::Models,
        _ => return None,
    };
    Some((section, id))
}

/// Byte range of a top-level section (`machines: [ ... ]`) in a file, or the whole text.
fn section_range(text: &str, section: Section) -> (usize, usize) {
    let starts: Vec<(Section, usize)> = [Section::Accelerators, Section::Machines, Section::Models]
        .into_iter()
        .filter_map(|s| find_key(text, 0, s.key()).map(|at| (s, at)))
        .collect();
    match starts.iter().find(|(s, _)| *s == section) {
        Some(&(_, start)) => {
            let end = starts
                .iter()
                .map(|&(_, at)| at)
                .filter(|&at| at > start)
                .min()
                .unwrap_or(text.len());
            (start, end)
        }
        None => (0, text.len()),
    }
}

/// Offset of `id: "<id>"` in `section` (the last one when `last`).
fn find_entry(text: &str, section: Section, id: &str, last: bool) -> Option<usize> {
    let (lo, hi) = section_range(text, section);
    let needle = format!("\"{id}\"");
    let mut hits = Vec::new();
    let mut from = lo;
    while let Some(p) = text[from..hi].find(&needle) {
        let at = from + p;
        if let Some(b) = text[..at].trim_end().strip_suffix(':')
            && let Some(b) = b.trim_end().strip_suffix("id")
            && !b.ends_with(|c: char| c.is_alphanumeric() || c == '_')
        {
            // Point at the `id` key.
            hits.push(b.len());
        }
        from = at + needle.len();
    }
    if last {
        hits.last().copied()
    } else {
        hits.first().copied()
    }
}

/// Offset of the field `key` (an identifier followed by `:`) at or after `from`.
fn find_key(text: &str, from: usize, key: &str) -> Option<usize> {
    let mut i = from;
    while let Some(p) = text.get(i..)?.find(key) {
        let at = i + p;
        let before_ok =
            !text[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '"');
        let after = text[at + key.len()..].trim_start();
        if before_ok && after.starts_with(':') {
            return Some(at);
        }
        i = at + key.len();
    }
    None
}

/// 1-based line and column (in characters) of a byte offset.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse_and_validate() {
        let cat = builtin_checked().unwrap_or_else(|e| panic!("{e}"));
        assert!(cat.accelerators.len() >= 40);
        assert!(cat.machines.len() >= 120);
        assert!(cat.models.len() >= 30);
    }

    #[test]
    fn syntax_error_has_position() {
        let err = parse_raw("x.ron", "(\n  machines: [\n    (id: \"a\",, )\n  ],\n)").unwrap_err();
        let CatalogError::Syntax { line, .. } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(*line, 3, "{err}");
        assert!(err.to_string().starts_with("x.ron:3:"), "{err}");
    }

    #[test]
    fn locates_entries_by_id() {
        let text = "(\n accelerators: [\n  (id: \"a\"),\n ],\n machines: [\n  (id: \"a\"),\n  (id: \"b\"),\n ],\n)";
        let at = find_entry(text, Section::Machines, "a", false).unwrap();
        assert_eq!(line_col(text, at), (6, 4));
        let at = find_entry(text, Section::Accelerators, "a", false).unwrap();
        assert_eq!(line_col(text, at), (3, 4));
        assert!(find_entry(text, Section::Models, "zzz", false).is_none());
        assert_eq!(
            parse_subject("machine 'b': ram must be positive"),
            Some((Section::Machines, "b"))
        );
    }

    #[test]
    fn unknown_and_missing_spec_fields() {
        let text = r#"(models: [(id: "m", name: "M", family: "F", source: "s",
            spec: (layers: 2, hidden: 8, heads: 2, kv_heads: 2, head_dim: 4, intermediate: 8,
                   vocab: 10, max_context: 16, rotary: 3))])"#;
        let err = parse_raw("m.ron", text).unwrap_err().to_string();
        assert!(
            err.starts_with("m.ron:3:") && err.contains("rotary"),
            "{err}"
        );
        let text =
            r#"(models: [(id: "m", name: "M", family: "F", source: "s", spec: (layers: 2))])"#;
        let err = parse_raw("m.ron", text).unwrap_err().to_string();
        assert!(err.contains("spec is missing `hidden`"), "{err}");
        assert!(err.starts_with("m.ron:1:12: model 'm'"), "{err}");
    }
}
