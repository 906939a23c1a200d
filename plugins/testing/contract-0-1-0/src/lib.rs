//! A source plugin built against the released `tazuna:plugin@0.1.0` contract, as a plugin
//! published before 0.1.1 was: it imports `log` and never declares its render traits. It renders
//! one ConfigMap named after the manifest, holding the config it was given.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

#[allow(missing_docs, clippy::all)]
mod bindings {
    wit_bindgen::generate!({
        path: "../../../wit/released/plugin@0.1.0.wit",
        world: "source-plugin",
    });
}

use bindings::exports::tazuna::plugin::source::Guest;
use bindings::tazuna::plugin::types::{
    Diagnostic, Manifest, PluginError, PluginInfo, RenderOutput, RenderRequest,
};

struct Released;

impl Guest for Released {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "released".into(),
            version: "0.1.0".into(),
            description: "Built against the 0.1.0 contract.".into(),
            config_schema: "{}".into(),
            capabilities: Vec::new(),
        }
    }

    fn validate(_config: String) -> Vec<Diagnostic> {
        Vec::new()
    }

    fn render(request: RenderRequest) -> Result<RenderOutput, PluginError> {
        bindings::tazuna::plugin::log::log(
            bindings::tazuna::plugin::log::Level::Info,
            "rendering with the 0.1.0 contract",
        );
        let name = serde_escape(&request.manifest_name);
        let config = serde_escape(&request.config);
        Ok(RenderOutput {
            manifests: vec![Manifest {
                content: format!(
                    r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{{"config":"{config}"}}}}"#
                ),
                origin: Some("released".into()),
            }],
            diagnostics: Vec::new(),
            resolved: Vec::new(),
        })
    }
}

/// `text` as the inside of a JSON string.
fn serde_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| match c {
            '"' => "\\\"".chars().collect::<Vec<_>>(),
            '\\' => "\\\\".chars().collect(),
            c if (c as u32) < 0x20 => format!("\\u{:04x}", c as u32).chars().collect(),
            c => vec![c],
        })
        .collect()
}

// On other targets (the plugins' host-target unit tests) there is nothing to export.
#[cfg(target_arch = "wasm32")]
bindings::export!(Released with_types_in bindings);
