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
    /// Deleted objects still there when time ran out.
    #[error("{} still there {}s after deletion:{}", plural(.pending.len()), .timeout.as_secs(), .pending.iter().map(|(o, why)| format!("\n  - {o}: {why}")).collect::<String>())]
    NotGone {
        /// What was still there, and what holds it.
        pending: Vec<(ObjectRef, String)>,
        /// How long it waited.
        timeout: Duration,
        /// The APIServices a Namespace's deletion is stuck on.
        blocking: Vec<String>,
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

/// The workloads whose Pods are asked why they do not run, at most.
const CAUSES_AT_MOST: usize = 5;

/// For each workload in `pending` (a Deployment, StatefulSet, DaemonSet or
/// Job), the cause one of its Pods shows ([`readiness::pod_cause`]), added
/// to its reason: a timeout names why, not only how many are available.
/// Best effort: what cannot be read adds nothing.
async fn pod_causes(client: &Client, pending: &mut [(ObjectRef, String)]) {
    let workloads = pending.iter_mut().filter(|(object, _)| {
        matches!(
            (object.group.as_str(), object.kind.as_str()),
            ("apps", "Deployment" | "StatefulSet" | "DaemonSet") | ("batch", "Job")
        )
    });
    for (object, reason) in workloads.take(CAUSES_AT_MOST) {
        let Some(namespace) = object.namespace.as_deref() else {
            continue;
        };
        let resource = kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
            &object.group,
            &object.version,
            &object.kind,
        ));
        let api: kube::Api<DynamicObject> =
            kube::Api::namespaced_with(client.clone(), namespace, &resource);
        let Ok(Some(workload)) = api.get_opt(&object.name).await else {
            continue;
        };
        let labels = workload
            .data
            .pointer("/spec/selector/matchLabels")
            .and_then(Value::as_object)
            .map(|labels| {
                labels
                    .iter()
                    .filter_map(|(k, v)| Some(format!("{k}={}", v.as_str()?)))
                    .collect::<Vec<_>>()
                    .join(",")
            });
        let Some(labels) = labels.filter(|l| !l.is_empty()) else {
            continue;
        };
        let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
            kube::Api::namespaced(client.clone(), namespace);
        let params = kube::api::ListParams::default().labels(&labels).limit(20);
        let Ok(list) = pods.list(&params).await else {
            continue;
        };
        let cause = list.items.iter().find_map(|pod| {
            let value = serde_json::to_value(pod).ok()?;
            let cause = readiness::pod_cause(&value)?;
            Some(format!(
                "pod `{}`: {cause}",
                pod.metadata.name.as_deref().unwrap_or_default()
            ))
        });
        if let Some(cause) = cause {
            reason.push_str("; ");
            reason.push_str(&cause);
        }
    }
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
    let span = tracing::info_span!(
        target: tazuna_core::TRACE,
        "wait",
        tazuna.objects = objects.len(),
        tazuna.timeout_seconds = timeout.as_secs(),
        otel.status_code = tracing::field::Empty,
        otel.status_description = tracing::field::Empty,
    );
    let work = async {
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
                    pod_causes(client, &mut left).await;
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
    };
    tazuna_core::traced(span, work, |_, result| {
        result.as_ref().map_err(ToString::to_string).copied()
    })
    .await
}

/// Wait until each of `objects` (deleted, possibly with finalizers pending)
/// is gone, at most `timeout`; a timeout names what is still there and what
/// holds it, read from the object itself.
pub async fn until_gone(
    client: &Client,
    objects: Vec<(ObjectRef, Resolved)>,
    timeout: Duration,
) -> Result<(), WaitError> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut left = Vec::new();
    let mut blocking = Vec::new();
    for (object, resolved) in objects {
        let api = api_for(client, &resolved, object.namespace.as_deref());
        let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
        let gone = tokio::time::timeout(
            remaining,
            kube::runtime::wait::await_condition(
                api.clone(),
                &object.name,
                |o: Option<&DynamicObject>| o.is_none(),
            ),
        )
        .await;
        match gone {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => left.push((object, format!("cannot watch it: {error}"))),
            Err(_) => {
                let live = api.get_opt(&object.name).await.ok().flatten();
                let value = live.map(|live| serde_json::to_value(live).unwrap_or(Value::Null));
                let Some(value) = value else {
                    continue;
                };
                let holding = Holding::of(&value);
                blocking.extend(holding.api_services.iter().cloned());
                left.push((object, holding.reason));
            }
        }
    }
    if left.is_empty() {
        return Ok(());
    }
    blocking.sort();
    blocking.dedup();
    Err(WaitError::NotGone {
        pending: left,
        timeout,
        blocking,
    })
}

