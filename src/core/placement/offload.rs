//! The offload tiers: as many whole layers as fit on the discrete GPU(s), the rest in RAM — run
//! by the CPU (llama.cpp `-ngl k`) or streamed over PCIe every step (accelerate
//! `device_map="auto"`, vLLM `--cpu-offload-gb`). Per-GPU fixed costs (overhead, workspace) stay
//! on each GPU; llama.cpp splits the layers across the GPUs.

use super::capacity::{layers_that_fit, offload_host_bytes};
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

/// The other way of running the RAM layers.
pub fn other(style: SplitStyle) -> SplitStyle {
    match style {
        SplitStyle::CpuLayers => SplitStyle::Streaming,
        SplitStyle::Streaming => SplitStyle::CpuLayers,
    }
}
