//! When one machine is not enough: a cluster of N identical catalog machines, the parallel
//! layouts the engines people run offer on it, and what each costs.
//!
//! Scenario → Estimate → **cluster plan**: a [`Cluster`] is N × one machine with its GPU fabric
//! and network (`core::catalog::interconnect`); a [`Layout`] is tensor × pipeline × data
//! parallel with a way of sharding the model states (DDP, ZeRO-1/2/3, FSDP, HSDP). Training
//! ([`train`]) takes memory per GPU from the estimate and the step time from compute, memory
//! traffic and communication with overlap ([`collective`] times the collectives). Serving
//! ([`serve`]) runs vLLM tensor × pipeline parallel over Ray or llama.cpp's RPC backend across
//! the nodes. [`solve`] finds, per machine, the smallest and the cheapest cluster that fits and
//! the curve of time and cost against node count. The mechanism and its sources are in
//! docs/cluster.md.

pub mod cells;
pub mod collective;
pub mod serve;
pub mod solve;
pub mod train;

pub use cells::PointCells;
pub use collective::{Collective, Link};
pub use serve::{ServeEngine, ServePlan, serve_plan};
pub use solve::{ClusterCurvePoint, ClusterPick, cluster_curve, cluster_picks};
pub use train::{PerGpu, StepTime, TrainPlan, ep_error, train_plan};

use crate::core::catalog::{
    Accelerator, Fabric, FabricKind, LinkPreset, Machine, MemoryKind, Network, Vendor, fabric_of,
    network_of,
};
use serde::{Deserialize, Serialize};

/// Most nodes a plan or a search considers.
pub const MAX_NODES: u64 = 4096;

/// Latency of one ring step inside a machine, µs: NVLink/NVSwitch ~1 µs, PCIe through the host
/// ~3 µs (NCCL's tuning model, `src/graph/tuning.cc`: per-hop `hwLat` of ~0.6 µs on NVLink and
/// ~1 µs on PCIe plus a per-operation base latency of a few µs for the simple protocol).
const NVLINK_STEP_US: f64 = 1.0;
const PCIE_STEP_US: f64 = 3.0;

/// What the user asks of a cluster (`--nodes`, `--link`, `--tp`, `--pp`, `--sharding`,
/// `--global-batch`, `--pp-micro-batch`); `None` lets the planner choose.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClusterInputs {
    /// Machines in the cluster; `None`: the smallest count that fits (1 when one machine does).
    pub nodes: Option<u64>,
    /// The link between the machines, replacing the catalog's network (home clusters).
    pub link: Option<LinkPreset>,
    /// Tensor-parallel size (inside a node).
    pub tp: Option<u64>,
    /// Pipeline-parallel stages.
    pub pp: Option<u64>,
    /// How the model states are sharded over the data-parallel ranks.
    pub sharding: Option<Sharding>,
    /// Sequences per optimizer step (training); `None`: 4M tokens of the context
    /// ([`train::DEFAULT_BATCH_TOKENS`]).
    pub global_batch: Option<u64>,
    /// Sequences per pipeline micro-batch under pipeline parallelism (Megatron-LM's
    /// `--micro-batch-size`; torchtitan splits a rank's batch into as many micro-batches as there
    /// are stages); `None`: 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pp_micro_batch: Option<u64>,
    /// Expert-parallel size for mixture-of-experts training (Megatron-Core's
    /// `--expert-model-parallel-size`); `None`: the planner chooses (1 for dense models).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ep: Option<u64>,
}

/// N identical machines.
#[derive(Clone, Debug, PartialEq)]
pub struct Cluster<'a> {
    pub machine: &'a Machine,
    pub acc: &'a Accelerator,
    pub nodes: u64,
    pub gpus_per_node: u64,
    pub fabric: Fabric,
    pub network: Network,
    /// The network is the default for the machine's kind, not a catalog fact.
    pub network_assumed: bool,
}

impl<'a> Cluster<'a> {
    /// `nodes` × `m` (clamped to 1 … [`MAX_NODES`]) with accelerator `acc`, connected by `link`
    /// (else the machine's network).
    pub fn new(
        m: &'a Machine,
        acc: &'a Accelerator,
        nodes: u64,
        link: Option<LinkPreset>,
    ) -> Cluster<'a> {
        let apple = acc.vendor == Vendor::Apple;
        let (network, network_assumed) = match link {
            Some(l) => (l.network(), false),
            None => network_of(m, apple),
        };
        let gpus_per_node = if acc.memory_kind == MemoryKind::Unified {
            1
        } else {
            m.gpu_count.max(1) as u64
        };
        Cluster {
            machine: m,
            acc,
            nodes: nodes.clamp(1, MAX_NODES),
            gpus_per_node,
            fabric: fabric_of(m, acc),
            network,
            network_assumed,
        }
    }
    pub fn gpus(&self) -> u64 {
        self.nodes * self.gpus_per_node
    }
    /// The GPU fabric between two GPUs of one machine, per GPU, one direction.
    pub fn intra(&self) -> Link {
        Link {
            bytes_per_s: self.fabric.one_way_gbs() * 1e9,
            latency_s: match self.fabric.kind {
                FabricKind::Pcie => PCIE_STEP_US,
                _ => NVLINK_STEP_US,
            } * 1e-6,
        }
    }
    /// What a group of ranks sees when it spans machines with `per_node` of its ranks in each:
    /// their share of the node's network (every GPU of the node runs its own group at once, as
    /// under tensor parallelism, so a group gets `per_node ÷ gpus_per_node` of the node's
    /// bandwidth; NCCL's rings cross each node once per rail).
    pub fn inter(&self, per_node: u64) -> Link {
        let share = per_node.clamp(1, self.gpus_per_node) as f64 / self.gpus_per_node as f64;
        Link {
            bytes_per_s: self.network.bytes_per_sec() * share,
            latency_s: self.network.latency_s(),
        }
    }
    /// Hourly price of the whole cluster (cloud) or `None`.
    pub fn hourly_usd(&self, per_machine: Option<f64>) -> Option<f64> {
        per_machine.map(|h| h * self.nodes as f64)
    }
}

