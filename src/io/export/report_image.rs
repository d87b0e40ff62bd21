//! The image-generation report (`headroom report --mode image`, the window's Report tab in
//! image mode): the pipeline, its components and their placement, the cheapest and fastest
//! machine per group, and each listed machine's verdict, seconds per image and $ per 1000
//! images — in Markdown, self-contained HTML or JSON. The content is assembled here as plain
//! rows (every number from `core::diffusion`, written by `core::format`); the Markdown and HTML
//! renderers escape them.

use super::ReportFormat;
use super::text::{gib_exact, html, md};
use crate::core::diffusion::picks::ImageGroupPicks;
use crate::core::diffusion::{ImageEstimate, ImageFit, ImageInputs};
use crate::core::format;
use serde_json::{Value, json};
use std::fmt::Write as _;

/// Everything an image report shows.
#[derive(Clone, Debug)]
pub struct ImageReportInput<'a> {
    pub inputs: &'a ImageInputs,
    /// The estimate at the asked placement (`auto`: everything on the GPU).
    pub estimate: &'a ImageEstimate,
    /// The listed machines, in the order to show them.
    pub fits: &'a [ImageFit],
    /// The picks over the whole catalog.
    pub picks: &'a [ImageGroupPicks],
    pub generated: String,
    pub version: &'a str,
}

impl ImageReportInput<'_> {
    /// "FLUX.1 [dev]: 1024×1024, 50 steps, BF16".
    pub fn title(&self) -> String {
        let i = self.inputs;
        format!(
            "{}: {}×{}, {} steps, {}",
            i.pipeline.name,
            i.width,
            i.height,
            i.steps,
            i.weights.label()
        )
    }
}

/// The scenario as (label, value) rows.
fn scenario_rows(i: &ImageInputs) -> Vec<(&'static str, String)> {
    vec![
        (
            "Pipeline",
            format!("{} ({})", i.pipeline.name, i.pipeline.id),
        ),
        ("Resolution", format!("{}×{}", i.width, i.height)),
        ("Steps", i.steps.to_string()),
        (
            "Images per call",
            format::count(u64::from(i.images), "image", "images"),
        ),
        ("Weights", i.weights.label().to_string()),
        ("Runtime", i.runtime().label().to_string()),
        (
            "Guidance",
            if i.pipeline.cfg {
                "classifier-free: 2 samples per image each step".to_string()
            } else {
                "distilled: 1 sample per image each step".to_string()
            },
        ),
        ("Pipeline offload", i.offload.label().to_string()),
        (
            "VAE tiling",
            if i.vae_tiling { "on" } else { "off" }.to_string(),
        ),
        (
            "Attention",
            if i.memory_efficient_attention {
                "memory-efficient (SDPA / FlashAttention)"
            } else {
                "scores stored"
            }
            .to_string(),
        ),
        ("Source", i.pipeline.source.to_string()),
    ]
}

const COMPONENT_COLUMNS: [&str; 5] = ["Component", "Parameters", "Size", "Where", "How"];

fn component_rows(e: &ImageEstimate) -> Vec<Vec<String>> {
    e.parts
        .iter()
        .map(|p| {
            vec![
                p.name.clone(),
                if p.params > 0 {
                    format::group_digits(p.params)
                } else {
                    String::new()
                },
                gib_exact(p.bytes),
                if p.resident_on_gpu { "GPU" } else { "RAM" }.to_string(),
                p.how.clone(),
            ]
        })
        .collect()
}

/// The totals under the component table.
fn totals_line(e: &ImageEstimate) -> String {
    format!(
        "Placement: {}. Weights {} · GPU peak {} · RAM for offloaded weights {} · over the host link per call {}.",
        e.placement.label(),
        format::bytes(e.weights),
        format::bytes(e.gpu_peak),
        format::bytes(e.host),
        format::bytes(e.transfer_per_call)
    )
}

const PICK_COLUMNS: [&str; 7] = [
    "Group",
    "Pick",
    "Machine",
    "Verdict",
    "s/image",
    "$/1000 images",
    "Price",
];

