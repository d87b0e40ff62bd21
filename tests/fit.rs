//! Verdicts anyone can check by hand, on the built-in catalog.

use headroom::core::WeightPrecision;
use headroom::core::catalog::MachineKind;
use headroom::core::fit::{FitSettings, Verdict, fit_all, solve_min_gpus};
use headroom::core::model::ModelSpec;
use headroom::core::scenario::{Mode, Scenario};
use headroom::io::catalog::builtin;

fn preset(id: &str) -> ModelSpec {
    builtin()
        .model(id)
        .unwrap_or_else(|| panic!("preset {id}"))
        .spec
        .clone()
}

fn verdict(s: &Scenario, machine: &str) -> headroom::core::fit::FitResult {
    let cat = builtin();
    let m = cat
        .machine(machine)
        .unwrap_or_else(|| panic!("machine {machine}"));
    fit_all(s, [m], cat, &FitSettings::default()).remove(0)
}

#[test]
fn rtx_4090_desktop_runs_8b_fp16_8k_on_the_gpu() {
    // 8.03e9 × 2 B = 15.0 GiB + 1 GiB KV (8K, GQA 8 heads) + workspace < 24 GiB.
    let s = Scenario {
        model: preset("llama-3-8b"),
        weights: WeightPrecision::Fp16,
        context: 8192,
        ..Scenario::default()
    };
    let r = verdict(&s, "desktop-rtx4090-64gb");
    assert_eq!(r.verdict, Verdict::Gpu, "{r:?}");
    assert!(
        r.headroom_bytes > 5 << 30 && r.headroom_bytes < 8 << 30,
        "{}",
        r.headroom_bytes
    );
    // 1008 GB/s × 0.75 / 16.5 GB read per token ≈ 47 tok/s (llama.cpp reports ~50–55 at FP16).
    assert!(
        (35.0..70.0).contains(&r.decode_tokens_per_s),
        "{}",
        r.decode_tokens_per_s
    );
}

#[test]
fn an_8gb_laptop_gpu_needs_offload_for_it() {
    let s = Scenario {
        model: preset("llama-3-8b"),
        weights: WeightPrecision::Fp16,
        context: 8192,
        ..Scenario::default()
    };
    let r = verdict(&s, "laptop-rtx4060-32gb");
    assert_eq!(r.verdict, Verdict::Offload, "{r:?}");
    // ~7.3 GiB of 8 GiB usable for layers of ~0.5 GiB each → about 13 of 32 layers.
    assert!(r.gpu_layers >= 8 && r.gpu_layers <= 16, "{}", r.gpu_layers);
    assert_eq!(r.total_layers, 32);
    let full = verdict(&s, "desktop-rtx4090-64gb");
    assert!(r.decode_tokens_per_s < full.decode_tokens_per_s / 3.0);
}

#[test]
fn a_16gb_macbook_air_cannot_hold_70b_at_int4() {
    // 70.6e9 × 4.125 bits = 33.9 GiB > 16 GB of RAM altogether.
    let s = Scenario {
        model: preset("llama-3-70b"),
        weights: WeightPrecision::Int4,
        ..Scenario::default()
    };
    let r = verdict(&s, "macbook-air-m2-16gb");
    // It does not fit in memory; since the disk tier it runs from the SSD instead of
    // getting "none".
    assert!(!r.fits(), "{r:?}");
    assert_eq!(r.verdict, Verdict::Disk, "{r:?}");
    assert!(r.headroom_bytes < 0);
}

#[test]
fn p5_48xlarge_holds_llama_3_70b_at_bf16() {
    // 141.1 GB of weights over 8 × 80 GB H100s with tensor parallelism.
    let s = Scenario {
        model: preset("llama-3-70b"),
        weights: WeightPrecision::Bf16,
        ..Scenario::default()
    };
    let r = verdict(&s, "aws-p5-48xlarge");
    assert_eq!(r.verdict, Verdict::Gpu, "{r:?}");
    assert_eq!(r.gpus, 8);
    assert!(r.usd_per_million_tokens.is_some());
    // And one H100 alone does not: two are the minimum (141 GB / 2 = 70.6 GB + KV + overhead ≤ 80 GiB).
    let cat = builtin();
    let h100 = cat.machine("aws-p5-48xlarge").unwrap().gpu.clone().unwrap();
    assert_eq!(solve_min_gpus(&s, &h100, cat, 64), Some(2));
}

