//! What a precision costs in quality: the published measurements of `catalogs/quality.ron`
//! (mean KL divergence to the 16-bit model, ΔPPL, top-token agreement), the rule that carries a
//! figure measured on one model to another, the named quality floors, and the order the
//! best-quality solver (`core::fit::solve_best_quality`) tries precisions in.
//!
//! **Carry-over rule** (stated once, shown on every surface as "carried over from …"): a figure
//! is *measured* when a row was measured on this very model (its catalog preset id). Otherwise it
//! is *carried over*: of the models the type was measured on in the same size class (under 20 B
//! parameters, or 20 B and over), the one that lost the most (largest KLD) — the conservative
//! choice; with no measurement in the class, the largest KLD of any model. Why not scale by size:
//! llama.cpp's own comparison (tools/perplexity/README.md, "LLaMA 2 vs. LLaMA 3 Quantization
//! comparison") measures the same type costing different models very different amounts and no
//! simple size trend — Q4_K_M: Llama 2 7B 0.0127, Llama 3 8B 0.0313, Llama 2 70B 0.0132, Llama 3
//! 70B 0.0554 — so a bigger model is not assumed to lose less, and a figure from another model is
//! an order of magnitude, not a measurement.
//!
//! **Two metrics, never mixed.** Most rows publish a KLD. Some formats (FP8, INT8 W8A8, W4A16
//! GPTQ) are published as *accuracy recovery* instead: the quantised model's score on a benchmark
//! suite as a percentage of the 16-bit model's (`recovery_pct`). Such a figure is shown as
//! itself and never converted to a KLD. A precision is looked up by KLD first; only when no
//! model has a KLD for it does its accuracy recovery stand (measured or carried over by the same
//! rule, the *lowest* recovery being the worst). Having no KLD, a recovery-only precision is
//! never within a `--max-kld` floor and is not ranked by the best-quality solver: its loss cannot
//! be placed on the KLD scale the floors and the ranking use.
//!
//! **A third metric, ΔPPL.** Some sources (the AWQ paper, arXiv 2306.00978 Table 4) publish only
//! the perplexity of the quantised and the 16-bit model on one text. Such a row (`delta_ppl`, no
//! KLD, no recovery) is shown as "ΔPPL +0.13 vs FP16 on …", with its dataset and context, and
//! is, like a recovery-only one, never within a KLD floor and not ranked: a perplexity difference
//! depends on the model's own perplexity and on the text and context, so it is not on the KLD scale
//! and not comparable with the llama.cpp rows (Wikitext-2 at 512 tokens) either.
//!
//! **Which figure stands.** A figure measured on this very model, in any metric (KLD, then
//! recovery, then ΔPPL), before one carried over; carried over, KLD first, then recovery (a ratio
//! of scores, which carries to another model better than an absolute perplexity difference), then
//! ΔPPL.
//!
//! Pure: the table is passed in (`io::catalog::quality` loads the built-in file).

use super::estimate::{ComponentKind, estimate};
use super::format;
use super::precision::{KvPrecision, KvTypes, WeightPrecision};
use super::scenario::Scenario;
use super::teach::effective_bits;
use super::units::Bytes;
use serde::{Deserialize, Serialize};

/// What a row measures the quantisation of.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum QualityKind {
    /// Weights at `precision` (a `--weights` name), KV cache at 16 bits.
    Weights,
    /// The KV cache at `precision` (a `--kv` value, `k` or `k/v`) against a 16-bit cache, the
    /// weights the same in both runs (16-bit in llama.cpp PR #7412; one quantised file in PR
    /// #21551, the row's `detail` says which).
    Kv,
}

