//! The plugin side of Tazuna's engine: everything that runs plugins, and
//! nothing that talks to a cluster.
//!
//! - [`host`]: the sandboxed wasmtime plugin host and the jail its tools run in
//!   (the only module with `unsafe`);
//! - [`plugins`]: the built-in plugins embedded in the binary, and loading
//!   third-party ones pinned in `spec.plugins`;
//! - [`distribution`]: fetching plugins and artifacts from OCI registries and
//!   files, pinned by digest;
//! - [`render`]: one plugin call per manifest, in parallel, into Kubernetes objects;
//! - [`secrets`]: resolving secret references in rendered Secrets through the
//!   resolver plugins;
//! - [`tls`]: the process's TLS provider, installed before any HTTP client.
//!
//! What a render takes and gives ([`tazuna_core::render`]) is shared with the
//! Kubernetes side (`tazuna-kube`); this crate does not depend on a Kubernetes client.

mod config_strings;
pub mod distribution;
pub mod host;
pub mod plugins;
mod references;
pub mod render;
pub mod secrets;
pub mod tls;
