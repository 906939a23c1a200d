//! The jail every tool runs in: what the operating system, not an argument
//! filter, lets a tool started through `exec` do. Every part names what is
//! allowed; the rest does not exist for the tool or is refused.
//!
//! A tool is spawned from a thread of its own that first
//!
//! 1. enters a new network namespace (only loopback, brought up), in which a
//!    forwarder listens for each endpoint the manifest names
//!    ([`network`]);
//! 2. as root, enters new mount, PID, UTS and IPC namespaces whose root holds
//!    only the paths the policy names ([`view`]): the tool is PID 1 there, so
//!    nothing it starts outlives it;
//! 3. restricts itself with Landlock ([`landlock`]): execute on the granted
//!    tools' binaries alone, read on the system's libraries and data and the
//!    manifest, read and write on scratch and the private home, TCP only to
//!    the forwarders, no signals to and no abstract sockets of processes
//!    outside the jail.
//!
//! The child inherits all of it, starts in a process group of its own, and
//! before `exec` gives up every privilege ([`privilege`]): as root it becomes
//! the jail's user, with no capability, `no_new_privs`, limits on memory,
//! file size and processes, and a seccomp filter. The thread ends once the
//! tool has started; none of this reaches Tazuna.
//!
//! Where the kernel cannot do one of these (no Landlock, no network
//! namespace for an unprivileged user, no mount namespace or idmapped mounts
//! for root), [`support`] says what is missing.

mod bounds;
mod endpoint;
#[cfg(target_os = "linux")]
mod landlock;
mod network;
#[cfg(target_os = "linux")]
mod privilege;
mod signing;
#[cfg(target_os = "linux")]
mod view;

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub use bounds::{
    MemoryGroup, SCRATCH_FILES, SCRATCH_SIZE, Scratch, TOOL_RESIDENT, private_mounts,
};
pub use endpoint::Endpoint;
use network::{Route, enter_network_namespace, forward, listen, proxy, serve};
pub use network::{endpoint_of_url, endpoints_named_in};
#[cfg(target_os = "linux")]
pub use privilege::{JAIL_ID, TOOL_FILE_SIZE, TOOL_MEMORY};
pub use signing::Logins;

/// Whose identity a tool runs with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Identity {
    /// The jail's own: as root, the jail's user in a view of only what the
    /// policy names. Every tool that renders content runs so.
    #[default]
    Jail,
    /// The caller's uid (with no capability): for a tool that signs in with
    /// the user's own files, such as `op`, and renders no content.
    Caller,
}

/// What one tool run may touch.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// The only programs that may be started: the tool and the other granted
    /// tools (each with what it needs to start: its loader or interpreter).
    pub programs: Vec<PathBuf>,
    /// Read only (the manifest directory).
    pub read: Vec<PathBuf>,
    /// Read and write (scratch, the private home).
    pub write: Vec<PathBuf>,
    /// The hosts the tool may reach.
    pub endpoints: Vec<Endpoint>,
    /// The user's logins the forwarders add to the tool's reads of the
    /// hosts they are for; the tool itself holds none.
    pub logins: Logins,
    /// Whose identity the tool runs with.
    pub identity: Identity,
}

/// What this machine's kernel lets the jail do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support {
    /// Landlock restricts files, TCP, signals.
    pub landlock: Result<(), String>,
    /// A network namespace can be entered.
    pub network: Result<(), String>,
    /// The tool holds no privilege: it runs as an unprivileged user (the
    /// caller, or from root the jail's user in a view of its own).
    pub privilege: Result<(), String>,
}

impl Support {
    /// What is missing for a full jail, or `None`.
    pub fn missing(&self) -> Option<String> {
        let missing: Vec<&str> = [&self.landlock, &self.network, &self.privilege]
            .into_iter()
            .filter_map(|r| r.as_ref().err().map(String::as_str))
            .collect();
        (!missing.is_empty()).then(|| missing.join("; "))
    }
}

/// How a tool run as root is confined on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
enum RootJail {
    /// Not root: the tool runs as the caller, an unprivileged user.
    NotRoot,
    /// A view with idmapped mounts: the jail's user.
    JailUser,
    /// A view, but no idmapped mounts: root's uid with no capability.
    ViewOnly,
    /// No mount namespace: root's uid with no capability, on the host's
    /// files (Landlock still limits them).
    Bare,
}

fn root_jail() -> RootJail {
    static MODE: OnceLock<RootJail> = OnceLock::new();
    *MODE.get_or_init(|| {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: geteuid has no preconditions.
            #[allow(unsafe_code)]
            if unsafe { libc::geteuid() } != 0 {
                return RootJail::NotRoot;
            }
            match view::probe() {
                Ok(true) => RootJail::JailUser,
                Ok(false) => RootJail::ViewOnly,
                Err(_) => RootJail::Bare,
            }
        }
        #[cfg(not(target_os = "linux"))]
        RootJail::NotRoot
    })
}

