//! What crosses between the plugin side and the Kubernetes side of the engine:
//! what a render is told about the target cluster ([`ClusterInfo`]), and what
//! it gives back ([`Rendered`]).
//!
//! Both sides depend on these types and on nothing of each other, so the
//! plugin host builds without a Kubernetes client and the Kubernetes side
//! without a WebAssembly engine.

use serde_json::Value;

use crate::lock::SourcePin;

/// One kind the target cluster serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiResource {
    /// `apps/v1`, or `v1` for the core group.
    pub group_version: String,
    /// `Deployment`.
    pub kind: String,
    /// Whether its objects live in a namespace.
    pub namespaced: bool,
}

/// What plugins learn about the target cluster (helm's `--kube-version` and
/// `--api-versions`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClusterInfo {
    /// The server's version, such as `v1.37.1`.
    pub kube_version: String,
    /// Group versions the server serves, sorted.
    pub api_versions: Vec<String>,
    /// Every kind it serves.
    pub resources: Vec<ApiResource>,
}

impl ClusterInfo {
    /// This cluster as it will be once the CRDs among `objects` are
    /// established: their served versions and kinds added. `None` when they
    /// add nothing it does not serve already.
    pub fn with_definitions<'a>(
        &self,
        objects: impl IntoIterator<Item = &'a Value>,
    ) -> Option<Self> {
        let mut info = self.clone();
        let mut added = false;
        for object in objects {
            if object["apiVersion"] != "apiextensions.k8s.io/v1"
                || object["kind"] != "CustomResourceDefinition"
            {
                continue;
            }
            let spec = &object["spec"];
            let (Some(group), Some(kind)) =
                (spec["group"].as_str(), spec["names"]["kind"].as_str())
            else {
                continue;
            };
            let namespaced = spec["scope"].as_str() != Some("Cluster");
            let versions = spec["versions"].as_array().into_iter().flatten();
            for version in versions.filter(|v| v["served"].as_bool() != Some(false)) {
                let Some(version) = version["name"].as_str() else {
                    continue;
                };
                let group_version = format!("{group}/{version}");
                if info
                    .resources
                    .iter()
                    .any(|r| r.group_version == group_version && r.kind == kind)
                {
                    continue;
                }
                added = true;
                if !info.api_versions.contains(&group_version) {
                    info.api_versions.push(group_version.clone());
                }
                info.resources.push(ApiResource {
                    group_version,
                    kind: kind.to_owned(),
                    namespaced,
                });
            }
        }
        info.api_versions.sort();
        added.then_some(info)
    }
}

/// One Kubernetes object a plugin produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    /// The object.
    pub value: Value,
    /// Where the plugin says it came from (`install.yaml#3`).
    pub origin: Option<String>,
    /// Fields that came out differently in two renders of identical inputs
    /// (generated: random passwords, certificates); an apply keeps their
    /// live values.
    pub generated: Vec<crate::generated::Field>,
}

/// A manifest, rendered.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The manifest's name.
    pub manifest: String,
    /// Name of the plugin that rendered it.
    pub plugin: String,
    /// That plugin's version.
    pub plugin_version: String,
    /// Hex sha256 of that plugin's component.
    pub plugin_digest: String,
    /// The objects, in the plugin's order.
    pub objects: Vec<Object>,
    /// What the render pulled from upstream, as the plugin reported it.
    pub upstream: Vec<SourcePin>,
    /// What the plugin may create, for a third-party plugin; `None` for a
    /// built-in, which renders only what the user's files say.
    pub scope: Option<EmitScope>,
}

/// Why a secret reference in a render's Secret is not resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReferenceRefused {
    /// A third-party plugin wrote it without this grant.
    Grant(String),
    /// Content the render fetched from a registry or repository wrote it,
    /// not the user's own files.
    Fetched,
}