/// One published measurement (`catalogs/quality.ron`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QualityRow {
    pub id: String,
    pub kind: QualityKind,
    /// `--weights` name (Weights) or `--kv` value (Kv).
    pub precision: String,
    /// The importance matrix the file was quantised with ("WT 10m": 10 million Wikitext
    /// tokens), `None` without one.
    #[serde(default)]
    pub imatrix: Option<String>,
    /// The catalog preset the measurement was made on; with `no_preset`, an id of the source's
    /// model that is not a preset (LLaMA 1 7B: `llama-1-7b`), whose figures are only ever carried
    /// over.
    pub model: String,
    /// The measured model has no catalog preset (`model` is then checked not to be one).
    #[serde(default)]
    pub no_preset: bool,
    /// The model as the source names it ("LLaMA 3 8B").
    pub model_name: String,
    /// Parameters of that model, in billions (the size class of the carry-over rule).
    pub params_b: f64,
    /// What the quantised model is compared with ("FP16").
    pub baseline: String,
    /// Mean KL divergence of the token distributions to the baseline's (nats per token).
    #[serde(default)]
    pub kld: Option<f64>,
    /// Perplexity minus the baseline's.
    #[serde(default)]
    pub delta_ppl: Option<f64>,
    /// Perplexity of the quantised model.
    #[serde(default)]
    pub ppl: Option<f64>,
    /// How often both models rank the same token first, in percent.
    #[serde(default)]
    pub same_top_pct: Option<f64>,
    /// The model file's size as the source prints it, GiB.
    #[serde(default)]
    pub size_gib: Option<f64>,
    /// Perplexity/KLD: the text evaluated; accuracy recovery: the benchmark suite.
    pub dataset: String,
    /// Tokens per evaluated chunk (perplexity/KLD rows; `None` for benchmark suites).
    #[serde(default)]
    pub context: Option<u64>,
    /// The quantised model's benchmark score as a percentage of the baseline's on `dataset`
    /// (rows that publish accuracy, not KLD).
    #[serde(default)]
    pub recovery_pct: Option<f64>,
    /// The source's own name for how the weights were quantised, where it says more than the
    /// precision ("W8A8-INT: SmoothQuant + GPTQ").
    #[serde(default)]
    pub method: Option<String>,
    /// The primary source: a repository file at a commit, a pull request, a paper and table.
    pub source: String,
    /// Where in the source, and how the numbers were read.
    pub detail: String,
}

/// The measurements, as loaded from `catalogs/quality.ron`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QualityTable {
    pub quality: Vec<QualityRow>,
}

/// How a figure relates to the model it is shown for.
#[derive(Clone, Debug, PartialEq)]
pub enum Basis {
    /// Measured on this model.
    Measured,
    /// Measured on another model (its name) and carried over by the rule above.
    CarriedOver(String),
}

impl Basis {
    pub fn label(&self) -> String {
        match self {
            Basis::Measured => "measured".into(),
            Basis::CarriedOver(from) => format!("carried over from {from}"),
        }
    }
    pub const fn key(&self) -> &'static str {
        match self {
            Basis::Measured => "measured",
            Basis::CarriedOver(_) => "carried_over",
        }
    }
}

/// The quality of one precision for one model.
#[derive(Clone, Debug, PartialEq)]
pub enum Quality<'a> {
    /// 16- or 32-bit floats: the baseline every measurement compares with (KLD 0 by definition).
    Reference,
    /// A published figure, measured on this model or carried over.
    Figure { row: &'a QualityRow, basis: Basis },
    /// Nothing published in the table for this precision.
    Unmeasured,
}

impl Quality<'_> {
    /// Mean KLD to the baseline: 0 for the reference, `None` when not measured.
    pub fn kld(&self) -> Option<f64> {
        match self {
            Quality::Reference => Some(0.0),
            Quality::Figure { row, .. } => row.kld,
            Quality::Unmeasured => None,
        }
    }
    /// Accuracy recovery, percent of the baseline's score: only for a figure published that way
    /// (the reference is not given one: no benchmark compares it with itself).
    pub fn recovery(&self) -> Option<f64> {
        match self {
            Quality::Figure { row, .. } => row.recovery_pct,
            _ => None,
        }
    }
    /// Perplexity difference to the baseline: only for a figure that has one (the reference is
    /// not given one).
    pub fn delta_ppl(&self) -> Option<f64> {
        match self {
            Quality::Figure { row, .. } => row.delta_ppl,
            _ => None,
        }
    }
    /// The metric the figure rests on: KLD where the row has one (and the reference), else
    /// accuracy recovery, else ΔPPL; `None` when nothing is published.
    pub fn metric(&self) -> Option<Metric> {
        match self {
            Quality::Reference => Some(Metric::Kld),
            Quality::Figure { row, .. } => {
                METRIC_ORDER.into_iter().find(|m| m.value(row).is_some())
            }
            Quality::Unmeasured => None,
        }
    }
    /// Whether the figure is within a KLD floor (an unmeasured precision never is: it cannot be
    /// shown to be; nor is one with only accuracy recovery or ΔPPL, which are not on the KLD
    /// scale).
    pub fn within(&self, max_kld: Option<f64>) -> bool {
        match (max_kld, self.kld()) {
            (None, _) => true,
            (Some(m), Some(k)) => k <= m,
            (Some(_), None) => false,
        }
    }
}

