//! Whether a live object has finished becoming what was applied, judged from
//! its `status` alone, in the manner of kstatus.
//!
//! [`assess`] knows the built-in kinds whose readiness is more than "it
//! exists" (workloads, Jobs, CRDs, APIServices, claims, load balancers,
//! Namespaces and Pods) and falls back to a `Ready` or `Available` condition
//! for everything else. Its reasons end up in timeout errors, so each one says
//! what is still missing in the object's own terms.

use std::fmt;

use serde_json::Value;

/// What [`assess`] concluded about an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// The object is what was applied; nothing left to wait for.
    Ready,
    /// The object is still converging; the reason says what is missing,
    /// such as `2 of 3 replicas available`.
    InProgress(String),
    /// The object will not become ready without a change; the reason says why.
    Failed(String),
}

impl Readiness {
    /// Whether this is [`Readiness::Ready`].
    pub fn is_ready(&self) -> bool {
        matches!(self, Self::Ready)
    }

    /// The reason, for anything but [`Readiness::Ready`].
    pub fn reason(&self) -> Option<&str> {
        match self {
            Self::Ready => None,
            Self::InProgress(reason) | Self::Failed(reason) => Some(reason),
        }
    }
}

impl fmt::Display for Readiness {
    /// `ready`, `in progress: <reason>` or `failed: <reason>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ready => f.write_str("ready"),
            Self::InProgress(reason) => write!(f, "in progress: {reason}"),
            Self::Failed(reason) => write!(f, "failed: {reason}"),
        }
    }
}

/// Whether a wait asks for a `LoadBalancer` Service's address. Helm's
/// `--wait` (kstatus) does not: a cluster without a load-balancer controller
/// never gives one, so it is waited for only when the manifest asks
/// (`wait: { loadBalancers: true }`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LoadBalancers {
    /// A Service is ready once it exists.
    #[default]
    Ignored,
    /// A `LoadBalancer` Service is ready once it has an ingress address.
    Awaited,
}

/// Whether `object` (as rendered) goes away by design once it has done its
/// work: a Job with `spec.ttlSecondsAfterFinished`, which the TTL controller
/// deletes after it finishes, or a helm hook with the delete policy
/// `hook-succeeded`. Such an object, gone after an apply of the same
/// content, is done: not re-created, not drift, not missing.
pub fn removed_when_done(object: &Value) -> bool {
    (kind_of(object) == ("batch", "Job") && object["spec"]["ttlSecondsAfterFinished"].is_u64())
        || crate::hooks::deleted_when_succeeded(object)
}

/// The readiness of `object`, a live object as the API server returns it.
pub fn assess(object: &Value, load_balancers: LoadBalancers) -> Readiness {
    if let Some(waiting) = unobserved_generation(object) {
        return waiting;
    }
    match kind_of(object) {
        ("apps", "Deployment") => deployment(object),
        ("apps", "StatefulSet") => stateful_set(object),
        ("apps", "DaemonSet") => daemon_set(object),
        ("batch", "Job") => job(object),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => definition(object),
        ("apiregistration.k8s.io", "APIService") => api_service(object),
        ("", "PersistentVolumeClaim") => claim(object),
        ("", "Service") if load_balancers == LoadBalancers::Awaited => service(object),
        ("", "Namespace") => namespace(object),
        ("", "Pod") => pod(object),
        // External Secrets Operator writes no status until it has checked a
        // store or synced a secret: no `Ready` condition yet is not ready.
        (EXTERNAL_SECRETS, "ExternalSecret" | "SecretStore" | "ClusterSecretStore") => {
            require(object, "Ready")
        }
        // Flux's sources, Kustomizations and HelmReleases: not ready until
        // their controller says `Ready`, unless they are suspended (then no
        // controller acts on them).
        (group, _) if FLUX_GROUPS.contains(&group) => flux(object),
        ("argoproj.io", "Application") => argo_application(object),
        ("argoproj.io", "ApplicationSet") => argo_application_set(object),
        _ => by_conditions(object),
    }
}

/// Flux's API groups whose objects a controller reconciles to `Ready`.
const FLUX_GROUPS: &[&str] = &[
    "source.toolkit.fluxcd.io",
    "kustomize.toolkit.fluxcd.io",
    "helm.toolkit.fluxcd.io",
];

fn flux(object: &Value) -> Readiness {
    if object.pointer("/spec/suspend") == Some(&Value::Bool(true)) {
        return Readiness::Ready;
    }
    require(object, "Ready")
}

/// An Argo CD `Application`: ready when Argo CD has synced it and found it
/// healthy (`status.sync.status: Synced`, `status.health.status: Healthy`),
/// failed when its last sync operation failed.
fn argo_application(object: &Value) -> Readiness {
    let field = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
    let sync = field("/status/sync/status").unwrap_or("Unknown");
    let health = field("/status/health/status").unwrap_or("Unknown");
    if matches!(
        field("/status/operationState/phase"),
        Some("Failed" | "Error")
    ) {
        return Readiness::Failed(format!(
            "its last sync failed: {}",
            field("/status/operationState/message").unwrap_or("no message")
        ));
    }
    if sync == "Synced" && health == "Healthy" {
        Readiness::Ready
    } else {
        Readiness::InProgress(format!("sync {sync}, health {health}"))
    }
}

