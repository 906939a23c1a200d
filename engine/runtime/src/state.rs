//! Tazuna's state in the cluster: one ConfigMap per manifest in namespace
//! `tazuna`, the key for hashing Secrets, and the Lease that serialises runs.
//!
//! A manifest's state is its inventory (every object it applied, with a
//! content hash and a hash of the fields Tazuna owns), the plugin that
//! rendered it, the tazuna version, the git commit, the time and the cluster
//! identity. It is written with optimistic concurrency (the ConfigMap's
//! `resourceVersion`), and only after the manifest applied and its tests
//! passed. Secret values never reach it: their hashes are keyed.
//!
//! State left by Go Tazuna (`ConfigMap tazuna/tazuna-state-<name>`) is read
//! as well: its inventory is taken over, and the old ConfigMap is deleted once
//! the new state for that manifest is written.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde::{Deserialize, Serialize};
use tazuna_core::inventory::ObjectRef;

/// The namespace that holds Tazuna's state.
pub const NAMESPACE: &str = "tazuna";
/// The label every state object carries.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "tazuna");
const STATE_LABEL: &str = "tazuna.dev/state";
const MANIFEST_ANNOTATION: &str = "tazuna.dev/manifest";
const STACK_ANNOTATION: &str = "tazuna.dev/stack";
const PLAIN_KEY: &str = "state.json";
const COMPRESSED_KEY: &str = "state.json.gz";
/// States bigger than this are stored gzip-compressed (a ConfigMap holds at most 1 MiB).
const COMPRESS_ABOVE: usize = 256 * 1024;
const GO_PREFIX: &str = "tazuna-state-";
const HASH_KEY_SECRET: &str = "tazuna-hash-key";
const LEASE: &str = "tazuna-lock";

/// What Tazuna recorded about one manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestState {
    /// The manifest's name.
    pub manifest: String,
    /// Its `dependsOn` when it was applied (destroy runs in reverse).
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// Its position in the file when it was applied (destroy's order without `dependsOn`).
    #[serde(default)]
    pub position: usize,
    /// The plugin that rendered it.
    pub plugin: PluginRecord,
    /// The tazuna that applied it.
    pub tazuna_version: String,
    /// The git commit of the config, if it was in a git work tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_commit: Option<String>,
    /// When it was applied (RFC 3339).
    pub applied_at: String,
    /// The cluster identity (kube-system UID) it was applied to.
    pub cluster: String,
    /// The stack (the file) that applied it; `None` in state written by Go
    /// Tazuna or by versions before stacks, which the first stack that
    /// declares the manifest adopts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
    /// The last apply of this manifest failed part way: every object it sent
    /// is recorded, and each is sent and waited for again on the next apply.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
    /// Every object it applied.
    pub objects: Vec<Entry>,
}

/// The plugin that rendered a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PluginRecord {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Hex SHA-256 of its component.
    pub digest: String,
}

/// One object in a manifest's inventory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// API group; empty for core.
    #[serde(default)]
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Namespace, for namespaced objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
    /// The content hash of what Tazuna sent (`sha256:`/`hmac-sha256:`; `go:` for migrated state).
    pub hash: String,
    /// A hash of the fields the field manager `tazuna` owned after the apply;
    /// when it is unchanged live, nobody changed what Tazuna set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<String>,
}

impl Entry {
    /// The object's identity.
    pub fn object(&self) -> ObjectRef {
        ObjectRef {
            group: self.group.clone(),
            version: self.version.clone(),
            kind: self.kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }

    /// An entry for `object`.
    pub fn new(object: &ObjectRef, hash: String, fields: Option<String>) -> Self {
        Self {
            group: object.group.clone(),
            version: object.version.clone(),
            kind: object.kind.clone(),
            namespace: object.namespace.clone(),
            name: object.name.clone(),
            hash,
            fields,
        }
    }
}

/// A state as read from the cluster, with what is needed to write it back.
#[derive(Debug, Clone)]
pub struct Stored {
    /// The state.
    pub state: ManifestState,
    /// The ConfigMap's `resourceVersion`; `None` for state migrated from Go
    /// Tazuna (the new ConfigMap does not exist yet).
    pub resource_version: Option<String>,
    /// The Go Tazuna ConfigMap this came from, deleted after the first write.
    pub legacy: Option<String>,
}

/// Why state could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// A request failed.
    #[error("cannot {action} Tazuna's state in namespace `tazuna`")]
    Request {
        /// What was being done.
        action: String,
        /// What the API server said.
        #[source]
        source: kube::Error,
    },
    /// Someone else wrote the state in between.
    #[error("the state of manifest `{manifest}` changed while this run was applying it")]
    Conflict {
        /// The manifest.
        manifest: String,
    },
    /// A state object cannot be parsed.
    #[error("the state ConfigMap `tazuna/{name}` is damaged: {message}")]
    Damaged {
        /// The ConfigMap.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// Another run holds the lock.
    #[error(
        "another run holds the lock on this cluster: `{holder}` (Lease `tazuna/tazuna-lock`, renewed {renewed})"
    )]
    Locked {
        /// Who holds it.
        holder: String,
        /// When it was last renewed.
        renewed: String,
    },
}

