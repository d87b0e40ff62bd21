//! What a machine offers a scenario: usable memory per GPU and in RAM, the GPUs a job runs on,
//! the host link, and the whole layers that fit on the GPUs.
//!
//! The tiers and every surface (GUI, reports, the teaching curves) ask these functions, so a
//! number a surface draws is the number the verdict was made from.

use crate::core::catalog::{Accelerator, Machine, MemoryKind, Vendor, metal_default_limit};
use crate::core::estimate::Estimate;
use crate::core::fit::FitSettings;
use crate::core::placement::note::{GpuLimitRaise, Note, RaiseHow, UnifiedLimit};
use crate::core::scenario::{Runtime, Scenario};
use crate::core::units::{Bytes, GbPerSec};

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
            if st.raise_gpu_limit
                && let Some(r) = limit_raise(m, acc, st)
            {
                return r.to;
            }
            let lim = m
                .gpu_memory_limit
                .unwrap_or_else(|| default_unified_limit(m, a, st));
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

/// The unified GPU's share of RAM by the platform's default rule: Metal's working set on
/// Apple, the amdgpu GTT default share on an APU.
fn default_unified_limit(m: &Machine, a: &Accelerator, st: &FitSettings) -> Bytes {
    if a.vendor == Vendor::Apple {
        metal_default_limit(m.ram)
    } else {
        m.ram.scale(st.apu_gpu_fraction)
    }
}

/// The raise of a unified GPU's limit the machine allows: up to RAM less the OS reserve the fit
/// keeps anyway ([`ram_capacity`]), rounded down to a MiB — mlx-lm's README asks for a wired
/// limit "larger than the size of the model … but smaller than the memory size of the
/// machine". `None` for discrete GPUs, for a limit the catalog or the user configured, and where
/// the raise would not add anything.
pub fn limit_raise(
    m: &Machine,
    acc: Option<&Accelerator>,
    st: &FitSettings,
) -> Option<GpuLimitRaise> {
    let a = acc.filter(|a| a.memory_kind == MemoryKind::Unified)?;
    if m.gpu_memory_limit.is_some() {
        return None;
    }
    let (usable, reserve) = ram_capacity(m, st);
    let to = Bytes(usable.0 >> 20 << 20);
    let how = if a.vendor == Vendor::Apple {
        RaiseHow::Sysctl
    } else {
        RaiseHow::KernelGtt
    };
    (to > default_unified_limit(m, a, st)).then_some(GpuLimitRaise {
        to,
        leaves: m.ram.saturating_sub(to).max(reserve),
        how,
    })
}

/// What the machine's GPUs offer the scenario, and what the whole model needs of them.
pub struct Gpus<'a> {
    pub acc: &'a Accelerator,
    /// Shares the machine's RAM (Apple silicon, APUs).
    pub unified: bool,
    /// GPUs the model spreads over ([`gpus_used`]).
    pub count: u64,
    /// Usable memory per GPU ([`gpu_capacity`]).
    pub capacity: Bytes,
    /// The estimate over `count` GPUs.
    pub est: &'a Estimate,
    /// What one GPU needs for the whole model: the reserved peak (allocated + caching-allocator
    /// reserve + CUDA context).
    pub need: Bytes,
    /// What host RAM needs beside it.
    pub host_need: Bytes,
}

impl<'a> Gpus<'a> {
    /// `count` GPUs `acc` of `m` holding `est`, the scenario's estimate over them, with its
    /// `(need, host_need)`: [`Estimate::peak_reserved`] and [`Estimate::host_total`] (the fit's
    /// estimate cache sums them once for every machine).
    pub fn new(
        m: &Machine,
        acc: &'a Accelerator,
        count: u64,
        (est, need, host_need): (&'a Estimate, Bytes, Bytes),
        s: &Scenario,
        st: &FitSettings,
    ) -> Gpus<'a> {
        Gpus {
            acc,
            unified: acc.memory_kind == MemoryKind::Unified,
            count,
            capacity: gpu_capacity(m, Some(acc), s, st),
            est,
            need,
            host_need,
        }
    }
    /// Where the usable share comes from, when it is not the whole VRAM: the unified GPU's share
    /// of RAM, or vLLM's `--gpu-memory-utilization`.
    pub fn note(&self, m: &Machine, s: &Scenario) -> Option<Note> {
        if self.unified {
            Some(Note::UnifiedShare {
                gpu: self.capacity,
                ram: m.ram,
                limit: if m.gpu_memory_limit.is_some() {
                    UnifiedLimit::Configured
                } else if self.acc.vendor == Vendor::Apple {
                    UnifiedLimit::MetalDefault
                } else {
                    UnifiedLimit::ApuDefault
                },
            })
        } else if s.runtime == Runtime::Vllm {
            Some(Note::VllmShare {
                utilization: s.gpu_memory_utilization,
            })
        } else {
            None
        }
    }
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
            source: "test".into(),
            ..Machine::bare("", "", MachineKind::Cloud)
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
