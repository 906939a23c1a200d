//! End-to-end: `tazuna plugin new` makes a source plugin and a secret
//! resolver from the SDK's template; cargo tests and builds them into real
//! wasm components; Tazuna loads both from `file://` and applies what they
//! give to a harness cluster, where kubectl finds it.
//!
//! A plugin author has no checkout: a crate made without `--sdk-path`, in a
//! directory outside the checkout, builds with the SDK `plugin new` vendored
//! from the binary, and renders.
//!
//! The new crates build in the plugins workspace's target directory, with its
//! Cargo.lock, so the SDK's dependencies (compiled for `cargo xtask
//! build-plugins`) are reused.

mod common;

use std::path::Path;
use std::process::Command;

use common::{on_cluster, output, root, succeed, text, write};
use serde_json::Value;
use tazuna_tests::e2e::TestCluster;

const SECRET: &str = "e2e-template-resolver-0c3d";

fn cargo(dir: &Path, args: &[&str]) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = output(
        Command::new(cargo)
            .current_dir(dir)
            .env("CARGO_TARGET_DIR", root().join("plugins/target"))
            .args(args),
    );
    assert!(
        out.status.success(),
        "cargo {args:?} in {}: {}",
        dir.display(),
        text(&out)
    );
}

fn host_target() -> String {
    let out = succeed(Command::new("rustc").arg("-vV"));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_owned()
}

/// The acceptance of issue 13: `plugin new` with the binary alone, then
/// `cargo build --release --target wasm32-wasip2`, and the component renders.
#[test]
fn a_new_plugin_builds_outside_a_checkout_with_the_sdk_from_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().canonicalize().unwrap();
    assert!(
        !project.starts_with(root()),
        "{} must be outside the checkout",
        project.display()
    );
    let tazuna = || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tazuna"));
        command
            .current_dir(&project)
            .env("NO_COLOR", "1")
            .env("TAZUNA_CACHE_DIR", project.join(".cache"));
        command
    };
    let made = succeed(tazuna().args(["plugin", "new", "hello"]));
    assert!(
        String::from_utf8_lossy(&made.stdout).contains("vendor/tazuna-sdk/"),
        "{}",
        text(&made)
    );
    let crate_dir = project.join("hello");
    let manifest = std::fs::read_to_string(crate_dir.join("Cargo.toml")).unwrap();
    assert!(
        !manifest.contains(&root().to_string_lossy().into_owned()) && !manifest.contains("git"),
        "nothing points back at a checkout or a repository: {manifest}"
    );
    // What was vendored is the SDK of this checkout, WIT included, and its
    // manifest inherits nothing from a workspace the author does not have.
    let vendored = crate_dir.join("vendor/tazuna-sdk");
    for file in [
        "src/lib.rs",
        "src/source.rs",
        "src/types.rs",
        "wit/plugin.wit",
    ] {
        let original = if file.starts_with("wit/") {
            root().join(file)
        } else {
            root().join("sdk").join(file)
        };
        assert_eq!(
            std::fs::read_to_string(vendored.join(file)).unwrap_or_default(),
            std::fs::read_to_string(original).unwrap(),
            "vendor/tazuna-sdk/{file}"
        );
    }
    let sdk_manifest = std::fs::read_to_string(vendored.join("Cargo.toml")).unwrap();
    assert!(!sdk_manifest.contains("workspace"), "{sdk_manifest}");

    // The plugins workspace's lock keeps dependency versions, and so their
    // compiled artifacts in the shared target directory, the same.
    std::fs::copy(
        root().join("plugins/Cargo.lock"),
        crate_dir.join("Cargo.lock"),
    )
    .unwrap();
    cargo(
        &crate_dir,
        &["build", "--release", "--target", "wasm32-wasip2"],
    );
    // Cargo built against the vendored copy: a path package, from no registry.
    let lock = std::fs::read_to_string(crate_dir.join("Cargo.lock")).unwrap();
    let sdk_entry = lock
        .split("[[package]]")
        .find(|entry| entry.contains("name = \"tazuna-sdk\""))
        .unwrap_or_else(|| panic!("Cargo.lock has tazuna-sdk: {lock}"));
    assert!(!sdk_entry.contains("source ="), "{sdk_entry}");
    let wasm = root().join("plugins/target/wasm32-wasip2/release/tazuna_plugin_hello.wasm");

    write(
        &project,
        "tazuna.yaml",
        &format!(
            "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  plugins:
    - name: hello
      source: file://{}
  manifests:
    - name: settings
      type: hello
      namespace: default
      hello:
        data:
          LOG_LEVEL: debug
",
            wasm.display()
        ),
    );
    let listed = succeed(tazuna().args(["plugin", "list", "-o", "json"]));
    let list: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .any(|row| row["name"] == "hello"
                && row["world"] == "tazuna:plugin/source-plugin@0.1.1"
                && row["source"] == format!("file://{}", wasm.display())),
        "{list:#}"
    );
    let built = succeed(tazuna().args(["build", "-o", "json"]));
    let rendered: Value = serde_json::from_slice(&built.stdout).unwrap();
    let items = rendered["items"].as_array().unwrap();
    assert!(
        items.iter().any(|item| item["kind"] == "ConfigMap"
            && item["metadata"]["name"] == "settings"
            && item["data"]["LOG_LEVEL"] == "debug"),
        "{rendered:#}"
    );
}

