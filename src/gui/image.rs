//! Image generation in the window (`Mode::Image`): the inputs that matter for a diffusion
//! pipeline (preset, precision, resolution, steps, images per call, offload, VAE tiling,
//! memory-efficient attention), the picks as cards, the components and their placement on the
//! Breakdown tab, each machine's verdict, seconds per image and $ per 1000 images on the
//! Machines tab, and what offload costs per image on the CPU vs GPU tab. Every number comes from
//! `core::diffusion` (cached in [`super::derived::ImageDerived`]) and is written by
//! `core::format`.

use super::data::View;
use super::derived::ImageDerived;
use super::inputs::{Step, check, combo, row_label, slider_f64, slider_u64_typed};
use super::state::Tab;
use super::style::{self, empty_state, hint, warn};
use crate::core::catalog::Machine;
use crate::core::diffusion::picks::{ImageGroupPicks, picks};
use crate::core::diffusion::{
    IMAGE_WEIGHTS, ImageEstimate, ImageFit, ImageRuntime, ImageSettings, ImageVerdict, PartKind,
    PipelineOffload, placement_costs, presets,
};
use crate::core::estimate::ComponentKind;
use crate::core::fit::Verdict;
use crate::core::format;
use egui::{Align, Layout, RichText, Ui};
use egui_extras::{Column, TableBuilder};

/// The badge colour of an image verdict (the text verdicts' colours: on the GPU, with offload,
/// on the CPU, nowhere).
fn verdict_color(v: ImageVerdict) -> egui::Color32 {
    style::verdict_color(match v {
        ImageVerdict::Gpu(PipelineOffload::Auto | PipelineOffload::None) => Verdict::Gpu,
        ImageVerdict::Gpu(_) => Verdict::Offload,
        ImageVerdict::Cpu => Verdict::Cpu,
        ImageVerdict::DoesNotFit => Verdict::None,
    })
}

/// The colour of a component, as the text breakdown colours its kinds.
fn part_color(k: PartKind) -> egui::Color32 {
    style::component_color(match k {
        PartKind::Denoiser | PartKind::TextEncoder | PartKind::Vae => ComponentKind::Weights,
        PartKind::DenoiserActivations | PartKind::TextActivations | PartKind::VaeDecode => {
            ComponentKind::Activations
        }
        PartKind::Overhead => ComponentKind::Overhead,
    })
}

// ---- Inputs ----

/// The left panel's sections in image mode.
pub(super) fn input_sections(ui: &mut Ui, v: &mut View<'_>) {
    egui::CollapsingHeader::new(RichText::new("Pipeline").strong())
        .default_open(true)
        .show(ui, |ui| pipeline_rows(ui, v));
    egui::CollapsingHeader::new(RichText::new("Workload").strong())
        .default_open(true)
        .show(ui, |ui| workload_rows(ui, v));
    egui::CollapsingHeader::new(RichText::new("Techniques").strong())
        .default_open(true)
        .show(ui, |ui| technique_rows(ui, v));
    egui::CollapsingHeader::new(RichText::new("Costs").strong())
        .default_open(true)
        .show(ui, |ui| {
            slider_f64(
                ui,
                "Electricity",
                "Price of electricity for owned machines, USD per kWh",
                &mut v.state.electricity_usd_per_kwh,
                0.0..=1.0,
                false,
                3,
                " $/kWh",
            );
        });
    if let Some(Err(why)) = v.data.derived.image.as_ref().map(|d| &d.inputs) {
        warn(ui, format!("Cannot size this pipeline: {why}"));
    }
}

