//! Speed model: decode is memory-bound, prefill compute-bound, offload split llama.cpp style (CPU
//! layers at RAM bandwidth) or streamed over PCIe (accelerate / vLLM `--cpu-offload-gb`).
//!
//! Every efficiency factor is a named constant with its source; none is hidden.

use super::estimate::Estimate;
use super::units::{Bytes, GbPerSec};
use serde::{Deserialize, Serialize};

/// The efficiency constants the speed model uses (all adjustable, all shown in reports).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SpeedConstants {
    /// Fraction of peak VRAM bandwidth decode reaches on a discrete GPU. Rule of thumb 70–85 %
    /// for llama.cpp/vLLM on CUDA (hardware.md §0, flagged as not measured here).
    pub gpu_bandwidth_efficiency: f64,
    /// Fraction of peak unified-memory bandwidth on Apple/APU GPUs: llama.cpp on an M1 Max reached
    /// 221–233 of 400 GB/s = 55–58 % (github.com/ggml-org/llama.cpp/issues/27525).
    pub unified_bandwidth_efficiency: f64,
    /// Fraction of peak DRAM bandwidth a CPU decode reaches (heuristic; llmfit uses 0.55).
    pub cpu_bandwidth_efficiency: f64,
    /// Fraction of the PCIe link's one-direction bandwidth reached by bulk host→device copies.
    pub pcie_efficiency: f64,
    /// Model FLOPs utilisation in prefill (large GEMMs; heuristic 0.5).
    pub prefill_mfu: f64,
    /// Model FLOPs utilisation in training (heuristic 0.35; Megatron reports 0.4–0.55 at scale).
    pub training_mfu: f64,
    /// FP32 FLOP per cycle per core for a CPU (AVX2: 2 FMA units × 8 lanes × 2 = 32).
    pub cpu_flops_per_cycle: f64,
    /// CPU clock assumed for the CPU FLOPS estimate, GHz.
    pub cpu_ghz: f64,
}

impl Default for SpeedConstants {
    fn default() -> Self {
        SpeedConstants {
            gpu_bandwidth_efficiency: 0.75,
            unified_bandwidth_efficiency: 0.57,
            cpu_bandwidth_efficiency: 0.55,
            pcie_efficiency: 0.8,
            prefill_mfu: 0.5,
            training_mfu: 0.35,
            cpu_flops_per_cycle: 32.0,
            cpu_ghz: 3.0,
        }
    }
}

/// A compute device for the speed model.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Device {
    pub bandwidth: GbPerSec,
    /// Dense FP16 TFLOPS.
    pub tflops: f64,
    /// Fraction of `bandwidth` reached.
    pub efficiency: f64,
}

impl Device {
    fn bytes_per_s(&self) -> f64 {
        (self.bandwidth.bytes_per_sec() * self.efficiency.clamp(0.0, 1.0)).max(1.0)
    }
    fn flops(&self, mfu: f64) -> f64 {
        (self.tflops.max(0.0) * 1e12 * mfu.clamp(0.0, 1.0)).max(1.0)
    }
}

/// How layers that do not fit on the GPU are run.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SplitStyle {
    /// llama.cpp `-ngl k`: the other layers run on the CPU at system-RAM bandwidth.
    CpuLayers,
    /// accelerate `device_map="auto"` / vLLM `--cpu-offload-gb`: weights cross PCIe every step.
    Streaming,
}

/// Decode and prefill speed of a placement.
#[derive(Copy, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Speed {
    /// Generated tokens per second, all sequences together.
    pub decode_tokens_per_s: f64,
    /// Prompt tokens per second.
    pub prefill_tokens_per_s: f64,
}

fn finite(x: f64) -> f64 {
    if x.is_finite() && x > 0.0 { x } else { 0.0 }
}

