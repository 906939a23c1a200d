//! End-to-end: secret references in rendered Secrets, resolved by the built-in
//! `envfile` and `onepassword` resolvers (wasm components) and the `env`
//! provider on the way to a harness cluster, and checked there with kubectl;
//! and references the real helmfile gets in its environment for `vars`, with
//! the host stopping a secret value that comes back outside a Secret.
//!
//! 1Password cannot run here: the `onepassword` resolver runs a stand-in `op`
//! (a shell script that answers one `op read` the way the real CLI does). That
//! is the only mock; everything else is real.

mod common;

use std::path::Path;
use std::process::Command;

use common::{edit, output, succeed, text, write};
use serde_json::Value;
use tazuna_tests::assets::Tool;
use tazuna_tests::e2e::TestCluster;

const ENV_VALUE: &str = "e2e-envfile-value-9f2c";
const OP_VALUE: &str = "e2e-1password-value-7d1a";

/// `tazuna` in `dir`, on `cluster` and no other.
fn on_cluster(cluster: &TestCluster, dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tazuna"));
    command
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("KUBECONFIG")
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig())
        .arg("--context")
        .arg(cluster.context());
    command
}

/// [`on_cluster`], with the stand-in `op` of `dir` and its sign-in token.
fn tazuna(cluster: &TestCluster, dir: &Path) -> Command {
    let mut command = on_cluster(cluster, dir);
    command
        .env("TAZUNA_TOOL_OP", dir.join("fake-op"))
        // The service-account token `op` signs in with reaches it.
        .env("OP_SERVICE_ACCOUNT_TOKEN", "e2e-token");
    command
}

/// The stand-in `op` at `root/fake-op`, a shell script with `body`.
fn fake_op(root: &Path, body: &str) {
    write(root, "fake-op", &format!("#!/bin/sh\n{body}"));
    let mut permissions = std::fs::metadata(root.join("fake-op"))
        .unwrap()
        .permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(root.join("fake-op"), permissions).unwrap();
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
    fake_op(
        root,
        &format!(
            "if [ \"$OP_SERVICE_ACCOUNT_TOKEN\" != e2e-token ]; then echo 'not signed in' >&2; exit 1; fi\nif [ \"$*\" = \"read --no-newline --account my.1password.com op://Platform/db/password\" ]; then printf '%s' '{OP_VALUE}'; else echo \"unexpected: $*\" >&2; exit 1; fi\n"
        ),
    );
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

const TOKEN_VALUE: &str = "e2e-helmfile-token-51c9";
const EMAIL_VALUE: &str = "platform-e2e@example.com";

/// A chart that puts `.Values.email` in a ConfigMap and `.Values.token` in a
/// Secret, and `leak` (a template of the token) in the ConfigMap too.
fn token_chart(root: &Path, leak: Option<&str>) {
    write(
        root,
        "helmfile/chart/Chart.yaml",
        "apiVersion: v2\nname: acme\nversion: 0.1.0\n",
    );
    let settings = match leak {
        Some(leak) => format!("  email: {{{{ .Values.email | quote }}}}\n  token: {leak}\n"),
        None => "  email: {{ .Values.email | quote }}\n".to_owned(),
    };
    write(
        root,
        "helmfile/chart/templates/objects.yaml",
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: acme-settings\ndata:\n{settings}---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: acme-token\nstringData:\n  token: {{{{ .Values.token | quote }}}}\n"
        ),
    );
}

#[test]
fn helmfile_vars_from_env_and_op_reach_the_tool_and_secret_values_only_land_in_secrets() {
    let Some(tools) = tazuna_tests::e2e::tools(&[Tool::Helm, Tool::Helmfile]) else {
        return;
    };
    let Some(cluster) = TestCluster::start("tool-secrets") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // Stands in for the 1Password CLI (see the file's note): it answers the
    // one read a `from: op` var asks for, with no account given.
    fake_op(
        root,
        &format!(
            "if [ \"$*\" = \"read --no-newline op://Platform/acme/token\" ]; then printf '%s' '{TOKEN_VALUE}'; else echo \"unexpected: $*\" >&2; exit 1; fi\n"
        ),
    );
    token_chart(root, None);
    write(
        root,
        "helmfile/helmfile.yaml.gotmpl",
        "releases:\n  - name: acme\n    chart: ./chart\n    namespace: default\n    values:\n      - email: {{ .Values.email | quote }}\n        token: {{ .Values.token | quote }}\n",
    );
    // A Secret straight from the environment, too.
    write(
        root,
        "ci/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: ci\nstringData:\n  token: ref+env:E2E_CI_TOKEN\n",
    );
    write(
        root,
        "tazuna.yaml",
        "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  manifests:
    - name: acme
      type: helmfile
      path: helmfile
      helmfile:
        vars:
          email:
            from: env
            env: E2E_ACME_EMAIL
          token:
            from: op
            op:
              key: label
              vault: Platform
              item: acme
              field: token
    - name: ci
      type: manifests
      path: ci/secret.yaml
      namespace: default
",
    );
    // Tazuna with the real helm and helmfile, and the variables the vars
    // read (without `E2E_ACME_EMAIL` when `email` is false).
    let command = |email: bool| {
        let mut command = tazuna(&cluster, root);
        command
            .env("TAZUNA_TOOL_HELM", tools.path(Tool::Helm))
            .env("TAZUNA_TOOL_HELMFILE", tools.path(Tool::Helmfile))
            .env("E2E_CI_TOKEN", ENV_VALUE);
        if email {
            command.env("E2E_ACME_EMAIL", EMAIL_VALUE);
        } else {
            command.env_remove("E2E_ACME_EMAIL");
        }
        command
    };
    let run = |args: &[&str]| output(command(true).args(args));

    // build resolves nothing: helmfile renders the references themselves.
    let built = run(&["build"]);
    assert!(built.status.success(), "{}", text(&built));
    let stdout = String::from_utf8_lossy(&built.stdout);
    assert!(
        stdout.contains("ref+default-op:op://Platform/acme/token")
            && stdout.contains("ref+env:E2E_ACME_EMAIL")
            && stdout.contains("ref+env:E2E_CI_TOKEN"),
        "{stdout}"
    );
    assert!(!stdout.contains(TOKEN_VALUE) && !stdout.contains(EMAIL_VALUE));

    // apply hands helmfile the values; kubectl sees them where they belong.
    let applied = run(&["apply"]);
    assert!(applied.status.success(), "{}", text(&applied));
    assert!(!text(&applied).contains(TOKEN_VALUE), "{}", text(&applied));
    assert_eq!(secret_value(&cluster, "acme-token", "token"), TOKEN_VALUE);
    assert_eq!(secret_value(&cluster, "ci", "token"), ENV_VALUE);
    let settings = succeed(cluster.kubectl().args([
        "-n",
        "default",
        "get",
        "configmap",
        "acme-settings",
        "-o",
        "jsonpath={.data.email}",
    ]));
    assert_eq!(String::from_utf8_lossy(&settings.stdout), EMAIL_VALUE);
    let state =
        succeed(
            cluster
                .kubectl()
                .args(["-n", "tazuna", "get", "configmaps", "-o", "json"]),
        );
    assert!(!String::from_utf8_lossy(&state.stdout).contains(TOKEN_VALUE));

    // A chart that copies the token into a ConfigMap is stopped, by name,
    // before anything is written, and the error does not quote the value.
    token_chart(root, Some("{{ .Values.token | quote }}"));
    let planned = run(&["plan"]);
    assert_eq!(planned.status.code(), Some(1), "{}", text(&planned));
    let said = text(&planned);
    assert!(
        said.contains("ConfigMap default/acme-settings, rendered by plugin `helmfile`, holds a value that a secret provider gave its tools"),
        "{said}"
    );
    assert!(!said.contains(TOKEN_VALUE), "{said}");

    // Made into something else first (another spelling, a hash, a piece),
    // it no longer matches the value: the render without the secret tells.
    for leak in [
        "{{ .Values.token | upper | quote }}",
        "{{ .Values.token | sha256sum | quote }}",
        "{{ .Values.token | trunc 9 | b32enc | quote }}",
        "{{ .Values.token | len | quote }}",
    ] {
        token_chart(root, Some(leak));
        let planned = run(&["plan"]);
        let said = text(&planned);
        assert_eq!(planned.status.code(), Some(1), "{leak}: {said}");
        assert!(
            said.contains("ConfigMap default/acme-settings, rendered by plugin `helmfile`, comes out otherwise when the secrets its tools got are withheld"),
            "{leak}: {said}"
        );
        assert!(!said.contains(&TOKEN_VALUE.to_uppercase()), "{said}");
    }

    // A Secret's name, labels, annotations and type are shown by `plan` and
    // kept in state: not a place for the value either, in any spelling.
    token_chart(root, None);
    for (metadata, said_of) in [
        (
            "  annotations:\n    leak: {{ .Values.token | quote }}\n",
            "holds a value that a secret provider gave its tools",
        ),
        (
            "  labels:\n    leak: {{ .Values.token | upper | replace \"-\" \"\" | quote }}\n",
            "comes out otherwise when the secrets its tools got are withheld",
        ),
    ] {
        write(
            root,
            "helmfile/chart/templates/extra.yaml",
            &format!(
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: acme-annotated\n{metadata}stringData:\n  token: fine-here\n"
            ),
        );
        let planned = run(&["plan"]);
        let said = text(&planned);
        assert_eq!(planned.status.code(), Some(1), "{metadata}: {said}");
        assert!(
            said.contains(&format!(
                "Secret default/acme-annotated, rendered by plugin `helmfile`, {said_of}"
            )),
            "{metadata}: {said}"
        );
        assert!(!said.contains(TOKEN_VALUE), "{said}");
    }
    std::fs::remove_file(root.join("helmfile/chart/templates/extra.yaml")).unwrap();

    // An unset variable is named.
    token_chart(root, None);
    let unset = output(command(false).arg("plan"));
    assert_eq!(unset.status.code(), Some(1), "{}", text(&unset));
    assert!(
        text(&unset).contains(
            "plugin `helmfile` failed: not found: var `email`: environment variable `E2E_ACME_EMAIL` is not set"
        ),
        "{}",
        text(&unset)
    );
}

