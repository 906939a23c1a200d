//! End-to-end: Go Tazuna's commands and flags, spelled as Go Tazuna's users
//! and scripts spell them (`--file-path`, `check --fix`, `apply --sync`,
//! `state sync`, `destroy --force` with `TAZUNA_DESTROY_EXECUTABLE`,
//! destroy by tags, `chart list --check-latest`, `secret-to-genesissecret`,
//! `--offline`), against a real harness cluster and checked with kubectl
//! and the API server's audit log.

mod common;

use std::path::Path;
use std::process::Command;

use common::{exists, output, tazuna_on as tazuna, text, write};
use tazuna_tests::assets::Tool;
use tazuna_tests::e2e::{self, TestCluster};

/// Writes of ConfigMaps in `default` by Tazuna, from the audit log.
fn configmap_writes(cluster: &TestCluster) -> Option<usize> {
    let requests = cluster.requests_from("tazuna/")?;
    Some(
        requests
            .iter()
            .filter(|r| r.is_write())
            .filter(|r| r.resource == "configmaps" && r.namespace.as_deref() == Some("default"))
            .count(),
    )
}

fn configmap(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  from: go\n")
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn go_tazuna_commands_and_flags_work_as_go_users_run_them() {
    let Some(tools) = e2e::tools(&[Tool::Kustomize]) else {
        return;
    };
    let Some(cluster) = TestCluster::start("go-surface") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "tazuna.yaml",
        r#"apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  manifests:
    - name: base config
      type: manifests
      path: ./base
      namespace: default
      tags: [base]
    - name: app
      type: kustomize
      path: ./app
      namespace: default
      dependsOn: [ "base config" ]
      tags: [app]
"#,
    );
    write(
        root,
        "base/configmaps.yaml",
        &format!("{}---\n{}", configmap("base-a"), configmap("base-b")),
    );
    write(root, "app/kustomization.yaml", "resources:\n  - app.yaml\n");
    write(root, "app/app.yaml", &configmap("app-a"));
    let tazuna = || {
        let mut command = tazuna(&cluster, root);
        command
            .env_remove("TAZUNA_DESTROY_EXECUTABLE")
            .env("TAZUNA_TOOL_KUSTOMIZE", tools.path(Tool::Kustomize));
        command
    };

    // A name with spaces: `check` refuses it, with its place in the file.
    let checked = output(tazuna().args(["--file-path", "tazuna.yaml", "check"]));
    assert_eq!(checked.status.code(), Some(1), "{}", text(&checked));
    let said = stderr(&checked);
    assert!(
        said.contains("manifest name `base config` has spaces")
            && said.contains("tazuna.yaml:5:13")
            && said.contains("`--fix`"),
        "{said}"
    );

    // apply takes it with a warning, as Go Tazuna did.
    let applied = output(tazuna().args(["--file-path", "tazuna.yaml", "apply"]));
    assert!(applied.status.success(), "{}", text(&applied));
    assert!(
        stderr(&applied).contains("warning: manifest name `base config` has spaces"),
        "{}",
        text(&applied)
    );
    for name in ["base-a", "base-b", "app-a"] {
        assert!(
            exists(&cluster, &["configmap", name, "-n", "default"]),
            "{name}"
        );
    }

    // A no-op sends nothing, and neither does Go's differential `--sync`
    // (with `--prune` and `--atomic`, as Go accepts them); `--resend` sends
    // every object again.
    let before = configmap_writes(&cluster);
    let again = output(tazuna().arg("apply"));
    assert!(again.status.success(), "{}", text(&again));
    let synced = output(tazuna().args(["apply", "--sync", "--prune", "--atomic"]));
    assert!(synced.status.success(), "{}", text(&synced));
    let after_noop = configmap_writes(&cluster);
    assert_eq!(
        before, after_noop,
        "a no-op apply and `--sync` write nothing"
    );
    let resent = output(tazuna().args(["apply", "--resend"]));
    assert!(resent.status.success(), "{}", text(&resent));
    if let (Some(before), Some(after)) = (after_noop, configmap_writes(&cluster)) {
        assert_eq!(
            after - before,
            3,
            "--resend sends each of the three objects once"
        );
    }
    // `--sync` applies what changed in the file since the state, and leaves
    // live drift of what did not; a plain apply takes the drift back.
    let drifted = output(cluster.kubectl().args([
        "patch",
        "configmap",
        "base-a",
        "-n",
        "default",
        "--type=merge",
        "-p",
        r#"{"data":{"from":"by-hand"}}"#,
    ]));
    assert!(drifted.status.success(), "{}", text(&drifted));
    let from = |name: &str| {
        common::kubectl_json(&cluster, &["get", "configmap", name, "-n", "default"])["data"]["from"]
            .clone()
    };
    let synced = output(tazuna().args(["apply", "--sync"]));
    assert!(synced.status.success(), "{}", text(&synced));
    assert_eq!(from("base-a"), "by-hand", "{}", text(&synced));
    let applied = output(tazuna().arg("apply"));
    assert!(applied.status.success(), "{}", text(&applied));
    assert_eq!(from("base-a"), "go", "{}", text(&applied));

    // `state sync`: an object deleted by hand leaves the state.
    let deleted =
        output(
            cluster
                .kubectl()
                .args(["delete", "configmap", "base-b", "-n", "default"]),
        );
    assert!(deleted.status.success(), "{}", text(&deleted));
    let dry = output(tazuna().args(["state", "sync", "--dry-run"]));
    assert!(dry.status.success(), "{}", text(&dry));
    assert!(
        stdout(&dry).contains("base-b") && stdout(&dry).contains("would drop 1 object"),
        "{}",
        text(&dry)
    );
    let listed = output(tazuna().args(["state", "list"]));
    assert!(
        stdout(&listed).contains("base-b"),
        "--dry-run wrote nothing: {}",
        text(&listed)
    );
    let sync = output(tazuna().args(["state", "sync", "-o", "json"]));
    assert!(sync.status.success(), "{}", text(&sync));
    let report: serde_json::Value = serde_json::from_slice(&sync.stdout).unwrap();
    assert_eq!(
        report["dropped"].as_array().map(Vec::len),
        Some(1),
        "{report}"
    );
    assert_eq!(report["dropped"][0]["name"], "base-b");
    let listed = output(tazuna().args(["state", "list"]));
    assert!(listed.status.success(), "{}", text(&listed));
    assert!(!stdout(&listed).contains("base-b"), "{}", text(&listed));
    assert!(stdout(&listed).contains("base-a"), "{}", text(&listed));
    let plan = output(tazuna().args(["plan", "--detailed-exitcode"]));
    assert_eq!(
        plan.status.code(),
        Some(2),
        "base-b is to create: {}",
        text(&plan)
    );
    let restored = output(tazuna().arg("apply"));
    assert!(restored.status.success(), "{}", text(&restored));
    assert!(exists(&cluster, &["configmap", "base-b", "-n", "default"]));
    let quiet = output(tazuna().args(["state", "sync"]));
    assert!(
        stdout(&quiet).contains("state is in sync"),
        "{}",
        text(&quiet)
    );

    // `check --fix` renames the manifest and the `dependsOn` naming it.
    let fixed = output(tazuna().args(["check", "--fix"]));
    assert!(fixed.status.success(), "{}", text(&fixed));
    assert!(
        stderr(&fixed).contains("fixed 2 names in"),
        "{}",
        text(&fixed)
    );
    let file = std::fs::read_to_string(root.join("tazuna.yaml")).unwrap();
    assert!(
        file.contains("    - name: base-config\n") && file.contains("dependsOn: [ base-config ]"),
        "{file}"
    );
    let checked = output(tazuna().arg("check"));
    assert!(checked.status.success(), "{}", text(&checked));
    let renamed = output(tazuna().arg("apply"));
    assert!(renamed.status.success(), "{}", text(&renamed));
    assert!(!stderr(&renamed).contains("warning:"), "{}", text(&renamed));
    for name in ["base-a", "base-b", "app-a"] {
        assert!(
            exists(&cluster, &["configmap", name, "-n", "default"]),
            "{name}"
        );
    }

    // Go Tazuna's destroy guard.
    let deletes = |cluster: &TestCluster| {
        cluster.requests_from("tazuna/").map(|requests| {
            requests
                .iter()
                .filter(|r| r.is_write() && r.verb == "delete" && r.resource == "configmaps")
                .filter(|r| r.namespace.as_deref() == Some("default"))
                .count()
        })
    };
    let deletes_before = deletes(&cluster);
    let guarded = output(
        tazuna()
            .env("TAZUNA_DESTROY_EXECUTABLE", "false")
            .args(["destroy", "--yes"]),
    );
    assert_eq!(guarded.status.code(), Some(1), "{}", text(&guarded));
    assert!(
        stderr(&guarded).contains("destroy is forbidden here"),
        "{}",
        text(&guarded)
    );
    let forced = output(tazuna().args(["destroy", "--force"]));
    assert_eq!(forced.status.code(), Some(1), "{}", text(&forced));
    assert!(
        stderr(&forced).contains("TAZUNA_DESTROY_EXECUTABLE=true"),
        "{}",
        text(&forced)
    );
    assert_eq!(
        deletes(&cluster),
        deletes_before,
        "a refused destroy deletes nothing"
    );
    assert!(exists(&cluster, &["configmap", "app-a", "-n", "default"]));

    // Destroy by tags, then the rest, with Go's spelling.
    let by_tag = output(
        tazuna()
            .env("TAZUNA_DESTROY_EXECUTABLE", "true")
            .args(["destroy", "--force", "-t", "app"]),
    );
    assert!(by_tag.status.success(), "{}", text(&by_tag));
    assert!(!exists(&cluster, &["configmap", "app-a", "-n", "default"]));
    assert!(exists(&cluster, &["configmap", "base-a", "-n", "default"]));
    let all = output(
        tazuna()
            .env("TAZUNA_DESTROY_EXECUTABLE", "true")
            .args(["destroy", "--force"]),
    );
    assert!(all.status.success(), "{}", text(&all));
    for name in ["base-a", "base-b"] {
        assert!(
            !exists(&cluster, &["configmap", name, "-n", "default"]),
            "{name}"
        );
    }
}

