//! `cargo xtask build-plugins`: builds every crate of the plugins workspace (`plugins/Cargo.toml`)
//! for wasm32-wasip2 in one cargo invocation, checks that each result is a WebAssembly component,
//! and copies it to `target/plugins/<name>.wasm`, where the engine embeds it.
//!
//! Plugins are not built from a `build.rs`: a nested cargo would fight the outer one over the
//! build lock and the jobserver, and hide its output. A copy is only written when its bytes
//! changed, so `include_bytes!` in the engine does not force a rebuild after every run.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail, ensure};

/// The Rust target plugins are built for.
const TARGET: &str = "wasm32-wasip2";

/// The plugins to collect: the library name cargo gives the `.wasm` file, and the short name it
/// is installed under.
const PLUGINS: &[(&str, &str)] = &[
    ("tazuna_plugin_manifests", "manifests"),
    ("tazuna_plugin_kustomize", "kustomize"),
    ("tazuna_plugin_helm", "helm"),
    ("tazuna_plugin_helmfile", "helmfile"),
    ("tazuna_plugin_oras", "oras"),
    ("tazuna_plugin_genesissecret", "genesissecret"),
    ("tazuna_plugin_envfile", "envfile"),
    ("tazuna_plugin_onepassword", "onepassword"),
    ("tazuna_plugin_probe", "probe"),
    ("tazuna_example_plugin", "example"),
    ("tazuna_example_resolver", "example-resolver"),
];

/// Bytes 4..8 of a WebAssembly file: version and layer. A component has layer 1.
const COMPONENT_PREAMBLE: [u8; 4] = [0x0d, 0x00, 0x01, 0x00];
const CORE_MODULE_PREAMBLE: [u8; 4] = [0x01, 0x00, 0x00, 0x00];

/// Build the plugins for wasm32-wasip2 into target/plugins/.
#[derive(clap::Args, Default)]
pub struct BuildPlugins {
    /// Build with the dev profile: quicker to compile, much slower to run.
    #[arg(long)]
    debug: bool,
}

impl BuildPlugins {
    pub fn run(self) -> anyhow::Result<()> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .context("xtask lives inside the workspace")?
            .to_path_buf();
        ensure_target_installed(&root)?;
        let artifacts = build(&root, self.debug)?;

        let out_dir = root.join("target").join("plugins");
        fs::create_dir_all(&out_dir)
            .with_context(|| format!("cannot create `{}`", out_dir.display()))?;
        for (library, name) in PLUGINS {
            let built = artifacts
                .iter()
                .find(|path| path.file_stem().is_some_and(|stem| stem == *library))
                .with_context(|| {
                    format!("cargo built no `{library}.wasm`; is its crate in plugins/Cargo.toml?")
                })?;
            let bytes =
                fs::read(built).with_context(|| format!("cannot read `{}`", built.display()))?;
            ensure_component(built, &bytes)?;
            let installed = out_dir.join(format!("{name}.wasm"));
            let status = install(&installed, &bytes)?;
            println!(
                "{:>10}  {:>7.1} KiB  {}",
                status,
                bytes.len() as f64 / 1024.0,
                installed
                    .strip_prefix(&root)
                    .unwrap_or(&installed)
                    .display()
            );
        }
        Ok(())
    }
}

/// Fails with the fix when the standard library for [`TARGET`] is missing.
fn ensure_target_installed(root: &Path) -> anyhow::Result<()> {
    ensure!(
        target_installed(root, TARGET)?,
        "the Rust target `{TARGET}` is not installed\nhint: run `rustup target add {TARGET}`"
    );
    Ok(())
}

/// Whether the active toolchain has the standard library for `target`. Asking rustc (rather than
/// rustup) also covers toolchains that rustup does not manage.
fn target_installed(root: &Path, target: &str) -> anyhow::Result<bool> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let output = Command::new(&rustc)
        .args(["--print", "target-libdir", "--target", target])
        .current_dir(root)
        .stderr(Stdio::null())
        .output()
        .with_context(|| format!("cannot run `{rustc}`"))?;
    let libdir = String::from_utf8_lossy(&output.stdout);
    Ok(output.status.success() && Path::new(libdir.trim()).is_dir())
}

