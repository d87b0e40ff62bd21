//! Vision towers of vision-language models read from their config.json (`vision_config`), as
//! [`VisionEncoder`]s: the same shape an mmproj GGUF gives (`io/import/mmproj.rs`), so the
//! estimate sizes both alike (`core/estimate/vision.rs`).
//!
//! - **Qwen2.5-VL** (`qwen2_5_vl`): transformers `modeling_qwen2_5_vl.py`
//!   `Qwen2_5_VisionTransformerPretrainedModel`, a ViT over 14-pixel patches of two stacked frames
//!   with RMSNorms, gated SiLU MLPs and `Qwen2_5_VLPatchMerger` (2 × 2 patches → one token of the
//!   language model). Dynamic resolution: an image becomes `(H/14 · W/14) / 2²` tokens at its own
//!   size rounded to 28 px; sized at 560² unless `--image-size` says (llama.cpp's converter writes
//!   `image_size` 560 for this tower: `convert_hf_to_gguf.py` `Qwen2VLVisionModel.__init__`).
//! - **LLaVA-1.5** (`llava`): transformers `modeling_llava.py`, a CLIP ViT (`modeling_clip.py`
//!   `CLIPVisionTransformer`, ViT-L/14 at 336² in LLaVA-1.5) and `LlavaMultiModalProjector`'s two
//!   linear layers with GELU between. Fixed resolution: `(image_size / patch_size)²` tokens (576),
//!   the class token dropped (`vision_feature_select_strategy` "default", LLaVA-1.5's; "full",
//!   which keeps it for 577, is not read).
//! - **LLaVA-NeXT** (`llava_next`, LLaVA-1.6): transformers `modeling_llava_next.py`, LLaVA-1.5's
//!   CLIP tower and projector plus an `image_newline` vector of the text width. "anyres"
//!   tiling: an image is scaled into the best of `image_grid_pinpoints` and cut into tiles of the
//!   tower's `image_size`, each encoded, plus the whole image at one tile
//!   (`image_size_to_num_patches`); its tokens are the base tile's, the grid's features without
//!   the letterbox padding, and a newline token per row (`VisionEncoder::tokens_per_image`).
//!   Sized at the largest pinpoint unless `--image-size` says.
//! - **Llama 3.2 Vision** (`mllama`): transformers `modeling_mllama.py` `MllamaVisionModel`, a
//!   ViT over up to `max_num_tiles` tiles of `image_size²` encoded together (a local encoder of
//!   `num_hidden_layers` and a gated global one of `num_global_layers`), and
//!   `multi_modal_projector` from `vision_output_dim` to the text width. Its patches are not
//!   context tokens: they are the K/V of the text model's `cross_attention_layers`.

use super::obj::{Obj, bad};
use super::{ConfigError, MAX_FFN, MAX_HEADS, MAX_HIDDEN, MAX_LAYERS};
use crate::core::vision::VisionEncoder;
use serde_json::{Map, Value};

/// transformers `Qwen2_5_VLVisionConfig.__init__` defaults (models/qwen2_5_vl/
/// configuration_qwen2_5_vl.py), which a checkpoint's `vision_config` may leave out (the
/// Qwen2.5-VL-32B-Instruct-AWQ config names only hidden_size, intermediate_size and
/// out_hidden_size of them).
const QWEN2_5_VL_VISION_DEFAULTS: &[(&str, u64)] = &[
    ("depth", 32),
    ("hidden_size", 3584),
    ("intermediate_size", 3420),
    ("num_heads", 16),
    ("in_channels", 3),
    ("patch_size", 14),
    ("spatial_merge_size", 2),
    ("temporal_patch_size", 2),
    ("out_hidden_size", 3584),
];

/// transformers `CLIPVisionConfig.__init__` defaults (models/clip/configuration_clip.py).
const CLIP_VISION_DEFAULTS: &[(&str, u64)] = &[
    ("hidden_size", 768),
    ("intermediate_size", 3072),
    ("num_hidden_layers", 12),
    ("num_attention_heads", 12),
    ("num_channels", 3),
    ("image_size", 224),
    ("patch_size", 32),
];

/// transformers `LlavaNextConfig.__init__`'s `image_grid_pinpoints` when a config omits it
/// (models/llava_next/configuration_llava_next.py), each `[height, width]`.
const LLAVA_NEXT_PINPOINTS: &[[u64; 2]] =
    &[[336, 672], [672, 336], [672, 672], [1008, 336], [336, 1008]];

