//! The Serving tab: many users on the compared machines. The traffic and the target are set at
//! the top (a named mix or typed lengths, users in flight or a request rate, the time to first
//! token and the per-user speed to meet, the engine); below, one sentence per machine with its
//! answer, throughput, time to first token and per-user speed against the users in flight, and a
//! table with the engine's layout, its KV pool, the users it holds at the target, the cost per
//! million output tokens at that load and, for an asked load, the replicas and machines it takes.
//!
//! Every number is `core::serving`'s (`plan_all`, cached in `derived`); this module only draws.

use super::data::View;
use super::inputs::MAX_CONTEXT_SLIDER;
use super::style::empty_state;
use super::style::{hint, line_swatch, machine_color, still_plot, warn};
use crate::core::catalog::MachineKind;
use crate::core::format;
use crate::core::scenario::Scenario;
use crate::core::serving::inputs::limits;
use crate::core::serving::{
    AMORTISATION_YEARS, CostBasis, Engine, Load, LoadPoint, Mix, ServingPlan, Target,
};
use egui::{Color32, ComboBox, DragValue, RichText, Slider, Ui, vec2};
use egui_plot::{Axis, GridMark, Line, LineStyle, MarkerShape, Points, Span};

/// Cloud machines shown when no machine is ticked: the cheapest servable ones.
const FALLBACK_CLOUD: usize = 4;
/// The shade of the target region on the plots.
const TARGET_FILL: Color32 = Color32::from_rgba_unmultiplied_const(40, 160, 90, 36);
const TARGET_EDGE: Color32 = Color32::from_rgb(40, 160, 90);

/// How the load is asked for.
#[derive(Copy, Clone, Debug, PartialEq)]
enum LoadKind {
    /// No asked load: the most users each machine holds at the target.
    Best,
    Users,
    Rate,
}

impl LoadKind {
    fn of(l: Option<Load>) -> LoadKind {
        match l {
            None => LoadKind::Best,
            Some(Load::Users(_)) => LoadKind::Users,
            Some(Load::RequestsPerSecond(_)) => LoadKind::Rate,
        }
    }
    const fn label(self) -> &'static str {
        match self {
            LoadKind::Best => "Most at the target",
            LoadKind::Users => "Users in flight",
            LoadKind::Rate => "Requests per second",
        }
    }
}

/// The Serving tab; it remembers the last users and rate typed, so switching the load kind back
/// and forth keeps them.
pub(crate) struct ServingTab {
    users: u64,
    rate: f64,
}

impl Default for ServingTab {
    fn default() -> Self {
        ServingTab {
            users: 100,
            rate: 2.0,
        }
    }
}

/// A label that names the widget after it (for screen readers and tests).
fn field_label(ui: &mut Ui, text: &str, help: &str) -> egui::Response {
    ui.label(text).on_hover_text(help)
}

/// A typed count that applies on Enter or when the field loses focus.
fn drag_u64(ui: &mut Ui, v: &mut u64, range: std::ops::RangeInclusive<u64>) -> egui::Response {
    let speed = (*v as f64 * 0.02).max(0.2);
    ui.add(
        DragValue::new(v)
            .range(range)
            .speed(speed)
            .update_while_editing(false),
    )
}

/// A typed number with its unit that applies on Enter or when the field loses focus.
fn drag_f64(
    ui: &mut Ui,
    v: &mut f64,
    range: std::ops::RangeInclusive<f64>,
    decimals: usize,
    suffix: &str,
) -> egui::Response {
    let speed = (*v * 0.01).max(*range.start()).max(0.001);
    ui.add(
        DragValue::new(v)
            .range(range)
            .speed(speed)
            .max_decimals(decimals)
            .suffix(suffix)
            .update_while_editing(false),
    )
}

/// A mix's picker text.
fn mix_label(m: Option<Mix>) -> &'static str {
    m.map_or("Custom", Mix::label)
}

