//! The user's own split (`--gpu-layers N`, llama.cpp `-ngl N`; `--n-cpu-moe N`): the fit answers
//! for that placement instead of searching for one — memory per device, speed — and, when it
//! does not fit, says by how much (verdict `None`). Inference only; training has no layer split.

use super::capacity::{layers_that_fit, offload_host_bytes};
use super::note::Note;
use super::offload::unified_gpu_bytes;
use super::{Job, Placement, Run, cpu, experts, gpu, tensor_split};
use crate::core::fit::{OffloadStyle, Verdict};
use crate::core::scenario::{Runtime, SplitStyle};

/// The asked split's placement; `None` when nothing is asked (or the scenario trains).
pub fn place(job: &Job) -> Option<Placement> {
    let asked = &job.s.launch;
    // llama.cpp's flags (the generic runtime is modelled on it); vLLM and transformers place
    // weights their own way.
    if job.training() || !matches!(job.s.runtime, Runtime::LlamaCpp | Runtime::Generic) {
        return None;
    }
    if let Some(n) = asked.n_cpu_moe {
        return Some(experts_at(job, n));
    }
    let layers = job.layers.max(1);
    // `--tensor-split` alone: every layer, split as asked (llama.cpp's default -ngl is all).
    let split = !asked.tensor_split.is_empty();
    let k = match asked.gpu_layers {
        Some(k) => k,
        None if split => layers,
        None => return None,
    };
    if split && k > 0 {
        match tensor_split::place(job, k, &asked.tensor_split) {
            Some(mut p) => {
                if let Some(n) = asked.gpu_layers {
                    p.notes.insert(
                        0,
                        Note::AskedGpuLayers {
                            asked: n,
                            placed: p.gpu_layers,
                            layers,
                        },
                    );
                }
                return Some(p);
            }
            // One GPU (or unified memory): nothing to split; the fit searches as usual.
            None if asked.gpu_layers.is_none() => return None,
            None => {}
        }
    }
    let mut p = if job.gpus.is_none() || k == 0 {
        cpu::from_ram(job).unwrap_or_else(|| short(job, 0))
    } else if k >= layers {
        gpu::whole_model(job).unwrap_or_else(|| short(job, layers))
    } else {
        layers_at(job, k)
    };
    p.notes.insert(
        0,
        Note::AskedGpuLayers {
            asked: k,
            placed: p.gpu_layers,
            layers,
        },
    );
    Some(p)
}

/// `k` of the layers on the GPU(s), the rest run by the CPU (llama.cpp `-ngl k`); on unified
/// memory from the same pool.
fn layers_at(job: &Job, k: u64) -> Placement {
    let Some(g) = job.gpus.as_ref() else {
        return short(job, 0);
    };
    let e1 = job.one_gpu();
    let l = e1.workload.layers.max(1);
    let host = offload_host_bytes(e1, k);
    let gpu_bytes = unified_gpu_bytes(e1, k.div_ceil(g.count.max(1)));
    let (gpu_ok, ram_need) = if g.unified {
        (gpu_bytes <= g.capacity, gpu_bytes.saturating_add(host))
    } else {
        (layers_that_fit(e1, g.capacity, g.count) >= k, host)
    };
    let headroom = g
        .capacity
        .signed_sub(gpu_bytes)
        .min(job.ram.signed_sub(ram_need));
    if !gpu_ok || ram_need > job.ram {
        let mut p = Placement::new(Verdict::None, k, ram_need, headroom, Run::Nothing);
        p.notes.push(Note::AskedSplitShort {
            gpu_need: gpu_bytes,
            gpu_usable: g.capacity,
            ram_need,
            ram_usable: job.ram,
        });
        return p;
    }
    let (speed, backend) = job.speed_as(e1, k, SplitStyle::CpuLayers);
    Placement {
        offload_style: Some(OffloadStyle::Layers),
        notes: vec![Note::LayerOffload {
            gpu: k,
            layers: l,
            streamed: false,
        }],
        ..Placement::new(
            Verdict::Offload,
            k,
            ram_need,
            headroom,
            Run::Inference { speed, backend },
        )
    }
}

/// Every layer on the GPU(s) but the routed experts of layers `0 … n − 1` (llama.cpp `-ngl 99
/// --n-cpu-moe n`); without routed experts or a discrete GPU, the whole model as usual.
fn experts_at(job: &Job, n: u64) -> Placement {
    let p = experts::offload_at_asked(job, n);
    let mut p = p.unwrap_or_else(|| {
        gpu::whole_model(job)
            .or_else(|| cpu::from_ram(job))
            .unwrap_or_else(|| short(job, 0))
    });
    p.notes.insert(0, Note::AskedCpuMoe { asked: n });
    p
}

/// The asked split does not fit: how far the GPU's (or RAM's) memory is short.
fn short(job: &Job, k: u64) -> Placement {
    match job.gpus.as_ref() {
        Some(g) if k > 0 => {
            let mut p = Placement::new(
                Verdict::None,
                k,
                g.host_need,
                g.capacity
                    .signed_sub(g.need)
                    .min(job.ram.signed_sub(g.host_need)),
                Run::Nothing,
            );
            p.notes.push(Note::AskedSplitShort {
                gpu_need: g.need,
                gpu_usable: g.capacity,
                ram_need: g.host_need,
                ram_usable: job.ram,
            });
            p
        }
        _ => {
            let need = job.cpu_total;
            let mut p = Placement::new(
                Verdict::None,
                0,
                need,
                job.ram.signed_sub(need),
                Run::Nothing,
            );
            p.notes.push(Note::HostRamShort {
                need,
                usable: job.ram,
            });
            p
        }
    }
}
