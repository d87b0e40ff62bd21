//! Colours, badges and number formatting shared by the views.
//!
//! Only glyphs that egui's default fonts carry are used (no arrows, ticks or emoji), so nothing
//! renders as a box and the kittest harness (which panics on missing glyphs) stays green.

use crate::core::estimate::ComponentKind;
use crate::core::fit::{FitResult, Verdict};
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

/// GiB with two decimals, for tables ("16.00 GiB").
pub fn gib2(b: Bytes) -> String {
    format!("{:.2} GiB", b.as_gib())
}

/// A signed GiB amount: "+3.20 GiB", "-1.50 GiB" (ASCII minus, for fonts and screen readers).
pub fn signed_gib(b: i64) -> String {
    let g = b as f64 / (1u64 << 30) as f64;
    if b < 0 {
        format!("-{:.2} GiB", -g)
    } else {
        format!("+{g:.2} GiB")
    }
}

/// Tokens per second: "1234", "56.7", "3.21"; "-" when zero.
pub fn rate(x: f64) -> String {
    if !(x.is_finite() && x > 0.0) {
        "-".into()
    } else if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// A duration: "0.12 s", "12 s", "3.4 min", "2.1 h", "3.2 d"; "-" when zero.
pub fn duration(s: f64) -> String {
    if !(s.is_finite() && s > 0.0) {
        "-".into()
    } else if s < 10.0 {
        format!("{s:.2} s")
    } else if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7200.0 {
        format!("{:.1} min", s / 60.0)
    } else if s < 172_800.0 {
        format!("{:.1} h", s / 3600.0)
    } else {
        format!("{:.1} d", s / 86_400.0)
    }
}

/// Dollars: "$0.0042", "$0.12", "$3.40", "$1,234"; "-" when unknown.
pub fn usd(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() && v >= 0.0 => {
            if v < 0.01 {
                format!("${v:.4}")
            } else if v < 100.0 {
                format!("${v:.2}")
            } else {
                format!("${}", crate::core::estimate::group_digits(v.round() as u64))
            }
        }
        _ => "-".into(),
    }
}

/// Token counts: "256", "8K", "128K", "1M" (binary K, as context sizes are written).
pub fn tokens_short(t: u64) -> String {
    if t >= 1 << 20 && t.is_multiple_of(1 << 20) {
        format!("{}M", t >> 20)
    } else if t >= 1024 && t.is_multiple_of(1024) {
        format!("{}K", t >> 10)
    } else if t >= 10_000 {
        format!("{:.0}K", t as f64 / 1024.0)
    } else {
        t.to_string()
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrows_become_ascii() {
        assert_eq!(drawable("16-bit → FP32"), "16-bit -> FP32");
        assert_eq!(drawable("plain"), "plain");
    }

    #[test]
    fn no_machine_is_drawn_in_the_error_red() {
        for i in 0..8 {
            assert_ne!(machine_color(i), verdict_color(Verdict::None));
        }
    }

    #[test]
    fn formats() {
        assert_eq!(signed_gib(-(3 << 29)), "-1.50 GiB");
        assert_eq!(signed_gib(1 << 30), "+1.00 GiB");
        assert_eq!(rate(0.0), "-");
        assert_eq!(rate(123.4), "123");
        assert_eq!(duration(90.0), "90 s");
        assert_eq!(duration(7200.0), "2.0 h");
        assert_eq!(usd(Some(1234.4)), "$1,234");
        assert_eq!(usd(None), "-");
        assert_eq!(tokens_short(8192), "8K");
        assert_eq!(tokens_short(1 << 20), "1M");
        assert_eq!(tokens_short(300), "300");
    }
}