/// The pipeline preset and the weight precision.
fn pipeline_rows(ui: &mut Ui, v: &mut View<'_>) {
    let all = presets::all();
    let s = &mut v.state.scenario;
    let mut idx = all
        .iter()
        .position(|p| p.id == s.image.pipeline)
        .unwrap_or(0);
    let options: Vec<usize> = (0..all.len()).collect();
    if combo(
        ui,
        "Image pipeline",
        "The diffusion pipeline: its denoiser (UNet or DiT), text encoders and VAE, as published",
        &mut idx,
        &options,
        |i| all[i].name.to_string(),
    ) {
        // A new pipeline starts at its own resolution and steps; the rest is kept.
        let keep = s.image.clone();
        s.image = ImageSettings {
            images: keep.images,
            offload: keep.offload,
            vae_tiling: keep.vae_tiling,
            runtime: keep.runtime,
            tf32: keep.tf32,
            fp8_matmul: keep.fp8_matmul,
            ..ImageSettings::of(&all[idx])
        };
    }
    if combo(
        ui,
        "Weights",
        "Storage format of the denoiser and T5-XXL weights (the CLIP towers and the VAE stay 16-bit). A GGUF type means stable-diffusion.cpp; the others Diffusers",
        &mut s.weights,
        &IMAGE_WEIGHTS,
        |w| w.label().to_string(),
    ) {
        v.data.notices.weights_note = None;
    }
    if let Some(n) = &v.data.notices.weights_note {
        hint(ui, n.clone());
    }
    if let Some(Ok(i)) = v.data.derived.image.as_ref().map(|d| &d.inputs) {
        hint(
            ui,
            format!(
                "Runs in {}. {}",
                i.runtime().label(),
                if i.pipeline.cfg {
                    "Classifier-free guidance: 2 samples per image each step."
                } else {
                    "Guidance-distilled: 1 sample per image each step."
                }
            ),
        );
    }
}

/// A number input of the image workload: label, help, the value, the slider's and the typed
/// field's ranges, and how it steps.
type NumberRow<'a> = (
    &'static str,
    &'static str,
    &'a mut u32,
    (u64, u64),
    (u64, u64),
    Step,
);

/// Mode, resolution, steps and images per call.
fn workload_rows(ui: &mut Ui, v: &mut View<'_>) {
    let s = &mut v.state.scenario;
    let notices = &mut v.data.notices;
    super::inputs::mode_combo(ui, &mut s.mode);
    let grid = presets::find(&s.image.pipeline).map_or(8, |p| u64::from(p.size_multiple()));
    let im = &mut s.image;
    let mut rows: [NumberRow<'_>; 4] = [
        (
            "Width",
            "Image width in pixels (a multiple of the pipeline's latent grid)",
            &mut im.width,
            (256, 2048),
            (64, 8192),
            Step::Multiple(grid),
        ),
        (
            "Height",
            "Image height in pixels",
            &mut im.height,
            (256, 2048),
            (64, 8192),
            Step::Multiple(grid),
        ),
        (
            "Steps",
            "Denoising steps per image (num_inference_steps, sd.cpp --steps)",
            &mut im.steps,
            (1, 100),
            (1, 1000),
            Step::Plain,
        ),
        (
            "Images per batch",
            "Images per pipeline call (num_images_per_prompt, sd.cpp -b)",
            &mut im.images,
            (1, 16),
            (1, 64),
            Step::Plain,
        ),
    ];
    for (label, help, value, slider, typed, step) in rows.iter_mut() {
        let mut x = u64::from(**value);
        if slider_u64_typed(
            ui,
            notices,
            label,
            help,
            &mut x,
            (slider.0..=slider.1, typed.0..=typed.1),
            false,
            *step,
        ) {
            **value = u32::try_from(x).unwrap_or(u32::MAX);
        }
    }
}

/// Offload, VAE tiling and memory-efficient attention.
fn technique_rows(ui: &mut Ui, v: &mut View<'_>) {
    let s = &mut v.state.scenario;
    combo(
        ui,
        "Pipeline offload",
        "Where the components live while the pipeline runs; the fastest that fits picks per machine",
        &mut s.image.offload,
        &PipelineOffload::ALL,
        |o| o.label().to_string(),
    );
    let runtimes: [Option<ImageRuntime>; 6] = [
        None,
        Some(ImageRuntime::Diffusers),
        Some(ImageRuntime::Compiled),
        Some(ImageRuntime::TensorRt),
        Some(ImageRuntime::StableDiffusionCpp),
        Some(ImageRuntime::CoreMl),
    ];
    combo(
        ui,
        "Image runtime",
        "Which kernels a step runs: eager Diffusers launches every operation from Python; torch.compile and TensorRT fuse the element-wise work and replay CUDA graphs; stable-diffusion.cpp runs GGUF weights; Core ML runs on Apple GPUs",
        &mut s.image.runtime,
        &runtimes,
        |r| match r {
            None => "from the weights (GGUF: stable-diffusion.cpp)".to_string(),
            Some(r) => r.label().to_string(),
        },
    );
    check(
        ui,
        "TF32 matmuls",
        "FP32 runs: matmuls in TF32 (torch.backends.cuda.matmul.allow_tf32); PyTorch's default multiplies them at the FP32 vector rate",
        &mut s.image.tf32,
    );
    check(
        ui,
        "FP8 matmuls",
        "FP8 weights multiply on FP8 tensor cores (torch._scaled_mm) instead of being cast to 16 bits before each layer",
        &mut s.image.fp8_matmul,
    );
    check(
        ui,
        "VAE tiling",
        "Decode the latent tile by tile (Diffusers enable_vae_tiling, sd.cpp --vae-tiling)",
        &mut s.image.vae_tiling,
    );
    check(
        ui,
        "Memory-efficient attention",
        "PyTorch SDPA / FlashAttention, sd.cpp --diffusion-fa: no attention score matrices in memory",
        &mut s.flash_attention,
    );
}

