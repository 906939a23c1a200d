//! The ground floor of the Kubernetes side: what every verb needs to talk
//! about objects (the field manager and apply parameters, the API of a kind,
//! the annotations Tazuna sets, how a rendered object becomes what is sent,
//! and the hash of the fields Tazuna owns). Apply, plan, live reads, waits
//! and checks build on this and never on each other; [`errors`] classifies
//! what the API server refuses.

pub mod errors;

use kube::api::{DynamicObject, PatchParams, ValidationDirective};
use kube::{Api, Client};
use serde_json::Value;
use tazuna_core::config::Manifest;
use tazuna_core::inventory::{self, ObjectRef};

use crate::cluster::Resolved;

/// The field manager of Tazuna before each stack had its own (and of Go
/// Tazuna). A stack's first write to an object that still has an apply
/// entry under this name renames it to the stack's ([`FieldManager::rename_legacy`]).
pub const LEGACY_FIELD_MANAGER: &str = "tazuna";

/// The longest field manager name the API server takes.
const MAX_FIELD_MANAGER: usize = 128;

/// The field manager a stack applies as, `tazuna/<stack>`: objects of two
/// stacks never share a manager, so a field that two stacks set is a
/// server-side apply conflict that names the other stack, not a silent
/// takeover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldManager(String);

impl FieldManager {
    /// The field manager of `stack`. Characters the API server would refuse
    /// (not printable) become `_`; a name over its 128 characters keeps its
    /// start and ends in a hash of the whole stack name, so it stays unique.
    pub fn of(stack: &str) -> Self {
        let clean: String = stack
            .chars()
            .map(|c| if c.is_control() { '_' } else { c })
            .collect();
        let name = format!("{LEGACY_FIELD_MANAGER}/{clean}");
        if name.chars().count() <= MAX_FIELD_MANAGER {
            return FieldManager(name);
        }
        let hash = inventory::content_hash(&Value::String(stack.to_owned()), b"");
        let hash: String = hash.chars().rev().take(16).collect();
        let keep = MAX_FIELD_MANAGER - hash.len() - 1;
        let start: String = name.chars().take(keep).collect();
        FieldManager(format!("{start}~{hash}"))
    }

    /// The name, as managedFields show it.
    pub fn name(&self) -> &str {
        &self.0
    }

    /// The parameters of every server-side apply the stack sends, dry runs
    /// included.
    ///
    /// Field validation is `Strict`, kubectl's setting: the API server
    /// refuses what the schema does not allow instead of answering with
    /// warnings, which kube-rs does not pass on. It also measured about 15%
    /// less API server CPU per apply than the default `Warn`
    /// (docs/benchmarks.md).
    pub fn apply_params(&self) -> PatchParams {
        PatchParams::apply(&self.0).validation(ValidationDirective::Strict)
    }

    /// The manager a dry run against `live` acts as to meet the conflicts the
    /// real apply meets: the legacy name while `live` still has only that
    /// entry (apply renames it before it writes), else the stack's own.
    pub fn as_for(&self, live: Option<&Value>) -> &str {
        let entries = live.map(apply_entries).unwrap_or_default();
        let has = |name: &str| entries.iter().any(|(_, manager)| *manager == name);
        if has(LEGACY_FIELD_MANAGER) && !has(&self.0) {
            LEGACY_FIELD_MANAGER
        } else {
            &self.0
        }
    }