/// The image side a dynamic-resolution tower is sized at when no `--image-size` is given
/// (llama.cpp `convert_hf_to_gguf.py` `Qwen2VLVisionModel`: `image_size` 560).
pub const DYNAMIC_DEFAULT_SIDE: u64 = 560;

/// The vision tower of a config.json, or `None` when its `model_type` has none that is read
/// here (see the module docs for the families). Errors name the `vision_config.` key.
pub fn vision_tower(root: &Value) -> Result<Option<VisionEncoder>, ConfigError> {
    let Value::Object(map) = root else {
        return Ok(None);
    };
    let top = Obj {
        map,
        prefix: "",
        defaults: &[],
    };
    let empty = Map::new();
    match top.text("model_type")? {
        Some("qwen2_5_vl") => {
            let v = Obj {
                map: top.object("vision_config")?.unwrap_or(&empty),
                prefix: "vision_config.",
                defaults: QWEN2_5_VL_VISION_DEFAULTS,
            };
            qwen2_5_vl_tower(&v, dtype_bytes(&top)?).map(Some)
        }
        Some("llava") => llava_tower(&top, dtype_bytes(&top)?).map(Some),
        Some("llava_next") => llava_next_tower(&top, dtype_bytes(&top)?).map(Some),
        Some("mllama") => mllama_tower(&top, dtype_bytes(&top)?).map(Some),
        _ => Ok(None),
    }
}

/// Bytes per stored weight from `torch_dtype` (`dtype` in newer files): 4 for float32, else 2
/// (bfloat16/float16, and a quantised checkpoint's tower, which AWQ/GPTQ leave unquantised:
/// `quantization_config.modules_to_not_convert: ["visual"]`).
fn dtype_bytes(top: &Obj) -> Result<u64, ConfigError> {
    let t = match top.text("torch_dtype")? {
        Some(t) => Some(t),
        None => top.text("dtype")?,
    };
    Ok(if t == Some("float32") { 4 } else { 2 })
}

/// Qwen2.5-VL's tower with h = `hidden_size`, I = `intermediate_size`, L = `depth`,
/// c = `in_channels`, t = `temporal_patch_size`, p = `patch_size`, m = `spatial_merge_size`,
/// o = `out_hidden_size`:
/// - `Qwen2_5_VisionPatchEmbed`: Conv3d without bias, `c·t·p²·h`;
/// - per `Qwen2_5_VLVisionBlock`: two RMSNorms `2h`, `qkv` `h·3h + 3h`, `proj` `h² + h`, gated
///   MLP `gate_proj`/`up_proj` `2(h·I + I)` and `down_proj` `I·h + h`;
/// - `Qwen2_5_VLPatchMerger`: RMSNorm `h`, `Linear(h·m², h·m²)` and `Linear(h·m², o)` with biases.
///
/// Qwen2.5-VL-7B (h 1280, I 3420, L 32, o 3584): 1,505,280 + 32 × 19,702,200 + 44,574,464 =
/// 676,550,144, the "675M" ViT of the Qwen2.5-VL report (arXiv 2502.13923, Table 1).
fn qwen2_5_vl_tower(v: &Obj, bytes_per_param: u64) -> Result<VisionEncoder, ConfigError> {
    let h = v.req("hidden_size", 1, MAX_HIDDEN)?;
    let ffn = v.req("intermediate_size", 1, MAX_FFN)?;
    let layers = v.req("depth", 1, MAX_LAYERS)?;
    let heads = v.req("num_heads", 1, MAX_HEADS)?;
    // Qwen's own configs spell it `in_chans`; transformers reads `in_channels`.
    let channels = match v.count("in_channels", 1, 64)? {
        Some(c) if v.raw("in_channels").is_some() => c,
        _ => v.count("in_chans", 1, 64)?.unwrap_or(3),
    };
    let frames = v.req("temporal_patch_size", 1, 64)?;
    let patch = v.req("patch_size", 1, 1 << 10)?;
    let merge = v.req("spatial_merge_size", 1, 64)?;
    let out = v.req("out_hidden_size", 1, MAX_HIDDEN)?;
    if !h.is_multiple_of(heads) {
        return Err(bad(
            v.key("num_heads"),
            format!("{heads} does not divide hidden_size {h}"),
        ));
    }
    let m = |a: u64, b: u64| a.saturating_mul(b);
    let embed = m(m(channels, frames), m(m(patch, patch), h));
    let block = m(2, h)
        .saturating_add(m(h, m(3, h)).saturating_add(m(3, h)))
        .saturating_add(m(h, h).saturating_add(h))
        .saturating_add(m(2, m(h, ffn).saturating_add(ffn)))
        .saturating_add(m(ffn, h).saturating_add(h));
    let wide = m(h, m(merge, merge));
    let merger = h
        .saturating_add(m(wide, wide).saturating_add(wide))
        .saturating_add(m(wide, out).saturating_add(out));
    let params = embed
        .saturating_add(m(layers, block))
        .saturating_add(merger);
    Ok(VisionEncoder {
        file: "config.json".into(),
        projector: "qwen2.5vl_merger".into(),
        weight_bytes: m(params, bytes_per_param),
        params,
        layers,
        hidden: h,
        heads,
        ffn,
        image_size: DYNAMIC_DEFAULT_SIDE,
        patch_size: patch,
        merge,
        image_height: 0,
        dynamic: true,
        in_checkpoint: true,
        grid_pinpoints: Vec::new(),
        tile: 0,
        joint_tiles: 0,
        cross_attention: false,
    })
}

