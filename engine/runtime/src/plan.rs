//! What `apply` would change (`plan`), and what changed live behind Tazuna's
//! back (`state drift`), without writing anything.
//!
//! Both read the live objects with one list call per kind and namespace.
//! Objects whose intent and owned fields are unchanged need no further
//! request; the others are sent as a server-side dry-run apply and the result
//! is diffed against live, so server-side defaults never show up as changes.
//! Secret values are redacted in every diff ([`tazuna_core::diff`]).

use std::collections::{BTreeMap, HashMap, HashSet};

use kube::api::{Patch, PatchParams};
use serde_json::Value;
use tazuna_core::config::Manifest;
use tazuna_core::diff;
use tazuna_core::inventory::{self, ObjectRef};

use crate::apply::{FIELD_MANAGER, api_for, owned_fields_hash};
use crate::cluster::{Cluster, Resolved};
use crate::live::LiveIndex;
use crate::render::Rendered;
use crate::state::{Entry, Stored};
use crate::wait;

/// What would happen to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// It does not exist yet.
    Create,
    /// It exists and would change.
    Update,
    /// It would be pruned (or, for drift: it was deleted live).
    Delete,
    /// Another field manager owns fields Tazuna sets.
    Conflict,
}

/// One change.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Change {
    /// The manifest.
    pub manifest: String,
    /// The object.
    pub object: String,
    /// What would happen.
    pub change: ChangeKind,
    /// The diff, Secret values redacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// A note for people.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A plan or drift report.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Report {
    /// Changes, in apply order.
    pub changes: Vec<Change>,
    /// Objects with nothing to do.
    pub unchanged: usize,
    /// Requests sent to the API server.
    pub requests: usize,
}

/// Why a plan could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A request failed.
    #[error("{what}: {source}")]
    Request {
        /// What was being read.
        what: String,
        /// What the API server said.
        #[source]
        source: kube::Error,
    },
}

/// One manifest to plan.
#[derive(Debug)]
pub struct Intent<'a> {
    /// The manifest.
    pub manifest: &'a Manifest,
    /// Its objects.
    pub rendered: &'a Rendered,
}

/// Which comparison to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Question {
    /// What would `apply` do?
    Plan,
    /// What changed live since the last apply?
    Drift,
}