/// A chart from a registry is not the user's file: a reference its own
/// template writes (`ref+env:CI_DEPLOY_TOKEN`) is refused before any write
/// and without the value; the same reference written in the user's values
/// resolves. Checked with kubectl.
#[test]
fn a_reference_in_a_chart_from_a_registry_resolves_only_where_the_user_wrote_it() {
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let Some(tools) = tazuna_tests::e2e::tools(&[Tool::Helm]) else {
        return;
    };
    let Some(registry) = tazuna_tests::e2e::registry() else {
        return;
    };
    let namespace = cluster.namespace("fetched-ref");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let helm = |args: &[&str]| {
        succeed(
            Command::new(tools.path(Tool::Helm))
                .current_dir(root)
                .env("HOME", root.join("home"))
                .args(args),
        )
    };
    // 0.1.0 asks for the CI token itself; 0.2.0 takes a value from the user.
    for (version, value) in [
        ("0.1.0", "ref+env:CI_DEPLOY_TOKEN"),
        ("0.2.0", "{{ .Values.token }}"),
    ] {
        let chart = root.join(format!("chart-{version}"));
        write(
            &chart,
            "Chart.yaml",
            &format!("apiVersion: v2\nname: fetched\nversion: {version}\n"),
        );
        write(
            &chart,
            "templates/secret.yaml",
            &format!(
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: fetched\nstringData:\n  token: \"{value}\"\n"
            ),
        );
        helm(&["package", chart.to_str().unwrap(), "--destination", "."]);
        helm(&[
            "push",
            &format!("fetched-{version}.tgz"),
            &format!("oci://{}/charts", registry.host()),
            "--plain-http",
        ]);
    }
    let file = |version: &str, values: &str| {
        format!(
            "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  manifests:
    - name: fetched
      type: helm
      namespace: {}
      helm:
        chart: oci://{}/charts/fetched
        version: {version}
        plainHttp: true
        values: {values}
",
            namespace.name(),
            registry.host()
        )
    };
    const TOKEN: &str = "e2e-ci-deploy-token-5b1e";
    write(root, "tazuna.yaml", &file("0.1.0", "{}"));
    let refused = output(
        tazuna(cluster, root)
            .env("CI_DEPLOY_TOKEN", TOKEN)
            .env("TAZUNA_TOOL_HELM", tools.path(Tool::Helm))
            .arg("apply"),
    );
    let said = text(&refused);
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert!(
        said.contains("`stringData.token` refers to provider `env`, but the reference comes from content fetched from"),
        "{said}"
    );
    assert!(!said.contains(TOKEN), "{said}");
    let found = output(
        namespace
            .kubectl()
            .args(["get", "secret", "fetched", "-o", "name"]),
    );
    assert!(
        !found.status.success(),
        "the Secret was written: {}",
        text(&found)
    );

    write(
        root,
        "tazuna.yaml",
        &file("0.2.0", "{token: \"ref+env:CI_DEPLOY_TOKEN\"}"),
    );
    let applied = output(
        tazuna(cluster, root)
            .env("CI_DEPLOY_TOKEN", TOKEN)
            .env("TAZUNA_TOOL_HELM", tools.path(Tool::Helm))
            .arg("apply"),
    );
    assert_eq!(applied.status.code(), Some(0), "{}", text(&applied));
    use base64::Engine as _;
    let secret = succeed(namespace.kubectl().args([
        "get",
        "secret",
        "fetched",
        "-o",
        "jsonpath={.data.token}",
    ]));
    let value = base64::engine::general_purpose::STANDARD
        .decode(String::from_utf8_lossy(&secret.stdout).trim())
        .unwrap();
    assert_eq!(value, TOKEN.as_bytes());
}

const AWS_VALUE: &str = "e2e-aws-secret-value-0c4d";

/// AWS Secrets Manager (moto, the real AWS API server from PyPI, checking every signature)
/// behind the built-in `aws-secrets-manager` resolver: the plugin asks the host, which signs
/// with the AWS chain's credentials and sends only to the endpoint the provider names. The 501 references of one run
/// go out in 25 batches of twenty, each secret once; kubectl sees the values, and no output, state
/// or error holds a value or the key. A missing secret, a store that is down and no
/// credentials each fail before any write, naming the provider and the reference.
#[test]
fn aws_secrets_manager_values_are_fetched_in_batches_signed_by_the_host_and_kept_nowhere() {
    let Some(moto) = tazuna_tests::e2e::moto() else {
        return;
    };
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let namespace = cluster.namespace("aws-secrets");
    let ns = namespace.name().to_owned();
    // Seeded with boto3, an AWS client of its own.
    moto.aws(&format!(
        "c = client('secretsmanager')\n\
         c.create_secret(Name='argocd/repo', SecretString=json.dumps({{'url': 'https://git.example.com/platform.git', 'password': '{AWS_VALUE}'}}))\n\
         c.create_secret(Name='plain', SecretString='plain-value')\n\
         for i in range(498):\n    c.create_secret(Name=f'bulk/{{i}}', SecretString=f'bulk-{{i}}')\n"
    ));
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut data = "  repo-password: ref+aws:argocd/repo#password\n  repo-url: ref+aws:argocd/repo#url\n  plain: ref+aws:plain\n".to_owned();
    for i in 0..498 {
        data.push_str(&format!("  bulk-{i}: ref+aws:bulk/{i}\n"));
    }
    write(
        root,
        "app/secret.yaml",
        &format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: repo\nstringData:\n{data}"),
    );
    let config = format!(
        "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  providers:
    - name: aws
      type: aws-secrets-manager
      aws-secrets-manager:
        region: us-east-1
        endpoint: {}/
  manifests:
    - name: app
      type: manifests
      path: app/secret.yaml
      namespace: {ns}
",
        moto.url()
    );
    write(root, "tazuna.yaml", &config);
    let home = tempfile::tempdir().unwrap();
    let tazuna = |root: &Path| {
        let mut command = on_cluster(cluster, root);
        command
            .env_remove("AWS_PROFILE")
            .env_remove("AWS_REGION")
            .env("HOME", home.path())
            .env("AWS_ACCESS_KEY_ID", moto.credentials().0)
            .env("AWS_SECRET_ACCESS_KEY", moto.credentials().1);
        command
    };

    // The secret key the AWS chain finds in the environment: the host signs with it, and it
    // must show nowhere.
    let secret_key = moto.credentials().1.to_owned();
    let calls = moto.api_calls();
    let applied = succeed(tazuna(root).arg("apply"));
    // 501 references to 500 secrets, in batches of twenty: 25 calls (the issue's bound), the
    // two keys of `argocd/repo` one secret.
    assert_eq!(moto.api_calls() - calls, 25, "{}", moto.log_tail(10));
    let value = |key: &str| {
        use base64::Engine as _;
        let out = succeed(
            namespace
                .kubectl()
                .args(["get", "secret", "repo", "-o", "json"]),
        );
        let secret: Value = serde_json::from_slice(&out.stdout).unwrap();
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(secret["data"][key].as_str().unwrap_or_default())
                .unwrap(),
        )
        .unwrap()
    };
    assert_eq!(value("repo-password"), AWS_VALUE);
    assert_eq!(value("repo-url"), "https://git.example.com/platform.git");
    assert_eq!(value("plain"), "plain-value");
    assert_eq!(value("bulk-497"), "bulk-497");
    let state =
        succeed(
            cluster
                .kubectl()
                .args(["-n", "tazuna", "get", "configmaps", "-o", "json"]),
        );
    for said in [
        text(&applied),
        String::from_utf8_lossy(&state.stdout).into_owned(),
    ] {
        assert!(
            !said.contains(AWS_VALUE) && !said.contains(&secret_key),
            "{said}"
        );
    }

    // A value changed in the store is a changed Secret in plan, redacted.
    moto.aws("client('secretsmanager').put_secret_value(SecretId='plain', SecretString='rotated-aws-value')\n");
    let planned = output(tazuna(root).args(["plan", "--detailed-exitcode"]));
    assert_eq!(planned.status.code(), Some(2), "{}", text(&planned));
    assert!(
        !text(&planned).contains("rotated-aws-value"),
        "{}",
        text(&planned)
    );

    // A secret the store lacks fails the manifest before any write, named.
    edit(
        &root.join("app/secret.yaml"),
        "ref+aws:plain",
        "ref+aws:missing/one#key",
    );
    let failed = output(tazuna(root).arg("apply"));
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed));
    assert!(
        text(&failed).contains("`stringData.plain`: provider `aws` could not resolve its reference: not found: secret `missing/one` in AWS Secrets Manager"),
        "{}",
        text(&failed)
    );
    assert_eq!(value("plain"), "plain-value", "nothing was applied");

    // A store that is down, and no credentials: each named, nothing applied.
    edit(
        &root.join("app/secret.yaml"),
        "ref+aws:missing/one#key",
        "ref+aws:plain",
    );
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    write(
        root,
        "tazuna.yaml",
        &config.replace(&moto.url(), &format!("http://127.0.0.1:{closed}")),
    );
    let down = output(tazuna(root).arg("apply"));
    assert_eq!(down.status.code(), Some(1), "{}", text(&down));
    assert!(
        text(&down).contains("provider `aws`")
            && text(&down).contains(&format!("127.0.0.1:{closed}")),
        "{}",
        text(&down)
    );
    write(root, "tazuna.yaml", &config);
    let anonymous = output(
        tazuna(root)
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .arg("apply"),
    );
    assert_eq!(anonymous.status.code(), Some(1), "{}", text(&anonymous));
    assert!(
        text(&anonymous).contains("no AWS credentials"),
        "{}",
        text(&anonymous)
    );
    // A key AWS does not take: the store refuses the signature, and says so.
    let wrong = output(
        tazuna(root)
            .env("AWS_SECRET_ACCESS_KEY", "not-the-key")
            .arg("apply"),
    );
    assert_eq!(wrong.status.code(), Some(1), "{}", text(&wrong));
    assert!(
        text(&wrong).contains("SignatureDoesNotMatch")
            && text(&wrong).contains("check the AWS credentials"),
        "{}",
        text(&wrong)
    );
    for out in [&failed, &down, &anonymous, &wrong] {
        assert!(!text(out).contains(&secret_key) && !text(out).contains(AWS_VALUE));
    }
    assert_eq!(value("plain"), "plain-value");

    // A third-party resolver reaches only what its `net:` grants name: not the endpoint a
    // built-in's provider names, not the cloud's metadata service, and signed requests no
    // further.
    let probe = common::plugin("probe-resolver");
    let moto_port = moto.url().rsplit(':').next().unwrap().to_owned();
    let with_probe = |grants: &str, reference: &str| {
        write(
            root,
            "tazuna.yaml",
            &format!(
                "{}  plugins:\n    - name: probe-resolver\n      source: file://{}\n      grants: [{grants}]\n",
                config.replace(
                    "  manifests:",
                    "    - name: peek\n      type: probe-resolver\n  manifests:"
                ),
                probe.display()
            ),
        );
        write(
            root,
            "app/secret.yaml",
            &format!(
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: peek\nstringData:\n  seen: ref+peek:{reference}\n"
            ),
        );
        output(tazuna(root).arg("apply"))
    };
    for (grants, reference) in [
        ("", format!("get:{}/moto-api/", moto.url())),
        (
            "",
            "get:http://169.254.169.254/latest/meta-data/".to_owned(),
        ),
        ("net:127.0.0.1:1", format!("signed:{}/", moto.url())),
        (
            &format!("net:127.0.0.1:{moto_port}") as &str,
            "get:https://sts.amazonaws.com/".to_owned(),
        ),
    ] {
        let refused = with_probe(grants, &reference);
        assert_eq!(
            refused.status.code(),
            Some(1),
            "{reference}: {}",
            text(&refused)
        );
        assert!(
            text(&refused).contains("may not reach")
                || text(&refused).contains("over https")
                || text(&refused).contains("asked the host to sign"),
            "{reference}: {}",
            text(&refused)
        );
        assert!(!text(&refused).contains(&secret_key));
    }
    let reached = with_probe(
        &format!("net:127.0.0.1:{moto_port}"),
        &format!("get:{}/moto-api/", moto.url()),
    );
    assert!(reached.status.success(), "{}", text(&reached));
    let out =
        succeed(
            namespace
                .kubectl()
                .args(["get", "secret", "peek", "-o", "jsonpath={.data.seen}"]),
        );
    use base64::Engine as _;
    let seen = base64::engine::general_purpose::STANDARD
        .decode(String::from_utf8_lossy(&out.stdout).trim())
        .unwrap();
    assert!(
        String::from_utf8_lossy(&seen).starts_with("200 "),
        "{seen:?}"
    );
}

