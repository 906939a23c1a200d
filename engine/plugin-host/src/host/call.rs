//! One call's store: what a plugin call holds (its WASI context, limits,
//! mounts, tool clock and secrets), the deadline-aware waits, and the host
//! imports a plugin calls (`log`, `exec`, `tools`, `artifacts`,
//! `render-traits`, `outbound`, `age`, `clusters`).

use std::time::{Duration, Instant};

use wasmtime::StoreLimits;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::*;

/// Everything one call's store holds.
pub(super) struct CallState {
    pub(super) wasi: WasiCtx,
    pub(super) table: ResourceTable,
    pub(super) limits: StoreLimits,
    pub(super) plugin: String,
    pub(super) capabilities: Capabilities,
    pub(super) mounts: Vec<Mount>,
    /// What the manifest names, for the tools it runs.
    pub(super) network: Network,
    /// Whether the plugin is a built-in.
    pub(super) builtin: bool,
    pub(super) tools: ToolClock,
    /// When the call began, and the plugin's own time budget.
    pub(super) started: Instant,
    pub(super) budget: Duration,
    pub(super) tool_secrets: Option<SharedToolSecrets>,
    /// Every string of the manifest's config: the environment variables a
    /// tool may be handed are those the user named there.
    pub(super) named: Vec<String>,
    /// Whether secrets for tools are withheld (see
    /// [`PluginHost::render_withheld`]).
    pub(super) withhold: bool,
    /// Secret values handed to tools in this call.
    pub(super) revealed: Revealed,
    /// What the render declared through `render-traits`, if it did.
    pub(super) traits: Option<tazuna_core::render::RenderTraits>,
    /// Where a resolver's `outbound` requests may go.
    pub(super) outbound: outbound::Allowed,
    /// How a resolver reads a cluster's Secret, where clusters are reached.
    pub(super) cluster_secrets: Option<super::SharedClusterSecrets>,
}

/// How much of a call's tool budget is spent.
pub(super) struct ToolClock {
    pub(super) budget: Duration,
    pub(super) spent: Duration,
}

impl ToolClock {
    pub(super) fn new(budget: Duration) -> Self {
        Self {
            budget,
            spent: Duration::ZERO,
        }
    }

    /// What is left, or a timeout error naming `what` when nothing is.
    fn left(&self, what: &str) -> Result<Duration, PluginError> {
        self.budget
            .checked_sub(self.spent)
            .filter(|left| !left.is_zero())
            .ok_or_else(|| {
                PluginError::Timeout(format!(
                    "{what}: the plugin's tools already took the whole tool budget of {}s (`--tool-timeout`)",
                    self.budget.as_secs()
                ))
            })
    }

    /// Run `f`, counting its time as spent.
    fn run<R>(&mut self, f: impl FnOnce() -> R) -> R {
        let started = Instant::now();
        let result = f();
        self.spent += started.elapsed();
        result
    }
}

impl CallState {
    /// What is left of the plugin's own time budget (time in tools does not count).
    fn time_left(&self) -> Duration {
        let own = self.started.elapsed().saturating_sub(self.tools.spent);
        self.budget.saturating_sub(own)
    }
}

/// The most a plugin may pass the host in one call (a render's output, a
/// tool's arguments), in wasmtime's hostcall fuel: about its bytes. Above a
/// render's output cap, so that cap speaks first.
pub(super) const HOSTCALL_BYTES: usize = MAX_OUTPUT_BYTES + 64 * 1024 * 1024;

/// The WASI version whose `poll` interface [`add_deadline_waits`] replaces:
/// the one `add_to_linker_sync` defines.
const WASI_IO_POLL: &str = "wasi:io/poll@0.2.12";

