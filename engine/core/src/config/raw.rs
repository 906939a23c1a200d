//! The file's shape as serde reads it, before validation.
//!
//! These types mirror `tazuna.yaml` key for key (including Go Tazuna's snake_case
//! `context_matches`) and reject unknown keys. They also describe the file for
//! [`json_schema`](super::json_schema). Manifests and providers are open-ended, since a
//! manifest may carry a block named after a plugin; the loader checks their keys itself and
//! reads only their fixed part through [`RawManifest`] and [`RawProvider`].

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

/// A `tazuna.yaml` file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "tazuna.yaml")]
pub(crate) struct RawRoot {
    /// Optional; when set it must be `tazuna.pepabo.com/v1`.
    #[serde(rename = "apiVersion")]
    pub api_version: Option<String>,
    /// Optional; when set it must be `Tazuna`.
    pub kind: Option<String>,
    /// What to install, in what order, and on which clusters.
    #[schemars(with = "RawSpec")]
    pub spec: Option<RawSpec>,
}

/// The body of the file.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "Spec")]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSpec {
    /// The oldest tazuna that may process this file, as a semantic version (`1.4.0`; a
    /// leading `v` is allowed).
    #[serde(rename = "minimumSupportedTazunaVersion")]
    #[schemars(with = "Option<String>")]
    #[allow(dead_code)] // read from the untyped document first; see `check_minimum_version`
    pub minimum_supported_tazuna_version: Option<serde_yaml::Value>,
    /// Regular expressions (RE2 syntax) matched anywhere in the current kube context name.
    /// When set, commands that change a cluster refuse to run unless the context matches.
    pub context_matches: Option<Vec<String>>,
    /// `or` (default): one pattern must match; `and`: every pattern must match.
    pub context_match_mode: Option<RawMatchMode>,
    /// Named environments, selected with `-e <name>`. A selected environment's
    /// `context_matches` replace the ones above.
    pub environments: Option<BTreeMap<String, RawEnvironment>>,
    /// What to install, in declaration order unless `dependsOn` is used.
    #[schemars(with = "Vec<ManifestSchema>")]
    pub manifests: Option<serde_yaml::Value>,
    /// Checks run after every manifest is applied.
    pub tests: Option<Vec<RawTest>>,
    /// Secret providers that GenesisSecret files refer to by name.
    #[schemars(with = "Option<Vec<ProviderSchema>>")]
    pub providers: Option<Vec<serde_yaml::Value>>,
    /// Third-party source plugins, pinned by source, version constraint and digest.
    pub plugins: Option<Vec<RawPlugin>>,
    /// The cluster this file belongs to, beyond its context name.
    pub cluster: Option<RawCluster>,
    /// The name of this file's stack: what its state in a cluster is recorded
    /// under, so that several files can manage one cluster apart. Default: the
    /// file's place in its git repository (`<repository>/<path>`), or its
    /// directory and name outside one.
    pub stack: Option<String>,
    /// Waves for commands that select several clusters.
    pub rollout: Option<RawRollout>,
    /// Values from infrastructure: OpenTofu or Terraform states whose outputs the template
    /// reads as `.Inputs.<name>.<output>`.
    #[allow(dead_code)] // read from the document before it is rendered; see `inputs_of`
    pub inputs: Option<Vec<RawInput>>,
}

/// One input of `spec.inputs`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[schemars(rename = "Input")]
#[serde(deny_unknown_fields)]
pub(crate) struct RawInput {
    /// The name: `.Inputs.<name>` in the template, `ref+<name>:` for its sensitive outputs.
    pub name: String,
    /// `opentofu-state` (or `terraform-state`, the same format), `configmap`, `secret`, or
    /// `cluster-api`.
    #[serde(rename = "type")]
    pub kind: String,
    /// A state: the file (`terraform.tfstate`), relative to the file that declares the input.
    pub path: Option<String>,
    /// A state: in an S3 bucket, as the configuration's `backend "s3"` keeps it.
    pub s3: Option<RawS3State>,
    /// `type: configmap`: the ConfigMap whose keys are the outputs.
    #[serde(rename = "configMap")]
    pub config_map: Option<RawObjectInput>,
    /// `type: secret`: the Secret whose keys are the outputs, each sensitive.
    pub secret: Option<RawObjectInput>,
}

