//! Tazuna's engine: everything between a loaded `tazuna.yaml` and its results.
//!
//! - [`host`]: the sandboxed wasmtime plugin host (the only module with `unsafe`);
//! - [`plugins`]: the built-in plugins embedded in the binary, and loading
//!   third-party ones pinned in `spec.plugins`;
//! - [`render`]: one plugin call per manifest, in parallel, into Kubernetes objects;
//! - [`objects`]: the ground floor of the Kubernetes side (field manager,
//!   apply parameters, API lookup, annotations, error classification), which
//!   apply, plan, live reads, waits and checks build on;
//! - [`stack`]: a run over one file (a stack) and one cluster, which conducts
//!   render, plan, apply, prune, destroy and status; [`ownership`] decides
//!   which records and objects are the stack's.
//!
//! How results look (text, JSON, colour) is the CLI's business.
//!
//! The pure parts (config model, manifest graph) live in `tazuna-core`, which
//! depends on neither wasmtime nor an HTTP client.

pub mod apply;
pub mod checks;
pub mod cluster;
pub mod destroy;
pub mod distribution;
pub mod guard;
pub mod host;
pub mod live;
pub mod objects;
pub mod ownership;
pub mod plan;
pub mod plugins;
pub mod render;
pub mod secrets;
pub mod stack;
pub mod state;
pub mod status;
pub mod wait;
pub mod warnings;

/// The version of this build of Tazuna.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