/// An Argo CD `ApplicationSet`: ready when its controller made the
/// Applications it generates (`ResourcesUpToDate=True`), failed when it
/// reports `ErrorOccurred=True`.
fn argo_application_set(object: &Value) -> Readiness {
    if let Some(error) = condition(object, "ErrorOccurred")
        && error.status == "True"
    {
        return Readiness::Failed(format!("{}: {}", error.reason, error.message));
    }
    require(object, "ResourcesUpToDate")
}

/// External Secrets Operator's API group.
const EXTERNAL_SECRETS: &str = "external-secrets.io";

/// Whether [`assess`] can ever say anything but [`Readiness::Ready`] about
/// `object`: a kind with a rule of its own (a Service only when it is a
/// `LoadBalancer` and addresses are awaited), an object with a `Ready` or `Available` condition, or one
/// whose status reports `observedGeneration`.
///
/// Objects for which this is `false` are ready as soon as they exist, so there
/// is no point polling them.
pub fn has_rule(object: &Value, load_balancers: LoadBalancers) -> bool {
    let known = match kind_of(object) {
        ("apps", "Deployment" | "StatefulSet" | "DaemonSet")
        | ("batch", "Job")
        | ("apiextensions.k8s.io", "CustomResourceDefinition")
        | ("apiregistration.k8s.io", "APIService")
        | ("", "PersistentVolumeClaim" | "Namespace" | "Pod")
        | (EXTERNAL_SECRETS, "ExternalSecret" | "SecretStore" | "ClusterSecretStore")
        | ("argoproj.io", "Application" | "ApplicationSet") => true,
        (group, _) if FLUX_GROUPS.contains(&group) => true,
        ("", "Service") => load_balancers == LoadBalancers::Awaited && is_load_balancer(object),
        _ => false,
    };
    known
        || int(object, &["status", "observedGeneration"]).is_some()
        || condition(object, "Ready").is_some()
        || condition(object, "Available").is_some()
}

/// `(group, kind)`, with `""` for the core group.
fn kind_of(object: &Value) -> (&str, &str) {
    let api_version = text(object, &["apiVersion"]).unwrap_or_default();
    let group = api_version.split_once('/').map_or("", |(group, _)| group);
    (group, text(object, &["kind"]).unwrap_or_default())
}

/// A controller that has not yet seen the latest spec says nothing about it.
fn unobserved_generation(object: &Value) -> Option<Readiness> {
    let generation = int(object, &["metadata", "generation"])?;
    let observed = int(object, &["status", "observedGeneration"]);
    let workload = matches!(
        kind_of(object),
        ("apps", "Deployment" | "StatefulSet" | "DaemonSet")
    );
    match observed {
        Some(observed) if observed < generation => Some(Readiness::InProgress(format!(
            "the controller has observed generation {observed} of {generation}"
        ))),
        // Workload controllers always report it; a status without it has not
        // been written by them yet.
        None if workload => Some(Readiness::InProgress(format!(
            "the controller has not yet observed generation {generation}"
        ))),
        _ => None,
    }
}

fn deployment(object: &Value) -> Readiness {
    if let Some(progressing) = condition(object, "Progressing")
        && progressing.reason == "ProgressDeadlineExceeded"
    {
        return Readiness::Failed(progressing.to_string());
    }
    let desired = int(object, &["spec", "replicas"]).unwrap_or(1);
    let status = |field| int(object, &["status", field]).unwrap_or(0);
    let (updated, total, available) = (
        status("updatedReplicas"),
        status("replicas"),
        status("availableReplicas"),
    );
    if updated < desired {
        return Readiness::InProgress(format!("{updated} of {desired} replicas updated"));
    }
    if total > updated {
        return Readiness::InProgress(format!(
            "{} old replicas pending termination",
            total - updated
        ));
    }
    if available < desired {
        let mut reason = format!("{available} of {desired} replicas available");
        if let Some(c) = condition(object, "Available").filter(|c| c.status != "True") {
            reason = format!("{reason} ({c})");
        }
        return Readiness::InProgress(reason);
    }
    Readiness::Ready
}

fn stateful_set(object: &Value) -> Readiness {
    let desired = int(object, &["spec", "replicas"]).unwrap_or(1);
    let status = |field| int(object, &["status", field]).unwrap_or(0);
    let strategy = text(object, &["spec", "updateStrategy", "type"]).unwrap_or("RollingUpdate");
    let partition = int(
        object,
        &["spec", "updateStrategy", "rollingUpdate", "partition"],
    )
    .unwrap_or(0);
    if status("replicas") > desired {
        return Readiness::InProgress(format!(
            "{} extra replicas pending termination",
            status("replicas") - desired
        ));
    }
    let ready = status("readyReplicas");
    if ready < desired {
        return Readiness::InProgress(format!("{ready} of {desired} replicas ready"));
    }
    if strategy != "RollingUpdate" {
        // OnDelete: pods are replaced only when someone deletes them.
        return Readiness::Ready;
    }
    let updated = status("updatedReplicas");
    // A partitioned rollout deliberately leaves the lowest ordinals behind.
    let to_update = (desired - partition).max(0);
    if updated < to_update {
        return Readiness::InProgress(format!("{updated} of {to_update} replicas updated"));
    }
    if partition > 0 {
        return Readiness::Ready;
    }
    let current = text(object, &["status", "currentRevision"]).unwrap_or_default();
    let update = text(object, &["status", "updateRevision"]).unwrap_or_default();
    if current != update {
        return Readiness::InProgress(format!(
            "rolling update from revision `{current}` to `{update}` in progress"
        ));
    }
    Readiness::Ready
}

