//! Bounds on what a call may use in all, not only per process:
//!
//! - **Memory.** Every tool run (the tool and everything it starts) is put in
//!   a memory cgroup of its own, limited to [`TOOL_RESIDENT`]: cgroup v2 where
//!   Tazuna's cgroup delegates the memory controller, else the v1 memory
//!   hierarchy when it is writable (as root). The kernel kills the run when
//!   it goes over; [`MemoryGroup::went_over`] says so. Where neither can be
//!   written, only the per-process address-space limit
//!   ([`TOOL_MEMORY`](super::TOOL_MEMORY)) holds.
//! - **Scratch.** When Tazuna runs as root it enters a mount namespace of its
//!   own as it starts ([`private_mounts`], while it has one thread), so each
//!   call's scratch can be a tmpfs of [`SCRATCH_SIZE`] bytes and
//!   [`SCRATCH_FILES`] files: it bounds what a plugin writes through WASI and
//!   what its tools write, and it goes away with Tazuna. Without it, only the
//!   per-file limit ([`TOOL_FILE_SIZE`](super::TOOL_FILE_SIZE)) holds for tools.
#![cfg_attr(target_os = "linux", allow(unsafe_code))]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// The memory one tool run may hold, the tool and everything it starts
/// together (`helm template` of the cert-manager chart holds about 60 MiB;
/// helmfile with a few helm processes a few hundred).
pub const TOOL_RESIDENT: u64 = 1 << 30;

/// The bytes one call's scratch may hold (rendered output, pulled artifacts:
/// an artifact is at most 512 MiB).
pub const SCRATCH_SIZE: u64 = 1 << 30;

/// The files and directories one call's scratch may hold.
pub const SCRATCH_FILES: u64 = 100_000;

static PRIVATE: AtomicBool = AtomicBool::new(false);

/// Enter a mount namespace of Tazuna's own, so the mounts it makes for
/// scratch are seen by it and its tools alone and end with it. Call first
/// thing in `main`, while the process has one thread (a thread that unshares
/// later changes only itself). Does nothing unless running as root on Linux;
/// when the kernel refuses, scratch stays unbounded (see the module's doc).
pub fn private_mounts() -> Result<(), super::JailError> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: geteuid has no preconditions; unshare and mount take plain
        // flags and NUL-terminated strings that live across the calls.
        unsafe {
            if libc::geteuid() != 0 {
                return Ok(());
            }
            if libc::unshare(libc::CLONE_NEWNS) != 0 {
                return Err(super::JailError::Mounts(format!(
                    "no mount namespace for scratch: {}",
                    std::io::Error::last_os_error()
                )));
            }
            // The host's mounts still reach Tazuna; none of Tazuna's leave.
            if libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_SLAVE,
                std::ptr::null(),
            ) != 0
            {
                return Err(super::JailError::Mounts(format!(
                    "cannot make Tazuna's mounts its own: {}",
                    std::io::Error::last_os_error()
                )));
            }
        }
        PRIVATE.store(true, Ordering::Relaxed);
    }
    Ok(())
}

/// One call's scratch directory: a tmpfs of [`SCRATCH_SIZE`] when Tazuna
/// has its own mount namespace, else a plain temporary directory. Removed
/// (and unmounted) when dropped.
#[derive(Debug)]
pub struct Scratch {
    dir: tempfile::TempDir,
    bounded: bool,
}

impl Scratch {
    /// A fresh, empty scratch directory, mode 0700.
    pub fn new(prefix: &str) -> std::io::Result<Self> {
        let mut builder = tempfile::Builder::new();
        builder.prefix(prefix);
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700));
        let dir = builder.tempdir()?;
        let bounded = PRIVATE.load(Ordering::Relaxed) && mount_bounded(dir.path())?;
        Ok(Self { dir, bounded })
    }

    /// Where it is on the host.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Whether its size is bounded.
    pub fn bounded(&self) -> bool {
        self.bounded
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if self.bounded
            && let Ok(path) = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(
                self.dir.path().as_os_str(),
            ))
        {
            // SAFETY: a NUL-terminated path that lives across the call.
            unsafe {
                libc::umount2(path.as_ptr(), libc::MNT_DETACH);
            }
        }
    }
}

#[cfg(target_os = "linux")]
fn mount_bounded(dir: &Path) -> std::io::Result<bool> {
    let path = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(dir.as_os_str()))
        .map_err(std::io::Error::other)?;
    let options = std::ffi::CString::new(format!(
        "size={SCRATCH_SIZE},nr_inodes={SCRATCH_FILES},mode=0700"
    ))
    .map_err(std::io::Error::other)?;
    // SAFETY: NUL-terminated strings that live across the call.
    let mounted = unsafe {
        libc::mount(
            c"tazuna-scratch".as_ptr(),
            path.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            options.as_ptr().cast(),
        )
    };
    if mounted != 0 {
        return Err(std::io::Error::other(format!(
            "cannot bound scratch `{}`: {}",
            dir.display(),
            std::io::Error::last_os_error()
        )));
    }
    Ok(true)
}

