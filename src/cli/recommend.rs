//! `headroom recommend [scenario flags] [--budget USD] [--max-usd-per-hour X]
//! [--min-tokens-per-s N] [--min-context N] [--kind K]... [--max-kld KLD|LEVEL] [--json]`: which
//! machine to buy or rent, per kind, and what would make this machine run it. The picks come from
//! `core::recommend`; this file parses the flags and lays the answer out.

use super::app::{CliError, ScenarioArgs, build_scenario};
use crate::core::catalog::{Catalog, Machine};
use crate::core::fit::FitSettings;
use crate::core::format::group_digits;
use crate::core::recommend::{Constraints, KindFilter, Recommendations, recommend};
use crate::core::scenario::Scenario;
use clap::Args;

#[derive(Args, Debug)]
#[command(allow_negative_numbers = true)]
pub struct RecommendArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// Most a machine may cost to buy, USD.
    #[arg(long, value_parser = parse_usd)]
    pub budget: Option<f64>,
    /// Most a cloud instance may cost per hour, USD.
    #[arg(long, value_parser = parse_usd)]
    pub max_usd_per_hour: Option<f64>,
    /// Slowest acceptable decode speed, tokens/s (training: training tokens/s).
    #[arg(long, value_parser = parse_usd)]
    pub min_tokens_per_s: Option<f64>,
    /// Shortest acceptable context, tokens (machines are fitted at the longer of this and --context).
    #[arg(long, value_parser = parse_min_context)]
    pub min_context: Option<u64>,
    /// Kinds to answer for (repeatable): laptop, apple, desktop, workstation, cloud, mini-pc.
    #[arg(long = "kind", value_parser = parse_kind)]
    pub kinds: Vec<KindFilter>,
    /// A quality floor for this machine's precision step: the largest mean KL divergence
    /// accepted (a number such as 0.05, or lossless, near, good, usable); the step then proposes
    /// the best-quality precision within it that fits the GPU, never an unmeasured one.
    #[arg(long, value_name = "KLD|LEVEL", value_parser = crate::core::quality::parse_max_kld)]
    pub max_kld: Option<f64>,
    /// Skip detecting this machine (no `this_machine` answer).
    #[arg(long)]
    pub no_detect: bool,
    /// Electricity price for owned machines, USD/kWh.
    #[arg(long, value_parser = parse_usd)]
    pub electricity: Option<f64>,
    /// Print the answer as JSON.
    #[arg(long)]
    pub json: bool,
}

fn parse_usd(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_start_matches('$').replace(',', "");
    let v: f64 = t.parse().map_err(|_| format!("'{s}' is not a number"))?;
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("'{s}' must be a non-negative number"));
    }
    Ok(v)
}

fn parse_min_context(s: &str) -> Result<u64, String> {
    let n = crate::core::units::parse_count(s)?;
    let max = crate::core::scenario::limits::MAX_CONTEXT;
    if n == 0 || n > max {
        return Err(format!("'{s}' is outside 1 … {}", group_digits(max)));
    }
    Ok(n)
}

