//! Placement: where a scenario runs on one machine, tier by tier, and why.
//!
//! - [`capacity`]: what the machine offers — usable memory per GPU and in RAM, the GPUs a job
//!   uses, the host link, the whole layers that fit.
//! - One module per tier, each a function that returns the tier's [`Placement`] or nothing:
//!   [`gpu`] (the whole model in VRAM or in the unified GPU's share of RAM), [`offload`] (whole
//!   layers on the GPU, the rest run by the CPU or streamed over PCIe), [`experts`] (a
//!   mixture-of-experts model's routed experts in RAM, llama.cpp `--n-cpu-moe`), [`cpu`]
//!   (everything in RAM) and [`disk`] (llama.cpp mmap, accelerate `offload_folder`,
//!   ZeRO-Infinity NVMe).
//! - [`place`]: the order of the tiers.
//! - [`speed`]: the one bridge to the speed model; [`cost`]: what an hour and a token cost.
//! - [`explain`] and [`note`]: a fit in words — what each device holds, why the verdict, the
//!   notes a tier attaches.
//!
//! The results and their vocabulary (`FitResult`, `Verdict`, `FitSettings`, `EstimateCache`) and
//! the entry points over the catalog (`fit_all`, the solvers) are in [`super::fit`]; the tiers
//! use those types and call none of its functions.

pub mod asked;
pub mod capacity;
pub mod cost;
pub mod cpu;
pub mod disk;
pub mod experts;
pub mod explain;
pub mod gpu;
pub mod note;
pub mod offload;
pub mod speed;
pub mod tensor_split;

use super::catalog::{Accelerator, Machine};
use super::estimate::Estimate;
use super::fit::{EstimateCache, FitSettings, OffloadStyle, TrainingSpeed, Verdict};
use super::scenario::{Scenario, SplitStyle};
use super::speed::{Backend, CpuDevice, CpuFacts, Speed, placement_speed};
use super::units::Bytes;
use capacity::{Gpus, gpus_used, ram_capacity};
use experts::ExpertSplit;
use note::Note;

/// One scenario on one machine: what every tier reads.
pub struct Job<'a> {
    /// The scenario, clamped once ([`EstimateCache::scenario`]).
    pub s: &'a Scenario,
    /// Its estimates over no GPU, one GPU and the machine's GPUs.
    pub cache: &'a EstimateCache,
    pub m: &'a Machine,
    pub acc: Option<&'a Accelerator>,
    pub st: &'a FitSettings,
    /// RAM usable by the job (RAM − OS reserve) and the reserve ([`ram_capacity`]).
    pub ram: Bytes,
    pub os_reserve: Bytes,
    /// The CPU-only estimate: everything in RAM.
    pub cpu_est: &'a Estimate,
    /// Its total ([`Estimate::total`]): the RAM the CPU tier needs.
    pub cpu_total: Bytes,
    /// The one-GPU estimate (layer splits are cut from it).
    one_gpu: &'a Estimate,
    /// The model's layers.
    pub layers: u64,
    /// The machine's GPUs, when it has an accelerator.
    pub gpus: Option<Gpus<'a>>,
    /// Its CPU as the scenario uses it, read once per machine for every speed query.
    pub cpu: CpuDevice,
    /// Speeds shared with the other machines of a whole-catalog fit (`None`: computed here).
    pub memo: Option<&'a speed::SpeedMemo<'a>>,
}

impl<'a> Job<'a> {
    /// The job of `cache`'s scenario on `m`: makes the estimates the tiers read (CPU only, one
    /// GPU, the machine's GPUs; each once per GPU count, shared across machines) and what the
    /// machine offers. `cpu_facts`: the facts of `m`'s CPU
    /// ([`crate::core::catalog::Catalog::machine_parts`]).
    pub fn new(
        cache: &'a mut EstimateCache,
        m: &'a Machine,
        acc: Option<&'a Accelerator>,
        cpu_facts: CpuFacts,
        st: &'a FitSettings,
    ) -> Job<'a> {
        let g = gpus_used(m, acc);
        let cpu_at = cache.ensure(0);
        let one_at = cache.ensure(1);
        let gpus_at = acc.map(|_| cache.ensure(g));
        let cache: &'a EstimateCache = cache;
        let s = cache.scenario();
        let (ram, os_reserve) = ram_capacity(m, st);
        let (cpu_est, _, _, cpu_total) = cache.at(cpu_at);
        Job {
            s,
            cache,
            m,
            acc,
            st,
            ram,
            os_reserve,
            cpu_est,
            cpu_total,
            one_gpu: cache.at(one_at).0,
            layers: cpu_est.workload.layers,
            cpu: CpuDevice::for_scenario_with(m, acc, s, &st.speed, cpu_facts),
            gpus: acc.zip(gpus_at).map(|(a, at)| {
                let (est, need, host_need, _) = cache.at(at);
                Gpus::new(m, a, g, (est, need, host_need), s, st)
            }),
            memo: None,
        }
    }
    pub fn training(&self) -> bool {
        self.s.mode.is_training()
    }
    /// The one-GPU estimate (layer splits are cut from it).
    pub fn one_gpu(&self) -> &'a Estimate {
        self.one_gpu
    }
    /// Decode and prefill of `est` with `gpu_layers` of the layers on the GPU(s) (0 = CPU only),
    /// the rest run as the settings say, and the backend that runs it.
    pub fn speed(&self, est: &Estimate, gpu_layers: u64) -> (Speed, Backend) {
        self.speed_as(est, gpu_layers, self.st.split_style)
    }
    /// [`Self::speed`] with the layers that are not on the GPU run in `style`.
    pub fn speed_as(&self, est: &Estimate, gpu_layers: u64, style: SplitStyle) -> (Speed, Backend) {
        let speed = || {
            let mut q = speed::query(self.s, est, self.m, self.acc, self.st, self.cpu, gpu_layers);
            q.style = style;
            q.shape = self.cache.shape(&q);
            (placement_speed(&q, &self.st.speed), q.backend)
        };
        match self.memo {
            Some(memo) => memo.get_or(self, est, gpu_layers, style, speed),
            None => speed(),
        }
    }
}

