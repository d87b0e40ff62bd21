//! `headroom verify`: the prediction beside a llama-bench run on this machine — prompt processing
//! and generation speed, and the buffers llama.cpp allocated (weights, KV cache, compute) — row
//! by row with the relative error. Running llama-bench and reading its output is `io::verify`'s;
//! what was predicted and how far off it is, is here.
//!
//! llama-bench creates one context per test with `n_ctx = n_prompt + n_gen + n_depth`
//! (`tools/llama-bench/llama-bench.cpp` `cmd_params_instance::to_llama_cparams`), so the pp test's
//! context is the larger one: memory is predicted at the context the log names.

use crate::core::catalog::{Catalog, Machine};
use crate::core::estimate::ComponentKind;
use crate::core::estimate::{Estimate, estimate};
use crate::core::fit::{FitResult, FitSettings, fit_all};
use crate::core::format;
use crate::core::scenario::{LaunchInputs, Runtime, Scenario};
use crate::core::speed::bench::BenchRun;
use crate::core::units::Bytes;
use serde::Serialize;

/// The buffers llama.cpp logged while llama-bench ran.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LoggedBuffers {
    /// `<device> model buffer size` of the first model load, in the log's order.
    pub model: Vec<(String, Bytes)>,
    /// The largest context llama-bench created: its `n_ctx` when the log names it.
    pub n_ctx: Option<u64>,
    /// Its KV cache, every device together (`<device> KV buffer size`, or the older
    /// `KV self size` total).
    pub kv: Bytes,
    /// Its compute buffers, every device together (`<device> compute buffer size`).
    pub compute: Bytes,
}

impl LoggedBuffers {
    /// The weights, every device together.
    pub fn weights(&self) -> Bytes {
        self.model
            .iter()
            .fold(Bytes::ZERO, |a, (_, b)| a.saturating_add(*b))
    }
    /// Whether the log named any buffer (llama-bench without `-v` names none).
    pub fn is_empty(&self) -> bool {
        self.model.is_empty() && self.kv.0 == 0 && self.compute.0 == 0
    }
}

/// What a row compares.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantity {
    /// Prompt tokens per second (llama-bench `pp`).
    PromptTokensPerS,
    /// Generated tokens per second (llama-bench `tg`).
    GeneratedTokensPerS,
    Weights,
    KvCache,
    ComputeBuffers,
}

impl Quantity {
    pub const fn label(self) -> &'static str {
        match self {
            Quantity::PromptTokensPerS => "Prompt processing",
            Quantity::GeneratedTokensPerS => "Generation",
            Quantity::Weights => "Weights",
            Quantity::KvCache => "KV cache",
            Quantity::ComputeBuffers => "Compute buffers",
        }
    }
    /// The JSON name of the row.
    pub const fn json_name(self) -> &'static str {
        match self {
            Quantity::PromptTokensPerS => "prompt_tokens_per_s",
            Quantity::GeneratedTokensPerS => "generated_tokens_per_s",
            Quantity::Weights => "weights_bytes",
            Quantity::KvCache => "kv_cache_bytes",
            Quantity::ComputeBuffers => "compute_buffer_bytes",
        }
    }
    const fn is_speed(self) -> bool {
        matches!(
            self,
            Quantity::PromptTokensPerS | Quantity::GeneratedTokensPerS
        )
    }
}

/// One quantity predicted and measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub quantity: Quantity,
    pub predicted: f64,
    /// `None` when the run did not measure it (no such test, no log line).
    pub measured: Option<f64>,
}

impl Row {
    /// `predicted ÷ measured − 1`, when both are there.
    pub fn error(&self) -> Option<f64> {
        self.measured
            .filter(|m| *m > 0.0 && m.is_finite())
            .map(|m| self.predicted / m - 1.0)
    }
    /// The row's name in a table: the speeds name their llama-bench test (`pp512`, `tg128`).
    pub fn label(&self, n_prompt: u64, n_gen: u64) -> String {
        match self.quantity {
            Quantity::PromptTokensPerS => format!("{} (pp{n_prompt})", self.quantity.label()),
            Quantity::GeneratedTokensPerS => format!("{} (tg{n_gen})", self.quantity.label()),
            q => q.label().to_string(),
        }
    }
    /// The error as a table shows it (`+12 %`, or the missing mark).
    pub fn show_error(&self) -> String {
        self.error()
            .map_or(format::MISSING.into(), format::signed_percent)
    }
    /// The value as the table shows it.
    pub fn show(&self, v: Option<f64>) -> String {
        match v {
            None => format::MISSING.into(),
            Some(x) if self.quantity.is_speed() => format::tokens_per_s(x),
            Some(x) => format::bytes(Bytes(x.max(0.0) as u64)),
        }
    }
}

/// The scenario llama-bench runs: the user's on llama.cpp (whatever runtime the user picked:
/// llama-bench is llama.cpp, so its compute buffers and speed are llama.cpp's), one sequence, at
/// a context of `n_ctx` tokens, the layers placed as `launch` says.
pub fn bench_scenario(s: &Scenario, n_ctx: u64, launch: &LaunchInputs) -> Scenario {
    let mut b = s.clone();
    b.runtime = Runtime::LlamaCpp;
    b.batch = 1;
    b.context = n_ctx.max(1);
    b.prompt_tokens = b.prompt_tokens.clamp(1, b.context);
    b.launch = launch.clone();
    b.speculative = None;
    b
}