/// `tazuna` in `dir`, with no cluster.
fn offline_tazuna(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tazuna"));
    command
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("TAZUNA_CACHE_DIR", dir.join(".cache"))
        .env_remove("TAZUNA_FILE")
        .env_remove("TAZUNA_ENVIRONMENT");
    command
}

#[test]
fn chart_list_reads_helm_manifests_and_helmfile_releases_and_checks_the_repository() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "repo/index.yaml",
        "apiVersion: v1\nentries:\n  hello:\n    - { name: hello, version: 1.0.0 }\n    - { name: hello, version: 1.2.0 }\n    - { name: hello, version: 2.0.0-rc.1 }\n  world:\n    - { name: world, version: 0.3.0 }\n",
    );
    let Some(server) = common::FileServer::serve(&root.join("repo"), None) else {
        eprintln!("skipped: python3 is not installed");
        return;
    };
    write(
        root,
        "tazuna.yaml",
        &format!(
            r#"apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  manifests:
    - name: hello
      type: helm
      helm:
        chart: hello
        repo: {url}
        version: 1.0.0
    - name: platform
      type: helmfile
      path: ./platform
"#,
            url = server.url
        ),
    );
    write(
        root,
        "platform/helmfile.yaml",
        &format!(
            "repositories:\n  - name: local\n    url: {url}\nreleases:\n  - name: world\n    namespace: world\n    chart: local/world\n    version: 0.3.0\n    values:\n      - replicas: {{{{ .Values.replicas | default 1 }}}}\n",
            url = server.url
        ),
    );

    let listed = output(offline_tazuna(root).args(["chart", "list"]));
    assert!(listed.status.success(), "{}", text(&listed));
    let table = stdout(&listed);
    assert!(table.starts_with("MANIFEST"), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("hello") && l.contains("1.0.0")),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("platform") && l.contains("world") && l.contains("0.3.0")),
        "{table}"
    );
    assert!(!table.contains("LATEST"), "{table}");

    let checked = output(offline_tazuna(root).args(["chart", "list", "--check-latest"]));
    assert_eq!(
        checked.status.code(),
        Some(2),
        "hello is outdated: {}",
        text(&checked)
    );
    let table = stdout(&checked);
    assert!(
        table.contains("1.2.0 (newer)"),
        "the newest stable, not 2.0.0-rc.1: {table}"
    );
    assert!(!table.contains("2.0.0-rc.1"), "{table}");

    let json = output(offline_tazuna(root).args(["chart", "list", "--check-latest", "-o", "json"]));
    let rows: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(rows[0]["latest"], "1.2.0", "{rows}");
    assert_eq!(rows[0]["outdated"], true);
    assert_eq!(rows[1]["release"], "world");
    assert_eq!(rows[1]["repo"], server.url.as_str());
    assert_eq!(rows[1]["outdated"], false);

    drop(server);
    let unreachable = output(offline_tazuna(root).args(["chart", "list", "--check-latest"]));
    assert_eq!(unreachable.status.code(), Some(0), "{}", text(&unreachable));
    assert!(
        stdout(&unreachable).contains("error: chart `hello`: cannot read"),
        "{}",
        text(&unreachable)
    );
}

