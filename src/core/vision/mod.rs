//! Vision-language models: the vision encoder and projector that turn an image into tokens of
//! the language model, as llama.cpp's multimodal library runs them (`tools/mtmd/clip.cpp`, the
//! `mmproj` GGUF given with `--mmproj`).
//!
//! - **Weights**: the mmproj file's tensors, exactly. llama.cpp puts them on the GPU unless
//!   `--no-mmproj-offload` keeps them on the CPU.
//! - **Working memory**: `clip.cpp` reserves its compute buffer by building the graph for one
//!   image at the largest size (`clip_model_loader::alloc_compute_meta`); without
//!   FlashAttention the attention scores of `heads × P × P` f32 for `P` patches are its peak.
//! - **Tokens**: each image becomes `P / m²` tokens of the language model's context, `P =
//!   (image_size / patch_size)²` and `m` the projector's per-side reduction (`clip_n_output_tokens`:
//!   `clip.vision.spatial_merge_size` for Qwen2-VL-style merges, `clip.vision.projector.scale_factor`
//!   for Gemma 3's pooling and Idefics3's pixel shuffle; 1 for LLaVA-style MLPs). Models that
//!   tile or resize dynamically (Qwen2-VL, Pixtral) are sized at `image_size`; a tower read from
//!   a config.json that resizes dynamically (Qwen2.5-VL, `dynamic`) takes any `W × H`
//!   ([`VisionEncoder::resized`]), its patches `(W/p)·(H/p)`.
//! - **Encode time**: the encoder's FLOPs, `2 × params × P` plus bidirectional attention
//!   `4 × layers × hidden × P²`, at the FLOP rate the language model's prefill reaches on the
//!   same placement (the same kind of large GEMMs).

use serde::{Deserialize, Serialize};

/// The vision tower and projector of an mmproj file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct VisionEncoder {
    /// The file it was read from, for provenance.
    pub file: String,
    /// `clip.projector_type` (`gemma3`, `qwen2.5vl_merger`, `mlp`, …).
    pub projector: String,
    /// Bytes of all its tensors as stored.
    pub weight_bytes: u64,
    pub params: u64,
    /// `clip.vision.block_count`, `embedding_length`, `attention.head_count`,
    /// `feed_forward_length`.
    pub layers: u64,
    pub hidden: u64,
    pub heads: u64,
    pub ffn: u64,
    /// `clip.vision.image_size`, `clip.vision.patch_size`.
    pub image_size: u64,
    pub patch_size: u64,
    /// Per-side reduction of the patch grid before the language model (see the module docs).
    pub merge: u64,
    /// Image height when it differs from `image_size` (the width); 0 = a square image.
    pub image_height: u64,
    /// The tower takes images of any size, rounded to its grid ([`Self::resized`]).
    pub dynamic: bool,
    /// Read from the model's config.json (`vision_config`): the tower is part of the model's own
    /// checkpoint, not an mmproj file.
    pub in_checkpoint: bool,
}

/// Qwen2-VL's processor caps an image at this many pixels, scaling larger ones down
/// (`max_pixels` in Qwen2.5-VL's preprocessor_config.json, 12,845,056 = 28² × 16,384; transformers
/// `image_processing_qwen2_vl.py` `smart_resize`).
pub const QWEN_MAX_PIXELS: u64 = 12_845_056;

impl VisionEncoder {
    /// Image height in pixels (`image_size` for a square image).
    pub fn height(&self) -> u64 {
        match self.image_height {
            0 => self.image_size,
            h => h,
        }
    }

    /// Patches of one image at `image_size × height`.
    pub fn patches(&self) -> u64 {
        let p = self.patch_size.max(1);
        (self.image_size / p)
            .saturating_mul(self.height() / p)
            .max(1)
    }

    /// The encoder at a `width × height` image, as a dynamic-resolution processor resizes it
    /// (transformers `image_processing_qwen2_vl.py` `smart_resize`): each side rounded to the
    /// nearest multiple of `f = patch × merge` (at least `f`), then, above [`QWEN_MAX_PIXELS`],
    /// both sides scaled by `√(W·H / max)` and floored to `f`. 1024 × 768 → 1036 × 756.
    pub fn resized(&self, width: u64, height: u64) -> VisionEncoder {
        let f = self.patch_size.max(1).saturating_mul(self.merge.max(1));
        let round = |x: u64| ((x + f / 2) / f).max(1) * f;
        let (mut w, mut h) = (round(width), round(height));
        if w.saturating_mul(h) > QWEN_MAX_PIXELS {
            let beta = ((width as f64 * height as f64) / QWEN_MAX_PIXELS as f64).sqrt();
            // A hair over the quotient so that an exact multiple is not floored below itself.
            let floor = |x: u64| (((x as f64 / beta) / f as f64 + 1e-9).floor() as u64).max(1) * f;
            (w, h) = (floor(width), floor(height));
        }
        VisionEncoder {
            image_size: w,
            image_height: if h == w { 0 } else { h },
            ..self.clone()
        }
    }

    /// Language-model tokens one image becomes.
    pub fn tokens_per_image(&self) -> u64 {
        let m = self.merge.max(1);
        (self.patches() / m.saturating_mul(m)).max(1)
    }

    /// FLOPs to encode one image.
    pub fn flops_per_image(&self) -> f64 {
        let p = self.patches() as f64;
        2.0 * self.params as f64 * p + 4.0 * self.layers as f64 * self.hidden as f64 * p * p
    }

