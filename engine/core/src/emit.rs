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
}

/// One grant an object lacks, and why it is needed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Needed {
    /// The grant (`emit:kind:Role`).
    pub grant: String,
    /// Why (the list's reason, or what the object says).
    pub why: String,
}

/// Kinds that need `emit:kind:<Kind>` wherever they are created: they bind
/// roles, intercept or extend the API server, or define new APIs.
pub const SENSITIVE_KINDS: &[&str] = &[
    "RoleBinding",
    "ClusterRoleBinding",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "CustomResourceDefinition",
    "APIService",
];

/// A kind a third-party plugin may emit in its namespace without a grant.
#[derive(Debug)]
pub struct Allowed {
    /// API group (`""` for the core group).
    pub group: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Why an object of it cannot act for another identity or redirect
    /// traffic (within the bounds of `check`).
    pub reason: &'static str,
    /// What an object of it must keep to, if anything: `Some(why)` when
    /// this one goes beyond and needs a grant naming it.
    pub check: Option<fn(&Value, &Made) -> Option<String>>,
}

/// The kinds a third-party plugin may emit in its own namespace.
pub const ALLOWED: &[Allowed] = &[
    Allowed {
        group: "",
        kind: "ConfigMap",
        reason: "data only; nothing acts on it unless something the manifest runs reads it",
        check: Some(config_map_check),
    },
    Allowed {
        group: "",
        kind: "Secret",
        reason: "data types only (Opaque, TLS, registry, basic and SSH auth); a token Secret is filled by a controller with another identity's token",
        check: Some(secret_check),
    },
    Allowed {
        group: "",
        kind: "ServiceAccount",
        reason: "an identity with no rights until a binding (which needs a grant) gives it some",
        check: None,
    },
    Allowed {
        group: "",
        kind: "Service",
        reason: "routes to the namespace's own Pods; ExternalName and externalIPs can redirect other traffic",
        check: Some(service_check),
    },
    Allowed {
        group: "",
        kind: "PersistentVolumeClaim",
        reason: "asks for new storage; `volumeName` would bind a volume someone else left",
        check: Some(claim_check),
    },
    Allowed {
        group: "",
        kind: "Pod",
        reason: "runs as a ServiceAccount the same render creates, within the Pod Security baseline",
        check: Some(pod_check),
    },
    Allowed {
        group: "apps",
        kind: "Deployment",
        reason: "its Pods run as a ServiceAccount the same render creates, within the Pod Security baseline",
        check: Some(template_check),
    },
    Allowed {
        group: "apps",
        kind: "StatefulSet",
        reason: "its Pods run as a ServiceAccount the same render creates, within the Pod Security baseline; its claims ask for new storage",
        check: Some(stateful_check),
    },
    Allowed {
        group: "apps",
        kind: "DaemonSet",
        reason: "its Pods run as a ServiceAccount the same render creates, within the Pod Security baseline",
        check: Some(template_check),
    },
    Allowed {
        group: "apps",
        kind: "ReplicaSet",
        reason: "its Pods run as a ServiceAccount the same render creates, within the Pod Security baseline",
        check: Some(template_check),
    },
    Allowed {
        group: "batch",
        kind: "Job",
        reason: "its Pods run as a ServiceAccount the same render creates, within the Pod Security baseline",
        check: Some(template_check),
    },
    Allowed {
        group: "batch",
        kind: "CronJob",
        reason: "its Pods run as a ServiceAccount the same render creates, within the Pod Security baseline",
        check: Some(cron_check),
    },
    Allowed {
        group: "networking.k8s.io",
        kind: "Ingress",
        reason: "routes outside traffic to the namespace's own Services",
        check: None,
    },
    Allowed {
        group: "networking.k8s.io",
        kind: "NetworkPolicy",
        reason: "limits the namespace's own Pods' traffic",
        check: None,
    },
    Allowed {
        group: "autoscaling",
        kind: "HorizontalPodAutoscaler",
        reason: "scales the namespace's own workloads",
        check: None,
    },
    Allowed {
        group: "policy",
        kind: "PodDisruptionBudget",
        reason: "limits evictions of the namespace's own Pods",
        check: None,
    },
];

/// A kind whose every object needs a grant naming it.
#[derive(Debug)]
pub struct Named {
    /// API group.
    pub group: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Why a kind grant is not enough.
    pub reason: &'static str,
}

const CONTROLLER_INPUT: &str =
    "a controller applies what it names, with the controller's rights, not the plugin's";

/// Kinds whose objects each need `emit:object:<Kind>/<name>`.
pub const NAMED: &[Named] = &[
    Named {
        group: "discovery.k8s.io",
        kind: "EndpointSlice",
        reason: "sends a Service's traffic, `kubernetes` in `default` included, to any address",
    },
    Named {
        group: "",
        kind: "Endpoints",
        reason: "sends a Service's traffic, `kubernetes` in `default` included, to any address",
    },
    Named {
        group: "certificates.k8s.io",
        kind: "CertificateSigningRequest",
        reason: "asks for a certificate of an identity, which a signer may approve on its own",
    },
    Named {
        group: "certificates.k8s.io",
        kind: "ClusterTrustBundle",
        reason: "adds certificate authorities that Pods of every namespace may be given to trust",
    },
    Named {
        group: "",
        kind: "Node",
        reason: "registers a machine the scheduler sends other namespaces' Pods (and their Secrets) to",
    },
    Named {
        group: "source.toolkit.fluxcd.io",
        kind: "GitRepository",
        reason: CONTROLLER_INPUT,
    },
    Named {
        group: "source.toolkit.fluxcd.io",
        kind: "OCIRepository",
        reason: CONTROLLER_INPUT,
    },
    Named {
        group: "source.toolkit.fluxcd.io",
        kind: "HelmRepository",
        reason: CONTROLLER_INPUT,
    },
    Named {
        group: "source.toolkit.fluxcd.io",
        kind: "HelmChart",
        reason: CONTROLLER_INPUT,
    },
    Named {
        group: "source.toolkit.fluxcd.io",
        kind: "Bucket",
        reason: CONTROLLER_INPUT,
    },
    Named {
        group: "kustomize.toolkit.fluxcd.io",
        kind: "Kustomization",
        reason: CONTROLLER_INPUT,
    },
    Named {
        group: "helm.toolkit.fluxcd.io",
        kind: "HelmRelease",
        reason: CONTROLLER_INPUT,
    },
    Named {
        group: "argoproj.io",
        kind: "Application",
        reason: CONTROLLER_INPUT,
    },
    Named {
        group: "argoproj.io",
        kind: "ApplicationSet",
        reason: CONTROLLER_INPUT,
    },
    Named {
        group: "argoproj.io",
        kind: "AppProject",
        reason: "says what Argo CD applications may deploy, and where",
    },
    Named {
        group: "addons.cluster.x-k8s.io",
        kind: "ClusterResourceSet",
        reason: CONTROLLER_INPUT,
    },
    Named {
        group: "addons.cluster.x-k8s.io",
        kind: "ClusterResourceSetBinding",
        reason: CONTROLLER_INPUT,
    },
    Named {
        group: "external-secrets.io",
        kind: "ExternalSecret",
        reason: "copies a store's secret into the cluster with the store's credentials",
    },
    Named {
        group: "external-secrets.io",
        kind: "ClusterExternalSecret",
        reason: "copies a store's secret into the cluster with the store's credentials",
    },
    Named {
        group: "external-secrets.io",
        kind: "SecretStore",
        reason: "reaches a secret store with credentials it names",
    },
    Named {
        group: "external-secrets.io",
        kind: "ClusterSecretStore",
        reason: "reaches a secret store with credentials it names",
    },
    Named {
        group: "external-secrets.io",
        kind: "PushSecret",
        reason: "copies a cluster Secret out to a store",
    },
];

