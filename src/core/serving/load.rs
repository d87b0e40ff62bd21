//! One replica under load: the steady state of continuous batching at a number of requests in
//! flight or at a request rate, the time to first token at the 95th percentile, and the
//! largest load that meets a target.
//!
//! **Steady state** (continuous batching with chunked prefill, Sarathi-Serve's stall-free
//! schedule as vLLM V1 runs it): `A` requests run. Each needs `P'` prompt tokens computed (the
//! prompt less its cached prefix) and `O` decode steps. The oldest waiting prompt takes what the
//! step's token budget `T` leaves after the decodes, so a prefill spans `n = ⌈P' ÷ (T − d)⌉`
//! steps and a request lives `O + n` steps; then `d = A·O/(O + n)` sequences decode in a step
//! and `p = A·P'/(O + n)` prompt tokens ride along. The step time `t(d, p)` (step.rs) closes the
//! loop (a few fixed-point passes). Per-user speed is `1/t`, output throughput `d/t`, request
//! rate `A/((O + n)·t)`. With speculative decoding a step yields `E` tokens per decoding
//! sequence (`StepModel::tokens_per_step`) and takes `γ + 1` of the budget per sequence: a
//! request then needs `O/E` decode steps, and per-user speed is `E/t`.
//!
//! **Time to first token**: the prefill's own `n` steps, plus two waits. Prompts queue for the
//! prefill budget (an M/M/1 queue whose server is the budget left after decodes, utilisation
//! `ρ = p ÷ (T − d)`; p95 wait `ln(ρ/0.05) ÷ (μ(1 − ρ))`), and when every slot is taken
//! (`A = K`, the pool's or `max_num_seqs`' limit) requests wait for a slot: Erlang C over `K`
//! slots with Poisson arrivals, or for a closed loop of users beyond `K`, `(users − K) ÷ rate`.
//! Static batches (transformers) wait for the running batch to end: p95 `0.95 ×` its duration.

use super::inputs::{Load, Target};
use crate::core::speed::step::StepModel;
use serde::{Deserialize, Serialize};

/// What one replica does at one load.
#[derive(Copy, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadPoint {
    /// Requests in flight (running and waiting).
    pub users: f64,
    /// Requests the engine runs at once.
    pub running: f64,
    pub requests_per_s: f64,
    /// Generated tokens/s, all requests together.
    pub output_tokens_per_s: f64,
    /// Prompt tokens/s (cached prefix included: what a client sends).
    pub input_tokens_per_s: f64,
    /// Decode speed each user sees (1 ÷ time per output token).
    pub tokens_per_s_per_user: f64,
    /// Time per output token, s.
    pub tpot_s: f64,
    /// Time to first token without waiting (the prefill's own steps), s.
    pub ttft_s: f64,
    /// Time to first token at the 95th percentile, waits included, s (infinite past capacity).
    pub ttft_p95_s: f64,
    /// Share of the engine's time spent on prompts (for splitting the cost).
    pub prefill_share: f64,
    /// Whether the load is past what the replica can sustain (queues grow without bound).
    pub saturated: bool,
}

impl LoadPoint {
    pub fn meets(&self, t: &Target) -> bool {
        !self.saturated
            && self.ttft_p95_s <= t.ttft_p95_s
            && self.tokens_per_s_per_user >= t.min_tokens_per_s
    }
}

/// A replica's traffic shape and limits.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Replica<'a> {
    pub step: &'a StepModel,
    /// Mean prompt tokens, and those computed (not served from the prefix cache).
    pub prompt: f64,
    pub prompt_computed: f64,
    pub output: f64,
    /// Requests that run at once at most (pool and `max_num_seqs`).
    pub slots: f64,
    /// Token budget of one step.
    pub budget: f64,
    /// Continuous batching (else static batches).
    pub continuous: bool,
}

/// Tail quantile the target is stated at.
const TAIL: f64 = 0.05;

