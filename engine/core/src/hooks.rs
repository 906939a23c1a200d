//! Helm hooks, as helm runs them: which objects of a render are hooks, when
//! each runs, in what order, and what is deleted after.
//!
//! A hook is an object annotated `helm.sh/hook` (a chart's, rendered by the
//! helm or helmfile source). [`split`] sorts a manifest's objects into the
//! hooks that run before the rest (`pre-install` on the first apply,
//! `pre-upgrade` after), the rest, the hooks that run after the rest is ready
//! (`post-install`, `post-upgrade`), and the hooks an apply leaves out (chart
//! tests, which `tazuna test` runs, and the delete and rollback hooks, which
//! have no place in an apply). Hooks of one stage go in helm's order: by
//! `helm.sh/hook-weight`, then kind, then name.

use serde_json::Value;

/// The annotation that makes an object a hook.
pub const HOOK: &str = "helm.sh/hook";
/// Its order among the hooks of its stage (an integer, default 0).
pub const WEIGHT: &str = "helm.sh/hook-weight";
/// When it is deleted.
pub const DELETE_POLICY: &str = "helm.sh/hook-delete-policy";

/// Whether this is the manifest's first apply (helm's install) or a later one
/// (an upgrade).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// Nothing of the manifest is recorded yet.
    Install,
    /// The manifest was applied before.
    Upgrade,
}

/// A hook's `helm.sh/hook-delete-policy`. Without one, helm deletes the
/// previous hook object before creating it again (`before-hook-creation`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeletePolicy {
    /// `before-hook-creation`: the previous object goes before it is created.
    pub before_creation: bool,
    /// `hook-succeeded`: deleted once it has succeeded.
    pub succeeded: bool,
    /// `hook-failed`: deleted when it failed.
    pub failed: bool,
}

/// One hook of a render.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hook {
    /// Its index in the render.
    pub index: usize,
    /// `helm.sh/hook-weight`.
    pub weight: i64,
    /// `helm.sh/hook-delete-policy`.
    pub delete: DeletePolicy,
}

/// A render's objects by when an apply sends them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// Hooks before the rest, in the order they run.
    pub pre: Vec<Hook>,
    /// Indices of everything that is not a hook, in rendered order.
    pub main: Vec<usize>,
    /// Hooks after the rest is ready, in the order they run.
    pub post: Vec<Hook>,
    /// Hooks of chart tests, in the order they run.
    pub tests: Vec<Hook>,
    /// Hooks this apply does not run, with why.
    pub left_out: Vec<(usize, String)>,
}

impl Split {
    /// Whether the render has hooks that run in an apply.
    pub fn has_hooks(&self) -> bool {
        !self.pre.is_empty() || !self.post.is_empty()
    }
}

/// Whether `object` is a hook.
pub fn is_hook(object: &Value) -> bool {
    annotation(object, HOOK).is_some()
}

/// Whether `object` is a hook that is deleted once it has succeeded: after
/// it ran, it is gone by design.
pub fn deleted_when_succeeded(object: &Value) -> bool {
    is_hook(object) && delete_policy(object).succeeded
}

