//! The CPU vs GPU tab, for learning by dragging: tokens/s against layers on the GPU (the VRAM
//! cliff), memory against context length, and CPU vs GPU speed and cost for this workload.

use super::data::View;
use super::style::{self, Swatch, component_color, hint, legend_row, machine_color};
use crate::core::catalog::Machine;
use crate::core::format;
use crate::core::format::group_digits;
use crate::core::teach::SpeedBar;
use crate::core::units::GbPerSec;
use egui::{Align2, Color32, RichText, Ui};
use egui_plot::{Bar, BarChart, GridMark, HLine, Line, LineStyle, PlotPoint, Text, VLine};

const BLUE: Color32 = Color32::from_rgb(66, 133, 244);
const ORANGE: Color32 = Color32::from_rgb(240, 140, 30);
const RED: Color32 = Color32::from_rgb(200, 45, 45);
const GREEN: Color32 = Color32::from_rgb(40, 160, 90);

/// The CPU vs GPU tab (all its state is in the app's [`super::state::State`]).
pub(crate) struct TeachTab;

impl TeachTab {
    pub fn ui(&mut self, ui: &mut Ui, v: &mut View<'_>) {
        let Some(m) = v.data.focus_machine(v.state).cloned() else {
            hint(ui, "No machine in the catalog.");
            return;
        };
        machine_picker(ui, v, &m);
        let settings = v.state.fit_settings();
        let scenario = v.state.scenario.clone();
        let t = v
            .data
            .derived
            .teach(&scenario, &settings, &m, &v.data.catalog)
            .clone();
        if scenario.mode.is_training() {
            style::warn(
                ui,
                "These plots are about serving the model: the speed curves use the inference version of your scenario (the memory plot uses your training scenario).",
            );
        }

        egui::ScrollArea::vertical()
            .id_salt("teach")
            .auto_shrink([false, false])
            .show(ui, |ui| {
                let w = ui.available_width();
                let plot_h = 230.0;
                speed_vs_layers(ui, &t, w, plot_h);
                ui.add_space(10.0);
                if !t.tiers_mmap.is_empty() {
                    speed_vs_tiers(ui, &t, w, plot_h);
                }
                memory_vs_context(ui, &t, &scenario, w, plot_h);
                ui.add_space(10.0);
                cpu_vs_gpu(ui, &t, w, plot_h);
            });
    }
}

/// The machine the plots are about (GPU machines first; any machine works).
fn machine_picker(ui: &mut Ui, v: &mut View<'_>, m: &Machine) {
    ui.horizontal(|ui| {
        let label = ui.label("Machine:");
        let mut chosen = None;
        let combo = egui::ComboBox::from_id_salt("teach-machine")
            .selected_text(&*m.name)
            .width(360.0)
            .height(400.0)
            .show_ui(ui, |ui| {
                for other in v.data.machines.iter() {
                    if ui
                        .selectable_label(other.id == m.id, &*other.name)
                        .clicked()
                    {
                        chosen = Some(other.id.to_string());
                    }
                }
            });
        let _ = combo.response.labelled_by(label.id);
        if let Some(id) = chosen {
            v.state.focus = Some(id);
        }
    });
}

/// (1) Tokens per second against layers on the GPU: the cliff where the VRAM runs out.
fn speed_vs_layers(ui: &mut Ui, t: &crate::core::teach::Teach, w: f32, plot_h: f32) {
    ui.label(RichText::new("1. Tokens per second against layers on the GPU").strong());
    if !t.has_gpu {
        hint(
            ui,
            "This machine has no GPU: every layer runs on the CPU. Pick a machine with a GPU above to see the cliff.",
        );
        return;
    }
    let cliff_label = if t.k_fit >= t.layers {
        format!("all {} layers fit in VRAM", t.layers)
    } else {
        format!(
            "{} full at {} of {} layers",
            if t.unified { "GPU share" } else { "VRAM" },
            t.k_fit,
            t.layers
        )
    };
    layers_legend(ui, t, &cliff_label);
    layers_plot(ui, t, &cliff_label, w, plot_h);
    layers_hints(ui, t);
    if !t.expert_offload.is_empty() {
        expert_offload_plot(ui, t, w, plot_h);
    }
}

