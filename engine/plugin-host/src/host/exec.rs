//! The `exec` host import: running a tool such as `helm` on a plugin's behalf.
//!
//! A plugin never spawns processes itself. It names a logical tool; the host checks
//! the grant `exec:<tool>`, maps the name to a binary, and for the tools it knows
//! (`helm`, `kustomize`, `helmfile`) reads the arguments with the tool's own
//! grammar ([`grammar`](super::grammar)): only the subcommands and flags a render
//! needs. Guest paths in arguments and
//! the working directory become host paths inside the preopened directories;
//! any other absolute path, and any `..`, is refused. The environment is built
//! here: `PATH`, a private home, config, cache and temp directory per call
//! (outside scratch, so nothing the plugin writes is taken as configuration),
//! copies of only the registry logins and chart repositories the manifest
//! names, the sign-in variables a tool such as `op` needs, and of the plugin's
//! variables only those each tool allows. The tool then runs in the [`jail`](super::jail),
//! with a timeout and an output cap, and its whole process group is killed
//! when it ends or runs out of time.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::bindings::exec::{Command as ExecCommand, Output};
use super::bindings::types::PluginError;
use super::capabilities::Capabilities;
use super::content;
use super::jail::{self, Endpoint, Policy};
use super::mounts::{Mount, guests, map_argument, to_host};

/// The most output kept from one stream of one tool run.
pub const OUTPUT_CAP: usize = 64 * 1024 * 1024;

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
    /// Whether the plugin is a built-in (it may run tools unjailed, with a
    /// warning, where the kernel cannot jail them).
    pub builtin: bool,
    /// What the manifest names: the endpoints tools may reach, and the chart
    /// repositories (name, URL) they may use.
    pub network: &'a Network,
    /// Whether the host built the command line (the `tools` import), rather
    /// than the plugin passing free arguments.
    pub typed: bool,
}

/// The hosts and chart repositories a manifest's config names.
#[derive(Debug, Clone, Default)]
pub struct Network {
    /// Hosts and ports tools may reach.
    pub endpoints: Vec<Endpoint>,
    /// Chart repositories of the user's `repositories.yaml` the config names.
    pub repositories: Vec<String>,
    /// `--offline` took every endpoint away.
    pub offline: bool,
    /// The OCI references the config names (without `oci://`): the only
    /// artifacts a plugin may pull.
    pub references: Vec<String>,
}

/// Run `command` for the plugin described by `ctx`, in a `tool run` trace
/// span (the tool and its exit code; never its arguments or environment).
pub fn run(ctx: &ExecContext<'_>, command: ExecCommand) -> Result<Output, PluginError> {
    let span = tracing::info_span!(
        target: tazuna_core::TRACE,
        "tool run",
        tazuna.tool = command.tool.as_str(),
        tazuna.plugin = ctx.plugin,
        tazuna.exit_code = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        otel.status_description = tracing::field::Empty,
    );
    let result = span.in_scope(|| run_untraced(ctx, command));
    let status = match &result {
        Ok(output) => {
            span.record("tazuna.exit_code", output.exit_code);
            match output.exit_code {
                0 => Ok(()),
                code => Err(format!("exited with {code}")),
            }
        }
        // The render's error says why; a message here could quote what a
        // tool was handed.
        Err(_) => Err("the host refused to run it, or it could not start".to_owned()),
    };
    tazuna_core::trace_status(&span, status);
    result
}