    /// A hash of the fields this stack owns by apply in `live` (or, before
    /// the first write renamed it, the legacy entry's: the same fields under
    /// the old name, so an upgrade costs no write). An object whose intent
    /// sets no fields beyond its name has no such entry; that hashes as the
    /// empty set, so it can still be recognised as unchanged. `None` only
    /// when `live` is not an object at all.
    pub fn owned_fields_hash(&self, live: &Value) -> Option<String> {
        live.get("metadata")?;
        let managed = live
            .pointer("/metadata/managedFields")
            .and_then(Value::as_array);
        let entry = |name: &str| {
            managed.into_iter().flatten().find(|f| {
                f.get("manager").and_then(Value::as_str) == Some(name)
                    && f.get("operation").and_then(Value::as_str) == Some("Apply")
                    && f.get("subresource")
                        .is_none_or(|s| s.as_str().is_none_or(str::is_empty))
            })
        };
        // An object replaced (`tazuna.dev/apply: replace`) has an update
        // entry instead of an apply entry.
        let updated = || {
            managed.into_iter().flatten().find(|f| {
                f.get("manager").and_then(Value::as_str) == Some(self.0.as_str())
                    && f.get("operation").and_then(Value::as_str) == Some("Update")
                    && f.get("subresource")
                        .is_none_or(|s| s.as_str().is_none_or(str::is_empty))
            })
        };
        let owned = match entry(&self.0)
            .or_else(|| entry(LEGACY_FIELD_MANAGER))
            .or_else(updated)
        {
            Some(entry) => serde_json::json!({
                "apiVersion": entry.get("apiVersion"),
                "fieldsV1": entry.get("fieldsV1"),
            }),
            None => Value::Null,
        };
        Some(inventory::content_hash(&owned, b""))
    }

    /// The JSON patch that hands `live`'s legacy apply entry to this stack:
    /// renamed, or dropped when the stack has its own entry already. Each
    /// operation first tests that the entry at that position is still the
    /// legacy one, so a concurrent change fails the patch instead of renaming
    /// another manager. `None` when there is nothing to rename.
    pub fn rename_legacy(&self, live: &Value) -> Option<Value> {
        let entries = apply_entries(live);
        let (index, _) = entries.iter().find(|(_, m)| *m == LEGACY_FIELD_MANAGER)?;
        let path = format!("/metadata/managedFields/{index}");
        let test = serde_json::json!({
            "op": "test", "path": format!("{path}/manager"), "value": LEGACY_FIELD_MANAGER,
        });
        let change = if entries.iter().any(|(_, m)| *m == self.0) {
            serde_json::json!({ "op": "remove", "path": path })
        } else {
            serde_json::json!({
                "op": "replace", "path": format!("{path}/manager"), "value": self.0,
            })
        };
        Some(Value::Array(vec![test, change]))
    }
}

/// Whether `manager` is Tazuna's: a stack's, or the legacy name.
pub fn is_tazunas(manager: &str) -> bool {
    manager == LEGACY_FIELD_MANAGER
        || manager
            .strip_prefix(LEGACY_FIELD_MANAGER)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The position and manager of each apply entry of `live`'s managedFields
/// on the object itself (not a subresource).
fn apply_entries(live: &Value) -> Vec<(usize, &str)> {
    live.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter(|(_, f)| {
            f.get("operation").and_then(Value::as_str) == Some("Apply")
                && f.get("subresource")
                    .is_none_or(|s| s.as_str().is_none_or(str::is_empty))
        })
        .filter_map(|(i, f)| Some((i, f.get("manager")?.as_str()?)))
        .collect()
}

/// The annotation that keeps an object from being pruned.
pub const PRUNE_ANNOTATION: &str = "tazuna.dev/prune";

/// The API for `resolved` objects in `namespace`.
/// Send `value` whole: an update (`PUT`) at the live object's
/// `resourceVersion`, or a create when it does not exist, as `manager`
/// (`tazuna.dev/apply: replace`); the live finalizers and owner references
/// stay unless `value` lists its own. A write that lost a race with
/// another is tried once more.
pub async fn replace(
    api: &Api<DynamicObject>,
    value: &Value,
    manager: &str,
    dry_run: bool,
) -> Result<DynamicObject, kube::Error> {
    let params = kube::api::PostParams {
        dry_run,
        field_manager: Some(manager.to_owned()),
    };
    let mut object: DynamicObject =
        serde_json::from_value(value.clone()).map_err(kube::Error::SerdeError)?;
    let name = object.metadata.name.clone().unwrap_or_default();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let result = match api.get_opt(&name).await? {
            None => api.create(&params, &object).await,
            Some(live) => {
                object.metadata.resource_version = live.metadata.resource_version;
                // What protects the object or ties it to its owner stays,
                // unless the file lists its own: a replace never drops a
                // controller's finalizer (`kubernetes.io/pvc-protection`).
                if object.metadata.finalizers.is_none() {
                    object.metadata.finalizers = live.metadata.finalizers;
                }
                if object.metadata.owner_references.is_none() {
                    object.metadata.owner_references = live.metadata.owner_references;
                }
                api.replace(&name, &params, &object).await
            }
        };
        match result {
            Err(kube::Error::Api(status)) if status.code == 409 && attempt < 2 => continue,
            other => return other,
        }
    }
}

