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
    /// LLaVA-NeXT "anyres" tiling: the processor's `image_grid_pinpoints`, each `[height, width]`
    /// in pixels; empty for a tower that is not tiled. With pinpoints, `image_size × height` is
    /// the image and [`Self::tile`] the square the tower encodes ([`Self::anyres_grid`]).
    pub grid_pinpoints: Vec<[u64; 2]>,
    /// The tower's own square input side (`vision_config.image_size`) when it tiles; 0 otherwise.
    pub tile: u64,
    /// Llama 3.2 Vision: tiles of `image_size²` encoded in one pass, attending across each other
    /// (transformers `MllamaVisionModel.forward`), each `(image_size / patch)² + 1` positions
    /// with its class token; sized at `max_num_tiles`. 0 for other towers.
    pub joint_tiles: u64,
    /// The encoder's output feeds the language model's cross-attention layers (Llama 3.2
    /// Vision): an image takes one `<|image|>` token of the context, and its patches are the
    /// K/V of those layers ([`Self::cross_tokens_per_image`]).
    pub cross_attention: bool,
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

    /// Patches of one pass of the tower: an image at `image_size × height`, or one `tile²` crop
    /// of a tiling tower.
    pub fn patches(&self) -> u64 {
        let p = self.patch_size.max(1);
        if self.joint_tiles > 0 {
            let side = self.image_size / p;
            return self
                .joint_tiles
                .saturating_mul(side.saturating_mul(side).saturating_add(1));
        }
        if self.tiles() {
            return ((self.tile / p).saturating_mul(self.tile / p)).max(1);
        }
        (self.image_size / p)
            .saturating_mul(self.height() / p)
            .max(1)
    }

    /// Whether the tower tiles the image (LLaVA-NeXT anyres).
    pub fn tiles(&self) -> bool {
        self.tile > 0 && !self.grid_pinpoints.is_empty()
    }

    /// Passes of the tower per image: the `rows × cols` crops of the anyres grid plus the
    /// whole image resized to one tile (transformers `modeling_llava_next.py`
    /// `image_size_to_num_patches`); 1 for a tower that does not tile.
    pub fn crops(&self) -> u64 {
        match self.anyres_grid() {
            Some((rows, cols)) => rows.saturating_mul(cols).saturating_add(1),
            None => 1,
        }
    }

    /// The anyres grid `(rows, cols)` of tiles for the image: the pinpoint that keeps the most
    /// of the image's pixels when it is scaled to fit, ties to the least padding (transformers
    /// `image_processing_utils.py` `select_best_resolution`), in tiles.
    pub fn anyres_grid(&self) -> Option<(u64, u64)> {
        if !self.tiles() {
            return None;
        }
        let (w, h) = (self.image_size.max(1), self.height().max(1));
        let original = w.saturating_mul(h);
        let mut best: Option<([u64; 2], u64, u64)> = None;
        for &[ph, pw] in &self.grid_pinpoints {
            let scale = (pw as f64 / w as f64).min(ph as f64 / h as f64);
            let (dw, dh) = ((w as f64 * scale) as u64, (h as f64 * scale) as u64);
            let effective = dw.saturating_mul(dh).min(original);
            let wasted = ph.saturating_mul(pw).saturating_sub(effective);
            if best.is_none_or(|(_, e, waste)| effective > e || (effective == e && wasted < waste))
            {
                best = Some(([ph, pw], effective, wasted));
            }
        }
        let [ph, pw] = best?.0;
        Some(((ph / self.tile).max(1), (pw / self.tile).max(1)))
    }

    /// LLaVA-NeXT's tokens per image (transformers `processing_llava_next.py`
    /// `_get_number_of_features` and `_get_unpadded_features`): the base tile's `n²` features
    /// (`n = tile / patch`, the class token dropped by the "default" feature strategy), plus the
    /// grid's `rows·n × cols·n` features with the padding rows or columns that letterboxing
    /// added removed, plus one `image_newline` token per remaining row.
    fn anyres_tokens(&self) -> Option<u64> {
        let (rows, cols) = self.anyres_grid()?;
        let n = self.tile / self.patch_size.max(1);
        let (mut ch, mut cw) = (n.saturating_mul(rows), n.saturating_mul(cols));
        let (w, h) = (self.image_size.max(1) as f64, self.height().max(1) as f64);
        // Python's `int(round(x, 7))`: the rounding keeps 71.99999999999999 at 72.
        let trunc7 = |x: f64| ((x * 1e7).round() / 1e7) as u64;
        if w / h > cw as f64 / ch as f64 {
            let new_h = trunc7(h * (cw as f64 / w));
            ch -= 2 * (ch.saturating_sub(new_h) / 2);
        } else {
            let new_w = trunc7(w * (ch as f64 / h));
            cw -= 2 * (cw.saturating_sub(new_w) / 2);
        }
        Some(
            ch.saturating_mul(cw)
                .saturating_add(ch)
                .saturating_add(n.saturating_mul(n)),
        )
    }

    /// The encoder at a `width × height` image, for a tower that takes any size: a dynamic one
    /// resized to its grid ([`Self::resized`]), a tiling one at that image; `None` for a tower
    /// of one fixed size.
    pub fn at_image(&self, width: u64, height: u64) -> Option<VisionEncoder> {
        if self.dynamic {
            Some(self.resized(width, height))
        } else if self.tiles() {
            Some(VisionEncoder {
                image_size: width,
                image_height: if height == width { 0 } else { height },
                ..self.clone()
            })
        } else {
            None
        }
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
        if self.cross_attention {
            return 1;
        }
        if let Some(t) = self.anyres_tokens() {
            return t;
        }
        let m = self.merge.max(1);
        (self.patches() / m.saturating_mul(m)).max(1)
    }

    /// Image tokens the cross-attention layers attend to per image (0 without them): every
    /// tile's positions, class tokens included (`MllamaForConditionalGeneration`:
    /// `cross_attention_states` of `num_tiles × num_patches`).
    pub fn cross_tokens_per_image(&self) -> u64 {
        if self.cross_attention {
            self.patches()
        } else {
            0
        }
    }

    /// FLOPs to encode one image: each of its [`Self::crops`] a pass of the tower.
    pub fn flops_per_image(&self) -> f64 {
        let p = self.patches() as f64;
        let pass =
            2.0 * self.params as f64 * p + 4.0 * self.layers as f64 * self.hidden as f64 * p * p;
        pass * self.crops() as f64
    }

    /// The compute buffer of one pass's graph (llama.cpp encodes a tiled image's crops one at a
    /// time: `tools/mtmd/mtmd.cpp` `mtmd_encode`, LLaVA not batched): the largest of the attention scores (f32
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

    /// LLaVA-NeXT's CLIP ViT-L/14-336 with llava-v1.6's `image_grid_pinpoints`.
    fn llava_next(width: u64, height: u64) -> VisionEncoder {
        VisionEncoder {
            params: 324_491_264,
            layers: 24,
            hidden: 1024,
            heads: 16,
            ffn: 4096,
            image_size: 336,
            patch_size: 14,
            merge: 1,
            tile: 336,
            grid_pinpoints: vec![[336, 672], [672, 336], [672, 672], [1008, 336], [336, 1008]],
            ..VisionEncoder::default()
        }
        .at_image(width, height)
        .expect("a tiling tower takes any size")
    }

    /// Hand-computed from transformers `select_best_resolution` and `LlavaNextProcessor.
    /// _get_number_of_features` with n = 336 / 14 = 24 patches a tile side.
    #[test]
    fn anyres_tiles_unpads_and_adds_a_newline_per_row() {
        // 672²: 672 × 672 keeps all 451,584 px (the others 112,896): a 2 × 2 grid, 48 × 48
        // features, no padding; 48² + 48 newlines + 24² base = 2,928; 4 tiles + the base = 5
        // passes of the tower.
        let sq = llava_next(672, 672);
        assert_eq!(sq.anyres_grid(), Some((2, 2)));
        assert_eq!(sq.tokens_per_image(), 2_928);
        assert_eq!(sq.crops(), 5);
        // One pass is one 336² tile: 576 patches.
        assert_eq!(sq.patches(), 576);
        // 1024 × 768 (H 768, W 1024): scaled into 672 × 672 it keeps 672 × 504 = 338,688 px,
        // into [336, 672] or [336, 1008] 448 × 336 = 150,528: the 2 × 2 grid again. Wider
        // than the grid: new height 768 × 48 / 1024 = 36, padding (48 − 36) / 2 = 6 rows off
        // each side → 36 × 48 = 1,728 + 36 newlines + 576 = 2,340.
        let wide = llava_next(1024, 768);
        assert_eq!(wide.anyres_grid(), Some((2, 2)));
        assert_eq!(wide.tokens_per_image(), 2_340);
        // 1008 × 336 fits [336, 1008] exactly (338,688 px): 1 × 3 tiles, 24 × 72 features
        // (1008 × 24 / 336 = 71.99999999999999 in floats, 72 after Python's round(·, 7)):
        // 1,728 + 24 + 576 = 2,328, 4 passes.
        let strip = llava_next(1008, 336);
        assert_eq!(strip.anyres_grid(), Some((1, 3)));
        assert_eq!(strip.tokens_per_image(), 2_328);
        assert_eq!(strip.crops(), 4);
        // Encoding FLOPs are the passes' sum.
        let one = 2.0 * 324_491_264.0 * 576.0 + 4.0 * 24.0 * 1024.0 * 576.0 * 576.0;
        assert!((sq.flops_per_image() - 5.0 * one).abs() < 1.0);
        // A tiny image still takes the smallest grid, scaled up: 100 × 100 → [336, 672]
        // (ties on the whole image's 10,000 px, least padding first), 24 × 48 features
        // unpadded to 24 × 24: 576 + 24 + 576.
        let tiny = llava_next(100, 100);
        assert_eq!(tiny.anyres_grid(), Some((1, 2)));
        assert_eq!(tiny.tokens_per_image(), 576 + 24 + 576);
        // A tower that neither tiles nor resizes takes no other size.
        assert!(gemma3().at_image(672, 672).is_none());
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
