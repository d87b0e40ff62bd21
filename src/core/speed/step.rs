//! The time of one scheduler step of a continuous-batching engine: `d` sequences decode one
//! token each at their depth, and `p` prompt tokens of a chunked prefill ride along (vLLM V1
//! schedules decodes first, then fills the token budget with prefill chunks; Agrawal et al.,
//! "Sarathi-Serve", OSDI 2024, §4). A step is a roofline over the GPUs of one replica:
//!
//! `t = max(bytes ÷ bandwidth, FLOPs ÷ GEMM rate) + layers × per-layer cost + per-step cost
//!      + 2 × layers × all-reduce(tokens × hidden × 2 B)`
//!
//! bytes = the weights the step touches (all of a dense model; for a mixture of experts the
//! experts that `d + p` tokens route to, `1 − (1 − k/E)^tokens` of them) + every decoding
//! sequence's KV at its depth; FLOPs = `2 × active params × tokens` + attention
//! (`4 × layers × heads × head_dim` per token per unit of depth). The bandwidth and GEMM rate
//! are those of the kernel the engine runs for these weights ([`Kernel`]).

use super::{Backend, GpuDevice, Profile, SpeedConstants};
use crate::core::estimate::Estimate;
use crate::core::precision::WeightPrecision;
use crate::core::scenario::Scenario;
use crate::core::units::GbPerSec;
use serde::{Deserialize, Serialize};

/// The matrix kernel family that runs the weights, with what it reaches of the GPU.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kernel {
    /// 16-bit weights: cuBLAS / hipBLASLt GEMMs.
    Dense16,
    /// 4-bit weights, 16-bit activations: Marlin (GPTQ, AWQ, INT4, MXFP4 on vLLM;
    /// Frantar et al., "MARLIN: Mixed-Precision Auto-Regressive Parallel Inference on Large
    /// Language Models", arXiv:2408.11743).
    W4A16,
    /// FP8 weights and activations on GPUs with FP8 tensor cores (CUTLASS `scaled_mm`).
    W8A8Fp8,
    /// 8-bit weights dequantised to 16 bits (FP8 Marlin on Ampere, INT8 weight-only).
    W8A16,
    /// NVFP4 weights and activations on Blackwell's FP4 tensor cores (block-scaled
    /// `mma.kind::mxf4nvf4` GEMMs: CUTLASS `examples/72_blackwell_narrow_precision_gemm`, run by
    /// vLLM's `ModelOptNvFp4LinearMethod` through `cutlass_scaled_fp4_mm` or FlashInfer).
    W4A4Fp4,
    /// llama.cpp's own kernels (mmvq / MMQ) for GGUF types, run by the llama.cpp profiles.
    Ggml,
}

/// What each kernel reaches relative to the runtime profile's 16-bit figures.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelRates {
    /// Multiplies the profile's bandwidth efficiency when the step is memory-bound.
    pub bandwidth: f64,
    /// Multiplies the profile's 16-bit GEMM rate when the step is compute-bound.
    pub gemm: f64,
}

