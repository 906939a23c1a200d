//! Cluster API targets: an environment's clusters found in a management
//! cluster, as the Cluster objects its `clusterAPI` selects, each reached
//! through its `<name>-kubeconfig` Secret (the Cluster API convention, key
//! `value`).
//!
//! Tazuna keeps no standing credentials. A kubeconfig is read when a command
//! runs and held in memory ([`InMemoryKubeconfig`]), never written to disk, a
//! log or state. On the management cluster it needs `list` on
//! `clusters.cluster.x-k8s.io` and `get` on those Secrets, nothing else: no
//! discovery beyond the Cluster kind, no identity read.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{ListParams, ObjectList};
use kube::config::Kubeconfig;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::{Api, Client};
use tazuna_core::config::{ClusterApi, Environment, Target};

use crate::cluster::{ClusterError, ConnectOptions, InMemoryKubeconfig, client_for};

/// The Cluster API group.
const GROUP: &str = "cluster.x-k8s.io";
/// Versions of `Cluster` tried in order (v1beta2 from Cluster API 1.11 on).
const VERSIONS: &[&str] = &["v1beta2", "v1beta1"];

/// What an environment's Cluster API source holds: the clusters Tazuna can
/// reach, and those it cannot yet.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// Clusters with a kubeconfig.
    pub found: Vec<FoundCluster>,
    /// Clusters whose kubeconfig Secret does not exist yet (a control plane
    /// still coming up): not ready, skipped, each with why.
    pub not_ready: Vec<String>,
}

/// A cluster found in a management cluster.
#[derive(Debug, Clone)]
pub struct FoundCluster {
    /// The cluster as a target of the file.
    pub target: Target,
    /// How to reach it.
    pub kubeconfig: InMemoryKubeconfig,
}

/// Why an environment's clusters could not be found.
#[derive(Debug, thiserror::Error)]
pub enum ClusterApiError {
    /// The management cluster cannot be reached.
    #[error("environment `{environment}`: the Cluster API management cluster: {source}")]
    Connect {
        /// The environment.
        environment: String,
        /// Why.
        #[source]
        source: ClusterError,
    },
    /// Its Clusters cannot be listed.
    #[error(
        "environment `{environment}`: cannot list Cluster API Clusters on `{context}`: {message}"
    )]
    List {
        /// The environment.
        environment: String,
        /// The management cluster's context.
        context: String,
        /// What the API server said.
        message: String,
    },
    /// A Cluster's kubeconfig Secret cannot be read.
    #[error(
        "cluster `{cluster}`: cannot read Secret `{namespace}/{secret}` on `{context}`: {message}"
    )]
    Secret {
        /// The Cluster.
        cluster: String,
        /// Its namespace.
        namespace: String,
        /// The Secret.
        secret: String,
        /// The management cluster's context.
        context: String,
        /// What the API server said.
        message: String,
    },
    /// A kubeconfig Secret does not hold a kubeconfig. Its content is not shown.
    #[error("cluster `{cluster}`: Secret `{namespace}/{secret}` {reason}")]
    Kubeconfig {
        /// The Cluster.
        cluster: String,
        /// Its namespace.
        namespace: String,
        /// The Secret.
        secret: String,
        /// What is wrong, without its content.
        reason: String,
    },
    /// Two Clusters (or a Cluster and a cluster of the file) share a name.
    #[error("cluster name `{name}` is used twice: {first} and {second}")]
    Duplicate {
        /// The name.
        name: String,
        /// Where it was first seen.
        first: String,
        /// Where again.
        second: String,
    },
}

impl tazuna_core::hint::Hint for ClusterApiError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            Self::Connect { source, .. } => return source.hint(),
            Self::List { .. } => "Tazuna needs `list` on `clusters.cluster.x-k8s.io` there; see docs/fleet.md#cluster-api".into(),
            Self::Secret { .. } => "Tazuna needs `get` on the `<cluster>-kubeconfig` Secrets there; Cluster API writes one per Cluster once its control plane is up".into(),
            Self::Kubeconfig { .. } => "Cluster API keeps the kubeconfig under the key `value`".into(),
            Self::Duplicate { .. } => "cluster names are unique across the file and its Cluster API environments; narrow `clusterAPI.selector` or `namespace`".into(),
        })
    }
}

