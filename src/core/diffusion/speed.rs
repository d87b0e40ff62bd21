//! Seconds per image and the fit of an image pipeline on each machine.
//!
//! One pipeline call = text encoding + steps × one denoiser step + the VAE decode + what the
//! placement moves over the host link. Each phase is timed from the kernels it runs on the
//! device (docs/diffusion.md "Speed"):
//!
//! - the Linear GEMMs, the convolutions and the attention products (`shapes.rs` splits a
//!   walk's FLOPs) at the tensor rate of their precision — FP32 matmuls at the FP32 vector rate
//!   unless TF32 is allowed, FP32 convolutions at the TF32 rate (cuDNN's default) — times the
//!   GEMM and FlashAttention efficiencies the training model uses (`cluster::train`);
//! - the element-wise and normalisation work at the GPU's bandwidth: every operation's own pass
//!   in eager PyTorch and stable-diffusion.cpp, one pass per fused chain under torch.compile,
//!   TensorRT and Core ML (`Walk::eager_elements` / `fused_elements`);
//! - the launches: a fixed GPU cost per kernel, and in eager PyTorch the host's dispatch of
//!   every operation ([`EAGER_OP_US`]), which the GPU hides only while it has more work queued;
//! - the weight format's own kernels per forward: Diffusers' layerwise FP8 casting, the
//!   bitsandbytes NF4 dequantisation and LLM.int8 decomposition, Diffusers' GGUF dequantisation
//!   in PyTorch ops, or FP8/INT8 matmuls on the tensor cores that have them ([`weight_path`]);
//! - without memory-efficient attention, every score matrix written and read back
//!   ([`SCORE_PASSES`]);
//! - offload copies from pageable host memory, synchronous, through the driver's staging buffer
//!   ([`pageable_bps`]), and accelerate's per-tensor hooks under sequential offload.

use super::memory::{ImageEstimate, cpu_bytes, estimate};
use super::shapes::{TILE_BUCKETS, UNARY_PASSES, Walk, waves};
use super::{ImageInputs, ImageRuntime, PipelineOffload};
use crate::core::catalog::{Accelerator, Catalog, Machine, MemoryKind, Vendor};
use crate::core::cluster::train::attention_efficiency;
use crate::core::fit::FitSettings;
use crate::core::placement::capacity::{
    gpu_capacity, gpus_used, host_link, is_unified, ram_capacity,
};
use crate::core::placement::cost::hourly_usd;
use crate::core::precision::WeightPrecision;
use crate::core::scenario::{Runtime, Scenario};
use crate::core::speed::{
    Backend, CpuDevice, GpuDevice, TF32_SHARE, backend_for, cpu_dense_rate, dense_gemm_rate,
    fp8_tensor_cores,
};
use crate::core::units::{Bytes, GbPerSec};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Memory passes over an attention score matrix that is stored: `QKᵀ` written, softmax read
/// and written, read again by `· V` (PyTorch's unfused attention; SDPA keeps them on chip).
pub const SCORE_PASSES: f64 = 4.0;

/// Host time eager PyTorch spends on one operation (Python, the dispatcher, the launch): the
/// transformers profile's 0.86 ms of dispatch per decoder layer (Qwen2.5-0.5B generating on
/// an A100, `core/speed/profile.rs`) over the ~43 kernels an eager Qwen2 decoder layer
/// launches (transformers `models/qwen2/modeling_qwen2.py`: two RMSNorms of 8 operations,
/// q/k/v/o, 10 for the rotary embedding, the cache's two concatenations and `repeat_kv`
/// copies, SDPA, the gated MLP's 5, two residual adds).
pub const EAGER_OP_US: f64 = 20.0;

/// Kernel launches a llama.cpp "layer" stands for in the speed profiles: their
/// `layer_overhead_us` is "~20 graph nodes per layer" (CUDA: 31 µs, ~1.5 µs a node; Metal:
/// 156 µs, ~8 µs a node, each encoded with a barrier). One node's cost is what a kernel costs
/// the GPU beyond its work when kernels run back to back.
pub const NODES_PER_LAYER: f64 = 20.0;