impl Rendered {
    /// Whether a secret reference to `provider` (and, for `env`, the variable
    /// `reference`) in this render's Secrets may be resolved; `written` says
    /// whether the reference stands in the user's own files for this manifest
    /// (its block in `tazuna.yaml` or the files it names).
    ///
    /// A built-in's references are the user's own, unless the render pulled
    /// content from a registry or repository (a remote chart, an artifact):
    /// then only a reference the user wrote resolves, so a chart cannot ask
    /// for `ref+env:CI_DEPLOY_TOKEN` on its own. A third-party plugin needs
    /// the grant `secrets:<provider>`, or `secrets:env:<VARIABLE>` for
    /// `ref+env:`.
    pub fn may_reference(
        &self,
        provider: &str,
        reference: &str,
        written: impl FnOnce() -> bool,
    ) -> Result<(), ReferenceRefused> {
        let Some(scope) = &self.scope else {
            return if self.upstream.is_empty() || written() {
                Ok(())
            } else {
                Err(ReferenceRefused::Fetched)
            };
        };
        let needed = match provider {
            "env" => format!("secrets:env:{reference}"),
            _ => format!("secrets:{provider}"),
        };
        if scope
            .secret_grants
            .iter()
            .any(|grant| match grant.strip_suffix('*') {
                Some(prefix) => needed.starts_with(prefix),
                None => *grant == needed,
            })
        {
            Ok(())
        } else {
            Err(ReferenceRefused::Grant(needed))
        }
    }
}

