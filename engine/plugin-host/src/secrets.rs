//! Secret references in rendered Secrets, resolved through the providers of
//! `spec.providers`.
//!
//! A value in a Secret's `stringData` that reads `ref+<provider>:<reference>`
//! is replaced by what the provider's resolver (a wasm component of the
//! `secret-resolver-plugin` world) returns for `<reference>`. This happens
//! only when Tazuna is about to compare with or write to a cluster (`plan`,
//! `apply`, `verify`, `state diff`, `state drift`): `tazuna build` prints the
//! references as they are, so it never shows a value. The values then go
//! where every Secret value goes: to the API server, into keyed hashes in
//! state, and nowhere else; plans redact them and no error quotes them.
//!
//! Providers of type `envfile` and `onepassword` are built in; `default-op`
//! is the built-in 1Password provider Go Tazuna files may name without
//! declaring it. `env` is built into the host: its references name
//! environment variables of the Tazuna process. A provider whose type names a
//! plugin of `spec.plugins` uses that plugin, loaded (and pinned, for
//! `oci://`) like a source plugin.
//!
//! [`ProviderSecrets`] resolves the same references for tools, when a plugin
//! hands one to a tool it runs (see [`crate::host::ToolSecrets`]).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;
use tazuna_core::config::{Manifest, Provider};
use tazuna_core::render::ReferenceRefused;

use crate::host::{HostSettings, PluginHost, ToolSecret, ToolSecrets};
use crate::plugins::PluginSet;
pub use crate::references::{PREFIX, parse};
use crate::render::{RenderError, Rendered, describe};

/// The provider Go Tazuna used when a GenesisSecret named none: 1Password.
pub const DEFAULT_PROVIDER: &str = "default-op";

/// The type of [`DEFAULT_PROVIDER`].
const DEFAULT_PROVIDER_TYPE: &str = "onepassword";

/// The built-in provider whose references name environment variables of the
/// Tazuna process: `ref+env:CI_DEPLOY_TOKEN`.
pub const ENV_PROVIDER: &str = "env";

/// One reference found in a rendered Secret.
struct Found {
    /// Index of the render in the results.
    result: usize,
    /// Index of the object in that render.
    object: usize,
    /// The `stringData` key.
    key: String,
    provider: String,
    reference: String,
}

