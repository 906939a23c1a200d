//! Secret-resolver plugins: components of the `secret-resolver-plugin` world,
//! which turn references (`DB_PASSWORD`, `op://vault/item/field`) into values.
//!
//! They run in the same sandbox as source plugins, with the same budgets and
//! capabilities. A resolve call sees the directory of the file that declares
//! the provider (read-only, at `/manifest`), for providers that read a file.
//! The values come back to the host only; nothing here logs them.

use std::path::Path;
use std::time::Instant;

use super::bindings::RESOLVER_WORLD;
use super::bindings::resolver::{SecretResolverPlugin, SecretResolverPluginPre};
use super::bindings::types::{PluginError, PluginInfo, SecretValue};
use super::{Capabilities, Grants, HostError, PluginHost, Provenance};

/// A loaded, pre-linked secret resolver.
pub struct ResolverPlugin {
    /// Whether it is one of Tazuna's built-ins.
    builtin: bool,
    digest: String,
    pre: SecretResolverPluginPre<super::CallState>,
    info: PluginInfo,
    schemes: Vec<String>,
    capabilities: Capabilities,
    provenance: Provenance,
}

impl std::fmt::Debug for ResolverPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolverPlugin")
            .field("name", &self.info.name)
            .field("digest", &self.digest)
            .field("schemes", &self.schemes)
            .finish_non_exhaustive()
    }
}

impl ResolverPlugin {
    /// What the plugin said about itself.
    pub fn info(&self) -> &PluginInfo {
        &self.info
    }

    /// The reference schemes it handles.
    pub fn schemes(&self) -> &[String] {
        &self.schemes
    }

    /// Capabilities in effect.
    pub fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    /// Hex sha256 of the component bytes.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// Whether loading compiled anything.
    pub fn provenance(&self) -> Provenance {
        self.provenance
    }
}

impl PluginHost {
    /// Compile (or load from the cache) and pre-link a secret resolver, then
    /// ask it to describe itself and name its schemes.
    pub fn load_resolver(
        &self,
        label: &str,
        bytes: &[u8],
        granted: Grants<'_>,
    ) -> Result<ResolverPlugin, HostError> {
        let started = Instant::now();
        let (component, provenance, digest) = self.compile(label, bytes)?;
        let pre = self
            .linker
            .instantiate_pre(&component)
            .and_then(SecretResolverPluginPre::new)
            .map_err(|e| HostError::WrongWorld {
                plugin: label.to_owned(),
                world: RESOLVER_WORLD,
                message: format!("{e:#}"),
            })?;
        let (info, schemes) = self.call_in(
            label,
            "describe",
            &Capabilities::none(),
            false,
            None,
            |store| {
                let bindings = pre.instantiate(&mut *store)?;
                let resolver = bindings.tazuna_plugin_secret_resolver();
                let info = resolver.call_describe(&mut *store)?;
                let schemes = resolver.call_schemes(&mut *store)?;
                Ok((info, schemes))
            },
        )?;
        let capabilities = match granted {
            Grants::Requested => Capabilities::effective(&info.capabilities, &info.capabilities),
            Grants::List(list) => Capabilities::effective(&info.capabilities, list),
        };
        tracing::debug!(plugin = %info.name, ?provenance, elapsed = ?started.elapsed(), "resolver loaded");
        Ok(ResolverPlugin {
            builtin: matches!(granted, Grants::Requested),
            digest,
            pre,
            info,
            schemes,
            capabilities,
            provenance,
        })
    }

    /// Resolve `refs` with `plugin` and the provider's `config` (JSON).
    /// `provider_dir`, the directory of the file that declares the provider,
    /// is preopened read-only at `/manifest`. One result per reference, in
    /// order.
    pub fn resolve(
        &self,
        plugin: &ResolverPlugin,
        provider_dir: &Path,
        config: &str,
        refs: &[String],
    ) -> Result<Vec<Result<SecretValue, PluginError>>, HostError> {
        let config = config.to_owned();
        let refs = refs.to_vec();
        let offline = self.offline;
        self.call_in(
            &plugin.info.name,
            "resolve",
            &plugin.capabilities,
            plugin.builtin,
            Some(provider_dir),
            |store| {
                // A built-in reaches the hosts its provider's config names; a
                // third-party resolver only what its `net:` grants name. For
                // either, the host reads a login's address, files and context
                // from fixed fields of the config (`outbound::fields`).
                let parsed: serde_json::Value =
                    serde_json::from_str(&config).unwrap_or(serde_json::Value::Null);
                store.data_mut().outbound = super::outbound::Allowed::new(
                    &parsed,
                    &plugin.capabilities,
                    plugin.builtin,
                    provider_dir,
                );
                store.data_mut().network.offline = offline;
                let bindings: SecretResolverPlugin = plugin.pre.instantiate(&mut *store)?;
                bindings
                    .tazuna_plugin_secret_resolver()
                    .call_resolve(&mut *store, &config, &refs)
            },
        )
    }
}
