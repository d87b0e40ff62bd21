//! The Breakdown tab: what one GPU and host RAM hold, component by component, against the
//! capacity of this machine and of the machines the user ticked.

use super::app::{HeadroomApp, empty_state};
use super::style::{self, component_color, gib2, hint, machine_color, signed_gib};
use crate::core::estimate::{Component, ComponentKind, Placement};
use crate::core::units::Bytes;
use egui::{Align2, RichText, Ui};
use egui_plot::{Bar, BarChart, HLine, LineStyle, Plot, PlotPoint, Text};

/// One capacity line: a machine name and the usable bytes.
struct CapLine {
    name: String,
    bytes: Bytes,
    color: egui::Color32,
}

/// The hover text of a stacked segment: each component of the kind with its formula.
fn kind_tooltip(comps: &[&Component], per_device: bool) -> String {
    let parts: Vec<String> = comps
        .iter()
        .map(|c| {
            let b = if per_device { c.per_device } else { c.bytes };
            format!(
                "{}: {} ({})\n{}",
                c.name,
                gib2(b),
                c.provenance.label(),
                c.formula
            )
        })
        .collect();
    parts.join("\n\n")
}

/// A plot of one stacked bar (one device) with capacity lines, and its legend beside it.
fn device_plot(
    ui: &mut Ui,
    id: &str,
    title: &str,
    comps: &[Component],
    placement: Placement,
    caps: &[CapLine],
    size: egui::Vec2,
) {
    let per_device = placement == Placement::Gpu;
    let legend_w = (size.x * 0.42).clamp(150.0, 320.0);
    let plot_w = (size.x - legend_w - 8.0).clamp(140.0, 520.0);
    let mut charts: Vec<BarChart> = Vec::new();
    let mut legend: Vec<(ComponentKind, Bytes)> = Vec::new();
    let mut top = 0.0f64;
    // (bottom, top, kind, tooltip) of each stacked segment, in GiB.
    let mut segments: Vec<(f64, f64, ComponentKind, String)> = Vec::new();
    for kind in ComponentKind::ALL {
        let of_kind: Vec<&Component> = comps
            .iter()
            .filter(|c| c.kind == kind && c.placement == placement)
            .collect();
        let total: Bytes = of_kind
            .iter()
            .map(|c| if per_device { c.per_device } else { c.bytes })
            .sum();
        if total.0 == 0 {
            continue;
        }
        let base = top;
        top += total.as_gib();
        legend.push((kind, total));
        segments.push((base, top, kind, kind_tooltip(&of_kind, per_device)));
        let bar = Bar::new(BAR_X, total.as_gib())
            .width(BAR_W)
            .name(kind.label());
        // The plot's own hover label is clipped to the plot; a real tooltip is shown instead.
        let mut chart = BarChart::new(format!("{id}-{}", kind.json_key()), vec![bar])
            .color(component_color(kind))
            .name(kind.label())
            .allow_hover(false);
        {
            let refs: Vec<&BarChart> = charts.iter().collect();
            if !refs.is_empty() {
                chart = chart.stack_on(&refs);
            }
        }
        charts.push(chart);
    }
    let max_cap = caps.iter().map(|c| c.bytes.as_gib()).fold(0.0f64, f64::max);
    let y_max = top.max(max_cap).max(1.0) * 1.1;
    ui.vertical(|ui| {
        ui.set_width(size.x);
        ui.label(RichText::new(title).strong());
        ui.horizontal_top(|ui| {
            let plot = Plot::new(id)
                .height(size.y)
                .width(plot_w)
                .allow_zoom(false)
                .allow_drag(false)
                .allow_scroll(false)
                .allow_boxed_zoom(false)
                .allow_double_click_reset(false)
                .show_x(false)
                .show_y(false)
                .include_x(-0.5)
                .include_x(1.0)
                .include_y(0.0)
                .include_y(y_max)
                .show_axes([false, true])
                .y_axis_label("GiB")
                .y_axis_min_width(36.0)
                .show_grid([false, true])
                .show(ui, |p| {
                    for c in charts {
                        p.bar_chart(c);
                    }
                    for cap in caps {
                        let y = cap.bytes.as_gib();
                        p.hline(
                            HLine::new(cap.name.clone(), y)
                                .color(cap.color)
                                .width(2.0)
                                .style(LineStyle::dashed_loose())
                                .allow_hover(false),
                        );
                        // A direct label on the line, left of the bar.
                        p.text(
                            Text::new(
                                "",
                                PlotPoint::new(-0.48, y),
                                RichText::new(short(&cap.name, 24))
                                    .color(cap.color)
                                    .size(11.0),
                            )
                            .anchor(Align2::LEFT_BOTTOM)
                            .allow_hover(false),
                        );
                    }
                });
            // Hovering a segment: its components, bytes, provenance and formulas.
            if let Some(pos) = plot.response.hover_pos() {
                let v = plot.transform.value_from_position(pos);
                let hit = segments.iter().find(|(lo, hi, _, _)| {
                    (v.x - BAR_X).abs() <= BAR_W / 2.0 && v.y >= *lo && v.y <= *hi
                });
                if let Some((lo, hi, kind, tip)) = hit {
                    let (kind, tip, gib) = (*kind, tip.clone(), hi - lo);
                    let _ = plot.response.clone().on_hover_ui_at_pointer(|ui| {
                        ui.set_max_width(520.0);
                        ui.label(RichText::new(format!("{}: {gib:.2} GiB", kind.label())).strong());
                        ui.label(tip);
                    });
                }
            }
            ui.vertical(|ui| {
                ui.set_width(legend_w);
                ui.spacing_mut().item_spacing.y = 3.0;
                for (kind, b) in legend.iter().rev() {
                    swatch_row(ui, component_color(*kind), false, kind.label(), &gib2(*b));
                }
                ui.separator();
                ui.label(
                    RichText::new(format!("Total {}", gib2(Bytes::from_gib_f64(top)))).strong(),
                );
                if !caps.is_empty() {
                    ui.add_space(4.0);
                    ui.label(RichText::new("Usable memory").weak());
                }
                for cap in caps {
                    swatch_row(ui, cap.color, true, &cap.name, &gib2(cap.bytes))
                        .on_hover_text(cap.name.clone());
                }
            });
        });
    });
}

