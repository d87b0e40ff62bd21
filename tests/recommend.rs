//! Recommendations on the built-in catalog, checked against the fit rows they come from: every
//! assertion is a relation ("no fitting laptop is cheaper"), not a machine id, so the picks may
//! change with the speed model or the catalog while the rules keep holding.

use headroom::core::WeightPrecision;
use headroom::core::catalog::{Catalog, Machine, MachineKind, Price, Vendor};
use headroom::core::fit::{FitResult, FitSettings, Verdict, fit_all};
use headroom::core::recommend::{
    ChangeKind, Constraints, Group, GroupPicks, KindFilter, Role, recommend,
};
use headroom::core::scenario::Scenario;
use headroom::core::units::{Bytes, GIB};
use headroom::io::catalog::builtin;

fn scenario(model: &str, weights: WeightPrecision, context: u64) -> Scenario {
    let p = builtin()
        .model(model)
        .unwrap_or_else(|| panic!("preset {model}"));
    Scenario {
        model: p.spec.clone(),
        model_id: Some(p.id.clone()),
        weights,
        context,
        ..Scenario::default()
    }
}

fn price(m: &Machine) -> Option<f64> {
    m.price.as_ref().map(Price::usd)
}

fn is_apple(cat: &Catalog, m: &Machine) -> bool {
    m.gpu
        .as_deref()
        .and_then(|g| cat.accelerator(g))
        .is_some_and(|a| a.vendor == Vendor::Apple)
}

/// (machine, fit) for every catalog machine.
fn rows<'a>(s: &Scenario, cat: &'a Catalog) -> Vec<(&'a Machine, FitResult)> {
    let fits = fit_all(s, &cat.machines, cat, &FitSettings::default());
    cat.machines.iter().zip(fits).collect()
}

fn group(r: &headroom::core::recommend::Recommendations, g: Group) -> &GroupPicks {
    r.groups
        .iter()
        .find(|x| x.group == g)
        .unwrap_or_else(|| panic!("no {g:?} group in {r:#?}"))
}

fn on_gpu(f: &FitResult) -> bool {
    matches!(f.verdict, Verdict::Gpu | Verdict::Unified)
}

#[test]
fn llama3_8b_q4km_8k_picks_the_cheapest_laptop_that_holds_it_on_its_gpu() {
    // Llama 3 8B Q4_K_M: 4.58 GiB of weights (llama.cpp's own figure for the GGUF) + KV at 8K:
    // 2 × 32 layers × 8 KV heads × 128 × 2 B × 8,192 = 1.0 GiB, + runtime overhead ≈ 6 GiB.
    // An 8 GB MacBook Air's GPU may use 2/3 × 8 = 5.33 GiB: no; a 16 GB one 10.67 GiB: yes; an
    // 8 GiB RTX 4060 Laptop GPU: yes. The pick must cost no more than any laptop that fits.
    let cat = builtin();
    let s = scenario("llama-3-8b", WeightPrecision::Q4KM, 8192);
    let st = FitSettings::default();
    let r = recommend(
        &s,
        &cat.machines,
        None,
        cat,
        &st,
        &Constraints::default(),
        headroom::io::catalog::quality(),
    );
    let laptop = group(&r, Group::Laptop);
    let p = laptop.best().expect("a laptop pick");
    assert_eq!(p.role, Role::Cheapest);
    let reason = p.reason.to_string();
    assert!(reason.starts_with("cheapest laptop with ≥ "), "{reason}");
    assert!(reason.contains("tok/s"), "{reason}");
    let rows = rows(&s, cat);
    let (pm, pf) = rows.iter().find(|(m, _)| *m.id == *p.machine).unwrap();
    assert_eq!(pm.kind, MachineKind::Laptop);
    assert!(on_gpu(pf), "{pf:?}");
    let pick_price = price(pm).unwrap();
    let mut fitting = 0;
    for (m, f) in &rows {
        if m.kind == MachineKind::Laptop && on_gpu(f) && price(m).is_some() {
            fitting += 1;
            assert!(
                pick_price <= price(m).unwrap(),
                "{} (${pick_price}) is dearer than {} (${})",
                pm.id,
                m.id,
                price(m).unwrap()
            );
        }
    }
    assert!(fitting >= 2, "more than one laptop fits: {fitting}");
    // The 8 GB MacBook Air does not hold it on the GPU (5.33 GiB usable < ~6 GiB).
    let air8 = rows
        .iter()
        .find(|(m, _)| &*m.id == "macbook-air-m1-8gb")
        .unwrap();
    assert!(!on_gpu(&air8.1), "{:?}", air8.1);
}

