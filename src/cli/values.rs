//! How the command line reads values: `clap::ValueEnum` for the core's choices (implemented
//! here, so the core stays free of clap) and range-checked numbers. Every parser rejects bad
//! input with one line naming the option; `--help` lists each option's possible values.

use crate::core::catalog::MachineKind;
use crate::core::format::group_digits;
use crate::core::precision::{KvPrecision, KvTypes, WeightPrecision};
pub use crate::core::scenario::parse::{
    MAX_UBATCH, parse_context, parse_fraction, parse_gpu_layers, parse_sched, parse_threads,
    parse_tp, parse_ubatch,
};
use crate::core::scenario::parse::{ranged, whole_count};
use crate::core::scenario::{
    Checkpointing, Framework, KvAllocation, LoraTargets, Mode, Offload, Optimizer, Runtime, limits,
};
use crate::core::serving::{Engine, Mix};
use clap::ValueEnum;
use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use std::marker::PhantomData;

/// `ValueEnum` for a core enum with `ALL` and `cli_name()`: the variant's CLI name, its help,
/// and any extra spellings the CLI has always accepted.
macro_rules! value_enum {
    ($t:ty, |$v:ident| $help:expr, aliases: $aliases:expr) => {
        impl ValueEnum for $t {
            fn value_variants<'a>() -> &'a [Self] {
                &<$t>::ALL
            }
            fn to_possible_value(&self) -> Option<PossibleValue> {
                let $v = *self;
                let aliases: fn($t) -> &'static [&'static str] = $aliases;
                Some(
                    PossibleValue::new($v.cli_name())
                        .help($help)
                        .aliases(aliases($v).iter().copied()),
                )
            }
        }
    };
}