impl tazuna_core::hint::Hint for StateError {
    fn hint(&self) -> Option<String> {
        match self {
            Self::Conflict { .. } => Some("another run may be working on this cluster; rerun once it is done, and the state converges".into()),
            Self::Locked { .. } => Some("wait for it to finish, or pass `--lock-timeout <seconds>` to wait longer; a crashed run's lock is taken over 60 s after its last renewal, or once it stays unchanged for 60 s (at once for a run on this host)".into()),
            Self::Damaged { name, .. } => Some(format!("inspect it with `kubectl -n tazuna get configmap {name} -o yaml`; deleting it makes Tazuna forget that manifest's objects")),
            Self::Request { .. } => None,
        }
    }
}

fn request(action: impl Into<String>) -> impl FnOnce(kube::Error) -> StateError {
    let action = action.into();
    move |source| StateError::Request { action, source }
}

fn is_status(error: &kube::Error, code: u16) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == code)
}

/// The ConfigMap name of a manifest's state. Manifest names may hold
/// characters Kubernetes names may not; those get a hash suffix.
pub fn object_name(manifest: &str) -> String {
    let valid = !manifest.is_empty()
        && manifest.len() <= 200
        && manifest
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !manifest.starts_with('-')
        && !manifest.ends_with('-');
    if valid {
        return format!("tazuna-manifest-{manifest}");
    }
    let cleaned: String = manifest
        .chars()
        .take(180)
        .map(|c| match c {
            'a'..='z' | '0'..='9' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '-',
        })
        .collect();
    let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(manifest.as_bytes()));
    format!(
        "tazuna-manifest-{}-{}",
        cleaned.trim_matches('-'),
        &digest[..8]
    )
}

