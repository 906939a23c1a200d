//! Third-party plugins from OCI registries.
//!
//! A plugin in `spec.plugins` with `source: oci://host/repo` is resolved once to
//! an exact component and pinned in `tazuna.lock` ([`PluginPin`]): the version
//! (the tag it was pulled by), the OCI manifest digest, the component digest,
//! the world and a hash of its grants. After that a run pulls by manifest
//! digest only, and not at all when the cache already holds the component, so
//! a pinned file works offline. `tazuna plugin update` re-resolves.
//!
//! The artifact layout is the CNCF Wasm OCI one (config
//! `application/vnd.wasm.config.v0+json`, one `application/wasm` layer), read
//! and written with `oci-wasm`. Registries on a loopback address are spoken to
//! over plain HTTP, as docker does; every other one over HTTPS. Credentials
//! come from the docker config (`$DOCKER_CONFIG/config.json`, else
//! `~/.docker/config.json`), so a plugin never sees them.
//!
//! Components are cached by their digest under `<cache>/blobs/sha256/<hex>`
//! ([`Blobs`]); every read is checked against its digest.

use std::path::{Path, PathBuf};

use oci_client::Reference;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_wasm::{WasmClient, WasmConfig};
use sha2::{Digest, Sha256};
use tazuna_core::config::Plugin;
use tazuna_core::lock::{PluginPin, grants_hash};

/// Why an `oci://` plugin could not be resolved, pulled or pushed.
#[derive(Debug, thiserror::Error)]
pub enum DistributionError {
    /// The reference does not parse.
    #[error(
        "plugin `{name}`: `oci://{reference}` is not an OCI reference: {message}\nhint: write `oci://<registry>/<repository>`, optionally with `:<tag>` or `@sha256:<digest>`"
    )]
    InvalidReference {
        /// Plugin name.
        name: String,
        /// What was given, after `oci://`.
        reference: String,
        /// Why it does not parse.
        message: String,
    },
    /// Talking to the registry failed.
    #[error(
        "plugin `{name}`: {action} `{reference}`: {message}\nhint: check that the registry is reachable; credentials are read from the docker config (`docker login`)"
    )]
    Registry {
        /// Plugin name.
        name: String,
        /// What Tazuna was doing.
        action: &'static str,
        /// The reference.
        reference: String,
        /// The registry's or the client's answer.
        message: String,
    },
    /// No tag satisfies the version constraint.
    #[error("plugin `{name}`: no tag of `{reference}` satisfies `{constraint}`; the registry has: {}\nhint: change `version` in tazuna.yaml, or push a matching version", if available.is_empty() { "no semver tags".to_owned() } else { available.join(", ") })]
    NoMatchingVersion {
        /// Plugin name.
        name: String,
        /// The repository.
        reference: String,
        /// The constraint (`*` when none was given).
        constraint: String,
        /// The semver tags found.
        available: Vec<String>,
    },
    /// What was pulled is not what was pinned or declared.
    #[error(
        "plugin `{name}`: digest mismatch: {expected_from} pins `{expected}` but {actual_from} is `{actual}`\nhint: if the new component is intended, update the pin (`tazuna plugin update {name}`, or `digest` in tazuna.yaml); otherwise the registry serves something else than before"
    )]
    DigestMismatch {
        /// Plugin name.
        name: String,
        /// Where the expected digest comes from.
        expected_from: &'static str,
        /// The expected digest.
        expected: String,
        /// What was checked.
        actual_from: &'static str,
        /// The digest found.
        actual: String,
    },
    /// `tazuna.yaml` no longer matches the pin in `tazuna.lock`.
    #[error(
        "plugin `{name}`: {what} changed since tazuna.lock pinned it ({pinned} there, {declared} in tazuna.yaml)\nhint: run `tazuna plugin update {name}` to pin it again, then commit tazuna.lock"
    )]
    PinOutOfDate {
        /// Plugin name.
        name: String,
        /// Which part changed.
        what: &'static str,
        /// The pinned value.
        pinned: String,
        /// The declared value.
        declared: String,
    },
    /// A component file could not be read for a push.
    #[error("cannot read `{}`: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A component to push is not a WebAssembly component.
    #[error("`{}` is not a WebAssembly component: {message}\nhint: build the plugin for wasm32-wasip2 (`cargo build --target wasm32-wasip2 --release`)", path.display())]
    NotAComponent {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
}

