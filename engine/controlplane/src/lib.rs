//! A real Kubernetes control plane on loopback: etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler and kwok for fake Nodes, so
//! Deployments really become ready. `tazuna verify` proves a whole file on one;
//! Tazuna's end-to-end tests (`tazuna-tests`) and `cargo xtask cluster` start
//! them too.
//!
//! The binaries are built by `tests/controlplane/install.sh` into
//! `~/.cache/tazuna-dev/bin/` (or named by `TAZUNA_ASSETS`), see [`assets`].
//!
//! - [`Cluster`] / [`ClusterConfig`]: start a control plane, get its kubeconfig and
//!   context; dropped, it stops and removes its data. `cargo xtask cluster up` detaches
//!   one ([`Cluster::detach`], [`ClusterState`]).

pub mod assets;
pub mod cluster;
mod error;
pub mod kubeconfig;
mod pki;
pub mod process;

pub use assets::{Assets, Tool};
pub use cluster::{AuditEvent, Cluster, ClusterConfig, ClusterState, Ports};
pub use error::StartError;
