//! `headroom report … --format md|html|json -o FILE`: render the sizing report and print it or
//! write it atomically (the clap wiring lives with the command definitions).

use crate::io::export::{ReportFormat, ReportInput, render, write_atomic};
use std::path::Path;

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