#[test]
fn llama31_70b_q4km_picks_a_64gb_mac_and_the_lowest_cost_cloud_instance() {
    // Llama 3.1 70B Q4_K_M at 8K: ~70.6e9 × ~4.8 bits / 8 ≈ 40 GiB of weights + KV
    // 2 × 80 layers × 8 × 128 × 2 B × 8,192 = 2.5 GiB ≈ 43 GiB. A 48 GB Mac's GPU may use
    // 3/4 × 48 = 36 GiB: no; a 64 GB Mac's 48 GiB: yes. So the Apple pick has ≥ 64 GB.
    let cat = builtin();
    let s = scenario("llama-3.1-70b", WeightPrecision::Q4KM, 8192);
    let st = FitSettings::default();
    let r = recommend(
        &s,
        &cat.machines,
        None,
        cat,
        &st,
        &Constraints::default(),
        headroom::io::catalog::quality(),
    );
    let rows = rows(&s, cat);
    let fit_of = |id: &str| rows.iter().find(|(m, _)| &*m.id == id).unwrap();

    let apple = group(&r, Group::Apple).best().expect("an Apple pick");
    let (am, af) = fit_of(&apple.machine);
    assert!(is_apple(cat, am));
    assert!(am.ram >= Bytes::gib(64), "{} has {}", am.id, am.ram);
    assert_eq!(af.verdict, Verdict::Unified);
    // No cheaper Apple machine holds it.
    for (m, f) in &rows {
        if is_apple(cat, m) && on_gpu(f) && price(m).is_some() {
            assert!(
                price(am).unwrap() <= price(m).unwrap(),
                "{} vs {}",
                am.id,
                m.id
            );
        }
    }

    // Cloud: the best-value pick has the lowest $/1M output tokens among the cloud instances that
    // run it and have an hourly price, each priced at the serving load (the most users that meet
    // the default target: $/1M = $/h ÷ (the machine's output tok/s at that load × 3600) × 1e6).
    let mut fits: Vec<FitResult> = rows.iter().map(|(_, f)| f.clone()).collect();
    let plans = headroom::core::serving::price_cloud_at_load(&s, &mut fits, cat, &st);
    let rows: Vec<(&Machine, FitResult)> = rows.iter().map(|(m, _)| *m).zip(fits).collect();
    let fit_of = |id: &str| rows.iter().find(|(m, _)| &*m.id == id).unwrap();
    assert!(
        r.cloud_cost_load
            .as_deref()
            .is_some_and(|t| t.contains("most users")),
        "{:?}",
        r.cloud_cost_load
    );
    let cloud = group(&r, Group::Cloud);
    let best = cloud
        .picks
        .iter()
        .find(|p| p.role == Role::BestValue)
        .expect("a best-value cloud pick");
    let (_, bf) = fit_of(&best.machine);
    let best_cost = bf.usd_per_million_tokens.unwrap();
    assert_eq!(best.usd_per_million_tokens, Some(best_cost));
    let plan = plans.iter().find(|p| *p.machine == *best.machine).unwrap();
    let by_hand =
        best.price.usd().unwrap() / (plan.machine_output_tokens_per_s().unwrap() * 3600.0) * 1e6;
    assert!(
        (best_cost - by_hand).abs() <= 1e-9 * by_hand,
        "{best_cost} vs {by_hand}"
    );
    let mut n = 0;
    for (m, f) in &rows {
        if m.kind == MachineKind::Cloud
            && f.fits()
            && price(m).is_some()
            && let Some(c) = f.usd_per_million_tokens
        {
            n += 1;
            assert!(
                best_cost <= c,
                "{} ${best_cost} > {} ${c}",
                best.machine,
                m.id
            );
        }
    }
    assert!(n >= 2, "{n} cloud instances run it");
    // And the cheapest per hour among those that hold it on the GPU.
    // (Folded into the best-value pick when it is the same instance.)
    let cheap = cloud
        .picks
        .iter()
        .find(|p| p.role == Role::Cheapest || p.reason.to_string().contains("cheapest per hour"))
        .expect("a cheapest cloud pick");
    assert!(cheap.price.is_hourly());
    for (m, f) in &rows {
        if m.kind == MachineKind::Cloud && on_gpu(f) && price(m).is_some() {
            assert!(cheap.price.usd().unwrap() <= price(m).unwrap(), "{}", m.id);
        }
    }
    assert!(cheap.price_text().ends_with("/h"), "{}", cheap.price_text());
}

