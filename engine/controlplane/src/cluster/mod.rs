//! One real Kubernetes control plane on loopback: etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler and kwok (which plays kubelet for fake
//! Nodes), each on a free 127.0.0.1 port, with fresh certificates, logs in files and a
//! kubeconfig whose context is named after the cluster.
//!
//! A [`Cluster`] owns its processes and its directory: dropping it (also while a failing
//! test unwinds) stops everything and removes the data, and prints the tail of every
//! log first if the thread is panicking. [`Cluster::detach`] instead leaves it running
//! for `cargo xtask cluster up`; [`ClusterState`] finds it again and stops it.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::assets::{Assets, Tool};
use crate::kubeconfig;
use crate::pki;
use crate::process::{self, Process};

mod audit;
mod http;
mod kwok;
mod state;

use audit::AUDIT_POLICY;
pub use audit::AuditEvent;
pub(crate) use http::http_get;
pub use http::http_request;
use kwok::{kwok_config_yaml, nodes_manifest, ready_nodes};
pub use state::{ClusterState, ProcessState};

/// How long etcd may take to answer `/health`.
const ETCD_TIMEOUT: Duration = Duration::from_secs(60);
/// How long kube-apiserver may take to answer `/readyz` with `ok`.
const APISERVER_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the other components may take until the cluster is ready for tests.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(120);

/// The name of the state file in a detached cluster's directory.
const STATE_FILE: &str = "state.json";

/// Options of a cluster to start.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    name: String,
    nodes: usize,
    dir: Option<PathBuf>,
    assets: Assets,
}

impl ClusterConfig {
    /// A cluster named `name` (also its context name) with one fake Node, in a fresh
    /// temporary directory, with binaries from [`Assets::locate`].
    pub fn new(name: &str) -> ClusterConfig {
        ClusterConfig {
            name: name.to_owned(),
            nodes: 1,
            dir: None,
            assets: Assets::locate(),
        }
    }

    /// The number of fake Nodes (`kwok-node-0`, `kwok-node-1`, ...).
    pub fn nodes(mut self, nodes: usize) -> ClusterConfig {
        self.nodes = nodes;
        self
    }

    /// Keeps the cluster's data, logs and certificates in `dir` (created; it must not
    /// hold a running cluster) instead of a temporary directory.
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> ClusterConfig {
        self.dir = Some(dir.into());
        self
    }

    /// Where to find the binaries.
    pub fn assets(mut self, assets: Assets) -> ClusterConfig {
        self.assets = assets;
        self
    }

    /// Starts the control plane and waits until it is ready for tests: `/readyz` is
    /// `ok`, every Node is Ready without taints, and the `default` ServiceAccount and
    /// the `kube-root-ca.crt` ConfigMap exist.
    pub fn start(self) -> anyhow::Result<Cluster> {
        validate_name(&self.name)?;
        self.assets.require(&Tool::CONTROL_PLANE)?;
        let stages = self.assets.kwok_stages();
        if !stages.is_dir() {
            return Err(crate::StartError::MissingStages(stages).into());
        }

        let (dir, temp) = match &self.dir {
            Some(dir) => {
                if let Ok(state) = ClusterState::load(dir)
                    && state.is_running()
                {
                    return Err(crate::StartError::AlreadyRunning {
                        name: state.name,
                        dir: dir.clone(),
                    }
                    .into());
                }
                if dir.exists() {
                    fs::remove_dir_all(dir)
                        .with_context(|| format!("removing stale `{}`", dir.display()))?;
                }
                fs::create_dir_all(dir).with_context(|| format!("creating `{}`", dir.display()))?;
                (dir.clone(), None)
            }
            None => {
                let root = std::env::temp_dir().join("tazuna-tests");
                fs::create_dir_all(&root)?;
                let temp = tempfile::Builder::new()
                    .prefix(&format!("{}-", self.name))
                    .tempdir_in(&root)?;
                (temp.path().to_owned(), Some(temp))
            }
        };

        let pki = pki::generate(&dir.join("pki"))?;
        let ports = Ports::allocate()?;
        let server = format!("https://127.0.0.1:{}", ports.apiserver);
        let entry = kubeconfig::ClusterEntry {
            name: self.name.clone(),
            server: server.clone(),
            ca_pem: fs::read_to_string(&pki.ca_cert)?,
            client_cert_pem: fs::read_to_string(&pki.admin_cert)?,
            client_key_pem: fs::read_to_string(&pki.admin_key)?,
        };
        let kubeconfig = dir.join("kubeconfig");
        fs::write(&kubeconfig, entry.to_yaml())?;

        let mut cluster = Cluster {
            name: self.name.clone(),
            dir: dir.clone(),
            temp,
            ports,
            kubeconfig,
            kubectl: self.assets.kubectl(),
            entry,
            components: Vec::new(),
            watchdog: None,
            assets: self.assets.clone(),
            remove_dir: true,
        };
        cluster
            .boot(&pki, &stages, self.nodes)
            .with_context(|| format!("starting cluster `{}`", self.name))?;
        let pids: Vec<u32> = cluster.components.iter().map(Process::pid).collect();
        cluster.watchdog = Some(process::watchdog(std::process::id(), &pids, &dir)?);
        Ok(cluster)
    }
}

