//! Memory estimate: Scenario → Estimate, a list of components each with its bytes, where it sits
//! (per GPU or in host RAM), its provenance and a one-line formula with the numbers filled in.
//!
//! One module per component, each citing the sources of its formula:
//! - [`weights`]: the model's tensors at the chosen precision, and where llama.cpp puts a tied
//!   embedding.
//! - [`kv_cache`]: the KV cache of inference (vLLM paper, Kwon et al. 2023, §2.2; MLA:
//!   DeepSeek-V2 paper §2.1.2; llama.cpp's padding and sliding-window cells).
//! - [`inference_workspace`]: llama.cpp's compute buffers, the prefill activations of the
//!   PyTorch runtimes, and the logits.
//! - [`training_activations`]: Korthikanti et al. 2022 and the loss path.
//! - [`training_states`]: gradients, optimiser states and master weights (ZeRO, Rajbhandari et
//!   al. 2019), LoRA adapters.
//! - [`overhead`]: the runtime's fixed reserve per GPU.
//!
//! Our own reasoning behind the heuristics is in `docs/memory.md`.

mod component;
mod draft;
pub use draft::{draft_scenario, shared_with_model};
mod framework;
mod inference_workspace;
mod kv_cache;
mod overhead;
mod training_activations;
mod training_states;
mod vision;
mod weights;

pub use component::{Component, ComponentKind, Placement, Provenance};
pub use framework::CUDA_CONTEXT;
pub use training_states::trainable_params;
pub use weights::{RoutedExperts, routed_experts};

use super::model::{MlpKind, ModelSpec, ParamCount};
use super::scenario::Scenario;
use super::units::Bytes;
use component::ComponentList;
use serde::{Deserialize, Serialize};

/// `format!` only when explaining: the fit engine asks for numbers only, and skipping the
/// formula text makes an estimate several times cheaper.
macro_rules! formula {
    ($on:expr, $($t:tt)*) => {
        if $on { format!($($t)*) } else { String::new() }
    };
}
use formula;

/// The numbers the speed and fit engines need besides the components.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// Weights of all repeated layers (whole model, not per GPU).
    pub layer_weights: Bytes,
    /// Weights outside the layers (embedding, output head, final norm).
    pub outer_weights: Bytes,
    /// Weight bytes read to decode one token (active experts only; the embedding is a row lookup).
    pub active_weight_bytes_per_token: Bytes,
    /// KV-cache bytes of the whole job (all sequences), before TP replication.
    pub kv_total: Bytes,
    /// KV bytes read per decode step per sequence at full context.
    pub kv_read_per_token: Bytes,
    /// Forward FLOPs per token (2·P_active + attention over the context).
    pub flops_per_token: f64,
    /// Per-device bytes that do not scale with layers (overhead, activations/workspace).
    pub fixed_per_device: Bytes,
    /// Layers.
    pub layers: u64,
    /// The speculative drafter, when there is one: what it reads per drafted token and its
    /// layers (its weights and KV are components, and in `fixed_per_device`).
    #[serde(default)]
    pub draft: Option<DraftLoad>,
    /// Weight elements one decoded token multiplies with, by the ggml type llama.cpp stores
    /// them in (GGUF and 16/32-bit precisions; empty otherwise): the mat-vec kernel each runs
    /// through, whose ALU work per weight differs by type (`speed::metal`).
    #[serde(skip)]
    pub active_elements_by_type: Vec<(crate::core::precision::GgmlType, u64)>,
}

/// What the drafter of speculative decoding costs per drafted token.
#[derive(Copy, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DraftLoad {
    pub bytes_per_token: Bytes,
    pub layers: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub params: ParamCount,
    pub components: Vec<Component>,
    /// KV bytes per token of one sequence, all layers.
    pub kv_cache_per_token: Bytes,
    /// GPUs the job is spread over (0 = CPU only).
    pub gpus: u64,
    pub workload: Workload,
    /// Things the user should know (clamped inputs, estimated shapes, runtime behaviour).
    pub notes: Vec<String>,
}

