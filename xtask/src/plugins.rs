//! `cargo xtask build-plugins`: builds every crate of the plugins workspace (`plugins/Cargo.toml`)
//! for wasm32-wasip2 in one cargo invocation, checks that each result is a WebAssembly component,
//! and copies it to `target/plugins/<name>.wasm` (what the tests load).
//!
//! The built-ins are also committed, in `engine/plugin-host/builtins/`, where the engine embeds
//! them: `cargo install --path engine/cli` then works from a clean clone with nothing but Rust.
//! `BUILT` beside them records the rustc that built them and a hash of their sources. The build
//! is reproducible (paths are remapped), so `--check` (what CI runs) builds from source and
//! compares the bytes; with another rustc it compares the source hash only.
//!
//! Plugins are not built from a `build.rs`: a nested cargo would fight the outer one over the
//! build lock and the jobserver, and hide its output. A copy is only written when its bytes
//! changed, so `include_bytes!` in the engine does not force a rebuild after every run.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail, ensure};
use sha2::{Digest, Sha256};

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
    ("tazuna_plugin_aws_secrets_manager", "aws-secrets-manager"),
    ("tazuna_plugin_vault", "vault"),
    ("tazuna_plugin_sops", "sops"),
    ("tazuna_plugin_kubernetes", "kubernetes"),
    ("tazuna_plugin_probe", "probe"),
    ("tazuna_plugin_probe_resolver", "probe-resolver"),
    ("tazuna_plugin_contract_0_1_0", "contract-0.1.0"),
    ("tazuna_example_plugin", "example"),
    ("tazuna_example_resolver", "example-resolver"),
];

/// The plugins embedded in the binary (a subset of [`PLUGINS`], by short name).
const BUILTINS: &[&str] = &[
    "manifests",
    "kustomize",
    "helm",
    "helmfile",
    "oras",
    "genesissecret",
    "envfile",
    "onepassword",
    "aws-secrets-manager",
    "vault",
    "sops",
    "kubernetes",
];

/// Where the built-ins are committed, relative to the workspace root.
const BUILTINS_DIR: &str = "engine/plugin-host/builtins";

/// What the built-ins are built from, relative to the workspace root: hashed into `BUILT`.
/// Directories are walked, leaving out `target` and `testing` (the sandbox probe).
const SOURCES: &[&str] = &[
    "plugins",
    "sdk/Cargo.toml",
    "sdk/src",
    "sdk/gotmpl/Cargo.toml",
    "sdk/gotmpl/src",
    "wit",
];

/// Bytes 4..8 of a WebAssembly file: version and layer. A component has layer 1.
const COMPONENT_PREAMBLE: [u8; 4] = [0x0d, 0x00, 0x01, 0x00];
const CORE_MODULE_PREAMBLE: [u8; 4] = [0x01, 0x00, 0x00, 0x00];

/// Build the plugins for wasm32-wasip2 into target/plugins/.
#[derive(clap::Args, Default)]
pub struct BuildPlugins {
    /// Build with the dev profile: quicker to compile, much slower to run
    /// (the committed built-ins are left alone).
    #[arg(long)]
    pub debug: bool,
    /// Do not update the committed built-ins: check that they are what this
    /// source builds, and fail if not (CI runs this).
    #[arg(long, conflicts_with = "debug")]
    pub check: bool,
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
        if self.check {
            check_builtins(&root, &out_dir)
        } else if self.debug {
            Ok(())
        } else {
            commit_builtins(&root, &out_dir)
        }
    }
}

/// The record of what built the committed built-ins, as `BUILT` holds it.
#[derive(Debug, PartialEq)]
struct Built {
    /// `rustc -V` of the compiler.
    rustc: String,
    /// `sha256:<hex>` of [`SOURCES`].
    sources: String,
}

impl Built {
    const HEADER: &str = "# Written by `cargo xtask build-plugins`; checked by `cargo xtask build-plugins --check`.\n\
        # The built-ins beside this file were built by this rustc from sources with this hash.\n";

    fn here(root: &Path) -> anyhow::Result<Built> {
        Ok(Built {
            rustc: rustc_version(root)?,
            sources: sources_hash(root)?,
        })
    }

    fn render(&self) -> String {
        format!(
            "{}rustc: {}\nsources: {}\n",
            Self::HEADER,
            self.rustc,
            self.sources
        )
    }

    fn parse(text: &str) -> Option<Built> {
        let field = |key: &str| {
            text.lines()
                .find_map(|line| line.strip_prefix(key))
                .map(|value| value.trim().to_owned())
        };
        Some(Built {
            rustc: field("rustc:")?,
            sources: field("sources:")?,
        })
    }
}

