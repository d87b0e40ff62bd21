//! Recurrent layers of hybrid and state-space models: which layers they are, their tensors and
//! the fixed state each keeps per sequence.
//!
//! Sources (one entry per stored tensor, as in [`super::inventory`]):
//! - Mamba-2: transformers `src/transformers/models/mamba2/modeling_mamba2.py` `Mamba2Mixer.__init__`
//!   (commit 4711664e1c9dabe4e13b5bd6fe337507050f2157): `in_proj` h → `2·d_inner + 2·g·N + H`
//!   (bias when `use_bias`), depthwise `conv1d` `conv_dim × K` (+ `conv_dim` bias when
//!   `use_conv_bias`), `dt_bias`, `A_log`, `D` (H each), gated RMSNorm `d_inner`, `out_proj`
//!   `d_inner × h`; `Mamba2Block` adds one RMSNorm `h` and has no MLP.
//! - Gated DeltaNet: transformers `src/transformers/models/qwen3_next/modeling_qwen3_next.py`
//!   `Qwen3NextGatedDeltaNet.__init__` (commit 7515843b617551b008901620ca58f1208bbc330d):
//!   `in_proj_qkvz` h → `2·key_dim + 2·value_dim`, `in_proj_ba` h → `2·H_v`, `conv1d`
//!   `(2·key_dim + value_dim) × K` without bias, `dt_bias` and `A_log` (H_v each), gated
//!   RMSNorm `linear_value_head_dim`, `out_proj` `value_dim × h`.
//!
//! - Mamba-1 (Jamba): transformers `src/transformers/models/jamba/modeling_jamba.py`
//!   `JambaMambaMixer.__init__` (commit 97bb61d0788015770945004a7db6285db68081c0): `in_proj`
//!   h → `2·d_inner` (bias when `mamba_proj_bias`), `conv1d` `d_inner × K` (+ `d_inner` bias when
//!   `mamba_conv_bias`), `x_proj` `d_inner × (R + 2·N)`, `dt_proj` `R × d_inner` + `d_inner` bias,
//!   `A_log` `d_inner × N`, `D` `d_inner`, `out_proj` `d_inner × h`, and RMSNorms of `R`, `N`,
//!   `N` (dt, B, C). It has no groups (llama.cpp `ssm_n_group` 0), so `conv_dim = d_inner`.
//!
//! - Short convolution (LFM2): transformers `src/transformers/models/lfm2/modeling_lfm2.py`
//!   `Lfm2ShortConv.__init__` (commit 0096ba4f66d4f5f7b1d4e162f8a75d0894b40ea8): `in_proj`
//!   h → 3h, depthwise `conv` h × `L_cache`, `out_proj` h → h, each with a bias when
//!   `conv_bias`. State: llama.cpp `src/llama-hparams.cpp` `n_embd_r()` (commit
//!   01b77b5793989e0a1508a2fe3757d4e743a7bbd1) "for LFM2 models" = `n_embd ×
//!   (n_shortconv_l_cache − 1)`, and `n_embd_s()` = `ssm_d_state × ssm_d_inner` = 0.
//! - Nemotron-H's Mamba-2 layers: transformers
//!   `src/transformers/models/nemotron_h/modeling_nemotron_h.py` `NemotronHMamba2Mixer.__init__`
//!   (commit 008d9e9577b0eb0149aa6bb0c44da582b10e0b6e) builds the same tensors as `Mamba2Mixer`
//!   (`in_proj` / `out_proj` bias = `use_bias`, gated RMSNorm of `mamba_num_heads ×
//!   mamba_head_dim`); `NemotronHBlock` holds one RMSNorm and ONE mixer (Mamba-2, attention or
//!   MLP), hence [`RecurrentSpec::mixers_without_mlp`] and [`RecurrentSpec::mlp_only_layers`].
//!
//! State per sequence and layer: llama.cpp `src/llama-hparams.cpp` `n_embd_r()` =
//! `(d_conv − 1) × (d_inner + 2·n_group·d_state)` (the conv window; its first column is shifted
//! out, so K − 1 columns are kept) and `n_embd_s()` = `d_state × d_inner` (the SSM / delta-rule
//! state: Mamba-2 `H × head_dim × N`, Gated DeltaNet `H_v × k_head_dim × v_head_dim`). llama.cpp
//! allocates both in F32 (`src/llama-model.cpp` `create_memory`: `llama_memory_recurrent(…,
//! GGML_TYPE_F32, GGML_TYPE_F32, …)`), independent of the KV cache type.

