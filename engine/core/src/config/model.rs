//! The validated, typed model of a `tazuna.yaml`: what the rest of Tazuna works with.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use crate::readiness::LoadBalancers;

use super::error::Location;

/// `spec`, validated. Manifests live in [`Config::manifests`](super::Config::manifests),
/// expanded; everything else that `spec` says is here.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// The oldest tazuna that may process this file (already checked by the loader).
    pub minimum_supported_tazuna_version: Option<semver::Version>,
    /// The root `context_matches`, each a valid regular expression.
    pub context_matches: Vec<String>,
    /// The root `context_match_mode` (`or` when unset).
    pub context_match_mode: MatchMode,
    /// `spec.environments`, by name.
    pub environments: BTreeMap<String, Environment>,
    /// `spec.tests`: checks run after every manifest is applied.
    pub tests: Vec<Test>,
    /// `spec.providers`: secret providers for GenesisSecret files.
    pub providers: Vec<Provider>,
    /// `spec.plugins`: pinned third-party plugins.
    pub plugins: Vec<Plugin>,
    /// `spec.cluster`: the cluster identity the file is bound to.
    pub cluster: Option<Cluster>,
    /// `spec.stack`: the name this file's state is recorded under, when set.
    pub stack: Option<String>,
    /// `spec.rollout`: how a command that selects several clusters runs them.
    pub rollout: Rollout,
    /// `spec.inputs`: the states read, with the outputs the file uses.
    pub inputs: Vec<crate::inputs::Input>,
}

/// `spec.rollout`, with its defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct Rollout {
    /// The waves in order; empty means one wave of every selected cluster.
    pub waves: Vec<Wave>,
    /// Clusters of a wave run at once.
    pub max_parallel: usize,
    /// What a failing cluster does to the rest.
    pub on_failure: OnFailure,
}

impl Default for Rollout {
    fn default() -> Self {
        Self {
            waves: Vec::new(),
            max_parallel: Self::DEFAULT_MAX_PARALLEL,
            on_failure: OnFailure::Stop,
        }
    }
}

impl Rollout {
    /// Clusters of a wave run at once when `maxParallel` is not set.
    pub const DEFAULT_MAX_PARALLEL: usize = 4;
}

/// One wave of `spec.rollout.waves`: the clusters any of its fields selects.
#[derive(Clone, Debug, PartialEq)]
pub struct Wave {
    /// `name`, or `wave <n>`.
    pub name: String,
    /// Every cluster of these environments.
    pub environments: Vec<String>,
    /// These clusters.
    pub clusters: Vec<String>,
    /// Clusters whose labels match.
    pub selector: Option<crate::selector::Selector>,
}

impl Wave {
    /// Whether `target` belongs to this wave.
    pub fn takes(&self, target: &Target) -> bool {
        self.environments.contains(&target.environment)
            || self.clusters.contains(&target.name)
            || self
                .selector
                .as_ref()
                .is_some_and(|s| s.matches(&target.labels))
    }
}

/// What a failing cluster does to the rest of a rollout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnFailure {
    /// Start no other cluster; those running finish.
    #[default]
    Stop,
    /// Run the rest of the failing cluster's wave, then stop.
    FinishWave,
}

/// One cluster the file runs against: an environment's own, or one of its
/// `clusters`. Its name is unique in the file and keys its binding in
/// `tazuna.lock`.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// The cluster's name (the environment's for its own cluster).
    pub name: String,
    /// The environment it belongs to.
    pub environment: String,
    /// The kube context to use, when the file names one.
    pub context: Option<String>,
    /// The kubeconfig to use, resolved against the file's directory.
    pub kubeconfig: Option<PathBuf>,
    /// The environment's labels with the cluster's on top.
    pub labels: BTreeMap<String, String>,
    /// The environment's values with the cluster's merged over them.
    pub values: serde_json::Value,
    /// The identity it is bound to: its own, else the environment's.
    pub identity: Option<Cluster>,
    /// For a cluster found through Cluster API: its `Cluster` object's own
    /// fields (`name`, `namespace`, `labels`, `annotations`,
    /// `clusterNetwork`), for an input of `type: cluster-api`.
    pub cluster_api: Option<serde_json::Value>,
}

/// How the patterns of `context_matches` combine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MatchMode {
    /// One pattern must match (the default).
    #[default]
    Or,
    /// Every pattern must match.
    And,
}