fn parse_kind(s: &str) -> Result<KindFilter, String> {
    KindFilter::from_cli(s).ok_or_else(|| {
        format!(
            "'{s}' is not a machine kind: {}",
            KindFilter::ALL
                .iter()
                .map(|k| k.cli_name())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

impl RecommendArgs {
    pub fn constraints(&self) -> Constraints {
        Constraints {
            budget_usd: self.budget,
            max_usd_per_hour: self.max_usd_per_hour,
            min_tokens_per_s: self.min_tokens_per_s,
            min_context: self.min_context,
            kinds: self.kinds.clone(),
            max_kld: self.max_kld,
        }
    }
}

/// Detects this machine, puts it in `cat` (as `local`) and returns it.
fn with_local(cat: &mut Catalog) -> Option<Machine> {
    use crate::io::detect::Detector;
    let d = crate::io::detect::SystemDetector::new(cat.clone()).detect();
    *cat = crate::io::detect::catalog_with_local(&d, cat);
    cat.machine(crate::io::detect::LOCAL_MACHINE_ID).cloned()
}

/// `headroom report`'s default machines: this machine (added to `cat` as `local`, so the
/// report can give its upgrade path) and the recommended picks, headline picks first.
pub fn report_machines(s: &Scenario, cat: &mut Catalog, st: &FitSettings) -> Vec<Machine> {
    let local = with_local(cat);
    let r = recommend(
        s,
        &cat.machines,
        local.as_ref(),
        cat,
        st,
        &Constraints::default(),
        crate::io::catalog::quality(),
    );
    let mut out: Vec<Machine> = local.into_iter().collect();
    out.extend(
        r.machine_ids()
            .iter()
            .filter_map(|id| cat.machine(id).cloned()),
    );
    out
}

/// Run `headroom recommend`.
pub fn run(a: &RecommendArgs, cat: &mut Catalog) -> Result<String, CliError> {
    if super::image::asked(&a.scenario) {
        return super::image::run_recommend(a, cat);
    }
    super::scenario::refuse_gpus(&a.scenario, "recommend")?;
    let s = build_scenario(&a.scenario, cat)?;
    let st = super::scenario::fit_settings(&a.scenario, a.electricity);
    let mut k = a.constraints();
    let mut s = s;
    // With a serving load, --min-tokens-per-s is the per-user speed target at that load (the
    // serving picks), not a single-user bound on the per-kind picks.
    if let (Some(t), Some(_)) = (a.min_tokens_per_s, s.serving.load) {
        s.serving.target.min_tokens_per_s = t;
        k.min_tokens_per_s = None;
    }
    let this = if a.no_detect { None } else { with_local(cat) };
    let r = recommend(
        &s,
        &cat.machines,
        this.as_ref(),
        cat,
        &st,
        &k,
        crate::io::catalog::quality(),
    );
    if a.json {
        Ok(format!(
            "{}\n",
            serde_json::to_string_pretty(&crate::io::json::recommend_json(&s, &r)).expect("json")
        ))
    } else {
        Ok(text(&s, &r))
    }
}

/// The readable answer.
pub fn text(s: &Scenario, r: &Recommendations) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{}: {}, {}, {} tokens, {}",
        s.model.name,
        s.mode.label(),
        s.weights.label(),
        group_digits(r.context),
        s.runtime.label()
    );
    if r.groups.is_empty() {
        let _ = writeln!(o, "\nNo machine in the catalog is of the kinds asked for.");
    }
    for g in &r.groups {
        let _ = writeln!(o, "\n{}", g.group.label());
        for p in &g.picks {
            let _ = writeln!(
                o,
                "  {:<24} {} · {} · {} · {}",
                p.role.label(),
                p.name,
                p.price_text(),
                p.verdict_text,
                p.speed_text()
            );
            let _ = writeln!(o, "  {:<24} {}", "", p.reason);
            if let Some(r) = &p.limit_raise {
                let _ = writeln!(o, "  {:<24} {r}", "");
            }
        }
        for u in &g.unmet {
            let _ = writeln!(o, "  ! {u}");
        }
        if let (Some(c), crate::core::recommend::Group::Cloud) = (&r.cluster, g.group)
            && let Some(line) = c.summary(s.mode.is_training())
        {
            let _ = writeln!(
                o,
                "  One instance is not enough; the cheapest cluster: {line} (headroom cluster: the curve and launch files)"
            );
        }
        if let (Some(load), crate::core::recommend::Group::Cloud) = (&r.cloud_cost_load, g.group) {
            let _ = writeln!(o, "  (cloud $ per 1M tokens: per output token {load})");
        }
    }
    if let Some(sp) = &r.serving {
        let _ = writeln!(o, "\nServing {}", crate::core::serving::load_text(s));
        let line = |label: &str, p: &crate::core::serving::ServingPick| {
            format!(
                "  {label:<24} {} × {} ({}) · {}{} · TTFT p95 {} · {} per user · {} per 1M output tokens",
                crate::core::format::group_digits(p.machines),
                p.name,
                crate::core::format::count(p.replicas, "replica", "replicas"),
                if p.hourly {
                    crate::core::format::usd_per_hour(p.usd)
                } else {
                    crate::core::format::usd_whole(p.usd)
                },
                if p.hourly { "" } else { " to buy" },
                crate::core::format::duration(p.ttft_p95_s),
                crate::core::format::tokens_per_s(p.tokens_per_s_per_user),
                crate::core::format::usd(p.usd_per_million_output),
            )
        };
        if let Some(p) = &sp.cloud {
            let _ = writeln!(o, "{}", line("Cheapest cloud", p));
        }
        if let Some(p) = &sp.owned {
            let _ = writeln!(o, "{}", line("Cheapest to own", p));
        }
        if let Some(p) = &sp.closest {
            let _ = writeln!(
                o,
                "  ! No machine meets the target at this load; the closest:\n{}",
                line("Closest", p)
            );
        }
    }
    if let Some(t) = &r.this_machine {
        let _ = writeln!(o, "\n{}: {}", t.title(), t.summary());
        for (i, u) in t.upgrades.iter().enumerate() {
            let _ = writeln!(o, "  {}. {u}", i + 1);
        }
    }
    o
}
