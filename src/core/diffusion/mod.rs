//! Image generation (`Mode::Image`): diffusion pipelines as components — a denoiser (a UNet or
//! a DiT/MMDiT), one to three text encoders (CLIP-L, OpenCLIP bigG, T5-XXL) and a VAE — sized
//! at a resolution, a batch and a precision, placed as the runtimes place them (everything on
//! the GPU; Diffusers `enable_model_cpu_offload` / stable-diffusion.cpp `--offload-to-cpu`;
//! `enable_sequential_cpu_offload`; stable-diffusion.cpp `--clip-on-cpu`; VAE tiling), and
//! timed from the kernels its runtime runs (`ImageRuntime`: eager Diffusers, torch.compile,
//! TensorRT, stable-diffusion.cpp, Core ML): GEMMs at their precision's rate, element-wise
//! passes at bandwidth, launches and host dispatch (docs/diffusion.md "Speed").
//!
//! - `shapes.rs`: each component walked module by module from its `config.json` fields.
//! - `folder.rs`: a Diffusers folder's `model_index.json` and component configs → a pipeline.
//! - `presets.rs`: SD 1.5, SDXL, SD3 Medium, SD3.5 Medium/Large, FLUX.1 dev/schnell.
//! - `memory.rs`: the estimate per component and the placements.
//! - `speed.rs`: seconds per image (the kernel model, the weight formats' own kernels, offload
//!   copies) and the fit on each machine (one pipeline per GPU).
//! - `picks.rs`: the cheapest and the fastest machine per group (`recommend --mode image`).

pub mod folder;
pub mod memory;
pub mod picks;
pub mod presets;
pub mod shapes;
pub mod speed;

use crate::core::precision::WeightPrecision;
use serde::{Deserialize, Serialize};
use shapes::{ClipTextShape, FluxShape, Sd3Shape, T5Shape, UNetShape, VaeShape, Walk};
use std::borrow::Cow;

pub use memory::{ImageEstimate, Part, PartKind, estimate};
pub use speed::{
    ImageFit, ImageSpeed, ImageVerdict, PlacementCost, fit_all, fit_machine, placement_costs,
    seconds_per_image,
};

/// The denoising network.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Denoiser {
    UNet(UNetShape),
    Flux(FluxShape),
    Sd3(Sd3Shape),
}

/// A text encoder and the tokens it reads per prompt.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TextEncoder {
    pub name: Cow<'static, str>,
    pub shape: TextShape,
    pub tokens: u64,
    /// Exact parameters from the encoder's safetensors headers, when a folder had them.
    pub file_params: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TextShape {
    Clip(ClipTextShape),
    T5(T5Shape),
}

impl TextEncoder {
    /// A CLIP tower reads 77 tokens (its `max_position_embeddings`; the tokenizer pads to it).
    pub fn clip(name: impl Into<Cow<'static, str>>, shape: ClipTextShape) -> TextEncoder {
        TextEncoder {
            name: name.into(),
            tokens: shape.max_positions,
            shape: TextShape::Clip(shape),
            file_params: None,
        }
    }
    pub fn t5(name: impl Into<Cow<'static, str>>, shape: T5Shape, tokens: u64) -> TextEncoder {
        TextEncoder {
            name: name.into(),
            shape: TextShape::T5(shape),
            tokens,
            file_params: None,
        }
    }
    pub fn walk(&self) -> Walk {
        match &self.shape {
            TextShape::Clip(c) => c.walk(self.tokens),
            TextShape::T5(t) => t.walk(self.tokens),
        }
    }
    /// Whether the scenario's precision applies: T5-XXL is quantised with the denoiser
    /// (Diffusers' quantization examples, stable-diffusion.cpp `--type`), the CLIP towers stay
    /// 16-bit.
    pub fn follows_weights(&self) -> bool {
        matches!(self.shape, TextShape::T5(_))
    }
}

