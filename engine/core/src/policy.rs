//! What Tazuna does to an object it applied before: the object policy an
//! object carries as an annotation, and the hand-over of a manifest's
//! objects to a GitOps controller (`handover:`). One pure function,
//! [`decide`], called by `apply` (to act), by `plan` and `state drift` (to
//! predict and to stay quiet), so what plan says is what apply does.
//!
//! - `tazuna.dev/apply: create-only` on an object: Tazuna creates it when
//!   it is missing and never updates it, as Flux's
//!   `kustomize.toolkit.fluxcd.io/ssa: IfNotPresent` does.
//! - `handover: {to: flux, after: ready}` on a manifest: once an apply of
//!   the manifest succeeded (its objects ready, with `after: ready`), the
//!   state records each covered object as handed over, to whom and when.
//!   From then on the object is create-only, `plan` and `state drift` do
//!   not compare it, and prune and destroy leave it (see the prune
//!   verdict). Removing `handover:` from the manifest takes the objects
//!   back: the next apply sends them again.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::inventory::ObjectRef;

/// The annotation that sets an object's apply policy.
pub const APPLY_ANNOTATION: &str = "tazuna.dev/apply";

/// The annotation that lists fields of an object Tazuna leaves to others,
/// separated by commas: JSON pointers (`/spec/replicas`), or every field a
/// field manager owns live (`manager:<name>`), as Argo CD's
/// `ignoreDifferences` with `RespectIgnoreDifferences`: on an object that
/// exists, apply sends their live values (or leaves them out when live has
/// none), and `plan` and `state drift` do not compare them.
pub const IGNORE_ANNOTATION: &str = "tazuna.dev/ignore";

/// The fields that make an object's identity (and the whole of its
/// metadata): never left to others by [`IGNORE_ANNOTATION`].
const IDENTITY: [&str; 5] = [
    "/apiVersion",
    "/kind",
    "/metadata",
    "/metadata/name",
    "/metadata/namespace",
];

/// The values [`APPLY_ANNOTATION`] may hold, each with what it does.
pub const APPLY_POLICIES: [(&str, &str); 3] = [
    (
        "always",
        "sent on every apply that changes it (the default)",
    ),
    (
        "create-only",
        "created when missing, never updated (`IfNotPresent`)",
    ),
    (
        "replace",
        "sent whole as an update instead of a server-side apply: what it does not list is removed, whoever set it",
    ),
];

/// The GitOps controller a manifest's objects are handed over to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Controller {
    /// Flux (its kustomize-controller and helm-controller).
    #[serde(rename = "flux")]
    Flux,
    /// Argo CD.
    #[serde(rename = "argocd")]
    ArgoCd,
}

impl fmt::Display for Controller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Flux => "Flux",
            Self::ArgoCd => "Argo CD",
        })
    }
}

/// When the hand-over happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum After {
    /// Once the covered objects are sent; they are not waited for (a root
    /// `Kustomization` whose source is pushed later).
    Applied,
    /// Once they are ready, as the manifest's `wait` waits (the default).
    #[default]
    Ready,
}

/// A manifest's `handover:`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handover {
    /// Who takes the objects over.
    pub to: Controller,
    /// When.
    pub after: After,
    /// The objects it covers, as `<Kind>/<name>` (in any namespace) or
    /// `<Kind>/<namespace>/<name>`; empty: every object of the manifest.
    pub objects: Vec<String>,
}

impl Handover {
    /// Whether it covers `object`.
    pub fn covers(&self, object: &ObjectRef) -> bool {
        self.objects.is_empty() || names(&self.objects, object)
    }
}

/// Whether `list` names `object`, as `<Kind>/<name>` (in any namespace) or
/// `<Kind>/<namespace>/<name>`: `handover.objects`, and the handed-over
/// objects `--delete-handed-over` lets prune and destroy delete.
pub fn names(list: &[String], object: &ObjectRef) -> bool {
    list.iter().any(|named| {
        let parts: Vec<&str> = named.split('/').collect();
        match parts.as_slice() {
            [kind, name] => *kind == object.kind && *name == object.name,
            [kind, namespace, name] => {
                *kind == object.kind
                    && object.namespace.as_deref() == Some(*namespace)
                    && *name == object.name
            }
            _ => false,
        }
    })
}

/// What the state records of an object handed over.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandedOver {
    /// To whom.
    pub to: Controller,
    /// When (RFC 3339): the end of the first apply that handed it over.
    pub at: String,
}