/// Replace the references in every rendered Secret, through `secrets`. A
/// render whose reference cannot be resolved becomes a
/// [`RenderError::Secret`] naming the object, the key and the provider; the
/// others go on.
pub fn resolve_all(
    secrets: &ProviderSecrets,
    manifests: &[&Manifest],
    results: &mut [Result<Rendered, RenderError>],
) {
    let found = find(results);
    if found.is_empty() {
        return;
    }
    let mut failed: BTreeMap<usize, Failure> = BTreeMap::new();
    let mut values: HashMap<(&str, &str), Vec<u8>> = HashMap::new();
    // A third-party plugin does not decide where secrets go: its references
    // resolve only with a grant, and none is resolved for a render that has
    // one it may not use.
    for item in &found {
        let Ok(rendered) = &results[item.result] else {
            continue;
        };
        let written = || {
            manifests.get(item.result).is_some_and(|manifest| {
                user_wrote(
                    manifest,
                    &format!("{PREFIX}{}:{}", item.provider, item.reference),
                )
            })
        };
        match rendered.may_reference(&item.provider, &item.reference, written) {
            Ok(()) => {}
            Err(ReferenceRefused::Grant(needed)) => {
                failed.entry(item.result).or_insert_with(|| {
                    (
                        format!(
                            "{}: `stringData.{}` refers to provider `{}`, which plugin `{}` may not use",
                            object_name(results, item),
                            item.key,
                            item.provider,
                            rendered.plugin
                        ),
                        Some(format!(
                            "if you trust the plugin with that secret, add `{needed}` to its `grants` in `spec.plugins` (the plugin must request it too)"
                        )),
                    )
                });
            }
            Err(ReferenceRefused::Fetched) => {
                let fetched: Vec<&str> = rendered
                    .upstream
                    .iter()
                    .map(|pin| pin.location.as_str())
                    .collect();
                failed.entry(item.result).or_insert_with(|| {
                    (
                        format!(
                            "{}: `stringData.{}` refers to provider `{}`, but the reference comes from content fetched from {}, not from your files: a reference resolves only where you wrote it",
                            object_name(results, item),
                            item.key,
                            item.provider,
                            fetched.join(", ")
                        ),
                        Some("if this Secret should hold that value, write the reference in the manifest's own values (its block in tazuna.yaml or a values file it names)".to_owned()),
                    )
                });
            }
        }
    }
    let handed = hand_over(secrets, &found, results, &mut failed);
    let mut by_provider: BTreeMap<&str, Vec<&Found>> = BTreeMap::new();
    for item in &found {
        if !handed.contains(&(item.result, item.object)) {
            by_provider.entry(&item.provider).or_default().push(item);
        }
    }
    for (provider, items) in by_provider {
        let items: Vec<&Found> = items
            .into_iter()
            .filter(|item| !failed.contains_key(&item.result))
            .collect();
        if items.is_empty() {
            continue;
        }
        let mut refs: Vec<String> = items.iter().map(|i| i.reference.clone()).collect();
        refs.sort();
        refs.dedup();
        let answers = match secrets.resolve_each(provider, &refs) {
            Ok(answers) => answers,
            Err(failure) => {
                for item in items {
                    failed.entry(item.result).or_insert_with(|| match &failure {
                        ProviderFailure::Undeclared { known } => (
                            format!(
                                "{}: `stringData.{}` {}",
                                object_name(results, item),
                                item.key,
                                undeclared(provider)
                            ),
                            Some(format!("the providers are {known}")),
                        ),
                        ProviderFailure::Failed(why) => (why.clone(), None),
                    });
                }
                continue;
            }
        };
        for (reference, answer) in refs.iter().zip(answers) {
            let items = items.iter().filter(|i| &i.reference == reference);
            match answer {
                Ok(value) => {
                    for item in items {
                        values.insert((&item.provider, &item.reference), value.clone());
                    }
                }
                Err(why) => {
                    for item in items {
                        failed.entry(item.result).or_insert_with(|| {
                            (
                                format!(
                                    "{}: `stringData.{}`: {why}",
                                    object_name(results, item),
                                    item.key
                                ),
                                None,
                            )
                        });
                    }
                }
            }
        }
    }
    for item in &found {
        if failed.contains_key(&item.result) {
            continue;
        }
        let Some(value) = values.get(&(item.provider.as_str(), item.reference.as_str())) else {
            continue;
        };
        if let Ok(rendered) = &mut results[item.result] {
            set(&mut rendered.objects[item.object].value, &item.key, value);
        }
    }
    for (index, (message, hint)) in failed {
        let manifest = match &results[index] {
            Ok(rendered) => rendered.manifest.clone(),
            Err(_) => continue,
        };
        results[index] = Err(RenderError::Secret {
            manifest,
            message,
            hint,
        });
    }
}

/// A manifest's failure: what is wrong, and a hint.
type Failure = (String, Option<String>);

/// Secrets whose references name a provider that hands its sync to External
/// Secrets Operator become `ExternalSecret` objects
/// ([`tazuna_core::handover`]); none of their references is resolved. The
/// objects handed over, by render and object index.
fn hand_over(
    secrets: &ProviderSecrets,
    found: &[Found],
    results: &mut [Result<Rendered, RenderError>],
    failed: &mut BTreeMap<usize, Failure>,
) -> std::collections::BTreeSet<(usize, usize)> {
    let mut handed = std::collections::BTreeSet::new();
    let mut by_object: BTreeMap<(usize, usize), Vec<&Found>> = BTreeMap::new();
    for item in found {
        if !failed.contains_key(&item.result) {
            by_object
                .entry((item.result, item.object))
                .or_default()
                .push(item);
        }
    }
    for ((result, object), items) in by_object {
        let Some((provider, handover)) = items.iter().find_map(|item| {
            let provider = secrets.providers.iter().find(|p| p.name == item.provider)?;
            Some((provider, provider.handover.as_ref()?))
        }) else {
            continue;
        };
        let name = object_name(results, items[0]);
        if let Some(other) = items.iter().find(|item| item.provider != provider.name) {
            let error = tazuna_core::handover::HandoverError::Mixed {
                key: other.key.clone(),
                provider: provider.name.clone(),
                other: other.provider.clone(),
            };
            failed.entry(result).or_insert_with(|| {
                (
                    format!("{name}: {error}"),
                    tazuna_core::hint::Hint::hint(&error),
                )
            });
            continue;
        }
        let refs: Vec<(String, String)> = items
            .iter()
            .map(|item| (item.key.clone(), item.reference.clone()))
            .collect();
        let Ok(rendered) = &mut results[result] else {
            continue;
        };
        match tazuna_core::handover::external_secret(
            &rendered.objects[object].value,
            &provider.name,
            &provider.kind,
            handover,
            &refs,
        ) {
            Ok(external) => {
                rendered.objects[object].value = external;
                handed.insert((result, object));
            }
            Err(error) => {
                failed.entry(result).or_insert_with(|| {
                    (
                        format!("{name}: {error}"),
                        tazuna_core::hint::Hint::hint(&error),
                    )
                });
            }
        }
    }
    handed
}

