//! `tazuna plugin`: the plugins that render manifests.

use std::process::ExitCode;

use crate::report::OutputFormat;
use clap::Subcommand;
use tazuna_core::config::PluginSource;
use tazuna_engine::distribution::{self, Resolve};
use tazuna_engine::host::{
    Grants, PluginHost, PluginInfo, RESOLVER_WORLD, ResolverPlugin, SOURCE_WORLD, SourcePlugin,
};
use tazuna_engine::plugins::{BUILTIN_RESOLVERS, BUILTINS, PluginSet, Role};
use tazuna_engine::stack::Writes;

use super::scaffold::NewPlugin;
use crate::failure::{self, Reported};
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
        anyhow::bail!(
            "`{}` is not a WebAssembly component\nhint: build the plugin for wasm32-wasip2 (`cargo build --target wasm32-wasip2 --release`)",
            path.display()
        );
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
            Err(_) => anyhow::bail!(
                "{not_a_source}\nhint: a plugin targets `{SOURCE_WORLD}` or `{RESOLVER_WORLD}`; build it with tazuna-sdk"
            ),
        },
    }
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

/// What `plugin inspect` found out, from either a registry or a file.
struct Inspection {
    reference: String,
    name: Option<String>,
    version: Option<String>,
    description: Option<String>,
    world: Option<String>,
    capabilities: Option<Vec<String>>,
    manifest_digest: Option<String>,
    component_digest: Option<String>,
    component_size: Option<i64>,
    imports: Option<Vec<String>>,
    exports: Option<Vec<String>>,
    /// Why a field is unknown, by field.
    unknown: Vec<(&'static str, String)>,
}

fn inspect(settings: &GlobalSettings, reference: &str) -> anyhow::Result<ExitCode> {
    let found = match reference.strip_prefix("oci://") {
        Some(target) => inspect_oci(target)?,
        None => inspect_file(settings, reference)?,
    };
    match settings.output {
        OutputFormat::Json => {
            let unknown: serde_json::Map<String, serde_json::Value> = found
                .unknown
                .iter()
                .map(|(field, why)| ((*field).to_owned(), why.clone().into()))
                .collect();
            let report = serde_json::json!({
                "reference": found.reference,
                "name": found.name,
                "version": found.version,
                "description": found.description,
                "world": found.world,
                "requestedCapabilities": found.capabilities,
                "manifestDigest": found.manifest_digest,
                "componentDigest": found.component_digest,
                "componentSize": found.component_size,
                "imports": found.imports,
                "exports": found.exports,
                "unknown": unknown,
            });
            outln!("{}", serde_json::to_string_pretty(&report)?);
        }
        OutputFormat::Text => {
            let shown = |field: &str, value: Option<String>| {
                Some(value.unwrap_or_else(|| {
                    found
                        .unknown
                        .iter()
                        .find(|(f, _)| *f == field)
                        .map_or_else(|| "none".to_owned(), |(_, why)| format!("unknown ({why})"))
                }))
            };
            let list = |items: &Option<Vec<String>>| {
                items.as_ref().map(|items| {
                    if items.is_empty() {
                        "none".to_owned()
                    } else {
                        items.join(", ")
                    }
                })
            };
            let component =
                found
                    .component_digest
                    .clone()
                    .map(|digest| match found.component_size {
                        Some(size) => format!("{digest} ({size} bytes)"),
                        None => digest,
                    });
            let rows = [
                ("reference", Some(found.reference.clone())),
                ("name", shown("name", found.name.clone())),
                ("version", shown("version", found.version.clone())),
                (
                    "description",
                    found.description.clone().filter(|d| !d.is_empty()),
                ),
                ("world", shown("world", found.world.clone())),
                (
                    "capabilities",
                    shown("capabilities", list(&found.capabilities)),
                ),
                ("manifest", shown("manifest", found.manifest_digest.clone())),
                ("component", shown("component", component)),
                ("imports", list(&found.imports)),
                ("exports", list(&found.exports)),
            ];
            for (field, value) in rows {
                if let Some(value) = value {
                    outln!("{:<13} {value}", format!("{field}:"));
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn inspect_oci(target: &str) -> anyhow::Result<Inspection> {
    let found = tazuna_engine::stack::block_on(distribution::inspect(target))?;
    let annotations = &found.annotations;
    let not_annotated = |key: &str| {
        format!("no `{key}` annotation: the artifact was not pushed by `tazuna plugin push`")
    };
    let mut unknown = Vec::new();
    if annotations.name.is_none() {
        unknown.push(("name", not_annotated(distribution::TITLE_ANNOTATION)));
    }
    if annotations.version.is_none() {
        let source = distribution::Source::parse("plugin", target)?;
        let tag = source
            .tag
            .map(|tag| format!("; it is tagged `{tag}`"))
            .unwrap_or_default();
        unknown.push((
            "version",
            format!("{}{tag}", not_annotated(distribution::VERSION_ANNOTATION)),
        ));
    }
    let world = found.world();
    if world.is_none() {
        unknown.push((
            "world",
            "no annotation, and the config blob names no Tazuna interface among the exports"
                .to_owned(),
        ));
    }
    if annotations.capabilities.is_none() {
        unknown.push((
            "capabilities",
            not_annotated(distribution::CAPABILITIES_ANNOTATION),
        ));
    }
    let component = found.component();
    if component.is_none() {
        unknown.push((
            "component",
            format!(
                "the manifest has {} layers and not exactly one `application/wasm` layer",
                found.layers.len()
            ),
        ));
    }
    let described = found.config.as_ref().and_then(|c| c.component.as_ref());
    Ok(Inspection {
        reference: found.reference.clone(),
        name: annotations.name.clone(),
        version: annotations.version.clone(),
        description: annotations.description.clone(),
        world,
        capabilities: annotations.capabilities.clone(),
        manifest_digest: Some(found.manifest_digest.clone()),
        component_digest: component.map(|layer| layer.digest.clone()),
        component_size: component.map(|layer| layer.size),
        imports: described.map(|c| c.imports.clone()),
        exports: described.map(|c| c.exports.clone()),
        unknown,
    })
}

fn inspect_file(settings: &GlobalSettings, reference: &str) -> anyhow::Result<Inspection> {
    let path = std::path::Path::new(reference.strip_prefix("file://").unwrap_or(reference));
    let (label, bytes) = read_component(path)?;
    let host = PluginHost::new(settings.host.clone())?;
    let (info, world) = describe(&host, &label, &bytes)?;
    Ok(Inspection {
        reference: format!("file://{}", path.display()),
        name: Some(info.name),
        version: Some(info.version),
        description: Some(info.description),
        world: Some(world.to_owned()),
        capabilities: Some(info.capabilities),
        manifest_digest: None,
        component_digest: Some(distribution::sha256(&bytes)),
        component_size: i64::try_from(bytes.len()).ok(),
        imports: None,
        exports: None,
        unknown: vec![(
            "manifest",
            "a local file has no OCI manifest until `tazuna plugin push`".to_owned(),
        )],
    })
}

/// What `plugin run` renders, from its flags.
#[derive(Debug, clap::Args)]
pub struct RunPlugin {
    /// The component file (`.wasm`, or `file://<path>`).
    component: String,
    /// The config block: JSON or YAML, or `@<file>` to read it from a file.
    #[arg(long, value_name = "JSON|@FILE", default_value = "{}")]
    config: String,
    /// The manifest's name (default: the plugin's name).
    #[arg(long)]
    name: Option<String>,
    /// The manifest directory, which the plugin reads (read-only) as its
    /// working directory.
    #[arg(long, value_name = "DIR", default_value = ".")]
    dir: std::path::PathBuf,
    /// The manifest's `path`, relative to `--dir`.
    #[arg(long)]
    path: Option<String>,
    /// The manifest's default namespace.
    #[arg(long, short = 'n')]
    namespace: Option<String>,
    /// The environment's `values`: JSON or YAML, or `@<file>`.
    #[arg(long, value_name = "JSON|@FILE")]
    values: Option<String>,
    /// Grant a capability the plugin requests (`exec:helm`, `network`,
    /// `secrets:exec`, …); repeat it for several. Default: none.
    #[arg(long = "grant", value_name = "CAPABILITY")]
    grants: Vec<String>,
}

/// `text`, or the file `@text` names, as JSON (or YAML).
fn json_argument(flag: &str, text: &str) -> anyhow::Result<serde_json::Value> {
    let (from, text) = match text.strip_prefix('@') {
        Some(file) => (
            format!("`{file}`"),
            std::fs::read_to_string(file)
                .map_err(|e| anyhow::anyhow!("{flag}: cannot read `{file}`: {e}"))?,
        ),
        None => ("the argument".to_owned(), text.to_owned()),
    };
    let value: serde_json::Value = serde_yaml::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "{flag}: {from} is neither JSON nor YAML: {e}\nhint: quote it for the shell, as in `{flag} '{{\"key\": \"value\"}}'`, or write `{flag} @config.yaml`"
        )
    })?;
    if !value.is_object() {
        anyhow::bail!(
            "{flag}: {from} is not a mapping\nhint: it is the block under `<type>:` in tazuna.yaml, as in `{flag} '{{\"key\": \"value\"}}'`"
        );
    }
    Ok(value)
}

fn run(settings: &GlobalSettings, plan: &RunPlugin) -> anyhow::Result<ExitCode> {
    use tazuna_core::hint::Hint;
    use tazuna_engine::host::{RenderRequest, Severity};
    use tazuna_engine::render::RenderError;

    let config = json_argument("--config", &plan.config)?;
    let values = match &plan.values {
        Some(values) => json_argument("--values", values)?,
        None => serde_json::json!({}),
    };
    if !plan.dir.is_dir() {
        anyhow::bail!(
            "`{}` is not a directory\nhint: `--dir` is the manifest directory the plugin reads, where tazuna.yaml would be",
            plan.dir.display()
        );
    }
    let component = std::path::Path::new(
        plan.component
            .strip_prefix("file://")
            .unwrap_or(&plan.component),
    );
    let (label, bytes) = read_component(component)?;
    let host = PluginHost::new(settings.host.clone())?;
    let plugin = match host.load_source(&label, &bytes, Grants::List(&plan.grants)) {
        Ok(plugin) => plugin,
        Err(not_a_source) => {
            if host
                .load_resolver(&label, &bytes, Grants::List(&[]))
                .is_ok()
            {
                anyhow::bail!(
                    "`{}` is a secret resolver, and `plugin run` renders with source plugins\nhint: declare it in spec.plugins and name it as a provider's `type`; `tazuna plugin inspect` shows what it is",
                    component.display()
                );
            }
            anyhow::bail!(
                "{not_a_source}\nhint: a plugin targets `{SOURCE_WORLD}`; build it with tazuna-sdk"
            );
        }
    };
    let info = plugin.info().clone();
    let granted: Vec<&str> = plugin.capabilities().iter().collect();
    let shown = |list: &[&str]| {
        if list.is_empty() {
            "none".to_owned()
        } else {
            list.join(", ")
        }
    };
    let requested: Vec<&str> = info.capabilities.iter().map(String::as_str).collect();
    eprintln!(
        "plugin `{}` {}: requests {}; granted {}",
        info.name,
        info.version,
        shown(&requested),
        shown(&granted)
    );
    let manifest = plan.name.clone().unwrap_or_else(|| info.name.clone());
    let print_diagnostics = |diagnostics: &[tazuna_engine::host::Diagnostic]| {
        for diagnostic in diagnostics {
            let label = match diagnostic.severity {
                Severity::Error => "error:",
                Severity::Warning => "warning:",
                Severity::Info => "info:",
            };
            let at = diagnostic
                .path
                .as_deref()
                .map(|path| format!(" (at `{path}`)"))
                .unwrap_or_default();
            eprintln!(
                "{}",
                failure::paint(
                    &format!("{label} {}{at}", diagnostic.message),
                    settings.stderr_color
                )
            );
        }
    };

    let found = host.validate(&plugin, &config.to_string())?;
    print_diagnostics(&found);
    if found.iter().any(|d| matches!(d.severity, Severity::Error)) {
        eprintln!(
            "{}",
            failure::paint(
                &format!(
                    "error: manifest `{manifest}`: plugin `{}` finds the config invalid; nothing was rendered\nhint: fix the config at the paths named above; the plugin's config type says what it accepts",
                    info.name
                ),
                settings.stderr_color
            )
        );
        return Err(Reported.into());
    }

    let request = RenderRequest {
        manifest_name: manifest.clone(),
        path: plan.path.clone(),
        config: config.to_string(),
        namespace: plan.namespace.clone(),
        environment: settings.environment.clone(),
        values: values.to_string(),
        cluster: None,
        locked: None,
        workdir: String::new(),
        scratch: String::new(),
    };
    let failed = |error: RenderError, extra: Option<String>| {
        let hint = error
            .hint()
            .or(extra)
            .map(|hint| format!("\nhint: {hint}"))
            .unwrap_or_default();
        eprintln!(
            "{}",
            failure::paint(&format!("error: {error}{hint}"), settings.stderr_color)
        );
        Reported
    };
    let output = match host.render(&plugin, &plan.dir, request) {
        Err(error) => {
            return Err(failed(RenderError::Host { manifest, error }, None).into());
        }
        Ok(Err(error)) => {
            let hint = match &error {
                tazuna_engine::host::PluginError::CapabilityDenied(_) => Some(format!(
                    "grant what it needs with `--grant <capability>` (it requests: {}); in tazuna.yaml that is `spec.plugins[].grants`",
                    shown(&requested)
                )),
                _ => None,
            };
            return Err(failed(
                RenderError::Plugin {
                    manifest,
                    plugin: info.name.clone(),
                    error,
                },
                hint,
            )
            .into());
        }
        Ok(Ok((output, _revealed))) => output,
    };
    print_diagnostics(&output.diagnostics);
    let mut objects = Vec::with_capacity(output.manifests.len());
    for document in &output.manifests {
        let object: serde_json::Value = serde_yaml::from_str(&document.content).map_err(|e| {
            anyhow::anyhow!(
                "manifest `{manifest}`: plugin `{}` returned a document that is not YAML: {e}\nhint: each `Manifest` the plugin returns holds one Kubernetes object",
                info.name
            )
        })?;
        objects.push((document.origin.clone(), object));
    }
    match settings.output {
        OutputFormat::Json => {
            let list = serde_json::json!({
                "apiVersion": "v1",
                "kind": "List",
                "items": objects.iter().map(|(_, object)| object).collect::<Vec<_>>(),
            });
            outln!("{}", serde_json::to_string_pretty(&list)?);
        }
        OutputFormat::Text => {
            for (origin, object) in &objects {
                let source = match origin {
                    Some(origin) => format!("{manifest}/{origin}"),
                    None => manifest.clone(),
                };
                outln!(
                    "---\n# Source: {source}\n{}",
                    serde_yaml::to_string(object)?.trim_end()
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