impl Kernel {
    /// The kernel an engine of the PyTorch family (vLLM, SGLang, transformers) runs for `w` on
    /// `gpu`: FP8 weights run W8A8 where the GPU has FP8 tensor cores; NVFP4 runs W4A4 where it
    /// has FP4 tensor cores, and weight-only through FP4 Marlin elsewhere (vLLM
    /// `model_executor/layers/quantization/utils/marlin_utils_fp4.py`, used by
    /// `ModelOptNvFp4LinearMethod` on GPUs without native FP4).
    pub fn for_weights(w: WeightPrecision, gpu: &GpuDevice) -> Kernel {
        use WeightPrecision::*;
        let fp8 = gpu.fp8;
        match w {
            Fp32 | Fp16 | Bf16 => Kernel::Dense16,
            Nvfp4 if gpu.fp4_tflops > 0.0 => Kernel::W4A4Fp4,
            Fp8 | Fp8Block if fp8 => Kernel::W8A8Fp8,
            Fp8 | Fp8Block | Int8 | Q8_0 => Kernel::W8A16,
            _ => Kernel::W4A16,
        }
    }
    pub const fn label(self) -> &'static str {
        match self {
            Kernel::Dense16 => "16-bit GEMM (cuBLAS)",
            Kernel::W4A16 => "W4A16 (Marlin)",
            Kernel::W8A8Fp8 => "FP8 W8A8 (CUTLASS)",
            Kernel::W8A16 => "W8A16 (dequantise to 16-bit)",
            Kernel::W4A4Fp4 => "NVFP4 W4A4 (FP4 tensor cores)",
            Kernel::Ggml => "llama.cpp mmvq/MMQ",
        }
    }
    /// Rates relative to the 16-bit path. Marlin's batch-1 layer benchmarks reach ~3.3–3.9× of
    /// FP16's speed on 4× fewer bytes on an A10 and less on bigger-bandwidth parts (Frantar et
    /// al. 2024, Fig. 1 and §5): ~0.8 of the 16-bit kernels' bandwidth efficiency. Its GEMMs run
    /// on FP16 tensor cores after dequantising in registers: ~0.8 of the FP16 rate at large
    /// batches (ibid., Fig. 9 at batch 128+). CUTLASS FP8 GEMMs run at twice the FP16 tensor
    /// rate (the accelerator's INT8/FP8 figure) with the same efficiency, but are GEMM tiles,
    /// not GEMV kernels, at small batches: 0.7 of the bandwidth efficiency (vLLM's FP8 docs
    /// report up to 1.6× lower inter-token latency than BF16 on 2× fewer bytes,
    /// docs.vllm.ai "FP8 W8A8"). Dequantising 8-bit weights: like Marlin.
    pub fn rates(self) -> KernelRates {
        match self {
            Kernel::Dense16 | Kernel::Ggml => KernelRates {
                bandwidth: 1.0,
                gemm: 1.0,
            },
            Kernel::W4A16 | Kernel::W8A16 => KernelRates {
                bandwidth: 0.8,
                gemm: 0.8,
            },
            // Block-scaled FP4 GEMMs are tile kernels like the FP8 ones: the same efficiencies,
            // at the FP4 rate (`gemm_peak` below).
            Kernel::W8A8Fp8 | Kernel::W4A4Fp4 => KernelRates {
                bandwidth: 0.8,
                gemm: 1.0,
            },
        }
    }
}

/// Per-step cost of the engine outside the layers: scheduling, input preparation, sampling and
/// output processing between two forward passes, µs.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepCosts {
    /// Fixed per step.
    pub step_us: f64,
    /// Per sequence in the step (sampling, detokenising, streaming one token out).
    pub per_seq_us: f64,
}

impl StepCosts {
    /// The costs of the runtime behind `backend`:
    /// - vLLM V1: the scheduler, input preparation and output processing between two CUDA-graph
    ///   replays. vLLM's v0.6.0 post measured only 38 % of the time on the GPU for Llama 3 8B on
    ///   an H100 before its CPU work was overlapped (blog.vllm.ai, 2024-09-05); V1 overlaps the
    ///   API server and detokenising (blog.vllm.ai, 2025-01-27), leaving ~0.5 ms a step plus
    ///   per-request bookkeeping.
    /// - transformers `generate()`: its per-layer Python dispatch is the profile's
    ///   `layer_overhead_us`; the step adds the logits processors and stopping criteria.
    /// - llama.cpp (`llama-server`): one C++ loop over the slots, sampling per slot.
    pub const fn of(backend: Backend) -> StepCosts {
        match backend {
            Backend::Vllm => StepCosts {
                step_us: 500.0,
                per_seq_us: 10.0,
            },
            Backend::Transformers => StepCosts {
                step_us: 300.0,
                per_seq_us: 10.0,
            },
            _ => StepCosts {
                step_us: 200.0,
                per_seq_us: 20.0,
            },
        }
    }
}

/// transformers' `DynamicCache.update` concatenates each layer's new K and V onto its cache
/// (`torch.cat`, src/transformers/cache_utils.py): every step reads and writes the whole cache
/// once more before attention reads it, three passes over the KV bytes.
pub const DYNAMIC_CACHE_KV_PASSES: f64 = 3.0;

