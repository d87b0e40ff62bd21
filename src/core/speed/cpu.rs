//! The CPU's int8 dot-product path, the one ggml-cpu's quantised prompt GEMMs run on.
//!
//! A quantised weight matrix times the ubatch's activations (quantised to Q8 per block) is a
//! sum of 32-weight int8 block dot products, each scaled by the two blocks' F16 scales. How many
//! int8 multiply-accumulates (MACs) a core retires per cycle is set by the dot instruction its
//! instruction set offers and how many of them issue per cycle:
//!
//! - **AVX2**: `vpmaddubsw` (32 u8×s8 products, pairs summed to i16) then `vpmaddwd` to widen to
//!   i32: two multiply-port µops per 32 MACs, two vector multiply ports (Intel p0/p1 from Haswell
//!   to Golden Cove, two multiply pipes on AMD Zen 2/3; uops.info, Agner Fog's instruction tables): 32 MACs
//!   per cycle. llamafile's `tinyBLAS_Q0_AVX` (ggml-cpu/llamafile/sgemm.cpp, `updot`) and the
//!   `vec_dot_q*_q8` kernels use it; AVX-512 parts without VNNI run the same 256-bit path.
//! - **VNNI** (AVX-512 VNNI with VL: Ice Lake, Cascade Lake and newer Xeons, Zen 4/5; AVX-VNNI:
//!   Alder Lake and newer Core parts): `vpdpbusd` does the 32 MACs and the widening in one µop
//!   on a 256-bit register (`_mm256_dpbusd_epi32` / `_mm256_dpbusd_avx_epi32` in `updot`), two
//!   per cycle (p0/p1 on Intel, two pipes on Zen 4): 64.
//! - **AMX** (Sapphire Rapids and newer Xeons): `tdpbusd` tiles exist, but ggml uses them only
//!   when built with `GGML_AMX` and the weights sit in the AMX buffer type (ggml-cpu/amx/), and
//!   the tiles' feed (unpacking, scales) stays on AVX-512: Ollama removed its AMX build because
//!   it was slower on Sapphire Rapids (ollama/ollama PR 9203). Modelled as the VNNI path.
//! - **NEON dotprod** (`sdot`: 16 MACs per 128-bit instruction) on four 128-bit SIMD pipes
//!   (Apple Firestorm and later P-cores, Neoverse V1/V2: AnandTech's M1 and Neoverse V1 deep
//!   dives): 64. The repacked Q4_0 4x4 kernels (ggml-cpu/arch/arm/repack.cpp).
//! - **NEON i8mm** (`smmla`/`vmmlaq_s32`: a 2×8 by 8×2 int8 product, 32 MACs per instruction),
//!   at the `sdot` issue rate: 128. The repacked Q4_0 4x8 / Q4_K 8x8 / Q8_0 kernels.
//!
//! ggml's kernels reach a share of that peak ([`super::Profile::quant_tensor_efficiency`] of the
//! CPU profile): per block and column they also unpack the weights, sign-adjust the operands for
//! the unsigned×signed instruction, convert the i32 sum to float and multiply-add it with the
//! product of the two scales (`tinyBLAS_Q0_AVX::gemm`), several vector µops per dot µop.

use serde::{Deserialize, Serialize};

/// The int8 dot-product instruction path of a CPU core (see the module documentation).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum CpuIsa {
    /// AVX2 `vpmaddubsw` + `vpmaddwd` (also AVX-512 without VNNI, and any unknown x86 part).
    #[default]
    Avx2,
    /// AVX-512 VNNI or AVX-VNNI `vpdpbusd` on 256-bit registers.
    Vnni,
    /// AMX tiles; ggml's prompt GEMMs run at the VNNI rate (module documentation).
    Amx,
    /// ARMv8.2 dot product `sdot`.
    NeonDotprod,
    /// ARMv8.6 int8 matrix multiply `smmla`.
    NeonI8mm,
}

