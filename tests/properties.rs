//! Property tests over the whole input domain: parameters up to 10^13, context up to 10^7,
//! batch up to 4096, GPUs up to 65,536. No panic, no NaN; totals add up; monotone in the inputs;
//! each machine's verdict agrees with its totals and capacities; each solver's answer fits and one
//! step more does not.
//!
//! CI runs 400 cases per property. The long mode (README, "Long checks") runs any number:
//! `PROPTEST_CASES=100000 cargo test --release --test properties`.

use headroom::core::catalog::{Catalog, Machine, MemoryKind};
use headroom::core::estimate::{ComponentKind, estimate};
use headroom::core::fit::{
    EstimateCache, FitResult, FitSettings, PRECISION_LADDER, Verdict, fit_machine, solve_max_batch,
    solve_max_context, solve_min_gpus, solve_precision,
};
use headroom::core::model::ModelSpec;
use headroom::core::precision::{KvPrecision, KvTypes, WeightPrecision};
use headroom::core::scenario::{
    Checkpointing, KvAllocation, LoraTargets, Mode, Offload, Optimizer, Runtime, Scenario,
};
use proptest::prelude::*;
use proptest::sample::Index;

fn catalog() -> &'static Catalog {
    headroom::io::catalog::builtin()
}

fn fit_on(s: &Scenario, m: &Machine) -> FitResult {
    let mut cache = EstimateCache::new(s);
    fit_machine(&mut cache, m, catalog(), &FitSettings::default())
}

/// What the solvers look for: the whole model on the GPU(s) or in the unified pool.
fn fits_gpu(s: &Scenario, m: &Machine) -> bool {
    matches!(fit_on(s, m).verdict, Verdict::Gpu | Verdict::Unified)
}

fn arb_weights() -> impl Strategy<Value = WeightPrecision> {
    prop::sample::select(WeightPrecision::ALL.to_vec())
}
fn arb_kv() -> impl Strategy<Value = KvPrecision> {
    prop::sample::select(KvPrecision::ALL.to_vec())
}

prop_compose! {
    fn arb_scenario()(
        params in prop_oneof![1_000_000u64..100_000_000_000, 1_000_000u64..=10_000_000_000_000],
        preset in any::<bool>(),
        weights in arb_weights(),
        k in arb_kv(), v in arb_kv(),
        context in prop_oneof![1u64..65_536, 1u64..=10_000_000],
        batch in 1u64..=4096,
        ubatch in 1u64..=8192,
        mode in prop::sample::select(Mode::ALL.to_vec()),
        optimizer in prop::sample::select(Optimizer::ALL.to_vec()),
        ckpt in prop::sample::select(Checkpointing::ALL.to_vec()),
        fa in any::<bool>(),
        paged in any::<bool>(),
        rank in 1u64..=1024,
        targets in prop::sample::select(LoraTargets::ALL.to_vec()),
        gpus in prop_oneof![0u64..=16, 0u64..=65_536],
        zero in 0u8..=3,
        offload in prop::sample::select(Offload::ALL.to_vec()),
        runtime in prop::sample::select(Runtime::ALL.to_vec()),
        pure in any::<bool>(),
    ) -> Scenario {
        Scenario {
            model: if preset { ModelSpec::default() } else { ModelSpec::generic(params) },
            model_id: None,
            weights,
            kv: KvTypes { k, v },
            context, batch, ubatch, mode, optimizer,
            checkpointing: ckpt,
            flash_attention: fa,
            kv_allocation: if paged { KvAllocation::Paged } else { KvAllocation::Contiguous },
            lora_rank: rank, lora_targets: targets, gpus, zero, offload, runtime,
            pure_bf16: pure,
            ..Scenario::default()
        }
    }
}