#[test]
fn a_budget_below_every_fitting_machine_says_what_would_have_to_give() {
    let cat = builtin();
    let s = scenario("llama-3.1-70b", WeightPrecision::Q4KM, 8192);
    let st = FitSettings::default();
    let k = Constraints {
        budget_usd: Some(500.0),
        kinds: vec![KindFilter(MachineKind::Apple)],
        ..Constraints::default()
    };
    let r = recommend(
        &s,
        &cat.machines,
        None,
        cat,
        &st,
        &k,
        headroom::io::catalog::quality(),
    );
    assert_eq!(r.groups.len(), 1, "only the kind asked for");
    let apple = group(&r, Group::Apple);
    assert!(
        apple.picks.iter().all(|p| p.role != Role::Cheapest),
        "{apple:?}"
    );
    // The cheapest Apple machine that holds it, from the fit rows.
    let rows = rows(&s, cat);
    let cheapest = rows
        .iter()
        .filter(|(m, f)| is_apple(cat, m) && on_gpu(f) && price(m).is_some())
        .min_by(|a, b| price(a.0).unwrap().total_cmp(&price(b.0).unwrap()))
        .unwrap();
    assert!(price(cheapest.0).unwrap() > 500.0);
    let msg = apple.unmet[0].to_string();
    assert!(
        msg.starts_with("nothing fits under $500; the cheapest is "),
        "{msg}"
    );
    assert!(msg.contains(&*cheapest.0.name), "{msg}");
}

#[test]
fn speed_floor_and_minimum_context_are_respected() {
    let cat = builtin();
    let s = scenario("llama-3-8b", WeightPrecision::Q4KM, 4096);
    let st = FitSettings::default();
    let k = Constraints {
        min_tokens_per_s: Some(60.0),
        min_context: Some(8192),
        kinds: vec![
            KindFilter(MachineKind::Laptop),
            KindFilter(MachineKind::Cloud),
        ],
        ..Constraints::default()
    };
    let r = recommend(
        &s,
        &cat.machines,
        None,
        cat,
        &st,
        &k,
        headroom::io::catalog::quality(),
    );
    assert_eq!(r.context, 8192, "fitted at the minimum context");
    assert_eq!(
        r.groups.iter().map(|g| g.group).collect::<Vec<_>>(),
        vec![Group::Laptop, Group::Cloud]
    );
    for g in &r.groups {
        for p in &g.picks {
            assert!(p.tokens_per_s >= 60.0, "{p:?}");
        }
    }
}

