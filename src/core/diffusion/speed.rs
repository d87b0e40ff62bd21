//! Seconds per image and the fit of an image pipeline on each machine.
//!
//! One pipeline call = text encoding + steps × one denoiser step + the VAE decode + what the
//! placement moves over the host link:
//!
//! - each phase's FLOPs (`shapes.rs`, × its samples: the denoiser's batch doubles under
//!   classifier-free guidance) ÷ the machine's dense GEMM rate — the speed model's unquantised
//!   prefill rate (`core::speed::dense_gemm_rate`): the transformers profile for Diffusers
//!   (PyTorch eager) on CUDA/ROCm, llama.cpp's profile for stable-diffusion.cpp (ggml), Metal's
//!   on Apple, the CPU's SIMD rate on the CPU path. Weights stored in FP8, INT8, NF4 or a GGUF
//!   type are dequantised and multiplied in 16-bit: they save memory, not time (Diffusers'
//!   quantization benchmark on an H100 shows NF4 and GGUF Q8_0 no faster than BF16);
//! - without memory-efficient attention, every attention layer writes its score matrix and
//!   reads it back ([`SCORE_PASSES`] passes at the GPU's achievable bandwidth);
//! - an FP16 VAE that Diffusers upcasts (SDXL's `force_upcast`) decodes at the FP32 rate;
//! - model offload moves every component in once per call, sequential offload the whole
//!   denoiser every step, at the host link's rate (`core::speed::transfer_seconds`).

use super::memory::{ImageEstimate, cpu_bytes, estimate};
use super::{ImageInputs, ImageRuntime, PipelineOffload};
use crate::core::catalog::{Accelerator, Catalog, Machine};
use crate::core::fit::FitSettings;
use crate::core::placement::capacity::{
    gpu_capacity, gpus_used, host_link, is_unified, ram_capacity,
};
use crate::core::placement::cost::hourly_usd;
use crate::core::precision::WeightPrecision;
use crate::core::scenario::{Runtime, Scenario};
use crate::core::speed::{
    CpuDevice, GpuDevice, Profile, backend_for, cpu_dense_rate, dense_gemm_rate, transfer_seconds,
};
use crate::core::units::Bytes;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Memory passes over an attention score matrix that is stored: `QKᵀ` written, softmax read
/// and written, read again by `· V` (PyTorch's unfused attention; SDPA keeps them on chip).
pub const SCORE_PASSES: f64 = 4.0;

/// Time of one pipeline call on one machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ImageSpeed {
    pub text_s: f64,
    /// One denoising step (all samples of the call).
    pub step_s: f64,
    pub denoise_s: f64,
    pub vae_s: f64,
    /// Host-link transfers of the placement.
    pub transfer_s: f64,
    pub call_s: f64,
    pub seconds_per_image: f64,
    pub images_per_hour: f64,
    /// The dense rate the denoiser ran at, FLOP/s.
    pub flops_per_s: f64,
}

/// Where a scenario runs on a machine.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageVerdict {
    /// On the GPU, with this placement.
    Gpu(PipelineOffload),
    /// Everything in RAM, run by the CPU.
    Cpu,
    DoesNotFit,
}

impl ImageVerdict {
    pub fn label(self) -> &'static str {
        match self {
            ImageVerdict::Gpu(PipelineOffload::Auto | PipelineOffload::None) => "GPU",
            ImageVerdict::Gpu(PipelineOffload::Model) => "GPU, model offload",
            ImageVerdict::Gpu(PipelineOffload::Sequential) => "GPU, sequential offload",
            ImageVerdict::Gpu(PipelineOffload::ClipOnCpu) => "GPU, text encoders on CPU",
            ImageVerdict::Cpu => "CPU only",
            ImageVerdict::DoesNotFit => "does not fit",
        }
    }
    pub fn cli_name(self) -> &'static str {
        match self {
            ImageVerdict::Gpu(PipelineOffload::Auto | PipelineOffload::None) => "gpu",
            ImageVerdict::Gpu(PipelineOffload::Model) => "gpu_model_offload",
            ImageVerdict::Gpu(PipelineOffload::Sequential) => "gpu_sequential_offload",
            ImageVerdict::Gpu(PipelineOffload::ClipOnCpu) => "gpu_clip_on_cpu",
            ImageVerdict::Cpu => "cpu",
            ImageVerdict::DoesNotFit => "does_not_fit",
        }
    }
    pub fn runs(self) -> bool {
        self != ImageVerdict::DoesNotFit
    }
}