/// A component resolved for one plugin.
#[derive(Debug)]
pub struct Fetched {
    /// The component bytes, checked against `pin.component_digest`.
    pub bytes: Vec<u8>,
    /// What the lock file should hold for the plugin. Its `version` is the tag
    /// pulled, or empty when only a digest was given; the caller fills it in
    /// from the plugin itself.
    pub pin: PluginPin,
    /// The pin is new or differs from the one passed in.
    pub repinned: bool,
    /// The registry was contacted (the cache did not hold the component).
    pub pulled: bool,
}

/// How to treat an existing pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolve {
    /// Use the pin; resolve only a plugin that has none.
    Pinned,
    /// Resolve again (`tazuna plugin update`).
    Again,
}

/// The content-addressed cache of components: `<dir>/<hex>`.
#[derive(Debug, Clone)]
pub struct Blobs {
    dir: Option<PathBuf>,
}

impl Blobs {
    /// Blobs under `<root>/blobs/sha256`, or no cache at all.
    pub fn new(root: Option<&Path>) -> Self {
        Self {
            dir: root.map(|root| root.join("blobs").join("sha256")),
        }
    }

    /// The bytes with `digest` (`sha256:<hex>`), if cached and intact.
    pub fn get(&self, digest: &str) -> Option<Vec<u8>> {
        let hex = digest.strip_prefix("sha256:")?;
        let bytes = std::fs::read(self.dir.as_ref()?.join(hex)).ok()?;
        (sha256(&bytes) == digest).then_some(bytes)
    }

    /// Keep `bytes`; a cache that cannot be written is skipped with a warning.
    pub fn put(&self, bytes: &[u8]) {
        let Some(dir) = &self.dir else { return };
        let digest = sha256(bytes);
        let hex = digest.trim_start_matches("sha256:");
        let written = std::fs::create_dir_all(dir).and_then(|()| {
            let temporary = dir.join(format!(".{hex}.{}", std::process::id()));
            std::fs::write(&temporary, bytes)?;
            std::fs::rename(&temporary, dir.join(hex))
        });
        if let Err(error) = written {
            tracing::warn!(dir = %dir.display(), %error, "cannot cache a plugin component; the next run pulls it again");
        }
    }
}

/// Whether the registry answered that the repository, tag or digest does not
/// exist.
pub fn is_not_found(error: &oci_client::errors::OciDistributionError) -> bool {
    use oci_client::errors::{OciDistributionError, OciErrorCode};
    match error {
        OciDistributionError::ImageManifestNotFoundError(_) => true,
        OciDistributionError::RegistryError { envelope, .. } => envelope.errors.iter().any(|e| {
            matches!(
                e.code,
                OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown
            )
        }),
        _ => false,
    }
}

/// `sha256:<hex>` of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// An `oci://` source taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// `host[:port]`.
    pub registry: String,
    /// `path/to/repo`.
    pub repository: String,
    /// The tag, if the source names one.
    pub tag: Option<String>,
    /// The manifest digest, if the source names one.
    pub digest: Option<String>,
}

impl Source {
    /// Parses `reference`, the part after `oci://`. `name` is for errors.
    pub fn parse(name: &str, reference: &str) -> Result<Self, DistributionError> {
        let invalid = |message: String| DistributionError::InvalidReference {
            name: name.to_owned(),
            reference: reference.to_owned(),
            message,
        };
        let parsed: Reference = reference
            .parse()
            .map_err(|e: oci_client::ParseError| invalid(e.to_string()))?;
        let (named, digest) = match reference.split_once('@') {
            Some((named, digest)) => (named, Some(digest.to_owned())),
            None => (reference, None),
        };
        let last = named.rsplit('/').next().unwrap_or(named);
        let tag = last.split_once(':').map(|(_, tag)| tag.to_owned());
        // As docker reads it: the first segment is a host if it has a `.` or
        // a `:`, or is `localhost`.
        let first = named.split('/').next().unwrap_or_default();
        let names_host =
            named.contains('/') && (first.contains(['.', ':']) || first == "localhost");
        if !names_host {
            return Err(invalid(
                "it names no registry host (Tazuna does not assume docker.io)".to_owned(),
            ));
        }
        Ok(Self {
            registry: parsed.registry().to_owned(),
            repository: parsed.repository().to_owned(),
            tag,
            digest,
        })
    }

