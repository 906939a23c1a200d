//! The built-in `envfile` secret resolver, Go Tazuna's `envfile` provider: values from a dotenv
//! file.
//!
//! ```yaml
//! spec:
//!   providers:
//!     - name: ops-envfile
//!       type: envfile
//!       envfile:
//!         path: ./secrets/ops.env     # relative to the file that declares the provider
//! ```
//!
//! A reference names a key of the file: `DB_PASSWORD`, or `<anything>#DB_PASSWORD` (a
//! GenesisSecret item, whose URI an envfile has no use for). The file is read as Go Tazuna read
//! it: one `KEY=VALUE` per line, blank lines and `#` comments skipped, one pair of matching
//! quotes around a value removed, no shell expansion and no multi-line values.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use tazuna_sdk::{PluginError, PluginInfo, SecretResolver};

/// Where the host preopens the directory of the file that declares the provider.
const PROVIDER_DIR: &str = "/manifest";

/// The `envfile:` block of a provider.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The dotenv file, relative to the file that declares the provider.
    pub path: String,
}

/// The `envfile` secret resolver.
pub struct EnvFile;

impl SecretResolver for EnvFile {
    type Config = Config;
    const SCHEMES: &'static [&'static str] = &["envfile"];

    fn info() -> PluginInfo {
        PluginInfo::new("envfile", env!("CARGO_PKG_VERSION"))
            .with_description("Values from a dotenv file beside tazuna.yaml.")
    }

    fn resolve(config: &Config, reference: &str) -> Result<Vec<u8>, PluginError> {
        Self::resolve_all(config, &[reference.to_owned()])
            .pop()
            .unwrap_or_else(|| Err(PluginError::other("no answer")))
    }

    /// The file is read and parsed once for every reference of the run.
    fn resolve_all(config: &Config, references: &[String]) -> Vec<Result<Vec<u8>, PluginError>> {
        let values = read(config);
        references
            .iter()
            .map(|reference| {
                let values = values.as_ref().map_err(Clone::clone)?;
                let key = key_of(reference);
                values
                    .get(key)
                    .map(|value| value.as_bytes().to_vec())
                    .ok_or_else(|| {
                        PluginError::not_found(format_args!(
                            "key `{key}` in envfile `{}`",
                            config.path
                        ))
                    })
            })
            .collect()
    }
}

/// The provider's file, read and parsed.
fn read(config: &Config) -> Result<BTreeMap<String, String>, PluginError> {
    let file = format!("{PROVIDER_DIR}/{}", config.path.trim_start_matches("./"));
    let text = std::fs::read_to_string(&file).map_err(|error| {
        PluginError::not_found(format_args!("envfile `{}`: {error}", config.path))
    })?;
    parse(&text).map_err(|line| {
        PluginError::InvalidInput(vec![
            tazuna_sdk::Diagnostic::error(format!("line {line} is not `KEY=VALUE`"))
                .at(config.path.as_str()),
        ])
    })
}

/// The key a reference names: what follows the last `#`, or all of it.
pub fn key_of(reference: &str) -> &str {
    reference.rsplit_once('#').map_or(reference, |(_, key)| key)
}

/// The pairs of a dotenv file; on a malformed line, its 1-based number (never its content,
/// which may hold a secret).
pub fn parse(text: &str) -> Result<BTreeMap<String, String>, usize> {
    let mut values = BTreeMap::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(index + 1);
        };
        let key = key.trim();
        if key.is_empty() {
            return Err(index + 1);
        }
        values.insert(key.to_owned(), unquote(value.trim()).to_owned());
    }
    Ok(values)
}

fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if value.len() >= 2 && value.starts_with(quote) && value.ends_with(quote) {
            return &value[1..value.len() - 1];
        }
    }
    value
}

tazuna_sdk::export_secret_resolver!(EnvFile);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotenv_lines_are_read_as_go_tazuna_read_them() {
        let values = parse(
            "# a comment\n\nDB_PASSWORD=s3cret\n TOKEN = 'quoted value' \nURL=\"http://x?a=b\"\nHALF='open\n",
        )
        .unwrap();
        assert_eq!(values["DB_PASSWORD"], "s3cret");
        assert_eq!(values["TOKEN"], "quoted value");
        assert_eq!(values["URL"], "http://x?a=b");
        assert_eq!(values["HALF"], "'open");
    }

    #[test]
    fn a_malformed_line_is_named_by_number_only() {
        assert_eq!(parse("A=1\nnot a pair\n"), Err(2));
        assert_eq!(parse("=value\n"), Err(1));
    }

    #[test]
    fn references_name_a_key_directly_or_after_a_hash() {
        assert_eq!(key_of("DB_PASSWORD"), "DB_PASSWORD");
        assert_eq!(key_of("op://my/vault/item#DB_PASSWORD"), "DB_PASSWORD");
    }
}
