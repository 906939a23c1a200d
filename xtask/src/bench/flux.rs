//! Flux as the benchmark's GitOps peer: its source-controller and
//! kustomize-controller (built by tests/controlplane/install.sh at the
//! versions.env pins) run as processes against a harness API server and
//! reconcile the workload's objects from an OCI artifact in a local
//! registry. A run is timed from the creation of the Kustomizations to all of
//! them Ready, as a user would see it after a push.

use std::path::{Path, PathBuf};

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

/// Both controllers ([`tazuna_tests::Flux`]), running against one
/// cluster with their CRDs installed; stopped on drop.
pub struct Flux {
    inner: tazuna_tests::Flux,
}

impl Flux {
    /// Installs the CRDs and starts the controllers.
    pub fn start(cluster: &Cluster, _work: &Path) -> anyhow::Result<Flux> {
        let source = source_dir()?.join("source-controller");
        let kustomize = kustomize_dir()?.join("kustomize-controller");
        let mut apply = cluster.kubectl();
        apply.args(["apply", "--server-side"]);
        for file in tazuna_tests::Flux::crds(&source)
            .into_iter()
            .chain(tazuna_tests::Flux::crds(&kustomize))
        {
            apply.arg("-f").arg(file);
        }
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
        let inner = tazuna_tests::Flux::start(
            &source,
            &kustomize,
            None,
            cluster.kubeconfig(),
            "flux-system",
        )?;
        Ok(Flux { inner })
    }

    pub fn pids(&self) -> Vec<u32> {
        self.inner.pids()
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
    pub fn check_alive(&mut self, _cluster: &Cluster) -> anyhow::Result<()> {
        self.inner.check_alive()
    }
}

/// Packs `workload`'s objects as a Flux OCI artifact and pushes it with the
/// pinned oras; returns the repository's URL.
pub fn push_artifact(
    oras: &Path,
    registry: &str,
    workload: &Workload,
    _work: &Path,
) -> anyhow::Result<String> {
    tazuna_tests::flux::push_artifact(
        oras,
        registry,
        &format!("bench/{}", workload.id),
        "v1",
        &workload.objects(),
    )
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
