//! End-to-end: the hand-over to GitOps with Flux's real controllers.
//!
//! Tazuna installs Flux's CRDs and the root `OCIRepository` and
//! `Kustomization`, waits until Flux reports them Ready, and hands them over
//! (`handover: {to: flux}`); Flux alone reconciles the app layer from an OCI
//! artifact in the harness registry. Flux's source-controller and
//! kustomize-controller (pinned in versions.env) run as processes against the
//! harness API server: they stand in for their Deployments, which kwok cannot
//! run. Everything is checked through kubectl and the API server's audit log.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{kubectl_json, output, tazuna_on as tazuna, text, write};
use serde_json::Value;
use tazuna_tests::Tool;
use tazuna_tests::e2e::{TestCluster, unique_suffix};

fn run(cluster: &TestCluster, dir: &Path, args: &[&str]) -> Output {
    output(tazuna(cluster, dir).args(args))
}

/// The state record of manifest `name`, parsed.
fn state_of(cluster: &TestCluster, name: &str) -> Option<Value> {
    let list = kubectl_json(
        cluster,
        &[
            "-n",
            "tazuna",
            "get",
            "configmaps",
            "-l",
            "tazuna.dev/state=manifest",
        ],
    );
    list["items"].as_array()?.iter().find_map(|cm| {
        let state: Value = serde_json::from_str(cm["data"]["state.json"].as_str()?).ok()?;
        (state["manifest"] == name).then_some(state)
    })
}

/// Whether `kubectl wait` sees `condition` on `object` within `seconds`.
fn wait_for(cluster: &TestCluster, namespace: &str, object: &str, condition: &str) -> Output {
    output(cluster.kubectl().args([
        "wait",
        "-n",
        namespace,
        object,
        &format!("--for={condition}"),
        "--timeout=120s",
    ]))
}

/// Writes by Tazuna (its user agent) to `resources` since the audit log
/// held `from` of its requests; `None` on a developer's cluster.
fn writes_since(cluster: &TestCluster, from: usize, resources: &[&str]) -> Option<Vec<String>> {
    let all = cluster.requests_from("tazuna/")?;
    Some(
        all[from.min(all.len())..]
            .iter()
            .filter(|e| e.is_write() && resources.contains(&e.resource.as_str()))
            .map(|e| format!("{} {} {:?}", e.verb, e.resource, e.name))
            .collect(),
    )
}

