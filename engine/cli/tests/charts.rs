//! End-to-end: charts as helm runs them, converging on day 400. Helm hooks
//! run by phase, weight and delete policy (checked in the API server's audit
//! log), chart tests are left out of an apply, and an apply that changes
//! nothing runs no hook. Everything runs the real pinned helm against a
//! harness cluster and is checked with kubectl.
//!
//! Tests skip with a printed reason when the harness binaries are missing,
//! unless `TAZUNA_E2E_REQUIRED` is set.

mod common;

use std::path::Path;
use std::process::Command;

use common::{output, succeed, text, write};
use tazuna_tests::assets::Tool;
use tazuna_tests::e2e::{self, TestCluster};

/// `tazuna` in `dir` on `cluster`, with the pinned helm.
fn tazuna(cluster: &TestCluster, dir: &Path, helm: &Path) -> Command {
    let mut command = common::tazuna_on(cluster, dir);
    command.env("TAZUNA_TOOL_HELM", helm);
    command
}

fn hook_job(name: &str, events: &str, weight: i32, policy: Option<&str>) -> String {
    let policy = policy
        .map(|p| format!("\n    helm.sh/hook-delete-policy: {p}"))
        .unwrap_or_default();
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  annotations:\n    helm.sh/hook: {events}\n    helm.sh/hook-weight: \"{weight}\"{policy}\nspec:\n  backoffLimit: 0\n  template:\n    metadata:\n      labels: {{release: {{{{ .Values.release | quote }}}}}}\n    spec:\n      restartPolicy: Never\n      containers:\n        - name: run\n          image: registry.k8s.io/pause:3.10\n"
    )
}

/// A chart with hooks in every stage an apply knows, a chart test and a
/// delete hook.
fn hooked_chart(dir: &Path) {
    write(
        dir,
        "chart/Chart.yaml",
        "apiVersion: v2\nname: hooked\nversion: 0.1.0\n",
    );
    write(dir, "chart/values.yaml", "release: one\n");
    write(
        dir,
        "chart/templates/app.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  release: {{ .Values.release | quote }}\n",
    );
    write(
        dir,
        "chart/templates/account.yaml",
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: migrator\n  annotations:\n    helm.sh/hook: pre-install,pre-upgrade\n    helm.sh/hook-weight: \"-5\"\n",
    );
    write(
        dir,
        "chart/templates/migrate.yaml",
        &hook_job(
            "migrate",
            "pre-install,pre-upgrade",
            0,
            Some("hook-succeeded"),
        ),
    );
    write(
        dir,
        "chart/templates/seed.yaml",
        &hook_job(
            "seed",
            "pre-install",
            3,
            Some("before-hook-creation,hook-succeeded"),
        ),
    );
    write(
        dir,
        "chart/templates/announce.yaml",
        &hook_job(
            "announce",
            "post-install,post-upgrade",
            0,
            Some("hook-succeeded"),
        ),
    );
    write(
        dir,
        "chart/templates/keep.yaml",
        &hook_job("keep", "post-install", 1, None),
    );
    // A Job, not a bare Pod: kwok completes the pods of Jobs only.
    write(
        dir,
        "chart/templates/tests/test.yaml",
        &hook_job(
            "hooked-test",
            "test",
            0,
            Some("before-hook-creation,hook-succeeded"),
        ),
    );
    write(
        dir,
        "chart/templates/cleanup.yaml",
        &hook_job("cleanup", "pre-delete", 0, None),
    );
    write(
        dir,
        "tazuna.yaml",
        "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n    - name: hooked\n      type: helm\n      path: ./chart\n      namespace: default\n      wait: {timeoutSeconds: 120}\n",
    );
}

/// `(verb, resource, name)` of Tazuna's writes since `from`, leases and its
/// own state left out.
fn writes_since(cluster: &TestCluster, from: usize) -> Vec<(String, String, String)> {
    cluster.requests_from("tazuna/").unwrap()[from..]
        .iter()
        .filter(|e| {
            e.is_write() && e.resource != "leases" && e.namespace.as_deref() != Some("tazuna")
        })
        .map(|e| {
            (
                e.verb.clone(),
                e.resource.clone(),
                e.name.clone().unwrap_or_default(),
            )
        })
        .collect()
}

