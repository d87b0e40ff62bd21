//! Training states: gradients, optimiser states and FP32 master weights, sharded by ZeRO
//! (Rajbhandari et al. 2019, "ZeRO", §3 and Fig. 1: `(2 + 2 + K)·Ψ` with K = 12 for
//! mixed-precision Adam; stage 1 shards K, stage 2 also the gradients, stage 3 also the weights),
//! and the LoRA adapters.

use super::component::{ComponentKind, ComponentList, Provenance};
use super::weights::PlacedWeights;
use super::{Job, formula, gib};
use crate::core::format::group_digits;
use crate::core::model::{MlpKind, ModelSpec, ParamCount};
use crate::core::precision::WeightPrecision;
use crate::core::scenario::{LoraTargets, Mode, Offload, Optimizer};
use crate::core::units::Bytes;

/// Place the gradients, optimiser states, master weights and adapters.
pub(super) fn place(
    job: &Job,
    params: &ParamCount,
    weights: &PlacedWeights,
    list: &mut ComponentList,
    notes: &mut Vec<String>,
) {
    let (s, stage) = (job.s, job.zero_stage);
    let fp32_train = s.mode == Mode::Full && weights.precision == WeightPrecision::Fp32;
    let offload_opt = s.offload != Offload::None && !job.cpu_only;
    if s.mode == Mode::Qlora && job.framework.upcasts_unquantised_weights {
        kbit_fp32_upcast(job, list);
    }
    // DeepSpeed's estimators count an FP32 gradient partition besides the 16-bit gradients.
    let deepspeed_grads = job.framework.deepspeed_convention
        && s.mode == Mode::Full
        && !fp32_train
        && stage >= 2
        && !offload_opt;
    if deepspeed_grads {
        notes.push(deepspeed_comparison(job, params.total, weights));
    }
    let t = trainable(job, params, fp32_train, deepspeed_grads);
    if s.mode != Mode::Full {
        lora_adapters(job, &t, list);
    }
    gradients(job, &t, deepspeed_grads, list);
    if offload_opt {
        offloaded_optimizer_states(job, &t, list);
    } else {
        optimizer_states(job, &t, list);
    }
}

/// The trainable parameters, the bytes each holds as adapter weight, gradient, FP32 master copy
/// and optimiser state, and the words of the last.
struct Trainable {
    params: u64,
    adapter_bytes: f64,
    grad_bytes: f64,
    master_bytes: f64,
    optimizer_bytes: f64,
    optimizer_text: &'static str,
}

impl Trainable {
    /// `bytes` for every trainable parameter, over all the GPUs.
    fn total(&self, bytes: f64) -> f64 {
        self.params as f64 * bytes
    }
}

/// What is trained, and at how many bytes a parameter, in the scenario's mode.
fn trainable(job: &Job, params: &ParamCount, fp32_train: bool, deepspeed_grads: bool) -> Trainable {
    let (s, spec) = (job.s, job.spec);
    let (params, adapter_bytes, grad_bytes, master_bytes) = match s.mode {
        Mode::Full if fp32_train => (params.total, 4.0, 4.0, 0.0),
        Mode::Full if deepspeed_grads => (
            params.total,
            2.0,
            2.0 + DEEPSPEED_FP32_GRAD_BYTES,
            if s.pure_bf16 { 0.0 } else { 4.0 },
        ),
        Mode::Full => (params.total, 2.0, 2.0, if s.pure_bf16 { 0.0 } else { 4.0 }),
        // PEFT keeps LoRA adapters in FP32 (autocast_adapter_dtype); no separate master copy.
        Mode::Lora => (
            lora_params(spec, s.lora_rank, s.lora_targets),
            4.0,
            4.0,
            0.0,
        ),
        // QLoRA: BF16 adapters (Dettmers et al. 2023).
        _ => (
            lora_params(spec, s.lora_rank, s.lora_targets),
            2.0,
            2.0,
            0.0,
        ),
    };
    let (optimizer_bytes, optimizer_text) =
        optimizer_bytes_per_param(s.optimizer, s.pure_bf16, spec);
    Trainable {
        params,
        adapter_bytes,
        grad_bytes,
        master_bytes,
        optimizer_bytes,
        optimizer_text,
    }
}

