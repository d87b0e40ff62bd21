//! headroom: the window when run without a subcommand, the CLI otherwise.

use clap::Parser;
use headroom::cli::app::{Cli, exit, run};
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => return clap_exit(&e),
    };
    #[cfg(not(feature = "gui"))]
    if cli.command.is_none() {
        eprintln!(
            "headroom: this build has no window (built without the `gui` feature): headroom --help"
        );
        return ExitCode::from(exit::USAGE as u8);
    }
    #[cfg(feature = "gui")]
    if cli.command.is_none() {
        return match headroom::gui::run_app() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("headroom: could not open the window: {e}");
                eprintln!("headroom: the command line works without a display: headroom --help");
                ExitCode::from(exit::OUTPUT as u8)
            }
        };
    }
    match run(cli) {
        Ok(out) => {
            use std::io::IsTerminal as _;
            let mut stdout = std::io::stdout().lock();
            // On a terminal, what a file or a server put in a name cannot drive it (the
            // importers escape at the source; this holds for everything else printed too).
            let out = if stdout.is_terminal() {
                out.split_inclusive('\n')
                    .map(|l| {
                        let (text, nl) = l.strip_suffix('\n').map_or((l, ""), |t| (t, "\n"));
                        format!("{}{nl}", headroom::core::format::one_line(text))
                    })
                    .collect()
            } else {
                out
            };
            match stdout
                .write_all(out.as_bytes())
                .and_then(|()| stdout.flush())
            {
                Ok(()) => ExitCode::SUCCESS,
                // A closed pipe (`headroom fit | head`): the reader has what it wanted.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!(
                        "headroom: cannot write the output to stdout: {}",
                        headroom::io::export::atomic::io_reason(&e)
                    );
                    ExitCode::from(exit::OUTPUT as u8)
                }
            }
        }
        Err(e) => {
            eprintln!("headroom: {}", headroom::core::format::one_line(&e.message));
            ExitCode::from(e.code.clamp(1, 255) as u8)
        }
    }
}

/// A clap outcome that is not a parsed command line. `--help` and `--version` print to stdout
/// and exit 0; a subcommand given without its own subcommand (`headroom catalog`) prints its help
/// to stderr; any other usage error is clap's whole message on one line (what is wrong, the
/// missing arguments, the possible values, clap's tip), without the usage block, exit 2.
fn clap_exit(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind as K;
    if !e.use_stderr() {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    if e.kind() == K::DisplayHelpOnMissingArgumentOrSubcommand {
        let _ = e.print();
        return ExitCode::from(exit::USAGE as u8);
    }
    eprintln!("headroom: {}", headroom::cli::app::usage_line(e));
    ExitCode::from(exit::USAGE as u8)
}
