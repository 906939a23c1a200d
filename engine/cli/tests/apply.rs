//! End-to-end: `tazuna apply`, `plan`, `state drift`, `status`, prune and
//! `destroy` against real harness control planes (etcd, kube-apiserver,
//! controllers, kwok), asserted through kubectl and the API server's own
//! request metrics, not through Tazuna's output alone.
//!
//! Each test starts its own cluster, because Tazuna's state and lock live in
//! the cluster-wide namespace `tazuna`. Tests skip with a printed reason when
//! the harness binaries are missing, unless `TAZUNA_E2E_REQUIRED` is set.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{copy_dir, edit, exists, kubectl_json, output, succeed, tazuna_on as tazuna, text};
use serde_json::Value;
use tazuna_tests::e2e::TestCluster;

const SECRET_VALUE: &str = "e2e-s3cr3t-never-shown";

/// Tazuna's state objects, read with kubectl.
fn state_objects(cluster: &TestCluster) -> Value {
    kubectl_json(
        cluster,
        &[
            "-n",
            "tazuna",
            "get",
            "configmaps",
            "-l",
            "tazuna.dev/state=manifest",
        ],
    )
}

/// Writes the API server counted, by verb, for `resource` (from `/metrics`,
/// so nothing Tazuna reports is trusted).
fn writes(cluster: &TestCluster, resource: &str) -> u64 {
    let out = succeed(cluster.kubectl().args(["get", "--raw", "/metrics"]));
    let metrics = String::from_utf8_lossy(&out.stdout);
    metrics
        .lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
        .filter(|l| l.contains(&format!("resource=\"{resource}\"")))
        .filter(|l| {
            ["APPLY", "POST", "PUT", "PATCH", "DELETE"]
                .iter()
                .any(|v| l.contains(&format!("verb=\"{v}\"")))
        })
        .filter(|l| !l.contains("subresource=\"status\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

fn quickstart_copy() -> (tempfile::TempDir, PathBuf) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/quickstart");
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&source, dir.path());
    // A Secret, to prove its value never reaches state or plans.
    std::fs::write(
        dir.path().join("secret.yaml"),
        format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: {SECRET_VALUE}\n"),
    )
    .unwrap();
    let file = dir.path().join("tazuna.yaml");
    let config = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        format!("{config}\n    - name: secrets\n      type: manifests\n      path: secret.yaml\n      namespace: default\n"),
    )
    .unwrap();
    let root = dir.path().to_owned();
    (dir, root)
}

#[test]
fn quickstart_applies_converges_plans_drifts_prunes_and_destroys() {
    let Some(cluster) = TestCluster::start("apply-lifecycle") else {
        return;
    };
    let (_keep, dir) = quickstart_copy();

    // Day one: everything goes in, and the workloads become ready.
    succeed(tazuna(&cluster, &dir).arg("apply"));
    let deployments = kubectl_json(&cluster, &["-n", "argocd", "get", "deployments"]);
    let items = deployments["items"].as_array().unwrap();
    assert_eq!(items.len(), 6, "{deployments}");
    for d in items {
        assert_eq!(
            d["status"]["readyReplicas"], d["spec"]["replicas"],
            "not ready: {}",
            d["metadata"]["name"]
        );
    }
    let sets = kubectl_json(&cluster, &["-n", "argocd", "get", "statefulsets"]);
    assert_eq!(sets["items"][0]["status"]["readyReplicas"], 1, "{sets}");
    assert!(exists(
        &cluster,
        &["-n", "argocd", "appprojects.argoproj.io", "platform"]
    ));
    let state = state_objects(&cluster);
    assert_eq!(
        state["items"].as_array().unwrap().len(),
        3,
        "one state object per manifest"
    );
    assert!(
        !state.to_string().contains(SECRET_VALUE),
        "a Secret value reached the state"
    );

    // Day two, nothing changed: no object is written again.
    let first_apply_requests = cluster.requests_from("tazuna/").map(|r| r.len());
    if let Some(count) = first_apply_requests {
        assert!(
            count > 60,
            "the audit log saw the first apply ({count} requests)"
        );
    }
    let (cm, deploy, projects) = (
        writes(&cluster, "configmaps"),
        writes(&cluster, "deployments"),
        writes(&cluster, "appprojects"),
    );
    let second = succeed(tazuna(&cluster, &dir).arg("apply"));
    assert_eq!(
        writes(&cluster, "configmaps"),
        cm,
        "configmaps were written by a no-op apply: {}",
        text(&second)
    );
    assert_eq!(writes(&cluster, "deployments"), deploy);
    assert_eq!(writes(&cluster, "appprojects"), projects);
    // The audit log says the same for every object, the state included:
    // Tazuna's only writes are taking and giving back its lock.
    if let Some(before) = first_apply_requests {
        let all = cluster.requests_from("tazuna/").unwrap();
        let writes: Vec<_> = all[before..]
            .iter()
            .filter(|e| e.is_write() && e.resource != "leases")
            .collect();
        assert_eq!(
            writes,
            Vec::<&tazuna_tests::AuditEvent>::new(),
            "{}",
            text(&second)
        );
    }
    let status = output(tazuna(&cluster, &dir).arg("status"));
    assert!(status.status.success(), "{}", text(&status));

    // A pure no-op has no drift.
    let drift = output(tazuna(&cluster, &dir).args(["state", "drift"]));
    assert_eq!(drift.status.code(), Some(0), "{}", text(&drift));

    // The file renders what was applied, so `state diff` has nothing to say;
    // it reads Tazuna's state and no live object.
    let before_diff = cluster.requests_from("tazuna/").map(|r| r.len());
    let diff = output(tazuna(&cluster, &dir).args(["state", "diff"]));
    assert_eq!(diff.status.code(), Some(0), "{}", text(&diff));
    if let Some(before) = before_diff {
        let all = cluster.requests_from("tazuna/").unwrap();
        let beyond_state: Vec<_> = all[before..]
            .iter()
            .filter(|e| {
                !e.resource.is_empty()
                    && e.namespace.as_deref() != Some("tazuna")
                    && e.name.as_deref() != Some("kube-system")
            })
            .collect();
        assert_eq!(
            beyond_state,
            Vec::<&tazuna_tests::AuditEvent>::new(),
            "state diff read live objects"
        );
    }

    // Changing one ConfigMap plans exactly that change.
    edit(
        &dir.join("argo-cd/install.yaml"),
        "  name: argocd-cm\n---",
        "  name: argocd-cm\ndata:\n  timeout.reconciliation: 300s\n---",
    );
    edit(
        &dir.join("secret.yaml"),
        SECRET_VALUE,
        &format!("{SECRET_VALUE}-v2"),
    );
    // Go Tazuna's scripts expect success from `state diff` with changes; 2
    // comes only with --detailed-exitcode, as for plan.
    let plain = output(tazuna(&cluster, &dir).args(["state", "diff"]));
    assert_eq!(plain.status.code(), Some(0), "{}", text(&plain));
    assert!(
        String::from_utf8_lossy(&plain.stdout).contains("~ update"),
        "{}",
        text(&plain)
    );
    let diff =
        output(tazuna(&cluster, &dir).args(["state", "diff", "--detailed-exitcode", "-o", "json"]));
    assert_eq!(diff.status.code(), Some(2), "{}", text(&diff));
    assert!(
        !text(&diff).contains(SECRET_VALUE),
        "a Secret value reached state diff"
    );
    let report: Value = serde_json::from_slice(&diff.stdout).unwrap();
    let changed: Vec<(&str, &str)> = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["object"].as_str().unwrap(), c["change"].as_str().unwrap()))
        .collect();
    assert_eq!(
        changed,
        [
            ("v1 ConfigMap argocd/argocd-cm", "update"),
            ("v1 Secret default/db", "update")
        ],
        "{report:#}"
    );
    let plan = output(tazuna(&cluster, &dir).args(["plan", "--detailed-exitcode", "-o", "json"]));
    assert_eq!(plan.status.code(), Some(2), "{}", text(&plan));
    let report: Value = serde_json::from_slice(&plan.stdout).unwrap();
    let changed: Vec<&str> = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["object"].as_str().unwrap())
        .collect();
    assert_eq!(
        changed,
        ["v1 ConfigMap argocd/argocd-cm", "v1 Secret default/db"],
        "{report:#}"
    );
    assert!(
        report["changes"][0]["diff"]
            .as_str()
            .unwrap()
            .contains("+   timeout.reconciliation: 300s"),
        "{report:#}"
    );
    let text_plan = output(tazuna(&cluster, &dir).arg("plan"));
    assert!(
        !text(&text_plan).contains(SECRET_VALUE),
        "a Secret value reached the plan: {}",
        text(&text_plan)
    );
    let applied = succeed(tazuna(&cluster, &dir).arg("apply"));
    assert!(!text(&applied).contains(SECRET_VALUE));
    let cm = kubectl_json(&cluster, &["-n", "argocd", "get", "configmap", "argocd-cm"]);
    assert_eq!(cm["data"]["timeout.reconciliation"], "300s");

    // A hand edit is drift; a server-side default is not.
    succeed(cluster.kubectl().args([
        "-n",
        "argocd",
        "patch",
        "configmap",
        "argocd-cm",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"timeout.reconciliation":"999s"}}"#,
    ]));
    let drift = output(tazuna(&cluster, &dir).args(["state", "drift", "-o", "json"]));
    assert_eq!(drift.status.code(), Some(2), "{}", text(&drift));
    let report: Value = serde_json::from_slice(&drift.stdout).unwrap();
    let drifted: Vec<&str> = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["object"].as_str().unwrap())
        .collect();
    assert_eq!(drifted, ["v1 ConfigMap argocd/argocd-cm"], "{report:#}");
    // The field now belongs to kubectl's field manager, and the report says so.
    let note = report["changes"][0]["note"].as_str().unwrap_or_default();
    assert!(note.contains("kubectl-patch"), "{report:#}");
    assert!(
        report["changes"][0]["diff"]
            .as_str()
            .unwrap_or_default()
            .contains("+   timeout.reconciliation: 300s"),
        "{report:#}"
    );

    // Removing a manifest from the file and pruning deletes its objects.
    edit(
        &dir.join("tazuna.yaml"),
        "    - name: projects\n",
        "    - name: projects-removed\n",
    );
    let config = std::fs::read_to_string(dir.join("tazuna.yaml")).unwrap();
    let kept: Vec<&str> = config
        .split("\n    - name: ")
        .filter(|block| !block.starts_with("projects-removed"))
        .collect();
    std::fs::write(dir.join("tazuna.yaml"), kept.join("\n    - name: ")).unwrap();
    let diff = output(tazuna(&cluster, &dir).args(["state", "diff", "--detailed-exitcode"]));
    assert_eq!(diff.status.code(), Some(2), "{}", text(&diff));
    assert!(
        String::from_utf8_lossy(&diff.stdout).contains(
            "- delete projects: argoproj.io/v1alpha1 AppProject argocd/platform (removed: its manifest was removed from the file; deleted with `apply --prune`)"
        ),
        "{}",
        text(&diff)
    );
    succeed(tazuna(&cluster, &dir).args(["apply", "--prune", "--force-conflicts"]));
    assert!(
        !exists(
            &cluster,
            &["-n", "argocd", "appprojects.argoproj.io", "platform"]
        ),
        "the AppProject was not pruned"
    );
    assert!(
        !exists(
            &cluster,
            &["-n", "tazuna", "configmap", "tazuna-manifest-projects"]
        ),
        "the removed manifest's state stayed"
    );
    let cm = kubectl_json(&cluster, &["-n", "argocd", "get", "configmap", "argocd-cm"]);
    assert_eq!(
        cm["data"]["timeout.reconciliation"], "300s",
        "--force-conflicts took the field back"
    );

    // Destroy leaves nothing of Tazuna's.
    succeed(tazuna(&cluster, &dir).args(["destroy", "--yes"]));
    assert!(
        !exists(&cluster, &["namespace", "argocd"]),
        "namespace argocd is still there"
    );
    assert!(!exists(&cluster, &["crd", "applications.argoproj.io"]));
    assert!(!exists(&cluster, &["clusterrole", "argocd-server"]));
    assert!(!exists(&cluster, &["-n", "default", "secret", "db"]));
    let state = state_objects(&cluster);
    assert_eq!(state["items"].as_array().unwrap().len(), 0, "{state}");
}