/// `x` bytes on one GPU: divided over the GPUs when ZeRO shards it (`on`).
fn shard(job: &Job, on: bool, x: f64) -> f64 {
    if on { x / job.devices as f64 } else { x }
}

/// The formula's words for a state ZeRO shards (`on`) over more than one GPU.
fn zero_text(job: &Job, on: bool) -> String {
    let (n, stage) = (job.devices, job.zero_stage);
    if on && n > 1 {
        formula!(job.explain, " ÷ {n} GPUs (ZeRO-{stage})")
    } else {
        String::new()
    }
}

/// The LoRA adapters (sharded by ZeRO-3 like any weight).
fn lora_adapters(job: &Job, t: &Trainable, list: &mut ComponentList) {
    let (s, spec, n) = (job.s, job.spec, job.devices);
    let adapter_bytes = t.adapter_bytes;
    let adapters = Bytes::from_f64(t.total(adapter_bytes));
    let adapters_per_gpu = if job.zero_stage >= 3 {
        adapters.div_ceil(n)
    } else {
        adapters
    };
    list.gpu(
        ComponentKind::Weights,
        "LoRA adapters",
        adapters_per_gpu,
        Provenance::Derived,
        formula!(job.explain,
            "rank {} × (d_in + d_out) over {} matrices × {} layers = {} trainable params × {adapter_bytes} B = {}",
            s.lora_rank,
            s.lora_targets.cli_name(),
            spec.layers,
            group_digits(t.params),
            gib(adapters)
        ),
    );
}

/// The gradients (sharded from ZeRO-2).
fn gradients(job: &Job, t: &Trainable, deepspeed_grads: bool, list: &mut ComponentList) {
    let on = job.zero_stage >= 2;
    let grad_bytes = t.grad_bytes;
    let grads_per_gpu = shard(job, on, t.total(grad_bytes));
    list.gpu(
        ComponentKind::Gradients,
        "Gradients",
        Bytes::from_f64(grads_per_gpu),
        Provenance::Derived,
        formula!(
            job.explain,
            "{} trainable params × {grad_bytes} B{}{}",
            group_digits(t.params),
            if deepspeed_grads {
                " (2 B 16-bit + 4 B FP32 gradient partition, as DeepSpeed counts)"
            } else {
                ""
            },
            zero_text(job, on)
        ),
    );
}

/// The optimiser states and master weights in CPU RAM (ZeRO-Offload).
fn offloaded_optimizer_states(job: &Job, t: &Trainable, list: &mut ComponentList) {
    let explain = job.explain;
    let optimizer_text = t.optimizer_text;
    let master_total = t.total(t.master_bytes);
    list.host(
        ComponentKind::Optimizer,
        "Optimizer states (CPU offload)",
        Bytes::from_f64(t.total(t.optimizer_bytes)),
        Provenance::Derived,
        formula!(
            explain,
            "{optimizer_text} × {} params, in CPU RAM (ZeRO-Offload)",
            group_digits(t.params)
        ),
    );
    if master_total > 0.0 {
        list.host(
            ComponentKind::MasterWeights,
            "FP32 master weights (CPU offload)",
            Bytes::from_f64(master_total),
            Provenance::Derived,
            formula!(
                explain,
                "4 B × {} params, in CPU RAM (ZeRO-Offload)",
                group_digits(t.params)
            ),
        );
    }
}

