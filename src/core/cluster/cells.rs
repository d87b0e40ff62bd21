//! The cells every surface shows for one node count (CLI table, report, window): the layout,
//! memory per GPU, the rate, the time and the cost, each through `core::format`.

use super::solve::{ClusterCurvePoint, ClusterPick};
use crate::core::format;

/// One node count's cells. Training: tokens/s, the run's hours and $; serving: users held at
/// the target (1 for llama.cpp RPC), one user's tokens/s and $ per million output tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointCells {
    pub layout: String,
    pub per_gpu: String,
    pub rate: String,
    pub time: String,
    pub cost: String,
}

impl PointCells {
    /// The column titles of the rate, time and cost cells.
    pub fn headers(training: bool) -> [&'static str; 3] {
        if training {
            ["tokens/s", "time", "job $"]
        } else {
            ["users", "tok/s/user", "$/1M out"]
        }
    }
}

impl ClusterCurvePoint {
    /// The cells of this node count ([`PointCells`]); every cell is "—" where the point does
    /// not run.
    pub fn cells(&self) -> PointCells {
        if let Some(t) = &self.train {
            return PointCells {
                layout: t.layout_text(),
                per_gpu: format::bytes(t.per_gpu.total()),
                rate: format::rate(t.tokens_per_s),
                time: format::hours(t.run_hours),
                cost: format::usd_whole(t.run_usd),
            };
        }
        let Some(sp) = &self.serve else {
            let m = || format::MISSING.to_string();
            return PointCells {
                layout: m(),
                per_gpu: m(),
                rate: m(),
                time: m(),
                cost: m(),
            };
        };
        let layout = format!(
            "{} TP {} × PP {}",
            sp.engine.label(),
            sp.tp.max(1),
            sp.pp.max(1)
        );
        let (users, per_gpu) = match &sp.serving {
            Some(plan) => (
                plan.machine_users()
                    .map(format::group_digits)
                    .unwrap_or_else(|| "none".into()),
                plan.pool
                    .as_ref()
                    .map(|k| format::bytes(k.weights_per_gpu + k.kv_per_gpu))
                    .unwrap_or_else(|| format::MISSING.into()),
            ),
            // llama.cpp RPC splits the layers by memory: each node holds its share.
            None => (
                "1".into(),
                format::bytes(sp.fit.gpu_required.scale(1.0 / sp.nodes.max(1) as f64)),
            ),
        };
        PointCells {
            layout,
            per_gpu,
            rate: users,
            time: format::tokens_per_s(sp.decode_tokens_per_s),
            cost: self.cost_text(),
        }
    }

    /// The point's cost: a training run's whole dollars, or serving's $ per million tokens.
    pub fn cost_text(&self) -> String {
        if self.train.is_some() {
            format::usd_whole(self.cost_usd())
        } else {
            format::usd(self.cost_usd())
        }
    }
}

impl ClusterPick {
    /// "16 nodes at $860": the cheapest node count and its cost ("—" when none fits).
    pub fn cheapest_text(&self) -> String {
        self.cheapest
            .as_ref()
            .map(|x| {
                format!(
                    "{} at {}",
                    format::count(x.nodes, "node", "nodes"),
                    x.cost_text()
                )
            })
            .unwrap_or_else(|| format::MISSING.into())
    }
}

impl ClusterPick {
    /// One line for an answer card or list: "24 × AWS p5.48xlarge · 8x H100 · TP 4 × PP 1 × DP
    /// 48, FSDP full shard · 69.9 GiB per GPU · 35,099 tokens/s · 47 min · $1,045; cheapest: 32
    /// nodes at $966" (`None` when no count fits).
    pub fn summary(&self, training: bool) -> Option<String> {
        let sm = self.smallest.as_ref()?;
        let c = sm.cells();
        let rates = if training {
            format!("{} tokens/s · {} · {}", c.rate, c.time, c.cost)
        } else {
            let users = sm.serve.as_ref().map_or(0, |p| {
                p.serving
                    .as_ref()
                    .map_or(1, |x| x.machine_users().unwrap_or(0))
            });
            format!(
                "{} at the target · {} per user · {} per 1M output tokens",
                format::count(users, "user", "users"),
                c.time,
                c.cost
            )
        };
        Some(format!(
            "{} × {} · {} · {} per GPU · {rates}; cheapest: {}",
            format::group_digits(sm.nodes),
            self.name,
            c.layout,
            c.per_gpu,
            self.cheapest_text()
        ))
    }
}
