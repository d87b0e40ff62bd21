//! Speculative decoding: a cheap drafter proposes `γ` tokens, the target model checks them in one
//! forward pass and keeps the longest accepted prefix plus one token of its own.
//!
//! - **Memory**: the drafter's weights and its KV cache, on the GPU beside the target
//!   ([`draft_spec`] gives its shape; the estimate sizes it like any model).
//! - **Speed** (Leviathan, Kalman & Matias, "Fast Inference from Transformers via Speculative
//!   Decoding", ICML 2023, §3.1 eq. 1): with a per-token acceptance rate `α`, one verification
//!   step yields `E = (1 − α^(γ+1)) / (1 − α)` tokens. The step costs `γ` drafter steps and one
//!   target pass over `γ + 1` tokens: the target's weights are read once (its decode time) and
//!   the `γ` extra tokens add their compute at the prefill rate. Decode tok/s = `E / step`.
//!
//! Three drafters, as the engines name them:
//! - a separate small model of the same tokenizer (llama.cpp `-md FILE`, vLLM
//!   `--speculative-config '{"model": …}'`);
//! - an EAGLE-3 head (Li et al., "EAGLE-3: Scaling up Inference Acceleration of Large Language
//!   Models via Training-Time Test", arXiv:2503.01840): one decoder layer of the target's width
//!   whose attention reads the token embedding beside a fused hidden state (`2h` into q/k/v), an
//!   `fc` fusing three target layers (`3h → h`) and its own output head over a reduced draft
//!   vocabulary (`draft_vocab_size` 32,000 in the released heads, e.g.
//!   yuhuili/EAGLE3-LLaMA3.1-Instruct-8B config.json); the token embedding is the target's;
//! - the model's own multi-token-prediction layers (DeepSeek-V3 §2.2: each MTP module is one
//!   transformer block, a projection `M ∈ R^{d×2d}` of the two RMS-normed inputs, and the
//!   embedding and output head; the checkpoint stores the module's own copies of both, which
//!   is how DeepSeek-V3's "14B of MTP module weights" are counted, and vLLM's
//!   `DeepSeekMultiTokenPredictor` loads them).

use crate::core::catalog::ModelPreset;
use crate::core::model::ModelSpec;
use crate::core::precision::WeightPrecision;
use serde::{Deserialize, Serialize};

/// Who drafts.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SpecMethod {
    /// A separate small model (`-md` / `speculative_config.model`).
    #[default]
    DraftModel,
    /// An EAGLE-3 head trained for the target.
    Eagle3,
    /// The model's own multi-token-prediction layers (DeepSeek-V3/R1, GLM-4.5, Qwen3-Next).
    Mtp,
}

impl SpecMethod {
    pub const ALL: [SpecMethod; 3] = [SpecMethod::DraftModel, SpecMethod::Eagle3, SpecMethod::Mtp];

