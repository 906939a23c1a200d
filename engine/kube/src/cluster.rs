//! The connection to one cluster: which kubeconfig context, which server, and
//! which cluster that really is (the UID of its `kube-system` namespace), plus
//! the discovery of the kinds it serves.
//!
//! Connecting only reads. Nothing here writes to the cluster; the guard in
//! [`crate::guard`] decides whether anything may.

use std::path::{Path, PathBuf};
use std::sync::RwLock;

use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::{ApiCapabilities, Discovery, Scope};
use kube::{Api, Client};
use tazuna_core::inventory::ObjectRef;

use tazuna_core::render::{ApiResource as ApiResourceInfo, ClusterInfo};

/// Where to connect: `--kubeconfig` and `--context`.
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    /// The kubeconfig file; `None` follows `$KUBECONFIG`, then `~/.kube/config`.
    pub kubeconfig: Option<PathBuf>,
    /// The context; `None` takes the kubeconfig's current context.
    pub context: Option<String>,
    /// A kubeconfig held in memory (read from a Cluster API Secret), used
    /// instead of any file. It is never written anywhere.
    pub in_memory: Option<InMemoryKubeconfig>,
}

/// A kubeconfig that lives only in memory. Its `Debug` shows nothing of it,
/// so it cannot reach a log.
#[derive(Clone)]
pub struct InMemoryKubeconfig {
    /// Where it came from, for messages (`Secret fleet/tokyo-kubeconfig`).
    pub origin: String,
    kubeconfig: std::sync::Arc<Kubeconfig>,
}

impl InMemoryKubeconfig {
    /// `kubeconfig`, read from `origin`.
    pub fn new(origin: String, kubeconfig: Kubeconfig) -> Self {
        Self {
            origin,
            kubeconfig: std::sync::Arc::new(kubeconfig),
        }
    }
}

impl std::fmt::Debug for InMemoryKubeconfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InMemoryKubeconfig({})", self.origin)
    }
}

/// The cluster a command works on, as it is shown before any write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    /// The kubeconfig context.
    pub context: String,
    /// The API server URL.
    pub server: String,
    /// The UID of the `kube-system` namespace: the cluster's identity.
    pub uid: String,
    /// The server's version, such as `v1.37.2`.
    pub version: String,
}

impl std::fmt::Display for Destination {
    /// `context kind-staging, server https://127.0.0.1:6443, cluster 1b2c… (v1.37.2)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "context `{}`, server {}, cluster {} ({})",
            self.context, self.server, self.uid, self.version
        )
    }
}

/// Why Tazuna could not reach or identify the cluster.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The kubeconfig could not be read or has no usable context.
    #[error("cannot use the kubeconfig{}", describe_path(.path.as_deref()))]
    Kubeconfig {
        /// The file, when one was named.
        path: Option<PathBuf>,
        /// What kube-rs said.
        #[source]
        source: KubeconfigError,
    },
    /// The kubeconfig has no current context and none was given.
    #[error("the kubeconfig has no current context")]
    NoContext,
    /// The named context is not in the kubeconfig.
    #[error("context `{context}` is not in the kubeconfig (it has: {known})")]
    UnknownContext {
        /// The context asked for.
        context: String,
        /// The contexts it has.
        known: String,
    },
    /// The HTTP client could not be built.
    #[error("cannot build a client for context `{context}`")]
    Client {
        /// The context.
        context: String,
        /// What kube-rs said.
        #[source]
        source: kube::Error,
    },
    /// The API server did not answer a read.
    #[error("cannot reach the API server of context `{context}` ({server})")]
    Unreachable {
        /// The context.
        context: String,
        /// The server URL.
        server: String,
        /// What kube-rs said.
        #[source]
        source: kube::Error,
    },
}

