//! The Cluster tab: when one machine is not enough. Pick a machine, let the planner find the
//! node count (or set it), choose the link for a home cluster; read the smallest and the
//! cheapest cluster, the memory of one GPU at that layout, the node-count curve of time and
//! cost (where adding nodes stops paying) and the table behind it.
//!
//! Every number is `core::cluster`'s (`cluster_curve`, cached here until the scenario, the
//! machine or the settings change); this module only draws.

use super::data::View;
use super::style::{empty_state, hint, still_plot, warn};
use crate::core::catalog::{Catalog, LinkPreset, MachineKind};
use crate::core::cluster::{ClusterCurvePoint, ClusterPick, MAX_NODES, PointCells, cluster_curve};
use crate::core::fit::FitSettings;
use crate::core::format;
use crate::core::scenario::Scenario;
use egui::{Color32, ComboBox, DragValue, RichText, Ui, vec2};
use egui_plot::{Line, Points};

const TIME_COLOR: Color32 = Color32::from_rgb(0, 130, 200);
const COST_COLOR: Color32 = Color32::from_rgb(245, 130, 48);

/// The Cluster tab: the machine it plans for and the last plan.
#[derive(Default)]
pub(crate) struct ClusterTab {
    machine: Option<String>,
    cache: Option<(Scenario, String, FitSettings, ClusterPick)>,
}

/// Machines a cluster is planned on: GPU machines, cloud first (training and vLLM want them).
fn candidates(cat: &Catalog) -> Vec<(String, String)> {
    let mut v: Vec<_> = cat
        .machines
        .iter()
        .filter(|m| m.gpu.is_some())
        .map(|m| {
            (
                m.kind != MachineKind::Cloud,
                m.id.to_string(),
                m.name.to_string(),
            )
        })
        .collect();
    v.sort();
    v.into_iter().map(|(_, id, name)| (id, name)).collect()
}

impl ClusterTab {
    pub fn ui(&mut self, ui: &mut Ui, v: &mut View<'_>) {
        let list = candidates(&v.data.catalog);
        if list.is_empty() {
            empty_state(
                ui,
                "No GPU machines",
                "The catalog has no machine with a GPU to cluster.",
            );
            return;
        }
        let id = self
            .machine
            .clone()
            .filter(|id| list.iter().any(|(m, _)| m == id))
            .unwrap_or_else(|| {
                list.iter()
                    .find(|(m, _)| m == "aws-p5-48xlarge")
                    .unwrap_or(&list[0])
                    .0
                    .clone()
            });
        self.inputs(ui, v, &list, &id);
        ui.add_space(6.0);
        let settings = v.state.fit_settings();
        let s = v.state.scenario.clone();
        let fresh = self
            .cache
            .as_ref()
            .is_some_and(|(cs, cid, cst, _)| *cs == s && *cid == id && *cst == settings);
        if !fresh {
            let cat = &v.data.catalog;
            let Some(m) = cat.machine(&id) else { return };
            let Some(acc) = m.gpu.as_deref().and_then(|g| cat.accelerator(g)) else {
                return;
            };
            let pick = cluster_curve(&s, m, acc, &s.cluster, cat, &settings);
            self.cache = Some((s.clone(), id.clone(), settings, pick));
        }
        let Some((_, _, _, pick)) = &self.cache else {
            return;
        };
        let training = s.mode.is_training();
        answer(ui, pick);
        if pick.smallest.is_none() {
            return;
        }
        ui.add_space(6.0);
        ui.horizontal_wrapped(|ui| {
            let w = ((ui.available_width() - 24.0) / 2.0).clamp(240.0, 640.0);
            curve_plot(ui, pick, training, false, w);
            curve_plot(ui, pick, training, true, w);
        });
        ui.add_space(6.0);
        curve_grid(ui, pick, training);
    }

    fn inputs(&mut self, ui: &mut Ui, v: &mut View<'_>, list: &[(String, String)], id: &str) {
        ui.horizontal_wrapped(|ui| {
            let label = ui.label("Machine");
            let shown = list
                .iter()
                .find(|(m, _)| m == id)
                .map_or(id.to_string(), |(_, n)| n.clone());
            let r = ComboBox::from_id_salt("cluster-machine")
                .width(300.0)
                .selected_text(shown)
                .show_ui(ui, |ui| {
                    for (m, name) in list {
                        if ui.selectable_label(m == id, name).clicked() {
                            self.machine = Some(m.clone());
                        }
                    }
                });
            let _ = r.response.labelled_by(label.id);
        });
        ui.horizontal_wrapped(|ui| {
            let c = &mut v.state.scenario.cluster;
            let mut auto = c.nodes.is_none();
            if ui
                .checkbox(&mut auto, "Fewest nodes that fit")
                .on_hover_text("Off: plan exactly the node count you set.")
                .changed()
            {
                c.nodes = if auto { None } else { Some(2) };
            }
            if let Some(n) = c.nodes.as_mut() {
                let label = ui.label("Nodes");
                ui.add(DragValue::new(n).range(1..=MAX_NODES).speed(0.2))
                    .labelled_by(label.id);
            }
            ui.separator();
            ui.horizontal(|ui| {
                let label = ui.label("Link");
                let shown = c.link.map_or("the machine's network", |l| l.label());
                let r = ComboBox::from_id_salt("cluster-link")
                    .selected_text(shown)
                    .show_ui(ui, |ui| {
                        ui.selectable_value(&mut c.link, None, "the machine's network");
                        for l in LinkPreset::ALL {
                            ui.selectable_value(&mut c.link, Some(l), l.label());
                        }
                    });
                let _ = r.response.labelled_by(label.id);
            });
        });
    }
}