    /// The CLI spelling (`--speculative`), stable.
    pub const fn cli_name(self) -> &'static str {
        match self {
            SpecMethod::DraftModel => "draft",
            SpecMethod::Eagle3 => "eagle3",
            SpecMethod::Mtp => "mtp",
        }
    }

    pub fn from_cli(s: &str) -> Option<SpecMethod> {
        let t = s.trim().to_ascii_lowercase();
        match t.as_str() {
            "draft" | "draft-model" | "draft_model" => Some(SpecMethod::DraftModel),
            "eagle3" | "eagle-3" | "eagle" => Some(SpecMethod::Eagle3),
            "mtp" | "deepseek_mtp" | "nextn" => Some(SpecMethod::Mtp),
            _ => None,
        }
    }

    pub const fn label(self) -> &'static str {
        match self {
            SpecMethod::DraftModel => "draft model",
            SpecMethod::Eagle3 => "EAGLE-3 head",
            SpecMethod::Mtp => "MTP layers",
        }
    }

    /// Tokens drafted per step when the user does not say: vLLM's documented examples
    /// (docs.vllm.ai "Speculative Decoding": a draft model speculating 5 tokens; "EAGLE Draft
    /// Models": `num_speculative_tokens` 3), and DeepSeek-V3's one MTP module predicting one
    /// extra token (§5.4.3).
    pub const fn default_tokens(self) -> u64 {
        match self {
            SpecMethod::DraftModel => 5,
            SpecMethod::Eagle3 => 3,
            SpecMethod::Mtp => 1,
        }
    }

    /// Per-token acceptance rate when the user does not say, and where it comes from. The rate
    /// depends on the text (code and maths accept more than chat), so the user can set it.
    pub const fn default_acceptance(self) -> (f64, &'static str) {
        match self {
            // Leviathan et al. 2023, Table 3: α between about 0.5 and 0.9 across their
            // draft/target pairs and tasks.
            SpecMethod::DraftModel => (
                0.7,
                "heuristic: Leviathan et al. 2023, Table 3 (α about 0.5–0.9 across draft/target pairs)",
            ),
            // EAGLE-3 (arXiv:2503.01840), its acceptance-rate-by-position figure: about 0.7–0.8
            // at every draft position on MT-bench with LLaMA-3.1-8B.
            SpecMethod::Eagle3 => (
                0.75,
                "heuristic: EAGLE-3 (arXiv:2503.01840), ~0.7–0.8 accepted per draft position",
            ),
            // DeepSeek-V3 technical report §5.4.3: "the acceptance rate of the second token
            // prediction ranges between 85% and 90%", 1.8× the tokens per second.
            SpecMethod::Mtp => (
                0.85,
                "DeepSeek-V3 technical report (arXiv:2412.19437) §5.4.3: 85–90 % of second tokens accepted",
            ),
        }
    }

    /// The weights the drafter is stored in when the user does not say: EAGLE-3 heads ship in
    /// BF16; MTP layers are part of the checkpoint (the target's precision); a draft model is
    /// usually quantised like the target.
    pub fn default_weights(self, target: WeightPrecision) -> WeightPrecision {
        match self {
            SpecMethod::Eagle3 => WeightPrecision::Bf16,
            SpecMethod::DraftModel | SpecMethod::Mtp => target,
        }
    }
}

/// Speculative decoding as the user set it (`Scenario::speculative`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct SpeculativeInputs {
    pub method: SpecMethod,
    /// The draft model's shape ([`SpecMethod::DraftModel`] only).
    pub draft: Option<ModelSpec>,
    /// The draft's preset id or file, for reports and launch settings.
    pub draft_id: Option<String>,
    /// The drafter's weight precision; `None` = [`SpecMethod::default_weights`].
    pub draft_weights: Option<WeightPrecision>,
    /// Tokens drafted per step (`γ`); 0 = the method's default.
    pub tokens: u64,
    /// Per-token acceptance rate; `None` = the method's default.
    pub acceptance: Option<f64>,
}

/// EAGLE-3's reduced draft vocabulary (`draft_vocab_size` in the released heads' config.json,
/// e.g. yuhuili/EAGLE3-LLaMA3.1-Instruct-8B; the target's tokens are mapped through `d2t`).
pub const EAGLE3_DRAFT_VOCAB: u64 = 32_000;

/// Most tokens one step may draft (llama.cpp's `--draft-max` default is 16; more never pays).
pub const MAX_DRAFT_TOKENS: u64 = 64;

impl SpeculativeInputs {
    pub fn tokens(&self) -> u64 {
        match self.tokens {
            0 => self.method.default_tokens(),
            n => n.min(MAX_DRAFT_TOKENS),
        }
    }
    pub fn acceptance(&self) -> f64 {
        self.acceptance
            .filter(|a| a.is_finite())
            .unwrap_or(self.method.default_acceptance().0)
            .clamp(0.0, 0.99)
    }
    pub fn weights(&self, target: WeightPrecision) -> WeightPrecision {
        self.draft_weights
            .unwrap_or(self.method.default_weights(target))
    }
}

