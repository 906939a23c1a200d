//! `tazuna plugin`: the plugins that render manifests.

use std::process::ExitCode;

use clap::Subcommand;
use tazuna_core::config::PluginSource;
use tazuna_engine::distribution::{self, Resolve};
use tazuna_engine::host::{Grants, PluginHost, PluginInfo, RESOLVER_WORLD, SOURCE_WORLD};
use tazuna_engine::plugins::Role;
use tazuna_engine::stack::Writes;

use super::scaffold::NewPlugin;
use crate::settings::GlobalSettings;

mod inspect;
mod list;
mod run;

use inspect::inspect;
use list::list;
pub use run::RunPlugin;
use run::run;

/// Inspect, pin, publish and start plugins.
#[derive(Debug, Subcommand)]
pub enum Plugin {
    /// List the built-in plugins (sources and secret resolvers) and those
    /// declared in `spec.plugins`, with their version, WIT world and the
    /// capabilities in effect.
    ///
    /// Built-ins are WebAssembly components embedded in the binary; they carry
    /// their own grants. A declared plugin gets only what `grants` allows.
    /// `oci://` plugins are loaded by their pins in tazuna.lock (pinned first
    /// if they have none).
    List,
    /// Resolve `oci://` plugins again and rewrite their pins in tazuna.lock.
    ///
    /// Each named plugin (all `oci://` plugins without names) is resolved from
    /// its `source` and `version` as if it had no pin: the source's digest or
    /// tag, else the newest semver tag that satisfies `version`. The new pin
    /// must still satisfy `version` and ask for no capability beyond `grants`.
    /// Commit tazuna.lock afterwards.
    ///
    /// Example: `tazuna plugin update configmap`
    Update {
        /// Plugins to update (default: every `oci://` plugin).
        names: Vec<String>,
    },
    /// Publish a plugin component to an OCI registry, in the CNCF Wasm layout
    /// (config `application/vnd.wasm.config.v0+json`, one `application/wasm`
    /// layer), and print its manifest digest.
    ///
    /// Registries on a loopback address are reached over plain HTTP; others
    /// over HTTPS, with credentials from the docker config (`docker login`).
    ///
    /// The tag is the version the component reports: left out, it is added;
    /// given, it must be that version (a leading `v` aside), since Tazuna
    /// pins plugins by their tags and checks what it pulls against them.
    ///
    /// Example: `tazuna plugin push target/wasm32-wasip2/release/configmap.wasm
    /// oci://ghcr.io/acme/tazuna-configmap`
    Push {
        /// The component file (`.wasm`, built for wasm32-wasip2).
        component: std::path::PathBuf,
        /// Where to: `oci://<registry>/<repository>[:<version>]`.
        reference: String,
    },
    /// Show what a plugin is without running it: its name, version, WIT
    /// world, the capabilities it requests, and its digests.
    ///
    /// For `oci://host/repo[:tag][@sha256:…]` only the OCI manifest and its
    /// config blob are read, never the component: the version, world and
    /// capabilities come from the annotations `tazuna plugin push` writes
    /// (`org.opencontainers.image.version`, `dev.tazuna.plugin.world`,
    /// `dev.tazuna.plugin.capabilities`); for an artifact another tool
    /// pushed, what its config blob says is shown and the rest is unknown.
    /// The manifest digest is what `digest:` in tazuna.yaml and the pins in
    /// tazuna.lock hold. A `file://` or plain path is loaded and described.
    ///
    /// Example: `tazuna plugin inspect oci://ghcr.io/acme/tazuna-configmap:0.1.0 -o json`
    Inspect {
        /// `oci://<registry>/<repository>[:<tag>][@sha256:<digest>]`, or a
        /// component file (`file://<path>` or a path).
        reference: String,
    },
    /// Render one config with a plugin file, without tazuna.yaml or a
    /// cluster: the loop for developing a plugin.
    ///
    /// The config is the manifest's per-type block (what sits under
    /// `<type>:` in tazuna.yaml), as JSON or YAML, inline or `@file`. It is
    /// validated, then rendered; the objects go to stdout (YAML, or one
    /// `v1/List` with `-o json`), the plugin's diagnostics to stderr. The
    /// plugin gets only the capabilities `--grant` gives (the strings
    /// `spec.plugins[].grants` takes), so a capability it needs and is not
    /// granted shows up as the error a user would see. `-e` is the
    /// environment the request names.
    ///
    /// Example: `tazuna plugin run target/wasm32-wasip2/release/tazuna_plugin_greeter.wasm
    /// --config '{"data": {"LOG_LEVEL": "debug"}}' --namespace demo`
    Run(RunPlugin),
    /// Start a new plugin: a Rust crate from the SDK's template that builds
    /// into a component as it is.
    ///
    /// The directory's name is the plugin's name, the manifest `type` (or,
    /// with `--resolver`, the provider `type`) it serves. The crate holds a
    /// working plugin to change: a source that renders a ConfigMap from its
    /// config, or a resolver that reads a JSON file beside tazuna.yaml, with a
    /// unit test, and a README that shows how to build, declare and push it.
    ///
    /// The crate needs only Rust and crates.io: it depends on `tazuna-sdk`
    /// by this Tazuna's version, and until the SDK is on crates.io a copy of
    /// it, embedded in this binary, is written to `vendor/tazuna-sdk/` with a
    /// `[patch.crates-io]` entry pointing there.
    ///
    /// Example: `tazuna plugin new plugins/vault --resolver`, then
    /// `cargo build --release --target wasm32-wasip2` in it.
    New {
        /// The directory to create (it must not exist, or be empty).
        dir: std::path::PathBuf,
        /// A secret resolver (`secret-resolver-plugin` world) instead of a
        /// source plugin.
        #[arg(long)]
        resolver: bool,
        /// Depend on the SDK of a local Tazuna checkout (its `sdk/`
        /// directory) instead of writing the embedded copy to `vendor/`.
        #[arg(long, value_name = "DIR")]
        sdk_path: Option<std::path::PathBuf>,
    },
}