const STATE_SECRET: &str = "tofu-sensitive-value-3e1a";
const TARGET_GROUP: &str =
    "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web/0123456789abcdef";

/// Values from infrastructure: the real `tofu` (OpenTofu, built from the Go module proxy) writes
/// a state with an output and a sensitive output; `spec.inputs` reads it, the template puts the
/// target group's ARN in a chart value, and the sensitive password goes as `ref+infra:…` into
/// the chart's Secret, resolved by the host on the way to the cluster. kubectl sees both;
/// `build` prints the reference and names the input, never the value; a missing output is an
/// error naming the input and the output.
#[test]
fn opentofu_outputs_are_inputs_and_a_sensitive_one_lands_only_in_a_secret() {
    let Some(tofu) = tazuna_tests::e2e::tool(Tool::Tofu) else {
        return;
    };
    let Some(helm) = tazuna_tests::e2e::tool(Tool::Helm) else {
        return;
    };
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let namespace = cluster.namespace("inputs");
    let ns = namespace.name().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "infra/main.tf",
        &format!(
            "resource \"terraform_data\" \"target_group\" {{\n  input = \"{TARGET_GROUP}\"\n}}\n\
             output \"alb_target_group_arn\" {{\n  value = terraform_data.target_group.output\n}}\n\
             output \"db_password\" {{\n  value     = \"{STATE_SECRET}\"\n  sensitive = true\n}}\n"
        ),
    );
    for args in [
        &["init", "-input=false", "-no-color"][..],
        &["apply", "-auto-approve", "-input=false", "-no-color"],
    ] {
        succeed(
            Command::new(&tofu)
                .current_dir(root.join("infra"))
                .env("TF_IN_AUTOMATION", "1")
                .env("HOME", root)
                .args(args),
        );
    }
    write(
        root,
        "chart/Chart.yaml",
        "apiVersion: v2\nname: binding\nversion: 0.1.0\n",
    );
    write(
        root,
        "chart/templates/binding.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: binding\ndata:\n  targetGroupARN: {{ .Values.targetGroupARN | quote }}\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: {{ .Values.password | quote }}\n",
    );
    let config = |value: &str| {
        format!(
            "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  inputs:
    - name: infra
      type: opentofu-state
      path: ./infra/terraform.tfstate
  manifests:
    - name: binding
      type: helm
      path: ./chart
      namespace: {ns}
      helm:
        values:
          targetGroupARN: '{{{{ .Inputs.infra.{value} }}}}'
          password: '{{{{ .Inputs.infra.db_password }}}}'
"
        )
    };
    write(root, "tazuna.yaml", &config("alb_target_group_arn"));
    let tazuna = || {
        let mut command = on_cluster(cluster, root);
        command.env("TAZUNA_TOOL_HELM", &helm);
        command
    };
    let built = succeed(tazuna().arg("build"));
    let said = text(&built);
    assert!(
        said.contains(TARGET_GROUP) && said.contains("ref+infra:db_password"),
        "{said}"
    );
    assert!(
        said.contains("note: input `infra` (state `") && said.contains("`db_password` (sensitive"),
        "{said}"
    );
    let applied = succeed(tazuna().arg("apply"));
    let arn = succeed(namespace.kubectl().args([
        "get",
        "configmap",
        "binding",
        "-o",
        "jsonpath={.data.targetGroupARN}",
    ]));
    assert_eq!(String::from_utf8_lossy(&arn.stdout), TARGET_GROUP);
    let password = succeed(namespace.kubectl().args([
        "get",
        "secret",
        "db",
        "-o",
        "jsonpath={.data.password}",
    ]));
    use base64::Engine as _;
    let password = base64::engine::general_purpose::STANDARD
        .decode(String::from_utf8_lossy(&password.stdout).trim())
        .unwrap();
    assert_eq!(password, STATE_SECRET.as_bytes());
    let state =
        succeed(
            cluster
                .kubectl()
                .args(["-n", "tazuna", "get", "configmaps", "-o", "json"]),
        );
    for said in [
        text(&built),
        text(&applied),
        String::from_utf8_lossy(&state.stdout).into_owned(),
    ] {
        assert!(!said.contains(STATE_SECRET), "{said}");
    }

    write(root, "tazuna.yaml", &config("alb_arn"));
    let missing = output(tazuna().arg("plan"));
    assert_eq!(missing.status.code(), Some(1), "{}", text(&missing));
    assert!(
        text(&missing).contains("`.Inputs.infra.alb_arn`")
            && text(&missing).contains("`alb_target_group_arn`"),
        "{}",
        text(&missing)
    );
    assert!(!text(&missing).contains(STATE_SECRET));
}

/// The value of `key` of Secret `name` in `namespace`, read by kubectl.
fn value_in(namespace: &tazuna_tests::e2e::TestNamespace<'_>, name: &str, key: &str) -> String {
    use base64::Engine as _;
    let out = succeed(
        namespace
            .kubectl()
            .args(["get", "secret", name, "-o", "json"]),
    );
    let secret: Value = serde_json::from_slice(&out.stdout).unwrap();
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(secret["data"][key].as_str().unwrap_or_default())
            .unwrap(),
    )
    .unwrap()
}

/// Everything Tazuna keeps on the cluster (its state), as kubectl prints it.
fn state_text(cluster: &TestCluster) -> String {
    let state =
        succeed(
            cluster
                .kubectl()
                .args(["-n", "tazuna", "get", "configmaps", "-o", "json"]),
        );
    String::from_utf8_lossy(&state.stdout).into_owned()
}

const VAULT_VALUE: &str = "e2e-vault-kv2-value-8b3e";
const VAULT_V1_VALUE: &str = "e2e-vault-kv1-value-2f7a";

