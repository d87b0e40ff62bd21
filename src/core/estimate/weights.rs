//! Weights: every tensor of the model at the chosen precision, summed per layer, and where each
//! runtime keeps them (split by tensor parallelism or ZeRO-3, offloaded, or — for llama.cpp — a
//! tied embedding held in host RAM and again as the output matrix).

use super::component::{ComponentKind, ComponentList, Provenance};
use super::{Job, formula, gib, scale_by_ratio};
use crate::core::format;
use crate::core::format::group_digits;
use crate::core::model::{ModelSpec, TensorGroup};
use crate::core::precision::{GgmlType, TensorClass, WeightPrecision};
use crate::core::scenario::{Mode, Offload, Runtime};
use crate::core::units::Bytes;

/// What the weights contribute beyond their components.
pub(super) struct PlacedWeights {
    /// The precision the weights are held at (training forces a trainable one).
    pub(super) precision: WeightPrecision,
    pub(super) sums: WeightSums,
}

/// Put the weights on the GPUs or in host RAM.
pub(super) fn place(job: &Job, list: &mut ComponentList, notes: &mut Vec<String>) -> PlacedWeights {
    let (s, spec, cpu_only, n) = (job.s, job.spec, job.cpu_only, job.devices);
    let train = s.mode.is_training();
    let wprec = held_precision(job, notes);
    if s.runtime == Runtime::Mlx && !s.mode.is_training() && !crate::core::mlx::loads_weights(wprec)
    {
        notes.push(formula!(
            job.explain,
            "MLX does not load {} weights (mlx-lm converts a 16-bit checkpoint to its own affine layout): the nearest mlx-community precision is {} (--weights {}).",
            wprec.label(),
            crate::core::mlx::nearest_precision(wprec).label(),
            crate::core::mlx::nearest_precision(wprec).cli_name()
        ));
    }
    let mut w = job.weight_sums.clone();
    let ple_host = per_layer_table_in_ram(job, wprec, &w);

    // How ZeRO/TP/offload split each state. Inference: tensor parallel splits weights evenly.
    let stage = job.zero_stage;
    let offload_params = train && s.offload == Offload::OptimizerParams && !cpu_only;
    if train && s.offload == Offload::OptimizerParams && stage < 3 {
        notes.push(
            "DeepSpeed offloads parameters only with ZeRO stage 3 (offload_param); set --zero 3."
                .into(),
        );
    }
    let shard_weights = !train || stage >= 3;
    let gpu_total = w.total.saturating_sub(ple_host);
    let weights_per_gpu = if shard_weights {
        gpu_total.div_ceil(n)
    } else {
        gpu_total
    };
    let wname = if train && s.mode != Mode::Full {
        "Weights (frozen base)"
    } else {
        "Weights"
    };
    if offload_params && stage >= 3 {
        offloaded_weights(job, &w, wname, list);
    } else if train && stage >= 3 && n > 1 && job.framework.deepspeed_convention {
        deepspeed_zero3_weights(job, &w, wname, weights_per_gpu, list);
    } else if w.total.0 > 0 {
        let split_note = split_note(job, shard_weights, weights_per_gpu);
        let ple_note = if ple_host.0 > 0 {
            formula!(
                job.explain,
                "; less the per-layer embedding table in host RAM = {}",
                gib(gpu_total)
            )
        } else {
            String::new()
        };
        list.gpu(
            ComponentKind::Weights,
            wname,
            weights_per_gpu,
            w.provenance,
            formula!(job.explain, "{}{ple_note}{split_note}", w.formula),
        );
    }
    if train && stage >= 3 && n > 1 && job.framework.shards_with_fsdp {
        fsdp_unsharded_units(job, &w, list);
    }
    if s.runtime == Runtime::LlamaCpp
        && let Some(fw) = &spec.file_weights
        && fw.runtime_extra_bytes > 0
    {
        tied_embedding_copy(job, fw.runtime_extra_bytes, list);
    }
    if ple_host.0 > 0 {
        list.host(
            ComponentKind::Weights,
            "Per-layer embedding table (kept in host RAM by llama.cpp)",
            ple_host,
            w.provenance,
            formula!(
                job.explain,
                "Gemma 3n's per_layer_token_embd, {} bytes at {}: an input-layer tensor llama.cpp keeps on the CPU whatever -ngl says; one row per token is copied to the GPU",
                group_digits(ple_host.0),
                wprec.label()
            ),
        );
        notes.push(formula!(
            job.explain,
            "llama.cpp keeps Gemma 3n's per-layer embedding table ({}) in host RAM, not on the GPU; transformers and vLLM keep it on the GPU.",
            gib(ple_host)
        ));
        // The table is held by that component: the layer split and offload tiers place the
        // remaining outer weights only.
        w.outer = w.outer.saturating_sub(ple_host);
    }

    PlacedWeights {
        precision: wprec,
        sums: w,
    }
}