fn small_file(dir: &Path, context_matches: &str) {
    std::fs::write(
        dir.join("tazuna.yaml"),
        format!(
            "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  context_matches: {context_matches}\n  manifests:\n    - name: app\n      type: manifests\n      path: app.yaml\n      namespace: default\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("app.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: guarded\ndata:\n  k: v\n",
    )
    .unwrap();
}

#[test]
fn the_guard_refuses_a_wrong_context_and_a_wrong_cluster_before_writing() {
    let Some(first) = TestCluster::start("guard-a") else {
        return;
    };
    if first.is_external() {
        eprintln!("skipped: needs two harness clusters");
        return;
    }
    let Some(second) = TestCluster::start("guard-b") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();

    // Full versus partial matching: `guard` matches `guard-a` partially,
    // `^guard$` does not match it at all.
    small_file(dir.path(), "['^guard$']");
    let refused = output(tazuna(&first, dir.path()).arg("apply"));
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("does not match `spec.context_matches`"),
        "{}",
        text(&refused)
    );
    assert!(
        !exists(&first, &["namespace", "tazuna"]),
        "a refused run wrote to the cluster"
    );

    small_file(dir.path(), "['guard']");
    succeed(tazuna(&first, dir.path()).arg("apply"));
    assert!(exists(&first, &["-n", "default", "configmap", "guarded"]));
    let lock = std::fs::read_to_string(dir.path().join("tazuna.lock")).unwrap();
    let first_uid = kubectl_json(&first, &["get", "namespace", "kube-system"])["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(lock.contains(&first_uid), "{lock}");

    // The second cluster, reached under the first one's context name.
    let renamed = dir.path().join("kubeconfig-b");
    std::fs::copy(second.kubeconfig(), &renamed).unwrap();
    succeed(
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&renamed)
            .args([
                "config",
                "rename-context",
                second.context(),
                first.context(),
            ]),
    );
    let mut impostor = Command::new(env!("CARGO_BIN_EXE_tazuna"));
    impostor
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .arg("--kubeconfig")
        .arg(&renamed)
        .arg("--context")
        .arg(first.context());
    let refused = output(impostor.arg("apply"));
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    let second_uid = kubectl_json(&second, &["get", "namespace", "kube-system"])["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        stderr.contains(&first_uid) && stderr.contains(&second_uid),
        "both identities are named: {stderr}"
    );
    assert!(stderr.contains("--rebind"), "{stderr}");
    assert!(
        !exists(&second, &["namespace", "tazuna"]),
        "the wrong cluster was written to"
    );
    assert!(!exists(&second, &["-n", "default", "configmap", "guarded"]));

    // Re-binding on purpose works.
    let mut rebind = Command::new(env!("CARGO_BIN_EXE_tazuna"));
    rebind
        .current_dir(dir.path())
        .arg("--kubeconfig")
        .arg(&renamed)
        .arg("--context")
        .arg(first.context());
    succeed(rebind.args(["apply", "--rebind"]));
    assert!(exists(&second, &["-n", "default", "configmap", "guarded"]));
    assert!(
        std::fs::read_to_string(dir.path().join("tazuna.lock"))
            .unwrap()
            .contains(&second_uid)
    );
}

