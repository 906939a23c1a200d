//! `cargo xtask bench`: Tazuna beside the tools its users would pick
//! instead, on the same workloads, in one run, on fresh harness clusters.
//!
//! Each (workload, tool, round) gets a fresh control plane, so every tool
//! does day one; then the same tool re-applies (the no-op). On the bulk
//! workloads Tazuna's `plan`, `status` and `state drift` are measured too,
//! beside `kubectl diff --server-side`. What is recorded, per run: wall time,
//! the client's CPU and peak RSS, the control plane's CPU, and the client's
//! API requests by verb from the API server's audit log.
//!
//! The peers: the harness's kubectl, the pinned helm and helmfile, Flux's
//! source-controller and kustomize-controller (see `flux.rs`), and the floor:
//! `engine/kube/examples/ssa_floor.rs`, kube-rs sending the same server-side
//! apply requests with no Tazuna logic. Results go to
//! `target/bench/results.json` as they come; the report
//! (`docs/benchmarks.md` between its markers, and `docs/benchmarks.svg`) is
//! made from that file, so `--report-only` can redo it without running.

mod flux;
pub(crate) mod measure;
mod profile;
mod report;
mod workloads;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};
use clap::Args;
use tazuna_controlplane::{Assets, Cluster, Tool as Binary};
use tazuna_tests::registry::Registry;

use measure::{Agents, Mark, Sample, run_timed};
pub(crate) use measure::{children_cpu, control_plane_cpu, fresh, tempfile_dir};
pub(crate) use workloads::configmaps;
use workloads::{Kind, Workload};

/// Tazuna beside kubectl, helm, helmfile, Flux and a minimal kube-rs client.
#[derive(Debug, Args)]
pub struct Bench {
    /// One round of the smallest bulk workload and of the DAG, no profile,
    /// report under target/bench/ only: a check that fits CI.
    #[arg(long)]
    quick: bool,
    /// Rounds per (workload, tool); medians and ranges are reported.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// ConfigMap counts of the bulk workload (the growth curve).
    #[arg(long, value_delimiter = ',', default_values_t = [100, 1000, 10_000])]
    sizes: Vec<usize>,
    /// Only these workloads: bulk, charts, helmfile, dag (default: all).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Skip the callgrind profile of Tazuna's slowest workload.
    #[arg(long)]
    no_profile: bool,
    /// Requests the floor keeps in flight; by default it is calibrated on the
    /// 1,000-ConfigMap workload (8 to 256) and the fastest is kept.
    #[arg(long)]
    floor_concurrency: Option<usize>,
    /// Make the report from target/bench/results.json without running anything.
    #[arg(long)]
    report_only: bool,
}

/// A tool measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tool {
    Tazuna,
    Kubectl,
    Helm,
    Helmfile,
    Flux,
    Floor,
}

impl Tool {
    pub const ALL: [Tool; 6] = [
        Tool::Tazuna,
        Tool::Kubectl,
        Tool::Helm,
        Tool::Helmfile,
        Tool::Flux,
        Tool::Floor,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Tool::Tazuna => "tazuna",
            Tool::Kubectl => "kubectl",
            Tool::Helm => "helm",
            Tool::Helmfile => "helmfile",
            Tool::Flux => "flux",
            Tool::Floor => "floor",
        }
    }

    /// What the tool runs, as the report names it.
    pub fn label(self) -> &'static str {
        match self {
            Tool::Tazuna => "`tazuna apply`",
            Tool::Kubectl => "`kubectl apply --server-side`",
            Tool::Helm => "`helm upgrade --install --wait`",
            Tool::Helmfile => "`helmfile sync`",
            Tool::Flux => "Flux (source- and kustomize-controller)",
            Tool::Floor => "floor: kube-rs SSA only",
        }
    }

    fn agents(self) -> Agents {
        match self {
            Tool::Tazuna => Agents(&["tazuna/"]),
            Tool::Kubectl => Agents(&["kubectl/"]),
            Tool::Helm | Tool::Helmfile => Agents(&["Helm/", "helm/", "helmfile"]),
            Tool::Flux => Agents(&["source-controller/", "kustomize-controller/"]),
            Tool::Floor => Agents(&["ssa-floor"]),
        }
    }
}

/// What one (workload, tool, round) measured.
#[derive(Clone, Debug, Default)]
pub struct Record {
    pub workload: String,
    pub tool: String,
    pub round: usize,
    /// `apply`, `noop`, `plan`, `drift`, `status`.
    pub step: String,
    pub sample: Sample,
}

