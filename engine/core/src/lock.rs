//! `tazuna.lock`: what a `tazuna.yaml` is pinned to, written by Tazuna and
//! committed next to the file.
//!
//! It records two things:
//!
//! - which cluster each environment is bound to: the first apply to a cluster
//!   writes the UID of its `kube-system` namespace here, and every later write
//!   is refused if the context's cluster has another UID, even when the context
//!   name still matches. `--rebind` replaces a binding on purpose.
//! - which exact component each `oci://` plugin of `spec.plugins` resolved to:
//!   its version, manifest and component digests, world, and a hash of the
//!   grants it was pinned with. Runs pull by these digests only (and work
//!   offline from the cache); `tazuna plugin update` re-resolves.
//!
//! - what each manifest's render pulled from upstream (a chart version and
//!   digest, an artifact digest): a later render that gets different content
//!   for the same location and version is refused.
//!
//! Keys this version does not know are kept as they are, so an older tazuna
//! never drops what a newer one wrote.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The key of the binding used when no environment is selected.
pub const DEFAULT_BINDING: &str = "default";

const HEADER: &str = "# tazuna.lock: written by tazuna. Commit it; it pins this file's plugins and binds it to its clusters.\n";

/// The lock file's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lockfile {
    /// Format version.
    #[serde(default = "format_version")]
    pub version: u32,
    /// Cluster bindings by environment name ([`DEFAULT_BINDING`] without `-e`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub clusters: BTreeMap<String, ClusterBinding>,
    /// Pins of `oci://` plugins, by plugin name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub plugins: BTreeMap<String, PluginPin>,
    /// What each manifest's render pulled from upstream (charts, artifacts),
    /// by manifest name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sources: BTreeMap<String, Vec<SourcePin>>,
    /// Sections this version does not know, kept verbatim.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_yaml::Value>,
}

fn format_version() -> u32 {
    1
}

impl Default for Lockfile {
    /// An empty lock in the current format.
    fn default() -> Self {
        Self {
            version: format_version(),
            clusters: BTreeMap::new(),
            plugins: BTreeMap::new(),
            sources: BTreeMap::new(),
            other: BTreeMap::new(),
        }
    }
}

/// The cluster an environment was first applied to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterBinding {
    /// The UID of the cluster's `kube-system` namespace.
    pub uid: String,
    /// The context it was reached through, for people reading the file.
    pub context: String,
    /// The API server URL, for people reading the file.
    pub server: String,
    /// When the binding was made (RFC 3339).
    pub bound_at: String,
}

/// The exact component an `oci://` plugin resolved to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginPin {
    /// `source` as `tazuna.yaml` gave it (`oci://host/repo`).
    pub source: String,
    /// `version` as `tazuna.yaml` gave it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraint: Option<String>,
    /// The version it resolved to (the tag that was pulled).
    pub version: String,
    /// Digest of the OCI manifest (`sha256:…`): what runs pull by.
    pub manifest_digest: String,
    /// Digest of the component itself (`sha256:…`): what the cache holds.
    pub component_digest: String,
    /// The WIT world it implements.
    pub world: String,
    /// [`grants_hash`] of the grants it was pinned with.
    pub grants: String,
}

/// Something a render pulled from upstream, as the plugin reported it: a
/// chart (`oci://registry/charts/hello`, `0.1.0`, its digest) or an artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourcePin {
    /// Where it came from.
    pub location: String,
    /// The version pulled, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The digest of what was pulled (`sha256:…`), when the source tells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// A short, order-independent digest of a plugin's grants, so a changed grant
/// shows in the lock file's diff and a run notices it.
pub fn grants_hash(grants: &[String]) -> String {
    use sha2::{Digest, Sha256};
    let mut sorted: Vec<&str> = grants.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    sorted.dedup();
    let digest = Sha256::digest(sorted.join("\n").as_bytes());
    format!("sha256:{}", hex::encode(&digest[..8]))
}