/// Sort `objects` (a manifest's render) by when they are sent, for `release`.
pub fn split(objects: &[&Value], release: Release) -> Split {
    let mut split = Split::default();
    for (index, object) in objects.iter().enumerate() {
        let Some(events) = annotation(object, HOOK) else {
            split.main.push(index);
            continue;
        };
        let events: Vec<&str> = events.split(',').map(str::trim).collect();
        let hook = Hook {
            index,
            weight: annotation(object, WEIGHT)
                .and_then(|w| w.trim().parse().ok())
                .unwrap_or(0),
            delete: delete_policy(object),
        };
        let (pre, post) = match release {
            Release::Install => ("pre-install", "post-install"),
            Release::Upgrade => ("pre-upgrade", "post-upgrade"),
        };
        // One object can be a hook of both stages (ingress-nginx's admission
        // ServiceAccount): it runs in each.
        let (in_pre, in_post) = (events.contains(&pre), events.contains(&post));
        if in_pre {
            split.pre.push(hook.clone());
        }
        if in_post {
            split.post.push(hook);
        } else if in_pre {
        } else if events.iter().any(|e| *e == "test" || *e == "test-success") {
            split.tests.push(hook);
        } else {
            let why = match release {
                Release::Install => "not an install hook; it runs on a later apply",
                Release::Upgrade => "not an upgrade hook; it ran on the first apply",
            };
            let why = if events
                .iter()
                .any(|e| e.ends_with("-install") || e.ends_with("-upgrade"))
            {
                why.to_owned()
            } else {
                format!(
                    "a `{}` hook; an apply runs install and upgrade hooks only",
                    events.join(",")
                )
            };
            split.left_out.push((index, why));
        }
    }
    for stage in [&mut split.pre, &mut split.post, &mut split.tests] {
        stage.sort_by(|a, b| {
            let key = |hook: &Hook| {
                let object = objects[hook.index];
                (
                    hook.weight,
                    kind_rank(object),
                    object["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                )
            };
            key(a).cmp(&key(b))
        });
    }
    split
}

/// A stage's hooks (in their order) as the groups an apply sends at once.
/// helm creates a stage's hooks one after another and waits only for those
/// that can be not ready (Jobs, Pods), so the hooks of one weight that
/// nothing waits for go together. A hook that is waited for, a Namespace and
/// a CustomResourceDefinition each go alone: what follows may need them
/// (a Job its ServiceAccount, a namespaced hook its Namespace). `waited`
/// says whether an apply waits for an object (the readiness rules of
/// [`crate::readiness::has_rule`]).
pub fn batches<'a>(
    stage: &'a [Hook],
    objects: &[&Value],
    waited: impl Fn(&Value) -> bool,
) -> Vec<&'a [Hook]> {
    let alone = |hook: &Hook| {
        let object = objects[hook.index];
        waited(object)
            || matches!(
                object["kind"].as_str(),
                Some("Namespace" | "CustomResourceDefinition")
            )
    };
    let mut batches = Vec::new();
    let mut start = 0;
    for end in 1..=stage.len() {
        let split_here = end == stage.len()
            || alone(&stage[end - 1])
            || alone(&stage[end])
            || stage[end].weight != stage[start].weight;
        if split_here {
            batches.push(&stage[start..end]);
            start = end;
        }
    }
    batches
}

/// A hook's delete policy; none given means `before-hook-creation`.
fn delete_policy(object: &Value) -> DeletePolicy {
    let Some(policies) = annotation(object, DELETE_POLICY) else {
        return DeletePolicy {
            before_creation: true,
            ..DeletePolicy::default()
        };
    };
    let mut policy = DeletePolicy::default();
    for word in policies.split(',').map(str::trim) {
        match word {
            "before-hook-creation" => policy.before_creation = true,
            "hook-succeeded" => policy.succeeded = true,
            "hook-failed" => policy.failed = true,
            _ => {}
        }
    }
    policy
}

/// Helm's install order of kinds among hooks of equal weight: what others
/// refer to first.
fn kind_rank(object: &Value) -> usize {
    const ORDER: &[&str] = &[
        "PriorityClass",
        "Namespace",
        "NetworkPolicy",
        "ResourceQuota",
        "LimitRange",
        "PodSecurityPolicy",
        "PodDisruptionBudget",
        "ServiceAccount",
        "Secret",
        "SecretList",
        "ConfigMap",
        "StorageClass",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "CustomResourceDefinition",
        "ClusterRole",
        "ClusterRoleList",
        "ClusterRoleBinding",
        "ClusterRoleBindingList",
        "Role",
        "RoleList",
        "RoleBinding",
        "RoleBindingList",
        "Service",
        "DaemonSet",
        "Pod",
        "ReplicationController",
        "ReplicaSet",
        "Deployment",
        "HorizontalPodAutoscaler",
        "StatefulSet",
        "Job",
        "CronJob",
        "IngressClass",
        "Ingress",
        "APIService",
    ];
    let kind = object["kind"].as_str().unwrap_or_default();
    ORDER.iter().position(|k| *k == kind).unwrap_or(ORDER.len())
}

fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object["metadata"]["annotations"][key].as_str()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(kind: &str, name: &str, annotations: Value) -> Value {
        json!({ "apiVersion": "v1", "kind": kind,
                "metadata": { "name": name, "annotations": annotations } })
    }

    #[test]
    fn hooks_of_one_weight_that_nothing_waits_for_go_together() {
        let hook = |kind: &str, name: &str, weight: &str| {
            let mut hook = object(kind, name, json!({ HOOK: "pre-install", WEIGHT: weight }));
            if kind == "Job" {
                hook["apiVersion"] = json!("batch/v1");
            }
            hook
        };
        let objects = [
            hook("Namespace", "jobs", "-5"),
            hook("ServiceAccount", "migrate", "-5"),
            hook("Role", "migrate", "-5"),
            hook("RoleBinding", "migrate", "-5"),
            hook("Job", "migrate", "-5"),
            hook("ConfigMap", "seed", "0"),
            hook("ConfigMap", "later", "1"),
            hook("Secret", "later", "1"),
        ];
        let values: Vec<&Value> = objects.iter().collect();
        let stage = split(&values, Release::Install).pre;
        let names = |batch: &[Hook]| -> Vec<String> {
            batch
                .iter()
                .map(|h| {
                    format!(
                        "{}/{}",
                        values[h.index]["kind"].as_str().unwrap(),
                        values[h.index]["metadata"]["name"].as_str().unwrap()
                    )
                })
                .collect()
        };
        let waited =
            |o: &Value| crate::readiness::has_rule(o, crate::readiness::LoadBalancers::Ignored);
        let batches: Vec<Vec<String>> = batches(&stage, &values, waited)
            .into_iter()
            .map(names)
            .collect();
        assert_eq!(
            batches,
            vec![
                vec!["Namespace/jobs"],
                vec![
                    "ServiceAccount/migrate",
                    "Role/migrate",
                    "RoleBinding/migrate"
                ],
                vec!["Job/migrate"],
                vec!["ConfigMap/seed"],
                vec!["Secret/later", "ConfigMap/later"],
            ]
        );
        assert!(super::batches(&[], &values, waited).is_empty());
    }

    #[test]
    fn hooks_go_by_stage_weight_kind_and_name() {
        let objects = [
            object("ConfigMap", "app", json!({})),
            object(
                "Job",
                "migrate",
                json!({ HOOK: "pre-install,pre-upgrade", WEIGHT: "5" }),
            ),
            object(
                "ServiceAccount",
                "migrate",
                json!({ HOOK: "pre-install", WEIGHT: "5" }),
            ),
            object("Job", "seed", json!({ HOOK: "pre-install", WEIGHT: "-1" })),
            object(
                "Job",
                "announce",
                json!({ HOOK: "post-install,post-upgrade" }),
            ),
            object("Pod", "test-connection", json!({ HOOK: "test" })),
            object(
                "ServiceAccount",
                "both",
                json!({ HOOK: "pre-install,post-install", WEIGHT: "-9" }),
            ),
            object("Job", "cleanup", json!({ HOOK: "pre-delete" })),
        ];
        let objects: Vec<&Value> = objects.iter().collect();
        let install = split(&objects, Release::Install);
        let order = |hooks: &[Hook]| hooks.iter().map(|h| h.index).collect::<Vec<_>>();
        assert_eq!(order(&install.pre), [6, 3, 2, 1]);
        assert_eq!(install.main, [0]);
        assert_eq!(order(&install.post), [6, 4]);
        assert_eq!(order(&install.tests), [5]);
        assert_eq!(
            install.left_out,
            [(
                7,
                "a `pre-delete` hook; an apply runs install and upgrade hooks only".to_owned()
            )]
        );

        let upgrade = split(&objects, Release::Upgrade);
        assert_eq!(order(&upgrade.pre), [1]);
        assert_eq!(order(&upgrade.post), [4]);
        assert_eq!(
            upgrade.left_out.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
            [2, 3, 6, 7]
        );
        assert!(upgrade.left_out[0].1.contains("it ran on the first apply"));
    }

    #[test]
    fn delete_policies_default_to_before_hook_creation() {
        let plain = object("Job", "a", json!({ HOOK: "pre-install" }));
        assert_eq!(
            delete_policy(&plain),
            DeletePolicy {
                before_creation: true,
                succeeded: false,
                failed: false
            }
        );
        assert!(!deleted_when_succeeded(&plain));
        let both = object(
            "Job",
            "a",
            json!({ HOOK: "pre-install", DELETE_POLICY: "hook-succeeded, hook-failed" }),
        );
        assert_eq!(
            delete_policy(&both),
            DeletePolicy {
                before_creation: false,
                succeeded: true,
                failed: true
            }
        );
        assert!(deleted_when_succeeded(&both));
        // Not a hook: the annotation alone means nothing.
        let stray = object("Job", "a", json!({ DELETE_POLICY: "hook-succeeded" }));
        assert!(!deleted_when_succeeded(&stray));
    }
}