/// One entry of `spec.environments`, selected with `-e <name>`.
#[derive(Clone, Debug, PartialEq)]
pub struct Environment {
    /// The environment's name (its key in `spec.environments`).
    pub name: String,
    /// Replaces the root `context_matches` when set (Go Tazuna: replace, never merge).
    pub context_matches: Vec<String>,
    /// Replaces the root `context_match_mode` when set.
    pub context_match_mode: Option<MatchMode>,
    /// Free-form values handed to plugins; `{}` when the file has none.
    pub values: serde_json::Value,
    /// Labels of its clusters (each cluster may add its own).
    pub labels: BTreeMap<String, String>,
    /// Replaces the root `spec.cluster` when set.
    pub cluster: Option<Cluster>,
    /// Its clusters: the environment's own, or its `clusters`; empty for a
    /// Cluster API environment, whose clusters are found when a command runs.
    pub clusters: Vec<Target>,
    /// Where its clusters are found, for a Cluster API environment.
    pub cluster_api: Option<ClusterApi>,
}

/// `clusterAPI`: an environment's clusters are the Cluster objects of a
/// management cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterApi {
    /// The management cluster's kube context, when given.
    pub context: Option<String>,
    /// Its kubeconfig, resolved against the file's directory, when given.
    pub kubeconfig: Option<PathBuf>,
    /// Only Clusters in this namespace.
    pub namespace: Option<String>,
    /// Only Clusters whose labels match.
    pub selector: Option<crate::selector::Selector>,
}

/// The identity of the cluster a file (or environment) is bound to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cluster {
    /// The UID of the cluster's `kube-system` namespace.
    pub uid: Option<String>,
}

/// The context check in force: root settings, or the selected environment's.
///
/// Matching is partial, like Go's `regexp.MatchString`: `staging` matches
/// `gke_staging-tokyo`. Anchor a pattern with `^…$` to match the whole name.
#[derive(Clone, Debug)]
pub struct ContextRule {
    /// The compiled patterns; empty means any context is accepted.
    pub patterns: Vec<regex::Regex>,
    /// How the patterns combine.
    pub mode: MatchMode,
}

impl ContextRule {
    /// Whether `context` satisfies the rule. With no patterns, every context does.
    pub fn matches(&self, context: &str) -> bool {
        if self.patterns.is_empty() {
            return true;
        }
        match self.mode {
            MatchMode::Or => self.patterns.iter().any(|p| p.is_match(context)),
            MatchMode::And => self.patterns.iter().all(|p| p.is_match(context)),
        }
    }
}

/// A secret provider from `spec.providers`.
#[derive(Clone, Debug, PartialEq)]
pub struct Provider {
    /// The name GenesisSecret files refer to.
    pub name: String,
    /// Its `type`: `onepassword`, `envfile`, or a secret-resolver plugin's name.
    pub kind: String,
    /// The block named after its type, `{}` when absent.
    pub config: serde_json::Value,
    /// Where the provider is declared.
    pub origin: Location,
    /// When its sync is handed to External Secrets Operator.
    pub handover: Option<crate::handover::Handover>,
}

/// A pinned third-party plugin from `spec.plugins`.
#[derive(Clone, Debug, PartialEq)]
pub struct Plugin {
    /// The name manifests use as their `type`.
    pub name: String,
    /// Where the component comes from.
    pub source: PluginSource,
    /// The semver constraint on its version, when given.
    pub version: Option<semver::VersionReq>,
    /// The expected digest, `sha256:<64 hex>`, when given.
    pub digest: Option<String>,
    /// Capabilities the user grants it.
    pub grants: Vec<String>,
    /// Where the plugin is declared.
    pub origin: Location,
}

/// Where a plugin's component comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PluginSource {
    /// An OCI artifact; `reference` is the part after `oci://` (`host/repo[:tag][@digest]`).
    Oci {
        /// `host/repo[:tag][@digest]`.
        reference: String,
    },
    /// A local component file, resolved against the directory of the declaring file.
    File {
        /// The resolved path.
        path: PathBuf,
    },
}

/// One unit that Tazuna renders and applies, after includes and `parallel` are expanded.
#[derive(Clone, Debug, PartialEq)]
pub struct Manifest {
    /// Unique name.
    pub name: String,
    /// A note for humans.
    pub description: Option<String>,
    /// The source plugin (`type`).
    pub kind: String,
    /// `path` as written, relative to [`base_dir`](Self::base_dir).
    pub path: Option<String>,
    /// Tags for `--tags` selection.
    pub tags: Vec<String>,
    /// Names of manifests to apply first.
    pub depends_on: Vec<String>,
    /// Default namespace for namespaced objects that have none.
    pub namespace: Option<String>,
    /// Whether (and how long) to wait for readiness after applying.
    pub wait: Wait,
    /// Whether to delete objects that were applied before but are no longer rendered.
    pub prune: bool,
    /// Whether to create [`namespace`](Self::namespace) when it does not exist
    /// (helm's `--create-namespace`); it is not recorded as the manifest's.
    pub create_namespace: bool,
    /// Existing objects the manifest may take over although content the
    /// user did not write renders them (`adopt:`), as `<Kind>/<name>` or
    /// `<Kind>/<namespace>/<name>`; see [`Manifest::may_adopt`].
    pub adopt: Vec<String>,
    /// The GitOps controller that takes its objects over (`handover:`).
    pub handover: Option<crate::policy::Handover>,
    /// Checks run right after this manifest is applied.
    pub tests: Vec<Test>,
    /// The `type: parallel` entry this manifest is a child of. Without any
    /// `dependsOn` (declaration order), a parent's children are applied
    /// together, as in Go Tazuna.
    pub parallel: Option<String>,
    /// The block named after the type (`genesisSecret` for `genesissecret`), `{}` if absent.
    pub config: serde_json::Value,
    /// The directory of the file that declares the manifest.
    pub base_dir: PathBuf,
    /// Where the manifest is declared.
    pub origin: Location,
}

