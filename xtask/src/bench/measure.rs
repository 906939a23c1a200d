//! What one run of a tool cost: wall time, the client's CPU and peak RSS,
//! the control plane's CPU, and the API requests the client sent, by verb,
//! from the API server's audit log (not from the tool).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, bail};
use tazuna_controlplane::{Cluster, ClusterConfig};

/// One measured run.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    /// Seconds from start to done.
    pub wall: f64,
    /// CPU seconds of the client's processes.
    pub client_cpu: f64,
    /// CPU seconds of the control plane's processes.
    pub server_cpu: f64,
    /// Peak resident set of the client, in MiB (the largest process).
    pub rss_mib: f64,
    /// Requests by verb (`patch`, `get`, ...), dry runs as `patch (dry run)`.
    pub verbs: BTreeMap<String, usize>,
    /// Writes to the workload's objects.
    pub writes: usize,
    /// Writes to the tool's own records: leases, events, status of its own
    /// objects, Helm's release Secrets, Tazuna's state.
    pub bookkeeping_writes: usize,
}

impl Sample {
    pub fn requests(&self) -> usize {
        self.verbs.values().sum()
    }
}

/// The user agents a tool's requests carry.
#[derive(Clone, Copy, Debug)]
pub struct Agents(pub &'static [&'static str]);

/// Where a measurement starts: the audit log's length and the CPU counters.
pub struct Mark {
    audit_lines: usize,
    server_cpu: f64,
    children_cpu: f64,
    extra_cpu: f64,
    started: Instant,
}

impl Mark {
    pub fn now(cluster: &Cluster, extra: &[u32]) -> anyhow::Result<Mark> {
        Ok(Mark {
            audit_lines: audit_lines(cluster).len(),
            server_cpu: control_plane_cpu(cluster)?,
            children_cpu: children_cpu()?,
            extra_cpu: pids_cpu(extra)?,
            started: Instant::now(),
        })
    }

    /// Ends the measurement: the wall time is taken now, the requests from
    /// the audit log once the API server has written them.
    pub fn finish(
        self,
        cluster: &Cluster,
        agents: Agents,
        extra: &[u32],
        rss_kib: u64,
        children: bool,
    ) -> anyhow::Result<Sample> {
        let wall = self.started.elapsed().as_secs_f64();
        let server_cpu = control_plane_cpu(cluster)? - self.server_cpu;
        let children = if children {
            children_cpu()? - self.children_cpu
        } else {
            0.0
        };
        let client_cpu = children + pids_cpu(extra)? - self.extra_cpu;
        // The audit log is written as responses complete.
        std::thread::sleep(std::time::Duration::from_millis(400));
        let lines = audit_lines(cluster);
        let mut sample = Sample {
            wall,
            client_cpu,
            server_cpu,
            rss_mib: rss_kib as f64 / 1024.0,
            ..Sample::default()
        };
        for line in lines.iter().skip(self.audit_lines) {
            let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let agent = event["userAgent"].as_str().unwrap_or_default();
            if !agents.0.iter().any(|a| agent.starts_with(a)) {
                continue;
            }
            let verb = event["verb"].as_str().unwrap_or_default();
            let dry_run = event["requestURI"]
                .as_str()
                .is_some_and(|u| u.contains("dryRun="));
            let key = if dry_run {
                format!("{verb} (dry run)")
            } else {
                verb.to_owned()
            };
            *sample.verbs.entry(key).or_default() += 1;
            if dry_run
                || !matches!(
                    verb,
                    "create" | "update" | "patch" | "delete" | "deletecollection"
                )
            {
                continue;
            }
            if is_bookkeeping(&event) {
                sample.bookkeeping_writes += 1;
            } else {
                sample.writes += 1;
            }
        }
        Ok(sample)
    }
}

/// Whether a write is to the tool's own records rather than the workload.
fn is_bookkeeping(event: &serde_json::Value) -> bool {
    let object = &event["objectRef"];
    let resource = object["resource"].as_str().unwrap_or_default();
    let name = object["name"].as_str().unwrap_or_default();
    matches!(
        resource,
        "leases" | "events" | "kustomizations" | "ocirepositories"
    ) || object["subresource"].as_str() == Some("status")
        || object["namespace"].as_str() == Some("tazuna")
        || (resource == "secrets" && name.starts_with("sh.helm.release."))
}

