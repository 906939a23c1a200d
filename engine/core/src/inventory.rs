//! What Tazuna puts into a cluster, described without a cluster: object
//! identities, content hashes, and the order objects go in within one manifest.
//!
//! This is the pure groundwork of the apply engine. The state Tazuna keeps per
//! manifest is an inventory of [`ObjectRef`]s with a content hash each; a
//! Secret's hash is keyed (HMAC-SHA256 with a key kept in the cluster), so the
//! hash never lets anyone guess a secret value. [`redact`] is what any output
//! that shows an object (plans, diffs, errors) must pass a Secret through first.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// What stands in for a secret value in anything Tazuna prints.
pub const REDACTED: &str = "(redacted)";

/// The identity of one Kubernetes object.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectRef {
    /// API group; empty for the core group.
    pub group: String,
    /// API version within the group.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Namespace; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

impl ObjectRef {
    /// The identity of `object`, or `None` if it lacks `apiVersion`, `kind` or
    /// `metadata.name`.
    pub fn of(object: &Value) -> Option<Self> {
        let api_version = object.get("apiVersion")?.as_str()?;
        let (group, version) = match api_version.split_once('/') {
            Some((group, version)) => (group, version),
            None => ("", api_version),
        };
        let metadata = object.get("metadata")?;
        Some(Self {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: object.get("kind")?.as_str()?.to_owned(),
            namespace: metadata
                .get("namespace")
                .and_then(Value::as_str)
                .map(str::to_owned),
            name: metadata.get("name")?.as_str()?.to_owned(),
        })
    }

    /// `apiVersion` as written in a manifest (`apps/v1`, or `v1` for core).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether this is a core-group Secret, whose values Tazuna never shows or
    /// stores.
    pub fn is_secret(&self) -> bool {
        self.group.is_empty() && self.kind == "Secret"
    }

