//! `--mode image`: `headroom estimate` and `headroom fit` for a diffusion pipeline
//! (`core::diffusion`), as tables or JSON.

use super::app::CliError;
use super::args::{EstimateArgs, FitArgs, ScenarioArgs};
use crate::core::catalog::Catalog;
use crate::core::diffusion::{
    ImageEstimate, ImageFit, ImageInputs, PipelineOffload, estimate, fit_all, presets,
};
use crate::core::format;
use crate::core::scenario::Mode;

/// Whether these options ask for image generation: `--mode image`, or a saved scenario
/// (`--scenario FILE`, as the window saves one) in image mode without another `--mode`.
pub fn asked(a: &ScenarioArgs) -> bool {
    match a.mode {
        Some(m) => m == Mode::Image,
        None => {
            a.scenario.is_some()
                && super::scenario::saved_or_default(a).is_ok_and(|s| s.mode == Mode::Image)
        }
    }
}

/// The image flags given without `--mode image`, or `--mode image` under a command that plans
/// text models: one line naming the flag.
pub fn refuse_elsewhere(a: &ScenarioArgs) -> Result<(), CliError> {
    if asked(a) {
        return Err(CliError::usage(
            "--mode image: this command plans text models; size an image pipeline with `headroom estimate`, `fit`, `report` or `recommend` --mode image",
        ));
    }
    let flag = [
        (a.resolution.is_some(), "--resolution"),
        (a.steps.is_some(), "--steps"),
        (a.images_per_batch.is_some(), "--images-per-batch"),
        (a.pipeline_offload.is_some(), "--pipeline-offload"),
        (a.vae_tiling, "--vae-tiling"),
        (a.image_runtime.is_some(), "--image-runtime"),
        (a.tf32, "--tf32"),
        (a.fp8_matmul, "--fp8-matmul"),
        (a.diffusers.is_some(), "--diffusers"),
    ]
    .into_iter()
    .find(|(given, _)| *given);
    match flag {
        Some((_, f)) => Err(CliError::usage(format!("{f} needs --mode image"))),
        None => Ok(()),
    }
}

/// The image scenario from the options.
pub fn inputs(a: &ScenarioArgs) -> Result<ImageInputs, CliError> {
    let others = [
        (a.config.is_some(), "--config"),
        (a.params.is_some(), "--params"),
        (a.gguf.is_some(), "--gguf"),
        (a.safetensors.is_some(), "--safetensors"),
        (a.hf.is_some(), "--hf"),
        (a.url.is_some(), "--url"),
        (a.command.is_some(), "--command"),
        (a.mmproj.is_some(), "--mmproj"),
    ];
    if let Some((_, f)) = others.into_iter().find(|(given, _)| *given) {
        return Err(CliError::usage(format!(
            "{f}: --mode image takes a pipeline preset with --model ({}) or a folder with --diffusers",
            presets::ids()
        )));
    }
    // A saved scenario's image settings first (its pipeline unless --model or --diffusers
    // names another), the folder's stored precision over them, the flags over both.
    let saved = match &a.scenario {
        Some(_) => Some(super::scenario::saved_or_default(a)?),
        None => None,
    };
    let (p, stored) = match &saved {
        Some(s) if a.model.is_none() && a.diffusers.is_none() => {
            let p = presets::find(&s.image.pipeline).ok_or_else(|| {
                CliError::input(format!(
                    "--scenario: image.pipeline {}: not an image pipeline; one of: {}",
                    s.image.pipeline,
                    presets::ids()
                ))
            })?;
            (p, None)
        }
        _ => pipeline(a)?,
    };
    let mut i = ImageInputs::new(p);
    if let Some(s) = &saved {
        let im = &s.image;
        (i.width, i.height, i.steps, i.images) = (im.width, im.height, im.steps, im.images);
        (i.offload, i.vae_tiling) = (im.offload, im.vae_tiling);
        (i.runtime_choice, i.tf32, i.fp8_matmul) = (im.runtime, im.tf32, im.fp8_matmul);
        i.weights = s.weights;
        i.memory_efficient_attention = s.flash_attention;
    }
    if let Some(w) = stored {
        i.weights = w;
    }
    if let Some((w, h)) = a.resolution {
        i.width = w;
        i.height = h;
    }
    if let Some(n) = a.steps {
        i.steps = n;
    }
    if let Some(n) = a.images_per_batch {
        i.images = n;
    }
    if let Some(w) = a.weights {
        i.weights = w;
    }
    if let Some(o) = a.pipeline_offload {
        i.offload = o;
    }
    if let Some(fa) = a.flash_attention {
        i.memory_efficient_attention = fa;
    }
    if a.vae_tiling {
        i.vae_tiling = true;
    }
    if let Some(r) = a.image_runtime {
        i.runtime_choice = Some(r);
    }
    if a.tf32 {
        i.tf32 = true;
    }
    if a.fp8_matmul {
        i.fp8_matmul = true;
    }
    if let Some(why) = i.problem() {
        return Err(CliError::usage(why));
    }
    Ok(i)
}

