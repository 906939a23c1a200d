//! `cargo xtask bench-apply`: Tazuna's apply beside `kubectl apply
//! --server-side`, in one run, on fresh harness control planes, reported as
//! ratios.
//!
//! The fixture is the Argo CD install manifests (59 objects, 3 CRDs) plus N
//! ConfigMaps in their own namespace. Each round starts a fresh cluster for
//! kubectl and another for Tazuna, so both do day one. Request counts come
//! from the API server's audit log (by user agent), not from either tool;
//! peak RSS from `/usr/bin/time`.
//!
//! Each day-one apply also records the CPU time it cost: the control plane's
//! processes (from `/proc/<pid>/stat`) plus the client's (this process's
//! reaped children). Divided by the cores, that is the shortest any client
//! could take on this machine, which tells a slow client from a busy machine.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use tazuna_controlplane::{AuditEvent, Cluster, ClusterConfig};

use crate::test::run;

/// Measure apply, no-op apply, plan and status against kubectl.
#[derive(Debug, Args)]
pub struct BenchApply {
    /// ConfigMaps added to the Argo CD fixture.
    #[arg(long, default_value_t = 1000)]
    configmaps: usize,
    /// Rounds; medians are reported.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Objects in the peak-RSS run (0 skips it).
    #[arg(long, default_value_t = 10_000)]
    rss_objects: usize,
}

struct Round {
    kubectl: Duration,
    kubectl_cpu: Cpu,
    tazuna: Duration,
    tazuna_cpu: Cpu,
    noop: Duration,
    noop_writes: usize,
    noop_requests: usize,
    plan_requests: usize,
    status_requests: usize,
    pairs: usize,
}

impl BenchApply {
    /// Run it and print a Markdown report.
    pub fn run(self) -> anyhow::Result<()> {
        let root = crate::test::root();
        let tazuna = crate::plugins::release_cli(&root)?;
        let work = tempfile_dir()?;
        let fixture = write_fixture(&root, &work, self.configmaps)?;

        let mut rounds = Vec::new();
        for round in 0..self.rounds {
            eprintln!("==> round {}/{}", round + 1, self.rounds);
            rounds.push(self.round(round, &tazuna, &fixture)?);
        }
        let mut report = String::new();
        let median = |f: &dyn Fn(&Round) -> f64| {
            let mut values: Vec<f64> = rounds.iter().map(f).collect();
            values.sort_by(f64::total_cmp);
            values[values.len() / 2]
        };
        let kubectl = median(&|r| r.kubectl.as_secs_f64());
        let apply = median(&|r| r.tazuna.as_secs_f64());
        let noop = median(&|r| r.noop.as_secs_f64());
        let range = |f: &dyn Fn(&Round) -> f64| {
            let values: Vec<f64> = rounds.iter().map(f).collect();
            let min = values.iter().copied().fold(f64::INFINITY, f64::min);
            let max = values.iter().copied().fold(0.0, f64::max);
            format!("{min:.2}–{max:.2} s")
        };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let server_cpu = |cpu: &Cpu| cpu.control_plane;
        let kubectl_server = median(&|r| server_cpu(&r.kubectl_cpu));
        let tazuna_server = median(&|r| server_cpu(&r.tazuna_cpu));
        let tazuna_total = median(&|r| r.tazuna_cpu.total());
        let kubectl_client = median(&|r| r.kubectl_cpu.client);
        let tazuna_client = median(&|r| r.tazuna_cpu.client);
        let objects = 59 + 1 + self.configmaps + 1;
        let last = rounds.last().expect("at least one round");
        writeln!(
            report,
            "Fixture: Argo CD install ({} objects incl. its Namespace) + {} ConfigMaps and their Namespace = {objects} objects; {} rounds, medians.",
            60,
            self.configmaps,
            rounds.len()
        )?;
        writeln!(report)?;
        writeln!(
            report,
            "| What | kubectl apply --server-side | tazuna apply | ratio |"
        )?;
        writeln!(report, "|---|---|---|---|")?;
        writeln!(
            report,
            "| day-one apply | {kubectl:.2} s | {apply:.2} s | {:.2}x faster |",
            kubectl / apply
        )?;
        writeln!(
            report,
            "| day-one apply, range over rounds | {} | {} | |",
            range(&|r| r.kubectl.as_secs_f64()),
            range(&|r| r.tazuna.as_secs_f64())
        )?;
        writeln!(
            report,
            "| CPU during day-one apply: control plane, client | {kubectl_server:.2} s, {kubectl_client:.2} s | {tazuna_server:.2} s, {tazuna_client:.2} s | |"
        )?;
        writeln!(
            report,
            "| shortest possible tazuna apply here: its CPU / {cores} cores | | {:.2} s | at most {:.2}x |",
            tazuna_total / cores,
            kubectl / (tazuna_total / cores)
        )?;
        writeln!(
            report,
            "| no-op re-apply | | {noop:.2} s ({:.1}% of a full apply; {} requests, {} writes other than the lock) | |",
            100.0 * noop / apply,
            last.noop_requests,
            last.noop_writes
        )?;
        writeln!(
            report,
            "| plan (no changes) | | {} requests for {} kind-namespace pairs ({:.1} per pair) | |",
            last.plan_requests,
            last.pairs,
            last.plan_requests as f64 / last.pairs as f64
        )?;
        writeln!(
            report,
            "| status | | {} requests for {} kind-namespace pairs ({:.1} per pair) | |",
            last.status_requests,
            last.pairs,
            last.status_requests as f64 / last.pairs as f64
        )?;
        if self.rss_objects > 0 {
            eprintln!("==> peak RSS with {} objects", self.rss_objects);
            let big = work.join("rss");
            let big = write_fixture_only_configmaps(&big, self.rss_objects)?;
            let cluster = fresh("bench-rss")?;
            let (apply_kb, _) = rss(&tazuna, &cluster, &big, &["apply"])?;
            let (noop_kb, _) = rss(&tazuna, &cluster, &big, &["apply"])?;
            writeln!(
                report,
                "| peak RSS, {} ConfigMaps | | apply {:.0} MB, no-op {:.0} MB | |",
                self.rss_objects,
                apply_kb as f64 / 1024.0,
                noop_kb as f64 / 1024.0
            )?;
        }
        println!("{report}");
        Ok(())
    }

