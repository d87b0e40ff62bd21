//! Detection: conversions from captured-format values, name matching, the real detector on this
//! machine, and the `headroom detect --json` contract. Fixtures: `tests/fixtures/detect/`.

use headroom::cli::detect::render;
use headroom::core::catalog::{
    Accelerator, Catalog, MachineKind, MemoryKind, PcieLink, Segment, Vendor,
};
use headroom::core::units::{Bytes, GbPerSec, MIB};
use headroom::io::detect::amd::{gpus_from_drm, read_drm};
use headroom::io::detect::apple::{parse_sysctl, unified_from_sysctl};
use headroom::io::detect::nvidia::{NvmlReading, gpu_from_nvml};
use headroom::io::detect::{
    DetectedMachine, Detector, FakeDetector, GpuProcess, GpuSource, LOCAL_GPU_ID, SystemDetector,
    catalog_with_local, local_machine, match_accelerator, match_accelerator_with_vram,
};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/detect")
        .join(name)
}

#[allow(clippy::too_many_arguments)]
fn acc(
    id: &str,
    name: &str,
    vendor: Vendor,
    segment: Segment,
    memory: Bytes,
    bw: f64,
    fp16: f64,
    aliases: &[&str],
) -> Accelerator {
    Accelerator {
        id: id.into(),
        name: name.into(),
        vendor,
        segment,
        memory_kind: if memory.0 == 0 {
            MemoryKind::Unified
        } else {
            MemoryKind::Discrete
        },
        memory,
        bandwidth: GbPerSec(bw),
        fp16_tflops: fp16,
        fp16_acc16_tflops: None,
        vector_tflops: None,
        compute_units: None,
        l2_cache_mib: None,
        int8_tops: None,
        mamf_tflops: None,
        fp4_tflops: None,
        tdp_w: None,
        pcie: Some(PcieLink {
            generation: 4,
            lanes: 16,
        }),
        gpu_link: None,
        gpu_link_gbs: None,
        aliases: aliases.iter().map(|s| s.to_string()).collect(),
        source: "test fixture (figures from the vendors' spec pages)".into(),
        notes: None,
    }
}

/// A small catalog naming the parts as NVIDIA and AMD name them (figures from their spec pages).
fn catalog() -> Catalog {
    use Segment::{Consumer, Datacenter, Laptop, Workstation};
    use Vendor::{Amd, Nvidia};
    Catalog {
        benchmarks: Vec::new(),
        accelerator_index: Default::default(),
        accelerators: vec![
            acc(
                "rtx-4090",
                "GeForce RTX 4090",
                Nvidia,
                Consumer,
                Bytes::gib(24),
                1008.0,
                165.2,
                &["NVIDIA GeForce RTX 4090"],
            ),
            acc(
                "rtx-4060",
                "GeForce RTX 4060",
                Nvidia,
                Consumer,
                Bytes::gib(8),
                272.0,
                15.1,
                &[],
            ),
            acc(
                "rtx-4060-laptop",
                "GeForce RTX 4060 Laptop",
                Nvidia,
                Laptop,
                Bytes::gib(8),
                256.0,
                11.6,
                &[],
            ),
            acc(
                "rtx-a6000",
                "RTX A6000",
                Nvidia,
                Workstation,
                Bytes::gib(48),
                768.0,
                154.8,
                &[],
            ),
            acc(
                "h100-sxm",
                "H100 SXM5",
                Nvidia,
                Datacenter,
                Bytes::gb(80),
                3350.0,
                989.0,
                &[],
            ),
            acc(
                "h100-pcie",
                "H100 PCIe",
                Nvidia,
                Datacenter,
                Bytes::gb(80),
                2000.0,
                756.0,
                &[],
            ),
            acc(
                "a100-80gb-sxm",
                "A100 80GB SXM4",
                Nvidia,
                Datacenter,
                Bytes::gb(80),
                2039.0,
                312.0,
                &[],
            ),
            acc(
                "a100-40gb-sxm",
                "A100 40GB SXM4",
                Nvidia,
                Datacenter,
                Bytes::gb(40),
                1555.0,
                312.0,
                &[],
            ),
            acc(
                "t4",
                "Tesla T4",
                Nvidia,
                Datacenter,
                Bytes::gib(16),
                320.0,
                65.0,
                &[],
            ),
            acc(
                "mi300x",
                "AMD Instinct MI300X",
                Amd,
                Datacenter,
                Bytes::gb(192),
                5300.0,
                1307.4,
                &[],
            ),
            acc(
                "m2",
                "Apple M2",
                Vendor::Apple,
                Segment::Apple,
                Bytes::ZERO,
                100.0,
                7.0,
                &[],
            ),
            acc(
                "m3-max-40c",
                "Apple M3 Max (40-core GPU)",
                Vendor::Apple,
                Segment::Apple,
                Bytes::ZERO,
                400.0,
                28.0,
                &["Apple M3 Max"],
            ),
        ],
        ..Default::default()
    }
}

