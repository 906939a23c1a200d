//! Host-side bindings of the `tazuna:plugin` WIT contract.
//!
//! Generated once here, from the one versioned source in `wit/`; every other module
//! imports the contract's types from this module and nowhere else.

#![allow(missing_docs, clippy::all)]

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "source-plugin",
});

pub use resolver::tazuna::plugin::{age, clusters, outbound};
pub use tazuna::plugin::{artifacts, exec, log, render_traits, tools, types};

/// The `secret-resolver-plugin` world, sharing the imports generated above so
/// one linker and one call state serve both worlds.
pub mod resolver {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "secret-resolver-plugin",
        with: {
            "tazuna:plugin/types": super::tazuna::plugin::types,
            "tazuna:plugin/log": super::tazuna::plugin::log,
            "tazuna:plugin/exec": super::tazuna::plugin::exec,
            "tazuna:plugin/tools": super::tazuna::plugin::tools,
            "tazuna:plugin/artifacts": super::tazuna::plugin::artifacts,
        },
    });
}

/// The WIT world every source plugin must target.
pub const SOURCE_WORLD: &str = "tazuna:plugin/source-plugin@0.1.1";

/// The WIT world every secret-resolver plugin must target.
pub const RESOLVER_WORLD: &str = "tazuna:plugin/secret-resolver-plugin@0.1.1";