/// Replace WASI's blocking waits (`poll`, `pollable.block`) with ones that end
/// at the call's deadline. The epoch deadline stops a plugin only while it
/// runs its own code; a plugin sleeping in the host would otherwise wait out
/// any budget.
pub(super) fn add_deadline_waits(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    use wasmtime::component::Resource;
    use wasmtime_wasi::p2::DynPollable;
    use wasmtime_wasi_io::bindings::wasi::io::poll as wasi_poll;

    linker.allow_shadowing(true);
    let mut poll = linker.instance(WASI_IO_POLL)?;
    poll.func_wrap(
        "poll",
        |mut store: wasmtime::StoreContextMut<'_, CallState>,
         (pollables,): (Vec<Resource<DynPollable>>,)| {
            let left = store.data().time_left();
            let table = &mut store.data_mut().table;
            until(left, wasi_poll::Host::poll(table, pollables)).map(|ready| (ready,))
        },
    )?;
    poll.func_wrap(
        "[method]pollable.block",
        |mut store: wasmtime::StoreContextMut<'_, CallState>,
         (pollable,): (Resource<DynPollable>,)| {
            let left = store.data().time_left();
            let table = &mut store.data_mut().table;
            until(left, wasi_poll::HostPollable::block(table, pollable))
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// Wait for `wait` for at most `left`; past it, the call is interrupted as
/// if its epoch deadline had passed in its own code.
pub(super) fn until<T>(
    left: Duration,
    wait: impl std::future::Future<Output = wasmtime::Result<T>>,
) -> wasmtime::Result<T> {
    match wasmtime_wasi::runtime::in_tokio(async { tokio::time::timeout(left, wait).await }) {
        Ok(result) => result,
        Err(_) => Err(Trap::Interrupt.into()),
    }
}

/// Epoch ticks in `time`, at least one.
pub(super) fn ticks(time: Duration) -> u64 {
    u64::try_from((time.as_millis() / TICK.as_millis()).max(1)).unwrap_or(u64::MAX)
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl bindings::types::Host for CallState {}

impl bindings::log::Host for CallState {
    fn log(&mut self, level: bindings::log::Level, message: String) {
        use bindings::log::Level;
        let plugin = self.plugin.as_str();
        let message = self.revealed.redact(&message);
        match level {
            Level::Trace => tracing::trace!(plugin, "{message}"),
            Level::Debug => tracing::debug!(plugin, "{message}"),
            Level::Info => tracing::info!(plugin, "{message}"),
            Level::Warn => tracing::warn!(plugin, "{message}"),
            Level::Error => tracing::error!(plugin, "{message}"),
        }
    }
}

impl bindings::render_traits::Host for CallState {
    fn declare(&mut self, traits: bindings::render_traits::Traits) {
        self.traits = Some(tazuna_core::render::RenderTraits {
            reads_cluster: traits.reads_cluster,
            deterministic: traits.deterministic,
        });
    }
}

impl bindings::exec::Host for CallState {
    fn run(
        &mut self,
        command: bindings::exec::Command,
    ) -> Result<bindings::exec::Output, PluginError> {
        self.run_tool(command, false)
    }
}

impl bindings::tools::Host for CallState {
    fn helm_template(
        &mut self,
        request: bindings::tools::HelmTemplateRequest,
    ) -> Result<bindings::exec::Output, PluginError> {
        let command = tools::helm_template(&self.plugin, request)?;
        self.run_tool(command, true)
    }

    fn kustomize_build(
        &mut self,
        request: bindings::tools::KustomizeBuildRequest,
    ) -> Result<bindings::exec::Output, PluginError> {
        let command = tools::kustomize_build(&self.plugin, request)?;
        self.run_tool(command, true)
    }

    fn helmfile_template(
        &mut self,
        request: bindings::tools::HelmfileTemplateRequest,
    ) -> Result<bindings::exec::Output, PluginError> {
        let command = tools::helmfile_template(&self.plugin, request)?;
        self.run_tool(command, true)
    }
}

impl CallState {
    /// Run `command` through [`exec::run`]; `typed` when the host built it.
    fn run_tool(
        &mut self,
        mut command: bindings::exec::Command,
        typed: bool,
    ) -> Result<bindings::exec::Output, PluginError> {
        let max_timeout = self.tools.left(&format!("`{}`", command.tool))?;
        // Resolving counts as tool time: a provider may run a tool itself.
        let (plugin, capabilities) = (&self.plugin, &self.capabilities);
        let (secrets, revealed) = (self.tool_secrets.as_deref(), &mut self.revealed);
        let (named, withhold) = (&self.named, self.withhold);
        self.tools.run(|| {
            tool_secrets::resolve_env(
                &tool_secrets::Handing {
                    plugin,
                    tool: &command.tool,
                    capabilities,
                    named,
                    withhold,
                },
                secrets,
                &mut command.env,
                revealed,
            )
        })?;
        let ctx = ExecContext {
            plugin: &self.plugin,
            capabilities: &self.capabilities,
            mounts: &self.mounts,
            max_timeout,
            builtin: self.builtin,
            network: &self.network,
            typed,
        };
        self.tools.run(|| exec::run(&ctx, command))
    }
}

impl bindings::artifacts::Host for CallState {
    fn pull_oci(
        &mut self,
        reference: String,
        media_types: Vec<String>,
    ) -> Result<bindings::artifacts::Fetched, PluginError> {
        if self.network.offline {
            return Err(PluginError::CapabilityDenied(format!(
                "plugin `{}` may not pull `{reference}`: the run is `--offline`",
                self.plugin
            )));
        }
        let timeout = self.tools.left(&format!("pulling `{reference}`"))?;
        let ctx = artifacts::PullContext {
            plugin: &self.plugin,
            capabilities: &self.capabilities,
            mounts: &self.mounts,
            timeout,
            named: &self.network.references,
        };
        self.tools
            .run(|| artifacts::pull(&ctx, &reference, &media_types))
    }
}

impl bindings::outbound::Host for CallState {
    fn send(
        &mut self,
        request: bindings::outbound::Request,
    ) -> Result<bindings::outbound::Response, PluginError> {
        if self.network.offline {
            return Err(PluginError::CapabilityDenied(format!(
                "plugin `{}` may not reach its store: the run is `--offline`",
                self.plugin
            )));
        }
        let timeout = self.tools.left("a request to the store")?;
        let ctx = outbound::Context {
            plugin: &self.plugin,
            builtin: self.builtin,
            allowed: &self.outbound,
            timeout,
        };
        self.tools.run(|| outbound::send(&ctx, request))
    }

    fn aws_region(&mut self, profile: Option<String>) -> Option<String> {
        outbound::aws_region(profile.as_deref())
    }

    fn send_vault(
        &mut self,
        request: bindings::outbound::Request,
        login: bindings::outbound::VaultLogin,
    ) -> Result<bindings::outbound::Response, PluginError> {
        if self.network.offline {
            return Err(PluginError::CapabilityDenied(format!(
                "plugin `{}` may not reach its Vault: the run is `--offline`",
                self.plugin
            )));
        }
        let timeout = self.tools.left("a request to the Vault")?;
        let ctx = outbound::Context {
            plugin: &self.plugin,
            builtin: self.builtin,
            allowed: &self.outbound,
            timeout,
        };
        self.tools
            .run(|| outbound::send_vault(&ctx, request, login))
    }
}

/// The capability a third-party resolver needs to open age files with the
/// user's identities.
pub(super) const KEYS_AGE: &str = "keys:age";

impl bindings::age::Host for CallState {
    fn open(&mut self, files: Vec<Vec<u8>>) -> Result<Vec<u8>, PluginError> {
        if !self.builtin && !self.capabilities.allows(KEYS_AGE) {
            return Err(PluginError::CapabilityDenied(format!(
                "plugin `{}` asked to open an age file with your identities: a third-party resolver needs the grant `{KEYS_AGE}`",
                self.plugin
            )));
        }
        let identities = age::identities(&super::environment::ProcessEnvironment)
            .map_err(|error| PluginError::CapabilityDenied(error.to_string()))?;
        age::open(&identities, &files).map_err(|error| match error {
            age::AgeError::NoMatch { .. } => PluginError::CapabilityDenied(error.to_string()),
            other => PluginError::Other(other.to_string()),
        })
    }
}

impl bindings::clusters::Host for CallState {
    fn read_secret(
        &mut self,
        context: String,
        namespace: String,
        name: String,
    ) -> Result<Vec<(String, Vec<u8>)>, PluginError> {
        if self.network.offline {
            return Err(PluginError::CapabilityDenied(format!(
                "plugin `{}` may not read a cluster's Secret: the run is `--offline`",
                self.plugin
            )));
        }
        let allowed = &self.outbound;
        let named = |context: &str| allowed.config_says(outbound::fields::CONTEXT, context);
        let ctx = clusters::Context {
            plugin: &self.plugin,
            builtin: self.builtin,
            granted: self.capabilities.allows(clusters::READ_CLUSTER_SECRETS),
            named: &named,
            clusters: self.cluster_secrets.as_ref(),
        };
        self.tools
            .run(|| clusters::read_secret(&ctx, &context, &namespace, &name))
    }
}