/// Bytes of Gemma 3n's per-layer embedding table that llama.cpp keeps in host RAM (0 for other
/// models, other runtimes, training and CPU-only runs, where everything is in RAM anyway).
///
/// llama.cpp classes `per_layer_token_embd` as an input-layer tensor (src/llama-arch.cpp,
/// `LLM_TENSOR_INFOS`: `LLM_TENSOR_PER_LAYER_TOKEN_EMBD` → `LLM_TENSOR_LAYER_INPUT`,
/// `GGML_OP_GET_ROWS`), and `llama_model::load_tensors` (src/llama-model.cpp) gives the input
/// layer the CPU's buffer types whatever `-ngl` says ("there is very little benefit to
/// offloading the input layer, so always keep it on the CPU"). transformers' `Gemma3nTextModel`
/// holds `embed_tokens_per_layer` as a module parameter, moved to the GPU with the rest.
fn per_layer_table_in_ram(job: &Job, p: WeightPrecision, w: &WeightSums) -> Bytes {
    let s = job.s;
    if s.runtime != Runtime::LlamaCpp || s.mode.is_training() || job.cpu_only {
        return Bytes::ZERO;
    }
    let Some(g) = job.spec.per_layer_embedding_table() else {
        return Bytes::ZERO;
    };
    let spec = job.spec;
    let (bytes, _) = group_bytes(p, &g, (0, spec.layers), spec.moe.is_some(), gqa_of(spec));
    Bytes(bytes).min(w.outer)
}

/// The precision the weights are held at: the scenario's, or for training the one the mode
/// trains (with a note when that differs).
fn held_precision(job: &Job, notes: &mut Vec<String>) -> WeightPrecision {
    let s = job.s;
    let held = s.held_weights();
    if held != s.weights {
        match s.mode {
            Mode::Qlora => {
                notes.push("QLoRA stores the frozen base in NF4 with double quantisation.".into())
            }
            _ => notes.push(formula!(
                job.explain,
                "A full fine-tune trains 16-bit weights: {} is not trainable, BF16 is assumed.",
                s.weights.label()
            )),
        }
    }
    held
}

/// How the weights on one GPU are split, for the formula (`shard_weights`: tensor parallel or
/// ZeRO-3/FSDP divides them, `weights_per_gpu` each).
fn split_note(job: &Job, shard_weights: bool, weights_per_gpu: Bytes) -> String {
    let (cpu_only, n) = (job.cpu_only, job.devices);
    let train = job.s.mode.is_training();
    if cpu_only {
        String::new()
    } else if !train && n > 1 {
        formula!(
            job.explain,
            "; ÷ {n} GPUs (tensor parallel) = {} each",
            gib(weights_per_gpu)
        )
    } else if train && shard_weights && n > 1 {
        formula!(
            job.explain,
            "; {} ÷ {n} = {} each",
            if job.framework.shards_with_fsdp {
                "FSDP FULL_SHARD"
            } else {
                "ZeRO-3"
            },
            gib(weights_per_gpu)
        )
    } else {
        String::new()
    }
}

