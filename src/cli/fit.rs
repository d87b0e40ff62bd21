//! `headroom fit`: the scenario on each machine, as a table or JSON.

use super::app::CliError;
use super::args::{FitArgs, MachineChoice};
use super::scenario::build_scenario;
use crate::core::catalog::{Catalog, Machine, MachineKind};
use crate::core::fit::{FitResult, fit_all};
use crate::core::format;
use crate::core::format::group_digits;
use crate::core::quality::Metric;
use crate::core::serving::plan_all;

/// Runs `headroom fit`.
pub fn run(a: &FitArgs, cat: &mut Catalog) -> Result<String, CliError> {
    if super::image::asked(&a.scenario) {
        return super::image::run_fit(a, cat);
    }
    super::scenario::refuse_gpus(&a.scenario, "fit")?;
    let s = build_scenario(&a.scenario, cat)?;
    let machines = a.select.machines(cat)?;
    let st = super::scenario::fit_settings(&a.scenario, a.rows.electricity);
    let mut rs = fit_all(&s, &machines, cat, &st);
    if a.fits_only {
        rs.retain(|r| r.fits());
    }
    // Serving many users: the price of a token at the load the target allows (or the asked one).
    let plans = plan_all(&s, &rs, cat, &st);
    let plan_of = |r: &FitResult| plans.iter().find(|p| p.machine == r.machine);
    let table = crate::io::catalog::quality();
    let weights_quality = table.of_weights(&s);
    if a.rows.json {
        let v: Vec<_> = rs
            .iter()
            .map(|r| {
                let mut v = crate::io::json::fit_json(r);
                v["serving"] = crate::io::json::fit_serving_json(plan_of(r));
                v["quality"] = crate::io::json::scenario_quality_json(&s, table);
                v["within_max_kld"] = a.max_kld.map(|_| weights_quality.within(a.max_kld)).into();
                v
            })
            .collect();
        Ok(super::app::json_text(&v))
    } else {
        let served: Vec<Option<f64>> = rs
            .iter()
            .map(|r| {
                plan_of(r)
                    .and_then(|p| p.cost)
                    .map(|c| c.usd_per_million_output)
            })
            .collect();
        let mut out = fit_table_served(&rs, Some(&served));
        if !plans.is_empty() {
            out.push_str(&format!(
                "$/1M tok: one user alone; $/1M served: at the most users that meet the serving target ({}; `headroom serve` for the plan).\n",
                super::serve::target_text(&s)
            ));
        }
        let refused = crate::core::placement::note::Note::NeedsAppleSilicon;
        if rs.iter().any(|r| r.notes.contains(&refused)) {
            out.push_str(&format!("not Apple: {refused}.\n"));
        }
        out.push_str(&super::estimate::quality_lines(&s, table));
        if let Some(k) = a.max_kld.filter(|_| !weights_quality.within(a.max_kld)) {
            // Accuracy recovery and ΔPPL are not on the KLD scale: such weights cannot be shown
            // within it.
            let off_scale = matches!(
                weights_quality.metric(),
                Some(Metric::Recovery | Metric::DeltaPpl)
            );
            let why = if off_scale {
                "published as benchmark accuracy or ΔPPL, not a KLD, so not shown within"
            } else {
                "past"
            };
            out.push_str(&format!(
                "note: every fit above needs {}, {why} the quality floor (KLD {}): `headroom quality --machine ID --max-kld {}` for the best precision within it\n",
                s.weights.label(),
                format::sig3(k),
                format::sig3(k)
            ));
        }
        Ok(out)
    }
}

/// The readable table of `headroom fit`.
pub fn fit_table(rs: &[FitResult]) -> String {
    fit_table_served(rs, None)
}

