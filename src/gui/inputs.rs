//! The left panel: every input of the scenario. Each one has a visible label that names it for
//! screen readers and tests (`labelled_by`), and every number can be typed in the field beside
//! its slider. A typed number applies on Enter or when the field loses focus (not on every
//! keystroke), and a value outside the input's range is clamped with a note saying so.

use super::command::Command;
use super::data::{Notices, View};
use super::style::{hint, warn};
use crate::core::format;
use crate::core::format::group_digits;
use crate::core::model::ModelSpec;
use crate::core::precision::{KvPrecision, WeightPrecision};
use crate::core::quality::{PrecisionCost, Quality};
use crate::core::scenario::SplitStyle;
use crate::core::scenario::{
    Checkpointing, Framework, KvAllocation, LoraTargets, Mode, Offload, Optimizer, Runtime,
    Scenario,
};
use crate::core::speculative::{
    MAX_DRAFT_TOKENS, SpecMethod, SpeculativeInputs, default_method, draft_candidates, draft_spec,
    tokens_per_step,
};
use crate::core::units::Bytes;
use egui::{Align, ComboBox, DragValue, Layout, RichText, Slider, Ui, vec2};
use std::ops::RangeInclusive;

/// Width of the label column.
const LABEL_W: f32 = 112.0;
/// Width of the number field beside a slider.
const VALUE_W: f32 = 78.0;

/// The label at the start of an input row; its id names the input.
pub(super) fn row_label(ui: &mut Ui, text: &str, help: &str) -> egui::Response {
    let h = ui.spacing().interact_size.y;
    let r = ui
        .allocate_ui_with_layout(
            vec2(LABEL_W, h),
            Layout::left_to_right(Align::Center),
            |ui| {
                ui.set_min_width(LABEL_W);
                ui.add(egui::Label::new(text).truncate())
            },
        )
        .inner;
    if help.is_empty() {
        r
    } else {
        r.on_hover_text(help)
    }
}

/// The label of a slider row, with the slider's width set to what the row leaves beside the
/// number field.
fn slider_row_label(ui: &mut Ui, text: &str, help: &str) -> egui::Response {
    let l = row_label(ui, text, help);
    ui.spacing_mut().slider_width =
        (ui.available_width() - VALUE_W - ui.spacing().item_spacing.x - 16.0).max(40.0);
    l
}

/// The typed number field of an input row named by `label`. It has an id of its own (`id`), so
/// focus stays on the field while notes come and go.
fn value_field(
    ui: &mut Ui,
    id: &str,
    field: DragValue<'_>,
    label: &egui::Response,
) -> egui::Response {
    ui.push_id(id, |ui| {
        ui.add_sized(vec2(VALUE_W - 4.0, ui.spacing().interact_size.y), field)
    })
    .inner
    .labelled_by(label.id)
}

/// With `slider` focused, whether an arrow key asks for a step up (right, up) or down (left,
/// down); `None` when none is pressed.
fn arrow_step(ui: &Ui, slider: &egui::Response) -> Option<bool> {
    if !slider.has_focus() {
        return None;
    }
    let (up, down) = ui.input(|i| {
        (
            i.key_pressed(egui::Key::ArrowRight) || i.key_pressed(egui::Key::ArrowUp),
            i.key_pressed(egui::Key::ArrowLeft) || i.key_pressed(egui::Key::ArrowDown),
        )
    });
    (up || down).then_some(up)
}

/// How a `u64` input steps with the arrow keys.
#[derive(Copy, Clone, PartialEq)]
pub(super) enum Step {
    /// The slider's own step.
    Plain,
    /// Doubling and halving (context lengths are powers of two).
    PowerOfTwo,
    /// Multiples of a grid (an image pipeline's side in pixels).
    Multiple(u64),
}

/// The next power of two above `v` (up) or below it (down).
fn pow2_step(v: u64, up: bool) -> u64 {
    if up {
        v.saturating_add(1).next_power_of_two()
    } else if v <= 1 {
        1
    } else {
        let p = v.next_power_of_two();
        if p == v { v / 2 } else { p / 2 }
    }
}

/// A logarithmic or linear slider with a typed number field, both named by `label`. A typed
/// value outside `range` is clamped and a note in `notices` says so.
#[allow(clippy::too_many_arguments)]
fn slider_u64(
    ui: &mut Ui,
    notices: &mut Notices,
    label: &str,
    help: &str,
    value: &mut u64,
    range: RangeInclusive<u64>,
    log: bool,
    step: Step,
) -> bool {
    let typed = range.clone();
    slider_u64_typed(ui, notices, label, help, value, (range, typed), log, step)
}

/// [`slider_u64`] whose typed field takes a wider range than the slider (`ranges`: the slider's,
/// the field's): the prompt is typed up to the longest context, and the app's normalisation
/// cuts it to the context with a note.
#[allow(clippy::too_many_arguments)]
pub(super) fn slider_u64_typed(
    ui: &mut Ui,
    notices: &mut Notices,
    label: &str,
    help: &str,
    value: &mut u64,
    (range, typed_range): (RangeInclusive<u64>, RangeInclusive<u64>),
    log: bool,
    step: Step,
) -> bool {
    let before = *value;
    let changed = ui
        .horizontal(|ui| {
            let l = slider_row_label(ui, label, help);
            let mut slider = Slider::new(value, range.clone())
                .clamping(egui::SliderClamping::Edits)
                .logarithmic(log)
                .show_value(false);
            if let Step::Multiple(m) = step {
                slider = slider.step_by(m as f64);
            }
            let s = ui.add(slider).labelled_by(l.id);
            if step == Step::PowerOfTwo
                && let Some(up) = arrow_step(ui, &s)
            {
                *value = pow2_step(before, up).clamp(*range.start(), *range.end());
            }
            let speed = (*value as f64 * 0.02).max(0.2);
            let d = value_field(
                ui,
                label,
                DragValue::new(value)
                    .speed(speed)
                    .update_while_editing(false),
                &l,
            );
            if d.changed() {
                let typed = *value;
                *value = typed.clamp(*typed_range.start(), *typed_range.end());
                if typed != *value {
                    let (bound, why) = if typed > *typed_range.end() {
                        ("largest", "above")
                    } else {
                        ("smallest", "below")
                    };
                    notices.clamp(
                        label,
                        format!(
                            "{label}: {} is {why} the {bound} value this input takes; set to {}.",
                            group_digits(typed),
                            group_digits(*value)
                        ),
                    );
                } else {
                    notices.clamped.retain(|(l, _)| l != label);
                }
            } else if s.changed() {
                notices.clamped.retain(|(l, _)| l != label);
            }
            s.changed() || d.changed() || *value != before
        })
        .inner;
    if let Some(n) = notices.clamp_note(label) {
        warn(ui, n.to_string());
    }
    changed
}