/// The legend of the layers plot: the CPU's curve (solid where it runs, dotted where it would
/// not fit), the streamed one (discrete GPUs), and the cliff.
fn layers_legend(ui: &mut Ui, t: &crate::core::teach::Teach, cliff_label: &str) {
    let mut legend = vec![
        (
            BLUE,
            Swatch::Line,
            if t.unified {
                "CPU runs the other layers from the same memory (llama.cpp -ngl k)"
            } else {
                "CPU runs the other layers (llama.cpp -ngl k)"
            },
        ),
        (
            BLUE,
            Swatch::Dotted,
            if t.unified {
                "beyond the GPU's share or RAM (would not fit)"
            } else {
                "beyond the VRAM or RAM (would not fit)"
            },
        ),
    ];
    if !t.unified {
        legend.push((
            ORANGE,
            Swatch::Line,
            "weights streamed over PCIe (accelerate, vLLM offload)",
        ));
    }
    legend.push((RED, Swatch::Dashed, cliff_label));
    legend_row(ui, &legend);
}

/// The layers plot: tok/s against k layers on the GPU, solid where the split runs, and the cliff
/// at `t.k_fit`.
fn layers_plot(ui: &mut Ui, t: &crate::core::teach::Teach, cliff_label: &str, w: f32, plot_h: f32) {
    let cliff = t.k_fit as f64;
    let k_min = t.k_min as f64;
    style::still_plot("speed-vs-layers", egui::vec2(w, plot_h))
        .x_axis_label("layers on the GPU")
        .y_axis_label("tok/s")
        .include_y(0.0)
        .show(ui, |p| {
            // Solid only where the machine holds the split: enough layers on the GPU for
            // RAM to hold the rest, and no more than the GPU holds.
            let runs = |q: &[f64; 2]| q[0] >= k_min && q[0] <= cliff;
            let (fit_pts, below, over) = split_points(&t.cpu_layers, k_min, cliff);
            if fit_pts.len() > 1 {
                p.line(
                    Line::new("CPU runs the other layers", fit_pts)
                        .color(BLUE)
                        .width(2.5),
                );
            }
            for (name, pts) in [("needs more RAM", below), ("beyond the VRAM", over)] {
                if pts.len() > 1 {
                    p.line(
                        Line::new(name, pts)
                            .color(BLUE)
                            .style(LineStyle::dotted_loose())
                            .width(1.5),
                    );
                }
            }
            let streamed: Vec<[f64; 2]> = t.streaming.iter().copied().filter(runs).collect();
            if streamed.len() > 1 {
                p.line(
                    Line::new("streamed over PCIe", streamed)
                        .color(ORANGE)
                        .width(2.0),
                );
            }
            p.vline(
                VLine::new(cliff_label, cliff)
                    .color(RED)
                    .width(2.0)
                    .style(LineStyle::dashed_loose()),
            );
        });
}

/// The words under the layers plot: the speeds at none, the cliff and all on the GPU, and where
/// RAM runs out.
fn layers_hints(ui: &mut Ui, t: &crate::core::teach::Teach) {
    let k = t.k_fit;
    let fit_speed = t.cpu_layers.get(k as usize).map(|q| q[1]).unwrap_or(0.0);
    let full = t.cpu_layers.last().map(|q| q[1]).unwrap_or(0.0);
    let none = t.cpu_layers.first().map(|q| q[1]).unwrap_or(0.0);
    let stream = if t.unified {
        String::new()
    } else {
        format!(
            " Streaming instead pushes the missing weights over PCIe ({}) for every token, which is slower still: the link, not the GPU, sets the pace.",
            format::bandwidth(GbPerSec(t.link_bandwidth))
        )
    };
    hint(
        ui,
        format!(
            "Decode reads every weight once per token, so speed follows memory bandwidth: {} on the GPU, {} for system RAM{}. With k layers on the GPU the CPU still reads the rest, and the slow part dominates: {} tok/s with none on the GPU, {} tok/s where the GPU's memory runs out (k = {k}), {} tok/s if all fitted.{stream}",
            format::bandwidth(GbPerSec(t.gpu_bandwidth)),
            format::bandwidth(GbPerSec(t.ram_bandwidth)),
            if t.unified {
                " (the same memory; the CPU cores draw only part of it)"
            } else {
                ""
            },
            style::rate(none),
            style::rate(fit_speed),
            style::rate(full),
        ),
    );
    if t.k_min > t.k_fit {
        style::warn(
            ui,
            format!(
                "On this machine no split runs: with {} layers on the GPU the other {} need more than the {} of RAM it can use, so every point is drawn dotted (the verdict reads the rest from the disk, or does not run).",
                t.k_fit,
                t.layers.saturating_sub(t.k_fit),
                style::gib2(t.ram_capacity)
            ),
        );
    } else if t.k_min > 0 {
        hint(
            ui,
            format!(
                "Below {} layers on the GPU the rest does not fit in RAM ({} usable): those points are dotted.",
                t.k_min,
                style::gib2(t.ram_capacity)
            ),
        );
    }
    if t.unified {
        hint(
            ui,
            "Unified memory: CPU and GPU share one pool, so there is no PCIe cliff and nothing to stream; the GPU may use a share of RAM (Metal's default 2/3 to 3/4, raised with sudo sysctl iogpu.wired_limit_mb).",
        );
    }
}