// ---------------------------------------------------------------- NVML conversions

/// An RTX 4090 as NVML reports it on a desktop with a display: memory total 25757220864,
/// PCIe 4.0 x16 (gen 1 at idle), 384-bit bus, 10501 MHz max memory clock.
fn rtx4090_reading() -> NvmlReading {
    NvmlReading {
        index: 0,
        name: Ok("NVIDIA GeForce RTX 4090".into()),
        memory: Ok((25_757_220_864, 24_289_214_464, 1_048_182_784)),
        pcie_gen: Ok(1),
        pcie_width: Ok(16),
        pcie_max_gen: Ok(4),
        pcie_max_width: Ok(16),
        memory_bus_width: Ok(384),
        max_memory_clock_mhz: Ok(10501),
        processes: Ok(vec![GpuProcess {
            pid: 2211,
            name: Some("Xorg".into()),
            used: Some(Bytes::mib(405)),
        }]),
    }
}

/// An H100 SXM5 80GB as NVML reports it: "NVIDIA H100 80GB HBM3", 81559 MiB, PCIe 5.0 x16,
/// 5120-bit bus, 2619 MHz.
fn h100_reading(index: u32, free_mib: u64) -> NvmlReading {
    NvmlReading {
        index,
        name: Ok("NVIDIA H100 80GB HBM3".into()),
        memory: Ok((81559 * MIB, free_mib * MIB, (81559 - free_mib) * MIB)),
        pcie_gen: Ok(5),
        pcie_width: Ok(16),
        pcie_max_gen: Ok(5),
        pcie_max_width: Ok(16),
        memory_bus_width: Ok(5120),
        max_memory_clock_mhz: Ok(2619),
        processes: Ok(vec![]),
    }
}

fn machine_with(gpus: Vec<NvmlReading>) -> DetectedMachine {
    let mut notes = Vec::new();
    let gpus = gpus
        .into_iter()
        .map(|r| gpu_from_nvml(r, Some("550.54.14"), Some("12.4"), &mut notes))
        .collect();
    let mut d = FakeDetector::cpu_only(Bytes::gib(64), Bytes::gib(50)).machine;
    d.gpus = gpus;
    d.notes = notes;
    d.match_catalog(&catalog());
    d
}

#[test]
fn rtx4090_nvml_to_local_machine() {
    let d = machine_with(vec![rtx4090_reading()]);
    let g = &d.gpus[0];
    assert_eq!(g.vram_total, Bytes(25_757_220_864));
    assert_eq!(g.matched.as_deref(), Some("rtx-4090"));
    assert_eq!(
        (g.pcie_gen, g.pcie_width, g.pcie_max_gen, g.pcie_max_width),
        (Some(1), Some(16), Some(4), Some(16))
    );
    assert!((g.bandwidth_gbs.unwrap() - 1008.1).abs() < 0.1);

    let (m, accs) = local_machine(&d, &catalog());
    assert_eq!(m.kind, MachineKind::Desktop);
    assert_eq!(m.ram, Bytes::gib(50));
    let a = &accs[0];
    assert_eq!(&*a.id, LOCAL_GPU_ID);
    assert_eq!(a.memory, Bytes(24_289_214_464), "free VRAM, not the total");
    assert_eq!(a.fp16_tflops, 165.2);
    // The maximum link, not the idle gen-1 current link.
    assert_eq!(
        a.pcie,
        Some(PcieLink {
            generation: 4,
            lanes: 16
        })
    );
    let notes = m.notes.unwrap();
    assert!(notes.contains("22.6 GiB of 24.0 GiB total"), "{notes}");
}