/// `spec.inputs[].configMap` and `.secret`: an object of a cluster a context reaches.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[schemars(rename = "ObjectInput")]
#[serde(deny_unknown_fields)]
pub(crate) struct RawObjectInput {
    /// The context of the run's kubeconfig that reaches the cluster (the management cluster).
    pub context: String,
    /// The object's namespace.
    pub namespace: String,
    /// The object's name.
    pub name: String,
}

/// `spec.inputs[].s3`: where the `s3` backend keeps a state.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[schemars(rename = "S3State")]
#[serde(deny_unknown_fields)]
pub(crate) struct RawS3State {
    /// The bucket.
    pub bucket: String,
    /// The state's key (`env/prod/terraform.tfstate`; with workspaces, `env:/<workspace>/<key>`).
    pub key: String,
    /// The region; else the AWS chain's (`AWS_REGION`, the profile's).
    pub region: Option<String>,
    /// The profile of the shared AWS files; else `AWS_PROFILE`, else `default`.
    pub profile: Option<String>,
    /// Where S3 answers, when not at AWS (a VPC endpoint, a local stand-in).
    pub endpoint: Option<String>,
}

/// How `context_matches` combine.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[schemars(rename = "ContextMatchMode")]
#[serde(rename_all = "lowercase")]
pub(crate) enum RawMatchMode {
    /// One pattern must match.
    Or,
    /// Every pattern must match.
    And,
}

/// One entry of `spec.environments`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "Environment")]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEnvironment {
    /// Replaces the root `context_matches` when this environment is selected.
    pub context_matches: Option<Vec<String>>,
    /// Replaces the root `context_match_mode`; inherits it when unset.
    pub context_match_mode: Option<RawMatchMode>,
    /// Free-form values handed to every plugin when this environment is selected.
    #[schemars(with = "Option<serde_json::Value>")]
    pub values: Option<serde_yaml::Value>,
    /// Replaces the root `cluster` when this environment is selected.
    pub cluster: Option<RawCluster>,
    /// The kube context of this environment's cluster (default: `--context`,
    /// then the kubeconfig's current context). Not with `clusters`.
    pub context: Option<String>,
    /// The kubeconfig of this environment's cluster, relative to this file
    /// (default: `--kubeconfig`, `$KUBECONFIG`, `~/.kube/config`).
    pub kubeconfig: Option<String>,
    /// Labels of this environment's clusters (such as `region: tokyo`), for
    /// `--selector`, `spec.rollout` and `{{ .Cluster.Labels }}`.
    pub labels: Option<BTreeMap<String, String>>,
    /// Look-alike clusters that share this environment, by name (unique in the
    /// file). Each gets the environment's values, labels and context rules,
    /// with its own on top. Without it, the environment is one cluster named
    /// after it.
    pub clusters: Option<BTreeMap<String, RawClusterEntry>>,
    /// Find this environment's clusters in a Cluster API management cluster:
    /// its Cluster objects (by label selector) and their `<name>-kubeconfig`
    /// Secrets, read when a command runs and held in memory only. Not with
    /// `clusters`, `context` or `kubeconfig`.
    #[serde(rename = "clusterAPI")]
    pub cluster_api: Option<RawClusterApi>,
}

/// `spec.environments.<name>.clusterAPI`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "ClusterApi")]
#[serde(deny_unknown_fields)]
pub(crate) struct RawClusterApi {
    /// The management cluster's kube context (default: the current context).
    pub context: Option<String>,
    /// The management cluster's kubeconfig, relative to this file.
    pub kubeconfig: Option<String>,
    /// Only Clusters in this namespace (default: every namespace).
    pub namespace: Option<String>,
    /// Only Clusters whose labels match, such as `tazuna.io/fleet=web`.
    pub selector: Option<String>,
}

