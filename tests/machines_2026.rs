//! The 2025–2026 hardware in the built-in catalogs (issue 32 item 4): DGX Spark and Jetson AGX
//! Thor, the RTX PRO 6000 Blackwell variants, RTX 5070 Ti, Radeon AI PRO R9700, Instinct MI355X,
//! Arc Pro B60/B50, Apple M5/M5 Pro/M5 Max, B300/GB200 and the cloud instances built on them. Each new entry
//! exists, cites a source, and carries the memory and bandwidth its vendor publishes.

use headroom::core::catalog::{Catalog, MachineKind, MemoryKind, Price, Vendor};
use headroom::core::units::{GB, GIB};
use headroom::io::catalog;

fn cat() -> &'static Catalog {
    catalog::builtin()
}

/// Accelerator `id`: present and sourced.
fn acc(id: &str) -> &'static headroom::core::catalog::Accelerator {
    let a = cat()
        .accelerator(id)
        .unwrap_or_else(|| panic!("accelerator {id} missing"));
    assert!(!a.source.trim().is_empty(), "{id}: no source");
    a
}

/// Machine `id`: present, sourced, and its accelerator resolves.
fn machine(id: &str) -> &'static headroom::core::catalog::Machine {
    let m = cat()
        .machine(id)
        .unwrap_or_else(|| panic!("machine {id} missing"));
    assert!(!m.source.trim().is_empty(), "{id}: no source");
    if let Some(g) = m.gpu.as_deref() {
        assert!(
            cat().accelerator(g).is_some(),
            "{id}: accelerator {g} missing"
        );
    }
    m
}

fn gib(m: u64) -> u64 {
    m * GIB
}

#[test]
fn new_accelerators_exist_with_their_published_memory_and_bandwidth() {
    // (id, vendor, own memory in bytes (0 = unified), bandwidth GB/s)
    for (id, vendor, mem, bw) in [
        ("gb10", Vendor::Nvidia, 0, 273.0),
        ("jetson-agx-thor", Vendor::Nvidia, 0, 273.0),
        (
            "rtx-pro-6000-blackwell-max-q",
            Vendor::Nvidia,
            gib(96),
            1792.0,
        ),
        (
            "rtx-pro-6000-blackwell-server",
            Vendor::Nvidia,
            gib(96),
            1792.0,
        ),
        ("rtx-5070-ti", Vendor::Nvidia, gib(16), 896.0),
        ("b300", Vendor::Nvidia, gib(268), 8000.0),
        ("gb200", Vendor::Nvidia, 186 * GB, 8000.0),
        ("mi355x", Vendor::Amd, 288 * GB, 8000.0),
        ("radeon-ai-pro-r9700", Vendor::Amd, gib(32), 640.0),
        ("arc-pro-b60", Vendor::Intel, gib(24), 456.0),
        ("arc-pro-b50", Vendor::Intel, gib(16), 224.0),
        ("apple-m5", Vendor::Apple, 0, 153.0),
        ("apple-m5-pro", Vendor::Apple, 0, 307.0),
        ("apple-m5-max-40c", Vendor::Apple, 0, 614.0),
    ] {
        let a = acc(id);
        assert_eq!(a.vendor, vendor, "{id}");
        assert_eq!(a.memory.0, mem, "{id}: memory");
        assert_eq!(
            a.memory_kind,
            if mem == 0 {
                MemoryKind::Unified
            } else {
                MemoryKind::Discrete
            },
            "{id}"
        );
        assert_eq!(a.bandwidth.0, bw, "{id}: bandwidth");
        assert!(a.fp16_tflops > 0.0, "{id}");
    }
}

#[test]
fn blackwell_and_cdna4_compute_is_dense() {
    // Dense FP16/BF16, not the 2:4-sparse headline: B300 2.25 PF (HGX: 36 PF sparse / 8),
    // GB200 2.5 PF, MI355X ~2.5 PF, and the Max-Q below the 600 W Workstation Edition.
    assert_eq!(acc("b300").fp16_tflops, 2250.0);
    assert_eq!(acc("gb200").fp16_tflops, 2500.0);
    assert!((2400.0..2600.0).contains(&acc("mi355x").fp16_tflops));
    assert!(
        acc("rtx-pro-6000-blackwell-max-q").fp16_tflops < acc("rtx-pro-6000-blackwell").fp16_tflops
    );
    assert_eq!(acc("rtx-pro-6000-blackwell-max-q").tdp_w, Some(300.0));
    assert_eq!(acc("rtx-pro-6000-blackwell").tdp_w, Some(600.0));
    // B300's INT8 is cut below its FP16 rate, so the catalog leaves it unset rather than
    // overstating it.
    assert_eq!(acc("b300").int8_tops, None);
    assert_eq!(acc("b300").gpu_link_gbs, Some(1800.0));
    assert_eq!(acc("mi355x").compute_units, Some(256));
}

