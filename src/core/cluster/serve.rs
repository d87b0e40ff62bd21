//! Serving across machines: vLLM tensor × pipeline parallel over Ray, and llama.cpp's RPC
//! backend.
//!
//! Both start from the cluster as one machine of N× the GPUs, RAM and price
//! ([`cluster_machine`]), fitted like any other; then
//! - **vLLM** runs a replica as `--pipeline-parallel-size` stages of `--tensor-parallel-size`
//!   GPUs: each GPU holds its stage's weights and KV cache (so the pool grows with the stages),
//!   and every step passes all stages with a send of the hidden states over the network between
//!   nodes ([`crate::core::speed::step::StepModel::time`]); the serving model
//!   ([`crate::core::serving`]) then finds the users it holds at the target and what a million
//!   tokens cost on the whole cluster.
//! - **llama.cpp RPC** (`rpc-server` on each other machine, `llama-server --rpc host:port,…`)
//!   splits the layers over the machines by memory; the host's scheduler runs each remote split
//!   with three round trips per token — the split's input sent (`RPC_CMD_SET_TENSOR`), its graph
//!   run (`RPC_CMD_GRAPH_COMPUTE`), its output read back (`RPC_CMD_GET_TENSOR`;
//!   ggml/src/ggml-rpc/ggml-rpc.cpp) — each paying the network's latency both ways and the
//!   activations (FP32, hidden × 4 bytes per token) at its bandwidth.

use super::{Cluster, pow2_divisors};
use crate::core::catalog::{Catalog, Machine};
use crate::core::fit::{EstimateCache, FitResult, FitSettings, Verdict, fit_machine};
use crate::core::scenario::{Runtime, Scenario};
use crate::core::serving::{self, ServingPlan, Stages};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Round trips per token per remote split in llama.cpp's RPC backend (set, compute, get).
pub const RPC_ROUND_TRIPS: f64 = 3.0;

/// The engine serving across the nodes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServeEngine {
    /// vLLM over a Ray cluster: `--tensor-parallel-size` × `--pipeline-parallel-size`.
    Vllm,
    /// llama.cpp's RPC backend: `rpc-server` on the other machines.
    LlamaRpc,
}

impl ServeEngine {
    pub const ALL: [ServeEngine; 2] = [ServeEngine::Vllm, ServeEngine::LlamaRpc];
    pub const fn cli_name(self) -> &'static str {
        match self {
            ServeEngine::Vllm => "vllm",
            ServeEngine::LlamaRpc => "llama-rpc",
        }
    }
    pub const fn label(self) -> &'static str {
        match self {
            ServeEngine::Vllm => "vLLM (Ray)",
            ServeEngine::LlamaRpc => "llama.cpp RPC",
        }
    }
    /// The engine a scenario's runtime implies: llama.cpp → RPC, everything else vLLM; Macs
    /// and other unified-memory machines always llama.cpp (vLLM's Ray backend needs CUDA/ROCm).
    pub fn for_scenario(s: &Scenario, unified: bool) -> ServeEngine {
        if unified || s.runtime == Runtime::LlamaCpp {
            ServeEngine::LlamaRpc
        } else {
            ServeEngine::Vllm
        }
    }
}

/// One engine's plan on a cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServePlan {
    pub engine: ServeEngine,
    pub nodes: u64,
    pub gpus: u64,
    pub tp: u64,
    pub pp: u64,
    /// The cluster as one machine, fitted.
    pub fit: FitResult,
    /// vLLM: the serving plan of the whole cluster (its replicas, pool, load and cost).
    pub serving: Option<ServingPlan>,
    /// One user's decode tokens/s over the network (llama.cpp RPC: after the round trips).
    pub decode_tokens_per_s: f64,
    pub prefill_tokens_per_s: f64,
    /// Share of one token's time spent on the network.
    pub network_share: f64,
    pub usd_per_hour: Option<f64>,
}

impl ServePlan {
    /// Whether the model runs on the cluster at all.
    pub fn runs(&self) -> bool {
        match self.engine {
            ServeEngine::Vllm => self.serving.as_ref().is_some_and(|p| p.blocker.is_none()),
            ServeEngine::LlamaRpc => {
                matches!(
                    self.fit.verdict,
                    Verdict::Gpu | Verdict::Unified | Verdict::Offload
                ) && self.decode_tokens_per_s > 0.0
            }
        }
    }
}

/// The cluster as one machine: N× its GPUs (a unified-memory machine stays one GPU over N× the
/// pool), RAM, cores, power and price.
pub fn cluster_machine(c: &Cluster) -> Machine {
    let m = c.machine;
    let n = c.nodes;
    Machine {
        id: Arc::from(format!("{}*{n}", m.id)),
        name: Arc::from(format!("{n} × {}", m.name)),
        gpu_count: if c.gpus_per_node == 1
            && c.acc.memory_kind == crate::core::catalog::MemoryKind::Unified
        {
            1
        } else {
            m.gpu_count.saturating_mul(n as u32)
        },
        ram: m.ram.saturating_mul(n),
        cpu_cores: m.cpu_cores.saturating_mul(n as u32),
        vcpus: m.vcpus.map(|v| v.saturating_mul(n as u32)),
        gpu_memory_limit: m.gpu_memory_limit.map(|l| l.saturating_mul(n)),
        price: m.price.as_ref().map(|p| p.scaled(n as f64)),
        // Every node draws its own power (a machine without a catalog figure at its kind's).
        power_w: Some(crate::core::placement::cost::power_watts(m, Some(c.acc)) * n as f64),
        ..m.clone()
    }
}

