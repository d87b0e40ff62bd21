//! The image pipelines headroom knows by name, each component's shape copied from the
//! checkpoint's own `config.json` (the URLs are on each preset). Parameter totals are checked
//! against the published figures in the tests below.

use super::shapes::{ClipTextShape, FluxShape, Sd3Shape, T5Shape, UNetShape, VaeShape};
use super::{Denoiser, Pipeline, TextEncoder};

/// CLIP ViT-L/14's text tower (openai/clip-vit-large-patch14 `config.json` `text_config`):
/// SD 1.x `text_encoder`, SDXL and SD3 `text_encoder`, Flux `text_encoder`.
fn clip_l(projection: u64) -> ClipTextShape {
    ClipTextShape {
        hidden: 768,
        layers: 12,
        heads: 12,
        intermediate: 3072,
        vocab: 49_408,
        max_positions: 77,
        projection,
    }
}

/// OpenCLIP ViT-bigG/14's text tower (stabilityai/stable-diffusion-xl-base-1.0
/// `text_encoder_2/config.json`: hidden_size 1280, 32 layers, 20 heads, intermediate 5120,
/// projection_dim 1280).
fn clip_bigg() -> ClipTextShape {
    ClipTextShape {
        hidden: 1280,
        layers: 32,
        heads: 20,
        intermediate: 5120,
        vocab: 49_408,
        max_positions: 77,
        projection: 1280,
    }
}

/// T5 v1.1 XXL's encoder (google/t5-v1_1-xxl `config.json`: d_model 4096, d_ff 10240, 24
/// layers, 64 heads × d_kv 64, vocab 32128, 32 relative-attention buckets).
fn t5_xxl() -> T5Shape {
    T5Shape {
        d_model: 4096,
        d_ff: 10_240,
        layers: 24,
        heads: 64,
        d_kv: 64,
        vocab: 32_128,
        buckets: 32,
    }
}

/// The SD VAE (`vae/config.json` of SD 1.5 and SDXL: block_out_channels [128, 256, 512, 512],
/// layers_per_block 2, latent_channels 4); SD3 and Flux use 16 latent channels without the
/// quant convolutions (`use_quant_conv: false`).
fn vae(latent_channels: u64, quant_convs: bool) -> VaeShape {
    VaeShape {
        channels: vec![128, 256, 512, 512],
        layers_per_block: 2,
        latent_channels,
        quant_convs,
    }
}

fn sd3_pipeline(
    id: &'static str,
    name: &'static str,
    shape: Sd3Shape,
    published: u64,
    source: &'static str,
) -> Pipeline {
    Pipeline {
        id: id.into(),
        name: name.into(),
        denoiser: Denoiser::Sd3(shape),
        published_denoiser_params: published,
        text_encoders: vec![
            TextEncoder::clip("CLIP-L text encoder", clip_l(768)),
            TextEncoder::clip("OpenCLIP bigG text encoder", clip_bigg()),
            // StableDiffusion3Pipeline: max_sequence_length = 256.
            TextEncoder::t5("T5-XXL encoder", t5_xxl(), 256),
        ],
        vae: vae(16, false),
        cfg: true,
        default_steps: 28,
        default_size: 1024,
        vae_force_upcast: false,
        vae_sample_size: 1024,
        source: source.into(),

        denoiser_file_params: None,

        vae_file_params: None,
    }
}

