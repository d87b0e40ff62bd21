//! The memory chart of the HTML report: an inline SVG with one stacked bar per GPU and one for
//! host RAM (weights, KV cache, activations, gradients, optimizer, master weights, overhead),
//! beside the usable capacity of each fitted machine as a horizontal line. No script, no
//! external resources; `<title>` children give hover tooltips.

use super::report::{ReportInput, kind_split};
use super::text::html;
use crate::core::estimate::ComponentKind;
use crate::core::fit::Verdict;
use crate::core::format;
use crate::core::units::{Bytes, GIB};
use std::fmt::Write as _;

const GREEN: &str = "#2e7d32";
const AMBER: &str = "#b26a00";
const RED: &str = "#c62828";

/// A GPU capacity line's colour from the machine's verdict: the whole model on the GPU (green),
/// layers offloaded or CPU fallback (amber), does not fit (red).
fn gpu_line_color(v: Verdict) -> &'static str {
    match v {
        Verdict::Gpu | Verdict::Unified => GREEN,
        Verdict::Offload | Verdict::Cpu | Verdict::Disk => AMBER,
        Verdict::None => RED,
    }
}

/// Capacity lines drawn per bar at most.
pub(crate) const MAX_LINES: usize = 8;

/// Width of one panel (one bar with its axis and capacity labels).
const COL_W: f64 = 500.0;
const PLOT_TOP: f64 = 28.0;
const PLOT_H: f64 = 280.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 12.0;
const BAR_W: f64 = 96.0;
const LABEL_GAP: f64 = 13.0;

/// The colour of each component kind (Tableau 10, readable in print and for most colour-blind
/// readers when paired with the legend).
pub(crate) fn color(k: ComponentKind) -> &'static str {
    match k {
        ComponentKind::Weights => "#4e79a7",
        ComponentKind::KvCache => "#f28e2b",
        ComponentKind::Activations => "#59a14f",
        ComponentKind::Gradients => "#e15759",
        ComponentKind::Optimizer => "#b07aa1",
        ComponentKind::MasterWeights => "#9c755f",
        ComponentKind::Overhead => "#bab0ac",
    }
}

struct Column {
    label: String,
    /// (kind, bytes) bottom to top.
    parts: Vec<(ComponentKind, u64)>,
    /// (machine name, capacity bytes, line colour).
    lines: Vec<(String, u64, &'static str)>,
}

impl Column {
    fn total(&self) -> u64 {
        self.parts.iter().fold(0u64, |a, p| a.saturating_add(p.1))
    }
}

/// A "nice" tick step (1, 2 or 5 × 10^k GiB) giving at most 6 ticks up to `max_gib`.
fn tick_step(max_gib: f64) -> f64 {
    let raw = (max_gib / 5.0).max(1e-3);
    let mag = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * mag >= raw {
            return m * mag;
        }
    }
    10.0 * mag
}

fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).collect::<String>() + "…"
    }
}

/// Spread label positions (sorted top to bottom) so none is closer than `LABEL_GAP`, inside
/// [lo, hi].
fn spread(ys: &mut [f64], lo: f64, hi: f64) {
    for i in 1..ys.len() {
        if ys[i] - ys[i - 1] < LABEL_GAP {
            ys[i] = ys[i - 1] + LABEL_GAP;
        }
    }
    if let Some(&last) = ys.last()
        && last > hi
    {
        let shift = last - hi;
        for y in ys.iter_mut() {
            *y -= shift;
        }
        for i in (0..ys.len().saturating_sub(1)).rev() {
            if ys[i + 1] - ys[i] < LABEL_GAP {
                ys[i] = ys[i + 1] - LABEL_GAP;
            }
        }
    }
    for y in ys.iter_mut() {
        *y = y.max(lo);
    }
}

/// The chart for the report's estimate and machines. Each bar has its own scale (VRAM and RAM
/// differ by an order of magnitude), drawn as a panel with its own axis.
pub(crate) fn svg(input: &ReportInput) -> String {
    let split = kind_split(input.estimate);
    let cols = columns(input, &split);
    let kinds: Vec<ComponentKind> = ComponentKind::ALL
        .iter()
        .copied()
        .filter(|k| split.iter().any(|x| x.0 == *k && (x.1 > 0 || x.2 > 0)))
        .collect();
    let width = COL_W * cols.len().max(1) as f64;
    let per_row = (((width - LEFT) / 150.0) as usize).max(1);
    let legend_rows = kinds.len().div_ceil(per_row).max(1);
    let height = PLOT_TOP + PLOT_H + 36.0 + 20.0 * legend_rows as f64 + 8.0;

    let mut o = String::new();
    let _ = write!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" aria-labelledby="chart-title chart-desc" font-family="system-ui, -apple-system, 'Segoe UI', sans-serif" font-size="12">"#
    );
    let _ = write!(
        o,
        r#"<title id="chart-title">Memory per GPU and in host RAM</title><desc id="chart-desc">Stacked bars of the memory components beside the usable capacity of each machine, in GiB.</desc>"#
    );
    if cols.is_empty() {
        let _ = write!(
            o,
            r##"<text x="{}" y="{}" text-anchor="middle" fill="#555">Nothing to show</text>"##,
            px(width / 2.0),
            px(PLOT_TOP + PLOT_H / 2.0)
        );
    }
    for (ci, c) in cols.iter().enumerate() {
        panel(&mut o, ci, c);
    }
    legend(&mut o, &kinds, per_row);
    o.push_str("</svg>");
    o
}

