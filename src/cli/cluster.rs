//! `headroom cluster [scenario flags] [--machine ID]... [--nodes N] [--link L] [--tp N] [--pp N]
//! (`--tp` is the scenario's tensor-parallel size, inside a node)
//! [--sharding S] [--global-batch N] [--pp-micro-batch N] [--launch] [--json]`: when one machine is not enough, how
//! many of a machine a training run or a served model needs, in which parallel layout, how fast
//! and at what cost — and, for one machine, the curve against node count. The plans come from
//! `core::cluster`; this file parses the flags and lays the answer out.

use super::app::{CliError, ScenarioArgs, build_scenario};
use super::values::{Choice, parse_u64_in};
use crate::core::catalog::{Catalog, LinkPreset};
use crate::core::cluster::{
    ClusterCurvePoint, ClusterInputs, ClusterPick, MAX_NODES, PointCells, Sharding, cluster_curve,
    cluster_picks,
};
use crate::core::format;
use crate::core::scenario::Scenario;
use clap::Args;
use std::fmt::Write;

#[derive(Args, Debug)]
#[command(allow_negative_numbers = true)]
pub struct ClusterArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// A machine id (repeatable) [default: every cloud GPU instance; for llama.cpp inference
    /// every machine with a GPU].
    #[arg(long = "machine", value_name = "ID")]
    pub machines: Vec<String>,
    /// Machines in the cluster [default: the smallest count that fits, with the curve].
    #[arg(long, value_name = "N", value_parser = parse_nodes)]
    pub nodes: Option<u64>,
    /// The link between the machines, replacing the catalog's network (home clusters).
    #[arg(long, value_name = "LINK", value_parser = Choice::<LinkPreset>::new())]
    pub link: Option<LinkPreset>,
    /// Pipeline-parallel stages [default: the fastest that fits].
    #[arg(long, value_name = "N", value_parser = parse_pow2)]
    pub pp: Option<u64>,
    /// How training shards the model states [default: the fastest the framework offers].
    #[arg(long, value_name = "S", value_parser = Choice::<Sharding>::new())]
    pub sharding: Option<Sharding>,
    /// Sequences per optimizer step (training) [default: 4M tokens ÷ --context]; a layout
    /// with more data-parallel ranks × --batch than this does not run.
    #[arg(long, value_name = "N", value_parser = parse_global_batch)]
    pub global_batch: Option<u64>,
    /// Sequences per pipeline micro-batch under pipeline parallelism (Megatron-LM's
    /// --micro-batch-size) [default: 1].
    #[arg(long, value_name = "N", value_parser = parse_global_batch)]
    pub pp_micro_batch: Option<u64>,
    /// Expert-parallel ranks for mixture-of-experts training (Megatron-Core's
    /// --expert-model-parallel-size; a power of two dividing the routed experts and TP ×
    /// data-parallel ranks) [default: the fastest that fits; 1 for dense models].
    #[arg(long, value_name = "N", value_parser = parse_pow2)]
    pub ep: Option<u64>,
    /// Print the launch files (torchrun + DeepSpeed/FSDP config, ray + vllm serve, rpc-server
    /// + llama-server) for the first machine's plan.
    #[arg(long)]
    pub launch: bool,
    /// Electricity price for owned machines, USD per kWh [default: 0.15].
    #[arg(long, value_name = "USD_PER_KWH", value_parser = super::values::parse_electricity)]
    pub electricity: Option<f64>,
    /// Print the answer as JSON (one object per machine, with its curve).
    #[arg(long)]
    pub json: bool,
}

fn parse_nodes(s: &str) -> Result<u64, String> {
    parse_u64_in(s, 1, MAX_NODES)
}

fn parse_pow2(s: &str) -> Result<u64, String> {
    let n = parse_u64_in(s, 1, 1024)?;
    if !n.is_power_of_two() {
        return Err(format!("'{s}' must be a power of two (1, 2, 4, 8, …)"));
    }
    Ok(n)
}

fn parse_global_batch(s: &str) -> Result<u64, String> {
    parse_u64_in(s, 1, 1 << 24)
}

/// The cluster inputs of the flags.
pub fn inputs(a: &ClusterArgs) -> ClusterInputs {
    ClusterInputs {
        nodes: a.nodes,
        link: a.link,
        tp: a.scenario.tp,
        pp: a.pp,
        sharding: a.sharding,
        global_batch: a.global_batch,
        pp_micro_batch: a.pp_micro_batch,
        ep: a.ep,
    }
}

