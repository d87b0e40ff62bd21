//! How fast a placement runs: the one bridge from the tiers to the speed model
//! ([`crate::core::speed`]) — the query for a placement, and training throughput.

use super::Job;
use super::capacity::Gpus;
use super::capacity::gpus_used;
use super::cost::hourly_usd;
use crate::core::catalog::{Accelerator, Machine};
use crate::core::estimate::Estimate;
use crate::core::fit::{FitSettings, TrainingSpeed};
use crate::core::scenario::Scenario;
use crate::core::scenario::SplitStyle;
use crate::core::speed::{Backend, CpuDevice, MultiGpu, Speed, SpeedQuery, backend_for};
use std::cell::RefCell;

/// The speed model's query for the scenario on `m` with `gpu_layers` of the layers on the GPU(s)
/// (0 = CPU only) and its CPU (the job's, made once per machine): the runtime's profile, this machine's calibration and the llama.cpp split
/// mode from the settings. Every speed the fit engine reports goes through it.
pub fn query<'a>(
    s: &'a Scenario,
    est: &'a Estimate,
    m: &Machine,
    acc: Option<&Accelerator>,
    st: &FitSettings,
    cpu: CpuDevice,
    gpu_layers: u64,
) -> SpeedQuery<'a> {
    let mut q = SpeedQuery::on_machine_with_cpu(s, est, m, acc, cpu);
    q.style = st.split_style;
    if let Some(c) = st.calibration.as_ref().filter(|c| *c.machine == *m.id) {
        q.tuning = c.tuning;
    }
    q.multi = multi_gpu(q.backend, st);
    if gpu_layers == 0 {
        q = q.cpu_only();
    } else {
        q.gpu_layers = gpu_layers;
    }
    q
}

/// How a model spread over several GPUs runs on `backend`: vLLM's tensor parallelism, else the
/// settings' llama.cpp split mode (`--split-mode`), layer split when none is set.
pub fn multi_gpu(backend: Backend, st: &FitSettings) -> MultiGpu {
    match (backend, st.llama_split) {
        (Backend::Vllm, _) => MultiGpu::TensorParallel,
        (_, Some(split)) => split,
        (_, None) => MultiGpu::LayerSplit,
    }
}

/// Training throughput, time and cost of the job's scenario over the GPUs `g` (their estimate):
/// the cluster step model on one node ([`crate::core::cluster::train_plan`]: GEMMs, attention,
/// element-wise work, the data-parallel reduction or ZeRO/FSDP gathers over the machine's GPU
/// fabric, ZeRO-Offload's CPU Adam step and PCIe traffic).
pub fn training(job: &Job, g: &Gpus) -> TrainingSpeed {
    use crate::core::cluster::{Cluster, ClusterInputs, Layout, Sharding, train_plan};
    let (s, st) = (job.s, job.st);
    let c = Cluster::new(job.m, g.acc, 1, None);
    let layout = Layout {
        tp: 1,
        pp: 1,
        dp: g.count.max(1),
        sharding: Sharding::of_scenario(s, g.count),
        ep: 1,
    };
    // One machine runs the scenario's micro-batch on every GPU, one step per micro-batch.
    let inputs = ClusterInputs {
        global_batch: Some(s.batch.max(1) * g.count.max(1)),
        ..ClusterInputs::default()
    };
    let plan = train_plan(s, &c, layout, &inputs, st);
    let tokens_per_step = (s.batch.max(1) * s.context.max(1) * g.count.max(1)) as f64;
    // ZeRO-Offload's CPU Adam step and PCIe traffic are part of the plan's step.
    let step = plan.step_seconds;
    let tokens_per_s = if step > 0.0 {
        tokens_per_step / step
    } else {
        0.0
    };
    let run_hours = if tokens_per_s > 0.0 {
        s.train_tokens as f64 / tokens_per_s / 3600.0
    } else {
        0.0
    };
    TrainingSpeed {
        step_seconds: step,
        tokens_per_s,
        run_hours,
        run_usd: hourly_usd(job.m, Some(g.acc), st).map(|h| h * run_hours),
    }
}

/// Speeds one whole-catalog fit has computed with every layer on the GPU(s), shared between
/// machines whose queries read the same inputs: [`placement_speed`](crate::core::speed::placement_speed)
/// is a pure function of its query and the settings' constants, and many machines put the same
/// model on the same GPUs (a cloud's instances of one accelerator and count, the RAM sizes of one
/// Apple chip). With every layer on the GPU(s) neither the CPU nor the host link is read (the
/// prefill's copy of CPU-resident weights is 0 bytes), so machines that differ only there share
/// the speed. Made by [`crate::core::fit::fit_all`] for one scenario and one settings value; a
/// lone fit has none. Splits across GPU and CPU are not kept: they differ by the CPU, and hardly
/// two machines share one.
///
/// A kept speed is found before the query is made ([`SpeedKey`]), so a machine that shares one
/// makes no query at all.
pub struct SpeedMemo<'a> {
    /// The catalog's accelerators: a speed is kept under its accelerator's place among them.
    accelerators: &'a [Accelerator],
    /// Per accelerator of the catalog, 1 + the place in `speeds` of its newest speed (0: none).
    newest: RefCell<Vec<u16>>,
    /// The speeds kept, each with the place + 1 of the one kept before it for its accelerator.
    speeds: RefCell<Vec<(SpeedKey, Speed, u16)>>,
}