#[test]
fn this_machine_gets_its_verdict_and_the_changes_that_make_it_fit() {
    let cat = builtin();
    let st = FitSettings::default();
    // A 24 GiB RTX 4090 desktop and 70B Q4_K_M (~43 GiB): layers are offloaded.
    let s = scenario("llama-3.1-70b", WeightPrecision::Q4KM, 8192);
    let me = cat.machine("desktop-rtx4090-64gb").unwrap();
    let r = recommend(
        &s,
        &cat.machines,
        Some(me),
        cat,
        &st,
        &Constraints::default(),
        headroom::io::catalog::quality(),
    );
    assert!(
        r.machine_ids().iter().all(|id| **id != *me.id),
        "never a pick"
    );
    let t = r.this_machine.as_ref().unwrap();
    let f = fit_all(&s, [me], cat, &st).remove(0);
    assert_eq!(t.verdict, f.verdict);
    assert_eq!(t.verdict, Verdict::Offload);
    let summary = t.summary().to_string();
    assert!(summary.starts_with("runs it with offload"), "{summary}");
    assert!(!t.upgrades.is_empty());
    for u in &t.upgrades {
        match u.kind() {
            ChangeKind::Precision | ChangeKind::Context => {
                assert_eq!(u.verdict, Verdict::Gpu, "{u:?}")
            }
            ChangeKind::Gpu => {
                // At least what one GPU needs, and the example card has it.
                assert!(u.gpu_memory_bytes().unwrap() >= f.gpu_required.0, "{u:?}");
                let a = cat.accelerator(u.example().unwrap()).unwrap();
                assert!(a.memory.0 >= u.gpu_memory_bytes().unwrap());
                assert_eq!(u.verdict, Verdict::Gpu, "{u:?}");
            }
            _ => {}
        }
    }
    assert_eq!(t.upgrades.last().unwrap().kind(), ChangeKind::Gpu);

    // A CPU-only machine that cannot hold it: the RAM to add, and no less would do.
    let mut small = cat
        .machines
        .iter()
        .find(|m| m.gpu.is_none())
        .unwrap()
        .clone();
    small.id = "local".into();
    small.ram = Bytes::gib(16);
    let r = recommend(
        &s,
        &cat.machines,
        Some(&small),
        cat,
        &st,
        &Constraints::default(),
        headroom::io::catalog::quality(),
    );
    let t = r.this_machine.unwrap();
    // Since the disk tier it runs from the SSD, but it does not fit in memory.
    assert_eq!(t.verdict, Verdict::Disk);
    let ram = t
        .upgrades
        .iter()
        .find(|u| u.kind() == ChangeKind::Ram)
        .expect("a RAM upgrade");
    let need = ram.ram_bytes().unwrap();
    assert_eq!(ram.verdict, Verdict::Cpu);
    assert_eq!(need % (8 * GIB), 0);
    let with = |b: u64| {
        let mut m = small.clone();
        m.ram = Bytes(b);
        fit_all(&s, [&m], cat, &st).remove(0)
    };
    assert!(with(need).fits());
    assert!(!with(need - 8 * GIB).fits(), "{need} is the least");
}

#[test]
fn the_default_report_machines_are_the_picks() {
    let cat = builtin();
    let s = scenario("llama-3-8b", WeightPrecision::Q4KM, 8192);
    let r = recommend(
        &s,
        &cat.machines,
        None,
        cat,
        &FitSettings::default(),
        &Constraints::default(),
        headroom::io::catalog::quality(),
    );
    let ids = r.machine_ids();
    // Headline picks first, one per group, no repeats.
    let heads: Vec<&str> = r
        .groups
        .iter()
        .filter_map(|g| g.best())
        .map(|p| p.machine.as_str())
        .collect();
    assert!(ids.len() >= heads.len().min(1));
    let mut seen = std::collections::HashSet::new();
    assert!(ids.iter().all(|i| seen.insert(i.clone())));
    assert_eq!(ids[0], heads[0]);
}

/// A Llama 3.1 405B full fine-tune fits no single cloud instance (16 B of model states per
/// parameter is 6.5 TB); the cloud answer is then the cheapest cluster of one cloud machine, with
/// its node count and layout, and `recommend --json` carries it. A model that one instance holds
/// gets no cluster answer.
#[test]
fn no_single_cloud_instance_gives_the_cheapest_cluster() {
    let cat = builtin();
    let st = FitSettings::default();
    let mut s = scenario("llama-3.1-405b", WeightPrecision::Bf16, 8192);
    s.mode = headroom::core::scenario::Mode::Full;
    let r = recommend(
        &s,
        &cat.machines,
        None,
        cat,
        &st,
        &Constraints::default(),
        headroom::io::catalog::quality(),
    );
    assert!(group(&r, Group::Cloud).picks.is_empty());
    let c = r.cluster.as_ref().expect("a cluster answer");
    assert_eq!(c.kind, MachineKind::Cloud);
    let sm = c.smallest.as_ref().unwrap();
    let t = sm.train.as_ref().unwrap();
    assert!(sm.nodes >= 2 && t.fits, "{} nodes", sm.nodes);
    // 6.5 TB of states over the cluster's GPU memory: at least 6.5 TB of it.
    let gpu_mem = t.usable_per_gpu.as_f64() * t.gpus as f64;
    assert!(gpu_mem > 6.5e12, "{gpu_mem}");
    let line = c.summary(true).unwrap();
    assert!(
        line.contains(&*c.name) && line.contains("per GPU"),
        "{line}"
    );
    let v = headroom::io::json::recommend_json(&s, &r);
    assert_eq!(v["cluster"]["machine"], serde_json::json!(&*c.machine));

    let s = scenario("llama-3-8b", WeightPrecision::Bf16, 8192);
    let r = recommend(
        &s,
        &cat.machines,
        None,
        cat,
        &st,
        &Constraints::default(),
        headroom::io::catalog::quality(),
    );
    assert!(r.cluster.is_none());
}

