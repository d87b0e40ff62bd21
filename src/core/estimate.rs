//! Memory estimate: Scenario → Estimate, a list of components each with its bytes, where it sits
//! (per GPU or in host RAM), its provenance and a one-line formula with the numbers filled in.
//!
//! References (cited where used):
//! - KV cache: `2 × L × n_kv × d × bytes` per token (vLLM paper, Kwon et al. 2023, §2.2; MLA:
//!   DeepSeek-V2 paper §2.1.2, cache `d_c + d_h^R` per token per layer).
//! - Training activations: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
//!   Transformer Models", Table 2: `s·b·h·(34 + 5·a·s/h)` bytes per layer at 16-bit.
//! - Model states: Rajbhandari et al. 2019, "ZeRO", §3 and Fig. 1: `(2 + 2 + K)·Ψ` with K = 12 for
//!   mixed-precision Adam; stage 1 shards K, stage 2 also the gradients, stage 3 also the weights.
//! - llama.cpp buffers: `llama_context` reserves a worst-case graph of `n_ubatch` tokens with every
//!   output (src/llama-context.cpp `graph_reserve`), so the compute buffer holds `n_ubatch × n_vocab`
//!   f32 logits and, without FlashAttention, the `n_head × n_ctx × n_ubatch` f32 KQ matrix.
//! - vLLM: takes `gpu_memory_utilization × VRAM`, profiles the activation peak with
//!   `max_num_batched_tokens`, captures CUDA graphs, and gives the rest to 16-token KV blocks
//!   (vllm/worker/gpu_worker.py `determine_available_memory`).

use super::model::{ModelSpec, ParamCount};
use super::precision::{GgmlType, KvPrecision, TensorClass, WeightPrecision};
use super::scenario::{
    Checkpointing, KvAllocation, LoraTargets, Mode, Offload, Optimizer, Runtime, Scenario,
};
use super::units::Bytes;
use serde::{Deserialize, Serialize};

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ComponentKind {
    Weights,
    KvCache,
    Activations,
    Gradients,
    Optimizer,
    MasterWeights,
    Overhead,
}

impl ComponentKind {
    pub const ALL: [ComponentKind; 7] = [
        ComponentKind::Weights,
        ComponentKind::KvCache,
        ComponentKind::Activations,
        ComponentKind::Gradients,
        ComponentKind::Optimizer,
        ComponentKind::MasterWeights,
        ComponentKind::Overhead,
    ];
    pub const fn label(self) -> &'static str {
        match self {
            ComponentKind::Weights => "Weights",
            ComponentKind::KvCache => "KV cache",
            ComponentKind::Activations => "Activations",
            ComponentKind::Gradients => "Gradients",
            ComponentKind::Optimizer => "Optimizer states",
            ComponentKind::MasterWeights => "Master weights",
            ComponentKind::Overhead => "Overhead",
        }
    }
    /// The key used in the JSON `memory` object.
    pub const fn json_key(self) -> &'static str {
        match self {
            ComponentKind::Weights => "weights",
            ComponentKind::KvCache => "kv_cache",
            ComponentKind::Activations => "activations",
            ComponentKind::Gradients => "gradients",
            ComponentKind::Optimizer => "optimizer",
            ComponentKind::MasterWeights => "master_weights",
            ComponentKind::Overhead => "overhead",
        }
    }
}

/// How a number was obtained.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provenance {
    /// Read from the architecture or a model file, counted exactly.
    Exact,
    /// Computed by a published formula from exact inputs.
    Derived,
    /// A rule-of-thumb constant (shown, and adjustable where it matters).
    Heuristic,
}

impl Provenance {
    pub const fn label(self) -> &'static str {
        match self {
            Provenance::Exact => "exact",
            Provenance::Derived => "derived",
            Provenance::Heuristic => "heuristic",
        }
    }
}

/// Where a component lives.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// On every GPU (`per_device` each).
    Gpu,
    /// In host RAM.
    Host,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Component {
    pub kind: ComponentKind,
    pub name: String,
    /// Bytes across the whole job (all GPUs, or host RAM).
    pub bytes: Bytes,
    /// Bytes on ONE GPU for `Placement::Gpu`; equal to `bytes` for `Placement::Host`.
    pub per_device: Bytes,
    pub placement: Placement,
    pub provenance: Provenance,
    /// The formula with the numbers filled in.
    pub formula: String,
}

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
    /// Host bytes of one kind.
    pub fn host_kind(&self, k: ComponentKind) -> Bytes {
        self.components
            .iter()
            .filter(|c| c.kind == k && c.placement == Placement::Host)
            .map(|c| c.bytes)
            .sum()
    }
}

/// `format!` only when explaining: the fit engine asks for numbers only, and skipping the
/// formula text makes an estimate several times cheaper.
macro_rules! ex {
    ($on:expr, $($t:tt)*) => {
        if $on { format!($($t)*) } else { String::new() }
    };
}

pub use super::format::group_digits;

fn b(x: Bytes) -> String {
    x.display_gib()
}

/// Bytes a tensor group takes at a given ggml type, rounding each row up to whole blocks.
fn ggml_bytes(t: GgmlType, elements: u64, row: u64) -> u64 {
    if row == 0 || elements < row {
        return t.bytes_for(elements);
    }
    let rows = elements / row;
    rows.saturating_mul(t.bytes_for(row))
        .saturating_add(t.bytes_for(elements % row))
}

