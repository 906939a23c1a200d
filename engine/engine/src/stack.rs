//! A run over one file (a *stack*) and one cluster: the engine's unit of work.
//!
//! [`Stack`] opens the config and `tazuna.lock` once and owns every write to
//! the lock file (cluster binding, plugin pins, upstream pins), so a dry run
//! writes nothing anywhere. [`Stack::connect`] checks the context guard and
//! the cluster identity; the verbs ([`Stack::apply`], [`Stack::plan`],
//! [`Stack::destroy`], [`Stack::status`], [`Stack::forget`]) take the Lease
//! through its guard where they write, read the state, keep to the stack's
//! own records (see [`crate::ownership`]) and decide what to prune
//! themselves. A CLI verb turns flags into options, makes one call here and
//! prints the events. Nothing here is process-global, so a fleet run is many
//! stacks.

mod identity;

pub use identity::{derived_name, git_commit, repository_identity};

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tracing::Instrument as _;

use tazuna_core::config::{self, Config, ConfigError, LoadOptions, Manifest, PluginSource, Wait};
use tazuna_core::graph;
use tazuna_core::hint::Hint;
use tazuna_core::lock::{LockError, Lockfile};

use crate::apply::{
    ApplySettings, Conflicts, Counts, Event, Failure, ManifestOutcome, Mode, Observer, Outcome,
    Prune, Recreate, Run, Unit,
};
use crate::cluster::{self, Cluster, ClusterError, ConnectOptions};
use crate::distribution::{Blobs, Resolve};
use crate::guard::{ContextGuard, GuardError, Rebind};
use crate::host::{HostError, HostSettings, PluginHost, Protected};
use crate::objects::FieldManager;
use crate::ownership::{Claims, Ownership, OwnershipError, StackStates};
use crate::plan::{self, Intent, PlanError, Question, Report};
use crate::plugins::{self, PluginLoadError, PluginSet, Role};
use crate::render::{self, RenderError, RenderSettings, Rendered};
use crate::secrets::{self, ProviderSecrets};
use crate::state::{StateError, Store, Stored};

/// Where a stack's file is and how to reach its cluster.
#[derive(Debug, Clone)]
pub struct StackOptions {
    /// The tazuna.yaml.
    pub file: PathBuf,
    /// The selected environment.
    pub environment: Option<String>,
    /// The selected cluster (`--cluster`), when the environment has several.
    pub cluster: Option<String>,
    /// A cluster found through Cluster API to run on (its kubeconfig is in
    /// [`ConnectOptions::in_memory`]).
    pub discovered: Option<tazuna_core::config::Target>,
    /// Tags selecting manifests; empty selects all.
    pub tags: Vec<String>,
    /// The plugin host's settings.
    pub host: HostSettings,
    /// The kubeconfig and context.
    pub connect: ConnectOptions,
}

/// Whether a run may write `tazuna.lock` and the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writes {
    /// Record bindings and pins, and write to the cluster.
    Persist,
    /// Write nothing anywhere (`apply --dry-run`): pins and bindings are
    /// worked out in memory only.
    Discard,
}

/// What a run tells people along the way (targets, pins, notes), as text.
pub type Notices = Arc<dyn Fn(&str) + Send + Sync>;

/// Whether the command writes to the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads only.
    Read,
    /// Writes to a throwaway control plane `tazuna verify` started: the file's
    /// context rules and cluster binding are about real clusters, not this one.
    Throwaway,
    /// Writes; records the cluster binding on first use.
    Write(Rebind),
}

/// Why a run could not go on. Each variant says what is wrong; [`Hint`]
/// says what to do.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The file is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// `tazuna.lock` cannot be read or written.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The plugin host did not start.
    #[error(transparent)]
    Host(#[from] HostError),
    /// A plugin did not load.
    #[error(transparent)]
    Plugins(#[from] PluginLoadError),
    /// The cluster cannot be reached.
    #[error("{}", chain(.0))]
    Cluster(ClusterError),
    /// The context guard refused.
    #[error(transparent)]
    Guard(#[from] GuardError),
    /// Tazuna's state cannot be read or written.
    #[error("{}", chain(.0))]
    State(StateError),
    /// A plan could not be made.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// Objects or manifest names this stack may not write; nothing was written.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Ownership(Vec<OwnershipError>),
    /// Manifests did not render; each failure names its manifest.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Render(Vec<Failure>),
    /// Live objects cannot be read.
    #[error("cannot read live objects: {}", crate::objects::errors::status_message(.0))]
    Read(kube::Error),
    /// Namespaces the run writes into that nothing creates; nothing was written.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    MissingNamespaces(Vec<tazuna_kube::namespaces::Missing>),
    /// What `state forget` was asked to forget is not in this stack's state.
    #[error("{0}")]
    NotInState(String, String),
}

impl From<ClusterError> for RunError {
    fn from(error: ClusterError) -> Self {
        Self::Cluster(error)
    }
}

impl From<StateError> for RunError {
    fn from(error: StateError) -> Self {
        Self::State(error)
    }
}

impl Hint for RunError {
    fn hint(&self) -> Option<String> {
        match self {
            Self::Cluster(error) => error.hint(),
            Self::Guard(error) => error.hint(),
            Self::State(error) => error.hint(),
            Self::Ownership(errors) => {
                let mut hints: Vec<String> = errors.iter().filter_map(Hint::hint).collect();
                hints.dedup();
                (!hints.is_empty()).then(|| hints.join("\nhint: "))
            }
            Self::Plan(error) => error.hint(),
            Self::MissingNamespaces(missing) => {
                let hints: Vec<String> = missing.iter().filter_map(Hint::hint).collect();
                (!hints.is_empty()).then(|| hints.join("\nhint: "))
            }
            Self::NotInState(_, hint) => Some(hint.clone()),
            _ => None,
        }
    }
}

/// An error and its causes on one line, each said once.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.ends_with(&said) {
            text.push_str(&format!(": {said}"));
        }
        source = cause.source();
    }
    text
}

/// The one way to `tazuna.lock`: read it, or change it under its lock
/// unless the run writes nothing.
#[derive(Debug, Clone)]
struct LockFile {
    path: PathBuf,
    writes: Writes,
}

impl LockFile {
    fn load(&self) -> Result<Lockfile, LockError> {
        Lockfile::load(&self.path)
    }

    /// Apply `change` to the lock file; with [`Writes::Discard`], to a copy
    /// in memory that is then dropped.
    fn update<T, E: From<LockError>>(
        &self,
        change: impl FnOnce(&mut Lockfile) -> Result<T, E>,
    ) -> Result<T, E> {
        match self.writes {
            Writes::Persist => Lockfile::update(&self.path, change),
            Writes::Discard => change(&mut self.load()?),
        }
    }
}

/// A connected cluster and its state store.
#[derive(Debug)]
pub struct Connection {
    /// The cluster.
    pub cluster: Cluster,
    /// Tazuna's state on it.
    pub store: Store,
}

/// How `apply` runs, beyond the stack's options.
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    /// Prune.
    pub prune: Prune,
    /// Apply or dry run.
    pub mode: Mode,
    /// On field conflicts.
    pub conflicts: Conflicts,
    /// On immutable fields.
    pub recreate: Recreate,
    /// How long to wait for another run's Lease.
    pub lock_timeout: Duration,
    /// Manifests of a layer applied at once.
    pub manifests_at_once: usize,
    /// Requests in flight per manifest.
    pub requests_at_once: usize,
    /// Send every object, even those unchanged (`--sync`).
    pub resend: bool,
    /// Undo the run when a manifest fails (`--atomic`).
    pub atomic: bool,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        Self {
            prune: Prune::Off,
            mode: Mode::Apply,
            conflicts: Conflicts::Report,
            recreate: Recreate::Never,
            lock_timeout: Duration::from_secs(60),
            manifests_at_once: 4,
            requests_at_once: tazuna_kube::apply::REQUESTS_AT_ONCE,
            resend: false,
            atomic: false,
        }
    }
}