#[cfg(not(target_os = "linux"))]
fn mount_bounded(_: &Path) -> std::io::Result<bool> {
    Ok(false)
}

/// The memory cgroup of one tool run; removed when dropped.
#[derive(Debug)]
pub struct MemoryGroup {
    dir: PathBuf,
    events: Events,
    /// `cgroup.procs`, open for writing: the child writes `0` to it before
    /// `exec`, which moves it in before it runs a single instruction of the
    /// tool.
    pub(super) procs: std::fs::File,
}

/// Where a cgroup reports that the kernel killed a process for memory.
#[derive(Debug, Clone, Copy)]
enum Events {
    /// v2: `memory.events`.
    V2,
    /// v1: `memory.oom_control`.
    V1,
}

impl MemoryGroup {
    /// A cgroup limited to `limit` bytes under Tazuna's own, or `None` where
    /// this process cannot make one.
    pub fn new(limit: u64) -> Option<Self> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let (parent, events) = parent()?;
        let name = format!(
            "tazuna-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let dir = parent.join(name);
        std::fs::create_dir(&dir).ok()?;
        let group = Self {
            procs: std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))
                .ok()?,
            dir,
            events,
        };
        let written = match events {
            Events::V2 => {
                std::fs::write(group.dir.join("memory.max"), limit.to_string()).is_ok()
                    // No swap to spill into, where the kernel has swap
                    // accounting.
                    && (std::fs::write(group.dir.join("memory.swap.max"), "0").is_ok()
                        || !group.dir.join("memory.swap.max").exists())
            }
            Events::V1 => {
                std::fs::write(group.dir.join("memory.limit_in_bytes"), limit.to_string()).is_ok()
                    && (!group.dir.join("memory.memsw.limit_in_bytes").exists()
                        || std::fs::write(
                            group.dir.join("memory.memsw.limit_in_bytes"),
                            limit.to_string(),
                        )
                        .is_ok())
            }
        };
        written.then_some(group)
    }

    /// Whether the kernel killed a process of the run for going over.
    pub fn went_over(&self) -> bool {
        let file = match self.events {
            Events::V2 => "memory.events",
            Events::V1 => "memory.oom_control",
        };
        std::fs::read_to_string(self.dir.join(file))
            .ok()
            .and_then(|text| {
                text.lines()
                    .find_map(|line| line.strip_prefix("oom_kill "))
                    .and_then(|n| n.trim().parse::<u64>().ok())
            })
            .is_some_and(|kills| kills > 0)
    }
}

impl Drop for MemoryGroup {
    fn drop(&mut self) {
        // The run's processes are gone once the tool is reaped (it is PID 1
        // of its namespace, or its group was killed); the kernel may take a
        // moment to let the cgroup go.
        for _ in 0..100 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        tracing::debug!(cgroup = %self.dir.display(), "a tool's memory cgroup could not be removed");
    }
}

/// The cgroup directory Tazuna may make children in, and its kind.
fn parent() -> Option<(PathBuf, Events)> {
    static PARENT: std::sync::OnceLock<Option<(PathBuf, Events)>> = std::sync::OnceLock::new();
    PARENT
        .get_or_init(|| {
            if !cfg!(target_os = "linux") {
                return None;
            }
            let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
            let root = Path::new("/sys/fs/cgroup");
            let relative = |path: &str| root.join(path.trim_start_matches('/'));
            for line in own.lines() {
                let mut fields = line.splitn(3, ':');
                let (Some(_), Some(controllers), Some(path)) =
                    (fields.next(), fields.next(), fields.next())
                else {
                    continue;
                };
                if controllers.is_empty() && root.join("cgroup.controllers").exists() {
                    // v2 unified: children get the memory controller only if
                    // it is enabled below this cgroup.
                    let dir = relative(path);
                    let delegated = std::fs::read_to_string(dir.join("cgroup.subtree_control"))
                        .is_ok_and(|enabled| enabled.split_whitespace().any(|c| c == "memory"));
                    if delegated {
                        return Some((dir, Events::V2));
                    }
                }
                if controllers.split(',').any(|c| c == "memory") {
                    let dir = root.join("memory").join(path.trim_start_matches('/'));
                    if dir.join("memory.limit_in_bytes").exists() {
                        return Some((dir, Events::V1));
                    }
                }
            }
            None
        })
        .clone()
}
