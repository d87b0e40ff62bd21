//! How many machines: per machine, the plan at each node count (the curve of time and cost that
//! shows where adding nodes stops paying), the smallest count that fits and the cheapest; over
//! the catalog, the machines ranked by the cheapest cluster.

use super::serve::{ServeEngine, ServePlan, serve_plan};
use super::train::{TrainPlan, best_layout};
use super::{Cluster, ClusterInputs, MAX_NODES};
use crate::core::catalog::{Accelerator, Catalog, Machine, MachineKind, MemoryKind};
use crate::core::fit::FitSettings;
use crate::core::scenario::Scenario;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Node counts a curve visits (the search stops after the plan stops improving).
const TRAIN_COUNTS: [u64; 16] = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256];
/// Serving clusters stay small: vLLM's pipeline stages and llama.cpp's RPC hops add latency per
/// node (8 nodes of 8 GPUs hold a 1T-parameter model in 16 bits).
const SERVE_COUNTS: [u64; 6] = [1, 2, 3, 4, 6, 8];

/// One node count of a machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClusterCurvePoint {
    pub nodes: u64,
    /// Training: the fastest layout that fits.
    pub train: Option<TrainPlan>,
    /// Serving: the engine's plan.
    pub serve: Option<ServePlan>,
}

impl ClusterCurvePoint {
    pub fn fits(&self) -> bool {
        self.train.is_some() || self.serve.as_ref().is_some_and(|p| p.runs())
    }
    /// What the point costs: the training run's $, or serving's $ per million output tokens
    /// (llama.cpp RPC: at one user).
    pub fn cost_usd(&self) -> Option<f64> {
        if let Some(t) = &self.train {
            return t.run_usd;
        }
        let p = self.serve.as_ref().filter(|p| p.runs())?;
        match &p.serving {
            Some(sp) => sp.cost.map(|c| c.usd_per_million_output),
            None => p
                .usd_per_hour
                .filter(|_| p.decode_tokens_per_s > 0.0)
                .map(|h| h * 1e6 / (p.decode_tokens_per_s * 3600.0)),
        }
    }
    /// Training hours (`None` for serving).
    pub fn hours(&self) -> Option<f64> {
        self.train.as_ref().map(|t| t.run_hours)
    }
}

/// A machine's cluster answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClusterPick {
    pub machine: Arc<str>,
    pub name: Arc<str>,
    pub kind: MachineKind,
    pub gpus_per_node: u64,
    /// The network between nodes, and whether it is the kind's assumed default.
    pub network: String,
    pub network_assumed: bool,
    /// The fewest nodes that fit.
    pub smallest: Option<ClusterCurvePoint>,
    /// The cheapest fitting node count (training: the run's $; serving: $ per million tokens).
    pub cheapest: Option<ClusterCurvePoint>,
    pub curve: Vec<ClusterCurvePoint>,
}

/// The plan of `s` on `nodes` × `m`.
pub fn point(
    s: &Scenario,
    c: &Cluster,
    inputs: &ClusterInputs,
    cat: &Catalog,
    st: &FitSettings,
) -> ClusterCurvePoint {
    if s.mode.is_training() {
        ClusterCurvePoint {
            nodes: c.nodes,
            train: best_layout(s, c, inputs, st),
            serve: None,
        }
    } else {
        let unified = c.acc.memory_kind == MemoryKind::Unified;
        ClusterCurvePoint {
            nodes: c.nodes,
            train: None,
            serve: Some(serve_plan(
                s,
                c,
                ServeEngine::for_scenario(s, unified),
                cat,
                st,
            )),
        }
    }
}

