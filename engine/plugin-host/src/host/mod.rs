//! The sandboxed plugin host: wasmtime with the component model.
//!
//! One [`PluginHost`] per process owns the wasmtime `Engine`, the compile cache and
//! the epoch ticker. Loading a plugin yields a [`SourcePlugin`]: the component,
//! pre-linked once (`InstancePre`), plus what it said about itself and the
//! capabilities in effect. Every call gets a fresh `Store` with:
//! - a default-deny WASI context: no environment, no sockets, no name lookups;
//!   the manifest directory preopened read-only at `/manifest` and a per-call
//!   scratch directory read-write at `/scratch`;
//! - a time budget (epoch deadline) and a memory budget (`StoreLimits`).
//!
//! A plugin that traps, loops or exceeds a budget fails its own call with a
//! [`HostError`] naming the plugin; nothing else is touched.
//!
//! `wasmtime::Error` is not a `std::error::Error`, so this module works in
//! `wasmtime::Result` internally and converts at its boundary.

mod age;
mod artifacts;
mod aws;
mod beneath;
mod bindings;
mod cache;
mod call;
mod capabilities;
mod clusters;
mod content;
mod environment;
mod exec;
mod fetchers;
mod grammar;
mod input;
pub mod jail;
mod mounts;
mod outbound;
mod resolver;
mod s3;
mod tool_secrets;
mod tools;
mod vault;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store, StoreLimitsBuilder, Trap, UpdateDeadline};
use wasmtime_wasi::p2::add_to_linker_sync;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

pub use bindings::types::{
    ApiResource, ClusterInfo, Diagnostic, Manifest as RenderedDocument, PluginError, PluginInfo,
    RenderOutput, RenderRequest, ResolvedRef, Severity, ToolFailure,
};
pub use bindings::{RESOLVER_WORLD, SOURCE_WORLD};
pub use cache::{CompileCache, Provenance};
pub use capabilities::Capabilities;
pub use clusters::{ClusterSecretError, ClusterSecrets, SharedClusterSecrets};
pub use exec::{locate as locate_tool, tool_env_var};
pub use input::{Protected, REFERENCES};
pub use resolver::ResolverPlugin;
pub use s3::S3States;
pub use tool_secrets::{Revealed, SharedToolSecrets, ToolSecret, ToolSecrets};

use bindings::{SourcePlugin as SourceBindings, SourcePluginPre};
use call::{CallState, HOSTCALL_BYTES, ToolClock, add_deadline_waits, ticks};
use exec::{ExecContext, Network};
use mounts::Mount;

/// The most bytes of documents one render may return (what a plugin's
/// host calls are measured against too).
pub const MAX_OUTPUT_BYTES: usize = 128 * 1024 * 1024;

/// What one render call gave back.
#[derive(Debug)]
pub struct PluginRender {
    /// The plugin's output, secret values taken out of its diagnostics.
    pub output: RenderOutput,
    /// The secret values the call handed to tools.
    pub revealed: Revealed,
    /// What the render declared it depends on, if it did (see
    /// [`tazuna_core::render::RenderTraits`] for what holds when not).
    pub traits: Option<tazuna_core::render::RenderTraits>,
}

/// Guest path of the manifest directory, preopened read-only.
pub const MANIFEST_DIR: &str = "/manifest";
/// Guest path of the per-call scratch directory, preopened read-write.
pub const SCRATCH_DIR: &str = "/scratch";

/// How often the epoch ticker advances; the granularity of time budgets.
const TICK: Duration = Duration::from_millis(10);

/// Per-call budgets.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Time one call may spend running its own code (epoch deadline). Time
    /// spent in tools it runs and artifacts it pulls does not count.
    pub time: Duration,
    /// Linear memory one call may grow to, in bytes.
    pub memory: usize,
    /// Time the tools one call runs and the artifacts it pulls may take, in
    /// all.
    pub tools: Duration,
}

impl Default for Limits {
    /// 30 seconds of plugin code and 512 MiB: generous for rendering, small
    /// enough to stop a runaway plugin quickly; 10 minutes of tools, for a
    /// helmfile that fetches several remote charts.
    fn default() -> Self {
        Self {
            time: Duration::from_secs(30),
            memory: 512 * 1024 * 1024,
            tools: Duration::from_secs(600),
        }
    }
}