// ---- The central area ----

/// The cards, the summary and the tab's content in image mode.
pub(super) fn central(ui: &mut Ui, v: &mut View<'_>) {
    let Some(d) = v.data.derived.image.clone() else {
        return;
    };
    let (Ok(i), Some(e)) = (&d.inputs, &d.estimate) else {
        let why = d.inputs.as_ref().err().cloned().unwrap_or_default();
        empty_state(ui, "This pipeline cannot be sized", &why);
        return;
    };
    cards(ui, v, &d);
    summary(ui, v, &d, e);
    ui.add_space(4.0);
    match v.state.tab {
        Tab::Breakdown => breakdown(ui, v, &d, e),
        Tab::Machines => machines(ui, v, &d),
        Tab::CpuVsGpu => offload_costs(ui, v, i),
        Tab::Report => report(ui, v),
        Tab::Serving | Tab::Cluster => empty_state(
            ui,
            "Text models only",
            "Serving many users and clusters plan text models. An image pipeline runs one per GPU: the Machines tab counts every GPU of a machine, and the Report tab writes the whole answer.",
        ),
    }
}

/// One card per group: its cheapest and fastest machine on the GPU. A click ticks the machine,
/// focuses it and opens it in the Machines table.
fn cards(ui: &mut Ui, v: &mut View<'_>, d: &ImageDerived) {
    let ms: Vec<&Machine> = v.data.machines.iter().collect();
    let groups: Vec<ImageGroupPicks> = picks(&d.fits, &ms, &v.data.catalog, &v.state.constraints);
    ui.label(RichText::new("Which machine to buy or rent for this pipeline").strong());
    // The cards share the width as the text recommendations' do.
    let n = groups.len().max(1) as f32;
    let gap = ui.spacing().item_spacing.x;
    let frame = 2.0 * ui.spacing().window_margin.leftf() + 2.0;
    let w = ((ui.available_width() - 4.0) / n - gap - frame).clamp(150.0, 330.0);
    let mut open = None;
    egui::ScrollArea::horizontal()
        .id_salt("image-cards")
        .show(ui, |ui| {
            ui.horizontal_top(|ui| {
                for g in &groups {
                    let Some(p) = g.picks.first() else {
                        super::recommend::card(
                            ui,
                            w,
                            format!("{}: nothing runs it on the GPU", g.group.label()),
                            |ui| {
                                ui.label(RichText::new(g.group.label()).strong());
                                hint(ui, "Nothing in this group runs it on the GPU.");
                            },
                        );
                        continue;
                    };
                    let label = format!("{}: {}", g.group.label(), p.name);
                    let r = super::recommend::card(ui, w, label, |ui| {
                        ui.label(RichText::new(g.group.label()).strong());
                        for p in &g.picks {
                            ui.label(RichText::new(p.role.label(g.group)).size(11.5).weak());
                            ui.add(egui::Label::new(&*p.name).truncate());
                            ui.horizontal(|ui| {
                                ui.spacing_mut().item_spacing.x = 4.0;
                                style::badge(ui, p.verdict.label(), verdict_color(p.verdict));
                                ui.label(
                                    RichText::new(format!(
                                        "{} per image",
                                        format::duration(p.seconds_per_image)
                                    ))
                                    .size(11.5),
                                );
                            });
                            ui.add(
                                egui::Label::new(
                                    RichText::new(format!(
                                        "{} per 1000 images · {}",
                                        format::usd(p.usd_per_1000_images),
                                        p.price
                                    ))
                                    .size(11.5),
                                )
                                .truncate(),
                            );
                        }
                    });
                    if r.clicked() {
                        open = Some(p.machine.to_string());
                    }
                }
            });
        });
    if let Some(id) = open {
        super::recommend::open_pick(v.state, v.data, &id);
    }
}

