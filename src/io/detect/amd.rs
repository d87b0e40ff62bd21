//! AMD GPUs and APUs on Linux, from the amdgpu driver's sysfs files:
//! `/sys/class/drm/cardN/device/{vendor, device, product_name, mem_info_vram_total,
//! mem_info_vram_used, mem_info_gtt_total}` plus the PCI core's `{current,max}_link_{speed,width}`.
//!
//! This is partial: no memory clock, bus width or per-process use, so bandwidth comes from the
//! catalog when the name matches (only Instinct parts fill `product_name`). [`read_drm`] takes the
//! sysfs root, so tests read a fixture tree; [`gpu_from_sysfs`] is pure.

use super::{DetectedGpu, GpuSource};
use crate::core::catalog::Vendor;
use crate::core::units::{Bytes, GIB};
use std::path::Path;

pub const VENDOR_AMD: &str = "0x1002";
pub const VENDOR_NVIDIA: &str = "0x10de";
pub const VENDOR_INTEL: &str = "0x8086";

/// The raw text of one `/sys/class/drm/cardN/device` directory (each file trimmed; `None` when absent).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DrmDevice {
    /// "card0".
    pub card: String,
    pub vendor: Option<String>,
    pub device: Option<String>,
    pub product_name: Option<String>,
    pub mem_info_vram_total: Option<String>,
    pub mem_info_vram_used: Option<String>,
    pub mem_info_gtt_total: Option<String>,
    pub current_link_speed: Option<String>,
    pub current_link_width: Option<String>,
    pub max_link_speed: Option<String>,
    pub max_link_width: Option<String>,
}

/// "16.0 GT/s PCIe" → 4 (2.5 → 1, 5 → 2, 8 → 3, 16 → 4, 32 → 5, 64 → 6). "Unknown" → `None`.
pub fn pcie_gen_from_speed(s: &str) -> Option<u32> {
    let gts: f64 = s.split_whitespace().next()?.parse().ok()?;
    [
        (2.5, 1),
        (5.0, 2),
        (8.0, 3),
        (16.0, 4),
        (32.0, 5),
        (64.0, 6),
    ]
    .iter()
    .find(|(v, _)| (gts - v).abs() < 0.01)
    .map(|&(_, g)| g)
}

fn num(s: &Option<String>) -> Option<u64> {
    s.as_deref()?.trim().parse().ok()
}

/// A width of 0 or 255 ("unknown" on some bridges) is no width.
fn width(s: &Option<String>) -> Option<u32> {
    num(s).map(|w| w as u32).filter(|&w| w > 0 && w <= 32)
}

/// True for an AMD device that looks like an APU: a small VRAM carve-out and a larger GTT.
pub fn looks_like_apu(g: &DetectedGpu) -> bool {
    g.vendor == Some(Vendor::Amd)
        && g.vram_total.0 <= 4 * GIB
        && g.gtt_total.is_some_and(|gtt| gtt > g.vram_total)
}

/// One AMD GPU from its sysfs values; `None` for other vendors or when amdgpu exposes no VRAM size.
pub fn gpu_from_sysfs(d: &DrmDevice, notes: &mut Vec<String>) -> Option<DetectedGpu> {
    if !d
        .vendor
        .as_deref()
        .is_some_and(|v| v.eq_ignore_ascii_case(VENDOR_AMD))
    {
        return None;
    }
    let name = match d
        .product_name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
    {
        Some(n) => n.to_string(),
        None => format!(
            "AMD GPU [1002:{}]",
            d.device.as_deref().unwrap_or("?").trim_start_matches("0x")
        ),
    };
    let Some(total) = num(&d.mem_info_vram_total) else {
        notes.push(format!(
            "AMD: {} ({name}): amdgpu reports no mem_info_vram_total; GPU skipped",
            d.card
        ));
        return None;
    };
    let used = num(&d.mem_info_vram_used).unwrap_or(0).min(total);
    let g = DetectedGpu {
        name: name.clone(),
        vendor: Some(Vendor::Amd),
        vram_total: Bytes(total),
        vram_free: Bytes(total - used),
        vram_used: Bytes(used),
        gtt_total: num(&d.mem_info_gtt_total).map(Bytes),
        pcie_gen: d
            .current_link_speed
            .as_deref()
            .and_then(pcie_gen_from_speed),
        pcie_width: width(&d.current_link_width),
        pcie_max_gen: d.max_link_speed.as_deref().and_then(pcie_gen_from_speed),
        pcie_max_width: width(&d.max_link_width),
        source: GpuSource::Sysfs,
        ..Default::default()
    };
    notes.push(format!(
        "AMD: {} ({name}) read from sysfs: partial (no memory clock, bus width or per-process use){}",
        d.card,
        if d.mem_info_vram_used.is_none() { "; VRAM in use unknown, taken as 0" } else { "" }
    ));
    if looks_like_apu(&g) {
        notes.push(format!(
            "AMD: {} looks like an APU: {} VRAM carve-out, {} GTT (system RAM the GPU can map) — sized as unified memory",
            d.card,
            g.vram_total,
            g.gtt_total.unwrap_or_default()
        ));
    }
    Some(g)
}

