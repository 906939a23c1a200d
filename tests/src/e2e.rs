//! What an end-to-end test starts from: a [`TestCluster`] (a fresh harness cluster, one
//! shared by every test of the test binary, or the developer's own kind/k3d cluster),
//! [`TestNamespace`] guards that clean up after themselves, and the skip rule.
//!
//! **Skip rule.** When a binary a test needs is missing, the test prints why and
//! returns early, unless `TAZUNA_E2E_REQUIRED` is set (CI sets it), in which case it
//! fails. Helpers that can skip return `Option`.
//!
//! **Developer clusters.** With `TAZUNA_E2E_KUBECONFIG` (and optionally
//! `TAZUNA_E2E_CONTEXT`, default: that file's current context), no control plane is
//! started: every [`TestCluster`] is that cluster, and tests isolate themselves in
//! namespaces. Tests that need a cluster of their own check [`TestCluster::own`].

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::assets::{Assets, Tool};
use crate::cluster::Cluster;
use crate::registry::Registry;

/// Env var that turns every skip into a failure (CI sets it).
pub const REQUIRED_ENV: &str = "TAZUNA_E2E_REQUIRED";
/// Env var naming the kubeconfig of a developer's cluster to use instead.
pub const KUBECONFIG_ENV: &str = "TAZUNA_E2E_KUBECONFIG";
/// Env var naming the context in [`KUBECONFIG_ENV`] (default: its current context).
pub const CONTEXT_ENV: &str = "TAZUNA_E2E_CONTEXT";

