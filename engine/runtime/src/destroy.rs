//! `tazuna destroy`: delete everything Tazuna's state says it applied, without
//! rendering anything.
//!
//! Manifests go in reverse dependency order (reverse declaration order when
//! none declares `dependsOn`), so custom resources go before the manifests
//! whose CRDs define them. Inside a manifest, plain objects go first, then
//! CRDs, then Namespaces, and each step waits until its objects are gone. A
//! manifest's state is removed only after all its objects are.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use tazuna_core::inventory::{ObjectRef, Phase};

use crate::apply::{Counts, Event, ManifestOutcome, Outcome, Prune, Run};
use crate::state::Stored;

/// Manifests of `states` in the order they are destroyed.
pub fn order(states: &BTreeMap<String, Stored>) -> Vec<&Stored> {
    let mut stored: Vec<&Stored> = states.values().collect();
    stored.sort_by_key(|s| (s.state.position, s.state.manifest.clone()));
    let index: HashMap<&str, usize> = stored
        .iter()
        .enumerate()
        .map(|(i, s)| (s.state.manifest.as_str(), i))
        .collect();
    // Depth in the dependency graph: destroy the deepest first.
    let mut depth = vec![0usize; stored.len()];
    for _ in 0..stored.len() {
        let mut changed = false;
        for (i, s) in stored.iter().enumerate() {
            for dependency in &s.state.depends_on {
                if let Some(&d) = index.get(dependency.as_str())
                    && depth[i] < depth[d] + 1
                {
                    depth[i] = depth[d] + 1;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    let mut order: Vec<usize> = (0..stored.len()).collect();
    order.sort_by(|&a, &b| depth[b].cmp(&depth[a]).then(b.cmp(&a)));
    order.into_iter().map(|i| stored[i]).collect()
}

impl Run<'_> {
    /// Destroy `manifests` (already in order). A failure stops the rest, so a
    /// CRD is never deleted while custom resources of a failed manifest remain.
    pub async fn destroy(&self, manifests: &[&Stored]) -> Vec<ManifestOutcome> {
        let mut outcomes = Vec::new();
        let mut failed: Option<String> = None;
        for stored in manifests {
            let name = stored.state.manifest.clone();
            if let Some(first) = &failed {
                let outcome = ManifestOutcome {
                    manifest: name,
                    outcome: Outcome::Skipped(format!("destroying `{first}` failed")),
                    counts: Counts::default(),
                    elapsed: Duration::ZERO,
                };
                self.observer.event(Event::Finished(outcome.clone()));
                outcomes.push(outcome);
                continue;
            }
            let started = Instant::now();
            let mut counts = Counts::default();
            let result = self.destroy_manifest(stored, &mut counts).await;
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

    async fn destroy_manifest(&self, stored: &Stored, counts: &mut Counts) -> Result<(), String> {
        let name = &stored.state.manifest;
        self.observer.event(Event::Started {
            manifest: name.clone(),
            objects: stored.state.objects.len(),
        });
        let mut phases: BTreeMap<std::cmp::Reverse<Phase>, Vec<ObjectRef>> = BTreeMap::new();
        for entry in stored.state.objects.iter().rev() {
            let object = entry.object();
            phases
                .entry(std::cmp::Reverse(Phase::of(&object)))
                .or_default()
                .push(object);
        }
        for (_, objects) in phases {
            self.remove(name, objects, Prune::Dangerous, counts)
                .await
                .map_err(|e| e.to_string())?;
        }
        self.store.delete(stored).await.map_err(|e| e.to_string())
    }
}