/// The pipeline of `--model` (a preset) or `--diffusers DIR` (a folder), with the folder's
/// stored precision (used when `--weights` is not given); its notes go to stderr.
fn pipeline(
    a: &ScenarioArgs,
) -> Result<
    (
        crate::core::diffusion::Pipeline,
        Option<crate::core::precision::WeightPrecision>,
    ),
    CliError,
> {
    if let Some(dir) = &a.diffusers {
        let f = crate::io::import::diffusers::read_folder(dir)
            .map_err(|e| CliError::usage(format!("--diffusers: {e}")))?;
        for n in &f.notes {
            eprintln!("headroom: {n}");
        }
        return Ok((f.pipeline, f.stored));
    }
    let id = a.model.as_deref().ok_or_else(|| {
        CliError::usage(format!(
            "--mode image needs --model (one of: {}) or --diffusers DIR",
            presets::ids()
        ))
    })?;
    let p = presets::find(id).ok_or_else(|| {
        CliError::usage(format!(
            "--model {id}: not an image pipeline; one of: {}",
            presets::ids()
        ))
    })?;
    Ok((p, None))
}

/// `headroom estimate --mode image`.
pub fn run_estimate(a: &EstimateArgs) -> Result<String, CliError> {
    let i = inputs(&a.scenario)?;
    if let Some(p) = &a.save_scenario {
        save_scenario(p, &a.scenario, &i)?;
    }
    // Sized as asked; `auto` is sized with everything on the GPU (the fit picks per machine).
    let e = estimate(&i, sized_placement(&i));
    if a.json {
        Ok(super::app::json_text(
            &crate::io::json::image_estimate_json(&i, &e),
        ))
    } else {
        Ok(estimate_table(&i, &e))
    }
}

/// `--save-scenario` in image mode: the scenario the flags describe (a saved one's other
/// settings kept), in image mode with these inputs, as the window saves it. A pipeline read from
/// a `--diffusers` folder is not a preset a scenario file can name: refused, nothing written.
fn save_scenario(
    path: &std::path::Path,
    a: &ScenarioArgs,
    i: &ImageInputs,
) -> Result<(), CliError> {
    if presets::find(&i.pipeline.id).is_none() {
        return Err(CliError::usage(format!(
            "--save-scenario: the pipeline read from --diffusers ({}) is not a preset a scenario file can name; save with --model {}",
            i.pipeline.id,
            presets::ids()
        )));
    }
    let base = match &a.scenario {
        Some(_) => super::scenario::saved_or_default(a)?,
        None => crate::core::scenario::Scenario::default(),
    };
    let s = crate::core::scenario::Scenario {
        mode: crate::core::scenario::Mode::Image,
        weights: i.weights,
        flash_attention: i.memory_efficient_attention,
        image: i.settings(),
        ..base
    };
    crate::io::export::write_scenario(path, &s)
        .map_err(|e| CliError::output(format!("--save-scenario: {e}")))
}

