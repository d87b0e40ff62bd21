//! The fit's results and entry points: a scenario on a machine → a verdict, headroom, speed and
//! cost ([`FitResult`]), over the catalog ([`fit_all`]) or one machine ([`fit_machine`]); the
//! solvers across it (largest context, largest batch, lowest-bit precision, fewest GPUs).
//! How the placement is found, tier by tier, is [`super::placement`].

use super::catalog::{Accelerator, Catalog, Machine, MachineKind, MemoryKind, Price};
use super::estimate::{Estimate, ModelSums, estimate, estimate_sharing};
use super::placement::cost::usd_per_million;
use super::placement::experts::ExpertSplit;
use super::placement::note::Note;
use super::placement::speed::SpeedMemo;
use super::placement::{self, Job, Placement, Run};
use super::precision::WeightPrecision;
use super::quality::QualityTable;
use super::scenario::{Runtime, Scenario, SplitStyle};
use super::speculative::SpecSpeed;
use super::speed::bench::{Benchmark, Calibration, Measured, measured_for};
use super::speed::{Backend, CpuFacts, ModelShape, MultiGpu, Speed, SpeedConstants, SpeedQuery};
use super::units::Bytes;
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
    /// `offload_folder`, ZeRO-Infinity NVMe offload); see [`super::placement::disk`].
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
    /// Assume the unified GPU's limit raised to RAM less the OS reserve on machines whose limit
    /// is the platform default (macOS `iogpu.wired_limit_mb`, amdgpu GTT size).
    pub raise_gpu_limit: bool,
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
            raise_gpu_limit: false,
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

/// One machine's row. The parts most rows leave out (training, speculative decoding, embedding,
/// images, a published measurement, an expert split) are boxed: a whole-catalog fit makes and
/// moves one row per machine, and a smaller row is cheaper to move.
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
    pub training: Option<Box<TrainingSpeed>>,
    /// Speculative decoding on this machine, when the scenario turns it on: `decode_tokens_per_s`
    /// above is then the speculative speed, and this says how it came about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speculative: Option<Box<SpecSpeed>>,
    /// Embedding / reranking throughput (`Mode::Embed`), from the prefill rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<Box<crate::core::embed::EmbedSpeed>>,
    /// A vision-language model's images: tokens and encode time (`ttft_s` includes both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vision: Option<Box<crate::core::vision::VisionSpeed>>,
    /// The runtime/backend whose throughput profile gave the speeds (`None`: no speed).
    #[serde(default)]
    pub backend: Option<Backend>,
    /// A published measurement of this model and precision on this machine, when there is one.
    #[serde(default)]
    pub measured: Option<Box<Measured>>,
    pub notes: Vec<Note>,
    /// The GPU shares the machine's RAM (Apple silicon, APUs): one pool, `gpu_capacity` of
    /// `ram_capacity` usable by the GPU.
    #[serde(default)]
    pub unified: bool,
    /// How an offload verdict splits the model; `None` for the other verdicts.
    #[serde(default)]
    pub offload_style: Option<OffloadStyle>,
    /// Expert offload (`offload_style` = experts): llama.cpp `--n-cpu-moe N` and the weights it
    /// leaves in RAM.
    #[serde(default)]
    pub expert_split: Option<Box<ExpertSplit>>,
}

/// How an offload places what does not fit on the GPU.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OffloadStyle {
    /// llama.cpp `-ngl k`: k whole layers on the GPU, the others run on the CPU from RAM.
    Layers,
    /// llama.cpp `-ngl 99 --n-cpu-moe N`: every layer on the GPU except the routed experts of
    /// the first N layers, which the CPU runs from RAM ([`super::placement::experts`]).
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
    /// The tokens per second a machine is ranked by: training tokens/s, the input tokens/s of
    /// an embedding pass, else decode tok/s (0 when nothing runs).
    pub fn throughput(&self) -> f64 {
        match (&self.training, &self.embedding) {
            (Some(t), _) => t.tokens_per_s,
            (None, Some(e)) => e.tokens_per_s,
            (None, None) => self.decode_tokens_per_s,
        }
        .max(0.0)
    }

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
            // The runtime does not run here at all (MLX off Apple silicon), whatever the memory.
            Verdict::None
                if self
                    .notes
                    .contains(&super::placement::note::Note::NeedsAppleSilicon) =>
            {
                "not Apple".to_string()
            }
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

