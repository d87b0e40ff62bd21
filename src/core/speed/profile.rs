//! Throughput profiles: one per runtime and backend, each a handful of named constants with the
//! physical reason and the source for its value. The derivations and the check against published
//! measurements are in docs/speed.md; `tests/speed.rs` fails when they stop holding.

use crate::core::catalog::{Accelerator, MemoryKind, Vendor};
use crate::core::scenario::Runtime;
use serde::{Deserialize, Serialize};

/// The runtime and kernel family that runs a placement.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Backend {
    /// llama.cpp, ggml-cuda (NVIDIA).
    Cuda,
    /// llama.cpp, ggml-cuda compiled with HIP (AMD discrete GPUs).
    Rocm,
    /// llama.cpp, ggml-vulkan (AMD APUs, Intel, any GPU without CUDA/HIP).
    Vulkan,
    /// llama.cpp, ggml-metal (Apple silicon).
    Metal,
    /// llama.cpp, ggml-cpu.
    Cpu,
    /// vLLM: CUDA graphs, continuous batching, tensor parallelism.
    Vllm,
    /// Hugging Face transformers in PyTorch eager mode.
    Transformers,
    /// MLX through mlx-lm on an Apple GPU: quantised mat-vec (`qmv`) and GEMM (`qmm`) Metal
    /// kernels, one lazy graph per token evaluated asynchronously (`core::mlx`).
    Mlx,
}

impl Backend {
    pub const ALL: [Backend; 8] = [
        Backend::Cuda,
        Backend::Rocm,
        Backend::Vulkan,
        Backend::Metal,
        Backend::Cpu,
        Backend::Vllm,
        Backend::Transformers,
        Backend::Mlx,
    ];
    pub const fn label(self) -> &'static str {
        match self {
            Backend::Cuda => "llama.cpp CUDA",
            Backend::Rocm => "llama.cpp ROCm",
            Backend::Vulkan => "llama.cpp Vulkan",
            Backend::Metal => "llama.cpp Metal",
            Backend::Cpu => "llama.cpp CPU",
            Backend::Vllm => "vLLM",
            Backend::Transformers => "transformers",
            Backend::Mlx => "MLX (mlx-lm)",
        }
    }
    /// The name llama-bench prints in its `backend` column ("CUDA", "Metal", …).
    pub fn from_llama_bench(s: &str) -> Option<Backend> {
        let t = s.to_ascii_lowercase();
        // llama-bench joins several ("CUDA,BLAS", "Metal,BLAS"): the GPU one decides.
        if t.contains("cuda") {
            Some(Backend::Cuda)
        } else if t.contains("rocm") || t.contains("hip") {
            Some(Backend::Rocm)
        } else if t.contains("vulkan") {
            Some(Backend::Vulkan)
        } else if t.contains("metal") || t.contains("mtl") {
            Some(Backend::Metal)
        } else if t.contains("cpu") || t.contains("blas") {
            Some(Backend::Cpu)
        } else {
            None
        }
    }
    /// Whether llama.cpp runs it (the calibration set is llama.cpp only).
    pub const fn is_llama_cpp(self) -> bool {
        !matches!(self, Backend::Vllm | Backend::Transformers | Backend::Mlx)
    }
}

/// The backend a runtime uses on an accelerator (`None` = CPU only). llama.cpp (and the generic
/// profile, which follows it) picks its GPU backend by vendor: CUDA on NVIDIA, Metal on Apple,
/// HIP/ROCm on AMD discrete cards, Vulkan on AMD APUs and Intel (ROCm does not officially support
/// the APUs' gfx1150/gfx1151; llama.cpp's own Strix Halo numbers come from Vulkan, discussion 10879).
/// vLLM and transformers need CUDA or ROCm; on Apple they fall back to llama.cpp's Metal profile.
/// MLX runs on Apple GPUs only (elsewhere the fit refuses it, `core::mlx::refused`; the speed
/// shown for such a machine is never asked for, and the llama.cpp profile stands in).
pub fn backend_for(runtime: Runtime, acc: Option<&Accelerator>) -> Backend {
    let Some(a) = acc else {
        return Backend::Cpu;
    };
    let llama = match (a.vendor, a.memory_kind) {
        (Vendor::Nvidia, _) => Backend::Cuda,
        (Vendor::Apple, _) => Backend::Metal,
        (Vendor::Amd, MemoryKind::Discrete) => Backend::Rocm,
        (Vendor::Amd, MemoryKind::Unified) | (Vendor::Intel, _) => Backend::Vulkan,
    };
    match runtime {
        Runtime::Generic | Runtime::LlamaCpp => llama,
        Runtime::Mlx if llama == Backend::Metal => Backend::Mlx,
        Runtime::Vllm if matches!(llama, Backend::Cuda | Backend::Rocm) => Backend::Vllm,
        Runtime::Transformers if matches!(llama, Backend::Cuda | Backend::Rocm) => {
            Backend::Transformers
        }
        _ => llama,
    }
}

