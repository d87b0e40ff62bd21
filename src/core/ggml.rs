//! The ggml storage types: one table of every `ggml_type` (id, name, block size, bytes per
//! block) used by the precision model, the estimate and the GGUF reader alike, and llama.cpp's
//! file-type names (`general.file_type`).
//!
//! Sources: ggml/include/ggml.h `enum ggml_type` (ids), ggml/src/ggml.c `type_traits[]` (block
//! size, type size) and ggml/src/ggml-common.h (`block_q4_K` and friends: what each block holds),
//! llama.cpp `include/llama.h` `enum llama_ftype` (file types).

/// A ggml storage type: `type_traits[]` in ggml.c (block size, bytes per block).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct GgmlType {
    pub id: u32,
    pub name: &'static str,
    /// Elements per block; 0 for ids removed from GGUF files.
    pub block_size: u64,
    /// Bytes per block.
    pub type_size: u64,
}

impl GgmlType {
    pub const F32: GgmlType = GGML_TYPES[0];
    pub const F16: GgmlType = GGML_TYPES[1];
    pub const Q4_0: GgmlType = GGML_TYPES[2];
    pub const Q5_0: GgmlType = GGML_TYPES[6];
    pub const Q8_0: GgmlType = GGML_TYPES[8];
    pub const Q2K: GgmlType = GGML_TYPES[10];
    pub const Q3K: GgmlType = GGML_TYPES[11];
    pub const Q4K: GgmlType = GGML_TYPES[12];
    pub const Q5K: GgmlType = GGML_TYPES[13];
    pub const Q6K: GgmlType = GGML_TYPES[14];
    pub const BF16: GgmlType = GGML_TYPES[30];
    /// `block_iq2_xxs`: fp16 d + 32 uint16 qs = 66 bytes per 256 weights (2.0625 bits).
    pub const IQ2_XXS: GgmlType = GGML_TYPES[16];
    /// `block_iq2_xs`: fp16 d + 32 uint16 qs + 8 scale bytes = 74 bytes (2.3125 bits).
    pub const IQ2_XS: GgmlType = GGML_TYPES[17];
    /// `block_iq3_xxs`: fp16 d + 3·256/8 bytes = 98 bytes (3.0625 bits).
    pub const IQ3_XXS: GgmlType = GGML_TYPES[18];
    /// `block_iq4_nl`: fp16 d + 16 nibble bytes per 32 weights = 18 bytes (4.5 bits).
    pub const IQ4_NL: GgmlType = GGML_TYPES[20];
    /// `block_iq3_s`: fp16 d + 64 qs + 8 qh + 32 signs + 4 scales = 110 bytes (3.4375 bits).
    pub const IQ3_S: GgmlType = GGML_TYPES[21];
    /// `block_iq2_s`: fp16 d + 64 qs + 8 qh + 8 scales = 82 bytes (2.5625 bits).
    pub const IQ2_S: GgmlType = GGML_TYPES[22];
    /// `block_iq4_xs`: fp16 d + uint16 scales_h + 4 scales_l + 128 qs = 136 bytes (4.25 bits).
    pub const IQ4_XS: GgmlType = GGML_TYPES[23];
    /// OCP Microscaling FP4 (`GGML_TYPE_MXFP4` = 39 in ggml/include/ggml.h): `block_mxfp4` in
    /// ggml-common.h holds one E8M0 scale byte and 16 bytes of packed E2M1 values per 32
    /// weights = 17 bytes, 4.25 bits per weight.
    pub const MXFP4: GgmlType = GGML_TYPES[39];
    /// NVIDIA's block-scaled FP4 (`GGML_TYPE_NVFP4` = 40): `block_nvfp4` in ggml-common.h holds
    /// four UE4M3 scale bytes (one per 16 values) and 32 bytes of packed E2M1 values per 64
    /// weights = 36 bytes, 4.5 bits per weight.
    pub const NVFP4: GgmlType = GGML_TYPES[40];

