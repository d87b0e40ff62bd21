//! Prompt processing: the prompt runs in ubatches of `U` tokens, each at its own depth, and the
//! rate is the prompt's tokens over the sum of the ubatches' times (llama.cpp splits a batch into
//! ubatches in `llama_context::decode`; llama-bench's `pp N` test is one such prompt). A ubatch
//! at depth `d` costs:
//!
//! `t = max(dense FLOPs ÷ rate + expert FLOPs ÷ (rate × tile efficiency) + attention FLOPs ÷ F16
//!      rate, weight bytes touched ÷ bandwidth) + (KQ bytes + expert output bytes) ÷ bandwidth
//!      + layers × t_layer`
//!
//! - Expert GEMMs (`mul_mat_id`): each expert receives `λ = U · k / E` tokens on average and
//!   its tokens fill whole tiles of the kernel's token tile `T` ([`moe_tile_efficiency`]); the
//!   k separate expert outputs per token add their bytes ([`EXPERT_OUTPUT_BYTES_PER_HIDDEN`]).
//! - Attention: `4 · layers · heads · head_dim` FLOPs per token per attended position, at the
//!   backend's 16-bit GEMM rate whatever the weights' type (the KV cache is F16). With
//!   FlashAttention the kernel skips the masked half of the ubatch's own block (`d + U/2`);
//!   without it llama.cpp computes the whole `n_kv = d + U` and materialises the F32 scores:
//!   `heads · n_kv · U` per layer, each moving the profile's `kq_bytes_per_score`.
//! - The output head runs for the last token only (llama.cpp outputs the last token's logits
//!   unless asked for more: `llama_batch_get_one`, `llama_context::decode` `n_outputs`).

use super::{Backend, GpuDevice, Placed, Shape, SpeedQuery, attention_flops_over, experts_touched};

/// Share of the FP16 matrix rate the HIP build's MMA FlashAttention kernel reaches on RDNA
/// (WMMA): ggml-cuda `fattn.cu` `ggml_cuda_get_best_fattn_kernel` takes it when the query heads
/// of a KV head can be packed into one tile (`gqa_opt_applies`: ≥ 2 per KV head, heads ≤ 128).
/// From the pair that isolates it on a Radeon 8060S (kyuz0/amd-strix-halo-toolboxes, ROCm 7.2.3,
/// build 9193, Ministral-3-14B BF16, 4 query heads per KV head): pp512 at depth 0 against
/// pp2048 at 32,768 and 65,536 leave 13.6 and 12.4 TFLOPS for the attention FLOPs, 0.23 and 0.21
/// of its 59.4.
pub const ROCM_FA_MMA_SHARE: f64 = 0.22;

/// Share of the FP32 vector rate the HIP build's tile FlashAttention kernel reaches: the kernel
/// `ggml_cuda_get_best_fattn_kernel` falls back to on AMD consumer parts when the heads cannot be
/// grouped (multi-head attention, heads > 128); it multiplies on the vector ALUs
/// (`fattn-tile.cuh`). From the Llama-2-7B Q4_0 pair of the same runs (32 KV heads for 32 query
/// heads, build 9187): 3.1 and 2.6 TFLOPS at depth 32,768 and 65,536, 0.11 and 0.09 of 29.7.
pub const ROCM_FA_TILE_SHARE: f64 = 0.10;

/// Share of the FP32 vector rate ggml-vulkan's FlashAttention reaches on parts without
/// `VK_NV_cooperative_matrix2` (`ggml_vk_flash_attn`: the scalar `flash_attn.comp` or
/// `flash_attn_cm1.comp`, whose `P·V` product and softmax run on the vector ALUs). From the
/// Radeon 8060S RADV pairs (kyuz0/amd-strix-halo-toolboxes, builds 9187/9193): Llama-2-7B Q4_0
/// 4.5 and 3.0 TFLOPS, Ministral-3-14B 2.5 and 1.8 TFLOPS at depth 32,768 and 65,536 (0.15, 0.10,
/// 0.09, 0.06 of 29.7); llama.cpp PR 18280 (December 2025) Llama-3-8B Q4_K_S pp512 487 → 269 at
/// depth 8,192: 2.6 TFLOPS (0.09). Their geometric mean.
pub const VULKAN_FA_VECTOR_SHARE: f64 = 0.09;

