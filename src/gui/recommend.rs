//! The answer first: a strip of cards above the tabs, one per kind of machine (laptop, Apple,
//! desktop/workstation, cloud) with its headline pick, plus this machine's verdict and its
//! smallest change. Clicking a card ticks that machine onto the Breakdown chart, puts it in
//! focus and opens it in the Machines table.
//!
//! The picks come from `core::recommend` over the fit rows the app already has; they are
//! recomputed only when those rows are (keyed by the derived generation and this machine).

use super::data::{Data, View};
use super::state::{State, Tab};
use super::style;
use crate::core::format;
use crate::core::recommend::{
    Constraints, GroupPicks, Pick, Recommendations, ThisMachine, recommend_from_fits,
};
use egui::{Align, RichText, Sense, Ui};

/// The narrowest and widest a card gets: the strip fills the width between them.
const CARD_W: (f32, f32) = (176.0, 330.0);
/// The size of a card's small text (egui's `small()` is 9 px, too small to read).
const SUB: f32 = 11.5;

/// The strip of cards and its picks, cached by the derived generation (scenario, settings,
/// catalog) and this machine.
#[derive(Default)]
pub(crate) struct RecommendStrip {
    key: Option<(u64, Option<String>, Constraints)>,
    recs: Recommendations,
    /// Whether the strip was folded last frame.
    folded: bool,
}

impl RecommendStrip {
    /// The recommendations for the current scenario (cached; `data` must be refreshed).
    pub fn recommendations(&mut self, state: &State, data: &Data) -> &Recommendations {
        let local = data.local_id();
        let key = (
            data.derived.generation,
            local.clone(),
            state.constraints.clone(),
        );
        if self.key.as_ref() != Some(&key) {
            let this = local.as_deref().and_then(|id| data.machine(id));
            let settings = state.fit_settings();
            self.recs = recommend_from_fits(
                &state.scenario,
                &data.machines,
                &data.derived.fits,
                this,
                &data.catalog,
                &settings,
                &state.constraints,
                crate::io::catalog::quality(),
            );
            // No cloud instance alone: the cheapest cloud cluster (the Cluster tab plans it).
            self.recs.cluster = crate::core::recommend::cluster_answer(
                &state.scenario,
                &self.recs,
                &data.catalog,
                &settings,
            );
            self.key = Some(key);
        }
        &self.recs
    }

    /// The strip of cards.
    pub fn ui(&mut self, ui: &mut Ui, v: &mut View<'_>) {
        self.recommendations(v.state, v.data);
        let recs = std::mem::take(&mut self.recs);
        let mut open_id = None;
        // In a short window the strip takes a third of the height: the header says it folds.
        let short = ui.ctx().content_rect().height() < 760.0;
        let open = !self.folded;
        let mut job = egui::text::LayoutJob::default();
        let style = ui.style().clone();
        RichText::new("Which machine to buy or rent")
            .strong()
            .append_to(
                &mut job,
                &style,
                egui::FontSelection::Default,
                Align::Center,
            );
        if short && open {
            RichText::new("   click to fold it away and give the tab more room")
                .weak()
                .append_to(
                    &mut job,
                    &style,
                    egui::FontSelection::Default,
                    Align::Center,
                );
        }
        let strip = egui::CollapsingHeader::new(job)
            .id_salt("recommend-strip")
            .default_open(true)
            .show(ui, |ui| {
                constraint_inputs(ui, &mut v.state.constraints);
                // The cards share the width (a wide window widens them rather than leaving it
                // empty); a narrow one scrolls sideways.
                let n = recs.groups.len() + usize::from(recs.this_machine.is_some());
                let gap = ui.spacing().item_spacing.x;
                let frame = 2.0 * ui.spacing().window_margin.leftf() + 2.0;
                let w = (ui.available_width() - 4.0) / n.max(1) as f32 - gap - frame;
                let w = w.clamp(CARD_W.0, CARD_W.1);
                egui::ScrollArea::horizontal()
                    .id_salt("recommend-cards")
                    .show(ui, |ui| {
                        ui.horizontal_top(|ui| {
                            if let Some(t) = &recs.this_machine {
                                this_card(ui, w, t, &mut open_id);
                            }
                            let training = v.state.scenario.mode.is_training();
                            for g in &recs.groups {
                                let cluster = recs
                                    .cluster
                                    .as_ref()
                                    .filter(|_| g.group == crate::core::recommend::Group::Cloud)
                                    .and_then(|c| c.summary(training));
                                group_card(ui, w, g, cluster, &mut open_id);
                            }
                        });
                    });
            });
        // The header's text follows the fold (drawn before it is known this frame).
        let folded = strip.body_returned.is_none();
        if folded != self.folded {
            self.folded = folded;
            ui.ctx().request_repaint();
        }
        let _ = strip
            .header_response
            .on_hover_text("Fold or unfold the recommendation cards");
        self.recs = recs;
        if let Some(id) = open_id {
            open_pick(v.state, v.data, &id);
        }
    }
}

