//! What a published plugin is, read from its OCI manifest and config blob alone.
//!
//! `tazuna plugin push` records the plugin's own description in the manifest's annotations
//! ([`PluginAnnotations`]); `tazuna plugin inspect` reads them back with the manifest digest, the
//! component (layer) digest and what the CNCF Wasm config blob says (the component's imports and
//! exports), without pulling the layer. An artifact pushed by another tool has no such
//! annotations; what only they can tell is then unknown.

use std::collections::BTreeMap;

use oci_wasm::{WASM_LAYER_MEDIA_TYPE, WasmConfig};

use super::*;

/// The version annotation of the OCI image spec.
pub const VERSION_ANNOTATION: &str = "org.opencontainers.image.version";
/// The title annotation of the OCI image spec: the plugin's name.
pub const TITLE_ANNOTATION: &str = "org.opencontainers.image.title";
/// The description annotation of the OCI image spec.
pub const DESCRIPTION_ANNOTATION: &str = "org.opencontainers.image.description";
/// The WIT world the component targets, as Tazuna loads it.
pub const WORLD_ANNOTATION: &str = "dev.tazuna.plugin.world";
/// The capabilities the plugin requests, as a JSON array of strings.
pub const CAPABILITIES_ANNOTATION: &str = "dev.tazuna.plugin.capabilities";

/// What a plugin says about itself, as manifest annotations. Every field is optional: an
/// artifact pushed by another tool may carry none of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginAnnotations {
    /// The plugin's name.
    pub name: Option<String>,
    /// Its version (`org.opencontainers.image.version`).
    pub version: Option<String>,
    /// Its one-line description.
    pub description: Option<String>,
    /// The WIT world it targets.
    pub world: Option<String>,
    /// The capabilities it requests.
    pub capabilities: Option<Vec<String>>,
}

impl PluginAnnotations {
    /// The manifest annotations, keyed as the constants of this module say.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        let mut map = BTreeMap::new();
        let mut put = |key: &str, value: &Option<String>| {
            if let Some(value) = value {
                map.insert(key.to_owned(), value.clone());
            }
        };
        put(TITLE_ANNOTATION, &self.name);
        put(VERSION_ANNOTATION, &self.version);
        put(DESCRIPTION_ANNOTATION, &self.description);
        put(WORLD_ANNOTATION, &self.world);
        if let Some(capabilities) = &self.capabilities {
            map.insert(
                CAPABILITIES_ANNOTATION.to_owned(),
                serde_json::to_string(capabilities).expect("a list of strings serializes"),
            );
        }
        map
    }

    /// Read them back; an annotation that is missing, or capabilities that are not a JSON
    /// array of strings, stay unknown.
    pub fn from_map(map: &BTreeMap<String, String>) -> Self {
        let get = |key: &str| map.get(key).filter(|v| !v.is_empty()).cloned();
        Self {
            name: get(TITLE_ANNOTATION),
            version: get(VERSION_ANNOTATION),
            description: get(DESCRIPTION_ANNOTATION),
            world: get(WORLD_ANNOTATION),
            capabilities: map
                .get(CAPABILITIES_ANNOTATION)
                .and_then(|json| serde_json::from_str(json).ok()),
        }
    }
}

/// A published plugin, as its manifest and config blob describe it.
#[derive(Debug)]
pub struct Inspected {
    /// `oci://host/repo[:tag][@digest]`, as asked for.
    pub reference: String,
    /// The manifest digest the registry serves the reference under.
    pub manifest_digest: String,
    /// The manifest's annotations, as far as Tazuna knows them.
    pub annotations: PluginAnnotations,
    /// The manifest's layers: the component is the one `application/wasm` layer.
    pub layers: Vec<Layer>,
    /// The config blob's media type.
    pub config_media_type: String,
    /// The CNCF Wasm config, when the config blob is one.
    pub config: Option<WasmConfig>,
}

/// One layer as the manifest names it (its blob is not fetched).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    /// `sha256:<hex>`.
    pub digest: String,
    /// Its media type.
    pub media_type: String,
    /// Its size in bytes.
    pub size: i64,
}

impl Inspected {
    /// The component layer: the only `application/wasm` layer, if there is exactly one.
    pub fn component(&self) -> Option<&Layer> {
        let mut wasm = self
            .layers
            .iter()
            .filter(|layer| layer.media_type == WASM_LAYER_MEDIA_TYPE);
        match (wasm.next(), wasm.next()) {
            (Some(layer), None) => Some(layer),
            _ => None,
        }
    }