/// 400 cases per property in a normal run; `PROPTEST_CASES=100000` for the long mode
/// (`ProptestConfig::with_cases` would otherwise override proptest's own reading of the variable).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn never_panics_and_adds_up(s in arb_scenario()) {
        let e = estimate(&s);
        let sum = e.components.iter().fold(0u128, |a, c| a + c.bytes.0 as u128);
        // The total saturates at u64::MAX; below that it is the exact sum.
        prop_assert_eq!(e.total().0 as u128, sum.min(u64::MAX as u128));
        for c in &e.components {
            prop_assert!(!c.formula.contains("NaN") && !c.formula.contains("inf"), "{}: {}", c.name, c.formula);
        }
        prop_assert!(e.params.active <= e.params.total);
        // The numbers-only estimate the fit engine uses gives the same numbers.
        let quiet = headroom::core::estimate::estimate_with(&s, false);
        prop_assert_eq!(
            quiet.components.iter().map(|c| (c.bytes, c.per_device)).collect::<Vec<_>>(),
            e.components.iter().map(|c| (c.bytes, c.per_device)).collect::<Vec<_>>()
        );
        prop_assert_eq!(&quiet.workload, &e.workload);
        let j = headroom::io::json::estimate_json(&e);
        prop_assert!(j["memory"]["total"].is_u64());
    }

    #[test]
    fn more_context_never_needs_less(s in arb_scenario(), extra in 1u64..100_000) {
        let a = estimate(&s);
        let b = estimate(&Scenario { context: s.context.saturating_add(extra), ..s.clone() });
        prop_assert!(b.total() >= a.total(), "{} → {}", a.total(), b.total());
        prop_assert!(b.per_gpu_total() >= a.per_gpu_total());
    }

    #[test]
    fn more_batch_never_needs_less(s in arb_scenario(), extra in 1u64..64) {
        let a = estimate(&s);
        let b = estimate(&Scenario { batch: s.batch.saturating_add(extra), ..s.clone() });
        prop_assert!(b.total() >= a.total());
        prop_assert!(b.per_gpu_total() >= a.per_gpu_total());
    }

    #[test]
    fn more_params_never_need_less(s in arb_scenario(), p in 1_000_000u64..1_000_000_000_000, f in 1.01f64..10.0) {
        let small = Scenario { model: ModelSpec::generic(p), ..s.clone() };
        let big = Scenario { model: ModelSpec::generic(((p as f64) * f) as u64), ..s };
        prop_assert!(estimate(&big).total() >= estimate(&small).total());
        prop_assert!(estimate(&big).kind_total(ComponentKind::Weights) >= estimate(&small).kind_total(ComponentKind::Weights));
    }

    #[test]
    fn higher_zero_stage_never_needs_more_per_gpu(s in arb_scenario()) {
        let s = Scenario { mode: if s.mode == Mode::Inference { Mode::Full } else { s.mode }, ..s };
        let mut last = None;
        for z in 0..=3u8 {
            let e = estimate(&Scenario { zero: z, ..s.clone() });
            let v = e.per_gpu_model_states();
            if let Some(prev) = last {
                prop_assert!(v <= prev, "stage {} {} > {}", z, v, prev);
            }
            last = Some(v);
        }
    }

    #[test]
    fn verdict_agrees_with_totals_and_capacities(s in arb_scenario(), pick in any::<Index>()) {
        let m = pick.get(&catalog().machines);
        let r = fit_on(&s, m);
        let training = s.mode.is_training();
        for (what, v) in [("decode", r.decode_tokens_per_s), ("prefill", r.prefill_tokens_per_s), ("ttft", r.ttft_s)] {
            prop_assert!(v.is_finite() && v >= 0.0, "{} {} on {}", what, v, m.id);
        }
        prop_assert!(r.gpu_layers <= r.total_layers);
        prop_assert_eq!(r.fits(), !matches!(r.verdict, Verdict::None | Verdict::Disk));
        prop_assert_eq!(r.runs(), r.verdict != Verdict::None);
        prop_assert_eq!(r.disk_bytes.0 > 0, r.verdict == Verdict::Disk);
        if r.fits() {
            prop_assert!(r.headroom_bytes >= 0, "{:?} with headroom {} on {}", r.verdict, r.headroom_bytes, m.id);
        }
        let mut cache = EstimateCache::new(&s);
        let cpu_need = cache.get(0).total();
        let acc = m.gpu.as_deref().and_then(|id| catalog().accelerator(id));
        match r.verdict {
            Verdict::Gpu | Verdict::Unified => {
                prop_assert!(acc.is_some());
                prop_assert!(r.gpu_required <= r.gpu_capacity, "{} > {}", r.gpu_required, r.gpu_capacity);
                prop_assert_eq!(r.headroom_bytes, r.gpu_capacity.signed_sub(r.gpu_required));
                prop_assert_eq!(r.gpu_layers, r.total_layers);
                if r.verdict == Verdict::Gpu {
                    prop_assert!(r.ram_required <= r.ram_capacity);
                }
            }
            Verdict::Offload => {
                prop_assert!(!training);
                prop_assert!(s.runtime != headroom::core::scenario::Runtime::Mlx, "MLX offloaded on {}", m.id);
                prop_assert!(r.gpu_layers >= 1 && r.gpu_layers < r.total_layers, "{} of {}", r.gpu_layers, r.total_layers);
                prop_assert!(r.gpu_required > r.gpu_capacity, "offloaded although the whole model fits");
                prop_assert!(r.ram_required <= r.ram_capacity);
                prop_assert_eq!(r.headroom_bytes, r.ram_capacity.signed_sub(r.ram_required));
            }
            Verdict::Cpu => {
                prop_assert!(!training);
                prop_assert!(s.runtime != headroom::core::scenario::Runtime::Mlx, "MLX on the CPU of {}", m.id);
                prop_assert_eq!(r.gpu_layers, 0);
                prop_assert_eq!(r.ram_required, cpu_need);
                prop_assert!(r.ram_required <= r.ram_capacity);
                prop_assert_eq!(r.headroom_bytes, r.ram_capacity.signed_sub(cpu_need));
            }
            Verdict::Disk => {
                // The disk tier opens only where memory is closed: RAM could not hold the job.
                if !training {
                    prop_assert!(cpu_need > r.ram_capacity, "{} fits in {} RAM", cpu_need, r.ram_capacity);
                    prop_assert!(r.decode_tokens_per_s > 0.0);
                }
                prop_assert!(r.ram_required <= r.ram_capacity);
                prop_assert!(r.gpu_layers <= r.total_layers);
            }
            // MLX keeps every layer on an Apple GPU or does not run: the reason is a note.
            Verdict::None if s.runtime == headroom::core::scenario::Runtime::Mlx && !training => {
                use headroom::core::placement::note::Note;
                prop_assert!(r.notes.iter().any(|n| matches!(n,
                    Note::NeedsAppleSilicon | Note::MlxAllOnGpu { .. } | Note::HostRamShort { .. })),
                    "{:?} on {}", r.notes, m.id);
            }
            Verdict::None => {
                // The CPU path is always open to inference: it was closed by RAM.
                if !training {
                    prop_assert!(cpu_need > r.ram_capacity, "{} fits in {} RAM", cpu_need, r.ram_capacity);
                }
                // A discrete GPU was too small, or the host part did not fit in RAM.
                if let Some(a) = acc.filter(|a| a.memory_kind == MemoryKind::Discrete) {
                    let g = (m.gpu_count.max(1)) as u64;
                    let host = cache.get(g).host_total();
                    prop_assert!(r.gpu_required > r.gpu_capacity || host > r.ram_capacity,
                        "{} on {}: {} ≤ {} and host {} ≤ {}", a.id, m.id, r.gpu_required, r.gpu_capacity, host, r.ram_capacity);
                }
            }
        }
    }

    #[test]
    fn solvers_answer_a_fit_and_one_step_more_does_not(s in arb_scenario(), pick in any::<Index>()) {
        use headroom::core::scenario::limits::{MAX_BATCH, MAX_CONTEXT};
        let gpu_machines: Vec<&Machine> = catalog().machines.iter().filter(|m| m.gpu.is_some()).collect();
        let m = *pick.get(&gpu_machines);
        let st = FitSettings::default();
        let s = s.clamped();

        match solve_max_batch(&s, m, catalog(), &st) {
            Some(b) => {
                prop_assert!(fits_gpu(&Scenario { batch: b, ..s.clone() }, m), "batch {} on {}", b, m.id);
                if b < MAX_BATCH {
                    prop_assert!(!fits_gpu(&Scenario { batch: b + 1, ..s.clone() }, m), "batch {}+1 on {}", b, m.id);
                }
            }
            None => prop_assert!(!fits_gpu(&Scenario { batch: 1, ..s.clone() }, m), "batch 1 fits on {}", m.id),
        }

        let at_context = |c: u64| Scenario { context: c, prompt_tokens: s.prompt_tokens.min(c), ..s.clone() };
        let top = if s.model.max_context > 0 { s.model.max_context } else { MAX_CONTEXT };
        match solve_max_context(&s, m, catalog(), &st) {
            Some(c) => {
                prop_assert!(c <= top);
                prop_assert!(fits_gpu(&at_context(c), m), "context {} on {}", c, m.id);
                if c < top {
                    // The solver answers in steps of 16 tokens.
                    prop_assert!(!fits_gpu(&at_context(c + 16), m), "context {}+16 on {}", c, m.id);
                }
            }
            None => prop_assert!(!fits_gpu(&at_context(256.min(top)), m), "256 tokens fit on {}", m.id),
        }

        // MLX steps down its own layouts (mlx-community's bf16, 8, 6, 5, 4 and 3 bits), as the
        // solver does.
        let ladder: &[WeightPrecision] = if s.runtime == Runtime::Mlx {
            &headroom::core::mlx::PRECISION_LADDER
        } else {
            &PRECISION_LADDER
        };
        match solve_precision(&s, m, catalog(), &st) {
            Some(p) => {
                let i = ladder.iter().position(|&q| q == p).expect("on the ladder");
                prop_assert!(fits_gpu(&Scenario { weights: p, ..s.clone() }, m), "{:?} on {}", p, m.id);
                if i > 0 {
                    prop_assert!(!fits_gpu(&Scenario { weights: ladder[i - 1], ..s.clone() }, m), "{:?} fits before {:?}", ladder[i - 1], p);
                }
            }
            None => prop_assert!(ladder.iter().all(|&q| !fits_gpu(&Scenario { weights: q, ..s.clone() }, m)), "a precision fits on {}", m.id),
        }

        let acc = m.gpu.as_deref().and_then(|id| catalog().accelerator(id)).expect("machine's accelerator");
        if acc.memory_kind == MemoryKind::Discrete {
            let cap = if s.runtime == Runtime::Vllm { acc.memory.scale(s.gpu_memory_utilization) } else { acc.memory };
            let per_gpu = |n: u64| estimate(&Scenario { gpus: n, ..s.clone() }).per_gpu_total();
            if let Some(n) = solve_min_gpus(&s, &acc.id, catalog(), 1024) {
                prop_assert!(per_gpu(n) <= cap, "{} GPUs of {}", n, acc.id);
                let before = if n <= 8 { n - 1 } else { n / 2 };
                if before >= 1 {
                    prop_assert!(per_gpu(before) > cap, "{} GPUs of {} already hold it", before, acc.id);
                }
            }
        }
    }
}
