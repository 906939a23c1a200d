//! `tazuna plugin list`: the built-ins and the file's plugins, with where
//! each comes from and what it may do.

use std::process::ExitCode;

use crate::report::OutputFormat;
use tazuna_core::config::PluginSource;
use tazuna_engine::distribution::Resolve;
use tazuna_engine::host::{
    Grants, PluginHost, RESOLVER_WORLD, ResolverPlugin, SOURCE_WORLD, SourcePlugin,
};
use tazuna_engine::plugins::{BUILTIN_RESOLVERS, BUILTINS, PluginSet};
use tazuna_engine::stack::Writes;

use crate::settings::GlobalSettings;

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

pub(super) fn list(settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
    let host = PluginHost::new(settings.host.clone())?;
    let builtins = BUILTINS
        .iter()
        .map(|b| host.load_source(b.name, b.component, Grants::Requested))
        .collect::<Result<Vec<_>, _>>()?;
    // Declared plugins are listed when the file is there; without one, the
    // built-ins are still worth showing.
    let (declared, set) = if settings.file.exists() {
        let stack = crate::commands::open(settings, Writes::Persist)?;
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
