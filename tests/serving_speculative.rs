//! Speculative decoding in the serving planner (`headroom serve --speculative …`): the drafter's
//! weights and KV come out of the KV pool, and a batched step verifies `γ + 1` tokens per
//! sequence, so the speedup falls as the batch grows (docs/serving.md, "Speculative decoding").

use headroom::core::catalog::{Catalog, Machine};
use headroom::core::fit::{EstimateCache, FitSettings, fit_machine};
use headroom::core::scenario::{KvAllocation, Runtime, Scenario};
use headroom::core::serving::{self, Built, Engine};
use headroom::core::speculative::{SpecMethod, SpeculativeInputs};
use headroom::io::catalog::builtin;

fn cat() -> &'static Catalog {
    builtin()
}

fn h100() -> Machine {
    cat()
        .machine("aws-p5-4xlarge")
        .expect("1x H100 instance")
        .clone()
}

/// Llama 3.1 8B BF16 under `engine`, prompt 1,024, output 256, context 8,192.
fn scenario(engine: Engine, spec: Option<SpeculativeInputs>) -> Scenario {
    let preset = cat().model("llama-3.1-8b").unwrap();
    let mut s = Scenario {
        model: preset.spec.clone(),
        model_id: Some(preset.id.clone()),
        runtime: Runtime::Vllm,
        kv_allocation: KvAllocation::Paged,
        context: 8192,
        prompt_tokens: 1024,
        speculative: spec,
        ..Scenario::default()
    };
    s.serving.output_tokens = 256;
    s.serving.engine = engine;
    s
}

fn eagle3() -> SpeculativeInputs {
    SpeculativeInputs {
        method: SpecMethod::Eagle3,
        ..SpeculativeInputs::default()
    }
}

fn build_of(s: &Scenario, m: &Machine) -> Built {
    let acc = cat().accelerator(m.gpu.as_deref().unwrap()).unwrap();
    let st = FitSettings::default();
    let fit = fit_machine(&mut EstimateCache::new(s), m, cat(), &st);
    serving::build(s, &fit, m, acc, &st, 1).expect("fits")
}

#[test]
fn explore() {
    let m = h100();
    let plain = build_of(&scenario(Engine::Sglang, None), &m);
    let spec = build_of(&scenario(Engine::Sglang, Some(eagle3())), &m);
    for d in [1.0, 8.0, 16.0, 32.0, 64.0, 128.0] {
        let a = plain.step.time(d, 1152.0, 0.0, 0.0);
        let b = spec.step.time(d, 1152.0, 0.0, 0.0);
        let e = spec.step.tokens_per_step();
        println!(
            "d {d}: plain {:.2} ms, spec {:.2} ms / {e:.3} tok, speedup {:.3}",
            a * 1e3,
            b * 1e3,
            e * a / b
        );
        let pa = plain.static_batch(d as u64);
        let pb = spec.static_batch(d as u64);
        println!(
            "   static: {:.0} vs {:.0} -> {:.3}",
            pa.output_tokens_per_s,
            pb.output_tokens_per_s,
            pb.output_tokens_per_s / pa.output_tokens_per_s
        );
    }
    println!(
        "{:?}",
        spec.step.spec.as_ref().map(|x| (
            x.draft.dense_bytes,
            x.draft.active_params,
            x.draft.kv_per_token
        ))
    );
    println!("{:?} {:?}", plain.pool, spec.pool);
    println!("gemm {} bw {}", plain.step.gemm_rate, plain.step.bandwidth);
}
