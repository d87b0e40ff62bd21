//! The offload tiers: as many whole layers as fit on the discrete GPU(s), the rest in RAM — run
//! by the CPU (llama.cpp `-ngl k`) or streamed over PCIe every step (accelerate
//! `device_map="auto"`, vLLM `--cpu-offload-gb`). Per-GPU fixed costs (overhead, workspace) stay
//! on each GPU; llama.cpp splits the layers across the GPUs.
//!
//! On unified memory ([`unified`]) there is one pool: the layers the GPU's working-set cap
//! holds run on the GPU, the others on the CPU cores from the same memory, nothing crosses a
//! link.

use super::capacity::{layers_that_fit, offload_host_bytes, per_layer_bytes};
use super::note::Note;
use super::{Job, Placement, Run};
use crate::core::fit::{OffloadStyle, Verdict};
use crate::core::scenario::SplitStyle;

/// Layer offload with the RAM layers run in `style`, when at least one layer fits on the GPUs
/// and RAM holds the rest. Only after the whole model failed on the GPU: it keeps at least one
/// layer in RAM.
pub fn layers(job: &Job, style: SplitStyle) -> Option<Placement> {
    let g = job.gpus.as_ref().filter(|g| !g.unified)?;
    if job.training() {
        return None;
    }
    let e1 = job.one_gpu();
    let l = e1.workload.layers.max(1);
    let k = layers_that_fit(e1, g.capacity, g.count).min(l - 1);
    let host = offload_host_bytes(e1, k);
    if k == 0 || host > job.ram {
        return None;
    }
    let (speed, backend) = job.speed_as(e1, k, style);
    Some(Placement {
        offload_style: Some(OffloadStyle::of(style)),
        notes: vec![Note::LayerOffload {
            gpu: k,
            layers: l,
            streamed: style == SplitStyle::Streaming,
        }],
        ..Placement::new(
            Verdict::Offload,
            k,
            host,
            job.ram.signed_sub(host),
            Run::Inference { speed, backend },
        )
    })
}

/// Unified memory (Apple silicon, AMD APUs), llama.cpp `-ngl k` on Metal or Vulkan: as many
/// whole layers as the GPU's share holds (Metal's `recommendedMaxWorkingSetSize`, or the
/// configured wired limit / GTT size), the others run by the CPU cores from the same memory —
/// llama.cpp keeps them in a CPU buffer of the same RAM (`llama_model_load`'s per-layer buffer
/// types), so no bytes cross a link. The GPU part and the CPU part together must fit the usable
/// RAM. Only after the whole model failed on the GPU: it keeps at least one layer on the CPU.
pub fn unified(job: &Job) -> Option<Placement> {
    let g = job.gpus.as_ref().filter(|g| g.unified)?;
    if job.training() {
        return None;
    }
    let e1 = job.one_gpu();
    let l = e1.workload.layers.max(1);
    let k = layers_that_fit(e1, g.capacity, 1).min(l - 1);
    if k == 0 {
        return None;
    }
    let on_gpu = unified_gpu_bytes(e1, k);
    let host = offload_host_bytes(e1, k);
    let pool = on_gpu.saturating_add(host);
    if pool > job.ram {
        return None;
    }
    let (speed, backend) = job.speed_as(e1, k, SplitStyle::CpuLayers);
    Some(Placement {
        offload_style: Some(OffloadStyle::Layers),
        notes: vec![Note::UnifiedOffload {
            gpu: k,
            layers: l,
            gpu_bytes: on_gpu,
            pool,
            usable: job.ram,
        }],
        // One pool: what RAM holds is both parts (the GPU's lives in the same memory).
        ..Placement::new(
            Verdict::Offload,
            k,
            pool,
            job.ram.signed_sub(pool),
            Run::Inference { speed, backend },
        )
    })
}

/// What the GPU side of a unified split holds: its fixed costs and `k` whole layers with their
/// KV cache.
pub fn unified_gpu_bytes(
    e1: &crate::core::estimate::Estimate,
    k: u64,
) -> crate::core::units::Bytes {
    e1.workload
        .fixed_per_device
        .saturating_add(per_layer_bytes(e1).saturating_mul(k))
}

/// The other way of running the RAM layers.
pub fn other(style: SplitStyle) -> SplitStyle {
    match style {
        SplitStyle::CpuLayers => SplitStyle::Streaming,
        SplitStyle::Streaming => SplitStyle::CpuLayers,
    }
}
