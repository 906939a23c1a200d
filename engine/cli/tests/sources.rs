//! End-to-end: the built-in `helm`, `kustomize`, `helmfile` and `oras` sources,
//! run by the real pinned binaries through the host's `exec` (and bundles
//! pushed with the real `oras` CLI, pulled through the host's `artifacts`
//! import), applied to
//! a harness cluster and checked with kubectl; an OCI chart pushed to a real
//! registry with `helm push` and read back with skopeo; and the errors a user
//! meets when a chart, a kustomization or a tool is wrong or missing.
//!
//! Tests skip with a printed reason when the harness binaries are missing,
//! unless `TAZUNA_E2E_REQUIRED` is set.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{copy_dir, edit, output, succeed, text, write};
use serde_json::Value;
use tazuna_tests::assets::Tool;
use tazuna_tests::e2e::{self, TestCluster};

/// The pinned helm, kustomize and helmfile, or a skip.
struct Tools {
    helm: PathBuf,
    kustomize: PathBuf,
    helmfile: PathBuf,
}

impl Tools {
    fn locate() -> Option<Tools> {
        let assets = e2e::tools(&[Tool::Helm, Tool::Kustomize, Tool::Helmfile])?;
        Some(Tools {
            helm: assets.path(Tool::Helm),
            kustomize: assets.path(Tool::Kustomize),
            helmfile: assets.path(Tool::Helmfile),
        })
    }
}

/// `tazuna` in `dir`, finding the tools the way a user would configure them.
fn tazuna(tools: &Tools, dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tazuna"));
    command
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("KUBECONFIG")
        .env("TAZUNA_TOOL_HELM", &tools.helm)
        .env("TAZUNA_TOOL_KUSTOMIZE", &tools.kustomize)
        .env("TAZUNA_TOOL_HELMFILE", &tools.helmfile);
    command
}

fn on(command: &mut Command, cluster: &TestCluster) {
    common::on_cluster(command, cluster);
}

/// The test chart of the harness (a Deployment and a ConfigMap).
fn chart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/charts/hello")
}

/// A project with a kustomize overlay over a base, the test chart with a
/// values file and inline values, and a helmfile with two releases of the
/// chart (one without a namespace, one with its own) and a state value.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    copy_dir(&chart(), &root.join("charts/hello"));
    write(root, "values/prod.yaml", "replicas: 3\n");
    write(
        root,
        "base/kustomization.yaml",
        "resources: [settings.yaml]\n",
    );
    write(
        root,
        "base/settings.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  level: info\n",
    );
    write(
        root,
        "overlays/prod/kustomization.yaml",
        "resources: [../../base]\nnamePrefix: prod-\nconfigMapGenerator:\n  - name: flags\n    literals: [beta=true]\n",
    );
    write(
        root,
        "platform/helmfile.yaml.gotmpl",
        "releases:
  - name: first
    chart: ../charts/hello
    values:
      - message: {{ .Values.greeting }}
  - name: second
    namespace: other
    chart: ../charts/hello
    values:
      - replicas: 1
",
    );
    write(
        root,
        "tazuna.yaml",
        "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  manifests:
    - name: namespaces
      type: manifests
      path: namespaces.yaml
    - name: app
      type: kustomize
      path: ./overlays/prod
      dependsOn: [namespaces]
      kustomize:
        defaultNamespace: web
    - name: hello
      type: helm
      path: charts/hello
      namespace: hello
      dependsOn: [namespaces]
      helm:
        releaseName: demo
        valuesFiles: [values/prod.yaml]
        values:
          message: hi from tazuna
    - name: platform
      type: helmfile
      path: platform
      namespace: hello
      dependsOn: [namespaces]
      helmfile:
        wait: true
        timeoutSeconds: 120
        vars:
          greeting:
            from: static
            static: hi from helmfile vars
",
    );
    write(
        root,
        "namespaces.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: hello\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: other\n",
    );
    dir
}

fn kubectl_json(cluster: &TestCluster, args: &[&str]) -> Value {
    let out = succeed(cluster.kubectl().args(args).args(["-o", "json"]));
    serde_json::from_slice(&out.stdout).expect("kubectl prints JSON")
}

/// Run the harness's `helm` in `dir` with `args`, as a user whose home is
/// `home` (helm keeps its repositories and logins there, and nothing of the
/// machine's own helm configuration is read); it must succeed.
fn helm(tools: &Tools, dir: &Path, home: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(&tools.helm);
    command
        .current_dir(dir)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("HELM_REPOSITORY_CONFIG")
        .env_remove("HELM_REPOSITORY_CACHE")
        .args(args);
    succeed(&mut command)
}

/// Package the test chart in `dir` and push it with helm to `host`'s
/// `charts/` over plain HTTP, logged in as `robot`.
fn push_chart_with_login(tools: &Tools, dir: &Path, home: &Path, host: &str) {
    let chart_dir = chart();
    helm(
        tools,
        dir,
        home,
        &["package", chart_dir.to_str().unwrap(), "--destination", "."],
    );
    helm(
        tools,
        dir,
        home,
        &[
            "push",
            "hello-0.1.0.tgz",
            &format!("oci://{host}/charts"),
            "--plain-http",
            "--username",
            "robot",
            "--password",
            "s3cret-pass",
        ],
    );
}