/// Settings for a [`PluginHost`].
#[derive(Debug, Clone, Default)]
pub struct HostSettings {
    /// Budgets applied to every call.
    pub limits: Limits,
    /// Root of the on-disk cache (`$XDG_CACHE_HOME/tazuna`); `None` keeps
    /// compiled code in memory only.
    pub cache_dir: Option<PathBuf>,
    /// Grant no network to the tools plugins run, whatever their config
    /// names (`--offline`): a render that needs the network fails.
    pub offline: bool,
}

/// Why loading or calling a plugin failed.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The wasmtime engine could not be set up.
    #[error("cannot start the plugin runtime: {0}")]
    Engine(String),
    /// The bytes are not a valid component.
    #[error("plugin `{plugin}` cannot be loaded: {message}")]
    Load {
        /// Plugin name or source.
        plugin: String,
        /// wasmtime's explanation.
        message: String,
    },
    /// The component does not implement the world it is loaded as.
    #[error("plugin `{plugin}` cannot be loaded: {message}")]
    WrongWorld {
        /// Plugin name or source.
        plugin: String,
        /// The world it was loaded as.
        world: &'static str,
        /// wasmtime's explanation.
        message: String,
    },
    /// The call ran past its time budget.
    #[error("plugin `{plugin}` was stopped: it exceeded its time budget of {budget:?}")]
    TimeBudget {
        /// Plugin name.
        plugin: String,
        /// The budget.
        budget: Duration,
    },
    /// The call tried to grow memory past its budget.
    #[error("plugin `{plugin}` was stopped: it exceeded its memory budget of {} MiB", budget / (1024 * 1024))]
    MemoryBudget {
        /// Plugin name.
        plugin: String,
        /// The budget in bytes.
        budget: usize,
    },
    /// The call passed the host more data at once than it takes.
    #[error("plugin `{plugin}` was stopped: it passed the host more than {} MiB in one call", limit / (1024 * 1024))]
    TooMuchData {
        /// Plugin name.
        plugin: String,
        /// The most bytes one call may pass.
        limit: usize,
    },
    /// The plugin trapped (a panic, an unreachable, a stack overflow).
    #[error("plugin `{plugin}` crashed: {message}")]
    Trap {
        /// Plugin name.
        plugin: String,
        /// The trap and its backtrace.
        message: String,
    },
    /// The per-call scratch directory or a preopen could not be set up.
    #[error("cannot prepare the sandbox for plugin `{plugin}`: {message}")]
    Sandbox {
        /// Plugin name.
        plugin: String,
        /// What failed.
        message: String,
    },
}

impl tazuna_core::hint::Hint for HostError {
    fn hint(&self) -> Option<String> {
        match self {
            Self::WrongWorld { world, .. } => Some(format!(
                "the component must target the WIT world `{world}`; build it with tazuna-sdk (`tazuna plugin new`)"
            )),
            _ => None,
        }
    }
}

/// The process-wide plugin runtime.
pub struct PluginHost {
    engine: Engine,
    linker: Linker<CallState>,
    cache: CompileCache,
    limits: Limits,
    offline: bool,
    ticker_stop: Arc<AtomicBool>,
    tool_secrets: std::sync::OnceLock<SharedToolSecrets>,
    /// How a resolver reads a cluster's Secret (the `clusters` import).
    cluster_secrets: std::sync::OnceLock<SharedClusterSecrets>,
    protected: std::sync::OnceLock<Protected>,
}

impl std::fmt::Debug for PluginHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginHost")
            .field("cache", &self.cache)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Drop for PluginHost {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}

impl PluginHost {
    /// Start the runtime: one engine, one linker, and the epoch ticker thread.
    pub fn new(settings: HostSettings) -> Result<Self, HostError> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.parallel_compilation(true);
        let engine = Engine::new(&config).map_err(|e| HostError::Engine(format!("{e:#}")))?;

