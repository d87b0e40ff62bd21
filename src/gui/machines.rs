//! The Machines tab: the whole catalog as a filterable, sortable table ("This machine" pinned
//! first), and the solver answers for the machine in focus.
//!
//! The table is an `egui_extras::TableBuilder`: a sticky header, resizable columns, rows laid
//! out only when visible (`TableBody::rows`), and a horizontal scroll when the window is too
//! narrow for every column. Names that do not fit are cut and shown whole on hover.

use super::data::View;
use super::derived::{Rows, cost_of, latency_of, speed_of};
use super::state::{MachineFilter, SortColumn};
use super::style::{self, empty_state, hint, signed_gib, verdict_color};
use crate::core::catalog::{Catalog, Machine, MachineKind, MemoryKind, Price};
use crate::core::fit::{FitResult, Verdict};
use crate::core::format::group_digits;
use crate::core::format::{self, MISSING};
use crate::core::scenario::Mode;
use egui::{Align, Layout, RichText, Ui};
use egui_extras::{Column, TableBuilder};

const ROW_H: f32 = 24.0;

/// The Machines tab (its filters and sorting live in the app's [`super::state::State`]).
pub(crate) struct MachinesTab;

/// Short kind names for the filter buttons and the Kind column.
fn kind_short(k: MachineKind) -> &'static str {
    match k {
        MachineKind::Apple => "Apple",
        _ => k.label(),
    }
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

/// The GPU and memory columns of a machine: "2x RTX 4090", "2x 24.0 GiB", "64.0 GiB".
struct MachineText {
    gpu: String,
    vram: String,
    ram: String,
    unified: bool,
}

fn machine_text(m: &Machine, f: &FitResult, cat: &Catalog) -> MachineText {
    let acc = m.gpu.as_deref().and_then(|g| cat.accelerator(g));
    let unified = acc.is_some_and(|a| a.memory_kind == MemoryKind::Unified);
    let (gpu, vram) = match acc {
        Some(a) if unified => (short_gpu(&a.name).to_string(), f.gpu_capacity.to_string()),
        Some(a) => {
            let n = if m.gpu_count > 1 {
                format!("{}x ", m.gpu_count)
            } else {
                String::new()
            };
            (
                format!("{n}{}", short_gpu(&a.name)),
                format!("{n}{}", a.memory),
            )
        }
        None => ("CPU only".into(), MISSING.into()),
    };
    MachineText {
        gpu,
        vram,
        ram: m.ram.to_string(),
        unified,
    }
}

fn machine_tooltip(m: &Machine, f: &FitResult, t: &MachineText, reason: &str) -> String {
    let shared = if t.unified { " (unified memory)" } else { "" };
    let mut s = format!(
        "{}\n{}{shared}, {}\nCPU: {} ({} cores)\nRAM: {} at {}\n",
        m.name, t.gpu, t.vram, m.cpu, m.cpu_cores, m.ram, m.ram_bandwidth
    );
    match &m.price {
        Some(Price::Hourly {
            usd,
            region,
            price_date,
            ..
        }) => s.push_str(&format!(
            "{}/hour ({region}, {price_date})\n",
            format::usd_cents(*usd)
        )),
        Some(Price::Purchase {
            usd,
            region,
            price_date,
            ..
        }) => s.push_str(&format!(
            "about {} to buy ({region}, {price_date})\n",
            format::usd_ungrouped(*usd)
        )),
        None => {}
    }
    s.push_str(&format!("{}: {reason}\n", f.verdict_text()));
    if let Some(me) = &f.measured {
        s.push_str(&format!("{}\n", me.text()));
    }
    s.push_str(&format!(
        "RAM: {} usable after a {} OS reserve\n",
        style::gib2(f.ram_capacity),
        style::gib2(f.os_reserve)
    ));
    for n in &f.notes {
        s.push_str(&format!("- {n}\n"));
    }
    if let Some(n) = &m.notes {
        s.push_str(&format!("{n}\n"));
    }
    s.push_str(&format!("Source: {}", m.source));
    s
}

