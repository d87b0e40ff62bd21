//! How a machine's GPUs talk to each other ([`Fabric`]: NVSwitch, NVLink bridges, PCIe) and how
//! the machine talks to other machines ([`Network`]: EFA, InfiniBand, RoCE, Ethernet,
//! Thunderbolt), each from the catalog with its source; where a machine states none, the
//! default for its kind ([`network_of`], [`fabric_of`]) is used and marked assumed. The home
//! links a user names for a cluster of their own machines are [`LinkPreset`]s. The cluster
//! planner (`core::cluster`) reads these to time its collectives and pipeline sends.

use super::{Accelerator, Machine, MachineKind};
use serde::{Deserialize, Serialize};

/// How the GPUs inside one machine are connected.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FabricKind {
    /// Every GPU reaches every other at full NVLink bandwidth through NVSwitch (HGX/DGX boards).
    NvSwitch,
    /// NVLink bridges between pairs of cards (RTX 3090, A6000, H100 NVL): full speed only
    /// inside a pair, PCIe between pairs.
    NvLinkBridge,
    /// AMD Infinity Fabric links between every pair of OAM modules (MI300X platforms).
    InfinityFabric,
    /// No GPU-to-GPU link: traffic goes over PCIe through the host (or a PCIe switch).
    Pcie,
}

impl FabricKind {
    pub const fn label(self) -> &'static str {
        match self {
            FabricKind::NvSwitch => "NVSwitch",
            FabricKind::NvLinkBridge => "NVLink bridges (pairs)",
            FabricKind::InfinityFabric => "Infinity Fabric",
            FabricKind::Pcie => "PCIe only",
        }
    }
}

/// The GPU-to-GPU fabric of a machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fabric {
    pub kind: FabricKind,
    /// Per GPU, both directions together, GB/s (the vendors' convention, as `gpu_link_gbs`).
    pub gbs: f64,
    pub source: String,
}

impl Fabric {
    /// One direction, GB/s: what a ring collective's step moves at.
    pub fn one_way_gbs(&self) -> f64 {
        self.gbs / 2.0
    }
    /// Whether GPUs that are not bridge partners still talk at NVLink speed.
    pub fn all_to_all(&self) -> bool {
        matches!(self.kind, FabricKind::NvSwitch | FabricKind::InfinityFabric)
    }
}

/// The kind of network between machines.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NetworkKind {
    /// AWS Elastic Fabric Adapter (SRD transport, GPUDirect RDMA on P4/P5/P6).
    Efa,
    /// NVIDIA/Mellanox InfiniBand (HDR 200 Gb/s, NDR 400 Gb/s per port).
    InfiniBand,
    /// RDMA over Converged Ethernet (GCP A3 Ultra's ConnectX-7, Meta's Llama 3 fabric).
    Roce,
    /// GCP's GPUDirect-TCPX / TCPXO (A3 High and A3 Mega): GPU memory to NIC without RDMA.
    GpuDirectTcp,
    /// Plain TCP/IP over Ethernet.
    Ethernet,
    /// IP over a Thunderbolt cable between two machines (a "Thunderbolt bridge").
    Thunderbolt,
}

impl NetworkKind {
    pub const fn label(self) -> &'static str {
        match self {
            NetworkKind::Efa => "EFA",
            NetworkKind::InfiniBand => "InfiniBand",
            NetworkKind::Roce => "RoCE",
            NetworkKind::GpuDirectTcp => "GPUDirect-TCPX",
            NetworkKind::Ethernet => "Ethernet",
            NetworkKind::Thunderbolt => "Thunderbolt",
        }
    }
    /// Whether GPU memory goes to the wire without a copy through host memory and the kernel's
    /// TCP stack (RDMA, or GCP's GPUDirect-TCPX).
    pub const fn gpu_direct(self) -> bool {
        matches!(
            self,
            NetworkKind::Efa
                | NetworkKind::InfiniBand
                | NetworkKind::Roce
                | NetworkKind::GpuDirectTcp
        )
    }
    /// One-way latency of a small message, µs: the α of the α–β collective model. RDMA fabrics
    /// ~5 µs per hop with NCCL's protocol overheads (NCCL's tuning model, `src/graph/tuning.cc`,
    /// `baseLat`/`hwLat` for the NET transport, a few µs each); kernel TCP over Ethernet or a
    /// Thunderbolt bridge ~50 µs (heuristic: a socket round trip on Linux is 20–100 µs).
    pub const fn latency_us(self) -> f64 {
        match self {
            NetworkKind::Efa => 15.0,
            NetworkKind::InfiniBand | NetworkKind::Roce => 5.0,
            NetworkKind::GpuDirectTcp => 25.0,
            NetworkKind::Ethernet | NetworkKind::Thunderbolt => 50.0,
        }
    }
}

