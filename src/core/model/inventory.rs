//! The tensor inventory of an architecture (one entry per stored tensor, following the
//! `transformers` modeling files named in [`super`]) and the parameter counts summed from it.

use super::{
    LayerGroup, MlaSpec, MlpKind, ModelSpec, MoeSpec, ParamCount, ShapeSource, TensorGroup,
};
use crate::core::precision::TensorClass;

impl ModelSpec {
    /// `a · b`, saturating: absurd shapes give u64::MAX instead of a panic or a wrap.
    fn m(a: u64, b: u64) -> u64 {
        a.saturating_mul(b)
    }

    /// Whether layer `i` (0-based) uses the MoE block.
    ///
    /// Rule: `i ≥ first_k_dense_replace` (DeepSeek, `modeling_deepseek_v3.py`), and
    /// `(i + 1) % decoder_sparse_step == 0`, and `i ∉ mlp_only_layers` (Qwen2-MoE,
    /// `modeling_qwen2_moe.py`). Mixtral, Qwen3-MoE and gpt-oss use the block in every layer.
    pub fn is_moe_layer(&self, i: u64) -> bool {
        let Some(m) = &self.moe else { return false };
        if m.experts == 0 || i < m.first_dense_layers {
            return false;
        }
        (i + 1).is_multiple_of(m.sparse_step.max(1)) && !m.dense_layers.contains(&i)
    }

    /// How many of the `layers` layers use the MoE block, in closed form (no per-layer loop):
    /// `⌊L/s⌋ − ⌊k/s⌋` layers `i ∈ [k, L)` with `(i + 1) % s == 0` (k = first dense layers,
    /// s = sparse step), less the listed dense layers among them.
    pub fn moe_layer_count(&self) -> u64 {
        let Some(m) = &self.moe else { return 0 };
        if m.experts == 0 {
            return 0;
        }
        let l = self.layers;
        let k = m.first_dense_layers.min(l);
        let s = m.sparse_step.max(1);
        let mut listed: Vec<u64> = m
            .dense_layers
            .iter()
            .copied()
            .filter(|&d| d >= k && d < l && (d + 1).is_multiple_of(s))
            .collect();
        listed.sort_unstable();
        listed.dedup();
        (l / s - k / s).saturating_sub(listed.len() as u64)
    }

    /// The layers grouped by inventory: at most two kinds (dense, MoE), each with its first layer
    /// and its count, so that sums over layers cost two inventories instead of `layers`; a hybrid
    /// model (see [`super::RecurrentSpec`]) has up to six (dense or MoE × attention, recurrent
    /// or MLP only), found by one pass over the layers. The counts add up to `layers`.
    pub fn layer_groups(&self) -> Vec<LayerGroup> {
        if self.recurrent.is_some() {
            return self.hybrid_layer_groups();
        }
        let l = self.layers;
        let moe_n = self.moe_layer_count().min(l);
        let dense_n = l - moe_n;
        let mut v = Vec::with_capacity(2);
        if dense_n > 0 {
            let first = (0..l).find(|&i| !self.is_moe_layer(i)).unwrap_or(0);
            v.push(LayerGroup {
                first,
                count: dense_n,
                moe: false,
                recurrent: false,
                mlp_only: false,
            });
        }
        if moe_n > 0 {
            let k = self.moe.as_ref().map_or(0, |m| m.first_dense_layers.min(l));
            let first = (k..l).find(|&i| self.is_moe_layer(i)).unwrap_or(k);
            v.push(LayerGroup {
                first,
                count: moe_n,
                moe: true,
                recurrent: false,
                mlp_only: false,
            });
        }
        v.sort_by_key(|g| g.first);
        v
    }

