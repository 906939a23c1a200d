//! Read one Secret of a cluster the user's kubeconfig reaches by a context (a management
//! cluster), through the host's `clusters` import (secret resolvers, contract 0.1.1). Read-only,
//! with the context's own credentials, which the plugin never sees; the context must be named as
//! it is in the provider's config. A third-party resolver needs the grant `read:cluster-secrets`.

use crate::PluginError;

/// The data of Secret `namespace`/`name` in the cluster of `context`: each key and its bytes.
pub fn read_secret(
    context: &str,
    namespace: &str,
    name: &str,
) -> Result<Vec<(String, Vec<u8>)>, PluginError> {
    #[cfg(target_arch = "wasm32")]
    {
        crate::bindings::secret_resolver::tazuna::plugin::clusters::read_secret(
            context, namespace, name,
        )
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        Err(PluginError::CapabilityDenied(format!(
            "Secret `{namespace}/{name}` of context `{context}` (not running inside a Tazuna host)"
        )))
    }
}
