//! End-to-end: one file, three harness clusters (staging, production, dr).
//!
//! The file declares each cluster's kubeconfig, context, labels and values;
//! one command applies them in the waves of `spec.rollout`, and every
//! cluster is checked through kubectl on its own API server: each holds
//! exactly its own rendering (replicas from its values through a helm
//! chart, a manifest only production gets through Go Tazuna's
//! `{{ if eq .Environment "production" }}`). A failure in the first wave is
//! shown to reach no later cluster through their audit logs, and a cluster
//! pointed at another's context is refused by the identity binding while the
//! rest of its wave proceeds as the rollout says.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{output, succeed, text, write};
use serde_json::Value;
use tazuna_tests::Tool;
use tazuna_tests::e2e::{self, TestCluster};

/// The real `tazuna` in `dir` with none of the user's kube or Tazuna
/// environment: every cluster is reached through the file.
fn tazuna(dir: &Path) -> Command {
    let helm = e2e::tool(Tool::Helm).expect("checked by the test");
    let mut command = Command::new(env!("CARGO_BIN_EXE_tazuna"));
    command
        .current_dir(dir)
        .env("TAZUNA_TOOL_HELM", helm)
        .env("NO_COLOR", "1")
        .env("KUBECONFIG", dir.join("no-such-kubeconfig"))
        .env_remove("TAZUNA_FILE")
        .env_remove("TAZUNA_ENVIRONMENT")
        .env_remove("TAZUNA_LOG");
    command
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The fleet document a fleet verb prints last with `-o json`.
fn fleet_json(out: &Output) -> Value {
    let text = stdout(out);
    let last = text.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {}", self::text(out)))
}

/// `cluster → result` from a fleet document.
fn results(fleet: &Value) -> Vec<(String, String)> {
    fleet["clusters"]
        .as_array()
        .expect("clusters")
        .iter()
        .map(|c| {
            (
                c["cluster"].as_str().unwrap().to_owned(),
                c["result"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

fn jsonpath(cluster: &TestCluster, args: &[&str], path: &str) -> String {
    let out = succeed(
        cluster
            .kubectl()
            .args(args)
            .arg(format!("-o=jsonpath={path}")),
    );
    stdout(&out)
}

fn exists(cluster: &TestCluster, args: &[&str]) -> bool {
    output(cluster.kubectl().args(args)).status.success()
}

const CHART: &str = "apiVersion: v2\nname: web\nversion: 0.1.0\n";

const TEMPLATE: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: { app: web }
  template:
    metadata:
      labels: { app: web }
    spec:
      containers:
        - name: web
          image: registry.example/web:1
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-settings
data:
  region: {{ .Values.region | quote }}
"#;

const PRODUCTION_ONLY: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: production-only\ndata:\n  audited: \"yes\"\n";

/// The file, with each environment's kubeconfig and context, and `extra`
/// manifests for staging only.
fn file(clusters: [(&str, &TestCluster); 3], staging_extra: &str) -> String {
    let values = |name: &str| match name {
        "staging" => "{ replicas: 1, region: tokyo }",
        "production" => "{ replicas: 3, region: tokyo }",
        _ => "{ replicas: 2, region: osaka }",
    };
    let tier = |name: &str| if name == "staging" { "pre" } else { "prod" };
    let mut environments = String::new();
    for (name, cluster) in clusters {
        environments.push_str(&format!(
            "    {name}:\n      kubeconfig: {}\n      context: {}\n      labels: {{ tier: {} }}\n      values: {}\n",
            cluster.kubeconfig().display(),
            cluster.context(),
            tier(name),
            values(name)
        ));
    }
    format!(
        r#"apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  environments:
{environments}  rollout:
    maxParallel: 2
    waves:
      - name: canary
        environments: [staging]
      - name: prod
        selector: tier=prod
  manifests:
    - name: web
      type: helm
      path: ./chart
      namespace: web
      createNamespace: true
      helm:
        environmentValues: true
{{{{- if eq .Environment "production" }}}}
    - name: production-only
      type: manifests
      path: ./production-only
      namespace: web
      dependsOn: [web]
{{{{- end }}}}
{{{{- if eq .Environment "staging" }}}}{staging_extra}{{{{- end }}}}
"#
    )
}

#[test]
fn three_clusters_from_one_file_apply_in_waves_and_a_failure_or_a_wrong_cluster_stops_what_the_rollout_says()
 {
    if e2e::tool(Tool::Helm).is_none() {
        return;
    }
    let Some(staging) = TestCluster::start("fleet-staging") else {
        return;
    };
    if staging.is_external() {
        eprintln!("SKIPPED: needs three harness clusters of its own");
        return;
    }
    let Some(production) = TestCluster::start("fleet-production") else {
        return;
    };
    let Some(dr) = TestCluster::start("fleet-dr") else {
        return;
    };
    let project = tempfile::tempdir().unwrap();
    let dir = project.path();
    write(dir, "chart/Chart.yaml", CHART);
    write(dir, "chart/templates/web.yaml", TEMPLATE);
    write(dir, "production-only/cm.yaml", PRODUCTION_ONLY);
    let clusters = [
        ("staging", &staging),
        ("production", &production),
        ("dr", &dr),
    ];
    write(dir, "tazuna.yaml", &file(clusters, ""));

    // The clusters and their waves, as a CI matrix reads them.
    let listed = succeed(tazuna(dir).args(["clusters", "-o", "json"]));
    let listed: Value = serde_json::from_str(&stdout(&listed)).unwrap();
    let waves: Vec<(String, u64)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["cluster"].as_str().unwrap().to_owned(),
                c["wave"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        waves,
        [
            ("staging".to_owned(), 1),
            ("dr".to_owned(), 2),
            ("production".to_owned(), 2)
        ]
    );

    // One command, three clusters, in waves.
    let applied = output(tazuna(dir).args(["apply", "--all-clusters"]));
    assert!(applied.status.success(), "{}", text(&applied));
    let table = stdout(&applied);
    for row in [
        "staging     staging      canary  ok",
        "production  production   prod    ok",
        "dr          dr           prod    ok",
    ] {
        assert!(table.contains(row), "no `{row}` in the table:\n{table}");
    }
    for (name, cluster, replicas, region) in [
        ("staging", &staging, "1", "tokyo"),
        ("production", &production, "3", "tokyo"),
        ("dr", &dr, "2", "osaka"),
    ] {
        assert_eq!(
            jsonpath(
                cluster,
                &["get", "deployment", "web", "-n", "web"],
                "{.spec.replicas}"
            ),
            replicas,
            "{name}"
        );
        assert_eq!(
            jsonpath(
                cluster,
                &["get", "configmap", "web-settings", "-n", "web"],
                "{.data.region}"
            ),
            region,
            "{name}"
        );
        assert_eq!(
            exists(
                cluster,
                &["get", "configmap", "production-only", "-n", "web"]
            ),
            name == "production",
            "only production gets `production-only` ({name})"
        );
    }
    // The canary wave finished before the next one wrote anything.
    let writes = |cluster: &TestCluster| -> Vec<String> {
        cluster
            .requests_from("tazuna/")
            .unwrap()
            .into_iter()
            .filter(|r| r.is_write())
            .map(|r| r.at)
            .collect()
    };
    let last_staging = writes(&staging).into_iter().max().unwrap();
    for later in [&production, &dr] {
        let first = writes(later).into_iter().min().unwrap();
        assert!(
            last_staging < first,
            "wave 2 wrote at {first}, before wave 1's last write at {last_staging}"
        );
    }

    // Converged: every verb agrees on every cluster, exit 0.
    for verb in [
        &["plan", "--all-clusters", "--detailed-exitcode"][..],
        &["state", "drift", "--all-clusters"],
        &["status", "--all-clusters"],
    ] {
        let out = output(tazuna(dir).args(verb));
        assert!(out.status.success(), "{verb:?}: {}", text(&out));
    }
    let planned = output(tazuna(dir).args(["plan", "--all-clusters", "-o", "json"]));
    let planned = fleet_json(&planned);
    // Verbs that only read run every cluster at once, in the file's order.
    assert_eq!(
        results(&planned),
        pairs(&[("dr", "ok"), ("production", "ok"), ("staging", "ok")])
    );

    // What staging and production get differs exactly as the file intends,
    // in the renderings and live.
    for live in [false, true] {
        let mut args = vec!["compare", "staging", "production", "-o", "json"];
        if live {
            args.push("--live");
        }
        let compared = succeed(tazuna(dir).args(&args));
        let compared: Value = serde_json::from_str(&stdout(&compared)).unwrap();
        let objects = |field: &str| -> Vec<String> {
            compared[field]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| {
                    v.as_str()
                        .map_or_else(|| v["object"].as_str().unwrap().to_owned(), str::to_owned)
                })
                .collect()
        };
        assert_eq!(objects("onlyInFirst"), Vec::<String>::new(), "live: {live}");
        assert_eq!(
            objects("onlyInSecond"),
            ["production-only: v1 ConfigMap web/production-only"],
            "live: {live}"
        );
        assert_eq!(
            objects("different"),
            ["web: apps/v1 Deployment web/web"],
            "live: {live}"
        );
        let diff = compared["different"][0]["diff"].as_str().unwrap();
        assert!(
            diff.contains("-   replicas: 1") && diff.contains("+   replicas: 3"),
            "live: {live}: {diff}"
        );
        assert_eq!(compared["same"], 1, "the settings ConfigMap (live: {live})");
    }
    let differ = output(tazuna(dir).args(["diff-env", "staging", "dr", "--detailed-exitcode"]));
    assert_eq!(differ.status.code(), Some(2), "{}", text(&differ));
    assert!(
        stdout(&differ).contains("+   region: osaka"),
        "{}",
        text(&differ)
    );

    // A failure injected in staging: production and dr are not contacted at all.
    let before: Vec<usize> = [&production, &dr]
        .iter()
        .map(|c| c.requests_from("tazuna/").unwrap().len())
        .collect();
    write(
        dir,
        "tazuna.yaml",
        &file(
            clusters,
            "\n    - name: broken\n      type: manifests\n      path: ./no-such-directory",
        ),
    );
    let failed = output(tazuna(dir).args(["apply", "--all-clusters", "-o", "json"]));
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed));
    assert_eq!(
        results(&fleet_json(&failed)),
        pairs(&[
            ("staging", "failed"),
            ("dr", "not run"),
            ("production", "not run")
        ])
    );
    let after: Vec<usize> = [&production, &dr]
        .iter()
        .map(|c| c.requests_from("tazuna/").unwrap().len())
        .collect();
    assert_eq!(before, after, "production and dr received requests");

    // Production pointed at staging's cluster: refused by the binding that the
    // first apply recorded, before any write; dr, in the same wave, proceeds.
    write(dir, "tazuna.yaml", &file(clusters, ""));
    let wrong = std::fs::read_to_string(dir.join("tazuna.yaml"))
        .unwrap()
        .replacen(
            &format!(
                "kubeconfig: {}\n      context: {}\n      labels: {{ tier: prod }}\n      values: {{ replicas: 3",
                production.kubeconfig().display(),
                production.context()
            ),
            &format!(
                "kubeconfig: {}\n      context: {}\n      labels: {{ tier: prod }}\n      values: {{ replicas: 3",
                staging.kubeconfig().display(),
                staging.context()
            ),
            1,
        );
    assert_ne!(wrong, file(clusters, ""), "the edit took");
    write(dir, "tazuna.yaml", &wrong);
    let staging_writes = writes(&staging).len();
    let refused = output(tazuna(dir).args([
        "apply",
        "--all-clusters",
        "--max-parallel",
        "1",
        "--finish-wave",
        "-o",
        "json",
    ]));
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert_eq!(
        results(&fleet_json(&refused)),
        pairs(&[("staging", "ok"), ("dr", "ok"), ("production", "failed")])
    );
    let error = fleet_json(&refused)["clusters"][2]["error"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        error.contains("but this file is bound to cluster"),
        "{error}"
    );
    // Staging's own no-op run takes and releases its Lease; nothing else
    // was written there.
    let new: Vec<String> = staging
        .requests_from("tazuna/")
        .unwrap()
        .into_iter()
        .filter(|r| r.is_write())
        .skip(staging_writes)
        .map(|r| r.resource)
        .collect();
    assert!(
        new.len() <= 2 && new.iter().all(|r| r == "leases"),
        "production's run wrote to staging: {new:?}"
    );
    assert!(!exists(
        &staging,
        &["get", "configmap", "production-only", "-n", "web"]
    ));

    // destroy on all three, back to the right file.
    write(dir, "tazuna.yaml", &file(clusters, ""));
    let destroyed = output(tazuna(dir).args(["destroy", "--all-clusters", "--yes"]));
    assert!(destroyed.status.success(), "{}", text(&destroyed));
    for cluster in [&staging, &production, &dr] {
        assert!(!exists(cluster, &["get", "deployment", "web", "-n", "web"]));
    }

    // The CI-matrix way: one process per entry of `tazuna clusters -o json`,
    // all at once. Together they equal one fleet run: a plan of the whole
    // fleet finds nothing left to change.
    let entries = stdout(&succeed(tazuna(dir).args(["clusters", "-o", "json"])));
    let entries: Value = serde_json::from_str(&entries).unwrap();
    let jobs: Vec<(String, std::process::Child)> = entries
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            let name = entry["cluster"].as_str().unwrap().to_owned();
            let child = tazuna(dir)
                .args(["apply", "--cluster", &name])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            (name, child)
        })
        .collect();
    assert_eq!(jobs.len(), 3);
    for (name, child) in jobs {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "matrix job {name}: {}", text(&out));
    }
    let planned = output(tazuna(dir).args(["plan", "--all-clusters", "--detailed-exitcode"]));
    assert!(planned.status.success(), "{}", text(&planned));
    for (cluster, replicas) in [(&staging, "1"), (&production, "3"), (&dr, "2")] {
        assert_eq!(
            jsonpath(
                cluster,
                &["get", "deployment", "web", "-n", "web"],
                "{.spec.replicas}"
            ),
            replicas
        );
    }
}

