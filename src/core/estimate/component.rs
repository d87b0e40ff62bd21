//! The pieces an estimate is made of: what a component is, where it lives, how its number was
//! obtained, and the list that places components on the GPUs or in host RAM.

use crate::core::units::Bytes;
use serde::{Deserialize, Serialize};

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ComponentKind {
    Weights,
    KvCache,
    Activations,
    Gradients,
    Optimizer,
    MasterWeights,
    Overhead,
}

impl ComponentKind {
    pub const ALL: [ComponentKind; 7] = [
        ComponentKind::Weights,
        ComponentKind::KvCache,
        ComponentKind::Activations,
        ComponentKind::Gradients,
        ComponentKind::Optimizer,
        ComponentKind::MasterWeights,
        ComponentKind::Overhead,
    ];
    pub const fn label(self) -> &'static str {
        match self {
            ComponentKind::Weights => "Weights",
            ComponentKind::KvCache => "KV cache",
            ComponentKind::Activations => "Activations",
            ComponentKind::Gradients => "Gradients",
            ComponentKind::Optimizer => "Optimizer states",
            ComponentKind::MasterWeights => "Master weights",
            ComponentKind::Overhead => "Overhead",
        }
    }
    /// The key used in the JSON `memory` object.
    pub const fn json_key(self) -> &'static str {
        match self {
            ComponentKind::Weights => "weights",
            ComponentKind::KvCache => "kv_cache",
            ComponentKind::Activations => "activations",
            ComponentKind::Gradients => "gradients",
            ComponentKind::Optimizer => "optimizer",
            ComponentKind::MasterWeights => "master_weights",
            ComponentKind::Overhead => "overhead",
        }
    }
}

/// How a number was obtained.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provenance {
    /// Read from the architecture or a model file, counted exactly.
    Exact,
    /// Computed by a published formula from exact inputs.
    Derived,
    /// A rule-of-thumb constant (shown, and adjustable where it matters).
    Heuristic,
}

impl Provenance {
    pub const fn label(self) -> &'static str {
        match self {
            Provenance::Exact => "exact",
            Provenance::Derived => "derived",
            Provenance::Heuristic => "heuristic",
        }
    }
}

/// Where a component lives.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// On every GPU (`per_device` each).
    Gpu,
    /// In host RAM.
    Host,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Component {
    pub kind: ComponentKind,
    pub name: String,
    /// Bytes across the whole job (all GPUs, or host RAM).
    pub bytes: Bytes,
    /// Bytes on ONE GPU for `Placement::Gpu`; equal to `bytes` for `Placement::Host`.
    pub per_device: Bytes,
    pub placement: Placement,
    pub provenance: Provenance,
    /// The formula with the numbers filled in.
    pub formula: String,
}

/// The components of one estimate, in the order they are shown.
pub(super) struct ComponentList {
    pub(super) items: Vec<Component>,
    /// GPUs the job is spread over (1 for CPU only).
    devices: u64,
    /// No GPU: every "GPU" component goes to host RAM.
    cpu_only: bool,
}

impl ComponentList {
    pub(super) fn new(devices: u64, cpu_only: bool) -> Self {
        ComponentList {
            items: Vec::with_capacity(12),
            devices,
            cpu_only,
        }
    }

    /// A component replicated or split across GPUs: `per_device` on each GPU (host RAM when
    /// the job has no GPU).
    pub(super) fn gpu(
        &mut self,
        kind: ComponentKind,
        name: &str,
        per_device: Bytes,
        provenance: Provenance,
        formula: String,
    ) {
        if self.cpu_only {
            return self.host(kind, name, per_device, provenance, formula);
        }
        self.items.push(Component {
            kind,
            name: name.into(),
            bytes: per_device.saturating_mul(self.devices),
            per_device,
            placement: Placement::Gpu,
            provenance,
            formula,
        });
    }

    /// A component in host RAM.
    pub(super) fn host(
        &mut self,
        kind: ComponentKind,
        name: &str,
        bytes: Bytes,
        provenance: Provenance,
        formula: String,
    ) {
        self.items.push(Component {
            kind,
            name: name.into(),
            bytes,
            per_device: bytes,
            placement: Placement::Host,
            provenance,
            formula,
        });
    }

    /// Per-GPU bytes of the components placed on the GPUs whose kind `keep` takes.
    pub(super) fn per_gpu_where(&self, keep: impl Fn(ComponentKind) -> bool) -> Bytes {
        self.items
            .iter()
            .filter(|c| c.placement == Placement::Gpu && keep(c.kind))
            .map(|c| c.per_device)
            .sum()
    }
}
