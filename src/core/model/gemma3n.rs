//! Gemma 3n: per-layer embeddings (PLE), AltUp, LAuReL and KV sharing.
//!
//! Tensors, one entry per stored tensor as in [`super::inventory`]: transformers
//! `src/transformers/models/gemma3n/modeling_gemma3n.py` (commit
//! 018548097621d331be9d60ab6cafdd71cfa67a43) with `n` = `altup_num_inputs`, `r` =
//! `laurel_rank`, `p` = `hidden_size_per_layer_input`, `V_p` = `vocab_size_per_layer_input`,
//! `L` layers and `h` hidden:
//!
//! - outside the layers (`Gemma3nTextModel.__init__`): `embed_tokens_per_layer` `V_p × L·p`
//!   (a lookup: one row per token), `per_layer_model_projection` `h × L·p`,
//!   `per_layer_projection_norm` `p`, `altup_projections` and `altup_unembed_projections`
//!   `(n − 1)` matrices of `h × h` each;
//! - in each layer (`Gemma3nTextDecoderLayer.__init__`): `Gemma3nTextAltUp`
//!   (`correct_output_scale` `h`, `correction_coefs` `n × n`, `prediction_coefs` `n × n²`,
//!   `modality_router` `h × n`, `router_norm` `h`), `Gemma3nTextLaurelBlock` (`linear_left`
//!   `h × r`, `linear_right` `r × h`, `post_laurel_norm` `h`), `per_layer_input_gate` `h × p`,
//!   `per_layer_projection` `p × h`, `post_per_layer_input_norm` `h`; attention and the four
//!   Gemma norms as Gemma 3 (the `v_norm` has no scale).
//!
//! The published checkpoints store `k_proj` / `v_proj` in the KV-shared layers too (llama.cpp's
//! GGUF of gemma-3n-E4B lists `blk.N.attn_k` for every block), so they are counted: the sum is
//! the GGUF's `general.parameter_count`, 6,866,696,688 for E4B and 4,456,156,768 for E2B
//! (tests/gemma3n.rs).
//!
//! KV sharing (`Gemma3nTextAttention.__init__`: `is_kv_shared_layer = layer_idx >=
//! num_hidden_layers − num_kv_shared_layers`; llama.cpp `n_layer_kv_from_start`): the last
//! `num_kv_shared_layers` layers read the cache of the last earlier layer of their kind (sliding
//! or full) and keep none of their own.

use super::inventory::whole;
use super::{Gemma3nSpec, ModelSpec, TensorGroup};
use crate::core::precision::TensorClass;

fn m(a: u64, b: u64) -> u64 {
    a.saturating_mul(b)
}

impl ModelSpec {
    /// The attention layers that keep a KV cache and how many of them are sliding-window
    /// layers: `(cache layers, of which sliding)`. All attention layers without KV sharing; with
    /// it only the first `L − kv_shared_layers` layers (Gemma 3n E4B: 35 − 15 = 20, of which 16
    /// sliding with its period of 5: `20 − ⌊20/5⌋`).
    /// Cross-attention layers (Llama 3.2 Vision) cache the images' K/V, not the text's: none.
    pub fn kv_cache_layers(&self) -> (u64, u64) {
        let attn = self
            .attention_layer_count()
            .saturating_sub(self.cross_attention_layers);
        let (local, _) = self.local_layers();
        let shared = self.kv_shared_layers.min(self.layers);
        if shared == 0 {
            return (attn, local);
        }
        let owners = self.layers - shared;
        let owners_local = match &self.sliding {
            Some(s) if s.window > 0 => match owners.checked_div(s.period) {
                Some(global) => owners - global,
                // No period: the sliding layers are the last `local_layers` ones.
                None => s.local_layers.min(self.layers).saturating_sub(shared),
            },
            _ => 0,
        };
        (owners.min(attn), owners_local.min(local))
    }

    /// Gemma 3n's tensors in one layer: AltUp, LAuReL and the per-layer input gate and
    /// projection (see the module docs).
    pub(super) fn gemma3n_layer_tensors(&self, g: &Gemma3nSpec, v: &mut Vec<TensorGroup>) {
        let h = self.hidden;
        let (n, r, p) = (g.altup_inputs, g.laurel_rank, g.ple_dim);
        // modality_router, laurel linear_left and per_layer_input_gate read the hidden state.
        v.push(whole(
            TensorClass::FfnGateUp,
            m(h, n).saturating_add(m(h, r)).saturating_add(m(h, p)),
            h,
        ));
        // laurel linear_right (rank r in) and per_layer_projection (p in).
        v.push(whole(TensorClass::FfnDown, m(r, h), r));
        v.push(whole(TensorClass::FfnDown, m(p, h), p));
        // correct_output_scale, router_norm, post_laurel_norm, post_per_layer_input_norm (h
        // each); correction_coefs n × n and prediction_coefs n × n².
        let small = m(h, 4)
            .saturating_add(m(n, n))
            .saturating_add(m(n, m(n, n)));
        v.push(whole(TensorClass::Small, small, 0));
    }

    /// Gemma 3n's tensors outside the layers: the per-layer embedding table (one row read per
    /// token), its projection from the hidden state and norm, and AltUp's projections.
    pub(super) fn gemma3n_outer_tensors(&self, g: &Gemma3nSpec, v: &mut Vec<TensorGroup>) {
        let h = self.hidden;
        let row = m(self.layers, g.ple_dim);
        v.push(per_layer_table(self.layers, g));
        let altup = m(m(g.altup_inputs.saturating_sub(1), 2), m(h, h));
        v.push(whole(
            TensorClass::FfnGateUp,
            m(h, row).saturating_add(altup),
            h,
        ));
        v.push(whole(TensorClass::Small, g.ple_dim, 0));
    }

    /// The per-layer embedding table as a tensor group (`per_layer_token_embd`), `None` for
    /// other models.
    pub fn per_layer_embedding_table(&self) -> Option<TensorGroup> {
        self.gemma3n
            .as_ref()
            .map(|g| per_layer_table(self.layers, g))
    }

    /// Elements of the per-layer embedding table (`V_p × L × p`); 0 for other models.
    pub fn per_layer_embedding_elements(&self) -> u64 {
        self.gemma3n
            .as_ref()
            .map_or(0, |g| m(g.ple_vocab, m(self.layers, g.ple_dim)))
    }
}

/// Gemma 3n's per-layer embedding table: `V_p` rows of `L × p`, one row read per token.
fn per_layer_table(layers: u64, g: &Gemma3nSpec) -> TensorGroup {
    let row = m(layers, g.ple_dim);
    let table = m(g.ple_vocab, row);
    TensorGroup {
        class: TensorClass::TokenEmbedding,
        elements: table,
        active_elements: row.min(table),
        row,
        routed: false,
    }
}