fn requests(cluster: &TestCluster) -> usize {
    cluster.requests_from("tazuna/").map_or(0, |r| r.len())
}

/// Whether `expected` (`verb name`) comes in `writes` in this order, with
/// anything between.
fn in_order(writes: &[(String, String, String)], expected: &[&str]) -> bool {
    let mut rest = writes.iter();
    expected.iter().all(|step| {
        let (verb, name) = step.split_once(' ').unwrap();
        rest.any(|(v, _, n)| v == verb && n == name)
    })
}

#[test]
fn helm_hooks_run_by_phase_weight_and_delete_policy_and_an_unchanged_apply_runs_none() {
    let Some(helm) = e2e::tool(Tool::Helm) else {
        return;
    };
    let Some(cluster) = TestCluster::start("charts-hooks") else {
        return;
    };
    if cluster.requests_from("tazuna/").is_none() {
        assert!(!e2e::required(), "the harness cluster has no audit log");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    hooked_chart(dir);

    // Install: pre-install hooks by weight (the ServiceAccount at -5,
    // migrate at 0, seed at 3), then the release, then post-install hooks
    // (announce at 0, keep at 1), each deleted as its policy says.
    let from = requests(&cluster);
    let first = succeed(tazuna(&cluster, dir, &helm).arg("apply"));
    let said = text(&first);
    let writes = writes_since(&cluster, from);
    let install = [
        "delete migrator", // before-hook-creation, the default
        "patch migrator",
        "patch migrate",
        "delete seed", // before-hook-creation
        "patch seed",
        "delete seed",    // hook-succeeded, once the stage succeeded, last first
        "delete migrate", // hook-succeeded
        "patch app",
        "patch announce",
        "delete keep",
        "patch keep",
        "delete announce",
    ];
    assert!(in_order(&writes, &install), "{writes:#?}\n{said}");
    for never in ["hooked-test", "cleanup"] {
        assert!(
            !writes.iter().any(|(_, _, name)| name == never),
            "`{never}` was written: {writes:#?}"
        );
    }
    assert!(
        said.contains("batch/v1 Job default/hooked-test (helm hook left out: a chart test")
            && said
                .contains("batch/v1 Job default/cleanup (helm hook left out: a `pre-delete` hook"),
        "{said}"
    );
    // Through kubectl: the release is there, the deleted hooks are gone, the
    // hook without a policy stays.
    let jobs = common::kubectl_json(&cluster, &["-n", "default", "get", "jobs"]);
    let names: Vec<&str> = jobs["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["keep"], "{jobs}");
    assert!(common::exists(
        &cluster,
        &["-n", "default", "configmap", "app"]
    ));
    assert!(!common::exists(
        &cluster,
        &["-n", "default", "job", "hooked-test"]
    ));

    // Day 2, nothing changed: no hook runs, nothing is written, and plan,
    // drift and status agree.
    let from = requests(&cluster);
    let again = succeed(tazuna(&cluster, dir, &helm).arg("apply"));
    assert_eq!(writes_since(&cluster, from), [], "{}", text(&again));
    for args in [
        &["plan", "--detailed-exitcode"][..],
        &["state", "drift"],
        &["status"],
    ] {
        let out = output(tazuna(&cluster, dir, &helm).args(args));
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
    }

    // A dry run of the no-op says which hooks it leaves out.
    let dry = succeed(tazuna(&cluster, dir, &helm).args(["apply", "--dry-run"]));
    assert!(
        text(&dry).contains(
            "batch/v1 Job default/migrate (helm hook left out: nothing of the release changes"
        ),
        "{}",
        text(&dry)
    );

    // An upgrade: pre-upgrade hooks before the change, post-upgrade after;
    // install-only hooks do not run again. Plan lists the hooks it runs.
    write(dir, "chart/values.yaml", "release: two\n");
    let plan = output(tazuna(&cluster, dir, &helm).args(["plan", "--detailed-exitcode"]));
    assert_eq!(plan.status.code(), Some(2), "{}", text(&plan));
    assert!(
        text(&plan).contains(
            "» hook hooked: batch/v1 Job default/migrate (helm.sh/hook: pre-install,pre-upgrade)"
        ) && !text(&plan).contains("» hook hooked: batch/v1 Job default/seed"),
        "{}",
        text(&plan)
    );
    let from = requests(&cluster);
    let upgrade = succeed(tazuna(&cluster, dir, &helm).arg("apply"));
    let writes = writes_since(&cluster, from);
    let upgrade_order = [
        "delete migrator",
        "patch migrator",
        "patch migrate",
        "delete migrate",
        "patch app",
        "patch announce",
        "delete announce",
    ];
    assert!(
        in_order(&writes, &upgrade_order),
        "{writes:#?}\n{}",
        text(&upgrade)
    );
    for install_only in ["seed", "keep"] {
        assert!(
            !writes.iter().any(|(_, _, name)| name == install_only),
            "install hook `{install_only}` ran on an upgrade: {writes:#?}"
        );
    }
    let app = common::kubectl_json(&cluster, &["-n", "default", "get", "configmap", "app"]);
    assert_eq!(app["data"]["release"], "two", "{app}");
    let plan = output(tazuna(&cluster, dir, &helm).args(["plan", "--detailed-exitcode"]));
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));

    // `tazuna test` runs the chart test as `helm test` does: created, waited
    // for, deleted by its policy; the state does not record it.
    let from = requests(&cluster);
    let tested = succeed(tazuna(&cluster, dir, &helm).arg("test"));
    let writes = writes_since(&cluster, from);
    assert!(
        in_order(
            &writes,
            &[
                "delete hooked-test",
                "patch hooked-test",
                "delete hooked-test"
            ]
        ),
        "{writes:#?}\n{}",
        text(&tested)
    );
    assert!(
        text(&tested).contains("hooked: passed batch/v1 Job default/hooked-test"),
        "{}",
        text(&tested)
    );
    let plan = output(tazuna(&cluster, dir, &helm).args(["plan", "--detailed-exitcode"]));
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));

    // Destroy removes the release and the hook that stayed.
    let destroyed = succeed(tazuna(&cluster, dir, &helm).args(["destroy", "--yes"]));
    for object in [
        &["configmap", "app"][..],
        &["job", "keep"],
        &["serviceaccount", "migrator"],
    ] {
        let mut args = vec!["-n", "default"];
        args.extend_from_slice(object);
        assert!(
            !common::exists(&cluster, &args),
            "{object:?}: {}",
            text(&destroyed)
        );
    }
}