/// Runs the one cargo build and returns the `.wasm` files it reports.
fn build(root: &Path, debug: bool) -> anyhow::Result<Vec<PathBuf>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(&cargo);
    command
        .current_dir(root)
        .args([
            "build",
            "--target",
            TARGET,
            "--workspace",
            "--manifest-path",
        ])
        .arg(root.join("plugins").join("Cargo.toml"))
        .arg("--message-format=json-render-diagnostics")
        .stdout(Stdio::piped());
    if !debug {
        command.arg("--release");
    }
    let mut child = command
        .spawn()
        .with_context(|| format!("cannot run `{cargo}`"))?;

    let mut artifacts = Vec::new();
    let stdout = child.stdout.take().context("cargo's stdout is piped")?;
    for line in BufReader::new(stdout).lines() {
        let line = line.context("cannot read cargo's output")?;
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if message["reason"] != "compiler-artifact" {
            continue;
        }
        let filenames = message["filenames"].as_array().into_iter().flatten();
        artifacts.extend(
            filenames
                .filter_map(serde_json::Value::as_str)
                .filter(|file| file.ends_with(".wasm"))
                .map(PathBuf::from),
        );
    }
    let status = child.wait().context("cargo did not finish")?;
    if !status.success() {
        bail!("building the plugins failed ({status})");
    }
    Ok(artifacts)
}

/// Fails unless `bytes` are a WebAssembly component (not a core module).
fn ensure_component(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let path = path.display();
    ensure!(
        bytes.len() >= 8 && bytes[..4] == *b"\0asm",
        "`{path}` is not a WebAssembly file"
    );
    let preamble = &bytes[4..8];
    if preamble == CORE_MODULE_PREAMBLE {
        bail!(
            "`{path}` is a core WebAssembly module, not a component\n\
             hint: build for `{TARGET}` (not wasm32-unknown-unknown or wasm32-wasip1)"
        );
    }
    ensure!(
        preamble == COMPONENT_PREAMBLE,
        "`{path}` has an unknown WebAssembly version/layer {preamble:02x?}"
    );
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file and a rename, unless they are already
/// there. Returns what happened.
fn install(path: &Path, bytes: &[u8]) -> anyhow::Result<&'static str> {
    if fs::read(path).is_ok_and(|existing| existing == bytes) {
        return Ok("unchanged");
    }
    let file_name = path.file_name().context("plugin path has a file name")?;
    let temporary = path.with_file_name(format!(".{}.tmp", file_name.to_string_lossy()));
    fs::write(&temporary, bytes)
        .with_context(|| format!("cannot write `{}`", temporary.display()))?;
    fs::rename(&temporary, path)
        .with_context(|| format!("cannot move `{}` into place", path.display()))?;
    Ok("installed")
}

/// Build the plugins, then the release `tazuna` that embeds them; returns the
/// binary's path.
pub fn release_cli(root: &Path) -> anyhow::Result<PathBuf> {
    BuildPlugins::default().run()?;
    crate::test::run(crate::test::cargo(root).args([
        "build",
        "--release",
        "--locked",
        "--bin",
        "tazuna",
    ]))?;
    Ok(root.join("target/release/tazuna"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_target_is_not_installed() {
        assert!(!target_installed(Path::new("."), "no-such-arch-unknown-none").unwrap());
    }

    #[test]
    fn component_preamble_is_recognised() {
        let component = b"\0asm\x0d\x00\x01\x00rest";
        assert!(ensure_component(Path::new("a.wasm"), component).is_ok());
        let module = b"\0asm\x01\x00\x00\x00rest";
        let error = ensure_component(Path::new("a.wasm"), module).unwrap_err();
        assert!(error.to_string().contains("core WebAssembly module"));
        assert!(ensure_component(Path::new("a.wasm"), b"ELF").is_err());
    }
}