/// The points of a curve over k: those from `k_min` to `cliff` (the split runs), those below
/// `k_min` (RAM cannot hold the rest) and those beyond `cliff` (the GPU cannot hold k layers),
/// each segment sharing its end point with the next so the line stays whole.
fn split_points(pts: &[[f64; 2]], k_min: f64, cliff: f64) -> SplitPoints {
    let runs = pts
        .iter()
        .copied()
        .filter(|q| q[0] >= k_min && q[0] <= cliff)
        .collect();
    let below = pts.iter().copied().filter(|q| q[0] <= k_min).collect();
    let over = pts
        .iter()
        .copied()
        .filter(|q| q[0] >= cliff.max(k_min))
        .collect();
    (runs, below, over)
}

type SplitPoints = (Vec<[f64; 2]>, Vec<[f64; 2]>, Vec<[f64; 2]>);

/// (1b) Tokens per second as the model spills from VRAM to RAM to the disk: the memory
/// hierarchy, each tier an order of magnitude slower than the one above.
fn speed_vs_tiers(ui: &mut Ui, t: &crate::core::teach::Teach, w: f32, plot_h: f32) {
    ui.label(
        RichText::new("1b. Tokens per second as the model spills from VRAM to RAM to the disk")
            .strong(),
    );
    let [vr, rr, sr] = t.tier_rates;
    let [ve, re, here] = t.tier_edges;
    let vram_label = format!("VRAM ends: {} GB/s", style::rate(vr));
    let ram_label = format!("RAM ends: {} GB/s", style::rate(rr));
    let ssd_label = format!("disk: {}", t.disk_label);
    let here_label = "this model".to_string();
    legend_row(
        ui,
        &[
            (
                BLUE,
                Swatch::Line,
                "llama.cpp mmap (past RAM every host byte comes from disk)",
            ),
            (
                ORANGE,
                Swatch::Line,
                "only the overflow from disk (accelerate offload_folder)",
            ),
            (RED, Swatch::Dashed, &vram_label),
            (machine_color(1), Swatch::Dashed, &ram_label),
            (Color32::GRAY, Swatch::Line, &here_label),
        ],
    );
    hint(ui, ssd_label.clone());
    let log = |pts: &[[f64; 2]]| -> Vec<[f64; 2]> {
        pts.iter()
            .filter(|q| q[1] > 0.0)
            .map(|q| [q[0], q[1].log10()])
            .collect()
    };
    style::still_plot("speed-vs-tiers", egui::vec2(w, plot_h))
        .x_axis_label("GiB of weights read per token")
        .y_axis_label("tok/s (log scale)")
        .y_axis_formatter(|mark, _| style::rate(10f64.powf(mark.value)))
        .show(ui, |p| {
            p.line(
                Line::new("llama.cpp mmap", log(&t.tiers_mmap))
                    .color(BLUE)
                    .width(2.5),
            );
            p.line(
                Line::new("overflow only", log(&t.tiers_overflow))
                    .color(ORANGE)
                    .width(2.0),
            );
            if ve > 0.0 {
                p.vline(
                    VLine::new(vram_label.clone(), ve)
                        .color(RED)
                        .width(2.0)
                        .style(LineStyle::dashed_loose()),
                );
            }
            p.vline(
                VLine::new(ram_label.clone(), re)
                    .color(machine_color(1))
                    .width(2.0)
                    .style(LineStyle::dashed_loose()),
            );
            p.vline(
                VLine::new(here_label.clone(), here)
                    .color(Color32::GRAY)
                    .width(1.0),
            );
        });
    hint(
        ui,
        format!(
            "Each tier is an order of magnitude slower than the one above: VRAM {} GB/s, RAM {} GB/s, the disk {} GB/s (rates as this model decodes). Past RAM, llama.cpp still runs because it memory-maps the file, but the page cache evicts each page before the next token needs it, so every byte outside VRAM is read from the disk again: a token every few seconds.",
            style::rate(vr),
            style::rate(rr),
            style::rate(sr)
        ),
    );
    ui.add_space(10.0);
}

