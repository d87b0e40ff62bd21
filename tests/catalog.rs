//! The built-in catalogs (every entry parses, validates, is sourced and plausible; presets match
//! their published parameter counts), the loader's error messages (one fixture per invalid case
//! under tests/fixtures/catalog/), user-catalog merging, and the `catalog` CLI functions.

use headroom::cli::catalog as cli;
use headroom::core::catalog::{Catalog, MachineKind, MemoryKind, Price, Vendor};
use headroom::core::units::{GB, GIB};
use headroom::io::catalog::{self, BUILTIN_FILES, CatalogError};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn cat() -> &'static Catalog {
    catalog::builtin()
}

fn fixture(name: &str) -> (String, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/catalog")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (format!("tests/fixtures/catalog/{name}"), text)
}

fn fixture_error(name: &str) -> String {
    let (file, text) = fixture(name);
    match catalog::parse_file(&file, &text) {
        Ok(_) => panic!("{file} should not validate"),
        Err(e) => e.to_string(),
    }
}

// ---------------------------------------------------------------- built-in catalog

#[test]
fn builtin_files_parse_and_validate() {
    let c = catalog::builtin_checked().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(&c, cat());
    // Each file on its own also validates (references resolve to built-in accelerators).
    for (name, text) in BUILTIN_FILES {
        catalog::parse_file(name, text).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn builtin_counts() {
    let c = cat();
    let laptops = c
        .machines
        .iter()
        .filter(|m| m.kind == MachineKind::Laptop)
        .count();
    let cloud = c
        .machines
        .iter()
        .filter(|m| m.kind == MachineKind::Cloud)
        .count();
    let apple = c
        .machines
        .iter()
        .filter(|m| m.kind == MachineKind::Apple)
        .count();
    let cpu_only = c.machines.iter().filter(|m| m.gpu.is_none()).count();
    assert!(
        c.accelerators.len() >= 40,
        "{} accelerators",
        c.accelerators.len()
    );
    assert!(c.machines.len() >= 120, "{} machines", c.machines.len());
    assert!(c.models.len() >= 30, "{} models", c.models.len());
    assert!(laptops >= 25, "{laptops} laptops");
    assert!(cloud >= 60, "{cloud} cloud instances");
    assert!(apple >= 8, "{apple} Apple desktops");
    assert!(cpu_only >= 1, "no CPU-only machine");
    for k in MachineKind::ALL {
        assert!(
            c.machines.iter().any(|m| m.kind == k),
            "no machine of kind {k:?}"
        );
    }
}

#[test]
fn every_entry_has_a_source() {
    let c = cat();
    for a in &c.accelerators {
        assert!(!a.source.trim().is_empty(), "accelerator {}", a.id);
    }
    for m in &c.machines {
        assert!(!m.source.trim().is_empty(), "machine {}", m.id);
    }
    for p in &c.models {
        assert!(
            p.source.starts_with("https://huggingface.co/"),
            "model {}: {}",
            p.id,
            p.source
        );
        // config.json, or params.json where the publisher ships only Mistral's own format
        // (Mistral Large 3; vLLM reads it with --config_format mistral).
        assert!(
            p.source.ends_with("config.json") || p.source.ends_with("/params.json"),
            "model {}: {}",
            p.id,
            p.source
        );
        if p.published_params.is_some() {
            let n = p.notes.as_deref().unwrap_or("");
            assert!(
                n.contains("published_params: "),
                "model {}: published_params without its source",
                p.id
            );
        }
    }
}

#[test]
fn prices_have_region_date_and_source() {
    for m in &cat().machines {
        let Some(p) = &m.price else { continue };
        let (Price::Hourly {
            usd,
            region,
            price_date,
            source,
        }
        | Price::Purchase {
            usd,
            region,
            price_date,
            source,
        }) = p;
        assert!(!region.trim().is_empty(), "{}: region", m.id);
        assert!(!price_date.trim().is_empty(), "{}: price_date", m.id);
        assert!(!source.trim().is_empty(), "{}: price source", m.id);
        match (m.kind, p) {
            (MachineKind::Cloud, Price::Hourly { .. }) => {
                assert!((0.05..=200.0).contains(usd), "{}: ${usd}/h", m.id);
            }
            (MachineKind::Cloud, Price::Purchase { .. }) => {
                panic!("{}: a cloud instance needs an hourly price", m.id)
            }
            (_, Price::Purchase { .. }) => {
                assert!((100.0..=100_000.0).contains(usd), "{}: ${usd}", m.id)
            }
            (_, Price::Hourly { .. }) => {
                panic!("{}: an owned machine needs a purchase price", m.id)
            }
        }
    }
    let priced = cat()
        .machines
        .iter()
        .filter(|m| m.kind == MachineKind::Cloud && m.price.is_some())
        .count();
    assert!(priced >= 60, "only {priced} cloud instances have a price");
}

#[test]
fn numbers_are_plausible() {
    let c = cat();
    for a in &c.accelerators {
        match a.memory_kind {
            MemoryKind::Discrete => {
                let gb = a.memory.0 as f64 / GB as f64;
                assert!((4.0..=300.0).contains(&gb), "{}: {gb} GB VRAM", a.id);
            }
            MemoryKind::Unified => {
                assert_eq!(a.memory.0, 0, "{}: unified parts have no own memory", a.id)
            }
        }
        assert!(
            (50.0..=10_000.0).contains(&a.bandwidth.0),
            "{}: {} GB/s",
            a.id,
            a.bandwidth.0
        );
        assert!(
            (1.0..=5000.0).contains(&a.fp16_tflops),
            "{}: {} TFLOPS",
            a.id,
            a.fp16_tflops
        );
        if let Some(t) = a.int8_tops {
            assert!(
                t >= a.fp16_tflops && t <= 10_000.0,
                "{}: int8 {t} TOPS",
                a.id
            );
        }
        if let Some(w) = a.tdp_w {
            assert!((10.0..=1500.0).contains(&w), "{}: {w} W", a.id);
        }
        if a.vendor == Vendor::Apple {
            assert_eq!(a.memory_kind, MemoryKind::Unified, "{}", a.id);
        }
    }
    for m in &c.machines {
        let ram = m.ram.0 as f64;
        assert!(
            ram >= 8.0 * GB as f64 && ram <= 4.0 * 1024.0 * GIB as f64,
            "{}: ram {}",
            m.id,
            m.ram
        );
        assert!(
            (20.0..=2000.0).contains(&m.ram_bandwidth.0),
            "{}: {} GB/s RAM",
            m.id,
            m.ram_bandwidth.0
        );
        assert!(
            (1..=16).contains(&m.gpu_count),
            "{}: {} GPUs",
            m.id,
            m.gpu_count
        );
        if m.kind == MachineKind::Cloud {
            assert!(m.vcpus.is_some(), "{}: cloud instances list vCPUs", m.id);
            assert!(m.gpu.is_some(), "{}: cloud GPU instance without GPU", m.id);
        }
        if let Some(a) = m.gpu.as_deref().and_then(|g| c.accelerator(g))
            && a.memory_kind == MemoryKind::Unified
        {
            // The pool is the machine's RAM, so it must be at least as fast as the accelerator says.
            assert!(
                (m.ram_bandwidth.0 - a.bandwidth.0).abs() / a.bandwidth.0 < 0.05
                    || a.vendor != Vendor::Apple,
                "{}: RAM bandwidth {} vs chip {}",
                m.id,
                m.ram_bandwidth.0,
                a.bandwidth.0
            );
        }
    }
}

/// Every NVIDIA part carries its enabled L2 (the speed model asks whether re-read weight tiles stay
/// in it), within what any NVIDIA GPU has shipped; the golden values are the vendors' own.
#[test]
fn nvidia_parts_carry_their_l2_cache() {
    let c = cat();
    let nvidia: Vec<_> = c
        .accelerators
        .iter()
        .filter(|a| a.vendor == Vendor::Nvidia)
        .collect();
    assert!(nvidia.len() >= 50, "{} NVIDIA parts", nvidia.len());
    for a in &nvidia {
        let l2 = a
            .l2_cache_mib
            .unwrap_or_else(|| panic!("{}: no l2_cache_mib", a.id));
        assert!((1.0..=256.0).contains(&l2), "{}: L2 {l2} MiB", a.id);
        assert!(
            a.notes.as_deref().is_some_and(|n| n.contains("L2 ")),
            "{}: the L2 figure names its source in notes",
            a.id
        );
    }
    let l2 = |id: &str| c.accelerator(id).and_then(|a| a.l2_cache_mib);
    // NVIDIA Ada GPU architecture whitepaper: RTX 4090 72 MB of AD102's 96 MB.
    assert_eq!(l2("rtx-4090"), Some(72.0));
    // NVIDIA A100 Tensor Core GPU architecture whitepaper: 40 MB L2 (of GA100's 48), every A100.
    for id in [
        "a100-40gb-sxm",
        "a100-80gb-sxm",
        "a100-40gb-pcie",
        "a100-80gb-pcie",
    ] {
        assert_eq!(l2(id), Some(40.0), "{id}");
    }
    // NVIDIA H100 Tensor Core GPU architecture whitepaper: 50 MB on H100 SXM5 and PCIe.
    assert_eq!(l2("h100-sxm"), Some(50.0));
    assert_eq!(l2("h100-pcie"), Some(50.0));
    // NVIDIA Ampere GA102 whitepaper: 6144 KB, 512 KB per 32-bit memory controller.
    assert_eq!(l2("rtx-3090"), Some(6.0));
    // A cut part never has more L2 than the full die of the same generation beside it.
    assert!(l2("rtx-4090") < l2("rtx-6000-ada"));
    assert!(l2("rtx-5090") < l2("rtx-pro-6000-blackwell"));
}

#[test]
fn strix_halo_machines_carry_the_gpu_allocation() {
    let c = cat();
    let halo: Vec<_> = c
        .machines
        .iter()
        .filter(|m| m.gpu.as_deref() == Some("radeon-8060s"))
        .collect();
    assert!(halo.len() >= 2);
    assert!(halo.iter().any(|m| matches!(m.kind, MachineKind::MiniPc)));
    assert!(halo.iter().any(|m| matches!(m.kind, MachineKind::Laptop)));
    for m in halo {
        let limit = m
            .gpu_memory_limit
            .unwrap_or_else(|| panic!("{}: no gpu_memory_limit", m.id));
        if m.ram.0 == 128 * GIB {
            assert_eq!(limit.0, 96 * GIB, "{}", m.id);
        }
        assert!(limit <= m.ram, "{}", m.id);
    }
}

#[test]
fn aliases_carry_the_names_drivers_report() {
    let c = cat();
    for (alias, id) in [
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb-sxm"),
        ("NVIDIA A100-SXM4-40GB", "a100-40gb-sxm"),
        ("NVIDIA H200", "h200"),
        ("Tesla T4", "t4"),
        ("NVIDIA A10G", "a10g"),
        ("NVIDIA L4", "l4"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA GeForce RTX 4090 Laptop GPU", "rtx-4090-laptop"),
        ("AMD Instinct MI300X", "mi300x"),
        ("Apple M3 Max", "apple-m3-max-40c"),
    ] {
        let found: Vec<_> = c
            .accelerators
            .iter()
            .filter(|a| a.aliases.iter().any(|x| x == alias))
            .collect();
        assert_eq!(
            found.len(),
            1,
            "alias {alias:?}: {:?}",
            found.iter().map(|a| &a.id).collect::<Vec<_>>()
        );
        assert_eq!(*found[0].id, *id, "alias {alias:?}");
    }
    let mut seen = HashSet::new();
    for a in &c.accelerators {
        for x in &a.aliases {
            assert!(
                seen.insert(x.to_ascii_lowercase()),
                "alias {x:?} is on two accelerators"
            );
        }
    }
}

#[test]
fn required_presets_exist_with_kebab_ids() {
    let c = cat();
    for id in [
        "qwen2.5-0.5b",
        "qwen2.5-7b",
        "qwen2.5-72b",
        "qwen3-0.6b",
        "qwen3-32b",
        "qwen3-30b-a3b",
        "qwen3-235b-a22b",
        "llama-2-7b",
        "llama-2-70b",
        "llama-3.2-1b",
        "llama-3-8b",
        "llama-3.1-405b",
        "mistral-7b",
        "mixtral-8x7b",
        "mixtral-8x22b",
        "gemma-2-2b",
        "gemma-2-27b",
        "gemma-3-1b",
        "gemma-3-27b",
        "phi-3-mini",
        "phi-3-medium",
        "phi-4",
        "deepseek-v3",
        "deepseek-r1",
        "deepseek-r1-distill-qwen-7b",
        "deepseek-r1-distill-llama-70b",
        "gpt-oss-20b",
        "gpt-oss-120b",
        "grok-1",
    ] {
        assert!(c.model(id).is_some(), "missing preset {id}");
    }
    for p in &c.models {
        assert!(
            p.id.chars()
                .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-' || ch == '.'),
            "{}: ids are lowercase-kebab",
            p.id
        );
    }
    // Architecture features the presets must carry.
    let spec = |id: &str| &c.model(id).unwrap().spec;
    assert!(spec("deepseek-v3").mla.is_some() && spec("deepseek-v3").moe.is_some());
    assert!(spec("gemma-3-27b").sliding.is_some() && spec("gemma-2-9b").sliding.is_some());
    assert!(
        spec("gpt-oss-20b").attn_sinks && spec("qwen3-8b").qk_norm && spec("qwen2.5-7b").qkv_bias
    );
    assert_eq!(spec("gemma-3-4b").local_layers(), (29, 1024));
    assert_eq!(spec("mistral-7b").local_layers(), (32, 4096));
}

/// The computed parameter count of every preset with a published total is within 2 % of it.
/// All mismatches are listed (not only the first) so the architecture at fault is visible.
#[test]
fn param_counts_match_published_totals() {
    let mut bad = Vec::new();
    for p in &cat().models {
        let Some(published) = p.published_params else {
            continue;
        };
        let total = p.spec.param_count().total;
        let err = total as f64 / published as f64 - 1.0;
        if err.abs() > 0.02 {
            bad.push(format!(
                "{} ({}): computed {total}, published {published}, {:+.2} %",
                p.id,
                p.spec.arch,
                err * 100.0
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "parameter counts off by more than 2 %:\n{}",
        bad.join("\n")
    );
    let with = cat()
        .models
        .iter()
        .filter(|p| p.published_params.is_some())
        .count();
    assert!(with >= 40, "only {with} presets have a published total");
}

#[test]
fn exact_counts_for_reference_checkpoints() {
    // Exact safetensors totals (keras-hub presets, https://keras.io/api/keras_hub/models/): the dense shapes must be exact.
    for (id, n) in [
        ("llama-3-8b", 8_030_261_248u64),
        ("mistral-7b", 7_241_732_096),
        ("qwen2.5-7b", 7_615_616_512),
        ("qwen3-30b-a3b", 30_532_122_624),
        ("mixtral-8x7b", 46_702_792_704),
        ("gemma-2-9b", 9_241_705_984),
        ("phi-3-mini", 3_821_079_552),
    ] {
        assert_eq!(cat().model(id).unwrap().spec.param_count().total, n, "{id}");
    }
}

// ---------------------------------------------------------------- invalid files, one per case

#[test]
fn malformed_ron_names_file_line_and_column() {
    let e = fixture_error("malformed.ron");
    assert!(
        e.starts_with("tests/fixtures/catalog/malformed.ron:6:13: "),
        "{e}"
    );
}

#[test]
fn unknown_field_names_file_line_and_column() {
    let e = fixture_error("unknown_field.ron");
    assert!(
        e.starts_with("tests/fixtures/catalog/unknown_field.ron:10:"),
        "{e}"
    );
    assert!(e.contains("vram_speed"), "{e}");
}

#[test]
fn bad_size_string_names_file_line_and_column() {
    let e = fixture_error("bad_size.ron");
    assert!(
        e.starts_with("tests/fixtures/catalog/bad_size.ron:7:"),
        "{e}"
    );
    assert!(e.contains("'lots' is not a size"), "{e}");
}

#[test]
fn duplicate_id_points_at_the_second_entry() {
    let e = fixture_error("duplicate_id.ron");
    assert_eq!(
        e,
        "tests/fixtures/catalog/duplicate_id.ron:14:13: machine 'twin': duplicate id"
    );
}

#[test]
fn missing_accelerator_reference_names_the_entry() {
    let e = fixture_error("missing_accelerator.ron");
    assert_eq!(
        e,
        "tests/fixtures/catalog/missing_accelerator.ron:5:13: machine 'future-box': accelerator 'rtx-9090' is not in the catalog"
    );
}

#[test]
fn negative_price_names_the_entry() {
    let e = fixture_error("negative_price.ron");
    assert_eq!(
        e,
        "tests/fixtures/catalog/negative_price.ron:5:13: machine 'generous-cloud': price must be non-negative"
    );
}

#[test]
fn zero_memory_names_the_entry() {
    let e = fixture_error("zero_memory.ron");
    assert_eq!(
        e,
        "tests/fixtures/catalog/zero_memory.ron:4:13: accelerator 'empty-gpu': memory must be positive"
    );
}

#[test]
fn negative_l2_names_the_entry() {
    let e = fixture_error("negative_l2.ron");
    assert_eq!(
        e,
        "tests/fixtures/catalog/negative_l2.ron:4:13: accelerator 'minus-cache': l2_cache_mib must be positive"
    );
}

#[test]
fn empty_source_names_the_entry() {
    let e = fixture_error("empty_source.ron");
    assert_eq!(
        e,
        "tests/fixtures/catalog/empty_source.ron:4:13: machine 'nowhere-box': source is empty"
    );
}

#[test]
fn missing_spec_field_names_the_entry() {
    let e = fixture_error("missing_spec_field.ron");
    assert!(
        e.starts_with("tests/fixtures/catalog/missing_spec_field.ron:4:13: model 'half-model': spec is missing `hidden`"),
        "{e}"
    );
}

#[test]
fn errors_are_typed() {
    let (file, text) = fixture("malformed.ron");
    assert!(matches!(
        catalog::parse_file(&file, &text),
        Err(CatalogError::Syntax { line: 6, .. })
    ));
    let (file, text) = fixture("duplicate_id.ron");
    let Err(CatalogError::Invalid { problems, .. }) = catalog::parse_file(&file, &text) else {
        panic!()
    };
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].position, Some((14, 13)));
}

#[test]
fn a_valid_user_file_parses() {
    let (file, text) = fixture("valid_user.ron");
    let c = catalog::parse_file(&file, &text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (c.accelerators.len(), c.machines.len(), c.models.len()),
        (1, 2, 1)
    );
    assert_eq!(c.machines[0].gpu_count, 2);
    assert_eq!(c.machines[0].gpu.as_deref(), Some("rtx-4090"));
}

// ---------------------------------------------------------------- user catalogs

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn user_files_merge_over_builtins_and_broken_ones_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let builtin = cat();
    let original = builtin.machine("desktop-rtx4090-64gb").unwrap().clone();
    // 10: overrides a built-in machine and adds one; 20: malformed; 30: a dangling reference;
    // 40: valid, uses the accelerator added by 10 (files load in name order).
    write(
        dir.path(),
        "10-mine.ron",
        r#"#![enable(implicit_some)]
(
    accelerators: [(id: "my-gpu", name: "My GPU", vendor: Nvidia, segment: Consumer, memory_kind: Discrete,
                    memory: "20 GiB", bandwidth: 800.0, fp16_tflops: 80.0, source: "mine")],
    machines: [
        (id: "desktop-rtx4090-64gb", name: "My 4090 box", kind: Desktop, gpu: "rtx-4090", ram: "96 GiB",
         ram_bandwidth: 89.6, cpu: "AMD Ryzen 9 7950X", cpu_cores: 16, source: "mine"),
    ],
)"#,
    );
    let broken = write(dir.path(), "20-broken.ron", "(machines: [ (id: \"x\", ");
    let dangling = write(
        dir.path(),
        "30-dangling.ron",
        r#"#![enable(implicit_some)]
(machines: [(id: "ghost", name: "Ghost", kind: Desktop, gpu: "no-such-gpu", ram: "16 GiB",
             ram_bandwidth: 51.2, cpu: "CPU", cpu_cores: 4, source: "mine")])"#,
    );
    write(
        dir.path(),
        "40-more.ron",
        r#"#![enable(implicit_some)]
(machines: [(id: "second-box", name: "Second box", kind: Desktop, gpu: "my-gpu", ram: "32 GiB",
             ram_bandwidth: 89.6, cpu: "CPU", cpu_cores: 8, source: "mine")])"#,
    );
    write(dir.path(), "notes.txt", "not a catalog");

    let (merged, warnings) = catalog::load(Some(dir.path()));
    // The override replaced the built-in entry in place.
    let m = merged.machine("desktop-rtx4090-64gb").unwrap();
    assert_eq!(&*m.name, "My 4090 box");
    assert_eq!(m.ram.0, 96 * GIB);
    assert_ne!(m, &original);
    assert_eq!(
        merged.machines.len(),
        builtin.machines.len() + 1,
        "one new machine (second-box)"
    );
    assert_eq!(merged.accelerators.len(), builtin.accelerators.len() + 1);
    assert!(merged.machine("second-box").is_some());
    assert!(
        merged.machine("ghost").is_none(),
        "a file that fails validation is skipped whole"
    );
    assert!(merged.validate().is_empty());
    // One warning per broken file, naming it.
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    assert!(
        warnings[0].starts_with(&format!("{}:1:", broken.display())),
        "{}",
        warnings[0]
    );
    assert!(warnings[0].contains("skipped"), "{}", warnings[0]);
    assert!(
        warnings[1].starts_with(&format!("{}:2:", dangling.display())),
        "{}",
        warnings[1]
    );
    assert!(
        warnings[1].contains("machine 'ghost': accelerator 'no-such-gpu' is not in the catalog"),
        "{}",
        warnings[1]
    );
    // The built-in catalog itself is untouched.
    assert_eq!(cat().machine("desktop-rtx4090-64gb").unwrap(), &original);
}

#[test]
fn missing_user_folder_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (c, w) = catalog::load(Some(&dir.path().join("does-not-exist")));
    assert!(w.is_empty());
    assert_eq!(&c, cat());
    let (c, w) = catalog::load(None);
    assert!(w.is_empty());
    assert_eq!(&c, cat());
    assert!(catalog::user_dir().is_none_or(|p| p.ends_with("catalogs")));
}

// ---------------------------------------------------------------- CLI

#[test]
fn list_filters_by_kind() {
    let c = cat();
    let apple = cli::filter_machines(c, Some("apple")).unwrap();
    assert!(
        apple.iter().any(|m| m.kind == MachineKind::Laptop),
        "MacBooks are Apple machines too"
    );
    assert!(apple.iter().any(|m| m.kind == MachineKind::Apple));
    assert!(
        apple
            .iter()
            .all(|m| m.kind == MachineKind::Apple || m.id.starts_with("macbook"))
    );
    let desktop = cli::filter_machines(c, Some("Desktop")).unwrap();
    assert!(
        desktop.iter().any(|m| m.kind == MachineKind::Workstation),
        "desktop includes workstations"
    );
    assert!(
        desktop
            .iter()
            .all(|m| matches!(m.kind, MachineKind::Desktop | MachineKind::Workstation))
    );
    let cloud = cli::filter_machines(c, Some("cloud")).unwrap();
    assert!(cloud.len() >= 60);
    assert_eq!(
        cli::filter_machines(c, None).unwrap().len(),
        c.machines.len()
    );
    assert!(
        cli::filter_machines(c, Some("mini-pc"))
            .unwrap()
            .iter()
            .all(|m| m.kind == MachineKind::MiniPc)
    );
    let err = cli::try_list(c, Some("toaster"), false).unwrap_err();
    assert!(
        err.contains("unknown kind 'toaster'") && err.contains("laptop"),
        "{err}"
    );
}

#[test]
fn list_table_and_json() {
    let c = cat();
    let table = cli::list(c, Some("cloud"), false);
    let first = table.lines().next().unwrap();
    for h in ["ID", "NAME", "KIND", "GPU", "VRAM", "RAM", "PRICE"] {
        assert!(first.contains(h), "{first}");
    }
    let p5 = table
        .lines()
        .find(|l| l.starts_with("aws-p5-48xlarge "))
        .expect("p5 row");
    assert!(
        p5.contains("H100 SXM5 80GB × 8") && p5.contains("640 GiB") && p5.contains("$55.04/h"),
        "{p5}"
    );
    let mini = cli::list(c, Some("apple"), false);
    let row = mini
        .lines()
        .find(|l| l.starts_with("mac-mini-m4-16gb "))
        .expect("mac mini row");
    assert!(row.contains("unified") && row.contains("$599"), "{row}");
    let cpu = cli::list(c, Some("desktop"), false);
    assert!(
        cpu.lines()
            .any(|l| l.starts_with("desktop-cpu-only-64gb-ddr5 ") && l.contains("CPU only"))
    );

    let json: serde_json::Value =
        serde_json::from_str(&cli::list(c, Some("laptop"), true)).unwrap();
    let arr = json.as_array().unwrap();
    assert_eq!(
        arr.len(),
        c.machines
            .iter()
            .filter(|m| m.kind == MachineKind::Laptop)
            .count()
    );
    // One JSON convention across the CLI: lowercase kinds, sizes in bytes, a flat
    // price object.
    assert!(
        arr.iter()
            .all(|m| m["kind"] == "laptop" && m["id"].is_string() && m["ram"].is_u64())
    );
    let json: serde_json::Value = serde_json::from_str(&cli::list(c, Some("cloud"), true)).unwrap();
    let p5 = json
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "aws-p5-48xlarge")
        .expect("p5");
    assert_eq!(p5["gpu_memory"], 80u64 << 30);
    assert_eq!(p5["price"]["kind"], "hourly");
    assert_eq!(p5["price"]["usd"], 55.04);
}

#[test]
fn validate_file_summarises_or_reports() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/catalog");
    let ok = cli::validate_file(&dir.join("valid_user.ron")).unwrap();
    assert!(
        ok.ends_with("valid_user.ron: 1 accelerators, 2 machines, 1 models, valid"),
        "{ok}"
    );
    let err = cli::validate_file(&dir.join("negative_price.ron")).unwrap_err();
    assert!(
        err.contains("negative_price.ron:5:13: machine 'generous-cloud'"),
        "{err}"
    );
    let err = cli::validate_file(&dir.join("nope.ron")).unwrap_err();
    assert!(err.contains("nope.ron: cannot read the file"), "{err}");
    // Every built-in file validates through the CLI path too.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (name, _) in BUILTIN_FILES {
        let s = cli::validate_file(&root.join(name)).unwrap_or_else(|e| panic!("{e}"));
        assert!(s.ends_with("valid"), "{s}");
    }
}

