//! The jail every tool runs in: what the operating system, not an argument
//! filter, lets a tool started through `exec` do.
//!
//! A tool is spawned from a thread of its own that first
//!
//! 1. enters a new network namespace (only loopback, brought up), in which a
//!    forwarder listens for each endpoint the manifest names: the same port
//!    on loopback for a loopback endpoint, and one CONNECT proxy
//!    (`HTTPS_PROXY`) that lets through only the named hosts for the others;
//! 2. restricts itself with Landlock: execute on the granted tools' binaries
//!    alone (and what each needs to start: its dynamic loader, or the
//!    interpreter its `#!` line names), read on the system's library,
//!    certificate and name-service files, read on the manifest directory,
//!    read and write on the call's scratch directory and its private home,
//!    TCP only to the forwarders, no signals to and no abstract sockets of
//!    processes outside the jail. No other program can be started, and the
//!    system's program directories cannot even be read.
//!
//! The child inherits both, and starts in a process group of its own so a
//! timeout kills everything it started. The thread ends once the tool has
//! started; the restrictions end with it and never reach Tazuna.
//!
//! Where the kernel cannot do one of these (no Landlock, or no network
//! namespace for an unprivileged user), [`support`] says what is missing.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What every tool may read (libraries, shared data, certificates, name
/// service files). Not the program directories (`/usr/bin`, `/bin`…): a
/// dynamic loader could run what it can read.
#[cfg(target_os = "linux")]
const SYSTEM_READ: &[&str] = &[
    "/lib",
    "/lib64",
    "/usr/lib",
    "/usr/lib64",
    "/usr/share",
    "/etc/ld.so.cache",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
];

/// Devices every tool may read and write.
#[cfg(target_os = "linux")]
const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"];

/// A host and port a tool may reach, because the manifest names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Endpoint {
    /// Host name or IP address.
    pub host: String,
    /// TCP port.
    pub port: u16,
}

impl Endpoint {
    fn is_loopback(&self) -> bool {
        self.host == "localhost"
            || self
                .host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// What one tool run may touch.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// The only programs that may be started: the tool and the other granted
    /// tools (each with what it needs to start, see [`starters`]).
    pub programs: Vec<PathBuf>,
    /// Read only (the manifest directory).
    pub read: Vec<PathBuf>,
    /// Read and write (scratch, the private home).
    pub write: Vec<PathBuf>,
    /// The hosts the tool may reach.
    pub endpoints: Vec<Endpoint>,
}

/// What this machine's kernel lets the jail do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support {
    /// Landlock restricts files, TCP, signals.
    pub landlock: Result<(), String>,
    /// A network namespace can be entered.
    pub network: Result<(), String>,
}

impl Support {
    /// What is missing for a full jail, or `None`.
    pub fn missing(&self) -> Option<String> {
        let missing: Vec<&str> = [&self.landlock, &self.network]
            .into_iter()
            .filter_map(|r| r.as_ref().err().map(String::as_str))
            .collect();
        (!missing.is_empty()).then(|| missing.join("; "))
    }
}

/// What the kernel offers, probed once per process.
pub fn support() -> &'static Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(|| {
        std::thread::spawn(|| Support {
            network: enter_network_namespace(),
            landlock: restrict(&Policy::default(), &[]),
        })
        .join()
        .unwrap_or_else(|_| Support {
            landlock: Err("probing Landlock failed".into()),
            network: Err("probing network namespaces failed".into()),
        })
    })
}

/// A running tool and the forwarders that serve it; dropping it stops them.
#[derive(Debug)]
pub struct Jailed {
    /// The tool; its process group id is its pid.
    pub child: Child,
    stop: Arc<AtomicBool>,
}

