//! The quality table (`catalogs/quality.ron`) against its sources, the i-quant sizes against
//! llama.cpp's scoreboard, the carry-over rule, the best-quality solver on hand-checked cases,
//! and the `--max-kld` flag's errors.

use headroom::core::WeightPrecision as W;
use headroom::core::estimate::{ComponentKind, estimate};
use headroom::core::fit::{FitSettings, solve_best_quality};
use headroom::core::precision::{KvPrecision, KvTypes};
use headroom::core::quality::{Basis, Quality, QualityKind};
use headroom::core::scenario::Scenario;
use headroom::io::catalog::{builtin, parse_quality, quality};
use std::process::Command;

fn llama3_8b(p: W) -> Scenario {
    Scenario {
        model: builtin().model("llama-3-8b").expect("preset").spec.clone(),
        model_id: Some("llama-3-8b".into()),
        weights: p,
        context: 8192,
        ..Scenario::default()
    }
}

fn kld(p: W) -> f64 {
    quality().of_weights(&llama3_8b(p)).kld().expect("measured")
}

#[test]
fn golden_rows_match_the_published_tables() {
    let t = quality();
    let row = |id: &str| {
        t.quality
            .iter()
            .find(|r| r.id == id)
            .unwrap_or_else(|| panic!("row {id}"))
    };
    // llama.cpp tools/perplexity/README.md, "LLaMA 3 8b Scoreboard" (revision f364eb6f):
    // "| q4_K_M | None | 4.58 | 6.407115 ± … | 0.175482 ± … | 0.031273 ± … |".
    let r = row("l3-8b-q4_k_m");
    assert_eq!(
        (r.kld, r.delta_ppl, r.ppl, r.size_gib),
        (Some(0.031273), Some(0.175482), Some(6.407115), Some(4.58))
    );
    // "| iq4_XS | WT 10m | 4.14 | … | 0.228071 | 0.036334 |".
    let r = row("l3-8b-iq4_xs");
    assert_eq!((r.kld, r.delta_ppl), (Some(0.036334), Some(0.228071)));
    assert_eq!(r.imatrix.as_deref(), Some("WT 10m"));
    // "| iq2_XXS | WT 10m | 2.24 | 14.091782 | 7.860148 | 0.812022 |".
    assert_eq!(row("l3-8b-iq2_xxs").kld, Some(0.812022));
    // Same file, "LLaMA 2 vs. LLaMA 3" table: L3 8b q8_0 Same top p 97.674 %, KLD 0.001355.
    let r = row("l3-8b-q8_0");
    assert_eq!((r.kld, r.same_top_pct), (Some(0.001355), Some(97.674)));
    // L2 7b q4_K_M: Mean KLD 0.012686, Same top p 94.665 %.
    let r = row("l2-7b-q4_k_m");
    assert_eq!((r.kld, r.same_top_pct), (Some(0.012686), Some(94.665)));
    // L3 70b q4_K_M: Mean KLD 0.055418 (the 70B comparison of PR #6936's revision).
    assert_eq!(row("l3-70b-q4_k_m").kld, Some(0.055418));
    // PR #7412: "| f16/q8_0/q8_0 | 8.50 | None | 6.234369 | 0.004616 | 0.000980 |".
    let r = row("l3-8b-kv-q8_0");
    assert_eq!(r.kind, QualityKind::Kv);
    assert_eq!((r.kld, r.delta_ppl), (Some(0.000980), Some(0.004616)));
    // Every row cites a source and states model, metric baseline, dataset and (for KLD rows,
    // measured over chunks of text) context; a benchmark suite has no context.
    for r in &t.quality {
        assert!(!r.source.is_empty() && !r.detail.is_empty(), "{}", r.id);
        assert!(!r.dataset.is_empty(), "{}", r.id);
        match r.recovery_pct {
            None => assert!(r.context.is_some_and(|c| c > 0), "{}", r.id),
            Some(_) => assert!(r.context.is_none() && r.kld.is_none(), "{}", r.id),
        }
    }
}

#[test]
fn the_built_in_table_validates_and_bad_rows_are_named() {
    assert!(!quality().quality.is_empty());
    let bad = r#"(quality: [(
        id: "x", kind: Weights, precision: "q9_z", model: "llama-3-8b", model_name: "L",
        params_b: 8.0, baseline: "FP16", kld: -1.0, dataset: "d", context: 512,
        source: "", detail: "d",
    )])"#;
    let e = parse_quality("bad.ron", bad).unwrap_err().to_string();
    assert!(e.contains("bad.ron:2:9:"), "{e}");
    assert!(e.contains("unknown precision 'q9_z'"), "{e}");
    assert!(e.contains("source is empty"), "{e}");
    assert!(e.contains("kld must be finite"), "{e}");
}

#[test]
fn i_quant_sizes_match_the_scoreboard() {
    // The scoreboard's "Model size [GiB]" column (file sizes: a few MiB of metadata more).
    for r in quality()
        .quality
        .iter()
        .filter(|r| r.model == "llama-3-8b" && r.kind == QualityKind::Weights)
    {
        let (Some(size), Some(p)) = (r.size_gib, W::from_cli(&r.precision)) else {
            continue;
        };
        let gib = estimate(&llama3_8b(p))
            .kind_total(ComponentKind::Weights)
            .as_gib();
        assert!((gib - size).abs() < 0.02, "{}: {gib} vs {size}", r.id);
    }
}

