//! The built-in `genesissecret` source: Go Tazuna's GenesisSecret files.
//!
//! ```yaml
//! apiVersion: tazuna.pepabo.com/v1
//! kind: GenesisSecret
//! spec:
//!   provider: ops-envfile          # a name from spec.providers; `default-op` when left out
//!   secrets:
//!     - uri: op://my.1password.com/Platform/cert-manager
//!       items:
//!         cloudflare-api-token: { mapTo: CLOUDFLARE_API_TOKEN }
//!   static:
//!     url: https://api.example.com
//!   outputs:
//!     - kubernetesSecret: { namespace: cert-manager, name: cloudflare, type: Opaque }
//! ```
//!
//! Each `kubernetesSecret` output becomes a Secret. Its `stringData` holds, for every item, a
//! reference `ref+<provider>:<uri>#<item>` (or `ref+<provider>:<item>` without a `uri`), and the
//! `static` values as they are. The plugin never sees a secret value: the host resolves the
//! references through the provider when it applies, and `tazuna build` shows them unresolved.

use std::collections::BTreeMap;

use serde::Deserialize;
use tazuna_plugin_common::paths;
use tazuna_sdk::{
    Diagnostic, Manifest, NoConfig, PluginError, PluginInfo, RenderOutput, RenderRequest,
    SourcePlugin,
};

/// The provider Go Tazuna used when a GenesisSecret named none.
const DEFAULT_PROVIDER: &str = "default-op";

/// A GenesisSecret file.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GenesisSecret {
    /// What to generate.
    pub spec: Spec,
}

/// `spec` of a GenesisSecret.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// The provider's name in `spec.providers`.
    #[serde(default)]
    pub provider: String,
    /// Values from the provider.
    #[serde(default)]
    pub secrets: Vec<Generate>,
    /// Values written here, not secret.
    #[serde(default, rename = "static")]
    pub static_values: BTreeMap<String, String>,
    /// Where the values go.
    #[serde(default)]
    pub outputs: Vec<Output>,
}

/// One `secrets[]` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Generate {
    /// Go Tazuna's switch between field IDs and labels; `op read` takes either.
    #[serde(default)]
    pub prefer_label: bool,
    /// The item (`op://<account>/<vault>/<item>`); envfiles need none.
    #[serde(default)]
    pub uri: String,
    /// Field (or key) → where it goes.
    #[serde(default)]
    pub items: BTreeMap<String, Item>,
}

/// Where one item goes.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Item {
    /// The key in the Secret; the item's own name when empty.
    #[serde(default)]
    pub map_to: String,
}

/// One `outputs[]` entry: exactly one of the two.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Output {
    /// Print the values (Go Tazuna). Not done: Tazuna never prints a secret value.
    pub stdout: Option<serde_json::Value>,
    /// A Secret in the cluster.
    pub kubernetes_secret: Option<KubernetesSecret>,
}

/// The Secret an output writes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubernetesSecret {
    /// Go Tazuna's kube context for this Secret. Tazuna writes to the cluster it runs against.
    #[serde(default)]
    pub context: String,
    /// Its namespace; the manifest's `namespace` when empty.
    #[serde(default)]
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Its annotations.
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    /// Its `type`; `Opaque` when empty.
    #[serde(default, rename = "type")]
    pub kind: String,
}

/// The `genesissecret` source plugin.
pub struct GenesisSecretSource;

impl SourcePlugin for GenesisSecretSource {
    type Config = NoConfig;

    fn info() -> PluginInfo {
        PluginInfo::new("genesissecret", env!("CARGO_PKG_VERSION")).with_description(
            "Go Tazuna's GenesisSecret files, as Secrets whose values the host resolves through spec.providers.",
        )
    }

