//! The CPU-vs-GPU view never promises what the fit rejects: over the whole catalog and a set of
//! dense and mixture-of-experts models, a bar or a solid stretch of a curve that says "this runs"
//! is a placement the fit engine also accepts, and where the fit says disk or nothing, no bar
//! and no solid point says otherwise.

use headroom::core::WeightPrecision;
use headroom::core::fit::{FitSettings, Verdict, fit_all};
use headroom::core::scenario::Scenario;
use headroom::core::teach::{BarKind, teach_curves};
use headroom::io::catalog::builtin;

fn scenario(model: &str, w: Option<WeightPrecision>, context: u64) -> Scenario {
    let p = builtin().model(model).unwrap_or_else(|| panic!("{model}"));
    Scenario {
        model: p.spec.clone(),
        model_id: Some(model.into()),
        weights: w.unwrap_or_else(|| p.default_weights()),
        context,
        ..Scenario::default()
    }
}

#[test]
fn no_curve_or_bar_runs_where_the_fit_says_it_does_not() {
    let cat = builtin();
    let st = FitSettings::default();
    let cases = [
        scenario("llama-3-8b", Some(WeightPrecision::Bf16), 8192),
        scenario("llama-3-8b", Some(WeightPrecision::Q4KM), 32_768),
        scenario("llama-3.1-70b", Some(WeightPrecision::Q4KM), 8192),
        scenario("qwen3-30b-a3b", Some(WeightPrecision::Q4KM), 8192),
        scenario("gpt-oss-120b", None, 8192),
    ];
    let mut checked = 0;
    let mut disk_or_none = 0;
    let mut splits = 0;
    for s in &cases {
        let fits = fit_all(s, &cat.machines, cat, &st);
        for (m, f) in cat.machines.iter().zip(&fits) {
            let acc = m.gpu.as_deref().and_then(|g| cat.accelerator(g));
            let t = teach_curves(s, &st, m, acc, &[]);
            let who = format!("{} on {}: fit {}", s.model.name, m.id, f.verdict_text());
            for b in t.bars.iter().filter(|b| b.fits) {
                let ok = match b.kind {
                    BarKind::CpuOnly => f.fits(),
                    BarKind::Split => matches!(
                        f.verdict,
                        Verdict::Offload | Verdict::Gpu | Verdict::Unified
                    ),
                    BarKind::AllGpu => matches!(f.verdict, Verdict::Gpu | Verdict::Unified),
                    BarKind::BestUnified => true,
                };
                assert!(ok, "{who}: bar '{}' says it fits", b.label);
            }
            let solid_split = t.has_gpu && t.k_min <= t.k_fit;
            if !f.fits() {
                disk_or_none += 1;
                assert!(
                    !solid_split,
                    "{who}: k {} … {} drawn solid",
                    t.k_min, t.k_fit
                );
                assert!(
                    t.n_cpu_moe_fit.is_none(),
                    "{who}: --n-cpu-moe {:?} drawn as fitting",
                    t.n_cpu_moe_fit
                );
                assert!(
                    t.bars
                        .iter()
                        .all(|b| !b.fits || b.kind == BarKind::BestUnified)
                );
            }
            if solid_split || t.n_cpu_moe_fit.is_some() {
                assert!(f.fits(), "{who}: a split drawn solid");
            }
            // The layer split the fit chose is where the chart's cliff is.
            if f.verdict == Verdict::Offload && f.expert_split.is_none() {
                splits += 1;
                assert_eq!(t.k_fit, f.gpu_layers, "{who}");
                assert!(t.k_min <= f.gpu_layers, "{who}: k_min {}", t.k_min);
            }
            // Unified memory has no link to stream over.
            if f.unified {
                assert!(t.streaming.is_empty(), "{who}: a PCIe curve");
            }
            checked += 1;
        }
    }
    eprintln!("checked {checked}, disk or none {disk_or_none}, layer splits {splits}");
    // The battery covers every kind of answer, not only the easy ones.
    assert!(checked >= 5 * 150, "{checked}");
    assert!(disk_or_none >= 20, "{disk_or_none}");
    assert!(splits >= 20, "{splits}");
}
