//! The emit verdict's lists, as data: the kinds a third-party plugin may
//! emit without a grant ([`ALLOWED`], each with its reason and bounds), the
//! kinds whose objects each need a grant naming them ([`NAMED`]), the kinds
//! that always need a kind grant ([`SENSITIVE_KINDS`]) and the API groups a
//! wildcard grant covers ([`BUILT_IN_GROUPS`]).

use super::*;

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
        reason: "asks for new storage; `volumeName`, `selector`, a data source or an empty class would take a volume someone else left",
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
        kind: "PersistentVolume",
        reason: "names existing storage (a disk, a share, a node's files) and the credentials to reach it, which a claim of the manifest's namespace then reads",
    },
    Named {
        group: "storage.k8s.io",
        kind: "CSIDriver",
        reason: "tells the kubelet how to run a storage driver for every node, and which Pods' tokens to hand it",
    },
    Named {
        group: "networking.k8s.io",
        kind: "IPAddress",
        reason: "reserves a Service address, which another Service (the cluster's DNS, say) may be meant to have",
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
