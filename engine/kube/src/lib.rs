//! The Kubernetes side of Tazuna's engine: everything that talks to a cluster,
//! and nothing that runs plugins.
//!
//! - [`objects`]: the ground floor (field manager, apply parameters, API lookup,
//!   annotations, error classification), which every module above builds on;
//! - [`cluster`] and [`guard`]: the connection, discovery and the context check;
//! - [`state`]: the records of what was applied, and the Lease;
//! - [`live`], [`plan`], [`apply`], [`wait`], [`checks`], [`status`]: reading,
//!   diffing, applying and watching objects;
//! - [`ownership`], [`prune`] and [`destroy`]: which records a stack may
//!   prune, whether an object is deleted (the prune verdict), and taking
//!   them down in order;
//! - [`takeover`], [`aggregation`] and [`storage`]: what a run may take over
//!   or add to on the cluster, asked before any write;
//! - [`warnings`]: API server warnings, collected per run.
//!
//! Rendered objects arrive as [`tazuna_core::render::Rendered`]; this crate does
//! not depend on the WebAssembly engine.

pub mod aggregation;
pub mod apply;
pub mod capi;
pub mod checks;
pub mod cluster;
pub mod destroy;
pub mod generated;
pub mod guard;
mod hooks;
pub mod live;
pub mod management;
pub mod namespaces;
pub mod objects;
pub mod ownership;
pub mod plan;
pub mod prune;
pub mod state;
pub mod status;
pub mod storage;
pub mod takeover;
pub mod wait;
pub mod warnings;