impl fmt::Display for HandedOver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "handed over to {} at {}", self.to, self.at)
    }
}

/// What apply sends of one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Sent whenever it changed: the usual server-side apply.
    Apply,
    /// Created when missing, else left as it is live: not sent, not
    /// compared by `plan` and `state drift`.
    CreateOnly(Why),
    /// Sent whole as an update (`PUT`, Argo CD's `Replace=true`), or
    /// created when missing: what it does not list goes, whoever set it.
    Replace,
}

/// Why an object is create-only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why {
    /// Its [`APPLY_ANNOTATION`] says so.
    Annotated,
    /// It was handed over.
    HandedOver(HandedOver),
}

impl Decision {
    /// Whether apply sends the object, which exists live or not.
    pub fn sends(&self, exists: bool) -> bool {
        match self {
            Self::Apply | Self::Replace => true,
            Self::CreateOnly(_) => !exists,
        }
    }

    /// What apply, plan and status say of an object left as it is.
    pub fn note(&self) -> Option<String> {
        match self {
            Self::Apply | Self::Replace => None,
            Self::CreateOnly(Why::Annotated) => Some(format!(
                "create-only (`{APPLY_ANNOTATION}`); exists, not sent"
            )),
            Self::CreateOnly(Why::HandedOver(handed)) => Some(format!("{handed}; not sent")),
        }
    }
}

/// An object policy Tazuna does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{object}: annotation `{annotation}` is `{value}`, which Tazuna does not know")]
pub struct PolicyError {
    /// The object.
    pub object: Box<ObjectRef>,
    /// The annotation.
    pub annotation: &'static str,
    /// What the annotation holds.
    pub value: String,
}

impl crate::hint::Hint for PolicyError {
    fn hint(&self) -> Option<String> {
        if self.annotation == IGNORE_ANNOTATION {
            return Some(format!(
                "list JSON pointers or `manager:<field manager>` separated by commas, such as `{IGNORE_ANNOTATION}: /spec/replicas,/metadata/annotations/example.com~1owner` (`~1` stands for `/` in a key) or `{IGNORE_ANNOTATION}: manager:kube-controller-manager`"
            ));
        }
        let known: Vec<String> = APPLY_POLICIES
            .iter()
            .map(|(value, what)| format!("`{value}` ({what})"))
            .collect();
        Some(format!("use one of {}", known.join(", ")))
    }
}

/// The fields `rendered` leaves to others ([`IGNORE_ANNOTATION`]): JSON
/// pointers and `manager:<name>` entries ([`resolve`] turns these into
/// pointers on the live object); empty without the annotation.
pub fn ignored(rendered: &Value) -> Result<Vec<String>, PolicyError> {
    let Some(list) = annotation(rendered, IGNORE_ANNOTATION) else {
        return Ok(Vec::new());
    };
    let pointers: Vec<String> = list
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect();
    // A pointer names a field below the object's identity.
    let bad = pointers.is_empty()
        || pointers.iter().any(|p| match p.strip_prefix("manager:") {
            Some(manager) => manager.trim().is_empty(),
            None => !p.starts_with('/') || p.ends_with('/') || IDENTITY.contains(&p.as_str()),
        });
    if bad {
        return Err(PolicyError {
            object: Box::new(identity(rendered)),
            annotation: IGNORE_ANNOTATION,
            value: list.to_owned(),
        });
    }
    Ok(pointers)
}

/// The JSON pointers of `ignored` on `live`: its pointers, and for each
/// `manager:<name>` every field that manager owns in `live`'s
/// `managedFields` (of the object itself, or of its `scale` subresource,
/// through which autoscalers write), down to the leaves.
pub fn resolve(ignored: &[String], live: &Value) -> Vec<String> {
    let mut pointers = Vec::new();
    for entry in ignored {
        match entry.strip_prefix("manager:") {
            None => pointers.push(entry.clone()),
            Some(manager) => {
                let managed = live
                    .pointer("/metadata/managedFields")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|f| f.get("manager").and_then(Value::as_str) == Some(manager.trim()))
                    .filter(|f| {
                        matches!(
                            f.get("subresource").and_then(Value::as_str).unwrap_or(""),
                            "" | "scale"
                        )
                    });
                for fields in managed.filter_map(|f| f.get("fieldsV1")) {
                    owned(fields, live, String::new(), &mut pointers);
                }
            }
        }
    }
    // Nothing of the identity, whoever owns it.
    pointers.retain(|p| !p.is_empty() && !IDENTITY.contains(&p.as_str()));
    pointers.sort();
    pointers.dedup();
    pointers
}

