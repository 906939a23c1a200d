//! Which plugin renders which manifest `type`: the built-ins embedded in the
//! binary, and third-party plugins pinned in `spec.plugins`.
//!
//! Built-ins are real wasm components (built by `cargo xtask build-plugins`,
//! committed in `builtins/` so the crate builds with nothing but Rust, and
//! embedded with `include_bytes!`); they carry their own grants. A third-party
//! plugin gets only the capabilities its `grants` list allows. Only the plugins
//! that the selected manifests use are loaded.

use std::collections::BTreeMap;
use std::path::PathBuf;
use tazuna_core::hint::Hint;

use tazuna_core::config::{Plugin, PluginSource};

use crate::distribution::{self, Blobs, DistributionError, Fetched, Resolve};
use crate::host::{
    Capabilities, Grants, HostError, PluginHost, PluginInfo, RESOLVER_WORLD, ResolverPlugin,
    SOURCE_WORLD, SourcePlugin,
};
use tazuna_core::lock::{Lockfile, PluginPin};

/// A plugin compiled into the binary.
#[derive(Debug, Clone, Copy)]
pub struct Builtin {
    /// The manifest `type` it serves.
    pub name: &'static str,
    /// The component bytes.
    pub component: &'static [u8],
}

/// The built-in component `builtins/<name>.wasm`, embedded.
macro_rules! builtin {
    ($name:literal) => {
        Builtin {
            name: $name,
            component: include_bytes!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/builtins/",
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
pub const BUILTIN_RESOLVERS: &[Builtin] = &[
    builtin!("envfile"),
    builtin!("onepassword"),
    builtin!("aws-secrets-manager"),
    builtin!("vault"),
    builtin!("sops"),
    builtin!("kubernetes"),
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
    /// An `oci://` plugin could not be resolved or pulled.
    #[error(transparent)]
    Distribution(#[from] DistributionError),
    /// A newly pinned `oci://` plugin asks for capabilities nobody granted.
    #[error("plugin `{name}` {version} asks for capabilities that `spec.plugins` does not grant: {}", missing.join(", "))]
    Ungranted {
        /// Plugin name.
        name: String,
        /// Its version.
        version: String,
        /// What it asks for beyond its grants.
        missing: Vec<String>,
    },
    /// The bytes do not match the pinned digest.
    #[error("plugin `{name}`: digest mismatch: `tazuna.yaml` pins `{expected}` but `{}` has `{actual}`", path.display())]
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
    /// The component calls itself by another name than its declaration.
    #[error("plugin `{name}`: the component says it is plugin `{reported}`; nothing was loaded")]
    NameMismatch {
        /// The declared name.
        name: String,
        /// What the component reports.
        reported: String,
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

impl Hint for PluginLoadError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            Self::Distribution(error) => return error.hint(),
            Self::Host(error) => return error.hint(),
            Self::Ungranted { .. } => "add them to the plugin's `grants` in tazuna.yaml if you trust it with them, or pin a version that does not need them".to_owned(),
            Self::DigestMismatch { .. } => "if the new component is intended, update `digest` in tazuna.yaml".to_owned(),
            Self::NameMismatch { reported, .. } => format!(
                "a declaration (and the pin in tazuna.lock) names one plugin; if `{reported}` is the plugin you want, declare it under its own name, and check tazuna.lock: an edited digest can point at another component"
            ),
            _ => return None,
        })
    }
}

/// What a plugin is loaded as: the renderer of a manifest `type`, or the
/// resolver behind a provider `type` of `spec.providers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The `source-plugin` world.
    Source,
    /// The `secret-resolver-plugin` world.
    Resolver,
    /// Whichever world the component targets: a declared plugin that no
    /// manifest or provider names yet (`plugin list`, `plugin update`).
    Either,
}

impl Role {
    /// The WIT world a component in this role targets, if the role says.
    pub fn world(self) -> Option<&'static str> {
        match self {
            Self::Source => Some(SOURCE_WORLD),
            Self::Resolver => Some(RESOLVER_WORLD),
            Self::Either => None,
        }
    }
}

/// The plugins a run needs, loaded and ready: source plugins by manifest
/// type, secret resolvers by provider type.
#[derive(Debug, Default)]
pub struct PluginSet {
    plugins: BTreeMap<String, SourcePlugin>,
    resolvers: BTreeMap<String, ResolverPlugin>,
}

