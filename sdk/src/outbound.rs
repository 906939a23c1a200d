//! Reach a secret store over HTTPS through the host's `outbound` import (secret resolvers, contract
//! 0.1.1).
//!
//! The host sends the request, and only to the hosts the provider's config names (as URLs) or the
//! resolver's `net:<host>` capabilities cover (`net:*.amazonaws.com`); https only, but to loopback.
//! With [`Signing::AwsSigv4`] the host signs with the standard AWS credential chain, and the
//! plugin never sees a key. With [`send_vault`] the host logs in to a Vault and adds the token;
//! there a resolver only reads (`GET`) from KV mounts. Outside a Tazuna host every request is
//! denied.
//!
//! ```no_run
//! use tazuna_sdk::outbound::{self, Request};
//!
//! # fn demo() -> Result<(), tazuna_sdk::PluginError> {
//! let answer = outbound::send(Request {
//!     method: "GET".into(),
//!     url: "https://vault.example.com:8200/v1/secret/data/app".into(),
//!     headers: vec![("x-vault-token".into(), "…".into())],
//!     body: Vec::new(),
//!     sign: None,
//! })?;
//! assert_eq!(answer.status, 200);
//! # Ok(())
//! # }
//! ```

use crate::PluginError;

pub use crate::bindings::secret_resolver::tazuna::plugin::outbound::{
    ApproleLogin, AwsSigning, KubernetesLogin, Request, Response, Signing, VaultLogin, VaultMethod,
};

/// Sends `request` through the host.
pub fn send(request: Request) -> Result<Response, PluginError> {
    #[cfg(target_arch = "wasm32")]
    {
        crate::bindings::secret_resolver::tazuna::plugin::outbound::send(&request)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        Err(PluginError::CapabilityDenied(format!(
            "a request to `{}` (not running inside a Tazuna host)",
            request.url
        )))
    }
}

/// The AWS region the host's standard chain names for `profile` (`AWS_REGION`,
/// `AWS_DEFAULT_REGION`, the profile's `region`); `None` outside a Tazuna host.
pub fn aws_region(profile: Option<&str>) -> Option<String> {
    #[cfg(target_arch = "wasm32")]
    {
        crate::bindings::secret_resolver::tazuna::plugin::outbound::aws_region(profile)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = profile;
        None
    }
}

/// Sends `request` (with no `sign`) to the Vault `login` names: the host logs in once per run
/// (a token from the environment, AppRole or Kubernetes) and adds the token. A third-party
/// resolver needs the grant `sign:vault`.
pub fn send_vault(request: Request, login: &VaultLogin) -> Result<Response, PluginError> {
    #[cfg(target_arch = "wasm32")]
    {
        crate::bindings::secret_resolver::tazuna::plugin::outbound::send_vault(&request, login)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = login;
        Err(PluginError::CapabilityDenied(format!(
            "a request to `{}` (not running inside a Tazuna host)",
            request.url
        )))
    }
}
