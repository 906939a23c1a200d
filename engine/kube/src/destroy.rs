//! Taking manifests down from their state, without rendering anything:
//! `tazuna destroy`, and prune of manifests removed from the file.
//!
//! First, across all the manifests taken down, go the objects that make the
//! API server call out to a backend: APIServices and admission webhook
//! configurations. An aggregated API whose backend is gone makes discovery
//! fail, and the namespace controller then deletes no Namespace anywhere; a
//! webhook whose backend is gone refuses the deletes it intercepts.
//!
//! Then manifests go in reverse dependency order (reverse declaration order
//! when none declares `dependsOn`), so custom resources go before the
//! manifests whose CRDs define them. Inside a manifest, plain objects go
//! first, then CRDs, then Namespaces, and each step waits until its objects
//! are gone. A manifest's state is removed only after all its objects are.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use tazuna_core::graph;
use tazuna_core::inventory::{ObjectRef, Phase};

use crate::apply::{Action, Counts, Event, Failure, ManifestOutcome, Outcome, Prune, Run};
use crate::state::Entry;
use crate::state::Stored;

/// Manifests of `states` in the order they are taken down: reverse
/// dependency order, reverse declaration order among equals
/// ([`graph::teardown`]).
pub fn order(states: &BTreeMap<String, Stored>) -> Vec<&Stored> {
    let mut stored: Vec<&Stored> = states.values().collect();
    stored.sort_by_key(|s| (s.state.position, s.state.manifest.clone()));
    graph::teardown(&stored)
        .into_iter()
        .map(|i| stored[i])
        .collect()
}

/// What the first pass of a take-down did for one manifest.
#[derive(Default)]
struct Early {
    /// The objects it removed or kept.
    handled: HashSet<ObjectRef>,
    /// Those of them kept, which stay in the record.
    kept: Vec<ObjectRef>,
    counts: Counts,
}

/// Whether the API server calls out to a backend for `object`: an
/// APIService or an admission webhook configuration.
fn calls_out(object: &ObjectRef) -> bool {
    matches!(
        (object.group.as_str(), object.kind.as_str()),
        ("apiregistration.k8s.io", "APIService")
            | (
                "admissionregistration.k8s.io",
                "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration"
            )
    )
}

impl graph::Node for Stored {
    fn name(&self) -> &str {
        &self.state.manifest
    }

    fn depends_on(&self) -> &[String] {
        &self.state.depends_on
    }
}

