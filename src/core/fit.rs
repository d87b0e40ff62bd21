//! The fit engine: a scenario on a machine → a placement, a verdict, headroom, speed and cost.
//! Solvers across the catalog: largest context, largest batch, lowest-bit precision, fewest GPUs.

use super::capacity::{gpu_capacity, host_link, layers_that_fit, offload_host_bytes, ram_capacity};
use super::catalog::{Accelerator, Catalog, Machine, MachineKind, MemoryKind, Price, Vendor};
use super::estimate::{ComponentKind, Estimate, estimate, estimate_with};
use super::experts::{self, ExpertSplit};
use super::note::{Note, UnifiedLimit};
use super::precision::WeightPrecision;
use super::scenario::{Checkpointing, Mode, Runtime, Scenario};
use super::speed::bench::{Benchmark, Calibration, Measured, measured_for};
use super::speed::{
    Backend, MultiGpu, Speed, SpeedConstants, SpeedQuery, SplitStyle, placement_speed,
    training_tokens_per_s,
};
use super::units::{Bytes, GbPerSec};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Fits in the usable VRAM of the machine's GPU(s).
    Gpu,
    /// Fits in the GPU's share of unified memory (Apple, APUs).
    Unified,
    /// Whole layers on the GPU, the rest in RAM.
    Offload,
    /// Fits in RAM; runs on the CPU.
    Cpu,
    /// Fits in neither VRAM nor RAM: the rest is read from the disk (llama.cpp mmap, accelerate
    /// `offload_folder`, ZeRO-Infinity NVMe offload); see [`super::disk`].
    Disk,
    /// Does not fit.
    None,
}

impl Verdict {
    pub const fn label(self) -> &'static str {
        match self {
            Verdict::Gpu => "GPU",
            Verdict::Unified => "unified",
            Verdict::Offload => "offload",
            Verdict::Cpu => "CPU",
            Verdict::Disk => "disk",
            Verdict::None => "no",
        }
    }
    pub const fn json_name(self) -> &'static str {
        match self {
            Verdict::Gpu => "gpu",
            Verdict::Unified => "unified",
            Verdict::Offload => "offload",
            Verdict::Cpu => "cpu",
            Verdict::Disk => "disk",
            Verdict::None => "none",
        }
    }
}

/// Settings of the fit engine (shown in reports; adjustable in the GUI).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FitSettings {
    pub speed: SpeedConstants,
    /// Electricity price for owned machines, USD per kWh.
    pub electricity_usd_per_kwh: f64,
    /// RAM kept for the OS and other programs: max(this, `os_reserve_fraction` × RAM).
    pub os_reserve: Bytes,
    pub os_reserve_fraction: f64,
    /// Share of unified memory an AMD APU's GPU may use when the catalog gives no limit
    /// (Linux amdgpu GTT default: half of RAM).
    pub apu_gpu_fraction: f64,
    /// How CPU-resident layers run.
    pub split_style: SplitStyle,
    /// How llama.cpp spreads a model over several GPUs (`--split-mode`); vLLM always runs
    /// tensor parallel. `None` = llama.cpp's default, layer split.
    pub llama_split: Option<MultiGpu>,
    /// This machine's multipliers from `headroom calibrate` (applied to machine `calibration.machine`).
    pub calibration: Option<Calibration>,
}

impl Default for FitSettings {
    fn default() -> Self {
        FitSettings {
            speed: SpeedConstants::default(),
            electricity_usd_per_kwh: 0.15,
            os_reserve: Bytes::gib(2),
            os_reserve_fraction: 0.10,
            apu_gpu_fraction: 0.5,
            split_style: SplitStyle::CpuLayers,
            llama_split: None,
            calibration: None,
        }
    }
}

/// Training throughput and cost on one machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrainingSpeed {
    pub step_seconds: f64,
    pub tokens_per_s: f64,
    pub run_hours: f64,
    pub run_usd: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitResult {
    pub machine: Arc<str>,
    pub name: Arc<str>,
    pub kind: MachineKind,
    pub verdict: Verdict,
    pub gpu_layers: u64,
    pub total_layers: u64,
    /// Capacity minus requirement of the binding memory (negative when it does not fit).
    pub headroom_bytes: i64,
    /// GPUs on the machine.
    pub gpus: u64,
    /// Usable memory per GPU (VRAM; vLLM: × gpu_memory_utilization; unified: the GPU's share).
    pub gpu_capacity: Bytes,
    /// What one GPU needs for the whole model on the GPUs.
    pub gpu_required: Bytes,
    /// RAM usable by the job (RAM − OS reserve).
    pub ram_capacity: Bytes,
    /// What host RAM needs in this placement.
    pub ram_required: Bytes,
    /// The OS reserve subtracted from RAM.
    pub os_reserve: Bytes,
    /// Bytes left on the disk (verdict `Disk`): weights read through the page cache or
    /// `offload_folder`, or ZeRO-Infinity's NVMe-offloaded states.
    #[serde(default)]
    pub disk_bytes: Bytes,
    pub decode_tokens_per_s: f64,
    pub prefill_tokens_per_s: f64,
    /// Time to first token for the scenario's prompt, seconds.
    pub ttft_s: f64,
    pub usd_per_million_tokens: Option<f64>,
    pub training: Option<TrainingSpeed>,
    /// The runtime/backend whose throughput profile gave the speeds (`None`: no speed).
    #[serde(default)]
    pub backend: Option<Backend>,
    /// A published measurement of this model and precision on this machine, when there is one.
    #[serde(default)]
    pub measured: Option<Measured>,
    pub notes: Vec<Note>,
    /// How an offload verdict splits the model; `None` for the other verdicts.
    #[serde(default)]
    pub offload_style: Option<OffloadStyle>,
    /// Expert offload (`offload_style` = experts): llama.cpp `--n-cpu-moe N` and the weights it
    /// leaves in RAM.
    #[serde(default)]
    pub expert_split: Option<ExpertSplit>,
}

