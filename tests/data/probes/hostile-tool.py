#!/usr/bin/python3
# A hostile tool: run as a granted tool, it tries what code that got to run in
# the jail could do, and prints each attempt that worked. The jail's unit
# test (engine/plugin-host/src/host/jail) runs it directly, the sandbox's
# end-to-end test (engine/cli/tests/sandbox.rs) through a third-party plugin.
import ctypes, os, socket, sys, time
# Where the host's own files are (a secret, a listening Unix socket), and the
# tool's scratch: arguments, or filled in by the test that copies this file.
outside = sys.argv[1] if len(sys.argv) > 1 else "{outside}"
scratch = sys.argv[2] if len(sys.argv) > 2 else os.getcwd()
libc = ctypes.CDLL(None, use_errno=True)
worked = []
# Which vectors to try: all, or (third argument, or filled in by the test)
# only those named, or all but those named after a `-` (`-held-1.6-GiB`).
chosen = sys.argv[3] if len(sys.argv) > 3 else "{chosen}"
def wanted(name):
    if not chosen or chosen == "{" + "chosen}":
        return True
    if chosen.startswith("-"):
        return name not in chosen[1:].split(",")
    return name in chosen.split(",")
def attempt(name, act):
    if not wanted(name):
        return
    try:
        if act() is not False:
            worked.append(name)
    except Exception:
        pass
attempt("ran-as-root", lambda: os.getuid() == 0 or os.geteuid() == 0 or False)
attempt("became-root", lambda: os.setuid(0))
attempt("set-hostname", lambda: socket.sethostname("pwned"))
attempt("block-device", lambda: os.mknod(scratch + "/sda", 0o600 | 0o060000, os.makedev(8, 0)))
attempt("memfd", lambda: os.memfd_create("code"))
attempt("mount", lambda: libc.mount(b"none", scratch.encode(), b"tmpfs", 0, None) == 0 or False)
attempt("namespace", lambda: libc.unshare(0x10000000) == 0 or False)
attempt("bpf", lambda: libc.syscall(321, 0, 0, 0) == 0 or ctypes.get_errno() != 1 or False)
attempt("keyring", lambda: libc.syscall(248, b"user", b"k", b"v", 1, -2) >= 0 or False)
attempt("ptrace", lambda: libc.ptrace(16, 1, 0, 0) == 0 or False)
attempt("ssl-private", lambda: os.listdir("/etc/ssl/private"))
attempt("proc", lambda: open("/proc/1/environ").read())
attempt("host-file", lambda: open(outside + "/secret").read())
def unix():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(outside + "/socket")
attempt("unix-socket", unix)
attempt("3-GiB", lambda: bytearray(3 << 30))
def in_children(count, act):
    # Each in a child of its own, so the kernel stopping one (for memory)
    # does not stop the probe; worked if every child finished.
    pids = []
    for _ in range(count):
        pid = os.fork()
        if pid == 0:
            try:
                act()
                os._exit(0)
            except BaseException:
                os._exit(1)
        pids.append(pid)
    return all(os.waitpid(pid, 0)[1] == 0 for pid in pids) or False
def hold():
    # 800 MiB, every page written, held while the other child holds its own.
    held = bytearray(800 << 20)
    held[::4096] = b"\x01" * len(range(0, len(held), 4096))
    time.sleep(2)
attempt("held-1.6-GiB", lambda: in_children(2, hold))
def fill(n):
    with open(scratch + "/fill-%d" % n, "wb") as out:
        for _ in range(8):
            out.write(b"\x01" * (64 << 20))
def fill_scratch():
    # 1.5 GiB in three files, each under the per-file limit.
    try:
        return in_children(1, lambda: [fill(n) for n in range(3)])
    finally:
        for n in range(3):
            try:
                os.unlink(scratch + "/fill-%d" % n)
            except OSError:
                pass
attempt("scratch-1.5-GiB", fill_scratch)
attempt("home-shared", lambda: os.stat(os.environ["HOME"] + "/..").st_mode & 0o077 != 0 or False)
attempt("scratch-exec", lambda: os.execv(scratch + "/run", [scratch + "/run"]))
def session():
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os._exit(0)
        except Exception:
            os._exit(1)
    return os.waitpid(pid, 0)[1] == 0 or False
attempt("setsid", session)
if os.fork() == 0:
    time.sleep(1.5)
    open(scratch + "/outlived", "w").write("x")
    os._exit(0)
print("worked:" + ",".join(worked), flush=True)
