//! A Diffusers pipeline folder as a [`Pipeline`]: `model_index.json` names the pipeline class
//! and each component's class (`"unet": ["diffusers", "UNet2DConditionModel"]`); each
//! component's `config.json` gives its shape. The fields read are those `shapes.rs` walks (the
//! table in docs/diffusion.md); the pipeline class gives what the configs do not hold, as
//! Diffusers' pipeline calls set it:
//!
//! | `_class_name` | guidance | steps | T5 tokens | VAE upcast |
//! |---|---|---|---|---|
//! | `StableDiffusionPipeline` | classifier-free | 50 | — | no |
//! | `StableDiffusionXLPipeline` | classifier-free | 50 | — | the VAE's `force_upcast` (`needs_upcasting`) |
//! | `StableDiffusion3Pipeline` | classifier-free | 28 | 256 (`max_sequence_length`) | no |
//! | `FluxPipeline` | distilled (none) | 28 | 512 (`max_sequence_length`) | no |
//!
//! (each pipeline's `__call__` defaults in diffusers `src/diffusers/pipelines/…`). The default
//! side is the denoiser's `sample_size` × the VAE's scale (`default_sample_size` × 8; Flux:
//! 128 × 8 = 1024). Pure: the caller reads the files and passes their JSON.

use super::shapes::{ClipTextShape, FluxShape, Sd3Shape, T5Shape, UNetShape, VaeShape};
use super::{Denoiser, Pipeline, TextEncoder};
use serde_json::Value;
use std::fmt;

/// What is wrong with a folder, naming the file and the key: "unet/config.json:
/// block_out_channels: missing".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FolderError {
    /// The file inside the folder ("model_index.json", "vae/config.json").
    pub file: String,
    pub key: String,
    pub why: String,
}

impl fmt::Display for FolderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.file, self.why)
        } else {
            write!(f, "{}: {}: {}", self.file, self.key, self.why)
        }
    }
}

/// A component `model_index.json` names: its folder and its class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    pub folder: String,
    pub class: String,
}

/// The denoiser and encoder classes headroom can size.
pub const DENOISERS: [&str; 3] = [
    "UNet2DConditionModel",
    "FluxTransformer2DModel",
    "SD3Transformer2DModel",
];
const TEXT: [&str; 3] = [
    "CLIPTextModel",
    "CLIPTextModelWithProjection",
    "T5EncoderModel",
];

/// The pipeline class and the components `io` must read (denoiser, text encoders, VAE), in
/// the index's order; schedulers, tokenizers and feature extractors are skipped.
pub fn index_entries(index: &Value) -> Result<(String, Vec<IndexEntry>), FolderError> {
    let err = |key: &str, why: &str| FolderError {
        file: "model_index.json".into(),
        key: key.into(),
        why: why.into(),
    };
    let obj = index
        .as_object()
        .ok_or_else(|| err("", "not a JSON object"))?;
    let class = obj
        .get("_class_name")
        .and_then(Value::as_str)
        .ok_or_else(|| err("_class_name", "missing (not a Diffusers pipeline index)"))?
        .to_string();
    let mut out = Vec::new();
    for (k, v) in obj {
        let Some(c) = v.as_array().and_then(|a| a.get(1)).and_then(Value::as_str) else {
            continue;
        };
        if DENOISERS.contains(&c) || TEXT.contains(&c) || c == "AutoencoderKL" {
            out.push(IndexEntry {
                folder: k.clone(),
                class: c.to_string(),
            });
        }
    }
    Ok((class, out))
}

/// Reads a component config's fields, each error naming the file and key.
struct Cfg<'a> {
    file: String,
    v: &'a Value,
}

