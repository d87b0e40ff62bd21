//! The report as Markdown (CommonMark + GitHub tables). All text from the scenario, catalog and
//! model files is escaped; launch settings go in fenced code blocks.

use super::report::{
    RECOMMEND_COLUMNS, ReportInput, fit_columns, fit_row, placement_label, recommend_rows,
    recommend_unmet, scenario_rows, settings_rows, totals,
};
use super::text::{gib_exact, md};
use crate::core::format::group_digits;
use std::fmt::Write as _;

/// A fence longer than any run of backticks in `text`.
fn fence(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

pub(super) fn table(out: &mut String, head: &[&str], align_right: &[bool], rows: &[Vec<String>]) {
    let _ = writeln!(out, "| {} |", head.join(" | "));
    let seps: Vec<&str> = head
        .iter()
        .enumerate()
        .map(|(i, _)| {
            if align_right.get(i).copied().unwrap_or(false) {
                "---:"
            } else {
                "---"
            }
        })
        .collect();
    let _ = writeln!(out, "| {} |", seps.join(" | "));
    for r in rows {
        let _ = writeln!(out, "| {} |", r.join(" | "));
    }
    out.push('\n');
}

pub(crate) fn render(input: &ReportInput) -> String {
    let mut out = String::new();
    head(&mut out, input);
    recommendations(&mut out, input);
    scenario(&mut out, input);
    memory(&mut out, input);
    fit(&mut out, input);
    out.push_str(&super::report_serving::markdown(input));
    out.push_str(&super::report_cluster::markdown(input));
    constants(&mut out, input);
    launch(&mut out, input);
    footer(&mut out, input);
    out
}

/// The title and what the units are.
fn head(out: &mut String, input: &ReportInput) {
    let _ = writeln!(out, "# Sizing report: {}\n", md(&input.title()));
    let _ = writeln!(
        out,
        "Generated {} by headroom {}. Memory in GiB (2^30 bytes) with exact bytes; bandwidth in GB/s (10^9 bytes/s).\n",
        md(&input.generated),
        md(input.version)
    );
}

/// What to buy or rent, first: the picks, what no machine satisfies, and this machine.
fn recommendations(out: &mut String, input: &ReportInput) {
    // What to buy or rent: first.
    out.push_str("## Recommendations\n\n");
    let rec = input.recommendations();
    let rows: Vec<Vec<String>> = recommend_rows(&rec)
        .iter()
        .map(|r| r.iter().map(|c| md(c)).collect())
        .collect();
    if rows.is_empty() {
        out.push_str("No catalog machine runs this workload.\n\n");
    } else {
        table(
            out,
            &RECOMMEND_COLUMNS,
            &[false, false, false, true, false, true, false],
            &rows,
        );
    }
    let unmet = recommend_unmet(&rec);
    for u in &unmet {
        let _ = writeln!(out, "- {}", md(u));
    }
    if let Some(load) = &rec.cloud_cost_load {
        let _ = writeln!(
            out,
            "- Cloud $ per 1M tokens: per output token {}.",
            md(load)
        );
    }
    if !unmet.is_empty() || rec.cloud_cost_load.is_some() {
        out.push('\n');
    }
    if let Some(t) = &rec.this_machine {
        let _ = writeln!(
            out,
            "**{}**: {}.",
            md(&t.title()),
            md(&t.summary().to_string())
        );
        if !t.upgrades.is_empty() {
            out.push('\n');
        }
        for (i, u) in t.upgrades.iter().enumerate() {
            let _ = writeln!(out, "{}. {}", i + 1, md(&u.to_string()));
        }
        out.push('\n');
    }
}

/// Every input of the scenario.
fn scenario(out: &mut String, input: &ReportInput) {
    // Scenario.
    out.push_str("## Scenario\n\n");
    let rows: Vec<Vec<String>> = scenario_rows(input)
        .into_iter()
        .map(|r| vec![r.label.to_string(), md(&r.value)])
        .collect();
    table(out, &["Input", "Value"], &[], &rows);
}

/// The components, the totals, how each number was computed, and the notes.
fn memory(out: &mut String, input: &ReportInput) {
    let e = input.estimate;
    // Memory.
    out.push_str("## Memory\n\n");
    let rows: Vec<Vec<String>> = e
        .components
        .iter()
        .map(|c| {
            vec![
                md(&c.name),
                c.kind.label().to_string(),
                placement_label(c.placement).to_string(),
                c.per_device.display_gib(),
                c.bytes.display_gib(),
                group_digits(c.bytes.0),
                c.provenance.label().to_string(),
            ]
        })
        .collect();
    table(
        out,
        &[
            "Component",
            "Kind",
            "Where",
            "Per device",
            "Total",
            "Total bytes",
            "Provenance",
        ],
        &[false, false, false, true, true, true, false],
        &rows,
    );
    let rows: Vec<Vec<String>> = totals(input)
        .into_iter()
        .map(|(l, v)| vec![md(&l), v])
        .collect();
    table(out, &["Total", "Size"], &[false, true], &rows);
    out.push_str("How each number was computed:\n\n");
    for c in &e.components {
        let _ = writeln!(
            out,
            "- **{}** ({}): {}",
            md(&c.name),
            c.provenance.label(),
            md(&c.formula)
        );
    }
    out.push('\n');

    if !e.notes.is_empty() {
        out.push_str("### Notes\n\n");
        for n in &e.notes {
            let _ = writeln!(out, "- {}", md(n));
        }
        out.push('\n');
    }
}

/// The fit table on the chosen machines and their notes.
fn fit(out: &mut String, input: &ReportInput) {
    // Fit.
    out.push_str("## Fit on the chosen machines\n\n");
    if input.fits.is_empty() {
        out.push_str("No machines were chosen.\n\n");
    } else {
        let cols = fit_columns(input.scenario.mode);
        let right: Vec<bool> = cols.iter().enumerate().map(|(i, _)| i >= 3).collect();
        let rows: Vec<Vec<String>> = input
            .fits
            .iter()
            .map(|f| {
                fit_row(input, f, input.scenario.mode)
                    .iter()
                    .map(|c| md(c))
                    .collect()
            })
            .collect();
        table(out, &cols, &right, &rows);
        out.push_str(
            "GPU need / usable is per GPU; headroom is usable minus needed in the memory that binds (VRAM, or RAM when layers are offloaded or the CPU runs the model).\n\n",
        );
        let with_notes: Vec<_> = input.fits.iter().filter(|f| !f.notes.is_empty()).collect();
        if !with_notes.is_empty() {
            for f in with_notes {
                let notes: Vec<String> = f.notes.iter().map(|n| md(&n.to_string())).collect();
                let _ = writeln!(out, "- **{}**: {}", md(&f.name), notes.join("; "));
            }
            out.push('\n');
        }
    }
}

/// The speed model's constants.
fn constants(out: &mut String, input: &ReportInput) {
    // Speed constants.
    out.push_str("## Speed model constants\n\n");
    let rows: Vec<Vec<String>> = settings_rows(input.settings)
        .into_iter()
        .map(|(n, v, m)| vec![n.to_string(), md(&v), md(m)])
        .collect();
    table(out, &["Constant", "Value", "Meaning"], &[], &rows);
}

/// The launch settings for the first machine that runs it.
fn launch(out: &mut String, input: &ReportInput) {
    // Launch settings.
    if let Some(first) = input.launch_fit() {
        let _ = writeln!(out, "## Launch settings for {}\n", md(&first.name));
        for l in input.launch() {
            launch_block(out, &l);
        }
    }
}

/// One launch file: a heading, the text in a fence of its language, and what to replace.
pub(super) fn launch_block(out: &mut String, l: &super::launch::LaunchSetting) {
    let f = fence(&l.text);
    let _ = writeln!(out, "### {}\n", md(&l.title));
    let _ = writeln!(
        out,
        "{f}{}\n{}\n{f}\n",
        l.runtime.language(),
        l.text.trim_end()
    );
    if !l.note.is_empty() {
        let _ = writeln!(out, "{}\n", md(&l.note));
    }
}

/// The footer line.
fn footer(out: &mut String, input: &ReportInput) {
    let e = input.estimate;
    let _ = writeln!(
        out,
        "---\n\nheadroom {} · generated {} · {} per GPU, {} in host RAM.",
        md(input.version),
        md(&input.generated),
        e.per_gpu_total().display_gib(),
        gib_exact(e.host_total())
    );
}
