//! The CPU tier: everything in RAM, run by the CPU. Inference only: training needs a GPU.

use super::{Job, Placement, Run};
use crate::core::fit::Verdict;

/// The CPU path when usable RAM holds the whole CPU-only estimate.
pub fn from_ram(job: &Job) -> Option<Placement> {
    let need = job.cpu_total;
    if job.training() || need > job.ram {
        return None;
    }
    let (speed, backend) = job.speed(job.cpu_est, 0);
    Some(Placement::new(
        Verdict::Cpu,
        0,
        need,
        job.ram.signed_sub(need),
        Run::Inference { speed, backend },
    ))
}
