//! What changes between two versions of an object, as `tazuna plan` and
//! `tazuna state drift` show it.
//!
//! Both sides are first reduced to their [`comparable`] form, without the
//! fields the API server owns and with Secret values redacted, so a diff shows
//! only what a user could have changed and never a secret. A Secret value that
//! did change still shows, as a `(redacted)` line replaced by a
//! [`REDACTED_CHANGED`] one.

use std::fmt::Write as _;

use serde_json::{Map, Value};
use similar::{ChangeTag, TextDiff};

use crate::inventory::{self, ObjectRef};

/// What stands in for a Secret value that differs between the two sides.
pub const REDACTED_CHANGED: &str = "(redacted, changed)";

/// `metadata` fields that the API server sets and a user never writes.
const SERVER_OWNED: &[&str] = &[
    "managedFields",
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "selfLink",
];

/// The annotation in which client-side apply keeps a full copy of the object,
/// Secret values included.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// `object` without what the API server owns, then
/// [redacted](inventory::redact).
///
/// What goes: `status`; `metadata.managedFields`, `resourceVersion`, `uid`,
/// `creationTimestamp`, `generation` and `selfLink`; and the
/// `kubectl.kubernetes.io/last-applied-configuration` annotation, with
/// `annotations` itself if nothing else is left in it.
pub fn comparable(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(root) = copy.as_object_mut() {
        root.shift_remove("status");
        if let Some(Value::Object(metadata)) = root.get_mut("metadata") {
            for field in SERVER_OWNED {
                metadata.shift_remove(*field);
            }
            let emptied = match metadata.get_mut("annotations") {
                Some(Value::Object(annotations)) => {
                    annotations.shift_remove(LAST_APPLIED);
                    annotations.is_empty()
                }
                _ => false,
            };
            if emptied {
                metadata.shift_remove("annotations");
            }
        }
    }
    inventory::redact(&copy)
}