/// How a placement runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Run {
    /// It does not run (verdict `None`).
    Nothing,
    /// Inference at `speed` on `backend`.
    Inference { speed: Speed, backend: Backend },
    /// A training run.
    Training(TrainingSpeed),
}

/// Where one tier puts the scenario and how it runs there (not [`super::estimate::Placement`],
/// which says where one memory component lives).
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    pub verdict: Verdict,
    /// Whole layers on the GPU(s).
    pub gpu_layers: u64,
    /// What host RAM holds.
    pub ram_required: Bytes,
    /// Capacity minus requirement of the binding memory (negative when it does not fit).
    pub headroom_bytes: i64,
    /// Bytes left on the disk (verdict `Disk`).
    pub disk_bytes: Bytes,
    pub run: Run,
    pub offload_style: Option<OffloadStyle>,
    /// Boxed: most placements have none, and a placement is moved from tier to row.
    pub expert_split: Option<Box<ExpertSplit>>,
    /// What the tier says about it, in order.
    pub notes: Vec<Note>,
}

impl Placement {
    /// A placement with no disk part, offload style, expert split or notes.
    pub fn new(
        verdict: Verdict,
        gpu_layers: u64,
        ram_required: Bytes,
        headroom_bytes: i64,
        run: Run,
    ) -> Placement {
        Placement {
            verdict,
            gpu_layers,
            ram_required,
            headroom_bytes,
            disk_bytes: Bytes::ZERO,
            run,
            offload_style: None,
            expert_split: None,
            notes: Vec::new(),
        }
    }
    /// Inference decode rate (0 when it does not run or trains).
    pub fn decode_tokens_per_s(&self) -> f64 {
        match &self.run {
            Run::Inference { speed, .. } => speed.decode_tokens_per_s,
            _ => 0.0,
        }
    }
}

/// A tier that says why it declines: its placement, or the note on why not (`None`: the tier
/// does not apply here).
pub type Tier = Result<Placement, Option<Note>>;

/// The tiers in order; the first that holds the scenario wins: the user's own split when one is
/// asked ([`asked`]: it answers for that split, fitting or not), the whole model on the GPU(s),
/// an offload, the CPU from RAM, the disk. Where none does, verdict `None`, with how far off it
/// is and why. A note on the GPUs' usable share comes first.
pub fn place(job: &Job) -> Placement {
    if crate::core::mlx::refused(job.s, job.acc) {
        return needs_apple(job);
    }
    let mut p = if mlx_inference(job) {
        gpu::whole_model(job).unwrap_or_else(|| mlx_short(job))
    } else {
        first_tier(job)
    };
    if mlx_inference(job)
        && let Some(n) = mlx_near_limit(job)
    {
        p.notes.push(n);
    }
    if let Some(n) = job.gpus.as_ref().and_then(|g| g.note(job.m, job.s)) {
        p.notes.insert(0, n);
    }
    if let Some(n) = limit_raise_note(job, &p) {
        p.notes.push(n);
    }
    p
}

/// The first tier that holds the scenario, in order (each returns as soon as it holds: a
/// placement is not handed down a chain of options).
fn first_tier(job: &Job) -> Placement {
    if let Some(p) = asked::place(job) {
        return p;
    }
    if let Some(p) = gpu::whole_model(job) {
        return p;
    }
    if let Some(p) = offload_tiers(job) {
        return p;
    }
    if let Some(p) = cpu::from_ram(job) {
        return p;
    }
    beyond_memory(job)
}

/// Inference under MLX: every layer on the GPU or nothing (mlx-lm has no layer offload, no
/// CPU-only path its users take, no disk streaming).
fn mlx_inference(job: &Job) -> bool {
    job.s.runtime == crate::core::scenario::Runtime::Mlx && !job.training()
}

