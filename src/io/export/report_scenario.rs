//! The report's scenario section: every input as a labelled row, and the techniques in effect.

use super::report::ReportInput;
use super::text::gib_exact;
use crate::core::fit::Verdict;
use crate::core::format;
use crate::core::format::group_digits;
use crate::core::model::{MlpKind, ModelSpec};
use crate::core::precision::{KvPrecision, WeightPrecision};
use crate::core::scenario::{Checkpointing, KvAllocation, Mode, Offload, Runtime};

/// One row of the scenario table.
pub(crate) struct Row {
    pub label: &'static str,
    pub value: String,
}

fn row(label: &'static str, value: impl Into<String>) -> Row {
    Row {
        label,
        value: value.into(),
    }
}

fn kv_label(k: KvPrecision) -> String {
    format!("{} ({} bits)", k.cli_name(), format::bits_trimmed(k.bits()))
}

/// Every input of the scenario.
pub(crate) fn scenario_rows(input: &ReportInput) -> Vec<Row> {
    let training = input.scenario.mode.is_training();
    let mut v = Vec::new();
    model_rows(input, &mut v);
    size_rows(input, &mut v);
    workload_rows(input, &mut v);
    if training {
        training_rows(input, &mut v);
    }
    runtime_rows(input, &mut v);
    v
}

/// The model: its name and source, whether the shape is exact, the architecture and its parts.
fn model_rows(input: &ReportInput, v: &mut Vec<Row>) {
    let s = input.scenario;
    let m = &s.model;
    let preset = s.model_id.as_deref().and_then(|id| input.catalog.model(id));
    v.push(row(
        "Model",
        match (&s.model_id, preset) {
            (Some(id), Some(p)) => format!("{} (preset {id}, {})", m.name, p.source),
            (Some(id), None) => format!("{} (preset {id})", m.name),
            _ => m.name.clone(),
        },
    ));
    v.push(row(
        "Shape",
        if m.is_estimated() {
            "estimated from the parameter count (plausible, not exact: KV cache and activations are approximate)"
        } else {
            "exact (from the model's config, file or preset)"
        },
    ));
    v.push(row("Architecture", architecture(m)));
    if let Some(moe) = &m.moe {
        v.push(row(
            "Mixture of experts",
            format!(
                "{} experts, {} active per token, expert FFN {}, {} shared experts, first {} layers dense",
                moe.experts,
                moe.active_experts,
                group_digits(moe.expert_ffn),
                moe.shared_experts,
                moe.first_dense_layers
            ),
        ));
    }
    if let Some(mla) = &m.mla {
        v.push(row(
            "Latent attention (MLA)",
            format!(
                "kv_lora_rank {}, q_lora_rank {}, rope dim {}, nope dim {}, v_head_dim {}",
                mla.kv_lora_rank,
                mla.q_lora_rank,
                mla.qk_rope_head_dim,
                mla.qk_nope_head_dim,
                mla.v_head_dim
            ),
        ));
    }
    let (local, window) = m.local_layers();
    if local > 0 {
        v.push(row(
            "Sliding window",
            format!(
                "{local} of {} layers attend to {} tokens",
                m.layers,
                group_digits(window)
            ),
        ));
    }
    if m.max_context > 0 {
        v.push(row(
            "Trained context",
            format!("{} tokens", group_digits(m.max_context)),
        ));
    }
}