impl Replica<'_> {
    /// The steady state with `a` requests running (`a ≤ slots`).
    fn running(&self, a: f64) -> (LoadPoint, f64) {
        if !self.continuous {
            return self.static_batch(a);
        }
        let a = a.clamp(1.0, self.slots.max(1.0));
        // With speculative decoding a step yields `e` tokens per decoding sequence and each
        // takes `q` tokens of the step's budget (step.rs, `SpecStep`); else 1 and 1.
        let (e, q) = (self.step.tokens_per_step(), self.step.tokens_per_decode());
        let (o, pc) = (
            (self.output.max(1.0) / e).max(1.0),
            self.prompt_computed.max(1.0),
        );
        let depth = self.prompt + self.output / 2.0;
        let cached = self.prompt - self.prompt_computed;
        let mut d = a;
        let (mut t, mut n, mut p) = (0.0, 1.0, 0.0);
        for _ in 0..6 {
            let room = (self.budget - d * q).max(1.0);
            n = (pc / room).ceil().max(1.0);
            d = a * o / (o + n);
            p = (a * pc / (o + n)).min(room);
            t = self.step.time(d, depth, p, cached + pc / 2.0);
        }
        let t_decode = self.step.time(d, depth, 0.0, 0.0);
        let rate = a / ((o + n) * t);
        let room = (self.budget - d * q).max(1.0);
        // A prompt's own steps carry its chunks (the average step above carries the average).
        let chunk = pc.min(room);
        let t_prefill = n * self.step.time(d, depth, chunk, cached + pc / 2.0);
        let rho = (p / room).min(1.0);
        let point = LoadPoint {
            users: a,
            running: a,
            requests_per_s: rate,
            output_tokens_per_s: d * e / t,
            input_tokens_per_s: rate * self.prompt,
            tokens_per_s_per_user: e / t,
            tpot_s: t / e,
            ttft_s: t_prefill,
            ttft_p95_s: t_prefill + mm1_wait_p95(rho, 1.0 / t_prefill),
            prefill_share: ((t - t_decode) / t).clamp(0.0, 1.0),
            saturated: false,
        };
        (point, (o + n) * t)
    }

    /// A static batch of `a` requests: one prefill pass, then `O` decode steps together.
    fn static_batch(&self, a: f64) -> (LoadPoint, f64) {
        let b = a.clamp(1.0, self.slots.max(1.0)).round();
        let t_pf = self
            .step
            .time(0.0, 0.0, b * self.prompt_computed.max(1.0), 0.0);
        let t_dec = self.step.time(b, self.prompt + self.output / 2.0, 0.0, 0.0);
        let e = self.step.tokens_per_step();
        let run = t_pf + (self.output.max(1.0) / e).max(1.0) * t_dec;
        let point = LoadPoint {
            users: b,
            running: b,
            requests_per_s: b / run,
            output_tokens_per_s: b * self.output / run,
            input_tokens_per_s: b * self.prompt / run,
            tokens_per_s_per_user: e / t_dec,
            tpot_s: t_dec / e,
            ttft_s: t_pf,
            // A request arriving mid-batch waits for it to end (uniform arrival: p95 = 0.95 run).
            ttft_p95_s: t_pf + (1.0 - TAIL) * run,
            prefill_share: (t_pf / run).clamp(0.0, 1.0),
            saturated: false,
        };
        (point, run)
    }

    /// A closed loop of `users` requests in flight.
    pub fn at_users(&self, users: f64) -> LoadPoint {
        let users = users.max(1.0);
        let (mut pt, service) = self.running(users.min(self.slots.max(1.0)));
        if users > pt.running {
            // The rest wait for a slot: each finished request admits one.
            let waiting = users - pt.running;
            let wait = if self.continuous {
                waiting / pt.requests_per_s.max(1e-12)
            } else {
                (waiting / pt.running).ceil() * service
            };
            pt.ttft_p95_s += wait;
            pt.users = users;
        }
        pt
    }

    /// Poisson arrivals at `rate` requests/s.
    pub fn at_rate(&self, rate: f64) -> LoadPoint {
        let (full, service) = self.running(self.slots.max(1.0));
        if rate >= full.requests_per_s {
            return LoadPoint {
                requests_per_s: rate,
                ttft_p95_s: f64::INFINITY,
                saturated: true,
                ..full
            };
        }
        // Bisect for the running count whose throughput is `rate`.
        let (mut lo, mut hi) = (0.0_f64, self.slots.max(1.0));
        for _ in 0..40 {
            let mid = 0.5 * (lo + hi);
            if self.running(mid.max(1e-6)).0.requests_per_s < rate {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let (mut pt, _) = self.running(hi.max(1.0));
        let offered = rate * service;
        pt.ttft_p95_s += erlang_c_wait_p95(self.slots.max(1.0), offered, service);
        pt.users = offered.max(pt.running);
        pt.requests_per_s = rate;
        pt
    }

    pub fn at(&self, load: Load) -> LoadPoint {
        match load {
            Load::Users(n) => self.at_users(n as f64),
            Load::RequestsPerSecond(r) => self.at_rate(r),
        }
    }

    /// The most users in flight that meet `target` (`None`: not even one).
    pub fn max_users(&self, target: &Target) -> Option<(u64, LoadPoint)> {
        let one = self.at_users(1.0);
        if !one.meets(target) {
            return None;
        }
        let (mut lo, mut hi) = (1_u64, (self.slots.max(1.0) as u64).saturating_mul(4).max(2));
        if self.at_users(hi as f64).meets(target) {
            return Some((hi, self.at_users(hi as f64)));
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.at_users(mid as f64).meets(target) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some((lo, self.at_users(lo as f64)))
    }
}

/// p95 wait of an M/M/1 queue at utilisation `rho` with service rate `mu`.
fn mm1_wait_p95(rho: f64, mu: f64) -> f64 {
    if rho <= TAIL {
        return 0.0;
    }
    if rho >= 1.0 {
        return f64::INFINITY;
    }
    (rho / TAIL).ln() / (mu * (1.0 - rho))
}

/// p95 wait for one of `k` slots (Erlang C; `offered` = arrival rate × service time).
fn erlang_c_wait_p95(k: f64, offered: f64, service: f64) -> f64 {
    if offered >= k {
        return f64::INFINITY;
    }
    let n = k.floor().max(1.0) as u64;
    // Erlang B by its recursion, then C.
    let mut b = 1.0;
    for i in 1..=n {
        b = offered * b / (i as f64 + offered * b);
    }
    let kf = n as f64;
    let c = kf * b / (kf - offered * (1.0 - b));
    if c <= TAIL {
        return 0.0;
    }
    service / (kf - offered) * (c / TAIL).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mm1_tail_matches_the_closed_form() {
        // ρ = 0.5, μ = 1/s: P(W > w) = 0.5·e^{−0.5 w} = 0.05 at w = 2 ln 10 ≈ 4.605 s.
        assert!((mm1_wait_p95(0.5, 1.0) - 2.0 * 10f64.ln()).abs() < 1e-9);
        assert_eq!(mm1_wait_p95(0.04, 1.0), 0.0);
        assert!(mm1_wait_p95(1.0, 1.0).is_infinite());
    }

    #[test]
    fn erlang_c_of_one_slot_is_mm1() {
        // One slot: C = ρ; the p95 wait is the M/M/1 one with μ = 1/service.
        let w = erlang_c_wait_p95(1.0, 0.5, 1.0);
        assert!((w - mm1_wait_p95(0.5, 1.0)).abs() < 1e-9, "{w}");
        // Many slots at half load: nobody waits.
        assert_eq!(erlang_c_wait_p95(256.0, 128.0, 10.0), 0.0);
    }
}
