//! Matching a detected GPU name to a catalog accelerator (pure).
//!
//! Order of preference, best first:
//! 1. the detected name equals one of the accelerator's `aliases` (case and spacing ignored);
//! 2. it equals the accelerator's `name` or `id`;
//! 3. its *name tokens* equal those of an alias, the name or the id.
//!
//! Name tokens ([`name_tokens`]): lower case, split at every non-alphanumeric character and at
//! letter↔digit boundaries ("RTX4090" = "RTX 4090", "A100-SXM4-80GB" = "a 100 sxm 80gb"), without
//! vendor and filler words (NVIDIA, GeForce, Tesla, AMD, Radeon, Instinct, Apple, GPU, Generation,
//! Edition), without memory types (HBM3, GDDR6X, ECC) and with "SXM4"/"SXM5" → "sxm",
//! "Mobile"/"Notebook" → "laptop". Sizes ("80GB", "16/32GB") are kept apart: when both names carry
//! one they must agree. Everything else must be equal, so "RTX 4060 Laptop GPU" never matches the
//! desktop "RTX 4060", nor "RTX 4060 Ti" the "RTX 4060".
//!
//! NVML calls the H100/H200 SXM modules just "NVIDIA H100 80GB HBM3" / "NVIDIA H200": a data-centre
//! Hopper/Blackwell name without PCIe/NVL/SXM is taken as SXM first, then as the bare part.
//!
//! With the detected VRAM known ([`match_accelerator_with_vram`]), a candidate whose memory is
//! not within 0.85–1.15 × the detected total is refused (RTX 3060 8 GB vs 12 GB; RTX 4060 Ti 8 GB
//! vs 16 GB), unless both names already carry an agreeing size. Memory sizes in names are read as
//! GiB; NVML's totals (a 24 GB card reports 23.99 GiB, an A10G 22.35 GiB, a B200 ~179 GB) fall
//! inside that window.

use crate::core::catalog::{Accelerator, Catalog, MemoryKind};
use crate::core::units::Bytes;

/// Notes written by matching start with this, so a re-match can replace them.
pub(crate) const MATCH_NOTE_PREFIX: &str = "Catalog: ";

/// Words that never tell two parts apart.
const NOISE: &[&str] = &[
    "nvidia",
    "geforce",
    "tesla",
    "quadro",
    "gpu",
    "graphics",
    "generation",
    "edition",
    "amd",
    "ati",
    "radeon",
    "instinct",
    "apple",
    "corporation",
    "inc",
    "tm",
    "r",
];

/// Memory technologies: dropped with the version digits that follow them.
const MEMORY_TYPES: &[&str] = &["hbm", "gddr", "lpddr", "ddr", "ecc"];

/// Data-centre parts NVML names without their SXM form factor.
const IMPLIED_SXM: &[&str] = &["h100", "h200", "h800", "h20", "b200", "b300"];

/// The comparable form of a GPU name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameTokens {
    /// Sorted tokens without sizes.
    pub core: Vec<String>,
    /// Sizes written in the name, GiB ("16/32GB" → [16, 32]).
    pub sizes_gib: Vec<u32>,
    /// "sxm" was added because the name is a data-centre part with no form factor.
    pub implied_sxm: bool,
}

impl NameTokens {
    /// The core without the implied "sxm".
    fn bare_core(&self) -> Vec<String> {
        if self.implied_sxm {
            let mut c = self.core.clone();
            if let Some(i) = c.iter().position(|t| t == "sxm") {
                c.remove(i);
            }
            c
        } else {
            self.core.clone()
        }
    }
}

