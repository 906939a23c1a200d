//! `cargo xtask bench-fleet`: three look-alike clusters from one file, side
//! by side in one run: all three in one wave (`tazuna apply --all-clusters`),
//! the same three one after another (`--max-parallel 1`), and each alone on a
//! machine with no other cluster running; reported as ratios.
//!
//! Every apply is day one on fresh harness control planes. The wave's CPU
//! bound is the CPU its three control planes and the client spent, divided
//! by the cores: the shortest any client could take here, as `cargo xtask bench`
//! reports it.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use clap::Args;
use tazuna_controlplane::Cluster;

use crate::bench::{children_cpu, control_plane_cpu, fresh};
use crate::shell::run;

/// Measure a wave of three clusters against the same three one after another
/// and against the slowest alone.
#[derive(Debug, Args)]
pub struct BenchFleet {
    /// ConfigMaps each cluster gets, besides the Argo CD fixture.
    #[arg(long, default_value_t = 300)]
    configmaps: usize,
    /// Rounds; medians are reported.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

const NAMES: [&str; 3] = ["staging", "production", "dr"];

struct Round {
    wave: Duration,
    wave_cpu: f64,
    sequence: Duration,
    alone: [Duration; 3],
}

impl BenchFleet {
    /// Run it and print a Markdown report.
    pub fn run(self) -> anyhow::Result<()> {
        let root = crate::shell::root();
        let tazuna = crate::plugins::release_cli(&root, None)?;
        let work = crate::bench::tempfile_dir()?.join("fleet");
        crate::bench::write_sources(&root, &work, self.configmaps)?;
        let mut rounds = Vec::new();
        for round in 0..self.rounds {
            eprintln!("==> round {}/{}", round + 1, self.rounds);
            rounds.push(self.round(round, &tazuna, &work)?);
        }
        let median = |f: &dyn Fn(&Round) -> f64| {
            let mut values: Vec<f64> = rounds.iter().map(f).collect();
            values.sort_by(f64::total_cmp);
            values[values.len() / 2]
        };
        let range = |f: &dyn Fn(&Round) -> f64| {
            let values: Vec<f64> = rounds.iter().map(f).collect();
            let min = values.iter().copied().fold(f64::INFINITY, f64::min);
            let max = values.iter().copied().fold(0.0, f64::max);
            format!("{min:.2}–{max:.2} s")
        };
        let slowest = |r: &Round| {
            r.alone
                .iter()
                .map(Duration::as_secs_f64)
                .fold(0.0, f64::max)
        };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let wave = median(&|r| r.wave.as_secs_f64());
        let sequence = median(&|r| r.sequence.as_secs_f64());
        let alone = median(&slowest);
        let bound = median(&|r| r.wave_cpu) / cores;
        let mut report = String::new();
        writeln!(
            report,
            "Three clusters, each the Argo CD fixture + {} ConfigMaps ({} objects); {} rounds, medians; {cores} cores.",
            self.configmaps,
            60 + 1 + self.configmaps + 1,
            rounds.len()
        )?;
        writeln!(report)?;
        writeln!(report, "| What | time | range | wave's ratio to it |")?;
        writeln!(report, "|---|---|---|---|")?;
        writeln!(
            report,
            "| one wave: `apply --all-clusters` | {wave:.2} s | {} | |",
            range(&|r| r.wave.as_secs_f64())
        )?;
        writeln!(
            report,
            "| one after another: `--max-parallel 1` | {sequence:.2} s | {} | {:.2}x |",
            range(&|r| r.sequence.as_secs_f64()),
            wave / sequence
        )?;
        writeln!(
            report,
            "| the slowest cluster alone (nothing else running) | {alone:.2} s | {} | {:.2}x |",
            range(&slowest),
            wave / alone
        )?;
        writeln!(
            report,
            "| CPU bound of the wave: CPU of 3 control planes + client / {cores} cores | {bound:.2} s | | {:.2}x |",
            wave / bound
        )?;
        println!("{report}");
        Ok(())
    }

    fn round(&self, round: usize, tazuna: &Path, work: &Path) -> anyhow::Result<Round> {
        // One wave.
        let clusters = start_three(&format!("fw{round}"))?;
        write_file(work, &clusters)?;
        let before = cpu(&clusters)?;
        let wave = timed(tazuna, work, &["apply", "--all-clusters"])?;
        let wave_cpu = cpu(&clusters)? - before;
        drop(clusters);
        // One after another.
        let clusters = start_three(&format!("fs{round}"))?;
        write_file(work, &clusters)?;
        let sequence = timed(
            tazuna,
            work,
            &["apply", "--all-clusters", "--max-parallel", "1"],
        )?;
        drop(clusters);
        // Each alone, with no other control plane running.
        let mut alone = [Duration::ZERO; 3];
        for (i, name) in NAMES.iter().enumerate() {
            let cluster = fresh(&format!("fa{round}-{name}"))?;
            let mut three: Vec<Option<&Cluster>> = vec![None, None, None];
            three[i] = Some(&cluster);
            write_file_partial(work, &three)?;
            alone[i] = timed(tazuna, work, &["apply", "--cluster", name])?;
        }
        Ok(Round {
            wave,
            wave_cpu,
            sequence,
            alone,
        })
    }
}

fn start_three(prefix: &str) -> anyhow::Result<Vec<Cluster>> {
    NAMES
        .iter()
        .map(|name| fresh(&format!("{prefix}-{name}")))
        .collect()
}

/// CPU seconds so far of the clusters' control planes and of this process's
/// reaped children (the client).
fn cpu(clusters: &[Cluster]) -> anyhow::Result<f64> {
    let mut total = children_cpu()?;
    for cluster in clusters {
        total += control_plane_cpu(cluster)?;
    }
    Ok(total)
}

fn timed(tazuna: &Path, dir: &Path, args: &[&str]) -> anyhow::Result<Duration> {
    let started = Instant::now();
    run(Command::new(tazuna)
        .current_dir(dir)
        .env_remove("KUBECONFIG")
        .args(args)
        .stdout(std::process::Stdio::null()))?;
    Ok(started.elapsed())
}

fn write_file(dir: &Path, clusters: &[Cluster]) -> anyhow::Result<()> {
    let three: Vec<Option<&Cluster>> = clusters.iter().map(Some).collect();
    write_file_partial(dir, &three)
}

/// A tazuna.yaml with an environment per cluster that is running (fresh
/// clusters, so no old binding in tazuna.lock).
fn write_file_partial(dir: &Path, clusters: &[Option<&Cluster>]) -> anyhow::Result<()> {
    let _ = std::fs::remove_file(dir.join("tazuna.lock"));
    let mut environments = String::new();
    for (name, cluster) in NAMES.iter().zip(clusters) {
        if let Some(cluster) = cluster {
            let _ = write!(
                environments,
                "    {name}:\n      kubeconfig: {}\n      context: {}\n",
                cluster.kubeconfig().display(),
                cluster.context()
            );
        }
    }
    std::fs::write(
        dir.join("tazuna.yaml"),
        format!(
            "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  environments:\n{environments}  manifests:\n    - name: argocd\n      type: manifests\n      path: argo-cd/*.yaml\n      namespace: argocd\n      wait: false\n    - name: bulk\n      type: manifests\n      path: bulk/*.yaml\n      wait: false\n"
        ),
    )?;
    Ok(())
}
