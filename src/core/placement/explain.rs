//! A fit in words and pictures: how the scenario sits on a machine in the placement behind its
//! verdict (what one GPU and host RAM hold per component kind, what the disk holds), and one line
//! on why the machine got its verdict. The notes a tier attaches are [`super::note::Note`]s.

use super::capacity::gpus_used;
use super::experts::ExpertSplit;
use super::note::Note;
use crate::core::catalog::{Accelerator, Machine};
use crate::core::estimate::{ComponentKind, Estimate};
use crate::core::fit::{FitResult, Verdict};
use crate::core::units::Bytes;

/// How the scenario sits on one machine: per component kind, what one GPU holds and what host
/// RAM holds, in the placement behind the machine's verdict (its own GPU count, its offload
/// split), beside that machine's capacities.
#[derive(Clone, Debug, PartialEq)]
pub struct MachineLoad {
    pub machine: String,
    pub name: String,
    pub verdict: Verdict,
    /// "GPU", "offload 20/32", ... ([`FitResult::verdict_text`]).
    pub verdict_text: String,
    /// Why: [`verdict_reason`].
    pub reason: String,
    /// GPUs the job runs on in this placement (0: the CPU path or no GPU).
    pub gpus: u64,
    /// Per kind, bytes on ONE GPU (empty on the CPU path).
    pub gpu: Vec<(ComponentKind, Bytes)>,
    /// Per kind, bytes in host RAM.
    pub host: Vec<(ComponentKind, Bytes)>,
    pub gpu_capacity: Bytes,
    pub ram_capacity: Bytes,
    /// Bytes left on the disk (verdict `Disk`): taken out of `host`.
    pub disk: Bytes,
    /// One pool (unified memory): `gpu` and `host` both live in `ram_capacity`, the GPU's part
    /// up to `gpu_capacity`.
    pub unified: bool,
}

impl MachineLoad {
    /// What one GPU holds.
    pub fn gpu_total(&self) -> Bytes {
        self.gpu.iter().map(|(_, b)| *b).sum()
    }
    /// What host RAM holds.
    pub fn host_total(&self) -> Bytes {
        self.host.iter().map(|(_, b)| *b).sum()
    }
    /// What the one pool of a unified machine holds (the GPU's part and the CPU's).
    pub fn pool_total(&self) -> Bytes {
        self.gpu_total().saturating_add(self.host_total())
    }
}

fn kinds(f: impl Fn(ComponentKind) -> Bytes) -> Vec<(ComponentKind, Bytes)> {
    ComponentKind::ALL
        .iter()
        .map(|&k| (k, f(k)))
        .filter(|(_, b)| b.0 > 0)
        .collect()
}

/// The placement behind `fit` on `m`. `est` gives the scenario's estimate over a GPU count
/// (0 = CPU only), as the fit engine made it; `training` says whether the scenario trains.
pub fn machine_load(
    fit: &FitResult,
    m: &Machine,
    acc: Option<&Accelerator>,
    training: bool,
    mut est: impl FnMut(u64) -> Estimate,
) -> MachineLoad {
    let mut load = MachineLoad {
        machine: fit.machine.to_string(),
        name: fit.name.to_string(),
        verdict: fit.verdict,
        verdict_text: fit.verdict_text(),
        reason: verdict_reason(fit, training),
        gpus: 0,
        gpu: Vec::new(),
        host: Vec::new(),
        gpu_capacity: fit.gpu_capacity,
        ram_capacity: fit.ram_capacity,
        disk: fit.disk_bytes,
        unified: fit.unified,
    };
    let g = gpus_used(m, acc);
    // The disk tier splits like offload (or the CPU path) and leaves part of the host side on disk.
    let shape = match fit.verdict {
        Verdict::Disk if !training && fit.gpu_layers == 0 => Verdict::Cpu,
        Verdict::Disk if !training => Verdict::Offload,
        v => v,
    };
    // Without a GPU, "does not fit" is about RAM on the CPU path.
    if shape == Verdict::Cpu || (shape == Verdict::None && g == 0) {
        let e = est(0);
        load.host = kinds(|k| e.kind_total(k));
    } else if shape == Verdict::Offload {
        load.gpus = g;
        (load.gpu, load.host) = match &fit.expert_split {
            Some(x) => expert_load(&est(g), x, g),
            None => layer_load(&est(1), fit.gpu_layers, g),
        };
    } else {
        // GPU, unified, or no fit on the GPUs: the whole model over the machine's GPUs.
        let e = est(g);
        load.gpus = g;
        load.gpu = kinds(|k| e.per_gpu_kind(k));
        load.host = kinds(|k| e.host_kind(k));
    }
    if fit.verdict == Verdict::Disk {
        take_disk(&mut load.host, fit.disk_bytes);
    }
    load
}

/// Per kind, (one GPU, host RAM).
type Split = (Vec<(ComponentKind, Bytes)>, Vec<(ComponentKind, Bytes)>);

/// Expert offload: the whole-model placement `e` over `g` GPUs less the RAM experts on each GPU.
fn expert_load(e: &Estimate, x: &ExpertSplit, g: u64) -> Split {
    let moved = x.ram_bytes.div_ceil(g.max(1));
    let gpu = kinds(|kind| match kind {
        ComponentKind::Weights => e.per_gpu_kind(kind).saturating_sub(moved),
        other => e.per_gpu_kind(other),
    });
    let host = kinds(|kind| match kind {
        ComponentKind::Weights => e.host_kind(kind).saturating_add(x.ram_bytes),
        other => e.host_kind(other),
    });
    (gpu, host)
}