/// The API groups the API server serves itself. A wildcard grant
/// (`emit:kind:*`, `emit:cluster:*`) covers only their kinds: what a
/// controller does with a custom resource is unknown here, so its kind is
/// granted by name (`emit:kind:Certificate`).
pub const BUILT_IN_GROUPS: &[&str] = &[
    "",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "apps",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io",
    "networking.k8s.io",
    "node.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "resource.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "storagemigration.k8s.io",
];

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
        }
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

    /// Whether a grant covers `wanted`, for an object whose kind is
    /// `built_in` ([`BUILT_IN_GROUPS`]). A wildcard covers no `kube-*`
    /// namespace and no custom resource's kind: those are granted by name.
    fn allows(&self, wanted: &str, built_in: bool) -> bool {
        let protected = wanted
            .strip_prefix("emit:namespace:")
            .is_some_and(|namespace| namespace.starts_with("kube-"))
            || (!built_in
                && (wanted.starts_with("emit:kind:") || wanted.starts_with("emit:cluster:")));
        self.grants
            .iter()
            .any(|grant| match grant.strip_suffix('*') {
                Some(prefix) => !protected && wanted.starts_with(prefix),
                None => grant == wanted,
            })
    }
}

/// The labels a ClusterRole granted by kind may carry: any other label may
/// be what an aggregated ClusterRole (`view`, `edit`, `admin`, or one of the
/// cluster's own) selects, which would add this role's rules to it.
const ROLE_LABELS: &[&str] = &["app.kubernetes.io/", "helm.sh/chart"];

/// A cluster-scoped object granted by kind that still needs its name
/// granted: an aggregated ClusterRole (its rules flow into `view`, `edit`,
/// `admin` or any role that selects it) or one with a label that an
/// aggregation may select (only [`ROLE_LABELS`] are allowed), RBAC objects
/// named `system:*` (the API server's own), a PersistentVolume bound ahead
/// to a claim outside the manifest's namespace `home`, and the default
/// IngressClass or StorageClass (every Ingress or claim that names none
/// would use it).
fn cluster_object_check(reference: &ObjectRef, object: &Value, home: &str) -> Option<String> {
    let annotated_default = |key: &str| object["metadata"]["annotations"][key] == "true";
    match (reference.group.as_str(), reference.kind.as_str()) {
        ("", "PersistentVolume") => {
            let claim = &object["spec"]["claimRef"];
            if claim.is_null() {
                return None;
            }
            let namespace = claim["namespace"].as_str().unwrap_or_default();
            return (namespace != home).then(|| {
                format!(
                    "`claimRef` binds it ahead to a claim in namespace `{namespace}`, not the manifest's `{home}`"
                )
            });
        }
        ("networking.k8s.io", "IngressClass")
            if annotated_default("ingressclass.kubernetes.io/is-default-class") =>
        {
            return Some(
                "the default IngressClass serves every Ingress that names none".to_owned(),
            );
        }
        ("storage.k8s.io", "StorageClass")
            if annotated_default("storageclass.kubernetes.io/is-default-class")
                || annotated_default("storageclass.beta.kubernetes.io/is-default-class") =>
        {
            return Some(
                "the default StorageClass provisions every claim that names none".to_owned(),
            );
        }
        ("rbac.authorization.k8s.io", _) => {}
        _ => return None,
    }
    if reference.name.starts_with("system:") {
        return Some("`system:*` RBAC objects are the API server's own".to_owned());
    }
    if reference.kind == "ClusterRole" {
        if object
            .get("aggregationRule")
            .is_some_and(|rule| !rule.is_null())
        {
            return Some(
                "an aggregated ClusterRole takes the rules of every role it selects".to_owned(),
            );
        }
        let labels = object["metadata"]["labels"].as_object();
        if let Some((label, _)) = labels.into_iter().flatten().find(|(key, _)| {
            !ROLE_LABELS.iter().any(|allowed| {
                key.starts_with(allowed) && (allowed.ends_with('/') || key == allowed)
            })
        }) {
            return Some(format!(
                "label `{label}` may select it into an aggregated ClusterRole, which then gets its rules (a ClusterRole granted by kind carries only `app.kubernetes.io/*` and `helm.sh/chart` labels)"
            ));
        }
    }
    None
}

/// `kube-root-ca.crt` is the control plane's: every Pod of the namespace
/// trusts the CA it holds. A plugin's copy in a namespace the run creates
/// could be written before the control plane publishes the real one.
fn config_map_check(object: &Value, _: &Made) -> Option<String> {
    (object["metadata"]["name"] == "kube-root-ca.crt").then(|| {
        "`kube-root-ca.crt` is the CA the control plane publishes for every Pod of the namespace to trust".to_owned()
    })
}