impl Estimate {
    /// Sum of one kind across the job.
    pub fn kind_total(&self, k: ComponentKind) -> Bytes {
        self.components
            .iter()
            .filter(|c| c.kind == k)
            .map(|c| c.bytes)
            .sum()
    }
    /// Everything, across all GPUs and host RAM.
    pub fn total(&self) -> Bytes {
        self.components.iter().map(|c| c.bytes).sum()
    }
    /// What ONE GPU holds.
    pub fn per_gpu_total(&self) -> Bytes {
        self.components
            .iter()
            .filter(|c| c.placement == Placement::Gpu)
            .map(|c| c.per_device)
            .sum()
    }
    /// Weights + gradients + optimiser states + master weights held by ONE GPU (after ZeRO).
    pub fn per_gpu_model_states(&self) -> Bytes {
        self.components
            .iter()
            .filter(|c| {
                c.placement == Placement::Gpu
                    && matches!(
                        c.kind,
                        ComponentKind::Weights
                            | ComponentKind::Gradients
                            | ComponentKind::Optimizer
                            | ComponentKind::MasterWeights
                    )
            })
            .map(|c| c.per_device)
            .sum()
    }
    /// What sits in host RAM.
    pub fn host_total(&self) -> Bytes {
        self.components
            .iter()
            .filter(|c| c.placement == Placement::Host)
            .map(|c| c.bytes)
            .sum()
    }
    /// Per-GPU bytes of one kind.
    pub fn per_gpu_kind(&self, k: ComponentKind) -> Bytes {
        self.components
            .iter()
            .filter(|c| c.kind == k && c.placement == Placement::Gpu)
            .map(|c| c.per_device)
            .sum()
    }
    /// The allocated peak of ONE GPU (host RAM when CPU only): everything but the runtime's
    /// fixed reserve. For training, what `torch.cuda.max_memory_allocated` reports.
    pub fn peak_allocated(&self) -> Bytes {
        self.peak_reserved().saturating_sub(if self.gpus == 0 {
            self.host_kind(ComponentKind::Overhead)
        } else {
            self.per_gpu_kind(ComponentKind::Overhead)
        })
    }
    /// The reserved peak of ONE GPU (host RAM when CPU only): the allocated peak plus the
    /// caching-allocator reserve and the CUDA context, what `nvidia-smi` shows. Fit verdicts
    /// use this.
    pub fn peak_reserved(&self) -> Bytes {
        if self.gpus == 0 {
            self.host_total()
        } else {
            self.per_gpu_total()
        }
    }
    /// Host bytes of one kind.
    pub fn host_kind(&self, k: ComponentKind) -> Bytes {
        self.components
            .iter()
            .filter(|c| c.kind == k && c.placement == Placement::Host)
            .map(|c| c.bytes)
            .sum()
    }
}

use super::format::group_digits;

/// A size as the formula texts show it ("4.00 GiB").
fn gib(x: Bytes) -> String {
    x.display_gib()
}

/// `x × num / den` without overflow (0 when `den` is 0).
fn scale_by_ratio(x: u64, num: u64, den: u64) -> u64 {
    if den == 0 {
        0
    } else {
        ((x as u128 * num as u128) / den as u128).min(u64::MAX as u128) as u64
    }
}

/// The clamped scenario and what every component needs to know about the job.
struct Job<'a> {
    s: &'a Scenario,
    spec: &'a ModelSpec,
    /// Build formula texts and notes.
    explain: bool,
    /// No GPU: everything in host RAM.
    cpu_only: bool,
    /// GPUs the job is spread over (1 for CPU only).
    devices: u64,
    training: bool,
    /// ZeRO stage in effect (0 for inference; 3 when the framework shards with FSDP over
    /// several GPUs).
    zero_stage: u8,
    /// What the training framework changes.
    framework: framework::FrameworkProfile,
    /// The model's weights summed at the held precision ([`ModelSums`]).
    weight_sums: &'a weights::WeightSums,
}