/// MLX on a machine without an Apple GPU: verdict `None`, with the reason.
fn needs_apple(job: &Job) -> Placement {
    let mut p = nowhere(job);
    p.notes = vec![Note::NeedsAppleSilicon];
    // No memory binds: the runtime does not run on this machine at all.
    p.headroom_bytes = 0;
    p
}

/// MLX where the GPU's share does not hold the model: verdict `None`, how far off, and why
/// there is no offload (the limit-raise note follows from [`place`]).
fn mlx_short(job: &Job) -> Placement {
    let mut p = nowhere(job);
    if let Some(g) = &job.gpus {
        p.notes.insert(
            0,
            Note::MlxAllOnGpu {
                need: g.need,
                usable: g.capacity,
            },
        );
    }
    p
}

/// mlx-lm's "can be slow" warning: the weights above 0.9 of the wired limit (the GPU's share)
/// but within it — past it the model does not run and [`Note::MlxAllOnGpu`] says so.
fn mlx_near_limit(job: &Job) -> Option<Note> {
    let g = job.gpus.as_ref().filter(|g| g.unified)?;
    let weights = g
        .est
        .kind_total(crate::core::estimate::ComponentKind::Weights);
    (weights.as_f64() > crate::core::mlx::SLOW_SHARE * g.capacity.as_f64() && weights <= g.capacity)
        .then_some(Note::MlxNearWiredLimit {
            weights,
            limit: g.capacity,
        })
}

/// On unified memory: the limit raise the settings assume, or the one that would put the whole
/// model on the GPU where it is not there now (an inference that offloads, runs on the CPU or
/// does not fit; training runs on the GPU or not at all).
fn limit_raise_note(job: &Job, p: &Placement) -> Option<Note> {
    let g = job.gpus.as_ref().filter(|g| g.unified)?;
    let r = capacity::limit_raise(job.m, job.acc, job.st)?;
    if job.st.raise_gpu_limit {
        return Some(Note::GpuLimitRaised(r));
    }
    let whole = g.need <= r.to && g.need.saturating_add(g.host_need) <= job.ram;
    (whole && p.verdict != Verdict::Unified).then_some(Note::GpuLimitRaise(r))
}

/// After the whole model failed on the GPU: layer offload in the settings' style; for a mixture
/// of experts also the other style (it holds the same bytes) and the routed experts in RAM. The
/// fastest decode wins, the earlier on a tie.
fn offload_tiers(job: &Job) -> Option<Placement> {
    if job.gpus.as_ref().is_some_and(|g| g.unified) {
        return offload::unified(job);
    }
    let style = job.st.split_style;
    let layers = offload::layers(job, style);
    if !experts::is_moe(job.s) {
        return layers;
    }
    let layers = faster(layers, offload::layers(job, offload::other(style)));
    faster(layers, experts::offload(job))
}

/// `b` when it decodes faster than `a`, else `a`; whichever there is.
fn faster(a: Option<Placement>, b: Option<Placement>) -> Option<Placement> {
    match (a, b) {
        (Some(a), Some(b)) if b.decode_tokens_per_s() > a.decode_tokens_per_s() => Some(b),
        (Some(a), _) => Some(a),
        (None, b) => b,
    }
}

/// Neither VRAM nor RAM holds it: the disk, or nowhere.
fn beyond_memory(job: &Job) -> Placement {
    let mut nowhere = nowhere(job);
    if job.training() {
        // ZeRO-Infinity answers host RAM being short: its note replaces that one.
        return match disk::zero_infinity(job) {
            Ok(p) => p,
            Err(why) => {
                nowhere.notes.extend(why);
                nowhere
            }
        };
    }
    match disk::from_disk(job) {
        Ok(mut p) => {
            nowhere.notes.append(&mut p.notes);
            p.notes = nowhere.notes;
            p
        }
        Err(why) => {
            nowhere.notes.extend(why);
            nowhere
        }
    }
}

/// Verdict `None`: how far the binding memory is short (the GPU's with one, else RAM's) and why.
fn nowhere(job: &Job) -> Placement {
    match &job.gpus {
        Some(g) => Placement {
            notes: if g.host_need > job.ram {
                vec![Note::HostRamShort {
                    need: g.host_need,
                    usable: job.ram,
                }]
            } else {
                Vec::new()
            },
            ..Placement::new(
                Verdict::None,
                0,
                Bytes::ZERO,
                g.capacity.signed_sub(g.need),
                Run::Nothing,
            )
        },
        None => {
            let need = job.cpu_total;
            Placement {
                notes: if job.training() {
                    vec![Note::TrainingNeedsGpu]
                } else {
                    Vec::new()
                },
                ..Placement::new(
                    Verdict::None,
                    0,
                    need,
                    job.ram.signed_sub(need),
                    Run::Nothing,
                )
            }
        }
    }
}