#[test]
fn secret_to_genesissecret_keeps_the_shape_and_never_a_value() {
    use base64::Engine as _;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let password = "go-s3cret-password-value";
    let encoded = base64::engine::general_purpose::STANDARD.encode(password);
    let username = "go-admin-user-value";
    write(
        root,
        "secret.yaml",
        &format!(
            r#"apiVersion: v1
kind: Secret
metadata:
  name: cloud
  namespace: platform
  labels: {{ team: platform }}
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{{"data":{{"password":"{encoded}"}},"stringData":{{"username":"{username}"}}}}'
    owner: platform-team
type: kubernetes.io/basic-auth
data:
  password: {encoded}
stringData:
  username: {username}
"#
        ),
    );
    let out = output(offline_tazuna(root).args([
        "secret-to-genesissecret",
        "secret.yaml",
        "--provider",
        "ops",
        "--uri",
        "op://my.1password.com/Platform/cloud",
    ]));
    assert!(out.status.success(), "{}", text(&out));
    let all = text(&out);
    for value in [password, encoded.as_str(), username] {
        assert!(!all.contains(value), "a value leaked: {all}");
    }
    let genesis: serde_yaml::Value = serde_yaml::from_slice(&out.stdout).unwrap();
    assert_eq!(genesis["apiVersion"], "tazuna.pepabo.com/v1");
    assert_eq!(genesis["kind"], "GenesisSecret");
    assert_eq!(genesis["spec"]["provider"], "ops");
    let generate = &genesis["spec"]["secrets"][0];
    assert_eq!(generate["uri"], "op://my.1password.com/Platform/cloud");
    assert_eq!(generate["items"]["password"]["mapTo"], "password");
    assert_eq!(generate["items"]["username"]["mapTo"], "username");
    let secret = &genesis["spec"]["outputs"][0]["kubernetesSecret"];
    assert_eq!(secret["namespace"], "platform");
    assert_eq!(secret["name"], "cloud");
    assert_eq!(secret["labels"]["team"], "platform");
    assert_eq!(secret["annotations"]["owner"], "platform-team");
    assert!(
        secret["annotations"]
            .get("kubectl.kubernetes.io/last-applied-configuration")
            .is_none()
    );
    assert_eq!(secret["type"], "kubernetes.io/basic-auth");
    assert!(
        stderr(&out).contains("store these items in provider `ops`")
            && stderr(&out).contains("password, username"),
        "{all}"
    );

    // Inputs built to exhaust memory or never end are refused before they are read whole.
    std::fs::write(root.join("huge.yaml"), vec![b'#'; 5 * 1024 * 1024]).unwrap();
    let huge = output(offline_tazuna(root).args(["secret-to-genesissecret", "huge.yaml"]));
    assert_eq!(huge.status.code(), Some(1), "{}", text(&huge));
    assert!(
        stderr(&huge).contains("larger than 4 MiB"),
        "{}",
        text(&huge)
    );
    let endless = output(offline_tazuna(root).args(["secret-to-genesissecret", "/dev/zero"]));
    assert_eq!(endless.status.code(), Some(1), "{}", text(&endless));
    assert!(
        stderr(&endless).contains("not a regular file"),
        "{}",
        text(&endless)
    );

    // Anything but a Secret is refused, naming the document.
    write(
        root,
        "other.yaml",
        &format!(
            "{}---\n{}",
            "apiVersion: v1\nkind: Secret\nmetadata: {name: a}\ndata: {k: dg==}\n",
            configmap("b")
        ),
    );
    let refused = output(offline_tazuna(root).args(["secret-to-genesissecret", "other.yaml"]));
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        stderr(&refused).contains("`other.yaml`: document 2")
            && stderr(&refused).contains("not a `v1 Secret`"),
        "{}",
        text(&refused)
    );
}