/// The FFN width a token passes through (active experts for MoE) and the number of
/// up-projections of that width (2 for gated MLPs: gate and up).
fn ffn_shape(spec: &ModelSpec) -> (u64, u64) {
    let width = match &spec.moe {
        Some(m) => m
            .expert_ffn
            .saturating_mul(m.active_experts)
            .saturating_add(m.shared_experts.saturating_mul(if m.shared_ffn > 0 {
                m.shared_ffn
            } else {
                m.expert_ffn
            })),
        None => spec.intermediate,
    };
    let up_projections = match spec.mlp {
        MlpKind::Gated => 2,
        MlpKind::Plain => 1,
    };
    (width, up_projections)
}

/// Estimate the memory of a scenario. Inputs are clamped to the supported domain first; the
/// arithmetic saturates, so no input panics, wraps or yields NaN.
pub fn estimate(scenario: &Scenario) -> Estimate {
    estimate_with(scenario, true)
}

/// [`estimate`], with the formula texts and notes only when `explain` is true (the numbers are
/// identical either way).
pub fn estimate_with(scenario: &Scenario, explain: bool) -> Estimate {
    estimate_owned(scenario.clone(), explain)
}

/// [`estimate_with`] of a scenario the caller has built for it and gives up (the fit's estimate
/// per GPU count, a cluster's shard, a serving engine's view): clamped in place, not cloned.
pub fn estimate_owned(s: Scenario, explain: bool) -> Estimate {
    estimate_inner(s, explain, None)
}

/// What an estimate reads of the model at its precision, the same whatever the GPU count: the
/// weights summed tensor by tensor, the parameter counts and the active elements by ggml type —
/// most of an estimate's work. The first estimate of a scenario makes it and
/// [`estimate_sharing`] hands it to the others of the same model and precisions (a fit's
/// estimates per GPU count).
#[derive(Clone)]
pub struct ModelSums {
    /// What the sums were made from: the model as the estimate reads it (after clamping and
    /// moving a vision tower; kept only by sums made to be shared), the precision the weights
    /// are held at and the one asked, and whether with formula texts.
    spec: Option<ModelSpec>,
    held: super::precision::WeightPrecision,
    asked: super::precision::WeightPrecision,
    explain: bool,
    weights: weights::WeightSums,
    params: ParamCount,
    per_token: ParamCount,
    active_elements_by_type: Vec<(super::precision::GgmlType, u64)>,
}

impl ModelSums {
    fn of(s: &Scenario, explain: bool, to_share: bool) -> ModelSums {
        let spec = &s.model;
        let held = s.held_weights();
        ModelSums {
            spec: to_share.then(|| spec.clone()),
            held,
            asked: s.weights,
            explain,
            weights: weights::sum_tensors(spec, held, explain),
            params: spec.param_count(),
            per_token: spec.per_token_params(),
            active_elements_by_type: weights::active_elements_by_type(spec, s.weights),
        }
    }
    /// Whether these are the sums of `s`'s model and precisions.
    fn holds_for(&self, s: &Scenario, explain: bool) -> bool {
        self.explain == explain
            && self.held == s.held_weights()
            && self.asked == s.weights
            && self.spec.as_ref() == Some(&s.model)
    }
}

/// [`estimate_owned`] with the model's sums in `shared` when they hold for `s` (the same model
/// and precisions), else made here and left in `shared` for the next; the numbers are the same
/// either way.
pub fn estimate_sharing(s: Scenario, explain: bool, shared: &mut Option<ModelSums>) -> Estimate {
    estimate_inner(s, explain, Some(shared))
}

