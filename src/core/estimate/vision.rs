//! A vision-language model's encoder and projector (`core::vision`): the mmproj weights and the
//! compute buffer of one image, on the GPU or (llama.cpp `--no-mmproj-offload`) on the CPU.
//! llama.cpp loads the encoder on one device; with several GPUs it is counted on each, the
//! bound of the one that holds it.

use super::component::{ComponentKind, ComponentList, Provenance};
use super::{Job, formula, gib};
use crate::core::format::{group_digits, image_dims};
use crate::core::units::Bytes;

/// Places the encoder; returns its weights on each GPU (its compute buffer is an Activations
/// component, which the fit's fixed costs already hold).
pub(super) fn place(job: &Job, list: &mut ComponentList) -> Bytes {
    let Some(v) = job.s.vision.as_ref() else {
        return Bytes::ZERO;
    };
    let e = &v.encoder;
    let weights = Bytes(e.weight_bytes);
    let fa = job.s.flash_attention;
    let buffer = Bytes(e.compute_buffer_bytes(fa));
    let w_text = formula!(
        job.explain,
        "{} params of the {} vision encoder and projector as stored in {} = {}",
        group_digits(e.params),
        if e.projector.is_empty() {
            "mmproj"
        } else {
            e.projector.as_str()
        },
        if e.file.is_empty() {
            "the mmproj file"
        } else {
            e.file.as_str()
        },
        gib(weights)
    );
    let p = e.patches();
    let b_text = formula!(
        job.explain,
        "one {} = {} patches of {} px: max({}, FFN {p} × {} × 4 B, q/k/v {p} × {} × 12 B) + residual {p} × {} × 16 B = {}",
        if e.tiles() {
            // llama.cpp encodes a tiled image's crops one graph at a time.
            format!(
                "{} tile (of {} per {} image)",
                image_dims(e.tile, e.tile),
                e.crops(),
                image_dims(e.image_size, e.height())
            )
        } else {
            format!("{} image", image_dims(e.image_size, e.height()))
        },
        group_digits(p),
        e.patch_size,
        if fa {
            "FlashAttention: no score matrix".to_string()
        } else {
            format!("scores {} heads × {p}² × 4 B", e.heads)
        },
        e.ffn,
        e.hidden,
        e.hidden,
        gib(buffer)
    );
    let on_cpu = v.on_cpu || job.cpu_only;
    for (kind, name, bytes, text) in [
        (
            ComponentKind::Weights,
            if e.in_checkpoint {
                "Vision encoder + projector (config.json)"
            } else {
                "Vision encoder + projector (mmproj)"
            },
            weights,
            w_text,
        ),
        (
            ComponentKind::Activations,
            "Vision compute buffer (one image)",
            buffer,
            b_text,
        ),
    ] {
        if on_cpu {
            list.host(kind, name, bytes, Provenance::Derived, text);
        } else {
            list.gpu(kind, name, bytes, Provenance::Derived, text);
        }
    }
    if on_cpu { Bytes::ZERO } else { weights }
}