/// The bar's x position (right of the line labels) and width, in plot units.
const BAR_X: f64 = 0.6;
const BAR_W: f64 = 0.5;

/// A legend row: a colour swatch (a square, or a dash for a line), a name and a value.
fn swatch_row(
    ui: &mut Ui,
    color: egui::Color32,
    line: bool,
    name: &str,
    value: &str,
) -> egui::Response {
    ui.horizontal(|ui| {
        let (r, _) = ui.allocate_exact_size(egui::vec2(14.0, 12.0), egui::Sense::hover());
        if line {
            ui.painter()
                .hline(r.x_range(), r.center().y, egui::Stroke::new(2.5, color));
        } else {
            ui.painter().rect_filled(r.shrink(1.0), 2.0, color);
        }
        let value_w = 76.0;
        let name_w = (ui.available_width() - value_w - ui.spacing().item_spacing.x).max(40.0);
        ui.allocate_ui_with_layout(
            egui::vec2(name_w, 18.0),
            egui::Layout::left_to_right(egui::Align::Center),
            |ui| {
                ui.set_width(name_w);
                ui.add(egui::Label::new(RichText::new(name)).truncate());
            },
        );
        ui.allocate_ui_with_layout(
            egui::vec2(value_w, 18.0),
            egui::Layout::right_to_left(egui::Align::Center),
            |ui| {
                ui.set_width(value_w);
                ui.label(RichText::new(value));
            },
        );
    })
    .response
}

/// Keeps a machine name short enough for a label on a plot line.
fn short(name: &str, max: usize) -> String {
    let n: Vec<char> = name.chars().collect();
    if n.len() > max {
        format!(
            "{}...",
            n[..max.saturating_sub(2)].iter().collect::<String>()
        )
    } else {
        name.to_string()
    }
}

