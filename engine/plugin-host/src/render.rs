//! Rendering: one plugin call per manifest, all in parallel, into Kubernetes
//! objects.
//!
//! Each manifest is rendered in its own sandboxed call. A manifest whose plugin
//! fails, traps, loops or returns malformed documents gets a [`RenderError`]
//! naming the manifest and the plugin; every other manifest still renders.
//! Results come back in the order the manifests were given, whatever order the
//! calls finished in.

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;
use tazuna_core::config::Manifest;
use tazuna_core::hint::Hint;
use tazuna_core::lock::{Lockfile, SourcePin};
pub use tazuna_core::render::{ClusterInfo, EmitScope, Object, Rendered};

use crate::host::{
    Diagnostic, HostError, PluginError, PluginHost, PluginRender, RenderRequest, RenderedDocument,
    Severity, SourcePlugin,
};
use crate::plugins::PluginSet;

/// What every render of one run shares.
#[derive(Debug, Clone, Default)]
pub struct RenderSettings {
    /// The environment selected with `-e`.
    pub environment: Option<String>,
    /// That environment's `values`.
    pub values: Value,
    /// The target cluster, when known.
    pub cluster: Option<ClusterInfo>,
    /// Most calls at once; 0 means one per CPU.
    pub concurrency: usize,
}

/// Why one manifest did not render.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// No plugin serves the manifest's type.
    #[error("manifest `{manifest}`: no plugin serves type `{kind}`")]
    NoPlugin {
        /// Manifest name.
        manifest: String,
        /// Its type.
        kind: String,
    },
    /// The sandbox stopped the plugin, or it crashed.
    #[error("manifest `{manifest}`: {error}")]
    Host {
        /// Manifest name.
        manifest: String,
        /// What the host saw.
        error: HostError,
    },
    /// The plugin returned an error.
    #[error("manifest `{manifest}`: plugin `{plugin}` failed: {}", describe(error))]
    Plugin {
        /// Manifest name.
        manifest: String,
        /// Plugin name.
        plugin: String,
        /// The plugin's error.
        error: PluginError,
    },
    /// A secret reference in a rendered Secret could not be resolved.
    #[error("manifest `{manifest}`: {message}")]
    Secret {
        /// Manifest name.
        manifest: String,
        /// What went wrong, naming the object, the key and the provider
        /// (never a value).
        message: String,
        /// What to do about it.
        hint: Option<String>,
    },
    /// A value a secret provider gave the plugin's tools came back outside a
    /// Secret's values (another object, or a Secret's name, labels,
    /// annotations or type).
    #[error(
        "manifest `{manifest}`: {object}, rendered by plugin `{plugin}`, holds a value that a secret provider gave its tools; such values may only land in a Secret's `data` or `stringData`"
    )]
    SecretOutsideSecret {
        /// Manifest name.
        manifest: String,
        /// Plugin name.
        plugin: String,
        /// The object, as `Kind namespace/name`.
        object: String,
    },
    /// An object that is not a Secret comes out otherwise when the secrets
    /// the plugin's tools got are withheld: it carries something made of them.
    #[error(
        "manifest `{manifest}`: {object}, rendered by plugin `{plugin}`, comes out otherwise when the secrets its tools got are withheld: it carries something made of a secret (a piece, a hash, its length, another spelling); such values may only land in a Secret's `data` or `stringData`"
    )]
    DerivedFromSecret {
        /// Manifest name.
        manifest: String,
        /// Plugin name.
        plugin: String,
        /// The object, as `Kind namespace/name`.
        object: String,
    },
    /// Upstream content changed under a pinned location and version.
    #[error(
        "manifest `{manifest}`: `{location}` {version} now has digest `{found}`, but tazuna.lock pinned `{pinned}`"
    )]
    UpstreamChanged {
        /// Manifest name.
        manifest: String,
        /// The chart or artifact.
        location: String,
        /// Its version.
        version: String,
        /// The digest in tazuna.lock.
        pinned: String,
        /// The digest received now.
        found: String,
    },
    /// The plugin returned more objects or bytes than one render may.
    #[error(
        "manifest `{manifest}`: plugin `{plugin}` returned {found}, more than the {limit} one render may return"
    )]
    TooMuchOutput {
        /// Manifest name.
        manifest: String,
        /// Plugin name.
        plugin: String,
        /// What it returned, as `N objects` or `N MiB`.
        found: String,
        /// The cap, in the same unit.
        limit: String,
    },
    /// The plugin returned something that is not a Kubernetes object.
    #[error("manifest `{manifest}`: plugin `{plugin}` returned an invalid document{}: {message}", origin.as_deref().map(|o| format!(" (from `{o}`)")).unwrap_or_default())]
    InvalidOutput {
        /// Manifest name.
        manifest: String,
        /// Plugin name.
        plugin: String,
        /// The document's origin, if the plugin gave one.
        origin: Option<String>,
        /// What is wrong with it.
        message: String,
    },
}