/// The constants of one backend. Times are per token (decode) or per ubatch (prefill).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Profile {
    /// Fraction of peak DRAM/VRAM bandwidth the batch-1 mat-vec kernels reach.
    pub bandwidth_efficiency: f64,
    /// Bandwidth one SM/CU can pull at batch 1, GB/s (Little's law: bytes in flight per SM ÷
    /// memory latency); caps big-bandwidth, few-SM parts (A100, H100). `None` = no cap.
    pub gbs_per_compute_unit: Option<f64>,
    /// Fixed time per layer per decoded token, µs: kernel launches, barriers, synchronisation.
    pub layer_overhead_us: f64,
    /// Vector-ALU work per weight in the batch-1 mat-vec (dequantise + dot), in FP32-FLOP units
    /// of `vector_tflops`. Adds to the memory time (batch 1 does not overlap them fully).
    pub dot_flops_per_weight: f64,
    /// Quantised prefill (MMQ-style integer kernels): fraction of the INT8 tensor rate.
    /// `None` = the kernel does not use tensor/matrix units (the vector term alone).
    pub quant_tensor_efficiency: Option<f64>,
    /// Quantised prefill: the tile loading / dequantisation on the vector ALUs, as a multiple of
    /// `vector_tflops`; combined with the tensor term harmonically (both must run).
    pub quant_vector_multiple: f64,
    /// Unquantised (F16/BF16) prefill GEMM: fraction of the FP16 tensor rate with the accumulate
    /// convention the runtime uses (`f16_accumulate_fp16`).
    pub f16_gemm_efficiency: f64,
    /// Whether F16 GEMMs accumulate in FP16 (llama.cpp CUDA calls cuBLAS with
    /// CUBLAS_COMPUTE_16F for F16 weights: ggml-cuda.cu, ggml_cuda_op_mul_mat_cublas).
    pub f16_accumulate_fp16: bool,
    /// MoE expert GEMMs (grouped / indirect `mul_mat_id`) relative to a dense GEMM of the same
    /// shape, on top of the tile waste where the profile models the kernel's token tile
    /// (`moe_token_tile` > 0). 1 where the indirect GEMM is the dense kernel itself reading its
    /// columns through the expert's row ids (llama.cpp's GPU backends; the gathered inputs and
    /// scattered outputs are counted as bytes: `speed::prefill::EXPERT_OUTPUT_BYTES_PER_HIDDEN`).
    pub moe_gemm_efficiency: f64,
    /// Fixed time per MoE layer per decoded token on top of `layer_overhead_us`, µs: the
    /// router's extra kernels (gate mat-vec, softmax, top-k, gathers, the weighted sum). 0 where
    /// the profile's per-layer cost was measured on dense and MoE models alike.
    #[serde(default)]
    pub moe_layer_overhead_us: f64,
    /// Tokens per tile of the expert GEMM (`mul_mat_id`): each expert's tokens are padded to whole
    /// tiles, and a tile costs the same however many of its columns are real tokens. 0 = not
    /// modelled (the flat `moe_gemm_efficiency` applies). Sources per backend in
    /// [`Profiles::default`]; the mechanism in `speed::prefill::moe_tile_efficiency`.
    pub moe_token_tile: f64,
    /// The expert GEMM's token tile on AMD and Intel parts where it differs from
    /// `moe_token_tile` (ggml-vulkan disables the large `mul_mat_id` tile there); 0 = the same
    /// tile on every vendor ([`Profile::moe_tile_on`]).
    #[serde(default)]
    pub moe_token_tile_amd_intel: f64,
    /// Tokens per tile of the dense GEMM kernel that walks the weight tiles fastest, so that
    /// every token tile reads the weights again from memory (`speed::prefill::streamed_weight_bytes`).
    /// 0 = the weights are read once per ubatch (a kernel that walks the token tiles fastest, or
    /// one not modelled). On CUDA and ROCm it applies to the quantised weights' MMQ kernel only:
    /// unquantised weights go to cuBLAS / hipBLAS (`ggml_cuda_op_mul_mat_cublas`).
    #[serde(default)]
    pub gemm_token_tile: f64,
    /// BF16 weights where the backend has no 16-bit matrix path for them: share of the FP32
    /// vector rate its scalar GEMM shader reaches (ggml-vulkan without `VK_KHR_shader_bfloat16`
    /// cooperative matrices). 0 = BF16 runs at the 16-bit GEMM rate.
    #[serde(default)]
    pub bf16_scalar_gemm_share: f64,
    /// Bytes moved per attention score without FlashAttention: llama.cpp materialises the
    /// F32 `KQ` matrix (heads × n_kv × ubatch per layer), softmaxes it in place and reads it back
    /// for `KQV` (`llm_graph_context::build_attn_mha`, the non-FA branch). 0 = not modelled.
    pub kq_bytes_per_score: f64,
    /// Board power per TFLOPS of FP32 vector rate (W per TFLOPS) at which a part holds its boost
    /// clock through a sustained prefill GEMM; below it the clock falls as the cube root of the
    /// shortfall (`GpuDevice::sustained_clock_share`). 0 = not modelled.
    pub boost_watts_per_vector_tflop: f64,
    /// Vulkan on NVIDIA parts (`VK_NV_cooperative_matrix2`): the 16-bit GEMM efficiency there,
    /// in place of `f16_gemm_efficiency`. 0 = not used.
    pub coopmat2_gemm_efficiency: f64,
    /// Share of the GPU's ALU issue rate the batch-1 mat-vec kernels reach on their integer→float
    /// conversions, shifts and FMAs (`speed::metal`: issue cycles per weight by ggml type, at
    /// `vector_tflops ÷ 2` lane-cycles per second). A token's weight mat-vecs take the longer of
    /// their bytes and that ALU time. 0 = not modelled (the profile's `dot_flops_per_weight`).
    #[serde(default)]
    pub mv_alu_efficiency: f64,
    /// Fixed time per layer per decoded token on a GPU that shares the host's memory (an APU),
    /// µs, on top of `layer_overhead_us` ([`Profile::decode_layer_us`]). 0 = the same cost as on
    /// a discrete part.
    #[serde(default)]
    pub unified_layer_overhead_us: f64,
}