/// The answer in sentences: smallest and cheapest, per-GPU memory, the network.
fn answer(ui: &mut Ui, pick: &ClusterPick) {
    let Some(sm) = &pick.smallest else {
        warn(
            ui,
            format!("No cluster of {} tried fits this scenario.", pick.name),
        );
        return;
    };
    ui.label(RichText::new(format!("Smallest: {}", point_text(sm, pick))).strong());
    if let Some(ch) = &pick.cheapest
        && ch.nodes != sm.nodes
    {
        ui.label(format!("Cheapest: {}", point_text(ch, pick)));
    }
    if let Some(t) = &sm.train {
        memory_bar(ui, t);
    }
    hint(
        ui,
        format!(
            "Network between nodes: {}{}.",
            pick.network,
            if pick.network_assumed {
                " (assumed for this kind of machine; choose the link above)"
            } else {
                ""
            }
        ),
    );
}

fn point_text(p: &ClusterCurvePoint, pick: &ClusterPick) -> String {
    let nodes = format::count(p.nodes, "node", "nodes");
    let gpus = format::count(p.nodes * pick.gpus_per_node, "GPU", "GPUs");
    if let Some(t) = &p.train {
        return format!(
            "{nodes} ({gpus}), {} · {} per GPU of {} · {} tokens/s (MFU {}) · {} · {}",
            t.layout_text(),
            format::bytes(t.per_gpu.total()),
            format::bytes(t.usable_per_gpu),
            format::rate(t.tokens_per_s),
            format::percent(t.mfu),
            format::hours(t.run_hours),
            format::usd_whole(t.run_usd)
        );
    }
    let Some(sp) = &p.serve else {
        return nodes;
    };
    let users = sp
        .serving
        .as_ref()
        .and_then(|x| x.machine_users())
        .map(|u| format!(" · {} users at the target", format::group_digits(u)))
        .unwrap_or_default();
    format!(
        "{nodes} ({gpus}), {} TP {} × PP {} · {} for one user{users} · {} per 1M output tokens",
        sp.engine.label(),
        sp.tp.max(1),
        sp.pp.max(1),
        format::tokens_per_s(sp.decode_tokens_per_s),
        format::usd(p.cost_usd())
    )
}

/// One GPU's memory at the smallest layout, one bar per pipeline stage (stage 1 holds the
/// embedding and the most activations in flight), each against the usable memory.
fn memory_bar(ui: &mut Ui, t: &crate::core::cluster::TrainPlan) {
    let stages: &[crate::core::cluster::PerGpu] = if t.stages.is_empty() {
        std::slice::from_ref(&t.per_gpu)
    } else {
        &t.stages
    };
    let cap = stages
        .iter()
        .map(|g| g.total().as_f64())
        .fold(t.usable_per_gpu.as_f64(), f64::max)
        .max(1.0);
    let n = stages.len();
    for (i, g) in stages.iter().enumerate() {
        let label = if n > 1 {
            format!("Stage {} of {n}", i + 1)
        } else {
            "Every GPU".to_string()
        };
        stage_bar(ui, g, cap, t, &label);
    }
    hint(
        ui,
        if n > 1 {
            format!(
                "One GPU per pipeline stage: up to {} of {} usable (weights, gradients, optimizer, master weights, activations, overhead; hover for each). The first stage holds the embedding and {} micro-batches in flight, the last the output head; each node's GPUs hold {}.",
                format::bytes(t.per_gpu.total()),
                format::bytes(t.usable_per_gpu),
                format::group_digits(t.layout.pp),
                format::count(
                    (t.gpus / t.nodes.max(1) / t.layout.tp.max(1)).clamp(1, t.layout.pp.max(1)),
                    "stage",
                    "stages"
                )
            )
        } else {
            format!(
                "One GPU: {} of {} usable (weights, gradients, optimizer, master weights, activations, overhead; hover for each).",
                format::bytes(t.per_gpu.total()),
                format::bytes(t.usable_per_gpu)
            )
        },
    );
}

