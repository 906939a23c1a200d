//! Applying rendered manifests to a cluster: layer by layer, manifests of a
//! layer in parallel, and inside a manifest Namespaces, then CRDs (waited
//! for until `Established`, then discovery is refreshed), then the rest.
//!
//! Every object goes in by server-side apply with field manager `tazuna`.
//! An object whose content hash equals the one in state, and whose fields
//! owned by `tazuna` are unchanged live, is not sent again: one list call per
//! kind and namespace answers that for all of them. After a manifest applied,
//! its objects are waited for (see [`crate::wait`]), its tests run, and only
//! then is its state written. A failing manifest stops its dependents; the
//! other manifests of its layer still finish.

// `ManifestError` names the failing object; it is only built on the way out
// of a manifest, so its size costs nothing where it matters.
#![allow(clippy::result_large_err)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PropagationPolicy};
use kube::{Api, Client};
use serde_json::Value;
use tazuna_core::config::{LoadBalancers, Manifest, Test, Wait};
use tazuna_core::hooks::{self, Hook};
use tazuna_core::inventory::{self, ObjectRef, Phase};
use tracing::Instrument as _;

use tazuna_core::hint::Hint;

use crate::cluster::{Cluster, Resolved};
use crate::live::LiveIndex;
use crate::objects::errors::{
    UNKNOWN_FIELD_HINT, hand_edits, is_immutable, is_unknown_field, status_message,
};
use crate::objects::{FieldManager, LEGACY_FIELD_MANAGER, api_for};
use crate::ownership::Ownership;
use crate::prune;
pub use crate::prune::Prune;
use crate::state::{Entry, ManifestState, PluginRecord, Store, Stored};
use crate::wait::{self, Watched};
use tazuna_core::render::Rendered;

/// One object after its phase: its state entry, and the apply response when
/// it was sent.
type Handled = (Entry, Option<Value>);

/// How long a new CRD may take to become `Established`.
const CRD_TIMEOUT: Duration = Duration::from_secs(60);

/// How long an `Established` CRD's kind may take to appear in discovery.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(15);

/// What the manifests of one run share: who provides which CRD, which
/// manifests have applied so far, and (for a dry run) which namespaces the
/// run would create.
pub(crate) struct Shared {
    providers: HashMap<(String, String), Provider>,
    applied: std::sync::Mutex<HashSet<String>>,
    /// Namespaces rendered by this run.
    namespaces: HashSet<String>,
    /// Namespaces that exist live; read once, by dry runs only.
    live_namespaces: tokio::sync::OnceCell<HashSet<String>>,
    /// Apply requests in flight, across every manifest of the run.
    requests: tokio::sync::Semaphore,
}

impl Shared {
    /// What `units`, one run's manifests, share; `settings` bound the
    /// requests they send at once.
    pub(crate) fn new(units: &[Unit<'_>], settings: &ApplySettings) -> Self {
        Self {
            requests: tokio::sync::Semaphore::new(settings.requests_at_once.max(1)),
            providers: crd_providers(units),
            applied: std::sync::Mutex::new(HashSet::new()),
            namespaces: crate::namespaces::provided(
                units
                    .iter()
                    .filter_map(|u| Some((u.manifest, u.rendered.as_ref().ok()?))),
            ),
            live_namespaces: tokio::sync::OnceCell::new(),
        }
    }
}

/// Apply requests a run keeps in flight unless told otherwise (`--requests`).
/// Measured on the benchmark's 2-core harness (a fresh control plane per
/// run, Argo CD and 1,000 ConfigMaps), 128 took 13% less time than 32 and
/// the control plane 14% less CPU for the same patches; 256 took 4 to 7%
/// less than 128, and is what the benchmark's minimal client found best. A
/// server that has no seat for one (API Priority and Fairness) queues it,
/// and answers 429 only when the user's queues are full as well (a
/// non-exempt user's priority level queues 6 x 50 by default); the client
/// retries a 429 after the time the server names.
pub const REQUESTS_AT_ONCE: usize = 256;

/// What happens on a field conflict with another manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conflicts {
    /// Fail the object and say who owns the field.
    Report,
    /// Take ownership (`--force-conflicts`).
    Force,
}

/// What happens when an immutable field changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recreate {
    /// Fail the object with a hint.
    Never,
    /// Delete it, wait until it is gone, and apply it again (`--recreate`).
    Allowed,
}

/// Whether anything is persisted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Apply for real.
    Apply,
    /// Server-side dry run: nothing is persisted, nothing is waited for.
    DryRun,
}

/// How one apply runs.
#[derive(Debug, Clone)]
pub struct ApplySettings {
    /// On field conflicts.
    pub conflicts: Conflicts,
    /// On immutable fields.
    pub recreate: Recreate,
    /// Pruning.
    pub prune: Prune,
    /// Apply or dry run.
    pub mode: Mode,
    /// Manifests of a layer applied at once.
    pub manifests_at_once: usize,
    /// Apply requests in flight at once, across the run's manifests.
    pub requests_at_once: usize,
    /// Send every object, even those unchanged in intent and live
    /// (`--sync`, as `helmfile sync` is to `helmfile apply`).
    pub resend: bool,
    /// Keep what each object was before this run changed it, so that a
    /// failing run can be undone ([`Run::roll_back`], `--atomic`).
    pub atomic: bool,
    /// The git commit of the config, recorded in state.
    pub git_commit: Option<String>,
    /// The repository of the file, recorded with a derived stack name
    /// (see `ManifestState::origin`).
    pub origin: Option<String>,
    /// The tazuna version, recorded in state.
    pub tazuna_version: String,
    /// Whether `spec.tests` run at the end.
    pub run_spec_tests: bool,
    /// How long deleted objects (pruned, destroyed) may take to be gone.
    pub deletion_timeout: Duration,
}

/// One manifest to apply.
#[derive(Debug)]
pub struct Unit<'a> {
    /// The manifest.
    pub manifest: &'a Manifest,
    /// Its position in the file.
    pub position: usize,
    /// What it rendered to, or why it did not.
    pub rendered: Result<Rendered, Failure>,
}

/// What happened to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Sent; it was not in state before.
    Created,
    /// Sent; it changed (or changed live).
    Configured,
    /// Not sent: unchanged in intent and live.
    Unchanged,
    /// Deleted because it is no longer rendered.
    Pruned,
    /// Deleted by `tazuna destroy`.
    Deleted,
    /// No longer rendered, but kept (annotation, or a dangerous kind without `--prune-dangerous`).
    Kept,
}

impl Action {
    /// The word shown for it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Configured => "configured",
            Self::Unchanged => "unchanged",
            Self::Pruned => "pruned",
            Self::Deleted => "deleted",
            Self::Kept => "kept",
        }
    }
}

/// Progress events: the one source of every progress view and log line.
#[derive(Debug, Clone)]
pub enum Event {
    /// A layer starts.
    Layer {
        /// 1-based.
        index: usize,
        /// How many layers there are.
        of: usize,
        /// Its manifests.
        manifests: Vec<String>,
    },
    /// A manifest starts.
    Started {
        /// The manifest.
        manifest: String,
        /// How many objects it rendered.
        objects: usize,
    },
    /// An object was handled.
    Object {
        /// The manifest.
        manifest: String,
        /// The object.
        object: ObjectRef,
        /// What happened.
        action: Action,
        /// Why, for kept objects.
        note: Option<String>,
    },
    /// A manifest waits for readiness.
    Waiting {
        /// The manifest.
        manifest: String,
        /// How many objects it waits for.
        objects: usize,
    },
    /// An object became ready.
    Ready {
        /// The manifest.
        manifest: String,
        /// The object.
        object: ObjectRef,
    },
    /// Something about an object the user should know, that is no change:
    /// a helm hook an apply leaves out.
    Note {
        /// The manifest.
        manifest: String,
        /// The object.
        object: ObjectRef,
        /// What to know.
        note: String,
    },
    /// A test passed.
    TestPassed {
        /// The manifest (`None` for `spec.tests`).
        manifest: Option<String>,
        /// What was tested.
        test: String,
    },
    /// A manifest is done.
    Finished(ManifestOutcome),
}

