//! Reading and writing the per-manifest state ConfigMaps, namespace
//! `tazuna`, and the key Secret hashes are keyed with.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::Api;
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};

use super::legacy::migrate_go;
use super::*;

impl Store {
    /// A store on `client`'s cluster.
    pub fn new(client: Client) -> Self {
        Self { client }
    }

    fn config_maps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), NAMESPACE)
    }

    /// Every manifest's state, by manifest name, in one list call. Go Tazuna
    /// state is included where no state of this version exists.
    pub async fn load(&self) -> Result<BTreeMap<String, Stored>, StateError> {
        let list = match self.config_maps().list(&ListParams::default()).await {
            Ok(list) => list,
            Err(e) if is_status(&e, 404) => return Ok(BTreeMap::new()),
            Err(e) => return Err(request("list")(e)),
        };
        let mut states = BTreeMap::new();
        let mut legacy = Vec::new();
        for config_map in list.items {
            let name = config_map.metadata.name.clone().unwrap_or_default();
            let ours = config_map
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(STATE_LABEL))
                .is_some_and(|v| v == "manifest");
            if ours {
                let state = decode(&config_map).map_err(|message| StateError::Damaged {
                    name: name.clone(),
                    message,
                })?;
                states.insert(
                    state.manifest.clone(),
                    Stored {
                        state,
                        resource_version: config_map.metadata.resource_version.clone(),
                        legacy: None,
                    },
                );
            } else if let Some(manifest) = name.strip_prefix(GO_PREFIX) {
                legacy.push((manifest.to_owned(), name.clone(), config_map));
            }
        }
        for (manifest, name, config_map) in legacy {
            if states.contains_key(&manifest) {
                continue;
            }
            let state =
                migrate_go(&manifest, &config_map).map_err(|message| StateError::Damaged {
                    name: name.clone(),
                    message,
                })?;
            states.insert(
                manifest,
                Stored {
                    state,
                    resource_version: None,
                    legacy: Some(name),
                },
            );
        }
        Ok(states)
    }

    /// Make sure namespace `tazuna` exists.
    pub async fn ensure_namespace(&self) -> Result<(), StateError> {
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        if namespaces
            .get_opt(NAMESPACE)
            .await
            .map_err(request("read namespace `tazuna`"))?
            .is_some()
        {
            return Ok(());
        }
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(NAMESPACE.into()),
                labels: Some([(MANAGED_BY.0.to_owned(), MANAGED_BY.1.to_owned())].into()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        match namespaces.create(&PostParams::default(), &namespace).await {
            Ok(_) => Ok(()),
            Err(e) if is_status(&e, 409) => Ok(()),
            Err(e) => Err(request("create namespace `tazuna`")(e)),
        }
    }

    /// Write `state`. `previous` is what [`load`](Self::load) returned for it;
    /// the write fails with [`StateError::Conflict`] if the state changed since.
    /// Returns the new `resourceVersion`.
    pub async fn save(
        &self,
        state: &ManifestState,
        previous: Option<&Stored>,
    ) -> Result<String, StateError> {
        let name = object_name(&state.manifest);
        let mut config_map = encode(state);
        config_map.metadata.name = Some(name.clone());
        config_map.metadata.namespace = Some(NAMESPACE.into());
        let api = self.config_maps();
        let written = match previous.and_then(|p| p.resource_version.clone()) {
            Some(resource_version) => {
                config_map.metadata.resource_version = Some(resource_version);
                api.replace(&name, &PostParams::default(), &config_map)
                    .await
            }
            None => api.create(&PostParams::default(), &config_map).await,
        };
        let written = match written {
            Ok(written) => written,
            Err(e) if is_status(&e, 409) => {
                return Err(StateError::Conflict {
                    manifest: state.manifest.clone(),
                });
            }
            Err(e) => {
                return Err(request(format!(
                    "write the state of manifest `{}`",
                    state.manifest
                ))(e));
            }
        };
        if let Some(legacy) = previous.and_then(|p| p.legacy.as_ref()) {
            match api.delete(legacy, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(e) if is_status(&e, 404) => {}
                Err(e) => return Err(request(format!("delete the Go Tazuna state `{legacy}`"))(e)),
            }
        }
        Ok(written.metadata.resource_version.unwrap_or_default())
    }

    /// Delete a manifest's state (and any Go Tazuna state of the same name).
    pub async fn delete(&self, stored: &Stored) -> Result<(), StateError> {
        let api = self.config_maps();
        let mut names = vec![object_name(&stored.state.manifest)];
        names.extend(stored.legacy.clone());
        for name in names {
            let params = DeleteParams::default();
            match api.delete(&name, &params).await {
                Ok(_) => {}
                Err(e) if is_status(&e, 404) => {}
                Err(e) => return Err(request(format!("delete state `{name}`"))(e)),
            }
        }
        Ok(())
    }

    /// The key for hashing Secrets, if it exists (read-only commands).
    pub async fn hash_key(&self) -> Result<Option<Vec<u8>>, StateError> {
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), NAMESPACE);
        let secret = match secrets.get_opt(HASH_KEY_SECRET).await {
            Ok(secret) => secret,
            Err(e) if is_status(&e, 404) => None,
            Err(e) => return Err(request("read the hash key")(e)),
        };
        Ok(secret
            .and_then(|s| s.data)
            .and_then(|mut d| d.remove("key"))
            .map(|k| k.0))
    }

    /// The key for hashing Secrets, created on first use.
    pub async fn ensure_hash_key(&self) -> Result<Vec<u8>, StateError> {
        if let Some(key) = self.hash_key().await? {
            return Ok(key);
        }
        let key = random_key();
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(HASH_KEY_SECRET.into()),
                namespace: Some(NAMESPACE.into()),
                labels: Some([(MANAGED_BY.0.to_owned(), MANAGED_BY.1.to_owned())].into()),
                ..ObjectMeta::default()
            },
            data: Some([("key".to_owned(), ByteString(key.clone()))].into()),
            ..Secret::default()
        };
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), NAMESPACE);
        match secrets.create(&PostParams::default(), &secret).await {
            Ok(_) => Ok(key),
            // Another run created it first: use theirs.
            Err(e) if is_status(&e, 409) => Ok(self.hash_key().await?.unwrap_or(key)),
            Err(e) => Err(request("create the hash key")(e)),
        }
    }
}

