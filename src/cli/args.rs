//! The command-line grammar (clap derive): subcommands, options, their help and possible values.
//! Names are a contract: add freely, never rename.

use super::values::{
    Choice, KvParser, OnOff, SplitArg, parse_acceptance, parse_batch, parse_context,
    parse_draft_tokens, parse_electricity, parse_fraction, parse_gpu_layers, parse_gpus,
    parse_image_size, parse_image_tokens, parse_images, parse_images_per_batch, parse_lora_rank,
    parse_output, parse_params, parse_rate, parse_resolution, parse_sched, parse_seconds,
    parse_share, parse_spec_method, parse_steps, parse_tensor_split, parse_threads, parse_tp,
    parse_train_tokens, parse_ubatch, parse_user_rate, parse_users, parse_zero,
};
use crate::core::catalog::MachineKind;
use crate::core::precision::{KvTypes, WeightPrecision};
use crate::core::scenario::{
    Checkpointing, Framework, KvAllocation, LoraTargets, Mode, Offload, Optimizer, Runtime,
};
use crate::core::serving::{Engine, Mix};
use clap::builder::TypedValueParser;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "headroom",
    version = super::VERSION,
    about = "What hardware do I need for this LLM, and will it run on mine?",
    long_about = "What hardware do I need for this LLM, and will it run on mine?\n\n\
                  Without a subcommand headroom opens its window; with one it prints to stdout.\n\
                  Bad input exits with status 2 and one line naming the argument."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Memory needed by a scenario, component by component.
    Estimate(EstimateArgs),
    /// Fit a scenario on catalog machines (and this one: --machine local).
    Fit(FitArgs),
    /// Write a sizing report (Markdown, HTML or JSON).
    Report(ReportArgs),
    /// Which machine to buy or rent for a scenario, per kind, and what would make this one fit.
    Recommend(crate::cli::recommend::RecommendArgs),
    /// Detect this machine: RAM, CPU, GPUs.
    Detect {
        /// Print the detection as JSON (sizes in bytes).
        #[arg(long)]
        json: bool,
        /// Also measure memory bandwidth (≤ 300 ms) and report the CPU's SIMD width.
        #[arg(long)]
        bench: bool,
    },
    /// Serving many users: KV pool, users held at a latency target, replicas, $ per 1M tokens.
    Serve(ServeArgs),
    /// More than one machine: nodes, parallel layout, time and cost of training or serving.
    Cluster(crate::cli::cluster::ClusterArgs),
    /// Answer an agent: a Model Context Protocol server over stdio (estimate, fit, recommend,
    /// serve, cluster, report, detect and the catalogs as tools; README "Ask headroom from an
    /// agent").
    Mcp,
    /// Fit this machine's speed constants to its own llama-bench output (JSON, CSV or table).
    Calibrate {
        /// llama-bench output: `-o json`, `-o csv` or its default Markdown table.
        file: std::path::PathBuf,
    },
    /// Run llama-bench on this machine with the settings headroom recommends and show the
    /// prediction beside the measurement (speed, buffers); --save-calibration stores it.
    Verify(crate::cli::verify::VerifyArgs),
    /// What each weight precision costs in quality (published KLD), its size, and with
    /// --machine whether it fits and the best-quality one that does.
    Quality(crate::cli::quality::QualityArgs),
    /// The built-in and user catalogs.
    Catalog {
        #[command(subcommand)]
        command: CatalogCommand,
    },
}

