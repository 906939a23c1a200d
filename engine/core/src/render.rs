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

/// One Kubernetes object a plugin produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    /// The object.
    pub value: Value,
    /// Where the plugin says it came from (`install.yaml#3`).
    pub origin: Option<String>,
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
}
