//! headroom: the window when run without a subcommand, the CLI otherwise.

use clap::Parser;
use headroom::cli::app::{Cli, run};
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // clap prints usage errors to stderr with exit code 2, help/version to stdout with 0.
            let _ = e.print();
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
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