/// Share of the bandwidth the weights stream at that ROCm's FlashAttention vector kernel reaches
/// reading the KV cache in decode. `ggml_cuda_get_best_fattn_kernel` (ggml-cuda `fattn.cu`) sends
/// a one-token query whose heads cannot be grouped (`!gqa_opt_applies`: multi-head attention) to
/// `fattn-vec.cuh`, one block per query head; grouped heads go to the tile or MMA kernel, which
/// reads each KV head once for its group at the full rate. From the Llama-2-7B Q4_0 pair on a
/// Radeon 8060S (kyuz0/amd-strix-halo-toolboxes, ROCm 7.2.3, build 9187): tg128 at depth 0
/// against tg32 at 32,768 and 65,536 leaves 159 and 314 ms per token for 17.2 and 34.4 GB of
/// cache, 0.46 and 0.47 of the 235 GB/s the weights stream at (Ministral-3-14B, grouped: 1.00).
pub const ROCM_FA_VEC_KV_SHARE: f64 = 0.46;

/// The same for ggml-vulkan's FlashAttention on parts without coopmat2 when the heads cannot be
/// grouped (`ggml_vk_flash_attn` packs a KV head's query rows into one workgroup only for
/// grouped-query attention, llama.cpp PR 18938): the Llama-2-7B RADV pair leaves 100 and 200 ms
/// per token for the same 17.2 and 34.4 GB, 0.73 and 0.73 (Ministral-3-14B: 0.98 and 1.01).
pub const VULKAN_FA_UNGROUPED_KV_SHARE: f64 = 0.73;

/// The share of the achievable bandwidth a decode step's FlashAttention kernel reads the KV
/// cache at (1: the weights' rate): below 1 only for the ungrouped paths of ROCm
/// ([`ROCM_FA_VEC_KV_SHARE`]) and of Vulkan without coopmat2 ([`VULKAN_FA_UNGROUPED_KV_SHARE`]).
/// `grouped`: ≥ 2 query heads per KV head, or MLA (whose 576/512 kernels always group).
pub(super) fn flash_decode_kv_share(backend: Backend, nvidia: bool, grouped: bool) -> f64 {
    if grouped {
        return 1.0;
    }
    match backend {
        Backend::Rocm => ROCM_FA_VEC_KV_SHARE,
        Backend::Vulkan if !nvidia => VULKAN_FA_UNGROUPED_KV_SHARE,
        _ => 1.0,
    }
}

/// The FLOP rate of the FlashAttention kernel that runs a prompt's attention where it is not the
/// backend's 16-bit GEMM rate (`None`: that rate, the CUDA MMA kernel's and Vulkan's coopmat2
/// one). ROCm on AMD consumer parts: the grouped MMA kernel ([`ROCM_FA_MMA_SHARE`] of the FP16
/// matrix rate) or the tile kernel ([`ROCM_FA_TILE_SHARE`] of the vector rate); CDNA parts take
/// the MMA kernel at any grouping (`amd_mfma_available`). Vulkan without coopmat2:
/// [`VULKAN_FA_VECTOR_SHARE`] of the vector rate.
pub(super) fn flash_attention_rate(
    backend: Backend,
    g: &GpuDevice,
    gqa: f64,
    head_dim: f64,
) -> Option<f64> {
    match backend {
        Backend::Rocm if !g.nvidia() && !g.amd_cdna => {
            let grouped = gqa >= 2.0 && head_dim <= 128.0;
            Some(if grouped {
                g.fp16_tflops * 1e12 * ROCM_FA_MMA_SHARE
            } else {
                g.vector_tflops * 1e12 * ROCM_FA_TILE_SHARE
            })
        }
        Backend::Vulkan if !g.nvidia() => Some(g.vector_tflops * 1e12 * VULKAN_FA_VECTOR_SHARE),
        _ => None,
    }
    .map(|r| r.max(1.0))
}