impl Drop for Jailed {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Start `command` in the jail `policy` describes. Sets the proxy variables
/// on `command` when a non-loopback endpoint is named.
pub fn spawn(mut command: Command, policy: Policy) -> Result<Jailed, String> {
    let support = support();
    let (child, routes) = std::thread::spawn(move || {
        let mut routes = Vec::new();
        let ports: Vec<u16> = if support.network.is_ok() {
            enter_network_namespace()?;
            routes = listen(&policy.endpoints, &mut command)?;
            routes
                .iter()
                .filter_map(|(listener, _)| listener.local_addr().ok())
                .map(|addr| addr.port())
                .collect()
        } else {
            policy.endpoints.iter().map(|e| e.port).collect()
        };
        if support.landlock.is_ok() {
            restrict(&policy, &ports)?;
        }
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let child = command.spawn().map_err(|error| error.to_string())?;
        Ok::<_, String>((child, routes))
    })
    .join()
    .map_err(|_| "the jail's thread panicked".to_owned())??;
    // The listeners live in the jail's namespace; the threads that serve them
    // run here, in Tazuna's, so they reach the real endpoints.
    let stop = Arc::new(AtomicBool::new(false));
    for (listener, route) in routes {
        match route {
            Route::Forward(target) => serve(listener, stop.clone(), move |inbound| {
                if let Ok(outbound) = TcpStream::connect_timeout(&target, Duration::from_secs(10)) {
                    splice(inbound, outbound);
                }
            }),
            Route::Proxy(allowed) => {
                serve(listener, stop.clone(), move |inbound| {
                    proxy(inbound, &allowed)
                });
            }
        }
    }
    Ok(Jailed { child, stop })
}

/// Where connections to one of the jail's listeners go.
enum Route {
    /// To this address on Tazuna's side.
    Forward(SocketAddr),
    /// Through a CONNECT proxy, to these endpoints only.
    Proxy(Vec<Endpoint>),
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

/// No network namespaces off Linux.
#[cfg(not(target_os = "linux"))]
fn enter_network_namespace() -> Result<(), String> {
    Err("no network namespace: tools are jailed on Linux only".into())
}

/// Enter a new network namespace on this thread and bring its loopback up.
#[cfg(target_os = "linux")]
fn enter_network_namespace() -> Result<(), String> {
    #[allow(unsafe_code)]
    // SAFETY: unshare(2) and the ioctls below take only the flags and the
    // zeroed `ifreq` we own; CLONE_NEWNET changes this thread alone.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNET) != 0 {
            return Err(format!(
                "no network namespace ({}; unprivileged users need user namespaces, which this kernel or its settings refuse)",
                std::io::Error::last_os_error()
            ));
        }
        let socket = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if socket < 0 {
            return Err(format!(
                "cannot bring up loopback: {}",
                std::io::Error::last_os_error()
            ));
        }
        let mut request: libc::ifreq = std::mem::zeroed();
        for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
            *slot = *byte as libc::c_char;
        }
        let up = libc::ioctl(socket, libc::SIOCGIFFLAGS, &mut request) == 0 && {
            request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            libc::ioctl(socket, libc::SIOCSIFFLAGS, &request) == 0
        };
        let error = std::io::Error::last_os_error();
        libc::close(socket);
        if !up {
            return Err(format!("cannot bring up loopback: {error}"));
        }
    }
    Ok(())
}

/// Restrict this thread (and what it starts) to `policy`, with TCP connects
/// only to `ports`.
#[cfg(target_os = "linux")]
fn restrict(policy: &Policy, ports: &[u16]) -> Result<(), String> {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, Ruleset, RulesetAttr,
        RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
    };
    let abi = ABI::V6;
    let result = (|| {
        let ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(ABI::V3))?
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(abi))?
            .handle_access(AccessNet::from_all(abi))?
            .scope(Scope::from_all(abi))?
            .create()?;
        let read = AccessFs::ReadFile | AccessFs::ReadDir;
        let mut programs = Vec::new();
        for program in &policy.programs {
            starters(program, &mut programs, 0);
        }
        let mut ruleset = ruleset
            .add_rules(path_beneath_rules(SYSTEM_READ, read))?
            .add_rules(path_beneath_rules(
                &programs,
                AccessFs::Execute | AccessFs::ReadFile,
            ))?
            .add_rules(path_beneath_rules(&policy.read, read))?
            .add_rules(path_beneath_rules(
                DEVICES,
                AccessFs::ReadFile | AccessFs::WriteFile,
            ))?
            .add_rules(path_beneath_rules(&policy.write, AccessFs::from_all(abi)))?;
        for port in ports {
            ruleset = ruleset.add_rule(NetPort::new(*port, AccessNet::ConnectTcp))?;
        }
        ruleset.restrict_self()
    })();
    match result {
        Ok(status) if status.ruleset != RulesetStatus::NotEnforced => Ok(()),
        Ok(_) => Err("no Landlock (the kernel has it disabled or is older than 5.19)".into()),
        Err(error) => Err(format!("no Landlock: {error}")),
    }
}