/// Secret types that hold data for the namespace's own workloads.
const DATA_SECRET_TYPES: &[&str] = &[
    "Opaque",
    "kubernetes.io/tls",
    "kubernetes.io/dockerconfigjson",
    "kubernetes.io/dockercfg",
    "kubernetes.io/basic-auth",
    "kubernetes.io/ssh-auth",
];

fn secret_check(object: &Value, _: &Made) -> Option<String> {
    match &object["type"] {
        Value::Null => None,
        Value::String(kind) if DATA_SECRET_TYPES.contains(&kind.as_str()) => None,
        other => Some(format!(
            "Secret type {other} is not a data type ({})",
            DATA_SECRET_TYPES.join(", ")
        )),
    }
}

fn service_check(object: &Value, _: &Made) -> Option<String> {
    let spec = &object["spec"];
    match spec["type"].as_str() {
        None | Some("ClusterIP" | "NodePort" | "LoadBalancer") => {}
        Some(other) => return Some(format!("a Service of type `{other}` can point anywhere")),
    }
    if !spec["type"].is_null() && !spec["type"].is_string() {
        return Some("a Service `type` that is not a string".to_owned());
    }
    for field in ["clusterIP", "clusterIPs"] {
        let fixed = match &spec[field] {
            Value::Null => false,
            Value::String(ip) => !ip.is_empty() && ip != "None",
            Value::Array(ips) => ips.iter().any(|ip| ip != "" && ip != "None"),
            _ => true,
        };
        if fixed {
            return Some(format!(
                "`{field}` takes a fixed address, which another Service (the cluster's DNS, say) may be meant to have"
            ));
        }
    }
    let external = spec["externalIPs"]
        .as_array()
        .is_some_and(|ips| !ips.is_empty())
        || (!spec["externalIPs"].is_null() && !spec["externalIPs"].is_array());
    external.then(|| "`externalIPs` take traffic meant for other addresses".to_owned())
}

fn claim_check(object: &Value, _: &Made) -> Option<String> {
    let name = &object["spec"]["volumeName"];
    (!name.is_null() && name != "")
        .then(|| "`volumeName` binds an existing volume, with another's data".to_owned())
}

/// The Pod spec an object of any kind carries, found by its shape: its own
/// `spec` (a Pod), a `spec.template` (the workloads, ReplicationControllers,
/// most custom resources that run Pods) or a CronJob's job template.
fn pod_spec_of(object: &Value) -> Option<&Value> {
    let spec = &object["spec"];
    [
        spec,
        &spec["template"]["spec"],
        &spec["jobTemplate"]["spec"]["template"]["spec"],
    ]
    .into_iter()
    .find(|candidate| !candidate["containers"].is_null())
}

fn pod_check(object: &Value, made: &Made) -> Option<String> {
    pod_spec_check(&object["spec"], made)
}

fn template_check(object: &Value, made: &Made) -> Option<String> {
    pod_spec_check(&object["spec"]["template"]["spec"], made)
}

fn stateful_check(object: &Value, made: &Made) -> Option<String> {
    for claim in object["spec"]["volumeClaimTemplates"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if let Some(why) = claim_check(claim, made) {
            return Some(format!("a claim template's {why}"));
        }
    }
    template_check(object, made)
}

fn cron_check(object: &Value, made: &Made) -> Option<String> {
    pod_spec_check(
        &object["spec"]["jobTemplate"]["spec"]["template"]["spec"],
        made,
    )
}

/// Volume sources a Pod of a third-party plugin may use.
const VOLUME_SOURCES: &[&str] = &[
    "configMap",
    "secret",
    "emptyDir",
    "persistentVolumeClaim",
    "downwardAPI",
    "projected",
    "ephemeral",
    "image",
];

/// Sources of a projected volume it may use.
const PROJECTED_SOURCES: &[&str] = &[
    "configMap",
    "secret",
    "downwardAPI",
    "serviceAccountToken",
    "clusterTrustBundle",
];

/// Capabilities the Pod Security baseline lets a container add.
const BASELINE_CAPABILITIES: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// Sysctls the Pod Security baseline calls safe.
const SAFE_SYSCTLS: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
];

