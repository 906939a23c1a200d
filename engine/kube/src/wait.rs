//! Waiting with watches: for objects to become ready, and for deleted objects
//! to be gone.
//!
//! Objects are grouped by kind and namespace, and each group gets one watch
//! (a single object's group is narrowed with a field selector), so a manifest
//! of a thousand objects costs a handful of watches, not a thousand polls.
//! Readiness itself is judged by [`tazuna_core::readiness`].

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use futures::StreamExt;
use kube::Client;
use kube::api::DynamicObject;
use kube::runtime::watcher;
use serde_json::Value;
use tazuna_core::inventory::ObjectRef;
use tazuna_core::readiness::{self, LoadBalancers, Readiness};

use crate::cluster::Resolved;
use crate::objects::api_for;

/// An object to wait for, with how it looked last.
#[derive(Debug, Clone)]
pub struct Watched {
    /// Its identity.
    pub object: ObjectRef,
    /// Its kind on this cluster.
    pub resolved: Resolved,
    /// Its last known state (the apply response, or a list item).
    pub last: Option<Value>,
}

/// Why waiting ended without success.
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    /// Time ran out.
    #[error("{} not ready after {}s:{}", plural(.pending.len()), .timeout.as_secs(), .pending.iter().map(|(o, why)| format!("\n  - {o}: {why}")).collect::<String>())]
    Timeout {
        /// What was still not ready, and why.
        pending: Vec<(ObjectRef, String)>,
        /// How long it waited.
        timeout: Duration,
    },
    /// An object reported a terminal failure.
    #[error("{object} failed: {reason}")]
    Failed {
        /// The object.
        object: ObjectRef,
        /// Its conditions.
        reason: String,
    },
    /// A watch could not be kept open.
    #[error("cannot watch {what}")]
    Watch {
        /// What was being watched.
        what: String,
        /// What the API server said.
        #[source]
        source: watcher::Error,
    },
}

fn plural(n: usize) -> String {
    if n == 1 {
        "1 object".into()
    } else {
        format!("{n} objects")
    }
}

type GroupKey = (String, String, Option<String>);
/// Members of one group, by name: the object, why it is not ready yet, and
/// whether it goes away once done.
type Members = HashMap<String, (ObjectRef, String, bool)>;

fn group_key(w: &Watched) -> GroupKey {
    (
        w.resolved.resource.api_version.clone(),
        w.resolved.resource.plural.clone(),
        w.object.namespace.clone(),
    )
}