/// The scenario on one machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ImageFit {
    pub machine: Arc<str>,
    pub name: Arc<str>,
    pub verdict: ImageVerdict,
    /// Usable memory of one GPU (zero without one).
    pub gpu_capacity: Bytes,
    /// What the chosen placement needs on the GPU (or, when nothing fits, the asked or the
    /// smallest GPU placement).
    pub gpu_needed: Bytes,
    /// RAM the placement needs for one pipeline.
    pub ram_needed: Bytes,
    /// RAM of every pipeline the machine runs at once ([`ImageFit::pipelines`] × the offloaded
    /// weights each keeps in RAM).
    pub machine_ram_needed: Bytes,
    pub ram_capacity: Bytes,
    pub speed: Option<ImageSpeed>,
    pub usd_per_hour: Option<f64>,
    /// Pipelines the machine runs at once: one per discrete GPU, as many as the RAM holds
    /// under offload ([`pipelines_on`]).
    pub pipelines: u64,
    /// Images per hour of the whole machine (every pipeline).
    pub machine_images_per_hour: f64,
    /// The machine's $/hour over its images per hour.
    pub usd_per_1000_images: Option<f64>,
}

/// The profile of the runtime on `acc` (`None`: the CPU): Diffusers is PyTorch eager (the
/// transformers profile on CUDA/ROCm), stable-diffusion.cpp is ggml (llama.cpp's).
fn profile<'a>(i: &ImageInputs, acc: Option<&Accelerator>, st: &'a FitSettings) -> &'a Profile {
    let runtime = match i.runtime() {
        ImageRuntime::Diffusers => Runtime::Transformers,
        ImageRuntime::StableDiffusionCpp => Runtime::LlamaCpp,
    };
    st.speed.profiles.get(backend_for(runtime, acc))
}

/// A phase's time: its FLOPs at `rate`, or the runtime's dispatch of its blocks one after
/// another (the profile's `layer_overhead_us` per block, as per layer of a language model),
/// whichever is longer — the GPU runs behind the launching thread (`core/speed/step.rs`).
fn phase_s(flops: f64, rate: f64, blocks: u64, p: &Profile) -> f64 {
    (flops / rate).max(blocks as f64 * p.layer_overhead_us * 1e-6)
}

/// The dense rate on the GPU for this runtime (FP32 for an FP32 run or an upcast VAE).
fn gpu_rate(i: &ImageInputs, acc: &Accelerator, st: &FitSettings, fp32: bool) -> f64 {
    let runtime = match i.runtime() {
        ImageRuntime::Diffusers => Runtime::Transformers,
        ImageRuntime::StableDiffusionCpp => Runtime::LlamaCpp,
    };
    let p = st.speed.profiles.get(backend_for(runtime, Some(acc)));
    dense_gemm_rate(p, &GpuDevice::from_accelerator(acc), fp32)
}

