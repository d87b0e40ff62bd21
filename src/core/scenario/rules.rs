//! The scenario's rules, in one place for the window, the command line and scenario files:
//! - [`Scenario::problems`]: every input outside its domain (a scenario file or a typed value is
//!   refused with the input named, as the command-line parsers refuse a flag);
//! - [`Scenario::normalized`]: the scenario with the inputs that depend on each other brought
//!   together (the prompt to the context) and every number in its domain, each change returned
//!   as a [`Clamp`] the surface shows. A context beyond the model's trained length is kept (the
//!   estimate notes it): llama.cpp runs it with a warning (`n_ctx_train < n_ctx` in
//!   `llama_context`), vLLM with `VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`, and its memory is what the
//!   user asked about.
//!
//! Bounds are [`super::limits`], `core::serving::inputs::limits` and `core::model_limits`.

use super::{Scenario, limits};
use crate::core::format;
use crate::core::model_limits::{ModelField, implausible};
use crate::core::serving::Load;
use crate::core::serving::inputs::limits as serving_limits;
use std::fmt;

/// Largest prefill micro-batch (`--ubatch`) in tokens.
pub const MAX_UBATCH: u64 = 1 << 20;
/// Largest scheduler limit (`--max-num-seqs`, `--max-num-batched-tokens`).
pub const MAX_SCHED: u64 = 1 << 22;
/// Most training tokens a run is sized for (10^15).
pub const MAX_TRAIN_TOKENS: u64 = 1_000_000_000_000_000;

/// One numeric input of a scenario, named as the command line (`flag`) and a scenario file
/// (`field`) name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    Context,
    Batch,
    Ubatch,
    PromptTokens,
    Gpus,
    Zero,
    LoraRank,
    GpuMemoryUtilization,
    TrainTokens,
    Params,
    Users,
    Rate,
    OutputTokens,
    PrefixShare,
    Ttft,
    UserTokensPerS,
    TensorParallel,
    MaxNumSeqs,
    MaxNumBatchedTokens,
    MemFractionStatic,
    /// One proportion of llama.cpp's `--tensor-split`.
    TensorSplit,
    /// llama.cpp's `--threads`.
    Threads,
    /// An image's width and height in pixels (`--resolution`).
    ImageWidth,
    ImageHeight,
    /// Denoising steps per image (`--steps`).
    Steps,
    /// Images per pipeline call (`--images-per-batch`).
    ImagesPerBatch,
    /// A field of the model's shape.
    Model(ModelField),
}

