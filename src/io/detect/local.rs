//! "This machine" as a catalog [`Machine`] plus its accelerator (pure).
//!
//! Choices, each also written into the machine's `notes`:
//! - **Discrete GPU**: the accelerator's `memory` is the GPU's **free** VRAM now (the desktop and
//!   other processes hold the rest: NVML's `nvmlDeviceGetMemoryInfo` counts every process's
//!   allocations, the display's included, as used), the smallest free figure when several identical
//!   GPUs are present. The runtime reserve (CUDA context) is still the fit's to subtract.
//!   Bandwidth, FP16, INT8, TDP and GPU link come from the matched catalog part; unmatched, the
//!   bandwidth is bus width × memory clock when NVML gave both, else 300 GB/s, and FP16 is 20
//!   TFLOPS. PCIe is the detected maximum link of this card in this slot (the current link drops
//!   to gen 1 at idle), else the current one, else the catalog's.
//! - **Several different GPUs**: the first one (and its identical siblings) is used, the rest noted.
//! - **System RAM** (`ram`): the RAM *available* now, for CPU offload and CPU-only runs.
//! - **Apple unified memory**: `ram` is the installed pool and `gpu_memory_limit` the detected
//!   Metal cap (the iogpu override or the 2/3–3/4 default): the cap is defined against installed
//!   RAM and macOS pages other apps out, so "available now" would understate it.
//! - **AMD APU** (small VRAM carve-out, larger GTT): unified, `gpu_memory_limit` = GTT.
//! - **RAM bandwidth** is not detectable: Apple uses the chip's catalog bandwidth; elsewhere 51.2
//!   GB/s (dual-channel DDR4-3200 = 2 × 8 B × 3.2 GT/s) is assumed.
//! - **Kind**: Apple for Apple Silicon; from the matched part's segment otherwise (Laptop,
//!   Workstation, Datacenter → Cloud, APU → Mini PC); "Laptop" in the GPU name → Laptop; else Desktop.

use super::{DetectedGpu, DetectedMachine, UnifiedMemory, amd, matching};
use crate::core::catalog::{
    Accelerator, Catalog, Machine, MachineKind, MemoryKind, PcieLink, Segment, Vendor,
};
use crate::core::format;
use crate::core::units::{Bytes, GbPerSec};

pub const LOCAL_MACHINE_ID: &str = "local";
pub const LOCAL_GPU_ID: &str = "local-gpu";
/// Bandwidth assumed for a GPU that is not in the catalog and whose bus/clock are unknown, GB/s.
pub(crate) const DEFAULT_BANDWIDTH_GBS: f64 = 300.0;
/// FP16 dense TFLOPS assumed for a GPU that is not in the catalog.
pub(crate) const DEFAULT_FP16_TFLOPS: f64 = 20.0;
/// Unmatched Apple chip: the base M2/M3 figures (100 GB/s; ~7 TFLOPS FP16).
const DEFAULT_APPLE_BANDWIDTH_GBS: f64 = 100.0;
const DEFAULT_APPLE_FP16_TFLOPS: f64 = 7.0;
/// System RAM bandwidth when nothing better is known: dual-channel DDR4-3200.
const DEFAULT_RAM_BANDWIDTH_GBS: f64 = 51.2;
const SOURCE: &str = "detected on this machine by headroom";

fn catalog_part<'a>(
    matched: Option<&str>,
    name: &str,
    vram: Option<Bytes>,
    catalog: &'a Catalog,
) -> Option<&'a Accelerator> {
    let id = matched
        .filter(|id| catalog.accelerator(id).is_some())
        .map(str::to_string)
        .or_else(|| matching::match_accelerator_with_vram(name, vram, catalog))?;
    catalog.accelerator(&id)
}

fn kind_for(segment: Option<Segment>, gpu_name: &str) -> MachineKind {
    match segment {
        Some(Segment::Laptop) => MachineKind::Laptop,
        Some(Segment::Workstation) => MachineKind::Workstation,
        Some(Segment::Datacenter) => MachineKind::Cloud,
        Some(Segment::Apu) => MachineKind::MiniPc,
        Some(Segment::Apple) => MachineKind::Apple,
        _ if gpu_name.to_lowercase().contains("laptop") => MachineKind::Laptop,
        _ => MachineKind::Desktop,
    }
}