/// What `destroy` is about to delete, for a confirmation.
#[derive(Debug, Clone)]
pub struct Teardown {
    /// The manifests, by name.
    pub manifests: Vec<String>,
    /// How many objects they hold.
    pub objects: usize,
    /// The kube context.
    pub context: String,
}

/// The readiness of a stack's objects.
#[derive(Debug, Clone)]
pub struct StatusReport {
    /// One row per object.
    pub rows: Vec<crate::status::Row>,
    /// The manifests in state.
    pub manifests: usize,
    /// Manifests whose last apply failed part way.
    pub incomplete: Vec<String>,
    /// List calls it took.
    pub requests: usize,
}

/// One file and what it declares, ready to run against a cluster.
pub struct Stack {
    options: StackOptions,
    config: Config,
    /// Worked out on first use: commands that never reach a cluster
    /// (`build`, `check`) need not ask git.
    name: std::sync::OnceLock<String>,
    origin: std::sync::OnceLock<Option<String>>,
    lock: LockFile,
    notices: Notices,
}

impl std::fmt::Debug for Stack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stack")
            .field("name", &self.name.get())
            .field("file", &self.options.file)
            .finish()
    }
}

impl Stack {
    /// Load and validate the file (every manifest's `type` needs a plugin)
    /// and name the stack.
    pub fn open(options: StackOptions, writes: Writes, notices: Notices) -> Result<Self, RunError> {
        let load = LoadOptions {
            environment: options.environment.clone(),
            cluster: options.cluster.clone(),
            discovered: options.discovered.clone(),
            tazuna_version: tazuna_version(),
        };
        let config = config::load(&options.file, &load)?;
        // The cluster's own context and kubeconfig, unless flags name others.
        let mut options = options;
        if let Some(target) = &config.target {
            options.environment = Some(target.environment.clone());
            options.cluster = Some(target.name.clone());
            if options.connect.context.is_none() {
                options.connect.context = target.context.clone();
            }
            if options.connect.kubeconfig.is_none() {
                options.connect.kubeconfig = target.kubeconfig.clone();
            }
        }
        let builtins: Vec<&str> = plugins::builtin_names().collect();
        config.check_types_tagged(&builtins, &options.tags)?;
        let lock = LockFile {
            path: Lockfile::path_for(&options.file),
            writes,
        };
        Ok(Self {
            options,
            config,
            name: std::sync::OnceLock::new(),
            origin: std::sync::OnceLock::new(),
            lock,
            notices,
        })
    }

    /// The file's config.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The stack's name, under which its state is recorded.
    pub fn name(&self) -> &str {
        self.name.get_or_init(|| {
            self.config
                .spec
                .stack
                .clone()
                .unwrap_or_else(|| derived_name(&self.options.file))
        })
    }

    /// The identity of the repository the file is in
    /// ([`repository_identity`]), when the stack's name is derived from the
    /// file's place in it; recorded in state so two files of one derived
    /// name in two repositories are told apart.
    pub fn origin(&self) -> Option<&str> {
        self.origin
            .get_or_init(|| {
                self.config
                    .spec
                    .stack
                    .is_none()
                    .then(|| repository_identity(&self.options.file))
            })
            .as_deref()
    }

    /// The manifests the tags select, in file order.
    pub fn selected(&self) -> Result<Vec<&Manifest>, RunError> {
        Ok(self.config.select(&self.options.tags)?)
    }

    /// The selected manifests in dependency order.
    pub fn ordered(&self) -> Result<Vec<&Manifest>, RunError> {
        let selected = self.selected()?;
        Ok(graph::order(&selected)
            .into_iter()
            .map(|i| selected[i])
            .collect())
    }

    fn notice(&self, text: &str) {
        (self.notices)(text);
    }

    /// What each plugin of `spec.plugins` is used as: a secret resolver when a
    /// provider of `spec.providers` has its name as `type`, a source when a
    /// manifest does, else whichever world it targets.
    pub fn declared_roles(&self) -> Vec<(&str, Role)> {
        let config = &self.config;
        config
            .spec
            .plugins
            .iter()
            .map(|d| {
                let role = if config.spec.providers.iter().any(|p| p.kind == d.name) {
                    Role::Resolver
                } else if config.manifests.iter().any(|m| m.kind == d.name) {
                    Role::Source
                } else {
                    Role::Either
                };
                (d.name.as_str(), role)
            })
            .collect()
    }

    /// Start the plugin host and load the source plugins `manifests` need.
    pub fn source_plugins(
        &self,
        manifests: &[&Manifest],
    ) -> Result<(PluginHost, PluginSet), RunError> {
        let mut types: Vec<&str> = manifests.iter().map(|m| m.kind.as_str()).collect();
        types.sort_unstable();
        types.dedup();
        let wanted: Vec<(&str, Role)> = types.into_iter().map(|t| (t, Role::Source)).collect();
        let host = PluginHost::new(self.options.host.clone())?;
        // What the secret providers read is in no plugin's input.
        let providers = secrets::working_dir(&self.options.file);
        host.set_protected(Protected::new(
            self.config
                .spec
                .providers
                .iter()
                .flat_map(|provider| Protected::of_config(&providers, &provider.config)),
        ));
        let set = self.plugin_set(&host, &wanted, Resolve::Pinned)?;
        Ok((host, set))
    }

    /// Load the plugins `wanted` names in their roles: built-ins, and declared
    /// plugins, `oci://` ones by their pins in tazuna.lock (resolved and
    /// pinned when they have none, or again with [`Resolve::Again`]).
    pub fn plugin_set(
        &self,
        host: &PluginHost,
        wanted: &[(&str, Role)],
        resolve: Resolve,
    ) -> Result<PluginSet, RunError> {
        load_plugin_set(
            &self.config,
            &self.lock,
            &self.options.host,
            &self.notices,
            host,
            wanted,
            resolve,
        )
    }

    /// Render `manifests` with `render_settings`, then check what they
    /// pulled from upstream against the pins in tazuna.lock, recording new
    /// ones (see [`render::check_pins`]). Secret references stay as they are.
    pub fn render(
        &self,
        host: &PluginHost,
        plugins: &PluginSet,
        manifests: &[&Manifest],
        render_settings: &RenderSettings,
    ) -> Result<Vec<Result<Rendered, RenderError>>, RunError> {
        let mut results = render::render_all(host, plugins, manifests, render_settings);
        self.check_pins(&mut results)?;
        Ok(results)
    }

    /// [`render::check_pins`] for what `results` pulled, if anything.
    fn check_pins(&self, results: &mut [Result<Rendered, RenderError>]) -> Result<(), RunError> {
        let pulled = results
            .iter()
            .any(|r| r.as_ref().is_ok_and(|r| !r.upstream.is_empty()));
        if pulled {
            let notices = self.notices.clone();
            self.lock.update(|lock| {
                for line in render::check_pins(lock, results) {
                    notices(&line);
                }
                Ok::<_, RunError>(())
            })?;
        }
        Ok(())
    }

    /// The settings of a render for `cluster` (or for none, as `build` does).
    pub fn render_settings(&self, cluster: Option<&Cluster>, concurrency: usize) -> RenderSettings {
        RenderSettings {
            environment: self.options.environment.clone(),
            values: self.config.values(),
            cluster: cluster.map(Cluster::info),
            concurrency,
        }
    }