impl Input {
    /// The command-line flag ("--context"); model fields have none (their field name instead).
    pub const fn flag(self) -> &'static str {
        match self {
            Input::Context => "--context",
            Input::Batch => "--batch",
            Input::Ubatch => "--ubatch",
            Input::PromptTokens => "--prompt",
            Input::Gpus => "--gpus",
            Input::Zero => "--zero",
            Input::LoraRank => "--lora-rank",
            Input::GpuMemoryUtilization => "--gpu-memory-utilization",
            Input::TrainTokens => "--train-tokens",
            Input::Params => "--params",
            Input::Users => "--users",
            Input::Rate => "--rate",
            Input::OutputTokens => "--output-tokens",
            Input::PrefixShare => "--prefix-share",
            Input::Ttft => "--ttft",
            Input::UserTokensPerS => "--user-tokens-per-s",
            Input::TensorParallel => "--tp",
            Input::MaxNumSeqs => "--max-num-seqs",
            Input::MaxNumBatchedTokens => "--max-num-batched-tokens",
            Input::MemFractionStatic => "serving.mem_fraction_static",
            Input::TensorSplit => "--tensor-split",
            Input::Threads => "--threads",
            Input::ImageWidth | Input::ImageHeight => "--resolution",
            Input::Steps => "--steps",
            Input::ImagesPerBatch => "--images-per-batch",
            Input::Model(f) => f.label(),
        }
    }
    /// The scenario file's field ("context", "serving.output_tokens", "model.layers").
    pub const fn field(self) -> &'static str {
        match self {
            Input::Context => "context",
            Input::Batch => "batch",
            Input::Ubatch => "ubatch",
            Input::PromptTokens => "prompt_tokens",
            Input::Gpus => "gpus",
            Input::Zero => "zero",
            Input::LoraRank => "lora_rank",
            Input::GpuMemoryUtilization => "gpu_memory_utilization",
            Input::TrainTokens => "train_tokens",
            Input::Params => "model.nominal_params",
            Input::Users => "serving.load (Users)",
            Input::Rate => "serving.load (RequestsPerSecond)",
            Input::OutputTokens => "serving.output_tokens",
            Input::PrefixShare => "serving.prefix_share",
            Input::Ttft => "serving.target.ttft_p95_s",
            Input::UserTokensPerS => "serving.target.min_tokens_per_s",
            Input::TensorParallel => "serving.tensor_parallel",
            Input::MaxNumSeqs => "serving.max_num_seqs",
            Input::MaxNumBatchedTokens => "serving.max_num_batched_tokens",
            Input::MemFractionStatic => "serving.mem_fraction_static",
            Input::TensorSplit => "launch.tensor_split",
            Input::Threads => "launch.threads",
            Input::ImageWidth => "image.width",
            Input::ImageHeight => "image.height",
            Input::Steps => "image.steps",
            Input::ImagesPerBatch => "image.images",
            Input::Model(f) => model_field_name(f),
        }
    }
    /// The window's label ("Context", "Prompt tokens").
    pub const fn label(self) -> &'static str {
        match self {
            Input::Context => "Context",
            Input::Batch => "Batch",
            Input::Ubatch => "Prefill micro-batch",
            Input::PromptTokens => "Prompt tokens",
            Input::Gpus => "GPUs",
            Input::Zero => "ZeRO stage",
            Input::LoraRank => "LoRA rank",
            Input::GpuMemoryUtilization => "GPU memory utilization",
            Input::TrainTokens => "Training tokens",
            Input::Params => "Parameters",
            Input::Users => "Users",
            Input::Rate => "Requests per second",
            Input::OutputTokens => "Output tokens",
            Input::PrefixShare => "Prefix share",
            Input::Ttft => "TTFT target",
            Input::UserTokensPerS => "Tokens/s per user",
            Input::TensorParallel => "Tensor parallel",
            Input::MaxNumSeqs => "Max sequences",
            Input::MaxNumBatchedTokens => "Max batched tokens",
            Input::MemFractionStatic => "Static memory fraction",
            Input::TensorSplit => "Tensor split",
            Input::Threads => "Threads",
            Input::ImageWidth => "Width",
            Input::ImageHeight => "Height",
            Input::Steps => "Steps",
            Input::ImagesPerBatch => "Images per batch",
            Input::Model(f) => f.label(),
        }
    }
}

/// The `ModelSpec` field a model limit bounds (scenario files write the spec's own names).
const fn model_field_name(f: ModelField) -> &'static str {
    use ModelField as F;
    match f {
        F::Layers => "model.layers",
        F::MtpLayers => "model.mtp_layers",
        F::Hidden => "model.hidden",
        F::Heads => "model.heads",
        F::KvHeads => "model.kv_heads",
        F::HeadDim => "model.head_dim",
        F::Ffn => "model.intermediate",
        F::Vocab => "model.vocab",
        F::Context => "model.max_context",
        F::NormsPerLayer => "model.norms_per_layer",
        F::Experts => "model.moe.experts",
        F::ExpertsUsed => "model.moe.active_experts",
        F::ExpertFfn => "model.moe.expert_ffn",
        F::SharedExperts => "model.moe.shared_experts",
        F::SharedFfn => "model.moe.shared_ffn",
        F::LeadingDenseLayers => "model.moe.first_dense_layers",
        F::MoeLayerStep => "model.moe.sparse_step",
        F::KvLoraRank => "model.mla.kv_lora_rank",
        F::QLoraRank => "model.mla.q_lora_rank",
        F::RopeHeadDim => "model.mla.qk_rope_head_dim",
        F::NopeHeadDim => "model.mla.qk_nope_head_dim",
        F::ValueHeadDim => "model.mla.v_head_dim",
        F::SlidingWindow => "model.sliding.window",
        F::SlidingPeriod => "model.sliding.period",
    }
}

