//! `tazuna plugin`: the plugins that render manifests.

use std::process::ExitCode;

use clap::Subcommand;
use tazuna_core::config::PluginSource;
use tazuna_engine::host::{Grants, PluginHost, SOURCE_WORLD, SourcePlugin};
use tazuna_engine::plugins::{BUILTINS, PluginSet};
use tazuna_engine::report::OutputFormat;

use crate::settings::GlobalSettings;

/// Inspect the plugins that render manifests.
#[derive(Debug, Subcommand)]
pub enum Plugin {
    /// List the built-in plugins and those declared in `spec.plugins`, with
    /// their version, WIT world and the capabilities in effect.
    ///
    /// Built-ins are WebAssembly components embedded in the binary; they carry
    /// their own grants. A declared plugin gets only what `grants` allows.
    List,
}

impl Plugin {
    /// Run the subcommand.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        match self {
            Self::List => list(settings),
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
        let config = super::load_config(settings)?;
        let declared = config.spec.plugins.clone();
        let names: Vec<&str> = declared.iter().map(|d| d.name.as_str()).collect();
        let set = PluginSet::load(&host, &names, &declared)?;
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
