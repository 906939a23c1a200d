//! What two clusters receive, side by side: the objects of one rendering (or
//! one cluster's live objects) paired with another's by identity, so that a
//! divergence by accident shows before it ships.
//!
//! Objects pair up by API group, kind, namespace and name; the version is
//! left out, so a kind served at another version on one side shows as a
//! changed `apiVersion`, not as two unrelated objects. Values are compared in
//! their [`diff::comparable`] forms: server-owned fields left out, Secret
//! values redacted.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::diff;

/// An object on one side.
#[derive(Debug, Clone)]
pub struct Compared<'a> {
    /// The manifest that renders (or recorded) it.
    pub manifest: &'a str,
    /// The object.
    pub value: &'a Value,
    /// The namespace to assume when the object names none (its manifest's).
    pub default_namespace: Option<&'a str>,
}

/// How two sides differ.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// Objects only the first side has, as `manifest: object`.
    pub only_in_first: Vec<String>,
    /// Objects only the second side has.
    pub only_in_second: Vec<String>,
    /// Objects both have, with different contents.
    pub different: Vec<Difference>,
    /// How many objects are the same on both.
    pub same: usize,
}

/// One object that both sides have, differently.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Difference {
    /// `manifest: object` on the first side (and the second's manifest when it differs).
    pub object: String,
    /// The unified diff from the first side to the second.
    pub diff: String,
}

impl Comparison {
    /// Whether the sides hold the same objects with the same contents.
    pub fn is_empty(&self) -> bool {
        self.only_in_first.is_empty() && self.only_in_second.is_empty() && self.different.is_empty()
    }
}

type Key = (String, String, String, String);

fn key(entry: &Compared<'_>) -> Key {
    let value = entry.value;
    let api_version = value["apiVersion"].as_str().unwrap_or_default();
    let group = api_version
        .rsplit_once('/')
        .map_or("", |(group, _)| group)
        .to_owned();
    let namespace = value["metadata"]["namespace"]
        .as_str()
        .or(entry.default_namespace)
        .unwrap_or_default()
        .to_owned();
    (
        group,
        value["kind"].as_str().unwrap_or_default().to_owned(),
        namespace,
        value["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

fn describe(entry: &Compared<'_>, key: &Key) -> String {
    let api_version = entry.value["apiVersion"].as_str().unwrap_or_default();
    let (_, kind, namespace, name) = key;
    let place = if namespace.is_empty() {
        name.clone()
    } else {
        format!("{namespace}/{name}")
    };
    format!("{}: {api_version} {kind} {place}", entry.manifest)
}

/// Pair `first` with `second` and say how they differ. Each list keeps its
/// order; an object listed twice on one side counts once (its last copy).
pub fn compare(first: &[Compared<'_>], second: &[Compared<'_>]) -> Comparison {
    let index = |side: &[Compared<'_>]| {
        let mut by_key: BTreeMap<Key, usize> = BTreeMap::new();
        for (i, entry) in side.iter().enumerate() {
            by_key.insert(key(entry), i);
        }
        by_key
    };
    let (a, b) = (index(first), index(second));
    let mut comparison = Comparison::default();
    for (key, &i) in &a {
        let left = &first[i];
        match b.get(key) {
            None => comparison.only_in_first.push(describe(left, key)),
            Some(&j) => {
                let right = &second[j];
                // A changed Secret value shows as changed, never its value.
                match diff::unified(Some(left.value), Some(right.value), 3) {
                    None => comparison.same += 1,
                    Some(text) => {
                        let mut object = describe(left, key);
                        if left.manifest != right.manifest {
                            object.push_str(&format!(" (manifest `{}` there)", right.manifest));
                        }
                        comparison.different.push(Difference { object, diff: text });
                    }
                }
            }
        }
    }
    for (key, &j) in &b {
        if !a.contains_key(key) {
            comparison.only_in_second.push(describe(&second[j], key));
        }
    }
    comparison
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn pairs_objects_by_identity_and_shows_only_what_differs() {
        let deployment = |replicas: u64| {
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "web"}, "spec": {"replicas": replicas}})
        };
        let settings = json!({"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": "settings", "namespace": "web"}, "data": {"a": "1"}});
        let only = json!({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": "production-only", "namespace": "web"}});
        let (one, three) = (deployment(1), deployment(3));
        let entry = |manifest, value| Compared {
            manifest,
            value,
            default_namespace: Some("web"),
        };
        let staging = [entry("web", &one), entry("web", &settings)];
        let production = [
            entry("web", &three),
            entry("web", &settings),
            entry("extra", &only),
        ];
        let comparison = compare(&staging, &production);
        assert_eq!(
            comparison.only_in_second,
            ["extra: v1 ConfigMap web/production-only"]
        );
        assert!(comparison.only_in_first.is_empty());
        assert_eq!(comparison.same, 1);
        assert_eq!(comparison.different.len(), 1);
        assert_eq!(
            comparison.different[0].object,
            "web: apps/v1 Deployment web/web"
        );
        let diff = &comparison.different[0].diff;
        assert!(
            diff.contains("-   replicas: 1\n") && diff.contains("+   replicas: 3\n"),
            "{diff}"
        );
        assert!(compare(&staging, &staging).is_empty());
    }

    #[test]
    fn secret_values_never_show_in_a_comparison() {
        let secret = |value: &str| {
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "a"},
                   "stringData": {"password": value}})
        };
        let (a, b) = (secret("hunter2"), secret("correct-horse"));
        let entry = |value| Compared {
            manifest: "m",
            value,
            default_namespace: None,
        };
        let comparison = compare(&[entry(&a)], &[entry(&b)]);
        let text = format!("{comparison:?}");
        assert!(
            !text.contains("hunter2") && !text.contains("correct-horse"),
            "{text}"
        );
        assert_eq!(comparison.different.len(), 1, "the change itself shows");
    }
}