impl Quality<'_> {
    /// The short form a picker shows beside a size: "KLD 0.0313 (LLaMA 3 8B, measured)".
    pub fn short(&self) -> String {
        match self {
            Quality::Reference => "reference".into(),
            Quality::Figure { row, basis } => match (row.kld, row.recovery_pct, row.delta_ppl) {
                (None, Some(r), _) => format!(
                    "{} of {} on {} ({})",
                    format::percent_tenths(r),
                    row.baseline,
                    row.dataset,
                    provenance(row, basis)
                ),
                (None, None, Some(d)) => format!(
                    "ΔPPL {} vs {} on {}{} ({})",
                    format::signed_sig3(d),
                    row.baseline,
                    row.dataset,
                    chunks(row),
                    provenance(row, basis)
                ),
                (k, _, _) => format!(
                    "KLD {} ({})",
                    k.map_or(format::MISSING.into(), format::sig3),
                    provenance(row, basis)
                ),
            },
            Quality::Unmeasured => "quality not measured".into(),
        }
    }
    /// The full line: every figure, the model, the basis, the dataset and context.
    pub fn long(&self) -> String {
        match self {
            Quality::Reference => {
                "reference: the 16-bit model the measurements compare with (KLD 0)".into()
            }
            Quality::Figure { row, basis } => {
                let mut parts = Vec::new();
                if let Some(k) = row.kld {
                    parts.push(format!("KLD {}", format::sig3(k)));
                }
                if let Some(d) = row.delta_ppl {
                    let alone = row.kld.is_none() && row.recovery_pct.is_none();
                    let note = if alone {
                        " (perplexity difference on this text, not a KLD)"
                    } else {
                        ""
                    };
                    parts.push(format!("ΔPPL {}{note}", format::signed_sig3(d)));
                }
                if let Some(t) = row.same_top_pct {
                    parts.push(format!("same top token {}", format::percent_tenths(t)));
                }
                if let Some(r) = row.recovery_pct {
                    parts.push(format!(
                        "accuracy recovery {} (benchmark score, not a KLD)",
                        format::percent_tenths(r)
                    ));
                }
                format!(
                    "{} vs {} ({}; {}{})",
                    parts.join(" · "),
                    row.baseline,
                    provenance(row, basis),
                    row.dataset,
                    chunks(row),
                )
            }
            Quality::Unmeasured => {
                "not measured: no published KLD, ΔPPL or accuracy for this precision in catalogs/quality.ron"
                    .into()
            }
        }
    }
}

/// ", 2048-token chunks" for a row measured over chunks of text, "" for a benchmark suite.
fn chunks(row: &QualityRow) -> String {
    row.context
        .map(|c| format!(", {}-token chunks", format::group_digits(c)))
        .unwrap_or_default()
}

/// "LLaMA 3 8B, measured", "LLaMA 3 8B, imatrix WT 10m, carried over from LLaMA 3 8B",
/// "Llama 3.1 8B Instruct, W4A16-INT (GPTQ), measured".
fn provenance(row: &QualityRow, basis: &Basis) -> String {
    let imatrix = row
        .imatrix
        .as_deref()
        .map(|m| format!(", imatrix {m}"))
        .into_iter()
        .chain(row.method.as_deref().map(|m| format!(", {m}")))
        .collect::<String>();
    match basis {
        Basis::Measured => format!("{}{imatrix}, measured", row.model_name),
        Basis::CarriedOver(from) => format!("carried over from {from}{imatrix}"),
    }
}