/// (2) Memory of one device against context length.
fn memory_vs_context(
    ui: &mut Ui,
    t: &crate::core::teach::Teach,
    scenario: &crate::core::scenario::Scenario,
    w: f32,
    plot_h: f32,
) {
    let per_dev = if scenario.gpus == 0 { "RAM" } else { "one GPU" };
    ui.label(RichText::new(format!("2. Memory of {per_dev} against context length")).strong());
    let cur = (scenario.context.max(1) as f64).log2();
    let total_color = ui.visuals().strong_text_color();
    let (cap_name, cap) = if t.gpu_capacity.0 > 0 && scenario.gpus > 0 {
        (format!("usable VRAM of {}", t.machine), t.gpu_capacity)
    } else {
        (format!("usable RAM of {}", t.machine), t.ram_capacity)
    };
    let mut items: Vec<(Color32, Swatch, &str)> = t
        .per_kind
        .iter()
        .map(|(k, _)| (component_color(*k), Swatch::Line, k.label()))
        .collect();
    items.push((total_color, Swatch::Line, "Total"));
    items.push((machine_color(0), Swatch::Dashed, &cap_name));
    legend_row(ui, &items);
    style::still_plot("memory-vs-context", egui::vec2(w, plot_h))
        .x_axis_label("context (tokens, log scale)")
        .y_axis_label("GiB")
        .x_grid_spacer(|g| {
            let (lo, hi) = g.bounds;
            let step = if hi - lo > 14.0 { 2.0 } else { 1.0 };
            let mut v = Vec::new();
            let mut x = (lo / step).ceil() * step;
            while x <= hi {
                v.push(GridMark {
                    value: x,
                    step_size: step,
                });
                x += step;
            }
            v
        })
        .x_axis_formatter(|mark, _| style::tokens_short(2f64.powf(mark.value).round() as u64))
        .include_y(0.0)
        .include_y(cap.as_gib() * 1.05)
        .show(ui, |p| {
            for (kind, pts) in &t.per_kind {
                p.line(
                    Line::new(kind.label(), pts.clone())
                        .color(component_color(*kind))
                        .width(2.0),
                );
            }
            p.line(
                Line::new("Total", t.total.clone())
                    .color(total_color)
                    .width(2.5),
            );
            p.hline(
                HLine::new(cap_name.clone(), cap.as_gib())
                    .color(machine_color(0))
                    .style(LineStyle::dashed_loose())
                    .width(2.0),
            );
            p.vline(
                VLine::new(
                    format!("your context: {}", group_digits(scenario.context)),
                    cur,
                )
                .color(Color32::GRAY)
                .width(1.0),
            );
        });
    hint(
        ui,
        "The weights do not change with context; the KV cache grows in proportion to it (2 x layers x KV heads x head size x bytes, per token and sequence), and without FlashAttention the prefill scores grow with its square. Where the KV line climbs past the dashed capacity, long prompts stop fitting: quantise the KV cache, use GQA models, PagedAttention, or fewer concurrent sequences.",
    );
}

