//! Handing a provider's sync to External Secrets Operator.
//!
//! A provider that declares `handover.externalSecrets` no longer has its
//! references resolved by Tazuna: a Secret whose `stringData` names it is
//! applied as an `ExternalSecret` (`external-secrets.io/v1`) of the same name,
//! against the `SecretStore` or `ClusterSecretStore` the provider names, so
//! the value goes from the store to the cluster without passing through
//! Tazuna. ESO then makes (or, with `creationPolicy: Owner`, takes over) the
//! Secret. This module is the one place that maps a Secret and its
//! references to that object; the reference syntax of each provider type is
//! mapped to ESO's `remoteRef` here.

use serde_json::{Map, Value, json};

/// The provider types whose references map to an ESO `remoteRef`.
pub const HANDOVER_TYPES: &[&str] = &["aws-secrets-manager", "vault"];

/// The `apiVersion` of the objects made.
pub const EXTERNAL_SECRET_API: &str = "external-secrets.io/v1";

/// A provider's `handover:`, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handover {
    /// `SecretStore` or `ClusterSecretStore`.
    pub store_kind: String,
    /// The store's name.
    pub store_name: String,
    /// How often ESO reads the store again (`1h`).
    pub refresh_interval: String,
}

/// Why a Secret cannot be handed over. No variant holds a value.
#[derive(Debug, thiserror::Error)]
pub enum HandoverError {
    /// It also names a provider that is not handed over, or another one.
    #[error(
        "`stringData.{key}` names provider `{other}`, but the Secret's other references go to External Secrets through provider `{provider}`"
    )]
    Mixed {
        key: String,
        provider: String,
        other: String,
    },
    /// A reference that has no `remoteRef` form.
    #[error("`stringData.{key}`: `{reference}` has no External Secrets form: {why}")]
    Reference {
        key: String,
        reference: String,
        why: NoRemoteRef,
    },
}

/// Why a reference has no `remoteRef`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoRemoteRef {
    /// It names no secret.
    #[error("it names no secret")]
    NoSecret,
    /// A query with no `remoteRef.version`.
    #[error("`?{0}` has no `remoteRef.version`")]
    Query(String),
    /// A provider type ESO's references are not mapped for.
    #[error("a provider of type `{0}` cannot hand over")]
    Type(String),
}

impl crate::hint::Hint for HandoverError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            Self::Mixed { .. } => {
                "put the values of each provider in a Secret of their own".to_owned()
            }
            Self::Reference { .. } => {
                "write the reference as docs/secrets.md shows for the provider's type".to_owned()
            }
        })
    }
}

/// The `remoteRef` of `reference` for a provider of type `kind`.
pub fn remote_ref(kind: &str, reference: &str) -> Result<Value, NoRemoteRef> {
    let (rest, key) = match reference.split_once('#') {
        Some((rest, key)) if !key.is_empty() => (rest, Some(key)),
        Some((rest, _)) => (rest, None),
        None => (reference, None),
    };
    let (name, query) = match rest.split_once('?') {
        Some((name, query)) => (name, Some(query)),
        None => (rest, None),
    };
    if name.is_empty() {
        return Err(NoRemoteRef::NoSecret);
    }
    let mut remote = Map::new();
    remote.insert("key".to_owned(), Value::String(name.to_owned()));
    if let Some(key) = key {
        // A JSON pointer is a path of keys; ESO reads `a.b`.
        let property = key.trim_start_matches('/').replace('/', ".");
        remote.insert("property".to_owned(), Value::String(property));
    }
    let version = match (kind, query.map(|q| q.split_once('=').unwrap_or((q, "")))) {
        (_, None) => None,
        ("aws-secrets-manager", Some(("version_stage", stage))) => Some(stage.to_owned()),
        ("aws-secrets-manager", Some(("version_id", id))) => Some(format!("uuid/{id}")),
        ("vault", Some(("version", number))) if number.parse::<u64>().is_ok() => {
            Some(number.to_owned())
        }
        (_, Some((query, _))) => return Err(NoRemoteRef::Query(query.to_owned())),
    };
    if let Some(version) = version {
        remote.insert("version".to_owned(), Value::String(version));
    }
    if !HANDOVER_TYPES.contains(&kind) {
        return Err(NoRemoteRef::Type(kind.to_owned()));
    }
    Ok(Value::Object(remote))
}

/// Go template text that renders `value` as it is (ESO templates its
/// `target.template.data`): a value with `{{` becomes a quoted literal.
fn literal(value: &str) -> String {
    if value.contains("{{") {
        format!("{{{{ {} }}}}", Value::String(value.to_owned()))
    } else {
        value.to_owned()
    }
}