/// Why speculative decoding cannot be set up for this model (one line each).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpecError {
    /// `--speculative draft` without `--draft`.
    NoDraftModel,
    /// `--speculative mtp` on a model without MTP layers.
    NoMtpLayers(String),
    /// The draft's vocabulary differs: the target could not verify its tokens.
    VocabMismatch { draft: u64, target: u64 },
}

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SpecError::NoDraftModel => {
                write!(
                    f,
                    "a draft model is needed: name one with --draft (a preset id or a file)"
                )
            }
            SpecError::NoMtpLayers(m) => write!(
                f,
                "{m} has no multi-token-prediction layers (config.json num_nextn_predict_layers is 0): use --speculative draft or eagle3"
            ),
            SpecError::VocabMismatch { draft, target } => write!(
                f,
                "the draft model's vocabulary ({draft} tokens) differs from the target's ({target}): speculative decoding needs the same tokenizer"
            ),
        }
    }
}

/// The drafter as a model shape the estimate can size, plus the parameters its shape does not
/// carry (EAGLE-3's wider q/k/v and `fc`, MTP's projection and norms).
#[derive(Clone, Debug, PartialEq)]
pub struct DraftShape {
    pub spec: ModelSpec,
    pub extra_params: u64,
}

/// Whether two vocabulary sizes can belong to one tokenizer: those of one family differ by a
/// few added or padding tokens (Qwen2.5 0.5B: 151,936; Qwen2.5 32B: 152,064), so only a
/// difference over 2 % is a different tokenizer.
pub fn same_vocabulary(a: u64, b: u64) -> bool {
    a.abs_diff(b) <= a.max(b) / 50
}

/// The drafter speculation uses when it is turned on without a choice: the model's own MTP
/// layers where its checkpoint has them (nothing more to load), else an EAGLE-3 head (published
/// for most large open models; needs no second tokenizer).
pub fn default_method(target: &ModelSpec) -> SpecMethod {
    if target.mtp_layers > 0 {
        SpecMethod::Mtp
    } else {
        SpecMethod::Eagle3
    }
}

/// The presets that can draft for `target` (preset `family`, when known): the same family
/// (one tokenizer), the same vocabulary and fewer parameters, smallest first.
pub fn draft_candidates<'a>(
    presets: &'a [ModelPreset],
    target: &ModelSpec,
    family: Option<&str>,
) -> Vec<&'a ModelPreset> {
    let size = target.param_count().total;
    let mut out: Vec<&ModelPreset> = presets
        .iter()
        .filter(|p| family.is_none_or(|f| p.family == f))
        .filter(|p| same_vocabulary(p.spec.vocab, target.vocab))
        .filter(|p| p.spec.param_count().total < size)
        .collect();
    out.sort_by_key(|p| p.spec.param_count().total);
    out
}