/// A value outside its input's domain.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub input: Input,
    /// The value given (NaN and infinities kept as they are).
    pub value: f64,
    /// The domain, both ends included.
    pub lo: f64,
    pub hi: f64,
}

impl fmt::Display for Problem {
    /// "context 0 is outside 1 … 10,000,000".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} is outside {} … {}",
            self.input.field(),
            format::input_value(self.value),
            format::input_value(self.lo),
            format::input_value(self.hi)
        )
    }
}

/// Why an input was changed by [`Scenario::normalized`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClampWhy {
    /// A prompt cannot be longer than the context.
    LongerThanContext,
    /// Outside the input's domain (a value a slider or a file could not hold).
    Range,
    /// An image side off the pipeline's grid: the nearest multiple of its latent (× patch)
    /// size in pixels.
    Grid(u32),
}

/// An input [`Scenario::normalized`] changed: from what, to what, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Clamp {
    pub input: Input,
    pub from: f64,
    pub to: f64,
    pub why: ClampWhy,
}

impl fmt::Display for Clamp {
    /// "Prompt tokens lowered from 9,000 to the context (8,192): a prompt cannot be longer than
    /// the context."
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dir = if self.to < self.from {
            "lowered"
        } else {
            "raised"
        };
        let (from, to) = (format::input_value(self.from), format::input_value(self.to));
        let label = self.input.label();
        match self.why {
            ClampWhy::LongerThanContext => write!(
                f,
                "{label} {dir} from {from} to the context ({to}): a prompt cannot be longer than \
                 the context."
            ),
            ClampWhy::Range => write!(
                f,
                "{label} {dir} from {from} to {to}, the nearest value \
                 it can take."
            ),
            ClampWhy::Grid(m) => write!(
                f,
                "{label} {dir} from {from} to {to}: the pipeline takes multiples of {m} pixels."
            ),
        }
    }
}

/// Pushes a problem when `v` is outside `lo … hi` (or not finite).
fn check(out: &mut Vec<Problem>, input: Input, v: f64, lo: f64, hi: f64) {
    if !(v.is_finite() && v >= lo && v <= hi) {
        out.push(Problem {
            input,
            value: v,
            lo,
            hi,
        });
    }
}

