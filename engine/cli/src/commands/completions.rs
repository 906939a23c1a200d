//! `tazuna completions`: shell completion scripts.

use std::process::ExitCode;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

/// Print a completion script for a shell.
///
/// Examples:
///
///   tazuna completions bash > /etc/bash_completion.d/tazuna
///   tazuna completions zsh > "${fpath[1]}/_tazuna"
///   tazuna completions fish > ~/.config/fish/completions/tazuna.fish
#[derive(Debug, Args)]
pub struct Completions {
    /// The shell to generate the script for.
    #[arg(value_enum)]
    shell: Shell,
}

impl Completions {
    /// Print the script.
    pub fn run<C: CommandFactory>(self) -> anyhow::Result<ExitCode> {
        let mut command = C::command();
        clap_complete::generate(self.shell, &mut command, "tazuna", &mut std::io::stdout());
        Ok(ExitCode::SUCCESS)
    }
}