impl CpuIsa {
    /// Int8 multiply-accumulates one core retires per cycle on this path (module documentation).
    pub const fn int8_macs_per_cycle(self) -> f64 {
        match self {
            CpuIsa::Avx2 => 32.0,
            CpuIsa::Vnni | CpuIsa::Amx | CpuIsa::NeonDotprod => 64.0,
            CpuIsa::NeonI8mm => 128.0,
        }
    }
    pub const fn label(self) -> &'static str {
        match self {
            CpuIsa::Avx2 => "AVX2",
            CpuIsa::Vnni => "AVX-512/AVX VNNI",
            CpuIsa::Amx => "AMX (VNNI rate)",
            CpuIsa::NeonDotprod => "NEON dotprod",
            CpuIsa::NeonI8mm => "NEON i8mm",
        }
    }
}

/// What the speed model knows of a CPU from its name: the dot-product path and, for the parts
/// listed, the vendor's base clock (the all-core clock guaranteed at the rated power, which a
/// sustained GEMM on every core holds).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct CpuFacts {
    pub isa: CpuIsa,
    /// Base clock, GHz (`None`: not listed; the speed constants' clock applies).
    pub base_ghz: Option<f64>,
}

/// Base clocks of the CPUs of the catalog and the published rows, from the vendors' product
/// pages (amd.com "Specifications", intel.com ark "Performance-core Base Frequency").
const BASE_CLOCKS: &[(&str, f64)] = &[
    ("9950x", 4.3),
    ("7950x", 4.5),
    ("5975wx", 3.6),
    ("5900x", 3.7),
    ("5600x", 3.7),
    ("13900k", 3.0),
    ("12700", 2.1),
    ("ai max+ 395", 3.0),
    ("hx 370", 2.0),
];

/// The facts of the CPU called `name` (catalog `cpu`, a published row's machine, the OS's
/// brand string). Unknown x86 parts are AVX2; unknown ARM parts NEON dotprod.
///
/// Reading them is some sixty substring searches of the lower-cased name, and every machine's
/// fit asks (once per machine and scenario): the answers are remembered per thread, by name, for
/// the few hundred names a catalog holds ([`MEMO_NAMES`]); past that they are read afresh.
pub fn cpu_facts(name: &str) -> CpuFacts {
    MEMO.with(|memo| {
        if let Some(f) = memo.borrow().get(name) {
            return *f;
        }
        let f = read_cpu_facts(name);
        let mut memo = memo.borrow_mut();
        if memo.len() < MEMO_NAMES {
            memo.insert(name.into(), f);
        }
        f
    })
}

/// How many CPU names [`cpu_facts`] remembers per thread (the built-in catalog has under 100).
const MEMO_NAMES: usize = 1024;

type Memo = std::collections::HashMap<Box<str>, CpuFacts, crate::core::catalog::IdHashBuild>;

thread_local! {
    static MEMO: std::cell::RefCell<Memo> = std::cell::RefCell::new(Memo::default());
}

/// [`cpu_facts`] read from the name.
fn read_cpu_facts(name: &str) -> CpuFacts {
    let n = name.to_ascii_lowercase();
    // The listed part exactly: "12700" is not the 12700K (3.6 GHz), "7950x" not the 7950X3D.
    let listed = |k: &str| {
        n.match_indices(k).any(|(i, _)| {
            !n[i + k.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric())
        })
    };
    let base_ghz = BASE_CLOCKS.iter().find(|(k, _)| listed(k)).map(|(_, g)| *g);
    CpuFacts {
        isa: isa_of(&n),
        base_ghz,
    }
}