impl Scenario {
    /// Every input outside its domain, in the order of the scenario's fields. The command line
    /// refuses the same values in its flag parsers; scenario files and the window check here.
    pub fn problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        let u = |n: u64| n as f64;
        let p = &mut out;
        check(
            p,
            Input::Context,
            u(self.context),
            1.0,
            u(limits::MAX_CONTEXT),
        );
        check(p, Input::Batch, u(self.batch), 1.0, u(limits::MAX_BATCH));
        check(p, Input::Ubatch, u(self.ubatch), 1.0, u(MAX_UBATCH));
        check(
            p,
            Input::PromptTokens,
            u(self.prompt_tokens),
            1.0,
            u(limits::MAX_CONTEXT),
        );
        check(p, Input::Gpus, u(self.gpus), 0.0, u(limits::MAX_GPUS));
        check(p, Input::Zero, f64::from(self.zero), 0.0, 3.0);
        check(
            p,
            Input::LoraRank,
            u(self.lora_rank),
            1.0,
            u(limits::MAX_LORA_RANK),
        );
        let gmu = self.gpu_memory_utilization;
        check(p, Input::GpuMemoryUtilization, gmu, 0.05, 1.0);
        check(
            p,
            Input::TrainTokens,
            u(self.train_tokens),
            1.0,
            u(MAX_TRAIN_TOKENS),
        );
        if let Some(n) = self.model.nominal_params {
            check(p, Input::Params, u(n), 1.0, u(limits::MAX_PARAMS));
        }
        if self.launch.tensor_split.len() > super::MAX_SPLIT_DEVICES {
            let n = self.launch.tensor_split.len() as f64;
            check(
                p,
                Input::TensorSplit,
                n,
                0.0,
                super::MAX_SPLIT_DEVICES as f64,
            );
        }
        for x in &self.launch.tensor_split {
            check(
                p,
                Input::TensorSplit,
                f64::from(*x),
                0.0,
                f64::from(f32::MAX),
            );
        }
        if let Some(t) = self.launch.threads {
            check(
                p,
                Input::Threads,
                f64::from(t),
                1.0,
                f64::from(super::MAX_THREADS),
            );
        }
        self.model_problems(p);
        self.serving_problems(p);
        if self.mode == super::Mode::Image {
            self.image_problems(p);
        }
        out
    }

    /// The image inputs (image generation only): each side, the steps and the images per call
    /// within `core::diffusion::limits`.
    fn image_problems(&self, out: &mut Vec<Problem>) {
        use crate::core::diffusion::limits::{IMAGES, SIDE, STEPS};
        let im = &self.image;
        let f = f64::from;
        check(out, Input::ImageWidth, f(im.width), f(SIDE.0), f(SIDE.1));
        check(out, Input::ImageHeight, f(im.height), f(SIDE.0), f(SIDE.1));
        check(out, Input::Steps, f(im.steps), f(STEPS.0), f(STEPS.1));
        check(
            out,
            Input::ImagesPerBatch,
            f(im.images),
            f(IMAGES.0),
            f(IMAGES.1),
        );
    }

    /// The image inputs brought into their domain (image generation only): each side to the
    /// nearest multiple of the pipeline's grid (`Pipeline::size_multiple`) within the side
    /// limits, the steps and images per call into theirs.
    fn normalize_image(&mut self, notes: &mut Vec<Clamp>) {
        use crate::core::diffusion::limits::{IMAGES, SIDE, STEPS};
        use crate::core::diffusion::presets;
        let m = presets::find(&self.image.pipeline).map_or(8, |p| p.size_multiple());
        let lo = SIDE.0.div_ceil(m) * m;
        let hi = SIDE.1 / m * m;
        let im = &mut self.image;
        let mut note = |input, from: u32, to: u32, why| {
            if from != to {
                notes.push(Clamp {
                    input,
                    from: f64::from(from),
                    to: f64::from(to),
                    why,
                });
            }
        };
        for (input, v) in [
            (Input::ImageWidth, &mut im.width),
            (Input::ImageHeight, &mut im.height),
        ] {
            let ranged = (*v).clamp(lo, hi);
            let gridded = ((ranged + m / 2) / m * m).clamp(lo, hi);
            let why = if ranged != *v {
                ClampWhy::Range
            } else {
                ClampWhy::Grid(m)
            };
            note(input, *v, gridded, why);
            *v = gridded;
        }
        let steps = im.steps.clamp(STEPS.0, STEPS.1);
        note(Input::Steps, im.steps, steps, ClampWhy::Range);
        im.steps = steps;
        let images = im.images.clamp(IMAGES.0, IMAGES.1);
        note(Input::ImagesPerBatch, im.images, images, ClampWhy::Range);
        im.images = images;
    }

    /// The model's shape: each count within `core::model_limits`, and the counts every
    /// transformer has at least one of (layers, width, heads, vocabulary).
    fn model_problems(&self, out: &mut Vec<Problem>) {
        let m = &self.model;
        for (field, v) in [
            (ModelField::Layers, m.layers),
            (ModelField::Hidden, m.hidden),
            (ModelField::Heads, m.heads),
            (ModelField::Vocab, m.vocab),
        ] {
            if v == 0 {
                check(out, Input::Model(field), 0.0, 1.0, field.max() as f64);
            }
        }
        if let Some((field, v)) = implausible(m) {
            check(out, Input::Model(field), v as f64, 0.0, field.max() as f64);
        }
    }

    fn serving_problems(&self, out: &mut Vec<Problem>) {
        use serving_limits::*;
        let v = &self.serving;
        let u = |n: u64| n as f64;
        match v.load {
            Some(Load::Users(n)) => check(out, Input::Users, u(n), 1.0, u(MAX_USERS)),
            Some(Load::RequestsPerSecond(r)) => {
                check(out, Input::Rate, r, f64::MIN_POSITIVE, MAX_RATE)
            }
            None => {}
        }
        check(
            out,
            Input::OutputTokens,
            u(v.output_tokens),
            1.0,
            u(MAX_OUTPUT),
        );
        check(out, Input::PrefixShare, v.prefix_share, 0.0, 0.99);
        check(out, Input::Ttft, v.target.ttft_p95_s, 0.01, MAX_TTFT_S);
        let t = v.target.min_tokens_per_s;
        check(out, Input::UserTokensPerS, t, 0.0, MAX_TOKENS_PER_S);
        let opt = [
            (
                Input::TensorParallel,
                v.tensor_parallel,
                u(limits::MAX_GPUS),
            ),
            (Input::MaxNumSeqs, v.max_num_seqs, u(MAX_SCHED)),
            (
                Input::MaxNumBatchedTokens,
                v.max_num_batched_tokens,
                u(MAX_SCHED),
            ),
        ];
        for (input, n, hi) in opt {
            if let Some(n) = n {
                check(out, input, u(n), 1.0, hi);
            }
        }
        if let Some(f) = v.mem_fraction_static {
            check(out, Input::MemFractionStatic, f, 0.05, 1.0);
        }
    }

    /// The scenario with its dependent inputs brought together, and each change made: the
    /// prompt down to the context, then every number into its domain ([`Scenario::clamped`]).
    pub fn normalized(&self) -> (Scenario, Vec<Clamp>) {
        let mut s = self.clone();
        let mut notes = Vec::new();
        let mut note = |input, from: u64, to: u64, why| {
            if from != to {
                notes.push(Clamp {
                    input,
                    from: from as f64,
                    to: to as f64,
                    why,
                });
            }
        };
        let context = s.context.clamp(1, limits::MAX_CONTEXT);
        note(Input::Context, s.context, context, ClampWhy::Range);
        s.context = context;
        if s.prompt_tokens > s.context {
            note(
                Input::PromptTokens,
                s.prompt_tokens,
                s.context,
                ClampWhy::LongerThanContext,
            );
        }
        let mut ranged = s.clamped();
        for (input, from, to) in [
            (Input::Batch, s.batch, ranged.batch),
            (Input::Ubatch, s.ubatch, ranged.ubatch),
            (Input::Gpus, s.gpus, ranged.gpus),
            (Input::Zero, u64::from(s.zero), u64::from(ranged.zero)),
            (Input::LoraRank, s.lora_rank, ranged.lora_rank),
        ] {
            note(input, from, to, ClampWhy::Range);
        }
        if s.prompt_tokens == 0 {
            note(Input::PromptTokens, 0, 1, ClampWhy::Range);
        }
        let g = s.gpu_memory_utilization;
        if g != ranged.gpu_memory_utilization {
            notes.push(Clamp {
                input: Input::GpuMemoryUtilization,
                from: g,
                to: ranged.gpu_memory_utilization,
                why: ClampWhy::Range,
            });
        }
        if ranged.mode == super::Mode::Image {
            ranged.normalize_image(&mut notes);
        }
        (ranged, notes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_scenario_has_no_problem_and_normalizes_to_itself() {
        let s = Scenario::default();
        assert!(s.problems().is_empty(), "{:?}", s.problems());
        let (n, notes) = s.normalized();
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(n, s);
    }

    #[test]
    fn each_bad_value_is_named_with_its_domain() {
        let s = Scenario {
            context: 0,
            batch: 0,
            zero: 9,
            gpus: u64::from(u32::MAX),
            gpu_memory_utilization: f64::NAN,
            ..Scenario::default()
        };
        let fields: Vec<_> = s.problems().iter().map(|p| p.input.field()).collect();
        assert_eq!(
            fields,
            ["context", "batch", "gpus", "zero", "gpu_memory_utilization"]
        );
        assert_eq!(
            s.problems()[0].to_string(),
            "context 0 is outside 1 … 10,000,000"
        );
        assert_eq!(
            s.problems()[4].to_string(),
            "gpu_memory_utilization NaN is outside 0.05 … 1"
        );
    }

    #[test]
    fn a_model_without_layers_or_with_negative_serving_numbers_is_refused() {
        let mut s = Scenario::default();
        s.model.layers = 0;
        s.serving.target.ttft_p95_s = -1.0;
        s.serving.load = Some(Load::RequestsPerSecond(0.0));
        let p = s.problems();
        let fields: Vec<_> = p.iter().map(|p| p.input.field()).collect();
        assert_eq!(
            fields,
            [
                "model.layers",
                "serving.load (RequestsPerSecond)",
                "serving.target.ttft_p95_s"
            ]
        );
    }

    #[test]
    fn the_prompt_follows_the_context_and_a_long_context_is_kept() {
        let mut s = Scenario::default();
        s.model.max_context = 8192;
        s.context = 32_768;
        s.prompt_tokens = 40_000;
        let (n, notes) = s.normalized();
        // Beyond the trained length is the user's question (RoPE scaling, a what-if): kept.
        assert_eq!((n.context, n.prompt_tokens), (32_768, 32_768));
        assert_eq!(notes.len(), 1);
        assert_eq!(
            notes[0].to_string(),
            "Prompt tokens lowered from 40,000 to the context (32,768): a prompt cannot be longer \
             than the context."
        );
        // Normalizing twice changes nothing more.
        let (again, none) = n.normalized();
        assert_eq!((again, none.len()), (n, 0));
    }

    #[test]
    fn image_inputs_are_checked_and_brought_to_the_pipeline_grid() {
        use crate::core::scenario::Mode;
        let mut s = Scenario {
            mode: Mode::Image,
            ..Scenario::default()
        };
        s.image.pipeline = "flux.1-dev".into();
        // Flux packs 2 × 2 latents of 8 pixels per token: sides are multiples of 16.
        s.image.width = 1000;
        s.image.height = 20_000;
        s.image.steps = 0;
        s.image.images = 3;
        let fields: Vec<_> = s.problems().iter().map(|p| p.input.field()).collect();
        assert_eq!(fields, ["image.height", "image.steps"]);
        let (n, notes) = s.normalized();
        // 1000 / 16 = 62.5 → 63 × 16 = 1008 (the nearest multiple); 20,000 → 8192 (the top,
        // a multiple of 16); 0 steps → 1.
        assert_eq!(
            (n.image.width, n.image.height, n.image.steps),
            (1008, 8192, 1)
        );
        assert_eq!(n.image.images, 3);
        assert_eq!(
            notes[0].to_string(),
            "Width raised from 1,000 to 1,008: the pipeline takes multiples of 16 pixels."
        );
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(n.problems().is_empty());
        // Text modes leave the image inputs alone.
        let t = Scenario {
            mode: Mode::Inference,
            ..s.clone()
        };
        assert!(t.problems().is_empty());
        assert_eq!(t.normalized().0.image, s.image);
    }
}