/// What a recompute costs (the GUI does it once per input change, from fit rows it already has):
/// `cargo test --release --test recommend recompute_cost -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check: run it with --release -- --ignored --nocapture"]
fn recompute_cost() {
    let cat = builtin();
    let st = FitSettings::default();
    let me = cat.machine("desktop-rtx4090-64gb").unwrap();
    for (name, s) in [
        (
            "8B Q4_K_M (fits)",
            scenario("llama-3-8b", WeightPrecision::Q4KM, 8192),
        ),
        (
            "70B Q4_K_M (offload)",
            scenario("llama-3.1-70b", WeightPrecision::Q4KM, 8192),
        ),
    ] {
        let t = std::time::Instant::now();
        let fits = fit_all(&s, &cat.machines, cat, &st);
        let fit_ms = t.elapsed().as_secs_f64() * 1e3;
        let n = 5;
        let mut best = f64::INFINITY;
        for _ in 0..n {
            let t = std::time::Instant::now();
            let r = headroom::core::recommend::recommend_from_fits(
                &s,
                &cat.machines,
                &fits,
                Some(me),
                cat,
                &st,
                &Constraints::default(),
                headroom::io::catalog::quality(),
            );
            assert!(!r.groups.is_empty());
            best = best.min(t.elapsed().as_secs_f64() * 1e3);
        }
        let rec_ms = best;
        let t = std::time::Instant::now();
        let _ = headroom::core::recommend::recommend_from_fits(
            &s,
            &cat.machines,
            &fits,
            None,
            cat,
            &st,
            &Constraints::default(),
            headroom::io::catalog::quality(),
        );
        let picks_ms = t.elapsed().as_secs_f64() * 1e3;
        println!(
            "{name}: fit_all {fit_ms:.2} ms, recommend_from_fits {rec_ms:.2} ms at best of {n} (picks alone {picks_ms:.2} ms)"
        );
    }
}

#[test]
fn training_advice_tries_techniques_before_hardware() {
    use headroom::core::recommend::{Change, Technique};
    use headroom::core::scenario::{Checkpointing, Mode};
    let cat = builtin();
    let st = FitSettings::default();
    // Llama 3 8B, a full fine-tune at 4K without checkpointing, on a 24 GB RTX 4090: LoRA fits
    // the GPU, so it comes before any bigger card, and every technique offered does fit.
    let s = Scenario {
        mode: Mode::Full,
        checkpointing: Checkpointing::None,
        context: 4096,
        ..scenario("llama-3-8b", WeightPrecision::Bf16, 4096)
    };
    let me = cat.machine("desktop-rtx4090-64gb").unwrap();
    let r = recommend(
        &s,
        &cat.machines,
        Some(me),
        cat,
        &st,
        &Constraints::default(),
        headroom::io::catalog::quality(),
    );
    let t = r.this_machine.unwrap();
    assert!(!on_gpu(&fit_all(&s, [me], cat, &st).remove(0)));
    let first = t.upgrades.first().expect("a change");
    assert_eq!(first.kind(), ChangeKind::Technique, "{:?}", t.upgrades);
    let Change::Technique { techniques, .. } = &first.change else {
        unreachable!()
    };
    // The ladder's first rung that fits, with every rung before it: checkpointing first.
    assert_eq!(
        techniques.first(),
        Some(&Technique::Checkpointing),
        "{first}"
    );
    let mut after = s.clone();
    for t in techniques {
        match t {
            Technique::Checkpointing => after.checkpointing = Checkpointing::Full,
            Technique::Lora => after.mode = Mode::Lora,
            Technique::Qlora => after.mode = Mode::Qlora,
            Technique::ZeroOffload => after.offload = headroom::core::scenario::Offload::Optimizer,
        }
    }
    let f = fit_all(&after, [me], cat, &st).remove(0);
    assert!(on_gpu(&f), "{first} is offered but does not fit: {f:?}");
    assert!(first.tokens_per_s > 0.0);
    assert!(
        first.to_string().starts_with("gradient checkpointing"),
        "{first}"
    );
    let gpu = t.upgrades.last().unwrap();
    assert_eq!(gpu.kind(), ChangeKind::Gpu);

    // QLoRA of a 70B at 32K with checkpointing off: no technique alone fits a 24 GB card, but
    // with checkpointing on the GPU it needs is much smaller, and the advice says so.
    let s = Scenario {
        mode: Mode::Qlora,
        checkpointing: Checkpointing::None,
        ..scenario("llama-3.1-70b", WeightPrecision::Bf16, 32_768)
    };
    let plain = headroom::core::estimate::estimate(&Scenario {
        gpus: 1,
        ..s.clone()
    });
    let r = recommend(
        &s,
        &cat.machines,
        Some(me),
        cat,
        &st,
        &Constraints::default(),
        headroom::io::catalog::quality(),
    );
    let t = r.this_machine.unwrap();
    let gpu = t.upgrades.last().unwrap();
    let Change::Gpu { memory, with, .. } = &gpu.change else {
        panic!("{gpu:?}")
    };
    assert_eq!(*with, Some(Technique::Checkpointing), "{gpu}");
    assert!(memory.0 * 2 < plain.per_gpu_total().0, "{gpu}");
    assert!(
        gpu.to_string().starts_with("gradient checkpointing"),
        "{gpu}"
    );
}

