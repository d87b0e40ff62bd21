//! The runtime's fixed reserve on each device: CUDA context, libraries, allocator slack, CUDA
//! graphs. These are heuristics, shown as such; `docs/memory.md` explains each figure.

use super::component::{ComponentKind, ComponentList, Provenance};
use super::framework::CUDA_CONTEXT;
use super::{Job, formula, gib};
use crate::core::format;
use crate::core::scenario::Runtime;
use crate::core::units::Bytes;

/// MLX's reserve in the GPU's share (heuristic: the `mlx.metallib` kernels, command buffers and
/// the allocator's rounding of every buffer to whole pages, `MetalAllocator::malloc`).
const MLX_GPU_RESERVE_MIB: u64 = 256;
/// The mlx-lm process's ordinary memory (heuristic).
const MLX_HOST_RESERVE_MIB: u64 = 512;

/// Place the runtime overhead (per device).
pub(super) fn place(job: &Job, list: &mut ComponentList, notes: &mut Vec<String>) {
    let (s, explain, cpu_only) = (job.s, job.explain, job.cpu_only);
    if job.training && !cpu_only && s.overhead_override.is_none() {
        return training_reserve(job, list);
    }
    let (reserve, reserve_text) = match (s.overhead_override, cpu_only, s.runtime) {
        (Some(o), _, _) => (o, "set by you".to_string()),
        (None, true, _) => (Bytes::mib(256), "runtime process and libraries in RAM ≈ 256 MiB (heuristic)".to_string()),
        (None, false, Runtime::LlamaCpp) => (
            Bytes::mib(250),
            "CUDA context and ggml backend ≈ 250 MiB (gguf-parser's --platform-footprint default; heuristic)".to_string(),
        ),
        (None, false, Runtime::Vllm) => (
            Bytes::mib(1024),
            "CUDA context, NCCL and PyTorch ≈ 512 MiB + CUDA graphs ≈ 512 MiB (vLLM logs \"Graph capturing finished … took ~0.5 GiB\"; heuristic)".to_string(),
        ),
        (None, false, Runtime::Transformers) => (
            Bytes::mib(768),
            "CUDA context + cuBLAS workspace ≈ 512 MiB + PyTorch caching-allocator slack ≈ 256 MiB (heuristic)".to_string(),
        ),
        (None, false, Runtime::Mlx) => (
            Bytes::mib(MLX_GPU_RESERVE_MIB),
            "MLX's Metal kernels library, command buffers and allocator slack ≈ 256 MiB (heuristic)".to_string(),
        ),
        (None, false, Runtime::Generic) => (Bytes::mib(512), "CUDA context and runtime ≈ 512 MiB (the 0.3–0.5 GiB CUDA context plus cuBLAS workspace; heuristic)".to_string()),
    };
    list.gpu(
        ComponentKind::Overhead,
        "Runtime overhead",
        reserve,
        Provenance::Heuristic,
        formula!(
            explain,
            "{reserve_text}{}",
            if cpu_only {
                ", in host RAM"
            } else {
                ", per GPU"
            }
        ),
    );
    if s.runtime == Runtime::Mlx && !cpu_only {
        // Python, mlx, mlx-lm and the tokenizer live in ordinary (not wired) memory.
        list.host(
            ComponentKind::Overhead,
            "Python process (mlx-lm)",
            Bytes::mib(MLX_HOST_RESERVE_MIB),
            Provenance::Heuristic,
            formula!(
                explain,
                "Python interpreter, mlx, mlx-lm and the tokenizer ≈ 512 MiB of ordinary RAM, outside the GPU's wired share (heuristic)"
            ),
        );
    }
    if s.runtime == Runtime::Vllm && !cpu_only {
        notes.push(formula!(explain,
            "vLLM takes {} of each GPU's memory (--gpu-memory-utilization) and fills what is left after weights, activations and CUDA graphs with KV blocks.",
            format::percent(s.gpu_memory_utilization)
        ));
    }
}

/// A training step on GPUs: the CUDA context, and what PyTorch's caching allocator reserves
/// beyond the allocated peak. The components before these sum to the allocated peak
/// (`torch.cuda.max_memory_allocated`); with these, to what `nvidia-smi` shows.
fn training_reserve(job: &Job, list: &mut ComponentList) {
    use ComponentKind::*;
    // Everything placed so far but the reserve, as `Estimate::peak_allocated` counts it.
    let allocated = list.per_gpu_where(|k| k != Overhead);
    let fraction = job.framework.allocator_reserve;
    let reserve = allocated.scale(fraction);
    list.gpu(
        Overhead,
        "CUDA context",
        CUDA_CONTEXT,
        Provenance::Heuristic,
        formula!(
            job.explain,
            "CUDA context and cuBLAS/cuDNN handles ≈ 512 MiB, outside the allocator (heuristic), per GPU"
        ),
    );
    list.gpu(
        Overhead,
        "Caching-allocator reserve",
        reserve,
        Provenance::Heuristic,
        formula!(
            job.explain,
            "{} of the allocated peak {} held as cached blocks ({}; heuristic), per GPU",
            format::percent(fraction),
            gib(allocated),
            job.framework.allocator_text
        ),
    );
}
