//! The `helmfile:` block of a manifest, as Go Tazuna files write it.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use tazuna_sdk::Diagnostic;

/// The `helmfile:` block.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Config {
    /// Render the charts' `crds/` directories too. Off by default, as in `helmfile template`
    /// and Go Tazuna.
    #[serde(default, rename = "includeCRDs")]
    pub include_crds: bool,
    /// Go Tazuna's readiness switch. Tazuna reads it as the manifest's `wait` when the
    /// manifest has none; the plugin itself ignores it.
    pub wait: Option<bool>,
    /// Go Tazuna's readiness timeout, read like `wait`.
    pub timeout_seconds: Option<u64>,
    /// State values for the helmfile's templates (`.Values`, `.StateValues`), by name.
    #[serde(default)]
    pub vars: BTreeMap<String, Var>,
    /// Values files added to every release (`helmfile template --values`), relative to the
    /// directory of the file that declares the manifest.
    #[serde(default)]
    pub extra_value_files: Vec<String>,
    /// The Kubernetes version for `.Capabilities.KubeVersion`; defaults to the target
    /// cluster's.
    pub kube_version: Option<String>,
    /// The helmfile environment (`--environment`). Left out, Tazuna's `-e` is passed when the
    /// helmfile declares that environment, and helmfile's `default` is used otherwise.
    pub environment: Option<String>,
    /// Namespace for namespaced objects that neither their release nor the template gives one,
    /// as Go Tazuna files write it. Same as the manifest's `namespace`; give one or the other.
    pub default_namespace: Option<String>,
    /// Render only the releases that match these label selectors (`--selector`).
    #[serde(default)]
    pub selectors: Vec<String>,
    /// Fetch OCI charts over plain HTTP (a registry without TLS, such as a local one).
    #[serde(default)]
    pub plain_http: bool,
}

/// Where one state value comes from.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Var {
    /// `static` (written here), `env` (an environment variable) or `op` (1Password).
    pub from: From,
    /// The value, with `from: static`.
    #[serde(rename = "static")]
    pub value: Option<serde_json::Value>,
    /// A list value, with `from: static`.
    pub static_slice: Option<Vec<serde_json::Value>>,
    /// A mapping value, with `from: static`.
    pub static_map: Option<serde_json::Map<String, serde_json::Value>>,
    /// The variable's name, with `from: env`.
    pub env: Option<String>,
    /// The 1Password reference, with `from: op`.
    pub op: Option<serde_json::Value>,
}

/// The sources a state value can come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum From {
    /// Written in the block.
    Static,
    /// An environment variable of the Tazuna process.
    Env,
    /// A 1Password item.
    Op,
}

impl Config {
    /// Checks beyond the types: each var has the value its `from` needs.
    pub fn check(&self) -> Vec<Diagnostic> {
        let mut found = Vec::new();
        for (name, var) in &self.vars {
            let at = |field: &str| format!("/vars/{name}{field}");
            match var.from {
                From::Static => {
                    let given = [
                        var.value.is_some(),
                        var.static_slice.is_some(),
                        var.static_map.is_some(),
                    ];
                    if given.iter().filter(|given| **given).count() != 1 {
                        found.push(
                            Diagnostic::error(format!(
                                "var `{name}` is `from: static` and needs exactly one of `static` (a value), `staticSlice` (a list) or `staticMap` (a mapping)"
                            ))
                            .at(at("")),
                        );
                    }
                }
                From::Env | From::Op => found.push(
                    Diagnostic::error(format!(
                        "var `{name}`: `from: {}` is not supported yet; Tazuna will resolve environment and 1Password references through secret providers, which this version does not have. Use `from: static`, or leave the value to the helmfile's own environment files",
                        if var.from == From::Env { "env" } else { "op" }
                    ))
                    .at(at("/from")),
                ),
            }
        }
        found
    }

    /// The state values the vars give, as one JSON mapping.
    pub fn state_values(&self) -> serde_json::Map<String, serde_json::Value> {
        self.vars
            .iter()
            .filter_map(|(name, var)| {
                let value = match (&var.value, &var.static_slice, &var.static_map) {
                    (Some(value), _, _) => value.clone(),
                    (None, Some(list), _) => serde_json::Value::Array(list.clone()),
                    (None, None, Some(map)) => serde_json::Value::Object(map.clone()),
                    (None, None, None) => return None,
                };
                Some((name.clone(), value))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(json: &str) -> Config {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn go_tazuna_blocks_parse() {
        let config = config(
            r#"{"includeCRDs": true, "wait": true, "timeoutSeconds": 120,
                "vars": {"extraLabels": {"from": "static", "staticMap": {"tier": "platform"}},
                         "replicas": {"from": "static", "static": 2},
                         "zones": {"from": "static", "staticSlice": ["a", "b"]}},
                "defaultNamespace": "platform",
                "extraValueFiles": ["values/common.yaml"], "kubeVersion": "1.30.0"}"#,
        );
        assert!(config.include_crds);
        assert!(config.check().is_empty(), "{:?}", config.check());
        assert_eq!(
            serde_json::Value::Object(config.state_values()),
            serde_json::json!({"extraLabels": {"tier": "platform"}, "replicas": 2, "zones": ["a", "b"]})
        );
    }

    #[test]
    fn unsupported_or_incomplete_vars_are_named() {
        let config = config(
            r#"{"vars": {"token": {"from": "op", "op": {"vault": "v"}},
                         "email": {"from": "env", "env": "EMAIL"},
                         "empty": {"from": "static"}}}"#,
        );
        let found = config.check();
        let at: Vec<_> = found.iter().filter_map(|d| d.path.as_deref()).collect();
        assert_eq!(at, ["/vars/email/from", "/vars/empty", "/vars/token/from"]);
        assert!(
            found[0]
                .message
                .contains("`from: env` is not supported yet")
        );
    }
}