/// LLaVA-1.5's CLIP tower and projector, h = vision `hidden_size`, I = its `intermediate_size`,
/// L = `num_hidden_layers`, c channels, p patch, s image, n = (s/p)², t = the text model's
/// `hidden_size` (LlamaConfig's default 4096 when `text_config` omits it, as llava-1.5-7b-hf does):
/// - `CLIPVisionEmbeddings`: class embedding `h`, patch Conv2d without bias `c·p²·h`, position
///   embedding `(n + 1)·h`; `pre_layrnorm` `2h`;
/// - per `CLIPEncoderLayer`: q/k/v/out projections with biases `4(h² + h)`, two LayerNorms `4h`,
///   `fc1` `h·I + I`, `fc2` `I·h + h`; `post_layernorm` `2h` (every layer is in the checkpoint,
///   though `vision_feature_layer` −2 reads the one before last);
/// - `LlavaMultiModalProjector`: `linear_1` `h·t + t`, `linear_2` `t² + t` (biases:
///   `multimodal_projector_bias`, default true).
///
/// llava-1.5-7b-hf (h 1024, I 4096, L 24, p 14, s 336, t 4096): 1,193,984 + 24 × 12,596,224 +
/// 4,096 = 303,507,456 for the ViT-L/14-336, + 20,979,712 for the projector.
fn llava_tower(top: &Obj, bytes_per_param: u64) -> Result<VisionEncoder, ConfigError> {
    let map = top
        .object("vision_config")?
        .ok_or_else(|| ConfigError::MissingKey("vision_config".into()))?;
    let v = Obj {
        map,
        prefix: "vision_config.",
        defaults: CLIP_VISION_DEFAULTS,
    };
    if let Some(t) = v.text("model_type")?
        && t != "clip_vision_model"
    {
        return Err(bad(
            v.key("model_type"),
            format!("\"{t}\": only a CLIP tower (clip_vision_model) is read for llava"),
        ));
    }
    let h = v.req("hidden_size", 1, MAX_HIDDEN)?;
    let ffn = v.req("intermediate_size", 1, MAX_FFN)?;
    let layers = v.req("num_hidden_layers", 1, MAX_LAYERS)?;
    let heads = v.req("num_attention_heads", 1, MAX_HEADS)?;
    let channels = v.req("num_channels", 1, 64)?;
    let image = v.req("image_size", 1, 1 << 16)?;
    let patch = v.req("patch_size", 1, 1 << 10)?;
    let t = text_hidden(top)?;
    let bias = top.flag("multimodal_projector_bias")?.unwrap_or(true);
    let m = |a: u64, b: u64| a.saturating_mul(b);
    let n = m(image / patch, image / patch);
    let embed = h
        .saturating_add(m(m(channels, m(patch, patch)), h))
        .saturating_add(m(n.saturating_add(1), h));
    let layer = m(4, m(h, h).saturating_add(h))
        .saturating_add(m(4, h))
        .saturating_add(m(h, ffn).saturating_add(ffn))
        .saturating_add(m(ffn, h).saturating_add(h));
    let tower = embed
        .saturating_add(m(2, h))
        .saturating_add(m(layers, layer))
        .saturating_add(m(2, h));
    let projector = m(h, t)
        .saturating_add(m(t, t))
        .saturating_add(if bias { m(2, t) } else { 0 });
    let params = tower.saturating_add(projector);
    Ok(VisionEncoder {
        file: "config.json".into(),
        // llama.cpp's name for LLaVA's two-layer MLP (`tools/mtmd/clip-impl.h` PROJECTOR_TYPE_MLP).
        projector: "mlp".into(),
        weight_bytes: m(params, bytes_per_param),
        params,
        layers,
        hidden: h,
        heads,
        ffn,
        image_size: image,
        patch_size: patch,
        merge: 1,
        image_height: 0,
        dynamic: false,
        in_checkpoint: true,
        grid_pinpoints: Vec::new(),
        tile: 0,
        joint_tiles: 0,
        cross_attention: false,
    })
}