/// The leaves of a `fieldsV1` tree at `at` (a JSON pointer into `live`):
/// `f:<name>` is a field, `k:<keys>` the element of a list whose fields
/// match, `v:<value>` the element equal to it, `i:<n>` the n-th; `.` owns
/// the node itself.
fn owned(tree: &Value, live: &Value, at: String, out: &mut Vec<String>) {
    let Some(children) = tree.as_object() else {
        return;
    };
    if children.is_empty() || children.contains_key(".") {
        out.push(at.clone());
    }
    for (key, child) in children {
        let next = if let Some(name) = key.strip_prefix("f:") {
            Some(format!(
                "{at}/{}",
                name.replace('~', "~0").replace('/', "~1")
            ))
        } else if let Some(index) = key.strip_prefix("i:") {
            Some(format!("{at}/{index}"))
        } else if let Some(wanted) = key.strip_prefix("k:").or_else(|| key.strip_prefix("v:")) {
            let by_keys = key.starts_with("k:");
            let wanted: Option<Value> = serde_json::from_str(wanted).ok();
            live.pointer(&at)
                .and_then(Value::as_array)
                .zip(wanted)
                .and_then(|(items, wanted)| {
                    items.iter().position(|item| {
                        if by_keys {
                            wanted.as_object().is_some_and(|keys| {
                                keys.iter().all(|(k, v)| item.get(k) == Some(v))
                            })
                        } else {
                            *item == wanted
                        }
                    })
                })
                .map(|index| format!("{at}/{index}"))
        } else {
            None
        };
        if let Some(next) = next {
            owned(child, live, next, out);
        }
    }
}

/// `sent` with each `ignored` field as it is `live`: the live value, or
/// none where live has none. What apply sends of an object that exists.
pub fn keep_live(sent: &mut Value, live: &Value, ignored: &[String]) {
    for pointer in ignored {
        match live.pointer(pointer) {
            Some(value) => set(sent, pointer, value.clone()),
            None => remove(sent, pointer),
        }
    }
}

/// `value` without the `ignored` fields: what `plan` and `state drift`
/// compare.
pub fn without(value: &Value, ignored: &[String]) -> Value {
    let mut copy = value.clone();
    for pointer in ignored {
        remove(&mut copy, pointer);
    }
    copy
}

