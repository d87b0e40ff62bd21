//! The scenario: everything a user chooses. Scenario → Estimate → Fit.

pub mod parse;
pub mod rules;
pub use rules::{Clamp, ClampWhy, Input, Problem};

use super::cluster::ClusterInputs;
use super::model::ModelSpec;
use super::precision::{KvTypes, WeightPrecision};
use super::serving::ServingInputs;
use super::units::Bytes;
use serde::{Deserialize, Serialize};

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Mode {
    #[default]
    Inference,
    /// Full fine-tune (every parameter trained).
    Full,
    Lora,
    Qlora,
    /// Embedding or reranking: one forward pass over each input sequence (`context` tokens,
    /// `batch` sequences at once), a pooled vector or a score out, no generation and no KV cache
    /// kept between requests (`core::embed`).
    Embed,
    /// Image generation with a diffusion pipeline (`core::diffusion`): sized by `headroom
    /// estimate` and `headroom fit` from the image flags, not from this scenario's model.
    Image,
}

impl Mode {
    /// The modes that size a text model (image generation is sized by `core::diffusion`).
    pub const ALL: [Mode; 5] = [
        Mode::Inference,
        Mode::Embed,
        Mode::Full,
        Mode::Lora,
        Mode::Qlora,
    ];
    /// What `--mode` accepts and the window's Mode picker offers: every mode of [`Mode::ALL`]
    /// and image generation.
    pub const CLI: [Mode; 6] = [
        Mode::Inference,
        Mode::Embed,
        Mode::Image,
        Mode::Full,
        Mode::Lora,
        Mode::Qlora,
    ];
    pub const fn cli_name(self) -> &'static str {
        match self {
            Mode::Inference => "inference",
            Mode::Full => "full",
            Mode::Lora => "lora",
            Mode::Qlora => "qlora",
            Mode::Embed => "embed",
            Mode::Image => "image",
        }
    }
    pub const fn label(self) -> &'static str {
        match self {
            Mode::Inference => "Inference",
            Mode::Full => "Full fine-tune",
            Mode::Lora => "LoRA",
            Mode::Qlora => "QLoRA",
            Mode::Embed => "Embeddings / reranking",
            Mode::Image => "Image generation",
        }
    }
    pub const fn is_training(self) -> bool {
        !matches!(self, Mode::Inference | Mode::Embed | Mode::Image)
    }
    /// One forward pass per sequence, nothing generated (embedding and reranking models).
    pub const fn is_embed(self) -> bool {
        matches!(self, Mode::Embed)
    }
    /// Image generation (`core::diffusion`).
    pub const fn is_image(self) -> bool {
        matches!(self, Mode::Image)
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Optimizer {
    #[default]
    AdamW,
    AdamW8bit,
    Sgd,
    Adafactor,
}

impl Optimizer {
    pub const ALL: [Optimizer; 4] = [
        Optimizer::AdamW,
        Optimizer::AdamW8bit,
        Optimizer::Sgd,
        Optimizer::Adafactor,
    ];
    pub const fn cli_name(self) -> &'static str {
        match self {
            Optimizer::AdamW => "adamw",
            Optimizer::AdamW8bit => "adamw-8bit",
            Optimizer::Sgd => "sgd",
            Optimizer::Adafactor => "adafactor",
        }
    }
    pub const fn label(self) -> &'static str {
        match self {
            Optimizer::AdamW => "AdamW",
            Optimizer::AdamW8bit => "AdamW 8-bit",
            Optimizer::Sgd => "SGD + momentum",
            Optimizer::Adafactor => "Adafactor",
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Checkpointing {
    #[default]
    None,
    Selective,
    Full,
}

impl Checkpointing {
    pub const ALL: [Checkpointing; 3] = [
        Checkpointing::None,
        Checkpointing::Selective,
        Checkpointing::Full,
    ];
    pub const fn cli_name(self) -> &'static str {
        match self {
            Checkpointing::None => "none",
            Checkpointing::Selective => "selective",
            Checkpointing::Full => "full",
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Offload {
    #[default]
    None,
    /// ZeRO-Offload: optimiser states (and master weights) in CPU RAM, updated by CPU Adam.
    Optimizer,
    /// ZeRO-3 Offload / Infinity: parameters too.
    OptimizerParams,
}

impl Offload {
    pub const ALL: [Offload; 3] = [Offload::None, Offload::Optimizer, Offload::OptimizerParams];
    pub const fn cli_name(self) -> &'static str {
        match self {
            Offload::None => "none",
            Offload::Optimizer => "optimizer",
            Offload::OptimizerParams => "optimizer+params",
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Runtime {
    #[default]
    Generic,
    LlamaCpp,
    Vllm,
    Transformers,
    /// Apple's MLX through mlx-lm (`mlx_lm.server`, `mlx_lm.generate`; LM Studio's MLX engine):
    /// Apple silicon only (`core::mlx`).
    Mlx,
}

impl Runtime {
    pub const ALL: [Runtime; 5] = [
        Runtime::Generic,
        Runtime::LlamaCpp,
        Runtime::Vllm,
        Runtime::Transformers,
        Runtime::Mlx,
    ];
    pub const fn cli_name(self) -> &'static str {
        match self {
            Runtime::Generic => "generic",
            Runtime::LlamaCpp => "llama.cpp",
            Runtime::Vllm => "vllm",
            Runtime::Transformers => "transformers",
            Runtime::Mlx => "mlx",
        }
    }
    pub const fn label(self) -> &'static str {
        match self {
            Runtime::Generic => "Generic",
            Runtime::LlamaCpp => "llama.cpp",
            Runtime::Vllm => "vLLM",
            Runtime::Transformers => "transformers",
            Runtime::Mlx => "MLX (mlx-lm)",
        }
    }
    /// Whether the runtime runs only on Apple silicon (MLX: Metal GPUs only; mlx-lm's CUDA and
    /// CPU builds are not what its users run, and `core::mlx` models the Metal one).
    pub const fn apple_only(self) -> bool {
        matches!(self, Runtime::Mlx)
    }
}

/// The training framework: it decides the loss path, how 4-bit layers keep activations, the
/// sharding buffers and the allocator settings (`crate::core::estimate` models each; the
/// constants and their sources are listed in `docs/memory.md`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Framework {
    /// Hugging Face transformers (Trainer / TRL / PEFT, bitsandbytes for QLoRA).
    #[default]
    Transformers,
    /// torchtune recipes.
    Torchtune,
    /// Unsloth.
    Unsloth,
    /// DeepSpeed ZeRO (through the HF Trainer), counted by DeepSpeed's own estimator convention.
    DeepSpeed,
    /// PyTorch FSDP (FULL_SHARD) through accelerate.
    Fsdp,
}

impl Framework {
    pub const ALL: [Framework; 5] = [
        Framework::Transformers,
        Framework::Torchtune,
        Framework::Unsloth,
        Framework::DeepSpeed,
        Framework::Fsdp,
    ];
    pub const fn cli_name(self) -> &'static str {
        match self {
            Framework::Transformers => "transformers",
            Framework::Torchtune => "torchtune",
            Framework::Unsloth => "unsloth",
            Framework::DeepSpeed => "deepspeed",
            Framework::Fsdp => "fsdp",
        }
    }
    pub const fn label(self) -> &'static str {
        match self {
            Framework::Transformers => "transformers",
            Framework::Torchtune => "torchtune",
            Framework::Unsloth => "Unsloth",
            Framework::DeepSpeed => "DeepSpeed",
            Framework::Fsdp => "FSDP",
        }
    }
}

/// Which matrices LoRA adapts.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum LoraTargets {
    /// q_proj and v_proj (PEFT's default for Llama-family models).
    QV,
    /// q, k, v, o.
    Attention,
    /// Every linear layer in the blocks (QLoRA paper setting).
    #[default]
    AllLinear,
}