use super::inventory::whole;
use super::{ModelSpec, RecurrentKind, RecurrentSpec, TensorGroup};
use crate::core::precision::TensorClass;

/// Bytes of one element of the recurrent state (F32, see the module docs).
pub const RECURRENT_STATE_BYTES: u64 = 4;

impl RecurrentSpec {
    /// `d_inner = heads × head_dim` (Mamba-2 `intermediate_size`; Gated DeltaNet `value_dim`).
    pub fn d_inner(&self) -> u64 {
        self.heads.saturating_mul(self.head_dim)
    }

    /// `conv_dim = d_inner + 2 × groups × state` (Gated DeltaNet: `2·key_dim + value_dim`).
    pub fn conv_dim(&self) -> u64 {
        self.d_inner()
            .saturating_add(self.groups.saturating_mul(self.state).saturating_mul(2))
    }

    /// Elements of the state one sequence keeps in one recurrent layer: (conv, ssm) =
    /// (`(K − 1) × conv_dim`, `state × d_inner`), llama.cpp `n_embd_r()` and `n_embd_s()`.
    pub fn state_elements(&self) -> (u64, u64) {
        let conv = self
            .conv_kernel
            .saturating_sub(1)
            .saturating_mul(self.conv_dim());
        (conv, self.state.saturating_mul(self.d_inner()))
    }
}

impl ModelSpec {
    /// Whether layer `i` (0-based) is recurrent (keeps a fixed state, no KV cache).
    pub fn is_recurrent_layer(&self, i: u64) -> bool {
        match &self.recurrent {
            // The readers keep the lists ascending (see `RecurrentSpec::attention_layers`).
            Some(r) => {
                i < self.layers
                    && r.attention_layers.binary_search(&i).is_err()
                    && r.mlp_only_layers.binary_search(&i).is_err()
            }
            None => false,
        }
    }

    /// Whether layer `i` (0-based) holds only an MLP (Nemotron-H '-': no attention, no
    /// recurrent mixer, nothing cached).
    pub fn is_mlp_only_layer(&self, i: u64) -> bool {
        match &self.recurrent {
            Some(r) => {
                i < self.layers
                    && r.mlp_only_layers.binary_search(&i).is_ok()
                    && r.attention_layers.binary_search(&i).is_err()
            }
            None => false,
        }
    }

    /// Layers with a KV cache: all of them, or a hybrid's full-attention layers.
    pub fn attention_layer_count(&self) -> u64 {
        self.layers
            .saturating_sub(self.recurrent_layer_count())
            .saturating_sub(self.mlp_only_layer_count())
    }

    /// Layers that keep a recurrent state instead of a KV cache.
    pub fn recurrent_layer_count(&self) -> u64 {
        match &self.recurrent {
            Some(r) => {
                let mut other: Vec<u64> = r
                    .attention_layers
                    .iter()
                    .chain(&r.mlp_only_layers)
                    .copied()
                    .filter(|&i| i < self.layers)
                    .collect();
                other.sort_unstable();
                other.dedup();
                self.layers.saturating_sub(other.len() as u64)
            }
            None => 0,
        }
    }

    /// Layers that hold only an MLP (not also listed as attention layers).
    pub fn mlp_only_layer_count(&self) -> u64 {
        match &self.recurrent {
            Some(r) => {
                let mut mlp: Vec<u64> = r
                    .mlp_only_layers
                    .iter()
                    .copied()
                    .filter(|&i| i < self.layers && r.attention_layers.binary_search(&i).is_err())
                    .collect();
                mlp.sort_unstable();
                mlp.dedup();
                mlp.len() as u64
            }
            None => 0,
        }
    }