/// Layer offload of `gpu_layers` whole layers over `g` GPUs, cut from the one-GPU estimate `e1`:
/// the layers' weights and KV split as the fit engine splits them.
fn layer_load(e1: &Estimate, gpu_layers: u64, g: u64) -> Split {
    let w = &e1.workload;
    let l = w.layers.max(1);
    let k = gpu_layers.min(l);
    let gw = Bytes(((w.layer_weights.0 as u128 * k as u128) / l as u128) as u64);
    let gk = Bytes(((w.kv_total.0 as u128 * k as u128) / l as u128) as u64);
    let per_gpu = |b: Bytes| b.div_ceil(g.max(1));
    let gpu = kinds(|kind| match kind {
        ComponentKind::Weights => per_gpu(gw),
        ComponentKind::KvCache => per_gpu(gk),
        other => e1.per_gpu_kind(other),
    });
    let host = kinds(|kind| match kind {
        ComponentKind::Weights => w
            .layer_weights
            .saturating_sub(gw)
            .saturating_add(w.outer_weights)
            .saturating_add(e1.host_kind(kind)),
        ComponentKind::KvCache => w
            .kv_total
            .saturating_sub(gk)
            .saturating_add(e1.host_kind(kind)),
        other => e1.host_kind(other),
    });
    (gpu, host)
}

/// What the disk holds comes out of the host side: weights first (mmap / offload_folder), then
/// the optimiser states and master weights (ZeRO-Infinity).
fn take_disk(host: &mut Vec<(ComponentKind, Bytes)>, on_disk: Bytes) {
    let mut left = on_disk;
    for kind in [
        ComponentKind::Weights,
        ComponentKind::Optimizer,
        ComponentKind::MasterWeights,
    ] {
        if let Some((_, b)) = host.iter_mut().find(|(k, _)| *k == kind) {
            let take = (*b).min(left);
            *b = b.saturating_sub(take);
            left = left.saturating_sub(take);
        }
    }
    host.retain(|(_, b)| b.0 > 0);
}

/// One line on why a machine got its verdict, in the numbers the verdict was made from: what
/// one GPU needs and holds over the machine's own GPU count, the layer split of an offload, and
/// why a machine with room to spare still says "no" (training needs a GPU).
pub fn verdict_reason(f: &FitResult, training: bool) -> String {
    let gpus = match f.gpus {
        0 => String::new(),
        1 => " on its GPU".to_string(),
        n => format!(" on each of its {n} GPUs"),
    };
    match f.verdict {
        Verdict::Gpu => format!(
            "needs {} of {} usable{gpus}",
            f.gpu_required, f.gpu_capacity
        ),
        Verdict::Unified => format!(
            "needs {} of the {} of unified memory the GPU may use",
            f.gpu_required, f.gpu_capacity
        ),
        Verdict::Offload if f.unified => format!(
            "{} of {} layers fit in the {} of unified memory the GPU may use; the other {} run on the CPU from the same memory",
            f.gpu_layers,
            f.total_layers,
            f.gpu_capacity,
            f.total_layers.saturating_sub(f.gpu_layers)
        ),
        Verdict::Cpu if f.unified => format!(
            "needs {} and the GPU may use {} of unified memory, too little for a layer: runs on the CPU from the same memory",
            f.gpu_required, f.gpu_capacity
        ),
        Verdict::Offload if f.expert_split.is_some() => {
            let x = f.expert_split.as_ref().expect("checked");
            format!(
                "all {} layers{gpus} ({} each) but the routed experts of the first {} ({}), which the CPU runs from RAM",
                f.total_layers, x.gpu_required, x.cpu_moe_layers, x.ram_bytes
            )
        }
        Verdict::Offload => format!(
            "{} of {} layers fit{gpus}; the other {} run on the CPU from RAM",
            f.gpu_layers,
            f.total_layers,
            f.total_layers.saturating_sub(f.gpu_layers)
        ),
        Verdict::Cpu if f.gpu_capacity.0 == 0 => "no GPU: runs on the CPU from RAM".to_string(),
        Verdict::Cpu => format!(
            "too big for the GPU ({} needed, {} usable) and too few layers fit to offload: runs on the CPU from RAM",
            f.gpu_required, f.gpu_capacity
        ),
        Verdict::Disk => format!(
            "fits in neither VRAM nor RAM: {} of {} layers on the GPU, {} resident in RAM, {} read from the disk",
            f.gpu_layers, f.total_layers, f.ram_required, f.disk_bytes
        ),
        // MLX: off Apple silicon it does not run at all; on a Mac it has no CPU offload.
        Verdict::None
            if let Some(n) = f
                .notes
                .iter()
                .find(|n| matches!(n, Note::NeedsAppleSilicon | Note::MlxAllOnGpu { .. })) =>
        {
            n.to_string()
        }
        Verdict::None if training && f.gpu_capacity.0 == 0 => {
            "training needs a GPU; this machine has none".to_string()
        }
        Verdict::None if f.gpu_capacity.0 == 0 => {
            format!("needs {} of RAM, {} usable", f.ram_required, f.ram_capacity)
        }
        Verdict::None if training => format!(
            "needs {} per GPU, {} usable{gpus}",
            f.gpu_required, f.gpu_capacity
        ),
        Verdict::None => format!(
            "needs {} per GPU, {} usable{gpus}; RAM ({} usable) cannot hold the rest",
            f.gpu_required, f.gpu_capacity, f.ram_capacity
        ),
    }
}