#[derive(Subcommand, Debug)]
pub enum CatalogCommand {
    /// List machines.
    List {
        /// Only machines of this kind.
        #[arg(long, value_name = "KIND", value_parser = Choice::<MachineKind>::new())]
        kind: Option<MachineKind>,
        /// Print the machines as JSON (sizes in bytes, lowercase kinds).
        #[arg(long)]
        json: bool,
    },
    /// List the model presets that --model accepts.
    Models {
        /// Print the presets as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Validate a catalog RON file.
    Validate {
        /// The RON file to check.
        file: PathBuf,
    },
}

/// Everything that defines a scenario, shared by estimate, fit and report.
#[derive(Args, Debug, Clone, Default)]
pub struct ScenarioArgs {
    /// A model preset id (list them: `headroom catalog models`) [default: llama-3-8b].
    #[arg(long, group = "source", value_name = "ID", help_heading = "Model")]
    pub model: Option<String>,
    /// A Hugging Face config.json.
    #[arg(long, group = "source", value_name = "FILE", help_heading = "Model")]
    pub config: Option<PathBuf>,
    /// A parameter count: 7e9, 7B, 70b, 1.5T, 1,000 … 10^13 (the shape is then estimated;
    /// `70` alone is refused: write 70B).
    #[arg(long, group = "source", value_name = "COUNT", value_parser = parse_params, help_heading = "Model")]
    pub params: Option<u64>,
    /// A GGUF file (the header only is read).
    #[arg(long, group = "source", value_name = "FILE", help_heading = "Model")]
    pub gguf: Option<PathBuf>,
    /// A safetensors file or a folder of shards (headers only).
    #[arg(long, group = "source", value_name = "PATH", help_heading = "Model")]
    pub safetensors: Option<PathBuf>,
    /// A Diffusers pipeline folder (with --mode image): model_index.json, each component's
    /// config.json and, where present, its safetensors headers.
    #[arg(long, group = "source", value_name = "DIR", help_heading = "Model")]
    pub diffusers: Option<PathBuf>,
    /// A Hugging Face Hub repo, ORG/NAME[@REVISION]: headers only are read over the network.
    #[arg(long, group = "source", value_name = "REPO", help_heading = "Model")]
    pub hf: Option<String>,
    /// With --hf: the file to read (one GGUF quant, a .safetensors file, config.json).
    #[arg(long, requires = "hf", value_name = "FILE", help_heading = "Model")]
    pub hf_file: Option<String>,
    /// A .gguf or .safetensors file at a URL (headers only, by range requests).
    #[arg(long, group = "source", value_name = "URL", help_heading = "Model")]
    pub url: Option<String>,
    /// A runtime's own command line, quoted: `llama-server`/`llama-cli`/`llama-bench` or `vllm
    /// serve`; its model, context, cache types, FlashAttention, -ngl/--n-cpu-moe, slots, TP and
    /// memory limits become these options (the ones given here win). An unknown flag is an error.
    #[arg(long, value_name = "LINE", help_heading = "Model")]
    pub command: Option<String>,
    /// A saved scenario (RON); other options override it.
    #[arg(long, value_name = "FILE", help_heading = "Model")]
    pub scenario: Option<PathBuf>,
    /// Weight precision [default: bf16, or the file's own for --gguf/--safetensors].
    #[arg(long, value_name = "PRECISION", value_parser = Choice::<WeightPrecision>::with(WeightPrecision::from_cli), help_heading = "Precision")]
    pub weights: Option<WeightPrecision>,
    /// KV cache type, or K/V types such as q8_0/q4_0 [default: fp16].
    #[arg(long, value_name = "TYPE[/TYPE]", value_parser = KvParser, help_heading = "Precision")]
    pub kv: Option<KvTypes>,
    /// Context length in tokens, 1 … 10,000,000; 32K = 32,000 [default: 8192].
    #[arg(long, value_name = "TOKENS", value_parser = parse_context, help_heading = "Workload")]
    pub context: Option<u64>,
    /// Sequences decoded together (or the training micro-batch), 1 … 4,096 [default: 1].
    #[arg(long, value_name = "N", value_parser = parse_batch, help_heading = "Workload")]
    pub batch: Option<u64>,
    /// Tokens per forward pass in prompt processing (llama.cpp -ub), 1 … 1,048,576 [default: 512].
    #[arg(long, value_name = "TOKENS", value_parser = parse_ubatch, help_heading = "Workload")]
    pub ubatch: Option<u64>,
    /// Prompt tokens for time-to-first-token (at most the context) [default: 1024].
    #[arg(long, value_name = "TOKENS", value_parser = parse_context, help_heading = "Workload")]
    pub prompt: Option<u64>,
    /// Inference or a kind of fine-tuning [default: inference].
    #[arg(long, value_name = "MODE", value_parser = Choice::<Mode>::new(), help_heading = "Workload")]
    pub mode: Option<Mode>,
    /// Optimizer for training [default: adamw].
    #[arg(long, value_name = "OPTIMIZER", value_parser = Choice::<Optimizer>::new(), help_heading = "Training")]
    pub optimizer: Option<Optimizer>,
    /// Activation checkpointing for training [default: none].
    #[arg(long, value_name = "WHICH", value_parser = Choice::<Checkpointing>::new(), help_heading = "Training")]
    pub checkpointing: Option<Checkpointing>,
    /// LoRA rank, 1 … 65,536 [default: 16].
    #[arg(long, value_name = "RANK", value_parser = parse_lora_rank, help_heading = "Training")]
    pub lora_rank: Option<u64>,
    /// Which matrices LoRA adapts [default: all-linear].
    #[arg(long, value_name = "WHICH", value_parser = Choice::<LoraTargets>::new(), help_heading = "Training")]
    pub lora_targets: Option<LoraTargets>,
    /// ZeRO stage for data-parallel training [default: 0].
    #[arg(long, value_name = "STAGE", value_parser = clap::builder::PossibleValuesParser::new(["0", "1", "2", "3"]).try_map(|s| parse_zero(&s)), help_heading = "Training")]
    pub zero: Option<u8>,
    /// What ZeRO moves to host RAM [default: none].
    #[arg(long, value_name = "WHAT", value_parser = Choice::<Offload>::new(), help_heading = "Training")]
    pub offload: Option<Offload>,
    /// Training framework: sets the loss path, QLoRA layers, sharding buffers and allocator
    /// reserve (docs/memory.md) [default: transformers].
    #[arg(long, value_name = "FRAMEWORK", value_parser = Choice::<Framework>::new(), help_heading = "Training")]
    pub framework: Option<Framework>,
    /// Train with pure BF16 states (no FP32 master copy).
    #[arg(long, help_heading = "Training")]
    pub pure_bf16: bool,
    /// Tokens of a training run (for its time and cost), e.g. 1B [default: 100M].
    #[arg(long, value_name = "COUNT", value_parser = parse_train_tokens, help_heading = "Training")]
    pub train_tokens: Option<u64>,
    /// GPUs to spread the job over, 0 … 65,536 (0 = CPU only) [default: 1]; for estimate and
    /// report (fit, serve and recommend use each machine's own GPUs and refuse it).
    #[arg(long, value_name = "N", value_parser = parse_gpus, help_heading = "Runtime")]
    pub gpus: Option<u64>,
    /// The runtime whose allocation rules apply [default: generic].
    #[arg(long, value_name = "RUNTIME", value_parser = Choice::<Runtime>::new(), help_heading = "Runtime")]
    pub runtime: Option<Runtime>,
    /// FlashAttention (no full attention-score matrix) [default: on].
    #[arg(long, value_name = "ON|OFF", value_parser = Choice::<OnOff>::new().map(bool::from), help_heading = "Runtime")]
    pub flash_attention: Option<bool>,
    /// KV allocation [default: contiguous; paged with --runtime vllm].
    #[arg(long, value_name = "HOW", value_parser = Choice::<KvAllocation>::new(), help_heading = "Runtime")]
    pub kv_alloc: Option<KvAllocation>,
    /// vLLM --gpu-memory-utilization, 0.05 … 1.0 [default: 0.9].
    #[arg(long, value_name = "FRACTION", value_parser = parse_fraction, help_heading = "Runtime")]
    pub gpu_memory_utilization: Option<f64>,
    /// Your own llama.cpp split: whole layers on the GPU(s), the rest on the CPU (`-ngl N`),
    /// 0 … 10,000 (at least the layers: every layer); the fit answers for it, fitting or not
    /// [default: the fastest split that fits].
    #[arg(long, value_name = "N", value_parser = parse_gpu_layers, help_heading = "Runtime")]
    pub gpu_layers: Option<u64>,
    /// Your own llama.cpp expert split: every layer on the GPU(s) but the routed experts of the
    /// first N layers, which stay in RAM (`-ngl 99 --n-cpu-moe N`), 0 … 10,000; mixture-of-experts
    /// models [default: the fewest that fit].
    #[arg(long, value_name = "N", value_parser = parse_gpu_layers, help_heading = "Runtime", conflicts_with = "gpu_layers")]
    pub n_cpu_moe: Option<u64>,
    /// Your own llama.cpp tensor split (`-ts a,b,…`): each GPU's proportion of the GPU layers,
    /// in the GPUs' order, e.g. 3,1 (every layer unless --gpu-layers says fewer); memory per GPU
    /// follows its layers [default: even over identical GPUs].
    #[arg(long, value_name = "A,B,…", value_parser = parse_tensor_split, help_heading = "Runtime", conflicts_with = "n_cpu_moe")]
    pub tensor_split: Option<SplitArg>,
    /// CPU threads for the layers the CPU runs (llama.cpp `-t N`), 1 … 1,024: compute on
    /// min(N, cores) cores and their share of the memory bandwidth [default: every core].
    #[arg(long, value_name = "N", value_parser = parse_threads, help_heading = "Runtime")]
    pub threads: Option<u32>,
    /// mlx-lm's prompt tokens per prefill step under --runtime mlx (`--prefill-step-size N`):
    /// the prefill chunk and its working memory [default: 2048].
    #[arg(long, value_name = "TOKENS", value_parser = parse_ubatch, help_heading = "Runtime")]
    pub prefill_step: Option<u64>,
    /// Speculative decoding: a draft model (`draft`, with --draft), an EAGLE-3 head (`eagle3`) or
    /// the model's own multi-token-prediction layers (`mtp`) [default: off; on as `draft` with
    /// --draft].
    #[arg(long, value_name = "METHOD", value_parser = parse_spec_method, help_heading = "Speculative decoding")]
    pub speculative: Option<crate::core::speculative::SpecMethod>,
    /// The draft model: a preset id or a .gguf / .safetensors / config.json file (llama.cpp
    /// `-md`, vLLM `speculative_config.model`); same tokenizer as the model.
    #[arg(long, value_name = "MODEL|FILE", help_heading = "Speculative decoding")]
    pub draft: Option<String>,
    /// The draft's weights [default: the model's; BF16 for an EAGLE-3 head].
    #[arg(long, value_name = "PRECISION", value_parser = Choice::<WeightPrecision>::new(), help_heading = "Speculative decoding")]
    pub draft_weights: Option<WeightPrecision>,
    /// Tokens drafted per step, 1 … 64 (`--draft-max`, `num_speculative_tokens`) [default: 5 for
    /// a draft model, 3 for EAGLE-3, 1 for MTP].
    #[arg(long, value_name = "N", value_parser = parse_draft_tokens, help_heading = "Speculative decoding")]
    pub draft_tokens: Option<u64>,
    /// Share of drafted tokens the model accepts, per token, 0 … 0.99 [default: 0.7 draft model,
    /// 0.75 EAGLE-3, 0.85 MTP].
    #[arg(long, value_name = "RATE", value_parser = parse_acceptance, help_heading = "Speculative decoding")]
    pub acceptance: Option<f64>,
    /// A vision-language model's projector: llama.cpp's mmproj GGUF (`--mmproj`), its vision
    /// encoder sized beside the model and its images counted into the prompt.
    #[arg(long, value_name = "FILE", help_heading = "Images")]
    pub mmproj: Option<PathBuf>,
    /// Images per request, 1 … 64 [default: 1 with --mmproj].
    #[arg(long, value_name = "N", value_parser = parse_images, help_heading = "Images")]
    pub images: Option<u64>,
    /// Tokens each image takes in the context [default: from the mmproj: patches ÷ merge²].
    #[arg(long, value_name = "N", value_parser = parse_image_tokens, help_heading = "Images")]
    pub image_tokens: Option<u64>,
    /// Keep the vision encoder on the CPU (llama.cpp `--no-mmproj-offload`).
    #[arg(long, help_heading = "Images")]
    pub no_mmproj_offload: bool,
    /// The image a dynamic-resolution or tiling vision tower sees (Qwen2.5-VL, LLaVA-NeXT from
    /// --config or --safetensors), WIDTHxHEIGHT or one side: Qwen2.5-VL rounds it to its 28-px
    /// grid [default: 560], LLaVA-NeXT tiles it [default: its largest grid pinpoint, 672].
    #[arg(long, value_name = "WxH", value_parser = parse_image_size, help_heading = "Images")]
    pub image_size: Option<(u64, u64)>,
    /// With --mode image: the image size in pixels, WIDTHxHEIGHT or one side for a square
    /// (a multiple of 8, of 16 for SD3 and Flux) [default: the pipeline's, 1024x1024 or 512x512].
    #[arg(long, value_name = "WxH", value_parser = parse_resolution, help_heading = "Image generation")]
    pub resolution: Option<(u32, u32)>,
    /// With --mode image: denoising steps, 1 … 1,000 [default: the pipeline's: 50 SD 1.5 / SDXL /
    /// FLUX.1-dev, 28 SD3, 4 FLUX.1-schnell].
    #[arg(long, value_name = "N", value_parser = parse_steps, help_heading = "Image generation")]
    pub steps: Option<u32>,
    /// With --mode image: images per pipeline call (num_images_per_prompt), 1 … 64 [default: 1].
    #[arg(long, value_name = "N", value_parser = parse_images_per_batch, help_heading = "Image generation")]
    pub images_per_batch: Option<u32>,
    /// With --mode image: where the pipeline's components live [default: auto, the fastest that
    /// fits each machine].
    #[arg(long, value_name = "HOW", value_parser = Choice::<crate::core::diffusion::PipelineOffload>::new(), help_heading = "Image generation")]
    pub pipeline_offload: Option<crate::core::diffusion::PipelineOffload>,
    /// With --mode image: decode the image tile by tile (Diffusers enable_vae_tiling,
    /// stable-diffusion.cpp --vae-tiling).
    #[arg(long, help_heading = "Image generation")]
    pub vae_tiling: bool,
    /// With --mode image: the runtime, and so the kernels a step runs [default: diffusers, or
    /// sdcpp for a GGUF type].
    #[arg(long, value_name = "RUNTIME", value_parser = Choice::<crate::core::diffusion::ImageRuntime>::new(), help_heading = "Image generation")]
    pub image_runtime: Option<crate::core::diffusion::ImageRuntime>,
    /// With --mode image: FP32 matmuls in TF32 (torch.backends.cuda.matmul.allow_tf32; off by
    /// default in PyTorch, while cuDNN convolutions use TF32 anyway).
    #[arg(long, help_heading = "Image generation")]
    pub tf32: bool,
    /// With --mode image: FP8 weights multiply on FP8 tensor cores (torch._scaled_mm, torchao
    /// float8; Ada, Hopper, Blackwell) instead of being cast to 16 bits before each layer.
    #[arg(long, help_heading = "Image generation")]
    pub fp8_matmul: bool,
    /// Users with a request in flight (closed loop, like `vllm bench serve --max-concurrency`)
    /// [default: none: plan for the most users that meet the target].
    #[arg(long, value_name = "N", value_parser = parse_users, group = "load", help_heading = "Serving")]
    pub users: Option<u64>,
    /// Requests per second arriving at random (Poisson, like `--request-rate`).
    #[arg(long, value_name = "PER_S", value_parser = parse_rate, group = "load", help_heading = "Serving")]
    pub rate: Option<f64>,
    /// A traffic mix: sets the prompt and output lengths and the shared prefix (--prompt,
    /// --output-tokens and --prefix-share override it).
    #[arg(long, value_name = "MIX", value_parser = Choice::<Mix>::new(), help_heading = "Serving")]
    pub mix: Option<Mix>,
    /// Mean generated tokens per request [default: 256].
    #[arg(long = "output-tokens", value_name = "TOKENS", value_parser = parse_output, help_heading = "Serving")]
    pub output_tokens: Option<u64>,
    /// Share of each prompt common to many requests (system prompt, template), 0 … 0.99,
    /// served from the prefix cache [default: 0].
    #[arg(long, value_name = "SHARE", value_parser = parse_share, help_heading = "Serving")]
    pub prefix_share: Option<f64>,
    /// Target time to first token at p95, seconds [default: 2].
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds, help_heading = "Serving")]
    pub ttft: Option<f64>,
    /// Target decode speed each user sees, tokens/s [default: 20].
    #[arg(long, value_name = "TOK_S", value_parser = parse_user_rate, help_heading = "Serving")]
    pub user_tokens_per_s: Option<f64>,
    /// The serving engine [default: auto].
    #[arg(long, value_name = "ENGINE", value_parser = Choice::<Engine>::new(), help_heading = "Serving")]
    pub engine: Option<Engine>,
    /// GPUs per replica (vLLM/SGLang -tp) [default: the size that holds the most users].
    #[arg(long, value_name = "N", value_parser = parse_tp, help_heading = "Serving")]
    pub tp: Option<u64>,
    /// vLLM --max-num-seqs / SGLang --max-running-requests / llama-server --parallel
    /// [default: the engine's].
    #[arg(long, value_name = "N", value_parser = parse_sched, help_heading = "Serving")]
    pub max_num_seqs: Option<u64>,
    /// vLLM --max-num-batched-tokens / SGLang --chunked-prefill-size [default: the engine's].
    #[arg(long, value_name = "TOKENS", value_parser = parse_sched, help_heading = "Serving")]
    pub max_num_batched_tokens: Option<u64>,
    /// Prefix caching [default: on for vLLM and SGLang].
    #[arg(long, value_name = "ON|OFF", value_parser = Choice::<OnOff>::new().map(bool::from), help_heading = "Serving")]
    pub prefix_caching: Option<bool>,
    /// Assume a Mac's GPU wired limit (`iogpu.wired_limit_mb`) or an APU's GTT size raised to RAM
    /// less the OS reserve (the notes give the command) [default: the platform's limit].
    #[arg(long, help_heading = "Runtime")]
    pub raise_gpu_limit: bool,
}