/// One replica's step-time model, built once per machine and tensor-parallel size.
#[derive(Clone, Debug, PartialEq)]
pub struct StepModel {
    /// Dense (non-routed) weight bytes per GPU read by any step.
    pub dense_bytes: f64,
    /// Routed-expert weight bytes per GPU (all experts); 0 for dense models.
    pub expert_bytes: f64,
    /// Experts per layer and active per token (MoE).
    pub moe: Option<(f64, f64)>,
    /// Active parameters per token per GPU.
    pub active_params: f64,
    /// KV bytes per token of depth per sequence per GPU (full-attention layers).
    pub kv_per_token: f64,
    /// Sliding-window layers: bytes per token per sequence per GPU and the window.
    pub kv_window: Option<(f64, f64)>,
    /// Recurrent layers (hybrid / state-space models): the fixed state bytes per sequence per
    /// GPU, read and rewritten once per decode step whatever the depth; 0 elsewhere.
    pub state_per_seq: f64,
    /// Attention FLOPs per token per unit of depth, per GPU.
    pub attn_per_depth: f64,
    pub layers: f64,
    pub hidden: f64,
    /// Achievable bytes/s per GPU of this kernel.
    pub bandwidth: f64,
    /// Achievable FLOP/s per GPU of this kernel.
    pub gemm_rate: f64,
    pub layer_s: f64,
    pub costs: StepCosts,
    pub tp: f64,
    /// GPU↔GPU link one direction, bytes/s, and the latency of one small all-reduce, s.
    pub link_bps: f64,
    pub allreduce_latency_s: f64,
    pub kernel: Kernel,
    /// llama.cpp's batch-1 mat-vec (mmvq) ALU time per sequence, up to 8 sequences, s
    /// (the profile's `dot_flops_per_weight` × active weights ÷ vector rate); 0 elsewhere.
    pub vector_s_per_token: f64,
    /// Eager PyTorch (transformers): the CPU launches every kernel of every layer and the GPU runs
    /// behind it (CUDA's asynchronous execution), so a step takes the longer of the two, not
    /// their sum.
    pub dispatch_bound: bool,
    /// Passes over the KV bytes a decode step makes (1; transformers' dynamic cache: 3).
    pub kv_passes: f64,
    /// Attention layers that read each cached layer's K/V at decode: 1, or with Gemma 3n's KV
    /// sharing all attention layers ÷ the layers with a cache (E4B: 35 / 20).
    pub kv_readers_per_cache: f64,
    /// Pipeline stages the layers are split over (vLLM `--pipeline-parallel-size`); this model's
    /// bytes and FLOPs are those of all the layers at `tp`, each stage runs its share.
    pub stages: f64,
    /// One stage-to-stage send of the hidden states: latency s and bytes/s.
    pub hop_latency_s: f64,
    pub hop_bps: f64,
    /// DeepSeek Sparse Attention: what is read and computed for at most the top-k positions;
    /// `kv_per_token` and `attn_per_depth` then hold the indexer's share, paid at every position.
    pub sparse: Option<SparseStep>,
    /// Speculative decoding in a batched step (serving only; `None` in `fit`'s single-user
    /// speeds, which apply speculation after the fact): see [`SpecStep`].
    pub spec: Option<Box<SpecStep>>,
}