impl ServingTab {
    pub fn ui(&mut self, ui: &mut Ui, v: &mut View<'_>) {
        if v.state.scenario.mode.is_training() {
            empty_state(
                ui,
                "Serving plans are for inference",
                "Set Mode to Inference in the Workload inputs to see how many users each machine holds, the time to first token and speed they get, and what a million output tokens cost at that load.",
            );
            return;
        }
        self.inputs(ui, v);
        // The inputs above may have changed: the plans below are for the new values.
        v.data.refresh(v.state);
        let (plans, fallback) = shown_plans(v);
        let s = v.state.scenario.clone();
        let avail = ui.available_size();
        egui::ScrollArea::vertical()
            .id_salt("serving")
            .auto_shrink([false, false])
            .show(ui, |ui| {
                ui.add_space(4.0);
                if fallback {
                    hint(
                        ui,
                        "No machine is ticked: these are the cloud machines with the lowest cost per 1M output tokens at the target, one per GPU type. Tick machines in the Machines tab to compare them here.",
                    );
                }
                if plans.is_empty() {
                    hint(ui, "No machine to show.");
                    return;
                }
                sentences(ui, &plans, &s);
                ui.add_space(6.0);
                charts(ui, &plans, &s.serving.clamped().target, avail);
                ui.add_space(8.0);
                table(ui, &plans, &s);
                ui.add_space(4.0);
                hint(
                    ui,
                    format!(
                        "Users in flight: requests sent or running at once, each user sending the next when the last answer is done. The curves are for the whole machine: each engine replica takes its share. Costs: the cloud price per hour, or for owned machines electricity at the price in the inputs plus the purchase spread over {} years, over the output tokens of that hour. Engine settings and the model of continuous batching, queueing and the KV pool: docs/serving.md.",
                        format::group_digits(AMORTISATION_YEARS as u64)
                    ),
                );
            });
    }

    /// The serving inputs above the answers: the traffic on one row, then the load, the target
    /// and the engine (on two rows in a narrow window).
    fn inputs(&mut self, ui: &mut Ui, v: &mut View<'_>) {
        let s = &mut v.state.scenario;
        let notices = &mut v.data.notices;
        let wide = ui.available_width() >= 900.0;
        let row = |ui: &mut Ui, add: &mut dyn FnMut(&mut Ui)| {
            ui.horizontal_wrapped(|ui| {
                ui.spacing_mut().item_spacing.x = 6.0;
                add(ui);
            });
        };
        row(ui, &mut |ui| traffic_inputs(ui, s, notices));
        if wide {
            row(ui, &mut |ui| {
                self.load_input(ui, s);
                ui.separator();
                target_inputs(ui, s);
                ui.separator();
                engine_input(ui, s);
            });
        } else {
            row(ui, &mut |ui| {
                self.load_input(ui, s);
                ui.separator();
                engine_input(ui, s);
            });
            row(ui, &mut |ui| target_inputs(ui, s));
        }
        if let Some(n) = v.data.notices.clamp_note("Prompt tokens") {
            warn(ui, n.to_string());
        }
        let s = &v.state.scenario;
        let prefix = if s.serving.prefix_share > 0.0 {
            format!(
                " ({} of it a shared prefix)",
                format::percent(s.serving.prefix_share)
            )
        } else {
            String::new()
        };
        let source = s
            .serving
            .mix
            .map(|m| format!(" {}: {}.", m.label(), m.source()))
            .unwrap_or_default();
        hint(
            ui,
            format!(
                "Each request: a {}-token prompt{prefix} and a {}-token answer, within the {}-token context.{source}",
                format::group_digits(s.prompt_tokens),
                format::group_digits(s.serving.output_tokens),
                format::group_digits(s.context),
            ),
        );
    }
}

impl ServingTab {
    /// Most users at the target, or users in flight, or a request rate.
    fn load_input(&mut self, ui: &mut Ui, s: &mut Scenario) {
        let l = field_label(
            ui,
            "Load",
            "Plan for the most users each machine holds at the target, or for an asked load: the replicas and machines it takes",
        );
        let kind = LoadKind::of(s.serving.load);
        let mut chosen = kind;
        let r = ComboBox::from_id_salt("serving-load")
            .selected_text(kind.label())
            .width(150.0)
            .show_ui(ui, |ui| {
                for k in [LoadKind::Best, LoadKind::Users, LoadKind::Rate] {
                    ui.selectable_value(&mut chosen, k, k.label());
                }
            });
        let _ = r.response.labelled_by(l.id);
        if chosen != kind {
            s.serving.load = match chosen {
                LoadKind::Best => None,
                LoadKind::Users => Some(Load::Users(self.users)),
                LoadKind::Rate => Some(Load::RequestsPerSecond(self.rate)),
            };
        }
        match s.serving.load {
            Some(Load::Users(mut n)) => {
                let r = drag_u64(ui, &mut n, 1..=limits::MAX_USERS)
                    .on_hover_text("Users in flight: requests sent or running at once")
                    .accessible_name("Users in flight");
                if r.changed() {
                    self.users = n;
                    s.serving.load = Some(Load::Users(n));
                }
                ui.label("users");
            }
            Some(Load::RequestsPerSecond(mut x)) => {
                let r = drag_f64(ui, &mut x, 0.001..=limits::MAX_RATE, 3, "")
                    .on_hover_text("Requests arriving per second (Poisson arrivals)")
                    .accessible_name("Requests per second");
                if r.changed() {
                    self.rate = x;
                    s.serving.load = Some(Load::RequestsPerSecond(x));
                }
                ui.label("requests/s");
            }
            None => {}
        }
    }
}