/// [`fit_table`] with a column of the cost per 1M output tokens at load (`served[i]` for `rs[i]`).
pub fn fit_table_served(rs: &[FitResult], served: Option<&[Option<f64>]>) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let w = rs
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(8)
        .clamp(8, 48);
    let _ = writeln!(
        o,
        "{:<w$}  {:<12}  {:>11}  {:>9}  {:>10}  {:>8}  {:>10}{}",
        "machine",
        "verdict",
        "headroom",
        "decode/s",
        "prefill/s",
        "TTFT",
        "$/1M tok",
        if served.is_some() {
            "  $/1M served"
        } else {
            ""
        }
    );
    for (i, r) in rs.iter().enumerate() {
        let name: String = r.name.chars().take(w).collect();
        let usd = format::usd(r.usd_per_million_tokens);
        let (d, p, t) = if r.runs() && r.training.is_none() {
            (
                // An embedding pass generates nothing.
                if r.embedding.is_some() {
                    format::MISSING.into()
                } else {
                    format::rate(r.decode_tokens_per_s)
                },
                format::rate(r.prefill_tokens_per_s),
                format::duration(r.ttft_s),
            )
        } else {
            (
                format::MISSING.into(),
                format::MISSING.into(),
                format::MISSING.into(),
            )
        };
        let at_load = served
            .map(|v| format!("  {:>12}", format::usd(v.get(i).copied().flatten())))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "{:<w$}  {:<12}  {:>11}  {:>9}  {:>10}  {:>8}  {:>10}{at_load}",
            name,
            r.verdict_text(),
            format::signed_bytes(r.headroom_bytes),
            d,
            p,
            t,
            usd
        );
        if r.verdict == crate::core::fit::Verdict::None {
            // Why MLX does not run where the memory alone would not say.
            use crate::core::placement::note::Note;
            for n in r
                .notes
                .iter()
                .filter(|n| matches!(n, Note::MlxAllOnGpu { .. }))
            {
                let _ = writeln!(o, "{:<w$}  {n}", "");
            }
        }
        if r.verdict == crate::core::fit::Verdict::Disk {
            // The disk tier says plainly what it costs ("runs, but at 0.18 tok/s").
            for n in r.notes.iter().filter(|n| n.is_disk_tier()) {
                let _ = writeln!(o, "{:<w$}  {n}", "");
            }
        }
        if let Some(e) = r.embedding.as_ref().filter(|_| r.runs()) {
            let _ = writeln!(
                o,
                "{:<w$}  embeddings: {} sequences/s of {} tokens ({} tokens/s), one batch in {}",
                "",
                format::rate(e.sequences_per_s),
                group_digits(e.tokens_per_sequence),
                format::rate(e.tokens_per_s),
                format::duration(e.batch_s)
            );
        }
        if let Some(tr) = &r.training {
            let _ = writeln!(
                o,
                "{:<w$}  training: {} tok/s, step {}, run {}{}",
                "",
                format::rate(tr.tokens_per_s),
                format::duration(tr.step_seconds),
                format::duration(tr.run_hours * 3600.0),
                tr.run_usd
                    .map(|u| format!(", {}", format::usd(Some(u))))
                    .unwrap_or_default()
            );
        }
    }
    o
}

/// Machines to fit: the named ones (`local` = this machine), else the catalog filtered by kind.
impl MachineChoice {
    /// The machines asked for: by id, by kind, else every catalog machine.
    pub fn machines(&self, cat: &mut Catalog) -> Result<Vec<Machine>, CliError> {
        select_machines(cat, &self.machines, self.kind.map(MachineKind::cli_name))
    }
}

pub fn select_machines(
    cat: &mut Catalog,
    ids: &[String],
    kind: Option<&str>,
) -> Result<Vec<Machine>, CliError> {
    let mut out = Vec::new();
    if ids.is_empty() {
        for m in &cat.machines {
            if kind.is_none_or(|k| kind_matches(cat, m, k)) {
                out.push(m.clone());
            }
        }
        return Ok(out);
    }
    for id in ids {
        if id == "local" {
            use crate::io::detect::Detector;
            let d = crate::io::detect::SystemDetector::new(cat.clone()).detect();
            let (m, accs) = crate::io::detect::local_machine(&d, cat);
            for a in accs {
                if cat.accelerator(&a.id).is_none() {
                    cat.accelerators.push(a);
                }
            }
            out.push(m);
        } else {
            let m = find_machine(cat, id).ok_or_else(|| {
                CliError::usage(format!(
                    "--machine: unknown machine '{id}' (see `headroom catalog list`)"
                ))
            })?;
            out.push(m.clone());
        }
    }
    Ok(out)
}

/// A machine by id, forgiving about the provider prefix and dots: `p5.48xlarge` finds
/// `aws-p5-48xlarge`.
pub fn find_machine<'a>(cat: &'a Catalog, id: &str) -> Option<&'a Machine> {
    if let Some(m) = cat.machine(id) {
        return Some(m);
    }
    let norm = id.trim().to_ascii_lowercase().replace(['.', '_', ' '], "-");
    let suffix = format!("-{norm}");
    let mut hits = cat
        .machines
        .iter()
        .filter(|m| *m.id == *norm || m.id.ends_with(&suffix));
    let first = hits.next()?;
    if hits.next().is_some() {
        None
    } else {
        Some(first)
    }
}

/// `--kind` semantics: `apple` = any machine with an Apple GPU; `desktop` includes workstations.
pub fn kind_matches(cat: &Catalog, m: &Machine, kind: &str) -> bool {
    MachineKind::ALL
        .into_iter()
        .find(|k| k.cli_name() == kind)
        .is_some_and(|k| cat.is_kind(m, k))
}