/// `program` and what starting it executes too, into `found`: the dynamic
/// loader an ELF file names (`PT_INTERP`), or the interpreter of a `#!`
/// line (and, for `#!/usr/bin/env name`, the program `name` found on the
/// system's `PATH`), and theirs in turn.
#[cfg(target_os = "linux")]
fn starters(program: &std::path::Path, found: &mut Vec<PathBuf>, depth: usize) {
    let Ok(real) = std::fs::canonicalize(program) else {
        return;
    };
    if found.contains(&real) {
        return;
    }
    found.push(real.clone());
    if depth >= 4 {
        return;
    }
    let Ok(file) = std::fs::File::open(&real) else {
        return;
    };
    let mut head = [0u8; 256];
    let read = std::os::unix::fs::FileExt::read_at(&file, &mut head, 0).unwrap_or(0);
    let head = &head[..read];
    if let Some(line) = head.strip_prefix(b"#!") {
        let line = line.split(|b| *b == b'\n').next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        let mut words = line.split_whitespace();
        if let Some(interpreter) = words.next() {
            starters(interpreter.as_ref(), found, depth + 1);
            if interpreter.ends_with("/env")
                && let Some(name) = words.find(|word| !word.starts_with('-'))
                && let Some(path) = ["/usr/local/bin", "/usr/bin", "/bin"]
                    .iter()
                    .map(|dir| std::path::Path::new(dir).join(name))
                    .find(|path| path.is_file())
            {
                starters(&path, found, depth + 1);
            }
        }
    } else if let Some(interpreter) = elf_interpreter(&file, head) {
        starters(&interpreter, found, depth + 1);
    }
}

/// The `PT_INTERP` path of a 64-bit little-endian ELF file, if it has one.
#[cfg(target_os = "linux")]
fn elf_interpreter(file: &std::fs::File, head: &[u8]) -> Option<PathBuf> {
    use std::os::unix::fs::FileExt;
    if head.len() < 64 || &head[..4] != b"\x7fELF" || head[4] != 2 || head[5] != 1 {
        return None;
    }
    let u16_at = |at: usize| u16::from_le_bytes([head[at], head[at + 1]]);
    let table = u64::from_le_bytes(head[0x20..0x28].try_into().ok()?);
    let size = u64::from(u16_at(0x36));
    let count = u64::from(u16_at(0x38)).min(256);
    for index in 0..count {
        let mut entry = [0u8; 56];
        file.read_exact_at(&mut entry, table.checked_add(index.checked_mul(size)?)?)
            .ok()?;
        if u32::from_le_bytes(entry[..4].try_into().ok()?) != 3 {
            continue;
        }
        let offset = u64::from_le_bytes(entry[8..16].try_into().ok()?);
        let length = u64::from_le_bytes(entry[32..40].try_into().ok()?).min(4096);
        let mut path = vec![0u8; usize::try_from(length).ok()?];
        file.read_exact_at(&mut path, offset).ok()?;
        let end = path.iter().position(|b| *b == 0).unwrap_or(path.len());
        return Some(PathBuf::from(
            String::from_utf8_lossy(&path[..end]).into_owned(),
        ));
    }
    None
}

#[cfg(not(target_os = "linux"))]
fn restrict(_: &Policy, _: &[u16]) -> Result<(), String> {
    Err("no Landlock: tools are jailed on Linux only".into())
}

