//! Catalog types: accelerators, machines and model presets. The data lives in RON files under
//! `catalogs/` (parsed by `io::catalog`); validation is pure and lives here.

use super::model::ModelSpec;
use super::precision::WeightPrecision;
use super::speed::bench::Benchmark;
use super::units::{Bytes, GbPerSec, size_str};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::sync::Arc;

mod interconnect;
mod storage;
pub use interconnect::{
    Fabric, FabricKind, LinkPreset, Network, NetworkKind, fabric_of, network_of,
};
pub use storage::{
    GP3_BASELINE_GBS, GP3_MAX_GBS, Storage, StorageKind, default_storage, storage_of,
};

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Vendor {
    Nvidia,
    Amd,
    Apple,
    Intel,
}

/// What kind of memory an accelerator has.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MemoryKind {
    /// Its own VRAM behind a PCIe link.
    Discrete,
    /// Shares system RAM (Apple M-series, AMD APUs): the machine's `ram` is the pool.
    Unified,
}

/// Market segment, for grouping in pickers.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Segment {
    Consumer,
    Laptop,
    Workstation,
    Datacenter,
    Apple,
    Apu,
}

/// A host link: PCIe generation × lanes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcieLink {
    pub generation: u8,
    pub lanes: u8,
}

impl PcieLink {
    /// Usable one-direction bandwidth in GB/s: per-lane raw rate × encoding efficiency × lanes.
    /// Gen1–2: 8b/10b; gen3+: 128b/130b (PCI-SIG). Gen4 x16 ≈ 31.5 GB/s.
    pub fn bandwidth(self) -> GbPerSec {
        let (gts, enc) = match self.generation {
            1 => (2.5, 0.8),
            2 => (5.0, 0.8),
            3 => (8.0, 128.0 / 130.0),
            4 => (16.0, 128.0 / 130.0),
            5 => (32.0, 128.0 / 130.0),
            6 => (64.0, 242.0 / 256.0),
            _ => (64.0, 242.0 / 256.0),
        };
        GbPerSec(gts * enc / 8.0 * self.lanes as f64)
    }
}

impl std::fmt::Display for PcieLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PCIe {}.0 x{}", self.generation, self.lanes)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Accelerator {
    pub id: Arc<str>,
    pub name: String,
    pub vendor: Vendor,
    pub segment: Segment,
    pub memory_kind: MemoryKind,
    /// Memory on the device ("24 GiB"); for unified parts, 0 (the machine's RAM is the pool).
    #[serde(with = "size_str")]
    pub memory: Bytes,
    /// Memory bandwidth, GB/s.
    pub bandwidth: GbPerSec,
    /// Dense FP16/BF16 tensor TFLOPS with FP32 accumulate (GeForce: half its FP16-accumulate rate).
    pub fp16_tflops: f64,
    /// Dense FP16 tensor TFLOPS with FP16 accumulate, where it differs from `fp16_tflops`
    /// (GeForce and laptop parts: twice). `None` = same as `fp16_tflops`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp16_acc16_tflops: Option<f64>,
    /// FP32 TFLOPS of the ordinary (non-tensor) ALUs at boost clock: what dequantisation and
    /// mat-vec dot products run on. `None` = unknown (the speed model assumes fp16_tflops / 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_tflops: Option<f64>,
    /// SMs (NVIDIA), CUs (AMD) or GPU cores (Apple).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_units: Option<u32>,
    /// Last-level (L2) cache of the GPU, MiB, as the vendor or TechPowerUp's GPU database lists it (the
    /// part's enabled L2, not the full die's). `None` = not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_cache_mib: Option<f64>,
    #[serde(default)]
    pub int8_tops: Option<f64>,
    /// Maximum achievable matmul TFLOPS, dense BF16: the best `matmul` measured on the part over
    /// a sweep of shapes (Stas Bekman's MAMF finder; ml-engineering
    /// `compute/accelerator/README.md`, "Maximum Achievable Matmul FLOPS comparison table"), what
    /// its tensor cores really sustain next to the `fp16_tflops` on the datasheet. `None` = not
    /// measured (the training model then assumes the A100's share of its peak).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mamf_tflops: Option<f64>,
    /// Dense FP4 tensor TFLOPS where the part multiplies NVFP4 natively (NVIDIA Blackwell's
    /// fifth-generation tensor cores: block-scaled E2M1 with an E4M3 scale per 16 values).
    /// Vendors print FP4 "AI TOPS" with 2:4 sparsity; this is the dense figure, half of that.
    /// `None` = no native NVFP4 (the speed model then runs NVFP4 weights weight-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp4_tflops: Option<f64>,
    #[serde(default)]
    pub tdp_w: Option<f64>,
    #[serde(default)]
    pub pcie: Option<PcieLink>,
    /// GPU–GPU link ("NVLink4 900 GB/s"), when there is one.
    #[serde(default)]
    pub gpu_link: Option<String>,
    #[serde(default)]
    pub gpu_link_gbs: Option<f64>,
    /// Other names the part goes by (for matching detected GPUs): "NVIDIA GeForce RTX 4090".
    #[serde(default)]
    pub aliases: Vec<String>,
    pub source: String,
    #[serde(default)]
    pub notes: Option<String>,
}