// `--mode` takes `Mode::CLI`: the window's `Mode::ALL` and image generation.
impl ValueEnum for Mode {
    fn value_variants<'a>() -> &'a [Self] {
        &Mode::CLI
    }
    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.cli_name()).help(self.label()))
    }
}
value_enum!(crate::core::diffusion::PipelineOffload, |p| p.label(), aliases: |_| &[]);
value_enum!(crate::core::diffusion::ImageRuntime, |r| match r {
    crate::core::diffusion::ImageRuntime::Diffusers => "Diffusers in eager PyTorch: a kernel per operation, launched from Python",
    crate::core::diffusion::ImageRuntime::Compiled => "Diffusers with torch.compile: element-wise chains fused, CUDA graphs",
    crate::core::diffusion::ImageRuntime::TensorRt => "a TensorRT engine: fused kernels, CUDA graphs, FP8 matmuls where the GPU has them",
    crate::core::diffusion::ImageRuntime::StableDiffusionCpp => "stable-diffusion.cpp (ggml): GGUF weights, F32 activations",
    crate::core::diffusion::ImageRuntime::CoreMl => "Apple Core ML on the GPU: compiled graph, attention scores stored",
}, aliases: |r| match r {
    crate::core::diffusion::ImageRuntime::Compiled => &["torch.compile", "torch-compile"],
    crate::core::diffusion::ImageRuntime::TensorRt => &["trt"],
    crate::core::diffusion::ImageRuntime::StableDiffusionCpp => &["stable-diffusion.cpp", "sd.cpp"],
    crate::core::diffusion::ImageRuntime::CoreMl => &["core-ml"],
    crate::core::diffusion::ImageRuntime::Diffusers => &["eager"],
});
value_enum!(Engine, |e| match e {
    Engine::Auto => "vLLM on CUDA/ROCm GPUs, llama-server elsewhere (or the --runtime's engine)",
    Engine::Vllm => "vLLM: PagedAttention pool, continuous batching, chunked prefill",
    Engine::Sglang => "SGLang: RadixAttention token pool (--mem-fraction-static)",
    Engine::LlamaServer => "llama.cpp llama-server: --parallel slots sharing -c",
    Engine::Transformers => "transformers generate(): static batches",
}, aliases: |e| match e {
    Engine::LlamaServer => &["llama.cpp", "llamacpp", "llama-cpp"],
    _ => &[],
});
value_enum!(Mix, |m| m.source(), aliases: |m| match m {
    Mix::CodingAgent => &["agent", "coding"],
    Mix::Summarize => &["summarise", "summary"],
    _ => &[],
});
value_enum!(Optimizer, |o| o.label(), aliases: |_| &[]);
value_enum!(Checkpointing, |c| match c {
    Checkpointing::None => "keep every activation for the backward pass",
    Checkpointing::Selective => "recompute attention internals (Korthikanti et al. 2022)",
    Checkpointing::Full => "keep only each layer's input; recompute the rest",
}, aliases: |_| &[]);
value_enum!(Offload, |o| match o {
    Offload::None => "everything on the GPUs",
    Offload::Optimizer => "ZeRO-Offload: optimizer states and master weights in host RAM",
    Offload::OptimizerParams => "ZeRO-Infinity: parameters in host RAM too",
}, aliases: |_| &[]);
value_enum!(Runtime, |r| r.label(), aliases: |r| match r {
    Runtime::LlamaCpp => &["llamacpp", "llama-cpp"],
    Runtime::Mlx => &["mlx-lm", "mlx_lm"],
    _ => &[],
});
value_enum!(Framework, |f| match f {
    Framework::Transformers => "Hugging Face Trainer / TRL / PEFT (bitsandbytes for QLoRA)",
    Framework::Torchtune => "torchtune recipes",
    Framework::Unsloth => "Unsloth",
    Framework::DeepSpeed => "DeepSpeed ZeRO, counted by DeepSpeed's own estimator convention",
    Framework::Fsdp => "PyTorch FSDP (FULL_SHARD) through accelerate",
}, aliases: |_| &[]);
value_enum!(LoraTargets, |t| match t {
    LoraTargets::QV => "q_proj and v_proj (PEFT's default for Llama)",
    LoraTargets::Attention => "q, k, v and o projections",
    LoraTargets::AllLinear => "every linear layer in the blocks (QLoRA paper)",
}, aliases: |_| &[]);
value_enum!(KvPrecision, |k| match k {
    KvPrecision::Fp32 => "32-bit float",
    KvPrecision::Fp16 => "16-bit float",
    KvPrecision::Bf16 => "bfloat16",
    KvPrecision::Fp8 => "8-bit float (vLLM --kv-cache-dtype fp8)",
    KvPrecision::Q8_0 => "ggml Q8_0, 8.5 bits (llama.cpp --cache-type-k q8_0)",
    KvPrecision::Q4_0 => "ggml Q4_0, 4.5 bits",
}, aliases: |_| &[]);
value_enum!(MachineKind, |k| match k {
    MachineKind::Apple => "machines with an Apple GPU (MacBooks included)",
    MachineKind::Desktop => "desktops and workstations",
    k => k.label(),
}, aliases: |_| &[]);
value_enum!(WeightPrecision, |p| p.label(), aliases: |p| match p {
    WeightPrecision::Nf4DoubleQuant => &["nf4_dq", "nf4_double_quant", "nf4dq"],
    WeightPrecision::Gptq4 => &["gptq", "gptq_4bit"],
    WeightPrecision::Awq4 => &["awq", "awq_4bit"],
    WeightPrecision::Q8_0 => &["q8-0"],
    WeightPrecision::Q6K => &["q6-k"],
    WeightPrecision::Q5KM => &["q5-k-m"],
    WeightPrecision::Q5_0 => &["q5-0"],
    WeightPrecision::Q4KM => &["q4-k-m"],
    WeightPrecision::Q4_0 => &["q4-0"],
    WeightPrecision::Q3KM => &["q3-k-m"],
    WeightPrecision::Q2K => &["q2-k"],
    WeightPrecision::Iq4Xs => &["iq4-xs"],
    WeightPrecision::Iq4Nl => &["iq4-nl"],
    WeightPrecision::Iq3M => &["iq3-m"],
    WeightPrecision::Iq3Xxs => &["iq3-xxs"],
    WeightPrecision::Iq2M => &["iq2-m"],
    WeightPrecision::Iq2Xs => &["iq2-xs"],
    WeightPrecision::Iq2Xxs => &["iq2-xxs"],
    WeightPrecision::Mxfp4 => &["mxfp4_moe", "mxfp4-moe"],
    WeightPrecision::Fp8Block => &["fp8_block"],
    WeightPrecision::Nvfp4 => &["modelopt_fp4", "modelopt-fp4"],
    WeightPrecision::Mlx3 => &["mlx3"],
    WeightPrecision::Mlx4 => &["mlx4"],
    WeightPrecision::Mlx5 => &["mlx5"],
    WeightPrecision::Mlx6 => &["mlx6"],
    WeightPrecision::Mlx8 => &["mlx8"],
    _ => &[],
});