impl LoraTargets {
    pub const ALL: [LoraTargets; 3] = [
        LoraTargets::QV,
        LoraTargets::Attention,
        LoraTargets::AllLinear,
    ];
    pub const fn cli_name(self) -> &'static str {
        match self {
            LoraTargets::QV => "qv",
            LoraTargets::Attention => "attention",
            LoraTargets::AllLinear => "all-linear",
        }
    }
}

/// How the KV cache is allocated.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum KvAllocation {
    /// Reserve the maximum length for every sequence up front (HF static cache, llama.cpp).
    #[default]
    Contiguous,
    /// PagedAttention: 16-token blocks on demand (vLLM).
    Paged,
}

/// How layers that do not fit on the GPU are run.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SplitStyle {
    /// llama.cpp `-ngl k`: the other layers run on the CPU at system-RAM bandwidth.
    CpuLayers,
    /// accelerate `device_map="auto"` / vLLM `--cpu-offload-gb`: weights cross PCIe every step.
    Streaming,
}

/// Bounds on every input (the GUI sliders and the CLI both clamp or reject against these).
pub mod limits {
    pub const MAX_PARAMS: u64 = 10_000_000_000_000; // 10^13
    pub const MAX_CONTEXT: u64 = 10_000_000; // 10^7
    pub const MAX_BATCH: u64 = 4096;
    pub const MAX_GPUS: u64 = 65_536;
    pub const MAX_LORA_RANK: u64 = 65_536;
}

