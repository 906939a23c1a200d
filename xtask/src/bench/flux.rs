//! Flux as the benchmark's GitOps peer: its source-controller and
//! kustomize-controller (built by tests/controlplane/install.sh at the
//! versions.env pins) run as processes against a harness API server and
//! reconcile the workload's objects from an OCI artifact in a local
//! registry. A run is timed from the creation of the Kustomizations to all of
//! them Ready, as a user would see it after a push.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context, bail};
use tazuna_controlplane::Cluster;
use tazuna_controlplane::assets::{cache_dir, pinned_version};

use super::measure::{self, poll};
use super::workloads::{DAG_LEVELS, DAG_WIDTH, Kind, Workload, dag_name, dag_needs};

/// The two controllers' directories under the tool cache.
fn controller_dir(name: &str, key: &str) -> anyhow::Result<PathBuf> {
    let version = pinned_version(key).context("versions.env lacks a Flux pin")?;
    let dir = cache_dir().join("bin").join(format!("{name}-{version}"));
    if !dir.is_dir() {
        bail!(
            "Flux's {name} {version} is not built\nhint: run `tests/controlplane/install.sh`, which builds it into {}",
            dir.display()
        );
    }
    Ok(dir)
}

pub fn source_dir() -> anyhow::Result<PathBuf> {
    controller_dir("flux-source-controller", "FLUX_SOURCE_CONTROLLER_VERSION")
}

pub fn kustomize_dir() -> anyhow::Result<PathBuf> {
    controller_dir(
        "flux-kustomize-controller",
        "FLUX_KUSTOMIZE_CONTROLLER_VERSION",
    )
}

/// Both controllers, running against one cluster; killed on drop.
pub struct Flux {
    children: Vec<Child>,
    storage: PathBuf,
}

impl Drop for Flux {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.storage);
    }
}

impl Flux {
    /// Installs the CRDs and starts the controllers.
    pub fn start(cluster: &Cluster, work: &Path) -> anyhow::Result<Flux> {
        let (source, kustomize) = (source_dir()?, kustomize_dir()?);
        let mut apply = cluster.kubectl();
        apply
            .args(["apply", "--server-side", "-f"])
            .arg(source.join("crds"));
        apply.arg("-f").arg(kustomize.join("crds"));
        super::workloads::quiet(&mut apply)?;
        poll(60, "Flux's CRDs to be established", || {
            let out = cluster
                .kubectl()
                .args(["get", "crd", "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type==\"Established\")].status}{\"\\n\"}{end}"])
                .output()?;
            let text = String::from_utf8_lossy(&out.stdout);
            let flux: Vec<&str> = text.lines().filter(|l| l.contains("fluxcd.io")).collect();
            Ok(!flux.is_empty() && flux.iter().all(|l| l.ends_with("=True")))
        })?;
        super::workloads::quiet(
            cluster
                .kubectl()
                .args(["create", "namespace", "flux-system"]),
        )?;
        let storage = work.join(format!("flux-storage-{}", cluster.name()));
        std::fs::create_dir_all(&storage)?;
        let port = free_port()?;
        let logs = cluster.log_dir();
        let spawn = |binary: PathBuf, args: Vec<String>, log: &str| -> anyhow::Result<Child> {
            let log = std::fs::File::create(logs.join(log))?;
            Command::new(&binary)
                .args(args)
                // controller-runtime reads KUBECONFIG (its current context
                // is the cluster's); the controllers have no --kubeconfig flag.
                .env("KUBECONFIG", cluster.kubeconfig())
                .env("RUNTIME_NAMESPACE", "flux-system")
                .stdout(log.try_clone()?)
                .stderr(log)
                .spawn()
                .with_context(|| format!("starting {}", binary.display()))
        };
        let common = |extra: &[String]| {
            let mut args = vec![
                "--enable-leader-election=false".to_owned(),
                "--metrics-addr=127.0.0.1:0".to_owned(),
                "--health-addr=127.0.0.1:0".to_owned(),
                "--log-level=error".to_owned(),
                "--events-addr=".to_owned(),
            ];
            args.extend_from_slice(extra);
            args
        };
        let source_controller = spawn(
            source.join("source-controller"),
            common(&[
                format!("--storage-path={}", storage.display()),
                format!("--storage-addr=127.0.0.1:{port}"),
                format!("--storage-adv-addr=127.0.0.1:{port}"),
            ]),
            "flux-source-controller.log",
        )?;
        let kustomize_controller = spawn(
            kustomize.join("kustomize-controller"),
            // A Kustomization whose dependency is not ready is retried after
            // this long (default 30 s); 1 s is in Flux's favour.
            common(&["--requeue-dependency=1s".to_owned()]),
            "flux-kustomize-controller.log",
        )?;
        Ok(Flux {
            children: vec![source_controller, kustomize_controller],
            storage,
        })
    }

