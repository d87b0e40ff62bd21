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
