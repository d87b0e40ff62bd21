//! MLX through mlx-lm on Apple silicon: how it stores weights and the KV cache, how much of
//! unified memory it may take, where it runs at all.
//!
//! Sources (ml-explore/mlx and ml-explore/mlx-lm, read at mlx 846d176 and mlx-lm d78bf58):
//! - weights: `mlx_lm/utils.py`, `quantize_model` (affine mode, defaults group 64 / 4 bits;
//!   mxfp4 32/4, nvfp4 16/4, mxfp8 32/8) calls `nn.quantize` on every module with
//!   `to_quantized` — `nn.Linear` and `nn.Embedding` alike — whose last dimension is a multiple
//!   of the group (`module.weight.shape[-1] % group_size != 0` stays unquantised);
//!   `mlx/ops.cpp`, `quantize`: packed `uint32` words plus one scale and one bias per group in
//!   the weight's dtype, so N + 2 × 16 / group bits per weight (4-bit, group 64: 4.5;
//!   `mlx_lm/LEARNED_QUANTS.md`: "a BPW in the range [4.5, 5.5]" for 4 and 5 bits);
//! - KV cache: `mlx_lm/models/cache.py`, `KVCache.update_and_fetch` grows the buffers in steps of
//!   256 tokens (`step = 256`); `RotatingKVCache` (sliding-window layers, `--max-kv-size`) keeps
//!   at most `max_size` tokens, `max_size + S − 1` while a prefill chunk of `S` is concatenated
//!   (`_update_concat`); `QuantizedKVCache` (`--kv-bits`, `--kv-group-size` 64) stores the same
//!   affine layout as the weights;
//! - prefill: `mlx_lm/generate.py`, `generate_step`, `prefill_step_size = 2048` tokens per step
//!   (`mlx_lm.server --prefill-step-size`, default 2048);
//! - memory limit: `mlx_lm/generate.py`, `wired_limit`, and `mlx_lm/server.py`, `main`, call
//!   `mx.set_wired_limit(max_recommended_working_set_size)` — Metal's
//!   `recommendedMaxWorkingSetSize`, the cap the unified-memory tier already uses
//!   ([`crate::core::catalog::metal_default_limit`]); mlx-lm warns "This can be slow" when the
//!   model takes more than 0.9 of it. MLX's allocator (`mlx/backend/metal/allocator.cpp`,
//!   `MetalAllocator`) lets arrays grow to `min(1.5 × that, 0.95 × RAM)` before it refuses, but
//!   past the wired limit the pages are not wired and macOS may page them out.

pub mod launch_line;

use crate::core::catalog::{Accelerator, Vendor};
use crate::core::precision::{KvPrecision, TensorClass, WeightPrecision};
use crate::core::scenario::{Runtime, Scenario};

/// mlx-lm's affine group size (`quantize_model`, `mode_defaults["affine"] = (64, 4)`).
pub const DEFAULT_GROUP_SIZE: u64 = 64;
/// Bits of the scale and the bias each group carries: two 16-bit values in the model's dtype.
pub const GROUP_PARAM_BITS: f64 = 32.0;
/// `KVCache.step`, `QuantizedKVCache.step`, `RotatingKVCache.step` in mlx_lm/models/cache.py.
pub const KV_STEP: u64 = 256;
/// `generate_step(prefill_step_size=2048)` in mlx_lm/generate.py; `mlx_lm.server
/// --prefill-step-size` defaults to it too.
pub const PREFILL_STEP_SIZE: u64 = 2048;
/// `QuantizedKVCache(group_size=64)` and `generate_step(kv_group_size=64)`.
pub const KV_GROUP_SIZE: u64 = 64;
/// mlx-lm warns when the model exceeds this share of `max_recommended_working_set_size`
/// (`wired_limit` in mlx_lm/generate.py).
pub const SLOW_SHARE: f64 = 0.9;
/// MLX's Metal allocator refuses allocations past `min(1.5 × max_recommended_working_set_size,
/// 0.95 × RAM)` (`block_limit_` in mlx/backend/metal/allocator.cpp).
pub const ALLOCATOR_LIMIT_OF_RECOMMENDED: f64 = 1.5;

/// The MLX weight precisions from most to fewest bits, as mlx-community publishes them
/// (`-bf16`, `-8bit`, `-6bit`, `-5bit`, `-4bit`, `-3bit`): the ladder the precision solver
/// steps down under `--runtime mlx`.
pub const PRECISION_LADDER: [WeightPrecision; 6] = [
    WeightPrecision::Bf16,
    WeightPrecision::Mlx8,
    WeightPrecision::Mlx6,
    WeightPrecision::Mlx5,
    WeightPrecision::Mlx4,
    WeightPrecision::Mlx3,
];

