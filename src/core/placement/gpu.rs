//! The first tier: the whole model on the machine's GPU(s), or in the unified GPU's share of RAM.

use super::{Job, Placement, Run, speed};
use crate::core::fit::Verdict;

/// The whole model on the GPU(s) when one GPU holds its share and host RAM the rest (for unified
/// memory the two share one pool). Training runs here or not at all (but for ZeRO-Infinity,
/// [`super::disk::zero_infinity`]).
pub fn whole_model(job: &Job) -> Option<Placement> {
    let g = job.gpus.as_ref()?;
    let host_ok = if g.unified {
        g.need.saturating_add(g.host_need) <= job.ram
    } else {
        g.host_need <= job.ram
    };
    if g.need > g.capacity || !host_ok {
        return None;
    }
    let run = if job.training() {
        Run::Training(speed::training(job, g))
    } else {
        let (speed, backend) = job.speed(g.est, job.layers.max(1));
        Run::Inference { speed, backend }
    };
    let verdict = if g.unified {
        Verdict::Unified
    } else {
        Verdict::Gpu
    };
    Some(Placement::new(
        verdict,
        job.layers,
        g.host_need,
        g.capacity.signed_sub(g.need),
        run,
    ))
}