impl HeadroomApp {
    pub(super) fn breakdown_tab(&mut self, ui: &mut Ui) {
        let ids = self.compared_ids();
        let e = self.derived.estimate.clone();
        let cpu_only = self.state.scenario.gpus == 0;
        let mut vram_caps = Vec::new();
        let mut ram_caps = Vec::new();
        let mut rows = Vec::new();
        for (i, id) in ids.iter().enumerate() {
            let Some(f) = self.derived.fit(id) else {
                continue;
            };
            let color = machine_color(i);
            if f.gpu_capacity.0 > 0 {
                vram_caps.push(CapLine {
                    name: f.name.clone(),
                    bytes: f.gpu_capacity,
                    color,
                });
            }
            ram_caps.push(CapLine {
                name: f.name.clone(),
                bytes: f.ram_capacity,
                color,
            });
            rows.push((f.clone(), color));
        }

        let avail = ui.available_size();
        let plot_h = (avail.y * 0.44).clamp(180.0, 420.0);
        let host_has = e.components.iter().any(|c| c.placement == Placement::Host);
        ui.horizontal_top(|ui| {
            if cpu_only {
                device_plot(ui, "bars-host", "System RAM (CPU only)", &e.components, Placement::Host, &ram_caps, egui::vec2((avail.x * 0.7).max(320.0), plot_h));
            } else if host_has {
                let w = ((avail.x - 16.0) / 2.0).max(260.0);
                let title = if self.state.scenario.gpus > 1 { format!("One GPU (of {})", self.state.scenario.gpus) } else { "One GPU (VRAM)".to_string() };
                device_plot(ui, "bars-gpu", &title, &e.components, Placement::Gpu, &vram_caps, egui::vec2(w, plot_h));
                device_plot(ui, "bars-host", "Host RAM", &e.components, Placement::Host, &ram_caps, egui::vec2(w, plot_h));
            } else {
                let w = (avail.x * 0.66).clamp(320.0, 860.0);
                let title = if self.state.scenario.gpus > 1 { format!("One GPU (of {})", self.state.scenario.gpus) } else { "One GPU (VRAM)".to_string() };
                device_plot(ui, "bars-gpu", &title, &e.components, Placement::Gpu, &vram_caps, egui::vec2(w, plot_h));
                ui.add_space(12.0);
                ui.vertical(|ui| {
                    ui.label(RichText::new("Host RAM").strong());
                    hint(ui, "Nothing of this workload has to live in host RAM: every component sits on the GPU. Set GPUs to 0 (CPU only) or use CPU offload when fine-tuning to put parts here.");
                });
            }
        });
        hint(
            ui,
            "Bars: what the workload needs per device, split by component (hover a segment for its formula). Dashed lines: usable memory of this machine and of the machines you tick in the Machines tab. A bar above a line overflows that machine.",
        );

        // Per machine: need vs capacity, in words.
        ui.add_space(4.0);
        if rows.is_empty() {
            hint(
                ui,
                "Tick machines in the Machines tab to draw their capacity here and compare.",
            );
        }
        egui::Grid::new("breakdown-machines")
            .num_columns(4)
            .spacing([12.0, 4.0])
            .show(ui, |ui| {
                for (f, color) in &rows {
                    ui.label(RichText::new(short(&f.name, 40)).color(*color))
                        .on_hover_text(f.name.clone());
                    style::verdict_badge(ui, f);
                    if f.gpu_capacity.0 > 0 {
                        let need = f.gpu_required;
                        let d = f.gpu_capacity.signed_sub(need);
                        ui.label(format!(
                            "VRAM: {} of {} per GPU ({})",
                            gib2(need),
                            gib2(f.gpu_capacity),
                            signed_gib(d)
                        ));
                    } else {
                        ui.label("No GPU");
                    }
                    let ram_need = if f.ram_required.0 > 0 {
                        f.ram_required
                    } else {
                        e.host_total()
                    };
                    if ram_need.0 > 0 {
                        ui.label(format!(
                            "RAM: {} of {}",
                            gib2(ram_need),
                            gib2(f.ram_capacity)
                        ));
                    } else {
                        ui.label(format!("RAM: {} free, none needed", gib2(f.ram_capacity)));
                    }
                    ui.end_row();
                }
            });

        ui.add_space(6.0);
        ui.separator();
        self.component_table(ui, &e.components, cpu_only);
    }

    fn component_table(&self, ui: &mut Ui, comps: &[Component], cpu_only: bool) {
        if comps.is_empty() {
            empty_state(ui, "No components", "The estimate is empty.");
            return;
        }
        let formula_w = (ui.available_width() - 540.0).max(260.0);
        egui::ScrollArea::vertical()
            .id_salt("components")
            .auto_shrink([false, false])
            .show(ui, |ui| {
                egui::Grid::new("components-grid")
                    .striped(true)
                    .num_columns(5)
                    .spacing([14.0, 6.0])
                    .min_col_width(40.0)
                    .show(ui, |ui| {
                        ui.label(RichText::new("Component").strong());
                        let per = if cpu_only { "GiB" } else { "GiB per device" };
                        ui.label(RichText::new(per).strong());
                        ui.label(RichText::new("Where").strong());
                        ui.label(RichText::new("Provenance").strong());
                        ui.label(RichText::new("Formula").strong());
                        ui.end_row();
                        for c in comps {
                            ui.horizontal(|ui| {
                                let (r, _) = ui.allocate_exact_size(
                                    egui::vec2(10.0, 10.0),
                                    egui::Sense::hover(),
                                );
                                ui.painter().rect_filled(r, 2.0, component_color(c.kind));
                                ui.label(&c.name);
                            });
                            ui.label(gib2(c.per_device));
                            ui.label(match c.placement {
                                Placement::Gpu if cpu_only => "RAM",
                                Placement::Gpu => "each GPU",
                                Placement::Host => "host RAM",
                            });
                            ui.label(c.provenance.label());
                            ui.scope(|ui| {
                                ui.set_max_width(formula_w);
                                ui.add(
                                    egui::Label::new(RichText::new(&c.formula).size(11.0)).wrap(),
                                );
                            });
                            ui.end_row();
                        }
                    });
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names() {
        assert_eq!(short("short", 30), "short");
        assert!(short(&"x".repeat(50), 30).ends_with("..."));
        assert_eq!(short(&"x".repeat(50), 30).chars().count(), 31);
    }
}