#[test]
fn two_concurrent_applies_serialise_on_the_lease_and_leave_one_consistent_state() {
    let Some(cluster) = TestCluster::start("apply-lock") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    small_file(dir.path(), "[]");
    let spawn = || {
        tazuna(&cluster, dir.path())
            .arg("apply")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(
        a.status.success() && b.status.success(),
        "one waits for the other:\n{}\n{}",
        text(&a),
        text(&b)
    );
    let bound = [&a, &b]
        .iter()
        .filter(|out| text(out).contains("binding this file to cluster"))
        .count();
    assert_eq!(bound, 1, "one binds the file, the other finds the binding");
    let lock = std::fs::read_to_string(dir.path().join("tazuna.lock")).unwrap();
    assert!(lock.contains("default:"), "{lock}");
    let state = state_objects(&cluster);
    assert_eq!(state["items"].as_array().unwrap().len(), 1, "{state}");
    assert!(
        !exists(&cluster, &["-n", "tazuna", "lease", "tazuna-lock"]),
        "the lock was released"
    );
}

const WIDGET: &str = "apiVersion: example.tazuna.dev/v1
kind: Widget
metadata:
  name: gear
spec:
  size: 3
";

#[test]
fn a_crd_and_its_custom_resource_in_one_manifest_apply_and_a_missing_dependency_is_named() {
    let Some(cluster) = TestCluster::start("apply-crd") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/crd.yaml"),
        common::crd("widgets", "Widget"),
    )
    .unwrap();
    std::fs::write(dir.path().join("src/widget.yaml"), WIDGET).unwrap();

    // A Widget in a manifest that forgot `dependsOn` on the CRD's manifest:
    // sequential order is declared the other way round, so the kind is unknown.
    std::fs::write(
        dir.path().join("tazuna.yaml"),
        "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n    - name: widgets\n      type: manifests\n      path: src/widget.yaml\n      namespace: default\n    - name: definitions\n      type: manifests\n      path: src/crd.yaml\n",
    )
    .unwrap();
    let refused = output(tazuna(&cluster, dir.path()).arg("apply"));
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    let stdout = String::from_utf8_lossy(&refused.stdout);
    assert!(
        stdout.contains("unknown kind `Widget`")
            && stdout.contains("hint: CRD for `Widget` is applied by manifest `definitions`; add `definitions` to `dependsOn` of `widgets`"),
        "{}",
        text(&refused)
    );
    assert!(
        !exists(&cluster, &["crd", "widgets.example.tazuna.dev"]),
        "a later manifest ran after a failure"
    );

    // The CRD and the Widget in one manifest: the CRD goes first, is waited
    // for, and the Widget follows.
    std::fs::write(
        dir.path().join("tazuna.yaml"),
        "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n    - name: widgets\n      type: manifests\n      path: src\n      namespace: default\n",
    )
    .unwrap();
    succeed(tazuna(&cluster, dir.path()).arg("apply"));
    let widget = kubectl_json(
        &cluster,
        &["-n", "default", "get", "widgets.example.tazuna.dev", "gear"],
    );
    assert_eq!(widget["spec"]["size"], 3, "{widget}");

    // A misspelt field is refused by name, not dropped: Tazuna applies with
    // strict field validation, like kubectl.
    std::fs::write(
        dir.path().join("src/typo.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: typo\ndatta:\n  key: value\n",
    )
    .unwrap();
    let refused = output(tazuna(&cluster, dir.path()).arg("apply"));
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    let stdout = String::from_utf8_lossy(&refused.stdout);
    assert!(
        stdout.contains("v1 ConfigMap default/typo")
            && stdout.contains(".datta: field not declared in schema")
            && stdout.contains("hint: the API server's schema for this kind has no such field"),
        "{}",
        text(&refused)
    );
    assert!(
        !exists(&cluster, &["-n", "default", "configmap", "typo"]),
        "the misspelt ConfigMap was created anyway"
    );
    // `plan` refuses it the same way, once, without kube-rs's own log line,
    // as a refusal of that object beside the rest of the plan, and exits 1.
    let planned = output(tazuna(&cluster, dir.path()).arg("plan"));
    assert_eq!(planned.status.code(), Some(1), "{}", text(&planned));
    let said = text(&planned);
    assert!(
        String::from_utf8_lossy(&planned.stdout).contains(
            "v1 ConfigMap default/typo (its server-side dry run was refused: failed to create typed patch object (default/typo; /v1, Kind=ConfigMap): .datta: field not declared in schema; hint: the API server's schema for this kind has no such field; check its spelling, its indentation and the apiVersion)"
        ),
        "{said}"
    );
    assert_eq!(
        said.matches("field not declared in schema").count(),
        1,
        "{said}"
    );

    // A removed API version is named as such, with the version to move to,
    // not blamed on a missing CRD.
    std::fs::remove_file(dir.path().join("src/typo.yaml")).unwrap();
    std::fs::write(
        dir.path().join("src/old.yaml"),
        "apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata:\n  name: old\nspec:\n  backend: {serviceName: web, servicePort: 80}\n",
    )
    .unwrap();
    for command in ["plan", "apply"] {
        let refused = output(tazuna(&cluster, dir.path()).arg(command));
        let said = text(&refused);
        assert!(
            said.contains("`extensions/v1beta1` Ingress was removed in Kubernetes 1.22; use `apiVersion: networking.k8s.io/v1`")
                && !said.contains("provides a CRD"),
            "{command}: {said}"
        );
    }
}

#[test]
fn killing_the_apiserver_mid_apply_and_rerunning_converges() {
    let Some(mut cluster) = TestCluster::start("apply-crash") else {
        return;
    };
    if cluster.is_external() {
        eprintln!("skipped: needs a harness cluster whose API server can be killed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut objects = String::from("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: crash\n");
    for i in 0..1500 {
        objects.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c-{i:04}\n  namespace: crash\ndata:\n  i: \"{i}\"\n"
        ));
    }
    std::fs::write(dir.path().join("objects.yaml"), objects).unwrap();
    small_file(dir.path(), "[]");
    let config = std::fs::read_to_string(dir.path().join("tazuna.yaml")).unwrap();
    std::fs::write(
        dir.path().join("tazuna.yaml"),
        format!("{config}    - name: bulk\n      type: manifests\n      path: objects.yaml\n      wait: false\n"),
    )
    .unwrap();

    let child = tazuna(&cluster, dir.path())
        .arg("apply")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Kill the API server once some, not all, of the ConfigMaps are in.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let out =
            output(
                cluster
                    .kubectl()
                    .args(["-n", "crash", "get", "configmaps", "-o", "name"]),
            );
        let count = String::from_utf8_lossy(&out.stdout).lines().count();
        if count > 50 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the apply never got going"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    cluster.own_mut().unwrap().kill_apiserver();
    let crashed = child.wait_with_output().unwrap();
    assert!(
        !crashed.status.success(),
        "the apply survived its API server: {}",
        text(&crashed)
    );
    cluster.own_mut().unwrap().start_apiserver_again().unwrap();

    // The crashed run's lock is taken over (its process is gone), and the
    // rerun converges.
    succeed(tazuna(&cluster, dir.path()).args(["apply", "--lock-timeout", "0"]));
    let out = succeed(
        cluster
            .kubectl()
            .args(["-n", "crash", "get", "configmaps", "-o", "name"]),
    );
    let names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("configmap/c-"))
        .map(str::to_owned)
        .collect();
    assert_eq!(names.len(), 1500);
    let state = state_objects(&cluster);
    let items = state["items"].as_array().unwrap();
    assert_eq!(
        items.len(),
        2,
        "one state per manifest, no duplicates: {state}"
    );
    let bulk = items
        .iter()
        .find(|i| i["metadata"]["name"] == "tazuna-manifest-bulk")
        .expect("the bulk manifest's state");
    // 1,501 entries are stored compressed.
    let compressed = base64::Engine::decode(
        &base64::engine::general_purpose::STANDARD,
        bulk["binaryData"]["state.json.gz"]
            .as_str()
            .expect("a compressed state"),
    )
    .unwrap();
    let mut json = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(compressed.as_slice()),
        &mut json,
    )
    .unwrap();
    let recorded: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        recorded["objects"].as_array().unwrap().len(),
        1501,
        "every object once in state"
    );
    let again = succeed(tazuna(&cluster, dir.path()).args(["plan", "--detailed-exitcode"]));
    assert!(again.status.success());
}

