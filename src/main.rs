//! racksweep: parse the command line, run one command, map its outcome to an exit code
//! (0 success, 1 user or environment error, 2 internal error, 128 + signal when SIGINT/SIGTERM
//! stopped a run; `error::describe`).

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use racksweep::cli::{Cli, Command};
use racksweep::commands;

#[expect(
    clippy::print_stderr,
    reason = "the binary is where a command's outcome reaches the user: its summary and errors go to stderr"
)]
fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let result = match cli.command {
        Command::Run(args) => commands::run::run(args).map(|summary| (None, summary)),
        Command::Check(args) => commands::check::run(args).map(|out| (Some(out), None)),
        Command::Catalog(args) => commands::catalog::run(args).map(|out| (Some(out), None)),
        Command::Validate(args) => commands::validate::run(args).map(|out| (Some(out), None)),
        Command::Merge(args) => commands::merge::run(args).map(|summary| (None, summary)),
        Command::Top(args) => {
            commands::analytics::top(args).map(|(out, count)| (Some(out), Some(count)))
        }
        Command::Pareto(args) => {
            commands::analytics::pareto(args).map(|(out, count)| (Some(out), Some(count)))
        }
        Command::Report(args) => commands::report::run(args).map(|summary| (None, Some(summary))),
        Command::Completions(args) => {
            commands::completions::completions(args).map(|out| (Some(out), None))
        }
        Command::Man(args) => commands::completions::man(args).map(|out| (Some(out), None)),
    };
    match result {
        Ok((stdout, stderr)) => {
            if let Some(text) = stdout {
                let mut out = std::io::stdout().lock();
                // A closed pipe (`racksweep catalog | head`) is not an error.
                if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush())
                    && e.kind() != std::io::ErrorKind::BrokenPipe
                {
                    eprintln!("error: writing to stdout: {e}");
                    return ExitCode::from(2);
                }
            }
            if let Some(text) = stderr {
                eprintln!("{text}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            let (message, code) = racksweep::error::describe(&e);
            eprintln!("{message}");
            ExitCode::from(code)
        }
    }
}