/// The mix, the prompt and output lengths and the shared prefix.
fn traffic_inputs(ui: &mut Ui, s: &mut Scenario, notices: &mut super::data::Notices) {
    let limit = MAX_CONTEXT_SLIDER;
    let l = field_label(
        ui,
        "Mix",
        "A named traffic mix sets the prompt and output lengths and the shared prefix, each from a published trace",
    );
    let mut mix = s.serving.mix;
    let before = mix;
    let r = ComboBox::from_id_salt("serving-mix")
        .selected_text(mix_label(mix))
        .width(118.0)
        .show_ui(ui, |ui| {
            for m in Mix::ALL {
                let len = m.lengths();
                ui.selectable_value(&mut mix, Some(m), m.label())
                    .on_hover_text(format!(
                        "{} prompt and {} output tokens, {} shared prefix ({})",
                        format::group_digits(len.prompt_tokens),
                        format::group_digits(len.output_tokens),
                        format::percent(len.prefix_share),
                        m.source()
                    ));
            }
            ui.selectable_value(&mut mix, None, "Custom")
                .on_hover_text("Keep the lengths typed here");
        });
    let _ = r.response.labelled_by(l.id);
    if mix != before {
        match mix {
            Some(m) => apply_mix(s, notices, m, limit),
            None => s.serving.mix = None,
        }
    }
    ui.separator();
    let l = field_label(
        ui,
        "Prompt",
        "Mean prompt tokens per request (the Prompt tokens input)",
    );
    let ctx = s.context.max(1);
    let r = drag_u64(ui, &mut s.prompt_tokens, 1..=ctx).labelled_by(l.id);
    if r.changed() {
        s.serving.mix = None;
        notices.clamped.retain(|(l, _)| l != "Prompt tokens");
    }
    let l = field_label(ui, "Output", "Mean generated tokens per request");
    let r = drag_u64(ui, &mut s.serving.output_tokens, 1..=limits::MAX_OUTPUT).labelled_by(l.id);
    if r.changed() {
        s.serving.mix = None;
    }
    ui.label("tokens");
    ui.separator();
    let l = field_label(
        ui,
        "Shared prefix",
        "Share of each prompt that is common to many requests (a system prompt, a template, an agent's history), served from the prefix cache where the engine has one",
    );
    ui.spacing_mut().slider_width = 90.0;
    let r = ui
        .add(Slider::new(&mut s.serving.prefix_share, 0.0..=0.99).show_value(false))
        .labelled_by(l.id);
    if r.changed() {
        s.serving.mix = None;
    }
    ui.label(format::percent(s.serving.prefix_share));
}

/// The time to first token and the per-user speed to meet.
fn target_inputs(ui: &mut Ui, s: &mut Scenario) {
    let t = &mut s.serving.target;
    let l = field_label(
        ui,
        "Target TTFT p95",
        "Time to first token that 95 % of requests get within, seconds",
    );
    drag_f64(ui, &mut t.ttft_p95_s, 0.01..=limits::MAX_TTFT_S, 2, " s").labelled_by(l.id);
    let l = field_label(
        ui,
        "and per-user speed",
        "Decode speed each user sees at least, tokens per second (1 / time per output token)",
    );
    drag_f64(
        ui,
        &mut t.min_tokens_per_s,
        0.0..=limits::MAX_TOKENS_PER_S,
        1,
        " tok/s",
    )
    .labelled_by(l.id);
}

fn engine_input(ui: &mut Ui, s: &mut Scenario) {
    let l = field_label(
        ui,
        "Engine",
        "The serving engine. Auto: the runtime's engine (vLLM on NVIDIA and AMD GPUs for the generic runtime, llama-server on Apple, other GPUs and CPUs)",
    );
    let r = ComboBox::from_id_salt("serving-engine")
        .selected_text(s.serving.engine.label())
        .width(110.0)
        .show_ui(ui, |ui| {
            for e in Engine::ALL {
                ui.selectable_value(&mut s.serving.engine, e, e.label());
            }
        });
    let _ = r.response.labelled_by(l.id);
}