/// The empty-state text when no row is left: the real cause, with what would bring rows back.
pub(crate) fn empty_text(filter: &MachineFilter, rows: &Rows) -> String {
    let search = filter.search.trim();
    let narrowed = !search.is_empty() || !filter.kinds.is_empty();
    let what = match (search.is_empty(), filter.kinds.is_empty()) {
        (false, true) => format!("the search \"{search}\""),
        (true, false) => "the kind filter".to_string(),
        _ => format!("the search \"{search}\" and the kind filter"),
    };
    if filter.fits_only && rows.fitting == 0 {
        "Nothing in the catalog fits this workload. Try a lower weight precision (Q4_K_M), a shorter context, a smaller batch, KV-cache quantisation, more GPUs, or untick \"Fits only\" to see by how much each machine misses.".into()
    } else if filter.fits_only && narrowed && rows.fitting_hidden > 0 {
        format!(
            "{} machines fit this workload, but none of them matches {what}. Clear the search or the kind filter to see them.",
            group_digits(rows.fitting as u64)
        )
    } else if filter.fits_only && narrowed {
        format!(
            "No machine that matches {what} fits this workload. Untick \"Fits only\" to see by how much they miss."
        )
    } else {
        format!("No machine matches {what}.")
    }
}

impl MachinesTab {
    pub fn ui(&mut self, ui: &mut Ui, v: &mut View<'_>) {
        filter_bar(ui, &mut v.state.filter);
        ui.add_space(2.0);
        solver_card(ui, v);
        ui.add_space(4.0);

        let local = v.data.local_id();
        let d = &mut *v.data;
        let rows = d
            .derived
            .rows(
                &v.state.filter,
                &d.machines,
                &d.search_keys,
                local.as_deref(),
                &d.catalog,
            )
            .clone();
        let others = rows
            .shown
            .iter()
            .filter(|&&i| Some(&*d.machines[i].id) != local.as_deref())
            .count();
        let shown: Vec<usize> = rows.shown.clone();
        self.table(ui, v, &shown, local.as_deref(), others == 0);
        if others == 0 {
            empty_state(
                ui,
                "No machines to show",
                &empty_text(&v.state.filter, &rows),
            );
        }
    }

    fn table(
        &mut self,
        ui: &mut Ui,
        v: &mut View<'_>,
        shown: &[usize],
        local: Option<&str>,
        short: bool,
    ) {
        let mode = v.state.scenario.mode;
        let training = mode.is_training();
        let focus = v.data.focus_machine(v.state).map(|m| m.id.clone());
        let cols = Cols::fitting(ui.available_width(), ui.spacing().item_spacing.x);
        let mut clicks = Clicks::default();
        let filter = v.state.filter.clone();
        // Once after a recommendation card opened a machine: scroll its row into view.
        let scroll_row = v
            .data
            .scroll_to
            .take()
            .and_then(|id| shown.iter().position(|&i| *v.data.machines[i].id == *id));
        let rows = RowSource {
            data: &*v.data,
            state: &*v.state,
            training,
            local,
            focus: focus.as_deref(),
            cols,
        };
        let max_h = if short { 60.0 } else { ui.available_height() };
        // No sideways scroll: the columns are chosen to fit (see `Cols`), so the Machine column
        // and the answer (verdict, speed, latency, cost, why) are always in view. Each set of
        // columns keeps its own widths.
        let mut table = TableBuilder::new(ui)
            .id_salt(("machines-table", cols))
            .striped(true)
            .resizable(true)
            .cell_layout(Layout::left_to_right(Align::Center))
            .max_scroll_height(max_h);
        if let Some(r) = scroll_row {
            table = table.scroll_to_row(r, Some(Align::Center));
        }
        table = table
            .column(Column::exact(22.0))
            .column(Column::initial(cols.name_w).at_least(120.0).clip(true));
        for (on, w) in [
            (cols.kind, Cols::KIND),
            (cols.gpu, Cols::GPU),
            (cols.vram, Cols::VRAM),
            (cols.ram, Cols::RAM),
        ] {
            if on {
                table = table.column(Column::initial(w).at_least(40.0).clip(true));
            }
        }
        table = table.column(Column::initial(Cols::VERDICT).at_least(70.0));
        if cols.headroom {
            table = table.column(Column::initial(Cols::HEADROOM).at_least(60.0));
        }
        table
            .columns(Column::initial(Cols::NUMBER).at_least(44.0), 3)
            .column(Column::remainder().at_least(Cols::WHY_MIN).clip(true))
            .header(ROW_H, |mut h| {
                header_row(&mut h, &filter, mode, cols, &mut clicks.sort);
            })
            .body(|body| {
                body.rows(ROW_H, shown.len(), |mut row| {
                    let i = shown[row.index()];
                    rows.row(&mut row, i, &mut clicks);
                });
            });
        for (id, on) in clicks.toggles {
            v.state.set_selected(&id, on);
        }
        if let Some(id) = clicks.focus {
            v.state.focus = Some(id);
        }
        if let Some(c) = clicks.sort {
            apply_sort(&mut v.state.filter, c);
        }
    }
}