/// Copies the built-ins from `built` into [`BUILTINS_DIR`] and records what built them.
/// Built from the recorded sources by another rustc, they are left alone: the bytes would
/// change for nothing.
fn commit_builtins(root: &Path, built: &Path) -> anyhow::Result<()> {
    let dir = root.join(BUILTINS_DIR);
    let here = Built::here(root)?;
    if let Some(record) = fs::read_to_string(dir.join("BUILT"))
        .ok()
        .and_then(|text| Built::parse(&text))
        && record.sources == here.sources
        && record.rustc != here.rustc
    {
        println!(
            "built-ins: {BUILTINS_DIR}/ left as committed (same sources, built by `{}`)",
            record.rustc
        );
        return Ok(());
    }
    fs::create_dir_all(&dir).with_context(|| format!("cannot create `{}`", dir.display()))?;
    let mut changed = Vec::new();
    for name in BUILTINS {
        let file = format!("{name}.wasm");
        let bytes = fs::read(built.join(&file))?;
        if install(&dir.join(&file), &bytes)? == "installed" {
            changed.push(file);
        }
    }
    install(&dir.join("BUILT"), here.render().as_bytes())?;
    if !changed.is_empty() {
        println!(
            "the embedded built-ins changed ({}): commit {BUILTINS_DIR}/",
            changed.join(", ")
        );
    }
    Ok(())
}

/// Fails unless the committed built-ins are what the source here builds.
fn check_builtins(root: &Path, built: &Path) -> anyhow::Result<()> {
    let dir = root.join(BUILTINS_DIR);
    let rebuild = format!("hint: run `cargo xtask build-plugins` and commit {BUILTINS_DIR}/");
    let record = fs::read_to_string(dir.join("BUILT"))
        .ok()
        .and_then(|text| Built::parse(&text))
        .with_context(|| format!("`{BUILTINS_DIR}/BUILT` is missing or unreadable\n{rebuild}"))?;
    let here = Built::here(root)?;
    ensure!(
        record.sources == here.sources,
        "the built-ins in {BUILTINS_DIR}/ were built from other sources than {} hold now\n{rebuild}",
        SOURCES.join(", ")
    );
    if record.rustc != here.rustc {
        println!(
            "built-ins: sources match; bytes not compared (built by `{}`, this is `{}`)",
            record.rustc, here.rustc
        );
        return Ok(());
    }
    let differ: Vec<&str> = BUILTINS
        .iter()
        .copied()
        .filter(|name| {
            let file = format!("{name}.wasm");
            fs::read(dir.join(&file)).ok() != fs::read(built.join(&file)).ok()
        })
        .collect();
    ensure!(
        differ.is_empty(),
        "the committed built-ins {} differ from what their source builds with the same rustc\n{rebuild}",
        differ.join(", ")
    );
    println!("built-ins: {BUILTINS_DIR}/ is byte for byte what this source builds");
    Ok(())
}

/// `rustc -V`, e.g. `rustc 1.95.0 (59807616e 2026-04-14)`.
fn rustc_version(root: &Path) -> anyhow::Result<String> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let output = Command::new(&rustc)
        .arg("-V")
        .current_dir(root)
        .output()
        .with_context(|| format!("cannot run `{rustc}`"))?;
    ensure!(output.status.success(), "`{rustc} -V` failed");
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// `sha256:<hex>` over the path and content of every file of [`SOURCES`], in path order.
fn sources_hash(root: &Path) -> anyhow::Result<String> {
    let mut files = Vec::new();
    for source in SOURCES {
        collect_files(&root.join(source), &mut files)?;
    }
    files.sort();
    let mut hasher = Sha256::new();
    for file in files {
        let relative = file.strip_prefix(root).unwrap_or(&file);
        // Forward slashes and no CR, so a Windows checkout hashes the same.
        hasher.update(relative.to_string_lossy().replace('\\', "/").as_bytes());
        hasher.update([0]);
        let content =
            fs::read(&file).with_context(|| format!("cannot read `{}`", file.display()))?;
        let content: Vec<u8> = content.into_iter().filter(|b| *b != b'\r').collect();
        hasher.update((content.len() as u64).to_le_bytes());
        hasher.update(&content);
    }
    Ok(format!("sha256:{}", hex::encode(hasher.finalize())))
}

