//! The built-in `aws-secrets-manager` secret resolver: values from AWS Secrets Manager.
//!
//! ```yaml
//! spec:
//!   providers:
//!     - name: aws
//!       type: aws-secrets-manager
//!       aws-secrets-manager:
//!         region: eu-west-1          # else the AWS chain's (`AWS_REGION`, the profile's)
//!         profile: platform          # else `AWS_PROFILE`, else `default`
//!         # endpoint: https://vpce-0123.secretsmanager.eu-west-1.vpce.amazonaws.com
//! ```
//!
//! A reference names a secret by name or ARN, then optionally a version and a key of its JSON:
//! `ref+aws:argocd/repo#password`, `ref+aws:argocd/repo?version_stage=AWSPREVIOUS#password`,
//! `ref+aws:arn:aws:secretsmanager:eu-west-1:1:secret:db-AbCdEf?version_id=…`. A key is a top-level
//! key (`#password`) or a JSON pointer (`#/db/password`); a string comes out as it is, anything else
//! as JSON. Without a key the whole value comes out.
//!
//! The plugin holds no credentials and opens no socket: the host sends each request, signed with
//! the standard AWS credential chain (the environment, the shared files with a profile, a web
//! identity token), and only to `*.amazonaws.com` (the capability `net:*.amazonaws.com`) or the
//! `endpoint` the provider names. The references of one run are fetched with
//! `BatchGetSecretValue`, twenty secrets a request, each secret once however many keys of it are
//! used; a reference with a version is fetched on its own (`GetSecretValue`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tazuna_sdk::outbound::{self, AwsSigning, Request, Signing};
use tazuna_sdk::{PluginError, PluginInfo, SecretResolver};

/// The most secrets `BatchGetSecretValue` takes at once.
const BATCH: usize = 20;

/// The `aws-secrets-manager:` block of a provider.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The region; else the one the AWS chain names.
    pub region: Option<String>,
    /// The profile of the shared config and credentials files.
    pub profile: Option<String>,
    /// Where Secrets Manager answers, when not at `https://secretsmanager.<region>.amazonaws.com`
    /// (a VPC endpoint, or a local stand-in in tests).
    pub endpoint: Option<String>,
}

/// One reference, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The secret's name or ARN.
    pub secret: String,
    /// `version_stage=` or `version_id=`, if given.
    pub version: Option<(&'static str, String)>,
    /// The key of its JSON value, if given.
    pub key: Option<String>,
}

/// Read `ref+<provider>:<secret>[?version_stage=S|version_id=I][#key]`.
pub fn parse(reference: &str) -> Result<Reference, PluginError> {
    let (rest, key) = match reference.split_once('#') {
        Some((rest, key)) => (rest, Some(key.to_owned())),
        None => (reference, None),
    };
    let (secret, query) = match rest.split_once('?') {
        Some((secret, query)) => (secret, Some(query)),
        None => (rest, None),
    };
    if secret.is_empty() {
        return Err(PluginError::not_found(
            "a reference with no secret name (write `ref+<provider>:<name or ARN>#<key>`)",
        ));
    }
    let version = match query {
        None => None,
        Some(query) => match query.split_once('=') {
            Some(("version_stage", stage)) if !stage.is_empty() => {
                Some(("VersionStage", stage.to_owned()))
            }
            Some(("version_id", id)) if !id.is_empty() => Some(("VersionId", id.to_owned())),
            _ => {
                return Err(PluginError::not_found(format_args!(
                    "`?{query}` in the reference to `{secret}`: write `?version_stage=<stage>` or `?version_id=<id>`"
                )));
            }
        },
    };
    Ok(Reference {
        secret: secret.to_owned(),
        version,
        key: key.filter(|key| !key.is_empty()),
    })
}

/// The bytes `key` names in a secret's value.
pub fn pick(secret: &str, value: &[u8], key: Option<&str>) -> Result<Vec<u8>, PluginError> {
    let Some(key) = key else {
        return Ok(value.to_vec());
    };
    let json: Value = serde_json::from_slice(value).map_err(|_| {
        PluginError::not_found(format_args!(
            "key `{key}` of secret `{secret}`: its value is not JSON"
        ))
    })?;
    tazuna_sdk::secret::pick(&format!("secret `{secret}`"), &json, key)
}

/// The `aws-secrets-manager` secret resolver.
pub struct AwsSecretsManager;

