//! How fast a placement runs: the one bridge from the tiers to the speed model
//! ([`crate::core::speed`]) — the query for a placement, and training throughput.

use super::Job;
use super::capacity::Gpus;
use super::cost::hourly_usd;
use crate::core::catalog::{Accelerator, Machine};
use crate::core::estimate::Estimate;
use crate::core::fit::{FitSettings, TrainingSpeed};
use crate::core::scenario::Scenario;
use crate::core::speed::{Backend, CpuDevice, MultiGpu, Speed, SpeedQuery};
use std::cell::{Cell, RefCell};

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
pub struct SpeedMemo<'a> {
    /// The catalog's accelerators: a speed is kept under its accelerator's place among them.
    accelerators: &'a [Accelerator],
    /// What every query of the fit shares (taken from the first): a query that differs is not kept.
    fit: Cell<Option<[u64; 5]>>,
    /// Per accelerator of the catalog, 1 + the place in `speeds` of its newest speed (0: none).
    newest: RefCell<Vec<u16>>,
    /// The speeds kept, each with the place + 1 of the one kept before it for its accelerator.
    speeds: RefCell<Vec<(SpeedKey, Speed, u16)>>,
}

/// The inputs of an all-GPU query on one accelerator that differ between the machines of one fit
/// (the accelerator is where the key is kept: the device is made from it and the scenario's
/// weights): what the speed model reads of the estimate (its speed class), the GPUs and the
/// layers on them, the GPU-to-GPU link, the runtime and the split.
#[derive(Copy, Clone, PartialEq, Eq)]
pub struct SpeedKey {
    gpu_link: u64,
    gpus_layers: (u32, u32),
    small: [u8; 5],
}

impl<'a> SpeedMemo<'a> {
    /// A memo for a fit on machines of a catalog with `accelerators`.
    pub fn new(accelerators: &'a [Accelerator]) -> SpeedMemo<'a> {
        SpeedMemo {
            accelerators,
            fit: Cell::new(None),
            newest: RefCell::new(vec![0; accelerators.len()]),
            speeds: RefCell::new(Vec::with_capacity(accelerators.len().min(128))),
        }
    }

    /// The speed of `q` (every layer on accelerator `acc`; `estimate`: the speed class of the
    /// estimate it runs, [`crate::core::fit::EstimateCache::shape`]), computed by `speed` unless
    /// a machine before asked the same; any other query is computed.
    pub fn get_or(
        &self,
        q: &SpeedQuery,
        acc: Option<&Accelerator>,
        estimate: usize,
        speed: impl FnOnce() -> Speed,
    ) -> Speed {
        let Some((at, key)) = self.key(q, acc, estimate) else {
            return speed();
        };
        let newest = self.newest.borrow()[at];
        {
            let speeds = self.speeds.borrow();
            let mut next = newest;
            while let Some((k, s, before)) = speeds.get(usize::from(next).wrapping_sub(1)) {
                if *k == key {
                    return *s;
                }
                next = *before;
            }
        }
        let s = speed();
        let mut speeds = self.speeds.borrow_mut();
        if let Ok(kept) = u16::try_from(speeds.len() + 1) {
            speeds.push((key, s, newest));
            self.newest.borrow_mut()[at] = kept;
        }
        s
    }

    /// Where the speed of `q` is kept and its key: the place of its accelerator in the catalog
    /// (`None`: not one of the catalog's, or not every layer on the GPU, or not the fit's
    /// prompt and tuning).
    fn key(
        &self,
        q: &SpeedQuery,
        acc: Option<&Accelerator>,
        estimate: usize,
    ) -> Option<(usize, SpeedKey)> {
        let acc = acc?;
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
        if q.gpu.is_none() || q.gpu_layers < q.est.workload.layers.max(1) {
            return None;
        }
        let t = &q.tuning;
        let fit = [
            q.batch,
            q.ubatch,
            q.depth,
            t.bandwidth_factor.to_bits(),
            t.prefill_factor.to_bits(),
        ];
        match self.fit.get() {
            None => self.fit.set(Some(fit)),
            Some(f) if f != fit => return None,
            Some(_) => {}
        }
        let small = |x: u64| u8::try_from(x).ok();
        // Under llama.cpp's layer split (and transformers, and vLLM without tensor parallelism)
        // one token passes the GPUs one after another: the speed model reads the GPU count only
        // for row split and tensor parallelism.
        let gpus = match q.multi {
            MultiGpu::LayerSplit => 0,
            MultiGpu::RowSplit | MultiGpu::TensorParallel => q.gpus,
        };
        let key = SpeedKey {
            gpu_link: q.gpu_link.0.to_bits(),
            gpus_layers: (u32::try_from(gpus).ok()?, u32::try_from(q.gpu_layers).ok()?),
            small: [
                small(estimate as u64)?,
                q.backend as u8,
                q.style as u8,
                q.multi as u8,
                q.nvlink as u8,
            ],
        };
        Some((at, key))
    }
}