/// Most ubatches evaluated one by one; longer prompts are sampled at this many evenly spaced
/// depths (the cost is linear in depth between them, so the midpoint rule is exact for it).
const MAX_UBATCH_EVALS: u64 = 64;

/// Bytes each (token, routed expert) slot moves per hidden element outside the expert GEMMs:
/// llama.cpp keeps every selected expert's output apart until the router weights are applied
/// (`llm_graph_context::build_moe_ffn`: the down `mul_mat_id` writes an F32 `[n_embd,
/// n_expert_used, n_tokens]` tensor, 4 B; `ggml_mul` by the weights reads and writes it, 8 B;
/// the `ggml_add` of the k expert views reads it, 4 B). A dense FFN writes one F32 row per
/// token where a mixture writes k; the FFN-width intermediates (gate, up, GLU) cost a mixture
/// what they cost a dense FFN of the same active width, which the dense kernel rates already
/// carry. These are separate element-wise kernels: their time adds to the GEMMs'.
pub const EXPERT_OUTPUT_BYTES_PER_HIDDEN: f64 = 16.0;

/// The token tile the expert GEMM runs at for a ubatch of `tokens`: the kernels size it for the
/// ubatch's token count, the most one expert can get, so a ubatch below the largest tile `tile`
/// takes the smallest tile covering it (ggml-cuda mmq.cuh `mul_mat_q_case`: `mmq_x` in steps of
/// 8 up to the maximum, fewest tiles of `ncols_max`; ggml-vulkan `ggml_vk_guess_matmul_id_pipeline`:
/// the small and medium tiles at ≤ 32 and ≤ 64 tokens).
pub fn moe_kernel_tile(tile: f64, tokens: f64) -> f64 {
    if tile.is_nan() || tile <= 0.0 || tokens.is_nan() || tokens <= 0.0 {
        return tile;
    }
    tile.min((tokens / 8.0).ceil() * 8.0)
}

/// Weight bytes one ubatch of `u` tokens streams from memory when its GEMM kernel covers at
/// most `tile` tokens per pass over the weights (0: one read). llama.cpp's GPU GEMMs compute one
/// output tile of weight rows × token columns per workgroup and walk the weight-row tiles
/// fastest: ggml-cuda mmq.cuh `launch_mul_mat_q` (grid `(nty, ntx)` = weight-row tiles ×
/// `mmq_x` token tiles; the stream-k kernel orders its work token tile outermost), ggml-vulkan
/// `mul_mm.comp` (workgroups over `{m, n}`) and Metal `kernel_mul_mm` (threadgroups over 64
/// weight rows × 32 tokens): each token tile reads every weight of the matrix again, and a
/// model's matrices (tens of MB each) pass the GPU's last-level cache between two passes. The
/// dense weights are read `⌈U ÷ T⌉` times; an expert's weights once per tile of the tokens it
/// receives (`λ = U · k / E` among the experts the ubatch touches).
pub(super) fn streamed_weight_bytes(sh: &Shape, u: f64, tile: f64, expert_tile: f64) -> f64 {
    let passes = |tokens: f64, tile: f64| {
        if tile > 0.0 && tokens > 0.0 {
            (tokens / moe_kernel_tile(tile, tokens)).ceil().max(1.0)
        } else {
            1.0
        }
    };
    let per_layer_params = (sh.active_params - sh.head_params).max(1.0);
    let routed_read = sh.layer_read * (sh.routed_active / per_layer_params).clamp(0.0, 1.0);
    let dense = (sh.layer_read - routed_read).max(0.0);
    let experts = (sh.layer_total - dense).max(0.0);
    let Some((e, k)) = sh.moe.filter(|(e, _)| *e > 0.0) else {
        return dense * passes(u, tile) + experts;
    };
    let share = experts_touched(sh.moe, u);
    let per_expert = u * k.min(e) / (e * share.max(1e-9));
    dense * passes(u, tile) + experts * share * passes(per_expert, expert_tile)
}