/// The pipeline's key numbers and this machine's answer.
fn summary(ui: &mut Ui, v: &View<'_>, d: &ImageDerived, e: &ImageEstimate) {
    let Ok(i) = &d.inputs else {
        return;
    };
    ui.horizontal_wrapped(|ui| {
        ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Extend);
        ui.label(RichText::new(&*i.pipeline.name).strong());
        ui.label(format!(
            "{}×{}, {} steps, {}",
            i.width,
            i.height,
            i.steps,
            format::count(u64::from(i.images), "image", "images")
        ));
        ui.separator();
        ui.label(format!("Weights: {}", format::bytes(e.weights)));
        ui.label(RichText::new(format!("GPU peak: {}", format::bytes(e.gpu_peak))).strong())
            .on_hover_text(e.placement.label());
        if e.host.0 > 0 {
            ui.label(format!("RAM: {}", format::bytes(e.host)));
        }
        if let Some(local) = v.data.local_id()
            && let Some(f) = d.fit(&local)
        {
            ui.separator();
            ui.label("This machine:");
            style::badge(ui, f.verdict.label(), verdict_color(f.verdict));
            if let Some(s) = &f.speed {
                ui.label(format!(
                    "{} per image",
                    format::duration(s.seconds_per_image)
                ));
            }
        }
    });
}

/// The components, where they live, and the compared machines' answers.
fn breakdown(ui: &mut Ui, v: &mut View<'_>, d: &ImageDerived, e: &ImageEstimate) {
    ui.label(RichText::new(format!("Placement: {}", e.placement.label())).strong());
    hint(
        ui,
        "Sized as asked (the fastest-that-fits choice is sized with everything on the GPU); each machine below gets the placement it needs.",
    );
    egui::ScrollArea::vertical()
        .id_salt("image-breakdown")
        .auto_shrink([false, false])
        .show(ui, |ui| {
            bar(ui, e);
            ui.add_space(6.0);
            egui::Grid::new("image-components")
                .striped(true)
                .num_columns(5)
                .show(ui, |ui| {
                    for h in ["Component", "Parameters", "Size", "Where", "How"] {
                        ui.label(RichText::new(h).strong());
                    }
                    ui.end_row();
                    for p in &e.parts {
                        ui.horizontal(|ui| {
                            let (r, _) = ui.allocate_exact_size(
                                egui::vec2(10.0, 10.0),
                                egui::Sense::hover(),
                            );
                            ui.painter().rect_filled(r, 2.0, part_color(p.kind));
                            ui.label(&p.name);
                        });
                        ui.label(if p.params > 0 {
                            format::params(p.params)
                        } else {
                            String::new()
                        });
                        ui.label(format::bytes(p.bytes));
                        ui.label(if p.resident_on_gpu { "GPU" } else { "RAM" });
                        ui.label(RichText::new(&p.how).weak());
                        ui.end_row();
                    }
                });
            ui.add_space(4.0);
            ui.label(format!(
                "Weights {} · GPU peak {} · RAM for offloaded weights {} · over the host link per call {}",
                format::bytes(e.weights),
                format::bytes(e.gpu_peak),
                format::bytes(e.host),
                format::bytes(e.transfer_per_call)
            ));
            ui.add_space(8.0);
            compared(ui, v, d);
        });
}

