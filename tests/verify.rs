//! `headroom verify` end to end against a recorded llama-bench run (tests/fixtures/verify: the
//! JSON of llama.cpp's tools/llama-bench/README.md — Qwen2.5-7B-Instruct Q4_K_M on an RTX 4080,
//! pp512 7100.0 t/s, tg128 118.88 t/s — and llama.cpp's buffer lines for that file at n_ctx 512),
//! played by `fake-llama-bench`: predicted beside measured, the flags llama-bench is given, the
//! timeout, a missing binary, bad JSON, a failing run, and storing the calibration.
//!
//! The real run (llama-bench on PATH and a GGUF on disk) is a long check, not in CI:
//! `headroom verify --gguf model.gguf` (README, "Check the prediction on this machine").
#![cfg(unix)]

use std::path::PathBuf;
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/verify")
        .join(name)
}

/// `headroom verify` of Qwen2.5-7B Q4_K_M at a 512-token prompt on the catalog's RTX 4080 SUPER
/// desktop (the nearest to the recorded RTX 4080), with `extra` options and `env`.
fn verify(extra: &[&str], env: &[(&str, &str)]) -> Output {
    let fake = fixture("fake-llama-bench");
    let config = tempfile::tempdir().unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_headroom"));
    c.args([
        "verify",
        "--model",
        "qwen2.5-7b",
        "--weights",
        "q4_k_m",
        "--prompt",
        "512",
        "--bench-model",
        "models/Qwen2.5-7B-Instruct-Q4_K_M.gguf",
        "--machine",
        "desktop-rtx4080s-64gb",
        "--llama-bench",
        fake.to_str().unwrap(),
    ])
    .args(extra)
    .env("HEADROOM_CONFIG_DIR", config.path());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn last_line(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .last()
        .unwrap_or("")
        .to_string()
}

fn row<'a>(v: &'a serde_json::Value, q: &str) -> &'a serde_json::Value {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["quantity"] == q)
        .unwrap_or_else(|| panic!("no row {q}: {v}"))
}