/// Host-side operations accelerate's `AlignDevicesHook` runs per weight tensor under
/// sequential offload: `set_module_tensor_to_device` to the GPU before the module's forward
/// (checks, the copy, a new `Parameter`) and back to the meta device after it.
pub const HOOK_OPS_PER_TENSOR: f64 = 5.0;

/// Rate of the host-side copy into the driver's pinned staging buffer, GB/s [heuristic]: a
/// copy from pageable memory (what `module.to("cuda")` and accelerate's hooks do: PyTorch
/// tensors on the CPU are not pinned) is synchronous and staged by the CPU before the DMA
/// (CUDA Runtime API, "API synchronization behavior": "For transfers from pageable host memory
/// to device memory, a stream sync is performed before the copy is initiated"; CUDA C++ Best
/// Practices Guide, "Pinned Memory"). Of the order of one core's memcpy rate.
pub const HOST_STAGING_GBPS: f64 = 10.0;

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
    /// The dense rate the denoiser's Linear layers ran at, FLOP/s.
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

/// What one device does per unit of work for a runtime: FLOP/s of the Linear GEMMs, the
/// convolutions and the attention products, bytes/s of the element-wise passes, the GPU cost
/// of a kernel launch and the host's cost of dispatching one operation (0 when the step is
/// one graph), bytes per activation element, and whether element-wise chains are fused.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rates {
    pub linear: f64,
    pub conv: f64,
    pub attn: f64,
    /// The Linear rate of an FP8 or INT8 matmul where the tensor cores run one (0: none).
    pub low_bit: f64,
    pub bandwidth: f64,
    pub node_s: f64,
    pub op_s: f64,
    /// Host time per block (ResNet or transformer block) of Python module code, the
    /// transformers profile's per-layer dispatch (0 when the step is one graph).
    pub block_s: f64,
    pub act_bytes: f64,
    pub fused: bool,
    /// Operations run one after another on the host's thread (the CPU device): no overlap.
    pub serial: bool,
    /// Streaming multiprocessors the GEMM tiles spread over (0: no wave quantisation — the
    /// CPU, Apple GPUs).
    pub sms: f64,
}

/// Whether the part multiplies TF32 on its tensor cores (NVIDIA Ampere and later; AMD CDNA3);
/// Volta (V100) and Turing (T4, RTX 20) have FP16 tensor cores only.
fn tf32_tensor_cores(a: &Accelerator) -> bool {
    let id = a.id.to_ascii_lowercase();
    match a.vendor {
        Vendor::Nvidia => !(id.starts_with("v100") || id.starts_with("t4")),
        Vendor::Amd => id.starts_with("mi3"),
        _ => false,
    }
}