/// Listen, inside the namespace this thread is in, for each endpoint.
/// Loopback endpoints keep their port; the others go through one CONNECT
/// proxy named in `HTTPS_PROXY`.
fn listen(
    endpoints: &[Endpoint],
    command: &mut Command,
) -> Result<Vec<(TcpListener, Route)>, String> {
    let mut routes = Vec::new();
    let mut ports = Vec::new();
    let (local, remote): (Vec<&Endpoint>, Vec<&Endpoint>) =
        endpoints.iter().partition(|e| e.is_loopback());
    for endpoint in local {
        if ports.contains(&endpoint.port) {
            continue;
        }
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, endpoint.port))
            .map_err(|e| format!("cannot forward {endpoint}: {e}"))?;
        let target = SocketAddr::from((Ipv4Addr::LOCALHOST, endpoint.port));
        routes.push((listener, Route::Forward(target)));
        ports.push(endpoint.port);
    }
    if !remote.is_empty() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(|e| format!("cannot start the jail's proxy: {e}"))?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let url = format!("http://127.0.0.1:{port}");
        for key in ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"] {
            command.env(key, &url);
        }
        routes.push((
            listener,
            Route::Proxy(remote.into_iter().cloned().collect()),
        ));
    }
    Ok(routes)
}

/// Accept connections on `listener` until `stop` is set, handing each to
/// `handle` on a thread of its own.
fn serve(
    listener: TcpListener,
    stop: Arc<AtomicBool>,
    handle: impl Fn(TcpStream) + Send + Sync + 'static,
) {
    let handle = Arc::new(handle);
    let _ = listener.set_nonblocking(true);
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((stream, _)) => {
                    let _ = stream.set_nonblocking(false);
                    let handle = handle.clone();
                    std::thread::spawn(move || handle(stream));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    });
}

/// Copy both ways between `a` and `b` until each side has closed.
fn splice(a: TcpStream, b: TcpStream) {
    let (Ok(a2), Ok(b2)) = (a.try_clone(), b.try_clone()) else {
        return;
    };
    let one = std::thread::spawn(move || copy_then_close(a, b2));
    copy_then_close(b, a2);
    let _ = one.join();
}

fn copy_then_close(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
}

