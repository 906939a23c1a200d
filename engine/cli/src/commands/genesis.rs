//! `tazuna secret-to-genesissecret`: turn Kubernetes Secrets into GenesisSecret
//! files that name where each value lives, without copying a value.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use serde::Deserialize;
use serde_json::json;

use crate::settings::GlobalSettings;

/// The largest input read.
const MAX_INPUT_BYTES: u64 = 4 * 1024 * 1024;

/// Write a GenesisSecret for each Kubernetes Secret in FILE (Go Tazuna's
/// `secret-to-genesissecret`).
///
/// Each Secret's keys (of `data` and `stringData`) become items of a
/// GenesisSecret read from `--provider`, and its namespace, name, labels,
/// annotations and type become the `kubernetesSecret` output. The values are
/// never copied, printed or kept: store each in the provider under the item
/// name stderr lists, then commit the GenesisSecret in place of the Secret
/// and declare it as a manifest of `type: genesissecret`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  tazuna secret-to-genesissecret secret.yaml > genesissecrets/cloud.yaml\n  tazuna secret-to-genesissecret secret.yaml --provider ops --uri op://my.1password.com/Platform/cloud\n  kubectl get secret cloud -o yaml | tazuna secret-to-genesissecret -"
)]
pub struct SecretToGenesisSecret {
    /// The Secret manifests (one or more YAML documents); `-` reads stdin.
    #[arg(value_name = "FILE")]
    file: PathBuf,

    /// The provider of `spec.providers` the values come from (Go Tazuna's
    /// `default-op` when left out).
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,

    /// The provider's item holding the values (`op://<account>/<vault>/<item>`
    /// for 1Password; envfiles need none).
    #[arg(long, value_name = "URI")]
    uri: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SecretDoc {
    api_version: Option<String>,
    kind: Option<String>,
    #[serde(default)]
    metadata: Metadata,
    #[serde(default, rename = "type")]
    secret_type: Option<String>,
    #[serde(default)]
    data: BTreeMap<String, serde::de::IgnoredAny>,
    #[serde(default)]
    string_data: BTreeMap<String, serde::de::IgnoredAny>,
}

#[derive(Debug, Default, Deserialize)]
struct Metadata {
    name: Option<String>,
    namespace: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

/// Annotations that belong to the live object, not to a declaration.
const LIVE_ANNOTATIONS: &[&str] = &["kubectl.kubernetes.io/last-applied-configuration"];

impl SecretToGenesisSecret {
    /// Convert and print.
    pub fn run(self, _settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        let from = if self.file.as_os_str() == "-" {
            "stdin".to_owned()
        } else {
            format!("`{}`", self.file.display())
        };
        let text = self.read().with_context(|| format!("cannot read {from}"))?;
        let mut out = String::new();
        let mut stored = Vec::new();
        for (index, document) in serde_yaml::Deserializer::from_str(&text).enumerate() {
            let value = serde_yaml::Value::deserialize(document)
                .with_context(|| format!("{from}: document {} is not YAML", index + 1))?;
            if value.is_null() {
                continue;
            }
            // Parsed as a shape that never holds a value, so none stays in memory
            // past this point and none can reach an error message.
            let secret: SecretDoc = serde_yaml::from_value(value).map_err(|_| {
                crate::failure::advised(format!("{from}: document {} is not a Kubernetes Secret manifest", index + 1), "give a file of `kind: Secret` documents, such as `kubectl get secret <name> -o yaml` prints")
            })?;
            let (name, genesis) = self
                .convert(&secret)
                .with_context(|| format!("{from}: document {}", index + 1))?;
            let keys: Vec<String> = secret
                .data
                .keys()
                .chain(secret.string_data.keys())
                .cloned()
                .collect();
            if !out.is_empty() {
                out.push_str("---\n");
            }
            out.push_str(&serde_yaml::to_string(&genesis)?);
            stored.push((name, keys));
        }
        if stored.is_empty() {
            return Err(crate::failure::advised(
                format!("{from} holds no Secret"),
                "give a file of `kind: Secret` documents",
            ));
        }
        outln!("{}", out.trim_end());
        let provider = self.provider.as_deref().unwrap_or("default-op");
        for (name, keys) in &stored {
            eprintln!(
                "Secret `{name}`: store {} in provider `{provider}`{}: {} (no value was copied)",
                if keys.len() == 1 {
                    "this item"
                } else {
                    "these items"
                },
                self.uri
                    .as_deref()
                    .map(|uri| format!(" under `{uri}`"))
                    .unwrap_or_default(),
                keys.join(", ")
            );
        }
        Ok(ExitCode::SUCCESS)
    }