impl Cfg<'_> {
    fn err(&self, key: &str, why: impl Into<String>) -> FolderError {
        FolderError {
            file: self.file.clone(),
            key: key.into(),
            why: why.into(),
        }
    }
    fn opt_u64(&self, key: &str) -> Result<Option<u64>, FolderError> {
        match self.v.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x
                .as_u64()
                .filter(|n| *n > 0 && *n <= 1 << 24)
                .map(Some)
                .ok_or_else(|| self.err(key, format!("{x} is not a count (1 … 16,777,216)"))),
        }
    }
    fn u64(&self, key: &str) -> Result<u64, FolderError> {
        self.opt_u64(key)?.ok_or_else(|| self.err(key, "missing"))
    }
    /// A list of counts, or one count repeated `n` times (Diffusers' int-or-tuple fields).
    fn list(&self, key: &str, n: usize) -> Result<Vec<u64>, FolderError> {
        match self.v.get(key) {
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| {
                    x.as_u64()
                        .filter(|n| *n <= 1 << 24)
                        .ok_or_else(|| self.err(key, format!("{x} is not a count")))
                })
                .collect::<Result<Vec<_>, _>>()
                .and_then(|l| {
                    if n > 0 && l.len() != n {
                        Err(self.err(key, format!("{} entries for {n} levels", l.len())))
                    } else {
                        Ok(l)
                    }
                }),
            Some(Value::Number(_)) if n > 0 => Ok(vec![self.u64(key)?; n]),
            Some(_) => Err(self.err(key, "not a list of counts")),
            None => Err(self.err(key, "missing")),
        }
    }
    fn strings(&self, key: &str) -> Result<Vec<String>, FolderError> {
        self.v
            .get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .ok_or_else(|| self.err(key, "missing or not a list of block types"))
    }
    fn flag(&self, key: &str, default: bool) -> bool {
        self.v.get(key).and_then(Value::as_bool).unwrap_or(default)
    }
}

/// `UNet2DConditionModel` (`unet_2d_condition.py`): a level attends when its down block is a
/// `CrossAttn…` block; `attention_head_dim` is the heads (Diffusers' naming quirk).
fn unet(c: &Cfg) -> Result<UNetShape, FolderError> {
    let channels = c.list("block_out_channels", 0)?;
    let n = channels.len();
    let kinds = c.strings("down_block_types")?;
    if kinds.len() != n {
        return Err(c.err(
            "down_block_types",
            format!("{} entries for {n} levels", kinds.len()),
        ));
    }
    let layers = match c.v.get("transformer_layers_per_block") {
        None | Some(Value::Null) => vec![1; n],
        Some(_) => c.list("transformer_layers_per_block", n)?,
    };
    let depth = kinds
        .iter()
        .zip(&layers)
        .map(|(k, l)| if k.starts_with("CrossAttn") { *l } else { 0 })
        .collect();
    Ok(UNetShape {
        in_channels: c.u64("in_channels")?,
        out_channels: c.u64("out_channels")?,
        layers_per_block: c.u64("layers_per_block")?,
        depth,
        heads: c.list("attention_head_dim", n)?,
        cross_dim: c.u64("cross_attention_dim")?,
        add_embedding_in: c
            .opt_u64("projection_class_embeddings_input_dim")?
            .unwrap_or(0),
        channels,
    })
}

fn flux(c: &Cfg) -> Result<FluxShape, FolderError> {
    Ok(FluxShape {
        heads: c.u64("num_attention_heads")?,
        head_dim: c.u64("attention_head_dim")?,
        double_blocks: c.u64("num_layers")?,
        single_blocks: c.u64("num_single_layers")?,
        in_channels: c.u64("in_channels")?,
        joint_attention_dim: c.u64("joint_attention_dim")?,
        pooled_projection_dim: c.u64("pooled_projection_dim")?,
        guidance_embeds: c.flag("guidance_embeds", false),
    })
}

/// `SD3Transformer2DModel`: `dual_attention_layers` lists the blocks with a second attention
/// (SD3.5 Medium: 0 … 12), counted from the first.
fn sd3(c: &Cfg) -> Result<Sd3Shape, FolderError> {
    let dual = match c.v.get("dual_attention_layers") {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_u64)
            .max()
            .map_or(0, |m| m + 1),
        _ => 0,
    };
    Ok(Sd3Shape {
        heads: c.u64("num_attention_heads")?,
        head_dim: c.u64("attention_head_dim")?,
        layers: c.u64("num_layers")?,
        in_channels: c.u64("in_channels")?,
        patch: c.u64("patch_size")?,
        joint_attention_dim: c.u64("joint_attention_dim")?,
        pooled_projection_dim: c.u64("pooled_projection_dim")?,
        qk_norm: c.v.get("qk_norm").is_some_and(|q| !q.is_null()),
        dual_attention_layers: dual,
        pos_embed_max_size: c.opt_u64("pos_embed_max_size")?.unwrap_or(0),
    })
}

