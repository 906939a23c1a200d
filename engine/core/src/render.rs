//! What crosses between the plugin side and the Kubernetes side of the engine:
//! what a render is told about the target cluster ([`ClusterInfo`]), and what
//! it gives back ([`Rendered`]).
//!
//! Both sides depend on these types and on nothing of each other, so the
//! plugin host builds without a Kubernetes client and the Kubernetes side
//! without a WebAssembly engine.

use serde_json::Value;

pub use crate::emit::{EmitScope, SENSITIVE_KINDS};
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

/// What a render said its output depends on (the WIT `render-traits`
/// import). A render that says nothing, as every plugin built against the
/// 0.1.0 contract, gets the defaults: it reads the cluster and is
/// deterministic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderTraits {
    /// The output depends on the cluster's capabilities: it is rendered again
    /// once an earlier layer's CRDs are served.
    pub reads_cluster: bool,
    /// Two renders of the same inputs agree; when not, a second render finds
    /// the generated fields.
    pub deterministic: bool,
}

impl Default for RenderTraits {
    fn default() -> Self {
        Self {
            reads_cluster: true,
            deterministic: true,
        }
    }
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
    /// What the render said its output depends on.
    pub traits: RenderTraits,
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
    /// A built-in `plugin`'s render of `manifest` holding `objects` as they
    /// are (no origins, nothing generated, nothing pulled): what a test or a
    /// tool that makes objects itself starts from.
    pub fn of(manifest: &str, plugin: &str, objects: impl IntoIterator<Item = Value>) -> Self {
        Self {
            manifest: manifest.to_owned(),
            plugin: plugin.to_owned(),
            plugin_version: "0.1.0".to_owned(),
            plugin_digest: String::new(),
            objects: objects
                .into_iter()
                .map(|value| Object {
                    value,
                    origin: None,
                    generated: Vec::new(),
                })
                .collect(),
            upstream: Vec::new(),
            scope: None,
            traits: RenderTraits::default(),
        }
    }

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

#[cfg(test)]
mod tests {
    use super::*;

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
            traits: RenderTraits::default(),
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