#[derive(Args, Debug)]
#[command(allow_negative_numbers = true)]
pub struct EstimateArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// Print the estimate as JSON (sizes in bytes).
    #[arg(long)]
    pub json: bool,
    /// Also save the scenario the options describe (RON), for --scenario or the window's Open
    /// scenario.
    #[arg(long, value_name = "FILE")]
    pub save_scenario: Option<std::path::PathBuf>,
}

/// Help for `--machine`, worded for each subcommand's default.
const FIT_MACHINE_HELP: &str = "A machine id (repeatable): a catalog id such as desktop-rtx4090-64gb or p5.48xlarge, or `local` for this machine [default: every catalog machine]";
const SERVE_MACHINE_HELP: &str =
    "A machine id (repeatable; `local` = this machine) [default: every machine with a GPU]";
const REPORT_MACHINE_HELP: &str = "A machine id (repeatable; `local` = this machine) [default: this machine and the recommended picks]";

/// Which machines fit, serve and report look at. The help of `--machine` (and of `--kind` for
/// report) names each subcommand's default, so each sets it with `mut_arg`.
#[derive(Args, Debug)]
pub struct MachineChoice {
    /// A machine id (repeatable; `local` = this machine).
    #[arg(long = "machine", value_name = "ID")]
    pub machines: Vec<String>,
    /// Only catalog machines of this kind.
    #[arg(long, value_name = "KIND", value_parser = Choice::<MachineKind>::new())]
    pub kind: Option<MachineKind>,
}