#[test]
fn the_server_edition_alias_moved_to_its_own_entry() {
    let by = |alias: &str| {
        cat()
            .accelerators
            .iter()
            .filter(|a| a.aliases.iter().any(|x| x == alias))
            .map(|a| &*a.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        by("NVIDIA RTX PRO 6000 Blackwell Server Edition"),
        ["rtx-pro-6000-blackwell-server"]
    );
    assert_eq!(
        by("NVIDIA RTX PRO 6000 Blackwell Workstation Edition"),
        ["rtx-pro-6000-blackwell"]
    );
    assert_eq!(by("NVIDIA GB10"), ["gb10"]);
    assert_eq!(by("AMD Instinct MI355X"), ["mi355x"]);
}

#[test]
fn intel_arc_pro_notes_name_the_llama_cpp_backends() {
    for id in ["arc-pro-b60", "arc-pro-b50"] {
        let n = acc(id).notes.as_deref().unwrap_or_default();
        assert!(n.contains("SYCL") && n.contains("Vulkan"), "{id}: {n}");
    }
}

#[test]
fn new_owned_machines_exist_with_their_memory() {
    // (id, kind, gpu, gpu count, RAM GiB, RAM bandwidth GB/s)
    for (id, kind, gpu, n, ram, bw) in [
        (
            "nvidia-dgx-spark",
            MachineKind::MiniPc,
            "gb10",
            1,
            128,
            273.0,
        ),
        (
            "nvidia-jetson-agx-thor-devkit",
            MachineKind::MiniPc,
            "jetson-agx-thor",
            1,
            128,
            273.0,
        ),
        (
            "desktop-rtx5070ti-32gb",
            MachineKind::Desktop,
            "rtx-5070-ti",
            1,
            32,
            96.0,
        ),
        (
            "desktop-radeon-ai-pro-r9700-64gb",
            MachineKind::Desktop,
            "radeon-ai-pro-r9700",
            1,
            64,
            96.0,
        ),
        (
            "desktop-arc-pro-b60-64gb",
            MachineKind::Desktop,
            "arc-pro-b60",
            1,
            64,
            89.6,
        ),
        (
            "desktop-arc-pro-b50-32gb",
            MachineKind::Desktop,
            "arc-pro-b50",
            1,
            32,
            89.6,
        ),
        (
            "workstation-4x-arc-pro-b60",
            MachineKind::Workstation,
            "arc-pro-b60",
            4,
            256,
            332.8,
        ),
        (
            "workstation-4x-radeon-ai-pro-r9700",
            MachineKind::Workstation,
            "radeon-ai-pro-r9700",
            4,
            256,
            332.8,
        ),
        (
            "workstation-rtx-pro-6000-max-q",
            MachineKind::Workstation,
            "rtx-pro-6000-blackwell-max-q",
            1,
            256,
            332.8,
        ),
        (
            "workstation-4x-rtx-pro-6000-max-q",
            MachineKind::Workstation,
            "rtx-pro-6000-blackwell-max-q",
            4,
            768,
            332.8,
        ),
        (
            "macbook-pro-14-m5-16gb",
            MachineKind::Laptop,
            "apple-m5",
            1,
            16,
            153.0,
        ),
        (
            "macbook-pro-14-m5-24gb",
            MachineKind::Laptop,
            "apple-m5",
            1,
            24,
            153.0,
        ),
        (
            "macbook-pro-14-m5-32gb",
            MachineKind::Laptop,
            "apple-m5",
            1,
            32,
            153.0,
        ),
    ] {
        let m = machine(id);
        assert_eq!(m.kind, kind, "{id}");
        assert_eq!(m.gpu.as_deref(), Some(gpu), "{id}");
        assert_eq!(m.gpu_count, n, "{id}");
        assert_eq!(m.ram.0, gib(ram), "{id}: ram");
        assert_eq!(m.ram_bandwidth.0, bw, "{id}: RAM bandwidth");
        assert!(
            matches!(m.price, Some(Price::Purchase { .. })),
            "{id}: purchase price"
        );
    }
    // The M5 Pro/Max MacBook Pros: their largest memory, at the chip's bandwidth.
    for (id, gpu, ram, bw) in [
        ("macbook-pro-16-m5-pro-64gb", "apple-m5-pro", 64, 307.0),
        (
            "macbook-pro-16-m5-max-128gb",
            "apple-m5-max-40c",
            128,
            614.0,
        ),
    ] {
        let m = machine(id);
        assert_eq!(m.kind, MachineKind::Laptop, "{id}");
        assert_eq!(m.gpu.as_deref(), Some(gpu), "{id}");
        assert_eq!(m.ram.0, gib(ram), "{id}");
        assert_eq!(m.ram_bandwidth.0, bw, "{id}");
    }
    // A unified-memory box's pool is its RAM, as fast as the chip says.
    for id in ["nvidia-dgx-spark", "nvidia-jetson-agx-thor-devkit"] {
        let m = machine(id);
        let a = acc(m.gpu.as_deref().unwrap());
        assert_eq!(m.ram_bandwidth.0, a.bandwidth.0, "{id}");
    }
}

#[test]
fn new_cloud_instances_exist_with_gpus_and_dated_prices() {
    // (id, gpu, count, priced)
    for (id, gpu, n, priced) in [
        ("aws-p6-b300-48xlarge", "b300", 8, true),
        ("aws-g7e-2xlarge", "rtx-pro-6000-blackwell-server", 1, true),
        ("aws-g7e-12xlarge", "rtx-pro-6000-blackwell-server", 2, true),
        ("aws-g7e-24xlarge", "rtx-pro-6000-blackwell-server", 4, true),
        ("aws-g7e-48xlarge", "rtx-pro-6000-blackwell-server", 8, true),
        ("azure-nd96isr-mi300x-v5", "mi300x", 8, false),
        ("azure-nd128isr-gb200-v6", "gb200", 4, false),
        ("gcp-a4-highgpu-8g", "b200", 8, false),
        ("gcp-a4x-highgpu-4g", "gb200", 4, false),
        ("oci-bm-gpu-mi355x-8", "mi355x", 8, false),
    ] {
        let m = machine(id);
        assert_eq!(m.kind, MachineKind::Cloud, "{id}");
        assert_eq!(m.gpu.as_deref(), Some(gpu), "{id}");
        assert_eq!(m.gpu_count, n, "{id}");
        assert!(m.vcpus.is_some(), "{id}: vCPUs");
        match (&m.price, priced) {
            (
                Some(Price::Hourly {
                    usd,
                    region,
                    price_date,
                    source,
                }),
                true,
            ) => {
                assert!(*usd > 0.0, "{id}");
                assert!(!region.is_empty() && !source.is_empty(), "{id}");
                // A dated price (YYYY-MM-DD), not "undated".
                assert!(
                    price_date.starts_with("20") && price_date.len() == 10,
                    "{id}: {price_date}"
                );
            }
            (None, false) => {}
            (p, _) => panic!("{id}: unexpected price {p:?}"),
        }
        if n > 1 {
            assert!(
                m.fabric.is_some(),
                "{id}: multi-GPU instance states its fabric"
            );
        }
    }
    let p6 = machine("aws-p6-b300-48xlarge");
    assert_eq!(p6.ram.0, gib(4096));
    assert_eq!(p6.price.as_ref().map(|p| p.usd()), Some(142.416));
    assert_eq!(p6.network.as_ref().map(|n| n.gbps), Some(6400.0));
    let mi = machine("azure-nd96isr-mi300x-v5");
    assert_eq!(mi.fabric.as_ref().map(|f| f.gbs), Some(896.0));
    assert_eq!(mi.network.as_ref().map(|n| n.gbps), Some(3200.0));
    // OCI's MI355X shape: 8 × 288 GB over XGMI, 8 × 400 Gb/s RoCE, 3 TB of host memory.
    let oci = machine("oci-bm-gpu-mi355x-8");
    assert_eq!(oci.ram.0, 3_000 * GB);
    assert_eq!(oci.network.as_ref().map(|n| n.gbps), Some(3200.0));
    assert_eq!(
        oci.fabric.as_ref().map(|f| f.kind),
        Some(headroom::core::catalog::FabricKind::InfinityFabric)
    );
}
