//! State left by Go Tazuna (`ConfigMap tazuna/tazuna-state-<name>`), read
//! into this version's records.

use k8s_openapi::api::core::v1::ConfigMap;
use serde::Deserialize;

use super::*;

/// Go Tazuna keeps one data key per object,
/// `<manifest>__<group>__<version>__<kind>__<namespace>__<name>` (no namespace
/// segment for cluster-scoped objects), with `{"contentHash": ...}`, and a
/// `_metadata` key with `gitCommitHash` and `lastSyncedAt`. Its newest
/// releases also escape what a data key cannot hold as `_x<hex>` (the `:`
/// of `system:controller:foo`); see [`go_key_parts`].
pub(super) fn migrate_go(manifest: &str, config_map: &ConfigMap) -> Result<ManifestState, String> {
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
        let parts = go_key_parts(key);
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
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
            removed_when_done: false,
            adopted_from: Vec::new(),
            handover: None,
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
        origin: None,
        incomplete: false,
        objects,
    })
}

/// The `/`-separated parts of a Go state key, decoded as Go decodes it:
/// `__` is `/`, `_x` and two hex digits is that byte, and any other `_` is
/// itself (keys written before Go escaped anything read the same).
fn go_key_parts(key: &str) -> Vec<String> {
    let bytes = key.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut parts = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        if rest.starts_with(b"__") {
            parts.push(String::from_utf8_lossy(&decoded).into_owned());
            decoded.clear();
            at += 2;
            continue;
        }
        if let [b'_', b'x', high, low, ..] = rest
            && let (Some(high), Some(low)) = (hex(*high), hex(*low))
        {
            decoded.push(high << 4 | low);
            at += 4;
            continue;
        }
        decoded.push(rest[0]);
        at += 1;
    }
    parts.push(String::from_utf8_lossy(&decoded).into_owned());
    parts
}

fn hex(digit: u8) -> Option<u8> {
    char::from(digit)
        .to_digit(16)
        .and_then(|value| u8::try_from(value).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn go_keys_with_escaped_characters_decode_as_go_decodes_them() {
        assert_eq!(
            go_key_parts(
                "cert-manager__rbac.authorization.k8s.io__v1__ClusterRole__cert-manager-webhook_x3asubjectaccessreviews"
            ),
            [
                "cert-manager",
                "rbac.authorization.k8s.io",
                "v1",
                "ClusterRole",
                "cert-manager-webhook:subjectaccessreviews"
            ]
        );
        assert_eq!(
            go_key_parts("m__g__v1__Kind__name_x5fwith_x5Funderscore")[4],
            "name_with_underscore"
        );
        // What is no escape stays as it is.
        for literal in ["_zfoo", "trailing_", "_xZZ", "name_with_underscore"] {
            assert_eq!(go_key_parts(&format!("m__g__v1__K__{literal}"))[4], literal);
        }
        assert_eq!(
            go_key_parts("m____v1__Namespace__ns"),
            ["m", "", "v1", "Namespace", "ns"]
        );
    }
}