/// Estimates (numbers only, no formula text) for one scenario at the GPU counts machines need,
/// computed once each, plus the scenario clamped once.
pub struct EstimateCache {
    base: Scenario,
    by_gpus: Vec<Cached>,
    /// The model's sums the estimates share ([`estimate_sharing`]: they differ only in the GPU
    /// count).
    sums: Option<ModelSums>,
}

/// One estimate of the cache with the two sums every machine's fit reads (summed once here, not
/// once per machine: the estimate never changes after it is made).
struct Cached {
    gpus: u64,
    est: Estimate,
    /// [`Estimate::peak_reserved`]: what one GPU (host RAM when CPU only) must hold.
    need: Bytes,
    /// [`Estimate::host_total`]: what host RAM holds besides.
    host_need: Bytes,
    /// [`Estimate::total`]: everything (the CPU-only estimate's RAM need).
    total: Bytes,
    /// The speed model's reading of the model's shape for this estimate, made by the first speed
    /// query on it and shared by the others ([`ModelShape`]).
    shape: std::cell::OnceCell<ModelShape>,
    /// The place in the cache of the first estimate whose workload and active parameters equal
    /// this one's but for the fixed costs per GPU — all the speed model reads of an estimate
    /// (`speed::shape`, the step model; [`same_for_speed`]): estimates over different GPU counts
    /// differ only in how memory is split.
    speed_class: usize,
}

impl EstimateCache {
    pub fn new(s: &Scenario) -> Self {
        EstimateCache {
            base: s.clamped(),
            by_gpus: Vec::with_capacity(6),
            sums: None,
        }
    }
    /// The clamped scenario.
    pub fn scenario(&self) -> &Scenario {
        &self.base
    }
    /// Make sure the estimate over `gpus` GPUs (0 = CPU only) is there; its place in the cache
    /// ([`Self::at`]), which never changes.
    pub fn ensure(&mut self, gpus: u64) -> usize {
        match self.by_gpus.iter().position(|c| c.gpus == gpus) {
            Some(i) => i,
            None => {
                self.add(gpus);
                self.by_gpus.len() - 1
            }
        }
    }
    /// The estimate at place `i` ([`Self::ensure`]) with its [`Estimate::peak_reserved`],
    /// [`Estimate::host_total`] and [`Estimate::total`].
    pub fn at(&self, i: usize) -> (&Estimate, Bytes, Bytes, Bytes) {
        let c = &self.by_gpus[i];
        (&c.est, c.need, c.host_need, c.total)
    }
    /// Make the estimate over `gpus` GPUs. Apart from [`Self::ensure`]'s check, which every
    /// machine's fit makes three times: this frame holds a scenario and an estimate, and setting
    /// up a frame that large costs every call, made or not.
    #[inline(never)]
    fn add(&mut self, gpus: u64) {
        let s = Scenario {
            gpus,
            ..self.base.clone()
        };
        let est = estimate_sharing(s, false, &mut self.sums);
        let speed_class = self
            .by_gpus
            .iter()
            .position(|c| same_for_speed(&c.est, &est))
            .unwrap_or(self.by_gpus.len());
        self.by_gpus.push(Cached {
            speed_class,
            gpus,
            need: est.peak_reserved(),
            host_need: est.host_total(),
            total: est.total(),
            est,
            shape: std::cell::OnceCell::new(),
        });
    }
    /// The estimate over `gpus` GPUs; computed on demand.
    pub fn get(&mut self, gpus: u64) -> &Estimate {
        let i = self.ensure(gpus);
        &self.by_gpus[i].est
    }
    /// The speed class of `est` when it is one of these estimates (the very one): the place of
    /// the first of them the speed model reads alike ([`same_for_speed`]).
    pub fn speed_class(&self, est: &Estimate) -> Option<usize> {
        let c = self.by_gpus.iter().find(|c| std::ptr::eq(&c.est, est))?;
        Some(c.speed_class)
    }
    /// The speed model's shape of `q` ([`ModelShape::of`]) when `q` runs one of these estimates
    /// (the very one, not an equal copy) on this cache's scenario: made once per estimate.
    pub fn shape(&self, q: &SpeedQuery) -> Option<&ModelShape> {
        if !std::ptr::eq(q.scenario, &self.base) {
            return None;
        }
        let c = self.by_gpus.iter().find(|c| std::ptr::eq(&c.est, q.est))?;
        Some(c.shape.get_or_init(|| ModelShape::of(q)))
    }
}