/// One stage's bar: its parts against `cap`, a mark at the usable memory.
fn stage_bar(
    ui: &mut Ui,
    g: &crate::core::cluster::PerGpu,
    cap: f64,
    t: &crate::core::cluster::TrainPlan,
    label: &str,
) {
    let parts = [
        ("Weights", g.weights),
        ("Gradients", g.gradients),
        ("Optimizer", g.optimizer),
        ("Master", g.master_weights),
        ("Activations", g.activations),
        ("Overhead", g.overhead),
    ];
    ui.horizontal(|ui| {
        ui.add_sized([90.0, 18.0], egui::Label::new(RichText::new(label).small()));
        let width = (ui.available_width() - 8.0).clamp(120.0, 810.0);
        let (rect, resp) = ui.allocate_exact_size(vec2(width, 18.0), egui::Sense::hover());
        let p = ui.painter();
        p.rect_filled(rect, 3.0, ui.visuals().faint_bg_color);
        let mut x = rect.left();
        let mut tip = Vec::new();
        for (i, (name, b)) in parts.into_iter().enumerate() {
            let w = (b.as_f64() / cap) as f32 * rect.width();
            if w > 0.0 {
                p.rect_filled(
                    egui::Rect::from_min_size(egui::pos2(x, rect.top()), vec2(w, rect.height())),
                    0.0,
                    super::style::machine_color(i),
                );
                x += w;
            }
            tip.push(format!("{name}: {}", format::bytes(b)));
        }
        let usable_x = rect.left() + (t.usable_per_gpu.as_f64() / cap) as f32 * rect.width();
        p.vline(
            usable_x,
            rect.y_range(),
            egui::Stroke::new(2.0, ui.visuals().strong_text_color()),
        );
        resp.on_hover_text(format!(
            "{label}, one GPU at {}\n{}\ntotal: {} of {} usable",
            t.layout_text(),
            tip.join("\n"),
            format::bytes(g.total()),
            format::bytes(t.usable_per_gpu)
        ));
    });
}

/// Time (or one user's speed) and cost against the node count.
fn curve_plot(ui: &mut Ui, pick: &ClusterPick, training: bool, cost: bool, width: f32) {
    let pts: Vec<[f64; 2]> = pick
        .curve
        .iter()
        .filter(|p| p.fits())
        .filter_map(|p| {
            let y = if cost {
                p.cost_usd()?
            } else if training {
                p.hours()?
            } else {
                p.serve.as_ref()?.decode_tokens_per_s
            };
            y.is_finite().then_some([p.nodes as f64, y])
        })
        .collect();
    let (title, color) = match (cost, training) {
        (true, true) => ("job cost, $", COST_COLOR),
        (true, false) => ("$ per 1M output tokens", COST_COLOR),
        (false, true) => ("job time, hours", TIME_COLOR),
        (false, false) => ("one user's tok/s", TIME_COLOR),
    };
    ui.vertical(|ui| {
        ui.label(RichText::new(title).strong());
        let fmt = move |y: f64| {
            if cost {
                format::usd_coarse(y)
            } else {
                format::rate_coarse(y)
            }
        };
        still_plot(("cluster-curve", cost), vec2(width, 200.0))
            .x_axis_label("nodes")
            .y_axis_formatter(|m, _| format::tick(m.value))
            .label_formatter(move |pos| match pos {
                egui_plot::HoverPosition::NearDataPoint { position, .. } => Some(format!(
                    "{} nodes: {}",
                    format::rate_coarse(position.x),
                    fmt(position.y)
                )),
                _ => None,
            })
            .include_y(0.0)
            .include_x(0.0)
            .show(ui, |pu| {
                pu.line(Line::new(title, pts.clone()).color(color).width(2.0));
                pu.points(
                    Points::new(title, pts)
                        .color(color)
                        .radius(3.5)
                        .filled(true),
                );
            });
    });
}

/// The table behind the curves: the cells every surface shows ([`PointCells`]).
fn curve_grid(ui: &mut Ui, pick: &ClusterPick, training: bool) {
    egui::Grid::new("cluster-curve-grid")
        .striped(true)
        .num_columns(6)
        .show(ui, |ui| {
            let [rate, time, cost] = PointCells::headers(training);
            for h in ["nodes", "layout", "per GPU", rate, time, cost] {
                ui.label(RichText::new(h).strong());
            }
            ui.end_row();
            for p in &pick.curve {
                ui.label(format::group_digits(p.nodes));
                if !p.fits() {
                    ui.label(RichText::new("does not fit").weak());
                    ui.end_row();
                    continue;
                }
                let c = p.cells();
                for cell in [c.layout, c.per_gpu, c.rate, c.time, c.cost] {
                    ui.label(cell);
                }
                ui.end_row();
            }
        });
}
