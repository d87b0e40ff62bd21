//! The Machines tab: the whole catalog as a filterable, sortable table ("This machine" pinned
//! first), and the solver answers for the machine in focus.
//!
//! Rows are laid out by hand with fixed column widths inside `ScrollArea::show_rows`, so only the
//! visible rows cost anything per frame (egui_extras is not a dependency).

use super::app::{HeadroomApp, digits, empty_state};
use super::derived::{cost_of, latency_of, speed_of};
use super::state::SortColumn;
use super::style::{self, hint, signed_gib, verdict_color};
use crate::core::catalog::{Machine, MachineKind, MemoryKind, Price};
use crate::core::fit::FitResult;
use egui::{Align, Layout, RichText, Ui, vec2};

const ROW_H: f32 = 24.0;

/// Column widths; the machine name takes what is left.
const W_CHECK: f32 = 22.0;
const W_KIND: f32 = 76.0;
const W_GPU: f32 = 156.0;
const W_VERDICT: f32 = 96.0;
const W_HEADROOM: f32 = 84.0;
const W_NUM: f32 = 60.0;
const W_COST: f32 = 70.0;
/// Horizontal gap between cells.
const GAP: f32 = 6.0;

/// What every row needs, computed once per frame.
struct RowCtx {
    name_w: f32,
    gpu_w: f32,
    training: bool,
    local: Option<String>,
    focus: Option<String>,
}

/// Short kind names for the filter buttons and the Kind column.
fn kind_short(k: MachineKind) -> &'static str {
    match k {
        MachineKind::Apple => "Apple",
        _ => k.label(),
    }
}

/// A fixed-width cell.
fn cell<R>(ui: &mut Ui, w: f32, right: bool, add: impl FnOnce(&mut Ui) -> R) -> R {
    let layout = if right {
        Layout::right_to_left(Align::Center)
    } else {
        Layout::left_to_right(Align::Center)
    };
    ui.allocate_ui_with_layout(vec2(w, ROW_H), layout, |ui| {
        ui.set_min_size(vec2(w, ROW_H));
        ui.set_max_width(w);
        add(ui)
    })
    .inner
}

/// A GPU name without the vendor's brand words: "RTX 4090", "M4 Max (40-core GPU)".
fn short_gpu(name: &str) -> &str {
    for p in [
        "NVIDIA GeForce ",
        "NVIDIA ",
        "GeForce ",
        "AMD Radeon ",
        "AMD ",
        "Apple ",
        "Intel ",
    ] {
        if let Some(rest) = name.strip_prefix(p) {
            return rest;
        }
    }
    name
}

/// "2x RTX 4090, 24 GiB", "M3 Max (40-core GPU)", "CPU only".
fn gpu_text(m: &Machine, cat: &crate::core::catalog::Catalog) -> String {
    match m.gpu.as_deref().and_then(|g| cat.accelerator(g)) {
        Some(a) if a.memory_kind == MemoryKind::Unified => short_gpu(&a.name).to_string(),
        Some(a) => {
            let n = if m.gpu_count > 1 {
                format!("{}x ", m.gpu_count)
            } else {
                String::new()
            };
            format!("{n}{}, {:.0} GiB", short_gpu(&a.name), a.memory.as_gib())
        }
        None => "CPU only".into(),
    }
}

fn machine_tooltip(m: &Machine, f: &FitResult, gpu: &str, unified: bool) -> String {
    let shared = if unified { " (unified memory)" } else { "" };
    let mut t = format!(
        "{}\n{}{shared}\nCPU: {} ({} cores)\nRAM: {} at {}\n",
        m.name, gpu, m.cpu, m.cpu_cores, m.ram, m.ram_bandwidth
    );
    match &m.price {
        Some(Price::Hourly {
            usd,
            region,
            price_date,
            ..
        }) => t.push_str(&format!("${usd:.2}/hour ({region}, {price_date})\n")),
        Some(Price::Purchase {
            usd,
            region,
            price_date,
            ..
        }) => t.push_str(&format!(
            "about ${usd:.0} to buy ({region}, {price_date})\n"
        )),
        None => {}
    }
    if f.gpu_capacity.0 > 0 {
        t.push_str(&format!(
            "GPU: needs {} of {} usable per GPU\n",
            style::gib2(f.gpu_required),
            style::gib2(f.gpu_capacity)
        ));
    }
    t.push_str(&format!(
        "RAM: {} usable after a {} OS reserve\n",
        style::gib2(f.ram_capacity),
        style::gib2(f.os_reserve)
    ));
    for n in &f.notes {
        t.push_str(&format!("- {n}\n"));
    }
    if let Some(n) = &m.notes {
        t.push_str(&format!("{n}\n"));
    }
    t.push_str(&format!("Source: {}", m.source));
    t
}

