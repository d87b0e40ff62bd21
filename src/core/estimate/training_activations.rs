//! Training activations: what the forward pass keeps for backward (Korthikanti et al. 2022,
//! "Reducing Activation Recomputation in Large Transformer Models", Table 2:
//! `s·b·h·(34 + 5·a·s/h)` bytes per layer at 16-bit), and the logits and loss.

use super::component::{ComponentKind, ComponentList, Provenance};
use super::framework::BNB_SAVED_INPUT_BYTES;
use super::{Job, ffn_shape, formula, gib};
use crate::core::format;
use crate::core::format::group_digits;
use crate::core::scenario::{Checkpointing, LoraTargets, Mode};
use crate::core::units::Bytes;

/// Place the activations and the loss of one training step.
pub(super) fn place(job: &Job, list: &mut ComponentList) {
    let (s, spec, explain) = (job.s, job.spec, job.explain);
    let h = spec.hidden;
    let (ffn_w, mats) = ffn_shape(spec);
    // Korthikanti et al. 2022, Table 2, per layer at 16-bit: attention 11·sbh + 5·a·s²·b,
    // MLP 19·sbh (4h GELU), norms 4·sbh. The MLP term is generalised to width I and gated
    // MLPs: (3 + 2·k·I/h)·sbh with k = 2 tensors of width I (plain) or 4 (gated).
    let seq = s.context;
    let batch = s.batch;
    let sbh = seq.saturating_mul(batch).saturating_mul(h) as f64;
    let k_w = if mats == 2 { 4.0 } else { 2.0 };
    let mlp_coef = 3.0 + 2.0 * k_w * ffn_w as f64 / h.max(1) as f64;
    let sbh_coef = 11.0 + mlp_coef + 4.0;
    let attn_quadratic = 5.0 * spec.heads as f64 * (seq as f64) * (seq as f64) * batch as f64;
    let drop_scores = s.flash_attention || s.checkpointing != Checkpointing::None;
    let per_layer = sbh * sbh_coef + if drop_scores { 0.0 } else { attn_quadratic };
    let l = spec.layers as f64;
    let (act, txt) = match s.checkpointing {
        Checkpointing::Full if job.framework.checkpoints_in_host_ram && !job.cpu_only => {
            let saved = Bytes::from_f64(2.0 * sbh * l);
            list.host(
                ComponentKind::Activations,
                "Activation checkpoints (offloaded to CPU RAM by Unsloth)",
                saved,
                Provenance::Derived,
                formula!(
                    explain,
                    "2·s·b·h × {l} layers, s={seq}, b={batch}, h={h} = {} (Unsloth's offloaded gradient checkpointing)",
                    gib(saved)
                ),
            );
            (
                per_layer,
                formula!(
                    explain,
                    "full recompute with checkpoints in CPU RAM: one layer's working set {}",
                    gib(Bytes::from_f64(per_layer))
                ),
            )
        }
        Checkpointing::Full => {
            let v = 2.0 * sbh * l + per_layer;
            (
                v,
                formula!(
                    explain,
                    "full recompute: 2·s·b·h × {l} layers + one layer's working set {} = {}",
                    gib(Bytes::from_f64(per_layer)),
                    gib(Bytes::from_f64(v))
                ),
            )
        }
        _ => {
            let v = per_layer * l;
            let q = if drop_scores {
                String::new()
            } else {
                formula!(explain, " + 5·a·s²·b ({} heads)", spec.heads)
            };
            let why = if s.checkpointing == Checkpointing::Selective {
                " (selective recompute drops the 5as/h term)"
            } else if s.flash_attention {
                " (FlashAttention drops the 5as/h term)"
            } else {
                ""
            };
            (
                v,
                formula!(
                    explain,
                    "s·b·h·{}{q} per layer{why}, s={seq}, b={batch}, h={h} × {l} layers = {}",
                    format::coefficient(sbh_coef),
                    gib(Bytes::from_f64(v))
                ),
            )
        }
    };
    list.gpu(
        ComponentKind::Activations,
        "Activations (Korthikanti et al.)",
        Bytes::from_f64(act),
        if spec.is_estimated() {
            Provenance::Heuristic
        } else {
            Provenance::Derived
        },
        txt,
    );
    if s.mode == Mode::Qlora
        && job.framework.bnb_saves_layer_inputs
        && s.checkpointing != Checkpointing::Full
    {
        bnb_saved_inputs(job, seq.saturating_mul(batch), list);
    }
    // Loss: bytes per logit element as the framework's loss path holds them.
    let per_logit = job.framework.loss_bytes_per_logit;
    let loss =
        Bytes::from_f64(seq.saturating_mul(batch).saturating_mul(spec.vocab) as f64 * per_logit);
    list.gpu(
        ComponentKind::Activations,
        "Logits and loss",
        loss,
        Provenance::Derived,
        formula!(
            explain,
            "{seq} × {batch} × {} vocab × {per_logit} B ({}) = {}",
            group_digits(spec.vocab),
            job.framework.loss_text,
            gib(loss)
        ),
    );
}

/// QLoRA through bitsandbytes without full recompute: each adapted layer's input is kept once
/// more in 16-bit by the 4-bit matmul (see [`BNB_SAVED_INPUT_BYTES`]). The distinct inputs per
/// layer: the attention input (q, k, v), the attention output (o), the MLP input (gate, up) and
/// the MLP's inner activation (down).
fn bnb_saved_inputs(job: &Job, tokens: u64, list: &mut ComponentList) {
    let spec = job.spec;
    let (ffn_w, _) = ffn_shape(spec);
    let h = spec.hidden;
    let qd = spec.heads.saturating_mul(spec.head_dim);
    let width = match job.s.lora_targets {
        LoraTargets::QV => h,
        LoraTargets::Attention => h.saturating_add(qd),
        LoraTargets::AllLinear => h.saturating_add(qd).saturating_add(h).saturating_add(ffn_w),
    };
    let bytes = Bytes::from_f64(
        tokens.saturating_mul(width).saturating_mul(spec.layers) as f64 * BNB_SAVED_INPUT_BYTES,
    );
    list.gpu(
        ComponentKind::Activations,
        "4-bit layers' saved inputs (bitsandbytes)",
        bytes,
        Provenance::Derived,
        formula!(
            job.explain,
            "{tokens} tokens × {width} input widths of the adapted layers × {} layers × {BNB_SAVED_INPUT_BYTES} B = {}",
            spec.layers,
            gib(bytes)
        ),
    );
}