/// What the kernel offers, probed once per process.
pub fn support() -> &'static Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(|| {
        let privilege = match root_jail() {
            RootJail::NotRoot | RootJail::JailUser => Ok(()),
            RootJail::ViewOnly => Err("no idmapped mounts for the temporary directory: tools would run as root's uid (without capabilities)".to_owned()),
            RootJail::Bare => Err("no mount or PID namespace: tools would run as root's uid (without capabilities) on the host's files".to_owned()),
        };
        std::thread::spawn(move || Support {
            network: enter_network_namespace(),
            landlock: restrict(&Policy::default(), &[]),
            privilege,
        })
        .join()
        .unwrap_or_else(|_| Support {
            landlock: Err("probing Landlock failed".into()),
            network: Err("probing network namespaces failed".into()),
            privilege: Err("probing privileges failed".into()),
        })
    })
}

#[cfg(target_os = "linux")]
use landlock::restrict;

#[cfg(not(target_os = "linux"))]
fn restrict(_: &Policy, _: &[u16]) -> Result<(), String> {
    Err("no Landlock: tools are jailed on Linux only".into())
}

/// A running tool and the forwarders that serve it; dropping it stops them
/// and removes the jail's root.
#[derive(Debug)]
pub struct Jailed {
    /// The tool; its process group id is its pid.
    pub child: Child,
    /// The run's memory cgroup, where this process can make one.
    pub memory: Option<MemoryGroup>,
    stop: Arc<AtomicBool>,
    _root: Option<tempfile::TempDir>,
}

impl Drop for Jailed {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Why a jail could not be set up or its tool not started.
#[derive(Debug, thiserror::Error)]
pub enum JailError {
    /// The jail's root directory could not be made.
    #[error("cannot make the jail's root: {0}")]
    Root(std::io::Error),
    /// A step of the confinement failed (the kernel refused a namespace, a
    /// mount, a Landlock ruleset or the listeners).
    #[error("cannot confine the tool: {0}")]
    Confine(String),
    /// The confined tool did not start.
    #[error("{0}")]
    Start(std::io::Error),
    /// The thread that sets the jail up panicked.
    #[error("the jail's thread panicked")]
    Panicked,
    /// Tazuna's own mount namespace could not be made.
    #[error("{0}")]
    Mounts(String),
}

/// Start `command` in the jail `policy` describes. Sets the proxy variables
/// on `command` when a non-loopback endpoint is named.
pub fn spawn(mut command: Command, policy: Policy) -> Result<Jailed, JailError> {
    let support = support();
    let mode = match policy.identity {
        Identity::Caller if root_jail() == RootJail::NotRoot => RootJail::NotRoot,
        Identity::Caller => RootJail::Bare,
        Identity::Jail => root_jail(),
    };
    let root = match mode {
        RootJail::JailUser | RootJail::ViewOnly => Some(
            tempfile::Builder::new()
                .prefix("tazuna-jail-")
                .tempdir()
                .map_err(JailError::Root)?,
        ),
        RootJail::NotRoot | RootJail::Bare => None,
    };
    let root_path = root.as_ref().map(|dir| dir.path().to_owned());
    let memory = MemoryGroup::new(TOOL_RESIDENT);
    #[cfg(target_os = "linux")]
    let cgroup = memory
        .as_ref()
        .map(|group| std::os::fd::AsRawFd::as_raw_fd(&group.procs));
    let logins = policy.logins.clone();
    let (child, routes) = std::thread::spawn(move || {
        let mut routes = Vec::new();
        let ports: Vec<u16> = if support.network.is_ok() {
            enter_network_namespace().map_err(JailError::Confine)?;
            routes = listen(&policy.endpoints, &mut command).map_err(JailError::Confine)?;
            routes
                .iter()
                .filter_map(|(listener, _)| listener.local_addr().ok())
                .map(|addr| addr.port())
                .collect()
        } else {
            policy.endpoints.iter().map(|e| e.port).collect()
        };
        #[cfg(target_os = "linux")]
        confine(&mut command, &policy, mode, root_path.as_deref(), cgroup)
            .map_err(JailError::Confine)?;
        #[cfg(not(target_os = "linux"))]
        let _ = (mode, root_path);
        if support.landlock.is_ok() {
            restrict(&policy, &ports).map_err(JailError::Confine)?;
        }
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let child = command.spawn().map_err(JailError::Start)?;
        Ok::<_, JailError>((child, routes))
    })
    .join()
    .map_err(|_| JailError::Panicked)??;
    // The listeners live in the jail's namespace; the threads that serve them
    // run here, in Tazuna's, so they reach the real endpoints.
    let stop = Arc::new(AtomicBool::new(false));
    for (listener, route) in routes {
        match route {
            Route::Forward(target, endpoint) => {
                let logins = logins.clone();
                serve(listener, stop.clone(), move |inbound| {
                    if let Ok(outbound) =
                        TcpStream::connect_timeout(&target, Duration::from_secs(10))
                    {
                        forward(inbound, outbound, &endpoint, &logins);
                    }
                });
            }
            Route::Proxy(allowed) => {
                let logins = logins.clone();
                serve(listener, stop.clone(), move |inbound| {
                    proxy(inbound, &allowed, &logins)
                });
            }
        }
    }
    Ok(Jailed {
        child,
        memory,
        stop,
        _root: root,
    })
}

/// On the jail's thread: enter the view (as root), and have the child give
/// up its privileges before `exec`.
#[cfg(target_os = "linux")]
fn confine(
    command: &mut Command,
    policy: &Policy,
    mode: RootJail,
    root: Option<&std::path::Path>,
    cgroup: Option<std::os::fd::RawFd>,
) -> Result<(), String> {
    use privilege::{Confinement, RunAs};
    use view::Access;
    if let Some(root) = root {
        let mut programs = Vec::new();
        for program in &policy.programs {
            landlock::starters(program, &mut programs, 0);
        }
        let entries: Vec<(PathBuf, Access)> = landlock::SYSTEM_READ
            .iter()
            .map(|path| (PathBuf::from(path), Access::System))
            .chain(
                landlock::DEVICES
                    .iter()
                    .map(|path| (PathBuf::from(path), Access::Device)),
            )
            .chain(
                policy
                    .programs
                    .iter()
                    .chain(&programs)
                    .map(|path| (path.clone(), Access::Program)),
            )
            .chain(policy.read.iter().map(|path| (path.clone(), Access::Read)))
            .chain(
                policy
                    .write
                    .iter()
                    .map(|path| (path.clone(), Access::Write)),
            )
            .collect();
        view::enter(root, &entries, mode == RootJail::JailUser)?;
    }
    let run_as = match mode {
        RootJail::NotRoot => RunAs::Unprivileged,
        RootJail::JailUser => RunAs::JailUser,
        RootJail::ViewOnly | RootJail::Bare => RunAs::RootWithoutCapabilities,
    };
    let confinement = Confinement::new(run_as, cgroup);
    // SAFETY: `apply` makes only raw system calls and allocates nothing (see
    // the `privilege` module), as a child of a threaded process must.
    #[allow(unsafe_code)]
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(command, move || confinement.apply());
    }
    Ok(())
}