#[test]
fn new_plugins_from_the_template_build_load_and_apply() {
    let Some(cluster) = TestCluster::start("template") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path();
    let sdk = root().join("sdk");
    let tazuna = || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tazuna"));
        command
            .current_dir(project)
            .env("NO_COLOR", "1")
            .env("TAZUNA_CACHE_DIR", project.join(".cache"));
        command
    };

    // A used name and a bad one are refused before anything is written.
    let bad = output(tazuna().args(["plugin", "new", "Bad_Name"]));
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad));
    assert!(
        text(&bad).contains("`Bad_Name` is not one"),
        "{}",
        text(&bad)
    );
    assert!(!project.join("Bad_Name").exists());

    let made = succeed(
        tazuna()
            .args(["plugin", "new", "plugins/greeter", "--sdk-path"])
            .arg(&sdk),
    );
    assert!(
        String::from_utf8_lossy(&made.stdout).contains("created source plugin `greeter`"),
        "{}",
        text(&made)
    );
    succeed(
        tazuna()
            .args([
                "plugin",
                "new",
                "plugins/kvstore",
                "--resolver",
                "--sdk-path",
            ])
            .arg(&sdk),
    );

    // Each crate's own test passes on the host, and it builds into a component.
    let target = host_target();
    for name in ["greeter", "kvstore"] {
        let crate_dir = project.join("plugins").join(name);
        // The plugins workspace's lock keeps dependency versions, and so its
        // compiled dependencies, the same.
        std::fs::copy(
            root().join("plugins/Cargo.lock"),
            crate_dir.join("Cargo.lock"),
        )
        .unwrap();
        cargo(&crate_dir, &["test", "--target", &target]);
        cargo(
            &crate_dir,
            &["build", "--release", "--target", "wasm32-wasip2"],
        );
    }
    let wasm = |name: &str| {
        root()
            .join("plugins/target/wasm32-wasip2/release")
            .join(format!("tazuna_plugin_{name}.wasm"))
    };
    assert!(wasm("greeter").is_file() && wasm("kvstore").is_file());

    write(
        project,
        "secrets.json",
        &format!("{{\"db-password\": \"{SECRET}\"}}"),
    );
    write(
        project,
        "app/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\nstringData:\n  password: ref+team:db-password\n",
    );
    write(
        project,
        "tazuna.yaml",
        &format!(
            "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  plugins:
    - name: greeter
      source: file://{}
    - name: kvstore
      source: file://{}
  providers:
    - name: team
      type: kvstore
      kvstore:
        file: secrets.json
  manifests:
    - name: settings
      type: greeter
      namespace: default
      greeter:
        data:
          LOG_LEVEL: debug
    - name: app
      type: manifests
      path: app/secret.yaml
      namespace: default
",
            wasm("greeter").display(),
            wasm("kvstore").display()
        ),
    );

    // Tazuna sees each in its world.
    let listed = succeed(tazuna().args(["plugin", "list", "-o", "json"]));
    let list: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let world = |name: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|row| row["name"] == name)
            .map(|row| row["world"].as_str().unwrap_or_default().to_owned())
    };
    assert_eq!(
        world("greeter").as_deref(),
        Some("tazuna:plugin/source-plugin@0.1.1")
    );
    assert_eq!(
        world("kvstore").as_deref(),
        Some("tazuna:plugin/secret-resolver-plugin@0.1.1")
    );

    // A resolver that no provider names yet is still listed, in its world.
    let config = std::fs::read_to_string(project.join("tazuna.yaml")).unwrap();
    let without_provider = config.replace(
        "  providers:\n    - name: team\n      type: kvstore\n      kvstore:\n        file: secrets.json\n",
        "",
    );
    assert_ne!(without_provider, config, "the provider was taken out");
    std::fs::write(project.join("tazuna.yaml"), without_provider).unwrap();
    let listed = succeed(tazuna().args(["plugin", "list", "-o", "json"]));
    let unused: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert!(
        unused
            .as_array()
            .unwrap()
            .iter()
            .any(|row| row["name"] == "kvstore"
                && row["world"] == "tazuna:plugin/secret-resolver-plugin@0.1.1"),
        "{unused:#}"
    );
    std::fs::write(project.join("tazuna.yaml"), &config).unwrap();

    // The template's validation reaches `tazuna check`.
    std::fs::write(
        project.join("tazuna.yaml"),
        config.replace("LOG_LEVEL: debug", "\"not ok\": debug"),
    )
    .unwrap();
    let checked = output(tazuna().arg("check"));
    assert_eq!(checked.status.code(), Some(1), "{}", text(&checked));
    assert!(
        text(&checked).contains("`not ok` is not a valid ConfigMap key"),
        "{}",
        text(&checked)
    );
    // A source plugin named as a provider's type is refused by `check`.
    std::fs::write(
        project.join("tazuna.yaml"),
        config.replace(
            "      type: kvstore\n      kvstore:\n        file: secrets.json",
            "      type: greeter",
        ),
    )
    .unwrap();
    let checked = output(tazuna().arg("check"));
    assert_eq!(checked.status.code(), Some(1), "{}", text(&checked));
    assert!(
        text(&checked).contains("hint: the component must target the WIT world `tazuna:plugin/secret-resolver-plugin@0.1.1`"),
        "{}",
        text(&checked)
    );
    std::fs::write(project.join("tazuna.yaml"), config).unwrap();
    assert!(output(tazuna().arg("check")).status.success());

    // Applied to a cluster, kubectl sees what each gave.
    let applied = succeed(on_cluster(&mut tazuna(), &cluster).arg("apply"));
    assert!(!text(&applied).contains(SECRET));
    let live = succeed(cluster.kubectl().args([
        "-n",
        "default",
        "get",
        "configmap",
        "settings",
        "-o",
        "jsonpath={.data.LOG_LEVEL}",
    ]));
    assert_eq!(String::from_utf8_lossy(&live.stdout), "debug");
    let password = succeed(cluster.kubectl().args([
        "-n",
        "default",
        "get",
        "secret",
        "app",
        "-o",
        "jsonpath={.data.password}",
    ]));
    use base64::Engine as _;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(String::from_utf8_lossy(&password.stdout).trim())
        .unwrap();
    assert_eq!(decoded, SECRET.as_bytes());
}