/// The `ExternalSecret` that stands for `secret` (a rendered `v1` Secret),
/// whose references `refs` (`(key, reference)` of `stringData`) all name
/// `provider`, of type `kind`, handed over as `handover` says. Its other
/// `stringData` and `data` keys, its type, labels and annotations go into
/// the target's template, merged with what ESO fetches.
pub fn external_secret(
    secret: &Value,
    provider: &str,
    kind: &str,
    handover: &Handover,
    refs: &[(String, String)],
) -> Result<Value, HandoverError> {
    let metadata = &secret["metadata"];
    let name = metadata["name"].clone();
    let mut data = Vec::new();
    for (key, reference) in refs {
        let remote = remote_ref(kind, reference).map_err(|why| HandoverError::Reference {
            key: key.clone(),
            reference: format!("ref+{provider}:{reference}"),
            why,
        })?;
        data.push(json!({ "secretKey": key, "remoteRef": remote }));
    }
    let mut template_data = Map::new();
    if let Some(plain) = secret["stringData"].as_object() {
        for (key, value) in plain {
            if refs.iter().any(|(k, _)| k == key) {
                continue;
            }
            if let Some(text) = value.as_str() {
                template_data.insert(key.clone(), Value::String(literal(text)));
            }
        }
    }
    if let Some(encoded) = secret["data"].as_object() {
        for (key, value) in encoded {
            if let Some(b64) = value.as_str() {
                template_data.insert(
                    key.clone(),
                    Value::String(format!(
                        "{{{{ {} | b64dec }}}}",
                        Value::String(b64.to_owned())
                    )),
                );
            }
        }
    }
    let mut template = Map::new();
    template.insert("engineVersion".to_owned(), json!("v2"));
    template.insert("mergePolicy".to_owned(), json!("Merge"));
    if let Some(kind) = secret["type"].as_str() {
        template.insert("type".to_owned(), json!(kind));
    }
    let mut template_metadata = Map::new();
    for field in ["labels", "annotations"] {
        if let Some(map) = metadata[field].as_object().filter(|m| !m.is_empty()) {
            template_metadata.insert(field.to_owned(), Value::Object(map.clone()));
        }
    }
    if !template_metadata.is_empty() {
        template.insert("metadata".to_owned(), Value::Object(template_metadata));
    }
    if !template_data.is_empty() {
        template.insert("data".to_owned(), Value::Object(template_data));
    }
    let mut object_metadata = Map::new();
    object_metadata.insert("name".to_owned(), name.clone());
    if let Some(namespace) = metadata.get("namespace") {
        object_metadata.insert("namespace".to_owned(), namespace.clone());
    }
    for field in ["labels", "annotations"] {
        if let Some(map) = metadata[field].as_object().filter(|m| !m.is_empty()) {
            object_metadata.insert(field.to_owned(), Value::Object(map.clone()));
        }
    }
    Ok(json!({
        "apiVersion": EXTERNAL_SECRET_API,
        "kind": "ExternalSecret",
        "metadata": object_metadata,
        "spec": {
            "refreshInterval": handover.refresh_interval,
            "secretStoreRef": { "kind": handover.store_kind, "name": handover.store_name },
            "target": {
                "name": name,
                "creationPolicy": "Owner",
                "template": template,
            },
            "data": data,
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handover() -> Handover {
        Handover {
            store_kind: "ClusterSecretStore".into(),
            store_name: "aws".into(),
            refresh_interval: "1h".into(),
        }
    }

    #[test]
    fn references_map_to_remote_refs_per_provider_type() {
        assert_eq!(
            remote_ref("aws-secrets-manager", "argocd/repo#password").unwrap(),
            json!({"key": "argocd/repo", "property": "password"})
        );
        assert_eq!(
            remote_ref("aws-secrets-manager", "db?version_stage=AWSPREVIOUS#/a/b").unwrap(),
            json!({"key": "db", "property": "a.b", "version": "AWSPREVIOUS"})
        );
        assert_eq!(
            remote_ref("aws-secrets-manager", "db?version_id=v1").unwrap()["version"],
            "uuid/v1"
        );
        assert_eq!(
            remote_ref("vault", "secret/app?version=3#token").unwrap(),
            json!({"key": "secret/app", "property": "token", "version": "3"})
        );
        assert!(remote_ref("vault", "secret/app?version=x").is_err());
        assert!(remote_ref("envfile", "KEY").is_err());
        assert!(remote_ref("aws-secrets-manager", "#k").is_err());
    }

    #[test]
    fn a_secret_becomes_an_external_secret_with_its_plain_keys_and_metadata_templated() {
        let secret = json!({
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": "repo", "namespace": "argocd",
                         "labels": {"argocd.argoproj.io/secret-type": "repository"}},
            "stringData": {"url": "https://git.example.com/x.git", "password": "ref+aws:argocd/repo#password",
                           "odd": "{{ not a template }}"},
            "data": {"raw": "aGk="},
        });
        let refs = [("password".to_owned(), "argocd/repo#password".to_owned())];
        let es =
            external_secret(&secret, "aws", "aws-secrets-manager", &handover(), &refs).unwrap();
        assert_eq!(es["kind"], "ExternalSecret");
        assert_eq!(es["metadata"]["namespace"], "argocd");
        assert_eq!(
            es["spec"]["secretStoreRef"],
            json!({"kind": "ClusterSecretStore", "name": "aws"})
        );
        assert_eq!(es["spec"]["target"]["name"], "repo");
        assert_eq!(es["spec"]["data"][0]["remoteRef"]["property"], "password");
        let template = &es["spec"]["target"]["template"];
        assert_eq!(template["data"]["url"], "https://git.example.com/x.git");
        assert_eq!(template["data"]["odd"], "{{ \"{{ not a template }}\" }}");
        assert_eq!(template["data"]["raw"], "{{ \"aGk=\" | b64dec }}");
        assert_eq!(
            template["metadata"]["labels"]["argocd.argoproj.io/secret-type"],
            "repository"
        );
        assert_eq!(template["type"], "Opaque");
        assert!(!es.to_string().contains("ref+aws"));
    }
}