/// How an offload places what does not fit on the GPU.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OffloadStyle {
    /// llama.cpp `-ngl k`: k whole layers on the GPU, the others run on the CPU from RAM.
    Layers,
    /// llama.cpp `-ngl 99 --n-cpu-moe N`: every layer on the GPU except the routed experts of
    /// the first N layers, which the CPU runs from RAM ([`super::experts`]).
    Experts,
    /// accelerate / vLLM `--cpu-offload-gb`: the RAM layers' weights cross PCIe every step.
    Streaming,
}

impl OffloadStyle {
    /// The style of a layer offload run this way.
    pub const fn of(s: SplitStyle) -> Self {
        match s {
            SplitStyle::CpuLayers => OffloadStyle::Layers,
            SplitStyle::Streaming => OffloadStyle::Streaming,
        }
    }
    pub const fn json_name(self) -> &'static str {
        match self {
            OffloadStyle::Layers => "layers",
            OffloadStyle::Experts => "experts",
            OffloadStyle::Streaming => "streaming",
        }
    }
}

impl FitResult {
    /// "offload 20/32", "expert offload 25/36", "GPU", …
    pub fn verdict_text(&self) -> String {
        match self.verdict {
            Verdict::Offload if self.offload_style == Some(OffloadStyle::Experts) => {
                let n = self.expert_split.as_ref().map_or(0, |x| x.cpu_moe_layers);
                format!(
                    "expert offload {}/{}",
                    n.min(self.total_layers),
                    self.total_layers
                )
            }
            Verdict::Offload => format!("offload {}/{}", self.gpu_layers, self.total_layers),
            Verdict::Disk => format!("disk {}", super::format::bytes(self.disk_bytes)),
            v => v.label().to_string(),
        }
    }
    /// How an offload splits the model, for sentences: "20 of 32 layers on the GPU", or for an
    /// expert offload "the experts of 24 of 36 layers in RAM".
    pub fn offload_split_text(&self) -> String {
        match &self.expert_split {
            Some(x) => format!(
                "the experts of {} of {} layers in RAM",
                x.cpu_moe_layers.min(self.total_layers),
                self.total_layers
            ),
            None => format!(
                "{} of {} layers on the GPU",
                self.gpu_layers, self.total_layers
            ),
        }
    }
    /// The machine kind's CLI name ("laptop", "cloud", …).
    pub fn kind_name(&self) -> &'static str {
        self.kind.cli_name()
    }
    /// Fits in memory: GPU, unified, offload or CPU (not the disk tier).
    pub fn fits(&self) -> bool {
        !matches!(self.verdict, Verdict::None | Verdict::Disk)
    }
    /// Runs at all, the disk tier included.
    pub fn runs(&self) -> bool {
        self.verdict != Verdict::None
    }
}

pub use super::catalog::metal_default_limit;

/// Estimates (numbers only, no formula text) for one scenario at the GPU counts machines need,
/// computed once each, plus the scenario clamped once.
pub struct EstimateCache {
    base: Scenario,
    by_gpus: Vec<(u64, Estimate)>,
}

impl EstimateCache {
    pub fn new(s: &Scenario) -> Self {
        EstimateCache {
            base: s.clamped(),
            by_gpus: Vec::with_capacity(6),
        }
    }
    /// The clamped scenario.
    pub fn scenario(&self) -> &Scenario {
        &self.base
    }
    /// Make sure the estimate over `gpus` GPUs (0 = CPU only) is there.
    pub fn ensure(&mut self, gpus: u64) {
        if !self.by_gpus.iter().any(|(g, _)| *g == gpus) {
            let s = Scenario {
                gpus,
                ..self.base.clone()
            };
            self.by_gpus.push((gpus, estimate_with(&s, false)));
        }
    }
    /// The estimate over `gpus` GPUs; computed on demand.
    pub fn get(&mut self, gpus: u64) -> &Estimate {
        self.ensure(gpus);
        self.peek(gpus).expect("ensured")
    }
    /// The estimate over `gpus` GPUs when [`Self::ensure`] has made it.
    pub fn peek(&self, gpus: u64) -> Option<&Estimate> {
        self.by_gpus
            .iter()
            .find(|(g, _)| *g == gpus)
            .map(|(_, e)| e)
    }
}

/// Power an owned machine draws under load: its catalog figure, else the GPUs' TDP + 100 W for
/// the rest of the system, else a typical figure for its kind (heuristic: laptop 65 W, Apple
/// desktop or mini PC 120 W, desktop/workstation 200 W).
pub fn power_watts(m: &Machine, acc: Option<&Accelerator>) -> f64 {
    if let Some(w) = m.power_w {
        return w;
    }
    if let Some(t) = acc.and_then(|a| a.tdp_w) {
        return t * m.gpu_count.max(1) as f64 + 100.0;
    }
    match m.kind {
        MachineKind::Laptop => 65.0,
        MachineKind::Apple | MachineKind::MiniPc => 120.0,
        _ => 200.0,
    }
}