/// The curve of `s` on `m`: every node count (or the asked one), stopping two counts after the
/// first fit once the plan no longer gets faster (training) or cheaper.
pub fn cluster_curve(
    s: &Scenario,
    m: &Machine,
    acc: &Accelerator,
    inputs: &ClusterInputs,
    cat: &Catalog,
    st: &FitSettings,
) -> ClusterPick {
    let counts: Vec<u64> = match inputs.nodes {
        Some(n) => vec![n.clamp(1, MAX_NODES)],
        None if s.mode.is_training() => TRAIN_COUNTS.to_vec(),
        None => SERVE_COUNTS.to_vec(),
    };
    let probe = Cluster::new(m, acc, 1, inputs.link);
    let mut curve: Vec<ClusterCurvePoint> = Vec::new();
    let mut worse = 0;
    for n in counts {
        let c = Cluster::new(m, acc, n, inputs.link);
        let p = point(s, &c, inputs, cat, st);
        let improves = match (curve.iter().rev().find(|x| x.fits()), p.fits()) {
            (Some(prev), true) => better(&p, prev),
            (None, _) | (Some(_), false) => true,
        };
        let fitted_before = curve.iter().any(|x| x.fits());
        curve.push(p);
        if fitted_before && !improves {
            worse += 1;
            if worse >= 2 {
                break;
            }
        }
    }
    let smallest = curve.iter().find(|p| p.fits()).cloned();
    let cheapest = cheapest_of(&curve).cloned();
    ClusterPick {
        machine: m.id.clone(),
        name: m.name.clone(),
        kind: m.kind,
        gpus_per_node: probe.gpus_per_node,
        network: crate::core::format::network(&probe.network),
        network_assumed: probe.network_assumed,
        smallest,
        cheapest,
        curve,
    }
}

/// Costs within this share of the lowest count as the same price: the cheapest point is then
/// the fewest nodes at that price (beyond it adding nodes no longer pays).
const SAME_PRICE: f64 = 0.02;

/// The fewest nodes whose cost is within [`SAME_PRICE`] of the lowest (the fewest nodes that
/// fit when nothing has a price).
fn cheapest_of(curve: &[ClusterCurvePoint]) -> Option<&ClusterCurvePoint> {
    let cost = |p: &ClusterCurvePoint| p.cost_usd().filter(|c| c.is_finite());
    let fits = || curve.iter().filter(|p| p.fits());
    let low = fits().filter_map(cost).min_by(f64::total_cmp);
    match low {
        Some(low) => fits().find(|p| cost(p).is_some_and(|c| c <= low * (1.0 + SAME_PRICE))),
        None => fits().next(),
    }
}

/// Whether `p` beats `prev`: a faster training run, or a cheaper served token.
fn better(p: &ClusterCurvePoint, prev: &ClusterCurvePoint) -> bool {
    match (&p.train, &prev.train) {
        (Some(a), Some(b)) => a.tokens_per_s > b.tokens_per_s * 1.05,
        _ => {
            let k = |x: &ClusterCurvePoint| x.cost_usd().unwrap_or(f64::INFINITY);
            k(p) < k(prev)
        }
    }
}

/// Every GPU machine of the catalog (cloud instances for training and vLLM; for llama.cpp any
/// machine with a GPU) with its cluster answer, cheapest first.
pub fn cluster_picks(
    s: &Scenario,
    cat: &Catalog,
    inputs: &ClusterInputs,
    st: &FitSettings,
) -> Vec<ClusterPick> {
    let mut out: Vec<ClusterPick> = cat
        .machines
        .iter()
        .filter_map(|m| {
            let acc = cat.accelerator(m.gpu.as_deref()?)?;
            let unified = acc.memory_kind == MemoryKind::Unified;
            let home_ok = !s.mode.is_training()
                && ServeEngine::for_scenario(s, unified) == ServeEngine::LlamaRpc;
            (m.kind == MachineKind::Cloud || home_ok).then_some((m, acc))
        })
        .map(|(m, acc)| cluster_curve(s, m, acc, inputs, cat, st))
        .filter(|p| p.smallest.is_some())
        .collect();
    out.sort_by(|a, b| {
        let k = |p: &ClusterPick| {
            p.cheapest
                .as_ref()
                .and_then(|c| c.cost_usd())
                .unwrap_or(f64::INFINITY)
        };
        k(a).total_cmp(&k(b)).then(a.machine.cmp(&b.machine))
    });
    out
}
