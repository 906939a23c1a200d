//! `tazuna init`: write a commented starter tazuna.yaml.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;

use crate::settings::GlobalSettings;

/// Files the starter's manifests point at, created when missing.
const STARTER_FILES: &[(&str, &str)] = &[
    (
        "manifests/namespaces/namespaces.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: cert-manager\n",
    ),
    (
        "manifests/cert-manager/README.md",
        "Put cert-manager's manifests here (YAML or JSON files).\n",
    ),
];

/// Write a commented starter tazuna.yaml (to the path given with -f).
///
/// The starter declares a namespaces layer and a cert-manager layer that
/// depends on it, with an environment per cluster. The directories it names
/// are created next to it (with a Namespace to start from), so `tazuna check`
/// passes right away. Edit it, then run `tazuna check` and `tazuna build`.
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
        let dir = path.parent().unwrap_or(std::path::Path::new("."));
        for (file, content) in STARTER_FILES {
            let target = dir.join(file);
            if target.exists() {
                continue;
            }
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("cannot create `{}`", parent.display()))?;
            }
            std::fs::write(&target, content)
                .with_context(|| format!("cannot write `{}`", target.display()))?;
        }
        eprintln!(
            "wrote {}\nnext: edit it, then run `tazuna check` and `tazuna build`",
            path.display()
        );
        Ok(ExitCode::SUCCESS)
    }
}
