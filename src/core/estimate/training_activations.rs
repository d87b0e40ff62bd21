//! Training activations: what the forward pass keeps for backward (Korthikanti et al. 2022,
//! "Reducing Activation Recomputation in Large Transformer Models", Table 2:
//! `s·b·h·(34 + 5·a·s/h)` bytes per layer at 16-bit), and the logits and loss.

use super::component::{ComponentKind, ComponentList, Provenance};
use super::{Job, ffn_shape, formula, gib, group_digits};
use crate::core::scenario::Checkpointing;
use crate::core::units::Bytes;

/// Place the activations and the loss of one training step.
pub(super) fn place(job: &Job, list: &mut ComponentList) {
    let (s, spec, explain) = (job.s, job.spec, job.explain);
    let h = spec.hidden;
    let (ffn_w, mats) = ffn_shape(spec);
    // Korthikanti et al. 2022, Table 2, per layer at 16-bit: attention 11·sbh + 5·a·s²·b,
    // MLP 19·sbh (4h GELU), norms 4·sbh. The MLP term is generalised to width I and gated
    // MLPs: (3 + 2·k·I/h)·sbh with k = 2 tensors of width I (plain) or 4 (gated).
    let sq = s.context;
    let bt = s.batch;
    let sbh = sq.saturating_mul(bt).saturating_mul(h) as f64;
    let k_w = if mats == 2 { 4.0 } else { 2.0 };
    let mlp_coef = 3.0 + 2.0 * k_w * ffn_w as f64 / h.max(1) as f64;
    let lin = 11.0 + mlp_coef + 4.0;
    let attn_quadratic = 5.0 * spec.heads as f64 * (sq as f64) * (sq as f64) * bt as f64;
    let drop_scores = s.flash_attention || s.checkpointing != Checkpointing::None;
    let per_layer = sbh * lin + if drop_scores { 0.0 } else { attn_quadratic };
    let l = spec.layers as f64;
    let (act, txt) = match s.checkpointing {
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
                    "s·b·h·{lin:.1}{q} per layer{why}, s={sq}, b={bt}, h={h} × {l} layers = {}",
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
    // Loss: logits in 16-bit, an FP32 upcast and its log-softmax/gradient: 10 B per element.
    let loss = Bytes(
        sq.saturating_mul(bt)
            .saturating_mul(spec.vocab)
            .saturating_mul(10),
    );
    list.gpu(
        ComponentKind::Activations,
        "Logits and loss",
        loss,
        Provenance::Derived,
        formula!(
            explain,
            "{sq} × {bt} × {} vocab × (2 B logits + 4 B FP32 copy + 4 B log-softmax) = {}",
            group_digits(spec.vocab),
            gib(loss)
        ),
    );
}
