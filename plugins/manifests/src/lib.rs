//! The built-in `manifests` source: plain Kubernetes YAML and JSON files.
//!
//! A manifest's `path` names a file, a directory (walked recursively) or a glob. The files are
//! found, read into objects, namespaces defaulted and objects encoded by
//! `tazuna_plugin_common::files` (the `oras` source reads pulled files the same way), with
//! `<file>#<document index>` as each object's origin.
//!
//! Tested on the host target:
//! `cargo test --manifest-path plugins/Cargo.toml -p tazuna-plugin-manifests --target x86_64-unknown-linux-gnu`.

/// The render, as the tests call it.
pub mod render {
    pub use tazuna_plugin_common::files::render;
}

use tazuna_sdk::{NoConfig, PluginError, PluginInfo, RenderOutput, RenderRequest, SourcePlugin};

/// The `manifests` source plugin. It takes no config block; `path` and `namespace` come from the
/// manifest entry itself.
pub struct Manifests;

impl SourcePlugin for Manifests {
    type Config = NoConfig;

    fn info() -> PluginInfo {
        PluginInfo::new("manifests", env!("CARGO_PKG_VERSION")).with_description(
            "Plain Kubernetes YAML and JSON files: one file, a directory (recursively) or a glob.",
        )
    }

    fn render(_: NoConfig, request: &RenderRequest) -> Result<RenderOutput, PluginError> {
        render::render(request)
    }
}

tazuna_sdk::export_source_plugin!(Manifests);