/// The optimiser states and master weights on the GPUs (sharded from ZeRO-1).
fn optimizer_states(job: &Job, t: &Trainable, list: &mut ComponentList) {
    let (explain, on) = (job.explain, job.zero_stage >= 1);
    let optimizer_text = t.optimizer_text;
    let master_total = t.total(t.master_bytes);
    let qlora_paged = job.s.mode == Mode::Qlora;
    list.gpu(
        ComponentKind::Optimizer,
        if qlora_paged {
            "Optimizer states (paged)"
        } else {
            "Optimizer states"
        },
        Bytes::from_f64(shard(job, on, t.total(t.optimizer_bytes))),
        Provenance::Derived,
        formula!(
            explain,
            "{optimizer_text} × {} params{}{}",
            group_digits(t.params),
            zero_text(job, on),
            if qlora_paged {
                "; paged AdamW spills to CPU RAM under memory pressure"
            } else {
                ""
            }
        ),
    );
    if master_total > 0.0 {
        list.gpu(
            ComponentKind::MasterWeights,
            "FP32 master weights",
            Bytes::from_f64(shard(job, on, master_total)),
            Provenance::Derived,
            formula!(
                explain,
                "4 B × {} params{}",
                group_digits(t.params),
                zero_text(job, on)
            ),
        );
    }
}

/// DeepSpeed's estimators count 18 B per parameter on the sharded side: 2 B 16-bit gradients,
/// 4 B FP32 gradients, 4 B FP32 weights and 8 B Adam states
/// (deepspeed/runtime/zero/stage_1_and_2.py, `estimate_zero2_model_states_mem_needs`;
/// deepspeed/runtime/zero/stage3.py, `estimate_zero3_model_states_mem_needs`). The ZeRO paper's
/// 16 has no FP32 gradient.
const DEEPSPEED_FP32_GRAD_BYTES: f64 = 4.0;

/// The model states per GPU as DeepSpeed's estimator and as the ZeRO paper count them, side by
/// side, for a full fine-tune under ZeRO-2/3.
fn deepspeed_comparison(job: &Job, psi: u64, weights: &PlacedWeights) -> String {
    let n = job.devices.max(1) as f64;
    let p = psi as f64;
    let stage = job.zero_stage;
    let largest = weights.sums.largest_layer.as_f64();
    // ZeRO paper §5.1: stage 2 shards gradients and K = 12 optimiser bytes; stage 3 also the
    // 16-bit weights.
    let paper = if stage >= 3 {
        16.0 * p / n
    } else {
        2.0 * p + 14.0 * p / n
    };
    // DeepSpeed (after PR 5099 for ZeRO-2): 2Ψ + 18Ψ/N; ZeRO-3: 4 × largest layer + 18Ψ/N.
    let (deepspeed, how) = if stage >= 3 {
        (
            2.0 * largest + 18.0 * p / n,
            "estimate_zero3_model_states_mem_needs: 4 B × largest layer + 18 B × Ψ / N",
        )
    } else {
        (
            2.0 * p + 18.0 * p / n,
            "estimate_zero2_model_states_mem_needs, as changed in DeepSpeed PR 5099: 2 B × Ψ + 18 B × Ψ / N",
        )
    };
    formula!(
        job.explain,
        "Model states per GPU: {} by DeepSpeed's estimator ({how}; shown above) against {} by the ZeRO paper (Rajbhandari et al. 2019: (2 + 2 + 12) B × Ψ, sharded by stage). DeepSpeed also counts an FP32 gradient partition.",
        gib(Bytes::from_f64(deepspeed)),
        gib(Bytes::from_f64(paper))
    )
}

/// QLoRA under PEFT's `prepare_model_for_kbit_training` (see [`KBIT_FP32_UPCAST_EXTRA_BYTES`]):
/// the weights that stay 16-bit (embedding, output head, norms) are held in FP32.
fn kbit_fp32_upcast(job: &Job, list: &mut ComponentList) {
    use super::framework::KBIT_FP32_UPCAST_EXTRA_BYTES;
    let spec = job.spec;
    let outer: u64 = spec.outer_tensors().iter().map(|g| g.elements).sum();
    let norms = spec
        .norms_per_layer
        .saturating_mul(spec.hidden)
        .saturating_mul(spec.layers);
    let elements = outer.saturating_add(norms);
    let extra = Bytes::from_f64(elements as f64 * KBIT_FP32_UPCAST_EXTRA_BYTES);
    list.gpu(
        ComponentKind::Weights,
        "FP32 upcast of the 16-bit weights (PEFT prepare_model_for_kbit_training)",
        extra,
        Provenance::Derived,
        formula!(
            job.explain,
            "{} embedding, head and norm params × 2 B more (16-bit → FP32) = {}",
            group_digits(elements),
            gib(extra)
        ),
    );
}

