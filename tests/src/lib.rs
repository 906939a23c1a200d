//! Tazuna's end-to-end test kit: a real Kubernetes control plane on loopback (etcd,
//! kube-apiserver, kube-controller-manager, kube-scheduler and kwok for fake Nodes),
//! real OCI registries, and the pinned tools the source plugins call.
//!
//! The binaries are built by `tests/controlplane/install.sh` into
//! `~/.cache/tazuna-dev/bin/` (or named by `TAZUNA_ASSETS`), see [`assets`].
//!
//! - [`Cluster`] / [`ClusterConfig`]: start a control plane, get its kubeconfig and
//!   context; dropped, it stops and removes its data. `cargo xtask cluster up` detaches
//!   one ([`Cluster::detach`], [`ClusterState`]).
//! - [`Registry`]: `docker-registry` on a free port, optionally with basic auth.
//! - [`e2e`]: what tests use: [`e2e::TestCluster`] (fresh, shared, or the developer's
//!   kind/k3d cluster via `TAZUNA_E2E_KUBECONFIG`), [`e2e::TestNamespace`] guards, and
//!   the skip rule (`TAZUNA_E2E_REQUIRED`).

pub mod assets;
pub mod cluster;
pub mod e2e;
pub mod kubeconfig;
mod pki;
pub mod process;
pub mod registry;

pub use assets::{Assets, Tool};
pub use cluster::{AuditEvent, Cluster, ClusterConfig, ClusterState, Ports};
pub use registry::Registry;