impl HeadroomApp {
    pub(super) fn machines_tab(&mut self, ui: &mut Ui) {
        let training = self.state.scenario.mode.is_training();
        self.filter_bar(ui);
        ui.add_space(2.0);
        self.solver_card(ui);
        ui.add_space(4.0);

        let local = self.local_id();
        let rows = self
            .derived
            .rows(
                &self.state.filter,
                &self.machines,
                &self.search_keys,
                local.as_deref(),
            )
            .to_vec();
        let others = rows
            .iter()
            .filter(|&&i| Some(self.machines[i].id.as_str()) != local.as_deref())
            .count();
        // Extra width on large windows goes to the name (60 %) and GPU (40 %) columns.
        let fixed = W_CHECK
            + W_KIND
            + W_GPU
            + W_VERDICT
            + W_HEADROOM
            + 2.0 * W_NUM
            + W_COST
            + 8.0 * GAP
            + 16.0;
        let extra = (ui.available_width() - fixed - 240.0).max(0.0);
        let gpu_w = (W_GPU + extra * 0.4).min(300.0);
        let name_w = (ui.available_width() - fixed - (gpu_w - W_GPU)).max(140.0);

        // Header.
        ui.horizontal(|ui| {
            ui.spacing_mut().item_spacing.x = GAP;
            cell(ui, W_CHECK, false, |ui| ui.label(""));
            self.sort_header(ui, name_w, "Machine", SortColumn::Name, false);
            self.sort_header(ui, W_KIND, "Kind", SortColumn::Kind, false);
            cell(ui, gpu_w, false, |ui| {
                ui.label(RichText::new("GPU").strong())
            });
            self.sort_header(ui, W_VERDICT, "Verdict", SortColumn::Verdict, false);
            self.sort_header(ui, W_HEADROOM, "Headroom", SortColumn::Headroom, true);
            let (speed, lat, cost) = if training {
                ("Tokens/s", "Step", "Run cost")
            } else {
                ("tok/s", "TTFT", "$/1M tok")
            };
            self.sort_header(ui, W_NUM, speed, SortColumn::Speed, true);
            self.sort_header(ui, W_NUM, lat, SortColumn::Latency, true);
            self.sort_header(ui, W_COST, cost, SortColumn::Cost, true);
        });
        ui.separator();

        let ctx = RowCtx {
            name_w,
            gpu_w,
            training,
            local,
            focus: self.focus_machine().map(|m| m.id.clone()),
        };
        if others == 0 {
            let detail = if self.state.filter.fits_only {
                "Nothing in the catalog fits this workload. Try a lower weight precision (Q4_K_M), a shorter context, a smaller batch, KV-cache quantisation, more GPUs, or untick \"Fits only\" to see by how much each machine misses."
            } else {
                "No machine matches the kind filter and the search text."
            };
            if let Some(&i) = rows.first() {
                self.machine_row(ui, i, &ctx);
            }
            empty_state(ui, "No machines to show", detail);
            return;
        }

        // "This machine" stays in view above the scrolling rows.
        let pinned = ctx.local.is_some()
            && rows
                .first()
                .is_some_and(|&i| Some(self.machines[i].id.as_str()) == ctx.local.as_deref());
        let rest = if pinned {
            self.machine_row(ui, rows[0], &ctx);
            ui.separator();
            &rows[1..]
        } else {
            &rows[..]
        };
        let mut area = egui::ScrollArea::vertical()
            .id_salt("machine-rows")
            .auto_shrink([false, false]);
        if let Some(y) = self.take_pick_scroll(rest, ROW_H + ui.spacing().item_spacing.y) {
            area = area.vertical_scroll_offset(y);
        }
        area.show_rows(ui, ROW_H, rest.len(), |ui, range| {
            for &i in &rest[range] {
                self.machine_row(ui, i, &ctx);
            }
        });
    }