/// Whether skips are failures.
pub fn required() -> bool {
    std::env::var(REQUIRED_ENV).is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Skips the current test with `reason`, or panics when skips are failures. Returns
/// `None` so that callers can write `return skip(...)` in an `Option` context.
pub fn skip<T>(reason: &str) -> Option<T> {
    let test = thread::current().name().unwrap_or("test").to_owned();
    if required() {
        panic!("{test}: {reason}\n({REQUIRED_ENV} is set, so this is a failure, not a skip)");
    }
    // Straight to fd 2: libtest captures `eprintln!` of passing tests, and a skip
    // must be seen.
    let _ = writeln!(
        std::io::stderr().lock(),
        "SKIPPED {test}: {reason}\nhint: run `tests/controlplane/install.sh`; set \
         {REQUIRED_ENV}=1 to fail instead"
    );
    None
}

/// The binaries `tools` (from [`Assets::locate`]), or a skip if any is missing.
pub fn tools(tools: &[Tool]) -> Option<Assets> {
    let assets = Assets::locate();
    let missing = assets.missing(tools);
    if missing.is_empty() {
        return Some(assets);
    }
    let names: Vec<String> = missing
        .iter()
        .map(|t| format!("{t} {} (`{}`)", t.version(), assets.path(*t).display()))
        .collect();
    skip(&format!(
        "missing test binaries in {}: {}",
        assets.describe(),
        names.join(", ")
    ))
}

/// One pinned tool's path, or a skip.
pub fn tool(tool: Tool) -> Option<PathBuf> {
    tools(&[tool]).map(|assets| assets.path(tool))
}

/// A registry without authentication, or a skip if `docker-registry` is missing.
/// Panics if it is present but does not start.
pub fn registry() -> Option<Registry> {
    if Registry::binary().is_none() {
        return skip("no OCI registry binary (Debian package `docker-registry`)");
    }
    Some(Registry::start().unwrap_or_else(|e| panic!("{e:#}")))
}

/// moto (the AWS API) on a free port, or a skip if it is not installed. Panics if it is
/// present but does not start.
pub fn moto() -> Option<crate::Moto> {
    if crate::Moto::venv().is_none() {
        return skip("no moto server (install.sh installs moto from PyPI)");
    }
    Some(crate::Moto::start().unwrap_or_else(|e| panic!("{e:#}")))
}

/// A dev Vault with TLS on a free port, or a skip if `vault` is not installed. Panics if it is
/// present but does not start.
pub fn vault() -> Option<crate::Vault> {
    let binary = tool(Tool::Vault)?;
    Some(crate::Vault::start(&binary).unwrap_or_else(|e| panic!("{e:#}")))
}

/// A registry that requires basic auth with `user`/`password`, or a skip.
pub fn registry_with_basic_auth(user: &str, password: &str) -> Option<Registry> {
    if Registry::binary().is_none() {
        return skip("no OCI registry binary (Debian package `docker-registry`)");
    }
    if crate::assets::which("htpasswd").is_none() {
        return skip("no `htpasswd` (Debian package `apache2-utils`)");
    }
    Some(Registry::start_with_basic_auth(user, password).unwrap_or_else(|e| panic!("{e:#}")))
}

/// The cluster a test runs against.
#[derive(Debug)]
pub enum TestCluster {
    /// A harness cluster started by this process.
    Own(Box<Cluster>),
    /// A developer's cluster named by `TAZUNA_E2E_KUBECONFIG`.
    External {
        /// Its kubeconfig.
        kubeconfig: PathBuf,
        /// The context to use.
        context: String,
        /// The kubectl to run.
        kubectl: PathBuf,
    },
}

static SHARED: OnceLock<Result<Option<TestCluster>, String>> = OnceLock::new();

impl TestCluster {
    /// A fresh harness cluster named `name` with one fake Node, or the developer's
    /// cluster, or a skip when binaries are missing. Panics if the cluster fails to
    /// start (the error holds the tail of the failing component's log).
    pub fn start(name: &str) -> Option<TestCluster> {
        TestCluster::start_with(name, 1)
    }

    /// Like [`TestCluster::start`] with `nodes` fake Nodes.
    pub fn start_with(name: &str, nodes: usize) -> Option<TestCluster> {
        if let Some(external) = TestCluster::external() {
            return Some(external);
        }
        let assets = tools(&Tool::CONTROL_PLANE)?;
        let config = crate::ClusterConfig::new(name).nodes(nodes).assets(assets);
        match config.start() {
            Ok(cluster) => Some(TestCluster::Own(Box::new(cluster))),
            Err(e) => panic!("{e:#}"),
        }
    }

    /// One cluster (named `shared`, two fake Nodes) for every test of this test
    /// binary that only needs a namespace; started by the first caller. The process's
    /// watchdog stops it when the test binary exits.
    pub fn shared() -> Option<&'static TestCluster> {
        let result = SHARED.get_or_init(|| {
            std::panic::catch_unwind(|| TestCluster::start_with("shared", 2)).map_err(|e| {
                e.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_else(|| "the shared cluster failed to start".to_owned())
            })
        });
        match result {
            Ok(Some(cluster)) => Some(cluster),
            Ok(None) => skip("the shared cluster cannot start (the reason is printed above)"),
            Err(message) => panic!("{message}"),
        }
    }

    fn external() -> Option<TestCluster> {
        let kubeconfig = PathBuf::from(std::env::var_os(KUBECONFIG_ENV).filter(|v| !v.is_empty())?);
        let kubectl = Assets::locate().kubectl();
        let context = match std::env::var(CONTEXT_ENV) {
            Ok(c) if !c.is_empty() => c,
            _ => {
                let out = Command::new(&kubectl)
                    .arg("--kubeconfig")
                    .arg(&kubeconfig)
                    .args(["config", "current-context"])
                    .output()
                    .unwrap_or_else(|e| panic!("running kubectl: {e}"));
                assert!(
                    out.status.success(),
                    "{KUBECONFIG_ENV}=`{}` has no current context; set {CONTEXT_ENV}",
                    kubeconfig.display()
                );
                String::from_utf8_lossy(&out.stdout).trim().to_owned()
            }
        };
        Some(TestCluster::External {
            kubeconfig,
            context,
            kubectl,
        })
    }

    /// Whether this is the cluster of [`TestCluster::shared`].
    pub fn is_shared(&self) -> bool {
        SHARED
            .get()
            .and_then(|r| r.as_ref().ok())
            .and_then(Option::as_ref)
            .is_some_and(|shared| std::ptr::eq(shared, self))
    }

    /// Whether this is a developer's cluster rather than a harness one.
    pub fn is_external(&self) -> bool {
        matches!(self, TestCluster::External { .. })
    }

    /// The harness cluster, mutably (to kill and restart components).
    pub fn own_mut(&mut self) -> Option<&mut Cluster> {
        match self {
            TestCluster::Own(cluster) => Some(cluster),
            TestCluster::External { .. } => None,
        }
    }

    /// The harness cluster, if this is one (`None` for a developer's cluster).
    pub fn own(&self) -> Option<&Cluster> {
        match self {
            TestCluster::Own(cluster) => Some(cluster),
            TestCluster::External { .. } => None,
        }
    }

    /// The kubeconfig to use.
    pub fn kubeconfig(&self) -> &Path {
        match self {
            TestCluster::Own(cluster) => cluster.kubeconfig(),
            TestCluster::External { kubeconfig, .. } => kubeconfig,
        }
    }

    /// The context to use.
    pub fn context(&self) -> &str {
        match self {
            TestCluster::Own(cluster) => cluster.context(),
            TestCluster::External { context, .. } => context,
        }
    }

    /// A kubectl command aimed at this cluster.
    pub fn kubectl(&self) -> Command {
        match self {
            TestCluster::Own(cluster) => cluster.kubectl(),
            TestCluster::External {
                kubeconfig,
                context,
                kubectl,
            } => {
                let mut command = Command::new(kubectl);
                command
                    .arg("--kubeconfig")
                    .arg(kubeconfig)
                    .arg("--context")
                    .arg(context);
                command
            }
        }
    }

    /// Waits until the CRD `name` is Established; panics after 60 s.
    pub fn wait_established(&self, name: &str) {
        wait_condition(|| self.kubectl(), &format!("crd/{name}"), "Established", 60);
    }

    /// Requests the API server logged from clients whose user agent starts
    /// with `user_agent`; `None` for a developer's cluster (no audit log).
    pub fn requests_from(&self, user_agent: &str) -> Option<Vec<crate::cluster::AuditEvent>> {
        self.own().map(|c| c.requests_from(user_agent))
    }

    /// The tail of every component log (empty for a developer's cluster).
    pub fn log_tails(&self, lines: usize) -> String {
        self.own().map(|c| c.log_tails(lines)).unwrap_or_default()
    }

    /// Creates a namespace named `<prefix>-<random>`, deleted when the guard drops.
    /// Panics if it cannot be created.
    pub fn namespace(&self, prefix: &str) -> TestNamespace<'_> {
        let name = format!("{prefix}-{}", unique_suffix());
        let out = self
            .kubectl()
            .args(["create", "namespace", &name])
            .output()
            .expect("running kubectl");
        assert!(
            out.status.success(),
            "creating namespace `{name}`: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        TestNamespace {
            cluster: self,
            name,
        }
    }
}