    fn read(&self) -> std::io::Result<String> {
        let mut text = String::new();
        let reader: Box<dyn Read> = if self.file.as_os_str() == "-" {
            Box::new(std::io::stdin())
        } else {
            let file = std::fs::File::open(&self.file)?;
            if !file.metadata()?.is_file() {
                return Err(std::io::Error::other("not a regular file"));
            }
            Box::new(file)
        };
        reader.take(MAX_INPUT_BYTES + 1).read_to_string(&mut text)?;
        if text.len() as u64 > MAX_INPUT_BYTES {
            return Err(std::io::Error::other(format!(
                "larger than {} MiB",
                MAX_INPUT_BYTES / 1024 / 1024
            )));
        }
        Ok(text)
    }

    /// The GenesisSecret for one Secret, and the Secret's name.
    fn convert(&self, secret: &SecretDoc) -> anyhow::Result<(String, serde_json::Value)> {
        let kind = secret.kind.as_deref().unwrap_or_default();
        if kind != "Secret" || secret.api_version.as_deref() != Some("v1") {
            return Err(crate::failure::advised(
                format!(
                    "is `{} {kind}`, not a `v1 Secret`",
                    secret.api_version.as_deref().unwrap_or("?")
                ),
                "only Secrets convert; leave the other objects where they are",
            ));
        }
        let Some(name) = secret.metadata.name.clone() else {
            bail!("the Secret has no `metadata.name`");
        };
        if secret.data.is_empty() && secret.string_data.is_empty() {
            bail!("Secret `{name}` has no `data` or `stringData` keys to convert");
        }
        let items: serde_json::Map<String, serde_json::Value> = secret
            .data
            .keys()
            .chain(secret.string_data.keys())
            .map(|key| (key.clone(), json!({ "mapTo": key })))
            .collect();
        let mut generate = serde_json::Map::new();
        if let Some(uri) = &self.uri {
            generate.insert("uri".into(), json!(uri));
        }
        generate.insert("items".into(), serde_json::Value::Object(items));
        let mut output = serde_json::Map::new();
        if let Some(namespace) = &secret.metadata.namespace {
            output.insert("namespace".into(), json!(namespace));
        }
        output.insert("name".into(), json!(name));
        if !secret.metadata.labels.is_empty() {
            output.insert("labels".into(), json!(secret.metadata.labels));
        }
        let annotations: BTreeMap<&String, &String> = secret
            .metadata
            .annotations
            .iter()
            .filter(|(key, _)| !LIVE_ANNOTATIONS.contains(&key.as_str()))
            .collect();
        if !annotations.is_empty() {
            output.insert("annotations".into(), json!(annotations));
        }
        if let Some(kind) = secret.secret_type.as_deref().filter(|t| *t != "Opaque") {
            output.insert("type".into(), json!(kind));
        }
        let mut spec = serde_json::Map::new();
        if let Some(provider) = &self.provider {
            spec.insert("provider".into(), json!(provider));
        }
        spec.insert("secrets".into(), json!([generate]));
        spec.insert("outputs".into(), json!([{ "kubernetesSecret": output }]));
        Ok((
            name,
            json!({
                "apiVersion": tazuna_core::config::API_VERSION,
                "kind": "GenesisSecret",
                "spec": spec,
            }),
        ))
    }
}