fn run_untraced(ctx: &ExecContext<'_>, command: ExecCommand) -> Result<Output, PluginError> {
    let tool = command.tool.as_str();
    let grant = format!("exec:{tool}");
    if !ctx.capabilities.allows(&grant) {
        return Err(PluginError::CapabilityDenied(format!(
            "plugin `{}` may not run `{tool}`: capability `{grant}` is not granted (effective: {})",
            ctx.plugin, ctx.capabilities
        )));
    }
    let argv_grant = format!("exec-argv:{tool}");
    if !ctx.builtin
        && !ctx.typed
        && super::tools::has_typed_operations(tool)
        && !ctx.capabilities.allows(&argv_grant)
    {
        return Err(PluginError::CapabilityDenied(format!(
            "plugin `{}` passed free arguments to `{tool}`: a third-party plugin asks the host for `{tool}`'s render through the typed `tools` import (the SDK's `tazuna_sdk::tools`); to let it pass free arguments, which the host only filters, request and grant `{argv_grant}`",
            ctx.plugin
        )));
    }
    if let Some(problem) = super::grammar::refused(tool, &command.args, &command.env) {
        return Err(PluginError::CapabilityDenied(format!(
            "plugin `{}` asked `{tool}` for {problem}",
            ctx.plugin
        )));
    }
    if let Some(missing) = jail::support().missing() {
        if !ctx.builtin {
            return Err(PluginError::CapabilityDenied(format!(
                "plugin `{}` may not run `{tool}`: this machine cannot jail tools ({missing}), and third-party plugins run tools only in a jail",
                ctx.plugin
            )));
        }
        warn_unjailed(&missing);
    }
    let binary = locate(tool).ok_or_else(|| {
        PluginError::NotFound(format!(
            "tool `{tool}` is not installed: put it on PATH or set {}",
            tool_env_var(tool)
        ))
    })?;
    let mut args = Vec::with_capacity(command.args.len());
    let mut named = Vec::new();
    for arg in &command.args {
        args.push(map_argument(ctx.mounts, arg, &mut named).ok_or_else(|| {
            PluginError::CapabilityDenied(format!(
                "plugin `{}` passed `{arg}` to `{tool}`: tools see only paths under {}",
                ctx.plugin,
                guests(ctx.mounts)
            ))
        })?);
    }
    // helmfile's own config can name the programs it runs; the host names
    // them instead (helmfile lets the command line win over every helmfile
    // and base), so no spelling in a helmfile chooses one.
    let binaries = (tool == "helmfile").then(|| helmfile_binaries(ctx.capabilities));
    if let Some(binaries) = &binaries {
        let flags = binaries
            .iter()
            .map(|(_, flag, path)| format!("--{flag}={path}"));
        args.splice(0..0, flags);
    }
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
    // Relative pieces name files in the working directory, if anything.
    let named: Vec<PathBuf> = named
        .into_iter()
        .map(|path| cwd.join(path))
        .filter(|path| path.symlink_metadata().is_ok())
        .collect();
    // A helmfile read from stdin is checked as the file it stands for, and
    // the directory it is read in as a handed helmfile's.
    let stdin_helmfile = tool == "helmfile" && command.stdin.is_some();
    let checked = content::check(tool, ctx.mounts, &named).and_then(|()| {
        match (&command.stdin, stdin_helmfile) {
            (Some(text), true) => content::check(tool, ctx.mounts, std::slice::from_ref(&cwd))
                .and_then(|()| content::helmfile_stdin(text)),
            _ => Ok(()),
        }
    });
    checked.map_err(|problem| {
        PluginError::CapabilityDenied(format!(
            "plugin `{}` cannot hand `{tool}` its input: {problem}",
            ctx.plugin
        ))
    })?;
    let timeout = command
        .timeout_ms
        .map(|ms| Duration::from_millis(u64::from(ms)))
        .unwrap_or(ctx.max_timeout)
        .min(ctx.max_timeout);

    // The tool holds no login: the forwarders add the user's logins to its
    // reads of the hosts they are for.
    let logins = if tool == "op" {
        jail::Logins::default()
    } else {
        user_logins(ctx.network)
    };
    let private = Private::new(tool, ctx.network, &logins)
        .map_err(|error| PluginError::Other(format!("cannot prepare `{tool}`'s home: {error}")))?;
    let fetchers = super::fetchers::Fetchers::of(tool, ctx.network);
    let mut child = Command::new(&binary);
    child
        .args(&args)
        .current_dir(&cwd)
        .env_clear()
        .env("PATH", tool_path(ctx.capabilities, &fetchers.programs))
        .stdin(if command.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in private.environment() {
        child.env(key, value);
    }
    let git = fetchers
        .environment(&private.root().join("git-core"))
        .map_err(|error| {
            PluginError::Other(format!("cannot prepare `git` for `{tool}`: {error}"))
        })?;
    for (key, value) in git {
        child.env(key, value);
    }
    let mut endpoints = ctx.network.endpoints.clone();
    let mut writable = vec![private.root().to_owned()];
    for (key, value) in passed_environment(tool) {
        child.env(key, &value);
        if key == "OP_CONNECT_HOST" {
            endpoints.extend(jail::endpoint_of_url(&value.to_string_lossy()));
        }
    }
    if tool == "op" {
        endpoints.extend(ONE_PASSWORD_HOSTS.iter().map(|host| Endpoint {
            host: (*host).to_owned(),
            port: 443,
        }));
        writable.extend(op_config_dir());
    }
    for (key, value) in &command.env {
        child.env(key, value);
    }
    writable.extend(
        ctx.mounts
            .iter()
            .filter(|m| m.guest == super::SCRATCH_DIR)
            .map(|m| m.host.clone()),
    );
    let policy = Policy {
        programs: tool_binaries(ctx.capabilities, &binary)
            .into_iter()
            .chain(fetchers.programs)
            .collect(),
        read: ctx
            .mounts
            .iter()
            .filter(|m| m.guest != super::SCRATCH_DIR)
            .map(|m| m.host.clone())
            .collect(),
        write: writable,
        endpoints,
        logins,
        // `op` signs in with the user's own accounts and renders no content.
        identity: if tool == "op" {
            jail::Identity::Caller
        } else {
            jail::Identity::Jail
        },
    };
    tracing::debug!(plugin = ctx.plugin, tool, ?args, cwd = %cwd.display(), "exec");
    let mut jailed = jail::spawn(child, policy).map_err(|error| {
        PluginError::Other(format!("cannot start `{}`: {error}", binary.display()))
    })?;
    let child = &mut jailed.child;
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
                jail::kill_group(child);
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
    // Whatever the tool left running (and holding its output open) goes with it.
    jail::kill_group(child);
    drop(private);
    let (stdout, cut_out) = stdout.join().unwrap_or_default();
    let (stderr, cut_err) = stderr.join().unwrap_or_default();
    // Half an output would render as fewer objects, quietly.
    for (cut, stream) in [(cut_out, "stdout"), (cut_err, "stderr")] {
        if cut {
            return Err(PluginError::Other(format!(
                "`{tool}` wrote more than {} MiB to {stream}, more than Tazuna keeps of one tool's output; split the manifest so each render is smaller",
                OUTPUT_CAP / (1024 * 1024)
            )));
        }
    }
    // A process the kernel stopped for memory fails the run, even when the
    // tool carried on without it: what it would have rendered is missing.
    if let Some(memory) = &jailed.memory
        && memory.went_over()
    {
        return Err(PluginError::Other(format!(
            "`{tool}` and what it started held more than {} MiB of memory, the most a tool run may hold, and the kernel stopped a process of it; split the manifest so each render is smaller",
            jail::TOOL_RESIDENT >> 20
        )));
    }
    let exit_code = status.code().unwrap_or(-1);
    // The state helmfile built, read as helmfile reads it: whatever spelling
    // a helmfile or its bases used, a program it names shows here.
    if exit_code == 0
        && let Some(binaries) = &binaries
        && super::grammar::subcommand(tool, &command.args) == Some("build")
        && let Some(Err(problem)) = content::helmfile_state(
            &String::from_utf8_lossy(&stdout),
            &binaries
                .iter()
                .map(|(key, _, path)| (*key, path.as_str()))
                .collect::<Vec<_>>(),
        )
    {
        return Err(PluginError::CapabilityDenied(format!(
            "plugin `{}` cannot hand `helmfile` its input: {problem}",
            ctx.plugin
        )));
    }
    // What the tool says about its input names the manifest's directory,
    // not the view the host built of it.
    let mut stderr = stderr;
    for mount in ctx.mounts {
        if let Some(shown) = &mount.shown {
            stderr = replace_bytes(
                &stderr,
                mount.host.to_string_lossy().as_bytes(),
                shown.to_string_lossy().as_bytes(),
            );
        }
    }
    Ok(Output {
        exit_code,
        stdout,
        stderr,
        truncated: cut_out || cut_err,
    })
}

/// `text` with every `from` replaced by `to`.
fn replace_bytes(text: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    if from.is_empty() {
        return text.to_vec();
    }
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.windows(from.len()).position(|window| window == from) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(to);
        rest = &rest[at + from.len()..];
    }
    out.extend_from_slice(rest);
    out
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

/// Warn once per process that tools run without a jail.
fn warn_unjailed(missing: &str) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        tracing::warn!(
            "built-in plugins run their tools without a full jail on this machine ({missing}); \
             third-party plugins may not run tools here"
        );
    });
}

