//! The sizing report: one input ([`ReportInput`]), three formats ([`ReportFormat`]).
//!
//! The content is assembled here as plain (unescaped) rows; `markdown.rs` and `html.rs` escape
//! and lay them out, and the JSON form reuses the CLI contract shapes of `io::json`.

use super::launch::{LaunchSetting, launch_settings};
use super::text::{duration, gib_exact, rate, usd};
use super::{ExportError, html, markdown};
use crate::core::catalog::{Catalog, MemoryKind, Price};
use crate::core::estimate::{ComponentKind, Estimate, Placement, group_digits};
use crate::core::fit::{FitResult, FitSettings, Verdict};
use crate::core::format_params;
use crate::core::model::MlpKind;
use crate::core::precision::{KvPrecision, WeightPrecision};
use crate::core::recommend::{Constraints, Recommendations, recommend};
use crate::core::scenario::{Checkpointing, KvAllocation, Mode, Offload, Runtime, Scenario};
use crate::core::speed::{Backend, SplitStyle, formula_text};
use crate::core::units::display_signed_gib;
use crate::io::json::{estimate_json, fit_json};
use serde_json::{Value, json};
use std::path::Path;

/// Everything a report shows. `fits` are the machines the user chose, "This machine" first when
/// present; the launch settings are made for the first of them.
#[derive(Clone, Debug)]
pub struct ReportInput<'a> {
    pub scenario: &'a Scenario,
    pub estimate: &'a Estimate,
    pub fits: &'a [FitResult],
    pub catalog: &'a Catalog,
    pub settings: &'a FitSettings,
    /// When the report was made ("2025-06-01 14:03"), passed in so output is reproducible.
    pub generated: String,
    /// headroom's version (`env!("CARGO_PKG_VERSION")`).
    pub version: &'a str,
}

impl ReportInput<'_> {
    /// "Llama 3 8B: Inference, BF16, 8,192 tokens".
    pub fn title(&self) -> String {
        let s = self.scenario;
        format!(
            "{}: {}, {}, {} tokens",
            s.model.name,
            s.mode.label(),
            s.weights.label(),
            group_digits(s.context)
        )
    }

    /// A file name to offer in a save dialog: "headroom-Llama-3-8B-inference.md".
    pub fn suggested_file_name(&self, format: ReportFormat) -> String {
        format!(
            "headroom-{}-{}.{}",
            super::text::slug(&self.scenario.model.name),
            self.scenario.mode.cli_name(),
            format.extension()
        )
    }

    /// The machine the launch settings are made for: the first that fits ("This machine" when
    /// it comes first and fits), else the first.
    pub fn launch_fit(&self) -> Option<&FitResult> {
        self.fits.iter().find(|f| f.fits()).or(self.fits.first())
    }

    /// What to buy or rent for the scenario, over the report's catalog (this machine, the
    /// catalog's `local` entry, gets its upgrade path and is never a pick).
    pub fn recommendations(&self) -> Recommendations {
        let local = self.catalog.machine(crate::io::detect::LOCAL_MACHINE_ID);
        recommend(
            self.scenario,
            &self.catalog.machines,
            local,
            self.catalog,
            self.settings,
            &Constraints::default(),
        )
    }

    /// Launch settings for [`Self::launch_fit`], if there is a machine.
    pub fn launch(&self) -> Vec<LaunchSetting> {
        self.launch_fit()
            .map(|f| launch_settings(self.scenario, f))
            .unwrap_or_default()
    }
}

/// The three report formats.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ReportFormat {
    Markdown,
    Html,
    Json,
}

impl ReportFormat {
    pub const ALL: [ReportFormat; 3] = [
        ReportFormat::Markdown,
        ReportFormat::Html,
        ReportFormat::Json,
    ];

    /// The format named by a file's extension: .md/.markdown, .html/.htm, .json (any case).
    pub fn from_path(path: &Path) -> Result<Self, ExportError> {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        match ext.as_str() {
            "md" | "markdown" => Ok(ReportFormat::Markdown),
            "html" | "htm" => Ok(ReportFormat::Html),
            "json" => Ok(ReportFormat::Json),
            _ => Err(ExportError::UnknownFormat {
                path: path.display().to_string(),
            }),
        }
    }

