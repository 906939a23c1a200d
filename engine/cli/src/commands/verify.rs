//! `tazuna verify`: prove the bootstrap procedure on a throwaway control plane.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use tazuna_controlplane::{Assets, ClusterConfig, Tool};

use super::apply::Apply;
use crate::failure::Reported;
use crate::settings::GlobalSettings;
use tazuna_engine::stack::{Access, Writes};

/// Apply the whole file to a throwaway control plane, run every test, and tear it down.
///
/// Starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
/// kwok (fake nodes, so Deployments really become ready) on loopback ports,
/// applies every manifest in order with readiness waits and tests, runs
/// `spec.tests`, prints the result and removes the control plane. Nothing
/// touches a real cluster: the file's `context_matches` and cluster binding
/// are not checked, and `tazuna.lock` is not written.
///
/// The binaries are found like envtest's `KUBEBUILDER_ASSETS`: `--assets` or
/// `TAZUNA_ASSETS` names one directory holding them all; otherwise the cache
/// that `tests/controlplane/install.sh` fills (`~/.cache/tazuna-dev/bin/`).
///
/// kwok runs no containers, so a controller the file installs (External
/// Secrets, cert-manager) never acts. `--controller` runs its binary as a
/// local process against the control plane instead, as its Pod would run it:
/// `KUBECONFIG` names the control plane, and it is started again when it
/// exits, as a kubelet restarts a Pod that crashes until its CRDs exist.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  tazuna verify\n  tazuna verify -e production --assets /opt/k8s/bin\n  tazuna verify --controller 'external-secrets --metrics-addr=127.0.0.1:0'"
)]
pub struct Verify {
    /// The directory holding etcd, kube-apiserver, kube-controller-manager,
    /// kube-scheduler, kwok and kubectl.
    #[arg(long, env = "TAZUNA_ASSETS", value_name = "DIR")]
    assets: Option<PathBuf>,

    /// Fake nodes to start.
    #[arg(long, value_name = "N", default_value_t = 2)]
    nodes: usize,

    /// A controller to run against the control plane while it is up: a
    /// program and its arguments, split at spaces (no shell), with
    /// `KUBECONFIG` set; restarted when it exits. Repeat for more.
    #[arg(long = "controller", value_name = "COMMAND")]
    controllers: Vec<String>,
}

impl Verify {
    /// Run it.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        // Check the file before starting anything.
        super::open(settings, Writes::Persist)?;
        let assets = match &self.assets {
            Some(dir) => Assets::flat(dir),
            None => Assets::locate(),
        };
        let missing = assets.missing(&Tool::CONTROL_PLANE);
        if !missing.is_empty() {
            let names: Vec<String> = missing
                .iter()
                .map(|t| format!("`{}`", t.binary_name()))
                .collect();
            return Err(crate::failure::advised(
                format!(
                    "cannot start a control plane: {} not found in {}",
                    names.join(", "),
                    assets.describe()
                ),
                "run `tests/controlplane/install.sh` from a Tazuna checkout, or point `--assets`/`TAZUNA_ASSETS` at a directory with these binaries",
            ));
        }
        eprintln!(
            "verify: starting a throwaway control plane ({} fake nodes)",
            self.nodes
        );
        let cluster = ClusterConfig::new("tazuna-verify")
            .nodes(self.nodes)
            .assets(assets)
            .start()
            .context("cannot start the throwaway control plane")?;
        let mut target = settings.clone();
        target.connect.kubeconfig = Some(cluster.kubeconfig().to_owned());
        target.connect.context = Some(cluster.context().to_owned());
        let mut running = Vec::new();
        for command in &self.controllers {
            running.push(Controller::start(
                command,
                cluster.kubeconfig(),
                &cluster.log_dir(),
            )?);
        }
        let outcome =
            super::runtime()?.block_on(Apply::defaults().execute(&target, Access::Throwaway));
        let passed = matches!(outcome, Ok(ExitCode::SUCCESS));
        if let Err(error) = &outcome
            && error.downcast_ref::<Reported>().is_none()
        {
            crate::failure::report(error, settings.stderr_color);
        }
        for mut controller in running {
            let said = controller.stop();
            if !passed {
                eprintln!(
                    "verify: the last lines of controller `{}`:\n{said}",
                    controller_name(&controller.command)
                );
            }
        }
        drop(cluster);
        eprintln!("verify: control plane removed");
        if passed {
            eprintln!("verify: passed: every manifest applied, became ready and passed its tests");
            Ok(ExitCode::SUCCESS)
        } else {
            eprintln!("verify: failed");
            Err(Reported.into())
        }
    }
}

/// `command` in a process group of its own (on Unix), so that stopping it
/// stops what it started too.
fn own_group(command: &mut std::process::Command) -> &mut std::process::Command {
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(command, 0);
    command
}