fn verify_dirs() -> usize {
    std::fs::read_dir(std::env::temp_dir().join("tazuna-tests"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("tazuna-verify"))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn verify_applies_the_quickstart_to_a_throwaway_control_plane_and_fails_on_a_failing_test() {
    if tazuna_tests::e2e::tools(&tazuna_tests::Tool::CONTROL_PLANE).is_none() {
        return;
    }
    let (_keep, dir) = quickstart_copy();
    let file = dir.join("tazuna.yaml");
    let config = std::fs::read_to_string(&file).unwrap();
    // A context rule no throwaway cluster matches: verify must not need it.
    let config = config.replacen("spec:\n", "spec:\n  context_matches: ['^production$']\n", 1);
    let with_test = |condition: &str| {
        format!(
            "{config}  tests:\n    - type: WaitUntil\n      timeoutSeconds: 20\n      waitUntil:\n        resource:\n          apiVersion: apps/v1\n          kind: Deployment\n        namespace: argocd\n        name: argocd-server\n        condition: \"{condition}\"\n"
        )
    };
    let run = |config: String| {
        std::fs::write(&file, config).unwrap();
        let mut verify = Command::new(env!("CARGO_BIN_EXE_tazuna"));
        verify.current_dir(&dir).env("NO_COLOR", "1").arg("verify");
        output(&mut verify)
    };
    let before = verify_dirs();

    let passed = run(with_test(
        "object.status.conditions.exists(c, c.type == 'Available' && c.status == 'True')",
    ));
    assert!(passed.status.success(), "{}", text(&passed));
    assert!(
        String::from_utf8_lossy(&passed.stderr).contains("verify: passed"),
        "{}",
        text(&passed)
    );

    let failed = run(with_test("object.spec.replicas == 42"));
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed));
    assert!(
        String::from_utf8_lossy(&failed.stdout).contains("timed out"),
        "{}",
        text(&failed)
    );

    assert_eq!(
        verify_dirs(),
        before,
        "a throwaway control plane was left behind"
    );
    assert!(
        !dir.join("tazuna.lock").exists(),
        "verify bound the file to its throwaway cluster"
    );
}

#[test]
fn go_state_is_migrated_recreate_replaces_immutable_fields_and_forget_hands_over() {
    let Some(cluster) = TestCluster::start("apply-handover") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let service = |ip: &str| {
        format!(
            "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: fixed\nspec:\n  clusterIP: {ip}\n  ports:\n    - port: 80\n"
        )
    };
    let objects = |ip: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: old-one\ndata:\n  k: v\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: handed-over\ndata:\n  k: v\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: earlier\ndata:\n  k: v\n{}",
            service(ip)
        )
    };
    std::fs::write(dir.path().join("objects.yaml"), objects("10.96.0.50")).unwrap();
    std::fs::write(
        dir.path().join("tazuna.yaml"),
        "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n    - name: legacy\n      type: manifests\n      path: objects.yaml\n      namespace: default\n",
    )
    .unwrap();

    // What Go Tazuna left: the object, applied under a field manager of its
    // own with a value the file now changes (a conflict for a plain
    // server-side apply), and its state ConfigMap.
    succeed(cluster.kubectl().args(["create", "namespace", "tazuna"]));
    let old = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: old-one\n  namespace: default\ndata:\n  k: from-go\n";
    std::fs::write(dir.path().join("old.yaml"), old).unwrap();
    succeed(
        cluster
            .kubectl()
            .args([
                "apply",
                "--server-side",
                "--field-manager",
                "go-tazuna",
                "-f",
            ])
            .arg(dir.path().join("old.yaml")),
    );
    succeed(cluster.kubectl().args([
        "-n",
        "tazuna",
        "create",
        "configmap",
        "tazuna-state-legacy",
        "--from-literal=_metadata={\"gitCommitHash\":\"abc123\",\"lastSyncedAt\":\"2026-04-02T10:00:00Z\"}",
        "--from-literal=legacy____v1__ConfigMap__default__old-one={\"contentHash\":\"hash1\"}",
    ]));
    // What an earlier Tazuna applied under the one field manager all stacks
    // shared, with a value the file now changes: the stack takes it over
    // as its own manager, with no conflict with the old name.
    let earlier = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: earlier\n  namespace: default\ndata:\n  k: from-earlier\n";
    std::fs::write(dir.path().join("earlier.yaml"), earlier).unwrap();
    succeed(
        cluster
            .kubectl()
            .args(["apply", "--server-side", "--field-manager", "tazuna", "-f"])
            .arg(dir.path().join("earlier.yaml")),
    );
    let planned = succeed(tazuna(&cluster, dir.path()).arg("plan"));
    let line = String::from_utf8_lossy(&planned.stdout)
        .lines()
        .find(|l| l.contains("default/earlier"))
        .map(str::to_owned);
    assert!(
        line.as_ref()
            .is_some_and(|l| l.contains("adopt") && !l.contains("conflict")),
        "plan meets the conflicts apply meets, none with the old manager: {}",
        text(&planned)
    );
    // As Go Tazuna lists state: one line per resource.
    let list = succeed(tazuna(&cluster, dir.path()).args(["state", "list"]));
    let rows: Vec<Vec<String>> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect();
    assert_eq!(
        rows[0],
        ["MANIFEST", "RESOURCE", "NAMESPACE", "NAME"],
        "{}",
        text(&list)
    );
    assert_eq!(
        rows[1],
        ["legacy", "v1/ConfigMap", "default", "old-one"],
        "{}",
        text(&list)
    );
    assert!(
        String::from_utf8_lossy(&list.stdout).contains("Go Tazuna state"),
        "{}",
        text(&list)
    );
    let manifests = succeed(tazuna(&cluster, dir.path()).args(["state", "list", "--manifests"]));
    assert!(
        String::from_utf8_lossy(&manifests.stdout).contains("legacy  1 objects"),
        "{}",
        text(&manifests)
    );
    let migrated = succeed(tazuna(&cluster, dir.path()).arg("apply"));
    // What existed already is configured, not created, and what Go applied
    // is taken over without `--force-conflicts`.
    let said = text(&migrated);
    assert!(
        said.contains("configured v1 ConfigMap default/old-one")
            && said.contains("created v1 ConfigMap default/handed-over")
            && said.contains("took over the fields Go Tazuna applied"),
        "{said}"
    );
    let old_one = kubectl_json(
        &cluster,
        &[
            "-n",
            "default",
            "get",
            "configmap",
            "old-one",
            "--show-managed-fields",
        ],
    );
    assert_eq!(old_one["data"]["k"], "v", "{old_one}");
    let owners: Vec<&str> = old_one["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["fieldsV1"]["f:data"].get("f:k").is_some())
        .map(|f| f["manager"].as_str().unwrap())
        .collect();
    // The stack's own field manager: `tazuna/<stack>`, the stack named
    // after the file's directory outside git.
    let stack_manager = format!(
        "tazuna/{}/tazuna.yaml",
        dir.path()
            .canonicalize()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
    );
    assert_eq!(
        owners,
        [stack_manager.as_str()],
        "the stack alone owns the field now: {old_one}"
    );
    let earlier_live = kubectl_json(
        &cluster,
        &[
            "-n",
            "default",
            "get",
            "configmap",
            "earlier",
            "--show-managed-fields",
        ],
    );
    let managers: Vec<&str> = earlier_live["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["manager"].as_str().unwrap())
        .collect();
    assert_eq!(earlier_live["data"]["k"], "v", "{earlier_live}");
    assert_eq!(
        managers,
        [stack_manager.as_str()],
        "the old manager's entry was handed to the stack's: {earlier_live}"
    );
    // Unchanged now: the next apply writes nothing.
    let version = earlier_live["metadata"]["resourceVersion"].clone();
    succeed(tazuna(&cluster, dir.path()).arg("apply"));
    assert_eq!(
        kubectl_json(&cluster, &["-n", "default", "get", "configmap", "earlier"])["metadata"]["resourceVersion"],
        version,
        "an unchanged object was written again"
    );
    assert!(
        !exists(
            &cluster,
            &["-n", "tazuna", "configmap", "tazuna-state-legacy"]
        ),
        "the Go state was not replaced"
    );
    let state = state_objects(&cluster);
    let recorded: Value =
        serde_json::from_str(state["items"][0]["data"]["state.json"].as_str().unwrap()).unwrap();
    let names: Vec<&str> = recorded["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 4, "{recorded}");
    assert!(names.contains(&"old-one"), "{recorded}");

    // An immutable field: refused with a hint, then replaced with --recreate.
    std::fs::write(dir.path().join("objects.yaml"), objects("10.96.0.51")).unwrap();
    let refused = output(tazuna(&cluster, dir.path()).arg("apply"));
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(text(&refused).contains("--recreate"), "{}", text(&refused));
    let uid =
        kubectl_json(&cluster, &["-n", "default", "get", "service", "fixed"])["metadata"]["uid"]
            .clone();
    succeed(tazuna(&cluster, dir.path()).args(["apply", "--recreate"]));
    let fixed = kubectl_json(&cluster, &["-n", "default", "get", "service", "fixed"]);
    assert_eq!(fixed["spec"]["clusterIP"], "10.96.0.51");
    assert_ne!(fixed["metadata"]["uid"], uid, "the Service was re-created");

    // Forgotten objects stay when they leave the file, even with --prune.
    succeed(tazuna(&cluster, dir.path()).args([
        "state",
        "forget",
        "legacy/ConfigMap/default/handed-over",
    ]));
    std::fs::write(dir.path().join("objects.yaml"), service("10.96.0.51")).unwrap();
    succeed(tazuna(&cluster, dir.path()).args(["apply", "--prune"]));
    assert!(
        exists(&cluster, &["-n", "default", "configmap", "handed-over"]),
        "a forgotten object was pruned"
    );
    assert!(
        !exists(&cluster, &["-n", "default", "configmap", "old-one"]),
        "the migrated object was not pruned"
    );
}

#[test]
fn a_readiness_timeout_names_the_object_and_its_conditions() {
    let Some(cluster) = TestCluster::start("apply-timeout") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // No node carries this label, so the pod never schedules.
    std::fs::write(
        dir.path().join("stuck.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: stuck\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: stuck}\n  template:\n    metadata:\n      labels: {app: stuck}\n    spec:\n      nodeSelector: {tazuna.dev/no-such-node: \"true\", beta.kubernetes.io/os: linux}\n      containers:\n        - name: app\n          image: registry.k8s.io/pause:3.10\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("tazuna.yaml"),
        "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n    - name: stuck\n      type: manifests\n      path: stuck.yaml\n      namespace: default\n      wait:\n        enabled: true\n        timeoutSeconds: 8\n",
    )
    .unwrap();
    // `plan` passes on the API server's warning about a deprecated label.
    let plan = succeed(tazuna(&cluster, dir.path()).args(["plan", "-o", "json"]));
    let report: Value = serde_json::from_slice(&plan.stdout).unwrap();
    assert_eq!(
        report["changes"][0]["note"],
        r#"warning: spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead"#,
        "{report:#}"
    );
    let failed = output(tazuna(&cluster, dir.path()).arg("apply"));
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed));
    let stdout = String::from_utf8_lossy(&failed.stdout);
    assert!(
        stdout.contains("1 object not ready after 8s"),
        "{}",
        text(&failed)
    );
    assert!(
        stdout.contains("apps/v1 Deployment default/stuck"),
        "{}",
        text(&failed)
    );
    assert!(
        stdout.contains("Available=False"),
        "the reason names the condition: {}",
        text(&failed)
    );
    // The API server's warning about the deprecated label reaches the user.
    assert!(
        stdout.contains(r#"created apps/v1 Deployment default/stuck (warning: spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead)"#),
        "{}",
        text(&failed)
    );
    // Not ready is still recorded, as incomplete and without the hash of
    // its live fields, so status shows it, destroy removes it, and the next
    // run sends it and waits again.
    let state = state_objects(&cluster);
    assert_eq!(state["items"].as_array().unwrap().len(), 1, "{state:#}");
    let recorded: Value =
        serde_json::from_str(state["items"][0]["data"]["state.json"].as_str().unwrap()).unwrap();
    assert_eq!(recorded["incomplete"], true, "{recorded:#}");
    assert_eq!(recorded["objects"][0]["name"], "stuck", "{recorded:#}");
    assert!(
        recorded["objects"][0].get("fields").is_none(),
        "{recorded:#}"
    );
    let pods = kubectl_json(
        &cluster,
        &["-n", "default", "get", "pods", "-l", "app=stuck"],
    );
    assert_eq!(pods["items"][0]["status"]["phase"], "Pending", "{pods}");

    // A LoadBalancer Service never gets an address here (no load-balancer
    // controller). As with helm's `--wait`, that is not waited for unless the
    // manifest asks.
    let edge = tempfile::tempdir().unwrap();
    let service = |tier: &str| {
        format!(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: edge\n  labels: {{tier: {tier}}}\nspec:\n  type: LoadBalancer\n  selector: {{app: edge}}\n  ports:\n    - port: 80\n"
        )
    };
    let file = |wait: &str| {
        format!(
            "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n    - name: edge\n      type: manifests\n      path: edge.yaml\n      namespace: default\n      wait: {wait}\n"
        )
    };
    std::fs::write(edge.path().join("edge.yaml"), service("one")).unwrap();
    std::fs::write(edge.path().join("tazuna.yaml"), file("{timeoutSeconds: 8}")).unwrap();
    succeed(tazuna(&cluster, edge.path()).arg("apply"));
    std::fs::write(edge.path().join("edge.yaml"), service("two")).unwrap();
    std::fs::write(
        edge.path().join("tazuna.yaml"),
        file("{timeoutSeconds: 3, loadBalancers: true}"),
    )
    .unwrap();
    let failed = output(tazuna(&cluster, edge.path()).arg("apply"));
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed));
    let stdout = String::from_utf8_lossy(&failed.stdout);
    assert!(
        stdout.contains("v1 Service default/edge")
            && stdout.contains("waiting for the load balancer to get an address"),
        "{}",
        text(&failed)
    );
    let live = kubectl_json(&cluster, &["-n", "default", "get", "service", "edge"]);
    assert_eq!(live["metadata"]["labels"]["tier"], "two", "{live}");
}