/// The 1Password hosts `op` signs in to.
const ONE_PASSWORD_HOSTS: &[&str] = &["my.1password.com", "my.1password.eu", "my.1password.ca"];

/// `op`'s configuration directory, where it keeps its accounts.
fn op_config_dir() -> Option<PathBuf> {
    std::env::var_os("OP_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CONFIG_HOME").map(|d| PathBuf::from(d).join("op")))
        .or_else(|| std::env::var_os("HOME").map(|d| PathBuf::from(d).join(".config/op")))
        .filter(|dir| dir.is_dir())
}

/// The binaries of the tool and of every other tool the plugin may run (so
/// `helmfile` may start `helm`): the only programs its jail lets start.
fn tool_binaries(capabilities: &Capabilities, binary: &Path) -> Vec<PathBuf> {
    let mut binaries: Vec<PathBuf> = capabilities
        .iter()
        .filter_map(|capability| capability.strip_prefix("exec:"))
        .filter(|tool| !tool.contains('*'))
        .filter_map(locate)
        .chain(std::iter::once(binary.to_owned()))
        .map(|binary| std::fs::canonicalize(&binary).unwrap_or(binary))
        .collect();
    binaries.sort();
    binaries.dedup();
    binaries
}

/// The programs helmfile runs, as the host names them (the state key, the
/// flag, the path): the granted `helm` and `kustomize`, or a path that is
/// nothing for a tool not granted.
fn helmfile_binaries(capabilities: &Capabilities) -> [(&'static str, &'static str, String); 2] {
    let binary = |tool: &str| {
        capabilities
            .allows(&format!("exec:{tool}"))
            .then(|| locate(tool))
            .flatten()
            .map(|path| std::fs::canonicalize(&path).unwrap_or(path))
            .map_or_else(
                || format!("/nonexistent/{tool}"),
                |path| path.display().to_string(),
            )
    };
    [
        ("helmBinary", "helm-binary", binary("helm")),
        ("kustomizeBinary", "kustomize-binary", binary("kustomize")),
    ]
}

