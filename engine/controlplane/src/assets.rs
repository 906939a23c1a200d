//! Where the pinned test binaries live: the control plane (etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler, kwok), kubectl, and the tools the source
//! plugins call (helm, kustomize, helmfile, oras).
//!
//! Like envtest's `KUBEBUILDER_ASSETS`, `TAZUNA_ASSETS` may name one directory that
//! holds every binary (and kwok's stage files in `stages/`). Otherwise the binaries are
//! read from the cache that `tests/controlplane/install.sh` fills, one directory per
//! pin: `~/.cache/tazuna-dev/bin/<pin>-<version>/` (the cache root can be moved with
//! `TAZUNA_DEV_CACHE`). The versions come from `tests/controlplane/versions.env`, the
//! same file install.sh reads, so a bumped pin is never mistaken for a cached one.

use std::env;
use std::fmt;
use std::path::{Path, PathBuf};

/// The pinned versions file, shared with install.sh.
const VERSIONS_ENV: &str = include_str!("../../../tests/controlplane/versions.env");

/// Env var naming one directory that holds every binary.
pub const ASSETS_ENV: &str = "TAZUNA_ASSETS";
/// Env var that moves the cache root (default `~/.cache/tazuna-dev`).
pub const CACHE_ENV: &str = "TAZUNA_DEV_CACHE";
/// Env var that picks the kubectl binary the harness and tests run.
pub const KUBECTL_ENV: &str = "TAZUNA_KUBECTL";

/// A binary the tests need.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tool {
    /// `etcd`, built from go.etcd.io/etcd/server/v3.
    Etcd,
    /// `kube-apiserver` from k8s.io/kubernetes.
    KubeApiserver,
    /// `kube-controller-manager` from k8s.io/kubernetes.
    KubeControllerManager,
    /// `kube-scheduler` from k8s.io/kubernetes.
    KubeScheduler,
    /// `kubectl` from k8s.io/kubernetes, the same version as the server.
    Kubectl,
    /// `kwok`, which plays kubelet for fake nodes.
    Kwok,
    /// `helm` (v4).
    Helm,
    /// `kustomize` (v5).
    Kustomize,
    /// `helmfile`.
    Helmfile,
    /// `oras`.
    Oras,
    /// An OpenTelemetry Collector (OTLP receiver, otlphttp and debug
    /// exporters), for the trace tests.
    Otelcol,
    /// OpenTofu's `tofu`, which writes the states of the input tests.
    Tofu,
    /// `age`, which encrypts for the sops tests' keys.
    Age,
    /// `age-keygen`, which makes those keys.
    AgeKeygen,
    /// `sops`, which encrypts the files the `sops` resolver reads.
    Sops,
    /// `vault`, run as `vault server -dev` for the `vault` resolver's tests.
    Vault,
    /// External Secrets Operator's controller (`external-secrets`), run as a
    /// process for the hand-over tests; its CRDs sit in `crds/` beside it.
    ExternalSecrets,
    /// Flux's source-controller, run as a process for the GitOps hand-over
    /// tests and the benchmark; its CRDs sit in `crds/` beside it.
    FluxSourceController,
    /// Flux's kustomize-controller, likewise.
    FluxKustomizeController,
    /// Flux's helm-controller, likewise.
    FluxHelmController,
}

impl Tool {
    /// The processes of one harness cluster.
    pub const CONTROL_PLANE: [Tool; 5] = [
        Tool::Etcd,
        Tool::KubeApiserver,
        Tool::KubeControllerManager,
        Tool::KubeScheduler,
        Tool::Kwok,
    ];

    /// The tools the source plugins call.
    pub const PLUGIN_TOOLS: [Tool; 4] = [Tool::Helm, Tool::Kustomize, Tool::Helmfile, Tool::Oras];

