//! Applying rendered manifests to a cluster: layer by layer, manifests of a
//! layer in parallel, and inside a manifest Namespaces, then CRDs (waited
//! for until `Established`, then discovery is refreshed), then the rest.
//!
//! Every object goes in by server-side apply as the stack's field manager
//! (`tazuna/<stack>`). An object whose content hash equals the one in
//! state, and whose fields the stack owns are unchanged live, is not sent
//! again: one list call per kind and namespace answers that for all of
//! them. After a manifest applied, its objects are waited for (see
//! [`crate::wait`]), its tests run, and only then is its state written. A
//! failing manifest stops its dependents; the other manifests of its layer
//! still finish.
//!
//! This module is the walk over manifests and their phases, over a floor
//! the rooms share ([`Run`], `Shared`, `Prepared`). The rooms: `settings`
//! (how to apply), `outcome` (what a run reports), `send` (one phase's
//! server-side applies), `crds` (kinds the run defines), `waves` (apply
//! waves and hooks), `ready` (waiting for readiness, `spec.tests`),
//! `removal` (deleting what the prune verdict says goes)
//! and `journal` (`--atomic`'s roll back).

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
use tazuna_core::policy::{self, After, Decision};
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

mod crds;
mod journal;
mod outcome;
mod ready;
mod removal;
mod send;
mod settings;
mod waves;

use crds::*;
pub use journal::*;
pub use outcome::*;
pub use settings::*;
pub use waves::*;

/// One object after its phase: its state entry, and the apply response when
/// it was sent.
type Handled = (Entry, Option<Value>);

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
    /// Whether it is sent at all ([`policy::decide`]).
    decision: Decision,
    /// The fields it leaves to others ([`policy::ignored`]): sent as they
    /// are live.
    ignored: Vec<String>,
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

        mark_handed_over(manifest, &rendered_set, &mut entries);
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
                // A dry run says what it leaves out; an apply stays quiet
                // about what it does on every no-op run.
                if self.settings.mode == Mode::DryRun {
                    self.note_hook(
                        name,
                        values[index],
                        "nothing of the release changes, so its upgrade hooks do not run",
                    );
                }
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
                    item.decision = policy::decide(
                        &item.value,
                        manifest.handover.as_ref(),
                        before.and_then(|e| e.handover.as_ref()),
                    )?;
                    item.ignored = policy::ignored(&item.value)?;
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
                    // Objects handed over once sent are not waited for.
                    let handed_when_sent = manifest
                        .handover
                        .as_ref()
                        .is_some_and(|h| h.after == After::Applied && h.covers(&entry.object()));
                    if let Some(applied) = sent
                        && !handed_when_sent
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
}

/// Whether two states record the same thing (the time aside).
/// After a successful apply of `manifest`: each rendered object its
/// `handover:` covers is recorded as handed over (when it first was), and
/// the others, no longer covered, are taken back.
fn mark_handed_over(manifest: &Manifest, rendered: &HashSet<ObjectRef>, entries: &mut [Entry]) {
    for entry in entries.iter_mut() {
        let object = entry.object();
        if !rendered.contains(&object) {
            continue;
        }
        match &manifest.handover {
            Some(handover) if handover.covers(&object) => {
                entry.handover.get_or_insert_with(|| policy::HandedOver {
                    to: handover.to,
                    at: crate::state::now_rfc3339(),
                });
            }
            _ => entry.handover = None,
        }
    }
}

fn same_state(a: &ManifestState, b: &ManifestState) -> bool {
    let mut a = a.clone();
    a.applied_at.clone_from(&b.applied_at);
    let sort = |s: &mut ManifestState| s.objects.sort_by_key(Entry::object);
    let mut b = b.clone();
    sort(&mut a);
    sort(&mut b);
    a == b
}
