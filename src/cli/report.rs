//! `headroom report … --format md|html|json -o FILE`: render the sizing report and print it or
//! write it atomically. Without `--format` the format follows the file's extension.

use super::app::CliError;
use super::args::ReportArgs;
use super::fit::select_machines;
use super::scenario::build_scenario;
use crate::core::catalog::{Catalog, MachineKind};
use crate::core::estimate::estimate;
use crate::core::fit::fit_all;
use crate::io::export::{ReportFormat, ReportInput, render, write_atomic};
use std::path::Path;

/// Runs `headroom report`.
pub fn command(a: &ReportArgs, cat: &mut Catalog) -> Result<String, CliError> {
    let s = build_scenario(&a.scenario, cat)?;
    let format = format_for(a.format.as_deref(), &a.output)
        .map_err(|e| CliError::input(format!("--output: {e}")))?;
    let st = super::scenario::fit_settings(&a.scenario, None);
    let machines = if a.machines.is_empty() && a.kind.is_none() {
        super::recommend::report_machines(&s, cat, &st)
    } else {
        select_machines(cat, &a.machines, a.kind.map(MachineKind::cli_name))?
    };
    let e = estimate(&s);
    let rs = fit_all(&s, &machines, cat, &st);
    let input = ReportInput {
        scenario: &s,
        estimate: &e,
        fits: &rs,
        catalog: cat,
        settings: &st,
        generated: crate::io::clock::today_utc(),
        version: env!("CARGO_PKG_VERSION"),
    };
    run(&input, format, &a.output).map_err(CliError::input)
}

/// The format to write: `--format` when given, else the extension of `out`, else Markdown for
/// stdout (`-`).
pub fn format_for(format: Option<&str>, out: &str) -> Result<ReportFormat, String> {
    match format {
        Some(f) => ReportFormat::from_name(f).map_err(|e| e.to_string()),
        None if out == "-" => Ok(ReportFormat::Markdown),
        None => ReportFormat::from_path(Path::new(out)).map_err(|e| e.to_string()),
    }
}

/// Render the report. `out` "-" returns the text for stdout; otherwise the file is written
/// atomically and a one-line confirmation is returned. Errors are one line for the user.
pub fn run(input: &ReportInput, format: ReportFormat, out: &str) -> Result<String, String> {
    let text = render(input, format);
    if out == "-" {
        return Ok(text);
    }
    write_atomic(Path::new(out), text.as_bytes()).map_err(|e| e.to_string())?;
    Ok(format!(
        "Wrote the {} report to {out} ({} bytes).",
        format.label(),
        text.len()
    ))
}
