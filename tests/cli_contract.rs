//! The command line's self-description and JSON conventions: every option has
//! help and its possible values, presets are listable, the report format follows `-o`, and every
//! JSON output uses bytes, lowercase kinds, flat prices and `null` for what does not apply.

use serde_json::Value;
use std::process::{Command, Output};

fn headroom(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_headroom"))
        .args(args)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env(
            "XDG_CONFIG_HOME",
            std::env::temp_dir().join("headroom-cli-contract-no-user-catalogs"),
        )
        .output()
        .expect("run headroom")
}

fn stdout(args: &[&str]) -> String {
    let o = headroom(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn json(args: &[&str]) -> Value {
    serde_json::from_str(&stdout(args)).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

#[test]
fn estimate_help_is_complete() {
    let help = stdout(&["estimate", "--help"]);
    // Every option is followed by its help line; the enumerated ones list their values.
    let lines: Vec<&str> = help.lines().collect();
    let mut options = 0;
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        if t.starts_with("--") || t.starts_with("-h,") {
            options += 1;
            let next = lines.get(i + 1).map_or("", |n| n.trim());
            assert!(!next.is_empty(), "no help for {t}");
        }
    }
    assert!(options >= 30, "{options} options in\n{help}");
    for (opt, value) in [
        ("--weights", "q4_k_m"),
        ("--kv", "q8_0"),
        ("--mode", "qlora"),
        ("--runtime", "llama.cpp"),
        ("--offload", "optimizer+params"),
        ("--kv-alloc", "paged"),
        ("--flash-attention", "off"),
        ("--zero", "3"),
        ("--framework", "deepspeed"),
    ] {
        let at = help
            .find(&format!("{opt} <"))
            .unwrap_or_else(|| panic!("{opt}"));
        let section = &help[at..];
        let end = section[2..]
            .find("\n      --")
            .map_or(section.len(), |e| e + 2);
        assert!(
            section[..end].to_lowercase().contains("possible values")
                && section[..end].contains(value),
            "{opt}: {}",
            &section[..end]
        );
    }
    // --model points at a command that exists.
    assert!(help.contains("headroom catalog models"));
}

#[test]
fn catalog_models_lists_the_presets() {
    let v = json(&["catalog", "models", "--json"]);
    let presets = v.as_array().unwrap();
    assert!(presets.len() >= 40, "{}", presets.len());
    let l3 = presets
        .iter()
        .find(|p| p["id"] == "llama-3-8b")
        .expect("llama-3-8b");
    // Llama 3 8B's published parameter count (meta-llama/Meta-Llama-3-8B safetensors metadata).
    assert_eq!(l3["params"], 8_030_261_248u64);
    assert_eq!(l3["layers"], 32);
    let table = stdout(&["catalog", "models"]);
    for p in presets {
        let id = p["id"].as_str().unwrap();
        assert!(
            table.lines().any(|l| l.starts_with(&format!("{id} "))),
            "{id}"
        );
    }
}

#[test]
fn report_format_follows_the_file_extension() {
    let d = tempfile::tempdir().unwrap();
    for (file, starts) in [
        ("r.html", "<!DOCTYPE html>"),
        ("r.json", "{"),
        ("r.md", "# "),
    ] {
        let p = d.path().join(file);
        let out = p.to_str().unwrap();
        let o = headroom(&[
            "report",
            "--model",
            "llama-3-8b",
            "--machine",
            "desktop-rtx4090-64gb",
            "-o",
            out,
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        // The status line goes to stderr; stdout stays empty (it is not the report).
        let msg = String::from_utf8_lossy(&o.stderr);
        assert!(msg.contains(out) && msg.contains("Wrote"), "{msg}");
        assert!(o.stdout.is_empty());
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.starts_with(starts), "{file}: {}", &text[..40]);
    }
    // --format against the extension is refused before anything is written; a name without a
    // known extension takes --format.
    let p = d.path().join("forced.md");
    let o = headroom(&[
        "report",
        "--model",
        "llama-3-8b",
        "--machine",
        "desktop-rtx4090-64gb",
        "--format",
        "json",
        "-o",
        p.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("forced.md"));
    assert!(!p.exists());
    let p = d.path().join("forced.txt");
    headroom(&[
        "report",
        "--model",
        "llama-3-8b",
        "--machine",
        "desktop-rtx4090-64gb",
        "--format",
        "json",
        "-o",
        p.to_str().unwrap(),
    ]);
    assert!(std::fs::read_to_string(&p).unwrap().starts_with('{'));
    // An extension that names no format is an error naming the file, and nothing is written.
    let bad = d.path().join("r.pdf");
    let o = headroom(&[
        "report",
        "--model",
        "llama-3-8b",
        "-o",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("r.pdf") && err.lines().count() == 1, "{err}");
    assert!(!bad.exists());
}

#[test]
fn catalog_list_json_uses_the_common_convention() {
    let v = json(&["catalog", "list", "--json"]);
    for m in v.as_array().unwrap() {
        assert!(m["ram"].is_u64(), "{m}");
        let kind = m["kind"].as_str().unwrap();
        assert_eq!(kind, kind.to_ascii_lowercase());
        if !m["gpu"].is_null() {
            assert!(m["gpu_memory"].is_u64(), "{m}");
        }
        match &m["price"] {
            Value::Null => {}
            p => {
                assert!(["hourly", "purchase"].contains(&p["kind"].as_str().unwrap()));
                assert!(p["usd"].as_f64().unwrap() >= 0.0);
            }
        }
    }
}

#[test]
fn fit_json_speeds_are_null_where_nothing_runs() {
    let v = json(&[
        "fit",
        "--model",
        "llama-3-70b",
        "--weights",
        "q4_k_m",
        "--kind",
        "laptop",
        // vLLM has no disk tier, so the small laptops still get "none".
        "--runtime",
        "vllm",
        "--json",
    ]);
    let rows = v.as_array().unwrap();
    let (none, runs): (Vec<&Value>, Vec<&Value>) =
        rows.iter().partition(|r| r["verdict"] == "none");
    assert!(!none.is_empty() && !runs.is_empty());
    for r in none {
        for k in ["decode_tokens_per_s", "prefill_tokens_per_s", "ttft_s"] {
            assert!(r[k].is_null(), "{k}: {r}");
        }
    }
    for r in runs {
        for k in ["decode_tokens_per_s", "prefill_tokens_per_s", "ttft_s"] {
            assert!(r[k].as_f64().unwrap() > 0.0, "{k}: {r}");
        }
    }
}

#[test]
fn enumerated_values_keep_their_old_spellings_and_reject_others() {
    // Case, blanks and the aliases the hand-written parsers accepted still work.
    for args in [
        ["--weights", "Q4_K_M"],
        ["--weights", "q4-k-m"],
        ["--weights", "nf4_dq"],
        ["--runtime", "llamacpp"],
        ["--flash-attention", "yes"],
        ["--kv", "q8_0/q4_0"],
    ] {
        let mut a = vec!["estimate", "--json"];
        a.extend(args);
        json(&a);
    }
    for (opt, bad) in [("--flash-attention", "maybe"), ("--mode", "pretrain")] {
        let o = headroom(&["estimate", opt, bad]);
        assert_eq!(o.status.code(), Some(2), "{opt}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(opt) && err.lines().count() == 1, "{err}");
    }
}