/// The prediction of one llama-bench pp test (`n_prompt` tokens from an empty cache) and one tg
/// test (`n_gen` tokens), with the layers placed as `launch` says: (prompt tokens/s, generated
/// tokens/s). Prompt processing is the whole `n_prompt`-token prompt from an empty cache, in
/// ubatches (`speed::prefill`); generation is at the test's average depth, `n_gen ÷ 2`.
pub fn predicted_speeds(
    s: &Scenario,
    m: &Machine,
    cat: &Catalog,
    st: &FitSettings,
    launch: &LaunchInputs,
    n_prompt: u64,
    n_gen: u64,
) -> (f64, f64) {
    let one = |ctx: u64, depth: u64| -> FitResult {
        let mut b = bench_scenario(s, ctx, launch);
        b.prompt_tokens = depth.clamp(1, b.context);
        fit_all(&b, [m], cat, st).remove(0)
    };
    let pp = if n_prompt > 0 {
        one(n_prompt, n_prompt).prefill_tokens_per_s
    } else {
        0.0
    };
    let tg = if n_gen > 0 {
        one(n_gen, (n_gen / 2).max(1)).decode_tokens_per_s
    } else {
        0.0
    };
    (pp, tg)
}

/// The average tokens/s of the run's first pp test and first tg test.
pub fn measured_speeds(runs: &[BenchRun]) -> (Option<f64>, Option<f64>) {
    let pp = runs
        .iter()
        .find(|r| r.n_prompt > 0 && r.n_gen == 0)
        .map(|r| r.avg_ts);
    let tg = runs
        .iter()
        .find(|r| r.n_gen > 0 && r.n_prompt == 0)
        .map(|r| r.avg_ts);
    (pp, tg)
}

/// The memory rows: the estimate `est` (at llama-bench's context) beside the logged buffers.
pub fn memory_rows(est: &Estimate, logged: &LoggedBuffers) -> Vec<Row> {
    let m = |b: Bytes| (b.0 > 0).then_some(b.as_f64());
    vec![
        Row {
            quantity: Quantity::Weights,
            predicted: est.kind_total(ComponentKind::Weights).as_f64(),
            measured: m(logged.weights()),
        },
        Row {
            quantity: Quantity::KvCache,
            predicted: est.kind_total(ComponentKind::KvCache).as_f64(),
            measured: m(logged.kv),
        },
        Row {
            quantity: Quantity::ComputeBuffers,
            predicted: est.kind_total(ComponentKind::Activations).as_f64(),
            measured: m(logged.compute),
        },
    ]
}

/// The estimate at llama-bench's largest context (the log's `n_ctx`, else `n_prompt + n_gen`).
pub fn bench_estimate(s: &Scenario, launch: &LaunchInputs, n_ctx: u64) -> Estimate {
    estimate(&bench_scenario(s, n_ctx, launch))
}

/// All rows: speeds first, then memory.
pub fn rows(
    predicted: (f64, f64),
    runs: &[BenchRun],
    est: &Estimate,
    logged: &LoggedBuffers,
) -> Vec<Row> {
    let (pp, tg) = measured_speeds(runs);
    let mut out = vec![
        Row {
            quantity: Quantity::PromptTokensPerS,
            predicted: predicted.0,
            measured: pp,
        },
        Row {
            quantity: Quantity::GeneratedTokensPerS,
            predicted: predicted.1,
            measured: tg,
        },
    ];
    out.extend(memory_rows(est, logged));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_and_missing_measurements() {
        let r = Row {
            quantity: Quantity::GeneratedTokensPerS,
            predicted: 110.0,
            measured: Some(100.0),
        };
        assert!((r.error().unwrap() - 0.1).abs() < 1e-12);
        let none = Row {
            measured: None,
            ..r.clone()
        };
        assert_eq!(none.error(), None);
        assert_eq!(none.show(none.measured), format::MISSING);
        let zero = Row {
            measured: Some(0.0),
            ..r
        };
        assert_eq!(zero.error(), None);
    }

    /// Qwen2.5-7B's KV cache at llama-bench's pp512 context: 28 layers × 512 tokens × (4 KV
    /// heads × 128) × 2 (K and V) × 2 bytes (F16) = 29,360,128 B = 28.00 MiB, what llama.cpp
    /// logs (`CUDA0 KV buffer size = 28.00 MiB`).
    #[test]
    fn the_kv_cache_at_the_bench_context() {
        let spec = crate::core::model::ModelSpec {
            layers: 28,
            hidden: 3584,
            heads: 28,
            kv_heads: 4,
            head_dim: 128,
            intermediate: 18944,
            vocab: 152_064,
            max_context: 32_768,
            ..crate::core::model::ModelSpec::default()
        };
        let s = Scenario {
            model: spec,
            model_id: None,
            ..Scenario::default()
        };
        let est = bench_estimate(&s, &LaunchInputs::default(), 512);
        assert_eq!(est.kind_total(ComponentKind::KvCache).0, 29_360_128);
        let logged = LoggedBuffers {
            kv: Bytes(29_360_128),
            ..LoggedBuffers::default()
        };
        let rows = memory_rows(&est, &logged);
        assert_eq!(rows[1].error(), Some(0.0));
        assert_eq!(rows[0].measured, None);
    }
}