#[test]
fn h100_nodes_prefer_catalog_bandwidth() {
    let d = machine_with(vec![h100_reading(0, 80_900), h100_reading(1, 70_000)]);
    assert!(
        d.gpus
            .iter()
            .all(|g| g.matched.as_deref() == Some("h100-sxm"))
    );
    let derived = d.gpus[0].bandwidth_gbs.unwrap();
    assert!((derived - 3352.3).abs() < 0.1, "{derived}");
    let (m, accs) = local_machine(&d, &catalog());
    assert_eq!((m.kind, m.gpu_count), (MachineKind::Cloud, 2));
    assert_eq!(
        accs[0].bandwidth,
        GbPerSec(3350.0),
        "catalog value wins over the derived one"
    );
    assert_eq!(
        accs[0].memory,
        Bytes::mib(70_000),
        "the smallest free figure of identical GPUs"
    );
    assert_eq!(
        accs[0].pcie,
        Some(PcieLink {
            generation: 5,
            lanes: 16
        })
    );
    let c = catalog_with_local(&d, &catalog());
    assert!(c.validate().is_empty(), "{:?}", c.validate());
}

#[test]
fn unmatched_gpu_is_noted_with_derived_bandwidth() {
    let mut r = rtx4090_reading();
    r.name = Ok("NVIDIA GeForce RTX 4080".into());
    r.memory = Ok((17_171_480_576, 16_000_000_000, 1_171_480_576));
    r.memory_bus_width = Ok(256);
    r.max_memory_clock_mhz = Ok(11201);
    let d = machine_with(vec![r]);
    assert_eq!(d.gpus[0].matched, None);
    assert!(
        d.notes.iter().any(
            |n| n.contains("\"NVIDIA GeForce RTX 4080\" is not in the catalog")
                && n.contains("717 GB/s")
        ),
        "{:?}",
        d.notes
    );
    let (_, accs) = local_machine(&d, &catalog());
    assert!((accs[0].bandwidth.0 - 716.9).abs() < 0.1);
    assert_eq!(accs[0].fp16_tflops, 20.0);
}

// ---------------------------------------------------------------- Apple sysctl

#[test]
fn sysctl_m2_air_16gb() {
    let text = std::fs::read_to_string(fixture("sysctl-m2-air-16gb.txt")).unwrap();
    let mut notes = Vec::new();
    let u = unified_from_sysctl(&parse_sysctl(&text), &mut notes).unwrap();
    assert_eq!(u.total, Bytes::gib(16));
    assert_eq!(u.gpu_limit.0 / MIB, 10922, "2/3 of 16 GiB = 10922.67 MiB");
    let mut d = DetectedMachine {
        unified_memory: Some(u),
        ..FakeDetector::apple("Apple M2", Bytes::gib(16), None).machine
    };
    d.match_catalog(&catalog());
    assert_eq!(
        d.unified_memory.as_ref().unwrap().matched.as_deref(),
        Some("m2")
    );
    let (m, accs) = local_machine(&d, &catalog());
    assert_eq!(m.kind, MachineKind::Apple);
    assert_eq!(m.gpu_memory_limit.unwrap().0 / MIB, 10922);
    assert_eq!(accs[0].memory_kind, MemoryKind::Unified);
    assert_eq!(m.ram_bandwidth, GbPerSec(100.0));
}

#[test]
fn sysctl_m3_max_128gb_with_and_without_wired_limit() {
    let plain = unified_from_sysctl(
        &parse_sysctl(&std::fs::read_to_string(fixture("sysctl-m3-max-128gb.txt")).unwrap()),
        &mut Vec::new(),
    )
    .unwrap();
    assert_eq!(plain.gpu_limit, Bytes::gib(96), "3/4 of 128 GiB");
    assert_eq!(plain.wired_limit_mb, None);
    let wired = unified_from_sysctl(
        &parse_sysctl(&std::fs::read_to_string(fixture("sysctl-m3-max-128gb-wired.txt")).unwrap()),
        &mut Vec::new(),
    )
    .unwrap();
    assert_eq!(wired.wired_limit_mb, Some(114_688));
    assert_eq!(wired.gpu_limit, Bytes::gib(112));
    assert_eq!(wired.default_gpu_limit, Bytes::gib(96));
    // Matched through the alias "Apple M3 Max" to the 40-core part.
    assert_eq!(
        match_accelerator(&wired.chip, &catalog()).as_deref(),
        Some("m3-max-40c")
    );
}