/// `plugin run` renders one config with a component file, without
/// tazuna.yaml or a cluster, and shows the plugin's diagnostics.
#[test]
fn plugin_run_renders_one_config_with_the_example_plugin() {
    let example = common::plugin("example");
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        output(
            Command::new(env!("CARGO_BIN_EXE_tazuna"))
                .current_dir(dir.path())
                .env("NO_COLOR", "1")
                .env("TAZUNA_CACHE_DIR", dir.path().join(".cache"))
                .args(["plugin", "run"])
                .arg(&example)
                .args(args),
        )
    };

    let yaml = run(&[
        "--config",
        "data: {LOG_LEVEL: debug}",
        "--name",
        "App_Settings",
        "--namespace",
        "demo",
    ]);
    assert!(yaml.status.success(), "{}", text(&yaml));
    let stdout = String::from_utf8_lossy(&yaml.stdout);
    assert!(
        stdout.starts_with("---\n# Source: App_Settings"),
        "{stdout}"
    );
    let object: Value = serde_yaml::from_str(stdout.trim_start_matches("---\n")).unwrap();
    assert_eq!(object["kind"], "ConfigMap");
    assert_eq!(object["metadata"]["name"], "app-settings");
    assert_eq!(object["metadata"]["namespace"], "demo");
    assert_eq!(object["data"]["LOG_LEVEL"], "debug");
    assert!(
        String::from_utf8_lossy(&yaml.stderr)
            .contains("plugin `configmap` 0.1.0: requests none; granted none"),
        "{}",
        text(&yaml)
    );

    // `-o json` and a config from a file; the plugin's warning reaches stderr.
    std::fs::write(dir.path().join("config.json"), r#"{"data": {}}"#).unwrap();
    let json = run(&["--config", "@config.json", "-o", "json"]);
    assert!(json.status.success(), "{}", text(&json));
    let list: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"][0]["metadata"]["name"], "configmap");
    assert!(
        String::from_utf8_lossy(&json.stderr).contains("warning: `data` is empty (at `/data`)"),
        "{}",
        text(&json)
    );

    // An invalid config is the plugin's error, and nothing is rendered.
    let invalid = run(&["--config", r#"{"data": {"not ok": "1"}}"#]);
    assert_eq!(invalid.status.code(), Some(1), "{}", text(&invalid));
    assert!(invalid.stdout.is_empty(), "{}", text(&invalid));
    let stderr = String::from_utf8_lossy(&invalid.stderr);
    assert!(
        stderr.contains("error: `not ok` is not a valid ConfigMap key (at `/data/not ok`)")
            && stderr.contains("nothing was rendered")
            && stderr.contains("hint: "),
        "{stderr}"
    );

    // A config that is not a mapping is refused before the plugin runs.
    let bad = run(&["--config", "[1, 2]"]);
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("--config: the argument is not a mapping"),
        "{}",
        text(&bad)
    );
}

/// The render traits of the contract's 0.1.1 addition reach the host, and a
/// component built against the released 0.1.0 contract (no SDK, no traits)
/// still loads and renders, taking the defaults.
#[test]
fn a_render_declares_its_traits_and_a_component_of_the_0_1_0_contract_still_renders() {
    let dir = tempfile::tempdir().unwrap();
    let run = |plugin: &str, args: &[&str]| {
        output(
            Command::new(env!("CARGO_BIN_EXE_tazuna"))
                .current_dir(dir.path())
                .env("NO_COLOR", "1")
                .env("TAZUNA_CACHE_DIR", dir.path().join(".cache"))
                .args(["plugin", "run"])
                .arg(common::plugin(plugin))
                .args(args),
        )
    };
    let config = r#"{"action": "drawn", "objects": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "drawn"}, "data": {"token": "{{random}}"}}]}"#;
    let drawn = run("probe", &["--config", config, "-o", "json"]);
    assert!(drawn.status.success(), "{}", text(&drawn));
    assert!(
        String::from_utf8_lossy(&drawn.stderr).contains(
            "note: the render declared that it does not read the cluster and is not deterministic"
        ),
        "{}",
        text(&drawn)
    );
    let again = run("probe", &["--config", config, "-o", "json"]);
    let token = |out: &std::process::Output| {
        let list: Value = serde_json::from_slice(&out.stdout).unwrap();
        list["items"][0]["data"]["token"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_ne!(
        token(&drawn),
        token(&again),
        "the probe draws anew, as it declared"
    );

    let released = run(
        "contract-0.1.0",
        &["--config", "{}", "--name", "old", "-o", "json"],
    );
    assert!(released.status.success(), "{}", text(&released));
    let list: Value = serde_json::from_slice(&released.stdout).unwrap();
    assert_eq!(list["items"][0]["metadata"]["name"], "old");
    assert!(
        String::from_utf8_lossy(&released.stderr).contains(
            "note: the render declared no traits: it is taken to read the cluster and to be deterministic"
        ),
        "{}",
        text(&released)
    );
}