/// The GPU-resident parts as one stacked bar against the GPU peak.
fn bar(ui: &mut Ui, e: &ImageEstimate) {
    let w = ui.available_width().min(900.0);
    let (rect, _) = ui.allocate_exact_size(egui::vec2(w, 22.0), egui::Sense::hover());
    let total: u64 = e
        .parts
        .iter()
        .filter(|p| p.resident_on_gpu)
        .map(|p| p.bytes.0)
        .sum();
    if total == 0 {
        return;
    }
    let mut x = rect.left();
    for p in e.parts.iter().filter(|p| p.resident_on_gpu) {
        let pw = rect.width() * p.bytes.0 as f32 / total as f32;
        let r = egui::Rect::from_min_size(egui::pos2(x, rect.top()), egui::vec2(pw, 22.0));
        ui.painter()
            .rect_filled(r.shrink2(egui::vec2(0.5, 0.0)), 0.0, part_color(p.kind));
        x += pw;
    }
}

/// One line per compared machine: verdict, GPU needs / has, RAM, s/image, $/1000 images.
fn compared(ui: &mut Ui, v: &mut View<'_>, d: &ImageDerived) {
    let ids = v.data.compared_ids(v.state);
    if ids.is_empty() {
        hint(
            ui,
            "Tick machines on the Machines tab to compare them here.",
        );
        return;
    }
    ui.label(RichText::new("On the compared machines").strong());
    for id in ids {
        let Some(f) = d.fit(&id) else {
            continue;
        };
        ui.horizontal_wrapped(|ui| {
            ui.label(RichText::new(&*f.name).strong());
            style::badge(ui, f.verdict.label(), verdict_color(f.verdict));
            ui.label(fit_line(f));
        });
    }
}

/// "needs 23.4 GiB of 24.0 GiB on the GPU · 31.4 GiB RAM · 9.80 s per image · $0.52 per 1000
/// images · 2 pipelines".
fn fit_line(f: &ImageFit) -> String {
    let mut t = if f.verdict == ImageVerdict::Cpu {
        format!(
            "needs {} of {} RAM",
            format::bytes(f.ram_needed),
            format::bytes(f.ram_capacity)
        )
    } else {
        format!(
            "needs {} of {} on the GPU",
            format::bytes(f.gpu_needed),
            format::bytes(f.gpu_capacity)
        )
    };
    if f.verdict != ImageVerdict::Cpu && f.machine_ram_needed.0 > 0 {
        t.push_str(&format!(" · {} RAM", format::bytes(f.machine_ram_needed)));
    }
    if let Some(s) = &f.speed {
        t.push_str(&format!(
            " · {} per image · {} per 1000 images",
            format::duration(s.seconds_per_image),
            format::usd(f.usd_per_1000_images)
        ));
    }
    if f.pipelines > 1 {
        t.push_str(&format!(
            " · {}",
            format::count(f.pipelines, "pipeline", "pipelines")
        ));
    }
    t
}

/// The machines that pass the table's filters (kinds, search, fits only), fastest first.
fn shown(v: &View<'_>, d: &ImageDerived) -> Vec<usize> {
    let filter = &v.state.filter;
    let needle = filter.search.trim().to_lowercase();
    let mut idx: Vec<usize> = (0..d.fits.len())
        .filter(|&i| {
            let m = &v.data.machines[i];
            let kind_ok = filter.kinds.is_empty()
                || filter.kinds.iter().any(|&k| v.data.catalog.is_kind(m, k));
            let search_ok = needle.is_empty()
                || v.data
                    .search_keys
                    .get(i)
                    .is_some_and(|k| needle.split_whitespace().all(|w| k.contains(w)));
            kind_ok && search_ok && (!filter.fits_only || d.fits[i].verdict.runs())
        })
        .collect();
    let key = |i: &usize| {
        d.fits[*i]
            .speed
            .as_ref()
            .map_or(f64::INFINITY, |s| s.seconds_per_image)
    };
    idx.sort_by(|a, b| key(a).total_cmp(&key(b)).then(a.cmp(b)));
    idx
}

/// Below this width the image machine table drops its Pipelines column and narrows the others:
/// 22 + 230 + 140 + 160 + 3 × 76 + 70 px of columns and their spacing.
const NARROW_TABLE_PX: f32 = 900.0;