/// Size classes of the carry-over rule: under 20 B parameters, or 20 B and over.
const LARGE_B: f64 = 20.0;

/// The carried-over figure of `rows` (one per measured model) for a model of `params`: the
/// worst of its size class, else the worst of any.
fn carried_over<'a>(
    metric: Metric,
    rows: &[&'a QualityRow],
    params: u64,
) -> Option<&'a QualityRow> {
    let bad = |r: &QualityRow| metric.badness(r).unwrap_or(f64::NEG_INFINITY);
    let large = params as f64 / 1e9 >= LARGE_B;
    let worst = |class: Option<bool>| -> Option<&'a QualityRow> {
        rows.iter()
            .filter(|r| class.is_none_or(|c| (r.params_b >= LARGE_B) == c))
            .max_by(|a, b| bad(a).total_cmp(&bad(b)))
            .copied()
    };
    worst(Some(large)).or_else(|| worst(None))
}

/// Which published figure a lookup reads, and how bad a row's figure is (larger = worse).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Mean KL divergence to the baseline (the floors' scale).
    Kld,
    /// Benchmark score as a percentage of the baseline's.
    Recovery,
    /// Perplexity minus the baseline's, on the row's text and context.
    DeltaPpl,
}

/// The order figures are read in, for a figure measured on the model and for one carried over.
const METRIC_ORDER: [Metric; 3] = [Metric::Kld, Metric::Recovery, Metric::DeltaPpl];

impl Metric {
    /// The JSON `metric` value: "kld", "accuracy_recovery", "delta_ppl".
    pub const fn key(self) -> &'static str {
        match self {
            Metric::Kld => "kld",
            Metric::Recovery => "accuracy_recovery",
            Metric::DeltaPpl => "delta_ppl",
        }
    }
    /// The row's figure in this metric.
    fn value(self, r: &QualityRow) -> Option<f64> {
        match self {
            Metric::Kld => r.kld,
            Metric::Recovery => r.recovery_pct,
            Metric::DeltaPpl => r.delta_ppl,
        }
    }
    /// The row's figure as a badness: its KLD, the share of the score it lost, its ΔPPL.
    fn badness(self, r: &QualityRow) -> Option<f64> {
        match self {
            Metric::Recovery => r.recovery_pct.map(|p| -p),
            m => m.value(r),
        }
    }
}

impl QualityTable {
    /// The figure for `name` on `model` (preset id, if any) of `params` parameters: one measured
    /// on the model in any metric (KLD, recovery, ΔPPL), else one carried over (same order).
    fn lookup(
        &self,
        kind: QualityKind,
        name: &str,
        model: Option<&str>,
        params: u64,
    ) -> Quality<'_> {
        let per_metric = METRIC_ORDER.map(|m| (m, self.per_model(m, kind, name)));
        let measured = per_metric.iter().find_map(|(_, rows)| {
            model.and_then(|id| rows.iter().find(|r| r.model == id && !r.no_preset))
        });
        if let Some(r) = measured {
            return Quality::Figure {
                row: r,
                basis: Basis::Measured,
            };
        }
        per_metric
            .iter()
            .find_map(|(m, rows)| carried_over(*m, rows, params))
            .map_or(Quality::Unmeasured, |r| Quality::Figure {
                row: r,
                basis: Basis::CarriedOver(r.model_name.clone()),
            })
    }

    /// One row per measured model with a figure in `metric`: without an importance matrix when
    /// there is one (the default of llama-quantize, and the conservative figure), else the
    /// imatrix row; of several (benchmark suites), the worst.
    fn per_model(&self, metric: Metric, kind: QualityKind, name: &str) -> Vec<&QualityRow> {
        let bad = |r: &QualityRow| metric.badness(r).unwrap_or(f64::NEG_INFINITY);
        let mut per_model: Vec<&QualityRow> = Vec::new();
        let rows = self
            .quality
            .iter()
            .filter(|r| r.kind == kind && r.precision == name && metric.badness(r).is_some());
        for r in rows {
            match per_model.iter_mut().find(|p| p.model == r.model) {
                Some(p) if p.imatrix.is_some() && r.imatrix.is_none() => *p = r,
                Some(p) if p.imatrix.is_some() == r.imatrix.is_some() && bad(r) > bad(p) => *p = r,
                Some(_) => {}
                None => per_model.push(r),
            }
        }
        per_model
    }

    /// The quality of weights at `p` on a model (its preset id, if any, and parameter count).
    pub fn weights(&self, p: WeightPrecision, model: Option<&str>, params: u64) -> Quality<'_> {
        if matches!(
            p,
            WeightPrecision::Fp32 | WeightPrecision::Fp16 | WeightPrecision::Bf16
        ) {
            return Quality::Reference;
        }
        self.lookup(QualityKind::Weights, p.cli_name(), model, params)
    }

    /// The quality of a KV cache of types `kv` on a model.
    pub fn kv(&self, kv: KvTypes, model: Option<&str>, params: u64) -> Quality<'_> {
        let float =
            |p: KvPrecision| matches!(p, KvPrecision::Fp32 | KvPrecision::Fp16 | KvPrecision::Bf16);
        if float(kv.k) && float(kv.v) {
            return Quality::Reference;
        }
        self.lookup(QualityKind::Kv, &kv.cli_name(), model, params)
    }
}