#[test]
fn helm_kustomize_and_helmfile_manifests_apply_and_the_cluster_shows_their_objects() {
    let Some(tools) = Tools::locate() else {
        return;
    };
    let Some(cluster) = TestCluster::start("sources") else {
        return;
    };
    let dir = project();

    let mut apply = tazuna(&tools, dir.path());
    on(&mut apply, &cluster);
    let applied = succeed(apply.arg("apply"));
    let stdout = String::from_utf8_lossy(&applied.stdout);
    assert!(stdout.contains("apply: 4 ok"), "{}", text(&applied));

    // kustomize: the overlay's prefix and generator, in the default namespace.
    let settings = kubectl_json(
        &cluster,
        &["-n", "web", "get", "configmap", "prod-settings"],
    );
    assert_eq!(settings["data"]["level"], "info");
    let generated = kubectl_json(&cluster, &["-n", "web", "get", "configmaps"]);
    let names: Vec<&str> = generated["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|item| item["metadata"]["name"].as_str())
        .collect();
    assert!(
        names.iter().any(|name| name.starts_with("prod-flags-")),
        "the generated ConfigMap with its hash suffix: {names:?}"
    );

    // helm: values file, then inline values, then the cluster's capabilities.
    let deployment = kubectl_json(
        &cluster,
        &["-n", "hello", "get", "deployment", "demo-hello"],
    );
    assert_eq!(deployment["spec"]["replicas"], 3, "from values/prod.yaml");
    assert_eq!(
        deployment["status"]["readyReplicas"], 3,
        "apply waited for the rollout"
    );
    let config = kubectl_json(&cluster, &["-n", "hello", "get", "configmap", "demo-hello"]);
    assert_eq!(config["data"]["message"], "hi from tazuna", "inline values");
    let version = kubectl_json(&cluster, &["version"]);
    assert_eq!(
        config["data"]["kubeVersion"], version["serverVersion"]["gitVersion"],
        "helm rendered against the target cluster's version"
    );

    // helmfile: the state value reached the template; a release without a
    // namespace lands in the manifest's, one with its own keeps it.
    let first = kubectl_json(
        &cluster,
        &["-n", "hello", "get", "configmap", "first-hello"],
    );
    assert_eq!(first["data"]["message"], "hi from helmfile vars");
    let second = kubectl_json(
        &cluster,
        &["-n", "other", "get", "deployment", "second-hello"],
    );
    assert_eq!(second["spec"]["replicas"], 1);
    assert_eq!(second["status"]["readyReplicas"], 1);
    let stray = output(cluster.kubectl().args([
        "-n",
        "hello",
        "get",
        "deployment",
        "second-hello",
        "--ignore-not-found",
        "-o",
        "name",
    ]));
    assert!(
        stray.stdout.is_empty(),
        "the second release stays in its own namespace"
    );

    // State records what each source rendered, so a rerun sends nothing.
    let mut again = tazuna(&tools, dir.path());
    on(&mut again, &cluster);
    let rerun = succeed(again.arg("apply"));
    let stdout = String::from_utf8_lossy(&rerun.stdout);
    assert!(
        stdout.contains("unchanged")
            && !stdout.contains("created")
            && !stdout.contains("configured"),
        "a rerun changes nothing: {}",
        text(&rerun)
    );

    // Changing the inline message shows up in plan as that one change.
    edit(
        &dir.path().join("tazuna.yaml"),
        "message: hi from tazuna",
        "message: changed",
    );
    let mut plan = tazuna(&tools, dir.path());
    on(&mut plan, &cluster);
    let planned = output(plan.args(["plan", "--detailed-exitcode"]));
    assert_eq!(planned.status.code(), Some(2), "{}", text(&planned));
    let stdout = String::from_utf8_lossy(&planned.stdout);
    assert!(
        stdout.contains("ConfigMap hello/demo-hello") && stdout.contains("changed"),
        "{}",
        text(&planned)
    );
    assert!(
        !stdout.contains("Deployment hello/demo-hello"),
        "only the ConfigMap changes: {}",
        text(&planned)
    );
}

#[test]
fn an_oci_chart_is_pushed_with_helm_and_rendered_from_the_registry() {
    let Some(tools) = Tools::locate() else {
        return;
    };
    let Some(registry) = e2e::registry() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let helm = |args: &[&str]| helm(&tools, dir.path(), &home, args);
    helm(&["package", chart().to_str().unwrap(), "--destination", "."]);
    let target = format!("oci://{}/charts", registry.host());
    let pushed = helm(&["push", "hello-0.1.0.tgz", &target, "--plain-http"]);
    let digest = |out: &Output| {
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        said.lines()
            .find_map(|line| line.strip_prefix("Digest: "))
            .unwrap_or_else(|| panic!("helm push names the digest: {said}"))
            .trim()
            .to_owned()
    };
    let first = digest(&pushed);

    // An independent client sees the chart's OCI manifest.
    if let Some(skopeo) = tazuna_tests::assets::which("skopeo") {
        let inspected = succeed(Command::new(skopeo).args([
            "inspect",
            "--tls-verify=false",
            "--raw",
            &format!("docker://{}/charts/hello:0.1.0", registry.host()),
        ]));
        let manifest: Value = serde_json::from_slice(&inspected.stdout).unwrap();
        assert_eq!(
            manifest["config"]["mediaType"],
            "application/vnd.cncf.helm.config.v1+json"
        );
    }

    write(
        dir.path(),
        "tazuna.yaml",
        &format!(
            "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  manifests:
    - name: hello
      type: helm
      namespace: hello
      helm:
        chart: {target}/hello
        version: 0.1.0
        plainHttp: true
"
        ),
    );
    let built = succeed(tazuna(&tools, dir.path()).args(["build", "-o", "json"]));
    let list: Value = serde_json::from_slice(&built.stdout)
        .unwrap_or_else(|e| panic!("build -o json: {e}: {}", text(&built)));
    let names: Vec<String> = list["items"]
        .as_array()
        .expect("build -o json prints a List")
        .iter()
        .filter_map(|object| {
            Some(format!(
                "{} {}/{}",
                object["kind"].as_str()?,
                object["metadata"]["namespace"].as_str()?,
                object["metadata"]["name"].as_str()?
            ))
        })
        .collect();
    assert!(
        names.contains(&"Deployment hello/hello-hello".to_owned())
            && names.contains(&"ConfigMap hello/hello-hello".to_owned()),
        "the chart from the registry, released as the manifest's name: {names:?}"
    );

    // The chart's version and digest (as helm push reported it) are pinned.
    let lock: Value = serde_yaml::from_str(
        &std::fs::read_to_string(dir.path().join("tazuna.lock")).expect("tazuna.lock"),
    )
    .unwrap();
    let pin = &lock["sources"]["hello"][0];
    assert_eq!(pin["location"], format!("{target}/hello").as_str());
    assert_eq!(pin["version"], "0.1.0");
    assert_eq!(pin["digest"], first.as_str());

    // Other content pushed under the same version is refused.
    let changed = dir.path().join("changed");
    copy_dir(&chart(), &changed);
    edit(
        &changed.join("values.yaml"),
        "message: hello from tazuna",
        "message: swapped",
    );
    helm(&[
        "package",
        changed.to_str().unwrap(),
        "--destination",
        "changed-pkg",
    ]);
    let second = digest(&helm(&[
        "push",
        "changed-pkg/hello-0.1.0.tgz",
        &target,
        "--plain-http",
    ]));
    assert_ne!(first, second);
    let refused = output(tazuna(&tools, dir.path()).arg("build"));
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains(&format!(
            "manifest `hello`: `{target}/hello` 0.1.0 now has digest `{second}`, but tazuna.lock pinned `{first}`"
        )),
        "{}",
        text(&refused)
    );

    // A version the registry does not have fails with helm's reason.
    edit(
        &dir.path().join("tazuna.yaml"),
        "version: 0.1.0",
        "version: 9.9.9",
    );
    let missing = output(tazuna(&tools, dir.path()).arg("build"));
    assert_eq!(missing.status.code(), Some(1), "{}", text(&missing));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        stderr.contains("manifest `hello`: plugin `helm` failed: `helm` failed")
            && stderr.contains("9.9.9"),
        "{}",
        text(&missing)
    );
}

#[test]
fn a_broken_chart_a_missing_kustomization_and_a_missing_tool_are_explained() {
    let Some(tools) = Tools::locate() else {
        return;
    };
    let dir = project();
    let root = dir.path();
    // A template that dereferences a value nobody set.
    write(
        root,
        "charts/hello/templates/broken.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\ndata:\n  x: {{ .Values.missing.key }}\n",
    );
    std::fs::remove_file(root.join("overlays/prod/kustomization.yaml")).unwrap();
    let built = output(tazuna(&tools, root).arg("build"));
    assert_eq!(built.status.code(), Some(1), "{}", text(&built));
    let stderr = String::from_utf8_lossy(&built.stderr);
    assert!(
        stderr.contains("manifest `hello`: plugin `helm` failed: `helm` failed with exit code 1")
            && stderr.contains("broken.yaml"),
        "helm's own reason, naming the template: {}",
        text(&built)
    );
    assert!(
        stderr.contains(
            "manifest `app`: plugin `kustomize` failed: not found: `./overlays/prod` has no kustomization.yaml"
        ),
        "{}",
        text(&built)
    );
    assert!(
        stderr.contains("3 of 4 manifests failed to render"),
        "the `manifests` source still rendered (helmfile uses the broken chart too): {}",
        text(&built)
    );

    // A Go Tazuna var without what its `from` needs is refused by name.
    let file = root.join("tazuna.yaml");
    let config = std::fs::read_to_string(&file).unwrap();
    edit(
        &file,
        "from: static\n            static: hi from helmfile vars",
        "from: env",
    );
    let built = output(tazuna(&tools, root).arg("build"));
    let stderr = String::from_utf8_lossy(&built.stderr);
    assert!(
        stderr.contains("manifest `platform`: plugin `helmfile` failed: invalid config: /vars/greeting/env: var `greeting` is `from: env` and needs `env`"),
        "{}",
        text(&built)
    );
    std::fs::write(&file, config).unwrap();

    // `check` knows which tools the manifests need and finds them.
    let checked = output(tazuna(&tools, root).arg("check"));
    assert!(
        !String::from_utf8_lossy(&checked.stderr).contains("is not installed"),
        "{}",
        text(&checked)
    );

    // Without a configured or installed helm, check warns and the render
    // error says how to provide one.
    let without = || {
        let mut command = tazuna(&tools, root);
        command
            .env_remove("TAZUNA_TOOL_HELM")
            .env("PATH", "/nonexistent");
        command
    };
    let checked = output(without().arg("check"));
    let stderr = String::from_utf8_lossy(&checked.stderr);
    assert!(
        stderr
            .contains("warning: `helm` is not installed, and manifests `hello`, `platform` run it")
            && stderr.contains("hint: put `helm` on PATH or set TAZUNA_TOOL_HELM"),
        "{}",
        text(&checked)
    );
    let built = output(without().arg("build"));
    let stderr = String::from_utf8_lossy(&built.stderr);
    assert!(
        stderr.contains("tool `helm` is not installed: put it on PATH or set TAZUNA_TOOL_HELM"),
        "{}",
        text(&built)
    );

    // A values file outside the project is refused before helm runs.
    edit(
        &file,
        "valuesFiles: [values/prod.yaml]",
        "valuesFiles: [../../etc/passwd]",
    );
    let built = output(tazuna(&tools, root).arg("build"));
    let stderr = String::from_utf8_lossy(&built.stderr);
    assert!(
        stderr.contains("/valuesFiles/0: `../../etc/passwd` is outside the manifest directory"),
        "{}",
        text(&built)
    );
}