impl Plugin {
    /// Run the subcommand.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        match self {
            Self::List => list(settings),
            Self::Update { names } => update(settings, &names),
            Self::Push {
                component,
                reference,
            } => push(settings, &component, &reference),
            Self::Inspect { reference } => inspect(settings, &reference),
            Self::Run(plan) => run(settings, &plan),
            Self::New {
                dir,
                resolver,
                sdk_path,
            } => new(NewPlugin {
                dir,
                resolver,
                sdk_path,
            }),
        }
    }
}

fn update(settings: &GlobalSettings, names: &[String]) -> anyhow::Result<ExitCode> {
    let stack = crate::commands::open(settings, Writes::Persist)?;
    let config = stack.config();
    let oci: Vec<&str> = config
        .spec
        .plugins
        .iter()
        .filter(|d| matches!(d.source, PluginSource::Oci { .. }))
        .map(|d| d.name.as_str())
        .collect();
    for name in names {
        if !oci.contains(&name.as_str()) {
            return Err(crate::failure::advised(
                format!(
                    "`{name}` is not an `oci://` plugin of {}",
                    settings.file.display()
                ),
                format!(
                    "the `oci://` plugins are: {}",
                    if oci.is_empty() {
                        "none".to_owned()
                    } else {
                        oci.join(", ")
                    }
                ),
            ));
        }
    }
    let roles = stack.declared_roles();
    let wanted: Vec<(&str, Role)> = roles
        .into_iter()
        .filter(|(name, _)| {
            oci.contains(name) && (names.is_empty() || names.iter().any(|n| n == name))
        })
        .collect();
    let types: Vec<&str> = wanted.iter().map(|(name, _)| *name).collect();
    if types.is_empty() {
        outln!(
            "no `oci://` plugins in {}; nothing to update",
            settings.file.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let lock_path = settings
        .lock_file
        .clone()
        .unwrap_or_else(|| tazuna_core::lock::Lockfile::path_for(&settings.file));
    let before = tazuna_core::lock::Lockfile::load(&lock_path)?.plugins;
    let host = PluginHost::new(settings.host.clone())?;
    stack.plugin_set(&host, &wanted, Resolve::Again)?;
    let after = tazuna_core::lock::Lockfile::load(&lock_path)?.plugins;
    for name in &types {
        let Some(pin) = after.get(*name) else {
            continue;
        };
        let now = format!("{} ({})", pin.version, short(&pin.manifest_digest));
        match before.get(*name) {
            Some(was) if was == pin => outln!("{name}: {now} (unchanged)"),
            Some(was) => outln!(
                "{name}: {} ({}) -> {now}",
                was.version,
                short(&was.manifest_digest)
            ),
            None => outln!("{name}: {now} (new)"),
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn new(plan: NewPlugin) -> anyhow::Result<ExitCode> {
    let files = super::scaffold::create(&plan)?;
    let dir = plan.dir.display();
    outln!(
        "created {} `{}` in {dir}: {}",
        if plan.resolver {
            "secret resolver"
        } else {
            "source plugin"
        },
        plan.dir
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        files.join(", ")
    );
    outln!(
        "next:\n  cd {dir} && cargo test\n  cargo build --release --target wasm32-wasip2\n  then declare it in spec.plugins (see src/lib.rs)"
    );
    Ok(ExitCode::SUCCESS)
}

/// `sha256:` and the first 12 hex digits.
fn short(digest: &str) -> &str {
    &digest[..digest.len().min("sha256:".len() + 12)]
}

fn push(
    settings: &GlobalSettings,
    component: &std::path::Path,
    reference: &str,
) -> anyhow::Result<ExitCode> {
    let Some(target) = reference.strip_prefix("oci://") else {
        return Err(crate::failure::advised(
            format!("`{reference}` is not an `oci://` reference"),
            "write `oci://<registry>/<repository>:<version>`",
        ));
    };
    // Load it first: a component that is not a Tazuna plugin is not published.
    let (name, bytes) = read_component(component)?;
    let host = PluginHost::new(settings.host.clone())?;
    let (info, world) = describe(&host, &name, &bytes)?;
    let target = tagged(target, &info.name, &info.version)?;
    // What `plugin inspect` reads back without pulling the component.
    let annotations = distribution::PluginAnnotations {
        name: Some(info.name.clone()),
        version: Some(info.version.clone()),
        description: Some(info.description.clone()).filter(|d| !d.is_empty()),
        world: Some(world.to_owned()),
        capabilities: Some(info.capabilities.clone()),
    };
    let digest = tazuna_engine::stack::block_on(distribution::push(
        &info.name,
        component,
        &target,
        &annotations,
    ))?;
    outln!(
        "pushed {} {} to oci://{target}\ndigest: {digest}",
        info.name,
        info.version
    );
    Ok(ExitCode::SUCCESS)
}

/// The bytes of the component file at `path`, and a label for it until it
/// has told its name (the file's stem).
fn read_component(path: &std::path::Path) -> anyhow::Result<(String, Vec<u8>)> {
    let bytes = std::fs::read(path)
        .map_err(|e| anyhow::anyhow!("cannot read `{}`: {e}", path.display()))?;
    // A component's preamble: the wasm magic, then version 0x0d and layer 1.
    if !bytes.starts_with(b"\0asm\x0d\0\x01\0") {
        return Err(crate::failure::advised(
            format!("`{}` is not a WebAssembly component", path.display()),
            "build the plugin for wasm32-wasip2 (`cargo build --target wasm32-wasip2 --release`)",
        ));
    }
    let label = path.file_stem().map_or_else(
        || "plugin".to_owned(),
        |stem| stem.to_string_lossy().into_owned(),
    );
    Ok((label, bytes))
}

/// What the component says about itself, and the world it was loaded as:
/// a source plugin or a secret resolver.
fn describe(
    host: &PluginHost,
    label: &str,
    bytes: &[u8],
) -> anyhow::Result<(PluginInfo, &'static str)> {
    match host.load_source(label, bytes, Grants::List(&[])) {
        Ok(plugin) => Ok((plugin.info().clone(), SOURCE_WORLD)),
        Err(not_a_source) => match host.load_resolver(label, bytes, Grants::List(&[])) {
            Ok(resolver) => Ok((resolver.info().clone(), RESOLVER_WORLD)),
            Err(_) => Err(crate::failure::advised(
                not_a_source.to_string(),
                format!(
                    "a plugin targets `{SOURCE_WORLD}` or `{RESOLVER_WORLD}`; build it with tazuna-sdk"
                ),
            )),
        },
    }
}

/// `target` with the tag `version`: added when it has none, and an error
/// when it has another.
fn tagged(target: &str, name: &str, version: &str) -> anyhow::Result<String> {
    let source = distribution::Source::parse(name, target)?;
    if source.digest.is_some() {
        return Err(crate::failure::advised(
            format!(
                "`oci://{target}` names a digest; a push names a repository and the tag to create"
            ),
            format!(
                "write `oci://<registry>/<repository>`; the tag is the plugin's version, {version}"
            ),
        ));
    }
    match &source.tag {
        None => Ok(format!("{target}:{version}")),
        Some(tag) if tag == version || tag.strip_prefix('v') == Some(version) => {
            Ok(target.to_owned())
        }
        Some(tag) => Err(crate::failure::advised(
            format!(
                "plugin `{name}` is version {version}, and the tag is `{tag}`: a plugin's tag must be its version, or pins of it fail later"
            ),
            format!(
                "push it as `oci://{}:{version}` (or leave the tag out), or change the version in its Cargo.toml",
                source.repository_url().trim_start_matches("oci://")
            ),
        )),
    }
}