impl RenderError {
    /// The manifest this error belongs to.
    pub fn manifest(&self) -> &str {
        match self {
            Self::NoPlugin { manifest, .. }
            | Self::Host { manifest, .. }
            | Self::Plugin { manifest, .. }
            | Self::UpstreamChanged { manifest, .. }
            | Self::Secret { manifest, .. }
            | Self::SecretOutsideSecret { manifest, .. }
            | Self::DerivedFromSecret { manifest, .. }
            | Self::TooMuchOutput { manifest, .. }
            | Self::InvalidOutput { manifest, .. } => manifest,
        }
    }
}

impl Hint for RenderError {
    fn hint(&self) -> Option<String> {
        match self {
            Self::SecretOutsideSecret { .. } | Self::DerivedFromSecret { .. } => Some(
                "use the value in a Secret (and refer to that Secret), or take it from a non-secret source"
                    .to_owned(),
            ),
            Self::TooMuchOutput { .. } => Some(
                "split the manifest into several (each is rendered on its own), or check that its source does not generate objects without bound"
                    .to_owned(),
            ),
            Self::InvalidOutput { origin, .. } => Some(format!(
                "fix the document{} so it is one Kubernetes object with `apiVersion`, `kind` and `metadata.name` (Tazuna applies every object by name)",
                origin.as_deref().map(|o| format!(" at `{o}`")).unwrap_or_default()
            )),
            Self::UpstreamChanged { manifest, .. } => Some(format!(
                "the source serves other content under the same version; if that is intended, delete `sources.{manifest}` from tazuna.lock so the next run pins it again"
            )),
            Self::Host { error, .. } => error.hint(),
            Self::Secret { hint, .. } => hint.clone(),
            _ => None,
        }
    }
}