#[allow(clippy::too_many_arguments)]
pub(super) fn slider_f64(
    ui: &mut Ui,
    label: &str,
    help: &str,
    value: &mut f64,
    range: RangeInclusive<f64>,
    log: bool,
    decimals: usize,
    suffix: &str,
) -> bool {
    ui.horizontal(|ui| {
        let l = slider_row_label(ui, label, help);
        let s = ui
            .add(
                Slider::new(value, range.clone())
                    .logarithmic(log)
                    .show_value(false),
            )
            .labelled_by(l.id);
        let speed = (value.abs() * 0.01).max(0.001);
        let d = value_field(
            ui,
            label,
            DragValue::new(value)
                .range(range)
                .speed(speed)
                .max_decimals(decimals)
                .suffix(suffix)
                .update_while_editing(false),
            &l,
        );
        s.changed() || d.changed()
    })
    .inner
}

/// A picker named by `label`; returns whether the value changed.
pub(super) fn combo<T: Copy + PartialEq>(
    ui: &mut Ui,
    label: &str,
    help: &str,
    value: &mut T,
    options: &[T],
    name: impl Fn(T) -> String,
) -> bool {
    combo_rows(ui, label, help, value, options, (&name, &name))
}

/// [`combo`] whose list rows say more than the closed picker (`names`: the closed picker's
/// text, a row's text).
fn combo_rows<T: Copy + PartialEq>(
    ui: &mut Ui,
    label: &str,
    help: &str,
    value: &mut T,
    options: &[T],
    (name, row): (&dyn Fn(T) -> String, &dyn Fn(T) -> String),
) -> bool {
    ui.horizontal(|ui| {
        let l = row_label(ui, label, help);
        let before = *value;
        // The chosen name is cut to the row (it is whole in the list): a long one never widens
        // the panel, which would move the tabs beside it.
        let r = ComboBox::from_id_salt(("input", label))
            .selected_text(name(*value))
            .truncate()
            .width((ui.available_width() - 12.0).max(60.0))
            .height(520.0)
            .show_ui(ui, |ui| {
                for &o in options {
                    ui.selectable_value(value, o, row(o));
                }
            });
        let _ = r.response.labelled_by(l.id);
        *value != before
    })
    .inner
}

/// A checkbox whose text names it.
pub(super) fn check(ui: &mut Ui, label: &str, help: &str, value: &mut bool) -> bool {
    ui.horizontal(|ui| {
        ui.add_space(LABEL_W + ui.spacing().item_spacing.x);
        ui.checkbox(value, label).on_hover_text(help).changed()
    })
    .inner
}

fn kv_name(p: KvPrecision) -> String {
    match p {
        KvPrecision::Fp32 => "FP32".into(),
        KvPrecision::Fp16 => "FP16".into(),
        KvPrecision::Bf16 => "BF16".into(),
        KvPrecision::Fp8 => "FP8".into(),
        KvPrecision::Q8_0 => "Q8_0 (8.5 bits)".into(),
        KvPrecision::Q4_0 => "Q4_0 (4.5 bits)".into(),
    }
}

/// The longest context the context slider offers, whatever the model: a context past the
/// model's trained length is a real question (RoPE scaling, what llama.cpp runs with a warning),
/// so the row warns instead of stopping there.
pub const MAX_CONTEXT_SLIDER: u64 = 1 << 20;

/// The inputs panel and the state of its model search.
#[derive(Default)]
pub(crate) struct InputsPanel {
    model_search: String,
    model_popup_open: bool,
    /// The pasted runtime command line, and why the last one could not be applied.
    command_line: String,
    command_error: Option<String>,
}

impl InputsPanel {
    /// Draws the inputs panel.
    pub fn ui(&mut self, ui: &mut Ui, v: &mut View<'_>) {
        egui::ScrollArea::vertical()
            .auto_shrink([false, false])
            .show(ui, |ui| {
                ui.add_space(4.0);
                if v.state.scenario.mode == Mode::Image {
                    super::image::input_sections(ui, v);
                    reset_row(ui, v);
                    return;
                }
                egui::CollapsingHeader::new(RichText::new("Model").strong())
                    .default_open(true)
                    .show(ui, |ui| self.model_section(ui, v));
                egui::CollapsingHeader::new(RichText::new("Precision").strong())
                    .default_open(true)
                    .show(ui, |ui| self.precision_section(ui, v));
                egui::CollapsingHeader::new(RichText::new("Workload").strong())
                    .default_open(true)
                    .show(ui, |ui| workload_section(ui, v));
                egui::CollapsingHeader::new(RichText::new("Techniques").strong())
                    .default_open(true)
                    .show(ui, |ui| techniques_section(ui, v));
                egui::CollapsingHeader::new(RichText::new("Runtime and costs").strong())
                    .default_open(true)
                    .show(ui, |ui| runtime_section(ui, v));
                ui.add_space(4.0);
                self.command_row(ui, v);
                reset_row(ui, v);
            });
    }

