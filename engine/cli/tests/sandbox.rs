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
fn a_plugin_that_sleeps_in_the_host_is_stopped_by_its_time_budget() {
    // `std::thread::sleep` is a WASI clock wait: the plugin runs no code of
    // its own while it waits, so only the host can end the wait.
    let dir = project(&file_with("{ action: sleep, seconds: 600 }"));
    let run = common::tazuna_within(
        dir.path(),
        &["build", "--plugin-timeout", "2"],
        &[],
        std::time::Duration::from_secs(60),
    );
    assert_good_rendered(&run);
    filters(dir.path()).bind(|| {
        insta::assert_snapshot!(run.stderr, @r"
    error: manifest `bad`: plugin `probe` was stopped: it exceeded its time budget of [TIME]
    error: 1 of 2 manifests failed to render; the others were printed
    ")
    });
}

#[test]
fn a_plugin_that_floods_its_output_is_refused_before_it_is_parsed() {
    let (_dir, run) = build_with("{ action: flood, count: 100001, bytes: 1 }");
    assert_good_rendered(&run);
    assert!(
        run.stderr.contains(
            "manifest `bad`: plugin `probe` returned 100001 objects, more than the 100000 objects one render may return"
        ) && run.stderr.contains("hint: split the manifest"),
        "{}",
        run.stderr
    );
    // 129 objects of 1 MiB each: under the count, over the bytes.
    let dir = project(&file_with("{ action: flood, count: 129, bytes: 1048576 }"));
    let run = tazuna(dir.path(), &["build", "--plugin-memory", "400"]);
    assert_good_rendered(&run);
    assert!(
        run.stderr.contains(
            "manifest `bad`: plugin `probe` returned 130 MiB of documents, more than the 128 MiB one render may return"
        ),
        "{}",
        run.stderr
    );
}

/// Whether this test runs as a user other than root, so what it checks
/// (`why`) cannot hold: a skip, unless `TAZUNA_E2E_REQUIRED` asks for every
/// test to run (then a failure).
fn not_root(why: &str) -> bool {
    // `/proc/self` is owned by the process's effective user.
    let uid = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap());
    if uid == 0 {
        return false;
    }
    assert!(std::env::var_os("TAZUNA_E2E_REQUIRED").is_none(), "{why}");
    eprintln!("skipped: {why}");
    true
}