#[test]
fn an_oras_bundle_is_pulled_by_the_host_and_rendered_by_its_delegate() {
    let Some(tools) = Tools::locate() else {
        return;
    };
    let Some(oras) = e2e::tool(Tool::Oras) else {
        return;
    };
    let Some(registry) = e2e::registry() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // A bundle directory with a kustomization, and a loose file, pushed with
    // the real oras CLI (a directory becomes a gzipped tar layer).
    write(
        root,
        "push/bundle/kustomize/app/kustomization.yaml",
        "resources: [settings.yaml]\nnamePrefix: bundled-\n",
    );
    write(
        root,
        "push/bundle/kustomize/app/settings.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  from: bundle\n",
    );
    copy_dir(&chart(), &root.join("push/platform/charts/hello"));
    write(
        root,
        "push/platform/helmfile.yaml.gotmpl",
        "releases:\n  - name: bundled\n    chart: ./charts/hello\n    values:\n      - message: {{ .Values.greeting }}\n",
    );
    write(
        root,
        "push/plain.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\ndata:\n  a: b\n",
    );
    let host = registry.host();
    let mut digests = Vec::new();
    for (reference, what) in [
        (format!("{host}/platform/bundle:1.0.0"), "bundle"),
        (format!("{host}/platform/plain:1.0.0"), "plain.yaml"),
        (format!("{host}/platform/helmfile:1.0.0"), "platform"),
    ] {
        let pushed = succeed(
            Command::new(&oras)
                .current_dir(root.join("push"))
                .env("HOME", root)
                .args(["push", "--plain-http", &reference, what]),
        );
        let said = String::from_utf8_lossy(&pushed.stdout).into_owned();
        digests.push(
            said.lines()
                .find_map(|line| line.strip_prefix("Digest: "))
                .unwrap_or_else(|| panic!("oras push names the digest: {said}"))
                .trim()
                .to_owned(),
        );
    }
    write(
        root,
        "project/tazuna.yaml",
        &format!(
            "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  manifests:
    - name: ingress
      type: oras
      oras:
        reference: {host}/platform/bundle:1.0.0
        target: bundle/kustomize/app
        auth: {{username: ci-bot, password: not-used}}
        delegate:
          type: kustomize
          kustomize:
            defaultNamespace: ingress
    - name: plain
      type: oras
      namespace: apps
      oras:
        reference: oci://{host}/platform/plain:1.0.0
    - name: platform
      type: oras
      oras:
        reference: {host}/platform/helmfile:1.0.0
        target: platform
        plainHTTP: true
        delegate:
          type: helmfile
          helmfile:
            defaultNamespace: platform
            vars:
              greeting: {{from: static, static: hi from the bundle}}
"
        ),
    );
    let project = root.join("project");
    let built = succeed(tazuna(&tools, &project).args(["build", "-o", "json"]));
    let list: Value = serde_json::from_slice(&built.stdout).unwrap();
    let items = list["items"].as_array().unwrap();
    let names: Vec<String> = items
        .iter()
        .map(|o| {
            format!(
                "{} {}/{}",
                o["kind"].as_str().unwrap(),
                o["metadata"]["namespace"].as_str().unwrap(),
                o["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            "ConfigMap ingress/bundled-settings",
            "ConfigMap apps/plain",
            "ConfigMap platform/bundled-hello",
            "Deployment platform/bundled-hello"
        ],
        "{}",
        text(&built)
    );
    assert_eq!(items[2]["data"]["message"], "hi from the bundle");
    assert_eq!(items[0]["data"]["from"], "bundle");
    let stderr = String::from_utf8_lossy(&built.stderr);
    assert!(stderr.contains("`auth` is not used"), "{}", text(&built));
    assert!(
        !stderr.contains("not-used"),
        "the password is never echoed: {stderr}"
    );
    let lock: Value = serde_yaml::from_str(
        &std::fs::read_to_string(project.join("tazuna.lock")).expect("tazuna.lock"),
    )
    .unwrap();
    assert_eq!(lock["sources"]["ingress"][0]["digest"], digests[0].as_str());
    assert_eq!(lock["sources"]["plain"][0]["digest"], digests[1].as_str());

    // A tag the registry does not have is named as not found.
    edit(&project.join("tazuna.yaml"), "plain:1.0.0", "plain:9.9.9");
    let missing = output(tazuna(&tools, &project).arg("build"));
    assert_eq!(missing.status.code(), Some(1), "{}", text(&missing));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        stderr.contains("manifest `plain`: plugin `oras` failed: not found: artifact `oci://")
            && stderr.contains("plain:9.9.9"),
        "{}",
        text(&missing)
    );

    // A helmfile from a registry is data too: one that calls `exec` is refused.
    let marker = root.join("pwned");
    write(
        root,
        "push/platform/helmfile.yaml.gotmpl",
        &format!(
            "releases:\n  - name: bundled\n    chart: ./charts/hello\n    values:\n      - message: {{{{ exec \"/bin/sh\" (list \"-c\" \"echo pwned > {}\") }}}}\n",
            marker.display()
        ),
    );
    succeed(
        Command::new(&oras)
            .current_dir(root.join("push"))
            .env("HOME", root)
            .args([
                "push",
                "--plain-http",
                &format!("{host}/platform/helmfile:2.0.0"),
                "platform",
            ]),
    );
    edit(&project.join("tazuna.yaml"), "plain:9.9.9", "plain:1.0.0");
    edit(
        &project.join("tazuna.yaml"),
        "helmfile:1.0.0",
        "helmfile:2.0.0",
    );
    let refused = output(tazuna(&tools, &project).arg("build"));
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("manifest `platform`")
            && stderr.contains(
                "platform/helmfile.yaml.gotmpl` line 5 calls `exec`, which runs a program"
            ),
        "{}",
        text(&refused)
    );
    assert!(!marker.exists(), "a program in a pulled helmfile ran");

    // The same call spelled so no check can see it (the name is built at
    // render time) meets the jail; and a repository the artifact names on
    // the host's loopback, which the user's file never names, is never
    // reached.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    for (version, helmfile) in [
        (
            "3.0.0",
            format!(
                "releases:\n  - name: bundled\n    chart: ./charts/hello\n    values:\n      - message: {{{{ tpl (printf \"{{{{ ex%s \\\"/bin/sh\\\" (list \\\"-c\\\" \\\"echo pwned > {}\\\") }}}}\" \"ec\") . }}}}\n",
                marker.display()
            ),
        ),
        (
            "4.0.0",
            format!(
                "repositories:\n  - name: elsewhere\n    url: http://127.0.0.1:{port}/charts\nreleases:\n  - name: bundled\n    chart: elsewhere/hello\n    version: 0.1.0\n"
            ),
        ),
    ] {
        write(root, "push/platform/helmfile.yaml.gotmpl", &helmfile);
        succeed(
            Command::new(&oras)
                .current_dir(root.join("push"))
                .env("HOME", root)
                .args([
                    "push",
                    "--plain-http",
                    &format!("{host}/platform/helmfile:{version}"),
                    "platform",
                ]),
        );
        let current = std::fs::read_to_string(project.join("tazuna.yaml")).unwrap();
        let previous = current
            .split("platform/helmfile:")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap()
            .to_owned();
        edit(
            &project.join("tazuna.yaml"),
            &format!("helmfile:{previous}"),
            &format!("helmfile:{version}"),
        );
        let refused = output(tazuna(&tools, &project).arg("build"));
        assert_eq!(
            refused.status.code(),
            Some(1),
            "{version}: {}",
            text(&refused)
        );
        let stderr = String::from_utf8_lossy(&refused.stderr);
        let why = match version {
            "3.0.0" => "fork/exec /bin/sh",
            _ => "elsewhere",
        };
        assert!(
            stderr.contains("manifest `platform`") && stderr.contains(why),
            "{version}: {}",
            text(&refused)
        );
        assert!(
            !marker.exists(),
            "{version}: a program in a pulled helmfile ran"
        );
        assert!(
            listener.accept().is_err(),
            "{version}: a pulled helmfile reached a host the file never names"
        );
    }
}