fn cpu_vs_gpu(ui: &mut Ui, t: &crate::core::teach::Teach, w: f32, plot_h: f32) {
    ui.label(RichText::new("3. CPU vs GPU for this workload").strong());
    let half = (w - 16.0) / 2.0;
    ui.horizontal_top(|ui| {
        bars_plot(
            ui,
            "cpu-gpu-speed",
            "tokens/s (higher is better)",
            &t.bars,
            |b| Some(b.tokens_per_s),
            |x| style::rate(x.unwrap_or(0.0)),
            half,
            plot_h,
        );
        bars_plot(
            ui,
            "cpu-gpu-cost",
            "$ per 1M tokens (lower is better)",
            &t.bars,
            |b| b.usd_per_million,
            style::usd,
            half,
            plot_h,
        );
    });
    egui::Grid::new("cpu-gpu-table")
        .striped(true)
        .spacing([14.0, 4.0])
        .show(ui, |ui| {
            ui.label(RichText::new("Placement").strong());
            ui.label(RichText::new("tok/s").strong());
            ui.label(RichText::new("$ per 1M tok").strong());
            ui.label(RichText::new("Fits").strong());
            ui.end_row();
            for (i, b) in t.bars.iter().enumerate() {
                ui.horizontal(|ui| {
                    let (r, _) =
                        ui.allocate_exact_size(egui::vec2(12.0, 12.0), egui::Sense::hover());
                    ui.painter().rect_filled(r, 2.0, bar_color(i, b));
                    ui.label(&b.label);
                });
                ui.label(style::rate(b.tokens_per_s));
                ui.label(style::usd(b.usd_per_million));
                ui.label(if b.fits { "yes" } else { "no" });
                ui.end_row();
            }
        });
    hint(
        ui,
        "GPUs win on large parallel work: thousands of cores and several times the memory bandwidth of a CPU, so big models and many concurrent requests run far faster. A CPU can still serve a small quantised model to one user: a 4-bit 8B model is under 5 GiB, and decode speed is RAM bandwidth divided by that size. What a CPU cannot do is hold a 70B model's working set at GPU speed. Big unified memory (Apple M-series Max/Ultra, AMD Strix Halo) changes the picture: a large model fits in one pool at a few hundred GB/s, slower than a data-centre GPU but with no PCIe cliff and far more room than a consumer card.",
    );
}

/// The colour of bar `i`: one per placement, grey when the workload does not fit there.
fn bar_color(i: usize, b: &SpeedBar) -> Color32 {
    if b.fits {
        machine_color(i + 1)
    } else {
        Color32::from_gray(150)
    }
}