fn read(dir: &Path, file: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(file))
        .ok()
        .map(|s| s.trim().to_string())
}

/// Reads every `cardN` (not `cardN-DP-1` connectors, not `renderD*`) under `root/class/drm`,
/// sorted by N. A missing directory gives an empty list.
pub fn read_drm(root: &Path) -> Vec<DrmDevice> {
    let Ok(entries) = std::fs::read_dir(root.join("class/drm")) else {
        return Vec::new();
    };
    let mut cards: Vec<(u32, String)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let n: u32 = name.strip_prefix("card")?.parse().ok()?;
            Some((n, name))
        })
        .collect();
    cards.sort();
    cards
        .into_iter()
        .map(|(_, card)| {
            let dir = root.join("class/drm").join(&card).join("device");
            DrmDevice {
                vendor: read(&dir, "vendor"),
                device: read(&dir, "device"),
                product_name: read(&dir, "product_name"),
                mem_info_vram_total: read(&dir, "mem_info_vram_total"),
                mem_info_vram_used: read(&dir, "mem_info_vram_used"),
                mem_info_gtt_total: read(&dir, "mem_info_gtt_total"),
                current_link_speed: read(&dir, "current_link_speed"),
                current_link_width: read(&dir, "current_link_width"),
                max_link_speed: read(&dir, "max_link_speed"),
                max_link_width: read(&dir, "max_link_width"),
                card,
            }
        })
        .collect()
}

/// AMD GPUs from `devices`, plus notes on NVIDIA cards NVML did not read and on Intel graphics.
pub fn gpus_from_drm(
    devices: &[DrmDevice],
    nvml_gpus: usize,
    notes: &mut Vec<String>,
) -> Vec<DetectedGpu> {
    let mut out = Vec::new();
    for d in devices {
        let vendor = d.vendor.as_deref().unwrap_or("").to_ascii_lowercase();
        match vendor.as_str() {
            VENDOR_AMD => out.extend(gpu_from_sysfs(d, notes)),
            VENDOR_NVIDIA if nvml_gpus == 0 => notes.push(format!(
                "{}: an NVIDIA display device is present but NVML could not read it; it is not used for sizing",
                d.card
            )),
            VENDOR_INTEL => notes.push(format!("{}: Intel graphics present; not used for sizing", d.card)),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> Option<String> {
        Some(x.to_string())
    }

    #[test]
    fn link_speeds() {
        assert_eq!(pcie_gen_from_speed("16.0 GT/s PCIe"), Some(4));
        assert_eq!(pcie_gen_from_speed("8 GT/s"), Some(3));
        assert_eq!(pcie_gen_from_speed("2.5 GT/s PCIe"), Some(1));
        assert_eq!(pcie_gen_from_speed("32.0 GT/s PCIe"), Some(5));
        assert_eq!(pcie_gen_from_speed("Unknown"), None);
    }

    #[test]
    fn discrete_card() {
        let d = DrmDevice {
            card: "card1".into(),
            vendor: s("0x1002"),
            device: s("0x744c"),
            mem_info_vram_total: s("25753026560"),
            mem_info_vram_used: s("1134555136"),
            mem_info_gtt_total: s("16777216000"),
            current_link_speed: s("16.0 GT/s PCIe"),
            current_link_width: s("16"),
            max_link_speed: s("16.0 GT/s PCIe"),
            max_link_width: s("16"),
            ..Default::default()
        };
        let mut notes = Vec::new();
        let g = gpu_from_sysfs(&d, &mut notes).unwrap();
        assert_eq!(g.name, "AMD GPU [1002:744c]");
        assert_eq!(g.vram_free, Bytes(25_753_026_560 - 1_134_555_136));
        assert_eq!((g.pcie_gen, g.pcie_width), (Some(4), Some(16)));
        assert!(!looks_like_apu(&g));
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("partial"));
    }

    #[test]
    fn other_vendors_are_not_gpus_here() {
        let d = DrmDevice {
            card: "card0".into(),
            vendor: s("0x8086"),
            ..Default::default()
        };
        let mut notes = Vec::new();
        assert_eq!(gpu_from_sysfs(&d, &mut notes), None);
        assert!(gpus_from_drm(&[d], 0, &mut notes).is_empty());
        assert_eq!(
            notes,
            ["card0: Intel graphics present; not used for sizing"]
        );
    }
}