/// The Clusters `environment`'s `source` selects, with their kubeconfigs:
/// each named after its Cluster, with the environment's labels and the
/// Cluster's on top, and the environment's values. A Cluster whose
/// kubeconfig Secret does not exist yet is not ready, not an error.
pub async fn discover(
    environment: &Environment,
    source: &ClusterApi,
) -> Result<Discovery, ClusterApiError> {
    let options = ConnectOptions {
        kubeconfig: source.kubeconfig.clone(),
        context: source.context.clone(),
        in_memory: None,
    };
    let connected = client_for(&options)
        .await
        .map_err(|source| ClusterApiError::Connect {
            environment: environment.name.clone(),
            source,
        })?;
    let context = connected.context.clone();
    let clusters =
        list(&connected.client, source)
            .await
            .map_err(|error| ClusterApiError::List {
                environment: environment.name.clone(),
                context: context.clone(),
                message: crate::objects::errors::status_message(&error),
            })?;
    let mut found: Vec<FoundCluster> = Vec::new();
    let mut not_ready: Vec<String> = Vec::new();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for cluster in clusters {
        let name = cluster.metadata.name.clone().unwrap_or_default();
        let namespace = cluster
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_owned());
        if let Some(first) = seen.insert(name.clone(), namespace.clone()) {
            return Err(ClusterApiError::Duplicate {
                first: format!("Cluster `{first}/{name}`"),
                second: format!("Cluster `{namespace}/{name}`"),
                name,
            });
        }
        let Some(kubeconfig) =
            kubeconfig_of(&connected.client, &name, &namespace, &context).await?
        else {
            not_ready.push(format!(
                "cluster `{name}` of environment `{}` is not ready: Cluster `{namespace}/{name}` has no Secret `{namespace}/{name}-kubeconfig` yet (Cluster API writes it once the control plane is up); skipped",
                environment.name
            ));
            continue;
        };
        let mut labels = environment.labels.clone();
        labels.extend(cluster.metadata.labels.clone().unwrap_or_default());
        found.push(FoundCluster {
            target: Target {
                name,
                environment: environment.name.clone(),
                context: None,
                kubeconfig: None,
                labels,
                values: environment.values.clone(),
                identity: None,
                cluster_api: Some(serde_json::json!({
                    "name": cluster.metadata.name.clone().unwrap_or_default(),
                    "namespace": namespace,
                    "labels": cluster.metadata.labels.clone().unwrap_or_default(),
                    "annotations": cluster.metadata.annotations.clone().unwrap_or_default(),
                    "clusterNetwork": cluster.data.pointer("/spec/clusterNetwork").cloned().unwrap_or(serde_json::Value::Null),
                })),
            },
            kubeconfig,
        });
    }
    found.sort_by(|a, b| a.target.name.cmp(&b.target.name));
    not_ready.sort();
    Ok(Discovery { found, not_ready })
}

/// Whether a kubeconfig from a Secret carries its credentials in itself.
/// Whoever can write the Secret must not be able to run a program on this
/// machine (`exec`, `auth-provider`) or make Tazuna read its files
/// (`tokenFile`, `client-certificate`, `client-key`, `certificate-authority`
/// as paths); `Err` says what it asks for.
fn embedded_only(kubeconfig: &Kubeconfig) -> Result<(), String> {
    for user in &kubeconfig.auth_infos {
        let Some(auth) = &user.auth_info else {
            continue;
        };
        let name = &user.name;
        if auth.exec.is_some() {
            return Err(format!("runs a program for user `{name}` (`exec`)"));
        }
        if auth.auth_provider.is_some() {
            return Err(format!(
                "uses an auth provider for user `{name}` (`auth-provider`)"
            ));
        }
        for (field, set) in [
            ("tokenFile", auth.token_file.is_some()),
            ("client-certificate", auth.client_certificate.is_some()),
            ("client-key", auth.client_key.is_some()),
        ] {
            if set {
                return Err(format!(
                    "reads a file of this machine for user `{name}` (`{field}`)"
                ));
            }
        }
    }
    for cluster in &kubeconfig.clusters {
        if cluster
            .cluster
            .as_ref()
            .is_some_and(|c| c.certificate_authority.is_some())
        {
            return Err(format!(
                "reads a file of this machine for cluster `{}` (`certificate-authority`)",
                cluster.name
            ));
        }
    }
    Ok(())
}