    /// `oci://host/repo`, without tag or digest: what a pin records.
    pub fn repository_url(&self) -> String {
        format!("oci://{}/{}", self.registry, self.repository)
    }

    fn with_tag(&self, tag: &str) -> Reference {
        Reference::with_tag(
            self.registry.clone(),
            self.repository.clone(),
            tag.to_owned(),
        )
    }

    fn with_digest(&self, digest: &str) -> Reference {
        Reference::with_digest(
            self.registry.clone(),
            self.repository.clone(),
            digest.to_owned(),
        )
    }

    /// The source as a reference: by digest, else by tag, else `latest`.
    pub fn reference(&self) -> Reference {
        match (&self.digest, &self.tag) {
            (Some(digest), _) => self.with_digest(digest),
            (None, Some(tag)) => self.with_tag(tag),
            (None, None) => self.with_tag("latest"),
        }
    }

    /// A client for this registry: plain HTTP on loopback, HTTPS elsewhere.
    pub fn client(&self) -> WasmClient {
        self.client_over(false)
    }

    /// A client for this registry, over plain HTTP if `plain_http` or the
    /// registry is on a loopback address.
    pub fn client_over(&self, plain_http: bool) -> WasmClient {
        let host = self
            .registry
            .rsplit_once(':')
            .map_or(self.registry.as_str(), |(host, _)| host);
        let loopback =
            matches!(host, "localhost" | "127.0.0.1" | "[::1]" | "::1") || host.starts_with("127.");
        let protocol = if loopback || plain_http {
            ClientProtocol::HttpsExcept(vec![self.registry.clone()])
        } else {
            ClientProtocol::Https
        };
        WasmClient::new(oci_client::Client::new(ClientConfig {
            protocol,
            ..ClientConfig::default()
        }))
    }
}