/// Every machine: its image verdict, GPU memory needed and held, seconds per image, images
/// per hour of the whole machine and $ per 1000 images; fastest first.
fn machines(ui: &mut Ui, v: &mut View<'_>, d: &ImageDerived) {
    ui.horizontal(|ui| {
        let l = row_label(ui, "Search", "Machine, GPU or CPU name");
        ui.add(egui::TextEdit::singleline(&mut v.state.filter.search).desired_width(200.0))
            .labelled_by(l.id);
        ui.checkbox(&mut v.state.filter.fits_only, "Fits only");
    });
    let rows = shown(v, d);
    if rows.is_empty() {
        empty_state(
            ui,
            "No machines to show",
            "Nothing passes the filters; clear the search or untick Fits only.",
        );
        return;
    }
    let mut toggles = Vec::new();
    // Narrower than every column needs (a 1024-px window): the Pipelines column goes (its count
    // is in images/h already) and the others take their narrow widths, so the answer columns
    // stay on screen without a sideways scroll.
    let narrow = ui.available_width() < NARROW_TABLE_PX;
    let (num_w, gpu_w, verdict_w) = if narrow {
        (64.0, 128.0, 128.0)
    } else {
        (76.0, 160.0, 140.0)
    };
    const HEADERS: [&str; 8] = [
        "",
        "Machine",
        "Verdict",
        "GPU needs / has",
        "s/image",
        "images/h",
        "$/1000 img",
        "Pipelines",
    ];
    let headers = if narrow { &HEADERS[..7] } else { &HEADERS[..] };
    let mut table = TableBuilder::new(ui)
        .id_salt(("image-machines", narrow))
        .striped(true)
        .resizable(true)
        .cell_layout(Layout::left_to_right(Align::Center))
        .column(Column::exact(22.0));
    table = if narrow {
        table.column(Column::remainder().at_least(110.0).clip(true))
    } else {
        table.column(Column::initial(230.0).at_least(120.0).clip(true))
    };
    table = table
        .column(Column::initial(verdict_w).at_least(80.0))
        .column(Column::initial(gpu_w).at_least(80.0))
        .columns(Column::initial(num_w).at_least(50.0), 3);
    if !narrow {
        table = table.column(Column::remainder().at_least(70.0).clip(true));
    }
    table
        .header(24.0, |mut h| {
            for t in headers {
                h.col(|ui| {
                    ui.label(RichText::new(*t).strong());
                });
            }
        })
        .body(|body| {
            body.rows(24.0, rows.len(), |mut row| {
                let f = &d.fits[rows[row.index()]];
                let on = v.state.is_selected(&f.machine);
                machine_row(&mut row, f, on, !narrow, &mut toggles);
            });
        });
    for (id, on) in toggles {
        v.state.set_selected(&id, on);
    }
}

/// One row of the image machine table.
fn machine_row(
    row: &mut egui_extras::TableRow<'_, '_>,
    f: &ImageFit,
    selected: bool,
    pipelines: bool,
    toggles: &mut Vec<(String, bool)>,
) {
    row.col(|ui| {
        let mut on = selected;
        if ui
            .add(egui::Checkbox::without_text(&mut on))
            .accessible_name(format!("Compare {}", f.name))
            .on_hover_text("Compare on the Breakdown tab")
            .changed()
        {
            toggles.push((f.machine.to_string(), on));
        }
    });
    row.col(|ui| {
        ui.add(egui::Label::new(&*f.name).truncate());
    });
    row.col(|ui| {
        style::badge(ui, f.verdict.label(), verdict_color(f.verdict));
    });
    row.col(|ui| {
        ui.label(format::image_gpu_use(f));
    });
    let (per, hour) = format::image_rates(f);
    row.col(|ui| {
        ui.label(per);
    });
    row.col(|ui| {
        ui.label(hour);
    });
    row.col(|ui| {
        ui.label(format::usd(f.usd_per_1000_images));
    });
    if !pipelines {
        return;
    }
    row.col(|ui| {
        ui.label(if f.verdict.runs() {
            format::group_digits(f.pipelines)
        } else {
            String::new()
        });
    });
}