/// Bytes of one tensor group in layer `i` of `n` at precision `p` (total, active).
fn group_bytes(
    p: WeightPrecision,
    class: TensorClass,
    elements: u64,
    active: u64,
    row: u64,
    i: u64,
    n: u64,
) -> (u64, u64) {
    if p.is_gguf()
        || matches!(
            p,
            WeightPrecision::Fp32 | WeightPrecision::Fp16 | WeightPrecision::Bf16
        )
    {
        let t = p.ggml_type_for(class, i, n);
        // HF checkpoints keep norms in the model dtype; GGUF keeps them at F32.
        let t = if class == TensorClass::Small && !p.is_gguf() {
            match p {
                WeightPrecision::Fp32 => GgmlType::F32,
                _ => GgmlType::F16,
            }
        } else {
            t
        };
        return (ggml_bytes(t, elements, row), ggml_bytes(t, active, row));
    }
    let sixteen = matches!(
        class,
        TensorClass::TokenEmbedding | TensorClass::Output | TensorClass::Small
    );
    let bpw = if sixteen && p.keeps_embeddings_16bit() {
        16.0
    } else {
        p.bits_per_weight()
    };
    let f = |e: u64| Bytes::from_f64(e as f64 * bpw / 8.0).0;
    (f(elements), f(active))
}

struct WeightsOut {
    total: Bytes,
    layers: Bytes,
    outer: Bytes,
    active_read: Bytes,
    largest_layer: Bytes,
    provenance: Provenance,
    formula: String,
}

fn weights(spec: &ModelSpec, p: WeightPrecision, explain: bool) -> WeightsOut {
    let n = spec.layers;
    // Per-layer sums. Layers differ only by MoE/dense kind and by the k-quant mixes' layer index.
    let mixes = matches!(
        p,
        WeightPrecision::Q4KM | WeightPrecision::Q5KM | WeightPrecision::Q3KM
    );
    let mut layer_total = 0u64;
    let mut layer_active = 0u64;
    let mut largest = 0u64;
    let mut sum_layer = |i: u64, mult: u64| {
        let (mut t, mut a) = (0u64, 0u64);
        for g in spec.layer_tensors(i) {
            let (gt, ga) = group_bytes(p, g.class, g.elements, g.active_elements, g.row, i, n);
            t = t.saturating_add(gt);
            a = a.saturating_add(ga);
        }
        largest = largest.max(t);
        layer_total = layer_total.saturating_add(t.saturating_mul(mult));
        layer_active = layer_active.saturating_add(a.saturating_mul(mult));
    };
    if mixes && n <= 4096 {
        for i in 0..n {
            sum_layer(i, 1);
        }
    } else {
        for g in spec.layer_groups() {
            sum_layer(g.first, g.count);
        }
    }
    let mut outer = 0u64;
    let mut outer_read = 0u64;
    for g in spec.outer_tensors() {
        let (t, _) = group_bytes(p, g.class, g.elements, g.active_elements, g.row, 0, n);
        outer = outer.saturating_add(t);
        if g.class != TensorClass::TokenEmbedding {
            outer_read = outer_read.saturating_add(t);
        }
    }
    if spec.tied_embeddings {
        // A tied head is read in full for every token (it is the output matrix).
        let emb = spec.outer_tensors()[0];
        outer_read = outer_read
            .saturating_add(group_bytes(p, emb.class, emb.elements, emb.elements, emb.row, 0, n).0);
    }
    let arch_total = layer_total.saturating_add(outer);
    let arch_params = spec.arch_param_count().total.max(1);

    // A file's exact bytes, or a user-given parameter count, override the architecture sum.
    if let Some(fw) = &spec.file_weights
        && fw.total_bytes > 0
    {
        let total = fw.total_bytes;
        let layers = if fw.layer_bytes > 0 {
            fw.layer_bytes.min(total)
        } else {
            scale_u(total, layer_total, arch_total)
        };
        let ratio = total as f64 / arch_total.max(1) as f64;
        return WeightsOut {
            total: Bytes(total),
            layers: Bytes(layers),
            outer: Bytes(total - layers),
            active_read: Bytes::from_f64((layer_active.saturating_add(outer_read)) as f64 * ratio),
            largest_layer: Bytes::from_f64(largest as f64 * ratio),
            provenance: Provenance::Exact,
            formula: ex!(
                explain,
                "sum of the tensor sizes in {} ({}) = {} bytes",
                fw.path,
                fw.format,
                group_digits(total)
            ),
        };
    }
    if let Some(np) = spec.nominal_params {
        let bits = p.bits_per_weight();
        let total = Bytes::from_f64(np as f64 * bits / 8.0);
        let ratio = total.as_f64() / arch_total.max(1) as f64;
        return WeightsOut {
            total,
            layers: Bytes::from_f64(layer_total as f64 * ratio),
            outer: Bytes::from_f64(outer as f64 * ratio),
            active_read: Bytes::from_f64((layer_active.saturating_add(outer_read)) as f64 * ratio),
            largest_layer: Bytes::from_f64(largest as f64 * ratio),
            provenance: Provenance::Derived,
            formula: ex!(
                explain,
                "{} params × {bits:.3} bits / 8 = {} ({})",
                group_digits(np),
                b(total),
                p.label()
            ),
        };
    }
    let eff_bits = arch_total as f64 * 8.0 / arch_params as f64;
    WeightsOut {
        total: Bytes(arch_total),
        layers: Bytes(layer_total),
        outer: Bytes(outer),
        active_read: Bytes(layer_active.saturating_add(outer_read)),
        largest_layer: Bytes(largest),
        provenance: Provenance::Derived,
        formula: ex!(
            explain,
            "Σ tensors: {} params at {} ({eff_bits:.3} bits/weight on average; {}) = {}",
            group_digits(arch_params),
            p.label(),
            p.mix_note(),
            b(Bytes(arch_total))
        ),
    }
}