/// What keeps a deleted object from going away, as the object says.
#[derive(Debug, PartialEq, Eq)]
struct Holding {
    /// In the object's terms: its finalizers, and a Namespace's conditions.
    reason: String,
    /// The APIServices (`v1beta1.metrics.k8s.io`) whose discovery failure
    /// stops the namespace controller.
    api_services: Vec<String>,
}

impl Holding {
    fn of(object: &Value) -> Self {
        let mut parts = Vec::new();
        let mut api_services = Vec::new();
        let failing = |kind: &str| kind.starts_with("Namespace") || kind.contains("Failure");
        for condition in object["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let kind = condition["type"].as_str().unwrap_or_default();
            if condition["status"] != "True" || !failing(kind) {
                continue;
            }
            let message = condition["message"].as_str().unwrap_or_default();
            if kind == "NamespaceDeletionDiscoveryFailure" {
                api_services.extend(failing_api_services(message));
            }
            parts.push(format!("{kind}: {message}"));
        }
        let finalizers: Vec<&str> = object["metadata"]["finalizers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if !finalizers.is_empty() {
            parts.push(format!("finalizers `{}` pending", finalizers.join("`, `")));
        }
        let reason = if parts.is_empty() {
            "still there".to_owned()
        } else {
            parts.join("; ")
        };
        Self {
            reason,
            api_services,
        }
    }
}

/// The APIServices named by a `NamespaceDeletionDiscoveryFailure` message
/// such as `Discovery failed for some groups, 1 failing: unable to retrieve
/// the complete list of server APIs: metrics.k8s.io/v1beta1: stale
/// GroupVersion discovery: metrics.k8s.io/v1beta1`.
fn failing_api_services(message: &str) -> Vec<String> {
    let mut names: Vec<String> = message
        .split(|c: char| c.is_whitespace() || c == ',')
        .map(|word| word.trim_end_matches(':'))
        .filter_map(|word| word.split_once('/'))
        .filter(|(group, version)| {
            group.contains('.')
                && version.starts_with('v')
                && version[1..].starts_with(|c: char| c.is_ascii_digit())
                && version.chars().all(|c| c.is_ascii_alphanumeric())
        })
        .map(|(group, version)| format!("{version}.{group}"))
        .collect();
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_namespace_stuck_on_discovery_names_the_api_service() {
        let namespace = json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": "app" },
            "spec": { "finalizers": ["kubernetes"] },
            "status": { "phase": "Terminating", "conditions": [
                { "type": "NamespaceDeletionDiscoveryFailure", "status": "True", "reason": "DiscoveryFailed",
                  "message": "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1" },
                { "type": "NamespaceDeletionContentFailure", "status": "False", "reason": "ContentDeleted",
                  "message": "All content successfully deleted, may be waiting on finalization" },
            ] },
        });
        let holding = Holding::of(&namespace);
        assert_eq!(holding.api_services, ["v1beta1.metrics.k8s.io"]);
        assert_eq!(
            holding.reason,
            "NamespaceDeletionDiscoveryFailure: Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1"
        );
    }

    #[test]
    fn an_object_held_by_finalizers_names_them() {
        let widget = json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": { "name": "w", "finalizers": ["example.com/cleanup"], "deletionTimestamp": "2026-01-01T00:00:00Z" },
        });
        let holding = Holding::of(&widget);
        assert_eq!(holding.reason, "finalizers `example.com/cleanup` pending");
        assert!(holding.api_services.is_empty());
        assert_eq!(Holding::of(&json!({})).reason, "still there");
    }
}