/// A bar chart of one figure per placement: a value label on each bar and the placement's name
/// under it, so the bars read without the table.
#[allow(clippy::too_many_arguments)]
fn bars_plot(
    ui: &mut Ui,
    id: &str,
    title: &str,
    bars: &[SpeedBar],
    value: impl Fn(&SpeedBar) -> Option<f64>,
    fmt: impl Fn(Option<f64>) -> String,
    w: f32,
    h: f32,
) {
    ui.vertical(|ui| {
        ui.set_width(w);
        ui.label(title);
        let items: Vec<Bar> = bars
            .iter()
            .enumerate()
            .map(|(i, b)| {
                Bar::new(i as f64, value(b).unwrap_or(0.0))
                    .name(&b.label)
                    .fill(bar_color(i, b))
                    .width(0.6)
            })
            .collect();
        let top = bars
            .iter()
            .filter_map(&value)
            .fold(0.0f64, f64::max)
            .max(1e-9);
        let texts: Vec<(f64, f64, String)> = bars
            .iter()
            .enumerate()
            .map(|(i, b)| (i as f64, value(b).unwrap_or(0.0), fmt(value(b))))
            .collect();
        // Names wrap onto two short lines under the bars; the full name is in the table.
        let per_bar = (w / bars.len().max(1) as f32 / 7.0).max(6.0) as usize;
        let labels: Vec<String> = bars
            .iter()
            .map(|b| style::shorten(&b.label, per_bar))
            .collect();
        style::still_plot(id, egui::vec2(w, h))
            .show_grid([false, true])
            .include_y(0.0)
            .include_y(top * 1.18)
            .include_x(-0.5)
            .include_x(bars.len() as f64 - 0.5)
            .x_grid_spacer(|g| {
                let (lo, hi) = g.bounds;
                (lo.ceil() as i64..=hi.floor() as i64)
                    .map(|i| GridMark {
                        value: i as f64,
                        step_size: 1.0,
                    })
                    .collect()
            })
            .x_axis_formatter(move |mark, _| {
                let i = mark.value.round();
                if (mark.value - i).abs() < 1e-6 && i >= 0.0 {
                    labels.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .show(ui, |p| {
                p.bar_chart(BarChart::new(id, items));
                for (x, y, t) in texts {
                    p.text(
                        Text::new("", PlotPoint::new(x, y), RichText::new(t).size(11.0))
                            .anchor(Align2::CENTER_BOTTOM)
                            .allow_hover(false),
                    );
                }
            });
    });
}

/// Mixture-of-experts models: tok/s against `--n-cpu-moe n` (the routed experts of the first n
/// layers in RAM, everything else on the GPU) beside whole layers on the CPU, both against the
/// layers that keep (some of) their weights in RAM.
fn expert_offload_plot(ui: &mut Ui, t: &crate::core::teach::Teach, w: f32, plot_h: f32) {
    ui.add_space(8.0);
    ui.label(RichText::new("1a. Mixture of experts: only the experts in RAM").strong());
    let fit_label = match t.n_cpu_moe_fit {
        Some(n) => format!("fits from --n-cpu-moe {n}"),
        None => "no --n-cpu-moe fits".to_string(),
    };
    legend_row(
        ui,
        &[
            (
                GREEN,
                Swatch::Line,
                "-ngl 99 --n-cpu-moe n: the experts of n layers in RAM",
            ),
            (BLUE, Swatch::Line, "-ngl L-n: n whole layers on the CPU"),
            (
                GREEN,
                Swatch::Dotted,
                "dotted: would not fit the GPU or RAM",
            ),
            (RED, Swatch::Dashed, &fit_label),
        ],
    );
    let l = t.layers as f64;
    // The layer curve against the layers on the CPU, for the same x.
    let layers_on_cpu: Vec<[f64; 2]> = t.cpu_layers.iter().map(|q| [l - q[0], q[1]]).collect();
    style::still_plot("speed-vs-n-cpu-moe", egui::vec2(w, plot_h))
        .x_axis_label("layers with weights in RAM (n)")
        .y_axis_label("tok/s")
        .include_y(0.0)
        .show(ui, |p| {
            // Solid where the machine holds the split, dotted where the GPU or RAM does not.
            let (k_lo, k_hi) = (l - t.k_fit as f64, l - t.k_min as f64);
            let (n_lo, n_hi) = match (t.n_cpu_moe_fit, t.n_cpu_moe_max) {
                (Some(a), Some(b)) => (a as f64, b as f64),
                _ => (f64::INFINITY, f64::INFINITY),
            };
            for (name, pts, lo, hi, color, width) in [
                (
                    "whole layers on the CPU",
                    &layers_on_cpu,
                    k_lo,
                    k_hi,
                    BLUE,
                    1.5,
                ),
                ("experts in RAM", &t.expert_offload, n_lo, n_hi, GREEN, 2.5),
            ] {
                let (runs, below, above) = split_points(pts, lo, hi);
                if runs.len() > 1 {
                    p.line(Line::new(name, runs).color(color).width(width));
                }
                for (i, pts) in [below, above].into_iter().enumerate() {
                    if pts.len() > 1 {
                        p.line(
                            Line::new(format!("{name} (would not fit) {i}"), pts)
                                .color(color)
                                .style(LineStyle::dotted_loose())
                                .width(1.5),
                        );
                    }
                }
            }
            if let Some(n) = t.n_cpu_moe_fit {
                p.vline(
                    VLine::new(fit_label.clone(), n as f64)
                        .color(RED)
                        .width(2.0)
                        .style(LineStyle::dashed_loose()),
                );
            }
        });
    let at = |n: u64| {
        t.expert_offload
            .get(n as usize)
            .map(|q| q[1])
            .unwrap_or(0.0)
    };
    hint(
        ui,
        format!(
            "A token uses only a few experts per layer, so with the experts of n layers in RAM the CPU reads just those few from RAM while attention, the router, the KV cache and the shared weights stay on the GPU: {} tok/s with every expert on the GPU, {} tok/s with all of them in RAM (--cpu-moe){}. Moving whole layers instead puts their attention and KV on the CPU as well.",
            style::rate(at(0)),
            style::rate(at(t.layers)),
            match t.n_cpu_moe_fit {
                Some(n) => format!(
                    ", {} tok/s at --n-cpu-moe {n}, the fewest that fit",
                    style::rate(at(n))
                ),
                None => String::new(),
            }
        ),
    );
}
