//! Unified memory (Apple silicon, AMD APUs): the layers the GPU's share holds run on the GPU,
//! the rest on the CPU from the same pool (llama.cpp `-ngl k` on Metal), and the raise of the
//! GPU's limit the notes offer — with the arithmetic anyone can check by hand.

use headroom::core::WeightPrecision;
use headroom::core::catalog::{Machine, MachineKind};
use headroom::core::fit::{FitResult, FitSettings, OffloadStyle, Verdict, fit_all};
use headroom::core::placement::capacity::per_layer_bytes;
use headroom::core::placement::note::{Note, RaiseHow};
use headroom::core::scenario::Scenario;
use headroom::core::speed::{SpeedConstants, SpeedQuery, placement_speed};
use headroom::core::units::Bytes;
use headroom::io::catalog::builtin;

fn scenario(model: &str, w: WeightPrecision) -> Scenario {
    let p = builtin().model(model).unwrap_or_else(|| panic!("{model}"));
    Scenario {
        model: p.spec.clone(),
        model_id: Some(model.into()),
        weights: w,
        context: 8192,
        ..Scenario::default()
    }
}

fn machine(id: &str) -> Machine {
    builtin()
        .machine(id)
        .unwrap_or_else(|| panic!("{id}"))
        .clone()
}

fn fit_with(s: &Scenario, m: &Machine, st: &FitSettings) -> FitResult {
    fit_all(s, [m], builtin(), st).remove(0)
}

fn fit(s: &Scenario, m: &Machine) -> FitResult {
    fit_with(s, m, &FitSettings::default())
}

/// Decode on the same machine with every layer on its CPU cores (the verdict these Macs got
/// before they had a partial offload): the CPU's share of the unified bandwidth.
fn cpu_only_decode(s: &Scenario, m: &Machine) -> f64 {
    let acc = m.gpu.as_deref().and_then(|g| builtin().accelerator(g));
    let e0 = headroom::core::estimate::estimate(&Scenario {
        gpus: 0,
        ..s.clone()
    });
    let k = SpeedConstants::default();
    let q = SpeedQuery::on_machine(s, &e0, m, acc, &k).cpu_only();
    placement_speed(&q, &k).decode_tokens_per_s
}

fn one_gpu_layer_bytes(s: &Scenario) -> (Bytes, Bytes) {
    let e1 = headroom::core::estimate::estimate(&Scenario {
        gpus: 1,
        ..s.clone()
    });
    (e1.workload.fixed_per_device, per_layer_bytes(&e1))
}

#[test]
fn a_24_gb_macbook_air_puts_31_of_32_layers_of_8b_bf16_on_the_gpu() {
    // Metal's default working set on 24 GiB: 2/3 = 16.0 GiB; the whole model needs 16.5 GiB.
    // Each layer is 218 M parameters × 2 B = 0.41 GiB plus 32 MiB of 8K KV (8 KV heads × 128 ×
    // 2 × 2 B × 8192): (16 GiB − fixed) / 0.44 GiB ≥ 31, and one layer stays on the CPU.
    let s = scenario("llama-3-8b", WeightPrecision::Bf16);
    let m = machine("macbook-air-m2-24gb");
    let r = fit(&s, &m);
    assert_eq!(r.gpu_capacity, Bytes::gib(16));
    let (fixed, per) = one_gpu_layer_bytes(&s);
    let by_hand = (Bytes::gib(16).0 - fixed.0) / per.0;
    assert!(by_hand >= 31, "{by_hand}");
    assert_eq!(r.verdict, Verdict::Offload, "{r:?}");
    assert_eq!((r.gpu_layers, r.total_layers), (31, 32));
    assert_eq!(r.offload_style, Some(OffloadStyle::Layers));
    assert_eq!(r.verdict_text(), "offload 31/32");
    // One pool: what the GPU holds and what the CPU layers hold fit the usable RAM together.
    let pool = r.ram_capacity.0 as i64 - r.headroom_bytes;
    assert!(pool as u64 <= r.ram_capacity.0);
    let text: Vec<String> = r.notes.iter().map(|n| n.to_string()).collect();
    assert!(
        text.iter()
            .any(|t| t.starts_with("31 of 32 layers on the GPU") && t.contains("same memory")),
        "{text:?}"
    );
    // 31 of 32 layers at the GPU's bandwidth beat all of them at the CPU's.
    // CPU only: 2.54 tok/s before (the M2's CPU cluster draws 60 % of its 100 GB/s).
    let cpu = cpu_only_decode(&s, &m);
    assert!(
        r.decode_tokens_per_s > 1.5 * cpu,
        "{} vs CPU {cpu}",
        r.decode_tokens_per_s
    );
}