impl Accelerator {
    /// A part with only its identity set: no memory, bandwidth or compute figures, no optional facts.
    /// Callers fill in what they know with struct-update syntax (`Accelerator { memory, ..new(..) }`),
    /// so the list of optional fields is written once.
    pub fn new(
        id: impl Into<Arc<str>>,
        name: impl Into<String>,
        vendor: Vendor,
        segment: Segment,
        memory_kind: MemoryKind,
    ) -> Self {
        Accelerator {
            id: id.into(),
            name: name.into(),
            vendor,
            segment,
            memory_kind,
            memory: Bytes::ZERO,
            bandwidth: GbPerSec(0.0),
            fp16_tflops: 0.0,
            fp16_acc16_tflops: None,
            vector_tflops: None,
            compute_units: None,
            l2_cache_mib: None,
            int8_tops: None,
            mamf_tflops: None,
            fp4_tflops: None,
            tdp_w: None,
            pcie: None,
            gpu_link: None,
            gpu_link_gbs: None,
            aliases: Vec::new(),
            source: String::new(),
            notes: None,
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MachineKind {
    Laptop,
    /// Apple desktops (Mac mini, Mac Studio, Mac Pro).
    Apple,
    Desktop,
    Workstation,
    Cloud,
    /// A mini PC / APU box (Strix Halo).
    MiniPc,
}

impl MachineKind {
    pub const ALL: [MachineKind; 6] = [
        MachineKind::Laptop,
        MachineKind::Apple,
        MachineKind::Desktop,
        MachineKind::Workstation,
        MachineKind::Cloud,
        MachineKind::MiniPc,
    ];
    pub const fn cli_name(self) -> &'static str {
        match self {
            MachineKind::Laptop => "laptop",
            MachineKind::Apple => "apple",
            MachineKind::Desktop => "desktop",
            MachineKind::Workstation => "workstation",
            MachineKind::Cloud => "cloud",
            MachineKind::MiniPc => "mini-pc",
        }
    }
    pub const fn label(self) -> &'static str {
        match self {
            MachineKind::Laptop => "Laptop",
            MachineKind::Apple => "Apple desktop",
            MachineKind::Desktop => "Desktop",
            MachineKind::Workstation => "Workstation",
            MachineKind::Cloud => "Cloud",
            MachineKind::MiniPc => "Mini PC",
        }
    }
}

/// What a machine costs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Price {
    /// Cloud on-demand price per hour.
    Hourly {
        usd: f64,
        region: String,
        price_date: String,
        source: String,
    },
    /// Purchase price of an owned machine.
    Purchase {
        usd: f64,
        region: String,
        price_date: String,
        source: String,
    },
}