fn estimate_inner(
    mut s: Scenario,
    explain: bool,
    shared: Option<&mut Option<ModelSums>>,
) -> Estimate {
    let asked = (s.context, s.batch, s.gpus);
    s.clamp();
    let mut notes = Vec::new();
    move_vision_tower(&mut s, explain, &mut notes);
    let mut own = None;
    let to_share = shared.is_some();
    let slot = shared.unwrap_or(&mut own);
    if !slot.as_ref().is_some_and(|m| m.holds_for(&s, explain)) {
        *slot = Some(ModelSums::of(&s, explain, to_share));
    }
    let sums = slot.as_ref().expect("just made");
    let spec = &s.model;
    input_notes(&s, asked, explain, &mut notes);
    let training = s.mode.is_training();
    let profile = framework::profile(s.framework);
    let job = Job {
        s: &s,
        spec,
        explain,
        cpu_only: s.gpus == 0,
        devices: s.devices(),
        training,
        zero_stage: match (training, profile.shards_with_fsdp && s.gpus > 1) {
            (false, _) => 0,
            (true, true) => 3,
            (true, false) => s.zero,
        },
        framework: profile,
        weight_sums: &sums.weights,
    };
    if training && job.framework.shards_with_fsdp && s.gpus > 1 && s.zero != 3 {
        notes.push(formula!(
            explain,
            "{} shards weights, gradients and optimiser states over the {} GPUs (FSDP FULL_SHARD, as ZeRO-3).",
            s.framework.label(),
            s.gpus
        ));
    }
    let (params, per_token_active) = (sums.params, sums.per_token.active);
    let mut list = ComponentList::new(job.devices, job.cpu_only);

    let w = weights::place(&job, &mut list, &mut notes);
    let kv = kv_cache::place(&job, &mut list, &mut notes);
    if training {
        training_activations::place(&job, &mut list);
        training_states::place(&job, &params, &w, &mut list, &mut notes);
    } else {
        inference_workspace::place(&job, &mut list);
    }
    let vision_gpu = vision::place(&job, &mut list);
    let draft = draft::place(&job, &mut list, &mut notes);
    overhead::place(&job, &mut list, &mut notes);

    // ---- Workload numbers for speed and fit ----
    use ComponentKind::{Activations, Overhead};
    // The drafter stays on the GPU beside the target's fixed costs (llama.cpp offloads all of a
    // draft model's layers unless `-ngld` says otherwise; vLLM loads it on the same GPUs).
    let fixed_per_device = list
        .per_gpu_where(|k| matches!(k, Activations | Overhead))
        .saturating_add(draft.map_or(Bytes::ZERO, |d| d.per_device))
        .saturating_add(vision_gpu);
    // The sums' active elements: moved out of sums made for this estimate alone, copied from
    // shared ones.
    let made = slot.as_mut().expect("just made");
    let active_elements_by_type = if to_share {
        made.active_elements_by_type.clone()
    } else {
        std::mem::take(&mut made.active_elements_by_type)
    };
    let workload = Workload {
        layer_weights: w.sums.layers,
        outer_weights: w.sums.outer,
        active_weight_bytes_per_token: w.sums.active_read,
        kv_total: kv.total,
        kv_read_per_token: kv.read_per_token,
        flops_per_token: 2.0 * per_token_active as f64 + attention_flops_per_token(spec, s.context),
        fixed_per_device,
        layers: spec.layers,
        draft: draft.map(|d| d.load),
        active_elements_by_type,
    };

    if !explain {
        notes.clear();
    }
    Estimate {
        params,
        components: list.items,
        kv_cache_per_token: kv.per_token,
        gpus: s.gpus,
        workload,
        notes,
    }
}