#[test]
fn offline_renders_neither_pull_a_plugin_nor_reach_a_chart_repository() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "tazuna.yaml",
        "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  plugins:\n    - name: remote\n      source: oci://127.0.0.1:9/plugins/remote:1.0.0\n  manifests:\n    - name: local\n      type: manifests\n      path: ./local\n    - name: far\n      type: remote\n",
    );
    write(root, "local/cm.yaml", &configmap("local"));
    let offline = output(offline_tazuna(root).args(["build", "--offline", "--no-cache"]));
    assert_eq!(offline.status.code(), Some(1), "{}", text(&offline));
    assert!(
        stderr(&offline).contains("plugin `remote` is needed, and `--offline` forbids pulling it")
            && stderr(&offline).contains("no pin"),
        "{}",
        text(&offline)
    );
    assert!(!root.join(".cache").exists(), "--no-cache wrote no cache");
    // Local manifests need no network: they render offline.
    write(
        root,
        "tazuna.yaml",
        "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n    - name: local\n      type: manifests\n      path: ./local\n",
    );
    let local = output(offline_tazuna(root).args(["build", "--offline"]));
    assert!(local.status.success(), "{}", text(&local));
    assert!(stdout(&local).contains("name: local"), "{}", text(&local));

    // A probe: a chart from a repository the config names, reachable on
    // loopback. Online, helm fetches it; `--offline`, the tool gets no
    // network and the manifest fails.
    let Some(tools) = e2e::tools(&[Tool::Helm]) else {
        return;
    };
    let helm = |args: &[&str]| {
        let out = output(
            Command::new(tools.path(Tool::Helm))
                .current_dir(root)
                .env("HOME", root.join("home"))
                .args(args),
        );
        assert!(out.status.success(), "helm {args:?}: {}", text(&out));
    };
    std::fs::create_dir_all(root.join("repo")).unwrap();
    let chart = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/charts/hello");
    helm(&["package", chart.to_str().unwrap(), "-d", "repo"]);
    helm(&["repo", "index", "repo"]);
    let Some(server) = common::FileServer::serve(&root.join("repo"), None) else {
        return;
    };
    write(
        root,
        "tazuna.yaml",
        &format!(
            "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n    - name: hello\n      type: helm\n      namespace: hello\n      helm:\n        chart: hello\n        repo: {}\n        version: 0.1.0\n",
            server.url
        ),
    );
    let with_helm = |command: &mut Command| {
        command.env("TAZUNA_TOOL_HELM", tools.path(Tool::Helm));
    };
    let mut online = offline_tazuna(root);
    with_helm(&mut online);
    let online = output(online.arg("build"));
    assert!(online.status.success(), "{}", text(&online));
    assert!(
        stdout(&online).contains("kind: Deployment"),
        "{}",
        text(&online)
    );
    let mut cut = offline_tazuna(root);
    with_helm(&mut cut);
    let cut = output(cut.args(["build", "--offline"]));
    assert_eq!(cut.status.code(), Some(1), "{}", text(&cut));
    assert!(stderr(&cut).contains("manifest `hello`"), "{}", text(&cut));
    assert!(!stdout(&cut).contains("kind: Deployment"), "{}", text(&cut));
}

#[test]
fn a_hint_file_gives_helmfile_its_defaults_and_refuses_broken_rules() {
    let Some(tools) = e2e::tools(&[Tool::Helm, Tool::Helmfile]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    common::copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/charts/hello"),
        &root.join("charts/hello"),
    );
    write(
        root,
        "platform/helmfile.yaml.gotmpl",
        "releases:\n  - name: hello\n    namespace: hello\n    chart: ../charts/hello\n    values:\n      - replicas: {{ .Values.replicas }}\n        message: {{ .Values.greeting }}\n",
    );
    write(
        root,
        "platform/tazuna.hint.yaml",
        "apiVersion: tazuna.pepabo.com/v1\nkind: TazunaHint\nspec:\n  vars:\n    replicas:\n      type: int\n      default: 3\n    greeting:\n      type: string\n      required: true\n      description: what the ConfigMap says\n",
    );
    let file = |vars: &str| {
        format!(
            "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n    - name: platform\n      type: helmfile\n      path: ./platform\n      helmfile:\n        vars:\n{vars}"
        )
    };
    let tazuna = || {
        let mut command = offline_tazuna(root);
        command
            .env("TAZUNA_TOOL_HELM", tools.path(Tool::Helm))
            .env("TAZUNA_TOOL_HELMFILE", tools.path(Tool::Helmfile));
        command
    };

    write(
        root,
        "tazuna.yaml",
        &file("          greeting: { from: static, static: hello-from-the-hint-test }\n"),
    );
    let built = output(tazuna().arg("build"));
    assert!(built.status.success(), "{}", text(&built));
    let objects: Vec<serde_yaml::Value> = serde_yaml::Deserializer::from_slice(&built.stdout)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    let deployment = objects
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("the chart's Deployment");
    assert_eq!(
        deployment["spec"]["replicas"], 3,
        "the hint's default reached helmfile"
    );
    assert!(
        stdout(&built).contains("hello-from-the-hint-test"),
        "{}",
        text(&built)
    );

    // A var the manifest gives wins over the default.
    write(
        root,
        "tazuna.yaml",
        &file(
            "          greeting: { from: static, static: hi }\n          replicas: { from: static, static: 1 }\n",
        ),
    );
    let built = output(tazuna().arg("build"));
    assert!(built.status.success(), "{}", text(&built));
    assert!(stdout(&built).contains("replicas: 1"), "{}", text(&built));

    // A required var left out: check names it, the manifest and the hint file.
    write(
        root,
        "tazuna.yaml",
        &file("          replicas: { from: static, static: 1 }\n"),
    );
    let checked = output(tazuna().arg("check"));
    assert_eq!(checked.status.code(), Some(1), "{}", text(&checked));
    let said = stderr(&checked);
    assert!(
        said.contains("helmfile var `greeting` (what the ConfigMap says) is required")
            && said.contains("platform/tazuna.hint.yaml")
            && said.contains("tazuna.yaml:9:9"),
        "{said}"
    );

    // A value of the wrong type, at its line and column.
    write(
        root,
        "tazuna.yaml",
        &file(
            "          greeting: { from: static, static: hi }\n          replicas: { from: static, static: three }\n",
        ),
    );
    let checked = output(tazuna().arg("check"));
    assert_eq!(checked.status.code(), Some(1), "{}", text(&checked));
    assert!(
        stderr(&checked).contains("helmfile var `replicas` must be an int")
            && stderr(&checked).contains("tazuna.yaml:11:21"),
        "{}",
        text(&checked)
    );
    let built = output(tazuna().arg("build"));
    assert_eq!(
        built.status.code(),
        Some(1),
        "build refuses it too: {}",
        text(&built)
    );
}

