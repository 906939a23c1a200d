//! What `apply` would change (`plan`), what changed live behind Tazuna's
//! back (`state drift`), and what changed in the file since the last apply
//! (`state diff`), without writing anything.
//!
//! Plan and drift read the live objects with one list call per kind and
//! namespace; state diff reads none.
//! Objects whose intent and owned fields are unchanged need no further
//! request; the others are sent as a server-side dry-run apply and the result
//! is diffed against live, so server-side defaults never show up as changes.
//! Secret values are redacted in every diff ([`tazuna_core::diff`]).
//!
//! This file holds what plan and drift share and the comparison against
//! live; [`pending`] (`state diff`) compares the file with state alone, and
//! `notes` says who else wrote an object plan takes over or changes.

use std::collections::{BTreeMap, HashMap, HashSet};

use kube::api::Patch;
use serde_json::Value;
use tazuna_core::config::Manifest;
use tazuna_core::diff;
use tazuna_core::hooks;
use tazuna_core::inventory::{self, ObjectRef};
use tazuna_core::policy::{self, Decision, Why};

use crate::cluster::Cluster;
use crate::live::LiveIndex;
use crate::objects::{FieldManager, api_for, fill_type, prepare_object};
use crate::ownership::Ownership;
use crate::prune;
use crate::state::{Entry, Stored};
use tazuna_core::render::Rendered;

mod notes;
mod pending;

use notes::{adopt_note, other_managers};
pub use pending::pending;

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
    /// It exists, no stack applied it, and apply takes it over.
    Adopt,
    /// The API server refused its dry run (a webhook down, a namespace
    /// being deleted): what apply would do is unknown, and plan fails once
    /// every other object is shown.
    Refused,
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
    /// Objects left as they are live because they were handed over to a
    /// GitOps controller (not compared; counted in `unchanged` too).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub handed_over: Vec<Handed>,
    /// The helm hooks `apply` will run: those of each manifest it installs
    /// or changes, in the order they run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<HookRun>,
    /// Requests sent to the API server.
    pub requests: usize,
}

/// An object handed over to a GitOps controller, which `plan` and `state
/// drift` leave out.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Handed {
    /// The manifest.
    pub manifest: String,
    /// The object.
    pub object: String,
    /// To whom and when.
    pub handover: tazuna_core::policy::HandedOver,
}

/// A helm hook `apply` will run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HookRun {
    /// The manifest.
    pub manifest: String,
    /// The hook.
    pub object: String,
    /// Its `helm.sh/hook` events (`pre-upgrade`, `post-install,post-upgrade`).
    pub events: String,
}

/// Why a plan could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A request failed.
    #[error("{what}: {message}")]
    Request {
        /// What was being read or sent.
        what: String,
        /// What the API server said.
        message: String,
        /// What to do about it, where there is something.
        hint: Option<String>,
    },
    /// An object's policy annotation is not one Tazuna knows.
    #[error("{0}")]
    Policy(#[from] tazuna_core::policy::PolicyError),
}

impl Report {
    /// How many objects' dry runs the API server refused.
    pub fn refused(&self) -> usize {
        self.changes
            .iter()
            .filter(|c| c.change == ChangeKind::Refused)
            .count()
    }
}

impl PlanError {
    fn request(what: String, error: &kube::Error) -> Self {
        let message = crate::objects::errors::status_message(error);
        let hint = crate::objects::errors::is_unknown_field(&message)
            .then(|| crate::objects::errors::UNKNOWN_FIELD_HINT.to_owned());
        Self::Request {
            what,
            message,
            hint,
        }
    }
}

impl tazuna_core::hint::Hint for PlanError {
    fn hint(&self) -> Option<String> {
        match self {
            Self::Request { hint, .. } => hint.clone(),
            Self::Policy(error) => error.hint(),
        }
    }
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
    /// What changed in the file since the last apply? State only: no live
    /// object is read.
    Pending,
}

