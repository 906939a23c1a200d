//! End-to-end checks of the test harness itself, asserted through independent clients:
//! kubectl against harness clusters, the pinned plugin tools (helm, kustomize,
//! helmfile, oras) from the cache, and skopeo against a local `docker-registry`.
//!
//! Workloads use `registry.k8s.io/pause:3.10`: kwok never pulls it, and kind preloads it,
//! so the same tests also pass on a developer's kind cluster.
//!
//! Each test skips with a printed reason when the binaries are missing, unless
//! `TAZUNA_E2E_REQUIRED` is set. With `TAZUNA_E2E_KUBECONFIG` the cluster tests run
//! against that cluster instead (the two-cluster test then skips).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread;

use tazuna_tests::assets::which;
use tazuna_tests::e2e::{self, TestCluster, TestNamespace, unique_suffix, wait_condition};
use tazuna_tests::{Tool, kubeconfig};

/// Runs `command`, panicking with its stderr unless it succeeds; returns stdout.
fn run(command: &mut Command) -> String {
    let out = output(command);
    assert!(
        out.status.success(),
        "`{command:?}` failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn output(command: &mut Command) -> Output {
    command
        .output()
        .unwrap_or_else(|e| panic!("running `{command:?}`: {e}"))
}

/// Runs `command` with `input` on stdin, panicking unless it succeeds.
fn run_with_stdin(command: &mut Command, input: &str) -> String {
    use std::io::Write as _;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("running `{command:?}`: {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "`{command:?}` failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn apply(ns: &TestNamespace<'_>, manifest: &str) -> String {
    run_with_stdin(
        ns.kubectl().args([
            "apply",
            "--server-side",
            "--field-manager=tazuna-e2e",
            "-f",
            "-",
        ]),
        manifest,
    )
}

fn chart_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/charts/hello")
}

#[test]
fn server_side_applied_deployment_with_two_replicas_becomes_available() {
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let ns = cluster.namespace("deploy");
    apply(
        &ns,
        r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: registry.k8s.io/pause:3.10
"#,
    );
    wait_condition(|| ns.kubectl(), "deployment/web", "Available", 120);
    let ready = run(ns.kubectl().args([
        "get",
        "deployment/web",
        "-o",
        "jsonpath={.status.readyReplicas}",
    ]));
    assert_eq!(ready.trim(), "2");
    // The fields are owned by our field manager: the apply really was server-side.
    let managers = run(ns.kubectl().args([
        "get",
        "deployment/web",
        "--show-managed-fields",
        "-o",
        "jsonpath={.metadata.managedFields[*].manager}",
    ]));
    assert!(managers.contains("tazuna-e2e"), "managers: {managers}");
}

#[test]
fn crd_becomes_established_and_accepts_a_custom_resource() {
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let ns = cluster.namespace("crd");
    // A group of its own, so that reruns against a developer's cluster never collide.
    let group = format!("e2e{}.tazuna.dev", unique_suffix());
    let crd_name = format!("widgets.{group}");
    let crd = format!(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {crd_name}
spec:
  group: {group}
  scope: Namespaced
  names: {{plural: widgets, singular: widget, kind: Widget}}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: {{type: integer}}
"#
    );
    struct DeleteCrd<'a>(&'a TestCluster, String);
    impl Drop for DeleteCrd<'_> {
        fn drop(&mut self) {
            let _ = self
                .0
                .kubectl()
                .args([
                    "delete",
                    "crd",
                    &self.1,
                    "--wait=false",
                    "--ignore-not-found",
                ])
                .output();
        }
    }
    let _cleanup = DeleteCrd(cluster, crd_name.clone());
    apply(&ns, &crd);
    cluster.wait_established(&crd_name);
    apply(
        &ns,
        &format!("apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 3\n"),
    );
    let size = run(ns.kubectl().args([
        "get",
        &format!("widgets.{group}/w1"),
        "-o",
        "jsonpath={.spec.size}",
    ]));
    assert_eq!(size.trim(), "3");
}