/// The Clusters `source` selects, at the first version the server serves.
async fn list(
    client: &Client,
    source: &ClusterApi,
) -> Result<ObjectList<DynamicObject>, kube::Error> {
    let mut params = ListParams::default();
    if let Some(selector) = &source.selector {
        params = params.labels(&selector.to_string());
    }
    let mut last = None;
    for version in VERSIONS {
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(GROUP, version, "Cluster"),
            "clusters",
        );
        let api: Api<DynamicObject> = match &source.namespace {
            Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        match api.list(&params).await {
            Ok(list) => return Ok(list),
            Err(kube::Error::Api(status)) if status.code == 404 => {
                last = Some(kube::Error::Api(status));
            }
            Err(error) => return Err(error),
        }
    }
    Err(last.expect("VERSIONS is not empty"))
}

/// The kubeconfig in Secret `<name>-kubeconfig`, key `value`; `None` while
/// the Secret does not exist.
async fn kubeconfig_of(
    client: &Client,
    name: &str,
    namespace: &str,
    context: &str,
) -> Result<Option<InMemoryKubeconfig>, ClusterApiError> {
    let secret_name = format!("{name}-kubeconfig");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secret = match secrets.get(&secret_name).await {
        Ok(secret) => secret,
        Err(kube::Error::Api(status)) if status.code == 404 => return Ok(None),
        Err(error) => {
            return Err(ClusterApiError::Secret {
                cluster: name.to_owned(),
                namespace: namespace.to_owned(),
                secret: secret_name.clone(),
                context: context.to_owned(),
                message: crate::objects::errors::status_message(&error),
            });
        }
    };
    let invalid = |reason: &str| ClusterApiError::Kubeconfig {
        cluster: name.to_owned(),
        namespace: namespace.to_owned(),
        secret: secret_name.clone(),
        reason: reason.to_owned(),
    };
    let bytes = secret
        .data
        .as_ref()
        .and_then(|data| data.get("value"))
        .ok_or_else(|| invalid("has no key `value`"))?;
    let text = std::str::from_utf8(&bytes.0).map_err(|_| invalid("holds no text under `value`"))?;
    // The parser's message could quote the content; say only that it failed.
    let kubeconfig = Kubeconfig::from_yaml(text)
        .map_err(|_| invalid("holds no valid kubeconfig under `value`"))?;
    if let Err(what) = embedded_only(&kubeconfig) {
        return Err(invalid(&format!(
            "holds a kubeconfig that {what}; Tazuna uses only kubeconfigs whose credentials are written in them, as Cluster API writes them"
        )));
    }
    Ok(Some(InMemoryKubeconfig::new(
        format!("Secret {namespace}/{secret_name}"),
        kubeconfig,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(yaml: &str) -> Result<(), String> {
        embedded_only(&Kubeconfig::from_yaml(yaml).unwrap())
    }

    #[test]
    fn a_secret_kubeconfig_may_not_run_programs_or_read_local_files() {
        let base = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://10.0.0.1\n    certificate-authority-data: Zm9v\nusers:\n- name: u\n  user:\n";
        assert_eq!(
            check(&format!(
                "{base}    client-certificate-data: Zm9v\n    client-key-data: Zm9v\n"
            )),
            Ok(())
        );
        assert_eq!(check(&format!("{base}    token: abc\n")), Ok(()));
        for (user, said) in [
            (
                "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh\n      args: [-c, id]\n",
                "runs a program",
            ),
            ("    auth-provider:\n      name: oidc\n", "auth provider"),
            ("    tokenFile: /etc/shadow\n", "`tokenFile`"),
            (
                "    client-certificate: /root/.ssh/id_rsa\n",
                "`client-certificate`",
            ),
            ("    client-key: /root/.ssh/id_rsa\n", "`client-key`"),
        ] {
            let error = check(&format!("{base}{user}")).unwrap_err();
            assert!(error.contains(said), "{error}");
        }
        let ca_path = base.replace(
            "certificate-authority-data: Zm9v",
            "certificate-authority: /etc/passwd",
        );
        assert!(
            check(&format!("{ca_path}    token: abc\n"))
                .unwrap_err()
                .contains("certificate-authority")
        );
    }
}
