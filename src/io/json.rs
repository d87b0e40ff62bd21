//! The JSON shapes of the CLI contract (`estimate --json`, `fit --json`, `catalog list --json`,
//! `catalog models --json`). Field names here are a contract other tools rely on: add fields
//! freely, never rename. One convention across every output: sizes are integers in bytes, kinds
//! and verdicts are lowercase CLI names, a price is one flat object, and a value that does not
//! apply is `null` (never a 0 that reads like a measurement).

use crate::core::catalog::{Catalog, Machine, ModelPreset, Price};
use crate::core::estimate::{ComponentKind, Estimate};
use crate::core::fit::{FitResult, Verdict};
use crate::core::placement::note::Note;
use serde_json::{Map, Value, json};

/// `{"params", "active_params", "memory": {...}, "per_gpu": {...}, "cpu": {...},
///   "kv_cache_per_token", "components": [...]}` — every size in bytes as an integer.
pub fn estimate_json(e: &Estimate) -> Value {
    let mut memory = Map::new();
    for k in ComponentKind::ALL {
        memory.insert(k.json_key().into(), json!(e.kind_total(k).0));
    }
    memory.insert("total".into(), json!(e.total().0));
    memory.insert("peak_allocated".into(), json!(e.peak_allocated().0));
    memory.insert("peak_reserved".into(), json!(e.peak_reserved().0));
    let components: Vec<Value> = e
        .components
        .iter()
        .map(|c| {
            json!({
                "name": c.name,
                "kind": c.kind.json_key(),
                "bytes": c.bytes.0,
                "per_device_bytes": c.per_device.0,
                "placement": match c.placement { crate::core::Placement::Gpu => "gpu", crate::core::Placement::Host => "host" },
                "provenance": c.provenance.label(),
                "formula": c.formula,
            })
        })
        .collect();
    json!({
        "params": e.params.total,
        "active_params": e.params.active,
        "memory": memory,
        "per_gpu": {
            "model_states": e.per_gpu_model_states().0,
            "total": e.per_gpu_total().0,
            "gpus": e.gpus,
        },
        "cpu": { "total": e.host_total().0 },
        "kv_cache_per_token": e.kv_cache_per_token.0,
        "components": components,
        "notes": e.notes,
    })
}

/// One precision's quality: `{"precision", "status": "reference" | "measured" | "carried_over" |
/// "unmeasured", "kld", "delta_ppl", "ppl", "same_top_pct", "baseline", "measured_on" (the
/// source's model name), "measured_on_id" (its preset), "imatrix", "dataset", "context",
/// "source", "row", "metric": "kld" | "accuracy_recovery" | "delta_ppl" | null (which figure
/// the status rests on: a "delta_ppl" figure is a perplexity difference on `dataset` at
/// `context`, not a KLD), "recovery_pct" (benchmark score as % of the baseline's: `dataset` names the
/// suite), "method"}`; figures `null` when not published.
pub fn quality_json(precision: &str, q: &crate::core::quality::Quality) -> Value {
    use crate::core::quality::Quality;
    match q {
        Quality::Reference => json!({
            "precision": precision, "status": "reference", "kld": 0.0, "delta_ppl": null,
            "ppl": null, "same_top_pct": null, "baseline": null, "measured_on": null,
            "measured_on_id": null, "imatrix": null, "dataset": null, "context": null,
            "source": null, "row": null, "metric": "kld", "recovery_pct": null, "method": null,
        }),
        Quality::Figure { row, basis } => json!({
            "precision": precision, "status": basis.key(), "kld": row.kld,
            "delta_ppl": row.delta_ppl, "ppl": row.ppl, "same_top_pct": row.same_top_pct,
            "baseline": row.baseline, "measured_on": row.model_name, "measured_on_id": row.model,
            "imatrix": row.imatrix, "dataset": row.dataset, "context": row.context,
            "source": row.source, "row": row.id,
            "metric": q.metric().map(|m| m.key()),
            "recovery_pct": row.recovery_pct, "method": row.method,
        }),
        Quality::Unmeasured => json!({
            "precision": precision, "status": "unmeasured", "kld": null, "delta_ppl": null,
            "ppl": null, "same_top_pct": null, "baseline": null, "measured_on": null,
            "measured_on_id": null, "imatrix": null, "dataset": null, "context": null,
            "source": null, "row": null, "metric": null, "recovery_pct": null, "method": null,
        }),
    }
}

/// The scenario's quality: `{"weights": quality_json, "kv": quality_json}`.
pub fn scenario_quality_json(
    s: &crate::core::scenario::Scenario,
    t: &crate::core::quality::QualityTable,
) -> Value {
    json!({
        "weights": quality_json(s.weights.cli_name(), &t.of_weights(s)),
        "kv": quality_json(&s.kv.cli_name(), &t.of_kv(s)),
    })
}