    fn render(_: NoConfig, request: &RenderRequest) -> Result<RenderOutput, PluginError> {
        let invalid = |diagnostic: Diagnostic| PluginError::InvalidConfig(vec![diagnostic]);
        let Some(path) = request.path.as_deref().filter(|path| !path.is_empty()) else {
            return Err(invalid(Diagnostic::error(format!(
                "manifest `{}` has type `genesissecret` but no `path` naming its GenesisSecret file",
                request.manifest_name
            ))));
        };
        let file = paths::inside(&request.workdir, path, "path").map_err(invalid)?;
        let text = std::fs::read_to_string(&file).map_err(|error| {
            PluginError::not_found(format_args!("GenesisSecret `{path}`: {error}"))
        })?;
        let secret = read(path, &text)?;
        let (secrets, diagnostics) = secrets(&secret.spec, request.namespace.as_deref(), path)?;
        let mut output = RenderOutput::new(
            secrets
                .iter()
                .map(|object| {
                    Manifest::from_object(object).map(|manifest| manifest.with_origin(path))
                })
                .collect::<Result<_, _>>()?,
        );
        output.diagnostics = diagnostics;
        // Secrets of references: nothing the cluster serves, nothing drawn.
        tazuna_sdk::traits::declare(tazuna_sdk::traits::RenderTraits {
            reads_cluster: false,
            deterministic: true,
        });
        Ok(output)
    }
}

/// Reads the one GenesisSecret document of the file `path` holds (`apiVersion` and `kind` are
/// optional, as in Go Tazuna).
pub fn read(path: &str, text: &str) -> Result<GenesisSecret, PluginError> {
    let invalid =
        |message: String| PluginError::InvalidInput(vec![Diagnostic::error(message).at(path)]);
    let mut documents = Vec::new();
    for document in tazuna_plugin_common::yaml::documents(text) {
        let document = document.map_err(|error| {
            invalid(format!(
                "{} (line {}, column {})",
                error.message, error.line, error.column
            ))
        })?;
        if !document.value.is_null() {
            documents.push(document.value);
        }
    }
    let [document] = <[serde_json::Value; 1]>::try_from(documents).map_err(|documents| {
        invalid(format!(
            "`{path}` must hold one GenesisSecret, not {}",
            documents.len()
        ))
    })?;
    serde_json::from_value(document)
        .map_err(|error| invalid(format!("not a GenesisSecret: {error}")))
}

/// The Secrets a GenesisSecret's outputs describe, with references for its items, and notes
/// about what Tazuna leaves out.
pub fn secrets(
    spec: &Spec,
    default_namespace: Option<&str>,
    origin: &str,
) -> Result<(Vec<serde_json::Value>, Vec<Diagnostic>), PluginError> {
    let problem =
        |message: String| PluginError::InvalidInput(vec![Diagnostic::error(message).at(origin)]);
    let provider = if spec.provider.is_empty() {
        DEFAULT_PROVIDER
    } else {
        spec.provider.as_str()
    };
    let mut data = BTreeMap::new();
    for generate in &spec.secrets {
        for (name, item) in &generate.items {
            let key = if item.map_to.is_empty() {
                name
            } else {
                &item.map_to
            };
            let reference = if generate.uri.is_empty() {
                format!("ref+{provider}:{name}")
            } else {
                format!("ref+{provider}:{}#{name}", generate.uri)
            };
            if data.insert(key.clone(), reference).is_some() {
                return Err(problem(format!("key `{key}` is generated twice")));
            }
        }
    }
    for (key, value) in &spec.static_values {
        if data.insert(key.clone(), value.clone()).is_some() {
            return Err(problem(format!(
                "key `{key}` is both generated and in `static`"
            )));
        }
    }
    if spec.outputs.is_empty() {
        return Err(problem(
            "no `outputs`: say where the values go (`kubernetesSecret`)".to_owned(),
        ));
    }
    let mut secrets = Vec::new();
    let mut notes = Vec::new();
    for output in &spec.outputs {
        match (&output.stdout, &output.kubernetes_secret) {
            (Some(_), None) => notes.push(
                Diagnostic::warning(
                    "a `stdout` output is left out: Tazuna never prints secret values",
                )
                .at(origin),
            ),
            (None, Some(target)) => {
                if !target.context.is_empty() {
                    notes.push(
                        Diagnostic::warning(format!(
                            "`context: {}` of Secret `{}` is not used: Tazuna writes to the cluster it runs against",
                            target.context, target.name
                        ))
                        .at(origin),
                    );
                }
                let namespace = Some(target.namespace.as_str())
                    .filter(|ns| !ns.is_empty())
                    .or(default_namespace.filter(|ns| !ns.is_empty()));
                let mut metadata = serde_json::json!({ "name": target.name });
                if let Some(namespace) = namespace {
                    metadata["namespace"] = namespace.into();
                }
                if !target.labels.is_empty() {
                    metadata["labels"] = serde_json::json!(target.labels);
                }
                if !target.annotations.is_empty() {
                    metadata["annotations"] = serde_json::json!(target.annotations);
                }
                secrets.push(serde_json::json!({
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": metadata,
                    "type": if target.kind.is_empty() { "Opaque" } else { &target.kind },
                    "stringData": data,
                }));
            }
            _ => {
                return Err(problem(
                    "each output needs exactly one of `stdout` or `kubernetesSecret`".to_owned(),
                ));
            }
        }
    }
    Ok((secrets, notes))
}

