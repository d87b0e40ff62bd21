//! `headroom catalog list | models | validate FILE`: text in, text out (the clap grammar is in
//! `cli::args`).

use crate::core::catalog::{Catalog, Machine, MachineKind, MemoryKind, Price, Vendor};
use crate::core::format;
use crate::core::units::Bytes;
use std::path::Path;

/// Values `--kind` accepts. `apple` matches every machine with an Apple accelerator (MacBooks
/// included); `desktop` includes workstations.
pub const KIND_FILTERS: [&str; 7] = [
    "all",
    "laptop",
    "apple",
    "desktop",
    "workstation",
    "cloud",
    "mini-pc",
];

/// Whether machine `m` passes the `--kind` filter `kind` (case-insensitive).
pub fn matches_kind(cat: &Catalog, m: &Machine, kind: &str) -> Result<bool, String> {
    let apple_gpu = m
        .gpu
        .as_deref()
        .and_then(|g| cat.accelerator(g))
        .is_some_and(|a| a.vendor == Vendor::Apple);
    Ok(match kind.trim().to_ascii_lowercase().as_str() {
        "all" | "" => true,
        "laptop" | "laptops" => m.kind == MachineKind::Laptop,
        "apple" | "mac" => m.kind == MachineKind::Apple || apple_gpu,
        "desktop" | "desktops" => matches!(m.kind, MachineKind::Desktop | MachineKind::Workstation),
        "workstation" | "workstations" => m.kind == MachineKind::Workstation,
        "cloud" => m.kind == MachineKind::Cloud,
        "mini-pc" | "minipc" | "mini_pc" => m.kind == MachineKind::MiniPc,
        other => {
            return Err(format!(
                "unknown kind '{other}': use one of {}",
                KIND_FILTERS.join(", ")
            ));
        }
    })
}

/// The machines that pass the filter, in catalog order.
pub fn filter_machines<'a>(
    cat: &'a Catalog,
    kind: Option<&str>,
) -> Result<Vec<&'a Machine>, String> {
    let mut out = Vec::new();
    for m in &cat.machines {
        if kind.map_or(Ok(true), |k| matches_kind(cat, m, k))? {
            out.push(m);
        }
    }
    Ok(out)
}

/// `catalog list`: a table (id, name, kind, GPU × count, VRAM, RAM, price) or, with `json`, a JSON
/// array of the machine objects ([`crate::io::json::machine_json`]). An unknown kind gives the
/// error text instead.
pub fn list(cat: &Catalog, kind: Option<&str>, json: bool) -> String {
    try_list(cat, kind, json).unwrap_or_else(|e| e)
}

/// [`list`], with an unknown kind as an error.
pub fn try_list(cat: &Catalog, kind: Option<&str>, json: bool) -> Result<String, String> {
    let machines = filter_machines(cat, kind)?;
    if json {
        let v: Vec<serde_json::Value> = machines
            .iter()
            .map(|m| crate::io::json::machine_json(cat, m))
            .collect();
        return serde_json::to_string_pretty(&v)
            .map(|s| s + "\n")
            .map_err(|e| format!("cannot write JSON: {e}"));
    }
    if machines.is_empty() {
        return Ok("no machines match\n".into());
    }
    let header = ["ID", "NAME", "KIND", "GPU", "VRAM", "RAM", "PRICE"].map(String::from);
    let rows: Vec<[String; 7]> = machines.iter().map(|m| row(cat, m)).collect();
    // Sizes and prices are right-aligned.
    let mut out = aligned_table(&header, &rows, 4);
    out.push_str(&format!(
        "{} machines (memory in GiB; VRAM = total over all GPUs)\n",
        rows.len()
    ));
    Ok(out)
}