    /// [`Self::layer_groups`] of a hybrid model: one pass over the layers (bounded by
    /// `model_limits::MAX_LAYERS`).
    fn hybrid_layer_groups(&self) -> Vec<LayerGroup> {
        let mut v: Vec<LayerGroup> = Vec::with_capacity(4);
        for i in 0..self.layers {
            let (moe, recurrent, mlp_only) = (
                self.is_moe_layer(i),
                self.is_recurrent_layer(i),
                self.is_mlp_only_layer(i),
            );
            match v
                .iter_mut()
                .find(|g| g.moe == moe && g.recurrent == recurrent && g.mlp_only == mlp_only)
            {
                Some(g) => g.count += 1,
                None => v.push(LayerGroup {
                    first: i,
                    count: 1,
                    moe,
                    recurrent,
                    mlp_only,
                }),
            }
        }
        v
    }

    /// The tensors of layer `i`, grouped by class.
    ///
    /// Attention (GQA, `modeling_llama.py`): q `h × n_h·d`, k and v `h × n_kv·d` each, o `n_h·d × h`;
    /// q/k/v biases `n_h·d + 2·n_kv·d` (Qwen2, gpt-oss), o bias `h` (gpt-oss), q/k RMSNorm `2·d`
    /// (Qwen3, Gemma 3), sinks `n_h` (gpt-oss). Phi-3's fused `qkv_proj` and `gate_up_proj` hold the
    /// same elements as the separate matrices.
    ///
    /// MLA (`modeling_deepseek_v3.py`): q_a `h × r_q` + q_a_layernorm `r_q` + q_b `r_q × n_h·(d_nope + d_rope)`
    /// (or q `h × n_h·(d_nope + d_rope)` when `q_lora_rank` is null), kv_a_proj_with_mqa
    /// `h × (r_kv + d_rope)` + kv_a_layernorm `r_kv`, kv_b `r_kv × n_h·(d_nope + d_v)`, o `n_h·d_v × h`.
    ///
    /// MLP: gated `3·h·I` (gate, up, down), plain `2·h·I`; biases `2·I + h` (gated) when `mlp_bias`.
    /// MoE layer: E routed experts of `3·h·I_e` (+ biases, gpt-oss), router `h·E` (+ `E` bias:
    /// gpt-oss router bias, DeepSeek-V3 `e_score_correction_bias`), shared experts `n_s·3·h·I_s`,
    /// Qwen2-MoE shared-expert gate `h`. Active: top-k routed experts, everything else in full.
    ///
    /// Norms: `norms_per_layer · h` (input and post-attention RMSNorm: 2; Gemma 2/3 add the
    /// pre- and post-feedforward norms: 4; Nemotron-H's single-block layers: 1).
    ///
    /// A hybrid's MLP-only layer has no mixer, and with
    /// [`super::RecurrentSpec::mixers_without_mlp`] its attention and recurrent layers have no
    /// MLP (Nemotron-H).
    pub fn layer_tensors(&self, i: u64) -> Vec<TensorGroup> {
        self.layer_tensors_of(
            self.is_moe_layer(i),
            self.is_recurrent_layer(i),
            self.is_mlp_only_layer(i),
        )
    }

    /// The inventory of a dense (`moe_layer` false) or MoE layer, with attention, (a hybrid's
    /// `recurrent` layer) a recurrent mixer or (`mlp_only`) no mixer; see
    /// [`Self::layer_tensors`].
    fn layer_tensors_of(
        &self,
        moe_layer: bool,
        recurrent: bool,
        mlp_only: bool,
    ) -> Vec<TensorGroup> {
        let mut v = Vec::with_capacity(10);
        match (&self.recurrent, &self.mla) {
            _ if mlp_only => {}
            (Some(r), _) if recurrent => self.recurrent_tensors(r, &mut v),
            (_, Some(mla)) => self.mla_attention_tensors(mla, &mut v),
            _ => self.attention_tensors(&mut v),
        }
        let has_mlp = mlp_only
            || !self
                .recurrent
                .as_ref()
                .is_some_and(|r| r.mixers_without_mlp);
        match &self.moe {
            _ if !has_mlp => {}
            Some(moe) if moe_layer => self.moe_mlp_tensors(moe, &mut v),
            _ => {
                let (gu, down, bias) = self.mlp_elements(self.intermediate);
                v.push(whole(TensorClass::FfnGateUp, gu, self.hidden));
                v.push(whole(TensorClass::FfnDown, down, self.intermediate));
                if bias > 0 {
                    v.push(whole(TensorClass::Small, bias, 0));
                }
            }
        }
        v.push(whole(
            TensorClass::Small,
            Self::m(self.norms_per_layer, self.hidden),
            0,
        ));
        if let Some(g) = &self.gemma3n {
            self.gemma3n_layer_tensors(g, &mut v);
        }
        v
    }

