//! Host-side bindings of the `tazuna:plugin` WIT contract.
//!
//! Generated once here, from the one versioned source in `wit/`; every other module
//! imports the contract's types from this module and nowhere else.

#![allow(missing_docs, clippy::all)]

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "source-plugin",
});

pub use tazuna::plugin::{artifacts, exec, log, types};

/// The WIT world every source plugin must target.
pub const SOURCE_WORLD: &str = "tazuna:plugin/source-plugin@0.1.0";