impl Price {
    /// The same price for `n` of the thing (a cluster of `n` machines).
    pub fn scaled(&self, n: f64) -> Price {
        let mut p = self.clone();
        match &mut p {
            Price::Hourly { usd, .. } | Price::Purchase { usd, .. } => *usd *= n,
        }
        p
    }
    pub fn usd(&self) -> f64 {
        match self {
            Price::Hourly { usd, .. } | Price::Purchase { usd, .. } => *usd,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    pub id: Arc<str>,
    pub name: Arc<str>,
    pub kind: MachineKind,
    /// Accelerator id from the accelerator catalog; `None` = CPU only.
    #[serde(default)]
    pub gpu: Option<Arc<str>>,
    #[serde(default = "one")]
    pub gpu_count: u32,
    /// System RAM; for unified-memory machines, the shared pool.
    #[serde(with = "size_str")]
    pub ram: Bytes,
    /// System RAM bandwidth, GB/s (dual-channel DDR5-5600 ≈ 89.6).
    pub ram_bandwidth: GbPerSec,
    pub cpu: Arc<str>,
    pub cpu_cores: u32,
    #[serde(default)]
    pub vcpus: Option<u32>,
    /// For unified-memory machines: the most the GPU may use, when it is not the platform default
    /// (Strix Halo's BIOS carve-out, a raised `iogpu.wired_limit_mb`).
    #[serde(
        default,
        with = "size_str::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub gpu_memory_limit: Option<Bytes>,
    #[serde(default)]
    pub price: Option<Price>,
    /// Typical power draw under load, W (owned machines).
    #[serde(default)]
    pub power_w: Option<f64>,
    /// The disk the model files sit on; the kind's default ([`default_storage`]) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<Storage>,
    /// How the GPUs inside talk to each other; from the accelerator's link when absent
    /// ([`fabric_of`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric: Option<Fabric>,
    /// The network to other machines; the kind's default when absent ([`network_of`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<Network>,
    pub source: String,
    #[serde(default)]
    pub notes: Option<String>,
}

fn one() -> u32 {
    1
}

impl Machine {
    /// A machine with nothing but its id, name and kind (one CPU core, no RAM, no GPU, price or
    /// facts): the base that detected, published-benchmark and test machines fill in.
    pub fn bare(id: &str, name: &str, kind: MachineKind) -> Machine {
        Machine {
            id: Arc::from(id),
            name: Arc::from(name),
            kind,
            gpu: None,
            gpu_count: 1,
            ram: Bytes::ZERO,
            ram_bandwidth: GbPerSec(0.0),
            cpu: "".into(),
            cpu_cores: 1,
            vcpus: None,
            gpu_memory_limit: None,
            price: None,
            power_w: None,
            storage: None,
            fabric: None,
            network: None,
            source: String::new(),
            notes: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPreset {
    pub id: String,
    pub name: String,
    pub family: String,
    pub spec: ModelSpec,
    /// Where the numbers come from (the model's config.json URL).
    pub source: String,
    /// Total parameters as published (for the catalog test against the computed count).
    #[serde(default)]
    pub published_params: Option<u64>,
    /// Where `published_params` comes from, caveats ("text decoder only"), uncertain values.
    #[serde(default)]
    pub notes: Option<String>,
    /// The precision the publisher ships the checkpoint in, when it is not BF16 (gpt-oss:
    /// `Mxfp4`, DeepSeek-V3/R1: `Fp8Block`). See [`ModelPreset::default_weights`].
    #[serde(default)]
    pub weights: Option<WeightPrecision>,
}

impl ModelPreset {
    /// The weight precision a scenario starts with for this preset: the publisher's (`weights`),
    /// else BF16, the dtype of the other presets' checkpoints (config.json `torch_dtype`).
    pub fn default_weights(&self) -> WeightPrecision {
        self.weights.unwrap_or(WeightPrecision::Bf16)
    }
}

/// The whole catalog.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Catalog {
    pub accelerators: Vec<Accelerator>,
    pub machines: Vec<Machine>,
    pub models: Vec<ModelPreset>,
    /// Published llama-bench measurements (`catalogs/benchmarks.ron`), shown beside predictions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub benchmarks: Vec<Benchmark>,
    /// Where each accelerator id is in `accelerators`, built on the first look-up: every
    /// machine's fit looks its GPU up. Not data: never saved, equal in every catalog, and a
    /// fresh one in a clone.
    #[serde(skip)]
    pub accelerator_index: AcceleratorIndex,
}

/// Positions of the accelerators by id ([`Catalog::accelerator`]), and what a fit reads from
/// each machine's names ([`Catalog::machine_parts`]). A look-up checks the id (the names) at
/// the position it gives and falls back to a search (to reading the name), so a catalog changed
/// after the index was built (a user file merged, a detected GPU added, a machine's CPU edited)
/// still answers what the search would.
#[derive(Default)]
pub struct AcceleratorIndex(
    std::sync::OnceLock<std::collections::HashMap<Box<str>, usize, IdHashBuild>>,
    std::sync::OnceLock<Vec<MachineParts>>,
);

/// What a fit reads from one catalog machine's names, read once per catalog, with the names
/// themselves (shared, not copied: an `Arc<str>` cannot change in place, so the very same
/// pointer is the very same name): the accelerator its GPU id named (its position and its id)
/// and its CPU's facts.
struct MachineParts {
    gpu: Option<Arc<str>>,
    acc: Option<(usize, Arc<str>)>,
    cpu: Arc<str>,
    cpu_facts: super::speed::CpuFacts,
}

impl Clone for AcceleratorIndex {
    fn clone(&self) -> Self {
        AcceleratorIndex::default()
    }
}

impl PartialEq for AcceleratorIndex {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for AcceleratorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AcceleratorIndex")
    }
}

/// The index's hash of a catalog id: its length and its first and last eight bytes, mixed by one
/// multiplication (the 64-bit golden-ratio constant of Fibonacci hashing, Knuth TAOCP vol. 3
/// §6.4). Ids that share all three only share a bucket — the lookup still compares the whole id —
/// and nothing here is keyed by untrusted input an attacker could collide. A byte-at-a-time hash
/// (FNV-1a) was 3 % of a whole-catalog fit on its own: ids such as
/// `rtx-pro-6000-blackwell-max-q` are long.
#[derive(Default)]
pub(crate) struct IdHash(u64);

impl std::hash::Hasher for IdHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let n = bytes.len();
        let word = |b: &[u8]| u64::from_le_bytes(<[u8; 8]>::try_from(b).unwrap_or([0; 8]));
        let (head, tail) = if n >= 8 {
            (word(&bytes[..8]), word(&bytes[n - 8..]))
        } else {
            // Shorter than a word (and `str`'s 0xff terminator): its bytes, one per byte lane.
            let w = bytes
                .iter()
                .enumerate()
                .fold(0u64, |w, (i, b)| w | u64::from(*b) << (8 * i));
            (w, 0)
        };
        let x = self.0 ^ head ^ tail.rotate_left(29) ^ (n as u64).rotate_left(56);
        self.0 = x.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(31);
    }
}

pub(crate) type IdHashBuild = std::hash::BuildHasherDefault<IdHash>;

impl Catalog {
    /// The accelerator with id `id` (the first, as a search in catalog order finds it).
    pub fn accelerator(&self, id: &str) -> Option<&Accelerator> {
        self.accelerator_at(id, self.index().get(id).copied())
    }
    /// The accelerator with id `id` given the index's position for it (`at`).
    fn accelerator_at(&self, id: &str, at: Option<usize>) -> Option<&Accelerator> {
        match at.and_then(|i| self.accelerators.get(i)) {
            Some(a) if *a.id == *id && self.accelerators.len() == self.index().len() => Some(a),
            _ => self.accelerators.iter().find(|a| *a.id == *id),
        }
    }
    /// The accelerators' positions by id, built on the first look-up.
    fn index(&self) -> &std::collections::HashMap<Box<str>, usize, IdHashBuild> {
        self.accelerator_index.0.get_or_init(|| {
            let mut m = std::collections::HashMap::with_capacity_and_hasher(
                self.accelerators.len(),
                IdHashBuild::default(),
            );
            for (i, a) in self.accelerators.iter().enumerate() {
                m.entry((*a.id).into()).or_insert(i);
            }
            m
        })
    }
    /// The accelerator of `m` ([`Self::accelerator`] of its GPU id) and the facts of its CPU
    /// ([`super::speed::cpu_facts`] of its name). For the catalog's own machines the index
    /// position of the GPU id and the CPU's facts are read once per catalog (a whole-catalog fit
    /// asks for every machine on every change) and used while the machine's names are the ones
    /// they were read from; any other machine, or one whose names changed since, is looked up.
    pub fn machine_parts(&self, m: &Machine) -> (Option<&Accelerator>, super::speed::CpuFacts) {
        match self.kept_parts(m) {
            Some(f) => (
                f.acc.as_ref().map_or_else(
                    || f.gpu.as_deref().and_then(|id| self.accelerator(id)),
                    |(at, id)| self.kept_accelerator(*at, id),
                ),
                f.cpu_facts,
            ),
            None => (
                m.gpu.as_deref().and_then(|id| self.accelerator(id)),
                super::speed::cpu_facts(&m.cpu),
            ),
        }
    }
    /// What the catalog keeps for `m` when `m` is one of its machines (the very one, not a copy)
    /// and its names are the ones it was read from.
    fn kept_parts(&self, m: &Machine) -> Option<&MachineParts> {
        let at = (m as *const Machine as usize).wrapping_sub(self.machines.as_ptr() as usize)
            / std::mem::size_of::<Machine>().max(1);
        if !self.machines.get(at).is_some_and(|x| std::ptr::eq(x, m)) {
            return None;
        }
        let parts = self.accelerator_index.1.get_or_init(|| {
            let index = self.index();
            self.machines
                .iter()
                .map(|m| MachineParts {
                    gpu: m.gpu.clone(),
                    acc: m.gpu.as_deref().and_then(|id| {
                        let at = *index.get(id)?;
                        Some((at, self.accelerators.get(at)?.id.clone()))
                    }),
                    cpu: m.cpu.clone(),
                    cpu_facts: super::speed::cpu_facts(&m.cpu),
                })
                .collect()
        });
        let same = |a: &Option<Arc<str>>, b: &Option<Arc<str>>| match (a, b) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        parts
            .get(at)
            .filter(|f| Arc::ptr_eq(&f.cpu, &m.cpu) && same(&f.gpu, &m.gpu))
    }
    /// The accelerator the index put at `at` for a kept machine's GPU, while the one there is
    /// still the one read then (its id, the very string) and none was added or taken away; else
    /// the search ([`Self::accelerator`]).
    fn kept_accelerator(&self, at: usize, id: &Arc<str>) -> Option<&Accelerator> {
        match self.accelerators.get(at) {
            Some(a) if Arc::ptr_eq(&a.id, id) && self.accelerators.len() == self.index().len() => {
                Some(a)
            }
            _ => self.accelerator(id),
        }
    }
    pub fn machine(&self, id: &str) -> Option<&Machine> {
        self.machines.iter().find(|m| *m.id == *id)
    }
    pub fn model(&self, id: &str) -> Option<&ModelPreset> {
        let t = id.to_ascii_lowercase();
        self.models.iter().find(|m| m.id == t)
    }