#[test]
fn unified_memory_uses_the_metal_share() {
    // Llama 3 8B BF16 (16.5 GiB) fits the 48 GB MacBook's 36 GiB Metal share but not a 24 GB one's 16 GiB.
    let s = Scenario {
        model: preset("llama-3-8b"),
        ..Scenario::default()
    };
    assert_eq!(
        verdict(&s, "macbook-pro-16-m4-pro-48gb").verdict,
        Verdict::Unified
    );
    assert_ne!(
        verdict(&s, "macbook-pro-14-m4-pro-24gb").verdict,
        Verdict::Unified
    );
}

#[test]
fn training_gets_step_time_and_run_cost() {
    let s = Scenario {
        model: preset("llama-3-8b"),
        mode: Mode::Qlora,
        context: 2048,
        train_tokens: 10_000_000,
        ..Scenario::default()
    };
    let r = verdict(&s, "aws-g6e-xlarge");
    assert_eq!(r.verdict, Verdict::Gpu, "{r:?}");
    let t = r.training.expect("training speed");
    assert!(
        t.tokens_per_s > 100.0 && t.run_hours > 0.0 && t.run_usd.unwrap() > 0.0,
        "{t:?}"
    );
}

#[test]
fn every_machine_gets_a_verdict_and_finite_numbers() {
    let cat = builtin();
    for s in [
        Scenario {
            model: preset("llama-3-8b"),
            ..Scenario::default()
        },
        Scenario {
            model: preset("deepseek-v3"),
            weights: WeightPrecision::Q4KM,
            ..Scenario::default()
        },
        Scenario {
            model: preset("qwen2.5-7b"),
            mode: Mode::Full,
            gpus: 8,
            zero: 3,
            ..Scenario::default()
        },
    ] {
        for r in fit_all(&s, &cat.machines, cat, &FitSettings::default()) {
            assert!(
                r.decode_tokens_per_s.is_finite() && r.prefill_tokens_per_s.is_finite(),
                "{}",
                r.machine
            );
            if r.verdict == Verdict::Offload {
                match &r.expert_split {
                    // Expert offload (MoE, llama.cpp --n-cpu-moe): every layer on the GPU, the
                    // routed experts of 1 … L of them in RAM.
                    Some(x) => {
                        assert_eq!(r.gpu_layers, r.total_layers, "{}", r.machine);
                        assert!(x.cpu_moe_layers >= 1 && x.cpu_moe_layers <= r.total_layers);
                        assert!(x.gpu_required <= r.gpu_capacity, "{}", r.machine);
                    }
                    None => assert!(r.gpu_layers > 0 && r.gpu_layers < r.total_layers),
                }
            }
            if r.fits() && !s.mode.is_training() {
                assert!(r.decode_tokens_per_s > 0.0, "{}", r.machine);
                // A cloud instance without a catalog price has no cost.
                let m = cat.machine(&r.machine).unwrap();
                let unpriced_cloud = m.kind == MachineKind::Cloud && m.price.is_none();
                assert_eq!(
                    r.usd_per_million_tokens.is_some(),
                    !unpriced_cloud,
                    "{}",
                    r.machine
                );
            }
        }
    }
}

#[test]
fn gguf_sizes_match_llama_cpp() {
    use headroom::core::estimate::{ComponentKind, estimate};
    let w = |p: WeightPrecision| {
        let s = Scenario {
            model: preset("llama-3-8b"),
            weights: p,
            ..Scenario::default()
        };
        estimate(&s).kind_total(ComponentKind::Weights).as_gib()
    };
    // llama.cpp tools/quantize/README.md: Llama-3.1-8B Q4_K_M = 4.58 GiB.
    assert!(
        (w(WeightPrecision::Q4KM) - 4.58).abs() < 0.02,
        "{}",
        w(WeightPrecision::Q4KM)
    );
    // llama.cpp load log of Meta-Llama-3-8B-Instruct Q8_0: "model size = 7.95 GiB (8.50 BPW)"
    // (github.com/argilla-io/distilabel/issues/593).
    assert!(
        (w(WeightPrecision::Q8_0) - 7.95).abs() < 0.01,
        "{}",
        w(WeightPrecision::Q8_0)
    );
}

/// The scenarios the sharing tests fit: dense BF16 on llama.cpp (the criterion bench's), a
/// quantised MoE (expert offload tiers), vLLM (tensor parallel, its memory share) and MLX.
fn sharing_scenarios() -> Vec<Scenario> {
    use headroom::core::scenario::Runtime;
    let moe = Scenario {
        model: preset("qwen3-30b-a3b"),
        model_id: Some("qwen3-30b-a3b".into()),
        weights: WeightPrecision::Q4KM,
        ..Scenario::default()
    };
    vec![
        Scenario::default(),
        moe.clone(),
        Scenario {
            runtime: Runtime::Vllm,
            ..Scenario::default()
        },
        Scenario {
            runtime: Runtime::Mlx,
            ..moe
        },
    ]
}