fn random_key() -> Vec<u8> {
    let mut key = vec![0; 32];
    if let Ok(mut urandom) = std::fs::File::open("/dev/urandom")
        && urandom.read_exact(&mut key).is_ok()
    {
        return key;
    }
    // No /dev/urandom: derive one from the clock and the process, which is
    // still unguessable from outside the cluster's Secrets.
    use sha2::Digest;
    let seed = format!(
        "{:?}{}{:?}",
        std::time::SystemTime::now(),
        std::process::id(),
        std::thread::current().id()
    );
    sha2::Sha256::digest(seed.as_bytes()).to_vec()
}

fn encode(state: &ManifestState) -> ConfigMap {
    let json = serde_json::to_string(state).expect("state always serialises");
    let mut config_map = ConfigMap {
        metadata: ObjectMeta {
            labels: Some(
                [
                    (MANAGED_BY.0.to_owned(), MANAGED_BY.1.to_owned()),
                    (STATE_LABEL.to_owned(), "manifest".to_owned()),
                ]
                .into(),
            ),
            annotations: Some(
                [(MANIFEST_ANNOTATION.to_owned(), state.manifest.clone())]
                    .into_iter()
                    .chain(
                        state
                            .stack
                            .clone()
                            .map(|stack| (STACK_ANNOTATION.to_owned(), stack)),
                    )
                    .collect(),
            ),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    if json.len() > COMPRESS_ABOVE {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder
            .write_all(json.as_bytes())
            .expect("writing to memory");
        let bytes = encoder.finish().expect("writing to memory");
        config_map.binary_data = Some([(COMPRESSED_KEY.to_owned(), ByteString(bytes))].into());
    } else {
        config_map.data = Some([(PLAIN_KEY.to_owned(), json)].into());
    }
    config_map
}

fn decode(config_map: &ConfigMap) -> Result<ManifestState, String> {
    if let Some(json) = config_map.data.as_ref().and_then(|d| d.get(PLAIN_KEY)) {
        return serde_json::from_str(json).map_err(|e| e.to_string());
    }
    if let Some(bytes) = config_map
        .binary_data
        .as_ref()
        .and_then(|d| d.get(COMPRESSED_KEY))
    {
        let mut json = String::new();
        flate2::read::GzDecoder::new(bytes.0.as_slice())
            .read_to_string(&mut json)
            .map_err(|e| format!("cannot decompress `{COMPRESSED_KEY}`: {e}"))?;
        return serde_json::from_str(&json).map_err(|e| e.to_string());
    }
    Err(format!(
        "it has neither `{PLAIN_KEY}` nor `{COMPRESSED_KEY}`"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(objects: usize) -> ManifestState {
        ManifestState {
            manifest: "argocd".into(),
            depends_on: vec!["cni".into()],
            position: 1,
            plugin: PluginRecord {
                name: "manifests".into(),
                version: "0.1.0".into(),
                digest: "ab".into(),
            },
            tazuna_version: "0.1.0".into(),
            git_commit: None,
            applied_at: "2026-11-30T00:00:00Z".into(),
            cluster: "uid".into(),
            stack: Some("platform".into()),
            origin: None,
            incomplete: false,
            objects: (0..objects)
                .map(|i| Entry {
                    group: String::new(),
                    version: "v1".into(),
                    kind: "ConfigMap".into(),
                    namespace: Some("app".into()),
                    name: format!("config-{i}"),
                    hash: format!("sha256:{:064x}", i * 7919),
                    fields: Some(format!("sha256:{:064x}", i * 104729)),
                    removed_when_done: false,
                    adopted_from: Vec::new(),
                    handover: None,
                })
                .collect(),
        }
    }
    #[test]
    fn small_states_are_plain_json_and_big_ones_compressed() {
        let small = encode(&state(3));
        assert!(small.data.as_ref().unwrap().contains_key(PLAIN_KEY));
        assert_eq!(decode(&small).unwrap(), state(3));
        let big = encode(&state(10_000));
        let bytes = &big.binary_data.as_ref().unwrap()[COMPRESSED_KEY].0;
        assert!(
            bytes.len() < 1024 * 1024,
            "10,000 objects take {} bytes",
            bytes.len()
        );
        assert_eq!(decode(&big).unwrap(), state(10_000));
    }
}