/// Seconds for one call of `i` under estimate `e` on machine `m` (GPU `acc`; `None` or the CPU
/// path: the CPU runs it).
pub fn seconds_per_image(
    i: &ImageInputs,
    e: &ImageEstimate,
    m: &Machine,
    acc: Option<&Accelerator>,
    st: &FitSettings,
) -> ImageSpeed {
    let fp32 = i.weights == WeightPrecision::Fp32;
    let vae_fp32 = fp32
        || (i.pipeline.vae_force_upcast
            && i.weights == WeightPrecision::Fp16
            && i.runtime() == ImageRuntime::Diffusers);
    let cpu = CpuDevice::from_machine(m, acc, &st.speed);
    let cpu_rate = cpu_dense_rate(
        st.speed.profiles.get(backend_for(Runtime::LlamaCpp, None)),
        &cpu,
    );
    let (rate, vae_rate, bw) = match acc {
        Some(a) => {
            let g = GpuDevice::from_accelerator(a);
            let p = st
                .speed
                .profiles
                .get(backend_for(Runtime::Transformers, Some(a)));
            (
                gpu_rate(i, a, st, fp32),
                gpu_rate(i, a, st, vae_fp32),
                g.achievable_bps(p),
            )
        }
        None => (
            cpu_rate,
            cpu_rate,
            cpu.bandwidth.0 * 1e9 * st.speed.profiles.cpu.bandwidth_efficiency,
        ),
    };
    let text_rate = if e.placement == PipelineOffload::ClipOnCpu {
        cpu_rate
    } else {
        rate
    };
    let act = if fp32 { 4.0 } else { 2.0 };
    let samples = i.denoiser_batch() as f64;
    let scores = if i.memory_efficient_attention {
        0.0
    } else {
        e.denoiser.score_traffic_elements * samples * act * SCORE_PASSES / bw
    };
    let gp = profile(i, acc, st);
    let tp = if e.placement == PipelineOffload::ClipOnCpu {
        profile(i, None, st)
    } else {
        gp
    };
    let step_s = phase_s(e.denoiser.flops * samples, rate, e.denoiser.blocks, gp) + scores;
    let text_s = phase_s(e.text.flops * samples, text_rate, e.text.blocks, tp);
    let vae_s = phase_s(
        e.decoder.flops * i.images as f64,
        vae_rate,
        e.decoder.blocks,
        gp,
    );
    let transfer_s = match acc {
        Some(a) if e.transfer_per_call.0 > 0 => {
            transfer_seconds(e.transfer_per_call, host_link(a), &st.speed)
        }
        _ => 0.0,
    };
    let denoise_s = step_s * i.steps as f64;
    let call_s = text_s + denoise_s + vae_s + transfer_s;
    let per = call_s / i.images.max(1) as f64;
    ImageSpeed {
        text_s,
        step_s,
        denoise_s,
        vae_s,
        transfer_s,
        call_s,
        seconds_per_image: per,
        images_per_hour: if per > 0.0 { 3600.0 / per } else { 0.0 },
        flops_per_s: rate,
    }
}

/// The placements tried, fastest first: the asked one alone, or (`Auto`) every one this GPU
/// and runtime offer. Offload gains nothing on unified memory (the GPU's share is the RAM).
fn placements(i: &ImageInputs, acc: Option<&Accelerator>) -> Vec<PipelineOffload> {
    match i.offload {
        PipelineOffload::Auto if is_unified(acc) => vec![PipelineOffload::None],
        PipelineOffload::Auto => match i.runtime() {
            ImageRuntime::Diffusers => vec![
                PipelineOffload::None,
                PipelineOffload::Model,
                PipelineOffload::Sequential,
            ],
            ImageRuntime::StableDiffusionCpp => vec![
                PipelineOffload::None,
                PipelineOffload::ClipOnCpu,
                PipelineOffload::Model,
            ],
        },
        asked => vec![asked],
    }
}