/// Speculative decoding inside one scheduler step of a batching engine (vLLM V1
/// `vllm/v1/spec_decode/eagle.py` `EagleProposer.propose` and `draft_model.py`, run by
/// `gpu_model_runner.py` `execute_model` after the target's forward pass; SGLang's
/// `EAGLEWorker.forward_batch_speculative_generation`): every decoding sequence's drafter runs
/// `γ` passes (the first also over the step's prompt chunk: the drafter keeps its own KV of the
/// prompt), and the target verifies `γ + 1` tokens per sequence in one pass (vLLM's scheduler
/// counts them against `max_num_batched_tokens`: `scheduler.py` `schedule`,
/// `num_new_tokens = num_tokens_with_spec − num_computed_tokens`). A sequence gains
/// `tokens_per_step` tokens on average (Leviathan et al. 2023 eq. 1). The verification is a
/// `γ + 1`-times larger GEMM over the same weights: free while the step is memory-bound, at
/// full price once it is compute-bound, which is why the speedup falls with the batch.
#[derive(Clone, Debug, PartialEq)]
pub struct SpecStep {
    /// The drafter's own step model on the same GPUs (its weights, KV and launches; no engine
    /// cost of its own).
    pub draft: StepModel,
    /// Tokens drafted per step (γ).
    pub draft_tokens: f64,
    /// Tokens a sequence gains per step on average, `(1 − α^(γ+1)) / (1 − α)`.
    pub tokens_per_step: f64,
}

/// The top-k part of sparse attention, per GPU (see [`StepModel::sparse`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SparseStep {
    pub topk: f64,
    /// Latent KV bytes per attended position per sequence.
    pub kv_per_token: f64,
    /// Attention FLOPs per attended position.
    pub attn_per_depth: f64,
}

/// What builds a [`StepModel`].
pub struct StepInputs<'a> {
    pub scenario: &'a Scenario,
    /// The estimate at this tensor-parallel size.
    pub est: &'a Estimate,
    pub gpu: GpuDevice,
    pub profile: &'a Profile,
    pub kernel: Kernel,
    pub costs: StepCosts,
    pub tp: u64,
    pub gpu_link: GbPerSec,
    pub nvlink: bool,
    pub consts: &'a SpeedConstants,
    /// Multiplies the achievable bandwidth (a calibration of this machine).
    pub bandwidth_factor: f64,
}

impl StepModel {
    pub fn new(i: &StepInputs) -> StepModel {
        let s = i.scenario;
        let spec = &s.model;
        let w = &i.est.workload;
        let tp = i.tp.max(1) as f64;
        let rates = i.kernel.rates();
        let bw_eff = (i.profile.bandwidth_efficiency * rates.bandwidth).clamp(0.01, 1.0);
        let mut bandwidth = i.gpu.bandwidth.0 * 1e9 * bw_eff * i.bandwidth_factor.max(0.01);
        if let (Some(per), Some(n)) = (i.profile.gbs_per_compute_unit, i.gpu.compute_units)
            && per > 0.0
            && n > 0
        {
            bandwidth = bandwidth.min(per * n as f64 * 1e9);
        }
        let gemm_peak = match i.kernel {
            Kernel::W8A8Fp8 => i.gpu.int8_tops,
            Kernel::W4A4Fp4 => i.gpu.fp4_tflops,
            _ if i.profile.f16_accumulate_fp16 => i.gpu.fp16_acc16_tflops,
            _ => i.gpu.fp16_tflops,
        };
        let moe_eff = if spec.moe.is_some() {
            i.profile.moe_gemm_efficiency.clamp(0.01, 1.0)
        } else {
            1.0
        };
        let gemm_rate =
            (gemm_peak * 1e12 * i.profile.f16_gemm_efficiency * rates.gemm * moe_eff).max(1.0);
        let weights = (w.layer_weights.as_f64() + w.outer_weights.as_f64()) / tp;
        let routed = crate::core::estimate::routed_experts(spec, s.weights)
            .iter()
            .map(|r| r.bytes as f64)
            .sum::<f64>()
            / tp;
        let moe = spec
            .moe
            .as_ref()
            .filter(|m| m.experts > 0)
            .map(|m| (m.experts as f64, m.active_experts.max(1) as f64));
        let (dense_bytes, expert_bytes) = if moe.is_some() {
            ((weights - routed).max(0.0), routed)
        } else {
            (weights, 0.0)
        };
        let (k_el, v_el) = spec.kv_elements_per_token_layer();
        let per_layer = (s.kv.k.bytes_for(k_el) + s.kv.v.bytes_for(v_el)) as f64;
        let share = kv_share(spec, i.tp);
        let (_, window) = spec.local_layers();
        // Only the attention layers of a hybrid model cache K and V, and of Gemma 3n only the
        // layers before the KV-shared ones.
        let (cache_layers, local) = spec.kv_cache_layers();
        let global = cache_layers.saturating_sub(local) as f64;
        let kv_window =
            (local > 0 && window > 0).then_some((per_layer * share * local as f64, window as f64));
        let attn_main =
            4.0 * spec.attention_layer_count() as f64 * (spec.heads * spec.head_dim) as f64 / tp;
        // Sparse attention: the latent and the main attention for the top-k positions only;
        // the indexer's FP8 keys and dot products for every position.
        let indexer = spec.mla.as_ref().and_then(|m| m.indexer.as_ref());
        let sparse = spec.attention_topk().map(|k| SparseStep {
            topk: k as f64,
            kv_per_token: per_layer * share * global,
            attn_per_depth: attn_main,
        });
        let (kv_per_token, attn_per_depth) = match indexer {
            Some(ix) => (
                ix.key_bytes_per_token() as f64 * share * global,
                spec.indexer_flops_per_depth() / tp,
            ),
            None => (per_layer * share * global, attn_main),
        };
        StepModel {
            dense_bytes,
            expert_bytes,
            moe,
            active_params: (i.est.params.active as f64 / tp).max(1.0),
            kv_per_token,
            kv_window,
            state_per_seq: spec.recurrent_state_bytes_per_sequence() as f64 / tp,
            attn_per_depth,
            sparse,
            layers: spec.layers.max(1) as f64,
            hidden: spec.hidden.max(1) as f64,
            bandwidth: bandwidth.max(1.0),
            gemm_rate,
            layer_s: i.profile.layer_overhead_us * 1e-6,
            costs: i.costs,
            tp,
            link_bps: i.gpu_link.bytes_per_sec().max(1.0),
            allreduce_latency_s: if i.nvlink {
                i.consts.allreduce_latency_nvlink_us
            } else {
                i.consts.allreduce_latency_pcie_us
            } * 1e-6,
            kernel: i.kernel,
            vector_s_per_token: 0.0,
            dispatch_bound: false,
            kv_passes: 1.0,
            kv_readers_per_cache: if cache_layers > 0 {
                spec.attention_layer_count() as f64 / cache_layers as f64
            } else {
                1.0
            },
            stages: 1.0,
            hop_latency_s: 0.0,
            hop_bps: 1.0,
            spec: None,
        }
    }