#[test]
fn a_go_tazuna_helmfile_block_renders_as_it_did() {
    let Some(tools) = Tools::locate() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    copy_dir(&chart(), &root.join("helmfile/cert-manager/charts/hello"));
    // As Go Tazuna read them: `extraValueFiles` relative to the helmfile,
    // `defaultNamespace` for objects without one, the `-e` name reaching a
    // helmfile that declares it, and `staticSlice` vars.
    write(
        root,
        "helmfile/cert-manager/helmfile.yaml.gotmpl",
        "environments:
  staging: {}
---
releases:
  - name: issuer
    chart: ./charts/hello
    values:
      - message: {{ .Environment.Name }}-{{ index .Values.zones 1 }}
",
    );
    write(root, "helmfile/cert-manager/extra.yaml", "replicas: 4\n");
    write(
        root,
        "tazuna.yaml",
        "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  environments:
    staging: {}
  manifests:
    - name: cert-manager
      type: helmfile
      path: ./helmfile/cert-manager
      helmfile:
        includeCRDs: true
        defaultNamespace: cert-manager
        extraValueFiles: [extra.yaml]
        wait: true
        timeoutSeconds: 120
        vars:
          zones:
            from: static
            staticSlice: [a, b]
",
    );
    let built = succeed(tazuna(&tools, root).args(["build", "-e", "staging", "-o", "json"]));
    let list: Value = serde_json::from_slice(&built.stdout).unwrap();
    let items = list["items"].as_array().unwrap();
    let config = items
        .iter()
        .find(|o| o["kind"] == "ConfigMap")
        .expect("the chart's ConfigMap");
    assert_eq!(config["data"]["message"], "staging-b", "{}", text(&built));
    assert_eq!(config["metadata"]["namespace"], "cert-manager");
    let deployment = items.iter().find(|o| o["kind"] == "Deployment").unwrap();
    assert_eq!(
        deployment["spec"]["replicas"], 4,
        "extra.yaml beside the helmfile"
    );

    // Without `-e`, helmfile's own `default` environment.
    let built = succeed(tazuna(&tools, root).args(["build", "-o", "json"]));
    assert!(
        String::from_utf8_lossy(&built.stdout).contains("default-b"),
        "{}",
        text(&built)
    );

    // An environment the helmfile does not declare (helmfile alone refuses
    // it): `.Environment.Name` is still the `-e` name, as in Go Tazuna, in
    // the helmfile and in its values templates, and relative paths keep
    // their meaning.
    edit(
        &root.join("tazuna.yaml"),
        "    staging: {}\n",
        "    staging: {}\n    production: {}\n",
    );
    let undeclared = "releases:
  - name: issuer
    chart: ./charts/hello
    values:
      - message: {{ .Environment.Name }}-{{ index .Values.zones 1 }}
      - values/{{ .Environment.Name }}.yaml.gotmpl
";
    write(
        root,
        "helmfile/cert-manager/helmfile.yaml.gotmpl",
        undeclared,
    );
    write(
        root,
        "helmfile/cert-manager/values/production.yaml.gotmpl",
        "message: {{ .Environment.Name }}-from-values\n",
    );
    let built = succeed(tazuna(&tools, root).args(["build", "-e", "production", "-o", "json"]));
    let list: Value = serde_json::from_slice(&built.stdout).unwrap();
    let config = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "ConfigMap")
        .expect("the chart's ConfigMap");
    assert_eq!(
        config["data"]["message"],
        "production-from-values",
        "{}",
        text(&built)
    );

    // Read that way, the helmfile is still checked as a file: a key that runs
    // a program is refused, naming the file and line.
    write(
        root,
        "helmfile/cert-manager/helmfile.yaml.gotmpl",
        &format!("{undeclared}helmBinary: /bin/sh\n"),
    );
    let refused = output(tazuna(&tools, root).args(["build", "-e", "production"]));
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr)
            .contains("helmfile.yaml.gotmpl` line 7 sets `helmBinary`"),
        "{}",
        text(&refused)
    );
}

#[test]
fn a_private_oci_chart_is_pulled_with_the_users_registry_login() {
    let Some(tools) = Tools::locate() else {
        return;
    };
    let Some(registry) = e2e::registry_with_basic_auth("robot", "s3cret-pass") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    push_chart_with_login(&tools, root, &home, &registry.host());
    let target = format!("oci://{}/charts", registry.host());
    write(
        root,
        "project/tazuna.yaml",
        &format!(
            "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  manifests:
    - name: hello
      type: helm
      namespace: hello
      helm:
        chart: {target}/hello
        version: 0.1.0
        plainHttp: true
"
        ),
    );
    let project = root.join("project");
    let build = |docker_config: &Path| {
        let mut command = tazuna(&tools, &project);
        command
            .env("HOME", &home)
            .env_remove("HELM_REGISTRY_CONFIG")
            .env("DOCKER_CONFIG", docker_config)
            .arg("build");
        output(&mut command)
    };

    // Without a login, the registry refuses helm, and the error says so.
    let anonymous = build(&root.join("no-logins"));
    assert_eq!(anonymous.status.code(), Some(1), "{}", text(&anonymous));
    let stderr = String::from_utf8_lossy(&anonymous.stderr);
    assert!(
        stderr.contains("plugin `helm` failed")
            && (stderr.contains("credential") || stderr.to_lowercase().contains("unauthorized")),
        "{}",
        text(&anonymous)
    );

    // With the login in the docker config ("robot:s3cret-pass"), it pulls.
    write(
        root,
        "docker/config.json",
        &format!(
            r#"{{"auths": {{"{}": {{"auth": "cm9ib3Q6czNjcmV0LXBhc3M="}}}}}}"#,
            registry.host()
        ),
    );
    let logged_in = build(&root.join("docker"));
    assert!(logged_in.status.success(), "{}", text(&logged_in));
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&logged_in.stdout),
        String::from_utf8_lossy(&logged_in.stderr)
    );
    assert!(said.contains("name: hello-hello"), "{}", text(&logged_in));
    assert!(!said.contains("s3cret"), "the password is never shown");
}