/// Resolve `plugin`, whose source is `oci://<reference>`, to a component.
///
/// With a pin that still matches `tazuna.yaml` and [`Resolve::Pinned`], the
/// component comes from the cache, or is pulled by the pinned manifest digest.
/// Otherwise the source is resolved: by its digest, by its tag, or by the
/// highest semver tag that satisfies `version`. A new pin records `world`,
/// the WIT world the component is loaded as.
pub async fn fetch(
    plugin: &Plugin,
    reference: &str,
    pin: Option<&PluginPin>,
    resolve: Resolve,
    blobs: &Blobs,
    world: &str,
) -> Result<Fetched, DistributionError> {
    let name = plugin.name.as_str();
    let source = Source::parse(name, reference)?;
    let declared_source = format!("oci://{reference}");
    let constraint = plugin.version.as_ref().map(ToString::to_string);
    let grants = grants_hash(&plugin.grants);
    if let (Some(pin), Resolve::Pinned) = (pin, resolve) {
        check_pin(name, pin, &declared_source, constraint.as_deref(), &grants)?;
        if let Some(expected) = &plugin.digest
            && *expected != pin.manifest_digest
        {
            return Err(DistributionError::PinOutOfDate {
                name: name.to_owned(),
                what: "`digest`",
                pinned: pin.manifest_digest.clone(),
                declared: expected.clone(),
            });
        }
        if let Some(bytes) = blobs.get(&pin.component_digest) {
            return Ok(Fetched {
                bytes,
                pin: pin.clone(),
                repinned: false,
                pulled: false,
            });
        }
        let pulled = pull(name, &source, &source.with_digest(&pin.manifest_digest)).await?;
        if pulled.component_digest != pin.component_digest {
            return Err(DistributionError::DigestMismatch {
                name: name.to_owned(),
                expected_from: "tazuna.lock",
                expected: pin.component_digest.clone(),
                actual_from: "the component pulled by the pinned manifest digest",
                actual: pulled.component_digest,
            });
        }
        blobs.put(&pulled.bytes);
        return Ok(Fetched {
            bytes: pulled.bytes,
            pin: pin.clone(),
            repinned: false,
            pulled: true,
        });
    }

    let (reference, tag) = match (&source.digest, &source.tag) {
        (Some(digest), tag) => (source.with_digest(digest), tag.clone()),
        (None, Some(tag)) => (source.with_tag(tag), Some(tag.clone())),
        (None, None) => {
            let tag = newest_tag(name, &source, plugin.version.as_ref()).await?;
            (source.with_tag(&tag), Some(tag))
        }
    };
    let pulled = pull(name, &source, &reference).await?;
    let wanted = plugin.digest.as_ref().or(source.digest.as_ref());
    if let Some(expected) = wanted
        && *expected != pulled.manifest_digest
    {
        return Err(DistributionError::DigestMismatch {
            name: name.to_owned(),
            expected_from: "tazuna.yaml",
            expected: expected.clone(),
            actual_from: "the manifest the registry serves",
            actual: pulled.manifest_digest,
        });
    }
    blobs.put(&pulled.bytes);
    let new_pin = PluginPin {
        source: declared_source,
        constraint,
        version: tag.unwrap_or_default(),
        manifest_digest: pulled.manifest_digest,
        component_digest: pulled.component_digest,
        world: world.to_owned(),
        grants,
    };
    let repinned = pin != Some(&new_pin);
    Ok(Fetched {
        bytes: pulled.bytes,
        pin: new_pin,
        repinned,
        pulled: true,
    })
}

/// Refuses a pin that no longer matches what `tazuna.yaml` declares.
fn check_pin(
    name: &str,
    pin: &PluginPin,
    source: &str,
    constraint: Option<&str>,
    grants: &str,
) -> Result<(), DistributionError> {
    let out_of_date = |what, pinned: &str, declared: &str| DistributionError::PinOutOfDate {
        name: name.to_owned(),
        what,
        pinned: pinned.to_owned(),
        declared: declared.to_owned(),
    };
    if pin.source != source {
        return Err(out_of_date("`source`", &pin.source, source));
    }
    if pin.constraint.as_deref() != constraint {
        return Err(out_of_date(
            "`version`",
            pin.constraint.as_deref().unwrap_or("none"),
            constraint.unwrap_or("none"),
        ));
    }
    if pin.grants != grants {
        return Err(out_of_date("`grants`", &pin.grants, grants));
    }
    Ok(())
}

/// The highest semver tag of `source` that satisfies `constraint` (any, when
/// none is given); a leading `v` is allowed.
async fn newest_tag(
    name: &str,
    source: &Source,
    constraint: Option<&semver::VersionReq>,
) -> Result<String, DistributionError> {
    let reference = source.with_tag("latest");
    let auth = auth_for(&source.registry);
    let tags = source
        .client()
        .list_tags(&reference, &auth, None, None)
        .await
        .map_err(|error| DistributionError::Registry {
            name: name.to_owned(),
            action: "cannot list the tags of",
            reference: source.repository_url(),
            message: error.to_string(),
        })?
        .tags;
    let (tag, available) = pick_tag(&tags, constraint);
    tag.ok_or_else(|| DistributionError::NoMatchingVersion {
        name: name.to_owned(),
        reference: source.repository_url(),
        constraint: constraint.map_or_else(|| "*".to_owned(), ToString::to_string),
        available,
    })
}