/// One of an environment's `clusters`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "ClusterEntry")]
#[serde(deny_unknown_fields)]
pub(crate) struct RawClusterEntry {
    /// Its kube context (default: `--context`, then the current context).
    pub context: Option<String>,
    /// Its kubeconfig, relative to this file.
    pub kubeconfig: Option<String>,
    /// Labels on top of the environment's.
    pub labels: Option<BTreeMap<String, String>>,
    /// Values merged over the environment's (maps key by key, anything else replaced).
    #[schemars(with = "Option<serde_json::Value>")]
    pub values: Option<serde_yaml::Value>,
    /// Its identity; replaces the environment's `cluster`.
    pub cluster: Option<RawCluster>,
}

/// `spec.rollout`: the order in which a command that selects several
/// clusters runs them.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "Rollout")]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRollout {
    /// Waves, in order. A wave runs after the one before it succeeded on
    /// every cluster. A selected cluster belongs to the first wave that
    /// names it; one that no wave names is an error.
    pub waves: Option<Vec<RawWave>>,
    /// Clusters of one wave run at once (default 4).
    #[serde(rename = "maxParallel")]
    pub max_parallel: Option<usize>,
    /// When a cluster fails: `stop` (default) starts no other cluster;
    /// `finishWave` lets the rest of its wave run, then stops.
    #[serde(rename = "onFailure")]
    pub on_failure: Option<RawOnFailure>,
}

/// One wave of `spec.rollout.waves`. It takes the clusters that any of its
/// fields selects.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "Wave")]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWave {
    /// A name for messages (default `wave <n>`).
    pub name: Option<String>,
    /// Every cluster of these environments.
    pub environments: Option<Vec<String>>,
    /// These clusters, by name.
    pub clusters: Option<Vec<String>>,
    /// Clusters whose labels match, such as `env=production,region!=osaka`.
    pub selector: Option<String>,
}

/// What a failing cluster does to the rest of a rollout.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[schemars(rename = "OnFailure")]
pub(crate) enum RawOnFailure {
    /// Start no other cluster.
    #[serde(rename = "stop")]
    Stop,
    /// Finish the failing cluster's wave, then stop.
    #[serde(rename = "finishWave")]
    FinishWave,
}

/// The identity of the cluster a file (or environment) is bound to.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "Cluster")]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCluster {
    /// The UID of the cluster's `kube-system` namespace. Commands refuse to touch a cluster
    /// with another UID, whatever its context is called.
    pub uid: Option<String>,
}

/// A pinned third-party plugin.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "Plugin")]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPlugin {
    /// The name manifests use as their `type`, and the key of their config block.
    pub name: String,
    /// `oci://host/repo` or `file://./plugin.wasm` (relative to this file's directory).
    pub source: String,
    /// A semver constraint such as `^1.2`.
    pub version: Option<String>,
    /// The expected component digest, `sha256:<64 hex digits>`.
    pub digest: Option<String>,
    /// Capabilities granted to the plugin, such as `exec:helm`.
    pub grants: Option<Vec<String>>,
}