/// Everything the user chose.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Scenario {
    pub model: ModelSpec,
    /// The preset id, when the model came from the catalog.
    pub model_id: Option<String>,
    pub weights: WeightPrecision,
    pub kv: KvTypes,
    /// Tokens per sequence (prompt + generated): the KV cache is sized for this.
    pub context: u64,
    /// Concurrent sequences (inference) or micro-batch (training).
    pub batch: u64,
    /// Prefill micro-batch in tokens (llama.cpp `-ub`, vLLM `max_num_batched_tokens` chunk).
    pub ubatch: u64,
    pub mode: Mode,
    pub optimizer: Optimizer,
    pub checkpointing: Checkpointing,
    pub flash_attention: bool,
    pub kv_allocation: KvAllocation,
    pub lora_rank: u64,
    pub lora_targets: LoraTargets,
    /// GPUs the job is spread over (tensor parallel for inference, data parallel for training).
    /// 0 = CPU only: everything in host RAM.
    pub gpus: u64,
    /// DeepSpeed ZeRO stage 0–3.
    pub zero: u8,
    pub offload: Offload,
    pub runtime: Runtime,
    /// The training framework (training modes only; old scenario files load with the default).
    pub framework: Framework,
    /// Train with pure BF16 weights and optimiser states (no FP32 master copy).
    pub pure_bf16: bool,
    /// vLLM `--gpu-memory-utilization` (fraction of VRAM vLLM may take).
    pub gpu_memory_utilization: f64,
    /// A user-set runtime reserve per GPU replacing the runtime profile's default.
    pub overhead_override: Option<Bytes>,
    /// Prompt length for time-to-first-token.
    pub prompt_tokens: u64,
    /// Tokens in a training run, for its time and cost.
    pub train_tokens: u64,
    /// Serving many users: the traffic, the target and the engine (`core::serving`).
    pub serving: ServingInputs,
    /// More than one machine: nodes, link, layout (`core::cluster`).
    pub cluster: ClusterInputs,
    /// The user's own split of a llama.cpp run (`-ngl`, `--n-cpu-moe`): the fit answers for it
    /// instead of searching (`core::placement::asked`).
    pub launch: LaunchInputs,
    /// Speculative decoding (a draft model, an EAGLE-3 head or the model's MTP layers), when on
    /// (`core::speculative`). Inference only.
    pub speculative: Option<crate::core::speculative::SpeculativeInputs>,
    /// A vision-language model's encoder and the images per request (`core::vision`).
    /// Inference only.
    pub vision: Option<crate::core::vision::VisionInputs>,
    /// Image generation (`Mode::Image`): the pipeline preset, resolution, steps, images per
    /// call, offload and VAE tiling (`core::diffusion`); the precision is `weights`. Left out of
    /// a saved scenario while it holds the defaults.
    #[serde(skip_serializing_if = "crate::core::diffusion::ImageSettings::is_default")]
    pub image: crate::core::diffusion::ImageSettings,
}