    /// Multi-head latent attention's projections and norms (DeepSeek-V2/V3).
    fn mla_attention_tensors(&self, mla: &MlaSpec, v: &mut Vec<TensorGroup>) {
        let h = self.hidden;
        let qk = mla.qk_nope_head_dim.saturating_add(mla.qk_rope_head_dim);
        let q = if mla.q_lora_rank > 0 {
            Self::m(h, mla.q_lora_rank)
                .saturating_add(Self::m(mla.q_lora_rank, Self::m(self.heads, qk)))
        } else {
            Self::m(h, Self::m(self.heads, qk))
        };
        v.push(whole(TensorClass::AttnQ, q, h));
        // kv_a_proj_with_mqa: h → kv_lora_rank + rope; kv_b_proj: kv_lora_rank → heads·(nope + v).
        v.push(whole(
            TensorClass::AttnK,
            Self::m(h, mla.kv_lora_rank.saturating_add(mla.qk_rope_head_dim)),
            h,
        ));
        v.push(whole(
            TensorClass::AttnV,
            Self::m(
                mla.kv_lora_rank,
                Self::m(
                    self.heads,
                    mla.qk_nope_head_dim.saturating_add(mla.v_head_dim),
                ),
            ),
            mla.kv_lora_rank,
        ));
        let o_in = Self::m(self.heads, mla.v_head_dim);
        v.push(whole(TensorClass::AttnOut, Self::m(o_in, h), o_in));
        // q_a_layernorm (only with a low-rank query) + kv_a_layernorm.
        v.push(whole(
            TensorClass::Small,
            mla.q_lora_rank.saturating_add(mla.kv_lora_rank),
            0,
        ));
        if let Some(ix) = &mla.indexer {
            // The indexer reads the low-rank query (or h without one), h for its key and its
            // per-head weights; its key LayerNorm has a weight and a bias.
            let q_in = if mla.q_lora_rank > 0 {
                mla.q_lora_rank
            } else {
                h
            };
            v.push(whole(
                TensorClass::AttnQ,
                Self::m(q_in, Self::m(ix.heads, ix.head_dim)),
                q_in,
            ));
            v.push(whole(
                TensorClass::AttnK,
                Self::m(h, ix.head_dim.saturating_add(ix.heads)),
                h,
            ));
            v.push(whole(TensorClass::Small, 2 * ix.head_dim, 0));
        }
    }

    /// Standard (multi-head or grouped-query) attention's projections, biases, norms and sinks.
    fn attention_tensors(&self, v: &mut Vec<TensorGroup>) {
        let h = self.hidden;
        let qd = Self::m(self.heads, self.head_dim);
        let kvd = Self::m(self.kv_heads, self.head_dim);
        // Gated attention (Qwen3-Next): q_proj also produces the output gate, n_h·d more.
        let q_out = if self.attn_output_gate {
            qd.saturating_mul(2)
        } else {
            qd
        };
        v.push(whole(TensorClass::AttnQ, Self::m(h, q_out), h));
        v.push(whole(TensorClass::AttnK, Self::m(h, kvd), h));
        v.push(whole(TensorClass::AttnV, Self::m(h, kvd), h));
        v.push(whole(TensorClass::AttnOut, Self::m(qd, h), qd));
        let mut small = 0u64;
        if self.qkv_bias {
            small = small
                .saturating_add(qd)
                .saturating_add(kvd.saturating_mul(2));
        }
        if self.o_bias {
            small = small.saturating_add(h);
        }
        if self.qk_norm {
            small = small.saturating_add(self.head_dim.saturating_mul(2));
        }
        if self.attn_sinks {
            small = small.saturating_add(self.heads);
        }
        if small > 0 {
            v.push(whole(TensorClass::Small, small, 0));
        }
    }