    /// The compute buffer of one image's graph: the largest of the attention scores (f32
    /// `heads × P²`, none with FlashAttention), the FFN's f32 `P × ffn` and the q/k/v of one
    /// layer (`3 × P × hidden`), plus four f32 tensors of the residual stream `P × hidden`.
    pub fn compute_buffer_bytes(&self, flash_attention: bool) -> u64 {
        let p = self.patches();
        let scores = if flash_attention {
            0
        } else {
            self.heads
                .saturating_mul(p)
                .saturating_mul(p)
                .saturating_mul(4)
        };
        let ffn = p.saturating_mul(self.ffn).saturating_mul(4);
        let qkv = p.saturating_mul(self.hidden).saturating_mul(3 * 4);
        let residual = p.saturating_mul(self.hidden).saturating_mul(4 * 4);
        scores.max(ffn).max(qkv).saturating_add(residual)
    }
}

/// Images in the scenario (`Scenario::vision`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct VisionInputs {
    pub encoder: VisionEncoder,
    /// Images per request (`--images`); 0 counts as 1.
    pub images: u64,
    /// Tokens per image when the user says (`--image-tokens`); 0 = the encoder's.
    pub image_tokens: u64,
    /// llama.cpp `--no-mmproj-offload`: the encoder stays on the CPU.
    pub on_cpu: bool,
}

impl VisionInputs {
    pub fn images(&self) -> u64 {
        self.images.max(1)
    }
    pub fn tokens_per_image(&self) -> u64 {
        match self.image_tokens {
            0 => self.encoder.tokens_per_image(),
            n => n,
        }
    }
    /// Context tokens the images of one request take.
    pub fn tokens_per_request(&self) -> u64 {
        self.images().saturating_mul(self.tokens_per_image())
    }
}

/// What the images cost on one machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VisionSpeed {
    pub images: u64,
    pub tokens_per_image: u64,
    /// Seconds to encode one image.
    pub encode_s_per_image: f64,
}

/// Encode time from the language model's prefill on the same placement: `prefill_tokens_per_s`
/// tokens of `llm_flops_per_token` FLOPs each give the FLOP rate the encoder's GEMMs reach.
pub fn speed(
    v: &VisionInputs,
    prefill_tokens_per_s: f64,
    llm_flops_per_token: f64,
) -> Option<VisionSpeed> {
    let rate = prefill_tokens_per_s * llm_flops_per_token;
    if !(rate.is_finite() && rate > 0.0) {
        return None;
    }
    Some(VisionSpeed {
        images: v.images(),
        tokens_per_image: v.tokens_per_image(),
        encode_s_per_image: v.encoder.flops_per_image() / rate,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gemma 3's SigLIP-So400m at 896²: 14-pixel patches, a 4 × 4 pool to 256 tokens.
    fn gemma3() -> VisionEncoder {
        VisionEncoder {
            params: 416_866_032,
            layers: 27,
            hidden: 1152,
            heads: 16,
            ffn: 4304,
            image_size: 896,
            patch_size: 14,
            merge: 4,
            ..VisionEncoder::default()
        }
    }

    #[test]
    fn an_image_is_its_patches_over_the_merge() {
        let g = gemma3();
        assert_eq!(g.patches(), 64 * 64);
        assert_eq!(g.tokens_per_image(), 256);
        // Without FlashAttention the scores dominate: 16 × 4096² × 4 B = 1 GiB, plus the
        // residual 4096 × 1152 × 16 B.
        assert_eq!(
            g.compute_buffer_bytes(false),
            16 * 4096 * 4096 * 4 + 4096 * 1152 * 16
        );
        assert_eq!(
            g.compute_buffer_bytes(true),
            4096 * 4304 * 4 + 4096 * 1152 * 16
        );
    }

    #[test]
    fn a_dynamic_tower_rounds_each_side_to_its_grid() {
        let q = VisionEncoder {
            patch_size: 14,
            merge: 2,
            image_size: 560,
            dynamic: true,
            ..VisionEncoder::default()
        };
        // 560² = 40 × 40 patches → 400 tokens (2 × 2 merge).
        assert_eq!(q.tokens_per_image(), 400);
        // 1024 / 28 = 36.6 → 37 × 28 = 1036; 768 / 28 = 27.4 → 27 × 28 = 756:
        // 74 × 54 = 3996 patches, 999 tokens.
        let r = q.resized(1024, 768);
        assert_eq!((r.image_size, r.height()), (1036, 756));
        assert_eq!(r.patches(), 74 * 54);
        assert_eq!(r.tokens_per_image(), 999);
        // Tiny images take one grid cell: 1 token.
        assert_eq!(q.resized(10, 10).tokens_per_image(), 1);
        // 8192² = 67.1 M px > 12,845,056: β = 8192 / 3584, sides floor(3584 / 28) × 28 = 3584,
        // 256² patches → 16,384 tokens.
        let big = q.resized(8192, 8192);
        assert_eq!((big.image_size, big.height()), (3584, 3584));
        assert_eq!(big.tokens_per_image(), 16_384);
    }

    #[test]
    fn encode_time_follows_the_prefill_flop_rate() {
        let v = VisionInputs {
            encoder: gemma3(),
            ..VisionInputs::default()
        };
        // 1e14 FLOP/s achieved: 2 × 416.9 M × 4096 + 4 × 27 × 1152 × 4096² FLOPs.
        let s = speed(&v, 1e4, 1e10).unwrap();
        let flops = 2.0 * 416_866_032.0 * 4096.0 + 4.0 * 27.0 * 1152.0 * 4096.0 * 4096.0;
        assert!((s.encode_s_per_image - flops / 1e14).abs() < 1e-12);
        assert!(speed(&v, 0.0, 1e10).is_none());
    }
}