/// `Kind namespace/name` (or `Kind name`) of a rendered object.
fn describe_object(value: &Value) -> String {
    let kind = value["kind"].as_str().unwrap_or("object");
    let metadata = &value["metadata"];
    let name = metadata["name"]
        .as_str()
        .or_else(|| metadata["generateName"].as_str())
        .unwrap_or_default();
    match metadata["namespace"].as_str() {
        Some(namespace) => format!("{kind} {namespace}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// A plugin error as one line a person can act on.
pub fn describe(error: &PluginError) -> String {
    let diagnostics = |list: &[Diagnostic]| {
        list.iter()
            .map(|d| match &d.path {
                Some(path) if !d.message.starts_with(path.as_str()) => {
                    format!("{path}: {}", d.message)
                }
                _ => d.message.clone(),
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    match error {
        PluginError::InvalidConfig(list) => format!("invalid config: {}", diagnostics(list)),
        PluginError::InvalidInput(list) => format!("invalid input: {}", diagnostics(list)),
        PluginError::NotFound(what) => format!("not found: {what}"),
        PluginError::CapabilityDenied(what) => format!("capability denied: {what}"),
        PluginError::ToolFailed(failure) => format!(
            "`{}` failed{}: {}",
            failure.tool,
            failure
                .exit_code
                .map(|c| format!(" with exit code {c}"))
                .unwrap_or_default(),
            failure.stderr_tail.trim()
        ),
        PluginError::Network(what) => format!("network: {what}"),
        PluginError::Timeout(what) => format!("timed out: {what}"),
        PluginError::Other(what) => what.clone(),
    }
}

/// Render `manifests` in parallel. The result has one entry per manifest, in
/// the same order.
pub fn render_all(
    host: &PluginHost,
    plugins: &PluginSet,
    manifests: &[&Manifest],
    settings: &RenderSettings,
) -> Vec<Result<Rendered, RenderError>> {
    let workers = match settings.concurrency {
        0 => std::thread::available_parallelism().map_or(2, usize::from),
        n => n,
    }
    .min(manifests.len())
    .max(1);
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Rendered, RenderError>>>> =
        Mutex::new((0..manifests.len()).map(|_| None).collect());
    // Each manifest's span belongs to the caller's, not to the worker thread.
    let parent = tracing::Span::current();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(manifest) = manifests.get(index) else {
                        break;
                    };
                    let span = tracing::info_span!(
                        target: tazuna_core::TRACE,
                        parent: &parent,
                        "render manifest",
                        tazuna.manifest = manifest.name.as_str(),
                        tazuna.type = manifest.kind.as_str(),
                        tazuna.objects = tracing::field::Empty,
                        otel.status_code = tracing::field::Empty,
                        otel.status_description = tracing::field::Empty,
                    );
                    let result = span.in_scope(|| render_one(host, plugins, manifest, settings));
                    if let Ok(rendered) = &result {
                        span.record("tazuna.objects", rendered.objects.len());
                    }
                    tazuna_core::trace_status(
                        &span,
                        result.as_ref().map(|_| ()).map_err(ToString::to_string),
                    );
                    results
                        .lock()
                        .expect("no worker panics while holding the lock")[index] = Some(result);
                }
            });
        }
    });
    results
        .into_inner()
        .expect("workers are done")
        .into_iter()
        .map(|slot| slot.expect("every manifest was rendered"))
        .collect()
}

/// The cluster as the WIT contract carries it.
fn to_request(info: &ClusterInfo) -> crate::host::ClusterInfo {
    crate::host::ClusterInfo {
        kube_version: info.kube_version.clone(),
        api_versions: info.api_versions.clone(),
        resources: info
            .resources
            .iter()
            .map(|resource| crate::host::ApiResource {
                group_version: resource.group_version.clone(),
                kind: resource.kind.clone(),
                namespaced: resource.namespaced,
            })
            .collect(),
    }
}

