//! Tazuna's engine: everything between a loaded `tazuna.yaml` and its results.
//!
//! It joins two halves that do not depend on each other:
//!
//! - the plugin side, `tazuna-plugin-host` ([`host`], [`plugins`],
//!   [`distribution`], [`render`], [`secrets`]), which needs wasmtime but no
//!   Kubernetes client;
//! - the Kubernetes side, `tazuna-kube` ([`objects`], [`cluster`], [`guard`],
//!   [`state`], [`live`], [`plan`], [`apply`], [`wait`], [`checks`], [`status`],
//!   [`ownership`], [`destroy`], [`warnings`]), which needs a Kubernetes client
//!   but no WebAssembly engine.
//!
//! [`stack`] is a run over one file (a stack) and one cluster: it conducts
//! render, plan, apply, prune, destroy and status across both halves. How
//! results look (text, JSON, colour) is the CLI's business. The pure parts
//! (config model, manifest graph, what a render takes and gives) live in
//! `tazuna-core`.

pub use tazuna_kube::{
    apply, capi, checks, cluster, destroy, guard, live, management, objects, ownership, plan,
    state, status, wait, warnings,
};
pub use tazuna_plugin_host::{distribution, host, plugins, render, secrets, tls};

pub mod fleet;
pub mod stack;

/// The version of this build of Tazuna.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
