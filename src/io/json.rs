//! The JSON shapes of the CLI contract (`estimate --json`, `fit --json`, `catalog list --json`,
//! `catalog models --json`). Field names here are a contract other tools rely on: add fields
//! freely, never rename. One convention across every output: sizes are integers in bytes, kinds
//! and verdicts are lowercase CLI names, a price is one flat object, and a value that does not
//! apply is `null` (never a 0 that reads like a measurement).

use crate::core::catalog::{Catalog, Machine, ModelPreset, Price};
use crate::core::estimate::{ComponentKind, Estimate};
use crate::core::fit::{FitResult, Verdict};
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
    let mut v = json!({
        "machine": r.machine,
        "name": r.name,
        "kind": r.kind_name(),
        "verdict": r.verdict.json_name(),
        "gpu_layers": r.gpu_layers,
        "total_layers": r.total_layers,
        "headroom_bytes": r.headroom_bytes,
        "decode_tokens_per_s": speed(r.decode_tokens_per_s, round2),
        "prefill_tokens_per_s": speed(r.prefill_tokens_per_s, round2),
        "usd_per_million_tokens": r.usd_per_million_tokens.map(round4),
        "ttft_s": speed(r.ttft_s, round4),
        "gpus": r.gpus,
        "gpu_capacity_bytes": r.gpu_capacity.0,
        "gpu_required_bytes": r.gpu_required.0,
        "ram_capacity_bytes": r.ram_capacity.0,
        "ram_required_bytes": r.ram_required.0,
        "disk_bytes": r.disk_bytes.0,
        "os_reserve_bytes": r.os_reserve.0,
        "notes": r.notes,
    });
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
        "gpu_count": m.gpu_count,
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
/// "hour", "verdict", "tokens_per_s", "usd_per_million_tokens", "picks": [...], "unmet": [...]}],
/// "this_machine": {"machine", "name", "verdict", "tokens_per_s", "summary", "upgrades": [...]}}`.
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
            "price_per": if p.price.is_hourly() { "hour" } else { "purchase" },
            "verdict": p.verdict.json_name(),
            "verdict_text": p.verdict_text,
            "tokens_per_s": round2(p.tokens_per_s),
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
                "price_per": best.map(|p| if p.price.is_hourly() { "hour" } else { "purchase" }),
                "verdict": best.map(|p| p.verdict.json_name()),
                "tokens_per_s": best.map(|p| round2(p.tokens_per_s)),
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
            "tokens_per_s": round2(t.tokens_per_s),
            "summary": t.summary().to_string(),
            "upgrades": t.upgrades.iter().map(|u| json!({
                "change": u.kind(),
                "weights": u.weights(),
                "context": u.context(),
                "ram_bytes": u.ram_bytes(),
                "gpu_memory_bytes": u.gpu_memory_bytes(),
                "example": u.example(),
                "verdict": u.verdict.json_name(),
                "tokens_per_s": round2(u.tokens_per_s),
                "text": u.to_string(),
            })).collect::<Vec<_>>(),
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
        },
        "kinds": kinds,
        "this_machine": this,
    })
}
