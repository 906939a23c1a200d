//! `cargo xtask quickstart`: build everything and run Tazuna on the quickstart.

use std::process::Command;

use anyhow::{Context, bail};
use clap::Args;

/// Build the plugins and the CLI, then run `tazuna check` and `tazuna build`
/// on examples/quickstart/tazuna.yaml.
#[derive(Debug, Args)]
pub struct Quickstart {}

impl Quickstart {
    /// Run it.
    pub fn run(self) -> anyhow::Result<()> {
        let root = crate::test::root();
        crate::plugins::BuildPlugins::default().run()?;
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(&cargo)
            .current_dir(&root)
            .args(["build", "--release", "--locked", "--bin", "tazuna"])
            .status()
            .context("cannot run cargo")?;
        if !status.success() {
            bail!("building tazuna failed");
        }
        let tazuna = root.join("target/release/tazuna");
        let example = root.join("examples/quickstart");
        for args in [&["check"][..], &["build"][..]] {
            eprintln!("==> tazuna {}  (in examples/quickstart)", args.join(" "));
            let status = Command::new(&tazuna)
                .args(args)
                .current_dir(&example)
                .status()
                .with_context(|| format!("cannot run {}", tazuna.display()))?;
            if !status.success() {
                bail!("`tazuna {}` failed", args.join(" "));
            }
        }
        eprintln!("==> done: the binary is {}", tazuna.display());
        Ok(())
    }
}