    /// One MLP of FFN width `width`: (gate + up elements, down elements, bias elements).
    fn mlp_elements(&self, width: u64) -> (u64, u64, u64) {
        let h = self.hidden;
        let mats: u64 = match self.mlp {
            MlpKind::Gated => 3,
            MlpKind::Plain => 2,
        };
        let gu = Self::m(Self::m(h, width), mats - 1);
        let down = Self::m(h, width);
        let bias = if self.mlp_bias {
            Self::m(width, mats - 1).saturating_add(h)
        } else {
            0
        };
        (gu, down, bias)
    }

    /// A MoE layer's routed experts (their top-k active), router and shared experts.
    fn moe_mlp_tensors(&self, moe: &MoeSpec, v: &mut Vec<TensorGroup>) {
        let h = self.hidden;
        let (gu, down, bias) = self.mlp_elements(moe.expert_ffn);
        let e = moe.experts;
        let k = moe.active_experts.min(e);
        v.push(TensorGroup {
            class: TensorClass::FfnGateUp,
            elements: Self::m(gu, e),
            active_elements: Self::m(gu, k),
            row: h,
            routed: true,
        });
        v.push(TensorGroup {
            class: TensorClass::FfnDown,
            elements: Self::m(down, e),
            active_elements: Self::m(down, k),
            row: moe.expert_ffn,
            routed: true,
        });
        // Routed experts' biases (gpt-oss `gate_up_proj_bias`, `down_proj_bias`): they
        // travel with the experts (llama.cpp `ffn_*_exps.bias`).
        if bias > 0 {
            v.push(TensorGroup {
                class: TensorClass::Small,
                elements: Self::m(bias, e),
                active_elements: Self::m(bias, k),
                row: 0,
                routed: true,
            });
        }
        // Router (h × E, read in full for every token).
        let mut small = Self::m(h, e);
        let mut small_active = Self::m(h, e);
        if moe.router_bias {
            small = small.saturating_add(e);
            small_active = small_active.saturating_add(e);
        }
        if moe.shared_experts > 0 {
            let w = if moe.shared_ffn > 0 {
                moe.shared_ffn
            } else {
                moe.expert_ffn
            };
            let (sgu, sdown, sbias) = self.mlp_elements(w);
            let n = moe.shared_experts;
            v.push(whole(TensorClass::FfnGateUp, Self::m(sgu, n), h));
            v.push(whole(TensorClass::FfnDown, Self::m(sdown, n), w));
            small = small.saturating_add(Self::m(sbias, n));
            small_active = small_active.saturating_add(Self::m(sbias, n));
            if moe.shared_expert_gate {
                small = small.saturating_add(h);
                small_active = small_active.saturating_add(h);
            }
        }
        v.push(TensorGroup {
            class: TensorClass::Small,
            elements: small,
            active_elements: small_active,
            row: 0,
            routed: false,
        });
    }

