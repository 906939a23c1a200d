//! Tazuna's end-to-end test kit: the control plane of `tazuna-controlplane`
//! (re-exported here), real OCI registries, and the pinned tools the source
//! plugins call.
//! - [`Registry`]: `docker-registry` on a free port, optionally with basic auth.
//! - [`Moto`]: moto in server mode, the AWS API of the secret-store tests.
//! - [`Vault`]: `vault server -dev` with TLS, the Vault of the secret-store tests.
//! - [`ExternalSecrets`]: External Secrets Operator's controller, for the hand-over tests.
//! - [`Flux`]: Flux's source- and kustomize-controller, for the GitOps hand-over tests.
//! - [`e2e`]: what tests use: [`e2e::TestCluster`] (fresh, shared, or the developer's
//!   kind/k3d cluster via `TAZUNA_E2E_KUBECONFIG`), [`e2e::TestNamespace`] guards, and
//!   the skip rule (`TAZUNA_E2E_REQUIRED`).

pub mod e2e;
pub mod eso;
pub mod flux;
pub mod moto;
pub mod registry;
pub mod vault;

pub use eso::ExternalSecrets;
pub use flux::Flux;
pub use moto::Moto;
pub use registry::Registry;
pub use tazuna_controlplane::{
    Assets, AuditEvent, Cluster, ClusterConfig, ClusterState, Ports, Tool, assets, cluster,
    kubeconfig, process,
};
pub use vault::Vault;