impl Question {
    /// The command that asks it.
    pub fn verb(self) -> &'static str {
        match self {
            Self::Plan => "plan",
            Self::Drift => "state drift",
            Self::Pending => "state diff",
        }
    }
}

/// Compare `intents` with the cluster. `states` is the stack's own state;
/// `all_names` are the manifests in the file (state of others is reported as
/// to be pruned); `ownership` says which objects other manifests keep;
/// `hash_key` is the Secret hash key, if the cluster has one; `manager` is
/// the stack's field manager, whom the dry runs act as.
#[allow(clippy::too_many_arguments)]
pub async fn compare(
    cluster: &Cluster,
    manager: &FieldManager,
    states: &BTreeMap<String, Stored>,
    intents: &[Intent<'_>],
    all_names: &HashSet<String>,
    ownership: &Ownership,
    hash_key: Option<&[u8]>,
    question: Question,
) -> Result<Report, PlanError> {
    if question == Question::Pending {
        return Ok(pending(
            |o| cluster.resolve(o),
            states,
            intents,
            all_names,
            ownership,
            hash_key,
        ));
    }
    let mut live = LiveIndex::metadata(cluster);
    // Namespaces the run creates: objects in them cannot be dry-run yet, so
    // they are shown as creates of what would be sent.
    let created_namespaces: HashSet<String> = if question == Question::Plan {
        let rendered =
            crate::namespaces::provided(intents.iter().map(|i| (i.manifest, i.rendered)));
        let existing = live_namespaces(cluster).await?;
        rendered.difference(&existing).cloned().collect()
    } else {
        HashSet::new()
    };
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
    let recorded_anywhere: HashSet<_> = states
        .values()
        .flat_map(|stored| stored.state.objects.iter().map(|e| e.object().key()))
        .collect();
    for intent in intents {
        let name = &intent.manifest.name;
        let prior = recorded(states, name);
        let values: Vec<&Value> = intent.rendered.objects.iter().map(|o| &o.value).collect();
        let left_out = hooks_left_out(&values, prior.is_empty());
        let changes_before = report.changes.len();
        let mut seen = HashSet::new();
        for index in inventory::apply_order(&values) {
            let Some(object) = ObjectRef::of(values[index]) else {
                continue;
            };
            if left_out.contains(&index) {
                // Recorded by an earlier run, it stays recorded.
                if let Some(resolved) = cluster.resolve(&object) {
                    let mut value = values[index].clone();
                    prepare_object(&mut value, &resolved, intent.manifest);
                    seen.extend(ObjectRef::of(&value));
                }
                continue;
            }
            let mut value = values[index].clone();
            let Some(resolved) = cluster.resolve(&object) else {
                if question == Question::Plan {
                    let note = if served_later
                        .contains(&(object.group.clone(), object.kind.clone()))
                    {
                        "its CRD is created by this plan".to_owned()
                    } else if let Some(hint) =
                        tazuna_core::removed::hint(&object.api_version(), &object.kind)
                    {
                        hint
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
            // Create-only or handed over: what exists is left as it is, and
            // neither plan nor drift compares it (the same decision apply makes).
            let decision = policy::decide(
                &value,
                intent.manifest.handover.as_ref(),
                entry.and_then(|e| e.handover.as_ref()),
            )?;
            let cannot_list = |error: kube::Error| {
                PlanError::request(
                    format!(
                        "cannot list {} in {}",
                        resolved.resource.plural,
                        object.namespace.as_deref().unwrap_or("the cluster")
                    ),
                    &error,
                )
            };
            if let Decision::CreateOnly(why) = &decision {
                let exists = question == Question::Drift
                    || live
                        .get(&object, &resolved)
                        .await
                        .map_err(cannot_list)?
                        .is_some();
                if exists {
                    report.unchanged += 1;
                    if let Why::HandedOver(handover) = why {
                        report.handed_over.push(Handed {
                            manifest: name.clone(),
                            object: object.to_string(),
                            handover: handover.clone(),
                        });
                    }
                    continue;
                }
            }
            // Sent by an apply that failed part way (a timeout, a failed
            // test) and never seen through: the next apply sends it and
            // waits for it again, so it is a change, not a match.
            if let Some(note) = retried(states, name, entry.copied()) {
                report.changes.push(Change {
                    manifest: name.clone(),
                    object: object.to_string(),
                    change: ChangeKind::Update,
                    diff: None,
                    note: Some(note.to_owned()),
                });
                continue;
            }
            if question == Question::Drift && !same_intent {
                // Not applied yet in this form: a pending change, not drift.
                continue;
            }
            let current = live
                .get(&object, &resolved)
                .await
                .map_err(cannot_list)?
                .cloned();
            if same_intent
                && let Some(current) = &current
                && entry
                    .and_then(|e| e.fields.clone())
                    .is_some_and(|f| manager.owned_fields_hash(current) == Some(f))
            {
                report.unchanged += 1;
                continue;
            }
            // Applied as it is now, finished and removed by its TTL: done.
            if current.is_none() && entry.is_some_and(|e| e.done_and_removed(&hash, &value)) {
                report.unchanged += 1;
                continue;
            }
            if current.is_none()
                && let Some(namespace) = &object.namespace
                && created_namespaces.contains(namespace)
            {
                report.changes.push(Change {
                    manifest: name.clone(),
                    object: object.to_string(),
                    change: ChangeKind::Create,
                    diff: diff::unified(None, Some(&value), 3),
                    note: Some(format!("namespace `{namespace}` is created by this plan")),
                });
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
                    let full = api.get_opt(&object.name).await.map_err(|error| {
                        PlanError::request(format!("cannot read {object}"), &error)
                    })?;
                    full.map(|o| {
                        let mut value = serde_json::to_value(&o).unwrap_or(Value::Null);
                        fill_type(&mut value, &object);
                        value
                    })
                }
            };
            // Fields left to others go as they are live, and are not compared.
            let ignore = policy::ignored(&value)?;
            let ignored = match &current {
                Some(current) => {
                    let pointers = policy::resolve(&ignore, current);
                    policy::keep_live(&mut value, current, &pointers);
                    pointers
                }
                None => Vec::new(),
            };
            let mut params = manager.apply_params();
            params.dry_run = true;
            params.field_manager = Some(manager.as_for(current.as_ref()).to_owned());
            let replaced = matches!(decision, Decision::Replace);
            let ((result, conflict, sent), warnings) = crate::warnings::collect(async {
                if replaced {
                    let manager = params.field_manager.clone().unwrap_or_default();
                    let result = crate::objects::replace(&api, &value, &manager, true).await;
                    return (result, None, 2);
                }
                let first = api
                    .patch(&object.name, &params, &Patch::Apply(&value))
                    .await;
                match first {
                    // Someone else owns some of the fields: show what taking
                    // them back would change.
                    Err(kube::Error::Api(status)) if status.code == 409 => {
                        params.force = true;
                        let forced = api
                            .patch(&object.name, &params, &Patch::Apply(&value))
                            .await;
                        (forced, Some(status.message), 2)
                    }
                    other => (other, None, 1),
                }
            })
            .await;
            dry_runs += sent;
            let warning =
                (!warnings.is_empty()).then(|| format!("warning: {}", warnings.join("; ")));
            let result = match result {
                Ok(result) => result,
                Err(error) => {
                    // One refusal does not hide the rest of the plan.
                    let refusal = PlanError::request(
                        "its server-side dry run was refused".to_owned(),
                        &error,
                    );
                    let hint = tazuna_core::hint::Hint::hint(&refusal).unwrap_or_else(|| {
                        "fix what the API server names (a webhook that does not answer, a namespace being deleted) and plan again".to_owned()
                    });
                    report.changes.push(Change {
                        manifest: name.clone(),
                        object: object.to_string(),
                        change: ChangeKind::Refused,
                        diff: None,
                        note: Some(format!("{refusal}; hint: {hint}")),
                    });
                    continue;
                }
            };
            let mut after = serde_json::to_value(&result).unwrap_or(Value::Null);
            fill_type(&mut after, &object);
            let text = diff::unified(
                current
                    .as_ref()
                    .map(|c| policy::without(c, &ignored))
                    .as_ref(),
                Some(&policy::without(&after, &ignored)),
                3,
            );
            // Fields changed by hand since an apply of the same intent are
            // drift, which apply takes back (see `objects::errors::hand_edits`).
            let (conflict, retaken) = match conflict {
                Some(message) if same_intent => {
                    match crate::objects::errors::hand_edits(&message, current.as_ref()) {
                        Some(editors) => (None, Some(editors)),
                        None => (Some(message), None),
                    }
                }
                other => (other, None),
            };
            let retaken = retaken.map(|editors| {
                format!(
                    "changed live by {}; `apply` takes the fields back",
                    editors.join(", ")
                )
            });
            // An object that exists and that no state records is taken over
            // (the takeover verdict, `crate::takeover`, allowed it).
            let adopted = current.is_some() && !recorded_anywhere.contains(&object.key());
            if adopted && conflict.is_none() {
                report.changes.push(Change {
                    manifest: name.clone(),
                    object: object.to_string(),
                    change: ChangeKind::Adopt,
                    diff: text,
                    note: Some(adopt_note(&object, current.as_ref(), manager)),
                });
                continue;
            }
            match (text, conflict) {
                (None, None) => report.unchanged += 1,
                (text, Some(message)) => report.changes.push(Change {
                    manifest: name.clone(),
                    object: object.to_string(),
                    change: ChangeKind::Conflict,
                    diff: text,
                    note: Some(if adopted {
                        format!(
                            "{}; {message}; `apply --force-conflicts` takes the fields",
                            adopt_note(&object, current.as_ref(), manager)
                        )
                    } else {
                        format!("{message}; `apply --force-conflicts` takes the fields back")
                    }),
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
                    note: [retaken, other_managers(current.as_ref(), manager), warning]
                        .into_iter()
                        .flatten()
                        .reduce(|a, b| format!("{a}; {b}")),
                }),
            }
        }
        // The hooks an install runs, and an upgrade's when it changes
        // something: what apply does (`apply::Run::apply_objects`).
        if question == Question::Plan && (prior.is_empty() || report.changes.len() > changes_before)
        {
            let release = if prior.is_empty() {
                hooks::Release::Install
            } else {
                hooks::Release::Upgrade
            };
            let split = hooks::split(&values, release);
            for hook in split.pre.iter().chain(&split.post) {
                let value = values[hook.index];
                let Some(object) = ObjectRef::of(value) else {
                    continue;
                };
                let events = value
                    .pointer("/metadata/annotations")
                    .and_then(|a| a.get(hooks::HOOK))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                report.hooks.push(HookRun {
                    manifest: name.clone(),
                    object: object.to_string(),
                    events: events.to_owned(),
                });
            }
        }
        if question == Question::Plan
            && let Some(stored) = states.get(name)
        {
            let gone = stored.state.objects.iter().filter(|entry| {
                let object = entry.object();
                !seen.contains(&object) && ownership.kept_by(&object.key(), name).is_none()
            });
            let why = "no longer rendered";
            let prunes_itself = intent.manifest.prune;
            live_prunes(
                cluster,
                &mut live,
                name,
                gone,
                why,
                prunes_itself,
                &mut report,
            )
            .await;
        }
    }
    if question == Question::Plan {
        // Manifests removed from the file, read live as apply reads them.
        for (name, stored) in states.iter().filter(|(n, _)| !all_names.contains(*n)) {
            let gone = stored
                .state
                .objects
                .iter()
                .filter(|entry| ownership.kept_by(&entry.object().key(), name).is_none());
            let why = "its manifest was removed from the file";
            live_prunes(cluster, &mut live, name, gone, why, false, &mut report).await;
        }
    }
    report.requests = live.requests() + dry_runs;
    Ok(report)
}

/// Indices of the helm hooks an apply of `values` leaves out (chart tests,
/// delete hooks, install hooks of an upgrade): they are not compared.
fn hooks_left_out(values: &[&Value], first: bool) -> HashSet<usize> {
    let release = if first {
        hooks::Release::Install
    } else {
        hooks::Release::Upgrade
    };
    let split = hooks::split(values, release);
    split
        .left_out
        .iter()
        .map(|(index, _)| *index)
        .chain(split.tests.iter().map(|hook| hook.index))
        .collect()
}

/// A delete of `object` of `manifest`, which is no longer rendered (`why`),
/// with a note that says what `apply` will really do with it.
fn prune_change(
    manifest: &str,
    object: &ObjectRef,
    why: &str,
    prunes_itself: bool,
    verdict: prune::Verdict,
) -> Change {
    Change {
        manifest: manifest.to_owned(),
        object: object.to_string(),
        change: ChangeKind::Delete,
        diff: None,
        note: Some(verdict.note(object, why, prunes_itself)),
    }
}

/// What plan says of `entries` of manifest `name`, no longer rendered
/// (`why`): the prune verdict on each as it is live, which is what apply
/// decides by. A kind no longer served, or an object gone or not Tazuna's,
/// apply only forgets, so plan says nothing of it.
async fn live_prunes(
    cluster: &Cluster,
    live: &mut LiveIndex<'_>,
    name: &str,
    entries: impl Iterator<Item = &Entry>,
    why: &str,
    prunes_itself: bool,
    report: &mut Report,
) {
    for entry in entries {
        let object = entry.object();
        let Some(resolved) = cluster.resolve(&object) else {
            continue;
        };
        let verdict = match live.get(&object, &resolved).await {
            Ok(current) => prune::verdict(&object, name, current, prune::Recorded::of(entry)),
            // Unreadable now: say what apply does if it is ours.
            Err(_) => unread(entry),
        };
        if verdict != prune::Verdict::NotOurs {
            report
                .changes
                .push(prune_change(name, &object, why, prunes_itself, verdict));
        }
    }
}

/// The prune verdict for an object whose live form is not read (state
/// diff, or a read that failed): what apply does if it is still Tazuna's.
fn unread(entry: &Entry) -> prune::Verdict {
    prune::unread(&entry.object(), prune::Recorded::of(entry))
}

/// The names of the namespaces that exist live (one list call).
async fn live_namespaces(cluster: &Cluster) -> Result<HashSet<String>, PlanError> {
    let api: kube::Api<k8s_openapi::api::core::v1::Namespace> =
        kube::Api::all(cluster.client().clone());
    let list = api
        .list_metadata(&kube::api::ListParams::default())
        .await
        .map_err(|error| PlanError::request("cannot list namespaces".into(), &error))?;
    Ok(list
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect())
}

/// What plan, drift and state diff say of `entry`, recorded by `manifest`
/// in `states`, when the manifest's last apply failed part way and the
/// object was sent then without being seen through (no fields hash).
fn retried(
    states: &BTreeMap<String, Stored>,
    manifest: &str,
    entry: Option<&Entry>,
) -> Option<&'static str> {
    let incomplete = states.get(manifest).is_some_and(|s| s.state.incomplete);
    (incomplete && entry.is_some_and(|e| e.fields.is_none())).then_some(
        "its manifest's last apply failed part way; `apply` sends it again and waits for it",
    )
}

/// A manifest's state entries by object; empty when it was never applied.
fn recorded<'a>(
    states: &'a BTreeMap<String, Stored>,
    manifest: &str,
) -> HashMap<ObjectRef, &'a Entry> {
    states
        .get(manifest)
        .map(|s| s.state.objects.iter().map(|e| (e.object(), e)).collect())
        .unwrap_or_default()
}