fn scale_u(x: u64, num: u64, den: u64) -> u64 {
    if den == 0 {
        0
    } else {
        ((x as u128 * num as u128) / den as u128).min(u64::MAX as u128) as u64
    }
}

/// Optimiser bytes per trainable parameter (states only; the FP32 master copy is separate).
fn optimizer_bytes_per_param(
    o: Optimizer,
    pure_bf16: bool,
    spec: &ModelSpec,
) -> (f64, &'static str) {
    match o {
        // Adam m and v in FP32 (ZeRO paper's K = 12 counts these 8 plus the 4-byte master copy).
        Optimizer::AdamW if pure_bf16 => (4.0, "AdamW m + v in BF16: 2 + 2 B/param"),
        Optimizer::AdamW => (8.0, "AdamW m + v in FP32: 4 + 4 B/param"),
        // bitsandbytes 8-bit Adam: m and v as 8-bit blockwise-quantised (Dettmers et al. 2022).
        Optimizer::AdamW8bit => (2.0, "8-bit AdamW (bitsandbytes) m + v: 1 + 1 B/param"),
        Optimizer::Sgd if pure_bf16 => (2.0, "SGD momentum buffer in BF16: 2 B/param"),
        Optimizer::Sgd => (4.0, "SGD momentum buffer in FP32: 4 B/param"),
        // Adafactor (Shazeer & Stern 2018) factors the second moment of an n×m matrix into n + m
        // FP32 values and keeps no first moment by default: ≈ 4·(n+m)/(n·m) ≈ 8/h B/param.
        Optimizer::Adafactor => {
            let h = spec.hidden.max(1) as f64;
            (
                8.0 / h,
                "Adafactor factored second moment: ≈ 4·(rows + cols) B per matrix ≈ 8/h B/param",
            )
        }
    }
}

/// LoRA trainable parameters per layer: r·(d_in + d_out) for each adapted matrix.
fn lora_params(spec: &ModelSpec, r: u64, t: LoraTargets) -> u64 {
    let h = spec.hidden;
    let qd = spec.heads.saturating_mul(spec.head_dim);
    let kvd = spec.kv_heads.saturating_mul(spec.head_dim);
    let attn_q = h + qd;
    let attn_v = h + kvd;
    let attn_k = h + kvd;
    let attn_o = qd + h;
    let mut per_layer_dims: u64 = match t {
        LoraTargets::QV => attn_q + attn_v,
        LoraTargets::Attention | LoraTargets::AllLinear => attn_q + attn_k + attn_v + attn_o,
    };
    if t == LoraTargets::AllLinear {
        let mats = match spec.mlp {
            super::model::MlpKind::Gated => 3,
            super::model::MlpKind::Plain => 2,
        };
        let mlp_dims = |w: u64| (h + w).saturating_mul(mats);
        let dims = match &spec.moe {
            Some(m) => mlp_dims(m.expert_ffn)
                .saturating_mul(m.experts)
                .saturating_add(
                    mlp_dims(if m.shared_ffn > 0 {
                        m.shared_ffn
                    } else {
                        m.expert_ffn
                    })
                    .saturating_mul(m.shared_experts),
                ),
            None => mlp_dims(spec.intermediate),
        };
        per_layer_dims = per_layer_dims.saturating_add(dims);
    }
    per_layer_dims.saturating_mul(r).saturating_mul(spec.layers)
}

struct Builder {
    comps: Vec<Component>,
    n: u64,
    cpu_only: bool,
}

impl Builder {
    /// A component replicated or split across GPUs: `per_device` on each of `n` GPUs.
    fn gpu(
        &mut self,
        kind: ComponentKind,
        name: &str,
        per_device: Bytes,
        prov: Provenance,
        formula: String,
    ) {
        if self.cpu_only {
            return self.host(kind, name, per_device, prov, formula);
        }
        self.comps.push(Component {
            kind,
            name: name.into(),
            bytes: per_device.saturating_mul(self.n),
            per_device,
            placement: Placement::Gpu,
            provenance: prov,
            formula,
        });
    }
    fn host(
        &mut self,
        kind: ComponentKind,
        name: &str,
        bytes: Bytes,
        prov: Provenance,
        formula: String,
    ) {
        self.comps.push(Component {
            kind,
            name: name.into(),
            bytes,
            per_device: bytes,
            placement: Placement::Host,
            provenance: prov,
            formula,
        });
    }
}

/// Estimate the memory of a scenario. Inputs are clamped to the supported domain first; the
/// arithmetic saturates, so no input panics, wraps or yields NaN.
pub fn estimate(scenario: &Scenario) -> Estimate {
    estimate_with(scenario, true)
}