/// The rates of runtime `r` on GPU `a` for inputs `i`.
fn gpu_rates(i: &ImageInputs, a: &Accelerator, st: &FitSettings) -> Rates {
    let g = GpuDevice::from_accelerator(a);
    let fp32 = i.weights == WeightPrecision::Fp32;
    let apple = a.vendor == Vendor::Apple;
    // Core ML runs on Apple parts only: elsewhere the pipeline is sized as eager Diffusers.
    let r = match i.runtime() {
        ImageRuntime::CoreMl if !apple => ImageRuntime::Diffusers,
        r => r,
    };
    let tensor_pytorch = matches!(a.vendor, Vendor::Nvidia | Vendor::Amd)
        && a.memory_kind == MemoryKind::Discrete
        && !matches!(r, ImageRuntime::StableDiffusionCpp | ImageRuntime::CoreMl);
    let node = |b: Backend| st.speed.profiles.get(b).layer_overhead_us * 1e-6 / NODES_PER_LAYER;
    if tensor_pytorch {
        let p = st
            .speed
            .profiles
            .get(backend_for(Runtime::Transformers, Some(a)));
        let (ge, ae) = (p.f16_gemm_efficiency, attention_efficiency(a));
        let half = a.fp16_tflops * 1e12;
        let vector = g.vector_tflops * 1e12;
        let tf32 = if tf32_tensor_cores(a) {
            half * TF32_SHARE
        } else {
            vector
        };
        let mm32 = if i.tf32 { tf32 } else { vector };
        let (linear, conv, attn) = if fp32 {
            (mm32 * ge, tf32 * ge, mm32 * ae)
        } else {
            (half * ge, half * ge, half * ae)
        };
        let low_bit = if fp8_tensor_cores(a) || i.weights == WeightPrecision::Int8 {
            g.int8_tops * 1e12 * ge
        } else {
            0.0
        };
        return Rates {
            linear,
            conv,
            attn,
            low_bit,
            bandwidth: g.achievable_bps(p),
            node_s: node(Backend::Cuda),
            op_s: if r.fused() { 0.0 } else { EAGER_OP_US * 1e-6 },
            block_s: if r.fused() {
                0.0
            } else {
                p.layer_overhead_us * 1e-6
            },
            act_bytes: if fp32 { 4.0 } else { 2.0 },
            fused: r.fused(),
            serial: false,
            sms: a.compute_units.unwrap_or(0) as f64,
        };
    }
    // stable-diffusion.cpp (ggml, F32 activations), Core ML, or PyTorch on Apple (MPS) and
    // other GPUs: the llama.cpp profile of the vendor's backend for the multiply rate.
    let b = backend_for(Runtime::LlamaCpp, Some(a));
    let p = st.speed.profiles.get(b);
    let rate = dense_gemm_rate(p, &g, fp32);
    let sdcpp = r == ImageRuntime::StableDiffusionCpp;
    let coreml = r == ImageRuntime::CoreMl && apple;
    Rates {
        linear: rate,
        conv: rate,
        attn: rate,
        low_bit: 0.0,
        bandwidth: g.achievable_bps(p),
        node_s: node(b),
        op_s: if sdcpp || coreml {
            0.0
        } else {
            EAGER_OP_US * 1e-6
        },
        block_s: if sdcpp || coreml {
            0.0
        } else {
            st.speed.profiles.transformers.layer_overhead_us * 1e-6
        },
        act_bytes: if sdcpp || fp32 { 4.0 } else { 2.0 },
        fused: coreml,
        serial: false,
        sms: if apple {
            0.0
        } else {
            a.compute_units.unwrap_or(0) as f64
        },
    }
}

/// The rates of the CPU path: ggml-cpu's (or PyTorch's) SIMD rate, the cores' bandwidth, and
/// every operation run in turn by the calling thread.
fn cpu_rates(i: &ImageInputs, m: &Machine, acc: Option<&Accelerator>, st: &FitSettings) -> Rates {
    let cpu = CpuDevice::from_machine(m, acc, &st.speed);
    let p = st.speed.profiles.get(backend_for(Runtime::LlamaCpp, None));
    let rate = cpu_dense_rate(p, &cpu);
    let sdcpp = i.runtime() == ImageRuntime::StableDiffusionCpp;
    Rates {
        linear: rate,
        conv: rate,
        attn: rate,
        low_bit: 0.0,
        bandwidth: cpu.bandwidth.0 * 1e9 * p.bandwidth_efficiency,
        node_s: p.layer_overhead_us * 1e-6 / NODES_PER_LAYER,
        op_s: if sdcpp { 0.0 } else { EAGER_OP_US * 1e-6 },
        block_s: 0.0,
        act_bytes: if sdcpp || i.weights == WeightPrecision::Fp32 {
            4.0
        } else {
            2.0
        },
        fused: false,
        serial: true,
        sms: 0.0,
    }
}

/// What a weight format adds to one forward pass of a component whose Linear layers it holds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WeightPath {
    /// Bytes moved per parameter (dequantise or cast), per forward.
    pub bytes_per_param: f64,
    /// Passes over each Linear layer's input and output activations (one sample).
    pub in_passes: f64,
    pub out_passes: f64,
    /// Kernels per Linear layer.
    pub kernels_per_linear: f64,
    /// Whether the Linear layers multiply at the FP8/INT8 tensor rate.
    pub low_bit_matmul: bool,
    /// Whether each Linear layer waits for the GPU (a device-to-host read): the host can no
    /// longer run ahead, so the step costs the GPU's time plus the host's.
    pub syncs: bool,
}