/// `kubectl <args> -f -` with `yaml` on stdin, so nothing is written to
/// disk; it must succeed.
fn kubectl_stdin(cluster: &TestCluster, args: &[&str], yaml: &str) {
    use std::io::Write as _;
    let mut child = cluster
        .kubectl()
        .args(args)
        .args(["-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(yaml.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "kubectl {args:?}: {}", text(&out));
}

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &[u8]) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() && !path.is_symlink() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path)
                && bytes.windows(needle.len()).any(|w| w == needle)
            {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn cluster_api_workload_clusters_are_found_by_label_applied_and_their_kubeconfigs_never_touch_disk()
{
    use base64::Engine as _;
    let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let Some(crd) = tazuna_tests::Assets::locate().cluster_api_crd() else {
        e2e::skip::<()>("no Cluster API CRDs (`tests/controlplane/install.sh` copies them)");
        return;
    };
    let Some(management) = TestCluster::start("capi-management") else {
        return;
    };
    let Some(own) = management.own() else {
        eprintln!("SKIPPED: needs harness clusters of its own");
        return;
    };
    let _ = own;
    let Some(tokyo) = TestCluster::start("capi-tokyo") else {
        return;
    };
    let Some(osaka) = TestCluster::start("capi-osaka") else {
        return;
    };
    succeed(
        management
            .kubectl()
            .args(["apply", "--server-side", "-f"])
            .arg(&crd),
    );
    management.wait_established("clusters.cluster.x-k8s.io");
    // Two workload clusters selected by label, one that is not, each with a
    // `<name>-kubeconfig` Secret; the kubeconfigs carry a marker to look for.
    let marker = format!(
        "capi-marker-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let mut objects = String::from("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: fleet\n");
    // `nagoya` is selected but its control plane is still coming up: Cluster
    // API has written no kubeconfig Secret for it yet.
    for (name, region, fleet, cluster) in [
        ("tokyo", "tokyo", "web", Some(&tokyo)),
        ("osaka", "osaka", "web", Some(&osaka)),
        ("nagoya", "nagoya", "web", None),
        ("lab", "tokyo", "other", None),
    ] {
        objects.push_str(&format!(
            "---\napiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata:\n  name: {name}\n  namespace: fleet\n  labels: {{ tazuna.io/fleet: {fleet}, region: {region} }}\nspec: {{ paused: true }}\n"
        ));
        if let Some(cluster) = cluster {
            let mut entry = cluster.own().unwrap().kubeconfig_entry().clone();
            entry.name = format!("{marker}-{name}");
            objects.push_str(&format!(
                "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}-kubeconfig\n  namespace: fleet\n  labels: {{ cluster.x-k8s.io/cluster-name: {name} }}\ndata:\n  value: {}\n",
                b64(&entry.to_yaml())
            ));
        }
    }
    // An attacker who can write a kubeconfig Secret tries to run a program
    // on the machine that runs Tazuna.
    let pwned = std::env::temp_dir().join(format!("{marker}-pwned"));
    let hostile = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: probe\n  cluster: {{ server: \"https://127.0.0.1:1\" }}\nusers:\n- name: probe\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh\n      args: [\"-c\", \"touch {}\"]\n      interactiveMode: Never\ncontexts:\n- name: probe\n  context: {{ cluster: probe, user: probe }}\ncurrent-context: probe\n",
        pwned.display()
    );
    objects.push_str(&format!(
        "---\napiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata:\n  name: probe\n  namespace: fleet\n  labels: {{ tazuna.io/fleet: probe }}\nspec: {{ paused: true }}\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: probe-kubeconfig\n  namespace: fleet\ndata:\n  value: {}\n",
        b64(&hostile)
    ));
    // The least access the docs ask for: list Clusters, get their Secrets.
    objects.push_str(
        "---\napiVersion: v1\nkind: ServiceAccount\nmetadata: { name: tazuna, namespace: fleet }\n\
---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: { name: tazuna-cluster-api }\n\
rules:\n  - { apiGroups: [cluster.x-k8s.io], resources: [clusters], verbs: [list] }\n\
---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: { name: tazuna-cluster-api, namespace: fleet }\n\
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tazuna-cluster-api }\n\
subjects: [{ kind: ServiceAccount, name: tazuna, namespace: fleet }]\n\
---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: { name: tazuna-kubeconfigs, namespace: fleet }\n\
rules:\n  - { apiGroups: [\"\"], resources: [secrets], verbs: [get] }\n\
---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: { name: tazuna-kubeconfigs, namespace: fleet }\n\
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: tazuna-kubeconfigs }\n\
subjects: [{ kind: ServiceAccount, name: tazuna, namespace: fleet }]\n",
    );
    kubectl_stdin(&management, &["apply", "--server-side"], &objects);
    let token = stdout(&succeed(
        management
            .kubectl()
            .args(["create", "token", "tazuna", "-n", "fleet"]),
    ));
    let entry = management.own().unwrap().kubeconfig_entry();
    let reader = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n  - name: management\n    cluster: {{ server: \"{}\", certificate-authority-data: {} }}\nusers:\n  - name: tazuna\n    user: {{ token: {} }}\ncontexts:\n  - name: management\n    context: {{ cluster: management, user: tazuna }}\ncurrent-context: management\n",
        entry.server,
        b64(&entry.ca_pem),
        token.trim()
    );

    let project = tempfile::tempdir().unwrap();
    let dir = project.path();
    let home = tempfile::tempdir().unwrap();
    write(dir, "management.kubeconfig", &reader);
    write(
        dir,
        "app/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  from: cluster-api\n",
    );
    write(
        dir,
        "tazuna.yaml",
        r#"apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  inputs:
    - name: capi
      type: cluster-api
  environments:
    workloads:
      clusterAPI:
        kubeconfig: ./management.kubeconfig
        namespace: fleet
        selector: tazuna.io/fleet=web
      labels: { tier: web }
    probes:
      clusterAPI:
        kubeconfig: ./management.kubeconfig
        namespace: fleet
        selector: tazuna.io/fleet=probe
  manifests:
    - name: app
      type: manifests
      path: ./app
      # The Cluster object's own labels, through the `cluster-api` input.
      namespace: app-{{ .Inputs.capi.labels.region }}
      createNamespace: true
"#,
    );
    let run = |args: &[&str]| {
        output(
            tazuna(dir)
                .env("HOME", home.path())
                .env("TMPDIR", home.path())
                .env("TAZUNA_CACHE_DIR", home.path().join("cache"))
                .args(args),
        )
    };
    let listed = run(&["clusters", "-e", "workloads", "-o", "json"]);
    assert!(listed.status.success(), "{}", text(&listed));
    // The cluster without a kubeconfig yet is skipped, said to be not ready,
    // and does not fail its environment.
    assert!(
        String::from_utf8_lossy(&listed.stderr).contains(
            "warning: cluster `nagoya` of environment `workloads` is not ready: Cluster `fleet/nagoya` has no Secret `fleet/nagoya-kubeconfig` yet"
        ),
        "{}",
        text(&listed)
    );
    let listed: Value = serde_json::from_str(&stdout(&listed)).unwrap();
    let names: Vec<(&str, &str)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["cluster"].as_str().unwrap(),
                c["labels"]["region"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(names, [("osaka", "osaka"), ("tokyo", "tokyo")]);

    // The hostile kubeconfig is refused before anything uses it.
    for args in [
        &["clusters", "-e", "probes"][..],
        &["apply", "-e", "probes"],
    ] {
        let refused = run(args);
        assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
        let said = String::from_utf8_lossy(&refused.stderr).into_owned();
        assert!(
            said.contains("Secret `fleet/probe-kubeconfig` holds a kubeconfig that runs a program"),
            "{said}"
        );
        assert!(
            !said.contains("touch"),
            "the Secret's content is quoted: {said}"
        );
    }
    assert!(!pwned.exists(), "the kubeconfig's exec ran");

    let applied = run(&["apply", "-e", "workloads"]);
    assert!(applied.status.success(), "{}", text(&applied));
    let table = stdout(&applied);
    for name in ["osaka", "tokyo"] {
        assert!(
            table
                .lines()
                .any(|l| l.starts_with(name) && l.split_whitespace().nth(3) == Some("ok")),
            "{name} is not ok: {}",
            text(&applied)
        );
    }
    for (cluster, namespace, absent) in [
        (&tokyo, "app-tokyo", "app-osaka"),
        (&osaka, "app-osaka", "app-tokyo"),
    ] {
        assert_eq!(
            jsonpath(
                cluster,
                &["get", "configmap", "app", "-n", namespace],
                "{.data.from}"
            ),
            "cluster-api"
        );
        assert!(!exists(cluster, &["get", "namespace", absent]));
    }
    let planned = run(&["plan", "-e", "workloads", "--detailed-exitcode"]);
    assert!(planned.status.success(), "{}", text(&planned));
    // Kubeconfigs are never logged, at the most talkative log level either:
    // no client key, no token, no server certificate in anything printed.
    let traced = run(&["plan", "-e", "workloads", "--log-level", "trace"]);
    assert!(traced.status.success(), "{}", text(&traced));
    let printed = text(&traced);
    assert!(
        printed.len() > 1000,
        "trace logging printed little: {printed}"
    );
    for cluster in [&tokyo, &osaka] {
        let entry = cluster.own().unwrap().kubeconfig_entry();
        for (what, secret) in [
            ("client key", b64(&entry.client_key_pem)),
            (
                "client key line",
                entry.client_key_pem.lines().nth(1).unwrap().to_owned(),
            ),
            ("CA", b64(&entry.ca_pem)),
        ] {
            assert!(
                !printed.contains(&secret),
                "a kubeconfig's {what} was logged"
            );
        }
    }
    assert!(
        !printed.contains(token.trim()),
        "the management token was logged"
    );

    // No credential of those kubeconfigs anywhere Tazuna writes: the project
    // (tazuna.lock included), its HOME, cache and temporary directories, and
    // its state. (The context name is no credential; tazuna.lock records it
    // with the binding.)
    for cluster in [&tokyo, &osaka] {
        let key = &cluster.own().unwrap().kubeconfig_entry().client_key_pem;
        let body = key.lines().nth(1).expect("a PEM body line").to_owned();
        // The search finds a key where a kubeconfig file does hold one.
        let harness = cluster.kubeconfig().parent().unwrap();
        assert!(!files_containing(harness, b64(key).as_bytes()).is_empty());
        for needle in [body.clone(), b64(key)] {
            for place in [dir, home.path()] {
                let found = files_containing(place, needle.as_bytes());
                assert!(found.is_empty(), "a client key is in {found:?}");
            }
        }
        let state = stdout(&succeed(cluster.kubectl().args([
            "get",
            "configmaps",
            "-n",
            "tazuna",
            "-o",
            "yaml",
        ])));
        assert!(!state.contains(&body), "a client key is in the state");
    }
    let lock = std::fs::read_to_string(dir.join("tazuna.lock")).unwrap();
    assert!(
        lock.contains("osaka") && lock.contains("tokyo"),
        "both bound:\n{lock}"
    );

    // The example's file is another stack with a manifest of the same name:
    // this one goes first, as a team moving to the Job would do.
    let destroyed = run(&["destroy", "-e", "workloads", "--yes"]);
    assert!(destroyed.status.success(), "{}", text(&destroyed));
    the_job_example_runs_as_shipped(&management, [("tokyo", &tokyo), ("osaka", &osaka)]);
}

/// `examples/fleet/kubernetes/` as shipped: `rbac.yaml` applied for real,
/// `job.yaml` created with a server-side dry run (kwok's nodes run no
/// containers), and then the Job's own command line run once per cluster as
/// the process its pod would run: in a mount namespace of its own with the
/// service account's token, CA and namespace at the path kubelet mounts them,
/// `KUBERNETES_SERVICE_HOST`/`_PORT` set, no kubeconfig anywhere, the
/// ConfigMap's files (as the Job's `items` lay them out) on a read-only mount,
/// and the lock on a writable directory. After both, a plan of the fleet from
/// the same pod finds nothing. Needs root (mounts) and `unshare`.
fn the_job_example_runs_as_shipped(management: &TestCluster, clusters: [(&str, &TestCluster); 2]) {
    let examples = common::root().join("examples/fleet");
    succeed(
        management
            .kubectl()
            .args(["apply", "--server-side", "-f"])
            .arg(examples.join("kubernetes/rbac.yaml")),
    );
    let job = std::fs::read_to_string(examples.join("kubernetes/job.yaml")).unwrap();
    for (name, _) in clusters {
        kubectl_stdin(
            management,
            &["create", "--dry-run=server"],
            &job.replace("CLUSTER", name),
        );
    }
    let root = effective_uid_is_root();
    let unshare = tazuna_tests::assets::which("unshare");
    let (true, Some(unshare)) = (root, unshare) else {
        e2e::skip::<()>("the Job's in-pod run needs root and `unshare` for its mounts");
        return;
    };
    // The pod's files: the service account's (as kubelet projects them) and
    // the ConfigMap's (as the Job's `items` lay them out).
    let pod = tempfile::tempdir().unwrap();
    let token = stdout(&succeed(
        management
            .kubectl()
            .args(["create", "token", "tazuna", "-n", "fleet"]),
    ));
    let entry = management.own().unwrap().kubeconfig_entry();
    write(pod.path(), "serviceaccount/token", token.trim());
    write(pod.path(), "serviceaccount/ca.crt", &entry.ca_pem);
    write(pod.path(), "serviceaccount/namespace", "fleet");
    let config = pod.path().join("config");
    write(
        &config,
        "tazuna.yaml",
        &std::fs::read_to_string(examples.join("tazuna.yaml")).unwrap(),
    );
    write(
        &config,
        "app/configmap.yaml",
        &std::fs::read_to_string(examples.join("app/configmap.yaml")).unwrap(),
    );
    let port = entry
        .server
        .rsplit_once(':')
        .map(|(_, port)| port.trim_end_matches('/').to_owned())
        .expect("the server URL has a port");
    let home = pod.path().join("tmp");
    std::fs::create_dir_all(&home).unwrap();
    // The Job's `args`, as job.yaml gives them, with its mount paths mapped
    // onto the pod's directories.
    let args_line = job
        .lines()
        .find_map(|line| line.trim().strip_prefix("args: ["))
        .expect("job.yaml gives the container's args")
        .trim_end_matches(']')
        .to_owned();
    let in_pod = |args: &[String]| -> Output {
        let script = "mount -t tmpfs tmpfs /run \
            && mkdir -p /run/secrets/kubernetes.io \
            && cp -r \"$0\"/serviceaccount /run/secrets/kubernetes.io/serviceaccount \
            && mount --bind \"$0\"/config \"$0\"/config \
            && mount -o remount,bind,ro \"$0\"/config \
            && exec \"$@\"";
        output(
            Command::new(&unshare)
                .args(["--mount", "--propagation", "private", "sh", "-c", script])
                .arg(pod.path())
                .arg(env!("CARGO_BIN_EXE_tazuna"))
                .args(args)
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .env("HOME", &home)
                .env("TMPDIR", &home)
                .env("NO_COLOR", "1")
                .env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
                .env("KUBERNETES_SERVICE_PORT", &port),
        )
    };
    for (name, cluster) in clusters {
        let locks = pod.path().join(format!("lock-{name}"));
        std::fs::create_dir_all(&locks).unwrap();
        let args: Vec<String> = args_line
            .split(',')
            .map(|arg| {
                arg.trim()
                    .replace("CLUSTER", name)
                    .replace("/config/", &format!("{}/", config.display()))
                    .replace("/var/lib/tazuna/", &format!("{}/", locks.display()))
            })
            .collect();
        let ran = in_pod(&args);
        assert!(ran.status.success(), "the Job for {name}: {}", text(&ran));
        // `-o json` is one event per line; the last sums the run up.
        let events: Vec<Value> = stdout(&ran)
            .lines()
            .map(|line| {
                serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("`-o json` printed JSON ({e}): {}", text(&ran)))
            })
            .collect();
        let summary = events.last().expect("events");
        assert_eq!(summary["event"], "summary", "{}", text(&ran));
        assert_eq!(summary["ok"], 1, "{}", text(&ran));
        assert_eq!(
            jsonpath(
                cluster,
                &["get", "configmap", "app", "-n", "app"],
                "{.data.owner}"
            ),
            "platform"
        );
        let lock = std::fs::read_to_string(locks.join("tazuna.lock")).unwrap();
        assert!(
            lock.contains(name),
            "the binding is kept on the writable volume: {lock}"
        );
        assert!(
            !config.join("tazuna.lock").exists(),
            "nothing is written to the ConfigMap's mount"
        );
    }
    let planned = in_pod(&[
        "plan".into(),
        "-f".into(),
        config.join("tazuna.yaml").display().to_string(),
        "--lock-file".into(),
        pod.path().join("plan/tazuna.lock").display().to_string(),
        "-e".into(),
        "workloads".into(),
        "--detailed-exitcode".into(),
    ]);
    assert_eq!(
        planned.status.code(),
        Some(0),
        "a plan of the fleet after the Jobs finds nothing: {}",
        text(&planned)
    );
}

/// Whether this process runs as root.
fn effective_uid_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|id| id == "0"))
        })
        .unwrap_or(false)
}