/// The columns the table shows at its width. Always: the compare box, Machine, Verdict, the
/// three numbers and Why; then, while they fit, Headroom, GPU memory, RAM, GPU and Kind (in
/// that order; every one of them is in the machine's tooltip too). The Machine column gets
/// what is left, up to 360 px.
#[derive(Copy, Clone, Debug)]
struct Cols {
    kind: bool,
    gpu: bool,
    vram: bool,
    ram: bool,
    headroom: bool,
    name_w: f32,
}

impl std::hash::Hash for Cols {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        [self.kind, self.gpu, self.vram, self.ram, self.headroom].hash(state);
    }
}

impl Cols {
    const CHECK: f32 = 22.0;
    const KIND: f32 = 64.0;
    const GPU: f32 = 110.0;
    const VRAM: f32 = 76.0;
    const RAM: f32 = 64.0;
    const VERDICT: f32 = 96.0;
    const HEADROOM: f32 = 72.0;
    const NUMBER: f32 = 58.0;
    const WHY_MIN: f32 = 100.0;
    const NAME_MIN: f32 = 170.0;
    const NAME_MAX: f32 = 360.0;

    /// The columns that fit `width` with `gap` between columns.
    fn fitting(width: f32, gap: f32) -> Cols {
        let base = Self::CHECK + Self::VERDICT + 3.0 * Self::NUMBER + Self::WHY_MIN;
        // Seven columns at least (check, name, verdict, three numbers, why), and a scroll bar.
        let mut used = base + 7.0 * gap + 16.0;
        let mut room = |w: f32| {
            let fits = width - used - (w + gap) >= Self::NAME_MIN;
            if fits {
                used += w + gap;
            }
            fits
        };
        // Memory decides "will it run" before the GPU's name (often in the machine's name).
        let headroom = room(Self::HEADROOM);
        let vram = headroom && room(Self::VRAM);
        let ram = vram && room(Self::RAM);
        let gpu = ram && room(Self::GPU);
        let kind = gpu && room(Self::KIND);
        let name_w = (width - used).clamp(Self::NAME_MIN, Self::NAME_MAX);
        Cols {
            kind,
            gpu,
            vram,
            ram,
            headroom,
            name_w,
        }
    }
}

/// What the table's clicks ask for, applied once the frame is drawn.
#[derive(Default)]
struct Clicks {
    /// Machines ticked on or off for the Breakdown chart.
    toggles: Vec<(String, bool)>,
    /// The machine clicked into focus.
    focus: Option<String>,
    /// The column header clicked.
    sort: Option<SortColumn>,
}

/// The table's header: sortable columns answer a click in `sort`.
fn header_row(
    h: &mut egui_extras::TableRow<'_, '_>,
    filter: &MachineFilter,
    mode: Mode,
    cols: Cols,
    sort: &mut Option<SortColumn>,
) {
    let (speed, lat, cost) = if mode.is_training() {
        ("Tokens/s", "Step", "Run cost")
    } else if mode.is_embed() {
        // Sequences embedded per second, the time of one batch, $ per 1M input tokens.
        ("seq/s", "Batch", "$/1M in")
    } else {
        ("tok/s", "TTFT", "$/1M tok")
    };
    h.col(|_| {});
    let mut sorted =
        |h: &mut egui_extras::TableRow<'_, '_>, title: &str, col: SortColumn, right: bool| {
            h.col(|ui| {
                if let Some(c) = sort_header(ui, filter, title, col, right) {
                    *sort = Some(c);
                }
            });
        };
    let plain = |h: &mut egui_extras::TableRow<'_, '_>, title: &str| {
        h.col(|ui| {
            ui.label(RichText::new(title).strong());
        });
    };
    sorted(h, "Machine", SortColumn::Name, false);
    if cols.kind {
        sorted(h, "Kind", SortColumn::Kind, false);
    }
    if cols.gpu {
        plain(h, "GPU");
    }
    if cols.vram {
        h.col(|ui| {
            ui.label(RichText::new("GPU memory").strong())
                .on_hover_text("Memory per GPU (x the number of GPUs); unified memory: the share of RAM the GPU may use");
        });
    }
    if cols.ram {
        plain(h, "RAM");
    }
    sorted(h, "Verdict", SortColumn::Verdict, false);
    if cols.headroom {
        sorted(h, "Headroom", SortColumn::Headroom, true);
    }
    sorted(h, speed, SortColumn::Speed, true);
    sorted(h, lat, SortColumn::Latency, true);
    sorted(h, cost, SortColumn::Cost, true);
    plain(h, "Why");
}

