//! The prune verdict: what happens to an object a manifest no longer
//! renders, or to every object of a stack that is destroyed. One pure
//! function, [`verdict`], called by `plan` (to predict), by `apply --prune`
//! and by `destroy` (to act), so what plan says is what apply does.
//!
//! Which stack may prune an object at all (not one another stack's state
//! records) is [`crate::ownership`]'s question, asked before this one.

use serde_json::Value;
use tazuna_core::inventory::ObjectRef;
use tazuna_core::policy::Controller;

use crate::objects::BOOTSTRAP_LABEL;
use crate::objects::{MANIFEST_ANNOTATION, PRUNE_ANNOTATION, is_tazunas};

/// Whether objects no longer rendered are deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Prune {
    /// Only manifests with `prune: true`.
    Off,
    /// Every manifest (`--prune`), except Namespaces, CRDs and PVCs.
    On,
    /// Including Namespaces, CRDs and PVCs (`--prune-dangerous`).
    Dangerous,
}

/// What happens to an object `manifest` recorded and no longer renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Gone already, never written by Tazuna, or applied since by another
    /// manifest: nothing to delete, and the record is forgotten.
    NotOurs,
    /// Annotated `tazuna.dev/prune: disabled`: kept, and Tazuna stops
    /// managing it.
    Released,
    /// The control plane made it (see [`kept_by_control_plane`]): never
    /// deleted, and the record is forgotten.
    ControlPlane,
    /// It existed before this stack first applied it, and not everyone
    /// who had written it deploys from files ([`DEPLOY_TOOLS`]): a
    /// component or a controller made it or keeps it, and the stack only
    /// added to it. Never deleted, and the record is forgotten.
    Adopted,
    /// Its controller is another object now (an `ownerReferences` entry
    /// with `controller: true`, such as the ExternalSecret that took a
    /// Secret over when its provider handed its sync to External Secrets
    /// Operator): never deleted, and the record is forgotten. Deleting it
    /// would race its controller, and the garbage collector removes it with
    /// its owner.
    Controlled,
    /// Handed over to a GitOps controller (the manifest's `handover:`),
    /// which owns it now: never deleted, and the record is forgotten.
    HandedOver(Controller),
    /// Deleted when the run's prune level is at least `needs`.
    Delete {
        /// [`Prune::Dangerous`] for what holds data, else [`Prune::On`].
        needs: Prune,
    },
}

/// What state recorded of an object, as far as deleting it goes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Recorded<'a> {
    /// Who had written it when the stack first applied it ([`writers`];
    /// empty: Tazuna made it).
    pub adopted_from: &'a [String],
    /// The controller it was handed over to, if it was.
    pub handed_over: Option<Controller>,
}

impl<'a> Recorded<'a> {
    /// As recorded, or, when the user `named` the object to be deleted
    /// although it was handed over (`--delete-handed-over`), as an object
    /// Tazuna still manages.
    pub fn asked_by_name(mut self, named: bool) -> Self {
        if named {
            self.handed_over = None;
        }
        self
    }

    /// What `entry` recorded.
    pub fn of(entry: &'a crate::state::Entry) -> Self {
        Self {
            adopted_from: &entry.adopted_from,
            handed_over: entry.handover.as_ref().map(|h| h.to),
        }
    }
}

/// The prune verdict for `object`, recorded by `manifest` as `recorded`,
/// as it is `live` (`None`: it does not exist).
pub fn verdict(
    object: &ObjectRef,
    manifest: &str,
    live: Option<&Value>,
    recorded: Recorded<'_>,
) -> Verdict {
    let Some(live) = live else {
        return Verdict::NotOurs;
    };
    let annotation = |key: &str| {
        live.pointer("/metadata/annotations")
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
    };
    if annotation(PRUNE_ANNOTATION) == Some("disabled") {
        return Verdict::Released;
    }
    let written_by = annotation(MANIFEST_ANNOTATION);
    if written_by.is_some_and(|other| other != manifest) {
        return Verdict::NotOurs;
    }
    let by_tazuna = written_by.is_some()
        || live
            .pointer("/metadata/managedFields")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|f| {
                f.get("manager")
                    .and_then(Value::as_str)
                    .is_some_and(is_tazunas)
            });
    if !by_tazuna {
        return Verdict::NotOurs;
    }
    if kept_by_control_plane(object, live) {
        return Verdict::ControlPlane;
    }
    if controller_of(live).is_some() {
        return Verdict::Controlled;
    }
    unread(object, recorded)
}