fn pick_rows(picks: &[ImageGroupPicks]) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for g in picks {
        if g.picks.is_empty() {
            rows.push(vec![
                g.group.label().to_string(),
                String::new(),
                "nothing runs it on the GPU".to_string(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ]);
        }
        for p in &g.picks {
            rows.push(vec![
                g.group.label().to_string(),
                p.role.label(g.group).to_string(),
                p.name.to_string(),
                p.verdict.label().to_string(),
                format::duration(p.seconds_per_image),
                format::usd(p.usd_per_1000_images),
                p.price.to_string(),
            ]);
        }
    }
    rows
}

const FIT_COLUMNS: [&str; 8] = [
    "Machine",
    "Verdict",
    "GPU needs / has",
    "RAM needs / has",
    "s/image",
    "images/h",
    "$/1000 images",
    "Pipelines",
];

fn fit_rows(fits: &[ImageFit]) -> Vec<Vec<String>> {
    fits.iter()
        .map(|f| {
            let (per, hour) = format::image_rates(f);
            vec![
                f.name.to_string(),
                f.verdict.label().to_string(),
                format::image_gpu_use(f),
                format::bytes_of(f.machine_ram_needed, f.ram_capacity),
                per,
                hour,
                format::usd(f.usd_per_1000_images),
                if f.verdict.runs() {
                    format::group_digits(f.pipelines)
                } else {
                    String::new()
                },
            ]
        })
        .collect()
}

/// The image report in `format`.
pub fn render_image(input: &ImageReportInput, format: ReportFormat) -> String {
    match format {
        ReportFormat::Markdown => markdown(input),
        ReportFormat::Html => html_report(input),
        ReportFormat::Json => {
            let mut s = serde_json::to_string_pretty(&image_report_json(input))
                .unwrap_or_else(|_| "{}".into());
            s.push('\n');
            s
        }
    }
}

/// The JSON report: the `estimate --mode image --json` object, plus `"recommendations"` (the
/// `recommend --mode image --json` shape), `"fits"` (the `fit --mode image --json` shape each),
/// `"generated"` and `"version"`.
pub fn image_report_json(input: &ImageReportInput) -> Value {
    use crate::io::json::{image_estimate_json, image_fit_json, image_recommend_json};
    let mut v = image_estimate_json(input.inputs, input.estimate);
    v["recommendations"] = image_recommend_json(input.inputs, input.picks);
    v["fits"] = Value::Array(
        input
            .fits
            .iter()
            .map(|f| image_fit_json(input.inputs, f))
            .collect(),
    );
    v["generated"] = json!(input.generated);
    v["version"] = json!(input.version);
    v
}

/// Escapes every cell of `rows` for Markdown.
fn md_rows(rows: Vec<Vec<String>>) -> Vec<Vec<String>> {
    rows.into_iter()
        .map(|r| r.iter().map(|c| md(c)).collect())
        .collect()
}

fn markdown(input: &ImageReportInput) -> String {
    use super::markdown::table;
    let mut o = String::new();
    let _ = writeln!(o, "# Image generation report: {}\n", md(&input.title()));
    let _ = writeln!(
        o,
        "Generated {} by headroom {}. Memory in GiB (2^30 bytes) with exact bytes.\n",
        md(&input.generated),
        md(input.version)
    );
    o.push_str("## Recommendations\n\n");
    table(
        &mut o,
        &PICK_COLUMNS,
        &[false, false, false, false, true, true, true],
        &md_rows(pick_rows(input.picks)),
    );
    o.push_str("## Scenario\n\n");
    let rows: Vec<Vec<String>> = scenario_rows(input.inputs)
        .into_iter()
        .map(|(k, v)| vec![k.to_string(), md(&v)])
        .collect();
    table(&mut o, &["Input", "Value"], &[false, false], &rows);
    o.push_str("## Memory by component\n\n");
    table(
        &mut o,
        &COMPONENT_COLUMNS,
        &[false, true, true, false, false],
        &md_rows(component_rows(input.estimate)),
    );
    let _ = writeln!(o, "{}\n", md(&totals_line(input.estimate)));
    o.push_str("## Machines\n\n");
    if input.fits.is_empty() {
        o.push_str("No machine listed.\n\n");
    } else {
        table(
            &mut o,
            &FIT_COLUMNS,
            &[false, false, true, true, true, true, true, true],
            &md_rows(fit_rows(input.fits)),
        );
    }
    o.push_str("Sizing and speed model: docs/diffusion.md (one pipeline per GPU; offload moves weights over the host link).\n");
    o
}

