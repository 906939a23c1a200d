//! A detached cluster's state file: what `cargo xtask cluster up` leaves
//! running, found again to stop it.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::json;

use crate::process::{self};

use super::*;

/// A detached cluster, as recorded in its directory's state file.
#[derive(Clone, Debug)]
pub struct ClusterState {
    /// The cluster (and context) name.
    pub name: String,
    /// `https://127.0.0.1:<port>`.
    pub server: String,
    /// The cluster's directory.
    pub dir: PathBuf,
    /// The cluster's own kubeconfig.
    pub kubeconfig: PathBuf,
    /// The components.
    pub processes: Vec<ProcessState>,
}

/// One component of a detached cluster.
#[derive(Clone, Debug)]
pub struct ProcessState {
    /// `etcd`, `kube-apiserver`, ...
    pub name: String,
    /// Its pid.
    pub pid: u32,
    /// The binary it runs, to tell it from a process that reused the pid.
    pub exe: PathBuf,
}

impl ClusterState {
    /// Reads the state file of the cluster in `dir`.
    pub fn load(dir: &Path) -> anyhow::Result<ClusterState> {
        let path = dir.join(STATE_FILE);
        let text =
            fs::read_to_string(&path).with_context(|| format!("reading `{}`", path.display()))?;
        let value: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("invalid state file `{}`", path.display()))?;
        let field = |k: &str| -> anyhow::Result<String> {
            value[k]
                .as_str()
                .map(str::to_owned)
                .with_context(|| format!("`{}` has no `{k}`", path.display()))
        };
        let processes = value["processes"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|p| {
                        Some(ProcessState {
                            name: p["name"].as_str()?.to_owned(),
                            pid: u32::try_from(p["pid"].as_u64()?).ok()?,
                            exe: PathBuf::from(p["exe"].as_str()?),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(ClusterState {
            name: field("name")?,
            server: field("server")?,
            dir: dir.to_owned(),
            kubeconfig: PathBuf::from(field("kubeconfig")?),
            processes,
        })
    }

    pub(super) fn save(&self) -> anyhow::Result<()> {
        let value = json!({
            "name": self.name,
            "server": self.server,
            "kubeconfig": self.kubeconfig.display().to_string(),
            "processes": self.processes.iter().map(|p| json!({
                "name": p.name,
                "pid": p.pid,
                "exe": p.exe.display().to_string(),
            })).collect::<Vec<_>>(),
        });
        let path = self.dir.join(STATE_FILE);
        fs::write(&path, serde_json::to_string_pretty(&value)? + "\n")
            .with_context(|| format!("writing `{}`", path.display()))
    }

    /// Whether any of its components still runs.
    pub fn is_running(&self) -> bool {
        self.processes.iter().any(|p| process::runs(p.pid, &p.exe))
    }

    /// The components that still run.
    pub fn running(&self) -> Vec<&ProcessState> {
        self.processes
            .iter()
            .filter(|p| process::runs(p.pid, &p.exe))
            .collect()
    }

    /// The resident set size of each running component in bytes.
    pub fn rss(&self) -> Vec<(String, u64)> {
        self.running()
            .into_iter()
            .map(|p| (p.name.clone(), process::rss_bytes(p.pid).unwrap_or(0)))
            .collect()
    }

    /// Kills the components (etcd last) and removes the cluster's directory.
    pub fn stop(self) -> anyhow::Result<()> {
        for p in self.processes.iter().rev() {
            process::kill_pid(p.pid, &p.exe);
        }
        fs::remove_dir_all(&self.dir).with_context(|| format!("removing `{}`", self.dir.display()))
    }
}