/// ZeRO-3 `offload_param`: the weights in CPU RAM, a working set of fetched layers on the GPU.
fn offloaded_weights(job: &Job, w: &WeightSums, wname: &str, list: &mut ComponentList) {
    list.host(
        ComponentKind::Weights,
        wname,
        w.total,
        w.provenance,
        formula!(
            job.explain,
            "{} (offloaded to CPU RAM, ZeRO-3 offload_param)",
            w.formula
        ),
    );
    // The GPU keeps a working set of fetched layers (DeepSpeed stage3_prefetch_bucket_size;
    // its estimator uses 4 × the largest layer's parameters).
    let ws = w.largest_layer.saturating_mul(2);
    list.gpu(
        ComponentKind::Weights,
        "Weights (prefetched layers)",
        ws,
        Provenance::Heuristic,
        formula!(
            job.explain,
            "2 × largest layer {} (ZeRO-3 parameter prefetch)",
            gib(w.largest_layer)
        ),
    );
}

/// DeepSpeed ZeRO-3 counted as DeepSpeed's estimator counts it
/// (deepspeed/runtime/zero/stage3.py, `estimate_zero3_model_states_mem_needs`): the GPU holds
/// `4 × largest_layer_params` bytes of gathered parameters and its estimator leaves the sharded
/// 16-bit weights out. A LoRA base is frozen but still sharded, so it keeps its shard too.
fn deepspeed_zero3_weights(
    job: &Job,
    w: &WeightSums,
    name: &str,
    shard: Bytes,
    list: &mut ComponentList,
) {
    let n = job.devices;
    if job.s.mode != Mode::Full && shard.0 > 0 {
        list.gpu(
            ComponentKind::Weights,
            name,
            shard,
            w.provenance,
            formula!(
                job.explain,
                "{}; ZeRO-3 ÷ {n} = {} each",
                w.formula,
                gib(shard)
            ),
        );
    }
    let gathered = w.largest_layer.saturating_mul(2);
    list.gpu(
        ComponentKind::Weights,
        "Weights (gathered layer, DeepSpeed estimator)",
        gathered,
        Provenance::Derived,
        formula!(
            job.explain,
            "4 B × the largest layer's parameters = 2 × {} (estimate_zero3_model_states_mem_needs; it does not count the sharded 16-bit weights)",
            gib(w.largest_layer)
        ),
    );
}

/// FSDP FULL_SHARD keeps unsharded units in flight: with `BackwardPrefetch.BACKWARD_PRE` the
/// current and next unit's parameters and the current unit's gradients
/// (torch/distributed/fsdp/api.py, `BackwardPrefetch`). One unit is one decoder layer (the
/// transformer auto-wrap policy accelerate and torchtune use).
fn fsdp_unsharded_units(job: &Job, w: &WeightSums, list: &mut ComponentList) {
    use super::framework::{FSDP_UNSHARDED_GRAD_UNITS, FSDP_UNSHARDED_PARAM_UNITS};
    let params = w.largest_layer.saturating_mul(FSDP_UNSHARDED_PARAM_UNITS);
    list.gpu(
        ComponentKind::Weights,
        "Weights (unsharded FSDP units)",
        params,
        Provenance::Derived,
        formula!(
            job.explain,
            "{FSDP_UNSHARDED_PARAM_UNITS} layers × {} gathered (current + prefetched, BACKWARD_PRE)",
            gib(w.largest_layer)
        ),
    );
    if job.s.mode == Mode::Full {
        let grads = w.largest_layer.saturating_mul(FSDP_UNSHARDED_GRAD_UNITS);
        list.gpu(
            ComponentKind::Gradients,
            "Gradients (unsharded FSDP unit)",
            grads,
            Provenance::Derived,
            formula!(
                job.explain,
                "{FSDP_UNSHARDED_GRAD_UNITS} layer × {} before its reduce-scatter",
                gib(w.largest_layer)
            ),
        );
    }
}

