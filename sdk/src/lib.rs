//! Write Tazuna plugins in Rust.
//!
//! Every source type in Tazuna (`manifests`, `helm`, `kustomize`, ...) is a WebAssembly component
//! that implements the `tazuna:plugin@0.1.1` contract in `wit/plugin.wit`. This crate is the guest
//! side of that contract: implement [`SourcePlugin`] (or [`SecretResolver`]) for a type, hand the
//! type to [`export_source_plugin!`] (or [`export_secret_resolver!`]), and build the crate as a
//! `cdylib` for `wasm32-wasip2`. The SDK parses the manifest's config into your typed `Config`,
//! reports its JSON schema from `describe`, and turns config errors into
//! [`PluginError::InvalidConfig`] diagnostics that point at the offending JSON path.
//!
//! ```
//! use std::collections::BTreeMap;
//! use tazuna_sdk::{Manifest, PluginError, PluginInfo, RenderOutput, RenderRequest, SourcePlugin};
//!
//! /// `greeting: { text: "hi" }` renders one ConfigMap holding the text.
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Config {
//!     text: String,
//! }
//!
//! struct Greeting;
//!
//! impl SourcePlugin for Greeting {
//!     type Config = Config;
//!
//!     fn info() -> PluginInfo {
//!         PluginInfo::new("greeting", env!("CARGO_PKG_VERSION")).with_description("Renders a greeting.")
//!     }
//!
//!     fn render(config: Config, request: &RenderRequest) -> Result<RenderOutput, PluginError> {
//!         tazuna_sdk::log::info(format_args!("greeting `{}`", request.manifest_name));
//!         let object = serde_json::json!({
//!             "apiVersion": "v1",
//!             "kind": "ConfigMap",
//!             "metadata": { "name": request.manifest_name },
//!             "data": BTreeMap::from([("text", config.text)]),
//!         });
//!         Ok(RenderOutput::new(vec![Manifest::from_object(&object)?]))
//!     }
//! }
//!
//! tazuna_sdk::export_source_plugin!(Greeting);
//! # fn main() {}
//! ```
//!
//! The crate builds for the host target too, so the pure parts of a plugin can be unit tested
//! with a plain `cargo test`. Outside a Tazuna host the imports degrade gracefully: [`log`] writes
//! to stderr, and [`exec::run`] and [`artifacts::pull_oci`] return
//! [`PluginError::CapabilityDenied`].
#![deny(missing_docs)]

pub mod age;
pub mod artifacts;
pub mod clusters;
mod config;
pub mod exec;
mod info;
pub mod log;
pub mod outbound;
pub mod secret;
mod source;
pub mod tools;
pub mod traits;
mod types;

pub use config::NoConfig;
pub use info::PluginInfo;
pub use secret::SecretResolver;
pub use source::SourcePlugin;

pub use bindings::source::tazuna::plugin::types::{
    ApiResource, ClusterInfo, Diagnostic, Manifest, PluginError, RenderOutput, RenderRequest,
    ResolvedRef, SecretValue, Severity, ToolFailure,
};

/// The `schemars` version the SDK derives config schemas with, for `#[schemars(crate = ...)]`.
pub use schemars;
/// The `serde_json` version the SDK parses configs with.
pub use serde_json;

/// Export a [`SourcePlugin`] implementation as the component's `tazuna:plugin/source` interface.
///
/// Invoke it once, at the top level of a `cdylib` crate, as in the [crate example](crate). On
/// targets other than wasm32 it only checks that the type implements [`SourcePlugin`], so the
/// plugin crate still builds and tests on the host.
#[macro_export]
macro_rules! export_source_plugin {
    ($plugin:ty) => {
        // Other targets only check the bound: a host `cdylib` cannot carry the component's
        // export names, and unit tests of a plugin crate build one.
        const _: fn() = $crate::__private::assert_source_plugin::<$plugin>;
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            type TazunaSourcePlugin = $crate::__private::SourceExport<$plugin>;
            $crate::__private::export_source_world!(
                TazunaSourcePlugin with_types_in $crate::__private::bindings::source
            );
        };
    };
}

/// Export a [`SecretResolver`] implementation as the component's
/// `tazuna:plugin/secret-resolver` interface.
///
/// Invoke it once, at the top level of a `cdylib` crate, as in the [`SecretResolver`] example.
/// On targets other than wasm32 it only checks that the type implements [`SecretResolver`].
#[macro_export]
macro_rules! export_secret_resolver {
    ($resolver:ty) => {
        const _: fn() = $crate::__private::assert_secret_resolver::<$resolver>;
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            type TazunaSecretResolver = $crate::__private::SecretResolverExport<$resolver>;
            $crate::__private::export_secret_resolver_world!(
                TazunaSecretResolver with_types_in $crate::__private::bindings::secret_resolver
            );
        };
    };
}

/// What the export macros expand to. Not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::bindings;
    pub use crate::bindings::secret_resolver::export_secret_resolver_world;
    pub use crate::bindings::source::export_source_world;
    pub use crate::secret::SecretResolverExport;
    pub use crate::source::SourceExport;

    /// Compiles only if `P` is a source plugin.
    pub fn assert_source_plugin<P: crate::SourcePlugin>() {}

    /// Compiles only if `R` is a secret resolver.
    pub fn assert_secret_resolver<R: crate::SecretResolver>() {}
}

/// Bindings generated from `wit/plugin.wit`, one module per world.
///
/// Both worlds share the `types`, `log`, `exec` and `artifacts` interfaces generated in `source`,
/// so a [`Diagnostic`] is the same Rust type whichever world a plugin exports. The component-type
/// section naming the exported world is emitted by the export macro, in the plugin's own crate.
#[doc(hidden)]
#[allow(missing_docs, clippy::all)]
pub mod bindings {
    pub mod source {
        wit_bindgen::generate!({
            path: "wit",
            world: "source-plugin",
            additional_derives: [PartialEq, Eq],
            pub_export_macro: true,
            export_macro_name: "export_source_world",
            default_bindings_module: "tazuna_sdk::__private::bindings::source",
        });
    }

    pub mod secret_resolver {
        wit_bindgen::generate!({
            path: "wit",
            world: "secret-resolver-plugin",
            additional_derives: [PartialEq, Eq],
            pub_export_macro: true,
            export_macro_name: "export_secret_resolver_world",
            default_bindings_module: "tazuna_sdk::__private::bindings::secret_resolver",
            with: {
                "tazuna:plugin/types@0.1.1": crate::bindings::source::tazuna::plugin::types,
                "tazuna:plugin/log@0.1.1": crate::bindings::source::tazuna::plugin::log,
                "tazuna:plugin/exec@0.1.1": crate::bindings::source::tazuna::plugin::exec,
                "tazuna:plugin/tools@0.1.1": crate::bindings::source::tazuna::plugin::tools,
                "tazuna:plugin/artifacts@0.1.1": crate::bindings::source::tazuna::plugin::artifacts,
            },
        });
    }
}