/// The user's logins for the hosts and chart repositories `network` names,
/// which the jail's forwarders add to a tool's reads.
fn user_logins(network: &Network) -> jail::Logins {
    let registries = crate::distribution::helm_registry_config()
        .and_then(|path| std::fs::read_to_string(path).ok());
    let repositories = crate::distribution::helm_repositories()
        .into_iter()
        .find(|(key, _)| *key == "HELM_REPOSITORY_CONFIG")
        .and_then(|(_, path)| std::fs::read_to_string(path).ok());
    jail::Logins::from_user_files(
        registries.as_deref(),
        repositories.as_deref(),
        &network.endpoints,
        &network.repositories,
    )
}

/// Where the system's trust roots are, for a tool that must also trust the
/// run's own authority: `SSL_CERT_FILE`, else Debian's and Red Hat's bundles.
fn system_roots() -> Option<String> {
    std::env::var_os("SSL_CERT_FILE")
        .map(PathBuf::from)
        .into_iter()
        .chain(
            [
                "/etc/ssl/certs/ca-certificates.crt",
                "/etc/pki/tls/certs/ca-bundle.crt",
            ]
            .map(PathBuf::from),
        )
        .find_map(|path| std::fs::read_to_string(path).ok())
}

/// One tool run's own home: empty but for copies of the chart repositories
/// its manifest names (name and URL, never a login) and, where the run's
/// forwarders sign, the trust roots that include the run's authority. It
/// lies outside the plugin's directories and is removed when the run ends.
struct Private {
    dir: jail::Scratch,
    helm: bool,
    trust: bool,
}