fn collapse(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Splits "a100" into "a", "100" and "4060ti" into "4060", "ti".
fn split_alnum(word: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut cur_digit = None;
    for c in word.chars() {
        let d = c.is_ascii_digit() || c == '/';
        if cur_digit.is_some_and(|cd| cd != d) {
            out.push(std::mem::take(&mut cur));
        }
        cur.push(c);
        cur_digit = Some(d);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Tokens of a GPU name; see the module docs.
pub fn name_tokens(name: &str) -> NameTokens {
    let lower = name
        .to_lowercase()
        .replace("pci-e", "pcie")
        .replace("pci e", "pcie");
    let words: Vec<String> = lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '/'))
        .filter(|w| !w.is_empty())
        .map(|w| match w {
            "mobile" | "notebook" => "laptop".to_string(),
            _ => w.to_string(),
        })
        .filter(|w| !NOISE.contains(&w.as_str()))
        .collect();
    let has_form = words
        .iter()
        .any(|w| w == "pcie" || w == "nvl" || w.starts_with("sxm"));
    let implied_sxm = !has_form && words.iter().any(|w| IMPLIED_SXM.contains(&w.as_str()));

    let pieces: Vec<String> = words.iter().flat_map(|w| split_alnum(w)).collect();
    let mut core = Vec::new();
    let mut sizes = Vec::new();
    let mut i = 0;
    while i < pieces.len() {
        let p = pieces[i].as_str();
        let next = pieces.get(i + 1).map(String::as_str);
        let is_num = p.chars().next().is_some_and(|c| c.is_ascii_digit());
        if is_num && matches!(next, Some("gb") | Some("gib")) {
            sizes.extend(p.split('/').filter_map(|n| n.parse::<u32>().ok()));
            i += 2;
            continue;
        }
        if MEMORY_TYPES.contains(&p) {
            i += 1;
            while i < pieces.len() {
                let q = pieces[i].as_str();
                if q.chars().all(|c| c.is_ascii_digit()) || q == "e" || q == "x" {
                    i += 1;
                } else {
                    break;
                }
            }
            continue;
        }
        if p == "sxm" {
            core.push("sxm".to_string());
            i += 1;
            if pieces
                .get(i)
                .is_some_and(|q| q.chars().all(|c| c.is_ascii_digit()))
            {
                i += 1;
            }
            continue;
        }
        if p.contains('/') {
            core.extend(p.split('/').filter(|s| !s.is_empty()).map(str::to_string));
        } else {
            core.push(p.to_string());
        }
        i += 1;
    }
    if implied_sxm {
        core.push("sxm".to_string());
    }
    core.sort();
    sizes.sort_unstable();
    sizes.dedup();
    NameTokens {
        core,
        sizes_gib: sizes,
        implied_sxm,
    }
}

/// What matching found: the id, and the candidates refused because their memory differs.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct MatchOutcome {
    pub id: Option<String>,
    /// (accelerator id, its memory) of name matches refused for their VRAM.
    pub refused_for_vram: Vec<(String, Bytes)>,
}

/// The catalog accelerator `name` (as a driver reports it) is, by name alone.
pub fn match_accelerator(name: &str, catalog: &Catalog) -> Option<String> {
    match_detail(name, None, catalog).id
}

/// As [`match_accelerator`], also refusing candidates whose memory is not within 0.85–1.15 × `vram_total`.
pub fn match_accelerator_with_vram(
    name: &str,
    vram_total: Option<Bytes>,
    catalog: &Catalog,
) -> Option<String> {
    match_detail(name, vram_total, catalog).id
}

fn rank_of(name: &str, det: &NameTokens, a: &Accelerator) -> Option<(u8, NameTokens)> {
    let exact = collapse(name);
    if let Some(al) = a.aliases.iter().find(|al| collapse(al) == exact) {
        return Some((0, name_tokens(al)));
    }
    if collapse(&a.name) == exact || collapse(&a.id) == exact {
        return Some((1, name_tokens(&a.name)));
    }
    let bare = det.bare_core();
    let labels = a
        .aliases
        .iter()
        .map(String::as_str)
        .chain([a.name.as_str(), &*a.id]);
    let mut best: Option<(u8, NameTokens)> = None;
    for label in labels {
        let k = name_tokens(label);
        if !det.sizes_gib.is_empty()
            && !k.sizes_gib.is_empty()
            && !det.sizes_gib.iter().any(|s| k.sizes_gib.contains(s))
        {
            continue;
        }
        let r = if k.core == det.core {
            2
        } else if det.implied_sxm && k.core == bare {
            3
        } else {
            continue;
        };
        if best.as_ref().is_none_or(|(b, _)| r < *b) {
            best = Some((r, k));
        }
    }
    best
}