/// The heading line of an image scenario.
fn heading(i: &ImageInputs) -> String {
    format!(
        "{} ({}): {}×{}, {} steps, {} per call, weights {}, {}{}",
        i.pipeline.name,
        i.pipeline.id,
        i.width,
        i.height,
        i.steps,
        format::count(i.images as u64, "image", "images"),
        i.weights.label(),
        i.runtime().label(),
        if i.pipeline.cfg {
            ", classifier-free guidance (2 samples per image each step)"
        } else {
            ""
        }
    )
}

/// The readable table of `headroom estimate --mode image`.
pub fn estimate_table(i: &ImageInputs, e: &ImageEstimate) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(o, "{}", heading(i));
    let _ = writeln!(o, "placement: {}", e.placement.label());
    let _ = writeln!(o);
    let w = e
        .parts
        .iter()
        .map(|p| p.name.chars().count())
        .max()
        .unwrap_or(9)
        .max(9);
    let _ = writeln!(
        o,
        "{:<w$}  {:>15}  {:>10}  {:<4}  how",
        "component", "params", "size", "on"
    );
    for p in &e.parts {
        let _ = writeln!(
            o,
            "{:<w$}  {:>15}  {:>10}  {:<4}  {}",
            p.name,
            if p.params > 0 {
                format::group_digits(p.params)
            } else {
                String::new()
            },
            format::bytes(p.bytes),
            if p.resident_on_gpu { "GPU" } else { "RAM" },
            p.how
        );
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "weights {} · GPU peak {} · RAM for offloaded weights {} · moved over the host link per call {}",
        format::bytes(e.weights),
        format::bytes(e.gpu_peak),
        format::bytes(e.host),
        format::bytes(e.transfer_per_call)
    );
    let _ = writeln!(
        o,
        "denoiser: {} TFLOP per sample per step; VAE decode {} TFLOP per image (`headroom fit --mode image` for seconds per image)",
        format::sig3(e.denoiser.flops / 1e12),
        format::sig3(e.decoder.flops / 1e12)
    );
    o
}

/// `headroom fit --mode image`.
pub fn run_fit(a: &FitArgs, cat: &mut Catalog) -> Result<String, CliError> {
    super::scenario::refuse_gpus(&a.scenario, "fit")?;
    let i = inputs(&a.scenario)?;
    let machines = a.select.machines(cat)?;
    let st = super::scenario::fit_settings(&a.scenario, a.rows.electricity);
    let refs: Vec<_> = machines.iter().collect();
    let mut rs = fit_all(&i, &refs, cat, &st);
    if a.fits_only {
        rs.retain(|r| r.verdict.runs());
    }
    if a.rows.json {
        let v: Vec<_> = rs
            .iter()
            .map(|r| crate::io::json::image_fit_json(&i, r))
            .collect();
        Ok(super::app::json_text(&v))
    } else {
        let mut o = heading(&i);
        o.push('\n');
        o.push_str(&fit_table(&rs));
        Ok(o)
    }
}

/// The readable table of `headroom fit --mode image`.
pub fn fit_table(rs: &[ImageFit]) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let w = rs
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(7)
        .max(7);
    let _ = writeln!(
        o,
        "{:<w$}  {:<27}  {:>21}  {:>9}  {:>9}  {:>11}",
        "machine", "verdict", "GPU needs / has", "s/image", "images/h", "$/1000 img"
    );
    for r in rs {
        let (per, hour) = format::image_rates(r);
        let _ = writeln!(
            o,
            "{:<w$}  {:<27}  {:>21}  {:>9}  {:>9}  {:>11}",
            r.name,
            r.verdict.label(),
            format::image_gpu_use(r),
            per,
            hour,
            format::usd(r.usd_per_1000_images)
        );
    }
    o
}

/// The image scenario's fit over the whole catalog and its picks under `k`.
fn catalog_picks(
    i: &ImageInputs,
    cat: &Catalog,
    st: &crate::core::fit::FitSettings,
    k: &crate::core::recommend::Constraints,
) -> Vec<crate::core::diffusion::picks::ImageGroupPicks> {
    let all: Vec<_> = cat.machines.iter().collect();
    let fits = fit_all(i, &all, cat, st);
    crate::core::diffusion::picks::picks(&fits, &all, cat, k)
}

