//! Third-party plugins from OCI registries.
//!
//! A plugin in `spec.plugins` with `source: oci://host/repo` is resolved once to
//! an exact component and pinned in `tazuna.lock` ([`PluginPin`]): the version
//! (the tag it was pulled by), the OCI manifest digest, the component digest,
//! the world and a hash of its grants. After that a run pulls by manifest
//! digest only, and not at all when the cache already holds the component, so
//! a pinned file works offline. `tazuna plugin update` re-resolves.
//!
//! The artifact layout is the CNCF Wasm OCI one (config
//! `application/vnd.wasm.config.v0+json`, one `application/wasm` layer), read
//! and written with `oci-wasm`. Registries on a loopback address are spoken to
//! over plain HTTP, as docker does; every other one over HTTPS. Credentials
//! come from the docker config (`$DOCKER_CONFIG/config.json`, else
//! `~/.docker/config.json`), so a plugin never sees them.
//!
//! Components are cached by their digest under `<cache>/blobs/sha256/<hex>`
//! ([`Blobs`]); every read is checked against its digest.

mod blobs;
mod charts;
mod credentials;
mod fetch;
mod inspect;
mod metered;
mod source;

use std::path::PathBuf;

use sha2::{Digest, Sha256};
use tazuna_core::lock::PluginPin;

pub use blobs::Blobs;
pub use charts::{ChartError, newest_chart_version, newest_in_chart_repository};
pub use credentials::{auth_for, docker_config, helm_registry_config, helm_repositories};
pub use fetch::{fetch, push};
pub use inspect::{
    CAPABILITIES_ANNOTATION, DESCRIPTION_ANNOTATION, Inspected, Layer, PluginAnnotations,
    TITLE_ANNOTATION, VERSION_ANNOTATION, WORLD_ANNOTATION, inspect, world_of_exports,
};
pub use metered::Registry;
pub use source::Source;

/// Why an `oci://` plugin could not be resolved, pulled or pushed.
#[derive(Debug, thiserror::Error)]
pub enum DistributionError {
    /// The reference does not parse.
    #[error("plugin `{name}`: `oci://{reference}` is not an OCI reference: {message}")]
    InvalidReference {
        /// Plugin name.
        name: String,
        /// What was given, after `oci://`.
        reference: String,
        /// Why it does not parse.
        message: String,
    },
    /// Talking to the registry failed.
    #[error("plugin `{name}`: {action} `{reference}`: {message}")]
    Registry {
        /// Plugin name.
        name: String,
        /// What Tazuna was doing.
        action: &'static str,
        /// The reference.
        reference: String,
        /// The registry's or the client's answer.
        message: String,
    },
    /// No tag satisfies the version constraint.
    #[error("plugin `{name}`: no tag of `{reference}` satisfies `{constraint}`; the registry has: {}", if available.is_empty() { "no semver tags".to_owned() } else { available.join(", ") })]
    NoMatchingVersion {
        /// Plugin name.
        name: String,
        /// The repository.
        reference: String,
        /// The constraint (`*` when none was given).
        constraint: String,
        /// The semver tags found.
        available: Vec<String>,
    },
    /// What was pulled is not what was pinned or declared.
    #[error(
        "plugin `{name}`: digest mismatch: {expected_from} pins `{expected}` but {actual_from} is `{actual}`"
    )]
    DigestMismatch {
        /// Plugin name.
        name: String,
        /// Where the expected digest comes from.
        expected_from: &'static str,
        /// The expected digest.
        expected: String,
        /// What was checked.
        actual_from: &'static str,
        /// The digest found.
        actual: String,
    },
    /// `tazuna.yaml` no longer matches the pin in `tazuna.lock`.
    #[error(
        "plugin `{name}`: {what} changed since tazuna.lock pinned it ({pinned} there, {declared} in tazuna.yaml)"
    )]
    PinOutOfDate {
        /// Plugin name.
        name: String,
        /// Which part changed.
        what: &'static str,
        /// The pinned value.
        pinned: String,
        /// The declared value.
        declared: String,
    },
    /// `--offline`, and the component is not at hand.
    #[error("plugin `{name}` is needed, and `--offline` forbids pulling it: {why}")]
    Offline {
        /// Plugin name.
        name: String,
        /// Why it would be pulled.
        why: &'static str,
    },
    /// A component file could not be read for a push.
    #[error("cannot read `{}`: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A component to push is not a WebAssembly component.
    #[error("`{}` is not a WebAssembly component: {message}", path.display())]
    NotAComponent {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
}

impl tazuna_core::hint::Hint for DistributionError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            Self::InvalidReference { .. } => "write `oci://<registry>/<repository>`, optionally with `:<tag>` or `@sha256:<digest>`".to_owned(),
            Self::Registry { .. } => "check that the registry is reachable; credentials are read from the docker config (`docker login`)".to_owned(),
            Self::NoMatchingVersion { .. } => "change `version` in tazuna.yaml, or push a matching version".to_owned(),
            Self::DigestMismatch { name, .. } => format!(
                "if the new component is intended, update the pin (`tazuna plugin update {name}`, or `digest` in tazuna.yaml); otherwise the registry serves something else than before"
            ),
            Self::PinOutOfDate { name, .. } => format!(
                "run `tazuna plugin update {name}` to pin it again, then commit tazuna.lock"
            ),
            Self::NotAComponent { .. } => "build the plugin for wasm32-wasip2 (`cargo build --target wasm32-wasip2 --release`)".to_owned(),
            Self::Offline { .. } | Self::Read { .. } => return None,
        })
    }
}

/// A component resolved for one plugin.
#[derive(Debug)]
pub struct Fetched {
    /// The component bytes, checked against `pin.component_digest`.
    pub bytes: Vec<u8>,
    /// What the lock file should hold for the plugin. Its `version` is the tag
    /// pulled, or empty when only a digest was given; the caller fills it in
    /// from the plugin itself.
    pub pin: PluginPin,
    /// The pin is new or differs from the one passed in.
    pub repinned: bool,
    /// The registry was contacted (the cache did not hold the component).
    pub pulled: bool,
}

/// How to treat an existing pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolve {
    /// Use the pin; resolve only a plugin that has none.
    Pinned,
    /// Resolve again (`tazuna plugin update`).
    Again,
    /// Use the pin and the cache only; never contact a registry (`--offline`).
    Offline,
}

/// Whether the registry answered that the repository, tag or digest does not
/// exist.
pub fn is_not_found(error: &oci_client::errors::OciDistributionError) -> bool {
    use oci_client::errors::{OciDistributionError, OciErrorCode};
    match error {
        OciDistributionError::ImageManifestNotFoundError(_) => true,
        OciDistributionError::RegistryError { envelope, .. } => envelope.errors.iter().any(|e| {
            matches!(
                e.code,
                OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown
            )
        }),
        _ => false,
    }
}

/// `sha256:<hex>` of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}
