//! Running the real `tazuna` binary the way a user does, and snapshot filters
//! for what differs between machines (temp paths, digests, timings).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// What one run printed.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Exit code, stdout and stderr in one text, for snapshots.
    pub fn transcript(&self) -> String {
        format!(
            "exit code: {}\n----- stdout -----\n{}----- stderr -----\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// A component built by `cargo xtask build-plugins`.
pub fn plugin(name: &str) -> PathBuf {
    let path = root().join("target/plugins").join(format!("{name}.wasm"));
    assert!(
        path.is_file(),
        "{} is missing; run `cargo xtask build-plugins`",
        path.display()
    );
    path
}

/// Run `tazuna args...` in `dir`, with colour off and a private cache.
pub fn tazuna(dir: &Path, args: &[&str]) -> Run {
    tazuna_with_env(dir, args, &[])
}

/// Like [`tazuna`], with extra environment variables.
pub fn tazuna_with_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let output = tazuna_command(dir, args, env).output().expect("run tazuna");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// [`tazuna_with_env`] that must end within `bound`: a guard against a hang
/// (a test of a budget would otherwise wait for as long as the hang lasts),
/// not a measure of speed.
pub fn tazuna_within(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    bound: std::time::Duration,
) -> Run {
    use std::io::Read;
    let mut child = tazuna_command(dir, args, env)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run tazuna");
    let drain = |mut stream: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stream.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for tazuna") {
            break status;
        }
        if started.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`tazuna {}` did not end within {bound:?}; stderr so far: {}",
                args.join(" "),
                stderr.join().unwrap_or_default()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Run {
        code: status.code().unwrap_or(-1),
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

fn tazuna_command(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let cache = dir.join(".tazuna-cache");
    let mut command = Command::new(env!("CARGO_BIN_EXE_tazuna"));
    command
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("TAZUNA_FILE")
        .env_remove("TAZUNA_ENVIRONMENT")
        .env_remove("TAZUNA_LOG")
        .env("TAZUNA_CACHE_DIR", &cache);
    for (key, value) in env {
        command.env(key, value);
    }
    command
}

/// A fresh directory holding `tazuna.yaml` with `content`; `{probe}` and
/// `{example}` in it are replaced by the test plugins' paths.
pub fn project(content: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let content = content
        .replace("{probe}", &plugin("probe").display().to_string())
        .replace("{example}", &plugin("example").display().to_string());
    std::fs::write(dir.path().join("tazuna.yaml"), content).expect("write tazuna.yaml");
    dir
}

/// insta settings that hide what differs between machines.
pub fn filters(dir: &Path) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    let dir = dir.display().to_string();
    settings.add_filter(&regex_escape(&dir), "[PROJECT]");
    settings.add_filter(&regex_escape(&root().display().to_string()), "[ROOT]");
    settings.add_filter(r"sha256:[0-9a-f]{64}", "sha256:[DIGEST]");
    settings.add_filter(r"/tmp/tazuna-scratch-[A-Za-z0-9]+", "[SCRATCH]");
    settings.add_filter(r"\d+(\.\d+)?(ms|µs|s)\b", "[TIME]");
    settings
}

fn regex_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Run `command`, panicking with the command if it cannot start.
pub fn output(command: &mut Command) -> Output {
    command
        .output()
        .unwrap_or_else(|e| panic!("running `{command:?}`: {e}"))
}

/// Status, stdout and stderr of `out`, for assertion messages.
pub fn text(out: &Output) -> String {
    format!(
        "status {}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Run `command` and require success.
pub fn succeed(command: &mut Command) -> Output {
    let out = output(command);
    assert!(out.status.success(), "`{command:?}` failed: {}", text(&out));
    out
}

/// Copy the tree `from` into `to` (created if needed), leaving out `tazuna.lock`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else if entry.file_name() != "tazuna.lock" {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Replace the first `from` in the file at `path` with `to`; `from` must be there.
pub fn edit(path: &Path, from: &str, to: &str) {
    let before = std::fs::read_to_string(path).unwrap();
    assert!(before.contains(from), "`{from}` not in {}", path.display());
    std::fs::write(path, before.replacen(from, to, 1)).unwrap();
}

/// Write `content` to `path` under `dir`, creating directories.
pub fn write(dir: &Path, path: &str, content: &str) {
    let path = dir.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// Point `command` at `cluster`: its kubeconfig and context, never the
/// user's `KUBECONFIG`.
pub fn on_cluster<'a>(
    command: &'a mut Command,
    cluster: &tazuna_tests::e2e::TestCluster,
) -> &'a mut Command {
    command
        .env_remove("KUBECONFIG")
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig())
        .arg("--context")
        .arg(cluster.context())
}

/// The real `tazuna` in `dir`, pointed at `cluster`, with colour off and
/// none of the user's Tazuna environment.
pub fn tazuna_on(cluster: &tazuna_tests::e2e::TestCluster, dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tazuna"));
    command
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("TAZUNA_FILE")
        .env_remove("TAZUNA_ENVIRONMENT")
        .env_remove("TAZUNA_LOG");
    // A developer's collector gets no test traces.
    for variable in [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_SERVICE_NAME",
    ] {
        command.env_remove(variable);
    }
    on_cluster(&mut command, cluster);
    command
}

/// `kubectl <args> -o json` on `cluster`, parsed.
pub fn kubectl_json(cluster: &tazuna_tests::e2e::TestCluster, args: &[&str]) -> serde_json::Value {
    let out = succeed(cluster.kubectl().args(args).args(["-o", "json"]));
    serde_json::from_slice(&out.stdout).expect("kubectl prints JSON")
}

/// Whether `kubectl get <args>` finds the object on `cluster`.
pub fn exists(cluster: &tazuna_tests::e2e::TestCluster, args: &[&str]) -> bool {
    let out = output(cluster.kubectl().args(["get"]).args(args).args([
        "--ignore-not-found",
        "-o",
        "name",
    ]));
    assert!(out.status.success(), "{}", text(&out));
    !String::from_utf8_lossy(&out.stdout).trim().is_empty()
}

/// A namespaced CRD `<plural>.example.tazuna.dev` of kind `kind` that keeps
/// any field.
pub fn crd(plural: &str, kind: &str) -> String {
    let singular = kind.to_lowercase();
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.example.tazuna.dev
spec:
  group: example.tazuna.dev
  scope: Namespaced
  names: {{plural: {plural}, singular: {singular}, kind: {kind}}}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
"
    )
}

/// A static HTTP server over the files in a directory (Python's
/// `http.server`), optionally behind a basic-auth login: a classic chart
/// repository is an `index.yaml` and chart archives, which any web server
/// serves. Killed on drop.
pub struct FileServer {
    child: std::process::Child,
    pub url: String,
}

impl FileServer {
    /// Serve `dir`; with `login`, every request needs that user and password.
    /// `None` when python3 is missing or does not start.
    pub fn serve(dir: &Path, login: Option<(&str, &str)>) -> Option<Self> {
        use base64::Engine as _;
        let python = tazuna_tests::assets::which("python3")?;
        let expected = login
            .map(|(user, password)| {
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
            })
            .unwrap_or_default();
        let script = r#"
import functools, http.server, sys
expected = sys.argv[2]
class Handler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        if expected and self.headers.get("Authorization") != "Basic " + expected:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="files"')
            self.end_headers()
            return
        super().do_GET()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=sys.argv[1]))
print(server.server_address[1], flush=True)
server.serve_forever()
"#;
        let (child, url) = python_server(
            &python,
            script,
            &[dir.as_os_str(), std::ffi::OsStr::new(&expected)],
        )?;
        Some(Self { child, url })
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A git server over HTTP on loopback: git's own smart-HTTP backend (`git
/// http-backend`, run per request by a small python3 server) over the bare
/// repositories in `root`, as a git forge serves them. Every request's method
/// and path are appended to [`GitServer::requests`]'s log. Killed on drop.
pub struct GitServer {
    child: std::process::Child,
    log: PathBuf,
    pub url: String,
}

impl GitServer {
    /// Serve the bare repositories in `root` (`<root>/<name>.git`). `None`
    /// when python3 or git is missing.
    pub fn serve(root: &Path) -> Option<Self> {
        let python = tazuna_tests::assets::which("python3")?;
        let git = tazuna_tests::assets::which("git")?;
        let script = r#"
import http.server, os, subprocess, sys
root, log, git = sys.argv[1], sys.argv[2], sys.argv[3]
class Handler(http.server.BaseHTTPRequestHandler):
    def serve_git(self):
        with open(log, "a") as out:
            out.write(self.command + " " + self.path + "\n")
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        env = {"GIT_PROJECT_ROOT": root, "GIT_HTTP_EXPORT_ALL": "1", "REQUEST_METHOD": self.command,
               "PATH_INFO": path, "QUERY_STRING": query, "REMOTE_ADDR": "127.0.0.1",
               "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
               "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
               "GIT_PROTOCOL": self.headers.get("Git-Protocol", "")}
        out = subprocess.run([git, "http-backend"], input=body, env=env, capture_output=True).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode().split("\r\n"):
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.split()[0])
            elif key:
                headers.append((key, value.strip()))
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
    do_GET = do_POST = serve_git
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;
        let log = root.join("requests.log");
        std::fs::write(&log, "").ok()?;
        let (child, url) = python_server(
            &python,
            script,
            &[root.as_os_str(), log.as_os_str(), git.as_os_str()],
        )?;
        Some(Self { child, log, url })
    }

    /// The requests served so far, one `METHOD /path?query` per line.
    pub fn requests(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for GitServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `script` (a server on a loopback port it prints first) with
/// `python`; the child and its `http://127.0.0.1:<port>`.
fn python_server(
    python: &Path,
    script: &str,
    args: &[&std::ffi::OsStr],
) -> Option<(std::process::Child, String)> {
    use std::io::BufRead as _;
    let mut child = Command::new(python)
        .arg("-c")
        .arg(script)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take()?)
        .read_line(&mut line)
        .ok()?;
    let port: u16 = line.trim().parse().ok()?;
    Some((child, format!("http://127.0.0.1:{port}")))
}