/// What an all-GPU query on one accelerator reads that differs between the machines of one fit,
/// read from the job without making the query. The rest of the query is the accelerator's (where
/// the key is kept: the device made from it and the scenario's weights, the PCIe and GPU-to-GPU
/// links, [`SpeedQuery::on_machine_with_cpu`]), the fit's scenario (batch, ubatch, prompt depth)
/// or its settings — but for the tuning, the machine's own calibration: a machine with one keeps
/// nothing. Three words, compared as integers.
#[derive(Copy, Clone, PartialEq, Eq)]
pub struct SpeedKey {
    /// The GPUs where the speed model reads their count (llama.cpp row split, tensor
    /// parallelism; 0 otherwise) and the layers on them.
    gpus_layers: u64,
    /// What the speed model reads of the estimate (its speed class), the backend, the split
    /// style of the RAM layers and the multi-GPU mode, a byte each.
    small: u64,
}

impl<'a> SpeedMemo<'a> {
    /// A memo for a fit on machines of a catalog with `accelerators`.
    pub fn new(accelerators: &'a [Accelerator]) -> SpeedMemo<'a> {
        SpeedMemo {
            accelerators,
            newest: RefCell::new(vec![0; accelerators.len()]),
            speeds: RefCell::new(Vec::with_capacity(accelerators.len().min(128))),
        }
    }

    /// The speed of `est` with `gpu_layers` of its layers on the job's GPU(s), the rest run in
    /// `style`, and its backend: kept from a machine before when every layer is on the GPU(s)
    /// and that machine's query read the same, else computed by `speed` (and kept when it can be
    /// shared).
    pub fn get_or(
        &self,
        job: &Job,
        est: &Estimate,
        gpu_layers: u64,
        style: SplitStyle,
        speed: impl FnOnce() -> (Speed, Backend),
    ) -> (Speed, Backend) {
        let Some((at, key, backend)) = self.key(job, est, gpu_layers, style) else {
            return speed();
        };
        let newest = self.newest.borrow()[at];
        {
            let speeds = self.speeds.borrow();
            let mut next = newest;
            while let Some((k, s, before)) = speeds.get(usize::from(next).wrapping_sub(1)) {
                if *k == key {
                    return (*s, backend);
                }
                next = *before;
            }
        }
        let (s, b) = speed();
        debug_assert_eq!(b, backend, "the key's backend is the query's");
        let mut speeds = self.speeds.borrow_mut();
        if let Ok(kept) = u16::try_from(speeds.len() + 1) {
            speeds.push((key, s, newest));
            self.newest.borrow_mut()[at] = kept;
        }
        (s, b)
    }

    /// Where the speed is kept (the place of the job's accelerator in the catalog), its key and
    /// its backend; `None` when it is not kept: not one of the catalog's accelerators, not every
    /// layer on the GPU(s), an estimate not of the fit's cache, or a machine with its own
    /// calibration.
    fn key(
        &self,
        job: &Job,
        est: &Estimate,
        gpu_layers: u64,
        style: SplitStyle,
    ) -> Option<(usize, SpeedKey, Backend)> {
        let acc = job.acc?;
        let at = (std::ptr::from_ref(acc) as usize)
            .wrapping_sub(self.accelerators.as_ptr() as usize)
            / std::mem::size_of::<Accelerator>().max(1);
        if !self
            .accelerators
            .get(at)
            .is_some_and(|a| std::ptr::eq(a, acc))
        {
            return None;
        }
        if gpu_layers == 0 || gpu_layers < est.workload.layers.max(1) {
            return None;
        }
        if job
            .st
            .calibration
            .as_ref()
            .is_some_and(|c| *c.machine == *job.m.id)
        {
            return None;
        }
        let class = job.cache.speed_class(est)?;
        let backend = backend_for(job.s.runtime, Some(acc));
        let multi = multi_gpu(backend, job.st);
        // Under llama.cpp's layer split (and transformers, and vLLM without tensor parallelism)
        // one token passes the GPUs one after another: the speed model reads the GPU count only
        // for row split and tensor parallelism.
        let gpus = match multi {
            MultiGpu::LayerSplit => 0,
            MultiGpu::RowSplit | MultiGpu::TensorParallel => gpus_used(job.m, Some(acc)),
        };
        let key = SpeedKey {
            gpus_layers: u64::from(u32::try_from(gpus).ok()?) << 32
                | u64::from(u32::try_from(gpu_layers).ok()?),
            small: u64::from_le_bytes([
                u8::try_from(class).ok()?,
                backend as u8,
                style as u8,
                multi as u8,
                0,
                0,
                0,
                0,
            ]),
        };
        Some((at, key, backend))
    }
}