fn accelerator_from(
    part: Option<&Accelerator>,
    name: &str,
    vendor: Vendor,
    segment: Segment,
) -> Accelerator {
    match part {
        Some(p) => Accelerator {
            id: LOCAL_GPU_ID.into(),
            name: name.into(),
            aliases: Vec::new(),
            source: format!("{SOURCE}; figures from catalog '{}'", p.id),
            ..p.clone()
        },
        None => Accelerator {
            bandwidth: GbPerSec(DEFAULT_BANDWIDTH_GBS),
            fp16_tflops: DEFAULT_FP16_TFLOPS,
            source: format!("{SOURCE}; not in the catalog, conservative defaults"),
            ..Accelerator::new(LOCAL_GPU_ID, name, vendor, segment, MemoryKind::Discrete)
        },
    }
}

fn base_machine(d: &DetectedMachine, name: String, kind: MachineKind) -> Machine {
    Machine {
        id: LOCAL_MACHINE_ID.into(),
        name: name.into(),
        kind,
        gpu: None,
        gpu_count: 1,
        ram: if d.ram_available.0 > 0 {
            d.ram_available
        } else {
            d.ram_total
        },
        ram_bandwidth: GbPerSec(DEFAULT_RAM_BANDWIDTH_GBS),
        cpu: if d.cpu.name.is_empty() {
            "unknown CPU".into()
        } else {
            d.cpu.name.as_str().into()
        },
        cpu_cores: d.cpu.cores.max(1),
        vcpus: (d.cpu.threads > 0).then_some(d.cpu.threads),
        gpu_memory_limit: None,
        price: None,
        power_w: None,
        storage: d.storage.clone(),
        fabric: None,
        network: None,
        source: SOURCE.into(),
        notes: None,
    }
}

fn unified_apple(
    d: &DetectedMachine,
    u: &UnifiedMemory,
    catalog: &Catalog,
    notes: &mut Vec<String>,
) -> (Machine, Vec<Accelerator>) {
    let part = catalog_part(u.matched.as_deref(), &u.chip, None, catalog);
    let mut acc = accelerator_from(part, &u.chip, Vendor::Apple, Segment::Apple);
    acc.memory_kind = MemoryKind::Unified;
    acc.memory = Bytes::ZERO;
    acc.pcie = None;
    if part.is_none() {
        acc.bandwidth = GbPerSec(DEFAULT_APPLE_BANDWIDTH_GBS);
        acc.fp16_tflops = DEFAULT_APPLE_FP16_TFLOPS;
        notes.push(format!(
            "\"{}\" is not in the catalog: {DEFAULT_APPLE_BANDWIDTH_GBS} GB/s and {DEFAULT_APPLE_FP16_TFLOPS} TFLOPS assumed (a base M-series chip)",
            u.chip
        ));
    }
    let mut m = base_machine(
        d,
        format!("This machine ({}, {})", u.chip, u.total),
        MachineKind::Apple,
    );
    m.gpu = Some(LOCAL_GPU_ID.into());
    m.ram = u.total;
    m.ram_bandwidth = acc.bandwidth;
    m.gpu_memory_limit = Some(u.gpu_limit);
    notes.push(format!(
        "Unified memory: the {} pool is the RAM; the GPU may wire {}{}; {} available now",
        u.total,
        u.gpu_limit,
        if u.wired_limit_mb.is_some() {
            " (iogpu.wired_limit_mb)"
        } else {
            " (Metal default)"
        },
        d.ram_available
    ));
    notes.push("Kind: Apple (a MacBook and a Mac mini look the same to sysctl)".into());
    (m, vec![acc])
}

fn with_gpus(
    d: &DetectedMachine,
    catalog: &Catalog,
    notes: &mut Vec<String>,
) -> Option<(Machine, Vec<Accelerator>)> {
    let first = &d.gpus[0];
    let same = identical_gpus(d, notes);
    let vram = (first.vram_total.0 > 0).then_some(first.vram_total);
    let part = catalog_part(first.matched.as_deref(), &first.name, vram, catalog);
    let vendor = first
        .vendor
        .or(part.map(|p| p.vendor))
        .unwrap_or(Vendor::Nvidia);
    let segment =
        part.map(|p| p.segment)
            .unwrap_or(if first.name.to_lowercase().contains("laptop") {
                Segment::Laptop
            } else {
                Segment::Consumer
            });
    let mut acc = accelerator_from(part, &first.name, vendor, segment);
    let unified =
        amd::looks_like_apu(first) || part.is_some_and(|p| p.memory_kind == MemoryKind::Unified);
    let mut m = base_machine(
        d,
        String::new(),
        kind_for(part.map(|p| p.segment), &first.name),
    );
    m.gpu = Some(LOCAL_GPU_ID.into());
    m.gpu_count = same.len() as u32;
    if part.is_none() {
        uncatalogued_gpu(first, &mut acc, notes);
    }
    if unified {
        apu_memory(first, &mut acc, &mut m, notes);
    } else {
        discrete_memory(first, &same, part, &mut acc, notes)?;
    }
    if let Some(link) = pcie_link(first)
        && acc.memory_kind == MemoryKind::Discrete
    {
        acc.pcie = Some(link);
    }
    let count = if same.len() > 1 {
        format!("{}× ", same.len())
    } else {
        String::new()
    };
    m.name = format!("This machine ({count}{}, {} RAM)", first.name, d.ram_total).into();
    notes.push(format!(
        "System RAM = available now: {} of {}",
        d.ram_available, d.ram_total
    ));
    Some((m, vec![acc]))
}

