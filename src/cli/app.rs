//! The command line: `headroom estimate | fit | report | detect | catalog`. Names and JSON fields
//! are a contract; add freely, never rename. The grammar is in [`super::args`], value parsing in
//! [`super::values`], and each subcommand in its own module.

pub use super::args::{
    CatalogCommand, Cli, Command, EstimateArgs, FitArgs, ReportArgs, ScenarioArgs,
};
pub use super::estimate::estimate_table;
pub use super::fit::{find_machine, fit_table, kind_matches, select_machines};
pub use super::scenario::build_scenario;

/// Exit codes (a contract, README "Exit codes"): 0 success; 1 the output could not be written
/// (stdout, `-o FILE`, the calibration store) or the window could not open; 2 a usage error (an
/// unknown option or value, a missing argument, an unknown preset or machine id, options that
/// conflict); 3 an input error (a file that cannot be read or whose content is refused: a model
/// file, config.json, a saved scenario, a catalog, llama-bench output; also a header a server
/// sent); 4 a network error (no network, timeout, refused access, not found on the Hub, a server
/// that ignores Range or truncates its answer).
pub mod exit {
    pub const OUTPUT: i32 = 1;
    pub const USAGE: i32 = 2;
    pub const INPUT: i32 = 3;
    pub const NETWORK: i32 = 4;
}

/// A CLI failure: one line for stderr and the exit code ([`exit`]).
#[derive(Debug)]
pub struct CliError {
    pub message: String,
    pub code: i32,
}

impl CliError {
    /// The command line is wrong (exit 2).
    pub fn usage(m: impl Into<String>) -> Self {
        CliError {
            message: m.into(),
            code: exit::USAGE,
        }
    }
    /// A file (or what a server sent) cannot be read or is refused (exit 3).
    pub fn input(m: impl Into<String>) -> Self {
        CliError {
            message: m.into(),
            code: exit::INPUT,
        }
    }
    /// The network failed or a server refused (exit 4).
    pub fn network(m: impl Into<String>) -> Self {
        CliError {
            message: m.into(),
            code: exit::NETWORK,
        }
    }
    /// The result could not be written (exit 1).
    pub fn output(m: impl Into<String>) -> Self {
        CliError {
            message: m.into(),
            code: exit::OUTPUT,
        }
    }
}

impl From<crate::io::import::ImportError> for CliError {
    fn from(e: crate::io::import::ImportError) -> Self {
        CliError::input(e.to_string())
    }
}

impl From<crate::io::hub::HubError> for CliError {
    fn from(e: crate::io::hub::HubError) -> Self {
        use crate::io::hub::HubErrorKind as K;
        let code = match e.kind {
            K::BadRequest | K::Ambiguous => exit::USAGE,
            K::Invalid | K::TooManyShards | K::Cache => exit::INPUT,
            K::Gated
            | K::NotFound
            | K::Network
            | K::Timeout
            | K::RangeIgnored
            | K::Truncated
            | K::Cancelled => exit::NETWORK,
        };
        CliError {
            message: e.to_string(),
            code,
        }
    }
}

/// Pretty JSON with a final newline (serialising plain data with string keys cannot fail).
pub(crate) fn json_text<T: serde::Serialize>(v: &T) -> String {
    let mut s =
        serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

/// clap's rendered error as one line: every line before its "Usage:" block, trimmed and joined
/// ("the following required arguments were not provided: <FILE>", "invalid value 'q4km' for
/// '--weights <PRECISION>' [possible values: …] (tip: a similar value exists: 'q4_k_m')"). The
/// CLI prints it after "headroom: " (exit 2); `headroom mcp` returns it as the tool's error.
pub fn usage_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut parts: Vec<String> = Vec::new();
    for l in text.lines() {
        let t = l.trim();
        if t.starts_with("Usage:") || t.starts_with("For more information") {
            break;
        }
        if t.is_empty() {
            continue;
        }
        let t = t.strip_prefix("error: ").unwrap_or(t);
        match t.strip_prefix("tip: ") {
            Some(tip) => parts.push(format!("(tip: {tip})")),
            None => parts.push(t.to_string()),
        }
    }
    let line = parts.join(" ");
    let line = crate::core::format::one_line(&line).into_owned();
    if line.is_empty() {
        "invalid arguments (headroom --help)".into()
    } else {
        line
    }
}

/// Run the CLI. Returns the text for stdout.
pub fn run(cli: Cli) -> Result<String, CliError> {
    let (mut cat, warnings) = crate::io::catalog::load_default();
    for w in &warnings {
        eprintln!(
            "headroom: {}",
            crate::core::format::one_line(&w.to_string())
        );
    }
    match cli.command {
        None => Ok(String::new()),
        Some(Command::Estimate(a)) => super::estimate::run(&a, &cat),
        Some(Command::Fit(a)) => super::fit::run(&a, &mut cat),
        Some(Command::Report(a)) => super::report::command(&a, &mut cat),
        Some(Command::Recommend(a)) => super::recommend::run(&a, &mut cat),
        Some(Command::Detect { json, bench }) => Ok(super::detect::run_with(&cat, json, bench)),
        Some(Command::Serve(a)) => super::serve::run(&a, &mut cat),
        Some(Command::Cluster(a)) => super::cluster::run(&a, &mut cat),
        Some(Command::Quality(a)) => super::quality::run(&a, &mut cat),
        Some(Command::Mcp) => mcp(),
        Some(Command::Calibrate { file }) => super::calibrate::command(&file, &cat),
        Some(Command::Verify(a)) => super::verify::run(&a, &mut cat),
        Some(Command::Catalog { command }) => match command {
            CatalogCommand::List { kind, json } => {
                Ok(super::catalog::list(&cat, kind.map(|k| k.cli_name()), json))
            }
            CatalogCommand::Models { json } => Ok(super::catalog::models(&cat, json)),
            CatalogCommand::Validate { file } => {
                super::catalog::validate_file(&file).map_err(CliError::input)
            }
        },
    }
}

/// `headroom mcp`: serves until the client closes stdin (the protocol owns stdout, so nothing is
/// returned to print).
#[cfg(feature = "mcp")]
fn mcp() -> Result<String, CliError> {
    crate::mcp::serve()
        .map(|()| String::new())
        .map_err(|e| CliError::output(format!("mcp: {e}")))
}

/// `headroom mcp` in a build without the `mcp` feature.
#[cfg(not(feature = "mcp"))]
fn mcp() -> Result<String, CliError> {
    Err(CliError::usage(
        "mcp: this build has no MCP server (built without the `mcp` feature)",
    ))
}
