//! `cargo xtask image`: an OCI image of the static `tazuna` binary, built
//! without a container daemon, for the Job of `examples/fleet/kubernetes/job.yaml`.
//!
//! It builds `tazuna` for `x86_64-unknown-linux-musl` with the release profile (a static
//! binary: the image holds nothing else), writes an OCI image layout (one layer with
//! `/tazuna`, a config whose entrypoint is it and whose user is 65532), reproducibly
//! (entries owned by root, dated by the last commit), and with `--push` copies it to a
//! registry with `skopeo`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, ensure};
use clap::Args;
use serde_json::json;
use sha2::{Digest, Sha256};

/// The static target the image's binary is built for.
const TARGET: &str = "x86_64-unknown-linux-musl";

/// Build an OCI image of the static `tazuna` binary (an OCI layout, no container daemon).
#[derive(Debug, Args)]
pub struct Image {
    /// Where the OCI image layout goes.
    #[arg(long, default_value = "target/image")]
    out: PathBuf,
    /// Package this binary instead of building the static one (it must be a Linux
    /// x86_64 executable that needs nothing else in the image).
    #[arg(long, value_name = "FILE")]
    binary: Option<PathBuf>,
    /// Copy the image to this reference with skopeo (`registry.example.com/platform/tazuna:0.1.0`;
    /// a registry on loopback is reached over plain HTTP).
    #[arg(long, value_name = "REFERENCE")]
    push: Option<String>,
}

impl Image {
    pub fn run(self) -> anyhow::Result<()> {
        let root = crate::shell::root();
        let version = crate::dist::workspace_version(&root)?;
        let binary = match self.binary {
            Some(binary) => binary,
            None => {
                let mut add = Command::new("rustup");
                add.args(["target", "add", TARGET]);
                crate::shell::run(&mut add)?;
                // ring compiles C for the target: musl's gcc wrapper.
                if !on_path("musl-gcc") {
                    eprintln!("==> apt-get install musl-tools  (musl's C compiler wrapper)");
                    crate::shell::run(
                        Command::new("apt-get")
                            .args(["install", "-y", "--no-install-recommends", "musl-tools"])
                            .env("DEBIAN_FRONTEND", "noninteractive"),
                    )
                    .context("the static build needs `musl-gcc`: install Debian's musl-tools")?;
                }
                crate::plugins::release_cli(&root, Some(TARGET))?
            }
        };
        let out = root.join(&self.out);
        let epoch = crate::dist::last_commit_time(&root)?;
        let digest = layout(&binary, &out, &version, &epoch)?;
        println!("{} ({digest}, tag {version})", out.display());
        if let Some(reference) = self.push {
            let mut copy = Command::new("skopeo");
            copy.arg("copy");
            if is_loopback(&reference) {
                copy.arg("--dest-tls-verify=false");
            }
            copy.arg(format!("oci:{}:{version}", out.display()))
                .arg(format!("docker://{reference}"));
            crate::shell::run(&mut copy)?;
            println!("pushed {reference}");
        }
        Ok(())
    }
}

/// Whether `program` is on `PATH`.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// Whether `reference` names a registry on this machine.
fn is_loopback(reference: &str) -> bool {
    let host = reference.split('/').next().unwrap_or_default();
    let host = host.rsplit_once(':').map_or(host, |(host, _)| host);
    matches!(host, "localhost" | "127.0.0.1" | "[::1]")
}