/// The first GPU and those identical to it (name and VRAM); the others are noted as not used.
fn identical_gpus<'a>(d: &'a DetectedMachine, notes: &mut Vec<String>) -> Vec<&'a DetectedGpu> {
    let first = &d.gpus[0];
    let is_first = |g: &DetectedGpu| g.name == first.name && g.vram_total == first.vram_total;
    let same: Vec<&DetectedGpu> = d.gpus.iter().filter(|g| is_first(g)).collect();
    let others: Vec<&str> = d
        .gpus
        .iter()
        .filter(|g| !is_first(g))
        .map(|g| g.name.as_str())
        .collect();
    if !others.is_empty() {
        notes.push(format!(
            "Several different GPUs: sizing uses {} × {}; not used: {}",
            same.len(),
            first.name,
            others.join(", ")
        ));
    }
    same
}

/// A GPU the catalog does not know: the detected bandwidth when there is one, else the default.
fn uncatalogued_gpu(first: &DetectedGpu, acc: &mut Accelerator, notes: &mut Vec<String>) {
    if let Some(bw) = first.bandwidth_gbs {
        acc.bandwidth = GbPerSec(bw);
    }
    notes.push(format!(
        "\"{}\" is not in the catalog: bandwidth {} ({}), FP16 {DEFAULT_FP16_TFLOPS} TFLOPS assumed",
        first.name,
        acc.bandwidth,
        if first.bandwidth_gbs.is_some() { "bus width × memory clock" } else { "assumed" }
    ));
}

/// An APU: the GPU's memory is the machine's RAM, up to the carve-out or the GTT size.
fn apu_memory(
    first: &DetectedGpu,
    acc: &mut Accelerator,
    m: &mut Machine,
    notes: &mut Vec<String>,
) {
    acc.memory_kind = MemoryKind::Unified;
    acc.memory = Bytes::ZERO;
    let (limit, how) = if first.vram_total.0 > 4 * crate::core::units::GIB {
        // A BIOS carve-out (Strix Halo's 96 GB): the OS sees the rest as RAM.
        m.ram = m.ram.saturating_add(first.vram_total);
        (first.vram_free, "the VRAM carve-out")
    } else {
        (
            first.gtt_total.unwrap_or(first.vram_free),
            "GTT (system RAM the GPU can map)",
        )
    };
    m.gpu_memory_limit = Some(limit);
    m.kind = MachineKind::MiniPc;
    notes.push(format!(
        "Unified memory (APU): the GPU may use {limit}, {how}"
    ));
}

/// A discrete GPU's memory: the free VRAM now, or the catalog's when it cannot be read; `None`
/// when neither is known (the machine is then sized for its CPU).
fn discrete_memory(
    first: &DetectedGpu,
    same: &[&DetectedGpu],
    part: Option<&Accelerator>,
    acc: &mut Accelerator,
    notes: &mut Vec<String>,
) -> Option<()> {
    let free = same.iter().map(|g| g.vram_free).min().unwrap_or_default();
    if first.vram_total.0 == 0 {
        match part {
            Some(p) => {
                acc.memory = p.memory;
                notes.push(format!(
                    "VRAM not readable: the catalog's {} is used",
                    p.memory
                ));
            }
            None => {
                notes.push(format!("VRAM of \"{}\" not readable and the GPU is not in the catalog: sizing for CPU only", first.name));
                return None;
            }
        }
    } else {
        acc.memory = free;
        let held = first.vram_total.saturating_sub(first.vram_free);
        notes.push(format!(
            "GPU memory = free VRAM now: {} of {} total ({} held by the desktop and other processes){}",
            format::gib_one_decimal(free),
            format::gib_one_decimal(first.vram_total),
            format::gib_one_decimal(held),
            if same.len() > 1 { ", the smallest free figure of the identical GPUs" } else { "" }
        ));
    }
    Some(())
}