    /// Check the context name, connect, check the cluster identity, and (for
    /// writes) show the target and record the binding. Nothing is written to
    /// the cluster here.
    pub async fn connect(&self, access: Access) -> Result<Connection, RunError> {
        let guard = ContextGuard {
            rule: self.config.context_rule(),
            environment: self.options.environment.clone(),
            cluster: self.options.cluster.clone(),
            file_uid: self.config.cluster().and_then(|c| c.uid.clone()),
            lock_path: self.lock.path.clone(),
        };
        let context = cluster::context_name(&self.options.connect)?;
        let mut options = self.options.connect.clone();
        options.context = Some(context.clone());
        if access == Access::Throwaway {
            let cluster = Cluster::connect(&options).await?;
            self.notice(&format!("target: {} (throwaway)", cluster.target()));
            return Ok(self.connection(cluster));
        }
        guard.check_context(&context)?;
        let cluster = Cluster::connect(&options).await?;
        let rebind = match access {
            Access::Read | Access::Throwaway => Rebind::Refuse,
            Access::Write(rebind) => rebind,
        };
        if access == Access::Read {
            guard.check_identity(cluster.target(), &self.lock.load()?, rebind)?;
            return Ok(self.connection(cluster));
        }
        self.notice(&format!("target: {}", cluster.target()));
        self.notice(&format!("stack: {}", self.name()));
        // Checked again under the lock: a run that bound the file meanwhile
        // decides for this one.
        self.lock.update(|lock| {
            if let Some(binding) = guard.check_identity(cluster.target(), lock, rebind)? {
                if self.lock.writes == Writes::Persist {
                    self.notice(&format!(
                        "binding {} to cluster {} in `{}`",
                        match (&self.options.cluster, &self.options.environment) {
                            (Some(c), Some(e)) if c != e =>
                                format!("cluster `{c}` of environment `{e}`"),
                            (_, Some(e)) => format!("environment `{e}`"),
                            _ => "this file".to_owned(),
                        },
                        binding.uid,
                        self.lock.path.display()
                    ));
                }
                lock.bind(self.options.cluster.as_deref(), binding);
            }
            Ok::<_, RunError>(())
        })?;
        Ok(self.connection(cluster))
    }

    fn connection(&self, cluster: Cluster) -> Connection {
        let store = Store::new(cluster.client().clone());
        Connection { cluster, store }
    }

    /// Render `manifests` for `cluster` (plugins see its version and API
    /// groups) and resolve the secret references in their Secrets. Each result
    /// is the rendered manifest or why it did not render.
    fn render_for(
        &self,
        manifests: &[&Manifest],
        cluster: &Cluster,
    ) -> Result<Vec<Result<Rendered, Failure>>, RunError> {
        let _render = tracing::info_span!(
            target: tazuna_core::TRACE,
            "render",
            tazuna.manifests = manifests.len(),
        )
        .entered();
        let (host, plugins) = self.source_plugins(manifests)?;
        // Secret references are resolved only here, on the way to a cluster,
        // in rendered Secrets and for the tools plugins run; `tazuna build`
        // prints them as they are. Resolvers load on first use.
        let config = self.config.clone();
        let lock = self.lock.clone();
        let host_settings = self.options.host.clone();
        let notices = self.notices.clone();
        let secrets = Arc::new(ProviderSecrets::new(
            self.config.spec.providers.clone(),
            secrets::working_dir(&self.options.file),
            self.options.host.clone(),
            Box::new(move |host, kind| {
                load_plugin_set(
                    &config,
                    &lock,
                    &host_settings,
                    &notices,
                    host,
                    &[(kind, Role::Resolver)],
                    Resolve::Pinned,
                )
                .map_err(|error| error.to_string())
            }),
        ));
        host.set_tool_secrets(secrets.clone());
        let settings = self.render_settings(Some(cluster), 0);
        let mut results = self.render_marked(&host, &plugins, manifests, &settings)?;
        // A chart gated on a CRD that an earlier layer of this run creates
        // sees it, on the first apply and in a plan, as it will be served.
        for (again, info) in later_capabilities(manifests, &results, &settings) {
            let chosen: Vec<&Manifest> = again.iter().map(|&i| manifests[i]).collect();
            let settings = RenderSettings {
                cluster: Some(info),
                ..settings.clone()
            };
            let rendered = self.render_marked(&host, &plugins, &chosen, &settings)?;
            for (index, result) in again.into_iter().zip(rendered) {
                results[index] = result;
            }
        }
        secrets::resolve_all(&secrets, manifests, &mut results);
        Ok(results
            .into_iter()
            .map(|r| r.map_err(|e| Failure::of(&e)))
            .collect())
    }

    /// [`Self::render_for`], then the live values of generated fields kept
    /// (see [`tazuna_kube::generated`]).
    async fn render_on(
        &self,
        manifests: &[&Manifest],
        cluster: &Cluster,
    ) -> Result<Vec<Result<Rendered, Failure>>, RunError> {
        let mut rendered = tokio::task::block_in_place(|| self.render_for(manifests, cluster))?;
        for (manifest, result) in manifests.iter().zip(&mut rendered) {
            let Ok(ok) = result else {
                continue;
            };
            if ok.objects.iter().all(|o| o.generated.is_empty()) {
                continue;
            }
            if let Err(error) = tazuna_kube::generated::keep_live(cluster, manifest, ok).await {
                *result = Err(Failure {
                    message: format!(
                        "cannot read the live objects whose generated fields it keeps: {error}"
                    ),
                    hint: None,
                });
            }
        }
        Ok(rendered)
    }

    /// [`Self::render`], and for the sources that may draw random values
    /// (helm's `randAlphaNum`, `genCA`, `uuidv4`), a second render of the
    /// same inputs: the fields that come out differently are marked
    /// generated, and named (Secrets aside) with a hint to pin them. The
    /// second renders run beside the first ones, in the same pool of workers,
    /// so they cost CPU but little time.
    fn render_marked(
        &self,
        host: &PluginHost,
        plugins: &PluginSet,
        manifests: &[&Manifest],
        settings: &RenderSettings,
    ) -> Result<Vec<Result<Rendered, RenderError>>, RunError> {
        let again: Vec<usize> = (0..manifests.len())
            .filter(|&i| renders_may_differ(manifests[i]))
            .collect();
        let mut all = manifests.to_vec();
        all.extend(again.iter().map(|&i| manifests[i]));
        let mut results = render::render_all(host, plugins, &all, settings);
        let second = results.split_off(manifests.len());
        self.check_pins(&mut results)?;
        for (index, second) in again.into_iter().zip(second) {
            if let (Ok(first), Ok(second)) = (&mut results[index], second) {
                for line in mark_generated(first, &second) {
                    self.notice(&line);
                }
            }
        }
        Ok(results)
    }

    /// The span of one run of `verb` on `cluster`: the cluster, the stack and
    /// the environment, and (see [`record_run`]) the counts and outcome.
    fn run_span(&self, verb: &str, cluster: &Cluster) -> tracing::Span {
        use tracing::field::Empty;
        let target = cluster.target();
        tracing::info_span!(
            target: tazuna_core::TRACE,
            "run",
            tazuna.verb = verb,
            tazuna.stack = self.name(),
            tazuna.environment = self.options.environment.as_deref().unwrap_or_default(),
            tazuna.cluster = self
                .options
                .cluster
                .as_deref()
                .or(self.options.environment.as_deref())
                .unwrap_or(target.context.as_str()),
            tazuna.context = target.context.as_str(),
            tazuna.server = target.server.as_str(),
            tazuna.cluster_uid = target.uid.as_str(),
            tazuna.manifests = Empty,
            tazuna.objects.created = Empty,
            tazuna.objects.configured = Empty,
            tazuna.objects.unchanged = Empty,
            tazuna.objects.pruned = Empty,
            otel.status_code = Empty,
            otel.status_description = Empty,
        )
    }

