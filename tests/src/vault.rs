//! A real Vault for tests: `vault server -dev` (built from the Go module proxy, pinned as
//! `VAULT_VERSION` in versions.env), with TLS on a free 127.0.0.1 port and its CA in a file
//! (`-dev-tls`), and a root token only the harness knows. Its own CLI is the tests' independent
//! Vault client ([`Vault::cli`]). Dropping a [`Vault`] stops it.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use crate::process::{self, Process};

/// How long the Vault may take to unseal.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A running dev Vault.
#[derive(Debug)]
pub struct Vault {
    process: Option<Process>,
    watchdog: Option<Process>,
    binary: PathBuf,
    port: u16,
    root_token: String,
    dir: tempfile::TempDir,
}

impl Vault {
    /// Starts a dev Vault from `binary`.
    pub fn start(binary: &Path) -> anyhow::Result<Vault> {
        let root = std::env::temp_dir().join("tazuna-tests");
        std::fs::create_dir_all(&root)?;
        let dir = tempfile::Builder::new()
            .prefix("vault-")
            .tempdir_in(&root)?;
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let root_token = format!("tazuna-tests-root-{:016x}", rand_u64());
        let mut command = Command::new(binary);
        command
            .args(["server", "-dev", "-dev-tls", "-dev-no-store-token"])
            .arg(format!("-dev-listen-address=127.0.0.1:{port}"))
            .arg(format!("-dev-root-token-id={root_token}"))
            .arg(format!("-dev-tls-cert-dir={}", dir.path().display()))
            .env("HOME", dir.path())
            .env_remove("VAULT_TOKEN")
            .env_remove("VAULT_ADDR");
        let process = Process::spawn("vault", command, &dir.path().join("vault.log"))?;
        let watchdog = process::watchdog(std::process::id(), &[process.pid()], dir.path())?;
        let mut vault = Vault {
            process: Some(process),
            watchdog: Some(watchdog),
            binary: binary.to_owned(),
            port,
            root_token,
            dir,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(p) = vault.process.as_mut() {
                p.check_running()?;
            }
            if vault.ca_file().is_file() {
                let status = vault.command(&["status", "-format=json"]).output()?;
                if status.status.success() {
                    return Ok(vault);
                }
            }
            if Instant::now() > deadline {
                anyhow::bail!(
                    "vault did not unseal on 127.0.0.1:{port} after {}s; the end of its log:\n{}",
                    START_TIMEOUT.as_secs(),
                    vault.log_tail(30)
                );
            }
            thread::sleep(Duration::from_millis(200));
        }
    }

    /// `https://127.0.0.1:<port>`.
    pub fn address(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// The PEM of the CA that signed its certificate.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("vault-ca.pem")
    }

    /// The root token, which the harness's own CLI calls use.
    pub fn root_token(&self) -> &str {
        &self.root_token
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.binary);
        command
            .args(args)
            .env("VAULT_ADDR", self.address())
            .env("VAULT_CACERT", self.ca_file())
            .env("VAULT_TOKEN", &self.root_token)
            .env("HOME", self.dir.path());
        command
    }

    /// Run the Vault CLI as root with `args`; its stdout. Panics when it fails.
    pub fn cli(&self, args: &[&str]) -> String {
        self.cli_with_input(args, None)
    }

    /// [`Self::cli`] with `input` on its stdin (`vault policy write name -`).
    pub fn cli_with_input(&self, args: &[&str], input: Option<&str>) -> String {
        use std::io::Write as _;
        let mut command = self.command(args);
        command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = command.spawn().expect("the vault CLI runs");
        if let Some(input) = input {
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(input.as_bytes())
                .expect("stdin is written");
        }
        drop(child.stdin.take());
        let output = child.wait_with_output().expect("the vault CLI ends");
        assert!(
            output.status.success(),
            "`vault {}` failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// How many requests the Vault's audit log holds whose path starts with `prefix`; the
    /// audit device must be on ([`Self::enable_audit`]).
    pub fn audited(&self, prefix: &str) -> usize {
        std::fs::read_to_string(self.audit_log())
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|entry| entry["type"] == "request")
            .filter(|entry| {
                entry["request"]["path"]
                    .as_str()
                    .is_some_and(|path| path.starts_with(prefix))
            })
            .count()
    }

    fn audit_log(&self) -> PathBuf {
        self.dir.path().join("audit.log")
    }

    /// Turn on a file audit device, which [`Self::audited`] reads.
    pub fn enable_audit(&self) {
        let path = format!("file_path={}", self.audit_log().display());
        self.cli(&["audit", "enable", "file", &path]);
    }

    /// The last `lines` lines of its log.
    pub fn log_tail(&self, lines: usize) -> String {
        process::tail(&self.dir.path().join("vault.log"), lines)
    }
}

/// A number that differs between runs, for the root token.
fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish()
}

impl Drop for Vault {
    fn drop(&mut self) {
        if thread::panicking() {
            eprintln!(
                "tazuna-tests: vault on 127.0.0.1:{} is being torn down during a panic; its log:\n{}",
                self.port,
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
