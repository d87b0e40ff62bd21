//! ALU work of llama.cpp's Metal mat-vec kernels (`kernel_mul_mv_*_f32`, ggml-metal.metal), the
//! kernels a decoded token's weights run through.
//!
//! Each thread of a SIMD group multiplies a run of weights of a row by the F32 activations:
//! it masks the packed integer codes (`q & 0x000F`, …), converts each code to float and
//! FMAs it with an activation pre-scaled for the code's bit position (`block_q_n_dot_y`;
//! `kernel_mul_mv_q4_K_f32_impl`, `kernel_mul_mv_q6_K_f32_impl`, `kernel_mul_mv_q8_0_f32_impl`).
//! On Apple GPUs the masks, adds and FMAs issue at one instruction per cycle per SIMD lane,
//! while integer→float conversions, shifts and bit extracts run on the "integer and complex
//! math" pipeline at one per 4 cycles (Philip Turner, metal-benchmarks, README "ALU Layout" and
//! "Instruction Throughputs": CONVERT(I->F) 4 cycles, LSHIFT32 / BITEXTRACT32 4 cycles, FFMA32
//! and BITWISE32 1 cycle, measured on the M1 Max; the simple ops overlap the complex one:
//! "IMUL32 + 2 FMUL32" takes 4 cycles). So a quantised weight costs at least 4 lane-cycles —
//! more than its bytes on the chips with the least ALU per byte of bandwidth.

use crate::core::precision::GgmlType;

/// Lane-cycles per weight of one integer→float conversion on the complex pipeline (CONVERT
/// throughput 4 cycles: metal-benchmarks, "Instruction Throughputs", M1 Max).
pub const CONVERT_CYCLES: f64 = 4.0;

/// ALU issue cycles per weight, per SIMD lane, of the Metal mat-vec kernel for weights of type
/// `t`, counted from the kernels' code (ggml-metal.metal; the same arithmetic in the May 2024
/// and the 2026 sources) at the throughputs above:
///
/// - `Q4_0`/`Q4_1`/`Q5_0`/`Q5_1`/`Q8_0`/`IQ4_NL` and other integer-coded types: one conversion
///   per weight (`yl[i] * (qs[i/2] & 0x000F)`, `qs[i] * yl[i]`), the mask and FMA overlapping
///   it: 4.
/// - `Q4_K`: one conversion per weight, and per 32 weights of a row 3 shifts and 8 byte→float
///   conversions of the 6-bit scales (`sc16`, `sc8`): (32 + 11) / 32 × 4 = 5.4.
/// - `Q6_K`: per 4 weights 2 shifts of the low nibbles (`q1[l] >> 4`), 3 of the high bits
///   (`(qh[l] & kmask1) << 4`, `<< 2`, `>> 2`) and 4 conversions, and per 16 weights 4
///   conversions of the 8-bit scales: (9 + 1) / 4 × 4 = 10.
/// - 16/32-bit floats: no conversion (16-bit operands are read at no cost: metal-benchmarks,
///   "ALU Layout"), one FMA: 1.
pub fn mv_issue_cycles(t: GgmlType) -> f64 {
    match t.name() {
        "F32" | "F16" | "BF16" => 1.0,
        "Q4_K" => (32.0 + 11.0) / 32.0 * CONVERT_CYCLES,
        "Q6_K" => (9.0 + 1.0) / 4.0 * CONVERT_CYCLES,
        _ => CONVERT_CYCLES,
    }
}