/// The reference tokens of a JSON pointer, unescaped (RFC 6901).
fn tokens(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// The value that holds the field `tokens` names, and the field's last
/// token; `None` where the path to it is not there.
fn parent<'a, 't>(
    value: &'a mut Value,
    tokens: &'t [String],
    create: bool,
) -> Option<(&'a mut Value, &'t str)> {
    let (last, parents) = tokens.split_last()?;
    let mut at = value;
    for token in parents {
        at = match at {
            Value::Object(map) => {
                if create && !map.contains_key(token) {
                    map.insert(token.clone(), Value::Object(serde_json::Map::new()));
                }
                map.get_mut(token)?
            }
            Value::Array(items) => items.get_mut(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some((at, last))
}

fn set(value: &mut Value, pointer: &str, new: Value) {
    let tokens = tokens(pointer);
    match parent(value, &tokens, true) {
        Some((Value::Object(map), last)) => {
            map.insert(last.to_owned(), new);
        }
        Some((Value::Array(items), last)) => {
            if let Some(item) = last.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                *item = new;
            }
        }
        _ => {}
    }
}

fn remove(value: &mut Value, pointer: &str) {
    let tokens = tokens(pointer);
    match parent(value, &tokens, false) {
        Some((Value::Object(map), last)) => {
            map.remove(last);
        }
        Some((Value::Array(items), last)) => {
            if let Some(i) = last.parse::<usize>().ok().filter(|i| *i < items.len()) {
                items.remove(i);
            }
        }
        _ => {}
    }
}

fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

fn identity(object: &Value) -> ObjectRef {
    ObjectRef::of(object).unwrap_or_else(|| ObjectRef {
        group: String::new(),
        version: String::new(),
        kind: String::new(),
        namespace: None,
        name: String::new(),
    })
}

/// What apply does to `rendered` (as the manifest renders it now), which
/// the manifest's `handover` may cover and which state may record as
/// `recorded` (handed over before).
///
/// - Annotated `create-only`: create-only.
/// - Covered by `handover` and recorded as handed over: create-only.
/// - Covered but not recorded yet (the first apply): applied, and recorded
///   as handed over once the manifest succeeds.
/// - Recorded but no longer covered (the user took it back): applied.
pub fn decide(
    rendered: &Value,
    handover: Option<&Handover>,
    recorded: Option<&HandedOver>,
) -> Result<Decision, PolicyError> {
    let object = ObjectRef::of(rendered);
    match annotation(rendered, APPLY_ANNOTATION) {
        None | Some("always") => {}
        Some("create-only") => return Ok(Decision::CreateOnly(Why::Annotated)),
        Some("replace") => {
            // Handed over, the controller's word still wins.
            let covered = handover
                .zip(object.as_ref())
                .is_some_and(|(h, o)| h.covers(o));
            return Ok(match recorded {
                Some(handed) if covered => Decision::CreateOnly(Why::HandedOver(handed.clone())),
                _ => Decision::Replace,
            });
        }
        Some(other) => {
            return Err(PolicyError {
                object: Box::new(identity(rendered)),
                annotation: APPLY_ANNOTATION,
                value: other.to_owned(),
            });
        }
    }
    let covered = handover
        .zip(object.as_ref())
        .is_some_and(|(h, o)| h.covers(o));
    match recorded {
        Some(handed) if covered => Ok(Decision::CreateOnly(Why::HandedOver(handed.clone()))),
        _ => Ok(Decision::Apply),
    }
}

/// What a GitOps controller says of an object it reconciles, as `status`
/// shows a handed-over object: a Flux object's `Ready` condition and
/// revision, an Argo CD `Application`'s sync and health. `None` for other
/// kinds.
pub fn controller_view(live: &Value) -> Option<String> {
    let api_version = live.get("apiVersion")?.as_str()?;
    let group = api_version.split_once('/').map_or("", |(group, _)| group);
    let kind = live.get("kind")?.as_str()?;
    let text = |pointer: &str| live.pointer(pointer).and_then(Value::as_str);
    if group.ends_with(".toolkit.fluxcd.io") {
        let ready = live
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"));
        let mut view = match ready {
            Some(condition) => {
                let field = |key: &str| condition.get(key).and_then(Value::as_str).unwrap_or("");
                format!(
                    "Flux: Ready={} ({}): {}",
                    field("status"),
                    field("reason"),
                    field("message")
                )
            }
            None => "Flux: no Ready condition yet".to_owned(),
        };
        if let Some(revision) =
            text("/status/lastAppliedRevision").or_else(|| text("/status/artifact/revision"))
        {
            view.push_str(&format!("; revision `{revision}`"));
        }
        if live.pointer("/spec/suspend") == Some(&Value::Bool(true)) {
            view.push_str("; suspended");
        }
        return Some(view);
    }
    if group == "argoproj.io" && kind == "ApplicationSet" {
        let up_to_date = live
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|c| c.get("type").and_then(Value::as_str) == Some("ResourcesUpToDate"));
        return Some(match up_to_date {
            Some(c) => format!(
                "Argo CD: ResourcesUpToDate={}: {}",
                c.get("status").and_then(Value::as_str).unwrap_or(""),
                c.get("message").and_then(Value::as_str).unwrap_or("")
            ),
            None => "Argo CD: no ResourcesUpToDate condition yet".to_owned(),
        });
    }
    if group == "argoproj.io" && kind == "Application" {
        let mut view = format!(
            "Argo CD: sync {}, health {}",
            text("/status/sync/status").unwrap_or("unknown"),
            text("/status/health/status").unwrap_or("unknown")
        );
        if let Some(revision) = text("/status/sync/revision") {
            view.push_str(&format!(" at `{revision}`"));
        }
        if let Some(phase) = text("/status/operationState/phase") {
            view.push_str(&format!("; last sync {phase}"));
        }
        return Some(view);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(annotations: Value) -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "apps", "annotations": annotations},
        })
    }

    fn flux(objects: &[&str]) -> Handover {
        Handover {
            to: Controller::Flux,
            after: After::Ready,
            objects: objects.iter().map(|o| (*o).to_owned()).collect(),
        }
    }

    fn handed() -> HandedOver {
        HandedOver {
            to: Controller::Flux,
            at: "2026-12-07T00:00:00Z".to_owned(),
        }
    }

    #[test]
    fn without_a_policy_an_object_is_applied() {
        assert_eq!(
            decide(&deployment(json!({})), None, None),
            Ok(Decision::Apply)
        );
        let always = deployment(json!({APPLY_ANNOTATION: "always"}));
        assert_eq!(decide(&always, None, None), Ok(Decision::Apply));
    }

    #[test]
    fn a_create_only_object_is_sent_only_when_missing() {
        let object = deployment(json!({APPLY_ANNOTATION: "create-only"}));
        let decision = decide(&object, None, None).unwrap();
        assert_eq!(decision, Decision::CreateOnly(Why::Annotated));
        assert!(decision.sends(false));
        assert!(!decision.sends(true));
    }

    #[test]
    fn an_unknown_policy_is_refused_with_the_known_ones() {
        let object = deployment(json!({APPLY_ANNOTATION: "IfNotPresent"}));
        let error = decide(&object, None, None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "apps/v1 Deployment apps/web: annotation `tazuna.dev/apply` is `IfNotPresent`, which Tazuna does not know"
        );
        let hint = crate::hint::Hint::hint(&error).unwrap();
        assert!(hint.contains("`create-only`"), "{hint}");
    }

    #[test]
    fn a_covered_object_is_applied_until_its_hand_over_is_recorded() {
        let object = deployment(json!({}));
        assert_eq!(decide(&object, Some(&flux(&[])), None), Ok(Decision::Apply));
        assert_eq!(
            decide(&object, Some(&flux(&[])), Some(&handed())),
            Ok(Decision::CreateOnly(Why::HandedOver(handed())))
        );
    }

    #[test]
    fn a_hand_over_no_longer_declared_is_taken_back() {
        let object = deployment(json!({}));
        assert_eq!(decide(&object, None, Some(&handed())), Ok(Decision::Apply));
        let other = flux(&["Deployment/apps/api"]);
        assert_eq!(
            decide(&object, Some(&other), Some(&handed())),
            Ok(Decision::Apply)
        );
    }

    #[test]
    fn a_hand_over_covers_the_objects_it_names() {
        let web = ObjectRef::of(&deployment(json!({}))).unwrap();
        assert!(flux(&[]).covers(&web));
        assert!(flux(&["Deployment/apps/web"]).covers(&web));
        assert!(flux(&["Deployment/web"]).covers(&web));
        assert!(!flux(&["Deployment/other/web"]).covers(&web));
        assert!(!flux(&["StatefulSet/apps/web"]).covers(&web));
        assert!(!flux(&["Deployment/apps/api"]).covers(&web));
        let namespace = ObjectRef {
            group: String::new(),
            version: "v1".to_owned(),
            kind: "Namespace".to_owned(),
            namespace: None,
            name: "apps".to_owned(),
        };
        assert!(flux(&["Namespace/apps"]).covers(&namespace));
        assert!(!flux(&["Namespace/x/apps"]).covers(&namespace));
    }

    #[test]
    fn the_controller_view_is_its_own_words() {
        let kustomization = json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": "apps", "namespace": "flux-system"},
            "spec": {"suspend": true},
            "status": {
                "lastAppliedRevision": "latest@sha256:ab",
                "conditions": [{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded", "message": "Applied revision: latest@sha256:ab"}],
            },
        });
        assert_eq!(
            controller_view(&kustomization).unwrap(),
            "Flux: Ready=True (ReconciliationSucceeded): Applied revision: latest@sha256:ab; revision `latest@sha256:ab`; suspended"
        );
        let fresh = json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "OCIRepository"});
        assert_eq!(
            controller_view(&fresh).unwrap(),
            "Flux: no Ready condition yet"
        );
        let application = json!({
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Application",
            "status": {
                "sync": {"status": "Synced", "revision": "abc123"},
                "health": {"status": "Healthy"},
                "operationState": {"phase": "Succeeded"},
            },
        });
        assert_eq!(
            controller_view(&application).unwrap(),
            "Argo CD: sync Synced, health Healthy at `abc123`; last sync Succeeded"
        );
        assert_eq!(controller_view(&deployment(json!({}))), None);
    }

    #[test]
    fn ignored_fields_are_json_pointers_below_the_identity() {
        let object =
            deployment(json!({IGNORE_ANNOTATION: "/spec/replicas, /metadata/annotations/a~1b"}));
        assert_eq!(
            ignored(&object).unwrap(),
            ["/spec/replicas", "/metadata/annotations/a~1b"]
        );
        assert_eq!(
            ignored(&deployment(json!({}))).unwrap(),
            Vec::<String>::new()
        );
        for bad in [
            "spec.replicas",
            "/metadata/name",
            "/",
            "",
            "/kind",
            "/spec/",
        ] {
            let error = ignored(&deployment(json!({IGNORE_ANNOTATION: bad}))).unwrap_err();
            assert_eq!(error.annotation, IGNORE_ANNOTATION, "{bad}");
            let hint = crate::hint::Hint::hint(&error).unwrap();
            assert!(hint.contains("JSON pointers"), "{hint}");
        }
    }

    #[test]
    fn an_ignored_field_is_sent_as_it_is_live_and_not_compared() {
        let ignored = vec![
            "/spec/replicas".to_owned(),
            "/metadata/annotations/a~1b".to_owned(),
            "/spec/paused".to_owned(),
        ];
        let mut sent =
            json!({"metadata": {"name": "web"}, "spec": {"replicas": 1, "paused": true}});
        let live = json!({"metadata": {"name": "web", "annotations": {"a/b": "x"}}, "spec": {"replicas": 5}});
        keep_live(&mut sent, &live, &ignored);
        assert_eq!(
            sent,
            json!({"metadata": {"name": "web", "annotations": {"a/b": "x"}}, "spec": {"replicas": 5}})
        );
        let other = json!({"metadata": {"name": "web", "annotations": {"a/b": "y"}}, "spec": {"replicas": 9, "paused": false}});
        assert_eq!(without(&sent, &ignored), without(&other, &ignored));
        // Arrays by index; what does not exist is left alone.
        let mut list = json!({"spec": {"ports": [{"port": 80}, {"port": 81}]}});
        keep_live(
            &mut list,
            &json!({"spec": {"ports": [{"port": 80}, {"port": 8081}]}}),
            &[
                "/spec/ports/1/port".to_owned(),
                "/spec/ports/7/port".to_owned(),
            ],
        );
        assert_eq!(
            list,
            json!({"spec": {"ports": [{"port": 80}, {"port": 8081}]}})
        );
    }

    #[test]
    fn a_replaced_object_is_sent_whole_until_it_is_handed_over() {
        let object = deployment(json!({APPLY_ANNOTATION: "replace"}));
        assert_eq!(decide(&object, None, None), Ok(Decision::Replace));
        assert!(Decision::Replace.sends(true));
        assert_eq!(
            decide(&object, Some(&flux(&[])), Some(&handed())),
            Ok(Decision::CreateOnly(Why::HandedOver(handed())))
        );
    }

    #[test]
    fn a_managers_fields_are_ignored_down_to_the_leaves() {
        let object = deployment(json!({IGNORE_ANNOTATION: "manager:hpa, /spec/paused"}));
        let ignore = ignored(&object).unwrap();
        assert_eq!(ignore, ["manager:hpa", "/spec/paused"]);
        assert!(ignored(&deployment(json!({IGNORE_ANNOTATION: "manager: "}))).is_err());
        // As the API server records them (a Deployment scaled through its
        // `scale` subresource, a container's image set by a list key).
        let live = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "managedFields": [
                {"manager": "hpa", "operation": "Update", "subresource": "scale",
                 "fieldsV1": {"f:spec": {"f:replicas": {}}}},
                {"manager": "hpa", "operation": "Update", "subresource": "status",
                 "fieldsV1": {"f:status": {"f:replicas": {}}}},
                {"manager": "hpa", "operation": "Apply",
                 "fieldsV1": {"f:metadata": {"f:annotations": {"f:a/b": {}}},
                   "f:spec": {"f:template": {"f:spec": {"f:containers": {
                     "k:{\"name\":\"app\"}": {".": {}, "f:image": {}}}}}}}},
                {"manager": "other", "operation": "Apply", "fieldsV1": {"f:spec": {"f:paused": {}}}},
            ]},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [
                {"name": "sidecar"}, {"name": "app", "image": "web:2"}]}}},
        });
        assert_eq!(
            resolve(&ignore, &live),
            [
                "/metadata/annotations/a~1b",
                "/spec/paused",
                "/spec/replicas",
                "/spec/template/spec/containers/1",
                "/spec/template/spec/containers/1/image",
            ]
        );
    }
}