/// HashiCorp Vault (a real `vault server -dev` with TLS, built from the Go module proxy) behind the
/// built-in `vault` resolver: KV v2 (with a version) and KV v1, the Vault's CA from the provider's
/// `caFile`; the host logs in with a token, then AppRole, then Kubernetes (Vault asks the harness
/// API server's TokenReview), and reads each secret once. kubectl sees the values; no output,
/// state or error holds a value or a token. A missing secret, a policy that does not grant the
/// path, a Vault that is down and no token each fail before any write. A third-party resolver
/// gets no login without `sign:vault`, and with it still reads only KV mounts and names no file.
#[test]
fn vault_kv_values_arrive_through_a_login_the_host_makes_and_stay_out_of_every_output() {
    let Some(vault) = tazuna_tests::e2e::vault() else {
        return;
    };
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let namespace = cluster.namespace("vault");
    let ns = namespace.name().to_owned();
    // Seeded with the Vault's own CLI, as root.
    vault.cli(&[
        "kv",
        "put",
        "secret/argocd/repo",
        "password=first-version",
        "url=https://git.example.com/platform.git",
    ]);
    vault.cli(&[
        "kv",
        "put",
        "secret/argocd/repo",
        &format!("password={VAULT_VALUE}"),
        "url=https://git.example.com/platform.git",
    ]);
    vault.cli(&["secrets", "enable", "-path=kv1", "-version=1", "kv"]);
    vault.cli(&["kv", "put", "kv1/app", &format!("token={VAULT_V1_VALUE}")]);
    vault.cli(&["secrets", "enable", "-path=transit", "transit"]);
    vault.cli_with_input(
        &["policy", "write", "tazuna", "-"],
        Some("path \"secret/data/argocd/*\" { capabilities = [\"read\"] }\npath \"kv1/*\" { capabilities = [\"read\"] }\npath \"transit/*\" { capabilities = [\"read\"] }\n"),
    );
    let token = vault
        .cli(&["token", "create", "-policy=tazuna", "-field=token"])
        .trim()
        .to_owned();

    // Audited from here: what the tests count is Tazuna's requests.
    vault.enable_audit();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::copy(vault.ca_file(), root.join("vault-ca.pem")).unwrap();
    write(
        root,
        "app/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: repo\nstringData:\n  password: ref+vault:secret/argocd/repo#password\n  url: ref+vault:secret/argocd/repo#url\n  first: ref+vault:secret/argocd/repo?version=1#password\n  v1: ref+vault:kv1/app#token\n",
    );
    let config = |auth: &str| {
        format!(
            "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  providers:
    - name: vault
      type: vault
      vault:
        address: {}
        caFile: vault-ca.pem
{auth}  manifests:
    - name: vault-app
      type: manifests
      path: app/secret.yaml
      namespace: {ns}
",
            vault.address()
        )
    };
    write(root, "tazuna.yaml", &config(""));
    let home = tempfile::tempdir().unwrap();
    let tazuna = |root: &Path| {
        let mut command = on_cluster(cluster, root);
        command
            .env_remove("VAULT_TOKEN")
            .env_remove("VAULT_ADDR")
            .env_remove("VAULT_SECRET_ID")
            .env("HOME", home.path());
        command
    };

    // At trace level, every log line Tazuna writes is in the output the test searches below.
    let applied = succeed(
        tazuna(root)
            .env("VAULT_TOKEN", &token)
            .args(["apply", "-l", "trace"]),
    );
    assert_eq!(value_in(&namespace, "repo", "password"), VAULT_VALUE);
    assert_eq!(
        value_in(&namespace, "repo", "url"),
        "https://git.example.com/platform.git"
    );
    assert_eq!(value_in(&namespace, "repo", "first"), "first-version");
    assert_eq!(value_in(&namespace, "repo", "v1"), VAULT_V1_VALUE);
    // By the Vault's own audit log: the latest version and version 1 read once each, kv1/app once.
    assert_eq!(
        vault.audited("secret/data/argocd/repo"),
        2,
        "{}",
        vault.log_tail(5)
    );
    assert_eq!(vault.audited("kv1/app"), 1);

    // AppRole: the role id in the file, the secret id in the environment; one login.
    vault.cli(&["auth", "enable", "approle"]);
    vault.cli(&["write", "auth/approle/role/tazuna", "token_policies=tazuna"]);
    let role_id = vault.cli(&["read", "-field=role_id", "auth/approle/role/tazuna/role-id"]);
    let secret_id = vault
        .cli(&[
            "write",
            "-f",
            "-field=secret_id",
            "auth/approle/role/tazuna/secret-id",
        ])
        .trim()
        .to_owned();
    write(
        root,
        "tazuna.yaml",
        &config(&format!(
            "        auth:\n          method: approle\n          roleId: {}\n",
            role_id.trim()
        )),
    );
    vault.cli(&["kv", "put", "kv1/app", "token=rotated-by-approle"]);
    // A value changed in the store is a changed Secret in plan, redacted.
    let planned = output(
        tazuna(root)
            .env("VAULT_SECRET_ID", &secret_id)
            .args(["plan", "--detailed-exitcode"]),
    );
    assert_eq!(planned.status.code(), Some(2), "{}", text(&planned));
    assert!(
        !text(&planned).contains("rotated-by-approle"),
        "{}",
        text(&planned)
    );
    let by_approle = succeed(tazuna(root).env("VAULT_SECRET_ID", &secret_id).arg("apply"));
    assert_eq!(value_in(&namespace, "repo", "v1"), "rotated-by-approle");
    assert_eq!(
        vault.audited("auth/approle/login"),
        2,
        "one login for plan, one for apply"
    );

    // Kubernetes: Vault reviews the service account token at the harness API server.
    let kube = |path: &str| {
        String::from_utf8(
            succeed(cluster.kubectl().args([
                "config",
                "view",
                "--raw",
                "--minify",
                "-o",
                &format!("jsonpath={{{path}}}"),
            ]))
            .stdout,
        )
        .unwrap()
    };
    let server = kube(".clusters[0].cluster.server");
    let ca = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(kube(".clusters[0].cluster.certificate-authority-data"))
            .unwrap()
    };
    std::fs::write(home.path().join("kube-ca.pem"), &ca).unwrap();
    for account in ["vault-reviewer", "deployer"] {
        succeed(
            namespace
                .kubectl()
                .args(["create", "serviceaccount", account]),
        );
    }
    succeed(cluster.kubectl().args([
        "create",
        "clusterrolebinding",
        &format!("{ns}-vault-reviewer"),
        "--clusterrole=system:auth-delegator",
        &format!("--serviceaccount={ns}:vault-reviewer"),
    ]));
    let token_of = |account: &str| {
        String::from_utf8(succeed(namespace.kubectl().args(["create", "token", account])).stdout)
            .unwrap()
            .trim()
            .to_owned()
    };
    let reviewer = token_of("vault-reviewer");
    vault.cli(&["auth", "enable", "kubernetes"]);
    vault.cli(&[
        "write",
        "auth/kubernetes/config",
        &format!("kubernetes_host={server}"),
        &format!(
            "kubernetes_ca_cert=@{}",
            home.path().join("kube-ca.pem").display()
        ),
        &format!("token_reviewer_jwt={reviewer}"),
    ]);
    vault.cli(&[
        "write",
        "auth/kubernetes/role/tazuna",
        "bound_service_account_names=deployer",
        &format!("bound_service_account_namespaces={ns}"),
        "token_policies=tazuna",
    ]);
    let jwt = token_of("deployer");
    write(root, "deployer.jwt", &jwt);
    write(
        root,
        "tazuna.yaml",
        &config(
            "        auth:\n          method: kubernetes\n          role: tazuna\n          jwtFile: deployer.jwt\n",
        ),
    );
    vault.cli(&["kv", "put", "kv1/app", "token=rotated-by-kubernetes"]);
    let by_kubernetes = succeed(tazuna(root).arg("apply"));
    assert_eq!(value_in(&namespace, "repo", "v1"), "rotated-by-kubernetes");
    assert_eq!(vault.audited("auth/kubernetes/login"), 1);

    // Bad input and faults: each fails the manifest before any write, named.
    write(root, "tazuna.yaml", &config(""));
    edit(
        &root.join("app/secret.yaml"),
        "ref+vault:kv1/app#token",
        "ref+vault:kv1/missing#token",
    );
    let missing = output(tazuna(root).env("VAULT_TOKEN", &token).arg("apply"));
    assert_eq!(missing.status.code(), Some(1), "{}", text(&missing));
    assert!(
        text(&missing).contains("provider `vault`")
            && text(&missing).contains("secret `kv1/missing`"),
        "{}",
        text(&missing)
    );
    edit(
        &root.join("app/secret.yaml"),
        "ref+vault:kv1/missing#token",
        "ref+vault:secret/other/app#token",
    );
    vault.cli(&["kv", "put", "secret/other/app", "token=x"]);
    let denied = output(tazuna(root).env("VAULT_TOKEN", &token).arg("apply"));
    assert_eq!(denied.status.code(), Some(1), "{}", text(&denied));
    assert!(
        text(&denied).contains("permission denied") && text(&denied).contains("grants `read`"),
        "{}",
        text(&denied)
    );
    edit(
        &root.join("app/secret.yaml"),
        "ref+vault:secret/other/app#token",
        "ref+vault:kv1/app#token",
    );
    let anonymous = output(tazuna(root).arg("apply"));
    assert_eq!(anonymous.status.code(), Some(1), "{}", text(&anonymous));
    assert!(
        text(&anonymous).contains("no Vault token"),
        "{}",
        text(&anonymous)
    );
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    write(
        root,
        "tazuna.yaml",
        &config("").replace(&vault.address(), &format!("https://127.0.0.1:{closed}")),
    );
    let down = output(tazuna(root).env("VAULT_TOKEN", &token).arg("apply"));
    assert_eq!(down.status.code(), Some(1), "{}", text(&down));
    assert!(
        text(&down).contains(&format!("127.0.0.1:{closed}")),
        "{}",
        text(&down)
    );
    write(
        root,
        "tazuna.yaml",
        &config("").replace("        caFile: vault-ca.pem\n", ""),
    );
    let untrusted = output(tazuna(root).env("VAULT_TOKEN", &token).arg("apply"));
    assert_eq!(
        untrusted.status.code(),
        Some(1),
        "without the CA: {}",
        text(&untrusted)
    );
    assert_eq!(
        value_in(&namespace, "repo", "v1"),
        "rotated-by-kubernetes",
        "nothing was applied"
    );

    // A third-party resolver: no login without `sign:vault`; with it, no Vault but the
    // provider's `address`, no read outside KV, no preflight of another mount, no listing, no
    // file but the one its field names (a string elsewhere in the config is not enough).
    let probe = common::plugin("probe-resolver");
    let port = vault.address().rsplit(':').next().unwrap().to_owned();
    let with_probe = |grants: &str, reference: &str| {
        write(
            root,
            "tazuna.yaml",
            &format!(
                "{}  plugins:\n    - name: probe-resolver\n      source: file://{}\n      grants: [{grants}]\n",
                config("").replace(
                    "  manifests:",
                    &format!("    - name: peek\n      type: probe-resolver\n      probe-resolver:\n        address: {}\n        caFile: vault-ca.pem\n        description: /etc/passwd\n  manifests:", vault.address())
                ),
                probe.display()
            ),
        );
        write(
            root,
            "app/secret.yaml",
            &format!(
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: peek\nstringData:\n  seen: ref+peek:{reference}\n"
            ),
        );
        output(tazuna(root).env("VAULT_TOKEN", &token).arg("apply"))
    };
    let address = vault.address();
    for (grants, reference, said) in [
        (
            format!("net:127.0.0.1:{port}"),
            format!("vault:{address}|/v1/secret/data/argocd/repo"),
            "sign:vault",
        ),
        (
            format!("net:127.0.0.1:{port}, sign:vault"),
            format!("vault:{address}|/v1/auth/token/lookup-self"),
            "mount",
        ),
        (
            format!("net:127.0.0.1:{port}, sign:vault"),
            format!("vault:{address}|/v1/transit/keys"),
            "only from KV mounts",
        ),
        (
            format!("net:127.0.0.1:{port}, sign:vault"),
            format!("vault:{address}|/v1/sys/mounts"),
            "mount",
        ),
        (
            format!("net:127.0.0.1:{port}, sign:vault"),
            format!("vault-jwt:{address}|/etc/passwd"),
            "not the provider's `auth.jwtFile`",
        ),
        (
            format!("net:127.0.0.1:{port}, net:127.0.0.1:1, sign:vault"),
            "vault:https://127.0.0.1:1|/v1/secret/data/argocd/repo".to_owned(),
            "not the provider's `address`",
        ),
        (
            format!("net:127.0.0.1:{port}, sign:vault"),
            format!("vault:{address}|/v1/secret/metadata?list=true"),
            "a read takes only",
        ),
        (
            format!("net:127.0.0.1:{port}, sign:vault"),
            format!("vault:{address}|/v1/sys/internal/ui/mounts/sys/mounts"),
            "learns only of KV mounts",
        ),
        (
            "net:127.0.0.1:1, sign:vault".to_owned(),
            format!("vault:{address}|/v1/secret/data/argocd/repo"),
            "may not reach",
        ),
    ] {
        let refused = with_probe(&grants, &reference);
        assert_eq!(
            refused.status.code(),
            Some(1),
            "{reference}: {}",
            text(&refused)
        );
        assert!(
            text(&refused).contains(said),
            "{reference}: {}",
            text(&refused)
        );
        assert!(!text(&refused).contains(&token), "{reference}");
    }
    for out in [
        &applied,
        &by_approle,
        &by_kubernetes,
        &planned,
        &missing,
        &denied,
        &anonymous,
        &down,
        &untrusted,
    ] {
        for hidden in [
            VAULT_VALUE,
            VAULT_V1_VALUE,
            token.as_str(),
            secret_id.as_str(),
            jwt.as_str(),
            vault.root_token(),
        ] {
            assert!(!text(out).contains(hidden), "{}", text(out));
        }
    }
    // The state on the cluster, and the lock beside the file.
    let state = state_text(cluster) + &std::fs::read_to_string(root.join("tazuna.lock")).unwrap();
    for hidden in [
        VAULT_VALUE,
        VAULT_V1_VALUE,
        "rotated-by-kubernetes",
        token.as_str(),
        secret_id.as_str(),
    ] {
        assert!(!state.contains(hidden));
    }
    succeed(cluster.kubectl().args([
        "delete",
        "clusterrolebinding",
        &format!("{ns}-vault-reviewer"),
    ]));
}

