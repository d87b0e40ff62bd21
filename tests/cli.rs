//! The command-line contract: names, JSON fields, exit codes. Runs the real binary.

use serde_json::Value;
use std::process::{Command, Output};

fn headroom(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_headroom"))
        .args(args)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env(
            "XDG_CONFIG_HOME",
            std::env::temp_dir().join("headroom-cli-test-no-user-catalogs"),
        )
        .output()
        .expect("run headroom")
}

fn json(args: &[&str]) -> Value {
    let o = headroom(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&o.stdout)))
}

/// A usage error: exit 2.
fn fails_with(args: &[&str], needle: &str) {
    fails_with_code(args, 2, needle)
}

/// Exit 2 usage, 3 input (a file or its content), 1 the output could not be written.
fn fails_with_code(args: &[&str], code: i32, needle: &str) {
    let o = headroom(args);
    assert_eq!(
        o.status.code(),
        Some(code),
        "{args:?} should exit {code}; stdout {}",
        String::from_utf8_lossy(&o.stdout)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(needle),
        "{args:?}: stderr {err:?} lacks {needle:?}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn estimate_json_contract_in_every_mode() {
    for mode in ["inference", "full", "lora", "qlora"] {
        let v = json(&[
            "estimate",
            "--model",
            "llama-3-8b",
            "--mode",
            mode,
            "--json",
        ]);
        assert_eq!(v["params"], 8_030_261_248u64, "{mode}");
        assert!(v["active_params"].is_u64());
        for k in [
            "weights",
            "kv_cache",
            "activations",
            "gradients",
            "optimizer",
            "master_weights",
            "overhead",
            "total",
        ] {
            assert!(v["memory"][k].is_u64(), "{mode}: memory.{k}");
        }
        assert!(v["per_gpu"]["model_states"].is_u64() && v["per_gpu"]["total"].is_u64());
        assert!(v["cpu"]["total"].is_u64());
        assert!(v["kv_cache_per_token"].is_u64());
        let comps = v["components"].as_array().unwrap();
        let sum: u64 = comps.iter().map(|c| c["bytes"].as_u64().unwrap()).sum();
        assert_eq!(
            v["memory"]["total"].as_u64().unwrap(),
            sum,
            "{mode}: total = Σ components"
        );
        for c in comps {
            assert!(c["name"].is_string() && c["formula"].is_string());
            assert!(["exact", "derived", "heuristic"].contains(&c["provenance"].as_str().unwrap()));
        }
    }
}

#[test]
fn estimate_golden_numbers_through_the_cli() {
    // 7B at FP16 = 14e9 bytes of weights.
    let v = json(&["estimate", "--params", "7B", "--weights", "fp16", "--json"]);
    assert_eq!(v["memory"]["weights"], 14_000_000_000u64);
    // ZeRO paper Fig. 1, stage 3 over 64 GPUs: 16Ψ/64 with Ψ = 7.5B → 1.875 GB per GPU.
    let v = json(&[
        "estimate", "--params", "7.5e9", "--mode", "full", "--gpus", "64", "--zero", "3", "--json",
    ]);
    assert_eq!(v["per_gpu"]["model_states"], 1_875_000_000u64);
    // ZeRO-Offload: optimiser states and master weights go to host RAM (12 B/param).
    let v = json(&[
        "estimate",
        "--params",
        "7B",
        "--mode",
        "full",
        "--offload",
        "optimizer",
        "--json",
    ]);
    assert_eq!(
        v["memory"]["optimizer"].as_u64().unwrap()
            + v["memory"]["master_weights"].as_u64().unwrap(),
        84_000_000_000
    );
    assert!(v["cpu"]["total"].as_u64().unwrap() >= 84_000_000_000);
    // GPUs 0 = CPU inference: everything in RAM.
    let v = json(&["estimate", "--model", "llama-3-8b", "--gpus", "0", "--json"]);
    assert_eq!(v["cpu"]["total"], v["memory"]["total"]);
    assert_eq!(v["per_gpu"]["total"], 0);
    // K and V types separately: q8_0 K (8.5 bits) + q4_0 V (4.5 bits) per element.
    let v = json(&[
        "estimate",
        "--model",
        "llama-3-8b",
        "--kv",
        "q8_0/q4_0",
        "--json",
    ]);
    assert_eq!(v["kv_cache_per_token"], 32u64 * (1088 + 576));
}

#[test]
fn params_accept_suffixes() {
    for p in ["7e9", "7B", "7b", "7000000000"] {
        let v = json(&["estimate", "--params", p, "--weights", "int8", "--json"]);
        assert_eq!(v["params"], 7_000_000_000u64, "{p}");
    }
    let v = json(&[
        "estimate",
        "--params",
        "1.5T",
        "--weights",
        "q4_k_m",
        "--json",
    ]);
    assert_eq!(v["params"], 1_500_000_000_000u64);
}

#[test]
fn bad_arguments_exit_2_naming_the_argument() {
    fails_with(&["estimate", "--weights", "int3"], "--weights");
    fails_with(&["estimate", "--context", "-5"], "--context");
    fails_with(&["estimate", "--context", "20000000"], "--context");
    fails_with(&["estimate", "--batch", "0"], "--batch");
    fails_with(&["estimate", "--params", "lots"], "--params");
    fails_with(&["estimate", "--params", "1e14"], "--params");
    fails_with(&["estimate", "--zero", "4"], "--zero");
    fails_with(&["estimate", "--gpus", "70000"], "--gpus");
    fails_with(&["estimate", "--kv", "fp16/int2"], "--kv");
    fails_with(&["estimate", "--model", "no-such-model"], "no-such-model");
    fails_with(
        &["estimate", "--model", "llama-3-8b", "--params", "7B"],
        "--params",
    );
    fails_with(&["fit", "--machine", "no-such-machine"], "no-such-machine");
    fails_with(&["fit", "--kind", "spaceship"], "--kind");
    fails_with(&["report", "--format", "pdf"], "--format");
}

#[test]
fn bad_files_exit_3_naming_the_file_and_position() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.json");
    std::fs::write(
        &cfg,
        "{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 4096,\n  oops\n}\n",
    )
    .unwrap();
    fails_with_code(
        &["estimate", "--config", cfg.to_str().unwrap()],
        3,
        "config.json",
    );
    let o = headroom(&["estimate", "--config", cfg.to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("4:"),
        "line:col expected"
    );
    fails_with_code(
        &["estimate", "--config", "/nonexistent/config.json"],
        3,
        "/nonexistent/config.json",
    );
    let missing = dir.path().join("missing-key.json");
    std::fs::write(&missing, r#"{"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 11008, "vocab_size": 32000}"#).unwrap();
    fails_with_code(
        &["estimate", "--config", missing.to_str().unwrap()],
        3,
        "num_hidden_layers",
    );
    let gguf = dir.path().join("bad.gguf");
    std::fs::write(&gguf, b"NOPE0000").unwrap();
    fails_with_code(
        &["estimate", "--gguf", gguf.to_str().unwrap()],
        3,
        "bad.gguf",
    );
    fails_with_code(
        &["estimate", "--scenario", "/nonexistent/s.ron"],
        3,
        "/nonexistent/s.ron",
    );
    fails_with_code(
        &[
            "report",
            "--model",
            "llama-3-8b",
            "-o",
            "/nonexistent/dir/report.md",
        ],
        1,
        "/nonexistent/dir/report.md",
    );
}

#[test]
fn fit_json_contract() {
    let v = json(&["fit", "--model", "llama-3-8b", "--kind", "laptop", "--json"]);
    let rows = v.as_array().unwrap();
    assert!(rows.len() >= 25, "{}", rows.len());
    for r in rows {
        for k in [
            "machine",
            "name",
            "kind",
            "verdict",
            "gpu_layers",
            "total_layers",
            "headroom_bytes",
            "decode_tokens_per_s",
            "prefill_tokens_per_s",
            "usd_per_million_tokens",
            "disk_bytes",
        ] {
            assert!(r.get(k).is_some(), "missing {k} in {r}");
        }
        assert!(
            ["gpu", "unified", "offload", "cpu", "disk", "none"]
                .contains(&r["verdict"].as_str().unwrap())
        );
        // disk_bytes is non-zero exactly on verdict "disk".
        assert_eq!(
            r["disk_bytes"].as_u64().unwrap() > 0,
            r["verdict"] == "disk",
            "{r}"
        );
        assert!(r["headroom_bytes"].is_i64());
        assert_eq!(r["kind"], "laptop");
    }
    let fits_only = json(&[
        "fit",
        "--model",
        "llama-3-70b",
        "--weights",
        "q4_k_m",
        "--fits-only",
        "--json",
    ]);
    assert!(
        fits_only
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["verdict"] != "none")
    );
    let one = json(&[
        "fit",
        "--model",
        "llama-3-70b",
        "--machine",
        "p5.48xlarge",
        "--json",
    ]);
    assert_eq!(one[0]["verdict"], "gpu");
    assert_eq!(one[0]["machine"], "aws-p5-48xlarge");
}

#[test]
fn fit_on_this_machine_and_detect() {
    let v = json(&[
        "fit",
        "--model",
        "qwen2.5-0.5b",
        "--weights",
        "q4_k_m",
        "--machine",
        "local",
        "--json",
    ]);
    assert_eq!(v[0]["machine"], "local");
    let d = json(&["detect", "--json"]);
    assert!(d["ram_total"].as_u64().unwrap() > 0);
    assert!(d["ram_available"].is_u64());
    assert!(d["cpu"]["name"].is_string() && d["cpu"]["cores"].is_u64());
    assert!(d["gpus"].is_array() && d["notes"].is_array());
}

#[test]
fn catalog_commands() {
    let v = json(&["catalog", "list", "--kind", "cloud", "--json"]);
    assert!(v.as_array().unwrap().len() >= 60);
    let o = headroom(&["catalog", "list", "--kind", "apple"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("MacBook"));
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.ron");
    std::fs::write(&bad, "(machines: [ (id: \"x\", name: 3) ])").unwrap();
    fails_with_code(
        &["catalog", "validate", bad.to_str().unwrap()],
        3,
        "bad.ron:1:",
    );
}

#[test]
fn report_to_stdout_in_every_format() {
    for (f, needle) in [("md", "# "), ("html", "<svg"), ("json", "\"fits\"")] {
        let o = headroom(&[
            "report",
            "--model",
            "llama-3-8b",
            "--machine",
            "desktop-rtx4090-64gb",
            "--format",
            f,
            "-o",
            "-",
        ]);
        assert!(
            o.status.success(),
            "{f}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(String::from_utf8_lossy(&o.stdout).contains(needle), "{f}");
    }
}

#[test]
fn recommend_json_contract() {
    let v = json(&[
        "recommend",
        "--model",
        "llama-3.1-70b",
        "--weights",
        "q4_k_m",
        "--context",
        "8192",
        "--json",
    ]);
    let kinds = v["kinds"].as_array().unwrap();
    let names: Vec<&str> = kinds.iter().map(|k| k["kind"].as_str().unwrap()).collect();
    assert_eq!(names, ["laptop", "apple", "desktop", "cloud"]);
    for k in kinds {
        for f in [
            "machine",
            "name",
            "reason",
            "price_usd",
            "price_per",
            "verdict",
            "tokens_per_s",
            "usd_per_million_tokens",
            "picks",
            "unmet",
        ] {
            assert!(k.get(f).is_some(), "{f} in {k}");
        }
        assert!(k["machine"].is_string(), "{k}");
        assert!(k["reason"].as_str().unwrap().contains("tok/s"), "{k}");
    }
    // This machine is detected: its verdict and, unless it already runs it on the GPU, the
    // changes that would.
    let t = &v["this_machine"];
    assert_eq!(t["machine"], "local");
    assert!(t["verdict"].is_string() && t["summary"].is_string());
    if !matches!(t["verdict"].as_str(), Some("gpu" | "unified")) {
        assert!(!t["upgrades"].as_array().unwrap().is_empty(), "{t}");
    }
}

#[test]
fn recommend_says_what_would_have_to_give() {
    let o = headroom(&[
        "recommend",
        "--model",
        "llama-3.1-70b",
        "--weights",
        "q4_k_m",
        "--budget",
        "500",
        "--kind",
        "apple",
        "--no-detect",
    ]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("! nothing fits under $500; the cheapest is "),
        "{out}"
    );
    assert!(!out.contains("This machine"), "{out}");
    fails_with(&["recommend", "--kind", "phone"], "--kind");
    fails_with(&["recommend", "--budget", "-5"], "--budget");
}

#[test]
fn report_defaults_to_this_machine_and_the_picks() {
    let o = headroom(&[
        "report",
        "--model",
        "llama-3-8b",
        "--weights",
        "q4_k_m",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let fits: Vec<&str> = v["fits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["machine"].as_str().unwrap())
        .collect();
    assert_eq!(fits[0], "local");
    let picks: Vec<&str> = v["recommendations"]["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|k| k["machine"].as_str())
        .collect();
    assert!(!picks.is_empty());
    for p in &picks {
        assert!(fits.contains(p), "{p} not in {fits:?}");
    }
    assert!(fits.len() < 20, "not the whole catalog: {}", fits.len());
}

/// `cluster --ep`: a mixture of experts gets the expert-parallel layout in JSON (`ep`,
/// `step.expert_parallel_s`) and the Megatron launch line carries
/// `--expert-model-parallel-size`; a dense model or an EP that does not divide the experts is a
/// one-line usage error naming --ep.
#[test]
fn cluster_expert_parallel_flag() {
    let base = [
        "cluster",
        "--model",
        "mixtral-8x7b",
        "--mode",
        "full",
        "--framework",
        "deepspeed",
        "--machine",
        "aws-p5-48xlarge",
        "--nodes",
        "2",
        "--context",
        "4096",
    ];
    let mut args = base.to_vec();
    args.extend(["--ep", "8", "--json"]);
    let v = json(&args);
    let t = &v[0]["curve"][0]["train"];
    assert_eq!(t["ep"], 8, "{t}");
    assert!(
        t["step"]["expert_parallel_s"].as_f64().unwrap() > 0.0,
        "{t}"
    );
    let mut args = base.to_vec();
    args.extend(["--ep", "8", "--launch"]);
    let o = headroom(&args);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{text}");
    assert!(
        text.contains("--expert-model-parallel-size 8") && text.contains("--num-experts 8"),
        "{text}"
    );
    fails_with(
        &[
            "cluster",
            "--model",
            "llama-3-70b",
            "--mode",
            "full",
            "--ep",
            "2",
        ],
        "--ep 2: expert parallelism needs a mixture-of-experts model",
    );
    fails_with(
        &[
            "cluster",
            "--model",
            "mixtral-8x7b",
            "--mode",
            "full",
            "--ep",
            "16",
        ],
        "--ep 16: must divide the model's 8 routed experts",
    );
}