    fn round(&self, round: usize, tazuna: &Path, fixture: &Path) -> anyhow::Result<Round> {
        let kube_cluster = fresh(&format!("bench-k{round}"))?;
        let meter = Cpu::start(&kube_cluster)?;
        let started = Instant::now();
        let mut apply = kube_cluster.kubectl();
        apply.args(["apply", "--server-side", "-o", "name"]);
        for file in [
            "argo-cd/namespace.yaml",
            "argo-cd/install.yaml",
            "bulk/namespace.yaml",
            "bulk/configmaps.yaml",
        ] {
            apply.arg("-f").arg(fixture.join(file));
        }
        run(apply.stdout(std::process::Stdio::null()))?;
        let kubectl_time = started.elapsed();
        let kubectl_cpu = meter.stop(&kube_cluster)?;
        drop(kube_cluster);

        let cluster = fresh(&format!("bench-t{round}"))?;
        // Each round is a new cluster with a new identity.
        let _ = std::fs::remove_file(fixture.join("tazuna.lock"));
        let tazuna_run = |args: &[&str]| -> anyhow::Result<Duration> {
            let started = Instant::now();
            run(Command::new(tazuna)
                .current_dir(fixture)
                .arg("--kubeconfig")
                .arg(cluster.kubeconfig())
                .arg("--context")
                .arg(cluster.context())
                .args(args)
                .stdout(std::process::Stdio::null()))?;
            Ok(started.elapsed())
        };
        let meter = Cpu::start(&cluster)?;
        let tazuna_time = tazuna_run(&["apply"])?;
        let tazuna_cpu = meter.stop(&cluster)?;
        let before = cluster.requests_from("tazuna/").len();
        let noop = tazuna_run(&["apply"])?;
        let after_noop = cluster.requests_from("tazuna/");
        let noop_events = &after_noop[before..];
        let noop_writes = noop_events
            .iter()
            .filter(|e| e.is_write() && e.resource != "leases")
            .count();
        let before = after_noop.len();
        let _ = tazuna_run(&["plan", "--detailed-exitcode"])?;
        let after_plan = cluster.requests_from("tazuna/");
        let plan = &after_plan[before..];
        let before = after_plan.len();
        let _ = tazuna_run(&["status"])?;
        let status_events = cluster.requests_from("tazuna/");
        let status = &status_events[before..];
        Ok(Round {
            kubectl: kubectl_time,
            kubectl_cpu,
            tazuna: tazuna_time,
            tazuna_cpu,
            noop,
            noop_writes,
            noop_requests: noop_events.len(),
            plan_requests: plan.len(),
            status_requests: status.len(),
            pairs: pairs(status),
        })
    }
}

/// Distinct (resource, namespace) pairs that were listed, Tazuna's own state
/// in namespace `tazuna` aside.
fn pairs(events: &[AuditEvent]) -> usize {
    let mut seen: Vec<(&str, Option<&str>)> = events
        .iter()
        .filter(|e| e.verb == "list" && e.namespace.as_deref() != Some("tazuna"))
        .map(|e| (e.resource.as_str(), e.namespace.as_deref()))
        .collect();
    seen.sort();
    seen.dedup();
    seen.len().max(1)
}

/// CPU seconds spent while one apply ran.
pub(crate) struct Cpu {
    /// By the control plane's processes (etcd, kube-apiserver, controllers, kwok).
    pub(crate) control_plane: f64,
    /// By the client (children of this process that were waited for).
    pub(crate) client: f64,
}

impl Cpu {
    pub(crate) fn total(&self) -> f64 {
        self.control_plane + self.client
    }

