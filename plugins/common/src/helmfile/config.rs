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
    /// Give the helmfile's templates the selected cluster's values
    /// (`spec.environments.<env>.values`, with the cluster's own over them) as state values
    /// (`.Values`, `.StateValues`), below `vars`, which win. Off by default.
    #[serde(default)]
    pub environment_values: bool,
    /// Values files added to every release (`helmfile template --values`), relative to the
    /// directory of the file that declares the manifest.
    #[serde(default)]
    pub extra_value_files: Vec<String>,
    /// The Kubernetes version for `.Capabilities.KubeVersion`; defaults to the target
    /// cluster's.
    pub kube_version: Option<String>,
    /// The helmfile environment (`--environment`). Left out, Tazuna's `-e` is passed, and
    /// declared for a helmfile that does not declare it (see `render`).
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
    /// The hosts the helmfile reaches, as URLs: the chart repositories of its `repositories:`
    /// (`https://charts.example.com`, or `http://127.0.0.1:<port>` for one on this machine) and
    /// the git servers of remote helmfiles. helmfile, and the helm it runs, reach these hosts
    /// and the others this block names, and no other.
    #[serde(default)]
    pub remotes: Vec<String>,
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
    /// The 1Password field, with `from: op`.
    pub op: Option<OpSelector>,
}

/// A 1Password field, as Go Tazuna's helmfile vars name it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpSelector {
    /// Whether `field` is the field's `id` or its `label`. `op read` takes either, so this
    /// makes no difference.
    pub key: Option<OpKey>,
    /// The vault.
    pub vault: String,
    /// The item.
    pub item: String,
    /// The field, by label or ID.
    pub field: String,
}

/// How an [`OpSelector`] names its field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OpKey {
    /// By the field's ID.
    Id,
    /// By the field's label.
    Label,
}

/// The sources a state value can come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum From {
    /// Written in the block.
    Static,
    /// An environment variable of the Tazuna process, read by the host for helmfile.
    Env,
    /// A 1Password field, read by the host with the built-in `default-op` provider for
    /// helmfile.
    Op,
}

impl Config {
    /// Checks beyond the types: each var has the value its `from` needs.
    pub fn check(&self) -> Vec<Diagnostic> {
        let mut found = crate::remotes::check(&self.remotes)
            .err()
            .unwrap_or_default();
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
                From::Env => {
                    let valid = var.env.as_deref().is_some_and(|env| {
                        !env.is_empty()
                            && env
                                .bytes()
                                .all(|b| b.is_ascii_alphanumeric() || b == b'_')
                    });
                    if !valid {
                        found.push(
                            Diagnostic::error(format!(
                                "var `{name}` is `from: env` and needs `env`, the name of an environment variable (letters, digits and `_`)"
                            ))
                            .at(at("/env")),
                        );
                    }
                }
                From::Op => match &var.op {
                    None => found.push(
                        Diagnostic::error(format!(
                            "var `{name}` is `from: op` and needs `op` with `vault`, `item` and `field`"
                        ))
                        .at(at("")),
                    ),
                    Some(op) => {
                        for (field, value) in
                            [("vault", &op.vault), ("item", &op.item), ("field", &op.field)]
                        {
                            if value.is_empty() || value.contains(['/', '#']) {
                                found.push(
                                    Diagnostic::error(format!(
                                        "var `{name}`: `op.{field}` must be a non-empty name without `/` or `#`"
                                    ))
                                    .at(at(&format!("/op/{field}"))),
                                );
                            }
                        }
                    }
                },
            }
        }
        found
    }

    /// The vars whose values the host resolves, with the reference it resolves: `ref+env:NAME`
    /// for `from: env`, `ref+default-op:op://<vault>/<item>/<field>` for `from: op`.
    pub fn referenced_vars(&self) -> Vec<(&str, String)> {
        self.vars
            .iter()
            .filter_map(|(name, var)| {
                let reference = match (var.from, &var.env, &var.op) {
                    (From::Env, Some(env), _) => format!("ref+env:{env}"),
                    (From::Op, _, Some(op)) => {
                        format!("ref+default-op:op://{}/{}/{}", op.vault, op.item, op.field)
                    }
                    _ => return None,
                };
                Some((name.as_str(), reference))
            })
            .collect()
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
    fn incomplete_vars_are_named() {
        let config = config(
            r#"{"vars": {"token": {"from": "op", "op": {"vault": "v", "item": "a/b", "field": ""}},
                         "email": {"from": "env"},
                         "shell": {"from": "env", "env": "$(id)"},
                         "empty": {"from": "static"},
                         "missing": {"from": "op"}}}"#,
        );
        let found = config.check();
        let at: Vec<_> = found.iter().filter_map(|d| d.path.as_deref()).collect();
        assert_eq!(
            at,
            [
                "/vars/email/env",
                "/vars/empty",
                "/vars/missing",
                "/vars/shell/env",
                "/vars/token/op/item",
                "/vars/token/op/field"
            ]
        );
    }

    #[test]
    fn env_and_op_vars_become_references_for_the_host() {
        let config = config(
            r#"{"vars": {"token": {"from": "op", "op": {"key": "label", "vault": "Platform", "item": "acme", "field": "token"}},
                         "email": {"from": "env", "env": "ACME_EMAIL"},
                         "region": {"from": "static", "static": "ap-northeast-1"}}}"#,
        );
        assert!(config.check().is_empty());
        assert_eq!(
            config.referenced_vars(),
            [
                ("email", "ref+env:ACME_EMAIL".to_owned()),
                (
                    "token",
                    "ref+default-op:op://Platform/acme/token".to_owned()
                )
            ]
        );
        assert_eq!(
            serde_json::Value::Object(config.state_values()),
            serde_json::json!({"region": "ap-northeast-1"})
        );
    }
}