impl tazuna_core::hint::Hint for ClusterError {
    fn hint(&self) -> Option<String> {
        match self {
            Self::Kubeconfig { path: None, .. } => Some(
                "pass `--kubeconfig <file>` or set `KUBECONFIG`; `kubectl config view` shows the one kubectl uses".into(),
            ),
            Self::Kubeconfig { path: Some(_), .. } => {
                Some("check the path given to `--kubeconfig`".into())
            }
            Self::NoContext => Some("pass `--context <name>`, or run `kubectl config use-context <name>`".into()),
            Self::UnknownContext { .. } => Some("list contexts with `kubectl config get-contexts`".into()),
            Self::Unreachable { .. } => Some(
                "check that the cluster is up and that `kubectl --context <name> get --raw /version` works".into(),
            ),
            _ => None,
        }
    }
}

fn describe_path(path: Option<&Path>) -> String {
    path.map(|p| format!(" `{}`", p.display()))
        .unwrap_or_default()
}

/// The context `options` select, read from the kubeconfig without connecting.
/// The context guard checks this name before anything talks to a cluster.
pub fn context_name(options: &ConnectOptions) -> Result<String, ClusterError> {
    if in_cluster(options).is_some() {
        return Ok(IN_CLUSTER.to_owned());
    }
    let kubeconfig = read_kubeconfig(options)?;
    select_context(&kubeconfig, options)
}

fn read_kubeconfig(options: &ConnectOptions) -> Result<Kubeconfig, ClusterError> {
    if let Some(in_memory) = &options.in_memory {
        return Ok((*in_memory.kubeconfig).clone());
    }
    match &options.kubeconfig {
        Some(path) => Kubeconfig::read_from(path),
        None => Kubeconfig::read(),
    }
    .map_err(|source| ClusterError::Kubeconfig {
        path: options.kubeconfig.clone(),
        source,
    })
}

fn select_context(
    kubeconfig: &Kubeconfig,
    options: &ConnectOptions,
) -> Result<String, ClusterError> {
    let name = match &options.context {
        Some(context) => context.clone(),
        None => kubeconfig
            .current_context
            .clone()
            .filter(|c| !c.is_empty())
            .ok_or(ClusterError::NoContext)?,
    };
    if !kubeconfig.contexts.iter().any(|c| c.name == name) {
        let known: Vec<String> = kubeconfig
            .contexts
            .iter()
            .map(|c| format!("`{}`", c.name))
            .collect();
        return Err(ClusterError::UnknownContext {
            context: name,
            known: if known.is_empty() {
                "none".into()
            } else {
                known.join(", ")
            },
        });
    }
    Ok(name)
}

/// A connected cluster: the client, the target it points at, and what kinds
/// it serves.
pub struct Cluster {
    client: Client,
    target: Destination,
    discovery: RwLock<Discovery>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("target", &self.target)
            .finish()
    }
}

/// How an object's kind resolves on this cluster.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The resource to call.
    pub resource: ApiResource,
    /// Whether objects of the kind live in namespaces.
    pub namespaced: bool,
}

/// A client, and where it points, before anything is read.
#[derive(Clone)]
pub struct Connected {
    /// The client (user agent `tazuna/<version>`).
    pub client: Client,
    /// The kubeconfig context.
    pub context: String,
    /// The API server URL.
    pub server: String,
}

/// The context name shown for the cluster a pod runs in.
pub const IN_CLUSTER: &str = "in-cluster";

/// In a pod, with no kubeconfig named and none at `$KUBECONFIG` or
/// `~/.kube/config`: the pod's own cluster through its service account (a
/// Job per cluster in a management cluster).
fn in_cluster(options: &ConnectOptions) -> Option<kube::Config> {
    let named = options.kubeconfig.is_some()
        || options.in_memory.is_some()
        || options.context.as_deref().is_some_and(|c| c != IN_CLUSTER);
    if named || std::env::var_os("KUBERNETES_SERVICE_HOST").is_none() || Kubeconfig::read().is_ok()
    {
        return None;
    }
    kube::Config::incluster().ok()
}

