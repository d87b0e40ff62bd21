//! The Breakdown tab: the scenario as set in the inputs, component by component, and one pair of
//! bars per compared machine (this machine and the ones ticked in the Machines tab) showing the
//! scenario as THAT machine runs it — its own GPU count and offload split — as a share of its
//! usable GPU memory and RAM. The rows under the chart say the same in words, with the verdict
//! and its reason, from the same [`MachineLoad`]s.

use super::data::View;
use super::style::{self, component_color, empty_state, gib2, hint};
use crate::core::estimate::{Component, ComponentKind, Estimate, Placement};
use crate::core::format;
use crate::core::placement::explain::MachineLoad;
use crate::core::units::Bytes;
use egui::{Align2, RichText, Ui};
use egui_plot::{Bar, BarChart, GridMark, HLine, Line, LineStyle, PlotPoint, PlotPoints, Text};

/// Bars are cut at this share of capacity so one huge overflow does not flatten the others;
/// the value label above the bar still gives the real share.
const MAX_SHARE: f64 = 200.0;
/// Bar width and the distance between machines, in plot units.
const BAR_W: f64 = 0.8;
const SLOT: f64 = 3.0;

/// The Breakdown tab (all its choices live in the app's [`super::state::State`]).
pub(crate) struct BreakdownTab;

/// A bar's parts: bytes per component kind.
type Parts<'a> = &'a [(ComponentKind, Bytes)];

/// One stacked segment of a machine's bar, for the hover tooltip.
struct Segment {
    x: f64,
    lo: f64,
    hi: f64,
    tip: String,
}

/// The fraction of `cap` that `b` is (0 without a capacity).
fn fraction(b: Bytes, cap: Bytes) -> f64 {
    if cap.0 == 0 {
        0.0
    } else {
        b.as_f64() / cap.as_f64()
    }
}

/// The share of `cap` that `b` is, in percent (the bars' height).
fn share(b: Bytes, cap: Bytes) -> f64 {
    fraction(b, cap) * 100.0
}

/// The words of a machine's row: memory on one GPU, memory in RAM (from the same load the
/// chart draws).
pub(crate) fn load_texts(l: &MachineLoad) -> (String, String) {
    if l.unified {
        // One pool: the GPU's part is a share of the same RAM, not a second memory.
        let mut pool = format!(
            "Unified memory: {} of {} usable",
            gib2(l.pool_total()),
            gib2(l.ram_capacity)
        );
        if l.disk.0 > 0 {
            pool.push_str(&format!("  Disk: {}", gib2(l.disk)));
        }
        let gpu = format!(
            "GPU part: {} of the {} it may use · CPU part: {}",
            gib2(l.gpu_total()),
            gib2(l.gpu_capacity),
            gib2(l.host_total())
        );
        return (pool, gpu);
    }
    let vram = if l.gpu_capacity.0 == 0 {
        "No GPU".to_string()
    } else if l.gpus == 0 {
        format!("VRAM: not used ({} usable)", gib2(l.gpu_capacity))
    } else {
        let of = if l.gpus > 1 {
            format!(" on each of {} GPUs", l.gpus)
        } else {
            String::new()
        };
        format!(
            "VRAM: {} of {}{of}",
            gib2(l.gpu_total()),
            gib2(l.gpu_capacity)
        )
    };
    let mut ram = if l.host_total().0 == 0 {
        format!("RAM: not used ({} usable)", gib2(l.ram_capacity))
    } else {
        format!("RAM: {} of {}", gib2(l.host_total()), gib2(l.ram_capacity))
    };
    if l.disk.0 > 0 {
        ram.push_str(&format!("  Disk: {}", gib2(l.disk)));
    }
    (vram, ram)
}