#[test]
fn a_job_its_ttl_removes_is_applied_once_and_is_neither_recreated_nor_drift() {
    let Some(cluster) = TestCluster::start("apply-ttl-job") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let job = |label: &str| {
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\nspec:\n  ttlSecondsAfterFinished: 0\n  backoffLimit: 0\n  template:\n    metadata:\n      labels: {{run: {label}}}\n    spec:\n      restartPolicy: Never\n      containers:\n        - name: migrate\n          image: registry.k8s.io/pause:3.10\n"
        )
    };
    std::fs::write(dir.path().join("job.yaml"), job("first")).unwrap();
    std::fs::write(
        dir.path().join("tazuna.yaml"),
        "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n    - name: migrate\n      type: manifests\n      path: job.yaml\n      namespace: default\n",
    )
    .unwrap();
    succeed(tazuna(&cluster, dir.path()).arg("apply"));
    // The Job finishes (kwok completes its pod) and its TTL removes it.
    let gone = |cluster: &TestCluster| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while exists(cluster, &["job", "migrate", "-n", "default"]) {
            assert!(
                std::time::Instant::now() < deadline,
                "the Job was not removed by its TTL"
            );
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
    };
    gone(&cluster);

    // Nothing to do: not re-created, not drift, not missing.
    let before = writes(&cluster, "jobs");
    let again = succeed(tazuna(&cluster, dir.path()).arg("apply"));
    assert_eq!(writes(&cluster, "jobs"), before, "{}", text(&again));
    assert!(!exists(&cluster, &["job", "migrate", "-n", "default"]));
    let plan = output(tazuna(&cluster, dir.path()).args(["plan", "--detailed-exitcode"]));
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
    let drift = output(tazuna(&cluster, dir.path()).args(["state", "drift"]));
    assert_eq!(drift.status.code(), Some(0), "{}", text(&drift));
    let status = output(tazuna(&cluster, dir.path()).arg("status"));
    assert_eq!(status.status.code(), Some(0), "{}", text(&status));

    // A changed Job is a new run: applied again, and removed again.
    std::fs::write(dir.path().join("job.yaml"), job("second")).unwrap();
    let plan = output(tazuna(&cluster, dir.path()).args(["plan", "--detailed-exitcode"]));
    assert_eq!(plan.status.code(), Some(2), "{}", text(&plan));
    let changed = succeed(tazuna(&cluster, dir.path()).arg("apply"));
    assert!(writes(&cluster, "jobs") > before, "{}", text(&changed));
    gone(&cluster);
    let plan = output(tazuna(&cluster, dir.path()).args(["plan", "--detailed-exitcode"]));
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
}

