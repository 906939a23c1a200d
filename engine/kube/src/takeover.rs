//! The takeover verdict: whether a run may take over an object that exists
//! on the cluster and that no stack's state records.
//!
//! Server-side apply takes over such an object quietly: the fields it sets
//! move to Tazuna's field manager, and from then on prune and destroy treat
//! the object as the stack's. So only content the user wrote may do that on
//! its own. A third-party plugin, a chart or artifact a built-in fetched, and
//! a helm hook take over only objects the manifest names in `adopt:`; and a
//! hook never replaces an object the API server made (`system:` RBAC,
//! `kube-system` defaults), because hooks delete before they create.
//!
//! [`takeover`] decides for one object, with no I/O; [`check`] reads what
//! exists (one metadata list per kind and namespace, only for objects whose
//! writer needs the grant) and asks it. `plan` and `apply` both call
//! [`check`] before any write, so plan predicts apply.

use serde_json::Value;
use tazuna_core::config::Manifest;
use tazuna_core::inventory::ObjectRef;
use tazuna_core::render::Rendered;

use crate::cluster::Cluster;
use crate::live::LiveIndex;
use crate::ownership::{OwnershipError, StackStates};

/// Who wrote a rendered object, as far as taking over what exists goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Writer {
    /// The user's own files, through a built-in.
    User,
    /// Content a built-in fetched: the chart or artifact's location.
    Fetched(String),
    /// A third-party plugin, by name.
    Plugin(String),
}

impl Writer {
    /// The writer of what `rendered` holds: a third-party plugin (it has an
    /// emit scope), else fetched content when the render pulled anything
    /// from upstream, else the user.
    pub fn of(rendered: &Rendered) -> Self {
        if rendered.scope.is_some() {
            Self::Plugin(rendered.plugin.clone())
        } else if let Some(pin) = rendered.upstream.first() {
            Self::Fetched(pin.location.clone())
        } else {
            Self::User
        }
    }

    fn describe(&self, hook: bool) -> String {
        let writer = match self {
            Self::User => "the manifest's own files".to_owned(),
            Self::Fetched(location) => format!("content fetched from `{location}`"),
            Self::Plugin(plugin) => format!("plugin `{plugin}`"),
        };
        if hook {
            format!("a helm hook of {writer}")
        } else {
            writer
        }
    }
}

/// An existing object a run takes over (plan shows it as `adopt`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Takeover {
    /// The manifest that takes it.
    pub manifest: String,
    /// The object.
    pub object: ObjectRef,
    /// The field managers that wrote it so far.
    pub managers: Vec<String>,
}

/// The takeover verdict for `object`, which `writer` renders in `manifest`
/// (as a helm hook when `hook`), which exists as `live`, and which no
/// stack's state records. `named` says the manifest's `adopt:` names it.
///
/// - A hook never replaces what the API server made ([`made_by_server`]).
/// - The user's own content takes over what exists (plan says `adopt`).
/// - Anything else (a third-party plugin, fetched content, a hook) takes
///   over only what `adopt:` names.
pub fn takeover(
    object: &ObjectRef,
    manifest: &str,
    writer: &Writer,
    hook: bool,
    named: bool,
    live: &Value,
) -> Result<Takeover, Box<OwnershipError>> {
    let managers = managers(live);
    if hook && made_by_server(object, live) {
        return Err(Box::new(OwnershipError::HookReplacesServerObject {
            object: object.clone(),
            manifest: manifest.to_owned(),
        }));
    }
    if (hook || *writer != Writer::User) && !named {
        return Err(Box::new(OwnershipError::TakeoverNotNamed {
            object: object.clone(),
            manifest: manifest.to_owned(),
            writer: writer.describe(hook),
            managers,
            adopt: adopt_entry(object),
        }));
    }
    Ok(Takeover {
        manifest: manifest.to_owned(),
        object: object.clone(),
        managers,
    })
}