/// Whether the speed model reads the same of `a` and `b`: their workloads but for the fixed
/// costs each GPU holds (memory, which the speed model does not read), and their active
/// parameters. Every field is named, so a new one is decided here.
fn same_for_speed(a: &Estimate, b: &Estimate) -> bool {
    let super::estimate::Workload {
        layer_weights,
        outer_weights,
        active_weight_bytes_per_token,
        kv_total,
        kv_read_per_token,
        flops_per_token,
        fixed_per_device: _,
        layers,
        draft,
        active_elements_by_type,
    } = &a.workload;
    let w = &b.workload;
    *layer_weights == w.layer_weights
        && *outer_weights == w.outer_weights
        && *active_weight_bytes_per_token == w.active_weight_bytes_per_token
        && *kv_total == w.kv_total
        && *kv_read_per_token == w.kv_read_per_token
        && flops_per_token.to_bits() == w.flops_per_token.to_bits()
        && *layers == w.layers
        && *draft == w.draft
        && *active_elements_by_type == w.active_elements_by_type
        && a.params.active == b.params.active
}

/// Fit the scenario of `cache` (which holds its estimates by GPU count) on `m`.
pub fn fit_machine(
    cache: &mut EstimateCache,
    m: &Machine,
    cat: &Catalog,
    st: &FitSettings,
) -> FitResult {
    let (acc, cpu_facts) = cat.machine_parts(m);
    let sc = cache.scenario();
    let measured = measured_for(&cat.benchmarks, &m.id, sc.model_id.as_deref(), sc.weights);
    fit_on(cache, None, m, acc, cpu_facts, measured, st)
}

/// [`fit_machine`] with the machine's accelerator and its CPU's facts already looked up: the
/// tiers place the scenario ([`placement::place`]), then its cost and the notes on prices and
/// calibration.
fn fit_on(
    cache: &mut EstimateCache,
    memo: Option<&SpeedMemo>,
    m: &Machine,
    acc: Option<&Accelerator>,
    cpu_facts: CpuFacts,
    measured: Option<&Benchmark>,
    st: &FitSettings,
) -> FitResult {
    let mut job = Job::new(cache, m, acc, cpu_facts, st);
    job.memo = memo;
    let p = placement::place(&job);
    let mut r = result(&job, p, measured);
    if !job.training() {
        // An embedding model is paid per input token; a generator per generated one.
        r.usd_per_million_tokens = usd_per_million(m, acc, r.throughput(), st);
        if r.usd_per_million_tokens.is_none()
            && r.decode_tokens_per_s > 0.0
            && m.kind == MachineKind::Cloud
            && !matches!(m.price, Some(Price::Hourly { .. }))
        {
            r.notes.push(Note::NoHourlyPrice);
        }
    }
    if let Some(c) = st.calibration.as_ref().filter(|c| *c.machine == *m.id)
        && r.decode_tokens_per_s > 0.0
    {
        r.notes.push(Note::Text(c.note()));
    }
    r
}

