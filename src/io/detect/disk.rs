//! The disk behind the model folder: sysinfo's disk list (kind SSD/HDD, size, free space), the
//! mount point that is the longest prefix of the folder, and on Linux the NVMe controller's PCIe
//! link speed from sysfs (`/sys/class/nvme/<ctrl>/device/current_link_speed`, "16.0 GT/s PCIe")
//! to tell PCIe 3.0/4.0/5.0 drives apart. No read probe: a quick read measures the page cache, not
//! the drive (docs/storage.md).

use crate::core::catalog::{Storage, StorageKind};
use crate::core::units::Bytes;
use std::path::{Path, PathBuf};

/// What sysinfo says about one disk, reduced to what the conversion needs.
#[derive(Clone, Debug, PartialEq)]
pub struct DiskFacts {
    /// Device name ("/dev/nvme0n1p2", "disk3s1").
    pub name: String,
    pub mount: PathBuf,
    /// `Some(true)` SSD, `Some(false)` HDD, `None` unknown.
    pub ssd: Option<bool>,
    pub total: Bytes,
    pub free: Bytes,
}

/// The disk whose mount point is the longest prefix of `path`.
pub fn disk_for<'a>(disks: &'a [DiskFacts], path: &Path) -> Option<&'a DiskFacts> {
    disks
        .iter()
        .filter(|d| path.starts_with(&d.mount))
        .max_by_key(|d| d.mount.as_os_str().len())
}

/// PCIe generation from a sysfs link speed: 8 GT/s → 3, 16 → 4, 32 → 5 (PCI-SIG rates).
pub fn nvme_kind_from_link_speed(s: &str) -> Option<StorageKind> {
    let gts: f64 = s.split_whitespace().next()?.parse().ok()?;
    Some(match gts {
        x if x >= 30.0 => StorageKind::NvmeGen5,
        x if x >= 15.0 => StorageKind::NvmeGen4,
        _ => StorageKind::NvmeGen3,
    })
}

/// The NVMe controller of a device name: "/dev/nvme0n1p2" → "nvme0".
pub fn nvme_controller(name: &str) -> Option<String> {
    let base = name.rsplit('/').next()?;
    let rest = base.strip_prefix("nvme")?;
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    (!digits.is_empty()).then(|| format!("nvme{digits}"))
}

/// One disk as catalog storage. `link_speed`: the NVMe controller's sysfs link speed, if read.
pub fn storage_from(
    d: &DiskFacts,
    apple: bool,
    link_speed: Option<&str>,
    notes: &mut Vec<String>,
) -> Storage {
    let nvme = nvme_controller(&d.name).is_some();
    let kind = match d.ssd {
        Some(false) => StorageKind::Hdd,
        _ if apple => StorageKind::AppleInternal,
        _ if nvme => match link_speed.and_then(nvme_kind_from_link_speed) {
            Some(k) => k,
            None => {
                notes.push(
                    "Disk: NVMe link speed not readable; assuming PCIe 3.0 (3.5 GB/s)".into(),
                );
                StorageKind::NvmeGen3
            }
        },
        Some(true) => StorageKind::Sata,
        None => {
            notes.push(format!(
                "Disk: the kind of {} is unknown; assuming a SATA SSD (0.55 GB/s)",
                d.name
            ));
            StorageKind::Sata
        }
    };
    Storage {
        capacity: d.total,
        kind,
        read_gbs: None,
        free: Some(d.free),
        source: Some(format!(
            "detected: {} mounted at {} ({} free); read rate is the kind's typical figure",
            d.name,
            d.mount.display(),
            crate::core::format::bytes(d.free)
        )),
    }
}

/// This machine's disk behind `path` (the current folder when `None`).
pub fn probe(path: Option<&Path>, apple: bool, notes: &mut Vec<String>) -> Option<Storage> {
    let here = match path {
        Some(p) => p.to_path_buf(),
        None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
    };
    let list = match sysinfo::Disks::new_with_refreshed_list() {
        Ok(l) => l,
        Err(e) => {
            notes.push(format!(
                "Disk: cannot list disks ({e}); using the machine kind's default"
            ));
            return None;
        }
    };
    let facts: Vec<DiskFacts> = list
        .iter()
        .map(|d| DiskFacts {
            name: d.name().to_string_lossy().into_owned(),
            mount: d.mount_point().to_path_buf(),
            ssd: match d.kind() {
                sysinfo::DiskKind::SSD => Some(true),
                sysinfo::DiskKind::HDD => Some(false),
                _ => None,
            },
            total: Bytes(d.total_space()),
            free: Bytes(d.available_space()),
        })
        .collect();
    let Some(d) = disk_for(&facts, &here) else {
        notes.push(format!(
            "Disk: no mounted disk found for {}; using the machine kind's default",
            here.display()
        ));
        return None;
    };
    let link = nvme_controller(&d.name).and_then(|c| {
        std::fs::read_to_string(format!("/sys/class/nvme/{c}/device/current_link_speed")).ok()
    });
    Some(storage_from(d, apple, link.as_deref(), notes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(name: &str, mount: &str, ssd: Option<bool>) -> DiskFacts {
        DiskFacts {
            name: name.into(),
            mount: mount.into(),
            ssd,
            total: Bytes::gb(1000),
            free: Bytes::gb(400),
        }
    }

    #[test]
    fn longest_mount_prefix_wins() {
        let d = [
            facts("/dev/sda1", "/", Some(true)),
            facts("/dev/nvme0n1p1", "/home", Some(true)),
        ];
        let got = disk_for(&d, Path::new("/home/me/models")).unwrap();
        assert_eq!(got.name, "/dev/nvme0n1p1");
        assert_eq!(disk_for(&d, Path::new("/opt")).unwrap().name, "/dev/sda1");
    }

    #[test]
    fn kinds_from_name_and_link() {
        let mut n = Vec::new();
        let nv = facts("/dev/nvme1n1p3", "/", Some(true));
        assert_eq!(nvme_controller(&nv.name).as_deref(), Some("nvme1"));
        let s = storage_from(&nv, false, Some("16.0 GT/s PCIe\n"), &mut n);
        assert_eq!(s.kind, StorageKind::NvmeGen4);
        assert_eq!(s.free, Some(Bytes::gb(400)));
        assert_eq!(
            storage_from(&nv, false, Some("32.0 GT/s PCIe"), &mut n).kind,
            StorageKind::NvmeGen5
        );
        assert!(n.is_empty());
        assert_eq!(
            storage_from(&nv, false, None, &mut n).kind,
            StorageKind::NvmeGen3
        );
        assert_eq!(n.len(), 1, "unknown link speed is said");
        let sata = facts("/dev/sda1", "/", Some(true));
        assert_eq!(
            storage_from(&sata, false, None, &mut n).kind,
            StorageKind::Sata
        );
        let hdd = facts("/dev/sdb1", "/", Some(false));
        assert_eq!(
            storage_from(&hdd, false, None, &mut n).kind,
            StorageKind::Hdd
        );
        let mac = facts("disk3s1", "/", Some(true));
        assert_eq!(
            storage_from(&mac, true, None, &mut n).kind,
            StorageKind::AppleInternal
        );
    }
}