impl Default for Profile {
    fn default() -> Self {
        Profiles::default().cuda
    }
}

impl Profile {
    /// Fixed time per layer per decoded token, µs, on a GPU whose memory is the host's
    /// (`unified`: an APU) or its own.
    pub fn decode_layer_us(&self, unified: bool) -> f64 {
        if unified {
            self.layer_overhead_us + self.unified_layer_overhead_us.max(0.0)
        } else {
            self.layer_overhead_us
        }
    }
    /// The expert GEMM's token tile on a GPU of `vendor` (`None`: not known, or the CPU).
    pub fn moe_tile_on(&self, vendor: Option<Vendor>) -> f64 {
        match vendor {
            Some(Vendor::Amd | Vendor::Intel) if self.moe_token_tile_amd_intel > 0.0 => {
                self.moe_token_tile_amd_intel
            }
            _ => self.moe_token_tile,
        }
    }
}

/// One profile per backend (all adjustable through settings; all shown in reports).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Profiles {
    pub cuda: Profile,
    pub rocm: Profile,
    pub vulkan: Profile,
    pub metal: Profile,
    pub cpu: Profile,
    pub vllm: Profile,
    pub transformers: Profile,
    /// MLX through mlx-lm on Apple silicon (old settings files load with the default).
    pub mlx: Profile,
}

impl Profiles {
    pub fn get(&self, b: Backend) -> &Profile {
        match b {
            Backend::Cuda => &self.cuda,
            Backend::Rocm => &self.rocm,
            Backend::Vulkan => &self.vulkan,
            Backend::Metal => &self.metal,
            Backend::Cpu => &self.cpu,
            Backend::Vllm => &self.vllm,
            Backend::Transformers => &self.transformers,
            Backend::Mlx => &self.mlx,
        }
    }
    pub fn get_mut(&mut self, b: Backend) -> &mut Profile {
        match b {
            Backend::Cuda => &mut self.cuda,
            Backend::Rocm => &mut self.rocm,
            Backend::Vulkan => &mut self.vulkan,
            Backend::Metal => &mut self.metal,
            Backend::Cpu => &mut self.cpu,
            Backend::Vllm => &mut self.vllm,
            Backend::Transformers => &mut self.transformers,
            Backend::Mlx => &mut self.mlx,
        }
    }
}