/// Optimiser bytes per trainable parameter (states only; the FP32 master copy is separate).
fn optimizer_bytes_per_param(
    o: Optimizer,
    pure_bf16: bool,
    spec: &ModelSpec,
) -> (f64, &'static str) {
    match o {
        // Adam m and v in FP32 (ZeRO paper's K = 12 counts these 8 plus the 4-byte master copy).
        Optimizer::AdamW if pure_bf16 => (4.0, "AdamW m + v in BF16: 2 + 2 B/param"),
        Optimizer::AdamW => (8.0, "AdamW m + v in FP32: 4 + 4 B/param"),
        // bitsandbytes 8-bit Adam: m and v as 8-bit blockwise-quantised (Dettmers et al. 2022).
        Optimizer::AdamW8bit => (2.0, "8-bit AdamW (bitsandbytes) m + v: 1 + 1 B/param"),
        Optimizer::Sgd if pure_bf16 => (2.0, "SGD momentum buffer in BF16: 2 B/param"),
        Optimizer::Sgd => (4.0, "SGD momentum buffer in FP32: 4 B/param"),
        // Adafactor (Shazeer & Stern 2018) factors the second moment of an n×m matrix into n + m
        // FP32 values and keeps no first moment by default: ≈ 4·(n+m)/(n·m) ≈ 8/h B/param.
        Optimizer::Adafactor => {
            let h = spec.hidden.max(1) as f64;
            (
                8.0 / h,
                "Adafactor factored second moment: ≈ 4·(rows + cols) B per matrix ≈ 8/h B/param",
            )
        }
    }
}

/// Parameters the scenario trains: all of them in a full fine-tune, the adapters' under LoRA and
/// QLoRA.
pub fn trainable_params(s: &crate::core::scenario::Scenario, params: &ParamCount) -> u64 {
    match s.mode {
        Mode::Inference | Mode::Embed | Mode::Image => 0,
        Mode::Full => params.total,
        Mode::Lora | Mode::Qlora => lora_params(&s.model, s.lora_rank, s.lora_targets),
    }
}

/// LoRA trainable parameters per layer: r·(d_in + d_out) for each adapted matrix.
fn lora_params(spec: &ModelSpec, r: u64, t: LoraTargets) -> u64 {
    let h = spec.hidden;
    let qd = spec.heads.saturating_mul(spec.head_dim);
    let kvd = spec.kv_heads.saturating_mul(spec.head_dim);
    let attn_q = h + qd;
    let attn_v = h + kvd;
    let attn_k = h + kvd;
    let attn_o = qd + h;
    let mut per_layer_dims: u64 = match t {
        LoraTargets::QV => attn_q + attn_v,
        LoraTargets::Attention | LoraTargets::AllLinear => attn_q + attn_k + attn_v + attn_o,
    };
    if t == LoraTargets::AllLinear {
        let mats = match spec.mlp {
            MlpKind::Gated => 3,
            MlpKind::Plain => 2,
        };
        let mlp_dims = |w: u64| (h + w).saturating_mul(mats);
        let dims = match &spec.moe {
            Some(m) => mlp_dims(m.expert_ffn)
                .saturating_mul(m.experts)
                .saturating_add(
                    mlp_dims(if m.shared_ffn > 0 {
                        m.shared_ffn
                    } else {
                        m.expert_ffn
                    })
                    .saturating_mul(m.shared_experts),
                ),
            None => mlp_dims(spec.intermediate),
        };
        per_layer_dims = per_layer_dims.saturating_add(dims);
    }
    per_layer_dims.saturating_mul(r).saturating_mul(spec.layers)
}
