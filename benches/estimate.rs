//! One full estimate (goal ≤ 2 µs) and one scenario fitted against the whole catalog with speed
//! and cost (goal ≤ 50 µs).

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
}

criterion_group!(benches, bench);
criterion_main!(benches);