/// Reads and writes state.
#[derive(Clone)]
pub struct Store {
    client: Client,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Store")
    }
}

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

    /// Take the cluster's lock, waiting up to `timeout` for another holder.
    ///
    /// A Lease is not trusted forever: one whose renew time has passed by its
    /// duration, whose holder was a run on this host that is gone, or that
    /// stayed unchanged for [`LEASE_SECONDS`] while this run watched it (a
    /// renew time in the future proves nothing) is taken over. Waiting is
    /// stretched to that bound, so a planted or abandoned Lease never blocks
    /// a run for good.
    pub async fn lock(&self, holder: &str, timeout: Duration) -> Result<LockGuard, StateError> {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), NAMESPACE);
        let mut deadline = tokio::time::Instant::now() + timeout;
        let mut watched: Option<Watched> = None;
        loop {
            match self.try_lock(&leases, holder, &mut watched).await? {
                Attempt::Taken { from } => {
                    let renew = tokio::spawn(renew_lease(leases.clone(), holder.to_owned()));
                    return Ok(LockGuard {
                        leases,
                        holder: holder.to_owned(),
                        renew,
                        taken_over: from,
                    });
                }
                Attempt::Held(error) => {
                    if let Some(watched) = &watched {
                        deadline =
                            deadline.max(watched.since + STALE_AFTER + Duration::from_secs(1));
                    }
                    if tokio::time::Instant::now() >= deadline {
                        return Err(error);
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        }
    }

    /// One try at the lock.
    async fn try_lock(
        &self,
        leases: &Api<Lease>,
        holder: &str,
        watched: &mut Option<Watched>,
    ) -> Result<Attempt, StateError> {
        let now = jiff::Timestamp::now();
        let fresh = Lease {
            metadata: ObjectMeta {
                name: Some(LEASE.into()),
                namespace: Some(NAMESPACE.into()),
                labels: Some([(MANAGED_BY.0.to_owned(), MANAGED_BY.1.to_owned())].into()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(holder.to_owned()),
                lease_duration_seconds: Some(LEASE_SECONDS),
                acquire_time: Some(MicroTime(now)),
                renew_time: Some(MicroTime(now)),
                ..LeaseSpec::default()
            }),
        };
        let raced = || {
            Attempt::Held(StateError::Locked {
                holder: "another run".into(),
                renewed: "just now".into(),
            })
        };
        let Some(current) = leases
            .get_opt(LEASE)
            .await
            .map_err(request("read the lock"))?
        else {
            return match leases.create(&PostParams::default(), &fresh).await {
                Ok(_) => Ok(Attempt::Taken { from: None }),
                Err(e) if is_status(&e, 409) => Ok(raced()),
                Err(e) => Err(request("create the lock")(e)),
            };
        };
        let spec = current.spec.clone().unwrap_or_default();
        let held_by = spec.holder_identity.clone().unwrap_or_default();
        let version = current
            .metadata
            .resource_version
            .clone()
            .unwrap_or_default();
        if watched.as_ref().is_none_or(|w| w.version != version) {
            *watched = Some(Watched {
                version: version.clone(),
                since: tokio::time::Instant::now(),
            });
        }
        let unchanged_for = watched
            .as_ref()
            .map(|w| w.since.elapsed())
            .unwrap_or_default();
        let verdict = lease_verdict(&spec, now, unchanged_for, crashed_here(&held_by));
        if !held_by.is_empty() && held_by != holder && verdict == LeaseVerdict::Live {
            let renewed = spec
                .renew_time
                .as_ref()
                .map(|r| {
                    if r.0 > now {
                        format!(
                            "{} (in the future; taken over if it stays unchanged for {} s)",
                            r.0,
                            STALE_AFTER.as_secs()
                        )
                    } else {
                        r.0.to_string()
                    }
                })
                .unwrap_or_else(|| "never".into());
            return Ok(Attempt::Held(StateError::Locked {
                holder: held_by,
                renewed,
            }));
        }
        let from = (!held_by.is_empty() && held_by != holder)
            .then(|| format!("`{held_by}` ({})", verdict.reason()));
        let mut taken = fresh;
        taken.metadata.resource_version = current.metadata.resource_version.clone();
        match leases.replace(LEASE, &PostParams::default(), &taken).await {
            Ok(_) => Ok(Attempt::Taken { from }),
            Err(e) if is_status(&e, 409) => Ok(raced()),
            Err(e) => Err(request("take the lock")(e)),
        }
    }
}

/// A Lease this run has seen, and since when it has not changed.
#[derive(Debug)]
struct Watched {
    version: String,
    since: tokio::time::Instant,
}

/// What one try at the lock found.
enum Attempt {
    /// The lock is this run's; `from` names the holder it was taken from.
    Taken { from: Option<String> },
    /// Someone else holds it.
    Held(StateError),
}

/// Whether a Lease someone holds may be taken over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LeaseVerdict {
    /// Its holder renews it: wait.
    Live,
    /// Its renew time passed by more than its duration.
    Expired,
    /// Its holder was a run on this host that is gone.
    HolderGone,
    /// It did not change while this run watched it for [`STALE_AFTER`]; its
    /// renew time (perhaps in the future) is not believed.
    Stale,
}

impl LeaseVerdict {
    fn reason(self) -> &'static str {
        match self {
            Self::Live => "held",
            Self::Expired => "expired",
            Self::HolderGone => "its process is gone",
            Self::Stale => "not renewed while this run waited",
        }
    }
}

/// Longest lease duration believed; a bigger one is treated as this.
const MAX_LEASE_SECONDS: i64 = 300;

/// How long a Lease may stay unchanged before it is taken over, whatever it
/// says of itself. A live holder renews every 20 s.
const STALE_AFTER: Duration = Duration::from_secs(LEASE_SECONDS as u64);

fn lease_verdict(
    spec: &LeaseSpec,
    now: jiff::Timestamp,
    unchanged_for: Duration,
    holder_gone: bool,
) -> LeaseVerdict {
    if holder_gone {
        return LeaseVerdict::HolderGone;
    }
    let duration =
        i64::from(spec.lease_duration_seconds.unwrap_or(LEASE_SECONDS)).clamp(1, MAX_LEASE_SECONDS);
    match spec.renew_time.as_ref().map(|t| t.0) {
        None => return LeaseVerdict::Expired,
        Some(renewed) if now.as_second() - renewed.as_second() > duration => {
            return LeaseVerdict::Expired;
        }
        _ => {}
    }
    if unchanged_for >= STALE_AFTER {
        return LeaseVerdict::Stale;
    }
    LeaseVerdict::Live
}