/// The `kind/name` of `live`'s controller (its `ownerReferences` entry with
/// `controller: true`), if it has one.
pub fn controller_of(live: &Value) -> Option<String> {
    live.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|owner| owner.get("controller") == Some(&Value::Bool(true)))
        .map(|owner| {
            format!(
                "{}/{}",
                owner
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                owner
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            )
        })
}

/// The verdict for an object recorded as `recorded` that is not read
/// (plan of a removed manifest, or a read that failed): what prune and
/// destroy do if it is still the manifest's.
pub fn unread(object: &ObjectRef, recorded: Recorded<'_>) -> Verdict {
    if let Some(controller) = recorded.handed_over {
        return Verdict::HandedOver(controller);
    }
    let adopted_from = recorded.adopted_from;
    if !adopted_from.is_empty() && !deployed(adopted_from) {
        return Verdict::Adopted;
    }
    Verdict::Delete {
        needs: needs(object),
    }
}

/// The prune level that deletes `object`: Namespaces, CRDs and PVCs hold
/// data, so they need [`Prune::Dangerous`].
pub fn needs(object: &ObjectRef) -> Prune {
    let holds_data = matches!(
        (object.group.as_str(), object.kind.as_str()),
        ("", "Namespace")
            | ("apiextensions.k8s.io", "CustomResourceDefinition")
            | ("", "PersistentVolumeClaim")
    );
    if holds_data {
        Prune::Dangerous
    } else {
        Prune::On
    }
}

/// The field managers of the tools that write objects from files, by
/// allow-list: an object a stack adopted is deleted by prune and destroy
/// only if these (or Tazuna) alone had written it before. Anything else
/// (the API server, the kubelet, an operator, `kubectl label`) made it or
/// keeps it, so it stays. Each with the reason it is here.
pub const DEPLOY_TOOLS: [(&str, &str); 12] = [
    ("kubectl", "`kubectl apply --server-side`"),
    ("kubectl-client-side-apply", "`kubectl apply`"),
    ("kubectl-create", "`kubectl create`"),
    ("kubectl-replace", "`kubectl replace`"),
    ("kubectl-run", "`kubectl run`"),
    ("kubectl-expose", "`kubectl expose`"),
    ("helm", "Helm's install and upgrade"),
    (
        "kustomize-controller",
        "Flux applies a Kustomization's files",
    ),
    ("helm-controller", "Flux installs a HelmRelease's chart"),
    ("argocd-controller", "Argo CD syncs an Application's files"),
    (
        "Terraform",
        "Terraform's and OpenTofu's kubernetes provider",
    ),
    ("pulumi-kubernetes", "Pulumi's kubernetes provider"),
];

/// Who had written `live`'s object itself (not a subresource such as
/// `status`), other than `except` (the stack's own manager, which just
/// wrote): recorded when a stack first applies an object, so that prune and
/// destroy know whether it made it. Sorted, each once; empty when nobody
/// else had.
pub fn writers(live: &Value, except: &str) -> Vec<String> {
    let mut writers: Vec<String> = live
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|f| {
            f.get("subresource")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        })
        .filter_map(|f| f.get("manager").and_then(Value::as_str))
        .filter(|m| *m != except)
        .map(str::to_owned)
        .collect();
    writers.sort();
    writers.dedup();
    writers
}

/// Whether every one of `writers` deploys from files ([`DEPLOY_TOOLS`], or
/// Tazuna: another stack, an earlier Tazuna). One other writer (the API
/// server that made it, a controller, `kubectl label`) is enough to keep
/// it: a deploy tool's name beside it, or a stack that only labelled it,
/// says nothing of who made it. `false` for nobody.
pub fn deployed(writers: &[String]) -> bool {
    !writers.is_empty()
        && writers
            .iter()
            .all(|w| is_tazunas(w) || DEPLOY_TOOLS.iter().any(|(tool, _)| tool == w))
}