/// Write an OCI image layout of `binary` at `out`, tagged `version`, with
/// every date `epoch` (seconds); returns the manifest's digest.
pub fn layout(binary: &Path, out: &Path, version: &str, epoch: &str) -> anyhow::Result<String> {
    ensure!(
        binary.is_file(),
        "`{}` is not a file; build it first, or leave `--binary` out",
        binary.display()
    );
    let _ = fs::remove_dir_all(out);
    let blobs = out.join("blobs/sha256");
    fs::create_dir_all(&blobs).with_context(|| format!("cannot create `{}`", out.display()))?;
    // The layer: `/tazuna`, mode 0755, owned by root.
    let staging = out.join("staging");
    fs::create_dir_all(&staging)?;
    fs::copy(binary, staging.join("tazuna"))
        .with_context(|| format!("cannot copy `{}`", binary.display()))?;
    crate::shell::run(
        Command::new("tar")
            .current_dir(&staging)
            .args(["--sort=name", "--owner=0", "--group=0", "--numeric-owner"])
            .arg(format!("--mtime=@{epoch}"))
            .args(["--mode=0755", "-cf", "../layer.tar", "tazuna"]),
    )?;
    fs::remove_dir_all(&staging)?;
    let tar = out.join("layer.tar");
    let diff_id = sha256(&fs::read(&tar)?);
    let gzip = Command::new("gzip")
        .args(["-n", "-9", "-c"])
        .arg(&tar)
        .output()
        .context("cannot run gzip")?;
    ensure!(gzip.status.success(), "gzip failed");
    fs::remove_file(&tar)?;
    let layer = blob(&blobs, &gzip.stdout)?;
    let created = Command::new("date")
        .args(["-u", "-d"])
        .arg(format!("@{epoch}"))
        .arg("+%Y-%m-%dT%H:%M:%SZ")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let config = serde_json::to_vec(&json!({
        "architecture": "amd64",
        "os": "linux",
        "created": created,
        "config": {
            "User": "65532:65532",
            "Entrypoint": ["/tazuna"],
            "Env": ["HOME=/tmp"],
            "WorkingDir": "/",
            "Labels": {
                "org.opencontainers.image.title": "tazuna",
                "org.opencontainers.image.version": version,
            },
        },
        "rootfs": { "type": "layers", "diff_ids": [diff_id] },
        "history": [{ "created": created, "created_by": "cargo xtask image" }],
    }))?;
    let config = blob(&blobs, &config)?;
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": config.0,
            "size": config.1,
        },
        "layers": [{
            "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
            "digest": layer.0,
            "size": layer.1,
        }],
    }))?;
    let manifest = blob(&blobs, &manifest)?;
    fs::write(
        out.join("oci-layout"),
        serde_json::to_vec(&json!({ "imageLayoutVersion": "1.0.0" }))?,
    )?;
    fs::write(
        out.join("index.json"),
        serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [{
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": manifest.0,
                "size": manifest.1,
                "platform": { "architecture": "amd64", "os": "linux" },
                "annotations": { "org.opencontainers.image.ref.name": version },
            }],
        }))?,
    )?;
    Ok(manifest.0)
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Store `bytes` as a blob; its digest and size.
fn blob(blobs: &Path, bytes: &[u8]) -> anyhow::Result<(String, usize)> {
    let digest = sha256(bytes);
    let name = digest.trim_start_matches("sha256:");
    fs::write(blobs.join(name), bytes)?;
    Ok((digest, bytes.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_holds_the_binary_as_its_entrypoint_and_is_reproducible() {
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("bin");
        fs::write(&binary, b"#!/bin/true\n").unwrap();
        let first = layout(&binary, &dir.path().join("a"), "0.1.0", "1700000000").unwrap();
        let second = layout(&binary, &dir.path().join("b"), "0.1.0", "1700000000").unwrap();
        assert_eq!(
            first, second,
            "the same binary and date give the same image"
        );
        let index: serde_json::Value =
            serde_json::from_slice(&fs::read(dir.path().join("a/index.json")).unwrap()).unwrap();
        assert_eq!(index["manifests"][0]["digest"], first.as_str());
        assert_eq!(
            index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"],
            "0.1.0"
        );
        assert!(is_loopback("127.0.0.1:5000/platform/tazuna:0.1.0"));
        assert!(!is_loopback("registry.example.com/platform/tazuna:0.1.0"));
    }
}