    fn filter_bar(&mut self, ui: &mut Ui) {
        ui.horizontal_wrapped(|ui| {
            ui.label("Show:");
            let all = self.state.filter.kinds.is_empty();
            if ui.selectable_label(all, "All kinds").clicked() {
                self.state.filter.kinds.clear();
            }
            for k in MachineKind::ALL {
                let on = self.state.filter.kinds.contains(&k);
                if ui
                    .selectable_label(on, kind_short(k))
                    .on_hover_text(format!("Show {} machines (click again to hide)", k.label()))
                    .clicked()
                {
                    if on {
                        self.state.filter.kinds.retain(|x| *x != k);
                    } else {
                        self.state.filter.kinds.push(k);
                    }
                }
            }
            ui.separator();
            ui.checkbox(&mut self.state.filter.fits_only, "Fits only");
            ui.separator();
            let l = ui.label("Search:");
            ui.add(
                egui::TextEdit::singleline(&mut self.state.filter.search)
                    .hint_text("name, GPU, CPU")
                    .desired_width(150.0),
            )
            .labelled_by(l.id);
            if !self.state.filter.search.is_empty() && ui.small_button("Clear").clicked() {
                self.state.filter.search.clear();
            }
        });
    }

    fn sort_header(&mut self, ui: &mut Ui, w: f32, title: &str, col: SortColumn, right: bool) {
        let f = &mut self.state.filter;
        let active = f.sort == col;
        let text = if active {
            format!("{title} {}", if f.descending { "(desc)" } else { "(asc)" })
        } else {
            title.to_string()
        };
        cell(ui, w, right, |ui| {
            let r = ui
                .add(egui::Button::new(RichText::new(text).strong()).frame(false))
                .on_hover_text(format!(
                    "Sort by {title}; click again to reverse, a third time for catalog order"
                ));
            if r.clicked() {
                if !active {
                    f.sort = col;
                    // Numbers read best largest first, except latency and cost.
                    f.descending = matches!(col, SortColumn::Speed | SortColumn::Headroom);
                } else if f.descending == matches!(col, SortColumn::Speed | SortColumn::Headroom) {
                    f.descending = !f.descending;
                } else {
                    f.sort = SortColumn::Catalog;
                    f.descending = false;
                }
            }
        });
    }