/// An mmproj replaces the vision tower a checkpoint bundles (Gemma 3's SigLIP): llama.cpp's
/// text GGUF leaves it out, and the mmproj is sized on its own (`vision::place`). A tower read
/// from the model's own config.json (Qwen2.5-VL) moves to those rows too.
fn move_vision_tower(s: &mut Scenario, explain: bool, notes: &mut Vec<String>) {
    if let Some(v) = &s.vision
        && s.model.vision_params > 0
    {
        notes.push(if v.encoder.in_checkpoint {
        formula!(
            explain,
            "The checkpoint's vision tower ({} params) is sized in the vision encoder rows, with its images.",
            group_digits(s.model.vision_params)
        )
    } else {
        formula!(
            explain,
            "The checkpoint's own vision tower ({} params) is left out: the mmproj file holds the encoder.",
            group_digits(s.model.vision_params)
        )
    });
        s.model.vision_params = 0;
        // A checkpoint's exact bytes (safetensors headers) hold its tower outside the layers:
        // they leave with it.
        if v.encoder.in_checkpoint
            && let Some(f) = s.model.file_weights.as_mut()
        {
            let outside = f.total_bytes.saturating_sub(f.layer_bytes);
            f.total_bytes -= v.encoder.weight_bytes.min(outside);
            f.params = f.params.saturating_sub(v.encoder.params);
        }
    }
}

/// The notes on the inputs themselves: clamped values, an estimated shape, a context past the
/// model's trained maximum.
fn input_notes(s: &Scenario, asked: (u64, u64, u64), explain: bool, notes: &mut Vec<String>) {
    let spec = &s.model;
    if (s.context, s.batch, s.gpus) != asked {
        notes.push("Some inputs were outside the supported range and were clamped.".into());
    }
    if spec.is_estimated() {
        notes.push(formula!(explain,
            "Shape estimated from the parameter count ({} layers, hidden {}, {} KV heads × {}): KV cache and activations are approximate.",
            spec.layers, spec.hidden, spec.kv_heads, spec.head_dim
        ));
    }
    if spec.max_context > 0 && s.context > spec.max_context {
        notes.push(formula!(
            explain,
            "Context {} exceeds the model's trained maximum of {} tokens.",
            group_digits(s.context),
            group_digits(spec.max_context)
        ));
    }
}