fn daemon_set(object: &Value) -> Readiness {
    let Some(desired) = int(object, &["status", "desiredNumberScheduled"]) else {
        return Readiness::InProgress("no pods scheduled yet".to_owned());
    };
    let updated = int(object, &["status", "updatedNumberScheduled"]).unwrap_or(0);
    if updated < desired {
        return Readiness::InProgress(format!("{updated} of {desired} pods updated"));
    }
    let available = int(object, &["status", "numberAvailable"]).unwrap_or(0);
    if available < desired {
        return Readiness::InProgress(format!("{available} of {desired} pods available"));
    }
    Readiness::Ready
}

fn job(object: &Value) -> Readiness {
    if condition(object, "Complete").is_some_and(|c| c.status == "True") {
        return Readiness::Ready;
    }
    if let Some(failed) = condition(object, "Failed").filter(|c| c.status == "True") {
        return Readiness::Failed(failed.to_string());
    }
    let status = |field| int(object, &["status", field]).unwrap_or(0);
    let mut reason = format!("{} succeeded", status("succeeded"));
    if let Some(completions) = int(object, &["spec", "completions"]) {
        reason = format!(
            "{} of {completions} completions succeeded",
            status("succeeded")
        );
    }
    Readiness::InProgress(format!(
        "{reason}, {} active, {} failed",
        status("active"),
        status("failed")
    ))
}

fn definition(object: &Value) -> Readiness {
    if let Some(names) = condition(object, "NamesAccepted").filter(|c| c.status == "False") {
        return Readiness::Failed(names.to_string());
    }
    require(object, "Established")
}

fn api_service(object: &Value) -> Readiness {
    require(object, "Available")
}

fn claim(object: &Value) -> Readiness {
    match text(object, &["status", "phase"]) {
        Some("Bound") => Readiness::Ready,
        Some("Lost") => Readiness::Failed("phase `Lost`: the bound volume no longer exists".into()),
        Some(phase) => Readiness::InProgress(format!("phase `{phase}`, waiting for `Bound`")),
        None => Readiness::InProgress("no phase yet, waiting for `Bound`".into()),
    }
}

fn is_load_balancer(object: &Value) -> bool {
    text(object, &["spec", "type"]) == Some("LoadBalancer")
}

fn service(object: &Value) -> Readiness {
    if !is_load_balancer(object) {
        return Readiness::Ready;
    }
    let ingress = object.pointer("/status/loadBalancer/ingress");
    if ingress
        .and_then(Value::as_array)
        .is_some_and(|i| !i.is_empty())
    {
        Readiness::Ready
    } else {
        Readiness::InProgress("waiting for the load balancer to get an address".into())
    }
}

fn namespace(object: &Value) -> Readiness {
    match text(object, &["status", "phase"]) {
        Some("Active") => Readiness::Ready,
        Some("Terminating") => Readiness::InProgress("namespace is terminating".into()),
        Some(phase) => Readiness::InProgress(format!("phase `{phase}`, waiting for `Active`")),
        None => Readiness::InProgress("no phase yet, waiting for `Active`".into()),
    }
}

/// Why a Pod of a workload that is not ready does not run, in the words of
/// the scheduler and the kubelet: unschedulable (with the scheduler's
/// message), an image that cannot be pulled, a container that crashes (with
/// its last exit), a container that cannot be made. `None` when it shows
/// none of these.
pub fn pod_cause(pod: &Value) -> Option<String> {
    fn text<'a>(value: &'a Value, key: &str) -> &'a str {
        value.get(key).and_then(Value::as_str).unwrap_or("")
    }
    let unscheduled = pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| {
            text(c, "type") == "PodScheduled"
                && text(c, "status") == "False"
                && text(c, "reason") == "Unschedulable"
        });
    if let Some(condition) = unscheduled {
        return Some(format!("Unschedulable: {}", text(condition, "message")));
    }
    const WAITING: [&str; 7] = [
        "ImagePullBackOff",
        "ErrImagePull",
        "InvalidImageName",
        "CrashLoopBackOff",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    ];
    for list in ["initContainerStatuses", "containerStatuses"] {
        let statuses = pod
            .pointer(&format!("/status/{list}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for status in statuses {
            let Some(waiting) = status.pointer("/state/waiting") else {
                continue;
            };
            let reason = text(waiting, "reason");
            if !WAITING.contains(&reason) {
                continue;
            }
            let mut cause = format!("container `{}`: {reason}", text(status, "name"));
            let message = text(waiting, "message");
            if !message.is_empty() {
                cause.push_str(&format!(": {message}"));
            }
            if let Some(last) = status.pointer("/lastState/terminated") {
                cause.push_str(&format!(
                    " (last exit: {}, code {})",
                    text(last, "reason"),
                    last.get("exitCode")
                        .and_then(Value::as_i64)
                        .unwrap_or_default()
                ));
            }
            return Some(cause);
        }
    }
    None
}