#[test]
fn deleting_a_namespace_completes() {
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let ns = cluster.namespace("delete");
    apply(
        &ns,
        r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {a: "1"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: worker}
spec:
  replicas: 1
  selector: {matchLabels: {app: worker}}
  template:
    metadata: {labels: {app: worker}}
    spec:
      containers: [{name: worker, image: registry.k8s.io/pause:3.10}]
"#,
    );
    wait_condition(|| ns.kubectl(), "deployment/worker", "Available", 120);
    // The namespace controller must finalize it (all content gone, pods deleted by kwok).
    run(cluster.kubectl().args([
        "delete",
        "namespace",
        ns.name(),
        "--wait=true",
        "--timeout=120s",
    ]));
    let out = output(cluster.kubectl().args(["get", "namespace", ns.name()]));
    assert!(
        !out.status.success(),
        "namespace {} still exists",
        ns.name()
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("NotFound"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn two_clusters_at_once_have_distinct_contexts_and_kube_system_uids() {
    if std::env::var_os(e2e::KUBECONFIG_ENV).is_some() {
        eprintln!(
            "SKIPPED: a developer cluster is in use ({}), and this test needs two of its own",
            e2e::KUBECONFIG_ENV
        );
        return;
    }
    if e2e::tools(&Tool::CONTROL_PLANE).is_none() {
        return;
    }
    let (staging, production) = thread::scope(|s| {
        let staging = s.spawn(|| TestCluster::start("staging"));
        let production = s.spawn(|| TestCluster::start("production"));
        (
            staging.join().expect("staging panicked"),
            production.join().expect("production panicked"),
        )
    });
    let (Some(staging), Some(production)) = (staging, production) else {
        return;
    };
    let (staging, production) = (staging.own().unwrap(), production.own().unwrap());
    assert_ne!(staging.server(), production.server());

    // Both contexts merged into one kubeconfig, side by side.
    let dir = tempfile::tempdir().unwrap();
    let merged = dir.path().join("config");
    kubeconfig::merge_into(&merged, staging.kubeconfig_entry()).unwrap();
    kubeconfig::merge_into(&merged, production.kubeconfig_entry()).unwrap();
    let kubectl = staging.assets().kubectl();
    let contexts = run(Command::new(&kubectl)
        .arg("--kubeconfig")
        .arg(&merged)
        .args(["config", "get-contexts", "-o", "name"]));
    let mut contexts: Vec<&str> = contexts.lines().collect();
    contexts.sort_unstable();
    assert_eq!(contexts, ["production", "staging"]);

    let uid = |context: &str| {
        run(Command::new(&kubectl)
            .arg("--kubeconfig")
            .arg(&merged)
            .args(["--context", context])
            .args([
                "get",
                "namespace",
                "kube-system",
                "-o",
                "jsonpath={.metadata.uid}",
            ]))
    };
    let (a, b) = (uid("staging"), uid("production"));
    assert!(!a.is_empty() && !b.is_empty());
    assert_ne!(a, b, "both contexts reach the same cluster");
}

/// A HOME of its own for the tools, so that they neither read nor write the user's.
fn tool_command(binary: &Path, home: &Path) -> Command {
    let mut command = Command::new(binary);
    command
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env_remove("KUBECONFIG");
    command
}

#[test]
fn plugin_tools_run_from_the_cache_and_helm_templates_our_chart() {
    let Some(assets) = e2e::tools(&Tool::PLUGIN_TOOLS) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let home = home.path();

    let helm = run(tool_command(&assets.path(Tool::Helm), home).args(["version", "--short"]));
    assert!(helm.contains(Tool::Helm.version()), "helm version: {helm}");
    let kustomize = run(tool_command(&assets.path(Tool::Kustomize), home).arg("version"));
    assert!(
        kustomize.contains(Tool::Kustomize.version()),
        "kustomize version: {kustomize}"
    );
    let helmfile = run(tool_command(&assets.path(Tool::Helmfile), home).arg("--version"));
    assert!(
        helmfile.contains(Tool::Helmfile.version().trim_start_matches('v')),
        "helmfile --version: {helmfile}"
    );
    let oras = run(tool_command(&assets.path(Tool::Oras), home).arg("version"));
    assert!(
        oras.contains(Tool::Oras.version().trim_start_matches('v')),
        "oras version: {oras}"
    );

    let rendered = run(tool_command(&assets.path(Tool::Helm), home)
        .args(["template", "demo"])
        .arg(chart_dir())
        .args(["--set", "replicas=3"]));
    let docs: Vec<serde_yaml::Value> = rendered
        .split("\n---")
        .map(|doc| serde_yaml::from_str::<serde_yaml::Value>(doc).unwrap())
        .filter(|doc| !doc.is_null())
        .collect();
    let kinds: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
    assert_eq!(kinds, ["ConfigMap", "Deployment"], "{rendered}");
    assert_eq!(docs[1]["metadata"]["name"].as_str(), Some("demo-hello"));
    assert_eq!(docs[1]["spec"]["replicas"].as_u64(), Some(3));
}

#[test]
fn helm_installs_our_chart_and_sees_the_pinned_server_version() {
    let Some(helm) = e2e::tool(Tool::Helm) else {
        return;
    };
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let ns = cluster.namespace("helm");
    let home = tempfile::tempdir().unwrap();
    run(tool_command(&helm, home.path())
        .arg("install")
        .arg("demo")
        .arg(chart_dir())
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig())
        .args([
            "--kube-context",
            cluster.context(),
            "--namespace",
            ns.name(),
        ])
        .args(["--wait", "--timeout", "120s"]));
    let version = run(ns.kubectl().args([
        "get",
        "configmap/demo-hello",
        "-o",
        "jsonpath={.data.kubeVersion}",
    ]));
    if cluster.own().is_some() {
        // The version ldflags of install.sh reach Helm's capabilities.
        assert_eq!(version, Tool::KubeApiserver.version());
    } else {
        assert!(version.starts_with("v1."), "{version}");
    }
    let ready = run(ns.kubectl().args([
        "get",
        "deployment/demo-hello",
        "-o",
        "jsonpath={.status.readyReplicas}",
    ]));
    assert_eq!(ready, "2");
}

/// Compiles a tiny program for wasm32-wasip2, or skips if the target is missing.
fn tiny_wasm(dir: &Path) -> Option<PathBuf> {
    let source = dir.join("hello.rs");
    fs::write(
        &source,
        "fn main() { println!(\"hello from a component\"); }\n",
    )
    .unwrap();
    let wasm = dir.join("hello.wasm");
    let out = output(
        Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()))
            .args(["--target", "wasm32-wasip2", "-O", "-o"])
            .arg(&wasm)
            .arg(&source),
    );
    if !out.status.success() {
        return e2e::skip(&format!(
            "cannot build a wasm32-wasip2 component (`rustup target add wasm32-wasip2`): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Some(wasm)
}

fn sha256_hex(path: &Path) -> String {
    let out = run(Command::new("sha256sum").arg(path));
    out.split_whitespace().next().unwrap().to_owned()
}

/// Pushes with `oras push` and explicit media types: the pinned oras binary is one of the
/// tools the plugins call, so the authenticated registry is exercised through it (the
/// unauthenticated one is exercised through `oci-wasm` above).
fn push_wasm(oras: &Path, home: &Path, reference: &str, wasm: &Path, creds: Option<(&str, &str)>) {
    let dir = wasm.parent().unwrap();
    let digest = format!("sha256:{}", sha256_hex(wasm));
    // The CNCF TAG Runtime wasm OCI artifact config.
    let config = serde_json::json!({
        "created": "2026-01-01T00:00:00Z",
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [digest],
    });
    fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let mut command = tool_command(oras, home);
    command
        .current_dir(dir)
        .args(["push", "--plain-http", "--disable-path-validation"])
        .args([
            "--config",
            "config.json:application/vnd.wasm.config.v0+json",
        ])
        .arg(reference)
        .arg("hello.wasm:application/wasm");
    if let Some((user, password)) = creds {
        command.args(["--username", user, "--password", password]);
    }
    run(&mut command);
}

fn skopeo_manifest(reference: &str, creds: Option<(&str, &str)>) -> serde_json::Value {
    let mut command = Command::new("skopeo");
    command.args(["inspect", "--raw", "--tls-verify=false"]);
    if let Some((user, password)) = creds {
        command.arg(format!("--creds={user}:{password}"));
    }
    command.arg(format!("docker://{reference}"));
    serde_json::from_str(&run(&mut command)).unwrap()
}

fn assert_cncf_wasm_layout(manifest: &serde_json::Value, wasm: &Path) {
    assert_eq!(
        manifest["mediaType"], "application/vnd.oci.image.manifest.v1+json",
        "{manifest:#}"
    );
    assert_eq!(
        manifest["config"]["mediaType"], "application/vnd.wasm.config.v0+json",
        "{manifest:#}"
    );
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1, "{manifest:#}");
    assert_eq!(layers[0]["mediaType"], "application/wasm");
    assert_eq!(
        layers[0]["digest"].as_str().unwrap(),
        format!("sha256:{}", sha256_hex(wasm))
    );
    assert_eq!(
        layers[0]["size"].as_u64().unwrap(),
        fs::metadata(wasm).unwrap().len()
    );
}

#[test]
fn wasm_component_pushed_with_oci_wasm_reads_back_as_cncf_wasm_layout() {
    if which("skopeo").is_none() {
        e2e::skip::<()>("no `skopeo` (Debian package `skopeo`)");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let Some(wasm) = tiny_wasm(work.path()) else {
        return;
    };
    let Some(registry) = e2e::registry() else {
        return;
    };
    let reference = format!("{}/tazuna/hello-wasm:0.1.0", registry.host());
    push_with_oci_wasm(&reference, &wasm);

    // skopeo, an independent client, reads it back.
    let manifest = skopeo_manifest(&reference, None);
    assert_cncf_wasm_layout(&manifest, &wasm);
    let config = run(Command::new("skopeo")
        .args(["inspect", "--raw", "--config", "--tls-verify=false"])
        .arg(format!("docker://{reference}")));
    let config: serde_json::Value = serde_json::from_str(&config).unwrap();
    assert_eq!(config["architecture"], "wasm");
    assert_eq!(config["os"], "wasip2");
    assert_eq!(
        config["layerDigests"][0].as_str().unwrap(),
        format!("sha256:{}", sha256_hex(&wasm))
    );
}

/// Push `wasm` to a plain-HTTP registry with the `oci-wasm` crate (over `oci-client`),
/// as Tazuna's plugin distribution will.
fn push_with_oci_wasm(reference: &str, wasm: &Path) {
    use oci_client::client::{ClientConfig, ClientProtocol};
    use oci_client::secrets::RegistryAuth;
    use oci_wasm::{WasmClient, WasmConfig};

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tazuna_plugin_host::tls::install();
    runtime.block_on(async {
        let client = WasmClient::new(oci_client::Client::new(ClientConfig {
            protocol: ClientProtocol::Http,
            ..ClientConfig::default()
        }));
        let (config, layer) = WasmConfig::from_component(wasm, None).await.unwrap();
        let image: oci_client::Reference = reference.parse().unwrap();
        client
            .push(&image, &RegistryAuth::Anonymous, layer, config, None)
            .await
            .unwrap();
    });
}

#[test]
fn registry_with_basic_auth_refuses_anonymous_clients_and_serves_authenticated_ones() {
    let Some(oras) = e2e::tool(Tool::Oras) else {
        return;
    };
    if which("skopeo").is_none() {
        e2e::skip::<()>("no `skopeo` (Debian package `skopeo`)");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let Some(wasm) = tiny_wasm(work.path()) else {
        return;
    };
    let Some(registry) = e2e::registry_with_basic_auth("tazuna", "s3cret-pass") else {
        return;
    };
    assert_eq!(registry.get_status("/v2/", false).unwrap(), 401);
    assert_eq!(registry.get_status("/v2/", true).unwrap(), 200);

    let reference = format!("{}/private/hello-wasm:0.1.0", registry.host());
    let creds = registry.credentials();
    push_wasm(&oras, work.path(), &reference, &wasm, creds);
    assert_cncf_wasm_layout(&skopeo_manifest(&reference, creds), &wasm);

    let anonymous = output(
        Command::new("skopeo")
            .args(["inspect", "--raw", "--tls-verify=false"])
            .arg(format!("docker://{reference}")),
    );
    assert!(
        !anonymous.status.success(),
        "an anonymous client read a private manifest"
    );
}
