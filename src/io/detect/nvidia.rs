//! NVIDIA GPUs through NVML (nvml-wrapper 0.13, feature `nvml`).
//!
//! The probe only reads: every NVML call's result goes into an [`NvmlReading`] (values or the
//! failure in words), and the pure [`gpu_from_nvml`] turns that into a [`DetectedGpu`] plus notes.
//! The library is `dlopen`ed at run time (`libnvidia-ml.so.1`, `nvml.dll`): a machine without the
//! driver gets `"NVML: not detected: …"`, never a panic.

use super::{DetectedGpu, GpuProcess, GpuSource};
use crate::core::catalog::Vendor;
use crate::core::units::Bytes;

/// What NVML said about one GPU: each value, or why it could not be read.
#[derive(Clone, Debug, PartialEq)]
pub struct NvmlReading {
    pub index: u32,
    pub name: Result<String, String>,
    /// (total, free, used) bytes, from `nvmlDeviceGetMemoryInfo_v2`.
    pub memory: Result<(u64, u64, u64), String>,
    pub pcie_gen: Result<u32, String>,
    pub pcie_width: Result<u32, String>,
    pub pcie_max_gen: Result<u32, String>,
    pub pcie_max_width: Result<u32, String>,
    /// Bits.
    pub memory_bus_width: Result<u32, String>,
    /// `nvmlDeviceGetMaxClockInfo(NVML_CLOCK_MEM)`, MHz.
    pub max_memory_clock_mhz: Result<u32, String>,
    pub processes: Result<Vec<GpuProcess>, String>,
}

impl NvmlReading {
    /// A reading where everything failed with `why` (for tests and for a device that vanished).
    pub fn failed(index: u32, why: &str) -> Self {
        fn e<T>(why: &str) -> Result<T, String> {
            Err(why.to_string())
        }
        NvmlReading {
            index,
            name: e(why),
            memory: e(why),
            pcie_gen: e(why),
            pcie_width: e(why),
            pcie_max_gen: e(why),
            pcie_max_width: e(why),
            memory_bus_width: e(why),
            max_memory_clock_mhz: e(why),
            processes: e(why),
        }
    }
}

/// Peak memory bandwidth in GB/s from NVML's bus width and maximum memory clock:
///
/// `bandwidth = bus_width_bits / 8 × clock_MHz × 10^6 × 2 / 10^9`
///
/// The × 2 is the double data rate. NVML's "memory clock" is already scaled so that this one
/// formula holds for GDDR6, GDDR6X, GDDR7 and HBM2e/HBM3 alike (data-rate factor 1), e.g.
/// RTX 4090 384 bit × 10501 MHz → 1008 GB/s; T4 256 bit × 5001 MHz → 320 GB/s;
/// A100 80GB SXM 5120 bit × 1593 MHz → 2039 GB/s; H100 SXM 5120 bit × 2619 MHz → 3352 GB/s.
/// It is still a derived number (some boards report a clock their memory never runs at), so the
/// catalog value is preferred whenever the GPU matched.
pub fn bandwidth_gbs(bus_width_bits: u32, max_memory_clock_mhz: u32) -> Option<f64> {
    if bus_width_bits == 0 || max_memory_clock_mhz == 0 {
        return None;
    }
    Some(bus_width_bits as f64 / 8.0 * max_memory_clock_mhz as f64 * 1e6 * 2.0 / 1e9)
}