/// One machine's fit: `{"machine", "name", "kind", "verdict", "gpu_layers", "total_layers",
/// "headroom_bytes", "decode_tokens_per_s", "prefill_tokens_per_s", "usd_per_million_tokens"}`,
/// plus `speed_backend` (the throughput profile used) and `measured` (a published measurement of
/// this model and precision on this machine) when there is one.
/// Speeds and TTFT are `null` where the scenario does not run (verdict "none") or is training.
pub fn fit_json(r: &FitResult) -> Value {
    let runs = r.runs() && r.training.is_none();
    let speed = |x: f64, round: fn(f64) -> f64| {
        if runs && x.is_finite() && x > 0.0 {
            json!(round(x))
        } else {
            Value::Null
        }
    };
    // A machine without a GPU has no GPU figures: null, not a 0 that reads like one.
    let gpu = |x: u64| if r.gpus == 0 { Value::Null } else { json!(x) };
    let mut v = json!({
        "machine": r.machine,
        "name": r.name,
        "kind": r.kind_name(),
        "verdict": r.verdict.json_name(),
        "gpu_layers": gpu(r.gpu_layers),
        "total_layers": r.total_layers,
        "headroom_bytes": r.headroom_bytes,
        // An embedding pass generates nothing: no decode rate.
        "decode_tokens_per_s": if r.embedding.is_some() {
            Value::Null
        } else {
            speed(r.decode_tokens_per_s, round2)
        },
        "prefill_tokens_per_s": speed(r.prefill_tokens_per_s, round2),
        "usd_per_million_tokens": r.usd_per_million_tokens.map(round4),
        "ttft_s": speed(r.ttft_s, round4),
        "gpus": r.gpus,
        "gpu_capacity_bytes": gpu(r.gpu_capacity.0),
        "gpu_required_bytes": gpu(r.gpu_required.0),
        "ram_capacity_bytes": r.ram_capacity.0,
        "ram_required_bytes": r.ram_required.0,
        "disk_bytes": r.disk_bytes.0,
        "os_reserve_bytes": r.os_reserve.0,
        "unified_memory": r.unified,
        "notes": notes_with_reason(r),
    });
    // Unified memory: the raise of the GPU's limit the fit assumed, or the one it offers.
    if let Some((raise, assumed)) = r.notes.iter().find_map(|n| match n {
        Note::GpuLimitRaise(x) => Some((x, false)),
        Note::GpuLimitRaised(x) => Some((x, true)),
        _ => None,
    }) {
        v["gpu_limit_raise"] = json!({
            "to_bytes": raise.to.0,
            "mib": raise.mib(),
            "command": raise.command(),
            "assumed": assumed,
        });
    }
    if let Some(style) = r.offload_style.filter(|_| r.verdict == Verdict::Offload) {
        v["style"] = json!(style.json_name());
    }
    if let Some(x) = &r.expert_split {
        // Expert offload (llama.cpp --n-cpu-moe): the weights split between one GPU and RAM.
        v["cpu_moe_layers"] = json!(x.cpu_moe_layers);
        v["expert_split"] = json!({
            "cpu_moe_layers": x.cpu_moe_layers,
            "moe_layers_in_ram": x.moe_layers_in_ram,
            "ram_expert_bytes": x.ram_bytes.0,
            "ram_expert_bytes_per_token": x.ram_active_bytes.0,
            "all_expert_bytes": x.all_expert_bytes.0,
            "gpu_required_bytes": x.gpu_required.0,
        });
    }
    if let Some(b) = r.backend {
        v["speed_backend"] = json!(b.label());
    }
    answers_json(r, runs, &mut v);
    if let Some(m) = &r.measured {
        v["measured"] = json!({
            "benchmark": m.benchmark,
            "backend": m.backend.label(),
            "decode_tokens_per_s": m.decode_tokens_per_s,
            "prefill_tokens_per_s": m.prefill_tokens_per_s,
            "source": m.source,
            "date": m.date,
        });
    }
    if let Some(t) = &r.training {
        v["training"] = json!({
            "step_seconds": round4(t.step_seconds),
            "tokens_per_s": round2(t.tokens_per_s),
            "run_hours": round4(t.run_hours),
            "run_usd": t.run_usd.map(round4),
        });
    }
    v
}