/// The result row of placement `p` of the job (no cost yet).
fn result(job: &Job, p: Placement, measured: Option<&Benchmark>) -> FitResult {
    let m = job.m;
    let (speed, backend, training) = match p.run {
        Run::Nothing => (Speed::default(), None, None),
        Run::Inference { speed, backend } => (speed, Some(backend), None),
        Run::Training(t) => (Speed::default(), None, Some(t)),
    };
    let prefill = speed.prefill_tokens_per_s;
    let vision =
        job.s.vision.as_ref().and_then(|v| {
            crate::core::vision::speed(v, prefill, job.cpu_est.workload.flops_per_token)
        });
    let speculative = backend.and_then(|b| speculative_speed(job, &speed, b));
    let decode = speculative
        .as_ref()
        .map_or(speed.decode_tokens_per_s, |x| x.decode_tokens_per_s);
    FitResult {
        machine: m.id.clone(),
        name: m.name.clone(),
        kind: m.kind,
        verdict: p.verdict,
        gpu_layers: p.gpu_layers,
        total_layers: job.layers,
        headroom_bytes: p.headroom_bytes,
        gpus: if job.acc.is_some() {
            m.gpu_count as u64
        } else {
            0
        },
        gpu_capacity: job.gpus.as_ref().map_or(Bytes::ZERO, |g| g.capacity),
        gpu_required: job.gpus.as_ref().map_or(Bytes::ZERO, |g| g.need),
        ram_capacity: job.ram,
        ram_required: p.ram_required,
        os_reserve: job.os_reserve,
        disk_bytes: p.disk_bytes,
        decode_tokens_per_s: decode,
        prefill_tokens_per_s: prefill,
        ttft_s: if prefill > 0.0 {
            // Images: encoded first, then their tokens prefilled with the text's.
            let (tokens, encode) = vision.as_ref().map_or((0, 0.0), |v| {
                (
                    v.images.saturating_mul(v.tokens_per_image),
                    v.images as f64 * v.encode_s_per_image,
                )
            });
            job.s.prompt_tokens.saturating_add(tokens) as f64 / prefill + encode
        } else {
            0.0
        },
        usd_per_million_tokens: None,
        training: training.map(Box::new),
        backend,
        measured: measured.map(|b| Box::new(Measured::from_benchmark(b))),
        notes: p.notes,
        unified: job.gpus.as_ref().is_some_and(|g| g.unified),
        offload_style: p.offload_style,
        expert_split: p.expert_split,
        speculative: speculative.map(Box::new),
        vision: vision.map(Box::new),
        embedding: if job.s.mode.is_embed() {
            crate::core::embed::speed(job.s, prefill).map(Box::new)
        } else {
            None
        },
    }
}

/// Decode with speculative decoding on this placement, when the scenario turns it on: from the
/// plain speed the tiers found, the target's and the drafter's bytes per token, and the
/// runtime's per-layer cost (see [`crate::core::speculative::speed`]).
fn speculative_speed(job: &Job, speed: &Speed, backend: Backend) -> Option<SpecSpeed> {
    let sp = job.s.speculative.as_ref()?;
    let est = job.one_gpu();
    let w = &est.workload;
    let draft = w.draft?;
    let profile = job.st.speed.profiles.get(backend);
    crate::core::speculative::speed(
        sp,
        &crate::core::speculative::SpecTimes {
            decode_tokens_per_s: speed.decode_tokens_per_s,
            prefill_tokens_per_s: speed.prefill_tokens_per_s,
            target_bytes_per_token: w
                .active_weight_bytes_per_token
                .saturating_add(w.kv_read_per_token)
                .as_f64(),
            draft_bytes_per_token: draft.bytes_per_token.as_f64(),
            draft_layers: draft.layers,
            layer_overhead_s: profile.layer_overhead_us * 1e-6,
        },
    )
}