/// A namespace that is deleted when dropped, also when the test fails; then the tail
/// of the component logs and the namespace's events are printed first.
#[derive(Debug)]
pub struct TestNamespace<'a> {
    cluster: &'a TestCluster,
    name: String,
}

/// Waits until `resource` (as kubectl names it, `kind/name`) has the
/// condition `condition` with status True; panics after `seconds`.
///
/// `kubectl wait --for=condition=...` is not used: sent right after the
/// object is created, it can meet a status without conditions and fail at
/// once (`.status.conditions accessor error: <nil>`), which made CI flaky.
pub fn wait_condition(
    kubectl: impl Fn() -> Command,
    resource: &str,
    condition: &str,
    seconds: u64,
) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    let jsonpath = format!("jsonpath={{.status.conditions[?(@.type==\"{condition}\")].status}}");
    let mut last = String::new();
    while std::time::Instant::now() < deadline {
        let out = kubectl()
            .args(["get", resource, "-o", &jsonpath])
            .output()
            .expect("running kubectl");
        if out.status.success() && out.stdout.trim_ascii() == b"True" {
            return;
        }
        last = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    panic!("`{resource}` had no condition {condition}=True within {seconds} s; last: {last}");
}

impl TestNamespace<'_> {
    /// The namespace name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A kubectl command aimed at the cluster and this namespace.
    pub fn kubectl(&self) -> Command {
        let mut command = self.cluster.kubectl();
        command.arg("--namespace").arg(&self.name);
        command
    }

    /// The cluster.
    pub fn cluster(&self) -> &TestCluster {
        self.cluster
    }
}

impl Drop for TestNamespace<'_> {
    fn drop(&mut self) {
        if thread::panicking() {
            let mut report = String::new();
            if let Ok(out) = self
                .kubectl()
                .args(["get", "events", "--sort-by=.lastTimestamp"])
                .output()
            {
                let _ = writeln!(
                    report,
                    "----- events in namespace {} -----\n{}",
                    self.name,
                    String::from_utf8_lossy(&out.stdout)
                );
            }
            // A cluster of the test's own prints its logs when it drops; the shared
            // one never drops, so its logs are printed here.
            if self.cluster.is_shared() {
                report.push_str(&self.cluster.log_tails(40));
            }
            eprintln!("tazuna-tests: test failed; diagnostics:\n{report}");
        }
        let _ = self
            .cluster
            .kubectl()
            .args([
                "delete",
                "namespace",
                &self.name,
                "--wait=false",
                "--ignore-not-found",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// A short suffix unique within this machine for a while: pid, a counter and the clock.
pub fn unique_suffix() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mix = (u64::from(std::process::id()) << 32 | u64::from(nanos))
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    format!("{:05x}{n:x}", mix >> 44)
}