const SOPS_VALUE: &str = "e2e-sops-yaml-value-5c1d";
const SOPS_ENV_VALUE: &str = "e2e-sops-dotenv-value-a94b";

/// SOPS files in the repository behind the built-in `sops` resolver: the real `age-keygen`, `age`
/// and `sops` (built from the Go module proxy) make a key and encrypt a YAML, a JSON and a dotenv
/// file; the host opens each file's data key with `SOPS_AGE_KEY_FILE` and the plugin decrypts in
/// memory. kubectl sees the values (a string, an int, a nested key); no file holds them after the
/// run; no output or state holds a value or the key. A wrong key, a value changed by hand and a
/// key added by hand each fail before any write; a third-party resolver opens no age file
/// without `keys:age`.
#[test]
fn sops_files_decrypt_with_the_users_age_key_in_memory_and_tampering_is_refused() {
    let Some(tools) = tazuna_tests::e2e::tools(&[Tool::Sops, Tool::Age, Tool::AgeKeygen]) else {
        return;
    };
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let namespace = cluster.namespace("sops");
    let ns = namespace.name().to_owned();
    let keys = tempfile::tempdir().unwrap();
    let keygen = |name: &str| {
        let file = keys.path().join(name);
        let out = succeed(
            Command::new(tools.path(Tool::AgeKeygen))
                .arg("-o")
                .arg(&file),
        );
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        let recipient = said
            .split_whitespace()
            .find(|word| word.starts_with("age1"))
            .unwrap()
            .to_owned();
        (file, recipient)
    };
    let (key_file, recipient) = keygen("keys.txt");
    let (other_key, other_recipient) = keygen("other.txt");
    let secret_key = std::fs::read_to_string(&key_file)
        .unwrap()
        .lines()
        .find(|line| line.starts_with("AGE-SECRET-KEY-"))
        .unwrap()
        .to_owned();

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let sops = |args: &[&str]| {
        succeed(
            Command::new(tools.path(Tool::Sops))
                .current_dir(root)
                .env("SOPS_AGE_KEY_FILE", &key_file)
                .args(args),
        )
    };
    write(
        root,
        "secrets/app.yaml",
        &format!(
            "db:\n  password: {SOPS_VALUE}\n  port: 5432\n  enabled: true\nhosts:\n  - a.example.com\n  - b.example.com\n"
        ),
    );
    write(
        root,
        "secrets/app.json",
        "{\"token\": \"json-token-value\", \"ratio\": 0.25}",
    );
    write(
        root,
        "secrets/app.env",
        &format!("API_KEY={SOPS_ENV_VALUE}\nREGION=eu-west-1\n"),
    );
    for (plain, sealed) in [
        ("secrets/app.yaml", "secrets/app.enc.yaml"),
        ("secrets/app.json", "secrets/app.enc.json"),
        ("secrets/app.env", "secrets/app.enc.env"),
    ] {
        sops(&["--encrypt", "--age", &recipient, "--output", sealed, plain]);
        std::fs::remove_file(root.join(plain)).unwrap();
    }
    write(
        root,
        "app/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\nstringData:\n  password: ref+sops:secrets/app.enc.yaml#db/password\n  port: ref+sops:secrets/app.enc.yaml#/db/port\n  token: ref+sops:secrets/app.enc.json#token\n  api-key: ref+sops:secrets/app.enc.env#API_KEY\n",
    );
    let config = format!(
        "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  providers:
    - name: sops
      type: sops
      sops: {{}}
  manifests:
    - name: sops-app
      type: manifests
      path: app/secret.yaml
      namespace: {ns}
"
    );
    write(root, "tazuna.yaml", &config);
    let home = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let tazuna = |key: &Path| {
        let mut command = on_cluster(cluster, root);
        command
            .env_remove("SOPS_AGE_KEY")
            .env("SOPS_AGE_KEY_FILE", key)
            .env("HOME", home.path())
            .env("TMPDIR", scratch.path());
        command
    };
    let applied = succeed(tazuna(&key_file).arg("apply"));
    assert_eq!(value_in(&namespace, "app", "password"), SOPS_VALUE);
    assert_eq!(value_in(&namespace, "app", "port"), "5432");
    assert_eq!(value_in(&namespace, "app", "token"), "json-token-value");
    assert_eq!(value_in(&namespace, "app", "api-key"), SOPS_ENV_VALUE);
    // No plaintext on disk: not in the project, the home or the run's temporary files.
    for place in [root, home.path(), scratch.path()] {
        for entry in walk(place) {
            let bytes = std::fs::read(&entry).unwrap_or_default();
            let content = String::from_utf8_lossy(&bytes);
            assert!(
                !content.contains(SOPS_VALUE) && !content.contains(SOPS_ENV_VALUE),
                "{} holds a value",
                entry.display()
            );
        }
    }

    // A value changed with `sops set` is a changed Secret in plan, redacted.
    sops(&[
        "set",
        "secrets/app.enc.env",
        "[\"API_KEY\"]",
        "\"rotated-sops-value\"",
    ]);
    let planned = output(tazuna(&key_file).args(["plan", "--detailed-exitcode"]));
    assert_eq!(planned.status.code(), Some(2), "{}", text(&planned));
    assert!(
        !text(&planned).contains("rotated-sops-value"),
        "{}",
        text(&planned)
    );

    // A key that is not a recipient: named, nothing applied.
    let wrong_key = output(tazuna(&other_key).arg("apply"));
    assert_eq!(wrong_key.status.code(), Some(1), "{}", text(&wrong_key));
    assert!(
        text(&wrong_key).contains("provider `sops`")
            && text(&wrong_key).contains("none of your age identities"),
        "{}",
        text(&wrong_key)
    );
    // A value changed by hand: its tag does not hold.
    let sealed_path = root.join("secrets/app.enc.yaml");
    let sealed = std::fs::read_to_string(&sealed_path).unwrap();
    let at = sealed.find("data:").unwrap() + "data:".len();
    let mut changed = sealed.clone();
    let swapped = if &sealed[at..at + 1] == "A" { "B" } else { "A" };
    changed.replace_range(at..at + 1, swapped);
    std::fs::write(&sealed_path, &changed).unwrap();
    let tampered = output(tazuna(&key_file).arg("apply"));
    assert_eq!(tampered.status.code(), Some(1), "{}", text(&tampered));
    assert!(
        text(&tampered).contains("changed after it was encrypted"),
        "{}",
        text(&tampered)
    );
    // A plaintext key added by hand: the MAC does not match.
    std::fs::write(
        &sealed_path,
        sealed.replacen("db:\n", "injected_unencrypted: evil\ndb:\n", 1),
    )
    .unwrap();
    let added = output(tazuna(&key_file).arg("apply"));
    assert_eq!(added.status.code(), Some(1), "{}", text(&added));
    assert!(
        text(&added).contains("the MAC does not match"),
        "{}",
        text(&added)
    );
    std::fs::write(&sealed_path, &sealed).unwrap();
    // A file that is not SOPS at all.
    write(root, "secrets/plain.yaml", "token: not-encrypted\n");
    edit(
        &root.join("app/secret.yaml"),
        "secrets/app.enc.json#token",
        "secrets/plain.yaml#token",
    );
    let plain = output(tazuna(&key_file).arg("apply"));
    assert_eq!(plain.status.code(), Some(1), "{}", text(&plain));
    assert!(
        text(&plain).contains("no `sops` metadata"),
        "{}",
        text(&plain)
    );
    edit(
        &root.join("app/secret.yaml"),
        "secrets/plain.yaml#token",
        "secrets/app.enc.json#token",
    );
    assert_eq!(
        value_in(&namespace, "app", "api-key"),
        SOPS_ENV_VALUE,
        "nothing was applied"
    );

    // A third-party resolver opens no age file without `keys:age`.
    let age_file = root.join("other.age");
    succeed(
        Command::new(tools.path(Tool::Age))
            .args(["-r", &recipient, "-r", &other_recipient, "-o"])
            .arg(&age_file)
            .arg(&key_file),
    );
    let probe = common::plugin("probe-resolver");
    write(
        root,
        "tazuna.yaml",
        &format!(
            "{}  plugins:\n    - name: probe-resolver\n      source: file://{}\n      grants: []\n",
            config.replace(
                "  manifests:",
                "    - name: peek\n      type: probe-resolver\n  manifests:"
            ),
            probe.display()
        ),
    );
    write(
        root,
        "app/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: peek\nstringData:\n  seen: ref+peek:age:other.age\n",
    );
    let refused = output(tazuna(&key_file).arg("apply"));
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(text(&refused).contains("keys:age"), "{}", text(&refused));

    for out in [
        &applied, &planned, &wrong_key, &tampered, &added, &plain, &refused,
    ] {
        for hidden in [
            SOPS_VALUE,
            SOPS_ENV_VALUE,
            "rotated-sops-value",
            secret_key.as_str(),
        ] {
            assert!(!text(out).contains(hidden), "{}", text(out));
        }
    }
    let state = state_text(cluster) + &std::fs::read_to_string(root.join("tazuna.lock")).unwrap();
    assert!(!state.contains(SOPS_VALUE) && !state.contains(SOPS_ENV_VALUE));
}

