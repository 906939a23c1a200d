//! `cargo xtask test`: everything a fresh machine needs, then every test.
//!
//! In order: the `wasm32-wasip2` rustup target, the Debian packages and the
//! Go-built Kubernetes and tool binaries (`tests/controlplane/install.sh`, cached
//! under `~/.cache/tazuna-dev/`), the wasm plugins, then the workspace's tests,
//! the plugins' own unit tests (run on the host target), the config loader's
//! fuzz target for 60 s (`cargo xtask fuzz`), a `cargo check` of the CLI for
//! Windows, and clippy on both workspaces.
//! CI runs exactly this.

use std::process::Command;

use crate::shell::{cargo, host_target, root, run};

use anyhow::Context;
use clap::Args;

/// Install what the tests need, build the plugins and run every test.
#[derive(Debug, Args)]
pub struct Test {
    /// Skip installing packages and building the control plane (use what is there).
    #[arg(long)]
    no_install: bool,
    /// Extra arguments for `cargo test` on the main workspace (after `--`).
    #[arg(last = true)]
    cargo_args: Vec<String>,
}

impl Test {
    /// Run the whole suite.
    pub fn run(self) -> anyhow::Result<()> {
        let root = root();
        step(
            "rustup target add wasm32-wasip2 x86_64-pc-windows-gnu",
            || run(Command::new("rustup").args(["target", "add", "wasm32-wasip2", WINDOWS_TARGET])),
        )?;
        let install = root.join("tests/controlplane/install.sh");
        if !self.no_install && install.is_file() {
            step("tests/controlplane/install.sh", || {
                run(Command::new("bash").arg(&install))
            })?;
        }
        step("cargo xtask build-plugins --check", || {
            crate::plugins::BuildPlugins {
                check: true,
                ..Default::default()
            }
            .run()
        })?;
        // First, so the plugins' host-target dependencies are built before
        // the end-to-end tests (the template test builds new plugins with them).
        step("plugin unit tests (host target)", || {
            run(cargo(&root).args([
                "test",
                "--manifest-path",
                "plugins/Cargo.toml",
                "--workspace",
                "--target",
                host_target()?.as_str(),
            ]))
        })?;
        step("cargo test --workspace", || {
            run(cargo(&root)
                .args(["test", "--workspace", "--locked"])
                .args(&self.cargo_args))
        })?;
        step("cargo xtask fuzz --seconds 60", || {
            crate::fuzz::Fuzz {
                seconds: 60,
                rss_limit_mb: 2048,
                timeout: 10,
            }
            .run()
        })?;
        // Portability: the CLI compiles for Windows (unix-only code gated).
        // macOS is not checked here: ring compiles C for the target, which
        // needs Apple's toolchain (its build script stops on `-arch`).
        step(
            "cargo check --target x86_64-pc-windows-gnu -p tazuna",
            || {
                run(cargo(&root).args([
                    "check",
                    "--locked",
                    "--target",
                    WINDOWS_TARGET,
                    "-p",
                    "tazuna",
                ]))
            },
        )?;
        step("cargo clippy", || {
            run(cargo(&root).args([
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ]))
        })?;
        // The benchmark driver on its smallest workloads, against every peer
        // (kubectl, Flux's controllers, the floor), on the dev build.
        step("cargo xtask bench --quick", || {
            run(cargo(&root).args(["xtask", "bench", "--quick"]))
        })?;
        Ok(())
    }
}

/// The Windows target the portability check compiles for.
const WINDOWS_TARGET: &str = "x86_64-pc-windows-gnu";

fn step(name: &str, f: impl FnOnce() -> anyhow::Result<()>) -> anyhow::Result<()> {
    eprintln!("==> {name}");
    let started = std::time::Instant::now();
    f().with_context(|| format!("step `{name}` failed"))?;
    eprintln!(
        "==> {name}: done in {:.1}s{}",
        started.elapsed().as_secs_f64(),
        free_disk()
            .map(|free| format!(" ({free} free)"))
            .unwrap_or_default()
    );
    Ok(())
}

/// The free space of the disk the workspace is on, as `df -h` prints it (a
/// CI run that fails for disk shows where the space went).
fn free_disk() -> Option<String> {
    let output = Command::new("df")
        .args(["-P", "-h"])
        .arg(root())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .nth(1)?
        .split_whitespace()
        .nth(3)
        .map(str::to_owned)
}
