//! The drafter of speculative decoding (`core::speculative`): its weights and KV cache, sized by
//! the same estimate as any model (its shape from [`draft_spec`]) at the scenario's context,
//! sequences and KV types, plus the parameters its shape does not carry.

use super::component::{ComponentKind, ComponentList, Provenance};
use super::{DraftLoad, Job, estimate_with, formula, gib};
use crate::core::format::group_digits;
use crate::core::scenario::{Mode, Scenario};
use crate::core::speculative::{SpecError, draft_spec};
use crate::core::units::Bytes;

/// The drafter's bytes on each GPU and what it reads per drafted token.
#[derive(Copy, Clone, Debug)]
pub(super) struct DraftPlaced {
    pub(super) per_device: Bytes,
    pub(super) load: DraftLoad,
}

/// The drafter of `s` (whose model shape is `target`) as a scenario of its own — its shape, its
/// weights, the same context, sequences and KV types, no speculation — and the parameters its
/// shape does not carry. `None`: speculation is off; `Err`: it cannot be set up.
pub fn draft_scenario(
    s: &Scenario,
    target: &crate::core::model::ModelSpec,
) -> Option<Result<(Scenario, u64), SpecError>> {
    let sp = s.speculative.as_ref()?;
    Some(draft_spec(target, sp).map(|shape| {
        let ds = Scenario {
            model: shape.spec,
            model_id: sp.draft_id.clone(),
            weights: sp.weights(s.weights),
            mode: Mode::Inference,
            speculative: None,
            ..s.clone()
        };
        (ds, shape.extra_params)
    }))
}

/// Bytes of the drafter's shape that the model already holds, all devices together: the token
/// embedding and output head of MTP layers. The runtimes bind the target's own to the MTP
/// drafter whatever the checkpoint stores: vLLM `vllm/v1/spec_decode/eagle.py`
/// `EagleProposer.load_model` replaces an MTP model's `embed_tokens`, `lm_head` and every MTP
/// layer's `shared_head.head` with the target's ("Detected MTP model. Sharing target model
/// embedding weights with the draft model"), SGLang's `EAGLEWorker` hands the NextN model the
/// target's (`get_embed_and_head` / `set_embed_and_head`), and DeepSeek counts its MTP module as
/// "11.5B unique parameters, excluding the shared 0.9B Embedding and 0.9B output Head"
/// (deepseek-ai/DeepSeek-V3 README_WEIGHTS.md) although its checkpoint stores copies
/// ([`crate::core::model::ModelSpec::mtp_shares_embeddings`] false). They are not stored
/// twice, and are still read per drafted token.
pub fn shared_with_model(
    method: crate::core::speculative::SpecMethod,
    draft: &super::Estimate,
) -> Bytes {
    if method == crate::core::speculative::SpecMethod::Mtp {
        draft.workload.outer_weights
    } else {
        Bytes::ZERO
    }
}

pub(super) fn place(
    job: &Job,
    list: &mut ComponentList,
    notes: &mut Vec<String>,
) -> Option<DraftPlaced> {
    let sp = job.s.speculative.as_ref()?;
    let (ds, extra_params) = match draft_scenario(job.s, job.spec)? {
        Ok(d) => d,
        Err(e) => {
            notes.push(format!("Speculative decoding left out: {e}."));
            return None;
        }
    };
    let w = ds.weights;
    let est = estimate_with(&ds, false);
    let per_dev = |k: ComponentKind| {
        if job.cpu_only {
            est.kind_total(k)
        } else {
            est.per_gpu_kind(k)
        }
    };
    let extra = Bytes::from_f64(extra_params as f64 * w.bits_per_weight() / 8.0);
    let shared = shared_with_model(sp.method, &est).div_ceil(job.devices.max(1));
    let weights = per_dev(ComponentKind::Weights)
        .saturating_add(Bytes(extra.0.div_ceil(job.devices.max(1))))
        .saturating_sub(shared);
    let kv = per_dev(ComponentKind::KvCache);
    let method = sp.method.label();
    let params = est.params.total.saturating_add(extra_params);
    list.gpu(
        ComponentKind::Weights,
        &format!("Draft weights ({method})"),
        weights,
        Provenance::Derived,
        formula!(
            job.explain,
            "{} params of the {method} ({}{}) at {}{} = {}",
            group_digits(params),
            ds.model.name,
            if extra_params > 0 {
                format!(
                    ", {} of them beyond its layer shape",
                    group_digits(extra_params)
                )
            } else {
                String::new()
            },
            w.label(),
            if shared.0 > 0 {
                format!(
                    ", less its embedding and output head ({}), which are the model's own",
                    gib(shared)
                )
            } else {
                String::new()
            },
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
