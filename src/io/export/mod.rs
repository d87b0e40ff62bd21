//! Export: the sizing report (Markdown, self-contained HTML, JSON), launch settings for the
//! runtimes (llama.cpp, vLLM, DeepSpeed, accelerate), scenarios saved as RON, and atomic writes.
//!
//! Everything here renders to a `String` from plain inputs; only [`write_atomic`] touches the
//! file system. The GUI and the CLI (`headroom report`) call the same functions.

pub mod atomic;
mod chart;
mod html;
pub mod launch;
pub mod launch_cluster;
pub mod launch_mlx;
pub mod launch_serving;
mod markdown;
pub mod report;
pub mod report_cluster;
mod report_fits;
pub mod report_image;
mod report_scenario;
pub mod report_serving;
pub mod scenario_file;
mod text;

pub use atomic::write_atomic;
pub use launch::{LaunchSetting, Launcher, launch_settings};
pub use report::{ReportFormat, ReportInput, render};
pub use report_image::{ImageReportInput, render_image};
pub use scenario_file::{load_scenario, read_scenario, save_scenario, write_scenario};

/// Everything that can go wrong while exporting, phrased for the user.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExportError {
    /// The output file name does not say which report format to write.
    #[error(
        "cannot tell the report format from '{path}': name the file .md, .html or .json (or pass --format md|html|json)"
    )]
    UnknownFormat { path: String },
    /// A `--format` value that is not one of the report formats.
    #[error("unknown report format '{0}': use md, html or json")]
    UnknownFormatName(String),
    /// Writing the file failed; nothing was written to `path`.
    #[error("cannot write '{path}': {reason}")]
    Write { path: String, reason: String },
    /// A file could not be read.
    #[error("cannot read '{path}': {reason}")]
    Read { path: String, reason: String },
    /// A scenario file could not be read: `file:line:col: message`.
    #[error("{file}:{line}:{col}: {message}")]
    Scenario {
        file: String,
        line: usize,
        col: usize,
        message: String,
    },
    /// A scenario could not be turned into RON (should not happen for a valid scenario).
    #[error("cannot save the scenario: {0}")]
    Serialize(String),
}
