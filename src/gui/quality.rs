//! The size-vs-quality chart under the precision pickers: for the current model, each precision
//! with a published figure at its weights' size (x, GiB) and mean KL divergence to the 16-bit
//! model (y, log axis). Measured figures are filled dots, figures carried over from another
//! model hollow ones, the chosen precision a ringed diamond; the 16-bit reference (KLD 0, off a
//! log axis), the precisions published only as benchmark accuracy or ΔPPL (no KLD to place them) and
//! the unmeasured precisions are named under the chart. The points come from
//! `Derived::precision_costs` (cached with the estimate), so drawing asks the core nothing.

use super::style::{hint, still_plot};
use crate::core::format;
use crate::core::precision::WeightPrecision;
use crate::core::quality::{Basis, PrecisionCost, Quality};
use egui::{Color32, RichText, Ui, vec2};
use egui_plot::{GridMark, MarkerShape, Points};

const MEASURED: Color32 = Color32::from_rgb(70, 140, 220);
const CARRIED: Color32 = Color32::from_rgb(200, 140, 60);
const CHOSEN: Color32 = Color32::from_rgb(220, 60, 90);

/// One point of the chart: a precision with a KLD above zero.
pub(crate) struct Dot {
    pub precision: WeightPrecision,
    pub measured: bool,
    /// (weights GiB, log10 KLD).
    pub at: [f64; 2],
    /// The hover text: the picker's row for this precision.
    pub label: String,
}

/// The chart's points and what it names under them.
pub(crate) struct ChartData {
    pub dots: Vec<Dot>,
    /// The 16-bit formats (KLD 0 by definition).
    pub reference: Vec<WeightPrecision>,
    /// The precisions without a published figure.
    pub unmeasured: Vec<WeightPrecision>,
    /// The precisions published as accuracy recovery or ΔPPL only (no KLD to place them on this
    /// axis).
    pub accuracy_only: Vec<WeightPrecision>,
}

