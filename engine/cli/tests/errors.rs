//! Bad input, as a user sees it: each case runs the real binary and snapshots
//! the whole transcript (exit code, stdout, stderr).

mod common;

use common::{filters, project, tazuna};

fn check(content: &str) -> (tempfile::TempDir, common::Run) {
    let dir = project(content);
    let run = tazuna(dir.path(), &["check"]);
    (dir, run)
}

#[test]
fn missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let run = tazuna(dir.path(), &["check"]);
    assert_eq!(run.code, 1);
    filters(dir.path()).bind(|| insta::assert_snapshot!(run.transcript()));
}

#[test]
fn yaml_syntax_error_names_line_and_column() {
    let (dir, run) =
        check("spec:\n  manifests:\n    - name: a\n      type: manifests\n      path: [x\n");
    assert_eq!(run.code, 1);
    filters(dir.path()).bind(|| insta::assert_snapshot!(run.transcript()));
}

#[test]
fn unknown_field_suggests_the_right_one() {
    let (dir, run) = check(
        "spec:\n  manifests:\n    - name: a\n      type: manifests\n      path: .\n      dependOn: [b]\n",
    );
    assert_eq!(run.code, 1);
    filters(dir.path()).bind(|| insta::assert_snapshot!(run.transcript()));
}

#[test]
fn duplicate_manifest_name() {
    let (dir, run) = check(
        "spec:\n  manifests:\n    - name: a\n      type: manifests\n      path: .\n    - name: a\n      type: manifests\n      path: .\n",
    );
    assert_eq!(run.code, 1);
    filters(dir.path()).bind(|| insta::assert_snapshot!(run.transcript()));
}

#[test]
fn unknown_depends_on_target() {
    let (dir, run) = check(
        "spec:\n  manifests:\n    - name: argocd\n      type: manifests\n      path: .\n    - name: apps\n      type: manifests\n      path: .\n      dependsOn: [argo-cd]\n",
    );
    assert_eq!(run.code, 1);
    filters(dir.path()).bind(|| insta::assert_snapshot!(run.transcript()));
}

#[test]
fn dependency_cycle_shows_its_path() {
    let (dir, run) = check(
        "spec:\n  manifests:\n    - name: a\n      type: manifests\n      path: .\n      dependsOn: [c]\n    - name: b\n      type: manifests\n      path: .\n      dependsOn: [a]\n    - name: c\n      type: manifests\n      path: .\n      dependsOn: [b]\n",
    );
    assert_eq!(run.code, 1);
    filters(dir.path()).bind(|| insta::assert_snapshot!(run.transcript()));
}

#[test]
fn unknown_type_suggests_a_known_one() {
    let (dir, run) =
        check("spec:\n  manifests:\n    - name: a\n      type: manifest\n      path: .\n");
    assert_eq!(run.code, 1);
    filters(dir.path()).bind(|| insta::assert_snapshot!(run.transcript()));
}

#[test]
fn missing_path_is_reported_by_check() {
    let (dir, run) = check(
        "spec:\n  manifests:\n    - name: a\n      type: manifests\n      path: nowhere.yaml\n",
    );
    assert_eq!(run.code, 1);
    filters(dir.path()).bind(|| insta::assert_snapshot!(run.transcript()));
}

#[test]
fn plugin_returning_invalid_yaml_names_plugin_and_manifest() {
    let dir = project(
        r#"spec:
  plugins:
    - name: probe
      source: file://{probe}
  manifests:
    - name: broken
      type: probe
      probe: { action: invalid-yaml }
"#,
    );
    let run = tazuna(dir.path(), &["build"]);
    assert_eq!(run.code, 1);
    filters(dir.path()).bind(|| insta::assert_snapshot!(run.transcript()));
}

#[test]
fn malformed_input_file_names_file_and_document() {
    let dir = project(
        "spec:\n  manifests:\n    - name: a\n      type: manifests\n      path: objects.yaml\n",
    );
    std::fs::write(
        dir.path().join("objects.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: [two\n",
    )
    .unwrap();
    let run = tazuna(dir.path(), &["build"]);
    assert_eq!(run.code, 1);
    filters(dir.path()).bind(|| insta::assert_snapshot!(run.transcript()));
}