fn object_name(results: &[Result<Rendered, RenderError>], item: &Found) -> String {
    let Ok(rendered) = &results[item.result] else {
        return "Secret".to_owned();
    };
    let metadata = &rendered.objects[item.object].value["metadata"];
    match (metadata["namespace"].as_str(), metadata["name"].as_str()) {
        (Some(namespace), Some(name)) => format!("Secret {namespace}/{name}"),
        (None, Some(name)) => format!("Secret {name}"),
        _ => "Secret".to_owned(),
    }
}

/// Where the references of one provider go.
enum Target<'a> {
    /// The Tazuna process's environment: provider [`ENV_PROVIDER`].
    Environment,
    /// The state of an input of `spec.inputs`: its sensitive outputs, read
    /// by the host (see [`tazuna_core::inputs`]).
    Input(&'a tazuna_core::inputs::Input),
    /// A resolver of type `kind`, called with the provider's block as JSON
    /// and the directory of the file that declares the provider.
    Resolver {
        kind: &'a str,
        config: String,
        dir: PathBuf,
    },
}

/// Where provider `name` sends its references; `None` when nothing declares it.
fn target<'a>(
    providers: &'a [Provider],
    inputs: &'a [tazuna_core::inputs::Input],
    working_dir: &Path,
    name: &str,
) -> Option<Target<'a>> {
    if let Some(input) = inputs.iter().find(|input| input.name == name) {
        return Some(Target::Input(input));
    }
    match providers.iter().find(|p| p.name == name) {
        Some(p) => Some(Target::Resolver {
            kind: p.kind.as_str(),
            config: p.config.to_string(),
            dir: p
                .origin
                .file
                .parent()
                .filter(|dir| !dir.as_os_str().is_empty())
                .map(Path::to_path_buf)
                .unwrap_or_else(|| working_dir.to_owned()),
        }),
        None if name == DEFAULT_PROVIDER => Some(Target::Resolver {
            kind: DEFAULT_PROVIDER_TYPE,
            config: "{}".to_owned(),
            dir: working_dir.to_owned(),
        }),
        None if name == ENV_PROVIDER => Some(Target::Environment),
        None => None,
    }
}

