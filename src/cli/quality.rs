//! `headroom quality`: every weight precision with its size, its published quality (KLD, ΔPPL,
//! top-token agreement; measured or carried over) and, on a machine, whether it fits and the
//! best-quality one that does (`core::fit::solve_best_quality`).

use super::app::CliError;
use super::args::ScenarioArgs;
use super::scenario::build_scenario;
use crate::core::catalog::{Catalog, Machine};
use crate::core::estimate::{ComponentKind, estimate};
use crate::core::fit::{Verdict, fit_all, solve_best_quality};
use crate::core::format;
use crate::core::precision::WeightPrecision;
use crate::core::quality::{Quality, QualityTable, level_of};
use crate::core::scenario::Scenario;
use clap::Args;
use serde_json::{Value, json};

#[derive(Args, Debug)]
#[command(allow_negative_numbers = true)]
pub struct QualityArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// A machine id (`local` = this machine): which precisions fit on its GPU(s), and the
    /// best-quality one that does at this context and KV cache.
    #[arg(long = "machine", value_name = "ID")]
    pub machine: Option<String>,
    /// A quality floor: the largest mean KL divergence accepted (a number such as 0.05, or
    /// lossless, near, good, usable); precisions past it are marked and never picked.
    #[arg(long, value_name = "KLD|LEVEL", value_parser = crate::core::quality::parse_max_kld)]
    pub max_kld: Option<f64>,
    /// Print JSON: {"model", "kv", "context", "machine", "max_kld", "precisions": [...],
    /// "best": ...} (sizes in bytes).
    #[arg(long)]
    pub json: bool,
}

/// One precision's line of the answer.
struct Line<'a> {
    p: WeightPrecision,
    weights: u64,
    total: u64,
    q: Quality<'a>,
    verdict: Option<Verdict>,
}

/// Runs `headroom quality`.
pub fn run(a: &QualityArgs, cat: &mut Catalog) -> Result<String, CliError> {
    let s = build_scenario(&a.scenario, cat)?;
    let machine: Option<Machine> = match &a.machine {
        Some(id) => Some(
            super::fit::select_machines(cat, std::slice::from_ref(id), None)?
                .into_iter()
                .next()
                .ok_or_else(|| CliError::usage(format!("--machine {id}: no such machine")))?,
        ),
        None => None,
    };
    let st = super::scenario::fit_settings(&a.scenario, None);
    let table = crate::io::catalog::quality();
    let lines = lines(&s, machine.as_ref(), cat, &st, table);
    let best = machine
        .as_ref()
        .and_then(|m| solve_best_quality(&s, m, cat, &st, table, a.max_kld));
    let best_any = match (&machine, a.max_kld) {
        (Some(m), Some(_)) => solve_best_quality(&s, m, cat, &st, table, None),
        _ => None,
    };
    if a.json {
        return Ok(super::app::json_text(&to_json(
            &s,
            machine.as_ref(),
            a.max_kld,
            &lines,
            best,
        )));
    }
    Ok(text(
        &s,
        machine.as_ref(),
        a.max_kld,
        &lines,
        best,
        best_any,
    ))
}

fn lines<'a>(
    s: &Scenario,
    m: Option<&Machine>,
    cat: &Catalog,
    st: &crate::core::fit::FitSettings,
    table: &'a QualityTable,
) -> Vec<Line<'a>> {
    WeightPrecision::ALL
        .into_iter()
        .map(|p| {
            let sp = Scenario {
                weights: p,
                ..s.clone()
            };
            let e = estimate(&sp);
            let verdict = m.and_then(|m| fit_all(&sp, [m], cat, st).first().map(|r| r.verdict));
            Line {
                p,
                weights: e.kind_total(ComponentKind::Weights).0,
                total: e.total().0,
                q: table.of_weights(&sp),
                verdict,
            }
        })
        .collect()
}

fn text(
    s: &Scenario,
    m: Option<&Machine>,
    max_kld: Option<f64>,
    lines: &[Line],
    best: Option<(WeightPrecision, f64)>,
    best_any: Option<(WeightPrecision, f64)>,
) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} · KV {} · context {}{}",
        s.model.name,
        s.kv.cli_name(),
        format::group_digits(s.context),
        m.map(|m| format!(" · on {}", m.name)).unwrap_or_default()
    );
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "{:<28}  {:>10}  {:>10}  {:<8}  {:<9}  quality",
        "precision", "weights", "total", "level", "fits"
    );
    for l in lines {
        let level = match l.q.kld() {
            Some(k) => level_of(k).map_or("past", |lv| lv.name),
            None => format::MISSING,
        };
        let past = max_kld.is_some() && !l.q.within(max_kld);
        let _ = writeln!(
            o,
            "{:<28}  {:>10}  {:>10}  {:<8}  {:<9}  {}{}",
            l.p.label(),
            format::bytes(crate::core::units::Bytes(l.weights)),
            format::bytes(crate::core::units::Bytes(l.total)),
            level,
            l.verdict.map_or(format::MISSING, |v| v.label()),
            l.q.short(),
            if past { " · past the floor" } else { "" }
        );
    }
    let _ = writeln!(o);
    if let Some(m) = m {
        let floor = max_kld.map(|k| format!(" within KLD {}", format::sig3(k)));
        match best {
            Some((p, k)) => {
                let _ = writeln!(
                    o,
                    "best quality that fits {} on the GPU{}: {} (KLD {})",
                    m.name,
                    floor.clone().unwrap_or_default(),
                    p.label(),
                    format::sig3(k)
                );
            }
            None => {
                let _ = writeln!(
                    o,
                    "no measured precision{} fits {} on the GPU at this context",
                    floor.clone().unwrap_or_default(),
                    m.name
                );
            }
        }
        if let (None, Some((p, k))) = (best, best_any) {
            let _ = writeln!(
                o,
                "note: fitting needs a precision past the floor: {} (KLD {})",
                p.label(),
                format::sig3(k)
            );
        }
    }
    let _ = writeln!(
        o,
        "KLD: mean KL divergence to the 16-bit model (catalogs/quality.ron); \"% of BF16 on …\": a benchmark score as published, and \"ΔPPL … on …\": a perplexity difference on that text, neither a KLD (never within a --max-kld floor, not ranked); \"carried over\": measured on another model (the rule is in docs/quality.md)."
    );
    o
}

fn to_json(
    s: &Scenario,
    m: Option<&Machine>,
    max_kld: Option<f64>,
    lines: &[Line],
    best: Option<(WeightPrecision, f64)>,
) -> Value {
    let precisions: Vec<Value> = lines
        .iter()
        .map(|l| {
            json!({
                "precision": l.p.cli_name(),
                "label": l.p.label(),
                "weights_bytes": l.weights,
                "total_bytes": l.total,
                "verdict": l.verdict.map(|v| v.json_name()),
                "within_max_kld": max_kld.map(|_| l.q.within(max_kld)),
                "quality": crate::io::json::quality_json(l.p.cli_name(), &l.q),
            })
        })
        .collect();
    json!({
        "model": s.model.name,
        "kv": s.kv.cli_name(),
        "context": s.context,
        "machine": m.map(|m| m.id.to_string()),
        "max_kld": max_kld,
        "precisions": precisions,
        "best": best.map(|(p, k)| json!({"precision": p.cli_name(), "kld": k})),
    })
}
