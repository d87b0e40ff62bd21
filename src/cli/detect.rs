//! `headroom detect [--json]`: what this machine has.
//!
//! The JSON is [`DetectedMachine`] as serde writes it; these keys are a contract (add, never
//! rename): `ram_total`, `ram_available`, `cpu.{name,cores}`, `gpus[].{name, vram_total,
//! vram_free, pcie_gen, pcie_width, matched}`, `unified_memory` (object or null), `storage`
//! (`{kind, label, capacity, free, read_gbs, source}` or null), `notes`. Sizes are integers in
//! bytes, kinds lowercase.

use crate::core::catalog::Catalog;
use crate::core::format;
use crate::core::units::GbPerSec;
use crate::io::detect::{DetectedMachine, Detector, SystemDetector};
use std::fmt::Write;

/// Detects this machine against `catalog` and renders it.
pub fn run(catalog: &Catalog, json: bool) -> String {
    render(&SystemDetector::new(catalog.clone()).detect(), json)
}

/// [`run`], plus the memory-bandwidth probe with `bench` (JSON: a `bench` object beside the
/// detection's keys).
pub fn run_with(catalog: &Catalog, json: bool, bench: bool) -> String {
    if !bench {
        return run(catalog, json);
    }
    let d = SystemDetector::new(catalog.clone()).detect();
    let p = crate::io::detect::probe::probe();
    if json {
        let mut v = crate::io::json::detected_json(&d);
        v["bench"] = serde_json::to_value(&p).unwrap_or_default();
        let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
        s.push('\n');
        return s;
    }
    let mut s = table(&d);
    s.push_str(&bench_lines(&p));
    s
}

/// The probe's figures as text.
pub fn bench_lines(p: &crate::io::detect::probe::ProbeResult) -> String {
    format!(
        "Measured\n  Memory    {} read ({} threads, {} MiB, best of {} passes, {})\n  SIMD      {} ({}-bit)\n",
        format::bandwidth_tenths(p.read_gbs),
        p.threads,
        p.buffer_bytes / (1024 * 1024),
        p.passes,
        format::millis(p.elapsed_ms),
        p.simd,
        p.simd_bits
    )
}

/// The detection as a readable table, or as the JSON contract (pretty, with a final newline).
pub fn render(d: &DetectedMachine, json: bool) -> String {
    if json {
        // Serialising plain data with string keys cannot fail.
        return super::app::json_text(&crate::io::json::detected_json(d));
    }
    table(d)
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "?".into())
}

fn link(g: Option<u32>, w: Option<u32>) -> String {
    match (g, w) {
        (None, None) => "?".into(),
        _ => format!("{}.0 x{}", opt(g), opt(w)),
    }
}

fn table(d: &DetectedMachine) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "This machine");
    let _ = writeln!(
        s,
        "  OS        {}",
        if d.os.is_empty() { "?" } else { &d.os }
    );
    let _ = writeln!(
        s,
        "  CPU       {} ({} cores, {} threads)",
        if d.cpu.name.is_empty() {
            "?"
        } else {
            &d.cpu.name
        },
        d.cpu.cores,
        d.cpu.threads
    );
    let _ = writeln!(
        s,
        "  RAM       {} total, {} available",
        d.ram_total, d.ram_available
    );
    if let Some(disk) = &d.storage {
        let _ = writeln!(
            s,
            "  Disk      {}{}",
            disk.describe(),
            disk.free
                .map(|f| format!(", {} free", crate::core::format::bytes(f)))
                .unwrap_or_default()
        );
    }
    if let Some(u) = &d.unified_memory {
        let _ = writeln!(
            s,
            "  Unified   {}: {} pool, GPU may use {}",
            u.chip, u.total, u.gpu_limit
        );
        let _ = writeln!(
            s,
            "            {} (Metal default {}){}",
            match u.wired_limit_mb {
                Some(mb) => format!("iogpu.wired_limit_mb = {mb}"),
                None => "no iogpu.wired_limit_mb override".into(),
            },
            u.default_gpu_limit,
            match &u.matched {
                Some(id) => format!(", catalog: {id}"),
                None => ", not in the catalog".into(),
            }
        );
    }
    if d.gpus.is_empty() {
        let _ = writeln!(s, "  GPUs      none detected");
    }
    for (i, g) in d.gpus.iter().enumerate() {
        let _ = writeln!(
            s,
            "  GPU {i}     {}  [{}]",
            g.name,
            match &g.matched {
                Some(id) => format!("catalog: {id}"),
                None => "not in the catalog".into(),
            }
        );
        let _ = writeln!(
            s,
            "    VRAM    {} total, {} free, {} used",
            g.vram_total, g.vram_free, g.vram_used
        );
        if let Some(gtt) = g.gtt_total {
            let _ = writeln!(s, "    GTT     {gtt} (system RAM the GPU can map)");
        }
        let _ = writeln!(
            s,
            "    PCIe    {} now, {} max",
            link(g.pcie_gen, g.pcie_width),
            link(g.pcie_max_gen, g.pcie_max_width)
        );
        if g.memory_bus_width.is_some() || g.max_memory_clock_mhz.is_some() {
            let _ = writeln!(
                s,
                "    Memory  {}-bit bus, {} MHz max{}",
                opt(g.memory_bus_width),
                opt(g.max_memory_clock_mhz),
                g.bandwidth_gbs
                    .map(|b| format!(" → {} (derived)", format::bandwidth(GbPerSec(b))))
                    .unwrap_or_default()
            );
        }
        if g.driver_version.is_some() || g.cuda_version.is_some() {
            let _ = writeln!(
                s,
                "    Driver  {}, CUDA {}",
                opt(g.driver_version.as_deref()),
                opt(g.cuda_version.as_deref())
            );
        }
        for p in &g.processes {
            let _ = writeln!(
                s,
                "    Process {:>7} {:<24} {}",
                p.pid,
                p.name.as_deref().unwrap_or("?"),
                p.used.map(|b| b.to_string()).unwrap_or_else(|| "?".into())
            );
        }
    }
    if !d.notes.is_empty() {
        let _ = writeln!(s, "Notes");
        for n in &d.notes {
            let _ = writeln!(s, "  - {n}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::units::Bytes;
    use crate::io::detect::FakeDetector;

    #[test]
    fn table_shows_gpu_and_notes() {
        let d = FakeDetector::with_gpu("NVIDIA GeForce RTX 4090", Bytes::gib(24), Bytes::gib(23))
            .machine;
        let t = render(&d, false);
        assert!(
            t.contains("GPU 0     NVIDIA GeForce RTX 4090  [not in the catalog]"),
            "{t}"
        );
        assert!(
            t.contains("24.0 GiB total, 23.0 GiB free, 1.00 GiB used"),
            "{t}"
        );
        assert!(t.contains("PCIe    4.0 x16 now, 4.0 x16 max"), "{t}");
        assert!(t.contains("  - NVML: fake detector, 1 GPU"), "{t}");
    }

    #[test]
    fn table_apple() {
        let d = FakeDetector::apple("Apple M2", Bytes::gib(16), None).machine;
        let t = render(&d, false);
        assert!(
            t.contains("Unified   Apple M2: 16.0 GiB pool, GPU may use 10.7 GiB"),
            "{t}"
        );
        assert!(t.contains("GPUs      none detected"), "{t}");
    }
}