/// With a quality floor, this machine's precision step proposes the best-quality precision within
/// it that fits the GPU and says its KLD. Llama 3 8B BF16 at 8K on an RTX 4050 Laptop (6 GB):
/// without a floor the ladder's first GPU fit is Q4_0 (5.90 GiB; Q4_K_M's 6.14 GiB does not fit),
/// KLD 0.0719 — past "good" (0.05). Within "good", ranked by measured KLD (Q8_0 … Q4_K_M
/// offload), the first that fits is IQ4_NL (5.91 GiB, KLD 0.0357, llama.cpp's measurement on
/// Llama 3 8B). Within "near" (0.012) nothing fits (Q5_K_M needs 6.89 GiB): no precision step.
#[test]
fn a_quality_floor_picks_the_precision_step_by_measured_kld() {
    let cat = builtin();
    let st = FitSettings::default();
    let s = scenario("llama-3-8b", WeightPrecision::Bf16, 8192);
    let mut me = cat.machine("laptop-rtx4050-16gb").unwrap().clone();
    me.id = "local".into();
    let q = headroom::io::catalog::quality();
    let step = |max_kld: Option<f64>| {
        let k = Constraints {
            max_kld,
            ..Constraints::default()
        };
        let r = recommend(&s, &cat.machines, Some(&me), cat, &st, &k, q);
        r.this_machine
            .unwrap()
            .upgrades
            .into_iter()
            .find(|u| u.kind() == ChangeKind::Precision)
    };
    let plain = step(None).expect("a precision step");
    assert_eq!(plain.weights(), Some("q4_0"));
    assert_eq!(plain.kld(), Some(0.07194));
    let good = step(Some(0.05)).expect("a precision step within good");
    assert_eq!(good.weights(), Some("iq4_nl"));
    assert_eq!(good.kld(), Some(0.035742));
    assert_eq!(good.verdict, Verdict::Gpu);
    let text = good.to_string();
    assert!(
        text.starts_with("GGUF IQ4_NL weights instead of BF16 (KLD 0.0357): runs on the GPU"),
        "{text}"
    );
    assert!(step(Some(0.012)).is_none());
}

fn headroom_cli(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_headroom"))
        .args(args)
        .env(
            "XDG_CONFIG_HOME",
            std::env::temp_dir().join("headroom-recommend-no-user-catalogs"),
        )
        .output()
        .expect("run headroom")
}

/// `recommend --max-kld` takes what `fit --max-kld` takes, with the same one-line error, and the
/// JSON says the floor.
#[test]
fn recommend_max_kld_parses_like_fit_and_is_in_the_json() {
    for v in ["-1", "superb", "nan"] {
        let o = headroom_cli(&["recommend", "--no-detect", "--max-kld", v]);
        assert_eq!(o.status.code(), Some(2), "{v}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(e.trim().lines().count(), 1, "{e}");
        assert!(e.contains("--max-kld"), "{e}");
        let f = headroom_cli(&["fit", "--max-kld", v]);
        assert_eq!(
            String::from_utf8_lossy(&f.stderr),
            e,
            "the same error as fit for {v}"
        );
    }
    let o = headroom_cli(&[
        "recommend",
        "--no-detect",
        "--model",
        "llama-3-8b",
        "--max-kld",
        "good",
        "--kind",
        "laptop",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["constraints"]["max_kld"], 0.05);
}
