//! Colours, badges and number formatting shared by the views.
//!
//! Only glyphs that egui's default fonts carry are used (no arrows, ticks or emoji), so nothing
//! renders as a box and the kittest harness (which panics on missing glyphs) stays green.

use crate::core::estimate::ComponentKind;
use crate::core::fit::{FitResult, Verdict};
use crate::core::format;
use crate::core::units::Bytes;
use egui::{Color32, RichText};

/// One colour per memory component, used by bars, lines and the table alike.
pub fn component_color(k: ComponentKind) -> Color32 {
    match k {
        ComponentKind::Weights => Color32::from_rgb(66, 133, 244),
        ComponentKind::KvCache => Color32::from_rgb(240, 140, 30),
        ComponentKind::Activations => Color32::from_rgb(52, 168, 83),
        ComponentKind::Gradients => Color32::from_rgb(171, 71, 188),
        ComponentKind::Optimizer => Color32::from_rgb(229, 57, 53),
        ComponentKind::MasterWeights => Color32::from_rgb(141, 110, 99),
        ComponentKind::Overhead => Color32::from_rgb(130, 130, 140),
    }
}

/// The badge colour of a verdict.
pub fn verdict_color(v: Verdict) -> Color32 {
    match v {
        Verdict::Gpu => Color32::from_rgb(36, 150, 60),
        Verdict::Unified => Color32::from_rgb(0, 140, 160),
        Verdict::Offload => Color32::from_rgb(200, 130, 0),
        Verdict::Cpu => Color32::from_rgb(95, 105, 200),
        Verdict::Disk => Color32::from_rgb(150, 110, 60),
        Verdict::None => Color32::from_rgb(200, 45, 45),
    }
}

/// Distinct colours for machines and placements (cycled). No red: red means "does not fit"
/// (the verdict colour), so the first machine, usually "This machine", is blue.
pub fn machine_color(i: usize) -> Color32 {
    const P: [Color32; 8] = [
        Color32::from_rgb(0, 130, 200),
        Color32::from_rgb(220, 100, 170),
        Color32::from_rgb(60, 180, 75),
        Color32::from_rgb(145, 30, 180),
        Color32::from_rgb(245, 130, 48),
        Color32::from_rgb(70, 190, 190),
        Color32::from_rgb(170, 110, 40),
        Color32::from_rgb(128, 128, 0),
    ];
    P[i % P.len()]
}

/// A coloured verdict badge: "GPU", "unified", "offload 20/32", "CPU", "no". The badge's
/// accessible name says what it is ("verdict: GPU").
pub fn verdict_badge(ui: &mut egui::Ui, fit: &FitResult) -> egui::Response {
    badge(ui, &fit.verdict_text(), verdict_color(fit.verdict))
}

/// A small filled label, drawn as one widget so it never wraps inside itself and moves to the
/// next line as a whole in wrapping layouts.
pub fn badge(ui: &mut egui::Ui, text: &str, color: Color32) -> egui::Response {
    let galley = egui::WidgetText::from(RichText::new(text).strong()).into_galley(
        ui,
        Some(egui::TextWrapMode::Extend),
        f32::INFINITY,
        egui::TextStyle::Body,
    );
    let pad = egui::vec2(6.0, 2.0);
    let (rect, resp) = ui.allocate_exact_size(galley.size() + 2.0 * pad, egui::Sense::hover());
    let label = text.to_string();
    resp.widget_info(|| egui::WidgetInfo::labeled(egui::accesskit::Role::Label, true, &label));
    if ui.is_rect_visible(rect) {
        ui.painter().rect_filled(rect, 4.0, color);
        ui.painter().galley(rect.min + pad, galley, Color32::WHITE);
    }
    resp
}

/// A size, for tables ("16.0 GiB"): [`crate::core::format::bytes`].
pub fn gib2(b: Bytes) -> String {
    format::bytes(b)
}