#[test]
fn apply_atomic_undoes_a_failed_run_objects_and_state() {
    let Some(cluster) = TestCluster::start("go-atomic") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "tazuna.yaml",
        "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n    - name: base\n      type: manifests\n      path: ./base\n      namespace: default\n    - name: app\n      type: manifests\n      path: ./app\n      namespace: default\n      dependsOn: [base]\n",
    );
    let versioned = |name: &str, version: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  version: \"{version}\"\n"
        )
    };
    write(root, "base/keep.yaml", &versioned("keep", "1"));
    write(root, "app/app.yaml", &versioned("app", "1"));
    let first = output(tazuna(&cluster, root).arg("apply"));
    assert!(first.status.success(), "{}", text(&first));
    let state_of = |manifest: &str| {
        let out = output(cluster.kubectl().args([
            "-n",
            "tazuna",
            "get",
            "configmap",
            &format!("tazuna-manifest-{manifest}"),
            "-o",
            "jsonpath={.data.state\\.json}",
        ]));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let base_state = state_of("base");
    assert!(base_state.contains("keep"), "{base_state}");
    let version = |name: &str| {
        common::kubectl_json(&cluster, &["-n", "default", "get", "configmap", name])["data"]
            ["version"]
            .clone()
    };

    // The next change: base changes one object and adds another, then app
    // fails (the API server refuses a name).
    write(
        root,
        "base/keep.yaml",
        &format!("{}---\n{}", versioned("keep", "2"), versioned("added", "2")),
    );
    write(root, "app/app.yaml", &versioned("Not_A_Name", "2"));
    let atomic = output(tazuna(&cluster, root).args(["apply", "--atomic"]));
    assert_eq!(atomic.status.code(), Some(1), "{}", text(&atomic));
    assert!(
        stderr(&atomic).contains(
            "rolled back (--atomic): 1 created object(s) deleted, 1 changed object(s) restored"
        ),
        "{}",
        text(&atomic)
    );
    assert_eq!(version("keep"), "1", "the changed object is as it was");
    assert!(
        !exists(&cluster, &["configmap", "added", "-n", "default"]),
        "the created object is gone"
    );
    assert_eq!(state_of("base"), base_state, "the state is as it was");
    let diff = output(tazuna(&cluster, root).args(["state", "diff", "--detailed-exitcode"]));
    assert_eq!(
        diff.status.code(),
        Some(2),
        "the change is still to apply: {}",
        text(&diff)
    );

    // Without --atomic, what applied before the failure stays (and is recorded).
    let partial = output(tazuna(&cluster, root).arg("apply"));
    assert_eq!(partial.status.code(), Some(1), "{}", text(&partial));
    assert_eq!(version("keep"), "2", "{}", text(&partial));
    assert!(exists(&cluster, &["configmap", "added", "-n", "default"]));
    assert_ne!(state_of("base"), base_state);

    // Deletions cannot be undone: --atomic refuses --prune, but in Go's
    // spelling `--sync --prune --atomic`, which keeps them.
    let refused = output(tazuna(&cluster, root).args(["apply", "--atomic", "--prune"]));
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        text(&refused).contains("`--sync --prune --atomic`"),
        "{}",
        text(&refused)
    );
}

/// An OTLP/HTTP endpoint the collector exports to (`encoding: json`): every
/// request body it receives, parsed.
struct TraceSink {
    port: u16,
    bodies: std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
}

impl TraceSink {
    fn start() -> Self {
        use std::io::{BufRead as _, BufReader, Read as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = bodies.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some((name, value)) = line.split_once(':')
                        && name.eq_ignore_ascii_case("content-length")
                    {
                        length = value.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                if reader.read_exact(&mut body).is_ok()
                    && let Ok(value) = serde_json::from_slice(&body)
                {
                    kept.lock().unwrap().push(value);
                }
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
                );
            }
        });
        Self { port, bodies }
    }

    /// Every span received so far, with its resource's `service.name`.
    fn spans(&self) -> Vec<Span> {
        let mut spans = Vec::new();
        for body in self.bodies.lock().unwrap().iter() {
            for resource in body["resourceSpans"].as_array().into_iter().flatten() {
                let service = attribute(&resource["resource"]["attributes"], "service.name");
                for scope in resource["scopeSpans"].as_array().into_iter().flatten() {
                    for span in scope["spans"].as_array().into_iter().flatten() {
                        spans.push(Span {
                            service: service.clone().unwrap_or_default(),
                            trace: span["traceId"].as_str().unwrap_or_default().to_owned(),
                            id: span["spanId"].as_str().unwrap_or_default().to_owned(),
                            parent: span["parentSpanId"].as_str().unwrap_or_default().to_owned(),
                            name: span["name"].as_str().unwrap_or_default().to_owned(),
                            status: span["status"]["code"].as_i64().unwrap_or(0),
                            attributes: span["attributes"].clone(),
                        });
                    }
                }
            }
        }
        spans
    }

    /// The spans of the one trace whose root is named `root`, once its root
    /// has arrived (at most 30 s).
    fn trace(&self, root: &str, service: &str) -> Vec<Span> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let spans = self.spans();
            if let Some(found) = spans
                .iter()
                .find(|s| s.name == root && s.parent.is_empty() && s.service == service)
            {
                let trace = found.trace.clone();
                // The batch that holds the root is the last one sent.
                return spans.into_iter().filter(|s| s.trace == trace).collect();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no trace `{root}` of `{service}` reached the collector's sink; spans seen: {:?}",
                spans.iter().map(|s| &s.name).collect::<Vec<_>>()
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }
}

/// One span as OTLP/JSON carries it.
#[derive(Debug, Clone)]
struct Span {
    service: String,
    trace: String,
    id: String,
    parent: String,
    name: String,
    /// 0 unset, 1 ok, 2 error.
    status: i64,
    attributes: serde_json::Value,
}

impl Span {
    fn attribute(&self, key: &str) -> Option<String> {
        attribute(&self.attributes, key)
    }
}

/// An attribute's value as text (OTLP/JSON writes integers as strings).
fn attribute(attributes: &serde_json::Value, key: &str) -> Option<String> {
    attributes
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| {
            let value = &a["value"];
            ["stringValue", "intValue", "boolValue", "doubleValue"]
                .iter()
                .find_map(|kind| value.get(*kind))
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .unwrap_or_default()
        })
}

/// The spans of `spans` named `name` whose parent is `parent`.
fn children<'a>(spans: &'a [Span], parent: &Span, name: &str) -> Vec<&'a Span> {
    spans
        .iter()
        .filter(|s| s.parent == parent.id && s.name == name)
        .collect()
}

/// A real OpenTelemetry Collector (built from the Go module proxy by
/// install.sh) receiving OTLP on gRPC and HTTP and exporting to `sink`.
struct Collector {
    child: std::process::Child,
    grpc: u16,
    http: u16,
    _dir: tempfile::TempDir,
}