/// `headroom report --mode image`: the components, the picks and the listed machines (the
/// picks' machines when none are named).
pub fn run_report(a: &super::args::ReportArgs, cat: &mut Catalog) -> Result<String, CliError> {
    use crate::io::export::{ImageReportInput, render_image};
    let format = super::report::format_for(a.format.as_deref(), &a.output)
        .map_err(|e| CliError::usage(format!("--output: {e}")))?;
    if a.output != "-" {
        crate::io::export::atomic::check_target(std::path::Path::new(&a.output))
            .map_err(|e| CliError::output(e.to_string()))?;
    }
    let i = inputs(&a.scenario)?;
    let st = super::scenario::fit_settings(&a.scenario, None);
    let picks = catalog_picks(&i, cat, &st, &Default::default());
    let machines = if a.select.machines.is_empty() && a.select.kind.is_none() {
        let mut ids: Vec<&str> = Vec::new();
        for p in picks.iter().flat_map(|g| &g.picks) {
            if !ids.contains(&&*p.machine) {
                ids.push(&p.machine);
            }
        }
        ids.iter()
            .filter_map(|id| cat.machine(id).cloned())
            .collect()
    } else {
        a.select.machines(cat)?
    };
    let refs: Vec<_> = machines.iter().collect();
    let fits = fit_all(&i, &refs, cat, &st);
    let e = estimate(&i, sized_placement(&i));
    let input = ImageReportInput {
        inputs: &i,
        estimate: &e,
        fits: &fits,
        picks: &picks,
        generated: crate::io::clock::today_utc(),
        version: env!("CARGO_PKG_VERSION"),
    };
    let text = render_image(&input, format);
    if a.output == "-" {
        return Ok(text);
    }
    crate::io::export::write_atomic(std::path::Path::new(&a.output), text.as_bytes())
        .map_err(|e| CliError::output(e.to_string()))?;
    eprintln!(
        "headroom: Wrote the {} report to {} ({} bytes).",
        format.label(),
        a.output,
        text.len()
    );
    Ok(String::new())
}

/// The placement `estimate` and `report` size: the asked one, everything on the GPU for `auto`
/// (the fit picks per machine).
fn sized_placement(i: &ImageInputs) -> PipelineOffload {
    match i.offload {
        PipelineOffload::Auto => PipelineOffload::None,
        p => p,
    }
}

/// `headroom recommend --mode image`: the cheapest and fastest machine per group.
pub fn run_recommend(
    a: &super::recommend::RecommendArgs,
    cat: &mut Catalog,
) -> Result<String, CliError> {
    let refused = [
        (a.min_tokens_per_s.is_some(), "--min-tokens-per-s"),
        (a.min_context.is_some(), "--min-context"),
        (a.max_kld.is_some(), "--max-kld"),
    ];
    if let Some((_, f)) = refused.into_iter().find(|(given, _)| *given) {
        return Err(CliError::usage(format!(
            "{f}: a text-model constraint; --mode image takes --budget, --max-usd-per-hour and --kind"
        )));
    }
    let i = inputs(&a.scenario)?;
    let st = super::scenario::fit_settings(&a.scenario, a.electricity);
    let picks = catalog_picks(&i, cat, &st, &a.constraints());
    if a.json {
        return Ok(super::app::json_text(
            &crate::io::json::image_recommend_json(&i, &picks),
        ));
    }
    use std::fmt::Write;
    let mut o = heading(&i);
    o.push('\n');
    for g in &picks {
        let _ = writeln!(o, "\n{}", g.group.label());
        if g.picks.is_empty() {
            let _ = writeln!(o, "  nothing runs it on the GPU within the constraints");
        }
        for p in &g.picks {
            let _ = writeln!(
                o,
                "  {:<26} {} · {} · {} · {} per image · {} per 1000 images{}",
                p.role.label(g.group),
                p.name,
                p.price,
                p.verdict.label(),
                format::duration(p.seconds_per_image),
                format::usd(p.usd_per_1000_images),
                if p.pipelines > 1 {
                    format!(" · {}", format::count(p.pipelines, "pipeline", "pipelines"))
                } else {
                    String::new()
                }
            );
        }
    }
    Ok(o)
}