/// Receives [`Event`]s.
pub trait Observer: Sync {
    /// One event.
    fn event(&self, event: Event);
}

/// Counts per action.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Created.
    pub created: usize,
    /// Configured.
    pub configured: usize,
    /// Unchanged.
    pub unchanged: usize,
    /// Pruned, or deleted by destroy.
    pub pruned: usize,
    /// Kept.
    pub kept: usize,
}

impl Counts {
    pub(crate) fn add(&mut self, action: Action) {
        match action {
            Action::Created => self.created += 1,
            Action::Configured => self.configured += 1,
            Action::Unchanged => self.unchanged += 1,
            Action::Pruned | Action::Deleted => self.pruned += 1,
            Action::Kept => self.kept += 1,
        }
    }
}

/// How a manifest ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Applied, ready, tests passed, state written.
    Applied,
    /// Failed: what went wrong, and what to do about it.
    Failed(Failure),
    /// Not attempted, with the reason.
    Skipped(String),
}

/// One manifest's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestOutcome {
    /// The manifest (or `spec.tests`).
    pub manifest: String,
    /// How it ended.
    pub outcome: Outcome,
    /// What happened to its objects.
    pub counts: Counts,
    /// How long it took.
    pub elapsed: Duration,
}

/// Why a manifest failed, as the engine hands it out: what is wrong, and
/// apart from it what to do ([`Hint`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// What went wrong; it names the object where there is one.
    pub message: String,
    /// What to do about it.
    pub hint: Option<String>,
}

impl Failure {
    /// A failure with no advice.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: None,
        }
    }

    /// The failure `error` describes, with its hint.
    pub fn of(error: &(impl std::error::Error + Hint)) -> Self {
        Self {
            message: error.to_string(),
            hint: error.hint(),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Why one manifest failed; it becomes a [`Failure`]. It is big (it names
/// the object), but it is only built on the way out of a manifest.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ManifestError {
    #[error("{object}: unknown kind `{kind}` in `{api_version}`")]
    UnknownKind {
        object: ObjectRef,
        kind: String,
        api_version: String,
        hint: Option<String>,
    },
    #[error("{object}: conflict with another field manager: {message}")]
    Conflict { object: ObjectRef, message: String },
    #[error("{object}: an immutable field changed: {message}")]
    Immutable { object: ObjectRef, message: String },
    #[error("{object}: {message}")]
    UnknownField { object: ObjectRef, message: String },
    #[error("{object}: {message}")]
    Rejected { object: ObjectRef, message: String },
    #[error("{0}")]
    Wait(#[from] wait::WaitError),
    #[error("helm hook {object} did not succeed: {wait}")]
    Hook {
        object: ObjectRef,
        wait: wait::WaitError,
    },
    #[error("{0}")]
    State(#[from] crate::state::StateError),
    #[error("{0}")]
    Test(String),
    #[error("cannot refresh discovery after applying CRDs: {0}")]
    Discovery(kube::Error),
    #[error("object #{index} has no apiVersion, kind or metadata.name")]
    Anonymous { index: usize },
    #[error("{object}: annotation `{APPLY_WAVE}` is `{value}`, not a whole number")]
    Wave { object: ObjectRef, value: String },
}

impl Hint for ManifestError {
    fn hint(&self) -> Option<String> {
        match self {
            Self::UnknownKind { hint, .. } => hint.clone(),
            Self::Conflict { .. } => Some(
                "another tool owns these fields; rerun with `--force-conflicts` to take them over"
                    .into(),
            ),
            Self::Immutable { .. } => {
                Some("rerun with `--recreate` to delete and re-create it".into())
            }
            Self::UnknownField { .. } => Some(UNKNOWN_FIELD_HINT.into()),
            Self::Wave { .. } => Some(format!(
                "waves go in ascending order, such as `{APPLY_WAVE}: \"-1\"` or `\"2\"`; objects without it are wave 0"
            )),
            Self::State(error) => error.hint(),
            Self::Wait(wait::WaitError::NotGone { blocking, .. }) if !blocking.is_empty() => {
                let names = blocking.join("`, `");
                Some(format!(
                    "the namespace controller deletes no Namespace while APIService `{names}` is unavailable; bring its backend up, or remove it with `kubectl delete apiservice {}`, and rerun",
                    blocking.join(" ")
                ))
            }
            _ => None,
        }
    }
}

/// Everything one run shares.
pub struct Run<'a> {
    /// The cluster.
    pub cluster: &'a Cluster,
    /// Its state store.
    pub store: &'a Store,
    /// The stack's own state as read at the start.
    pub states: &'a BTreeMap<String, Stored>,
    /// The stack that writes the state.
    pub stack: &'a str,
    /// The field manager the stack applies as.
    pub manager: FieldManager,
    /// Which manifest keeps which object (prune consults it).
    pub ownership: &'a Ownership,
    /// The key for hashing Secrets.
    pub hash_key: &'a [u8],
    /// How to apply.
    pub settings: &'a ApplySettings,
    /// Who hears about progress.
    pub observer: &'a dyn Observer,
    /// What this run changed, when [`ApplySettings::atomic`].
    pub journal: Journal,
}

/// What an atomic run changed, in order: each object it created, and each
/// it changed with what it was before (held in memory only; a Secret's data
/// never leaves it).
#[derive(Debug, Default)]
pub struct Journal {
    changes: std::sync::Mutex<(Vec<Change>, HashSet<ObjectRef>)>,
}

#[derive(Debug)]
struct Change {
    object: ObjectRef,
    resolved: Resolved,
    /// The object before the run; `None` when the run created it.
    before: Option<Value>,
}

/// What [`Run::roll_back`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RolledBack {
    /// Objects the run created, deleted again.
    pub deleted: usize,
    /// Objects the run changed, put back as they were.
    pub restored: usize,
    /// What could not be undone, each naming the object.
    pub failures: Vec<String>,
}

impl Journal {
    fn record(&self, object: &ObjectRef, resolved: &Resolved, before: Option<Value>) {
        let mut guard = self.changes.lock().expect("journal lock");
        let (changes, seen) = &mut *guard;
        if seen.insert(object.clone()) {
            changes.push(Change {
                object: object.clone(),
                resolved: resolved.clone(),
                before,
            });
        }
    }
}

/// `object` as it can be written back: without what the server keeps, but
/// with its `managedFields`, so that the write puts back who owned what and
/// a later apply finds the same owners it would have found before the run.
fn restorable(mut object: Value) -> Value {
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in [
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "generation",
            "selfLink",
        ] {
            metadata.remove(key);
        }
    }
    if let Some(object) = object.as_object_mut() {
        object.remove("status");
    }
    object
}

impl std::fmt::Debug for Run<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("settings", self.settings)
            .finish()
    }
}

/// A rendered object made ready to send.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    pub(crate) object: ObjectRef,
    value: Value,
    hash: String,
    /// Its kind on the cluster; `None` in a dry run when the run itself
    /// would create the kind (its CRD is in the run), so nothing is sent.
    pub(crate) resolved: Option<Resolved>,
    /// Tazuna's intent for it is what the state records: a field conflict
    /// with a hand edit is drift, which apply takes back.
    restore: bool,
    /// Go Tazuna applied it (its state was migrated): the fields Go's run
    /// set, under whichever field manager, are Tazuna's to take over.
    takeover: bool,
    /// The JSON patch that hands the legacy field manager's entry to the
    /// stack's, sent before the apply ([`FieldManager::rename_legacy`]).
    rename: Option<Value>,
    /// Whom a dry run acts as, when not the stack's own manager
    /// ([`FieldManager::as_for`]).
    acts_as: Option<String>,
}

