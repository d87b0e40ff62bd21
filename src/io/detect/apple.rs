//! Apple Silicon unified memory via `sysctl` (docs/apple-unified-memory.md).
//!
//! Metal's default `recommendedMaxWorkingSetSize` is 2/3 of RAM up to 32 GiB and 3/4 above
//! (16 GB → 10922.67 MiB, 64 GB → 49152 MiB, 128 GB → 98304 MiB on macOS 13–15);
//! `sudo sysctl iogpu.wired_limit_mb=<MiB>` replaces it (0 = default), and macOS 13 used
//! `debug.iogpu.wired_limit` in bytes. The parsing is pure and tested on every platform; running
//! `sysctl` is compiled on macOS only.

use super::UnifiedMemory;
use crate::core::units::{Bytes, MIB};

/// The `sysctl` keys read, in order.
pub const SYSCTL_KEYS: [&str; 4] = [
    "hw.memsize",
    "machdep.cpu.brand_string",
    "iogpu.wired_limit_mb",
    "debug.iogpu.wired_limit",
];

/// Values read from `sysctl` output.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SysctlValues {
    /// `hw.memsize`, bytes.
    pub memsize: Option<u64>,
    /// `machdep.cpu.brand_string`: "Apple M2".
    pub brand: Option<String>,
    /// `iogpu.wired_limit_mb` (macOS 14+), MiB; 0 means "default".
    pub wired_limit_mb: Option<u64>,
    /// `debug.iogpu.wired_limit` (macOS 13), bytes; 0 means "default".
    pub legacy_wired_limit: Option<u64>,
}

/// Parses `sysctl key…` output: one `key: value` (or `key = value`) per line. Unknown keys,
/// blank lines and `sysctl: unknown oid` errors are ignored.
pub fn parse_sysctl(text: &str) -> SysctlValues {
    let mut v = SysctlValues::default();
    for line in text.lines() {
        let Some((k, val)) = line.split_once(": ").or_else(|| line.split_once(" = ")) else {
            continue;
        };
        let (k, val) = (k.trim(), val.trim());
        match k {
            "hw.memsize" => v.memsize = val.parse().ok(),
            "machdep.cpu.brand_string" if !val.is_empty() => v.brand = Some(val.to_string()),
            "iogpu.wired_limit_mb" => v.wired_limit_mb = val.parse().ok(),
            "debug.iogpu.wired_limit" => v.legacy_wired_limit = val.parse().ok(),
            _ => {}
        }
    }
    v
}

/// Metal's default GPU working-set limit: the one rule in
/// [`crate::core::catalog::metal_default_limit`].
pub fn default_gpu_limit(total: Bytes) -> Bytes {
    crate::core::catalog::metal_default_limit(total)
}

/// The unified pool of `chip` with `total` RAM; `wired_limit_mb` of `Some(0)` or `None` means default.
/// An override above the RAM is capped at the RAM.
pub fn unified_memory(chip: &str, total: Bytes, wired_limit_mb: Option<u64>) -> UnifiedMemory {
    let wired = wired_limit_mb.filter(|&m| m > 0);
    let default_gpu_limit = default_gpu_limit(total);
    let gpu_limit = match wired {
        Some(mb) => Bytes::mib(mb).min(total),
        None => default_gpu_limit,
    };
    UnifiedMemory {
        chip: chip.to_string(),
        total,
        default_gpu_limit,
        wired_limit_mb: wired,
        gpu_limit,
        matched: None,
    }
}

/// Builds the unified pool from `sysctl` values, or `None` (with a note) when this is not an
/// Apple Silicon Mac or `hw.memsize` is missing.
pub fn unified_from_sysctl(v: &SysctlValues, notes: &mut Vec<String>) -> Option<UnifiedMemory> {
    let chip = v.brand.as_deref().unwrap_or("");
    if !chip.starts_with("Apple") {
        notes.push(format!(
            "Unified memory: not an Apple Silicon chip ({}); GPUs are detected as discrete",
            if chip.is_empty() {
                "no CPU brand from sysctl"
            } else {
                chip
            }
        ));
        return None;
    }
    let Some(total) = v.memsize.filter(|&m| m > 0) else {
        notes.push("Unified memory: sysctl hw.memsize not readable".into());
        return None;
    };
    // macOS 13's byte-valued key, as MiB, when the newer one is absent or 0.
    let legacy_mb = v.legacy_wired_limit.filter(|&b| b > 0).map(|b| b / MIB);
    let wired = v.wired_limit_mb.filter(|&m| m > 0).or(legacy_mb);
    let u = unified_memory(chip, Bytes(total), wired);
    match u.wired_limit_mb {
        Some(mb) => notes.push(format!(
            "Unified memory: iogpu.wired_limit_mb = {mb} sets the GPU limit to {} (default would be {}); the setting does not survive a reboot",
            u.gpu_limit, u.default_gpu_limit
        )),
        None => notes.push(format!(
            "Unified memory: GPU may use {} of {} by Metal's default ({}); raise it with `sudo sysctl iogpu.wired_limit_mb=<MiB>`. macOS 26 may allow more",
            u.gpu_limit,
            u.total,
            if u.total <= crate::core::catalog::METAL_RULE_CUTOVER { "2/3 up to 32 GiB" } else { "3/4 above 32 GiB" }
        )),
    }
    Some(u)
}