impl SecretResolver for AwsSecretsManager {
    type Config = Config;
    const SCHEMES: &'static [&'static str] = &["aws-secrets-manager"];

    fn info() -> PluginInfo {
        PluginInfo::new("aws-secrets-manager", env!("CARGO_PKG_VERSION"))
            .with_description("Values from AWS Secrets Manager, fetched and signed by the host.")
            .with_capability("net:*.amazonaws.com")
    }

    fn resolve(config: &Config, reference: &str) -> Result<Vec<u8>, PluginError> {
        Self::resolve_all(config, &[reference.to_owned()])
            .pop()
            .unwrap_or_else(|| Err(PluginError::other("no answer")))
    }

    fn resolve_all(config: &Config, references: &[String]) -> Vec<Result<Vec<u8>, PluginError>> {
        let parsed: Vec<Result<Reference, PluginError>> =
            references.iter().map(|r| parse(r)).collect();
        let store = match Store::new(config) {
            Ok(store) => store,
            Err(error) => return references.iter().map(|_| Err(error.clone())).collect(),
        };
        // Each secret once: the plain ones in batches, a versioned one on its own.
        let mut plain: Vec<&str> = parsed
            .iter()
            .flatten()
            .filter(|r| r.version.is_none())
            .map(|r| r.secret.as_str())
            .collect();
        plain.sort_unstable();
        plain.dedup();
        let mut values: BTreeMap<SecretAt, Result<Vec<u8>, PluginError>> = BTreeMap::new();
        for chunk in plain.chunks(BATCH) {
            match store.batch(chunk) {
                Ok(found) => {
                    for secret in chunk {
                        let value = found.get(*secret).cloned().unwrap_or_else(|| {
                            Err(PluginError::not_found(format_args!(
                                "secret `{secret}` in AWS Secrets Manager"
                            )))
                        });
                        values.insert(((*secret).to_owned(), None), value);
                    }
                }
                Err(error) => {
                    for secret in chunk {
                        values.insert(((*secret).to_owned(), None), Err(error.clone()));
                    }
                }
            }
        }
        for reference in parsed.iter().flatten().filter(|r| r.version.is_some()) {
            let id = (reference.secret.clone(), reference.version.clone());
            values
                .entry(id)
                .or_insert_with(|| store.one(&reference.secret, reference.version.as_ref()));
        }
        parsed
            .into_iter()
            .map(|reference| {
                let reference = reference?;
                let value = values
                    .get(&(reference.secret.clone(), reference.version.clone()))
                    .cloned()
                    .unwrap_or_else(|| Err(PluginError::other("no answer")))?;
                pick(&reference.secret, &value, reference.key.as_deref())
            })
            .collect()
    }
}