/// A signed GiB amount: "+3.20 GiB", "−1.50 GiB" ([`crate::core::format::signed_bytes`]).
pub fn signed_gib(b: i64) -> String {
    format::signed_bytes(b)
}

/// Tokens per second: "1,234", "56.7", "3.21" ([`crate::core::format::rate`]).
pub fn rate(x: f64) -> String {
    format::rate(x)
}

/// A duration: "250 ms", "2.40 s", "3.5 min" ([`crate::core::format::duration`]).
pub fn duration(s: f64) -> String {
    format::duration(s)
}

/// Dollars: "$0.00423", "$0.526", "$1,234" ([`crate::core::format::usd`]).
pub fn usd(x: Option<f64>) -> String {
    format::usd(x)
}

/// Token counts: "256", "8K", "128K", "1M" ([`crate::core::format::tokens_short`]).
pub fn tokens_short(t: u64) -> String {
    format::tokens_short(t)
}

/// Text from the core (formulas, notes) with the glyphs egui's default fonts lack replaced by
/// ASCII: arrows become "->".
pub fn drawable(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains(['→', '←']) {
        text.replace('→', "->").replace('←', "<-").into()
    } else {
        text.into()
    }
}

/// `text` cut to `max` characters, the cut marked "..." (plot labels, where the full text is in
/// the rows or the table beside the plot).
pub fn shorten(text: &str, max: usize) -> String {
    let c: Vec<char> = text.chars().collect();
    if c.len() > max {
        format!(
            "{}...",
            c[..max.saturating_sub(3)].iter().collect::<String>()
        )
    } else {
        text.to_string()
    }
}

/// How many of `n` kept characters go before the cut: two fifths (the start of a machine's
/// name says what it is, the end which one: its chip and memory).
fn head_of(keep: usize) -> usize {
    keep * 2 / 5
}

/// `text` cut in the middle to `max` characters, the cut marked "…": "Mac mini … M4 Pro · 48 GB".
/// Where two names differ only at the end (48 GB, 128 GB), both stay apart.
pub fn shorten_middle(text: &str, max: usize) -> String {
    let c: Vec<char> = text.chars().collect();
    if c.len() <= max {
        return text.to_string();
    }
    let keep = max.saturating_sub(1).max(2);
    join_cut(&c, head_of(keep), keep - head_of(keep))
}

/// The first `head` and last `tail` characters of `c` joined by "…", each cut back to a whole
/// word where one is left ("This machine…64.0 GiB RAM)", not "This ma….0 GiB RAM)").
fn join_cut(c: &[char], head: usize, tail: usize) -> String {
    let head = head.min(c.len());
    let tail_start = c.len().saturating_sub(tail);
    let mut h = &c[..head];
    if c.get(head).is_some_and(|ch| !ch.is_whitespace())
        && let Some(sp) = h.iter().rposition(|ch| ch.is_whitespace())
        && sp >= 3
    {
        h = &h[..sp];
    }
    let mut t = &c[tail_start..];
    if tail_start > 0
        && !c[tail_start - 1].is_whitespace()
        && let Some(sp) = t.iter().position(|ch| ch.is_whitespace())
        && t.len() - sp > 3
    {
        t = &t[sp..];
    }
    let h: String = h.iter().collect();
    let t: String = t.iter().collect();
    format!("{}…{}", h.trim_end(), t.trim_start())
}

/// `text` cut in the middle (as [`shorten_middle`]) to fit `width` points in `font`.
pub fn fit_middle(ui: &egui::Ui, text: &str, width: f32, font: &egui::FontId) -> String {
    let c: Vec<char> = text.chars().collect();
    let (widths, ell) = ui.ctx().fonts_mut(|f| {
        let w: Vec<f32> = c.iter().map(|&ch| f.glyph_width(font, ch)).collect();
        (w, f.glyph_width(font, '…'))
    });
    let mut prefix = Vec::with_capacity(c.len() + 1);
    prefix.push(0.0f32);
    for w in &widths {
        prefix.push(prefix.last().copied().unwrap_or(0.0) + w);
    }
    let total = prefix[c.len()];
    if total <= width {
        return text.to_string();
    }
    for keep in (2..c.len()).rev() {
        let (head, tail) = (head_of(keep), keep - head_of(keep));
        let w = prefix[head] + ell + (total - prefix[c.len() - tail]);
        if w <= width {
            return join_cut(&c, head, tail);
        }
    }
    "…".to_string()
}