    /// The file name of the binary.
    pub fn binary_name(self) -> &'static str {
        match self {
            Tool::Etcd => "etcd",
            Tool::KubeApiserver => "kube-apiserver",
            Tool::KubeControllerManager => "kube-controller-manager",
            Tool::KubeScheduler => "kube-scheduler",
            Tool::Kubectl => "kubectl",
            Tool::Kwok => "kwok",
            Tool::Helm => "helm",
            Tool::Kustomize => "kustomize",
            Tool::Helmfile => "helmfile",
            Tool::Oras => "oras",
            Tool::Otelcol => "otelcol",
            Tool::Tofu => "tofu",
            Tool::Age => "age",
            Tool::AgeKeygen => "age-keygen",
            Tool::Sops => "sops",
            Tool::Vault => "vault",
            Tool::ExternalSecrets => "external-secrets",
            Tool::FluxSourceController => "source-controller",
            Tool::FluxKustomizeController => "kustomize-controller",
            Tool::FluxHelmController => "helm-controller",
        }
    }

    /// The cache directory prefix and the versions.env key of the pin this binary comes from.
    fn pin(self) -> (&'static str, &'static str) {
        match self {
            Tool::KubeApiserver | Tool::KubeControllerManager | Tool::KubeScheduler => {
                ("kubernetes", "KUBERNETES_VERSION")
            }
            // A pin directory of its own: the quickstart may reuse a compatible
            // kubectl on PATH instead of building it.
            Tool::Kubectl => ("kubectl", "KUBERNETES_VERSION"),
            Tool::Etcd => ("etcd", "ETCD_VERSION"),
            Tool::Kwok => ("kwok", "KWOK_VERSION"),
            Tool::Helm => ("helm", "HELM_VERSION"),
            Tool::Kustomize => ("kustomize", "KUSTOMIZE_VERSION"),
            Tool::Helmfile => ("helmfile", "HELMFILE_VERSION"),
            Tool::Oras => ("oras", "ORAS_VERSION"),
            Tool::Otelcol => ("otelcol", "OTELCOL_VERSION"),
            Tool::Tofu => ("opentofu", "OPENTOFU_VERSION"),
            Tool::Age | Tool::AgeKeygen => ("age", "AGE_VERSION"),
            Tool::Sops => ("sops", "SOPS_VERSION"),
            Tool::Vault => ("vault", "VAULT_VERSION"),
            Tool::ExternalSecrets => ("external-secrets", "EXTERNAL_SECRETS_VERSION"),
            Tool::FluxSourceController => {
                ("flux-source-controller", "FLUX_SOURCE_CONTROLLER_VERSION")
            }
            Tool::FluxKustomizeController => (
                "flux-kustomize-controller",
                "FLUX_KUSTOMIZE_CONTROLLER_VERSION",
            ),
            Tool::FluxHelmController => ("flux-helm-controller", "FLUX_HELM_CONTROLLER_VERSION"),
        }
    }

    /// The pinned version, as written in versions.env (`v1.37.2`).
    pub fn version(self) -> &'static str {
        pinned_version(self.pin().1).unwrap_or("unknown")
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.binary_name())
    }
}

/// Looks up `KEY=value` in versions.env.
pub fn pinned_version(key: &str) -> Option<&'static str> {
    VERSIONS_ENV.lines().find_map(|line| {
        let (k, v) = line.trim().split_once('=')?;
        (k.trim() == key).then(|| v.trim())
    })
}

/// The cache root: `TAZUNA_DEV_CACHE`, else `$HOME/.cache/tazuna-dev`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = env::var_os(CACHE_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = env::var_os("HOME").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    home.join(".cache").join("tazuna-dev")
}

/// Where the binaries are looked up.
#[derive(Clone, Debug)]
pub struct Assets {
    layout: Layout,
}

#[derive(Clone, Debug)]
enum Layout {
    /// `TAZUNA_ASSETS`: every binary in one directory.
    Flat(PathBuf),
    /// install.sh's cache: `<root>/<pin>-<version>/<binary>`.
    Cache(PathBuf),
}

impl Assets {
    /// Reads `TAZUNA_ASSETS`, else uses the cache layout under [`cache_dir`].
    pub fn locate() -> Assets {
        match env::var_os(ASSETS_ENV).filter(|d| !d.is_empty()) {
            Some(dir) => Assets::flat(dir),
            None => Assets::cache(cache_dir().join("bin")),
        }
    }

    /// Every binary in `dir`.
    pub fn flat(dir: impl Into<PathBuf>) -> Assets {
        Assets {
            layout: Layout::Flat(dir.into()),
        }
    }