/// The text model's `hidden_size`: `text_config`'s, else its class default (LlamaConfig's and
/// MistralConfig's are both 4096; llava-1.5-7b-hf and llava-v1.6-mistral-7b-hf omit it).
fn text_hidden(top: &Obj) -> Result<u64, ConfigError> {
    let empty = Map::new();
    let text = Obj {
        map: top.object("text_config")?.unwrap_or(&empty),
        prefix: "text_config.",
        defaults: super::LLAMA_TEXT_DEFAULTS,
    };
    text.req("hidden_size", 1, MAX_HIDDEN)
}

/// LLaVA-NeXT: LLaVA-1.5's tower and projector ([`llava_tower`]) plus the `image_newline`
/// parameter of the text width t (`LlavaNextModel.image_newline`, `torch.empty(t)`), tiling
/// `image_grid_pinpoints` (each `[height, width]`, multiples of the tower's `image_size`).
///
/// llava-v1.6-mistral-7b-hf: 303,507,456 + 20,979,712 + 4,096 = 324,491,264.
fn llava_next_tower(top: &Obj, bytes_per_param: u64) -> Result<VisionEncoder, ConfigError> {
    let mut e = llava_tower(top, bytes_per_param)?;
    let newline = text_hidden(top)?;
    e.params = e.params.saturating_add(newline);
    e.weight_bytes = e.params.saturating_mul(bytes_per_param);
    let pinpoints = match top.raw("image_grid_pinpoints") {
        None => LLAVA_NEXT_PINPOINTS.to_vec(),
        Some(v) => {
            pinpoints(v, e.image_size).map_err(|m| bad(top.key("image_grid_pinpoints"), m))?
        }
    };
    // Sized at the pinpoint of the most pixels (the largest image the grid takes unscaled).
    let [h, w] = *pinpoints
        .iter()
        .max_by_key(|[h, w]| h.saturating_mul(*w))
        .expect("pinpoints are not empty");
    e.tile = e.image_size;
    e.grid_pinpoints = pinpoints;
    e.image_size = w;
    e.image_height = if h == w { 0 } else { h };
    Ok(e)
}

/// `image_grid_pinpoints` as `[height, width]` pairs, each side a positive multiple of `tile`.
fn pinpoints(v: &Value, tile: u64) -> Result<Vec<[u64; 2]>, String> {
    let Value::Array(list) = v else {
        return Err(format!(
            "expected a list of [height, width], got {}",
            super::obj::describe(v)
        ));
    };
    if list.is_empty() {
        return Err("expected at least one [height, width]".into());
    }
    list.iter()
        .map(|p| {
            let pair = match p {
                Value::Array(a) if a.len() == 2 => a,
                other => {
                    return Err(format!(
                        "expected [height, width], got {}",
                        super::obj::describe(other)
                    ));
                }
            };
            let side = |x: &Value| -> Result<u64, String> {
                let n = super::obj::as_count(x)?;
                if n == 0 || n > 1 << 16 || !n.is_multiple_of(tile) {
                    return Err(format!(
                        "{n} is not a multiple of the tower's image_size {tile} up to 65536"
                    ));
                }
                Ok(n)
            };
            Ok([side(&pair[0])?, side(&pair[1])?])
        })
        .collect()
}

