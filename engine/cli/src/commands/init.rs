//! `tazuna init`: write a commented starter tazuna.yaml.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use crate::settings::GlobalSettings;

/// Files the starter's manifests point at, created when missing.
const STARTER_FILES: &[(&str, &str)] = &[
    (
        "manifests/namespaces/namespaces.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: hello\n",
    ),
    (
        "manifests/hello/deployment.yaml",
        "# An example to replace with your first layer's manifests (YAML or JSON files).\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: hello\nspec:\n  replicas: 1\n  selector:\n    matchLabels: { app: hello }\n  template:\n    metadata:\n      labels: { app: hello }\n    spec:\n      containers:\n        - name: hello\n          image: registry.k8s.io/pause:3.10\n",
    ),
];

/// Write a commented starter tazuna.yaml (to the path given with -f).
///
/// The starter declares a namespaces layer and an example application layer
/// (a Deployment, with a readiness test) that depends on it, with an
/// environment per cluster. The files it names are created next to it, so
/// `tazuna check`, `tazuna build` and `tazuna verify` pass right away. Edit
/// it, then run `tazuna check` and `tazuna build`.
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
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(crate::failure::advised(
                    format!("`{}` already exists; nothing was written", path.display()),
                    "pass `--force` to overwrite it, or `-f <path>` to write elsewhere",
                ));
            }
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
            "wrote {}\nnext: edit it, then run `tazuna check`, `tazuna build` and `tazuna verify`",
            path.display()
        );
        Ok(ExitCode::SUCCESS)
    }
}
