//! The time of the collectives a parallel layout runs, by the α–β model of ring algorithms
//! (Thakur, Rabenseifner & Gropp 2005, "Optimization of Collective Communication Operations in
//! MPICH", §4: a ring all-reduce sends 2(n−1)/n of the message over each link in 2(n−1) steps;
//! an all-gather or a reduce-scatter half of that). NCCL reports the same factor as its "bus
//! bandwidth" (nccl-tests `doc/PERFORMANCE.md`: busbw = algbw × 2(n−1)/n for all-reduce,
//! (n−1)/n for all-gather and reduce-scatter).
//!
//! A group of ranks inside one machine talks over the GPU fabric; a group that spans machines
//! is bound by each GPU's share of the node's network (every GPU drives its own rail on the
//! multi-NIC instances; NCCL's rings cross each node once per rail), with the network's
//! latency per step.

/// A link as a collective sees it: bytes per second per GPU, one direction, and the latency of
/// one step.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Link {
    pub bytes_per_s: f64,
    pub latency_s: f64,
}

impl Link {
    /// Seconds to send `bytes` once over the link.
    pub fn send(&self, bytes: f64) -> f64 {
        self.latency_s + bytes.max(0.0) / self.bytes_per_s.max(1.0)
    }
}

/// The kinds of collective, by the share of the message each link carries.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Collective {
    AllReduce,
    AllGather,
    ReduceScatter,
}

impl Collective {
    /// Ring steps and the share of the message per link: all-reduce 2(n−1) steps and 2(n−1)/n;
    /// all-gather and reduce-scatter n−1 steps and (n−1)/n.
    fn factors(self, n: f64) -> (f64, f64) {
        match self {
            Collective::AllReduce => (2.0 * (n - 1.0), 2.0 * (n - 1.0) / n),
            Collective::AllGather | Collective::ReduceScatter => (n - 1.0, (n - 1.0) / n),
        }
    }
}

/// Seconds of collective `c` of a `bytes` message (the whole buffer each rank holds before an
/// all-reduce or reduce-scatter, after an all-gather) over `n` ranks on `link`.
pub fn time(c: Collective, bytes: f64, n: u64, link: Link) -> f64 {
    if n <= 1 || bytes <= 0.0 {
        return 0.0;
    }
    let (steps, share) = c.factors(n as f64);
    steps * link.latency_s + share * bytes / link.bytes_per_s.max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_all_reduce_by_hand() {
        // 1 GB over 8 ranks at 100 GB/s, 10 µs a step: 14 steps × 10 µs + 1.75 × 10 ms.
        let l = Link {
            bytes_per_s: 100e9,
            latency_s: 10e-6,
        };
        let t = time(Collective::AllReduce, 1e9, 8, l);
        assert!((t - (14.0 * 10e-6 + 1.75e9 / 100e9)).abs() < 1e-12, "{t}");
        let g = time(Collective::AllGather, 1e9, 8, l);
        assert!((g - (7.0 * 10e-6 + 0.875e9 / 100e9)).abs() < 1e-12, "{g}");
        assert_eq!(time(Collective::AllReduce, 1e9, 1, l), 0.0);
    }
}