    /// (bytes per block, elements per block).
    pub const fn block(self) -> (u64, u64) {
        (self.type_size, self.block_size)
    }
    /// Bits per element, block scales included (Q4_K: 144 × 8 / 256 = 4.5); 0 for removed ids.
    pub fn bits_per_weight(self) -> f64 {
        if self.block_size == 0 {
            0.0
        } else {
            self.type_size as f64 * 8.0 / self.block_size as f64
        }
    }
    /// The name ggml prints ("Q4_K").
    pub const fn name(self) -> &'static str {
        self.name
    }
    /// An id that GGUF files may no longer use (llama.cpp refuses it).
    pub const fn is_removed(self) -> bool {
        self.block_size == 0
    }
    pub const fn is_quantized(self) -> bool {
        self.block_size > 1
    }
    /// Bytes for `n` elements, rounded up to whole blocks (saturating; 0 for removed ids).
    pub const fn bytes_for(self, n: u64) -> u64 {
        if self.block_size == 0 {
            return 0;
        }
        n.div_ceil(self.block_size).saturating_mul(self.type_size)
    }
    /// Bytes of a tensor of `elements` elements whose rows are whole blocks (as the GGUF reader
    /// checks); `None` for removed ids or on overflow.
    pub const fn checked_bytes(self, elements: u64) -> Option<u64> {
        if self.block_size == 0 {
            return None;
        }
        (elements / self.block_size).checked_mul(self.type_size)
    }
}

const fn t(id: u32, name: &'static str, block_size: u64, type_size: u64) -> GgmlType {
    GgmlType {
        id,
        name,
        block_size,
        type_size,
    }
}

/// Every `ggml_type` id llama.cpp has defined (ggml/include/ggml.h `enum ggml_type`), with the
/// block layouts of ggml-common.h (`sizeof(block_q4_K)` = 144, …). Ids 4, 5, 31–33 and 36–38
/// were removed from GGUF files: llama.cpp refuses them (block size 0 here).
pub const GGML_TYPES: [GgmlType; 43] = [
    t(0, "F32", 1, 4),
    t(1, "F16", 1, 2),
    t(2, "Q4_0", 32, 18),   // fp16 d + 16 nibble bytes
    t(3, "Q4_1", 32, 20),   // fp16 d, m + 16
    t(4, "Q4_2", 0, 0),     // removed
    t(5, "Q4_3", 0, 0),     // removed
    t(6, "Q5_0", 32, 22),   // fp16 d + 4 qh + 16
    t(7, "Q5_1", 32, 24),   // fp16 d, m + 4 qh + 16
    t(8, "Q8_0", 32, 34),   // fp16 d + 32
    t(9, "Q8_1", 32, 36),   // fp16 d, s + 32
    t(10, "Q2_K", 256, 84), // 16 scales + 64 qs + 2 fp16
    t(11, "Q3_K", 256, 110),
    t(12, "Q4_K", 256, 144),
    t(13, "Q5_K", 256, 176),
    t(14, "Q6_K", 256, 210),
    t(15, "Q8_K", 256, 292),   // f32 d + 256 + 16 int16 bsums
    t(16, "IQ2_XXS", 256, 66), // fp16 d + 32 uint16
    t(17, "IQ2_XS", 256, 74),
    t(18, "IQ3_XXS", 256, 98),
    t(19, "IQ1_S", 256, 50),
    t(20, "IQ4_NL", 32, 18),
    t(21, "IQ3_S", 256, 110),
    t(22, "IQ2_S", 256, 82),
    t(23, "IQ4_XS", 256, 136),
    t(24, "I8", 1, 1),
    t(25, "I16", 1, 2),
    t(26, "I32", 1, 4),
    t(27, "I64", 1, 8),
    t(28, "F64", 1, 8),
    t(29, "IQ1_M", 256, 56),
    t(30, "BF16", 1, 2),
    t(31, "Q4_0_4_4", 0, 0), // removed (repacked at load time now)
    t(32, "Q4_0_4_8", 0, 0),
    t(33, "Q4_0_8_8", 0, 0),
    t(34, "TQ1_0", 256, 54),
    t(35, "TQ2_0", 256, 66),
    t(36, "IQ4_NL_4_4", 0, 0),
    t(37, "IQ4_NL_4_8", 0, 0),
    t(38, "IQ4_NL_8_8", 0, 0),
    t(39, "MXFP4", 32, 17), // E8M0 scale + 16
    t(40, "NVFP4", 64, 36), // 4 UE4M3 scales + 32
    t(41, "Q1_0", 128, 18), // fp16 d + 16
    t(42, "Q2_0", 64, 18),  // fp16 d + 16
];