    /// This model with speculative decoding: `draft` is the drafter's step model on the same
    /// GPUs, `g` the tokens it drafts per step and `e` the tokens a sequence gains per step.
    pub fn with_speculation(mut self, mut draft: StepModel, g: u64, e: f64) -> StepModel {
        draft.costs = StepCosts {
            step_us: 0.0,
            per_seq_us: 0.0,
        };
        draft.spec = None;
        self.spec = Some(Box::new(SpecStep {
            draft,
            draft_tokens: g.max(1) as f64,
            tokens_per_step: e.max(1.0),
        }));
        self
    }

    /// Tokens a decoding sequence gains per step (1 without speculation).
    pub fn tokens_per_step(&self) -> f64 {
        self.spec.as_ref().map_or(1.0, |x| x.tokens_per_step)
    }

    /// Tokens of the step's budget a decoding sequence takes: `γ + 1` with speculation, else 1.
    pub fn tokens_per_decode(&self) -> f64 {
        self.spec.as_ref().map_or(1.0, |x| x.draft_tokens + 1.0)
    }

    /// The same model split into `stages` pipeline stages whose hidden states cross `hop`
    /// (latency s, bytes/s) between stages.
    pub fn pipelined(mut self, stages: u64, hop_latency_s: f64, hop_bps: f64) -> StepModel {
        self.stages = stages.max(1) as f64;
        self.hop_latency_s = hop_latency_s.max(0.0);
        self.hop_bps = hop_bps.max(1.0);
        self
    }