    /// Whether machine `m` is of kind `k` as every filter means it (`--kind`, the window's kind
    /// buttons): "apple" is every machine with Apple silicon, MacBooks included; "desktop" takes
    /// the workstations in; the other kinds are the machine's own.
    pub fn is_kind(&self, m: &Machine, k: MachineKind) -> bool {
        match k {
            MachineKind::Apple => m
                .gpu
                .as_deref()
                .and_then(|g| self.accelerator(g))
                .is_some_and(|a| a.vendor == Vendor::Apple),
            MachineKind::Desktop => {
                matches!(m.kind, MachineKind::Desktop | MachineKind::Workstation)
            }
            k => m.kind == k,
        }
    }

    /// Merge `other` over `self`: same id replaces, new ids are appended.
    pub fn merge(&mut self, other: Catalog) {
        fn over<T, F: Fn(&T) -> &str>(base: &mut Vec<T>, new: Vec<T>, id: F) {
            for n in new {
                if let Some(slot) = base.iter_mut().find(|b| id(b) == id(&n)) {
                    *slot = n;
                } else {
                    base.push(n);
                }
            }
        }
        over(&mut self.accelerators, other.accelerators, |a| &a.id);
        over(&mut self.machines, other.machines, |m| &m.id);
        over(&mut self.models, other.models, |m| &m.id);
        over(&mut self.benchmarks, other.benchmarks, |b| &b.id);
    }