/// Fit the scenario on every machine in `machines` (catalog order).
pub fn fit_all<'a>(
    s: &Scenario,
    machines: impl IntoIterator<Item = &'a Machine>,
    cat: &Catalog,
    st: &FitSettings,
) -> Vec<FitResult> {
    let mut cache = EstimateCache::new(s);
    // Machines whose placements read the same inputs share their speed.
    let memo = SpeedMemo::new(&cat.accelerators);
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
    machines
        .into_iter()
        .map(|m| {
            // Its accelerator and CPU as the catalog keeps them ([`Catalog::machine_parts`]).
            let (acc, cpu_facts) = cat.machine_parts(m);
            // The first match in catalog order, as `measured_for` picks it.
            let measured = bench
                .iter()
                .find(|b| b.machine.as_deref() == Some(&*m.id))
                .copied();
            fit_on(&mut cache, Some(&memo), m, acc, cpu_facts, measured, st)
        })
        .collect()
}

/// Whether the scenario fits on the machine at all (any verdict but `None`); with `gpu_only`,
/// only GPU/unified verdicts count.
fn fits(s: &Scenario, m: &Machine, cat: &Catalog, st: &FitSettings, gpu_only: bool) -> bool {
    let mut c = EstimateCache::new(s);
    let r = fit_machine(&mut c, m, cat, st);
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
    // MLX loads its own layouts: mlx-community's bf16, 8, 6, 5, 4 and 3 bits.
    let ladder: &[WeightPrecision] = if s.runtime == Runtime::Mlx {
        &crate::core::mlx::PRECISION_LADDER
    } else {
        &PRECISION_LADDER
    };
    ladder
        .iter()
        .copied()
        .find(|&p| fits_on_gpu_at(s, p, m, cat, st))
}

/// Whether `s` at weight precision `p` fits on the GPU(s) of `m`.
fn fits_on_gpu_at(
    s: &Scenario,
    p: WeightPrecision,
    m: &Machine,
    cat: &Catalog,
    st: &FitSettings,
) -> bool {
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
}

/// The best-quality weight precision that fits the scenario on the GPU(s) of `m` at its context
/// and KV cache: precisions tried from the smallest published KLD up (`core::quality`; the
/// 16-bit reference first, unmeasured precisions never), within `max_kld` when set. With the
/// precision, its KLD.
pub fn solve_best_quality(
    s: &Scenario,
    m: &Machine,
    cat: &Catalog,
    st: &FitSettings,
    table: &QualityTable,
    max_kld: Option<f64>,
) -> Option<(WeightPrecision, f64)> {
    let (id, params) = crate::core::quality::model_of(s);
    crate::core::quality::ranked_weights(table, id, params)
        .into_iter()
        .filter(|(_, k)| max_kld.is_none_or(|m| *k <= m))
        .find(|&(p, _)| fits_on_gpu_at(s, p, m, cat, st))
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
    use crate::core::catalog::{PcieLink, Segment, Vendor};
    use crate::core::units::GbPerSec;

    fn acc(id: &str, gib: u64, bw: f64, tf: f64) -> Accelerator {
        Accelerator {
            memory: Bytes::gib(gib),
            bandwidth: GbPerSec(bw),
            fp16_tflops: tf,
            tdp_w: Some(450.0),
            pcie: Some(PcieLink {
                generation: 4,
                lanes: 16,
            }),
            source: "test".into(),
            ..Accelerator::new(
                id,
                id,
                Vendor::Nvidia,
                Segment::Consumer,
                MemoryKind::Discrete,
            )
        }
    }

    fn machine(id: &str, gpu: Option<&str>, ram_gib: u64) -> Machine {
        Machine {
            id: id.into(),
            name: id.into(),
            kind: MachineKind::Desktop,
            gpu: gpu.map(Into::into),
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
            fabric: None,
            network: None,
            source: "test".into(),
            notes: None,
        }
    }

    fn cat() -> Catalog {
        Catalog {
            benchmarks: Vec::new(),
            accelerator_index: Default::default(),
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
}