/// 1.5 GiB written through WASI in three files: scratch holds 1 GiB, so the
/// plugin's third file fails and the disk keeps its space. The bound is a
/// tmpfs in Tazuna's own mount namespace, which needs root.
#[test]
fn a_plugin_cannot_fill_the_disk_through_scratch() {
    if not_root("scratch is bounded only when Tazuna runs as root") {
        return;
    }
    let dir = project(&file_with("{ action: fill, count: 3, bytes: 536870912 }"));
    let run = tazuna(dir.path(), &["build", "--plugin-timeout", "120"]);
    assert_good_rendered(&run);
    assert!(
        run.stderr
            .contains("plugin `probe` failed: /scratch/fill-2 after 1073741824 bytes"),
        "{}",
        run.stderr
    );
    assert!(!run.stdout.contains("written"), "{}", run.stdout);
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

/// A zero-grant plugin that reads all it can find under `/manifest` (its
/// `path` is `apps`) takes only that: not the repository's `.git`, not the
/// envfile provider's file, not another manifest's files, not the lock,
/// neither through a symbolic or hard link nor by a dotfile in its own
/// directory.
#[test]
fn a_plugin_sees_only_its_input_never_the_repository() {
    let dir = project(
        r#"apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  providers:
    - name: ops
      type: envfile
      envfile:
        path: ./secrets/ops.env
  plugins:
    - name: probe
      source: file://{probe}
  manifests:
    - name: reader
      type: probe
      path: apps
      namespace: default
      probe: { action: walk }
    - name: team
      type: manifests
      path: other
"#,
    );
    let root = dir.path();
    common::write(
        root,
        ".git/config",
        "[remote] url = https://ci-token-in-git@git.example\n",
    );
    common::write(root, "secrets/ops.env", "DB_PASSWORD=ops-secret-value\n");
    common::write(root, "tazuna.lock", "lock-file-content\n");
    common::write(
        root,
        "other/team.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other-team-content\n  namespace: default\n",
    );
    common::write(root, "apps/app.yaml", "the-plugins-own-input\n");
    common::write(root, "apps/.env", "DOTFILE_SECRET=in-its-own-directory\n");
    std::os::unix::fs::symlink("../secrets/ops.env", root.join("apps/env.yaml")).unwrap();
    std::os::unix::fs::symlink("../.git/config", root.join("apps/git.yaml")).unwrap();
    std::os::unix::fs::symlink("../other/team.yaml", root.join("apps/team.yaml")).unwrap();
    // Hard links too: a name in its directory, the content of another file.
    std::fs::hard_link(
        root.join("secrets/ops.env"),
        root.join("apps/hard-env.yaml"),
    )
    .unwrap();
    std::fs::hard_link(root.join(".git/config"), root.join("apps/hard-git.yaml")).unwrap();
    let run = tazuna(root, &["build", "-o", "json"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let list: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let reader = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|item| item["metadata"]["name"] == "probe-reader")
        .cloned()
        .unwrap_or_default();
    let data = reader["data"].as_object().cloned().unwrap_or_default();
    let reader = serde_json::to_string(&reader).unwrap();
    assert_eq!(
        data.get("apps__app.yaml").and_then(|v| v.as_str()),
        Some("the-plugins-own-input\n"),
        "the plugin read its own input: {}",
        run.stdout
    );
    for taken in [
        "ci-token-in-git",
        "ops-secret-value",
        "lock-file-content",
        "other-team-content",
        "in-its-own-directory",
    ] {
        assert!(
            !reader.contains(taken),
            "the plugin took `{taken}`: {reader}"
        );
    }
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
    // An `echo` that takes 2 s, standing in for a slow `helm pull` (bash
    // waits by itself: the jail starts no `sleep`).
    let slow = dir.path().join("slow-echo");
    std::fs::write(
        &slow,
        "#!/bin/bash\nend=$(( ${EPOCHREALTIME/./} + 2000000 ))\nwhile (( ${EPOCHREALTIME/./} < end )); do :; done\necho \"$@\"\n",
    )
    .unwrap();
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

/// A project whose probe is granted `exec:echo`, where `echo` is `script`: a
/// stand-in for a granted tool that has been made to misbehave. Whatever the
/// script manages is what a hostile helm plugin or template could manage.
fn jailed_tool(script: &str, args: &str) -> (tempfile::TempDir, Vec<(&'static str, String)>) {
    let dir = project(&format!(
        r#"spec:
  plugins:
    - name: probe
      source: file://{{probe}}
      grants: ["exec:echo"]
  manifests:
    - name: runs
      type: probe
      probe: {{ action: exec, tool: echo, args: {args} }}
"#
    ));
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    let path = tools.join("escape");
    std::fs::write(&path, script).unwrap();
    let mut permissions = std::fs::metadata(&path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&path, permissions).unwrap();
    let env = vec![("TAZUNA_TOOL_ECHO", path.display().to_string())];
    (dir, env)
}

/// A plugin granted `secrets:exec` hands its tool `ref+env:CI_DEPLOY_TOKEN`,
/// which its config never names (the probe joins it from two pieces): the
/// tool gets nothing of Tazuna's environment. The same variable, named in the
/// config, is handed.
#[test]
fn a_tool_gets_only_the_environment_variables_the_config_names() {
    let run_with = |variables: &str| {
        let dir = project(&format!(
            r#"spec:
  plugins:
    - name: probe
      source: file://{{probe}}
      grants: ["exec:echo", "secrets:exec"]
  manifests:
    - name: runs
      type: probe
      probe: {{ action: exec, tool: echo, variables: {variables} }}
"#
        ));
        let tools = dir.path().join("tools");
        std::fs::create_dir(&tools).unwrap();
        let path = tools.join("print");
        std::fs::write(&path, "#!/bin/bash\necho \"got:$ECHO_DEPLOY\"\n").unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let echo = path.display().to_string();
        let env = [
            ("TAZUNA_TOOL_ECHO", echo.as_str()),
            ("CI_DEPLOY_TOKEN", "ci-token-of-tazunas-own"),
        ];
        common::tazuna_with_env(dir.path(), &["build", "-o", "json"], &env)
    };
    let unnamed = run_with(r#"{ ECHO_DEPLOY: ["ref+env:CI_", "DEPLOY_TOKEN"] }"#);
    let said = unnamed.transcript();
    assert!(
        said.contains("passed `ref+env:CI_DEPLOY_TOKEN` to `echo` in `ECHO_DEPLOY`, but the manifest's config does not name `CI_DEPLOY_TOKEN`"),
        "{said}"
    );
    assert!(!said.contains("ci-token-of-tazunas-own"), "{said}");
    // Written whole in the config, it is the user's: `build` hands the
    // reference itself (a cluster run would resolve it).
    let named = run_with(r#"{ ECHO_DEPLOY: ["ref+env:CI_DEPLOY_TOKEN"] }"#);
    assert_eq!(named.code, 0, "{}", named.transcript());
    assert_eq!(tool_stdout(&named).trim(), "got:ref+env:CI_DEPLOY_TOKEN");
}

/// The tool's stdout, from the ConfigMap the probe renders.
fn tool_stdout(run: &common::Run) -> String {
    let list: serde_json::Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|_| panic!("JSON on stdout: {}", run.transcript()));
    list["items"][0]["data"]["stdout"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_granted_tool_cannot_read_or_write_host_files_or_reach_the_network() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "the user's secret").unwrap();
    let marker = outside.path().join("marker");
    // A listener on the host that the tool must not reach (an API server, a
    // collector, anything on the machine or beyond it).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        r#"#!/bin/bash
# Only bash's builtins: the jail starts no program but the granted one.
out=""
readable() {{ {{ read -r _ < "$1"; }} 2>/dev/null; }}
readable {secret} && out="$out read-host-file"
echo pwned 2>/dev/null > {marker} && out="$out wrote-marker"
readable /proc/$PPID/environ && out="$out read-parent-environment"
readable /etc/shadow && out="$out read-shadow"
(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && out="$out reached-host-listener"
shopt -s dotglob nullglob
planted=("$HOME"/*)
[ ${{#planted[@]}} -gt 0 ] && out="$out home-not-empty"
echo pwned > "$HOME/.planted" 2>/dev/null || out="$out home-not-writable"
readable "$HOME/.planted" || out="$out home-not-readable"
/usr/bin/touch {marker} 2>/dev/null && out="$out ran-a-program"
echo "escapes:$out"
"#,
        secret = secret.display(),
        marker = marker.display(),
    );
    let (dir, env) = jailed_tool(&script, "[]");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let run = common::tazuna_with_env(dir.path(), &["build", "-o", "json"], &env);
    assert_eq!(run.code, 0, "{}", run.transcript());
    // The script ran (its own home is writable) and every escape failed.
    assert_eq!(tool_stdout(&run), "escapes:\n", "{}", run.transcript());
    assert!(!marker.exists(), "the tool wrote outside its jail");
    assert!(
        listener.accept().is_err(),
        "the tool reached a listener on the host"
    );
}

/// The hostile tool the jail's unit test runs too, here granted to a
/// third-party plugin as its `echo`: every attempt to use a privilege (root,
/// capabilities, namespaces, devices, memfd, BPF, keyrings, a host socket,
/// the host's keys, 3 GiB, a session of its own) must fail.
#[cfg(target_arch = "x86_64")]
#[test]
fn a_granted_tool_holds_no_privilege() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "the user's").unwrap();
    let socket = std::os::unix::net::UnixListener::bind(outside.path().join("socket")).unwrap();
    socket.set_nonblocking(true).unwrap();
    let probe = |chosen: &str| {
        std::fs::read_to_string(common::root().join("tests/data/probes/hostile-tool.py"))
            .unwrap()
            .replace("{outside}", &outside.path().display().to_string())
            .replace("{chosen}", chosen)
    };
    // Every vector but the two that fill memory (scratch is a tmpfs, so
    // what a tool writes there is its memory too): none works.
    let (dir, env) = jailed_tool(&probe("-held-1.6-GiB,scratch-1.5-GiB"), "[]");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let run = common::tazuna_with_env(dir.path(), &["build", "-o", "json"], &env);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(tool_stdout(&run).trim(), "worked:", "{}", run.transcript());
    assert!(socket.accept().is_err(), "the tool reached a host socket");
    // 1.6 GiB in two processes, or 1.5 GiB written to scratch: the kernel
    // stops a process, and the run fails though the tool carries on. (A
    // memory cgroup needs root here.)
    if not_root("a memory cgroup needs root on this machine") {
        return;
    }
    for vector in ["held-1.6-GiB", "scratch-1.5-GiB"] {
        let (dir, env) = jailed_tool(&probe(vector), "[]");
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let run = common::tazuna_with_env(dir.path(), &["build", "-o", "json"], &env);
        assert_eq!(run.code, 1, "{vector}: {}", run.transcript());
        assert!(
            run.stderr
                .contains("`echo` and what it started held more than 1024 MiB of memory"),
            "{vector}: {}",
            run.transcript()
        );
    }
}

#[test]
fn the_jails_proxy_lets_a_tool_reach_only_the_hosts_its_manifest_names() {
    // A listener on the host the manifest does not name.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    // The manifest names one remote host, so the jail has a proxy; the tool
    // asks that proxy for the unnamed listener instead.
    let script = format!(
        r#"#!/bin/bash
proxy=${{HTTPS_PROXY#http://}}
exec 3<>/dev/tcp/${{proxy%:*}}/${{proxy##*:}} || {{ echo "no proxy: $HTTPS_PROXY"; exit 0; }}
printf 'CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n' >&3
read -r status <&3
echo "answer:${{status%$'\r'}}"
"#
    );
    let (dir, env) = jailed_tool(&script, r#"["https://charts.example:443/index.yaml"]"#);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let run = common::tazuna_with_env(dir.path(), &["build", "-o", "json"], &env);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(
        tool_stdout(&run).trim(),
        "answer:HTTP/1.1 403 Forbidden",
        "{}",
        run.transcript()
    );
    assert!(
        listener.accept().is_err(),
        "the proxy connected the tool to a host its manifest does not name"
    );
}

#[test]
fn a_tool_and_everything_it_started_end_when_it_ends() {
    // The tool leaves a child behind that keeps its stdout open (a copy of
    // itself: the jail starts no other program), and one that leaves the
    // tool's session and process group first.
    let script = "#!/bin/bash\nwhile :; do :; done &\n(exec 1>&- 2>&-; while :; do :; done) &\necho \"left $!\"\n";
    let (dir, env) = jailed_tool(script, "[]");
    let tool = env[0].1.clone();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let run = common::tazuna_within(
        dir.path(),
        &["build", "-o", "json", "--tool-timeout", "20"],
        &env,
        std::time::Duration::from_secs(60),
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        tool_stdout(&run).starts_with("left "),
        "{}",
        run.transcript()
    );
    // The children are copies of the script: no process on the machine may
    // still run it (pids inside the jail's PID namespace mean nothing here,
    // so look them up by command line).
    let survivors: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|entry| {
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let state = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            let zombie = state
                .rsplit(") ")
                .next()
                .is_some_and(|rest| rest.starts_with('Z'));
            (!zombie && String::from_utf8_lossy(&cmdline).contains(&tool))
                .then(|| entry.file_name().to_string_lossy().into_owned())
        })
        .collect();
    assert!(
        survivors.is_empty(),
        "the tool's children {survivors:?} outlived the run"
    );
}

#[test]
fn a_tool_that_floods_its_output_fails_rather_than_being_cut_short() {
    let script = "#!/bin/bash\nprintf '%*s' 70000000 ''\n";
    let (dir, env) = jailed_tool(script, "[]");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let run = common::tazuna_with_env(dir.path(), &["build"], &env);
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(
        run.stderr.contains(
            "`echo` wrote more than 64 MiB to stdout, more than Tazuna keeps of one tool's output"
        ),
        "{}",
        run.transcript()
    );
}

#[test]
fn a_plugin_cannot_hand_a_tool_a_host_path() {
    for args in [
        r#"["--set-file=x=/proc/1/environ"]"#,
        r#"["--values=../../root/.docker/config.json"]"#,
        r#"["/etc/passwd"]"#,
    ] {
        let (dir, env) = jailed_tool("#!/bin/sh\necho ran\n", args);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let run = common::tazuna_with_env(dir.path(), &["build"], &env);
        assert_eq!(run.code, 1, "{args}: {}", run.transcript());
        assert!(
            run.stderr.contains("manifest `runs`")
                && run.stderr.contains("plugin `probe`")
                && run
                    .stderr
                    .contains("tools see only paths under `/manifest` and `/scratch`"),
            "{args}: {}",
            run.stderr
        );
        assert!(!run.stdout.contains("ran"), "{}", run.transcript());
    }
}

/// A project whose probe, granted `grants`, renders a ClusterRoleBinding of
/// `cluster-admin` to every authenticated user, a Secret in `kube-system`
/// and a mutating webhook configuration, beside its own ConfigMap.
fn reaching_for_cluster_admin(manifest: &str, grants: &str) -> tempfile::TempDir {
    project(&format!(
        r#"apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  plugins:
    - name: probe
      source: file://{{probe}}
      grants: {grants}
  manifests:
    - name: {manifest}
      type: probe
      namespace: apps
      probe:
        action: emit
        objects:
          - {{apiVersion: v1, kind: Namespace, metadata: {{name: apps}}}}
          - {{apiVersion: v1, kind: ConfigMap, metadata: {{name: own, namespace: apps}}, data: {{a: b}}}}
          - apiVersion: rbac.authorization.k8s.io/v1
            kind: ClusterRoleBinding
            metadata: {{name: everyone-is-admin}}
            roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}}
            subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:authenticated"}}]
          - {{apiVersion: v1, kind: Secret, metadata: {{name: planted, namespace: kube-system}}, stringData: {{token: x}}}}
          - {{apiVersion: admissionregistration.k8s.io/v1, kind: MutatingWebhookConfiguration, metadata: {{name: everything}}, webhooks: []}}
"#
    ))
}

#[test]
fn a_plugin_without_emit_grants_is_refused_cluster_wide_objects_before_any_write() {
    let Some(cluster) = tazuna_tests::e2e::TestCluster::start("sandbox-scope") else {
        return;
    };
    let planted = [
        &["clusterrolebinding", "everyone-is-admin"][..],
        &["-n", "kube-system", "secret", "planted"],
        &["mutatingwebhookconfiguration", "everything"],
    ];
    let dir = reaching_for_cluster_admin("grab", "[]");
    for verb in ["plan", "apply"] {
        let out = common::output(common::tazuna_on(&cluster, dir.path()).arg(verb));
        let said = common::text(&out);
        assert_eq!(out.status.code(), Some(1), "{verb}: {said}");
        for (object, grant) in [
            (
                "ClusterRoleBinding everyone-is-admin",
                "`emit:kind:ClusterRoleBinding`",
            ),
            ("Secret kube-system/planted", "`emit:namespace:kube-system`"),
            (
                "MutatingWebhookConfiguration everything",
                "`emit:kind:MutatingWebhookConfiguration`",
            ),
        ] {
            assert!(
                said.contains("manifest `grab`: plugin `probe` rendered")
                    && said.contains(object)
                    && said.contains(grant),
                "{verb} names {object} and {grant}: {said}"
            );
        }
        assert!(said.contains("hint: if you trust plugin `probe`"), "{said}");
        for args in planted {
            assert!(!common::exists(&cluster, args), "{verb} wrote {args:?}");
        }
        assert!(
            !common::exists(&cluster, &["namespace", "apps"]),
            "{verb} wrote the plugin's own objects before refusing"
        );
    }

    // Granted every namespace by wildcard, the plugin (which requests
    // `emit:namespace:kube-system` by name) still gets no `kube-*`
    // namespace: the wildcard's bounds hold for what it requested by name.
    let dir = reaching_for_cluster_admin(
        "wild",
        r#"["emit:namespace:*", "emit:kind:*", "emit:cluster:*"]"#,
    );
    for verb in ["plan", "apply"] {
        let out = common::output(common::tazuna_on(&cluster, dir.path()).arg(verb));
        let said = common::text(&out);
        assert_eq!(out.status.code(), Some(1), "{verb}: {said}");
        assert!(
            said.contains("Secret kube-system/planted, which it may not create without")
                && said.contains("`emit:namespace:kube-system`"),
            "{verb}: {said}"
        );
        for args in planted {
            assert!(!common::exists(&cluster, args), "{verb} wrote {args:?}");
        }
    }

    // Granted, the same objects are applied; kubectl sees them.
    let dir = reaching_for_cluster_admin(
        "granted",
        r#"["emit:cluster:ClusterRoleBinding", "emit:kind:ClusterRoleBinding",
           "emit:namespace:kube-system", "emit:cluster:MutatingWebhookConfiguration",
           "emit:kind:MutatingWebhookConfiguration"]"#,
    );
    let out = common::output(common::tazuna_on(&cluster, dir.path()).arg("apply"));
    assert!(out.status.success(), "{}", common::text(&out));
    for args in planted {
        assert!(common::exists(&cluster, args), "{args:?} was not applied");
    }
    assert!(common::exists(
        &cluster,
        &["-n", "apps", "configmap", "own"]
    ));

    // Namespaced objects that act for another identity or redirect traffic,
    // in the plugin's own namespace (`default`, where a cluster-admin
    // ServiceAccount lives), and their next spellings: each needs a grant
    // naming it, and none is written.
    for args in [
        &["-n", "default", "serviceaccount", "admin"][..],
        &[
            "clusterrolebinding",
            "default-admin",
            "--clusterrole=cluster-admin",
            "--serviceaccount=default:admin",
        ],
    ] {
        common::succeed(cluster.kubectl().arg("create").args(args));
    }
    let dir = project(&format!(
        r#"apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  plugins:
    - name: probe
      source: file://{{probe}}
      grants: ["emit:cluster:*", "emit:kind:*", "emit:object:*", "emit:object:Service/fine"]
  manifests:
    - name: takeover
      type: probe
      namespace: default
      probe:
        action: emit
        objects:
{}
"#,
        IDENTITY_AND_TRAFFIC
            .iter()
            .map(|(object, _, _)| format!("          - {object}\n"))
            .collect::<String>()
    ));
    for verb in ["plan", "apply"] {
        let out = common::output(common::tazuna_on(&cluster, dir.path()).arg(verb));
        let said = common::text(&out);
        assert_eq!(out.status.code(), Some(1), "{verb}: {said}");
        for (_, shown, grant) in IDENTITY_AND_TRAFFIC {
            match grant {
                Some(grant) => assert!(
                    said.contains(&format!(" {shown}, which it may not create without"))
                        && said.contains(&format!("`{grant}`")),
                    "{verb} names {shown} and {grant}: {said}"
                ),
                None => assert!(!said.contains(&format!(" {shown},")), "{said}"),
            }
        }
    }
    for (kind, name) in [
        ("endpointslices", "kubernetes-evil"),
        ("endpoints", "kubernetes"),
        ("secret", "admin-token"),
        ("pod", "as-admin"),
        ("deployment", "as-admin"),
        ("pod", "host-root"),
        ("service", "redirect"),
        ("service", "fine"),
        ("pod", "reads-token"),
        ("pod", "unconfined"),
        ("service", "dns-ip"),
        ("replicationcontroller", "as-admin"),
        ("statefulset", "claims-other"),
        ("role", "r"),
        ("persistentvolume", "planted"),
        ("ingressclass", "takes-all"),
        ("storageclass", "takes-all"),
        ("node", "fake-node"),
        ("clusterrole", "joins-monitoring"),
        ("persistentvolume", "host-files"),
        ("persistentvolume", "unbound-nfs"),
        ("persistentvolumeclaim", "grab-by-selector"),
        ("persistentvolumeclaim", "grab-static"),
        ("persistentvolumeclaim", "grab-by-annotation"),
        ("storageclass", "nfs-existing"),
        ("csidriver", "hostpath.csi.k8s.io"),
        ("priorityclass", "everyone-high"),
        ("ipaddress", "10.96.0.77"),
    ] {
        let planted = common::output(
            cluster
                .kubectl()
                .args(["get", "-n", "default", kind, name, "-o", "name"]),
        );
        // `endpoints/kubernetes` may be the API server's own; its content is checked below.
        let wrote = planted.status.success() && kind != "endpoints";
        assert!(!wrote, "{kind} {name} was written");
    }
    // The `kubernetes` Endpoints (the API server's, where it keeps one) do
    // not point at the plugin's address.
    let endpoints = common::output(cluster.kubectl().args([
        "get",
        "-n",
        "default",
        "endpoints,endpointslices",
        "--ignore-not-found",
        "-o",
        "json",
    ]));
    assert!(endpoints.status.success(), "{}", common::text(&endpoints));
    assert!(
        !String::from_utf8_lossy(&endpoints.stdout).contains("10.9.9.9"),
        "{}",
        common::text(&endpoints)
    );
    for args in [
        &["clusterrole", "sees-everything"][..],
        &[
            "clusterrole",
            "system:public-info-viewer",
            "-o",
            "jsonpath={.metadata.labels.probe}",
        ],
    ] {
        let out = common::output(cluster.kubectl().arg("get").args(args));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            !out.status.success() || (args.len() > 2 && text.trim().is_empty()),
            "{args:?}: {text}"
        );
    }

    // Takeover: objects of an allowed kind that exist and that no stack
    // applied (one made by hand, one the controller manager made) are not
    // the plugin's to take without `adopt:` naming them. `kube-root-ca.crt`
    // needs its own emit grant first; granted, it is still not taken.
    common::succeed(cluster.kubectl().args([
        "-n",
        "default",
        "create",
        "configmap",
        "probe-target",
        "--from-literal=k=by-hand",
    ]));
    let dir = project(
        r#"apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  plugins:
    - name: probe
      source: file://{probe}
      grants: ["emit:object:ConfigMap/kube-root-ca.crt"]
  manifests:
    - name: takeover
      type: probe
      namespace: default
      probe:
        action: emit
        objects:
          - {apiVersion: v1, kind: ConfigMap, metadata: {name: probe-target}, data: {k: taken}}
          - {apiVersion: v1, kind: ConfigMap, metadata: {name: kube-root-ca.crt}, data: {ca.crt: forged}}
"#,
    );
    for verb in ["plan", "apply"] {
        let out = common::output(common::tazuna_on(&cluster, dir.path()).arg(verb));
        let said = common::text(&out);
        assert_eq!(out.status.code(), Some(1), "{verb}: {said}");
        for name in ["probe-target", "kube-root-ca.crt"] {
            assert!(
                said.contains(&format!("plugin `probe` renders v1 ConfigMap default/{name}, which exists on the cluster"))
                    && said.contains(&format!("`adopt: [\"ConfigMap/default/{name}\"]`")),
                "{verb} refuses taking over {name}: {said}"
            );
        }
    }
    let target = common::kubectl_json(
        &cluster,
        &["-n", "default", "get", "configmap", "probe-target"],
    );
    assert_eq!(target["data"]["k"], "by-hand");
    let ca = common::kubectl_json(
        &cluster,
        &["-n", "default", "get", "configmap", "kube-root-ca.crt"],
    );
    assert_ne!(ca["data"]["ca.crt"], "forged");

    // An aggregated ClusterRole of the cluster's own selects a label the
    // emit verdict lets a ClusterRole carry: the plugin's role, granted by
    // kind, would give its rules to everyone bound to the aggregate.
    common::succeed(cluster.kubectl().args([
        "create",
        "clusterrole",
        "monitoring-agg",
        "--aggregation-rule=app.kubernetes.io/part-of=monitoring",
    ]));
    let aggregated = |grants: &str, objects: &str| {
        project(&format!(
            r#"apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  plugins:
    - name: probe
      source: file://{{probe}}
      grants: {grants}
  manifests:
    - name: joins
      type: probe
      namespace: default
      probe:
        action: emit
        objects:
{objects}"#
        ))
    };
    let role = |name: &str, part_of: &str| {
        format!(
            "          - {{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {{name: {name}, labels: {{app.kubernetes.io/part-of: {part_of}}}}}, rules: [{{apiGroups: [\"*\"], resources: [\"*\"], verbs: [\"*\"]}}]}}\n"
        )
    };
    // The aggregate on the cluster, and one the same render brings.
    let team_agg = "          - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: team-agg}, aggregationRule: {clusterRoleSelectors: [{matchLabels: {app.kubernetes.io/part-of: team}}]}, rules: []}\n";
    for (grants, objects, role_name, aggregate) in [
        (
            r#"["emit:cluster:*", "emit:kind:*"]"#,
            role("sneaky", "monitoring"),
            "sneaky",
            "monitoring-agg",
        ),
        (
            r#"["emit:cluster:*", "emit:kind:*", "emit:object:ClusterRole/team-agg"]"#,
            format!("{team_agg}{}", role("sneaky-team", "team")),
            "sneaky-team",
            "team-agg",
        ),
    ] {
        let dir = aggregated(grants, &objects);
        for verb in ["plan", "apply"] {
            let out = common::output(common::tazuna_on(&cluster, dir.path()).arg(verb));
            let said = common::text(&out);
            assert_eq!(out.status.code(), Some(1), "{verb}: {said}");
            assert!(
                said.contains(&format!("rendered ClusterRole {role_name}, which the aggregated ClusterRole `{aggregate}` on the cluster selects"))
                    && said.contains(&format!("`emit:object:ClusterRole/{role_name}`")),
                "{verb}: {said}"
            );
            assert!(
                !common::exists(&cluster, &["clusterrole", role_name]),
                "{verb}"
            );
            assert!(
                !common::exists(&cluster, &["clusterrole", "team-agg"]),
                "{verb}"
            );
        }
    }
    // A claim that names a class nothing provisions binds only a volume
    // someone left with that class (`manual`, the usual way to offer one).
    let dir = aggregated(
        "[]",
        "          - {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: grab-manual}, spec: {storageClassName: manual, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}\n",
    );
    for verb in ["plan", "apply"] {
        let out = common::output(common::tazuna_on(&cluster, dir.path()).arg(verb));
        let said = common::text(&out);
        assert_eq!(out.status.code(), Some(1), "{verb}: {said}");
        assert!(
            said.contains("rendered PersistentVolumeClaim grab-manual, whose claim names StorageClass `manual`, which nothing on the cluster or in this run provisions")
                && said.contains("`emit:object:PersistentVolumeClaim/grab-manual`"),
            "{verb}: {said}"
        );
        assert!(
            !common::exists(&cluster, &["-n", "default", "pvc", "grab-manual"]),
            "{verb}"
        );
    }
    let dir = aggregated(
        r#"["emit:cluster:*", "emit:kind:*", "emit:object:ClusterRole/sneaky"]"#,
        &role("sneaky", "monitoring"),
    );
    let out = common::output(common::tazuna_on(&cluster, dir.path()).arg("apply"));
    assert!(
        out.status.success(),
        "granted by name: {}",
        common::text(&out)
    );
    assert!(common::exists(&cluster, &["clusterrole", "sneaky"]));
}

/// What a plugin granted every built-in kind and every object by wildcard
/// (`emit:kind:*`, `emit:cluster:*`, `emit:object:*`, which names none) and
/// one Service by name renders into namespace
/// `default` to act for another identity or redirect traffic; how the
/// refusal shows it; the grant it names (`None`: allowed).
const IDENTITY_AND_TRAFFIC: &[(&str, &str, Option<&str>)] = &[
    (
        "{apiVersion: discovery.k8s.io/v1, kind: EndpointSlice, metadata: {name: kubernetes-evil, labels: {kubernetes.io/service-name: kubernetes}}, addressType: IPv4, endpoints: [{addresses: [10.9.9.9]}], ports: [{name: https, port: 443}]}",
        "EndpointSlice default/kubernetes-evil",
        Some("emit:object:EndpointSlice/kubernetes-evil"),
    ),
    (
        "{apiVersion: v1, kind: Endpoints, metadata: {name: kubernetes}, subsets: [{addresses: [{ip: 10.9.9.9}], ports: [{name: https, port: 443}]}]}",
        "Endpoints default/kubernetes",
        Some("emit:object:Endpoints/kubernetes"),
    ),
    (
        "{apiVersion: v1, kind: Secret, type: kubernetes.io/service-account-token, metadata: {name: admin-token, annotations: {kubernetes.io/service-account.name: admin}}}",
        "Secret default/admin-token",
        Some("emit:object:Secret/admin-token"),
    ),
    (
        "{apiVersion: v1, kind: Pod, metadata: {name: as-admin}, spec: {serviceAccountName: admin, containers: [{name: c, image: x}]}}",
        "Pod default/as-admin",
        Some("emit:object:Pod/as-admin"),
    ),
    (
        "{apiVersion: apps/v1, kind: Deployment, metadata: {name: as-admin}, spec: {selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {serviceAccount: admin, containers: [{name: c, image: x}]}}}}",
        "Deployment default/as-admin",
        Some("emit:object:Deployment/as-admin"),
    ),
    (
        "{apiVersion: v1, kind: Pod, metadata: {name: host-root}, spec: {automountServiceAccountToken: false, volumes: [{name: r, hostPath: {path: /}}], containers: [{name: c, image: x}]}}",
        "Pod default/host-root",
        Some("emit:object:Pod/host-root"),
    ),
    // Found by an outside attack: another identity's token read rather than
    // mounted, a seccomp profile outside the baseline, the cluster DNS's
    // address, Pods of a kind granted by kind, a volume someone else left.
    (
        "{apiVersion: v1, kind: Pod, metadata: {name: reads-token}, spec: {automountServiceAccountToken: false, volumes: [{name: t, secret: {secretName: admin-token}}], containers: [{name: c, image: x}]}}",
        "Pod default/reads-token",
        Some("emit:object:Pod/reads-token"),
    ),
    (
        "{apiVersion: v1, kind: Pod, metadata: {name: unconfined}, spec: {automountServiceAccountToken: false, securityContext: {seccompProfile: {type: Unconfined}}, containers: [{name: c, image: x}]}}",
        "Pod default/unconfined",
        Some("emit:object:Pod/unconfined"),
    ),
    (
        "{apiVersion: v1, kind: Service, metadata: {name: dns-ip}, spec: {clusterIP: 10.96.0.10, ports: [{port: 53}]}}",
        "Service default/dns-ip",
        Some("emit:object:Service/dns-ip"),
    ),
    (
        "{apiVersion: v1, kind: ReplicationController, metadata: {name: as-admin}, spec: {selector: {a: b}, template: {metadata: {labels: {a: b}}, spec: {serviceAccountName: admin, containers: [{name: c, image: x}]}}}}",
        "ReplicationController default/as-admin",
        Some("emit:object:ReplicationController/as-admin"),
    ),
    (
        "{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: claims-other}, spec: {selector: {matchLabels: {a: b}}, serviceName: s, template: {metadata: {labels: {a: b}}, spec: {automountServiceAccountToken: false, containers: [{name: c, image: x}]}}, volumeClaimTemplates: [{metadata: {name: d}, spec: {volumeName: someone-elses-pv, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]}}",
        "StatefulSet default/claims-other",
        Some("emit:object:StatefulSet/claims-other"),
    ),
    (
        "{apiVersion: v1, kind: Service, metadata: {name: redirect}, spec: {type: ExternalName, externalName: attacker.example}}",
        "Service default/redirect",
        Some("emit:object:Service/redirect"),
    ),
    (
        "{apiVersion: v1, kind: Service, metadata: {name: fine}, spec: {externalIPs: [10.9.9.9], ports: [{port: 80}]}}",
        "Service default/fine",
        None,
    ),
    (
        "{apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, metadata: {name: root, namespace: default}, spec: {interval: 1m, prune: true, sourceRef: {kind: OCIRepository, name: root}}}",
        "Kustomization default/root",
        Some("emit:object:Kustomization/root"),
    ),
    (
        "{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: root, namespace: default}, spec: {}}",
        "Application default/root",
        Some("emit:object:Application/root"),
    ),
    (
        "{apiVersion: external-secrets.io/v1, kind: ExternalSecret, metadata: {name: grab, namespace: default}, spec: {}}",
        "ExternalSecret default/grab",
        Some("emit:object:ExternalSecret/grab"),
    ),
    (
        "{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: r}, rules: []}",
        "Role default/r",
        None,
    ),
    // Found by the second outside attack: what a wildcard grant let through.
    (
        "{apiVersion: monitoring.example.com/v1, kind: Scraper, metadata: {name: grab}, spec: {}}",
        // No CRD makes it known to the cluster, so its scope is unknown and
        // it is held to the stricter, cluster-wide grant.
        "Scraper grab",
        Some("emit:cluster:Scraper"),
    ),
    (
        "{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: joins-monitoring, labels: {example.com/aggregate-to-monitoring: \"true\"}}, rules: [{apiGroups: [\"*\"], resources: [\"*\"], verbs: [\"*\"]}]}",
        "ClusterRole joins-monitoring",
        Some("emit:object:ClusterRole/joins-monitoring"),
    ),
    (
        "{apiVersion: v1, kind: PersistentVolume, metadata: {name: planted}, spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /tmp/planted}, claimRef: {namespace: kube-system, name: data}}}",
        "PersistentVolume planted",
        Some("emit:object:PersistentVolume/planted"),
    ),
    (
        "{apiVersion: networking.k8s.io/v1, kind: IngressClass, metadata: {name: takes-all, annotations: {ingressclass.kubernetes.io/is-default-class: \"true\"}}, spec: {controller: example.com/evil}}",
        "IngressClass takes-all",
        Some("emit:object:IngressClass/takes-all"),
    ),
    (
        "{apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: takes-all, annotations: {storageclass.kubernetes.io/is-default-class: \"true\"}}, provisioner: example.com/evil}",
        "StorageClass takes-all",
        Some("emit:object:StorageClass/takes-all"),
    ),
    (
        "{apiVersion: v1, kind: Node, metadata: {name: fake-node}}",
        "Node fake-node",
        Some("emit:object:Node/fake-node"),
    ),
    (
        "{apiVersion: certificates.k8s.io/v1beta1, kind: ClusterTrustBundle, metadata: {name: trust-me}, spec: {trustBundle: x}}",
        "ClusterTrustBundle trust-me",
        Some("emit:object:ClusterTrustBundle/trust-me"),
    ),
    (
        "{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: sees-everything, labels: {rbac.authorization.k8s.io/aggregate-to-view: \"true\"}}, rules: [{apiGroups: [\"*\"], resources: [\"*\"], verbs: [\"*\"]}]}",
        "ClusterRole sees-everything",
        Some("emit:object:ClusterRole/sees-everything"),
    ),
    (
        "{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: \"system:public-info-viewer\", labels: {probe: \"yes\"}}, rules: [{apiGroups: [\"*\"], resources: [\"*\"], verbs: [\"*\"]}]}",
        "ClusterRole system:public-info-viewer",
        Some("emit:object:ClusterRole/system:public-info-viewer"),
    ),
    (
        "{apiVersion: v1, kind: PersistentVolume, metadata: {name: host-files}, spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /etc}, claimRef: {namespace: default, name: mine}}}",
        "PersistentVolume host-files",
        Some("emit:object:PersistentVolume/host-files"),
    ),
    (
        "{apiVersion: v1, kind: PersistentVolume, metadata: {name: unbound-nfs}, spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], nfs: {server: nas.example.com, path: /data}}}",
        "PersistentVolume unbound-nfs",
        Some("emit:object:PersistentVolume/unbound-nfs"),
    ),
    (
        "{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: grab-by-selector}, spec: {storageClassName: \"\", selector: {matchLabels: {x: y}}, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}",
        "PersistentVolumeClaim default/grab-by-selector",
        Some("emit:object:PersistentVolumeClaim/grab-by-selector"),
    ),
    (
        "{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: grab-static}, spec: {storageClassName: \"\", accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}",
        "PersistentVolumeClaim default/grab-static",
        Some("emit:object:PersistentVolumeClaim/grab-static"),
    ),
    (
        "{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: grab-by-annotation, annotations: {volume.beta.kubernetes.io/storage-class: \"\"}}, spec: {storageClassName: fast, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}",
        "PersistentVolumeClaim default/grab-by-annotation",
        Some("emit:object:PersistentVolumeClaim/grab-by-annotation"),
    ),
    (
        "{apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: nfs-existing}, provisioner: nfs.csi.k8s.io, parameters: {server: 10.0.0.5, share: /exports/team-a, csi.storage.k8s.io/node-publish-secret-name: creds, csi.storage.k8s.io/node-publish-secret-namespace: victims}}",
        "StorageClass nfs-existing",
        Some("emit:object:StorageClass/nfs-existing"),
    ),
    (
        "{apiVersion: storage.k8s.io/v1, kind: CSIDriver, metadata: {name: hostpath.csi.k8s.io}, spec: {tokenRequests: [{audience: \"\"}], volumeLifecycleModes: [Ephemeral, Persistent]}}",
        "CSIDriver hostpath.csi.k8s.io",
        Some("emit:object:CSIDriver/hostpath.csi.k8s.io"),
    ),
    (
        "{apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: everyone-high}, value: 1000000, globalDefault: true}",
        "PriorityClass everyone-high",
        Some("emit:object:PriorityClass/everyone-high"),
    ),
    (
        "{apiVersion: networking.k8s.io/v1, kind: IPAddress, metadata: {name: 10.96.0.77}, spec: {parentRef: {group: \"\", resource: services, namespace: default, name: fine}}}",
        "IPAddress 10.96.0.77",
        Some("emit:object:IPAddress/10.96.0.77"),
    ),
];

/// A project whose probe, granted `grants`, renders a Secret naming the CI's
/// deploy token (`ref+env:CI_DEPLOY_TOKEN`).
fn reaching_for_a_secret(grants: &str) -> tempfile::TempDir {
    project(&format!(
        r#"apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  plugins:
    - name: probe
      source: file://{{probe}}
      grants: {grants}
  manifests:
    - name: leak
      type: probe
      namespace: default
      probe:
        action: emit
        objects:
          - {{apiVersion: v1, kind: Secret, metadata: {{name: leaked, namespace: default}}, stringData: {{token: "ref+env:CI_DEPLOY_TOKEN"}}}}
"#
    ))
}

#[test]
fn a_plugin_references_only_the_secrets_it_is_granted() {
    let Some(cluster) = tazuna_tests::e2e::TestCluster::start("sandbox-secrets") else {
        return;
    };
    let token = "ci-token-e2e-7f3a";
    let apply = |dir: &tempfile::TempDir| {
        common::output(
            common::tazuna_on(&cluster, dir.path())
                .env("CI_DEPLOY_TOKEN", token)
                .arg("apply"),
        )
    };
    let refused = apply(&reaching_for_a_secret("[]"));
    let said = common::text(&refused);
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert!(
        said.contains("refers to provider `env`, which plugin `probe` may not use")
            && said.contains("`secrets:env:CI_DEPLOY_TOKEN`"),
        "{said}"
    );
    assert!(!said.contains(token), "the value was printed: {said}");
    assert!(!common::exists(
        &cluster,
        &["-n", "default", "secret", "leaked"]
    ));

    // Granted that one variable, the reference resolves.
    let applied = apply(&reaching_for_a_secret(r#"["secrets:env:CI_DEPLOY_TOKEN"]"#));
    assert!(applied.status.success(), "{}", common::text(&applied));
    let secret = common::kubectl_json(&cluster, &["-n", "default", "get", "secret", "leaked"]);
    let value = base64::Engine::decode(
        &base64::engine::general_purpose::STANDARD,
        secret["data"]["token"].as_str().unwrap(),
    )
    .unwrap();
    assert_eq!(value, token.as_bytes());
}

/// A project whose probe is granted `grants` and renders the test chart by
/// `probe` (its config).
fn helm_project(grants: &str, probe: &str) -> tempfile::TempDir {
    let dir = project(&format!(
        r#"spec:
  plugins:
    - name: probe
      source: file://{{probe}}
      grants: {grants}
  manifests:
    - name: chart
      type: probe
      namespace: web
      probe: {probe}
"#
    ));
    let chart =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/charts/hello");
    common::copy_dir(&chart, &dir.path().join("chart"));
    dir
}

#[test]
fn a_third_party_plugin_renders_with_helm_by_typed_request_and_free_arguments_need_their_own_grant()
{
    let Some(tools) = tazuna_tests::e2e::tools(&[tazuna_tests::assets::Tool::Helm]) else {
        return;
    };
    let helm = tools
        .path(tazuna_tests::assets::Tool::Helm)
        .display()
        .to_string();
    let env = [("TAZUNA_TOOL_HELM", helm.as_str())];
    let typed = "{ action: helm-template, release: demo, chart: /manifest/chart }";
    let free = "{ action: exec, tool: helm, args: [template, demo, /manifest/chart] }";

    // Granted `exec:helm`: the typed request renders the chart.
    let dir = helm_project(r#"["exec:helm"]"#, typed);
    let run = common::tazuna_with_env(dir.path(), &["build", "-o", "json"], &env);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let list: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let rendered = list["items"][0]["data"]["stdout"]
        .as_str()
        .unwrap_or_default();
    assert!(
        rendered.contains("kind: Deployment") && rendered.contains("name: demo-hello"),
        "{}",
        run.transcript()
    );

    // Free arguments to helm are refused with the same grant.
    let dir = helm_project(r#"["exec:helm"]"#, free);
    let run = common::tazuna_with_env(dir.path(), &["build"], &env);
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(
        run.stderr.contains("manifest `chart`: plugin `probe` failed: capability denied: plugin `probe` passed free arguments to `helm`")
            && run.stderr.contains("request and grant `exec-argv:helm`"),
        "{}",
        run.transcript()
    );

    // A typed value that reads as a flag is refused by the host.
    let dir = helm_project(
        r#"["exec:helm"]"#,
        r#"{ action: helm-template, release: "--post-renderer=/bin/sh", chart: /manifest/chart }"#,
    );
    let run = common::tazuna_with_env(dir.path(), &["build"], &env);
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(
        run.stderr.contains("plugin `probe` asked for `helm-template`: release `--post-renderer=/bin/sh` is not a release name"),
        "{}",
        run.transcript()
    );

    // Granted `exec-argv:helm` as well, free arguments pass (filtered and jailed).
    let dir = helm_project(r#"["exec:helm", "exec-argv:helm"]"#, free);
    let run = common::tazuna_with_env(dir.path(), &["build", "-o", "json"], &env);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(run.stdout.contains("demo-hello"), "{}", run.transcript());
}