/// An image pipeline.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pipeline {
    /// The preset id, or the folder a Diffusers pipeline was read from.
    pub id: Cow<'static, str>,
    pub name: Cow<'static, str>,
    pub denoiser: Denoiser,
    /// The denoiser's size as its paper or model card rounds it (the test's reference).
    pub published_denoiser_params: u64,
    pub text_encoders: Vec<TextEncoder>,
    pub vae: VaeShape,
    /// Classifier-free guidance: the denoiser runs on the conditional and the unconditional
    /// input each step (batch × 2). SD 1.x, SDXL and SD3: yes; FLUX.1 dev is guidance-distilled
    /// (the guidance is an input) and schnell step-distilled: one pass per step.
    pub cfg: bool,
    /// The pipeline call's default `num_inference_steps` and `height` = `width`.
    pub default_steps: u32,
    pub default_size: u32,
    /// The VAE's `force_upcast`: an FP16 VAE decodes in FP32 (SDXL's overflows in FP16).
    pub vae_force_upcast: bool,
    /// The VAE config's `sample_size`: Diffusers' tile side under `enable_vae_tiling`
    /// (`AutoencoderKL.tile_sample_min_size`).
    pub vae_sample_size: u32,
    pub source: Cow<'static, str>,
    /// The denoiser's and the VAE's exact parameters read from their safetensors headers (a
    /// Diffusers folder with its weights); `None` for a preset or a folder of configs only.
    pub denoiser_file_params: Option<u64>,
    pub vae_file_params: Option<u64>,
}

impl Pipeline {
    /// Latent pixels per image pixel along a side: the VAE's 2^(levels − 1) = 8.
    pub fn vae_scale(&self) -> u32 {
        1 << (self.vae.channels.len().saturating_sub(1) as u32)
    }
    /// What width and height must be multiples of: the VAE scale, × the patch for a DiT
    /// (Flux packs 2 × 2 latents per token; SD3 patch 2).
    pub fn size_multiple(&self) -> u32 {
        match &self.denoiser {
            Denoiser::UNet(_) => self.vae_scale(),
            Denoiser::Flux(_) => self.vae_scale() * 2,
            Denoiser::Sd3(s) => self.vae_scale() * s.patch as u32,
        }
    }
    /// Text tokens the denoiser attends to: CLIP's 77 for a UNet; the T5 sequence for Flux;
    /// 77 CLIP + the T5 sequence for SD3 (`encode_prompt` concatenates them).
    pub fn text_tokens(&self) -> u64 {
        let t5 = self
            .text_encoders
            .iter()
            .filter(|t| matches!(t.shape, TextShape::T5(_)))
            .map(|t| t.tokens)
            .max()
            .unwrap_or(0);
        match &self.denoiser {
            Denoiser::UNet(_) => 77,
            Denoiser::Flux(_) => t5,
            Denoiser::Sd3(_) => 77 + t5,
        }
    }
    /// One denoiser forward pass for one sample at `width × height` pixels.
    pub fn denoiser_walk(&self, width: u32, height: u32) -> Walk {
        let s = self.vae_scale() as u64;
        let (lh, lw) = (height as u64 / s, width as u64 / s);
        match &self.denoiser {
            Denoiser::UNet(u) => u.walk(lh, lw, self.text_tokens()),
            Denoiser::Flux(f) => f.walk((lh / 2) * (lw / 2), self.text_tokens()),
            Denoiser::Sd3(d) => d.walk((lh / d.patch) * (lw / d.patch), self.text_tokens()),
        }
    }
    pub fn denoiser_label(&self) -> &'static str {
        match self.denoiser {
            Denoiser::UNet(_) => "UNet",
            Denoiser::Flux(_) => "Flux transformer (DiT)",
            Denoiser::Sd3(_) => "MMDiT transformer",
        }
    }
}