/// Plan serving `s` on cluster `c` with `engine`.
pub fn serve_plan(
    s: &Scenario,
    c: &Cluster,
    engine: ServeEngine,
    cat: &Catalog,
    st: &FitSettings,
) -> ServePlan {
    let vm = cluster_machine(c);
    let mut es = s.clone();
    match engine {
        ServeEngine::Vllm => es.set_runtime(Runtime::Vllm, false),
        ServeEngine::LlamaRpc => es.set_runtime(Runtime::LlamaCpp, false),
    }
    let fit = fit_machine(&mut EstimateCache::new(&es), &vm, cat, st);
    let usd_per_hour = crate::core::serving::machine_hourly_usd(&vm, Some(c.acc), st);
    match engine {
        ServeEngine::Vllm => vllm(&es, c, &vm, fit, st, usd_per_hour),
        ServeEngine::LlamaRpc => rpc(&es, c, fit, usd_per_hour),
    }
}

fn vllm(
    s: &Scenario,
    c: &Cluster,
    vm: &Machine,
    fit: FitResult,
    st: &FitSettings,
    usd_per_hour: Option<f64>,
) -> ServePlan {
    let heads = s.model.heads.max(1);
    let hop = if c.nodes > 1 {
        c.inter(c.gpus_per_node)
    } else {
        c.intra()
    };
    let mut best: Option<(ServingPlan, u64, u64)> = None;
    // The asked sizes (`--tp`, `--pp`) are kept; otherwise every size is tried.
    let asked = &s.cluster;
    for tp in pow2_divisors(c.gpus_per_node)
        .filter(|t| heads.is_multiple_of(*t) && asked.tp.is_none_or(|x| x == *t))
    {
        // vLLM splits the layers into any number of stages (`get_pp_indices`).
        let n = c.gpus() / tp;
        for pp in (1..=n.min(s.model.layers.max(1)))
            .filter(|p| n.is_multiple_of(*p) && asked.pp.is_none_or(|x| x == *p))
        {
            let stages = Stages {
                count: pp,
                hop_latency_s: hop.latency_s,
                hop_bps: hop.bytes_per_s,
            };
            let Some(b) = serving::build_stages(s, &fit, vm, c.acc, st, tp, stages) else {
                continue;
            };
            let p = serving::plan_of(b, s, vm, c.acc, st);
            let score = |p: &ServingPlan| {
                (
                    p.machine_users().unwrap_or(0),
                    p.single.map_or(0, |x| x.output_tokens_per_s as u64),
                )
            };
            if best.as_ref().is_none_or(|(b, _, _)| score(&p) > score(b)) {
                best = Some((p, tp, pp));
            }
        }
    }
    let (serving, tp, pp) = match best {
        Some((p, tp, pp)) => (Some(p), tp, pp),
        None => (None, 0, 0),
    };
    let single = serving.as_ref().and_then(|p| p.single);
    let hop_share = if pp > 1 {
        let per_token = single.map_or(0.0, |x| 1.0 / x.output_tokens_per_s.max(1e-9));
        ((pp - 1) as f64 * (hop.latency_s + s.model.hidden as f64 * 4.0 / hop.bytes_per_s))
            / per_token.max(1e-9)
    } else {
        0.0
    };
    ServePlan {
        engine: ServeEngine::Vllm,
        nodes: c.nodes,
        gpus: c.gpus(),
        tp,
        pp,
        decode_tokens_per_s: single.map_or(0.0, |x| x.output_tokens_per_s),
        prefill_tokens_per_s: fit.prefill_tokens_per_s,
        fit,
        serving,
        network_share: hop_share.min(1.0),
        usd_per_hour,
    }
}

fn rpc(s: &Scenario, c: &Cluster, fit: FitResult, usd_per_hour: Option<f64>) -> ServePlan {
    let remote = c.nodes.saturating_sub(1) as f64;
    let link = c.inter(c.gpus_per_node);
    let act = s.model.hidden as f64 * 4.0;
    let trip = 2.0 * link.latency_s;
    let per_token_net = remote * (RPC_ROUND_TRIPS * trip + 2.0 * act / link.bytes_per_s);
    let decode = if fit.decode_tokens_per_s > 0.0 {
        1.0 / (1.0 / fit.decode_tokens_per_s + per_token_net)
    } else {
        0.0
    };
    let ub = s.ubatch.max(1) as f64;
    let per_ubatch_net = remote * (RPC_ROUND_TRIPS * trip + 2.0 * ub * act / link.bytes_per_s);
    let prefill = if fit.prefill_tokens_per_s > 0.0 {
        ub / (ub / fit.prefill_tokens_per_s + per_ubatch_net)
    } else {
        0.0
    };
    ServePlan {
        engine: ServeEngine::LlamaRpc,
        nodes: c.nodes,
        gpus: c.gpus(),
        tp: 1,
        pp: c.nodes,
        decode_tokens_per_s: decode,
        prefill_tokens_per_s: prefill,
        network_share: if decode > 0.0 {
            (per_token_net * decode).min(1.0)
        } else {
            0.0
        },
        fit,
        serving: None,
        usd_per_hour,
    }
}