    /// The WIT world: the annotation, else the one Tazuna world whose interface the config
    /// blob lists among the component's exports.
    pub fn world(&self) -> Option<String> {
        if let Some(world) = &self.annotations.world {
            return Some(world.clone());
        }
        let exports = &self.config.as_ref()?.component.as_ref()?.exports;
        world_of_exports(exports).map(str::to_owned)
    }
}

/// The Tazuna world a component with these exports targets, if it is exactly one.
pub fn world_of_exports(exports: &[String]) -> Option<&'static str> {
    let exported = |interface: &str| {
        exports
            .iter()
            .any(|e| e.split('@').next() == Some(interface))
    };
    match (
        exported("tazuna:plugin/source"),
        exported("tazuna:plugin/secret-resolver"),
    ) {
        (true, false) => Some(crate::host::SOURCE_WORLD),
        (false, true) => Some(crate::host::RESOLVER_WORLD),
        _ => None,
    }
}

/// Read the manifest and the config blob of `oci://<reference>` (a tag or a digest, else
/// `latest`), and nothing else: the component layer is not pulled.
pub async fn inspect(reference: &str) -> Result<Inspected, DistributionError> {
    let name = reference
        .split(['@', ':'])
        .next()
        .and_then(|repo| repo.rsplit('/').next())
        .unwrap_or("plugin")
        .to_owned();
    let source = Source::parse(&name, reference)?;
    let image = source.reference();
    let failed = |message: String| DistributionError::Registry {
        name: name.clone(),
        action: "cannot inspect",
        reference: format!("oci://{reference}"),
        message,
    };
    // The plain client: an artifact from another tool need not be in the Wasm layout.
    let registry = source.client();
    let (manifest, manifest_digest, config) = registry
        .oci()
        .pull_manifest_and_config(&image, &auth_for(&source.registry))
        .await
        .map_err(|error| {
            if is_not_found(&error) {
                failed("the registry has no such tag or digest".to_owned())
            } else {
                failed(registry.explain(format!("{error:#}")))
            }
        })?;
    if let Some(expected) = &source.digest
        && *expected != manifest_digest
    {
        return Err(DistributionError::DigestMismatch {
            name,
            expected_from: "the reference",
            expected: expected.clone(),
            actual_from: "the manifest the registry serves",
            actual: manifest_digest,
        });
    }
    let config_media_type = manifest.config.media_type.clone();
    Ok(Inspected {
        reference: format!("oci://{reference}"),
        manifest_digest,
        annotations: PluginAnnotations::from_map(&manifest.annotations.unwrap_or_default()),
        layers: manifest
            .layers
            .into_iter()
            .map(|layer| Layer {
                digest: layer.digest,
                media_type: layer.media_type,
                size: layer.size,
            })
            .collect(),
        config: (config_media_type == oci_wasm::WASM_MANIFEST_CONFIG_MEDIA_TYPE)
            .then(|| WasmConfig::try_from(config).ok())
            .flatten(),
        config_media_type,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_round_trip_and_unknown_ones_stay_unknown() {
        let annotations = PluginAnnotations {
            name: Some("configmap".into()),
            version: Some("0.2.0".into()),
            description: None,
            world: Some(crate::host::SOURCE_WORLD.into()),
            capabilities: Some(vec!["exec:helm".into(), "network".into()]),
        };
        let map = annotations.to_map();
        assert_eq!(map[VERSION_ANNOTATION], "0.2.0");
        assert_eq!(map[CAPABILITIES_ANNOTATION], r#"["exec:helm","network"]"#);
        assert!(!map.contains_key(DESCRIPTION_ANNOTATION));
        assert_eq!(PluginAnnotations::from_map(&map), annotations);

        let foreign = BTreeMap::from([
            (VERSION_ANNOTATION.to_owned(), "1.0.0".to_owned()),
            (CAPABILITIES_ANNOTATION.to_owned(), "exec:helm".to_owned()),
        ]);
        let read = PluginAnnotations::from_map(&foreign);
        assert_eq!(read.version.as_deref(), Some("1.0.0"));
        assert_eq!(read.capabilities, None, "not a JSON array: unknown");
        assert_eq!(read.world, None);
    }

    #[test]
    fn the_world_follows_from_the_exported_interface() {
        let source = ["tazuna:plugin/source@0.1.0".to_owned()];
        assert_eq!(world_of_exports(&source), Some(crate::host::SOURCE_WORLD));
        let resolver = ["tazuna:plugin/secret-resolver@0.1.0".to_owned()];
        assert_eq!(
            world_of_exports(&resolver),
            Some(crate::host::RESOLVER_WORLD)
        );
        assert_eq!(
            world_of_exports(&["wasi:http/handler@0.2.0".to_owned()]),
            None
        );
    }
}
