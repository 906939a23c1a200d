//! The tool's own view of the file system, when Tazuna runs as root.
//!
//! The jail's thread enters new mount, PID, UTS and IPC namespaces and
//! makes an empty tmpfs its root; into it go only the paths the policy names,
//! each at its host path, so the tool's arguments need no rewriting:
//!
//! - the system's libraries and shared data, and the granted tools' binaries
//!   with their loaders, read-only;
//! - `/dev/null`, `/dev/zero`, `/dev/random` and `/dev/urandom`;
//! - the manifest's input read-only and the call's scratch and private home
//!   read-write, none of them executable, whatever their files' modes.
//!
//! Nothing else exists for the tool: not `/proc`, not the user's home, not
//! a Unix socket of the host, not `/etc/ssl/private`. The manifest, scratch
//! and the home are idmapped mounts: what root owns on disk, the tool's user
//! ([`JAIL_ID`](super::privilege::JAIL_ID)) owns in the view, so it reads the
//! repository and writes scratch without any file on disk changing owner.
//! The tool is PID 1 of its namespace, so everything it starts ends with it.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

/// What a path in the view is for, which decides how it is mounted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Access {
    /// System libraries and data: read-only (a loader maps code from them;
    /// Landlock lets no program in them start).
    System,
    /// A granted tool's binary, or what it needs to start: read-only.
    Program,
    /// A device: read and write.
    Device,
    /// The manifest's input: read-only, nothing executable.
    Read,
    /// Scratch and the private home: read and write, nothing executable.
    Write,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;
const MOUNT_ATTR_NOEXEC: u64 = 0x8;
const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;
const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

impl Access {
    fn flags(self) -> u64 {
        match self {
            Self::System | Self::Program => {
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV
            }
            Self::Device => MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC,
            Self::Read => {
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC
            }
            Self::Write => MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
        }
    }

    fn owned_by_the_tool(self) -> bool {
        matches!(self, Self::Read | Self::Write)
    }
}

/// Whether this process can give tools a view: `Ok(true)` with idmapped
/// mounts (the tool runs as the jail's user), `Ok(false)` without (it runs
/// as root's uid with no capability), `Err` when it cannot (not root, or the
/// namespaces are refused).
pub(super) fn probe() -> Result<bool, String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root".into());
    }
    std::thread::spawn(|| {
        // SAFETY: unshare changes only this thread, which ends here.
        if unsafe { libc::unshare(libc::CLONE_NEWNS | libc::CLONE_NEWPID) } != 0 {
            return Err(format!(
                "no mount or PID namespace ({})",
                std::io::Error::last_os_error()
            ));
        }
        // The view is built of detached trees (`open_tree`); a kernel, or a
        // tracer such as valgrind, without them has no view at all.
        let dir = std::env::temp_dir();
        if let Err(error) = clone_tree(&dir, Access::Write, None) {
            return Err(format!("no detached mount trees ({error})"));
        }
        let Some(users) = idmap() else {
            return Ok(false);
        };
        Ok(clone_tree(&dir, Access::Write, Some(users)).is_ok())
    })
    .join()
    .unwrap_or_else(|_| Err("probing mount namespaces failed".into()))
}

/// Enter the view on this thread: `root` (an empty directory of the host)
/// becomes the root, holding `entries`. `owned` idmaps the manifest, scratch
/// and the home to the jail's user.
pub(super) fn enter(root: &Path, entries: &[(PathBuf, Access)], owned: bool) -> Result<(), String> {
    let os = |what: &str| format!("{what}: {}", std::io::Error::last_os_error());
    let users = if owned { idmap() } else { None };
    // SAFETY: unshare and mount change this thread's namespaces only; the
    // strings are NUL-terminated and live across each call.
    unsafe {
        let flags =
            libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWUTS | libc::CLONE_NEWIPC;
        if libc::unshare(flags) != 0 {
            return Err(os("cannot enter a mount namespace"));
        }
        if libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return Err(os("cannot make the mounts private"));
        }
        let target = c_path(root)?;
        if libc::mount(
            c"tazuna-jail".as_ptr(),
            target.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            c"mode=0755,size=4m".as_ptr().cast(),
        ) != 0
        {
            return Err(os("cannot mount the jail's root"));
        }
    }
    let mut placed: Vec<(PathBuf, Access)> = Vec::new();
    for (path, access) in entries {
        match mirror(root, path) {
            Ok(real) => placed.push((real, *access)),
            Err(_) if *access == Access::System => {}
            Err(error) => {
                return Err(format!(
                    "cannot give the tool `{}`: {error}",
                    path.display()
                ));
            }
        }
    }
    // Parents before what lies under them; one mount per path.
    placed.sort_by_key(|(path, access)| (path.components().count(), path.clone(), *access));
    placed.dedup_by(|a, b| a.0 == b.0);
    for (path, access) in &placed {
        attach(
            root,
            path,
            *access,
            users.filter(|_| access.owned_by_the_tool()),
        )
        .map_err(|error| format!("cannot give the tool `{}`: {error}", path.display()))?;
    }
    pivot(root)
}

/// Make `path`'s symbolic links in the view (each with its host target), and
/// return where it really is.
fn mirror(root: &Path, path: &Path) -> std::io::Result<PathBuf> {
    let mut real = PathBuf::from("/");
    for component in path.components() {
        let Component::Normal(name) = component else {
            continue;
        };
        let next = real.join(name);
        if next.symlink_metadata()?.file_type().is_symlink() {
            let link = inside(root, &next);
            if link.symlink_metadata().is_err() {
                std::fs::create_dir_all(link.parent().unwrap_or(root))?;
                std::os::unix::fs::symlink(std::fs::read_link(&next)?, &link)?;
            }
            real = std::fs::canonicalize(&next)?;
        } else {
            real = next;
        }
    }
    Ok(real)
}

