//! Child processes of the harness: each one writes stdout and stderr to its own log
//! file, runs in its own process group (a Ctrl-C in the terminal of `cargo xtask
//! cluster up` does not reach it), and can be stopped by pid from another process.
//!
//! A test process that dies without unwinding (SIGKILL, `abort`) cannot drop its
//! guards, and `unsafe_code` rules out `PR_SET_PDEATHSIG`, so every process-owned
//! cluster or registry gets a watchdog: a `sh` loop that waits for the test process to
//! exit and then kills what it left behind and removes its data.

use std::fs::{self, File};
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::Context as _;

/// One running child process with its log file.
#[derive(Debug)]
pub struct Process {
    name: String,
    child: Child,
    log: PathBuf,
}

impl Process {
    /// Starts `command`, sending both output streams to `log`.
    pub fn spawn(name: &str, mut command: Command, log: &Path) -> anyhow::Result<Process> {
        if let Some(parent) = log.parent() {
            fs::create_dir_all(parent)?;
        }
        let out = File::create(log).with_context(|| format!("creating `{}`", log.display()))?;
        let err = out.try_clone()?;
        command.stdin(Stdio::null()).stdout(out).stderr(err);
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let child = command
            .spawn()
            .with_context(|| format!("starting {name} (`{}`)", command.get_program().display()))?;
        Ok(Process {
            name: name.to_owned(),
            child,
            log: log.to_owned(),
        })
    }

    /// The component name (`etcd`, `kube-apiserver`, ...).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The log file.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// Fails if the process has exited, with the tail of its log.
    pub fn check_running(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            anyhow::bail!(
                "{} exited early ({status}); the end of `{}`:\n{}",
                self.name,
                self.log.display(),
                tail(&self.log, 30)
            );
        }
        Ok(())
    }

    /// Kills the process and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Leaves the process running after this value is dropped; returns its pid.
    pub fn detach(self) -> u32 {
        let pid = self.child.id();
        // Dropping a `Child` neither kills nor waits for it.
        drop(self.child);
        pid
    }
}

/// Kills a process that this process did not start (it may be another's child), after
/// checking from `/proc` that `pid` still runs `exe`, so that a reused pid is left alone.
pub fn kill_pid(pid: u32, exe: &Path) -> bool {
    if !runs(pid, exe) {
        return false;
    }
    let _ = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .stderr(Stdio::null())
        .status();
    // Not our child, so it cannot be reaped here; wait until it is gone or a zombie.
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline && alive(pid) {
        thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Whether `pid` is a live (non-zombie) process.
pub fn alive(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// Whether `pid` is alive and runs the binary `exe`.
pub fn runs(pid: u32, exe: &Path) -> bool {
    if !alive(pid) {
        return false;
    }
    match fs::read_link(format!("/proc/{pid}/exe")) {
        Ok(actual) => {
            let actual = actual.to_string_lossy();
            let actual = actual.trim_end_matches(" (deleted)");
            let want = fs::canonicalize(exe).unwrap_or_else(|_| exe.to_owned());
            Path::new(actual) == want || Path::new(actual).file_name() == exe.file_name()
        }
        Err(_) => false,
    }
}

/// The resident set size of `pid` in bytes (`VmRSS` in `/proc/<pid>/status`).
pub fn rss_bytes(pid: u32) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The last `lines` lines of a log file (reads at most the last 64 KiB).
pub fn tail(path: &Path, lines: usize) -> String {
    let Ok(mut file) = File::open(path) else {
        return format!("(no log at `{}`)", path.display());
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(64 * 1024);
    let _ = file.seek(SeekFrom::Start(start));
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Starts a watchdog that, once process `owner` has exited, kills `pids` and removes
/// `dir`. Returns the watchdog, which the owner kills when it cleans up by itself.
pub fn watchdog(owner: u32, pids: &[u32], dir: &Path) -> anyhow::Result<Process> {
    let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
    let script = format!(
        "while kill -0 {owner} 2>/dev/null; do sleep 1; done; kill -KILL {} 2>/dev/null; \
         sleep 1; rm -rf -- \"$1\"",
        pids.join(" ")
    );
    let mut command = Command::new("sh");
    command
        .args(["-c", &script, "tazuna-tests-watchdog"])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let child = command.spawn().context("starting the cleanup watchdog")?;
    Ok(Process {
        name: "watchdog".to_owned(),
        child,
        log: PathBuf::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("x.log");
        fs::write(&log, "a\nb\nc\nd\n").unwrap();
        assert_eq!(tail(&log, 2), "c\nd");
        assert_eq!(tail(&log, 10), "a\nb\nc\nd");
    }

    #[test]
    fn this_process_is_alive_and_has_rss() {
        let pid = std::process::id();
        assert!(alive(pid));
        assert!(rss_bytes(pid).unwrap() > 0);
    }

    #[test]
    fn watchdog_cleans_up_after_its_owner() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        fs::create_dir(&data).unwrap();
        let mut owner = Command::new("sleep").arg("1").spawn().unwrap();
        let mut victim = Process::spawn(
            "sleeper",
            {
                let mut c = Command::new("sleep");
                c.arg("60");
                c
            },
            &dir.path().join("sleeper.log"),
        )
        .unwrap();
        let _dog = watchdog(owner.id(), &[victim.pid()], &data).unwrap();
        owner.wait().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline && data.exists() {
            thread::sleep(Duration::from_millis(100));
        }
        assert!(
            !data.exists(),
            "the watchdog did not remove the data directory"
        );
        assert!(
            victim.child.try_wait().unwrap().is_some(),
            "the sleeper still runs"
        );
    }
}