/// Bits per weight of MLX's affine quantisation: `bits` per value plus a 16-bit scale and a
/// 16-bit bias per `group` values (4-bit at group 64: 4.5; at group 32: 5.0; at 128: 4.25).
pub fn affine_bits_per_weight(bits: u32, group: u64) -> f64 {
    f64::from(bits) + GROUP_PARAM_BITS / group.max(1) as f64
}

/// Bytes of one tensor group (`elements` values in rows of `row`) of class `class` stored at
/// `bits`-bit affine quantisation with groups of `group`, as `quantize_model` leaves it: every
/// matrix — the token embedding and the output head included — is quantised when its row (the
/// last dimension) is a multiple of the group; norms, biases and anything whose row is not stay
/// in the 16-bit model dtype.
pub fn affine_tensor_bytes(
    bits: u32,
    group: u64,
    class: TensorClass,
    elements: u64,
    row: u64,
) -> u64 {
    let group = group.max(1);
    let quantised = class != TensorClass::Small && row > 0 && row.is_multiple_of(group);
    if !quantised {
        return elements.saturating_mul(2);
    }
    // Packed values (whole bytes: a row of a multiple of 64 values fills whole words at 2–8
    // bits) plus a 2-byte scale and a 2-byte bias per group.
    let packed = elements.saturating_mul(u64::from(bits)) / 8;
    let groups = elements / group;
    packed.saturating_add(groups.saturating_mul(4))
}

/// Whether MLX loads weights stored at `w`: the 16/32-bit dtypes, its affine quantisation and
/// MXFP4 (`mode="mxfp4"` in `mx.quantize`, the gpt-oss checkpoints). GGUF files, bitsandbytes,
/// GPTQ/AWQ and the FP8 formats are other runtimes' layouts (mlx-lm converts from the 16-bit
/// checkpoint instead).
pub fn loads_weights(w: WeightPrecision) -> bool {
    w.mlx_bits().is_some()
        || matches!(
            w,
            WeightPrecision::Fp32
                | WeightPrecision::Fp16
                | WeightPrecision::Bf16
                | WeightPrecision::Mxfp4
        )
}

/// The mlx-community precision closest to `w` (for the note when a scenario asks MLX for a
/// layout it does not load): the affine width with about the same bits.
pub fn nearest_precision(w: WeightPrecision) -> WeightPrecision {
    let bits = w.bits_per_weight();
    PRECISION_LADDER
        .into_iter()
        .filter(|p| *p != WeightPrecision::Bf16 || bits >= 12.0)
        .min_by(|a, b| {
            (a.bits_per_weight() - bits)
                .abs()
                .total_cmp(&(b.bits_per_weight() - bits).abs())
        })
        .unwrap_or(WeightPrecision::Mlx4)
}

/// The `--kv-bits` of mlx-lm a cache type stands for: Q8_0 and Q4_0 (8.5 and 4.5 bits per
/// element: 32 values + one 16-bit scale) take the same bytes as MLX's 8- and 4-bit affine
/// cache at group 64 (8 or 4 bits + a 16-bit scale and bias per 64 = 8.5 and 4.5 bits), so the
/// estimate's cache bytes hold for both. `None`: an unquantised cache.
pub fn kv_bits(k: KvPrecision) -> Option<u32> {
    match k {
        KvPrecision::Q8_0 => Some(8),
        KvPrecision::Q4_0 => Some(4),
        _ => None,
    }
}

/// Tokens the cache of one full-attention layer holds after `tokens` tokens: `KVCache` grows in
/// whole steps of [`KV_STEP`] (mlx-lm allocates `ceil(n / 256) × 256` more whenever a chunk of
/// `n` does not fit).
pub fn kv_cells(tokens: u64) -> u64 {
    tokens.div_ceil(KV_STEP).saturating_mul(KV_STEP)
}

/// Tokens a sliding-window layer's `RotatingKVCache(max_size = window)` holds at its peak while
/// `tokens` tokens pass in prefill chunks of `step`: the concatenation keeps `window + step − 1`
/// while a chunk is appended (`_update_concat`), never more than the tokens seen, rounded to
/// [`KV_STEP`] only while it is still growing one token at a time.
pub fn rotating_cells(window: u64, tokens: u64, step: u64) -> u64 {
    let peak = window.saturating_add(step.max(1)).saturating_sub(1);
    if tokens <= window {
        kv_cells(tokens).min(window.max(1))
    } else {
        tokens.min(peak)
    }
}