/// [`estimate`], with the formula texts and notes only when `explain` is true (the numbers are
/// identical either way).
pub fn estimate_with(scenario: &Scenario, explain: bool) -> Estimate {
    let s = scenario.clamped();
    let spec = &s.model;
    let mut notes = Vec::new();
    if s.context != scenario.context || s.batch != scenario.batch || s.gpus != scenario.gpus {
        notes.push("Some inputs were outside the supported range and were clamped.".into());
    }
    if spec.is_estimated() {
        notes.push(ex!(explain,
            "Shape estimated from the parameter count ({} layers, hidden {}, {} KV heads × {}): KV cache and activations are approximate.",
            spec.layers, spec.hidden, spec.kv_heads, spec.head_dim
        ));
    }
    if spec.max_context > 0 && s.context > spec.max_context {
        notes.push(ex!(
            explain,
            "Context {} exceeds the model's trained maximum of {} tokens.",
            group_digits(s.context),
            group_digits(spec.max_context)
        ));
    }
    let params = spec.param_count();
    let cpu_only = s.gpus == 0;
    let n = s.devices();
    let mut bld = Builder {
        comps: Vec::with_capacity(12),
        n,
        cpu_only,
    };

    // ---- Weights (precision per mode) ----
    let train = s.mode.is_training();
    let wprec = match s.mode {
        Mode::Qlora => {
            if matches!(
                s.weights,
                WeightPrecision::Nf4 | WeightPrecision::Nf4DoubleQuant
            ) {
                s.weights
            } else {
                notes.push("QLoRA stores the frozen base in NF4 with double quantisation.".into());
                WeightPrecision::Nf4DoubleQuant
            }
        }
        Mode::Full => {
            if matches!(
                s.weights,
                WeightPrecision::Fp32 | WeightPrecision::Fp16 | WeightPrecision::Bf16
            ) {
                s.weights
            } else {
                notes.push(ex!(
                    explain,
                    "A full fine-tune trains 16-bit weights: {} is not trainable, BF16 is assumed.",
                    s.weights.label()
                ));
                WeightPrecision::Bf16
            }
        }
        _ => s.weights,
    };
    let w = weights(spec, wprec, explain);
    let fp32_train = s.mode == Mode::Full && wprec == WeightPrecision::Fp32;

    // How ZeRO/TP/offload split each state. Inference: tensor parallel splits weights evenly.
    let stage = if train { s.zero } else { 0 };
    let offload_opt = train && s.offload != Offload::None && !cpu_only;
    let offload_params = train && s.offload == Offload::OptimizerParams && !cpu_only;
    if train && s.offload == Offload::OptimizerParams && stage < 3 {
        notes.push(
            "DeepSpeed offloads parameters only with ZeRO stage 3 (offload_param); set --zero 3."
                .into(),
        );
    }
    let shard_weights = !train || stage >= 3;
    let weights_per_gpu = if shard_weights {
        w.total.div_ceil(n)
    } else {
        w.total
    };
    let split_note = if cpu_only {
        String::new()
    } else if !train && n > 1 {
        ex!(
            explain,
            "; ÷ {n} GPUs (tensor parallel) = {} each",
            b(weights_per_gpu)
        )
    } else if train && shard_weights && n > 1 {
        ex!(explain, "; ZeRO-3 ÷ {n} = {} each", b(weights_per_gpu))
    } else {
        String::new()
    };
    let wname = if train && s.mode != Mode::Full {
        "Weights (frozen base)"
    } else {
        "Weights"
    };
    if offload_params && stage >= 3 {
        bld.host(
            ComponentKind::Weights,
            wname,
            w.total,
            w.provenance,
            ex!(
                explain,
                "{} (offloaded to CPU RAM, ZeRO-3 offload_param)",
                w.formula
            ),
        );
        // The GPU keeps a working set of fetched layers (DeepSpeed stage3_prefetch_bucket_size;
        // its estimator uses 4 × the largest layer's parameters).
        let ws = w.largest_layer.saturating_mul(2);
        bld.gpu(
            ComponentKind::Weights,
            "Weights (prefetched layers)",
            ws,
            Provenance::Heuristic,
            ex!(
                explain,
                "2 × largest layer {} (ZeRO-3 parameter prefetch)",
                b(w.largest_layer)
            ),
        );
    } else if w.total.0 > 0 {
        bld.gpu(
            ComponentKind::Weights,
            wname,
            weights_per_gpu,
            w.provenance,
            ex!(explain, "{}{split_note}", w.formula),
        );
    }
    if s.runtime == Runtime::LlamaCpp
        && let Some(fw) = &spec.file_weights
        && fw.runtime_extra_bytes > 0
    {
        // llama.cpp keeps the input token_embd in host RAM and, when the output is tied to it,
        // loads a second copy as the output matrix on the GPU (llama-model.cpp: `output` is
        // created from `token_embd` with TENSOR_DUPLICATED). The GPU thus holds the file's bytes
        // (less the input table, plus the copy) and host RAM the input table.
        bld.host(
            ComponentKind::Weights,
            "Token embedding (kept in host RAM by llama.cpp)",
            Bytes(fw.runtime_extra_bytes),
            Provenance::Exact,
            ex!(
                explain,
                "tied token_embd {} bytes stays on the CPU; its copy serves as the output matrix on the GPU",
                group_digits(fw.runtime_extra_bytes)
            ),
        );
    }

    // ---- KV cache (inference) ----
    let (kel, vel) = spec.kv_elements_per_token_layer();
    let kv_layer_token = Bytes(s.kv.k.bytes_for(kel).saturating_add(s.kv.v.bytes_for(vel)));
    let kv_per_token = kv_layer_token.saturating_mul(spec.layers);
    let mut kv_total = Bytes::ZERO;
    let mut kv_read = Bytes::ZERO;
    if !train {
        let ctx = s.context;
        // llama.cpp pads n_ctx to a multiple of 256 (llama-context.cpp, `n_ctx_pad`).
        let (alloc_ctx, pad_note) = match (s.runtime, s.kv_allocation) {
            (Runtime::LlamaCpp, _) => (
                ctx.div_ceil(256).saturating_mul(256),
                "n_ctx padded to 256 by llama.cpp",
            ),
            (_, KvAllocation::Paged) => (
                ctx.div_ceil(16).saturating_mul(16),
                "PagedAttention 16-token blocks",
            ),
            _ => (ctx, "contiguous, reserved for the full length"),
        };
        // llama.cpp implements sliding-window caches only for some architectures (Gemma 2/3,
        // gpt-oss, Cohere 2 …); a Mistral-v0.1 GGUF gets the full n_ctx on every layer.
        let swa_runtime = s.runtime != Runtime::LlamaCpp
            || !matches!(
                spec.arch.as_str(),
                "llama" | "mistral" | "qwen2" | "generic"
            );
        let (local, window) = if swa_runtime {
            spec.local_layers()
        } else {
            (0, 0)
        };
        let global = spec.layers - local;
        let local_tokens = if local > 0 {
            let t = window.min(alloc_ctx);
            if s.kv_allocation == KvAllocation::Paged {
                t.div_ceil(16).saturating_mul(16)
            } else {
                t
            }
        } else {
            0
        };
        let per_seq = kv_layer_token
            .saturating_mul(global)
            .saturating_mul(alloc_ctx)
            .saturating_add(
                kv_layer_token
                    .saturating_mul(local)
                    .saturating_mul(local_tokens),
            );
        kv_total = per_seq.saturating_mul(s.batch);
        kv_read = kv_layer_token
            .saturating_mul(global)
            .saturating_mul(ctx)
            .saturating_add(
                kv_layer_token
                    .saturating_mul(local)
                    .saturating_mul(window.min(ctx)),
            );
        // Tensor parallel splits KV heads; with fewer KV heads than GPUs they are replicated, and
        // MLA's latent is replicated on every GPU.
        let kv_gpu = if cpu_only || n == 1 || spec.mla.is_some() {
            kv_total
        } else {
            let per = spec.kv_heads.div_ceil(n).max(1);
            Bytes(scale_u(kv_total.0, per, spec.kv_heads.max(1)))
        };
        let kvname = |p: KvPrecision| p.cli_name();
        let kv_types = if s.kv.k == s.kv.v {
            kvname(s.kv.k).to_string()
        } else {
            ex!(explain, "K {} / V {}", kvname(s.kv.k), kvname(s.kv.v))
        };
        let per_layer_formula = if spec.mla.is_some() {
            ex!(explain, "(kv_lora_rank + rope) {kel} elements")
        } else {
            ex!(
                explain,
                "2 × {} KV heads × {} head_dim",
                spec.kv_heads,
                spec.head_dim
            )
        };
        let window_part = if local > 0 {
            ex!(
                explain,
                " ({local} sliding-window layers hold {} tokens)",
                group_digits(local_tokens)
            )
        } else {
            String::new()
        };
        let formula = ex!(
            explain,
            "{per_layer_formula} at {kv_types} = {} B/token/layer × {} layers × {} tokens ({pad_note}) × {} sequences{window_part} = {}",
            group_digits(kv_layer_token.0),
            spec.layers,
            group_digits(alloc_ctx),
            s.batch,
            b(kv_total)
        );
        let prov = if spec.is_estimated() {
            Provenance::Heuristic
        } else {
            Provenance::Derived
        };
        bld.gpu(ComponentKind::KvCache, "KV cache", kv_gpu, prov, formula);
        if s.kv_allocation == KvAllocation::Paged
            && alloc_ctx > ctx
            && s.runtime != Runtime::LlamaCpp
        {
            let waste = kv_layer_token
                .saturating_mul(global)
                .saturating_mul(alloc_ctx - ctx)
                .saturating_mul(s.batch);
            notes.push(ex!(explain,
                "PagedAttention rounds each sequence up to 16-token blocks: {} of the KV cache is block waste (< 1 block per sequence).",
                b(waste)
            ));
        } else if s.kv_allocation == KvAllocation::Contiguous {
            notes.push("Contiguous KV reserves the full length for every sequence; the vLLM paper found only 20–38 % of such reservations holding tokens. PagedAttention allocates 16-token blocks on demand.".into());
        }
    }

    // ---- Activations / workspace ----
    let h = spec.hidden;
    let heads_dev = spec.heads.div_ceil(if cpu_only { 1 } else { n }).max(1);
    let ffn_w = match &spec.moe {
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
    let mats: u64 = match spec.mlp {
        super::model::MlpKind::Gated => 2,
        super::model::MlpKind::Plain => 1,
    };
    if !train {
        let q = s.ubatch.min(s.context.saturating_mul(s.batch)).max(1);
        let kv_len = s.context;
        let vocab = spec.vocab;
        match s.runtime {
            Runtime::LlamaCpp => {
                // Compute buffer = the largest of the attention, FFN and logits peaks of the
                // reserved graph (ggml-alloc reuses memory between them), plus the f32 residual
                // stream, input and norm tensors of one ubatch.
                let ctx_pad = kv_len.div_ceil(256).saturating_mul(256);
                let attn = if s.flash_attention {
                    Bytes(q.saturating_mul(h).saturating_mul(4).saturating_mul(3))
                } else {
                    Bytes(
                        heads_dev
                            .saturating_mul(ctx_pad)
                            .saturating_mul(q)
                            .saturating_mul(4),
                    )
                };
                let ffn = Bytes(
                    q.saturating_mul(ffn_w.div_ceil(n))
                        .saturating_mul(4)
                        .saturating_mul(mats),
                );
                let logits = Bytes(q.saturating_mul(vocab).saturating_mul(4));
                // Four f32 tensors of the residual stream (input embeddings, norm, attention and
                // FFN outputs) and the f32 KQ mask of n_ctx × n_ubatch.
                let base = Bytes(q.saturating_mul(h).saturating_mul(4).saturating_mul(4));
                let mask = Bytes(ctx_pad.saturating_mul(q).saturating_mul(4));
                let peak = attn.max(ffn).max(logits);
                let which = if peak == logits {
                    ex!(explain, "logits {q} × {} vocab × 4 B", group_digits(vocab))
                } else if peak == attn && !s.flash_attention {
                    ex!(
                        explain,
                        "KQ {heads_dev} heads × {} n_ctx × {q} ubatch × 4 B (FlashAttention off)",
                        group_digits(ctx_pad)
                    )
                } else if peak == attn {
                    ex!(explain, "attention {q} × {h} × 4 B × 3")
                } else {
                    ex!(explain, "FFN {q} × {ffn_w} × 4 B × {mats}")
                };
                bld.gpu(
                    ComponentKind::Activations,
                    "Compute buffer (llama.cpp)",
                    peak + base + mask,
                    Provenance::Derived,
                    ex!(explain,
                        "max(attention, FFN, logits) = {which} = {} + KQ mask {} × {q} × 4 B + residual {q} × {h} × 4 B × 4 = {}",
                        b(peak),
                        group_digits(ctx_pad),
                        b(peak + base + mask)
                    ),
                );
                // The host compute buffer holds the CPU side of the graph split: the token
                // embeddings of one ubatch and the mask.
                let host_cb = Bytes(q.saturating_mul(h).saturating_mul(4)) + mask;
                bld.host(
                    ComponentKind::Activations,
                    "Host compute buffer (llama.cpp)",
                    host_cb,
                    Provenance::Derived,
                    ex!(
                        explain,
                        "embeddings {q} × {h} × 4 B + KQ mask {} × {q} × 4 B = {}",
                        group_digits(ctx_pad),
                        b(host_cb)
                    ),
                );
                let out = Bytes(s.batch.saturating_mul(vocab).saturating_mul(4));
                bld.host(
                    ComponentKind::Activations,
                    "Output buffer (llama.cpp, host)",
                    out,
                    Provenance::Derived,
                    ex!(
                        explain,
                        "{} sequences × {} vocab × 4 B f32 logits = {}",
                        s.batch,
                        group_digits(vocab),
                        b(out)
                    ),
                );
            }
            _ => {
                let eager = s.runtime == Runtime::Transformers && !s.flash_attention;
                let fa = s.flash_attention || s.runtime == Runtime::Vllm;
                let hid = Bytes(q.saturating_mul(h).saturating_mul(2).saturating_mul(4));
                let qkv = Bytes(
                    q.saturating_mul(
                        heads_dev.saturating_add(2 * spec.kv_heads.div_ceil(n).max(1)),
                    )
                    .saturating_mul(spec.head_dim)
                    .saturating_mul(2),
                );
                let score_b = if eager { 6 } else { 2 }; // eager: scores in BF16 + softmax upcast to FP32
                let scores = if fa {
                    Bytes::ZERO
                } else {
                    Bytes(
                        heads_dev
                            .saturating_mul(q)
                            .saturating_mul(kv_len)
                            .saturating_mul(score_b),
                    )
                };
                let ffn = Bytes(
                    q.saturating_mul(ffn_w.div_ceil(n))
                        .saturating_mul(2)
                        .saturating_mul(mats + 1),
                );
                let act = hid + qkv + scores.max(ffn);
                let attn_txt = if fa {
                    "FlashAttention: no score matrix (O(N))".to_string()
                } else {
                    ex!(
                        explain,
                        "scores {heads_dev} heads × {q} × {} × {score_b} B = {} (O(N²))",
                        group_digits(kv_len),
                        b(scores)
                    )
                };
                bld.gpu(
                    ComponentKind::Activations,
                    "Prefill activations (one layer in flight)",
                    act,
                    Provenance::Derived,
                    ex!(explain,
                        "chunk of {q} tokens: hidden {q} × {h} × 2 B × 4 + q/k/v {} + max({attn_txt}, MLP {q} × {ffn_w} × 2 B × {}) = {}",
                        b(qkv),
                        mats + 1,
                        b(act)
                    ),
                );
                // Logits: generate() keeps the last position; a transformers forward keeps every
                // prompt position (transformers 5: in the model dtype).
                let (logits, txt) = if s.runtime == Runtime::Transformers {
                    let l = Bytes(
                        s.batch
                            .saturating_mul(s.context)
                            .saturating_mul(vocab)
                            .saturating_mul(2),
                    );
                    (
                        l,
                        ex!(
                            explain,
                            "{} sequences × {} positions × {} vocab × 2 B (a forward keeps logits for every prompt position) = {}",
                            s.batch,
                            group_digits(s.context),
                            group_digits(vocab),
                            b(l)
                        ),
                    )
                } else {
                    let l = Bytes(s.batch.saturating_mul(vocab).saturating_mul(4));
                    (
                        l,
                        ex!(
                            explain,
                            "{} sequences × {} vocab × 4 B (last position only, f32) = {}",
                            s.batch,
                            group_digits(vocab),
                            b(l)
                        ),
                    )
                };
                bld.gpu(
                    ComponentKind::Activations,
                    "Logits",
                    logits,
                    Provenance::Derived,
                    txt,
                );
            }
        }
    } else {
        // Korthikanti et al. 2022, Table 2, per layer at 16-bit: attention 11·sbh + 5·a·s²·b,
        // MLP 19·sbh (4h GELU), norms 4·sbh. The MLP term is generalised to width I and gated
        // MLPs: (3 + 2·k·I/h)·sbh with k = 2 tensors of width I (plain) or 4 (gated).
        let sq = s.context;
        let bt = s.batch;
        let sbh = sq.saturating_mul(bt).saturating_mul(h) as f64;
        let k_w = if mats == 2 { 4.0 } else { 2.0 };
        let mlp_coef = 3.0 + 2.0 * k_w * ffn_w as f64 / h.max(1) as f64;
        let lin = 11.0 + mlp_coef + 4.0;
        let attn_quadratic = 5.0 * spec.heads as f64 * (sq as f64) * (sq as f64) * bt as f64;
        let drop_scores = s.flash_attention || s.checkpointing != Checkpointing::None;
        let per_layer = sbh * lin + if drop_scores { 0.0 } else { attn_quadratic };
        let l = spec.layers as f64;
        let (act, txt) = match s.checkpointing {
            Checkpointing::Full => {
                let v = 2.0 * sbh * l + per_layer;
                (
                    v,
                    ex!(
                        explain,
                        "full recompute: 2·s·b·h × {l} layers + one layer's working set {} = {}",
                        b(Bytes::from_f64(per_layer)),
                        b(Bytes::from_f64(v))
                    ),
                )
            }
            _ => {
                let v = per_layer * l;
                let q = if drop_scores {
                    String::new()
                } else {
                    ex!(explain, " + 5·a·s²·b ({} heads)", spec.heads)
                };
                let why = if s.checkpointing == Checkpointing::Selective {
                    " (selective recompute drops the 5as/h term)"
                } else if s.flash_attention {
                    " (FlashAttention drops the 5as/h term)"
                } else {
                    ""
                };
                (
                    v,
                    ex!(
                        explain,
                        "s·b·h·{lin:.1}{q} per layer{why}, s={sq}, b={bt}, h={h} × {l} layers = {}",
                        b(Bytes::from_f64(v))
                    ),
                )
            }
        };
        bld.gpu(
            ComponentKind::Activations,
            "Activations (Korthikanti et al.)",
            Bytes::from_f64(act),
            if spec.is_estimated() {
                Provenance::Heuristic
            } else {
                Provenance::Derived
            },
            txt,
        );
        // Loss: logits in 16-bit, an FP32 upcast and its log-softmax/gradient: 10 B per element.
        let lg = Bytes(
            sq.saturating_mul(bt)
                .saturating_mul(spec.vocab)
                .saturating_mul(10),
        );
        bld.gpu(
            ComponentKind::Activations,
            "Logits and loss",
            lg,
            Provenance::Derived,
            ex!(
                explain,
                "{sq} × {bt} × {} vocab × (2 B logits + 4 B FP32 copy + 4 B log-softmax) = {}",
                group_digits(spec.vocab),
                b(lg)
            ),
        );
    }

    // ---- Training states: gradients, optimiser, master weights (ZeRO) ----
    if train {
        let (trainable, wb, gb, master_b) = match s.mode {
            Mode::Full if fp32_train => (params.total, 4.0, 4.0, 0.0),
            Mode::Full => (params.total, 2.0, 2.0, if s.pure_bf16 { 0.0 } else { 4.0 }),
            // PEFT keeps LoRA adapters in FP32 (autocast_adapter_dtype); no separate master copy.
            Mode::Lora => (
                lora_params(spec, s.lora_rank, s.lora_targets),
                4.0,
                4.0,
                0.0,
            ),
            // QLoRA: BF16 adapters (Dettmers et al. 2023).
            _ => (
                lora_params(spec, s.lora_rank, s.lora_targets),
                2.0,
                2.0,
                0.0,
            ),
        };
        let (ob, otxt) = optimizer_bytes_per_param(s.optimizer, s.pure_bf16, spec);
        let tp = trainable as f64;
        let nn = n as f64;
        if s.mode != Mode::Full {
            let adapters = Bytes::from_f64(tp * wb);
            let sh = if stage >= 3 {
                adapters.div_ceil(n)
            } else {
                adapters
            };
            bld.gpu(
                ComponentKind::Weights,
                "LoRA adapters",
                sh,
                Provenance::Derived,
                ex!(explain,
                    "rank {} × (d_in + d_out) over {} matrices × {} layers = {} trainable params × {wb} B = {}",
                    s.lora_rank,
                    s.lora_targets.cli_name(),
                    spec.layers,
                    group_digits(trainable),
                    b(adapters)
                ),
            );
        }
        let shard = |on: bool, x: f64| if on { x / nn } else { x };
        let zero_txt = |on: bool| {
            if on && n > 1 {
                ex!(explain, " ÷ {n} GPUs (ZeRO-{stage})")
            } else {
                String::new()
            }
        };
        // Gradients.
        let g_gpu = shard(stage >= 2, tp * gb);
        bld.gpu(
            ComponentKind::Gradients,
            "Gradients",
            Bytes::from_f64(g_gpu),
            Provenance::Derived,
            ex!(
                explain,
                "{} trainable params × {gb} B{}",
                group_digits(trainable),
                zero_txt(stage >= 2)
            ),
        );
        // Optimiser states and master weights.
        let o_total = tp * ob;
        let m_total = tp * master_b;
        if offload_opt {
            bld.host(
                ComponentKind::Optimizer,
                "Optimizer states (CPU offload)",
                Bytes::from_f64(o_total),
                Provenance::Derived,
                ex!(
                    explain,
                    "{otxt} × {} params, in CPU RAM (ZeRO-Offload)",
                    group_digits(trainable)
                ),
            );
            if m_total > 0.0 {
                bld.host(
                    ComponentKind::MasterWeights,
                    "FP32 master weights (CPU offload)",
                    Bytes::from_f64(m_total),
                    Provenance::Derived,
                    ex!(
                        explain,
                        "4 B × {} params, in CPU RAM (ZeRO-Offload)",
                        group_digits(trainable)
                    ),
                );
            }
        } else {
            let qlora_paged = s.mode == Mode::Qlora;
            bld.gpu(
                ComponentKind::Optimizer,
                if qlora_paged {
                    "Optimizer states (paged)"
                } else {
                    "Optimizer states"
                },
                Bytes::from_f64(shard(stage >= 1, o_total)),
                Provenance::Derived,
                ex!(
                    explain,
                    "{otxt} × {} params{}{}",
                    group_digits(trainable),
                    zero_txt(stage >= 1),
                    if qlora_paged {
                        "; paged AdamW spills to CPU RAM under memory pressure"
                    } else {
                        ""
                    }
                ),
            );
            if m_total > 0.0 {
                bld.gpu(
                    ComponentKind::MasterWeights,
                    "FP32 master weights",
                    Bytes::from_f64(shard(stage >= 1, m_total)),
                    Provenance::Derived,
                    ex!(
                        explain,
                        "4 B × {} params{}",
                        group_digits(trainable),
                        zero_txt(stage >= 1)
                    ),
                );
            }
        }
    }

    // ---- Runtime overhead (per device) ----
    let (ov, ovtxt) = match (s.overhead_override, cpu_only, s.runtime) {
        (Some(o), _, _) => (o, "set by you".to_string()),
        (None, true, _) => (Bytes::mib(256), "runtime process and libraries in RAM ≈ 256 MiB (heuristic)".to_string()),
        (None, false, Runtime::LlamaCpp) => (
            Bytes::mib(250),
            "CUDA context and ggml backend ≈ 250 MiB (gguf-parser's --platform-footprint default; heuristic)".to_string(),
        ),
        (None, false, Runtime::Vllm) => (
            Bytes::mib(1024),
            "CUDA context, NCCL and PyTorch ≈ 512 MiB + CUDA graphs ≈ 512 MiB (vLLM logs \"Graph capturing finished … took ~0.5 GiB\"; heuristic)".to_string(),
        ),
        (None, false, Runtime::Transformers) => (
            Bytes::mib(768),
            "CUDA context + cuBLAS workspace ≈ 512 MiB + PyTorch caching-allocator slack ≈ 256 MiB (heuristic)".to_string(),
        ),
        (None, false, Runtime::Generic) => (Bytes::mib(512), "CUDA context and runtime ≈ 512 MiB (the 0.3–0.5 GiB CUDA context plus cuBLAS workspace; heuristic)".to_string()),
    };
    bld.gpu(
        ComponentKind::Overhead,
        "Runtime overhead",
        ov,
        Provenance::Heuristic,
        ex!(explain, "{ovtxt}, per GPU"),
    );
    if s.runtime == Runtime::Vllm && !cpu_only {
        notes.push(ex!(explain,
            "vLLM takes {:.0} % of each GPU's memory (--gpu-memory-utilization) and fills what is left after weights, activations and CUDA graphs with KV blocks.",
            s.gpu_memory_utilization * 100.0
        ));
    }

    // ---- Workload numbers for speed and fit ----
    let fixed_per_device: Bytes = bld
        .comps
        .iter()
        .filter(|c| {
            c.placement == Placement::Gpu
                && matches!(c.kind, ComponentKind::Activations | ComponentKind::Overhead)
        })
        .map(|c| c.per_device)
        .sum();
    // Forward FLOPs per token: 2 per active weight, plus attention 2·2·L·n_h·d·ctx (QKᵀ and AV).
    let attn_flops =
        4.0 * spec.layers as f64 * (spec.heads * spec.head_dim) as f64 * s.context as f64 / 2.0;
    let workload = Workload {
        layer_weights: w.layers,
        outer_weights: w.outer,
        active_weight_bytes_per_token: w.active_read,
        kv_total,
        kv_read_per_token: kv_read,
        flops_per_token: 2.0 * spec.per_token_params().active as f64 + attn_flops,
        fixed_per_device,
        layers: spec.layers,
    };

    if !explain {
        notes.clear();
    }
    Estimate {
        params,
        components: bld.comps,
        kv_cache_per_token: kv_per_token,
        gpus: s.gpus,
        workload,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::precision::KvTypes;
    use crate::core::units::MIB;

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
    fn seed_kv_example() {
        // Seed article / domain.md §2: L=32, n_kv=32, d=128, FP16, 8192 tokens, batch 1 → 4 GiB.
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
        // 7e9 × 2 B = 14 GB (domain.md §1; the seed's "4 GB" is wrong).
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
        // domain.md §4: mixed-precision AdamW = 16 B/param → 7B needs 112 GB before activations.
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
