//! Which machines to rent or buy for an asked load: the cheapest cloud instance (and how many)
//! whose replicas meet the target, the cheapest owned machine that does, and what it would take
//! when none does.

use super::{CostBasis, ServingPlan};
use crate::core::catalog::{Catalog, MachineKind, Price};
use serde::{Deserialize, Serialize};

/// One answer for the asked load.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServingPick {
    pub machine: String,
    pub name: String,
    /// Machines to rent or buy, and the engine replicas they run.
    pub machines: u64,
    pub replicas: u64,
    /// Cloud: all machines' hourly price; owned: their purchase price.
    pub usd: Option<f64>,
    pub hourly: bool,
    pub usd_per_million_output: Option<f64>,
    pub ttft_p95_s: f64,
    pub tokens_per_s_per_user: f64,
}

/// The serving answers of a recommendation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServingPicks {
    pub cloud: Option<ServingPick>,
    pub owned: Option<ServingPick>,
    /// When no machine meets the target: the one that comes closest (most tok/s per user at
    /// the asked load, among those that run it).
    pub closest: Option<ServingPick>,
}

fn pick_of(p: &ServingPlan, cat: &Catalog) -> Option<ServingPick> {
    let a = p.asked?;
    let m = cat.machine(&p.machine)?;
    let (usd, hourly) = match &m.price {
        Some(Price::Hourly { usd, .. }) => (Some(usd * a.machines as f64), true),
        Some(Price::Purchase { usd, .. }) => (Some(usd * a.machines as f64), false),
        None => (None, m.kind == MachineKind::Cloud),
    };
    Some(ServingPick {
        machine: p.machine.to_string(),
        name: p.name.to_string(),
        machines: a.machines,
        replicas: a.replicas,
        usd,
        hourly,
        usd_per_million_output: p
            .cost
            .filter(|c| c.basis == CostBasis::Asked)
            .map(|c| c.usd_per_million_output)
            .filter(|x| x.is_finite()),
        ttft_p95_s: a.per_replica.ttft_p95_s,
        tokens_per_s_per_user: a.per_replica.tokens_per_s_per_user,
    })
}

/// The picks among `plans` (each made with an asked load).
pub fn serving_picks(plans: &[ServingPlan], cat: &Catalog) -> ServingPicks {
    let meeting: Vec<ServingPick> = plans
        .iter()
        .filter(|p| p.asked.is_some_and(|a| a.meets_target))
        .filter_map(|p| pick_of(p, cat))
        .collect();
    let cheapest = |hourly: bool| {
        meeting
            .iter()
            .filter(|x| x.hourly == hourly && x.usd.is_some())
            .min_by(|a, b| {
                a.usd
                    .unwrap_or(f64::MAX)
                    .total_cmp(&b.usd.unwrap_or(f64::MAX))
            })
            .cloned()
    };
    let (cloud, owned) = (cheapest(true), cheapest(false));
    let closest = if cloud.is_none() && owned.is_none() {
        plans
            .iter()
            .filter(|p| p.blocker.is_none())
            .filter_map(|p| pick_of(p, cat))
            .filter(|x| x.tokens_per_s_per_user.is_finite())
            .max_by(|a, b| a.tokens_per_s_per_user.total_cmp(&b.tokens_per_s_per_user))
    } else {
        None
    };
    ServingPicks {
        cloud,
        owned,
        closest,
    }
}

/// Cloud rows priced at load: each cloud fit's `usd_per_million_tokens` becomes the cost per 1M
/// output tokens at the largest load that meets the serving target (or the asked load), so the
/// cloud picks rank instances as they are paid for. Returns the plans.
pub fn price_cloud_at_load(
    s: &crate::core::scenario::Scenario,
    fits: &mut [crate::core::fit::FitResult],
    cat: &Catalog,
    st: &crate::core::fit::FitSettings,
) -> Vec<ServingPlan> {
    if s.mode.is_training() {
        return Vec::new();
    }
    let plans = super::plan_all(s, fits, cat, st);
    for f in fits.iter_mut().filter(|f| f.kind == MachineKind::Cloud) {
        if let Some(c) = plans
            .iter()
            .find(|p| p.machine == f.machine)
            .and_then(|p| p.cost)
            .filter(|c| c.usd_per_million_output.is_finite())
        {
            f.usd_per_million_tokens = Some(c.usd_per_million_output);
        }
    }
    plans
}