/// Every file below `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

const MGMT_VALUE: &str = "e2e-management-secret-value-6d0e";

/// A Secret of a management cluster behind the built-in `kubernetes` resolver: the provider names
/// a context of the run's kubeconfig whose user is a service account that may only `get` one
/// Secret. The host reads it with that context's credentials; the audit log shows that user made
/// one `get` of that Secret a run and nothing else; kubectl sees the value in the target
/// namespace, and no output or state holds it. A missing Secret, a missing key and a Secret the
/// user may not read fail before any write; a context the provider does not name, and a
/// third-party resolver without `read:cluster-secrets`, are refused.
#[test]
fn a_management_clusters_secret_is_read_with_its_contexts_own_rights_and_only_read() {
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let management = cluster.namespace("mgmt");
    let mgmt = management.name().to_owned();
    let target = cluster.namespace("from-mgmt");
    let ns = target.name().to_owned();
    succeed(management.kubectl().args([
        "create",
        "secret",
        "generic",
        "repo",
        &format!("--from-literal=password={MGMT_VALUE}"),
        "--from-literal=url=https://git.example.com/platform.git",
    ]));
    succeed(management.kubectl().args([
        "create",
        "secret",
        "generic",
        "hidden",
        "--from-literal=k=v",
    ]));
    succeed(
        management
            .kubectl()
            .args(["create", "serviceaccount", "reader"]),
    );
    succeed(management.kubectl().args([
        "create",
        "configmap",
        "cluster-info",
        &format!("--from-literal=namespace={ns}"),
        "--from-literal=region=eu-west-1",
    ]));
    succeed(management.kubectl().args([
        "create",
        "role",
        "read-info",
        "--verb=get",
        "--resource=configmaps",
        "--resource-name=cluster-info",
    ]));
    succeed(management.kubectl().args([
        "create",
        "rolebinding",
        "read-info",
        "--role=read-info",
        &format!("--serviceaccount={mgmt}:reader"),
    ]));
    succeed(management.kubectl().args([
        "create",
        "role",
        "read-repo",
        "--verb=get",
        "--resource=secrets",
        "--resource-name=repo",
        // Allowed, but not there: a 404, not a 403.
        "--resource-name=absent",
    ]));
    succeed(management.kubectl().args([
        "create",
        "rolebinding",
        "read-repo",
        "--role=read-repo",
        &format!("--serviceaccount={mgmt}:reader"),
    ]));
    let token =
        String::from_utf8(succeed(management.kubectl().args(["create", "token", "reader"])).stdout)
            .unwrap()
            .trim()
            .to_owned();
    // The run's kubeconfig: the harness's, plus a context `management` as the reader.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let kubeconfig = root.join("kubeconfig");
    std::fs::copy(cluster.kubeconfig(), &kubeconfig).unwrap();
    let cluster_name = String::from_utf8(
        succeed(cluster.kubectl().args([
            "config",
            "view",
            "--minify",
            "-o",
            "jsonpath={.clusters[0].name}",
        ]))
        .stdout,
    )
    .unwrap();
    let config_kubectl = |args: &[&str]| {
        succeed(
            Command::new(
                tazuna_tests::e2e::tool(Tool::Kubectl).unwrap_or_else(|| "kubectl".into()),
            )
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(args),
        )
    };
    config_kubectl(&[
        "config",
        "set-credentials",
        "mgmt-reader",
        &format!("--token={token}"),
    ]);
    config_kubectl(&[
        "config",
        "set-context",
        "management",
        &format!("--cluster={cluster_name}"),
        "--user=mgmt-reader",
    ]);
    write(
        root,
        "app/secret.yaml",
        &format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: repo\nstringData:\n  password: ref+mgmt:repo#password\n  url: ref+mgmt:{mgmt}/repo#url\n  same: ref+creds:password\n"
        ),
    );
    // Inputs from the same cluster: a ConfigMap's keys (the target namespace comes from it)
    // and a Secret's (each sensitive).
    let config = format!(
        "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  inputs:
    - name: platform
      type: configmap
      configMap: {{ context: management, namespace: {mgmt}, name: cluster-info }}
    - name: creds
      type: secret
      secret: {{ context: management, namespace: {mgmt}, name: repo }}
  providers:
    - name: mgmt
      type: kubernetes
      kubernetes:
        context: management
        namespace: {mgmt}
  manifests:
    - name: mgmt-app
      type: manifests
      path: app/secret.yaml
      namespace: '{{{{ .Inputs.platform.namespace }}}}'
"
    );
    write(root, "tazuna.yaml", &config);
    let tazuna = || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tazuna"));
        command
            .current_dir(root)
            .env("NO_COLOR", "1")
            .env_remove("KUBECONFIG")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--context")
            .arg(cluster.context());
        command
    };
    let reader = format!("system:serviceaccount:{mgmt}:reader");
    let by_reader = || {
        cluster.requests_from("tazuna/").map(|events| {
            events
                .into_iter()
                .filter(|e| e.user == reader)
                .map(|e| format!("{} {} {}", e.verb, e.resource, e.name.unwrap_or_default()))
                .collect::<Vec<_>>()
        })
    };
    let applied = succeed(tazuna().arg("apply"));
    assert_eq!(value_in(&target, "repo", "password"), MGMT_VALUE);
    assert_eq!(
        value_in(&target, "repo", "url"),
        "https://git.example.com/platform.git"
    );
    assert_eq!(value_in(&target, "repo", "same"), MGMT_VALUE);
    assert!(
        text(&applied).contains(&format!(
            "note: input `platform` (from `ConfigMap {mgmt}/cluster-info on context management`): `namespace`"
        )),
        "{}",
        text(&applied)
    );
    if let Some(mut requests) = by_reader() {
        requests.sort();
        // The inputs are read as the file loads; the resolver reads its Secret once.
        assert_eq!(
            requests,
            [
                "get configmaps cluster-info",
                "get secrets repo",
                "get secrets repo"
            ],
            "reads, and nothing else"
        );
    }

    // A missing key, a Secret the reader may not get, a missing Secret: named, nothing written.
    for (reference, said) in [
        ("ref+mgmt:repo#nokey", "key `nokey` of Secret"),
        ("ref+mgmt:hidden#k", "may not get Secret"),
        ("ref+mgmt:absent#k", "does not exist"),
    ] {
        edit(
            &root.join("app/secret.yaml"),
            "ref+mgmt:repo#password",
            reference,
        );
        let failed = output(tazuna().arg("apply"));
        assert_eq!(failed.status.code(), Some(1), "{}", text(&failed));
        assert!(
            text(&failed).contains("provider `mgmt`") && text(&failed).contains(said),
            "{}",
            text(&failed)
        );
        assert!(!text(&failed).contains(&token));
        edit(
            &root.join("app/secret.yaml"),
            reference,
            "ref+mgmt:repo#password",
        );
    }
    assert_eq!(value_in(&target, "repo", "password"), MGMT_VALUE);

    // A third-party resolver reads no cluster without its grant, and with it no context the
    // config does not name.
    let probe = common::plugin("probe-resolver");
    let with_probe = |grants: &str, reference: &str| {
        write(
            root,
            "tazuna.yaml",
            &format!(
                "{}  plugins:\n    - name: probe-resolver\n      source: file://{}\n      grants: [{grants}]\n",
                config.replace("  manifests:", "    - name: peek\n      type: probe-resolver\n      probe-resolver:\n        context: management\n  manifests:"),
                probe.display()
            ),
        );
        write(
            root,
            "app/secret.yaml",
            &format!(
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: peek\nstringData:\n  seen: ref+peek:{reference}\n"
            ),
        );
        output(tazuna().arg("apply"))
    };
    for (grants, reference, said) in [
        (
            "",
            format!("secret:management|{mgmt}/repo"),
            "read:cluster-secrets",
        ),
        (
            "read:cluster-secrets",
            format!("secret:{}|{mgmt}/repo", cluster.context()),
            "not the provider's `context`",
        ),
    ] {
        let refused = with_probe(grants, &reference);
        assert_eq!(
            refused.status.code(),
            Some(1),
            "{reference}: {}",
            text(&refused)
        );
        assert!(
            text(&refused).contains(said),
            "{reference}: {}",
            text(&refused)
        );
    }
    assert!(
        !text(&applied).contains(MGMT_VALUE) && !text(&applied).contains(&token),
        "{}",
        text(&applied)
    );
    assert!(!state_text(cluster).contains(MGMT_VALUE));
}