/// Day one to day three of a hand-over to Flux: Tazuna installs Flux and
/// its root objects and waits until Flux reports them Ready; Flux alone
/// reconciles the app layer; Flux's own changes to the handed-over objects
/// survive three more applies, which make no write to them; plan and drift
/// stay quiet and status shows Flux's view; removing the hand-over manifest
/// from the file and pruning leaves Flux's objects in place.
#[test]
fn flux_takes_over_and_tazuna_never_fights_it() {
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let Some(tools) = tazuna_tests::e2e::tools(&[
        Tool::FluxSourceController,
        Tool::FluxKustomizeController,
        Tool::FluxHelmController,
        Tool::Oras,
        Tool::Helm,
    ]) else {
        return;
    };
    let Some(registry) = tazuna_tests::e2e::registry() else {
        return;
    };
    let namespace = cluster.namespace("gitops");
    let ns = namespace.name().to_owned();
    let suffix = unique_suffix();

    // The app layer, as a Flux OCI artifact: Flux alone applies it.
    let app = tempfile::tempdir().unwrap();
    write(
        app.path(),
        "settings.yaml",
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-settings\n  namespace: {ns}\ndata:\n  color: blue\n"
        ),
    );
    let url = tazuna_tests::flux::push_artifact(
        &tools.path(Tool::Oras),
        &format!("127.0.0.1:{}", registry.port()),
        &format!("gitops/app-{suffix}"),
        "v1",
        app.path(),
    )
    .unwrap();
    // A chart for helm-controller, pushed as an OCI chart by helm.
    let chart = tempfile::tempdir().unwrap();
    write(
        chart.path(),
        "web/Chart.yaml",
        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
    );
    write(chart.path(), "web/values.yaml", "color: blue\n");
    write(
        chart.path(),
        "web/templates/settings.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-settings\ndata:\n  color: {{ .Values.color | quote }}\n",
    );
    let helm = |args: &[&str]| {
        let out = output(
            Command::new(tools.path(Tool::Helm))
                .current_dir(chart.path())
                .env("HOME", chart.path())
                .args(args),
        );
        assert!(out.status.success(), "helm {args:?}: {}", text(&out));
    };
    helm(&["package", "web"]);
    let charts = format!("oci://127.0.0.1:{}/gitops-charts-{suffix}", registry.port());
    helm(&["push", "web-0.1.0.tgz", &charts, "--plain-http"]);

    // Day one's file: Flux (its CRDs; the controllers run beside the
    // cluster), then the root source and Kustomization and a HelmRelease,
    // handed over.
    let project = tempfile::tempdir().unwrap();
    let dir = project.path();
    let source = tools.path(Tool::FluxSourceController);
    let kustomize = tools.path(Tool::FluxKustomizeController);
    let helm_controller = tools.path(Tool::FluxHelmController);
    let crds: Vec<_> = tazuna_tests::Flux::crds(&source)
        .into_iter()
        .chain(tazuna_tests::Flux::crds(&kustomize))
        .chain(tazuna_tests::Flux::crds(&helm_controller))
        .collect();
    for file in &crds {
        std::fs::create_dir_all(dir.join("flux")).unwrap();
        std::fs::copy(file, dir.join("flux").join(file.file_name().unwrap())).unwrap();
    }
    write(
        dir,
        "root/source.yaml",
        &format!(
            "apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: root
  namespace: {ns}
spec:
  interval: 10m
  url: {url}
  insecure: true
  ref:
    tag: v1
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: root
  namespace: {ns}
spec:
  interval: 10m
  prune: true
  path: ./
  sourceRef:
    kind: OCIRepository
    name: root
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: web-chart
  namespace: {ns}
spec:
  interval: 10m
  url: {charts}/web
  insecure: true
  ref:
    tag: 0.1.0
  layerSelector:
    mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip
    operation: copy
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
  namespace: {ns}
spec:
  interval: 10m
  chartRef:
    kind: OCIRepository
    name: web-chart
  values:
    color: blue
"
        ),
    );
    let file = format!(
        "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  manifests:
    - name: flux-{suffix}
      type: manifests
      path: flux
    - name: flux-root-{suffix}
      type: manifests
      path: root
      dependsOn: [flux-{suffix}]
      wait:
        timeoutSeconds: 120
      handover:
        to: flux
        after: ready
"
    );
    write(dir, "tazuna.yaml", &file);

    // Day one: the apply waits for Flux's Ready, so the controllers start
    // once their CRDs are established, as their Deployment would.
    let mut apply = tazuna(cluster, dir);
    let day_one = apply
        .arg("apply")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !crds_established(cluster, crds.len()) {
        assert!(
            Instant::now() < deadline,
            "Flux's CRDs were not established"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    let _flux = tazuna_tests::Flux::start(
        &source,
        &kustomize,
        Some(&helm_controller),
        cluster.kubeconfig(),
        &ns,
    )
    .unwrap();
    let day_one = day_one.wait_with_output().unwrap();
    assert!(day_one.status.success(), "{}", text(&day_one));
    let ready = wait_for(cluster, &ns, "kustomization/root", "condition=Ready");
    assert!(ready.status.success(), "{}", text(&ready));
    // Flux alone applied the app layer; Tazuna records none of it.
    let settings = kubectl_json(
        cluster,
        &[
            "-n",
            &ns,
            "get",
            "configmap",
            "app-settings",
            "--show-managed-fields",
        ],
    );
    let managers: Vec<&str> = settings["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["manager"].as_str())
        .collect();
    assert_eq!(managers, ["kustomize-controller"], "{settings}");
    let root_state = state_of(cluster, &format!("flux-root-{suffix}")).expect("state recorded");
    let handed: Vec<&Value> = root_state["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["handover"]["to"] == "flux")
        .collect();
    assert_eq!(
        handed.len(),
        4,
        "every root object handed over: {root_state}"
    );
    // helm-controller installed the chart.
    let web = kubectl_json(cluster, &["-n", &ns, "get", "configmap", "web-settings"]);
    assert_eq!(web["data"]["color"], "blue", "{web}");
    assert!(!root_state.to_string().contains("app-settings"));

    // Flux's side changes the handed-over objects: `flux reconcile` asks
    // for a reconcile, and the interval is changed through Flux's own field
    // manager.
    patch(
        cluster,
        &ns,
        "kustomization/root",
        Some("flux"),
        r#"{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":"day-two"}},"spec":{"interval":"7m"}}"#,
    );
    // And the release's values change on Flux's side; helm-controller
    // upgrades the release.
    patch(
        cluster,
        &ns,
        "helmrelease/web",
        Some("flux"),
        r#"{"spec":{"values":{"color":"red"}}}"#,
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let web = kubectl_json(cluster, &["-n", &ns, "get", "configmap", "web-settings"]);
        if web["data"]["color"] == "red" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "helm-controller did not upgrade: {web}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }

    // Days two to four: three applies write nothing to what Flux owns, and
    // Flux's changes survive.
    let before = cluster.requests_from("tazuna/").map(|r| r.len());
    for day in 2..=4 {
        let again = run(cluster, dir, &["apply"]);
        assert!(again.status.success(), "day {day}: {}", text(&again));
        assert!(
            text(&again).contains("handed over to Flux"),
            "day {day}: {}",
            text(&again)
        );
    }
    no_writes_to_flux_objects(cluster, before);
    let release = kubectl_json(cluster, &["-n", &ns, "get", "helmrelease", "web"]);
    assert_eq!(release["spec"]["values"]["color"], "red", "{release}");
    let root = kubectl_json(cluster, &["-n", &ns, "get", "kustomization", "root"]);
    assert_eq!(root["spec"]["interval"], "7m", "{root}");
    assert_eq!(
        root["metadata"]["annotations"]["reconcile.fluxcd.io/requestedAt"],
        "day-two"
    );

    // Day 400: the file moves Flux to a new version (its CRDs change);
    // Tazuna upgrades Flux itself and touches nothing Flux owns.
    for file in &crds {
        let path = dir.join("flux").join(file.file_name().unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        let upgraded = text.replacen(
            "metadata:\n",
            "metadata:\n  labels:\n    app.kubernetes.io/version: next\n",
            1,
        );
        assert_ne!(text, upgraded, "{}", path.display());
        std::fs::write(&path, upgraded).unwrap();
    }
    let before = cluster.requests_from("tazuna/").map(|r| r.len());
    let upgrade = run(cluster, dir, &["apply"]);
    assert!(upgrade.status.success(), "{}", text(&upgrade));
    let crd = kubectl_json(
        cluster,
        &["get", "crd", "kustomizations.kustomize.toolkit.fluxcd.io"],
    );
    assert_eq!(
        crd["metadata"]["labels"]["app.kubernetes.io/version"],
        "next",
        "{}",
        text(&upgrade)
    );
    no_writes_to_flux_objects(cluster, before);
    let ready = wait_for(cluster, &ns, "kustomization/root", "condition=Ready");
    assert!(ready.status.success(), "{}", text(&ready));

    // The file changes what was handed over: Flux's word stands, so plan,
    // drift and state diff stay quiet, and say what was handed over.
    let root_file = dir.join("root/source.yaml");
    let changed = std::fs::read_to_string(&root_file)
        .unwrap()
        .replace("interval: 10m", "interval: 15m");
    std::fs::write(&root_file, changed).unwrap();
    let diff = run(cluster, dir, &["state", "diff", "--detailed-exitcode"]);
    assert_eq!(diff.status.code(), Some(0), "{}", text(&diff));
    let plan = run(cluster, dir, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
    assert!(
        text(&plan).contains("handed over to Flux") && text(&plan).contains("Kustomization"),
        "{}",
        text(&plan)
    );
    let drift = run(cluster, dir, &["state", "drift"]);
    assert_eq!(drift.status.code(), Some(0), "{}", text(&drift));
    // Status shows Flux's own view of what it took over.
    let status = run(cluster, dir, &["status"]);
    assert!(status.status.success(), "{}", text(&status));
    assert!(
        text(&status).contains("Flux: Ready=True"),
        "{}",
        text(&status)
    );

    // A misconfiguration: the file also sets a field Flux applies. It is
    // reported with Flux's manager named, and not forced: Flux's value stays.
    write(
        dir,
        "clash/settings.yaml",
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-settings\n  namespace: {ns}\ndata:\n  color: green\n"
        ),
    );
    let clashing =
        format!("{file}    - name: clash-{suffix}\n      type: manifests\n      path: clash\n");
    write(dir, "tazuna.yaml", &clashing);
    let plan = run(cluster, dir, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.status.code(), Some(2), "{}", text(&plan));
    assert!(
        text(&plan).contains("! conflict") && text(&plan).contains("kustomize-controller"),
        "{}",
        text(&plan)
    );
    let clash = run(cluster, dir, &["apply"]);
    assert_eq!(clash.status.code(), Some(1), "{}", text(&clash));
    assert!(
        text(&clash).contains("`kustomize-controller` (Flux applies a Kustomization's files)"),
        "{}",
        text(&clash)
    );
    let settings = kubectl_json(cluster, &["-n", &ns, "get", "configmap", "app-settings"]);
    assert_eq!(settings["data"]["color"], "blue", "{settings}");
    write(dir, "tazuna.yaml", &file);

    // The user removes the hand-over manifest from the file and prunes:
    // Flux's objects stay, and the run says why.
    let without_root = file
        .split(&format!("    - name: flux-root-{suffix}"))
        .next()
        .unwrap()
        .to_owned();
    write(dir, "tazuna.yaml", &without_root);
    // The source, named, goes; the Kustomization stays.
    let named_source = format!("OCIRepository/{ns}/root");
    let pruned = run(
        cluster,
        dir,
        &["apply", "--prune", "--delete-handed-over", &named_source],
    );
    assert!(pruned.status.success(), "{}", text(&pruned));
    assert!(
        text(&pruned).contains("handed over to Flux"),
        "{}",
        text(&pruned)
    );
    let source = output(
        cluster
            .kubectl()
            .args(["-n", &ns, "get", "ocirepository/root"]),
    );
    assert!(
        String::from_utf8_lossy(&source.stderr).contains("NotFound"),
        "the named source was kept: {}",
        text(&pruned)
    );
    for object in ["kustomization/root", "configmap/app-settings"] {
        let kept = output(cluster.kubectl().args(["-n", &ns, "get", object]));
        assert!(
            kept.status.success(),
            "{object} was deleted: {}",
            text(&pruned)
        );
    }
    assert!(state_of(cluster, &format!("flux-root-{suffix}")).is_none());
}

/// Whether all `count` of Flux's CRDs are established.
fn crds_established(cluster: &TestCluster, count: usize) -> bool {
    let out = output(cluster.kubectl().args([
        "get",
        "crd",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type==\"Established\")].status}{\"\\n\"}{end}",
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    let flux: Vec<&str> = text.lines().filter(|l| l.contains("fluxcd.io=")).collect();
    flux.len() == count && flux.iter().all(|l| l.ends_with("=True"))
}

/// The hand-over to Argo CD. Argo CD's controller does not build from the
/// module proxy here (its gitops-engine module fails on the Go versions
/// served), so the test stands in for it: with Argo CD's real CRDs, it
/// writes the root `Application`'s status as the application controller
/// does (a merge patch of `status` by `argocd-application-controller`;
/// the CRD has no status subresource) and, as Argo CD managing itself
/// (app of apps), applies the Application server-side as
/// `argocd-controller` with its tracking annotation. Tazuna waits for
/// Synced and Healthy, hands over, and then neither writes the Application
/// nor reports Argo CD's changes.
#[test]
fn argo_cd_takes_over_the_root_application() {
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let namespace = cluster.namespace("argo-handover");
    let ns = namespace.name().to_owned();
    let suffix = unique_suffix();
    let project = tempfile::tempdir().unwrap();
    let dir = project.path();
    std::fs::create_dir_all(dir.join("argo-crds")).unwrap();
    std::fs::copy(
        common::root().join("examples/quickstart/argo-cd/crds/application-crd.yaml"),
        dir.join("argo-crds/application-crd.yaml"),
    )
    .unwrap();
    write(
        dir,
        "root/application.yaml",
        &format!(
            "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: root
  namespace: {ns}
spec:
  project: default
  source:
    repoURL: https://git.example.com/platform/apps.git
    targetRevision: v1
    path: apps
  destination:
    server: https://kubernetes.default.svc
    namespace: apps
"
        ),
    );
    write(
        dir,
        "tazuna.yaml",
        &format!(
            "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  manifests:
    - name: argo-crds-{suffix}
      type: manifests
      path: argo-crds
    - name: argo-root-{suffix}
      type: manifests
      path: root
      dependsOn: [argo-crds-{suffix}]
      tags: [root]
      wait:
        timeoutSeconds: 60
      handover:
        to: argocd
"
        ),
    );

    // Day one: Tazuna waits for Synced and Healthy, which the stand-in
    // writes once the Application exists.
    let day_one = tazuna(cluster, dir)
        .arg("apply")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let written = output(cluster.kubectl().args([
            "-n",
            &ns,
            "patch",
            "application",
            "root",
            "--type=merge",
            "--field-manager=argocd-application-controller",
            "-p",
            r#"{"status":{"sync":{"status":"Synced","revision":"4f1c2a9"},"health":{"status":"Healthy"},"operationState":{"operation":{"sync":{"revision":"4f1c2a9"}},"phase":"Succeeded","message":"successfully synced (all tasks run)","startedAt":"2026-12-07T00:00:00Z","finishedAt":"2026-12-07T00:00:02Z"}}}"#,
        ]));
        if written.status.success() {
            break;
        }
        // Not there yet is the only reason to try again.
        assert!(
            (text(&written).contains("NotFound")
                || text(&written).contains("doesn't have a resource type"))
                && Instant::now() < deadline,
            "{}",
            text(&written)
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    let day_one = day_one.wait_with_output().unwrap();
    assert!(day_one.status.success(), "{}", text(&day_one));
    let state = state_of(cluster, &format!("argo-root-{suffix}")).expect("state recorded");
    assert_eq!(state["objects"][0]["handover"]["to"], "argocd", "{state}");

    // Argo CD manages its root Application itself from day two: it applies
    // a new revision and its tracking annotation server-side.
    write(
        dir,
        "argo-self.yaml",
        &format!(
            "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: root
  namespace: {ns}
  annotations:
    argocd.argoproj.io/tracking-id: root:argoproj.io/Application:{ns}/root
spec:
  project: default
  source:
    repoURL: https://git.example.com/platform/apps.git
    targetRevision: v2
    path: apps
  destination:
    server: https://kubernetes.default.svc
    namespace: apps
"
        ),
    );
    let self_managed = output(cluster.kubectl().args([
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=argocd-controller",
        "-f",
        dir.join("argo-self.yaml").to_str().unwrap(),
    ]));
    assert!(self_managed.status.success(), "{}", text(&self_managed));

    let before = cluster.requests_from("tazuna/").map(|r| r.len());
    for day in 2..=4 {
        let again = run(cluster, dir, &["apply"]);
        assert!(again.status.success(), "day {day}: {}", text(&again));
    }
    if let Some(before) = before {
        let written = writes_since(cluster, before, &["applications"]).unwrap();
        assert_eq!(
            written,
            Vec::<String>::new(),
            "writes to the handed-over Application"
        );
    }
    let root = kubectl_json(cluster, &["-n", &ns, "get", "application", "root"]);
    assert_eq!(root["spec"]["source"]["targetRevision"], "v2", "{root}");
    let plan = run(cluster, dir, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
    let drift = run(cluster, dir, &["state", "drift"]);
    assert_eq!(drift.status.code(), Some(0), "{}", text(&drift));
    let status = run(cluster, dir, &["status"]);
    assert!(status.status.success(), "{}", text(&status));
    assert!(
        text(&status).contains("handed over to Argo CD")
            && text(&status).contains("Argo CD: sync Synced, health Healthy at `4f1c2a9`"),
        "{}",
        text(&status)
    );

    // Destroy of the root layer leaves the handed-over Application, and
    // says what it leaves and why.
    let destroy = run(cluster, dir, &["destroy", "-t", "root", "--yes"]);
    assert!(destroy.status.success(), "{}", text(&destroy));
    assert!(
        text(&destroy).contains("handed over to Argo CD"),
        "{}",
        text(&destroy)
    );
    let kept = output(
        cluster
            .kubectl()
            .args(["-n", &ns, "get", "application", "root"]),
    );
    assert!(kept.status.success(), "{}", text(&destroy));
    assert!(state_of(cluster, &format!("argo-root-{suffix}")).is_none());
}

/// Object policies a user of Flux or Argo CD expects: a Deployment whose
/// replicas an autoscaler owns (`tazuna.dev/ignore: /spec/replicas`) and a
/// ConfigMap seeded once (`tazuna.dev/apply: create-only`). The autoscaler's
/// and the team's changes survive later applies, plan and drift stay quiet,
/// and a change of the ignored field in the file is not sent either.
#[test]
fn ignored_fields_and_create_only_objects_are_left_to_others() {
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let namespace = cluster.namespace("policies");
    let ns = namespace.name().to_owned();
    let suffix = unique_suffix();
    let project = tempfile::tempdir().unwrap();
    let dir = project.path();
    let objects = |replicas: u32| {
        format!(
            "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: {ns}
  annotations:
    tazuna.dev/ignore: /spec/replicas
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
        - name: app
          image: registry.k8s.io/pause:3.10
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: seeded
  namespace: {ns}
  annotations:
    tazuna.dev/apply: create-only
data:
  owner: platform
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: replaced
  namespace: {ns}
  annotations:
    tazuna.dev/apply: replace
data:
  mode: strict
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: tuned
  namespace: {ns}
  annotations:
    tazuna.dev/ignore: manager:tuner
data:
  level: \"1\"
"
        )
    };
    write(dir, "app/objects.yaml", &objects(2));
    write(
        dir,
        "tazuna.yaml",
        &format!(
            "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  manifests:
    - name: policies-{suffix}
      type: manifests
      path: app
      wait:
        timeoutSeconds: 120
"
        ),
    );
    let first = run(cluster, dir, &["apply"]);
    assert!(first.status.success(), "{}", text(&first));
    let web = kubectl_json(cluster, &["-n", &ns, "get", "deployment", "web"]);
    assert_eq!(web["spec"]["replicas"], 2, "created as the file says");

    // The autoscaler scales, the team edits the seeded ConfigMap.
    let scale =
        output(
            cluster
                .kubectl()
                .args(["-n", &ns, "scale", "deployment", "web", "--replicas=3"]),
        );
    assert!(scale.status.success(), "{}", text(&scale));
    patch(
        cluster,
        &ns,
        "configmap/seeded",
        None,
        r#"{"data":{"owner":"team-a"}}"#,
    );
    // Someone changes the replaced ConfigMap's field and adds one.
    patch(
        cluster,
        &ns,
        "configmap/replaced",
        None,
        r#"{"metadata":{"finalizers":["example.com/protect"]},"data":{"mode":"lax","extra":"added"}}"#,
    );
    // A tuning controller sets a field whose manager the file leaves alone.
    patch(
        cluster,
        &ns,
        "configmap/tuned",
        Some("tuner"),
        r#"{"data":{"level":"5"}}"#,
    );
    let drift = run(cluster, dir, &["state", "drift"]);
    assert_eq!(drift.status.code(), Some(2), "{}", text(&drift));
    assert!(text(&drift).contains("replaced"), "{}", text(&drift));
    // Replaced whole: the changed field is put back and the added one goes.
    let replaced = run(cluster, dir, &["apply"]);
    assert!(replaced.status.success(), "{}", text(&replaced));
    let data = kubectl_json(cluster, &["-n", &ns, "get", "configmap", "replaced"]);
    assert_eq!(
        data["data"],
        serde_json::json!({"mode": "strict"}),
        "{}",
        text(&replaced)
    );
    // A controller's finalizer is never dropped by a replace.
    assert_eq!(
        data["metadata"]["finalizers"],
        serde_json::json!(["example.com/protect"]),
        "{data}"
    );
    let release = output(cluster.kubectl().args([
        "-n",
        &ns,
        "patch",
        "configmap",
        "replaced",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]));
    assert!(release.status.success(), "{}", text(&release));
    for args in [
        &["plan", "--detailed-exitcode"][..],
        &["state", "drift"][..],
    ] {
        let quiet = run(cluster, dir, args);
        assert_eq!(quiet.status.code(), Some(0), "{args:?}: {}", text(&quiet));
    }
    let again = run(cluster, dir, &["apply"]);
    assert!(again.status.success(), "{}", text(&again));
    // The file changes the ignored field: still not sent.
    write(dir, "app/objects.yaml", &objects(5));
    let plan = run(cluster, dir, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
    let changed = run(cluster, dir, &["apply"]);
    assert!(changed.status.success(), "{}", text(&changed));
    let web = kubectl_json(cluster, &["-n", &ns, "get", "deployment", "web"]);
    assert_eq!(web["spec"]["replicas"], 3, "{}", text(&changed));
    let tuned = kubectl_json(cluster, &["-n", &ns, "get", "configmap", "tuned"]);
    assert_eq!(tuned["data"]["level"], "5", "{}", text(&changed));
    let seeded = kubectl_json(cluster, &["-n", &ns, "get", "configmap", "seeded"]);
    assert_eq!(seeded["data"]["owner"], "team-a", "{}", text(&changed));

    // A pointer that is not one is refused, naming the object.
    write(
        dir,
        "app/objects.yaml",
        &objects(5).replace("/spec/replicas", "spec.replicas"),
    );
    let refused = run(cluster, dir, &["apply"]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        text(&refused).contains("annotation `tazuna.dev/ignore` is `spec.replicas`")
            && text(&refused).contains("JSON pointers"),
        "{}",
        text(&refused)
    );
}

/// `kubectl patch --type=merge` of `object` (`kind/name`) in `namespace`,
/// as `manager` when given (a controller's or a person's field manager).
fn patch(cluster: &TestCluster, namespace: &str, object: &str, manager: Option<&str>, json: &str) {
    let mut args = vec!["-n", namespace, "patch", object, "--type=merge"];
    let manager = manager.map(|m| format!("--field-manager={m}"));
    args.extend(manager.as_deref());
    args.extend(["-p", json]);
    let patched = output(cluster.kubectl().args(&args));
    assert!(patched.status.success(), "{}", text(&patched));
}

/// That the audit log holds no write by Tazuna to Flux's handed-over kinds
/// since it held `before` of its requests (`None`: a developer's cluster,
/// which has no audit log).
fn no_writes_to_flux_objects(cluster: &TestCluster, before: Option<usize>) {
    if let Some(before) = before {
        let written = writes_since(
            cluster,
            before,
            &["kustomizations", "ocirepositories", "helmreleases"],
        )
        .unwrap();
        assert_eq!(
            written,
            Vec::<String>::new(),
            "writes to handed-over objects"
        );
    }
}