impl Run<'_> {
    /// Undo what the run changed, newest first: objects it created are
    /// deleted, objects it changed are put back as they were (`--atomic`).
    pub async fn roll_back(&self) -> RolledBack {
        let (changes, _) = std::mem::take(&mut *self.journal.changes.lock().expect("journal lock"));
        let mut done = RolledBack::default();
        for change in changes.into_iter().rev() {
            let api = api_for(
                self.client(),
                &change.resolved,
                change.object.namespace.as_deref(),
            );
            let name = &change.object.name;
            let result = match change.before {
                None => match api.delete(name, &DeleteParams::background()).await {
                    Ok(_) => {
                        done.deleted += 1;
                        Ok(())
                    }
                    Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
                    Err(e) => Err(e),
                },
                Some(before) => {
                    let owners = before["metadata"]["managedFields"].clone();
                    let restored: Result<kube::api::DynamicObject, _> =
                        serde_json::from_value(restorable(before));
                    match restored {
                        Ok(object) => {
                            let put = api
                                .replace(
                                    name,
                                    &kube::api::PostParams {
                                        field_manager: Some(self.manager.name().to_owned()),
                                        ..Default::default()
                                    },
                                    &object,
                                )
                                .await;
                            // The write is recorded as Tazuna's update; put the
                            // owners back as they were, or the next apply would
                            // conflict with that update.
                            let owners =
                                serde_json::json!({ "metadata": { "managedFields": owners } });
                            match put {
                                Ok(_) => api
                                    .patch(
                                        name,
                                        &kube::api::PatchParams::default(),
                                        &Patch::Merge(&owners),
                                    )
                                    .await
                                    .map(|_| done.restored += 1),
                                Err(e) => Err(e),
                            }
                        }
                        Err(e) => {
                            done.failures.push(format!("{}: {e}", change.object));
                            continue;
                        }
                    }
                }
            };
            if let Err(e) = result {
                done.failures
                    .push(format!("{}: {}", change.object, status_message(&e)));
            }
        }
        done
    }
}

/// The hash prefix of state migrated from Go Tazuna (see `state::legacy`).
const GO_HASH_PREFIX: &str = "go:";

