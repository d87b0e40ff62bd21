//! The command line: `headroom estimate | fit | report | detect | catalog`. Names and JSON fields
//! are a contract; add freely, never rename. The grammar is in [`super::args`], value parsing in
//! [`super::values`], and each subcommand in its own module.

pub use super::args::{
    CatalogCommand, Cli, Command, EstimateArgs, FitArgs, ReportArgs, ScenarioArgs,
};
pub use super::estimate::estimate_table;
pub use super::fit::{find_machine, fit_table, kind_matches, select_machines};
pub use super::scenario::build_scenario;

/// A CLI failure: one line for stderr and the exit code (2 for bad input).
#[derive(Debug)]
pub struct CliError {
    pub message: String,
    pub code: i32,
}

impl CliError {
    pub fn input(m: impl Into<String>) -> Self {
        CliError {
            message: m.into(),
            code: 2,
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

/// Run the CLI. Returns the text for stdout.
pub fn run(cli: Cli) -> Result<String, CliError> {
    let (mut cat, warnings) = crate::io::catalog::load_default();
    for w in &warnings {
        eprintln!("headroom: {w}");
    }
    match cli.command {
        None => Ok(String::new()),
        Some(Command::Estimate(a)) => super::estimate::run(&a, &cat),
        Some(Command::Fit(a)) => super::fit::run(&a, &mut cat),
        Some(Command::Report(a)) => super::report::command(&a, &mut cat),
        Some(Command::Recommend(a)) => super::recommend::run(&a, &mut cat),
        Some(Command::Detect { json, bench }) => Ok(super::detect::run_with(&cat, json, bench)),
        Some(Command::Serve(a)) => super::serve::run(&a, &mut cat),
        Some(Command::Calibrate { file }) => super::calibrate::command(&file, &cat),
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