/// Found by the catalog fuzz target (`fuzz/fuzz_targets/catalog.rs`): a quoted value holding a
/// newline or NUL was echoed verbatim, so the "one line per problem, naming the file" message
/// broke over two lines. Control characters are now written as escapes.
#[test]
fn control_characters_in_values_keep_errors_on_one_line() {
    let text = "(\n    accelerators: [\n        (\n            id: \"empty-gpu\",\n            name: \"Empty GPU\",\n            vendor: Nvidia,\n            segment: Consumer,\n            memory_kind: Discrete,\n            memory: \"0\u{1}\0\0\n\",\n            bandwidth: 500.0,\n            fp16_tflops: 50.0,\n            source: \"fixture\",\n        ),\n    ],\n)\n";
    let e = catalog::parse_file("user.ron", text)
        .unwrap_err()
        .to_string();
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.starts_with("user.ron:"), "{e}");
    assert!(e.contains("\\n' is not a size"), "{e}");
    let id = text
        .replace("empty-gpu", "bad\nid")
        .replace("\"0\u{1}\0\0\n\"", "\"0 GB\"");
    let e = catalog::parse_file("user.ron", &id)
        .unwrap_err()
        .to_string();
    assert!(e.lines().all(|l| l.starts_with("user.ron")), "{e}");
}

