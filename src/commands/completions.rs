//! `racksweep completions <SHELL>` and `racksweep man [COMMAND]`: a shell completion script and
//! the manual page, both generated from the clap definition in `cli.rs` (clap_complete,
//! clap_mangen), so they cannot drift from the flags.

use anyhow::Result;
use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::error::UserError;

/// The completion script for the shell.
pub fn completions(args: CompletionsArgs) -> Result<String> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "racksweep", &mut script);
    Ok(String::from_utf8(script)?)
}

/// racksweep(1), or with a subcommand's name its own page (racksweep-run(1)).
pub fn man(args: ManArgs) -> Result<String> {
    let mut cli = Cli::command();
    cli.build();
    let page = match &args.command {
        None => cli,
        Some(name) => {
            let Some(sub) = cli.find_subcommand(name) else {
                let names: Vec<&str> = cli.get_subcommands().map(|s| s.get_name()).collect();
                let hint = match crate::suggest::did_you_mean(name, names.iter().copied()) {
                    Some(s) => format!("{s} the commands are {}", names.join(", ")),
                    None => format!("the commands are {}", names.join(", ")),
                };
                return Err(UserError::new(format!(
                    "man: unknown command \"{}\"",
                    crate::limits::quoted(name)
                ))
                .with_hint(hint)
                .into());
            };
            // Built, a subcommand's display name is `racksweep-run`: its page's title.
            sub.clone().version(env!("CARGO_PKG_VERSION"))
        }
    };
    let mut roff = Vec::new();
    clap_mangen::Man::new(page).render(&mut roff)?;
    Ok(String::from_utf8(roff)?)
}