/// Sorts the costs into points, the reference and the unmeasured.
pub(crate) fn chart_data(costs: &[PrecisionCost<'_>]) -> ChartData {
    let mut d = ChartData {
        dots: Vec::new(),
        reference: Vec::new(),
        unmeasured: Vec::new(),
        accuracy_only: Vec::new(),
    };
    for c in costs {
        match (&c.quality, c.quality.kld()) {
            (Quality::Reference, _) => d.reference.push(c.precision),
            (Quality::Figure { basis, .. }, Some(k)) if k > 0.0 => d.dots.push(Dot {
                precision: c.precision,
                measured: *basis == Basis::Measured,
                at: [c.weights.as_gib(), k.log10()],
                label: c.row_label(),
            }),
            // A figure of 0 (none published so far) would sit at −∞: named with the reference.
            (Quality::Figure { .. }, Some(_)) => d.reference.push(c.precision),
            // Accuracy recovery or ΔPPL only: no KLD to place it on this axis.
            (Quality::Figure { .. }, None) => d.accuracy_only.push(c.precision),
            _ => d.unmeasured.push(c.precision),
        }
    }
    d
}

/// Grid marks on the GiB axis: every 1, 2, 5, 10, … GiB, the step that leaves ~64 px between
/// labels (egui_plot labels a mark only when its `step_size` spans 60 px; `base_step_size` is
/// the value 8 px span).
fn gib_marks(g: egui_plot::GridInput) -> Vec<GridMark> {
    let (lo, hi) = g.bounds;
    let per_64px = g.base_step_size * 8.0;
    let step = [
        0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0,
    ]
    .into_iter()
    .find(|s| *s >= per_64px)
    .unwrap_or(2000.0);
    let mut v = Vec::new();
    // From 0 up (sizes are not negative); `+ 0.0` writes −0 as 0.
    let mut x = ((lo / step).ceil() * step).max(0.0) + 0.0;
    while x <= hi {
        v.push(GridMark {
            value: x,
            step_size: step,
        });
        x += step;
    }
    v
}

/// Draws the chart for `costs`, with `chosen` highlighted.
pub(crate) fn chart(ui: &mut Ui, costs: &[PrecisionCost<'_>], chosen: WeightPrecision) {
    let d = chart_data(costs);
    let names = |ps: &[WeightPrecision]| {
        ps.iter()
            .map(|p| p.label().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let measured = d.dots.iter().filter(|p| p.measured).count();
    let summary = format!(
        "{}: {} measured on this model, {} carried over",
        format::count(
            d.dots.len() as u64,
            "precision with a figure",
            "precisions with a figure"
        ),
        measured,
        d.dots.len() - measured
    );
    // A margin on the right: the panel's scroll bar floats over its edge.
    let width = (ui.available_width() - 10.0).max(120.0);
    let dots = &d.dots;
    hint(
        ui,
        "Mean KL divergence to the 16-bit model (log scale; lower is closer) against the weights' size",
    );
    let r = still_plot("size-vs-quality", vec2(width, 180.0))
        .x_axis_label("weights, GiB")
        .x_axis_formatter(|m, _| format::tick(m.value))
        .x_grid_spacer(gib_marks)
        .y_axis_formatter(|m, _| format::log_tick(m.value))
        .y_grid_spacer(|g| super::style::decade_marks(g, f64::INFINITY))
        .y_axis_min_width(36.0)
        .include_x(0.0)
        .label_formatter(|pos| match pos {
            egui_plot::HoverPosition::NearDataPoint { plot_name, .. } => {
                Some(plot_name.to_string())
            }
            _ => None,
        })
        .show(ui, |pu| {
            for (i, p) in dots.iter().enumerate() {
                let color = if p.measured { MEASURED } else { CARRIED };
                pu.points(
                    Points::new(p.label.clone(), vec![p.at])
                        .color(color)
                        .radius(3.5)
                        .filled(p.measured)
                        .shape(MarkerShape::Circle)
                        .id(("size-vs-quality", i)),
                );
                if p.precision == chosen {
                    pu.points(
                        Points::new(p.label.clone(), vec![p.at])
                            .color(CHOSEN)
                            .radius(7.0)
                            .filled(false)
                            .shape(MarkerShape::Diamond)
                            .id(("size-vs-quality", "chosen")),
                    );
                }
            }
        });
    let _ = r
        .response
        .accessible_name(format!("Size vs quality chart: {summary}"));
    // The key, in the points' colours (the body font has no dot glyphs).
    ui.horizontal_wrapped(|ui| {
        for (text, color) in [
            ("filled: measured", MEASURED),
            ("hollow: carried over", CARRIED),
            ("diamond: chosen", CHOSEN),
        ] {
            ui.label(RichText::new(text).color(color).size(11.0));
        }
    });
    hint(ui, summary);
    // The chosen precision in words (the diamond; a reference or unmeasured one has no point).
    if let Some(c) = costs.iter().find(|c| c.precision == chosen) {
        let on_chart = dots.iter().any(|p| p.precision == chosen);
        let off = if on_chart { "" } else { ", not on the chart" };
        hint(ui, format!("Chosen: {}{off}", c.row_label()));
    }
    if !d.reference.is_empty() {
        hint(ui, format!("Reference (KLD 0): {}", names(&d.reference)));
    }
    if !d.accuracy_only.is_empty() {
        let lines: Vec<String> = costs
            .iter()
            .filter(|c| d.accuracy_only.contains(&c.precision))
            .map(PrecisionCost::row_label)
            .collect();
        hint(
            ui,
            format!(
                "Published as benchmark accuracy or ΔPPL, not KLD (off this axis): {}",
                lines.join("; ")
            ),
        );
    }
    if !d.unmeasured.is_empty() {
        hint(ui, format!("Not measured: {}", names(&d.unmeasured)));
    }
}