/// A client for the cluster `options` select, without a request: for a
/// cluster Tazuna only reads a few objects of (a Cluster API management
/// cluster), where it needs no rights beyond those reads.
pub async fn client_for(options: &ConnectOptions) -> Result<Connected, ClusterError> {
    // ring is the process's rustls provider, as in tazuna-plugin-host's
    // `tls::install` (this crate does not depend on that one).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (mut config, context) = match in_cluster(options) {
        Some(config) => (config, IN_CLUSTER.to_owned()),
        None => {
            let kubeconfig = read_kubeconfig(options)?;
            let context = select_context(&kubeconfig, options)?;
            let kube_options = KubeConfigOptions {
                context: Some(context.clone()),
                ..KubeConfigOptions::default()
            };
            let config = kube::Config::from_custom_kubeconfig(kubeconfig, &kube_options)
                .await
                .map_err(|source| ClusterError::Kubeconfig {
                    path: options.kubeconfig.clone(),
                    source,
                })?;
            (config, context)
        }
    };
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(concat!("tazuna/", env!("CARGO_PKG_VERSION"))),
    ));
    let server = config.cluster_url.to_string();
    let server = server.trim_end_matches('/').to_owned();
    let client = kube::client::ClientBuilder::try_from(config)
        .map_err(|source| ClusterError::Client {
            context: context.clone(),
            source,
        })?
        .with_layer(&crate::warnings::WarningLayer)
        .build();
    Ok(Connected {
        client,
        context,
        server,
    })
}

impl Cluster {
    /// Connect with `options`, read the cluster's identity and discover its
    /// kinds. Only reads.
    pub async fn connect(options: &ConnectOptions) -> Result<Self, ClusterError> {
        let Connected {
            client,
            context,
            server,
        } = client_for(options).await?;
        let unreachable = |source| ClusterError::Unreachable {
            context: context.clone(),
            server: server.clone(),
            source,
        };
        let version = client.apiserver_version().await.map_err(unreachable)?;
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
        let kube_system = namespaces.get("kube-system").await.map_err(unreachable)?;
        let discovery = Discovery::new(client.clone())
            .run_aggregated()
            .await
            .map_err(unreachable)?;
        Ok(Self {
            target: Destination {
                context: context.clone(),
                server: server.clone(),
                uid: kube_system.metadata.uid.unwrap_or_default(),
                version: version.git_version,
            },
            client,
            discovery: RwLock::new(discovery),
        })
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Where this points.
    pub fn target(&self) -> &Destination {
        &self.target
    }

    /// The kind of `object`, as this cluster serves it; `None` when it does
    /// not (yet) serve it.
    pub fn resolve(&self, object: &ObjectRef) -> Option<Resolved> {
        let gvk = GroupVersionKind::gvk(&object.group, &object.version, &object.kind);
        let discovery = self.discovery.read().expect("discovery lock");
        discovery
            .resolve_gvk(&gvk)
            .map(
                |(resource, caps): (ApiResource, ApiCapabilities)| Resolved {
                    resource,
                    namespaced: caps.scope == Scope::Namespaced,
                },
            )
    }

    /// Discover the served kinds again (after CRDs were established).
    pub async fn refresh(&self) -> Result<(), kube::Error> {
        let fresh = Discovery::new(self.client.clone()).run_aggregated().await?;
        *self.discovery.write().expect("discovery lock") = fresh;
        Ok(())
    }

    /// What plugins learn about the cluster (for `helm --kube-version` and
    /// `--api-versions`).
    pub fn info(&self) -> ClusterInfo {
        let discovery = self.discovery.read().expect("discovery lock");
        let mut api_versions = Vec::new();
        let mut resources = Vec::new();
        for group in discovery.groups() {
            for version in group.versions() {
                let group_version = if group.name().is_empty() {
                    version.to_owned()
                } else {
                    format!("{}/{version}", group.name())
                };
                for (resource, caps) in group.versioned_resources(version) {
                    resources.push(ApiResourceInfo {
                        group_version: group_version.clone(),
                        kind: resource.kind,
                        namespaced: caps.scope == Scope::Namespaced,
                    });
                }
                api_versions.push(group_version);
            }
        }
        api_versions.sort();
        ClusterInfo {
            kube_version: self.target.version.clone(),
            api_versions,
            resources,
        }
    }
}
