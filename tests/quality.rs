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
    // Nothing published for AWQ: unmeasured, never within a floor.
    let awq = t.of_weights(&llama3_8b(W::Awq4));
    assert_eq!(awq, Quality::Unmeasured);
    assert!(!awq.within(Some(10.0)));
    // KV: 16-bit is the reference; q8_0 measured on Llama 3 8B; q4_0 not published.
    let kv = |k: KvPrecision| {
        t.of_kv(&Scenario {
            kv: KvTypes::same(k),
            ..llama3_8b(W::Q4KM)
        })
    };
    assert_eq!(kv(KvPrecision::Fp16), Quality::Reference);
    assert_eq!(kv(KvPrecision::Q8_0).kld(), Some(0.000980));
    assert_eq!(kv(KvPrecision::Q4_0), Quality::Unmeasured);
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
    let costs = precision_costs(&s, quality(), &[W::Bf16, W::Q4KM, W::Awq4]);
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
    // KLD first: a GGUF type keeps its KLD; NF4, AWQ and MXFP4 have neither figure.
    assert_eq!(kld(W::Q4KM), 0.031273);
    for p in [W::Nf4, W::Awq4, W::Mxfp4] {
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
            // No published KLD for a Q4_0 or FP8 cache (docs/quality.md says why).
            KvPrecision::Fp8 | KvPrecision::Q4_0 => {
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
    assert_eq!(q("awq-4bit")["status"], "unmeasured");
    let text = headroom(&["estimate", "--model", "llama-3-8b", "--weights", "fp8"]);
    let t = String::from_utf8_lossy(&text.stdout);
    assert!(
        t.contains("quality: weights FP8 (E4M3): accuracy recovery 99.3 % (benchmark score, not a KLD) vs BF16"),
        "{t}"
    );
}