fn inside(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").unwrap_or(path))
}

/// Mount `path` of the host at the same path in the view.
fn attach(
    root: &Path,
    path: &Path,
    access: Access,
    users: Option<&'static OwnedFd>,
) -> std::io::Result<()> {
    let target = inside(root, path);
    if path.is_dir() {
        std::fs::create_dir_all(&target)?;
    } else if target.symlink_metadata().is_err() {
        std::fs::create_dir_all(target.parent().unwrap_or(root))?;
        std::fs::File::create(&target)?;
    }
    let tree = match clone_tree(path, access, users) {
        // A file system without idmapped mounts: read as any other user.
        Err(_) if users.is_some() && access == Access::Read => clone_tree(path, access, None)?,
        other => other?,
    };
    let target = c_path(&target).map_err(std::io::Error::other)?;
    // SAFETY: move_mount takes the detached tree's descriptor and a
    // NUL-terminated path, both alive across the call.
    let moved = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_FDCWD,
            target.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    if moved != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A detached copy of the mount at `path` (not the mounts below it), with
/// `access`'s flags and, given `users`, idmapped to the jail's user.
fn clone_tree(path: &Path, access: Access, users: Option<&OwnedFd>) -> std::io::Result<OwnedFd> {
    let source = c_path(path).map_err(std::io::Error::other)?;
    // SAFETY: open_tree returns a new descriptor we own; mount_setattr reads
    // the attribute struct we own for the call.
    unsafe {
        let fd = libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            source.as_ptr(),
            OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint,
        );
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let tree = OwnedFd::from_raw_fd(fd as i32);
        let set = access.flags() | users.map_or(0, |_| MOUNT_ATTR_IDMAP);
        let all = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
        let attr = MountAttr {
            attr_set: set,
            attr_clr: all & !set,
            propagation: 0,
            userns_fd: users.map_or(0, |fd| fd.as_raw_fd() as u64),
        };
        if libc::syscall(
            libc::SYS_mount_setattr,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        Ok(tree)
    }
}

/// Make `root` this thread's `/`, drop the host's tree and make the root
/// read-only.
fn pivot(root: &Path) -> Result<(), String> {
    let os = |what: &str| format!("{what}: {}", std::io::Error::last_os_error());
    let old = root.join(".host");
    std::fs::create_dir(&old).map_err(|e| format!("cannot prepare the jail's root: {e}"))?;
    let (new, put_old) = (c_path(root)?, c_path(&old)?);
    // SAFETY: the paths are NUL-terminated and live across each call; all
    // of this changes only this thread's mount namespace.
    unsafe {
        if libc::syscall(libc::SYS_pivot_root, new.as_ptr(), put_old.as_ptr()) != 0 {
            return Err(os("cannot enter the jail's root"));
        }
        if libc::chdir(c"/".as_ptr()) != 0
            || libc::umount2(c"/.host".as_ptr(), libc::MNT_DETACH) != 0
            || libc::rmdir(c"/.host".as_ptr()) != 0
        {
            return Err(os("cannot leave the host's root"));
        }
        // The kernel answers EBUSY now and then while the host's tree it
        // just detached is still being let go; a moment later it succeeds.
        let mut tries = 0;
        while libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV,
            std::ptr::null(),
        ) != 0
        {
            let busy = std::io::Error::last_os_error().raw_os_error() == Some(libc::EBUSY);
            tries += 1;
            if !busy || tries > 50 {
                return Err(os("cannot make the jail's root read-only"));
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    Ok(())
}

fn c_path(path: &Path) -> Result<CString, String> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| format!("`{}` holds a NUL byte", path.display()))
}

/// A user namespace that maps root to the jail's user, for idmapped mounts
/// (made once: a child process enters it and the host writes the map).
fn idmap() -> Option<&'static OwnedFd> {
    static USERS: OnceLock<Option<OwnedFd>> = OnceLock::new();
    USERS.get_or_init(make_idmap).as_ref()
}

fn make_idmap() -> Option<OwnedFd> {
    let id = super::privilege::JAIL_ID;
    let map = format!("0 {id} 1\n");
    let mut ready = [0; 2];
    let mut hold = [0; 2];
    // SAFETY: pipe2 fills the arrays we own. After fork the child makes only
    // raw system calls on those descriptors and exits; the parent closes its
    // ends and reaps the child.
    unsafe {
        if libc::pipe2(ready.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return None;
        }
        if libc::pipe2(hold.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            libc::close(ready[0]);
            libc::close(ready[1]);
            return None;
        }
        let pid = libc::fork();
        if pid == 0 {
            // Only the parent's end may keep the pipe open.
            libc::close(ready[0]);
            libc::close(hold[1]);
            let entered: u8 = u8::from(libc::unshare(libc::CLONE_NEWUSER) == 0);
            libc::write(ready[1], (&raw const entered).cast(), 1);
            let mut byte = 0u8;
            libc::read(hold[0], (&raw mut byte).cast(), 1);
            libc::_exit(0);
        }
        libc::close(ready[1]);
        libc::close(hold[0]);
        let mut entered = 0u8;
        let read = libc::read(ready[0], (&raw mut entered).cast(), 1);
        libc::close(ready[0]);
        let users = (pid > 0 && read == 1 && entered == 1)
            .then(|| {
                std::fs::write(format!("/proc/{pid}/uid_map"), &map).ok()?;
                std::fs::write(format!("/proc/{pid}/gid_map"), &map).ok()?;
                std::fs::File::open(format!("/proc/{pid}/ns/user"))
                    .ok()
                    .map(OwnedFd::from)
            })
            .flatten();
        libc::close(hold[1]);
        if pid > 0 {
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
        users
    }
}