/// Whether a Pod spec stays within what a third-party plugin may run: as a
/// ServiceAccount the same render creates (or with no token of another's),
/// and within the Pod Security baseline, by allow-list (volume sources,
/// capabilities, sysctls; no host namespaces, ports or privilege).
fn pod_spec_check(spec: &Value, made: &Made) -> Option<String> {
    let Some(spec) = spec.as_object() else {
        return Some("no Pod spec to check".to_owned());
    };
    for field in ["hostNetwork", "hostPID", "hostIPC", "hostUsers"] {
        let value = spec.get(field).unwrap_or(&Value::Null);
        let refused = match field {
            // hostUsers: false is the safer setting; true is the default.
            "hostUsers" => !value.is_null() && !value.is_boolean(),
            _ => !value.is_null() && value != &Value::Bool(false),
        };
        if refused {
            return Some(format!("`{field}` shares the node's"));
        }
    }
    let account = match (spec.get("serviceAccountName"), spec.get("serviceAccount")) {
        (Some(Value::String(name)), _) | (None | Some(Value::Null), Some(Value::String(name))) => {
            name.as_str()
        }
        (None | Some(Value::Null), None | Some(Value::Null)) => "default",
        _ => return Some("a ServiceAccount name that is not a string".to_owned()),
    };
    let own = made
        .service_accounts
        .contains(&(made.namespace.clone(), account.to_owned()));
    let volumes = spec.get("volumes").and_then(Value::as_array);
    if !spec.get("volumes").is_none_or(Value::is_null) && volumes.is_none() {
        return Some("`volumes` is not a list".to_owned());
    }
    let mut projects_token = false;
    for volume in volumes.into_iter().flatten() {
        let Some(volume) = volume.as_object() else {
            return Some("a volume that is not a mapping".to_owned());
        };
        let name = volume.get("name").and_then(Value::as_str).unwrap_or("?");
        let sources: Vec<&String> = volume.keys().filter(|k| *k != "name").collect();
        let [source] = sources.as_slice() else {
            return Some(format!("volume `{name}` has not exactly one source"));
        };
        if !VOLUME_SOURCES.contains(&source.as_str()) {
            return Some(format!(
                "volume `{name}` is of type `{source}` (allowed: {})",
                VOLUME_SOURCES.join(", ")
            ));
        }
        if source.as_str() == "secret"
            && let Some(why) = secret_read(&volume["secret"]["secretName"], made)
        {
            return Some(format!("volume `{name}` {why}"));
        }
        if source.as_str() == "ephemeral"
            && let Some(why) = claim_check(&volume["ephemeral"]["volumeClaimTemplate"], made)
        {
            return Some(format!("volume `{name}`'s claim template: {why}"));
        }
        if source.as_str() == "projected" {
            let projections = volume["projected"]["sources"].as_array();
            for projection in projections.into_iter().flatten() {
                let Some(projection) = projection.as_object() else {
                    return Some(format!("volume `{name}` projects something unreadable"));
                };
                for key in projection.keys() {
                    if !PROJECTED_SOURCES.contains(&key.as_str()) {
                        return Some(format!("volume `{name}` projects `{key}`"));
                    }
                    projects_token |= key == "serviceAccountToken";
                }
                if let Some(why) = projection
                    .get("secret")
                    .and_then(|secret| secret_read(&secret["name"], made))
                {
                    return Some(format!("volume `{name}` {why}"));
                }
            }
        }
    }
    let automount = spec.get("automountServiceAccountToken");
    let no_token = automount == Some(&Value::Bool(false)) && !projects_token;
    if !own && !no_token {
        return Some(format!(
            "its Pods run as ServiceAccount `{account}`, which this render does not create (create it in the manifest, or set `automountServiceAccountToken: false` and project no token)"
        ));
    }
    if let Some(context) = spec.get("securityContext").filter(|c| !c.is_null()) {
        if let Some(why) = context_check(context, POD_CONTEXT) {
            return Some(format!("the Pod's {why}"));
        }
        for sysctl in context["sysctls"].as_array().into_iter().flatten() {
            let name = sysctl["name"].as_str().unwrap_or_default();
            if !SAFE_SYSCTLS.contains(&name) {
                return Some(format!(
                    "sysctl `{name}` is not one the baseline calls safe"
                ));
            }
        }
    }
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        let Some(value) = spec.get(list).filter(|v| !v.is_null()) else {
            continue;
        };
        let Some(containers) = value.as_array() else {
            return Some(format!("`{list}` is not a list"));
        };
        for container in containers {
            if let Some(why) = container_check(container, made) {
                return Some(why);
            }
        }
    }
    None
}

/// Why reading Secret `name` is beyond a plugin's Pod: it is not one the
/// same render creates (another identity's token, say).
fn secret_read(name: &Value, made: &Made) -> Option<String> {
    match name.as_str() {
        Some(name) if made.has_secret(name) => None,
        Some(name) => Some(format!(
            "reads Secret `{name}`, which this render does not create"
        )),
        None => Some("reads a Secret it does not name".to_owned()),
    }
}

/// The fields of a Pod's `securityContext` a plugin's Pod may set: the
/// rest (`windowsOptions` with its host processes, say) needs a grant.
const POD_CONTEXT: &[&str] = &[
    "runAsUser",
    "runAsGroup",
    "runAsNonRoot",
    "fsGroup",
    "fsGroupChangePolicy",
    "supplementalGroups",
    "supplementalGroupsPolicy",
    "sysctls",
    "seccompProfile",
    "appArmorProfile",
    "seLinuxOptions",
    "seLinuxChangePolicy",
];

/// The fields of a container's `securityContext` a plugin's Pod may set.
const CONTAINER_CONTEXT: &[&str] = &[
    "runAsUser",
    "runAsGroup",
    "runAsNonRoot",
    "allowPrivilegeEscalation",
    "readOnlyRootFilesystem",
    "privileged",
    "procMount",
    "capabilities",
    "seccompProfile",
    "appArmorProfile",
    "seLinuxOptions",
];

/// Profiles (seccomp, AppArmor) the Pod Security baseline allows.
const PROFILES: &[&str] = &["RuntimeDefault", "Localhost"];

/// SELinux types the Pod Security baseline allows.
const SELINUX_TYPES: &[&str] = &[
    "",
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

/// A `securityContext` within the baseline: only the fields of `allowed`,
/// confined profiles, and SELinux options that pick an allowed type only.
fn context_check(context: &Value, allowed: &[&str]) -> Option<String> {
    let Some(context) = context.as_object() else {
        return Some("securityContext is not a mapping".to_owned());
    };
    if let Some(field) = context.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Some(format!("securityContext sets `{field}`"));
    }
    for profile in ["seccompProfile", "appArmorProfile"] {
        let Some(value) = context.get(profile).filter(|v| !v.is_null()) else {
            continue;
        };
        let kind = value["type"].as_str().unwrap_or_default();
        if !PROFILES.contains(&kind) {
            return Some(format!(
                "securityContext's {profile} is `{kind}` (allowed: {})",
                PROFILES.join(", ")
            ));
        }
    }
    if let Some(options) = context.get("seLinuxOptions").filter(|v| !v.is_null()) {
        let Some(options) = options.as_object() else {
            return Some("seLinuxOptions is not a mapping".to_owned());
        };
        for (key, value) in options {
            let fine = match key.as_str() {
                "type" => value.as_str().is_some_and(|t| SELINUX_TYPES.contains(&t)),
                "level" => value.is_string(),
                _ => value.is_null() || value == "",
            };
            if !fine {
                return Some(format!("seLinuxOptions sets {key} {value}"));
            }
        }
    }
    None
}