pub fn api_for(
    client: &Client,
    resolved: &Resolved,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    match (resolved.namespaced, namespace) {
        (true, Some(namespace)) => {
            Api::namespaced_with(client.clone(), namespace, &resolved.resource)
        }
        _ => Api::all_with(client.clone(), &resolved.resource),
    }
}

/// Make a rendered object what `apply` sends: namespaced objects without a
/// namespace get the manifest's (or `default`), cluster-scoped ones lose
/// theirs, and every object is annotated with the manifest that owns it
/// ([`MANIFEST_ANNOTATION`]), which prune and destroy check before deleting.
///
/// A Secret's `stringData` goes in as `data`: the server never returns
/// `stringData`, so only fields Tazuna owns in `data` let a live edit of a
/// value show as drift and be put back.
pub fn prepare_object(value: &mut Value, resolved: &Resolved, manifest: &Manifest) {
    if ObjectRef::of(value).is_some_and(|o| o.is_secret()) {
        string_data_to_data(value);
    }
    let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    if resolved.namespaced {
        if !metadata.contains_key("namespace") {
            let namespace = manifest
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into());
            metadata.insert("namespace".into(), Value::String(namespace));
        }
    } else {
        metadata.remove("namespace");
    }
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if !annotations.is_object() {
        *annotations = Value::Object(serde_json::Map::new());
    }
    annotations
        .as_object_mut()
        .expect("made an object above")
        .insert(
            MANIFEST_ANNOTATION.into(),
            Value::String(manifest.name.clone()),
        );
}

/// Move a Secret's `stringData` into `data` (base64), as the API server
/// does on write; `stringData` wins over `data` for the same key.
pub(crate) fn string_data_to_data(secret: &mut Value) {
    use base64::Engine as _;
    let Some(object) = secret.as_object_mut() else {
        return;
    };
    let Some(Value::Object(strings)) = object.remove("stringData") else {
        return;
    };
    let data = object
        .entry("data")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if !data.is_object() {
        *data = Value::Object(serde_json::Map::new());
    }
    let data = data.as_object_mut().expect("made an object above");
    for (key, text) in strings {
        let text = match text {
            Value::String(text) => text,
            other => other.to_string(),
        };
        data.insert(
            key,
            Value::String(base64::engine::general_purpose::STANDARD.encode(text)),
        );
    }
}

/// The annotation naming the manifest an object belongs to.
pub const MANIFEST_ANNOTATION: &str = "tazuna.dev/manifest";

/// The label of the API server's bootstrap RBAC policy (`rbac-defaults`).
pub const BOOTSTRAP_LABEL: &str = "kubernetes.io/bootstrapping";