/// A unified diff of the YAML of `before` and `after` in their [`comparable`]
/// forms, with `context` unchanged lines around each change, or `None` when
/// they are equal.
///
/// `before` is `None` for an object about to be created (every line added),
/// `after` is `None` for one about to be deleted. Lines start with `+ `, `- `
/// or two spaces, under `@@ -a,b +c,d @@` hunk headers. Keys are sorted, so
/// the order in which either side was written does not show as a change.
pub fn unified(before: Option<&Value>, after: Option<&Value>, context: usize) -> Option<String> {
    let (before, after) = prepared(before, after);
    if before == after {
        return None;
    }
    let old = before.as_ref().map(yaml).unwrap_or_default();
    let new = after.as_ref().map(yaml).unwrap_or_default();
    let diff = TextDiff::from_lines(&old, &new);
    let mut out = String::new();
    for hunk in diff.unified_diff().context_radius(context).iter_hunks() {
        let _ = writeln!(out, "{}", hunk.header());
        for change in hunk.iter_changes() {
            out.push_str(match change.tag() {
                ChangeTag::Delete => "- ",
                ChangeTag::Insert => "+ ",
                ChangeTag::Equal => "  ",
            });
            out.push_str(change.value());
            if change.missing_newline() {
                out.push('\n');
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The paths of the leaves that differ between the [`comparable`] forms of
/// `before` and `after`, sorted: `data.key`,
/// `spec.template.spec.containers[0].image`, or
/// `metadata.labels["app.kubernetes.io/name"]` for a key with dots in it.
///
/// A subtree present on one side only contributes each of its leaves; a value
/// that changes type (a mapping becoming a string) contributes its own path.
pub fn changed_paths(before: &Value, after: &Value) -> Vec<String> {
    let (Some(before), Some(after)) = prepared(Some(before), Some(after)) else {
        unreachable!("both sides are given");
    };
    let mut paths = Vec::new();
    differences(&before, &after, "", &mut paths);
    paths.sort();
    paths.dedup();
    paths
}

/// Both sides in [`comparable`] form, with each Secret value whose real value
/// differs replaced by [`REDACTED_CHANGED`] on the `after` side, since
/// redaction alone would make the two look equal.
fn prepared(before: Option<&Value>, after: Option<&Value>) -> (Option<Value>, Option<Value>) {
    let mut shown = after.map(comparable);
    if let (Some(before), Some(after), Some(shown)) = (before, after, shown.as_mut())
        && is_secret(before)
        && is_secret(after)
    {
        for field in ["data", "stringData"] {
            let (Some(Value::Object(old)), Some(Value::Object(new))) =
                (before.get(field), after.get(field))
            else {
                continue;
            };
            for (key, value) in new {
                if old.get(key).is_some_and(|old| old != value) {
                    shown[field][key] = Value::String(REDACTED_CHANGED.to_owned());
                }
            }
        }
    }
    (before.map(comparable), shown)
}

fn is_secret(object: &Value) -> bool {
    ObjectRef::of(object).is_some_and(|r| r.is_secret())
}

fn yaml(value: &Value) -> String {
    serde_yaml::to_string(&sorted(value)).expect("JSON values always serialize as YAML")
}

/// `value` with the keys of every mapping in sorted order, as `kubectl get -o
/// yaml` prints them.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::with_capacity(map.len());
            for key in keys {
                out.insert(key.clone(), sorted(&map[key]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        scalar => scalar.clone(),
    }
}

fn differences(before: &Value, after: &Value, path: &str, out: &mut Vec<String>) {
    if before == after {
        return;
    }
    match (before, after) {
        (Value::Object(old), Value::Object(new)) => {
            for key in old
                .keys()
                .chain(new.keys().filter(|k| !old.contains_key(*k)))
            {
                let at = field(path, key);
                match (old.get(key), new.get(key)) {
                    (Some(old), Some(new)) => differences(old, new, &at, out),
                    (Some(only), None) | (None, Some(only)) => leaves(only, &at, out),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(old), Value::Array(new)) => {
            for i in 0..old.len().max(new.len()) {
                let at = format!("{path}[{i}]");
                match (old.get(i), new.get(i)) {
                    (Some(old), Some(new)) => differences(old, new, &at, out),
                    (Some(only), None) | (None, Some(only)) => leaves(only, &at, out),
                    (None, None) => {}
                }
            }
        }
        _ => out.push(path.to_owned()),
    }
}

/// Every leaf under `value`; an empty mapping or list counts as a leaf.
fn leaves(value: &Value, path: &str, out: &mut Vec<String>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                leaves(child, &field(path, key), out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for (i, child) in items.iter().enumerate() {
                leaves(child, &format!("{path}[{i}]"), out);
            }
        }
        _ => out.push(path.to_owned()),
    }
}

/// `path.key`, or `path["key"]` when the key would be ambiguous after a dot.
fn field(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/' | '$'));
    match (plain, path.is_empty()) {
        (true, true) => key.to_owned(),
        (true, false) => format!("{path}.{key}"),
        (false, _) => format!("{path}[{}]", Value::String(key.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config_map(data: Value) -> Value {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": "settings", "namespace": "app" },
            "data": data,
        })
    }

    fn live(mut object: Value) -> Value {
        let last_applied = object.to_string();
        let metadata = object["metadata"].as_object_mut().unwrap();
        metadata.insert("uid".into(), json!("0b1c2d3e"));
        metadata.insert("resourceVersion".into(), json!("4711"));
        metadata.insert("generation".into(), json!(3));
        metadata.insert("creationTimestamp".into(), json!("2025-01-01T00:00:00Z"));
        metadata.insert("managedFields".into(), json!([{ "manager": "tazuna" }]));
        metadata.insert("selfLink".into(), json!("/api/v1/x"));
        metadata.insert("annotations".into(), json!({ LAST_APPLIED: last_applied }));
        object["status"] = json!({ "phase": "Active" });
        object
    }

    #[test]
    fn comparable_drops_what_the_server_owns() {
        let applied = config_map(json!({ "key": "value" }));
        assert_eq!(comparable(&live(applied.clone())), applied);

        let mut annotated = config_map(json!({}));
        annotated["metadata"]["annotations"] = json!({ "team": "platform" });
        let mut live_annotated = live(annotated.clone());
        live_annotated["metadata"]["annotations"]["team"] = json!("platform");
        assert_eq!(comparable(&live_annotated), annotated);
    }

    #[test]
    fn equal_objects_have_no_diff_whatever_their_key_order() {
        let a = config_map(json!({ "a": "1", "b": "2" }));
        let b = json!({
            "data": { "b": "2", "a": "1" },
            "metadata": { "namespace": "app", "name": "settings" },
            "kind": "ConfigMap", "apiVersion": "v1",
        });
        assert_eq!(unified(Some(&a), Some(&live(b.clone())), 3), None);
        assert_eq!(unified(None, None, 3), None);
        assert!(changed_paths(&a, &b).is_empty());
    }

    #[test]
    fn a_changed_value_shows_in_context() {
        let before = config_map(json!({ "a": "1", "b": "2" }));
        let after = config_map(json!({ "a": "1", "b": "3" }));
        assert_eq!(
            unified(Some(&before), Some(&after), 1).unwrap(),
            "@@ -3,3 +3,3 @@\n    a: '1'\n-   b: '2'\n+   b: '3'\n  kind: ConfigMap\n"
        );
        assert_eq!(changed_paths(&before, &after), ["data.b"]);
    }

    #[test]
    fn creation_adds_every_line_and_deletion_removes_them() {
        let object = config_map(json!({ "key": "value" }));
        let created = unified(None, Some(&object), 3).unwrap();
        assert_eq!(
            created,
            "@@ -0,0 +1,7 @@\n+ apiVersion: v1\n+ data:\n+   key: value\n+ kind: ConfigMap\n+ metadata:\n+   name: settings\n+   namespace: app\n"
        );
        let deleted = unified(Some(&live(object)), None, 3).unwrap();
        assert!(deleted.starts_with("@@ -1,7 +0,0 @@\n- apiVersion: v1\n"));
        assert!(deleted.lines().skip(1).all(|l| l.starts_with("- ")));
    }

    #[test]
    fn paths_name_list_items_and_awkward_keys() {
        let deployment = |image: &str, labels: Value| {
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": { "name": "web", "labels": labels },
                "spec": { "template": { "spec": { "containers": [
                    { "name": "web", "image": image },
                ] } } },
            })
        };
        let before = deployment("web:1", json!({ "app.kubernetes.io/name": "web" }));
        let mut after = deployment("web:2", json!({ "app.kubernetes.io/name": "site" }));
        after["spec"]["template"]["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(json!({ "name": "sidecar", "image": "proxy:1", "args": [] }));
        after["spec"]["replicas"] = json!(2);
        assert_eq!(
            changed_paths(&before, &after),
            [
                "metadata.labels[\"app.kubernetes.io/name\"]",
                "spec.replicas",
                "spec.template.spec.containers[0].image",
                "spec.template.spec.containers[1].args",
                "spec.template.spec.containers[1].image",
                "spec.template.spec.containers[1].name",
            ]
        );
    }

    #[test]
    fn a_value_changing_type_is_one_path() {
        let before = config_map(json!({ "a": { "nested": "x" } }));
        let after = config_map(json!({ "a": "flat" }));
        assert_eq!(changed_paths(&before, &after), ["data.a"]);
    }

    fn secret(data: Value, string_data: Value) -> Value {
        let mut object = json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": { "name": "db", "namespace": "app" },
            "type": "Opaque",
            "data": data, "stringData": string_data,
        });
        // What client-side apply leaves behind: the whole object, in clear.
        object["metadata"]["annotations"] = json!({ LAST_APPLIED: object.to_string() });
        object
    }

    #[test]
    fn changed_secret_values_show_as_changed_but_never_in_clear() {
        let before = secret(
            json!({ "password": "aHVudGVyMg==", "user": "YWRtaW4=" }),
            json!({ "token": "tok-before-9f8e" }),
        );
        let after = secret(
            json!({ "password": "aHVudGVyMw==", "user": "YWRtaW4=", "new": "bmV3LXZhbHVl" }),
            json!({ "token": "tok-after-7a6b" }),
        );
        let values = [
            "aHVudGVyMg==",
            "aHVudGVyMw==",
            "YWRtaW4=",
            "bmV3LXZhbHVl",
            "tok-before-9f8e",
            "tok-after-7a6b",
        ];

        let diff = unified(Some(&before), Some(&after), 3).unwrap();
        assert_eq!(
            diff,
            "@@ -1,11 +1,12 @@\n  apiVersion: v1\n  data:\n-   password: (redacted)\n\
             +   new: (redacted)\n+   password: (redacted, changed)\n    user: (redacted)\n\
             \x20 kind: Secret\n  metadata:\n    name: db\n    namespace: app\n  stringData:\n\
             -   token: (redacted)\n+   token: (redacted, changed)\n  type: Opaque\n"
        );
        assert_eq!(
            changed_paths(&before, &after),
            ["data.new", "data.password", "stringData.token"]
        );

        let mut outputs = vec![
            comparable(&before).to_string(),
            comparable(&after).to_string(),
            changed_paths(&before, &after).join("\n"),
        ];
        for context in [0, 3, 100] {
            outputs.extend(unified(Some(&before), Some(&after), context));
            outputs.extend(unified(Some(&after), Some(&before), context));
            outputs.extend(unified(None, Some(&after), context));
            outputs.extend(unified(Some(&before), None, context));
        }
        for output in &outputs {
            for value in values {
                assert!(!output.contains(value), "`{value}` leaked:\n{output}");
            }
        }
    }

    #[test]
    fn an_unchanged_secret_has_no_diff() {
        let one = secret(json!({ "password": "aHVudGVyMg==" }), json!({}));
        assert_eq!(unified(Some(&one), Some(&one.clone()), 3), None);
        assert!(changed_paths(&one, &one).is_empty());
    }
}