/// "llama: 32 layers, hidden 4,096, …; q/k/v biases".
fn architecture(m: &ModelSpec) -> String {
    let mut text = format!(
        "{}: {} layers, hidden {}, {} attention heads, {} KV heads × head_dim {}, MLP {} ({}), vocab {}, {} embeddings",
        m.arch,
        m.layers,
        group_digits(m.hidden),
        m.heads,
        m.kv_heads,
        m.head_dim,
        group_digits(m.intermediate),
        match m.mlp {
            MlpKind::Gated => "gated, 3 matrices",
            MlpKind::Plain => "plain, 2 matrices",
        },
        group_digits(m.vocab),
        if m.tied_embeddings { "tied" } else { "untied" }
    );
    let extras: Vec<&str> = [
        (m.qkv_bias, "q/k/v biases"),
        (m.o_bias, "output-projection bias"),
        (m.mlp_bias, "MLP biases"),
        (m.qk_norm, "q/k norms"),
        (m.attn_sinks, "attention sinks"),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .map(|(_, t)| *t)
    .collect();
    if !extras.is_empty() {
        text.push_str(&format!("; {}", extras.join(", ")));
    }
    text
}

/// The parameters, the model file, and the weight and KV-cache precisions.
fn size_rows(input: &ReportInput, v: &mut Vec<Row>) {
    let s = input.scenario;
    let m = &s.model;
    let training = s.mode.is_training();
    let pc = input.estimate.params;
    let mut params = format!("{} ({})", group_digits(pc.total), format::params(pc.total));
    if pc.active != pc.total {
        params.push_str(&format!(
            ", {} ({}) active per token",
            group_digits(pc.active),
            format::params(pc.active)
        ));
    }
    if m.nominal_params.is_some() && m.file_weights.is_none() {
        params.push_str(", as given (not counted from the shape)");
    }
    v.push(row("Parameters", params));
    if let Some(fw) = &m.file_weights {
        v.push(row(
            "Model file",
            format!(
                "{} ({}, {} B of tensors)",
                fw.path,
                fw.format,
                group_digits(fw.total_bytes)
            ),
        ));
    }
    let bits = format::bits_trimmed(s.weights.bits_per_weight());
    v.push(row(
        "Weights",
        if s.weights.is_mix() {
            format!(
                "{} ({bits} bits/weight in the bulk tensors; the mix is under Memory)",
                s.weights.label()
            )
        } else {
            format!("{} ({bits} bits/weight)", s.weights.label())
        },
    ));
    let quality = crate::io::catalog::quality();
    v.push(row("Weights quality", quality.of_weights(s).long()));
    if !training {
        v.push(row(
            "KV cache",
            if s.kv.k == s.kv.v {
                kv_label(s.kv.k)
            } else {
                format!("K {} / V {}", kv_label(s.kv.k), kv_label(s.kv.v))
            },
        ));
        v.push(row("KV cache quality", quality.of_kv(s).long()));
    }
}

/// Context, batch, prefill and prompt, and the mode.
fn workload_rows(input: &ReportInput, v: &mut Vec<Row>) {
    let s = input.scenario;
    let training = s.mode.is_training();
    v.push(row(
        "Context",
        format!("{} tokens per sequence", group_digits(s.context)),
    ));
    v.push(row(
        "Batch",
        if training {
            format!("micro-batch {} per GPU", s.batch)
        } else {
            format!("{} concurrent sequences", s.batch)
        },
    ));
    if !training {
        v.push(row(
            "Prefill chunk",
            format!(
                "{} tokens (llama.cpp -ub, vLLM max_num_batched_tokens)",
                group_digits(s.ubatch)
            ),
        ));
        v.push(row(
            "Prompt for time to first token",
            format!("{} tokens", group_digits(s.prompt_tokens)),
        ));
        if let Some(sp) = &s.speculative {
            let who = match (&sp.draft_id, sp.method) {
                (Some(id), crate::core::speculative::SpecMethod::DraftModel) => {
                    format!("{} {id}", sp.method.label())
                }
                _ => sp.method.label().to_string(),
            };
            let source = match sp.acceptance {
                Some(_) => "as set".to_string(),
                None => sp.method.default_acceptance().1.to_string(),
            };
            v.push(row(
                "Speculative decoding",
                format!(
                    "{who} at {}: {} tokens drafted per step, {} of them accepted each ({source})",
                    sp.weights(s.weights).label(),
                    sp.tokens(),
                    format::percent(sp.acceptance())
                ),
            ));
        }
        if let Some(vi) = &s.vision {
            let e = &vi.encoder;
            v.push(row(
                "Images",
                format!(
                    "{} per request, {} tokens each ({} projector, {} images in {}-pixel patches, {} vision params), encoder on the {}",
                    vi.images(),
                    group_digits(vi.tokens_per_image()),
                    if e.projector.is_empty() { "mmproj" } else { e.projector.as_str() },
                    format::image_dims(e.image_size, e.height()),
                    e.patch_size,
                    format::params(e.params),
                    if vi.on_cpu { "CPU (--no-mmproj-offload)" } else { "GPU" }
                ),
            ));
        }
    }
    v.push(row("Mode", s.mode.label()));
}

/// Optimizer, checkpointing, LoRA, ZeRO, offload and training tokens.
fn training_rows(input: &ReportInput, v: &mut Vec<Row>) {
    let s = input.scenario;
    v.push(row(
        "Optimizer",
        format!(
            "{}{}",
            s.optimizer.label(),
            if s.pure_bf16 {
                " (pure BF16, no FP32 master copy)"
            } else {
                ""
            }
        ),
    ));
    v.push(row(
        "Gradient checkpointing",
        match s.checkpointing {
            Checkpointing::None => "off",
            Checkpointing::Selective => "selective (attention recomputed)",
            Checkpointing::Full => "full (one extra forward per step)",
        },
    ));
    if matches!(s.mode, Mode::Lora | Mode::Qlora) {
        v.push(row(
            "LoRA",
            format!(
                "rank {}, targets {}",
                s.lora_rank,
                s.lora_targets.cli_name()
            ),
        ));
    }
    v.push(row("DeepSpeed ZeRO stage", s.zero.to_string()));
    v.push(row(
        "Offload",
        match s.offload {
            Offload::None => "none",
            Offload::Optimizer => "optimizer states to CPU RAM (ZeRO-Offload)",
            Offload::OptimizerParams => {
                "optimizer states and parameters to CPU RAM (ZeRO-3 offload)"
            }
        },
    ));
    v.push(row(
        "Training tokens",
        format!(
            "{} ({})",
            group_digits(s.train_tokens),
            format::params(s.train_tokens)
        ),
    ));
}

/// GPUs, attention and KV allocation, the runtime and its reserve, and the techniques.
fn runtime_rows(input: &ReportInput, v: &mut Vec<Row>) {
    let s = input.scenario;
    let training = s.mode.is_training();
    v.push(row(
        "GPUs",
        match (s.gpus, training) {
            (0, _) => "0 (CPU only: everything in RAM)".to_string(),
            (1, _) => "1".to_string(),
            (n, false) => format!("{n} (tensor parallel)"),
            (n, true) => format!("{n} (data parallel)"),
        },
    ));
    v.push(row(
        "FlashAttention",
        if s.flash_attention { "on" } else { "off" },
    ));
    if !training {
        v.push(row(
            "KV allocation",
            match s.kv_allocation {
                KvAllocation::Contiguous => "contiguous (full length reserved per sequence)",
                KvAllocation::Paged => "paged (PagedAttention, 16-token blocks)",
            },
        ));
    }
    v.push(row("Runtime", s.runtime.label()));
    if s.runtime == Runtime::Vllm {
        v.push(row(
            "vLLM GPU memory utilization",
            format::percent(s.gpu_memory_utilization),
        ));
    }
    v.push(row(
        "Runtime reserve per GPU",
        match s.overhead_override {
            Some(b) => format!("{} (set by you)", gib_exact(b)),
            None => "the runtime's default (see Overhead below)".to_string(),
        },
    ));
    v.push(row("Techniques", techniques(input).join("; ")));
}

/// The techniques in effect, by name (every memory technique the scenario uses is named in the
/// report).
pub(crate) fn techniques(input: &ReportInput) -> Vec<String> {
    let s = input.scenario;
    let training = s.mode.is_training();
    let mut t = Vec::new();
    if !matches!(
        s.weights,
        WeightPrecision::Fp32 | WeightPrecision::Fp16 | WeightPrecision::Bf16
    ) {
        t.push(format!("quantisation ({})", s.weights.label()));
    }
    if !training
        && !matches!(
            s.kv.k,
            KvPrecision::Fp32 | KvPrecision::Fp16 | KvPrecision::Bf16
        )
    {
        t.push(format!("KV-cache quantisation ({})", s.kv.cli_name()));
    }
    if s.flash_attention {
        t.push("FlashAttention".into());
    }
    if !training && s.kv_allocation == KvAllocation::Paged {
        t.push("PagedAttention".into());
    }
    if s.gpus > 1 {
        t.push(if training {
            format!("data parallel over {} GPUs", s.gpus)
        } else {
            format!("tensor parallel over {} GPUs", s.gpus)
        });
    }
    if input.fits.iter().any(|f| f.verdict == Verdict::Offload) {
        t.push("CPU offload / layer split (on some machines)".into());
    }
    if input.fits.iter().any(|f| f.verdict == Verdict::Unified) {
        t.push("unified memory (on some machines)".into());
    }
    if training {
        if s.zero > 0 {
            t.push(format!("DeepSpeed ZeRO-{}", s.zero));
        }
        match s.offload {
            Offload::None => {}
            Offload::Optimizer => t.push("ZeRO-Offload (optimizer)".into()),
            Offload::OptimizerParams => t.push("ZeRO-Offload (optimizer and parameters)".into()),
        }
        if s.checkpointing != Checkpointing::None {
            t.push("gradient checkpointing".into());
        }
        match s.mode {
            Mode::Lora => t.push("LoRA".into()),
            Mode::Qlora => t.push("QLoRA (NF4 base, paged optimizer)".into()),
            _ => {}
        }
    }
    if t.is_empty() {
        t.push("none".into());
    }
    t
}