    /// The stack's records and everyone else's, from one list call.
    pub async fn states(&self, connection: &Connection) -> Result<StackStates, RunError> {
        let all = connection.store.load().await?;
        Ok(StackStates::split(
            all,
            self.name(),
            self.origin(),
            &self.declared(),
        ))
    }

    fn declared(&self) -> HashSet<&str> {
        self.config
            .manifests
            .iter()
            .map(|m| m.name.as_str())
            .collect()
    }

    /// Which manifest claims each rendered object; objects rendered twice or
    /// into Tazuna's namespace are refused.
    fn claims(
        &self,
        cluster: &Cluster,
        rendered: &[(&Manifest, &Rendered)],
    ) -> Result<Claims, RunError> {
        let inputs: Vec<(&str, Option<&str>, &Rendered)> = rendered
            .iter()
            .map(|(m, r)| (m.name.as_str(), m.namespace.as_deref(), *r))
            .collect();
        Claims::of(&inputs, |o| cluster.resolve(o).map(|r| r.namespaced))
            .map_err(RunError::Ownership)
    }

    /// Refuse a run that writes into a namespace that does not exist and that
    /// no manifest of the run renders or creates (`createNamespace`).
    async fn check_namespaces(
        &self,
        cluster: &Cluster,
        run: &[(&Manifest, &Rendered)],
    ) -> Result<(), RunError> {
        let missing = tazuna_kube::namespaces::missing(cluster, run, &self.config.manifests)
            .await
            .map_err(RunError::Read)?;
        if missing.is_empty() {
            Ok(())
        } else {
            Err(RunError::MissingNamespaces(missing))
        }
    }

    /// Manifest names of this file that another stack owns, and objects of
    /// this run that another stack applied, are refused (the claim verdict,
    /// [`StackStates::claimed`]).
    fn check_names(&self, states: &StackStates, claims: &Claims) -> Result<(), RunError> {
        let mut taken = states.collided(self.name(), self.origin());
        taken.extend(states.taken(self.config.manifests.iter().map(|m| m.name.as_str())));
        taken.extend(states.claimed(claims));
        if taken.is_empty() {
            Ok(())
        } else {
            Err(RunError::Ownership(taken))
        }
    }

    /// Objects that exist, that no stack applied, and that content the user
    /// did not write (or a hook) renders are taken over only when the
    /// manifest's `adopt:` names them (the takeover verdict,
    /// [`tazuna_kube::takeover::takeover`]).
    async fn check_takeovers(
        &self,
        cluster: &Cluster,
        states: &StackStates,
        run: &[(&Manifest, &Rendered)],
    ) -> Result<(), RunError> {
        tazuna_kube::takeover::check(cluster, states, run)
            .await
            .map(drop)
            .map_err(RunError::Ownership)
    }

    /// Bring the cluster to the file: render, refuse what the stack may not
    /// write, take the Lease, apply layer by layer, prune by ownership (also
    /// the manifests removed from the file), and run `spec.tests`.
    pub async fn apply(
        &self,
        connection: &Connection,
        options: &ApplyOptions,
        observer: &dyn Observer,
    ) -> Result<Vec<ManifestOutcome>, RunError> {
        let verb = match options.mode {
            Mode::Apply => "apply",
            Mode::DryRun => "apply --dry-run",
        };
        let span = self.run_span(verb, &connection.cluster);
        let outcome = self
            .apply_traced(connection, options, observer)
            .instrument(span.clone())
            .await;
        record_run(&span, outcome.as_ref().map(Vec::as_slice));
        outcome
    }

    async fn apply_traced(
        &self,
        connection: &Connection,
        options: &ApplyOptions,
        observer: &dyn Observer,
    ) -> Result<Vec<ManifestOutcome>, RunError> {
        let selected = self.selected()?;
        let rendered = self.render_on(&selected, &connection.cluster).await?;
        let ok: Vec<(&Manifest, &Rendered)> = selected
            .iter()
            .zip(&rendered)
            .filter_map(|(m, r)| Some((*m, r.as_ref().ok()?)))
            .collect();
        // Before anything is written, Tazuna's own namespace and Lease included.
        let claims = self.claims(&connection.cluster, &ok)?;
        self.check_namespaces(&connection.cluster, &ok).await?;
        let store = &connection.store;
        let guard = match options.mode {
            Mode::Apply => {
                store.ensure_namespace().await?;
                let guard = store.lock(&holder_identity(), options.lock_timeout).await?;
                if let Some(from) = guard.taken_over() {
                    self.notice(&format!("took over the lock on this cluster from {from}"));
                }
                Some(guard)
            }
            Mode::DryRun => None,
        };
        let outcome = self
            .apply_locked(connection, options, &selected, rendered, claims, observer)
            .await;
        if let Some(guard) = guard {
            guard.release().await;
        }
        outcome
    }

    async fn apply_locked(
        &self,
        connection: &Connection,
        options: &ApplyOptions,
        selected: &[&Manifest],
        rendered: Vec<Result<Rendered, Failure>>,
        claims: Claims,
        observer: &dyn Observer,
    ) -> Result<Vec<ManifestOutcome>, RunError> {
        let Connection { cluster, store } = connection;
        // Read under the Lease: what another run wrote before it is seen.
        let states = self.states(connection).await?;
        self.check_names(&states, &claims)?;
        let ok: Vec<(&Manifest, &Rendered)> = selected
            .iter()
            .zip(&rendered)
            .filter_map(|(m, r)| Some((*m, r.as_ref().ok()?)))
            .collect();
        self.check_takeovers(cluster, &states, &ok).await?;
        let complete = rendered.iter().all(Result::is_ok);
        if !complete && options.prune != Prune::Off && options.mode == Mode::Apply {
            self.notice(
                "note: nothing is pruned in this run: a manifest failed to render, so what it keeps is unknown",
            );
        }
        let declared = self.declared();
        let ownership = Ownership::new(claims, &states.own, &declared, complete)
            .with_other_stacks(&states.others);
        let hash_key = match options.mode {
            Mode::Apply => store.ensure_hash_key().await?,
            Mode::DryRun => store.hash_key().await?.unwrap_or_default(),
        };
        let settings = ApplySettings {
            conflicts: options.conflicts,
            recreate: options.recreate,
            prune: options.prune,
            mode: options.mode,
            manifests_at_once: options.manifests_at_once,
            requests_at_once: options.requests_at_once,
            resend: options.resend,
            atomic: options.atomic,
            git_commit: git_commit(&self.config.dir),
            origin: self.origin().map(str::to_owned),
            tazuna_version: crate::VERSION.to_owned(),
            run_spec_tests: self.options.tags.is_empty(),
            deletion_timeout: Wait::DEFAULT_TIMEOUT,
        };
        let run = Run {
            cluster,
            store,
            states: &states.own,
            stack: self.name(),
            manager: FieldManager::of(self.name()),
            ownership: &ownership,
            hash_key: &hash_key,
            settings: &settings,
            observer,
            journal: Default::default(),
        };
        let positions: BTreeMap<&str, usize> = self
            .config
            .manifests
            .iter()
            .enumerate()
            .map(|(i, m)| (m.name.as_str(), i))
            .collect();
        let units: Vec<Unit> = selected
            .iter()
            .zip(rendered)
            .map(|(manifest, rendered)| Unit {
                manifest,
                position: positions[manifest.name.as_str()],
                rendered,
            })
            .collect();
        let layers = graph::layers(selected);
        let sequential = selected.iter().all(|m| m.depends_on.is_empty());
        let mut outcomes = run.apply(&units, &layers, sequential).await;

        // The stack's manifests removed from the file: their objects go by
        // the rules of in-file prune, unless another manifest keeps them.
        let removed: BTreeMap<String, Stored> = states
            .own
            .iter()
            .filter(|(name, _)| !declared.contains(name.as_str()))
            .map(|(n, s)| (n.clone(), s.clone()))
            .collect();
        if !removed.is_empty() {
            let names = removed
                .keys()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ");
            if options.prune == Prune::Off || options.mode == Mode::DryRun {
                self.notice(&format!(
                    "note: {names} removed from the file still {} objects in the cluster; `tazuna apply --prune` deletes them",
                    if removed.len() == 1 { "has" } else { "have" }
                ));
            } else if ownership.may_prune() {
                let order = crate::destroy::order(&removed);
                outcomes.extend(run.prune_removed(&order, options.prune).await);
            }
        }
        let all_ok = outcomes.iter().all(|o| o.outcome == Outcome::Applied);
        if !all_ok && options.atomic && options.mode == Mode::Apply {
            self.roll_back(&run, &states.own).await?;
            return Ok(outcomes);
        }
        if all_ok
            && settings.run_spec_tests
            && options.mode == Mode::Apply
            && let Some(outcome) = run.spec_tests(&self.config.spec.tests).await
        {
            observer.event(Event::Finished(outcome.clone()));
            outcomes.push(outcome);
        }
        Ok(outcomes)
    }

