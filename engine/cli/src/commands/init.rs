//! `tazuna init`: write a commented starter tazuna.yaml.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;

use crate::settings::GlobalSettings;

/// Write a commented starter tazuna.yaml (to the path given with -f).
///
/// The starter declares one raw-manifests layer and one that depends on it,
/// with an environment per cluster. Edit it, then run `tazuna check`.
#[derive(Debug, Args)]
pub struct Init {
    /// Overwrite the file if it exists.
    #[arg(long)]
    force: bool,
}

impl Init {
    /// Write the starter file.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        let path = &settings.file;
        let mut options = std::fs::OpenOptions::new();
        options.write(true);
        if self.force {
            options.create(true).truncate(true);
        } else {
            options.create_new(true);
        }
        let mut file = match options.open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => bail!(
                "`{}` already exists; nothing was written\nhint: pass `--force` to overwrite it, or `-f <path>` to write elsewhere",
                path.display()
            ),
            Err(e) => return Err(e).with_context(|| format!("cannot create `{}`", path.display())),
        };
        file.write_all(tazuna_core::config::STARTER.as_bytes())
            .with_context(|| format!("cannot write `{}`", path.display()))?;
        eprintln!(
            "wrote {}\nnext: edit it, then run `tazuna check` and `tazuna build`",
            path.display()
        );
        Ok(ExitCode::SUCCESS)
    }
}