const S3_STATE_SECRET: &str = "tofu-s3-sensitive-value-77e0";

/// A state kept by OpenTofu's `s3` backend in moto (the real AWS API server, checking every
/// signature): the real `tofu` writes it there, `spec.inputs` names the bucket and key, and the
/// host fetches it signed with the AWS chain's credentials. kubectl sees the output in a
/// ConfigMap and the sensitive output in a Secret; no output or state holds the sensitive value or
/// the key. A key that is not there and a credential S3 refuses are errors naming the input.
#[test]
fn a_state_in_the_s3_backend_is_fetched_signed_and_its_outputs_are_inputs() {
    let Some(tofu) = tazuna_tests::e2e::tool(Tool::Tofu) else {
        return;
    };
    let Some(helm) = tazuna_tests::e2e::tool(Tool::Helm) else {
        return;
    };
    let Some(moto) = tazuna_tests::e2e::moto() else {
        return;
    };
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let namespace = cluster.namespace("s3-inputs");
    let ns = namespace.name().to_owned();
    moto.aws("client('s3').create_bucket(Bucket='tofu-state')\n");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (key_id, secret_key) = moto.credentials();
    write(
        root,
        "infra/main.tf",
        &format!(
            "terraform {{\n  backend \"s3\" {{\n    bucket = \"tofu-state\"\n    key = \"env/prod/terraform.tfstate\"\n    region = \"us-east-1\"\n    endpoints = {{ s3 = \"{}\" }}\n    use_path_style = true\n    skip_credentials_validation = true\n    skip_requesting_account_id = true\n    skip_metadata_api_check = true\n    skip_region_validation = true\n  }}\n}}\n\
             resource \"terraform_data\" \"target_group\" {{\n  input = \"{TARGET_GROUP}\"\n}}\n\
             output \"alb_target_group_arn\" {{\n  value = terraform_data.target_group.output\n}}\n\
             output \"db_password\" {{\n  value     = \"{S3_STATE_SECRET}\"\n  sensitive = true\n}}\n",
            moto.url()
        ),
    );
    // moto 5.1.4 checks the signature of the `s3` backend's `ListObjectsV2` (a `/` in its
    // prefix) wrongly, as it does boto3's own: off while `tofu` writes, on for every request
    // of Tazuna's.
    moto.authentication(false);
    for args in [
        &["init", "-input=false", "-no-color"][..],
        &["apply", "-auto-approve", "-input=false", "-no-color"],
    ] {
        succeed(
            Command::new(&tofu)
                .current_dir(root.join("infra"))
                .env("TF_IN_AUTOMATION", "1")
                .env("HOME", root)
                .env("AWS_ACCESS_KEY_ID", key_id)
                .env("AWS_SECRET_ACCESS_KEY", secret_key)
                .args(args),
        );
    }
    moto.authentication(true);
    assert!(
        !root.join("infra/terraform.tfstate").exists(),
        "the state is in S3 only"
    );
    write(
        root,
        "chart/Chart.yaml",
        "apiVersion: v2\nname: binding\nversion: 0.1.0\n",
    );
    write(
        root,
        "chart/templates/binding.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: binding\ndata:\n  targetGroupARN: {{ .Values.targetGroupARN | quote }}\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: {{ .Values.password | quote }}\n",
    );
    let config = |key: &str| {
        format!(
            "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  inputs:
    - name: infra
      type: opentofu-state
      s3:
        bucket: tofu-state
        key: {key}
        region: us-east-1
        endpoint: {}
  manifests:
    - name: s3-app
      type: helm
      path: chart
      namespace: {ns}
      helm:
        values:
          targetGroupARN: '{{{{ .Inputs.infra.alb_target_group_arn }}}}'
          password: '{{{{ .Inputs.infra.db_password }}}}'
",
            moto.url()
        )
    };
    write(root, "tazuna.yaml", &config("env/prod/terraform.tfstate"));
    let home = tempfile::tempdir().unwrap();
    let tazuna = |secret: &str| {
        let mut command = on_cluster(cluster, root);
        command
            .env_remove("AWS_PROFILE")
            .env_remove("AWS_REGION")
            .env("HOME", home.path())
            .env("TAZUNA_TOOL_HELM", &helm)
            .env("AWS_ACCESS_KEY_ID", key_id)
            .env("AWS_SECRET_ACCESS_KEY", secret);
        command
    };
    let applied = succeed(tazuna(secret_key).arg("apply"));
    assert!(
        text(&applied)
            .contains("note: input `infra` (state `s3://tofu-state/env/prod/terraform.tfstate`"),
        "{}",
        text(&applied)
    );
    let arn = succeed(namespace.kubectl().args([
        "get",
        "configmap",
        "binding",
        "-o",
        "jsonpath={.data.targetGroupARN}",
    ]));
    assert_eq!(String::from_utf8_lossy(&arn.stdout), TARGET_GROUP);
    assert_eq!(value_in(&namespace, "db", "password"), S3_STATE_SECRET);

    write(
        root,
        "tazuna.yaml",
        &config("env/missing/terraform.tfstate"),
    );
    let missing = output(tazuna(secret_key).arg("plan"));
    assert_eq!(missing.status.code(), Some(1), "{}", text(&missing));
    assert!(
        text(&missing).contains("input `infra`: cannot read `s3://tofu-state/env/missing/terraform.tfstate`: the object does not exist"),
        "{}",
        text(&missing)
    );
    write(root, "tazuna.yaml", &config("env/prod/terraform.tfstate"));
    let refused = output(tazuna("not-the-key").arg("plan"));
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        text(&refused).contains("S3 refused the request (SignatureDoesNotMatch"),
        "{}",
        text(&refused)
    );
    for out in [&applied, &missing, &refused] {
        assert!(
            !text(out).contains(S3_STATE_SECRET) && !text(out).contains(secret_key),
            "{}",
            text(out)
        );
    }
    assert!(!state_text(cluster).contains(S3_STATE_SECRET));
}

const ESO_VALUE: &str = "e2e-eso-first-value-4b2f";