/// What every row of the table reads.
struct RowSource<'a> {
    data: &'a super::data::Data,
    state: &'a super::state::State,
    training: bool,
    /// This machine's id.
    local: Option<&'a str>,
    /// The machine in focus.
    focus: Option<&'a str>,
    cols: Cols,
}

impl RowSource<'_> {
    /// The row of machine `i`.
    fn row(&self, row: &mut egui_extras::TableRow<'_, '_>, i: usize, clicks: &mut Clicks) {
        let (data, training) = (self.data, self.training);
        let m = &data.machines[i];
        let Some(f) = data.derived.fits.get(i) else {
            return;
        };
        let is_local = self.local == Some(&*m.id);
        let t = machine_text(m, f, &data.catalog);
        let reason = crate::core::placement::explain::verdict_reason(f, training);
        let mut selected = self.state.is_selected(&m.id);
        row.col(|ui| {
            let r = ui
                .add(egui::Checkbox::without_text(&mut selected))
                .accessible_name(format!("Compare {}", m.name));
            if r.on_hover_text("Draw this machine on the Breakdown chart and add it to the report")
                .changed()
            {
                clicks.toggles.push((m.id.to_string(), selected));
            }
        });
        row.col(|ui| {
            // Cut in the middle, so the chip and memory at the end of a name stay in view (two
            // MacBooks that differ only in memory read apart); the tooltip has it whole.
            let font = egui::TextStyle::Button.resolve(ui.style());
            let room = ui.available_width() - 2.0 * ui.spacing().button_padding.x - 2.0;
            let name = style::fit_middle(ui, &m.name, room, &font);
            let text = if is_local {
                RichText::new(name).strong()
            } else {
                RichText::new(name)
            };
            let on = self.focus == Some(&*m.id);
            let r = ui
                .add(egui::Button::selectable(on, text).truncate())
                .accessible_name(&*m.name)
                .on_hover_ui(|ui| {
                    ui.set_max_width(460.0);
                    ui.label(machine_tooltip(m, f, &t, &reason));
                });
            if r.clicked() {
                clicks.focus = Some(m.id.to_string());
            }
        });
        let c = self.cols;
        if c.kind {
            row.col(|ui| {
                ui.label(kind_short(m.kind));
            });
        }
        if c.gpu {
            row.col(|ui| {
                ui.add(egui::Label::new(&t.gpu).truncate());
            });
        }
        if c.vram {
            row.col(|ui| {
                ui.add(egui::Label::new(&t.vram).truncate());
            });
        }
        if c.ram {
            row.col(|ui| {
                ui.label(&t.ram);
            });
        }
        row.col(|ui| {
            style::verdict_badge(ui, f).on_hover_text(reason.clone());
        });
        let right = |row: &mut egui_extras::TableRow<'_, '_>, text: RichText| {
            row.col(|ui| {
                ui.with_layout(Layout::right_to_left(Align::Center), |ui| {
                    ui.label(text);
                });
            });
        };
        if c.headroom {
            right(row, headroom_text(f));
        }
        let (a, b, c) = speed_cells(f, training);
        match f.speculative.as_ref().filter(|_| f.runs()) {
            // The speed with speculation, and what it is made of on hover.
            Some(sp) => {
                row.col(|ui| {
                    ui.with_layout(Layout::right_to_left(Align::Center), |ui| {
                        ui.label(RichText::new(a)).on_hover_text(format!(
                            "With the {}: {} tokens per check, {} the {} tok/s without it",
                            sp.method.label(),
                            format::sig3(sp.tokens_per_step),
                            format::times(sp.speedup),
                            format::rate(sp.plain_decode_tokens_per_s)
                        ));
                    });
                });
            }
            None => right(row, RichText::new(a)),
        }
        right(row, RichText::new(b));
        right(row, RichText::new(c));
        row.col(|ui| {
            // One tooltip: the label's own (shown when cut) would repeat it.
            ui.add(
                egui::Label::new(RichText::new(&reason).size(11.0).weak())
                    .truncate()
                    .show_tooltip_when_elided(false),
            )
            .on_hover_text(reason.clone());
        });
    }
}