/// Puts mix `m`'s lengths into the scenario. A prompt and answer longer than the context raise
/// it (to the model's limit); past that the prompt is cut, with a note.
fn apply_mix(s: &mut Scenario, notices: &mut super::data::Notices, m: Mix, limit: u64) {
    let prompt = s.serving.apply_mix(m);
    let output = s.serving.output_tokens;
    let need = prompt.saturating_add(output);
    if need > s.context {
        s.context = need.next_power_of_two().min(limit).max(s.context);
    }
    let room = s.context.saturating_sub(output).max(1);
    if prompt > room {
        notices.clamp(
            "Prompt tokens",
            format!(
                "The {} mix's {}-token prompts and {}-token answers do not fit this model's {}-token context: prompts set to {} tokens.",
                m.label(),
                format::group_digits(prompt),
                format::group_digits(output),
                format::group_digits(s.context),
                format::group_digits(room)
            ),
        );
        s.prompt_tokens = room;
    } else {
        notices.clamped.retain(|(l, _)| l != "Prompt tokens");
        s.prompt_tokens = prompt;
    }
}

/// The plans drawn: "This machine" and the ticked machines; when none is ticked, also the
/// servable cloud machines with the lowest cost per 1M output tokens. Returns whether the
/// fallback was used.
fn shown_plans(v: &mut View<'_>) -> (Vec<ServingPlan>, bool) {
    let ids = v.data.compared_ids(v.state);
    let ticked = v
        .state
        .selected
        .iter()
        .any(|id| v.data.machine(id).is_some());
    v.data.serving_plans(v.state);
    let plans = v.data.derived.plans_cached();
    let mut out: Vec<ServingPlan> = ids
        .iter()
        .filter_map(|id| plans.iter().find(|p| *p.machine == **id).cloned())
        .collect();
    if !ticked {
        let mut cloud: Vec<&ServingPlan> = plans
            .iter()
            .filter(|p| p.kind == MachineKind::Cloud && p.blocker.is_none())
            .filter(|p| cost_of(p).is_some())
            .collect();
        cloud.sort_by(|a, b| {
            a.best_users
                .is_none()
                .cmp(&b.best_users.is_none())
                .then(
                    cost_of(a)
                        .unwrap_or(f64::INFINITY)
                        .total_cmp(&cost_of(b).unwrap_or(f64::INFINITY)),
                )
                .then(a.name.cmp(&b.name))
        });
        // One machine per GPU type, so the picks compare accelerators rather than sizes of the
        // same instance.
        let mut gpus: Vec<Option<String>> = Vec::new();
        let mut added = 0;
        for p in cloud {
            if added == FALLBACK_CLOUD {
                break;
            }
            let gpu = v
                .data
                .machine(&p.machine)
                .and_then(|m| m.gpu.as_deref().map(String::from));
            if gpus.contains(&gpu) || out.iter().any(|q| q.machine == p.machine) {
                continue;
            }
            gpus.push(gpu);
            out.push(p.clone());
            added += 1;
        }
    }
    (out, !ticked)
}

/// $ per 1M output tokens at the plan's cost basis (finite only).
fn cost_of(p: &ServingPlan) -> Option<f64> {
    p.cost
        .map(|c| c.usd_per_million_output)
        .filter(|x| x.is_finite())
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!(
        "{} {}",
        format::group_digits(n),
        if n == 1 { one } else { many }
    )
}

/// The asked load in words: "200 users", "5.00 requests/s".
fn load_text(l: Load) -> String {
    match l {
        Load::Users(n) => plural(n, "user", "users"),
        Load::RequestsPerSecond(r) => format!("{} requests/s", format::rate(r)),
    }
}

/// "TTFT p95 1.30 s, 24.0 tok/s" (and " each" for several users).
fn point_text(p: &LoadPoint, each: bool) -> String {
    format!(
        "TTFT p95 {}, {} tok/s{}",
        format::duration(p.ttft_p95_s),
        format::rate(p.tokens_per_s_per_user),
        if each { " each" } else { "" }
    )
}