    /// Its identity without the API version: the same object served in two
    /// versions, or under two groups ([`SAME_RESOURCE`]), is one object.
    pub fn key(&self) -> ObjectKey {
        let group = SAME_RESOURCE
            .iter()
            .find(|(group, kind, _)| *group == self.group && *kind == self.kind)
            .map_or(self.group.as_str(), |(_, _, stored)| stored);
        ObjectKey {
            group: group.to_owned(),
            kind: self.kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }
}

/// Kinds the API server serves under a second group, stored once: (group,
/// kind, the group it is the same object as). `events.k8s.io/v1 Event
/// default/x` is `v1 Event default/x`.
pub const SAME_RESOURCE: &[(&str, &str, &str)] = &[("events.k8s.io", "Event", "")];

/// One object in the cluster, whatever API version it is read in: what
/// ownership and prune decisions are keyed by.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// API group; empty for the core group.
    pub group: String,
    /// Kind.
    pub kind: String,
    /// Namespace; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

impl fmt::Display for ObjectRef {
    /// `apps/v1 Deployment argocd/argocd-server`, or `v1 Namespace argocd`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ", self.api_version(), self.kind)?;
        match &self.namespace {
            Some(namespace) => write!(f, "{namespace}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// The phases of applying one manifest: Namespaces, then definitions of new
/// kinds (CRDs, which must be `Established` before their objects), then the
/// rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// `v1 Namespace`.
    Namespaces,
    /// `apiextensions.k8s.io CustomResourceDefinition`.
    Definitions,
    /// Everything else.
    Objects,
}

impl Phase {
    /// The phase `object` belongs to.
    pub fn of(object: &ObjectRef) -> Self {
        match (object.group.as_str(), object.kind.as_str()) {
            ("", "Namespace") => Self::Namespaces,
            ("apiextensions.k8s.io", "CustomResourceDefinition") => Self::Definitions,
            _ => Self::Objects,
        }
    }
}

/// Indices of `objects` in apply order: by [`Phase`], keeping the rendered
/// order within a phase. Objects without an identity sort last.
pub fn apply_order<V: Borrow<Value>>(objects: &[V]) -> Vec<usize> {
    let phases: Vec<Option<Phase>> = objects
        .iter()
        .map(|o| ObjectRef::of(o.borrow()).map(|r| Phase::of(&r)))
        .collect();
    let mut order: Vec<usize> = (0..objects.len()).collect();
    order.sort_by(|&a, &b| match (phases[a], phases[b]) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    });
    order
}

/// A hash of what Tazuna intends an object to be, independent of key order.
///
/// Secrets are hashed with HMAC-SHA256 under `secret_key`, so the hash in
/// Tazuna's state cannot be used to confirm a guessed value; everything else
/// with plain SHA-256. The result is `sha256:<hex>` or `hmac-sha256:<hex>`.
pub fn content_hash(object: &Value, secret_key: &[u8]) -> String {
    let mut canonical = Vec::new();
    write_canonical(object, &mut canonical);
    let is_secret = ObjectRef::of(object).is_some_and(|r| r.is_secret());
    if is_secret {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(secret_key).expect("HMAC accepts keys of any length");
        mac.update(&canonical);
        format!("hmac-sha256:{}", hex(&mac.finalize().into_bytes()))
    } else {
        format!("sha256:{}", hex(&Sha256::digest(&canonical)))
    }
}

/// `object` with every value under a Secret's `data` and `stringData`
/// replaced by [`REDACTED`]; other objects are returned unchanged.
pub fn redact(object: &Value) -> Value {
    let mut copy = object.clone();
    if ObjectRef::of(object).is_some_and(|r| r.is_secret()) {
        for field in ["data", "stringData"] {
            if let Some(Value::Object(entries)) = copy.get_mut(field) {
                for value in entries.values_mut() {
                    *value = Value::String(REDACTED.to_owned());
                }
            }
        }
    }
    copy
}

/// JSON with object keys sorted, so equal objects hash equally whatever order
/// their keys were rendered in.
fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(&Value::String(key.clone()), out);
                out.push(b':');
                write_canonical(&map[key], out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        scalar => out.extend_from_slice(scalar.to_string().as_bytes()),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What keeps `object` from being applied, if anything, read as the API
/// server reads it: Tazuna applies every object by server-side apply, by
/// name, so it needs a string `apiVersion` (`v1` or `<group>/<version>`), a
/// `kind`, and a `metadata.name`; a name, a namespace or a kind must be one
/// path segment (not `.` or `..`, no `/` or `%`, as the API server's
/// `IsValidPathSegmentName` says); labels and annotations map strings to
/// strings. Every rendered object passes here before anything else reads
/// it, so no later step meets a shape it does not expect.
pub fn identity_problem(object: &Value) -> Option<String> {
    let Some(map) = object.as_object() else {
        return Some("the document is not a mapping".to_owned());
    };
    let segment = |what: &str, text: &str| -> Option<String> {
        if text.is_empty() {
            return Some(format!("`{what}` is empty"));
        }
        let bad = text == "." || text == ".." || text.contains(['/', '%']);
        bad.then(|| {
            format!("`{what}` `{text}` is not one path segment (no `/` or `%`, not `.` or `..`)")
        })
    };
    let Some(api_version) = map.get("apiVersion").and_then(Value::as_str) else {
        return Some("the document has no `apiVersion` string".to_owned());
    };
    let parts: Vec<&str> = api_version.split('/').collect();
    if parts.len() > 2
        || parts
            .iter()
            .any(|part| part.is_empty() || part.contains('%') || *part == "." || *part == "..")
    {
        return Some(format!(
            "`apiVersion` `{api_version}` is not `v1` or `<group>/<version>`"
        ));
    }
    let Some(kind) = map.get("kind").and_then(Value::as_str) else {
        return Some("the document has no `kind` string".to_owned());
    };
    if let Some(problem) = segment("kind", kind) {
        return Some(problem);
    }
    let Some(metadata) = map.get("metadata").and_then(Value::as_object) else {
        return Some("the document has no `metadata` mapping".to_owned());
    };
    match metadata.get("name") {
        Some(Value::String(name)) => {
            if let Some(problem) = segment("metadata.name", name) {
                return Some(problem);
            }
        }
        None | Some(Value::Null) if metadata.get("generateName").is_some() => {
            return Some(
                "the object has only `metadata.generateName`: Tazuna applies objects by name, so each needs a `metadata.name`"
                    .to_owned(),
            );
        }
        None | Some(Value::Null) => return Some("the document has no `metadata.name`".to_owned()),
        Some(_) => return Some("`metadata.name` is not a string".to_owned()),
    }
    match metadata.get("namespace") {
        None | Some(Value::Null) => {}
        Some(Value::String(namespace)) => {
            if let Some(problem) = segment("metadata.namespace", namespace) {
                return Some(problem);
            }
        }
        Some(_) => return Some("`metadata.namespace` is not a string".to_owned()),
    }
    for field in ["labels", "annotations"] {
        match metadata.get(field) {
            None | Some(Value::Null) => {}
            Some(Value::Object(entries)) => {
                if let Some((key, _)) = entries.iter().find(|(_, value)| !value.is_string()) {
                    return Some(format!("`metadata.{field}.{key}` is not a string"));
                }
            }
            Some(_) => return Some(format!("`metadata.{field}` is not a mapping")),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn secret(value: &str) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": { "name": "db", "namespace": "app" },
            "stringData": { "password": value },
        })
    }

    #[test]
    fn one_object_served_under_two_groups_has_one_key() {
        let event = |api: &str| {
            ObjectRef::of(&json!({
                "apiVersion": api, "kind": "Event",
                "metadata": {"name": "e", "namespace": "default"},
            }))
            .unwrap()
        };
        assert_eq!(event("events.k8s.io/v1").key(), event("v1").key());
        let autoscaler = |api: &str| {
            ObjectRef::of(&json!({"apiVersion": api, "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"}}))
                .unwrap()
                .key()
        };
        assert_eq!(autoscaler("autoscaling/v1"), autoscaler("autoscaling/v2"));
        assert_ne!(
            autoscaler("autoscaling/v2"),
            autoscaler("evil.example.com/v2")
        );
    }