#[test]
fn a_chart_gated_on_a_crd_from_an_earlier_manifest_renders_it_on_the_first_plan_and_apply() {
    let Some(helm) = e2e::tool(Tool::Helm) else {
        return;
    };
    let Some(cluster) = TestCluster::start("charts-capabilities") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    write(
        dir,
        "crds/widgets.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema:\n          type: object\n          x-kubernetes-preserve-unknown-fields: true\n",
    );
    write(
        dir,
        "chart/Chart.yaml",
        "apiVersion: v2\nname: gated\nversion: 0.1.0\n",
    );
    write(
        dir,
        "chart/templates/widget.yaml",
        "{{- if .Capabilities.APIVersions.Has \"example.com/v1/Widget\" }}\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: gated\nspec:\n  size: 3\n{{- end }}\n",
    );
    write(
        dir,
        "chart/templates/app.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gated\ndata:\n  widgets: {{ .Capabilities.APIVersions.Has \"example.com/v1\" | quote }}\n",
    );
    write(
        dir,
        "tazuna.yaml",
        "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n    - name: crds\n      type: manifests\n      path: ./crds\n    - name: app\n      type: helm\n      path: ./chart\n      namespace: default\n      dependsOn: [crds]\n",
    );

    // On the bare cluster, the plan already shows the gated object.
    let plan = output(tazuna(&cluster, dir, &helm).args(["plan", "--detailed-exitcode"]));
    assert_eq!(plan.status.code(), Some(2), "{}", text(&plan));
    assert!(
        text(&plan).contains("example.com/v1 Widget default/gated"),
        "{}",
        text(&plan)
    );

    succeed(tazuna(&cluster, dir, &helm).arg("apply"));
    let widget = common::kubectl_json(
        &cluster,
        &["-n", "default", "get", "widgets.example.com", "gated"],
    );
    assert_eq!(widget["spec"]["size"], 3, "{widget}");
    let config = common::kubectl_json(&cluster, &["-n", "default", "get", "configmap", "gated"]);
    assert_eq!(config["data"]["widgets"], "true", "{config}");

    // The second apply renders the same: nothing to do.
    let plan = output(tazuna(&cluster, dir, &helm).args(["plan", "--detailed-exitcode"]));
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
}