/// Render one manifest.
pub fn render_one(
    host: &PluginHost,
    plugins: &PluginSet,
    manifest: &Manifest,
    settings: &RenderSettings,
) -> Result<Rendered, RenderError> {
    let Some(plugin) = plugins.get(&manifest.kind) else {
        return Err(RenderError::NoPlugin {
            manifest: manifest.name.clone(),
            kind: manifest.kind.clone(),
        });
    };
    let request = RenderRequest {
        manifest_name: manifest.name.clone(),
        path: manifest.path.clone(),
        config: manifest.config.to_string(),
        namespace: manifest.namespace.clone(),
        environment: settings.environment.clone(),
        values: if settings.values.is_null() {
            "{}".to_owned()
        } else {
            settings.values.to_string()
        },
        cluster: settings.cluster.as_ref().map(to_request),
        locked: None,
        workdir: String::new(),
        scratch: String::new(),
    };
    let again = request.clone();
    // The host's failure, or the plugin's, as this manifest's.
    let failed = |result: Result<Result<_, PluginError>, HostError>| {
        result
            .map_err(|error| RenderError::Host {
                manifest: manifest.name.clone(),
                error,
            })?
            .map_err(|error| RenderError::Plugin {
                manifest: manifest.name.clone(),
                plugin: plugin.info().name.clone(),
                error,
            })
    };
    let PluginRender {
        output,
        revealed,
        traits,
    } = failed(host.render(plugin, &manifest.base_dir, request))?;
    for diagnostic in &output.diagnostics {
        match diagnostic.severity {
            Severity::Error | Severity::Warning => {
                tracing::warn!(manifest = %manifest.name, "{}", diagnostic.message);
            }
            Severity::Info => tracing::debug!(manifest = %manifest.name, "{}", diagnostic.message),
        }
    }
    check_output_size(plugin, &manifest.name, &output.manifests)?;
    let mut objects = Vec::with_capacity(output.manifests.len());
    // Kept for the render without the secrets, when there is one.
    let documents = if revealed.is_empty() {
        Vec::new()
    } else {
        output.manifests.clone()
    };
    for doc in output.manifests {
        let object = parse_document(plugin, &manifest.name, doc.content, doc.origin)?;
        // A value may be only where a Secret keeps values: not in its name,
        // labels, annotations or type, which plans and state show.
        let traced = !revealed.is_empty()
            && revealed.found_in(&outside_secret_values(&object.value).to_string());
        if traced {
            return Err(RenderError::SecretOutsideSecret {
                manifest: manifest.name.clone(),
                plugin: plugin.info().name.clone(),
                object: describe_object(&object.value),
            });
        }
        objects.push(object);
    }
    if !revealed.is_empty() {
        // Outside Secrets, a render that got the secrets must be the render
        // that did not: whatever a tool made of a value (upper case, hex, a
        // hash, a piece of it) shows as a difference.
        let withheld = failed(host.render_withheld(plugin, &manifest.base_dir, again))?;
        if let Some(object) = derived_from_secrets(&documents, &withheld.output.manifests) {
            return Err(RenderError::DerivedFromSecret {
                manifest: manifest.name.clone(),
                plugin: plugin.info().name.clone(),
                object,
            });
        }
    }
    Ok(Rendered {
        manifest: manifest.name.clone(),
        plugin: plugin.info().name.clone(),
        plugin_version: plugin.info().version.clone(),
        plugin_digest: plugin.digest().to_owned(),
        objects,
        scope: (!plugin.is_builtin()).then(|| {
            EmitScope::new(plugin.capabilities().iter()).widened(plugin.capabilities().widened())
        }),
        upstream: output
            .resolved
            .into_iter()
            .map(|pin| SourcePin {
                location: pin.location,
                version: pin.version,
                digest: pin.digest,
            })
            .collect(),
        traits: traits.unwrap_or_default(),
    })
}

