//! Secret resolvers: the [`SecretResolver`] trait and the adapter the export macro wires to WIT.

use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::bindings::secret_resolver::exports::tazuna::plugin::secret_resolver::Guest;
use crate::bindings::source::tazuna::plugin::types as wit;
use crate::{PluginError, PluginInfo, SecretValue, config};

/// A plugin that turns references such as `op://vault/item/field` into secret values.
///
/// Export an implementation with
/// [`export_secret_resolver!`](crate::export_secret_resolver). The host never logs or stores the
/// values; the plugin should not either.
///
/// ```
/// use tazuna_sdk::{NoConfig, PluginError, PluginInfo, SecretResolver};
///
/// /// Resolves `literal://text` to `text`, for tests.
/// struct Literal;
///
/// impl SecretResolver for Literal {
///     type Config = NoConfig;
///     const SCHEMES: &'static [&'static str] = &["literal"];
///
///     fn info() -> PluginInfo {
///         PluginInfo::new("literal", env!("CARGO_PKG_VERSION"))
///     }
///
///     fn resolve(_: &NoConfig, reference: &str) -> Result<Vec<u8>, PluginError> {
///         let text = reference.strip_prefix("literal://").ok_or_else(|| PluginError::not_found(reference))?;
///         Ok(text.as_bytes().to_vec())
///     }
/// }
///
/// tazuna_sdk::export_secret_resolver!(Literal);
/// # fn main() {}
/// ```
pub trait SecretResolver {
    /// The provider's config block in `tazuna.yaml`, parsed with serde.
    type Config: DeserializeOwned + JsonSchema;

    /// URI schemes this resolver handles, such as `op` or `env`.
    const SCHEMES: &'static [&'static str];

    /// The plugin's name, version, description and requested capabilities.
    fn info() -> PluginInfo;

    /// Resolves one reference to its value.
    fn resolve(config: &Self::Config, reference: &str) -> Result<Vec<u8>, PluginError>;

    /// Resolves every reference of one run, one result each, in order. By default each on its
    /// own with [`resolve`](Self::resolve); a resolver of a store that answers many at once
    /// (AWS Secrets Manager's `BatchGetSecretValue`) overrides it.
    fn resolve_all(
        config: &Self::Config,
        references: &[String],
    ) -> Vec<Result<Vec<u8>, PluginError>> {
        references
            .iter()
            .map(|reference| Self::resolve(config, reference))
            .collect()
    }
}

/// The bytes `key` names in a secret's structured value, the one rule of the built-in resolvers:
/// a top-level key (`password`) or a JSON pointer (`/db/password`); a string comes out as it is,
/// anything else as JSON. `what` names the secret in the error, which never holds a value.
///
/// ```
/// use tazuna_sdk::secret::pick;
/// let value = tazuna_sdk::serde_json::json!({"db": {"password": "s3cr3t"}, "port": 5432});
/// assert_eq!(pick("secret `app`", &value, "/db/password").unwrap(), b"s3cr3t");
/// assert_eq!(pick("secret `app`", &value, "port").unwrap(), b"5432");
/// assert!(pick("secret `app`", &value, "user").is_err());
/// ```
pub fn pick(what: &str, value: &serde_json::Value, key: &str) -> Result<Vec<u8>, PluginError> {
    let found = if key.starts_with('/') {
        value.pointer(key)
    } else {
        value.get(key)
    };
    match found {
        Some(serde_json::Value::String(text)) => Ok(text.as_bytes().to_vec()),
        Some(other) => Ok(other.to_string().into_bytes()),
        None => Err(PluginError::not_found(format_args!(
            "key `{key}` of {what}"
        ))),
    }
}

/// Implements the WIT `secret-resolver` interface for any [`SecretResolver`].
#[doc(hidden)]
pub struct SecretResolverExport<R>(PhantomData<R>);

impl<R: SecretResolver> Guest for SecretResolverExport<R> {
    fn describe() -> wit::PluginInfo {
        crate::log::forward_panics();
        R::info().into_wit::<R::Config>()
    }

    fn schemes() -> Vec<String> {
        R::SCHEMES
            .iter()
            .map(|scheme| (*scheme).to_owned())
            .collect()
    }

    fn resolve(config: String, refs: Vec<String>) -> Vec<Result<SecretValue, PluginError>> {
        crate::log::forward_panics();
        resolve::<R>(&config, refs)
    }
}

/// The body of the exported `resolve`: a config that does not parse fails every reference.
fn resolve<R: SecretResolver>(
    config: &str,
    refs: Vec<String>,
) -> Vec<Result<SecretValue, PluginError>> {
    match config::parse::<R::Config>(config) {
        Ok(config) => {
            let values = R::resolve_all(&config, &refs);
            refs.into_iter()
                .zip(values)
                .map(|(reference, value)| value.map(|value| SecretValue { reference, value }))
                .collect()
        }
        Err(diagnostics) => refs
            .iter()
            .map(|_| Err(PluginError::InvalidConfig(diagnostics.clone())))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoConfig;

    struct Upper;

    impl SecretResolver for Upper {
        type Config = NoConfig;
        const SCHEMES: &'static [&'static str] = &["upper"];

        fn info() -> PluginInfo {
            PluginInfo::new("upper", "0.1.0")
        }

        fn resolve(_: &NoConfig, reference: &str) -> Result<Vec<u8>, PluginError> {
            match reference.strip_prefix("upper://") {
                Some(text) => Ok(text.to_uppercase().into_bytes()),
                None => Err(PluginError::not_found(reference)),
            }
        }
    }

    #[test]
    fn results_follow_the_order_of_refs() {
        let results = resolve::<Upper>("{}", vec!["upper://a".into(), "env://b".into()]);
        assert_eq!(results[0].as_ref().unwrap().value, b"A");
        assert_eq!(results[1], Err(PluginError::NotFound("env://b".into())));
        assert_eq!(<SecretResolverExport<Upper> as Guest>::schemes(), ["upper"]);
    }

    #[test]
    fn a_bad_config_fails_every_reference() {
        let results = resolve::<Upper>(r#"{"x": 1}"#, vec!["upper://a".into(), "upper://b".into()]);
        assert!(
            results
                .iter()
                .all(|r| matches!(r, Err(PluginError::InvalidConfig(_))))
        );
    }
}
