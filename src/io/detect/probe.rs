//! A short memory-bandwidth probe and the CPU's SIMD width: what decode on this CPU can draw,
//! measured instead of guessed (`headroom detect --bench`, the GUI's detection worker).
//!
//! The probe reads a buffer much larger than the last-level cache with one thread per core and
//! reports the best pass, like STREAM's "best of N" (McCalpin, STREAM benchmark rules,
//! www.cs.virginia.edu/stream/ref.html). Safe Rust only; it never runs longer than its budget.

use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// What the probe measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    /// Best read bandwidth over all passes, GB/s (1e9 B/s).
    pub read_gbs: f64,
    /// Bytes read per pass.
    pub buffer_bytes: u64,
    pub threads: usize,
    pub passes: usize,
    /// Wall time of the whole probe, ms (allocation included).
    pub elapsed_ms: f64,
    /// Widest SIMD the CPU reports: "AVX-512", "AVX2", "NEON", "SSE2", "scalar".
    pub simd: String,
    /// Its width in bits.
    pub simd_bits: u32,
}

/// The widest SIMD extension this CPU has (runtime detection, safe std macros).
pub fn simd() -> (&'static str, u32) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") {
            return ("AVX-512", 512);
        }
        if std::is_x86_feature_detected!("avx2") {
            return ("AVX2", 256);
        }
        ("SSE2", 128)
    }
    #[cfg(target_arch = "aarch64")]
    {
        ("NEON", 128)
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        ("scalar", 64)
    }
}

/// Read all of `chunk` by comparing its halves: `[u8] == [u8]` is the C library's vectorised
/// `memcmp`, optimised even in a debug build, so the pass runs at memory speed. `true` when the
/// halves differ (never, for the probe's zero-filled buffer).
fn scan(chunk: &[u8]) -> bool {
    let (a, b) = chunk.split_at(chunk.len() / 2);
    a != &b[..a.len()]
}

/// Measure read bandwidth with `buffer_mib` MiB, stopping within `budget`.
pub fn probe_bandwidth(buffer_mib: usize, budget: Duration) -> ProbeResult {
    let start = Instant::now();
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 64);
    let n = (buffer_mib.max(1) * 1024 * 1024).max(threads * 4096);
    // A zeroed allocation maps pages lazily (all to one shared zero page): write one byte per
    // 4 KiB page so every page is really backed before it is timed.
    let mut buf = vec![0u8; n];
    for i in (0..n).step_by(4096) {
        buf[i] = 0;
    }
    std::hint::black_box(&mut buf);
    let per = n.div_ceil(threads);
    let mut best = 0.0f64;
    let mut passes = 0;
    let mut found = false;
    while passes < 20 {
        let t0 = Instant::now();
        let f = std::thread::scope(|sc| {
            let hs: Vec<_> = buf.chunks(per).map(|c| sc.spawn(move || scan(c))).collect();
            hs.into_iter().any(|h| h.join().unwrap_or(false))
        });
        let dt = t0.elapsed().as_secs_f64();
        found |= f;
        passes += 1;
        if dt > 0.0 {
            best = best.max(n as f64 / dt / 1e9);
        }
        // Stop when one more pass would cross the budget.
        if start.elapsed() + t0.elapsed() >= budget {
            break;
        }
    }
    std::hint::black_box(found);
    let (name, bits) = simd();
    ProbeResult {
        read_gbs: best,
        buffer_bytes: n as u64,
        threads,
        passes,
        elapsed_ms: start.elapsed().as_secs_f64() * 1000.0,
        simd: name.to_string(),
        simd_bits: bits,
    }
}

/// The standard probe: 64 MiB (beyond the L3 of everything but the largest server parts), at
/// most ~300 ms including the allocation.
pub fn probe() -> ProbeResult {
    probe_bandwidth(64, Duration::from_millis(250))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_finds_only_what_is_there() {
        let mut v = vec![0u8; 10_000];
        assert!(!scan(&v));
        v[9_998] = 1;
        assert!(scan(&v));
    }

    #[test]
    fn probe_is_short_and_positive() {
        let r = probe_bandwidth(16, Duration::from_millis(100));
        assert!(r.read_gbs > 0.0 && r.read_gbs.is_finite(), "{r:?}");
        assert!(r.passes >= 1);
        // Allocation + one pass may overrun the budget a little on a loaded debug build.
        assert!(r.elapsed_ms < 2000.0, "{r:?}");
        assert!(r.simd_bits >= 64);
    }
}