        let mut linker = Linker::<CallState>::new(&engine);
        add_to_linker_sync(&mut linker).map_err(|e| HostError::Engine(format!("{e:#}")))?;
        add_deadline_waits(&mut linker).map_err(|e| HostError::Engine(format!("{e:#}")))?;
        SourceBindings::add_to_linker::<_, HasSelf<_>>(&mut linker, |state| state)
            .map_err(|e| HostError::Engine(format!("{e:#}")))?;
        // What only resolvers import.
        bindings::outbound::add_to_linker::<_, HasSelf<_>>(&mut linker, |state| state)
            .map_err(|e| HostError::Engine(format!("{e:#}")))?;
        bindings::age::add_to_linker::<_, HasSelf<_>>(&mut linker, |state| state)
            .map_err(|e| HostError::Engine(format!("{e:#}")))?;
        bindings::clusters::add_to_linker::<_, HasSelf<_>>(&mut linker, |state| state)
            .map_err(|e| HostError::Engine(format!("{e:#}")))?;

        let ticker_stop = Arc::new(AtomicBool::new(false));
        let stop = ticker_stop.clone();
        let weak = engine.weak();
        std::thread::Builder::new()
            .name("tazuna-epoch".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(TICK);
                    match weak.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                }
            })
            .map_err(|e| HostError::Engine(format!("cannot start the epoch ticker: {e}")))?;

        let cache = CompileCache::new(&engine, settings.cache_dir.as_deref());
        Ok(Self {
            engine,
            linker,
            cache,
            limits: settings.limits,
            offline: settings.offline,
            ticker_stop,
            tool_secrets: std::sync::OnceLock::new(),
            cluster_secrets: std::sync::OnceLock::new(),
            protected: std::sync::OnceLock::new(),
        })
    }

    /// Files no plugin sees in its input, whatever names them: those the
    /// secret providers read (see [`input`]). Only the first call takes effect.
    pub fn set_protected(&self, protected: Protected) {
        let _ = self.protected.set(protected);
    }

    /// Resolve the secret references plugins hand their tools through
    /// `secrets` from now on (see [`ToolSecrets`]). Without it, tools get the
    /// references as they are. Only the first call takes effect.
    pub fn set_tool_secrets(&self, secrets: SharedToolSecrets) {
        let _ = self.tool_secrets.set(secrets);
    }

    /// Let secret resolvers read Secrets of clusters through `clusters`
    /// (the `kubernetes` resolver). The first call wins.
    pub fn set_cluster_secrets(&self, clusters: SharedClusterSecrets) {
        let _ = self.cluster_secrets.set(clusters);
    }

    /// Compile (or load from cache) and pre-link a source plugin, then ask it to
    /// describe itself. `label` names it in errors until it has told its name;
    /// `granted` is what the user (or, for built-ins, Tazuna) grants.
    pub fn load_source(
        &self,
        label: &str,
        bytes: &[u8],
        granted: Grants<'_>,
    ) -> Result<SourcePlugin, HostError> {
        let started = Instant::now();
        let (component, provenance, digest) = self.compile(label, bytes)?;
        let pre = self
            .linker
            .instantiate_pre(&component)
            .and_then(SourcePluginPre::new)
            .map_err(|e| HostError::WrongWorld {
                plugin: label.to_owned(),
                world: SOURCE_WORLD,
                message: format!("{e:#}"),
            })?;
        let mut plugin = SourcePlugin {
            builtin: matches!(granted, Grants::Requested),
            label: label.to_owned(),
            digest,
            pre,
            info: PluginInfo {
                name: label.to_owned(),
                version: String::new(),
                description: String::new(),
                config_schema: "{}".into(),
                capabilities: Vec::new(),
            },
            capabilities: Capabilities::none(),
            provenance,
        };
        plugin.info = self.call(&plugin, "describe", None, |bindings, store| {
            bindings.tazuna_plugin_source().call_describe(store)
        })?;
        plugin.capabilities = match granted {
            Grants::Requested => {
                Capabilities::effective(&plugin.info.capabilities, &plugin.info.capabilities)
            }
            Grants::List(list) => Capabilities::effective(&plugin.info.capabilities, list),
        };
        tracing::debug!(
            plugin = %plugin.info.name,
            ?provenance,
            elapsed = ?started.elapsed(),
            "plugin loaded"
        );
        Ok(plugin)
    }

    /// Ask `plugin` to check a manifest's config.
    pub fn validate(
        &self,
        plugin: &SourcePlugin,
        config: &str,
    ) -> Result<Vec<Diagnostic>, HostError> {
        let config = config.to_owned();
        self.call(plugin, "validate", None, |bindings, store| {
            bindings
                .tazuna_plugin_source()
                .call_validate(store, &config)
        })
    }

    /// Render one manifest declared in `manifest_dir`. Its input (see
    /// [`input`]: the manifest's `path`, what its config names and, with
    /// [`REFERENCES`], what those files name) is preopened read-only at
    /// [`MANIFEST_DIR`]; the request's `workdir` and `scratch` are filled in here.
    ///
    /// The secret values the call handed to tools come back as [`Revealed`],
    /// already taken out of the output's diagnostics and of the error, so the
    /// caller can check that no object other than a Secret holds one.
    pub fn render(
        &self,
        plugin: &SourcePlugin,
        manifest_dir: &Path,
        request: RenderRequest,
    ) -> Result<Result<PluginRender, PluginError>, HostError> {
        self.render_with(plugin, manifest_dir, request, false)
    }

    /// Render again with every secret a provider would give the plugin's
    /// tools withheld: each stands in as one fixed text, and no provider is
    /// asked (see [`tool_secrets::PLACEHOLDER`]).
    /// What differs from [`render`](Self::render) outside Secrets carries a
    /// value derived from a secret.
    pub fn render_withheld(
        &self,
        plugin: &SourcePlugin,
        manifest_dir: &Path,
        request: RenderRequest,
    ) -> Result<Result<PluginRender, PluginError>, HostError> {
        self.render_with(plugin, manifest_dir, request, true)
    }

    fn render_with(
        &self,
        plugin: &SourcePlugin,
        manifest_dir: &Path,
        mut request: RenderRequest,
        withhold: bool,
    ) -> Result<Result<PluginRender, PluginError>, HostError> {
        request.workdir = MANIFEST_DIR.to_owned();
        request.scratch = SCRATCH_DIR.to_owned();
        // The config is read once; its strings name the endpoints, the
        // artifacts a plugin may pull and the references the user wrote.
        let config: serde_json::Value =
            serde_json::from_str(&request.config).unwrap_or(serde_json::Value::Null);
        let strings = crate::config_strings::strings_in(&config);
        let repositories = exec::user_repositories();
        let endpoints = jail::endpoints_named_in(&strings, &repositories);
        let network = if self.offline {
            Network {
                offline: true,
                ..Network::default()
            }
        } else {
            Network {
                repositories: repositories
                    .into_iter()
                    .filter(|(_, url)| {
                        jail::endpoint_of_url(url).is_some_and(|e| endpoints.contains(&e))
                    })
                    .map(|(name, _)| name)
                    .collect(),
                endpoints,
                offline: false,
                references: artifacts::named_references(&strings),
            }
        };
        let view = input::view(
            manifest_dir,
            request.path.as_deref(),
            &config,
            plugin.capabilities.allows(REFERENCES),
            self.protected.get().unwrap_or(&Protected::default()),
        )
        .map_err(|message| HostError::Sandbox {
            plugin: plugin.info.name.clone(),
            message,
        })?;
        let shown = std::path::absolute(manifest_dir).unwrap_or_else(|_| manifest_dir.to_owned());
        let named: Vec<String> = strings.into_iter().map(str::to_owned).collect();
        self.call(plugin, "render", Some(view.path()), |bindings, store| {
            store.data_mut().network = network;
            store.data_mut().named = named;
            store.data_mut().withhold = withhold;
            if let Some(mount) = store
                .data_mut()
                .mounts
                .iter_mut()
                .find(|mount| mount.guest == MANIFEST_DIR)
            {
                mount.shown = Some(shown);
            }
            let result = bindings
                .tazuna_plugin_source()
                .call_render(&mut *store, &request)?;
            let revealed = std::mem::take(&mut store.data_mut().revealed);
            let traits = store.data_mut().traits.take();
            Ok(match result {
                Ok(mut output) => {
                    revealed.redact_diagnostics(&mut output.diagnostics);
                    Ok(PluginRender {
                        output,
                        revealed,
                        traits,
                    })
                }
                Err(error) => Err(revealed.redact_error(error)),
            })
        })
    }

    /// One call of a source plugin in a fresh store, with budgets and a fresh
    /// sandbox.
    fn call<R>(
        &self,
        plugin: &SourcePlugin,
        function: &'static str,
        manifest_dir: Option<&Path>,
        f: impl FnOnce(&SourceBindings, &mut Store<CallState>) -> wasmtime::Result<R>,
    ) -> Result<R, HostError> {
        self.call_in(
            &plugin.info.name,
            function,
            &plugin.capabilities,
            plugin.builtin,
            manifest_dir,
            |store| {
                let bindings = plugin.pre.instantiate(&mut *store)?;
                f(&bindings, store)
            },
        )
    }

    /// Compile (or load from the cache) the component `bytes`; returns it, how
    /// it was obtained and its hex sha256.
    fn compile(
        &self,
        label: &str,
        bytes: &[u8],
    ) -> Result<(wasmtime::component::Component, Provenance, String), HostError> {
        let digest = hex::encode(Sha256::digest(bytes));
        let (component, provenance) =
            self.cache
                .load(&self.engine, &digest, bytes)
                .map_err(|e| HostError::Load {
                    plugin: label.to_owned(),
                    message: format!("{e:#}"),
                })?;
        Ok((component, provenance, digest))
    }

    /// One call in a fresh store, with budgets and a fresh sandbox: `run`
    /// instantiates the component and calls it.
    fn call_in<R>(
        &self,
        name: &str,
        function: &'static str,
        capabilities: &Capabilities,
        builtin: bool,
        manifest_dir: Option<&Path>,
        run: impl FnOnce(&mut Store<CallState>) -> wasmtime::Result<R>,
    ) -> Result<R, HostError> {
        let name = name.to_owned();
        let sandbox_error = |message: String| HostError::Sandbox {
            plugin: name.clone(),
            message,
        };
        let mut wasi = WasiCtxBuilder::new();
        wasi.allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        let mut mounts = Vec::new();
        // Only renders see files: `describe` and `validate` get no preopens at all.
        let scratch = match manifest_dir {
            None => None,
            Some(dir) => {
                let dir = if dir.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    dir
                };
                wasi.preopened_dir(dir, MANIFEST_DIR, FsPerms::ReadOnly)
                    .map_err(|e| sandbox_error(format!("`{}`: {e:#}", dir.display())))?;
                // Tools run in the scratch directory, so the host path behind
                // `/manifest` they are given must not be relative.
                let absolute = match dir.as_os_str().is_empty() {
                    true => std::path::absolute("."),
                    false => std::path::absolute(dir),
                };
                mounts.push(Mount {
                    guest: MANIFEST_DIR.to_owned(),
                    host: absolute.unwrap_or_else(|_| dir.to_owned()),
                    shown: None,
                });
                let scratch = jail::Scratch::new("tazuna-scratch-")
                    .map_err(|e| sandbox_error(format!("scratch directory: {e}")))?;
                wasi.preopened_dir(scratch.path(), SCRATCH_DIR, FsPerms::ReadWrite)
                    .map_err(|e| sandbox_error(format!("scratch directory: {e:#}")))?;
                mounts.push(Mount {
                    guest: SCRATCH_DIR.to_owned(),
                    host: scratch.path().to_owned(),
                    shown: None,
                });
                Some(scratch)
            }
        };

        let state = CallState {
            wasi: wasi.build(),
            table: ResourceTable::new(),
            limits: StoreLimitsBuilder::new()
                .memory_size(self.limits.memory)
                .trap_on_grow_failure(true)
                .build(),
            plugin: name.clone(),
            capabilities: capabilities.clone(),
            mounts,
            network: Network::default(),
            builtin,
            tools: ToolClock::new(self.limits.tools),
            started: Instant::now(),
            budget: self.limits.time,
            tool_secrets: self.tool_secrets.get().cloned(),
            cluster_secrets: self.cluster_secrets.get().cloned(),
            named: Vec::new(),
            withhold: false,
            revealed: Revealed::default(),
            traits: None,
            outbound: outbound::Allowed::default(),
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|state| &mut state.limits);
        store.set_hostcall_fuel(HOSTCALL_BYTES);
        // The deadline counts the plugin's own time: when it passes, the time
        // spent in tools since the call began is given back.
        let budget = self.limits.time;
        let started = Instant::now();
        store.set_epoch_deadline(ticks(budget));
        store.epoch_deadline_callback(move |ctx| {
            let own = started.elapsed().saturating_sub(ctx.data().tools.spent);
            Ok(match budget.checked_sub(own) {
                Some(left) if left >= TICK => UpdateDeadline::Continue(ticks(left)),
                _ => UpdateDeadline::Interrupt,
            })
        });

        let span = tracing::info_span!(
            target: tazuna_core::TRACE,
            "plugin call",
            tazuna.plugin = name.as_str(),
            tazuna.function = function,
            tazuna.builtin = builtin,
            tazuna.tool_seconds = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
            otel.status_description = tracing::field::Empty,
        );
        let result = span.in_scope(|| run(&mut store));
        drop(scratch);
        span.record(
            "tazuna.tool_seconds",
            store.data().tools.spent.as_secs_f64(),
        );
        let result = result.map_err(|error| self.classify(&name, error));
        // Only the kind of failure: a trap's message is the plugin's own text,
        // which may quote what its tools printed.
        tazuna_core::trace_status(
            &span,
            result.as_ref().map(|_| ()).map_err(|error| match error {
                HostError::TimeBudget { .. } => "time budget exhausted".to_owned(),
                HostError::MemoryBudget { .. } => "memory budget exhausted".to_owned(),
                HostError::TooMuchData { .. } => "passed the host too much data".to_owned(),
                _ => "the plugin crashed or could not start".to_owned(),
            }),
        );
        result
    }

    fn classify(&self, plugin: &str, error: wasmtime::Error) -> HostError {
        let plugin = plugin.to_owned();
        match error.downcast_ref::<Trap>() {
            Some(Trap::Interrupt) => HostError::TimeBudget {
                plugin,
                budget: self.limits.time,
            },
            _ if format!("{error:#}")
                .contains("fuel allocated for hostcalls has been exhausted") =>
            {
                HostError::TooMuchData {
                    plugin,
                    limit: HOSTCALL_BYTES,
                }
            }
            _ if format!("{error:#}").contains("forcing trap when growing memory") => {
                HostError::MemoryBudget {
                    plugin,
                    budget: self.limits.memory,
                }
            }
            _ => HostError::Trap {
                plugin,
                message: format!("{error:#}"),
            },
        }
    }
}

