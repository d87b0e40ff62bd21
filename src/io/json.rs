//! The JSON shapes of the CLI contract (`headroom estimate --json`, `headroom fit --json`).
//! Field names here are a contract other tools rely on: add fields freely, never rename.

use crate::core::estimate::{ComponentKind, Estimate};
use crate::core::fit::FitResult;
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
pub fn fit_json(r: &FitResult) -> Value {
    let mut v = json!({
        "machine": r.machine,
        "name": r.name,
        "kind": r.kind_name(),
        "verdict": r.verdict.json_name(),
        "gpu_layers": r.gpu_layers,
        "total_layers": r.total_layers,
        "headroom_bytes": r.headroom_bytes,
        "decode_tokens_per_s": round2(r.decode_tokens_per_s),
        "prefill_tokens_per_s": round2(r.prefill_tokens_per_s),
        "usd_per_million_tokens": r.usd_per_million_tokens.map(round4),
        "ttft_s": round4(r.ttft_s),
        "gpus": r.gpus,
        "gpu_capacity_bytes": r.gpu_capacity.0,
        "gpu_required_bytes": r.gpu_required.0,
        "ram_capacity_bytes": r.ram_capacity.0,
        "ram_required_bytes": r.ram_required.0,
        "os_reserve_bytes": r.os_reserve.0,
        "notes": r.notes,
    });
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
            "reason": p.reason,
            "price_usd": p.price_usd,
            "price_per": if p.hourly { "hour" } else { "purchase" },
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
                "reason": best.map(|p| p.reason.clone()).or_else(|| g.unmet.first().cloned()),
                "price_usd": best.and_then(|p| p.price_usd),
                "price_per": best.map(|p| if p.hourly { "hour" } else { "purchase" }),
                "verdict": best.map(|p| p.verdict.json_name()),
                "tokens_per_s": best.map(|p| round2(p.tokens_per_s)),
                "usd_per_million_tokens": best.and_then(|p| p.usd_per_million_tokens).map(round4),
                "picks": g.picks.iter().map(pick).collect::<Vec<_>>(),
                "unmet": g.unmet,
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
            "summary": t.summary,
            "upgrades": t.upgrades.iter().map(|u| json!({
                "change": u.change,
                "weights": u.weights,
                "context": u.context,
                "ram_bytes": u.ram_bytes,
                "gpu_memory_bytes": u.gpu_memory_bytes,
                "example": u.example,
                "verdict": u.verdict.json_name(),
                "tokens_per_s": round2(u.tokens_per_s),
                "text": u.text,
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