/// The fixed fields of a manifest entry; per-type blocks are taken out before serde sees it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawManifest {
    /// Unique name, `^[a-zA-Z0-9_-]+$`; `_metadata` is reserved.
    pub name: Option<String>,
    /// A note for humans.
    pub description: Option<String>,
    /// The source plugin: `manifests`, `kustomize`, `helm`, `helmfile`, `genesissecret`,
    /// `oras`, or the name of a plugin in `spec.plugins`. Go Tazuna's `parallel` is read too.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Relative to the directory of the file that declares the manifest.
    pub path: Option<String>,
    /// Labels for `--tags` selection (a manifest is selected if it has any of the tags).
    pub tags: Option<Vec<String>>,
    /// Names of manifests that must be applied (and ready) before this one.
    #[serde(rename = "dependsOn")]
    pub depends_on: Option<Vec<String>>,
    /// Checks run right after this manifest is applied.
    pub tests: Option<Vec<RawTest>>,
    /// Other tazuna.yaml files whose manifests replace this entry, in order.
    pub includes: Option<Vec<RawInclude>>,
    /// Default namespace for namespaced objects that have none.
    pub namespace: Option<String>,
    /// Wait for readiness after applying: `true`, `false`, or `{enabled, timeoutSeconds}`.
    #[schemars(with = "Option<WaitSchema>")]
    pub wait: Option<serde_yaml::Value>,
    /// Delete objects that were applied before but are no longer rendered.
    pub prune: Option<bool>,
    /// Create `namespace` when it does not exist, as `helm install
    /// --create-namespace` does (for every type); it is not deleted with the
    /// manifest.
    #[serde(rename = "createNamespace")]
    pub create_namespace: Option<bool>,
    /// Existing objects this manifest may take over although content it did
    /// not write renders them (a third-party plugin, a chart or artifact from
    /// a registry, a helm hook): `<Kind>/<name>` for a cluster-scoped object,
    /// `<Kind>/<namespace>/<name>` for a namespaced one.
    pub adopt: Option<Vec<String>>,
    /// A GitOps controller takes this manifest's objects over after the
    /// first successful apply: Tazuna then only creates them when missing,
    /// `plan` and `state drift` leave them out, and prune and destroy leave
    /// them in place.
    pub handover: Option<RawGitOpsHandover>,
}

/// `manifests[].handover`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "GitOpsHandover")]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGitOpsHandover {
    /// The controller that takes over: `flux` or `argocd`.
    pub to: crate::policy::Controller,
    /// `ready` (default): once the objects are ready; `applied`: once they
    /// are sent, without waiting for them.
    pub after: Option<RawAfter>,
    /// The objects handed over, as `<Kind>/<name>` or
    /// `<Kind>/<namespace>/<name>`; every object of the manifest if absent.
    pub objects: Option<Vec<String>>,
}

/// `handover.after`.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum RawAfter {
    /// Once sent.
    Applied,
    /// Once ready.
    Ready,
}

/// The keys of [`RawManifest`], for the loader's own key check.
pub(crate) const MANIFEST_FIELDS: &[&str] = &[
    "name",
    "description",
    "type",
    "path",
    "tags",
    "dependsOn",
    "tests",
    "includes",
    "namespace",
    "wait",
    "prune",
    "createNamespace",
    "adopt",
    "handover",
];

/// Per-type blocks that need no plugin declaration: the built-ins and Go's `parallel`.
pub(crate) const BUILTIN_BLOCKS: &[&str] = &[
    "manifests",
    "kustomize",
    "helm",
    "helmfile",
    "genesisSecret",
    "oras",
    "parallel",
];

/// `manifests[].includes[]`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "Include")]
#[serde(deny_unknown_fields)]
pub(crate) struct RawInclude {
    /// Another tazuna.yaml, relative to the directory of this file.
    pub path: String,
}

/// The map form of `wait`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "WaitOptions")]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWait {
    /// Whether to wait at all (default `true`).
    pub enabled: Option<bool>,
    /// How long to wait for readiness (default 300).
    #[serde(rename = "timeoutSeconds")]
    pub timeout_seconds: Option<u64>,
    /// Whether `LoadBalancer` Services must get an address (default `false`,
    /// as helm's `--wait`).
    #[serde(rename = "loadBalancers")]
    pub load_balancers: Option<bool>,
}

/// `wait: true`, `wait: false` or `wait: {enabled, timeoutSeconds, loadBalancers}`.
#[derive(JsonSchema)]
#[schemars(rename = "Wait")]
#[serde(untagged)]
#[allow(dead_code)] // only describes the schema
pub(crate) enum WaitSchema {
    /// On (with the default timeout) or off.
    Switch(bool),
    /// On or off with a timeout.
    Detailed(RawWait),
}

