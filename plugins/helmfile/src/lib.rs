//! The built-in `helmfile` source: `helmfile template` of the helmfile at the manifest's
//! `path`, run by the host (grants `exec:helmfile`, and `exec:helm` so that helmfile finds the
//! `helm` Tazuna was given).
//!
//! ```yaml
//! - name: cert-manager
//!   type: helmfile
//!   path: ./helmfile/cert-manager      # a directory with helmfile.yaml(.gotmpl), or the file
//!   namespace: cert-manager
//!   helmfile:                          # Go Tazuna's block
//!     includeCRDs: true
//!     vars:
//!       extraLabels: { from: static, staticMap: { tier: platform } }
//! ```
//!
//! The render lives in `tazuna_plugin_common::helmfile`, which the `oras` source shares.

use tazuna_plugin_common::helmfile::{self, Config};
use tazuna_sdk::{Diagnostic, PluginError, PluginInfo, RenderOutput, RenderRequest, SourcePlugin};

/// The `helmfile` source plugin.
pub struct Helmfile;

impl SourcePlugin for Helmfile {
    type Config = Config;

    fn info() -> PluginInfo {
        PluginInfo::new("helmfile", env!("CARGO_PKG_VERSION"))
            .with_description("`helmfile template` of the helmfile at `path`.")
            .with_capability("exec:helmfile")
            .with_capability("exec:helm")
            .with_capability("secrets:exec")
            .with_capability("read:references")
    }

    fn validate(config: &Config) -> Vec<Diagnostic> {
        config.check()
    }

    fn render(config: Config, request: &RenderRequest) -> Result<RenderOutput, PluginError> {
        helmfile::render(config, request)
    }
}

tazuna_sdk::export_source_plugin!(Helmfile);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugin_asks_for_helmfile_the_helm_it_runs_and_references_for_them() {
        assert_eq!(
            Helmfile::info().capabilities,
            [
                "exec:helmfile",
                "exec:helm",
                "secrets:exec",
                "read:references"
            ]
        );
    }
}