/// What one machine does with the traffic, in one sentence (without the machine's name).
pub(crate) fn sentence(p: &ServingPlan, s: &Scenario) -> String {
    if let Some(b) = p.blocker {
        return format!("cannot serve it: {b}.");
    }
    let inputs = s.serving.clamped();
    let prompts = format!(
        "{}-token prompts",
        format::group_digits(s.prompt_tokens.clamp(1, s.context.max(1)))
    );
    let cost_text = |basis: CostBasis| -> String {
        match p.cost.filter(|c| c.basis == basis) {
            Some(c) if c.usd_per_million_output.is_finite() => format!(
                "{} per 1M output tokens",
                format::usd(Some(c.usd_per_million_output))
            ),
            _ => "no price in the catalog".to_string(),
        }
    };
    let mut out = match (p.machine_users(), p.best) {
        (Some(u), Some(b)) => {
            let mut t = format!(
                "holds {} with {prompts}: {}",
                plural(u, "user", "users"),
                point_text(&b, true)
            );
            if inputs.load.is_none() {
                t.push_str(&format!(", {}.", cost_text(CostBasis::Target)));
            } else {
                t.push('.');
            }
            t
        }
        _ => {
            let one = p.single.unwrap_or_default();
            let t = inputs.target;
            let mut text = format!(
                "misses the target even for one user with {prompts}: {} (target {} and {} tok/s)",
                point_text(&one, false),
                format::duration(t.ttft_p95_s),
                format::rate(t.min_tokens_per_s)
            );
            if inputs.load.is_none() {
                text.push_str(&format!(
                    "; one user: {}.",
                    cost_text(CostBasis::SingleUser)
                ));
            } else {
                text.push('.');
            }
            text
        }
    };
    if let Some(a) = p.asked {
        let verb = match a.load {
            Load::Users(1) => "takes",
            Load::Users(_) => "take",
            Load::RequestsPerSecond(_) => "take",
        };
        out.push_str(&format!(
            " {} {verb} {} on {}: {}{}, {}.",
            load_text(a.load),
            plural(a.replicas, "replica", "replicas"),
            plural(a.machines, "machine", "machines"),
            point_text(&a.per_replica, true),
            if a.meets_target {
                ""
            } else {
                " (misses the target)"
            },
            cost_text(CostBasis::Asked)
        ));
    }
    out
}

/// One line per machine: its colour (the plots' legend), its name and its answer.
fn sentences(ui: &mut Ui, plans: &[ServingPlan], s: &Scenario) {
    for (i, p) in plans.iter().enumerate() {
        ui.horizontal_wrapped(|ui| {
            ui.spacing_mut().item_spacing.x = 6.0;
            line_swatch(ui, machine_color(i));
            ui.label(RichText::new(&*p.name).strong());
            ui.label(sentence(p, s));
        });
    }
    if s.speculative.is_some() {
        ui.label(crate::core::serving::speculative_text(plans));
    }
}

/// One machine's curve on a plot: the part that meets the target, the part beyond, the largest
/// load that meets it and the asked load (x: log2 of the users in flight on the whole machine).
struct Series {
    name: String,
    color: Color32,
    met: Vec<[f64; 2]>,
    beyond: Vec<[f64; 2]>,
    best: Option<[f64; 2]>,
    asked: Option<[f64; 2]>,
}

fn series(i: usize, p: &ServingPlan, y: &dyn Fn(&LoadPoint, f64) -> Option<f64>) -> Series {
    let r = p.replicas_per_machine.max(1) as f64;
    let at = |pt: &LoadPoint| -> Option<[f64; 2]> {
        let users = pt.users * r;
        let yy = y(pt, r)?;
        (users >= 1.0 && yy.is_finite()).then(|| [users.log2(), yy])
    };
    let mut pts: Vec<(f64, LoadPoint)> = p.curve.iter().map(|c| (c.users, *c)).collect();
    if let Some(b) = p.best {
        pts.push((b.users, b));
    }
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    pts.dedup_by(|a, b| a.0 == b.0);
    let best_u = p.best.map(|b| b.users);
    let (mut met, mut beyond) = (Vec::new(), Vec::new());
    for (u, pt) in &pts {
        let Some(q) = at(pt) else { continue };
        match best_u {
            Some(b) if *u < b => met.push(q),
            Some(b) if *u == b => {
                met.push(q);
                beyond.push(q);
            }
            _ => beyond.push(q),
        }
    }
    Series {
        name: p.name.to_string(),
        color: machine_color(i),
        met,
        beyond,
        best: p.best.as_ref().and_then(at),
        asked: p.asked.as_ref().and_then(|a| at(&a.per_replica)),
    }
}

/// Grid marks at whole powers of two: a line at each, labels every 1, 2 or 4 so that they stay
/// ~64 px apart (egui_plot labels a mark only when its `step_size` spans 60 px).
fn pow2_marks(g: egui_plot::GridInput) -> Vec<GridMark> {
    let (lo, hi) = g.bounds;
    // `base_step_size` is the value 8 px span.
    let per_64px = g.base_step_size * 8.0;
    let step = [1.0, 2.0, 4.0, 8.0]
        .into_iter()
        .find(|s| *s >= per_64px)
        .unwrap_or(16.0);
    let mut v = Vec::new();
    let mut x = lo.ceil();
    while x <= hi {
        let labelled = (x / step).fract() == 0.0;
        v.push(GridMark {
            value: x,
            step_size: if labelled { step } else { 1.0 },
        });
        x += 1.0;
    }
    v
}

