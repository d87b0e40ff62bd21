//! `headroom estimate`: the memory of a scenario, component by component, as a table or JSON.

use super::app::CliError;
use super::args::EstimateArgs;
use super::scenario::build_scenario;
use crate::core::catalog::Catalog;
use crate::core::estimate::{ComponentKind, Estimate, estimate};
use crate::core::format::group_digits;
use crate::core::scenario::Scenario;

/// Runs `headroom estimate`.
pub fn run(a: &EstimateArgs, cat: &Catalog) -> Result<String, CliError> {
    if super::image::asked(&a.scenario) {
        return super::image::run_estimate(a);
    }
    let s = build_scenario(&a.scenario, cat)?;
    if let Some(p) = &a.save_scenario {
        crate::io::export::write_scenario(p, &s)
            .map_err(|e| CliError::output(format!("--save-scenario: {e}")))?;
    }
    let e = estimate(&s);
    let table = crate::io::catalog::quality();
    if a.json {
        let mut v = crate::io::json::estimate_json(&e);
        v["quality"] = crate::io::json::scenario_quality_json(&s, table);
        Ok(super::app::json_text(&v))
    } else {
        let mut o = estimate_table(&s, &e);
        o.push_str(&quality_lines(&s, table));
        Ok(o)
    }
}

/// "quality: weights …" and "quality: KV …" lines (estimate, fit).
pub fn quality_lines(s: &Scenario, t: &crate::core::quality::QualityTable) -> String {
    format!(
        "quality: weights {}: {}\nquality: KV {}: {}\n",
        s.weights.label(),
        t.of_weights(s).long(),
        s.kv.cli_name(),
        t.of_kv(s).long()
    )
}

/// The readable table of `headroom estimate`.
pub fn estimate_table(s: &Scenario, e: &Estimate) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let m = &s.model;
    let _ = writeln!(
        o,
        "{}: {} params ({} active){}",
        m.name,
        group_digits(e.params.total),
        group_digits(e.params.active),
        if m.is_estimated() {
            ", shape estimated"
        } else {
            ""
        }
    );
    let _ = writeln!(
        o,
        "{} · weights {} · KV {} · context {} · batch {} · {} · {} GPU(s){}",
        s.mode.label(),
        s.weights.label(),
        s.kv.cli_name(),
        group_digits(s.context),
        s.batch,
        s.runtime.label(),
        s.gpus,
        if s.mode.is_training() {
            format!(" · ZeRO-{} · offload {}", s.zero, s.offload.cli_name())
        } else {
            String::new()
        }
    );
    let _ = writeln!(o);
    let w = e
        .components
        .iter()
        .map(|c| c.name.chars().count())
        .max()
        .unwrap_or(10)
        .max(10);
    let _ = writeln!(
        o,
        "{:<w$}  {:>11}  {:>11}  {:<5}  {:<9}  formula",
        "component", "total", "per GPU", "where", "source"
    );
    for c in &e.components {
        let per = match c.placement {
            crate::core::Placement::Gpu => c.per_device.display_gib(),
            crate::core::Placement::Host => crate::core::format::MISSING.into(),
        };
        let place = match c.placement {
            crate::core::Placement::Gpu => "GPU",
            crate::core::Placement::Host => "host",
        };
        let _ = writeln!(
            o,
            "{:<w$}  {:>11}  {:>11}  {:<5}  {:<9}  {}",
            c.name,
            c.bytes.display_gib(),
            per,
            place,
            c.provenance.label(),
            c.formula
        );
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "{:<w$}  {:>11}", "total", e.total().display_gib());
    if e.gpus > 0 {
        let _ = writeln!(
            o,
            "per GPU: {} (model states {}) · host RAM: {}",
            e.per_gpu_total().display_gib(),
            e.per_gpu_model_states().display_gib(),
            e.host_total().display_gib()
        );
    } else {
        let _ = writeln!(
            o,
            "CPU only: everything in host RAM: {}",
            e.host_total().display_gib()
        );
    }
    if e.kind_total(ComponentKind::KvCache).0 > 0 {
        let _ = writeln!(
            o,
            "KV cache per token: {} bytes",
            group_digits(e.kv_cache_per_token.0)
        );
    }
    for n in &e.notes {
        let _ = writeln!(o, "note: {n}");
    }
    o
}