    /// KV bytes per GPU of one sequence at `len` tokens (one pipeline stage's layers); the
    /// recurrent state of a hybrid model is not in it (see [`Self::state_per_seq`]). With
    /// speculative decoding the drafter's KV is in it too: vLLM V1 gives the drafter's attention
    /// layers blocks of the same pool (`gpu_model_runner.py` `get_kv_cache_spec` walks every
    /// attention layer of the forward context, the drafter's included).
    pub fn kv_seq_bytes(&self, len: f64) -> f64 {
        let draft = self
            .spec
            .as_ref()
            .map_or(0.0, |x| x.draft.kv_seq_bytes(len));
        self.own_kv_bytes(len) + draft
    }

    /// The target's KV bytes per GPU of one sequence at `len` tokens (the drafter's KV, held in
    /// the same pool, is added by [`Self::kv_seq_bytes`]).
    fn own_kv_bytes(&self, len: f64) -> f64 {
        let local = self.kv_window.map_or(0.0, |(b, w)| b * len.min(w));
        let latent = self.sparse.map_or(0.0, |x| x.kv_per_token * len);
        (self.kv_per_token * len + local + latent) / self.stages.max(1.0)
    }

    /// KV bytes per GPU one decode step reads for a sequence at `len` tokens: what it holds,
    /// except that sparse attention reads the latents of the top-k positions only.
    pub fn kv_read_bytes(&self, len: f64) -> f64 {
        let unread = self
            .sparse
            .map_or(0.0, |x| x.kv_per_token * (len - x.topk).max(0.0));
        (self.own_kv_bytes(len) - unread / self.stages.max(1.0)).max(0.0)
            * self.kv_readers_per_cache
    }

    /// Seconds of one step: `d` decoding sequences at mean depth `depth`, and `p` prefill
    /// tokens whose prompts already hold `p_depth` tokens of KV (earlier chunks, cached prefix).
    ///
    /// Pipelined over `k` stages, the decoding sequences run as `k` micro-batches in flight
    /// (vLLM's virtual engines, one per stage): every sequence gains a token after its
    /// micro-batch has passed all `k` stages, each running `1/k` of the layers on `d/k`
    /// sequences, with `k − 1` sends of the hidden states and residual (2 × hidden BF16 values
    /// per token; vLLM's `IntermediateTensors`) between them. A prompt chunk rides whole in one
    /// micro-batch (its time to first token passes every stage). The engine's own step cost is
    /// paid once.
    ///
    /// With speculative decoding ([`SpecStep`]) a step is the drafter's `γ` passes over the `d`
    /// sequences (the first also over the prompt chunk) and the target's pass over `γ + 1`
    /// tokens per sequence; each sequence then gains [`Self::tokens_per_step`] tokens.
    pub fn time(&self, d: f64, depth: f64, p: f64, p_depth: f64) -> f64 {
        match self.spec.as_deref() {
            Some(sp) if self.stages <= 1.0 => {
                let g = sp.draft_tokens;
                // The drafter's first pass reads every token the target's pass took in, the
                // `γ + 1` of each decoding sequence (vLLM `EagleProposer.propose` runs it over
                // `target_token_ids` and samples at `last_token_indices`; SGLang's
                // `forward_draft_extend_after_decode` over the accepted ones), then `γ − 1`
                // passes of one token each.
                let first = sp.draft.pass(d, g + 1.0, depth, p, p_depth);
                let rest = if d > 0.0 {
                    (g - 1.0).max(0.0) * sp.draft.pass(d, 1.0, depth, 0.0, 0.0)
                } else {
                    0.0
                };
                // The engine's per-sequence work is per token appended: a sequence takes `E`
                // tokens a step, each checked for a stop and handed out (vLLM
                // `Scheduler.update_from_output` walks every new token of every request;
                // SGLang `EagleVerifyInput.verify` appends each accepted token to its request).
                let bookkeeping = self.costs.per_seq_us * d * (sp.tokens_per_step - 1.0) * 1e-6;
                self.pass(d, g + 1.0, depth, p, p_depth) + first + rest + bookkeeping
            }
            _ => self.pass(d, 1.0, depth, p, p_depth),
        }
    }