    /// Undo a failed `--atomic` run: its objects as they were, and the state
    /// of every manifest it wrote as it was read at the start (`before`).
    async fn roll_back(
        &self,
        run: &Run<'_>,
        before: &BTreeMap<String, Stored>,
    ) -> Result<(), RunError> {
        let undone = run.roll_back().await;
        let now = self.states_of(run.store).await?;
        let mut states = 0;
        for (name, current) in &now {
            match before.get(name) {
                Some(previous) if previous.resource_version == current.resource_version => {}
                Some(previous) => {
                    run.store.save(&previous.state, Some(current)).await?;
                    states += 1;
                }
                None => {
                    run.store.delete(current).await?;
                    states += 1;
                }
            }
        }
        self.notice(&format!(
            "rolled back (--atomic): {} created object(s) deleted, {} changed object(s) restored, the state of {states} manifest(s) put back",
            undone.deleted, undone.restored
        ));
        for failure in &undone.failures {
            self.notice(&format!("warning: could not undo {failure}"));
        }
        Ok(())
    }

    /// This stack's own manifest states on `store`, as they are now.
    async fn states_of(&self, store: &Store) -> Result<BTreeMap<String, Stored>, RunError> {
        let all = store.load().await?;
        Ok(StackStates::split(all, self.name(), self.origin(), &self.declared()).own)
    }

    /// Run the chart tests (helm test hooks) of the selected manifests on a
    /// cluster they were applied to, under the Lease, as `helm test` does.
    /// Nothing is recorded in state.
    pub async fn test(
        &self,
        connection: &Connection,
        lock_timeout: Duration,
        observer: &dyn Observer,
    ) -> Result<Vec<ManifestOutcome>, RunError> {
        let selected = self.selected()?;
        let rendered = self.render_on(&selected, &connection.cluster).await?;
        let store = &connection.store;
        let guard = store.lock(&holder_identity(), lock_timeout).await?;
        let outcome = async {
            let states = self.states(connection).await?;
            let declared = self.declared();
            let ownership = Ownership::new(Claims::default(), &states.own, &declared, false);
            let hash_key = store.hash_key().await?.unwrap_or_default();
            let settings = teardown_settings(Wait::DEFAULT_TIMEOUT);
            let run = Run {
                cluster: &connection.cluster,
                store,
                states: &states.own,
                stack: self.name(),
                manager: FieldManager::of(self.name()),
                ownership: &ownership,
                hash_key: &hash_key,
                settings: &settings,
                observer,
                journal: Default::default(),
            };
            let units: Vec<Unit> = selected
                .iter()
                .zip(rendered)
                .enumerate()
                .map(|(position, (manifest, rendered))| Unit {
                    manifest,
                    position,
                    rendered,
                })
                .collect();
            Ok(run.chart_tests(&units).await)
        }
        .await;
        guard.release().await;
        outcome
    }

    /// Compare the file with the cluster (`plan`, `state drift`) or with the
    /// state (`state diff`), for the stack's own records only. Refuses what
    /// apply would refuse.
    pub async fn plan(
        &self,
        connection: &Connection,
        question: Question,
    ) -> Result<Report, RunError> {
        let span = self.run_span(question.verb(), &connection.cluster);
        let report = self
            .plan_traced(connection, question)
            .instrument(span.clone())
            .await;
        tazuna_core::trace_status(
            &span,
            report.as_ref().map(|_| ()).map_err(ToString::to_string),
        );
        report
    }

    async fn plan_traced(
        &self,
        connection: &Connection,
        question: Question,
    ) -> Result<Report, RunError> {
        let ordered = self.ordered()?;
        let rendered = self.render_on(&ordered, &connection.cluster).await?;
        let mut errors = Vec::new();
        let mut intents_rendered = Vec::new();
        for (manifest, result) in ordered.iter().zip(rendered) {
            match result {
                Ok(r) => intents_rendered.push((*manifest, r)),
                Err(error) => errors.push(error),
            }
        }
        if !errors.is_empty() {
            return Err(RunError::Render(errors));
        }
        let states = self.states(connection).await?;
        let pairs: Vec<(&Manifest, &Rendered)> =
            intents_rendered.iter().map(|(m, r)| (*m, r)).collect();
        let claims = self.claims(&connection.cluster, &pairs)?;
        self.check_names(&states, &claims)?;
        if question == Question::Plan {
            self.check_takeovers(&connection.cluster, &states, &pairs)
                .await?;
            self.check_namespaces(&connection.cluster, &pairs).await?;
        }
        let declared = self.declared();
        let ownership =
            Ownership::new(claims, &states.own, &declared, true).with_other_stacks(&states.others);
        let hash_key = connection.store.hash_key().await?;
        let intents: Vec<Intent> = intents_rendered
            .iter()
            .map(|(m, r)| Intent {
                manifest: m,
                rendered: r,
            })
            .collect();
        let all: HashSet<String> = if self.options.tags.is_empty() {
            declared.iter().map(|n| (*n).to_owned()).collect()
        } else {
            // With a tag selection, manifests outside it are not "removed".
            states
                .own
                .keys()
                .cloned()
                .chain(declared.iter().map(|n| (*n).to_owned()))
                .collect()
        };
        Ok(plan::compare(
            &connection.cluster,
            &FieldManager::of(self.name()),
            &states.own,
            &intents,
            &all,
            &ownership,
            hash_key.as_deref(),
            question,
        )
        .await?)
    }

    /// Delete everything the stack's state records (of the selected
    /// manifests), then the state, in reverse dependency order. `confirm`
    /// sees what would go and says whether to go on. `None` when there was
    /// nothing to destroy or it was not confirmed.
    pub async fn destroy(
        &self,
        connection: &Connection,
        lock_timeout: Duration,
        deletion_timeout: Duration,
        confirm: impl FnOnce(&Teardown) -> bool,
        observer: &dyn Observer,
    ) -> Result<Option<Vec<ManifestOutcome>>, RunError> {
        let span = self.run_span("destroy", &connection.cluster);
        let outcome = self
            .destroy_traced(
                connection,
                lock_timeout,
                deletion_timeout,
                confirm,
                observer,
            )
            .instrument(span.clone())
            .await;
        record_run(
            &span,
            outcome
                .as_ref()
                .map(|outcomes| outcomes.as_deref().unwrap_or_default()),
        );
        outcome
    }