/// The Headroom cell. A "no" with room to spare is not headroom: the reason says why.
fn headroom_text(f: &FitResult) -> RichText {
    if f.fits() || f.headroom_bytes < 0 {
        let c = if f.headroom_bytes >= 0 {
            verdict_color(Verdict::Gpu)
        } else {
            verdict_color(Verdict::None)
        };
        RichText::new(signed_gib(f.headroom_bytes)).color(c)
    } else {
        RichText::new(MISSING)
    }
}

/// The speed, latency and cost cells: tokens/s, step time and run cost for training; tok/s,
/// TTFT and $ per 1M tokens for inference.
fn speed_cells(f: &FitResult, training: bool) -> (String, String, String) {
    if training {
        let tr = f.training.as_ref();
        (
            if f.runs() {
                style::rate(speed_of(f))
            } else {
                MISSING.into()
            },
            tr.map(|t| style::duration(t.step_seconds))
                .unwrap_or_else(|| MISSING.into()),
            if cost_of(f).is_finite() {
                style::usd(Some(cost_of(f)))
            } else {
                MISSING.into()
            },
        )
    } else {
        (
            if f.runs() {
                style::rate(speed_of(f))
            } else {
                MISSING.into()
            },
            if f.runs() && latency_of(f).is_finite() {
                style::duration(latency_of(f))
            } else {
                MISSING.into()
            },
            if f.runs() {
                style::usd(f.usd_per_million_tokens)
            } else {
                MISSING.into()
            },
        )
    }
}

fn filter_bar(ui: &mut Ui, filter: &mut MachineFilter) {
    ui.horizontal_wrapped(|ui| {
        ui.label("Show:");
        let all = filter.kinds.is_empty();
        if ui.selectable_label(all, "All kinds").clicked() {
            filter.kinds.clear();
        }
        for k in MachineKind::ALL {
            let on = filter.kinds.contains(&k);
            if ui
                .selectable_label(on, kind_short(k))
                .on_hover_text(format!("Show {} machines (click again to hide)", k.label()))
                .clicked()
            {
                if on {
                    filter.kinds.retain(|x| *x != k);
                } else {
                    filter.kinds.push(k);
                }
            }
        }
        ui.separator();
        ui.checkbox(&mut filter.fits_only, "Fits only");
        ui.separator();
        let l = ui.label("Search:");
        ui.add(
            egui::TextEdit::singleline(&mut filter.search)
                .hint_text("name, GPU, CPU")
                .desired_width(150.0),
        )
        .labelled_by(l.id);
        if !filter.search.is_empty() && ui.small_button("Clear").clicked() {
            filter.search.clear();
        }
    });
}

/// A sortable column header; returns the column when clicked.
fn sort_header(
    ui: &mut Ui,
    f: &MachineFilter,
    title: &str,
    col: SortColumn,
    right: bool,
) -> Option<SortColumn> {
    let active = f.sort == col;
    let layout = if right {
        Layout::right_to_left(Align::Center)
    } else {
        Layout::left_to_right(Align::Center)
    };
    ui.with_layout(layout, |ui| {
        let dir = if active && f.descending {
            "descending"
        } else if active {
            "ascending"
        } else {
            "catalog order"
        };
        // The default fonts have no arrow glyph: the sorted column gets a painted triangle
        // (down: descending) after the title, which sits at the column's edge either way.
        ui.spacing_mut().item_spacing.x = 3.0;
        let r = sort_button(ui, title, dir, active);
        if active {
            sort_triangle(ui, f.descending);
        }
        r.clicked().then_some(col)
    })
    .inner
}