/// Compare `intents` with the cluster. `states` is Tazuna's state; `all_names`
/// are the manifests in the file (state of others is reported as to be
/// pruned); `hash_key` is the Secret hash key, if the cluster has one.
pub async fn compare(
    cluster: &Cluster,
    states: &BTreeMap<String, Stored>,
    intents: &[Intent<'_>],
    all_names: &HashSet<String>,
    hash_key: Option<&[u8]>,
    question: Question,
) -> Result<Report, PlanError> {
    let mut live = LiveIndex::metadata(cluster);
    // Requests beyond the lists: full reads and dry runs of changed objects.
    let mut dry_runs = 0;
    let mut report = Report::default();
    let key = hash_key.unwrap_or(b"");
    let served_later: HashSet<(String, String)> = intents
        .iter()
        .flat_map(|i| i.rendered.objects.iter())
        .filter_map(|o| {
            let group = o.value.pointer("/spec/group")?.as_str()?;
            let kind = o.value.pointer("/spec/names/kind")?.as_str()?;
            Some((group.to_owned(), kind.to_owned()))
        })
        .collect();
    for intent in intents {
        let name = &intent.manifest.name;
        let prior: HashMap<ObjectRef, &Entry> = states
            .get(name)
            .map(|s| s.state.objects.iter().map(|e| (e.object(), e)).collect())
            .unwrap_or_default();
        let values: Vec<Value> = intent
            .rendered
            .objects
            .iter()
            .map(|o| o.value.clone())
            .collect();
        let mut seen = HashSet::new();
        for index in inventory::apply_order(&values) {
            let mut value = values[index].clone();
            let Some(object) = ObjectRef::of(&value) else {
                continue;
            };
            let Some(resolved) = cluster.resolve(&object) else {
                if question == Question::Plan {
                    let note = if served_later
                        .contains(&(object.group.clone(), object.kind.clone()))
                    {
                        "its CRD is created by this plan".to_owned()
                    } else {
                        format!(
                            "kind `{}` is not served by the cluster and no manifest provides its CRD",
                            object.kind
                        )
                    };
                    report.changes.push(Change {
                        manifest: name.clone(),
                        object: object.to_string(),
                        change: ChangeKind::Create,
                        diff: diff::unified(None, Some(&value), 3),
                        note: Some(note),
                    });
                }
                continue;
            };
            prepare_object(&mut value, &resolved, intent.manifest);
            let object = ObjectRef::of(&value).expect("identity checked");
            seen.insert(object.clone());
            let hash = inventory::content_hash(&value, key);
            let entry = prior.get(&object);
            let same_intent = entry.is_some_and(|e| e.hash == hash);
            if question == Question::Drift && !same_intent {
                // Not applied yet in this form: a pending change, not drift.
                continue;
            }
            let current = live
                .get(&object, &resolved)
                .await
                .map_err(|source| PlanError::Request {
                    what: format!(
                        "cannot list {} in {}",
                        resolved.resource.plural,
                        object.namespace.as_deref().unwrap_or("the cluster")
                    ),
                    source,
                })?
                .cloned();
            if same_intent
                && let Some(current) = &current
                && entry
                    .and_then(|e| e.fields.clone())
                    .is_some_and(|f| owned_fields_hash(current) == Some(f))
            {
                report.unchanged += 1;
                continue;
            }
            if question == Question::Drift && current.is_none() {
                report.changes.push(Change {
                    manifest: name.clone(),
                    object: object.to_string(),
                    change: ChangeKind::Delete,
                    diff: None,
                    note: Some("deleted live since the last apply".into()),
                });
                continue;
            }
            let api = api_for(cluster.client(), &resolved, object.namespace.as_deref());
            // The index holds metadata only; a changed object's diff needs all of it.
            let current = match current {
                None => None,
                Some(_) => {
                    dry_runs += 1;
                    let full =
                        api.get_opt(&object.name)
                            .await
                            .map_err(|source| PlanError::Request {
                                what: format!("cannot read {object}"),
                                source,
                            })?;
                    full.map(|o| {
                        let mut value = serde_json::to_value(&o).unwrap_or(Value::Null);
                        wait::fill_type(&mut value, &object);
                        value
                    })
                }
            };
            let mut params = PatchParams::apply(FIELD_MANAGER);
            params.dry_run = true;
            dry_runs += 1;
            let mut conflict = None;
            let mut result = api
                .patch(&object.name, &params, &Patch::Apply(&value))
                .await;
            if let Err(kube::Error::Api(status)) = &result
                && status.code == 409
            {
                // Someone else owns some of the fields: show what taking
                // them back would change.
                conflict = Some(status.message.clone());
                params.force = true;
                dry_runs += 1;
                result = api
                    .patch(&object.name, &params, &Patch::Apply(&value))
                    .await;
            }
            let result = result.map_err(|source| PlanError::Request {
                what: format!("server-side dry run of {object} was refused"),
                source,
            })?;
            let mut after = serde_json::to_value(&result).unwrap_or(Value::Null);
            wait::fill_type(&mut after, &object);
            let text = diff::unified(current.as_ref(), Some(&after), 3);
            match (text, conflict) {
                (None, None) => report.unchanged += 1,
                (text, Some(message)) => report.changes.push(Change {
                    manifest: name.clone(),
                    object: object.to_string(),
                    change: ChangeKind::Conflict,
                    diff: text,
                    note: Some(format!(
                        "{message}; `apply --force-conflicts` takes the fields back"
                    )),
                }),
                (Some(text), None) => report.changes.push(Change {
                    manifest: name.clone(),
                    object: object.to_string(),
                    change: if current.is_some() {
                        ChangeKind::Update
                    } else {
                        ChangeKind::Create
                    },
                    diff: Some(text),
                    note: other_managers(current.as_ref()),
                }),
            }
        }
        if question == Question::Plan
            && let Some(stored) = states.get(name)
        {
            for entry in &stored.state.objects {
                let object = entry.object();
                if !seen.contains(&object) {
                    let note = if intent.manifest.prune {
                        "no longer rendered"
                    } else {
                        "no longer rendered; deleted with `apply --prune`"
                    };
                    report.changes.push(Change {
                        manifest: name.clone(),
                        object: object.to_string(),
                        change: ChangeKind::Delete,
                        diff: None,
                        note: Some(note.into()),
                    });
                }
            }
        }
    }
    if question == Question::Plan {
        for (name, stored) in states {
            if all_names.contains(name) {
                continue;
            }
            for entry in &stored.state.objects {
                report.changes.push(Change {
                    manifest: name.clone(),
                    object: entry.object().to_string(),
                    change: ChangeKind::Delete,
                    diff: None,
                    note: Some(
                        "its manifest was removed from the file; deleted with `apply --prune`"
                            .into(),
                    ),
                });
            }
        }
    }
    report.requests = live.requests() + dry_runs;
    Ok(report)
}

/// Make a rendered object what `apply` sends: namespaced objects without a
/// namespace get the manifest's (or `default`), cluster-scoped ones lose
/// theirs, and every object is annotated with the manifest that owns it
/// ([`MANIFEST_ANNOTATION`]), which prune and destroy check before deleting.
pub fn prepare_object(value: &mut Value, resolved: &Resolved, manifest: &Manifest) {
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

/// The annotation naming the manifest an object belongs to.
pub const MANIFEST_ANNOTATION: &str = "tazuna.dev/manifest";

/// Managers other than Tazuna that own fields of `live`: after a hand-over
/// (Argo CD, Flux), plan says who else writes the object.
fn other_managers(live: Option<&Value>) -> Option<String> {
    let managed = live?.pointer("/metadata/managedFields")?.as_array()?;
    let mut others: Vec<String> = managed
        .iter()
        .filter_map(|f| f.get("manager").and_then(Value::as_str))
        .filter(|m| *m != FIELD_MANAGER && !m.starts_with("kube-") && *m != "kwok")
        .map(|m| format!("`{m}`"))
        .collect();
    others.sort();
    others.dedup();
    if others.is_empty() {
        None
    } else {
        Some(format!("fields are also owned by {}", others.join(", ")))
    }
}