    async fn destroy_traced(
        &self,
        connection: &Connection,
        lock_timeout: Duration,
        deletion_timeout: Duration,
        confirm: impl FnOnce(&Teardown) -> bool,
        observer: &dyn Observer,
    ) -> Result<Option<Vec<ManifestOutcome>>, RunError> {
        let chosen = self.chosen(self.states(connection).await?.own)?;
        if chosen.is_empty() {
            self.notice(&format!(
                "nothing to destroy: stack `{}` has no state on this cluster",
                self.name()
            ));
            return Ok(None);
        }
        let teardown = Teardown {
            manifests: chosen.keys().cloned().collect(),
            objects: chosen.values().map(|s| s.state.objects.len()).sum(),
            context: connection.cluster.target().context.clone(),
        };
        if !confirm(&teardown) {
            return Ok(None);
        }
        let store = &connection.store;
        let guard = store.lock(&holder_identity(), lock_timeout).await?;
        if let Some(from) = guard.taken_over() {
            self.notice(&format!("took over the lock on this cluster from {from}"));
        }
        let outcome = async {
            // Read again under the lock: another run may have changed it.
            let states = self.states(connection).await?;
            let (doomed, rest): (BTreeMap<_, _>, BTreeMap<_, _>) = states
                .own
                .into_iter()
                .partition(|(name, _)| chosen.contains_key(name));
            // Objects a manifest that stays, or another stack, also records
            // are left to it.
            let staying: HashSet<&str> = rest.keys().map(String::as_str).collect();
            let ownership = Ownership::new(Claims::default(), &rest, &staying, true)
                .with_other_stacks(&states.others);
            let settings = teardown_settings(deletion_timeout);
            let run = Run {
                cluster: &connection.cluster,
                store,
                states: &doomed,
                stack: self.name(),
                manager: FieldManager::of(self.name()),
                ownership: &ownership,
                hash_key: &[],
                settings: &settings,
                observer,
                journal: Default::default(),
            };
            let order = crate::destroy::order(&doomed);
            Ok(run.destroy(&order).await)
        }
        .await;
        guard.release().await;
        outcome.map(Some)
    }

    /// The records of the manifests the tags select (all without tags).
    fn chosen(
        &self,
        mut own: BTreeMap<String, Stored>,
    ) -> Result<BTreeMap<String, Stored>, RunError> {
        if !self.options.tags.is_empty() {
            let selected: HashSet<&str> =
                self.selected()?.iter().map(|m| m.name.as_str()).collect();
            own.retain(|name, _| selected.contains(name.as_str()));
        }
        Ok(own)
    }

    /// Whether the objects of the stack's state exist and are ready.
    pub async fn status(&self, connection: &Connection) -> Result<StatusReport, RunError> {
        let own = self.states(connection).await?.own;
        let (rows, requests) = crate::status::readiness(&connection.cluster, &own)
            .await
            .map_err(RunError::Read)?;
        Ok(StatusReport {
            rows,
            manifests: own.len(),
            incomplete: own
                .values()
                .filter(|s| s.state.incomplete)
                .map(|s| s.state.manifest.clone())
                .collect(),
            requests,
        })
    }

    /// The live objects of this stack's state on the cluster, by manifest
    /// (for comparing two clusters as they are).
    pub async fn live_objects(
        &self,
        connection: &Connection,
    ) -> Result<Vec<(String, serde_json::Value)>, RunError> {
        let own = self.states(connection).await?.own;
        tazuna_kube::live::recorded(&connection.cluster, &own)
            .await
            .map_err(RunError::Read)
    }

    /// Stop managing `target` (`<manifest>` or `<manifest>/<Kind>[/<namespace>]/<name>`)
    /// without deleting it. Returns what was forgotten, for people.
    pub async fn forget(&self, connection: &Connection, target: &str) -> Result<String, RunError> {
        under_lease(connection, self.forget_locked(connection, target)).await
    }