    fn model_section(&mut self, ui: &mut Ui, v: &mut View<'_>) {
        self.model_picker(ui, v);
        // Parameters: dragging it turns the model into a generic one of that size. The slider
        // is logarithmic over 0.1 B to 2 T and gets a row of its own, the panel's full width, so
        // a short drag is a small step (each decade about 60 px); the typed field reads "8.03B",
        // "494M" and takes the same forms.
        let pc = v.state.scenario.model.param_count();
        parameters_row(ui, v, pc.total);
        model_hints(ui, v, &pc);
    }

    /// "Paste a llama.cpp or vLLM command": the line's settings over the scenario
    /// (`core::launch_line`), its `-m` model file imported as "Import model" does. A line
    /// headroom cannot read leaves the scenario as it was and says why in one line.
    fn command_row(&mut self, ui: &mut Ui, v: &mut View<'_>) {
        const LABEL: &str = "Paste a llama.cpp or vLLM command";
        let field = ui.add(
            egui::TextEdit::singleline(&mut self.command_line)
                .hint_text(LABEL)
                .desired_width(f32::INFINITY),
        );
        let field = field
            .accessible_name(LABEL)
            .on_hover_text("llama-server, llama-cli, llama-bench, vllm serve, mlx_lm.server or mlx_lm.generate with its flags: the context, cache types, -ngl, --n-cpu-moe, -ts, -t, --prefill-step-size, --kv-bits … become the scenario's");
        let entered = field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
        let clicked = ui
            .button("Apply command")
            .on_hover_text("Read the pasted command into the scenario")
            .clicked();
        if (entered || clicked) && !self.command_line.trim().is_empty() {
            match crate::core::launch_line::parse(&self.command_line) {
                Err(e) => self.command_error = Some(e),
                Ok(line) => {
                    self.command_error = None;
                    line.apply(&mut v.state.scenario);
                    if let Some(file) = &line.gguf {
                        v.cmds.push(Command::AtPath(
                            super::jobs::FileAction::ImportModel,
                            std::path::PathBuf::from(file),
                        ));
                    }
                }
            }
        }
        if let Some(e) = &self.command_error {
            warn(ui, format!("Cannot apply the command: {e}"));
        }
    }

    /// The Model row: the preset list with its search field.
    fn model_picker(&mut self, ui: &mut Ui, v: &mut View<'_>) {
        let current = v.state.scenario.model.name.clone();
        ui.horizontal(|ui| {
            let l = row_label(
                ui,
                "Model",
                "Pick a preset (type to search), or import a model file",
            );
            let popup = ComboBox::from_id_salt("model-preset")
                .selected_text(current.clone())
                .truncate()
                .width((ui.available_width() - 12.0).max(60.0))
                .height(420.0)
                .close_behavior(egui::PopupCloseBehavior::CloseOnClickOutside)
                .show_ui(ui, |ui| {
                    // A fresh search each time the list opens.
                    if !self.model_popup_open {
                        self.model_search.clear();
                    }
                    let search = ui.add(
                        egui::TextEdit::singleline(&mut self.model_search)
                            .hint_text("Search models")
                            .desired_width(f32::INFINITY),
                    );
                    let search = search.accessible_name("Search models");
                    // Focus the search field once, when the list opens; keyboard users can then
                    // Tab on to the models.
                    if !self.model_popup_open {
                        search.request_focus();
                        self.model_popup_open = true;
                    }
                    // The list keeps its height while the search narrows it, so it never
                    // shrinks to one row and stays there.
                    ui.set_min_height(260.0);
                    let needle = self.model_search.trim().to_lowercase();
                    let mut family = String::new();
                    let mut chosen = None;
                    let mut first = None;
                    let mut shown = 0;
                    for p in &v.data.catalog.models {
                        let hay = format!("{} {} {}", p.name, p.id, p.family).to_lowercase();
                        if !needle.split_whitespace().all(|w| hay.contains(w)) {
                            continue;
                        }
                        if p.family != family {
                            family = p.family.clone();
                            ui.label(RichText::new(&family).size(11.0).weak());
                        }
                        shown += 1;
                        first.get_or_insert_with(|| p.id.clone());
                        let on = v.state.scenario.model_id.as_deref() == Some(p.id.as_str());
                        let pc = p.spec.param_count();
                        let r = ui.selectable_label(on, &p.name).on_hover_text(format!(
                            "{} parameters ({} active), {} layers, {} KV heads, max context {}",
                            format::params(pc.total),
                            format::params(pc.active),
                            p.spec.layers,
                            p.spec.kv_heads,
                            group_digits(p.spec.max_context)
                        ));
                        if r.clicked() {
                            chosen = Some(p.id.clone());
                        }
                    }
                    if shown == 0 {
                        ui.label(RichText::new("No model matches").weak());
                    }
                    // Enter in the search picks the first match (the only one, once narrowed).
                    let enter =
                        search.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
                    if enter && !needle.is_empty() && chosen.is_none() {
                        chosen = first;
                    }
                    if let Some(id) = chosen {
                        ui.close();
                        Some(id)
                    } else {
                        None
                    }
                });
            let _ = popup.response.labelled_by(l.id);
            if popup.inner.is_none() {
                self.model_popup_open = false;
            }
            if let Some(Some(id)) = popup.inner {
                v.apply_preset(&id);
            }
        });
    }

