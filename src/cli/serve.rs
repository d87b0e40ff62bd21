//! `headroom serve`: per machine, how many users the engine holds at the target, their latency
//! and speed, the replicas an asked load needs and what a million tokens cost at that load.

use super::app::CliError;
use super::args::ServeArgs;
use super::scenario::build_scenario;
use crate::core::catalog::Catalog;
use crate::core::fit::fit_all;
use crate::core::format;
use crate::core::scenario::Scenario;
use crate::core::serving::{Load, ServingPlan, plan_all};

/// Runs `headroom serve`.
pub fn run(a: &ServeArgs, cat: &mut Catalog) -> Result<String, CliError> {
    super::scenario::refuse_gpus(&a.scenario, "serve")?;
    let mut s = build_scenario(&a.scenario, cat)?;
    super::scenario::refuse_embed(&s, "serve")?;
    if let Some(t) = a.min_tokens_per_s {
        s.serving.target.min_tokens_per_s = t;
    }
    let mut machines = a.select.machines(cat)?;
    if a.select.machines.is_empty() {
        machines.retain(|m| m.gpu.is_some());
    }
    let st = super::scenario::fit_settings(&a.scenario, a.rows.electricity);
    let fits = fit_all(&s, &machines, cat, &st);
    let mut plans = plan_all(&s, &fits, cat, &st);
    sort_plans(&mut plans);
    if !a.all && a.select.machines.is_empty() {
        plans.retain(|p| p.blocker.is_none());
    }
    if a.rows.json {
        let v: Vec<_> = plans.iter().map(crate::io::json::serving_json).collect();
        Ok(super::app::json_text(&v))
    } else {
        let mut out = serve_table(&s, &plans);
        if a.launch
            && let Some(l) = plans
                .iter()
                .find_map(|p| crate::io::export::launch_serving::serving_launch(&s, p))
        {
            let first = plans.iter().find(|p| p.blocker.is_none());
            out.push_str(&format!(
                "\n{} on {}:\n{}\n{}\n",
                l.title,
                first.map(|p| p.name.to_string()).unwrap_or_default(),
                l.text,
                l.note
            ));
        }
        Ok(out)
    }
}

/// Servable plans first, cheapest output token first; then the rest.
pub fn sort_plans(plans: &mut [ServingPlan]) {
    let key = |p: &ServingPlan| {
        (
            p.blocker.is_some(),
            p.cost
                .map(|c| c.usd_per_million_output)
                .filter(|x| x.is_finite())
                .unwrap_or(f64::INFINITY),
        )
    };
    plans.sort_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        ka.0.cmp(&kb.0).then(ka.1.total_cmp(&kb.1))
    });
}

/// The traffic and target line above the table.
pub fn traffic_line(s: &Scenario) -> String {
    let v = s.serving.clamped();
    let load = match v.load {
        Some(Load::Users(n)) => format!("{} users in flight", format::group_digits(n)),
        Some(Load::RequestsPerSecond(r)) => format!("{} requests/s", format::rate(r)),
        None => "the most users that meet the target".to_string(),
    };
    let mix = v
        .mix
        .map(|m| format!(" ({}: {})", m.label(), m.source()))
        .unwrap_or_default();
    format!(
        "Traffic{mix}: prompt {} tokens ({} shared prefix), output {} tokens, context {}; target: {}; load: {load}",
        format::group_digits(s.prompt_tokens.min(s.context)),
        format::percent(v.prefix_share),
        format::group_digits(v.output_tokens),
        format::group_digits(s.context),
        target_text(s),
    )
}

/// The target in words: "TTFT p95 ≤ 2.00 s, ≥ 20.0 tok/s per user".
pub fn target_text(s: &Scenario) -> String {
    let t = s.serving.clamped().target;
    format!(
        "TTFT p95 ≤ {}, ≥ {} per user",
        format::duration(t.ttft_p95_s),
        format::tokens_per_s(t.min_tokens_per_s)
    )
}

/// The readable table of `headroom serve`.
pub fn serve_table(s: &Scenario, plans: &[ServingPlan]) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(o, "{}", traffic_line(s));
    let asked = s.serving.load.is_some();
    let w = plans
        .iter()
        .map(|p| p.name.chars().count())
        .max()
        .unwrap_or(8)
        .clamp(8, 44);
    let _ = writeln!(
        o,
        "{:<w$}  {:<12}  {:>7}  {:>10}  {:>9}  {:>9}  {:>8}  {:>9}  {:>10}{}",
        "machine",
        "engine",
        "GPUs",
        "KV tokens",
        "users",
        "TTFT p95",
        "tok/s/u",
        "out tok/s",
        "$/1M out",
        if asked { "  for the asked load" } else { "" }
    );
    for p in plans {
        let name: String = p.name.chars().take(w).collect();
        if let Some(b) = p.blocker {
            let _ = writeln!(o, "{name:<w$}  {:<12}  {b}", p.engine.label());
            continue;
        }
        let shown = match (&p.asked, &p.best) {
            (Some(a), _) => Some(a.per_replica),
            (None, Some(b)) => Some(*b),
            (None, None) => p.single,
        };
        let users = p
            .machine_users()
            .map(format::group_digits)
            .unwrap_or_else(|| "none".into());
        let gpus = format!("{}×{}", p.tp, p.replicas_per_machine);
        let kv = p
            .pool
            .as_ref()
            .map(|k| format::tokens_short(k.tokens))
            .unwrap_or_else(|| format::MISSING.into());
        let (ttft, tps) = shown
            .map(|x| {
                (
                    format::duration(x.ttft_p95_s),
                    format::rate(x.tokens_per_s_per_user),
                )
            })
            .unwrap_or_else(|| (format::MISSING.into(), format::MISSING.into()));
        let out = p
            .machine_output_tokens_per_s()
            .map(format::rate)
            .unwrap_or_else(|| format::MISSING.into());
        let usd = format::usd(p.cost.map(|c| c.usd_per_million_output));
        let need = p.asked.map(|a| format!("  {a}")).unwrap_or_default();
        let _ = writeln!(
            o,
            "{name:<w$}  {:<12}  {gpus:>7}  {kv:>10}  {users:>9}  {ttft:>9}  {tps:>8}  {out:>9}  {usd:>10}{need}",
            p.engine.label()
        );
    }
    let _ = writeln!(
        o,
        "users: users in flight one machine holds at the target; GPUs: per replica × replicas per machine; $/1M out: the machine's hour over its output tokens at that load (owned: power + purchase over 3 years)."
    );
    if s.speculative.is_some() {
        let _ = writeln!(o, "{}", crate::core::serving::speculative_text(plans));
    }
    o
}