/// Why the lock file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Reading or writing failed.
    #[error("cannot {action} `{}`", path.display())]
    Io {
        /// `read` or `write`.
        action: &'static str,
        /// The lock file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a lock file this version understands.
    #[error("`{}` is not a valid tazuna.lock: {message}", path.display())]
    Invalid {
        /// The lock file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl Lockfile {
    /// The lock file that belongs to `config_file`: `tazuna.lock` beside it.
    pub fn path_for(config_file: &Path) -> PathBuf {
        config_file
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join("tazuna.lock")
    }

    /// Read `path`; a missing file is an empty lock.
    pub fn load(path: &Path) -> Result<Self, LockError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self::default());
            }
            Err(source) => {
                return Err(LockError::Io {
                    action: "read",
                    path: path.to_owned(),
                    source,
                });
            }
        };
        let lock: Self = serde_yaml::from_str(&text).map_err(|e| LockError::Invalid {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        if lock.version != format_version() {
            return Err(LockError::Invalid {
                path: path.to_owned(),
                message: format!(
                    "format version {} is not supported (this tazuna writes version {})",
                    lock.version,
                    format_version()
                ),
            });
        }
        Ok(lock)
    }

    /// Write to `path` atomically (a temporary file of this process renamed
    /// over it).
    pub fn save(&self, path: &Path) -> Result<(), LockError> {
        let io = |source| LockError::Io {
            action: "write",
            path: path.to_owned(),
            source,
        };
        let body = serde_yaml::to_string(self).expect("a lock file always serialises");
        let temporary = path.with_extension(format!("lock.{}.tmp", std::process::id()));
        std::fs::write(&temporary, format!("{HEADER}{body}")).map_err(io)?;
        std::fs::rename(&temporary, path).map_err(|source| {
            let _ = std::fs::remove_file(&temporary);
            io(source)
        })
    }

    /// Read `path`, let `change` edit it, and write it back if it changed,
    /// all under an exclusive lock on the file's directory. Two runs that
    /// update the same lock at once (two applies binding a new cluster, say)
    /// take turns, and each sees what the other wrote: `change` decides on
    /// the current content, never a copy read before the other run wrote.
    pub fn update<T, E: From<LockError>>(
        path: &Path,
        change: impl FnOnce(&mut Self) -> Result<T, E>,
    ) -> Result<T, E> {
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let io = |source| LockError::Io {
            action: "lock",
            path: path.to_owned(),
            source,
        };
        let guard = std::fs::File::open(dir).map_err(io)?;
        guard.lock().map_err(io)?;
        let before = Self::load(path)?;
        let mut lock = before.clone();
        let result = change(&mut lock)?;
        if lock != before {
            lock.save(path)?;
        }
        Ok(result)
    }

    /// The binding for `environment` (`None` for the default).
    pub fn binding(&self, environment: Option<&str>) -> Option<&ClusterBinding> {
        self.clusters.get(environment.unwrap_or(DEFAULT_BINDING))
    }

    /// Bind `environment` to a cluster, replacing any earlier binding.
    pub fn bind(&mut self, environment: Option<&str>, binding: ClusterBinding) {
        self.clusters
            .insert(environment.unwrap_or(DEFAULT_BINDING).to_owned(), binding);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(uid: &str) -> ClusterBinding {
        ClusterBinding {
            uid: uid.into(),
            context: "kind-staging".into(),
            server: "https://127.0.0.1:6443".into(),
            bound_at: "2026-11-30T12:00:00Z".into(),
        }
    }

    #[test]
    fn a_missing_lock_is_empty_and_bindings_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tazuna.lock");
        let mut lock = Lockfile::load(&path).unwrap();
        assert_eq!(lock.binding(None), None);
        lock.bind(None, binding("uid-a"));
        lock.bind(Some("production"), binding("uid-b"));
        lock.save(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# tazuna.lock"), "{text}");
        let again = Lockfile::load(&path).unwrap();
        assert_eq!(again.binding(None).unwrap().uid, "uid-a");
        assert_eq!(again.binding(Some("production")).unwrap().uid, "uid-b");
        assert_eq!(again.binding(Some("staging")), None);
    }

    #[test]
    fn sections_from_newer_versions_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tazuna.lock");
        std::fs::write(&path, "version: 1\nfuture:\n- name: x\n").unwrap();
        let mut lock = Lockfile::load(&path).unwrap();
        lock.bind(None, binding("uid-a"));
        lock.save(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("future:\n- name: x"), "{text}");
    }

    #[test]
    fn plugin_pins_round_trip_and_the_grants_hash_ignores_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tazuna.lock");
        let mut lock = Lockfile::default();
        let pin = PluginPin {
            source: "oci://127.0.0.1:5000/plugins/configmap".into(),
            constraint: Some(">=0.1, <0.2".into()),
            version: "0.1.3".into(),
            manifest_digest: "sha256:aa".into(),
            component_digest: "sha256:bb".into(),
            world: "tazuna:plugin/source-plugin@0.1.0".into(),
            grants: grants_hash(&["exec:helm".into(), "artifacts:pull".into()]),
        };
        lock.plugins.insert("configmap".into(), pin.clone());
        lock.save(&path).unwrap();
        let again = Lockfile::load(&path).unwrap();
        assert_eq!(again.plugins["configmap"], pin);
        assert_eq!(
            pin.grants,
            grants_hash(&["artifacts:pull".into(), "exec:helm".into()])
        );
        assert_ne!(pin.grants, grants_hash(&["exec:helm".into()]));
        assert_ne!(grants_hash(&[]), grants_hash(&["exec:helm".into()]));
    }

    #[test]
    fn an_unknown_format_version_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tazuna.lock");
        std::fs::write(&path, "version: 7\n").unwrap();
        let error = Lockfile::load(&path).unwrap_err().to_string();
        assert!(
            error.contains("format version 7 is not supported"),
            "{error}"
        );
    }

    #[test]
    fn concurrent_updates_take_turns_and_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tazuna.lock");
        std::thread::scope(|scope| {
            for n in 0..8 {
                let path = &path;
                scope.spawn(move || {
                    for round in 0..5 {
                        Lockfile::update(path, |lock| {
                            lock.bind(Some(&format!("env-{n}-{round}")), binding("uid"));
                            Ok::<_, LockError>(())
                        })
                        .unwrap();
                    }
                });
            }
        });
        let lock = Lockfile::load(&path).unwrap();
        assert_eq!(lock.clusters.len(), 40, "{:?}", lock.clusters.keys());
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|name| name != "tazuna.lock")
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}