// ---------------------------------------------------------------- AMD sysfs

#[test]
fn amd_desktop_sysfs() {
    let devices = read_drm(&fixture("sysfs-amd-desktop"));
    assert_eq!(
        devices.iter().map(|d| d.card.as_str()).collect::<Vec<_>>(),
        ["card0", "card1"],
        "connectors and render nodes skipped"
    );
    let mut notes = Vec::new();
    let gpus = gpus_from_drm(&devices, 0, &mut notes);
    assert_eq!(gpus.len(), 1);
    let g = &gpus[0];
    assert_eq!((g.vendor, g.source), (Some(Vendor::Amd), GpuSource::Sysfs));
    assert_eq!(g.vram_total, Bytes(25_753_026_560));
    assert_eq!(g.vram_free, Bytes(25_753_026_560 - 1_134_555_136));
    assert_eq!((g.pcie_max_gen, g.pcie_max_width), (Some(4), Some(16)));
    assert!(
        notes
            .iter()
            .any(|n| n.to_string().contains("Intel graphics"))
    );
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("AMD: card1") && n.contains("partial"))
    );
}

#[test]
fn amd_apu_sysfs_is_sized_as_unified() {
    let mut notes = Vec::new();
    let gpus = gpus_from_drm(&read_drm(&fixture("sysfs-amd-apu")), 0, &mut notes);
    assert_eq!(gpus[0].vram_total, Bytes::mib(512));
    assert_eq!(
        (gpus[0].pcie_gen, gpus[0].pcie_width),
        (None, None),
        "'Unknown' and 255 are no link"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.to_string().contains("looks like an APU"))
    );
    let mut d = FakeDetector::cpu_only(Bytes::gib(30), Bytes::gib(20)).machine;
    d.gpus = gpus;
    let (m, accs) = local_machine(&d, &catalog());
    assert_eq!(accs[0].memory_kind, MemoryKind::Unified);
    assert_eq!(m.gpu_memory_limit, Some(Bytes(16_106_127_360)), "GTT");
    assert_eq!(m.kind, MachineKind::MiniPc);
}

#[test]
fn system_detector_reads_a_sysfs_tree() {
    let d = SystemDetector::new(catalog())
        .with_sysfs_root(fixture("sysfs-amd-mi300x"))
        .detect();
    let amd: Vec<_> = d
        .gpus
        .iter()
        .filter(|g| g.source == GpuSource::Sysfs)
        .collect();
    if cfg!(target_os = "linux") {
        assert_eq!(amd.len(), 2);
        assert!(
            amd.iter()
                .all(|g| g.name == "AMD Instinct MI300X" && g.matched.as_deref() == Some("mi300x"))
        );
    } else {
        assert!(amd.is_empty());
    }
}

// ---------------------------------------------------------------- name matching

#[test]
fn name_matching_table() {
    let c = catalog();
    let table: &[(&str, Option<&str>)] = &[
        ("NVIDIA GeForce RTX 4090", Some("rtx-4090")),
        ("NVIDIA H100 80GB HBM3", Some("h100-sxm")),
        ("NVIDIA H100 PCIe", Some("h100-pcie")),
        ("NVIDIA A100-SXM4-80GB", Some("a100-80gb-sxm")),
        ("NVIDIA A100-SXM4-40GB", Some("a100-40gb-sxm")),
        ("Tesla T4", Some("t4")),
        ("NVIDIA RTX A6000", Some("rtx-a6000")),
        ("NVIDIA GeForce RTX 4060", Some("rtx-4060")),
        (
            "NVIDIA GeForce RTX 4060 Laptop GPU",
            Some("rtx-4060-laptop"),
        ),
        ("NVIDIA GeForce RTX 4060 Ti", None),
        ("NVIDIA GeForce RTX 4090 D", None),
        ("AMD Instinct MI300X", Some("mi300x")),
        ("AMD GPU [1002:744c]", None),
        ("Apple M3 Max", Some("m3-max-40c")),
    ];
    for (name, want) in table {
        assert_eq!(match_accelerator(name, &c).as_deref(), *want, "{name}");
    }
    let mut no_laptop = c.clone();
    no_laptop
        .accelerators
        .retain(|a| &*a.id != "rtx-4060-laptop");
    assert_eq!(
        match_accelerator("NVIDIA GeForce RTX 4060 Laptop GPU", &no_laptop),
        None,
        "a laptop GPU never takes the desktop part"
    );
    // A card whose VRAM differs from the catalog part is a different variant.
    assert_eq!(
        match_accelerator_with_vram("NVIDIA GeForce RTX 4090", Some(Bytes::gib(48)), &c),
        None
    );
}