impl PluginSet {
    /// Load the plugins for `wanted` (a type and its role), preferring a
    /// declared plugin over a built-in of the same name. Unknown types are
    /// left out (the config check reports them first). `fetched` holds the
    /// components of the declared `oci://` plugins ([`fetch_oci`]).
    pub fn load(
        host: &PluginHost,
        wanted: &[(&str, Role)],
        declared: &[Plugin],
        fetched: &BTreeMap<String, Fetched>,
    ) -> Result<Self, PluginLoadError> {
        let mut set = Self::default();
        for &(kind, role) in wanted {
            let decl = declared.iter().find(|d| d.name == kind);
            let fetched = fetched.get(kind);
            match role {
                Role::Source => set.load_source(host, kind, decl, fetched)?,
                Role::Resolver => set.load_resolver(host, kind, decl, fetched)?,
                // Not a source: a resolver, or (when it is neither) the
                // source's error.
                Role::Either => match set.load_source(host, kind, decl, fetched) {
                    Err(not_a_source @ PluginLoadError::Host(HostError::WrongWorld { .. })) => {
                        match set.load_resolver(host, kind, decl, fetched) {
                            Err(PluginLoadError::Host(HostError::WrongWorld { .. })) => {
                                return Err(not_a_source);
                            }
                            other => other?,
                        }
                    }
                    other => other?,
                },
            }
        }
        Ok(set)
    }

    /// Load the source plugin for manifest type `kind`: declared, else built in.
    fn load_source(
        &mut self,
        host: &PluginHost,
        kind: &str,
        decl: Option<&Plugin>,
        fetched: Option<&Fetched>,
    ) -> Result<(), PluginLoadError> {
        if !self.plugins.contains_key(kind) {
            let loaded = load_one(
                BUILTINS,
                kind,
                decl,
                fetched,
                |label, bytes, grants| host.load_source(label, bytes, grants),
                |plugin| (plugin.info(), plugin.capabilities()),
            )?;
            self.plugins
                .extend(loaded.map(|plugin| (kind.to_owned(), plugin)));
        }
        Ok(())
    }

    /// Load the secret resolver for provider type `kind`: declared, else built in.
    fn load_resolver(
        &mut self,
        host: &PluginHost,
        kind: &str,
        decl: Option<&Plugin>,
        fetched: Option<&Fetched>,
    ) -> Result<(), PluginLoadError> {
        if !self.resolvers.contains_key(kind) {
            let loaded = load_one(
                BUILTIN_RESOLVERS,
                kind,
                decl,
                fetched,
                |label, bytes, grants| host.load_resolver(label, bytes, grants),
                |resolver| (resolver.info(), resolver.capabilities()),
            )?;
            self.resolvers
                .extend(loaded.map(|resolver| (kind.to_owned(), resolver)));
        }
        Ok(())
    }

    /// The plugin serving manifest type `kind`.
    pub fn get(&self, kind: &str) -> Option<&SourcePlugin> {
        self.plugins.get(kind)
    }

    /// The resolver serving provider type `kind`.
    pub fn resolver(&self, kind: &str) -> Option<&ResolverPlugin> {
        self.resolvers.get(kind)
    }

    /// The version plugin `name` reports, in either role.
    fn version(&self, name: &str) -> Option<&str> {
        self.plugins
            .get(name)
            .map(|p| p.info())
            .or_else(|| self.resolvers.get(name).map(|r| r.info()))
            .map(|info| info.version.as_str())
    }
}

/// Resolve the components of the declared `oci://` plugins among `wanted`,
/// by their pins in `lock` where they have one (see [`distribution::fetch`]).
pub async fn fetch_oci(
    declared: &[Plugin],
    wanted: &[(&str, Role)],
    lock: &Lockfile,
    resolve: Resolve,
    blobs: &Blobs,
) -> Result<BTreeMap<String, Fetched>, PluginLoadError> {
    let mut fetched = BTreeMap::new();
    for &(name, role) in wanted {
        let Some(decl) = declared.iter().find(|d| d.name == name) else {
            continue;
        };
        let PluginSource::Oci { reference } = &decl.source else {
            continue;
        };
        if fetched.contains_key(name) {
            continue;
        }
        let pin = lock.plugins.get(name);
        // A plugin of either role keeps the world it was pinned with; a new
        // pin's world is set from what loads ([`new_pins`]).
        let world = role
            .world()
            .or(pin.map(|pin| pin.world.as_str()))
            .unwrap_or(SOURCE_WORLD);
        let component = distribution::fetch(decl, reference, pin, resolve, blobs, world).await?;
        fetched.insert(name.to_owned(), component);
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
                && let Some(version) = set.version(&name)
            {
                pin.version = version.to_owned();
            }
            if set.resolvers.contains_key(&name) {
                pin.world = RESOLVER_WORLD.to_owned();
            } else if set.plugins.contains_key(&name) {
                pin.world = SOURCE_WORLD.to_owned();
            }
            (name, pin)
        })
        .collect()
}