impl Default for Profiles {
    fn default() -> Self {
        // Values and their derivations: docs/speed.md §Constants. Each is one number per backend
        // class, checked against the llama-bench scoreboards in catalogs/benchmarks.ron.
        let cuda = Profile {
            // STREAM-style reads on GDDR6X/HBM reach ~90 % of peak; the F16 and Q4_0 rows of the
            // same RTX 4090 (llama.cpp PR 4766) separate bandwidth from fixed cost: 0.92.
            bandwidth_efficiency: 0.92,
            // Little's law per SM: A100 (108 SMs) and H100 (132 SMs) decode at ~1.3–1.5 TB/s
            // (discussion 15013) although HBM offers 2–3.35 TB/s; consumer parts with ≤ 8 GB/s of
            // peak per SM are never capped.
            gbs_per_compute_unit: Some(14.0),
            // ~1 ms per token for 32 layers with CUDA graphs (the intercept of the F16/Q4_0 pair
            // above): ~20 graph nodes per layer at ~1.5 µs each.
            layer_overhead_us: 31.0,
            // mmvq: unpack nibbles, dp4a, scale: ~5 FP32-op equivalents per weight.
            dot_flops_per_weight: 5.0,
            // MMQ: int8 mma (ggml-cuda/mmq.cuh) fed by vector-ALU tile loads/dequantisation.
            // Derived with the weight passes per token tile (`gemm_token_tile`) counted apart:
            // the scoreboard's NVIDIA Q4_0 pp512 rows (discussion 15013) sit at a signed median
            // of −7 % with 4.3 (−17 % with the 3.4 that held while those passes were not
            // counted and this term absorbed them).
            quant_tensor_efficiency: Some(0.9),
            quant_vector_multiple: 4.3,
            // cuBLAS FP16 GEMM at FP16 accumulate: 4090 F16 pp512 11 048 t/s (PR 4766) and A100
            // F16 pp512 8 381 t/s (PR 6017) are 45 % and 36 % of that rate.
            f16_gemm_efficiency: 0.44,
            f16_accumulate_fp16: true,
            // `mul_mat_id` is the dense MMQ kernel: `ggml_cuda_mul_mat_q` with `ids` sorts the
            // token slots by expert (ggml-cuda/mmid.cu `ggml_cuda_launch_mm_ids_helper`),
            // quantises the activations straight into that order (`quantize_mmq_q8_1_cuda` with
            // `ids_src1`) and runs `mul_mat_q` with `expert_bounds`: each (expert, column tile)
            // is an ordinary tile, empty ones are skipped (mmq.cuh, `jt*mmq_x >= col_diff`) and
            // the results are written through `ids_dst`. No rate penalty beyond the tiles below;
            // the expert outputs' extra bytes are counted in speed::prefill.
            moe_gemm_efficiency: 1.0,
            moe_layer_overhead_us: 0.0,
            // The column tile `mmq_x` is picked for `ncols_max` = the ubatch's token count (the
            // most one expert can get: mmq.cu passes `ne12`; mmq.cuh `mul_mat_q_case` takes the
            // `mmq_x` with fewest tiles), up to 128 with int8 MMA on Turing and newer and with
            // AMD WMMA / MFMA (mmq.cuh `get_mmq_x_max_host`); every tile is computed over its
            // full width (`mul_mat_q_process_tile`): 128.
            moe_token_tile: 128.0,
            moe_token_tile_amd_intel: 0.0,
            // MMQ's grid walks the weight-row tiles fastest (`launch_mul_mat_q`: blocks
            // `(nty, ntx)`; the stream-k kernel hands each SM a run of tiles whose token tiles
            // pass over the same weights again), with `mmq_x` up to 128 tokens: each 128 tokens
            // of a ubatch read the quantised weights once more. DGX Spark (273 GB/s) isolates it:
            // Qwen2.5-Coder-7B Q8_0 pp2048 at `-ub 2048` runs at 2,276 t/s (ggerganov's DGX Spark
            // page), 16 passes over 7.5 GB are 0.48 s of its 0.90 s.
            gemm_token_tile: 128.0,
            bf16_scalar_gemm_share: 0.0,
            // F32 KQ written by the batched cuBLAS GEMM (4 B, `GGML_PREC_F32`), read and written
            // by `soft_max` (8 B), converted to F16 for the KQV GEMM (4 B read, 2 B written,
            // ggml-cuda.cu `ggml_cuda_mul_mat_batched_cublas`) and read by it (2 B): 20 B.
            kq_bytes_per_score: 20.0,
            // The scoreboard rows (discussion 15013) split at ~7 W per vector TFLOPS (7 pJ per
            // FP32 FLOP at boost): the GeForce parts at 7–13 W per TFLOPS (RTX 3060 13.4, 3080
            // 10.7, 4060 Ti 7.5, 5070 8.0) sit within −8…−5 % of the MMQ rate while those below
            // run slower than it in order of their power per TFLOPS (4090 D 5.8, 5090 5.5,
            // RTX PRO 6000 4.8, RTX 6000 Ada 3.3). Low-clock data-center parts (A100 PCIe 15.4,
            // H100 PCIe 6.9) do little work per watt at boost and hold it.
            boost_watts_per_vector_tflop: 7.0,
            coopmat2_gemm_efficiency: 0.0,
            mv_alu_efficiency: 0.0,
            unified_layer_overhead_us: 0.0,
        };
        Profiles {
            rocm: Profile {
                // HIP build of the same kernels. On RDNA3 MMQ runs on dp4a vector ALUs (the mma
                // paths are for CDNA), and dual issue (counted in RDNA3's vector_tflops) is rarely
                // reached: ~0.8 × vector rate.
                // Derived with the weight passes per token tile counted (as CUDA's): the
                // RX 7900 XTX Q4_0 pp512 row of the scoreboard (discussion 15013) at −3 %
                // with 0.9.
                quant_tensor_efficiency: None,
                quant_vector_multiple: 0.9,
                f16_accumulate_fp16: false,
                // Power per CU is on another scale than NVIDIA's per SM: not modelled.
                boost_watts_per_vector_tflop: 0.0,
                // On an APU (Radeon 8060S, gfx1151) HIP decode spends more per layer than RADV
                // on the same machine and build, dense and MoE models alike, with or without HIP
                // graphs (on by default since llama.cpp PR 22254): ROCm − Vulkan per token and
                // layer is 50 µs (Llama-2-7B Q4_0, llama.cpp issue 13565, b5392), 57 µs (the
                // same model with FA, kyuz0/amd-strix-halo-toolboxes, b9187), 86, 100, 73 and
                // 125 µs (Llama-2-7B and Llama-3.1-70B Q4_K_M, Qwen3-30B-A3B Q4_K_M,
                // Qwen3-235B-A22B Q3_K_M: visorcraft/strix-halo-llm-perf BENCHMARKS.md, b8038)
                // and 49 and 64 µs (Qwen2.5-7B Q4_K_M, Qwen3.5-35B-A3B Q8_0: llama.cpp issue
                // 24438, b9592) — the four sources' medians 50, 57, 93, 57: ~60 µs. It is the
                // per-kernel cost of HIP's AQL dispatch (every packet with a system-scope acquire
                // fence, ROCclr `rocvirtual.cpp` `kDispatchPacketHeader`) against RADV's command
                // buffers: ~3 µs more per serialized dispatch, even replayed from a HIP graph
                // (ROCm/rocm-systems issue 10834: 3.9 against 0.9 µs per node of a 941-node
                // chain on gfx1100; 3.0× on gfx1151) over ~20 kernels a layer.
                // Both profiles read the same bytes, so ROCm's layer costs Vulkan's 47 µs + 60:
                // 76 µs on top of the discrete parts' 31 (which the RX 7900 XTX scoreboard row
                // holds).
                unified_layer_overhead_us: 76.0,
                ..cuda.clone()
            },
            vulkan: Profile {
                bandwidth_efficiency: 0.92,
                gbs_per_compute_unit: None,
                // No graphs: one command buffer per ~N nodes plus pipeline barriers.
                layer_overhead_us: 47.0,
                dot_flops_per_weight: 5.0,
                // Cooperative-matrix (KHR_cooperative_matrix) FP16 GEMMs with dequantise-on-load
                // for quantised types too (ggml-vulkan.cpp, ggml_vk_mul_mat_q_f16).
                quant_tensor_efficiency: None,
                quant_vector_multiple: 0.0,
                f16_gemm_efficiency: 0.30,
                f16_accumulate_fp16: true,
                // `ggml_vk_mul_mat_id_q_f16` dispatches the dense matmul shaders compiled with
                // MUL_MAT_ID (`mul_mm.comp`, `mul_mmq.comp`): one dispatch `{m, n_tokens,
                // n_experts}` whose B rows are read through the expert's row ids
                // (`ggml_vk_matmul_id`); workgroups past an expert's token count exit
                // (`data_expert_count`). No rate penalty beyond the tiles below.
                moe_gemm_efficiency: 1.0,
                moe_layer_overhead_us: 0.0,
                // `ggml_vk_guess_matmul_id_pipeline` picks the tile by the ubatch's total token
                // count `nei1`, not per expert: above 64 tokens the large tile, 128 columns
                // (coopmat2 `l_mmqid_wg_denoms`, else `l_wg_denoms` = {128, 128, 1})...
                moe_token_tile: 128.0,
                // ...except where `mul_mat_id_l` is off: ggml_vk_get_device turns the large
                // `mul_mat_id` tile off for every AMD part and for Intel parts without Xe2's
                // cooperative matrices (Xe2 with them keeps it; the catalog does not tell the
                // two apart, so every Intel part takes the medium tile), and the medium tile's
                // 64 columns apply (`m_wg_denoms` = {64, 64, 1}).
                moe_token_tile_amd_intel: 64.0,
                // `mul_mm.comp` takes its weight-row tile from `gl_WorkGroupID.x` and its token
                // tile from `.y`: the weight tiles are walked fastest and each token tile reads
                // the weights again. The dense matmul keeps the large 128-token tile on AMD with
                // cooperative matrices (`mul_mat_l = coopmat_support` under RADV) and elsewhere.
                gemm_token_tile: 128.0,
                // Without BF16 cooperative matrices (`coopmat_bf16_support`: VK_KHR_shader_bfloat16)
                // ggml-vulkan compiles BF16 matmuls from the scalar tile shader
                // (`ggml_vk_load_shaders`, "use scalar tile sizes") that multiplies on the FP32
                // ALUs. The Radeon 8060S's BF16 rows under Vulkan (kyuz0/amd-strix-halo-toolboxes,
                // Ministral-3-14B and Gemma-3-27B pp512, 255 and 123 t/s against 801 and 464
                // under ROCm) leave 0.32 of its vector rate for them; NVIDIA's coopmat2 path is
                // not affected. Intel parts are taken alike: ggml-vulkan notes that Intel's
                // Windows driver does not expose BF16 support (`ggml_vk_get_device`).
                bf16_scalar_gemm_share: 0.32,
                // KQ written in F32 (4 B), softmax (8 B), read as F32 by the F16 × F32 matmul
                // pipeline (4 B): 16 B.
                kq_bytes_per_score: 16.0,
                boost_watts_per_vector_tflop: 0.0,
                // The coopmat2 shaders run on the tensor cores with dequantisation fused into the
                // tile loads, as cuBLAS's F16 GEMMs do on CUDA: the CUDA F16 efficiency (0.44).
                coopmat2_gemm_efficiency: 0.44,
                mv_alu_efficiency: 0.0,
                unified_layer_overhead_us: 0.0,
            },
            metal: Profile {
                // F16/Q8_0/Q4_0 rows of the same Macs (discussion 4167) give bandwidth fraction
                // and intercept separately: 0.92 and ~5 ms per token for 32 layers.
                bandwidth_efficiency: 0.92,
                gbs_per_compute_unit: None,
                // Metal encodes every graph node with a barrier (ggml-metal.m,
                // ggml_metal_graph_compute): ~20 nodes × ~8 µs per layer.
                layer_overhead_us: 156.0,
                dot_flops_per_weight: 0.0,
                // simdgroup-matrix kernels dequantise to half and multiply at the FP32 ALU rate:
                // pp512 ≈ 0.68 × fp16_tflops on every M1–M4 in discussion 4167.
                quant_tensor_efficiency: Some(0.68),
                quant_vector_multiple: 0.0,
                f16_gemm_efficiency: 0.68,
                f16_accumulate_fp16: false,
                // `kernel_mul_mm_id` is `kernel_mul_mm`'s simdgroup tile loop reading its token
                // rows through the per-expert lists `kernel_mul_mm_id_map0` writes
                // (ggml-metal-ops.cpp `ggml_metal_op_mul_mat_id`, batch ≥ 32): no rate penalty
                // beyond the tiles below.
                moe_gemm_efficiency: 1.0,
                moe_layer_overhead_us: 0.0,
                // `kernel_mul_mm_id` multiplies 64 weight rows by 32 tokens per threadgroup
                // (ggml-metal.metal, `kernel_mul_mm_id`, NR1 = 32 after `kernel_mul_mm_id_map0`
                // groups the tokens by expert): 32.
                moe_token_tile: 32.0,
                moe_token_tile_amd_intel: 0.0,
                // `kernel_mul_mm` is dispatched with the token tiles on the grid's fastest axis
                // (ggml-metal-ops.cpp `ggml_metal_op_mul_mat`: threadgroups `((ne11 + 31)/32,
                // (ne01 + 63)/64)`): the threadgroups that share a weight tile run together and
                // the weights leave memory once per ubatch.
                gemm_token_tile: 0.0,
                bf16_scalar_gemm_share: 0.0,
                // KQ in F32 (4 B), softmax (8 B), read as F32 by `kernel_mul_mm` (4 B): 16 B.
                kq_bytes_per_score: 16.0,
                boost_watts_per_vector_tflop: 0.0,
                coopmat2_gemm_efficiency: 0.0,
                // Q4_K_M decode on the M1 (7 cores), M1 Max, M2 Ultra and M3 Max (XiongjieDai's
                // May 2024 tables, 8B and 70B) runs below its bytes' time: with the kernels'
                // issue cycles (`speed::metal`: 5.4 per Q4_K weight, 10 per Q6_K) the six
                // ALU-bound rows reach 0.38–0.46 of the issue rate (median 0.45); the
                // discussion 4167 Q4_0 rows of the M1 Max and M1 Pro (4 cycles per weight) sit
                // at the knee with it.
                mv_alu_efficiency: 0.45,
                unified_layer_overhead_us: 0.0,
            },
            cpu: Profile {
                // Decode on DDR4/DDR5 reaches ~70 % of the channels' peak (13900K DDR5-6400:
                // 69 of 102 GB/s, ggml-org/llama.cpp#34).
                bandwidth_efficiency: 0.70,
                gbs_per_compute_unit: None,
                // ggml-cpu threads meet at a barrier after every node (ggml_graph_compute_thread).
                layer_overhead_us: 20.0,
                // AVX2 dequantise + int8 dot per weight, in FP32-FLOP units of the cores' rate.
                dot_flops_per_weight: 3.0,
                // Share of the cores' int8 dot-product peak (`speed::cpu`: cores × base clock ×
                // MACs per cycle of the AVX2 / VNNI / NEON path) ggml's block-quantised GEMMs
                // reach: per 32-weight block and column `tinyBLAS_Q0_AVX::gemm` (ggml-cpu/
                // llamafile/sgemm.cpp) also unpacks, sign-adjusts, converts the i32 sum and
                // FMAs it with the two scales. The scoreboard rows (ik_llama.cpp PR 54,
                // mainline column) give 0.27–0.33 on Zen 3 (AVX2) and 0.19–0.22 on Zen 4 (VNNI)
                // at base clock: 0.25 between them (docs/speed.md).
                quant_tensor_efficiency: Some(0.25),
                quant_vector_multiple: 0.0,
                f16_gemm_efficiency: 0.6,
                f16_accumulate_fp16: false,
                // ggml-cpu runs `mul_mat_id` expert by expert with `vec_dot` chunks
                // (`ggml_compute_forward_mul_mat_id`), not the repacked/tiled GEMMs dense
                // matrices get: a flat factor, no tile.
                moe_gemm_efficiency: 0.5,
                moe_layer_overhead_us: 0.0,
                moe_token_tile: 0.0,
                moe_token_tile_amd_intel: 0.0,
                gemm_token_tile: 0.0,
                bf16_scalar_gemm_share: 0.0,
                // The same graph as the GPUs: KQ F32 written, softmaxed, read (16 B).
                kq_bytes_per_score: 16.0,
                boost_watts_per_vector_tflop: 0.0,
                coopmat2_gemm_efficiency: 0.0,
                mv_alu_efficiency: 0.0,
                unified_layer_overhead_us: 0.0,
            },
            vllm: Profile {
                // CUDA graphs (vLLM captures decode graphs) leave tens of µs per layer; FP16/BF16
                // weights stream at ~85 % of HBM bandwidth in its paged-attention decode (Kwon et
                // al., SOSP 2023), Marlin 4-bit kernels near that up to batch 16–32 (Frantar et al.
                // 2024, arXiv:2408.11743).
                bandwidth_efficiency: 0.85,
                gbs_per_compute_unit: None,
                // Graph replay, sampling and the scheduler's Python step spread over the layers.
                layer_overhead_us: 30.0,
                dot_flops_per_weight: 0.0,
                quant_tensor_efficiency: Some(0.5),
                quant_vector_multiple: 0.0,
                // PyTorch/cuBLAS BF16 GEMMs with FP32 accumulate at ~60 % of peak.
                f16_gemm_efficiency: 0.6,
                f16_accumulate_fp16: false,
                moe_gemm_efficiency: 0.5,
                moe_layer_overhead_us: 0.0,
                moe_token_tile: 0.0,
                moe_token_tile_amd_intel: 0.0,
                gemm_token_tile: 0.0,
                bf16_scalar_gemm_share: 0.0,
                // FlashAttention / PagedAttention kernels: no score matrix in memory.
                kq_bytes_per_score: 0.0,
                boost_watts_per_vector_tflop: 0.0,
                coopmat2_gemm_efficiency: 0.0,
                mv_alu_efficiency: 0.0,
                unified_layer_overhead_us: 0.0,
            },
            transformers: Profile {
                bandwidth_efficiency: 0.85,
                gbs_per_compute_unit: None,
                // Eager PyTorch dispatches every kernel from Python and the GPU runs behind it, so
                // a step takes the longer of the two (speed/step.rs). Qwen2.5-0.5B, 24 layers and
                // ~1 GB of weights, generates at 47.40 tok/s through generate() on an A100
                // (Qwen2.5 speed benchmark, transformers 4.46: qwen.readthedocs.io "Speed
                // Benchmark"): 21.1 ms a token of which < 1 ms is weight reads, ~0.86 ms of
                // dispatch per layer.
                layer_overhead_us: 860.0,
                dot_flops_per_weight: 0.0,
                quant_tensor_efficiency: Some(0.3),
                quant_vector_multiple: 0.0,
                f16_gemm_efficiency: 0.5,
                f16_accumulate_fp16: false,
                moe_gemm_efficiency: 0.3,
                moe_layer_overhead_us: 0.0,
                moe_token_tile: 0.0,
                moe_token_tile_amd_intel: 0.0,
                gemm_token_tile: 0.0,
                bf16_scalar_gemm_share: 0.0,
                kq_bytes_per_score: 0.0,
                boost_watts_per_vector_tflop: 0.0,
                coopmat2_gemm_efficiency: 0.0,
                mv_alu_efficiency: 0.0,
                unified_layer_overhead_us: 0.0,
            },
            mlx: mlx_profile(),
            cuda,
        }
    }
}