    /// Checks ids, references and ranges. Each problem is one message naming the entry.
    pub fn validate(&self) -> Vec<String> {
        let mut errs = Vec::new();
        let mut seen = HashSet::new();
        self.validate_accelerators(&mut errs, &mut seen);
        self.validate_machines(&mut errs, &mut seen);
        self.validate_models(&mut errs, &mut seen);
        self.validate_benchmarks(&mut errs, &mut seen);
        errs
    }

    /// [`Self::validate`] for each accelerator: `seen` holds the ids met so far.
    fn validate_accelerators<'a>(
        &'a self,
        errs: &mut Vec<String>,
        seen: &mut HashSet<(&'static str, &'a str)>,
    ) {
        for a in &self.accelerators {
            if !seen.insert(("acc", &*a.id)) {
                errs.push(format!("accelerator '{}': duplicate id", a.id));
            }
            if a.memory_kind == MemoryKind::Discrete && a.memory.0 == 0 {
                errs.push(format!("accelerator '{}': memory must be positive", a.id));
            }
            if !(a.bandwidth.0 > 0.0 && a.bandwidth.0.is_finite()) {
                errs.push(format!(
                    "accelerator '{}': bandwidth must be positive",
                    a.id
                ));
            }
            if !(a.fp16_tflops > 0.0 && a.fp16_tflops.is_finite()) {
                errs.push(format!(
                    "accelerator '{}': fp16_tflops must be positive",
                    a.id
                ));
            }
            if a.l2_cache_mib
                .is_some_and(|l2| !(l2 > 0.0 && l2.is_finite()))
            {
                errs.push(format!(
                    "accelerator '{}': l2_cache_mib must be positive",
                    a.id
                ));
            }
            if a.source.trim().is_empty() {
                errs.push(format!("accelerator '{}': source is empty", a.id));
            }
        }
    }