/// KV allocation (`--kv-alloc`).
impl ValueEnum for KvAllocation {
    fn value_variants<'a>() -> &'a [Self] {
        &[KvAllocation::Contiguous, KvAllocation::Paged]
    }
    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            KvAllocation::Contiguous => PossibleValue::new("contiguous")
                .help("the full context reserved per sequence (llama.cpp, HF static cache)"),
            KvAllocation::Paged => {
                PossibleValue::new("paged").help("PagedAttention, 16-token blocks (vLLM)")
            }
        })
    }
}

/// `--flash-attention on|off`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum OnOff {
    On,
    Off,
}

impl ValueEnum for OnOff {
    fn value_variants<'a>() -> &'a [Self] {
        &[OnOff::On, OnOff::Off]
    }
    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            OnOff::On => PossibleValue::new("on").aliases(["true", "1", "yes"]),
            OnOff::Off => PossibleValue::new("off").aliases(["false", "0", "no"]),
        })
    }
}

impl From<OnOff> for bool {
    fn from(v: OnOff) -> bool {
        v == OnOff::On
    }
}

/// A parser for a [`ValueEnum`]: case-insensitive, blanks trimmed, names and aliases; `extra`
/// accepts spellings beyond them (`q4-k_m`). `--help` lists the possible values and an unknown
/// value is an error naming the option and the values it takes.
#[derive(Clone)]
pub struct Choice<T> {
    extra: fn(&str) -> Option<T>,
    _t: PhantomData<T>,
}

impl<T: ValueEnum> Choice<T> {
    pub fn new() -> Self {
        Choice {
            extra: |_| None,
            _t: PhantomData,
        }
    }
    pub fn with(extra: fn(&str) -> Option<T>) -> Self {
        Choice {
            extra,
            _t: PhantomData,
        }
    }
}

impl<T: ValueEnum> Default for Choice<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: ValueEnum + Clone + Send + Sync + 'static> TypedValueParser for Choice<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        let raw = value.to_string_lossy();
        let s = raw.trim();
        T::from_str(s, true)
            .ok()
            .or_else(|| (self.extra)(s))
            .ok_or_else(|| {
                let mut e = clap::Error::new(ErrorKind::InvalidValue).with_cmd(cmd);
                e.insert(
                    ContextKind::InvalidArg,
                    ContextValue::String(arg.map_or_else(|| "...".into(), |a| a.to_string())),
                );
                e.insert(
                    ContextKind::InvalidValue,
                    ContextValue::String(raw.to_string()),
                );
                let names: Vec<String> = T::value_variants()
                    .iter()
                    .filter_map(|v| v.to_possible_value())
                    .map(|p| p.get_name().to_string())
                    .collect();
                let near = super::scenario::nearest_ids(s, names.iter().map(String::as_str), 1);
                if let Some(n) = near.first() {
                    e.insert(
                        ContextKind::SuggestedValue,
                        ContextValue::String((*n).to_string()),
                    );
                }
                e.insert(ContextKind::ValidValue, ContextValue::Strings(names));
                e
            })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            T::value_variants()
                .iter()
                .filter_map(|v| v.to_possible_value()),
        ))
    }
}

/// `--kv`: one cache type, or K and V types as `K/V`.
#[derive(Clone, Default)]
pub struct KvParser;

impl TypedValueParser for KvParser {
    type Value = KvTypes;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<KvTypes, clap::Error> {
        // The plain-function parser builds clap's usual "invalid value … for '--kv': why" error.
        let parse: fn(&str) -> Result<KvTypes, String> = parse_kv;
        parse.parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            KvPrecision::ALL
                .iter()
                .filter_map(|v| v.to_possible_value()),
        ))
    }
}

/// One KV cache type, or K/V types: fp16, q8_0/q4_0.
pub fn parse_kv(s: &str) -> Result<KvTypes, String> {
    KvTypes::parse(s).ok_or_else(|| {
        format!("'{s}' is not a KV type: fp32, fp16, bf16, fp8, q8_0, q4_0 (or K/V like q8_0/q4_0)")
    })
}

/// The smallest `--params` taken: a count below it is a missing suffix (`70` for 70B), not a
/// language model.
pub const MIN_PARAMS: u64 = 1000;

/// A parameter count: 7e9, 7B, 70b, 1.5T (1,000 … 10^13). `--params 70` is refused with the
/// suggestion `70B` rather than sized as a 70-parameter model.
pub fn parse_params(s: &str) -> Result<u64, String> {
    let n = whole_count(s)?;
    if n < MIN_PARAMS {
        return Err(format!(
            "'{s}' is {n} parameters: write {}B for {} billion (counts take K, M, B, T: 7B, 1.5T, 7e9)",
            s.trim(),
            s.trim()
        ));
    }
    if n > limits::MAX_PARAMS {
        return Err(format!("'{s}' is outside 1,000 … 10^13"));
    }
    Ok(n)
}