/// The model a scenario's quality is looked up for: its preset id and parameter count.
pub fn model_of(s: &Scenario) -> (Option<&str>, u64) {
    let params = s
        .model
        .nominal_params
        .unwrap_or_else(|| s.model.arch_param_count().total);
    (s.model_id.as_deref(), params)
}

impl QualityTable {
    /// The quality of the scenario's weights.
    pub fn of_weights(&self, s: &Scenario) -> Quality<'_> {
        let (id, n) = model_of(s);
        self.weights(s.weights, id, n)
    }
    /// The quality of the scenario's KV cache.
    pub fn of_kv(&self, s: &Scenario) -> Quality<'_> {
        let (id, n) = model_of(s);
        self.kv(s.kv, id, n)
    }
}

/// One weight precision of a scenario: what its weights take and what it costs in quality, the
/// two things a person choosing a precision weighs (the window's picker and its size-vs-quality
/// chart).
#[derive(Clone, Debug, PartialEq)]
pub struct PrecisionCost<'a> {
    pub precision: WeightPrecision,
    /// Average bits per weight on this model, block scales and the tensors a K-quant mix keeps
    /// wider included (`core::teach::effective_bits`).
    pub bits: f64,
    /// The weights' bytes in the estimate of the scenario at this precision.
    pub weights: Bytes,
    pub quality: Quality<'a>,
}

/// Each precision of `options` for the scenario: its weights' size and its quality. An imported
/// file's exact bytes stand for the precision the scenario holds; another precision is sized
/// from the architecture's tensors, as picking it does (`ModelSpec::drop_file_weights`).
pub fn precision_costs<'a>(
    s: &Scenario,
    table: &'a QualityTable,
    options: &[WeightPrecision],
) -> Vec<PrecisionCost<'a>> {
    options
        .iter()
        .map(|&p| {
            let mut sp = Scenario {
                weights: p,
                ..s.clone()
            };
            if p != s.weights {
                sp.model.drop_file_weights();
            }
            PrecisionCost {
                precision: p,
                bits: effective_bits(&sp.model, p),
                weights: estimate(&sp).kind_total(ComponentKind::Weights),
                quality: table.of_weights(&sp),
            }
        })
        .collect()
}

impl PrecisionCost<'_> {
    /// The picker's row: "GGUF Q4_K_M (4.85 bits avg.) · 4.58 GiB · KLD 0.0313 (LLaMA 3 8B,
    /// measured)".
    pub fn row_label(&self) -> String {
        format!(
            "{} · {} · {}",
            self.name(),
            format::bytes(self.weights),
            self.quality.short()
        )
    }
    /// The precision with its average bits: "GGUF Q4_K_M (4.85 bits avg.)".
    pub fn name(&self) -> String {
        format!(
            "{} ({} bits avg.)",
            self.precision.label(),
            format::bits(self.bits)
        )
    }
}

