//! The `clusters` host import: a secret resolver reads one Secret of a
//! cluster the user's kubeconfig reaches by a context (a management cluster).
//!
//! The plugin host has no Kubernetes client; the engine hands it a
//! [`ClusterSecrets`] that reads with the context's own credentials. The host
//! decides what may be read: only the context the provider's config names
//! in its `context` field, only `get` of one Secret, and for a third-party resolver only with
//! the grant [`READ_CLUSTER_SECRETS`].

use std::collections::BTreeMap;
use std::sync::Arc;

use super::bindings::types::PluginError;

/// The capability a third-party resolver needs to read a cluster's Secret.
pub const READ_CLUSTER_SECRETS: &str = "read:cluster-secrets";

/// Why a Secret was not read. No variant holds a value.
#[derive(Debug, thiserror::Error)]
pub enum ClusterSecretError {
    /// The Secret does not exist.
    #[error("Secret `{namespace}/{name}` does not exist in the cluster of context `{context}`")]
    NotFound {
        context: String,
        namespace: String,
        name: String,
    },
    /// The context's credentials may not get it.
    #[error(
        "the context `{context}` may not get Secret `{namespace}/{name}`: {why}; grant its user `get` on that Secret"
    )]
    Forbidden {
        context: String,
        namespace: String,
        name: String,
        why: String,
    },
    /// The kubeconfig has no such context, or the cluster did not answer.
    #[error("{0}")]
    Unreachable(String),
}

/// Reads Secrets of clusters by context. Implemented by the engine over its
/// Kubernetes client.
pub trait ClusterSecrets: Send + Sync {
    /// The data of Secret `namespace`/`name` in the cluster of `context`.
    fn read_secret(
        &self,
        context: &str,
        namespace: &str,
        name: &str,
    ) -> Result<BTreeMap<String, Vec<u8>>, ClusterSecretError>;
}

/// Shared handle to a [`ClusterSecrets`].
pub type SharedClusterSecrets = Arc<dyn ClusterSecrets>;

/// What a read needs of its call.
pub struct Context<'a> {
    pub plugin: &'a str,
    pub builtin: bool,
    pub granted: bool,
    /// Whether the provider's config names this context (its `context`).
    pub named: &'a dyn Fn(&str) -> bool,
    pub clusters: Option<&'a SharedClusterSecrets>,
}

/// Read `namespace`/`name` in `context`, if the call may.
pub fn read_secret(
    ctx: &Context<'_>,
    context: &str,
    namespace: &str,
    name: &str,
) -> Result<Vec<(String, Vec<u8>)>, PluginError> {
    if !ctx.builtin && !ctx.granted {
        return Err(PluginError::CapabilityDenied(format!(
            "plugin `{}` asked to read Secret `{namespace}/{name}` of a cluster: a third-party resolver needs the grant `{READ_CLUSTER_SECRETS}`",
            ctx.plugin
        )));
    }
    if !(ctx.named)(context) {
        return Err(PluginError::CapabilityDenied(format!(
            "plugin `{}` asked for the context `{context}`, which is not the provider's `context`",
            ctx.plugin
        )));
    }
    let valid = |text: &str| {
        !text.is_empty()
            && text.len() <= 253
            && text
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    };
    if !valid(namespace) || !valid(name) {
        return Err(PluginError::NotFound(format!(
            "`{namespace}/{name}` is not a Secret's namespace and name"
        )));
    }
    let clusters = ctx.clusters.ok_or_else(|| {
        PluginError::CapabilityDenied(format!(
            "plugin `{}` asked to read a cluster's Secret where no cluster is reached (`tazuna build`)",
            ctx.plugin
        ))
    })?;
    match clusters.read_secret(context, namespace, name) {
        Ok(data) => Ok(data.into_iter().collect()),
        Err(error @ ClusterSecretError::NotFound { .. }) => {
            Err(PluginError::NotFound(error.to_string()))
        }
        Err(error @ ClusterSecretError::Forbidden { .. }) => {
            Err(PluginError::CapabilityDenied(error.to_string()))
        }
        Err(error) => Err(PluginError::Network(error.to_string())),
    }
}