fn pod(object: &Value) -> Readiness {
    let phase = text(object, &["status", "phase"]);
    if phase == Some("Succeeded") {
        return Readiness::Ready;
    }
    // A hook Pod (a chart test, a migration) is done when it has run to the
    // end, as helm judges it; running and ready is not enough.
    if crate::hooks::is_hook(object) && phase != Some("Failed") {
        return Readiness::InProgress(format!(
            "a helm hook in phase `{}`, waiting for `Succeeded`",
            phase.unwrap_or("Pending")
        ));
    }
    let ready = condition(object, "Ready");
    if ready.as_ref().is_some_and(|c| c.status == "True") {
        return Readiness::Ready;
    }
    if phase == Some("Failed") {
        let mut reason = "phase `Failed`".to_owned();
        for field in ["reason", "message"] {
            if let Some(detail) = text(object, &["status", field]).filter(|d| !d.is_empty()) {
                reason = format!("{reason}: {detail}");
            }
        }
        return Readiness::Failed(reason);
    }
    // A container stuck waiting (ImagePullBackOff, CrashLoopBackOff) is the
    // most useful thing to show someone whose wait timed out.
    let statuses = ["initContainerStatuses", "containerStatuses"]
        .into_iter()
        .filter_map(|field| object.get("status")?.get(field)?.as_array())
        .flatten();
    for status in statuses {
        if let Some(waiting) = status.pointer("/state/waiting")
            && let Some(why) = waiting.get("reason").and_then(Value::as_str)
        {
            let name = status.get("name").and_then(Value::as_str).unwrap_or("?");
            let mut reason = format!("container `{name}` waiting: {why}");
            if let Some(message) = waiting.get("message").and_then(Value::as_str) {
                reason = format!("{reason}: {message}");
            }
            return Readiness::InProgress(reason);
        }
    }
    match ready {
        Some(ready) => Readiness::InProgress(ready.to_string()),
        None => Readiness::InProgress(format!(
            "phase `{}`, waiting for condition `Ready`",
            phase.unwrap_or("Pending")
        )),
    }
}

fn by_conditions(object: &Value) -> Readiness {
    let Some(found) = condition(object, "Ready").or_else(|| condition(object, "Available")) else {
        return Readiness::Ready;
    };
    if let (Some(seen), Some(generation)) = (
        found.observed_generation,
        int(object, &["metadata", "generation"]),
    ) && seen < generation
    {
        return Readiness::InProgress(format!(
            "condition {} reflects generation {seen} of {generation}",
            found.kind
        ));
    }
    if found.status == "True" {
        Readiness::Ready
    } else {
        Readiness::InProgress(found.to_string())
    }
}

/// Ready when condition `kind` is `True`; otherwise in progress, saying what
/// the condition reports.
fn require(object: &Value, kind: &str) -> Readiness {
    match condition(object, kind) {
        Some(c) if c.status == "True" => Readiness::Ready,
        Some(c) => Readiness::InProgress(c.to_string()),
        None => Readiness::InProgress(format!("waiting for condition {kind}=True")),
    }
}

/// One entry of `status.conditions`.
struct Condition<'a> {
    kind: &'a str,
    status: &'a str,
    reason: &'a str,
    message: &'a str,
    observed_generation: Option<i64>,
}

impl fmt::Display for Condition<'_> {
    /// `condition Available=False: MinimumReplicasUnavailable: Deployment
    /// does not have minimum availability`, leaving out what is empty.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "condition {}={}", self.kind, self.status)?;
        for detail in [self.reason, self.message] {
            if !detail.is_empty() {
                write!(f, ": {detail}")?;
            }
        }
        Ok(())
    }
}

fn condition<'a>(object: &'a Value, kind: &str) -> Option<Condition<'a>> {
    let conditions = object.get("status")?.get("conditions")?.as_array()?;
    let found = conditions
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))?;
    let field = |name| found.get(name).and_then(Value::as_str).unwrap_or_default();
    Some(Condition {
        kind: field("type"),
        status: field("status"),
        reason: field("reason"),
        message: field("message"),
        observed_generation: found.get("observedGeneration").and_then(Value::as_i64),
    })
}

fn lookup<'a>(object: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(object, |value, key| value.get(key))
}

fn int(object: &Value, path: &[&str]) -> Option<i64> {
    lookup(object, path)?.as_i64()
}