/// A running control plane; dropping it stops it and removes its data.
#[derive(Debug)]
pub struct Cluster {
    name: String,
    dir: PathBuf,
    temp: Option<tempfile::TempDir>,
    ports: Ports,
    kubeconfig: PathBuf,
    kubectl: PathBuf,
    entry: kubeconfig::ClusterEntry,
    components: Vec<Process>,
    watchdog: Option<Process>,
    assets: Assets,
    remove_dir: bool,
}

/// The loopback ports of one cluster.
#[derive(Clone, Copy, Debug)]
pub struct Ports {
    /// etcd's client port (plain HTTP).
    pub etcd_client: u16,
    /// etcd's peer port.
    pub etcd_peer: u16,
    /// kube-apiserver's secure port.
    pub apiserver: u16,
    /// kube-controller-manager's secure port (`/healthz`).
    pub controller_manager: u16,
    /// kube-scheduler's secure port (`/healthz`).
    pub scheduler: u16,
    /// kwok's server port (`/healthz`).
    pub kwok: u16,
}

/// Ports handed out by this process and not yet known to be bound, so that clusters
/// started at the same time never get the same one.
static HANDED_OUT: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

impl Ports {
    fn allocate() -> anyhow::Result<Ports> {
        let mut handed = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
        let handed = handed.get_or_insert_with(HashSet::new);
        // Hold every listener until all ports are chosen, so the six are distinct.
        let mut listeners = Vec::new();
        let mut ports = Vec::new();
        while ports.len() < 6 {
            let listener = TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
            let port = listener.local_addr()?.port();
            if handed.insert(port) {
                ports.push(port);
            }
            listeners.push(listener);
        }
        Ok(Ports {
            etcd_client: ports[0],
            etcd_peer: ports[1],
            apiserver: ports[2],
            controller_manager: ports[3],
            scheduler: ports[4],
            kwok: ports[5],
        })
    }
}

impl Cluster {
    /// Starts a cluster named `name` with one fake Node in a temporary directory.
    pub fn start(name: &str) -> anyhow::Result<Cluster> {
        ClusterConfig::new(name).start()
    }

    /// The cluster's name, which is also the name of its context.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The context to use in [`Cluster::kubeconfig`].
    pub fn context(&self) -> &str {
        &self.name
    }

    /// A kubeconfig file holding only this cluster, as the current context.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The entry to merge into another kubeconfig with [`kubeconfig::merge_into`].
    pub fn kubeconfig_entry(&self) -> &kubeconfig::ClusterEntry {
        &self.entry
    }

    /// `https://127.0.0.1:<port>`.
    pub fn server(&self) -> &str {
        &self.entry.server
    }

    /// The loopback ports in use.
    pub fn ports(&self) -> Ports {
        self.ports
    }

    /// The cluster's directory (data, logs, certificates).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The directory of the component logs (`<component>.log`).
    pub fn log_dir(&self) -> PathBuf {
        self.dir.join("logs")
    }