/// What an hour of the machine costs: cloud $/hour, owned power × electricity price. A cloud
/// instance without a catalog price has no cost (its electricity is not the user's bill).
pub fn hourly_usd(m: &Machine, acc: Option<&Accelerator>, st: &FitSettings) -> Option<f64> {
    match &m.price {
        Some(Price::Hourly { usd, .. }) => Some(*usd),
        _ if m.kind == MachineKind::Cloud => None,
        _ => Some(power_watts(m, acc) / 1000.0 * st.electricity_usd_per_kwh),
    }
}

/// Cost per million generated tokens at `tok_s` (the fit's decode rate, the same the speed
/// column shows): cloud from $/hour, owned from power × electricity.
pub fn usd_per_million(
    m: &Machine,
    acc: Option<&Accelerator>,
    tok_s: f64,
    st: &FitSettings,
) -> Option<f64> {
    if tok_s.is_nan() || tok_s <= 0.0 {
        return None;
    }
    Some(hourly_usd(m, acc, st)? * 1e6 / tok_s / 3600.0)
}

/// Fit `s` on `m`. `cache` holds the scenario's estimates by GPU count.
pub fn fit_machine(
    s: &Scenario,
    cache: &mut EstimateCache,
    m: &Machine,
    cat: &Catalog,
    st: &FitSettings,
) -> FitResult {
    let acc = m.gpu.as_deref().and_then(|id| cat.accelerator(id));
    let sc = cache.scenario();
    let measured = measured_for(&cat.benchmarks, &m.id, sc.model_id.as_deref(), sc.weights);
    fit_on(s, cache, m, acc, measured, st)
}