/// Stop `child` and, on Unix, every process of its group.
fn stop_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    if let Some(group) = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The program of a `--controller` command, for messages.
fn controller_name(command: &str) -> &str {
    command.split_whitespace().next().unwrap_or(command)
}

/// A `--controller`: its program, kept running until [`Controller::stop`].
struct Controller {
    command: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    child: std::sync::Arc<std::sync::Mutex<Option<std::process::Child>>>,
    supervisor: Option<std::thread::JoinHandle<()>>,
    log: PathBuf,
}

impl Controller {
    /// Start `command` against the control plane of `kubeconfig`, its output
    /// to a log in `log_dir`, restarted a second after each exit.
    fn start(
        command: &str,
        kubeconfig: &std::path::Path,
        log_dir: &std::path::Path,
    ) -> anyhow::Result<Self> {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::{Arc, Mutex};
        let words: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
        let Some(program) = words.first().cloned() else {
            return Err(crate::failure::advised(
                "`--controller` names no program".to_owned(),
                "give the controller's binary and its arguments: `--controller 'external-secrets --metrics-addr=127.0.0.1:0'`",
            ));
        };
        let index = log_dir.read_dir().map_or(0, |d| d.count());
        let log = log_dir.join(format!(
            "controller-{index}-{}.log",
            controller_name(command)
                .rsplit('/')
                .next()
                .unwrap_or("controller")
        ));
        let open_log = || {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)
        };
        // Fail now, by name, for a program that cannot start at all.
        let first = own_group(&mut std::process::Command::new(&program))
            .args(&words[1..])
            .env("KUBECONFIG", kubeconfig)
            .stdin(std::process::Stdio::null())
            .stdout(open_log()?)
            .stderr(open_log()?)
            .spawn()
            .map_err(|error| {
                crate::failure::advised(
                    format!("cannot start controller `{program}`: {error}"),
                    "name a program on `PATH`, or give its path",
                )
            })?;
        let stop = Arc::new(AtomicBool::new(false));
        let child = Arc::new(Mutex::new(Some(first)));
        let supervisor = {
            let (stop, child, kubeconfig, log) = (
                stop.clone(),
                child.clone(),
                kubeconfig.to_owned(),
                log.clone(),
            );
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(std::time::Duration::from_millis(200));
                    let mut slot = child
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    let exited = match slot.as_mut() {
                        Some(running) => matches!(running.try_wait(), Ok(Some(_)) | Err(_)),
                        None => true,
                    };
                    if exited && !stop.load(Ordering::Relaxed) {
                        // What the last one started goes with it.
                        if let Some(mut old) = slot.take() {
                            stop_group(&mut old);
                        }
                        drop(slot);
                        std::thread::sleep(std::time::Duration::from_secs(1));
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let open = || {
                            std::fs::OpenOptions::new()
                                .create(true)
                                .append(true)
                                .open(&log)
                        };
                        let (Ok(out), Ok(err)) = (open(), open()) else {
                            continue;
                        };
                        let started = own_group(&mut std::process::Command::new(&program))
                            .args(&words[1..])
                            .env("KUBECONFIG", &kubeconfig)
                            .stdin(std::process::Stdio::null())
                            .stdout(out)
                            .stderr(err)
                            .spawn()
                            .ok();
                        *child
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner) = started;
                    }
                }
            })
        };
        eprintln!(
            "verify: running controller `{}` (log {})",
            controller_name(command),
            log.display()
        );
        Ok(Self {
            command: command.to_owned(),
            stop,
            child,
            supervisor: Some(supervisor),
            log,
        })
    }

    /// Stop it for good; the last lines of its log.
    fn stop(&mut self) -> String {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        // No restart after this: the supervisor ends first.
        if let Some(supervisor) = self.supervisor.take() {
            let _ = supervisor.join();
        }
        if let Some(mut child) = self
            .child
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            stop_group(&mut child);
        }
        tazuna_controlplane::process::tail(&self.log, 20)
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::path::Path;

    use super::*;

    /// A controller that starts processes of its own leaves none behind.
    #[test]
    fn a_controller_is_stopped_with_what_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("controller.sh");
        let pid_file = dir.path().join("child.pid");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nsleep 300 &\necho $! > {}\nwait\n",
                pid_file.display()
            ),
        )
        .unwrap();
        let mut permissions = std::fs::metadata(&script).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&script, permissions).unwrap();
        let mut controller = Controller::start(
            &script.display().to_string(),
            &dir.path().join("kubeconfig"),
            dir.path(),
        )
        .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let child = loop {
            if let Some(pid) = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|text| text.trim().parse::<u32>().ok())
            {
                break pid;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the controller did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        assert!(Path::new(&format!("/proc/{child}")).exists());
        controller.stop();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while Path::new(&format!("/proc/{child}/stat")).exists()
            && !std::fs::read_to_string(format!("/proc/{child}/stat"))
                .unwrap_or_default()
                .contains(") Z ")
        {
            assert!(
                std::time::Instant::now() < deadline,
                "a process it started outlived it"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}