/// The hand-over to External Secrets Operator, as a platform team lives it. Day one: the Argo CD
/// repository credential comes from AWS Secrets Manager (moto), resolved by Tazuna. Day two: the
/// file adds ESO's CRDs, a `ClusterSecretStore` and `handover` on the provider; the same Secret is
/// now applied as an `ExternalSecret`, the real ESO controller (built from the Go module proxy,
/// run as a process: kwok runs no containers, so this process stands in for its Deployment's Pod
/// and nothing else) takes the Secret over, and a value rotated in the store reaches the cluster
/// without Tazuna. kubectl sees each step; Tazuna's output after the hand-over holds no value;
/// `plan` and `state drift` stay quiet while ESO rewrites the Secret; `apply --prune` leaves it.
#[test]
fn a_provider_hands_its_sync_to_external_secrets_and_later_values_never_pass_through_tazuna() {
    let Some(eso) = tazuna_tests::e2e::tool(Tool::ExternalSecrets) else {
        return;
    };
    let Some(moto) = tazuna_tests::e2e::moto() else {
        return;
    };
    let Some(cluster) = TestCluster::shared() else {
        return;
    };
    let namespace = cluster.namespace("eso-app");
    let ns = namespace.name().to_owned();
    let system = cluster.namespace("eso-system");
    let store = format!("aws-{}", tazuna_tests::e2e::unique_suffix());
    moto.aws(&format!(
        "client('secretsmanager').create_secret(Name='argocd/repo', SecretString=json.dumps({{'url': 'https://git.example.com/platform.git', 'password': '{ESO_VALUE}'}}))\n"
    ));
    let (key_id, secret_key) = moto.credentials();
    // The store's own credentials, as a platform team provisions them (IRSA in AWS).
    succeed(system.kubectl().args([
        "create",
        "secret",
        "generic",
        "aws-creds",
        &format!("--from-literal=id={key_id}"),
        &format!("--from-literal=secret={secret_key}"),
    ]));
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("eso/crds")).unwrap();
    for entry in std::fs::read_dir(tazuna_tests::ExternalSecrets::crds(&eso)).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, root.join("eso/crds").join(path.file_name().unwrap())).unwrap();
    }
    write(
        root,
        "store/store.yaml",
        &format!(
            "apiVersion: external-secrets.io/v1\nkind: ClusterSecretStore\nmetadata:\n  name: {store}\nspec:\n  provider:\n    aws:\n      service: SecretsManager\n      region: us-east-1\n      auth:\n        secretRef:\n          accessKeyIDSecretRef: {{ name: aws-creds, key: id, namespace: {} }}\n          secretAccessKeySecretRef: {{ name: aws-creds, key: secret, namespace: {} }}\n",
            system.name(),
            system.name()
        ),
    );
    write(
        root,
        "argocd/repo.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: platform-repo\n  labels:\n    argocd.argoproj.io/secret-type: repository\nstringData:\n  type: git\n  url: ref+aws:argocd/repo#url\n  password: ref+aws:argocd/repo#password\n",
    );
    let day_one = format!(
        "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  providers:
    - name: aws
      type: aws-secrets-manager
      aws-secrets-manager:
        region: us-east-1
        endpoint: {}/
  manifests:
    - name: argocd-repo
      type: manifests
      path: argocd/repo.yaml
      namespace: {ns}
",
        moto.url()
    );
    let day_two = day_one
        .replace(
            &format!("        endpoint: {}/\n", moto.url()),
            &format!(
                "        endpoint: {}/\n      handover:\n        externalSecrets:\n          store: {{ kind: ClusterSecretStore, name: {store} }}\n          refreshInterval: 2s\n",
                moto.url()
            ),
        )
        .replace(
            "  manifests:\n",
            "  manifests:\n    - name: eso-crds\n      type: manifests\n      path: eso/crds\n      tags: [eso-crds]\n    - name: secret-store\n      type: manifests\n      path: store/store.yaml\n      dependsOn: [eso-crds]\n",
        )
        .replace(
            &format!("      path: argocd/repo.yaml\n      namespace: {ns}\n"),
            &format!("      path: argocd/repo.yaml\n      namespace: {ns}\n      dependsOn: [secret-store]\n"),
        );
    let home = tempfile::tempdir().unwrap();
    // After the hand-over Tazuna has no AWS credentials at all: it could not read a value if it
    // tried.
    let tazuna = || {
        let mut command = on_cluster(cluster, root);
        command
            .env_remove("AWS_PROFILE")
            .env_remove("AWS_REGION")
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env("HOME", home.path());
        command
    };

    // Day one: Tazuna resolves the reference itself.
    write(root, "tazuna.yaml", &day_one);
    succeed(
        tazuna()
            .env("AWS_ACCESS_KEY_ID", key_id)
            .env("AWS_SECRET_ACCESS_KEY", secret_key)
            .arg("apply"),
    );
    assert_eq!(value_in(&namespace, "platform-repo", "password"), ESO_VALUE);

    // Day two: ESO's CRDs first, then its controller, then the whole file.
    write(root, "tazuna.yaml", &day_two);
    succeed(tazuna().args(["apply", "--tags", "eso-crds"]));
    cluster.wait_established("externalsecrets.external-secrets.io");
    cluster.wait_established("clustersecretstores.external-secrets.io");
    let controller = tazuna_tests::ExternalSecrets::start(
        &eso,
        cluster.kubeconfig(),
        &[
            ("AWS_SECRETSMANAGER_ENDPOINT", moto.url()),
            ("AWS_STS_ENDPOINT", moto.url()),
        ],
    )
    .unwrap_or_else(|e| panic!("{e:#}"));
    let handed = succeed(tazuna().arg("apply"));
    let said = text(&handed);
    assert!(!said.contains(ESO_VALUE), "{said}");
    // The ExternalSecret is Ready, and ESO owns the Secret Tazuna made on day one.
    let ready = succeed(namespace.kubectl().args([
        "get",
        "externalsecret",
        "platform-repo",
        "-o",
        "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
    ]));
    assert_eq!(
        String::from_utf8_lossy(&ready.stdout),
        "True",
        "{}",
        controller.log_tail(20)
    );
    let owner = succeed(namespace.kubectl().args([
        "get",
        "secret",
        "platform-repo",
        "-o",
        "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.labels.argocd\\.argoproj\\.io/secret-type}",
    ]));
    assert_eq!(
        String::from_utf8_lossy(&owner.stdout),
        "ExternalSecret/repository"
    );
    assert_eq!(value_in(&namespace, "platform-repo", "password"), ESO_VALUE);
    assert_eq!(value_in(&namespace, "platform-repo", "type"), "git");

    // A value rotated in the store reaches the cluster through ESO alone.
    moto.aws("client('secretsmanager').put_secret_value(SecretId='argocd/repo', SecretString=json.dumps({'url': 'https://git.example.com/platform.git', 'password': 'rotated-through-eso'}))\n");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while value_in(&namespace, "platform-repo", "password") != "rotated-through-eso" {
        assert!(
            std::time::Instant::now() < deadline,
            "ESO did not sync: {}",
            controller.log_tail(20)
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let planned = output(tazuna().args(["plan", "--detailed-exitcode"]));
    assert_eq!(planned.status.code(), Some(0), "{}", text(&planned));
    let drift = output(tazuna().args(["state", "drift"]));
    assert_eq!(drift.status.code(), Some(0), "{}", text(&drift));
    let pruned = succeed(tazuna().args(["apply", "--prune"]));
    assert_eq!(
        value_in(&namespace, "platform-repo", "password"),
        "rotated-through-eso",
        "{}",
        text(&pruned)
    );
    for out in [&handed, &planned, &drift, &pruned] {
        assert!(
            !text(out).contains("rotated-through-eso") && !text(out).contains(ESO_VALUE),
            "{}",
            text(out)
        );
    }
    assert!(!state_text(cluster).contains("rotated-through-eso"));
    drop(controller);
    succeed(
        cluster
            .kubectl()
            .args(["delete", "clustersecretstore", &store]),
    );
}

const EXAMPLE_REPO_VALUE: &str = "e2e-example-repo-password-91c3";
const EXAMPLE_DNS_VALUE: &str = "e2e-example-dns-key-3d57";

/// `examples/secret-boundary` as shipped, against real stores: the real `tofu` writes the state,
/// moto holds the Argo CD credential, `vault server -dev` the DNS key. `tazuna verify -e day-one`
/// passes (Tazuna resolves both), and `tazuna verify -e day-two` passes with the real ESO
/// controller running beside the throwaway control plane (`--controller`): the example's own
/// tests check there that ESO owns the credential's Secret. No output holds a value.
#[test]
fn the_secret_boundary_example_verifies_against_real_stores() {
    let Some(tools) = tazuna_tests::e2e::tools(&[
        Tool::Tofu,
        Tool::Helm,
        Tool::ExternalSecrets,
        Tool::Etcd,
        Tool::KubeApiserver,
        Tool::Kwok,
    ]) else {
        return;
    };
    let Some(moto) = tazuna_tests::e2e::moto() else {
        return;
    };
    let Some(vault) = tazuna_tests::e2e::vault() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    common::copy_dir(&common::root().join("examples/secret-boundary"), root);
    for args in [
        &["init", "-input=false", "-no-color"][..],
        &["apply", "-auto-approve", "-input=false", "-no-color"],
    ] {
        succeed(
            Command::new(tools.path(Tool::Tofu))
                .current_dir(root.join("infra"))
                .env("TF_IN_AUTOMATION", "1")
                .env("HOME", root)
                .args(args),
        );
    }
    moto.aws(&format!(
        "client('secretsmanager').create_secret(Name='argocd/repo', SecretString=json.dumps({{'url': 'https://git.example.com/platform.git', 'password': '{EXAMPLE_REPO_VALUE}'}}))\n"
    ));
    vault.cli(&[
        "kv",
        "put",
        "secret/cert-manager/route53",
        "access-key-id=AKIAEXAMPLE",
        &format!("secret-access-key={EXAMPLE_DNS_VALUE}"),
    ]);
    std::fs::copy(vault.ca_file(), root.join("vault-ca.pem")).unwrap();
    let eso = tools.path(Tool::ExternalSecrets);
    common::copy_dir(
        &tazuna_tests::ExternalSecrets::crds(&eso),
        &root.join("vendor/external-secrets"),
    );
    let file = std::fs::read_to_string(root.join("tazuna.yaml"))
        .unwrap()
        .replace("http://127.0.0.1:4566/", &format!("{}/", moto.url()))
        .replace("https://127.0.0.1:8200", &vault.address());
    std::fs::write(root.join("tazuna.yaml"), file).unwrap();
    let home = tempfile::tempdir().unwrap();
    let (key_id, secret_key) = moto.credentials();
    let verify = |environment: &str, controllers: &[String]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tazuna"));
        command
            .current_dir(root)
            .env("NO_COLOR", "1")
            .env_remove("KUBECONFIG")
            .env_remove("AWS_PROFILE")
            .env("HOME", home.path())
            // The control plane's binaries, where install.sh put them.
            .env("TAZUNA_DEV_CACHE", tazuna_tests::assets::cache_dir())
            .env("TAZUNA_TOOL_HELM", tools.path(Tool::Helm))
            .env("AWS_ACCESS_KEY_ID", key_id)
            .env("AWS_SECRET_ACCESS_KEY", secret_key)
            .env("AWS_SECRETSMANAGER_ENDPOINT", moto.url())
            .env("AWS_STS_ENDPOINT", moto.url())
            .env("VAULT_TOKEN", vault.root_token())
            .args(["verify", "-e", environment]);
        for controller in controllers {
            command.arg("--controller").arg(controller);
        }
        output(&mut command)
    };
    let day_one = verify("day-one", &[]);
    assert!(day_one.status.success(), "{}", text(&day_one));
    assert!(
        text(&day_one).contains("verify: passed"),
        "{}",
        text(&day_one)
    );
    let day_two = verify(
        "day-two",
        &[format!("{} --metrics-addr=127.0.0.1:0", eso.display())],
    );
    assert!(day_two.status.success(), "{}", text(&day_two));
    assert!(
        text(&day_two).contains("running controller")
            && text(&day_two).contains("verify: passed")
            && text(&day_two).contains("ExternalSecret"),
        "{}",
        text(&day_two)
    );
    for out in [&day_one, &day_two] {
        for hidden in [
            EXAMPLE_REPO_VALUE,
            EXAMPLE_DNS_VALUE,
            secret_key,
            vault.root_token(),
        ] {
            assert!(!text(out).contains(hidden), "{}", text(out));
        }
    }
}
