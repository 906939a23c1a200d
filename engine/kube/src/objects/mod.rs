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

/// The field manager Tazuna applies as.
pub const FIELD_MANAGER: &str = "tazuna";
/// The parameters of every server-side apply Tazuna sends, dry runs included.
///
/// Field validation is `Strict`, kubectl's setting: the API server refuses
/// what the schema does not allow instead of answering with warnings, which
/// kube-rs does not pass on. It also measured about 15% less API server CPU
/// per apply than the default `Warn` (docs/benchmarks.md).
pub fn apply_params() -> PatchParams {
    PatchParams::apply(FIELD_MANAGER).validation(ValidationDirective::Strict)
}

/// The annotation that keeps an object from being pruned.
pub const PRUNE_ANNOTATION: &str = "tazuna.dev/prune";

/// Namespaces, CRDs and PVCs: pruning them deletes data.
pub fn is_dangerous(object: &ObjectRef) -> bool {
    matches!(
        (object.group.as_str(), object.kind.as_str()),
        ("", "Namespace")
            | ("apiextensions.k8s.io", "CustomResourceDefinition")
            | ("", "PersistentVolumeClaim")
    )
}

/// The API for `resolved` objects in `namespace`.
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

/// A hash of the fields the `tazuna` field manager owns by apply. An object
/// whose intent sets no fields beyond its name has no such entry; that hashes
/// as the empty set, so it can still be recognised as unchanged. `None` only
/// when `live` is not an object at all.
pub fn owned_fields_hash(live: &Value) -> Option<String> {
    let metadata = live.get("metadata")?;
    let ours = metadata
        .get("managedFields")
        .and_then(Value::as_array)
        .and_then(|managed| {
            managed.iter().find(|f| {
                f.get("manager").and_then(Value::as_str) == Some(FIELD_MANAGER)
                    && f.get("operation").and_then(Value::as_str) == Some("Apply")
            })
        });
    let owned = match ours {
        Some(entry) => serde_json::json!({
            "apiVersion": entry.get("apiVersion"),
            "fieldsV1": entry.get("fieldsV1"),
        }),
        None => Value::Null,
    };
    Some(inventory::content_hash(&owned, b""))
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

/// List items come without `apiVersion` and `kind`; readiness rules need them.
pub fn fill_type(value: &mut Value, reference: &ObjectRef) {
    if let Value::Object(map) = value {
        map.insert("apiVersion".into(), Value::String(reference.api_version()));
        map.insert("kind".into(), Value::String(reference.kind.clone()));
    }
}