    fn precision_section(&mut self, ui: &mut Ui, v: &mut View<'_>) {
        // Each precision's size and quality on this model, as the estimate and the quality table
        // give them (cached with the estimate). The picker names each precision with the bits per
        // weight it really averages on this model (K-quant mixes keep some tensors at higher
        // precision), and its list rows add the weights' size and the measured quality.
        let costs = v.data.derived.precision_costs(&v.state.scenario).to_vec();
        let s = &mut v.state.scenario;
        let notices = &mut v.data.notices;
        let cost = |p: WeightPrecision| costs.iter().find(|c| c.precision == p);
        let name =
            |p: WeightPrecision| cost(p).map_or_else(|| p.label().to_string(), PrecisionCost::name);
        let row = |p: WeightPrecision| {
            cost(p).map_or_else(|| p.label().to_string(), PrecisionCost::row_label)
        };
        let held = s.weights;
        let picked = combo_rows(
            ui,
            "Weights",
            "Storage format of the weights. The bits are an average over all of this model's tensors, block scales included: the embeddings, output matrix and norms keep their own (often 16-bit) types, so a 4-bit format averages more than 4 bits. Each row gives the weights' size and the published quality (mean KL divergence to the 16-bit model; lower is closer)",
            &mut s.weights,
            Scenario::weights_for_mode(s.mode),
            (&name, &row),
        );
        if picked {
            notices.weights_note = None;
        }
        if let Some(n) = &notices.weights_note {
            hint(ui, n.clone());
        }
        if picked && s.model.file_weights.is_some() {
            // An imported file's exact bytes are for the precision it was read at (the one held
            // until now): another precision is sized from the architecture's tensors, as
            // `--weights` does on the command line.
            if let Some(note) =
                crate::io::import::resize_weights(&mut s.model, Some(held), s.weights)
            {
                notices.clamp("Weights", note);
            }
        }
        if s.model.file_weights.is_none()
            && let Some(n) = notices.clamp_note("Weights")
        {
            hint(ui, n.to_string());
        }
        hint(ui, s.weights.mix_note());
        let table = crate::io::catalog::quality();
        quality_line(ui, "Weights quality", &table.of_weights(s));
        combo(
            ui,
            "K cache",
            "Element type of the cached keys (llama.cpp --cache-type-k, vLLM --kv-cache-dtype)",
            &mut s.kv.k,
            &KvPrecision::ALL,
            kv_name,
        );
        combo(
            ui,
            "V cache",
            "Element type of the cached values (llama.cpp --cache-type-v)",
            &mut s.kv.v,
            &KvPrecision::ALL,
            kv_name,
        );
        quality_line(ui, "KV cache quality", &table.of_kv(s));
        egui::CollapsingHeader::new("Size vs quality")
            .id_salt("size-vs-quality")
            .default_open(false)
            .show(ui, |ui| super::quality::chart(ui, &costs, s.weights));
    }
}

/// The Reset scenario button.
fn reset_row(ui: &mut Ui, v: &mut View<'_>) {
    ui.add_space(6.0);
    ui.horizontal(|ui| {
        if ui
            .button("Reset scenario")
            .on_hover_text("Back to Llama 3 8B, BF16, 8K context, batch 1")
            .clicked()
        {
            v.cmds.push(Command::ResetScenario);
        }
    });
    ui.add_space(8.0);
}

/// A quality line under a picker: "Weights quality: KLD 0.0313 (LLaMA 3 8B, measured)", with
/// every figure, the dataset and the context on hover.
fn quality_line(ui: &mut Ui, what: &str, q: &Quality<'_>) {
    ui.add(
        egui::Label::new(
            RichText::new(format!("{what}: {}", q.short()))
                .size(11.0)
                .weak(),
        )
        .wrap(),
    )
    .on_hover_text(q.long());
}

/// Parses a typed parameter count into billions: "8", "8B", "8.03 B", "494M", "1.5T", "4e6".
fn parse_params_billions(t: &str) -> Option<f64> {
    let t = t.trim().replace([',', '_', ' '], "");
    let (num, scale) = match t.chars().last()?.to_ascii_uppercase() {
        'T' => (&t[..t.len() - 1], 1e3),
        'B' | 'G' => (&t[..t.len() - 1], 1.0),
        'M' => (&t[..t.len() - 1], 1e-3),
        'K' => (&t[..t.len() - 1], 1e-6),
        _ => {
            // A bare number: billions when small, a raw count when large.
            let x: f64 = t.parse().ok()?;
            return Some(if x >= 1e5 { x / 1e9 } else { x });
        }
    };
    num.parse::<f64>()
        .ok()
        .map(|x| x * scale)
        .filter(|x| x.is_finite() && *x > 0.0)
}

/// The Mode picker, the first row of the workload in every mode (text and image).
pub(super) fn mode_combo(ui: &mut Ui, mode: &mut Mode) {
    combo(
        ui,
        "Mode",
        "Serve the model, embed or rerank with it, generate images, or fine-tune it",
        mode,
        &Mode::CLI,
        |m| m.label().into(),
    );
}

fn workload_section(ui: &mut Ui, v: &mut View<'_>) {
    let s = &mut v.state.scenario;
    let notices = &mut v.data.notices;
    mode_combo(ui, &mut s.mode);
    if s.mode.is_embed() {
        hint(
            ui,
            "Embeddings: each input is Prompt tokens long and Batch inputs go through one forward pass together; nothing is generated, so no KV cache is kept (llama.cpp keeps one for a decoder model).",
        );
    }
    // QLoRA holds its own NF4 base (the app sets it), so only LoRA can meet a GGUF precision.
    if s.mode == Mode::Lora && s.weights.is_gguf() {
        warn(
            ui,
            format!(
                "{} is a llama.cpp (GGUF) format: PyTorch trainers (transformers + PEFT) dequantise GGUF files when they load them, so the base is not trained at {} bits. Pick BF16 for LoRA, or QLoRA for a 4-bit base.",
                s.weights.label(),
                s.weights.label()
            ),
        );
    }
    context_row(ui, s, notices);
    batch_rows(ui, s, notices);
    if s.mode == Mode::Inference {
        image_rows(ui, s, notices);
    }
}