/// A check run after a manifest (or after all manifests).
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "Test")]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTest {
    /// `WaitUntil` or `ExistNonExist`.
    #[serde(rename = "type")]
    pub kind: RawTestType,
    /// Pass after this many consecutive successes (default 1).
    #[serde(rename = "minConsecutiveSuccessCount")]
    pub min_consecutive_success_count: Option<u32>,
    /// Fail after this many consecutive failures (0 or unset: only the timeout fails).
    #[serde(rename = "minConsecutiveFailureCount")]
    pub min_consecutive_failure_count: Option<u32>,
    /// Give up after this many seconds (0 or unset: no limit).
    #[serde(rename = "timeoutSeconds")]
    pub timeout_seconds: Option<u64>,
    /// Pause between attempts (default 0).
    #[serde(rename = "intervalSeconds")]
    pub interval_seconds: Option<u64>,
    /// Arguments of a `WaitUntil` test.
    #[serde(rename = "waitUntil")]
    pub wait_until: Option<RawWaitUntil>,
    /// Arguments of an `ExistNonExist` test.
    #[serde(rename = "existNonExist")]
    pub exist_non_exist: Option<RawExistNonExist>,
}

/// The kinds of test.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[schemars(rename = "TestType")]
pub(crate) enum RawTestType {
    /// Poll an object until a CEL condition over `object` holds.
    WaitUntil,
    /// Assert that an object exists, or that it does not.
    ExistNonExist,
}

/// The type of a Kubernetes object.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "Resource")]
#[serde(deny_unknown_fields)]
pub(crate) struct RawResource {
    /// Such as `apps/v1`.
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    /// Such as `Deployment`.
    pub kind: String,
}

/// `waitUntil`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "WaitUntil")]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWaitUntil {
    /// The object's type.
    pub resource: RawResource,
    /// The object's namespace (empty or unset for cluster-scoped objects).
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
    /// A CEL expression over `object` that must evaluate to `true`.
    pub condition: String,
}

/// `existNonExist`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "ExistNonExist")]
#[serde(deny_unknown_fields)]
pub(crate) struct RawExistNonExist {
    /// The object's type.
    pub resource: RawResource,
    /// The object's namespace (empty or unset for cluster-scoped objects).
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
    /// `true`: the object must exist; `false`: it must not.
    #[serde(rename = "shouldExist")]
    pub should_exist: bool,
}

/// The fixed fields of a secret provider; its config block is taken out first.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawProvider {
    /// The name GenesisSecret files and `ref+<name>:` references use; `default-op` and `env`
    /// are reserved.
    pub name: String,
    /// `onepassword`, `envfile`, `aws-secrets-manager`, `vault`, `sops`, `kubernetes`, or the
    /// name of a secret-resolver plugin.
    #[serde(rename = "type")]
    pub kind: String,
    /// Hand the provider's sync to External Secrets Operator: its Secrets are applied as
    /// `ExternalSecret` objects against the store named here (`aws-secrets-manager` and
    /// `vault` providers).
    pub handover: Option<RawHandover>,
}

/// `providers[].handover`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[schemars(rename = "Handover")]
#[serde(deny_unknown_fields)]
pub(crate) struct RawHandover {
    /// External Secrets Operator takes the sync over.
    #[serde(rename = "externalSecrets")]
    pub external_secrets: RawExternalSecrets,
}

/// `providers[].handover.externalSecrets`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[schemars(rename = "ExternalSecretsHandover")]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct RawExternalSecrets {
    /// The store the file declares: `{kind: ClusterSecretStore|SecretStore, name: <name>}`.
    pub store: RawStoreRef,
    /// How often ESO reads the store again; `1h` by default.
    pub refresh_interval: Option<String>,
}

/// A `SecretStore` or `ClusterSecretStore`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[schemars(rename = "StoreRef")]
#[serde(deny_unknown_fields)]
pub(crate) struct RawStoreRef {
    /// `ClusterSecretStore` or `SecretStore`.
    pub kind: String,
    /// Its name.
    pub name: String,
}

/// Built-in provider config blocks.
pub(crate) const PROVIDER_BLOCKS: &[&str] = &[
    "onepassword",
    "envfile",
    "aws-secrets-manager",
    "vault",
    "sops",
    "kubernetes",
];