/// The first run of ASCII digits in `s` after `from`, as a number.
fn number_after(s: &str, from: &str) -> Option<u32> {
    let rest = &s[s.find(from)? + from.len()..];
    let digits: String = rest
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The first model number of four or more digits ("7800x3d" → 7800, "i9-13900k" → 13900).
fn model_number(n: &str) -> Option<u32> {
    n.split(|c: char| !c.is_ascii_alphanumeric())
        .filter_map(|w| {
            let digits: String = w.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<u32>().ok()
        })
        .find(|v| *v >= 1000)
}

/// The dot-product path by family (lower-case name).
fn isa_of(n: &str) -> CpuIsa {
    // Apple: M1 has dotprod; M2 and later add FEAT_I8MM.
    if n.contains("apple") || n.starts_with('m') && n.len() <= 3 {
        return match number_after(n, "m") {
            Some(1) => CpuIsa::NeonDotprod,
            Some(_) => CpuIsa::NeonI8mm,
            None => CpuIsa::NeonDotprod,
        };
    }
    if n.contains("graviton") {
        return match number_after(n, "graviton") {
            Some(g) if g >= 3 => CpuIsa::NeonI8mm,
            _ => CpuIsa::NeonDotprod,
        };
    }
    if [
        "ampere",
        "altra",
        "neoverse",
        "snapdragon",
        "cortex",
        "grace",
        "arm",
    ]
    .iter()
    .any(|k| n.contains(k))
    {
        return if n.contains("grace") || n.contains("oryon") {
            CpuIsa::NeonI8mm
        } else {
            CpuIsa::NeonDotprod
        };
    }
    // Server codenames, as cloud instance pages name the part.
    const CODENAMES: &[(&str, CpuIsa)] = &[
        ("sapphire rapids", CpuIsa::Amx),
        ("emerald rapids", CpuIsa::Amx),
        ("granite rapids", CpuIsa::Amx),
        ("cascade lake", CpuIsa::Vnni),
        ("ice lake", CpuIsa::Vnni),
        ("genoa", CpuIsa::Vnni),
        ("bergamo", CpuIsa::Vnni),
        ("turin", CpuIsa::Vnni),
        ("skylake", CpuIsa::Avx2),
        ("milan", CpuIsa::Avx2),
        ("rome", CpuIsa::Avx2),
    ];
    if let Some((_, isa)) = CODENAMES.iter().find(|(k, _)| n.contains(k)) {
        return *isa;
    }
    if n.contains("amd") || n.contains("ryzen") || n.contains("epyc") {
        return amd_isa(n);
    }
    if n.contains("intel") || n.contains("xeon") || n.contains("core") {
        return intel_isa(n);
    }
    CpuIsa::Avx2
}

/// AMD: Zen 4 and Zen 5 have AVX-512 VNNI (Ryzen 7000/8000/9000, Ryzen AI, Threadripper
/// 7000, EPYC 9004/9005, 4004, 8004); Zen 3 and older AVX2.
fn amd_isa(n: &str) -> CpuIsa {
    if n.contains("ryzen ai") {
        return CpuIsa::Vnni;
    }
    if n.contains("epyc") {
        // EPYC model numbers: the last digit is the generation (…4 Genoa/Bergamo/Siena, …5 Turin).
        let generation = number_after(n, "epyc").map(|m| m % 10);
        return if matches!(generation, Some(4 | 5)) {
            CpuIsa::Vnni
        } else {
            CpuIsa::Avx2
        };
    }
    // "Ryzen 9 7950X", "Threadripper PRO 7985WX": the four-digit model number.
    match model_number(n) {
        Some(m) if (7000..10_000).contains(&m) => CpuIsa::Vnni,
        _ => CpuIsa::Avx2,
    }
}

/// Intel: Xeon Scalable 4th generation and later (x4xx, x5xx, 6xxx) AMX; 2nd/3rd generation
/// (x2xx, x3xx) AVX-512 VNNI; Xeon W-3400/2400 AMX; Core 11th generation (AVX-512 VNNI) and 12th
/// generation onward and Core Ultra (AVX-VNNI) VNNI; older parts AVX2.
fn intel_isa(n: &str) -> CpuIsa {
    if n.contains("xeon") {
        // Xeon W-2400/3400 (Sapphire Rapids) are named "w9-3475X", "w5-2455X".
        if [" w3-", " w5-", " w7-", " w9-"]
            .iter()
            .any(|k| n.contains(k))
        {
            return CpuIsa::Amx;
        }
        let model = ["platinum", "gold", "silver", "bronze"]
            .iter()
            .find_map(|t| number_after(n, t));
        return match model.map(|m| (m / 100) % 10) {
            Some(g) if g >= 4 => CpuIsa::Amx,
            Some(2 | 3) => CpuIsa::Vnni,
            _ => CpuIsa::Avx2,
        };
    }
    if n.contains("ultra") {
        return CpuIsa::Vnni;
    }
    // "Core i9-13900K": the generation is the model number's leading digits.
    match model_number(n) {
        Some(m) if m >= 10_000 && m / 1000 >= 11 => CpuIsa::Vnni,
        _ => CpuIsa::Avx2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_map_to_their_dot_product_path() {
        let isa = |s: &str| cpu_facts(s).isa;
        assert_eq!(isa("AMD Ryzen 9 7950X 16-Core Processor"), CpuIsa::Vnni);
        assert_eq!(isa("AMD Ryzen 9 9950X"), CpuIsa::Vnni);
        assert_eq!(isa("AMD Ryzen 9 5900X"), CpuIsa::Avx2);
        assert_eq!(isa("AMD Ryzen Threadripper PRO 5975WX"), CpuIsa::Avx2);
        assert_eq!(isa("AMD Ryzen Threadripper 7980X"), CpuIsa::Vnni);
        assert_eq!(isa("AMD Ryzen AI Max+ 395"), CpuIsa::Vnni);
        assert_eq!(isa("AMD EPYC 9654"), CpuIsa::Vnni);
        assert_eq!(isa("AMD EPYC 7763"), CpuIsa::Avx2);
        assert_eq!(isa("Intel Core i9-13900K"), CpuIsa::Vnni);
        assert_eq!(
            isa("Intel(R) Core(TM) i7-7820HQ CPU @ 2.90GHz"),
            CpuIsa::Avx2
        );
        assert_eq!(isa("Intel Xeon Platinum 8480+"), CpuIsa::Amx);
        assert_eq!(isa("Intel Xeon Platinum 8380"), CpuIsa::Vnni);
        assert_eq!(isa("Intel Xeon Gold 6154"), CpuIsa::Avx2);
        assert_eq!(isa("Intel Xeon w9-3475X"), CpuIsa::Amx);
        assert_eq!(isa("AMD Ryzen 7 7800X3D"), CpuIsa::Vnni);
        assert_eq!(isa("AMD EPYC 74F3V (Milan)"), CpuIsa::Avx2);
        assert_eq!(isa("AMD EPYC 9V84 (Genoa)"), CpuIsa::Vnni);
        assert_eq!(isa("2x Intel Xeon Sapphire Rapids"), CpuIsa::Amx);
        assert_eq!(isa("Intel Xeon (Cascade Lake)"), CpuIsa::Vnni);
        assert_eq!(
            isa("Intel Xeon Platinum 8259CL (Cascade Lake)"),
            CpuIsa::Vnni
        );
        assert_eq!(isa("Intel Core Ultra 9 275HX"), CpuIsa::Vnni);
        assert_eq!(isa("Intel Core i9-14900HX"), CpuIsa::Vnni);
        assert_eq!(isa("Intel Core i5-10400"), CpuIsa::Avx2);
        assert_eq!(isa("Apple M4 Max (16-core CPU)"), CpuIsa::NeonI8mm);
        assert_eq!(isa("Apple M1 (8-core CPU)"), CpuIsa::NeonDotprod);
        assert_eq!(isa("Apple M1 Max"), CpuIsa::NeonDotprod);
        assert_eq!(isa("Apple M4 Pro"), CpuIsa::NeonI8mm);
        assert_eq!(isa("AWS Graviton2"), CpuIsa::NeonDotprod);
        assert_eq!(isa("AWS Graviton4"), CpuIsa::NeonI8mm);
        assert_eq!(isa("NVIDIA Grace"), CpuIsa::NeonI8mm);
        // Unknown: the AVX2 path every x86-64 llama.cpp build has.
        assert_eq!(isa(""), CpuIsa::Avx2);
        assert_eq!(isa("Some CPU"), CpuIsa::Avx2);
    }

    #[test]
    fn vnni_doubles_the_avx2_dot_rate_and_base_clocks_come_from_the_list() {
        assert_eq!(
            CpuIsa::Vnni.int8_macs_per_cycle(),
            2.0 * CpuIsa::Avx2.int8_macs_per_cycle()
        );
        assert!(CpuIsa::NeonI8mm.int8_macs_per_cycle() > CpuIsa::NeonDotprod.int8_macs_per_cycle());
        assert_eq!(cpu_facts("AMD Ryzen 9 7950X").base_ghz, Some(4.5));
        assert_eq!(
            cpu_facts("AMD Ryzen Threadripper PRO 5975WX").base_ghz,
            Some(3.6)
        );
        assert_eq!(cpu_facts("Apple M2 Ultra").base_ghz, None);
        assert_eq!(cpu_facts("Intel Core i7-12700").base_ghz, Some(2.1));
        assert_eq!(cpu_facts("Intel Core i7-12700K").base_ghz, None);
        assert_eq!(cpu_facts("AMD Ryzen 9 7950X3D").base_ghz, None);
    }
}