const LEASE_SECONDS: i32 = 60;

/// Who takes the lock: `user@host pid N (time)`, so that another run can say
/// who holds it, and a run on the same host can tell that its holder died.
pub fn holder_identity() -> String {
    let user = std::env::var("USER").unwrap_or_else(|_| "someone".into());
    format!(
        "{user}@{} pid {} ({})",
        host_name(),
        std::process::id(),
        jiff::Timestamp::now()
            .round(jiff::Unit::Second)
            .unwrap_or(jiff::Timestamp::now())
    )
}

fn host_name() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown-host".into())
}

/// Whether `holder` was a run on this host whose process is gone (it crashed
/// or was killed): its lock need not wait out the lease.
fn crashed_here(holder: &str) -> bool {
    let Some((_, rest)) = holder.split_once('@') else {
        return false;
    };
    let Some((host, rest)) = rest.split_once(" pid ") else {
        return false;
    };
    let Some(pid) = rest
        .split_whitespace()
        .next()
        .and_then(|p| p.parse::<u32>().ok())
    else {
        return false;
    };
    let proc = std::path::Path::new("/proc");
    host == host_name() && proc.is_dir() && !proc.join(pid.to_string()).exists()
}

/// The cluster's lock, renewed in the background until released.
#[derive(Debug)]
pub struct LockGuard {
    leases: Api<Lease>,
    holder: String,
    renew: tokio::task::JoinHandle<()>,
    taken_over: Option<String>,
}

impl LockGuard {
    /// The holder this run took the lock from, and why it could.
    pub fn taken_over(&self) -> Option<&str> {
        self.taken_over.as_deref()
    }

    /// Give the lock back.
    pub async fn release(self) {
        self.renew.abort();
        if let Ok(Some(current)) = self.leases.get_opt(LEASE).await {
            let ours = current
                .spec
                .as_ref()
                .and_then(|s| s.holder_identity.as_deref())
                == Some(self.holder.as_str());
            if ours {
                let params = DeleteParams {
                    preconditions: Some(kube::api::Preconditions {
                        resource_version: current.metadata.resource_version.clone(),
                        uid: None,
                    }),
                    ..DeleteParams::default()
                };
                let _ = self.leases.delete(LEASE, &params).await;
            }
        }
    }
}