    /// The format for a `--format` value: md/markdown, html/htm, json.
    pub fn from_name(name: &str) -> Result<Self, ExportError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "md" | "markdown" => Ok(ReportFormat::Markdown),
            "html" | "htm" => Ok(ReportFormat::Html),
            "json" => Ok(ReportFormat::Json),
            _ => Err(ExportError::UnknownFormatName(name.to_string())),
        }
    }

    /// The usual file extension, without the dot.
    pub const fn extension(self) -> &'static str {
        match self {
            ReportFormat::Markdown => "md",
            ReportFormat::Html => "html",
            ReportFormat::Json => "json",
        }
    }

    pub const fn label(self) -> &'static str {
        match self {
            ReportFormat::Markdown => "Markdown",
            ReportFormat::Html => "HTML",
            ReportFormat::Json => "JSON",
        }
    }
}

/// Render the report.
pub fn render(input: &ReportInput, format: ReportFormat) -> String {
    match format {
        ReportFormat::Markdown => markdown::render(input),
        ReportFormat::Html => html::render(input),
        ReportFormat::Json => {
            let mut s =
                serde_json::to_string_pretty(&report_json(input)).unwrap_or_else(|_| "{}".into());
            s.push('\n');
            s
        }
    }
}

/// The JSON report: the `estimate --json` shape, plus `"recommendations"` (the `recommend
/// --json` shape), `"fits"` (the `fit --json` shape each), `"scenario"`, `"settings"`,
/// `"launch"`, `"generated"` and `"version"`.
pub fn report_json(input: &ReportInput) -> Value {
    let mut v = estimate_json(input.estimate);
    v["recommendations"] =
        crate::io::json::recommend_json(input.scenario, &input.recommendations());
    v["fits"] = Value::Array(input.fits.iter().map(fit_json).collect());
    v["scenario"] = serde_json::to_value(input.scenario).unwrap_or(Value::Null);
    v["settings"] = serde_json::to_value(input.settings).unwrap_or(Value::Null);
    v["launch"] = json!({
        "machine": input.launch_fit().map(|f| f.machine.clone()),
        "settings": serde_json::to_value(input.launch()).unwrap_or(Value::Null),
    });
    v["generated"] = json!(input.generated);
    v["version"] = json!(input.version);
    v
}

// ---- Shared content, as plain text rows (the renderers escape) ----

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
    format!("{} ({} bits)", k.cli_name(), trim_float(k.bits()))
}

fn trim_float(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Every input of the scenario.
pub(crate) fn scenario_rows(input: &ReportInput) -> Vec<Row> {
    let s = input.scenario;
    let m = &s.model;
    let training = s.mode.is_training();
    let mut v = Vec::new();
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
    let mut arch = format!(
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
        arch.push_str(&format!("; {}", extras.join(", ")));
    }
    v.push(row("Architecture", arch));
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
    let pc = input.estimate.params;
    let mut params = format!("{} ({})", group_digits(pc.total), format_params(pc.total));
    if pc.active != pc.total {
        params.push_str(&format!(
            ", {} ({}) active per token",
            group_digits(pc.active),
            format_params(pc.active)
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
    let bits = trim_float(s.weights.bits_per_weight());
    v.push(row(
        "Weights",
        if matches!(
            s.weights,
            WeightPrecision::Q4KM
                | WeightPrecision::Q5KM
                | WeightPrecision::Q3KM
                | WeightPrecision::Q2K
        ) {
            format!(
                "{} ({bits} bits/weight in the bulk tensors; the mix is under Memory)",
                s.weights.label()
            )
        } else {
            format!("{} ({bits} bits/weight)", s.weights.label())
        },
    ));
    if !training {
        v.push(row(
            "KV cache",
            if s.kv.k == s.kv.v {
                kv_label(s.kv.k)
            } else {
                format!("K {} / V {}", kv_label(s.kv.k), kv_label(s.kv.v))
            },
        ));
    }
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
    }
    v.push(row("Mode", s.mode.label()));
    if training {
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
                format_params(s.train_tokens)
            ),
        ));
    }
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
            format!("{:.0} %", s.gpu_memory_utilization * 100.0),
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
    v
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

/// "GPU", "host RAM".
pub(crate) fn placement_label(p: Placement) -> &'static str {
    match p {
        Placement::Gpu => "per GPU",
        Placement::Host => "host RAM",
    }
}

