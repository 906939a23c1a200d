//! `tazuna plugin inspect`: what a component says of itself, from a
//! registry (without pulling it) or a file.

use std::process::ExitCode;

use crate::report::OutputFormat;
use tazuna_engine::distribution::{self};
use tazuna_engine::host::PluginHost;

use crate::settings::GlobalSettings;

use super::*;

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

pub(super) fn inspect(settings: &GlobalSettings, reference: &str) -> anyhow::Result<ExitCode> {
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