#[test]
fn a_chart_from_a_repository_that_needs_a_login_uses_helm_repo_add() {
    let Some(tools) = Tools::locate() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let home = root.join("home");
    let charts = root.join("charts");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&charts).unwrap();
    let helm = |args: &[&str]| helm(&tools, root, &home, args);
    helm(&[
        "package",
        chart().to_str().unwrap(),
        "--destination",
        charts.to_str().unwrap(),
    ]);
    let Some(repository) = common::FileServer::serve(&charts, Some(("robot", "s3cret-pass")))
    else {
        assert!(
            std::env::var_os("TAZUNA_E2E_REQUIRED").is_none(),
            "python3 is needed to serve the chart repository"
        );
        eprintln!("skipped: no python3 to serve a chart repository");
        return;
    };
    helm(&[
        "repo",
        "index",
        charts.to_str().unwrap(),
        "--url",
        &repository.url,
    ]);
    write(
        root,
        "project/tazuna.yaml",
        "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  manifests:
    - name: hello
      type: helm
      namespace: hello
      helm:
        repo: acme
        chart: hello
        version: 0.1.0
",
    );
    let project = root.join("project");
    let build = || {
        let mut command = tazuna(&tools, &project);
        command
            .env("HOME", &home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("HELM_REPOSITORY_CONFIG")
            .env_remove("HELM_REPOSITORY_CACHE")
            .arg("build");
        output(&mut command)
    };

    // Before `helm repo add`, helm does not know `acme`, and says so.
    let unknown = build();
    assert_eq!(unknown.status.code(), Some(1), "{}", text(&unknown));
    assert!(
        text(&unknown).contains("plugin `helm` failed") && text(&unknown).contains("acme"),
        "{}",
        text(&unknown)
    );

    // After it (with the login), the chart renders from the repository.
    helm(&[
        "repo",
        "add",
        "acme",
        &repository.url,
        "--username",
        "robot",
        "--password",
        "s3cret-pass",
    ]);
    let built = build();
    assert!(built.status.success(), "{}", text(&built));
    assert!(
        String::from_utf8_lossy(&built.stdout).contains("name: hello-hello"),
        "{}",
        text(&built)
    );
    assert!(
        !text(&built).contains("s3cret"),
        "the password is never shown"
    );
    // The repository chart is pinned by version and by its archive's digest.
    let lock = std::fs::read_to_string(project.join("tazuna.lock")).unwrap();
    assert!(
        lock.contains("acme/hello") && lock.contains("0.1.0") && lock.contains("sha256:"),
        "{lock}"
    );

    // The same version republished with other content is refused, not rendered.
    let changed = root.join("changed");
    copy_dir(&chart(), &changed.join("hello"));
    write(
        &changed,
        "hello/templates/extra.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: slipped-in\n",
    );
    helm(&[
        "package",
        changed.join("hello").to_str().unwrap(),
        "--destination",
        charts.to_str().unwrap(),
    ]);
    helm(&[
        "repo",
        "index",
        charts.to_str().unwrap(),
        "--url",
        &repository.url,
    ]);
    helm(&["repo", "update", "acme"]);
    let refused = build();
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        text(&refused).contains("now has digest") && !text(&refused).contains("slipped-in"),
        "{}",
        text(&refused)
    );
}

/// A helmfile project whose helmfile is `helmfile`, with the test chart beside it.
fn helmfile_project(helmfile: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    copy_dir(&chart(), &root.join("platform/charts/hello"));
    write(root, "platform/helmfile.yaml.gotmpl", helmfile);
    write(
        root,
        "tazuna.yaml",
        "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  manifests:
    - name: platform
      type: helmfile
      path: platform
      namespace: hello
",
    );
    dir
}

#[test]
fn repository_content_that_would_run_a_program_is_refused_and_runs_nothing() {
    let Some(tools) = Tools::locate() else {
        return;
    };
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("pwned");
    let shell = format!("(list \"-c\" \"echo pwned > {}\")", marker.display());
    let release = "releases:\n  - name: app\n    chart: ./charts/hello\n";
    for (helmfile, said) in [
        (
            format!("{release}    values:\n      - message: {{{{ exec \"/bin/sh\" {shell} }}}}\n"),
            "`platform/helmfile.yaml.gotmpl` line 5 calls `exec`, which runs a program",
        ),
        (
            format!("helmBinary: /bin/sh\n{release}"),
            "`platform/helmfile.yaml.gotmpl` line 1 sets `helmBinary`, which names the program helmfile runs as helm",
        ),
        (
            format!("{release}    hooks:\n      - events: [prepare]\n        command: /bin/sh\n"),
            "line 4 sets `hooks`, which runs programs at helmfile's events",
        ),
    ] {
        let dir = helmfile_project(&helmfile);
        let run = output(tazuna(&tools, dir.path()).arg("build"));
        assert_eq!(run.status.code(), Some(1), "{}", text(&run));
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(
            stderr.contains("manifest `platform`") && stderr.contains(said),
            "{said}: {}",
            text(&run)
        );
        assert!(!marker.exists(), "{said}: a program ran");
    }
    // Spellings a line scan does not see: a base (not itself a helmfile by
    // name) names a program the repository ships, or a flow mapping does. The host names
    // helm itself (`--helm-binary`, which helmfile lets win), so the render
    // uses the real helm; and the hooks the built state shows are refused.
    let program =
        "#!/bin/sh\necho pwned > MARKER\n".replace("MARKER", &marker.display().to_string());
    // `helmfile build` runs `prepare` hooks itself: they meet the jail, which
    // starts nothing the repository ships. Hooks of later events show in the
    // state it builds, and are refused there.
    for (base, said) in [
        ("helmBinary: ./evil\nkustomizeBinary: ./evil\n", None),
        (
            "hooks: [{events: [prepare], command: ./evil, args: []}]\n",
            Some("fork/exec ./evil: permission denied"),
        ),
        (
            "hooks: [{events: [presync], command: ./evil, args: []}]\n",
            Some("the helmfile sets `hooks`, which run programs at helmfile's events"),
        ),
    ] {
        let dir = helmfile_project(&format!("bases: [base.yaml]\n---\n{release}"));
        write(dir.path(), "platform/base.yaml", base);
        write(dir.path(), "platform/evil", &program);
        let evil = dir.path().join("platform/evil");
        let mut mode = std::fs::metadata(&evil).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
        std::fs::set_permissions(&evil, mode).unwrap();
        let run = output(tazuna(&tools, dir.path()).arg("build"));
        match said {
            None => {
                assert_eq!(run.status.code(), Some(0), "{}", text(&run));
                assert!(
                    String::from_utf8_lossy(&run.stdout).contains("kind: ConfigMap"),
                    "{}",
                    text(&run)
                );
            }
            Some(said) => {
                assert_eq!(run.status.code(), Some(1), "{}", text(&run));
                assert!(
                    String::from_utf8_lossy(&run.stderr).contains(said),
                    "{said}: {}",
                    text(&run)
                );
            }
        }
        assert!(!marker.exists(), "{base}: a program ran");
    }

    // A call the check cannot see (the name built at render time by `tpl`)
    // meets the jail, which starts no program but the granted tools.
    let hidden = format!(
        "{release}    values:\n      - message: {{{{ tpl (printf \"{{{{ ex%s \\\"/bin/sh\\\" {} }}}}\" \"ec\") . }}}}\n",
        shell.replace('"', "\\\"")
    );
    let dir = helmfile_project(&hidden);
    let run = output(tazuna(&tools, dir.path()).arg("build"));
    assert_eq!(run.status.code(), Some(1), "{}", text(&run));
    // As root the jail's view has no `/bin/sh` at all; elsewhere Landlock
    // refuses to start it.
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("fork/exec /bin/sh: no such file or directory")
            || stderr.contains("fork/exec /bin/sh: permission denied"),
        "{}",
        text(&run)
    );
    assert!(!marker.exists(), "a program ran through `tpl`");

    // A link in a chart that leads out of it (here to a file elsewhere in the
    // project) leads nowhere: the file is not the manifest's input, so it is
    // not in the view the tool reads.
    let dir = project();
    let root = dir.path();
    write(root, "secret.env", "TOKEN=from-the-repository-root\n");
    std::os::unix::fs::symlink(
        "../../../secret.env",
        root.join("charts/hello/templates/leak.yaml"),
    )
    .unwrap();
    let run = output(tazuna(&tools, root).arg("build"));
    assert_eq!(run.status.code(), Some(1), "{}", text(&run));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("manifest `hello`")
            && stderr.contains(&format!(
                "error evaluating symlink {}/charts/hello/templates/leak.yaml: lstat {}/secret.env: no such file or directory",
                root.display(),
                root.display()
            )),
        "{}",
        text(&run)
    );
    assert!(!stderr.contains("from-the-repository-root"), "{stderr}");
}