/// A rate on a linear axis: "0" at the origin (format::rate writes a missing rate there).
fn axis_rate(y: f64) -> String {
    if y.abs() < 1e-9 {
        "0".to_string()
    } else {
        format::rate(y)
    }
}

/// Users on the x axis: 2^x as a count.
fn users_at(x: f64) -> String {
    format::group_digits(2f64.powf(x).round().max(0.0) as u64)
}

/// A plot of one quantity against users in flight.
struct Chart<'a> {
    id: &'a str,
    title: &'a str,
    /// The y value of a load point on a machine of `r` replicas (already log10 for log plots).
    y: &'a dyn Fn(&LoadPoint, f64) -> Option<f64>,
    /// y as shown (the inverse of the log for log plots).
    fmt: &'a dyn Fn(f64) -> String,
    log: bool,
    /// The target region (in plot y).
    band: Option<(f64, f64)>,
}

fn chart(ui: &mut Ui, c: &Chart<'_>, plans: &[ServingPlan], size: egui::Vec2) {
    ui.vertical(|ui| {
        ui.set_width(size.x);
        ui.add(egui::Label::new(RichText::new(c.title).strong()).truncate());
        let all: Vec<Series> = plans
            .iter()
            .enumerate()
            .filter(|(_, p)| p.blocker.is_none())
            .map(|(i, p)| series(i, p, c.y))
            .collect();
        let fmt = c.fmt;
        let mut plot = still_plot(c.id, size)
            .x_axis_label("users in flight")
            .x_grid_spacer(pow2_marks)
            .x_axis_formatter(|m, _| users_at(m.value))
            .y_axis_formatter(move |m, _| fmt(m.value))
            .y_axis_min_width(44.0)
            .label_formatter(move |pos| match pos {
                egui_plot::HoverPosition::NearDataPoint {
                    plot_name,
                    position,
                    ..
                } => Some(format!(
                    "{plot_name}\n{} users: {}",
                    users_at(position.x),
                    fmt(position.y)
                )),
                _ => None,
            })
            .include_x(0.0);
        if c.log {
            // A labelled decade below the lowest point.
            let low = all
                .iter()
                .flat_map(|s| s.met.iter().chain(&s.beyond))
                .map(|q| q[1])
                .fold(f64::INFINITY, f64::min);
            if low.is_finite() {
                plot = plot.include_y(low.floor());
            }
            plot = plot.y_grid_spacer(|g| super::style::decade_marks(g, 3.0));
        } else {
            plot = plot.include_y(0.0);
        }
        if let Some((lo, hi)) = c.band {
            // Keep the edge of the target region in view.
            let edge = if c.log { hi } else { lo };
            plot = plot.include_y(edge);
            if !c.log {
                // Some of the region above the edge, so the shade shows.
                plot = plot.include_y(edge * 1.25);
            }
            if c.log {
                plot = plot.include_y(edge - 1.0).include_y(edge + 0.5);
            }
        }
        plot.show(ui, |pu| {
            if let Some((lo, hi)) = c.band {
                pu.span(
                    Span::new("", lo..=hi)
                        .axis(Axis::Y)
                        .fill(TARGET_FILL)
                        .border_color(TARGET_EDGE)
                        .border_width(1.0)
                        .border_style(LineStyle::dashed_loose())
                        .label_align(egui::Align2::RIGHT_BOTTOM),
                );
            }
            for (k, s) in all.iter().enumerate() {
                if s.met.len() > 1 {
                    pu.line(
                        Line::new(s.name.clone(), s.met.clone())
                            .color(s.color)
                            .width(2.5)
                            .id((c.id, k, "met")),
                    );
                }
                if s.beyond.len() > 1 {
                    pu.line(
                        Line::new(s.name.clone(), s.beyond.clone())
                            .color(s.color)
                            .width(1.5)
                            .style(LineStyle::dashed_loose())
                            .id((c.id, k, "beyond")),
                    );
                }
                if let Some(b) = s.best {
                    pu.points(
                        Points::new(s.name.clone(), vec![b])
                            .color(s.color)
                            .radius(4.0)
                            .filled(true)
                            .shape(MarkerShape::Circle)
                            .id((c.id, k, "best")),
                    );
                }
                if let Some(a) = s.asked {
                    pu.points(
                        Points::new(s.name.clone(), vec![a])
                            .color(s.color)
                            .radius(5.0)
                            .filled(false)
                            .shape(MarkerShape::Diamond)
                            .id((c.id, k, "asked")),
                    );
                }
            }
        });
    });
}

