//! The sandbox, tested with a plugin built to misbehave (`plugins/testing/probe`).
//!
//! Each case renders two manifests with the real binary: `good`, which the probe
//! renders normally, and `bad`, where it misbehaves. The sandbox must stop `bad`
//! with an error naming the plugin and the manifest, and `good` must still render.

mod common;

use common::{filters, project, tazuna};

fn file_with(bad_config: &str) -> String {
    format!(
        r#"apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  plugins:
    - name: probe
      source: file://{{probe}}
  manifests:
    - name: good
      type: probe
      namespace: default
      probe: {{ action: ok }}
    - name: bad
      type: probe
      probe: {bad_config}
"#
    )
}

fn build_with(bad_config: &str) -> (tempfile::TempDir, common::Run) {
    let dir = project(&file_with(bad_config));
    let run = tazuna(
        dir.path(),
        &["build", "--plugin-timeout", "2", "--plugin-memory", "64"],
    );
    (dir, run)
}

/// The good manifest's ConfigMap is on stdout, so one plugin failing did not
/// stop the other.
fn assert_good_rendered(run: &common::Run) {
    let docs: Vec<serde_yaml::Value> = serde_yaml::Deserializer::from_str(&run.stdout)
        .map(|doc| serde::Deserialize::deserialize(doc).expect("stdout is YAML"))
        .collect();
    assert_eq!(
        docs.len(),
        1,
        "exactly the good manifest's object: {}",
        run.stdout
    );
    assert_eq!(docs[0]["kind"], "ConfigMap");
    assert_eq!(run.code, 1, "a failed manifest fails the command");
}

#[test]
fn a_plugin_that_loops_forever_is_stopped_by_its_time_budget() {
    let (dir, run) = build_with("{ action: loop }");
    assert_good_rendered(&run);
    filters(dir.path()).bind(|| {
        insta::assert_snapshot!(run.stderr, @r"
    error: manifest `bad`: plugin `probe` was stopped: it exceeded its time budget of [TIME]
    error: 1 of 2 manifests failed to render; the others were printed
    ")
    });
}

#[test]
fn a_plugin_that_allocates_without_bound_is_stopped_by_its_memory_budget() {
    let (dir, run) = build_with("{ action: alloc }");
    assert_good_rendered(&run);
    filters(dir.path()).bind(|| {
        insta::assert_snapshot!(run.stderr, @r"
    error: manifest `bad`: plugin `probe` was stopped: it exceeded its memory budget of 64 MiB
    error: 1 of 2 manifests failed to render; the others were printed
    ")
    });
}

#[test]
fn a_plugin_cannot_read_files_outside_its_preopens() {
    let (dir, run) = build_with("{ action: read, file: /etc/passwd }");
    assert_good_rendered(&run);
    assert!(
        !run.stdout.contains("root:"),
        "no /etc/passwd content leaked"
    );
    filters(dir.path()).bind(|| insta::assert_snapshot!(run.stderr));
}

#[test]
fn a_plugin_cannot_climb_out_of_the_manifest_directory() {
    let (dir, run) = build_with("{ action: read, file: /manifest/../outside }");
    assert_good_rendered(&run);
    filters(dir.path()).bind(|| insta::assert_snapshot!(run.stderr));
}

#[test]
fn a_plugin_cannot_exec_without_a_grant() {
    let (dir, run) = build_with("{ action: exec, tool: helm }");
    assert_good_rendered(&run);
    filters(dir.path()).bind(|| insta::assert_snapshot!(run.stderr));
}

#[test]
fn a_plugin_that_panics_fails_only_its_manifest() {
    let (dir, run) = build_with("{ action: trap }");
    assert_good_rendered(&run);
    assert!(
        run.stderr
            .contains("error: manifest `bad`: plugin `probe` crashed"),
        "{}",
        run.stderr
    );
    drop(dir);
}

fn exec_project(grants: &str, tool: &str) -> tempfile::TempDir {
    project(&format!(
        r#"spec:
  plugins:
    - name: probe
      source: file://{{probe}}
      grants: {grants}
  manifests:
    - name: runs
      type: probe
      probe: {{ action: exec, tool: "{tool}", args: [hello, from, the, host] }}
"#
    ))
}

#[test]
fn a_requested_and_granted_exec_runs_the_tool_through_the_host() {
    let dir = exec_project(r#"["exec:echo"]"#, "echo");
    let run = tazuna(dir.path(), &["build", "-o", "json"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let list: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let data = &list["items"][0]["data"];
    assert_eq!(data["exitCode"], "0");
    assert_eq!(data["stdout"], "hello from the host\n");
}

#[test]
fn a_grant_the_plugin_never_requested_gives_it_nothing() {
    // The probe requests `exec:echo` only: granting `exec:true` as well does
    // not let it run `true`, because only the intersection takes effect.
    let dir = exec_project(r#"["exec:echo", "exec:true"]"#, "true");
    let run = tazuna(dir.path(), &["build"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(
        run.stderr
            .contains("capability `exec:true` is not granted (effective: exec:echo)"),
        "{}",
        run.stderr
    );
}

#[test]
fn time_in_tools_counts_against_the_tool_budget_not_the_plugin_budget() {
    let dir = exec_project(r#"["exec:echo"]"#, "echo");
    // An `echo` that takes 2 s, standing in for a slow `helm pull`.
    let slow = dir.path().join("slow-echo");
    std::fs::write(&slow, "#!/bin/sh\nsleep 2\necho \"$@\"\n").unwrap();
    let mut permissions = std::fs::metadata(&slow).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&slow, permissions).unwrap();
    let slow = slow.display().to_string();
    let env = [("TAZUNA_TOOL_ECHO", slow.as_str())];

    // A 1 s plugin budget is enough: the 2 s in the tool are not the plugin's.
    let run = common::tazuna_with_env(dir.path(), &["build", "--plugin-timeout", "1"], &env);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stdout.contains("hello from the host"),
        "{}",
        run.transcript()
    );

    // A 1 s tool budget is not.
    let run = common::tazuna_with_env(dir.path(), &["build", "--tool-timeout", "1"], &env);
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(
        run.stderr.contains("`echo` did not finish within 1s"),
        "{}",
        run.transcript()
    );
}