/// Whether a hook may not replace `object` (hooks delete before they
/// create): what prune never deletes
/// ([`crate::prune::kept_by_control_plane`]), everything in the control
/// plane's own namespaces, and, by allow-list, every object that no tool
/// deploying from files wrote ([`crate::prune::deployed`]): the API server,
/// a controller or an operator made it.
pub fn made_by_server(object: &ObjectRef, live: &Value) -> bool {
    const CONTROL_PLANE: [&str; 3] = ["kube-system", "kube-public", "kube-node-lease"];
    let in_control_plane = object
        .namespace
        .as_deref()
        .is_some_and(|ns| CONTROL_PLANE.contains(&ns));
    let deployed = crate::prune::deployed(&crate::prune::writers(live, ""));
    crate::prune::kept_by_control_plane(object, live) || in_control_plane || !deployed
}

/// The field managers of `live`, sorted, each once.
fn managers(live: &Value) -> Vec<String> {
    let mut managers: Vec<String> = live
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| f.get("manager").and_then(Value::as_str))
        .map(str::to_owned)
        .collect();
    managers.sort();
    managers.dedup();
    managers
}

/// How `adopt:` names `object`.
pub fn adopt_entry(object: &ObjectRef) -> String {
    match &object.namespace {
        Some(namespace) => format!("{}/{namespace}/{}", object.kind, object.name),
        None => format!("{}/{}", object.kind, object.name),
    }
}

