//! Which kinds are namespaced, and giving namespaced objects the manifest's default namespace.
//!
//! Like `kubectl apply -n <ns>`, every namespaced object without `metadata.namespace` gets the
//! default namespace, while cluster-scoped objects stay without one. A kind's scope comes from, in
//! order: a CustomResourceDefinition in the same render, the target cluster's discovery (when the
//! host knows a cluster), and a built-in table of the cluster-scoped kinds of Kubernetes 1.37.
//! Kinds known to none of them are taken as namespaced, as almost all are. Kinds are keyed by API
//! group and kind, never by kind alone.

use std::collections::HashMap;

use serde_json::{Map, Value};
use tazuna_sdk::ClusterInfo;

/// The scope of every kind the render might meet.
#[derive(Debug, Default)]
pub struct Scopes {
    /// `(group, kind)` → namespaced, from CRDs and cluster discovery.
    learned: HashMap<(String, String), bool>,
}

impl Scopes {
    /// Scopes as the target cluster reports them, if a cluster is known.
    pub fn new(cluster: Option<&ClusterInfo>) -> Self {
        let mut scopes = Self::default();
        for resource in cluster.iter().flat_map(|cluster| &cluster.resources) {
            let group = group_of(&resource.group_version);
            scopes.learned.insert(
                (group.to_owned(), resource.kind.clone()),
                resource.namespaced,
            );
        }
        scopes
    }

    /// Learns the scope of the kinds defined by the CustomResourceDefinitions among `objects`.
    pub fn learn_definitions<'a>(
        &mut self,
        objects: impl IntoIterator<Item = &'a Map<String, Value>>,
    ) {
        for object in objects {
            let is_definition = object.get("kind").and_then(Value::as_str)
                == Some("CustomResourceDefinition")
                && object
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .is_some_and(|api_version| group_of(api_version) == "apiextensions.k8s.io");
            if !is_definition {
                continue;
            }
            let spec = object.get("spec");
            let field = |path: &[&str]| {
                path.iter()
                    .try_fold(spec?, |value, key| value.get(key))
                    .and_then(Value::as_str)
            };
            let (Some(group), Some(kind)) = (field(&["group"]), field(&["names", "kind"])) else {
                continue;
            };
            let namespaced = field(&["scope"]) != Some("Cluster");
            self.learned
                .insert((group.to_owned(), kind.to_owned()), namespaced);
        }
    }

    /// Whether objects of `kind` in API `group` (`""` for the core group) live in a namespace.
    pub fn is_namespaced(&self, group: &str, kind: &str) -> bool {
        match self.learned.get(&(group.to_owned(), kind.to_owned())) {
            Some(&namespaced) => namespaced,
            None => !is_cluster_scoped_builtin(group, kind),
        }
    }

    /// Sets `metadata.namespace` to `namespace` if the object is namespaced and has none (or an
    /// empty one). Returns whether it did.
    pub fn default_namespace(&self, object: &mut Map<String, Value>, namespace: &str) -> bool {
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !self.is_namespaced(group_of(api_version), kind) {
            return false;
        }
        let metadata = object
            .entry("metadata")
            .and_modify(|metadata| {
                if metadata.is_null() {
                    *metadata = Value::Object(Map::new());
                }
            })
            .or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(metadata) = metadata else {
            return false;
        };
        match metadata.get("namespace") {
            None | Some(Value::Null) => {}
            Some(Value::String(existing)) if existing.is_empty() => {}
            Some(_) => return false,
        }
        metadata.insert("namespace".to_owned(), Value::String(namespace.to_owned()));
        true
    }
}

