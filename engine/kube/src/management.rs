//! Reads of a cluster Tazuna does not apply to, reached by a context of the
//! kubeconfig (a management cluster): a Secret, for the `kubernetes` secret
//! resolver and `spec.inputs`, and a ConfigMap, for `spec.inputs`. Only
//! `get`; nothing is written.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;

use crate::cluster::{ClusterError, ConnectOptions, client_for};

/// Why a Secret was not read. No variant holds a value.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// It does not exist.
    #[error("not found")]
    NotFound,
    /// The context's user may not get it.
    #[error("{0}")]
    Forbidden(String),
    /// The kubeconfig or the context.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The API server did not answer.
    #[error("the API server of context `{context}` ({server}): {source}")]
    Api {
        context: String,
        server: String,
        #[source]
        source: kube::Error,
    },
}

/// The data of Secret `namespace`/`name` in the cluster `options` select.
pub async fn secret_data(
    options: &ConnectOptions,
    namespace: &str,
    name: &str,
) -> Result<BTreeMap<String, Vec<u8>>, ReadError> {
    read::<Secret>(options, namespace, name, |secret| {
        secret
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(key, value)| (key, value.0))
            .collect()
    })
    .await
}

/// The data (and binary data) of ConfigMap `namespace`/`name`.
pub async fn config_map_data(
    options: &ConnectOptions,
    namespace: &str,
    name: &str,
) -> Result<BTreeMap<String, Vec<u8>>, ReadError> {
    read::<ConfigMap>(options, namespace, name, |map| {
        let mut data: BTreeMap<String, Vec<u8>> = map
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(key, value)| (key, value.into_bytes()))
            .collect();
        data.extend(
            map.binary_data
                .unwrap_or_default()
                .into_iter()
                .map(|(key, value)| (key, value.0)),
        );
        data
    })
    .await
}

/// One `get` of a namespaced object, its data taken by `data`.
async fn read<K>(
    options: &ConnectOptions,
    namespace: &str,
    name: &str,
    data: impl FnOnce(K) -> BTreeMap<String, Vec<u8>>,
) -> Result<BTreeMap<String, Vec<u8>>, ReadError>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let connected = client_for(options).await?;
    let objects: Api<K> = Api::namespaced(connected.client, namespace);
    match objects.get_opt(name).await {
        Ok(Some(object)) => Ok(data(object)),
        Ok(None) => Err(ReadError::NotFound),
        Err(kube::Error::Api(status)) if status.code == 403 || status.code == 401 => {
            Err(ReadError::Forbidden(status.message))
        }
        Err(source) => Err(ReadError::Api {
            context: connected.context,
            server: connected.server,
            source,
        }),
    }
}
