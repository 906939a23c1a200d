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

mod lease;
mod legacy;
mod store;

use kube::Client;
use serde::{Deserialize, Serialize};
use tazuna_core::inventory::ObjectRef;

pub use lease::{LockGuard, holder_identity};

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
    /// The repository the file that applied it lives in (its `origin`
    /// URL, without credentials), when the stack's name is derived from the
    /// file's place in it: two files at one path in two repositories derive
    /// one name, and this tells them apart. `None` for a name set with
    /// `spec.stack`, and in older state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
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
    /// The object goes away by design once done (a Job with
    /// `ttlSecondsAfterFinished`): missing live, it is finished, not lost.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub removed_when_done: bool,
    /// Who had written the object when this stack first applied it
    /// ([`crate::prune::writers`]); empty when Tazuna made it. Prune and
    /// destroy delete an adopted object only if one of them deploys from
    /// files ([`crate::prune::DEPLOY_TOOLS`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adopted_from: Vec<String>,
    /// A GitOps controller took the object over (the manifest's
    /// `handover:`): to whom and when. While the manifest declares it,
    /// Tazuna only creates the object when it is missing; prune and destroy
    /// never delete it ([`tazuna_core::policy`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handover: Option<tazuna_core::policy::HandedOver>,
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
            removed_when_done: false,
            adopted_from: Vec::new(),
            handover: None,
        }
    }

    /// This entry, marked as going away by design when `value` (what was
    /// sent) does.
    pub fn removed_when_done(mut self, value: &serde_json::Value) -> Self {
        self.removed_when_done = tazuna_core::readiness::removed_when_done(value);
        self
    }

    /// Whether the object, missing live after an apply of `hash`, is done
    /// rather than lost.
    pub fn done_and_removed(&self, hash: &str, value: &serde_json::Value) -> bool {
        self.hash == hash
            && (self.removed_when_done || tazuna_core::readiness::removed_when_done(value))
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

/// Now, as RFC 3339 in UTC, to the second: when state was written or a
/// binding recorded.
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .unwrap_or(jiff::Timestamp::now())
        .to_string()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_names_are_valid_kubernetes_names() {
        assert_eq!(object_name("argocd"), "tazuna-manifest-argocd");
        let odd = object_name("Argo_CD");
        assert!(odd.starts_with("tazuna-manifest-argo-cd-"), "{odd}");
        assert_ne!(object_name("Argo_CD"), object_name("argo-cd"));
    }
}