#[test]
fn a_whole_catalog_fit_gives_every_machine_the_row_it_gets_alone() {
    // `fit_all` shares its estimates, the model's shape and the catalog's per-machine facts
    // across machines; a copy of each machine (not the catalog's own) fitted with a fresh cache
    // shares nothing with the others and reads its CPU and GPU from their names.
    // All-GPU speeds are shared between machines of one accelerator (the GPU count only under
    // row split and tensor parallelism, which the row-split settings and vLLM exercise), and
    // between estimates over different GPU counts that the speed model reads alike; a training
    // run's estimates differ by GPU count (ZeRO-3 shards over them).
    use headroom::core::fit::{EstimateCache, fit_machine};
    use headroom::core::speed::MultiGpu;
    let cat = builtin();
    let row_split = FitSettings {
        llama_split: Some(MultiGpu::RowSplit),
        ..FitSettings::default()
    };
    let training = Scenario {
        mode: Mode::Full,
        zero: 3,
        ..Scenario::default()
    };
    // A calibration is one machine's: the second all-GPU machine of an accelerator that several
    // share (the first keeps its speed) runs at its own speed, and the third at the shared one.
    let plain = fit_all(
        &Scenario::default(),
        &cat.machines,
        cat,
        &FitSettings::default(),
    );
    let mut seen = std::collections::HashMap::<&str, usize>::new();
    let calibrated = plain
        .iter()
        .zip(&cat.machines)
        .filter(|(r, _)| r.verdict == Verdict::Gpu)
        .find_map(|(_, m)| {
            let n = seen.entry(m.gpu.as_deref()?).or_default();
            *n += 1;
            (*n == 2).then_some(m)
        })
        .expect("an accelerator two GPU rows share");
    let calibration = FitSettings {
        calibration: Some(headroom::core::speed::bench::Calibration {
            machine: calibrated.id.to_string(),
            backend: headroom::core::speed::Backend::Cuda,
            tuning: headroom::core::speed::Tuning {
                bandwidth_factor: 0.5,
                prefill_factor: 2.0,
            },
            date: "2026-12-07".into(),
            source_file: "llama-bench.json".into(),
            build: "b1".into(),
            runs: 1,
        }),
        ..FitSettings::default()
    };
    let row = |st: &FitSettings| {
        fit_all(&Scenario::default(), &cat.machines, cat, st)
            .into_iter()
            .find(|r| r.machine == calibrated.id)
            .expect("row")
    };
    assert!(
        row(&calibration).decode_tokens_per_s
            < 0.75 * row(&FitSettings::default()).decode_tokens_per_s,
        "the calibration is read"
    );
    let cases = sharing_scenarios()
        .into_iter()
        .map(|s| (s, FitSettings::default()))
        .chain([
            (Scenario::default(), row_split.clone()),
            (sharing_scenarios()[1].clone(), row_split),
            (training, FitSettings::default()),
            (Scenario::default(), calibration),
        ]);
    let mut shared_rows = 0;
    for (s, st) in cases {
        let all = fit_all(&s, &cat.machines, cat, &st);
        assert_eq!(all.len(), cat.machines.len());
        for (r, m) in all.iter().zip(&cat.machines) {
            let alone = fit_machine(&mut EstimateCache::new(&s), &m.clone(), cat, &st);
            assert_eq!(*r, alone, "{} on {}", s.model.name, m.id);
        }
        // Rows that could share a speed: more than one GPU-verdict row on one accelerator.
        let mut by_acc = std::collections::HashMap::<&str, usize>::new();
        for (r, m) in all.iter().zip(&cat.machines) {
            if matches!(r.verdict, Verdict::Gpu | Verdict::Unified)
                && let Some(g) = m.gpu.as_deref()
            {
                *by_acc.entry(g).or_default() += 1;
            }
        }
        shared_rows += by_acc.values().filter(|n| **n > 1).sum::<usize>();
    }
    // The comparison covered machines that share: not a test of nothing.
    assert!(shared_rows > 100, "{shared_rows}");
}

