//! Property tests over the whole input domain: parameters up to 10^13, context up to 10^7,
//! batch up to 4096, GPUs up to 65,536. No panic, no NaN; totals add up; monotone in the inputs.

use headroom::core::estimate::{ComponentKind, estimate};
use headroom::core::model::ModelSpec;
use headroom::core::precision::{KvPrecision, KvTypes, WeightPrecision};
use headroom::core::scenario::{
    Checkpointing, KvAllocation, LoraTargets, Mode, Offload, Optimizer, Runtime, Scenario,
};
use proptest::prelude::*;

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
}