/// Forward attention FLOPs per token over a sequence of `context`: 2·2·L·n_h·d per attended
/// position (QKᵀ and AV), on average half the context. DeepSeek Sparse Attention attends to
/// the top-k tokens only, after the indexer's 2·heads·head_dim multiply-adds per cached token
/// (DeepSeek-V3.2 §2.1).
fn attention_flops_per_token(spec: &ModelSpec, context: u64) -> f64 {
    let ctx = context as f64;
    match spec.mla.as_ref().and_then(|m| m.indexer.as_ref()) {
        Some(ix) => {
            // Mean positions attended over a sequence of ctx: min(p, k) averaged over p.
            let k = ix.topk as f64;
            let attended = if ctx <= k {
                ctx / 2.0
            } else {
                k - k * k / (2.0 * ctx)
            };
            spec.layers as f64
                * (4.0 * (spec.heads * spec.head_dim) as f64 * attended
                    + 2.0 * (ix.heads * ix.head_dim) as f64 * ctx / 2.0)
        }
        None => 4.0 * spec.layers as f64 * (spec.heads * spec.head_dim) as f64 * ctx / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::precision::{KvTypes, WeightPrecision};
    use crate::core::scenario::{Mode, Runtime};
    use crate::core::units::MIB;

    #[test]
    fn estimates_sharing_the_models_sums_equal_those_made_alone() {
        // One slot handed from estimate to estimate, as a fit's cache does over GPU counts —
        // and across a change of model, precision, mode and explain, where the sums are made
        // again.
        // Mixtral's shape (mistralai/Mixtral-8x7B-v0.1 config.json): 8 experts, 2 active.
        let moe = Scenario {
            model: ModelSpec {
                name: "Mixtral 8x7B".into(),
                arch: "mixtral".into(),
                vocab: 32000,
                moe: Some(crate::core::model::MoeSpec {
                    experts: 8,
                    active_experts: 2,
                    expert_ffn: 14336,
                    ..Default::default()
                }),
                ..ModelSpec::default()
            },
            weights: WeightPrecision::Q4KM,
            ..Scenario::default()
        };
        let scenarios = [
            Scenario::default(),
            Scenario {
                weights: WeightPrecision::Q4KM,
                ..Scenario::default()
            },
            moe,
            Scenario {
                mode: Mode::Full,
                zero: 3,
                ..Scenario::default()
            },
            Scenario {
                mode: Mode::Qlora,
                ..Scenario::default()
            },
            Scenario {
                model: mha_7b(),
                runtime: Runtime::Vllm,
                ..Scenario::default()
            },
        ];
        let mut shared = None;
        for s in &scenarios {
            for explain in [false, true] {
                for gpus in [0, 1, 2, 8] {
                    let s = Scenario { gpus, ..s.clone() };
                    let alone = estimate_owned(s.clone(), explain);
                    let with = estimate_sharing(s, explain, &mut shared);
                    assert_eq!(with, alone, "{} over {gpus} GPUs", alone.params.total);
                }
            }
        }
        // The slot holds the last scenario's sums, and only for it.
        let last = scenarios.last().expect("scenarios");
        assert!(shared.as_ref().is_some_and(|m| m.holds_for(last, true)));
        assert!(
            !shared
                .as_ref()
                .is_some_and(|m| m.holds_for(&scenarios[0], true))
        );
    }

    fn mha_7b() -> ModelSpec {
        // Llama-2-7B shape: 32 layers, 32 heads = 32 KV heads, head_dim 128.
        ModelSpec {
            name: "Llama 2 7B".into(),
            layers: 32,
            hidden: 4096,
            heads: 32,
            kv_heads: 32,
            head_dim: 128,
            intermediate: 11008,
            vocab: 32000,
            max_context: 4096,
            ..ModelSpec::default()
        }
    }

    fn kv(s: &Scenario) -> u64 {
        estimate(s).kind_total(ComponentKind::KvCache).0
    }

    #[test]
    fn kv_cache_llama2_7b_vllm_paper() {
        // vLLM paper (Kwon et al. 2023) §2.2: 2 × L × n_kv × d × 2 B per token; Llama-2-7B
        // (L=32, n_kv=32, d=128) in FP16 is 512 KiB per token, so 8192 tokens → 4 GiB.
        let s = Scenario {
            model: mha_7b(),
            context: 8192,
            batch: 1,
            kv: KvTypes::default(),
            ..Scenario::default()
        };
        assert_eq!(kv(&s), 4_294_967_296);
        assert_eq!(estimate(&s).kv_cache_per_token.0, 524_288);
        // 32K → 16 GiB; batch 4 at 32K → 64 GiB.
        assert_eq!(
            kv(&Scenario {
                context: 32768,
                ..s.clone()
            }),
            16 << 30
        );
        assert_eq!(
            kv(&Scenario {
                context: 32768,
                batch: 4,
                ..s
            }),
            64 << 30
        );
    }

    #[test]
    fn seven_b_fp16_is_14e9_bytes() {
        // 7e9 parameters × 2 B (FP16) = 14 GB.
        let s = Scenario {
            model: ModelSpec::generic(7_000_000_000),
            weights: WeightPrecision::Fp16,
            ..Scenario::default()
        };
        assert_eq!(
            estimate(&s).kind_total(ComponentKind::Weights).0,
            14_000_000_000
        );
    }

    #[test]
    fn zero_paper_figure_1() {
        // Rajbhandari et al. 2019, Fig. 1: Ψ = 7.5B, N = 64, K = 12 → 120, 31.4, 16.6, 1.9 GB per GPU.
        let expect = [120.0, 31.4, 16.6, 1.9];
        for (stage, want) in expect.iter().enumerate() {
            let s = Scenario {
                model: ModelSpec::generic(7_500_000_000),
                weights: WeightPrecision::Bf16,
                mode: Mode::Full,
                gpus: 64,
                zero: stage as u8,
                ..Scenario::default()
            };
            let got = estimate(&s).per_gpu_model_states().as_gb();
            assert!(
                (got - want).abs() < 0.05,
                "stage {stage}: {got} GB vs {want}"
            );
        }
    }

    #[test]
    fn seven_b_full_finetune_model_states_112_gb() {
        // ZeRO paper (Rajbhandari et al. 2019) §3.1: mixed-precision Adam holds 2 + 2 + 12 = 16 B
        // per parameter → 7B needs 112 GB before activations.
        let s = Scenario {
            model: ModelSpec::generic(7_000_000_000),
            mode: Mode::Full,
            ..Scenario::default()
        };
        assert_eq!(estimate(&s).per_gpu_model_states().0, 112_000_000_000);
    }

    #[test]
    fn total_is_sum_of_components() {
        let e = estimate(&Scenario::default());
        let sum: u64 = e.components.iter().map(|c| c.bytes.0).sum();
        assert_eq!(e.total().0, sum);
        assert_eq!(
            e.per_gpu_total(),
            e.components
                .iter()
                .filter(|c| c.placement == Placement::Gpu)
                .map(|c| c.per_device)
                .sum()
        );
    }

    #[test]
    fn llama_cpp_buffers_match_a_published_log() {
        // github.com/fedora-copr/logdetective/pull/106: a Mistral-7B GGUF (32 layers, 32 heads,
        // 8 KV heads, vocab 32000) under llama.cpp, n_ubatch 512, flash_attn = 0:
        //   n_ctx 2048:  KV 256.00 MiB, CUDA0 compute buffer 164.00 MiB, CUDA_Host compute 12.01 MiB
        //   n_ctx 32768: KV 4096.00 MiB, CUDA0 compute buffer 2144.00 MiB, CUDA_Host compute 72.01 MiB
        //   CUDA_Host output buffer 0.12 MiB.
        let mistral = ModelSpec {
            name: "Mistral 7B".into(),
            arch: "mistral".into(),
            intermediate: 14336,
            vocab: 32000,
            sliding: Some(crate::core::model::SlidingWindow {
                window: 4096,
                local_layers: 32,
                ..Default::default()
            }),
            max_context: 32768,
            ..ModelSpec::default()
        };
        for (ctx, kv_mib, cb_mib, host_mib) in
            [(2048u64, 256u64, 164.0, 12.0), (32768, 4096, 2144.0, 72.0)]
        {
            let s = Scenario {
                model: mistral.clone(),
                runtime: Runtime::LlamaCpp,
                flash_attention: false,
                context: ctx,
                ubatch: 512,
                ..Scenario::default()
            };
            let e = estimate(&s);
            assert_eq!(
                e.kind_total(ComponentKind::KvCache).0,
                kv_mib * MIB,
                "ctx {ctx}"
            );
            let cb = e
                .components
                .iter()
                .find(|c| c.name == "Compute buffer (llama.cpp)")
                .unwrap();
            assert!(
                (cb.bytes.0 as f64 / MIB as f64 - cb_mib).abs() < 1.0,
                "ctx {ctx}: {}",
                cb.bytes
            );
            let host = e
                .components
                .iter()
                .find(|c| c.name == "Host compute buffer (llama.cpp)")
                .unwrap();
            assert!(
                (host.bytes.0 as f64 / MIB as f64 - host_mib).abs() < 0.5,
                "ctx {ctx}: {}",
                host.bytes
            );
            let out = e
                .components
                .iter()
                .find(|c| c.name == "Output buffer (llama.cpp, host)")
                .unwrap();
            assert!((out.bytes.0 as f64 / MIB as f64 - 0.12).abs() < 0.01);
        }
    }

    #[test]
    fn flash_attention_off_adds_quadratic_scores() {
        let on = Scenario {
            runtime: Runtime::LlamaCpp,
            ..Scenario::default()
        };
        let off = Scenario {
            flash_attention: false,
            ..on.clone()
        };
        let a_on = estimate(&on).kind_total(ComponentKind::Activations);
        let a_off = estimate(&off).kind_total(ComponentKind::Activations);
        // KQ f32: 32 heads × 8192 × 512 × 4 B = 512 MiB.
        assert!(a_off.0 >= 512 * MIB, "{a_off}");
        assert!(a_on < a_off);
    }
}