/// The API group of an `apiVersion` (`apps/v1` → `apps`, `v1` → the core group `""`).
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// The well-known cluster-scoped kinds of Kubernetes 1.37, plus a few removed ones that old
/// manifests still carry.
pub fn is_cluster_scoped_builtin(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        (
            "",
            "Namespace" | "Node" | "PersistentVolume" | "ComponentStatus"
        ) | (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration"
                | "ValidatingWebhookConfiguration"
                | "ValidatingAdmissionPolicy"
                | "ValidatingAdmissionPolicyBinding"
                | "MutatingAdmissionPolicy"
                | "MutatingAdmissionPolicyBinding"
        ) | ("apiextensions.k8s.io", "CustomResourceDefinition")
            | ("apiregistration.k8s.io", "APIService")
            | ("authentication.k8s.io", "TokenReview" | "SelfSubjectReview")
            | (
                "authorization.k8s.io",
                "SubjectAccessReview" | "SelfSubjectAccessReview" | "SelfSubjectRulesReview"
            )
            | (
                "certificates.k8s.io",
                "CertificateSigningRequest" | "ClusterTrustBundle"
            )
            | (
                "flowcontrol.apiserver.k8s.io",
                "FlowSchema" | "PriorityLevelConfiguration"
            )
            | ("internal.apiserver.k8s.io", "StorageVersion")
            | (
                "networking.k8s.io",
                "IngressClass" | "IPAddress" | "ServiceCIDR"
            )
            | ("node.k8s.io", "RuntimeClass")
            | ("policy" | "extensions", "PodSecurityPolicy")
            | (
                "rbac.authorization.k8s.io",
                "ClusterRole" | "ClusterRoleBinding"
            )
            | (
                "resource.k8s.io",
                "DeviceClass" | "ResourceSlice" | "DeviceTaintRule"
            )
            | ("scheduling.k8s.io", "PriorityClass")
            | (
                "storage.k8s.io",
                "StorageClass"
                    | "CSIDriver"
                    | "CSINode"
                    | "VolumeAttachment"
                    | "VolumeAttributesClass"
            )
            | ("storagemigration.k8s.io", "StorageVersionMigration")
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tazuna_sdk::ApiResource;

    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn namespaced_objects_get_the_default() {
        let scopes = Scopes::default();
        let mut deployment = object(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"}}),
        );
        assert!(scopes.default_namespace(&mut deployment, "argocd"));
        assert_eq!(
            deployment["metadata"],
            json!({"name": "a", "namespace": "argocd"})
        );

        let mut bare = object(json!({"apiVersion": "v1", "kind": "ConfigMap"}));
        assert!(scopes.default_namespace(&mut bare, "argocd"));
        assert_eq!(bare["metadata"]["namespace"], "argocd");

        let mut empty =
            object(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": ""}}));
        assert!(scopes.default_namespace(&mut empty, "argocd"));
        assert_eq!(empty["metadata"]["namespace"], "argocd");
    }

    #[test]
    fn an_explicit_namespace_is_kept() {
        let mut pod = object(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "kube-system"}}),
        );
        assert!(!Scopes::default().default_namespace(&mut pod, "argocd"));
        assert_eq!(pod["metadata"]["namespace"], "kube-system");
    }

    #[test]
    fn builtin_cluster_scoped_kinds_stay_without_namespace() {
        let scopes = Scopes::default();
        for (api_version, kind) in [
            ("v1", "Namespace"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole"),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
            (
                "admissionregistration.k8s.io/v1",
                "ValidatingAdmissionPolicyBinding",
            ),
            ("resource.k8s.io/v1", "DeviceClass"),
        ] {
            let mut cluster_scoped =
                object(json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}));
            assert!(
                !scopes.default_namespace(&mut cluster_scoped, "argocd"),
                "{kind}"
            );
            assert_eq!(cluster_scoped["metadata"], json!({"name": "x"}));
        }
    }

    #[test]
    fn scope_is_keyed_by_group_and_kind() {
        let scopes = Scopes::default();
        assert!(!scopes.is_namespaced("rbac.authorization.k8s.io", "ClusterRole"));
        assert!(scopes.is_namespaced("example.com", "ClusterRole"));
        assert!(scopes.is_namespaced("", "ClusterRole"));
    }

    #[test]
    fn definitions_in_the_render_decide_their_kinds_scope() {
        let mut scopes = Scopes::default();
        let crd = object(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "spec": {"group": "cert-manager.io", "names": {"kind": "ClusterIssuer"}, "scope": "Cluster"},
        }));
        let namespaced_crd = object(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "spec": {"group": "cert-manager.io", "names": {"kind": "Issuer"}, "scope": "Namespaced"},
        }));
        scopes.learn_definitions([&crd, &namespaced_crd]);
        assert!(!scopes.is_namespaced("cert-manager.io", "ClusterIssuer"));
        assert!(scopes.is_namespaced("cert-manager.io", "Issuer"));
        assert!(scopes.is_namespaced("other.io", "ClusterIssuer"));
    }

    #[test]
    fn cluster_discovery_decides_unknown_kinds() {
        let cluster = ClusterInfo {
            kube_version: "v1.37.0".into(),
            api_versions: vec!["example.com/v1".into()],
            resources: vec![
                ApiResource {
                    group_version: "example.com/v1".into(),
                    kind: "Tenant".into(),
                    namespaced: false,
                },
                ApiResource {
                    group_version: "v1".into(),
                    kind: "Widget".into(),
                    namespaced: false,
                },
            ],
        };
        let scopes = Scopes::new(Some(&cluster));
        assert!(!scopes.is_namespaced("example.com", "Tenant"));
        assert!(scopes.is_namespaced("other.com", "Tenant"));
        assert!(!scopes.is_namespaced("", "Widget"));
    }

    #[test]
    fn groups_come_from_api_versions() {
        assert_eq!(group_of("v1"), "");
        assert_eq!(group_of("apps/v1"), "apps");
        assert_eq!(
            group_of("rbac.authorization.k8s.io/v1"),
            "rbac.authorization.k8s.io"
        );
    }
}