/// What a fit row answers beyond memory and speed, where it runs: speculative decoding, a VLM's
/// images, an embedding pass.
fn answers_json(r: &FitResult, runs: bool, v: &mut Value) {
    if let Some(x) = r.speculative.as_ref().filter(|_| runs) {
        // Speculative decoding: `decode_tokens_per_s` above is with it; this is how.
        v["speculative"] = json!({
            "method": x.method.cli_name(),
            "draft_tokens": x.draft_tokens,
            "acceptance": round4(x.acceptance),
            "tokens_per_step": round4(x.tokens_per_step),
            "draft_step_s": x.draft_step_s,
            "verify_s": x.verify_s,
            "plain_decode_tokens_per_s": round2(x.plain_decode_tokens_per_s),
            "speedup": round4(x.speedup),
        });
    }
    if let Some(x) = r.vision.as_ref().filter(|_| runs) {
        // A vision-language model's images (`--mmproj`): `ttft_s` includes their encoding and
        // their tokens.
        v["vision"] = json!({
            "images": x.images,
            "tokens_per_image": x.tokens_per_image,
            "encode_s_per_image": round4(x.encode_s_per_image),
        });
    }
    if let Some(e) = r.embedding.as_ref().filter(|_| runs) {
        // Embedding / reranking (`--mode embed`): throughput from the prefill rate;
        // `usd_per_million_tokens` is then per input token.
        v["embedding"] = json!({
            "tokens_per_sequence": e.tokens_per_sequence,
            "tokens_per_s": round2(e.tokens_per_s),
            "sequences_per_s": round2(e.sequences_per_s),
            "batch_s": round4(e.batch_s),
        });
    }
}

/// The row's notes; a `none` row's start with why it does not run (what one GPU, or RAM,
/// would have to hold against what it has), unless a note already says so.
fn notes_with_reason(r: &FitResult) -> Vec<String> {
    use crate::core::format::bytes;
    let mut notes: Vec<String> = r.notes.iter().map(ToString::to_string).collect();
    if r.verdict != Verdict::None || notes.iter().any(|n| n.starts_with("does not fit:")) {
        return notes;
    }
    let reason = if r.gpus > 0 && r.gpu_required > r.gpu_capacity {
        format!(
            "does not fit: one GPU would hold {} but has {} usable",
            bytes(r.gpu_required),
            bytes(r.gpu_capacity)
        )
    } else if r.ram_required > r.ram_capacity {
        format!(
            "does not fit: RAM would hold {} but {} is usable",
            bytes(r.ram_required),
            bytes(r.ram_capacity)
        )
    } else if r.gpus == 0 {
        "does not run: the machine has no GPU and the scenario needs one".to_string()
    } else {
        "does not fit in the memory of this machine".to_string()
    };
    notes.insert(0, reason);
    notes
}

/// A price as one flat object: `{"kind": "hourly" | "purchase", "usd", "region", "price_date",
/// "source"}`.
pub fn price_json(p: &Price) -> Value {
    let (kind, usd, region, price_date, source) = match p {
        Price::Hourly {
            usd,
            region,
            price_date,
            source,
        } => ("hourly", usd, region, price_date, source),
        Price::Purchase {
            usd,
            region,
            price_date,
            source,
        } => ("purchase", usd, region, price_date, source),
    };
    json!({
        "kind": kind,
        "usd": usd,
        "region": region,
        "price_date": price_date,
        "source": source,
    })
}

/// One catalog machine (`catalog list --json`): the catalog fields with sizes in bytes, the
/// kind's CLI name, a flat price, plus the accelerator's name and memory per GPU (bytes).
pub fn machine_json(cat: &Catalog, m: &Machine) -> Value {
    let acc = m.gpu.as_deref().and_then(|g| cat.accelerator(g));
    json!({
        "id": m.id,
        "name": m.name,
        "kind": m.kind.cli_name(),
        "gpu": m.gpu,
        "gpu_name": acc.map(|a| a.name.clone()),
        // A CPU-only machine has no GPU to count.
        "gpu_count": if m.gpu.is_none() { 0 } else { m.gpu_count },
        "gpu_memory": acc.map(|a| a.memory.0),
        "gpu_memory_limit": m.gpu_memory_limit.map(|b| b.0),
        "ram": m.ram.0,
        "ram_bandwidth": m.ram_bandwidth.0,
        "cpu": m.cpu,
        "cpu_cores": m.cpu_cores,
        "vcpus": m.vcpus,
        "price": m.price.as_ref().map(price_json),
        "power_w": m.power_w,
        "source": m.source,
        "notes": m.notes,
    })
}

/// One model preset (`catalog models --json`): `{"id", "name", "family", "arch", "params",
/// "active_params", "layers", "hidden", "heads", "kv_heads", "vocab", "max_context", "source"}`.
pub fn model_json(p: &ModelPreset) -> Value {
    let pc = p.spec.param_count();
    json!({
        "id": p.id,
        "name": p.name,
        "family": p.family,
        "arch": p.spec.arch,
        "params": pc.total,
        "active_params": pc.active,
        "layers": p.spec.layers,
        "hidden": p.spec.hidden,
        "heads": p.spec.heads,
        "kv_heads": p.spec.kv_heads,
        "vocab": p.spec.vocab,
        "max_context": p.spec.max_context,
        "source": p.source,
    })
}

fn round2(x: f64) -> f64 {
    if x.is_finite() {
        (x * 100.0).round() / 100.0
    } else {
        0.0
    }
}
fn round4(x: f64) -> f64 {
    if x.is_finite() {
        (x * 10000.0).round() / 10000.0
    } else {
        0.0
    }
}

