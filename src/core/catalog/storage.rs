//! A machine's disk: the kinds of drive with a typical drive's sustained sequential read rate and
//! the interface limit, each with its source; a machine's [`Storage`] from the catalog or, where
//! an entry has none, the default for its kind ([`default_storage`]). Our reasoning behind the
//! defaults is in `docs/storage.md`; the disk tier that reads from it is
//! `core::placement::disk`.

use super::{Accelerator, Machine, MachineKind, PcieLink, Vendor};
use crate::core::format;
use crate::core::units::{Bytes, GbPerSec, size_str};
use serde::{Deserialize, Serialize};

/// What a machine's model folder sits on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StorageKind {
    /// A spinning disk.
    Hdd,
    /// A SATA SSD.
    Sata,
    /// NVMe SSD on PCIe 3.0 x4.
    NvmeGen3,
    /// NVMe SSD on PCIe 4.0 x4.
    NvmeGen4,
    /// NVMe SSD on PCIe 5.0 x4.
    NvmeGen5,
    /// Apple's internal SSD (M-series Macs).
    AppleInternal,
    /// A cloud instance's local NVMe (instance store / local SSD), per device.
    CloudLocalNvme,
    /// Network block storage (AWS EBS gp3, GCP Persistent Disk): throughput-capped.
    NetworkBlock,
}

impl StorageKind {
    pub const ALL: [StorageKind; 8] = [
        StorageKind::Hdd,
        StorageKind::Sata,
        StorageKind::NvmeGen3,
        StorageKind::NvmeGen4,
        StorageKind::NvmeGen5,
        StorageKind::AppleInternal,
        StorageKind::CloudLocalNvme,
        StorageKind::NetworkBlock,
    ];

    pub const fn label(self) -> &'static str {
        match self {
            StorageKind::Hdd => "hard disk",
            StorageKind::Sata => "SATA SSD",
            StorageKind::NvmeGen3 => "NVMe PCIe 3.0",
            StorageKind::NvmeGen4 => "NVMe PCIe 4.0",
            StorageKind::NvmeGen5 => "NVMe PCIe 5.0",
            StorageKind::AppleInternal => "Apple internal SSD",
            StorageKind::CloudLocalNvme => "local NVMe (instance store)",
            StorageKind::NetworkBlock => "network block storage",
        }
    }

    /// Sustained sequential read of a typical drive of this kind, GB/s (see [`Self::source`]).
    pub const fn typical_read(self) -> GbPerSec {
        GbPerSec(match self {
            StorageKind::Hdd => 0.25,
            StorageKind::Sata => 0.55,
            StorageKind::NvmeGen3 => 3.5,
            StorageKind::NvmeGen4 => 7.0,
            StorageKind::NvmeGen5 => 14.5,
            StorageKind::AppleInternal => 7.4,
            StorageKind::CloudLocalNvme => 6.5,
            StorageKind::NetworkBlock => GP3_BASELINE_GBS,
        })
    }

    /// What the interface itself can carry, one direction, GB/s: SATA 6 Gb/s with 8b/10b
    /// encoding = 0.6 GB/s (SATA-IO revision 3.0); NVMe on four PCIe lanes ([`PcieLink`]).
    pub fn interface_limit(self) -> Option<GbPerSec> {
        let x4 = |generation| PcieLink {
            generation,
            lanes: 4,
        };
        match self {
            StorageKind::Sata => Some(GbPerSec(0.6)),
            StorageKind::NvmeGen3 => Some(x4(3).bandwidth()),
            StorageKind::NvmeGen4 => Some(x4(4).bandwidth()),
            StorageKind::NvmeGen5 => Some(x4(5).bandwidth()),
            StorageKind::NetworkBlock => Some(GbPerSec(GP3_MAX_GBS)),
            _ => None,
        }
    }

    /// Where [`Self::typical_read`] comes from.
    pub const fn source(self) -> &'static str {
        match self {
            StorageKind::Hdd => {
                "Seagate IronWolf Pro datasheet: max. sustained transfer rate 214–285 MB/s (https://www.seagate.com/products/nas-drives/ironwolf-pro-hard-drive/)"
            }
            StorageKind::Sata => {
                "Samsung 870 EVO: sequential read up to 560 MB/s (https://semiconductor.samsung.com/consumer-storage/internal-ssd/870evo/); SATA 6 Gb/s carries 600 MB/s"
            }
            StorageKind::NvmeGen3 => {
                "Samsung 970 EVO Plus: sequential read up to 3,500 MB/s (https://semiconductor.samsung.com/consumer-storage/internal-ssd/970evoplus/); PCIe 3.0 x4 carries 3.94 GB/s"
            }
            StorageKind::NvmeGen4 => {
                "Samsung 980 PRO 7,000 MB/s, 990 PRO 7,450 MB/s sequential read (https://semiconductor.samsung.com/consumer-storage/internal-ssd/990-pro/); PCIe 4.0 x4 carries 7.88 GB/s"
            }
            StorageKind::NvmeGen5 => {
                "Crucial T705 14,500 MB/s, Samsung 9100 PRO 14,700 MB/s sequential read (https://semiconductor.samsung.com/consumer-storage/internal-ssd/9100-pro/); PCIe 5.0 x4 carries 15.75 GB/s"
            }
            StorageKind::AppleInternal => {
                "Apple: MacBook Pro (M1 Pro/Max) SSD read up to 7.4 GB/s (https://www.apple.com/newsroom/2021/10/introducing-the-new-macbook-pro/); smaller configurations read slower"
            }
            StorageKind::CloudLocalNvme => {
                "DeepSpeedExamples deepnvme/zero_inference/README.md: Azure H100 VM NVMes at ~6.5 GB/s read each; clouds publish IOPS, not GB/s, for instance stores"
            }
            StorageKind::NetworkBlock => {
                "AWS EBS gp3: baseline 125 MiB/s, up to 1,000 MiB/s provisioned (https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html)"
            }
        }
    }
}

