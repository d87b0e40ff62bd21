//! Speculative decoding: the drafter's memory (worked out by hand), the speed it buys on
//! published runs, and the CLI flags that turn it on.

use headroom::core::WeightPrecision;
use headroom::core::estimate::{ComponentKind, estimate};
use headroom::core::fit::{FitResult, FitSettings, fit_all};
use headroom::core::model::ModelSpec;
use headroom::core::scenario::{Runtime, Scenario};
use headroom::core::speculative::{SpecMethod, SpeculativeInputs, draft_spec};
use headroom::io::catalog::builtin;
use std::process::Command;

fn preset(id: &str) -> ModelSpec {
    builtin().model(id).unwrap().spec.clone()
}

fn fit_on(s: &Scenario, machine: &str) -> FitResult {
    let cat = builtin();
    let m = cat.machine(machine).unwrap();
    fit_all(s, [m], cat, &FitSettings::default()).remove(0)
}

fn draft_bytes(s: &Scenario) -> (u64, u64) {
    let e = estimate(s);
    let by = |k: ComponentKind| {
        e.components
            .iter()
            .filter(|c| c.kind == k && c.name.starts_with("Draft"))
            .map(|c| c.bytes.0)
            .sum::<u64>()
    };
    (by(ComponentKind::Weights), by(ComponentKind::KvCache))
}

#[test]
fn deepseek_v3_mtp_module_is_11_5b_unique_parameters() {
    // deepseek-ai/DeepSeek-V3 README_WEIGHTS.md: "MTP modules: 11.5B unique parameters,
    // excluding the shared 0.9B Embedding and 0.9B output Head" (14B with them, 685B in all).
    let target = preset("deepseek-v3");
    let mtp = SpeculativeInputs {
        method: SpecMethod::Mtp,
        ..SpeculativeInputs::default()
    };
    let d = draft_spec(&target, &mtp).unwrap();
    let all = d.spec.param_count().total + d.extra_params;
    // Embedding and head: 2 × 129,280 × 7,168 = 1,853,358,080.
    let unique = all - 2 * 129_280 * 7_168;
    let err = unique as f64 / 11.5e9 - 1.0;
    assert!(err.abs() < 0.02, "MTP unique params {unique} ({err:+.3})");
    assert!((13.0e9..14.5e9).contains(&(all as f64)), "{all}");
}

/// The MTP drafter of DeepSeek-V3 holds its one decoder layer and projection, not the copies of
/// the embedding and head its checkpoint stores: vLLM (`vllm/v1/spec_decode/eagle.py`
/// `load_model`: "Detected MTP model. Sharing target model embedding weights with the draft
/// model") and SGLang (`EAGLEWorker`, `set_embed_and_head`) bind the target's. By hand: one MoE
/// layer (MLA 187,107,328 + norms 14,336 + 256 experts × 44,040,192 + router 7168 × 256 + its
/// bias 256 + a shared expert 44,040,192 = 11,507,286,272) + eh_proj 2 × 7168² and enorm /
/// hnorm 2 × 7168 (102,774,784) + the final norm 7,168 = 11,610,068,224 parameters (DeepSeek:
/// "11.5B unique"), in FP8 blocks about 11.6 GB; the 2 × 129,280 × 7,168 BF16 embedding and
/// head (3,706,716,160 B) are not among them.
#[test]
fn deepseek_v3_mtp_drafter_shares_the_targets_embedding_and_head() {
    let s = Scenario {
        model: preset("deepseek-v3"),
        weights: WeightPrecision::Fp8Block,
        speculative: Some(SpeculativeInputs {
            method: SpecMethod::Mtp,
            ..SpeculativeInputs::default()
        }),
        ..Scenario::default()
    };
    let (w, kv) = draft_bytes(&s);
    let err = w as f64 / 11.61e9 - 1.0;
    assert!(err.abs() < 0.02, "MTP drafter weights {w} ({err:+.3})");
    assert!(
        w < 12_000_000_000,
        "the embedding and head are not stored twice: {w}"
    );
    // Its one MLA layer caches (512 + 64) × 2 B per token: 1,152 B × 8,192 tokens.
    assert_eq!(kv, 1_152 * 8_192);
}

#[test]
fn an_eagle3_head_for_llama_3_8b_is_one_layer_a_fusion_and_a_32k_head() {
    // One Llama-3-8B layer 218,112,000 (norms included) + the output head over the 32,000-token
    // draft vocabulary 32,000 × 4,096 = 131,072,000 + its final norm 4,096 + q/k/v reading 2h
    // (4,096 more input columns × (4,096 + 2 × 1,024) = 25,165,824) + fc 3 × 4,096² = 50,331,648
    // = 424,685,568 parameters, 849,371,136 bytes in BF16.
    let s = Scenario {
        speculative: Some(SpeculativeInputs {
            method: SpecMethod::Eagle3,
            ..SpeculativeInputs::default()
        }),
        ..Scenario::default()
    };
    let (w, kv) = draft_bytes(&s);
    assert_eq!(w, 849_371_136);
    // One layer of KV at 8,192 tokens: 2 × 8 × 128 × 2 B × 8,192 = 33,554,432 bytes (the
    // contiguous cache, padded to 256 — 8,192 already is).
    assert_eq!(kv, 33_554_432);
    // The drafter's bytes are in the totals the fit reads.
    let plain = estimate(&Scenario::default());
    assert_eq!(
        estimate(&s).per_gpu_total().0 - plain.per_gpu_total().0,
        w + kv
    );
}