/// The providers a reference may name, for the hint of one that names
/// another.
fn known_providers(providers: &[Provider], inputs: &[tazuna_core::inputs::Input]) -> String {
    providers
        .iter()
        .map(|p| format!("`{}`", p.name))
        .chain(
            inputs
                .iter()
                .map(|input| format!("`{}` (an input)", input.name)),
        )
        .chain([format!("`{DEFAULT_PROVIDER}`"), format!("`{ENV_PROVIDER}`")])
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a reference to an undeclared provider says, after what names it.
fn undeclared(provider: &str) -> String {
    format!("names provider `{provider}`, which `spec.providers` does not declare")
}

/// The value of environment variable `name` of the Tazuna process.
fn from_environment(name: &str) -> Result<Vec<u8>, String> {
    #[cfg(unix)]
    let bytes = |value: std::ffi::OsString| std::os::unix::ffi::OsStringExt::into_vec(value);
    // Elsewhere the environment is not bytes; a value that is not Unicode is
    // read with replacement characters.
    #[cfg(not(unix))]
    let bytes = |value: std::ffi::OsString| value.to_string_lossy().into_owned().into_bytes();
    std::env::var_os(name).map(bytes).ok_or_else(|| {
        format!("environment variable `{name}` is not set (provider `{ENV_PROVIDER}`)")
    })
}

/// Loads the resolver for a provider type, on the host given.
pub type ResolverLoader = dyn Fn(&PluginHost, &str) -> Result<PluginSet, String> + Send + Sync;

/// The values behind references, through the providers of `spec.providers`:
/// for rendered Secrets ([`resolve_all`]) and for tools, when a plugin hands
/// one a reference ([`ToolSecrets`]). Resolvers run on a host of their own,
/// started and loaded (by `load`) on first use; each reference is resolved
/// once per run. `env` values are configuration, not secrets; every other
/// provider's values are.
pub struct ProviderSecrets {
    providers: Vec<Provider>,
    inputs: Vec<tazuna_core::inputs::Input>,
    working_dir: PathBuf,
    host_settings: HostSettings,
    load: Box<ResolverLoader>,
    state: Mutex<ResolvedSoFar>,
    /// How resolvers read a cluster's Secret, where clusters are reached.
    clusters: Option<crate::host::SharedClusterSecrets>,
}

/// Why a provider gave no values at all.
#[derive(Debug, Clone)]
pub enum ProviderFailure {
    /// `spec.providers` does not declare it; the providers there are.
    Undeclared {
        /// The providers it may name, listed.
        known: String,
    },
    /// Its resolver could not be loaded or called; the text names the
    /// provider.
    Failed(String),
}

/// One reference's value, or why it has none (a message that names no value).
type Answer = Result<Vec<u8>, String>;

/// Resolvers loaded and answers given by a [`ProviderSecrets`].
#[derive(Default)]
struct ResolvedSoFar {
    /// Started on first use.
    host: Option<PluginHost>,
    resolvers: HashMap<String, PluginSet>,
    answers: HashMap<(String, String), Answer>,
}

impl ProviderSecrets {
    /// Resolve through `providers` (relative provider paths against
    /// `working_dir`), running resolvers as `load` loads them on a host of
    /// `host_settings`, started on first use.
    pub fn new(
        providers: Vec<Provider>,
        inputs: Vec<tazuna_core::inputs::Input>,
        working_dir: PathBuf,
        host_settings: HostSettings,
        load: Box<ResolverLoader>,
    ) -> Self {
        Self {
            providers,
            inputs,
            working_dir,
            host_settings,
            load,
            state: Mutex::new(ResolvedSoFar::default()),
            clusters: None,
        }
    }

    /// Let resolvers read Secrets of clusters through `clusters` (the
    /// `kubernetes` resolver); without it, such a read is refused.
    pub fn with_clusters(mut self, clusters: crate::host::SharedClusterSecrets) -> Self {
        self.clusters = Some(clusters);
        self
    }

    /// The answers for `refs` of `provider`, in order. References not
    /// resolved yet go to the provider's resolver in one call.
    pub fn resolve_each(
        &self,
        provider: &str,
        refs: &[String],
    ) -> Result<Vec<Answer>, ProviderFailure> {
        let (kind, config, dir) =
            match target(&self.providers, &self.inputs, &self.working_dir, provider) {
                Some(Target::Environment) => {
                    return Ok(refs.iter().map(|name| from_environment(name)).collect());
                }
                Some(Target::Input(input)) => {
                    return Ok(refs
                        .iter()
                        .map(|output| {
                            tazuna_core::inputs::sensitive_value(input, output)
                                .map_err(|error| error.to_string())
                        })
                        .collect());
                }
                Some(Target::Resolver { kind, config, dir }) => (kind, config, dir),
                None => {
                    return Err(ProviderFailure::Undeclared {
                        known: known_providers(&self.providers, &self.inputs),
                    });
                }
            };
        let failed = |why: String| ProviderFailure::Failed(format!("provider `{provider}`: {why}"));
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let state = &mut *state;
        let key = |reference: &str| (provider.to_owned(), reference.to_owned());
        let mut missing: Vec<String> = Vec::new();
        for reference in refs {
            if !state.answers.contains_key(&key(reference)) && !missing.contains(reference) {
                missing.push(reference.clone());
            }
        }
        if !missing.is_empty() {
            let host = match &mut state.host {
                Some(host) => host,
                empty => {
                    let host = PluginHost::new(self.host_settings.clone())
                        .map_err(|error| failed(error.to_string()))?;
                    if let Some(clusters) = &self.clusters {
                        host.set_cluster_secrets(clusters.clone());
                    }
                    empty.insert(host)
                }
            };
            if !state.resolvers.contains_key(kind) {
                let set = (self.load)(host, kind).map_err(failed)?;
                state.resolvers.insert(kind.to_owned(), set);
            }
            let plugin = state.resolvers[kind]
                .resolver(kind)
                .ok_or_else(|| failed(format!("no resolver of type `{kind}`")))?;
            let answers = host
                .resolve(plugin, &dir, &config, &missing)
                .map_err(|error| failed(error.to_string()))?;
            for (reference, answer) in missing.iter().zip(answers) {
                let answer = answer.map(|secret| secret.value).map_err(|error| {
                    format!(
                        "provider `{provider}` could not resolve its reference: {}",
                        describe(&error)
                    )
                });
                state.answers.insert(key(reference), answer);
            }
        }
        Ok(refs
            .iter()
            .map(|reference| {
                state
                    .answers
                    .get(&key(reference))
                    .cloned()
                    .unwrap_or_else(|| {
                        Err(format!(
                            "provider `{provider}` gave no answer for a reference"
                        ))
                    })
            })
            .collect())
    }
}

impl ToolSecrets for ProviderSecrets {
    fn resolve(&self, provider: &str, reference: &str) -> Result<ToolSecret, String> {
        let answer = match self.resolve_each(provider, &[reference.to_owned()]) {
            Ok(mut answers) => answers.pop().unwrap_or_else(|| Err("no answer".to_owned())),
            Err(ProviderFailure::Undeclared { known }) => Err(format!(
                "`ref+{provider}:…` {}; the providers are {known}",
                undeclared(provider)
            )),
            Err(ProviderFailure::Failed(why)) => Err(why),
        };
        answer.map(|value| ToolSecret {
            value,
            secret: provider != ENV_PROVIDER,
        })
    }
}

/// The most a search for a reference reads of the user's files for one
/// manifest, and of one file.
const WRITTEN_BYTES: u64 = 64 * 1024 * 1024;
const WRITTEN_FILE: u64 = 4 * 1024 * 1024;
const WRITTEN_FILES: usize = 2_000;

/// Whether `reference` (`ref+<provider>:<reference>`) stands in the user's
/// own files for `manifest`: its block in `tazuna.yaml`, a file that block
/// names, or a file under its `path`. Links are not followed, and the search
/// is bounded ([`WRITTEN_BYTES`], [`WRITTEN_FILE`], [`WRITTEN_FILES`]).
fn user_wrote(manifest: &Manifest, reference: &str) -> bool {
    let named = crate::config_strings::strings_in(&manifest.config);
    if named.iter().any(|text| holds(text.as_bytes(), reference)) {
        return true;
    }
    let mut pending: Vec<PathBuf> = named
        .iter()
        .filter(|text| {
            !text.contains("://")
                && !Path::new(text).components().any(|c| {
                    !matches!(
                        c,
                        std::path::Component::Normal(_) | std::path::Component::CurDir
                    )
                })
        })
        .map(|text| manifest.base_dir.join(text))
        .chain(manifest.resolved_path())
        .filter(|path| path.starts_with(&manifest.base_dir))
        .collect();
    let (mut read, mut files) = (0u64, 0usize);
    while let Some(path) = pending.pop() {
        let Ok(meta) = path.symlink_metadata() else {
            continue;
        };
        files += 1;
        if files > WRITTEN_FILES || read > WRITTEN_BYTES {
            return false;
        }
        if meta.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&path) {
                pending.extend(entries.flatten().map(|entry| entry.path()));
            }
        } else if meta.is_file() && meta.len() <= WRITTEN_FILE {
            read += meta.len();
            if std::fs::read(&path).is_ok_and(|bytes| holds(&bytes, reference)) {
                return true;
            }
        }
    }
    false
}