/// The highest tag satisfying `constraint`, and every semver tag, sorted.
fn pick_tag(
    tags: &[String],
    constraint: Option<&semver::VersionReq>,
) -> (Option<String>, Vec<String>) {
    let mut versions: Vec<(semver::Version, &String)> = tags
        .iter()
        .filter_map(|tag| {
            semver::Version::parse(tag.strip_prefix('v').unwrap_or(tag))
                .ok()
                .map(|version| (version, tag))
        })
        .collect();
    versions.sort();
    let available = versions.iter().map(|(_, tag)| (*tag).clone()).collect();
    let best = versions
        .iter()
        .rev()
        .find(|(version, _)| match constraint {
            Some(constraint) => constraint.matches(version),
            None => version.pre.is_empty(),
        })
        .map(|(_, tag)| (*tag).clone());
    (best, available)
}

/// One pulled component.
struct Pulled {
    bytes: Vec<u8>,
    manifest_digest: String,
    component_digest: String,
}

async fn pull(
    name: &str,
    source: &Source,
    reference: &Reference,
) -> Result<Pulled, DistributionError> {
    let failed = |message: String| DistributionError::Registry {
        name: name.to_owned(),
        action: "cannot pull",
        reference: format!("oci://{reference}"),
        message,
    };
    let image = source
        .client()
        .pull(reference, &auth_for(&source.registry))
        .await
        .map_err(|error| {
            let missing = error
                .downcast_ref::<oci_client::errors::OciDistributionError>()
                .is_some_and(is_not_found);
            if missing {
                failed("the registry has no such tag or digest".to_owned())
            } else {
                failed(format!("{error:#}"))
            }
        })?;
    let manifest_digest = image
        .digest
        .clone()
        .ok_or_else(|| failed("the registry sent no manifest digest".to_owned()))?;
    let layer = image
        .layers
        .into_iter()
        .next()
        .ok_or_else(|| failed("the artifact has no layer".to_owned()))?;
    let bytes = layer.data.to_vec();
    let component_digest = sha256(&bytes);
    if let Some(manifest) = &image.manifest
        && let Some(declared) = manifest.layers.first()
        && declared.digest != component_digest
    {
        return Err(DistributionError::DigestMismatch {
            name: name.to_owned(),
            expected_from: "the OCI manifest",
            expected: declared.digest.clone(),
            actual_from: "the layer received",
            actual: component_digest,
        });
    }
    Ok(Pulled {
        bytes,
        manifest_digest,
        component_digest,
    })
}

/// Push the component at `path`, the plugin `name`, to `oci://<reference>`
/// (which must name a tag) in the CNCF Wasm layout; returns the manifest
/// digest.
pub async fn push(name: &str, path: &Path, reference: &str) -> Result<String, DistributionError> {
    let source = Source::parse(name, reference)?;
    let Some(tag) = &source.tag else {
        return Err(DistributionError::InvalidReference {
            name: name.to_owned(),
            reference: reference.to_owned(),
            message: "a push needs a tag, the plugin's version (`:0.1.0`)".to_owned(),
        });
    };
    let bytes = std::fs::read(path).map_err(|error| DistributionError::Read {
        path: path.to_owned(),
        error,
    })?;
    let (config, layer) = WasmConfig::from_raw_component(bytes, None).map_err(|error| {
        DistributionError::NotAComponent {
            path: path.to_owned(),
            message: format!("{error:#}"),
        }
    })?;
    let image = source.with_tag(tag);
    let response = source
        .client()
        .push(&image, &auth_for(&source.registry), layer, config, None)
        .await
        .map_err(|error| DistributionError::Registry {
            name: name.to_owned(),
            action: "cannot push to",
            reference: format!("oci://{reference}"),
            message: format!("{error:#}"),
        })?;
    // The manifest URL ends with the digest the registry stored it under.
    let digest = source
        .client()
        .fetch_manifest_digest(&image, &auth_for(&source.registry))
        .await
        .map_err(|error| DistributionError::Registry {
            name: name.to_owned(),
            action: "cannot read back",
            reference: response.manifest_url.clone(),
            message: error.to_string(),
        })?;
    Ok(digest)
}

/// Credentials for `registry` from the docker config, else anonymous.
pub fn auth_for(registry: &str) -> RegistryAuth {
    let Some(text) = docker_config().and_then(|path| std::fs::read_to_string(path).ok()) else {
        return RegistryAuth::Anonymous;
    };
    docker_auth(&text, registry).unwrap_or(RegistryAuth::Anonymous)
}

