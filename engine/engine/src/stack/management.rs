//! Reads of clusters the run does not apply to, made by the engine for the
//! plugin host and the config loader (which have no Kubernetes client): a
//! Secret for the `clusters` import, and a ConfigMap or Secret (and an S3
//! state, through the host) for `spec.inputs`, each from a cluster reached by
//! a context of the same kubeconfig as the run (a management cluster), with
//! that context's credentials. Only `get`.

use std::collections::BTreeMap;

use tazuna_core::inputs::{FetchError, ObjectInput, ObjectKind, RemoteStates, S3Object};

use crate::cluster::ConnectOptions;
use crate::host::{ClusterSecretError, ClusterSecrets, S3States};
use crate::management::{ReadError, config_map_data, secret_data};

/// Run `read` on a thread and a runtime of its own: callers are synchronous
/// code that may itself run on the run's runtime.
fn off_runtime<T: Send>(
    read: impl std::future::Future<Output = Result<T, ReadError>> + Send,
) -> Result<T, ReadError> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|error| ReadError::Forbidden(error.to_string()))?;
                runtime.block_on(read)
            })
            .join()
            .unwrap_or_else(|_| Err(ReadError::Forbidden("the read panicked".to_owned())))
    })
}

/// What `spec.inputs` reads remotely, registered with `tazuna_core::inputs`
/// by the CLI.
pub struct RemoteInputs {
    /// The run's kubeconfig; the context comes with each input.
    pub kubeconfig: Option<std::path::PathBuf>,
}

impl RemoteStates for RemoteInputs {
    fn fetch_s3(&self, object: &S3Object) -> Result<Vec<u8>, FetchError> {
        S3States.fetch_s3(object)
    }

    fn read_object(&self, object: &ObjectInput) -> Result<BTreeMap<String, Vec<u8>>, FetchError> {
        let options = ConnectOptions {
            kubeconfig: self.kubeconfig.clone(),
            context: Some(object.context.clone()),
            in_memory: None,
        };
        let read = match object.kind {
            ObjectKind::ConfigMap => {
                off_runtime(config_map_data(&options, &object.namespace, &object.name))
            }
            ObjectKind::Secret => {
                off_runtime(secret_data(&options, &object.namespace, &object.name))
            }
        };
        read.map_err(|error| match error {
            ReadError::NotFound => FetchError::NotFound,
            ReadError::Forbidden(why) => FetchError::Refused(why),
            other => FetchError::Unreachable(described(&other)),
        })
    }
}

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
        let read = off_runtime(secret_data(&options, &namespace, &name));
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
