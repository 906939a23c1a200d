//! The `clusters` import's reads, made by the engine for the plugin host
//! (which has no Kubernetes client): a Secret of a cluster reached by a
//! context of the same kubeconfig as the run (a management cluster), with
//! that context's credentials. Only `get`.

use std::collections::BTreeMap;

use crate::cluster::ConnectOptions;
use crate::host::{ClusterSecretError, ClusterSecrets};
use crate::management::{ReadError, secret_data};

/// Reads through the run's kubeconfig.
pub(super) struct ManagementSecrets {
    /// The run's kubeconfig; the context comes with each read.
    pub(super) kubeconfig: Option<std::path::PathBuf>,
}

impl ClusterSecrets for ManagementSecrets {
    fn read_secret(
        &self,
        context: &str,
        namespace: &str,
        name: &str,
    ) -> Result<BTreeMap<String, Vec<u8>>, ClusterSecretError> {
        let options = ConnectOptions {
            kubeconfig: self.kubeconfig.clone(),
            context: Some(context.to_owned()),
            in_memory: None,
        };
        let (namespace, name) = (namespace.to_owned(), name.to_owned());
        // The resolver is called from synchronous code, which may run on the
        // run's runtime: the read gets a thread and a runtime of its own.
        let read = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|error| ReadError::Forbidden(error.to_string()))?;
                    runtime.block_on(secret_data(&options, &namespace, &name))
                })
                .join()
                .unwrap_or_else(|_| Err(ReadError::Forbidden("the read panicked".to_owned())))
        });
        read.map_err(|error| match error {
            ReadError::NotFound => ClusterSecretError::NotFound {
                context: context.to_owned(),
                namespace,
                name,
            },
            ReadError::Forbidden(why) => ClusterSecretError::Forbidden {
                context: context.to_owned(),
                namespace,
                name,
                why,
            },
            other => ClusterSecretError::Unreachable(described(&other)),
        })
    }
}

/// `error` with its causes, and its hint when it has one: the text the
/// resolver's error carries to the user.
fn described(error: &ReadError) -> String {
    use tazuna_core::hint::Hint as _;
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    if let ReadError::Cluster(cluster) = error
        && let Some(hint) = cluster.hint()
    {
        text.push_str(&format!(" ({hint})"));
    }
    text
}