impl Run<'_> {
    pub(crate) fn client(&self) -> &Client {
        self.cluster.client()
    }

    /// Apply `units` in dependency order: a manifest starts as soon as the
    /// manifests it depends on (`dependsOn`, among `units`) have applied,
    /// at most `manifests_at_once` at a time, and its `Finished` event comes
    /// when it ends, not when its layer does. `layers` (indices into
    /// `units`) gives the order in which ready manifests start and the
    /// `Layer` events; `sequential` says the layers come from declaration
    /// order alone, so each layer waits for the one before it and a
    /// failure stops every later manifest.
    pub async fn apply(
        &self,
        units: &[Unit<'_>],
        layers: &[Vec<usize>],
        sequential: bool,
    ) -> Vec<ManifestOutcome> {
        use futures::StreamExt as _;

        let shared = Shared::new(units, self.settings);
        let order: Vec<usize> = layers.iter().flatten().copied().collect();
        let layer_of: HashMap<usize, usize> = layers
            .iter()
            .enumerate()
            .flat_map(|(layer, members)| members.iter().map(move |&i| (i, layer)))
            .collect();
        let position: HashMap<&str, usize> = units
            .iter()
            .enumerate()
            .map(|(i, u)| (u.manifest.name.as_str(), i))
            .collect();
        // What each manifest waits for; a dependency outside this run (not
        // selected) was applied before, or is not this run's to wait for.
        let waits: Vec<Vec<usize>> = if sequential {
            // Each layer waits for the whole layer before it (a layer of
            // declaration order is one manifest, or one `parallel` entry's
            // children).
            let mut waits = vec![Vec::new(); units.len()];
            for pair in layers.windows(2) {
                for &i in &pair[1] {
                    waits[i].clone_from(&pair[0]);
                }
            }
            waits
        } else {
            units
                .iter()
                .map(|u| {
                    u.manifest
                        .depends_on
                        .iter()
                        .filter_map(|d| position.get(d.as_str()).copied())
                        .collect()
                })
                .collect()
        };
        let bound = self.settings.manifests_at_once.max(1);
        let mut outcomes: Vec<Option<ManifestOutcome>> = vec![None; units.len()];
        let mut started = vec![false; units.len()];
        let mut announced = vec![false; layers.len()];
        let mut stop_all: Option<String> = None;
        let mut running = futures::stream::FuturesUnordered::new();
        loop {
            // Start what is ready, in layer order; a manifest whose
            // dependency failed is skipped at once, which may unblock others.
            let mut progressed = true;
            while progressed {
                progressed = false;
                for &i in &order {
                    if started[i] || !waits[i].iter().all(|&d| outcomes[d].is_some()) {
                        continue;
                    }
                    let unit = &units[i];
                    let blocked = stop_all.clone().or_else(|| {
                        waits[i]
                            .iter()
                            .find(|&&d| {
                                outcomes[d]
                                    .as_ref()
                                    .is_some_and(|o| o.outcome != Outcome::Applied)
                            })
                            .map(|&d| {
                                format!("its dependency `{}` did not apply", units[d].manifest.name)
                            })
                    });
                    if blocked.is_none() && running.len() >= bound {
                        continue;
                    }
                    started[i] = true;
                    progressed = true;
                    if let Some(reason) = blocked {
                        let outcome = ManifestOutcome {
                            manifest: unit.manifest.name.clone(),
                            outcome: Outcome::Skipped(reason),
                            counts: Counts::default(),
                            elapsed: Duration::ZERO,
                        };
                        self.observer.event(Event::Finished(outcome.clone()));
                        outcomes[i] = Some(outcome);
                        continue;
                    }
                    let layer = layer_of.get(&i).copied().unwrap_or_default();
                    if !announced[layer] {
                        announced[layer] = true;
                        self.observer.event(Event::Layer {
                            index: layer + 1,
                            of: layers.len(),
                            manifests: layers[layer]
                                .iter()
                                .map(|&m| units[m].manifest.name.clone())
                                .collect(),
                        });
                    }
                    let shared = &shared;
                    let span = tracing::info_span!(
                        target: tazuna_core::TRACE,
                        "manifest",
                        tazuna.manifest = unit.manifest.name.as_str(),
                        tazuna.type = unit.manifest.kind.as_str(),
                        tazuna.layer = layer + 1,
                        tazuna.objects = unit.rendered.as_ref().map_or(0, |r| r.objects.len()),
                        tazuna.objects.created = tracing::field::Empty,
                        tazuna.objects.configured = tracing::field::Empty,
                        tazuna.objects.unchanged = tracing::field::Empty,
                        tazuna.objects.pruned = tracing::field::Empty,
                        otel.status_code = tracing::field::Empty,
                        otel.status_description = tracing::field::Empty,
                    );
                    let traced = span.clone();
                    running.push(
                        async move {
                            let began = Instant::now();
                            let mut counts = Counts::default();
                            let outcome = match &unit.rendered {
                                Err(failure) => Outcome::Failed(failure.clone()),
                                Ok(rendered) => match self
                                    .apply_manifest(unit, rendered, shared, &mut counts)
                                    .await
                                {
                                    Ok(()) => Outcome::Applied,
                                    Err(error) => Outcome::Failed(Failure::of(&error)),
                                },
                            };
                            traced.record("tazuna.objects.created", counts.created);
                            traced.record("tazuna.objects.configured", counts.configured);
                            traced.record("tazuna.objects.unchanged", counts.unchanged);
                            traced.record("tazuna.objects.pruned", counts.pruned);
                            tazuna_core::trace_status(
                                &traced,
                                match &outcome {
                                    Outcome::Applied => Ok(()),
                                    Outcome::Failed(failure) => Err(failure.message.clone()),
                                    Outcome::Skipped(why) => Err(why.clone()),
                                },
                            );
                            let outcome = ManifestOutcome {
                                manifest: unit.manifest.name.clone(),
                                outcome,
                                counts,
                                elapsed: began.elapsed(),
                            };
                            (i, outcome)
                        }
                        .instrument(span),
                    );
                }
            }
            let Some((i, outcome)) = running.next().await else {
                break;
            };
            if outcome.outcome == Outcome::Applied {
                shared
                    .applied
                    .lock()
                    .expect("applied lock")
                    .insert(outcome.manifest.clone());
            } else if sequential && stop_all.is_none() {
                stop_all = Some(format!("`{}` before it did not apply", outcome.manifest));
            }
            self.observer.event(Event::Finished(outcome.clone()));
            outcomes[i] = Some(outcome);
        }
        outcomes.into_iter().flatten().collect()
    }

    async fn apply_manifest(
        &self,
        unit: &Unit<'_>,
        rendered: &Rendered,
        shared: &Shared,
        counts: &mut Counts,
    ) -> Result<(), ManifestError> {
        let manifest = unit.manifest;
        let name = manifest.name.as_str();
        self.observer.event(Event::Started {
            manifest: name.to_owned(),
            objects: rendered.objects.len(),
        });
        let previous = self.states.get(name);
        let mut entries: Vec<Entry> = Vec::new();
        let result = self
            .apply_objects(unit, rendered, shared, counts, &mut entries)
            .await;
        if self.settings.mode == Mode::DryRun {
            return result;
        }
        if let Err(error) = result {
            // What was sent is in the cluster now: record it with what the
            // state held before, so status, prune and destroy know of it.
            // Without a fields hash, each is sent and waited for again.
            if !entries.is_empty() {
                let sent: HashSet<ObjectRef> = entries.iter().map(Entry::object).collect();
                for entry in &mut entries {
                    entry.fields = None;
                }
                entries.extend(
                    previous
                        .into_iter()
                        .flat_map(|p| p.state.objects.iter())
                        .filter(|e| !sent.contains(&e.object()))
                        .cloned(),
                );
                let state = self.state_of(unit, rendered, entries, true);
                if let Err(save) = self.store.save(&state, previous).await {
                    tracing::warn!("cannot record what manifest `{name}` sent: {save}");
                }
            }
            return Err(error);
        }

        // Objects applied before but no longer rendered. Those another
        // manifest renders or records now moved there: they are dropped from
        // this record and left alone.
        let rendered_set: HashSet<ObjectRef> = entries.iter().map(Entry::object).collect();
        let gone: Vec<&Entry> = previous
            .map(|p| {
                p.state
                    .objects
                    .iter()
                    .filter(|e| !rendered_set.contains(&e.object()))
                    .filter(|e| self.ownership.kept_by(&e.object().key(), name).is_none())
                    .collect()
            })
            .unwrap_or_default();
        if self.ownership.may_prune() {
            let prune = if manifest.prune {
                self.settings.prune.max(Prune::On)
            } else {
                self.settings.prune
            };
            entries.extend(self.prune(name, gone, prune, counts).await?);
        } else {
            // What a manifest that failed to render would keep is unknown:
            // nothing is pruned, and the records keep what they had.
            entries.extend(gone.into_iter().cloned());
        }

        let state = self.state_of(unit, rendered, entries, false);
        let unchanged =
            previous.is_some_and(|p| same_state(&p.state, &state) && p.legacy.is_none());
        if !unchanged {
            self.store.save(&state, previous).await?;
        }
        Ok(())
    }

    /// The state record of `unit` holding `entries`.
    fn state_of(
        &self,
        unit: &Unit<'_>,
        rendered: &Rendered,
        objects: Vec<Entry>,
        incomplete: bool,
    ) -> ManifestState {
        ManifestState {
            manifest: unit.manifest.name.clone(),
            depends_on: unit.manifest.depends_on.clone(),
            position: unit.position,
            plugin: PluginRecord {
                name: rendered.plugin.clone(),
                version: rendered.plugin_version.clone(),
                digest: rendered.plugin_digest.clone(),
            },
            tazuna_version: self.settings.tazuna_version.clone(),
            git_commit: self.settings.git_commit.clone(),
            applied_at: crate::state::now_rfc3339(),
            cluster: self.cluster.target().uid.clone(),
            stack: Some(self.stack.to_owned()),
            origin: self.settings.origin.clone(),
            incomplete,
            objects,
        }
    }

    /// Send a manifest's objects in their three steps, wait for them and
    /// run its tests. Every object handled is added to `entries`, also when
    /// a later one fails.
    async fn apply_objects(
        &self,
        unit: &Unit<'_>,
        rendered: &Rendered,
        shared: &Shared,
        counts: &mut Counts,
        entries: &mut Vec<Entry>,
    ) -> Result<(), ManifestError> {
        let manifest = unit.manifest;
        let name = manifest.name.as_str();
        let prior: HashMap<ObjectRef, &Entry> = self
            .states
            .get(name)
            .map(|p| p.state.objects.iter().map(|e| (e.object(), e)).collect())
            .unwrap_or_default();

        // Helm hooks first go apart from the rest: they run before it and
        // after it is ready, and only when the apply changes something.
        let values: Vec<&Value> = rendered.objects.iter().map(|o| &o.value).collect();
        let release = if prior.is_empty() {
            hooks::Release::Install
        } else {
            hooks::Release::Upgrade
        };
        let split = hooks::split(&values, release);
        let run_hooks = split.has_hooks() && {
            let sent: Vec<&Value> = split
                .main
                .iter()
                .copied()
                .chain(split.pre.iter().chain(&split.post).map(|h| h.index))
                .map(|i| values[i])
                .collect();
            release == hooks::Release::Install || self.changes(&sent, &values, manifest, &prior)
        };
        for (index, why) in &split.left_out {
            self.note_hook(name, values[*index], why);
        }
        for hook in &split.tests {
            self.note_hook(
                name,
                values[hook.index],
                "a chart test; not applied, `tazuna test` runs it",
            );
        }
        // Hooks that do not run now keep what their last run recorded.
        let resting = split
            .left_out
            .iter()
            .map(|(index, _)| (*index, false))
            .chain(split.tests.iter().map(|h| (h.index, false)))
            .chain(
                split
                    .pre
                    .iter()
                    .chain(&split.post)
                    .filter(|_| !run_hooks)
                    .map(|h| (h.index, true)),
            );
        let mut rested = HashSet::new();
        for (index, runs_here) in resting {
            if !rested.insert(index) {
                continue;
            }
            let Some(object) = self.identity(values[index], manifest) else {
                continue;
            };
            let Some(entry) = prior.get(&object) else {
                continue;
            };
            entries.push((*entry).clone());
            if runs_here {
                counts.add(Action::Unchanged);
                self.observer.event(Event::Object {
                    manifest: name.to_owned(),
                    object,
                    action: Action::Unchanged,
                    note: None,
                });
            }
        }
        let hook_timeout = manifest.wait.timeout();
        if self.settings.mode == Mode::Apply
            && manifest.create_namespace
            && let Some(namespace) = &manifest.namespace
            && !crate::namespaces::renders(rendered, namespace)
        {
            let created = crate::namespaces::ensure(self.cluster, namespace, &self.manager)
                .await
                .map_err(|error| ManifestError::Rejected {
                    object: ObjectRef {
                        group: String::new(),
                        version: "v1".to_owned(),
                        kind: "Namespace".to_owned(),
                        namespace: None,
                        name: namespace.clone(),
                    },
                    message: format!(
                        "cannot create it (`createNamespace`): {}",
                        status_message(&error)
                    ),
                })?;
            if created {
                tracing::info!(
                    manifest = name,
                    "created namespace `{namespace}` (createNamespace)"
                );
            }
        }

        // A hook with an apply wave runs with its wave: pre-install hooks
        // just before the wave's objects, post-install hooks once they are
        // ready. The helmfile source puts each release in a wave, so a
        // release's hooks go with it, as `helmfile apply` installs one
        // release after another. A hook without one runs as helm runs it:
        // before the first wave, or after the last.
        let (pre_hooks, pre_by_wave) = hooks_by_wave(&split.pre, &values)?;
        let (post_hooks, post_by_wave) = hooks_by_wave(&split.post, &values)?;
        if run_hooks {
            self.run_hooks(
                manifest,
                &pre_hooks,
                &values,
                shared,
                hook_timeout,
                counts,
                entries,
            )
            .await?;
        }

        // Three steps, each keeping the rendered order; objects are copied
        // once, when prepared:
        // 1. Namespaces, which namespaced objects need;
        // 2. this manifest's CRDs, together with every object whose kind they
        //    do not define (built-in kinds need no CRD, and kinds from other
        //    manifests' CRDs are there already);
        // 3. custom resources of this manifest's CRDs, once those are
        //    established, so that no object meets an old schema.
        let defined_here: HashSet<(&str, &str)> = rendered
            .objects
            .iter()
            .filter_map(|o| defined_kind(&o.value))
            .collect();
        const PHASES: [&str; 3] = ["namespaces", "definitions and objects", "custom resources"];
        // Waves (`tazuna.dev/apply-wave`, 0 when absent) go one after another,
        // each applied in its three steps and ready before the next starts;
        // the helmfile source numbers releases by their `needs:`.
        let mut waves: BTreeMap<i64, [Vec<&Value>; 3]> = BTreeMap::new();
        for index in split.main.iter().copied() {
            let rendered_object = &rendered.objects[index];
            let Some(object) = ObjectRef::of(&rendered_object.value) else {
                return Err(ManifestError::Anonymous { index: index + 1 });
            };
            let wave = apply_wave(&rendered_object.value).map_err(|value| ManifestError::Wave {
                object: object.clone(),
                value,
            })?;
            let step = match Phase::of(&object) {
                Phase::Namespaces => 0,
                Phase::Objects
                    if defined_here.contains(&(object.group.as_str(), object.kind.as_str())) =>
                {
                    2
                }
                Phase::Definitions | Phase::Objects => 1,
            };
            waves.entry(wave).or_default()[step].push(&rendered_object.value);
        }
        for wave in pre_by_wave.keys().chain(post_by_wave.keys()) {
            waves.entry(*wave).or_default();
        }

        let load_balancers = match manifest.wait {
            Wait::On { load_balancers, .. } => load_balancers,
            Wait::Off => LoadBalancers::Ignored,
        };
        for (wave, steps) in waves {
            if run_hooks && let Some(hooks) = pre_by_wave.get(&wave) {
                self.run_hooks(
                    manifest,
                    hooks,
                    &values,
                    shared,
                    hook_timeout,
                    counts,
                    entries,
                )
                .await?;
            }
            let mut watched: Vec<Watched> = Vec::new();
            for (objects, phase) in steps.into_iter().zip(PHASES) {
                let mut prepared = Vec::with_capacity(objects.len());
                for value in objects {
                    let mut item = self.prepare(value.clone(), manifest, shared).await?;
                    let before = prior.get(&item.object);
                    item.restore = before.is_some_and(|e| e.hash == item.hash);
                    item.takeover = before.is_some_and(|e| e.hash.starts_with(GO_HASH_PREFIX));
                    prepared.push(item);
                }
                let (handled, failure) = self
                    .apply_phase(name, phase, prepared, &prior, shared, counts)
                    .await;
                for (entry, sent) in handled {
                    // Only what was sent and can be not ready is waited for.
                    // Unchanged objects were ready when their state was written and
                    // were not touched since; `tazuna status` shows them now.
                    if let Some(applied) = sent
                        && tazuna_core::readiness::has_rule(&applied, load_balancers)
                    {
                        let object = entry.object();
                        let resolved = self
                            .cluster
                            .resolve(&object)
                            .expect("resolved before sending");
                        watched.push(Watched {
                            object,
                            resolved,
                            last: Some(applied),
                        });
                    }
                    entries.push(entry);
                }
                if let Some(error) = failure {
                    return Err(error);
                }
            }
            if self.settings.mode == Mode::Apply {
                self.until_ready(name, manifest.wait, watched).await?;
                if run_hooks && let Some(hooks) = post_by_wave.get(&wave) {
                    self.run_hooks(
                        manifest,
                        hooks,
                        &values,
                        shared,
                        hook_timeout,
                        counts,
                        entries,
                    )
                    .await?;
                }
            }
        }
        if self.settings.mode == Mode::DryRun {
            return Ok(());
        }
        if run_hooks {
            self.run_hooks(
                manifest,
                &post_hooks,
                &values,
                shared,
                hook_timeout,
                counts,
                entries,
            )
            .await?;
        }
        for test in &manifest.tests {
            crate::checks::run(self.client(), self.cluster, test)
                .await
                .map_err(ManifestError::Test)?;
            self.observer.event(Event::TestPassed {
                manifest: Some(name.to_owned()),
                test: crate::checks::describe(test),
            });
        }
        Ok(())
    }

    /// Wait, as the manifest's `wait` says, until what one wave sent is ready.
    async fn until_ready(
        &self,
        name: &str,
        wait: Wait,
        watched: Vec<Watched>,
    ) -> Result<(), ManifestError> {
        let Wait::On {
            timeout,
            load_balancers,
        } = wait
        else {
            return Ok(());
        };
        self.observer.event(Event::Waiting {
            manifest: name.to_owned(),
            objects: watched.len(),
        });
        let on_ready = |object: &ObjectRef| {
            self.observer.event(Event::Ready {
                manifest: name.to_owned(),
                object: object.clone(),
            });
        };
        wait::until_ready(self.client(), watched, timeout, load_balancers, &on_ready).await?;
        Ok(())
    }

    /// Tell the user about a hook this apply leaves out.
    fn note_hook(&self, manifest: &str, value: &Value, why: &str) {
        if let Some(object) = ObjectRef::of(value) {
            self.observer.event(Event::Note {
                manifest: manifest.to_owned(),
                object,
                note: format!("helm hook left out: {why}"),
            });
        }
    }

    /// The kind of `object` on the cluster. A kind whose CRD this manifest, or
    /// one applied before it, has just created is waited for: the CRD until
    /// it is `Established`, then discovery is refreshed. Objects that need no
    /// new kind never wait for CRDs. In a dry run, such a kind is `None`: the
    /// run would create it, so its objects are creates that cannot be sent.
    async fn resolve_kind(
        &self,
        object: &ObjectRef,
        manifest: &Manifest,
        shared: &Shared,
    ) -> Result<Option<Resolved>, ManifestError> {
        if let Some(resolved) = self.cluster.resolve(object) {
            return Ok(Some(resolved));
        }
        let provider = shared
            .providers
            .get(&(object.group.clone(), object.kind.clone()));
        if let Some(provider) = provider {
            let applied = provider.manifest == manifest.name
                || shared
                    .applied
                    .lock()
                    .expect("applied lock")
                    .contains(&provider.manifest);
            if applied && self.settings.mode == Mode::DryRun {
                return Ok(None);
            }
            if applied {
                self.await_established(&provider.crd).await?;
                if let Some(resolved) = self.await_discovered(object).await? {
                    return Ok(Some(resolved));
                }
            }
        }
        let hint = match provider {
            Some(provider) if provider.manifest == manifest.name => None,
            Some(provider) => Some(format!(
                "CRD for `{}` is applied by manifest `{}`; add `{}` to `dependsOn` of `{}`",
                object.kind, provider.manifest, provider.manifest, manifest.name
            )),
            None => tazuna_core::removed::hint(&object.api_version(), &object.kind).or_else(|| {
                Some(format!(
                    "no manifest in this file provides a CRD for `{}.{}`; install it first, or add the manifest that does to `dependsOn`",
                    object.kind, object.group
                ))
            }),
        };
        Err(ManifestError::UnknownKind {
            kind: object.kind.clone(),
            api_version: object.api_version(),
            object: object.clone(),
            hint,
        })
    }

    /// Refresh discovery until it serves the kind of `object`. The API
    /// server publishes a CRD's kind in discovery a moment after the CRD is
    /// `Established`, not with it, so one refresh can miss it.
    async fn await_discovered(
        &self,
        object: &ObjectRef,
    ) -> Result<Option<Resolved>, ManifestError> {
        let deadline = tokio::time::Instant::now() + DISCOVERY_TIMEOUT;
        let mut pause = Duration::from_millis(50);
        loop {
            self.cluster
                .refresh()
                .await
                .map_err(ManifestError::Discovery)?;
            if let Some(resolved) = self.cluster.resolve(object) {
                return Ok(Some(resolved));
            }
            if tokio::time::Instant::now() + pause > deadline {
                return Ok(None);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }

    /// Wait until CRD `name` is `Established`.
    async fn await_established(&self, name: &str) -> Result<(), ManifestError> {
        let crd = ObjectRef {
            group: "apiextensions.k8s.io".into(),
            version: "v1".into(),
            kind: "CustomResourceDefinition".into(),
            namespace: None,
            name: name.to_owned(),
        };
        let resolved = self
            .cluster
            .resolve(&crd)
            .expect("every API server serves CRDs");
        let watched = vec![Watched {
            object: crd,
            resolved,
            last: None,
        }];
        wait::until_ready(
            self.client(),
            watched,
            CRD_TIMEOUT,
            LoadBalancers::Ignored,
            &|_| {},
        )
        .await?;
        Ok(())
    }

    /// Namespace defaulting and resolution against discovery.
    pub(crate) async fn prepare(
        &self,
        mut value: Value,
        manifest: &Manifest,
        shared: &Shared,
    ) -> Result<Prepared, ManifestError> {
        let object = ObjectRef::of(&value).expect("identity checked before");
        let resolved = self.resolve_kind(&object, manifest, shared).await?;
        if let Some(resolved) = &resolved {
            crate::objects::prepare_object(&mut value, resolved, manifest);
        }
        let object = ObjectRef::of(&value).expect("identity checked before");
        let hash = inventory::content_hash(&value, self.hash_key);
        Ok(Prepared {
            object,
            value,
            hash,
            resolved,
            restore: false,
            takeover: false,
            rename: None,
            acts_as: None,
        })
    }

    /// Send what changed in one phase; returns every object's new state entry,
    /// with the apply response for those that were sent, in rendered order,
    /// and the first error. Objects handled before an error are returned too.
    pub(crate) async fn apply_phase(
        &self,
        manifest: &str,
        phase: &'static str,
        prepared: Vec<Prepared>,
        prior: &HashMap<ObjectRef, &Entry>,
        shared: &Shared,
        counts: &mut Counts,
    ) -> (Vec<Handled>, Option<ManifestError>) {
        if prepared.is_empty() {
            return (Vec::new(), None);
        }
        let span = tracing::info_span!(
            target: tazuna_core::TRACE,
            "apply phase",
            tazuna.phase = phase,
            tazuna.objects = prepared.len(),
            otel.status_code = tracing::field::Empty,
            otel.status_description = tracing::field::Empty,
        );
        let (handled, error) = self
            .apply_phase_untraced(manifest, prepared, prior, shared, counts)
            .instrument(span.clone())
            .await;
        tazuna_core::trace_status(&span, error.as_ref().map_or(Ok(()), |e| Err(e.to_string())));
        (handled, error)
    }

    async fn apply_phase_untraced(
        &self,
        manifest: &str,
        prepared: Vec<Prepared>,
        prior: &HashMap<ObjectRef, &Entry>,
        shared: &Shared,
        counts: &mut Counts,
    ) -> (Vec<Handled>, Option<ManifestError>) {
        // One list per kind and namespace (metadata only) tells whether an
        // object exists (created or configured) and whether the fields
        // Tazuna owns are unchanged live (skipped).
        let mut index = LiveIndex::metadata(self.cluster);
        // Kinds in namespaces a dry run creates are not listed (see below).
        let listed = prepared.iter().filter_map(|item| {
            let created = self.settings.mode == Mode::DryRun
                && item
                    .object
                    .namespace
                    .as_ref()
                    .is_some_and(|namespace| shared.namespaces.contains(namespace));
            Some((&item.object, item.resolved.as_ref().filter(|_| !created)?))
        });
        index.prefetch(listed, &shared.requests).await;
        let mut results: Vec<Option<(ObjectRef, Option<Handled>, Action)>> =
            vec![None; prepared.len()];
        // What the API server warned about, per object sent.
        let mut notes: Vec<Option<String>> = vec![None; prepared.len()];
        let mut to_send = Vec::new();
        let mut first_error: Option<(usize, ManifestError)> = None;
        for (position, mut item) in prepared.into_iter().enumerate() {
            let Some(resolved) = item.resolved.clone() else {
                results[position] = Some((item.object, None, Action::Created));
                notes[position] = Some("its kind is created by this run; not sent".into());
                continue;
            };
            if self.settings.mode == Mode::DryRun
                && let Some(namespace) = &item.object.namespace
                && shared.namespaces.contains(namespace)
                && !self.live_namespaces(shared).await.contains(namespace)
            {
                notes[position] = Some(format!(
                    "namespace `{namespace}` is created by this run; not sent"
                ));
                results[position] = Some((item.object, None, Action::Created));
                continue;
            }
            let current = match index.get(&item.object, &resolved).await {
                Ok(current) => {
                    if let Some(live) = current {
                        item.rename = self.manager.rename_legacy(live);
                        let acts_as = self.manager.as_for(Some(live));
                        item.acts_as = (acts_as != self.manager.name()).then(|| acts_as.to_owned());
                    }
                    current.map(|live| self.manager.owned_fields_hash(live))
                }
                Err(e) => {
                    first_error.get_or_insert((
                        position,
                        ManifestError::Rejected {
                            object: item.object.clone(),
                            message: format!("cannot list its kind: {}", status_message(&e)),
                        },
                    ));
                    break;
                }
            };
            let before = prior.get(&item.object);
            if let Some(entry) = before
                && !self.settings.resend
                && entry.hash == item.hash
                && entry.fields.is_some()
                && current.as_ref().is_some_and(|live| *live == entry.fields)
            {
                let entry = (*entry).clone().removed_when_done(&item.value);
                results[position] = Some((item.object, Some((entry, None)), Action::Unchanged));
                continue;
            }
            // Applied as it is now, finished and removed by its TTL: done.
            if let Some(entry) = before
                && current.is_none()
                && entry.done_and_removed(&item.hash, &item.value)
            {
                let entry = (*entry).clone().removed_when_done(&item.value);
                results[position] = Some((item.object, Some((entry, None)), Action::Unchanged));
                continue;
            }
            let action = if current.is_some() {
                Action::Configured
            } else {
                Action::Created
            };
            to_send.push((position, item, action));
        }

        if self.settings.atomic && self.settings.mode == Mode::Apply && first_error.is_none() {
            for (position, item, action) in &to_send {
                let resolved = item
                    .resolved
                    .as_ref()
                    .expect("only resolved objects are sent");
                let before = if *action == Action::Created {
                    None
                } else {
                    let api = api_for(self.client(), resolved, item.object.namespace.as_deref());
                    match api.get_opt(&item.object.name).await {
                        Ok(found) => found.and_then(|o| serde_json::to_value(o).ok()),
                        Err(e) => {
                            first_error.get_or_insert((
                                *position,
                                ManifestError::Rejected {
                                    object: item.object.clone(),
                                    message: format!(
                                        "cannot read it before changing it (`--atomic` keeps it to undo the run): {}",
                                        status_message(&e)
                                    ),
                                },
                            ));
                            break;
                        }
                    }
                };
                self.journal.record(&item.object, resolved, before);
            }
            if first_error.is_some() {
                to_send.clear();
            }
        }
        let sends = futures::stream::iter(to_send.into_iter().map(
            |(position, item, action)| async move {
                let result = {
                    let _turn = shared.requests.acquire().await;
                    self.send(&item).await
                };
                (position, item, action, result)
            },
        ))
        .buffer_unordered(self.settings.requests_at_once.max(1))
        .collect::<Vec<_>>()
        .await;
        for (position, item, action, result) in sends {
            match result {
                Ok(Sent {
                    applied,
                    notes: said,
                }) => {
                    if !said.is_empty() {
                        notes[position] = Some(said.join("; "));
                    }
                    let fields = self.manager.owned_fields_hash(&applied);
                    let mut entry =
                        Entry::new(&item.object, item.hash, fields).removed_when_done(&item.value);
                    // Who had written it before the stack first did decides
                    // whether prune and destroy may delete it.
                    entry.adopted_from = match prior.get(&item.object) {
                        Some(before) => before.adopted_from.clone(),
                        None => prune::writers(&applied, self.manager.name()),
                    };
                    results[position] = Some((item.object, Some((entry, Some(applied))), action));
                }
                Err(error) => {
                    if first_error.as_ref().is_none_or(|(i, _)| position < *i) {
                        first_error = Some((position, error));
                    }
                }
            }
        }
        let mut out = Vec::with_capacity(results.len());
        // In rendered order; what was sent before or beside a failure is
        // reported and recorded too.
        for ((object, handled, action), note) in results
            .into_iter()
            .zip(notes)
            .filter_map(|(r, n)| Some((r?, n)))
        {
            counts.add(action);
            self.observer.event(Event::Object {
                manifest: manifest.to_owned(),
                object,
                action,
                note,
            });
            if let Some(handled) = handled {
                out.push(handled);
            }
        }
        (out, first_error.map(|(_, e)| e))
    }

    /// Server-side apply of one object (with `--recreate` handling), with
    /// what the API server warned about.
    async fn send(&self, item: &Prepared) -> Result<Sent, ManifestError> {
        let resolved = item
            .resolved
            .clone()
            .expect("only resolved objects are sent");
        let api = api_for(self.client(), &resolved, item.object.namespace.as_deref());
        let mut params = self.manager.apply_params();
        params.force = self.settings.conflicts == Conflicts::Force || item.takeover;
        params.dry_run = self.settings.mode == Mode::DryRun;
        let mut notes = Vec::new();
        match (&item.rename, &item.acts_as) {
            // A dry run renames nothing: it acts as the legacy manager, which
            // meets the conflicts that the rename and the apply would.
            (_, Some(legacy)) if params.dry_run => params.field_manager = Some(legacy.clone()),
            (Some(rename), _) if !params.dry_run => self.rename_legacy(item, &api, rename).await?,
            _ => {}
        }
        if item.takeover && self.settings.conflicts != Conflicts::Force {
            notes.push("took over the fields Go Tazuna applied".to_owned());
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            let (result, warnings) = crate::warnings::collect(api.patch(
                &item.object.name,
                &params,
                &Patch::Apply(&item.value),
            ))
            .await;
            match result {
                Ok(applied) => {
                    let mut value = serde_json::to_value(&applied).unwrap_or(Value::Null);
                    crate::objects::fill_type(&mut value, &item.object);
                    if !warnings.is_empty() {
                        notes.push(format!("warning: {}", warnings.join("; ")));
                    }
                    return Ok(Sent {
                        applied: value,
                        notes,
                    });
                }
                Err(kube::Error::Api(status)) if status.code == 409 && !params.force => {
                    // Tazuna's intent is unchanged and the fields were changed
                    // by hand (an update, not another applier): that is drift,
                    // and apply puts the declared values back.
                    if item.restore {
                        let live = api.get_opt(&item.object.name).await.ok().flatten();
                        let live = live.and_then(|l| serde_json::to_value(l).ok());
                        if let Some(editors) = hand_edits(&status.message, live.as_ref()) {
                            notes.push(format!(
                                "took back fields changed live by {}",
                                editors.join(", ")
                            ));
                            params.force = true;
                            continue;
                        }
                    }
                    return Err(ManifestError::Conflict {
                        object: item.object.clone(),
                        message: status.message.clone(),
                    });
                }
                Err(kube::Error::Api(status)) if is_unknown_field(&status.message) => {
                    return Err(ManifestError::UnknownField {
                        object: item.object.clone(),
                        message: status.message.clone(),
                    });
                }
                Err(kube::Error::Api(status))
                    if status.code == 422 && is_immutable(&status.message) =>
                {
                    if self.settings.recreate == Recreate::Never || attempt > 1 || params.dry_run {
                        return Err(ManifestError::Immutable {
                            object: item.object.clone(),
                            message: status.message.clone(),
                        });
                    }
                    let delete = DeleteParams {
                        propagation_policy: Some(PropagationPolicy::Foreground),
                        ..DeleteParams::default()
                    };
                    api.delete(&item.object.name, &delete).await.map_err(|e| {
                        ManifestError::Rejected {
                            object: item.object.clone(),
                            message: format!(
                                "cannot delete it to re-create it: {}",
                                status_message(&e)
                            ),
                        }
                    })?;
                    wait::until_gone(
                        self.client(),
                        vec![(item.object.clone(), resolved.clone())],
                        Duration::from_secs(120),
                    )
                    .await?;
                }
                Err(error) => {
                    return Err(ManifestError::Rejected {
                        object: item.object.clone(),
                        message: status_message(&error),
                    });
                }
            }
        }
    }

    /// Hand the legacy field manager's entry of `item` to the stack's
    /// manager (`rename`, from [`FieldManager::rename_legacy`]).
    async fn rename_legacy(
        &self,
        item: &Prepared,
        api: &Api<DynamicObject>,
        rename: &Value,
    ) -> Result<(), ManifestError> {
        let refused = |message: String| ManifestError::Rejected {
            object: item.object.clone(),
            message: format!(
                "cannot hand the fields of field manager `{LEGACY_FIELD_MANAGER}` to `{}`: {message}; run `apply` again",
                self.manager.name()
            ),
        };
        let patch: json_patch::Patch =
            serde_json::from_value(rename.clone()).map_err(|e| refused(e.to_string()))?;
        api.patch(
            &item.object.name,
            &PatchParams::default(),
            &Patch::Json::<()>(patch),
        )
        .await
        .map_err(|e| refused(status_message(&e)))?;
        Ok(())
    }

    /// Namespaces that exist live, read once per run (dry runs only).
    async fn live_namespaces<'s>(&self, shared: &'s Shared) -> &'s HashSet<String> {
        shared
            .live_namespaces
            .get_or_init(|| async {
                let api: Api<k8s_openapi::api::core::v1::Namespace> =
                    Api::all(self.client().clone());
                api.list_metadata(&kube::api::ListParams::default())
                    .await
                    .map(|list| {
                        list.items
                            .into_iter()
                            .filter_map(|n| n.metadata.name)
                            .collect()
                    })
                    .unwrap_or_default()
            })
            .await
    }

    /// Delete (or keep) objects that are no longer rendered; returns the
    /// entries that stay in state.
    async fn prune(
        &self,
        manifest: &str,
        gone: Vec<&Entry>,
        prune: Prune,
        counts: &mut Counts,
    ) -> Result<Vec<Entry>, ManifestError> {
        let tracked: HashSet<ObjectRef> = self
            .remove(manifest, gone.clone(), prune, Action::Pruned, counts)
            .await?
            .into_iter()
            .collect();
        Ok(gone
            .into_iter()
            .filter(|e| tracked.contains(&e.object()))
            .cloned()
            .collect())
    }

    /// Delete `objects` of `manifest` where they are still its own and
    /// `prune` allows it, report each as `deleted` (pruned, or destroyed),
    /// and wait for those that finalizers hold. Returns the objects that were
    /// kept and stay in state.
    pub(crate) async fn remove(
        &self,
        manifest: &str,
        entries: Vec<&Entry>,
        prune: Prune,
        deleted: Action,
        counts: &mut Counts,
    ) -> Result<Vec<ObjectRef>, ManifestError> {
        let mut tracked = Vec::new();
        let mut pending = Vec::new();
        for entry in entries {
            let object = entry.object();
            let removal = self.delete_owned(manifest, entry, prune).await?;
            let (action, note) = match removal {
                // Already gone, or never Tazuna's: forget it.
                Removal::Absent => continue,
                Removal::Deleted(holding) => {
                    if let Some(resolved) = holding {
                        pending.push((object.clone(), resolved));
                    }
                    (deleted, None)
                }
                Removal::Kept {
                    note,
                    tracked: stays,
                } => {
                    if stays {
                        tracked.push(object.clone());
                    }
                    (Action::Kept, Some(note))
                }
            };
            counts.add(action);
            self.observer.event(Event::Object {
                manifest: manifest.to_owned(),
                object,
                action,
                note,
            });
        }
        if !pending.is_empty() {
            wait::until_gone(self.client(), pending, self.settings.deletion_timeout).await?;
        }
        Ok(tracked)
    }

    /// Delete `object` if the prune verdict says so at `prune`.
    async fn delete_owned(
        &self,
        manifest: &str,
        entry: &Entry,
        prune: Prune,
    ) -> Result<Removal, ManifestError> {
        let object = &entry.object();
        let Some(resolved) = self.cluster.resolve(object) else {
            return Ok(Removal::Absent);
        };
        let api = api_for(self.client(), &resolved, object.namespace.as_deref());
        let live = api
            .get_opt(&object.name)
            .await
            .map_err(|e| ManifestError::Rejected {
                object: object.clone(),
                message: status_message(&e),
            })?;
        // What cannot be read as JSON is not known to be Tazuna's: kept.
        let value = live
            .as_ref()
            .map(|live| serde_json::to_value(live).unwrap_or(Value::Null));
        let verdict = prune::verdict(object, manifest, value.as_ref(), &entry.adopted_from);
        if let Some(note) = verdict.kept_because(object, prune, false) {
            return Ok(Removal::Kept {
                note,
                tracked: verdict.tracked(),
            });
        }
        let Some(live) = live.filter(|_| verdict != prune::Verdict::NotOurs) else {
            return Ok(Removal::Absent);
        };
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            preconditions: Some(kube::api::Preconditions {
                uid: live.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&object.name, &params).await {
            // A Status means it is gone already; the object back means
            // finalizers still hold it.
            Ok(response) if response.is_left() => Ok(Removal::Deleted(Some(resolved))),
            Ok(_) => Ok(Removal::Deleted(None)),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(Removal::Absent),
            Err(error) => Err(ManifestError::Rejected {
                object: object.clone(),
                message: format!("cannot prune it: {}", status_message(&error)),
            }),
        }
    }

    /// Run `spec.tests`.
    pub async fn spec_tests(&self, tests: &[Test]) -> Option<ManifestOutcome> {
        if tests.is_empty() {
            return None;
        }
        let started = Instant::now();
        for test in tests {
            if let Err(error) = crate::checks::run(self.client(), self.cluster, test).await {
                return Some(ManifestOutcome {
                    manifest: "spec.tests".into(),
                    outcome: Outcome::Failed(Failure::new(error)),
                    counts: Counts::default(),
                    elapsed: started.elapsed(),
                });
            }
            self.observer.event(Event::TestPassed {
                manifest: None,
                test: crate::checks::describe(test),
            });
        }
        Some(ManifestOutcome {
            manifest: "spec.tests".into(),
            outcome: Outcome::Applied,
            counts: Counts::default(),
            elapsed: started.elapsed(),
        })
    }
}

/// What the API server answered to one apply.
struct Sent {
    /// The object as applied.
    applied: Value,
    /// Warnings, and fields taken back from hand edits.
    notes: Vec<String>,
}

/// What became of an object Tazuna was asked to delete.
pub(crate) enum Removal {
    /// Deleted; with its kind while finalizers still hold it.
    Deleted(Option<Resolved>),
    /// Nothing of Tazuna's to delete: already gone, its kind no longer
    /// served, or no longer Tazuna's.
    Absent,
    /// Kept on purpose; `tracked` says whether it stays in state.
    Kept {
        /// Why, for people.
        note: String,
        /// Whether Tazuna keeps tracking it.
        tracked: bool,
    },
}

/// The CRD that defines a kind, and the manifest that applies it.
#[derive(Debug, Clone)]
struct Provider {
    manifest: String,
    crd: String,
}

/// Which manifest's CRDs provide each (group, kind).
fn crd_providers(units: &[Unit<'_>]) -> HashMap<(String, String), Provider> {
    let mut providers = HashMap::new();
    for unit in units {
        let Ok(rendered) = &unit.rendered else {
            continue;
        };
        for object in &rendered.objects {
            let Some(reference) = ObjectRef::of(&object.value) else {
                continue;
            };
            if let Some((group, kind)) = defined_kind(&object.value) {
                providers
                    .entry((group.to_owned(), kind.to_owned()))
                    .or_insert_with(|| Provider {
                        manifest: unit.manifest.name.clone(),
                        crd: reference.name.clone(),
                    });
            }
        }
    }
    providers
}

/// The (group, kind) a CRD defines; `None` for anything else.
fn defined_kind(object: &Value) -> Option<(&str, &str)> {
    let reference = ObjectRef::of(object)?;
    if Phase::of(&reference) != Phase::Definitions {
        return None;
    }
    let group = object.pointer("/spec/group")?.as_str()?;
    let kind = object.pointer("/spec/names/kind")?.as_str()?;
    Some((group, kind))
}

/// Whether two states record the same thing (the time aside).
fn same_state(a: &ManifestState, b: &ManifestState) -> bool {
    let mut a = a.clone();
    a.applied_at.clone_from(&b.applied_at);
    let sort = |s: &mut ManifestState| s.objects.sort_by_key(Entry::object);
    let mut b = b.clone();
    sort(&mut a);
    sort(&mut b);
    a == b
}

/// The annotation that puts an object in an apply wave of its manifest: waves
/// are applied in ascending order, each ready before the next starts.
pub const APPLY_WAVE: &str = "tazuna.dev/apply-wave";

/// Hooks by the apply wave they run with.
type HooksByWave = BTreeMap<i64, Vec<Hook>>;

/// `stage`'s hooks without an apply wave, and those with one by their wave,
/// each list in the stage's order.
fn hooks_by_wave(
    stage: &[Hook],
    values: &[&Value],
) -> Result<(Vec<Hook>, HooksByWave), ManifestError> {
    let mut unwaved = Vec::new();
    let mut by_wave: BTreeMap<i64, Vec<Hook>> = BTreeMap::new();
    for hook in stage {
        let value = values[hook.index];
        if value["metadata"]["annotations"].get(APPLY_WAVE).is_none() {
            unwaved.push(hook.clone());
            continue;
        }
        let wave = apply_wave(value).map_err(|value| ManifestError::Wave {
            object: ObjectRef::of(values[hook.index]).expect("identity checked before"),
            value,
        })?;
        by_wave.entry(wave).or_default().push(hook.clone());
    }
    Ok((unwaved, by_wave))
}

/// The apply wave of `object`: 0 without the annotation, else its whole
/// number; the annotation's text when it is not one.
fn apply_wave(object: &Value) -> Result<i64, String> {
    match object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(APPLY_WAVE))
    {
        None => Ok(0),
        Some(Value::String(text)) => text.trim().parse().map_err(|_| clip(text)),
        Some(other) => Err(clip(&other.to_string())),
    }
}

/// At most 40 characters of an annotation's value, for an error message.
fn clip(text: &str) -> String {
    match text.char_indices().nth(40) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod wave_tests {
    use super::*;

    #[test]
    fn waves_are_whole_numbers_and_zero_without_the_annotation() {
        let with = |annotations: Value| {
            apply_wave(&serde_json::json!({"metadata": {"name": "a", "annotations": annotations}}))
        };
        assert_eq!(
            apply_wave(&serde_json::json!({"metadata": {"name": "a"}})),
            Ok(0)
        );
        assert_eq!(with(serde_json::json!({})), Ok(0));
        assert_eq!(with(serde_json::json!({APPLY_WAVE: "2"})), Ok(2));
        assert_eq!(with(serde_json::json!({APPLY_WAVE: " -1 "})), Ok(-1));
        assert_eq!(
            with(serde_json::json!({APPLY_WAVE: "two"})),
            Err("two".to_owned())
        );
        assert_eq!(
            with(serde_json::json!({APPLY_WAVE: 2})),
            Err("2".to_owned())
        );
        let long = "9".repeat(100);
        assert_eq!(
            with(serde_json::json!({APPLY_WAVE: long})),
            Err(format!("{}...", "9".repeat(40)))
        );
    }
}