    /// install.sh's layout under `bin_root` (normally `~/.cache/tazuna-dev/bin`).
    pub fn cache(bin_root: impl Into<PathBuf>) -> Assets {
        Assets {
            layout: Layout::Cache(bin_root.into()),
        }
    }

    /// Where `tool` is expected, whether or not it is there.
    pub fn path(&self, tool: Tool) -> PathBuf {
        self.pin_dir(tool).join(tool.binary_name())
    }

    fn pin_dir(&self, tool: Tool) -> PathBuf {
        match &self.layout {
            Layout::Flat(dir) => dir.clone(),
            Layout::Cache(root) => {
                let (prefix, _) = tool.pin();
                root.join(format!("{prefix}-{}", tool.version()))
            }
        }
    }

    /// The path of `tool` if it exists.
    pub fn find(&self, tool: Tool) -> Option<PathBuf> {
        let path = self.path(tool);
        path.is_file().then_some(path)
    }

    /// The tools among `tools` that are missing.
    pub fn missing(&self, tools: &[Tool]) -> Vec<Tool> {
        tools
            .iter()
            .copied()
            .filter(|t| self.find(*t).is_none())
            .collect()
    }

    /// Fails with a hint when any of `tools` is missing.
    pub fn require(&self, tools: &[Tool]) -> anyhow::Result<()> {
        let missing = self.missing(tools);
        if missing.is_empty() {
            return Ok(());
        }
        Err(
            crate::StartError::MissingBinaries(missing.iter().map(|t| self.path(*t)).collect())
                .into(),
        )
    }

    /// Cluster API's Cluster CRD (install.sh copies it from the pinned
    /// module), if it is there.
    pub fn cluster_api_crd(&self) -> Option<PathBuf> {
        let name = "cluster.x-k8s.io_clusters.yaml";
        let path = match &self.layout {
            Layout::Flat(dir) => dir.join(name),
            Layout::Cache(root) => root
                .join(format!(
                    "cluster-api-{}",
                    pinned_version("CLUSTER_API_VERSION").unwrap_or("unknown")
                ))
                .join(name),
        };
        path.is_file().then_some(path)
    }

    /// The directory of kwok's stage files (kwok v0.8 has no built-in stages).
    pub fn kwok_stages(&self) -> PathBuf {
        self.pin_dir(Tool::Kwok).join("stages")
    }

    /// The kubectl to run: `TAZUNA_KUBECTL`, else the pinned one if built, else the
    /// `kubectl` on `PATH`.
    pub fn kubectl(&self) -> PathBuf {
        if let Some(path) = env::var_os(KUBECTL_ENV).filter(|p| !p.is_empty()) {
            return PathBuf::from(path);
        }
        self.find(Tool::Kubectl)
            .unwrap_or_else(|| PathBuf::from("kubectl"))
    }

    /// A description for messages.
    pub fn describe(&self) -> String {
        match &self.layout {
            Layout::Flat(dir) => format!("{ASSETS_ENV}={}", dir.display()),
            Layout::Cache(root) => format!("the cache `{}`", root.display()),
        }
    }
}

/// Finds `name` on `PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Off unix a file has no executable bit: any file will do.
#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_a_pinned_version() {
        for tool in Tool::CONTROL_PLANE
            .iter()
            .chain(Tool::PLUGIN_TOOLS.iter())
            .chain([Tool::Kubectl].iter())
        {
            assert!(
                tool.version().starts_with('v'),
                "{tool} has no version in versions.env"
            );
        }
    }

    #[test]
    fn cache_layout_keys_binaries_by_pin() {
        let assets = Assets::cache("/c/bin");
        let v = Tool::KubeApiserver.version();
        assert_eq!(
            assets.path(Tool::KubeApiserver),
            PathBuf::from(format!("/c/bin/kubernetes-{v}/kube-apiserver"))
        );
        assert_eq!(
            assets.kwok_stages(),
            PathBuf::from(format!("/c/bin/kwok-{}/stages", Tool::Kwok.version()))
        );
    }

    #[test]
    fn flat_layout_holds_everything_in_one_directory() {
        let assets = Assets::flat("/a");
        assert_eq!(assets.path(Tool::Etcd), PathBuf::from("/a/etcd"));
        assert_eq!(assets.kwok_stages(), PathBuf::from("/a/stages"));
    }
}