/// A header's button; while sorted its accessible name says which way ("tok/s, sorted
/// descending").
fn sort_button(ui: &mut Ui, title: &str, dir: &str, active: bool) -> egui::Response {
    let r = ui
        .add(egui::Button::new(RichText::new(title).strong()).frame(false))
        .on_hover_text(format!(
            "Sort by {title} (now: {dir}); click again to reverse, a third time for catalog order"
        ));
    if active {
        r.accessible_name(format!("{title}, sorted {dir}"))
    } else {
        r
    }
}

/// A small filled triangle, pointing down (`down`) or up, in the text colour.
fn sort_triangle(ui: &mut Ui, down: bool) {
    let (rect, _) = ui.allocate_exact_size(egui::vec2(9.0, 9.0), egui::Sense::hover());
    let c = rect.center();
    let (h, w) = (3.5, 4.5);
    let pts = if down {
        vec![
            egui::pos2(c.x - w, c.y - h),
            egui::pos2(c.x + w, c.y - h),
            egui::pos2(c.x, c.y + h),
        ]
    } else {
        vec![
            egui::pos2(c.x - w, c.y + h),
            egui::pos2(c.x + w, c.y + h),
            egui::pos2(c.x, c.y - h),
        ]
    };
    let color = ui.visuals().strong_text_color();
    ui.painter()
        .add(egui::Shape::convex_polygon(pts, color, egui::Stroke::NONE));
}

/// The sort a click on `col`'s header asks for.
fn apply_sort(f: &mut MachineFilter, col: SortColumn) {
    // Numbers read best largest first, except latency and cost.
    let big_first = matches!(col, SortColumn::Speed | SortColumn::Headroom);
    if f.sort != col {
        f.sort = col;
        f.descending = big_first;
    } else if f.descending == big_first {
        f.descending = !f.descending;
    } else {
        f.sort = SortColumn::Catalog;
        f.descending = false;
    }
}

/// The solver answers for the machine in focus.
fn solver_card(ui: &mut Ui, v: &mut View<'_>) {
    let Some(m) = v.data.focus_machine(v.state).cloned() else {
        return;
    };
    let training = v.state.scenario.mode.is_training();
    let settings = v.state.fit_settings();
    let scenario = v.state.scenario.clone();
    let sol = v
        .data
        .derived
        .solvers(&scenario, &settings, &m, &v.data.catalog)
        .clone();
    let fit = v.data.derived.fit(&m.id).cloned();
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
                Some(c) => format!("{} tokens", group_digits(c)),
                None => "does not fit on the GPU even at 256".into(),
            };
            ui.label(format!("Largest context on the GPU: {ctx}"));
            ui.separator();
            let b = match sol.max_batch {
                Some(b) => group_digits(b),
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
            // A laptop or a mini PC takes no second GPU: "32x RTX 4060 Laptop" is no answer.
            let fixed_gpu = matches!(m.kind, MachineKind::Laptop | MachineKind::MiniPc);
            if let (Some(n), Some(g), false) = (sol.min_gpus, &sol.gpu_name, fixed_gpu) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_text_names_the_search_when_it_hides_fitting_machines() {
        let f = MachineFilter {
            fits_only: true,
            search: "4090".into(),
            ..MachineFilter::default()
        };
        let rows = Rows {
            shown: vec![],
            fitting: 12,
            fitting_hidden: 12,
        };
        let t = empty_text(&f, &rows);
        assert!(t.starts_with("12 machines fit this workload"), "{t}");
        assert!(t.contains("\"4090\""), "{t}");
        let none = Rows::default();
        assert!(empty_text(&f, &none).starts_with("Nothing in the catalog fits"));
        let plain = MachineFilter {
            search: "zzz".into(),
            ..MachineFilter::default()
        };
        assert_eq!(
            empty_text(&plain, &none),
            "No machine matches the search \"zzz\"."
        );
    }

    #[test]
    fn sort_cycles() {
        let mut f = MachineFilter::default();
        apply_sort(&mut f, SortColumn::Speed);
        assert_eq!((f.sort, f.descending), (SortColumn::Speed, true));
        apply_sort(&mut f, SortColumn::Speed);
        assert_eq!((f.sort, f.descending), (SortColumn::Speed, false));
        apply_sort(&mut f, SortColumn::Speed);
        assert_eq!(f.sort, SortColumn::Catalog);
    }
}
