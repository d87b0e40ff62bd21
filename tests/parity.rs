//! The window and the command line tell the same story: 240 generated scenarios, each set in the
//! window's state the way its inputs set it (a preset, then precision, context, batch, runtime,
//! KV types, mode, FlashAttention) and given to `headroom fit --json` as flags, give the same
//! verdict, headroom and rates on every catalog machine.

#![cfg(feature = "gui")]

use clap::Parser;
use headroom::cli::args::Cli;
use headroom::core::WeightPrecision;
use headroom::core::precision::KvTypes;
use headroom::core::scenario::{Mode, Runtime};
use headroom::core::units::Bytes;
use headroom::gui::HeadroomApp;
use headroom::gui::state::State;
use headroom::io::catalog::builtin;
use headroom::io::detect::FakeDetector;
use serde_json::Value;
use std::sync::Arc;

/// One generated scenario, as choices.
struct Choice {
    model: &'static str,
    weights: Option<WeightPrecision>,
    context: u64,
    batch: u64,
    runtime: Runtime,
    kv: &'static str,
    mode: Mode,
    flash: bool,
}

/// A small deterministic generator (64-bit LCG, Knuth's MMIX constants).
struct Lcg(u64);
impl Lcg {
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        xs[((self.0 >> 33) % xs.len() as u64) as usize]
    }
}

fn choices(n: usize) -> Vec<Choice> {
    let mut g = Lcg(2026);
    (0..n)
        .map(|_| Choice {
            model: g.pick(&[
                "llama-3-8b",
                "llama-3.1-70b",
                "qwen2.5-0.5b",
                "qwen2.5-32b",
                "qwen3-30b-a3b",
                "gpt-oss-20b",
                "mixtral-8x7b",
                "gemma-3-27b",
            ]),
            weights: g.pick(&[
                None,
                Some(WeightPrecision::Bf16),
                Some(WeightPrecision::Q4KM),
                Some(WeightPrecision::Q8_0),
            ]),
            context: g.pick(&[2048, 8192, 32_768, 200_000]),
            batch: g.pick(&[1, 1, 4, 16]),
            runtime: g.pick(&Runtime::ALL),
            kv: g.pick(&["fp16", "fp16", "q8_0"]),
            mode: g.pick(&[Mode::Inference, Mode::Inference, Mode::Lora, Mode::Qlora]),
            flash: g.pick(&[true, true, false]),
        })
        .collect()
}

/// `headroom fit --json` over the whole catalog for the choice, in-process.
fn cli_rows(c: &Choice) -> Vec<Value> {
    let mut args = vec![
        "headroom".to_string(),
        "fit".into(),
        "--json".into(),
        "--model".into(),
        c.model.into(),
        "--context".into(),
        c.context.to_string(),
        "--batch".into(),
        c.batch.to_string(),
        "--runtime".into(),
        c.runtime.cli_name().into(),
        "--kv".into(),
        c.kv.into(),
        "--mode".into(),
        c.mode.cli_name().into(),
        "--flash-attention".into(),
        if c.flash { "on" } else { "off" }.into(),
    ];
    if let Some(w) = c.weights {
        args.extend(["--weights".into(), w.cli_name().into()]);
    }
    let cli = Cli::try_parse_from(&args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    let out = headroom::cli::app::run(cli).unwrap_or_else(|e| panic!("{args:?}: {e:?}"));
    serde_json::from_str::<Vec<Value>>(&out).expect("fit --json is a list")
}

/// The window's state after the same choices, as its inputs make them.
fn window_state(c: &Choice) -> State {
    let p = builtin().model(c.model).expect("preset");
    let mut st = State::default();
    let s = &mut st.scenario;
    s.model = p.spec.clone();
    s.model_id = Some(p.id.clone());
    s.weights = c.weights.unwrap_or_else(|| p.default_weights());
    s.context = c.context;
    s.batch = c.batch;
    s.set_runtime(c.runtime, false);
    s.kv = KvTypes::parse(c.kv).expect("kv");
    s.mode = c.mode;
    s.flash_attention = c.flash;
    st
}

fn rate(v: &Value) -> Option<f64> {
    v.as_f64()
}

#[test]
fn window_and_command_line_agree_on_every_machine() {
    let cases = choices(240);
    let detector = Arc::new(FakeDetector::with_gpu(
        "NVIDIA GeForce RTX 4090",
        Bytes::gib(24),
        Bytes::gib(23),
    ));
    let mut app = HeadroomApp::new_with(detector, builtin().clone(), State::default());
    let (mut compared, mut beyond) = (0, 0);
    for c in &cases {
        let rows = cli_rows(c);
        let st = window_state(c);
        app.replace_scenario(st.scenario.clone());
        app.state = st;
        let asked = app.state.scenario.context;
        app.normalize();
        // A context beyond the model's trained length stays as asked on both surfaces.
        assert_eq!(app.state.scenario.context, asked);
        let trained = app.state.scenario.model.max_context;
        beyond += usize::from(trained > 0 && asked > trained);
        for row in &rows {
            let id = row["machine"].as_str().expect("machine id");
            let f = app
                .fit_of(id)
                .unwrap_or_else(|| panic!("window has no {id}"));
            let who = format!("{} {:?} ctx {} on {id}", c.model, c.weights, c.context);
            assert_eq!(row["verdict"], f.verdict.json_name(), "{who}");
            assert_eq!(row["headroom_bytes"], f.headroom_bytes, "{who}");
            // `fit --json` gives no GPU figures for a machine without a GPU (null, not 0).
            let layers = if f.gpus == 0 {
                Value::Null
            } else {
                Value::from(f.gpu_layers)
            };
            assert_eq!(row["gpu_layers"], layers, "{who}");
            for (key, x) in [
                ("decode_tokens_per_s", f.decode_tokens_per_s),
                ("prefill_tokens_per_s", f.prefill_tokens_per_s),
            ] {
                if let Some(cli) = rate(&row[key]) {
                    // The JSON rounds to two decimals.
                    assert!((cli - x).abs() <= 0.005 + 1e-9, "{who}: {key} {cli} vs {x}");
                }
            }
            compared += 1;
        }
    }
    assert!(compared >= 240 * 150, "{compared}");
    // Some asked contexts were beyond their model's trained length, and still agreed.
    assert!(beyond > 0);
}