fn clip(c: &Cfg, with_projection: bool) -> Result<ClipTextShape, FolderError> {
    Ok(ClipTextShape {
        hidden: c.u64("hidden_size")?,
        layers: c.u64("num_hidden_layers")?,
        heads: c.u64("num_attention_heads")?,
        intermediate: c.u64("intermediate_size")?,
        vocab: c.u64("vocab_size")?,
        max_positions: c.u64("max_position_embeddings")?,
        projection: if with_projection {
            c.u64("projection_dim")?
        } else {
            0
        },
    })
}

fn t5(c: &Cfg) -> Result<T5Shape, FolderError> {
    Ok(T5Shape {
        d_model: c.u64("d_model")?,
        d_ff: c.u64("d_ff")?,
        layers: c.u64("num_layers")?,
        heads: c.u64("num_heads")?,
        d_kv: c.u64("d_kv")?,
        vocab: c.u64("vocab_size")?,
        buckets: c.opt_u64("relative_attention_num_buckets")?.unwrap_or(32),
    })
}

/// `AutoencoderKL` (`autoencoder_kl.py`): `use_quant_conv` defaults to true.
fn vae(c: &Cfg) -> Result<VaeShape, FolderError> {
    Ok(VaeShape {
        channels: c.list("block_out_channels", 0)?,
        layers_per_block: c.u64("layers_per_block")?,
        latent_channels: c.u64("latent_channels")?,
        quant_convs: c.flag("use_quant_conv", true),
    })
}

/// The pipeline class's call defaults: (classifier-free guidance, steps, T5 tokens).
fn class_defaults(class: &str) -> Option<(bool, u32, u64)> {
    match class {
        "StableDiffusionPipeline" | "StableDiffusionXLPipeline" => Some((true, 50, 0)),
        "StableDiffusion3Pipeline" => Some((true, 28, 256)),
        "FluxPipeline" => Some((false, 28, 512)),
        _ => None,
    }
}