/// The scenario on machine `m`.
pub fn fit_machine(i: &ImageInputs, m: &Machine, cat: &Catalog, st: &FitSettings) -> ImageFit {
    let acc = m.gpu.as_deref().and_then(|g| cat.accelerator(g));
    let cap = gpu_capacity(m, acc, &Scenario::default(), st);
    let (ram, _) = ram_capacity(m, st);
    let unified = is_unified(acc);
    let mut first: Option<ImageEstimate> = None;
    let mut chosen = None;
    if acc.is_some() {
        for place in placements(i, acc) {
            let e = estimate(i, place);
            // On unified memory the GPU's share and the host's bytes come from one pool.
            let host_ok = if unified {
                e.gpu_peak + e.host <= ram
            } else {
                e.host <= ram
            };
            if e.gpu_peak <= cap && host_ok {
                chosen = Some(e);
                break;
            }
            if first.is_none() {
                first = Some(e);
            }
        }
    }
    let (verdict, e, on_gpu) = match chosen {
        Some(e) => (ImageVerdict::Gpu(e.placement), e, true),
        None => {
            let e = estimate(i, PipelineOffload::None);
            if i.offload == PipelineOffload::Auto && cpu_bytes(&e) <= ram {
                (ImageVerdict::Cpu, e, false)
            } else {
                (ImageVerdict::DoesNotFit, first.unwrap_or(e), false)
            }
        }
    };
    let speed = verdict
        .runs()
        .then(|| seconds_per_image(i, &e, m, if on_gpu { acc } else { None }, st));
    let hourly = hourly_usd(m, acc, st);
    let pipelines = if on_gpu {
        pipelines_on(gpus_used(m, acc), e.host, ram)
    } else {
        1
    };
    let machine_images_per_hour = speed
        .as_ref()
        .map_or(0.0, |s| s.images_per_hour * pipelines as f64);
    let usd_per_1000_images = match (&speed, hourly) {
        (Some(s), Some(h)) if s.seconds_per_image > 0.0 => {
            Some(h * s.seconds_per_image * 1000.0 / 3600.0 / pipelines as f64)
        }
        _ => None,
    };
    ImageFit {
        machine: m.id.clone(),
        name: m.name.clone(),
        verdict,
        gpu_capacity: cap,
        gpu_needed: if verdict == ImageVerdict::Cpu {
            Bytes::ZERO
        } else {
            e.gpu_peak
        },
        ram_needed: if verdict == ImageVerdict::Cpu {
            cpu_bytes(&e)
        } else {
            e.host
        },
        machine_ram_needed: if verdict == ImageVerdict::Cpu {
            cpu_bytes(&e)
        } else {
            Bytes(e.host.0.saturating_mul(pipelines))
        },
        ram_capacity: ram,
        speed,
        usd_per_hour: hourly,
        pipelines,
        machine_images_per_hour,

        usd_per_1000_images,
    }
}

/// One way to run the pipeline on a machine, fitting or not.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlacementCost {
    /// `Gpu(placement)`, or `Cpu` for everything in RAM run by the CPU.
    pub verdict: ImageVerdict,
    pub gpu_needed: Bytes,
    pub ram_needed: Bytes,
    /// Whether the machine holds it (one GPU's usable memory and the RAM).
    pub fits: bool,
    pub speed: ImageSpeed,
}

/// What offload costs per image on machine `m`: every placement its runtime offers on the GPU
/// (the order `auto` tries them) and then the CPU path, each with its memory and its time
/// whether it fits or not — the image counterpart of the CPU-vs-GPU curves.
pub fn placement_costs(
    i: &ImageInputs,
    m: &Machine,
    cat: &Catalog,
    st: &FitSettings,
) -> Vec<PlacementCost> {
    let acc = m.gpu.as_deref().and_then(|g| cat.accelerator(g));
    let cap = gpu_capacity(m, acc, &Scenario::default(), st);
    let (ram, _) = ram_capacity(m, st);
    let unified = is_unified(acc);
    let auto = ImageInputs {
        offload: PipelineOffload::Auto,
        ..i.clone()
    };
    let mut out = Vec::new();
    if acc.is_some() {
        for place in placements(&auto, acc) {
            let e = estimate(i, place);
            let host_ok = if unified {
                e.gpu_peak + e.host <= ram
            } else {
                e.host <= ram
            };
            out.push(PlacementCost {
                verdict: ImageVerdict::Gpu(place),
                gpu_needed: e.gpu_peak,
                ram_needed: e.host,
                fits: e.gpu_peak <= cap && host_ok,
                speed: seconds_per_image(i, &e, m, acc, st),
            });
        }
    }
    let e = estimate(i, PipelineOffload::None);
    out.push(PlacementCost {
        verdict: ImageVerdict::Cpu,
        gpu_needed: Bytes::ZERO,
        ram_needed: cpu_bytes(&e),
        fits: cpu_bytes(&e) <= ram,
        speed: seconds_per_image(i, &e, m, None, st),
    });
    out
}

