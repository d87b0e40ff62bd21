//! The report's machine section: totals, per-machine fit rows, the recommendation table, the
//! speed-model settings and the per-kind split the chart draws.

use super::report::ReportInput;
use super::text::{duration, gib_exact, rate, usd};
use crate::core::catalog::{MemoryKind, Price};
use crate::core::estimate::{ComponentKind, Estimate, Placement};
use crate::core::fit::{FitResult, Verdict};
use crate::core::recommend::Recommendations;
use crate::core::scenario::Mode;
use crate::core::units::display_signed_gib;

/// "GPU", "host RAM".
pub(crate) fn placement_label(p: Placement) -> &'static str {
    match p {
        Placement::Gpu => "per GPU",
        Placement::Host => "host RAM",
    }
}

/// The totals rows: (label, bytes).
pub(crate) fn totals(input: &ReportInput) -> Vec<(String, String)> {
    let e = input.estimate;
    let mut v = Vec::new();
    if e.gpus > 0 {
        let n = e.gpus;
        v.push((
            if n > 1 {
                format!("Each of the {n} GPUs")
            } else {
                "The GPU".into()
            },
            gib_exact(e.per_gpu_total()),
        ));
        v.push((
            "Model states per GPU (weights, gradients, optimizer, master)".into(),
            gib_exact(e.per_gpu_model_states()),
        ));
    }
    v.push(("Host RAM".into(), gib_exact(e.host_total())));
    v.push(("Everything, all devices".into(), gib_exact(e.total())));
    if !input.scenario.mode.is_training() {
        v.push((
            "KV cache per token (one sequence)".into(),
            gib_exact(e.kv_cache_per_token),
        ));
    }
    v
}

/// The recommendation table: (kind, question, machine, price, verdict, tok/s, reason) per
/// pick, plain text.
pub(crate) const RECOMMEND_COLUMNS: [&str; 7] = [
    "Kind", "Pick", "Machine", "Price", "Verdict", "Tokens/s", "Why",
];

pub(crate) fn recommend_rows(r: &Recommendations) -> Vec<[String; 7]> {
    let mut rows = Vec::new();
    for g in &r.groups {
        for p in &g.picks {
            rows.push([
                g.group.label().to_string(),
                p.role.label().to_string(),
                p.name.clone(),
                p.price_text(),
                p.verdict_text.clone(),
                crate::core::format::rate_coarse(p.tokens_per_s),
                p.reason.to_string(),
            ]);
        }
    }
    rows
}

/// The lines under the table: what no machine satisfies, per kind ("Laptop: nothing fits …").
pub(crate) fn recommend_unmet(r: &Recommendations) -> Vec<String> {
    r.groups
        .iter()
        .flat_map(|g| {
            g.unmet
                .iter()
                .map(move |u| format!("{}: {u}", g.group.label()))
        })
        .collect()
}

/// The fit table's columns for the scenario's mode.
pub(crate) fn fit_columns(mode: Mode) -> Vec<&'static str> {
    let training = mode.is_training();
    let mut c = vec![
        "Machine",
        "Hardware",
        "Verdict",
        "GPU need / usable",
        "RAM need / usable",
        "Headroom",
    ];
    if training {
        c.extend(["Step time", "Tokens/s", "Run time", "Run cost"]);
    } else if mode.is_embed() {
        c.extend([
            "Sequences/s",
            "Input tok/s",
            "Batch time",
            "$ / 1M input tokens",
        ]);
    } else {
        c.extend(["Decode tok/s", "Prefill tok/s", "TTFT", "$ / 1M tokens"]);
    }
    c
}