/// A vision-language model's images (its mmproj imported): how many per request, and where the
/// encoder runs.
fn image_rows(ui: &mut Ui, s: &mut Scenario, notices: &mut Notices) {
    let Some(v) = s.vision.as_mut() else {
        return;
    };
    let mut n = v.images();
    if slider_u64(
        ui,
        notices,
        "Images",
        "Images per request: each is encoded by the vision encoder and takes its tokens in the context",
        &mut n,
        1..=64,
        false,
        Step::Plain,
    ) {
        v.images = n;
    }
    check(
        ui,
        "Vision encoder on the CPU",
        "llama.cpp --no-mmproj-offload: the mmproj weights and its compute buffer stay in RAM",
        &mut v.on_cpu,
    );
    hint(
        ui,
        format!(
            "Images: {} tokens each ({}² in {}-pixel patches), {} in all per request.",
            group_digits(v.tokens_per_image()),
            v.encoder.image_size,
            v.encoder.patch_size,
            group_digits(v.tokens_per_request())
        ),
    );
    if ui
        .button("Remove the vision projector")
        .on_hover_text("Size the model without images")
        .clicked()
    {
        s.vision = None;
    }
}

/// The Context row (typed freely, clamped above the model's maximum with a note), and what the
/// model was trained for.
fn context_row(ui: &mut Ui, s: &mut Scenario, notices: &mut Notices) {
    let limit = MAX_CONTEXT_SLIDER;
    let lo = 256.min(limit);
    // The context input is typed into freely: above the model's maximum it is clamped with the
    // note below (the app's normalisation), never silently.
    let before = s.context;
    ui.horizontal(|ui| {
        let l = slider_row_label(
            ui,
            "Context",
            "Tokens per sequence (prompt + output): the KV cache is sized for this. Arrow keys double or halve it",
        );
        let sl = ui
            .add(
                Slider::new(&mut s.context, lo..=limit)
                    .clamping(egui::SliderClamping::Edits)
                    .logarithmic(true)
                    .show_value(false),
            )
            .labelled_by(l.id);
        super::frame_stats::probe_widget("Context", sl.rect, ui.ctx().pixels_per_point());
        if let Some(up) = arrow_step(ui, &sl) {
            s.context = pow2_step(before, up).clamp(lo, limit);
        }
        let speed = (s.context as f64 * 0.02).max(0.2);
        value_field(
            ui,
            "Context",
            DragValue::new(&mut s.context)
                .speed(speed)
                .update_while_editing(false),
            &l,
        );
    });
    if s.context != before {
        notices.context_clamped = None;
    }
    let max = s.model.max_context;
    if let Some(n) = notices.context_clamped.filter(|&n| n > s.context) {
        warn(
            ui,
            format!(
                "Context lowered from {} to {} tokens, the most this input takes.",
                group_digits(n),
                group_digits(s.context)
            ),
        );
    }
    if max > 0 && s.context > max {
        warn(
            ui,
            format!(
                "Context {} is beyond the {} tokens this model was trained for: the memory is for the asked length; llama.cpp warns (n_ctx_train < n_ctx), vLLM refuses it without VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, and quality past the trained length needs RoPE scaling.",
                group_digits(s.context),
                group_digits(max)
            ),
        );
    } else if max > 0 {
        hint(
            ui,
            format!(
                "This model was trained for up to {} tokens.",
                group_digits(max)
            ),
        );
    }
}

/// Batch, and for inference the ubatch and the prompt length, for training the tokens of the run.
fn batch_rows(ui: &mut Ui, s: &mut Scenario, notices: &mut Notices) {
    let (batch_label, batch_help) = if s.mode.is_training() {
        ("Micro-batch", "Sequences per GPU per step")
    } else {
        ("Batch", "Concurrent requests (sequences in flight)")
    };
    slider_u64(
        ui,
        notices,
        batch_label,
        batch_help,
        &mut s.batch,
        1..=512,
        true,
        Step::Plain,
    );
    if !s.mode.is_training() && s.runtime == Runtime::Mlx {
        // mlx-lm reads the prompt in steps of --prefill-step-size, not llama.cpp's ubatch.
        let mut step = s
            .launch
            .prefill_step
            .unwrap_or(crate::core::mlx::PREFILL_STEP_SIZE);
        if slider_u64(
            ui,
            notices,
            "Prefill step",
            "mlx-lm --prefill-step-size: how many prompt tokens MLX evaluates at once while reading the prompt (default 2048)",
            &mut step,
            1..=8192,
            true,
            Step::PowerOfTwo,
        ) {
            s.launch.prefill_step = Some(step);
        }
        hint(
            ui,
            "Prefill step: prompt tokens MLX handles in one go. Bigger needs a bigger scratch buffer on the GPU.",
        );
    } else if !s.mode.is_training() {
        slider_u64(
            ui,
            notices,
            "Ubatch",
            "llama.cpp -ub: how many prompt tokens the GPU works on at once while reading the prompt",
            &mut s.ubatch,
            1..=8192,
            true,
            Step::PowerOfTwo,
        );
        hint(
            ui,
            "Ubatch: prompt tokens handled in one go. Bigger reads long prompts faster but needs a bigger scratch buffer on the GPU.",
        );
    }
    if !s.mode.is_training() {
        let ctx = s.context.max(1);
        slider_u64_typed(
            ui,
            notices,
            "Prompt tokens",
            "Prompt length for the time-to-first-token estimate (at most the context; a longer one is kept and comes back when the context grows)",
            &mut s.prompt_tokens,
            (1..=ctx, 1..=crate::core::scenario::limits::MAX_CONTEXT),
            true,
            Step::Plain,
        );
    } else {
        let mut m = s.train_tokens as f64 / 1e6;
        if slider_f64(
            ui,
            "Training tokens",
            "Tokens in the whole run, for its time and cost (millions)",
            &mut m,
            0.1..=1e7,
            true,
            1,
            " M",
        ) {
            s.train_tokens = (m * 1e6).round() as u64;
        }
    }
}