/// A secret, and the version asked for.
type SecretAt = (String, Option<(&'static str, String)>);

/// Where the store answers and how requests are signed.
struct Store {
    url: String,
    signing: AwsSigning,
}

impl Store {
    fn new(config: &Config) -> Result<Self, PluginError> {
        let region = config
            .region
            .clone()
            .or_else(|| outbound::aws_region(config.profile.as_deref()))
            .ok_or_else(|| {
                PluginError::InvalidConfig(vec![
                    tazuna_sdk::Diagnostic::error(
                        "no AWS region: set `region` in the provider's block, or `AWS_REGION`",
                    )
                    .at("/region"),
                ])
            })?;
        let url = config
            .endpoint
            .clone()
            .unwrap_or_else(|| format!("https://secretsmanager.{region}.amazonaws.com/"));
        Ok(Self {
            url,
            signing: AwsSigning {
                service: "secretsmanager".to_owned(),
                region,
                profile: config.profile.clone(),
            },
        })
    }

    /// One JSON-1.1 call of the Secrets Manager API.
    fn call(&self, action: &str, body: &Value) -> Result<Value, PluginError> {
        let answer = outbound::send(Request {
            method: "POST".to_owned(),
            url: self.url.clone(),
            headers: vec![
                (
                    "content-type".to_owned(),
                    "application/x-amz-json-1.1".to_owned(),
                ),
                (
                    "x-amz-target".to_owned(),
                    format!("secretsmanager.{action}"),
                ),
            ],
            body: body.to_string().into_bytes(),
            sign: Some(Signing::AwsSigv4(self.signing.clone())),
        })?;
        let json: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
        if answer.status == 200 {
            return Ok(json);
        }
        // AWS names the error in `__type` (`…#ResourceNotFoundException`), or in the `<Code>`
        // of an XML answer (a signature refused); its message names the secret, never a value.
        let text = String::from_utf8_lossy(&answer.body);
        let xml = |tag: &str| {
            let open = format!("<{tag}>");
            let start = text.find(&open)? + open.len();
            let end = text[start..].find(&format!("</{tag}>"))? + start;
            Some(
                text[start..end]
                    .trim_start_matches("<![CDATA[")
                    .trim_end_matches("]]>")
                    .trim()
                    .to_owned(),
            )
        };
        let kind = json["__type"]
            .as_str()
            .or_else(|| json["code"].as_str())
            .map(str::to_owned)
            .or_else(|| xml("Code"))
            .unwrap_or_else(|| "error".to_owned());
        let kind = kind.rsplit('#').next().unwrap_or(&kind).to_owned();
        let message = json["message"]
            .as_str()
            .or_else(|| json["Message"].as_str())
            .map(str::to_owned)
            .or_else(|| xml("Message"))
            .unwrap_or_default();
        let said = format!(
            "AWS Secrets Manager {action}: {kind} ({}){}",
            answer.status,
            if message.is_empty() {
                String::new()
            } else {
                format!(": {message}")
            }
        );
        Err(match kind.as_str() {
            "ResourceNotFoundException" => PluginError::NotFound(said),
            "UnrecognizedClientException"
            | "InvalidSignatureException"
            | "SignatureDoesNotMatch"
            | "InvalidClientTokenId"
            | "AccessDeniedException"
            | "ExpiredTokenException" => PluginError::CapabilityDenied(format!(
                "{said}; check the AWS credentials the chain finds (the environment, profile `{}`)",
                self.signing.profile.as_deref().unwrap_or("default")
            )),
            _ if matches!(answer.status, 401 | 403) => PluginError::CapabilityDenied(said),
            _ => PluginError::Network(said),
        })
    }

    /// The values of `secrets`, by the name or ARN each was asked by; one
    /// missing is absent.
    fn batch(
        &self,
        secrets: &[&str],
    ) -> Result<BTreeMap<String, Result<Vec<u8>, PluginError>>, PluginError> {
        let answer = self.call("BatchGetSecretValue", &json!({ "SecretIdList": secrets }))?;
        let mut found = BTreeMap::new();
        for value in answer["SecretValues"].as_array().into_iter().flatten() {
            let bytes = secret_bytes(value);
            for asked in secrets {
                if value["Name"] == **asked || value["ARN"] == **asked {
                    found.insert((*asked).to_owned(), bytes.clone());
                }
            }
        }
        for error in answer["Errors"].as_array().into_iter().flatten() {
            if let Some(asked) = error["SecretId"].as_str() {
                let code = error["ErrorCode"].as_str().unwrap_or("error");
                found.insert(
                    asked.to_owned(),
                    Err(PluginError::not_found(format_args!(
                        "secret `{asked}` in AWS Secrets Manager ({code})"
                    ))),
                );
            }
        }
        Ok(found)
    }

    /// One secret at a version.
    fn one(
        &self,
        secret: &str,
        version: Option<&(&'static str, String)>,
    ) -> Result<Vec<u8>, PluginError> {
        let mut body = json!({ "SecretId": secret });
        if let Some((field, value)) = version {
            body[*field] = Value::String(value.clone());
        }
        secret_bytes(&self.call("GetSecretValue", &body)?)
    }
}

/// A secret's value: its `SecretString`, or its `SecretBinary` decoded.
fn secret_bytes(value: &Value) -> Result<Vec<u8>, PluginError> {
    if let Some(text) = value["SecretString"].as_str() {
        return Ok(text.as_bytes().to_vec());
    }
    if let Some(encoded) = value["SecretBinary"].as_str() {
        return decode_base64(encoded)
            .ok_or_else(|| PluginError::other("a `SecretBinary` that is not base64"));
    }
    Err(PluginError::not_found(format_args!(
        "a value of secret `{}`",
        value["Name"].as_str().unwrap_or("?")
    )))
}

/// Standard base64, padded or not.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let text: String = text.split_whitespace().collect();
    base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(text.trim_end_matches('='))
        .ok()
}

tazuna_sdk::export_secret_resolver!(AwsSecretsManager);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_names_a_secret_a_version_and_a_key() {
        assert_eq!(
            parse("argocd/repo#password").unwrap(),
            Reference {
                secret: "argocd/repo".into(),
                version: None,
                key: Some("password".into())
            }
        );
        let arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:db-AbCdEf";
        assert_eq!(parse(arn).unwrap().secret, arn);
        assert_eq!(
            parse("db?version_stage=AWSPREVIOUS#/a/b").unwrap().version,
            Some(("VersionStage", "AWSPREVIOUS".into()))
        );
        assert_eq!(
            parse("db?version_id=v1").unwrap().version,
            Some(("VersionId", "v1".into()))
        );
        for bad in ["", "#key", "db?stage=x", "db?version_id="] {
            assert!(
                matches!(parse(bad), Err(PluginError::NotFound(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_key_picks_from_the_json_value_and_never_says_it() {
        let value = br#"{"password": "s3cr3t", "port": 5432, "nested": {"a": "b"}}"#;
        assert_eq!(pick("db", value, Some("password")).unwrap(), b"s3cr3t");
        assert_eq!(pick("db", value, Some("port")).unwrap(), b"5432");
        assert_eq!(pick("db", value, Some("/nested/a")).unwrap(), b"b");
        assert_eq!(pick("db", b"plain", None).unwrap(), b"plain");
        let missing = format!("{:?}", pick("db", value, Some("user")).unwrap_err());
        assert!(missing.contains("key `user` of secret `db`") && !missing.contains("s3cr3t"));
        let not_json = format!("{:?}", pick("db", b"s3cr3t", Some("user")).unwrap_err());
        assert!(not_json.contains("not JSON") && !not_json.contains("s3cr3t"));
    }

    #[test]
    fn binary_values_are_decoded() {
        assert_eq!(decode_base64("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(decode_base64("AAEC/w==").unwrap(), [0, 1, 2, 255]);
        assert!(decode_base64("not base64!").is_none());
    }
}