#[test]
fn quality_worsens_with_fewer_bits_within_a_family() {
    let families: [&[W]; 3] = [
        &[W::Q8_0, W::Q6K, W::Q5KM, W::Q4KM, W::Q3KM, W::Q2K],
        &[W::Q5_0, W::Q4_0],
        &[W::Iq4Xs, W::Iq3M, W::Iq3Xxs, W::Iq2M, W::Iq2Xs, W::Iq2Xxs],
    ];
    let bits = |p: W| {
        estimate(&llama3_8b(p))
            .kind_total(ComponentKind::Weights)
            .as_gib()
    };
    for f in families {
        for pair in f.windows(2) {
            assert!(bits(pair[1]) < bits(pair[0]), "{:?}", pair);
            assert!(kld(pair[1]) > kld(pair[0]), "{:?}", pair);
        }
    }
    // Measured models too: Q8_0 < Q6_K < Q4_K_M < Q2_K on every model of the comparison.
    for m in ["llama-2-7b", "llama-2-70b", "llama-3-70b"] {
        let k = |p: W| quality().weights(p, Some(m), 1).kld().unwrap();
        assert!(k(W::Q8_0) < k(W::Q6K) && k(W::Q6K) < k(W::Q4KM) && k(W::Q4KM) < k(W::Q2K));
    }
}

#[test]
fn carry_over_is_marked_and_conservative() {
    let t = quality();
    // Measured on the preset itself.
    let q = t.of_weights(&llama3_8b(W::Q4KM));
    assert!(matches!(
        q,
        Quality::Figure {
            basis: Basis::Measured,
            ..
        }
    ));
    // Llama 3.1 8B: not measured; of the small models (Llama 2 7B 0.0127, Llama 3 8B 0.0313) the
    // worse one.
    let s = Scenario {
        model_id: Some("llama-3.1-8b".into()),
        ..llama3_8b(W::Q4KM)
    };
    match t.of_weights(&s) {
        Quality::Figure { row, basis } => {
            assert_eq!(basis, Basis::CarriedOver("LLaMA 3 8B".into()));
            assert_eq!(row.kld, Some(0.031273));
        }
        q => panic!("{q:?}"),
    }
    // A 32B model takes the large class (Llama 3 70B 0.0554 over Llama 2 70B 0.0132).
    assert_eq!(
        t.weights(W::Q4KM, None, 32_000_000_000).kld(),
        Some(0.055418)
    );
    // The i-quants were measured on Llama 3 8B only: carried from there for any size.
    assert_eq!(
        t.weights(W::Iq4Xs, None, 70_000_000_000).kld(),
        Some(0.036334)
    );
    // Without an imatrix row, the imatrix one; with both, the one without (Q2_K: 0.445).
    assert_eq!(kld(W::Q2K), 0.445132);
    // Nothing published for NF4 without double quant: unmeasured, never within a floor.
    let nf4 = t.of_weights(&llama3_8b(W::Nf4));
    assert_eq!(nf4, Quality::Unmeasured);
    assert!(!nf4.within(Some(10.0)));
    // KV: 16-bit is the reference; q8_0 measured on Llama 3 8B; q4_0 not published.
    let kv = |k: KvPrecision| {
        t.of_kv(&Scenario {
            kv: KvTypes::same(k),
            ..llama3_8b(W::Q4KM)
        })
    };
    assert_eq!(kv(KvPrecision::Fp16), Quality::Reference);
    assert_eq!(kv(KvPrecision::Q8_0).kld(), Some(0.000980));
    // Q4_0: no KLD anywhere; carried over as the MMLU recovery measured on Gemma 3 4B (PR #21551).
    assert_eq!(kv(KvPrecision::Q4_0).recovery(), Some(99.16));
}

#[test]
fn the_solver_picks_the_best_quality_that_fits() {
    let cat = builtin();
    let st = FitSettings::default();
    let t = quality();
    let on = |m: &str, s: &Scenario, max: Option<f64>| {
        solve_best_quality(s, cat.machine(m).unwrap(), cat, &st, t, max).map(|(p, _)| p)
    };
    let s = llama3_8b(W::Fp16);
    // 8 GiB laptop GPU, 8K context, FP16 KV (1.00 GiB): Q8_0 needs 7.95 + 1.00 + buffers =
    // 9.51 GiB (no); Q6_K 6.14 + 1.00 + buffers = 7.70 GiB (yes). BF16 (16.5 GiB) no.
    assert_eq!(on("laptop-rtx4060-16gb", &s, None), Some(W::Q6K));
    // 12 GiB: Q8_0 (9.51 GiB) fits, BF16 does not.
    assert_eq!(on("desktop-rtx3060-32gb", &s, None), Some(W::Q8_0));
    // 24 GiB: the 16-bit model itself (16.5 GiB), BF16 and FP16 equal in quality and size.
    assert!(matches!(
        on("desktop-rtx4090-64gb", &s, None),
        Some(W::Bf16 | W::Fp16)
    ));
    // A floor of "lossless" (KLD ≤ 0.002) on 8 GiB: nothing within it fits.
    assert_eq!(on("laptop-rtx4060-16gb", &s, Some(0.002)), None);
    // Q8_0 KV halves the cache (0.53 GiB): Q8_0 weights still do not fit in 8 GiB (9.0 GiB).
    let q8kv = Scenario {
        kv: KvTypes::same(KvPrecision::Q8_0),
        ..s.clone()
    };
    assert_eq!(on("laptop-rtx4060-16gb", &q8kv, None), Some(W::Q6K));
}

fn headroom(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_headroom"))
        .args(args)
        .env(
            "XDG_CONFIG_HOME",
            std::env::temp_dir().join("headroom-quality-no-user-catalogs"),
        )
        .output()
        .expect("run headroom")
}