/// The plugin for `kind` in one world: the declared one (checked against its
/// `version` and grants), else the built-in of `builtins`, else none. `load`
/// loads a component in that world; `about` tells what it said of itself.
fn load_one<P>(
    builtins: &[Builtin],
    kind: &str,
    decl: Option<&Plugin>,
    fetched: Option<&Fetched>,
    load: impl Fn(&str, &[u8], Grants<'_>) -> Result<P, HostError>,
    about: impl Fn(&P) -> (&PluginInfo, &Capabilities),
) -> Result<Option<P>, PluginLoadError> {
    if let Some(decl) = decl {
        let bytes = declared_bytes(decl, fetched)?;
        let plugin = load(&decl.name, &bytes, Grants::List(&decl.grants))?;
        let (info, capabilities) = about(&plugin);
        check_declared(decl, fetched, info, capabilities)?;
        return Ok(Some(plugin));
    }
    match builtins.iter().find(|b| b.name == kind) {
        Some(builtin) => Ok(Some(load(
            builtin.name,
            builtin.component,
            Grants::Requested,
        )?)),
        None => Ok(None),
    }
}

/// The component bytes of a declared plugin: its file (checked against
/// `digest`), or what [`fetch_oci`] pulled.
fn declared_bytes<'a>(
    decl: &Plugin,
    fetched: Option<&'a Fetched>,
) -> Result<std::borrow::Cow<'a, [u8]>, PluginLoadError> {
    match (&decl.source, fetched) {
        (PluginSource::File { path }, _) => {
            let bytes = std::fs::read(path).map_err(|error| PluginLoadError::Read {
                name: decl.name.clone(),
                path: path.clone(),
                error,
            })?;
            if let Some(expected) = &decl.digest {
                let actual = distribution::sha256(&bytes);
                if *expected != actual {
                    return Err(PluginLoadError::DigestMismatch {
                        name: decl.name.clone(),
                        path: path.clone(),
                        expected: expected.clone(),
                        actual,
                    });
                }
            }
            Ok(std::borrow::Cow::Owned(bytes))
        }
        (PluginSource::Oci { .. }, Some(fetched)) => {
            Ok(std::borrow::Cow::Borrowed(&fetched.bytes[..]))
        }
        (PluginSource::Oci { reference }, None) => {
            unreachable!("oci://{reference} is fetched before plugins load")
        }
    }
}

/// Check a loaded declared plugin against its `version` constraint, and a
/// newly pinned one against its grants.
fn check_declared(
    decl: &Plugin,
    fetched: Option<&Fetched>,
    info: &PluginInfo,
    capabilities: &Capabilities,
) -> Result<(), PluginLoadError> {
    if let Some(wanted) = &decl.version {
        let version = info.version.trim_start_matches('v');
        let ok = semver::Version::parse(version).is_ok_and(|v| wanted.matches(&v));
        if !ok {
            return Err(PluginLoadError::Version {
                name: decl.name.clone(),
                wanted: wanted.clone(),
                actual: info.version.clone(),
            });
        }
    }
    // A component pinned now must not ask for more than the file grants: the
    // pin is a decision, and a new capability needs a new grant. Scopes
    // (`emit:`, `read:` for what the input holds, and `secrets:` for
    // references) are ceilings, not needs: what
    // is not granted narrows the scope, and each object outside it is refused
    // when it is planned or applied.
    if fetched.is_some_and(|f| f.repinned) {
        let scope = |c: &str| {
            c.starts_with("emit:")
                || c.starts_with("read:")
                || (c.starts_with("secrets:") && c != "secrets:exec")
        };
        let missing: Vec<String> = info
            .capabilities
            .iter()
            .filter(|requested| !scope(requested) && !capabilities.allows(requested))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(PluginLoadError::Ungranted {
                name: decl.name.clone(),
                version: info.version.clone(),
                missing,
            });
        }
    }
    if info.name != decl.name {
        return Err(PluginLoadError::NameMismatch {
            name: decl.name.clone(),
            reported: info.name.clone(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`BUILTINS`] and [`BUILTIN_RESOLVERS`] are the registry of built-ins:
    /// the manifest types the config loader knows, and the components
    /// committed beside this crate (which `cargo xtask build-plugins` writes
    /// from its own list, checked against the same directory), are the same.
    #[test]
    fn every_list_of_built_ins_is_the_registry() {
        let mut registry: Vec<&str> = builtin_names().collect();
        registry.sort_unstable();
        let mut types = tazuna_core::config::BUILTIN_TYPES.to_vec();
        types.sort_unstable();
        assert_eq!(types, registry, "tazuna_core::config::BUILTIN_TYPES");
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("builtins");
        let mut committed: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|entry| {
                let name = entry.unwrap().file_name().into_string().unwrap();
                name.strip_suffix(".wasm").map(str::to_owned)
            })
            .collect();
        committed.sort_unstable();
        let mut all: Vec<&str> = BUILTINS
            .iter()
            .chain(BUILTIN_RESOLVERS)
            .map(|b| b.name)
            .collect();
        all.sort_unstable();
        assert_eq!(committed, all, "{}", dir.display());
    }
}
