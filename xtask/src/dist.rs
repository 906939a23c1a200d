//! `cargo xtask dist`: release archives of the `tazuna` binary, with checksums.
//!
//! For each target (the host's by default) it builds `tazuna` with the release profile (the
//! committed built-in plugins embedded), packs `tazuna-<version>-<target>.tar.gz` holding a
//! directory of that name with the binary, README.md and docs/, and writes `SHA256SUMS`
//! (`sha256sum -c` reads it) beside the archives. The archives are reproducible: entries sorted,
//! owned by root, dated by the last commit.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, ensure};
use clap::Args;
use sha2::{Digest, Sha256};

/// Build release archives and their checksums.
#[derive(Debug, Args)]
pub struct Dist {
    /// Rust targets to build for (default: this machine's). Each must be
    /// installed (`rustup target add`) and have a linker.
    #[arg(long = "target", value_name = "TRIPLE")]
    targets: Vec<String>,
    /// Where the archives and SHA256SUMS go.
    #[arg(long, default_value = "target/dist")]
    out: PathBuf,
}

impl Dist {
    pub fn run(self) -> anyhow::Result<()> {
        let root = crate::shell::root();
        let version = workspace_version(&root)?;
        let targets = if self.targets.is_empty() {
            vec![crate::shell::host_target()?]
        } else {
            self.targets
        };
        let out = root.join(&self.out);
        fs::create_dir_all(&out).with_context(|| format!("cannot create `{}`", out.display()))?;
        let epoch = last_commit_time(&root)?;
        let host = crate::shell::host_target()?;
        let mut sums = String::new();
        for target in &targets {
            // The host's build is the one `cargo build --release` makes too.
            let binary =
                crate::plugins::release_cli(&root, (*target != host).then_some(target.as_str()))?;
            let exe = binary.file_name().context("the binary has a name")?;
            let name = format!("tazuna-{version}-{target}");
            let staging = out.join(&name);
            let _ = fs::remove_dir_all(&staging);
            fs::create_dir_all(&staging)?;
            fs::copy(&binary, staging.join(exe))
                .with_context(|| format!("cannot copy `{}`", binary.display()))?;
            fs::copy(root.join("README.md"), staging.join("README.md"))?;
            copy_dir(&root.join("docs"), &staging.join("docs"))?;
            let archive = format!("{name}.tar.gz");
            crate::shell::run(
                Command::new("tar")
                    .current_dir(&out)
                    .args(["--sort=name", "--owner=0", "--group=0", "--numeric-owner"])
                    .arg(format!("--mtime=@{epoch}"))
                    .args(["-czf", &archive, &name]),
            )?;
            fs::remove_dir_all(&staging)?;
            let digest = hex::encode(Sha256::digest(fs::read(out.join(&archive))?));
            sums.push_str(&format!("{digest}  {archive}\n"));
            println!("{}", out.join(&archive).display());
        }
        fs::write(out.join("SHA256SUMS"), sums)?;
        println!("{}", out.join("SHA256SUMS").display());
        Ok(())
    }
}

/// `version` of `[workspace.package]` in the root Cargo.toml.
pub(crate) fn workspace_version(root: &Path) -> anyhow::Result<String> {
    let manifest = fs::read_to_string(root.join("Cargo.toml"))?;
    let section = manifest
        .split("[workspace.package]")
        .nth(1)
        .context("Cargo.toml has no [workspace.package]")?;
    let version = section
        .lines()
        .take_while(|line| !line.starts_with('['))
        .find_map(|line| line.strip_prefix("version = "))
        .context("[workspace.package] has no version")?;
    Ok(version.trim().trim_matches('"').to_owned())
}

/// Seconds since the epoch of the last commit, the date of every archive entry.
pub(crate) fn last_commit_time(root: &Path) -> anyhow::Result<String> {
    let output = Command::new("git")
        .current_dir(root)
        .args(["log", "-1", "--format=%ct"])
        .output()
        .context("cannot run git")?;
    ensure!(
        output.status.success(),
        "`git log` failed in `{}`",
        root.display()
    );
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_the_workspace_packages() {
        let version = workspace_version(&crate::shell::root()).unwrap();
        assert!(semver_like(&version), "{version}");
    }

    fn semver_like(version: &str) -> bool {
        version.split('.').count() == 3 && version.split('.').all(|p| p.parse::<u64>().is_ok())
    }
}