/// The docker config file: `$DOCKER_CONFIG/config.json`, else
/// `~/.docker/config.json`.
pub fn docker_config() -> Option<PathBuf> {
    std::env::var_os("DOCKER_CONFIG")
        .map(|dir| PathBuf::from(dir).join("config.json"))
        .or_else(|| {
            std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".docker/config.json"))
        })
}

/// The registry logins helm should use for OCI charts: `$HELM_REGISTRY_CONFIG`,
/// else helm's own `~/.config/helm/registry/config.json` when `helm registry
/// login` wrote one, else the docker config. Only an existing file counts.
pub fn helm_registry_config() -> Option<PathBuf> {
    let helm_default = std::env::var_os("HOME")
        .map(|home| PathBuf::from(home).join(".config/helm/registry/config.json"));
    [
        std::env::var_os("HELM_REGISTRY_CONFIG").map(PathBuf::from),
        helm_default,
        docker_config(),
    ]
    .into_iter()
    .flatten()
    .find(|path| path.is_file())
}

/// The chart repositories `helm repo add` recorded, for helm to find a chart
/// named `<repository>/<chart>` with the repository's login:
/// `HELM_REPOSITORY_CONFIG` (`$HELM_REPOSITORY_CONFIG`, else helm's
/// `repositories.yaml` under `$XDG_CONFIG_HOME` or `~/.config`) and
/// `HELM_REPOSITORY_CACHE` (`$HELM_REPOSITORY_CACHE`, else helm's
/// `repository` directory under `$XDG_CACHE_HOME` or `~/.cache`), the ones
/// that exist.
pub fn helm_repositories() -> Vec<(&'static str, PathBuf)> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let base = |xdg: &str, fallback: &str| {
        std::env::var_os(xdg)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|home| home.join(fallback)))
    };
    let config = std::env::var_os("HELM_REPOSITORY_CONFIG")
        .map(PathBuf::from)
        .or_else(|| {
            base("XDG_CONFIG_HOME", ".config").map(|dir| dir.join("helm/repositories.yaml"))
        })
        .filter(|path| path.is_file());
    let cache = std::env::var_os("HELM_REPOSITORY_CACHE")
        .map(PathBuf::from)
        .or_else(|| base("XDG_CACHE_HOME", ".cache").map(|dir| dir.join("helm/repository")))
        .filter(|path| path.is_dir());
    [
        ("HELM_REPOSITORY_CONFIG", config),
        ("HELM_REPOSITORY_CACHE", cache),
    ]
    .into_iter()
    .filter_map(|(key, path)| Some((key, path?)))
    .collect()
}