/// The width of `text` in the body font, on one line.
pub fn text_width(ui: &egui::Ui, text: &str) -> f32 {
    let font = egui::TextStyle::Body.resolve(ui.style());
    ui.ctx()
        .fonts_mut(|f| text.chars().map(|c| f.glyph_width(&font, c)).sum())
}

/// A plot of `size` that stays as drawn: no zoom, drag, scroll or box zoom (every chart in the
/// window shows computed curves at bounds of its own choosing).
pub fn still_plot<'a>(id: impl egui::AsIdSalt, size: egui::Vec2) -> egui_plot::Plot<'a> {
    egui_plot::Plot::new(id)
        .height(size.y)
        .width(size.x)
        .allow_zoom(false)
        .allow_drag(false)
        .allow_scroll(false)
        .allow_boxed_zoom(false)
}

/// Small, weak explanatory text that wraps.
pub fn hint(ui: &mut egui::Ui, text: impl Into<String>) {
    let text = text.into();
    ui.add(egui::Label::new(RichText::new(drawable(&text)).size(11.0).weak()).wrap());
}

/// A note that needs attention (clamped input, estimated shape): amber text that wraps.
pub fn warn(ui: &mut egui::Ui, text: impl Into<String>) {
    let c = if ui.visuals().dark_mode {
        Color32::from_rgb(240, 190, 80)
    } else {
        Color32::from_rgb(160, 100, 0)
    };
    let text = text.into();
    ui.add(egui::Label::new(RichText::new(drawable(&text)).color(c)).wrap());
}

/// A small amber note (estimate notes above the tabs).
pub fn note(ui: &mut egui::Ui, text: impl Into<String>) {
    let c = if ui.visuals().dark_mode {
        Color32::from_rgb(230, 185, 90)
    } else {
        Color32::from_rgb(150, 95, 0)
    };
    let text = text.into();
    ui.add(egui::Label::new(RichText::new(drawable(&text)).size(11.0).color(c)).wrap());
}

/// Small helper for "nothing here" states.
pub fn empty_state(ui: &mut egui::Ui, title: &str, body: &str) {
    ui.add_space(24.0);
    ui.vertical_centered(|ui| {
        ui.label(RichText::new(title).strong().size(16.0));
        ui.add_space(4.0);
        ui.set_max_width(560.0);
        ui.add(egui::Label::new(RichText::new(body).weak()).wrap());
    });
}

/// How a legend entry is drawn (the CPU vs GPU and Serving plots).
#[derive(Copy, Clone)]
pub enum Swatch {
    Line,
    Dashed,
    Dotted,
}

/// A legend above a plot (the plot's own legend would cover the lines).
pub fn legend_row(ui: &mut egui::Ui, items: &[(Color32, Swatch, &str)]) {
    ui.horizontal_wrapped(|ui| {
        for (color, kind, label) in items {
            // One widget per entry, so the swatch and its label wrap together.
            let galley = egui::WidgetText::from(*label).into_galley(
                ui,
                Some(egui::TextWrapMode::Extend),
                f32::INFINITY,
                egui::TextStyle::Body,
            );
            let size = egui::vec2(26.0 + galley.size().x, galley.size().y.max(12.0));
            let (rect, resp) = ui.allocate_exact_size(size, egui::Sense::hover());
            let label_text = label.to_string();
            resp.widget_info(|| {
                egui::WidgetInfo::labeled(egui::accesskit::Role::Label, true, &label_text)
            });
            let y = rect.center().y;
            let x0 = rect.left();
            let stroke = egui::Stroke::new(2.5, *color);
            match kind {
                Swatch::Line => {
                    ui.painter().hline(x0..=x0 + 22.0, y, stroke);
                }
                Swatch::Dashed | Swatch::Dotted => {
                    let (dash, gap) = if matches!(kind, Swatch::Dashed) {
                        (6.0, 4.0)
                    } else {
                        (2.0, 3.0)
                    };
                    let mut x = x0;
                    while x < x0 + 22.0 {
                        ui.painter().hline(x..=(x + dash).min(x0 + 22.0), y, stroke);
                        x += dash + gap;
                    }
                }
            }
            let text_pos = egui::pos2(x0 + 26.0, rect.center().y - galley.size().y / 2.0);
            ui.painter()
                .galley(text_pos, galley, ui.visuals().text_color());
            ui.add_space(10.0);
        }
    });
}

