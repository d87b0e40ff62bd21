//! One full estimate (goal ≤ 2 µs) and one scenario fitted against the whole catalog with speed
//! and cost (goal ≤ 50 µs), the serving plans of the whole catalog (goal ≤ 2 ms), and one
//! machine's cluster curve (goal ≤ 50 ms).

use criterion::{Criterion, criterion_group, criterion_main};
use headroom::core::fit::{FitSettings, fit_all};
use headroom::core::scenario::{Mode, Scenario};
use headroom::core::{WeightPrecision, estimate};
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let s = Scenario::default();
    c.bench_function("estimate llama-3-8b inference", |b| {
        b.iter(|| estimate(black_box(&s)))
    });
    c.bench_function(
        "estimate llama-3-8b numbers only (as the fit engine uses it)",
        |b| b.iter(|| headroom::core::estimate::estimate_with(black_box(&s), false)),
    );
    let q = Scenario {
        weights: WeightPrecision::Q4KM,
        ..Scenario::default()
    };
    c.bench_function("estimate llama-3-8b q4_k_m (per-layer mix)", |b| {
        b.iter(|| estimate(black_box(&q)))
    });
    let t = Scenario {
        mode: Mode::Full,
        gpus: 8,
        zero: 3,
        ..Scenario::default()
    };
    c.bench_function("estimate llama-3-8b full fine-tune zero-3", |b| {
        b.iter(|| estimate(black_box(&t)))
    });

    let cat = headroom::io::catalog::builtin();
    let st = FitSettings::default();
    c.bench_function(
        &format!("fit across the catalog ({} machines)", cat.machines.len()),
        |b| b.iter(|| fit_all(black_box(&s), &cat.machines, cat, &st)),
    );

    // Serving many users on the whole catalog at one workload (goal ≤ 2 ms): the plans of every
    // fitted machine, with the target search and an asked load.
    let mut served = Scenario::default();
    served.serving.load = Some(headroom::core::serving::Load::Users(500));
    let fits = fit_all(&served, &cat.machines, cat, &st);
    c.bench_function(
        &format!(
            "serving plans across the catalog ({} machines)",
            cat.machines.len()
        ),
        |b| b.iter(|| headroom::core::serving::plan_all(black_box(&served), &fits, cat, &st)),
    );

    // A cluster curve (what the Cluster tab computes when an input changes; goal ≤ 50 ms): a 70B
    // full fine-tune with DeepSpeed on p5.48xlarge nodes, every node count and layout.
    let p = cat.model("llama-3-70b").expect("preset");
    let train = Scenario {
        model: p.spec.clone(),
        model_id: Some(p.id.clone()),
        mode: Mode::Full,
        framework: headroom::core::scenario::Framework::DeepSpeed,
        checkpointing: headroom::core::scenario::Checkpointing::Full,
        context: 4096,
        ..Scenario::default()
    };
    let m = cat.machine("aws-p5-48xlarge").expect("p5");
    let acc = cat.accelerator("h100-sxm").expect("h100");
    let inputs = headroom::core::cluster::ClusterInputs::default();
    c.bench_function(
        "cluster curve: llama-3-70b full fine-tune on p5 nodes",
        |b| {
            b.iter(|| {
                headroom::core::cluster::cluster_curve(black_box(&train), m, acc, &inputs, cat, &st)
            })
        },
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
