//! `cargo xtask fuzz`: the fuzz targets of `fuzz/` (the config loader and rendered objects), run with
//! libFuzzer for a bounded time.
//!
//! cargo-fuzz is installed from crates.io at a pinned version into
//! `~/.cache/tazuna-dev/cargo-fuzz-<version>/`, and runs on the nightly
//! toolchain (which the machine's rustup carries). Inputs libFuzzer finds
//! go to a scratch corpus; the seeds in `fuzz/seeds/<target>/` (the config cases of
//! `engine/core/tests/cases/`, and rendered objects that reach each rule of the
//! emit verdict) are read, never written. A crash, a hang past
//! `--timeout` or a run past `--rss-limit-mb` fails the task and leaves the
//! input in `fuzz/artifacts/`.

use std::path::PathBuf;
use std::process::Command;

use anyhow::Context;
use clap::Args;

use crate::shell::{root, run};

/// The cargo-fuzz release used.
const CARGO_FUZZ_VERSION: &str = "0.13.1";

/// Fuzz the config loader and rendered objects for a bounded time.
#[derive(Debug, Args)]
pub struct Fuzz {
    /// How long to fuzz, in seconds.
    #[arg(long, default_value_t = 60)]
    pub seconds: u64,
    /// The most memory one run may use, in MiB.
    #[arg(long, default_value_t = 2048)]
    pub rss_limit_mb: u64,
    /// The most time one input may take, in seconds.
    #[arg(long, default_value_t = 10)]
    pub timeout: u64,
}

impl Fuzz {
    /// Install cargo-fuzz if needed, then fuzz.
    pub fn run(self) -> anyhow::Result<()> {
        let root = root();
        let bin = cargo_fuzz()?;
        let corpus = tempfile_dir()?;
        let mut path = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .collect::<Vec<_>>();
        path.insert(0, bin);
        let path = std::env::join_paths(path)?;
        // The time is shared between the targets, the loader taking half.
        for (target, seconds) in [
            ("config_loader", self.seconds.div_ceil(2)),
            ("rendered_object", self.seconds / 2),
        ] {
            let corpus = corpus.join(target);
            std::fs::create_dir_all(&corpus)?;
            run(Command::new("rustup")
                .current_dir(root.join("fuzz"))
                .env("PATH", &path)
                .args(["run", "nightly", "cargo", "fuzz", "run", target])
                .arg(&corpus)
                .arg(format!("seeds/{target}"))
                .arg("--")
                .arg(format!("-max_total_time={}", seconds.max(1)))
                .arg(format!("-rss_limit_mb={}", self.rss_limit_mb))
                .arg(format!("-timeout={}", self.timeout))
                .arg("-max_len=262144"))?;
        }
        let _ = std::fs::remove_dir_all(&corpus);
        Ok(())
    }
}

/// The directory holding `cargo-fuzz`, installed there first if missing.
fn cargo_fuzz() -> anyhow::Result<PathBuf> {
    let home = std::env::var_os("HOME").context("HOME is not set")?;
    let install =
        PathBuf::from(home).join(format!(".cache/tazuna-dev/cargo-fuzz-{CARGO_FUZZ_VERSION}"));
    let bin = install.join("bin");
    if !bin.join("cargo-fuzz").is_file() {
        run(Command::new("cargo")
            .args([
                "install",
                "cargo-fuzz",
                "--locked",
                "--version",
                CARGO_FUZZ_VERSION,
            ])
            .arg("--root")
            .arg(&install))?;
    }
    Ok(bin)
}

/// A new empty directory for the corpus libFuzzer grows.
fn tempfile_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("tazuna-fuzz-corpus-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}
