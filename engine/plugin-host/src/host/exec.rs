//! The `exec` host import: running a tool such as `helm` on a plugin's behalf.
//!
//! A plugin never spawns processes itself. It names a logical tool; the host checks
//! the grant `exec:<tool>`, maps the name to a binary, refuses arguments that would
//! make the tool run other programs, maps guest paths in arguments and the working
//! directory to host paths inside the preopened directories, scrubs the
//! environment (passing only `PATH`, `HOME`, the path of the user's registry
//! logins, `HELM_REGISTRY_CONFIG`, to `helm` the repositories `helm repo add`
//! recorded, and the sign-in variables a tool such as `op` needs), and
//! enforces a timeout and an output cap.

use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::bindings::exec::{Command as ExecCommand, Output};
use super::bindings::types::PluginError;
use super::capabilities::Capabilities;

/// The most output kept from one stream of one tool run.
pub const OUTPUT_CAP: usize = 64 * 1024 * 1024;

/// Arguments that would let a tool run arbitrary programs, per tool.
const REFUSED_ARGS: &[(&str, &[&str])] = &[
    ("helm", &["--post-renderer"]),
    ("kustomize", &["--enable-exec", "--enable-alpha-plugins"]),
    (
        "helmfile",
        &[
            "--helm-binary",
            "-b",
            "--kustomize-binary",
            "-k",
            "--post-renderer",
            "--args",
            "--template-args",
        ],
    ),
];

/// A guest directory and the host directory behind it.
#[derive(Debug, Clone)]
pub struct Mount {
    /// Absolute guest path, such as `/manifest`.
    pub guest: String,
    /// The host directory.
    pub host: PathBuf,
}

/// What one call's `exec` may touch.
#[derive(Debug)]
pub struct ExecContext<'a> {
    /// The plugin's name, for messages.
    pub plugin: &'a str,
    /// Capabilities in effect.
    pub capabilities: &'a Capabilities,
    /// The call's preopened directories.
    pub mounts: &'a [Mount],
    /// Upper bound for any one tool run.
    pub max_timeout: Duration,
}

/// Run `command` for the plugin described by `ctx`.
pub fn run(ctx: &ExecContext<'_>, command: ExecCommand) -> Result<Output, PluginError> {
    let tool = command.tool.as_str();
    let grant = format!("exec:{tool}");
    if !ctx.capabilities.allows(&grant) {
        return Err(PluginError::CapabilityDenied(format!(
            "plugin `{}` may not run `{tool}`: capability `{grant}` is not granted (effective: {})",
            ctx.plugin, ctx.capabilities
        )));
    }
    if let Some(bad) = refused_argument(tool, &command.args) {
        return Err(PluginError::CapabilityDenied(format!(
            "plugin `{}` passed `{bad}` to `{tool}`, which would let it run other programs",
            ctx.plugin
        )));
    }
    let binary = locate(tool).ok_or_else(|| {
        PluginError::NotFound(format!(
            "tool `{tool}` is not installed: put it on PATH or set {}",
            tool_env_var(tool)
        ))
    })?;
    let args: Vec<String> = command
        .args
        .iter()
        .map(|arg| map_argument(ctx.mounts, arg))
        .collect();
    let cwd = match &command.cwd {
        Some(guest) => to_host(ctx.mounts, guest).ok_or_else(|| {
            PluginError::CapabilityDenied(format!(
                "working directory `{guest}` is outside the plugin's directories"
            ))
        })?,
        None => ctx
            .mounts
            .last()
            .map(|m| m.host.clone())
            .unwrap_or_else(std::env::temp_dir),
    };
    let timeout = command
        .timeout_ms
        .map(|ms| Duration::from_millis(u64::from(ms)))
        .unwrap_or(ctx.max_timeout)
        .min(ctx.max_timeout);

    let mut child = Command::new(&binary);
    child
        .args(&args)
        .current_dir(&cwd)
        .env_clear()
        .env("PATH", tool_path(ctx.capabilities))
        .env("HOME", &cwd)
        .stdin(if command.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Registry logins reach the tool by path, never through the plugin: the
    // file lies outside the plugin's preopens.
    if let Some(logins) = crate::distribution::helm_registry_config() {
        child.env("HELM_REGISTRY_CONFIG", logins);
    }
    // `helm` alone gets the repositories `helm repo add` recorded, with their
    // logins: helmfile would add its own repositories to the user's file.
    if tool == "helm" {
        for (key, path) in crate::distribution::helm_repositories() {
            child.env(key, path);
        }
    }
    for (key, value) in passed_environment(tool) {
        child.env(key, value);
    }
    for (key, value) in &command.env {
        child.env(key, value);
    }
    tracing::debug!(plugin = ctx.plugin, tool, ?args, cwd = %cwd.display(), "exec");
    let mut child = child.spawn().map_err(|error| {
        PluginError::Other(format!("cannot start `{}`: {error}", binary.display()))
    })?;
    if let Some(input) = command.stdin {
        let mut stdin = child.stdin.take().expect("stdin is piped");
        std::thread::spawn(move || std::io::Write::write_all(&mut stdin, &input));
    }
    let stdout = capture(child.stdout.take().expect("stdout is piped"));
    let stderr = capture(child.stderr.take().expect("stderr is piped"));
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(PluginError::Timeout(format!(
                    "`{tool}` did not finish within {}s",
                    timeout.as_secs_f64()
                )));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(error) => return Err(PluginError::Other(format!("waiting for `{tool}`: {error}"))),
        }
    };
    let (stdout, cut_out) = stdout.join().unwrap_or_default();
    let (stderr, cut_err) = stderr.join().unwrap_or_default();
    let exit_code = status.code().unwrap_or(-1);
    Ok(Output {
        exit_code,
        stdout,
        stderr,
        truncated: cut_out || cut_err,
    })
}

