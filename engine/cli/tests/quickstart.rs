//! The quickstart, as a new user runs it: `tazuna check` and `tazuna build` on
//! `examples/quickstart/tazuna.yaml` (Argo CD v3.6.0's upstream install
//! manifests, plus an AppProject that depends on them).
//!
//! The expected objects are read straight from the fixture with serde_yaml, not
//! through Tazuna, so the test does not grade Tazuna against itself.

mod common;

use std::collections::BTreeSet;

use common::{root, tazuna};
use serde_yaml::Value;

const CLUSTER_SCOPED: &[&str] = &[
    "Namespace",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
];

fn documents(text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|doc| serde::Deserialize::deserialize(doc).expect("valid YAML"))
        .filter(|doc: &Value| !doc.is_null())
        .collect()
}

fn key(doc: &Value) -> (String, String) {
    (
        doc["kind"].as_str().unwrap().to_owned(),
        doc["metadata"]["name"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn check_accepts_the_quickstart() {
    let dir = root().join("examples/quickstart");
    let run = tazuna(&dir, &["check"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(run.stdout, "ok: tazuna.yaml: 2 manifests in 2 layers\n");
}

#[test]
fn build_renders_every_argo_cd_object_into_argocd() {
    let dir = root().join("examples/quickstart");
    let fixture = std::fs::read_to_string(dir.join("argo-cd/install.yaml")).unwrap();
    let upstream = documents(&fixture);
    assert_eq!(upstream.len(), 59, "the fixture holds 59 objects");

    let run = tazuna(&dir, &["build"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let rendered = documents(&run.stdout);

    let rendered_keys: BTreeSet<_> = rendered.iter().map(key).collect();
    for doc in &upstream {
        assert!(rendered_keys.contains(&key(doc)), "missing {:?}", key(doc));
    }
    // 59 upstream objects, the argocd Namespace, and the AppProject.
    assert_eq!(rendered.len(), 61);

    for doc in &rendered {
        let kind = doc["kind"].as_str().unwrap();
        let namespace = &doc["metadata"]["namespace"];
        if CLUSTER_SCOPED.contains(&kind) {
            assert!(
                namespace.is_null(),
                "{:?} must stay cluster-scoped",
                key(doc)
            );
        } else {
            assert_eq!(namespace.as_str(), Some("argocd"), "{:?}", key(doc));
        }
    }

    // `projects` depends on `argocd`, so the AppProject comes last.
    assert_eq!(
        key(rendered.last().unwrap()),
        ("AppProject".into(), "platform".into())
    );
}

#[test]
fn build_is_deterministic_and_json_matches_yaml() {
    let dir = root().join("examples/quickstart");
    let first = tazuna(&dir, &["build"]);
    let second = tazuna(&dir, &["build"]);
    assert_eq!(first.code, 0, "{}", first.transcript());
    assert_eq!(
        first.stdout, second.stdout,
        "two builds print the same bytes"
    );

    let json = tazuna(&dir, &["build", "-o", "json"]);
    assert_eq!(json.code, 0, "{}", json.transcript());
    let list: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(list["kind"], "List");
    let from_json: Vec<serde_json::Value> = list["items"].as_array().unwrap().clone();
    let from_yaml: Vec<serde_json::Value> = documents(&first.stdout)
        .into_iter()
        .map(|v| serde_json::to_value(v).unwrap())
        .collect();
    assert_eq!(from_json, from_yaml);
}

#[test]
fn tags_select_manifests() {
    let dir = root().join("examples/quickstart");
    let run = tazuna(&dir, &["tags"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    insta::assert_snapshot!(run.stdout, @r"
    TAG     MANIFESTS
    gitops  argocd, projects
    ");
}

#[test]
fn plugin_list_shows_builtins_as_wasm_components() {
    let dir = tempfile::tempdir().unwrap();
    let run = tazuna(dir.path(), &["plugin", "list", "-o", "json"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let list: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let manifests = list
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "manifests")
        .expect("the manifests built-in is listed");
    assert_eq!(manifests["world"], "tazuna:plugin/source-plugin@0.1.1");
    assert_eq!(manifests["source"], "builtin");
    assert_eq!(manifests["capabilities"], serde_json::json!([]));
    // The secret resolvers are components of their own world.
    let onepassword = list
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "onepassword")
        .expect("the onepassword resolver is listed");
    assert_eq!(
        onepassword["world"],
        "tazuna:plugin/secret-resolver-plugin@0.1.1"
    );
    assert_eq!(onepassword["capabilities"], serde_json::json!(["exec:op"]));
}

#[test]
fn init_writes_a_starter_that_checks_and_refuses_to_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let run = tazuna(dir.path(), &["init"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let check = tazuna(dir.path(), &["check"]);
    assert_eq!(
        check.code,
        0,
        "the starter checks as written: {}",
        check.transcript()
    );
    let build = tazuna(dir.path(), &["build"]);
    assert_eq!(build.code, 0, "{}", build.transcript());
    assert!(
        build.stdout.contains("kind: Deployment") && build.stdout.contains("namespace: hello"),
        "{}",
        build.stdout
    );
    // Regression: the starter's test waited for a Deployment it did not
    // declare, so `tazuna verify` timed out on a fresh `tazuna init`.
    if tazuna_tests::e2e::tools(&tazuna_tests::Tool::CONTROL_PLANE).is_some() {
        let verified = tazuna(dir.path(), &["verify"]);
        assert_eq!(verified.code, 0, "{}", verified.transcript());
        assert!(
            verified.stderr.contains("verify: passed"),
            "{}",
            verified.transcript()
        );
    }
    let again = tazuna(dir.path(), &["init"]);
    assert_eq!(again.code, 1);
    assert!(again.stderr.contains("--force"), "{}", again.stderr);
    let forced = tazuna(dir.path(), &["init", "--force"]);
    assert_eq!(forced.code, 0, "{}", forced.transcript());
}

#[test]
fn the_example_third_party_plugin_loads_from_a_file_path() {
    let dir = common::project(
        r#"spec:
  plugins:
    - name: configmap
      source: file://{example}
      version: ">=0.1.0"
  manifests:
    - name: settings
      type: configmap
      namespace: apps
      configmap:
        data: { greeting: hello }
"#,
    );
    let run = tazuna(dir.path(), &["build", "-o", "json"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let list: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let item = &list["items"][0];
    assert_eq!(item["kind"], "ConfigMap");
    assert_eq!(item["metadata"]["namespace"], "apps");
    assert_eq!(item["data"]["greeting"], "hello");
}