tazuna_sdk::export_source_plugin!(GenesisSecretSource);

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> Spec {
        read("gs.yaml", yaml).unwrap().spec
    }

    #[test]
    fn a_file_without_one_genesis_secret_is_refused() {
        let error = read(
            "gs.yaml",
            "spec: {}
---
spec: {}
",
        )
        .unwrap_err();
        assert!(
            matches!(&error, PluginError::InvalidInput(d) if d[0].message.contains("must hold one GenesisSecret, not 2"))
        );
        let error = read(
            "gs.yaml",
            "spec:
  secretz: []
",
        )
        .unwrap_err();
        assert!(
            matches!(&error, PluginError::InvalidInput(d) if d[0].message.contains("unknown field `secretz`"))
        );
    }

    #[test]
    fn items_become_references_and_static_values_stay() {
        let spec = spec(
            "apiVersion: tazuna.pepabo.com/v1\nkind: GenesisSecret\nspec:\n  provider: primary-op\n  secrets:\n    - uri: op://my/Platform/cert-manager\n      preferLabel: true\n      items:\n        cloudflare-api-token: {mapTo: CLOUDFLARE_API_TOKEN}\n        plain: {}\n  static:\n    url: https://api.example.com\n  outputs:\n    - kubernetesSecret: {name: cloudflare, namespace: cert-manager, labels: {a: b}, type: kubernetes.io/tls, context: prod}\n    - stdout: {}\n",
        );
        let (secrets, notes) = secrets(&spec, None, "gs.yaml").unwrap();
        assert_eq!(
            secrets[0],
            serde_json::json!({
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "cloudflare", "namespace": "cert-manager", "labels": {"a": "b"}},
                "type": "kubernetes.io/tls",
                "stringData": {
                    "CLOUDFLARE_API_TOKEN": "ref+primary-op:op://my/Platform/cert-manager#cloudflare-api-token",
                    "plain": "ref+primary-op:op://my/Platform/cert-manager#plain",
                    "url": "https://api.example.com"
                }
            })
        );
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes
                .iter()
                .any(|n| n.message.contains("`stdout` output is left out"))
        );
        assert!(notes.iter().any(|n| n.message.contains("`context: prod`")));
    }

    #[test]
    fn go_tazuna_defaults_apply() {
        // The Go implementation's own test fixture: no provider, no uri.
        let spec = spec(
            "apiVersion: tazuna.pepabo.com/v1\nkind: GenesisSecret\nspec:\n  secrets:\n    - items:\n        accessKeyID:\n          mapTo: AWS_ACCESS_KEY_ID\n  outputs:\n    - kubernetesSecret:\n        name: sample-secret\n        namespace: default \n",
        );
        let (secrets, _) = secrets(&spec, Some("ignored"), "gs.yaml").unwrap();
        assert_eq!(
            secrets[0]["stringData"]["AWS_ACCESS_KEY_ID"],
            "ref+default-op:accessKeyID"
        );
        assert_eq!(secrets[0]["type"], "Opaque");
        assert_eq!(secrets[0]["metadata"]["namespace"], "default");
    }

    #[test]
    fn clashing_keys_and_missing_outputs_are_errors() {
        let clash = spec(
            "spec:\n  secrets:\n    - items: {a: {mapTo: K}, b: {mapTo: K}}\n  outputs:\n    - kubernetesSecret: {name: x}\n",
        );
        assert!(secrets(&clash, None, "gs.yaml").is_err());
        let none = spec("spec:\n  static: {a: b}\n");
        let error = secrets(&none, None, "gs.yaml").unwrap_err();
        assert!(
            matches!(&error, PluginError::InvalidInput(d) if d[0].message.contains("no `outputs`"))
        );
    }
}