/// AWS EBS gp3 baseline throughput, 125 MiB/s in GB/s.
pub const GP3_BASELINE_GBS: f64 = 125.0 * 1_048_576.0 / 1e9;
/// AWS EBS gp3 provisioned maximum, 1,000 MiB/s in GB/s.
pub const GP3_MAX_GBS: f64 = 1000.0 * 1_048_576.0 / 1e9;

/// A machine's disk: where the model file sits and, for ZeRO-Infinity, `nvme_path`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Storage {
    /// Capacity ("1 TiB").
    #[serde(with = "size_str")]
    pub capacity: Bytes,
    pub kind: StorageKind,
    /// Sustained sequential read, GB/s, when known for this drive (else the kind's typical rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_gbs: Option<f64>,
    /// Free space (detected machines only).
    #[serde(
        default,
        with = "size_str::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub free: Option<Bytes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl Storage {
    pub fn new(kind: StorageKind, capacity: Bytes) -> Storage {
        Storage {
            capacity,
            kind,
            read_gbs: None,
            free: None,
            source: None,
        }
    }
    /// The sustained read rate used: the drive's own figure or its kind's, never above the
    /// interface.
    pub fn read(&self) -> GbPerSec {
        let r = self
            .read_gbs
            .filter(|x| x.is_finite() && *x > 0.0)
            .unwrap_or(self.kind.typical_read().0);
        GbPerSec(match self.kind.interface_limit() {
            Some(l) => r.min(l.0),
            None => r,
        })
    }
    /// "7.00 GB/s".
    pub fn describe_rate(&self) -> String {
        format!("{} GB/s", format::rate(self.read().0))
    }
    /// Room for model files: the free space where known, else the capacity.
    pub fn room(&self) -> Bytes {
        self.free.unwrap_or(self.capacity)
    }
    /// "NVMe PCIe 4.0, 1.00 TiB, 7.00 GB/s".
    pub fn describe(&self) -> String {
        format!(
            "{}, {}, {}",
            self.kind.label(),
            format::bytes(self.capacity),
            self.describe_rate()
        )
    }
}