/// The user's own launch settings that fix where the layers go.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LaunchInputs {
    /// llama.cpp `-ngl N` / `--n-gpu-layers N`: whole layers on the GPU(s), the rest on the CPU
    /// (N ≥ the layers: every layer).
    pub gpu_layers: Option<u64>,
    /// llama.cpp `--n-cpu-moe N`: every layer on the GPU(s) but the routed experts of the first N
    /// layers, which stay in RAM.
    pub n_cpu_moe: Option<u64>,
    /// llama.cpp `-ts a,b,…` / `--tensor-split`: each GPU's share of the GPU layers, in the GPUs'
    /// order (empty: llama.cpp's default, by free memory — an even split over identical GPUs).
    /// Entries past the machine's GPUs are ignored, missing ones are 0
    /// (`core::placement::tensor_split`).
    pub tensor_split: Vec<f32>,
    /// llama.cpp `-t N` / `--threads N`: the CPU threads that run the CPU's share (default: every
    /// core). Caps the CPU part's compute at N cores and its memory bandwidth at N threads'
    /// draw (`core::speed::CpuDevice::with_threads`).
    pub threads: Option<u32>,
    /// mlx-lm `--prefill-step-size N`: prompt tokens per prefill step under `--runtime mlx`
    /// (default 2048, `core::mlx::PREFILL_STEP_SIZE`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefill_step: Option<u64>,
}

/// Most GPUs a tensor split names: llama.cpp's `LLAMA_MAX_DEVICES` (`include/llama.h`).
pub const MAX_SPLIT_DEVICES: usize = 16;
/// Most CPU threads `--threads` takes.
pub const MAX_THREADS: u32 = 1024;

impl LaunchInputs {
    /// A tensor split as llama.cpp reads `-ts`: proportions separated by `,` or `/`
    /// (`common/arg.cpp`, "--tensor-split": `std::regex regex{ R"([,/]+)" }`), each finite and
    /// ≥ 0, at most [`MAX_SPLIT_DEVICES`].
    pub fn parse_tensor_split(s: &str) -> Result<Vec<f32>, String> {
        let parts: Vec<&str> = s
            .split([',', '/'])
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect();
        if parts.is_empty() {
            return Err(format!(
                "'{s}' is not a tensor split: give proportions like 3,1"
            ));
        }
        if parts.len() > MAX_SPLIT_DEVICES {
            return Err(format!(
                "'{s}' names {} GPUs; llama.cpp takes at most {MAX_SPLIT_DEVICES}",
                parts.len()
            ));
        }
        parts
            .iter()
            .map(|p| match p.parse::<f32>() {
                Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
                _ => Err(format!("'{p}' in '{s}' is not a proportion (a number ≥ 0)")),
            })
            .collect()
    }
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            model: ModelSpec::default(),
            model_id: Some("llama-3-8b".into()),
            weights: WeightPrecision::Bf16,
            kv: KvTypes::default(),
            context: 8192,
            batch: 1,
            ubatch: 512,
            mode: Mode::Inference,
            optimizer: Optimizer::AdamW,
            checkpointing: Checkpointing::None,
            flash_attention: true,
            kv_allocation: KvAllocation::Contiguous,
            lora_rank: 16,
            lora_targets: LoraTargets::AllLinear,
            gpus: 1,
            zero: 0,
            offload: Offload::None,
            runtime: Runtime::Generic,
            framework: Framework::Transformers,
            pure_bf16: false,
            gpu_memory_utilization: 0.9,
            overhead_override: None,
            prompt_tokens: 1024,
            train_tokens: 100_000_000,
            serving: ServingInputs::default(),
            cluster: ClusterInputs::default(),
            launch: LaunchInputs::default(),
            speculative: None,
            vision: None,
            image: crate::core::diffusion::ImageSettings::default(),
        }
    }
}