/// The strip's constraint inputs; 0 means "no limit".
fn constraint_inputs(ui: &mut Ui, c: &mut Constraints) {
    ui.horizontal_wrapped(|ui| {
        opt_drag(ui, "Budget $", "Most a machine may cost to buy, USD (0 = no limit)", &mut c.budget_usd, 50.0);
        opt_drag(ui, "Max $/hour", "Most a cloud instance may cost per hour, USD (0 = no limit)", &mut c.max_usd_per_hour, 0.1);
        opt_drag(ui, "Min tok/s", "Slowest acceptable decode (inference) or training throughput, tokens/s (0 = no limit)", &mut c.min_tokens_per_s, 1.0);
        let mut ctx = c.min_context.map_or(0.0, |v| v as f64);
        let mut o = (ctx > 0.0).then_some(ctx);
        if opt_drag(ui, "Min context", "Shortest acceptable context, tokens: machines are fitted at max(this, the scenario's) (0 = the scenario's)", &mut o, 256.0) {
            ctx = o.unwrap_or(0.0);
            c.min_context = (ctx >= 1.0).then_some(ctx as u64);
        }
        quality_floor(ui, &mut c.max_kld);
    });
}

/// The quality floor of `recommend --max-kld`, as its named levels (a value typed on the command
/// line and saved keeps its own line): what this machine's precision step may propose.
fn quality_floor(ui: &mut Ui, max_kld: &mut Option<f64>) {
    use crate::core::quality::{QUALITY_LEVELS, floor_label};
    let help = "Least quality a lower precision may have: the largest mean KL divergence to the 16-bit model (docs/quality.md). This machine's card proposes only a precision within it, and says what fitting would cost past it";
    let l = ui.label("Quality floor").on_hover_text(help);
    let _ = egui::ComboBox::from_id_salt("quality-floor")
        .selected_text(floor_label(*max_kld))
        .show_ui(ui, |ui| {
            ui.selectable_value(max_kld, None, "any");
            for lv in &QUALITY_LEVELS {
                ui.selectable_value(max_kld, Some(lv.max_kld), lv.label());
            }
        })
        .response
        .on_hover_text(help)
        .labelled_by(l.id);
}

/// A number input for an optional limit (0 = none); returns whether it changed.
fn opt_drag(ui: &mut Ui, label: &str, help: &str, value: &mut Option<f64>, speed: f64) -> bool {
    let l = ui.label(label).on_hover_text(help);
    let mut v = value.unwrap_or(0.0);
    let r = ui
        .add(egui::DragValue::new(&mut v).range(0.0..=1e9).speed(speed))
        .on_hover_text(help)
        .labelled_by(l.id);
    if r.changed() {
        *value = (v > 0.0).then_some(v);
        return true;
    }
    false
}

/// Ticks machine `id` onto the chart, puts it in focus and shows it in the Machines table,
/// pinned in view where the kind filter, "fits only" or the search would hide it (the filters
/// themselves do not change).
pub(crate) fn open_pick(state: &mut State, data: &mut Data, id: &str) {
    let Some(m) = data.machine(id) else {
        return;
    };
    let id = m.id.to_string();
    state.set_selected(&id, true);
    state.focus = Some(id.clone());
    state.tab = Tab::Machines;
    // The filters stay as the user set them; the opened machine is pinned in view instead.
    state.filter.opened = Some(id.clone());
    data.scroll_to = Some(id);
}