    /// One forward pass: `d` decoding sequences with `q` query tokens each (1; `γ + 1` when
    /// verifying drafted tokens: their KV is read once, their FLOPs are `q` times), and `p`
    /// prefill tokens.
    fn pass(&self, d: f64, q: f64, depth: f64, p: f64, p_depth: f64) -> f64 {
        if self.stages > 1.0 {
            let k = self.stages;
            let stage = StepModel {
                dense_bytes: self.dense_bytes / k,
                expert_bytes: self.expert_bytes / k,
                active_params: self.active_params / k,
                attn_per_depth: self.attn_per_depth / k,
                sparse: self.sparse.map(|x| SparseStep {
                    attn_per_depth: x.attn_per_depth / k,
                    ..x
                }),
                layers: self.layers / k,
                costs: StepCosts {
                    step_us: 0.0,
                    per_seq_us: 0.0,
                },
                stages: 1.0,
                ..self.clone()
            };
            // KV of a stage: kv_seq_bytes above already divides by the stages.
            let (dd, pp) = (d / k, p);
            let stage_kv_fix = StepModel {
                kv_per_token: stage.kv_per_token / k,
                kv_window: stage.kv_window.map(|(b, w)| (b / k, w)),
                state_per_seq: stage.state_per_seq / k,
                sparse: stage.sparse.map(|x| SparseStep {
                    kv_per_token: x.kv_per_token / k,
                    ..x
                }),
                ..stage
            };
            let hop = self.hop_latency_s + (dd + pp).max(1.0) * self.hidden * 4.0 / self.hop_bps;
            let engine = (self.costs.step_us + self.costs.per_seq_us * dd) * 1e-6;
            return k * stage_kv_fix.pass(dd, q, depth, pp, p_depth) + (k - 1.0) * hop + engine;
        }
        let tokens = (d * q + p).max(1.0);
        let touched = match self.moe {
            Some((e, k)) => 1.0 - (1.0 - (k / e).min(1.0)).powf(tokens),
            None => 1.0,
        };
        // Each decoding sequence also reads its recurrent state (0 for plain transformers).
        let kv = d * (self.kv_read_bytes(depth) + self.state_per_seq / self.stages.max(1.0))
            + if p > 0.0 {
                self.kv_read_bytes(p_depth)
            } else {
                0.0
            };
        let bytes = self.dense_bytes + self.expert_bytes * touched + kv;
        let flops = 2.0 * self.active_params * tokens
            + self.attn_per_depth * (d * q * depth + p * (p_depth + p / 2.0))
            + self.sparse.map_or(0.0, |x| {
                x.attn_per_depth * (d * q * depth.min(x.topk) + p * (p_depth + p / 2.0).min(x.topk))
            });
        let roof = (bytes / self.bandwidth).max(flops / self.gemm_rate);
        let comm = if self.tp > 1.0 {
            let msg = tokens * self.hidden * 2.0;
            2.0 * self.layers
                * (self.allreduce_latency_s + 2.0 * (self.tp - 1.0) / self.tp * msg / self.link_bps)
        } else {
            0.0
        };
        // llama.cpp runs up to 8 sequences through mat-vec kernels (mmvq), then MMQ GEMMs.
        let mat_vec = if d * q <= 8.0 && p == 0.0 {
            (d * q).max(1.0) * self.vector_s_per_token
        } else {
            0.0
        };
        let gpu = roof + mat_vec + comm;
        let launches = self.layers * self.layer_s;
        let engine = (self.costs.step_us + self.costs.per_seq_us * d) * 1e-6;
        if self.dispatch_bound {
            gpu.max(launches) + engine
        } else {
            gpu + launches + engine
        }
    }
}

/// The share of the KV heads one GPU holds under tensor parallelism: `⌈kv_heads ÷ tp⌉ ÷
/// kv_heads` (vLLM replicates KV heads when tp exceeds them; `QKVParallelLinear`), and all of an
/// MLA latent cache (replicated on every rank).
pub fn kv_share(spec: &crate::core::model::ModelSpec, tp: u64) -> f64 {
    let tp = tp.max(1);
    if spec.mla.is_some() || spec.kv_heads == 0 {
        return 1.0;
    }
    spec.kv_heads.div_ceil(tp) as f64 / spec.kv_heads as f64
}