fn techniques_section(ui: &mut Ui, v: &mut View<'_>) {
    let s = &mut v.state.scenario;
    let notices = &mut v.data.notices;
    let train = s.mode.is_training();
    check(
        ui,
        "FlashAttention",
        "Tiles attention through on-chip memory: no N x N score matrix (O(N) instead of O(N^2))",
        &mut s.flash_attention,
    );
    if train {
        training_techniques(ui, s, notices);
    } else if s.mode == Mode::Inference {
        kv_allocation_row(ui, s);
        speculative_rows(ui, v);
    }
    let s = &mut v.state.scenario;
    let notices = &mut v.data.notices;
    let gpus_help = if train {
        "GPUs the job is spread over (data parallel; ZeRO shards over them). 0 = CPU only"
    } else {
        "GPUs the model is split over (tensor parallel). 0 = CPU only"
    };
    slider_u64(
        ui,
        notices,
        "GPUs",
        gpus_help,
        &mut s.gpus,
        0..=1024,
        true,
        Step::Plain,
    );
    if s.gpus == 0 {
        hint(ui, "CPU only: every component lives in system RAM.");
    }
    hint(
        ui,
        "GPUs (and ZeRO) describe a hypothetical setup for the summary and the component table. Each machine in the Machines table and the Breakdown chart runs the job with its own GPUs.",
    );
}

/// The draft model picker: presets of the model's family and tokenizer, smaller than it.
fn draft_model_row(
    ui: &mut Ui,
    cat: &crate::core::catalog::Catalog,
    model: &crate::core::model::ModelSpec,
    model_id: Option<&str>,
    sp: &mut SpeculativeInputs,
) {
    let family = model_id
        .and_then(|id| cat.model(id))
        .map(|p| p.family.as_str());
    let candidates = draft_candidates(&cat.models, model, family);
    if candidates.is_empty() {
        hint(
            ui,
            "No preset shares this model's tokenizer and is smaller: pick an EAGLE-3 head, or give a draft file with the CLI's --draft.",
        );
    } else {
        let mut pick = candidates
            .iter()
            .position(|p| sp.draft_id.as_deref() == Some(p.id.as_str()));
        let options: Vec<Option<usize>> = (0..candidates.len()).map(Some).collect();
        let name = |i: Option<usize>| match i {
            Some(i) => format!(
                "{} ({})",
                candidates[i].name,
                format::params(candidates[i].spec.param_count().total)
            ),
            None => "Choose a draft model".into(),
        };
        if combo(
            ui,
            "Draft model",
            "The drafter: presets of this model's family and tokenizer, smaller than it",
            &mut pick,
            &options,
            name,
        ) && let Some(i) = pick
        {
            sp.draft = Some(candidates[i].spec.clone());
            sp.draft_id = Some(candidates[i].id.clone());
        }
    }
}

/// Speculative decoding (inference): on or off, the drafter, and how many tokens it drafts at
/// what acceptance. The fit's decode speed follows (`core::speculative`).
fn speculative_rows(ui: &mut Ui, v: &mut View<'_>) {
    let s = &mut v.state.scenario;
    let notices = &mut v.data.notices;
    let mut on = s.speculative.is_some();
    if check(
        ui,
        "Speculative decoding",
        "A cheap drafter proposes tokens and the model checks them all in one pass: faster decode when most are accepted, for the drafter's memory",
        &mut on,
    ) {
        s.speculative = on.then(|| SpeculativeInputs {
            method: default_method(&s.model),
            ..SpeculativeInputs::default()
        });
    }
    let Some(sp) = s.speculative.as_mut() else {
        return;
    };
    let mut methods: Vec<SpecMethod> = SpecMethod::ALL
        .into_iter()
        .filter(|m| *m != SpecMethod::Mtp || s.model.mtp_layers > 0)
        .collect();
    if !methods.contains(&sp.method) {
        methods.push(sp.method);
    }
    if combo(
        ui,
        "Drafter",
        "Who drafts: a small model of the same tokenizer, an EAGLE-3 head trained for this model, or the model's own multi-token-prediction layers",
        &mut sp.method,
        &methods,
        |m| match m {
            SpecMethod::DraftModel => "Draft model".into(),
            SpecMethod::Eagle3 => "EAGLE-3 head".into(),
            SpecMethod::Mtp => "MTP layers".into(),
        },
    ) {
        // The new drafter's own defaults.
        sp.tokens = 0;
        sp.acceptance = None;
        sp.draft_weights = None;
    }
    if sp.method == SpecMethod::DraftModel {
        draft_model_row(ui, &v.data.catalog, &s.model, s.model_id.as_deref(), sp);
    }
    let mut tokens = sp.tokens();
    if slider_u64_typed(
        ui,
        notices,
        "Draft tokens",
        "Tokens drafted per step (llama.cpp --draft-max, vLLM num_speculative_tokens)",
        &mut tokens,
        (1..=16, 1..=MAX_DRAFT_TOKENS),
        false,
        Step::Plain,
    ) {
        sp.tokens = tokens;
    }
    let (_, why) = sp.method.default_acceptance();
    let mut a = sp.acceptance();
    if slider_f64(
        ui,
        "Acceptance",
        &format!("Share of drafted tokens the model accepts, per token. Default: {why}"),
        &mut a,
        0.0..=0.99,
        false,
        2,
        "",
    ) {
        sp.acceptance = Some(a);
    }
    match draft_spec(&s.model, sp) {
        Ok(_) => hint(
            ui,
            format!(
                "Speculative decoding: each check of the model yields {} tokens on average ({} drafted at {} acceptance).",
                format::sig3(tokens_per_step(sp.acceptance(), sp.tokens())),
                sp.tokens(),
                format::fraction(sp.acceptance())
            ),
        ),
        Err(e) => warn(ui, format!("Speculative decoding is left out: {e}.")),
    }
}

/// The KV allocation of an inference (contiguous or paged), with what it means.
fn kv_allocation_row(ui: &mut Ui, s: &mut Scenario) {
    combo(
        ui,
        "KV allocation",
        "Contiguous reserves the full context per sequence; PagedAttention (vLLM) allocates 16-token blocks on demand",
        &mut s.kv_allocation,
        &[KvAllocation::Contiguous, KvAllocation::Paged],
        |k| match k {
            KvAllocation::Contiguous => "Contiguous".into(),
            KvAllocation::Paged => "PagedAttention".into(),
        },
    );
    hint(
        ui,
        match s.kv_allocation {
            KvAllocation::Contiguous => {
                "KV allocation: memory for every sequence's whole context is set aside up front, used or not."
            }
            KvAllocation::Paged => {
                "KV allocation: memory is handed out in small blocks as sequences grow, so short chats leave room for more of them."
            }
        },
    );
}

