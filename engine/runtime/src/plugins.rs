//! Which plugin renders which manifest `type`: the built-ins embedded in the
//! binary, and third-party plugins pinned in `spec.plugins`.
//!
//! Built-ins are real wasm components (built by `cargo xtask build-plugins` and
//! embedded with `include_bytes!`); they carry their own grants. A third-party
//! plugin gets only the capabilities its `grants` list allows. Only the plugins
//! that the selected manifests use are loaded.

use std::collections::BTreeMap;
use std::path::PathBuf;

use sha2::{Digest, Sha256};
use tazuna_core::config::{Plugin, PluginSource};

use crate::host::{Grants, HostError, PluginHost, SourcePlugin};

/// A plugin compiled into the binary.
#[derive(Debug, Clone, Copy)]
pub struct Builtin {
    /// The manifest `type` it serves.
    pub name: &'static str,
    /// The component bytes.
    pub component: &'static [u8],
}

/// Every built-in plugin, by the `type` it serves.
pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "manifests",
        component: include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../target/plugins/manifests.wasm"
        )),
    },
    Builtin {
        name: "kustomize",
        component: include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../target/plugins/kustomize.wasm"
        )),
    },
    Builtin {
        name: "helm",
        component: include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../target/plugins/helm.wasm"
        )),
    },
    Builtin {
        name: "helmfile",
        component: include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../target/plugins/helmfile.wasm"
        )),
    },
];

/// Names of the manifest types the built-ins serve.
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    BUILTINS.iter().map(|b| b.name)
}

/// Why a plugin could not be made ready.
#[derive(Debug, thiserror::Error)]
pub enum PluginLoadError {
    /// Loading or describing the component failed.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The component file could not be read.
    #[error("plugin `{name}`: cannot read `{}`: {error}", path.display())]
    Read {
        /// Plugin name.
        name: String,
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// OCI sources need the distribution support that is not built yet.
    #[error(
        "plugin `{name}`: `oci://{reference}` sources are not supported yet\nhint: download the component and use `source: file://<path>` for now"
    )]
    UnsupportedSource {
        /// Plugin name.
        name: String,
        /// The OCI reference.
        reference: String,
    },
    /// The bytes do not match the pinned digest.
    #[error("plugin `{name}`: digest mismatch: `tazuna.yaml` pins `{expected}` but `{}` has `sha256:{actual}`\nhint: if the new component is intended, update `digest` in tazuna.yaml", path.display())]
    DigestMismatch {
        /// Plugin name.
        name: String,
        /// The component file.
        path: PathBuf,
        /// The pinned digest.
        expected: String,
        /// The digest of the bytes found.
        actual: String,
    },
    /// The plugin's version does not meet the constraint.
    #[error("plugin `{name}`: version `{actual}` does not satisfy `{wanted}`")]
    Version {
        /// Plugin name.
        name: String,
        /// The constraint.
        wanted: semver::VersionReq,
        /// What the plugin reports.
        actual: String,
    },
}

/// The plugins a run needs, loaded and ready, by manifest type.
#[derive(Debug, Default)]
pub struct PluginSet {
    plugins: BTreeMap<String, SourcePlugin>,
}

impl PluginSet {
    /// Load the plugins for `types`, preferring a declared plugin over a
    /// built-in of the same name. Unknown types are left out (the config
    /// check reports them first).
    pub fn load(
        host: &PluginHost,
        types: &[&str],
        declared: &[Plugin],
    ) -> Result<Self, PluginLoadError> {
        let mut plugins = BTreeMap::new();
        for &kind in types {
            if plugins.contains_key(kind) {
                continue;
            }
            let plugin = if let Some(decl) = declared.iter().find(|d| d.name == kind) {
                load_declared(host, decl)?
            } else if let Some(builtin) = BUILTINS.iter().find(|b| b.name == kind) {
                host.load_source(builtin.name, builtin.component, Grants::Requested)?
            } else {
                continue;
            };
            plugins.insert(kind.to_owned(), plugin);
        }
        Ok(Self { plugins })
    }

    /// The plugin serving manifest type `kind`.
    pub fn get(&self, kind: &str) -> Option<&SourcePlugin> {
        self.plugins.get(kind)
    }
}

fn load_declared(host: &PluginHost, decl: &Plugin) -> Result<SourcePlugin, PluginLoadError> {
    let path = match &decl.source {
        PluginSource::File { path } => path,
        PluginSource::Oci { reference } => {
            return Err(PluginLoadError::UnsupportedSource {
                name: decl.name.clone(),
                reference: reference.clone(),
            });
        }
    };
    let bytes = std::fs::read(path).map_err(|error| PluginLoadError::Read {
        name: decl.name.clone(),
        path: path.clone(),
        error,
    })?;
    if let Some(expected) = &decl.digest {
        let actual = hex::encode(Sha256::digest(&bytes));
        if expected.strip_prefix("sha256:") != Some(actual.as_str()) {
            return Err(PluginLoadError::DigestMismatch {
                name: decl.name.clone(),
                path: path.clone(),
                expected: expected.clone(),
                actual,
            });
        }
    }
    let plugin = host.load_source(&decl.name, &bytes, Grants::List(&decl.grants))?;
    if let Some(wanted) = &decl.version {
        let version = plugin.info().version.trim_start_matches('v');
        let ok = semver::Version::parse(version).is_ok_and(|v| wanted.matches(&v));
        if !ok {
            return Err(PluginLoadError::Version {
                name: decl.name.clone(),
                wanted: wanted.clone(),
                actual: plugin.info().version.clone(),
            });
        }
    }
    Ok(plugin)
}
