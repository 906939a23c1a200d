//! End-to-end: `tazuna plugin new` makes a source plugin and a secret
//! resolver from the SDK's template; cargo tests and builds them into real
//! wasm components; Tazuna loads both from `file://` and applies what they
//! give to a harness cluster, where kubectl finds it.
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
            .args(["plugin", "new", "plugins/vault", "--resolver", "--sdk-path"])
            .arg(&sdk),
    );

    // Each crate's own test passes on the host, and it builds into a component.
    let target = host_target();
    for name in ["greeter", "vault"] {
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
    assert!(wasm("greeter").is_file() && wasm("vault").is_file());

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
    - name: vault
      source: file://{}
  providers:
    - name: team
      type: vault
      vault:
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
            wasm("vault").display()
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
        Some("tazuna:plugin/source-plugin@0.1.0")
    );
    assert_eq!(
        world("vault").as_deref(),
        Some("tazuna:plugin/secret-resolver-plugin@0.1.0")
    );

    // A resolver that no provider names yet is still listed, in its world.
    let config = std::fs::read_to_string(project.join("tazuna.yaml")).unwrap();
    std::fs::write(
        project.join("tazuna.yaml"),
        config.replace(
            "  providers:\n    - name: team\n      type: vault\n      vault:\n        file: secrets.json\n",
            "",
        ),
    )
    .unwrap();
    let listed = succeed(tazuna().args(["plugin", "list", "-o", "json"]));
    let unused: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert!(
        unused
            .as_array()
            .unwrap()
            .iter()
            .any(|row| row["name"] == "vault"
                && row["world"] == "tazuna:plugin/secret-resolver-plugin@0.1.0"),
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
            "      type: vault\n      vault:\n        file: secrets.json",
            "      type: greeter",
        ),
    )
    .unwrap();
    let checked = output(tazuna().arg("check"));
    assert_eq!(checked.status.code(), Some(1), "{}", text(&checked));
    assert!(
        text(&checked).contains("a secret resolver must target the WIT world `tazuna:plugin/secret-resolver-plugin@0.1.0`"),
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