/// A short line in `color` (a legend swatch before a row of text), 22 px wide.
pub fn line_swatch(ui: &mut egui::Ui, color: Color32) -> egui::Response {
    let h = ui.text_style_height(&egui::TextStyle::Body);
    let (rect, resp) = ui.allocate_exact_size(egui::vec2(22.0, h), egui::Sense::hover());
    ui.painter().hline(
        rect.x_range(),
        rect.center().y,
        egui::Stroke::new(3.0, color),
    );
    resp
}

/// Grid marks of a log₁₀ axis at whole powers of ten, with 2 and 5 between them while the axis
/// spans fewer than `minor_below` decades.
pub fn decade_marks(g: egui_plot::GridInput, minor_below: f64) -> Vec<egui_plot::GridMark> {
    use egui_plot::GridMark;
    let (lo, hi) = g.bounds;
    let mut v = Vec::new();
    let mut d = lo.floor();
    while d <= hi {
        v.push(GridMark {
            value: d,
            step_size: 1.0,
        });
        if hi - lo < minor_below {
            for k in [2.0_f64, 5.0] {
                v.push(GridMark {
                    value: d + k.log10(),
                    step_size: 0.3,
                });
            }
        }
        d += 1.0;
    }
    v.retain(|m| m.value >= lo && m.value <= hi);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrows_become_ascii() {
        assert_eq!(drawable("16-bit → FP32"), "16-bit -> FP32");
        assert_eq!(drawable("plain"), "plain");
    }

    #[test]
    fn short_names() {
        assert_eq!(shorten("short", 30), "short");
        // Two MacBooks that differ only in memory stay apart when cut.
        let a = shorten_middle("MacBook Pro 16 (2024) · Apple M4 Max · 48 GB", 26);
        let b = shorten_middle("MacBook Pro 16 (2024) · Apple M4 Max · 128 GB", 26);
        assert_ne!(a, b);
        assert!(a.ends_with("48 GB") && a.contains('…'), "{a}");
        assert!(a.chars().count() <= 26, "{a}");
        assert_eq!(shorten_middle("short", 30), "short");
        assert!(shorten(&"x".repeat(50), 30).ends_with("..."));
        assert_eq!(shorten(&"x".repeat(50), 30).chars().count(), 30);
    }

    #[test]
    fn no_machine_is_drawn_in_the_error_red() {
        for i in 0..8 {
            assert_ne!(machine_color(i), verdict_color(Verdict::None));
        }
    }

    #[test]
    fn formats() {
        // The views use the one formatter of every surface (core::format).
        assert_eq!(signed_gib(-(3 << 29)), "−1.50 GiB");
        assert_eq!(signed_gib(1 << 30), "+1.00 GiB");
        assert_eq!(rate(0.0), "—");
        assert_eq!(rate(123.4), "123");
        assert_eq!(duration(90.0), "90.0 s");
        assert_eq!(duration(7200.0), "2.0 h");
        assert_eq!(usd(Some(1234.4)), "$1,234");
        assert_eq!(usd(None), "—");
        assert_eq!(tokens_short(8192), "8K");
        assert_eq!(tokens_short(1 << 20), "1M");
        assert_eq!(tokens_short(300), "300");
    }
}