/// Where the pipeline's components live while it runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum PipelineOffload {
    /// Per machine, the fastest placement that fits: everything on the GPU, then model offload,
    /// then sequential offload, then the CPU.
    #[default]
    Auto,
    /// Every component on the GPU (`pipe.to("cuda")`).
    None,
    /// One component on the GPU at a time, moved in whole when it runs: Diffusers
    /// `enable_model_cpu_offload` (pipeline_utils.py), stable-diffusion.cpp `--offload-to-cpu`.
    Model,
    /// Weights streamed to the GPU module by module as the forward pass reaches them, every
    /// step: Diffusers `enable_sequential_cpu_offload` (accelerate `cpu_offload` hooks).
    Sequential,
    /// The text encoders in RAM, run by the CPU (stable-diffusion.cpp `--clip-on-cpu`).
    ClipOnCpu,
}

impl PipelineOffload {
    pub const ALL: [PipelineOffload; 5] = [
        PipelineOffload::Auto,
        PipelineOffload::None,
        PipelineOffload::Model,
        PipelineOffload::Sequential,
        PipelineOffload::ClipOnCpu,
    ];
    pub const fn cli_name(self) -> &'static str {
        match self {
            PipelineOffload::Auto => "auto",
            PipelineOffload::None => "none",
            PipelineOffload::Model => "model",
            PipelineOffload::Sequential => "sequential",
            PipelineOffload::ClipOnCpu => "clip-on-cpu",
        }
    }
    pub const fn label(self) -> &'static str {
        match self {
            PipelineOffload::Auto => "the fastest that fits",
            PipelineOffload::None => "everything on the GPU",
            PipelineOffload::Model => {
                "model CPU offload (enable_model_cpu_offload / --offload-to-cpu)"
            }
            PipelineOffload::Sequential => "sequential CPU offload (enable_sequential_cpu_offload)",
            PipelineOffload::ClipOnCpu => "text encoders on the CPU (--clip-on-cpu)",
        }
    }
}

/// Which runtime runs the pipeline, and so which kernels a step launches (`--image-runtime`;
/// docs/diffusion.md "Speed"). Without a choice, GGUF weights mean stable-diffusion.cpp and
/// anything else eager Diffusers.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageRuntime {
    /// Diffusers in eager PyTorch: every operation a kernel of its own, launched from Python.
    Diffusers,
    /// Diffusers with `torch.compile` (TorchInductor, `mode="max-autotune"` or
    /// `"reduce-overhead"`): element-wise chains fused, the step replayed as a CUDA graph.
    Compiled,
    /// An NVIDIA TensorRT engine (static shapes, fused kernels, CUDA graphs).
    TensorRt,
    /// stable-diffusion.cpp (ggml): C++ graph, one kernel per node, F32 activations.
    StableDiffusionCpp,
    /// Apple Core ML (apple/ml-stable-diffusion) on the GPU: compiled graph, "ORIGINAL"
    /// attention that stores its scores.
    CoreMl,
}

impl ImageRuntime {
    pub const ALL: [ImageRuntime; 5] = [
        ImageRuntime::Diffusers,
        ImageRuntime::Compiled,
        ImageRuntime::TensorRt,
        ImageRuntime::StableDiffusionCpp,
        ImageRuntime::CoreMl,
    ];
    /// The runtime a precision implies when none is asked: GGUF means stable-diffusion.cpp.
    pub fn of(weights: WeightPrecision) -> ImageRuntime {
        if weights.is_gguf() {
            ImageRuntime::StableDiffusionCpp
        } else {
            ImageRuntime::Diffusers
        }
    }
    pub const fn label(self) -> &'static str {
        match self {
            ImageRuntime::Diffusers => "Diffusers",
            ImageRuntime::Compiled => "Diffusers + torch.compile",
            ImageRuntime::TensorRt => "TensorRT",
            ImageRuntime::StableDiffusionCpp => "stable-diffusion.cpp",
            ImageRuntime::CoreMl => "Core ML",
        }
    }
    pub const fn cli_name(self) -> &'static str {
        match self {
            ImageRuntime::Diffusers => "diffusers",
            ImageRuntime::Compiled => "compiled",
            ImageRuntime::TensorRt => "tensorrt",
            ImageRuntime::StableDiffusionCpp => "sdcpp",
            ImageRuntime::CoreMl => "coreml",
        }
    }
    /// Whether PyTorch runs it (its allocator overhead, Diffusers' VAE upcast).
    pub const fn is_pytorch(self) -> bool {
        matches!(self, ImageRuntime::Diffusers | ImageRuntime::Compiled)
    }
    /// Whether element-wise chains are fused and the step is one graph (no per-kernel launch
    /// from the host).
    pub const fn fused(self) -> bool {
        matches!(
            self,
            ImageRuntime::Compiled | ImageRuntime::TensorRt | ImageRuntime::CoreMl
        )
    }
}