/// Share of an expert GEMM's tiles that carry real tokens: `λ ÷ (T · E[⌈n / T⌉])` with the
/// tokens per expert `n` Poisson-distributed around `λ = U · k / E` (uniform routing; real
/// routers are skewed, which only adds tiles). A tile costs the same however many of its `T`
/// columns are filled: the kernels load, dequantise and multiply the whole tile and only mask
/// the write-back (ggml-cuda mmq.cuh `mul_mat_q_process_tile` accumulates `mmq_x × mmq_y`
/// sums whatever `tile_y_max_j`; Vulkan `mul_mm.comp` and Metal `kernel_mul_mm_id` run their
/// cooperative / simdgroup matrices over the whole tile).
pub fn moe_tile_efficiency(lambda: f64, tile: f64) -> f64 {
    // NaN or non-positive input: no waste.
    if tile.is_nan() || lambda.is_nan() || tile <= 1.0 || lambda <= 0.0 {
        return 1.0;
    }
    // E[⌈n/T⌉] = Σ_{j ≥ 0} P(n > j·T) for n ≥ 0 integer.
    let mut expected_tiles = 0.0;
    let mut j = 0.0;
    loop {
        let tail = poisson_tail_above(lambda, j * tile);
        expected_tiles += tail;
        if tail < 1e-6 || j > 1e4 {
            break;
        }
        j += 1.0;
    }
    (lambda / (tile * expected_tiles.max(1e-9))).clamp(0.0, 1.0)
}

/// `P(n > m)` for `n ~ Poisson(λ)`, `m ≥ 0` (summed in log space; λ up to thousands).
fn poisson_tail_above(lambda: f64, m: f64) -> f64 {
    let m = m.floor() as u64;
    // P(n ≤ m) = Σ_{i=0}^{m} e^{−λ} λ^i / i!
    let mut log_term = -lambda; // i = 0
    let mut cdf = log_term.exp();
    for i in 1..=m {
        log_term += lambda.ln() - (i as f64).ln();
        cdf += log_term.exp();
        if i as f64 > lambda && log_term < -40.0 {
            break;
        }
    }
    (1.0 - cdf).clamp(0.0, 1.0)
}

/// The prompt a prefill query processes: `(first depth, tokens)`. The scenario's prompt (at least
/// one ubatch) ends at the query's depth, or at its own length when the depth is smaller: `fit`
/// queries at depth = prompt (the prompt from an empty cache); llama-bench's `pp N @ dD` test
/// is a query at depth `D` with a prompt of `N`.
pub(super) fn prompt_span(q: &SpeedQuery) -> (f64, f64) {
    let u = q.ubatch.max(1);
    let n = q.scenario.prompt_tokens.max(u);
    let end = q.depth.max(n);
    ((end - n) as f64, n as f64)
}

/// The ubatches [`prompt_seconds`] evaluates for a prompt of `n` tokens from depth `start` in
/// ubatches of `u`, as `(count, tokens, depth)`: groups of whole ubatches, each stood for by its
/// middle one (at most [`MAX_UBATCH_EVALS`] groups), then the rest.
pub(super) fn prompt_ubatches(start: f64, n: f64, u: f64) -> impl Iterator<Item = (f64, f64, f64)> {
    let u = u.max(1.0);
    let full = (n / u).floor() as u64;
    let rest = n - full as f64 * u;
    let step = full.div_ceil(MAX_UBATCH_EVALS).max(1);
    let groups = (0..full).step_by(step as usize).map(move |i| {
        let group = step.min(full - i);
        // The group's middle ubatch stands for all of it.
        let mid = i as f64 + (group as f64 - 1.0) / 2.0;
        (group as f64, u, start + mid * u)
    });
    groups.chain((rest > 0.0).then_some((1.0, rest, start + full as f64 * u)))
}

/// The seconds of a prompt of `n` tokens from depth `start` in ubatches of `u`, given the time of
/// one ubatch of `tokens` at depth `d` (`ubatch(tokens, d)`).
pub(super) fn prompt_seconds(start: f64, n: f64, u: f64, ubatch: impl Fn(f64, f64) -> f64) -> f64 {
    prompt_ubatches(start, n, u).fold(0.0, |total, (count, tokens, d)| {
        total + count * ubatch(tokens, d)
    })
}

