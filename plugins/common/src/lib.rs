//! What the built-in source plugins share.
//!
//! Two sources are libraries here, so that the `oras` source can hand a pulled artifact to them:
//! [`files`] (the `manifests` source: files, directories, globs, found by [`inputs`]), [`helmfile`] and
//! [`kustomize`].
//!
//! Every source ends the same way: a stream of YAML or JSON documents (files for `manifests`,
//! a tool's stdout for `helm` and `kustomize`) is split into Kubernetes objects ([`documents`]),
//! YAML read with `kubectl`'s scalar rules ([`yaml`]); with a default namespace, namespaced
//! objects without one get it ([`scope`]); and each object is sent to the host as compact JSON,
//! which the host parses much faster than YAML ([`encode`]). Paths from the config are checked
//! to stay inside the manifest directory ([`paths`]). `helm template` output is read with each
//! object named after its template ([`helm`]).
//!
//! Plain Rust, tested on the host target:
//! `cargo test --manifest-path plugins/Cargo.toml -p tazuna-plugin-common --target x86_64-unknown-linux-gnu`.

pub mod documents;
pub mod files;
pub mod helm;
pub mod helmfile;
pub mod inputs;
pub mod kustomize;
pub mod paths;
pub mod remotes;
pub mod scope;
pub mod yaml;

use tazuna_sdk::{ClusterInfo, Diagnostic, Manifest, PluginError};

use crate::documents::Object;
use crate::scope::Scopes;

/// The default namespace of a manifest whose block may give one too, as Go Tazuna files write
/// it (`defaultNamespace`): either is taken, and both must agree.
pub fn default_namespace(
    manifest: Option<&str>,
    block: Option<&str>,
) -> Result<Option<String>, Diagnostic> {
    let given = |ns: Option<&str>| ns.filter(|ns| !ns.is_empty()).map(str::to_owned);
    match (given(manifest), given(block)) {
        (Some(a), Some(b)) if a != b => Err(Diagnostic::error(format!(
            "`defaultNamespace: {b}` disagrees with the manifest's `namespace: {a}`; keep one of them"
        ))
        .at("/defaultNamespace")),
        (a, b) => Ok(a.or(b)),
    }
}

/// The annotation that puts an object in an apply wave of its manifest (the engine's
/// `tazuna.dev/apply-wave`): waves are applied in ascending order, each ready before the next.
pub const APPLY_WAVE: &str = "tazuna.dev/apply-wave";

/// Sets annotation `key` of `object` to `value`, making `metadata.annotations` if it has none.
/// An object without a `metadata` map is left alone (the host reports it).
pub fn annotate(object: &mut serde_json::Map<String, serde_json::Value>, key: &str, value: &str) {
    let Some(serde_json::Value::Object(metadata)) = object.get_mut("metadata") else {
        return;
    };
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| serde_json::Value::Object(Default::default()));
    if !annotations.is_object() {
        *annotations = serde_json::Value::Object(Default::default());
    }
    if let serde_json::Value::Object(annotations) = annotations {
        annotations.insert(key.to_owned(), serde_json::Value::String(value.to_owned()));
    }
}