impl Manifest {
    /// Whether `adopt:` names the object of `kind`, `namespace` and `name`.
    pub fn may_adopt(&self, kind: &str, namespace: Option<&str>, name: &str) -> bool {
        let wanted = match namespace {
            Some(namespace) => format!("{kind}/{namespace}/{name}"),
            None => format!("{kind}/{name}"),
        };
        self.adopt.contains(&wanted)
    }

    /// `path` resolved against the declaring file's directory.
    pub fn resolved_path(&self) -> Option<PathBuf> {
        self.path
            .as_ref()
            .map(|path| super::source::join_clean(&self.base_dir, Path::new(path)))
    }
}

/// Readiness waiting after a manifest is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Do not wait.
    Off,
    /// Wait for readiness, at most `timeout`.
    On {
        /// How long to wait before failing the manifest.
        timeout: Duration,
        /// Whether `LoadBalancer` Services must have an address
        /// (`loadBalancers: true`); by default, as in helm, they need not.
        load_balancers: LoadBalancers,
    },
}

impl Wait {
    /// The timeout when `wait` does not give one: 300 s, as in Go Tazuna's helmfile wait.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

    /// How long work the manifest always waits for (its helm hooks) may
    /// take: its timeout, or the default when waiting is off.
    pub fn timeout(self) -> Duration {
        match self {
            Self::On { timeout, .. } => timeout,
            Self::Off => Self::DEFAULT_TIMEOUT,
        }
    }
}

impl Default for Wait {
    fn default() -> Self {
        Self::On {
            timeout: Self::DEFAULT_TIMEOUT,
            load_balancers: LoadBalancers::Ignored,
        }
    }
}

/// A check from `tests`.
#[derive(Clone, Debug, PartialEq)]
pub struct Test {
    /// What to check.
    pub check: Check,
    /// Pass after this many consecutive successes (at least 1; Go turns 0 into 1).
    pub min_consecutive_success_count: u32,
    /// Fail after this many consecutive failures; `None` when only the timeout fails it.
    pub min_consecutive_failure_count: Option<u32>,
    /// Give up after this long; `None` for no limit (Go's 0).
    pub timeout: Option<Duration>,
    /// Pause between attempts.
    pub interval: Duration,
    /// Where the test is declared.
    pub origin: Location,
}

impl Test {
    /// A fresh streak for its `minConsecutiveSuccessCount` and
    /// `minConsecutiveFailureCount`.
    pub fn streak(&self) -> crate::check::Streak {
        crate::check::Streak::with_counts(
            self.min_consecutive_success_count,
            self.min_consecutive_failure_count,
        )
    }
}

/// The kinds of check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// Poll an object until a CEL condition over `object` holds.
    WaitUntil(WaitUntil),
    /// Assert that an object exists, or that it does not.
    ExistNonExist(ExistNonExist),
}

/// The type of a Kubernetes object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceType {
    /// Such as `apps/v1`.
    pub api_version: String,
    /// Such as `Deployment`.
    pub kind: String,
}

/// Arguments of a `WaitUntil` test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitUntil {
    /// The object's type.
    pub resource: ResourceType,
    /// The object's namespace; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
    /// A CEL expression over `object`. The loader checks that it compiles;
    /// [`crate::check::Condition`] compiles it again to evaluate it.
    pub condition: String,
}

/// Arguments of an `ExistNonExist` test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExistNonExist {
    /// The object's type.
    pub resource: ResourceType,
    /// The object's namespace; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
    /// `true`: the object must exist; `false`: it must not.
    pub should_exist: bool,
}

impl crate::graph::Node for Manifest {
    fn name(&self) -> &str {
        &self.name
    }

    fn depends_on(&self) -> &[String] {
        &self.depends_on
    }

    fn parallel(&self) -> Option<&str> {
        self.parallel.as_deref()
    }
}