/// The basic-auth entry for `registry` in a docker config file.
fn docker_auth(config: &str, registry: &str) -> Option<RegistryAuth> {
    use base64::Engine as _;
    let config: serde_json::Value = serde_json::from_str(config).ok()?;
    let auths = config.get("auths")?.as_object()?;
    let entry = auths.iter().find_map(|(key, entry)| {
        let host = key
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .trim_end_matches('/');
        (host == registry).then_some(entry)
    })?;
    if let Some(encoded) = entry.get("auth").and_then(|a| a.as_str()) {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()?;
        let (user, password) = String::from_utf8(decoded)
            .ok()?
            .split_once(':')
            .map(|(user, password)| (user.to_owned(), password.to_owned()))?;
        return Some(RegistryAuth::Basic(user, password));
    }
    let user = entry.get("username")?.as_str()?;
    let password = entry.get("password")?.as_str()?;
    Some(RegistryAuth::Basic(user.to_owned(), password.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_keep_what_the_user_wrote() {
        let source = Source::parse("p", "127.0.0.1:5000/plugins/configmap").unwrap();
        assert_eq!(source.registry, "127.0.0.1:5000");
        assert_eq!(source.repository, "plugins/configmap");
        assert_eq!(source.tag, None, "no implicit `latest`");
        assert_eq!(
            source.repository_url(),
            "oci://127.0.0.1:5000/plugins/configmap"
        );
        let digest = format!("sha256:{}", "ab".repeat(32));
        let pinned = Source::parse("p", &format!("ghcr.io/acme/x:1.2.3@{digest}")).unwrap();
        assert_eq!(pinned.tag.as_deref(), Some("1.2.3"));
        assert_eq!(pinned.digest.as_deref(), Some(digest.as_str()));
        assert_eq!(
            pinned.reference().to_string(),
            format!("ghcr.io/acme/x@{digest}")
        );
        for hostless in ["configmap", "acme/configmap"] {
            let error = Source::parse("p", hostless).unwrap_err().to_string();
            assert!(error.contains("names no registry host"), "{error}");
        }
        assert!(Source::parse("p", "localhost/acme/configmap").is_ok());
    }

    #[test]
    fn the_newest_matching_semver_tag_wins() {
        let tags: Vec<String> = ["0.1.0", "v0.1.3", "0.2.0", "latest", "0.3.0-rc.1"]
            .map(String::from)
            .to_vec();
        let constraint = semver::VersionReq::parse(">=0.1, <0.2").unwrap();
        let (best, available) = pick_tag(&tags, Some(&constraint));
        assert_eq!(best.as_deref(), Some("v0.1.3"));
        assert_eq!(available, ["0.1.0", "v0.1.3", "0.2.0", "0.3.0-rc.1"]);
        let (best, _) = pick_tag(&tags, None);
        assert_eq!(
            best.as_deref(),
            Some("0.2.0"),
            "no pre-release without asking"
        );
        let none = semver::VersionReq::parse("^9").unwrap();
        assert_eq!(pick_tag(&tags, Some(&none)).0, None);
    }

    #[test]
    fn docker_config_entries_give_basic_auth() {
        // "robot:s3cret" in base64.
        let config = r#"{"auths": {"https://127.0.0.1:5000": {"auth": "cm9ib3Q6czNjcmV0"},
                                   "other.example": {"username": "u", "password": "p"}}}"#;
        let RegistryAuth::Basic(user, password) = docker_auth(config, "127.0.0.1:5000").unwrap()
        else {
            panic!("basic auth expected")
        };
        assert_eq!((user.as_str(), password.as_str()), ("robot", "s3cret"));
        assert!(matches!(
            docker_auth(config, "other.example"),
            Some(RegistryAuth::Basic(..))
        ));
        assert!(docker_auth(config, "ghcr.io").is_none());
    }

    #[test]
    fn the_cache_returns_only_intact_blobs() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::new(Some(dir.path()));
        let digest = sha256(b"component");
        assert!(blobs.get(&digest).is_none());
        blobs.put(b"component");
        assert_eq!(blobs.get(&digest).as_deref(), Some(&b"component"[..]));
        let file = dir
            .path()
            .join("blobs/sha256")
            .join(digest.trim_start_matches("sha256:"));
        std::fs::write(file, b"tampered").unwrap();
        assert!(blobs.get(&digest).is_none(), "a changed file is not served");
    }

    #[test]
    fn a_pin_that_no_longer_matches_the_file_names_what_changed() {
        let pin = PluginPin {
            source: "oci://r/x".into(),
            constraint: Some("^0.1".into()),
            version: "0.1.0".into(),
            manifest_digest: "sha256:m".into(),
            component_digest: "sha256:c".into(),
            world: "w".into(),
            grants: grants_hash(&[]),
        };
        assert!(check_pin("x", &pin, "oci://r/x", Some("^0.1"), &grants_hash(&[])).is_ok());
        let error = check_pin("x", &pin, "oci://r/x", Some("^0.2"), &grants_hash(&[]))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(
                "`version` changed since tazuna.lock pinned it (^0.1 there, ^0.2 in tazuna.yaml)"
            ),
            "{error}"
        );
        assert!(error.contains("tazuna plugin update x"), "{error}");
        let error = check_pin(
            "x",
            &pin,
            "oci://r/x",
            Some("^0.1"),
            &grants_hash(&["exec:helm".into()]),
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("`grants` changed"), "{error}");
    }
}