    pub(crate) fn start(cluster: &Cluster) -> anyhow::Result<Cpu> {
        Ok(Cpu {
            control_plane: control_plane_cpu(cluster)?,
            client: children_cpu()?,
        })
    }

    pub(crate) fn stop(self, cluster: &Cluster) -> anyhow::Result<Cpu> {
        Ok(Cpu {
            control_plane: control_plane_cpu(cluster)? - self.control_plane,
            client: children_cpu()? - self.client,
        })
    }
}

/// `utime + stime` of the cluster's processes, in seconds.
pub(crate) fn control_plane_cpu(cluster: &Cluster) -> anyhow::Result<f64> {
    let mut total = 0.0;
    for (_, pid) in cluster.processes() {
        total += stat_seconds(&format!("/proc/{pid}/stat"), 13, 14)?;
    }
    Ok(total)
}

/// `cutime + cstime` of this process: its reaped children, the clients.
pub(crate) fn children_cpu() -> anyhow::Result<f64> {
    stat_seconds("/proc/self/stat", 15, 16)
}

/// The sum of two tick fields of a `/proc/.../stat` file (0-based, counted
/// after the command name, which may hold spaces), in seconds.
fn stat_seconds(path: &str, a: usize, b: usize) -> anyhow::Result<f64> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    let after_name = &text[text.rfind(')').context("malformed stat")? + 2..];
    // Fields after the name start at field 3 (state), index 2 of the full list.
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let tick = |i: usize| -> anyhow::Result<f64> {
        fields
            .get(i - 2)
            .context("short stat")?
            .parse::<f64>()
            .context("stat field")
    };
    // USER_HZ is 100 on Linux for every architecture this runs on.
    Ok((tick(a)? + tick(b)?) / 100.0)
}

pub(crate) fn fresh(name: &str) -> anyhow::Result<Cluster> {
    ClusterConfig::new(name).start()
}

fn rss(
    tazuna: &Path,
    cluster: &Cluster,
    dir: &Path,
    args: &[&str],
) -> anyhow::Result<(u64, Duration)> {
    let started = Instant::now();
    let out = Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg(tazuna)
        .current_dir(dir)
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig())
        .arg("--context")
        .arg(cluster.context())
        .args(args)
        .stdout(std::process::Stdio::null())
        .output()
        .context("running /usr/bin/time (Debian package `time`)")?;
    if !out.status.success() {
        bail!(
            "tazuna {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let kb = stderr
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .context("no RSS from /usr/bin/time")?;
    Ok((kb, started.elapsed()))
}

pub(crate) fn tempfile_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("tazuna-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The Argo CD fixture in `dir/argo-cd/` and `count` ConfigMaps in `dir/bulk/`.
pub(crate) fn write_sources(root: &Path, dir: &Path, count: usize) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir.join("argo-cd"))?;
    std::fs::create_dir_all(dir.join("bulk"))?;
    for file in ["install.yaml", "namespace.yaml"] {
        std::fs::copy(
            root.join("examples/quickstart/argo-cd").join(file),
            dir.join("argo-cd").join(file),
        )?;
    }
    std::fs::write(dir.join("bulk/namespace.yaml"), BULK_NAMESPACE)?;
    std::fs::write(dir.join("bulk/configmaps.yaml"), configmaps(count))?;
    Ok(())
}

fn configmaps(count: usize) -> String {
    let mut text = String::new();
    for i in 0..count {
        let _ = write!(
            text,
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bulk-{i:05}\n  namespace: bulk\ndata:\n  index: \"{i}\"\n  payload: \"{}\"\n",
            "x".repeat(64)
        );
    }
    text
}

const BULK_NAMESPACE: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: bulk\n";

/// The Argo CD fixture plus `count` ConfigMaps, with a tazuna.yaml that
/// applies them without readiness waits (kubectl does not wait either).
fn write_fixture(root: &Path, work: &Path, count: usize) -> anyhow::Result<PathBuf> {
    let dir = work.join("fixture");
    write_sources(root, &dir, count)?;
    std::fs::write(
        dir.join("tazuna.yaml"),
        "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n    - name: argocd\n      type: manifests\n      path: argo-cd/*.yaml\n      namespace: argocd\n      wait: false\n    - name: bulk\n      type: manifests\n      path: bulk/*.yaml\n      wait: false\n",
    )?;
    Ok(dir)
}

fn write_fixture_only_configmaps(dir: &Path, count: usize) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir.join("bulk"))?;
    std::fs::write(dir.join("bulk/namespace.yaml"), BULK_NAMESPACE)?;
    std::fs::write(dir.join("bulk/configmaps.yaml"), configmaps(count))?;
    std::fs::write(
        dir.join("tazuna.yaml"),
        "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n    - name: bulk\n      type: manifests\n      path: bulk/*.yaml\n      wait: false\n",
    )?;
    Ok(dir.to_owned())
}