/// [`fit_machine`] with the machine's accelerator already looked up.
fn fit_on(
    s: &Scenario,
    cache: &mut EstimateCache,
    m: &Machine,
    acc: Option<&Accelerator>,
    measured: Option<&Benchmark>,
    st: &FitSettings,
) -> FitResult {
    let k = &st.speed;
    let (ram_cap, os_reserve) = ram_capacity(m, st);
    let mut notes = Vec::new();
    let calibration = st.calibration.as_ref().filter(|c| *c.machine == *m.id);
    // Every estimate this machine needs, made once per GPU count and shared across machines.
    let unified_acc = acc.is_some_and(|a| a.memory_kind == MemoryKind::Unified);
    let g_here = if unified_acc {
        1
    } else {
        m.gpu_count.max(1) as u64
    };
    cache.ensure(0);
    cache.ensure(1);
    if acc.is_some() {
        cache.ensure(g_here);
    }
    let cache: &EstimateCache = cache;
    let s_cl = cache.scenario();
    let _ = s; // the cache holds the same scenario, clamped once
    let training = s_cl.mode.is_training();
    // One speed call per placement: the runtime's profile on this machine, `gpu_layers` of the
    // layers on the GPU(s) (0 = CPU only).
    let speed_of = |est: &Estimate, gpu_layers: u64| {
        let q = speed_query(s_cl, est, m, acc, st, gpu_layers);
        (placement_speed(&q, k), q.backend)
    };

    // The CPU-only estimate (everything in RAM).
    let cpu_est = cache.peek(0).expect("ensured");
    let cpu_need = cpu_est.total();
    let total_layers = cpu_est.workload.layers;

    let mut r = FitResult {
        machine: m.id.clone(),
        name: m.name.clone(),
        kind: m.kind,
        verdict: Verdict::None,
        gpu_layers: 0,
        total_layers,
        headroom_bytes: 0,
        gpus: if acc.is_some() { m.gpu_count as u64 } else { 0 },
        gpu_capacity: Bytes::ZERO,
        gpu_required: Bytes::ZERO,
        ram_capacity: ram_cap,
        ram_required: Bytes::ZERO,
        os_reserve,
        disk_bytes: Bytes::ZERO,
        decode_tokens_per_s: 0.0,
        prefill_tokens_per_s: 0.0,
        ttft_s: 0.0,
        usd_per_million_tokens: None,
        training: None,
        backend: None,
        measured: measured.map(Measured::from_benchmark),
        notes: Vec::new(),
        offload_style: None,
        expert_split: None,
    };

    if let Some(a) = acc {
        let unified = a.memory_kind == MemoryKind::Unified;
        let g = if unified {
            1
        } else {
            m.gpu_count.max(1) as u64
        };
        let est = cache.peek(g).expect("ensured");
        // The reserved peak (allocated + caching-allocator reserve + CUDA context).
        let need = est.peak_reserved();
        let host_need = est.host_total();
        // Capacity per GPU.
        let cap = gpu_capacity(m, acc, s_cl, st);
        if unified {
            notes.push(Note::UnifiedShare {
                gpu: cap,
                ram: m.ram,
                limit: if m.gpu_memory_limit.is_some() {
                    UnifiedLimit::Configured
                } else if a.vendor == Vendor::Apple {
                    UnifiedLimit::MetalDefault
                } else {
                    UnifiedLimit::ApuDefault
                },
            });
        } else if s.runtime == Runtime::Vllm {
            notes.push(Note::VllmShare {
                utilization: s_cl.gpu_memory_utilization,
            });
        }
        r.gpu_capacity = cap;
        r.gpu_required = need;
        // For unified memory, the host part and the GPU part share one pool.
        let host_ok = if unified {
            need.saturating_add(host_need) <= m.ram.saturating_sub(os_reserve)
        } else {
            host_need <= ram_cap
        };
        if need <= cap && host_ok {
            r.verdict = if unified {
                Verdict::Unified
            } else {
                Verdict::Gpu
            };
            r.gpu_layers = total_layers;
            r.headroom_bytes = cap.signed_sub(need);
            r.ram_required = host_need;
            if training {
                r.training = Some(train_speed(s_cl, est, g, a.fp16_tflops, m, acc, st));
            } else {
                let (sp, b) = speed_of(est, total_layers.max(1));
                r.backend = Some(b);
                set_speed(
                    &mut r,
                    sp.decode_tokens_per_s,
                    sp.prefill_tokens_per_s,
                    s_cl.prompt_tokens,
                );
            }
        } else if !training && !unified {
            // Offload: as many whole layers as fit on the GPUs (llama.cpp splits layers across
            // GPUs), the rest in RAM. Per-GPU fixed costs (overhead, workspace) stay on each GPU.
            let e1 = cache.peek(1).expect("ensured");
            let l = e1.workload.layers.max(1);
            let kfit = layers_that_fit(e1, cap, g);
            let kfit = if kfit == l { l - 1 } else { kfit }; // the whole model already failed above
            let host_part = offload_host_bytes(e1, kfit);
            // A mixture-of-experts model under llama.cpp may instead keep every layer on the GPU
            // and only the routed experts of the first N layers in RAM (`--n-cpu-moe`), or
            // stream; the placement with the fastest decode wins.
            let moe = s_cl.model.moe.as_ref().is_some_and(|x| x.experts > 0);
            let layer_speed = |style: SplitStyle| {
                let mut q = speed_query(s_cl, e1, m, acc, st, kfit);
                q.style = style;
                (placement_speed(&q, k), q.backend)
            };
            let mut best: Option<(OffloadStyle, (Speed, Backend))> = None;
            if kfit >= 1 && host_part <= ram_cap {
                let style = st.split_style;
                best = Some((OffloadStyle::of(style), layer_speed(style)));
                if moe {
                    // Streaming holds the same bytes where layer offload does.
                    let other = match style {
                        SplitStyle::CpuLayers => SplitStyle::Streaming,
                        SplitStyle::Streaming => SplitStyle::CpuLayers,
                    };
                    let sp = layer_speed(other);
                    if best.is_some_and(|(_, b)| sp.0.decode_tokens_per_s > b.0.decode_tokens_per_s)
                    {
                        best = Some((OffloadStyle::of(other), sp));
                    }
                }
            }
            let experts = if moe && expert_offload_runs(s_cl.runtime) {
                let link = host_link(a);
                expert_offload(
                    s_cl,
                    est,
                    g,
                    cap,
                    ram_cap,
                    need,
                    host_need,
                    expert_speed_model(s_cl, m, acc, st),
                    link.bytes_per_sec() * k.pcie_efficiency,
                )
            } else {
                None
            };
            let experts_win = experts.as_ref().is_some_and(|(_, sp)| {
                best.is_none_or(|(_, b)| sp.decode_tokens_per_s > b.0.decode_tokens_per_s)
            });
            if let (true, Some((split, sp))) = (experts_win, experts) {
                let ram = host_need.saturating_add(split.ram_bytes);
                let gpu = need.saturating_sub(split.ram_bytes.div_ceil(g));
                let split = ExpertSplit {
                    gpu_required: gpu,
                    ram_required: ram,
                    ..split
                };
                r.verdict = Verdict::Offload;
                r.gpu_layers = total_layers;
                r.ram_required = ram;
                r.headroom_bytes = cap.signed_sub(gpu).min(ram_cap.signed_sub(ram));
                r.backend = Some(speed_query(s_cl, est, m, acc, st, total_layers).backend);
                set_speed(
                    &mut r,
                    sp.decode_tokens_per_s,
                    sp.prefill_tokens_per_s,
                    s_cl.prompt_tokens,
                );
                notes.push(Note::ExpertOffload {
                    cpu_moe_layers: split.cpu_moe_layers,
                    moe_layers_in_ram: split.moe_layers_in_ram,
                    ram_bytes: split.ram_bytes,
                });
                r.offload_style = Some(OffloadStyle::Experts);
                r.expert_split = Some(split);
            } else if let Some((style, (sp, b))) = best {
                r.verdict = Verdict::Offload;
                r.gpu_layers = kfit;
                r.ram_required = host_part;
                r.headroom_bytes = ram_cap.signed_sub(host_part);
                r.backend = Some(b);
                r.offload_style = Some(style);
                set_speed(
                    &mut r,
                    sp.decode_tokens_per_s,
                    sp.prefill_tokens_per_s,
                    s_cl.prompt_tokens,
                );
                notes.push(Note::LayerOffload {
                    gpu: kfit,
                    layers: l,
                    streamed: style == OffloadStyle::Streaming,
                });
            } else {
                r.headroom_bytes = cap.signed_sub(need);
            }
        } else {
            r.headroom_bytes = cap.signed_sub(need);
        }
        // Neither the GPU nor offload: the CPU path, when everything fits in RAM.
        if r.verdict == Verdict::None && !training && cpu_need <= ram_cap {
            let (sp, b) = speed_of(cpu_est, 0);
            r.backend = Some(b);
            cpu_verdict(&mut r, cpu_need, ram_cap, sp, s_cl.prompt_tokens);
        }
        if r.verdict == Verdict::None && host_need > ram_cap {
            notes.push(Note::HostRamShort {
                need: host_need,
                usable: ram_cap,
            });
        }
    } else if !training {
        if cpu_need <= ram_cap {
            let (sp, b) = speed_of(cpu_est, 0);
            r.backend = Some(b);
            cpu_verdict(&mut r, cpu_need, ram_cap, sp, s_cl.prompt_tokens);
        } else {
            r.headroom_bytes = ram_cap.signed_sub(cpu_need);
            r.ram_required = cpu_need;
        }
    } else {
        r.headroom_bytes = ram_cap.signed_sub(cpu_need);
        r.ram_required = cpu_need;
        notes.push(Note::TrainingNeedsGpu);
    }
    // Neither VRAM nor RAM: the third tier, the disk.
    if r.verdict == Verdict::None {
        super::disk::place(&mut r, &mut notes, cache, m, acc, st, &speed_of);
    }
    if !training {
        r.usd_per_million_tokens = usd_per_million(m, acc, r.decode_tokens_per_s, st);
        if r.usd_per_million_tokens.is_none()
            && r.decode_tokens_per_s > 0.0
            && m.kind == MachineKind::Cloud
            && !matches!(m.price, Some(Price::Hourly { .. }))
        {
            notes.push(Note::NoHourlyPrice);
        }
    }
    if let Some(c) = calibration
        && r.decode_tokens_per_s > 0.0
    {
        notes.push(Note::Text(c.note()));
    }
    r.notes = notes;
    r
}