/// An image-generation scenario.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ImageInputs {
    pub pipeline: Pipeline,
    pub width: u32,
    pub height: u32,
    pub steps: u32,
    /// Images per pipeline call (`num_images_per_prompt`, sd.cpp `-b`).
    pub images: u32,
    /// The denoiser's (and T5's) weight precision.
    pub weights: WeightPrecision,
    pub offload: PipelineOffload,
    /// Decode the latent tile by tile (Diffusers `enable_vae_tiling`, sd.cpp `--vae-tiling`).
    pub vae_tiling: bool,
    /// Memory-efficient attention (PyTorch SDPA / FlashAttention; sd.cpp `--diffusion-fa`):
    /// no score matrices in memory.
    pub memory_efficient_attention: bool,
    /// The runtime asked for (`--image-runtime`); `None`: [`ImageRuntime::of`] the weights.
    pub runtime_choice: Option<ImageRuntime>,
    /// FP32 matmuls in TF32 (`torch.backends.cuda.matmul.allow_tf32 = True` or
    /// `torch.set_float32_matmul_precision("high")`; PyTorch's default is off since 1.12, while
    /// cuDNN convolutions use TF32 by default).
    pub tf32: bool,
    /// FP8 weights multiplied on FP8 tensor cores (`torch._scaled_mm`: torchao float8,
    /// flux-fp8-api; TensorRT FP8) instead of being cast to 16 bits before each layer
    /// (Diffusers' layerwise casting).
    pub fp8_matmul: bool,
}

impl ImageFit {
    /// The GPU part of the placement: what it needs of one GPU and that GPU's usable memory;
    /// `None` where the pipeline runs on the CPU or the machine has no GPU.
    pub fn gpu_use(&self) -> Option<(crate::core::units::Bytes, crate::core::units::Bytes)> {
        (self.verdict != ImageVerdict::Cpu && self.gpu_capacity.0 > 0)
            .then_some((self.gpu_needed, self.gpu_capacity))
    }
}

/// The ranges of the inputs (each flag's error names it).
pub mod limits {
    pub const SIDE: (u32, u32) = (64, 8192);
    pub const STEPS: (u32, u32) = (1, 1000);
    pub const IMAGES: (u32, u32) = (1, 64);
}