/// Every takeover of this run that the verdict allows, or every refusal.
///
/// Only objects that no state records are asked about, and of those only
/// the ones whose writer needs a grant are read from the cluster here (one
/// metadata list per kind and namespace); `plan` finds the user's own
/// takeovers while it compares.
pub async fn check(
    cluster: &Cluster,
    states: &StackStates,
    run: &[(&Manifest, &Rendered)],
) -> Result<Vec<Takeover>, Vec<OwnershipError>> {
    let recorded: std::collections::HashSet<_> = states
        .own
        .values()
        .chain(states.others.values())
        .flat_map(|stored| stored.state.objects.iter().map(|e| e.object().key()))
        .collect();
    let mut asked = Vec::new();
    for (manifest, rendered) in run {
        let writer = Writer::of(rendered);
        for object in &rendered.objects {
            let hook = tazuna_core::hooks::is_hook(&object.value);
            if writer == Writer::User && !hook {
                continue;
            }
            let Some(mut reference) = ObjectRef::of(&object.value) else {
                continue;
            };
            // A kind the cluster does not serve yet has no objects yet.
            let Some(resolved) = cluster.resolve(&reference) else {
                continue;
            };
            if resolved.namespaced {
                if reference.namespace.is_none() {
                    reference.namespace = Some(
                        manifest
                            .namespace
                            .as_deref()
                            .unwrap_or("default")
                            .to_owned(),
                    );
                }
            } else {
                reference.namespace = None;
            }
            if recorded.contains(&reference.key()) {
                continue;
            }
            asked.push((*manifest, writer.clone(), hook, reference, resolved));
        }
    }
    let mut index = LiveIndex::metadata(cluster);
    let seats = tokio::sync::Semaphore::new(8);
    index
        .prefetch(asked.iter().map(|(_, _, _, o, r)| (o, r)), &seats)
        .await;
    let (mut allowed, mut refused) = (Vec::new(), Vec::new());
    for (manifest, writer, hook, object, resolved) in &asked {
        let live = match index.get(object, resolved).await {
            Ok(Some(live)) => live,
            Ok(None) => continue,
            // Unreadable: not known to exist; the write itself will say.
            Err(_) => continue,
        };
        let named = manifest.may_adopt(&object.kind, object.namespace.as_deref(), &object.name);
        match takeover(object, &manifest.name, writer, *hook, named, live) {
            Ok(takeover) => allowed.push(takeover),
            Err(error) => refused.push(*error),
        }
    }
    if refused.is_empty() {
        Ok(allowed)
    } else {
        Err(refused)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(kind: &str, namespace: Option<&str>, name: &str) -> ObjectRef {
        let group = if kind == "ClusterRole" {
            "rbac.authorization.k8s.io"
        } else {
            ""
        };
        crate::prune::tests::object(group, kind, namespace, name)
    }

    fn live(managers: &[&str]) -> Value {
        json!({"metadata": {"managedFields": managers.iter().map(|m| json!({"manager": m})).collect::<Vec<_>>()}})
    }

    #[test]
    fn the_users_own_files_take_over_what_exists_and_plan_names_its_managers() {
        let cm = object("ConfigMap", Some("apps"), "settings");
        let taken = takeover(
            &cm,
            "apps",
            &Writer::User,
            false,
            false,
            &live(&["kubectl-client-side-apply", "kubectl-client-side-apply"]),
        )
        .unwrap();
        assert_eq!(taken.managers, ["kubectl-client-side-apply"]);
        // Even what the server made: the user asked for it.
        let coredns = object("ConfigMap", Some("kube-system"), "coredns");
        assert!(takeover(&coredns, "dns", &Writer::User, false, false, &live(&[])).is_ok());
    }

    #[test]
    fn a_plugin_or_fetched_content_takes_over_only_what_adopt_names() {
        let cm = object("ConfigMap", Some("apps"), "settings");
        for writer in [
            Writer::Plugin("probe".into()),
            Writer::Fetched("oci://registry.example/charts/app".into()),
        ] {
            let refused =
                takeover(&cm, "apps", &writer, false, false, &live(&["kubectl"])).map_err(|e| *e);
            assert!(
                matches!(&refused, Err(OwnershipError::TakeoverNotNamed { adopt, managers, .. })
                    if adopt == "ConfigMap/apps/settings" && managers == &["kubectl"]),
                "{refused:?}"
            );
            assert!(takeover(&cm, "apps", &writer, false, true, &live(&["kubectl"])).is_ok());
        }
    }

    #[test]
    fn a_hook_takes_over_only_what_adopt_names_even_in_the_users_chart() {
        let cm = object("ConfigMap", Some("apps"), "settings");
        let refused =
            takeover(&cm, "apps", &Writer::User, true, false, &live(&["kubectl"])).map_err(|e| *e);
        assert!(
            matches!(&refused, Err(OwnershipError::TakeoverNotNamed { writer, .. }) if writer == "a helm hook of the manifest's own files"),
            "{refused:?}"
        );
        assert!(takeover(&cm, "apps", &Writer::User, true, true, &live(&["kubectl"])).is_ok());
    }

    #[test]
    fn a_hook_never_replaces_what_the_server_made_whatever_adopt_names() {
        let bootstrap =
            json!({"metadata": {"labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}}});
        let cases = [
            (
                object("ClusterRole", None, "system:public-info-viewer"),
                live(&["helm"]),
            ),
            (object("ClusterRole", None, "view"), bootstrap),
            (
                object(
                    "ConfigMap",
                    Some("kube-system"),
                    "extension-apiserver-authentication",
                ),
                live(&["helm"]),
            ),
            (object("Namespace", None, "default"), live(&["helm"])),
            (
                object("ConfigMap", Some("apps"), "kube-root-ca.crt"),
                live(&["kube-controller-manager"]),
            ),
            // By allow-list: an operator's object, one only labelled by
            // hand, one whose writers are unknown.
            (
                object("Secret", Some("apps"), "webhook-ca"),
                live(&["cert-manager-cainjector"]),
            ),
            (
                object("ConfigMap", Some("apps"), "settings"),
                live(&["kubectl-label"]),
            ),
            (object("ConfigMap", Some("apps"), "settings"), live(&[])),
        ];
        for (object, live) in cases {
            for writer in [Writer::User, Writer::Plugin("probe".into())] {
                let refused =
                    takeover(&object, "hooks", &writer, true, true, &live).map_err(|e| *e);
                assert!(
                    matches!(
                        refused,
                        Err(OwnershipError::HookReplacesServerObject { .. })
                    ),
                    "{object}: {refused:?}"
                );
            }
        }
        // Not a hook's: a server object the user's files name is theirs.
        let view = object("ClusterRole", None, "system:public-info-viewer");
        assert!(
            takeover(
                &view,
                "rbac",
                &Writer::User,
                false,
                false,
                &live(&["kube-apiserver"])
            )
            .is_ok()
        );
    }

    #[test]
    fn adopt_names_namespaced_objects_with_their_namespace() {
        assert_eq!(
            adopt_entry(&object("ClusterRole", None, "edit")),
            "ClusterRole/edit"
        );
        assert_eq!(
            adopt_entry(&object("ConfigMap", Some("kube-system"), "coredns")),
            "ConfigMap/kube-system/coredns"
        );
    }
}