/// Pipelines a machine with `gpus` GPUs runs at once. Diffusers has no tensor or pipeline
/// parallelism for these pipelines (`DiffusionPipeline.to` moves every component to one
/// device), so each GPU runs a pipeline of its own on its own images, as its multi-GPU guide
/// does with one process per GPU (accelerate `PartialState.split_between_processes`;
/// stable-diffusion.cpp likewise runs on one backend device). Each such process keeps its own
/// copy of the offloaded weights in RAM (`enable_model_cpu_offload` holds every component on
/// the CPU between calls), so under offload only as many pipelines run as `ram` holds copies of
/// `host_per_pipeline`; with everything on the GPU, one per GPU.
pub fn pipelines_on(gpus: u64, host_per_pipeline: Bytes, ram: Bytes) -> u64 {
    let gpus = gpus.max(1);
    if host_per_pipeline.0 == 0 {
        return gpus;
    }
    (ram.0 / host_per_pipeline.0).clamp(1, gpus)
}

/// Every machine, fastest first (those that run before those that do not).
pub fn fit_all(
    i: &ImageInputs,
    machines: &[&Machine],
    cat: &Catalog,
    st: &FitSettings,
) -> Vec<ImageFit> {
    let mut v: Vec<ImageFit> = machines
        .iter()
        .map(|m| fit_machine(i, m, cat, st))
        .collect();
    let key = |f: &ImageFit| {
        f.speed
            .as_ref()
            .map_or(f64::INFINITY, |s| s.seconds_per_image)
    };
    v.sort_by(|a, b| key(a).total_cmp(&key(b)));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::diffusion::presets::find;

    /// FLUX.1-dev at 1024², one step, by hand: 4096 image + 512 text tokens = 4608; each of the
    /// 57 blocks runs 12·d² weights per token (d = 3072) and 4·N²·d of attention:
    /// 57 × (2 × 12 × 3072² × 4608 + 4 × 4608² × 3072) = 7.435e13 FLOPs (the modulation and
    /// embedding layers add ~0.1 %). No guidance doubling.
    #[test]
    fn flux_step_flops_by_hand() {
        let p = find("flux.1-dev").unwrap();
        let w = p.denoiser_walk(1024, 1024);
        let d = 3072.0_f64;
        let n = 4608.0_f64;
        let hand = 57.0 * (2.0 * 12.0 * d * d * n + 4.0 * n * n * d);
        assert!(
            (w.flops / hand - 1.0).abs() < 0.003,
            "{} vs {hand}",
            w.flops
        );
        let i = ImageInputs::new(p);
        assert_eq!(i.denoiser_batch(), 1);
    }

    /// One pipeline per GPU, as far as the RAM holds each pipeline's offloaded weights.
    #[test]
    fn each_gpu_runs_a_pipeline_while_the_ram_holds_its_copy() {
        let gib = Bytes::gib;
        // Everything on the GPU: nothing in RAM per pipeline, 8 GPUs → 8 pipelines.
        assert_eq!(pipelines_on(8, Bytes::ZERO, gib(64)), 8);
        // FLUX.1-dev under model offload keeps its 31.4 GiB of weights in RAM per process:
        // 64 GiB holds 2 copies (64 / 31.4 = 2.04), so 2 of the 8 GPUs run.
        let flux = estimate(
            &ImageInputs::new(find("flux.1-dev").unwrap()),
            PipelineOffload::Model,
        );
        assert_eq!(pipelines_on(8, flux.host, gib(64)), 2);
        assert_eq!(pipelines_on(8, flux.host, gib(2048)), 8);
        // Less RAM than one copy still reports the one pipeline the fit found room for.
        assert_eq!(pipelines_on(2, gib(40), gib(16)), 1);
        assert_eq!(pipelines_on(0, Bytes::ZERO, Bytes::ZERO), 1);
    }
}