/// How the model states are spread over the data-parallel ranks.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sharding {
    /// A full copy per rank, gradients all-reduced (PyTorch DDP, DeepSpeed ZeRO-0).
    None,
    /// DeepSpeed ZeRO-1: optimizer states sharded.
    Zero1,
    /// ZeRO-2: gradients too.
    Zero2,
    /// ZeRO-3: parameters too, gathered layer by layer.
    Zero3,
    /// PyTorch FSDP FULL_SHARD over every data-parallel rank (ZeRO-3's memory).
    Fsdp,
    /// FSDP HYBRID_SHARD: sharded inside a node, replicated across nodes.
    Hsdp,
}

impl Sharding {
    pub const ALL: [Sharding; 6] = [
        Sharding::None,
        Sharding::Zero1,
        Sharding::Zero2,
        Sharding::Zero3,
        Sharding::Fsdp,
        Sharding::Hsdp,
    ];
    pub const fn cli_name(self) -> &'static str {
        match self {
            Sharding::None => "none",
            Sharding::Zero1 => "zero1",
            Sharding::Zero2 => "zero2",
            Sharding::Zero3 => "zero3",
            Sharding::Fsdp => "fsdp",
            Sharding::Hsdp => "hsdp",
        }
    }
    pub const fn label(self) -> &'static str {
        match self {
            Sharding::None => "DDP (no sharding)",
            Sharding::Zero1 => "ZeRO-1",
            Sharding::Zero2 => "ZeRO-2",
            Sharding::Zero3 => "ZeRO-3",
            Sharding::Fsdp => "FSDP full shard",
            Sharding::Hsdp => "FSDP hybrid shard",
        }
    }
    /// The ZeRO stage whose memory arithmetic this sharding has.
    pub const fn zero_stage(self) -> u8 {
        match self {
            Sharding::None => 0,
            Sharding::Zero1 => 1,
            Sharding::Zero2 => 2,
            Sharding::Zero3 | Sharding::Fsdp | Sharding::Hsdp => 3,
        }
    }
    /// The sharding a one-machine scenario asks for over `gpus`: FSDP when its framework
    /// shards, else the ZeRO stage.
    pub fn of_scenario(s: &crate::core::scenario::Scenario, gpus: u64) -> Sharding {
        use crate::core::scenario::Framework;
        if gpus > 1 && s.framework == Framework::Fsdp {
            return Sharding::Fsdp;
        }
        match s.zero {
            0 => Sharding::None,
            1 => Sharding::Zero1,
            2 => Sharding::Zero2,
            _ => Sharding::Zero3,
        }
    }
    /// Whether the parameters are gathered for every forward and backward pass.
    pub const fn gathers_params(self) -> bool {
        self.zero_stage() == 3
    }
}

/// A parallel layout: `tp × pp × dp` GPUs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Layout {
    /// Tensor parallel (Megatron-LM: attention heads and MLP columns split, sequence parallel
    /// for the rest), inside one node.
    pub tp: u64,
    /// Pipeline stages (layers split evenly; 1F1B schedule).
    pub pp: u64,
    /// Data-parallel ranks.
    pub dp: u64,
    pub sharding: Sharding,
    /// Expert parallel (mixture of experts): the routed experts of every MoE layer split over
    /// `ep` ranks of the `tp × dp` GPUs of a stage, each expert whole
    /// (`--expert-tensor-parallel-size 1`; `megatron/core/parallel_state.py`
    /// `initialize_model_parallel` requires the world size to divide by ETP × EP × PP, so `ep`
    /// divides `tp × dp`). 1: every GPU holds every expert (split over the TP ranks).
    #[serde(default = "one")]
    pub ep: u64,
}

fn one() -> u64 {
    1
}

impl Layout {
    pub fn gpus(&self) -> u64 {
        self.tp * self.pp * self.dp
    }
    /// A layout without expert parallelism.
    pub const fn dense(tp: u64, pp: u64, dp: u64, sharding: Sharding) -> Layout {
        Layout {
            tp,
            pp,
            dp,
            sharding,
            ep: 1,
        }
    }
}

impl std::fmt::Display for Layout {
    /// "TP 8 × PP 2 × DP 4, ZeRO-1"; "TP 1 × PP 1 × DP 16 × EP 8, ZeRO-1" with expert
    /// parallelism.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TP {} × PP {} × DP {}", self.tp, self.pp, self.dp)?;
        if self.ep > 1 {
            write!(f, " × EP {}", self.ep)?;
        }
        write!(f, ", {}", self.sharding.label())
    }
}

/// Powers of two up to `n` that divide it.
pub(crate) fn pow2_divisors(n: u64) -> impl Iterator<Item = u64> {
    (0..20)
        .map(|k| 1_u64 << k)
        .take_while(move |d| *d <= n)
        .filter(move |d| n.is_multiple_of(*d))
}