    fn machine_row(&mut self, ui: &mut Ui, i: usize, ctx: &RowCtx) {
        let (name_w, training) = (ctx.name_w, ctx.training);
        let m = &self.machines[i];
        let Some(f) = self.derived.fits.get(i) else {
            return;
        };
        let id = m.id.clone();
        let is_local = ctx.local.as_deref() == Some(id.as_str());
        let gpu = gpu_text(m, &self.catalog);
        let unified = m
            .gpu
            .as_deref()
            .and_then(|g| self.catalog.accelerator(g))
            .is_some_and(|a| a.memory_kind == MemoryKind::Unified);
        let focus = ctx.focus.as_deref() == Some(id.as_str());
        let mut selected = self.state.is_selected(&id);
        let mut clicked_name = false;
        ui.horizontal(|ui| {
            ui.spacing_mut().item_spacing.x = GAP;
            cell(ui, W_CHECK, false, |ui| {
                let r = ui.add(egui::Checkbox::without_text(&mut selected)).accessible_name(format!("Compare {}", m.name));
                r.on_hover_text("Draw this machine's capacity on the Breakdown bars and add it to the report");
            });
            cell(ui, name_w, false, |ui| {
                let text = if is_local { RichText::new(&m.name).strong() } else { RichText::new(&m.name) };
                let r = ui.add(egui::Button::selectable(focus, text).truncate()).on_hover_ui(|ui| {
                    ui.label(machine_tooltip(m, f, &gpu, unified));
                });
                clicked_name = r.clicked();
            });
            cell(ui, W_KIND, false, |ui| ui.label(kind_short(m.kind)));
            cell(ui, ctx.gpu_w, false, |ui| ui.add(egui::Label::new(&gpu).truncate()));
            cell(ui, W_VERDICT, false, |ui| style::verdict_badge(ui, f));
            cell(ui, W_HEADROOM, true, |ui| {
                let c = if f.headroom_bytes >= 0 { verdict_color(crate::core::fit::Verdict::Gpu) } else { verdict_color(crate::core::fit::Verdict::None) };
                ui.label(RichText::new(signed_gib(f.headroom_bytes)).color(c))
                    .on_hover_text("Usable memory minus what the workload needs, in the memory that decides the verdict")
            });
            let (a, b, c) = if training {
                let t = f.training.as_ref();
                (
                    if f.fits() { style::rate(speed_of(f)) } else { "-".into() },
                    t.map(|t| style::duration(t.step_seconds)).unwrap_or_else(|| "-".into()),
                    if cost_of(f).is_finite() { style::usd(Some(cost_of(f))) } else { "-".into() },
                )
            } else {
                (
                    if f.fits() { style::rate(speed_of(f)) } else { "-".into() },
                    if f.fits() && latency_of(f).is_finite() { style::duration(latency_of(f)) } else { "-".into() },
                    if f.fits() { style::usd(f.usd_per_million_tokens) } else { "-".into() },
                )
            };
            cell(ui, W_NUM, true, |ui| ui.label(a));
            cell(ui, W_NUM, true, |ui| ui.label(b));
            cell(ui, W_COST, true, |ui| ui.label(c));
        });
        if selected != self.state.is_selected(&id) {
            self.state.set_selected(&id, selected);
        }
        if clicked_name {
            self.state.focus = Some(id);
        }
    }

    /// The solver answers for the machine in focus.
    fn solver_card(&mut self, ui: &mut Ui) {
        let Some(m) = self.focus_machine().cloned() else {
            return;
        };
        let training = self.state.scenario.mode.is_training();
        let settings = self.state.fit_settings();
        let scenario = self.state.scenario.clone();
        let sol = self
            .derived
            .solvers(&scenario, &settings, &m, &self.catalog)
            .clone();
        let fit = self.derived.fit(&m.id).cloned();
        egui::Frame::group(ui.style()).show(ui, |ui| {
            ui.set_width(ui.available_width());
            ui.horizontal_wrapped(|ui| {
                ui.label(RichText::new(format!("For {}", m.name)).strong());
                if let Some(f) = &fit {
                    style::verdict_badge(ui, f);
                }
                hint(ui, "(click a machine name to ask about another)");
            });
            ui.horizontal_wrapped(|ui| {
                let ctx = match sol.max_context {
                    Some(c) => format!("{} tokens", digits(c)),
                    None => "does not fit on the GPU even at 256".into(),
                };
                ui.label(format!("Largest context on the GPU: {ctx}"));
                ui.separator();
                let b = match sol.max_batch {
                    Some(b) => digits(b),
                    None => "none fits".into(),
                };
                ui.label(format!("Largest batch: {b}"));
                if !training {
                    ui.separator();
                    let p = match sol.precision {
                        Some(p) => p.label().to_string(),
                        None => "none down to Q2_K".into(),
                    };
                    ui.label(format!("Best precision that fits: {p}"));
                }
                if let (Some(n), Some(g)) = (sol.min_gpus, &sol.gpu_name) {
                    ui.separator();
                    ui.label(format!("Fewest GPUs: {n}x {g}"));
                }
                if let Some(n) = sol.min_instances {
                    ui.separator();
                    ui.label(format!("Fewest machines of this type: {n}"));
                }
            });
            if m.gpu.is_none() {
                hint(ui, "This machine has no GPU: the GPU answers are empty. A CPU-only machine serves from RAM (see its verdict).");
            }
        });
    }
}