#[test]
fn a_release_into_a_namespace_nobody_creates_is_refused_before_any_write_until_create_namespace() {
    let Some(cluster) = TestCluster::start("apply-create-namespace") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("app.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  k: v\n",
    )
    .unwrap();
    let file = |create: &str| {
        format!(
            "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n    - name: shop\n      type: manifests\n      path: app.yaml\n      namespace: shop\n{create}"
        )
    };
    std::fs::write(dir.path().join("tazuna.yaml"), file("")).unwrap();
    for command in ["plan", "apply"] {
        let refused = output(tazuna(&cluster, dir.path()).arg(command));
        assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(
            stderr.contains("namespace `shop` does not exist, and nothing in this run creates it; manifest `shop` puts v1 ConfigMap shop/settings there")
                && stderr.contains("hint: set `createNamespace: true` on manifest `shop`"),
            "{command}: {}",
            text(&refused)
        );
    }
    // Nothing was written, not even Tazuna's own namespace.
    assert!(!exists(&cluster, &["namespace", "tazuna"]));
    assert!(!exists(&cluster, &["namespace", "shop"]));

    std::fs::write(
        dir.path().join("tazuna.yaml"),
        file("      createNamespace: true\n"),
    )
    .unwrap();
    let plan = output(tazuna(&cluster, dir.path()).args(["plan", "--detailed-exitcode"]));
    assert_eq!(plan.status.code(), Some(2), "{}", text(&plan));
    assert!(
        String::from_utf8_lossy(&plan.stdout).contains("namespace `shop` is created by this plan"),
        "{}",
        text(&plan)
    );
    succeed(tazuna(&cluster, dir.path()).arg("apply"));
    let namespace = kubectl_json(&cluster, &["get", "namespace", "shop"]);
    assert_eq!(
        namespace["metadata"]["labels"]["app.kubernetes.io/created-by"], "tazuna",
        "{namespace:#}"
    );
    assert!(exists(&cluster, &["configmap", "settings", "-n", "shop"]));
    let plan = output(tazuna(&cluster, dir.path()).args(["plan", "--detailed-exitcode"]));
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
    // As with helm, the namespace is not the manifest's: destroy leaves it.
    succeed(tazuna(&cluster, dir.path()).args(["destroy", "--yes"]));
    assert!(!exists(&cluster, &["configmap", "settings", "-n", "shop"]));
    assert!(exists(&cluster, &["namespace", "shop"]));
}

#[test]
fn the_file_go_tazuna_init_writes_checks_applies_and_plans_with_nothing_to_do() {
    let Some(cluster) = TestCluster::start("apply-empty") else {
        return;
    };
    let dir =
        common::project("apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests: []\n");
    for args in [
        &["check"][..],
        &["build"],
        &["apply"],
        &["plan", "--detailed-exitcode"],
        &["state", "drift"],
        &["status"],
        &["destroy", "--yes"],
    ] {
        let out = output(tazuna(&cluster, dir.path()).args(args));
        assert!(out.status.success(), "{args:?}: {}", text(&out));
    }
    if let Some(requests) = cluster.requests_from("tazuna/") {
        // Tazuna's own bookkeeping (namespace `tazuna`, its Lease and hash
        // key) aside, nothing is written.
        let writes: Vec<String> = requests
            .iter()
            .filter(|r| r.is_write())
            .filter(|r| r.namespace.as_deref() != Some("tazuna"))
            .filter(|r| !(r.resource == "namespaces" && r.name.as_deref() == Some("tazuna")))
            .map(|r| format!("{} {} {:?}", r.verb, r.resource, r.name))
            .collect();
        assert_eq!(writes, Vec::<String>::new());
    }
}

/// `<name>/cm.yaml` for each name: a ConfigMap `name` with `ready: "yes"`.
fn write_ready_configmaps(dir: &Path, names: &[&str]) {
    for name in names {
        common::write(
            dir,
            &format!("{name}/cm.yaml"),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  ready: \"yes\"\n"
            ),
        );
    }
}