    /// Tensors outside the layers, the token embedding first: embedding `V·h`, final norm `h`,
    /// output head `V·h` when not tied (`tie_word_embeddings: false`), and the vision tower of a
    /// multimodal checkpoint (`vision_params`).
    ///
    /// Active: one embedding row (`h`, a lookup) unless tied (then the whole matrix, it is the
    /// head); the norm and head in full; the vision tower not at all (it runs on images only).
    /// The vision tower is classed as `TokenEmbedding` so that it is neither read per token nor
    /// quantised by bitsandbytes/GPTQ/AWQ estimates (those toolkits quantise the decoder's
    /// linear layers only); llama.cpp keeps it in a separate mmproj file.
    pub fn outer_tensors(&self) -> Vec<TensorGroup> {
        let emb = Self::m(self.vocab, self.hidden);
        let emb_active = if self.tied_embeddings {
            emb
        } else {
            self.hidden.min(emb)
        };
        // Room for every group below (embedding, norm, head, an encoder's tables and heads, a
        // vision tower): one allocation per estimate instead of a growth on each push.
        let mut v = Vec::with_capacity(8);
        v.extend([
            TensorGroup {
                class: TensorClass::TokenEmbedding,
                elements: emb,
                active_elements: emb_active,
                row: self.hidden,
                routed: false,
            },
            TensorGroup {
                class: TensorClass::Small,
                elements: self.hidden,
                active_elements: self.hidden,
                row: 0,
                routed: false,
            },
        ]);
        if !self.tied_embeddings {
            v.push(TensorGroup {
                class: TensorClass::Output,
                elements: emb,
                active_elements: emb,
                row: self.hidden,
                routed: false,
            });
        }
        if let Some(e) = &self.encoder {
            // Position and token-type tables (one row of each per token), the embedding
            // LayerNorm's bias (its weight is the `h` norm above; an encoder has no final norm),
            // the pooler's dense `h × h + h` and a reranker's classification head.
            let tables = Self::m(e.positions.saturating_add(e.token_types), self.hidden);
            v.push(TensorGroup {
                class: TensorClass::TokenEmbedding,
                elements: tables,
                active_elements: (2 * self.hidden).min(tables),
                row: self.hidden,
                routed: false,
            });
            let dense = Self::m(self.hidden, self.hidden).saturating_add(self.hidden);
            let pooler = if e.pooler { dense } else { 0 };
            let classifier = if e.classifier_outputs > 0 {
                dense.saturating_add(
                    Self::m(self.hidden, e.classifier_outputs).saturating_add(e.classifier_outputs),
                )
            } else {
                0
            };
            let small = self
                .hidden
                .saturating_add(pooler)
                .saturating_add(classifier);
            v.push(TensorGroup {
                class: TensorClass::Small,
                elements: small,
                active_elements: small,
                row: 0,
                routed: false,
            });
        }
        if let Some(g) = &self.gemma3n {
            self.gemma3n_outer_tensors(g, &mut v);
        }
        if self.vision_params > 0 {
            v.push(TensorGroup {
                class: TensorClass::TokenEmbedding,
                elements: self.vision_params,
                active_elements: 0,
                row: 0,
                routed: false,
            });
        }
        v
    }

    /// Parameters of layer `i` (total, active): the sum of [`Self::layer_tensors`].
    pub fn layer_params(&self, i: u64) -> ParamCount {
        sum(&self.layer_tensors(i))
    }

    /// Drops the exact bytes of an imported file, for sizing the weights at another precision
    /// than the file stores: they are then sized from the architecture's tensors, keeping the
    /// file's parameter count as `nominal_params` when the architecture is more than 1 % off it
    /// (biases and norms round within that). Returns the dropped file weights and whether the
    /// count was kept; `None` without a file.
    pub fn drop_file_weights(&mut self) -> Option<(super::FileWeights, bool)> {
        let fw = self.file_weights.take()?;
        let arch = self.arch_param_count().total;
        let off = fw.params > 0 && fw.params.abs_diff(arch) > fw.params / 100;
        if off {
            self.nominal_params = Some(fw.params);
        }
        Some((fw, off))
    }

    /// Parameters from the architecture alone: Σ outer tensors + Σ over [`Self::layer_groups`] of
    /// `count × layer inventory`. Exact for the archs in `hf_config` (golden tests cite the
    /// checkpoint sizes they match); ignores `nominal_params` and `file_weights`.
    pub fn arch_param_count(&self) -> ParamCount {
        let mut pc = sum(&self.outer_tensors());
        for grp in self.layer_groups() {
            let p = sum(&self.layer_tensors_of(grp.moe, grp.recurrent, grp.mlp_only));
            pc.total = pc.total.saturating_add(p.total.saturating_mul(grp.count));
            pc.active = pc.active.saturating_add(p.active.saturating_mul(grp.count));
        }
        pc
    }