/// The kernels a weight format runs per forward, from the runtimes' code:
///
/// - FP8 storage under Diffusers: `enable_layerwise_casting` casts each layer's weights to the
///   compute dtype before its forward and back after it (`hooks/layerwise_casting.py`,
///   `pre_forward` / `post_forward`): 1 + 2 and 2 + 1 bytes per weight, two kernels a tensor.
///   With an FP8 matmul (`fp8_matmul`, TensorRT) on FP8 tensor cores: the FP8 rate, after the
///   input's dynamic scaling (abs-max, scale, cast).
/// - bitsandbytes NF4 (`Linear4bit`): `dequantize_4bit` to 16 bits, then the GEMM: ½ + 2 bytes.
/// - bitsandbytes 8-bit under Diffusers (LLM.int8, `autograd/_functions.py` `MatMul8bitLt`):
///   the input cast to FP16, `abs() >= threshold` and `outliers.any()` — a host read of a
///   device value, so a synchronisation every layer (`backends/cuda/ops.py`,
///   `int8_vectorwise_quant`) — the row-wise quantisation, the INT8 GEMM's INT32 output and its
///   dequantisation (`int8_mm_dequant`). Compiled, INT8 is torchao's dynamic W8A8.
/// - GGUF under Diffusers without the CUDA kernels (`quantizers/gguf/utils.py`,
///   `GGUFLinear.forward_native`): `dequantize_gguf_tensor` in PyTorch operations, then
///   `.to(compute_dtype)`: Q8_0 `d * x` (1 + 2 bytes) and the cast (2 + 2); the 4-, 5- and 6-bit
///   types unpack nibbles with shifts and masks (~15 bytes a weight) and build their shift table
///   with `torch.tensor([...], device=...)`, a synchronous host-to-device copy every layer.
/// - stable-diffusion.cpp multiplies its GGUF types in its own kernels: nothing added here.
pub fn weight_path(i: &ImageInputs, rates: &Rates) -> WeightPath {
    use WeightPrecision as W;
    let r = i.runtime();
    if r == ImageRuntime::StableDiffusionCpp || r == ImageRuntime::CoreMl {
        return WeightPath::default();
    }
    let fused = rates.fused;
    // Dynamic activation scaling of an FP8/INT8 matmul: abs-max read, scale and cast (eager:
    // three kernels; fused into the producer: one read, a 1-byte write).
    let dynamic = |fused: bool| WeightPath {
        in_passes: if fused { 1.5 } else { 1.0 + 2.0 * UNARY_PASSES },
        kernels_per_linear: if fused { 1.0 } else { 3.0 },
        low_bit_matmul: true,
        ..WeightPath::default()
    };
    match i.weights {
        W::Fp8 | W::Fp8Block => {
            let mm = rates.low_bit > 0.0 && (i.fp8_matmul || r == ImageRuntime::TensorRt);
            if mm {
                dynamic(fused)
            } else {
                WeightPath {
                    bytes_per_param: if fused { 3.0 } else { 6.0 },
                    kernels_per_linear: if fused { 1.0 } else { 4.0 },
                    ..WeightPath::default()
                }
            }
        }
        W::Int8 if fused && rates.low_bit > 0.0 => dynamic(true),
        W::Int8 => WeightPath {
            in_passes: UNARY_PASSES * 2.0 + 1.5 + 0.5 + 1.5,
            out_passes: 2.0 + 3.0,
            kernels_per_linear: 9.0,
            low_bit_matmul: rates.low_bit > 0.0,
            syncs: !fused,
            ..WeightPath::default()
        },
        W::Nf4 | W::Nf4DoubleQuant | W::Int4 | W::Nvfp4 | W::Mxfp4 => WeightPath {
            bytes_per_param: 2.6,
            kernels_per_linear: 2.0,
            ..WeightPath::default()
        },
        W::Q8_0 => WeightPath {
            bytes_per_param: 1.0625 + 2.0 + 4.0,
            kernels_per_linear: 3.0,
            ..WeightPath::default()
        },
        w if w.is_gguf() => WeightPath {
            bytes_per_param: 15.0,
            kernels_per_linear: 8.0,
            syncs: !fused,
            ..WeightPath::default()
        },
        _ => WeightPath::default(),
    }
}