/// Throughput, time to first token and per-user speed against users in flight.
fn charts(ui: &mut Ui, plans: &[ServingPlan], target: &Target, avail: egui::Vec2) {
    if plans.iter().all(|p| p.blocker.is_some()) {
        return;
    }
    let w = ui.available_width();
    let cols = if w >= 860.0 { 3 } else { 2 };
    let gap = 12.0;
    let cw = ((w - gap * (cols as f32 - 1.0)) / cols as f32).floor() - 2.0;
    let h = (avail.y * 0.42).clamp(170.0, 300.0);
    let ttft_target = target.ttft_p95_s.max(1e-3).log10();
    let speed_target = target.min_tokens_per_s;
    let throughput = Chart {
        id: "serving-throughput",
        title: "Output tokens/s, all users",
        y: &|p, r| Some(p.output_tokens_per_s * r),
        fmt: &axis_rate,
        log: false,
        band: None,
    };
    let ttft = Chart {
        id: "serving-ttft",
        title: "Time to first token, p95 (log scale)",
        y: &|p, _| (p.ttft_p95_s > 0.0 && p.ttft_p95_s.is_finite()).then(|| p.ttft_p95_s.log10()),
        fmt: &|y| format::duration(10f64.powf(y)),
        log: true,
        band: Some((ttft_target - 6.0, ttft_target)),
    };
    let speed = Chart {
        id: "serving-speed",
        title: "Tokens/s each user sees",
        y: &|p, _| Some(p.tokens_per_s_per_user),
        fmt: &axis_rate,
        log: false,
        band: (speed_target > 0.0).then_some((speed_target, speed_target * 1e6)),
    };
    let items = [&throughput, &ttft, &speed];
    for row in items.chunks(cols) {
        ui.horizontal_top(|ui| {
            ui.spacing_mut().item_spacing.x = gap;
            for c in row {
                chart(ui, c, plans, vec2(cw, h));
            }
        });
        ui.add_space(4.0);
    }
    let speed = if speed_target > 0.0 {
        format!(", {} tok/s or more per user", format::rate(speed_target))
    } else {
        String::new()
    };
    hint(
        ui,
        format!(
            "Shaded: the target (time to first token {} or less at the 95th percentile{speed}). Solid: loads that meet both; dashed: beyond. The dot is the most users that meet them; a diamond, the asked load on one machine.",
            format::duration(target.ttft_p95_s)
        ),
    );
}

/// The table: one row per machine.
fn table(ui: &mut Ui, plans: &[ServingPlan], s: &Scenario) {
    let asked = s.serving.clamped().load;
    egui::ScrollArea::horizontal()
        .id_salt("serving-table-scroll")
        .show(ui, |ui| {
            egui::Grid::new("serving-table")
                .striped(true)
                .spacing([14.0, 4.0])
                .show(ui, |ui| {
                    let head = |ui: &mut Ui, t: &str, help: &str| {
                        ui.label(RichText::new(t).strong()).on_hover_text(help);
                    };
                    head(ui, "Machine", "");
                    head(ui, "Engine", "The engine that schedules the requests");
                    head(
                        ui,
                        "GPUs x replicas",
                        "GPUs per engine replica (tensor parallel, or layers split over every GPU for llama-server and transformers) x replicas on one machine",
                    );
                    head(
                        ui,
                        "KV pool",
                        "Tokens of KV cache one replica's pool holds (vLLM: its # GPU blocks x 16)",
                    );
                    head(
                        ui,
                        "Users at target",
                        "The most users in flight one machine holds while meeting the target",
                    );
                    head(ui, "TTFT p95", "Time to first token at that load, 95th percentile");
                    head(ui, "tok/s per user", "Decode speed each user sees at that load");
                    head(
                        ui,
                        "$ per 1M output",
                        "The machine's hour over the output tokens of that hour, at that load (or at the asked load)",
                    );
                    if let Some(l) = asked {
                        head(
                            ui,
                            &format!("For {}", load_text(l)),
                            "Replicas and machines the asked load takes, and whether it then meets the target",
                        );
                    }
                    ui.end_row();
                    for (i, p) in plans.iter().enumerate() {
                        row(ui, i, p, asked.is_some());
                        ui.end_row();
                    }
                });
        });
}

