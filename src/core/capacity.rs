//! What a machine offers a scenario, and how the scenario is placed on it: usable memory per GPU
//! and in RAM, the devices the speed model runs on, the whole layers that fit on the GPUs, and
//! the memory each device holds in the placement the fit engine chose.
//!
//! The fit engine ([`super::fit`]) and every surface (GUI, reports) ask these functions, so a
//! number a surface draws is the number the verdict was made from.

use super::catalog::{Accelerator, Machine, MemoryKind, Vendor};
use super::estimate::{ComponentKind, Estimate};
use super::fit::{FitResult, FitSettings, Verdict, metal_default_limit};
use super::scenario::{Runtime, Scenario};
use super::speed::{CpuDevice, GpuDevice, SpeedConstants};
use super::units::{Bytes, GbPerSec};

/// RAM usable by a job on `m` and the OS reserve taken from it: the reserve is the larger of a
/// fixed amount and a share of RAM ([`FitSettings::os_reserve`], `os_reserve_fraction`).
pub fn ram_capacity(m: &Machine, st: &FitSettings) -> (Bytes, Bytes) {
    let frac = m.ram.scale(st.os_reserve_fraction.clamp(0.0, 0.9));
    let reserve = st.os_reserve.max(frac).min(m.ram);
    (m.ram.saturating_sub(reserve), reserve)
}

/// Whether `acc` shares the machine's RAM (Apple silicon, APUs).
pub fn is_unified(acc: Option<&Accelerator>) -> bool {
    acc.is_some_and(|a| a.memory_kind == MemoryKind::Unified)
}

/// GPUs a job on `m` runs on: every discrete GPU of the machine, one unified GPU, none without
/// an accelerator.
pub fn gpus_used(m: &Machine, acc: Option<&Accelerator>) -> u64 {
    match acc {
        None => 0,
        Some(_) if is_unified(acc) => 1,
        Some(_) => m.gpu_count.max(1) as u64,
    }
}

/// Usable memory per GPU for the scenario: the unified GPU's share of RAM (the machine's
/// configured limit, Metal's default working set on Apple, the APU share otherwise), or the
/// card's VRAM (× `--gpu-memory-utilization` under vLLM). Zero without an accelerator.
pub fn gpu_capacity(
    m: &Machine,
    acc: Option<&Accelerator>,
    s: &Scenario,
    st: &FitSettings,
) -> Bytes {
    match acc {
        None => Bytes::ZERO,
        Some(a) if a.memory_kind == MemoryKind::Unified => {
            let lim = m.gpu_memory_limit.unwrap_or_else(|| {
                if a.vendor == Vendor::Apple {
                    metal_default_limit(m.ram)
                } else {
                    m.ram.scale(st.apu_gpu_fraction)
                }
            });
            lim.min(m.ram)
        }
        Some(a) if s.runtime == Runtime::Vllm => {
            // As `Scenario::clamped` bounds it (no clone of the model on this hot path).
            let u = s.gpu_memory_utilization;
            a.memory.scale(if u.is_finite() {
                u.clamp(0.05, 1.0)
            } else {
                0.9
            })
        }
        Some(a) => a.memory,
    }
}

/// The machine's CPU as a speed-model device (unified chips: the CPU cluster's share of the
/// bandwidth).
pub fn cpu_device(m: &Machine, acc: Option<&Accelerator>, k: &SpeedConstants) -> CpuDevice {
    CpuDevice::from_machine(m, acc, k)
}

/// The accelerator as a speed-model device.
pub fn gpu_device(a: &Accelerator) -> GpuDevice {
    GpuDevice::from_accelerator(a)
}

/// The host link of the accelerator; PCIe 4.0 x8 (16 GB/s) when the catalog does not say.
pub fn host_link(a: &Accelerator) -> GbPerSec {
    a.pcie.map(|p| p.bandwidth()).unwrap_or(GbPerSec(16.0))
}