/// Wait until every object in `objects` is ready, at most `timeout`, by the
/// rules of [`readiness::assess`] with `load_balancers`.
/// `on_ready` is called once per object as it becomes ready (also for those
/// already ready).
pub async fn until_ready(
    client: &Client,
    objects: Vec<Watched>,
    timeout: Duration,
    load_balancers: LoadBalancers,
    on_ready: &(dyn Fn(&ObjectRef) + Sync),
) -> Result<(), WaitError> {
    let mut groups: BTreeMap<GroupKey, (Resolved, Members)> = BTreeMap::new();
    for watched in objects {
        let verdict = match &watched.last {
            Some(last) => readiness::assess(last, load_balancers),
            None => Readiness::InProgress("not seen yet".into()),
        };
        match verdict {
            Readiness::Ready => on_ready(&watched.object),
            Readiness::Failed(reason) => {
                return Err(WaitError::Failed {
                    object: watched.object,
                    reason,
                });
            }
            Readiness::InProgress(reason) => {
                let entry = groups
                    .entry(group_key(&watched))
                    .or_insert_with(|| (watched.resolved.clone(), HashMap::new()));
                let removable = watched
                    .last
                    .as_ref()
                    .is_some_and(readiness::removed_when_done);
                entry.1.insert(
                    watched.object.name.clone(),
                    (watched.object, reason, removable),
                );
            }
        }
    }
    if groups.is_empty() {
        return Ok(());
    }

    let mut streams = Vec::new();
    let mut pending: HashMap<(GroupKey, String), (ObjectRef, String)> = HashMap::new();
    // Objects that go away once done (Jobs with a TTL): gone before the
    // watch first lists them, or deleted as finished, they are ready.
    let mut removable: HashSet<(GroupKey, String)> = HashSet::new();
    let mut seen: HashSet<(GroupKey, String)> = HashSet::new();
    for (key, (resolved, members)) in groups {
        let api = api_for(client, &resolved, key.2.as_deref());
        let mut config = watcher::Config::default();
        if members.len() == 1 {
            let name = members.keys().next().expect("one member");
            config = config.fields(&format!("metadata.name={name}"));
        }
        let group = key.clone();
        streams.push(
            watcher(api, config)
                .map(move |event| (group.clone(), event))
                .boxed(),
        );
        for (name, member) in members {
            if member.2 {
                removable.insert((key.clone(), name.clone()));
            }
            pending.insert((key.clone(), name), (member.0, member.1));
        }
    }
    let mut events = futures::stream::select_all(streams);
    let deadline = tokio::time::Instant::now() + timeout;
    while !pending.is_empty() {
        let next = match tokio::time::timeout_at(deadline, events.next()).await {
            Ok(Some(next)) => next,
            Ok(None) => break,
            Err(_) => {
                let mut left: Vec<(ObjectRef, String)> = pending.into_values().collect();
                left.sort();
                return Err(WaitError::Timeout {
                    pending: left,
                    timeout,
                });
            }
        };
        let (group, event) = next;
        let object = match event {
            Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) => object,
            Ok(watcher::Event::Delete(object)) => {
                let name = object.metadata.name.clone().unwrap_or_default();
                let key = (group, name);
                let finished = removable.contains(&key)
                    && pending.get(&key).is_some_and(|(reference, _)| {
                        let mut value = serde_json::to_value(&object).unwrap_or(Value::Null);
                        crate::objects::fill_type(&mut value, reference);
                        readiness::assess(&value, load_balancers).is_ready()
                    });
                if finished && let Some((reference, _)) = pending.remove(&key) {
                    on_ready(&reference);
                } else if let Some(entry) = pending.get_mut(&key) {
                    entry.1 = "it was deleted".into();
                }
                continue;
            }
            Ok(watcher::Event::InitDone) => {
                let gone: Vec<(GroupKey, String)> = pending
                    .keys()
                    .filter(|key| {
                        key.0 == group && removable.contains(*key) && !seen.contains(*key)
                    })
                    .cloned()
                    .collect();
                for key in gone {
                    if let Some((reference, _)) = pending.remove(&key) {
                        on_ready(&reference);
                    }
                }
                continue;
            }
            Ok(_) => continue,
            Err(source) => {
                // The watcher re-lists on its own after most errors; only
                // report what keeps failing once time is up.
                tracing::debug!("watch error: {source}");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let name = object.metadata.name.clone().unwrap_or_default();
        let key = (group, name);
        seen.insert(key.clone());
        let Some((reference, _)) = pending.get(&key) else {
            continue;
        };
        let reference = reference.clone();
        let mut value = serde_json::to_value(&object).unwrap_or(Value::Null);
        crate::objects::fill_type(&mut value, &reference);
        match readiness::assess(&value, load_balancers) {
            Readiness::Ready => {
                pending.remove(&key);
                on_ready(&reference);
            }
            Readiness::Failed(reason) => {
                return Err(WaitError::Failed {
                    object: reference,
                    reason,
                });
            }
            Readiness::InProgress(reason) => {
                if let Some(entry) = pending.get_mut(&key) {
                    entry.1 = reason;
                }
            }
        }
    }
    Ok(())
}

/// Wait until each of `objects` (deleted, possibly with finalizers pending)
/// is gone, at most `timeout`; a timeout names what is still there.
pub async fn until_gone(
    client: &Client,
    objects: Vec<(ObjectRef, Resolved)>,
    timeout: Duration,
) -> Result<(), WaitError> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut left = Vec::new();
    for (object, resolved) in objects {
        let api = api_for(client, &resolved, object.namespace.as_deref());
        let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
        let gone = tokio::time::timeout(
            remaining,
            kube::runtime::wait::await_condition(api, &object.name, |o: Option<&DynamicObject>| {
                o.is_none()
            }),
        )
        .await;
        match gone {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => left.push((object, format!("cannot watch it: {error}"))),
            Err(_) => left.push((object, "still there (finalizers may be pending)".into())),
        }
    }
    if left.is_empty() {
        Ok(())
    } else {
        Err(WaitError::Timeout {
            pending: left,
            timeout,
        })
    }
}