/// The prefill chunk mlx-lm runs for this scenario: `--prefill-step-size` (default 2048), no
/// more than the prompt.
pub fn prefill_step(s: &Scenario) -> u64 {
    s.launch
        .prefill_step
        .unwrap_or(PREFILL_STEP_SIZE)
        .clamp(1, super::scenario::rules::MAX_UBATCH)
        .min(s.prompt_tokens.max(1))
}

/// Whether `acc` is an Apple GPU, the only kind MLX's Metal backend runs on.
pub fn runs_on(acc: Option<&Accelerator>) -> bool {
    acc.is_some_and(|a| a.vendor == Vendor::Apple)
}

/// Whether the scenario asks MLX to run inference on a machine without an Apple GPU (the fit's
/// `Note::NeedsAppleSilicon` says why).
pub fn refused(s: &Scenario, acc: Option<&Accelerator>) -> bool {
    s.runtime == Runtime::Mlx && !s.mode.is_training() && !runs_on(acc)
}

/// MLX's allocator ceiling for a GPU whose recommended working set is `recommended` bytes on a
/// machine with `ram` bytes: `min(1.5 × recommended, 0.95 × RAM)`.
pub fn allocator_limit(recommended: u64, ram: u64) -> u64 {
    let a = recommended as f64 * ALLOCATOR_LIMIT_OF_RECOMMENDED;
    let b = ram as f64 * 0.95;
    a.min(b).max(0.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affine_bits_are_bits_plus_two_16_bit_params_per_group() {
        assert_eq!(affine_bits_per_weight(4, 64), 4.5);
        assert_eq!(affine_bits_per_weight(8, 64), 8.5);
        assert_eq!(affine_bits_per_weight(4, 32), 5.0);
        assert_eq!(affine_bits_per_weight(4, 128), 4.25);
        assert_eq!(WeightPrecision::Mlx4.bits_per_weight(), 4.5);
        assert_eq!(WeightPrecision::Mlx3.bits_per_weight(), 3.5);
        assert_eq!(WeightPrecision::Mlx6.bits_per_weight(), 6.5);
    }

    #[test]
    fn tensors_quantise_only_when_the_row_divides_into_groups() {
        // 4096 × 4096 at 4 bits: 8 MiB packed + 262,144 groups × 4 B.
        let b = affine_tensor_bytes(4, 64, TensorClass::AttnQ, 4096 * 4096, 4096);
        assert_eq!(b, 4096 * 4096 / 2 + 4096 * 4096 / 64 * 4);
        // The embedding is quantised too.
        assert_eq!(
            affine_tensor_bytes(4, 64, TensorClass::TokenEmbedding, 4096 * 1000, 4096),
            b / 4096 * 1000
        );
        // A row of 100 does not divide into groups of 64: 16-bit.
        assert_eq!(
            affine_tensor_bytes(4, 64, TensorClass::FfnDown, 100 * 10, 100),
            2000
        );
        // Norms stay 16-bit.
        assert_eq!(
            affine_tensor_bytes(4, 64, TensorClass::Small, 4096, 0),
            8192
        );
    }

    #[test]
    fn the_cache_grows_in_steps_of_256() {
        assert_eq!(kv_cells(1), 256);
        assert_eq!(kv_cells(256), 256);
        assert_eq!(kv_cells(257), 512);
        assert_eq!(kv_cells(2176), 2304);
        // A sliding window of 4096 after 32K tokens in 2048-token chunks: 4096 + 2047 at peak.
        assert_eq!(rotating_cells(4096, 32_768, 2048), 6143);
        assert_eq!(rotating_cells(4096, 1000, 2048), 1024);
        assert_eq!(rotating_cells(4096, 5000, 2048), 5000);
    }

    #[test]
    fn allocator_ceiling() {
        // 64 GiB Mac: recommended 48 GiB → 72 GiB, capped at 0.95 × 64 GiB.
        let gib = 1u64 << 30;
        assert_eq!(
            allocator_limit(48 * gib, 64 * gib),
            (64.0 * 0.95 * gib as f64) as u64
        );
        assert_eq!(allocator_limit(10 * gib, 64 * gib), 15 * gib);
    }

    #[test]
    fn nearest_mlx_precision() {
        assert_eq!(
            nearest_precision(WeightPrecision::Q4KM),
            WeightPrecision::Mlx4
        );
        assert_eq!(
            nearest_precision(WeightPrecision::Q5KM),
            WeightPrecision::Mlx5
        );
        assert_eq!(
            nearest_precision(WeightPrecision::Q4_0),
            WeightPrecision::Mlx4
        );
        assert_eq!(
            nearest_precision(WeightPrecision::Q8_0),
            WeightPrecision::Mlx8
        );
        assert_eq!(
            nearest_precision(WeightPrecision::Fp16),
            WeightPrecision::Bf16
        );
    }
}
