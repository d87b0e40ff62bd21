//! `headroom serve` and the serving options on the other commands: JSON fields, the table, the
//! asked load, bad input. Runs the real binary.

use serde_json::Value;
use std::process::{Command, Output};

fn headroom(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_headroom"))
        .args(args)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env(
            "XDG_CONFIG_HOME",
            std::env::temp_dir().join("headroom-serve-test-no-user-catalogs"),
        )
        .env(
            "HEADROOM_CONFIG_DIR",
            std::env::temp_dir().join("headroom-serve-test-no-calibration"),
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
    serde_json::from_slice(&o.stdout).expect("json")
}

#[test]
fn serve_json_contract() {
    let v = json(&[
        "serve",
        "--model",
        "llama-3-8b",
        "--machine",
        "p5.48xlarge",
        "--machine",
        "desktop-rtx4090-64gb",
        "--json",
    ]);
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for r in rows {
        for k in [
            "machine",
            "name",
            "kind",
            "engine",
            "servable",
            "blocker",
            "tp",
            "replicas_per_machine",
            "settings",
            "kv_pool",
            "max_seqs_at_context",
            "slots",
            "single_user",
            "users_at_target",
            "machine_users_at_target",
            "at_target",
            "asked",
            "cost",
            "curve",
        ] {
            assert!(r.get(k).is_some(), "missing {k} in {r}");
        }
        assert_eq!(r["servable"], true, "{r}");
        assert_eq!(r["engine"], "vllm");
        let pool = &r["kv_pool"];
        // The pool is what the budget leaves: budget − weights − activations − runtime.
        let b = |k: &str| pool[k].as_u64().unwrap();
        assert_eq!(
            b("kv_bytes"),
            b("budget_bytes") - b("weights_bytes") - b("activations_bytes") - b("runtime_bytes")
        );
        assert_eq!(b("tokens"), b("blocks") * 16);
        assert_eq!(r["cost"]["basis"], "target");
        // At the target the per-user speed meets 20 tok/s and TTFT p95 2 s.
        let t = &r["at_target"];
        assert!(t["tokens_per_s_per_user"].as_f64().unwrap() >= 20.0, "{t}");
        assert!(t["ttft_p95_s"].as_f64().unwrap() <= 2.0, "{t}");
        assert!(r["asked"].is_null());
    }
    // 8 H100s hold more users than one RTX 4090.
    let users = |i: usize| rows[i]["machine_users_at_target"].as_u64().unwrap();
    let (h100, rtx) = if rows[0]["machine"] == "aws-p5-48xlarge" {
        (0, 1)
    } else {
        (1, 0)
    };
    assert!(
        users(h100) > 10 * users(rtx),
        "{} vs {}",
        users(h100),
        users(rtx)
    );
}

#[test]
fn serve_asked_load_needs_replicas() {
    let v = json(&[
        "serve",
        "--model",
        "llama-3-8b",
        "--mix",
        "chat",
        "--users",
        "5000",
        "--machine",
        "desktop-rtx4090-64gb",
        "--json",
    ]);
    let a = &v[0]["asked"];
    assert_eq!(a["users"], 5000);
    let per = v[0]["users_at_target"].as_u64().unwrap();
    assert_eq!(a["replicas"].as_u64().unwrap(), 5000_u64.div_ceil(per));
    assert_eq!(a["machines"], a["replicas"]);
    assert_eq!(a["meets_target"], true);
    assert_eq!(v[0]["cost"]["basis"], "asked");
}

#[test]
fn fit_adds_the_served_cost_and_recommend_the_serving_picks() {
    let v = json(&[
        "fit",
        "--model",
        "llama-3.1-70b",
        "--runtime",
        "vllm",
        "--machine",
        "p5.48xlarge",
        "--json",
    ]);
    let one = v[0]["usd_per_million_tokens"].as_f64().unwrap();
    let served = v[0]["serving"]["usd_per_million_output"].as_f64().unwrap();
    // One user on 8 H100s pays for the whole node: dozens of times a served token.
    assert!(one > 20.0 * served, "{one} vs {served}");
    let r = json(&[
        "recommend",
        "--model",
        "llama-3-8b",
        "--users",
        "200",
        "--no-detect",
        "--kind",
        "cloud",
        "--json",
    ]);
    assert!(r["cloud_cost_load"].as_str().unwrap().contains("200 users"));
    let c = &r["serving"]["cloud"];
    assert!(c["machines"].as_u64().unwrap() >= 1, "{r}");
    assert_eq!(c["price_per"], "hourly");
}

#[test]
fn serve_table_and_launch_line() {
    let o = headroom(&[
        "serve",
        "--model",
        "qwen2.5-7b",
        "--machine",
        "desktop-rtx4090-64gb",
        "--launch",
    ]);
    assert!(o.status.success());
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(t.starts_with("Traffic: prompt 1,024 tokens"), "{t}");
    assert!(t.contains("vllm serve MODEL"), "{t}");
    assert!(t.contains("--max-num-seqs"), "{t}");
}

#[test]
fn bad_serving_input_is_one_line_naming_the_flag() {
    for (args, flag) in [
        (vec!["serve", "--users", "0"], "--users"),
        (vec!["serve", "--prefix-share", "1.5"], "--prefix-share"),
        (vec!["serve", "--ttft", "soon"], "--ttft"),
        (vec!["serve", "--rate", "-3"], "--rate"),
        (vec!["serve", "--mix", "banter"], "--mix"),
        (vec!["serve", "--users", "5", "--rate", "2"], "--users"),
        (vec!["fit", "--engine", "tgi"], "--engine"),
    ] {
        let o = headroom(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(flag), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// `serve --speculative`: the plan's `speculative` object (added fields) and the line under the
/// table; without speculation the field is null.
#[test]
fn serve_speculative_fields() {
    let args = [
        "serve",
        "--model",
        "llama-3.1-8b",
        "--machine",
        "aws-p5-4xlarge",
        "--json",
    ];
    let v = json(&args);
    assert!(v[0]["speculative"].is_null(), "{}", v[0]["speculative"]);
    let mut with = args.to_vec();
    with.extend(["--speculative", "eagle3"]);
    let v = json(&with);
    let x = &v[0]["speculative"];
    assert_eq!(x["method"], "eagle3");
    assert_eq!(x["draft_tokens"], 3);
    assert_eq!(x["tokens_per_step"], 2.7344);
    // The EAGLE-3 head of Llama 3.1 8B in BF16 and its one layer's KV (tests/serving_speculative.rs).
    assert_eq!(x["draft_weights_bytes"], 849_371_136_u64);
    assert_eq!(x["draft_kv_bytes_per_token"], 4096);
    let one = x["speedup_one_user"].as_f64().unwrap();
    let at = x["speedup_at_target"].as_f64().unwrap();
    assert!(one > 2.0 && at < one, "{one} {at}");
    assert!(x["users_at_target_without"].as_u64().unwrap() > 0);
    let text = headroom(&[
        "serve",
        "--model",
        "llama-3.1-8b",
        "--machine",
        "aws-p5-4xlarge",
        "--speculative",
        "eagle3",
        "--launch",
    ]);
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(out.contains("Speculative decoding on "), "{out}");
    assert!(out.contains("--speculative-config"), "{out}");
    // The report's serving section says it too.
    let r = headroom(&[
        "report",
        "--model",
        "llama-3.1-8b",
        "--machine",
        "aws-p5-4xlarge",
        "--speculative",
        "eagle3",
        "--format",
        "markdown",
    ]);
    let md = String::from_utf8_lossy(&r.stdout);
    let serving = md.split("## Serving many users").nth(1).unwrap_or("");
    assert!(serving.contains("Speculative decoding on "), "{md}");
}