async fn renew_lease(leases: Api<Lease>, holder: String) {
    loop {
        tokio::time::sleep(Duration::from_secs(20)).await;
        let patch = serde_json::json!({
            "spec": { "holderIdentity": holder, "renewTime": MicroTime(jiff::Timestamp::now()) }
        });
        if let Err(error) = leases
            .patch(LEASE, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::warn!("cannot renew the lock: {error}");
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

/// Go Tazuna keeps one data key per object,
/// `<manifest>__<group>__<version>__<kind>__<namespace>__<name>` (no namespace
/// segment for cluster-scoped objects), with `{"contentHash": ...}`, and a
/// `_metadata` key with `gitCommitHash` and `lastSyncedAt`.
fn migrate_go(manifest: &str, config_map: &ConfigMap) -> Result<ManifestState, String> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct GoEntry {
        content_hash: String,
    }
    #[derive(Deserialize, Default)]
    #[serde(rename_all = "camelCase")]
    struct GoMetadata {
        #[serde(default)]
        git_commit_hash: String,
        #[serde(default)]
        last_synced_at: String,
    }
    let data = config_map.data.clone().unwrap_or_default();
    let mut metadata = GoMetadata::default();
    let mut objects = Vec::new();
    for (key, value) in &data {
        if key == "_metadata" {
            metadata = serde_json::from_str(value).map_err(|e| format!("`_metadata`: {e}"))?;
            continue;
        }
        let parts: Vec<&str> = key.split("__").collect();
        let (group, version, kind, namespace, name) = match parts.as_slice() {
            [_, group, version, kind, namespace, name] => {
                (*group, *version, *kind, Some(*namespace), *name)
            }
            [_, group, version, kind, name] => (*group, *version, *kind, None, *name),
            _ => {
                return Err(format!(
                    "key `{key}` is not `<manifest>__<group>__<version>__<kind>[__<namespace>]__<name>`"
                ));
            }
        };
        let entry: GoEntry =
            serde_json::from_str(value).map_err(|e| format!("key `{key}`: {e}"))?;
        objects.push(Entry {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
            // Go hashed differently; `go:` never equals a new hash, so every
            // migrated object is applied once more and then tracked as usual.
            hash: format!("go:{}", entry.content_hash),
            fields: None,
        });
    }
    objects.sort_by_key(Entry::object);
    Ok(ManifestState {
        manifest: manifest.to_owned(),
        depends_on: Vec::new(),
        position: usize::MAX,
        plugin: PluginRecord::default(),
        tazuna_version: "go".into(),
        git_commit: Some(metadata.git_commit_hash).filter(|c| !c.is_empty()),
        applied_at: metadata.last_synced_at,
        cluster: String::new(),
        stack: None,
        incomplete: false,
        objects,
    })
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

    #[test]
    fn a_dead_holder_on_this_host_is_recognised() {
        let alive = holder_identity();
        assert!(!crashed_here(&alive), "this process is alive: {alive}");
        let dead = format!("someone@{} pid 4000000 (2026-11-30T00:00:00Z)", host_name());
        assert!(crashed_here(&dead));
        assert!(!crashed_here(
            "someone@another-host pid 4000000 (2026-11-30T00:00:00Z)"
        ));
        assert!(!crashed_here("another run"));
    }

    #[test]
    fn a_lease_renewed_in_the_future_is_taken_over_once_it_stays_unchanged() {
        let now = jiff::Timestamp::now();
        let planted = LeaseSpec {
            holder_identity: Some("ghost@elsewhere pid 1".into()),
            lease_duration_seconds: Some(60),
            renew_time: Some(MicroTime("2099-01-01T00:00:00Z".parse().unwrap())),
            ..LeaseSpec::default()
        };
        assert_eq!(
            lease_verdict(&planted, now, Duration::ZERO, false),
            LeaseVerdict::Live
        );
        assert_eq!(
            lease_verdict(&planted, now, STALE_AFTER, false),
            LeaseVerdict::Stale
        );
        let huge = LeaseSpec {
            lease_duration_seconds: Some(i32::MAX),
            renew_time: Some(MicroTime(now - jiff::SignedDuration::from_secs(301))),
            ..planted.clone()
        };
        assert_eq!(
            lease_verdict(&huge, now, Duration::ZERO, false),
            LeaseVerdict::Expired,
            "a lease duration beyond 300 s is not believed"
        );
        let renewed = LeaseSpec {
            renew_time: Some(MicroTime(now)),
            ..planted
        };
        assert_eq!(
            lease_verdict(&renewed, now, Duration::ZERO, false),
            LeaseVerdict::Live
        );
        assert_eq!(
            lease_verdict(&renewed, now, Duration::ZERO, true),
            LeaseVerdict::HolderGone
        );
    }

    #[test]
    fn state_names_are_valid_kubernetes_names() {
        assert_eq!(object_name("argocd"), "tazuna-manifest-argocd");
        let odd = object_name("Argo_CD");
        assert!(odd.starts_with("tazuna-manifest-argo-cd-"), "{odd}");
        assert_ne!(object_name("Argo_CD"), object_name("argo-cd"));
    }

    #[test]
    fn go_tazuna_state_is_taken_over() {
        let config_map = ConfigMap {
            data: Some(
                [
                    (
                        "_metadata".to_owned(),
                        r#"{"gitCommitHash":"abc123","lastSyncedAt":"2026-04-02T10:00:00Z"}"#
                            .to_owned(),
                    ),
                    (
                        "prometheus__apps__v1__Deployment__monitoring__prometheus".to_owned(),
                        r#"{"contentHash":"hash1"}"#.to_owned(),
                    ),
                    (
                        "prometheus____v1__ConfigMap__monitoring__prometheus-config".to_owned(),
                        r#"{"contentHash":"hash2"}"#.to_owned(),
                    ),
                    (
                        "prometheus__rbac.authorization.k8s.io__v1__ClusterRole__prometheus"
                            .to_owned(),
                        r#"{"contentHash":"hash3"}"#.to_owned(),
                    ),
                ]
                .into(),
            ),
            ..ConfigMap::default()
        };
        let state = migrate_go("prometheus", &config_map).unwrap();
        assert_eq!(state.git_commit.as_deref(), Some("abc123"));
        let objects: Vec<String> = state
            .objects
            .iter()
            .map(|e| e.object().to_string())
            .collect();
        assert_eq!(
            objects,
            [
                "v1 ConfigMap monitoring/prometheus-config",
                "apps/v1 Deployment monitoring/prometheus",
                "rbac.authorization.k8s.io/v1 ClusterRole prometheus",
            ]
        );
        assert!(state.objects.iter().all(|e| e.hash.starts_with("go:")));
    }
}