/// Objects the API server or the control plane's controllers make and
/// need, which no prune or destroy deletes even when Tazuna applied to
/// them: the bootstrap RBAC policy (label `kubernetes.io/bootstrapping:
/// rbac-defaults`, `system:` names), the `system-` PriorityClasses, the
/// control plane's namespaces and `default`, the `kubernetes` Service and
/// its endpoints, every namespace's `kube-root-ca.crt` and `default`
/// ServiceAccount, and Nodes (each stands for a machine; a file only
/// labels it).
pub fn kept_by_control_plane(object: &ObjectRef, live: &Value) -> bool {
    const NAMESPACES: [&str; 4] = ["kube-system", "kube-public", "kube-node-lease", "default"];
    let bootstrap = live
        .pointer("/metadata/labels")
        .and_then(|labels| labels.get(BOOTSTRAP_LABEL))
        .and_then(Value::as_str)
        == Some("rbac-defaults");
    let name = object.name.as_str();
    let namespace = object.namespace.as_deref();
    let made = match (object.group.as_str(), object.kind.as_str()) {
        ("", "Namespace") => NAMESPACES.contains(&name),
        ("scheduling.k8s.io", "PriorityClass") => name.starts_with("system-"),
        ("", "Service" | "Endpoints") | ("discovery.k8s.io", "EndpointSlice") => {
            namespace == Some("default") && name == "kubernetes"
        }
        ("", "ConfigMap") => name == "kube-root-ca.crt",
        ("", "ServiceAccount") => name == "default",
        ("", "Node") => true,
        _ => false,
    };
    bootstrap || name.starts_with("system:") || made
}

impl Verdict {
    /// Why the object stays, when it does at `prune`; `None` when it is
    /// deleted or was never there to delete.
    pub fn kept_because(
        self,
        object: &ObjectRef,
        prune: Prune,
        prunes_itself: bool,
    ) -> Option<String> {
        match self {
            Verdict::NotOurs => None,
            Verdict::Released => Some(format!(
                "annotated `{PRUNE_ANNOTATION}: disabled`; Tazuna stops managing it"
            )),
            Verdict::ControlPlane => Some(
                "the control plane made it and needs it; Tazuna never deletes it and stops \
                 tracking it"
                    .to_owned(),
            ),
            Verdict::Adopted => Some(
                "it existed before this stack applied it, and not only tools that deploy from \
                 files had written it (docs/apply.md, \"Adopted objects\"); Tazuna never \
                 deletes it and stops tracking it"
                    .to_owned(),
            ),
            Verdict::Controlled => Some(
                "another object controls it now (its `ownerReferences`); Tazuna never deletes it \
                 and stops tracking it"
                    .to_owned(),
            ),
            Verdict::HandedOver(controller) => Some(format!(
                "handed over to {controller}, which owns it now; Tazuna never deletes it and \
                 stops tracking it"
            )),
            Verdict::Delete { needs } if prune >= needs => None,
            Verdict::Delete {
                needs: Prune::Dangerous,
            } => Some(format!(
                "a {} is only pruned with `--prune-dangerous`",
                object.kind
            )),
            Verdict::Delete { .. } if prunes_itself => None,
            Verdict::Delete { .. } => {
                Some("no longer rendered; pass `--prune` to delete it".to_owned())
            }
        }
    }

    /// Whether a kept object's record stays in state.
    pub fn tracked(self) -> bool {
        matches!(self, Verdict::Delete { .. })
    }

