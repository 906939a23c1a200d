//! External Secrets Operator for tests: its real controller (built from the Go module proxy,
//! pinned as `EXTERNAL_SECRETS_VERSION` in versions.env), run as a process against a harness API
//! server, as its Deployment would run it in a cluster (kwok runs no containers). Its CRDs are
//! beside the binary ([`ExternalSecrets::crds`]); a test installs them before it starts the
//! controller. Dropping an [`ExternalSecrets`] stops it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;

use crate::process::{self, Process};

/// A running ESO controller.
#[derive(Debug)]
pub struct ExternalSecrets {
    process: Option<Process>,
    watchdog: Option<Process>,
    dir: tempfile::TempDir,
}

impl ExternalSecrets {
    /// The directory of its CRDs, beside `binary`.
    pub fn crds(binary: &Path) -> PathBuf {
        binary.parent().unwrap_or(Path::new(".")).join("crds")
    }

    /// Starts the controller from `binary` against the cluster of `kubeconfig`, with `env` added
    /// (`AWS_SECRETSMANAGER_ENDPOINT`, for a store that is not AWS's).
    pub fn start(
        binary: &Path,
        kubeconfig: &Path,
        env: &[(&str, String)],
    ) -> anyhow::Result<ExternalSecrets> {
        let root = std::env::temp_dir().join("tazuna-tests");
        std::fs::create_dir_all(&root)?;
        let dir = tempfile::Builder::new().prefix("eso-").tempdir_in(&root)?;
        let mut command = Command::new(binary);
        command
            .args([
                "--metrics-addr=127.0.0.1:0",
                "--enable-leader-election=false",
                "--loglevel=info",
                "--zap-time-encoding=iso8601",
            ])
            .env("KUBECONFIG", kubeconfig)
            .env("HOME", dir.path());
        for (name, value) in env {
            command.env(name, value);
        }
        let process = Process::spawn("external-secrets", command, &dir.path().join("eso.log"))?;
        let watchdog = process::watchdog(std::process::id(), &[process.pid()], dir.path())?;
        Ok(ExternalSecrets {
            process: Some(process),
            watchdog: Some(watchdog),
            dir,
        })
    }

    /// The last `lines` lines of its log.
    pub fn log_tail(&self, lines: usize) -> String {
        process::tail(&self.dir.path().join("eso.log"), lines)
    }
}

impl Drop for ExternalSecrets {
    fn drop(&mut self) {
        if thread::panicking() {
            eprintln!(
                "tazuna-tests: the External Secrets controller is being torn down during a panic; its log:\n{}",
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