/// One row of tests/data/training_throughput.ron (published training throughput; sources in
/// tests/data/SOURCES-training.md). Parsed here so the file's shape stays checked.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct TrainingRow {
    source: String,
    model: String,
    layers: u32,
    hidden: u32,
    heads: u32,
    kv_heads: u32,
    ffn: u32,
    vocab: u32,
    moe_experts: u32,
    moe_active: u32,
    params: f64,
    seq_len: u32,
    gpu: String,
    gpus_per_node: u32,
    nodes: u32,
    network_gbps_per_node: f64,
    tp: u32,
    pp: u32,
    dp: u32,
    cp: u32,
    ep: u32,
    sharding: String,
    micro_batch: u32,
    global_batch: u32,
    checkpointing: String,
    precision: String,
    metric: String,
    value: f64,
    flops_formula: String,
    notes: String,
    /// Where the source's GPU differs from the catalog part (tests/cluster_published.rs).
    #[serde(default)]
    gpu_peak_tflops: Option<f64>,
    #[serde(default)]
    gpu_bandwidth_gbs: Option<f64>,
    /// Sequences per pipeline micro-batch where the source's engine sets it.
    #[serde(default)]
    pp_micro_batch: Option<u32>,
    /// The catalog preset an MoE row ran (tests/cluster_published.rs).
    #[serde(default)]
    preset: Option<String>,
}