/// A tied model's second copy of the token embedding under llama.cpp.
///
/// llama.cpp creates the output matrix from `token_embd` with `TENSOR_DUPLICATED`
/// (src/llama-model.cpp, `llama_model::load_tensors`), and `llama_model_loader::create_tensor`
/// (src/llama-model-loader.cpp) returns the already-loaded tensor when the output's buffer type
/// is the one `token_embd` got: then the table is held once. The buffer type is chosen per
/// tensor by the op it feeds (`select_weight_buft` in src/llama-model.cpp): the input table feeds
/// GET_ROWS and always stays in the plain CPU buffer, the output feeds MUL_MAT and goes
///   - to the GPU when the model is offloaded, fully or partly (the output is placed as layer
///     `n_layer`, the first one `-ngl` offloads: `i_gpu_start` in `load_tensors`): a second
///     copy (the file's bytes sit on the GPU, the input table in host RAM);
///   - on a CPU-only run, to the CPU_REPACK buffer when the CPU backend repacks its type for
///     matmul (ggml/src/ggml-cpu/repack.cpp, `ggml_repack_get_optimal_repack_type` and
///     `extra_buffer_type::supports_op`): a second, repacked copy; otherwise to the same CPU
///     buffer, so the table is held once and nothing is added.
fn tied_embedding_copy(job: &Job, table_bytes: u64, list: &mut ComponentList) {
    if job.cpu_only {
        let elements = job.spec.vocab.saturating_mul(job.spec.hidden);
        if !cpu_repacks_embedding(table_bytes, elements, job.spec.vocab) {
            return;
        }
        list.host(
            ComponentKind::Weights,
            "Token embedding, repacked output copy (llama.cpp CPU_REPACK)",
            Bytes(table_bytes),
            Provenance::Exact,
            formula!(
                job.explain,
                "tied token_embd {} bytes is held twice on the CPU: once for the input lookup and once repacked for the output matmul (CPU_REPACK buffer)",
                group_digits(table_bytes)
            ),
        );
        return;
    }
    list.host(
        ComponentKind::Weights,
        "Token embedding (kept in host RAM by llama.cpp)",
        Bytes(table_bytes),
        Provenance::Exact,
        formula!(
            job.explain,
            "tied token_embd {} bytes stays on the CPU; its copy serves as the output matrix on the GPU",
            group_digits(table_bytes)
        ),
    );
}

/// Bytes per 256 elements of the ggml types the CPU backend repacks for matmul on x86 AVX2 and
/// ARM NEON (ggml/src/ggml-cpu/repack.cpp, `ggml_repack_get_optimal_repack_type`): Q4_0 and
/// IQ4_NL (18 B per 32) and Q4_K (144 B per 256) all take 144 B per 256 elements; Q2_K takes 84.
const REPACKED_BYTES_PER_256: [u64; 2] = [144, 84];
/// Row multiple the repacked layouts interleave (`cur->ne[1] % 8 == 0` in the same function).
const REPACK_ROW_MULTIPLE: u64 = 8;