#[test]
fn a_tools_deprecation_warnings_reach_the_user() {
    let Some(tools) = Tools::locate() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "base/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
    );
    write(
        dir.path(),
        "base/kustomization.yaml",
        "resources: [cm.yaml]\n",
    );
    write(dir.path(), "kustomization.yaml", "bases: [base]\n");
    write(
        dir.path(),
        "tazuna.yaml",
        "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n    - name: k\n      type: kustomize\n      path: .\n",
    );
    let built = succeed(tazuna(&tools, dir.path()).arg("build"));
    let stderr = String::from_utf8_lossy(&built.stderr);
    assert!(
        stderr.contains(
            "kustomize: # Warning: 'bases' is deprecated. Please use 'resources' instead."
        ),
        "{}",
        text(&built)
    );
}

/// Regression: helmfile's `needs:` was ignored, so two releases went in
/// together (the needing one first, by name) with one wait for both. And
/// then the hooks of every release ran together, the needing release's
/// pre-install hook before the release it needs.
#[test]
fn a_helmfile_release_is_applied_only_after_the_release_it_needs_is_ready() {
    let Some(tools) = Tools::locate() else {
        return;
    };
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let ns = cluster.namespace("needs");
    let namespace = ns.name();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    copy_dir(&chart(), &root.join("platform/charts/hello"));
    // Each release has a pre-install and a post-install hook.
    write(
        root,
        "platform/charts/hello/templates/hooks.yaml",
        "{{- range list \"pre\" \"post\" }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $.Release.Name }}-{{ . }}
  annotations:
    helm.sh/hook: {{ . }}-install
    helm.sh/hook-delete-policy: before-hook-creation
data: {}
{{- end }}
",
    );
    // `app` sorts before `db`, so without `needs:` its objects went first.
    write(
        root,
        "platform/helmfile.yaml",
        &format!(
            "releases:
  - name: app
    namespace: {namespace}
    chart: ./charts/hello
    needs: [{namespace}/db]
    values:
      - replicas: 1
  - name: db
    namespace: {namespace}
    chart: ./charts/hello
    values:
      - replicas: 3
"
        ),
    );
    write(
        root,
        "tazuna.yaml",
        &format!(
            "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  manifests:
    - name: {namespace}
      type: helmfile
      path: platform
      helmfile:
        wait: true
        timeoutSeconds: 120
"
        ),
    );
    let mut apply = tazuna(&tools, root);
    on(&mut apply, cluster);
    let applied = succeed(apply.arg("apply"));

    // The release that needs another is in a later wave; the other in none.
    let app = kubectl_json(
        cluster,
        &["-n", namespace, "get", "deployment", "app-hello"],
    );
    let db = kubectl_json(cluster, &["-n", namespace, "get", "deployment", "db-hello"]);
    assert_eq!(
        app["metadata"]["annotations"]["tazuna.dev/apply-wave"],
        "1",
        "{}",
        text(&applied)
    );
    // Every release carries its wave once one waits for another: hooks go
    // with their wave.
    assert_eq!(db["metadata"]["annotations"]["tazuna.dev/apply-wave"], "0");
    assert_eq!(db["status"]["readyReplicas"], 3);
    assert_eq!(app["status"]["readyReplicas"], 1);

    // The audit log: every write to `db`'s objects, and `db` Available,
    // before the first write to `app`'s.
    let Some(requests) = cluster.requests_from("tazuna/") else {
        return;
    };
    let writes: Vec<_> = requests
        .iter()
        .filter(|e| e.is_write() && e.namespace.as_deref() == Some(namespace))
        .collect();
    let of = |release: &str| {
        writes
            .iter()
            .filter(|e| e.name.as_deref() == Some(&format!("{release}-hello")))
            .map(|e| e.at.as_str())
            .collect::<Vec<_>>()
    };
    let (db_writes, app_writes) = (of("db"), of("app"));
    assert_eq!(
        (db_writes.len(), app_writes.len()),
        (2, 2),
        "a ConfigMap and a Deployment each: {writes:?}"
    );
    // Each release's hooks run with it: db's pre-install hook, db, its
    // post-install hook, then app's pre-install hook, app, its post-install
    // hook.
    let hook = |name: &str| {
        let at = writes
            .iter()
            .filter(|e| e.name.as_deref() == Some(name) && e.verb == "patch")
            .map(|e| e.at.as_str())
            .collect::<Vec<_>>();
        assert_eq!(at.len(), 1, "hook {name} is applied once: {writes:?}");
        at[0]
    };
    let sequence = [
        ("db-pre", hook("db-pre")),
        ("db", *db_writes.iter().min().unwrap()),
        ("db", *db_writes.iter().max().unwrap()),
        ("db-post", hook("db-post")),
        ("app-pre", hook("app-pre")),
        ("app", *app_writes.iter().min().unwrap()),
        ("app", *app_writes.iter().max().unwrap()),
        ("app-post", hook("app-post")),
    ];
    for pair in sequence.windows(2) {
        assert!(
            pair[0].1 <= pair[1].1,
            "{} at {} came after {} at {}: {sequence:?}",
            pair[0].0,
            pair[0].1,
            pair[1].0,
            pair[1].1
        );
    }
    let first_app = app_writes.iter().min().unwrap();
    assert!(
        db_writes.iter().all(|at| at < first_app),
        "`app` was written before `db` was: db {db_writes:?}, app {app_writes:?}"
    );
    let available = db["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Available")
        .expect("db-hello has an Available condition");
    assert_eq!(available["status"], "True");
    // Condition times have seconds only; the audit log's, microseconds.
    let ready_at = available["lastTransitionTime"].as_str().unwrap();
    assert!(
        ready_at[..19] <= first_app[..19],
        "`db` became Available at {ready_at}, after `app`'s first write at {first_app}"
    );
}