/// One forward pass of a component (walk `w`) over `samples` samples, launched `calls` times,
/// holding `params` weights in the format `path`: seconds.
fn forward_s(
    w: &Walk,
    samples: f64,
    calls: f64,
    params: f64,
    path: WeightPath,
    r: &Rates,
    scores: bool,
) -> f64 {
    let linear_rate = if path.low_bit_matmul && r.low_bit > 0.0 {
        r.low_bit
    } else {
        r.linear
    };
    // Each bucket of GEMMs at the rate × the share of SMs its tiles keep busy.
    let tiled = |by: &[f64; TILE_BUCKETS], rate: f64| -> f64 {
        by.iter()
            .enumerate()
            .map(|(b, f)| {
                let busy = if r.sms > 0.0 {
                    waves(b, samples, r.sms)
                } else {
                    1.0
                };
                f * samples / (rate * busy).max(1.0)
            })
            .sum()
    };
    let compute = tiled(&w.linear_by_tiles, linear_rate)
        + tiled(&w.conv_by_tiles, r.conv)
        + w.attn_flops * samples / r.attn.max(1.0);
    let elements = if r.fused {
        w.fused_elements
    } else {
        w.eager_elements
    } * samples
        + (w.linear_in_elements * path.in_passes + w.linear_out_elements * path.out_passes)
            * samples;
    let score_elements = if scores {
        w.score_traffic_elements * samples * SCORE_PASSES
    } else {
        0.0
    };
    let bytes = (elements + score_elements) * r.act_bytes + params * path.bytes_per_param * calls;
    let kernels = (if r.fused { w.fused_kernels } else { w.kernels }
        + w.linears as f64 * path.kernels_per_linear)
        * calls;
    let gpu = compute + bytes / r.bandwidth.max(1.0) + kernels * r.node_s;
    // The host runs Python per module as well as per kernel: the transformers profile's
    // per-layer dispatch per block, or 20 µs per kernel, whichever is more.
    let host = (kernels * r.op_s).max(w.blocks as f64 * calls * r.block_s);
    if r.serial || path.syncs {
        gpu + host
    } else {
        gpu.max(host)
    }
}

/// Bytes per second of a copy from pageable host memory to `a` (or back): the host's staging
/// copy ([`HOST_STAGING_GBPS`]) and the link's DMA (`pcie_efficiency` of its rate) one after
/// the other.
pub fn pageable_bps(a: &Accelerator, st: &FitSettings) -> f64 {
    let link: GbPerSec = host_link(a);
    let dma = (link.bytes_per_sec() * st.speed.pcie_efficiency).max(1.0);
    1.0 / (1.0 / dma + 1.0 / (HOST_STAGING_GBPS * 1e9))
}