/// The totals rows: (label, bytes).
pub(crate) fn totals(input: &ReportInput) -> Vec<(String, String)> {
    let e = input.estimate;
    let mut v = Vec::new();
    if e.gpus > 0 {
        let n = e.gpus;
        v.push((
            if n > 1 {
                format!("Each of the {n} GPUs")
            } else {
                "The GPU".into()
            },
            gib_exact(e.per_gpu_total()),
        ));
        v.push((
            "Model states per GPU (weights, gradients, optimizer, master)".into(),
            gib_exact(e.per_gpu_model_states()),
        ));
    }
    v.push(("Host RAM".into(), gib_exact(e.host_total())));
    v.push(("Everything, all devices".into(), gib_exact(e.total())));
    if !input.scenario.mode.is_training() {
        v.push((
            "KV cache per token (one sequence)".into(),
            gib_exact(e.kv_cache_per_token),
        ));
    }
    v
}

/// The recommendation table: (kind, question, machine, price, verdict, tok/s, reason) per
/// pick, plain text.
pub(crate) const RECOMMEND_COLUMNS: [&str; 7] = [
    "Kind", "Pick", "Machine", "Price", "Verdict", "Tokens/s", "Why",
];

pub(crate) fn recommend_rows(r: &Recommendations) -> Vec<[String; 7]> {
    let mut rows = Vec::new();
    for g in &r.groups {
        for p in &g.picks {
            rows.push([
                g.group.label().to_string(),
                p.role.label().to_string(),
                p.name.clone(),
                p.price_text(),
                p.verdict_text.clone(),
                crate::core::recommend::rate_text(p.tokens_per_s),
                p.reason.clone(),
            ]);
        }
    }
    rows
}

/// The lines under the table: what no machine satisfies, per kind ("Laptop: nothing fits …").
pub(crate) fn recommend_unmet(r: &Recommendations) -> Vec<String> {
    r.groups
        .iter()
        .flat_map(|g| {
            g.unmet
                .iter()
                .map(move |u| format!("{}: {u}", g.group.label()))
        })
        .collect()
}

/// The fit table's columns for the scenario's mode.
pub(crate) fn fit_columns(training: bool) -> Vec<&'static str> {
    let mut c = vec![
        "Machine",
        "Hardware",
        "Verdict",
        "GPU need / usable",
        "RAM need / usable",
        "Headroom",
    ];
    if training {
        c.extend(["Step time", "Tokens/s", "Run time", "Run cost"]);
    } else {
        c.extend(["Decode tok/s", "Prefill tok/s", "TTFT", "$ / 1M tokens"]);
    }
    c
}

/// "1 × RTX 4090 (24.0 GiB, 1008 GB/s), 64.0 GiB RAM, $1.99/h".
pub(crate) fn hardware(input: &ReportInput, f: &FitResult) -> String {
    let Some(m) = input.catalog.machine(&f.machine) else {
        return if f.gpus > 1 {
            format!(
                "{} GPUs, {} usable VRAM each, {} usable RAM",
                f.gpus,
                f.gpu_capacity.display_gib(),
                f.ram_capacity.display_gib()
            )
        } else if f.gpus == 1 {
            format!(
                "1 GPU, {} usable VRAM, {} usable RAM",
                f.gpu_capacity.display_gib(),
                f.ram_capacity.display_gib()
            )
        } else {
            format!("CPU only, {} usable RAM", f.ram_capacity.display_gib())
        };
    };
    let mut s = match m.gpu.as_deref().and_then(|g| input.catalog.accelerator(g)) {
        Some(a) if a.memory_kind == MemoryKind::Unified => format!(
            "{} ({} unified, {})",
            a.name,
            m.ram.display_gib(),
            a.bandwidth
        ),
        Some(a) => format!(
            "{} × {} ({}, {}), {} RAM",
            m.gpu_count,
            a.name,
            a.memory.display_gib(),
            a.bandwidth,
            m.ram.display_gib()
        ),
        None => format!(
            "{} ({} cores), {} RAM ({})",
            m.cpu,
            m.cpu_cores,
            m.ram.display_gib(),
            m.ram_bandwidth
        ),
    };
    match &m.price {
        Some(Price::Hourly { usd, .. }) => s.push_str(&format!(
            ", {}",
            crate::core::format::usd_per_hour(Some(*usd))
        )),
        Some(Price::Purchase { usd, .. }) => s.push_str(&format!(
            ", {} to buy",
            crate::core::format::usd_whole(Some(*usd))
        )),
        None => {}
    }
    s
}

