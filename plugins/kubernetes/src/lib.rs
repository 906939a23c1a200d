//! The built-in `kubernetes` secret resolver: a key of a Secret in a cluster reached by a context
//! of the kubeconfig Tazuna runs with (the management cluster), read-only.
//!
//! ```yaml
//! spec:
//!   providers:
//!     - name: mgmt
//!       type: kubernetes
//!       kubernetes:
//!         context: management       # a context of the run's kubeconfig
//!         namespace: platform       # for references that name none; optional
//! ```
//!
//! A reference names a Secret and a key: `ref+mgmt:platform/argocd-repo#password`, or
//! `ref+mgmt:argocd-repo#password` in the provider's `namespace`.
//!
//! The plugin holds no credentials and opens no connection: the host gets the Secret with the
//! context's own credentials (only `get`, only the context the provider names) and hands the
//! plugin its data. Each Secret is read once a run, however many of its keys are used.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use tazuna_sdk::{Diagnostic, PluginError, PluginInfo, SecretResolver};

/// The `kubernetes:` block of a provider.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The context of the run's kubeconfig that reaches the cluster.
    pub context: Option<String>,
    /// The namespace of references that name none.
    pub namespace: Option<String>,
}

/// One reference, read: namespace, name, key.
pub fn parse(config: &Config, reference: &str) -> Result<(String, String, String), PluginError> {
    let (secret, key) = reference.split_once('#').ok_or_else(|| {
        PluginError::not_found(format_args!(
            "`{reference}` names no key: write `ref+<provider>:<namespace>/<name>#<key>`"
        ))
    })?;
    let (namespace, name) = match secret.split_once('/') {
        Some((namespace, name)) => (namespace.to_owned(), name.to_owned()),
        None => (
            config.namespace.clone().ok_or_else(|| {
                PluginError::not_found(format_args!(
                    "`{secret}` names no namespace, and the provider has no `namespace`: write `<namespace>/{secret}`"
                ))
            })?,
            secret.to_owned(),
        ),
    };
    if namespace.is_empty() || name.is_empty() || key.is_empty() || name.contains('/') {
        return Err(PluginError::not_found(format_args!(
            "`{reference}`: write `ref+<provider>:<namespace>/<name>#<key>`"
        )));
    }
    Ok((namespace, name, key.to_owned()))
}

/// The `kubernetes` secret resolver.
pub struct Kubernetes;

impl SecretResolver for Kubernetes {
    type Config = Config;
    const SCHEMES: &'static [&'static str] = &["kubernetes"];

    fn info() -> PluginInfo {
        PluginInfo::new("kubernetes", env!("CARGO_PKG_VERSION")).with_description(
            "A key of a Secret in a cluster reached by a named context, read-only.",
        )
    }

    fn resolve(config: &Config, reference: &str) -> Result<Vec<u8>, PluginError> {
        Self::resolve_all(config, &[reference.to_owned()])
            .pop()
            .unwrap_or_else(|| Err(PluginError::other("no answer")))
    }

    fn resolve_all(config: &Config, references: &[String]) -> Vec<Result<Vec<u8>, PluginError>> {
        let Some(context) = config.context.clone().filter(|c| !c.is_empty()) else {
            let error = PluginError::InvalidConfig(vec![
                Diagnostic::error(
                    "no `context`: name the kubeconfig context of the cluster to read",
                )
                .at("/context"),
            ]);
            return references.iter().map(|_| Err(error.clone())).collect();
        };
        type Data = Result<BTreeMap<String, Vec<u8>>, PluginError>;
        let mut read: BTreeMap<(String, String), Data> = BTreeMap::new();
        references
            .iter()
            .map(|reference| {
                let (namespace, name, key) = parse(config, reference)?;
                let data = read
                    .entry((namespace.clone(), name.clone()))
                    .or_insert_with(|| {
                        tazuna_sdk::clusters::read_secret(&context, &namespace, &name)
                            .map(|pairs| pairs.into_iter().collect())
                    })
                    .clone()?;
                data.get(&key).cloned().ok_or_else(|| {
                    PluginError::not_found(format_args!(
                        "key `{key}` of Secret `{namespace}/{name}` in context `{context}`"
                    ))
                })
            })
            .collect()
    }
}

tazuna_sdk::export_secret_resolver!(Kubernetes);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_names_a_secret_and_a_key() {
        let config = Config {
            context: Some("mgmt".into()),
            namespace: Some("platform".into()),
        };
        assert_eq!(
            parse(&config, "fleet/repo#password").unwrap(),
            ("fleet".into(), "repo".into(), "password".into())
        );
        assert_eq!(parse(&config, "repo#password").unwrap().0, "platform");
        for bad in ["repo", "a/b/c#k", "/repo#k", "a/#k", "a/b#"] {
            assert!(parse(&config, bad).is_err(), "{bad}");
        }
        assert!(parse(&Config::default(), "repo#k").is_err());
    }
}