/// Kill the process group of `child` (the tool and everything it started).
#[cfg(unix)]
pub fn kill_group(child: &mut Child) {
    let Ok(pid) = i32::try_from(child.id()) else {
        return;
    };
    #[allow(unsafe_code)]
    // SAFETY: kill(2) with a negative pid signals a process group; it touches
    // no memory of ours.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

/// Kill `child` (without process groups, only the tool itself).
#[cfg(not(unix))]
pub fn kill_group(child: &mut Child) {
    let _ = child.kill();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether a test cannot run here because `missing` is: a skip, unless
    /// `TAZUNA_E2E_REQUIRED` asks for every test to run (then a failure).
    fn skipped(missing: Option<&String>) -> bool {
        let Some(missing) = missing else {
            return false;
        };
        assert!(
            std::env::var_os("TAZUNA_E2E_REQUIRED").is_none(),
            "{missing}"
        );
        eprintln!("skipped: {missing}");
        true
    }

    fn starters_of(program: &str) -> Vec<PathBuf> {
        let mut found = Vec::new();
        landlock::starters(program.as_ref(), &mut found, 0);
        found
    }

    #[test]
    fn only_the_granted_programs_start() {
        if skipped(support().landlock.as_ref().err()) {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let mark = |name: &str| root.join(name).display().to_string();
        let loader = starters_of("/bin/bash")
            .into_iter()
            .find(|path| path.to_string_lossy().contains("ld-linux"))
            .unwrap();
        let script = format!(
            "/usr/bin/touch {}; {} /usr/bin/touch {}; /bin/sh -c 'echo x > {}'; echo ran > {}",
            mark("exec"),
            loader.display(),
            mark("loader"),
            mark("shell"),
            mark("ran"),
        );
        let mut command = Command::new("/bin/bash");
        command
            .arg("-c")
            .arg(script)
            .stderr(std::process::Stdio::null());
        let policy = Policy {
            programs: vec!["/bin/bash".into()],
            write: vec![root.clone()],
            ..Policy::default()
        };
        let mut jailed = spawn(command, policy).unwrap();
        jailed.child.wait().unwrap();
        assert!(root.join("ran").exists(), "the granted program ran");
        for escape in ["exec", "loader", "shell"] {
            assert!(!root.join(escape).exists(), "`{escape}` started a program");
        }
    }

    /// A hostile tool (Python, run as the granted tool): prints each attempt
    /// to leave the jail that worked.
    const HOSTILE: &str = include_str!("../../../../../tests/data/probes/hostile-tool.py");

    /// Run the hostile tool in the jail: what it says worked. Asserts what
    /// only the host can see: no child outlived it, the host's socket saw no
    /// connection, the host name is the host's.
    #[cfg(target_arch = "x86_64")]
    fn run_hostile() -> String {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "the user's").unwrap();
        let listener =
            std::os::unix::net::UnixListener::bind(outside.path().join("socket")).unwrap();
        listener.set_nonblocking(true).unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let scratch_path = std::fs::canonicalize(scratch.path()).unwrap();
        // A program the tool could run if scratch were executable.
        let run = scratch_path.join("run");
        std::fs::write(&run, "#!/bin/sh\necho ran\n").unwrap();
        std::fs::set_permissions(&run, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let manifest = tempfile::tempdir().unwrap();
        let tool = manifest.path().join("hostile.py");
        std::fs::write(&tool, HOSTILE).unwrap();
        let mut command = Command::new("/usr/bin/python3");
        command
            .arg(&tool)
            .arg(outside.path())
            .arg(&scratch_path)
            // The unit tests' scratch is a plain temporary directory: filling
            // it measures the machine's free disk, not the jail (the bound on
            // scratch is Tazuna's own mount namespace, which the sandbox
            // tests check end to end).
            .arg("-scratch-1.5-GiB")
            .env_clear()
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let policy = Policy {
            programs: vec!["/usr/bin/python3".into()],
            read: vec![manifest.path().to_owned()],
            write: vec![scratch_path.clone()],
            ..Policy::default()
        };
        let mut jailed = spawn(command, policy).unwrap();
        jailed.child.wait().unwrap();
        // As `exec` does once a tool ends (its output is small enough to
        // wait in the pipe).
        kill_group(&mut jailed.child);
        let mut stdout = String::new();
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut jailed.child.stdout.take().unwrap(), &mut stdout)
            .unwrap();
        std::io::Read::read_to_string(&mut jailed.child.stderr.take().unwrap(), &mut stderr)
            .unwrap();
        assert!(
            stdout.starts_with("worked:"),
            "the probe ran: {stdout} {stderr}"
        );
        std::thread::sleep(Duration::from_secs(3));
        assert!(
            !scratch_path.join("outlived").exists(),
            "a child of the tool outlived it"
        );
        assert!(listener.accept().is_err(), "the tool reached a host socket");
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        assert_ne!(hostname.trim(), "pwned");
        stdout.trim().to_owned()
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn a_jailed_tool_holds_no_privilege_and_nothing_it_starts_outlives_it() {
        if skipped(support().missing().as_ref()) {
            return;
        }
        assert_eq!(run_hostile(), expected());
    }

    /// What the hostile tool gets through here: a process that cannot make
    /// memory cgroups keeps only the per-process limit.
    fn expected() -> String {
        let mut through = Vec::new();
        if MemoryGroup::new(TOOL_RESIDENT).is_none() {
            through.push("held-1.6-GiB");
        }
        format!("worked:{}", through.join(","))
    }

    /// What a deployment without root keeps: no view, no PID namespace, and
    /// without user namespaces no network namespace; Landlock, the seccomp
    /// filter and the bounds still hold every vector. Run as root, the test
    /// runs itself again as `nobody`.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn as_an_unprivileged_user_a_jailed_tool_holds_no_privilege_either() {
        #[allow(unsafe_code)]
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let Some(setpriv) = ["/usr/bin/setpriv", "/bin/setpriv"]
                .into_iter()
                .find(|path| std::path::Path::new(path).is_file())
            else {
                skipped(Some(&"no setpriv to run as another user".to_owned()));
                return;
            };
            let status = Command::new(setpriv)
                .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "host::jail::tests::as_an_unprivileged_user_a_jailed_tool_holds_no_privilege_either",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("TMPDIR", "/tmp")
                .status()
                .unwrap();
            assert!(status.success(), "as nobody: {status}");
            return;
        }
        if skipped(support().landlock.as_ref().err()) {
            return;
        }
        assert_eq!(run_hostile(), expected());
    }
}