/// The ggml type with this id, removed ones included (check [`GgmlType::is_removed`]).
pub fn ggml_type(id: u32) -> Option<GgmlType> {
    GGML_TYPES.get(id as usize).copied()
}

/// llama.cpp's `llama_ftype` names (`general.file_type`), e.g. 15 → "Q4_K_M".
pub fn file_type_name(ftype: u64) -> Option<&'static str> {
    // LLAMA_FTYPE_GUESSED (1024) marks a type guessed by llama.cpp, not written by a converter.
    Some(match ftype & !1024 {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        4 => "Q4_1_SOME_F16",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        19 => "IQ2_XXS",
        20 => "IQ2_XS",
        21 => "Q2_K_S",
        22 => "IQ3_XS",
        23 => "IQ3_XXS",
        24 => "IQ1_S",
        25 => "IQ4_NL",
        26 => "IQ3_S",
        27 => "IQ3_M",
        28 => "IQ2_S",
        29 => "IQ2_M",
        30 => "IQ4_XS",
        31 => "IQ1_M",
        32 => "BF16",
        33 => "Q4_0_4_4",
        34 => "Q4_0_4_8",
        35 => "Q4_0_8_8",
        36 => "TQ1_0",
        37 => "TQ2_0",
        38 => "MXFP4_MOE",
        39 => "NVFP4",
        40 => "Q1_0",
        41 => "Q2_0",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_indices_and_named_types_match() {
        for (i, t) in GGML_TYPES.iter().enumerate() {
            assert_eq!(t.id as usize, i, "{}", t.name);
        }
        assert_eq!(GgmlType::Q4K.name(), "Q4_K");
        assert_eq!(GgmlType::Q6K.name(), "Q6_K");
        assert_eq!(GgmlType::BF16.name(), "BF16");
        assert_eq!(GgmlType::Q5_0.name(), "Q5_0");
        assert_eq!(GgmlType::Q2K.name(), "Q2_K");
    }

    #[test]
    fn block_sizes_match_ggml_common_h() {
        // QK_K = 256: block_q4_K = 2 fp16 + 12 scales + 128 qs = 144 bytes → 4.5 bits.
        assert_eq!(GgmlType::Q4K.bits_per_weight(), 4.5);
        assert_eq!(GgmlType::Q8_0.bits_per_weight(), 8.5);
        assert_eq!(GgmlType::Q6K.bits_per_weight(), 6.5625);
        assert_eq!(GgmlType::Q4_0.bytes_for(33), 36);
        assert_eq!(GgmlType::Q4_0.checked_bytes(64), Some(36));
        let removed = ggml_type(4).unwrap();
        assert!(removed.is_removed());
        assert_eq!(removed.bytes_for(100), 0);
        assert_eq!(removed.checked_bytes(100), None);
        assert!(ggml_type(43).is_none());
        assert_eq!(file_type_name(15), Some("Q4_K_M"));
        assert_eq!(file_type_name(15 | 1024), Some("Q4_K_M"));
    }
}
