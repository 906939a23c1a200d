//! Renders of real inputs on the host target: the Argo CD install manifests and small
//! directories made per test.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use tazuna_plugin_manifests::render::render;
use tazuna_sdk::{ApiResource, ClusterInfo, PluginError, RenderOutput, RenderRequest, Severity};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/quickstart")
}

fn request(workdir: &Path, path: &str, namespace: Option<&str>) -> RenderRequest {
    RenderRequest {
        manifest_name: "argo-cd".into(),
        path: Some(path.into()),
        config: "{}".into(),
        namespace: namespace.map(Into::into),
        environment: None,
        values: "{}".into(),
        cluster: None,
        locked: None,
        workdir: workdir.to_string_lossy().into_owned(),
        scratch: "/scratch".into(),
    }
}

fn objects(output: &RenderOutput) -> Vec<Value> {
    output
        .manifests
        .iter()
        .map(|manifest| serde_json::from_str(&manifest.content).unwrap())
        .collect()
}

/// A directory under the plugins' target dir holding `files`, recreated per test.
fn scratch(test: &str, files: &[(&str, &str)]) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/test-scratch/render")
        .join(test);
    let _ = fs::remove_dir_all(&root);
    for (name, content) in files {
        let path = root.join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }
    root
}

#[test]
fn argo_cd_install_gets_the_namespace_except_cluster_scoped_objects() {
    let output = render(&request(
        &fixtures().join("argo-cd"),
        "install.yaml",
        Some("argocd"),
    ))
    .unwrap();
    assert_eq!(output.manifests.len(), 59);
    assert!(output.diagnostics.is_empty(), "{:?}", output.diagnostics);

    let mut cluster_scoped = Vec::new();
    for object in objects(&output) {
        let kind = object["kind"].as_str().unwrap().to_owned();
        match object["metadata"].get("namespace") {
            Some(namespace) => assert_eq!(namespace, "argocd", "{kind}"),
            None => cluster_scoped.push(kind),
        }
    }
    cluster_scoped.sort();
    assert_eq!(
        cluster_scoped,
        [
            "ClusterRole",
            "ClusterRole",
            "ClusterRole",
            "ClusterRoleBinding",
            "ClusterRoleBinding",
            "ClusterRoleBinding",
            "CustomResourceDefinition",
            "CustomResourceDefinition",
            "CustomResourceDefinition",
        ]
    );
    let origins: Vec<_> = output
        .manifests
        .iter()
        .map(|m| m.origin.clone().unwrap())
        .collect();
    assert_eq!(origins[0], "install.yaml#0");
    assert!(
        origins
            .iter()
            .all(|origin| origin.starts_with("install.yaml#"))
    );
}

#[test]
fn argo_cd_install_reads_like_an_independent_yaml_parser() {
    let text = fs::read_to_string(fixtures().join("argo-cd/install.yaml")).unwrap();
    let expected: Vec<Value> = serde_yaml::Deserializer::from_str(&text)
        .map(|document| Value::deserialize(document).unwrap())
        .filter(|value| !value.is_null())
        .collect();
    let output = render(&request(&fixtures().join("argo-cd"), "install.yaml", None)).unwrap();
    let rendered = objects(&output);
    assert_eq!(rendered.len(), expected.len());
    for (rendered, expected) in rendered.iter().zip(&expected) {
        assert_eq!(rendered, expected, "{}", expected["metadata"]["name"]);
    }
    // Key order survives: the first object's keys come out as written.
    let first = output.manifests[0].content.as_str();
    assert!(
        first.starts_with(
            r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","#
        ),
        "{first:.80}"
    );
}

#[test]
fn a_glob_over_the_argo_cd_crds() {
    let output = render(&request(
        &fixtures().join("argo-cd"),
        "crds/*-crd.yaml",
        Some("argocd"),
    ))
    .unwrap();
    let origins: Vec<_> = output
        .manifests
        .iter()
        .map(|m| m.origin.clone().unwrap())
        .collect();
    assert_eq!(
        origins,
        [
            "crds/application-crd.yaml#0",
            "crds/applicationset-crd.yaml#0",
            "crds/appproject-crd.yaml#0"
        ]
    );
    assert!(
        objects(&output)
            .iter()
            .all(|crd| crd["metadata"].get("namespace").is_none())
    );
}