#[test]
fn a_generated_secret_behind_lookup_keeps_one_value_over_three_applies_and_other_random_fields_are_named()
 {
    let Some(helm) = e2e::tool(Tool::Helm) else {
        return;
    };
    let Some(cluster) = TestCluster::start("charts-generated") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    write(
        dir,
        "chart/Chart.yaml",
        "apiVersion: v2\nname: grafana\nversion: 0.1.0\n",
    );
    // kube-prometheus-stack's Grafana pattern: the chart keeps the password
    // through `lookup` under `helm upgrade`; `helm template` has no cluster.
    write(
        dir,
        "chart/templates/secret.yaml",
        "{{- $existing := lookup \"v1\" \"Secret\" .Release.Namespace \"grafana\" }}\napiVersion: v1\nkind: Secret\nmetadata:\n  name: grafana\ntype: Opaque\ndata:\n  admin-user: {{ \"admin\" | b64enc | quote }}\n  admin-password: {{ if $existing }}{{ index $existing.data \"admin-password\" | quote }}{{ else }}{{ randAlphaNum 24 | b64enc | quote }}{{ end }}\n",
    );
    write(
        dir,
        "chart/templates/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: grafana-session\n  annotations:\n    checksum/secret: {{ randAlphaNum 8 | sha256sum | quote }}\ndata:\n  token: {{ uuidv4 | quote }}\n  fixed: \"yes\"\n",
    );
    write(
        dir,
        "tazuna.yaml",
        "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n    - name: grafana\n      type: helm\n      path: ./chart\n      namespace: default\n",
    );
    let password = |cluster: &TestCluster| {
        common::kubectl_json(cluster, &["-n", "default", "get", "secret", "grafana"])["data"]["admin-password"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let first = succeed(tazuna(&cluster, dir, &helm).arg("apply"));
    // One note names what was drawn anew: the Secret's key with the chart
    // value that would pin it, the ConfigMap's field, and the checksum
    // annotation folded in, not listed as a value to pin.
    assert_eq!(
        text(&first).matches("draws values anew").count(),
        1,
        "{}",
        text(&first)
    );
    assert!(
        text(&first).contains(
            "note: manifest `grafana` draws values anew on each render; the live values are kept: v1 Secret default/grafana `admin-password` (pin it with the chart value behind it, such as `adminPassword`); v1 ConfigMap default/grafana-session at `data.token`; the `checksum/…` annotation that follows them is kept too"
        ),
        "{}",
        text(&first)
    );
    let value = password(&cluster);
    let token = common::kubectl_json(
        &cluster,
        &["-n", "default", "get", "configmap", "grafana-session"],
    )["data"]["token"]
        .clone();
    for _ in 0..2 {
        let from = requests(&cluster);
        let again = succeed(tazuna(&cluster, dir, &helm).arg("apply"));
        assert_eq!(writes_since(&cluster, from), [], "{}", text(&again));
        assert_eq!(
            password(&cluster),
            value,
            "the password rotated: {}",
            text(&again)
        );
    }
    let config = common::kubectl_json(
        &cluster,
        &["-n", "default", "get", "configmap", "grafana-session"],
    );
    assert_eq!(config["data"]["token"], token, "{config}");
    for args in [&["plan", "--detailed-exitcode"][..], &["state", "drift"]] {
        let out = output(tazuna(&cluster, dir, &helm).args(args));
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
    }
    // A value the user sets is theirs, not generated: it is applied.
    write(
        dir,
        "chart/templates/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: grafana-session\ndata:\n  token: {{ uuidv4 | quote }}\n  fixed: \"no\"\n",
    );
    succeed(tazuna(&cluster, dir, &helm).arg("apply"));
    let config = common::kubectl_json(
        &cluster,
        &["-n", "default", "get", "configmap", "grafana-session"],
    );
    assert_eq!(config["data"]["fixed"], "no", "{config}");
    assert_eq!(config["data"]["token"], token, "{config}");
}

/// A real chart of `tests/data/charts`.
fn real_chart(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/charts")
        .join(name)
}

#[test]
fn cert_manager_and_ingress_nginx_with_default_values_converge_on_the_second_apply() {
    let Some(helm) = e2e::tool(Tool::Helm) else {
        return;
    };
    let Some(cluster) = TestCluster::start("charts-real") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    common::copy_dir(
        &real_chart("cert-manager"),
        &dir.join("charts/cert-manager"),
    );
    common::copy_dir(
        &real_chart("ingress-nginx"),
        &dir.join("charts/ingress-nginx"),
    );
    write(
        dir,
        "tazuna.yaml",
        "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n    - name: cert-manager\n      type: helm\n      path: ./charts/cert-manager\n      namespace: cert-manager\n      createNamespace: true\n    - name: ingress-nginx\n      type: helm\n      path: ./charts/ingress-nginx\n      namespace: ingress-nginx\n      createNamespace: true\n",
    );
    let first = succeed(tazuna(&cluster, dir, &helm).arg("apply"));
    // The admission Jobs ran as hooks and went by their policy.
    let said = text(&first);
    assert!(
        said.contains(
            "deleted batch/v1 Job ingress-nginx/ingress-nginx-admission-create (helm hook"
        ),
        "{said}"
    );
    for (namespace, deployment) in [
        ("cert-manager", "cert-manager"),
        ("cert-manager", "cert-manager-webhook"),
        ("ingress-nginx", "ingress-nginx-controller"),
    ] {
        let live = common::kubectl_json(
            &cluster,
            &["-n", namespace, "get", "deployment", deployment],
        );
        assert_eq!(live["status"]["availableReplicas"], 1, "{live}");
    }

    let from = requests(&cluster);
    let second = succeed(tazuna(&cluster, dir, &helm).arg("apply"));
    assert_eq!(writes_since(&cluster, from), [], "{}", text(&second));
    for args in [
        &["plan", "--detailed-exitcode"][..],
        &["state", "drift"],
        &["status"],
    ] {
        let out = output(tazuna(&cluster, dir, &helm).args(args));
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
    }
}

#[test]
fn a_chart_packaged_with_helm_package_renders_as_its_directory() {
    let Some(helm) = e2e::tool(Tool::Helm) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    common::copy_dir(&real_chart("hello"), &dir.join("hello"));
    succeed(
        Command::new(&helm)
            .current_dir(dir)
            .args(["package", "hello"]),
    );
    let archive = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|name| name.ends_with(".tgz"))
        .expect("helm package wrote an archive");
    let build = |path: &str| {
        write(
            dir,
            "tazuna.yaml",
            &format!(
                "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n    - name: hello\n      type: helm\n      path: ./{path}\n      namespace: hello\n"
            ),
        );
        let mut command = Command::new(env!("CARGO_BIN_EXE_tazuna"));
        command
            .current_dir(dir)
            .env("NO_COLOR", "1")
            .env("TAZUNA_TOOL_HELM", &helm)
            .arg("build");
        String::from_utf8(succeed(&mut command).stdout).unwrap()
    };
    let packaged = build(&archive);
    let directory = build("hello");
    assert!(packaged.contains("kind: Deployment"), "{packaged}");
    // Origins name the chart, not the archive, so both render alike.
    assert_eq!(packaged, directory);
}