/// Llama 3.2 Vision's tower (transformers `modeling_mllama.py`), h = `hidden_size`, I =
/// `intermediate_size`, L local + G global layers, c channels, p patch, s `image_size`, T =
/// `max_num_tiles`, A = `len(supported_aspect_ratios)` + 1 rows (`max_aspect_ratio_id` + 1: the
/// ids count from 1, 0 is padding), n =
/// (s/p)² + 1 positions a tile with its class token, o = `vision_output_dim`, t the text width:
/// - `patch_embedding` Conv2d without bias `c·p²·h`, `class_embedding` `h`;
/// - `gated_positional_embedding`: gate 1, `embedding` `n·h`, `tile_embedding` `A × T·n·h`;
/// - `pre_`/`post_tile_positional_embedding`: `A × T·h` and a gate each;
/// - `layernorm_pre`/`_post` `2h` each;
/// - per `MllamaVisionEncoderLayer`: q/k/v/o without bias `4h²`, `fc1` `h·I + I`, `fc2` `I·h +
///   h`, two LayerNorms `4h`; the G global layers add `gate_attn` and `gate_ffn`;
/// - `multi_modal_projector`: `o·t + t`.
///
/// Llama-3.2-11B-Vision (h 1280, I 5120, L 32, G 8, s 560, p 14, T 4, A 9, o 7680, t 4096):
/// 752,640 + 1,280 + 75,823,361 + 92,162 + 5,120 + 32 × 19,672,320 + 8 × 19,672,322 =
/// 863,567,379, + 31,461,376 = 895,028,755.
fn mllama_tower(top: &Obj, bytes_per_param: u64) -> Result<VisionEncoder, ConfigError> {
    let empty = Map::new();
    let v = Obj {
        map: top.object("vision_config")?.unwrap_or(&empty),
        prefix: "vision_config.",
        defaults: MLLAMA_VISION_DEFAULTS,
    };
    let h = v.req("hidden_size", 1, MAX_HIDDEN)?;
    let ffn = v.req("intermediate_size", 1, MAX_FFN)?;
    let local = v.req("num_hidden_layers", 1, MAX_LAYERS)?;
    let global = v.req("num_global_layers", 0, MAX_LAYERS)?;
    // MllamaVisionConfig stores `num_attention_heads` as `attention_heads`, the key its
    // config.json files carry.
    let heads = match v.count("attention_heads", 1, MAX_HEADS)? {
        Some(n) => n,
        None => v.req("num_attention_heads", 1, MAX_HEADS)?,
    };
    let channels = v.req("num_channels", 1, 64)?;
    let image = v.req("image_size", 1, 1 << 16)?;
    let patch = v.req("patch_size", 1, 1 << 10)?;
    let tiles = v.req("max_num_tiles", 1, 64)?;
    let out = v.req("vision_output_dim", 1, MAX_HIDDEN.saturating_mul(16))?;
    let ratios = match v.raw("supported_aspect_ratios") {
        Some(Value::Array(a)) if !a.is_empty() => a.len() as u64 + 1,
        None => 9,
        Some(other) => {
            return Err(bad(
                v.key("supported_aspect_ratios"),
                format!(
                    "expected a list of [rows, cols], got {}",
                    super::obj::describe(other)
                ),
            ));
        }
    };
    if patch > image {
        return Err(bad(
            v.key("patch_size"),
            format!("{patch} is larger than image_size {image}"),
        ));
    }
    let t = {
        let text = Obj {
            map: top.object("text_config")?.unwrap_or(&empty),
            prefix: "text_config.",
            defaults: &[("hidden_size", 4096)],
        };
        text.req("hidden_size", 1, MAX_HIDDEN)?
    };
    let m = |a: u64, b: u64| a.saturating_mul(b);
    let n = m(image / patch, image / patch).saturating_add(1);
    let embed = m(m(channels, m(patch, patch)), h)
        .saturating_add(h)
        .saturating_add(1 + m(n, h) + m(ratios, m(tiles, m(n, h))))
        .saturating_add(m(2, m(ratios, m(tiles, h)).saturating_add(1)))
        .saturating_add(m(4, h));
    let layer = m(4, m(h, h))
        .saturating_add(m(h, ffn).saturating_add(ffn))
        .saturating_add(m(ffn, h).saturating_add(h))
        .saturating_add(m(4, h));
    let tower = embed
        .saturating_add(m(local, layer))
        .saturating_add(m(global, layer.saturating_add(2)));
    let params = tower.saturating_add(m(out, t).saturating_add(t));
    Ok(VisionEncoder {
        file: "config.json".into(),
        // llama.cpp's name for this projector (`tools/mtmd/clip-impl.h` PROJECTOR_TYPE_MLLAMA).
        projector: "mllama".into(),
        weight_bytes: m(params, bytes_per_param),
        params,
        layers: local.saturating_add(global),
        hidden: h,
        heads,
        ffn,
        image_size: image,
        patch_size: patch,
        merge: 1,
        image_height: 0,
        dynamic: false,
        in_checkpoint: true,
        grid_pinpoints: Vec::new(),
        tile: 0,
        joint_tiles: tiles,
        cross_attention: true,
    })
}

/// transformers `MllamaVisionConfig.__init__` defaults (models/mllama/configuration_mllama.py).
const MLLAMA_VISION_DEFAULTS: &[(&str, u64)] = &[
    ("hidden_size", 1280),
    ("intermediate_size", 5120),
    ("num_hidden_layers", 32),
    ("num_global_layers", 8),
    ("num_attention_heads", 16),
    ("num_channels", 3),
    ("image_size", 448),
    ("patch_size", 14),
    ("max_num_tiles", 4),
    ("vision_output_dim", 7680),
];