impl Scenario {
    /// Clamp every numeric input into the supported domain (absurd slider or file values never
    /// reach the arithmetic).
    pub fn clamped(&self) -> Scenario {
        let mut s = self.clone();
        s.clamp();
        s
    }

    /// [`Self::clamped`] in place, for a scenario the caller owns already (no clone).
    pub fn clamp(&mut self) {
        use limits::*;
        let s = self;
        s.context = s.context.clamp(1, MAX_CONTEXT);
        s.batch = s.batch.clamp(1, MAX_BATCH);
        s.ubatch = s.ubatch.clamp(1, rules::MAX_UBATCH);
        s.gpus = s.gpus.min(MAX_GPUS);
        s.zero = s.zero.min(3);
        s.lora_rank = s.lora_rank.clamp(1, MAX_LORA_RANK);
        if !s.gpu_memory_utilization.is_finite() {
            s.gpu_memory_utilization = 0.9;
        }
        s.gpu_memory_utilization = s.gpu_memory_utilization.clamp(0.05, 1.0);
        s.prompt_tokens = s.prompt_tokens.clamp(1, s.context);
        s.train_tokens = s.train_tokens.min(rules::MAX_TRAIN_TOKENS);
        if let Some(n) = s.model.nominal_params {
            s.model.nominal_params = Some(n.clamp(1, MAX_PARAMS));
        }
        // A drafter and images belong to generation: training and embedding passes size
        // without them (the inputs stay in the scenario for when the mode comes back).
        if s.mode != Mode::Inference {
            s.speculative = None;
            s.vision = None;
        }
    }

    /// Choose the runtime, with the allocation it implies: vLLM (and SGLang, which the serving
    /// engines map onto it) allocates the KV cache in PagedAttention blocks, the others
    /// contiguously — unless the user chose the allocation (`keep_allocation`).
    pub fn set_runtime(&mut self, runtime: Runtime, keep_allocation: bool) {
        self.runtime = runtime;
        if !keep_allocation {
            self.kv_allocation = if runtime == Runtime::Vllm {
                KvAllocation::Paged
            } else {
                KvAllocation::Contiguous
            };
        }
    }

    /// The precision the weights are held at: the scenario's, except where the mode trains
    /// another. QLoRA keeps the frozen base in NF4 (with double quantisation unless plain NF4 is
    /// chosen); a full fine-tune trains 16-bit weights (BF16 unless FP32 or FP16 is chosen);
    /// image generation takes BF16 for a text-only format (GPTQ, AWQ, MXFP4).
    pub fn held_weights(&self) -> WeightPrecision {
        use WeightPrecision as W;
        match self.mode {
            Mode::Qlora if !matches!(self.weights, W::Nf4 | W::Nf4DoubleQuant) => W::Nf4DoubleQuant,
            Mode::Full if !matches!(self.weights, W::Fp32 | W::Fp16 | W::Bf16) => W::Bf16,
            // GPTQ, AWQ and MXFP4 are text-model formats no image runtime loads.
            Mode::Image if !crate::core::diffusion::IMAGE_WEIGHTS.contains(&self.weights) => {
                W::Bf16
            }
            _ => self.weights,
        }
    }

    /// The weight precisions mode `mode` can hold (all for inference and LoRA).
    pub fn weights_for_mode(mode: Mode) -> &'static [WeightPrecision] {
        use WeightPrecision as W;
        match mode {
            Mode::Qlora => &[W::Nf4, W::Nf4DoubleQuant],
            Mode::Full => &[W::Fp32, W::Fp16, W::Bf16],
            Mode::Image => &crate::core::diffusion::IMAGE_WEIGHTS,
            Mode::Inference | Mode::Embed | Mode::Lora => &W::ALL,
        }
    }

    /// The GPU count the per-GPU arithmetic divides by (CPU-only counts as one device).
    pub fn devices(&self) -> u64 {
        self.gpus.max(1)
    }
}