impl Private {
    fn new(tool: &str, network: &Network, logins: &jail::Logins) -> std::io::Result<Self> {
        // Mode 0700: only the tool reads its logins (as root, the jail's view
        // maps the home to the jail's user). Bounded in size like scratch.
        let dir = jail::Scratch::new("tazuna-tool-")?;
        for sub in [
            "home",
            "tmp",
            "config",
            "cache",
            "data",
            "data/helm/plugins",
        ] {
            std::fs::create_dir_all(dir.path().join(sub))?;
        }
        let helm = matches!(tool, "helm" | "helmfile");
        let trust = logins.authority_pem().is_some();
        let private = Self { dir, helm, trust };
        if helm {
            private.copy_helm_config(network)?;
        }
        if let Some(authority) = logins.authority_pem() {
            let roots = system_roots().unwrap_or_default();
            std::fs::write(private.trust_file(), format!("{roots}\n{authority}"))?;
        }
        Ok(private)
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn trust_file(&self) -> PathBuf {
        self.root().join("config/trust.pem")
    }

    fn environment(&self) -> Vec<(&'static str, PathBuf)> {
        let root = self.root();
        let mut env = vec![
            ("HOME", root.join("home")),
            ("TMPDIR", root.join("tmp")),
            ("XDG_CONFIG_HOME", root.join("config")),
            ("XDG_CACHE_HOME", root.join("cache")),
            ("XDG_DATA_HOME", root.join("data")),
            ("GIT_CONFIG_GLOBAL", PathBuf::from("/dev/null")),
            ("GIT_CONFIG_NOSYSTEM", PathBuf::from("1")),
            ("GIT_TERMINAL_PROMPT", PathBuf::from("0")),
            // git may speak HTTP(S) alone: no `ext::` (a command), `file://`
            // (the host's disk) or SSH, whatever a URL or a `.gitmodules` says.
            ("GIT_ALLOW_PROTOCOL", PathBuf::from("http:https")),
        ];
        if self.trust {
            // Go, OpenSSL and git read the system's roots and the run's
            // authority from here.
            env.push(("SSL_CERT_FILE", self.trust_file()));
        }
        if self.helm {
            env.extend([
                ("HELM_CONFIG_HOME", root.join("config/helm")),
                ("HELM_CACHE_HOME", root.join("cache/helm")),
                ("HELM_DATA_HOME", root.join("data/helm")),
                ("HELM_PLUGINS", root.join("data/helm/plugins")),
                (
                    "HELM_REGISTRY_CONFIG",
                    root.join("config/helm/registry/config.json"),
                ),
                (
                    "HELM_REPOSITORY_CONFIG",
                    root.join("config/helm/repositories.yaml"),
                ),
                ("HELM_REPOSITORY_CACHE", root.join("cache/helm/repository")),
            ]);
        }
        env
    }

    /// The named chart repositories (with their index), copied from the
    /// user's helm configuration: each keeps its name and URL alone. No
    /// login is copied: the jail's forwarders add them.
    fn copy_helm_config(&self, network: &Network) -> std::io::Result<()> {
        let root = self.root();
        std::fs::create_dir_all(root.join("config/helm/registry"))?;
        std::fs::create_dir_all(root.join("cache/helm/repository"))?;
        let known = crate::distribution::helm_repositories();
        let config = known
            .iter()
            .find(|(key, _)| *key == "HELM_REPOSITORY_CONFIG");
        let cache = known
            .iter()
            .find(|(key, _)| *key == "HELM_REPOSITORY_CACHE");
        if let Some((_, file)) = config
            && let Ok(text) = std::fs::read_to_string(file)
            && let Ok(mut repositories) = serde_yaml::from_str::<serde_yaml::Value>(&text)
        {
            if let Some(list) = repositories
                .get_mut("repositories")
                .and_then(|r| r.as_sequence_mut())
            {
                list.retain(|entry| {
                    entry["name"]
                        .as_str()
                        .is_some_and(|name| network.repositories.iter().any(|n| n == name))
                });
                for entry in list.iter_mut() {
                    if let Some(map) = entry.as_mapping_mut() {
                        map.retain(|key, _| matches!(key.as_str(), Some("name" | "url")));
                    }
                }
            }
            let text = serde_yaml::to_string(&repositories).unwrap_or_default();
            std::fs::write(root.join("config/helm/repositories.yaml"), text)?;
            if let Some((_, cache)) = cache {
                for name in &network.repositories {
                    for file in [format!("{name}-index.yaml"), format!("{name}-charts.txt")] {
                        let from = cache.join(&file);
                        if from.is_file() {
                            std::fs::copy(&from, root.join("cache/helm/repository").join(&file))?;
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// The chart repositories (name, URL) of the user's `repositories.yaml`.
pub fn user_repositories() -> Vec<(String, String)> {
    let known = crate::distribution::helm_repositories();
    let Some((_, file)) = known
        .iter()
        .find(|(key, _)| *key == "HELM_REPOSITORY_CONFIG")
    else {
        return Vec::new();
    };
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    let Ok(value) = serde_yaml::from_str::<serde_yaml::Value>(&text) else {
        return Vec::new();
    };
    value["repositories"]
        .as_sequence()
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            Some((
                entry["name"].as_str()?.to_owned(),
                entry["url"].as_str()?.to_owned(),
            ))
        })
        .collect()
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
fn tool_path(capabilities: &Capabilities, fetchers: &[PathBuf]) -> String {
    let binaries = capabilities
        .iter()
        .filter_map(|capability| capability.strip_prefix("exec:"))
        .filter(|tool| !tool.contains('*'))
        .filter_map(locate)
        .chain(locate("git").filter(|_| !fetchers.is_empty()));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn mounts() -> Vec<Mount> {
        vec![
            Mount {
                guest: "/manifest".into(),
                host: "/home/me/cluster".into(),
                shown: None,
            },
            Mount {
                guest: "/scratch".into(),
                host: "/tmp/call-1".into(),
                shown: None,
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
        let map = |arg: &str| map_argument(&mounts(), arg, &mut Vec::new());
        assert_eq!(
            map("/manifest/chart").as_deref(),
            Some("/home/me/cluster/chart")
        );
        assert_eq!(
            map("--values=/scratch/v.yaml").as_deref(),
            Some("--values=/tmp/call-1/v.yaml")
        );
        assert_eq!(
            map("--set-file=a=/scratch/a,b=/manifest/b").as_deref(),
            Some("--set-file=a=/tmp/call-1/a,b=/home/me/cluster/b")
        );
        assert_eq!(
            map("--namespace=argocd").as_deref(),
            Some("--namespace=argocd")
        );
        assert_eq!(
            map("oci://127.0.0.1:5000/charts").as_deref(),
            Some("oci://127.0.0.1:5000/charts")
        );
    }

    #[test]
    fn host_paths_and_climbing_in_arguments_are_refused() {
        let map = |arg: &str| map_argument(&mounts(), arg, &mut Vec::new());
        assert_eq!(map("--set-file=x=/proc/1/environ"), None);
        assert_eq!(map("/etc/passwd"), None);
        assert_eq!(map("--values=../../root/.docker/config.json"), None);
        assert_eq!(map("x=a,b=/root/.config/helm/registry/config.json"), None);
    }
}
