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
//!
//! This module holds the types a run is made of and opening and connecting
//! a stack; each verb is a room of its own: `render` (plugins and renders),
//! `records` (state, the checks before any write, `status`, `forget`,
//! `sync_state`), `apply` (and `test`), `plan`, `teardown` (`destroy`),
//! `lockfile` and `identity` (the stack's name and repository).

mod apply;
mod identity;
mod lockfile;
mod management;
mod plan;
mod records;
mod render;
mod teardown;

use lockfile::LockFile;
use teardown::teardown_settings;

pub use identity::{derived_name, git_commit, repository_identity};
pub use management::RemoteInputs;

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use std::sync::Arc;

use std::time::Duration;

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

use crate::plan::{Intent, PlanError, Question, Report};

use crate::plugins::{self, PluginLoadError, PluginSet, Role};

use crate::render::{RenderError, RenderSettings, Rendered};

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
    /// `--lock-file`: where `tazuna.lock` is kept instead of beside the file.
    pub lock_file: Option<PathBuf>,
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
        self.hints().into_iter().next()
    }

    fn hints(&self) -> Vec<String> {
        match self {
            Self::Cluster(error) => error.hints(),
            Self::Guard(error) => error.hints(),
            Self::State(error) => error.hints(),
            Self::Ownership(errors) => {
                let mut hints: Vec<String> = errors.iter().flat_map(Hint::hints).collect();
                hints.dedup();
                hints
            }
            Self::Plan(error) => error.hints(),
            Self::MissingNamespaces(missing) => missing.iter().flat_map(Hint::hints).collect(),
            Self::NotInState(_, hint) => vec![hint.clone()],
            Self::Plugins(error) => error.hints(),
            _ => Vec::new(),
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
    /// Which objects are sent (`--sync`, `--resend`).
    pub sends: tazuna_kube::apply::Sends,
    /// Undo the run when a manifest fails (`--atomic`).
    pub atomic: bool,
    /// Handed-over objects prune may delete (`--delete-handed-over`).
    pub delete_handed_over: Vec<String>,
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
            sends: tazuna_kube::apply::Sends::Changed,
            atomic: false,
            delete_handed_over: Vec::new(),
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
        let lock = LockFile::of(&options, writes);
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

    /// Run `work` holding the cluster's Lease (waiting up to `timeout` for
    /// it), say so when it was taken over from a run that died, and release
    /// it whatever the outcome: the one way a stack takes the Lease.
    async fn leased<T>(
        &self,
        connection: &Connection,
        timeout: Duration,
        work: impl std::future::Future<Output = Result<T, RunError>>,
    ) -> Result<T, RunError> {
        let guard = connection.store.lock(&holder_identity(), timeout).await?;
        if let Some(from) = guard.taken_over() {
            self.notice(&format!("took over the lock on this cluster from {from}"));
        }
        let result = work.await;
        guard.release().await;
        result
    }

    /// The walk over this stack's `states` on `connection`, applying as the
    /// stack's field manager: the one place a [`Run`] is made.
    fn run<'a>(
        &'a self,
        connection: &'a Connection,
        states: &'a BTreeMap<String, Stored>,
        ownership: &'a Ownership,
        hash_key: &'a [u8],
        settings: &'a ApplySettings,
        observer: &'a dyn Observer,
    ) -> Run<'a> {
        Run {
            cluster: &connection.cluster,
            store: &connection.store,
            states,
            stack: self.name(),
            manager: FieldManager::of(self.name()),
            ownership,
            hash_key,
            settings,
            observer,
            journal: Default::default(),
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
}

/// A run's counts on its span, and its status: `ok` when every manifest
/// applied.
fn run_status(
    span: &tracing::Span,
    outcome: Result<&[ManifestOutcome], &RunError>,
) -> Result<(), String> {
    let outcomes = outcome.map_err(ToString::to_string)?;
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
    match failed {
        0 => Ok(()),
        n => Err(format!("{n} of {} manifests did not apply", outcomes.len())),
    }
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
