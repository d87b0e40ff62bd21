//! headroom: the window when run without a subcommand, the CLI otherwise.

use clap::Parser;
use headroom::cli::app::{Cli, run};
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if e.use_stderr() => {
            // A usage error: one line naming the argument, exit code 2.
            let text = e.render().to_string();
            let line = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid arguments");
            eprintln!("headroom: {}", line.trim_start_matches("error: "));
            return ExitCode::from(2);
        }
        Err(e) => {
            // --help and --version print to stdout and exit 0.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
    };
    #[cfg(not(feature = "gui"))]
    if cli.command.is_none() {
        eprintln!(
            "headroom: this build has no window (built without the `gui` feature): headroom --help"
        );
        return ExitCode::from(2);
    }
    #[cfg(feature = "gui")]
    if cli.command.is_none() {
        return match headroom::gui::run_app() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("headroom: could not open the window: {e}");
                eprintln!("headroom: the command line works without a display: headroom --help");
                ExitCode::from(1)
            }
        };
    }
    match run(cli) {
        Ok(out) => {
            // A closed pipe (`headroom fit | head`) is not an error worth a panic.
            let _ = std::io::stdout().lock().write_all(out.as_bytes());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("headroom: {}", e.message);
            ExitCode::from(e.code.clamp(1, 255) as u8)
        }
    }
}