fn container_check(container: &Value, made: &Made) -> Option<String> {
    let name = container["name"].as_str().unwrap_or("?");
    let context = &container["securityContext"];
    if !context.is_null()
        && let Some(why) = context_check(context, CONTAINER_CONTEXT)
    {
        return Some(format!("container `{name}`'s {why}"));
    }
    for variable in container["env"].as_array().into_iter().flatten() {
        let reference = &variable["valueFrom"]["secretKeyRef"];
        if !reference.is_null()
            && let Some(why) = secret_read(&reference["name"], made)
        {
            return Some(format!("container `{name}` {why}"));
        }
    }
    for source in container["envFrom"].as_array().into_iter().flatten() {
        let reference = &source["secretRef"];
        if !reference.is_null()
            && let Some(why) = secret_read(&reference["name"], made)
        {
            return Some(format!("container `{name}` {why}"));
        }
    }
    let privileged = &context["privileged"];
    if !privileged.is_null() && privileged != &Value::Bool(false) {
        return Some(format!("container `{name}` is privileged"));
    }
    let procs = &context["procMount"];
    if !procs.is_null() && procs != "Default" {
        return Some(format!("container `{name}` asks for procMount {procs}"));
    }
    for capability in context["capabilities"]["add"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let text = capability.as_str().unwrap_or_default();
        if !BASELINE_CAPABILITIES.contains(&text.trim_start_matches("CAP_")) {
            return Some(format!(
                "container `{name}` adds capability {capability}, beyond the baseline"
            ));
        }
    }
    for port in container["ports"].as_array().into_iter().flatten() {
        let host = &port["hostPort"];
        if !host.is_null() && host != 0 {
            return Some(format!("container `{name}` takes host port {host}"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reference(object: &Value, home: &str, namespaced: bool) -> ObjectRef {
        let mut reference = ObjectRef::of(object).unwrap();
        if namespaced && reference.namespace.is_none() {
            reference.namespace = Some(home.to_owned());
        }
        if !namespaced {
            reference.namespace = None;
        }
        reference
    }

    /// The grants `object` lacks under `scope` in a render of `render`.
    fn lacks(
        scope: &EmitScope,
        object: &Value,
        render: &[&Value],
        namespaced: bool,
    ) -> Vec<String> {
        let made = Made::of(render.iter().copied(), "apps");
        scope
            .missing(
                &reference(object, "apps", namespaced),
                object,
                "apps",
                &made,
            )
            .into_iter()
            .map(|n| n.grant)
            .collect()
    }

    /// Pod `p` running as ServiceAccount `app`, with `extra` fields in its spec.
    fn app_pod(extra: Value) -> Value {
        let mut spec = json!({"serviceAccountName": "app", "containers": [{"name": "c"}]});
        spec.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        object("v1", "Pod", "p", json!({"spec": spec}))
    }

    fn object(api: &str, kind: &str, name: &str, rest: Value) -> Value {
        let mut value = json!({"apiVersion": api, "kind": kind, "metadata": {"name": name}});
        if let (Some(value), Some(rest)) = (value.as_object_mut(), rest.as_object()) {
            for (key, field) in rest {
                if key == "metadata" {
                    value["metadata"]
                        .as_object_mut()
                        .unwrap()
                        .extend(field.as_object().unwrap().clone());
                } else {
                    value.insert(key.clone(), field.clone());
                }
            }
        }
        value
    }

    #[test]
    fn without_grants_only_allowed_kinds_in_the_manifests_namespace() {
        let none = EmitScope::default();
        let config = object("v1", "ConfigMap", "a", json!({}));
        assert!(lacks(&none, &config, &[], true).is_empty());
        let home = object("v1", "Namespace", "apps", json!({}));
        assert!(lacks(&none, &home, &[], false).is_empty());
        let elsewhere = object(
            "v1",
            "Secret",
            "a",
            json!({"metadata": {"namespace": "kube-system"}}),
        );
        assert_eq!(
            lacks(&none, &elsewhere, &[], true),
            ["emit:namespace:kube-system"]
        );
        let binding = object(
            "rbac.authorization.k8s.io/v1",
            "ClusterRoleBinding",
            "x",
            json!({}),
        );
        assert_eq!(
            lacks(&none, &binding, &[], false),
            [
                "emit:cluster:ClusterRoleBinding",
                "emit:kind:ClusterRoleBinding"
            ]
        );
        let role_binding = object(
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
            "x",
            json!({}),
        );
        assert_eq!(
            lacks(&none, &role_binding, &[], true),
            ["emit:kind:RoleBinding"]
        );
        // Not on the list: a kind grant.
        let role = object("rbac.authorization.k8s.io/v1", "Role", "x", json!({}));
        assert_eq!(lacks(&none, &role, &[], true), ["emit:kind:Role"]);
        // A kind of another group that shares an allowed kind's name.
        let lookalike = object("evil.example/v1", "ConfigMap", "x", json!({}));
        assert_eq!(lacks(&none, &lookalike, &[], true), ["emit:kind:ConfigMap"]);
    }

    #[test]
    fn grants_widen_the_scope_but_wildcards_skip_kube_namespaces() {
        let scope = EmitScope::new(["emit:namespace:*", "emit:cluster:*", "exec:helm"]);
        let other = object(
            "v1",
            "ConfigMap",
            "a",
            json!({"metadata": {"namespace": "other"}}),
        );
        assert!(lacks(&scope, &other, &[], true).is_empty());
        let role = object(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "a",
            json!({}),
        );
        assert!(lacks(&scope, &role, &[], false).is_empty());
        let system = object(
            "v1",
            "Secret",
            "a",
            json!({"metadata": {"namespace": "kube-system"}}),
        );
        assert_eq!(
            lacks(&scope, &system, &[], true),
            ["emit:namespace:kube-system"]
        );
        let scope = EmitScope::new(["emit:namespace:kube-system"]);
        assert!(lacks(&scope, &system, &[], true).is_empty());
    }

    #[test]
    fn traffic_redirecting_objects_need_a_grant_naming_them() {
        let none = EmitScope::default();
        for (object, grant) in [
            (
                object(
                    "discovery.k8s.io/v1",
                    "EndpointSlice",
                    "kubernetes",
                    json!({}),
                ),
                "emit:object:EndpointSlice/kubernetes",
            ),
            (
                object("v1", "Endpoints", "kubernetes", json!({})),
                "emit:object:Endpoints/kubernetes",
            ),
            (
                object(
                    "v1",
                    "Service",
                    "s",
                    json!({"spec": {"type": "ExternalName", "externalName": "x"}}),
                ),
                "emit:object:Service/s",
            ),
            (
                object(
                    "v1",
                    "Service",
                    "s",
                    json!({"spec": {"externalIPs": ["10.0.0.1"]}}),
                ),
                "emit:object:Service/s",
            ),
            (
                object(
                    "v1",
                    "PersistentVolumeClaim",
                    "c",
                    json!({"spec": {"volumeName": "pv-of-another"}}),
                ),
                "emit:object:PersistentVolumeClaim/c",
            ),
        ] {
            assert_eq!(lacks(&none, &object, &[], true), [grant], "{object}");
        }
        let plain = object(
            "v1",
            "Service",
            "s",
            json!({"spec": {"selector": {"a": "b"}}}),
        );
        assert!(lacks(&none, &plain, &[], true).is_empty());
        let granted = EmitScope::new(["emit:object:EndpointSlice/kubernetes"]);
        let slice = object(
            "discovery.k8s.io/v1",
            "EndpointSlice",
            "kubernetes",
            json!({}),
        );
        assert!(lacks(&granted, &slice, &[], true).is_empty());
        // A kind grant is not enough for a named kind.
        let kind = EmitScope::new(["emit:kind:EndpointSlice"]);
        assert!(!lacks(&kind, &slice, &[], true).is_empty());
    }

    #[test]
    fn a_token_secret_needs_a_grant_naming_it_and_data_secrets_do_not() {
        let none = EmitScope::default();
        for kind in [
            "kubernetes.io/service-account-token",
            "bootstrap.kubernetes.io/token",
            "x",
        ] {
            let secret = object("v1", "Secret", "t", json!({"type": kind}));
            assert_eq!(
                lacks(&none, &secret, &[], true),
                ["emit:object:Secret/t"],
                "{kind}"
            );
        }
        for kind in [json!(null), json!("Opaque"), json!("kubernetes.io/tls")] {
            let secret = object("v1", "Secret", "t", json!({"type": kind}));
            assert!(lacks(&none, &secret, &[], true).is_empty(), "{kind}");
        }
        let odd = object("v1", "Secret", "t", json!({"type": ["Opaque"]}));
        assert!(!lacks(&none, &odd, &[], true).is_empty());
    }

    #[test]
    fn a_workload_runs_only_as_a_service_account_its_render_creates() {
        let none = EmitScope::default();
        let account = object("v1", "ServiceAccount", "app", json!({}));
        let deployment = |spec: Value| {
            object(
                "apps/v1",
                "Deployment",
                "d",
                json!({"spec": {"template": {"spec": spec}}}),
            )
        };
        let own = deployment(json!({"serviceAccountName": "app", "containers": [{"name": "c"}]}));
        assert!(lacks(&none, &own, &[&account, &own], true).is_empty());
        // The namespace's default, or another's admin account: not created here.
        for spec in [
            json!({"containers": [{"name": "c"}]}),
            json!({"serviceAccountName": "cluster-admin-sa", "containers": []}),
            json!({"serviceAccount": "cluster-admin-sa"}),
            // The token comes back through a projected volume.
            json!({"automountServiceAccountToken": false, "volumes": [{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]}),
        ] {
            let other = deployment(spec.clone());
            assert_eq!(
                lacks(&none, &other, &[&account], true),
                ["emit:object:Deployment/d"],
                "{spec}"
            );
        }
        // No token at all: any account.
        let tokenless = deployment(
            json!({"automountServiceAccountToken": false, "containers": [{"name": "c"}]}),
        );
        assert!(lacks(&none, &tokenless, &[], true).is_empty());
        // The same account name in another namespace is another account.
        let elsewhere = object(
            "v1",
            "ServiceAccount",
            "app",
            json!({"metadata": {"namespace": "other"}}),
        );
        assert!(!lacks(&none, &own, &[&elsewhere], true).is_empty());
        // Pods and CronJobs are read the same way.
        let pod = object(
            "v1",
            "Pod",
            "p",
            json!({"spec": {"serviceAccountName": "admin"}}),
        );
        assert_eq!(lacks(&none, &pod, &[], true), ["emit:object:Pod/p"]);
        let cron = object(
            "batch/v1",
            "CronJob",
            "c",
            json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"serviceAccountName": "admin"}}}}}}),
        );
        assert_eq!(lacks(&none, &cron, &[], true), ["emit:object:CronJob/c"]);
    }

    #[test]
    fn a_workload_stays_within_the_pod_security_baseline() {
        let none = EmitScope::default();
        let account = object("v1", "ServiceAccount", "app", json!({}));
        let pod = app_pod;
        assert!(lacks(&none, &pod(json!({})), &[&account], true).is_empty());
        for extra in [
            json!({"hostNetwork": true}),
            json!({"hostPID": true}),
            json!({"hostIPC": "yes"}),
            json!({"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}),
            json!({"volumes": [{"name": "c", "csi": {"driver": "x"}}]}),
            json!({"volumes": [{"name": "two", "emptyDir": {}, "hostPath": {"path": "/"}}]}),
            json!({"volumes": "x"}),
            json!({"containers": [{"name": "c", "securityContext": {"privileged": true}}]}),
            json!({"initContainers": [{"name": "i", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}]}),
            json!({"ephemeralContainers": [{"name": "e", "securityContext": {"capabilities": {"add": ["CAP_BPF"]}}}]}),
            json!({"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}]}]}),
            json!({"containers": [{"name": "c", "securityContext": {"procMount": "Unmasked"}}]}),
            json!({"securityContext": {"sysctls": [{"name": "kernel.core_pattern", "value": "|/x"}]}}),
            json!({"containers": "c"}),
        ] {
            assert_eq!(
                lacks(&none, &pod(extra.clone()), &[&account], true),
                ["emit:object:Pod/p"],
                "{extra}"
            );
        }
        let fine = pod(
            json!({"volumes": [{"name": "c", "configMap": {"name": "x"}}], "containers": [{"name": "c", "securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE"]}}}]}),
        );
        assert!(lacks(&none, &fine, &[&account], true).is_empty());
    }

    #[test]
    fn the_next_spellings_of_an_outside_attack_need_a_grant_naming_them() {
        let none = EmitScope::default();
        let account = object("v1", "ServiceAccount", "app", json!({}));
        let own_secret = object("v1", "Secret", "mine", json!({}));
        let render = [&account, &own_secret];
        let pod = app_pod;
        // Another identity's token, read rather than mounted as the Pod's.
        for extra in [
            json!({"automountServiceAccountToken": false, "volumes": [{"name": "t", "secret": {"secretName": "admin-token"}}]}),
            json!({"volumes": [{"name": "t", "projected": {"sources": [{"secret": {"name": "admin-token"}}]}}]}),
            json!({"containers": [{"name": "c", "env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "admin-token", "key": "token"}}}]}]}),
            json!({"containers": [{"name": "c", "envFrom": [{"secretRef": {"name": "admin-token"}}]}]}),
            json!({"volumes": [{"name": "t", "secret": {}}]}),
            // Outside the baseline, by fields the API server lets through.
            json!({"securityContext": {"seccompProfile": {"type": "Unconfined"}}}),
            json!({"containers": [{"name": "c", "securityContext": {"appArmorProfile": {"type": "Unconfined"}}}]}),
            json!({"securityContext": {"seLinuxOptions": {"type": "spc_t"}}}),
            json!({"containers": [{"name": "c", "securityContext": {"seLinuxOptions": {"user": "system_u"}}}]}),
            json!({"securityContext": {"windowsOptions": {"hostProcess": true}}}),
            json!({"containers": [{"name": "c", "securityContext": {"windowsOptions": {"hostProcess": true}}}]}),
            // A volume someone else left, through a claim template.
            json!({"volumes": [{"name": "v", "ephemeral": {"volumeClaimTemplate": {"spec": {"volumeName": "someone-elses-pv"}}}}]}),
        ] {
            assert_eq!(
                lacks(&none, &pod(extra.clone()), &render, true),
                ["emit:object:Pod/p"],
                "{extra}"
            );
        }
        // A token Secret of the same render is still another's token.
        let token = object(
            "v1",
            "Secret",
            "admin-token",
            json!({"type": "kubernetes.io/service-account-token"}),
        );
        let reads =
            pod(json!({"volumes": [{"name": "t", "secret": {"secretName": "admin-token"}}]}));
        assert_eq!(
            lacks(&none, &reads, &[&account, &token], true),
            ["emit:object:Pod/p"]
        );
        // What the render creates, and confined profiles, are fine.
        let fine = pod(json!({
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}, "runAsNonRoot": true},
            "volumes": [{"name": "s", "secret": {"secretName": "mine"}}],
            "containers": [{"name": "c", "envFrom": [{"secretRef": {"name": "mine"}}], "securityContext": {"allowPrivilegeEscalation": false, "seLinuxOptions": {"type": "container_t", "level": "s0:c1"}}}],
        }));
        assert!(lacks(&none, &fine, &render, true).is_empty());
        let stateful = object(
            "apps/v1",
            "StatefulSet",
            "s",
            json!({"spec": {"template": {"spec": {"serviceAccountName": "app", "containers": []}}, "volumeClaimTemplates": [{"metadata": {"name": "d"}, "spec": {"volumeName": "someone-elses-pv"}}]}}),
        );
        assert_eq!(
            lacks(&none, &stateful, &render, true),
            ["emit:object:StatefulSet/s"]
        );
        // A fixed cluster IP takes an address another Service is meant to have.
        for ip in [json!("10.96.0.10"), json!(["10.96.0.10"]), json!(7)] {
            let service = object("v1", "Service", "s", json!({"spec": {"clusterIP": ip}}));
            assert_eq!(
                lacks(&none, &service, &[], true),
                ["emit:object:Service/s"],
                "{ip}"
            );
        }
        let headless = object("v1", "Service", "s", json!({"spec": {"clusterIP": "None"}}));
        assert!(lacks(&none, &headless, &[], true).is_empty());
        // A kind grant on something else that makes Pods does not lift the
        // workload bounds.
        let granted = EmitScope::new(["emit:kind:ReplicationController"]);
        let controller = |account: &str| {
            object(
                "v1",
                "ReplicationController",
                "rc",
                json!({"spec": {"template": {"spec": {"serviceAccountName": account, "containers": [{"name": "c"}]}}}}),
            )
        };
        assert_eq!(
            lacks(&granted, &controller("admin"), &render, true),
            ["emit:object:ReplicationController/rc"]
        );
        assert!(lacks(&granted, &controller("app"), &render, true).is_empty());
        assert_eq!(
            lacks(&none, &controller("app"), &render, true),
            ["emit:kind:ReplicationController"]
        );
    }

    #[test]
    fn controller_inputs_need_a_grant_naming_them() {
        let none = EmitScope::default();
        for (api, kind) in [
            ("kustomize.toolkit.fluxcd.io/v1", "Kustomization"),
            ("helm.toolkit.fluxcd.io/v2", "HelmRelease"),
            ("source.toolkit.fluxcd.io/v1", "GitRepository"),
            ("source.toolkit.fluxcd.io/v1beta2", "OCIRepository"),
            ("argoproj.io/v1alpha1", "Application"),
            ("argoproj.io/v1alpha1", "ApplicationSet"),
            ("addons.cluster.x-k8s.io/v1beta1", "ClusterResourceSet"),
            ("external-secrets.io/v1", "ExternalSecret"),
            ("external-secrets.io/v1", "SecretStore"),
        ] {
            let input = object(api, kind, "root", json!({}));
            assert_eq!(
                lacks(&none, &input, &[], true),
                [format!("emit:object:{kind}/root")],
                "{kind}"
            );
            let kind_grant = EmitScope::new([format!("emit:kind:{kind}").as_str()]);
            assert!(!lacks(&kind_grant, &input, &[], true).is_empty(), "{kind}");
        }
    }

    #[test]
    fn aggregated_and_system_roles_need_a_grant_naming_them() {
        let scope = EmitScope::new(["emit:cluster:ClusterRole"]);
        let plain = object(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "reader",
            json!({"rules": []}),
        );
        assert!(lacks(&scope, &plain, &[], false).is_empty());
        for role in [
            object(
                "rbac.authorization.k8s.io/v1",
                "ClusterRole",
                "r",
                json!({"metadata": {"labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}}),
            ),
            object(
                "rbac.authorization.k8s.io/v1",
                "ClusterRole",
                "r",
                json!({"metadata": {"labels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}}),
            ),
            object(
                "rbac.authorization.k8s.io/v1",
                "ClusterRole",
                "r",
                json!({"aggregationRule": {"clusterRoleSelectors": [{}]}}),
            ),
        ] {
            assert_eq!(
                lacks(&scope, &role, &[], false),
                ["emit:object:ClusterRole/r"],
                "{role}"
            );
        }
        let system = object(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "system:public-info-viewer",
            json!({}),
        );
        assert_eq!(
            lacks(&scope, &system, &[], false),
            ["emit:object:ClusterRole/system:public-info-viewer"]
        );
        let named = EmitScope::new(["emit:cluster:ClusterRole", "emit:object:ClusterRole/r"]);
        assert!(
            lacks(
                &named,
                &object(
                    "rbac.authorization.k8s.io/v1",
                    "ClusterRole",
                    "r",
                    json!({"aggregationRule": {}})
                ),
                &[],
                false
            )
            .is_empty()
        );
    }

    #[test]
    fn every_entry_of_the_lists_says_why() {
        for entry in ALLOWED {
            assert!(!entry.reason.is_empty(), "{}", entry.kind);
            assert!(
                !NAMED
                    .iter()
                    .any(|n| n.kind == entry.kind && n.group == entry.group)
            );
        }
        for entry in NAMED {
            assert!(!entry.reason.is_empty(), "{}", entry.kind);
        }
    }

    #[test]
    fn a_wildcard_covers_only_the_api_servers_own_kinds() {
        let wide = EmitScope::new(["emit:kind:*", "emit:cluster:*", "emit:namespace:*"]);
        let quota = object("v1", "ResourceQuota", "q", json!({}));
        assert!(lacks(&wide, &quota, &[], true).is_empty());
        let certificate = object("cert-manager.io/v1", "Certificate", "c", json!({}));
        assert_eq!(
            lacks(&wide, &certificate, &[], true),
            ["emit:kind:Certificate"]
        );
        let issuer = object("cert-manager.io/v1", "ClusterIssuer", "i", json!({}));
        assert_eq!(
            lacks(&wide, &issuer, &[], false),
            ["emit:cluster:ClusterIssuer"]
        );
        // A group that only looks like the API server's is a custom one.
        let lookalike = object("apps.example.com/v1", "Deployment", "d", json!({}));
        assert_eq!(
            lacks(&wide, &lookalike, &[], true),
            ["emit:kind:Deployment"]
        );
        let named = EmitScope::new(["emit:kind:Certificate", "emit:cluster:ClusterIssuer"]);
        assert!(lacks(&named, &certificate, &[], true).is_empty());
        assert!(lacks(&named, &issuer, &[], false).is_empty());
    }

    #[test]
    fn a_cluster_role_carries_only_labels_no_aggregation_selects() {
        let scope = EmitScope::new(["emit:cluster:*"]);
        let role = |labels: Value| {
            object(
                "rbac.authorization.k8s.io/v1",
                "ClusterRole",
                "r",
                json!({"metadata": {"labels": labels}}),
            )
        };
        for fine in [
            json!({"app.kubernetes.io/name": "x", "app.kubernetes.io/part-of": "y"}),
            json!({"helm.sh/chart": "x-1.0.0"}),
        ] {
            assert!(
                lacks(&scope, &role(fine.clone()), &[], false).is_empty(),
                "{fine}"
            );
        }
        for selected in [
            json!({"example.com/aggregate-to-monitoring": "true"}),
            json!({"app": "x"}),
            json!({"helm.sh/chart-evil": "x"}),
            json!({"rbac.authorization.k8s.io/aggregate-to-edit": "true"}),
        ] {
            assert_eq!(
                lacks(&scope, &role(selected.clone()), &[], false),
                ["emit:object:ClusterRole/r"],
                "{selected}"
            );
        }
    }

    #[test]
    fn cluster_objects_that_reach_other_namespaces_need_a_grant_naming_them() {
        let scope = EmitScope::new(["emit:cluster:*"]);
        let volume = |claim: Value| {
            object(
                "v1",
                "PersistentVolume",
                "pv",
                json!({"spec": {"claimRef": claim}}),
            )
        };
        assert!(lacks(&scope, &volume(Value::Null), &[], false).is_empty());
        assert!(
            lacks(
                &scope,
                &volume(json!({"namespace": "apps", "name": "data"})),
                &[],
                false
            )
            .is_empty()
        );
        for claim in [
            json!({"namespace": "team-b", "name": "data"}),
            json!({"name": "data"}),
        ] {
            assert_eq!(
                lacks(&scope, &volume(claim.clone()), &[], false),
                ["emit:object:PersistentVolume/pv"],
                "{claim}"
            );
        }
        let default = |api: &str, kind: &str, key: &str| {
            object(
                api,
                kind,
                "d",
                json!({"metadata": {"annotations": {key: "true"}}}),
            )
        };
        for (api, kind, key) in [
            (
                "networking.k8s.io/v1",
                "IngressClass",
                "ingressclass.kubernetes.io/is-default-class",
            ),
            (
                "storage.k8s.io/v1",
                "StorageClass",
                "storageclass.kubernetes.io/is-default-class",
            ),
            (
                "storage.k8s.io/v1",
                "StorageClass",
                "storageclass.beta.kubernetes.io/is-default-class",
            ),
        ] {
            assert_eq!(
                lacks(&scope, &default(api, kind, key), &[], false),
                [format!("emit:object:{kind}/d")],
                "{key}"
            );
            let plain = object(api, kind, "d", json!({}));
            assert!(lacks(&scope, &plain, &[], false).is_empty(), "{kind}");
        }
        for (api, kind) in [
            ("v1", "Node"),
            ("certificates.k8s.io/v1beta1", "ClusterTrustBundle"),
        ] {
            let made = object(api, kind, "n", json!({}));
            assert_eq!(
                lacks(&scope, &made, &[], false),
                [format!("emit:object:{kind}/n")],
                "{kind}"
            );
        }
    }

    #[test]
    fn the_control_planes_ca_bundle_needs_a_grant_naming_it() {
        let none = EmitScope::default();
        let forged = object(
            "v1",
            "ConfigMap",
            "kube-root-ca.crt",
            json!({"data": {"ca.crt": "x"}}),
        );
        assert_eq!(
            lacks(&none, &forged, &[], true),
            ["emit:object:ConfigMap/kube-root-ca.crt"]
        );
    }
}