/// A prompt's ubatches with what they cost on any machine — their FLOPs and the weight bytes
/// they touch — worked out once per model shape ([`super::ModelShape`]) and read by every
/// machine's prefill.
#[derive(Clone, Debug)]
pub(super) struct PromptPlan {
    /// The prompt it is for: `(start, n, u)` of [`prompt_ubatches`].
    span: (f64, f64, f64),
    ubatches: Vec<PlannedUbatch>,
}

/// One entry of [`prompt_ubatches`] with its FLOPs and touched weight bytes.
#[derive(Clone, Debug)]
pub(super) struct PlannedUbatch {
    pub count: f64,
    pub tokens: f64,
    pub flops: UbatchFlops,
    pub touched: f64,
}

impl PromptPlan {
    /// The plan of the prompt `(start, n, u)` of query `q` with shape `sh`.
    pub(super) fn of(sh: &Shape, q: &SpeedQuery, (start, n, u): (f64, f64, f64)) -> PromptPlan {
        PromptPlan {
            span: (start, n, u),
            ubatches: prompt_ubatches(start, n, u)
                .map(|(count, tokens, d)| PlannedUbatch {
                    count,
                    tokens,
                    flops: UbatchFlops::of(sh, q, tokens, d),
                    touched: touched_bytes(sh, tokens),
                })
                .collect(),
        }
    }
    /// The prompt's seconds, given the time of each planned ubatch (the same sum as
    /// [`prompt_seconds`]), when the plan is for prompt `span`.
    pub(super) fn seconds(
        &self,
        span: (f64, f64, f64),
        ubatch: impl Fn(&PlannedUbatch) -> f64,
    ) -> Option<f64> {
        (self.span == span).then(|| {
            self.ubatches
                .iter()
                .fold(0.0, |total, x| total + x.count * ubatch(x))
        })
    }
}

/// Weight bytes one ubatch of `u` tokens reads: every dense layer's, and the share of the routed
/// experts its tokens reach.
fn touched_bytes(sh: &Shape, u: f64) -> f64 {
    sh.layer_read + (sh.layer_total - sh.layer_read).max(0.0) * experts_touched(sh.moe, u)
}

/// FLOPs of one ubatch of `u` tokens at depth `d`, by the kernel that runs them.
#[derive(Clone, Debug)]
pub(super) struct UbatchFlops {
    /// Dense weight GEMMs (attention projections, dense FFNs, shared experts).
    pub dense: f64,
    /// Routed-expert GEMMs (`mul_mat_id`).
    pub experts: f64,
    /// `QKᵀ` and `PV`.
    pub attention: f64,
    /// Attention scores materialised without FlashAttention (elements), 0 with it.
    pub scores: f64,
    /// Bytes of the routed experts' separate outputs ([`EXPERT_OUTPUT_BYTES_PER_HIDDEN`]).
    pub expert_bytes: f64,
}

impl UbatchFlops {
    pub(super) fn of(sh: &Shape, q: &SpeedQuery, u: f64, d: f64) -> UbatchFlops {
        let s = q.scenario;
        let w = sh.window;
        // FlashAttention skips the masked upper half of the ubatch's own block; the non-FA path
        // multiplies and softmaxes all of `n_kv = d + U` (a sliding-window layer's cache holds
        // `window + U` cells).
        let (global, local) = if s.flash_attention {
            (d + u / 2.0, (d + u / 2.0).min(w))
        } else {
            (d + u, d.min(w) + u)
        };
        let dense_params = (sh.active_params - sh.routed_active - sh.head_params).max(0.0);
        let positions =
            (1.0 - sh.local_share) * s.model.attended_depth(global) + sh.local_share * local;
        UbatchFlops {
            dense: u * 2.0 * dense_params,
            experts: u * 2.0 * sh.routed_active,
            attention: u * attention_flops_over(sh, s, global, local),
            scores: if s.flash_attention {
                0.0
            } else {
                sh.scores_per_depth * positions * u
            },
            expert_bytes: sh.moe.map_or(0.0, |(e, k)| {
                u * k.min(e) * sh.moe_layers * sh.hidden * EXPERT_OUTPUT_BYTES_PER_HIDDEN
            }),
        }
    }
}