    /// [`Self::validate`] for each machine: `seen` holds the ids met so far.
    fn validate_machines<'a>(
        &'a self,
        errs: &mut Vec<String>,
        seen: &mut HashSet<(&'static str, &'a str)>,
    ) {
        for m in &self.machines {
            if !seen.insert(("machine", &*m.id)) {
                errs.push(format!("machine '{}': duplicate id", m.id));
            }
            if let Some(g) = &m.gpu
                && self.accelerator(g).is_none()
            {
                errs.push(format!(
                    "machine '{}': accelerator '{g}' is not in the catalog",
                    m.id
                ));
            }
            if m.gpu.is_some() && m.gpu_count == 0 {
                errs.push(format!("machine '{}': gpu_count must be at least 1", m.id));
            }
            if m.ram.0 == 0 {
                errs.push(format!("machine '{}': ram must be positive", m.id));
            }
            if !(m.ram_bandwidth.0 > 0.0 && m.ram_bandwidth.0.is_finite()) {
                errs.push(format!(
                    "machine '{}': ram_bandwidth must be positive",
                    m.id
                ));
            }
            if let Some(p) = &m.price
                && !(p.usd() >= 0.0 && p.usd().is_finite())
            {
                errs.push(format!("machine '{}': price must be non-negative", m.id));
            }
            if m.source.trim().is_empty() {
                errs.push(format!("machine '{}': source is empty", m.id));
            }
            if let Some(d) = &m.storage
                && (d.capacity.0 == 0 || d.read_gbs.is_some_and(|r| !(r > 0.0 && r.is_finite())))
            {
                errs.push(format!(
                    "machine '{}': storage needs a positive capacity and read rate",
                    m.id
                ));
            }
        }
    }

    /// [`Self::validate`] for each model preset: `seen` holds the ids met so far.
    fn validate_models<'a>(
        &'a self,
        errs: &mut Vec<String>,
        seen: &mut HashSet<(&'static str, &'a str)>,
    ) {
        for p in &self.models {
            if !seen.insert(("model", p.id.as_str())) {
                errs.push(format!("model '{}': duplicate id", p.id));
            }
            let s = &p.spec;
            for (v, n) in [
                (s.layers, "layers"),
                (s.hidden, "hidden"),
                (s.heads, "heads"),
                (s.kv_heads, "kv_heads"),
                (s.head_dim, "head_dim"),
                (s.vocab, "vocab"),
            ] {
                if v == 0 {
                    errs.push(format!("model '{}': {n} must be positive", p.id));
                }
            }
            if p.source.trim().is_empty() {
                errs.push(format!("model '{}': source is empty", p.id));
            }
        }
    }

    /// [`Self::validate`] for each benchmark: `seen` holds the ids met so far.
    fn validate_benchmarks<'a>(
        &'a self,
        errs: &mut Vec<String>,
        seen: &mut HashSet<(&'static str, &'a str)>,
    ) {
        for b in &self.benchmarks {
            if !seen.insert(("benchmark", b.id.as_str())) {
                errs.push(format!("benchmark '{}': duplicate id", b.id));
            }
            match (&b.machine, &b.spec) {
                (Some(m), _) if self.machine(m).is_none() => errs.push(format!(
                    "benchmark '{}': machine '{m}' is not in the catalog",
                    b.id
                )),
                (_, Some(sp)) => {
                    if let Some(g) = &sp.gpu
                        && self.accelerator(g).is_none()
                    {
                        errs.push(format!(
                            "benchmark '{}': accelerator '{g}' is not in the catalog",
                            b.id
                        ));
                    }
                }
                _ => {}
            }
            if self.model(&b.model).is_none() {
                errs.push(format!(
                    "benchmark '{}': model '{}' is not in the catalog",
                    b.id, b.model
                ));
            }
            if WeightPrecision::from_cli(&b.weights).is_none() {
                errs.push(format!(
                    "benchmark '{}': unknown weights '{}'",
                    b.id, b.weights
                ));
            }
            if !(b.pp512 > 0.0 && b.pp512.is_finite() && b.tg128 > 0.0 && b.tg128.is_finite()) {
                errs.push(format!(
                    "benchmark '{}': pp512 and tg128 must be positive",
                    b.id
                ));
            }
            if !b.source.starts_with("http") {
                errs.push(format!("benchmark '{}': source must be a URL", b.id));
            }
        }
    }
}