    /// What `plan` says of it: `why` it is no longer wanted, and what
    /// `apply` will do (`prunes_itself`: the manifest has `prune: true`).
    pub fn note(self, object: &ObjectRef, why: &str, prunes_itself: bool) -> String {
        let then = match self {
            Verdict::NotOurs => {
                "Tazuna forgets it (gone, or applied since by another manifest)".to_owned()
            }
            Verdict::Released => format!("kept: annotated `{PRUNE_ANNOTATION}: disabled`"),
            Verdict::ControlPlane => "kept: the control plane made it and needs it".to_owned(),
            Verdict::Adopted => {
                "kept: it existed before, written by more than tools that deploy from files"
                    .to_owned()
            }
            Verdict::Controlled => {
                "kept: another object controls it now (its `ownerReferences`)".to_owned()
            }
            Verdict::HandedOver(controller) => format!("kept: handed over to {controller}"),
            Verdict::Delete {
                needs: Prune::Dangerous,
            } => format!(
                "a {} is deleted only with `apply --prune-dangerous`",
                object.kind
            ),
            Verdict::Delete { .. } if prunes_itself => {
                "deleted by the next `apply` (`prune: true`)".to_owned()
            }
            Verdict::Delete { .. } => "deleted with `apply --prune`".to_owned(),
        };
        format!("{why}; {then}")
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// An object reference for the tests of this crate (`v1` of `group`).
    pub(crate) fn object(
        group: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> ObjectRef {
        ObjectRef {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            namespace: namespace.map(str::to_owned),
            name: name.into(),
        }
    }

    fn ours(manifest: &str) -> Value {
        json!({"metadata": {"annotations": {MANIFEST_ANNOTATION: manifest}}})
    }

    #[test]
    fn an_object_that_is_gone_is_forgotten() {
        let cm = object("", "ConfigMap", Some("a"), "x");
        assert_eq!(
            verdict(&cm, "m", None, Recorded::default()),
            Verdict::NotOurs
        );
    }

    #[test]
    fn an_object_another_manifest_applied_since_is_not_deleted() {
        let cm = object("", "ConfigMap", Some("a"), "x");
        assert_eq!(
            verdict(&cm, "m", Some(&ours("other")), Recorded::default()),
            Verdict::NotOurs
        );
    }

    #[test]
    fn an_object_tazuna_never_wrote_is_not_deleted() {
        let cm = object("", "ConfigMap", Some("a"), "x");
        let by_hand =
            json!({"metadata": {"managedFields": [{"manager": "kubectl-client-side-apply"}]}});
        assert_eq!(
            verdict(&cm, "m", Some(&by_hand), Recorded::default()),
            Verdict::NotOurs
        );
        for manager in ["tazuna", "tazuna/platform/tazuna.yaml"] {
            let by_tazuna = json!({"metadata": {"managedFields": [{"manager": manager}]}});
            assert_eq!(
                verdict(&cm, "m", Some(&by_tazuna), Recorded::default()),
                Verdict::Delete { needs: Prune::On }
            );
        }
        let lookalike = json!({"metadata": {"managedFields": [{"manager": "tazuna-fake"}]}});
        assert_eq!(
            verdict(&cm, "m", Some(&lookalike), Recorded::default()),
            Verdict::NotOurs
        );
    }

    #[test]
    fn the_keep_annotation_releases_it() {
        let cm = object("", "ConfigMap", Some("a"), "x");
        let live = json!({"metadata": {"annotations": {PRUNE_ANNOTATION: "disabled"}}});
        let verdict = verdict(&cm, "m", Some(&live), Recorded::default());
        assert_eq!(verdict, Verdict::Released);
        assert!(verdict.kept_because(&cm, Prune::Dangerous, true).is_some());
        assert!(!verdict.tracked());
    }

    #[test]
    fn what_holds_data_needs_prune_dangerous() {
        for held in [
            object("", "Namespace", None, "team"),
            object("", "PersistentVolumeClaim", Some("a"), "data"),
            object(
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                None,
                "x.example.com",
            ),
        ] {
            let verdict = verdict(&held, "m", Some(&ours("m")), Recorded::default());
            assert_eq!(
                verdict,
                Verdict::Delete {
                    needs: Prune::Dangerous
                },
                "{held}"
            );
            assert!(
                verdict.kept_because(&held, Prune::On, true).is_some(),
                "{held}"
            );
            assert_eq!(
                verdict.kept_because(&held, Prune::Dangerous, false),
                None,
                "{held}"
            );
            assert!(verdict.tracked());
        }
    }

    #[test]
    fn prune_off_keeps_it_unless_the_manifest_prunes_itself() {
        let cm = object("", "ConfigMap", Some("a"), "x");
        let verdict = verdict(&cm, "m", Some(&ours("m")), Recorded::default());
        assert!(verdict.kept_because(&cm, Prune::Off, false).is_some());
        assert_eq!(verdict.kept_because(&cm, Prune::Off, true), None);
        assert_eq!(verdict.kept_because(&cm, Prune::On, false), None);
        assert!(
            verdict
                .note(&cm, "no longer rendered", true)
                .contains("next `apply`")
        );
        assert!(
            verdict
                .note(&cm, "no longer rendered", false)
                .contains("`apply --prune`")
        );
    }

    #[test]
    fn what_the_control_plane_made_is_never_deleted() {
        let made = [
            object("", "Namespace", None, "kube-system"),
            object("", "Namespace", None, "default"),
            object(
                "rbac.authorization.k8s.io",
                "ClusterRole",
                None,
                "system:aggregate-to-view",
            ),
            object(
                "rbac.authorization.k8s.io",
                "ClusterRoleBinding",
                None,
                "system:public-info-viewer",
            ),
            object(
                "scheduling.k8s.io",
                "PriorityClass",
                None,
                "system-node-critical",
            ),
            object("", "Service", Some("default"), "kubernetes"),
            object(
                "discovery.k8s.io",
                "EndpointSlice",
                Some("default"),
                "kubernetes",
            ),
            object("", "ConfigMap", Some("team"), "kube-root-ca.crt"),
            object("", "ServiceAccount", Some("team"), "default"),
        ];
        for object in made {
            let verdict = verdict(&object, "m", Some(&ours("m")), Recorded::default());
            assert_eq!(verdict, Verdict::ControlPlane, "{object}");
            assert!(
                verdict
                    .kept_because(&object, Prune::Dangerous, true)
                    .is_some(),
                "{object}"
            );
            assert!(!verdict.tracked(), "{object}");
        }
        // By its label, whatever its name.
        let role = object("rbac.authorization.k8s.io", "ClusterRole", None, "admin");
        let mut live = ours("m");
        live["metadata"]["labels"] = json!({BOOTSTRAP_LABEL: "rbac-defaults"});
        assert_eq!(
            verdict(&role, "m", Some(&live), Recorded::default()),
            Verdict::ControlPlane
        );
    }

    #[test]
    fn an_object_another_object_controls_is_never_pruned() {
        let secret = object("", "Secret", Some("argocd"), "repo");
        let mut live = ours("m");
        live["metadata"]["ownerReferences"] = json!([
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "not-the-controller"},
            {"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret", "name": "repo", "controller": true}
        ]);
        assert_eq!(
            verdict(&secret, "m", Some(&live), Recorded::default()),
            Verdict::Controlled
        );
        assert_eq!(controller_of(&live).as_deref(), Some("ExternalSecret/repo"));
        assert!(!Verdict::Controlled.tracked());
        live["metadata"]["ownerReferences"][1]["controller"] = json!(false);
        assert!(matches!(
            verdict(&secret, "m", Some(&live), Recorded::default()),
            Verdict::Delete { .. }
        ));
    }

    #[test]
    fn what_users_put_in_control_plane_namespaces_is_theirs() {
        // A CNI's DaemonSet in kube-system, a Service named like the API's
        // elsewhere, a ServiceAccount not named default.
        for object in [
            object("apps", "DaemonSet", Some("kube-system"), "cilium"),
            object("", "Service", Some("team"), "kubernetes"),
            object("", "ServiceAccount", Some("kube-system"), "cilium"),
            object("", "Namespace", None, "kube-flannel"),
        ] {
            let verdict = verdict(&object, "m", Some(&ours("m")), Recorded::default());
            assert!(
                matches!(verdict, Verdict::Delete { .. }),
                "{object}: {verdict:?}"
            );
        }
    }

    #[test]
    fn an_adopted_object_is_deleted_only_if_tools_that_deploy_from_files_alone_had_written_it() {
        let made = |managers: &[&str]| managers.iter().map(|m| m.to_string()).collect::<Vec<_>>();
        let service = object("apiregistration.k8s.io", "APIService", None, "v1.apps");
        for (adopted_from, deleted) in [
            (made(&[]), true),
            (made(&["helm", "kubectl-create"]), true),
            (made(&["kubectl-client-side-apply"]), true),
            // A deploy tool's name beside the API server's (an admin's
            // `kubectl apply` or a forged `--field-manager`), or a stack
            // that only labelled it: the API server made it.
            (made(&["helm", "kube-controller-manager"]), false),
            (made(&["before-first-apply", "kubectl"]), false),
            (made(&["kube-apiserver", "Terraform"]), false),
            (
                made(&[
                    "api-priority-and-fairness-config-producer-v1",
                    "tazuna/a1/tazuna.yaml",
                ]),
                false,
            ),
            (made(&["tazuna/platform/tazuna.yaml"]), true),
            (made(&["tazuna"]), true),
            (made(&["kube-apiserver"]), false),
            (
                made(&["api-priority-and-fairness-config-producer-v1"]),
                false,
            ),
            (made(&["cert-manager-certificates-issuing"]), false),
            // Labelled by hand, not deployed: still not Tazuna's to delete.
            (made(&["kube-apiserver", "kubectl-label"]), false),
            (made(&["helm-fake", "kubectl-fake"]), false),
        ] {
            let verdict = verdict(
                &service,
                "m",
                Some(&ours("m")),
                Recorded {
                    adopted_from: &adopted_from,
                    handed_over: None,
                },
            );
            assert_eq!(
                matches!(verdict, Verdict::Delete { .. }),
                deleted,
                "{adopted_from:?}: {verdict:?}"
            );
            if !deleted {
                assert_eq!(verdict, Verdict::Adopted);
                assert!(
                    verdict
                        .kept_because(&service, Prune::Dangerous, true)
                        .is_some()
                );
                assert!(!verdict.tracked());
                assert!(verdict.note(&service, "gone", true).contains("kept"));
            }
        }
    }

    #[test]
    fn writers_are_who_wrote_the_object_itself_other_than_the_stack() {
        let live = json!({"metadata": {"managedFields": [
            {"manager": "kube-apiserver", "operation": "Update"},
            {"manager": "kube-apiserver", "operation": "Update", "subresource": "status"},
            {"manager": "kwok", "operation": "Update", "subresource": "status"},
            {"manager": "tazuna/a", "operation": "Apply"},
            {"manager": "kubectl-label", "operation": "Update", "subresource": ""},
        ]}});
        assert_eq!(
            writers(&live, "tazuna/a"),
            ["kube-apiserver", "kubectl-label"]
        );
        assert_eq!(
            writers(&live, "tazuna/b"),
            ["kube-apiserver", "kubectl-label", "tazuna/a"]
        );
        let made = json!({"metadata": {"managedFields": [{"manager": "tazuna/a"}]}});
        assert!(writers(&made, "tazuna/a").is_empty());
        assert!(writers(&json!({}), "tazuna/a").is_empty());
    }

    #[test]
    fn a_node_is_never_deleted() {
        let node = object("", "Node", None, "kwok-node-0");
        assert_eq!(
            verdict(&node, "m", Some(&ours("m")), Recorded::default()),
            Verdict::ControlPlane
        );
    }

    #[test]
    fn a_handed_over_object_is_never_deleted_and_its_record_is_forgotten() {
        let cm = object("", "ConfigMap", Some("flux-system"), "root");
        let handed = Recorded {
            adopted_from: &[],
            handed_over: Some(Controller::Flux),
        };
        let verdict = verdict(&cm, "m", Some(&ours("m")), handed);
        assert_eq!(verdict, Verdict::HandedOver(Controller::Flux));
        assert!(!verdict.tracked());
        let why = verdict.kept_because(&cm, Prune::Dangerous, true).unwrap();
        assert!(why.contains("handed over to Flux"), "{why}");
        // Not read (a removed manifest's plan): the same.
        assert_eq!(unread(&cm, handed), Verdict::HandedOver(Controller::Flux));
        // Gone live, or applied since by another manifest: forgotten.
        assert_eq!(super::verdict(&cm, "m", None, handed), Verdict::NotOurs);
        assert_eq!(
            super::verdict(&cm, "m", Some(&ours("other")), handed),
            Verdict::NotOurs
        );
    }
}
