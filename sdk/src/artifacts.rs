//! Pull OCI artifacts through the host's `artifacts` import, with the host's credentials.
//!
//! Needs the grant `artifacts:pull`. Outside a Tazuna host every pull is denied.

use crate::PluginError;

pub use crate::bindings::source::tazuna::plugin::artifacts::Fetched;

/// Pulls `reference` (`registry/repo:tag` or `@sha256:...`, optionally with `oci://` in front, or
/// `http://` to reach a registry over plain HTTP) and returns the guest directory holding the
/// layers whose media type is in `media_types` (all layers when it is empty). A layer becomes a
/// file named by its `org.opencontainers.image.title` annotation; a directory pushed with
/// `oras push` is unpacked under its name.
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