/// NVML's CUDA driver version integer (`1000 × major + 10 × minor`) as "12.4".
pub fn format_cuda_version(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// A 0 from NVML means "not reported"; keep it out of the data.
fn nonzero(r: &Result<u32, String>) -> Option<u32> {
    r.as_ref().ok().copied().filter(|&v| v > 0)
}

/// Converts one reading. Each unreadable value adds a note `"NVML: GPU i (name): … not readable: why"`.
pub fn gpu_from_nvml(
    r: NvmlReading,
    driver_version: Option<&str>,
    cuda_version: Option<&str>,
    notes: &mut Vec<String>,
) -> DetectedGpu {
    let name = match &r.name {
        Ok(n) => n.trim().to_string(),
        Err(_) => format!("NVIDIA GPU {}", r.index),
    };
    let label = format!("NVML: GPU {} ({name})", r.index);
    let mut missing = |what: &str, res: Result<(), &String>| {
        if let Err(why) = res {
            notes.push(format!("{label}: {what} not readable: {why}"));
        }
    };
    missing("name", r.name.as_ref().map(|_| ()));
    missing("memory", r.memory.as_ref().map(|_| ()));
    missing(
        "current PCIe link",
        r.pcie_gen.as_ref().and(r.pcie_width.as_ref()).map(|_| ()),
    );
    missing(
        "maximum PCIe link",
        r.pcie_max_gen
            .as_ref()
            .and(r.pcie_max_width.as_ref())
            .map(|_| ()),
    );
    missing("memory bus width", r.memory_bus_width.as_ref().map(|_| ()));
    missing(
        "maximum memory clock",
        r.max_memory_clock_mhz.as_ref().map(|_| ()),
    );
    missing("processes", r.processes.as_ref().map(|_| ()));

    let (total, free, used) = r.memory.clone().unwrap_or((0, 0, 0));
    let bus = nonzero(&r.memory_bus_width);
    let clock = nonzero(&r.max_memory_clock_mhz);
    DetectedGpu {
        name,
        vendor: Some(Vendor::Nvidia),
        vram_total: Bytes(total),
        vram_free: Bytes(free.min(total)),
        vram_used: Bytes(used.min(total)),
        gtt_total: None,
        pcie_gen: nonzero(&r.pcie_gen),
        pcie_width: nonzero(&r.pcie_width),
        pcie_max_gen: nonzero(&r.pcie_max_gen),
        pcie_max_width: nonzero(&r.pcie_max_width),
        memory_bus_width: bus,
        max_memory_clock_mhz: clock,
        bandwidth_gbs: bus.zip(clock).and_then(|(b, c)| bandwidth_gbs(b, c)),
        driver_version: driver_version.map(str::to_string),
        cuda_version: cuda_version.map(str::to_string),
        processes: r.processes.unwrap_or_default(),
        matched: None,
        source: GpuSource::Nvml,
    }
}

/// The one summary note NVML leaves when it worked: "NVML: 2 GPUs (driver 550.54.14, CUDA 12.4)".
pub fn summary_note(
    count: usize,
    driver_version: Option<&str>,
    cuda_version: Option<&str>,
) -> String {
    let mut s = format!("NVML: {count} GPU{}", if count == 1 { "" } else { "s" });
    let parts: Vec<String> = [
        driver_version.map(|d| format!("driver {d}")),
        cuda_version.map(|c| format!("CUDA {c}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !parts.is_empty() {
        s.push_str(&format!(" ({})", parts.join(", ")));
    }
    s
}

/// What the probe got from NVML's library-level calls: each failure in words, or one entry per
/// GPU index. The probe fills it; [`gpus_from_probe`] (pure) turns it into GPUs and notes, so every
/// NVML failure can be injected in tests.
#[derive(Clone, Debug, PartialEq)]
pub enum NvmlProbe {
    /// `nvmlInit` failed (no driver, no library, no permission): why.
    InitFailed(String),
    /// `nvmlDeviceGetCount` failed: why.
    CountFailed(String),
    /// The driver answered: its versions when readable, and per GPU index the reading or why
    /// `nvmlDeviceGetHandleByIndex` failed (a GPU that fell off the bus after the count).
    Devices {
        driver: Option<String>,
        cuda: Option<String>,
        devices: Vec<Result<NvmlReading, String>>,
    },
}

/// The GPUs and notes of one probe. Always exactly one summary note starting with `"NVML: "`
/// (not `"NVML: GPU"`), then one note per value that could not be read.
pub fn gpus_from_probe(p: NvmlProbe, notes: &mut Vec<String>) -> Vec<DetectedGpu> {
    let (driver, cuda, devices) = match p {
        NvmlProbe::InitFailed(why) => {
            notes.push(format!("NVML: not detected: {why}"));
            return Vec::new();
        }
        NvmlProbe::CountFailed(why) => {
            notes.push(format!("NVML: not detected: could not count GPUs: {why}"));
            return Vec::new();
        }
        NvmlProbe::Devices {
            driver,
            cuda,
            devices,
        } => (driver, cuda, devices),
    };
    let count = devices.len();
    if count == 0 {
        notes.push("NVML: not detected: the NVIDIA driver is loaded but reports no GPUs".into());
        return Vec::new();
    }
    let mut gpus = Vec::new();
    let mut detail = Vec::new();
    for (i, d) in devices.into_iter().enumerate() {
        match d {
            Ok(reading) => gpus.push(gpu_from_nvml(
                reading,
                driver.as_deref(),
                cuda.as_deref(),
                &mut detail,
            )),
            Err(why) => detail.push(format!("NVML: GPU {i}: not readable: {why}")),
        }
    }
    if gpus.is_empty() {
        notes.push(format!(
            "NVML: not detected: the driver lists {count} GPU(s) but none could be read"
        ));
    } else {
        notes.push(summary_note(gpus.len(), driver.as_deref(), cuda.as_deref()));
    }
    notes.extend(detail);
    gpus
}

/// Merges compute and graphics process lists (a process can be in both), keeping the larger figure.
pub fn merge_processes(lists: impl IntoIterator<Item = GpuProcess>) -> Vec<GpuProcess> {
    let mut out: Vec<GpuProcess> = Vec::new();
    for p in lists {
        match out.iter_mut().find(|q| q.pid == p.pid) {
            Some(q) => {
                q.used = q.used.max(p.used);
                if q.name.is_none() {
                    q.name = p.name;
                }
            }
            None => out.push(p),
        }
    }
    out.sort_by_key(|p| std::cmp::Reverse(p.used));
    out
}

#[cfg(feature = "nvml")]
pub(crate) use probe::probe;

#[cfg(not(feature = "nvml"))]
pub(crate) fn probe(notes: &mut Vec<String>) -> Vec<DetectedGpu> {
    notes.push("NVML: not detected: this build of headroom has NVIDIA detection turned off (Cargo feature `nvml`)".into());
    Vec::new()
}

#[cfg(feature = "nvml")]
mod probe {
    use super::*;
    use nvml_wrapper::Nvml;
    use nvml_wrapper::enum_wrappers::device::Clock;
    use nvml_wrapper::enums::device::UsedGpuMemory;
    use nvml_wrapper::error::NvmlError;

    /// Why NVML failed, in plain words first and NVML's own text after.
    pub(crate) fn nvml_reason(e: &NvmlError) -> String {
        let plain = match e {
            NvmlError::LibloadingError(_) => {
                "the NVIDIA driver library (libnvidia-ml) is not installed or could not be loaded"
            }
            NvmlError::FailedToLoadSymbol(_) | NvmlError::FunctionNotFound => {
                "the installed NVIDIA driver is too old for this query"
            }
            NvmlError::DriverNotLoaded => "the NVIDIA kernel driver is not loaded",
            NvmlError::NoPermission => "permission denied talking to the NVIDIA driver",
            NvmlError::LibRmVersionMismatch => {
                "the NVIDIA driver and its library have different versions (reboot after a driver update)"
            }
            NvmlError::NotSupported => "not supported on this GPU",
            NvmlError::GpuLost => "the GPU fell off the bus",
            NvmlError::OperatingSystem => "blocked by the operating system or a container",
            NvmlError::InsufficientPower => "the GPU's power cables are not properly attached",
            NvmlError::ResetRequired => "the GPU needs a reset",
            NvmlError::Uninitialized => "NVML was not initialised",
            NvmlError::Timeout => "the driver did not answer in time",
            _ => "NVML returned an error",
        };
        format!("{plain} ({e})")
    }

    fn r<T>(x: Result<T, NvmlError>) -> Result<T, String> {
        x.map_err(|e| nvml_reason(&e))
    }

    fn process_name(nvml: &Nvml, pid: u32) -> Option<String> {
        if let Ok(n) = nvml.sys_process_name(pid, 256)
            && !n.trim().is_empty()
        {
            return Some(n.trim().to_string());
        }
        std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    }

    fn processes(nvml: &Nvml, dev: &nvml_wrapper::Device<'_>) -> Result<Vec<GpuProcess>, String> {
        let compute = dev.running_compute_processes();
        let graphics = dev.running_graphics_processes();
        if let (Err(e), Err(_)) = (&compute, &graphics) {
            return Err(nvml_reason(e));
        }
        let all = compute
            .unwrap_or_default()
            .into_iter()
            .chain(graphics.unwrap_or_default());
        Ok(merge_processes(all.map(|p| GpuProcess {
            pid: p.pid,
            name: process_name(nvml, p.pid),
            used: match p.used_gpu_memory {
                UsedGpuMemory::Used(b) => Some(Bytes(b)),
                UsedGpuMemory::Unavailable => None,
            },
        })))
    }

    pub(crate) fn probe(notes: &mut Vec<String>) -> Vec<DetectedGpu> {
        gpus_from_probe(read(), notes)
    }

    fn read() -> NvmlProbe {
        let nvml = match Nvml::init() {
            Ok(n) => n,
            Err(e) => return NvmlProbe::InitFailed(nvml_reason(&e)),
        };
        let count = match nvml.device_count() {
            Ok(c) => c,
            Err(e) => return NvmlProbe::CountFailed(nvml_reason(&e)),
        };
        let driver = nvml.sys_driver_version().ok();
        let cuda = nvml.sys_cuda_driver_version().ok().map(format_cuda_version);
        let devices = (0..count)
            .map(|i| {
                nvml.device_by_index(i)
                    .map(|dev| NvmlReading {
                        index: i,
                        name: r(dev.name()),
                        memory: r(dev.memory_info().map(|m| (m.total, m.free, m.used))),
                        pcie_gen: r(dev.current_pcie_link_gen()),
                        pcie_width: r(dev.current_pcie_link_width()),
                        pcie_max_gen: r(dev.max_pcie_link_gen()),
                        pcie_max_width: r(dev.max_pcie_link_width()),
                        memory_bus_width: r(dev.memory_bus_width()),
                        max_memory_clock_mhz: r(dev.max_clock_info(Clock::Memory)),
                        processes: processes(&nvml, &dev),
                    })
                    .map_err(|e| nvml_reason(&e))
            })
            .collect();
        NvmlProbe::Devices {
            driver,
            cuda,
            devices,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An RTX 4090 as NVML reports it on a desktop with a display attached.
    fn rtx4090() -> NvmlReading {
        NvmlReading {
            index: 0,
            name: Ok("NVIDIA GeForce RTX 4090".into()),
            memory: Ok((25_757_220_864, 24_121_442_304, 1_180_171_264)),
            pcie_gen: Ok(1), // idle link power saving
            pcie_width: Ok(16),
            pcie_max_gen: Ok(4),
            pcie_max_width: Ok(16),
            memory_bus_width: Ok(384),
            max_memory_clock_mhz: Ok(10501),
            processes: Ok(vec![
                GpuProcess {
                    pid: 1432,
                    name: Some("Xorg".into()),
                    used: Some(Bytes::mib(412)),
                },
                GpuProcess {
                    pid: 2210,
                    name: None,
                    used: None,
                },
            ]),
        }
    }

    #[test]
    fn rtx4090_converts() {
        let mut notes = Vec::new();
        let g = gpu_from_nvml(rtx4090(), Some("550.54.14"), Some("12.4"), &mut notes);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(g.vram_total, Bytes(25_757_220_864));
        assert_eq!(g.vram_free, Bytes(24_121_442_304));
        assert_eq!(
            (g.pcie_gen, g.pcie_width, g.pcie_max_gen, g.pcie_max_width),
            (Some(1), Some(16), Some(4), Some(16))
        );
        let bw = g.bandwidth_gbs.unwrap();
        assert!((bw - 1008.1).abs() < 0.1, "{bw}");
        assert_eq!(g.processes.len(), 2);
        assert_eq!(g.driver_version.as_deref(), Some("550.54.14"));
    }

    #[test]
    fn bandwidth_formula_matches_datasheets() {
        for (bus, clk, want) in [
            (384, 10501, 1008.0),
            (256, 5001, 320.0),
            (5120, 1593, 2039.0),
            (5120, 2619, 3352.0),
            (512, 14001, 1792.0),
        ] {
            let got = bandwidth_gbs(bus, clk).unwrap();
            assert!(
                (got - want).abs() / want < 0.002,
                "{bus} bit × {clk} MHz: {got} vs {want}"
            );
        }
        assert_eq!(bandwidth_gbs(0, 10501), None);
    }

    #[test]
    fn cuda_versions() {
        assert_eq!(format_cuda_version(12040), "12.4");
        assert_eq!(format_cuda_version(11080), "11.8");
        assert_eq!(format_cuda_version(12090), "12.9");
        assert_eq!(format_cuda_version(13000), "13.0");
    }

    #[test]
    fn failures_become_notes() {
        let mut notes = Vec::new();
        let mut reading = rtx4090();
        reading.memory_bus_width = Err("not supported on this GPU".into());
        reading.processes = Err("permission denied".into());
        let g = gpu_from_nvml(reading, None, None, &mut notes);
        assert_eq!(g.bandwidth_gbs, None);
        assert!(g.processes.is_empty());
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].starts_with(
                "NVML: GPU 0 (NVIDIA GeForce RTX 4090): memory bus width not readable"
            ),
            "{notes:?}"
        );

        let mut notes = Vec::new();
        let g = gpu_from_nvml(
            NvmlReading::failed(1, "the GPU fell off the bus"),
            None,
            None,
            &mut notes,
        );
        assert_eq!(g.name, "NVIDIA GPU 1");
        assert_eq!(g.vram_total, Bytes::ZERO);
        assert_eq!(notes.len(), 7);
        assert!(notes.iter().all(|n| n.starts_with("NVML: GPU 1")));
    }

    #[test]
    fn processes_merge() {
        let p = |pid, used: u64| GpuProcess {
            pid,
            name: None,
            used: Some(Bytes::mib(used)),
        };
        let m = merge_processes([p(1, 100), p(2, 900), p(1, 300)]);
        assert_eq!(m, vec![p(2, 900), p(1, 300)]);
    }

    #[test]
    fn summary() {
        assert_eq!(
            summary_note(1, Some("550.54.14"), Some("12.4")),
            "NVML: 1 GPU (driver 550.54.14, CUDA 12.4)"
        );
        assert_eq!(summary_note(8, None, None), "NVML: 8 GPUs");
    }

    #[cfg(feature = "nvml")]
    #[test]
    fn reasons_are_plain_words() {
        use super::probe::nvml_reason;
        use nvml_wrapper::error::NvmlError;
        assert!(
            nvml_reason(&NvmlError::DriverNotLoaded)
                .starts_with("the NVIDIA kernel driver is not loaded")
        );
        assert!(nvml_reason(&NvmlError::NoPermission).starts_with("permission denied"));
        assert!(nvml_reason(&NvmlError::LibRmVersionMismatch).contains("reboot"));
    }
}
