//! `headroom calibrate`: a llama-bench JSON fixture → stored constants → changed predictions.
//! The fixture has llama-bench's `-o json` shape (field names as llama-bench writes them); its
//! numbers are a slower-than-scoreboard RTX 4090 (147 tok/s decode instead of ~185).

use headroom::cli::calibrate::describe;
use headroom::core::fit::{FitSettings, fit_all};
use headroom::core::model::ModelSpec;
use headroom::core::precision::WeightPrecision;
use headroom::core::scenario::{Runtime, Scenario};
use headroom::io::calibration::{FILE_NAME, calibrate_file, load};
use headroom::io::catalog::builtin;
use std::path::Path;

const FIXTURE: &str = "tests/fixtures/llama-bench/rtx4090-llama2-7b-q4_0.json";

fn scenario() -> Scenario {
    let c = builtin();
    Scenario {
        model: c.model("llama-2-7b").unwrap().spec.clone(),
        model_id: Some("llama-2-7b".into()),
        weights: WeightPrecision::Q4_0,
        runtime: Runtime::LlamaCpp,
        context: 4096,
        prompt_tokens: 64,
        ..Scenario::default()
    }
}

#[test]
fn json_fixture_round_trips_into_stored_constants_and_slower_speeds() {
    let c = builtin();
    let m = c.machine("desktop-rtx4090-64gb").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let done = calibrate_file(Path::new(FIXTURE), m, c, dir.path(), "2026-01-01").unwrap();
    let out = describe(m, &done);
    assert!(
        out.contains("calibrated from your run of 2025-08-06"),
        "{out}"
    );
    let cal = load(dir.path()).unwrap().expect("stored");
    assert_eq!(cal, done.calibration, "what is stored is what was returned");
    assert_eq!(done.path, dir.path().join(FILE_NAME));
    assert_eq!(cal.machine, "desktop-rtx4090-64gb");
    assert_eq!(cal.date, "2025-08-06");
    assert_eq!(cal.runs, 2);
    // The run is slower than the model's prediction: both multipliers fall below 1 (its
    // prompt rate only just: the model's pp512 is within 2 % of this run).
    assert!(cal.tuning.bandwidth_factor < 0.95, "{cal:?}");
    assert!((0.95..1.0).contains(&cal.tuning.prefill_factor), "{cal:?}");

    let s = scenario();
    let plain = fit_all(&s, [m], c, &FitSettings::default()).remove(0);
    let st = FitSettings {
        calibration: Some(cal.clone()),
        ..FitSettings::default()
    };
    let tuned = fit_all(&s, [m], c, &st).remove(0);
    assert!(
        tuned.decode_tokens_per_s < 0.9 * plain.decode_tokens_per_s,
        "{} vs {}",
        tuned.decode_tokens_per_s,
        plain.decode_tokens_per_s
    );
    assert!(tuned.prefill_tokens_per_s < plain.prefill_tokens_per_s);
    assert!(tuned.notes.iter().any(|n| {
        n.to_string()
            .contains("calibrated from your run of 2025-08-06")
    }));
    // Close to what the run measured (147.46 tok/s at depth ≤ 128; the fit decodes at depth 64).
    assert!(
        (tuned.decode_tokens_per_s / 147.46 - 1.0).abs() < 0.05,
        "{}",
        tuned.decode_tokens_per_s
    );
    // Other machines are untouched.
    let other = c.machine("desktop-rtx5090-64gb").unwrap();
    assert_eq!(
        fit_all(&s, [other], c, &st)[0].decode_tokens_per_s,
        fit_all(&s, [other], c, &FitSettings::default())[0].decode_tokens_per_s
    );
    // A generic model of the same size runs through the same constants.
    let g = Scenario {
        model: ModelSpec::generic(13_000_000_000),
        model_id: None,
        ..scenario()
    };
    assert!(
        fit_all(&g, [m], c, &st)[0].decode_tokens_per_s
            < fit_all(&g, [m], c, &FitSettings::default())[0].decode_tokens_per_s
    );
}

#[test]
fn foreign_and_bad_files_are_one_line_errors() {
    let c = builtin();
    let m = c.machine("desktop-rtx4090-64gb").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &str); 4] = [
        ("empty.json", ""),
        (
            "config.json",
            "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 4096}",
        ),
        ("notes.txt", "just some words\nand more"),
        ("bad.json", "[{\"model_type\": \"llama 7B Q4_0\""),
    ];
    for (name, text) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        let e = calibrate_file(&p, m, c, dir.path(), "2026-01-01").unwrap_err();
        assert!(!e.contains('\n') && e.contains(name), "{name}: {e}");
    }
    let missing = dir.path().join("missing.json");
    let e = calibrate_file(&missing, m, c, dir.path(), "2026-01-01").unwrap_err();
    assert!(!e.contains('\n') && e.contains("missing.json"), "{e}");
    // Nothing was stored.
    assert!(!dir.path().join(FILE_NAME).exists());
}

#[test]
fn unwritable_config_dir_is_a_clear_message() {
    let c = builtin();
    let m = c.machine("desktop-rtx4090-64gb").unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A file where the config directory should be: it cannot be created.
    let blocker = dir.path().join("config");
    std::fs::write(&blocker, "x").unwrap();
    let e = calibrate_file(Path::new(FIXTURE), m, c, &blocker, "2026-01-01").unwrap_err();
    assert!(e.starts_with("cannot store the calibration"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}
