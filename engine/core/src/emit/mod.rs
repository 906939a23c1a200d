//! What a third-party plugin may write: the emit verdict, by allow-list.
//!
//! A built-in plugin renders only what the user's own files say, so it has
//! no scope. A third-party plugin's objects pass [`EmitScope::missing`], one
//! pure function that `plan`, `apply` and `destroy` all reach through the
//! run's claims (`tazuna_kube::ownership::Claims::of`), so plan always
//! predicts what apply refuses.
//!
//! The verdict names what is allowed and refuses the rest:
//!
//! - **Where.** Namespaced objects in the manifest's namespace (and that
//!   Namespace). Another namespace needs `emit:namespace:<name>`, a
//!   cluster-scoped kind `emit:cluster:<Kind>`.
//! - **What.** Only the kinds of [`ALLOWED`], each with a reason it cannot act
//!   for another identity or redirect traffic, and each object within the
//!   bounds its entry checks (a Secret of a data type, a Service without
//!   `ExternalName` or `externalIPs`, a workload that runs as a
//!   ServiceAccount the same render creates, within the Pod Security
//!   baseline). Every other kind needs `emit:kind:<Kind>`.
//! - **Which.** The kinds of [`NAMED`] (objects that act for an identity or
//!   that a controller applies: EndpointSlices, Flux and Argo CD sources and
//!   applications, ExternalSecrets, ClusterResourceSets, …), and an object of
//!   an allowed kind outside its bounds, need a grant that names the object:
//!   `emit:object:<Kind>/<name>`. So does an aggregated ClusterRole, and any
//!   RBAC object named `system:*`.
//! - The kinds of [`SENSITIVE_KINDS`] (bindings, webhooks, CRDs, API
//!   services) need `emit:kind:<Kind>` wherever they are, as before.
//!
//! docs/security.md shows the list, and docs/plugins.md the grants.

use std::collections::HashSet;

use serde_json::Value;

use crate::inventory::ObjectRef;

mod checks;
mod lists;

use checks::*;
pub use lists::{ALLOWED, Allowed, BUILT_IN_GROUPS, NAMED, Named, SENSITIVE_KINDS};

/// What a third-party plugin may create: its `emit:` grants in effect (and
/// its `secrets:` grants, for the references it may write).
///
/// A grant may end in `*`, but `emit:namespace:*` covers no `kube-*`
/// namespace: those are named one by one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EmitScope {
    grants: Vec<String>,
    /// The plugin's `secrets:` grants in effect
    /// (see [`crate::render::Rendered::may_reference`]).
    pub(crate) secret_grants: Vec<String>,
    /// Grants in effect only through a user's wildcard grant (the plugin
    /// requested the name, the user granted the family): they cover no
    /// more than that wildcard would.
    widened: Vec<String>,
}

/// One grant an object lacks, and why it is needed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Needed {
    /// The grant (`emit:kind:Role`).
    pub grant: String,
    /// Why (the list's reason, or what the object says).
    pub why: String,
}

/// What one render creates that an object may rely on: the ServiceAccounts
/// (namespace, name) its workloads may run as, and the Secrets they may read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Made {
    service_accounts: HashSet<(String, String)>,
    secrets: HashSet<(String, String)>,
    /// The namespace the object being judged lives in.
    namespace: String,
}

impl Made {
    /// What the render of `objects` creates, namespaced objects without a
    /// namespace taking `home`.
    pub fn of<'a>(objects: impl IntoIterator<Item = &'a Value>, home: &str) -> Made {
        let mut made = Made {
            namespace: home.to_owned(),
            ..Made::default()
        };
        for object in objects {
            let (Some(name), true) = (
                object["metadata"]["name"].as_str(),
                object["apiVersion"] == "v1",
            ) else {
                continue;
            };
            let namespace = object["metadata"]["namespace"].as_str().unwrap_or(home);
            let made = match object["kind"].as_str() {
                Some("ServiceAccount") => &mut made.service_accounts,
                // Only data: a token Secret of the render holds another's token.
                Some("Secret") if secret_check(object, &Made::default()).is_none() => {
                    &mut made.secrets
                }
                _ => continue,
            };
            made.insert((namespace.to_owned(), name.to_owned()));
        }
        made
    }

    fn in_namespace(&self, namespace: &str) -> Made {
        Made {
            namespace: namespace.to_owned(),
            ..self.clone()
        }
    }

    /// Whether this render creates Secret `name` in the judged namespace.
    fn has_secret(&self, name: &str) -> bool {
        self.secrets
            .contains(&(self.namespace.clone(), name.to_owned()))
    }
}