/// Everything a run of the benchmark needs.
struct Env {
    root: PathBuf,
    work: PathBuf,
    tazuna: PathBuf,
    floor: PathBuf,
    assets: Assets,
    registry: Option<Registry>,
    floor_concurrency: usize,
    records: Vec<Record>,
}

impl Bench {
    pub fn run(mut self) -> anyhow::Result<()> {
        let root = crate::shell::root();
        let out = root.join("target/bench");
        std::fs::create_dir_all(&out)?;
        let results = out.join("results.json");
        if self.quick {
            self.rounds = 1;
            self.sizes = vec![100];
            self.no_profile = true;
            if self.only.is_empty() {
                self.only = vec!["bulk".into(), "dag".into()];
            }
        }
        if self.report_only {
            let (records, meta) = report::load(&results)?;
            return report::write(&root, &out, &records, &meta, self.quick);
        }
        let kinds = self.kinds()?;
        // --quick checks the driver, not the figures: it takes the dev
        // build that `cargo test` has made already, and says so.
        let (profile_flag, profile_dir): (&[&str], &str) = if self.quick {
            (&[], "debug")
        } else {
            (&["--release"], "release")
        };
        crate::shell::run(
            crate::shell::cargo(&root)
                .arg("build")
                .args(profile_flag)
                .args(["--locked", "--bin", "tazuna"]),
        )?;
        crate::shell::run(
            crate::shell::cargo(&root)
                .arg("build")
                .args(profile_flag)
                .args(["--locked", "-p", "tazuna-kube", "--example", "ssa_floor"]),
        )?;
        let tazuna = root.join("target").join(profile_dir).join("tazuna");
        let floor = root
            .join("target")
            .join(profile_dir)
            .join("examples/ssa_floor");
        let work = tempfile_dir()?;
        eprintln!("==> writing the workloads into {}", work.display());
        let workloads = workloads::write_all(&root, &work, &kinds)?;
        let needs_flux = workloads.iter().any(|w| w.tools().contains(&Tool::Flux));
        let registry = if needs_flux {
            flux::source_dir()?;
            flux::kustomize_dir()?;
            Some(Registry::start()?)
        } else {
            None
        };
        let mut env = Env {
            root: root.clone(),
            work,
            tazuna,
            floor,
            assets: Assets::locate(),
            registry,
            floor_concurrency: self.floor_concurrency.unwrap_or(32),
            records: Vec::new(),
        };
        let mut meta = report::Meta::now(&env.root, self.rounds)?;
        if self.floor_concurrency.is_none() && !self.quick {
            let (best, tried) = env.calibrate_floor()?;
            env.floor_concurrency = best;
            meta.floor_calibration = tried;
        }
        meta.floor_concurrency = env.floor_concurrency;
        for workload in &workloads {
            for round in 0..self.rounds {
                // Rotate the order, so no tool always runs first after a build.
                let tools = workload.tools();
                for k in 0..tools.len() {
                    let tool = tools[(k + round) % tools.len()];
                    eprintln!(
                        "==> {} · {} · round {}/{}",
                        workload.id,
                        tool.id(),
                        round + 1,
                        self.rounds
                    );
                    env.measure(workload, tool, round)
                        .with_context(|| format!("{} on {}", tool.id(), workload.id))?;
                    report::save(&results, &env.records, &meta)?;
                }
            }
        }
        if !self.no_profile {
            meta.profile = Some(profile::run(&env, &workloads)?);
        }
        report::save(&results, &env.records, &meta)?;
        report::write(&root, &out, &env.records, &meta, self.quick)
    }

    fn kinds(&self) -> anyhow::Result<Vec<Kind>> {
        let all = ["bulk", "charts", "helmfile", "dag"];
        for name in &self.only {
            if !all.contains(&name.as_str()) {
                bail!(
                    "unknown workload `{name}` in --only\nhint: pick from {}",
                    all.join(", ")
                );
            }
        }
        let wanted = |name: &str| self.only.is_empty() || self.only.iter().any(|o| o == name);
        let mut kinds = Vec::new();
        if wanted("bulk") {
            kinds.extend(self.sizes.iter().map(|&n| Kind::Bulk(n)));
        }
        if wanted("charts") {
            kinds.push(Kind::Charts);
        }
        if wanted("helmfile") {
            kinds.push(Kind::Helmfile);
        }
        if wanted("dag") {
            kinds.push(Kind::Dag);
        }
        Ok(kinds)
    }
}