impl Collector {
    fn start(binary: &Path, sink: &TraceSink) -> Self {
        let free = || {
            std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port()
        };
        let (grpc, http) = (free(), free());
        let dir = tempfile::tempdir().unwrap();
        let config = format!(
            "receivers:\n  otlp:\n    protocols:\n      grpc: {{ endpoint: 127.0.0.1:{grpc} }}\n      http: {{ endpoint: 127.0.0.1:{http} }}\nexporters:\n  otlphttp:\n    endpoint: http://127.0.0.1:{sink}\n    encoding: json\n    compression: none\n    retry_on_failure: {{ enabled: false }}\nservice:\n  telemetry:\n    metrics: {{ level: none }}\n  pipelines:\n    traces: {{ receivers: [otlp], exporters: [otlphttp] }}\n",
            sink = sink.port
        );
        write(dir.path(), "config.yaml", &config);
        let log = std::fs::File::create(dir.path().join("collector.log")).unwrap();
        let child = Command::new(binary)
            .arg("--config")
            .arg(dir.path().join("config.yaml"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let collector = Self {
            child,
            grpc,
            http,
            _dir: dir,
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", http)).is_err()
            || std::net::TcpStream::connect(("127.0.0.1", grpc)).is_err()
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the collector did not start: {}",
                collector.log()
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        collector
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("collector.log")).unwrap_or_default()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn otlp_traces_reach_a_real_collector_with_the_run_tree_over_grpc_and_http() {
    let Some(tools) = e2e::tools(&[Tool::Kustomize, Tool::Otelcol]) else {
        return;
    };
    let Some(cluster) = TestCluster::start("traces") else {
        return;
    };
    let sink = TraceSink::start();
    let collector = Collector::start(&tools.path(Tool::Otelcol), &sink);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "tazuna.yaml",
        r#"apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  manifests:
    - name: config
      type: manifests
      path: ./config
      namespace: default
    - name: app
      type: kustomize
      path: ./app
      namespace: default
      dependsOn: [config]
      wait: { enabled: true, timeoutSeconds: 90 }
"#,
    );
    write(
        root,
        "config/configmaps.yaml",
        &format!("{}---\n{}", configmap("traced-a"), configmap("traced-b")),
    );
    write(root, "app/kustomization.yaml", "resources:\n  - app.yaml\n");
    write(
        root,
        "app/app.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: traced\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: traced}\n  template:\n    metadata:\n      labels: {app: traced}\n    spec:\n      containers:\n        - name: app\n          image: registry.k8s.io/pause:3.10\n",
    );
    let tazuna = || {
        let mut command = tazuna(&cluster, root);
        command.env("TAZUNA_TOOL_KUSTOMIZE", tools.path(Tool::Kustomize));
        command
    };

    // Go Tazuna's flags: a host and port, in plain text, over gRPC.
    let applied = output(tazuna().args([
        "apply",
        "--otlp-endpoint",
        &format!("127.0.0.1:{}", collector.grpc),
        "--otlp-insecure",
    ]));
    assert!(
        applied.status.success(),
        "{}\ncollector: {}",
        text(&applied),
        collector.log()
    );
    assert!(exists(&cluster, &["deployment", "traced", "-n", "default"]));
    // Spans are the collector's, not stderr's.
    assert!(
        !stderr(&applied).contains("tazuna_trace") && !stderr(&applied).contains("plugin call"),
        "{}",
        text(&applied)
    );

    let spans = sink.trace("tazuna apply", "tazuna");
    let one = |name: &str| -> &Span {
        let found: Vec<&Span> = spans.iter().filter(|s| s.name == name).collect();
        assert_eq!(found.len(), 1, "one `{name}` span in {spans:#?}");
        found[0]
    };
    let command = one("tazuna apply");
    assert_eq!(command.status, 1, "the command ended ok: {command:?}");
    assert_eq!(
        command.attribute("tazuna.command").as_deref(),
        Some("apply")
    );
    let run = one("run");
    assert_eq!(run.parent, command.id, "the run is the command's child");
    assert_eq!(run.attribute("tazuna.verb").as_deref(), Some("apply"));
    assert_eq!(
        run.attribute("tazuna.context").as_deref(),
        Some(cluster.context())
    );
    assert_eq!(run.attribute("tazuna.manifests").as_deref(), Some("2"));
    assert_eq!(
        run.attribute("tazuna.objects.created").as_deref(),
        Some("3")
    );
    assert_eq!(run.status, 1, "{run:?}");

    // render → render manifest → plugin call → tool run (kustomize's only).
    let render = one("render");
    assert_eq!(render.parent, run.id);
    let rendered = children(&spans, render, "render manifest");
    let mut names: Vec<String> = rendered
        .iter()
        .filter_map(|s| s.attribute("tazuna.manifest"))
        .collect();
    names.sort();
    names.dedup();
    assert_eq!(
        names,
        ["app", "config"],
        "each manifest renders under the render: {spans:#?}"
    );
    let app_render = rendered
        .iter()
        .find(|s| s.attribute("tazuna.manifest").as_deref() == Some("app"))
        .unwrap();
    assert_eq!(app_render.attribute("tazuna.objects").as_deref(), Some("1"));
    let calls = children(&spans, app_render, "plugin call");
    assert_eq!(calls.len(), 1, "{spans:#?}");
    assert_eq!(
        calls[0].attribute("tazuna.plugin").as_deref(),
        Some("kustomize")
    );
    assert_eq!(
        calls[0].attribute("tazuna.function").as_deref(),
        Some("render")
    );
    let tools_run = children(&spans, calls[0], "tool run");
    assert_eq!(tools_run.len(), 1, "{spans:#?}");
    assert_eq!(
        tools_run[0].attribute("tazuna.tool").as_deref(),
        Some("kustomize")
    );
    assert_eq!(
        tools_run[0].attribute("tazuna.exit_code").as_deref(),
        Some("0")
    );

    // manifest → apply phase, and the Deployment's wait.
    let manifests = children(&spans, run, "manifest");
    assert_eq!(manifests.len(), 2, "{spans:#?}");
    let app = manifests
        .iter()
        .find(|s| s.attribute("tazuna.manifest").as_deref() == Some("app"))
        .unwrap();
    assert_eq!(
        app.attribute("tazuna.objects.created").as_deref(),
        Some("1")
    );
    assert_eq!(app.status, 1);
    let phases = children(&spans, app, "apply phase");
    assert_eq!(phases.len(), 1, "{spans:#?}");
    assert_eq!(
        phases[0].attribute("tazuna.phase").as_deref(),
        Some("definitions and objects")
    );
    let waits = children(&spans, app, "wait");
    assert_eq!(waits.len(), 1, "{spans:#?}");
    assert_eq!(waits[0].attribute("tazuna.objects").as_deref(), Some("1"));
    assert_eq!(
        waits[0].status, 1,
        "the Deployment became ready: {:?}",
        waits[0]
    );
    let config = manifests
        .iter()
        .find(|s| s.attribute("tazuna.manifest").as_deref() == Some("config"))
        .unwrap();
    assert_eq!(
        config.attribute("tazuna.objects.created").as_deref(),
        Some("2")
    );

    // The standard variables, over HTTP: a no-op apply, as its own service.
    let again = output(
        tazuna()
            .arg("apply")
            .env(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                format!("http://127.0.0.1:{}", collector.http),
            )
            .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
            .env("OTEL_SERVICE_NAME", "platform-bootstrap"),
    );
    assert!(again.status.success(), "{}", text(&again));
    let spans = sink.trace("tazuna apply", "platform-bootstrap");
    let run = spans.iter().find(|s| s.name == "run").expect("a run span");
    assert_eq!(
        run.attribute("tazuna.objects.unchanged").as_deref(),
        Some("3"),
        "{run:?}"
    );
    assert_eq!(
        run.attribute("tazuna.objects.created").as_deref(),
        Some("0"),
        "{run:?}"
    );
    assert!(spans.iter().all(|s| s.service == "platform-bootstrap"));

    // A failing run says so on its spans: a manifest whose path is gone.
    std::fs::remove_dir_all(root.join("config")).unwrap();
    let failed = output(tazuna().args([
        "plan",
        "--otlp-endpoint",
        &format!("http://127.0.0.1:{}", collector.grpc),
    ]));
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed));
    let spans = sink.trace("tazuna plan", "tazuna");
    let command = spans.iter().find(|s| s.name == "tazuna plan").unwrap();
    assert_eq!(
        command.status, 2,
        "the failed command is an error: {command:?}"
    );
    let broken = spans
        .iter()
        .find(|s| {
            s.name == "render manifest"
                && s.attribute("tazuna.manifest").as_deref() == Some("config")
        })
        .expect("the failed render has its span");
    assert_eq!(broken.status, 2, "{broken:?}");
}

/// A Deployment as Go Tazuna's e2e fixtures deploy them.
fn go_deployment(name: &str, namespace: &str, replicas: u32) -> String {
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      containers:\n        - name: nginx\n          image: nginx:1.27\n"
    )
}