/// The techniques of a training run: checkpointing, optimiser, framework, LoRA, pure BF16, ZeRO
/// and CPU offload.
fn training_techniques(ui: &mut Ui, s: &mut Scenario, notices: &mut Notices) {
    combo(
        ui,
        "Checkpointing",
        "Gradient checkpointing: recompute activations in the backward pass instead of storing them (about +33 % compute for full)",
        &mut s.checkpointing,
        &Checkpointing::ALL,
        |c| match c {
            Checkpointing::None => "None".into(),
            Checkpointing::Selective => "Selective".into(),
            Checkpointing::Full => "Full".into(),
        },
    );
    combo(
        ui,
        "Optimizer",
        "Optimizer states per trainable parameter",
        &mut s.optimizer,
        &Optimizer::ALL,
        |o| o.label().into(),
    );
    combo(
        ui,
        "Framework",
        "Training framework: decides the loss path, 4-bit activation handling, sharding buffers and allocator settings (docs/memory.md)",
        &mut s.framework,
        &Framework::ALL,
        |f| f.label().into(),
    );
    if matches!(s.mode, Mode::Lora | Mode::Qlora) {
        slider_u64(
            ui,
            notices,
            "LoRA rank",
            "Rank r of the adapters: r x (d_in + d_out) trainable parameters per adapted matrix",
            &mut s.lora_rank,
            1..=1024,
            true,
            Step::PowerOfTwo,
        );
        combo(
            ui,
            "LoRA targets",
            "Which matrices get adapters",
            &mut s.lora_targets,
            &LoraTargets::ALL,
            |t| match t {
                LoraTargets::QV => "q, v".into(),
                LoraTargets::Attention => "Attention (q, k, v, o)".into(),
                LoraTargets::AllLinear => "All linear layers".into(),
            },
        );
    }
    if s.mode == Mode::Full {
        check(
            ui,
            "Pure BF16",
            "Train BF16 weights and states without an FP32 master copy",
            &mut s.pure_bf16,
        );
    }
    combo(
        ui,
        "ZeRO stage",
        "DeepSpeed ZeRO: shard optimizer states (1), + gradients (2), + weights (3) over the GPUs set below",
        &mut s.zero,
        &[0u8, 1, 2, 3],
        |z| match z {
            0 => "0 (off)".into(),
            1 => "1 (optimizer states)".into(),
            2 => "2 (+ gradients)".into(),
            _ => "3 (+ weights)".into(),
        },
    );
    combo(
        ui,
        "CPU offload",
        "ZeRO-Offload: keep optimizer states (and with ZeRO-3 the weights) in CPU RAM",
        &mut s.offload,
        &Offload::ALL,
        |o| match o {
            Offload::None => "None".into(),
            Offload::Optimizer => "Optimizer states".into(),
            Offload::OptimizerParams => "Optimizer + weights".into(),
        },
    );
}

fn runtime_section(ui: &mut Ui, v: &mut View<'_>) {
    let st = &mut *v.state;
    let s = &mut st.scenario;
    let mut runtime = s.runtime;
    if combo(
        ui,
        "Runtime",
        "The runtime's memory habits: buffers, reserve, KV padding",
        &mut runtime,
        &Runtime::ALL,
        |r| r.label().into(),
    ) {
        // The runtime brings its KV allocation (vLLM: PagedAttention), as on the command line.
        s.set_runtime(runtime, false);
    }
    if s.runtime == Runtime::Vllm {
        slider_f64(
            ui,
            "GPU memory use",
            "vLLM --gpu-memory-utilization: the share of VRAM vLLM takes",
            &mut s.gpu_memory_utilization,
            0.05..=1.0,
            false,
            2,
            "",
        );
    }
    let mut custom = s.overhead_override.is_some();
    if check(
        ui,
        "Set runtime overhead",
        "Replace the runtime profile's reserve (CUDA context, allocator slack) with your own figure",
        &mut custom,
    ) {
        s.overhead_override = if custom { Some(Bytes::mib(512)) } else { None };
    }
    if let Some(o) = s.overhead_override {
        let mut g = o.as_gib();
        if slider_f64(
            ui,
            "Overhead",
            "Runtime reserve per GPU, GiB",
            &mut g,
            0.0..=64.0,
            false,
            2,
            " GiB",
        ) {
            s.overhead_override = Some(Bytes::from_gib_f64(g.max(0.0)));
        }
    }
    combo(
        ui,
        "Offload style",
        "How layers that do not fit in VRAM run",
        &mut st.split_style,
        &[SplitStyle::CpuLayers, SplitStyle::Streaming],
        |st| match st {
            SplitStyle::CpuLayers => "CPU layers (llama.cpp)".into(),
            SplitStyle::Streaming => "Stream over PCIe".into(),
        },
    );
    hint(
        ui,
        match st.split_style {
            SplitStyle::CpuLayers => {
                "Offload style: layers that do not fit on the GPU stay in RAM and the CPU computes them."
            }
            SplitStyle::Streaming => {
                "Offload style: layers that do not fit are copied to the GPU over PCIe for every token, so the link sets the pace."
            }
        },
    );
    if s.mode == Mode::Inference && s.runtime != Runtime::Vllm {
        launch_rows(ui, s, &mut v.data.notices);
    }
    slider_f64(
        ui,
        "Electricity",
        "Price of electricity for owned machines, USD per kWh",
        &mut st.electricity_usd_per_kwh,
        0.0..=1.0,
        false,
        3,
        " $/kWh",
    );
}

