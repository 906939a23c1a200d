//! An example third-party Tazuna plugin, built with `tazuna-sdk`: `configmap` renders one
//! ConfigMap from its config.
//!
//! ```yaml
//! manifests:
//!   - name: settings
//!     type: configmap
//!     namespace: demo
//!     configmap:
//!       name: app-settings       # optional; defaults to the manifest's name
//!       data:
//!         LOG_LEVEL: debug
//! ```
//!
//! Build it like any plugin: `cargo build --release --target wasm32-wasip2`, then point
//! `spec.plugins[]` at the `.wasm` file (`file://./configmap.wasm`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use tazuna_sdk::{
    Diagnostic, Manifest, PluginError, PluginInfo, RenderOutput, RenderRequest, SourcePlugin,
};

/// The `configmap:` block of a manifest.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Config {
    /// The ConfigMap's entries.
    data: BTreeMap<String, String>,
    /// The ConfigMap's name; defaults to the manifest's name, lowercased, `_` turned into `-`.
    name: Option<String>,
}

struct ConfigMapPlugin;

impl SourcePlugin for ConfigMapPlugin {
    type Config = Config;

    fn info() -> PluginInfo {
        PluginInfo::new("configmap", env!("CARGO_PKG_VERSION"))
            .with_description("Renders one ConfigMap from the manifest's `data`.")
    }

    fn validate(config: &Config) -> Vec<Diagnostic> {
        let mut findings = Vec::new();
        if let Some(name) = &config.name
            && !is_dns_subdomain(name)
        {
            let message = format!("`{name}` is not a valid ConfigMap name (a DNS subdomain)");
            findings.push(Diagnostic::error(message).at("/name"));
        }
        for key in config.data.keys() {
            let valid = !key.is_empty()
                && key.len() <= 253
                && key
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b));
            if !valid {
                let message = format!("`{key}` is not a valid ConfigMap key");
                findings
                    .push(Diagnostic::error(message).at(format!("/data/{}", pointer_escape(key))));
            }
        }
        if config.data.is_empty() {
            findings.push(Diagnostic::warning("`data` is empty").at("/data"));
        }
        findings
    }

    fn render(config: Config, request: &RenderRequest) -> Result<RenderOutput, PluginError> {
        let name = config
            .name
            .unwrap_or_else(|| request.manifest_name.to_lowercase().replace('_', "-"));
        let mut metadata = serde_json::Map::new();
        metadata.insert("name".into(), name.into());
        if let Some(namespace) = &request.namespace {
            metadata.insert("namespace".into(), namespace.clone().into());
        }
        let config_map = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata,
            "data": config.data,
        });
        let manifest = Manifest::from_object(&config_map)?.with_origin("configmap");
        Ok(RenderOutput::new(vec![manifest]))
    }
}

fn is_dns_subdomain(name: &str) -> bool {
    let valid_label = |label: &str| {
        !label.is_empty()
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    name.len() <= 253 && name.split('.').all(valid_label)
}

fn pointer_escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

tazuna_sdk::export_source_plugin!(ConfigMapPlugin);