impl EmitScope {
    /// The scope the `emit:` and `secrets:` capabilities among
    /// `capabilities` allow.
    pub fn new<'a>(capabilities: impl IntoIterator<Item = &'a str>) -> Self {
        let capabilities: Vec<&str> = capabilities.into_iter().collect();
        let with = |prefix: &str| {
            capabilities
                .iter()
                .filter(|c| c.starts_with(prefix) && **c != "secrets:exec")
                .map(|c| (*c).to_owned())
                .collect()
        };
        Self {
            grants: with("emit:"),
            secret_grants: with("secrets:"),
            widened: Vec::new(),
        }
    }

    /// `grants` took effect only because the user granted a wildcard that
    /// covers them (see the plugin host's `Capabilities::widened`): each
    /// covers what that wildcard would, so `emit:namespace:kube-system`
    /// requested by a plugin and granted as `emit:namespace:*` covers
    /// nothing.
    pub fn widened<'a>(mut self, grants: impl IntoIterator<Item = &'a str>) -> Self {
        self.widened = grants.into_iter().map(str::to_owned).collect();
        self
    }

    /// The grants `object` (its identity `reference`, namespace already
    /// defaulted; `None` for a cluster-scoped one) lacks, for a manifest whose
    /// objects default to `home` and whose render creates `made`. Empty:
    /// the plugin may emit it.
    pub fn missing(
        &self,
        reference: &ObjectRef,
        object: &Value,
        home: &str,
        made: &Made,
    ) -> Vec<Needed> {
        let kind = reference.kind.as_str();
        let group = reference.group.as_str();
        let name = reference.name.as_str();
        let mut needed = Vec::new();
        let named = || format!("emit:object:{kind}/{name}");
        match reference.namespace.as_deref() {
            Some(namespace) if namespace != home => needed.push(Needed {
                grant: format!("emit:namespace:{namespace}"),
                why: format!("the manifest's namespace is `{home}`"),
            }),
            Some(_) => {}
            None if group.is_empty() && kind == "Namespace" && name == home => {}
            None if group.is_empty() && kind == "Namespace" => needed.push(Needed {
                grant: format!("emit:namespace:{name}"),
                why: format!("the manifest's namespace is `{home}`"),
            }),
            None => needed.push(Needed {
                grant: format!("emit:cluster:{kind}"),
                why: "a cluster-scoped kind".to_owned(),
            }),
        }
        let is_namespace = group.is_empty() && kind == "Namespace";
        if SENSITIVE_KINDS.contains(&kind) {
            needed.push(Needed {
                grant: format!("emit:kind:{kind}"),
                why: "binds roles, intercepts or extends the API server, or defines an API"
                    .to_owned(),
            });
        } else if let Some(entry) = NAMED.iter().find(|n| n.group == group && n.kind == kind) {
            needed.push(Needed {
                grant: named(),
                why: entry.reason.to_owned(),
            });
        } else if reference.namespace.is_some() {
            let namespace = reference.namespace.as_deref().unwrap_or(home);
            match ALLOWED.iter().find(|a| a.group == group && a.kind == kind) {
                Some(entry) => {
                    if let Some(why) = entry
                        .check
                        .and_then(|check| check(object, &made.in_namespace(namespace)))
                    {
                        needed.push(Needed {
                            grant: named(),
                            why,
                        });
                    }
                }
                None => needed.push(Needed {
                    grant: format!("emit:kind:{kind}"),
                    why: "not a kind third-party plugins may emit without a grant".to_owned(),
                }),
            }
        } else if !is_namespace && let Some(why) = cluster_object_check(reference, object, home) {
            needed.push(Needed {
                grant: named(),
                why,
            });
        }
        // Whatever else makes Pods (a ReplicationController granted by
        // kind, a custom resource with a Pod template) keeps to the same
        // bounds as the allowed workloads, or needs its name granted.
        let judged = reference.namespace.is_some()
            && ALLOWED.iter().any(|a| a.group == group && a.kind == kind);
        if !judged
            && let Some(spec) = pod_spec_of(object)
            && let Some(why) = pod_spec_check(
                spec,
                &made.in_namespace(reference.namespace.as_deref().unwrap_or(home)),
            )
            && !needed.iter().any(|n| n.grant == named())
        {
            needed.push(Needed {
                grant: named(),
                why: format!("it makes Pods: {why}"),
            });
        }
        let built_in = BUILT_IN_GROUPS.contains(&group);
        needed.retain(|n| !self.allows(&n.grant, built_in));
        needed
    }

    /// Whether the plugin may create `kind` `name` whatever it carries: a
    /// grant naming the object (`emit:object:<Kind>/<name>`).
    pub fn names(&self, kind: &str, name: &str) -> bool {
        self.allows(&format!("emit:object:{kind}/{name}"), true)
    }

    /// Whether a grant covers `wanted`, for an object whose kind is
    /// `built_in` ([`BUILT_IN_GROUPS`]). A wildcard covers no `kube-*`
    /// namespace, no custom resource's kind and no object grant
    /// (`emit:object:*` would let the plugin choose the very objects those
    /// grants exist to name): those are granted by name.
    fn allows(&self, wanted: &str, built_in: bool) -> bool {
        let protected = wanted.starts_with("emit:object:")
            || wanted
                .strip_prefix("emit:namespace:")
                .is_some_and(|namespace| namespace.starts_with("kube-"))
            || (!built_in
                && (wanted.starts_with("emit:kind:") || wanted.starts_with("emit:cluster:")));
        self.grants
            .iter()
            .any(|grant| match grant.strip_suffix('*') {
                Some(prefix) => !protected && wanted.starts_with(prefix),
                None => grant == wanted && !(protected && self.widened.contains(grant)),
            })
    }
}

#[cfg(test)]
mod tests;
