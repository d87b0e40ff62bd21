//! `headroom report … --format md|html|json -o FILE`: render the sizing report and print it or
//! write it atomically. Without `--format` the format follows the file's extension.

use super::app::CliError;
use super::args::ReportArgs;
use super::scenario::build_scenario;
use crate::core::catalog::Catalog;
use crate::core::estimate::estimate;
use crate::core::fit::fit_all;
use crate::io::export::atomic::check_target;
use crate::io::export::{ReportFormat, ReportInput, render, write_atomic};
use std::path::Path;

/// Runs `headroom report`. The format and the output path are checked before the work (and
/// before any network request); "Wrote …" goes to stderr, the report to the file.
pub fn command(a: &ReportArgs, cat: &mut Catalog) -> Result<String, CliError> {
    if super::image::asked(&a.scenario) {
        return super::image::run_report(a, cat);
    }
    let format = format_for(a.format.as_deref(), &a.output)
        .map_err(|e| CliError::usage(format!("--output: {e}")))?;
    if a.output != "-" {
        check_target(Path::new(&a.output)).map_err(|e| CliError::output(e.to_string()))?;
    }
    let s = build_scenario(&a.scenario, cat)?;
    let st = super::scenario::fit_settings(&a.scenario, None);
    let machines = if a.select.machines.is_empty() && a.select.kind.is_none() {
        super::recommend::report_machines(&s, cat, &st)
    } else {
        a.select.machines(cat)?
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
    let out = run(&input, format, &a.output).map_err(CliError::output)?;
    if a.output == "-" {
        Ok(out)
    } else {
        eprintln!("headroom: {out}");
        Ok(String::new())
    }
}

/// The format to write: `--format` when given, else the extension of `out`, else Markdown for
/// stdout (`-`) and for a device or FIFO without one. A `--format` that contradicts the file's extension (`--format html -o r.json`)
/// is refused: the file would claim one format and hold another. A name without a known
/// extension (`-o report.txt`, `-o /dev/stdout`) takes any `--format`.
pub fn format_for(format: Option<&str>, out: &str) -> Result<ReportFormat, String> {
    let by_name = (out != "-")
        .then(|| ReportFormat::from_path(Path::new(out)).ok())
        .flatten();
    match format {
        Some(f) => {
            let asked = ReportFormat::from_name(f).map_err(|e| e.to_string())?;
            match by_name {
                Some(ext) if ext != asked => Err(format!(
                    "--format {} does not match the file name '{out}' (a {} name): drop --format, or name the file .{}",
                    asked.extension(),
                    ext.label(),
                    asked.extension()
                )),
                _ => Ok(asked),
            }
        }
        None if out == "-" => Ok(ReportFormat::Markdown),
        // A device or a pipe (`/dev/stdout`, a FIFO) has no extension: Markdown, as stdout.
        None if by_name.is_none()
            && matches!(
                crate::io::export::atomic::target_of(Path::new(out)),
                Ok(crate::io::export::atomic::Target::Through(_))
            ) =>
        {
            Ok(ReportFormat::Markdown)
        }
        None => ReportFormat::from_path(Path::new(out)).map_err(|e| e.to_string()),
    }
}

/// Render the report. `out` "-" returns the text for stdout; otherwise the file is written
/// safely ([`write_atomic`]) and a one-line confirmation is returned. Errors are one line for
/// the user.
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