impl Env {
    fn record(
        &mut self,
        workload: &Workload,
        tool: Tool,
        round: usize,
        step: &str,
        sample: Sample,
    ) {
        eprintln!(
            "    {step}: {:.2} s, client {:.2} s CPU / {:.0} MiB, control plane {:.2} s CPU, {} requests, {} writes (+{} own)",
            sample.wall,
            sample.client_cpu,
            sample.rss_mib,
            sample.server_cpu,
            sample.requests(),
            sample.writes,
            sample.bookkeeping_writes
        );
        self.records.push(Record {
            workload: workload.id.clone(),
            tool: tool.id().to_owned(),
            round,
            step: step.to_owned(),
            sample,
        });
    }

    /// Day one on a fresh cluster, then the no-op; plan, status and drift
    /// where the workload has them.
    fn measure(&mut self, workload: &Workload, tool: Tool, round: usize) -> anyhow::Result<()> {
        let cluster = fresh(&format!("bench-{}-{}", tool.id(), round))?;
        match tool {
            Tool::Flux => return self.measure_flux(workload, &cluster, round),
            Tool::Tazuna => {
                // Each round is a new cluster with a new identity.
                let _ = std::fs::remove_file(workload.dir.join("tazuna.lock"));
            }
            _ => {}
        }
        let apply = self.timed(&cluster, workload, tool, Step::Apply)?;
        self.record(workload, tool, round, "apply", apply);
        let noop = self.timed(&cluster, workload, tool, Step::Apply)?;
        self.record(workload, tool, round, "noop", noop);
        if matches!(workload.kind, Kind::Bulk(_)) && matches!(tool, Tool::Tazuna | Tool::Kubectl) {
            let plan = self.timed(&cluster, workload, tool, Step::Plan)?;
            self.record(workload, tool, round, "plan", plan);
            if tool == Tool::Tazuna {
                let status = self.timed(&cluster, workload, tool, Step::Status)?;
                self.record(workload, tool, round, "status", status);
            }
            make_drift(&cluster)?;
            let drift = self.timed(&cluster, workload, tool, Step::Drift)?;
            self.record(workload, tool, round, "drift", drift);
        }
        Ok(())
    }

    /// Runs one step of a command-line tool, measured.
    fn timed(
        &self,
        cluster: &Cluster,
        workload: &Workload,
        tool: Tool,
        step: Step,
    ) -> anyhow::Result<Sample> {
        let commands = self.commands(cluster, workload, tool, step)?;
        let mark = Mark::now(cluster, &[])?;
        // A diff that finds what the drift step changed exits non-zero.
        let expect = match (tool, step) {
            (Tool::Tazuna, Step::Drift) => 2,
            (Tool::Kubectl, Step::Drift) => 1,
            _ => 0,
        };
        let rss = run_parallel(commands, expect)?;
        mark.finish(cluster, tool.agents(), &[], rss, true)
    }

