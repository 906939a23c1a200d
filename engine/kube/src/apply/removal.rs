//! Deleting what the prune verdict ([`crate::prune`]) says goes, for
//! `apply --prune` and `destroy`, and waiting for what finalizers hold.

use super::*;

impl Run<'_> {
    /// Delete (or keep) objects that are no longer rendered; returns the
    /// entries that stay in state.
    pub(super) async fn prune(
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
    pub(super) async fn delete_owned(
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
        let recorded = prune::Recorded::of(entry).asked_by_name(tazuna_core::policy::names(
            &self.settings.delete_handed_over,
            object,
        ));
        let verdict = prune::verdict(object, manifest, value.as_ref(), recorded);
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