/// Every preset, in the order `--model` lists them.
pub fn all() -> Vec<Pipeline> {
    vec![
        Pipeline {
            id: "sd-1.5".into(),
            name: "Stable Diffusion 1.5".into(),
            // stable-diffusion-v1-5/stable-diffusion-v1-5 unet/config.json.
            denoiser: Denoiser::UNet(UNetShape {
                in_channels: 4,
                out_channels: 4,
                channels: vec![320, 640, 1280, 1280],
                layers_per_block: 2,
                depth: vec![1, 1, 1, 0],
                heads: vec![8, 8, 8, 8],
                cross_dim: 768,
                add_embedding_in: 0,
            }),
            // Rombach et al. 2022 (arXiv:2112.10752) / the model card: an 860M UNet.
            published_denoiser_params: 860_000_000,
            text_encoders: vec![TextEncoder::clip("CLIP-L text encoder", clip_l(0))],
            vae: vae(4, true),
            cfg: true,
            default_steps: 50,
            default_size: 512,
            vae_force_upcast: false,
            vae_sample_size: 512,
            source: "https://huggingface.co/stable-diffusion-v1-5/stable-diffusion-v1-5/blob/main/unet/config.json".into(),

            denoiser_file_params: None,

            vae_file_params: None,
        },
        Pipeline {
            id: "sdxl".into(),
            name: "Stable Diffusion XL base 1.0".into(),
            // stabilityai/stable-diffusion-xl-base-1.0 unet/config.json.
            denoiser: Denoiser::UNet(UNetShape {
                in_channels: 4,
                out_channels: 4,
                channels: vec![320, 640, 1280],
                layers_per_block: 2,
                depth: vec![0, 2, 10],
                heads: vec![5, 10, 20],
                cross_dim: 2048,
                add_embedding_in: 2816,
            }),
            // Podell et al. 2023 (arXiv:2307.01952) Table 1: 2.6B UNet parameters.
            published_denoiser_params: 2_600_000_000,
            text_encoders: vec![
                TextEncoder::clip("CLIP-L text encoder", clip_l(0)),
                TextEncoder::clip("OpenCLIP bigG text encoder", clip_bigg()),
            ],
            vae: vae(4, true),
            cfg: true,
            default_steps: 50,
            default_size: 1024,
            // vae/config.json "force_upcast": true: the FP16 VAE decodes in FP32
            // (pipeline_stable_diffusion_xl.py, `needs_upcasting`).
            vae_force_upcast: true,
            vae_sample_size: 1024,
            source: "https://huggingface.co/stabilityai/stable-diffusion-xl-base-1.0/blob/main/unet/config.json".into(),

            denoiser_file_params: None,

            vae_file_params: None,
        },
        sd3_pipeline(
            "sd3-medium",
            "Stable Diffusion 3 Medium",
            // stabilityai/stable-diffusion-3-medium-diffusers transformer/config.json.
            Sd3Shape {
                heads: 24,
                head_dim: 64,
                layers: 24,
                in_channels: 16,
                patch: 2,
                joint_attention_dim: 4096,
                pooled_projection_dim: 2048,
                qk_norm: false,
                dual_attention_layers: 0,
                pos_embed_max_size: 192,
            },
            // Esser et al. 2024 (arXiv:2403.03206) / model card: 2B parameters.
            2_000_000_000,
            "https://huggingface.co/stabilityai/stable-diffusion-3-medium-diffusers/blob/main/transformer/config.json",
        ),
        sd3_pipeline(
            "sd3.5-medium",
            "Stable Diffusion 3.5 Medium",
            // stabilityai/stable-diffusion-3.5-medium transformer/config.json (MMDiT-X:
            // dual_attention_layers 0 … 12, qk_norm rms_norm).
            Sd3Shape {
                heads: 24,
                head_dim: 64,
                layers: 24,
                in_channels: 16,
                patch: 2,
                joint_attention_dim: 4096,
                pooled_projection_dim: 2048,
                qk_norm: true,
                dual_attention_layers: 13,
                pos_embed_max_size: 384,
            },
            // Model card: "2.5 billion parameters" (with the 384² × 1536 position table).
            2_500_000_000,
            "https://huggingface.co/stabilityai/stable-diffusion-3.5-medium/blob/main/transformer/config.json",
        ),
        sd3_pipeline(
            "sd3.5-large",
            "Stable Diffusion 3.5 Large",
            // stabilityai/stable-diffusion-3.5-large transformer/config.json: 38 layers,
            // 38 heads × 64.
            Sd3Shape {
                heads: 38,
                head_dim: 64,
                layers: 38,
                in_channels: 16,
                patch: 2,
                joint_attention_dim: 4096,
                pooled_projection_dim: 2048,
                qk_norm: true,
                dual_attention_layers: 0,
                pos_embed_max_size: 192,
            },
            // Model card: "8.1 billion parameters".
            8_100_000_000,
            "https://huggingface.co/stabilityai/stable-diffusion-3.5-large/blob/main/transformer/config.json",
        ),
        flux(
            "flux.1-dev",
            "FLUX.1 [dev]",
            true,
            512,
            50,
            "https://huggingface.co/black-forest-labs/FLUX.1-dev/blob/main/transformer/config.json",
        ),
        flux(
            "flux.1-schnell",
            "FLUX.1 [schnell]",
            false,
            256,
            4,
            "https://huggingface.co/black-forest-labs/FLUX.1-schnell/blob/main/transformer/config.json",
        ),
    ]
}

/// FLUX.1: transformer/config.json (19 double-stream and 38 single-stream blocks, 24 heads ×
/// 128, in_channels 64, joint_attention_dim 4096, pooled_projection_dim 768; `guidance_embeds`
/// true for dev, false for schnell). FluxPipeline: `max_sequence_length` 512 (dev) / 256
/// (schnell's model card), no classifier-free guidance.
fn flux(
    id: &'static str,
    name: &'static str,
    guidance: bool,
    t5_tokens: u64,
    steps: u32,
    source: &'static str,
) -> Pipeline {
    Pipeline {
        id: id.into(),
        name: name.into(),
        denoiser: Denoiser::Flux(FluxShape {
            heads: 24,
            head_dim: 128,
            double_blocks: 19,
            single_blocks: 38,
            in_channels: 64,
            joint_attention_dim: 4096,
            pooled_projection_dim: 768,
            guidance_embeds: guidance,
        }),
        // Black Forest Labs' model cards: "a 12 billion parameter rectified flow transformer".
        published_denoiser_params: 12_000_000_000,
        text_encoders: vec![
            TextEncoder::clip("CLIP-L text encoder", clip_l(0)),
            TextEncoder::t5("T5-XXL encoder", t5_xxl(), t5_tokens),
        ],
        vae: vae(16, false),
        cfg: false,
        default_steps: steps,
        default_size: 1024,
        vae_force_upcast: false,
        vae_sample_size: 1024,
        source: source.into(),

        denoiser_file_params: None,

        vae_file_params: None,
    }
}