/// The cost and output options of the per-machine tables (fit and serve).
#[derive(Args, Debug)]
pub struct MachineRows {
    /// Electricity price for owned machines, USD per kWh [default: 0.15].
    #[arg(long, value_name = "USD_PER_KWH", value_parser = parse_electricity)]
    pub electricity: Option<f64>,
    /// Print one JSON object per machine (sizes in bytes; null where a value does not apply).
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(
    allow_negative_numbers = true,
    mut_arg("machines", |a| a.help(FIT_MACHINE_HELP))
)]
pub struct FitArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    #[command(flatten)]
    pub select: MachineChoice,
    /// Only the machines the scenario fits on.
    #[arg(long)]
    pub fits_only: bool,
    /// A quality floor: the largest mean KL divergence the weights may cost (a number such as
    /// 0.05, or lossless, near, good, usable); the output says when the chosen precision is
    /// past it.
    #[arg(long, value_name = "KLD|LEVEL", value_parser = crate::core::quality::parse_max_kld)]
    pub max_kld: Option<f64>,
    #[command(flatten)]
    pub rows: MachineRows,
}

#[derive(Args, Debug)]
#[command(
    allow_negative_numbers = true,
    mut_arg("machines", |a| a.help(SERVE_MACHINE_HELP))
)]
pub struct ServeArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    #[command(flatten)]
    pub select: MachineChoice,
    /// The per-user decode speed target, tokens/s (same as --user-tokens-per-s).
    #[arg(long, value_name = "TOK_S", value_parser = parse_user_rate, conflicts_with = "user_tokens_per_s")]
    pub min_tokens_per_s: Option<f64>,
    /// Also list the machines that cannot serve the model, with the reason.
    #[arg(long)]
    pub all: bool,
    /// Print the engine's launch line (vllm serve, SGLang, llama-server) for the first machine.
    #[arg(long)]
    pub launch: bool,
    #[command(flatten)]
    pub rows: MachineRows,
}

