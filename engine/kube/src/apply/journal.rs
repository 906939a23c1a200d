//! `--atomic`: what a run changed, kept in memory, and the roll back that
//! deletes what it created and puts back what it changed.

use super::*;

/// What an atomic run changed, in order: each object it created, and each
/// it changed with what it was before (held in memory only; a Secret's data
/// never leaves it).
#[derive(Debug, Default)]
pub struct Journal {
    changes: std::sync::Mutex<(Vec<Change>, HashSet<ObjectRef>)>,
}

#[derive(Debug)]
pub(super) struct Change {
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
    pub(super) fn record(&self, object: &ObjectRef, resolved: &Resolved, before: Option<Value>) {
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
pub(super) fn restorable(mut object: Value) -> Value {
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