impl ImageInputs {
    /// The settings a scenario keeps for these inputs (`Scenario::image`; the weights and
    /// memory-efficient attention are the scenario's own `weights` and `flash_attention`).
    pub fn settings(&self) -> ImageSettings {
        ImageSettings {
            pipeline: self.pipeline.id.to_string(),
            width: self.width,
            height: self.height,
            steps: self.steps,
            images: self.images,
            offload: self.offload,
            vae_tiling: self.vae_tiling,
            runtime: self.runtime_choice,
            tf32: self.tf32,
            fp8_matmul: self.fp8_matmul,
        }
    }
    /// The pipeline at its own defaults (resolution, steps), BF16, one image.
    pub fn new(pipeline: Pipeline) -> ImageInputs {
        ImageInputs {
            width: pipeline.default_size,
            height: pipeline.default_size,
            steps: pipeline.default_steps,
            pipeline,
            images: 1,
            weights: WeightPrecision::Bf16,
            offload: PipelineOffload::Auto,
            vae_tiling: false,
            memory_efficient_attention: true,
            runtime_choice: None,
            tf32: false,
            fp8_matmul: false,
        }
    }
    /// The runtime: the one asked for, else what the weights imply.
    pub fn runtime(&self) -> ImageRuntime {
        self.runtime_choice
            .unwrap_or(ImageRuntime::of(self.weights))
    }
    /// Why these inputs cannot be sized, one line naming the flag; `None` when they can.
    pub fn problem(&self) -> Option<String> {
        let m = self.pipeline.size_multiple();
        let (lo, hi) = limits::SIDE;
        for (v, what) in [(self.width, "width"), (self.height, "height")] {
            if !(lo..=hi).contains(&v) {
                return Some(format!(
                    "--resolution: {what} {v} is outside {lo} … {hi} pixels"
                ));
            }
            if v % m != 0 {
                return Some(format!(
                    "--resolution: {what} {v} is not a multiple of {m} ({}: {} pixels per latent{})",
                    self.pipeline.id,
                    self.pipeline.vae_scale(),
                    if m > self.pipeline.vae_scale() {
                        ", 2 × 2 latents per token"
                    } else {
                        ""
                    }
                ));
            }
        }
        if !(limits::STEPS.0..=limits::STEPS.1).contains(&self.steps) {
            return Some(format!("--steps: {} is outside 1 … 1000", self.steps));
        }
        if !(limits::IMAGES.0..=limits::IMAGES.1).contains(&self.images) {
            return Some(format!(
                "--images-per-batch: {} is outside 1 … 64",
                self.images
            ));
        }
        if matches!(
            self.weights,
            WeightPrecision::Gptq4 | WeightPrecision::Awq4 | WeightPrecision::Mxfp4
        ) {
            return Some(format!(
                "--weights {}: not an image-pipeline format (use fp32, fp16, bf16, fp8, int8, nf4 or a GGUF type)",
                self.weights.cli_name()
            ));
        }
        None
    }
    /// Denoiser samples per step: the images, twice with classifier-free guidance.
    pub fn denoiser_batch(&self) -> u64 {
        self.images as u64 * if self.pipeline.cfg { 2 } else { 1 }
    }
}

/// The weight precisions an image pipeline takes (what `ImageInputs::problem` accepts): the
/// window's Weights picker in image mode lists these.
pub const IMAGE_WEIGHTS: [WeightPrecision; 25] = {
    use WeightPrecision as W;
    [
        W::Fp32,
        W::Fp16,
        W::Bf16,
        W::Fp8,
        W::Int8,
        W::Int4,
        W::Nf4,
        W::Nf4DoubleQuant,
        W::Q8_0,
        W::Q6K,
        W::Q5KM,
        W::Q5_0,
        W::Q4KM,
        W::Q4_0,
        W::Q3KM,
        W::Q2K,
        W::Iq4Xs,
        W::Iq4Nl,
        W::Iq3M,
        W::Iq3Xxs,
        W::Iq2M,
        W::Iq2Xs,
        W::Iq2Xxs,
        W::Fp8Block,
        W::Nvfp4,
    ]
};

/// The image choices a scenario keeps (the window's image inputs, a scenario file's `image`):
/// the pipeline preset by id and the inputs of one call. The weight precision and
/// memory-efficient attention are the scenario's own `weights` and `flash_attention`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ImageSettings {
    /// A preset id ([`presets::ids`]).
    pub pipeline: String,
    pub width: u32,
    pub height: u32,
    pub steps: u32,
    pub images: u32,
    pub offload: PipelineOffload,
    pub vae_tiling: bool,
    /// `--image-runtime` (`None`: from the weights).
    pub runtime: Option<ImageRuntime>,
    pub tf32: bool,
    pub fp8_matmul: bool,
}

impl Default for ImageSettings {
    /// SDXL base at its pipeline defaults (1024², 50 steps: `StableDiffusionXLPipeline.__call__`).
    fn default() -> Self {
        ImageSettings {
            pipeline: "sdxl".into(),
            width: 1024,
            height: 1024,
            steps: 50,
            images: 1,
            offload: PipelineOffload::Auto,
            vae_tiling: false,
            runtime: None,
            tf32: false,
            fp8_matmul: false,
        }
    }
}