    /// Parameter count: the architecture's ([`Self::arch_param_count`]), unless a model file
    /// (`file_weights.params`) or the user (`nominal_params`) gives the total; then that total,
    /// with the architecture's active/total ratio.
    ///
    /// A dense model's active count is its total (every parameter takes part in every token);
    /// an MoE's is what one token reads (see [`ParamCount`]).
    pub fn param_count(&self) -> ParamCount {
        let mut pc = self.per_token_params();
        if self.moe.is_none() {
            pc.active = pc.total;
        }
        pc
    }

    /// Total parameters, and the parameters one generated token multiplies with (the embedding
    /// counted as one row lookup): the basis of `2 × P` FLOPs per token.
    pub fn per_token_params(&self) -> ParamCount {
        let pc = self.arch_param_count();
        let given = match (&self.file_weights, self.nominal_params) {
            (Some(fw), _) if fw.params > 0 => Some(fw.params),
            (_, Some(n)) => Some(n),
            _ => None,
        };
        if let Some(n) = given {
            // The file (or the user) is the truth for the total; keep the architecture's active share.
            let ratio = if pc.total > 0 {
                pc.active as f64 / pc.total as f64
            } else {
                1.0
            };
            return ParamCount {
                total: n,
                active: ((n as f64) * ratio).round() as u64,
            };
        }
        pc
    }

    /// Number of layers that use a sliding window, and the window: `(local, window)`.
    /// With an interleave period p: `L − ⌊L/p⌋` (Gemma 2: 42 → 21; Gemma 3 4B: 34 → 29);
    /// otherwise `min(local_layers, L)`. `(0, 0)` without sliding attention.
    pub fn local_layers(&self) -> (u64, u64) {
        match &self.sliding {
            Some(s) if s.window > 0 => {
                let n = match self.layers.checked_div(s.period) {
                    Some(global) => self.layers - global,
                    None => s.local_layers.min(self.layers),
                };
                (n, s.window)
            }
            _ => (0, 0),
        }
    }

    /// Whether layer `i` attends within the sliding window (see [`SlidingWindow::period`]):
    /// `(i + 1) % p != 0` with a period (transformers `Gemma3TextConfig.layer_types`), else one of
    /// the last `local_layers` layers (Qwen2: `i ≥ max_window_layers`; Mistral v0.1: all).
    pub fn is_local_layer(&self, i: u64) -> bool {
        match &self.sliding {
            Some(s) if s.window > 0 && i < self.layers => {
                if s.period > 0 {
                    !(i + 1).is_multiple_of(s.period)
                } else {
                    i >= self.layers - s.local_layers.min(self.layers)
                }
            }
            _ => false,
        }
    }

    /// KV-cache elements per token per layer: (K, V), `n_kv · d` each (domain brief §2).
    /// MLA caches the compressed latent and the decoupled RoPE key (`kv_lora_rank +
    /// qk_rope_head_dim` = 512 + 64 for DeepSeek-V3), with no separate V (DeepSeek-V2 paper §2.1.2).
    pub fn kv_elements_per_token_layer(&self) -> (u64, u64) {
        if let Some(mla) = &self.mla {
            (mla.kv_lora_rank.saturating_add(mla.qk_rope_head_dim), 0)
        } else {
            let e = Self::m(self.kv_heads, self.head_dim);
            (e, e)
        }
    }

    /// Whether this shape is real or estimated from a parameter count.
    pub fn is_estimated(&self) -> bool {
        self.source == ShapeSource::Estimated
    }
}

/// A tensor group read in full for every token (not a routed expert).
pub(super) fn whole(class: TensorClass, elements: u64, row: u64) -> TensorGroup {
    TensorGroup {
        class,
        elements,
        active_elements: elements,
        row,
        routed: false,
    }
}

/// Σ elements and Σ active elements of some tensor groups.
fn sum(groups: &[TensorGroup]) -> ParamCount {
    groups
        .iter()
        .fold(ParamCount::default(), |a, t| ParamCount {
            total: a.total.saturating_add(t.elements),
            active: a.active.saturating_add(t.active_elements),
        })
}