impl Run<'_> {
    /// Destroy `manifests` (already in order). A failure stops the rest, so a
    /// CRD is never deleted while custom resources of a failed manifest remain.
    pub async fn destroy(&self, manifests: &[&Stored]) -> Vec<ManifestOutcome> {
        self.take_down(manifests, Prune::Dangerous, Action::Deleted)
            .await
    }

    /// Prune manifests removed from the file (already in order), by the
    /// rules of in-file prune: Namespaces, CRDs and PVCs only with
    /// [`Prune::Dangerous`], never an object annotated to be kept. Kept
    /// objects stay in the manifest's record, so a later run can still
    /// delete them.
    pub async fn prune_removed(&self, manifests: &[&Stored], prune: Prune) -> Vec<ManifestOutcome> {
        self.take_down(manifests, prune, Action::Pruned).await
    }

    async fn take_down(
        &self,
        manifests: &[&Stored],
        prune: Prune,
        deleted: Action,
    ) -> Vec<ManifestOutcome> {
        let (mut early, mut early_failure) =
            self.take_down_callouts(manifests, prune, deleted).await;
        let mut outcomes = Vec::new();
        let mut failed: Option<String> = early_failure.as_ref().map(|(name, _)| name.clone());
        for stored in manifests {
            let name = stored.state.manifest.clone();
            if let Some((first, error)) = early_failure.take_if(|(first, _)| *first == name) {
                let outcome = ManifestOutcome {
                    manifest: first,
                    outcome: Outcome::Failed(error),
                    counts: early.remove(&name).map(|e| e.counts).unwrap_or_default(),
                    elapsed: Duration::ZERO,
                };
                self.observer.event(Event::Finished(outcome.clone()));
                outcomes.push(outcome);
                continue;
            }
            if let Some(first) = &failed {
                let outcome = ManifestOutcome {
                    manifest: name,
                    outcome: Outcome::Skipped(format!("deleting the objects of `{first}` failed")),
                    counts: Counts::default(),
                    elapsed: Duration::ZERO,
                };
                self.observer.event(Event::Finished(outcome.clone()));
                outcomes.push(outcome);
                continue;
            }
            let started = Instant::now();
            let early = early.remove(&name).unwrap_or_default();
            let mut counts = early.counts;
            let result = self
                .take_down_manifest(
                    stored,
                    prune,
                    deleted,
                    &early.handled,
                    early.kept,
                    &mut counts,
                )
                .await;
            let outcome = ManifestOutcome {
                manifest: name.clone(),
                outcome: match result {
                    Ok(()) => Outcome::Applied,
                    Err(error) => {
                        failed = Some(name);
                        Outcome::Failed(error)
                    }
                },
                counts,
                elapsed: started.elapsed(),
            };
            self.observer.event(Event::Finished(outcome.clone()));
            outcomes.push(outcome);
        }
        outcomes
    }

    /// Delete, for each of `manifests`, its APIServices and admission webhook
    /// configurations that no other manifest keeps, before anything else.
    /// Returns what each manifest's removal handled, and the first failure
    /// with its manifest, which stops the rest.
    async fn take_down_callouts(
        &self,
        manifests: &[&Stored],
        prune: Prune,
        deleted: Action,
    ) -> (HashMap<String, Early>, Option<(String, Failure)>) {
        let mut early = HashMap::new();
        for stored in manifests {
            let name = &stored.state.manifest;
            let objects: Vec<&Entry> = stored
                .state
                .objects
                .iter()
                .rev()
                .filter(|e| {
                    let o = e.object();
                    calls_out(&o) && self.ownership.kept_by(&o.key(), name).is_none()
                })
                .collect();
            if objects.is_empty() {
                continue;
            }
            let mut done = Early {
                handled: objects.iter().map(|e| e.object()).collect(),
                ..Early::default()
            };
            let result = self
                .remove(name, objects, prune, deleted, &mut done.counts)
                .await;
            match result {
                Ok(kept) => done.kept = kept,
                Err(error) => {
                    early.insert(name.clone(), done);
                    return (early, Some((name.clone(), Failure::of(&error))));
                }
            }
            early.insert(name.clone(), done);
        }
        (early, None)
    }

    /// Delete one record's objects that no other manifest keeps; plain
    /// objects first, then CRDs, then Namespaces, each step waited for.
    /// Objects in `handled` were removed already (`kept` of them stay). The
    /// record goes when nothing of it is left, else it keeps what was kept.
    async fn take_down_manifest(
        &self,
        stored: &Stored,
        prune: Prune,
        deleted: Action,
        handled: &HashSet<ObjectRef>,
        mut kept: Vec<ObjectRef>,
        counts: &mut Counts,
    ) -> Result<(), Failure> {
        let name = &stored.state.manifest;
        self.observer.event(Event::Started {
            manifest: name.clone(),
            objects: stored.state.objects.len(),
        });
        let mut phases: BTreeMap<std::cmp::Reverse<Phase>, Vec<&Entry>> = BTreeMap::new();
        for entry in stored.state.objects.iter().rev() {
            let object = entry.object();
            // Another manifest renders or records it now: it moved there.
            if self.ownership.kept_by(&object.key(), name).is_some() || handled.contains(&object) {
                continue;
            }
            phases
                .entry(std::cmp::Reverse(Phase::of(&object)))
                .or_default()
                .push(entry);
        }
        for (_, objects) in phases {
            kept.extend(
                self.remove(name, objects, prune, deleted, counts)
                    .await
                    .map_err(|e| Failure::of(&e))?,
            );
        }
        if kept.is_empty() {
            return self.store.delete(stored).await.map_err(|e| Failure::of(&e));
        }
        let kept: HashSet<ObjectRef> = kept.into_iter().collect();
        let mut state = stored.state.clone();
        state.objects.retain(|e| kept.contains(&e.object()));
        state.stack = Some(self.stack.to_owned());
        if state != stored.state {
            self.store
                .save(&state, Some(stored))
                .await
                .map_err(|e| Failure::of(&e))?;
        }
        Ok(())
    }
}
