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
//! declaring it. A provider whose type names a plugin of `spec.plugins` uses
//! that plugin, loaded (and pinned, for `oci://`) like a source plugin.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::Value;
use tazuna_core::config::Provider;

use crate::host::{PluginError, PluginHost};
use crate::plugins::PluginSet;
use crate::render::{RenderError, Rendered, describe};

/// What a reference value starts with.
pub const PREFIX: &str = "ref+";

/// The provider Go Tazuna used when a GenesisSecret named none: 1Password.
pub const DEFAULT_PROVIDER: &str = "default-op";

/// The type of [`DEFAULT_PROVIDER`].
const DEFAULT_PROVIDER_TYPE: &str = "onepassword";

/// `ref+<provider>:<reference>` taken apart, or `None` for any other value.
pub fn parse(value: &str) -> Option<(&str, &str)> {
    let (provider, reference) = value.strip_prefix(PREFIX)?.split_once(':')?;
    let valid = !provider.is_empty()
        && provider
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    (valid && !reference.is_empty()).then_some((provider, reference))
}

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

/// Replace the references in every rendered Secret. A render whose reference
/// cannot be resolved becomes a [`RenderError::Secret`] naming the object, the
/// key and the provider; the others go on.
pub fn resolve_all(
    host: &PluginHost,
    plugins: &PluginSet,
    providers: &[Provider],
    working_dir: &Path,
    results: &mut [Result<Rendered, RenderError>],
) {
    let found = find(results);
    if found.is_empty() {
        return;
    }
    let mut by_provider: BTreeMap<&str, Vec<&Found>> = BTreeMap::new();
    for item in &found {
        by_provider.entry(&item.provider).or_default().push(item);
    }
    let mut failed: BTreeMap<usize, String> = BTreeMap::new();
    let mut values: HashMap<(String, String), Vec<u8>> = HashMap::new();
    for (provider, items) in by_provider {
        let declared = providers.iter().find(|p| p.name == provider);
        let (kind, config, dir) = match declared {
            Some(p) => (
                p.kind.as_str(),
                p.config.to_string(),
                p.origin
                    .file
                    .parent()
                    .filter(|dir| !dir.as_os_str().is_empty())
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| working_dir.to_owned()),
            ),
            None if provider == DEFAULT_PROVIDER => (
                DEFAULT_PROVIDER_TYPE,
                "{}".to_owned(),
                working_dir.to_owned(),
            ),
            None => {
                let known: Vec<String> = providers
                    .iter()
                    .map(|p| format!("`{}`", p.name))
                    .chain([format!("`{DEFAULT_PROVIDER}`")])
                    .collect();
                for item in items {
                    failed.entry(item.result).or_insert_with(|| {
                        format!(
                            "{}: `stringData.{}` names provider `{provider}`, which `spec.providers` does not declare\nhint: the providers are {}",
                            object_name(results, item),
                            item.key,
                            known.join(", ")
                        )
                    });
                }
                continue;
            }
        };
        let Some(plugin) = plugins.resolver(kind) else {
            for item in items {
                failed.entry(item.result).or_insert_with(|| {
                    format!("provider `{provider}`: no resolver of type `{kind}` was loaded")
                });
            }
            continue;
        };
        let mut refs: Vec<String> = items.iter().map(|i| i.reference.clone()).collect();
        refs.sort();
        refs.dedup();
        match host.resolve(plugin, &dir, &config, &refs) {
            Ok(answers) => {
                for (reference, answer) in refs.iter().zip(answers) {
                    match answer {
                        Ok(secret) => {
                            values.insert((provider.to_owned(), reference.clone()), secret.value);
                        }
                        Err(error) => {
                            for item in items.iter().filter(|i| &i.reference == reference) {
                                failed
                                    .entry(item.result)
                                    .or_insert_with(|| unresolved(results, item, &error));
                            }
                        }
                    }
                }
            }
            Err(error) => {
                for item in items {
                    failed
                        .entry(item.result)
                        .or_insert_with(|| format!("provider `{provider}`: {error}"));
                }
            }
        }
    }
    for item in &found {
        if failed.contains_key(&item.result) {
            continue;
        }
        let Some(value) = values.get(&(item.provider.clone(), item.reference.clone())) else {
            continue;
        };
        if let Ok(rendered) = &mut results[item.result] {
            set(&mut rendered.objects[item.object].value, &item.key, value);
        }
    }
    for (index, message) in failed {
        let manifest = match &results[index] {
            Ok(rendered) => rendered.manifest.clone(),
            Err(_) => continue,
        };
        results[index] = Err(RenderError::Secret { manifest, message });
    }
}

fn unresolved(
    results: &[Result<Rendered, RenderError>],
    item: &Found,
    error: &PluginError,
) -> String {
    format!(
        "{}: `stringData.{}`: provider `{}` could not resolve its reference: {}",
        object_name(results, item),
        item.key,
        item.provider,
        describe(error)
    )
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

/// The provider types whose resolvers [`resolve_all`] will call for the
/// references in `results`: the types of the providers they name (1Password
/// for `default-op`). Providers `spec.providers` does not declare are left
/// out; [`resolve_all`] reports them.
pub fn needed_types<'a>(
    providers: &'a [Provider],
    results: &[Result<Rendered, RenderError>],
) -> Vec<&'a str> {
    let mut types: Vec<&str> = find(results)
        .iter()
        .filter_map(
            |item| match providers.iter().find(|p| p.name == item.provider) {
                Some(provider) => Some(provider.kind.as_str()),
                None if item.provider == DEFAULT_PROVIDER => Some(DEFAULT_PROVIDER_TYPE),
                None => None,
            },
        )
        .collect();
    types.sort_unstable();
    types.dedup();
    types
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