/// The `recommend --json` contract: `{"model", "weights", "context", "constraints",
/// "kinds": [{"kind", "label", "machine", "name", "reason", "price_usd", "price_per": "purchase"|
/// "hourly", "verdict", "tokens_per_s", "usd_per_million_tokens", "picks": [...], "unmet": [...]}],
/// "this_machine": {"machine", "name", "verdict", "tokens_per_s", "summary", "upgrades": [...],
/// "past_floor": {"weights", "kld", "max_kld", "text"} | null (with `--max-kld`: no precision
/// within the floor fits its GPU; the one that would, and its KLD)}}`.
pub fn recommend_json(
    s: &crate::core::scenario::Scenario,
    r: &crate::core::recommend::Recommendations,
) -> Value {
    let pick = |p: &crate::core::recommend::Pick| {
        json!({
            "role": p.role,
            "machine": p.machine,
            "name": p.name,
            "reason": p.reason.to_string(),
            "price_usd": p.price.usd(),
            "price_per": if p.price.is_hourly() { "hourly" } else { "purchase" },
            "verdict": p.verdict.json_name(),
            "verdict_text": p.verdict_text,
            "tokens_per_s": rate(p.verdict, p.tokens_per_s),
            "usd_per_million_tokens": p.usd_per_million_tokens.map(round4),
        })
    };
    let kinds: Vec<Value> = r
        .groups
        .iter()
        .map(|g| {
            let best = g.best();
            json!({
                "kind": g.group.cli_name(),
                "label": g.group.label(),
                "machine": best.map(|p| p.machine.clone()),
                "name": best.map(|p| p.name.clone()),
                "reason": best
                    .map(|p| p.reason.to_string())
                    .or_else(|| g.unmet.first().map(ToString::to_string)),
                "price_usd": best.and_then(|p| p.price.usd()),
                "price_per": best.map(|p| if p.price.is_hourly() { "hourly" } else { "purchase" }),
                "verdict": best.map(|p| p.verdict.json_name()),
                "tokens_per_s": best.map_or(Value::Null, |p| rate(p.verdict, p.tokens_per_s)),
                "usd_per_million_tokens": best.and_then(|p| p.usd_per_million_tokens).map(round4),
                "picks": g.picks.iter().map(pick).collect::<Vec<_>>(),
                "unmet": g.unmet.iter().map(ToString::to_string).collect::<Vec<_>>(),
            })
        })
        .collect();
    let this = r.this_machine.as_ref().map(|t| {
        json!({
            "machine": t.machine,
            "name": t.name,
            "verdict": t.verdict.json_name(),
            "verdict_text": t.verdict_text,
            "tokens_per_s": rate(t.verdict, t.tokens_per_s),
            "summary": t.summary().to_string(),
            "upgrades": t.upgrades.iter().map(|u| json!({
                "change": u.kind(),
                "weights": u.weights(),
                "kld": u.kld(),
                "context": u.context(),
                "ram_bytes": u.ram_bytes(),
                "gpu_memory_bytes": u.gpu_memory_bytes(),
                "example": u.example(),
                "verdict": u.verdict.json_name(),
                "tokens_per_s": rate(u.verdict, u.tokens_per_s),
                "text": u.to_string(),
            })).collect::<Vec<_>>(),
            "past_floor": t.past_floor.as_ref().map(|p| json!({
                "weights": p.weights.cli_name(),
                "kld": p.kld,
                "max_kld": p.max_kld,
                "text": p.to_string(),
            })),
        })
    });
    json!({
        "model": s.model.name,
        "weights": s.weights.cli_name(),
        "context": r.context,
        "mode": s.mode.cli_name(),
        "constraints": {
            "budget_usd": r.constraints.budget_usd,
            "max_usd_per_hour": r.constraints.max_usd_per_hour,
            "min_tokens_per_s": r.constraints.min_tokens_per_s,
            "min_context": r.constraints.min_context,
            "kinds": r.constraints.kinds.iter().map(|k| k.cli_name()).collect::<Vec<_>>(),
            "max_kld": r.constraints.max_kld,
        },
        "kinds": kinds,
        "this_machine": this,
        "cloud_cost_load": r.cloud_cost_load,
        "serving": r.serving.as_ref().map(|sp| {
            let pick = |p: &crate::core::serving::ServingPick| {
                json!({
                    "machine": p.machine,
                    "name": p.name,
                    "machines": p.machines,
                    "replicas": p.replicas,
                    "price_usd": p.usd.map(round4),
                    "price_per": if p.hourly { "hourly" } else { "purchase" },
                    "usd_per_million_output": p.usd_per_million_output.map(round4),
                    "ttft_p95_s": finite4(p.ttft_p95_s),
                    "tokens_per_s_per_user": finite4(p.tokens_per_s_per_user),
                })
            };
            json!({
                "cloud": sp.cloud.as_ref().map(pick),
                "owned": sp.owned.as_ref().map(pick),
                "closest": sp.closest.as_ref().map(pick),
            })
        }),
        "cluster": r.cluster.as_ref().map(cluster_json),
    })
}