/// The drafter of `target` for these inputs.
pub fn draft_spec(target: &ModelSpec, sp: &SpeculativeInputs) -> Result<DraftShape, SpecError> {
    let h = target.hidden;
    match sp.method {
        SpecMethod::DraftModel => {
            let d = sp.draft.clone().ok_or(SpecError::NoDraftModel)?;
            let (a, b) = (d.vocab, target.vocab);
            if !same_vocabulary(a, b) {
                return Err(SpecError::VocabMismatch {
                    draft: a,
                    target: b,
                });
            }
            Ok(DraftShape {
                spec: d,
                extra_params: 0,
            })
        }
        SpecMethod::Eagle3 => {
            let mut spec = target.clone();
            spec.name = format!("{} EAGLE-3 head", target.name);
            spec.layers = 1;
            spec.moe = None;
            spec.sliding = None;
            spec.recurrent = None;
            spec.mtp_layers = 0;
            spec.file_weights = None;
            spec.nominal_params = None;
            // One output head over the draft vocabulary, no embedding of its own: a "tied"
            // shape counts that one matrix.
            spec.vocab = EAGLE3_DRAFT_VOCAB.min(target.vocab.max(1));
            spec.tied_embeddings = true;
            // q/k/v read [embedding; fused hidden] = 2h: one more h of input columns; the fc
            // fuses three target layers' hidden states, 3h → h.
            let q = target.heads.saturating_mul(target.head_dim);
            let kv = 2 * target.kv_heads.saturating_mul(target.head_dim);
            let extra = h.saturating_mul(q + kv).saturating_add(3 * h * h);
            Ok(DraftShape {
                spec,
                extra_params: extra,
            })
        }
        SpecMethod::Mtp => {
            if target.mtp_layers == 0 {
                return Err(SpecError::NoMtpLayers(target.name.clone()));
            }
            let mut spec = target.clone();
            spec.name = format!("{} MTP", target.name);
            spec.layers = target.mtp_layers;
            spec.mtp_layers = 0;
            spec.file_weights = None;
            spec.nominal_params = None;
            if let Some(m) = spec.moe.as_mut() {
                // The MTP block has the last layer's kind: MoE in DeepSeek-V3 and GLM-4.5.
                m.first_dense_layers = 0;
                m.dense_layers.clear();
                m.sparse_step = 0;
            }
            if let Some(r) = spec.recurrent.as_mut() {
                // Qwen3-Next's MTP block is a full-attention layer.
                r.attention_layers = (0..spec.layers).collect();
                r.mlp_only_layers.clear();
            }
            // eh_proj (2h → h) and the enorm / hnorm before it.
            let extra = (2 * h * h).saturating_add(2 * h);
            Ok(DraftShape {
                spec,
                extra_params: extra,
            })
        }
    }
}

/// Decode with speculation, for one sequence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpecSpeed {
    pub method: SpecMethod,
    /// Tokens drafted per step (γ).
    pub draft_tokens: u64,
    /// Per-token acceptance rate (α).
    pub acceptance: f64,
    /// Tokens one verification step yields on average: `(1 − α^(γ+1)) / (1 − α)`.
    pub tokens_per_step: f64,
    /// Seconds of one drafter step.
    pub draft_step_s: f64,
    /// Seconds of one target pass over `γ + 1` tokens.
    pub verify_s: f64,
    /// Decode tok/s without speculation.
    pub plain_decode_tokens_per_s: f64,
    /// Decode tok/s with it.
    pub decode_tokens_per_s: f64,
    /// `decode_tokens_per_s / plain_decode_tokens_per_s`; below 1 it costs more than it saves.
    pub speedup: f64,
}

/// What the speed of one speculative step depends on.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct SpecTimes {
    /// The target's decode tok/s at batch 1 on this placement.
    pub decode_tokens_per_s: f64,
    /// Its prefill tok/s (the compute rate a verified extra token costs).
    pub prefill_tokens_per_s: f64,
    /// Bytes the target reads per generated token (active weights + KV at depth).
    pub target_bytes_per_token: f64,
    /// Bytes the drafter reads per drafted token.
    pub draft_bytes_per_token: f64,
    /// The drafter's layers and the runtime's fixed cost per layer (kernel launches), seconds.
    pub draft_layers: u64,
    pub layer_overhead_s: f64,
}

/// Tokens one step yields with acceptance `a` and `g` drafted tokens (Leviathan et al. eq. 1).
pub fn tokens_per_step(a: f64, g: u64) -> f64 {
    let a = a.clamp(0.0, 0.999_999);
    (1.0 - a.powi(g.min(MAX_DRAFT_TOKENS) as i32 + 1)) / (1.0 - a)
}