/// Whether `text` holds `reference` as a whole reference: what follows it
/// cannot continue it (`ref+env:TOKEN` is not in `ref+env:TOKEN_OLD`).
fn holds(text: &[u8], reference: &str) -> bool {
    let reference = reference.as_bytes();
    if reference.is_empty() || text.len() < reference.len() {
        return false;
    }
    let continues = |byte: u8| byte.is_ascii_alphanumeric() || b"_-./#:@+".contains(&byte);
    text.windows(reference.len())
        .enumerate()
        .any(|(at, window)| {
            window == reference
                && text
                    .get(at + reference.len())
                    .is_none_or(|next| !continues(*next))
        })
}

/// Every reference in the `stringData` of the rendered Secrets.
fn find(results: &[Result<Rendered, RenderError>]) -> Vec<Found> {
    let mut found = Vec::new();
    for (result, rendered) in results.iter().enumerate() {
        let Ok(rendered) = rendered else { continue };
        for (index, object) in rendered.objects.iter().enumerate() {
            let value = &object.value;
            if value["kind"] != "Secret" || value["apiVersion"] != "v1" {
                continue;
            }
            let Some(data) = value["stringData"].as_object() else {
                continue;
            };
            for (key, entry) in data {
                if let Some((provider, reference)) = entry.as_str().and_then(parse) {
                    found.push(Found {
                        result,
                        object: index,
                        key: key.clone(),
                        provider: provider.to_owned(),
                        reference: reference.to_owned(),
                    });
                }
            }
        }
    }
    found
}