fn capture(mut stream: impl Read + Send + 'static) -> std::thread::JoinHandle<(Vec<u8>, bool)> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let _ = (&mut stream).take(OUTPUT_CAP as u64).read_to_end(&mut kept);
        // Drain the rest so the child never blocks on a full pipe.
        let cut = std::io::copy(&mut stream, &mut std::io::sink()).unwrap_or(0) > 0;
        (kept, cut)
    })
}

fn refused_argument<'a>(tool: &str, args: &'a [String]) -> Option<&'a str> {
    let refused = REFUSED_ARGS
        .iter()
        .find(|(name, _)| *name == tool)
        .map(|(_, flags)| *flags)?;
    args.iter().map(String::as_str).find(|arg| {
        refused
            .iter()
            .any(|flag| *arg == *flag || arg.starts_with(&format!("{flag}=")))
    })
}

/// What a tool needs from the user's environment to sign in, by tool. The
/// 1Password CLI keeps its accounts under the user's `HOME` and reads a
/// service-account or Connect token from `OP_*`. Only the tool process gets
/// these; the plugin that runs it never reads them.
const PASSED_ENVIRONMENT: &[(&str, &[&str])] = &[(
    "op",
    &[
        "HOME",
        "XDG_CONFIG_HOME",
        "OP_SERVICE_ACCOUNT_TOKEN",
        "OP_CONNECT_HOST",
        "OP_CONNECT_TOKEN",
        "OP_ACCOUNT",
        "OP_CONFIG_DIR",
    ],
)];

/// The variables of the user's environment that `tool` gets, as set now.
fn passed_environment(tool: &str) -> Vec<(&'static str, std::ffi::OsString)> {
    PASSED_ENVIRONMENT
        .iter()
        .filter(|(name, _)| *name == tool)
        .flat_map(|(_, keys)| keys.iter())
        .filter_map(|key| std::env::var_os(key).map(|value| (*key, value)))
        .collect()
}

/// The environment variable that names the binary for `tool`.
pub fn tool_env_var(tool: &str) -> String {
    format!(
        "TAZUNA_TOOL_{}",
        tool.to_ascii_uppercase().replace('-', "_")
    )
}

/// The binary for `tool`: `TAZUNA_TOOL_<TOOL>`, else the first match on PATH.
pub fn locate(tool: &str) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(tool_env_var(tool)) {
        return Some(PathBuf::from(path));
    }
    if tool.contains(['/', '\\']) {
        return None;
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(tool))
        .find(|candidate| candidate.is_file())
}