    #[test]
    fn identity_splits_group_and_version() {
        let deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": { "name": "argocd-server", "namespace": "argocd" },
        });
        let r = ObjectRef::of(&deployment).unwrap();
        assert_eq!((r.group.as_str(), r.version.as_str()), ("apps", "v1"));
        assert_eq!(r.to_string(), "apps/v1 Deployment argocd/argocd-server");

        let namespace =
            json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": "argocd" } });
        assert_eq!(
            ObjectRef::of(&namespace).unwrap().to_string(),
            "v1 Namespace argocd"
        );
        assert_eq!(ObjectRef::of(&json!({ "kind": "Namespace" })), None);
    }

    #[test]
    fn namespaces_then_crds_then_the_rest_in_rendered_order() {
        let objects = vec![
            json!({ "apiVersion": "apps/v1", "kind": "Deployment", "metadata": { "name": "a" } }),
            json!({ "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": { "name": "b" } }),
            json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "c" } }),
            json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": "d" } }),
            json!({ "apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject", "metadata": { "name": "e" } }),
        ];
        assert_eq!(apply_order(&objects), [3, 1, 0, 2, 4]);
    }

    #[test]
    fn a_group_named_like_core_kinds_is_not_mistaken_for_them() {
        let fake = json!({ "apiVersion": "example.com/v1", "kind": "Namespace", "metadata": { "name": "x" } });
        assert_eq!(Phase::of(&ObjectRef::of(&fake).unwrap()), Phase::Objects);
        let fake_secret = json!({ "apiVersion": "example.com/v1", "kind": "Secret", "metadata": { "name": "x" }, "data": { "k": "v" } });
        assert_eq!(redact(&fake_secret), fake_secret);
    }

    #[test]
    fn the_hash_ignores_key_order_but_not_content() {
        let a = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "x" }, "data": { "a": "1", "b": "2" } });
        let b = json!({ "kind": "ConfigMap", "data": { "b": "2", "a": "1" }, "metadata": { "name": "x" }, "apiVersion": "v1" });
        let c = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "x" }, "data": { "a": "1", "b": "3" } });
        assert_eq!(content_hash(&a, b"k"), content_hash(&b, b"k"));
        assert_ne!(content_hash(&a, b"k"), content_hash(&c, b"k"));
        assert!(content_hash(&a, b"k").starts_with("sha256:"));
    }

    #[test]
    fn secret_hashes_are_keyed_and_change_with_the_value() {
        let one = content_hash(&secret("hunter2"), b"cluster key");
        assert!(one.starts_with("hmac-sha256:"));
        assert_ne!(one, content_hash(&secret("hunter3"), b"cluster key"));
        assert_ne!(
            one,
            content_hash(&secret("hunter2"), b"another cluster's key"),
            "without the key, the hash cannot be reproduced"
        );
        let mut unkeyed = Vec::new();
        write_canonical(&secret("hunter2"), &mut unkeyed);
        assert!(!one.contains(&hex(&Sha256::digest(&unkeyed))));
    }

    #[test]
    fn redaction_hides_every_secret_value() {
        let mut object = secret("hunter2");
        object["data"] = json!({ "token": "c2VjcmV0" });
        let shown = redact(&object).to_string();
        assert!(
            !shown.contains("hunter2") && !shown.contains("c2VjcmV0"),
            "{shown}"
        );
        assert_eq!(redact(&object)["stringData"]["password"], REDACTED);
        assert_eq!(redact(&object)["metadata"], object["metadata"]);
    }

    #[test]
    fn an_object_tazuna_cannot_apply_by_name_is_named_with_its_field() {
        let problem = |text: &str| identity_problem(&serde_json::from_str(text).unwrap());
        assert_eq!(
            problem(
                r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"b","labels":{"x":"y"}}}"#
            ),
            None
        );
        assert_eq!(
            problem(
                r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"system:a.b"}}"#
            ),
            None
        );
        for (text, expected) in [
            ("[]", "not a mapping"),
            (
                r#"{"kind":"ConfigMap","metadata":{"name":"a"}}"#,
                "no `apiVersion`",
            ),
            (
                r#"{"apiVersion":5,"kind":"ConfigMap","metadata":{"name":"a"}}"#,
                "no `apiVersion`",
            ),
            (
                r#"{"apiVersion":"a/b/c","kind":"X","metadata":{"name":"a"}}"#,
                "`a/b/c`",
            ),
            (
                r#"{"apiVersion":"/v1","kind":"X","metadata":{"name":"a"}}"#,
                "`/v1`",
            ),
            (
                r#"{"apiVersion":"v1","metadata":{"name":"a"}}"#,
                "no `kind`",
            ),
            (
                r#"{"apiVersion":"v1","kind":"../pods","metadata":{"name":"a"}}"#,
                "`kind`",
            ),
            (r#"{"apiVersion":"v1","kind":"Pod"}"#, "no `metadata`"),
            (
                r#"{"apiVersion":"v1","kind":"Pod","metadata":[]}"#,
                "no `metadata`",
            ),
            (
                r#"{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"hook-"}}"#,
                "only `metadata.generateName`",
            ),
            (
                r#"{"apiVersion":"v1","kind":"Pod","metadata":{}}"#,
                "no `metadata.name`",
            ),
            (
                r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":7}}"#,
                "not a string",
            ),
            (
                r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":""}}"#,
                "is empty",
            ),
            (
                r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":".."}}"#,
                "path segment",
            ),
            (
                r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a/../../secrets/x"}}"#,
                "path segment",
            ),
            (
                r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a%2F"}}"#,
                "path segment",
            ),
            (
                r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"kube-system/x"}}"#,
                "path segment",
            ),
            (
                r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":{}}}"#,
                "namespace` is not a string",
            ),
            (
                r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","labels":{"x":1}}}"#,
                "labels.x",
            ),
            (
                r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","annotations":"x"}}"#,
                "not a mapping",
            ),
        ] {
            let found = problem(text).unwrap_or_else(|| panic!("accepted {text}"));
            assert!(found.contains(expected), "{text}: {found}");
        }
    }
}