/// A speed as `fit --json` gives it: rounded to two decimals where the scenario runs, `null`
/// where it does not (verdict `none`) or the speed is not a positive number.
fn rate(v: Verdict, x: f64) -> Value {
    if v != Verdict::None && x.is_finite() && x > 0.0 {
        json!(round2(x))
    } else {
        Value::Null
    }
}

/// A finite number rounded to four decimals, else null (a saturated queue's TTFT is infinite).
fn finite4(x: f64) -> Value {
    if x.is_finite() {
        json!(round4(x))
    } else {
        Value::Null
    }
}

/// One replica's state at one load, in `headroom serve --json`.
pub fn load_point_json(p: &crate::core::serving::LoadPoint) -> Value {
    json!({
        "users": round2(p.users),
        "running": round2(p.running),
        "requests_per_s": finite4(p.requests_per_s),
        "output_tokens_per_s": finite4(p.output_tokens_per_s),
        "input_tokens_per_s": finite4(p.input_tokens_per_s),
        "tokens_per_s_per_user": finite4(p.tokens_per_s_per_user),
        "tpot_s": finite4(p.tpot_s),
        "ttft_s": finite4(p.ttft_s),
        "ttft_p95_s": finite4(p.ttft_p95_s),
        "saturated": p.saturated,
    })
}

/// One machine's serving plan, in `headroom serve --json` (sizes in bytes; null where a value
/// does not apply).
pub fn serving_json(p: &crate::core::serving::ServingPlan) -> Value {
    use crate::core::serving::{CostBasis, Load};
    let settings = p.settings.map(|s| {
        json!({
            "max_num_seqs": s.max_num_seqs,
            "max_num_batched_tokens": s.max_num_batched_tokens.min(u64::MAX >> 11),
            "block_tokens": s.block_tokens,
            "prefix_caching": s.prefix_caching,
        })
    });
    let pool = p.pool.as_ref().map(|k| {
        json!({
            "budget_bytes": k.budget_per_gpu.0,
            "weights_bytes": k.weights_per_gpu.0,
            "activations_bytes": k.activations_per_gpu.0,
            "runtime_bytes": k.runtime_per_gpu.0,
            "kv_bytes": k.kv_per_gpu.0,
            "tokens": k.tokens,
            "blocks": k.blocks,
            "block_tokens": k.block_tokens,
        })
    });
    let asked = p.asked.map(|a| {
        let (users, rate) = match a.load {
            Load::Users(n) => (json!(n), Value::Null),
            Load::RequestsPerSecond(r) => (Value::Null, json!(r)),
        };
        json!({
            "users": users,
            "requests_per_s": rate,
            "replicas": a.replicas,
            "machines": a.machines,
            "meets_target": a.meets_target,
            "per_replica": load_point_json(&a.per_replica),
        })
    });
    let cost = p.cost.map(|c| {
        json!({
            "usd_per_hour": round4(c.usd_per_hour),
            "usd_per_million_output": finite4(c.usd_per_million_output),
            "usd_per_million_input_split": finite4(c.usd_per_million_input_split),
            "usd_per_million_output_split": finite4(c.usd_per_million_output_split),
            "basis": match c.basis {
                CostBasis::Target => "target",
                CostBasis::Asked => "asked",
                CostBasis::SingleUser => "single_user",
            },
        })
    });
    json!({
        "machine": p.machine,
        "name": p.name,
        "kind": p.kind.cli_name(),
        "engine": p.engine.cli_name(),
        "servable": p.blocker.is_none(),
        "blocker": p.blocker.map(|b| serde_json::to_value(b).unwrap_or(Value::Null)),
        "reason": p.blocker.map(|b| b.to_string()),
        "tp": p.tp,
        "replicas_per_machine": p.replicas_per_machine,
        "kernel": p.kernel.map(|k| k.label()),
        "speed_backend": p.backend.map(|b| b.label()),
        "settings": settings,
        "kv_pool": pool,
        "max_seqs_at_context": p.max_seqs_at_context,
        "slots": p.slots,
        "single_user": p.single.as_ref().map(load_point_json),
        "users_at_target": p.best_users,
        "machine_users_at_target": p.machine_users(),
        "at_target": p.best.as_ref().map(load_point_json),
        "asked": asked,
        "cost": cost,
        "curve": p.curve.iter().map(load_point_json).collect::<Vec<_>>(),
        "speculative": p.speculative.as_ref().map(|x| json!({
            "method": x.method.cli_name(),
            "draft_tokens": x.draft_tokens,
            "acceptance": round4(x.acceptance),
            "tokens_per_step": round4(x.tokens_per_step),
            "draft_weights_bytes": x.draft_weights_per_gpu.0,
            "draft_kv_bytes_per_token": x.draft_kv_bytes_per_token.round() as u64,
            "speedup_one_user": x.speedup_one_user.map(round4),
            "speedup_at_target": x.speedup_at_best.map(round4),
            "users_at_target_without": x.plain_best_users,
        })),
    })
}