/// A manifest entry as editors see it: fixed fields plus per-type blocks. Blocks named after
/// a plugin in `spec.plugins` are allowed too.
#[derive(JsonSchema)]
#[schemars(rename = "Manifest")]
#[schemars(extend("additionalProperties" = {"type": ["object", "null"]}))]
#[allow(dead_code)] // only describes the schema
pub(crate) struct ManifestSchema {
    #[serde(flatten)]
    fixed: RawManifest,
    /// Config of the built-in `manifests` plugin (plain YAML/JSON files at `path`).
    manifests: Option<serde_json::Map<String, serde_json::Value>>,
    /// Config of the built-in `kustomize` plugin, such as `defaultNamespace`.
    kustomize: Option<serde_json::Map<String, serde_json::Value>>,
    /// Config of the built-in `helm` plugin.
    helm: Option<serde_json::Map<String, serde_json::Value>>,
    /// Config of the built-in `helmfile` plugin, such as `vars`, `includeCRDs`,
    /// `extraValueFiles`, `kubeVersion`.
    helmfile: Option<serde_json::Map<String, serde_json::Value>>,
    /// Config of the built-in `genesissecret` plugin.
    #[serde(rename = "genesisSecret")]
    genesis_secret: Option<serde_json::Map<String, serde_json::Value>>,
    /// Config of the built-in `oras` plugin: `reference`, `target`, `delegate`.
    oras: Option<serde_json::Map<String, serde_json::Value>>,
    /// Go Tazuna's `parallel` type: `children` are read as manifests of their own.
    parallel: Option<ParallelSchema>,
}

/// Go Tazuna's `parallel` block.
#[derive(JsonSchema)]
#[schemars(rename = "Parallel")]
#[allow(dead_code)] // only describes the schema
pub(crate) struct ParallelSchema {
    /// Manifests that share the parent's position and `dependsOn`.
    children: Vec<ManifestSchema>,
}

/// A secret provider as editors see it.
#[derive(JsonSchema)]
#[schemars(rename = "Provider")]
#[schemars(extend("additionalProperties" = {"type": ["object", "null"]}))]
#[allow(dead_code)] // only describes the schema
pub(crate) struct ProviderSchema {
    #[serde(flatten)]
    fixed: RawProvider,
    /// Config of a `type: onepassword` provider (currently empty).
    onepassword: Option<serde_json::Map<String, serde_json::Value>>,
    /// Config of a `type: envfile` provider.
    envfile: Option<EnvFileSchema>,
    /// Config of a `type: aws-secrets-manager` provider: `region`, `profile`, `endpoint`.
    #[serde(rename = "aws-secrets-manager")]
    aws_secrets_manager: Option<serde_json::Map<String, serde_json::Value>>,
    /// Config of a `type: vault` provider: `address`, `namespace`, `caFile`, `auth`.
    vault: Option<serde_json::Map<String, serde_json::Value>>,
    /// Config of a `type: sops` provider (currently empty).
    sops: Option<serde_json::Map<String, serde_json::Value>>,
    /// Config of a `type: kubernetes` provider: `context`, `namespace`.
    kubernetes: Option<serde_json::Map<String, serde_json::Value>>,
}

/// `providers[].envfile`.
#[derive(JsonSchema)]
#[schemars(rename = "EnvFile")]
#[allow(dead_code)] // only describes the schema
pub(crate) struct EnvFileSchema {
    /// A dotenv file, relative to the directory of this file.
    path: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blocks that need no plugin are the built-in types (the plugin
    /// host's registry, which checks `BUILTIN_TYPES` against itself), as
    /// the file spells them, and Go's `parallel`.
    #[test]
    fn the_built_in_blocks_are_the_built_in_types() {
        let mut blocks: Vec<String> = BUILTIN_BLOCKS
            .iter()
            .filter(|b| **b != "parallel")
            .map(|b| b.to_ascii_lowercase())
            .collect();
        blocks.sort_unstable();
        let mut types = crate::config::BUILTIN_TYPES.to_vec();
        types.sort_unstable();
        assert_eq!(blocks, types);
    }
}