/// Go Tazuna's own end-to-end assertions (its `test/e2e`: each command, its
/// exit code and what its output must hold), replayed against this binary
/// on a harness cluster, with fixtures written to match Go's (its fixture
/// files are not served here). Every command is spelled as the Go suite
/// spells it, `-f <file>` included.
#[test]
fn go_tazunas_e2e_assertions_hold() {
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let Some(kustomize_tool) = e2e::tool(Tool::Kustomize) else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let fixture = |name: &str, manifests: &str| {
        write(
            root,
            &format!("{name}/tazuna.yaml"),
            &format!(
                "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n{manifests}"
            ),
        );
        format!("{name}/tazuna.yaml")
    };
    let go = |args: &[&str], env: &[(&str, &str)]| {
        let mut command = tazuna(cluster, root);
        command
            .env("TAZUNA_TOOL_KUSTOMIZE", &kustomize_tool)
            .args(args);
        for (key, value) in env {
            command.env(key, value);
        }
        output(&mut command)
    };
    let deployment =
        |namespace: &str, name: &str| exists(cluster, &["-n", namespace, "deployment", name]);
    // As Go's suite waits for a deletion (`Eventually`, 60 s).
    let gone = |namespace: &str, name: &str| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while deployment(namespace, name) {
            if std::time::Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
        true
    };

    // sanity_test.go: `--help` names the tool.
    let help = go(&["--help"], &[]);
    assert!(
        help.status.success() && stdout(&help).contains("tazuna"),
        "{}",
        text(&help)
    );

    // build_test.go and check_test.go on kustomize-minimal.
    write(
        root,
        "kustomize-minimal/base/kustomization.yaml",
        "resources:\n  - deployment.yaml\n",
    );
    write(
        root,
        "kustomize-minimal/base/deployment.yaml",
        &go_deployment("nginx", "tazuna-e2e-kustomize", 1),
    );
    let kustomize = fixture(
        "kustomize-minimal",
        "    - name: kustomize-minimal-nginx\n      type: kustomize\n      path: ./base\n",
    );
    let built = go(&["build", "-f", &kustomize], &[]);
    assert!(built.status.success(), "{}", text(&built));
    for wanted in [
        "kind: Deployment",
        "name: nginx",
        "namespace: tazuna-e2e-kustomize",
    ] {
        assert!(
            stdout(&built).contains(wanted),
            "{wanted}: {}",
            text(&built)
        );
    }
    let checked = go(&["check", "-f", &kustomize], &[]);
    assert!(
        checked.status.success() && stdout(&checked).contains("ok"),
        "{}",
        text(&checked)
    );
    // check-invalid: a manifest without a name fails the check.
    write(
        root,
        "check-invalid/base/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
    );
    let invalid = fixture(
        "check-invalid",
        "    - type: manifests\n      path: ./base\n",
    );
    let refused = go(&["check", "-f", &invalid], &[]);
    assert!(!refused.status.success(), "{}", text(&refused));
    assert!(
        stderr(&refused).contains("manifest has no `name`")
            && stderr(&refused).contains("`name: manifests-base`"),
        "{}",
        text(&refused)
    );
    // `check --fix` names it as Go's does (`<type>-<dir>`), keeping comments.
    let with_comment = std::fs::read_to_string(root.join(&invalid))
        .unwrap()
        .replace("  manifests:\n", "  manifests:\n    # the base layer\n");
    std::fs::write(root.join(&invalid), &with_comment).unwrap();
    let fixed = go(&["check", "--fix", "-f", &invalid], &[]);
    assert!(fixed.status.success(), "{}", text(&fixed));
    let rewritten = std::fs::read_to_string(root.join(&invalid)).unwrap();
    assert!(
        rewritten
            .contains("    # the base layer\n    - name: manifests-base\n      type: manifests\n"),
        "{rewritten}"
    );
    let checked = go(&["check", "-f", &invalid], &[]);
    assert!(checked.status.success(), "{}", text(&checked));

    // kustomize_test.go: apply, and the Deployment appears.
    let applied = go(&["apply", "-f", &kustomize], &[]);
    assert!(applied.status.success(), "{}", text(&applied));
    assert!(deployment("tazuna-e2e-kustomize", "nginx"));

    // parallel_test.go (run from the fixture's directory, `-f tazuna.yaml`).
    write(
        root,
        "parallel/a/d.yaml",
        &go_deployment("nginx-a", "tazuna-e2e-parallel", 1),
    );
    write(
        root,
        "parallel/b/d.yaml",
        &go_deployment("nginx-b", "tazuna-e2e-parallel", 1).replacen(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: tazuna-e2e-parallel\n---\n",
            "",
            1,
        ),
    );
    fixture(
        "parallel",
        "    - name: parallel-group\n      type: parallel\n      parallel:\n        children:\n          - name: parallel-a\n            type: manifests\n            path: ./a\n          - name: parallel-b\n            type: manifests\n            path: ./b\n            dependsOn: [parallel-a]\n",
    );
    let mut in_fixture = tazuna(cluster, &root.join("parallel"));
    let parallel = output(in_fixture.args(["apply", "-f", "tazuna.yaml"]));
    assert!(parallel.status.success(), "{}", text(&parallel));
    assert!(
        deployment("tazuna-e2e-parallel", "nginx-a")
            && deployment("tazuna-e2e-parallel", "nginx-b")
    );

    // tags_filter_test.go and destroy_tags_test.go.
    // The namespace is made for both (`createNamespace`), owned by neither.
    let no_namespace = |name: &str| {
        go_deployment(name, "tazuna-e2e-tags", 1).replacen(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: tazuna-e2e-tags\n---\n",
            "",
            1,
        )
    };
    write(root, "tags/alpha/d.yaml", &no_namespace("nginx-alpha"));
    write(root, "tags/beta/d.yaml", &no_namespace("nginx-beta"));
    let tags = fixture(
        "tags",
        "    - name: tags-alpha\n      type: manifests\n      path: ./alpha\n      tags: [alpha]\n      namespace: tazuna-e2e-tags\n      createNamespace: true\n    - name: tags-beta\n      type: manifests\n      path: ./beta\n      tags: [beta]\n      namespace: tazuna-e2e-tags\n      createNamespace: true\n",
    );
    let alpha = go(&["apply", "-f", &tags, "--tags", "alpha"], &[]);
    assert!(alpha.status.success(), "{}", text(&alpha));
    assert!(
        deployment("tazuna-e2e-tags", "nginx-alpha")
            && !deployment("tazuna-e2e-tags", "nginx-beta")
    );
    let both = go(&["apply", "-f", &tags], &[]);
    assert!(both.status.success(), "{}", text(&both));
    let guard = [("TAZUNA_DESTROY_EXECUTABLE", "true")];
    let destroyed = go(
        &["destroy", "-f", &tags, "--force", "--tags", "alpha"],
        &guard,
    );
    assert!(destroyed.status.success(), "{}", text(&destroyed));
    assert!(
        gone("tazuna-e2e-tags", "nginx-alpha"),
        "{}",
        text(&destroyed)
    );
    assert!(
        deployment("tazuna-e2e-tags", "nginx-beta"),
        "{}",
        text(&destroyed)
    );

    // destroy_test.go: the whole file, with Go's guard.
    let destroyed = go(&["destroy", "-f", &kustomize, "--force"], &guard);
    assert!(destroyed.status.success(), "{}", text(&destroyed));
    assert!(
        gone("tazuna-e2e-kustomize", "nginx"),
        "{}",
        text(&destroyed)
    );

    // state_test.go.
    write(
        root,
        "state/base/d.yaml",
        &go_deployment("nginx", "tazuna-e2e-state", 1),
    );
    let state = fixture(
        "state",
        "    - name: state-minimal-nginx\n      type: manifests\n      path: ./base\n",
    );
    let synced = go(&["apply", "--sync", "-f", &state], &[]);
    assert!(synced.status.success(), "{}", text(&synced));
    assert!(deployment("tazuna-e2e-state", "nginx"));
    let listed = go(&["state", "list", "-f", &state], &[]);
    assert!(listed.status.success(), "{}", text(&listed));
    for wanted in [
        "state-minimal-nginx",
        "apps/v1/Deployment",
        "tazuna-e2e-state",
        "nginx",
    ] {
        assert!(
            stdout(&listed).contains(wanted),
            "{wanted}: {}",
            text(&listed)
        );
    }
    let diff = go(&["state", "diff", "-f", &state], &[]);
    assert!(
        diff.status.success() && stdout(&diff).contains("No changes detected."),
        "{}",
        text(&diff)
    );
    let again = go(&["apply", "--sync", "-f", &state], &[]);
    assert!(again.status.success(), "{}", text(&again));
    assert!(
        !stderr(&again).contains("synced resource"),
        "{}",
        text(&again)
    );
    write(
        root,
        "state/base/d.yaml",
        &go_deployment("nginx", "tazuna-e2e-state", 2),
    );
    let modified = go(&["state", "diff", "-f", &state], &[]);
    assert!(modified.status.success(), "{}", text(&modified));
    assert!(
        stdout(&modified).contains("state-minimal-nginx") && stdout(&modified).contains("modified"),
        "{}",
        text(&modified)
    );
    let cleaned = go(&["destroy", "-f", &state, "--yes"], &[]);
    assert!(cleaned.status.success(), "{}", text(&cleaned));
    let cleaned = go(&["destroy", "-f", &tags, "--yes"], &[]);
    assert!(cleaned.status.success(), "{}", text(&cleaned));
    let cleaned = go(&["destroy", "-f", "parallel/tazuna.yaml", "--yes"], &[]);
    assert!(cleaned.status.success(), "{}", text(&cleaned));
}
