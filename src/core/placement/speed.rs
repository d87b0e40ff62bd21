//! How fast a placement runs: the one bridge from the tiers to the speed model
//! ([`crate::core::speed`]) — the query for a placement, and training throughput.

use super::Job;
use super::capacity::Gpus;
use super::cost::hourly_usd;
use crate::core::catalog::{Accelerator, Machine};
use crate::core::estimate::Estimate;
use crate::core::fit::{FitSettings, TrainingSpeed};
use crate::core::scenario::Scenario;
use crate::core::speed::{Backend, CpuDevice, SpeedQuery};

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