/// Put `value` in place of the reference at `stringData.key`: as text when it
/// is UTF-8, else base64 under `data`.
fn set(secret: &mut Value, key: &str, value: &[u8]) {
    match std::str::from_utf8(value) {
        Ok(text) => {
            secret["stringData"][key] = Value::String(text.to_owned());
        }
        Err(_) => {
            use base64::Engine as _;
            if let Some(data) = secret["stringData"].as_object_mut() {
                data.remove(key);
            }
            if !secret["data"].is_object() {
                secret["data"] = Value::Object(Default::default());
            }
            secret["data"][key] =
                Value::String(base64::engine::general_purpose::STANDARD.encode(value));
        }
    }
}

/// The directory relative provider paths resolve against when the provider
/// is not declared in a file (`default-op`).
pub fn working_dir(config_file: &Path) -> PathBuf {
    config_file
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_is_found_whole_in_what_the_user_wrote() {
        assert!(holds(b"token: ref+env:CI_TOKEN\n", "ref+env:CI_TOKEN"));
        assert!(holds(b"\"ref+env:CI_TOKEN\"", "ref+env:CI_TOKEN"));
        assert!(holds(b"ref+env:CI_TOKEN", "ref+env:CI_TOKEN"));
        assert!(!holds(b"token: ref+env:CI_TOKEN_OLD", "ref+env:CI_TOKEN"));
        assert!(!holds(b"ref+vault:a/b/c", "ref+vault:a/b"));
        assert!(!holds(b"", "ref+env:X"));
    }

    #[test]
    fn only_well_formed_references_are_references() {
        assert_eq!(
            parse("ref+ops-envfile:DB_PASSWORD"),
            Some(("ops-envfile", "DB_PASSWORD"))
        );
        assert_eq!(
            parse("ref+primary-op:op://my/Platform/item#field"),
            Some(("primary-op", "op://my/Platform/item#field"))
        );
        for plain in [
            "s3cret",
            "ref+:x",
            "ref+p:",
            "ref+a b:x",
            "refs+p:x",
            "op://a/b/c",
        ] {
            assert_eq!(parse(plain), None, "{plain}");
        }
    }

    #[test]
    fn text_stays_in_string_data_and_bytes_move_to_data() {
        let mut secret = serde_json::json!({"stringData": {"a": "ref+p:a", "b": "ref+p:b"}});
        set(&mut secret, "a", b"text");
        set(&mut secret, "b", &[0xff, 0x00]);
        assert_eq!(secret["stringData"], serde_json::json!({"a": "text"}));
        assert_eq!(secret["data"]["b"], "/wA=");
    }
}