    pub fn pids(&self) -> Vec<u32> {
        self.children.iter().map(Child::id).collect()
    }

    pub fn reset_peak_rss(&self) {
        for pid in self.pids() {
            measure::reset_peak_rss(pid);
        }
    }

    /// The larger of the two controllers' peak RSS since the last reset, KiB.
    pub fn peak_rss_kib(&self) -> anyhow::Result<u64> {
        let mut peak = 0;
        for pid in self.pids() {
            peak = peak.max(measure::peak_rss_kib(pid)?);
        }
        Ok(peak)
    }

    /// Whether both controllers still run (a crash would look like a hang).
    pub fn check_alive(&mut self, cluster: &Cluster) -> anyhow::Result<()> {
        for child in &mut self.children {
            if let Some(status) = child.try_wait()? {
                bail!(
                    "a Flux controller exited ({status}); its log is in {}",
                    cluster.log_dir().display()
                );
            }
        }
        Ok(())
    }
}

/// Packs `workload`'s objects as a Flux OCI artifact and pushes it with the
/// pinned oras; returns the repository's URL.
pub fn push_artifact(
    oras: &Path,
    registry: &str,
    workload: &Workload,
    work: &Path,
) -> anyhow::Result<String> {
    let tarball = work.join(format!("{}.tar.gz", workload.id));
    super::workloads::quiet(
        Command::new("tar")
            .arg("-czf")
            .arg(&tarball)
            .arg("-C")
            .arg(workload.objects())
            .arg("."),
    )?;
    let config = work.join("flux-config.json");
    std::fs::write(&config, "{}")?;
    let reference = format!("{registry}/bench/{}:v1", workload.id);
    let out = Command::new(oras)
        .current_dir(work)
        .args(["push", "--plain-http", &reference])
        .arg(format!(
            "--config={}:application/vnd.cncf.flux.config.v1+json",
            config.display()
        ))
        .arg(format!(
            "{}.tar.gz:application/vnd.cncf.flux.content.v1.tar+gzip",
            workload.id
        ))
        .stdout(Stdio::null())
        .output()?;
    if !out.status.success() {
        bail!("oras push: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(format!("oci://{registry}/bench/{}", workload.id))
}

/// The OCIRepository and the Kustomizations for `workload`.
pub fn objects(workload: &Workload, url: &str) -> String {
    let mut yaml = format!(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: bench\n  namespace: flux-system\nspec:\n  interval: 60m\n  url: {url}\n  insecure: true\n  ref:\n    tag: v1\n"
    );
    let kustomization = |name: &str, path: &str, needs: &[String], wait: bool| {
        let depends = if needs.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = needs.iter().map(|n| format!("    - name: {n}\n")).collect();
            format!("  dependsOn:\n{}", list.concat())
        };
        format!(
            "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: flux-system\nspec:\n  interval: 60m\n  timeout: 5m\n  prune: true\n  wait: {wait}\n  path: {path}\n  sourceRef:\n    kind: OCIRepository\n    name: bench\n{depends}"
        )
    };
    match workload.kind {
        Kind::Dag => {
            for level in 0..DAG_LEVELS {
                for i in 0..DAG_WIDTH {
                    let m = dag_name(level, i);
                    yaml.push_str(&kustomization(
                        &m,
                        &format!("./{m}"),
                        &dag_needs(level, i),
                        true,
                    ));
                }
            }
        }
        _ => yaml.push_str(&kustomization("bench", "./", &[], false)),
    }
    yaml
}

/// Waits until every Kustomization is Ready, or, with `handled`, has
/// handled the reconcile request of that value and is Ready.
pub fn wait_ready(cluster: &Cluster, flux: &mut Flux, handled: Option<&str>) -> anyhow::Result<()> {
    let condition = match handled {
        None => "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}=True".to_owned(),
        Some(at) => format!("jsonpath={{.status.lastHandledReconcileAt}}={at}"),
    };
    // `kubectl wait` watches; it gives up at once on an object whose status
    // has no such field yet, so it is run again until it succeeds.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(900);
    loop {
        flux.check_alive(cluster)?;
        let out = cluster
            .kubectl()
            .args(["wait", "kustomization", "--all", "-n", "flux-system"])
            .arg(format!("--for={condition}"))
            .arg("--timeout=900s")
            .output()?;
        if out.status.success() {
            break;
        }
        if std::time::Instant::now() > deadline {
            bail!(
                "Flux's Kustomizations were not ready in 900 s: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    if handled.is_some() {
        // Handled the request, and Ready after it.
        return wait_ready(cluster, flux, None);
    }
    Ok(())
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