/// The preset `id` (case-insensitive; "sd15", "sdxl-base", "flux-dev" … also match).
pub fn find(id: &str) -> Option<Pipeline> {
    let want = normal(id);
    all().into_iter().find(|p| normal(&p.id) == want)
}

/// Lowercase, no separators, "base" and "1.0" suffixes dropped: "SDXL-base-1.0" → "sdxl".
fn normal(s: &str) -> String {
    let t: String = s
        .to_ascii_lowercase()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let t = t.strip_suffix("base10").unwrap_or(&t).to_string();
    let t = t.strip_suffix("base").unwrap_or(&t).to_string();
    t.replace("flux1", "flux")
}

/// The ids, comma-separated, for an error message.
pub fn ids() -> String {
    all()
        .iter()
        .map(|p| p.id.as_ref())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn denoiser_params(id: &str) -> u64 {
        find(id).unwrap().denoiser_walk(64, 64).params
    }

    /// Exact counts of the published checkpoints' `parameters()` (each model's diffusers
    /// weights): SD 1.5 UNet 859,520,964; SDXL UNet 2,567,463,684; FLUX.1-dev transformer
    /// 11,901,408,320 (schnell, without the guidance embedder: − 256·3072 − 3072 − 3072² − 3072
    /// = 11,891,178,560); SD3 Medium transformer 2,028,328,000 parameters + its 192² × 1536
    /// position-embedding buffer (56,623,104) that the checkpoint stores.
    #[test]
    fn denoisers_match_the_checkpoints_parameter_counts() {
        assert_eq!(denoiser_params("sd-1.5"), 859_520_964);
        assert_eq!(denoiser_params("sdxl"), 2_567_463_684);
        assert_eq!(denoiser_params("flux.1-dev"), 11_901_408_320);
        assert_eq!(denoiser_params("flux.1-schnell"), 11_891_178_560);
        assert_eq!(
            denoiser_params("sd3-medium"),
            2_028_328_000 + 192 * 192 * 1536
        );
    }

    /// Every preset's denoiser within 5 % of its published (rounded) size.
    #[test]
    fn denoisers_are_within_five_percent_of_the_published_sizes() {
        for p in all() {
            let got = p.denoiser_walk(64, 64).params as f64;
            let want = p.published_denoiser_params as f64;
            assert!(
                (got / want - 1.0).abs() < 0.05,
                "{}: {got} vs published {want}",
                p.id
            );
        }
    }

    /// CLIP-L text 123,060,480 (CLIPTextModel), with projection 123,650,304; OpenCLIP bigG
    /// 694,659,840; T5-XXL encoder 4,762,310,656 (by hand: 32128·4096 + 32·64 + 24 ×
    /// (2·4096 + 4·4096² + 3·4096·10240) + 4096); SD VAE 83,653,863; Flux/SD3 VAE 83,819,683.
    #[test]
    fn encoders_and_vae_match_their_checkpoints() {
        assert_eq!(clip_l(0).walk(77).params, 123_060_480);
        assert_eq!(clip_l(768).walk(77).params, 123_650_304);
        assert_eq!(clip_bigg().walk(77).params, 694_659_840);
        assert_eq!(
            t5_xxl().walk(256).params,
            32_128 * 4096 + 32 * 64 + 24 * (2 * 4096 + 4 * 4096 * 4096 + 3 * 4096 * 10_240) + 4096
        );
        assert_eq!(t5_xxl().walk(256).params, 4_762_310_656);
        let sd = vae(4, true);
        assert_eq!(
            sd.encoder(64, 64).params + sd.decoder(64, 64).params,
            83_653_863
        );
        let f = vae(16, false);
        assert_eq!(
            f.encoder(64, 64).params + f.decoder(64, 64).params,
            83_819_683
        );
    }

    #[test]
    fn names_are_found_loosely() {
        assert_eq!(find("SDXL-base-1.0").unwrap().id, "sdxl");
        assert_eq!(find("flux-dev").unwrap().id, "flux.1-dev");
        assert_eq!(find("sd15").unwrap().id, "sd-1.5");
        assert!(find("sd4").is_none());
    }
}