#[test]
fn training_throughput_rows_parse_and_are_consistent() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/training_throughput.ron");
    let text = std::fs::read_to_string(&path).unwrap();
    let rows: Vec<TrainingRow> = ron::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    assert!(rows.len() >= 24, "{} rows", rows.len());
    for r in &rows {
        assert!(
            cat().accelerator(&r.gpu).is_some(),
            "{}: unknown gpu {}",
            r.model,
            r.gpu
        );
        assert_eq!(
            r.tp * r.pp * r.dp * r.cp,
            r.gpus_per_node * r.nodes,
            "{}: tp*pp*dp*cp != GPUs",
            r.model
        );
        assert!(["none", "zero1", "zero2", "zero3", "fsdp", "hsdp"].contains(&r.sharding.as_str()));
        assert!(["none", "selective", "full"].contains(&r.checkpointing.as_str()));
        assert!(["bf16", "fp16", "fp8"].contains(&r.precision.as_str()));
        assert!(["tokens_per_s_per_gpu", "tflops_per_gpu", "mfu"].contains(&r.metric.as_str()));
        assert!(["megatron", "6N", "6N+attn", "n/a"].contains(&r.flops_formula.as_str()));
        assert!(r.value > 0.0 && !r.source.is_empty());
        if let Some(id) = &r.preset {
            let m = cat().model(id).map(|p| p.spec.clone());
            let moe = m.as_ref().and_then(|m| m.moe.clone());
            assert!(
                moe.is_some(),
                "{}: preset {id} is not an MoE preset",
                r.model
            );
            let moe = moe.unwrap();
            assert_eq!(moe.experts, r.moe_experts as u64, "{}: experts", r.model);
            // Megatron-Core with ETP 1: EP divides the experts and TP × DP.
            assert!(
                r.ep >= 1 && moe.experts.is_multiple_of(r.ep as u64),
                "{}: ep",
                r.model
            );
            assert_eq!((r.tp * r.dp) % r.ep, 0, "{}: ep divides tp × dp", r.model);
        }
    }
}

#[test]
fn the_quality_table_is_valid() {
    // catalogs/quality.ron: every row names a known precision and a built-in preset, cites a
    // source and holds figures in range (tests/quality.rs checks the values against the sources).
    let (name, text) = headroom::io::catalog::QUALITY_FILE;
    let t = headroom::io::catalog::parse_quality(name, text).unwrap_or_else(|e| panic!("{e}"));
    assert!(t.quality.len() >= 30);
}
