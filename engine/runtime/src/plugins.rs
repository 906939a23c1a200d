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

use crate::distribution::{self, Blobs, DistributionError, Fetched, Resolve};
use crate::host::{Grants, HostError, PluginHost, SourcePlugin};
use tazuna_core::lock::{Lockfile, PluginPin};

/// A plugin compiled into the binary.
#[derive(Debug, Clone, Copy)]
pub struct Builtin {
    /// The manifest `type` it serves.
    pub name: &'static str,
    /// The component bytes.
    pub component: &'static [u8],
}

/// The built-in component `target/plugins/<name>.wasm`, embedded.
macro_rules! builtin {
    ($name:literal) => {
        Builtin {
            name: $name,
            component: include_bytes!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../target/plugins/",
                $name,
                ".wasm"
            )),
        }
    };
}

/// Every built-in source plugin, by the `type` it serves.
pub const BUILTINS: &[Builtin] = &[
    builtin!("manifests"),
    builtin!("kustomize"),
    builtin!("helm"),
    builtin!("helmfile"),
    builtin!("oras"),
    builtin!("genesissecret"),
];

/// Every built-in secret resolver, by the provider `type` it serves.
pub const BUILTIN_RESOLVERS: &[Builtin] = &[builtin!("envfile"), builtin!("onepassword")];

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
    /// An `oci://` plugin could not be resolved or pulled.
    #[error(transparent)]
    Distribution(#[from] DistributionError),
    /// A newly pinned `oci://` plugin asks for capabilities nobody granted.
    #[error("plugin `{name}` {version} asks for capabilities that `spec.plugins` does not grant: {}\nhint: add them to the plugin's `grants` in tazuna.yaml if you trust it with them, or pin a version that does not need them", missing.join(", "))]
    Ungranted {
        /// Plugin name.
        name: String,
        /// Its version.
        version: String,
        /// What it asks for beyond its grants.
        missing: Vec<String>,
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
    /// check reports them first). `fetched` holds the components of the
    /// declared `oci://` plugins ([`fetch_oci`]).
    pub fn load(
        host: &PluginHost,
        types: &[&str],
        declared: &[Plugin],
        fetched: &BTreeMap<String, Fetched>,
    ) -> Result<Self, PluginLoadError> {
        let mut plugins = BTreeMap::new();
        for &kind in types {
            if plugins.contains_key(kind) {
                continue;
            }
            let plugin = if let Some(decl) = declared.iter().find(|d| d.name == kind) {
                load_declared(host, decl, fetched.get(kind))?
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

/// Resolve the components of the declared `oci://` plugins among `types`,
/// by their pins in `lock` where they have one (see [`distribution::fetch`]).
pub async fn fetch_oci(
    declared: &[Plugin],
    types: &[&str],
    lock: &Lockfile,
    resolve: Resolve,
    blobs: &Blobs,
) -> Result<BTreeMap<String, Fetched>, PluginLoadError> {
    let mut fetched = BTreeMap::new();
    for decl in declared.iter().filter(|d| types.contains(&d.name.as_str())) {
        let PluginSource::Oci { reference } = &decl.source else {
            continue;
        };
        let pin = lock.plugins.get(&decl.name);
        let component = distribution::fetch(decl, reference, pin, resolve, blobs).await?;
        fetched.insert(decl.name.clone(), component);
    }
    Ok(fetched)
}

/// The pins that changed, for `tazuna.lock`. A plugin pulled by digest alone
/// gets the version it reports.
pub fn new_pins(set: &PluginSet, fetched: BTreeMap<String, Fetched>) -> Vec<(String, PluginPin)> {
    fetched
        .into_iter()
        .filter(|(_, f)| f.repinned)
        .map(|(name, f)| {
            let mut pin = f.pin;
            if pin.version.is_empty()
                && let Some(plugin) = set.get(&name)
            {
                pin.version = plugin.info().version.clone();
            }
            (name, pin)
        })
        .collect()
}

fn load_declared(
    host: &PluginHost,
    decl: &Plugin,
    fetched: Option<&Fetched>,
) -> Result<SourcePlugin, PluginLoadError> {
    let bytes = match (&decl.source, fetched) {
        (PluginSource::File { path }, _) => {
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
            std::borrow::Cow::Owned(bytes)
        }
        (PluginSource::Oci { .. }, Some(fetched)) => std::borrow::Cow::Borrowed(&fetched.bytes[..]),
        (PluginSource::Oci { reference }, None) => {
            unreachable!("oci://{reference} is fetched before plugins load")
        }
    };
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
    // A component pinned now must not ask for more than the file grants: the
    // pin is a decision, and a new capability needs a new grant.
    if fetched.is_some_and(|f| f.repinned) {
        let missing: Vec<String> = plugin
            .info()
            .capabilities
            .iter()
            .filter(|requested| !plugin.capabilities().allows(requested))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(PluginLoadError::Ungranted {
                name: decl.name.clone(),
                version: plugin.info().version.clone(),
                missing,
            });
        }
    }
    Ok(plugin)
}