    /// The commands of one step; more than one run side by side.
    fn commands(
        &self,
        cluster: &Cluster,
        workload: &Workload,
        tool: Tool,
        step: Step,
    ) -> anyhow::Result<Vec<Command>> {
        let kubeconfig = cluster.kubeconfig();
        let context = cluster.context();
        Ok(match tool {
            Tool::Tazuna => {
                let mut command = Command::new(&self.tazuna);
                command
                    .current_dir(&workload.dir)
                    .arg("--kubeconfig")
                    .arg(kubeconfig)
                    .arg("--context")
                    .arg(context);
                for (name, binary) in [
                    ("TAZUNA_TOOL_HELM", Binary::Helm),
                    ("TAZUNA_TOOL_HELMFILE", Binary::Helmfile),
                    ("TAZUNA_TOOL_KUSTOMIZE", Binary::Kustomize),
                ] {
                    command.env(name, self.assets.path(binary));
                }
                match step {
                    Step::Apply => command.arg("apply"),
                    Step::Plan => command.arg("plan"),
                    Step::Status => command.arg("status"),
                    Step::Drift => command.args(["state", "drift"]),
                };
                vec![command]
            }
            Tool::Kubectl => match (workload.kind, step) {
                (Kind::Dag, Step::Apply) => vec![self.kubectl_dag(cluster, workload)],
                (_, Step::Apply | Step::Plan | Step::Drift) => {
                    let mut command = cluster.kubectl();
                    if step == Step::Apply {
                        command.args(["apply", "--server-side", "-o", "name"]);
                    } else {
                        command.args(["diff", "--server-side", "--force-conflicts"]);
                    }
                    // Namespaces first: kubectl sends in the order it reads.
                    for file in [
                        "argo-cd/namespace.yaml",
                        "argo-cd/install.yaml",
                        "bulk/namespace.yaml",
                        "bulk/configmaps.yaml",
                    ] {
                        command.arg("-f").arg(workload.objects().join(file));
                    }
                    vec![command]
                }
                (_, Step::Status) => bail!("kubectl has no status step"),
            },
            Tool::Helm => ["cert-manager", "ingress-nginx"]
                .into_iter()
                .map(|chart| {
                    let mut command = Command::new(self.assets.path(Binary::Helm));
                    command
                        .current_dir(&workload.dir)
                        .args(["upgrade", "--install", chart])
                        .arg(format!("charts/{chart}"))
                        .args(["--namespace", chart, "--create-namespace", "--wait"])
                        .args(["--timeout", "300s", "--values"])
                        .arg(format!("{chart}-values.yaml"))
                        .arg("--kubeconfig")
                        .arg(kubeconfig)
                        .arg("--kube-context")
                        .arg(context);
                    command
                })
                .collect(),
            Tool::Helmfile => {
                let mut command = Command::new(self.assets.path(Binary::Helmfile));
                command
                    .current_dir(workload.dir.join("helmfile"))
                    .args(["--helm-binary"])
                    .arg(self.assets.path(Binary::Helm))
                    .args(["--kube-context", context, "sync"])
                    .env("KUBECONFIG", kubeconfig);
                vec![command]
            }
            Tool::Floor => {
                let mut command = Command::new(&self.floor);
                command
                    .arg("--kubeconfig")
                    .arg(kubeconfig)
                    .arg("--context")
                    .arg(context)
                    .arg("--concurrency")
                    .arg(self.floor_concurrency.to_string());
                if workload.waits() {
                    command.arg("--wait");
                }
                command.args(workload.floor_stages());
                vec![command]
            }
            Tool::Flux => bail!("Flux is measured by measure_flux"),
        })
    }

    /// kubectl on the DAG, as a script would: each level applied in one
    /// call, then `kubectl rollout status` on its Deployments, side by side.
    fn kubectl_dag(&self, cluster: &Cluster, workload: &Workload) -> Command {
        let kubectl = Assets::locate().kubectl();
        let mut script = String::from("set -e\n");
        let base = format!(
            "{} --kubeconfig '{}' --context '{}'",
            kubectl.display(),
            cluster.kubeconfig().display(),
            cluster.context()
        );
        for level in 0..workloads::DAG_LEVELS {
            let names: Vec<String> = (0..workloads::DAG_WIDTH)
                .map(|i| workloads::dag_name(level, i))
                .collect();
            let files: Vec<String> = names
                .iter()
                .map(|m| format!("-f '{}'", workload.objects().join(m).display()))
                .collect();
            script.push_str(&format!(
                "{base} apply --server-side -o name {} >/dev/null\n",
                files.join(" ")
            ));
            for m in &names {
                script.push_str(&format!(
                    "{base} -n dag-{m} rollout status deployment/{m} --timeout=300s >/dev/null &\n"
                ));
            }
            script.push_str("for job in $(jobs -p); do wait $job; done\n");
        }
        let mut command = Command::new("bash");
        command.arg("-c").arg(script);
        command
    }