/// Apple's default Metal working set (`MTLDevice.recommendedMaxWorkingSetSize`, the GPU's share
/// of unified memory unless `iogpu.wired_limit_mb` overrides it): 2/3 of RAM up to 32 GiB, 3/4
/// above. The value is what llama.cpp prints at start-up (`recommendedMaxWorkingSetSize` in
/// ggml/src/ggml-metal/ggml-metal-device.m): 16 GiB → 10922.67 MiB, 64 GiB → 49152 MiB,
/// 128 GiB → 98304 MiB on macOS 13–15. How the rule was derived, and what is not yet observed
/// (36 and 48 GiB Macs), is in docs/apple-unified-memory.md. The one rule for the fit engine
/// and for detection.
pub fn metal_default_limit(ram: Bytes) -> Bytes {
    if ram.0 <= METAL_RULE_CUTOVER.0 {
        Bytes(ram.0 / 3 * 2)
    } else {
        Bytes(ram.0 / 4 * 3)
    }
}

/// The RAM up to which Metal's default working set is 2/3 (3/4 above).
pub const METAL_RULE_CUTOVER: Bytes = Bytes::gib(32);

/// The rule of [`metal_default_limit`] in words, for notes.
pub const METAL_RULE_TEXT: &str = "2/3 up to 32 GiB, 3/4 above";