fn audit_lines(cluster: &Cluster) -> Vec<String> {
    std::fs::read_to_string(cluster.audit_log())
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Runs `command` to completion under `/usr/bin/time`, for the peak RSS of
/// its largest process; its stdout is dropped, its stderr kept for errors.
/// `expect` is the exit code that counts as success (a diff that found one
/// exits 1 or 2).
pub fn run_timed(command: &mut Command, what: &str, expect: i32) -> anyhow::Result<u64> {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let report = tempfile_dir()?.join(format!("time-{run}"));
    let program = command.get_program().to_owned();
    let args: Vec<_> = command.get_args().map(ToOwned::to_owned).collect();
    let mut timed = Command::new("/usr/bin/time");
    timed
        .args(["-f", "%M", "-o"])
        .arg(&report)
        .arg(program)
        .args(args);
    if let Some(dir) = command.get_current_dir() {
        timed.current_dir(dir);
    }
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => timed.env(key, value),
            None => timed.env_remove(key),
        };
    }
    let out = timed
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .context("running /usr/bin/time (Debian package `time`)")?;
    let text = std::fs::read_to_string(&report).unwrap_or_default();
    if out.status.code() != Some(expect) {
        bail!(
            "{what} failed ({}):\n{}",
            out.status,
            tail(&String::from_utf8_lossy(&out.stderr), 20)
        );
    }
    text.lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .with_context(|| format!("no peak RSS from /usr/bin/time for {what}: {text}"))
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// `utime + stime` of the cluster's processes, in seconds.
pub(crate) fn control_plane_cpu(cluster: &Cluster) -> anyhow::Result<f64> {
    pids_cpu(
        &cluster
            .processes()
            .iter()
            .map(|(_, pid)| *pid)
            .collect::<Vec<_>>(),
    )
}

/// `utime + stime` of running processes, in seconds.
pub(crate) fn pids_cpu(pids: &[u32]) -> anyhow::Result<f64> {
    let mut total = 0.0;
    for pid in pids {
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

/// Peak RSS of a running process since its last reset, in KiB.
pub(crate) fn peak_rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmHWM")
}

/// Resets a process's peak RSS to its current RSS.
pub(crate) fn reset_peak_rss(pid: u32) {
    let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
}

/// A fresh harness cluster.
pub(crate) fn fresh(name: &str) -> anyhow::Result<Cluster> {
    ClusterConfig::new(name).start()
}

/// This run's scratch directory.
pub(crate) fn tempfile_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("tazuna-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Waits until `check` holds, polling every 100 ms, for at most `seconds`.
pub(crate) fn poll(
    seconds: u64,
    what: &str,
    mut check: impl FnMut() -> anyhow::Result<bool>,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + std::time::Duration::from_secs(seconds);
    loop {
        if check()? {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("timed out after {seconds} s waiting for {what}");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The median and range of `values`.
pub fn stats(values: &[f64]) -> (f64, f64, f64) {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = if sorted.is_empty() {
        f64::NAN
    } else if sorted.len() % 2 == 1 {
        sorted[sorted.len() / 2]
    } else {
        (sorted[sorted.len() / 2 - 1] + sorted[sorted.len() / 2]) / 2.0
    };
    let min = sorted.first().copied().unwrap_or(f64::NAN);
    let max = sorted.last().copied().unwrap_or(f64::NAN);
    (median, min, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(stats(&[4.0, 1.0, 3.0, 2.0]), (2.5, 1.0, 4.0));
        assert_eq!(stats(&[3.0, 1.0, 2.0]), (2.0, 1.0, 3.0));
    }

    #[test]
    fn writes_to_a_tools_own_records_are_bookkeeping() {
        let event = |resource: &str, name: &str, subresource: Option<&str>| {
            serde_json::json!({"objectRef": {"resource": resource, "name": name,
                "namespace": "x", "subresource": subresource}})
        };
        assert!(is_bookkeeping(&event("leases", "tazuna-lock", None)));
        assert!(is_bookkeeping(&event(
            "secrets",
            "sh.helm.release.v1.a.v2",
            None
        )));
        assert!(is_bookkeeping(&event("deployments", "a", Some("status"))));
        assert!(!is_bookkeeping(&event("secrets", "tls", None)));
        assert!(!is_bookkeeping(&event("configmaps", "bulk-00001", None)));
    }
}