    /// The API server's audit log: one JSON event per request.
    pub fn audit_log(&self) -> PathBuf {
        self.log_dir().join("audit.log")
    }

    /// The requests the API server has logged so far whose user agent starts
    /// with `user_agent`, in order.
    pub fn requests_from(&self, user_agent: &str) -> Vec<AuditEvent> {
        // Events are written as responses complete; give the last ones a moment.
        std::thread::sleep(std::time::Duration::from_millis(300));
        let text = std::fs::read_to_string(self.audit_log()).unwrap_or_default();
        text.lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|e| {
                e["userAgent"]
                    .as_str()
                    .is_some_and(|a| a.starts_with(user_agent))
            })
            .map(|e| AuditEvent {
                verb: e["verb"].as_str().unwrap_or_default().to_owned(),
                resource: e["objectRef"]["resource"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                namespace: e["objectRef"]["namespace"].as_str().map(str::to_owned),
                name: e["objectRef"]["name"].as_str().map(str::to_owned),
                dry_run: e["requestURI"]
                    .as_str()
                    .is_some_and(|u| u.contains("dryRun=")),
                at: e["requestReceivedTimestamp"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                done: e["stageTimestamp"].as_str().unwrap_or_default().to_owned(),
                code: e["responseStatus"]["code"]
                    .as_u64()
                    .and_then(|c| u16::try_from(c).ok()),
                user: e["user"]["username"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            })
            .collect()
    }

    /// Where the binaries came from.
    pub fn assets(&self) -> &Assets {
        &self.assets
    }

    /// A `kubectl` command aimed at this cluster (`--kubeconfig` and `--context` set).
    pub fn kubectl(&self) -> Command {
        let mut command = Command::new(&self.kubectl);
        command
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--context")
            .arg(&self.name);
        command
    }

    /// The running components as `(name, pid)`.
    pub fn processes(&self) -> Vec<(String, u32)> {
        self.components
            .iter()
            .map(|p| (p.name().to_owned(), p.pid()))
            .collect()
    }

    /// The resident set size of each component in bytes, read from `/proc`.
    pub fn rss(&self) -> Vec<(String, u64)> {
        self.components
            .iter()
            .map(|p| {
                (
                    p.name().to_owned(),
                    process::rss_bytes(p.pid()).unwrap_or(0),
                )
            })
            .collect()
    }

    /// The last `lines` lines of every component log, one section per component.
    pub fn log_tails(&self, lines: usize) -> String {
        let mut out = String::new();
        for p in &self.components {
            let _ = writeln!(
                out,
                "----- {} ({}) -----\n{}",
                p.name(),
                p.log().display(),
                process::tail(p.log(), lines)
            );
        }
        out
    }

    /// Stops every component and removes the cluster's directory.
    pub fn stop(self) {
        drop(self);
    }

    /// Leaves the cluster running after this process exits and writes its state file,
    /// which [`ClusterState::load`] reads back (for `cargo xtask cluster down`).
    pub fn detach(mut self) -> anyhow::Result<ClusterState> {
        anyhow::ensure!(
            self.temp.is_none(),
            "cluster `{}` lives in a temporary directory; give it a directory with \
             `ClusterConfig::dir` to detach it",
            self.name
        );
        let state = ClusterState {
            name: self.name.clone(),
            server: self.entry.server.clone(),
            dir: self.dir.clone(),
            kubeconfig: self.kubeconfig.clone(),
            processes: self
                .components
                .iter()
                .map(|p| ProcessState {
                    name: p.name().to_owned(),
                    pid: p.pid(),
                    exe: self.exe_of(p.name()),
                })
                .collect(),
        };
        state.save()?;
        if let Some(mut dog) = self.watchdog.take() {
            dog.kill();
        }
        for p in std::mem::take(&mut self.components) {
            p.detach();
        }
        self.remove_dir = false;
        Ok(state)
    }

    fn exe_of(&self, component: &str) -> PathBuf {
        let tool = match component {
            "etcd" => Tool::Etcd,
            "kube-apiserver" => Tool::KubeApiserver,
            "kube-controller-manager" => Tool::KubeControllerManager,
            "kube-scheduler" => Tool::KubeScheduler,
            _ => Tool::Kwok,
        };
        self.assets.path(tool)
    }

    /// Starts kube-apiserver (as component `name`) and waits until `/readyz`.
    fn start_apiserver(&mut self, pki: &pki::PkiFiles, name: &str) -> anyhow::Result<()> {
        let p = self.ports;
        let dir = self.dir.clone();
        let logs = self.log_dir();
        let path = |p: &Path| p.display().to_string();
        let client = format!("http://127.0.0.1:{}", p.etcd_client);
        // An audit log of every request, so tests and benchmarks can count
        // what a client sent by its user agent, independently of the client.
        let policy = dir.join("audit-policy.yaml");
        std::fs::write(&policy, AUDIT_POLICY).context("writing the audit policy")?;
        let mut apiserver = Command::new(self.assets.path(Tool::KubeApiserver));
        apiserver
            .arg(format!("--audit-policy-file={}", path(&policy)))
            .arg(format!(
                "--audit-log-path={}",
                path(&logs.join("audit.log"))
            ))
            .arg("--audit-log-format=json")
            .arg("--audit-log-mode=blocking")
            .arg("--audit-log-maxsize=64")
            .arg("--audit-log-maxbackup=1")
            .arg(format!("--etcd-servers={client}"))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--secure-port={}", p.apiserver))
            .arg(format!("--tls-cert-file={}", path(&pki.serving_cert)))
            .arg(format!("--tls-private-key-file={}", path(&pki.serving_key)))
            .arg(format!("--client-ca-file={}", path(&pki.ca_cert)))
            .arg("--service-account-issuer=https://kubernetes.default.svc.cluster.local")
            .arg(format!("--service-account-key-file={}", path(&pki.sa_pub)))
            .arg(format!(
                "--service-account-signing-key-file={}",
                path(&pki.sa_key)
            ))
            .arg("--service-cluster-ip-range=10.96.0.0/16")
            .arg("--authorization-mode=RBAC")
            .arg("--allow-privileged=true")
            // The `kubernetes` Endpoints would need a non-loopback advertise address.
            .arg("--endpoint-reconciler-type=none")
            .arg("--profiling=false");
        self.spawn(name, apiserver, &logs)?;
        self.wait(name, APISERVER_TIMEOUT, |c| {
            let out = c.kubectl().args(["get", "--raw", "/readyz"]).output()?;
            Ok(out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok")
        })?;
        Ok(())
    }

    /// Kills kube-apiserver, as a crash would, leaving etcd and the other
    /// components running. Requests fail until [`Cluster::start_apiserver_again`].
    pub fn kill_apiserver(&mut self) {
        for process in self
            .components
            .iter_mut()
            .filter(|p| p.name().starts_with("kube-apiserver"))
        {
            process.kill();
        }
        self.components
            .retain(|p| !p.name().starts_with("kube-apiserver"));
    }

    /// Starts kube-apiserver again on the same port, certificates and etcd,
    /// and waits until it is ready. Its log is `kube-apiserver-restarted.log`.
    pub fn start_apiserver_again(&mut self) -> anyhow::Result<()> {
        let pki = pki::PkiFiles::at(&self.dir.join("pki"));
        self.start_apiserver(&pki, "kube-apiserver-restarted")
    }

    fn boot(&mut self, pki: &pki::PkiFiles, stages: &Path, nodes: usize) -> anyhow::Result<()> {
        let p = self.ports;
        let dir = self.dir.clone();
        let kubeconfig = self.kubeconfig.clone();
        let logs = self.log_dir();
        let path = |p: &Path| p.display().to_string();

        // etcd
        let peer = format!("http://127.0.0.1:{}", p.etcd_peer);
        let client = format!("http://127.0.0.1:{}", p.etcd_client);
        let mut etcd = Command::new(self.assets.path(Tool::Etcd));
        etcd.arg("--name=node0")
            .arg(format!("--data-dir={}", path(&dir.join("etcd"))))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=node0={peer}"))
            .arg("--initial-cluster-state=new")
            .arg("--auto-compaction-retention=1")
            .arg("--unsafe-no-fsync=true")
            .arg("--log-level=warn");
        self.spawn("etcd", etcd, &logs)?;
        self.wait("etcd", ETCD_TIMEOUT, |_| {
            Ok(http_get(p.etcd_client, "/health")?.contains("\"health\":\"true\""))
        })?;

        // kube-apiserver
        self.start_apiserver(pki, "kube-apiserver")?;

        // kube-controller-manager, kube-scheduler and kwok start side by side.
        let always_allow = "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics";
        let kc = format!("--kubeconfig={}", path(&kubeconfig));
        let mut kcm = Command::new(self.assets.path(Tool::KubeControllerManager));
        kcm.arg(&kc)
            .arg(format!("--authentication-kubeconfig={}", path(&kubeconfig)))
            .arg(format!("--authorization-kubeconfig={}", path(&kubeconfig)))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--secure-port={}", p.controller_manager))
            .arg(format!("--tls-cert-file={}", path(&pki.serving_cert)))
            .arg(format!("--tls-private-key-file={}", path(&pki.serving_key)))
            .arg(always_allow)
            .arg(format!("--root-ca-file={}", path(&pki.ca_cert)))
            .arg(format!(
                "--service-account-private-key-file={}",
                path(&pki.sa_key)
            ))
            .arg("--leader-elect=false")
            .arg("--profiling=false");
        self.spawn("kube-controller-manager", kcm, &logs)?;

        let mut scheduler = Command::new(self.assets.path(Tool::KubeScheduler));
        scheduler
            .arg(&kc)
            .arg(format!("--authentication-kubeconfig={}", path(&kubeconfig)))
            .arg(format!("--authorization-kubeconfig={}", path(&kubeconfig)))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--secure-port={}", p.scheduler))
            .arg(format!("--tls-cert-file={}", path(&pki.serving_cert)))
            .arg(format!("--tls-private-key-file={}", path(&pki.serving_key)))
            .arg(always_allow)
            .arg("--leader-elect=false")
            .arg("--profiling=false");
        self.spawn("kube-scheduler", scheduler, &logs)?;

        let kwok_config = dir.join("kwok.yaml");
        fs::write(&kwok_config, kwok_config_yaml(stages)?)?;
        let mut kwok = Command::new(self.assets.path(Tool::Kwok));
        kwok.arg(&kc)
            .arg(format!("--config={}", path(&kwok_config)))
            .arg("--manage-all-nodes=true")
            // Pod IPs are data only: nothing routes to them.
            .arg("--cidr=10.244.0.0/16")
            .arg("--node-ip=10.243.0.1")
            .arg(format!("--server-address=127.0.0.1:{}", p.kwok))
            .arg("--node-lease-duration-seconds=40")
            // kwok reads and writes ~/.kwok unless told otherwise.
            .env("HOME", &dir);
        self.spawn("kwok", kwok, &logs)?;

        let manifest = nodes_manifest(nodes);
        run_with_stdin(self.kubectl().args(["apply", "-f", "-"]), &manifest)
            .context("creating the fake Nodes")?;

        let mut pending = String::new();
        self.wait("the cluster", SETTLE_TIMEOUT, |c| {
            pending.clear();
            for (what, port) in [
                ("kube-controller-manager", p.controller_manager),
                ("kube-scheduler", p.scheduler),
            ] {
                let out = c
                    .kubectl()
                    .arg(format!("--server=https://127.0.0.1:{port}"))
                    .args(["get", "--raw", "/healthz"])
                    .output()?;
                if !out.status.success() {
                    pending.push_str(what);
                    return Ok(false);
                }
            }
            if !http_get(p.kwok, "/healthz").is_ok_and(|body| body.contains("ok")) {
                pending.push_str("kwok");
                return Ok(false);
            }
            let out = c
                .kubectl()
                .args([
                    "get",
                    "-n",
                    "default",
                    "serviceaccount/default",
                    "configmap/kube-root-ca.crt",
                    "-o",
                    "name",
                ])
                .output()?;
            if !out.status.success() {
                pending.push_str("the default ServiceAccount and kube-root-ca.crt");
                return Ok(false);
            }
            let ready = ready_nodes(c)?;
            if ready < nodes {
                let _ = write!(pending, "Nodes ({ready} of {nodes} ready)");
                return Ok(false);
            }
            Ok(true)
        })
        .with_context(|| {
            if pending.is_empty() {
                "waiting for the cluster to settle".to_owned()
            } else {
                format!("waiting for {pending}")
            }
        })?;
        Ok(())
    }

    fn spawn(&mut self, name: &str, command: Command, logs: &Path) -> anyhow::Result<()> {
        let process = Process::spawn(name, command, &logs.join(format!("{name}.log")))?;
        self.components.push(process);
        Ok(())
    }

    /// Polls `ready` until it is true, failing early if any component exits, and with
    /// the tail of `what`'s log (or every log) on a timeout.
    fn wait(
        &mut self,
        what: &str,
        timeout: Duration,
        mut ready: impl FnMut(&Cluster) -> anyhow::Result<bool>,
    ) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        let mut last_error;
        loop {
            for p in &mut self.components {
                p.check_running()?;
            }
            match ready(self) {
                Ok(true) => return Ok(()),
                Ok(false) => last_error = None,
                Err(e) => last_error = Some(e),
            }
            if Instant::now() > deadline {
                let logs = match self.components.iter().find(|p| p.name() == what) {
                    Some(p) => format!(
                        "the end of `{}`:\n{}",
                        p.log().display(),
                        process::tail(p.log(), 30)
                    ),
                    None => self.log_tails(15),
                };
                let cause = last_error
                    .map(|e| format!(" (last error: {e:#})"))
                    .unwrap_or_default();
                anyhow::bail!(
                    "{what} was not ready after {}s{cause}; {logs}",
                    timeout.as_secs()
                );
            }
            thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.components.is_empty() {
            return;
        }
        if thread::panicking() {
            eprintln!(
                "tazuna-tests: cluster `{}` is being torn down during a panic; its logs:\n{}",
                self.name,
                self.log_tails(40)
            );
        }
        if let Some(mut dog) = self.watchdog.take() {
            dog.kill();
        }
        // The reverse of the start order: etcd goes last.
        while let Some(mut p) = self.components.pop() {
            p.kill();
        }
        if self.remove_dir && self.temp.is_none() {
            let _ = fs::remove_dir_all(&self.dir);
        }
        // A `TempDir` removes itself.
    }
}

/// Cluster names become context, file and directory names.
fn validate_name(name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if !ok {
        return Err(crate::StartError::InvalidName(name.to_owned()).into());
    }
    Ok(())
}

/// Runs `command` with `input` on stdin; fails with its stderr unless it succeeds.
pub(crate) fn run_with_stdin(command: &mut Command, input: &str) -> anyhow::Result<Output> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("running `{}`", command.get_program().display()))?;
    child
        .stdin
        .take()
        .context("no stdin")?
        .write_all(input.as_bytes())?;
    let out = child.wait_with_output()?;
    anyhow::ensure!(
        out.status.success(),
        "`{}` failed ({}): {}",
        command.get_program().display(),
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_must_suit_contexts_and_directories() {
        assert!(validate_name("staging").is_ok());
        assert!(validate_name("e2e-2").is_ok());
        for bad in ["", "Staging", "a/b", "-x", "x-", "a b"] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ports_are_distinct() {
        let a = Ports::allocate().unwrap();
        let b = Ports::allocate().unwrap();
        let all: HashSet<u16> = [a, b]
            .iter()
            .flat_map(|p| {
                [
                    p.etcd_client,
                    p.etcd_peer,
                    p.apiserver,
                    p.controller_manager,
                    p.scheduler,
                    p.kwok,
                ]
            })
            .collect();
        assert_eq!(all.len(), 12);
    }

    #[test]
    fn nodes_manifest_lists_untainted_linux_nodes() {
        let list: serde_json::Value = serde_json::from_str(&nodes_manifest(2)).unwrap();
        let items = list["items"].as_array().unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[1]["metadata"]["name"], "kwok-node-1");
        assert_eq!(items[0]["metadata"]["labels"]["kubernetes.io/os"], "linux");
        assert!(items[0]["spec"].is_null());
    }
}
