//! The drafter of speculative decoding (`core::speculative`): its weights and KV cache, sized by
//! the same estimate as any model (its shape from [`draft_spec`]) at the scenario's context,
//! sequences and KV types, plus the parameters its shape does not carry.

use super::component::{ComponentKind, ComponentList, Provenance};
use super::{DraftLoad, Job, estimate_with, formula, gib};
use crate::core::format::group_digits;
use crate::core::scenario::{Mode, Scenario};
use crate::core::speculative::draft_spec;
use crate::core::units::Bytes;

/// The drafter's bytes on each GPU and what it reads per drafted token.
#[derive(Copy, Clone, Debug)]
pub(super) struct DraftPlaced {
    pub(super) per_device: Bytes,
    pub(super) load: DraftLoad,
}

pub(super) fn place(
    job: &Job,
    list: &mut ComponentList,
    notes: &mut Vec<String>,
) -> Option<DraftPlaced> {
    let sp = job.s.speculative.as_ref()?;
    let shape = match draft_spec(job.spec, sp) {
        Ok(d) => d,
        Err(e) => {
            notes.push(format!("Speculative decoding left out: {e}."));
            return None;
        }
    };
    let w = sp.weights(job.s.weights);
    let ds = Scenario {
        model: shape.spec,
        model_id: sp.draft_id.clone(),
        weights: w,
        mode: Mode::Inference,
        speculative: None,
        ..job.s.clone()
    };
    let est = estimate_with(&ds, false);
    let per_dev = |k: ComponentKind| {
        if job.cpu_only {
            est.kind_total(k)
        } else {
            est.per_gpu_kind(k)
        }
    };
    let extra = Bytes::from_f64(shape.extra_params as f64 * w.bits_per_weight() / 8.0);
    let weights =
        per_dev(ComponentKind::Weights).saturating_add(Bytes(extra.0.div_ceil(job.devices.max(1))));
    let kv = per_dev(ComponentKind::KvCache);
    let method = sp.method.label();
    let params = est.params.total.saturating_add(shape.extra_params);
    list.gpu(
        ComponentKind::Weights,
        &format!("Draft weights ({method})"),
        weights,
        Provenance::Derived,
        formula!(
            job.explain,
            "{} params of the {method} ({}{}) at {} = {}",
            group_digits(params),
            ds.model.name,
            if shape.extra_params > 0 {
                format!(
                    ", {} of them beyond its layer shape",
                    group_digits(shape.extra_params)
                )
            } else {
                String::new()
            },
            w.label(),
            gib(weights)
        ),
    );
    list.gpu(
        ComponentKind::KvCache,
        &format!("Draft KV cache ({method})"),
        kv,
        Provenance::Derived,
        formula!(
            job.explain,
            "{} layer{} of the {method} cache the same {} tokens × {} sequences = {}",
            ds.model.layers,
            if ds.model.layers == 1 { "" } else { "s" },
            group_digits(job.s.context),
            job.s.batch,
            gib(kv)
        ),
    );
    let wl = &est.workload;
    Some(DraftPlaced {
        per_device: weights.saturating_add(kv),
        load: DraftLoad {
            bytes_per_token: wl
                .active_weight_bytes_per_token
                .saturating_add(wl.kv_read_per_token)
                .saturating_add(extra),
            layers: ds.model.layers,
        },
    })
}
