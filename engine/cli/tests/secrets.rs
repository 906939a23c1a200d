//! End-to-end: secret references in rendered Secrets, resolved by the built-in
//! `envfile` and `onepassword` resolvers (wasm components) on the way to a
//! harness cluster, and checked there with kubectl.
//!
//! 1Password cannot run here: the `onepassword` resolver runs a stand-in `op`
//! (a shell script that answers one `op read` the way the real CLI does). That
//! is the only mock; everything else is real.

mod common;

use std::path::Path;
use std::process::Command;

use common::{edit, output, succeed, text, write};
use serde_json::Value;
use tazuna_testkit::e2e::TestCluster;

const ENV_VALUE: &str = "e2e-envfile-value-9f2c";
const OP_VALUE: &str = "e2e-1password-value-7d1a";

fn tazuna(cluster: &TestCluster, dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tazuna"));
    command
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("KUBECONFIG")
        .env("TAZUNA_TOOL_OP", dir.join("fake-op"))
        // The service-account token `op` signs in with reaches it.
        .env("OP_SERVICE_ACCOUNT_TOKEN", "e2e-token")
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig())
        .arg("--context")
        .arg(cluster.context());
    command
}

fn secret_value(cluster: &TestCluster, name: &str, key: &str) -> String {
    use base64::Engine as _;
    let out = succeed(
        cluster
            .kubectl()
            .args(["-n", "default", "get", "secret", name, "-o", "json"]),
    );
    let secret: Value = serde_json::from_slice(&out.stdout).unwrap();
    let encoded = secret["data"][key].as_str().unwrap_or_default();
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap(),
    )
    .unwrap()
}

#[test]
fn references_resolve_on_the_way_to_the_cluster_and_nowhere_else() {
    let Some(cluster) = TestCluster::start("secrets") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "secrets/ops.env",
        &format!("# the ops team's values\nDB_PASSWORD='{ENV_VALUE}'\n"),
    );
    // Stands in for the 1Password CLI: signed in through the token, it
    // answers exactly the read Tazuna should ask for, and fails otherwise.
    write(
        root,
        "fake-op",
        &format!(
            "#!/bin/sh\nif [ \"$OP_SERVICE_ACCOUNT_TOKEN\" != e2e-token ]; then echo 'not signed in' >&2; exit 1; fi\nif [ \"$*\" = \"read --no-newline --account my.1password.com op://Platform/db/password\" ]; then printf '%s' '{OP_VALUE}'; else echo \"unexpected: $*\" >&2; exit 1; fi\n"
        ),
    );
    let mut permissions = std::fs::metadata(root.join("fake-op"))
        .unwrap()
        .permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(root.join("fake-op"), permissions).unwrap();
    write(
        root,
        "app/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\nstringData:\n  db: ref+ops:DB_PASSWORD\n  api: ref+default-op:op://my.1password.com/Platform/db#password\n  plain: not-a-reference\n",
    );
    write(
        root,
        "tazuna.yaml",
        "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  providers:
    - name: ops
      type: envfile
      envfile:
        path: ./secrets/ops.env
  manifests:
    - name: app
      type: manifests
      path: app/secret.yaml
      namespace: default
    - name: cloud-credentials
      type: genesissecret
      path: ./genesissecrets/cloud.yaml
",
    );
    // Go Tazuna's GenesisSecret, with its envfile provider and a static value.
    write(
        root,
        "genesissecrets/cloud.yaml",
        "apiVersion: tazuna.pepabo.com/v1
kind: GenesisSecret
spec:
  provider: ops
  secrets:
    - items:
        DB_PASSWORD:
          mapTo: password
  static:
    host: db.internal
  outputs:
    - kubernetesSecret:
        namespace: default
        name: cloud
        labels:
          team: platform
",
    );

    // build prints the references, never a value.
    let built = succeed(tazuna(&cluster, root).arg("build"));
    let stdout = String::from_utf8_lossy(&built.stdout);
    assert!(stdout.contains("ref+ops:DB_PASSWORD"), "{}", text(&built));
    assert!(!stdout.contains(ENV_VALUE) && !stdout.contains(OP_VALUE));

    // apply resolves them; kubectl sees the values.
    let applied = succeed(tazuna(&cluster, root).arg("apply"));
    assert_eq!(secret_value(&cluster, "app", "db"), ENV_VALUE);
    assert_eq!(secret_value(&cluster, "app", "api"), OP_VALUE);
    assert_eq!(secret_value(&cluster, "app", "plain"), "not-a-reference");
    assert_eq!(secret_value(&cluster, "cloud", "password"), ENV_VALUE);
    assert_eq!(secret_value(&cluster, "cloud", "host"), "db.internal");
    // ...and neither the output nor Tazuna's state holds one.
    let said = text(&applied);
    assert!(
        !said.contains(ENV_VALUE) && !said.contains(OP_VALUE),
        "{said}"
    );
    let state =
        succeed(
            cluster
                .kubectl()
                .args(["-n", "tazuna", "get", "configmaps", "-o", "json"]),
        );
    let state = String::from_utf8_lossy(&state.stdout);
    assert!(!state.contains(ENV_VALUE) && !state.contains(OP_VALUE));

    // A changed value shows in plan as a change, redacted.
    edit(
        &root.join("secrets/ops.env"),
        ENV_VALUE,
        "rotated-value-3b8e",
    );
    let planned = output(tazuna(&cluster, root).args(["plan", "--detailed-exitcode"]));
    assert_eq!(planned.status.code(), Some(2), "{}", text(&planned));
    let said = text(&planned);
    assert!(said.contains("Secret default/app"), "{said}");
    assert!(
        !said.contains("rotated-value-3b8e") && !said.contains(ENV_VALUE),
        "{said}"
    );

    // A key the file lacks, and a provider nobody declared, are named.
    edit(
        &root.join("app/secret.yaml"),
        "ref+ops:DB_PASSWORD",
        "ref+ops:MISSING",
    );
    let failed = output(tazuna(&cluster, root).arg("plan"));
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed));
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(
        stderr.contains("Secret default/app: `stringData.db`: provider `ops` could not resolve its reference: not found: key `MISSING` in envfile `./secrets/ops.env`"),
        "{}",
        text(&failed)
    );
    edit(
        &root.join("app/secret.yaml"),
        "ref+ops:MISSING",
        "ref+vault:x",
    );
    let failed = output(tazuna(&cluster, root).arg("plan"));
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(
        stderr.contains(
            "`stringData.db` names provider `vault`, which `spec.providers` does not declare"
        ) && stderr.contains("the providers are `ops`, `default-op`"),
        "{}",
        text(&failed)
    );
}