/// The tool's `PATH`: the directories of the tools the plugin may run (so
/// `helmfile` finds the `helm` that `TAZUNA_TOOL_HELM` names), then the system
/// directories. The caller's own `PATH` is not passed on.
fn tool_path(capabilities: &Capabilities) -> String {
    let binaries = capabilities
        .iter()
        .filter_map(|capability| capability.strip_prefix("exec:"))
        .filter(|tool| !tool.contains('*'))
        .filter_map(locate);
    path_of(binaries)
}

/// The directories of `binaries`, each once, then the system directories.
fn path_of(binaries: impl Iterator<Item = PathBuf>) -> String {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for dir in binaries.filter_map(|binary| binary.parent().map(Path::to_path_buf)) {
        if !dir.as_os_str().is_empty() && !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs.extend(SYSTEM_PATH.iter().map(PathBuf::from));
    std::env::join_paths(dirs)
        .map(|path| path.to_string_lossy().into_owned())
        .unwrap_or_else(|_| SYSTEM_PATH.join(":"))
}

/// Where every tool may look for system programs.
const SYSTEM_PATH: &[&str] = &["/usr/local/bin", "/usr/bin", "/bin"];

/// Map a guest path inside a mount to its host path; `None` if it is outside
/// every mount or climbs out with `..`.
pub fn to_host(mounts: &[Mount], guest: &str) -> Option<PathBuf> {
    let guest_path = Path::new(guest);
    mounts.iter().find_map(|mount| {
        let rest = guest_path.strip_prefix(&mount.guest).ok()?;
        if rest
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return None;
        }
        Some(mount.host.join(rest))
    })
}

fn map_argument(mounts: &[Mount], arg: &str) -> String {
    if let Some(host) = to_host(mounts, arg) {
        return host.display().to_string();
    }
    if let Some((flag, value)) = arg.split_once('=')
        && let Some(host) = to_host(mounts, value)
    {
        return format!("{flag}={}", host.display());
    }
    arg.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mounts() -> Vec<Mount> {
        vec![
            Mount {
                guest: "/manifest".into(),
                host: "/home/me/cluster".into(),
            },
            Mount {
                guest: "/scratch".into(),
                host: "/tmp/call-1".into(),
            },
        ]
    }

    #[test]
    fn tools_find_the_other_granted_tools_first_then_system_programs() {
        let path = path_of(
            [
                PathBuf::from("/cache/helmfile-v1.8.0/helmfile"),
                PathBuf::from("/cache/helm-v4.3.2/helm"),
                PathBuf::from("/cache/helm-v4.3.2/helm"),
            ]
            .into_iter(),
        );
        assert_eq!(
            path,
            "/cache/helmfile-v1.8.0:/cache/helm-v4.3.2:/usr/local/bin:/usr/bin:/bin"
        );
        assert_eq!(path_of(std::iter::empty()), "/usr/local/bin:/usr/bin:/bin");
    }

    #[test]
    fn guest_paths_map_into_their_mount() {
        assert_eq!(
            to_host(&mounts(), "/manifest/charts/app"),
            Some(PathBuf::from("/home/me/cluster/charts/app"))
        );
        assert_eq!(
            to_host(&mounts(), "/scratch"),
            Some(PathBuf::from("/tmp/call-1"))
        );
    }

    #[test]
    fn paths_outside_or_climbing_out_do_not_map() {
        assert_eq!(to_host(&mounts(), "/etc/passwd"), None);
        assert_eq!(to_host(&mounts(), "/manifest/../outside"), None);
        assert_eq!(to_host(&mounts(), "/manifests-evil/x"), None);
    }

    #[test]
    fn arguments_with_guest_paths_are_rewritten() {
        assert_eq!(
            map_argument(&mounts(), "/manifest/chart"),
            "/home/me/cluster/chart"
        );
        assert_eq!(
            map_argument(&mounts(), "--values=/scratch/v.yaml"),
            "--values=/tmp/call-1/v.yaml"
        );
        assert_eq!(
            map_argument(&mounts(), "--namespace=argocd"),
            "--namespace=argocd"
        );
    }

    #[test]
    fn flags_that_run_programs_are_refused() {
        let args = vec!["template".to_owned(), "--post-renderer=/bin/sh".to_owned()];
        assert_eq!(
            refused_argument("helm", &args),
            Some("--post-renderer=/bin/sh")
        );
        assert_eq!(refused_argument("kustomize", &args), None);
    }
}