// ---------------------------------------------------------------- the real detector, here

fn assert_contract(v: &Value) {
    assert!(v["ram_total"].is_u64(), "ram_total: {v}");
    assert!(v["ram_available"].is_u64());
    assert!(v["cpu"]["name"].is_string());
    assert!(v["cpu"]["cores"].is_u64());
    let gpus = v["gpus"].as_array().expect("gpus is an array");
    for g in gpus {
        assert!(g["name"].is_string());
        assert!(g["vram_total"].is_u64());
        assert!(g["vram_free"].is_u64());
        for k in ["pcie_gen", "pcie_width"] {
            assert!(g[k].is_u64() || g[k].is_null(), "{k}: {g}");
        }
        assert!(
            g.get("matched")
                .is_some_and(|m| m.is_string() || m.is_null()),
            "{g}"
        );
    }
    assert!(
        v.get("unified_memory")
            .is_some_and(|u| u.is_object() || u.is_null())
    );
    let notes = v["notes"].as_array().expect("notes is an array");
    assert!(notes.iter().all(Value::is_string));
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().starts_with("NVML:")),
        "an NVML note: {notes:?}"
    );
}

fn meminfo_total() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = text.lines().find(|l| l.starts_with("MemTotal:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

#[cfg(target_os = "linux")]
#[test]
fn real_detector_on_this_machine() {
    let d = SystemDetector::new(catalog()).detect();
    assert_eq!(
        d.ram_total.0,
        meminfo_total(),
        "RAM total = /proc/meminfo MemTotal × 1024"
    );
    assert!(d.ram_available.0 > 0 && d.ram_available <= d.ram_total);
    assert!(
        d.cpu.threads >= 1 && d.cpu.cores >= 1 && d.cpu.cores <= d.cpu.threads,
        "{:?}",
        d.cpu
    );
    assert!(!d.cpu.name.is_empty());
    let nvml = d
        .notes
        .iter()
        .find(|n| n.starts_with("NVML:"))
        .expect("an NVML note");
    if nvml.starts_with("NVML: not detected") {
        assert!(d.gpus.iter().all(|g| g.source != GpuSource::Nvml));
    }
    assert_contract(&serde_json::from_str(&render(&d, true)).unwrap());
    // Off the UI thread, through the trait object.
    let det: Box<dyn Detector> = Box::new(SystemDetector::default());
    let again = std::thread::spawn(move || det.detect()).join().unwrap();
    assert_eq!(again.ram_total, d.ram_total);
    // And as a catalog machine.
    let (m, _) = local_machine(&d, &catalog());
    assert_eq!(&*m.id, "local");
    assert!(m.ram.0 > 0);
}

#[test]
fn json_contract_fake_machines() {
    let d = FakeDetector::with_gpu("NVIDIA GeForce RTX 4090", Bytes::gib(24), Bytes::gib(23))
        .matched(&catalog())
        .machine;
    let v: Value = serde_json::from_str(&render(&d, true)).unwrap();
    assert_contract(&v);
    assert_eq!(
        v["gpus"][0]["vram_total"].as_u64(),
        Some(25_769_803_776),
        "bytes as integers"
    );
    assert_eq!(v["gpus"][0]["matched"], "rtx-4090");
    assert_eq!(v["gpus"][0]["pcie_gen"], 4);
    assert!(v["unified_memory"].is_null());

    let d = FakeDetector::apple("Apple M2", Bytes::gib(16), Some(12000))
        .matched(&catalog())
        .machine;
    let v: Value = serde_json::from_str(&render(&d, true)).unwrap();
    assert_contract(&v);
    assert_eq!(v["unified_memory"]["gpu_limit"].as_u64(), Some(12000 * MIB));
    assert_eq!(v["unified_memory"]["matched"], "m2");
}

#[test]
fn fixture_cpu_only_linux_keeps_the_contract() {
    let text = std::fs::read_to_string(fixture("cpu-only-linux.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_contract(&v);
    assert_eq!(v["gpus"].as_array().unwrap().len(), 0);
    assert!(v["unified_memory"].is_null());
    // It still deserialises into today's type.
    let d: DetectedMachine = serde_json::from_value(v).unwrap();
    assert!(
        d.notes
            .iter()
            .any(|n| n.to_string().starts_with("NVML: not detected"))
    );
}

// ---------------------------------------------------------------- the built-in catalog

/// NVML names (and the VRAM totals NVML reports) against the shipped catalog.
#[test]
fn builtin_catalog_matches_nvml_names() {
    let c = headroom::io::catalog::builtin();
    let table: &[(&str, u64, Option<&str>)] = &[
        ("NVIDIA GeForce RTX 4090", 24_564, Some("rtx-4090")),
        (
            "NVIDIA GeForce RTX 4060 Laptop GPU",
            8_188,
            Some("rtx-4060-laptop"),
        ),
        ("NVIDIA GeForce RTX 4060", 8_188, Some("rtx-4060")),
        (
            "NVIDIA GeForce RTX 4060 Ti",
            16_380,
            Some("rtx-4060-ti-16gb"),
        ),
        ("NVIDIA GeForce RTX 4060 Ti", 8_188, None),
        ("NVIDIA GeForce RTX 3060", 12_288, Some("rtx-3060-12gb")),
        ("NVIDIA GeForce RTX 3060", 8_192, None),
        ("NVIDIA GeForce RTX 3060 Ti", 8_192, None),
        ("NVIDIA GeForce RTX 4090 D", 24_564, None),
        ("NVIDIA H100 80GB HBM3", 81_559, Some("h100-sxm")),
        ("NVIDIA H100 PCIe", 81_559, Some("h100-pcie")),
        ("NVIDIA H100 NVL", 95_830, Some("h100-nvl")),
        ("NVIDIA H200", 143_771, Some("h200")),
        ("NVIDIA B200", 183_359, Some("b200")),
        ("NVIDIA A100-SXM4-80GB", 81_920, Some("a100-80gb-sxm")),
        ("NVIDIA A100-SXM4-40GB", 40_960, Some("a100-40gb-sxm")),
        ("NVIDIA A100-PCIE-40GB", 40_960, Some("a100-40gb-pcie")),
        ("NVIDIA A100 80GB PCIe", 81_920, Some("a100-80gb-pcie")),
        ("Tesla T4", 15_360, Some("t4")),
        ("Tesla V100-SXM2-16GB", 16_160, Some("v100-sxm2-16gb")),
        ("Tesla V100-SXM2-32GB", 32_768, Some("v100-sxm2-32gb")),
        ("NVIDIA RTX A6000", 49_140, Some("rtx-a6000")),
        (
            "NVIDIA RTX 6000 Ada Generation",
            49_140,
            Some("rtx-6000-ada"),
        ),
        ("NVIDIA A10G", 22_888, Some("a10g")),
        ("NVIDIA A10", 23_028, Some("a10")),
        ("NVIDIA L4", 23_034, Some("l4")),
        ("NVIDIA L40S", 46_068, Some("l40s")),
        ("AMD Instinct MI300X", 196_288, Some("mi300x")),
    ];
    for &(name, mib, want) in table {
        assert_eq!(
            match_accelerator_with_vram(name, Some(Bytes::mib(mib)), c).as_deref(),
            want,
            "{name} with {mib} MiB"
        );
    }
    for (chip, want) in [
        ("Apple M2", "apple-m2"),
        ("Apple M3 Max", "apple-m3-max-40c"),
        ("Apple M4 Pro", "apple-m4-pro"),
    ] {
        assert_eq!(match_accelerator(chip, c).as_deref(), Some(want), "{chip}");
    }
}

/// Every shipped accelerator is found by its own name and aliases, and by nothing else's:
/// an alias or name that token-matches two parts would show up here.
#[test]
fn builtin_catalog_names_and_aliases_are_unambiguous() {
    let c = headroom::io::catalog::builtin();
    for a in &c.accelerators {
        let vram = (a.memory_kind == MemoryKind::Discrete).then_some(a.memory);
        for label in std::iter::once(&a.name).chain(&a.aliases) {
            assert_eq!(
                match_accelerator_with_vram(label, vram, c).as_deref(),
                Some(&*a.id),
                "'{label}'"
            );
        }
    }
}