/// Speed with `gpu_layers` of `layers` on `gpus` identical GPUs (tensor parallel when all layers
/// are on the GPUs) and the rest on the CPU (`cpu`), for a batch of `batch` sequences.
#[allow(clippy::too_many_arguments)]
pub fn placement_speed(
    est: &Estimate,
    gpu: Option<Device>,
    gpus: u64,
    cpu: Device,
    link: GbPerSec,
    gpu_layers: u64,
    batch: u64,
    ubatch: u64,
    style: SplitStyle,
    k: &SpeedConstants,
) -> Speed {
    let w = &est.workload;
    let l = w.layers.max(1);
    let gl = gpu_layers.min(l);
    let batch = batch.max(1) as f64;
    let frac_gpu = gl as f64 / l as f64;
    let layer_read = w
        .active_weight_bytes_per_token
        .saturating_sub(w.outer_weights)
        .as_f64()
        .max(0.0);
    let outer_read = w.active_weight_bytes_per_token.as_f64() - layer_read;
    let kv = w.kv_read_per_token.as_f64() * batch;
    let step_flops = w.flops_per_token * batch;
    let n = gpus.max(1) as f64;
    let link_bps = (link.bytes_per_sec() * k.pcie_efficiency).max(1.0);

    let decode = match gpu {
        None => {
            let t_mem = (layer_read + outer_read + kv) / cpu.bytes_per_s();
            let t_cmp = step_flops / cpu.flops(0.5);
            batch / t_mem.max(t_cmp)
        }
        Some(g) => {
            // Output head sits on the GPU only when every layer does (llama.cpp -ngl > n_layer).
            let outer_on_gpu = gl == l;
            let gpu_bytes =
                layer_read * frac_gpu + kv * frac_gpu + if outer_on_gpu { outer_read } else { 0.0 };
            let cpu_bytes = layer_read * (1.0 - frac_gpu)
                + kv * (1.0 - frac_gpu)
                + if outer_on_gpu { 0.0 } else { outer_read };
            let gpu_flops = step_flops * frac_gpu;
            let cpu_flops = step_flops * (1.0 - frac_gpu);
            let t_gpu =
                (gpu_bytes / (g.bytes_per_s() * n)).max(gpu_flops / (g.flops(k.prefill_mfu) * n));
            let t_rest = match style {
                SplitStyle::CpuLayers => {
                    (cpu_bytes / cpu.bytes_per_s()).max(cpu_flops / cpu.flops(0.5))
                }
                // Streaming: weights (not KV, which stays on the GPU) cross the link each step.
                SplitStyle::Streaming => {
                    let weights_off =
                        layer_read * (1.0 - frac_gpu) + if outer_on_gpu { 0.0 } else { outer_read };
                    weights_off / link_bps + kv * (1.0 - frac_gpu) / (g.bytes_per_s() * n)
                }
            };
            batch / (t_gpu + t_rest)
        }
    };

    // Prefill of one ubatch-sized chunk: compute-bound on the device holding the layer; with CPU
    // layers llama.cpp copies their weights to the GPU over PCIe for batches ≥ 32 tokens
    // (llama.cpp PR 6083, GGML_CUDA_MIN_BATCH_OFFLOAD = 32).
    let chunk = ubatch.max(1) as f64;
    let chunk_flops = w.flops_per_token * chunk;
    let prefill = match gpu {
        None => chunk / (chunk_flops / cpu.flops(0.5)),
        Some(g) => {
            let t_cmp = chunk_flops / (g.flops(k.prefill_mfu) * n);
            let off_bytes = (w.layer_weights.as_f64()) * (1.0 - frac_gpu)
                + if gl == l {
                    0.0
                } else {
                    w.outer_weights.as_f64()
                };
            let t_copy = if chunk >= 32.0 {
                off_bytes / link_bps
            } else {
                off_bytes / cpu.bytes_per_s()
            };
            chunk / (t_cmp + t_copy)
        }
    };
    Speed {
        decode_tokens_per_s: finite(decode),
        prefill_tokens_per_s: finite(prefill),
    }
}

/// Training throughput: `6·P` FLOPs per token for a full fine-tune (`8·P` with full recompute),
/// `4·P` for LoRA/QLoRA (no weight gradients for the frozen base), over `gpus` at `training_mfu`.
pub fn training_tokens_per_s(
    flops_per_token: f64,
    gpus: u64,
    tflops: f64,
    k: &SpeedConstants,
) -> f64 {
    let f = (tflops.max(0.0) * 1e12 * k.training_mfu * gpus.max(1) as f64).max(1.0);
    finite(f / flops_per_token.max(1.0))
}

/// Seconds to move `bytes` over a link.
pub fn transfer_seconds(bytes: Bytes, link: GbPerSec, k: &SpeedConstants) -> f64 {
    bytes.as_f64() / (link.bytes_per_sec() * k.pcie_efficiency).max(1.0)
}