#[test]
fn a_helmfile_from_a_registry_finds_no_login_in_its_jail_yet_pulls_a_private_chart() {
    let Some(tools) = Tools::locate() else {
        return;
    };
    let Some(oras) = e2e::tool(Tool::Oras) else {
        return;
    };
    let Some(registry) = e2e::registry_with_basic_auth("robot", "s3cret-pass") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let host = registry.host();
    // The chart, pushed with helm to the registry that needs the login.
    push_chart_with_login(&tools, root, &home, &host);
    // The user's login, where docker and helm keep it ("robot:s3cret-pass").
    let docker = root.join("docker");
    write(
        root,
        "docker/config.json",
        &format!(r#"{{"auths": {{"{host}": {{"auth": "cm9ib3Q6czNjcmV0LXBhc3M="}}}}}}"#),
    );
    // A helmfile that uses the private chart and reads every place a login
    // could be in its jail (the paths its environment names, the usual
    // homes, and the user's own docker config, whose path it guessed), and
    // the run's trust file as a control: what it finds becomes the message.
    let mut places: Vec<String> = [
        "HELM_REGISTRY_CONFIG",
        "HELM_REPOSITORY_CONFIG",
        "DOCKER_CONFIG",
        "REGISTRY_AUTH_FILE",
    ]
    .iter()
    .map(|name| format!("(env \"{name}\")"))
    .collect();
    for path in [
        "/.docker/config.json",
        "/.config/helm/registry/config.json",
        "/.config/containers/auth.json",
    ] {
        places.push(format!("(printf \"%s{path}\" (env \"HOME\"))"));
    }
    places.push(format!("\"{}\"", docker.join("config.json").display()));
    places.push("\"/root/.docker/config.json\"".to_owned());
    let probe = format!(
        "{{{{- $found := \"\" -}}}}\n{{{{- range $p := list {} -}}}}{{{{- if and $p (isFile $p) -}}}}{{{{- $found = printf \"%s|%s\" $found (readFile $p) -}}}}{{{{- end -}}}}{{{{- end -}}}}\n{{{{- $trust := readFile (env \"SSL_CERT_FILE\") | trunc -40 -}}}}\nreleases:\n  - name: bundled\n    chart: oci://{host}/charts/hello\n    version: 0.1.0\n    values:\n      - message: {{{{ printf \"%s trust:%s\" $found $trust | toJson }}}}\n",
        places.join(" ")
    );
    write(root, "push/platform/helmfile.yaml.gotmpl", &probe);
    succeed(
        Command::new(&oras)
            .current_dir(root.join("push"))
            .env("HOME", &home)
            .args([
                "push",
                "--plain-http",
                "-u",
                "robot",
                "-p",
                "s3cret-pass",
                &format!("{host}/platform/helmfile:1.0.0"),
                "platform",
            ]),
    );
    write(
        root,
        "project/tazuna.yaml",
        &format!(
            "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  manifests:
    - name: platform
      type: oras
      oras:
        reference: oci://{host}/platform/helmfile:1.0.0
        target: platform
        plainHTTP: true
        delegate:
          type: helmfile
          helmfile:
            defaultNamespace: platform
            plainHttp: true
"
        ),
    );
    let mut build = tazuna(&tools, &root.join("project"));
    build
        .env("HOME", &home)
        .env_remove("HELM_REGISTRY_CONFIG")
        .env("DOCKER_CONFIG", &docker)
        .args(["build", "-o", "json"]);
    let built = output(&mut build);
    let said = text(&built);
    assert!(built.status.success(), "{said}");
    for secret in ["s3cret", "cm9ib3Q6czNjcmV0"] {
        assert!(
            !said.contains(secret),
            "the login reached the render: {said}"
        );
    }
    let list: Value = serde_json::from_slice(&built.stdout).unwrap();
    let message = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "ConfigMap")
        .map(|o| o["data"]["message"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_else(|| panic!("the private chart rendered: {said}"));
    // The probe read what its jail holds (the trust file), and no login.
    assert!(message.contains("END CERTIFICATE"), "{message}");
    assert!(
        message.starts_with(" trust:"),
        "a login file was found: {message}"
    );

    // Content that starts the granted helm at render time (a name built
    // through `tpl`, which no text check sees) can ask a named host with a
    // login for a token. The forwarder signs a pull; a push scope, in any
    // spelling a token server decodes, never leaves Tazuna. A listener on
    // a named port with a login stands in for the token server.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let heard = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let log = heard.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let log = log.clone();
            std::thread::spawn(move || {
                use std::io::{Read as _, Write as _};
                let mut stream = stream;
                let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                    head.push(byte[0]);
                }
                log.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&head));
                let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
            });
        }
    });
    write(
        root,
        "docker/config.json",
        &format!(
            r#"{{"auths": {{"{host}": {{"auth": "cm9ib3Q6czNjcmV0LXBhc3M="}}, "127.0.0.1:{port}": {{"auth": "cm9ib3Q6czNjcmV0LXBhc3M="}}}}}}"#
        ),
    );
    edit(
        &root.join("project/tazuna.yaml"),
        "            plainHttp: true\n",
        &format!(
            "            plainHttp: true\n            vars:\n              tokens: {{from: static, static: \"http://127.0.0.1:{port}/token\"}}\n"
        ),
    );
    for (version, query) in [
        ("2.0.0", "service=r&scope=repository:charts/hello:pull"),
        (
            "3.0.0",
            "service=r&scope=repository:charts/hello:pull&sc%%6fpe=repository:charts/hello:push",
        ),
        ("4.0.0", "service=r&scope=repository:charts/hello:push"),
    ] {
        write(
            root,
            "push/platform/helmfile.yaml.gotmpl",
            &format!(
                "{{{{- $t := tpl (printf \"{{{{ %s%s \\\"helm\\\" (list \\\"pull\\\" \\\"http://127.0.0.1:{port}/token?{query}\\\" \\\"-d\\\" (env \\\"TMPDIR\\\")) }}}}\" \"ex\" \"ec\") . -}}}}\nreleases:\n  - name: bundled\n    chart: oci://{host}/charts/hello\n    version: 0.1.0\n"
            ),
        );
        succeed(
            Command::new(&oras)
                .current_dir(root.join("push"))
                .env("HOME", &home)
                .args([
                    "push",
                    "--plain-http",
                    "-u",
                    "robot",
                    "-p",
                    "s3cret-pass",
                    &format!("{host}/platform/helmfile:{version}"),
                    "platform",
                ]),
        );
        let current = std::fs::read_to_string(root.join("project/tazuna.yaml")).unwrap();
        let previous = current
            .split("platform/helmfile:")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap()
            .to_owned();
        edit(
            &root.join("project/tazuna.yaml"),
            &format!("helmfile:{previous}"),
            &format!("helmfile:{version}"),
        );
        heard.lock().unwrap().clear();
        let mut build = tazuna(&tools, &root.join("project"));
        build
            .env("HOME", &home)
            .env_remove("HELM_REGISTRY_CONFIG")
            .env("DOCKER_CONFIG", &docker)
            .arg("build");
        let built = output(&mut build);
        let said = text(&built);
        assert!(!said.contains("s3cret"), "{version}: {said}");
        let heard = heard.lock().unwrap().clone();
        if version == "2.0.0" {
            // The control: the channel works, and the pull is signed.
            assert!(
                heard.contains("scope=repository:charts/hello:pull")
                    && heard.contains("Authorization: Basic cm9ib3Q6czNjcmV0LXBhc3M="),
                "{version}: the listener heard {heard:?}; {said}"
            );
        } else {
            assert!(
                !heard.contains("/token"),
                "{version}: a push scope reached the token server: {heard:?}"
            );
            assert!(said.contains("403 Refused by Tazuna"), "{version}: {said}");
        }
    }
}

/// `git` in `dir`, with no user or system config, failing the test on error.
fn git(dir: &Path, args: &[&str]) {
    let mut command = Command::new("git");
    command
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .args(args);
    succeed(&mut command);
}