/// Training speed of `s` over `g` GPUs of the machine's accelerator (none without one).
pub(crate) fn training_speed(
    s: &Scenario,
    est: &Estimate,
    g: u64,
    m: &Machine,
    acc: Option<&Accelerator>,
    st: &FitSettings,
) -> Option<TrainingSpeed> {
    acc.map(|a| train_speed(s, est, g, a.fp16_tflops, m, acc, st))
}

/// The speed model's query for the scenario on `m` with `gpu_layers` of the layers on the GPU(s)
/// (0 = CPU only): the runtime's profile, this machine's calibration and the llama.cpp split
/// mode from the settings. Every speed the fit engine reports goes through it.
fn speed_query<'a>(
    s: &'a Scenario,
    est: &'a Estimate,
    m: &Machine,
    acc: Option<&Accelerator>,
    st: &FitSettings,
    gpu_layers: u64,
) -> SpeedQuery<'a> {
    let k = &st.speed;
    let mut q = SpeedQuery::on_machine(s, est, m, acc, k);
    q.style = st.split_style;
    if let Some(c) = st.calibration.as_ref().filter(|c| *c.machine == *m.id) {
        q.tuning = c.tuning;
    }
    if let Some(split) = st.llama_split
        && q.backend != Backend::Vllm
    {
        q.multi = split;
    }
    if gpu_layers == 0 {
        q = q.cpu_only();
    } else {
        q.gpu_layers = gpu_layers;
    }
    q
}

/// The speed model as [`experts::expert_offload_speed`] calls it: an estimate with every layer on
/// the GPU(s) (`on_gpu`), or on the CPU alone. The CPU part is the routed experts only, so its
/// query sees a scenario without attention heads (no attention FLOPs on the CPU) and with the
/// workload's layer count (the offloaded MoE layers). The one place expert offload meets the
/// speed model.
fn expert_speed_model<'a>(
    s: &'a Scenario,
    m: &'a Machine,
    acc: Option<&'a Accelerator>,
    st: &'a FitSettings,
) -> impl Fn(&Estimate, bool) -> Speed + 'a {
    move |e: &Estimate, on_gpu: bool| {
        if on_gpu {
            let q = speed_query(s, e, m, acc, st, e.workload.layers.max(1));
            placement_speed(&q, &st.speed)
        } else {
            let experts_only = Scenario {
                model: super::model::ModelSpec {
                    heads: 0,
                    layers: e.workload.layers,
                    ..s.model.clone()
                },
                ..s.clone()
            };
            let q = speed_query(&experts_only, e, m, acc, st, 0);
            placement_speed(&q, &st.speed)
        }
    }
}

/// Decode and prefill of the expert-offload placement of `s` on `m` with the routed experts of
/// layers `0 … n_cpu_moe − 1` in RAM (llama.cpp `-ngl 99 --n-cpu-moe n_cpu_moe`), whether or not
/// it fits; with the split. `None` without a discrete GPU or routed experts. Published
/// measurements at a given `--n-cpu-moe` are checked with it.
pub fn expert_offload_at(
    s: &Scenario,
    m: &Machine,
    cat: &Catalog,
    st: &FitSettings,
    n_cpu_moe: u64,
) -> Option<(ExpertSplit, Speed)> {
    let acc = m.gpu.as_deref().and_then(|id| cat.accelerator(id))?;
    expert_offload_points(s, m, acc, st, &[n_cpu_moe]).pop()
}