/// Where a plugin's grants come from.
#[derive(Debug, Clone, Copy)]
pub enum Grants<'a> {
    /// A built-in: it carries its own grants, so what it requests takes effect.
    Requested,
    /// A third-party plugin: the grants the user wrote in `spec.plugins[].grants`.
    List(&'a [String]),
}

/// A loaded, pre-linked source plugin.
pub struct SourcePlugin {
    /// Whether it is one of Tazuna's built-ins.
    builtin: bool,
    label: String,
    digest: String,
    pre: SourcePluginPre<CallState>,
    info: PluginInfo,
    capabilities: Capabilities,
    provenance: Provenance,
}

impl std::fmt::Debug for SourcePlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourcePlugin")
            .field("label", &self.label)
            .field("digest", &self.digest)
            .field("capabilities", &self.capabilities)
            .finish_non_exhaustive()
    }
}

impl SourcePlugin {
    /// What the plugin said about itself.
    pub fn info(&self) -> &PluginInfo {
        &self.info
    }

    /// Hex sha256 of the component bytes.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// Capabilities in effect.
    pub fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    /// Whether it is one of Tazuna's built-ins.
    pub fn is_builtin(&self) -> bool {
        self.builtin
    }

    /// Whether loading compiled anything.
    pub fn provenance(&self) -> Provenance {
        self.provenance
    }
}