/// The JSON-lines events of `apply -o json`.
fn json_events(out: &std::process::Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Where the `event` of `manifest` comes among `events`.
fn event_index(events: &[Value], event: &str, manifest: &str) -> usize {
    events
        .iter()
        .position(|e| e["event"] == event && e["manifest"] == manifest)
        .unwrap_or_else(|| panic!("no `{event}` of `{manifest}` in {events:?}"))
}

/// Regression: layers were barriers. A manifest waited for unrelated
/// manifests of its layer, and its `finished` event came when the whole
/// layer ended.
#[test]
fn a_manifest_starts_when_its_own_dependencies_are_done_not_its_whole_layer() {
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let namespace = cluster.namespace("dag");
    let ns = namespace.name();
    let dir = common::project(&format!(
        r#"apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  manifests:
    - name: slow
      type: manifests
      path: ./slow
      namespace: {ns}
      tests:
        - type: WaitUntil
          intervalSeconds: 1
          minConsecutiveSuccessCount: 4
          timeoutSeconds: 60
          waitUntil:
            resource: {{ apiVersion: v1, kind: ConfigMap }}
            namespace: {ns}
            name: slow
            condition: "object.data.ready == 'yes'"
    - name: fast
      type: manifests
      path: ./fast
      namespace: {ns}
    - name: after-fast
      type: manifests
      path: ./after-fast
      namespace: {ns}
      dependsOn: [fast]
"#
    ));
    write_ready_configmaps(dir.path(), &["slow", "fast", "after-fast"]);
    let out = output(tazuna(cluster, dir.path()).args(["apply", "-o", "json"]));
    assert!(out.status.success(), "{}", text(&out));
    let events = json_events(&out);
    let at = |event: &str, manifest: &str| event_index(&events, event, manifest);
    // `slow` passes its test only after four checks a second apart; `fast`
    // and `after-fast` are done long before.
    assert!(
        at("started", "after-fast") < at("finished", "slow"),
        "after-fast waited for slow, which it does not depend on: {events:#?}"
    );
    assert!(at("finished", "fast") < at("started", "after-fast"));
    assert!(at("finished", "after-fast") < at("finished", "slow"));
    assert_eq!(
        common::kubectl_json(cluster, &["get", "configmap", "after-fast", "-n", ns])["data"]["ready"],
        "yes"
    );
}

/// Go Tazuna runs a `type: parallel` entry's children together. In a file
/// without any `dependsOn` (declaration order), they were applied one after
/// another; now they are one step of that order, and the next manifest waits
/// for all of them.
#[test]
fn a_parallel_entrys_children_apply_together_in_declaration_order() {
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let namespace = cluster.namespace("parallel");
    let ns = namespace.name();
    let dir = common::project(&format!(
        r#"apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  manifests:
    - name: par-first
      type: manifests
      path: ./par-first
      namespace: {ns}
    - name: pair
      type: parallel
      namespace: {ns}
      parallel:
        children:
          - name: par-slow
            type: manifests
            path: ./par-slow
            tests:
              - type: WaitUntil
                intervalSeconds: 1
                minConsecutiveSuccessCount: 4
                timeoutSeconds: 60
                waitUntil:
                  resource: {{ apiVersion: v1, kind: ConfigMap }}
                  namespace: {ns}
                  name: par-slow
                  condition: "object.data.ready == 'yes'"
          - name: par-fast
            type: manifests
            path: ./par-fast
    - name: par-last
      type: manifests
      path: ./par-last
      namespace: {ns}
"#
    ));
    write_ready_configmaps(
        dir.path(),
        &["par-first", "par-slow", "par-fast", "par-last"],
    );
    let out = output(tazuna(cluster, dir.path()).args(["apply", "-o", "json"]));
    assert!(out.status.success(), "{}", text(&out));
    let events = json_events(&out);
    let at = |event: &str, manifest: &str| event_index(&events, event, manifest);
    // `slow` passes its test only after four checks a second apart.
    assert!(
        at("started", "par-fast") < at("finished", "par-slow"),
        "par-fast waited for its sibling par-slow: {events:#?}"
    );
    assert!(at("finished", "par-first") < at("started", "par-slow"));
    assert!(at("finished", "par-first") < at("started", "par-fast"));
    assert!(
        at("finished", "par-slow") < at("started", "par-last")
            && at("finished", "par-fast") < at("started", "par-last"),
        "par-last started before the parallel entry's children were done: {events:#?}"
    );
    assert_eq!(
        common::kubectl_json(cluster, &["get", "configmap", "par-last", "-n", ns])["data"]["ready"],
        "yes"
    );
}

/// The most PATCHes of ConfigMaps in `namespace` that Tazuna had in flight at
/// once, from the API server's audit log (received to response complete).
fn most_patches_at_once(cluster: &TestCluster, namespace: &str) -> usize {
    most_at_once(cluster, 80, |e| {
        e.verb == "patch" && e.resource == "configmaps" && e.namespace.as_deref() == Some(namespace)
    })
}

/// The most of Tazuna's requests that `which` picks that were in flight at
/// once, from the API server's audit log; at least `least` of them.
fn most_at_once(
    cluster: &TestCluster,
    least: usize,
    which: impl Fn(&tazuna_controlplane::AuditEvent) -> bool,
) -> usize {
    let events = cluster.requests_from("tazuna/").expect("a harness cluster");
    let mut edges: Vec<(String, i32)> = Vec::new();
    for event in events.into_iter().filter(|e| which(e)) {
        edges.push((event.at, 1));
        edges.push((event.done, -1));
    }
    assert!(
        edges.len() >= 2 * least,
        "the audit log holds {} edges",
        edges.len()
    );
    // An end before a start at the same instant: those two did not overlap.
    edges.sort();
    let (mut now, mut most) = (0, 0);
    for (_, step) in edges {
        now += step;
        most = most.max(now);
    }
    most as usize
}

/// The lists that tell which objects of a phase exist go out together, one
/// round for the phase rather than one kind after another, and within
/// `--requests`.
#[test]
fn a_phase_lists_its_kinds_together_within_the_request_cap() {
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    if cluster.own().is_none() {
        eprintln!("skipped: a developer's cluster has no audit log to read");
        return;
    }
    let kinds = [
        ("v1", "ConfigMap", "configmaps"),
        ("v1", "Secret", "secrets"),
        ("v1", "ServiceAccount", "serviceaccounts"),
        ("rbac.authorization.k8s.io/v1", "Role", "roles"),
        ("v1", "Service", "services"),
        ("v1", "Endpoints", "endpoints"),
        ("v1", "LimitRange", "limitranges"),
        ("v1", "ResourceQuota", "resourcequotas"),
    ];
    let apply = |requests: &str| {
        let namespace = cluster.namespace("lists");
        let ns = namespace.name().to_owned();
        let dir = common::project(&format!(
            "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n    - name: kinds{requests}\n      type: manifests\n      path: ./kinds\n      namespace: {ns}\n"
        ));
        let objects: String = kinds
            .iter()
            .map(|(api_version, kind, _)| {
                let spec = match *kind {
                    "Role" => "rules: []\n",
                    "Service" => "spec:\n  ports: [{port: 80}]\n",
                    "LimitRange" => "spec:\n  limits: [{type: Container, max: {cpu: '2'}}]\n",
                    "ResourceQuota" => "spec:\n  hard: {pods: '10'}\n",
                    _ => "",
                };
                format!(
                    "---\napiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: probe\n{spec}"
                )
            })
            .collect();
        common::write(dir.path(), "kinds/objects.yaml", &objects);
        let out = output(tazuna(cluster, dir.path()).args(["apply", "--requests", requests]));
        assert!(out.status.success(), "{}", text(&out));
        let most = most_at_once(cluster, kinds.len(), |e| {
            e.verb == "list"
                && e.namespace.as_deref() == Some(ns.as_str())
                && kinds.iter().any(|(_, _, resource)| e.resource == *resource)
        });
        (namespace, most)
    };
    let (_together, together) = apply("64");
    assert!(
        together > 1,
        "the {} kinds were listed one after another",
        kinds.len()
    );
    let (_capped, capped) = apply("1");
    assert_eq!(capped, 1, "lists in flight at once with --requests 1");
}

/// `--requests` bounds the run, not each manifest: two manifests applied
/// together share it. The control run, with room to spare, shows the audit
/// log sees overlap when there is some.
#[test]
fn requests_in_flight_are_capped_across_the_manifests_of_a_run() {
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    if cluster.own().is_none() {
        eprintln!("skipped: a developer's cluster has no audit log to read");
        return;
    }
    let apply = |requests: &str| {
        let namespace = cluster.namespace("requests");
        let ns = namespace.name().to_owned();
        let dir = common::project(&format!(
            "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n    - name: pair{requests}\n      type: parallel\n      namespace: {ns}\n      parallel:\n        children:\n          - name: cap{requests}-a\n            type: manifests\n            path: ./cap-a\n          - name: cap{requests}-b\n            type: manifests\n            path: ./cap-b\n"
        ));
        for manifest in ["cap-a", "cap-b"] {
            let objects: String = (0..40)
                .map(|i| {
                    format!(
                        "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {manifest}-{i}\ndata:\n  i: \"{i}\"\n"
                    )
                })
                .collect();
            common::write(dir.path(), &format!("{manifest}/cms.yaml"), &objects);
        }
        let out = output(tazuna(cluster, dir.path()).args(["apply", "--requests", requests]));
        assert!(out.status.success(), "{}", text(&out));
        let most = most_patches_at_once(cluster, &ns);
        (namespace, most)
    };
    let (_capped, capped) = apply("2");
    assert!(
        capped <= 2,
        "{capped} PATCHes were in flight at once with --requests 2"
    );
    let (_free, free) = apply("64");
    assert!(
        free > 2,
        "with --requests 64 the audit log showed at most {free} in flight: it cannot tell the cap from its absence"
    );
}

/// A property of the prune verdict: for random files and states (objects
/// moved between manifests, dropped, manifests removed from the file or
/// pruning themselves, objects released by annotation and rendered again),
/// what `plan` says `apply --prune` deletes is exactly what it deletes,
/// checked with kubectl. The seed is printed; `TAZUNA_PROPERTY_SEED`
/// replays one.
#[test]
fn plan_predicts_exactly_what_apply_prune_deletes() {
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let namespace = cluster.namespace("prune-property");
    let ns = namespace.name();
    let seed: u64 = std::env::var("TAZUNA_PROPERTY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    eprintln!("TAZUNA_PROPERTY_SEED={seed}");
    let mut state = seed | 1;
    let mut draw = |below: u64| {
        // xorshift64: enough to spread the cases, and replayable.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % below
    };
    let dir = tempfile::tempdir().unwrap();
    let objects: Vec<String> = (0..8).map(|i| format!("p{i}")).collect();
    let live = |cluster: &TestCluster| -> std::collections::BTreeSet<String> {
        let list = kubectl_json(cluster, &["-n", ns, "get", "configmaps"]);
        list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|o| o["metadata"]["name"].as_str())
            .filter(|n| n.starts_with('p'))
            .map(str::to_owned)
            .collect()
    };
    for round in 0..6 {
        let mut manifests = vec![Vec::new(); 3];
        for object in &objects {
            // In one of three manifests, or (one time in four) in none.
            let at = draw(4) as usize;
            if at < 3 {
                manifests[at].push(object.clone());
            }
        }
        let mut file =
            String::from("apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n");
        for (i, names) in manifests.iter().enumerate() {
            // A manifest leaves the file one time in five.
            if draw(5) == 0 {
                continue;
            }
            let body: String = names
                .iter()
                .map(|n| format!("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {n}\ndata:\n  round: \"{round}\"\n"))
                .collect();
            std::fs::write(dir.path().join(format!("m{i}.yaml")), body).unwrap();
            let prune = if draw(3) == 0 {
                "      prune: true\n"
            } else {
                ""
            };
            file.push_str(&format!(
                "    - name: m{i}\n      type: manifests\n      path: m{i}.yaml\n      namespace: {ns}\n{prune}"
            ));
        }
        std::fs::write(dir.path().join("tazuna.yaml"), file).unwrap();
        // One live object in three is released by hand.
        for name in live(cluster) {
            if draw(3) == 0 {
                succeed(cluster.kubectl().args([
                    "-n",
                    ns,
                    "annotate",
                    "--overwrite",
                    "configmap",
                    &name,
                    "tazuna.dev/prune=disabled",
                ]));
            }
        }
        let plan = succeed(tazuna(cluster, dir.path()).args(["plan", "-o", "json"]));
        let report: Value = serde_json::from_slice(&plan.stdout).unwrap();
        let predicted: std::collections::BTreeSet<String> = report["changes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| {
                c["change"] == "delete"
                    && c["note"].as_str().is_some_and(|n| {
                        n.contains("deleted with `apply --prune`")
                            || n.contains("deleted by the next `apply`")
                    })
            })
            .filter_map(|c| c["object"].as_str()?.rsplit('/').next().map(str::to_owned))
            .collect();
        let before = live(cluster);
        let applied = output(tazuna(cluster, dir.path()).args(["apply", "--prune"]));
        assert!(
            applied.status.success(),
            "round {round}: {}",
            text(&applied)
        );
        let after = live(cluster);
        let deleted: std::collections::BTreeSet<String> =
            before.difference(&after).cloned().collect();
        assert_eq!(
            predicted,
            deleted,
            "round {round} (TAZUNA_PROPERTY_SEED={seed}): plan said {predicted:?}, apply deleted {deleted:?}\nplan: {report:#}\napply: {}",
            text(&applied)
        );
        let plan = output(tazuna(cluster, dir.path()).args(["plan", "--detailed-exitcode"]));
        assert_ne!(
            plan.status.code(),
            Some(1),
            "round {round}: {}",
            text(&plan)
        );
    }
}