/// Whether llama.cpp's CPU backend repacks a token-embedding table of this size: its type is
/// read off the bytes per element, which are exact for ggml's block types.
fn cpu_repacks_embedding(table_bytes: u64, elements: u64, rows: u64) -> bool {
    elements > 0
        && rows.is_multiple_of(REPACK_ROW_MULTIPLE)
        && REPACKED_BYTES_PER_256
            .iter()
            .any(|&per| table_bytes.saturating_mul(256) == elements.saturating_mul(per))
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

/// Query heads per KV head (llama.cpp `n_gqa()`), 1 when the shape does not say.
fn gqa_of(spec: &ModelSpec) -> u64 {
    spec.heads.checked_div(spec.kv_heads).unwrap_or(1).max(1)
}

/// Bytes of one tensor group in layer `i` of `n` at precision `p` (total, active).
/// `moe_model`: whether the model has routed experts (MXFP4 then quantises only those).
/// `gqa`: query heads per KV head (the i-quant mixes keep `attn_v` at more bits from 4 on).
pub(super) fn group_bytes(
    p: WeightPrecision,
    g: &TensorGroup,
    (i, n): (u64, u64),
    moe_model: bool,
    gqa: u64,
) -> (u64, u64) {
    let (class, elements, active, row) = (g.class, g.elements, g.active_elements, g.row);
    if p.is_gguf()
        || matches!(
            p,
            WeightPrecision::Fp32 | WeightPrecision::Fp16 | WeightPrecision::Bf16
        )
    {
        let t = p.ggml_type_in(class, i, n, gqa);
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
    if let Some(bits) = p.mlx_bits() {
        // MLX affine: every matrix, the embedding and head included (`core::mlx`).
        let g = crate::core::mlx::DEFAULT_GROUP_SIZE;
        let f = |e: u64| crate::core::mlx::affine_tensor_bytes(bits, g, class, e, row);
        return (f(elements), f(active));
    }
    let matrix = !matches!(
        class,
        TensorClass::TokenEmbedding | TensorClass::Output | TensorClass::Small
    );
    if p == WeightPrecision::Mxfp4 {
        // gpt-oss: routed experts' matrices in MXFP4 blocks of 32 along the row; the rest BF16.
        let quantised = matrix && (g.routed || !moe_model);
        let t = if quantised {
            GgmlType::MXFP4
        } else {
            GgmlType::BF16
        };
        return (ggml_bytes(t, elements, row), ggml_bytes(t, active, row));
    }
    let sixteen = !matrix;
    let bpw = if sixteen && p.keeps_embeddings_16bit() {
        16.0
    } else {
        p.bits_per_weight()
    };
    let f = |e: u64| Bytes::from_f64(e as f64 * bpw / 8.0).0;
    (f(elements), f(active))
}

/// One layer's routed experts (llama.cpp `blk.N.ffn_*_exps.*`): what `--n-cpu-moe` moves to RAM.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct RoutedExperts {
    /// The layer (0-based, llama.cpp's `blk.N`).
    pub layer: u64,
    /// Bytes of all routed experts of the layer (matrices and their biases).
    pub bytes: u64,
    /// Bytes one token reads: its top-k experts.
    pub active_bytes: u64,
    /// Elements one token multiplies with (top-k experts).
    pub active_elements: u64,
}

/// The routed experts of every MoE layer of `spec` at precision `p`, in layer order: from the
/// model file's tensors when it lists them by layer (GGUF `ffn_*_exps`), else from the
/// architecture's expert shapes. Empty for dense models.
pub fn routed_experts(spec: &ModelSpec, p: WeightPrecision) -> Vec<RoutedExperts> {
    let Some(moe) = spec.moe.as_ref().filter(|m| m.experts > 0) else {
        return Vec::new();
    };
    let n = spec.layers;
    let (e, k) = (moe.experts, moe.active_experts.min(moe.experts));
    if let Some(fw) = &spec.file_weights
        && !fw.expert_bytes_by_layer.is_empty()
    {
        // Experts of one layer are equal in size: top-k of E read k/E of the bytes.
        let per_layer_elems = |i: u64| {
            spec.layer_tensors(i)
                .iter()
                .filter(|g| g.routed)
                .fold(0u64, |a, g| a.saturating_add(g.active_elements))
        };
        return fw
            .expert_bytes_by_layer
            .iter()
            .enumerate()
            .filter(|(_, b)| **b > 0)
            .map(|(i, &b)| RoutedExperts {
                layer: i as u64,
                bytes: b,
                active_bytes: scale_by_ratio(b, k, e),
                active_elements: per_layer_elems(i as u64),
            })
            .collect();
    }
    let mixes = p.mixes_by_layer();
    let mut out = Vec::new();
    let one = |i: u64| -> RoutedExperts {
        let mut r = RoutedExperts {
            layer: i,
            ..RoutedExperts::default()
        };
        for g in spec.layer_tensors(i).iter().filter(|g| g.routed) {
            let (t, a) = group_bytes(p, g, (i, n), true, gqa_of(spec));
            r.bytes = r.bytes.saturating_add(t);
            r.active_bytes = r.active_bytes.saturating_add(a);
            r.active_elements = r.active_elements.saturating_add(g.active_elements);
        }
        r
    };
    if n > 4096 {
        return out;
    }
    let mut same: Option<RoutedExperts> = None;
    for i in 0..n {
        if !spec.is_moe_layer(i) {
            continue;
        }
        let r = match same {
            Some(s) if !mixes => RoutedExperts { layer: i, ..s },
            _ => one(i),
        };
        same = Some(r);
        out.push(r);
    }
    out
}

#[derive(Clone)]
pub(super) struct WeightSums {
    pub(super) total: Bytes,
    pub(super) layers: Bytes,
    pub(super) outer: Bytes,
    pub(super) active_read: Bytes,
    pub(super) largest_layer: Bytes,
    pub(super) provenance: Provenance,
    pub(super) formula: String,
}

/// The weights of `spec` at precision `p`: from the model file when there is one, else from a
/// user-given parameter count, else summed tensor by tensor from the architecture.
pub(super) fn sum_tensors(spec: &ModelSpec, p: WeightPrecision, explain: bool) -> WeightSums {
    let (layer_total, layer_active, largest) = layer_sums(spec, p);
    let (outer, outer_read) = outer_sums(spec, p);
    let arch_total = layer_total.saturating_add(outer);
    let arch_params = spec.arch_param_count().total.max(1);
    let active_read = layer_active.saturating_add(outer_read);

    // A file's exact bytes, or a user-given parameter count, override the architecture sum; the
    // architecture's parts scale with it.
    let scaled = |part: u64, ratio: f64| Bytes::from_f64(part as f64 * ratio);
    if let Some(fw) = &spec.file_weights
        && fw.total_bytes > 0
    {
        let total = fw.total_bytes;
        let layers = if fw.layer_bytes > 0 {
            fw.layer_bytes.min(total)
        } else {
            scale_by_ratio(total, layer_total, arch_total)
        };
        let ratio = total as f64 / arch_total.max(1) as f64;
        return WeightSums {
            total: Bytes(total),
            layers: Bytes(layers),
            outer: Bytes(total - layers),
            active_read: scaled(active_read, ratio),
            largest_layer: scaled(largest, ratio),
            provenance: Provenance::Exact,
            formula: formula!(
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
        return WeightSums {
            total,
            layers: scaled(layer_total, ratio),
            outer: scaled(outer, ratio),
            active_read: scaled(active_read, ratio),
            largest_layer: scaled(largest, ratio),
            provenance: Provenance::Derived,
            formula: formula!(
                explain,
                "{} params × {} bits / 8 = {} ({})",
                group_digits(np),
                format::bits_exact(bits),
                gib(total),
                p.label()
            ),
        };
    }
    let eff_bits = arch_total as f64 * 8.0 / arch_params as f64;
    WeightSums {
        total: Bytes(arch_total),
        layers: Bytes(layer_total),
        outer: Bytes(outer),
        active_read: Bytes(active_read),
        largest_layer: Bytes(largest),
        provenance: Provenance::Derived,
        formula: formula!(
            explain,
            "Σ tensors: {} params at {} ({} bits/weight on average; {}) = {}",
            group_digits(arch_params),
            p.label(),
            format::bits_exact(eff_bits),
            p.mix_note(),
            gib(Bytes(arch_total))
        ),
    }
}

/// Bytes of the repeated layers at precision `p`: (all layers, what a token reads of them, the
/// largest layer).
fn layer_sums(spec: &ModelSpec, p: WeightPrecision) -> (u64, u64, u64) {
    let n = spec.layers;
    let gqa = gqa_of(spec);
    let moe_model = spec.moe.as_ref().is_some_and(|m| m.experts > 0);
    // Per-layer sums. Layers differ only by MoE/dense kind and by the k-quant mixes' layer index.
    let mixes = p.mixes_by_layer();
    let mut layer_total = 0u64;
    let mut layer_active = 0u64;
    let mut largest = 0u64;
    let mut sum_layer = |i: u64, mult: u64| {
        let (mut t, mut a) = (0u64, 0u64);
        for g in spec.layer_tensors(i) {
            let (gt, ga) = group_bytes(p, &g, (i, n), moe_model, gqa);
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
    (layer_total, layer_active, largest)
}

/// Bytes of the tensors outside the layers at precision `p`: (all of them, what a token reads).
fn outer_sums(spec: &ModelSpec, p: WeightPrecision) -> (u64, u64) {
    let n = spec.layers;
    let gqa = gqa_of(spec);
    let moe_model = spec.moe.as_ref().is_some_and(|m| m.experts > 0);
    let mut outer = 0u64;
    let mut outer_read = 0u64;
    for g in spec.outer_tensors() {
        let (t, _) = group_bytes(p, &g, (0, n), moe_model, gqa);
        outer = outer.saturating_add(t);
        if g.class != TensorClass::TokenEmbedding {
            outer_read = outer_read.saturating_add(t);
        }
    }
    if spec.tied_embeddings {
        // A tied head is read in full for every token (it is the output matrix).
        let emb = spec.outer_tensors()[0];
        let whole = TensorGroup {
            active_elements: emb.elements,
            ..emb
        };
        outer_read = outer_read.saturating_add(group_bytes(p, &whole, (0, n), moe_model, gqa).0);
    }
    (outer, outer_read)
}

/// Weight elements one decoded token multiplies with, by the ggml type llama.cpp stores each
/// tensor in at precision `p` (`llama_tensor_get_type`, [`WeightPrecision::ggml_type_in`]):
/// the repeated layers' active elements (MoE: top-k experts) and the output head (the tied
/// embedding when it serves as the head); norms and vectors (`Small`) and the embedding lookup
/// are left out. Empty for precisions llama.cpp does not store as ggml types (MLX, bitsandbytes,
/// GPTQ, …). Mat-vec kernels differ in ALU work per weight by type (`speed::metal`).
pub(super) fn active_elements_by_type(
    spec: &ModelSpec,
    p: WeightPrecision,
) -> Vec<(GgmlType, u64)> {
    if !(p.is_gguf()
        || matches!(
            p,
            WeightPrecision::Fp32 | WeightPrecision::Fp16 | WeightPrecision::Bf16
        ))
    {
        return Vec::new();
    }
    let n = spec.layers;
    let gqa = gqa_of(spec);
    let mut out: Vec<(GgmlType, u64)> = Vec::with_capacity(4);
    let mut add = |t: GgmlType, e: u64| match out.iter_mut().find(|(u, _)| *u == t) {
        Some((_, sum)) => *sum = sum.saturating_add(e),
        None => out.push((t, e)),
    };
    let layer = |i: u64, mult: u64, add: &mut dyn FnMut(GgmlType, u64)| {
        for g in spec.layer_tensors(i) {
            if g.class != TensorClass::Small && g.row > 0 {
                add(
                    p.ggml_type_in(g.class, i, n, gqa),
                    g.active_elements.saturating_mul(mult),
                );
            }
        }
    };
    if p.mixes_by_layer() && n <= 4096 {
        for i in 0..n {
            layer(i, 1, &mut add);
        }
    } else {
        for g in spec.layer_groups() {
            layer(g.first, g.count, &mut add);
        }
    }
    for g in spec.outer_tensors() {
        let head = match g.class {
            TensorClass::Output => true,
            // A tied table is the output matrix, at the type llama.cpp gives the output.
            TensorClass::TokenEmbedding => spec.tied_embeddings && g.elements == g.active_elements,
            _ => false,
        };
        if head {
            add(p.ggml_type_in(TensorClass::Output, 0, n, gqa), g.elements);
        }
    }
    out
}