/// Decode speed with speculation from the target's plain speed on the same placement. The
/// drafter runs where the target runs, at the same achieved bandwidth (its bytes over the
/// target's, of the target's step), plus its own per-layer cost.
pub fn speed(sp: &SpeculativeInputs, t: &SpecTimes) -> Option<SpecSpeed> {
    let positive = |x: f64| x.is_finite() && x > 0.0;
    if !positive(t.decode_tokens_per_s) || !positive(t.target_bytes_per_token) {
        return None;
    }
    let g = sp.tokens();
    let a = sp.acceptance();
    let t_target = 1.0 / t.decode_tokens_per_s;
    let draft_step = t_target * (t.draft_bytes_per_token / t.target_bytes_per_token)
        + t.draft_layers as f64 * t.layer_overhead_s.max(0.0);
    let extra = if t.prefill_tokens_per_s > 0.0 {
        g as f64 / t.prefill_tokens_per_s
    } else {
        g as f64 * t_target
    };
    let verify = t_target + extra;
    let e = tokens_per_step(a, g);
    let step = g as f64 * draft_step + verify;
    let tps = e / step;
    Some(SpecSpeed {
        method: sp.method,
        draft_tokens: g,
        acceptance: a,
        tokens_per_step: e,
        draft_step_s: draft_step,
        verify_s: verify,
        plain_decode_tokens_per_s: t.decode_tokens_per_s,
        decode_tokens_per_s: tps,
        speedup: tps / t.decode_tokens_per_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_tokens_follow_leviathan_eq_1() {
        // α = 0.8, γ = 4: (1 − 0.8⁵) / 0.2 = (1 − 0.32768) / 0.2 = 3.3616.
        assert!((tokens_per_step(0.8, 4) - 3.3616).abs() < 1e-9);
        // α = 0: only the target's own token.
        assert_eq!(tokens_per_step(0.0, 5), 1.0);
        // γ = 1, α = 0.85 (DeepSeek-V3's MTP): 1.85 tokens a step.
        assert!((tokens_per_step(0.85, 1) - 1.85).abs() < 1e-9);
    }

    #[test]
    fn a_free_perfect_drafter_gives_gamma_plus_one() {
        let sp = SpeculativeInputs {
            tokens: 3,
            acceptance: Some(0.99),
            ..SpeculativeInputs::default()
        };
        let t = SpecTimes {
            decode_tokens_per_s: 10.0,
            prefill_tokens_per_s: 1e12,
            target_bytes_per_token: 1.0,
            draft_bytes_per_token: 0.0,
            draft_layers: 0,
            layer_overhead_s: 0.0,
        };
        let s = speed(&sp, &t).unwrap();
        assert!(s.speedup > 3.9 && s.speedup <= 4.0, "{s:?}");
    }

    #[test]
    fn an_expensive_drafter_slows_decode_down() {
        // A drafter as big as the target with α = 0.5 cannot pay for itself.
        let sp = SpeculativeInputs {
            tokens: 5,
            acceptance: Some(0.5),
            ..SpeculativeInputs::default()
        };
        let t = SpecTimes {
            decode_tokens_per_s: 10.0,
            prefill_tokens_per_s: 1000.0,
            target_bytes_per_token: 1.0,
            draft_bytes_per_token: 1.0,
            draft_layers: 0,
            layer_overhead_s: 0.0,
        };
        assert!(speed(&sp, &t).unwrap().speedup < 1.0);
    }

    #[test]
    fn mtp_needs_mtp_layers_and_a_draft_model_needs_its_tokenizer() {
        let target = ModelSpec::default();
        let mtp = SpeculativeInputs {
            method: SpecMethod::Mtp,
            ..SpeculativeInputs::default()
        };
        assert!(matches!(
            draft_spec(&target, &mtp),
            Err(SpecError::NoMtpLayers(_))
        ));
        let other = ModelSpec {
            vocab: 32000,
            ..ModelSpec::default()
        };
        let d = SpeculativeInputs {
            draft: Some(other),
            ..SpeculativeInputs::default()
        };
        assert!(matches!(
            draft_spec(&target, &d),
            Err(SpecError::VocabMismatch { .. })
        ));
        assert_eq!(
            draft_spec(&target, &SpeculativeInputs::default()),
            Err(SpecError::NoDraftModel)
        );
    }
}