/// A named quality floor: the largest mean KLD it accepts, and the measured types it is set by
/// (LLaMA 3 8B, llama.cpp's scoreboard). headroom's own bands, drawn between measured types.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct QualityLevel {
    pub name: &'static str,
    pub max_kld: f64,
    pub anchor: &'static str,
}

/// The named floors of `--max-kld`, best first.
pub const QUALITY_LEVELS: [QualityLevel; 4] = [
    QualityLevel {
        name: "lossless",
        max_kld: 0.002,
        anchor: "Q8_0 (KLD 0.0014) and the 16-bit formats",
    },
    QualityLevel {
        name: "near",
        max_kld: 0.012,
        anchor: "down to Q5_K_M (0.0108); Q6_K 0.0055",
    },
    QualityLevel {
        name: "good",
        max_kld: 0.05,
        anchor: "down to IQ4_XS (0.0363); Q4_K_M 0.0313",
    },
    QualityLevel {
        name: "usable",
        max_kld: 0.2,
        anchor: "down to IQ3_XXS (0.184); Q3_K_M 0.102",
    },
];

impl QualityLevel {
    /// The picker's line: "good (KLD ≤ 0.05)".
    pub fn label(&self) -> String {
        format!(
            "{} (KLD ≤ {})",
            self.name,
            format::input_value(self.max_kld)
        )
    }
}

/// A floor in words: its level's label when it is one ("good (KLD ≤ 0.05)"), "KLD ≤ 0.03"
/// otherwise, "any" without a floor.
pub fn floor_label(max_kld: Option<f64>) -> String {
    match max_kld {
        None => "any".into(),
        Some(m) => QUALITY_LEVELS.iter().find(|l| l.max_kld == m).map_or_else(
            || format!("KLD ≤ {}", format::input_value(m)),
            |l| l.label(),
        ),
    }
}

/// A `--max-kld` value: a KLD ≥ 0, or a level name (case-insensitive).
pub fn parse_max_kld(s: &str) -> Result<f64, String> {
    let t = s.trim();
    if let Some(l) = QUALITY_LEVELS
        .iter()
        .find(|l| l.name.eq_ignore_ascii_case(t))
    {
        return Ok(l.max_kld);
    }
    let names: Vec<&str> = QUALITY_LEVELS.iter().map(|l| l.name).collect();
    match t.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!(
            "expected a mean KL divergence ≥ 0 (e.g. 0.05) or one of {}",
            names.join(", ")
        )),
    }
}

/// The level a KLD falls in (the best one that accepts it), `None` past "usable".
pub fn level_of(kld: f64) -> Option<&'static QualityLevel> {
    QUALITY_LEVELS.iter().find(|l| kld <= l.max_kld)
}