#[test]
fn predicted_beside_measured() {
    let dir = tempfile::tempdir().unwrap();
    let args_file = dir.path().join("args");
    let o = verify(
        &["--json"],
        &[("FAKE_LLAMA_BENCH_ARGS", args_file.to_str().unwrap())],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mib = |x: f64| (x * 1_048_576.0).round();
    // Measured: the recorded JSON's averages and the log's buffers.
    let pp = row(&v, "prompt_tokens_per_s");
    assert_eq!(pp["measured"], 7100.002165);
    let tg = row(&v, "generated_tokens_per_s");
    assert_eq!(tg["measured"], 118.881588);
    let w = row(&v, "weights_bytes");
    assert_eq!(w["measured"], mib(4168.09) + mib(292.36));
    let kv = row(&v, "kv_cache_bytes");
    assert_eq!(kv["measured"], mib(28.0));
    let cb = row(&v, "compute_buffer_bytes");
    assert_eq!(cb["measured"], mib(304.0) + mib(8.01));
    assert_eq!(v["n_ctx"], 512);
    assert_eq!(v["tests"], 2);
    assert_eq!(v["build"], "8cf427ff");
    // Predicted KV at the log's n_ctx: 28 layers × 512 × (4 × 128) × 2 × 2 B = 28.00 MiB.
    assert_eq!(kv["predicted"], mib(28.0));
    assert_eq!(kv["error"], 0.0);
    // Predicted compute buffers on llama.cpp (llama-bench is llama.cpp whatever the runtime
    // input says): the worst-case graph of one 512-token ubatch with every output
    // (llama_context::sched_reserve, n_outputs_pp = n_ubatch): logits 512 × 152,064 × 4 B =
    // 311,427,072 + KQ mask 512 × 512 × 4 B = 1,048,576 + residual 512 × 3,584 × 4 B × 4 =
    // 29,360,128 → 341,835,776 B on the GPU; host: embeddings 512 × 3,584 × 4 B + the mask =
    // 8,388,608; output buffer 152,064 × 4 B = 608,256. Together 350,832,640 B = 334.6 MiB
    // against the logged 312.0 MiB: +7 %.
    assert_eq!(cb["predicted"], 350_832_640.0);
    assert!(cb["error"].as_f64().unwrap().abs() < 0.10, "{cb}");
    // Every row has a prediction and an error.
    for r in v["rows"].as_array().unwrap() {
        assert!(r["predicted"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["error"].as_f64().is_some(), "{r}");
    }
    // The flags llama-bench was given: the fit's split (every layer: -ngl 999), the prompt,
    // 128 generated tokens, JSON out and the verbose log.
    let given = std::fs::read_to_string(&args_file).unwrap();
    let given: Vec<&str> = given.lines().collect();
    let after = |f: &str| {
        given
            .iter()
            .position(|a| *a == f)
            .map(|i| given[i + 1])
            .unwrap_or_else(|| panic!("{f} not in {given:?}"))
    };
    assert_eq!(after("-m"), "models/Qwen2.5-7B-Instruct-Q4_K_M.gguf");
    assert_eq!(after("-p"), "512");
    assert_eq!(after("-n"), "128");
    assert_eq!(after("-ngl"), "999");
    assert_eq!(after("-fa"), "1");
    assert_eq!(after("-ctk"), "f16");
    assert_eq!(after("-o"), "json");
    assert!(given.contains(&"-v"));
    // Progress on stderr: the command and llama.cpp's buffer lines as they came.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("headroom: running "), "{err}");
    assert!(
        err.contains("headroom: llama-bench: llama_kv_cache:"),
        "{err}"
    );
}

#[test]
fn the_table() {
    let o = verify(&[], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("predicted") && out.contains("measured"),
        "{out}"
    );
    assert!(out.contains("Prompt processing (pp512)"), "{out}");
    assert!(out.contains("7,100 tok/s"), "{out}");
    assert!(out.contains("119 tok/s"), "{out}");
    assert!(out.contains("28.0 MiB"), "{out}");
    assert!(out.contains("--save-calibration"), "{out}");
}

#[test]
fn the_timeout_stops_llama_bench() {
    let t = std::time::Instant::now();
    let o = verify(&["--timeout", "1"], &[("FAKE_LLAMA_BENCH_MODE", "slow")]);
    assert_eq!(o.status.code(), Some(3));
    let last = last_line(&o);
    assert!(
        last.contains("did not finish within") && last.contains("--timeout"),
        "{last}"
    );
    assert!(t.elapsed().as_secs() < 20, "{:?}", t.elapsed());
}

#[test]
fn a_missing_binary_bad_json_and_a_failed_run() {
    let o = Command::new(env!("CARGO_BIN_EXE_headroom"))
        .args([
            "verify",
            "--model",
            "qwen2.5-7b",
            "--bench-model",
            "m.gguf",
            "--llama-bench",
            "/nonexistent/llama-bench",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--llama-bench /nonexistent/llama-bench: no such file"));
    // Not on PATH.
    let none = Command::new(env!("CARGO_BIN_EXE_headroom"))
        .args(["verify", "--model", "qwen2.5-7b", "--bench-model", "m.gguf"])
        .env("PATH", "")
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&none.stderr).contains("llama-bench is not on PATH"));
    // No GGUF to run.
    let no_file = Command::new(env!("CARGO_BIN_EXE_headroom"))
        .args(["verify", "--model", "qwen2.5-7b"])
        .output()
        .unwrap();
    assert_eq!(no_file.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_file.stderr).contains("--gguf FILE"));

    let bad = verify(&[], &[("FAKE_LLAMA_BENCH_MODE", "bad-json")]);
    assert_eq!(bad.status.code(), Some(3));
    assert!(
        last_line(&bad).contains("llama-bench's JSON output"),
        "{}",
        last_line(&bad)
    );
    let failed = verify(&[], &[("FAKE_LLAMA_BENCH_MODE", "fail")]);
    assert_eq!(failed.status.code(), Some(3));
    let last = last_line(&failed);
    assert!(
        last.contains("llama-bench failed") && last.contains("failed to load model"),
        "{last}"
    );
}

#[test]
fn the_run_stored_as_the_calibration() {
    let config = tempfile::tempdir().unwrap();
    let o = verify(
        &["--save-calibration", "--json"],
        &[("HEADROOM_CONFIG_DIR", config.path().to_str().unwrap())],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let path = v["calibration"]["path"].as_str().expect("stored");
    assert!(path.starts_with(config.path().to_str().unwrap()), "{path}");
    let stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(stored["machine"], "desktop-rtx4080s-64gb");
    assert_eq!(stored["runs"], 2);
    assert!(v["calibration"]["bandwidth_factor"].as_f64().unwrap() > 0.0);
}
