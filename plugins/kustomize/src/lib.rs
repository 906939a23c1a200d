//! The built-in `kustomize` source: `kustomize build` of the kustomization directory at the
//! manifest's `path`, run by the host (grant `exec:kustomize`).
//!
//! ```yaml
//! - name: app
//!   type: kustomize
//!   path: ./overlays/{{ .Environment }}
//!   kustomize:
//!     defaultNamespace: app      # Go Tazuna's spelling of the manifest's `namespace`
//! ```
//!
//! The render lives in `tazuna_plugin_common::kustomize`, which the `oras` source shares.

use tazuna_plugin_common::kustomize::{self, Config};
use tazuna_sdk::{PluginError, PluginInfo, RenderOutput, RenderRequest, SourcePlugin};

/// The capability this plugin needs; built-ins are granted what they ask for.
const CAPABILITY: &str = "exec:kustomize";

/// The `kustomize` source plugin.
pub struct Kustomize;

impl SourcePlugin for Kustomize {
    type Config = Config;

    fn info() -> PluginInfo {
        PluginInfo::new("kustomize", env!("CARGO_PKG_VERSION"))
            .with_description("`kustomize build` of the kustomization directory at `path`.")
            .with_capability(CAPABILITY)
            .with_capability("read:references")
    }

    fn render(config: Config, request: &RenderRequest) -> Result<RenderOutput, PluginError> {
        kustomize::render(config, request)
    }
}

tazuna_sdk::export_source_plugin!(Kustomize);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugin_asks_for_kustomize_only() {
        assert_eq!(
            Kustomize::info().capabilities,
            [CAPABILITY, "read:references"]
        );
    }
}