/// The PCIe link the GPU can run at (its maximum generation and width, else the current ones).
fn pcie_link(first: &DetectedGpu) -> Option<PcieLink> {
    match (
        first.pcie_max_gen.or(first.pcie_gen),
        first.pcie_max_width.or(first.pcie_width),
    ) {
        (Some(g), Some(w)) => Some(PcieLink {
            generation: g.min(u8::MAX as u32) as u8,
            lanes: w.min(u8::MAX as u32) as u8,
        }),
        _ => None,
    }
}

/// "This machine" as a catalog machine with id `"local"` and, when a GPU is used, one accelerator
/// with id `"local-gpu"` (add both to a catalog with [`catalog_with_local`]). See the module docs
/// for every choice; the same choices are written, per machine, into `Machine::notes`.
pub fn local_machine(d: &DetectedMachine, catalog: &Catalog) -> (Machine, Vec<Accelerator>) {
    let mut notes = Vec::new();
    let (mut m, accs) = if let Some(u) = &d.unified_memory {
        unified_apple(d, u, catalog, &mut notes)
    } else if let Some(r) = (!d.gpus.is_empty())
        .then(|| with_gpus(d, catalog, &mut notes))
        .flatten()
    {
        r
    } else {
        let m = base_machine(
            d,
            format!("This machine (CPU only, {} RAM)", d.ram_total),
            MachineKind::Desktop,
        );
        notes.push(format!(
            "CPU only: no usable GPU detected; system RAM = available now: {} of {}",
            d.ram_available, d.ram_total
        ));
        (m, Vec::new())
    };
    if m.kind != MachineKind::Apple {
        notes.push(format!("RAM bandwidth not detectable: {DEFAULT_RAM_BANDWIDTH_GBS} GB/s assumed (dual-channel DDR4-3200)"));
    }
    m.notes = Some(notes.join("\n"));
    (m, accs)
}