/// One CONNECT request: through to an allowed endpoint, else 403.
fn proxy(mut inbound: TcpStream, allowed: &[Endpoint]) {
    let _ = inbound.set_read_timeout(Some(Duration::from_secs(10)));
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 8192 {
        match inbound.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let _ = inbound.set_read_timeout(None);
    let line = String::from_utf8_lossy(&head);
    let target = line
        .lines()
        .next()
        .and_then(|first| first.strip_prefix("CONNECT "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|authority| {
            let (host, port) = authority.rsplit_once(':')?;
            Some(Endpoint {
                host: host.trim_matches(['[', ']']).to_owned(),
                port: port.parse().ok()?,
            })
        });
    let Some(target) = target.filter(|t| allowed.contains(t)) else {
        let _ = inbound.write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
        return;
    };
    let outbound = (target.host.as_str(), target.port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .and_then(|addr| TcpStream::connect_timeout(&addr, Duration::from_secs(10)).ok());
    let Some(outbound) = outbound else {
        let _ = inbound.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
        return;
    };
    if inbound
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .is_ok()
    {
        splice(inbound, outbound);
    }
}

/// The endpoints named in a manifest's config (the user's `tazuna.yaml`):
/// every `oci://`, `http://` and `https://` URL in it, and the chart
/// repositories of `repositories` (name, URL) whose name appears as a value
/// or as the `<name>/` of a chart reference.
pub fn endpoints_named_in(config: &str, repositories: &[(String, String)]) -> Vec<Endpoint> {
    let mut found = Vec::new();
    let Ok(value) = serde_json::from_str::<serde_json::Value>(config) else {
        return found;
    };
    let mut strings = Vec::new();
    collect_strings(&value, &mut strings);
    for text in &strings {
        for word in text.split(|c: char| c.is_whitespace() || c == ',' || c == '"') {
            if let Some(endpoint) = endpoint_of_url(word) {
                found.push(endpoint);
            }
        }
        for (name, url) in repositories {
            let named = text == name || text.starts_with(&format!("{name}/"));
            if named && let Some(endpoint) = endpoint_of_url(url) {
                found.push(endpoint);
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

fn collect_strings<'a>(value: &'a serde_json::Value, out: &mut Vec<&'a str>) {
    match value {
        serde_json::Value::String(s) => out.push(s),
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

/// `oci://host:port/…`, `https://host/…` or `http://host:port/…` as an endpoint.
pub fn endpoint_of_url(url: &str) -> Option<Endpoint> {
    let (scheme, rest) = url.split_once("://")?;
    let default = match scheme {
        "https" | "oci" => 443,
        "http" => 80,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    if authority.is_empty() {
        return None;
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => {
            match port.parse() {
                Ok(port) => (host, port),
                Err(_) => (authority, default),
            }
        }
        _ => (authority, default),
    };
    Some(Endpoint {
        host: host.trim_matches(['[', ']']).to_owned(),
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn starters_of(program: &str) -> Vec<PathBuf> {
        let mut found = Vec::new();
        starters(program.as_ref(), &mut found, 0);
        found
    }

    #[test]
    fn a_dynamic_program_brings_its_loader_and_a_script_its_interpreter() {
        let bash = std::fs::canonicalize("/bin/bash").unwrap();
        let found = starters_of("/bin/bash");
        assert_eq!(found[0], bash);
        assert!(
            found[1..]
                .iter()
                .any(|path| path.to_string_lossy().contains("ld-linux")),
            "{found:?}"
        );
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("tool");
        std::fs::write(&script, "#!/usr/bin/env -S bash -e\necho hi\n").unwrap();
        let found = starters_of(&script.to_string_lossy());
        let env = std::fs::canonicalize("/usr/bin/env").unwrap();
        assert!(found.contains(&env) && found.contains(&bash), "{found:?}");
        // A static program (as Go builds helm) brings nothing.
        let text = dir.path().join("data");
        std::fs::write(&text, "not a program").unwrap();
        assert_eq!(starters_of(&text.to_string_lossy()).len(), 1);
    }

    #[test]
    fn only_the_granted_programs_start() {
        if let Err(missing) = &support().landlock {
            assert!(
                std::env::var_os("TAZUNA_E2E_REQUIRED").is_none(),
                "{missing}"
            );
            eprintln!("skipped: {missing}");
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

    #[test]
    fn urls_in_the_config_name_their_endpoints() {
        let config = r#"{"chart":"oci://127.0.0.1:5000/charts/hello","repo":"https://charts.example","values":{"x":"http://10.0.0.1:8080/a"}}"#;
        let found = endpoints_named_in(config, &[]);
        let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            ["10.0.0.1:8080", "127.0.0.1:5000", "charts.example:443"]
        );
    }

    #[test]
    fn a_repository_is_named_by_its_name_or_a_chart_in_it() {
        let repos = vec![
            ("acme".to_owned(), "http://127.0.0.1:8879/charts".to_owned()),
            ("other".to_owned(), "https://other.example".to_owned()),
        ];
        let found = endpoints_named_in(r#"{"repo":"acme","chart":"hello"}"#, &repos);
        assert_eq!(
            found,
            [Endpoint {
                host: "127.0.0.1".into(),
                port: 8879
            }]
        );
        let found = endpoints_named_in(r#"{"chart":"other/app"}"#, &repos);
        assert_eq!(
            found,
            [Endpoint {
                host: "other.example".into(),
                port: 443
            }]
        );
        assert!(endpoints_named_in(r#"{"chart":"local/dir"}"#, &repos).is_empty());
    }

    #[test]
    fn words_that_are_not_urls_name_nothing() {
        assert_eq!(endpoint_of_url("ftp://x"), None);
        assert_eq!(endpoint_of_url("charts/hello"), None);
        assert_eq!(
            endpoint_of_url("https://user:pw@h.example:8443/x"),
            Some(Endpoint {
                host: "h.example".into(),
                port: 8443
            })
        );
    }
}