/// Issue cycles per weight of a step that multiplies `b` sequences' activations (`ne11 = b`).
/// For 2–8 columns llama.cpp runs `kernel_mul_mv_ext_*` (ggml-metal-ops.cpp,
/// `ggml_metal_op_mul_mat`: F16/F32/BF16, Q4_0…Q8_0, MXFP4, IQ4_NL from 2 columns; Q2_K…Q6_K
/// from 4), which dequantises a weight once for `r1ptg` columns (2 at `b` = 2, 3 at 3 and 6, 4 at
/// 4, 7 and 8, 5 at 5) and FMAs it with each: the conversion work is paid once per group of
/// columns, one FMA cycle per column. Otherwise (`b` = 1, k-quants at 2–3, over 8: the GEMM
/// path, not modelled here) each column repeats the whole kernel.
pub fn batch_issue_cycles(t: GgmlType, b: u64) -> f64 {
    let one = mv_issue_cycles(t);
    let b = b.max(1);
    let k_quant = matches!(t.name(), "Q2_K" | "Q3_K" | "Q4_K" | "Q5_K" | "Q6_K");
    let ext = (2..=8).contains(&b) && (!k_quant || b >= 4);
    if !ext {
        return one * b as f64;
    }
    let r1ptg = match b {
        2 => 2,
        3 | 6 => 3,
        5 => 5,
        _ => 4,
    };
    let groups = b.div_ceil(r1ptg) as f64;
    groups * (one - 1.0).max(0.0) + b as f64
}

/// ALU issue cycles (per SIMD lane) of one decode step of `b` sequences through the weight
/// mat-vecs: the sum over the estimate's active elements by type ([`batch_issue_cycles`]).
pub fn token_issue_cycles(by_type: &[(GgmlType, u64)], b: u64) -> f64 {
    by_type
        .iter()
        .map(|(t, e)| *e as f64 * batch_issue_cycles(*t, b))
        .sum()
}

/// Lane-cycles per second of a GPU whose FP32 rate is `vector_tflops` (an FMA is two FLOPs
/// and one lane-cycle: cores × 128 lanes × clock on Apple GPUs).
pub fn lane_cycles_per_s(vector_tflops: f64) -> f64 {
    (vector_tflops.max(0.001) * 1e12 / 2.0).max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k_quants_cost_more_alu_than_q4_0_and_floats_least() {
        let q40 = mv_issue_cycles(GgmlType::Q4_0);
        let q4k = mv_issue_cycles(GgmlType::Q4K);
        let q6k = mv_issue_cycles(GgmlType::Q6K);
        let f16 = mv_issue_cycles(GgmlType::F16);
        assert!(
            f16 < q40 && q40 < q4k && q4k < q6k,
            "{f16} {q40} {q4k} {q6k}"
        );
        assert_eq!(mv_issue_cycles(GgmlType::Q8_0), CONVERT_CYCLES);
    }

    #[test]
    fn small_batches_share_the_dequantisation() {
        // Q4_0 at 4 columns: one conversion pass (3 cycles) + 4 FMAs, not 4 × 4.
        assert_eq!(batch_issue_cycles(GgmlType::Q4_0, 4), 3.0 + 4.0);
        // Q4_K at 2 columns runs the plain kernel twice (no ext kernel below 4 columns).
        let q4k = mv_issue_cycles(GgmlType::Q4K);
        assert_eq!(batch_issue_cycles(GgmlType::Q4K, 2), 2.0 * q4k);
        assert!(batch_issue_cycles(GgmlType::Q4K, 4) < 2.0 * q4k);
        // Monotone in the batch within one kernel (k-quants switch to the ext kernel at 4
        // columns, which dequantises once for 4: cheaper than 3 plain passes), and never
        // cheaper per column than one FMA.
        for t in [GgmlType::Q4_0, GgmlType::Q4K, GgmlType::Q6K, GgmlType::F16] {
            for b in 1..8 {
                if !(b == 3 && matches!(t.name(), "Q4_K" | "Q6_K")) {
                    assert!(
                        batch_issue_cycles(t, b + 1) >= batch_issue_cycles(t, b),
                        "{t:?} {b}"
                    );
                }
                assert!(batch_issue_cycles(t, b) >= b as f64);
            }
        }
    }

    #[test]
    fn token_cycles_sum_by_type() {
        let c = token_issue_cycles(&[(GgmlType::Q4_0, 1000), (GgmlType::F16, 10)], 1);
        assert_eq!(c, 1000.0 * 4.0 + 10.0);
        assert_eq!(token_issue_cycles(&[], 1), 0.0);
        // M1 Max: 32 cores × 128 lanes × 1.296 GHz = 5.3e12 lane-cycles/s = 10.6 TFLOPS / 2.
        assert!((lane_cycles_per_s(10.6) - 5.3e12).abs() < 1e9);
    }
}
