//! End-to-end: stacks (several `tazuna.yaml` files sharing one cluster, each
//! seeing, pruning and destroying only its own state), renames and moves
//! that must not delete anything, dangerous prunes, a bare cluster's plan and
//! dry run, a failed first apply, Secret drift, and refusals that must come
//! before any write (a reserved namespace, one object in two manifests), and
//! a stale lock taken over.
//!
//! Everything is asserted through kubectl and exit codes; Tazuna's own
//! output is only searched for loose substrings. Each test starts its own
//! harness cluster, because Tazuna's state and lock live in the cluster-wide
//! namespace `tazuna`. Tests skip with a printed reason when the harness
//! binaries are missing, unless `TAZUNA_E2E_REQUIRED` is set.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{copy_dir, exists, kubectl_json, output, succeed, tazuna_on as tazuna, text};
use serde_json::Value;
use tazuna_tests::e2e::TestCluster;

/// Run `tazuna args...` in `dir` against `cluster`.
fn run(cluster: &TestCluster, dir: &Path, args: &[&str]) -> Output {
    output(tazuna(cluster, dir).args(args))
}

/// stdout and stderr of `out`, joined.
fn printed(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Whether the object is gone within `seconds` (deletions of Namespaces and
/// PVCs go through controllers and finalizers).
fn gone_within(cluster: &TestCluster, args: &[&str], seconds: u64) -> bool {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    loop {
        if !exists(cluster, args) {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The names of Tazuna's state objects (`tazuna-manifest-<manifest>`).
fn state_names(cluster: &TestCluster) -> Vec<String> {
    let state = kubectl_json(
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
    state["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The names of the objects one manifest's state records, read with kubectl
/// (plain `state.json`, or `state.json.gz` for large states).
fn recorded_names(cluster: &TestCluster, manifest: &str) -> Vec<String> {
    let state = kubectl_json(
        cluster,
        &[
            "-n",
            "tazuna",
            "get",
            "configmap",
            &format!("tazuna-manifest-{manifest}"),
        ],
    );
    let json = match state["data"]["state.json"].as_str() {
        Some(json) => json.to_owned(),
        None => {
            let compressed = base64::Engine::decode(
                &base64::engine::general_purpose::STANDARD,
                state["binaryData"]["state.json.gz"]
                    .as_str()
                    .unwrap_or_else(|| panic!("no state in {state}")),
            )
            .unwrap();
            let mut json = String::new();
            std::io::Read::read_to_string(
                &mut flate2::read::GzDecoder::new(compressed.as_slice()),
                &mut json,
            )
            .unwrap();
            json
        }
    };
    let recorded: Value = serde_json::from_str(&json).unwrap();
    recorded["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap().to_owned())
        .collect()
}

fn uid(cluster: &TestCluster, args: &[&str]) -> String {
    kubectl_json(cluster, args)["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// One `manifests` entry; `namespace` is its default namespace, `extra` more
/// keys (each line indented by six spaces).
fn entry(name: &str, path: &str, namespace: Option<&str>, extra: &str) -> String {
    let mut entry = format!("    - name: {name}\n      type: manifests\n      path: {path}\n");
    if let Some(namespace) = namespace {
        entry.push_str(&format!("      namespace: {namespace}\n"));
    }
    entry.push_str(extra);
    entry
}

/// A whole `tazuna.yaml`; without `stack`, the stack name is derived from
/// the file's location.
fn config(stack: Option<&str>, entries: &[String]) -> String {
    let mut config = String::from("apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n");
    if let Some(stack) = stack {
        config.push_str(&format!("  stack: {stack}\n"));
    }
    config.push_str("  manifests:\n");
    for entry in entries {
        config.push_str(entry);
    }
    config
}

fn configmap(name: &str, namespace: Option<&str>) -> String {
    let namespace = namespace
        .map(|n| format!("  namespace: {n}\n"))
        .unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n{namespace}data:\n  k: v\n"
    )
}

/// A fresh project directory holding `files` (path, content).
fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in files {
        common::write(dir.path(), path, content);
    }
    dir
}

fn write(dir: &Path, path: &str, content: &str) {
    common::write(dir, path, content);
}

#[test]
fn two_stacks_on_one_cluster_prune_and_destroy_only_their_own_and_a_third_cannot_take_a_manifest() {
    let Some(cluster) = TestCluster::start("stacks-isolation") else {
        return;
    };
    // A: stack name derived from its location.
    let a = project(&[
        (
            "tazuna.yaml",
            &config(
                None,
                &[entry("platform", "platform.yaml", Some("default"), "")],
            ),
        ),
        ("platform.yaml", &configmap("platform-cm", None)),
    ]);
    // B: an explicit stack name, distinct from its manifest's name so that a
    // message naming the stack is told apart from one naming the manifest.
    let b = project(&[
        (
            "tazuna.yaml",
            &config(
                Some("squad"),
                &[entry("team", "team.yaml", Some("default"), "")],
            ),
        ),
        ("team.yaml", &configmap("team-cm", None)),
    ]);
    let (a, b) = (a.path(), b.path());

    succeed(tazuna(&cluster, a).arg("apply"));
    succeed(tazuna(&cluster, b).arg("apply"));
    assert!(exists(
        &cluster,
        &["-n", "default", "configmap", "platform-cm"]
    ));
    assert!(exists(&cluster, &["-n", "default", "configmap", "team-cm"]));
    let names = state_names(&cluster);
    assert!(
        names.contains(&"tazuna-manifest-team".to_owned()),
        "{names:?}"
    );

    // A sees nothing of B: not in its plan, its apply, its prune or its status.
    let plan = run(&cluster, a, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
    assert!(
        !printed(&plan).contains("team"),
        "A's plan mentions B's manifest: {}",
        text(&plan)
    );
    let applied = run(&cluster, a, &["apply"]);
    assert!(applied.status.success(), "{}", text(&applied));
    assert!(
        !printed(&applied).contains("team"),
        "A's apply mentions B's manifest: {}",
        text(&applied)
    );
    let pruned = run(&cluster, a, &["apply", "--prune"]);
    assert!(pruned.status.success(), "{}", text(&pruned));
    assert!(
        !printed(&pruned).contains("team"),
        "A's prune mentions B's manifest: {}",
        text(&pruned)
    );
    assert!(
        exists(&cluster, &["-n", "default", "configmap", "team-cm"]),
        "A's prune deleted B's object: {}",
        text(&pruned)
    );
    assert!(exists(
        &cluster,
        &["-n", "default", "configmap", "platform-cm"]
    ));
    let status = run(&cluster, a, &["status", "-a"]);
    assert!(status.status.success(), "{}", text(&status));
    assert!(
        !printed(&status).contains("team"),
        "A's status lists B's objects: {}",
        text(&status)
    );

    // A's destroy takes A's objects and state, and leaves B's.
    let destroyed = run(&cluster, a, &["destroy", "--yes"]);
    assert!(destroyed.status.success(), "{}", text(&destroyed));
    assert!(
        gone_within(&cluster, &["-n", "default", "configmap", "platform-cm"], 60),
        "A's destroy left its object"
    );
    assert!(
        exists(&cluster, &["-n", "default", "configmap", "team-cm"]),
        "A's destroy deleted B's object: {}",
        text(&destroyed)
    );
    let names = state_names(&cluster);
    assert!(
        !names.contains(&"tazuna-manifest-platform".to_owned()),
        "{names:?}"
    );
    assert!(
        names.contains(&"tazuna-manifest-team".to_owned()),
        "A's destroy deleted B's state: {names:?}"
    );

    // C declares a manifest B's stack owns: refused before any write.
    let c = project(&[
        (
            "tazuna.yaml",
            &config(None, &[entry("team", "c.yaml", Some("default"), "")]),
        ),
        ("c.yaml", &configmap("c-cm", None)),
    ]);
    let team_state = &["-n", "tazuna", "get", "configmap", "tazuna-manifest-team"];
    let version_before = kubectl_json(&cluster, team_state)["metadata"]["resourceVersion"].clone();
    let refused = run(&cluster, c.path(), &["apply"]);
    assert!(!refused.status.success(), "{}", text(&refused));
    let err = stderr(&refused);
    assert!(
        err.contains("owned by stack") && err.contains("squad"),
        "the refusal names the owning stack: {}",
        text(&refused)
    );
    assert!(
        !exists(&cluster, &["-n", "default", "configmap", "c-cm"]),
        "C wrote an object before it was refused"
    );
    assert!(exists(&cluster, &["-n", "default", "configmap", "team-cm"]));
    assert_eq!(
        kubectl_json(&cluster, team_state)["metadata"]["resourceVersion"],
        version_before,
        "C rewrote B's state"
    );
    // D, a team's file, renders B's object under a manifest of its own:
    // plan and apply refuse it before any write, naming B's stack, and
    // B's object keeps B's content.
    let d = project(&[
        (
            "tazuna.yaml",
            &config(
                Some("intruder"),
                &[entry("takeover", "d.yaml", Some("default"), "")],
            ),
        ),
        (
            "d.yaml",
            &format!(
                "{}---\n{}",
                configmap("d-cm", None),
                configmap("team-cm", None).replace("k: v", "k: taken")
            ),
        ),
    ]);
    for verb in ["plan", "apply"] {
        let refused = run(&cluster, d.path(), &[verb]);
        assert_eq!(refused.status.code(), Some(1), "{verb}: {}", text(&refused));
        let err = stderr(&refused);
        assert!(
            err.contains("renders v1 ConfigMap default/team-cm, which stack `squad` applied (its manifest `team`)")
                && err.contains("hint: remove the object from manifest `takeover`"),
            "{verb}: {}",
            text(&refused)
        );
    }
    assert!(
        !exists(&cluster, &["-n", "default", "configmap", "d-cm"]),
        "D wrote an object before it was refused"
    );
    assert_eq!(
        kubectl_json(&cluster, &["-n", "default", "get", "configmap", "team-cm"])["data"]["k"],
        "v",
        "D changed B's object"
    );
    assert!(
        !state_names(&cluster).contains(&"tazuna-manifest-takeover".to_owned()),
        "D wrote state"
    );

    // B still sees exactly what it applied.
    let plan = run(&cluster, b, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));

    // Two repositories named `platform` in two organisations, each with its
    // tazuna.yaml at the top, derive one stack name. The first applies; the
    // second, pruning, would delete the first's objects as its own: it is
    // refused before any write, naming the other repository, and the
    // origin's login never reaches state.
    let first = git_project(
        "https://x-access-token:tok-3k9q@example.com/acme/platform.git",
        &[
            (
                "tazuna.yaml",
                &config(None, &[entry("edge", "edge.yaml", Some("default"), "")]),
            ),
            ("edge.yaml", &configmap("edge-cm", None)),
        ],
    );
    let applied = run(&cluster, first.path(), &["apply"]);
    assert!(applied.status.success(), "{}", text(&applied));
    let edge_state = &["-n", "tazuna", "get", "configmap", "tazuna-manifest-edge"];
    let recorded = kubectl_json(&cluster, edge_state).to_string();
    assert!(
        recorded.contains("example.com/acme/platform") && !recorded.contains("tok-3k9q"),
        "state records the repository without its login: {recorded}"
    );
    let second = git_project(
        "git@example.com:other-org/platform.git",
        &[
            (
                "tazuna.yaml",
                &config(None, &[entry("web", "web.yaml", Some("default"), "")]),
            ),
            ("web.yaml", &configmap("web-cm", None)),
        ],
    );
    for args in [&["plan"][..], &["apply", "--prune"]] {
        let refused = run(&cluster, second.path(), args);
        assert_eq!(
            refused.status.code(),
            Some(1),
            "{args:?}: {}",
            text(&refused)
        );
        let err = stderr(&refused);
        assert!(
            err.contains("stack `platform/tazuna.yaml` on this cluster was applied from `example.com/acme/platform` (manifest `edge`), and this file is in `example.com/other-org/platform`")
                && err.contains("hint: give this file a stack name of its own with `spec.stack`"),
            "{args:?}: {}",
            text(&refused)
        );
    }
    // A repository called `platform` with no `origin` (its identity is its
    // first commit) derives the name too, and is refused the same way.
    let local = tempfile::tempdir().unwrap();
    let root = local.path().join("platform");
    write(
        &root,
        "tazuna.yaml",
        &config(None, &[entry("web", "web.yaml", Some("default"), "")]),
    );
    write(&root, "web.yaml", &configmap("web-cm", None));
    for args in [
        &["init", "-q"][..],
        &["add", "."],
        &["commit", "-qm", "first"],
    ] {
        succeed(
            Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-C"])
                .arg(&root)
                .args(args),
        );
    }
    let refused = run(&cluster, &root, &["apply", "--prune"]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    let err = stderr(&refused);
    assert!(
        err.contains("was applied from `example.com/acme/platform` (manifest `edge`), and this file is in `commit:"),
        "{}",
        text(&refused)
    );
    assert!(exists(&cluster, &["-n", "default", "configmap", "edge-cm"]));
    assert!(!exists(&cluster, &["-n", "default", "configmap", "web-cm"]));
    // With a name of its own, the second stack applies beside the first.
    write(
        second.path(),
        "tazuna.yaml",
        &config(
            Some("platform-2/tazuna.yaml"),
            &[entry("web", "web.yaml", Some("default"), "")],
        ),
    );
    let applied = run(&cluster, second.path(), &["apply", "--prune"]);
    assert!(applied.status.success(), "{}", text(&applied));
    assert!(exists(&cluster, &["-n", "default", "configmap", "edge-cm"]));
    assert!(exists(&cluster, &["-n", "default", "configmap", "web-cm"]));
    let plan = run(&cluster, first.path(), &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
    // A file that does not set `spec.stack` and derives that name (a
    // directory `platform-2` outside git) is not that stack: its prune
    // would delete `web-cm`.
    let lookalike = tempfile::tempdir().unwrap();
    let lookalike = lookalike.path().join("platform-2");
    write(
        &lookalike,
        "tazuna.yaml",
        &config(None, &[entry("other", "other.yaml", Some("default"), "")]),
    );
    write(&lookalike, "other.yaml", &configmap("other-cm", None));
    let refused = run(&cluster, &lookalike, &["apply", "--prune"]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        stderr(&refused).contains("stack `platform-2/tazuna.yaml` on this cluster was applied by a file that sets `spec.stack: platform-2/tazuna.yaml`"),
        "{}",
        text(&refused)
    );
    assert!(exists(&cluster, &["-n", "default", "configmap", "web-cm"]));
    assert!(!exists(
        &cluster,
        &["-n", "default", "configmap", "other-cm"]
    ));

    // One Event served under two groups is one object: a stack that renders
    // it as `v1` does not take over the one another applied as
    // `events.k8s.io/v1`.
    let event = |api: &str, body: &str| {
        format!(
            "apiVersion: {api}\nkind: Event\nmetadata:\n  name: shared-ev\n  namespace: default\n{body}"
        )
    };
    let new_event = event(
        "events.k8s.io/v1",
        "eventTime: \"2026-01-01T00:00:00.000000Z\"\nreportingController: example.com/tests\nreportingInstance: tests-1\naction: Test\nreason: Testing\ntype: Normal\nnote: from stack a\nregarding: {kind: ConfigMap, name: edge-cm, namespace: default}\n",
    );
    let old_event = event(
        "v1",
        "involvedObject: {kind: ConfigMap, name: edge-cm, namespace: default}\nreason: Testing\ntype: Normal\nmessage: from stack b\n",
    );
    let events_a = project(&[
        (
            "tazuna.yaml",
            &config(Some("events-a"), &[entry("ev-a", "ev.yaml", None, "")]),
        ),
        ("ev.yaml", &new_event),
    ]);
    let events_b = project(&[
        (
            "tazuna.yaml",
            &config(Some("events-b"), &[entry("ev-b", "ev.yaml", None, "")]),
        ),
        ("ev.yaml", &old_event),
    ]);
    let applied = run(&cluster, events_a.path(), &["apply"]);
    assert!(applied.status.success(), "{}", text(&applied));
    for verb in ["plan", "apply"] {
        let refused = run(&cluster, events_b.path(), &[verb]);
        assert_eq!(refused.status.code(), Some(1), "{verb}: {}", text(&refused));
        assert!(
            stderr(&refused).contains("which stack `events-a` applied"),
            "{verb}: {}",
            text(&refused)
        );
    }
    assert_eq!(
        kubectl_json(
            &cluster,
            &["-n", "default", "get", "events.events.k8s.io", "shared-ev"]
        )["note"],
        "from stack a"
    );
    let destroyed = run(&cluster, events_a.path(), &["destroy", "--yes"]);
    assert!(destroyed.status.success(), "{}", text(&destroyed));

    // One stack's Namespace holds another stack's objects: destroying the
    // first keeps the Namespace, so the second's objects stay.
    let holder = project(&[
        (
            "tazuna.yaml",
            &config(Some("casc-a"), &[entry("casc-ns", "ns.yaml", None, "")]),
        ),
        (
            "ns.yaml",
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: casc\n",
        ),
    ]);
    let tenant = project(&[
        (
            "tazuna.yaml",
            &config(
                Some("casc-b"),
                &[entry("casc-data", "cm.yaml", Some("casc"), "")],
            ),
        ),
        ("cm.yaml", &configmap("team-b-data", None)),
    ]);
    for dir in [&holder, &tenant] {
        let applied = run(&cluster, dir.path(), &["apply"]);
        assert!(applied.status.success(), "{}", text(&applied));
    }
    let destroyed = run(&cluster, holder.path(), &["destroy", "--yes"]);
    assert!(destroyed.status.success(), "{}", text(&destroyed));
    assert!(
        text(&destroyed).contains("kept v1 Namespace casc: manifest `casc-data` of stack `casc-b` has objects it would take with it"),
        "{}",
        text(&destroyed)
    );
    assert!(exists(
        &cluster,
        &["-n", "casc", "configmap", "team-b-data"]
    ));
    let destroyed = run(&cluster, tenant.path(), &["destroy", "--yes"]);
    assert!(destroyed.status.success(), "{}", text(&destroyed));
    succeed(
        cluster
            .kubectl()
            .args(["delete", "namespace", "casc", "--wait=false"]),
    );

    // An object made by hand that no stack applied (with the content the
    // file gives it, so no field is in conflict): the user's own file takes
    // it over, and plan says so with the manager that made it.
    succeed(cluster.kubectl().args([
        "-n",
        "default",
        "create",
        "configmap",
        "hand-made",
        "--from-literal=k=v",
    ]));
    let own = project(&[
        (
            "tazuna.yaml",
            &config(
                Some("adopter"),
                &[entry("adopting", "own.yaml", Some("default"), "")],
            ),
        ),
        ("own.yaml", &configmap("hand-made", None)),
    ]);
    let plan = run(&cluster, own.path(), &["plan"]);
    assert!(
        stdout(&plan).contains(
            "> adopt adopting: v1 ConfigMap default/hand-made (exists, and no stack applied it: taken over from `kubectl-create`)"
        ),
        "{}",
        text(&plan)
    );
    succeed(tazuna(&cluster, own.path()).arg("apply"));
    assert_eq!(recorded_names(&cluster, "adopting"), ["hand-made"]);
    assert_eq!(
        kubectl_json(
            &cluster,
            &["-n", "default", "get", "configmap", "hand-made"]
        )["data"]["k"],
        "v"
    );
    // One made by hand with a value the file changes: plan says it is taken
    // over and in conflict, apply refuses it until `--force-conflicts`.
    succeed(cluster.kubectl().args([
        "-n",
        "default",
        "create",
        "configmap",
        "hand-set",
        "--from-literal=k=by-hand",
    ]));
    write(
        own.path(),
        "own.yaml",
        &format!(
            "{}---\n{}",
            configmap("hand-made", None),
            configmap("hand-set", None)
        ),
    );
    let plan = run(&cluster, own.path(), &["plan"]);
    let said = stdout(&plan);
    let line = said.lines().find(|l| l.contains("default/hand-set"));
    assert!(
        line.is_some_and(|l| l.contains("taken over from `kubectl-create`")
            && l.contains("conflict with \"kubectl-create\"")
            && l.contains("`apply --force-conflicts` takes the fields")),
        "{}",
        text(&plan)
    );
    let refused = run(&cluster, own.path(), &["apply"]);
    assert!(!refused.status.success(), "{}", text(&refused));
    assert!(printed(&refused).contains("hand-set"), "{}", text(&refused));
    let hand_set: &[&str] = &["-n", "default", "get", "configmap", "hand-set"];
    assert_eq!(kubectl_json(&cluster, hand_set)["data"]["k"], "by-hand");
    succeed(tazuna(&cluster, own.path()).args(["apply", "--force-conflicts"]));
    assert_eq!(kubectl_json(&cluster, hand_set)["data"]["k"], "v");
    assert_eq!(
        recorded_names(&cluster, "adopting"),
        ["hand-made", "hand-set"]
    );

    // A hook takes over nothing it is not given: one made by hand is refused
    // until `adopt:` names it, and one the API server made is refused even
    // then. Plan refuses what apply refuses, before any write.
    succeed(cluster.kubectl().args([
        "-n",
        "default",
        "create",
        "configmap",
        "hook-target",
        "--from-literal=k=by-hand",
    ]));
    let viewer = &["get", "clusterrole", "system:public-info-viewer"];
    let viewer_before = kubectl_json(&cluster, viewer)["metadata"]["resourceVersion"].clone();
    let hook = |kind: &str, api: &str, name: &str| {
        format!(
            "apiVersion: {api}\nkind: {kind}\nmetadata:\n  name: {name}\n  annotations:\n    helm.sh/hook: pre-install\n    helm.sh/hook-delete-policy: before-hook-creation\n"
        )
    };
    let hooked = |adopt: &str, objects: &str| {
        project(&[
            (
                "tazuna.yaml",
                &config(
                    Some("hooker"),
                    &[entry("hooks", "hooks.yaml", Some("default"), adopt)],
                ),
            ),
            ("hooks.yaml", objects),
        ])
    };
    let cases = [
        (
            hooked("", &hook("ConfigMap", "v1", "hook-target")),
            "manifest `hooks`: a helm hook of the manifest's own files renders v1 ConfigMap default/hook-target, which exists on the cluster (written by `kubectl-create`) and which no stack applied",
            "add `adopt: [\"ConfigMap/default/hook-target\"]` to the manifest",
        ),
        (
            hooked(
                "      adopt: [ClusterRole/system:public-info-viewer]\n",
                &hook(
                    "ClusterRole",
                    "rbac.authorization.k8s.io/v1",
                    "system:public-info-viewer",
                ),
            ),
            "manifest `hooks`: a helm hook renders rbac.authorization.k8s.io/v1 ClusterRole system:public-info-viewer, which the cluster's control plane made",
            "leave the object out of manifest `hooks`'s hooks",
        ),
    ];
    for (dir, error, hint) in &cases {
        for verb in ["plan", "apply"] {
            let refused = run(&cluster, dir.path(), &[verb]);
            assert_eq!(refused.status.code(), Some(1), "{verb}: {}", text(&refused));
            let err = stderr(&refused);
            assert!(
                err.contains(error) && err.contains(hint),
                "{verb}: {}",
                text(&refused)
            );
        }
    }
    assert_eq!(
        kubectl_json(
            &cluster,
            &["-n", "default", "get", "configmap", "hook-target"]
        )["data"]["k"],
        "by-hand"
    );
    assert_eq!(
        kubectl_json(&cluster, viewer)["metadata"]["resourceVersion"],
        viewer_before,
        "a hook replaced the API server's ClusterRole"
    );
    assert!(!state_names(&cluster).contains(&"tazuna-manifest-hooks".to_owned()));

    // A file that only labels what the control plane made (an APIService, a
    // Node, the API server's ConfigMap) adopts them, and plan says destroy
    // will keep them; destroy keeps them (same uid) and deletes what it
    // adopted from `kubectl create` (a tool that deploys from files). A
    // deploy tool's name written beside the API server's (an admin's
    // `kubectl apply`, a forged `--field-manager`) changes nothing.
    for (forged, args) in [
        ("kubectl", &["apiservice", "v1.apps"][..]),
        (
            "helm",
            &[
                "-n",
                "kube-system",
                "configmap",
                "extension-apiserver-authentication",
            ],
        ),
    ] {
        succeed(
            cluster
                .kubectl()
                .arg("label")
                .args(args)
                .arg("tazuna-test/forged=yes")
                .arg(format!("--field-manager={forged}")),
        );
    }
    let labelled = "tazuna-test/labelled: \"yes\"";
    let labels = project(&[
        (
            "tazuna.yaml",
            &config(
                Some("labeller"),
                &[entry("labels", "labels.yaml", None, "")],
            ),
        ),
        (
            "labels.yaml",
            &format!(
                "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n  name: v1.apps\n  labels:\n    {labelled}\n---\n\
                 apiVersion: v1\nkind: Node\nmetadata:\n  name: kwok-node-0\n  labels:\n    {labelled}\n---\n\
                 apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extension-apiserver-authentication\n  namespace: kube-system\n  labels:\n    {labelled}\n"
            ),
        ),
    ]);
    let plan = run(&cluster, labels.path(), &["plan"]);
    let said = stdout(&plan);
    for (object, why) in [
        (
            "APIService v1.apps",
            "not only tools that deploy from files wrote it",
        ),
        (
            "ConfigMap kube-system/extension-apiserver-authentication",
            "not only tools that deploy from files wrote it",
        ),
        ("Node kwok-node-0", "the control plane needs it"),
    ] {
        assert!(
            said.lines().any(|l| l.contains("> adopt labels:")
                && l.contains(object)
                && l.contains(&format!("{why}, so prune and destroy will keep it"))),
            "{object}: {}",
            text(&plan)
        );
    }
    succeed(tazuna(&cluster, labels.path()).arg("apply"));
    let targets: [&[&str]; 3] = [
        &["get", "apiservice", "v1.apps"],
        &["get", "node", "kwok-node-0"],
        &[
            "-n",
            "kube-system",
            "get",
            "configmap",
            "extension-apiserver-authentication",
        ],
    ];
    let uids: Vec<_> = targets
        .iter()
        .map(|args| {
            let live = kubectl_json(&cluster, args);
            assert_eq!(
                live["metadata"]["labels"]["tazuna-test/labelled"], "yes",
                "{args:?}"
            );
            live["metadata"]["uid"].clone()
        })
        .collect();
    let destroyed = run(&cluster, labels.path(), &["destroy", "--yes"]);
    assert!(destroyed.status.success(), "{}", text(&destroyed));
    for (args, uid) in targets.iter().zip(&uids) {
        assert_eq!(
            &kubectl_json(&cluster, args)["metadata"]["uid"],
            uid,
            "destroy deleted {args:?}: {}",
            text(&destroyed)
        );
    }
    assert!(printed(&destroyed).contains("kept"), "{}", text(&destroyed));
    assert!(!state_names(&cluster).contains(&"tazuna-manifest-labels".to_owned()));
    let destroyed = run(&cluster, own.path(), &["destroy", "--yes"]);
    assert!(destroyed.status.success(), "{}", text(&destroyed));
    for name in ["hand-made", "hand-set"] {
        assert!(
            !exists(&cluster, &["-n", "default", "configmap", name]),
            "{name}"
        );
    }
}

/// A git work tree (no commits) whose `origin` is `url`, holding `files`.
fn git_project(url: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = project(files);
    for args in [&["init", "-q"][..], &["remote", "add", "origin", url]] {
        succeed(Command::new("git").arg("-C").arg(dir.path()).args(args));
    }
    dir
}

const SECRET_ORIGINAL: &str = "orig-pass-7f3a9c";
const SECRET_PATCHED: &str = "hand-edit-2b8e4d";

fn b64(value: &str) -> String {
    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, value)
}

#[test]
fn a_hand_edited_secret_is_drift_without_leaking_and_renamed_or_moved_objects_survive_prune() {
    let Some(cluster) = TestCluster::start("stacks-day-two") else {
        return;
    };
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: {SECRET_ORIGINAL}\n"
    );
    let with_app = |app: &str| {
        config(
            None,
            &[
                entry(app, "app.yaml", Some("default"), ""),
                entry("one", "one.yaml", Some("default"), ""),
                entry("two", "two.yaml", Some("default"), ""),
                entry("secrets", "secret.yaml", Some("default"), ""),
            ],
        )
    };
    let dir = project(&[
        ("tazuna.yaml", &with_app("app")),
        ("app.yaml", &configmap("renamed-cm", None)),
        (
            "one.yaml",
            &format!(
                "{}---\n{}",
                configmap("one-cm", None),
                configmap("moved-cm", None)
            ),
        ),
        ("two.yaml", &configmap("two-cm", None)),
        ("secret.yaml", &secret),
    ]);
    let dir = dir.path();
    succeed(tazuna(&cluster, dir).arg("apply"));
    let stored = kubectl_json(&cluster, &["-n", "default", "get", "secret", "db"]);
    assert_eq!(stored["data"]["password"], b64(SECRET_ORIGINAL), "{stored}");

    // A hand edit of the Secret is drift, reported without either value.
    succeed(cluster.kubectl().args([
        "-n",
        "default",
        "patch",
        "secret",
        "db",
        "--type",
        "merge",
        "-p",
        &format!(r#"{{"data":{{"password":"{}"}}}}"#, b64(SECRET_PATCHED)),
    ]));
    let leaks = |out: &Output| {
        let all = printed(out);
        [
            SECRET_ORIGINAL.to_owned(),
            SECRET_PATCHED.to_owned(),
            b64(SECRET_ORIGINAL),
            b64(SECRET_PATCHED),
        ]
        .into_iter()
        .filter(|v| all.contains(v.as_str()))
        .collect::<Vec<_>>()
    };
    let drift = run(&cluster, dir, &["state", "drift"]);
    assert_eq!(drift.status.code(), Some(2), "{}", text(&drift));
    assert_eq!(leaks(&drift), Vec::<String>::new(), "{}", text(&drift));
    let drift = run(&cluster, dir, &["state", "drift", "-o", "json"]);
    assert_eq!(drift.status.code(), Some(2), "{}", text(&drift));
    assert_eq!(leaks(&drift), Vec::<String>::new(), "{}", text(&drift));
    let plan = run(&cluster, dir, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.status.code(), Some(2), "{}", text(&plan));
    assert_eq!(leaks(&plan), Vec::<String>::new(), "{}", text(&plan));
    let applied = run(&cluster, dir, &["apply"]);
    assert_eq!(applied.status.code(), Some(0), "{}", text(&applied));
    assert_eq!(leaks(&applied), Vec::<String>::new(), "{}", text(&applied));
    let stored = kubectl_json(&cluster, &["-n", "default", "get", "secret", "db"]);
    assert_eq!(
        stored["data"]["password"],
        b64(SECRET_ORIGINAL),
        "apply did not put the Secret back: {}",
        text(&applied)
    );

    // Renaming a manifest moves its objects to the new name's state; the
    // prune of the old name deletes nothing.
    let renamed_uid = uid(
        &cluster,
        &["-n", "default", "get", "configmap", "renamed-cm"],
    );
    write(dir, "tazuna.yaml", &with_app("app-v2"));
    let pruned = run(&cluster, dir, &["apply", "--prune"]);
    assert_eq!(pruned.status.code(), Some(0), "{}", text(&pruned));
    assert!(
        exists(&cluster, &["-n", "default", "configmap", "renamed-cm"]),
        "the renamed manifest's object was pruned: {}",
        text(&pruned)
    );
    assert_eq!(
        uid(
            &cluster,
            &["-n", "default", "get", "configmap", "renamed-cm"]
        ),
        renamed_uid,
        "the renamed manifest's object was deleted and re-created"
    );
    let names = state_names(&cluster);
    assert!(
        names.contains(&"tazuna-manifest-app-v2".to_owned()),
        "{names:?}"
    );
    assert!(
        !names.contains(&"tazuna-manifest-app".to_owned()),
        "the old name's state stayed: {names:?}"
    );

    // Moving an object from `one` to `two`, both kept: it stays.
    let moved_uid = uid(&cluster, &["-n", "default", "get", "configmap", "moved-cm"]);
    write(dir, "one.yaml", &configmap("one-cm", None));
    write(
        dir,
        "two.yaml",
        &format!(
            "{}---\n{}",
            configmap("two-cm", None),
            configmap("moved-cm", None)
        ),
    );
    let pruned = run(&cluster, dir, &["apply", "--prune"]);
    assert_eq!(pruned.status.code(), Some(0), "{}", text(&pruned));
    assert!(
        exists(&cluster, &["-n", "default", "configmap", "moved-cm"]),
        "the moved object was pruned: {}",
        text(&pruned)
    );
    assert_eq!(
        uid(&cluster, &["-n", "default", "get", "configmap", "moved-cm"]),
        moved_uid,
        "the moved object was deleted and re-created"
    );
    assert!(exists(&cluster, &["-n", "default", "configmap", "one-cm"]));
    let in_two = recorded_names(&cluster, "two");
    assert!(in_two.contains(&"moved-cm".to_owned()), "{in_two:?}");
    let in_one = recorded_names(&cluster, "one");
    assert!(!in_one.contains(&"moved-cm".to_owned()), "{in_one:?}");
}

#[test]
fn removing_a_manifest_with_a_namespace_pvc_and_crd_keeps_them_until_prune_dangerous() {
    let Some(cluster) = TestCluster::start("stacks-dangerous") else {
        return;
    };
    let storage = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: keep-ns\n---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  namespace: keep-ns\nspec:\n  storageClassName: standard\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n---\n{}",
        common::crd("gadgets", "Gadget")
    );
    // The harness has no volume provisioner, so the claim never binds: the
    // manifest does not wait for it.
    let storage_entry = entry("storage", "storage.yaml", None, "      wait: false\n");
    let base_entry = entry("base", "base.yaml", Some("default"), "");
    let dir = project(&[
        (
            "tazuna.yaml",
            &config(None, &[storage_entry, base_entry.clone()]),
        ),
        ("storage.yaml", &storage),
        ("base.yaml", &configmap("base-cm", None)),
    ]);
    let dir = dir.path();
    succeed(tazuna(&cluster, dir).arg("apply"));
    let namespace: &[&str] = &["namespace", "keep-ns"];
    let claim: &[&str] = &["-n", "keep-ns", "persistentvolumeclaim", "data"];
    let crd: &[&str] = &["crd", "gadgets.example.tazuna.dev"];
    for object in [namespace, claim, crd] {
        assert!(exists(&cluster, object), "{object:?} was not applied");
    }

    write(dir, "tazuna.yaml", &config(None, &[base_entry]));
    let pruned = run(&cluster, dir, &["apply", "--prune"]);
    assert_eq!(pruned.status.code(), Some(0), "{}", text(&pruned));
    assert!(
        printed(&pruned).contains("--prune-dangerous"),
        "the kept objects point at --prune-dangerous: {}",
        text(&pruned)
    );
    // Give a wrongly started deletion time to show.
    std::thread::sleep(Duration::from_secs(2));
    for object in [namespace, claim, crd] {
        assert!(
            exists(&cluster, object),
            "{object:?} was pruned without --prune-dangerous: {}",
            text(&pruned)
        );
    }
    let namespace_phase = kubectl_json(&cluster, &["get", "namespace", "keep-ns"]);
    assert_eq!(
        namespace_phase["status"]["phase"], "Active",
        "the namespace is being deleted: {namespace_phase}"
    );
    assert!(exists(&cluster, &["-n", "default", "configmap", "base-cm"]));

    let dangerous = run(&cluster, dir, &["apply", "--prune-dangerous"]);
    assert_eq!(dangerous.status.code(), Some(0), "{}", text(&dangerous));
    for object in [crd, claim, namespace] {
        assert!(
            gone_within(&cluster, object, 120),
            "{object:?} is still there after --prune-dangerous: {}",
            text(&dangerous)
        );
    }
    assert!(exists(&cluster, &["-n", "default", "configmap", "base-cm"]));
}

#[test]
fn a_bare_cluster_plans_only_creates_and_a_dry_run_writes_nothing() {
    let Some(cluster) = TestCluster::start("stacks-bare") else {
        return;
    };
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/quickstart");
    let keep = tempfile::tempdir().unwrap();
    copy_dir(&source, keep.path());
    let dir = keep.path();

    // What the file renders, without a cluster.
    let mut build = Command::new(env!("CARGO_BIN_EXE_tazuna"));
    build
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("TAZUNA_FILE")
        .env_remove("TAZUNA_ENVIRONMENT")
        .args(["build", "-o", "json"]);
    let built = succeed(&mut build);
    let list: Value = serde_json::from_slice(&built.stdout).expect("build prints JSON");
    let rendered = list["items"].as_array().expect("a v1 List").len();
    assert!(rendered > 0, "{list}");

    let plan = run(&cluster, dir, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.status.code(), Some(2), "{}", text(&plan));
    let plan_text = stdout(&plan);
    let creates = plan_text
        .lines()
        .filter(|l| l.starts_with("+ create"))
        .count();
    for label in ["~ update", "- delete", "! conflict"] {
        assert!(
            !plan_text.lines().any(|l| l.starts_with(label)),
            "a bare cluster plans `{label}`: {}",
            text(&plan)
        );
    }
    assert!(
        !plan_text
            .lines()
            .filter(|l| !l.starts_with(char::is_whitespace))
            .any(|l| l.contains("error")),
        "{}",
        text(&plan)
    );
    assert!(!stderr(&plan).contains("error"), "{}", text(&plan));
    assert_eq!(
        creates,
        rendered,
        "one create per rendered object: {}",
        text(&plan)
    );

    let plan = run(&cluster, dir, &["plan", "-o", "json"]);
    assert!(plan.status.success(), "{}", text(&plan));
    let report: Value = serde_json::from_slice(&plan.stdout).expect("plan prints JSON");
    let changes = report["changes"].as_array().expect("changes");
    assert!(!changes.is_empty(), "{report:#}");
    let not_creates: Vec<&Value> = changes.iter().filter(|c| c["change"] != "create").collect();
    assert_eq!(not_creates, Vec::<&Value>::new(), "{report:#}");
    assert_eq!(changes.len(), rendered, "{report:#}");

    let dry = run(&cluster, dir, &["apply", "--dry-run"]);
    assert_eq!(dry.status.code(), Some(0), "{}", text(&dry));
    assert!(
        !dir.join("tazuna.lock").exists(),
        "a dry run bound the file to the cluster"
    );
    assert!(
        !exists(&cluster, &["namespace", "argocd"]),
        "a dry run created namespace argocd"
    );
    assert!(
        !exists(&cluster, &["namespace", "tazuna"]),
        "a dry run created namespace tazuna"
    );
    assert!(
        !exists(&cluster, &["crd", "applications.argoproj.io"]),
        "a dry run created a CRD"
    );
}

#[test]
fn a_first_apply_that_times_out_names_its_cause_is_a_change_to_plan_and_is_removed_by_destroy() {
    let Some(cluster) = TestCluster::start("stacks-first-failure") else {
        return;
    };
    // No node carries this label, so the pod never schedules and the
    // Deployment never becomes Available.
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: never-ready\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: never-ready}\n  template:\n    metadata:\n      labels: {app: never-ready}\n    spec:\n      nodeSelector: {no-such-label: \"true\"}\n      containers:\n        - name: app\n          image: registry.k8s.io/pause:3.10\n";
    let dir = project(&[
        (
            "tazuna.yaml",
            &config(
                None,
                &[
                    entry("defaults", "defaults.yaml", None, ""),
                    entry(
                        "stuck",
                        "stuck.yaml",
                        Some("default"),
                        "      wait:\n        timeoutSeconds: 10\n",
                    ),
                ],
            ),
        ),
        ("stuck.yaml", deployment),
        // What users apply to objects the control plane made: a label on
        // namespace `default`, a pull secret on its `default` account.
        (
            "defaults.yaml",
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: default\n  labels:\n    pod-security.kubernetes.io/warn: baseline\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: default\n  namespace: default\nimagePullSecrets:\n  - name: pull\n",
        ),
    ]);
    let dir = dir.path();
    let deployment_ref: &[&str] = &["-n", "default", "deployment", "never-ready"];

    let failed = run(&cluster, dir, &["apply"]);
    assert!(!failed.status.success(), "{}", text(&failed));
    // The timeout names the Pod-level cause, in the scheduler's words.
    assert!(
        printed(&failed).contains("pod `never-ready-")
            && printed(&failed).contains("Unschedulable: 0/"),
        "{}",
        text(&failed)
    );
    assert!(
        exists(&cluster, deployment_ref),
        "the Deployment was not created"
    );

    // Plan and drift tell the truth: what apply will redo is a change, so a
    // CI gate on plan stays red.
    for args in [
        &["plan", "--detailed-exitcode"][..],
        &["state", "drift"][..],
        &["state", "diff", "--detailed-exitcode"][..],
    ] {
        let gate = run(&cluster, dir, args);
        assert_eq!(gate.status.code(), Some(2), "{args:?}: {}", text(&gate));
        assert!(
            stdout(&gate).contains("never-ready") && stdout(&gate).contains("failed part way"),
            "{args:?}: {}",
            text(&gate)
        );
    }
    let status = run(&cluster, dir, &["status"]);
    assert_eq!(status.status.code(), Some(2), "{}", text(&status));
    assert!(
        stdout(&status).contains("never-ready"),
        "status does not show the failed first apply's object: {}",
        text(&status)
    );

    assert_eq!(
        recorded_names(&cluster, "defaults"),
        ["default", "default"],
        "the first apply recorded what it applied to the namespace and its account"
    );
    let account: &[&str] = &["-n", "default", "get", "serviceaccount", "default"];
    let (namespace_uid, account_uid) = (
        uid(&cluster, &["get", "namespace", "default"]),
        uid(&cluster, account),
    );
    let destroyed = run(&cluster, dir, &["destroy", "--yes"]);
    assert_eq!(destroyed.status.code(), Some(0), "{}", text(&destroyed));
    assert!(
        gone_within(&cluster, deployment_ref, 120),
        "destroy left the failed first apply's Deployment: {}",
        text(&destroyed)
    );
    // What the control plane made is kept, and destroy says so.
    assert_eq!(
        (
            uid(&cluster, &["get", "namespace", "default"]),
            uid(&cluster, account)
        ),
        (namespace_uid, account_uid),
        "destroy deleted what the control plane made: {}",
        text(&destroyed)
    );
    assert!(
        printed(&destroyed).contains("the control plane made it"),
        "destroy does not say why it kept namespace default: {}",
        text(&destroyed)
    );
}

#[test]
fn the_reserved_namespace_and_one_object_in_two_manifests_are_refused_before_writing_and_a_stale_lease_is_taken_over()
 {
    let Some(cluster) = TestCluster::start("stacks-refusals") else {
        return;
    };

    // An object in namespace `tazuna`: refused, and nothing else is written.
    let fine = entry("ok", "ok.yaml", Some("default"), "");
    let reserved = project(&[
        (
            "tazuna.yaml",
            &config(None, &[fine.clone(), entry("evil", "evil.yaml", None, "")]),
        ),
        ("ok.yaml", &configmap("fine-cm", None)),
        ("evil.yaml", &configmap("evil-cm", Some("tazuna"))),
    ]);
    let refused = run(&cluster, reserved.path(), &["apply"]);
    assert!(!refused.status.success(), "{}", text(&refused));
    assert!(stderr(&refused).contains("reserved"), "{}", text(&refused));
    assert!(
        !exists(&cluster, &["-n", "default", "configmap", "fine-cm"]),
        "a manifest was applied before the refusal"
    );
    assert!(
        !exists(&cluster, &["-n", "tazuna", "configmap", "evil-cm"]),
        "an object reached the reserved namespace"
    );

    // One object rendered by two manifests: refused, naming both.
    let twice = configmap("twice", None);
    let duplicate = project(&[
        (
            "tazuna.yaml",
            &config(
                None,
                &[
                    entry("first", "first.yaml", Some("default"), ""),
                    entry("second", "second.yaml", Some("default"), ""),
                ],
            ),
        ),
        ("first.yaml", &twice),
        ("second.yaml", &twice),
    ]);
    let refused = run(&cluster, duplicate.path(), &["apply"]);
    assert!(!refused.status.success(), "{}", text(&refused));
    let err = stderr(&refused);
    assert!(
        err.contains("first") && err.contains("second"),
        "the refusal names both manifests: {}",
        text(&refused)
    );
    assert!(
        !exists(&cluster, &["-n", "default", "configmap", "twice"]),
        "the doubly rendered object was written"
    );

    // A Lease left by a run elsewhere that never comes back, its renew time
    // far in the future: taken over after a bounded wait, and named.
    let lease = project(&[(
        "lease.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: tazuna\n---\napiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: tazuna-lock\n  namespace: tazuna\nspec:\n  holderIdentity: \"ghost@elsewhere pid 1 (2026-01-01T00:00:00Z)\"\n  leaseDurationSeconds: 60\n  acquireTime: \"2099-01-01T00:00:00.000000Z\"\n  renewTime: \"2099-01-01T00:00:00.000000Z\"\n",
    )]);
    succeed(
        cluster
            .kubectl()
            .arg("apply")
            .arg("-f")
            .arg(lease.path().join("lease.yaml")),
    );
    write(reserved.path(), "tazuna.yaml", &config(None, &[fine]));
    let started = Instant::now();
    let applied = run(
        &cluster,
        reserved.path(),
        &["apply", "--lock-timeout", "150"],
    );
    let took = started.elapsed();
    assert_eq!(
        applied.status.code(),
        Some(0),
        "after {took:?}: {}",
        text(&applied)
    );
    assert!(
        stderr(&applied).contains("ghost"),
        "the stale holder is named: {}",
        text(&applied)
    );
    assert!(exists(&cluster, &["-n", "default", "configmap", "fine-cm"]));
    let still_ghost = exists(&cluster, &["-n", "tazuna", "lease", "tazuna-lock"])
        && kubectl_json(&cluster, &["-n", "tazuna", "get", "lease", "tazuna-lock"])["spec"]
            ["holderIdentity"]
            .as_str()
            .is_some_and(|h| h.contains("ghost"));
    assert!(!still_ghost, "the ghost still holds the lock");
}

#[test]
fn destroy_gets_past_an_api_service_whose_backend_never_comes_up_and_names_one_it_does_not_own() {
    let Some(cluster) = TestCluster::start("stacks-api-service") else {
        return;
    };
    // An aggregated API whose Service has no endpoints: never Available, so
    // discovery of its group fails, and with it the namespace controller's
    // deletion of every Namespace.
    let api_service = |group: &str, namespace: &str| {
        format!(
            "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n  name: v1beta1.{group}\nspec:\n  group: {group}\n  version: v1beta1\n  groupPriorityMinimum: 100\n  versionPriority: 100\n  insecureSkipTLSVerify: true\n  service:\n    name: backend\n    namespace: {namespace}\n    port: 443\n"
        )
    };
    let metrics = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: metrics\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: backend\n  namespace: metrics\nspec:\n  selector: {{app: nothing-runs-this}}\n  ports:\n    - port: 443\n---\n{}",
        api_service("metrics.k8s.io", "metrics")
    );
    let app = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: shop\ndata:\n  k: v\n";
    let dir = project(&[
        (
            "tazuna.yaml",
            &config(
                None,
                &[
                    entry("metrics", "metrics.yaml", None, "      wait: false\n"),
                    entry("app", "app.yaml", None, "      dependsOn: [metrics]\n"),
                ],
            ),
        ),
        ("metrics.yaml", &metrics),
        ("app.yaml", app),
    ]);
    let dir = dir.path();
    let apply = run(&cluster, dir, &["apply"]);
    assert_eq!(apply.status.code(), Some(0), "{}", text(&apply));
    let live = kubectl_json(&cluster, &["get", "apiservice", "v1beta1.metrics.k8s.io"]);
    assert_ne!(
        live["status"]["conditions"][0]["status"], "True",
        "the APIService must be unavailable for this test: {live}"
    );

    // `app` goes first, but its Namespace can only go once the stack's
    // APIService is gone; destroy deletes that first.
    let destroyed = run(&cluster, dir, &["destroy", "--yes", "--timeout", "90"]);
    assert_eq!(destroyed.status.code(), Some(0), "{}", text(&destroyed));
    for object in [
        &["namespace", "shop"][..],
        &["namespace", "metrics"],
        &["apiservice", "v1beta1.metrics.k8s.io"],
    ] {
        assert!(
            gone_within(&cluster, object, 60),
            "{object:?} is left: {}",
            text(&destroyed)
        );
    }
    assert_eq!(
        state_names(&cluster),
        Vec::<String>::new(),
        "{}",
        text(&destroyed)
    );

    // An unavailable APIService that is not the stack's: destroy cannot get
    // past it, and says which one holds the Namespace.
    let foreign = project(&[(
        "apiservice.yaml",
        &api_service("widgets.example.com", "nowhere"),
    )]);
    succeed(
        cluster
            .kubectl()
            .args(["apply", "-f"])
            .arg(foreign.path().join("apiservice.yaml")),
    );
    let dir2 = project(&[
        (
            "tazuna.yaml",
            &config(None, &[entry("app", "app.yaml", None, "")]),
        ),
        ("app.yaml", app),
    ]);
    let apply = run(&cluster, dir2.path(), &["apply"]);
    assert_eq!(apply.status.code(), Some(0), "{}", text(&apply));
    let blocked = run(
        &cluster,
        dir2.path(),
        &["destroy", "--yes", "--timeout", "15"],
    );
    assert_eq!(blocked.status.code(), Some(1), "{}", text(&blocked));
    let said = printed(&blocked);
    assert!(
        said.contains("v1 Namespace shop: NamespaceDeletionDiscoveryFailure")
            && said.contains("APIService `v1beta1.widgets.example.com` is unavailable"),
        "{said}"
    );
    succeed(
        cluster
            .kubectl()
            .args(["delete", "apiservice", "v1beta1.widgets.example.com"]),
    );
    let destroyed = run(
        &cluster,
        dir2.path(),
        &["destroy", "--yes", "--timeout", "90"],
    );
    assert_eq!(destroyed.status.code(), Some(0), "{}", text(&destroyed));
    assert!(
        gone_within(&cluster, &["namespace", "shop"], 60),
        "{}",
        text(&destroyed)
    );
}
