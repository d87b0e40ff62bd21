//! Numbers of a scenario read from text, in their domains: the command line's flags and a
//! runtime's command line (`core::launch_line`) read them the same way. Each error is one line
//! naming the value.

use super::limits;
use crate::core::format::group_digits;
use crate::core::units::parse_count;

/// A count that must be whole: `1.5` tokens is refused, not rounded to 2 (`1.5K` = 1,500 is
/// whole). Parsing as [`parse_count`].
pub fn whole_count(s: &str) -> Result<u64, String> {
    let n = parse_count(s)?;
    let t = s.trim().replace('_', "");
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 1e3),
        Some('M') => (&t[..t.len() - 1], 1e6),
        Some('B' | 'G') => (&t[..t.len() - 1], 1e9),
        Some('T') => (&t[..t.len() - 1], 1e12),
        _ => (t.as_str(), 1.0),
    };
    if let Ok(v) = num.trim().parse::<f64>() {
        let x = v * mult;
        // 1.1K is 1100.0000000000002 in binary: a whole number up to rounding.
        if (x - x.round()).abs() > 1e-6 * x.abs().max(1.0) {
            return Err(format!("'{s}' is not a whole number"));
        }
    }
    Ok(n)
}

pub fn ranged(s: &str, lo: u64, hi: u64) -> Result<u64, String> {
    let n = whole_count(s)?;
    if n < lo || n > hi {
        return Err(format!("'{s}' is outside {lo} … {}", group_digits(hi)));
    }
    Ok(n)
}

/// Largest `--ubatch` accepted.
pub const MAX_UBATCH: u64 = super::rules::MAX_UBATCH;

pub fn parse_context(s: &str) -> Result<u64, String> {
    ranged(s, 1, limits::MAX_CONTEXT)
}
pub fn parse_ubatch(s: &str) -> Result<u64, String> {
    ranged(s, 1, MAX_UBATCH)
}
/// `--threads N`: CPU threads, 1 … 1,024.
pub fn parse_threads(s: &str) -> Result<u32, String> {
    ranged(s, 1, u64::from(super::MAX_THREADS)).map(|n| n as u32)
}
/// `--gpu-layers` / `--n-cpu-moe`: a layer count, 0 … 10,000 (llama.cpp takes any count and
/// caps it at the model's layers).
pub fn parse_gpu_layers(s: &str) -> Result<u64, String> {
    ranged(s, 0, 10_000)
}
pub fn parse_fraction(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("'{s}' is not a number"))?;
    if !(0.05..=1.0).contains(&v) {
        return Err(format!("'{s}' is outside 0.05 … 1.0"));
    }
    Ok(v)
}
pub fn parse_tp(s: &str) -> Result<u64, String> {
    ranged(s, 1, limits::MAX_GPUS)
}
/// Scheduler limits (`--max-num-seqs`, `--max-num-batched-tokens`), 1 … 2^22.
pub fn parse_sched(s: &str) -> Result<u64, String> {
    ranged(s, 1, 1 << 22)
}