/// A coordinate as the drawing writes it ([`format::svg_coord`]).
fn px(x: f64) -> String {
    format::svg_coord(x)
}

/// The GPU bar (when anything is on a GPU) and the host bar, each with its machines' capacity
/// lines.
fn columns(input: &ReportInput, split: &[(ComponentKind, u64, u64)]) -> Vec<Column> {
    let e = input.estimate;
    let mut cols = Vec::new();
    let gpu_parts: Vec<(ComponentKind, u64)> = split
        .iter()
        .filter(|x| x.1 > 0)
        .map(|x| (x.0, x.1))
        .collect();
    if !gpu_parts.is_empty() {
        let lines = input
            .fits
            .iter()
            .filter(|f| f.gpus > 0 && f.gpu_capacity.0 > 0)
            .take(MAX_LINES)
            .map(|f| {
                (
                    f.name.to_string(),
                    f.gpu_capacity.0,
                    gpu_line_color(f.verdict),
                )
            })
            .collect();
        let label = if e.gpus > 1 {
            format!("Each GPU (× {})", e.gpus)
        } else {
            "GPU".to_string()
        };
        cols.push(Column {
            label,
            parts: gpu_parts,
            lines,
        });
    }
    let host_parts: Vec<(ComponentKind, u64)> = split
        .iter()
        .filter(|x| x.2 > 0)
        .map(|x| (x.0, x.2))
        .collect();
    if !host_parts.is_empty() {
        let lines = input
            .fits
            .iter()
            .take(MAX_LINES)
            .map(|f| {
                (
                    f.name.to_string(),
                    f.ram_capacity.0,
                    if f.fits() { GREEN } else { RED },
                )
            })
            .collect();
        cols.push(Column {
            label: "Host RAM".into(),
            parts: host_parts,
            lines,
        });
    }
    cols
}

/// The vertical scale of one panel: GiB at the top of its axis and the tick step.
struct Scale {
    top_gib: f64,
    step: f64,
}

impl Scale {
    fn of(c: &Column) -> Scale {
        let max_bytes = std::iter::once(c.total())
            .chain(c.lines.iter().map(|l| l.1))
            .max()
            .unwrap_or(0)
            .max(1);
        let max_gib = max_bytes as f64 / GIB as f64 * 1.08;
        let step = tick_step(max_gib);
        Scale {
            top_gib: (max_gib / step).ceil() * step,
            step,
        }
    }
    /// The y coordinate of `bytes`.
    fn y(&self, bytes: u64) -> f64 {
        PLOT_TOP + PLOT_H - (bytes as f64 / GIB as f64) / self.top_gib * PLOT_H
    }
}

/// One panel: its axis and grid, the stacked bar with its total and label, and the capacity
/// lines.
fn panel(o: &mut String, ci: usize, c: &Column) {
    let left = ci as f64 * COL_W + LEFT;
    let right = (ci + 1) as f64 * COL_W - RIGHT;
    let scale = Scale::of(c);
    let _ = write!(o, "<g>");
    axis(o, left, right, &scale);
    let x0 = left + 28.0;
    // Stacked segments.
    let mut acc = 0u64;
    for (k, b) in &c.parts {
        let y_top = scale.y(acc.saturating_add(*b));
        let y_bot = scale.y(acc);
        let bar_h = (y_bot - y_top).max(1.5);
        let _ = write!(
            o,
            r##"<rect x="{}" y="{}" width="{BAR_W}" height="{}" fill="{}" stroke="#fff" stroke-width="0.5"><title>{}: {}</title></rect>"##,
            px(x0),
            px(y_top),
            px(bar_h),
            color(*k),
            k.label(),
            Bytes(*b).display_gib()
        );
        acc = acc.saturating_add(*b);
    }
    let total = Bytes(c.total());
    let _ = write!(
        o,
        r##"<text x="{}" y="{}" text-anchor="middle" font-weight="600" fill="#222" stroke="#fff" stroke-width="3" paint-order="stroke">{}</text>"##,
        px(x0 + BAR_W / 2.0),
        px(scale.y(total.0) - 6.0),
        total.display_gib()
    );
    let _ = write!(
        o,
        r##"<text x="{}" y="{}" text-anchor="middle" font-weight="600" fill="#222">{}</text>"##,
        px(x0 + BAR_W / 2.0),
        px(PLOT_TOP + PLOT_H + 18.0),
        html(&c.label)
    );
    capacity_lines(o, c, &scale, x0, right);
    let _ = write!(o, "</g>");
}