/// What a third-party plugin may create: its `emit:` grants in effect.
///
/// Without any, a plugin may create namespaced objects in its manifest's
/// namespace (and that Namespace), nothing else. `emit:namespace:<name>` adds a
/// namespace, `emit:cluster:<Kind>` a cluster-scoped kind, and
/// `emit:kind:<Kind>` one of the kinds that change who may do what in the
/// whole cluster ([`SENSITIVE_KINDS`]). A grant may end in `*`, but
/// `emit:namespace:*` covers no `kube-*` namespace: those are named one by one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EmitScope {
    grants: Vec<String>,
    /// The plugin's `secrets:` grants in effect (see [`Rendered::may_reference`]).
    secret_grants: Vec<String>,
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

    /// The grants an object of `kind` named `name` in `namespace` (`None`:
    /// cluster-scoped) needs that this scope lacks, for a manifest whose
    /// objects default to `home`.
    pub fn missing(
        &self,
        kind: &str,
        name: &str,
        namespace: Option<&str>,
        home: &str,
    ) -> Vec<String> {
        let mut needed = Vec::new();
        match namespace {
            Some(namespace) if namespace != home => {
                needed.push(format!("emit:namespace:{namespace}"));
            }
            Some(_) => {}
            None if kind == "Namespace" && name == home => {}
            None if kind == "Namespace" => needed.push(format!("emit:namespace:{name}")),
            None => needed.push(format!("emit:cluster:{kind}")),
        }
        if SENSITIVE_KINDS.contains(&kind) {
            needed.push(format!("emit:kind:{kind}"));
        }
        needed.retain(|grant| !self.allows(grant));
        needed
    }

    fn allows(&self, wanted: &str) -> bool {
        let protected = wanted
            .strip_prefix("emit:namespace:")
            .is_some_and(|namespace| namespace.starts_with("kube-"));
        self.grants
            .iter()
            .any(|grant| match grant.strip_suffix('*') {
                Some(prefix) => !protected && wanted.starts_with(prefix),
                None => grant == wanted,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_grants_only_the_manifests_namespace_is_in_scope() {
        let none = EmitScope::default();
        assert!(
            none.missing("ConfigMap", "a", Some("apps"), "apps")
                .is_empty()
        );
        assert!(none.missing("Namespace", "apps", None, "apps").is_empty());
        assert_eq!(
            none.missing("Secret", "a", Some("kube-system"), "apps"),
            ["emit:namespace:kube-system"]
        );
        assert_eq!(
            none.missing("ClusterRoleBinding", "x", None, "apps"),
            [
                "emit:cluster:ClusterRoleBinding",
                "emit:kind:ClusterRoleBinding"
            ]
        );
        assert_eq!(
            none.missing("RoleBinding", "x", Some("apps"), "apps"),
            ["emit:kind:RoleBinding"]
        );
    }

    #[test]
    fn grants_widen_the_scope_but_wildcards_skip_kube_namespaces() {
        let scope = EmitScope::new(["emit:namespace:*", "emit:cluster:*", "exec:helm"]);
        assert!(
            scope
                .missing("ConfigMap", "a", Some("other"), "apps")
                .is_empty()
        );
        assert!(scope.missing("ClusterRole", "a", None, "apps").is_empty());
        assert_eq!(
            scope.missing("Secret", "a", Some("kube-system"), "apps"),
            ["emit:namespace:kube-system"]
        );
        let scope = EmitScope::new(["emit:namespace:kube-system"]);
        assert!(
            scope
                .missing("Secret", "a", Some("kube-system"), "apps")
                .is_empty()
        );
    }

    #[test]
    fn crds_to_come_are_served_to_later_renders() {
        let cluster = ClusterInfo {
            kube_version: "v1.37.2".into(),
            api_versions: vec!["v1".into()],
            resources: vec![],
        };
        let crd = serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": { "name": "servicemonitors.monitoring.coreos.com" },
            "spec": { "group": "monitoring.coreos.com", "scope": "Namespaced",
                      "names": { "kind": "ServiceMonitor", "plural": "servicemonitors" },
                      "versions": [{ "name": "v1", "served": true }, { "name": "v1alpha1", "served": false }] },
        });
        let config = serde_json::json!({ "apiVersion": "v1", "kind": "ConfigMap" });
        let later = cluster.with_definitions([&config, &crd]).unwrap();
        assert_eq!(later.api_versions, ["monitoring.coreos.com/v1", "v1"]);
        assert_eq!(
            later.resources,
            [ApiResource {
                group_version: "monitoring.coreos.com/v1".into(),
                kind: "ServiceMonitor".into(),
                namespaced: true
            }]
        );
        assert_eq!(later.with_definitions([&crd]), None, "served already");
        assert_eq!(cluster.with_definitions([&config]), None);
    }

    fn rendered(scope: Option<EmitScope>) -> Rendered {
        Rendered {
            manifest: "m".into(),
            plugin: "p".into(),
            plugin_version: "0.1.0".into(),
            plugin_digest: String::new(),
            objects: Vec::new(),
            upstream: Vec::new(),
            scope,
        }
    }

    #[test]
    fn a_third_party_plugin_references_only_the_secrets_it_is_granted() {
        let anywhere = || true;
        assert_eq!(
            rendered(None).may_reference("env", "CI_TOKEN", anywhere),
            Ok(())
        );
        let none = rendered(Some(EmitScope::new(["secrets:exec"])));
        assert_eq!(
            none.may_reference("env", "CI_TOKEN", anywhere),
            Err(ReferenceRefused::Grant("secrets:env:CI_TOKEN".to_owned()))
        );
        assert_eq!(
            none.may_reference("vault", "a/b", anywhere),
            Err(ReferenceRefused::Grant("secrets:vault".to_owned()))
        );
        let some = rendered(Some(EmitScope::new(["secrets:env:APP_*", "secrets:vault"])));
        assert_eq!(some.may_reference("env", "APP_KEY", anywhere), Ok(()));
        assert!(some.may_reference("env", "CI_TOKEN", anywhere).is_err());
        assert_eq!(some.may_reference("vault", "a/b", anywhere), Ok(()));
    }

    #[test]
    fn fetched_content_references_only_what_the_user_wrote() {
        let mut remote = rendered(None);
        remote.upstream.push(crate::lock::SourcePin {
            location: "oci://registry.example/charts/app".into(),
            version: Some("1.0.0".into()),
            digest: None,
        });
        assert_eq!(
            remote.may_reference("env", "CI_DEPLOY_TOKEN", || false),
            Err(ReferenceRefused::Fetched)
        );
        assert_eq!(remote.may_reference("env", "DB_PASSWORD", || true), Ok(()));
        // The user's own files: whatever the reference, nothing to look up.
        assert_eq!(
            rendered(None).may_reference("env", "X", || panic!("not asked")),
            Ok(())
        );
    }
}
