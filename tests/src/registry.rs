//! A real OCI registry for tests: Debian's `docker-registry` (CNCF distribution) on a
//! free 127.0.0.1 port, plain HTTP, with its storage in a temporary directory, and
//! optionally behind htpasswd basic auth. Dropping a [`Registry`] stops it and removes
//! its storage.

use std::fmt::Write as _;
use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::assets::which;
use crate::cluster::http_request;
use crate::kubeconfig::base64;
use crate::process::{self, Process};

/// Env var naming the registry binary (default: `docker-registry` on `PATH`).
pub const REGISTRY_ENV: &str = "TAZUNA_REGISTRY";

/// How long the registry may take to answer `/v2/`.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running registry.
#[derive(Debug)]
pub struct Registry {
    process: Option<Process>,
    watchdog: Option<Process>,
    port: u16,
    credentials: Option<(String, String)>,
    dir: tempfile::TempDir,
}

impl Registry {
    /// The registry binary: `TAZUNA_REGISTRY`, else `docker-registry` (Debian) or
    /// `registry` (upstream) on `PATH`.
    pub fn binary() -> Option<PathBuf> {
        if let Some(path) = std::env::var_os(REGISTRY_ENV).filter(|p| !p.is_empty()) {
            return Some(PathBuf::from(path));
        }
        which("docker-registry").or_else(|| which("registry"))
    }

    /// Starts a registry without authentication.
    pub fn start() -> anyhow::Result<Registry> {
        Registry::launch(None)
    }

    /// Starts a registry that requires HTTP basic auth with `user` and `password`
    /// (the htpasswd file is written with `htpasswd -B`, from apache2-utils).
    pub fn start_with_basic_auth(user: &str, password: &str) -> anyhow::Result<Registry> {
        Registry::launch(Some((user.to_owned(), password.to_owned())))
    }

    fn launch(credentials: Option<(String, String)>) -> anyhow::Result<Registry> {
        let binary = Registry::binary().context(
            "no OCI registry binary found\nhint: run `tests/controlplane/install.sh` (it \
             installs Debian's `docker-registry`) or set TAZUNA_REGISTRY",
        )?;
        let root = std::env::temp_dir().join("tazuna-tests");
        fs::create_dir_all(&root)?;
        let dir = tempfile::Builder::new()
            .prefix("registry-")
            .tempdir_in(&root)?;
        let port = free_port()?;

        let mut config = format!(
            "version: 0.1\n\
             log:\n  level: warn\n  accesslog:\n    disabled: true\n\
             storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
             http:\n  addr: 127.0.0.1:{port}\n",
            dir.path().join("data").display()
        );
        if let Some((user, password)) = &credentials {
            let htpasswd = dir.path().join("htpasswd");
            write_htpasswd(&htpasswd, user, password)?;
            let _ = write!(
                config,
                "auth:\n  htpasswd:\n    realm: tazuna-tests\n    path: {}\n",
                htpasswd.display()
            );
        }
        let config_path = dir.path().join("config.yml");
        fs::write(&config_path, config)?;

        let mut command = Command::new(&binary);
        command.arg("serve").arg(&config_path);
        let process = Process::spawn("registry", command, &dir.path().join("registry.log"))?;
        let watchdog = process::watchdog(std::process::id(), &[process.pid()], dir.path())?;
        let mut registry = Registry {
            process: Some(process),
            watchdog: Some(watchdog),
            port,
            credentials,
            dir,
        };
        registry.wait_ready()?;
        Ok(registry)
    }

    fn wait_ready(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        let auth = self.basic_auth_header();
        loop {
            if let Some(p) = self.process.as_mut() {
                p.check_running()?;
            }
            if let Ok((status, _)) = http_request(self.port, "/v2/", auth.as_deref())
                && status == 200
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                anyhow::bail!(
                    "the registry did not answer on {} after {}s; the end of its log:\n{}",
                    self.host(),
                    START_TIMEOUT.as_secs(),
                    self.log_tail(30)
                );
            }
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// `127.0.0.1:<port>`, the host part of references (`127.0.0.1:5000/repo:tag`).
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.host())
    }

    /// `(user, password)` when the registry requires basic auth.
    pub fn credentials(&self) -> Option<(&str, &str)> {
        self.credentials
            .as_ref()
            .map(|(u, p)| (u.as_str(), p.as_str()))
    }

    /// The status code of `GET <path>` on the registry, with the credentials when
    /// `authenticated` (for checks such as "anonymous pulls are refused").
    pub fn get_status(&self, path: &str, authenticated: bool) -> anyhow::Result<u16> {
        let auth = if authenticated {
            self.basic_auth_header()
        } else {
            None
        };
        Ok(http_request(self.port, path, auth.as_deref())?.0)
    }

    fn basic_auth_header(&self) -> Option<String> {
        self.credentials
            .as_ref()
            .map(|(u, p)| base64(format!("{u}:{p}").as_bytes()))
    }

    /// The registry's log file.
    pub fn log(&self) -> PathBuf {
        self.dir.path().join("registry.log")
    }

    /// The last `lines` lines of its log.
    pub fn log_tail(&self, lines: usize) -> String {
        process::tail(&self.log(), lines)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        if thread::panicking() {
            eprintln!(
                "tazuna-tests: registry {} is being torn down during a panic; its log:\n{}",
                self.host(),
                self.log_tail(40)
            );
        }
        if let Some(mut dog) = self.watchdog.take() {
            dog.kill();
        }
        if let Some(mut p) = self.process.take() {
            p.kill();
        }
    }
}

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn write_htpasswd(path: &Path, user: &str, password: &str) -> anyhow::Result<()> {
    let htpasswd = which("htpasswd").context(
        "`htpasswd` not found\nhint: run `tests/controlplane/install.sh` (it installs \
         apache2-utils)",
    )?;
    // -B: bcrypt, the only hash the registry accepts; -b: password from the arguments.
    let out = Command::new(htpasswd)
        .args(["-Bbn", user, password])
        .output()
        .context("running htpasswd")?;
    anyhow::ensure!(
        out.status.success(),
        "htpasswd failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    fs::write(path, &out.stdout).with_context(|| format!("writing `{}`", path.display()))
}
