//! `tazuna plugin`: the plugins that render manifests.

use std::process::ExitCode;

use clap::Subcommand;
use tazuna_core::config::PluginSource;
use tazuna_engine::distribution::{self, Resolve};
use tazuna_engine::host::{Grants, PluginHost, SOURCE_WORLD, SourcePlugin};
use tazuna_engine::plugins::{BUILTINS, PluginSet};
use tazuna_engine::report::OutputFormat;

use crate::settings::GlobalSettings;

/// Inspect, pin and publish the plugins that render manifests.
#[derive(Debug, Subcommand)]
pub enum Plugin {
    /// List the built-in plugins and those declared in `spec.plugins`, with
    /// their version, WIT world and the capabilities in effect.
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
    /// Example: `tazuna plugin push target/wasm32-wasip2/release/configmap.wasm
    /// oci://ghcr.io/acme/tazuna-configmap:0.1.0`
    Push {
        /// The component file (`.wasm`, built for wasm32-wasip2).
        component: std::path::PathBuf,
        /// Where to: `oci://<registry>/<repository>:<version>`.
        reference: String,
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
        }
    }
}

fn update(settings: &GlobalSettings, names: &[String]) -> anyhow::Result<ExitCode> {
    let config = super::load_config(settings)?;
    let oci: Vec<&str> = config
        .spec
        .plugins
        .iter()
        .filter(|d| matches!(d.source, PluginSource::Oci { .. }))
        .map(|d| d.name.as_str())
        .collect();
    for name in names {
        if !oci.contains(&name.as_str()) {
            anyhow::bail!(
                "`{name}` is not an `oci://` plugin of {}\nhint: the `oci://` plugins are: {}",
                settings.file.display(),
                if oci.is_empty() {
                    "none".to_owned()
                } else {
                    oci.join(", ")
                }
            );
        }
    }
    let types: Vec<&str> = if names.is_empty() {
        oci.clone()
    } else {
        names.iter().map(String::as_str).collect()
    };
    if types.is_empty() {
        outln!(
            "no `oci://` plugins in {}; nothing to update",
            settings.file.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let lock_path = tazuna_core::lock::Lockfile::path_for(&settings.file);
    let before = tazuna_core::lock::Lockfile::load(&lock_path)?.plugins;
    super::load_plugin_set(settings, &config, &types, Resolve::Again)?;
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
        anyhow::bail!(
            "`{reference}` is not an `oci://` reference\nhint: write `oci://<registry>/<repository>:<version>`"
        );
    };
    // Load it first: a component that is not a Tazuna plugin is not published.
    let bytes = std::fs::read(component)
        .map_err(|e| anyhow::anyhow!("cannot read `{}`: {e}", component.display()))?;
    // A component's preamble: the wasm magic, then version 0x0d and layer 1.
    if !bytes.starts_with(b"\0asm\x0d\0\x01\0") {
        anyhow::bail!(
            "`{}` is not a WebAssembly component\nhint: build the plugin for wasm32-wasip2 (`cargo build --target wasm32-wasip2 --release`)",
            component.display()
        );
    }
    let host = PluginHost::new(settings.host.clone())?;
    let name = component.file_stem().map_or_else(
        || "plugin".to_owned(),
        |stem| stem.to_string_lossy().into_owned(),
    );
    let plugin = host.load_source(&name, &bytes, Grants::List(&[]))?;
    let digest = super::block_on(distribution::push(&plugin.info().name, component, target))?;
    outln!(
        "pushed {} {} to {reference}\ndigest: {digest}",
        plugin.info().name,
        plugin.info().version
    );
    Ok(ExitCode::SUCCESS)
}

fn list(settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
    let host = PluginHost::new(settings.host.clone())?;
    let builtins = BUILTINS
        .iter()
        .map(|b| host.load_source(b.name, b.component, Grants::Requested))
        .collect::<Result<Vec<_>, _>>()?;
    // Declared plugins are listed when the file is there; without one, the
    // built-ins are still worth showing.
    let (declared, set) = if settings.file.exists() {
        let config = super::load_config(settings)?;
        let declared = config.spec.plugins.clone();
        let names: Vec<&str> = declared.iter().map(|d| d.name.as_str()).collect();
        let (_, set) = super::load_plugin_set(settings, &config, &names, Resolve::Pinned)?;
        (declared, set)
    } else {
        (Vec::new(), PluginSet::default())
    };
    let mut rows: Vec<(String, &SourcePlugin)> =
        builtins.iter().map(|p| ("builtin".to_owned(), p)).collect();
    rows.extend(declared.iter().filter_map(|d| {
        let source = match &d.source {
            PluginSource::File { path } => format!("file://{}", path.display()),
            PluginSource::Oci { reference } => format!("oci://{reference}"),
        };
        set.get(&d.name).map(|p| (source, p))
    }));

    match settings.output {
        OutputFormat::Json => {
            let list: Vec<_> = rows
                .iter()
                .map(|(source, p)| {
                    let info = p.info();
                    serde_json::json!({
                        "name": info.name,
                        "version": info.version,
                        "description": info.description,
                        "world": SOURCE_WORLD,
                        "source": source,
                        "digest": format!("sha256:{}", p.digest()),
                        "requestedCapabilities": info.capabilities,
                        "capabilities": p.capabilities().iter().collect::<Vec<_>>(),
                    })
                })
                .collect();
            outln!("{}", serde_json::to_string_pretty(&list)?);
        }
        OutputFormat::Text => {
            let capabilities: Vec<String> = rows
                .iter()
                .map(|(_, p)| p.capabilities().to_string())
                .collect();
            let width = capabilities
                .iter()
                .map(String::len)
                .chain(["CAPABILITIES".len()])
                .max()
                .unwrap_or_default();
            outln!(
                "{:<12} {:<9} {:<36} {:<width$}  SOURCE",
                "NAME",
                "VERSION",
                "WORLD",
                "CAPABILITIES"
            );
            for ((source, p), capabilities) in rows.iter().zip(&capabilities) {
                let info = p.info();
                outln!(
                    "{:<12} {:<9} {:<36} {capabilities:<width$}  {source}",
                    info.name,
                    info.version,
                    SOURCE_WORLD,
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