/// The serving summary `headroom fit --json` adds to a row (`null` when the machine cannot
/// serve the scenario or it is a training run): the load the cost is for, and its figures.
pub fn fit_serving_json(p: Option<&crate::core::serving::ServingPlan>) -> Value {
    use crate::core::serving::CostBasis;
    let Some(p) = p.filter(|p| p.blocker.is_none()) else {
        return Value::Null;
    };
    let point = match p.cost.map(|c| c.basis) {
        Some(CostBasis::Asked) => p.asked.map(|a| a.per_replica),
        Some(CostBasis::Target) => p.best,
        _ => p.single,
    };
    json!({
        "engine": p.engine.cli_name(),
        "users_at_target": p.machine_users(),
        "basis": p.cost.map(|c| match c.basis {
            CostBasis::Target => "target",
            CostBasis::Asked => "asked",
            CostBasis::SingleUser => "single_user",
        }),
        "usd_per_million_output": p.cost.map(|c| finite4(c.usd_per_million_output)),
        "ttft_p95_s": point.map(|x| finite4(x.ttft_p95_s)),
        "tokens_per_s_per_user": point.map(|x| finite4(x.tokens_per_s_per_user)),
        "output_tokens_per_s": p.machine_output_tokens_per_s().map(finite4),
    })
}

/// A scenario in the JSON contract (`report --format json`'s `"scenario"`): the saved
/// scenario's fields with every choice under its CLI name (`"mode": "inference"`, `"weights":
/// "bf16"`, `"kv": "fp16"` or `"q8_0/q4_0"`, `"lora_targets": "all-linear"`, `"offload":
/// "none"`), the load as `{"users": N}` or `{"requests_per_s": R}`, and `null` where nothing
/// was set. Fields the scenario gains later pass through as serde writes them.
pub fn scenario_json(s: &crate::core::scenario::Scenario) -> Value {
    use crate::core::scenario::KvAllocation;
    let mut v = serde_json::to_value(s).unwrap_or(Value::Null);
    let Some(o) = v.as_object_mut() else {
        return v;
    };
    let mut set = |k: &str, x: Value| {
        if o.contains_key(k) {
            o.insert(k.into(), x);
        }
    };
    set("mode", json!(s.mode.cli_name()));
    set("weights", json!(s.weights.cli_name()));
    set("kv", json!(s.kv.cli_name()));
    set("optimizer", json!(s.optimizer.cli_name()));
    set("checkpointing", json!(s.checkpointing.cli_name()));
    set(
        "kv_allocation",
        json!(match s.kv_allocation {
            KvAllocation::Contiguous => "contiguous",
            KvAllocation::Paged => "paged",
        }),
    );
    set("lora_targets", json!(s.lora_targets.cli_name()));
    set("offload", json!(s.offload.cli_name()));
    set("runtime", json!(s.runtime.cli_name()));
    set("framework", json!(s.framework.cli_name()));
    if let Some(m) = o.get_mut("model").and_then(Value::as_object_mut) {
        m.insert(
            "mlp".into(),
            json!(match s.model.mlp {
                crate::core::model::MlpKind::Gated => "gated",
                crate::core::model::MlpKind::Plain => "plain",
            }),
        );
        m.insert(
            "source".into(),
            json!(match s.model.source {
                crate::core::model::ShapeSource::Exact => "exact",
                crate::core::model::ShapeSource::Estimated => "estimated",
            }),
        );
    }
    if let Some(sv) = o.get_mut("serving").and_then(Value::as_object_mut) {
        use crate::core::serving::Load;
        sv.insert("engine".into(), json!(s.serving.engine.cli_name()));
        sv.insert("mix".into(), json!(s.serving.mix.map(|m| m.cli_name())));
        sv.insert(
            "load".into(),
            match s.serving.load {
                Some(Load::Users(n)) => json!({ "users": n }),
                Some(Load::RequestsPerSecond(r)) => json!({ "requests_per_s": r }),
                None => Value::Null,
            },
        );
    }
    v
}

/// A disk in the JSON contract (`detect --json`'s `"storage"`): `{"kind": "nvme-gen4",
/// "label", "capacity": bytes, "free": bytes | null, "read_gbs": GB/s | null, "source"}`.
pub fn storage_json(d: &crate::core::catalog::Storage) -> Value {
    use crate::core::catalog::StorageKind as K;
    let kind = match d.kind {
        K::Hdd => "hdd",
        K::Sata => "sata",
        K::NvmeGen3 => "nvme-gen3",
        K::NvmeGen4 => "nvme-gen4",
        K::NvmeGen5 => "nvme-gen5",
        K::AppleInternal => "apple-internal",
        K::CloudLocalNvme => "cloud-local-nvme",
        K::NetworkBlock => "network-block",
    };
    json!({
        "kind": kind,
        "label": d.kind.label(),
        "capacity": d.capacity.0,
        "free": d.free.map(|b| b.0),
        "read_gbs": d.read_gbs,
        "source": d.source,
    })
}