#[test]
fn a_catalog_keeps_a_machines_parts_only_while_its_names_are_the_same() {
    use headroom::core::speed::cpu_facts;
    let mut cat = builtin().clone();
    // What the catalog keeps for machine `i` is what a lookup by its names reads.
    let check = |c: &headroom::core::catalog::Catalog, i: usize| {
        let m = &c.machines[i];
        let (acc, facts) = c.machine_parts(m);
        let read = (
            m.gpu.as_deref().and_then(|id| c.accelerator(id)).cloned(),
            cpu_facts(&m.cpu),
        );
        assert_eq!((acc.cloned(), facts), read, "{}", m.id);
    };
    for i in 0..cat.machines.len() {
        check(&cat, i);
    }
    // Kept parts no longer hold once the names change: a CPU-only desktop given a Xeon with
    // AVX-512 VNNI and an RTX 4090, a GPU machine given no GPU.
    let cpu_only = cat
        .machines
        .iter()
        .position(|m| m.gpu.is_none())
        .expect("cpu only");
    let gpu = cat
        .machines
        .iter()
        .position(|m| m.gpu.is_some())
        .expect("gpu");
    let before = cat.machine_parts(&cat.machines[cpu_only]).1;
    cat.machines[cpu_only].cpu = "Intel Xeon Platinum 8480+".into();
    cat.machines[cpu_only].gpu = Some("rtx-4090".into());
    cat.machines[gpu].gpu = None;
    for i in [cpu_only, gpu] {
        check(&cat, i);
    }
    assert_ne!(cat.machine_parts(&cat.machines[cpu_only]).1, before);
    assert_eq!(
        cat.machine_parts(&cat.machines[cpu_only]).0.map(|a| &*a.id),
        Some("rtx-4090")
    );
    assert!(cat.machine_parts(&cat.machines[gpu]).0.is_none());
    // The same names in new strings answer the same; an accelerator replaced where the index put
    // it (another part there, or the same id with other figures) is the one read.
    let other = cat
        .machines
        .iter()
        .position(|m| m.gpu.is_some())
        .expect("gpu");
    let name: String = cat.machines[other].gpu.as_deref().expect("gpu").into();
    cat.machines[other].gpu = Some(name.as_str().into());
    cat.machines[other].cpu = cat.machines[other].cpu.to_string().into();
    check(&cat, other);
    let at = cat
        .accelerators
        .iter()
        .position(|a| *a.id == *name)
        .expect("its accelerator");
    let mut faster = cat.accelerators[at].clone();
    faster.bandwidth = headroom::core::units::GbPerSec(faster.bandwidth.0 * 2.0);
    faster.id = name.as_str().into();
    cat.accelerators[at] = faster.clone();
    check(&cat, other);
    assert_eq!(cat.machine_parts(&cat.machines[other]).0, Some(&faster));
    let moved = cat.accelerators.remove(at);
    cat.accelerators.insert(0, moved);
    for i in 0..cat.machines.len() {
        check(&cat, i);
    }
}

#[test]
fn a_speed_query_reads_the_same_from_the_estimates_shape_as_from_the_model() {
    use headroom::core::fit::EstimateCache;
    use headroom::core::speed::{SpeedConstants, SpeedQuery, placement_speed};
    let cat = builtin();
    let k = SpeedConstants::default();
    let m = cat.machine("desktop-rtx4090-64gb").expect("machine");
    let acc = m.gpu.as_deref().and_then(|id| cat.accelerator(id));
    for s in sharing_scenarios() {
        let mut cache = EstimateCache::new(&s);
        let at = cache.ensure(1);
        let est = cache.at(at).0;
        let mut q = SpeedQuery::on_machine(cache.scenario(), est, m, acc, &k);
        let plain = placement_speed(&q, &k);
        q.shape = cache.shape(&q);
        assert!(q.shape.is_some());
        assert_eq!(placement_speed(&q, &k), plain, "{}", s.model.name);
        // At another depth the query reads the model again, not the shape made at the prompt's.
        let deeper = SpeedQuery {
            depth: q.depth + 4096,
            ..q.clone()
        };
        let alone = SpeedQuery {
            shape: None,
            ..deeper.clone()
        };
        assert_eq!(placement_speed(&deeper, &k), placement_speed(&alone, &k));
        assert_ne!(placement_speed(&deeper, &k), plain, "{}", s.model.name);
        // Another scenario's query (an equal copy) gets no shape from this cache.
        let copy = cache.scenario().clone();
        let other = SpeedQuery::on_machine(&copy, est, m, acc, &k);
        assert!(cache.shape(&other).is_none());
    }
}
