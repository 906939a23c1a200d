//! Global flags, and the settings they resolve to before any work starts.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use crate::report::{Color, OutputFormat};
use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use tazuna_core::selector::Selector;
use tazuna_engine::cluster::ConnectOptions;
use tazuna_engine::fleet::{Discovered, Selection};
use tazuna_engine::host::{HostSettings, Limits};

/// Flags every command accepts, shown apart from a command's own in `--help`.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// The tazuna.yaml to read (Go Tazuna's `--file-path` works too).
    #[arg(
        short = 'f',
        long,
        visible_alias = "file-path",
        global = true,
        env = "TAZUNA_FILE",
        default_value = "tazuna.yaml"
    )]
    file: PathBuf,

    /// Keep `tazuna.lock` here instead of beside the file. Until it exists,
    /// the lock beside the file is read, and the first write starts from it:
    /// a Job whose file is mounted read-only keeps the pins and bindings
    /// shipped with it and records new bindings on a volume it can write.
    #[arg(long, global = true, env = "TAZUNA_LOCK_FILE", value_name = "FILE")]
    lock_file: Option<PathBuf>,

    /// Select `spec.environments.<NAME>`: its context rules, values and
    /// clusters. Repeat it (or comma-separate) to run `apply`, `plan`,
    /// `status`, `state drift` or `destroy` on several environments' clusters
    /// under `spec.rollout`.
    #[arg(
        short = 'e',
        long,
        global = true,
        env = "TAZUNA_ENVIRONMENT",
        value_name = "NAME",
        value_delimiter = ','
    )]
    environment: Vec<String>,

    /// Select a cluster of `spec.environments` by name (repeatable, comma-separated).
    #[arg(long, global = true, value_name = "NAME", value_delimiter = ',')]
    cluster: Vec<String>,

    /// Select the clusters whose labels match, such as `env=production,region!=osaka`.
    #[arg(long, global = true, value_name = "LABELS")]
    selector: Option<String>,

    /// Select every cluster the file declares.
    #[arg(long, global = true)]
    all_clusters: bool,

    /// Only manifests carrying one of these tags (comma-separated or repeated).
    #[arg(
        short = 't',
        long,
        global = true,
        value_delimiter = ',',
        value_name = "TAG"
    )]
    tags: Vec<String>,

    /// The kubeconfig to use (default: the cluster's `kubeconfig` in the
    /// file, `$KUBECONFIG`, then `~/.kube/config`).
    #[arg(long, global = true, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use (default: the cluster's `context` in the
    /// file, then the kubeconfig's current context).
    #[arg(long, global = true, value_name = "NAME")]
    context: Option<String>,

    /// Output format.
    #[arg(short = 'o', long, global = true, value_enum, default_value_t = Output::Text)]
    output: Output,

    /// How much to log on stderr.
    #[arg(short = 'l', long, global = true, value_enum, env = "TAZUNA_LOG", default_value_t = LogLevel::Warn)]
    log_level: LogLevel,

    /// Time budget of one plugin call's own code, in seconds. Time spent in
    /// the tools it runs (helm, kustomize, helmfile) and the artifacts it
    /// pulls counts against `--tool-timeout` instead.
    #[arg(
        long,
        global = true,
        env = "TAZUNA_PLUGIN_TIMEOUT",
        value_name = "SECONDS",
        default_value_t = 30.0
    )]
    plugin_timeout: f64,

    /// Time the tools one plugin call runs and the artifacts it pulls may
    /// take in all, in seconds.
    #[arg(
        long,
        global = true,
        env = "TAZUNA_TOOL_TIMEOUT",
        value_name = "SECONDS",
        default_value_t = 600.0
    )]
    tool_timeout: f64,

    /// Memory budget of one plugin call, in MiB.
    #[arg(
        long,
        global = true,
        env = "TAZUNA_PLUGIN_MEMORY",
        value_name = "MIB",
        default_value_t = 512
    )]
    plugin_memory: usize,

    /// Send trace spans to this OpenTelemetry collector (`host:port` or a
    /// URL; OTLP over gRPC, or HTTP with `OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf`).
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` and the other `OTEL_*` variables work too.
    #[arg(long, global = true, value_name = "ENDPOINT")]
    otlp_endpoint: Option<String>,

    /// Send traces in plain text (no TLS) to `--otlp-endpoint`.
    #[arg(long, global = true)]
    otlp_insecure: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Output {
    /// For people.
    Text,
    /// For programs.
    Json,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

/// What the global flags mean, resolved once.
#[derive(Debug, Clone)]
pub struct GlobalSettings {
    /// The tazuna.yaml to read.
    pub file: PathBuf,
    /// `--lock-file`: where `tazuna.lock` is kept instead of beside the file.
    pub lock_file: Option<PathBuf>,
    /// The selected environment, when one is.
    pub environment: Option<String>,
    /// The selected cluster, when one is named.
    pub cluster: Option<String>,
    /// Every cluster the flags select (for fleet commands).
    pub selection: Selection,
    /// The cluster this run is one of, in a fleet: prefixes its output.
    pub label: Option<String>,
    /// The cluster to run on when it was found through Cluster API.
    pub discovered: Option<tazuna_core::config::Target>,
    /// Tags to select manifests by; empty selects all.
    pub tags: Vec<String>,
    /// Output format of results.
    pub output: OutputFormat,
    /// Colour on stdout.
    pub stdout_color: Color,
    /// Colour on stderr.
    pub stderr_color: Color,
    log_filter: &'static str,
    /// Where trace spans go, when anywhere.
    otlp: Option<crate::telemetry::Endpoint>,
    /// The plugin host's settings.
    pub host: HostSettings,
    /// Where the cluster is.
    pub connect: ConnectOptions,
}

impl GlobalSettings {
    /// Check and resolve the global flags.
    pub fn resolve(args: &GlobalArgs) -> anyhow::Result<Self> {
        if !(args.plugin_timeout.is_finite() && args.plugin_timeout > 0.0) {
            bail!(
                "invalid `--plugin-timeout {}`: it must be a positive number of seconds",
                args.plugin_timeout
            );
        }
        if !(args.tool_timeout.is_finite() && args.tool_timeout > 0.0) {
            bail!(
                "invalid `--tool-timeout {}`: it must be a positive number of seconds",
                args.tool_timeout
            );
        }
        if args.plugin_memory < 16 {
            bail!(
                "invalid `--plugin-memory {}`: a plugin needs at least 16 MiB",
                args.plugin_memory
            );
        }
        let limits = Limits {
            time: Duration::from_secs_f64(args.plugin_timeout),
            tools: Duration::from_secs_f64(args.tool_timeout),
            memory: args
                .plugin_memory
                .checked_mul(1024 * 1024)
                .context("`--plugin-memory` is too large")?,
        };
        let selector = match &args.selector {
            None => None,
            Some(text) => Some(Selector::parse(text).map_err(|error| {
                crate::failure::advised(
                    error.to_string(),
                    tazuna_core::hint::Hint::hint(&error).unwrap_or_default(),
                )
            })?),
        };
        let selection = Selection {
            environments: args.environment.clone(),
            clusters: args.cluster.clone(),
            selector,
            all: args.all_clusters,
        };
        Ok(Self {
            file: args.file.clone(),
            lock_file: args.lock_file.clone(),
            environment: (args.environment.len() == 1).then(|| args.environment[0].clone()),
            cluster: (args.cluster.len() == 1).then(|| args.cluster[0].clone()),
            selection,
            label: None,
            discovered: None,
            tags: args.tags.clone(),
            output: match args.output {
                Output::Text => OutputFormat::Text,
                Output::Json => OutputFormat::Json,
            },
            stdout_color: Color::detect(crate::stdout_is_terminal()),
            stderr_color: stderr_color(),
            otlp: crate::telemetry::Endpoint::resolve(
                args.otlp_endpoint.as_deref(),
                args.otlp_insecure,
                &|key| std::env::var(key).ok(),
            )?,
            log_filter: match args.log_level {
                LogLevel::Error => "error",
                LogLevel::Warn => "warn",
                LogLevel::Info => "info",
                LogLevel::Debug => "debug",
                LogLevel::Trace => "trace",
            },
            host: HostSettings {
                limits,
                cache_dir: cache_dir(),
                offline: false,
            },
            connect: ConnectOptions {
                kubeconfig: args.kubeconfig.clone(),
                context: args.context.clone(),
                in_memory: None,
            },
        })
    }

    /// Whether the flags name at most one environment and one cluster, and
    /// no selector: a run on one cluster (or on the file's default target).
    pub fn is_single(&self) -> bool {
        let s = &self.selection;
        s.environments.len() <= 1 && s.clusters.len() <= 1 && s.selector.is_none() && !s.all
    }

    /// These settings for one cluster of a fleet run; `found` holds the
    /// kubeconfigs of clusters found through Cluster API.
    pub fn for_target(&self, target: &tazuna_core::config::Target, found: &Discovered) -> Self {
        let mut connect = self.connect.clone();
        let discovered = found.get(&target.name).map(|kubeconfig| {
            connect.in_memory = Some(kubeconfig.clone());
            target.clone()
        });
        Self {
            environment: Some(target.environment.clone()),
            cluster: Some(target.name.clone()),
            label: Some(target.name.clone()),
            discovered,
            connect,
            selection: Selection {
                environments: vec![target.environment.clone()],
                clusters: vec![target.name.clone()],
                ..Selection::default()
            },
            ..self.clone()
        }
    }

    /// Send logs to stderr at the chosen level, and trace spans to the
    /// collector the flags name, if any (see [`crate::telemetry`]). The
    /// returned handle sends the last spans when shut down.
    pub fn init_logging(&self) -> Option<crate::telemetry::Telemetry> {
        use tracing_subscriber::Layer as _;
        use tracing_subscriber::layer::SubscriberExt as _;
        use tracing_subscriber::util::SubscriberInitExt as _;

        // kube-client logs every refused request at ERROR; Tazuna reports
        // those itself, naming the object, so its own lines are only noise
        // until someone asks for detail. Trace spans are the collector's.
        let kube = match self.log_filter {
            "error" | "warn" => "off",
            level => level,
        };
        let filter = tracing_subscriber::EnvFilter::new(format!(
            "{level},cranelift=warn,wasmtime=warn,kube_client={kube},{trace}=off",
            level = self.log_filter,
            trace = tazuna_core::TRACE,
        ));
        let logs = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(self.stderr_color == Color::Always)
            .with_target(false)
            .without_time()
            .with_filter(filter);
        let mut telemetry = None;
        let traces =
            self.otlp.as_ref().and_then(|endpoint| {
                match crate::telemetry::Telemetry::start(endpoint) {
                    Ok((started, tracer)) => {
                        telemetry = Some(started);
                        Some(
                            tracing_opentelemetry::layer()
                                .with_tracer(tracer)
                                .with_location(false)
                                .with_threads(false)
                                .with_filter(
                                    tracing_subscriber::filter::Targets::new()
                                        .with_target(tazuna_core::TRACE, tracing::Level::TRACE),
                                ),
                        )
                    }
                    Err(error) => {
                        eprintln!("warning: no traces are sent: {error:#}");
                        None
                    }
                }
            });
        let _ = tracing_subscriber::registry()
            .with(logs)
            .with(traces)
            .try_init();
        telemetry
    }
}

/// Colour for stderr.
pub fn stderr_color() -> Color {
    Color::detect(std::io::stderr().is_terminal())
}

/// `$TAZUNA_CACHE_DIR`, else `$XDG_CACHE_HOME/tazuna`, else `~/.cache/tazuna`.
fn cache_dir() -> Option<PathBuf> {
    let non_empty = |key: &str| std::env::var_os(key).filter(|v| !v.is_empty());
    if let Some(dir) = non_empty("TAZUNA_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = non_empty("XDG_CACHE_HOME") {
        return Some(PathBuf::from(dir).join("tazuna"));
    }
    non_empty("HOME").map(|home| PathBuf::from(home).join(".cache").join("tazuna"))
}