/// `detect --json`: the detection with `storage` in the contract's shape ([`storage_json`]).
pub fn detected_json(d: &crate::io::detect::DetectedMachine) -> Value {
    let mut v = serde_json::to_value(d).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        o.insert(
            "storage".into(),
            d.storage.as_ref().map_or(Value::Null, storage_json),
        );
    }
    v
}

/// One machine's cluster answer, in `headroom cluster --json` (sizes in bytes, times in seconds
/// or hours as named; null where a value does not apply).
pub fn cluster_json(p: &crate::core::cluster::ClusterPick) -> Value {
    json!({
        "machine": &*p.machine,
        "name": &*p.name,
        "kind": p.kind.cli_name(),
        "gpus_per_node": p.gpus_per_node,
        "network": p.network,
        "network_assumed": p.network_assumed,
        "smallest": p.smallest.as_ref().map(cluster_point_json),
        "cheapest": p.cheapest.as_ref().map(cluster_point_json),
        "curve": p.curve.iter().map(cluster_point_json).collect::<Vec<_>>(),
    })
}

/// One GPU's memory under a cluster layout, bytes.
fn per_gpu_json(g: &crate::core::cluster::PerGpu) -> Value {
    json!({
        "weights": g.weights.0,
        "gradients": g.gradients.0,
        "optimizer": g.optimizer.0,
        "master_weights": g.master_weights.0,
        "activations": g.activations.0,
        "overhead": g.overhead.0,
        "total": g.total().0,
    })
}

fn cluster_point_json(pt: &crate::core::cluster::ClusterCurvePoint) -> Value {
    let train = pt.train.as_ref().map(|t| {
        json!({
            "tp": t.layout.tp,
            "pp": t.layout.pp,
            "dp": t.layout.dp,
            "sharding": t.layout.sharding.cli_name(),
            "ep": t.layout.ep,
            "checkpointing": t.checkpointing.cli_name(),
            "per_gpu": per_gpu_json(&t.per_gpu),
            "stages": t.stages.iter().map(per_gpu_json).collect::<Vec<_>>(),
            "usable_per_gpu": t.usable_per_gpu.0,
            "micro_batch": t.micro_batch,
            "micro_batches": t.micro_batches,
            "global_batch": t.global_batch,
            "step_seconds": finite4(t.step_seconds),
            "step": {
                "compute_s": finite4(t.step.compute),
                "tensor_parallel_s": finite4(t.step.tensor_parallel),
                "pipeline_s": finite4(t.step.pipeline),
                "data_parallel_s": finite4(t.step.data_parallel),
                "optimizer_s": finite4(t.step.optimizer),
                "expert_parallel_s": finite4(t.step.expert_parallel),
            },
            "tokens_per_s": finite4(t.tokens_per_s),
            "mfu": finite4(t.mfu),
            "comm_bytes_per_gpu_per_step": finite4(t.comm_bytes_per_gpu),
            "run_hours": finite4(t.run_hours),
            "usd_per_hour": t.usd_per_hour.map_or(Value::Null, finite4),
            "run_usd": t.run_usd.map_or(Value::Null, finite4),
        })
    });
    let serve = pt.serve.as_ref().map(|s| {
        json!({
            "engine": s.engine.cli_name(),
            "runs": s.runs(),
            "tp": s.tp,
            "pp": s.pp,
            "gpus": s.gpus,
            "verdict": s.fit.verdict.json_name(),
            "decode_tokens_per_s": finite4(s.decode_tokens_per_s),
            "prefill_tokens_per_s": finite4(s.prefill_tokens_per_s),
            "network_share": finite4(s.network_share),
            "usd_per_hour": s.usd_per_hour.map_or(Value::Null, finite4),
            "serving": s.serving.as_ref().map(serving_json),
        })
    });
    json!({
        "nodes": pt.nodes,
        "fits": pt.fits(),
        "cost_usd": pt.cost_usd().map_or(Value::Null, finite4),
        "train": train,
        "serve": serve,
    })
}

/// The image scenario's own fields (`--mode image`), shared by `estimate` and `fit`.
fn image_scenario_json(i: &crate::core::diffusion::ImageInputs) -> Value {
    json!({
        "pipeline": i.pipeline.id,
        "name": i.pipeline.name,
        "denoiser": i.pipeline.denoiser_label(),
        "width": i.width,
        "height": i.height,
        "steps": i.steps,
        "images_per_batch": i.images,
        "weights": i.weights.cli_name(),
        "runtime": i.runtime().label(),
        "image_runtime": i.runtime().cli_name(),
        "tf32": i.tf32,
        "fp8_matmul": i.fp8_matmul,
        "classifier_free_guidance": i.pipeline.cfg,
        "pipeline_offload": i.offload.cli_name(),
        "vae_tiling": i.vae_tiling,
        "memory_efficient_attention": i.memory_efficient_attention,
    })
}