    async fn forget_locked(
        &self,
        connection: &Connection,
        target: &str,
    ) -> Result<String, RunError> {
        let states = self.states(connection).await?;
        let mut parts = target.splitn(2, '/');
        let manifest = parts.next().unwrap_or_default();
        let Some(stored) = states.own.get(manifest) else {
            let known: Vec<&str> = states.own.keys().map(String::as_str).collect();
            let elsewhere = states
                .others
                .get(manifest)
                .and_then(|s| s.state.stack.clone())
                .map(|stack| {
                    format!(
                        "; it belongs to stack `{stack}`: run `tazuna state forget` with that file"
                    )
                })
                .unwrap_or_default();
            return Err(RunError::NotInState(
                format!(
                    "manifest `{manifest}` is not in the state of stack `{}`",
                    self.name()
                ),
                format!(
                    "`tazuna state list` shows what is; known: {}{elsewhere}",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        };
        let store = &connection.store;
        let Some(rest) = parts.next() else {
            store.delete(stored).await?;
            return Ok(format!(
                "forgot manifest `{manifest}` and its {} objects; they stay in the cluster",
                stored.state.objects.len()
            ));
        };
        let pieces: Vec<&str> = rest.split('/').collect();
        let (kind, namespace, name) = match pieces.as_slice() {
            [kind, name] => (*kind, None, *name),
            [kind, namespace, name] => (*kind, Some(*namespace), *name),
            _ => {
                return Err(RunError::NotInState(
                    format!(
                        "`{target}` is not `<manifest>/<Kind>/<name>` or `<manifest>/<Kind>/<namespace>/<name>`"
                    ),
                    "for example `tazuna state forget argocd/ConfigMap/argocd/argocd-cm`".into(),
                ));
            }
        };
        let mut state = stored.state.clone();
        let before = state.objects.len();
        state.objects.retain(|e| {
            !(e.kind == kind
                && e.name == name
                && (namespace.is_none() || e.namespace.as_deref() == namespace))
        });
        let removed = before - state.objects.len();
        if removed == 0 {
            return Err(RunError::NotInState(
                format!("manifest `{manifest}` has no {kind} `{name}` in its state"),
                "`tazuna state list -o json` shows its objects".into(),
            ));
        }
        state.stack = Some(self.name().to_owned());
        store.save(&state, Some(stored)).await?;
        Ok(format!(
            "forgot {removed} object(s) of manifest `{manifest}`; they stay in the cluster"
        ))
    }
}

impl Stack {
    /// Go Tazuna's `state sync`: drop from this stack's state the objects
    /// that are gone from the cluster (deleted by hand, or with a CRD that
    /// went away), so that plan, prune and destroy stop counting them. A Job
    /// removed by its TTL stays: it finished, it is not lost. With
    /// `dry_run`, only reports. Returns each dropped object with its manifest.
    pub async fn sync_state(
        &self,
        connection: &Connection,
        dry_run: bool,
    ) -> Result<Vec<(String, tazuna_core::inventory::ObjectRef)>, RunError> {
        under_lease(connection, self.sync_state_locked(connection, dry_run)).await
    }

    async fn sync_state_locked(
        &self,
        connection: &Connection,
        dry_run: bool,
    ) -> Result<Vec<(String, tazuna_core::inventory::ObjectRef)>, RunError> {
        let states = self.states(connection).await?;
        let mut live = tazuna_kube::live::LiveIndex::metadata(&connection.cluster);
        let mut dropped = Vec::new();
        for stored in states.own.values() {
            let mut kept = Vec::with_capacity(stored.state.objects.len());
            let mut gone = Vec::new();
            for entry in &stored.state.objects {
                let object = entry.object();
                let exists = match connection.cluster.resolve(&object) {
                    // Its kind is served no more: nothing of it exists.
                    None => false,
                    Some(resolved) => live
                        .get(&object, &resolved)
                        .await
                        .map_err(RunError::Read)?
                        .is_some(),
                };
                if exists || entry.removed_when_done {
                    kept.push(entry.clone());
                } else {
                    gone.push(object);
                }
            }
            if gone.is_empty() {
                continue;
            }
            if !dry_run {
                let mut state = stored.state.clone();
                state.objects = kept;
                state.stack = Some(self.name().to_owned());
                connection.store.save(&state, Some(stored)).await?;
            }
            dropped.extend(gone.into_iter().map(|o| (stored.state.manifest.clone(), o)));
        }
        Ok(dropped)
    }
}

/// Run `work` holding the cluster's Lease (waiting up to a minute for it),
/// and release it whatever the outcome.
async fn under_lease<T>(
    connection: &Connection,
    work: impl std::future::Future<Output = Result<T, RunError>>,
) -> Result<T, RunError> {
    let guard = connection
        .store
        .lock(&holder_identity(), Duration::from_secs(60))
        .await?;
    let result = work.await;
    guard.release().await;
    result
}

/// Load the plugins `wanted` names (see [`Stack::plugin_set`]); a free
/// function so that the secret-resolver loader can call it without the stack.
fn load_plugin_set(
    config: &Config,
    lock: &LockFile,
    host_settings: &HostSettings,
    notices: &Notices,
    host: &PluginHost,
    wanted: &[(&str, Role)],
    resolve: Resolve,
) -> Result<PluginSet, RunError> {
    let resolve = match resolve {
        Resolve::Pinned if host_settings.offline => Resolve::Offline,
        other => other,
    };
    let declared = &config.spec.plugins;
    let needs_oci = declared.iter().any(|d| {
        matches!(d.source, PluginSource::Oci { .. })
            && wanted.iter().any(|(name, _)| *name == d.name)
    });
    if !needs_oci {
        return Ok(PluginSet::load(
            host,
            wanted,
            declared,
            &Default::default(),
        )?);
    }
    let pinned = lock.load()?;
    let blobs = Blobs::new(host_settings.cache_dir.as_deref());
    let fetched = block_on(plugins::fetch_oci(
        declared, wanted, &pinned, resolve, &blobs,
    ))?;
    let set = PluginSet::load(host, wanted, declared, &fetched)?;
    let pins = plugins::new_pins(&set, fetched);
    if !pins.is_empty() {
        lock.update(|lock_file| {
            for (name, pin) in pins {
                notices(&format!(
                    "pinned plugin `{name}` {} ({}) in {}",
                    pin.version,
                    pin.manifest_digest,
                    lock.path.display()
                ));
                lock_file.plugins.insert(name, pin);
            }
            Ok::<_, RunError>(())
        })?;
    }
    Ok(set)
}

/// A run's counts and outcome on its span: `ok` when every manifest applied.
fn record_run(span: &tracing::Span, outcome: Result<&[ManifestOutcome], &RunError>) {
    let outcomes = match outcome {
        Ok(outcomes) => outcomes,
        Err(error) => return tazuna_core::trace_status(span, Err(error.to_string())),
    };
    let mut total = Counts::default();
    for outcome in outcomes {
        total.created += outcome.counts.created;
        total.configured += outcome.counts.configured;
        total.unchanged += outcome.counts.unchanged;
        total.pruned += outcome.counts.pruned;
    }
    span.record("tazuna.manifests", outcomes.len());
    span.record("tazuna.objects.created", total.created);
    span.record("tazuna.objects.configured", total.configured);
    span.record("tazuna.objects.unchanged", total.unchanged);
    span.record("tazuna.objects.pruned", total.pruned);
    let failed = outcomes
        .iter()
        .filter(|o| o.outcome != Outcome::Applied)
        .count();
    tazuna_core::trace_status(
        span,
        match failed {
            0 => Ok(()),
            n => Err(format!("{n} of {} manifests did not apply", outcomes.len())),
        },
    );
}

/// What taking objects down needs of the apply settings: deletes only, one
/// manifest at a time, each step's deletions waited for at most
/// `deletion_timeout`.
fn teardown_settings(deletion_timeout: Duration) -> ApplySettings {
    ApplySettings {
        conflicts: Conflicts::Report,
        recreate: Recreate::Never,
        prune: Prune::Dangerous,
        mode: Mode::Apply,
        manifests_at_once: 1,
        requests_at_once: tazuna_kube::apply::REQUESTS_AT_ONCE,
        resend: false,
        atomic: false,
        git_commit: None,
        origin: None,
        tazuna_version: crate::VERSION.to_owned(),
        run_spec_tests: false,
        deletion_timeout,
    }
}

/// Mark the fields of `first` that `second`, a render of the same inputs,
/// has otherwise; returns what to tell the user: objects other than Secrets
/// (whose generated passwords are expected) with such fields, and objects
/// only one render has.
fn mark_generated(first: &mut Rendered, second: &Rendered) -> Vec<String> {
    use std::collections::HashMap;
    use tazuna_core::inventory::ObjectRef;
    let others: HashMap<ObjectRef, &serde_json::Value> = second
        .objects
        .iter()
        .filter_map(|o| Some((ObjectRef::of(&o.value)?, &o.value)))
        .collect();
    let mut notes = Vec::new();
    let mut unmatched = Vec::new();
    for object in &mut first.objects {
        let Some(reference) = ObjectRef::of(&object.value) else {
            continue;
        };
        let Some(other) = others.get(&reference) else {
            unmatched.push(reference.to_string());
            continue;
        };
        object.generated = tazuna_core::generated::differences(&object.value, other);
        if !object.generated.is_empty() && !reference.is_secret() {
            let fields: Vec<String> = object.generated.iter().map(|f| format!("`{f}`")).collect();
            notes.push(format!(
                "note: manifest `{}`: {reference} renders differently on identical inputs at {}; the live values are kept; set them in the values to pin them",
                first.manifest,
                fields.join(", ")
            ));
        }
    }
    if !unmatched.is_empty() || others.len() != first.objects.len() {
        notes.push(format!(
            "note: manifest `{}` renders a different set of objects on identical inputs{}; pin what chooses them in the values",
            first.manifest,
            if unmatched.is_empty() { String::new() } else { format!(" ({})", unmatched.join(", ")) }
        ));
    }
    notes
}

/// For each layer of `manifests` after one whose renders hold CRDs the
/// cluster does not serve yet: the manifests of it whose source reads the
/// cluster's capabilities, and the cluster as it will be when their turn
/// comes (those CRDs served). Sources that read no capabilities (`manifests`,
/// `kustomize`) are not rendered again.
fn later_capabilities(
    manifests: &[&Manifest],
    results: &[Result<Rendered, RenderError>],
    settings: &RenderSettings,
) -> Vec<(Vec<usize>, tazuna_core::render::ClusterInfo)> {
    let Some(cluster) = &settings.cluster else {
        return Vec::new();
    };
    let mut definitions: Vec<&serde_json::Value> = Vec::new();
    let mut again = Vec::new();
    for layer in graph::layers(manifests) {
        let reads: Vec<usize> = layer
            .iter()
            .copied()
            .filter(|&i| !matches!(manifests[i].kind.as_str(), "manifests" | "kustomize"))
            .collect();
        if !definitions.is_empty()
            && !reads.is_empty()
            && let Some(info) = cluster.with_definitions(definitions.iter().copied())
        {
            again.push((reads, info));
        }
        for &i in &layer {
            if let Ok(rendered) = &results[i] {
                definitions.extend(
                    rendered
                        .objects
                        .iter()
                        .map(|o| &o.value)
                        .filter(|v| v["kind"] == "CustomResourceDefinition"),
                );
            }
        }
    }
    again
}

/// The running Tazuna's version.
pub fn tazuna_version() -> semver::Version {
    semver::Version::parse(crate::VERSION).expect("the crate version is semver")
}

/// Run `future` to completion, inside or outside a runtime.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => tokio::task::block_in_place(|| handle.block_on(future)),
        Err(_) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime starts")
            .block_on(future),
    }
}

/// Who takes the lock: `user@host pid N (time)`.
pub fn holder_identity() -> String {
    crate::state::holder_identity()
}

/// Whether two renders of `manifest` with the same inputs can differ, so
/// that a second render is needed to find its generated fields (see
/// [`Stack::render_marked`]): a helmfile's always (its charts are its own
/// business); a helm chart's unless it is a chart directory of the
/// repository that, with its values, names no function that draws anew.
fn renders_may_differ(manifest: &Manifest) -> bool {
    match manifest.kind.as_str() {
        "helmfile" => local_helmfile(manifest)
            .is_none_or(|(dir, values)| tazuna_core::generated::may_draw_anew(&dir, &values)),
        "helm" => local_chart(manifest)
            .is_none_or(|(chart, values)| tazuna_core::generated::may_draw_anew(&chart, &values)),
        _ => false,
    }
}

/// A helmfile manifest's directory and the text of its `helmfile:` block,
/// when everything the render reads is in that directory (see
/// [`tazuna_core::generated::self_contained_helmfile`]) or in the block
/// itself; `None` otherwise (values from the environment, from outside files,
/// or from a variable read as the tool starts).
fn local_helmfile(manifest: &Manifest) -> Option<(PathBuf, Vec<String>)> {
    let config = &manifest.config;
    let outside = config["environmentValues"] == serde_json::json!(true)
        || config["extraValueFiles"]
            .as_array()
            .is_some_and(|files| !files.is_empty())
        || config["vars"]
            .as_object()
            .is_some_and(|vars| vars.values().any(|var| var["from"] != "static"));
    if outside {
        return None;
    }
    let dir = tazuna_core::generated::self_contained_helmfile(&manifest.resolved_path()?)?;
    Some((dir, vec![config.to_string()]))
}

/// A helm manifest's chart directory and the texts of its values, when the
/// chart is a directory of the repository and every values file can be read
/// here; `None` otherwise (a remote chart, an archive, values from the
/// environment or a values file named by a template).
fn local_chart(manifest: &Manifest) -> Option<(PathBuf, Vec<String>)> {
    let config = &manifest.config;
    let set = |key: &str| config.get(key).is_some_and(|v| !v.is_null());
    if set("chart") || set("repo") || config["environmentValues"] == serde_json::json!(true) {
        return None;
    }
    let chart = manifest.resolved_path()?;
    if !chart.join("Chart.yaml").is_file() {
        return None;
    }
    let mut values = Vec::new();
    for file in config["valuesFiles"].as_array().into_iter().flatten() {
        // Read only what the source would: a regular file under the
        // manifest's directory, of a size a chart may have.
        let file = Path::new(file.as_str().filter(|f| !f.contains("{{"))?);
        if !file.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        }) {
            return None;
        }
        let path = manifest.base_dir.join(file);
        let metadata = std::fs::metadata(&path).ok()?;
        if !metadata.is_file() || metadata.len() > tazuna_core::generated::SCAN_LIMIT {
            return None;
        }
        values.push(std::fs::read_to_string(path).ok()?);
    }
    if set("values") {
        values.push(config["values"].to_string());
    }
    Some((chart, values))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sources_that_may_draw_values_anew_are_rendered_twice() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |path: &str, text: &str| {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(
            "plain/Chart.yaml",
            "apiVersion: v2\nname: plain\nversion: 0.1.0\n",
        );
        write("plain/templates/cm.yaml", "data: {{ .Values.x | quote }}\n");
        write(
            "drawn/Chart.yaml",
            "apiVersion: v2\nname: drawn\nversion: 0.1.0\n",
        );
        write(
            "drawn/templates/s.yaml",
            "data: {{ randAlphaNum 8 | quote }}\n",
        );
        write("plain.yaml", "x: a\n");
        write("tpl.yaml", "x: '{{ uuidv4 }}'\n");
        write("objects.yaml", "");
        let releases =
            "releases:\n  - {name: a, namespace: a, chart: ./charts/a, values: [a.yaml]}\n";
        for dir in ["hf", "hf-drawn", "hf-remote", "hf-gotmpl"] {
            write(&format!("{dir}/helmfile.yaml"), releases);
            write(
                &format!("{dir}/charts/a/Chart.yaml"),
                "apiVersion: v2\nname: a\nversion: 0.1.0\n",
            );
            write(&format!("{dir}/a.yaml"), "x: 1\n");
        }
        write("hf-drawn/a.yaml.gotmpl", "x: {{ exec \"date\" (list) }}\n");
        write(
            "hf-remote/helmfile.yaml",
            "repositories:\n  - {name: jetstack, url: https://charts.jetstack.io}\nreleases:\n  - {name: a, chart: jetstack/cert-manager}\n",
        );
        write("hf-gotmpl/helmfile.yaml.gotmpl", releases);
        // A values file built to hang or exhaust the host: never read.
        std::os::unix::fs::symlink("/dev/zero", root.join("zero.yaml")).unwrap();
        write(
            "tazuna.yaml",
            "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  manifests:
    - {name: plain, type: helm, path: plain, helm: {valuesFiles: [plain.yaml], values: {y: 1}}}
    - {name: drawn, type: helm, path: drawn}
    - {name: drawn-by-values, type: helm, path: plain, helm: {valuesFiles: [tpl.yaml]}}
    - {name: drawn-inline, type: helm, path: plain, helm: {values: {z: '{{ \"{{\" }} now }}'}}}
    - {name: remote, type: helm, helm: {chart: oci://registry.example/charts/app, version: 1.0.0}}
    - {name: outside, type: helm, path: plain, helm: {valuesFiles: [../elsewhere.yaml]}}
    - {name: device, type: helm, path: plain, helm: {valuesFiles: [zero.yaml]}}
    - {name: helmfile, type: helmfile, path: plain}
    - {name: helmfile-local, type: helmfile, path: hf}
    - {name: helmfile-drawn, type: helmfile, path: hf-drawn}
    - {name: helmfile-remote, type: helmfile, path: hf-remote}
    - {name: helmfile-template, type: helmfile, path: hf-gotmpl}
    - {name: helmfile-env, type: helmfile, path: hf, helmfile: {vars: {v: {from: env, env: V}}}}
    - {name: helmfile-static, type: helmfile, path: hf, helmfile: {vars: {v: {from: static, static: '{{ \"{{\" }} now }}'}}}}
    - {name: objects, type: manifests, path: objects.yaml}
",
        );
        let config = config::load(
            &root.join("tazuna.yaml"),
            &LoadOptions::new(semver::Version::new(1, 0, 0)),
        )
        .unwrap();
        let twice: Vec<&str> = config
            .manifests
            .iter()
            .filter(|m| renders_may_differ(m))
            .map(|m| m.name.as_str())
            .collect();
        assert_eq!(
            twice,
            [
                "drawn",
                "drawn-by-values",
                "drawn-inline",
                "remote",
                "outside",
                "device",
                "helmfile",
                "helmfile-drawn",
                "helmfile-remote",
                "helmfile-template",
                "helmfile-env",
                "helmfile-static"
            ]
        );
    }
}