/// List items come without `apiVersion` and `kind`; readiness rules need them.
pub fn fill_type(value: &mut Value, reference: &ObjectRef) {
    if let Value::Object(map) = value {
        map.insert("apiVersion".into(), Value::String(reference.api_version()));
        map.insert("kind".into(), Value::String(reference.kind.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn live(entries: Value) -> Value {
        json!({"metadata": {"name": "x", "managedFields": entries}})
    }

    #[test]
    fn each_stack_has_its_own_manager_within_the_api_servers_bounds() {
        assert_eq!(
            FieldManager::of("platform/tazuna.yaml").name(),
            "tazuna/platform/tazuna.yaml"
        );
        assert_ne!(FieldManager::of("a"), FieldManager::of("b"));
        assert_eq!(FieldManager::of("a\nb").name(), "tazuna/a_b");
        let long = "x".repeat(300);
        let longer = format!("{long}y");
        let (one, two) = (FieldManager::of(&long), FieldManager::of(&longer));
        assert_eq!(one.name().chars().count(), MAX_FIELD_MANAGER);
        assert_eq!(two.name().chars().count(), MAX_FIELD_MANAGER);
        assert_ne!(one, two, "names cut to fit stay apart");
        assert!(is_tazunas(one.name()));
        assert!(is_tazunas("tazuna"));
        assert!(!is_tazunas("tazuna-e2e"));
        assert!(!is_tazunas("kubectl"));
    }

    #[test]
    fn the_legacy_entry_counts_as_the_stacks_until_it_is_renamed() {
        let manager = FieldManager::of("s");
        let fields = json!({"f:data": {"f:k": {}}});
        let legacy = live(json!([
            {"manager": "kubectl-edit", "operation": "Update"},
            {"manager": "tazuna", "operation": "Apply", "apiVersion": "v1", "fieldsV1": fields},
        ]));
        let renamed = live(json!([
            {"manager": "kubectl-edit", "operation": "Update"},
            {"manager": "tazuna/s", "operation": "Apply", "apiVersion": "v1", "fieldsV1": fields},
        ]));
        // An upgrade costs no write: the same fields hash the same.
        assert_eq!(
            manager.owned_fields_hash(&legacy),
            manager.owned_fields_hash(&renamed)
        );
        assert_ne!(
            manager.owned_fields_hash(&legacy),
            manager.owned_fields_hash(&live(json!([])))
        );
        assert_eq!(manager.as_for(Some(&legacy)), "tazuna");
        assert_eq!(manager.as_for(Some(&renamed)), "tazuna/s");
        assert_eq!(manager.as_for(None), "tazuna/s");
        assert_eq!(
            manager.rename_legacy(&legacy),
            Some(json!([
                {"op": "test", "path": "/metadata/managedFields/1/manager", "value": "tazuna"},
                {"op": "replace", "path": "/metadata/managedFields/1/manager", "value": "tazuna/s"},
            ]))
        );
        assert_eq!(manager.rename_legacy(&renamed), None);
        // Another stack's entry is never the stack's.
        let other = FieldManager::of("other");
        assert_eq!(
            other.owned_fields_hash(&renamed),
            other.owned_fields_hash(&live(json!([])))
        );
    }

    #[test]
    fn a_legacy_entry_beside_the_stacks_own_is_dropped_and_updates_are_left_alone() {
        let manager = FieldManager::of("s");
        let both = live(json!([
            {"manager": "tazuna/s", "operation": "Apply"},
            {"manager": "tazuna", "operation": "Update"},
            {"manager": "tazuna", "operation": "Apply"},
        ]));
        assert_eq!(
            manager.rename_legacy(&both),
            Some(json!([
                {"op": "test", "path": "/metadata/managedFields/2/manager", "value": "tazuna"},
                {"op": "remove", "path": "/metadata/managedFields/2"},
            ]))
        );
        let update_only = live(json!([{"manager": "tazuna", "operation": "Update"}]));
        assert_eq!(manager.rename_legacy(&update_only), None);
        let status = live(json!([
            {"manager": "tazuna", "operation": "Apply", "subresource": "status"},
        ]));
        assert_eq!(manager.rename_legacy(&status), None);
    }

    #[test]
    fn the_patch_parses_as_a_json_patch() {
        let manager = FieldManager::of("s");
        let legacy = live(json!([{"manager": "tazuna", "operation": "Apply"}]));
        let patch = manager.rename_legacy(&legacy).unwrap();
        let parsed: Result<json_patch::Patch, _> = serde_json::from_value(patch);
        assert!(parsed.is_ok(), "{parsed:?}");
    }
}
