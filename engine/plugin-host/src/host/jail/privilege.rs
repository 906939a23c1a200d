//! What the tool holds once it starts: no privilege. Set in the child between
//! `fork` and `exec`, after which nothing can take it back:
//!
//! - as root, the capability bounding set emptied and, in the jail's view,
//!   the user and group [`JAIL_ID`] (or, without idmapped mounts, root's uid
//!   with every capability dropped);
//! - `no_new_privs`, so no set-uid program or file capability gives any back;
//! - limits: address space ([`TOOL_MEMORY`]), file size ([`TOOL_FILE_SIZE`]),
//!   no core dumps, and for [`JAIL_ID`] a bound on processes;
//! - a seccomp filter ([`filter`]) that refuses the calls a renderer never
//!   needs: namespaces, mounts, modules, BPF, keyrings, ptrace, clocks, host
//!   names, device nodes, memfd (code run from memory), io_uring, and sockets
//!   other than IPv4 and IPv6; `setsid` and `setpgid` too, so every process
//!   the tool starts stays in its group and is killed with it.
//!
//! Everything here runs after `fork` in a process that may have had other
//! threads: raw system calls only, nothing allocated.
#![allow(unsafe_code)]

/// The user and group a tool runs as when Tazuna runs as root: no account
/// on the system has it, so the tool owns nothing of the host's.
pub const JAIL_ID: u32 = 61_000;

/// The address space one tool process may map. A render needs far less (the
/// cert-manager chart's `helm template` maps about 1.5 GiB, most of it the
/// Go runtime's reservations); a template that grows without bound fails
/// with an allocation error instead of taking the machine.
pub const TOOL_MEMORY: u64 = 2 << 30;

/// The largest file a tool may write.
pub const TOOL_FILE_SIZE: u64 = 1 << 30;

/// Processes and threads the jail's user may have at once, over every tool
/// that runs (each Go tool starts a dozen threads).
const TOOL_PROCESSES: u64 = 1024;

/// Who the tool runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RunAs {
    /// [`JAIL_ID`], from root.
    JailUser,
    /// Root's uid with every capability dropped.
    RootWithoutCapabilities,
    /// The caller's own user, already unprivileged.
    Unprivileged,
}

/// What the child sets before `exec`.
pub(super) struct Confinement {
    run_as: RunAs,
    filter: Vec<libc::sock_filter>,
    /// `cgroup.procs` of the run's memory cgroup, open for writing.
    cgroup: Option<std::os::fd::RawFd>,
}

impl Confinement {
    pub(super) fn new(run_as: RunAs, cgroup: Option<std::os::fd::RawFd>) -> Self {
        Self {
            run_as,
            filter: filter(),
            cgroup,
        }
    }

    /// Apply, in the child. Only raw system calls (see the module's doc).
    pub(super) fn apply(&self) -> std::io::Result<()> {
        let fail = || Err(std::io::Error::last_os_error());
        // SAFETY: each call takes plain integers or a pointer to memory this
        // function owns for the length of the call.
        unsafe {
            // Into the run's memory cgroup first (`0` is the writer), while
            // still allowed to.
            if let Some(fd) = self.cgroup
                && libc::write(fd, c"0".as_ptr().cast(), 1) != 1
            {
                return fail();
            }
            for (resource, limit) in [
                (libc::RLIMIT_AS, TOOL_MEMORY),
                (libc::RLIMIT_FSIZE, TOOL_FILE_SIZE),
                (libc::RLIMIT_CORE, 0),
            ] {
                let limit = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                if libc::setrlimit(resource, &limit) != 0 {
                    return fail();
                }
            }
            if self.run_as != RunAs::Unprivileged {
                // Empty the bounding set first: it needs CAP_SETPCAP.
                for capability in 0..64 {
                    libc::prctl(libc::PR_CAPBSET_DROP, capability, 0, 0, 0);
                }
                libc::prctl(
                    libc::PR_CAP_AMBIENT,
                    libc::PR_CAP_AMBIENT_CLEAR_ALL,
                    0,
                    0,
                    0,
                );
            }
            match self.run_as {
                RunAs::JailUser => {
                    let limit = libc::rlimit {
                        rlim_cur: TOOL_PROCESSES,
                        rlim_max: TOOL_PROCESSES,
                    };
                    let id = JAIL_ID;
                    if libc::setrlimit(libc::RLIMIT_NPROC, &limit) != 0
                        || libc::setgroups(0, std::ptr::null()) != 0
                        || libc::setresgid(id, id, id) != 0
                        || libc::setresuid(id, id, id) != 0
                    {
                        return fail();
                    }
                }
                RunAs::RootWithoutCapabilities => {
                    let mut header = CapabilityHeader {
                        version: CAPABILITY_VERSION_3,
                        pid: 0,
                    };
                    let data = [CapabilityData::default(); 2];
                    if libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) != 0 {
                        return fail();
                    }
                }
                RunAs::Unprivileged => {}
            }
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return fail();
            }
            if !self.filter.is_empty() {
                let program = libc::sock_fprog {
                    len: self.filter.len() as u16,
                    filter: self.filter.as_ptr().cast_mut(),
                };
                if libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &program as *const libc::sock_fprog,
                    0,
                    0,
                ) != 0
                {
                    return fail();
                }
            }
        }
        Ok(())
    }
}