#[derive(Args, Debug)]
#[command(
    allow_negative_numbers = true,
    mut_arg("machines", |a| a.help(REPORT_MACHINE_HELP)),
    mut_arg("kind", |a| a.help("Every catalog machine of this kind instead of the picks"))
)]
pub struct ReportArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    #[command(flatten)]
    pub select: MachineChoice,
    /// Report format [default: from the --output extension (.md, .html, .json), else md].
    #[arg(long, value_name = "FORMAT", value_parser = ["md", "markdown", "html", "json"])]
    pub format: Option<String>,
    /// Output file, or - for stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE", default_value = "-")]
    pub output: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn grammar_is_consistent() {
        Cli::command().debug_assert();
    }

    /// Every option of every subcommand has help text, and every enumerated one lists its values.
    #[test]
    fn every_option_has_help() {
        let cli = Cli::command();
        let mut stack: Vec<&clap::Command> = vec![&cli];
        while let Some(c) = stack.pop() {
            for a in c.get_arguments() {
                if a.get_id() == "help" || a.get_id() == "version" {
                    continue;
                }
                assert!(
                    a.get_help().is_some(),
                    "{} --{}: no help",
                    c.get_name(),
                    a.get_id()
                );
            }
            stack.extend(c.get_subcommands());
        }
        let est = cli.find_subcommand("estimate").unwrap();
        for id in [
            "weights",
            "kv",
            "mode",
            "optimizer",
            "checkpointing",
            "lora_targets",
            "zero",
            "offload",
            "runtime",
            "flash_attention",
            "kv_alloc",
            "framework",
        ] {
            let a = est.get_arguments().find(|a| a.get_id() == id).unwrap();
            assert!(!a.get_possible_values().is_empty(), "--{id}");
        }
    }
}