    /// Recurrent-state bytes one sequence keeps over all recurrent layers (F32), whatever the
    /// context: `recurrent layers × (conv + ssm elements) × 4 B`. 0 without recurrent layers.
    pub fn recurrent_state_bytes_per_sequence(&self) -> u64 {
        let Some(r) = &self.recurrent else { return 0 };
        let (conv, ssm) = r.state_elements();
        conv.saturating_add(ssm)
            .saturating_mul(RECURRENT_STATE_BYTES)
            .saturating_mul(self.recurrent_layer_count())
    }

    /// The mixer tensors of a recurrent layer (see the module docs for the sources).
    pub(super) fn recurrent_tensors(&self, r: &RecurrentSpec, v: &mut Vec<TensorGroup>) {
        let h = self.hidden;
        let m = |a: u64, b: u64| a.saturating_mul(b);
        let d_inner = r.d_inner();
        let conv_dim = r.conv_dim();
        let heads = r.heads;
        let (in_proj, small) = match r.kind {
            RecurrentKind::Mamba2 => {
                // in_proj: z (d_inner) + xBC (conv_dim) + dt (H).
                let out = d_inner.saturating_add(conv_dim).saturating_add(heads);
                let mut small = m(conv_dim, r.conv_kernel)
                    .saturating_add(m(heads, 3)) // dt_bias, A_log, D
                    .saturating_add(d_inner); // gated RMSNorm
                if r.conv_bias {
                    small = small.saturating_add(conv_dim);
                }
                if r.proj_bias {
                    small = small.saturating_add(out).saturating_add(h);
                }
                (m(h, out), small)
            }
            RecurrentKind::Mamba1 => {
                let (n, rank) = (r.state, r.dt_rank);
                let x_proj = m(d_inner, rank.saturating_add(m(n, 2)));
                let dt_proj = m(rank, d_inner);
                let mut small = m(conv_dim, r.conv_kernel)
                    .saturating_add(d_inner) // dt_proj bias
                    .saturating_add(m(d_inner, n)) // A_log
                    .saturating_add(d_inner) // D
                    .saturating_add(rank.saturating_add(m(n, 2))); // dt, B, C norms
                if r.conv_bias {
                    small = small.saturating_add(conv_dim);
                }
                if r.proj_bias {
                    small = small.saturating_add(m(d_inner, 2)).saturating_add(h);
                }
                // x_proj and dt_proj are matrices read per token like in_proj.
                v.push(whole(TensorClass::AttnK, x_proj, d_inner));
                v.push(whole(TensorClass::AttnV, dt_proj, rank));
                (m(h, m(d_inner, 2)), small)
            }
            RecurrentKind::ShortConv => {
                // in_proj: B, C and x (d_inner = h each); the conv taps are `conv_dim × K`.
                let out = m(d_inner, 3);
                let mut small = m(conv_dim, r.conv_kernel);
                if r.conv_bias {
                    // in_proj, conv and out_proj biases.
                    small = small
                        .saturating_add(out)
                        .saturating_add(conv_dim)
                        .saturating_add(h);
                }
                (m(h, out), small)
            }
            RecurrentKind::GatedDeltaNet => {
                // in_proj_qkvz: q, k (key_dim each), v, z (value_dim each); in_proj_ba: 2·H_v.
                let key_dim = m(r.groups, r.state);
                let qkvz = m(key_dim, 2).saturating_add(m(d_inner, 2));
                let out = qkvz.saturating_add(m(heads, 2));
                let small = m(conv_dim, r.conv_kernel)
                    .saturating_add(m(heads, 2)) // dt_bias, A_log
                    .saturating_add(r.head_dim); // gated RMSNorm over one value head
                (m(h, out), small)
            }
        };
        v.push(whole(TensorClass::AttnQ, in_proj, h));
        v.push(whole(TensorClass::AttnOut, m(d_inner, h), d_inner));
        v.push(whole(TensorClass::Small, small, 0));
    }
}