/// `estimate --mode image --json`: `{"image": {...}, "placement", "components": [{"name",
/// "kind", "params", "bytes", "on_gpu"}], "weights", "gpu_peak", "host", "transfer_per_call",
/// "denoiser_flops_per_sample_step", "vae_decode_flops_per_image"}` — sizes in bytes.
pub fn image_estimate_json(
    i: &crate::core::diffusion::ImageInputs,
    e: &crate::core::diffusion::ImageEstimate,
) -> Value {
    let parts: Vec<Value> = e
        .parts
        .iter()
        .map(|p| {
            json!({
                "name": p.name,
                "kind": serde_json::to_value(p.kind).unwrap_or(Value::Null),
                "params": if p.params > 0 { json!(p.params) } else { Value::Null },
                "bytes": p.bytes.0,
                "on_gpu": p.resident_on_gpu,
            })
        })
        .collect();
    let act = if i.weights == crate::core::precision::WeightPrecision::Fp32 {
        4.0
    } else {
        2.0
    };
    json!({
        "image": image_scenario_json(i),
        "placement": e.placement.cli_name(),
        "components": parts,
        "weights": e.weights.0,
        "gpu_peak": e.gpu_peak.0,
        "host": e.host.0,
        "transfer_per_call": e.transfer_per_call.0,
        "denoiser_flops_per_sample_step": e.denoiser.flops,
        "vae_decode_flops_per_image": e.decoder.flops,
        "denoiser_kernels_per_step": {
            "eager": e.denoiser.kernels,
            "fused": e.denoiser.fused_kernels,
        },
        "denoiser_elementwise_bytes_per_sample_step": {
            "eager": e.denoiser.eager_elements * act,
            "fused": e.denoiser.fused_elements * act,
        },
    })
}

/// `recommend --mode image --json`: `{"image": {...}, "groups": [{"group", "picks": [{"role",
/// "machine", "name", "verdict", "price_usd", "price_per_hour", "seconds_per_image",
/// "machine_images_per_hour", "pipelines", "usd_per_1000_images"}]}]}`; a group whose picks are
/// empty has no machine that runs the pipeline on its GPU within the constraints.
pub fn image_recommend_json(
    i: &crate::core::diffusion::ImageInputs,
    groups: &[crate::core::diffusion::picks::ImageGroupPicks],
) -> Value {
    let groups: Vec<Value> = groups
        .iter()
        .map(|g| {
            let picks: Vec<Value> = g
                .picks
                .iter()
                .map(|p| {
                    json!({
                        "role": p.role.cli_name(),
                        "machine": &*p.machine,
                        "name": &*p.name,
                        "verdict": p.verdict.cli_name(),
                        "price_usd": p.price.usd(),
                        "price_per_hour": p.price.is_hourly(),
                        "seconds_per_image": p.seconds_per_image,
                        "machine_images_per_hour": p.machine_images_per_hour,
                        "pipelines": p.pipelines,
                        "usd_per_1000_images": p.usd_per_1000_images,
                    })
                })
                .collect();
            json!({ "group": g.group.cli_name(), "picks": picks })
        })
        .collect();
    json!({ "image": image_scenario_json(i), "groups": groups })
}

/// `fit --mode image --json`, one object per machine: `{"machine", "name", "verdict",
/// "gpu_capacity", "gpu_needed", "ram_needed" (one pipeline), "machine_ram_needed" (every
/// pipeline the machine runs), "ram_capacity", "image": {...}, "speed":
/// {"seconds_per_image", "images_per_hour", "text_encode_s", "step_s", "denoise_s",
/// "vae_decode_s", "transfer_s", "call_s"} | null, "usd_per_hour", "pipelines",
/// "machine_images_per_hour", "usd_per_1000_images"}`.
pub fn image_fit_json(
    i: &crate::core::diffusion::ImageInputs,
    r: &crate::core::diffusion::ImageFit,
) -> Value {
    let speed = r.speed.as_ref().map_or(Value::Null, |s| {
        json!({
            "seconds_per_image": s.seconds_per_image,
            "images_per_hour": s.images_per_hour,
            "text_encode_s": s.text_s,
            "step_s": s.step_s,
            "denoise_s": s.denoise_s,
            "vae_decode_s": s.vae_s,
            "transfer_s": s.transfer_s,
            "call_s": s.call_s,
        })
    });
    json!({
        "machine": &*r.machine,
        "name": &*r.name,
        "verdict": r.verdict.cli_name(),
        "gpu_capacity": r.gpu_capacity.0,
        "gpu_needed": r.gpu_needed.0,
        "ram_needed": r.ram_needed.0,
        "machine_ram_needed": r.machine_ram_needed.0,
        "ram_capacity": r.ram_capacity.0,
        "image": image_scenario_json(i),
        "speed": speed,
        "usd_per_hour": r.usd_per_hour,
        "pipelines": r.pipelines,
        "machine_images_per_hour": r.machine_images_per_hour,
        "usd_per_1000_images": r.usd_per_1000_images,
    })
}