#[test]
fn the_fleet_example_lists_its_clusters_in_waves_and_differs_only_where_it_means_to() {
    let dir = common::root().join("examples/fleet");
    let listed =
        succeed(tazuna(&dir).args(["clusters", "-e", "staging,production,dr", "-o", "json"]));
    let listed: Value = serde_json::from_str(&stdout(&listed)).unwrap();
    let waves: Vec<(&str, u64)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["cluster"].as_str().unwrap(), c["wave"].as_u64().unwrap()))
        .collect();
    assert_eq!(waves, [("staging", 1), ("dr", 2), ("production", 2)]);
    let compared = succeed(tazuna(&dir).args(["compare", "staging", "production", "-o", "json"]));
    let compared: Value = serde_json::from_str(&stdout(&compared)).unwrap();
    assert_eq!(
        compared["onlyInSecond"],
        serde_json::json!(["production-only: v1 ConfigMap app/audit"])
    );
    assert_eq!(compared["onlyInFirst"], serde_json::json!([]));
    assert_eq!(compared["different"], serde_json::json!([]));
    let same =
        output(tazuna(&dir).args(["compare", "production", "production", "--detailed-exitcode"]));
    assert_eq!(same.status.code(), Some(0), "{}", text(&same));
    let unknown = output(tazuna(&dir).args(["compare", "staging", "prod"]));
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&unknown.stderr)
            .contains("`prod` is neither an environment nor a cluster of this file"),
        "{}",
        text(&unknown)
    );
}