/// [`expert_offload_at`] for several `n_cpu_moe` (the teaching curve: every value 0 … layers),
/// with one estimate. Empty without routed experts or on a unified-memory GPU.
pub fn expert_offload_points(
    s: &Scenario,
    m: &Machine,
    acc: &Accelerator,
    st: &FitSettings,
    ns: &[u64],
) -> Vec<(ExpertSplit, Speed)> {
    if acc.memory_kind == MemoryKind::Unified {
        return Vec::new();
    }
    let sc = s.clamped();
    let inv = experts::inventory(&sc.model, sc.weights);
    if inv.is_empty() {
        return Vec::new();
    }
    let g = m.gpu_count.max(1) as u64;
    let est = estimate_with(
        &Scenario {
            gpus: g,
            ..sc.clone()
        },
        false,
    );
    let link = host_link(acc);
    let run = expert_speed_model(&sc, m, Some(acc), st);
    ns.iter()
        .map(|&n| {
            let mut split = experts::split(&inv, n.min(sc.model.layers));
            split.gpu_required = est
                .peak_reserved()
                .saturating_sub(split.ram_bytes.div_ceil(g));
            split.ram_required = est.host_total().saturating_add(split.ram_bytes);
            let sp = experts::expert_offload_speed(
                &est,
                &split,
                sc.batch,
                sc.ubatch,
                link.bytes_per_sec() * st.speed.pcie_efficiency,
                &run,
            );
            (split, sp)
        })
        .collect()
}

/// Whether the runtime can keep a MoE's routed experts in RAM and the rest on the GPU:
/// llama.cpp (`--n-cpu-moe`, `--override-tensor`); the generic runtime is modelled on it.
fn expert_offload_runs(r: Runtime) -> bool {
    matches!(r, Runtime::LlamaCpp | Runtime::Generic)
}

/// The expert-offload placement with the fewest layers' experts in RAM (`--n-cpu-moe N`) that
/// fits: one GPU holds `need` less its share of the RAM experts, host RAM `host_need` plus them.
/// Its speed from [`experts::expert_offload_speed`] with the speed model `run`.
#[allow(clippy::too_many_arguments)]
fn expert_offload(
    s: &Scenario,
    est: &Estimate,
    gpus: u64,
    cap: Bytes,
    ram_cap: Bytes,
    need: Bytes,
    host_need: Bytes,
    run: impl Fn(&Estimate, bool) -> Speed,
    link_bytes_per_s: f64,
) -> Option<(ExpertSplit, Speed)> {
    let inv = experts::inventory(&s.model, s.weights);
    let split = experts::smallest_fitting(&inv, s.model.layers, |x| {
        need.saturating_sub(x.ram_bytes.div_ceil(gpus.max(1))) <= cap
            && host_need.saturating_add(x.ram_bytes) <= ram_cap
    })?;
    if split.ram_bytes.0 == 0 {
        // Nothing moved: the whole-model path already said no, so only its RAM check can have
        // failed; that is not an expert offload.
        return None;
    }
    let sp = experts::expert_offload_speed(est, &split, s.batch, s.ubatch, link_bytes_per_s, &run);
    Some((split, sp))
}

fn cpu_verdict(r: &mut FitResult, need: Bytes, cap: Bytes, sp: Speed, prompt: u64) {
    r.verdict = Verdict::Cpu;
    r.gpu_layers = 0;
    r.ram_required = need;
    r.headroom_bytes = cap.signed_sub(need);
    set_speed(r, sp.decode_tokens_per_s, sp.prefill_tokens_per_s, prompt);
}

fn set_speed(r: &mut FitResult, decode: f64, prefill: f64, prompt: u64) {
    r.decode_tokens_per_s = decode;
    r.prefill_tokens_per_s = prefill;
    r.ttft_s = if prefill > 0.0 {
        prompt as f64 / prefill
    } else {
        0.0
    };
}

fn train_speed(
    s: &Scenario,
    est: &Estimate,
    g: u64,
    tflops: f64,
    m: &Machine,
    acc: Option<&Accelerator>,
    st: &FitSettings,
) -> TrainingSpeed {
    let p = est.params.active as f64;
    let per_token = match s.mode {
        Mode::Full => {
            if s.checkpointing == Checkpointing::Full {
                8.0
            } else {
                6.0
            }
        }
        _ => {
            if s.checkpointing == Checkpointing::Full {
                6.0
            } else {
                4.0
            }
        }
    } * p;
    let tps = training_tokens_per_s(per_token, g, tflops, &st.speed);
    let sc = s;
    let tokens_per_step = (sc.batch * sc.context * g) as f64;
    let mut step = if tps > 0.0 {
        tokens_per_step / tps
    } else {
        0.0
    };
    // ZeRO-Offload: the CPU Adam step reads and writes ~16 B/param of host memory per step and the
    // gradients/parameters cross PCIe (2 + 2 B/param).
    let host_opt = est.host_kind(ComponentKind::Optimizer);
    if host_opt.0 > 0 {
        let params = est.params.total as f64;
        let ram_t = params * 16.0
            / (m.ram_bandwidth.bytes_per_sec() * st.speed.cpu_bandwidth_efficiency).max(1.0);
        let link = acc
            .and_then(|a| a.pcie)
            .map(|l| l.bandwidth())
            .unwrap_or(GbPerSec(16.0));
        let pcie_t = params * 4.0 / (link.bytes_per_sec() * st.speed.pcie_efficiency).max(1.0);
        step += ram_t + pcie_t;
    }
    let tokens_per_s = if step > 0.0 {
        tokens_per_step / step
    } else {
        0.0
    };
    let run_hours = if tokens_per_s > 0.0 {
        sc.train_tokens as f64 / tokens_per_s / 3600.0
    } else {
        0.0
    };
    TrainingSpeed {
        step_seconds: step,
        tokens_per_s,
        run_hours,
        run_usd: hourly_usd(m, acc, st).map(|h| h * run_hours),
    }
}

