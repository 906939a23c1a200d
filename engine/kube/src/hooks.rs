//! An apply's helm hooks, run as helm runs them (see [`tazuna_core::hooks`]):
//! one at a time in their order, each created anew (the previous object
//! deleted first, by `before-hook-creation`), waited for, and deleted after
//! by its delete policy. A hook that fails stops the manifest.

use std::collections::HashMap;
use std::time::Duration;

use kube::api::{DeleteParams, PropagationPolicy};
use serde_json::Value;
use tazuna_core::config::{LoadBalancers, Manifest};
use tazuna_core::hooks::{self, Hook, Release};
use tazuna_core::inventory::{self, ObjectRef};
use tazuna_core::readiness;

use crate::apply::{
    Action, Counts, Event, Failure, ManifestError, ManifestOutcome, Mode, Outcome, Run, Shared,
    Unit,
};
use crate::cluster::Resolved;
use crate::objects::api_for;
use crate::objects::errors::status_message;
use crate::state::Entry;
use crate::wait::{self, Watched};

impl Run<'_> {
    /// `tazuna test`: run the chart tests (`helm.sh/hook: test`) of `units`,
    /// in order, as `helm test` runs them. A manifest without tests is left
    /// out; one that was never applied is skipped.
    pub async fn chart_tests(&self, units: &[Unit<'_>]) -> Vec<ManifestOutcome> {
        let shared = Shared::new(units, self.settings);
        let mut outcomes = Vec::new();
        for unit in units {
            let name = unit.manifest.name.clone();
            let started = std::time::Instant::now();
            let mut counts = Counts::default();
            let outcome = match &unit.rendered {
                Err(failure) => Some(Outcome::Failed(failure.clone())),
                Ok(rendered) => {
                    let values: Vec<&Value> = rendered.objects.iter().map(|o| &o.value).collect();
                    let tests = hooks::split(&values, Release::Upgrade).tests;
                    if tests.is_empty() {
                        None
                    } else if !self.states.contains_key(&name) {
                        Some(Outcome::Skipped(
                            "not applied yet; run `tazuna apply` first".to_owned(),
                        ))
                    } else {
                        self.observer.event(Event::Started {
                            manifest: name.clone(),
                            objects: tests.len(),
                        });
                        let timeout = unit.manifest.wait.timeout();
                        // Tests are not the release's: nothing is recorded.
                        let mut entries = Vec::new();
                        let ran = self
                            .run_hooks(
                                unit.manifest,
                                &tests,
                                &values,
                                &shared,
                                timeout,
                                &mut counts,
                                &mut entries,
                            )
                            .await;
                        Some(match ran {
                            Ok(()) => {
                                for test in &tests {
                                    self.observer.event(Event::TestPassed {
                                        manifest: Some(name.clone()),
                                        test: ObjectRef::of(values[test.index])
                                            .map_or_else(String::new, |o| o.to_string()),
                                    });
                                }
                                Outcome::Applied
                            }
                            Err(error) => Outcome::Failed(Failure::of(&error)),
                        })
                    }
                }
            };
            if let Some(outcome) = outcome {
                let outcome = ManifestOutcome {
                    manifest: name,
                    outcome,
                    counts,
                    elapsed: started.elapsed(),
                };
                self.observer.event(Event::Finished(outcome.clone()));
                outcomes.push(outcome);
            }
        }
        outcomes
    }

    /// Whether applying `values` (those of a render's objects, `all`, that
    /// an apply sends) changes what `prior` records: an object not recorded
    /// with the same content, or a recorded one no longer rendered. Upgrade
    /// hooks run only then: an apply that changes nothing runs nothing.
    pub(crate) fn changes(
        &self,
        values: &[&Value],
        all: &[&Value],
        manifest: &Manifest,
        prior: &HashMap<ObjectRef, &Entry>,
    ) -> bool {
        let rendered: std::collections::HashSet<ObjectRef> = all
            .iter()
            .filter_map(|value| self.identity(value, manifest))
            .collect();
        let changed = values.iter().any(|value| {
            let Some((object, value)) = self.as_sent(value, manifest) else {
                return true;
            };
            prior
                .get(&object)
                .is_none_or(|entry| entry.hash != inventory::content_hash(&value, self.hash_key))
        });
        changed || prior.keys().any(|object| !rendered.contains(object))
    }

    /// `value` as an apply sends it (its namespace defaulted), with its
    /// identity; `None` when its kind is not served yet.
    fn as_sent(&self, value: &Value, manifest: &Manifest) -> Option<(ObjectRef, Value)> {
        let resolved = self.cluster.resolve(&ObjectRef::of(value)?)?;
        let mut value = value.clone();
        crate::objects::prepare_object(&mut value, &resolved, manifest);
        Some((ObjectRef::of(&value)?, value))
    }

    /// The identity under which the state records `value`.
    pub(crate) fn identity(&self, value: &Value, manifest: &Manifest) -> Option<ObjectRef> {
        self.as_sent(value, manifest).map(|(object, _)| object)
    }

    /// Run `hooks` (indices into `values`) in order, a batch at a time (see
    /// [`hooks::batches`]). Each handled hook's entry is added to `entries`;
    /// a hook deleted after success is recorded as gone by design.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn run_hooks(
        &self,
        manifest: &Manifest,
        hooks: &[Hook],
        values: &[&Value],
        shared: &Shared,
        timeout: Duration,
        counts: &mut Counts,
        entries: &mut Vec<Entry>,
    ) -> Result<(), ManifestError> {
        let name = manifest.name.as_str();
        let unrecorded = HashMap::new();
        // As helm does: `hook-succeeded` objects go once every hook of the
        // stage has succeeded, last first, so a Job's ServiceAccount lives as
        // long as the Job runs.
        let mut succeeded: Vec<(ObjectRef, Resolved)> = Vec::new();
        let waited = |o: &Value| readiness::has_rule(o, readiness::LoadBalancers::Ignored);
        for batch in hooks::batches(hooks, values, waited) {
            let mut items = Vec::with_capacity(batch.len());
            let mut unsent = Vec::new();
            for hook in batch {
                let item = self
                    .prepare(values[hook.index].clone(), manifest, shared)
                    .await?;
                match item.resolved.clone() {
                    Some(resolved) if self.settings.mode == Mode::Apply => {
                        items.push((hook, item.object.clone(), resolved, item));
                    }
                    // A dry run sends it as the others and waits for nothing;
                    // a kind not served yet is not sent (the phase says why).
                    _ => unsent.push(item),
                }
            }
            let (handled, failure) = self
                .apply_phase(name, "hook", unsent, &unrecorded, shared, counts)
                .await;
            entries.extend(handled.into_iter().map(|(entry, _)| entry));
            if let Some(error) = failure {
                return Err(error);
            }
            let deletions = items
                .iter()
                .filter(|(hook, ..)| hook.delete.before_creation)
                .map(|(_, object, resolved, _)| {
                    self.delete_hook(name, object, resolved, "before-hook-creation", true)
                });
            for deleted in futures::future::join_all(deletions).await {
                if deleted? {
                    counts.add(Action::Deleted);
                }
            }
            // Never skipped as unchanged: a hook that runs is created.
            let (to_send, targets): (Vec<_>, Vec<_>) = items
                .into_iter()
                .map(|(hook, object, resolved, item)| (item, (hook, object, resolved)))
                .unzip();
            let (handled, failure) = self
                .apply_phase(name, "hook", to_send, &unrecorded, shared, counts)
                .await;
            if let Some(error) = failure {
                return Err(error);
            }
            let mut handled: HashMap<ObjectRef, (Entry, Option<Value>)> = handled
                .into_iter()
                .map(|(entry, applied)| (entry.object(), (entry, applied)))
                .collect();
            for (hook, object, resolved) in targets {
                let Some((entry, applied)) = handled.remove(&object) else {
                    continue;
                };
                let waited =
                    if tazuna_core::readiness::has_rule(values[hook.index], LoadBalancers::Ignored)
                    {
                        let watched = vec![Watched {
                            object: object.clone(),
                            resolved: resolved.clone(),
                            last: applied,
                        }];
                        wait::until_ready(
                            self.client(),
                            watched,
                            timeout,
                            LoadBalancers::Ignored,
                            &|_| {},
                        )
                        .await
                    } else {
                        Ok(())
                    };
                match waited {
                    Ok(()) => {
                        if hook.delete.succeeded {
                            succeeded.push((object, resolved));
                        }
                        // A hook of both stages is recorded once, as it ran last.
                        entries.retain(|e| e.object() != entry.object());
                        entries.push(entry);
                    }
                    Err(source) => {
                        if hook.delete.failed {
                            if self
                                .delete_hook(name, &object, &resolved, "hook-failed", false)
                                .await?
                            {
                                counts.add(Action::Deleted);
                            }
                        } else {
                            entries.push(entry);
                        }
                        return Err(ManifestError::Hook {
                            object,
                            wait: source,
                        });
                    }
                }
            }
        }
        // Last first, as helm deletes them.
        for (object, resolved) in succeeded.iter().rev() {
            if self
                .delete_hook(name, object, resolved, "hook-succeeded", false)
                .await?
            {
                counts.add(Action::Deleted);
            }
        }
        Ok(())
    }

    /// Delete a hook object for `policy`, if it exists (then `true`); with
    /// `until_gone`, wait until it is.
    async fn delete_hook(
        &self,
        manifest: &str,
        object: &ObjectRef,
        resolved: &Resolved,
        policy: &str,
        until_gone: bool,
    ) -> Result<bool, ManifestError> {
        let api = api_for(self.client(), resolved, object.namespace.as_deref());
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            ..DeleteParams::default()
        };
        match api.delete(&object.name, &params).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(false),
            Err(error) => {
                return Err(ManifestError::Rejected {
                    object: object.clone(),
                    message: format!(
                        "cannot delete the helm hook (`{policy}`): {}",
                        status_message(&error)
                    ),
                });
            }
        }
        self.observer.event(Event::Object {
            manifest: manifest.to_owned(),
            object: object.clone(),
            action: Action::Deleted,
            note: Some(format!("helm hook, `{policy}`")),
        });
        if until_gone {
            wait::until_gone(
                self.client(),
                vec![(object.clone(), resolved.clone())],
                self.settings.deletion_timeout,
            )
            .await?;
        }
        Ok(true)
    }
}