fn row(cat: &Catalog, m: &Machine) -> [String; 7] {
    let acc = m.gpu.as_deref().and_then(|g| cat.accelerator(g));
    let gpu = match (&m.gpu, acc) {
        (None, _) => "CPU only".to_string(),
        (Some(_), Some(a)) if m.gpu_count > 1 => format!("{} × {}", a.name, m.gpu_count),
        (Some(_), Some(a)) => a.name.clone(),
        (Some(id), None) => format!("{id} (unknown)"),
    };
    let vram = match acc {
        None => format::MISSING.to_string(),
        Some(a) if a.memory_kind == MemoryKind::Unified => match m.gpu_memory_limit {
            Some(l) => format!("unified ≤ {}", l.display_gib()),
            None => "unified".to_string(),
        },
        Some(a) => a
            .memory
            .saturating_mul(u64::from(m.gpu_count))
            .display_gib(),
    };
    [
        m.id.to_string(),
        m.name.to_string(),
        m.kind.label().to_string(),
        gpu,
        vram,
        Bytes::display_gib(m.ram),
        m.price
            .as_ref()
            .map(price_str)
            .unwrap_or_else(|| format::MISSING.into()),
    ]
}

/// "$55.04/h" for cloud prices, "$1,999" for purchases ([`crate::core::format`]).
pub fn price_str(p: &Price) -> String {
    match p {
        Price::Hourly { usd, .. } => format::usd_per_hour(Some(*usd)),
        Price::Purchase { usd, .. } => format::usd_whole(Some(*usd)),
    }
}

/// `catalog models`: the presets `--model` accepts, as a table (id, name, parameters, layers,
/// context) or, with `json`, a JSON array ([`crate::io::json::model_json`]).
pub fn models(cat: &Catalog, json: bool) -> String {
    if json {
        let v: Vec<serde_json::Value> =
            cat.models.iter().map(crate::io::json::model_json).collect();
        let mut s =
            serde_json::to_string_pretty(&v).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        s.push('\n');
        return s;
    }
    let header = ["ID", "NAME", "PARAMS", "ACTIVE", "LAYERS", "CONTEXT"].map(String::from);
    let rows: Vec<[String; 6]> = cat
        .models
        .iter()
        .map(|p| {
            let pc = p.spec.param_count();
            [
                p.id.clone(),
                p.name.clone(),
                format::params(pc.total),
                format::params(pc.active),
                p.spec.layers.to_string(),
                format::tokens_short(p.spec.max_context),
            ]
        })
        .collect();
    // Numbers are right-aligned.
    let mut out = aligned_table(&header, &rows, 2);
    out.push_str(&format!(
        "{} presets (use the id with --model)\n",
        rows.len()
    ));
    out
}

/// Columns padded to their widest cell, two spaces apart; columns from `right_from` on are
/// right-aligned.
fn aligned_table<const N: usize>(
    header: &[String; N],
    rows: &[[String; N]],
    right_from: usize,
) -> String {
    let mut width = [0usize; N];
    for r in std::iter::once(header).chain(rows) {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in std::iter::once(header).chain(rows) {
        let mut line = String::new();
        for (i, (c, w)) in r.iter().zip(width).enumerate() {
            let pad = " ".repeat(w - c.chars().count());
            if i >= right_from {
                line.push_str(&pad);
                line.push_str(c);
            } else {
                line.push_str(c);
                line.push_str(&pad);
            }
            line.push_str("  ");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// `catalog validate FILE`: Ok = "FILE: N accelerators, M machines, K models, valid"; Err = the
/// problems, one per line, each naming the file and position or entry.
pub fn validate_file(path: &Path) -> Result<String, String> {
    let name = path.display().to_string();
    let text = crate::io::read_text_limited(path, crate::io::limits::CATALOG_FILE)
        .map_err(|e| format!("{name}: cannot read the file: {e}"))?;
    let cat = crate::io::catalog::parse_file(&name, &text).map_err(|e| e.to_string())?;
    Ok(format!(
        "{name}: {} accelerators, {} machines, {} models, valid",
        cat.accelerators.len(),
        cat.machines.len(),
        cat.models.len()
    ))
}