/// What offload costs per image on the machine in focus: each placement its runtime offers,
/// then the CPU, with the memory each needs and its time per image.
fn offload_costs(ui: &mut Ui, v: &mut View<'_>, i: &crate::core::diffusion::ImageInputs) {
    let Some(m) = v.data.focus_machine(v.state).cloned() else {
        empty_state(
            ui,
            "No machine",
            "Tick a machine with a GPU to see its placements.",
        );
        return;
    };
    let costs = placement_costs(i, &m, &v.data.catalog, &v.state.fit_settings());
    ui.label(RichText::new(format!("What offload costs per image on {}", m.name)).strong());
    hint(
        ui,
        "Each placement moves more of the pipeline off the GPU: less GPU memory, more time per image (weights cross the host link once per call under model offload, the denoiser every step under sequential offload; the CPU computes everything on the CPU path).",
    );
    ui.add_space(4.0);
    let fastest = costs
        .iter()
        .filter(|c| c.fits)
        .map(|c| c.speed.seconds_per_image)
        .fold(f64::INFINITY, f64::min);
    egui::Grid::new("image-placements")
        .striped(true)
        .num_columns(6)
        .show(ui, |ui| {
            for h in [
                "Placement",
                "GPU",
                "RAM",
                "Fits",
                "s/image",
                "vs the fastest that fits",
            ] {
                ui.label(RichText::new(h).strong());
            }
            ui.end_row();
            for c in &costs {
                style::badge(ui, c.verdict.label(), verdict_color(c.verdict));
                ui.label(format::bytes(c.gpu_needed));
                ui.label(format::bytes(c.ram_needed));
                ui.label(if c.fits { "yes" } else { "no" });
                ui.label(format::duration(c.speed.seconds_per_image));
                ui.label(if fastest.is_finite() && c.fits {
                    format!("{}×", format::sig3(c.speed.seconds_per_image / fastest))
                } else {
                    format::MISSING.to_string()
                });
                ui.end_row();
            }
        });
}

// ---- The report ----

/// What an image report shows, owned (the export renders it on a job thread): the compared
/// machines' fits and the picks over the whole catalog.
#[derive(Clone)]
pub(crate) struct ImageReportOwned {
    inputs: crate::core::diffusion::ImageInputs,
    estimate: ImageEstimate,
    fits: Vec<ImageFit>,
    picks: Vec<ImageGroupPicks>,
}

impl ImageReportOwned {
    /// The report of the current image scenario (`None` outside image mode or when it cannot
    /// be sized).
    pub(crate) fn of(state: &super::state::State, data: &super::data::Data) -> Option<Self> {
        let d = data.derived.image.as_ref()?;
        let (Ok(i), Some(e)) = (&d.inputs, &d.estimate) else {
            return None;
        };
        let ms: Vec<&Machine> = data.machines.iter().collect();
        let fits = data
            .compared_ids(state)
            .iter()
            .filter_map(|id| d.fit(id).cloned())
            .collect();
        Some(ImageReportOwned {
            inputs: i.clone(),
            estimate: e.clone(),
            fits,
            picks: picks(&d.fits, &ms, &data.catalog, &state.constraints),
        })
    }

    pub(crate) fn render(&self, format: crate::io::export::ReportFormat) -> String {
        let input = crate::io::export::ImageReportInput {
            inputs: &self.inputs,
            estimate: &self.estimate,
            fits: &self.fits,
            picks: &self.picks,
            generated: crate::io::clock::now_utc(),
            version: env!("CARGO_PKG_VERSION"),
        };
        crate::io::export::render_image(&input, format)
    }
}

/// The Report tab in image mode: the Markdown report of the compared machines, to copy or
/// export.
fn report(ui: &mut Ui, v: &mut View<'_>) {
    let Some(r) = ImageReportOwned::of(v.state, v.data) else {
        return;
    };
    let text = r.render(crate::io::export::ReportFormat::Markdown);
    ui.horizontal(|ui| {
        if ui.button("Export report...").clicked() {
            v.cmds.push(super::command::Command::Dialog(
                super::jobs::FileAction::ExportReport,
            ));
        }
        if ui.button("Copy report").clicked() {
            v.cmds.push(super::command::Command::Copy(text.clone()));
        }
    });
    hint(
        ui,
        "The report lists this machine and the machines ticked in the Machines tab, with the picks over the whole catalog.",
    );
    let preview = text.replace(":\\/\\/", "://");
    egui::Frame::group(ui.style()).show(ui, |ui| {
        egui::ScrollArea::both()
            .id_salt("image-report-preview")
            .auto_shrink([false, false])
            .show(ui, |ui| {
                ui.add(
                    egui::Label::new(RichText::new(preview).monospace().size(12.0))
                        .selectable(true)
                        .extend(),
                );
            });
    });
}