/// A legend row: a colour swatch, a name and a value.
fn swatch_row(ui: &mut Ui, color: egui::Color32, name: &str, value: &str) {
    ui.horizontal(|ui| {
        let (r, _) = ui.allocate_exact_size(egui::vec2(12.0, 12.0), egui::Sense::hover());
        ui.painter().rect_filled(r.shrink(1.0), 2.0, color);
        let value_w = 78.0;
        let name_w = (ui.available_width() - value_w - ui.spacing().item_spacing.x).max(40.0);
        ui.allocate_ui_with_layout(
            egui::vec2(name_w, 18.0),
            egui::Layout::left_to_right(egui::Align::Center),
            |ui| {
                ui.set_width(name_w);
                ui.add(egui::Label::new(name).truncate());
            },
        );
        ui.allocate_ui_with_layout(
            egui::vec2(value_w, 18.0),
            egui::Layout::right_to_left(egui::Align::Center),
            |ui| {
                ui.label(value);
            },
        );
    });
}

/// The scenario as set in the inputs: what one GPU holds and what host RAM holds, per kind.
fn scenario_legend(ui: &mut Ui, e: &Estimate, gpus: u64) {
    let gpu_title = match gpus {
        0 => "CPU only (the inputs' GPUs: 0): system RAM".to_string(),
        1 => "On the 1 GPU set in the inputs".to_string(),
        n => format!("On each of the {n} GPUs set in the inputs"),
    };
    ui.label(RichText::new(gpu_title).strong());
    let mut any = false;
    for kind in ComponentKind::ALL {
        let b = if gpus == 0 {
            e.kind_total(kind)
        } else {
            e.per_gpu_kind(kind)
        };
        if b.0 > 0 {
            swatch_row(ui, component_color(kind), kind.label(), &gib2(b));
            any = true;
        }
    }
    let total = if gpus == 0 {
        e.total()
    } else {
        e.per_gpu_total()
    };
    if any {
        ui.label(RichText::new(format!("Total {}", gib2(total))).strong());
    }
    if gpus > 0 && e.host_total().0 > 0 {
        ui.add_space(4.0);
        ui.label(RichText::new("Host RAM (with the inputs' GPUs)").strong());
        for kind in ComponentKind::ALL {
            let b = e.host_kind(kind);
            if b.0 > 0 {
                swatch_row(ui, component_color(kind), kind.label(), &gib2(b));
            }
        }
    }
}