/// Tokens of a training run, 1 … 10^15 (`100M`, `1B`).
pub fn parse_train_tokens(s: &str) -> Result<u64, String> {
    ranged(s, 1, crate::core::scenario::rules::MAX_TRAIN_TOKENS)
}

pub fn parse_batch(s: &str) -> Result<u64, String> {
    ranged(s, 1, limits::MAX_BATCH)
}
/// `--resolution WIDTHxHEIGHT` (or one side for a square), each side 64 … 8,192 pixels; the
/// multiple a pipeline needs is checked with the pipeline (`ImageInputs::problem`).
pub fn parse_resolution(s: &str) -> Result<(u32, u32), String> {
    let (w, h) = crate::core::diffusion::parse_resolution(s)?;
    let (lo, hi) = crate::core::diffusion::limits::SIDE;
    for v in [w, h] {
        if v < lo || v > hi {
            return Err(format!(
                "'{s}': a side of {v} pixels is outside {lo} … {}",
                group_digits(hi as u64)
            ));
        }
    }
    Ok((w, h))
}
/// `--steps`: denoising steps, 1 … 1,000.
pub fn parse_steps(s: &str) -> Result<u32, String> {
    let (lo, hi) = crate::core::diffusion::limits::STEPS;
    ranged(s, lo as u64, hi as u64).map(|n| n as u32)
}
/// `--images-per-batch`: images per pipeline call, 1 … 64.
pub fn parse_images_per_batch(s: &str) -> Result<u32, String> {
    let (lo, hi) = crate::core::diffusion::limits::IMAGES;
    ranged(s, lo as u64, hi as u64).map(|n| n as u32)
}
pub fn parse_gpus(s: &str) -> Result<u64, String> {
    ranged(s, 0, limits::MAX_GPUS)
}
/// `--tensor-split a,b,…`: each GPU's proportion of the layers (llama.cpp `-ts`).
#[derive(Clone, Debug, PartialEq)]
pub struct SplitArg(pub Vec<f32>);

