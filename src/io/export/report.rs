//! The sizing report: one input ([`ReportInput`]), three formats ([`ReportFormat`]).
//!
//! The content is assembled here as plain (unescaped) rows; `markdown.rs` and `html.rs` escape
//! and lay them out, and the JSON form reuses the CLI contract shapes of `io::json`.

use super::launch::{LaunchSetting, launch_settings};
use super::{ExportError, html, markdown};
use crate::core::catalog::Catalog;
use crate::core::estimate::Estimate;
use crate::core::fit::{FitResult, FitSettings};
use crate::core::format::group_digits;
use crate::core::recommend::{Constraints, Recommendations, recommend};
use crate::core::scenario::{Scenario, SplitStyle};
use crate::core::speed::{Backend, formula_text};
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
            crate::io::catalog::quality(),
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
/// `"serving"`, `"cluster"` (the `cluster --json` shape per listed machine), `"quality"` (the
/// weights' and KV cache's, as `estimate --json` has it), `"launch"`,
/// `"generated"` and `"version"`.
pub fn report_json(input: &ReportInput) -> Value {
    let mut v = estimate_json(input.estimate);
    v["recommendations"] =
        crate::io::json::recommend_json(input.scenario, &input.recommendations());
    v["fits"] = Value::Array(input.fits.iter().map(fit_json).collect());
    v["serving"] = super::report_serving::json(input);
    v["cluster"] = super::report_cluster::json(input);
    v["scenario"] = crate::io::json::scenario_json(input.scenario);
    v["quality"] =
        crate::io::json::scenario_quality_json(input.scenario, crate::io::catalog::quality());
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

pub(crate) use super::report_fits::{
    RECOMMEND_COLUMNS, fit_columns, fit_row, kind_split, placement_label, recommend_rows,
    recommend_unmet, totals,
};
pub(crate) use super::report_scenario::scenario_rows;

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
            format!(
                "{}/kWh",
                crate::core::format::usd_as_given(st.electricity_usd_per_kwh)
            ),
            "running cost of owned machines",
        ),
        (
            "OS reserve",
            format!(
                "max({}, {} of RAM)",
                st.os_reserve.display_gib(),
                pct(st.os_reserve_fraction)
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