/// A machine's network to other machines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    pub kind: NetworkKind,
    /// The whole node, one direction, Gb/s (e.g. p5.48xlarge: 3,200).
    pub gbps: f64,
    /// Network cards (rails) the bandwidth is spread over.
    #[serde(default = "one_nic")]
    pub nics: u32,
    pub source: String,
}

fn one_nic() -> u32 {
    1
}

impl Network {
    /// One direction, bytes per second, for the whole node.
    pub fn bytes_per_sec(&self) -> f64 {
        self.gbps.max(0.0) * 1e9 / 8.0
    }
    pub fn latency_s(&self) -> f64 {
        self.kind.latency_us() * 1e-6
    }
}

/// Links a user names for a cluster of their own machines (`--link`), each with its standard.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LinkPreset {
    /// 1 Gb/s Ethernet (IEEE 802.3ab).
    Gbe1,
    /// 2.5 Gb/s Ethernet (IEEE 802.3bz).
    Gbe2_5,
    /// 10 Gb/s Ethernet (IEEE 802.3an).
    Gbe10,
    /// 25 Gb/s Ethernet (IEEE 802.3by).
    Gbe25,
    /// 100 Gb/s Ethernet (IEEE 802.3ba/bj), plain TCP.
    Gbe100,
    /// Thunderbolt 4: 40 Gb/s (Intel, "Thunderbolt 4 technology brief").
    Thunderbolt4,
    /// Thunderbolt 5: 80 Gb/s each way (Intel, "Thunderbolt 5 technology brief"; 120 Gb/s
    /// "Bandwidth Boost" is for displays, one way).
    Thunderbolt5,
    /// InfiniBand NDR, one 400 Gb/s port (NVIDIA ConnectX-7 datasheet).
    InfinibandNdr,
}