/// Fit the scenario on every machine in `machines` (catalog order).
pub fn fit_all<'a>(
    s: &Scenario,
    machines: impl IntoIterator<Item = &'a Machine>,
    cat: &Catalog,
    st: &FitSettings,
) -> Vec<FitResult> {
    let mut cache = EstimateCache::new(s);
    // The published measurements of this model at this precision, matched once (the model and
    // precision are the same on every machine); each machine then looks only among these.
    let sc = cache.scenario();
    let bench: Vec<&Benchmark> = match sc.model_id.as_deref() {
        Some(model) => cat
            .benchmarks
            .iter()
            .filter(|b| {
                b.machine.is_some()
                    && b.model.eq_ignore_ascii_case(model)
                    && WeightPrecision::from_cli(&b.weights) == Some(sc.weights)
            })
            .collect(),
        None => Vec::new(),
    };
    // One id → accelerator map for the whole catalog instead of a linear search per machine.
    let accs: std::collections::HashMap<&str, &Accelerator> = cat
        .accelerators
        .iter()
        .map(|a| (a.id.as_str(), a))
        .collect();
    machines
        .into_iter()
        .map(|m| {
            let acc = m.gpu.as_deref().and_then(|id| accs.get(id).copied());
            // The first match in catalog order, as `measured_for` picks it.
            let measured = bench
                .iter()
                .find(|b| b.machine.as_deref() == Some(&*m.id))
                .copied();
            fit_on(s, &mut cache, m, acc, measured, st)
        })
        .collect()
}

/// Whether the scenario fits on the machine at all (any verdict but `None`); with `gpu_only`,
/// only GPU/unified verdicts count.
fn fits(s: &Scenario, m: &Machine, cat: &Catalog, st: &FitSettings, gpu_only: bool) -> bool {
    let mut c = EstimateCache::new(s);
    let r = fit_machine(s, &mut c, m, cat, st);
    if gpu_only {
        matches!(r.verdict, Verdict::Gpu | Verdict::Unified)
    } else {
        r.fits()
    }
}

/// The largest context (tokens, up to the model's maximum) that fits on the GPU(s) of `m`.
pub fn solve_max_context(
    s: &Scenario,
    m: &Machine,
    cat: &Catalog,
    st: &FitSettings,
) -> Option<u64> {
    let hi_lim = if s.model.max_context > 0 {
        s.model.max_context
    } else {
        super::scenario::limits::MAX_CONTEXT
    };
    let at = |c: u64| {
        fits(
            &Scenario {
                context: c,
                prompt_tokens: s.prompt_tokens.min(c),
                ..s.clone()
            },
            m,
            cat,
            st,
            true,
        )
    };
    if !at(256.min(hi_lim)) {
        return None;
    }
    let (mut lo, mut hi) = (256.min(hi_lim), hi_lim);
    if at(hi) {
        return Some(hi);
    }
    // Steps of 16 tokens: `lo` (a multiple of 16) fits, `hi` does not; the answer fits and 16
    // tokens more do not.
    while hi - lo > 16 {
        let mid = lo + ((hi - lo) / 2 / 16 * 16).max(16);
        if at(mid) { lo = mid } else { hi = mid }
    }
    Some(lo)
}

/// The largest batch (concurrent sequences) that fits on the GPU(s) of `m`.
pub fn solve_max_batch(s: &Scenario, m: &Machine, cat: &Catalog, st: &FitSettings) -> Option<u64> {
    let at = |b: u64| {
        fits(
            &Scenario {
                batch: b,
                ..s.clone()
            },
            m,
            cat,
            st,
            true,
        )
    };
    if !at(1) {
        return None;
    }
    let (mut lo, mut hi) = (1u64, super::scenario::limits::MAX_BATCH);
    if at(hi) {
        return Some(hi);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if at(mid) { lo = mid } else { hi = mid }
    }
    Some(lo)
}

/// Weight precisions from most to fewest bits, as a user would step down.
pub const PRECISION_LADDER: [WeightPrecision; 10] = [
    WeightPrecision::Bf16,
    WeightPrecision::Q8_0,
    WeightPrecision::Fp8,
    WeightPrecision::Q6K,
    WeightPrecision::Q5KM,
    WeightPrecision::Q4KM,
    WeightPrecision::Awq4,
    WeightPrecision::Q4_0,
    WeightPrecision::Q3KM,
    WeightPrecision::Q2K,
];

/// The highest-quality precision (fewest bits removed) on the ladder that fits on the GPU(s).
pub fn solve_precision(
    s: &Scenario,
    m: &Machine,
    cat: &Catalog,
    st: &FitSettings,
) -> Option<WeightPrecision> {
    PRECISION_LADDER.into_iter().find(|&p| {
        fits(
            &Scenario {
                weights: p,
                ..s.clone()
            },
            m,
            cat,
            st,
            true,
        )
    })
}

/// The fewest GPUs of accelerator `acc_id` that hold the scenario (tensor parallel or ZeRO over
/// them), up to `max`.
pub fn solve_min_gpus(s: &Scenario, acc_id: &str, cat: &Catalog, max: u64) -> Option<u64> {
    let acc = cat.accelerator(acc_id)?;
    if acc.memory_kind == MemoryKind::Unified {
        return None;
    }
    let cap = if s.runtime == Runtime::Vllm {
        acc.memory.scale(s.clamped().gpu_memory_utilization)
    } else {
        acc.memory
    };
    let mut n = 1u64;
    while n <= max {
        let e = estimate(&Scenario {
            gpus: n,
            ..s.clone()
        });
        if e.per_gpu_total() <= cap {
            return Some(n);
        }
        n = if n < 8 { n + 1 } else { n * 2 };
    }
    None
}

