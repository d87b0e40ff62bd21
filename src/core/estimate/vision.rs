//! A vision-language model's encoder and projector (`core::vision`): the mmproj weights and the
//! compute buffer of one image, on the GPU or (llama.cpp `--no-mmproj-offload`) on the CPU.
//! llama.cpp loads the encoder on one device; with several GPUs it is counted on each, the
//! bound of the one that holds it.

use super::component::{ComponentKind, ComponentList, Provenance};
use super::{Job, formula, gib};
use crate::core::format::{group_digits, image_dims};
use crate::core::units::Bytes;

/// Places the encoder; returns its weights, and the cross-attention K/V of its images, on each
/// GPU (its compute buffer is an Activations component, which the fit's fixed costs already
/// hold).
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
        } else if e.joint_tiles > 0 {
            // Llama 3.2 Vision: its tiles in one pass, a class token each.
            format!(
                "image of {} {} tiles (one pass, a class token each)",
                e.joint_tiles,
                image_dims(e.image_size, e.image_size)
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
    let cross = cross_kv(job, list);
    if on_cpu {
        cross
    } else {
        weights.saturating_add(cross)
    }
}

/// Llama 3.2 Vision: each of the text model's `cross_attention_layers` holds K and V of every
/// image token (transformers `MllamaTextCrossAttention`: `k_proj`/`v_proj` of
/// `cross_attention_states`, cached once per image), `2 × kv_heads × head_dim` elements per
/// token and layer at the KV cache's precision, for each sequence. It stays with the text
/// model's layers on the GPU.
fn cross_kv(job: &Job, list: &mut ComponentList) -> Bytes {
    let Some(v) = job.s.vision.as_ref() else {
        return Bytes::ZERO;
    };
    let (spec, s) = (job.spec, job.s);
    let tokens = v
        .encoder
        .cross_tokens_per_image()
        .saturating_mul(v.images());
    if spec.cross_attention_layers == 0 || tokens == 0 || job.training {
        return Bytes::ZERO;
    }
    let (k, v_el) = spec.kv_elements_per_token_layer();
    let per_token_layer = s.kv.k.bytes_for(k).saturating_add(s.kv.v.bytes_for(v_el));
    let bytes = Bytes(
        per_token_layer
            .saturating_mul(spec.cross_attention_layers)
            .saturating_mul(tokens)
            .saturating_mul(s.batch.max(1)),
    );
    let text = formula!(
        job.explain,
        "{} cross-attention layers × {} image tokens ({} per image × {}) × {} B of K and V × {} sequences = {}",
        spec.cross_attention_layers,
        group_digits(tokens),
        group_digits(v.encoder.cross_tokens_per_image()),
        v.images(),
        group_digits(per_token_layer),
        s.batch.max(1),
        gib(bytes)
    );
    list.gpu(
        ComponentKind::KvCache,
        "Cross-attention K/V (image tokens)",
        bytes,
        Provenance::Derived,
        text,
    );
    bytes
}