fn collect_files(path: &Path, files: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let metadata =
        fs::metadata(path).with_context(|| format!("cannot read `{}`", path.display()))?;
    if metadata.is_file() {
        files.push(path.to_path_buf());
        return Ok(());
    }
    for entry in fs::read_dir(path).with_context(|| format!("cannot list `{}`", path.display()))? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "target" || name == "testing" {
            continue;
        }
        collect_files(&entry.path(), files)?;
    }
    Ok(())
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
    // Reproducible: the build must not depend on where the checkout is. Cargo
    // hashes the absolute path of a path dependency outside the workspace root
    // (the SDK, `../sdk`) into its crates' symbol names, which changes the
    // code's layout; so the build goes through one fixed path, held for the
    // whole build so that another checkout's build waits.
    let (root, _held) = fixed_path(root)?;
    let root = &root;
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
    // Reproducible: no path of this machine in the components (panic locations
    // name source files), so a clean clone elsewhere builds the same bytes.
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cargo")))
        .context("neither CARGO_HOME nor HOME is set")?;
    let remap = |from: &Path, to: &str| format!("--remap-path-prefix={}={to}", from.display());
    command.env(
        "CARGO_ENCODED_RUSTFLAGS",
        [remap(&cargo_home, "/cargo"), remap(root, "/tazuna")].join("\x1f"),
    );
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

/// A link at a fixed path (`$TMPDIR/tazuna-plugins-src`) to `root`, made anew, and the lock
/// that keeps it pointing there until dropped; `root` itself where links cannot be made.
fn fixed_path(root: &Path) -> anyhow::Result<(PathBuf, Option<fs::File>)> {
    #[cfg(unix)]
    {
        let temp = std::env::temp_dir();
        let lock_path = temp.join("tazuna-plugins-src.lock");
        let lock = fs::File::create(&lock_path)
            .with_context(|| format!("cannot open `{}`", lock_path.display()))?;
        lock.lock()
            .with_context(|| format!("cannot lock `{}`", lock_path.display()))?;
        let link = temp.join("tazuna-plugins-src");
        let staged = temp.join(format!("tazuna-plugins-src.{}", std::process::id()));
        let _ = fs::remove_file(&staged);
        std::os::unix::fs::symlink(root, &staged)
            .with_context(|| format!("cannot link `{}`", staged.display()))?;
        fs::rename(&staged, &link)
            .with_context(|| format!("cannot move a link to `{}`", link.display()))?;
        Ok((link, Some(lock)))
    }
    #[cfg(not(unix))]
    Ok((root.to_path_buf(), None))
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

/// Start building `tazuna` with `profile` (`release`, or `quickstart`) for
/// `target` (the host when `None`), the committed built-ins embedded, in the
/// background; [`finish_cli`] waits for it. The one place the CLI's build
/// command is spelled, for the quickstart, the benchmarks, `dist` and `image`.
pub fn spawn_cli(root: &Path, profile: &'static str, target: Option<&str>) -> anyhow::Result<Cli> {
    let mut build = crate::shell::cargo(root);
    build.args([
        "build",
        "--profile",
        profile,
        "--locked",
        "--package",
        "tazuna",
        "--bin",
        "tazuna",
    ]);
    if let Some(target) = target {
        build.args(["--target", target]);
        // ring compiles C for the target: for musl, musl's gcc wrapper.
        if target.ends_with("-linux-musl") {
            let triple = target.replace('-', "_");
            build.env(format!("CC_{triple}"), "musl-gcc");
        }
    }
    let child = build.spawn().context("cannot run cargo")?;
    Ok(Cli {
        child,
        profile,
        target: target.map(str::to_owned),
    })
}

/// A build [`spawn_cli`] started.
pub struct Cli {
    pub child: std::process::Child,
    profile: &'static str,
    target: Option<String>,
}

/// Wait for the build [`spawn_cli`] started; the binary.
pub fn finish_cli(root: &Path, mut build: Cli) -> anyhow::Result<PathBuf> {
    let status = build.child.wait().context("cannot wait for cargo")?;
    ensure!(
        status.success(),
        "`cargo build --profile {} --bin tazuna` exited with {status}",
        build.profile
    );
    let mut dir = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), |dir| root.join(dir));
    if let Some(target) = &build.target {
        dir.push(target);
    }
    let exe = if build
        .target
        .as_deref()
        .is_some_and(|t| t.contains("windows"))
    {
        "tazuna.exe"
    } else {
        "tazuna"
    };
    Ok(dir.join(build.profile).join(exe))
}

/// Build the release `tazuna` for `target` (the host when `None`), with the
/// committed built-ins embedded; the binary's path.
pub fn release_cli(root: &Path, target: Option<&str>) -> anyhow::Result<PathBuf> {
    finish_cli(root, spawn_cli(root, "release", target)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_ins_built_are_those_committed_for_the_registry() {
        // The plugin host's registry is checked against the same directory.
        let dir = crate::shell::root().join(BUILTINS_DIR);
        let mut committed: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|entry| {
                let name = entry.unwrap().file_name().into_string().unwrap();
                name.strip_suffix(".wasm").map(str::to_owned)
            })
            .collect();
        committed.sort_unstable();
        let mut built = BUILTINS.to_vec();
        built.sort_unstable();
        assert_eq!(committed, built);
        for name in BUILTINS {
            assert!(PLUGINS.iter().any(|(_, short)| short == name), "{name}");
        }
    }

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