    fn measure_flux(
        &mut self,
        workload: &Workload,
        cluster: &Cluster,
        round: usize,
    ) -> anyhow::Result<()> {
        let registry = self
            .registry
            .as_ref()
            .context("no registry for Flux's artifact")?;
        let oras = self.assets.path(Binary::Oras);
        let url = flux::push_artifact(
            &oras,
            &format!("127.0.0.1:{}", registry.port()),
            workload,
            &self.work,
        )?;
        let mut controllers = flux::Flux::start(cluster, &self.work)?;
        let objects = self.work.join(format!("flux-{}.yaml", workload.id));
        std::fs::write(&objects, flux::objects(workload, &url))?;
        let pids = controllers.pids();

        controllers.reset_peak_rss();
        let mark = Mark::now(cluster, &pids)?;
        workloads::quiet(
            cluster
                .kubectl()
                .args(["apply", "--server-side", "-f"])
                .arg(&objects),
        )?;
        flux::wait_ready(cluster, &mut controllers, None)?;
        let rss = controllers.peak_rss_kib()?;
        let apply = mark.finish(cluster, Tool::Flux.agents(), &pids, rss, false)?;
        self.record(workload, Tool::Flux, round, "apply", apply);

        controllers.reset_peak_rss();
        let at = format!("noop-{round}");
        let mark = Mark::now(cluster, &pids)?;
        workloads::quiet(
            cluster
                .kubectl()
                .args(["annotate", "--overwrite", "-n", "flux-system"])
                .args(["ocirepository,kustomization", "--all"])
                .arg(format!("reconcile.fluxcd.io/requestedAt={at}")),
        )?;
        flux::wait_ready(cluster, &mut controllers, Some(&at))?;
        let rss = controllers.peak_rss_kib()?;
        let noop = mark.finish(cluster, Tool::Flux.agents(), &pids, rss, false)?;
        self.record(workload, Tool::Flux, round, "noop", noop);
        Ok(())
    }

    /// The floor's best concurrency on 1,000 ConfigMaps and Argo CD.
    fn calibrate_floor(&mut self) -> anyhow::Result<(usize, Vec<(usize, f64)>)> {
        let workload = workloads::write_all(
            &self.root,
            &self.work.join("calibrate"),
            &[Kind::Bulk(1000)],
        )?
        .remove(0);
        let mut tried = Vec::new();
        for concurrency in [8, 16, 32, 64, 128, 256] {
            eprintln!("==> floor calibration: {concurrency} in flight");
            self.floor_concurrency = concurrency;
            let cluster = fresh(&format!("bench-floor-{concurrency}"))?;
            let sample = self.timed(&cluster, &workload, Tool::Floor, Step::Apply)?;
            eprintln!("    {:.2} s", sample.wall);
            tried.push((concurrency, sample.wall));
        }
        let best = tried
            .iter()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map_or(32, |t| t.0);
        eprintln!("==> the floor keeps {best} requests in flight");
        Ok((best, tried))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Apply,
    Plan,
    Status,
    Drift,
}

/// Runs commands side by side to completion, each to exit with `expect`;
/// the largest peak RSS, KiB.
fn run_parallel(commands: Vec<Command>, expect: i32) -> anyhow::Result<u64> {
    let handles: Vec<_> = commands
        .into_iter()
        .map(|mut command| {
            std::thread::spawn(move || {
                let what = format!("{command:?}");
                run_timed(&mut command, &what, expect)
            })
        })
        .collect();
    let mut peak = 0;
    for handle in handles {
        peak = peak.max(handle.join().expect("the runner thread panicked")?);
    }
    Ok(peak)
}

/// Changes ten ConfigMaps and one Deployment behind the tools' backs, as
/// another field manager: the drift the drift step must find.
fn make_drift(cluster: &Cluster) -> anyhow::Result<()> {
    for i in 0..10 {
        let mut one = cluster.kubectl();
        one.args(["-n", "bulk", "patch", "configmap", &format!("bulk-{i:05}")])
            .args([
                "--type=merge",
                "-p",
                "{\"data\":{\"payload\":\"changed by hand\"}}",
            ]);
        workloads::quiet(&mut one)?;
    }
    workloads::quiet(cluster.kubectl().args([
        "-n",
        "argocd",
        "scale",
        "deployment",
        "argocd-server",
        "--replicas=3",
    ]))?;
    Ok(())
}

/// The Argo CD fixture in `dir/argo-cd/` and `count` ConfigMaps in `dir/bulk/`
/// (the fleet benchmark's sources).
pub(crate) fn write_sources(root: &Path, dir: &Path, count: usize) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir.join("argo-cd"))?;
    std::fs::create_dir_all(dir.join("bulk"))?;
    for file in ["install.yaml", "namespace.yaml"] {
        std::fs::copy(
            root.join("examples/quickstart/argo-cd").join(file),
            dir.join("argo-cd").join(file),
        )?;
    }
    std::fs::write(
        dir.join("bulk/namespace.yaml"),
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: bulk\n",
    )?;
    std::fs::write(dir.join("bulk/configmaps.yaml"), configmaps(count))?;
    Ok(())
}
