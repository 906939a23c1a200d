//! `tazuna completions`: shell completion scripts.

use std::process::ExitCode;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

/// Print a completion script for a shell.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  tazuna completions bash > /etc/bash_completion.d/tazuna\n  tazuna completions zsh > \"${fpath[1]}/_tazuna\"\n  tazuna completions fish > ~/.config/fish/completions/tazuna.fish"
)]
pub struct Completions {
    /// The shell to generate the script for.
    #[arg(value_enum)]
    shell: Shell,
}

impl Completions {
    /// Print the script.
    pub fn run<C: CommandFactory>(self) -> anyhow::Result<ExitCode> {
        let mut command = C::command();
        let mut script = Vec::new();
        clap_complete::generate(self.shell, &mut command, "tazuna", &mut script);
        std::io::Write::write_all(&mut std::io::stdout().lock(), &script)?;
        Ok(ExitCode::SUCCESS)
    }
}