/// `catalog` plus "this machine" (machine `"local"`, accelerator `"local-gpu"`), replacing any earlier ones.
pub fn catalog_with_local(d: &DetectedMachine, catalog: &Catalog) -> Catalog {
    let (m, accs) = local_machine(d, catalog);
    let mut c = catalog.clone();
    c.merge(Catalog {
        benchmarks: Vec::new(),
        accelerator_index: Default::default(),
        accelerators: accs,
        machines: vec![m],
        models: Vec::new(),
    });
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::detect::FakeDetector;

    fn part(
        id: &str,
        name: &str,
        seg: Segment,
        kind: MemoryKind,
        mem: Bytes,
        bw: f64,
    ) -> Accelerator {
        Accelerator {
            id: id.into(),
            name: name.into(),
            vendor: if seg == Segment::Apple {
                Vendor::Apple
            } else {
                Vendor::Nvidia
            },
            segment: seg,
            memory_kind: kind,
            memory: mem,
            bandwidth: GbPerSec(bw),
            fp16_tflops: 165.2,
            fp16_acc16_tflops: None,
            vector_tflops: None,
            compute_units: None,
            l2_cache_mib: None,
            int8_tops: Some(660.6),
            mamf_tflops: None,
            fp4_tflops: None,
            tdp_w: Some(450.0),
            pcie: Some(PcieLink {
                generation: 4,
                lanes: 16,
            }),
            gpu_link: None,
            gpu_link_gbs: None,
            aliases: vec![],
            source: "test fixture".into(),
            notes: None,
        }
    }

    fn catalog() -> Catalog {
        Catalog {
            benchmarks: Vec::new(),
            accelerator_index: Default::default(),
            accelerators: vec![
                part(
                    "rtx-4090",
                    "GeForce RTX 4090",
                    Segment::Consumer,
                    MemoryKind::Discrete,
                    Bytes::gib(24),
                    1008.0,
                ),
                part(
                    "h100-sxm",
                    "H100 SXM5",
                    Segment::Datacenter,
                    MemoryKind::Discrete,
                    Bytes::gb(80),
                    3350.0,
                ),
                part(
                    "m3-max",
                    "Apple M3 Max",
                    Segment::Apple,
                    MemoryKind::Unified,
                    Bytes::ZERO,
                    400.0,
                ),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn rtx4090_desktop() {
        let d = FakeDetector::with_gpu(
            "NVIDIA GeForce RTX 4090",
            Bytes(25_757_220_864),
            Bytes::gib(23),
        )
        .machine;
        let (m, accs) = local_machine(&d, &catalog());
        assert_eq!(&*m.id, "local");
        assert_eq!(m.kind, MachineKind::Desktop);
        assert_eq!(m.gpu.as_deref(), Some(LOCAL_GPU_ID));
        assert_eq!(m.ram, Bytes::gib(48)); // available, not total
        let a = &accs[0];
        assert_eq!(a.memory, Bytes::gib(23)); // free, not total
        assert_eq!(a.bandwidth, GbPerSec(1008.0)); // catalog, matched by name
        assert_eq!(a.fp16_tflops, 165.2);
        assert!(m.notes.as_deref().unwrap().contains("free VRAM"));
        // The catalog with the local machine added still validates.
        let c = catalog_with_local(&d, &catalog());
        assert!(c.validate().is_empty(), "{:?}", c.validate());
        assert_eq!(
            c.machine("local").unwrap().gpu.as_deref(),
            Some(LOCAL_GPU_ID)
        );
    }

    #[test]
    fn unmatched_gpu_gets_defaults_and_detected_link() {
        let mut d =
            FakeDetector::with_gpu("NVIDIA GeForce RTX 4070", Bytes::gib(12), Bytes::gib(11))
                .machine;
        d.gpus[0].pcie_max_gen = Some(4);
        d.gpus[0].pcie_max_width = Some(8);
        let (_, accs) = local_machine(&d, &catalog());
        assert_eq!(accs[0].bandwidth, GbPerSec(DEFAULT_BANDWIDTH_GBS));
        assert_eq!(accs[0].fp16_tflops, DEFAULT_FP16_TFLOPS);
        assert_eq!(
            accs[0].pcie,
            Some(PcieLink {
                generation: 4,
                lanes: 8
            })
        );
        d.gpus[0].bandwidth_gbs = Some(504.2);
        assert_eq!(
            local_machine(&d, &catalog()).1[0].bandwidth,
            GbPerSec(504.2)
        );
    }

    #[test]
    fn several_gpus() {
        let d = FakeDetector::with_gpu(
            "NVIDIA H100 80GB HBM3",
            Bytes::mib(81559),
            Bytes::mib(81000),
        )
        .push_gpu(
            "NVIDIA H100 80GB HBM3",
            Bytes::mib(81559),
            Bytes::mib(60000),
        )
        .push_gpu("NVIDIA GeForce RTX 4090", Bytes::gib(24), Bytes::gib(23))
        .machine;
        let (m, accs) = local_machine(&d, &catalog());
        assert_eq!(m.gpu_count, 2);
        assert_eq!(m.kind, MachineKind::Cloud);
        assert_eq!(accs[0].memory, Bytes::mib(60000));
        assert!(
            m.notes
                .unwrap()
                .contains("not used: NVIDIA GeForce RTX 4090")
        );
    }

    #[test]
    fn cpu_only() {
        let d = FakeDetector::cpu_only(Bytes::gib(32), Bytes::gib(20)).machine;
        let (m, accs) = local_machine(&d, &catalog());
        assert!(accs.is_empty());
        assert_eq!(m.gpu, None);
        assert_eq!(m.ram, Bytes::gib(20));
        assert!(m.name.starts_with("This machine (CPU only"));
    }

    #[test]
    fn apple_unified() {
        let d = FakeDetector::apple("Apple M3 Max", Bytes::gib(128), None).machine;
        let (m, accs) = local_machine(&d, &catalog());
        assert_eq!(m.kind, MachineKind::Apple);
        assert_eq!(m.ram, Bytes::gib(128));
        assert_eq!(m.gpu_memory_limit, Some(Bytes::gib(96)));
        assert_eq!(m.ram_bandwidth, GbPerSec(400.0));
        assert_eq!(accs[0].memory_kind, MemoryKind::Unified);
        let d = FakeDetector::apple("Apple M2", Bytes::gib(16), Some(12000)).machine;
        let (m, accs) = local_machine(&d, &catalog());
        assert_eq!(m.gpu_memory_limit, Some(Bytes::mib(12000)));
        assert_eq!(accs[0].bandwidth, GbPerSec(DEFAULT_APPLE_BANDWIDTH_GBS));
        assert!(catalog_with_local(&d, &catalog()).validate().is_empty());
    }
}