/// The fewest instances of a cloud machine type (whole machines, GPUs split evenly) that hold it.
pub fn solve_min_instances(s: &Scenario, m: &Machine, cat: &Catalog, max: u64) -> Option<u64> {
    let g = m.gpu_count.max(1) as u64;
    let n = solve_min_gpus(s, m.gpu.as_deref()?, cat, max.saturating_mul(g))?;
    Some(n.div_ceil(g))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::catalog::{PcieLink, Segment};

    fn acc(id: &str, gib: u64, bw: f64, tf: f64) -> Accelerator {
        Accelerator {
            id: id.into(),
            name: id.into(),
            vendor: Vendor::Nvidia,
            segment: Segment::Consumer,
            memory_kind: MemoryKind::Discrete,
            memory: Bytes::gib(gib),
            bandwidth: GbPerSec(bw),
            fp16_tflops: tf,
            fp16_acc16_tflops: None,
            vector_tflops: None,
            compute_units: None,
            int8_tops: None,
            tdp_w: Some(450.0),
            pcie: Some(PcieLink {
                generation: 4,
                lanes: 16,
            }),
            gpu_link: None,
            gpu_link_gbs: None,
            aliases: vec![],
            source: "test".into(),
            notes: None,
        }
    }

    fn machine(id: &str, gpu: Option<&str>, ram_gib: u64) -> Machine {
        Machine {
            id: id.into(),
            name: id.into(),
            kind: MachineKind::Desktop,
            gpu: gpu.map(String::from),
            gpu_count: 1,
            ram: Bytes::gib(ram_gib),
            ram_bandwidth: GbPerSec(89.6),
            cpu: "test".into(),
            cpu_cores: 16,
            vcpus: None,
            gpu_memory_limit: None,
            price: None,
            power_w: Some(600.0),
            storage: None,
            source: "test".into(),
            notes: None,
        }
    }

    fn cat() -> Catalog {
        Catalog {
            benchmarks: Vec::new(),
            accelerators: vec![
                acc("rtx-4090", 24, 1008.0, 165.2),
                acc("rtx-4060-laptop", 8, 256.0, 30.0),
            ],
            machines: vec![
                machine("d4090", Some("rtx-4090"), 64),
                machine("l4060", Some("rtx-4060-laptop"), 32),
                machine("cpu", None, 64),
            ],
            models: vec![],
        }
    }

    #[test]
    fn rtx4090_holds_8b_fp16_8k() {
        let c = cat();
        let s = Scenario {
            weights: WeightPrecision::Fp16,
            context: 8192,
            ..Scenario::default()
        };
        let r = fit_all(&s, &c.machines, &c, &FitSettings::default());
        assert_eq!(r[0].verdict, Verdict::Gpu, "{:?}", r[0]);
        assert!(r[0].headroom_bytes > 0);
        assert!(
            r[0].decode_tokens_per_s > 20.0 && r[0].decode_tokens_per_s < 100.0,
            "{}",
            r[0].decode_tokens_per_s
        );
        assert_eq!(r[1].verdict, Verdict::Offload, "{:?}", r[1]);
        assert!(r[1].gpu_layers > 0 && r[1].gpu_layers < 32);
        assert!(r[1].decode_tokens_per_s < r[0].decode_tokens_per_s);
        assert_eq!(r[2].verdict, Verdict::Cpu);
    }

    #[test]
    fn solvers() {
        let c = cat();
        let s = Scenario::default();
        let m = &c.machines[0];
        let st = FitSettings::default();
        let ctx = solve_max_context(&s, m, &c, &st).unwrap();
        assert_eq!(ctx, 8192); // Llama 3 8B's max; fits at BF16 on 24 GiB
        let l70 = Scenario {
            model: crate::core::model::ModelSpec::generic(70_000_000_000),
            ..s.clone()
        };
        // 70B at 8K: Q2_K weights alone are 70e9 × 2.625 / 8 = 21.4 GiB; with 2.5 GiB of KV it
        // no longer fits 24 GiB; at 2K context it does.
        assert_eq!(solve_precision(&l70, m, &c, &st), None);
        let short = Scenario {
            context: 2048,
            ..l70.clone()
        };
        assert_eq!(
            solve_precision(&short, m, &c, &st),
            Some(WeightPrecision::Q2K)
        );
        assert!(solve_max_batch(&s, m, &c, &st).unwrap() >= 2);
        // 70e9 × 2 B = 130.4 GiB of weights: ÷ 6 = 21.7 GiB + KV share (2 of 8 KV heads: 0.6 GiB)
        // + 0.5 GiB overhead + workspace < 24 GiB; ÷ 5 = 26.1 GiB does not fit → 6 GPUs.
        assert_eq!(solve_min_gpus(&l70, "rtx-4090", &c, 64), Some(6));
    }

    #[test]
    fn metal_limits() {
        assert!((metal_default_limit(Bytes::gib(16)).as_gib() - 10.667).abs() < 0.01);
        assert_eq!(metal_default_limit(Bytes::gib(128)), Bytes::gib(96));
    }
}