#[test]
fn bad_floors_are_one_line_errors_naming_the_flag() {
    for (cmd, v) in [
        ("quality", "-1"),
        ("quality", "superb"),
        ("fit", "-0.5"),
        ("fit", "nan"),
    ] {
        let o = headroom(&[cmd, "--max-kld", v]);
        assert_eq!(o.status.code(), Some(2), "{cmd} {v}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(e.trim().lines().count(), 1, "{e}");
        assert!(e.contains("--max-kld"), "{e}");
    }
}

#[test]
fn the_quality_answer_lists_sizes_quality_and_the_pick() {
    let o = headroom(&[
        "quality",
        "--model",
        "llama-3-8b",
        "--context",
        "8192",
        "--machine",
        "laptop-rtx4060-16gb",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["best"]["precision"], "q6_k");
    let q4 = v["precisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["precision"] == "q4_k_m")
        .unwrap();
    assert_eq!(q4["quality"]["status"], "measured");
    assert_eq!(q4["quality"]["kld"], 0.031273);
    assert!(q4["weights_bytes"].as_u64().unwrap() > 4_000_000_000);
    let text = headroom(&["estimate", "--model", "llama-3-8b", "--weights", "q4_k_m"]);
    let t = String::from_utf8_lossy(&text.stdout);
    assert!(
        t.contains("quality: weights GGUF Q4_K_M: KLD 0.0313 · ΔPPL +0.175"),
        "{t}"
    );
    assert!(t.contains("LLaMA 3 8B, measured"), "{t}");
}

/// What the window's Weights picker and size-vs-quality chart show: each precision's weights as
/// the estimate at that precision counts them, and its quality. An imported file's exact bytes
/// stand only for the precision it stores; another is sized from the architecture, as picking it
/// does (so an 8B BF16 file's Q4_K_M row is 4.58 GiB, not the file's 15 GiB).
#[test]
fn precision_costs_size_each_precision_and_give_its_quality() {
    use headroom::core::model::FileWeights;
    use headroom::core::quality::precision_costs;
    let p = builtin().model("llama-3-8b").unwrap();
    let s = Scenario {
        model: p.spec.clone(),
        model_id: Some(p.id.clone()),
        weights: W::Bf16,
        ..Scenario::default()
    };
    let costs = precision_costs(&s, quality(), &[W::Bf16, W::Q4KM, W::Nf4]);
    assert_eq!(costs.len(), 3);
    let q4 = &costs[1];
    let at_q4 = estimate(&Scenario {
        weights: W::Q4KM,
        ..s.clone()
    })
    .kind_total(ComponentKind::Weights);
    assert_eq!(q4.weights, at_q4);
    assert_eq!(headroom::core::format::bytes(q4.weights), "4.58 GiB");
    assert_eq!(q4.quality.kld(), Some(0.031273));
    assert_eq!(costs[0].quality, Quality::Reference);
    assert_eq!(costs[2].quality, Quality::Unmeasured);
    assert!(
        q4.row_label()
            .ends_with(" · 4.58 GiB · KLD 0.0313 (LLaMA 3 8B, measured)")
    );
    // A BF16 file (1 GiB more than the architecture's tensors, so its bytes are told apart): its
    // bytes for BF16, the architecture's for Q4_K_M.
    let mut f = s.clone();
    f.model.file_weights = Some(FileWeights {
        total_bytes: 16_060_522_496 + (1 << 30),
        params: 8_030_261_248,
        layer_bytes: 13_958_643_712,
        format: "safetensors BF16".into(),
        ..Default::default()
    });
    let fc = precision_costs(&f, quality(), &[W::Bf16, W::Q4KM]);
    assert_eq!(fc[0].weights.0, 16_060_522_496 + (1 << 30));
    assert_eq!(fc[1].weights, at_q4);
}

/// The accuracy-recovery rows against their model cards: the quantised model's benchmark score
/// as a percentage of the unquantised (BF16) model's, as printed, or computed from the two
/// averages the card prints (arithmetic below).
#[test]
fn accuracy_recovery_rows_match_their_model_cards() {
    let t = quality();
    let rec = |id: &str| {
        let r = t
            .quality
            .iter()
            .find(|r| r.id == id)
            .unwrap_or_else(|| panic!("row {id}"));
        assert!(r.kld.is_none() && r.method.is_some(), "{id}");
        assert!(r.source.starts_with("https://huggingface.co/"), "{id}");
        r.recovery_pct.expect("recovery")
    };
    // neuralmagic/Meta-Llama-3-8B-Instruct-FP8: "Average Accuracy 68.71 68.22", "Recovery 100%
    // 99.28%" (68.22 / 68.71 = 99.287 %, printed 99.28).
    assert_eq!(rec("l3-8b-fp8"), 99.28);
    assert!((68.22 / 68.71 * 100.0 - 99.28_f64).abs() < 0.01);
    // neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8: "an average score of 73.44 … whereas the
    // unquantized model achieves 73.79": 73.44 / 73.79 = 99.526 %.
    assert!((rec("l31-8b-fp8") - 73.44 / 73.79 * 100.0).abs() < 0.005);
    // RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8: 84.29 / 84.40 = 99.870 %.
    assert!((rec("l31-70b-fp8") - 84.29 / 84.40 * 100.0).abs() < 0.005);
    // neuralmagic/Meta-Llama-3.1-405B-Instruct-FP8: "an average recovery of 99.81%".
    assert_eq!(rec("l31-405b-fp8"), 99.81);
    // neuralmagic/Meta-Llama-3.1-8B-Instruct-quantized.w8a8: "105.4% recovery for the
    // Arena-Hard evaluation, 100.3% for OpenLLM v1 …, 101.5% for OpenLLM v2, 99.7% for
    // HumanEval pass@1, and 98.8% for HumanEval+ pass@1".
    for (suite, v) in [
        ("arena-hard", 105.4),
        ("openllm-v1", 100.3),
        ("openllm-v2", 101.5),
        ("humaneval", 99.7),
        ("humaneval-plus", 98.8),
    ] {
        assert_eq!(rec(&format!("l31-8b-int8-w8a8-{suite}")), v, "{suite}");
    }
    // …quantized.w4a16: "93.0% … Arena-Hard, 98.9% for OpenLLM v1 …, 96.1% for OpenLLM v2,
    // 99.7% for HumanEval pass@1, and 97.4% for HumanEval+ pass@1".
    for (suite, v) in [
        ("arena-hard", 93.0),
        ("openllm-v1", 98.9),
        ("openllm-v2", 96.1),
        ("humaneval", 99.7),
        ("humaneval-plus", 97.4),
    ] {
        assert_eq!(rec(&format!("l31-8b-gptq-w4a16-{suite}")), v, "{suite}");
    }
}

/// A precision published only as accuracy recovery is shown as that metric (never as a KLD),
/// carried over by the same rule (the lowest recovery being the worst), never within a KLD
/// floor and never ranked by the best-quality solver.
#[test]
fn accuracy_only_precisions_are_shown_as_such_and_kept_off_the_kld_scale() {
    use headroom::core::quality::ranked_weights;
    let t = quality();
    let fp8 = t.of_weights(&llama3_8b(W::Fp8));
    assert!(matches!(
        fp8,
        Quality::Figure {
            basis: Basis::Measured,
            ..
        }
    ));
    assert_eq!((fp8.kld(), fp8.recovery()), (None, Some(99.28)));
    assert!(
        fp8.short().starts_with(
            "99.3 % of BF16 on OpenLLM Leaderboard v1 (arc-c 25-shot, hellaswag 10-shot"
        ),
        "{}",
        fp8.short()
    );
    assert!(
        fp8.short()
            .ends_with("(Llama 3 8B Instruct, W8A8-FP, per-tensor, measured)")
    );
    assert!(
        fp8.long()
            .contains("accuracy recovery 99.3 % (benchmark score, not a KLD)")
    );
    assert!(!fp8.long().contains("KLD 0"), "{}", fp8.long());
    // Not on the KLD scale: outside every floor, however loose; shown with no floor.
    assert!(!fp8.within(Some(10.0)));
    assert!(fp8.within(None));
    // GPTQ 4-bit on Llama 3.1 8B: five suites on the card, the worst stands (Arena-Hard 93.0 %).
    let l31 = Scenario {
        model_id: Some("llama-3.1-8b".into()),
        ..llama3_8b(W::Gptq4)
    };
    let g = t.of_weights(&l31);
    assert_eq!(g.recovery(), Some(93.0));
    assert!(
        g.short().starts_with("93.0 % of BF16 on Arena-Hard ("),
        "{}",
        g.short()
    );
    // On Llama 3 8B it is carried over from the one model it was measured on.
    match t.of_weights(&llama3_8b(W::Gptq4)) {
        Quality::Figure { row, basis } => {
            assert_eq!(basis, Basis::CarriedOver("Llama 3.1 8B Instruct".into()));
            assert_eq!(row.recovery_pct, Some(93.0));
        }
        q => panic!("{q:?}"),
    }
    // FP8 carried over by size class: a 32B model takes the lower of 70B (99.87 %) and 405B
    // (99.81 %); a 3B model the lower of Llama 3 8B (99.28 %) and Llama 3.1 8B (99.53 %).
    assert_eq!(
        t.weights(W::Fp8, None, 32_000_000_000).recovery(),
        Some(99.81)
    );
    assert_eq!(
        t.weights(W::Fp8, None, 3_000_000_000).recovery(),
        Some(99.28)
    );
    // INT8: the W8A8 card's worst suite (HumanEval+ 98.8 %), named by its method.
    let i8 = t.weights(W::Int8, Some("llama-3.1-8b"), 8_030_261_248);
    assert_eq!(i8.recovery(), Some(98.8));
    assert!(
        i8.short().contains("W8A8-INT, not LLM.int8"),
        "{}",
        i8.short()
    );
    // KLD first: a GGUF type keeps its KLD; NF4 (without double quant) and FP8 block-scaled have
    // no figure of any metric.
    assert_eq!(kld(W::Q4KM), 0.031273);
    for p in [W::Nf4, W::Fp8Block] {
        assert_eq!(t.of_weights(&llama3_8b(p)), Quality::Unmeasured, "{p:?}");
    }
    // The solver's ranking holds only precisions with a KLD (or the reference).
    let ranked = ranked_weights(t, Some("llama-3-8b"), 8_030_261_248);
    assert!(ranked.iter().any(|(p, _)| *p == W::Q8_0));
    for p in [W::Fp8, W::Int8, W::Gptq4] {
        assert!(ranked.iter().all(|(q, _)| *q != p), "{p:?} ranked");
    }
    // Hand-checked: on 12 GiB (RTX 3060) FP8 weights (8.0 bits, 7.5 GiB + 1.00 GiB KV +
    // buffers) would fit as Q8_0 (8.5 bits) does, but only Q8_0 has a KLD (0.0014): the pick
    // is Q8_0, with or without a "usable" floor (0.2).
    let cat = builtin();
    let st = FitSettings::default();
    let m = cat.machine("desktop-rtx3060-32gb").unwrap();
    for floor in [None, Some(0.2)] {
        let pick = solve_best_quality(&llama3_8b(W::Fp16), m, cat, &st, t, floor);
        assert_eq!(pick.map(|(p, _)| p), Some(W::Q8_0), "{floor:?}");
    }
}

/// Every K/V cache type `--kv` offers says measured, carried over or not measured.
#[test]
fn every_kv_type_says_what_is_known() {
    let t = quality();
    let kv = |model: &str, k: KvTypes| {
        t.of_kv(&Scenario {
            kv: k,
            model_id: Some(model.into()),
            ..llama3_8b(W::Q4KM)
        })
    };
    for p in KvPrecision::ALL {
        let q = kv("llama-3-8b", KvTypes::same(p));
        match p {
            KvPrecision::Fp32 | KvPrecision::Fp16 | KvPrecision::Bf16 => {
                assert_eq!(q, Quality::Reference)
            }
            // PR #7412: f16/q8_0/q8_0 KLD 0.000980 on LLaMA 3 8B.
            KvPrecision::Q8_0 => assert!(matches!(
                q,
                Quality::Figure {
                    basis: Basis::Measured,
                    ..
                }
            )),
            // Q4_0: no KLD on any model; PR #21551's MMLU recovery on Gemma 3 4B (99.16 %) is
            // carried over (recovery before its 8-chunk ΔPPL on Llama 2 7B).
            KvPrecision::Q4_0 => match q {
                Quality::Figure { row, basis } => {
                    assert_eq!(basis, Basis::CarriedOver("Gemma 3 4B (pt)".into()));
                    assert_eq!(row.recovery_pct, Some(99.16));
                }
                q => panic!("{q:?}"),
            },
            // No published figure for an FP8 cache (docs/quality.md says why).
            KvPrecision::Fp8 => {
                assert_eq!(q, Quality::Unmeasured, "{p:?}");
                assert!(q.short().contains("not measured"));
            }
        }
    }
    // K and V apart: q8_0 K with F16 V (KLD 0.000944), F16 K with q8_0 V (0.000743).
    let pair = |s: &str| kv("llama-3-8b", KvTypes::parse(s).unwrap()).kld();
    assert_eq!(pair("q8_0/fp16"), Some(0.000944));
    assert_eq!(pair("fp16/q8_0"), Some(0.000743));
    // Another model: carried over from LLaMA 3 8B, the only one measured.
    match kv("llama-3.1-70b", KvTypes::same(KvPrecision::Q8_0)) {
        Quality::Figure { basis, .. } => {
            assert_eq!(basis, Basis::CarriedOver("LLaMA 3 8B".into()))
        }
        q => panic!("{q:?}"),
    }
    // A q4_0 K with a q8_0 V has no row either.
    assert_eq!(
        kv("llama-3-8b", KvTypes::parse("q4_0/q8_0").unwrap()),
        Quality::Unmeasured
    );
}

/// The JSON and text surfaces carry the accuracy metric as itself.
#[test]
fn accuracy_recovery_reaches_json_and_text() {
    let o = headroom(&["quality", "--model", "llama-3-8b", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let q = |p: &str| {
        v["precisions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["precision"] == p)
            .unwrap_or_else(|| panic!("{p}"))["quality"]
            .clone()
    };
    let fp8 = q("fp8");
    assert_eq!(fp8["status"], "measured");
    assert_eq!(fp8["metric"], "accuracy_recovery");
    assert_eq!(fp8["recovery_pct"], 99.28);
    assert_eq!(fp8["kld"], serde_json::Value::Null);
    assert_eq!(fp8["context"], serde_json::Value::Null);
    assert_eq!(fp8["method"], "W8A8-FP, per-tensor");
    assert_eq!(fp8["within_max_kld"], serde_json::Value::Null);
    let g = q("gptq-4bit");
    assert_eq!(g["status"], "carried_over");
    assert_eq!(g["recovery_pct"], 93.0);
    assert_eq!(q("q4_k_m")["metric"], "kld");
    // AWQ: a perplexity difference carried over from Llama 2 7B (AWQ paper, Table 4).
    let awq = q("awq-4bit");
    assert_eq!(awq["status"], "carried_over");
    assert_eq!(awq["metric"], "delta_ppl");
    assert_eq!(awq["delta_ppl"], 0.13);
    assert_eq!(awq["context"], 2048);
    assert_eq!(awq["kld"], serde_json::Value::Null);
    assert_eq!(q("nf4")["status"], "unmeasured");
    assert_eq!(q("nf4")["metric"], serde_json::Value::Null);
    let text = headroom(&["estimate", "--model", "llama-3-8b", "--weights", "fp8"]);
    let t = String::from_utf8_lossy(&text.stdout);
    assert!(
        t.contains("quality: weights FP8 (E4M3): accuracy recovery 99.3 % (benchmark score, not a KLD) vs BF16"),
        "{t}"
    );
}

fn row_of(id: &str) -> &'static headroom::core::quality::QualityRow {
    quality()
        .quality
        .iter()
        .find(|r| r.id == id)
        .unwrap_or_else(|| panic!("row {id}"))
}

/// QLoRA (arXiv 2305.14314) Table 4, "Mean 5-shot MMLU test accuracy for LLaMA 7-65B models
/// finetuned with adapters on Alpaca and FLAN v2": BFloat16 and NFloat4 + DQ per size and
/// dataset. Each row's recovery is NF4 + DQ / BF16, to 2 decimals (39.0 / 38.4 = 101.5625 %).
#[test]
fn qlora_rows_match_table_4() {
    // (size, dataset, BFloat16, NFloat4 + DQ), as printed.
    let table = [
        ("7b", "alpaca", 38.4, 39.0),
        ("7b", "flan-v2", 45.6, 44.5),
        ("13b", "alpaca", 47.2, 47.5),
        ("13b", "flan-v2", 50.6, 50.7),
        ("33b", "alpaca", 57.7, 57.3),
        ("33b", "flan-v2", 60.5, 59.2),
        ("65b", "alpaca", 61.8, 61.8),
        ("65b", "flan-v2", 62.5, 63.9),
    ];
    for (size, data, bf16, nf4) in table {
        let r = row_of(&format!("qlora-llama-{size}-nf4-dq-{data}"));
        assert_eq!(r.precision, "nf4-dq");
        assert!(
            r.no_preset && r.model == format!("llama-1-{size}"),
            "{}",
            r.id
        );
        assert!(r.source.starts_with("https://arxiv.org/abs/2305.14314"));
        let pct = r.recovery_pct.unwrap();
        assert!((pct - nf4 / bf16 * 100.0).abs() < 0.005, "{}: {pct}", r.id);
        assert!(r.kld.is_none() && r.context.is_none());
    }
    // Hand-checked: 44.5 / 45.6 = 97.588 %; 63.9 / 62.5 = 102.24 %.
    assert_eq!(
        row_of("qlora-llama-7b-nf4-dq-flan-v2").recovery_pct,
        Some(97.59)
    );
    assert_eq!(
        row_of("qlora-llama-65b-nf4-dq-flan-v2").recovery_pct,
        Some(102.24)
    );
}

/// AWQ (arXiv 2306.00978) Table 4: WikiText-2 perplexity at FP16 and INT4 g128 by RTN, GPTQ and
/// AWQ, for Llama 2 7B/13B/70B and LLaMA 7B/13B/30B/65B. Each row: the quantised PPL and ΔPPL =
/// quantised − FP16 (Llama 2 7B AWQ: 5.60 − 5.47 = 0.13).
#[test]
fn awq_paper_rows_match_table_4() {
    // (row key, FP16, RTN, GPTQ, AWQ), as printed.
    let table = [
        ("l2-7b", 5.47, 5.73, 5.69, 5.60),
        ("l2-13b", 4.88, 4.98, 4.98, 4.97),
        ("l2-70b", 3.32, 3.46, 3.42, 3.41),
        ("l1-7b", 5.68, 5.96, 6.22, 5.78),
        ("l1-13b", 5.09, 5.25, 5.23, 5.19),
        ("l1-30b", 4.10, 4.23, 4.24, 4.21),
        ("l1-65b", 3.53, 3.67, 3.66, 3.62),
    ];
    for (m, fp16, rtn, gptq, awq) in table {
        for (p, ppl) in [("int4", rtn), ("gptq-4bit", gptq), ("awq-4bit", awq)] {
            let r = row_of(&format!("awq-paper-{m}-{p}"));
            assert_eq!(r.ppl, Some(ppl), "{}", r.id);
            let d = r.delta_ppl.unwrap();
            assert!((d - (ppl - fp16)).abs() < 1e-9, "{}: {d}", r.id);
            assert_eq!((r.context, r.kld, r.recovery_pct), (Some(2048), None, None));
            assert_eq!(r.baseline, "FP16");
            assert_eq!(r.no_preset, m.starts_with("l1-"), "{}", r.id);
        }
    }
    assert_eq!(row_of("awq-paper-l2-7b-awq-4bit").delta_ppl, Some(0.13));
    // GPTQ on LLaMA 7B lost more than RTN (6.22 vs 5.96): 0.54.
    assert_eq!(row_of("awq-paper-l1-7b-gptq-4bit").delta_ppl, Some(0.54));
}

/// MXFP4 (intel/auto-round docs/auto_scheme_acc.md, Table 1, "Pure 4-bit" against BF16) and
/// NVFP4 (nvidia/DeepSeek-R1-FP4 card: MMLU FP8 90.8, FP4 86.9).
#[test]
fn fp4_rows_match_their_sources() {
    // (row, BF16 average, pure MXFP4 average, printed recovery %).
    for (id, bf16, fp4, pct) in [
        ("autoround-l31-8b-mxfp4", 0.7076, 0.6626, 93.6),
        ("autoround-qwen25-7b-mxfp4", 0.7075, 0.6550, 92.6),
        ("autoround-qwen3-8b-mxfp4", 0.6764, 0.6316, 93.4),
        ("autoround-qwen3-32b-mxfp4", 0.7321, 0.6901, 94.3),
    ] {
        let r = row_of(id);
        assert_eq!((r.precision.as_str(), r.recovery_pct), ("mxfp4", Some(pct)));
        // The printed percentage is the ratio to one decimal.
        assert!((fp4 / bf16 * 100.0 - pct).abs() < 0.05, "{id}");
        assert!(r.method.as_deref().unwrap().contains("W4A4"), "{id}");
    }
    let r = row_of("nvidia-deepseek-r1-nvfp4-mmlu");
    assert_eq!(
        (r.precision.as_str(), r.model.as_str()),
        ("nvfp4", "deepseek-r1")
    );
    // 86.9 / 90.8 = 95.705 %.
    assert_eq!(r.recovery_pct, Some(95.7));
    assert!((86.9 / 90.8 * 100.0 - 95.7_f64).abs() < 0.01);
    assert!(r.baseline.starts_with("FP8"));
}

/// ΔPPL-only precisions (AWQ, RTN INT4; GPTQ on Llama 2) are shown as a perplexity difference
/// with its text and context, measured or carried over by the rule, never within a KLD floor and
/// never ranked; a figure measured on the model, of any metric, comes before one carried over.
#[test]
fn delta_ppl_precisions_are_shown_as_such_and_kept_off_the_kld_scale() {
    use headroom::core::quality::{Metric, ranked_weights};
    let t = quality();
    let on = |p: W, id: &str, params: u64| t.weights(p, Some(id), params);
    // Measured on Llama 2 7B: ΔPPL 5.60 − 5.47 = 0.13.
    let awq = on(W::Awq4, "llama-2-7b", 6_738_415_616);
    assert!(matches!(
        awq,
        Quality::Figure {
            basis: Basis::Measured,
            ..
        }
    ));
    assert_eq!((awq.kld(), awq.delta_ppl()), (None, Some(0.13)));
    assert_eq!(awq.metric(), Some(Metric::DeltaPpl));
    assert_eq!(
        awq.short(),
        "ΔPPL +0.130 vs FP16 on wikitext-2-raw-v1 test, 2,048-token chunks (Llama 2 7B, AWQ INT4 g128 (with zero point; Pile calibration set), measured)"
    );
    assert!(
        awq.long()
            .contains("ΔPPL +0.130 (perplexity difference on this text, not a KLD)"),
        "{}",
        awq.long()
    );
    assert!(!awq.within(Some(10.0)) && awq.within(None));
    // Carried over: the worst of the size class. Small: Llama 2 7B 0.13 over LLaMA 7B 0.10,
    // LLaMA 13B 0.10, Llama 2 13B 0.09. Large: LLaMA 30B 0.11 over 0.09 (Llama 2 70B, LLaMA 65B).
    match t.of_weights(&llama3_8b(W::Awq4)) {
        Quality::Figure { row, basis } => {
            assert_eq!(basis, Basis::CarriedOver("Llama 2 7B".into()));
            assert_eq!(row.delta_ppl, Some(0.13));
        }
        q => panic!("{q:?}"),
    }
    assert_eq!(
        t.weights(W::Awq4, None, 32_000_000_000).delta_ppl(),
        Some(0.11)
    );
    // RTN INT4 g128 (headroom's int4): small class worst LLaMA 7B 5.96 − 5.68 = 0.28.
    assert_eq!(
        t.weights(W::Int4, None, 8_000_000_000).delta_ppl(),
        Some(0.28)
    );
    // GPTQ: measured ΔPPL on Llama 2 13B (4.98 − 4.88 = 0.10) before the recovery carried over
    // from Llama 3.1 8B; measured recovery on Llama 3.1 8B; elsewhere the recovery (a ratio)
    // is carried before a ΔPPL.
    let g13 = on(W::Gptq4, "llama-2-13b", 13_015_864_320);
    assert_eq!((g13.delta_ppl(), g13.recovery()), (Some(0.1), None));
    assert_eq!(on(W::Gptq4, "llama-3.1-8b", 1).recovery(), Some(93.0));
    assert_eq!(
        t.weights(W::Gptq4, None, 70_000_000_000).recovery(),
        Some(93.0)
    );
    // Off the KLD scale: not ranked; on 12 GiB the solver still picks Q8_0 (as without them).
    let ranked = ranked_weights(t, Some("llama-2-7b"), 6_738_415_616);
    for p in [
        W::Awq4,
        W::Int4,
        W::Gptq4,
        W::Nf4DoubleQuant,
        W::Mxfp4,
        W::Nvfp4,
    ] {
        assert!(ranked.iter().all(|(q, _)| *q != p), "{p:?} ranked");
    }
    let cat = builtin();
    let m = cat.machine("desktop-rtx3060-32gb").unwrap();
    let pick = solve_best_quality(
        &llama3_8b(W::Fp16),
        m,
        cat,
        &FitSettings::default(),
        t,
        None,
    );
    assert_eq!(pick.map(|(p, _)| p), Some(W::Q8_0));
}

/// NF4 + double quant, MXFP4 and NVFP4 are accuracy recovery, carried over by the rule: no
/// LLaMA 1 preset exists, so NF4 + DQ is always carried over (small class: LLaMA 7B's worse
/// dataset, FLAN v2 97.59 %; large: LLaMA 33B FLAN v2 97.85 %).
#[test]
fn nf4_and_fp4_recovery_is_carried_over_by_the_rule() {
    let t = quality();
    match t.of_weights(&llama3_8b(W::Nf4DoubleQuant)) {
        Quality::Figure { row, basis } => {
            assert_eq!(basis, Basis::CarriedOver("LLaMA 7B".into()));
            assert_eq!(row.recovery_pct, Some(97.59));
            assert!(row.dataset.contains("FLAN v2"));
        }
        q => panic!("{q:?}"),
    }
    assert_eq!(
        t.weights(W::Nf4DoubleQuant, None, 70_000_000_000)
            .recovery(),
        Some(97.85)
    );
    // MXFP4 measured on Qwen3 8B (93.4 %); a small model without rows takes the worst small
    // one (Qwen2.5 7B, 92.6 %); gpt-oss (natively MXFP4, no baseline) takes the large class's
    // only row (Qwen3 32B, 94.3 %).
    assert_eq!(
        t.weights(W::Mxfp4, Some("qwen3-8b"), 8_190_735_360)
            .recovery(),
        Some(93.4)
    );
    assert_eq!(
        t.weights(W::Mxfp4, None, 3_000_000_000).recovery(),
        Some(92.6)
    );
    assert_eq!(
        t.weights(W::Mxfp4, Some("gpt-oss-120b"), 116_829_156_672)
            .recovery(),
        Some(94.3)
    );
    // NVFP4: the one row (DeepSeek-R1, against its FP8 release) for every model.
    let n = t.of_weights(&llama3_8b(W::Nvfp4));
    assert_eq!(n.recovery(), Some(95.7));
    assert!(
        n.short()
            .starts_with("95.7 % of FP8 (DeepSeek-R1 as released) on MMLU 5-shot")
    );
}

/// A row on a model without a preset must say so, and one on a preset must not.
#[test]
fn rows_on_models_without_a_preset_are_marked() {
    let bad = |model: &str, no_preset: bool| {
        let text = format!(
            r#"(quality: [(
        id: "x", kind: Weights, precision: "q4_k_m", model: "{model}", no_preset: {no_preset},
        model_name: "L", params_b: 7.0, baseline: "FP16", kld: 0.01, dataset: "d", context: 512,
        source: "s", detail: "d",
    )])"#
        );
        parse_quality("q.ron", &text)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert!(
        bad("llama-1-7b", false)
            .contains("model 'llama-1-7b' is not a catalog preset (set no_preset: true")
    );
    assert!(
        bad("llama-2-7b", true)
            .contains("model 'llama-2-7b' is a catalog preset, but no_preset is set")
    );
    assert_eq!(bad("llama-1-7b", true), "");
    assert_eq!(bad("llama-2-7b", false), "");
}

/// `fit` under a floor with ΔPPL-only weights says they cannot be shown within it (not "past"),
/// and prints the ΔPPL with its text and context.
#[test]
fn fit_says_delta_ppl_weights_are_off_the_floor_scale() {
    let o = headroom(&[
        "fit",
        "--model",
        "llama-2-7b",
        "--weights",
        "awq-4bit",
        "--max-kld",
        "good",
        "--machine",
        "laptop-rtx4060-16gb",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(
        t.contains("quality: weights AWQ 4-bit g128: ΔPPL +0.130 (perplexity difference on this text, not a KLD) vs FP16 (Llama 2 7B"),
        "{t}"
    );
    assert!(
        t.contains("wikitext-2-raw-v1 test, 2,048-token chunks"),
        "{t}"
    );
    assert!(
        t.contains("published as benchmark accuracy or ΔPPL, not a KLD, so not shown within the quality floor"),
        "{t}"
    );
}

/// llama.cpp PR #21551 (description): a Q4_0 cache against F16 on Llama 2 7B (Q4_K_M weights,
/// Wikitext-2, first 8 chunks of 512) and Q8_0 / Q4_0 caches on Gemma 3 4B pt (Q4_0 weights,
/// MMLU 13,943 tasks). On Llama 2 7B the unrotated row (ΔPPL 6.4648 − 6.3123 = 0.1525) stands
/// over the rotated one (6.3243 − 6.3123 = 0.0120): the larger of a pair, as for an imatrix pair.
#[test]
fn kv_rows_of_pr_21551_match_and_the_worse_of_a_pair_stands() {
    use headroom::core::quality::Metric;
    for (id, ppl, d) in [
        ("pr21551-l2-7b-kv-q4_0-rot0", 6.4648, 0.1525),
        ("pr21551-l2-7b-kv-q4_0-rot1", 6.3243, 0.012),
    ] {
        let r = row_of(id);
        assert_eq!(
            (r.kind, r.ppl, r.delta_ppl),
            (QualityKind::Kv, Some(ppl), Some(d))
        );
        assert!((ppl - 6.3123 - d).abs() < 1e-9, "{id}");
        assert_eq!(r.context, Some(512));
    }
    // 39.9771 / 39.9914 = 99.964 %; 39.6543 / 39.9914 = 99.157 %.
    for (id, score, pct) in [
        ("pr21551-gemma3-4b-kv-q8_0-mmlu", 39.9771, 99.96),
        ("pr21551-gemma3-4b-kv-q4_0-mmlu", 39.6543, 99.16),
    ] {
        let r = row_of(id);
        assert_eq!(r.recovery_pct, Some(pct));
        assert!((score / 39.9914 * 100.0 - pct).abs() < 0.005, "{id}");
    }
    let t = quality();
    let kv = |k: KvPrecision, model: &str| {
        t.of_kv(&Scenario {
            kv: KvTypes::same(k),
            model_id: Some(model.into()),
            ..llama3_8b(W::Q4KM)
        })
    };
    let l2 = kv(KvPrecision::Q4_0, "llama-2-7b");
    assert!(matches!(
        l2,
        Quality::Figure {
            basis: Basis::Measured,
            ..
        }
    ));
    assert_eq!(
        (l2.metric(), l2.delta_ppl()),
        (Some(Metric::DeltaPpl), Some(0.1525))
    );
    // Measured on Gemma 3 4B: its recovery, before the KLD carried over from LLaMA 3 8B.
    assert_eq!(kv(KvPrecision::Q8_0, "gemma-3-4b").recovery(), Some(99.96));
    // Off the KLD scale: a Q4_0 cache is never within a floor.
    assert!(!kv(KvPrecision::Q4_0, "llama-3-8b").within(Some(1.0)));
}