/// The disk a machine of `kind` has when its catalog entry names none (docs/storage.md): laptops
/// and mini PCs a 1 TB PCIe 4.0 NVMe, desktops 2 TB, workstations 4 TB, Apple machines their
/// internal SSD (1 TB), cloud instances a 1 TiB network volume at the gp3 baseline.
pub fn default_storage(kind: MachineKind, apple: bool) -> Storage {
    let (k, cap) = match kind {
        _ if apple => (StorageKind::AppleInternal, Bytes::gb(1000)),
        MachineKind::Apple => (StorageKind::AppleInternal, Bytes::gb(1000)),
        MachineKind::Laptop | MachineKind::MiniPc => (StorageKind::NvmeGen4, Bytes::gb(1000)),
        MachineKind::Desktop => (StorageKind::NvmeGen4, Bytes::gb(2000)),
        MachineKind::Workstation => (StorageKind::NvmeGen4, Bytes::gb(4000)),
        MachineKind::Cloud => (StorageKind::NetworkBlock, Bytes::gib(1024)),
    };
    Storage {
        source: Some("default for the machine kind (docs/storage.md)".into()),
        ..Storage::new(k, cap)
    }
}

/// Sequential read of the internal SSD of a Mac with a base M-series chip (M1, M2, …: not
/// Pro, Max or Ultra), GB/s: an M1 MacBook Air (256 GB) reads 2,675 MB/s in Blackmagic Disk
/// Speed Test (MacRumors, "Apple Silicon M1 MacBook Air SSD Really Is Twice as Fast as Previous
/// Model", 2020-11-16, https://www.macrumors.com/2020/11/16/apple-silicon-macbook-air-ssd-benchmarks/),
/// against the "up to 7.4 GB/s" Apple gives for the Pro and Max machines
/// ([`StorageKind::AppleInternal`]'s typical rate).
pub const APPLE_BASE_CHIP_SSD_READ_GBS: f64 = 2.675;

/// Whether `acc` is a base M-series chip (`apple-m1` … `apple-m5`), whose Macs ship the slower
/// internal SSD ([`APPLE_BASE_CHIP_SSD_READ_GBS`]).
fn apple_base_chip(acc: &Accelerator) -> bool {
    acc.vendor == Vendor::Apple
        && acc.id.strip_prefix("apple-m").is_some_and(|generation| {
            !generation.is_empty() && generation.bytes().all(|b| b.is_ascii_digit())
        })
}

/// The machine's disk: its catalog entry, else the default for its kind (a base-chip Mac's
/// internal SSD at its measured rate).
pub fn storage_of(m: &Machine, acc: Option<&Accelerator>) -> Storage {
    match &m.storage {
        Some(s) => s.clone(),
        None => {
            let mut s = default_storage(m.kind, acc.is_some_and(|a| a.vendor == Vendor::Apple));
            if acc.is_some_and(apple_base_chip) {
                s.read_gbs = Some(APPLE_BASE_CHIP_SSD_READ_GBS);
            }
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_stay_under_the_interface() {
        for k in StorageKind::ALL {
            let s = Storage::new(k, Bytes::gib(1));
            if let Some(l) = k.interface_limit() {
                assert!(s.read().0 <= l.0 + 1e-9, "{k:?}");
            }
            assert!(s.read().0 > 0.0);
        }
        // A drive faster than its link is held to the link: PCIe 3.0 x4 = 3.94 GB/s.
        let fast = Storage {
            read_gbs: Some(7.0),
            ..Storage::new(StorageKind::NvmeGen3, Bytes::gib(1))
        };
        assert!((fast.read().0 - 3.938).abs() < 0.01);
        // gp3 baseline: 125 MiB/s = 0.131 GB/s.
        assert!((GP3_BASELINE_GBS - 0.131_072).abs() < 1e-6);
    }
}