#[test]
fn a_draft_model_costs_its_own_weights_and_cache() {
    // Qwen2.5-0.5B drafting for Qwen2.5-32B, both Q4_K_M in llama.cpp: the draft's own estimate.
    let draft = preset("qwen2.5-0.5b");
    let s = Scenario {
        model: preset("qwen2.5-32b"),
        weights: WeightPrecision::Q4KM,
        speculative: Some(SpeculativeInputs {
            draft: Some(draft.clone()),
            ..SpeculativeInputs::default()
        }),
        ..Scenario::default()
    };
    let alone = estimate(&Scenario {
        model: draft,
        weights: WeightPrecision::Q4KM,
        ..Scenario::default()
    });
    let (w, kv) = draft_bytes(&s);
    assert_eq!(w, alone.kind_total(ComponentKind::Weights).0);
    assert_eq!(kv, alone.kind_total(ComponentKind::KvCache).0);
}

#[test]
fn deepseek_v3_mtp_gives_about_1_8x_decode() {
    // DeepSeek-V3 technical report (arXiv:2412.19437) §5.4.3: with one MTP module and 85–90 %
    // of second tokens accepted, "1.8 times TPS". Our run: FP8 on 8× H200 with vLLM, batch 1.
    let mut s = Scenario {
        model: preset("deepseek-v3"),
        weights: WeightPrecision::Fp8Block,
        runtime: Runtime::Vllm,
        gpus: 8,
        context: 8192,
        ..Scenario::default()
    };
    let plain = fit_on(&s, "aws-p5e-48xlarge");
    s.speculative = Some(SpeculativeInputs {
        method: SpecMethod::Mtp,
        ..SpeculativeInputs::default()
    });
    let r = fit_on(&s, "aws-p5e-48xlarge");
    let sp = r.speculative.as_ref().expect("speculative speed");
    assert_eq!((sp.draft_tokens, sp.acceptance), (1, 0.85));
    assert!((sp.plain_decode_tokens_per_s - plain.decode_tokens_per_s).abs() < 1e-9);
    assert!(
        (1.8 * 0.8..=1.8 * 1.2).contains(&sp.speedup),
        "MTP speed-up {:.2} (published 1.8)",
        sp.speedup
    );
    assert_eq!(r.decode_tokens_per_s, sp.decode_tokens_per_s);
}

#[test]
fn a_big_draft_with_low_acceptance_is_slower_and_says_so() {
    // Llama 3.1 8B drafting for Llama 3.1 70B at α = 0.3: the drafter's steps cost more than
    // the few accepted tokens save.
    let s = Scenario {
        model: preset("llama-3.1-70b"),
        weights: WeightPrecision::Q4KM,
        speculative: Some(SpeculativeInputs {
            draft: Some(preset("llama-3.1-8b")),
            acceptance: Some(0.3),
            ..SpeculativeInputs::default()
        }),
        ..Scenario::default()
    };
    let r = fit_on(&s, "aws-p5e-48xlarge");
    assert!(r.speculative.as_ref().unwrap().speedup < 1.0, "{r:?}");
}

fn headroom(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_headroom"))
        .args(args)
        .env(
            "XDG_CONFIG_HOME",
            std::env::temp_dir().join("headroom-cli-test-no-user-catalogs"),
        )
        .output()
        .unwrap()
}

#[test]
fn the_cli_turns_it_on_and_names_bad_input() {
    let o = headroom(&[
        "fit",
        "--model",
        "qwen2.5-32b",
        "--weights",
        "q4_k_m",
        "--draft",
        "qwen2.5-0.5b",
        "--draft-tokens",
        "8",
        "--machine",
        "desktop-rtx4090-64gb",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let text = v.to_string();
    assert!(text.contains("\"speculative\""), "{text}");
    assert!(text.contains("\"draft_tokens\":8"), "{text}");
    // MTP on a model without MTP layers: one line naming the flag.
    let o = headroom(&["estimate", "--model", "llama-3-8b", "--speculative", "mtp"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--speculative mtp") && err.lines().count() == 1,
        "{err}"
    );
    // A draft that is neither a preset nor a file.
    let o = headroom(&["estimate", "--model", "llama-3-8b", "--draft", "nope-7b"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--draft nope-7b"));
    // Another tokenizer.
    let o = headroom(&[
        "estimate",
        "--model",
        "llama-3-8b",
        "--draft",
        "qwen2.5-0.5b",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("vocabulary"));
    // Out-of-range values.
    let o = headroom(&["estimate", "--acceptance", "1.5", "--speculative", "eagle3"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn launch_settings_and_the_report_carry_the_drafter() {
    let o = headroom(&[
        "report",
        "--model",
        "qwen2.5-32b",
        "--weights",
        "q4_k_m",
        "--draft",
        "qwen2.5-0.5b",
        "--machine",
        "desktop-rtx4090-64gb",
        "--format",
        "markdown",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("Speculative decoding") && text.contains("5 tokens drafted per step"),
        "{text}"
    );
    assert!(
        text.contains("-md DRAFT.gguf -ngld 999 --draft-max 5"),
        "{text}"
    );
    assert!(
        text.contains(
            r#"--speculative-config '{"model": "qwen2.5-0.5b", "num_speculative_tokens": 5}'"#
        ),
        "{text}"
    );
}