/// The pipeline of a folder named `name`: the index's class, and each entry with its parsed
/// `config.json` (in the index's order).
pub fn pipeline(
    name: &str,
    class: &str,
    components: &[(IndexEntry, Value)],
) -> Result<Pipeline, FolderError> {
    let (cfg, steps, t5_tokens) = class_defaults(class).ok_or_else(|| FolderError {
        file: "model_index.json".into(),
        key: "_class_name".into(),
        why: format!(
            "{class} is not a pipeline headroom sizes (StableDiffusionPipeline, StableDiffusionXLPipeline, StableDiffusion3Pipeline, FluxPipeline)"
        ),
    })?;
    let cfg_of = |e: &IndexEntry, v| Cfg {
        file: format!("{}/config.json", e.folder),
        v,
    };
    let mut denoiser = None;
    let mut sample_size = None;
    let mut text = Vec::new();
    let mut vae_shape = None;
    let mut vae_meta = (false, 0);
    for (e, v) in components {
        let c = cfg_of(e, v);
        match e.class.as_str() {
            "UNet2DConditionModel" => denoiser = Some(Denoiser::UNet(unet(&c)?)),
            "FluxTransformer2DModel" => denoiser = Some(Denoiser::Flux(flux(&c)?)),
            "SD3Transformer2DModel" => denoiser = Some(Denoiser::Sd3(sd3(&c)?)),
            "CLIPTextModel" | "CLIPTextModelWithProjection" => {
                let shape = clip(&c, e.class == "CLIPTextModelWithProjection")?;
                text.push(TextEncoder::clip(
                    format!("{} ({})", e.folder, e.class),
                    shape,
                ));
            }
            "T5EncoderModel" => text.push(TextEncoder::t5(
                format!("{} ({})", e.folder, e.class),
                t5(&c)?,
                t5_tokens,
            )),
            "AutoencoderKL" => {
                vae_shape = Some(vae(&c)?);
                vae_meta = (
                    c.flag("force_upcast", true),
                    c.opt_u64("sample_size")?.unwrap_or(512),
                );
            }
            _ => {}
        }
        if DENOISERS.contains(&e.class.as_str()) {
            sample_size = c.opt_u64("sample_size")?;
        }
    }
    let missing = |what: &str| FolderError {
        file: "model_index.json".into(),
        key: String::new(),
        why: format!("names no {what}"),
    };
    let denoiser = denoiser.ok_or_else(|| missing("UNet or transformer"))?;
    let vae = vae_shape.ok_or_else(|| missing("AutoencoderKL VAE"))?;
    if text.is_empty() {
        return Err(missing("text encoder"));
    }
    let scale = 1u64 << vae.channels.len().saturating_sub(1);
    let size = (sample_size.unwrap_or(128) * scale).clamp(64, 8192) as u32;
    Ok(Pipeline {
        id: name.to_string().into(),
        name: format!("{name} ({class})").into(),
        denoiser,
        published_denoiser_params: 0,
        text_encoders: text,
        vae,
        cfg,
        default_steps: steps,
        default_size: size,
        vae_force_upcast: class == "StableDiffusionXLPipeline" && vae_meta.0,
        vae_sample_size: vae_meta.1.clamp(64, 8192) as u32,
        source: format!("{name}/model_index.json").into(),
        denoiser_file_params: None,
        vae_file_params: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::diffusion::presets::find;
    use serde_json::json;

    fn entry(folder: &str, class: &str) -> IndexEntry {
        IndexEntry {
            folder: folder.into(),
            class: class.into(),
        }
    }

    /// SD3.5 Medium's transformer keys (stabilityai/stable-diffusion-3.5-medium
    /// transformer/config.json: MMDiT-X with `dual_attention_layers` 0 … 12 and `qk_norm`
    /// "rms_norm") with the SD3 text encoders and VAE give the preset's pipeline exactly.
    #[test]
    fn an_sd3_folder_walks_as_the_preset() {
        let clip = |hidden: u64, layers: u64, heads: u64, ff: u64, proj: u64| {
            json!({"hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
                   "intermediate_size": ff, "vocab_size": 49408, "max_position_embeddings": 77,
                   "projection_dim": proj})
        };
        let comps = vec![
            (
                entry("transformer", "SD3Transformer2DModel"),
                json!({"attention_head_dim": 64, "num_attention_heads": 24, "num_layers": 24,
                       "in_channels": 16, "patch_size": 2, "joint_attention_dim": 4096,
                       "pooled_projection_dim": 2048, "qk_norm": "rms_norm",
                       "dual_attention_layers": [0,1,2,3,4,5,6,7,8,9,10,11,12],
                       "pos_embed_max_size": 384, "sample_size": 128}),
            ),
            (
                entry("text_encoder", "CLIPTextModelWithProjection"),
                clip(768, 12, 12, 3072, 768),
            ),
            (
                entry("text_encoder_2", "CLIPTextModelWithProjection"),
                clip(1280, 32, 20, 5120, 1280),
            ),
            (
                entry("text_encoder_3", "T5EncoderModel"),
                json!({"d_model": 4096, "d_ff": 10240, "num_layers": 24, "num_heads": 64,
                       "d_kv": 64, "vocab_size": 32128, "relative_attention_num_buckets": 32}),
            ),
            (
                entry("vae", "AutoencoderKL"),
                json!({"block_out_channels": [128, 256, 512, 512], "layers_per_block": 2,
                       "latent_channels": 16, "use_quant_conv": false, "force_upcast": true,
                       "sample_size": 1024}),
            ),
        ];
        let p = pipeline("sd35m", "StableDiffusion3Pipeline", &comps).unwrap();
        let preset = find("sd3.5-medium").unwrap();
        assert_eq!(p.denoiser, preset.denoiser);
        assert_eq!(p.vae, preset.vae);
        let walk = |p: &Pipeline| p.denoiser_walk(1024, 1024).params;
        assert_eq!(walk(&p), walk(&preset));
        assert_eq!(p.text_tokens(), preset.text_tokens());
        assert_eq!((p.cfg, p.default_steps, p.default_size), (true, 28, 1024));
        // SD3's pipeline does not upcast its VAE (only StableDiffusionXLPipeline does).
        assert!(!p.vae_force_upcast);
        // A missing field is named with its file.
        let mut bad = comps.clone();
        bad[0].1.as_object_mut().unwrap().remove("num_layers");
        let e = pipeline("x", "StableDiffusion3Pipeline", &bad).unwrap_err();
        assert_eq!(
            e.to_string(),
            "transformer/config.json: num_layers: missing"
        );
        let e = pipeline("x", "KandinskyPipeline", &comps).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("model_index.json: _class_name: KandinskyPipeline")
        );
        let e = pipeline("x", "FluxPipeline", &comps[1..]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "model_index.json: names no UNet or transformer"
        );
    }
}