#[repr(C)]
struct CapabilityHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapabilityData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// The calls refused with `EPERM` on every architecture. Each is one a
/// renderer (helm, kustomize, helmfile, git) never makes, and most would
/// need a capability the tool does not hold anyway: the filter is the second
/// wall, for the calls that need none (namespaces, memfd, io_uring, BPF on a
/// kernel that allows it unprivileged, keyrings, ptrace of a sibling).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const REFUSED: &[libc::c_long] = &[
    // Namespaces and mounts.
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_quotactl,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    // The kernel itself: modules, kexec, BPF, perf, reboot, logs, accounting.
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_reboot,
    libc::SYS_syslog,
    libc::SYS_acct,
    libc::SYS_lookup_dcookie,
    libc::SYS_personality,
    libc::SYS_vhangup,
    // Keyrings.
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    // Other processes.
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_kcmp,
    libc::SYS_pidfd_getfd,
    // Leaving the tool's process group (a daemon that outlives it).
    libc::SYS_setsid,
    libc::SYS_setpgid,
    // Clocks and names shared with the host.
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_settimeofday,
    libc::SYS_adjtimex,
    libc::SYS_sethostname,
    libc::SYS_setdomainname,
    // Device nodes; code run from memory; the kernel's other back doors.
    libc::SYS_mknodat,
    libc::SYS_memfd_create,
    libc::SYS_memfd_secret,
    libc::SYS_userfaultfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_fanotify_init,
];

/// x86-64's own calls of the same kinds.
#[cfg(target_arch = "x86_64")]
const REFUSED_HERE: &[libc::c_long] = &[
    libc::SYS_mknod,
    libc::SYS_uselib,
    libc::SYS_iopl,
    libc::SYS_ioperm,
    libc::SYS_modify_ldt,
    libc::SYS__sysctl,
];

#[cfg(target_arch = "aarch64")]
const REFUSED_HERE: &[libc::c_long] = &[];

#[cfg(target_arch = "x86_64")]
const ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64

#[cfg(target_arch = "aarch64")]
const ARCH: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64

/// Namespace flags of `clone`: a tool makes no namespace.
const CLONE_NAMESPACES: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u32;

/// The seccomp program (see the module's doc), or an empty one where Tazuna
/// knows no system call numbers.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) fn filter() -> Vec<libc::sock_filter> {
    use libc::{
        BPF_ABS, BPF_JEQ, BPF_JGE, BPF_JMP, BPF_JSET, BPF_K, BPF_LD, BPF_RET, BPF_W,
        SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, SECCOMP_RET_KILL_PROCESS,
    };
    let statement = |code: u32, k: u32| libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |code: u32, k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    let errno = |code: i32| SECCOMP_RET_ERRNO | (code as u32 & 0xffff);
    // seccomp_data: nr at 0, arch at 4, args[i] at 16 + 8 i (low half first).
    let (nr, arch, arg0) = (0, 4, 16);
    let mut program = vec![
        statement(BPF_LD | BPF_W | BPF_ABS, arch),
        jump(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
        statement(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        statement(BPF_LD | BPF_W | BPF_ABS, nr),
    ];
    #[cfg(target_arch = "x86_64")]
    program.extend([
        // The x32 numbering is a second table of the same calls.
        jump(BPF_JMP | BPF_JGE | BPF_K, 0x4000_0000, 0, 1),
        statement(BPF_RET | BPF_K, errno(libc::EPERM)),
    ]);
    for call in REFUSED.iter().chain(REFUSED_HERE) {
        program.extend([
            jump(BPF_JMP | BPF_JEQ | BPF_K, *call as u32, 0, 1),
            statement(BPF_RET | BPF_K, errno(libc::EPERM)),
        ]);
    }
    program.extend([
        // clone3 passes its flags in memory the filter cannot read: callers
        // fall back to clone, whose flags it can.
        jump(BPF_JMP | BPF_JEQ | BPF_K, libc::SYS_clone3 as u32, 0, 1),
        statement(BPF_RET | BPF_K, errno(libc::ENOSYS)),
        jump(BPF_JMP | BPF_JEQ | BPF_K, libc::SYS_clone as u32, 0, 4),
        statement(BPF_LD | BPF_W | BPF_ABS, arg0),
        jump(BPF_JMP | BPF_JSET | BPF_K, CLONE_NAMESPACES, 0, 1),
        statement(BPF_RET | BPF_K, errno(libc::EPERM)),
        statement(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        // Sockets: IPv4 and IPv6 only (no Unix sockets of the host, no
        // netlink, no raw packets).
        jump(BPF_JMP | BPF_JEQ | BPF_K, libc::SYS_socket as u32, 0, 5),
        statement(BPF_LD | BPF_W | BPF_ABS, arg0),
        jump(BPF_JMP | BPF_JEQ | BPF_K, libc::AF_INET as u32, 2, 0),
        jump(BPF_JMP | BPF_JEQ | BPF_K, libc::AF_INET6 as u32, 1, 0),
        statement(BPF_RET | BPF_K, errno(libc::EAFNOSUPPORT)),
        statement(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        statement(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    ]);
    program
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(super) fn filter() -> Vec<libc::sock_filter> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_fits_the_kernel_and_every_jump_lands_inside_it() {
        let program = filter();
        assert!(!program.is_empty() && program.len() < usize::from(u16::MAX));
        for (at, instruction) in program.iter().enumerate() {
            if instruction.code & 0x07 == libc::BPF_JMP as u16 {
                for offset in [instruction.jt, instruction.jf] {
                    assert!(at + 1 + usize::from(offset) < program.len(), "{at}");
                }
            }
        }
        let last = program.last().unwrap();
        assert_eq!(last.k, libc::SECCOMP_RET_ALLOW);
    }
}