pub fn parse_tensor_split(s: &str) -> Result<SplitArg, String> {
    crate::core::scenario::LaunchInputs::parse_tensor_split(s).map(SplitArg)
}
pub fn parse_lora_rank(s: &str) -> Result<u64, String> {
    ranged(s, 1, limits::MAX_LORA_RANK)
}
pub fn parse_zero(s: &str) -> Result<u8, String> {
    match s.trim() {
        t @ ("0" | "1" | "2" | "3") => t.parse().map_err(|_| s.to_string()),
        _ => Err(format!("'{s}' is not a ZeRO stage (0, 1, 2 or 3)")),
    }
}
/// Tokens a speculative drafter proposes per step, 1 … 64.
pub fn parse_draft_tokens(s: &str) -> Result<u64, String> {
    ranged(s, 1, crate::core::speculative::MAX_DRAFT_TOKENS)
}
/// Images per request, 1 … 64.
pub fn parse_images(s: &str) -> Result<u64, String> {
    ranged(s, 1, 64)
}
/// Context tokens one image takes, 1 … 65,536.
pub fn parse_image_tokens(s: &str) -> Result<u64, String> {
    ranged(s, 1, 65_536)
}
/// `--image-size`: the image a dynamic-resolution vision tower sees, WIDTHxHEIGHT or one side,
/// 1 … 16,384 pixels a side.
pub fn parse_image_size(s: &str) -> Result<(u64, u64), String> {
    let (w, h) = crate::core::diffusion::parse_resolution(s)?;
    for v in [w, h] {
        if !(1..=16_384).contains(&v) {
            return Err(format!("'{s}': a side of {v} pixels is outside 1 … 16,384"));
        }
    }
    Ok((u64::from(w), u64::from(h)))
}
/// Per-token acceptance rate of speculative decoding, 0 … 0.99.
pub fn parse_acceptance(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number"))?;
    if !(0.0..=0.99).contains(&v) {
        return Err(format!("'{s}' is outside 0 … 0.99"));
    }
    Ok(v)
}
/// A speculative-decoding method: draft, eagle3 or mtp.
pub fn parse_spec_method(s: &str) -> Result<crate::core::speculative::SpecMethod, String> {
    crate::core::speculative::SpecMethod::from_cli(s)
        .ok_or_else(|| format!("'{s}' is not one of draft, eagle3, mtp"))
}
/// Concurrent users (requests in flight), 1 … 1,000,000.
pub fn parse_users(s: &str) -> Result<u64, String> {
    ranged(s, 1, crate::core::serving::inputs::limits::MAX_USERS)
}
/// Generated tokens per request, 1 … 1,000,000.
pub fn parse_output(s: &str) -> Result<u64, String> {
    ranged(s, 1, crate::core::serving::inputs::limits::MAX_OUTPUT)
}
/// A positive finite number up to `hi` (`unit` names it in the error).
fn positive(s: &str, hi: f64, unit: &str) -> Result<f64, String> {
    let t = s.trim();
    let t = t.strip_suffix(unit).unwrap_or(t).trim();
    let v: f64 = t.parse().map_err(|_| format!("'{s}' is not a number"))?;
    if !(v.is_finite() && v > 0.0 && v <= hi) {
        return Err(format!("'{s}' is outside 0 … {}", group_digits(hi as u64)));
    }
    Ok(v)
}
/// Requests per second, > 0.
pub fn parse_rate(s: &str) -> Result<f64, String> {
    positive(s, crate::core::serving::inputs::limits::MAX_RATE, "/s")
}
/// Seconds (`2`, `2s`, `0.5`).
pub fn parse_seconds(s: &str) -> Result<f64, String> {
    positive(s, crate::core::serving::inputs::limits::MAX_TTFT_S, "s")
}
/// Tokens per second per user.
pub fn parse_user_rate(s: &str) -> Result<f64, String> {
    positive(
        s,
        crate::core::serving::inputs::limits::MAX_TOKENS_PER_S,
        "tok/s",
    )
}
/// A share 0 … 0.99.
pub fn parse_share(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number"))?;
    if !(0.0..=0.99).contains(&v) {
        return Err(format!("'{s}' is outside 0 … 0.99"));
    }
    Ok(v)
}
/// Tensor-parallel size, 1 … 65,536.
/// An electricity price, USD per kWh: 0 or more (a negative price is refused, not read as 0).
pub fn parse_electricity(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number"))?;
    if !v.is_finite() {
        return Err(format!("'{s}' is not a finite price"));
    }
    if v < 0.0 {
        return Err(format!("'{s}' is negative: a price per kWh is 0 or more"));
    }
    if v > 1000.0 {
        return Err(format!("'{s}' is outside 0 … 1,000 USD per kWh"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_weight_spelling_the_core_accepts_is_a_value() {
        for p in WeightPrecision::ALL {
            let v = p.to_possible_value().unwrap();
            assert_eq!(WeightPrecision::from_cli(v.get_name()), Some(p));
            for a in v.get_name_and_aliases() {
                assert_eq!(WeightPrecision::from_cli(a), Some(p), "{a}");
            }
        }
        assert_eq!(
            WeightPrecision::from_str("Q4_K_M", true),
            Ok(WeightPrecision::Q4KM)
        );
        assert_eq!(Runtime::from_str("llamacpp", true), Ok(Runtime::LlamaCpp));
        assert_eq!(OnOff::from_str("yes", true), Ok(OnOff::On));
    }

    #[test]
    fn ranges() {
        assert_eq!(parse_context("32K"), Ok(32_000));
        assert!(parse_context("0").is_err());
        assert!(parse_zero("4").is_err());
        assert_eq!(parse_zero("3"), Ok(3));
        assert!(parse_fraction("1.5").is_err());
        assert!(parse_electricity("-1").is_err());
        assert_eq!(parse_electricity("0"), Ok(0.0));
        assert!(parse_context("1.5").is_err());
        assert_eq!(parse_context("1.5K"), Ok(1500));
        assert_eq!(parse_context("1.1K"), Ok(1100));
        assert!(parse_params("70").unwrap_err().contains("70B"));
        assert_eq!(parse_params("7.5e9"), Ok(7_500_000_000));
    }
}

value_enum!(crate::core::catalog::LinkPreset, |l| l.label(), aliases: |_| &[]);
value_enum!(crate::core::cluster::Sharding, |s| s.label(), aliases: |_| &[]);
value_enum!(crate::core::cluster::ServeEngine, |e| e.label(), aliases: |_| &[]);

/// A whole number in `lo ..= hi` (cluster sizes, layouts, batches).
pub fn parse_u64_in(s: &str, lo: u64, hi: u64) -> Result<u64, String> {
    ranged(s, lo, hi)
}