/// The first object of `real` that `withheld` (the same render without the
/// secrets) does not have just so, outside a Secret's values, as `Kind
/// ns/name`; or one `withheld` has that `real` lacks.
fn derived_from_secrets(
    real: &[RenderedDocument],
    withheld: &[RenderedDocument],
) -> Option<String> {
    fn others(documents: &[RenderedDocument]) -> Vec<(String, Value)> {
        let mut out: Vec<(String, Value)> = documents
            .iter()
            .filter_map(|doc| serde_yaml::from_str::<Value>(&doc.content).ok())
            .map(|value| outside_secret_values(&value))
            .map(|value| (value.to_string(), value))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
    let (real, withheld) = (others(real), others(withheld));
    let keys = |list: &[(String, Value)]| list.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    let withheld_keys = keys(&withheld);
    if let Some((_, value)) = real
        .iter()
        .find(|(key, _)| withheld_keys.binary_search(key).is_err())
    {
        return Some(describe_object(value));
    }
    let real_keys = keys(&real);
    withheld
        .iter()
        .find(|(key, _)| real_keys.binary_search(key).is_err())
        .map(|(_, value)| describe_object(value))
}

/// `value` without the values of a v1 Secret (`data`, `stringData`): the
/// only place a secret may be.
fn outside_secret_values(value: &Value) -> Value {
    let mut value = value.clone();
    if value["kind"] == "Secret"
        && value["apiVersion"] == "v1"
        && let Some(object) = value.as_object_mut()
    {
        object.remove("data");
        object.remove("stringData");
    }
    value
}

/// The most objects one render may return.
pub const MAX_OBJECTS: usize = 100_000;

pub use crate::host::MAX_OUTPUT_BYTES;

/// Refuse an output over [`MAX_OBJECTS`] or [`MAX_OUTPUT_BYTES`] before any
/// of it is parsed.
fn check_output_size(
    plugin: &SourcePlugin,
    manifest: &str,
    documents: &[RenderedDocument],
) -> Result<(), RenderError> {
    let too_much = |found: String, limit: String| RenderError::TooMuchOutput {
        manifest: manifest.to_owned(),
        plugin: plugin.info().name.clone(),
        found,
        limit,
    };
    if documents.len() > MAX_OBJECTS {
        return Err(too_much(
            format!("{} objects", documents.len()),
            format!("{MAX_OBJECTS} objects"),
        ));
    }
    let bytes: usize = documents.iter().map(|doc| doc.content.len()).sum();
    if bytes > MAX_OUTPUT_BYTES {
        let mib = |bytes: usize| bytes.div_ceil(1024 * 1024);
        return Err(too_much(
            format!("{} MiB of documents", mib(bytes)),
            format!("{} MiB", mib(MAX_OUTPUT_BYTES)),
        ));
    }
    Ok(())
}

/// Check each render's upstream pins against `lock`, and record new ones in it.
///
/// A render that got content with another digest for a location and version
/// `lock` already pins becomes an [`RenderError::UpstreamChanged`]: the same
/// version must give the same objects on day 400 as on day one. A new location
/// or version is recorded; the returned lines say what was pinned.
pub fn check_pins(
    lock: &mut Lockfile,
    results: &mut [Result<Rendered, RenderError>],
) -> Vec<String> {
    let mut pinned_now = Vec::new();
    for result in results.iter_mut() {
        let Ok(rendered) = result else { continue };
        let known = lock.sources.get(&rendered.manifest);
        let changed = rendered.upstream.iter().find_map(|now| {
            let before = known?
                .iter()
                .find(|p| p.location == now.location && p.version == now.version)?;
            match (&before.digest, &now.digest) {
                (Some(was), Some(is)) if was != is => Some((now.clone(), was.clone(), is.clone())),
                _ => None,
            }
        });
        if let Some((pin, pinned, found)) = changed {
            *result = Err(RenderError::UpstreamChanged {
                manifest: rendered.manifest.clone(),
                location: pin.location,
                version: pin.version.unwrap_or_default(),
                pinned,
                found,
            });
            continue;
        }
        if rendered.upstream.is_empty() || known == Some(&rendered.upstream) {
            continue;
        }
        for pin in &rendered.upstream {
            pinned_now.push(format!(
                "pinned `{}`{}{} for manifest `{}` in tazuna.lock",
                pin.location,
                pin.version
                    .as_deref()
                    .map(|v| format!(" {v}"))
                    .unwrap_or_default(),
                pin.digest
                    .as_deref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default(),
                rendered.manifest
            ));
        }
        lock.sources
            .insert(rendered.manifest.clone(), rendered.upstream.clone());
    }
    pinned_now
}

/// Parse one document a plugin returned. JSON is the fast path; anything else
/// is read as YAML.
fn parse_document(
    plugin: &SourcePlugin,
    manifest: &str,
    content: String,
    origin: Option<String>,
) -> Result<Object, RenderError> {
    let invalid = |message: String, origin: Option<String>| RenderError::InvalidOutput {
        manifest: manifest.to_owned(),
        plugin: plugin.info().name.clone(),
        origin,
        message,
    };
    let trimmed = content.trim_start();
    let parsed: Result<Value, String> = if trimmed.starts_with('{') {
        serde_json::from_str(trimmed).map_err(|e| e.to_string())
    } else {
        serde_yaml::from_str(trimmed).map_err(|e| e.to_string())
    };
    let value = match parsed {
        Ok(value) => value,
        Err(message) => return Err(invalid(message, origin)),
    };
    if let Some(message) = tazuna_core::inventory::identity_problem(&value) {
        return Err(invalid(message, origin));
    }
    Ok(Object {
        value,
        origin,
        generated: Vec::new(),
    })
}

/// What is wrong with a manifest's `path`, found without running its plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathProblem {
    /// Nothing exists there.
    Missing,
    /// It leaves the manifest directory, which is all the plugin can see.
    OutsideManifestDir,
}