/// One fit-table row, plain text.
pub(crate) fn fit_row(input: &ReportInput, f: &FitResult, training: bool) -> Vec<String> {
    let gpu = if f.gpus > 0 && f.gpu_capacity.0 > 0 {
        format!(
            "{} / {}",
            f.gpu_required.display_gib(),
            f.gpu_capacity.display_gib()
        )
    } else {
        crate::core::format::MISSING.into()
    };
    // A machine that does not fit may not have sized its RAM side: say so rather than "0 B".
    let ram_need = if f.verdict == Verdict::None && f.ram_required.0 == 0 {
        crate::core::format::MISSING.to_string()
    } else {
        f.ram_required.display_gib()
    };
    let ram = format!("{ram_need} / {}", f.ram_capacity.display_gib());
    let mut r = vec![
        f.name.clone(),
        hardware(input, f),
        f.verdict_text(),
        gpu,
        ram,
        display_signed_gib(f.headroom_bytes),
    ];
    if training {
        match &f.training {
            Some(t) => r.extend([
                duration(t.step_seconds),
                rate(t.tokens_per_s),
                duration(t.run_hours * 3600.0),
                usd(t.run_usd),
            ]),
            None => r.extend([
                crate::core::format::MISSING.into(),
                crate::core::format::MISSING.into(),
                crate::core::format::MISSING.into(),
                crate::core::format::MISSING.into(),
            ]),
        }
    } else {
        r.extend([
            rate(f.decode_tokens_per_s),
            rate(f.prefill_tokens_per_s),
            duration(f.ttft_s),
            usd(f.usd_per_million_tokens),
        ]);
    }
    r
}

/// The speed-model constants and fit settings: (name, value, meaning).
pub(crate) fn settings_rows(st: &FitSettings) -> Vec<(&'static str, String, &'static str)> {
    let k = &st.speed;
    let pct = crate::core::format::percent;
    let mut rows = vec![
        (
            "CPU bandwidth efficiency",
            pct(k.cpu_bandwidth_efficiency),
            "share of peak DRAM bandwidth ZeRO-Offload's CPU Adam reaches",
        ),
        (
            "PCIe efficiency",
            pct(k.pcie_efficiency),
            "share of one-direction PCIe bandwidth bulk copies reach",
        ),
        (
            "Unified CPU bandwidth share",
            pct(k.unified_cpu_bandwidth_fraction),
            "share of a unified-memory chip's bandwidth its CPU cores reach (M1 Max: ~243 of 400 GB/s, AnandTech)",
        ),
        (
            "Training MFU",
            pct(k.training_mfu),
            "model FLOPs utilisation during training",
        ),
        (
            "CPU FLOP per cycle per core",
            format!("{}", k.cpu_flops_per_cycle),
            "FP32 (AVX2: 2 FMA × 8 lanes × 2)",
        ),
        (
            "CPU clock",
            format!("{} GHz", k.cpu_ghz),
            "assumed for CPU FLOPS",
        ),
        (
            "Speed model",
            "docs/speed.md".to_string(),
            "bytes read per token ÷ achievable bandwidth + fixed per-layer cost; prefill FLOPs ÷ the kernel's rate",
        ),
    ];
    for b in Backend::ALL {
        rows.push((
            b.label(),
            formula_text(b, k),
            "throughput profile (constants and sources: docs/speed.md)",
        ));
    }
    rows.extend(vec![
        (
            "Electricity",
            format!("${}/kWh", st.electricity_usd_per_kwh),
            "running cost of owned machines",
        ),
        (
            "OS reserve",
            format!(
                "max({}, {:.0} % of RAM)",
                st.os_reserve.display_gib(),
                st.os_reserve_fraction * 100.0
            ),
            "RAM kept for the OS and other programs",
        ),
        (
            "APU GPU share",
            pct(st.apu_gpu_fraction),
            "unified memory an AMD APU's GPU may use when the catalog gives no limit",
        ),
        (
            "Offloaded layers",
            match st.split_style {
                SplitStyle::CpuLayers => "run on the CPU (llama.cpp -ngl)".to_string(),
                SplitStyle::Streaming => {
                    "stream over PCIe (accelerate, vLLM --cpu-offload-gb)".to_string()
                }
            },
            "how layers that do not fit on the GPU are run",
        ),
    ]);
    rows
}

/// Per-GPU and host bytes of each component kind, for the chart: (kind, per GPU, host).
pub(crate) fn kind_split(e: &Estimate) -> Vec<(ComponentKind, u64, u64)> {
    ComponentKind::ALL
        .iter()
        .map(|&k| (k, e.per_gpu_kind(k).0, e.host_kind(k).0))
        .collect()
}