impl Placed<'_> {
    /// Prefill tokens/s of the query's prompt (see [`prompt_span`]).
    pub(super) fn prompt_prefill(&self) -> f64 {
        let q = self.q;
        let (start, n) = prompt_span(q);
        let u = q.ubatch.max(1) as f64;
        let rates = self.gpu.map(|g| self.gpu_prefill_rates(g));
        let rates = rates.as_ref();
        // The ubatches' FLOPs from the plan of the model's shape when the query shares it (its
        // shape is then the one the plan was made from), else worked out here.
        let planned = q.shape.filter(|m| m.depth == q.depth).and_then(|m| {
            m.prompt
                .get_or_init(|| PromptPlan::of(&self.sh, q, (start, n, u)))
                .seconds((start, n, u), |x| {
                    self.ubatch_seconds_of(rates, &x.flops, x.touched, x.tokens)
                })
        });
        let secs = planned.unwrap_or_else(|| {
            prompt_seconds(start, n, u, |tokens, d| {
                let f = UbatchFlops::of(&self.sh, q, tokens, d);
                self.ubatch_seconds_of(rates, &f, touched_bytes(&self.sh, tokens), tokens)
            })
        });
        // The output head once, for the last token: a mat-vec over its bytes.
        let head_s = self.sh.outer_read
            / match self.gpu {
                Some(g) => g.achievable_bps(self.k.profiles.get(q.backend)),
                None => self.cpu_bps,
            };
        n / (secs + head_s).max(1e-12)
    }

    /// Seconds of one ubatch of `u` tokens with FLOPs `f` touching `touched` weight bytes
    /// (`gpu`: the prompt's GPU rates, `None` on the CPU).
    fn ubatch_seconds_of(
        &self,
        gpu: Option<&super::GpuPrefillRates>,
        f: &UbatchFlops,
        touched: f64,
        u: f64,
    ) -> f64 {
        let (q, sh, cpu_p) = (self.q, &self.sh, self.cpu_p);
        let Some(r) = gpu else {
            let pf = q.tuning.prefill_factor.max(0.01);
            let dense = super::cpu_dense_gemm_rate(cpu_p, &q.cpu, sh) * pf;
            let expert = self.expert_rate_at(cpu_p, dense, u);
            let attn = super::cpu_dense_rate(cpu_p, &q.cpu) * pf;
            let t_flops = f.dense / dense + f.experts / expert + f.attention / attn;
            let t_kq = (f.scores * cpu_p.kq_bytes_per_score + f.expert_bytes) / self.cpu_bps;
            return t_flops.max(touched / self.cpu_bps)
                + t_kq
                + self.l * cpu_p.layer_overhead_us * 1e-6;
        };
        self.gpu_ubatch_seconds(r, f, touched, u)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tile_efficiency_is_the_filled_share_of_whole_tiles() {
        // Many tokens per expert: the last partial tile hardly matters.
        assert!(moe_tile_efficiency(4096.0, 128.0) > 0.95);
        // 32 tokens per expert in 128-token tiles (Qwen3-30B-A3B at U = 512: 512 · 8 / 128):
        // one tile, a quarter filled (a second tile is all but impossible).
        let q = moe_tile_efficiency(32.0, 128.0);
        assert!((q - 0.25).abs() < 0.01, "{q}");
        // λ = T: half the experts spill into a second tile (Poisson), so well below 1.
        let e = moe_tile_efficiency(32.0, 32.0);
        assert!(e > 0.6 && e < 0.75, "{e}");
        // Fewer tokens per expert never fill tiles better.
        let mut last = 0.0;
        for l in [1.0, 4.0, 16.0, 64.0, 256.0, 1024.0] {
            let x = moe_tile_efficiency(l, 64.0);
            assert!(x >= last * 0.999, "{l}: {x} < {last}");
            last = x;
        }
        // Bad input: no tile or no tokens is no waste, never NaN.
        assert_eq!(moe_tile_efficiency(0.0, 128.0), 1.0);
        assert_eq!(moe_tile_efficiency(32.0, 0.0), 1.0);
        assert_eq!(moe_tile_efficiency(f64::NAN, 128.0), 1.0);
    }

    #[test]
    fn the_kernel_tile_follows_the_ubatch_below_the_largest_tile() {
        // A 512-token ubatch takes the largest tile; smaller ubatches the smallest tile that
        // covers them, in steps of 8 (mmq.cuh `mul_mat_q_case`).
        assert_eq!(moe_kernel_tile(128.0, 512.0), 128.0);
        assert_eq!(moe_kernel_tile(128.0, 64.0), 64.0);
        assert_eq!(moe_kernel_tile(128.0, 60.0), 64.0);
        assert_eq!(moe_kernel_tile(64.0, 2048.0), 64.0);
        // A smaller tile for the same tokens per expert fills better.
        let lam = 64.0 * 4.0 / 32.0;
        assert!(
            moe_tile_efficiency(lam, moe_kernel_tile(128.0, 64.0))
                > 1.9 * moe_tile_efficiency(lam, 128.0)
        );
        // Bad input: no tile stays no tile, never NaN.
        assert_eq!(moe_kernel_tile(0.0, 512.0), 0.0);
        assert_eq!(moe_kernel_tile(128.0, 0.0), 128.0);
        assert_eq!(moe_kernel_tile(128.0, f64::NAN), 128.0);
    }

    #[test]
    fn vulkan_takes_the_medium_expert_tile_on_amd_and_intel_only() {
        use crate::core::catalog::Vendor;
        let p = super::super::Profiles::default();
        // ggml_vk_get_device turns `mul_mat_id_l` off on AMD and Intel: 64-token tiles there,
        // the large 128-token tile elsewhere (and where the vendor is not known).
        assert_eq!(p.vulkan.moe_tile_on(Some(Vendor::Amd)), 64.0);
        assert_eq!(p.vulkan.moe_tile_on(Some(Vendor::Intel)), 64.0);
        assert_eq!(p.vulkan.moe_tile_on(Some(Vendor::Nvidia)), 128.0);
        assert_eq!(p.vulkan.moe_tile_on(None), 128.0);
        // MMQ (CUDA, HIP) and Metal pick one tile whatever the vendor.
        assert_eq!(p.rocm.moe_tile_on(Some(Vendor::Amd)), 128.0);
        assert_eq!(p.metal.moe_tile_on(Some(Vendor::Apple)), 32.0);
        // The indirect GEMM is the dense kernel on every llama.cpp GPU backend.
        for q in [&p.cuda, &p.rocm, &p.vulkan, &p.metal] {
            assert_eq!(q.moe_gemm_efficiency, 1.0);
        }
    }

    #[test]
    fn flash_attention_kernel_path_follows_the_runtime_selection() {
        use crate::core::units::GbPerSec;
        // A Radeon 8060S as the catalog has it: 59.4 FP16 matrix TFLOPS, 29.7 vector TFLOPS.
        let rdna = GpuDevice {
            bandwidth: GbPerSec(256.0),
            fp16_tflops: 59.4,
            fp16_acc16_tflops: 59.4,
            int8_tops: 59.4,
            vector_tflops: 29.7,
            compute_units: Some(40),
            unified: true,
            fp8: false,
            fp4_tflops: 0.0,
            watts_per_vector_tflop: 0.0,
            vendor: Some(crate::core::catalog::Vendor::Amd),
            amd_cdna: false,
        };
        let r = |b, g: &GpuDevice, gqa, hd| flash_attention_rate(b, g, gqa, hd);
        // ROCm: grouped heads of ≤ 128 take the MMA kernel, anything else the tile kernel.
        let mma = r(Backend::Rocm, &rdna, 4.0, 128.0).unwrap();
        assert!(
            (mma / 1e12 - 59.4 * ROCM_FA_MMA_SHARE).abs() < 1e-6,
            "{mma}"
        );
        let tile = r(Backend::Rocm, &rdna, 1.0, 128.0).unwrap();
        assert!(
            (tile / 1e12 - 29.7 * ROCM_FA_TILE_SHARE).abs() < 1e-6,
            "{tile}"
        );
        assert_eq!(r(Backend::Rocm, &rdna, 4.0, 256.0), Some(tile));
        assert!(mma > 3.0 * tile, "grouped {mma} vs ungrouped {tile}");
        // Vulkan without coopmat2: the vector-rate share whatever the grouping.
        let vk = r(Backend::Vulkan, &rdna, 4.0, 128.0).unwrap();
        assert!(
            (vk / 1e12 - 29.7 * VULKAN_FA_VECTOR_SHARE).abs() < 1e-6,
            "{vk}"
        );
        assert_eq!(r(Backend::Vulkan, &rdna, 1.0, 128.0), Some(vk));
        // The backend's own rate: CUDA, Vulkan on NVIDIA (coopmat2), ROCm on CDNA (MFMA), Metal.
        let nv = GpuDevice {
            vendor: Some(crate::core::catalog::Vendor::Nvidia),
            ..rdna
        };
        let cdna = GpuDevice {
            amd_cdna: true,
            ..rdna
        };
        assert_eq!(r(Backend::Cuda, &nv, 4.0, 128.0), None);
        assert_eq!(r(Backend::Vulkan, &nv, 4.0, 128.0), None);
        assert_eq!(r(Backend::Rocm, &cdna, 1.0, 128.0), None);
        assert_eq!(r(Backend::Metal, &rdna, 4.0, 128.0), None);
        // A part with no rates never yields a zero or negative rate.
        let dead = GpuDevice {
            fp16_tflops: 0.0,
            vector_tflops: 0.0,
            ..rdna
        };
        assert!(r(Backend::Rocm, &dead, 4.0, 128.0).unwrap() >= 1.0);
    }

    #[test]
    fn flash_decode_reads_the_cache_slower_only_on_ungrouped_amd_paths() {
        assert_eq!(
            flash_decode_kv_share(Backend::Rocm, false, false),
            ROCM_FA_VEC_KV_SHARE
        );
        assert_eq!(
            flash_decode_kv_share(Backend::Vulkan, false, false),
            VULKAN_FA_UNGROUPED_KV_SHARE
        );
        // Grouped heads, coopmat2 (NVIDIA) Vulkan, CUDA and Metal read at the weights' rate.
        for (b, nv, grouped) in [
            (Backend::Rocm, false, true),
            (Backend::Vulkan, false, true),
            (Backend::Vulkan, true, false),
            (Backend::Cuda, true, false),
            (Backend::Metal, false, false),
        ] {
            assert_eq!(
                flash_decode_kv_share(b, nv, grouped),
                1.0,
                "{b:?} {grouped}"
            );
        }
        // Never above the weights' rate nor zero.
        for s in [ROCM_FA_VEC_KV_SHARE, VULKAN_FA_UNGROUPED_KV_SHARE] {
            assert!(s > 0.0 && s <= 1.0);
        }
    }

    #[test]
    fn prompt_seconds_sums_every_ubatch_and_samples_long_prompts_exactly_when_linear() {
        // A cost linear in depth: the sampled sum equals the exact one.
        let cost = |u: f64, d: f64| u * (1.0 + d * 1e-3);
        let exact = |n: f64, u: f64| {
            let mut t = 0.0;
            let mut done = 0.0;
            while done < n {
                let k = u.min(n - done);
                t += cost(k, done);
                done += k;
            }
            t
        };
        for n in [512.0, 1000.0, 8192.0, 131_072.0, 1_000_000.0] {
            let got = prompt_seconds(0.0, n, 512.0, cost);
            let want = exact(n, 512.0);
            assert!((got / want - 1.0).abs() < 1e-9, "{n}: {got} vs {want}");
        }
        // A start depth shifts every ubatch.
        let a = prompt_seconds(4096.0, 512.0, 512.0, cost);
        assert!((a - cost(512.0, 4096.0)).abs() < 1e-9);
    }
}