/// MLX through mlx-lm on an Apple GPU. Decode and prefill run the same formulas as llama.cpp's
/// Metal profile with MLX's own constants; what differs in mechanism is in `core::mlx`.
///
/// The bandwidth fraction and the fixed cost per layer come from same-machine precision pairs:
/// mlx-lm's own `mlx_lm.benchmark -p 2048 -g 128` table (mlx_lm/BENCHMARKS.md, M4 Max 64 GB,
/// mlx 0.29.2, mlx-lm 0.28.2) runs Qwen3-4B-Instruct-2507 at bf16, 8, 6, 5 and 4 bits: decode
/// time per token against bytes read (weights + the KV cache at depth ~2,100) is a straight line,
/// 2.01 ms per GB (0.91 × 546 GB/s) plus 2.26 ms per token — 63 µs for each of its 36 layers.
/// The same table's Qwen3-30B-A3B at 8, 6, 5 and 4 bits (48 MoE layers), read at that bandwidth,
/// leaves ~105 µs per layer: ~42 µs more, the router's ~10 extra kernels (`mlx_lm/models/switch_layers.py`,
/// `SwitchGLU`; `qwen3_moe.py`, `Qwen3MoeSparseMoeBlock`: gate, softmax, argpartition,
/// take_along_axis, the gathered `gather_qmm` experts, the weighted sum) at the ~4 µs per
/// kernel the dense layers show (~16 kernels each). Checked on other Macs in
/// docs/measurements/mlx_speed.md.
fn mlx_profile() -> Profile {
    Profile {
        bandwidth_efficiency: 0.91,
        gbs_per_compute_unit: None,
        layer_overhead_us: 63.0,
        // `qmv` dequantises in registers while the loads are in flight: the bf16 and 4-bit rows
        // above fall on one line of bytes, so no extra ALU term per weight.
        dot_flops_per_weight: 0.0,
        // Prefill: `qmm` (quantised) and `steel_gemm` (bf16) on simdgroup matrices at the FP32
        // ALU rate of M1–M4: pp2048 of Qwen3-4B on the M4 Max is 0.74 (4- and 8-bit) and 0.81
        // (bf16) of 2 · params · 17.2 TFLOPS with attention counted; the M3 Pro's 4-bit row
        // (mlx-lm PR 1569: 615 tok/s on 6.44 TFLOPS) gives 0.75.
        quant_tensor_efficiency: Some(0.74),
        quant_vector_multiple: 0.0,
        f16_gemm_efficiency: 0.81,
        f16_accumulate_fp16: false,
        // `gather_qmm` over the experts sorted by index (mlx-lm `SwitchGLU`, `_gather_sort`):
        // Qwen3-30B-A3B 4-bit pp2048 at 1,754 tok/s on the M4 Max is 0.64 of the ALU rate on
        // its active parameters, 0.86 of the dense quantised rate.
        moe_gemm_efficiency: 0.86,
        moe_layer_overhead_us: 42.0,
        // The 0.86 above is measured on the sorted gather, tile waste included.
        moe_token_tile: 0.0,
        moe_token_tile_amd_intel: 0.0,
        gemm_token_tile: 0.0,
        bf16_scalar_gemm_share: 0.0,
        // mlx-lm attends through the fused `mx.fast.scaled_dot_product_attention`
        // (mlx_lm/models/base.py `scaled_dot_product_attention`): no score matrix is written.
        kq_bytes_per_score: 0.0,
        boost_watts_per_vector_tflop: 0.0,
        coopmat2_gemm_efficiency: 0.0,
        mv_alu_efficiency: 0.0,
        unified_layer_overhead_us: 0.0,
    }
}