/// The rates of `i` on machine `m` (GPU `acc`; `None`: the CPU).
pub fn rates(i: &ImageInputs, m: &Machine, acc: Option<&Accelerator>, st: &FitSettings) -> Rates {
    match acc {
        Some(a) => gpu_rates(i, a, st),
        None => cpu_rates(i, m, None, st),
    }
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
    let r = rates(i, m, acc, st);
    let host_gpu = acc.map(|a| cpu_rates(i, m, Some(a), st));
    let text_r = match host_gpu {
        Some(c) if e.placement == PipelineOffload::ClipOnCpu => c,
        _ => r,
    };
    let path = weight_path(i, &r);
    let text_path = weight_path(i, &text_r);
    let scores = !i.memory_efficient_attention || i.runtime() == ImageRuntime::CoreMl;
    let samples = i.denoiser_batch() as f64;
    let d_params = e.parts.first().map_or(0.0, |p| p.params as f64);
    let step_s = forward_s(&e.denoiser, samples, 1.0, d_params, path, &r, scores);
    // The prompt, and the negative prompt under guidance, each encoded by every text encoder
    // (`encode_prompt`); quantised weights are T5's alone (the CLIP towers stay 16-bit).
    let prompts = if i.pipeline.cfg { 2.0 } else { 1.0 };
    let t5_params: f64 = i
        .pipeline
        .text_encoders
        .iter()
        .filter(|t| t.follows_weights())
        .map(|t| t.walk().params as f64)
        .sum();
    let text_s = forward_s(&e.text, 1.0, prompts, t5_params, text_path, &text_r, scores);
    // The decoder runs 16-bit (FP32 in an FP32 run or when Diffusers upcasts SDXL's VAE).
    let vae_fp32 = i.weights == WeightPrecision::Fp32
        || (i.pipeline.vae_force_upcast
            && i.weights == WeightPrecision::Fp16
            && i.runtime().is_pytorch());
    let vae_r = match acc {
        Some(a) if vae_fp32 => {
            let f32_inputs = ImageInputs {
                weights: WeightPrecision::Fp32,
                ..i.clone()
            };
            gpu_rates(&f32_inputs, a, st)
        }
        _ => r,
    };
    let vae_s = forward_s(
        &e.decoder,
        i.images as f64,
        1.0,
        0.0,
        WeightPath::default(),
        &vae_r,
        scores,
    );
    let transfer_s = match acc {
        Some(a) if e.transfer_per_call.0 > 0 => offload_s(i, e, a, st),
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
        flops_per_s: if path.low_bit_matmul && r.low_bit > 0.0 {
            r.low_bit
        } else {
            r.linear
        },
    }
}

/// Seconds the placement's copies take per call: model offload moves each component in and
/// the previous one out (Diffusers' hooks `.to("cpu")` it: both directions; stable-diffusion.cpp
/// frees the GPU copy: one); sequential offload copies every denoiser tensor each step and the
/// others once, each behind [`HOOK_OPS_PER_TENSOR`] host operations. All from pageable memory,
/// synchronous with the compute.
fn offload_s(i: &ImageInputs, e: &ImageEstimate, a: &Accelerator, st: &FitSettings) -> f64 {
    let bps = pageable_bps(a, st);
    let copy = e.transfer_per_call.as_f64() / bps;
    match e.placement {
        PipelineOffload::Model if i.runtime() == ImageRuntime::StableDiffusionCpp => copy,
        PipelineOffload::Model => 2.0 * copy,
        PipelineOffload::Sequential => {
            let tensors = e.denoiser.tensors as f64 * i.steps as f64
                + e.text.tensors as f64
                + e.decoder.tensors as f64 * 2.0;
            copy + tensors * HOOK_OPS_PER_TENSOR * EAGER_OP_US * 1e-6
        }
        _ => copy,
    }
}

/// The placements tried, fastest first: the asked one alone, or (`Auto`) every one this GPU
/// and runtime offer. Offload gains nothing on unified memory (the GPU's share is the RAM).
fn placements(i: &ImageInputs, acc: Option<&Accelerator>) -> Vec<PipelineOffload> {
    match i.offload {
        PipelineOffload::Auto if is_unified(acc) => vec![PipelineOffload::None],
        PipelineOffload::Auto => match i.runtime() {
            ImageRuntime::Diffusers | ImageRuntime::Compiled | ImageRuntime::TensorRt => vec![
                PipelineOffload::None,
                PipelineOffload::Model,
                PipelineOffload::Sequential,
            ],
            ImageRuntime::StableDiffusionCpp => vec![
                PipelineOffload::None,
                PipelineOffload::ClipOnCpu,
                PipelineOffload::Model,
            ],
            ImageRuntime::CoreMl => vec![PipelineOffload::None],
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
