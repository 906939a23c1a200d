//! Pull OCI artifacts through the host's `artifacts` import, with the host's credentials.
//!
//! Needs the grant `artifacts:pull`. Outside a Tazuna host every pull is denied.

use crate::PluginError;

pub use crate::bindings::source::tazuna::plugin::artifacts::Fetched;

/// Pulls `reference` (`registry/repo:tag` or `@sha256:...`) and returns the guest directory
/// holding the layers whose media type is in `media_types`.
pub fn pull_oci(reference: &str, media_types: &[String]) -> Result<Fetched, PluginError> {
    #[cfg(target_arch = "wasm32")]
    {
        crate::bindings::source::tazuna::plugin::artifacts::pull_oci(reference, media_types)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = media_types;
        Err(PluginError::CapabilityDenied(format!(
            "artifacts:pull of `{reference}` (not running inside a Tazuna host)"
        )))
    }
}