impl ImageSettings {
    /// Whether these are the defaults (a scenario leaves them out of its file then).
    pub fn is_default(&self) -> bool {
        *self == ImageSettings::default()
    }
    /// The settings of `p` at its own defaults.
    pub fn of(p: &Pipeline) -> ImageSettings {
        ImageSettings {
            pipeline: p.id.to_string(),
            width: p.default_size,
            height: p.default_size,
            steps: p.default_steps,
            ..ImageSettings::default()
        }
    }
    /// The image scenario: these settings with the scenario's precision and attention; the
    /// one-line reason when they cannot be sized (an unknown pipeline, a resolution off the
    /// pipeline's grid, a precision no image runtime takes).
    pub fn inputs(
        &self,
        weights: WeightPrecision,
        memory_efficient_attention: bool,
    ) -> Result<ImageInputs, String> {
        let p = presets::find(&self.pipeline).ok_or_else(|| {
            format!(
                "image.pipeline {}: not an image pipeline; one of: {}",
                self.pipeline,
                presets::ids()
            )
        })?;
        let i = ImageInputs {
            width: self.width,
            height: self.height,
            steps: self.steps,
            images: self.images,
            weights,
            offload: self.offload,
            vae_tiling: self.vae_tiling,
            memory_efficient_attention,
            runtime_choice: self.runtime,
            tf32: self.tf32,
            fp8_matmul: self.fp8_matmul,
            pipeline: p,
        };
        match i.problem() {
            Some(why) => Err(why),
            None => Ok(i),
        }
    }
}

/// Parses "1024x1024", "1024×768", "512" (square).
pub fn parse_resolution(s: &str) -> Result<(u32, u32), String> {
    let t = s.trim().to_ascii_lowercase().replace('×', "x");
    let parts: Vec<&str> = t.split('x').map(str::trim).collect();
    let num = |p: &str| -> Result<u32, String> {
        p.parse::<u32>()
            .map_err(|_| format!("'{s}' is not WIDTHxHEIGHT in pixels (e.g. 1024x1024)"))
    };
    match parts.as_slice() {
        [w] => num(w).map(|w| (w, w)),
        [w, h] => Ok((num(w)?, num(h)?)),
        _ => Err(format!(
            "'{s}' is not WIDTHxHEIGHT in pixels (e.g. 1024x1024)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolutions_parse_and_bad_ones_are_named() {
        assert_eq!(parse_resolution("1024x768"), Ok((1024, 768)));
        assert_eq!(parse_resolution("1024×1024"), Ok((1024, 1024)));
        assert_eq!(parse_resolution("512"), Ok((512, 512)));
        assert!(parse_resolution("1024x").is_err());
        assert!(parse_resolution("big").is_err());
        let mut i = ImageInputs::new(presets::find("flux.1-dev").unwrap());
        i.width = 1000; // a multiple of 8, not of 16
        assert!(
            i.problem().unwrap().contains("multiple of 16"),
            "{:?}",
            i.problem()
        );
        i.width = 1024;
        assert!(i.problem().is_none());
        let mut s = ImageInputs::new(presets::find("sdxl").unwrap());
        s.height = 1020;
        assert!(s.problem().unwrap().contains("multiple of 8"));
        s.height = 32;
        assert!(s.problem().unwrap().contains("outside 64"));
        s.height = 1024;
        s.steps = 0;
        assert!(s.problem().unwrap().starts_with("--steps"));
    }

    #[test]
    fn guidance_doubles_the_batch_only_where_the_pipeline_uses_it() {
        let mut x = ImageInputs::new(presets::find("sdxl").unwrap());
        x.images = 3;
        assert_eq!(x.denoiser_batch(), 6);
        let mut f = ImageInputs::new(presets::find("flux.1-dev").unwrap());
        f.images = 3;
        assert_eq!(f.denoiser_batch(), 3);
    }
}