/// Your own llama.cpp split (`-ngl N`, `--n-cpu-moe N`): the fit then answers for that split on
/// every machine instead of searching for the fastest one that fits.
fn launch_rows(ui: &mut Ui, s: &mut Scenario, notices: &mut Notices) {
    let layers = s.model.layers.max(1);
    let mut ngl = s.launch.gpu_layers.is_some();
    if check(
        ui,
        "Set GPU layers (-ngl)",
        "llama.cpp -ngl N: N whole layers on the GPU(s), the rest on the CPU; each machine runs this split",
        &mut ngl,
    ) {
        s.launch.gpu_layers = ngl.then_some(layers);
        if ngl {
            s.launch.n_cpu_moe = None;
        }
    }
    if let Some(mut n) = s.launch.gpu_layers
        && slider_u64(
            ui,
            notices,
            "GPU layers",
            "Layers on the GPU(s) (llama.cpp -ngl); the model has this many",
            &mut n,
            0..=layers,
            false,
            Step::Plain,
        )
    {
        s.launch.gpu_layers = Some(n.min(layers));
    }
    if s.model.moe.is_some() {
        let mut cpu_moe = s.launch.n_cpu_moe.is_some();
        if check(
            ui,
            "Set experts in RAM (--n-cpu-moe)",
            "llama.cpp -ngl 99 --n-cpu-moe N: every layer on the GPU but the routed experts of the first N layers, which stay in RAM",
            &mut cpu_moe,
        ) {
            s.launch.n_cpu_moe = cpu_moe.then_some(0);
            if cpu_moe {
                s.launch.gpu_layers = None;
            }
        }
        if let Some(mut n) = s.launch.n_cpu_moe
            && slider_u64(
                ui,
                notices,
                "CPU-MoE layers",
                "Layers whose routed experts stay in RAM (llama.cpp --n-cpu-moe)",
                &mut n,
                0..=layers,
                false,
                Step::Plain,
            )
        {
            s.launch.n_cpu_moe = Some(n.min(layers));
        }
    }
    if s.launch.gpu_layers.is_some() || s.launch.n_cpu_moe.is_some() {
        hint(
            ui,
            "Your split: every machine runs the layers where you put them, and a machine says so when it does not fit that way.",
        );
    }
}

/// The Parameters row (`total`: the model's parameters): a typed field, and a slider of its own
/// below it. A change replaces the model by a generic one of that size.
fn parameters_row(ui: &mut Ui, v: &mut View<'_>, total: u64) {
    let mut b = total as f64 / 1e9;
    let (l, d) = ui
        .horizontal(|ui| {
            let l = row_label(
                ui,
                "Parameters",
                "Total parameters. Changing it replaces the model by a generic Llama-like shape of that size",
            );
            let speed = (b * 0.005).max(0.001);
            let d = value_field(
                ui,
                "Parameters",
                DragValue::new(&mut b)
                    .range(0.001..=10_000.0)
                    .speed(speed)
                    .custom_formatter(|x, _| format::params((x * 1e9).round() as u64))
                    .custom_parser(parse_params_billions)
                    .update_while_editing(false),
                &l,
            );
            (l, d)
        })
        .inner;
    let s = ui
        .horizontal(|ui| {
            ui.spacing_mut().slider_width = (ui.available_width() - 8.0).max(40.0);
            ui.add(
                Slider::new(&mut b, 0.1..=2000.0)
                    .clamping(egui::SliderClamping::Edits)
                    .logarithmic(true)
                    .smart_aim(true)
                    .show_value(false),
            )
            .labelled_by(l.id)
        })
        .inner;
    let changed = s.changed() || d.changed();
    if changed {
        let n = (b.clamp(0.001, 10_000.0) * 1e9).round() as u64;
        v.state.scenario.model = ModelSpec::generic(n);
        v.state.scenario.model_id = None;
        v.data.notices.imported = None;
    }
}

/// What the panel says under the model: its shape (estimated, or the real one with `pc`, its
/// parameters), the import's notes, and how to bring one's own model.
fn model_hints(ui: &mut Ui, v: &View<'_>, pc: &crate::core::model::ParamCount) {
    let spec = &v.state.scenario.model;
    if spec.is_estimated() {
        warn(
            ui,
            format!(
                "Shape estimated from the parameter count ({} layers, hidden {}, {} of {} heads for KV): the KV cache and activations are approximate. Pick a preset or import a config for exact numbers.",
                spec.layers, spec.hidden, spec.kv_heads, spec.heads
            ),
        );
    } else {
        let active = if spec.moe.is_some() {
            format!(", {} active per token", format::params(pc.active))
        } else {
            String::new()
        };
        hint(
            ui,
            format!(
                "{} parameters{active}; {} layers, {} KV heads x {}; max context {}",
                format::params(pc.total),
                spec.layers,
                spec.kv_heads,
                spec.head_dim,
                group_digits(spec.max_context)
            ),
        );
    }
    if let Some(imp) = &v.data.notices.imported {
        ui.add(egui::Label::new(RichText::new(&imp.0).size(11.0)).wrap());
        for n in &imp.1 {
            hint(ui, n.clone());
        }
    }
    hint(
        ui,
        "Your own model: Import model... (top bar) or drop a .gguf, .safetensors or config.json on the window.",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powers_of_two() {
        assert_eq!(pow2_step(8192, true), 16384);
        assert_eq!(pow2_step(8192, false), 4096);
        assert_eq!(pow2_step(5000, true), 8192);
        assert_eq!(pow2_step(5000, false), 4096);
        assert_eq!(pow2_step(1, false), 1);
    }

    #[test]
    fn typed_parameter_counts() {
        assert_eq!(parse_params_billions("8"), Some(8.0));
        assert_eq!(parse_params_billions("8.03B"), Some(8.03));
        assert_eq!(parse_params_billions("494M"), Some(0.494));
        assert_eq!(parse_params_billions("1.5T"), Some(1500.0));
        assert_eq!(parse_params_billions("4000000"), Some(0.004));
        assert_eq!(parse_params_billions("x"), None);
    }
}
