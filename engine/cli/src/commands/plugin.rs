//! `tazuna plugin`: the plugins that render manifests.

use std::process::ExitCode;

use crate::report::OutputFormat;
use clap::Subcommand;
use tazuna_core::config::PluginSource;
use tazuna_engine::distribution::{self, Resolve};
use tazuna_engine::host::{
    Grants, PluginHost, RESOLVER_WORLD, ResolverPlugin, SOURCE_WORLD, SourcePlugin,
};
use tazuna_engine::plugins::{BUILTIN_RESOLVERS, BUILTINS, PluginSet, Role};
use tazuna_engine::stack::Writes;

use super::scaffold::NewPlugin;
use crate::settings::GlobalSettings;

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
    /// Start a new plugin: a Rust crate from the SDK's template that builds
    /// into a component as it is.
    ///
    /// The directory's name is the plugin's name, the manifest `type` (or,
    /// with `--resolver`, the provider `type`) it serves. The crate holds a
    /// working plugin to change: a source that renders a ConfigMap from its
    /// config, or a resolver that reads a JSON file beside tazuna.yaml, with a
    /// unit test, and a README that shows how to build, declare and push it.
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
        /// directory) instead of Tazuna's repository at this version's tag.
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
    let stack = super::open(settings, Writes::Persist)?;
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
    let lock_path = tazuna_core::lock::Lockfile::path_for(&settings.file);
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
    // Either world: a source plugin or a secret resolver.
    let info = match host.load_source(&name, &bytes, Grants::List(&[])) {
        Ok(plugin) => plugin.info().clone(),
        Err(not_a_source) => match host.load_resolver(&name, &bytes, Grants::List(&[])) {
            Ok(resolver) => resolver.info().clone(),
            Err(_) => anyhow::bail!(
                "{not_a_source}\nhint: a plugin targets `{SOURCE_WORLD}` or `{RESOLVER_WORLD}`; build it with tazuna-sdk"
            ),
        },
    };
    let target = tagged(target, &info.name, &info.version)?;
    let digest =
        tazuna_engine::stack::block_on(distribution::push(&info.name, component, &target))?;
    outln!(
        "pushed {} {} to oci://{target}\ndigest: {digest}",
        info.name,
        info.version
    );
    Ok(ExitCode::SUCCESS)
}

/// `target` with the tag `version`: added when it has none, and an error
/// when it has another.
fn tagged(target: &str, name: &str, version: &str) -> anyhow::Result<String> {
    let source = distribution::Source::parse(name, target)?;
    if source.digest.is_some() {
        anyhow::bail!(
            "`oci://{target}` names a digest; a push names a repository and the tag to create\nhint: write `oci://<registry>/<repository>`; the tag is the plugin's version, {version}"
        );
    }
    match &source.tag {
        None => Ok(format!("{target}:{version}")),
        Some(tag) if tag == version || tag.strip_prefix('v') == Some(version) => {
            Ok(target.to_owned())
        }
        Some(tag) => anyhow::bail!(
            "plugin `{name}` is version {version}, and the tag is `{tag}`: a plugin's tag must be its version, or pins of it fail later\nhint: push it as `oci://{}:{version}` (or leave the tag out), or change the version in its Cargo.toml",
            source.repository_url().trim_start_matches("oci://")
        ),
    }
}

/// One line of `plugin list`.
struct Row {
    name: String,
    version: String,
    description: String,
    world: &'static str,
    source: String,
    digest: String,
    requested: Vec<String>,
    capabilities: Vec<String>,
}

impl Row {
    fn source(source: String, plugin: &SourcePlugin) -> Self {
        let info = plugin.info();
        Self {
            name: info.name.clone(),
            version: info.version.clone(),
            description: info.description.clone(),
            world: SOURCE_WORLD,
            source,
            digest: plugin.digest().to_owned(),
            requested: info.capabilities.clone(),
            capabilities: plugin.capabilities().iter().map(str::to_owned).collect(),
        }
    }

    fn resolver(source: String, resolver: &ResolverPlugin) -> Self {
        let info = resolver.info();
        Self {
            name: info.name.clone(),
            version: info.version.clone(),
            description: info.description.clone(),
            world: RESOLVER_WORLD,
            source,
            digest: resolver.digest().to_owned(),
            requested: info.capabilities.clone(),
            capabilities: resolver.capabilities().iter().map(str::to_owned).collect(),
        }
    }
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
        let stack = super::open(settings, Writes::Persist)?;
        let declared = stack.config().spec.plugins.clone();
        let wanted = stack.declared_roles();
        let set = stack.plugin_set(&host, &wanted, Resolve::Pinned)?;
        (declared, set)
    } else {
        (Vec::new(), PluginSet::default())
    };
    let mut rows: Vec<Row> = builtins
        .iter()
        .map(|p| Row::source("builtin".to_owned(), p))
        .collect();
    for builtin in BUILTIN_RESOLVERS {
        let resolver = host.load_resolver(builtin.name, builtin.component, Grants::Requested)?;
        rows.push(Row::resolver("builtin".to_owned(), &resolver));
    }
    rows.extend(declared.iter().filter_map(|d| {
        let source = match &d.source {
            PluginSource::File { path } => format!("file://{}", path.display()),
            PluginSource::Oci { reference } => format!("oci://{reference}"),
        };
        set.get(&d.name)
            .map(|p| Row::source(source.clone(), p))
            .or_else(|| set.resolver(&d.name).map(|r| Row::resolver(source, r)))
    }));

    match settings.output {
        OutputFormat::Json => {
            let list: Vec<_> = rows
                .iter()
                .map(|row| {
                    serde_json::json!({
                        "name": row.name,
                        "version": row.version,
                        "description": row.description,
                        "world": row.world,
                        "source": row.source,
                        "digest": format!("sha256:{}", row.digest),
                        "requestedCapabilities": row.requested,
                        "capabilities": row.capabilities,
                    })
                })
                .collect();
            outln!("{}", serde_json::to_string_pretty(&list)?);
        }
        OutputFormat::Text => {
            let shown: Vec<String> = rows
                .iter()
                .map(|row| {
                    if row.capabilities.is_empty() {
                        "none".to_owned()
                    } else {
                        row.capabilities.join(", ")
                    }
                })
                .collect();
            let width = |column: &mut dyn Iterator<Item = usize>, header: &str| {
                column.chain([header.len()]).max().unwrap_or_default()
            };
            let name = width(&mut rows.iter().map(|r| r.name.len()), "NAME");
            let world = width(&mut rows.iter().map(|r| r.world.len()), "WORLD");
            let caps = width(&mut shown.iter().map(String::len), "CAPABILITIES");
            outln!(
                "{:<name$}  {:<9} {:<world$}  {:<caps$}  SOURCE",
                "NAME",
                "VERSION",
                "WORLD",
                "CAPABILITIES"
            );
            for (row, capabilities) in rows.iter().zip(&shown) {
                outln!(
                    "{:<name$}  {:<9} {:<world$}  {capabilities:<caps$}  {}",
                    row.name,
                    row.version,
                    row.world,
                    row.source
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
