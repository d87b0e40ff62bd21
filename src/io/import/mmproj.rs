//! A llama.cpp multimodal projector (`mmproj` GGUF, `general.architecture` "clip"), read into a
//! [`VisionEncoder`]: its tensors' exact bytes and elements and the vision keys of
//! `tools/mtmd/clip-impl.h` (`clip.vision.image_size`, `patch_size`, `embedding_length`,
//! `feed_forward_length`, `block_count`, `attention.head_count`, `spatial_merge_size`,
//! `projector.scale_factor`, and `clip.projector_type` or `clip.vision.projector_type`).

use super::error::{ErrorKind, ImportError, Location};
use crate::core::format::one_line;
use crate::core::vision::VisionEncoder;
use std::path::Path;

/// Whether `path` is a GGUF vision projector (`general.architecture` "clip"): the window
/// takes such a file, imported or dropped, as the model's mmproj.
pub fn is_mmproj(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gguf"))
        && super::gguf::read_file(path)
            .ok()
            .is_some_and(|h| h.get_str("general.architecture") == Some("clip"))
}

/// Reads the mmproj file at `path`. Not a GGUF, not a vision projector, or without the image
/// geometry: one error naming the file.
pub fn read_mmproj(path: &Path) -> Result<VisionEncoder, ImportError> {
    let h = super::gguf::read_file(path)?;
    let bad =
        |msg: String| ImportError::new(Location::File, ErrorKind::NotAModel(msg)).in_file(path);
    let arch = h.get_str("general.architecture").unwrap_or("");
    if arch != "clip" {
        return Err(bad(format!(
            "not a vision projector (mmproj): general.architecture is \"{}\", expected \"clip\"",
            one_line(arch)
        )));
    }
    if h.get("clip.has_vision_encoder")
        .and_then(|v| v.as_bool())
        .is_some_and(|b| !b)
    {
        return Err(bad(
            "this mmproj has no vision encoder (clip.has_vision_encoder is false)".into(),
        ));
    }
    let need = |k: &str| {
        h.get_u64(k)
            .filter(|v| *v > 0)
            .ok_or_else(|| bad(format!("the vision key {k} is missing or 0")))
    };
    let image_size = need("clip.vision.image_size")?;
    let patch_size = need("clip.vision.patch_size")?;
    if patch_size > image_size {
        return Err(bad(format!(
            "clip.vision.patch_size {patch_size} is larger than clip.vision.image_size {image_size}"
        )));
    }
    let params = h
        .tensors
        .iter()
        .fold(0u64, |a, t| a.saturating_add(t.elements));
    Ok(VisionEncoder {
        file: one_line(&path.display().to_string()).into_owned(),
        projector: one_line(
            h.get_str("clip.projector_type")
                .or(h.get_str("clip.vision.projector_type"))
                .unwrap_or(""),
        )
        .into_owned(),
        weight_bytes: h.tensor_bytes(),
        params,
        layers: need("clip.vision.block_count")?,
        hidden: need("clip.vision.embedding_length")?,
        heads: need("clip.vision.attention.head_count")?,
        ffn: h.get_u64("clip.vision.feed_forward_length").unwrap_or(0),
        image_size,
        patch_size,
        merge: h
            .get_u64("clip.vision.spatial_merge_size")
            .or(h.get_u64("clip.vision.projector.scale_factor"))
            .filter(|m| *m > 0)
            .unwrap_or(1),
        // Sized at the file's image_size (the module docs of core::vision).
        image_height: 0,
        dynamic: false,
        in_checkpoint: false,
        grid_pinpoints: Vec::new(),
        tile: 0,
        joint_tiles: 0,
        cross_attention: false,
    })
}