/// One pair of bars per machine: GPU memory per GPU and RAM, each as a share of what the machine
/// can use, stacked by component, with a line at 100 %.
fn machines_chart(ui: &mut Ui, loads: &[MachineLoad], size: egui::Vec2) {
    let stacks = Stacks::of(loads);
    let n = loads.len().max(1);
    // Under each pair: the machine's name (cut to the slot; the rows below give it whole) and its
    // verdict, the same as its row's.
    let names: Vec<String> = {
        let chars = ((size.x / n as f32) / 7.5).max(8.0) as usize;
        loads
            .iter()
            .map(|l| {
                format!(
                    "{}\n{}",
                    style::shorten_middle(&l.name, chars),
                    l.verdict_text
                )
            })
            .collect()
    };
    let plot = style::still_plot("machines-chart", size)
        .allow_double_click_reset(false)
        .show_x(false)
        .show_y(false)
        .include_x(-0.7)
        .include_x((n as f64 - 1.0) * SLOT + 1.7)
        .include_y(0.0)
        // Room above the tallest bar for its label (two or three lines).
        .include_y(stacks.top * 1.32)
        .y_axis_label("% of usable memory")
        .y_axis_min_width(36.0)
        .show_grid([false, true])
        .x_grid_spacer(move |_| {
            (0..n)
                .map(|i| GridMark {
                    value: i as f64 * SLOT + 0.5,
                    step_size: SLOT,
                })
                .collect()
        })
        .x_axis_formatter(move |mark, _| {
            let i = ((mark.value - 0.5) / SLOT).round();
            if i >= 0.0 && ((mark.value - 0.5) - i * SLOT).abs() < 1e-6 {
                names.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .show(ui, |p| {
            for c in stacks.charts {
                p.bar_chart(c);
            }
            p.hline(
                HLine::new("usable memory", 100.0)
                    .color(ui_line_color())
                    .width(1.5)
                    .style(LineStyle::dashed_loose())
                    .allow_hover(false),
            );
            for (i, (x, y)) in stacks.gpu_limits.iter().enumerate() {
                p.line(
                    Line::new(
                        format!("gpu-limit-{i}"),
                        PlotPoints::from(vec![[x - BAR_W * 0.7, *y], [x + BAR_W * 0.7, *y]]),
                    )
                    .color(ui_line_color())
                    .width(1.5)
                    .style(LineStyle::dashed_dense())
                    .allow_hover(false),
                );
            }
            for (x, y, t) in stacks.texts {
                p.text(
                    Text::new("", PlotPoint::new(x, y), RichText::new(t).size(10.5))
                        .anchor(Align2::CENTER_BOTTOM)
                        .allow_hover(false),
                );
            }
        });
    if let Some(pos) = plot.response.hover_pos() {
        let v = plot.transform.value_from_position(pos);
        if let Some(s) = stacks
            .segments
            .iter()
            .find(|s| (v.x - s.x).abs() <= BAR_W / 2.0 && v.y >= s.lo && v.y <= s.hi)
        {
            let tip = s.tip.clone();
            let _ = plot.response.clone().on_hover_ui_at_pointer(|ui| {
                ui.set_max_width(480.0);
                ui.label(tip);
            });
        }
    }
}

/// The pieces of the machines chart: the stacked bars, their segments for the hover tooltip, the
/// labels above the bars, the marks where a unified pool's GPU share ends, and the tallest stack
/// (percent of usable memory).
struct Stacks {
    charts: Vec<BarChart>,
    segments: Vec<Segment>,
    texts: Vec<(f64, f64, String)>,
    gpu_limits: Vec<(f64, f64)>,
    top: f64,
}

impl Stacks {
    fn of(loads: &[MachineLoad]) -> Stacks {
        let mut st = Stacks {
            charts: Vec::new(),
            segments: Vec::new(),
            texts: Vec::new(),
            gpu_limits: Vec::new(),
            top: 100.0,
        };
        for (i, l) in loads.iter().enumerate() {
            let x0 = i as f64 * SLOT;
            // Unified memory is one pool: one bar of the usable RAM, the GPU's part first, with a
            // mark where the GPU's share ends.
            let pool: Vec<(ComponentKind, Bytes)> = l.gpu.iter().chain(&l.host).copied().collect();
            let bars: Vec<(f64, Parts<'_>, Bytes, &str)> = if l.unified {
                let limit = share(l.gpu_capacity, l.ram_capacity).min(MAX_SHARE);
                st.gpu_limits.push((x0 + 0.5, limit));
                vec![(x0 + 0.5, &pool, l.ram_capacity, "unified memory")]
            } else {
                vec![
                    (x0, &l.gpu, l.gpu_capacity, "VRAM"),
                    (x0 + 1.0, &l.host, l.ram_capacity, "RAM"),
                ]
            };
            for (x, parts, cap, what) in bars {
                st.bar(i, l, x, parts, cap, what);
            }
        }
        st
    }

    /// The bar at `x` of machine `l` (the `i`th): `parts` stacked as shares of `cap` (`what`
    /// holds them), the disk tier above RAM, and the label on top.
    fn bar(&mut self, i: usize, l: &MachineLoad, x: f64, parts: Parts<'_>, cap: Bytes, what: &str) {
        if cap.0 == 0 {
            self.texts.push((x, 0.0, "no GPU".into()));
            return;
        }
        let mut base = 0.0f64;
        let total: Bytes = parts.iter().map(|(_, b)| *b).sum();
        for (j, (kind, b)) in parts.iter().enumerate() {
            let h = share(*b, cap);
            let lo = base.min(MAX_SHARE);
            let hi = (base + h).min(MAX_SHARE);
            base += h;
            if hi <= lo {
                continue;
            }
            let per = match what {
                "VRAM" => " per GPU",
                _ if l.unified && j < l.gpu.len() => " on the GPU",
                _ if l.unified => " on the CPU",
                _ => "",
            };
            self.segments.push(Segment {
                x,
                lo,
                hi,
                tip: format!(
                    "{}\n{}: {}{per} ({} of {} usable {what})",
                    l.name,
                    kind.label(),
                    gib2(*b),
                    format::percent(fraction(*b, cap)),
                    gib2(cap)
                ),
            });
            self.charts.push(
                BarChart::new(
                    format!("m{i}-{what}-{}", kind.json_key()),
                    vec![
                        Bar::new(x, hi - lo)
                            .base_offset(lo)
                            .width(BAR_W)
                            .fill(component_color(*kind)),
                    ],
                )
                .color(component_color(*kind))
                .allow_hover(false),
            );
        }
        let on_disk = (what == "RAM" || l.unified) && l.disk.0 > 0;
        if on_disk {
            base = self.disk_tier(i, l, x, cap, base);
        }
        let pct = format::percent(fraction(total, cap));
        self.top = self.top.max(base.min(MAX_SHARE));
        // On two or three short lines: a bar's label is no wider than its pair of bars, so
        // "VRAM 96 %" and "RAM 99 %" never run into each other ("VRAM 96 %RAM 99 %").
        let what = if what == "unified memory" {
            "unified"
        } else {
            what
        };
        let label = if total.0 == 0 {
            format!("{what}\nnone")
        } else if on_disk {
            format!("{what}\n{pct}\n+ disk")
        } else {
            format!("{what}\n{pct}")
        };
        self.texts.push((x, base.min(MAX_SHARE), label));
    }

    /// The disk tier: what RAM cannot hold, stacked from `base` above the RAM bar in its own
    /// colour. Returns the stack's new top.
    fn disk_tier(&mut self, i: usize, l: &MachineLoad, x: f64, cap: Bytes, base: f64) -> f64 {
        let h = share(l.disk, cap);
        let lo = base.min(MAX_SHARE);
        let hi = (base + h).min(MAX_SHARE);
        if hi > lo {
            self.segments.push(Segment {
                x,
                lo,
                hi,
                tip: format!(
                    "{}\nOn the disk: {} (read from the SSD, beyond RAM)",
                    l.name,
                    gib2(l.disk)
                ),
            });
            let c = style::verdict_color(crate::core::fit::Verdict::Disk);
            self.charts.push(
                BarChart::new(
                    format!("m{i}-disk"),
                    vec![Bar::new(x, hi - lo).base_offset(lo).width(BAR_W).fill(c)],
                )
                .color(c)
                .allow_hover(false),
            );
        }
        base + h
    }
}

fn ui_line_color() -> egui::Color32 {
    egui::Color32::from_rgb(200, 45, 45)
}

impl BreakdownTab {
    pub fn ui(&mut self, ui: &mut Ui, v: &mut View<'_>) {
        let loads = v.data.compared_loads(v.state);
        let e = v.data.derived.estimate.clone();
        let gpus = v.state.scenario.gpus;
        let avail = ui.available_size();
        egui::ScrollArea::vertical()
            .id_salt("breakdown")
            .auto_shrink([false, false])
            .show(ui, |ui| {
                let plot_h = (avail.y * 0.42).clamp(160.0, 380.0);
                let legend_w = (avail.x * 0.3).clamp(210.0, 300.0);
                ui.horizontal_top(|ui| {
                    ui.vertical(|ui| {
                        ui.set_width(legend_w);
                        scenario_legend(ui, &e, gpus);
                    });
                    ui.vertical(|ui| {
                        let w = (ui.available_width() - 4.0).max(240.0);
                        ui.set_width(w);
                        ui.label(
                            RichText::new("On each machine you compare, as it runs it").strong(),
                        );
                        if loads.is_empty() {
                            hint(
                                ui,
                                "Tick machines in the Machines tab to see how this workload sits on each of them.",
                            );
                        } else {
                            machines_chart(ui, &loads, egui::vec2(w, plot_h));
                        }
                    });
                });
                hint(
                    ui,
                    "Left: the scenario with the GPU count set in the inputs (hover the inputs for details). Right: each machine runs it with its own GPUs and, when the model is too big, with whole layers offloaded to RAM; each bar is that machine's memory in use as a share of what it can use (GPU memory per GPU, then RAM). A unified-memory machine (Apple silicon, APUs) has one bar, its usable RAM, with a short dashed mark where the GPU's share ends. Above the dashed 100 % line it does not fit there.",
                );
                ui.add_space(4.0);
                machine_rows(ui, &loads);
                ui.add_space(6.0);
                ui.separator();
                component_table(ui, &e.components, gpus == 0);
            });
    }
}

/// Per compared machine: name, verdict, the memory on one GPU and in RAM, and why.
fn machine_rows(ui: &mut Ui, loads: &[MachineLoad]) {
    for l in loads {
        ui.horizontal_wrapped(|ui| {
            ui.allocate_ui_with_layout(
                egui::vec2(220.0, 18.0),
                egui::Layout::left_to_right(egui::Align::Center),
                |ui| {
                    ui.set_width(220.0);
                    // Cut in the middle (the end tells two MacBooks apart); whole on hover.
                    let font = egui::TextStyle::Body.resolve(ui.style());
                    let name = style::fit_middle(ui, &l.name, 216.0, &font);
                    let cut = name != *l.name;
                    let r = ui.add(egui::Label::new(RichText::new(name).strong()));
                    if cut {
                        r.on_hover_text(l.name.clone());
                    }
                },
            );
            style::badge(ui, &l.verdict_text, style::verdict_color(l.verdict))
                .on_hover_text(l.reason.clone());
            let (vram, ram) = load_texts(l);
            // Each figure moves to the next line whole rather than breaking inside.
            ui.add(egui::Label::new(vram).wrap_mode(egui::TextWrapMode::Extend));
            ui.add(egui::Label::new(ram).wrap_mode(egui::TextWrapMode::Extend));
        });
        ui.horizontal(|ui| {
            ui.add_space(12.0);
            hint(ui, l.reason.clone());
        });
        ui.add_space(2.0);
    }
}

/// The component table: name, bytes per device, where, provenance and formula. The formula
/// column takes the width that is left and wraps; the whole tab scrolls, so the header stays
/// with its rows.
fn component_table(ui: &mut Ui, comps: &[Component], cpu_only: bool) {
    if comps.is_empty() {
        empty_state(ui, "No components", "The estimate is empty.");
        return;
    }
    let formula_w = (ui.available_width() - 560.0).max(160.0);
    egui::Grid::new("components-grid")
        .striped(true)
        .num_columns(5)
        .spacing([12.0, 6.0])
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
                    let (r, _) =
                        ui.allocate_exact_size(egui::vec2(10.0, 10.0), egui::Sense::hover());
                    ui.painter().rect_filled(r, 2.0, component_color(c.kind));
                    ui.add(egui::Label::new(&c.name).extend());
                });
                ui.label(gib2(c.per_device));
                ui.label(match c.placement {
                    Placement::Gpu if cpu_only => "RAM",
                    Placement::Gpu => "each GPU",
                    Placement::Host => "host RAM",
                });
                ui.label(c.provenance.label());
                ui.scope(|ui| {
                    // A fixed width, so the grid's columns settle in one frame.
                    ui.set_width(formula_w);
                    ui.add(
                        egui::Label::new(RichText::new(style::drawable(&c.formula)).size(11.0))
                            .wrap(),
                    );
                });
                ui.end_row();
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares() {
        assert_eq!(share(Bytes::gib(12), Bytes::gib(24)), 50.0);
        assert_eq!(share(Bytes::gib(12), Bytes::ZERO), 0.0);
    }
}