/// The axis and grid of a panel.
fn axis(o: &mut String, left: f64, right: f64, scale: &Scale) {
    let mut tick = 0.0;
    while tick <= scale.top_gib + scale.step * 1e-6 {
        let yy = PLOT_TOP + PLOT_H - tick / scale.top_gib * PLOT_H;
        let _ = write!(
            o,
            r##"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#e6e6e6" stroke-width="1"/><text x="{}" y="{}" text-anchor="end" fill="#666">{}</text>"##,
            px(left),
            px(yy),
            px(right),
            px(yy),
            px(left - 6.0),
            px(yy + 4.0),
            format::tick(tick)
        );
        tick += scale.step;
    }
    let bottom = px(PLOT_TOP + PLOT_H);
    let _ = write!(
        o,
        r##"<text x="{}" y="{}" text-anchor="middle" fill="#666">GiB</text><line x1="{}" y1="{bottom}" x2="{}" y2="{bottom}" stroke="#888" stroke-width="1"/>"##,
        px(left - 24.0),
        px(PLOT_TOP - 12.0),
        px(left),
        px(right)
    );
}

/// The machines' capacity lines of a panel, their labels spread so they do not overlap.
fn capacity_lines(o: &mut String, c: &Column, scale: &Scale, x0: f64, right: f64) {
    let mut lines: Vec<(f64, &String, u64, &str)> = c
        .lines
        .iter()
        .map(|(n, b, col)| (scale.y(*b), n, *b, *col))
        .collect();
    lines.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut label_ys: Vec<f64> = lines.iter().map(|l| l.0 + 4.0).collect();
    spread(&mut label_ys, PLOT_TOP - 10.0, PLOT_TOP + PLOT_H + 4.0);
    let lx = x0 + BAR_W + 22.0;
    let max_chars = (((right - lx) / 6.4) as usize)
        .saturating_sub(10)
        .clamp(8, 60);
    for ((ly, name, b, stroke), label_y) in lines.iter().zip(label_ys) {
        let ly = px(*ly);
        let _ = write!(
            o,
            r##"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{stroke}" stroke-width="1.5" stroke-dasharray="5 3"><title>{}: {} usable</title></line>"##,
            px(x0 - 10.0),
            px(x0 + BAR_W + 10.0),
            html(name),
            Bytes(*b).display_gib()
        );
        let _ = write!(
            o,
            r##"<polyline points="{},{ly} {},{} {},{}" fill="none" stroke="{stroke}" stroke-width="0.75"/>"##,
            px(x0 + BAR_W + 10.0),
            px(lx - 8.0),
            px(label_y - 4.0),
            px(lx - 3.0),
            px(label_y - 4.0)
        );
        let _ = write!(
            o,
            r##"<text x="{}" y="{}" fill="{stroke}" font-size="11.5">{} · {}</text>"##,
            px(lx),
            px(label_y),
            html(&short(name, max_chars)),
            Bytes(*b).display_gib()
        );
    }
}

/// The legend: one swatch per component kind shown, `per_row` to a row.
fn legend(o: &mut String, kinds: &[ComponentKind], per_row: usize) {
    let ly0 = PLOT_TOP + PLOT_H + 44.0;
    for (i, k) in kinds.iter().enumerate() {
        let lx = LEFT + (i % per_row) as f64 * 150.0;
        let ly = ly0 + (i / per_row) as f64 * 20.0;
        let _ = write!(
            o,
            r##"<rect x="{}" y="{}" width="12" height="12" rx="2" fill="{}"/><text x="{}" y="{}" fill="#222">{}</text>"##,
            px(lx),
            px(ly - 10.0),
            color(*k),
            px(lx + 18.0),
            px(ly),
            k.label()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_nice() {
        assert_eq!(tick_step(24.0), 5.0);
        assert_eq!(tick_step(9.0), 2.0);
        assert_eq!(tick_step(130.0), 50.0);
        assert_eq!(tick_step(0.8), 0.2);
    }

    #[test]
    fn labels_spread_apart() {
        let mut ys = vec![100.0, 101.0, 102.0];
        spread(&mut ys, 0.0, 1000.0);
        assert!(ys[1] - ys[0] >= LABEL_GAP && ys[2] - ys[1] >= LABEL_GAP);
        let mut ys = vec![295.0, 296.0];
        spread(&mut ys, 0.0, 300.0);
        assert!(ys[1] <= 300.0 && ys[1] - ys[0] >= LABEL_GAP);
    }
}