impl LinkPreset {
    pub const ALL: [LinkPreset; 8] = [
        LinkPreset::Gbe1,
        LinkPreset::Gbe2_5,
        LinkPreset::Gbe10,
        LinkPreset::Gbe25,
        LinkPreset::Gbe100,
        LinkPreset::Thunderbolt4,
        LinkPreset::Thunderbolt5,
        LinkPreset::InfinibandNdr,
    ];
    pub const fn cli_name(self) -> &'static str {
        match self {
            LinkPreset::Gbe1 => "1gbe",
            LinkPreset::Gbe2_5 => "2.5gbe",
            LinkPreset::Gbe10 => "10gbe",
            LinkPreset::Gbe25 => "25gbe",
            LinkPreset::Gbe100 => "100gbe",
            LinkPreset::Thunderbolt4 => "thunderbolt4",
            LinkPreset::Thunderbolt5 => "thunderbolt5",
            LinkPreset::InfinibandNdr => "ib-ndr",
        }
    }
    pub const fn label(self) -> &'static str {
        match self {
            LinkPreset::Gbe1 => "1 GbE",
            LinkPreset::Gbe2_5 => "2.5 GbE",
            LinkPreset::Gbe10 => "10 GbE",
            LinkPreset::Gbe25 => "25 GbE",
            LinkPreset::Gbe100 => "100 GbE",
            LinkPreset::Thunderbolt4 => "Thunderbolt 4",
            LinkPreset::Thunderbolt5 => "Thunderbolt 5",
            LinkPreset::InfinibandNdr => "InfiniBand NDR",
        }
    }
    pub fn network(self) -> Network {
        let (kind, gbps, source) = match self {
            LinkPreset::Gbe1 => (NetworkKind::Ethernet, 1.0, "IEEE 802.3ab (1000BASE-T)"),
            LinkPreset::Gbe2_5 => (NetworkKind::Ethernet, 2.5, "IEEE 802.3bz (2.5GBASE-T)"),
            LinkPreset::Gbe10 => (NetworkKind::Ethernet, 10.0, "IEEE 802.3an (10GBASE-T)"),
            LinkPreset::Gbe25 => (NetworkKind::Ethernet, 25.0, "IEEE 802.3by (25GBASE-R)"),
            LinkPreset::Gbe100 => (NetworkKind::Ethernet, 100.0, "IEEE 802.3bj (100GBASE-R)"),
            LinkPreset::Thunderbolt4 => (
                NetworkKind::Thunderbolt,
                40.0,
                "https://www.intel.com/content/www/us/en/architecture-and-technology/thunderbolt/thunderbolt-4-brief.html (40 Gb/s)",
            ),
            LinkPreset::Thunderbolt5 => (
                NetworkKind::Thunderbolt,
                80.0,
                "https://www.intel.com/content/www/us/en/products/docs/io/thunderbolt/thunderbolt-5-brief.html (80 Gb/s bi-directional)",
            ),
            LinkPreset::InfinibandNdr => (
                NetworkKind::InfiniBand,
                400.0,
                "https://www.nvidia.com/en-us/networking/infiniband-adapters/ (ConnectX-7, NDR 400 Gb/s)",
            ),
        };
        Network {
            kind,
            gbps,
            nics: 1,
            source: source.to_string(),
        }
    }
}

/// The network a machine reaches other machines with: its catalog entry's, else the default for
/// its kind — `true` in the pair when it is that assumed default. Cloud instances without a
/// stated network get 25 Gb/s Ethernet (AWS ENA and GCP gVNIC on mid-size GPU instances);
/// Macs a Thunderbolt 4 bridge (every Apple silicon Mac has Thunderbolt 3/4 ports, the link
/// llama.cpp RPC and exo users cable Macs with); other owned machines 10 GbE.
pub fn network_of(m: &Machine, apple: bool) -> (Network, bool) {
    if let Some(n) = &m.network {
        return (n.clone(), false);
    }
    let preset = match m.kind {
        MachineKind::Cloud => LinkPreset::Gbe25,
        _ if apple => LinkPreset::Thunderbolt4,
        _ => LinkPreset::Gbe10,
    };
    (preset.network(), true)
}

/// The GPU-to-GPU fabric of a machine: its catalog entry's, else what its accelerator's link
/// says (an NVLink/Infinity Fabric figure on an SXM/OAM part means a switch or full mesh; on a
/// PCIe card, bridges in pairs), else PCIe at the card's link.
pub fn fabric_of(m: &Machine, acc: &Accelerator) -> Fabric {
    if let Some(f) = &m.fabric {
        return f.clone();
    }
    match acc.gpu_link_gbs {
        Some(g) if g > 0.0 => {
            let bridged = acc
                .gpu_link
                .as_deref()
                .is_some_and(|l| l.contains("bridge"));
            Fabric {
                kind: if bridged {
                    FabricKind::NvLinkBridge
                } else if acc
                    .gpu_link
                    .as_deref()
                    .is_some_and(|l| l.contains("Infinity"))
                {
                    FabricKind::InfinityFabric
                } else {
                    FabricKind::NvSwitch
                },
                gbs: g,
                source: format!("the accelerator's link ({})", acc.source),
            }
        }
        _ => Fabric {
            kind: FabricKind::Pcie,
            gbs: 2.0 * acc.pcie.map_or(16.0, |p| p.bandwidth().0),
            source: "the card's PCIe link".to_string(),
        },
    }
}