/// Bytes one repeated layer adds on a device: its weights and its share of the KV cache.
pub fn per_layer_bytes(e1: &Estimate) -> Bytes {
    let w = &e1.workload;
    w.layer_weights
        .saturating_add(w.kv_total)
        .div_ceil(w.layers.max(1))
}

/// Whole layers that fit on `gpus` GPUs of `cap` each, llama.cpp style (`-ngl`): every GPU keeps
/// its fixed costs (runtime overhead, compute buffers), the rest holds whole layers with their
/// KV cache. `e1` is the one-GPU estimate. At most all layers.
pub fn layers_that_fit(e1: &Estimate, cap: Bytes, gpus: u64) -> u64 {
    let l = e1.workload.layers.max(1);
    let room = cap
        .saturating_sub(e1.workload.fixed_per_device)
        .saturating_mul(gpus.max(1));
    room.0
        .checked_div(per_layer_bytes(e1).0)
        .map_or(l, |k| k.min(l))
}

/// Host RAM an offload with `gpu_layers` on the GPUs needs: the other layers with their KV, the
/// weights outside the layers, and whatever the one-GPU estimate already keeps in RAM.
pub fn offload_host_bytes(e1: &Estimate, gpu_layers: u64) -> Bytes {
    let l = e1.workload.layers.max(1);
    per_layer_bytes(e1)
        .saturating_mul(l - gpu_layers.min(l))
        .saturating_add(e1.workload.outer_weights)
        .saturating_add(e1.host_total())
}

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
    };
    let g = gpus_used(m, acc);
    // The disk tier splits like offload (or the CPU path) and leaves part of the host side on disk.
    let shape = match fit.verdict {
        Verdict::Disk if !training && fit.gpu_layers == 0 => Verdict::Cpu,
        Verdict::Disk if !training => Verdict::Offload,
        v => v,
    };
    match shape {
        Verdict::Cpu => {
            let e = est(0);
            load.host = kinds(|k| e.kind_total(k));
        }
        // Without a GPU, "does not fit" is about RAM on the CPU path.
        Verdict::None if g == 0 => {
            let e = est(0);
            load.host = kinds(|k| e.kind_total(k));
        }
        Verdict::Offload if fit.expert_split.is_some() => {
            // Expert offload: the whole-model placement less the RAM experts on each GPU.
            let x = fit.expert_split.as_ref().expect("checked");
            let e = est(g);
            let moved = x.ram_bytes.div_ceil(g.max(1));
            load.gpus = g;
            load.gpu = kinds(|kind| match kind {
                ComponentKind::Weights => e.per_gpu_kind(kind).saturating_sub(moved),
                other => e.per_gpu_kind(other),
            });
            load.host = kinds(|kind| match kind {
                ComponentKind::Weights => e.host_kind(kind).saturating_add(x.ram_bytes),
                other => e.host_kind(other),
            });
        }
        Verdict::Offload => {
            let e1 = est(1);
            let w = &e1.workload;
            let l = w.layers.max(1);
            let k = fit.gpu_layers.min(l);
            // The layers' weights and KV, split as the fit engine splits them (whole layers).
            let gw = Bytes(((w.layer_weights.0 as u128 * k as u128) / l as u128) as u64);
            let gk = Bytes(((w.kv_total.0 as u128 * k as u128) / l as u128) as u64);
            let per_gpu = |b: Bytes| b.div_ceil(g.max(1));
            load.gpus = g;
            load.gpu = kinds(|kind| match kind {
                ComponentKind::Weights => per_gpu(gw),
                ComponentKind::KvCache => per_gpu(gk),
                other => e1.per_gpu_kind(other),
            });
            load.host = kinds(|kind| match kind {
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
        }
        // GPU, unified, or no fit on the GPUs: the whole model over the machine's GPUs.
        _ => {
            let e = est(g);
            load.gpus = g;
            load.gpu = kinds(|k| e.per_gpu_kind(k));
            load.host = kinds(|k| e.host_kind(k));
        }
    }
    if fit.verdict == Verdict::Disk {
        // What the disk holds comes out of the host side: weights first (mmap / offload_folder),
        // then the optimiser states and master weights (ZeRO-Infinity).
        let mut left = fit.disk_bytes;
        for kind in [
            ComponentKind::Weights,
            ComponentKind::Optimizer,
            ComponentKind::MasterWeights,
        ] {
            if let Some((_, b)) = load.host.iter_mut().find(|(k, _)| *k == kind) {
                let take = (*b).min(left);
                *b = b.saturating_sub(take);
                left = left.saturating_sub(take);
            }
        }
        load.host.retain(|(_, b)| b.0 > 0);
    }
    load
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::catalog::{MachineKind, Segment};
    use crate::core::estimate::estimate;

    fn mac(ram_gib: u64) -> (Machine, Accelerator) {
        let a = Accelerator {
            bandwidth: GbPerSec(400.0),
            fp16_tflops: 13.6,
            source: "test".into(),
            ..Accelerator::new("m", "M", Vendor::Apple, Segment::Apple, MemoryKind::Unified)
        };
        let m = Machine {
            id: "mac".into(),
            name: "mac".into(),
            kind: MachineKind::Apple,
            gpu: Some("m".into()),
            gpu_count: 1,
            ram: Bytes::gib(ram_gib),
            ram_bandwidth: GbPerSec(400.0),
            cpu: "M".into(),
            cpu_cores: 12,
            vcpus: None,
            gpu_memory_limit: None,
            price: None,
            power_w: None,
            storage: None,
            source: "test".into(),
            notes: None,
        };
        (m, a)
    }

    #[test]
    fn ram_reserve_is_the_larger_of_fixed_and_share() {
        let (m, _) = mac(64);
        let st = FitSettings::default();
        // 10 % of 64 GiB = 6.4 GiB > 2 GiB.
        let (usable, reserve) = ram_capacity(&m, &st);
        assert_eq!(reserve, Bytes::gib(64).scale(0.1));
        assert_eq!(usable + reserve, Bytes::gib(64));
        let (m8, _) = mac(8);
        assert_eq!(ram_capacity(&m8, &st).1, Bytes::gib(2));
    }

    #[test]
    fn unified_capacity_is_metals_default_share() {
        let (m, a) = mac(64);
        let s = Scenario::default();
        let st = FitSettings::default();
        // 64 GB → 3/4 = 48 GiB (llama.cpp logs recommendedMaxWorkingSetSize 49152 MB).
        assert_eq!(gpu_capacity(&m, Some(&a), &s, &st), Bytes::gib(48));
        assert_eq!(gpus_used(&m, Some(&a)), 1);
        assert_eq!(gpu_capacity(&m, None, &s, &st), Bytes::ZERO);
    }

    #[test]
    fn layers_that_fit_counts_whole_layers() {
        let s = Scenario::default(); // Llama 3 8B BF16, 8K: 32 layers
        let e1 = estimate(&Scenario { gpus: 1, ..s });
        let l = e1.workload.layers;
        let per = per_layer_bytes(&e1);
        let fixed = e1.workload.fixed_per_device;
        // Room for exactly 10 layers.
        let cap = fixed.saturating_add(per.saturating_mul(10));
        assert_eq!(layers_that_fit(&e1, cap, 1), 10);
        // Two such GPUs hold 20; a huge one holds all.
        assert_eq!(layers_that_fit(&e1, cap, 2), 20);
        assert_eq!(layers_that_fit(&e1, Bytes::gib(1000), 1), l);
        // Nothing fits below the fixed costs.
        assert_eq!(layers_that_fit(&e1, fixed, 1), 0);
        // The host part of an offload shrinks as layers move to the GPU.
        assert!(offload_host_bytes(&e1, 10) > offload_host_bytes(&e1, 20));
        assert_eq!(
            offload_host_bytes(&e1, 10).0 - offload_host_bytes(&e1, 11).0,
            per.0
        );
    }
}