fn row(ui: &mut Ui, i: usize, p: &ServingPlan, asked: bool) {
    ui.horizontal(|ui| {
        line_swatch(ui, machine_color(i));
        ui.label(&*p.name);
    });
    ui.label(p.engine.label());
    if let Some(b) = p.blocker {
        for _ in 0..2 {
            ui.label(format::MISSING);
        }
        ui.label(RichText::new("cannot serve").color(ui.visuals().warn_fg_color))
            .on_hover_text(b.to_string());
        for _ in 0..(3 + usize::from(asked)) {
            ui.label(format::MISSING);
        }
        return;
    }
    ui.label(format!(
        "{} x {}",
        format::group_digits(p.tp),
        format::group_digits(p.replicas_per_machine)
    ));
    let pool = p.pool.as_ref();
    ui.label(pool.map_or(format::MISSING.to_string(), |k| {
        format::group_digits(k.tokens)
    }))
    .on_hover_text(pool.map_or(String::new(), |k| {
        format!(
            "{} of KV per GPU, {} blocks of {} tokens; {} requests of the full context at once",
            format::bytes(k.kv_per_gpu),
            format::group_digits(k.blocks),
            format::group_digits(k.block_tokens),
            format::group_digits(p.max_seqs_at_context)
        )
    }));
    match (p.machine_users(), p.best) {
        (Some(u), Some(b)) => {
            ui.label(format::group_digits(u));
            ui.label(format::duration(b.ttft_p95_s));
            ui.label(format::rate(b.tokens_per_s_per_user));
        }
        _ => {
            let one = p.single.unwrap_or_default();
            let weak = |t: String| RichText::new(t).weak();
            ui.label(RichText::new("none").color(ui.visuals().warn_fg_color))
                .on_hover_text(
                    "Not even one user meets the target; the next columns are for one user",
                );
            ui.label(weak(format::duration(one.ttft_p95_s)));
            ui.label(weak(format::rate(one.tokens_per_s_per_user)));
        }
    }
    let basis = |b: CostBasis| match b {
        CostBasis::Target => "at the most users that meet the target",
        CostBasis::Asked => "at the asked load",
        CostBasis::SingleUser => "for one user",
    };
    match p.cost {
        Some(c) => {
            let owned = p.kind != MachineKind::Cloud;
            ui.label(format::usd(Some(c.usd_per_million_output)))
                .on_hover_text(format!(
                    "{}, {} an hour{}",
                    basis(c.basis),
                    format::usd(Some(c.usd_per_hour)),
                    if owned {
                        " (electricity plus the purchase over the amortisation years)"
                    } else {
                        ""
                    }
                ));
        }
        None => {
            ui.label(format::MISSING)
                .on_hover_text("No price for this machine in the catalog");
        }
    }
    if asked {
        match p.asked {
            Some(a) => {
                let text = format!(
                    "{} on {}",
                    plural(a.replicas, "replica", "replicas"),
                    plural(a.machines, "machine", "machines")
                );
                if a.meets_target {
                    ui.label(text);
                } else {
                    ui.label(
                        RichText::new(format!("{text}, misses the target"))
                            .color(ui.visuals().warn_fg_color),
                    );
                }
            }
            None => {
                ui.label(format::MISSING);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_words() {
        assert_eq!(load_text(Load::Users(1)), "1 user");
        assert_eq!(load_text(Load::Users(1200)), "1,200 users");
        assert_eq!(load_text(Load::RequestsPerSecond(2.5)), "2.50 requests/s");
        assert_eq!(users_at(6.0), "64");
    }

    #[test]
    fn a_mix_longer_than_the_context_raises_it_or_cuts_the_prompt() {
        let mut s = Scenario::default();
        let mut n = super::super::data::Notices::default();
        // Llama 3 8B: 8,192 tokens at most; the coding agent's 16,384-token prompts are cut.
        apply_mix(&mut s, &mut n, Mix::CodingAgent, 8192);
        assert_eq!(s.context, 8192);
        assert_eq!(s.prompt_tokens, 8192 - 400);
        assert!(n.clamp_note("Prompt tokens").is_some());
        // A model with a long context: the context grows to hold them.
        apply_mix(&mut s, &mut n, Mix::CodingAgent, 131_072);
        assert_eq!((s.context, s.prompt_tokens), (32_768, 16_384));
        assert!(n.clamp_note("Prompt tokens").is_none());
        assert_eq!(s.serving.mix, Some(Mix::CodingAgent));
    }
}