/// Check a manifest's `path` against its directory `base`, for `tazuna check`.
/// Globs are only checked for leaving the directory; the plugin expands them.
pub fn check_path(base: &Path, path: &str) -> Option<PathProblem> {
    use std::path::Component;
    let mut depth: usize = 0;
    for component in Path::new(path).components() {
        match component {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir if depth > 0 => depth -= 1,
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Some(PathProblem::OutsideManifestDir);
            }
        }
    }
    let is_glob = path.contains(['*', '?', '[']);
    (!is_glob && !base.join(path).exists()).then_some(PathProblem::Missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin(version: &str, digest: &str) -> SourcePin {
        SourcePin {
            location: "oci://r/charts/hello".into(),
            version: Some(version.into()),
            digest: Some(digest.into()),
        }
    }

    fn rendered(manifest: &str, upstream: Vec<SourcePin>) -> Result<Rendered, RenderError> {
        Ok(Rendered {
            manifest: manifest.into(),
            plugin: "helm".into(),
            plugin_version: "0.1.0".into(),
            plugin_digest: String::new(),
            objects: Vec::new(),
            upstream,
            scope: None,
            traits: Default::default(),
        })
    }

    #[test]
    fn upstream_pins_are_recorded_then_held() {
        let mut lock = Lockfile::default();
        let mut results = vec![
            rendered("hello", vec![pin("0.1.0", "sha256:a")]),
            rendered("local", Vec::new()),
        ];
        let said = check_pins(&mut lock, &mut results);
        assert_eq!(
            said,
            ["pinned `oci://r/charts/hello` 0.1.0 (sha256:a) for manifest `hello` in tazuna.lock"]
        );
        assert_eq!(lock.sources["hello"], [pin("0.1.0", "sha256:a")]);
        assert!(!lock.sources.contains_key("local"));

        // The same content again: nothing to say.
        let mut again = vec![rendered("hello", vec![pin("0.1.0", "sha256:a")])];
        assert!(check_pins(&mut lock, &mut again).is_empty());
        assert!(again[0].is_ok());

        // A new version is a new pin.
        let mut newer = vec![rendered("hello", vec![pin("0.2.0", "sha256:b")])];
        assert_eq!(check_pins(&mut lock, &mut newer).len(), 1);
        assert_eq!(lock.sources["hello"], [pin("0.2.0", "sha256:b")]);

        // Other content under a pinned version is refused, and the pin stays.
        let mut swapped = vec![rendered("hello", vec![pin("0.2.0", "sha256:c")])];
        assert!(check_pins(&mut lock, &mut swapped).is_empty());
        let error = swapped[0].as_ref().unwrap_err().to_string();
        assert!(
            error.contains("`oci://r/charts/hello` 0.2.0 now has digest `sha256:c`, but tazuna.lock pinned `sha256:b`"),
            "{error}"
        );
        assert_eq!(lock.sources["hello"], [pin("0.2.0", "sha256:b")]);
    }

    #[test]
    fn paths_that_leave_the_manifest_directory_are_caught() {
        let base = Path::new(env!("CARGO_MANIFEST_DIR"));
        assert_eq!(check_path(base, "src"), None);
        assert_eq!(check_path(base, "src/../src/lib.rs"), None);
        assert_eq!(check_path(base, "*.toml"), None);
        assert_eq!(
            check_path(base, "nothing-here.yaml"),
            Some(PathProblem::Missing)
        );
        assert_eq!(
            check_path(base, "../outside"),
            Some(PathProblem::OutsideManifestDir)
        );
        assert_eq!(
            check_path(base, "src/../../x"),
            Some(PathProblem::OutsideManifestDir)
        );
        assert_eq!(
            check_path(base, "/etc/passwd"),
            Some(PathProblem::OutsideManifestDir)
        );
    }
}