/// Encodes `objects` for the host, giving each namespaced object without a namespace
/// `namespace`, when one is set. The origin of each object is kept.
pub fn encode(
    objects: Vec<Object>,
    namespace: Option<&str>,
    cluster: Option<&ClusterInfo>,
) -> Result<Vec<Manifest>, PluginError> {
    let namespace = namespace.filter(|namespace| !namespace.is_empty());
    let mut scopes = Scopes::new(cluster);
    if namespace.is_some() {
        scopes.learn_definitions(objects.iter().map(|object| &object.fields));
    }
    let mut manifests = Vec::with_capacity(objects.len());
    for mut object in objects {
        if let Some(namespace) = namespace {
            scopes.default_namespace(&mut object.fields, namespace);
        }
        let content = serde_json::to_string(&object.fields).map_err(PluginError::other)?;
        manifests.push(Manifest {
            content,
            origin: Some(object.origin),
        });
    }
    Ok(manifests)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::{Format, Objects};

    #[test]
    fn encode_defaults_namespaced_objects_only_and_keeps_origins() {
        let mut objects = Objects::default();
        objects.read(
            "stdout",
            "kind: ConfigMap\napiVersion: v1\nmetadata: {name: a}\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: b}\n---\n\
             apiVersion: v1\nkind: Secret\nmetadata: {name: c, namespace: other}\n",
            Format::Yaml,
        );
        assert!(objects.errors.is_empty(), "{:?}", objects.errors);
        let manifests = encode(objects.objects, Some("apps"), None).unwrap();
        let namespaces: Vec<_> = manifests
            .iter()
            .map(|m| {
                let value: serde_json::Value = serde_json::from_str(&m.content).unwrap();
                value["metadata"]["namespace"].as_str().map(str::to_owned)
            })
            .collect();
        assert_eq!(
            namespaces,
            [Some("apps".to_owned()), None, Some("other".to_owned())]
        );
        let origins: Vec<_> = manifests
            .iter()
            .map(|m| m.origin.clone().unwrap())
            .collect();
        assert_eq!(origins, ["stdout#0", "stdout#1", "stdout#2"]);
        // Keys keep their input order.
        assert!(manifests[0].content.starts_with(r#"{"kind":"ConfigMap""#));
    }
}

/// What a tool that succeeded said on stderr that the user should see, as
/// warnings (`kustomize: # Warning: 'bases' is deprecated…`). With `all`,
/// every line (kustomize prints nothing else on success); otherwise the
/// lines that warn or speak of deprecation (helm and helmfile also log
/// progress there). At most 20, so a noisy tool cannot bury the rest.
pub fn tool_warnings(tool: &str, stderr: &str, all: bool) -> Vec<Diagnostic> {
    const MOST: usize = 20;
    stderr
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .filter(|line| {
            let lower = line.to_ascii_lowercase();
            all || lower.contains("warn") || lower.contains("deprecat")
        })
        .take(MOST)
        .map(|line| Diagnostic::warning(format!("{tool}: {line}")))
        .collect()
}

#[cfg(test)]
mod tool_warning_tests {
    use super::*;

    #[test]
    fn warnings_and_deprecations_are_kept_and_progress_is_not() {
        let stderr = "Building dependency release=web\n# Warning: 'bases' is deprecated. Please use 'resources' instead.\nTemplating release=web\nW1201 deprecated API\n";
        let some: Vec<String> = tool_warnings("helmfile", stderr, false)
            .into_iter()
            .map(|d| d.message)
            .collect();
        assert_eq!(
            some,
            [
                "helmfile: # Warning: 'bases' is deprecated. Please use 'resources' instead.",
                "helmfile: W1201 deprecated API"
            ]
        );
        assert_eq!(tool_warnings("kustomize", stderr, true).len(), 4);
        assert_eq!(
            tool_warnings("kustomize", &"x\n".repeat(100), true).len(),
            20
        );
    }
}

/// The selected cluster's values (its environment's `values` with its own
/// over them) written to `scratch/name` as JSON for a tool to read, or
/// `None` when there are none.
pub fn write_cluster_values(
    request: &tazuna_sdk::RenderRequest,
    name: &str,
) -> Result<Option<String>, tazuna_sdk::PluginError> {
    let values: serde_json::Value = serde_json::from_str(&request.values).map_err(|error| {
        tazuna_sdk::PluginError::other(format_args!("the cluster's values are not JSON: {error}"))
    })?;
    if values.as_object().is_none_or(|map| map.is_empty()) {
        return Ok(None);
    }
    let file = format!("{}/{name}", request.scratch.trim_end_matches('/'));
    std::fs::write(&file, values.to_string()).map_err(|error| {
        tazuna_sdk::PluginError::other(format_args!("cannot write `{file}`: {error}"))
    })?;
    Ok(Some(file))
}