#[test]
fn custom_resources_follow_their_definitions_scope() {
    let root = scratch(
        "crd-scope",
        &[
            (
                "a-crds.yaml",
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
                 metadata: {name: clusterissuers.cert-manager.io}\n\
                 spec: {group: cert-manager.io, scope: Cluster, names: {kind: ClusterIssuer, plural: clusterissuers}}\n",
            ),
            (
                "b-issuers.yaml",
                "apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: letsencrypt}\n---\n\
                 apiVersion: example.com/v1\nkind: Tenant\nmetadata: {name: t}\n---\n\
                 apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
            ),
        ],
    );
    let mut request = request(&root, ".", Some("infra"));
    request.cluster = Some(ClusterInfo {
        kube_version: "v1.37.0".into(),
        api_versions: vec!["example.com/v1".into()],
        resources: vec![ApiResource {
            group_version: "example.com/v1".into(),
            kind: "Tenant".into(),
            namespaced: false,
        }],
    });
    let output = render(&request).unwrap();
    let namespaces: Vec<_> = objects(&output)
        .iter()
        .map(|object| {
            (
                object["kind"].as_str().unwrap().to_owned(),
                object["metadata"]["namespace"].clone(),
            )
        })
        .collect();
    assert_eq!(
        namespaces,
        [
            ("CustomResourceDefinition".to_owned(), Value::Null),
            ("ClusterIssuer".to_owned(), Value::Null),
            ("Tenant".to_owned(), Value::Null),
            ("Widget".to_owned(), Value::from("infra")),
        ]
    );
}

#[test]
fn lists_are_expanded_and_reported() {
    let root = scratch(
        "list",
        &[(
            "list.json",
            r#"{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}]}"#,
        )],
    );
    let output = render(&request(&root, "list.json", Some("ns"))).unwrap();
    assert_eq!(output.manifests.len(), 2);
    assert_eq!(
        output.manifests[1].content,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b","namespace":"ns"}}"#
    );
    assert_eq!(output.diagnostics.len(), 1);
    assert_eq!(output.diagnostics[0].severity, Severity::Info);
    assert_eq!(
        output.diagnostics[0].message,
        "list.json: document 0: expanded `List` into 2 objects"
    );
}

#[test]
fn malformed_files_are_invalid_input_naming_every_problem() {
    let root = scratch(
        "malformed",
        &[
            (
                "m/a.yaml",
                "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nkind: Secret\n---\n- not an object\n",
            ),
            (
                "m/b.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n   labels: {}\n",
            ),
        ],
    );
    let error = render(&request(&root, "m", None)).unwrap_err();
    let PluginError::InvalidInput(diagnostics) = error else {
        panic!("expected invalid-input, got {error:?}");
    };
    let messages: Vec<_> = diagnostics
        .iter()
        .map(|d| (d.path.clone().unwrap(), d.message.clone()))
        .collect();
    assert_eq!(
        messages,
        [
            ("m/a.yaml".to_owned(), "m/a.yaml: document 2: expected a Kubernetes object, found a list at line 7 column 1".to_owned()),
            ("m/b.yaml".to_owned(), "m/b.yaml: document 0: mapping values are not allowed in this context at line 5 column 10".to_owned()),
        ]
    );
}

#[test]
fn a_missing_path_is_not_found() {
    let root = scratch("missing", &[("a.yaml", "")]);
    assert_eq!(
        render(&request(&root, "b.yaml", None)).unwrap_err(),
        PluginError::NotFound("b.yaml".into())
    );
    let mut no_path = request(&root, "", None);
    no_path.path = None;
    assert!(matches!(
        render(&no_path).unwrap_err(),
        PluginError::InvalidConfig(_)
    ));
}

#[test]
fn an_empty_directory_renders_nothing_with_a_warning() {
    let root = scratch("empty", &[("d/README.md", "hi")]);
    let output = render(&request(&root, "d", None)).unwrap();
    assert!(output.manifests.is_empty());
    assert_eq!(output.diagnostics[0].severity, Severity::Warning);
}