/// The case the property test above found: a manifest removed from the file
/// whose object was released by annotation (`tazuna.dev/prune: disabled`)
/// after it was applied. Plan reads it live, as apply does, and says it is
/// kept; `apply --prune` keeps it (kubectl still finds it).
#[test]
fn plan_reads_a_removed_manifests_objects_live_as_apply_does() {
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let namespace = cluster.namespace("removed-released");
    let ns = namespace.name();
    let file = |manifests: &str| {
        format!(
            "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  stack: removed-released-{ns}\n  manifests:\n{manifests}"
        )
    };
    let entry = |name: &str| {
        format!(
            "    - name: {name}-{ns}\n      type: manifests\n      path: ./{name}\n      namespace: {ns}\n"
        )
    };
    let dir = common::project(&file(&format!("{}{}", entry("stays"), entry("goes"))));
    for (name, object) in [("stays", "kept-by-file"), ("goes", "released")] {
        common::write(
            dir.path(),
            &format!("{name}/cm.yaml"),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {object}\ndata:\n  k: v\n"
            ),
        );
    }
    succeed(tazuna(cluster, dir.path()).arg("apply"));
    succeed(cluster.kubectl().args([
        "-n",
        ns,
        "annotate",
        "configmap",
        "released",
        "tazuna.dev/prune=disabled",
    ]));
    common::write(dir.path(), "tazuna.yaml", &file(&entry("stays")));
    let plan = output(tazuna(cluster, dir.path()).arg("plan"));
    let said = text(&plan);
    assert!(
        said.lines()
            .any(|l| l.contains(&format!("ConfigMap {ns}/released"))
                && l.contains("kept: annotated `tazuna.dev/prune: disabled`")),
        "{said}"
    );
    let applied = output(tazuna(cluster, dir.path()).args(["apply", "--prune"]));
    assert!(applied.status.success(), "{}", text(&applied));
    assert!(exists(cluster, &["-n", ns, "configmap", "released"]));
    succeed(tazuna(cluster, dir.path()).args(["destroy", "--yes"]));
}

/// `ExistNonExist`, as docs/configuration.md shows it: a manifest's test
/// that an object exists passes once it does, and one that an object must
/// not exist fails the manifest while it does, naming the object.
#[test]
fn exist_non_exist_tests_pass_and_fail_as_documented() {
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let namespace = cluster.namespace("exist");
    let ns = namespace.name();
    let suffix = tazuna_tests::e2e::unique_suffix();
    let file = |should_exist: bool| {
        format!(
            r#"apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  manifests:
    - name: exist-{suffix}
      type: manifests
      path: ./objects
      namespace: {ns}
      tests:
        - type: ExistNonExist
          timeoutSeconds: 5
          existNonExist:
            resource: {{ apiVersion: v1, kind: ConfigMap }}
            namespace: {ns}
            name: marker
            shouldExist: {should_exist}
"#
        )
    };
    let dir = common::project(&file(true));
    common::write(
        dir.path(),
        "objects/marker.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: marker\ndata:\n  at: day-one\n",
    );
    let passed = output(tazuna(cluster, dir.path()).arg("apply"));
    assert!(passed.status.success(), "{}", text(&passed));
    assert!(
        text(&passed).contains("passed ExistNonExist"),
        "{}",
        text(&passed)
    );
    std::fs::write(dir.path().join("tazuna.yaml"), file(false)).unwrap();
    let failed = output(tazuna(cluster, dir.path()).arg("apply"));
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed));
    assert!(
        text(&failed).contains("ExistNonExist") && text(&failed).contains("marker"),
        "{}",
        text(&failed)
    );
}

/// A dry run the API server refuses (here: an object in a namespace being
/// deleted) does not hide the rest of the plan: every other change is
/// shown, the refusal is named per object with a hint, and plan exits 1.
#[test]
fn a_refused_dry_run_fails_plan_after_showing_every_other_change() {
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let namespace = cluster.namespace("plan-live");
    let live = namespace.name();
    let suffix = tazuna_tests::e2e::unique_suffix();
    let doomed = format!("plan-doomed-{suffix}");
    // A namespace held in Terminating by a finalizer nobody removes.
    for args in [
        vec!["create", "namespace", doomed.as_str()],
        vec![
            "patch",
            "namespace",
            doomed.as_str(),
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":["example.com/hold"]}}"#,
        ],
        vec!["delete", "namespace", doomed.as_str(), "--wait=false"],
    ] {
        succeed(cluster.kubectl().args(&args));
    }
    let dir = common::project(&format!(
        r#"apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  manifests:
    - name: live-{suffix}
      type: manifests
      path: ./live
      namespace: {live}
    - name: doomed-{suffix}
      type: manifests
      path: ./doomed
      namespace: {doomed}
"#
    ));
    let configmap = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n";
    common::write(dir.path(), "live/settings.yaml", configmap);
    common::write(dir.path(), "doomed/settings.yaml", configmap);
    let plan = output(tazuna(cluster, dir.path()).args(["plan", "--detailed-exitcode"]));
    // Let the namespace go before asserting anything.
    succeed(cluster.kubectl().args([
        "patch",
        "namespace",
        &doomed,
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]));
    assert_eq!(plan.status.code(), Some(1), "{}", text(&plan));
    let printed = String::from_utf8_lossy(&plan.stdout);
    assert!(
        printed.contains(&format!(
            "+ create live-{suffix}: v1 ConfigMap {live}/settings"
        )),
        "{}",
        text(&plan)
    );
    assert!(
        printed.contains(&format!(
            "? refused doomed-{suffix}: v1 ConfigMap {doomed}/settings"
        )) && printed.contains("being terminated")
            && printed.contains("hint:"),
        "{}",
        text(&plan)
    );
}