#[test]
fn raising_the_wired_limit_is_offered_and_when_assumed_puts_the_whole_model_on_the_gpu() {
    let s = scenario("llama-3-8b", WeightPrecision::Bf16);
    let m = machine("macbook-air-m2-24gb");
    let r = fit(&s, &m);
    // RAM 24 GiB less the OS reserve max(2 GiB, 10 % = 2.4 GiB) = 21.6 GiB = 22,118 MiB.
    let raise = r
        .notes
        .iter()
        .find_map(|n| match n {
            Note::GpuLimitRaise(r) => Some(*r),
            _ => None,
        })
        .expect("a raise is offered");
    assert_eq!(raise.mib(), 22_118);
    assert_eq!(raise.how, RaiseHow::Sysctl);
    assert_eq!(raise.command(), "sudo sysctl iogpu.wired_limit_mb=22118");
    let st = FitSettings {
        raise_gpu_limit: true,
        ..FitSettings::default()
    };
    let raised = fit_with(&s, &m, &st);
    assert_eq!(raised.verdict, Verdict::Unified, "{raised:?}");
    assert_eq!(raised.gpu_capacity, Bytes::mib(22_118));
    assert!(raised.decode_tokens_per_s > r.decode_tokens_per_s);
    assert!(
        raised
            .notes
            .iter()
            .any(|n| matches!(n, Note::GpuLimitRaised(_)))
    );
    // Where the whole model already fits, nothing is offered.
    let small = scenario("llama-3-8b", WeightPrecision::Q4KM);
    let r = fit(&small, &m);
    assert_eq!(r.verdict, Verdict::Unified);
    assert!(!r.notes.iter().any(|n| matches!(n, Note::GpuLimitRaise(_))));
}

#[test]
fn a_48_gb_mac_mini_runs_70b_q4_k_m_mostly_on_its_gpu() {
    // 48 GiB × 3/4 = 36 GiB for the GPU; the model needs 42.7 GiB in all, the usable RAM is
    // 48 − 4.8 = 43.2 GiB: whole layers up to 36 GiB on the GPU, the rest on the CPU.
    let s = scenario("llama-3.1-70b", WeightPrecision::Q4KM);
    let m = machine("mac-mini-m4-pro-48gb");
    let r = fit(&s, &m);
    assert_eq!(r.gpu_capacity, Bytes::gib(36));
    let (fixed, per) = one_gpu_layer_bytes(&s);
    let by_hand = (Bytes::gib(36).0 - fixed.0) / per.0;
    assert_eq!(r.verdict, Verdict::Offload, "{r:?}");
    assert_eq!(r.gpu_layers, by_hand.min(79));
    assert!(r.headroom_bytes >= 0);
    // CPU only: 1.80 tok/s before. The GPU's 83 % of the layers run Q4_K_M at the pace of the
    // Metal mat-vec kernels' ALU work on the M4 Pro (speed::metal: 8.6 TFLOPS for 273 GB/s),
    // not of its bytes: about twice the CPU-only rate (3.55 tok/s; over 3.6 at the bytes alone).
    let cpu = cpu_only_decode(&s, &m);
    assert!(
        r.decode_tokens_per_s > 1.8 * cpu,
        "{} vs CPU {cpu}",
        r.decode_tokens_per_s
    );
}

#[test]
fn an_apu_without_a_configured_limit_offers_the_gtt_size() {
    // Ryzen AI 9 HX 370, 32 GiB: amdgpu's default GTT is half of RAM (16 GiB); raised to RAM
    // less the reserve (32 − 3.2 = 28.8 GiB).
    let s = scenario("qwen2.5-32b", WeightPrecision::Q4KM);
    let m = machine("laptop-strix-point-hx370-32gb");
    let r = fit(&s, &m);
    assert_eq!(r.gpu_capacity, Bytes::gib(16));
    assert_eq!(r.verdict, Verdict::Offload, "{r:?}");
    let raise = r.notes.iter().find_map(|n| match n {
        Note::GpuLimitRaise(r) => Some(*r),
        _ => None,
    });
    let raise = raise.expect("raise offered");
    assert_eq!(raise.how, RaiseHow::KernelGtt);
    assert!(
        raise.command().starts_with("amdgpu.gttsize=29491 "),
        "{}",
        raise.command()
    );
}

#[test]
fn discrete_gpus_and_configured_limits_are_not_offered_a_raise() {
    let s = scenario("llama-3.1-70b", WeightPrecision::Q4KM);
    for id in ["desktop-rtx4090-64gb", "framework-desktop-64gb"] {
        let r = fit(&s, &machine(id));
        assert!(
            !r.notes
                .iter()
                .any(|n| matches!(n, Note::GpuLimitRaise(_) | Note::GpuLimitRaised(_))),
            "{id}: {:?}",
            r.notes
        );
    }
}

#[test]
fn a_2000_dollar_apple_pick_for_70b_offloads_to_its_gpu_and_names_the_raise() {
    use headroom::core::recommend::{Constraints, Group, KindFilter, recommend};
    let cat = builtin();
    let s = scenario("llama-3.1-70b", WeightPrecision::Q4KM);
    let k = Constraints {
        budget_usd: Some(2000.0),
        kinds: vec![KindFilter(MachineKind::Apple)],
        ..Constraints::default()
    };
    let r = recommend(
        &s,
        &cat.machines,
        None,
        cat,
        &FitSettings::default(),
        &k,
        headroom::io::catalog::quality(),
    );
    let g = r
        .groups
        .iter()
        .find(|g| g.group == Group::Apple)
        .expect("Apple");
    let p = g.best().expect("a pick");
    // Before: "Mac mini M4 Pro 48 GB, CPU 1.80 tok/s".
    assert_eq!(p.verdict, Verdict::Offload, "{p:?}");
    assert!(p.tokens_per_s > 3.0, "{}", p.tokens_per_s);
    let raise = p.limit_raise.as_ref().expect("the raise is named");
    assert!(
        raise
            .command
            .starts_with("sudo sysctl iogpu.wired_limit_mb=")
    );
    assert!(raise.tokens_per_s > p.tokens_per_s);
}