/// Runs `sysctl` for each key (one process per key, so an unknown key cannot hide the others).
#[cfg(target_os = "macos")]
pub(crate) fn probe(notes: &mut Vec<String>) -> (SysctlValues, Option<UnifiedMemory>) {
    let mut text = String::new();
    for key in SYSCTL_KEYS {
        match std::process::Command::new("sysctl").arg(key).output() {
            Ok(out) => text.push_str(&String::from_utf8_lossy(&out.stdout)),
            Err(e) => {
                notes.push(format!("Unified memory: could not run sysctl: {e}"));
                return (SysctlValues::default(), None);
            }
        }
    }
    let v = parse_sysctl(&text);
    let u = unified_from_sysctl(&v, notes);
    (v, u)
}

#[cfg(test)]
mod tests {
    use super::*;

    const M2_AIR_16: &str =
        "hw.memsize: 17179869184\nmachdep.cpu.brand_string: Apple M2\niogpu.wired_limit_mb: 0\n";
    const M3_MAX_128_RAISED: &str = "hw.memsize: 137438953472\nmachdep.cpu.brand_string: Apple M3 Max\niogpu.wired_limit_mb: 114688\n";

    #[test]
    fn m2_air_default() {
        let mut notes = Vec::new();
        let u = unified_from_sysctl(&parse_sysctl(M2_AIR_16), &mut notes).unwrap();
        assert_eq!(u.chip, "Apple M2");
        assert_eq!(u.total, Bytes::gib(16));
        assert_eq!(u.wired_limit_mb, None);
        // 10922.67 MiB, as llama.cpp logs it
        assert_eq!(u.gpu_limit.0 / MIB, 10922);
        assert_eq!(notes.len(), 1);
    }

    #[test]
    fn m3_max_raised() {
        let mut notes = Vec::new();
        let u = unified_from_sysctl(&parse_sysctl(M3_MAX_128_RAISED), &mut notes).unwrap();
        assert_eq!(u.default_gpu_limit, Bytes::gib(96));
        assert_eq!(u.gpu_limit, Bytes::gib(112));
        assert_eq!(u.wired_limit_mb, Some(114688));
        assert!(notes[0].contains("114688"));
    }

    #[test]
    fn rule_points() {
        for (ram, want_mib) in [
            (8, 5461),
            (16, 10922),
            (32, 21845),
            (64, 49152),
            (128, 98304),
            (192, 147456),
        ] {
            assert_eq!(
                default_gpu_limit(Bytes::gib(ram)).0 / MIB,
                want_mib,
                "{ram} GiB"
            );
        }
    }

    #[test]
    fn parse_variants() {
        let v = parse_sysctl(
            "sysctl: unknown oid 'iogpu.wired_limit_mb'\nhw.memsize = 34359738368\n\nmachdep.cpu.brand_string: Intel(R) Core(TM) i9-9980HK CPU @ 2.40GHz\ndebug.iogpu.wired_limit: 0\n",
        );
        assert_eq!(v.memsize, Some(34_359_738_368));
        assert_eq!(v.wired_limit_mb, None);
        assert_eq!(v.legacy_wired_limit, Some(0));
        let mut notes = Vec::new();
        assert_eq!(unified_from_sysctl(&v, &mut notes), None); // an Intel Mac
        assert!(notes[0].contains("Intel"));
        // macOS 13's byte key
        let v = parse_sysctl(
            "hw.memsize: 17179869184\nmachdep.cpu.brand_string: Apple M1\ndebug.iogpu.wired_limit: 12884901888\n",
        );
        assert_eq!(
            unified_from_sysctl(&v, &mut Vec::new()).unwrap().gpu_limit,
            Bytes::gib(12)
        );
        // an override above the RAM is capped
        assert_eq!(
            unified_memory("Apple M2", Bytes::gib(16), Some(40000)).gpu_limit,
            Bytes::gib(16)
        );
    }
}
