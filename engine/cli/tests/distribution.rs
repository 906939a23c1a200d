//! End-to-end: third-party plugins from a real OCI registry (Debian's
//! `docker-registry`). `tazuna plugin push` publishes real wasm components,
//! skopeo (an independent client) reads the artifacts back, and `tazuna build`
//! resolves, pins (tazuna.lock), caches and, once pinned, runs offline.
//!
//! Tests skip with a printed reason when the registry binary is missing,
//! unless `TAZUNA_E2E_REQUIRED` is set.

mod common;

use std::path::Path;
use std::process::Command;

use common::{edit, on_cluster, output, plugin as component, succeed, text};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tazuna_tests::e2e::{self, TestCluster};
use tazuna_tests::registry::Registry;

fn sha256_file(path: &Path) -> String {
    format!(
        "sha256:{}",
        hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
    )
}

/// `tazuna` in `dir`, with its own cache directory and docker config.
fn tazuna(dir: &Path, cache: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tazuna"));
    command
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("TAZUNA_CACHE_DIR", cache)
        .env("DOCKER_CONFIG", dir.join("docker"));
    command
}

fn fail(command: &mut Command) -> String {
    let out = output(command);
    assert_eq!(out.status.code(), Some(1), "`{command:?}`: {}", text(&out));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The raw OCI manifest of `reference`, read with skopeo, if skopeo is here.
fn skopeo_manifest(reference: &str) -> Option<Value> {
    let skopeo = tazuna_tests::assets::which("skopeo")?;
    let out = succeed(Command::new(skopeo).args([
        "inspect",
        "--tls-verify=false",
        "--raw",
        &format!("docker://{reference}"),
    ]));
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

fn push(dir: &Path, cache: &Path, wasm: &Path, reference: &str) -> String {
    let out = succeed(
        tazuna(dir, cache)
            .args(["plugin", "push"])
            .arg(wasm)
            .arg(reference),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    stdout
        .lines()
        .find_map(|line| line.strip_prefix("digest: "))
        .unwrap_or_else(|| panic!("push prints the digest: {stdout}"))
        .to_owned()
}

fn config(registry: &Registry, version: &str, grants: &str) -> String {
    format!(
        "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  plugins:
    - name: configmap
      source: oci://{}/plugins/configmap
      version: \"{version}\"
      grants: [{grants}]
  manifests:
    - name: settings
      type: configmap
      namespace: apps
      configmap:
        data:
          LOG_LEVEL: debug
",
        registry.host()
    )
}

fn lock(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("tazuna.lock")).expect("tazuna.lock is written");
    serde_yaml::from_str(&text).unwrap()
}

#[test]
fn an_oci_plugin_is_pinned_in_the_lock_cached_and_then_runs_offline() {
    let Some(registry) = e2e::registry() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let cache = root.join("cache");
    let example = component("example");
    let probe = component("probe");

    // Publish: the example plugin as 0.1.0, a different component as 0.2.0.
    let host = registry.host();
    let digest = push(
        root,
        &cache,
        &example,
        &format!("oci://{host}/plugins/configmap:0.1.0"),
    );
    // A plugin's tag is its version: another tag is refused, none is added.
    let refused = fail(
        tazuna(root, &cache)
            .args(["plugin", "push"])
            .arg(&probe)
            .arg(format!("oci://{host}/plugins/configmap:0.2.0")),
    );
    assert!(
        refused.contains("plugin `probe` is version 0.1.0, and the tag is `0.2.0`"),
        "{refused}"
    );
    let own = succeed(
        tazuna(root, &cache)
            .args(["plugin", "push"])
            .arg(&probe)
            .arg(format!("oci://{host}/plugins/probe")),
    );
    assert!(
        String::from_utf8_lossy(&own.stdout).contains(&format!(
            "pushed probe 0.1.0 to oci://{host}/plugins/probe:0.1.0"
        )),
        "{}",
        text(&own)
    );
    // An impostor under the configmap repository, published around `plugin
    // push` (a registry holds whatever anyone pushes): oras copies it.
    let Some(oras) = e2e::tools(&[tazuna_tests::assets::Tool::Oras]) else {
        return;
    };
    succeed(
        Command::new(oras.path(tazuna_tests::assets::Tool::Oras)).args([
            "cp",
            "--from-plain-http",
            "--to-plain-http",
            &format!("{host}/plugins/probe:0.1.0"),
            &format!("{host}/plugins/configmap:0.2.0"),
        ]),
    );
    let probe_digest = succeed(
        Command::new(oras.path(tazuna_tests::assets::Tool::Oras)).args([
            "resolve",
            "--plain-http",
            &format!("{host}/plugins/configmap:0.2.0"),
        ]),
    );
    let probe_digest = String::from_utf8_lossy(&probe_digest.stdout)
        .trim()
        .to_owned();
    assert!(probe_digest.starts_with("sha256:"), "{probe_digest}");
    if let Some(manifest) = skopeo_manifest(&format!("{host}/plugins/configmap:0.1.0")) {
        assert_eq!(
            manifest["config"]["mediaType"],
            "application/vnd.wasm.config.v0+json"
        );
        assert_eq!(manifest["layers"][0]["mediaType"], "application/wasm");
        assert_eq!(
            manifest["layers"][0]["digest"],
            sha256_file(&example).as_str()
        );
    }

    // First use: the newest tag within the constraint is pulled and pinned.
    std::fs::write(
        root.join("tazuna.yaml"),
        config(&registry, ">=0.1, <0.2", ""),
    )
    .unwrap();
    let built = succeed(tazuna(root, &cache).args(["build", "-o", "json"]));
    let stderr = String::from_utf8_lossy(&built.stderr);
    assert!(
        stderr.contains(&format!("pinned plugin `configmap` 0.1.0 ({digest})")),
        "{}",
        text(&built)
    );
    let list: Value = serde_json::from_slice(&built.stdout).unwrap();
    assert_eq!(list["items"][0]["kind"], "ConfigMap");
    assert_eq!(list["items"][0]["data"]["LOG_LEVEL"], "debug");
    let pin = &lock(root)["plugins"]["configmap"];
    assert_eq!(
        pin["source"],
        format!("oci://{host}/plugins/configmap").as_str()
    );
    assert_eq!(pin["version"], "0.1.0");
    assert_eq!(pin["manifestDigest"], digest.as_str());
    assert_eq!(pin["componentDigest"], sha256_file(&example).as_str());
    assert_eq!(pin["world"], "tazuna:plugin/source-plugin@0.1.1");
    let cached = cache
        .join("blobs/sha256")
        .join(sha256_file(&example).trim_start_matches("sha256:"));
    assert!(cached.is_file(), "the component is cached by its digest");

    // A constraint nothing satisfies names what the registry has.
    std::fs::write(root.join("tazuna.yaml"), config(&registry, "^9", "")).unwrap();
    let stderr = fail(tazuna(root, &cache).args(["plugin", "update"]));
    assert!(
        stderr.contains("no tag of `oci://")
            && stderr.contains("satisfies `^9`; the registry has: 0.1.0, 0.2.0"),
        "{stderr}"
    );

    // Widening the constraint does not move the pin by itself.
    std::fs::write(root.join("tazuna.yaml"), config(&registry, ">=0.1", "")).unwrap();
    let stderr = fail(tazuna(root, &cache).arg("build"));
    assert!(
        stderr.contains("`version` changed since tazuna.lock pinned it")
            && stderr.contains("run `tazuna plugin update configmap`"),
        "{stderr}"
    );
    // `plugin update` resolves 0.2.0, which asks for a capability nobody
    // granted: refused, and the lock keeps its pin.
    let stderr = fail(tazuna(root, &cache).args(["plugin", "update"]));
    assert!(
        stderr.contains("asks for capabilities that `spec.plugins` does not grant: exec:echo"),
        "{stderr}"
    );
    assert_eq!(lock(root)["plugins"]["configmap"]["version"], "0.1.0");
    // Granted, the update still does not go through: 0.2.0 is another
    // component (it says it is plugin `probe`), and a declaration names one
    // plugin.
    std::fs::write(
        root.join("tazuna.yaml"),
        config(
            &registry,
            ">=0.1",
            "exec:echo, exec:helm, exec-argv:helm, secrets:exec",
        ),
    )
    .unwrap();
    let stderr = fail(tazuna(root, &cache).args(["plugin", "update", "configmap"]));
    assert!(
        stderr.contains("plugin `configmap`: the component says it is plugin `probe`"),
        "{stderr}"
    );
    assert_eq!(lock(root)["plugins"]["configmap"]["version"], "0.1.0");
    assert_eq!(
        lock(root)["plugins"]["configmap"]["componentDigest"],
        sha256_file(&example).as_str()
    );

    // A hand-edited tazuna.lock that points both digests at that other
    // component, now in the cache: refused, warm. Pointing only the component
    // digest at it: refused too, since the cache did not pull it by the pinned
    // manifest digest.
    std::fs::write(
        root.join("tazuna.yaml"),
        config(&registry, ">=0.1, <0.2", ""),
    )
    .unwrap();
    let pinned = std::fs::read_to_string(root.join("tazuna.lock")).unwrap();
    let swapped = pinned
        .replace(&digest, &probe_digest)
        .replace(&sha256_file(&example), &sha256_file(&probe));
    std::fs::write(root.join("tazuna.lock"), &swapped).unwrap();
    let stderr = fail(tazuna(root, &cache).arg("build"));
    assert!(
        stderr.contains("plugin `configmap`: the component says it is plugin `probe`"),
        "{stderr}"
    );
    let component_only = pinned.replace(&sha256_file(&example), &sha256_file(&probe));
    std::fs::write(root.join("tazuna.lock"), &component_only).unwrap();
    let stderr = fail(tazuna(root, &cache).arg("build"));
    assert!(
        stderr.contains("plugin `configmap`: digest mismatch: tazuna.lock pins")
            && stderr.contains("the component pulled by the pinned manifest digest"),
        "{stderr}"
    );
    std::fs::write(root.join("tazuna.lock"), &pinned).unwrap();

    // Back to 0.1.0 for the offline part.
    std::fs::write(
        root.join("tazuna.yaml"),
        config(&registry, ">=0.1, <0.2", ""),
    )
    .unwrap();
    succeed(tazuna(root, &cache).args(["plugin", "update"]));
    let pinned = std::fs::read_to_string(root.join("tazuna.lock")).unwrap();

    // Offline: with the registry gone, the pinned and cached component runs.
    drop(registry);
    let built = succeed(tazuna(root, &cache).arg("build"));
    assert!(String::from_utf8_lossy(&built.stdout).contains("LOG_LEVEL: debug"));
    assert!(!String::from_utf8_lossy(&built.stderr).contains("pinned"));
    assert_eq!(
        std::fs::read_to_string(root.join("tazuna.lock")).unwrap(),
        pinned
    );
    // ...and without the cache it has to pull, and says where from.
    let stderr = fail(tazuna(root, &root.join("empty-cache")).arg("build"));
    assert!(
        stderr.contains("plugin `configmap`: cannot pull `oci://") && stderr.contains(&digest),
        "pulls by the pinned digest: {stderr}"
    );

    // The pinned plugin applies to a cluster, still offline; kubectl sees it.
    let Some(cluster) = TestCluster::start("oci-plugin") else {
        return;
    };
    edit(
        &root.join("tazuna.yaml"),
        "namespace: apps",
        "namespace: default",
    );
    succeed(on_cluster(&mut tazuna(root, &cache), &cluster).arg("apply"));
    let live = succeed(
        cluster
            .kubectl()
            .args(["get", "configmap", "settings", "-o", "json"]),
    );
    let live: Value = serde_json::from_slice(&live.stdout).unwrap();
    assert_eq!(live["data"]["LOG_LEVEL"], "debug");
}

#[test]
fn a_declared_digest_that_differs_is_a_hard_error() {
    let Some(registry) = e2e::registry() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let cache = root.join("cache");
    push(
        root,
        &cache,
        &component("example"),
        &format!("oci://{}/plugins/configmap:0.1.0", registry.host()),
    );
    let wrong = format!("sha256:{}", "0".repeat(64));
    let file = config(&registry, "^0.1", "").replace(
        "      grants: []\n",
        &format!("      grants: []\n      digest: {wrong}\n"),
    );
    std::fs::write(root.join("tazuna.yaml"), file).unwrap();
    let stderr = fail(tazuna(root, &cache).arg("build"));
    assert!(
        stderr.contains(&format!("digest mismatch: tazuna.yaml pins `{wrong}`")),
        "{stderr}"
    );
    assert!(!root.join("tazuna.lock").exists(), "nothing is pinned");
}

#[test]
fn a_registry_that_needs_a_login_uses_the_docker_config() {
    let Some(registry) = e2e::registry_with_basic_auth("robot", "s3cret-pass") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let cache = root.join("cache");
    let reference = format!("oci://{}/plugins/configmap:0.1.0", registry.host());

    let stderr = fail(
        tazuna(root, &cache)
            .args(["plugin", "push"])
            .arg(component("example"))
            .arg(&reference),
    );
    assert!(
        stderr.contains("cannot push to") && stderr.contains("docker login"),
        "{stderr}"
    );

    std::fs::create_dir_all(root.join("docker")).unwrap();
    std::fs::write(
        root.join("docker/config.json"),
        format!(
            r#"{{"auths": {{"{}": {{"auth": "cm9ib3Q6czNjcmV0LXBhc3M="}}}}}}"#,
            registry.host()
        ),
    )
    .unwrap();
    push(root, &cache, &component("example"), &reference);
    std::fs::write(root.join("tazuna.yaml"), config(&registry, "^0.1", "")).unwrap();
    let built = succeed(tazuna(root, &cache).arg("build"));
    assert!(String::from_utf8_lossy(&built.stdout).contains("LOG_LEVEL: debug"));
    let lock_text = std::fs::read_to_string(root.join("tazuna.lock")).unwrap();
    assert!(
        !lock_text.contains("s3cret"),
        "credentials never reach the lock"
    );
}

#[test]
fn a_secret_resolver_from_the_registry_is_pinned_as_one_and_fills_a_secret() {
    let Some(registry) = e2e::registry() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let cache = root.join("cache");
    let host = registry.host();
    // The SDK's example resolver `files`, published like any plugin.
    let resolver = component("example-resolver");
    let digest = push(
        root,
        &cache,
        &resolver,
        &format!("oci://{host}/plugins/files:0.1.0"),
    );
    let certificate =
        "-----BEGIN CERTIFICATE-----\nMIIB-e2e-resolver-4b7e\n-----END CERTIFICATE-----\n";
    let keytab: &[u8] = &[0x05, 0x02, 0x00, 0xff, 0xfe, 0x80, 0x00, 0x01];
    std::fs::create_dir_all(root.join("secrets/tls")).unwrap();
    std::fs::write(root.join("secrets/tls/server.crt"), certificate).unwrap();
    std::fs::write(root.join("secrets/tls/krb5.keytab"), keytab).unwrap();
    std::fs::write(
        root.join("secret.yaml"),
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: tls\nstringData:\n  tls.crt: ref+tls:server.crt\n  krb5.keytab: ref+tls:./krb5.keytab\n",
    )
    .unwrap();
    let file = |reference: &str| {
        format!(
            "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  plugins:
    - name: files
      source: oci://{host}/plugins/files
      version: \"^0.1\"
  providers:
    - name: tls
      type: files
      files:
        dir: ./secrets/tls
  manifests:
    - name: tls
      type: manifests
      path: {reference}
      namespace: default
"
        )
    };
    std::fs::write(root.join("tazuna.yaml"), file("secret.yaml")).unwrap();

    // build needs no resolver: it prints the references and pins nothing.
    let built = succeed(tazuna(root, &cache).arg("build"));
    assert!(
        String::from_utf8_lossy(&built.stdout).contains("ref+tls:server.crt"),
        "{}",
        text(&built)
    );
    assert!(!root.join("tazuna.lock").exists(), "{}", text(&built));

    // `plugin list` loads it as a resolver, and pins it as one.
    let listed = succeed(tazuna(root, &cache).args(["plugin", "list", "-o", "json"]));
    let list: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let row = list
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["source"] == format!("oci://{host}/plugins/files").as_str())
        .unwrap_or_else(|| panic!("files is listed: {list:#}"));
    assert_eq!(row["world"], "tazuna:plugin/secret-resolver-plugin@0.1.1");
    let pin = &lock(root)["plugins"]["files"];
    assert_eq!(pin["world"], "tazuna:plugin/secret-resolver-plugin@0.1.1");
    assert_eq!(pin["manifestDigest"], digest.as_str());
    assert_eq!(pin["componentDigest"], sha256_file(&resolver).as_str());

    // apply resolves both references through it, offline from the cache.
    let Some(cluster) = TestCluster::start("oci-resolver") else {
        return;
    };
    drop(registry);
    let mut apply = tazuna(root, &cache);
    on_cluster(&mut apply, &cluster);
    let applied = succeed(apply.arg("apply"));
    assert!(
        !text(&applied).contains("MIIB-e2e-resolver"),
        "no value in the output"
    );
    let live = succeed(
        cluster
            .kubectl()
            .args(["-n", "default", "get", "secret", "tls", "-o", "json"]),
    );
    let live: Value = serde_json::from_slice(&live.stdout).unwrap();
    use base64::Engine as _;
    let decode = |key: &str| {
        base64::engine::general_purpose::STANDARD
            .decode(live["data"][key].as_str().unwrap_or_default())
            .unwrap()
    };
    assert_eq!(decode("tls.crt"), certificate.as_bytes());
    assert_eq!(
        decode("krb5.keytab"),
        keytab,
        "binary content arrives intact"
    );

    // A reference that climbs out of `dir` fails its manifest, named.
    std::fs::write(
        root.join("escape.yaml"),
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: escape\nstringData:\n  key: ref+tls:../../tazuna.yaml\n",
    )
    .unwrap();
    std::fs::write(root.join("tazuna.yaml"), file("escape.yaml")).unwrap();
    let mut plan = tazuna(root, &cache);
    on_cluster(&mut plan, &cluster);
    let stderr = fail(plan.arg("plan"));
    assert!(
        stderr
            .contains("Secret default/escape: `stringData.key`: provider `tls` could not resolve")
            && stderr.contains("without `..`"),
        "{stderr}"
    );
}

/// An HTTP client of the test's own, with Tazuna's TLS provider.
fn http() -> reqwest::blocking::Client {
    tazuna_engine::tls::install();
    reqwest::blocking::Client::new()
}

/// `DELETE` of a blob through the registry's HTTP API; the registry's answer.
fn delete_blob(registry: &Registry, repository: &str, digest: &str) -> u16 {
    http()
        .delete(format!("{}/v2/{repository}/blobs/{digest}", registry.url()))
        .send()
        .unwrap()
        .status()
        .as_u16()
}

/// Push `blob` to `repository` through the registry's HTTP API (a monolithic
/// upload), as a tool other than Tazuna would.
fn upload_blob(registry: &Registry, repository: &str, blob: &[u8]) -> String {
    let client = http();
    let digest = format!("sha256:{}", hex::encode(Sha256::digest(blob)));
    let started = client
        .post(format!("{}/v2/{repository}/blobs/uploads/", registry.url()))
        .send()
        .unwrap();
    assert_eq!(started.status().as_u16(), 202, "{started:?}");
    let location = started.headers()["location"].to_str().unwrap().to_owned();
    let location = if location.starts_with("http") {
        location
    } else {
        format!("{}{location}", registry.url())
    };
    let separator = if location.contains('?') { '&' } else { '?' };
    let done = client
        .put(format!("{location}{separator}digest={digest}"))
        .header("content-type", "application/octet-stream")
        .body(blob.to_vec())
        .send()
        .unwrap();
    assert_eq!(done.status().as_u16(), 201, "{done:?}");
    digest
}

#[test]
fn inspect_reads_only_the_manifest_and_config_and_names_what_it_cannot_know() {
    let Some(registry) = e2e::registry() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let cache = root.join("cache");
    let example = component("example");
    let host = registry.host();
    let digest = push(
        root,
        &cache,
        &example,
        &format!("oci://{host}/plugins/inspected"),
    );

    // An independent client's view: the manifest's bytes and its layer.
    let skopeo = tazuna_tests::assets::which("skopeo");
    let layer = sha256_file(&example);
    if let Some(skopeo) = &skopeo {
        let raw = succeed(Command::new(skopeo).args([
            "inspect",
            "--tls-verify=false",
            "--raw",
            &format!("docker://{host}/plugins/inspected:0.1.0"),
        ]));
        assert_eq!(
            format!("sha256:{}", hex::encode(Sha256::digest(&raw.stdout))),
            digest,
            "the digest push printed is that of the manifest the registry serves"
        );
        let manifest: Value = serde_json::from_slice(&raw.stdout).unwrap();
        assert_eq!(manifest["layers"][0]["digest"], layer.as_str());
        let annotations = &manifest["annotations"];
        assert_eq!(annotations["org.opencontainers.image.version"], "0.1.0");
        assert_eq!(
            annotations["dev.tazuna.plugin.world"],
            "tazuna:plugin/source-plugin@0.1.1"
        );
        assert_eq!(annotations["dev.tazuna.plugin.capabilities"], "[]");
    } else {
        assert!(
            !e2e::required(),
            "skopeo is missing; tests/controlplane/install.sh installs it"
        );
    }

    // The layer blob goes: inspect still answers, from the manifest and the
    // config blob alone, and a pull (which needs the layer) does not.
    let repository = "plugins/inspected";
    assert_eq!(delete_blob(&registry, repository, &layer), 202);
    assert_eq!(
        registry
            .get_status(&format!("/v2/{repository}/blobs/{layer}"), false)
            .unwrap(),
        404,
        "the layer is gone"
    );
    let reference = format!("oci://{host}/{repository}:0.1.0@{digest}");
    let inspected = succeed(
        tazuna(root, &cache)
            .args(["plugin", "inspect", &reference, "-o", "json"])
            .env("TAZUNA_CACHE_DIR", root.join("empty-cache")),
    );
    let json: Value = serde_json::from_slice(&inspected.stdout).unwrap();
    assert_eq!(json["name"], "configmap", "{json:#}");
    assert_eq!(json["version"], "0.1.0");
    assert_eq!(json["world"], "tazuna:plugin/source-plugin@0.1.1");
    assert_eq!(json["requestedCapabilities"], serde_json::json!([]));
    assert_eq!(json["manifestDigest"], digest.as_str());
    assert_eq!(json["componentDigest"], layer.as_str());
    assert_eq!(
        json["componentSize"],
        std::fs::metadata(&example).unwrap().len()
    );
    assert!(
        json["exports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e.as_str().unwrap().starts_with("tazuna:plugin/source@")),
        "{json:#}"
    );
    assert_eq!(json["unknown"], serde_json::json!({}));
    let text_out = succeed(tazuna(root, &cache).args(["plugin", "inspect", &reference]));
    let shown = String::from_utf8_lossy(&text_out.stdout);
    assert!(
        shown.contains(&format!("manifest:     {digest}"))
            && shown.contains(&format!("component:    {layer} ("))
            && shown.contains("capabilities: none"),
        "{shown}"
    );
    std::fs::write(
        root.join("tazuna.yaml"),
        format!(
            "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  plugins:\n    - name: configmap\n      source: oci://{host}/{repository}:0.1.0\n  manifests:\n    - name: settings\n      type: configmap\n      configmap:\n        data:\n          LOG_LEVEL: debug\n"
        ),
    )
    .unwrap();
    let pulled = output(
        tazuna(root, &cache)
            .arg("build")
            .env("TAZUNA_CACHE_DIR", root.join("another-cache")),
    );
    assert!(
        !pulled.status.success(),
        "a pull needs the deleted layer: {}",
        text(&pulled)
    );

    // An artifact another tool pushed, without Tazuna's annotations: what
    // the config blob says is shown, the rest is unknown, with the reason.
    let foreign = "plugins/foreign";
    let wasm = std::fs::read(&example).unwrap();
    let layer_digest = upload_blob(&registry, foreign, &wasm);
    let config = serde_json::json!({
        "created": "2025-01-01T00:00:00Z",
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [layer_digest],
        "component": {
            "exports": ["tazuna:plugin/source@0.1.0"],
            "imports": ["tazuna:plugin/log@0.1.0"],
            "target": null
        }
    })
    .to_string();
    let config_digest = upload_blob(&registry, foreign, config.as_bytes());
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.wasm.config.v0+json",
            "digest": config_digest,
            "size": config.len(),
        },
        "layers": [{
            "mediaType": "application/wasm",
            "digest": layer_digest,
            "size": wasm.len(),
        }],
    })
    .to_string();
    let put = http()
        .put(format!("{}/v2/{foreign}/manifests/v2.0.0", registry.url()))
        .header("content-type", "application/vnd.oci.image.manifest.v1+json")
        .body(manifest.clone())
        .send()
        .unwrap();
    assert_eq!(put.status().as_u16(), 201, "{put:?}");
    let inspected = succeed(tazuna(root, &cache).args([
        "plugin",
        "inspect",
        &format!("oci://{host}/{foreign}:v2.0.0"),
        "-o",
        "json",
    ]));
    let json: Value = serde_json::from_slice(&inspected.stdout).unwrap();
    assert_eq!(
        json["manifestDigest"],
        format!(
            "sha256:{}",
            hex::encode(Sha256::digest(manifest.as_bytes()))
        )
        .as_str()
    );
    assert_eq!(json["componentDigest"], layer_digest.as_str());
    assert_eq!(json["world"], "tazuna:plugin/source-plugin@0.1.1");
    assert_eq!(json["version"], Value::Null);
    assert_eq!(json["requestedCapabilities"], Value::Null);
    assert!(
        json["unknown"]["version"]
            .as_str()
            .unwrap_or_default()
            .contains("it is tagged `v2.0.0`"),
        "{json:#}"
    );
    let shown = succeed(tazuna(root, &cache).args([
        "plugin",
        "inspect",
        &format!("oci://{host}/{foreign}:v2.0.0"),
    ]));
    assert!(
        String::from_utf8_lossy(&shown.stdout)
            .contains("capabilities: unknown (no `dev.tazuna.plugin.capabilities` annotation"),
        "{}",
        text(&shown)
    );

    // A file is loaded and described.
    let local = succeed(
        tazuna(root, &cache)
            .args(["plugin", "inspect", "-o", "json"])
            .arg(&example),
    );
    let json: Value = serde_json::from_slice(&local.stdout).unwrap();
    assert_eq!(json["name"], "configmap");
    assert_eq!(json["componentDigest"], layer.as_str());
    assert_eq!(json["manifestDigest"], Value::Null);
}