fn text<'a>(object: &'a Value, path: &[&str]) -> Option<&'a str> {
    lookup(object, path)?.as_str()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `(what the case shows, object, expected)`, where expected is `"ready"`
    /// or a prefix of `in progress: …` / `failed: …`.
    type Case = (&'static str, Value, &'static str);

    fn check(cases: Vec<Case>) {
        let mut wrong = Vec::new();
        for (name, object, expected) in cases {
            let actual = assess(&object, LoadBalancers::Awaited).to_string();
            if !actual.starts_with(expected) || (expected == "ready" && actual != "ready") {
                wrong.push(format!("{name}: expected `{expected}`, got `{actual}`"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    fn deployment(spec: Value, status: Value) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": { "name": "web", "generation": 2 },
            "spec": spec, "status": status,
        })
    }

    #[test]
    fn deployments() {
        let rolled_out = json!({
            "observedGeneration": 2, "replicas": 3, "updatedReplicas": 3,
            "readyReplicas": 3, "availableReplicas": 3,
        });
        check(vec![
            (
                "rolled out",
                deployment(json!({ "replicas": 3 }), rolled_out.clone()),
                "ready",
            ),
            (
                "replicas default to one",
                deployment(
                    json!({}),
                    json!({ "observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1 }),
                ),
                "ready",
            ),
            (
                "scaled to zero",
                deployment(json!({ "replicas": 0 }), json!({ "observedGeneration": 2 })),
                "ready",
            ),
            (
                "old generation",
                deployment(
                    json!({ "replicas": 3 }),
                    json!({ "observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 3 }),
                ),
                "in progress: the controller has observed generation 1 of 2",
            ),
            (
                "no status yet",
                deployment(json!({ "replicas": 3 }), json!({})),
                "in progress: the controller has not yet observed generation 2",
            ),
            (
                "updating",
                deployment(
                    json!({ "replicas": 3 }),
                    json!({ "observedGeneration": 2, "replicas": 4, "updatedReplicas": 1, "availableReplicas": 3 }),
                ),
                "in progress: 1 of 3 replicas updated",
            ),
            (
                "old replicas left",
                deployment(
                    json!({ "replicas": 3 }),
                    json!({ "observedGeneration": 2, "replicas": 4, "updatedReplicas": 3, "availableReplicas": 3 }),
                ),
                "in progress: 1 old replicas pending termination",
            ),
            (
                "unavailable",
                deployment(
                    json!({ "replicas": 3 }),
                    json!({
                        "observedGeneration": 2, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 2,
                        "conditions": [{
                            "type": "Available", "status": "False",
                            "reason": "MinimumReplicasUnavailable",
                            "message": "Deployment does not have minimum availability.",
                        }],
                    }),
                ),
                "in progress: 2 of 3 replicas available (condition Available=False: MinimumReplicasUnavailable: Deployment does not have minimum availability.)",
            ),
            (
                "progress deadline exceeded",
                deployment(
                    json!({ "replicas": 3 }),
                    json!({
                        "observedGeneration": 2, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 2,
                        "conditions": [{
                            "type": "Progressing", "status": "False",
                            "reason": "ProgressDeadlineExceeded",
                            "message": "ReplicaSet \"web-7d4b9\" has timed out progressing.",
                        }],
                    }),
                ),
                "failed: condition Progressing=False: ProgressDeadlineExceeded: ReplicaSet \"web-7d4b9\" has timed out progressing.",
            ),
        ]);
    }

    fn stateful_set(strategy: Value, status: Value) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": { "name": "db", "generation": 1 },
            "spec": { "replicas": 3, "updateStrategy": strategy },
            "status": status,
        })
    }

    #[test]
    fn stateful_sets() {
        let settled = json!({
            "observedGeneration": 1, "replicas": 3, "readyReplicas": 3, "updatedReplicas": 3,
            "currentRevision": "db-1", "updateRevision": "db-1",
        });
        let mut rolling = settled.clone();
        rolling["currentRevision"] = json!("db-0");
        let mut half_updated = rolling.clone();
        half_updated["updatedReplicas"] = json!(1);
        let mut not_ready = settled.clone();
        not_ready["readyReplicas"] = json!(2);
        check(vec![
            (
                "settled",
                stateful_set(json!({ "type": "RollingUpdate" }), settled.clone()),
                "ready",
            ),
            (
                "strategy defaults to rolling update",
                stateful_set(json!(null), rolling.clone()),
                "in progress: rolling update from revision `db-0` to `db-1` in progress",
            ),
            (
                "not ready",
                stateful_set(json!({ "type": "RollingUpdate" }), not_ready),
                "in progress: 2 of 3 replicas ready",
            ),
            (
                "not updated",
                stateful_set(json!({ "type": "RollingUpdate" }), half_updated.clone()),
                "in progress: 1 of 3 replicas updated",
            ),
            (
                "on delete ignores revisions",
                stateful_set(json!({ "type": "OnDelete" }), half_updated),
                "ready",
            ),
            (
                "partitioned rollout done",
                stateful_set(
                    json!({ "type": "RollingUpdate", "rollingUpdate": { "partition": 2 } }),
                    json!({
                        "observedGeneration": 1, "replicas": 3, "readyReplicas": 3, "updatedReplicas": 1,
                        "currentRevision": "db-0", "updateRevision": "db-1",
                    }),
                ),
                "ready",
            ),
        ]);
    }

    #[test]
    fn daemon_sets() {
        let daemon_set = |status: Value| {
            json!({
                "apiVersion": "apps/v1", "kind": "DaemonSet",
                "metadata": { "name": "agent", "generation": 1 },
                "status": status,
            })
        };
        check(vec![
            (
                "everywhere",
                daemon_set(json!({
                    "observedGeneration": 1, "desiredNumberScheduled": 3,
                    "numberAvailable": 3, "updatedNumberScheduled": 3,
                })),
                "ready",
            ),
            (
                "not scheduled",
                daemon_set(json!({ "observedGeneration": 1 })),
                "in progress: no pods scheduled yet",
            ),
            (
                "not updated",
                daemon_set(json!({
                    "observedGeneration": 1, "desiredNumberScheduled": 3,
                    "numberAvailable": 3, "updatedNumberScheduled": 2,
                })),
                "in progress: 2 of 3 pods updated",
            ),
            (
                "not available",
                daemon_set(json!({
                    "observedGeneration": 1, "desiredNumberScheduled": 3,
                    "numberAvailable": 1, "updatedNumberScheduled": 3,
                })),
                "in progress: 1 of 3 pods available",
            ),
        ]);
    }

    fn with_conditions(api_version: &str, kind: &str, conditions: Value) -> Value {
        json!({
            "apiVersion": api_version, "kind": kind,
            "metadata": { "name": "x" },
            "status": { "conditions": conditions },
        })
    }

    #[test]
    fn jobs() {
        let job = |conditions| with_conditions("batch/v1", "Job", conditions);
        let mut running = job(json!([]));
        running["spec"] = json!({ "completions": 2 });
        running["status"]["succeeded"] = json!(1);
        running["status"]["active"] = json!(1);
        check(vec![
            (
                "complete",
                job(json!([{ "type": "Complete", "status": "True" }])),
                "ready",
            ),
            (
                "failed",
                job(json!([{
                    "type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                    "message": "Job has reached the specified backoff limit",
                }])),
                "failed: condition Failed=True: BackoffLimitExceeded: Job has reached the specified backoff limit",
            ),
            (
                "running",
                running,
                "in progress: 1 of 2 completions succeeded, 1 active, 0 failed",
            ),
            (
                "not complete yet",
                job(json!([{ "type": "Complete", "status": "False" }])),
                "in progress: 0 succeeded, 0 active, 0 failed",
            ),
        ]);
    }

    #[test]
    fn definitions_and_api_services() {
        let crd = |conditions| {
            with_conditions(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                conditions,
            )
        };
        let api_service =
            |conditions| with_conditions("apiregistration.k8s.io/v1", "APIService", conditions);
        check(vec![
            (
                "established",
                crd(json!([
                    { "type": "NamesAccepted", "status": "True" },
                    { "type": "Established", "status": "True" },
                ])),
                "ready",
            ),
            (
                "not established yet",
                crd(json!([{ "type": "NamesAccepted", "status": "True" }])),
                "in progress: waiting for condition Established=True",
            ),
            (
                "names conflict",
                crd(json!([{
                    "type": "NamesAccepted", "status": "False", "reason": "ListKindConflict",
                    "message": "\"FooList\" is already in use",
                }])),
                "failed: condition NamesAccepted=False: ListKindConflict: \"FooList\" is already in use",
            ),
            (
                "api service available",
                api_service(json!([{ "type": "Available", "status": "True" }])),
                "ready",
            ),
            (
                "api service unreachable",
                api_service(json!([{
                    "type": "Available", "status": "False", "reason": "FailedDiscoveryCheck",
                }])),
                "in progress: condition Available=False: FailedDiscoveryCheck",
            ),
        ]);
    }

    fn core(kind: &str, spec: Value, status: Value) -> Value {
        json!({
            "apiVersion": "v1", "kind": kind,
            "metadata": { "name": "x" },
            "spec": spec, "status": status,
        })
    }

    #[test]
    fn core_kinds() {
        check(vec![
            (
                "bound claim",
                core(
                    "PersistentVolumeClaim",
                    json!({}),
                    json!({ "phase": "Bound" }),
                ),
                "ready",
            ),
            (
                "pending claim",
                core(
                    "PersistentVolumeClaim",
                    json!({}),
                    json!({ "phase": "Pending" }),
                ),
                "in progress: phase `Pending`, waiting for `Bound`",
            ),
            (
                "lost claim",
                core(
                    "PersistentVolumeClaim",
                    json!({}),
                    json!({ "phase": "Lost" }),
                ),
                "failed: phase `Lost`",
            ),
            (
                "cluster ip service",
                core("Service", json!({ "type": "ClusterIP" }), json!({})),
                "ready",
            ),
            (
                "load balancer with an address",
                core(
                    "Service",
                    json!({ "type": "LoadBalancer" }),
                    json!({ "loadBalancer": { "ingress": [{ "ip": "192.0.2.1" }] } }),
                ),
                "ready",
            ),
            (
                "load balancer without an address",
                core(
                    "Service",
                    json!({ "type": "LoadBalancer" }),
                    json!({ "loadBalancer": {} }),
                ),
                "in progress: waiting for the load balancer to get an address",
            ),
            (
                "active namespace",
                core("Namespace", json!({}), json!({ "phase": "Active" })),
                "ready",
            ),
            (
                "terminating namespace",
                core("Namespace", json!({}), json!({ "phase": "Terminating" })),
                "in progress: namespace is terminating",
            ),
        ]);
    }

    #[test]
    fn pods() {
        let pod = |status| core("Pod", json!({}), status);
        check(vec![
            (
                "ready",
                pod(
                    json!({ "phase": "Running", "conditions": [{ "type": "Ready", "status": "True" }] }),
                ),
                "ready",
            ),
            ("succeeded", pod(json!({ "phase": "Succeeded" })), "ready"),
            (
                "failed",
                pod(json!({ "phase": "Failed", "reason": "Evicted", "message": "low on memory" })),
                "failed: phase `Failed`: Evicted: low on memory",
            ),
            (
                "image pull",
                pod(json!({
                    "phase": "Pending",
                    "conditions": [{ "type": "Ready", "status": "False", "reason": "ContainersNotReady" }],
                    "containerStatuses": [{
                        "name": "app",
                        "state": { "waiting": { "reason": "ImagePullBackOff", "message": "Back-off pulling image \"nope\"" } },
                    }],
                })),
                "in progress: container `app` waiting: ImagePullBackOff: Back-off pulling image \"nope\"",
            ),
            (
                "not ready",
                pod(json!({
                    "phase": "Running",
                    "conditions": [{ "type": "Ready", "status": "False", "reason": "ContainersNotReady" }],
                })),
                "in progress: condition Ready=False: ContainersNotReady",
            ),
            (
                "unscheduled",
                pod(json!({})),
                "in progress: phase `Pending`, waiting for condition `Ready`",
            ),
        ]);
    }

    #[test]
    fn other_objects_by_their_conditions() {
        let custom = |conditions| with_conditions("example.com/v1", "Widget", conditions);
        let mut stale =
            custom(json!([{ "type": "Ready", "status": "True", "observedGeneration": 1 }]));
        stale["metadata"]["generation"] = json!(2);
        let mut unobserved = custom(json!([]));
        unobserved["metadata"]["generation"] = json!(3);
        unobserved["status"]["observedGeneration"] = json!(2);
        check(vec![
            ("no conditions", custom(json!([])), "ready"),
            (
                "ready",
                custom(json!([{ "type": "Ready", "status": "True" }])),
                "ready",
            ),
            (
                "not ready",
                custom(json!([{
                    "type": "Ready", "status": "False", "reason": "Reconciling",
                    "message": "waiting for the database",
                }])),
                "in progress: condition Ready=False: Reconciling: waiting for the database",
            ),
            (
                "unknown",
                custom(json!([{ "type": "Available", "status": "Unknown" }])),
                "in progress: condition Available=Unknown",
            ),
            (
                "ready wins over available",
                custom(json!([
                    { "type": "Available", "status": "False" },
                    { "type": "Ready", "status": "True" },
                ])),
                "ready",
            ),
            (
                "unrelated conditions",
                custom(json!([{ "type": "Synced", "status": "False" }])),
                "ready",
            ),
            (
                "stale condition",
                stale,
                "in progress: condition Ready reflects generation 1 of 2",
            ),
            (
                "unobserved generation",
                unobserved,
                "in progress: the controller has observed generation 2 of 3",
            ),
        ]);
    }

    #[test]
    fn rules_exist_only_where_assess_can_wait() {
        let rules = [
            (
                json!({ "apiVersion": "apps/v1", "kind": "Deployment", "metadata": { "name": "x" } }),
                true,
            ),
            (
                json!({ "apiVersion": "v1", "kind": "Pod", "metadata": { "name": "x" } }),
                true,
            ),
            (
                json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "x" } }),
                false,
            ),
            (
                json!({ "apiVersion": "v1", "kind": "Service", "spec": { "type": "ClusterIP" } }),
                false,
            ),
            (
                json!({ "apiVersion": "v1", "kind": "Service", "spec": { "type": "LoadBalancer" } }),
                true,
            ),
            (
                with_conditions(
                    "example.com/v1",
                    "Widget",
                    json!([{ "type": "Ready", "status": "True" }]),
                ),
                true,
            ),
            (
                with_conditions(
                    "example.com/v1",
                    "Widget",
                    json!([{ "type": "Synced", "status": "True" }]),
                ),
                false,
            ),
            (
                json!({ "apiVersion": "example.com/v1", "kind": "Widget", "status": { "observedGeneration": 1 } }),
                true,
            ),
            (
                json!({ "apiVersion": "example.com/v1", "kind": "Deployment" }),
                false,
            ),
        ];
        for (object, expected) in rules {
            assert_eq!(
                has_rule(&object, LoadBalancers::Awaited),
                expected,
                "{object}"
            );
        }
    }

    #[test]
    fn a_kind_in_another_group_is_judged_by_its_conditions() {
        let fake = json!({
            "apiVersion": "example.com/v1", "kind": "Deployment",
            "metadata": { "name": "x" }, "spec": { "replicas": 3 }, "status": {},
        });
        assert_eq!(assess(&fake, LoadBalancers::Ignored), Readiness::Ready);
    }

    #[test]
    fn external_secrets_objects_wait_for_their_ready_condition() {
        let fresh = json!({
            "apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
            "metadata": { "name": "repo", "generation": 1 }, "spec": {},
        });
        assert!(has_rule(&fresh, LoadBalancers::Ignored));
        assert!(!assess(&fresh, LoadBalancers::Ignored).is_ready());
        let mut failing = fresh.clone();
        failing["status"] = json!({"conditions": [{"type": "Ready", "status": "False",
            "reason": "SecretSyncedError", "message": "could not get secret data from provider"}]});
        let said = assess(&failing, LoadBalancers::Ignored).to_string();
        assert!(said.contains("SecretSyncedError"), "{said}");
        let mut ready = fresh;
        ready["status"] = json!({"conditions": [{"type": "Ready", "status": "True"}]});
        assert!(assess(&ready, LoadBalancers::Ignored).is_ready());
    }

    #[test]
    fn gitops_objects_wait_for_their_controllers_word() {
        let kustomization = json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": { "name": "apps", "generation": 1 }, "spec": {},
        });
        assert!(has_rule(&kustomization, LoadBalancers::Ignored));
        assert!(!assess(&kustomization, LoadBalancers::Ignored).is_ready());
        let mut suspended = kustomization.clone();
        suspended["spec"]["suspend"] = json!(true);
        assert!(assess(&suspended, LoadBalancers::Ignored).is_ready());
        let mut ready = kustomization;
        ready["status"] = json!({"observedGeneration": 1,
            "conditions": [{"type": "Ready", "status": "True", "observedGeneration": 1}]});
        assert!(assess(&ready, LoadBalancers::Ignored).is_ready());

        let mut application = json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": { "name": "root" },
            "status": {"sync": {"status": "OutOfSync"}, "health": {"status": "Progressing"}},
        });
        assert_eq!(
            assess(&application, LoadBalancers::Ignored),
            Readiness::InProgress("sync OutOfSync, health Progressing".into())
        );
        application["status"] =
            json!({"sync": {"status": "Synced"}, "health": {"status": "Healthy"}});
        assert!(assess(&application, LoadBalancers::Ignored).is_ready());
        application["status"]["operationState"] =
            json!({"phase": "Failed", "message": "one or more objects failed to apply"});
        assert!(
            matches!(assess(&application, LoadBalancers::Ignored), Readiness::Failed(m) if m.contains("failed to apply"))
        );

        // As Argo CD's applicationset-controller words its conditions.
        let mut set = json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
            "metadata": { "name": "clusters" },
        });
        assert!(has_rule(&set, LoadBalancers::Ignored));
        assert!(!assess(&set, LoadBalancers::Ignored).is_ready());
        set["status"] = json!({"conditions": [
            {"type": "ErrorOccurred", "status": "False", "reason": "ApplicationSetUpToDate", "message": "Successfully generated parameters for all Applications"},
            {"type": "ResourcesUpToDate", "status": "True", "reason": "ApplicationSetUpToDate", "message": "ApplicationSet up to date"},
        ]});
        assert!(assess(&set, LoadBalancers::Ignored).is_ready());
        set["status"]["conditions"][0] = json!({"type": "ErrorOccurred", "status": "True",
            "reason": "ApplicationGenerationFromParamsError", "message": "failed to execute go template"});
        assert!(
            matches!(assess(&set, LoadBalancers::Ignored), Readiness::Failed(m) if m.contains("go template"))
        );
    }

    #[test]
    fn a_load_balancer_address_is_awaited_only_when_asked() {
        let service = json!({
            "apiVersion": "v1", "kind": "Service", "metadata": { "name": "ingress" },
            "spec": { "type": "LoadBalancer" }, "status": { "loadBalancer": {} },
        });
        assert!(!has_rule(&service, LoadBalancers::Ignored));
        assert_eq!(assess(&service, LoadBalancers::Ignored), Readiness::Ready);
        assert!(has_rule(&service, LoadBalancers::Awaited));
        assert!(!assess(&service, LoadBalancers::Awaited).is_ready());
    }

    #[test]
    fn a_pods_cause_is_the_schedulers_or_the_kubelets_word() {
        // As kube-scheduler and the kubelet word them (v1.37).
        let unschedulable = json!({"status": {"phase": "Pending", "conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."}]}});
        assert_eq!(
            pod_cause(&unschedulable).unwrap(),
            "Unschedulable: 0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
        );
        let pull = json!({"status": {"containerStatuses": [{"name": "app",
            "state": {"waiting": {"reason": "ImagePullBackOff",
                "message": "Back-off pulling image \"web:typo\""}}}]}});
        assert_eq!(
            pod_cause(&pull).unwrap(),
            "container `app`: ImagePullBackOff: Back-off pulling image \"web:typo\""
        );
        let crash = json!({"status": {"containerStatuses": [
            {"name": "ok", "state": {"running": {}}},
            {"name": "app", "state": {"waiting": {"reason": "CrashLoopBackOff"}},
             "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]}});
        assert_eq!(
            pod_cause(&crash).unwrap(),
            "container `app`: CrashLoopBackOff (last exit: OOMKilled, code 137)"
        );
        let starting = json!({"status": {"containerStatuses": [{"name": "app",
            "state": {"waiting": {"reason": "ContainerCreating"}}}]}});
        assert_eq!(pod_cause(&starting), None);
    }
}