/// A bare repository `<served>/<name>.git` holding the files of `work`,
/// committed and tagged `v1`.
fn publish(work: &Path, served: &Path, name: &str) {
    if !work.join(".git").exists() {
        git(work, &["init", "-q", "-b", "main"]);
        git(work, &["add", "-A"]);
    }
    git(work, &["commit", "-q", "-m", "v1"]);
    git(work, &["tag", "v1"]);
    let bare = served.join(format!("{name}.git"));
    git(
        served,
        &[
            "clone",
            "-q",
            "--bare",
            work.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
}

/// Remote sources through the jail, the way Go Tazuna's users write them: a
/// kustomize remote base in both spellings (`http://…//path?ref=v1` and
/// `git::http://…`) from a git server over HTTP, a helmfile release from a
/// chart repository in its `repositories:`, and a helm chart from a
/// repository. Each host is named in `tazuna.yaml` (`remotes:`, or the
/// `repo` URL itself); the tools reach those and nothing else. A base or a
/// repository on a host the file does not name fails with the fix, and that
/// host sees no request; a submodule that would run a command (`ext::`) or
/// read the host's disk (`file://`) runs and reads nothing.
#[test]
fn remote_bases_and_repositories_are_reached_only_on_the_hosts_the_file_names() {
    let Some(tools) = Tools::locate() else {
        return;
    };
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // The git server: a base with a ConfigMap, tagged v1.
    let served = root.join("served");
    let other = root.join("other");
    std::fs::create_dir_all(&served).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    let base = root.join("work/base");
    write(
        &base,
        "app/kustomization.yaml",
        "resources: [configmap.yaml]\n",
    );
    write(
        &base,
        "app/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: remote-base\ndata:\n  from: git\n",
    );
    publish(&base, &served, "base");
    let (Some(forge), Some(unnamed_forge)) = (
        common::GitServer::serve(&served),
        common::GitServer::serve(&other),
    ) else {
        assert!(
            std::env::var_os("TAZUNA_E2E_REQUIRED").is_none(),
            "python3 and git are needed to serve git over HTTP"
        );
        eprintln!("skipped: no python3 or git to serve git over HTTP");
        return;
    };
    let copy = other.join("base.git");
    git(
        &other,
        &[
            "clone",
            "-q",
            "--bare",
            served.join("base.git").to_str().unwrap(),
            copy.to_str().unwrap(),
        ],
    );
    // The chart repository.
    let charts = root.join("charts");
    std::fs::create_dir_all(&charts).unwrap();
    let helm = |args: &[&str]| {
        helm(&tools, root, root, args);
    };
    helm(&[
        "package",
        chart().to_str().unwrap(),
        "--destination",
        charts.to_str().unwrap(),
    ]);
    let Some(repository) = common::FileServer::serve(&charts, None) else {
        panic!("python3 serves the git repositories, so it serves charts");
    };
    helm(&[
        "repo",
        "index",
        charts.to_str().unwrap(),
        "--url",
        &repository.url,
    ]);

    let ns = cluster.namespace("remotes");
    let namespace = ns.name();
    let project = root.join("project");
    let git_url = &forge.url;
    let charts_url = &repository.url;
    write(
        &project,
        "plain/kustomization.yaml",
        &format!("resources:\n  - {git_url}/base.git//app?ref=v1\nnamePrefix: plain-\n"),
    );
    write(
        &project,
        "getter/kustomization.yaml",
        &format!("resources:\n  - git::{git_url}/base.git//app?ref=v1\nnamePrefix: getter-\n"),
    );
    write(
        &project,
        "platform/helmfile.yaml",
        &format!(
            "repositories:\n  - name: local\n    url: {charts_url}\nreleases:\n  - name: fromrepo\n    namespace: {namespace}\n    chart: local/hello\n    version: 0.1.0\n"
        ),
    );
    let tazuna_yaml = format!(
        "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  manifests:
    - name: {namespace}-plain
      type: kustomize
      path: plain
      namespace: {namespace}
      tags: [plain]
      kustomize:
        remotes: [{git_url}]
    - name: {namespace}-getter
      type: kustomize
      path: getter
      namespace: {namespace}
      kustomize:
        remotes: [{git_url}/base.git]
    - name: {namespace}-helmfile
      type: helmfile
      path: platform
      namespace: {namespace}
      tags: [charts]
      helmfile:
        remotes: [{charts_url}]
    - name: {namespace}-helm
      type: helm
      namespace: {namespace}
      helm:
        repo: {charts_url}
        chart: hello
        version: 0.1.0
"
    );
    write(&project, "tazuna.yaml", &tazuna_yaml);
    let mut apply = tazuna(&tools, &project);
    on(&mut apply, cluster);
    let applied = output(apply.arg("apply"));
    assert!(applied.status.success(), "{}", text(&applied));
    // The cluster, through kubectl: each remote source's objects.
    for name in ["plain-remote-base", "getter-remote-base", "fromrepo-hello"] {
        let found = kubectl_json(cluster, &["-n", namespace, "get", "configmap", name]);
        assert_eq!(found["metadata"]["name"], name, "{found}");
    }
    let from_helm = format!("{namespace}-helm-hello");
    let found = kubectl_json(cluster, &["-n", namespace, "get", "deployment", &from_helm]);
    assert_eq!(found["metadata"]["name"], from_helm.as_str(), "{found}");
    assert!(
        forge.requests().contains("git-upload-pack"),
        "kustomize fetched through git's smart HTTP: {}",
        forge.requests()
    );

    // A base on a host the file does not name: refused with the fix, and the
    // host sees nothing. The same for a helmfile's repository.
    let unnamed = &unnamed_forge.url;
    write(
        &project,
        "plain/kustomization.yaml",
        &format!("resources:\n  - {unnamed}/base.git//app?ref=v1\nnamePrefix: plain-\n"),
    );
    let mut build = tazuna(&tools, &project);
    let refused = output(build.args(["build", "-t", "plain"]));
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    let host = unnamed.trim_start_matches("http://");
    assert!(
        text(&refused).contains(&format!("add `http://{host}` to `kustomize.remotes`")),
        "{}",
        text(&refused)
    );
    assert_eq!(unnamed_forge.requests(), "", "the unnamed host was reached");
    write(
        &project,
        "tazuna.yaml",
        &tazuna_yaml.replace(&format!("remotes: [{charts_url}]"), "remotes: []"),
    );
    let mut build = tazuna(&tools, &project);
    let refused = output(build.args(["build", "-t", "charts"]));
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        text(&refused).contains("helmfile.remotes"),
        "{}",
        text(&refused)
    );

    // A named repository whose submodules would run a command or read the
    // host's disk: git speaks HTTP(S) alone, so neither happens.
    let marker = root.join("ran-a-command");
    let evil = root.join("work/evil");
    write(
        &evil,
        "app/kustomization.yaml",
        "resources: [configmap.yaml]\n",
    );
    write(
        &evil,
        "app/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: evil\n",
    );
    write(
        &evil,
        ".gitmodules",
        &format!(
            "[submodule \"run\"]\n\tpath = run\n\turl = ext::sh -c touch% {}\n[submodule \"disk\"]\n\tpath = disk\n\turl = file:///etc\n",
            marker.display()
        ),
    );
    git(&evil, &["init", "-q", "-b", "main"]);
    git(&evil, &["add", "app", ".gitmodules"]);
    for path in ["run", "disk"] {
        git(
            &evil,
            &[
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("160000,{},{path}", "1".repeat(40)),
            ],
        );
    }
    publish(&evil, &served, "evil");
    write(&project, "tazuna.yaml", &tazuna_yaml);
    write(
        &project,
        "plain/kustomization.yaml",
        &format!("resources:\n  - {git_url}/evil.git//app?ref=v1\n"),
    );
    let mut build = tazuna(&tools, &project);
    let held = output(build.args(["build", "-t", "plain"]));
    assert_eq!(held.status.code(), Some(1), "{}", text(&held));
    assert!(
        text(&held).contains("transport 'ext' not allowed")
            || text(&held).contains("transport 'file' not allowed"),
        "{}",
        text(&held)
    );
    assert!(!marker.exists(), "a submodule ran a command");
}