/// A card frame; the whole card is one button whose accessible name is `label`.
pub(super) fn card(
    ui: &mut Ui,
    w: f32,
    label: String,
    add: impl FnOnce(&mut Ui),
) -> egui::Response {
    let inner = egui::Frame::group(ui.style()).show(ui, |ui| {
        ui.set_width(w);
        ui.set_max_width(w);
        ui.vertical(|ui| add(ui));
    });
    let r = ui.interact(
        inner.response.rect,
        ui.make_persistent_id(("recommend-card", &label)),
        Sense::click(),
    );
    r.widget_info(|| egui::WidgetInfo::labeled(egui::accesskit::Role::Button, true, &label));
    if r.hovered() {
        ui.painter().rect_stroke(
            inner.response.rect,
            4.0,
            ui.visuals().widgets.hovered.bg_stroke,
            egui::StrokeKind::Inside,
        );
    }
    r
}

fn pick_line(ui: &mut Ui, p: &Pick) {
    ui.horizontal(|ui| {
        ui.spacing_mut().item_spacing.x = 4.0;
        ui.add(egui::Label::new(RichText::new(p.price_text()).size(SUB)).extend());
        style::badge(ui, &p.verdict_text, style::verdict_color(p.verdict));
        ui.add(egui::Label::new(RichText::new(p.speed_text()).size(SUB)).extend());
    });
}

/// The first clause of a reason (the rest is in the tooltip).
fn headline(reason: &str) -> &str {
    reason.split("; ").next().unwrap_or(reason)
}

fn group_card(
    ui: &mut Ui,
    w: f32,
    g: &GroupPicks,
    cluster: Option<String>,
    open: &mut Option<String>,
) {
    let title = g.group.label();
    match g.best() {
        Some(p) => {
            let r = card(ui, w, format!("{title}: {}", p.name), |ui| {
                ui.label(RichText::new(title).size(SUB).strong());
                // Whole, on two lines if need be: the end of a name (chip, memory) decides.
                ui.add(egui::Label::new(RichText::new(&p.name).strong()).wrap());
                pick_line(ui, p);
                let reason = p.reason.to_string();
                ui.add(egui::Label::new(RichText::new(headline(&reason)).size(SUB).weak()).wrap());
                if let Some(raise) = &p.limit_raise {
                    ui.add(egui::Label::new(RichText::new(raise.to_string()).size(SUB)).wrap());
                }
                for q in g.picks.iter().skip(1) {
                    let t = format!("{}: {} ({})", q.role.label(), q.name, q.price_text());
                    ui.add(egui::Label::new(RichText::new(t).size(SUB)).wrap())
                        .on_hover_text(q.reason.to_string());
                }
            });
            if r.clicked() {
                *open = Some(p.machine.clone());
            }
            r.on_hover_text(format!(
                "{}\n{}\nClick: tick it onto the chart and open it in the Machines table",
                p.name, p.reason
            ));
        }
        None => {
            let _ = card(ui, w, format!("{title}: no pick"), |ui| {
                ui.label(RichText::new(title).size(SUB).strong());
                for u in &g.unmet {
                    ui.add(egui::Label::new(RichText::new(u.to_string()).size(SUB).weak()).wrap());
                }
                if let Some(c) = &cluster {
                    ui.add(
                        egui::Label::new(
                            RichText::new(format!(
                                "One instance is not enough; the cheapest cluster: {c} (Cluster tab: the curve and launch files)"
                            ))
                            .size(SUB),
                        )
                        .wrap(),
                    );
                }
            });
        }
    }
}

fn this_card(ui: &mut Ui, w: f32, t: &ThisMachine, open: &mut Option<String>) {
    let r = card(ui, w, format!("This machine: {}", t.name), |ui| {
        // The name is in the card's tooltip: the summary strip already shows it as a label.
        ui.label(RichText::new("This machine").strong());
        ui.horizontal_wrapped(|ui| {
            style::badge(ui, &t.verdict_text, style::verdict_color(t.verdict));
            if t.tokens_per_s > 0.0 {
                ui.label(format!("{} tok/s", format::rate_coarse(t.tokens_per_s)));
            }
        });
        match t.upgrades.first() {
            Some(u) => {
                ui.add(
                    egui::Label::new(
                        RichText::new(format!("Smallest change: {u}"))
                            .size(SUB)
                            .weak(),
                    )
                    .wrap(),
                );
            }
            None => {
                ui.add(egui::Label::new(RichText::new(t.as_it_is()).size(SUB).weak()).wrap());
            }
        }
        if let Some(p) = &t.past_floor {
            ui.add(egui::Label::new(RichText::new(p.sentence()).size(SUB)).wrap());
        }
    });
    if r.clicked() {
        *open = Some(t.machine.clone());
    }
    r.on_hover_text(format!("{}\n{}", t.name, t.summary()));
}