fn html_report(input: &ImageReportInput) -> String {
    use super::html::{CSS, text_table};
    let mut o = String::with_capacity(16 * 1024);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n<meta name=\"generator\" content=\"headroom {}\">\n<title>Image generation report: {}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n",
        html(input.version),
        html(&input.title())
    );
    let _ = writeln!(
        o,
        "<header><h1>Image generation report</h1><p class=\"subtitle\">{}</p><p class=\"meta\">Generated {} by headroom {}. Memory in GiB (2<sup>30</sup> bytes) with exact bytes.</p></header>",
        html(&input.title()),
        html(&input.generated),
        html(input.version)
    );
    o.push_str("<section id=\"recommendations\">\n<h2>Recommendations</h2>\n");
    text_table(&mut o, &PICK_COLUMNS, &pick_rows(input.picks));
    o.push_str("</section>\n<section id=\"scenario\">\n<h2>Scenario</h2>\n");
    let rows: Vec<Vec<String>> = scenario_rows(input.inputs)
        .into_iter()
        .map(|(k, v)| vec![k.to_string(), v])
        .collect();
    text_table(&mut o, &["Input", "Value"], &rows);
    o.push_str("</section>\n<section id=\"memory\">\n<h2>Memory by component</h2>\n");
    text_table(&mut o, &COMPONENT_COLUMNS, &component_rows(input.estimate));
    let _ = writeln!(
        o,
        "<p class=\"note\">{}</p>",
        html(&totals_line(input.estimate))
    );
    o.push_str("</section>\n<section id=\"fit\">\n<h2>Machines</h2>\n");
    text_table(&mut o, &FIT_COLUMNS, &fit_rows(input.fits));
    let _ = write!(
        o,
        "</section>\n<footer>headroom {} · generated {} · GPU peak {}</footer>\n</main>\n</body>\n</html>\n",
        html(input.version),
        html(&input.generated),
        html(&gib_exact(input.estimate.gpu_peak))
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::diffusion::presets::find;
    use crate::core::diffusion::{PipelineOffload, estimate};

    fn input_for<'a>(i: &'a ImageInputs, e: &'a ImageEstimate) -> ImageReportInput<'a> {
        ImageReportInput {
            inputs: i,
            estimate: e,
            fits: &[],
            picks: &[],
            generated: "2026-01-01 00:00".into(),
            version: "0.0.0",
        }
    }

    /// SDXL at 1024², BF16: the component table carries each part's exact bytes (the UNet
    /// 2,567,463,684 × 2 B = 5,134,927,368 B) in all three formats, and the HTML escapes.
    #[test]
    fn the_three_formats_carry_the_components() {
        let i = ImageInputs::new(find("sdxl").unwrap());
        let e = estimate(&i, PipelineOffload::None);
        let r = input_for(&i, &e);
        let m = render_image(&r, ReportFormat::Markdown);
        assert!(
            m.contains("| UNet | 2,567,463,684 | 4.78 GiB (5,134,927,368 B) | GPU |"),
            "{m}"
        );
        assert!(m.contains("Placement: everything on the GPU"));
        let h = render_image(&r, ReportFormat::Html);
        assert!(h.contains("<td>UNet</td><td>2,567,463,684</td>"));
        assert!(h.contains("Stable Diffusion XL base 1.0: 1024×1024, 50 steps, BF16"));
        let j: Value = serde_json::from_str(&render_image(&r, ReportFormat::Json)).unwrap();
        assert_eq!(j["components"][0]["bytes"], 5_134_927_368_u64);
        assert_eq!(j["image"]["pipeline"], "sdxl");
        assert!(j["fits"].as_array().unwrap().is_empty());
    }
}