/// Runs `headroom cluster`.
pub fn run(a: &ClusterArgs, cat: &mut Catalog) -> Result<String, CliError> {
    super::scenario::refuse_gpus(&a.scenario, "cluster")?;
    let mut s = build_scenario(&a.scenario, cat)?;
    super::scenario::refuse_embed(&s, "cluster")?;
    s.cluster = inputs(a);
    if let Some(e) =
        a.ep.and_then(|ep| crate::core::cluster::ep_error(&s.model, ep))
    {
        return Err(CliError::usage(e));
    }
    let st = super::scenario::fit_settings(&a.scenario, a.electricity);
    let picks: Vec<ClusterPick> = if a.machines.is_empty() {
        cluster_picks(&s, cat, &s.cluster, &st)
    } else {
        let machines = super::fit::select_machines(cat, &a.machines, None)?;
        let mut out = Vec::new();
        for m in &machines {
            let acc = m
                .gpu
                .as_deref()
                .and_then(|id| cat.accelerator(id))
                .ok_or_else(|| {
                    CliError::usage(format!(
                        "--machine {}: a cluster is planned on machines with a GPU",
                        m.id
                    ))
                })?;
            out.push(cluster_curve(&s, m, acc, &s.cluster, cat, &st));
        }
        out
    };
    if a.json {
        let v: Vec<_> = picks.iter().map(crate::io::json::cluster_json).collect();
        return Ok(super::app::json_text(&v));
    }
    let mut out = cluster_table(&s, &picks);
    if !a.machines.is_empty() {
        for p in &picks {
            out.push_str(&curve_table(&s, p));
        }
    }
    if a.launch
        && let Some(p) = picks.first()
        && let Some(point) = p.cheapest.as_ref().or(p.smallest.as_ref())
        && let Some(m) = cat.machine(&p.machine)
    {
        for l in crate::io::export::launch_cluster::cluster_launch(&s, m, p, point) {
            let _ = write!(out, "\n{}:\n{}\n", l.title, l.text);
            if !l.note.is_empty() {
                let _ = writeln!(out, "{}", l.note);
            }
        }
    }
    Ok(out)
}

/// One line per machine: the smallest cluster that fits and the cheapest.
pub fn cluster_table(s: &Scenario, picks: &[ClusterPick]) -> String {
    let mut o = String::new();
    if picks.is_empty() {
        let _ = writeln!(
            o,
            "No cluster of up to {} machines fits this scenario.",
            format::group_digits(MAX_NODES)
        );
        return o;
    }
    let w = picks
        .iter()
        .map(|p| p.name.chars().count())
        .max()
        .unwrap_or(8)
        .clamp(8, 40);
    let h = PointCells::headers(s.mode.is_training());
    let lw = layout_width(picks.iter().filter_map(|p| p.smallest.as_ref()));
    let _ = writeln!(
        o,
        "{:<w$}  {:>5}  {:<lw$}  {:>9}  {:>12}  {:>10}  {:>11}  {:>14}",
        "machine", "nodes", "layout", "per GPU", h[0], h[1], h[2], "cheapest"
    );
    for p in picks {
        let name: String = p.name.chars().take(w).collect();
        let Some(sm) = &p.smallest else {
            let _ = writeln!(o, "{name:<w$}  does not fit on any cluster tried");
            continue;
        };
        let c = sm.cells();
        let cheapest = p.cheapest_text();
        let _ = writeln!(
            o,
            "{name:<w$}  {:>5}  {:<lw$}  {:>9}  {:>12}  {:>10}  {:>11}  {cheapest:>14}",
            sm.nodes, c.layout, c.per_gpu, c.rate, c.time, c.cost
        );
    }
    if let Some(p) = picks.first() {
        let _ = writeln!(
            o,
            "Network of {}: {}{}",
            p.name,
            p.network,
            if p.network_assumed {
                " (assumed for this kind of machine; --link to set it)"
            } else {
                ""
            }
        );
    }
    o
}

/// The layout column's width: its longest cell, at least 30 characters.
fn layout_width<'a>(points: impl Iterator<Item = &'a ClusterCurvePoint>) -> usize {
    points
        .map(|p| p.cells().layout.chars().count())
        .max()
        .unwrap_or(0)
        .max(30)
}

/// The curve of one machine: every node count tried.
pub fn curve_table(s: &Scenario, p: &ClusterPick) -> String {
    let mut o = String::new();
    let h = PointCells::headers(s.mode.is_training());
    let lw = layout_width(p.curve.iter().filter(|pt| pt.fits()));
    let _ = writeln!(o, "\n{} — by node count:", p.name);
    let _ = writeln!(
        o,
        "{:>5}  {:>5}  {:<lw$}  {:>9}  {:>12}  {:>10}  {:>11}",
        "nodes", "GPUs", "layout", "per GPU", h[0], h[1], h[2],
    );
    for pt in &p.curve {
        let gpus = pt.nodes * p.gpus_per_node;
        if !pt.fits() {
            let _ = writeln!(o, "{:>5}  {:>5}  does not fit", pt.nodes, gpus);
            continue;
        }
        let r = pt.cells();
        let _ = writeln!(
            o,
            "{:>5}  {:>5}  {:<lw$}  {:>9}  {:>12}  {:>10}  {:>11}",
            pt.nodes, gpus, r.layout, r.per_gpu, r.rate, r.time, r.cost
        );
    }
    o
}
