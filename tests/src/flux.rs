//! Flux for tests and the benchmark: its real source-controller and
//! kustomize-controller (built from the Go module proxy, pinned in
//! versions.env), run as processes against a harness API server, as their
//! Deployments would run them in a cluster (kwok runs no containers). Their
//! CRDs are beside the binaries ([`Flux::crds`]); they must be established
//! before the controllers start. An OCI artifact in a local registry is the
//! source ([`push_artifact`]), so no Git server is needed. Dropping a
//! [`Flux`] stops both.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;

use anyhow::{Context, bail};

use crate::process::{self, Process};

/// Both controllers, running against one cluster.
#[derive(Debug)]
pub struct Flux {
    processes: Vec<Process>,
    watchdog: Option<Process>,
    /// The logs and source-controller's storage, removed on drop.
    _dir: tempfile::TempDir,
}

impl Flux {
    /// The CRD files of the controller `binary`, beside it.
    pub fn crds(binary: &Path) -> Vec<PathBuf> {
        let dir = binary.parent().unwrap_or(Path::new(".")).join("crds");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
        files.sort();
        files
    }

    /// Starts source-controller (`source`) and kustomize-controller
    /// (`kustomize`), and helm-controller when given, against the cluster
    /// of `kubeconfig` (its current context), with `namespace` as their
    /// runtime namespace. A Kustomization whose dependency is not ready is
    /// retried after 1 s (Flux's default is 30 s).
    pub fn start(
        source: &Path,
        kustomize: &Path,
        helm: Option<&Path>,
        kubeconfig: &Path,
        namespace: &str,
    ) -> anyhow::Result<Flux> {
        let root = std::env::temp_dir().join("tazuna-tests");
        std::fs::create_dir_all(&root)?;
        let dir = tempfile::Builder::new().prefix("flux-").tempdir_in(&root)?;
        let storage = dir.path().join("storage");
        std::fs::create_dir_all(&storage)?;
        let port = free_port()?;
        let common = [
            "--enable-leader-election=false",
            "--metrics-addr=127.0.0.1:0",
            "--health-addr=127.0.0.1:0",
            "--log-level=error",
            "--events-addr=",
        ];
        let spawn = |name: &str, binary: &Path, extra: Vec<String>| -> anyhow::Result<Process> {
            let mut command = Command::new(binary);
            command
                .args(common)
                .args(extra)
                // controller-runtime reads KUBECONFIG; the controllers have
                // no --kubeconfig flag.
                .env("KUBECONFIG", kubeconfig)
                .env("RUNTIME_NAMESPACE", namespace)
                .env("HOME", dir.path());
            Process::spawn(name, command, &dir.path().join(format!("{name}.log")))
                .with_context(|| format!("starting {}", binary.display()))
        };
        let source_controller = spawn(
            "source-controller",
            source,
            vec![
                format!("--storage-path={}", storage.display()),
                format!("--storage-addr=127.0.0.1:{port}"),
                format!("--storage-adv-addr=127.0.0.1:{port}"),
            ],
        )?;
        let kustomize_controller = spawn(
            "kustomize-controller",
            kustomize,
            vec!["--requeue-dependency=1s".to_owned()],
        )?;
        let mut processes = vec![source_controller, kustomize_controller];
        if let Some(helm) = helm {
            processes.push(spawn("helm-controller", helm, Vec::new())?);
        }
        let pids: Vec<u32> = processes.iter().map(Process::pid).collect();
        let watchdog = process::watchdog(std::process::id(), &pids, dir.path())?;
        Ok(Flux {
            processes,
            watchdog: Some(watchdog),
            _dir: dir,
        })
    }

    /// The controllers' process IDs.
    pub fn pids(&self) -> Vec<u32> {
        self.processes.iter().map(Process::pid).collect()
    }

    /// An error if a controller exited (a crash would look like a hang).
    pub fn check_alive(&mut self) -> anyhow::Result<()> {
        for process in &mut self.processes {
            process.check_running()?;
        }
        Ok(())
    }

    /// The last `lines` lines of each controller's log.
    pub fn log_tails(&self, lines: usize) -> String {
        self.processes
            .iter()
            .map(|p| format!("--- {} ---\n{}", p.name(), process::tail(p.log(), lines)))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for Flux {
    fn drop(&mut self) {
        if thread::panicking() {
            eprintln!(
                "tazuna-tests: Flux is being torn down during a panic; its logs:\n{}",
                self.log_tails(30)
            );
        }
        if let Some(mut dog) = self.watchdog.take() {
            dog.kill();
        }
        for process in &mut self.processes {
            process.kill();
        }
    }
}

/// Packs the files of `content` as a Flux OCI artifact (a gzipped tarball
/// with Flux's media types) and pushes it with `oras` to
/// `<registry>/<repository>:<tag>` over plain HTTP; returns its
/// `oci://` URL without the tag.
pub fn push_artifact(
    oras: &Path,
    registry: &str,
    repository: &str,
    tag: &str,
    content: &Path,
) -> anyhow::Result<String> {
    let work = tempfile::tempdir()?;
    let tarball = work.path().join("content.tar.gz");
    let tar = Command::new("tar")
        .arg("-czf")
        .arg(&tarball)
        .arg("-C")
        .arg(content)
        .arg(".")
        .output()?;
    if !tar.status.success() {
        bail!("tar: {}", String::from_utf8_lossy(&tar.stderr));
    }
    std::fs::write(work.path().join("config.json"), "{}")?;
    let reference = format!("{registry}/{repository}:{tag}");
    let out = Command::new(oras)
        .current_dir(work.path())
        .args(["push", "--plain-http", &reference])
        .arg("--config=config.json:application/vnd.cncf.flux.config.v1+json")
        .arg("content.tar.gz:application/vnd.cncf.flux.content.v1.tar+gzip")
        .env("HOME", work.path())
        .stdout(Stdio::null())
        .output()?;
    if !out.status.success() {
        bail!("oras push: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(format!("oci://{registry}/{repository}"))
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
