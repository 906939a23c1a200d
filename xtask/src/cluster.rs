//! `cargo xtask cluster up|down|list`: harness control planes (tazuna-tests) that
//! outlive the command, for trying Tazuna by hand. Each cluster keeps its data, logs
//! and state under `~/.cache/tazuna-dev/clusters/<name>/`, and its context is merged
//! into one kubeconfig (`~/.cache/tazuna-dev/kubeconfig` unless `--kubeconfig`), so
//! that `staging` and `production` live side by side.

use std::fs;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use tazuna_controlplane::{ClusterConfig, ClusterState, assets, kubeconfig};

/// Start, stop and list local harness clusters.
#[derive(Args)]
pub struct ClusterArgs {
    #[command(subcommand)]
    command: ClusterCommand,
}

#[derive(Subcommand)]
enum ClusterCommand {
    /// Start a control plane (etcd, kube-apiserver, kube-controller-manager,
    /// kube-scheduler, kwok) on free loopback ports and merge its context into the
    /// kubeconfig.
    Up {
        /// The cluster name, which is also its context name.
        #[arg(long, default_value = "tazuna")]
        name: String,
        /// The number of fake Nodes.
        #[arg(long, default_value_t = 1)]
        nodes: usize,
        /// The kubeconfig to merge the context into.
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
    },
    /// Stop a cluster, remove its data and its kubeconfig entries.
    Down {
        /// The cluster name.
        #[arg(long, default_value = "tazuna", conflicts_with = "all")]
        name: String,
        /// Stop every cluster.
        #[arg(long)]
        all: bool,
        /// The kubeconfig to remove the context from.
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
    },
    /// List the clusters, whether they run, and their memory.
    List,
}

impl ClusterArgs {
    pub fn run(self) -> anyhow::Result<()> {
        match self.command {
            ClusterCommand::Up {
                name,
                nodes,
                kubeconfig,
            } => up(&name, nodes, &kubeconfig.unwrap_or_else(default_kubeconfig)),
            ClusterCommand::Down {
                name,
                all,
                kubeconfig,
            } => {
                let kubeconfig = kubeconfig.unwrap_or_else(default_kubeconfig);
                if all {
                    for state in states()? {
                        down(&state.name, &kubeconfig)?;
                    }
                    Ok(())
                } else {
                    down(&name, &kubeconfig)
                }
            }
            ClusterCommand::List => list(),
        }
    }
}

fn clusters_dir() -> PathBuf {
    assets::cache_dir().join("clusters")
}

pub fn default_kubeconfig() -> PathBuf {
    assets::cache_dir().join("kubeconfig")
}

pub fn up(name: &str, nodes: usize, kubeconfig: &std::path::Path) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let dir = clusters_dir().join(name);
    let cluster = ClusterConfig::new(name).nodes(nodes).dir(&dir).start()?;
    kubeconfig::merge_into(kubeconfig, cluster.kubeconfig_entry())?;
    let log_dir = cluster.log_dir();
    let state = cluster.detach()?;
    println!(
        "cluster `{name}` is up at {} ({nodes} fake node{}, {:.1}s)",
        state.server,
        if nodes == 1 { "" } else { "s" },
        started.elapsed().as_secs_f64()
    );
    for p in &state.processes {
        println!("  {:<24} pid {}", p.name, p.pid);
    }
    println!("  logs:       {}", log_dir.display());
    println!("  kubeconfig: {} (context `{name}`)", kubeconfig.display());
    println!();
    println!("  export KUBECONFIG={}", kubeconfig.display());
    println!("  kubectl --context {name} get nodes");
    println!("  cargo xtask cluster down --name {name}");
    Ok(())
}

pub fn down(name: &str, kubeconfig: &std::path::Path) -> anyhow::Result<()> {
    let dir = clusters_dir().join(name);
    let state = ClusterState::load(&dir).with_context(|| {
        format!("no cluster `{name}`\nhint: `cargo xtask cluster list` shows the clusters")
    })?;
    state.stop()?;
    kubeconfig::remove_from(kubeconfig, name)?;
    println!("cluster `{name}` is down; its data is removed");
    Ok(())
}

fn states() -> anyhow::Result<Vec<ClusterState>> {
    let dir = clusters_dir();
    let mut states = Vec::new();
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(states),
        Err(e) => return Err(e).with_context(|| format!("reading `{}`", dir.display())),
    };
    for entry in entries {
        let path = entry?.path();
        if let Ok(state) = ClusterState::load(&path) {
            states.push(state);
        }
    }
    states.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(states)
}

fn list() -> anyhow::Result<()> {
    let states = states()?;
    if states.is_empty() {
        println!("no clusters (start one with `cargo xtask cluster up --name NAME`)");
        return Ok(());
    }
    println!("{:<16} {:<28} {:<10} RSS", "NAME", "SERVER", "RUNNING");
    for state in states {
        let running = state.running().len();
        let rss: u64 = state.rss().iter().map(|(_, bytes)| bytes).sum();
        println!(
            "{:<16} {:<28} {:<10} {} MiB",
            state.name,
            state.server,
            format!("{running}/{}", state.processes.len()),
            rss / (1024 * 1024)
        );
    }
    Ok(())
}