/// Weight precisions with a quality figure or the reference, best first (smallest KLD; the
/// reference first, BF16 before FP16 before FP32 by size), for the best-quality solver. A
/// precision that is not measured is left out: its quality cannot be ranked.
pub fn ranked_weights(
    table: &QualityTable,
    model: Option<&str>,
    params: u64,
) -> Vec<(WeightPrecision, f64)> {
    let mut v: Vec<(WeightPrecision, f64)> = WeightPrecision::ALL
        .into_iter()
        .filter(|p| *p != WeightPrecision::Fp32)
        .filter_map(|p| table.weights(p, model, params).kld().map(|k| (p, k)))
        .collect();
    // Equal quality: the smaller first.
    v.sort_by(|a, b| {
        a.1.total_cmp(&b.1)
            .then(a.0.bits_per_weight().total_cmp(&b.0.bits_per_weight()))
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(p: &str, model: &str, params_b: f64, kld: f64, imatrix: Option<&str>) -> QualityRow {
        QualityRow {
            id: format!("{model}-{p}"),
            kind: QualityKind::Weights,
            precision: p.into(),
            imatrix: imatrix.map(str::to_string),
            model: model.into(),
            no_preset: false,
            model_name: model.to_uppercase(),
            params_b,
            baseline: "FP16".into(),
            kld: Some(kld),
            delta_ppl: None,
            ppl: None,
            same_top_pct: None,
            size_gib: None,
            dataset: "wikitext-2".into(),
            context: Some(512),
            recovery_pct: None,
            method: None,
            source: "test".into(),
            detail: "test".into(),
        }
    }

    #[test]
    fn carry_over_is_the_worst_in_the_size_class() {
        let t = QualityTable {
            quality: vec![
                row("q4_k_m", "a-8b", 8.0, 0.03, None),
                row("q4_k_m", "a-8b", 8.0, 0.02, Some("WT")),
                row("q4_k_m", "b-7b", 7.0, 0.01, None),
                row("q4_k_m", "c-70b", 70.0, 0.05, None),
            ],
        };
        let w = WeightPrecision::Q4KM;
        // Measured: the row without an imatrix.
        assert_eq!(t.weights(w, Some("a-8b"), 8_000_000_000).kld(), Some(0.03));
        // A 9B model: the worse of the small class (a-8b), not the 70B.
        let q = t.weights(w, None, 9_000_000_000);
        assert_eq!(q.kld(), Some(0.03));
        assert!(
            matches!(q, Quality::Figure { basis: Basis::CarriedOver(ref f), .. } if f == "A-8B")
        );
        // A 32B model: the large class.
        assert_eq!(t.weights(w, None, 32_000_000_000).kld(), Some(0.05));
        assert_eq!(t.weights(WeightPrecision::Bf16, None, 1).kld(), Some(0.0));
        assert_eq!(
            t.weights(WeightPrecision::Awq4, None, 1),
            Quality::Unmeasured
        );
        assert!(!Quality::Unmeasured.within(Some(1.0)));
        assert!(Quality::Unmeasured.within(None));
    }

    #[test]
    fn a_measured_figure_of_any_metric_comes_before_one_carried_over() {
        let mut rec = row("gptq-4bit", "b-8b", 8.0, 0.0, None);
        (rec.kld, rec.recovery_pct) = (None, Some(93.0));
        let mut dppl = row("gptq-4bit", "c-7b", 7.0, 0.0, None);
        (dppl.kld, dppl.delta_ppl) = (None, Some(0.22));
        let t = QualityTable {
            quality: vec![rec, dppl],
        };
        let w = WeightPrecision::Gptq4;
        // Measured ΔPPL on c-7b, measured recovery on b-8b.
        let on_c = t.weights(w, Some("c-7b"), 7_000_000_000);
        assert_eq!(
            (on_c.metric(), on_c.delta_ppl()),
            (Some(Metric::DeltaPpl), Some(0.22))
        );
        assert_eq!(
            t.weights(w, Some("b-8b"), 1).metric(),
            Some(Metric::Recovery)
        );
        // Elsewhere the recovery is carried over before the ΔPPL.
        let q = t.weights(w, None, 9_000_000_000);
        assert_eq!(q.recovery(), Some(93.0));
        assert!(
            matches!(q, Quality::Figure { basis: Basis::CarriedOver(ref f), .. } if f == "B-8B")
        );
        // A ΔPPL-only or recovery-only figure is outside every floor.
        assert!(!on_c.within(Some(100.0)));
        assert_eq!(Quality::Reference.metric(), Some(Metric::Kld));
        assert_eq!(Quality::Unmeasured.metric(), None);
    }

    #[test]
    fn levels_and_parse() {
        assert_eq!(parse_max_kld("good"), Ok(0.05));
        assert_eq!(parse_max_kld(" Lossless "), Ok(0.002));
        assert_eq!(parse_max_kld("0.1"), Ok(0.1));
        assert!(parse_max_kld("-1").is_err());
        assert!(parse_max_kld("NaN").is_err());
        assert!(
            parse_max_kld("superb")
                .unwrap_err()
                .contains("lossless, near, good, usable")
        );
        assert_eq!(level_of(0.031).map(|l| l.name), Some("good"));
        assert_eq!(level_of(0.5), None);
    }
}