#[cfg(test)]
mod tests {
    use super::*;

    fn part(id: &str, name: &str) -> Accelerator {
        Accelerator::new(
            id,
            name,
            Vendor::Nvidia,
            Segment::Consumer,
            MemoryKind::Discrete,
        )
    }

    /// The index answers what a search in catalog order answers, also after the accelerators
    /// changed under an index that was already built; clones and equality ignore it.
    #[test]
    fn accelerator_lookup_follows_changes_after_the_index_is_built() {
        let mut c = Catalog {
            accelerators: vec![part("a", "A"), part("b", "B")],
            ..Catalog::default()
        };
        let name = |c: &Catalog, id: &str| c.accelerator(id).map(|a| a.name.clone());
        assert_eq!(name(&c, "b").as_deref(), Some("B"));
        assert_eq!(name(&c, "z"), None);
        // Built now; change the list under it.
        c.accelerators.insert(0, part("b", "B first"));
        assert_eq!(name(&c, "b").as_deref(), Some("B first"), "the first match");
        c.accelerators.remove(0);
        c.accelerators.swap(0, 1);
        c.accelerators.push(part("c", "C"));
        for (id, want) in [("a", "A"), ("b", "B"), ("c", "C")] {
            assert_eq!(name(&c, id).as_deref(), Some(want), "{id}");
        }
        let d = c.clone();
        assert_eq!(d, c, "the index takes no part in equality");
        assert_eq!(name(&d, "c").as_deref(), Some("C"));
    }

    #[test]
    fn ids_that_hash_alike_are_both_found() {
        // Same length, same first and last eight bytes: one hash, two ids.
        let c = Catalog {
            accelerators: vec![
                part("rtx-pro-a-6000-max-q", "A"),
                part("rtx-pro-b-6000-max-q", "B"),
                part("h100", "short"),
                part("", "empty"),
            ],
            ..Catalog::default()
        };
        let name = |id: &str| c.accelerator(id).map(|a| a.name.clone());
        assert_eq!(name("rtx-pro-a-6000-max-q").as_deref(), Some("A"));
        assert_eq!(name("rtx-pro-b-6000-max-q").as_deref(), Some("B"));
        assert_eq!(name("rtx-pro-c-6000-max-q"), None);
        assert_eq!(name("h100").as_deref(), Some("short"));
        assert_eq!(name("h10"), None);
        assert_eq!(name("").as_deref(), Some("empty"));
    }

    #[test]
    fn pcie_bandwidth() {
        // PCIe 4.0 x16: 16 GT/s × 16 lanes × 128/130 / 8 = 31.5 GB/s per direction.
        let b = PcieLink {
            generation: 4,
            lanes: 16,
        }
        .bandwidth()
        .0;
        assert!((b - 31.5).abs() < 0.05, "{b}");
        let b3 = PcieLink {
            generation: 3,
            lanes: 16,
        }
        .bandwidth()
        .0;
        assert!((b3 - 15.75).abs() < 0.05, "{b3}");
    }

    #[test]
    fn metal_limits() {
        assert!((metal_default_limit(Bytes::gib(16)).as_gib() - 10.667).abs() < 0.01);
        assert_eq!(metal_default_limit(Bytes::gib(128)), Bytes::gib(96));
    }
}