/// "1 × RTX 4090 (24.0 GiB, 1008 GB/s), 64.0 GiB RAM, $1.99/h".
pub(crate) fn hardware(input: &ReportInput, f: &FitResult) -> String {
    let Some(m) = input.catalog.machine(&f.machine) else {
        return if f.gpus > 1 {
            format!(
                "{} GPUs, {} usable VRAM each, {} usable RAM",
                f.gpus,
                f.gpu_capacity.display_gib(),
                f.ram_capacity.display_gib()
            )
        } else if f.gpus == 1 {
            format!(
                "1 GPU, {} usable VRAM, {} usable RAM",
                f.gpu_capacity.display_gib(),
                f.ram_capacity.display_gib()
            )
        } else {
            format!("CPU only, {} usable RAM", f.ram_capacity.display_gib())
        };
    };
    let mut s = match m.gpu.as_deref().and_then(|g| input.catalog.accelerator(g)) {
        Some(a) if a.memory_kind == MemoryKind::Unified => format!(
            "{} ({} unified, {})",
            a.name,
            m.ram.display_gib(),
            a.bandwidth
        ),
        Some(a) => format!(
            "{} × {} ({}, {}), {} RAM",
            m.gpu_count,
            a.name,
            a.memory.display_gib(),
            a.bandwidth,
            m.ram.display_gib()
        ),
        None => format!(
            "{} ({} cores), {} RAM ({})",
            m.cpu,
            m.cpu_cores,
            m.ram.display_gib(),
            m.ram_bandwidth
        ),
    };
    match &m.price {
        Some(Price::Hourly { usd, .. }) => s.push_str(&format!(
            ", {}",
            crate::core::format::usd_per_hour(Some(*usd))
        )),
        Some(Price::Purchase { usd, .. }) => s.push_str(&format!(
            ", {} to buy",
            crate::core::format::usd_whole(Some(*usd))
        )),
        None => {}
    }
    s
}

/// One fit-table row, plain text.
pub(crate) fn fit_row(input: &ReportInput, f: &FitResult, mode: Mode) -> Vec<String> {
    let training = mode.is_training();
    let gpu = if f.gpus > 0 && f.gpu_capacity.0 > 0 {
        format!(
            "{} / {}",
            f.gpu_required.display_gib(),
            f.gpu_capacity.display_gib()
        )
    } else {
        crate::core::format::MISSING.into()
    };
    // A machine that does not fit may not have sized its RAM side: say so rather than "0 B".
    let ram_need = if f.verdict == Verdict::None && f.ram_required.0 == 0 {
        crate::core::format::MISSING.to_string()
    } else {
        f.ram_required.display_gib()
    };
    let ram = format!("{ram_need} / {}", f.ram_capacity.display_gib());
    let mut r = vec![
        f.name.to_string(),
        hardware(input, f),
        f.verdict_text(),
        gpu,
        ram,
        display_signed_gib(f.headroom_bytes),
    ];
    if training {
        match &f.training {
            Some(t) => r.extend([
                duration(t.step_seconds),
                rate(t.tokens_per_s),
                duration(t.run_hours * 3600.0),
                usd(t.run_usd),
            ]),
            None => r.extend([
                crate::core::format::MISSING.into(),
                crate::core::format::MISSING.into(),
                crate::core::format::MISSING.into(),
                crate::core::format::MISSING.into(),
            ]),
        }
    } else if let Some(e) = f.embedding.as_ref().filter(|_| f.runs()) {
        r.extend([
            rate(e.sequences_per_s),
            rate(e.tokens_per_s),
            duration(e.batch_s),
            usd(f.usd_per_million_tokens),
        ]);
    } else if mode.is_embed() {
        r.extend([
            crate::core::format::MISSING.into(),
            crate::core::format::MISSING.into(),
            crate::core::format::MISSING.into(),
            crate::core::format::MISSING.into(),
        ]);
    } else {
        r.extend([
            rate(f.decode_tokens_per_s),
            rate(f.prefill_tokens_per_s),
            duration(f.ttft_s),
            usd(f.usd_per_million_tokens),
        ]);
    }
    r
}

/// Per-GPU and host bytes of each component kind, for the chart: (kind, per GPU, host).
pub(crate) fn kind_split(e: &Estimate) -> Vec<(ComponentKind, u64, u64)> {
    ComponentKind::ALL
        .iter()
        .map(|&k| (k, e.per_gpu_kind(k).0, e.host_kind(k).0))
        .collect()
}