/// The memory a candidate is expected to have, GiB-based: sizes in its label, else its `memory`.
fn expected_memory(det: &NameTokens, key: &NameTokens, a: &Accelerator) -> Option<Vec<Bytes>> {
    if !det.sizes_gib.is_empty() && !key.sizes_gib.is_empty() {
        return None; // the names already agree on the size
    }
    if !key.sizes_gib.is_empty() {
        return Some(
            key.sizes_gib
                .iter()
                .map(|&s| Bytes::gib(s as u64))
                .collect(),
        );
    }
    (a.memory_kind == MemoryKind::Discrete && a.memory.0 > 0).then(|| vec![a.memory])
}

fn plausible(vram: Bytes, expected: &[Bytes]) -> bool {
    expected.iter().any(|e| {
        let r = vram.as_f64() / e.as_f64();
        (0.85..=1.15).contains(&r)
    })
}

pub(crate) fn match_detail(
    name: &str,
    vram_total: Option<Bytes>,
    catalog: &Catalog,
) -> MatchOutcome {
    let det = name_tokens(name);
    let mut out = MatchOutcome::default();
    if det.core.is_empty() {
        return out;
    }
    // (rank, distance from the detected VRAM in bytes, catalog index)
    let mut best: Option<(u8, u64, usize)> = None;
    for (i, a) in catalog.accelerators.iter().enumerate() {
        let Some((rank, key)) = rank_of(name, &det, a) else {
            continue;
        };
        let mut dist = 0;
        if let Some(vram) = vram_total.filter(|v| v.0 > 0)
            && let Some(expected) = expected_memory(&det, &key, a)
        {
            if !plausible(vram, &expected) {
                out.refused_for_vram.push((a.id.to_string(), expected[0]));
                continue;
            }
            dist = expected
                .iter()
                .map(|e| e.0.abs_diff(vram.0))
                .min()
                .unwrap_or(0);
        }
        if best.is_none_or(|(br, bd, _)| (rank, dist) < (br, bd)) {
            best = Some((rank, dist, i));
        }
    }
    out.id = best.map(|(_, _, i)| catalog.accelerators[i].id.to_string());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::catalog::{Segment, Vendor};
    use crate::core::units::GbPerSec;

    fn acc(id: &str, name: &str, memory: Bytes, aliases: &[&str]) -> Accelerator {
        let kind = if memory.0 == 0 {
            MemoryKind::Unified
        } else {
            MemoryKind::Discrete
        };
        Accelerator {
            memory,
            bandwidth: GbPerSec(500.0),
            fp16_tflops: 50.0,
            aliases: aliases.iter().map(|s| s.to_string()).collect(),
            source: "test".into(),
            ..Accelerator::new(id, name, Vendor::Nvidia, Segment::Consumer, kind)
        }
    }

    /// A catalog written the way vendors' spec pages name parts, mostly without NVML aliases, so
    /// the token rules are what is tested.
    fn catalog() -> Catalog {
        Catalog {
            benchmarks: Vec::new(),
            accelerator_index: Default::default(),
            accelerators: vec![
                acc("rtx-4090", "GeForce RTX 4090", Bytes::gib(24), &[]),
                acc("rtx-4060", "GeForce RTX 4060", Bytes::gib(8), &[]),
                acc(
                    "rtx-4060-laptop",
                    "GeForce RTX 4060 Laptop",
                    Bytes::gib(8),
                    &[],
                ),
                acc(
                    "rtx-4060-ti-16gb",
                    "GeForce RTX 4060 Ti 16GB",
                    Bytes::gib(16),
                    &[],
                ),
                acc(
                    "rtx-3060-12gb",
                    "GeForce RTX 3060 12GB",
                    Bytes::gib(12),
                    &["NVIDIA GeForce RTX 3060"],
                ),
                acc("h100-sxm", "H100 SXM5", Bytes::gb(80), &[]),
                acc("h100-pcie", "H100 PCIe", Bytes::gb(80), &[]),
                acc("h100-nvl", "H100 NVL", Bytes::gb(94), &[]),
                acc("h200-sxm", "H200 SXM", Bytes::gb(141), &[]),
                acc("a100-40gb-sxm", "A100 40GB SXM4", Bytes::gb(40), &[]),
                acc("a100-80gb-sxm", "A100 80GB SXM4", Bytes::gb(80), &[]),
                acc("a100-80gb-pcie", "A100 80GB PCIe", Bytes::gb(80), &[]),
                acc("t4", "Tesla T4", Bytes::gib(16), &[]),
                acc("v100-sxm", "V100 SXM2 16/32GB", Bytes::gib(32), &[]),
                acc("rtx-a6000", "RTX A6000", Bytes::gib(48), &[]),
                acc("rtx-6000-ada", "RTX 6000 Ada", Bytes::gib(48), &[]),
                acc("a10g", "A10G", Bytes::gib(24), &[]),
                acc("l40s", "L40S", Bytes::gib(48), &[]),
                acc("m2-max", "Apple M2 Max", Bytes::ZERO, &[]),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn tokens() {
        assert_eq!(name_tokens("NVIDIA GeForce RTX 4090").core, ["4090", "rtx"]);
        assert_eq!(name_tokens("GeForce RTX4090").core, ["4090", "rtx"]);
        let a = name_tokens("NVIDIA A100-SXM4-80GB");
        assert_eq!(
            (a.core.as_slice(), a.sizes_gib.as_slice()),
            (
                ["100", "a", "sxm"].map(String::from).as_slice(),
                [80].as_slice()
            )
        );
        let h = name_tokens("NVIDIA H100 80GB HBM3");
        assert!(h.implied_sxm);
        assert_eq!(h.core, ["100", "h", "sxm"]);
        assert_eq!(name_tokens("V100 SXM2 16/32GB").sizes_gib, [16, 32]);
        assert_eq!(
            name_tokens("NVIDIA GeForce GTX 1650 Mobile").core,
            ["1650", "gtx", "laptop"]
        );
        assert!(name_tokens("   ").core.is_empty());
    }

    /// A SUPER or Ti card and its plain sibling are different parts in the built-in catalog:
    /// each name finds its own entry, never its sibling's.
    #[test]
    fn siblings_in_the_builtin_catalog() {
        let c = crate::io::catalog::builtin();
        for (name, want) in [
            ("NVIDIA GeForce RTX 3080", "rtx-3080"),
            ("NVIDIA GeForce RTX 3080 Ti", "rtx-3080-ti"),
            ("NVIDIA GeForce RTX 4070 Ti", "rtx-4070-ti"),
            ("NVIDIA GeForce RTX 4070 Ti SUPER", "rtx-4070-ti-super"),
            ("NVIDIA GeForce RTX 4080", "rtx-4080"),
            ("NVIDIA GeForce RTX 4080 SUPER", "rtx-4080-super"),
        ] {
            assert_eq!(match_accelerator(name, c).as_deref(), Some(want), "{name}");
        }
    }

    #[test]
    fn name_table() {
        let c = catalog();
        let table: &[(&str, Option<&str>)] = &[
            ("NVIDIA GeForce RTX 4090", Some("rtx-4090")),
            ("nvidia  geforce rtx 4090", Some("rtx-4090")),
            ("NVIDIA H100 80GB HBM3", Some("h100-sxm")),
            ("NVIDIA H100 PCIe", Some("h100-pcie")),
            ("NVIDIA H100 NVL", Some("h100-nvl")),
            ("NVIDIA H200", Some("h200-sxm")),
            ("NVIDIA A100-SXM4-80GB", Some("a100-80gb-sxm")),
            ("NVIDIA A100-SXM4-40GB", Some("a100-40gb-sxm")),
            ("NVIDIA A100 80GB PCIe", Some("a100-80gb-pcie")),
            ("NVIDIA A100-PCIE-40GB", None), // no 40 GB PCIe entry: the 80 GB one must not be taken
            ("Tesla T4", Some("t4")),
            ("Tesla V100-SXM2-16GB", Some("v100-sxm")),
            ("NVIDIA RTX A6000", Some("rtx-a6000")),
            ("NVIDIA RTX 6000 Ada Generation", Some("rtx-6000-ada")),
            ("NVIDIA A10G", Some("a10g")),
            ("NVIDIA L40S", Some("l40s")),
            ("NVIDIA GeForce RTX 4060", Some("rtx-4060")),
            (
                "NVIDIA GeForce RTX 4060 Laptop GPU",
                Some("rtx-4060-laptop"),
            ),
            ("NVIDIA GeForce RTX 4060 Ti", Some("rtx-4060-ti-16gb")), // by name alone; VRAM decides below
            ("NVIDIA GeForce RTX 4090 D", None),
            ("NVIDIA GeForce RTX 4070", None),
            ("Apple M2 Max", Some("m2-max")),
            ("Apple M2", None),
            ("", None),
        ];
        for (name, want) in table {
            assert_eq!(match_accelerator(name, &c).as_deref(), *want, "{name}");
        }
    }

    #[test]
    fn laptop_never_matches_desktop() {
        let mut c = catalog();
        c.accelerators.retain(|a| &*a.id != "rtx-4060-laptop");
        assert_eq!(
            match_accelerator("NVIDIA GeForce RTX 4060 Laptop GPU", &c),
            None
        );
    }

    #[test]
    fn vram_tells_variants_apart() {
        let c = catalog();
        // RTX 4060 Ti: 8 GB and 16 GB share one NVML name.
        let ti8 = match_detail("NVIDIA GeForce RTX 4060 Ti", Some(Bytes::mib(8188)), &c);
        assert_eq!(ti8.id, None);
        assert_eq!(
            ti8.refused_for_vram,
            [("rtx-4060-ti-16gb".to_string(), Bytes::gib(16))]
        );
        assert_eq!(
            match_accelerator_with_vram("NVIDIA GeForce RTX 4060 Ti", Some(Bytes::mib(16380)), &c)
                .as_deref(),
            Some("rtx-4060-ti-16gb")
        );
        // RTX 3060 8 GB against an alias of the 12 GB part: the alias does not override the VRAM check.
        assert_eq!(
            match_accelerator_with_vram("NVIDIA GeForce RTX 3060", Some(Bytes::gib(8)), &c),
            None
        );
        assert_eq!(
            match_accelerator_with_vram("NVIDIA GeForce RTX 3060", Some(Bytes::mib(12288)), &c)
                .as_deref(),
            Some("rtx-3060-12gb")
        );
        // NVML totals that sit below the marketing number still match.
        assert_eq!(
            match_accelerator_with_vram("NVIDIA GeForce RTX 4090", Some(Bytes(25_757_220_864)), &c)
                .as_deref(),
            Some("rtx-4090")
        );
        assert_eq!(
            match_accelerator_with_vram("NVIDIA H100 80GB HBM3", Some(Bytes::mib(81559)), &c)
                .as_deref(),
            Some("h100-sxm")
        );
        assert_eq!(
            match_accelerator_with_vram("NVIDIA A10G", Some(Bytes::mib(22888)), &c).as_deref(),
            Some("a10g")
        );
        // A V100 16 GB against the "16/32GB" entry whose memory field says 32: the names agree.
        assert_eq!(
            match_accelerator_with_vram("Tesla V100-SXM2-16GB", Some(Bytes::mib(16160)), &c)
                .as_deref(),
            Some("v100-sxm")
        );
    }

    #[test]
    fn aliases_come_first() {
        let mut c = catalog();
        // An alias claiming the NVML name beats a token match on another entry's name.
        c.accelerators.push(acc(
            "rtx-4090-x",
            "Something Else",
            Bytes::gib(24),
            &["NVIDIA GeForce RTX 4090"],
        ));
        assert_eq!(
            match_accelerator("NVIDIA GeForce RTX 4090", &c).as_deref(),
            Some("rtx-4090-x")
        );
    }
}
