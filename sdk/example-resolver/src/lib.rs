//! An example third-party secret resolver, built with `tazuna-sdk`: `files` resolves a reference
//! to the whole content of one file in a directory beside `tazuna.yaml`. It holds what a dotenv
//! file cannot: a multi-line TLS key, a binary keytab.
//!
//! ```yaml
//! spec:
//!   plugins:
//!     - name: files
//!       source: file://./plugins/files.wasm
//!   providers:
//!     - name: tls
//!       type: files
//!       files:
//!         dir: ./secrets/tls     # relative to the file that declares the provider
//!   manifests:
//!     - name: ingress-tls
//!       type: manifests
//!       ...                      # a Secret with `stringData: {tls.key: ref+tls:server.key}`
//! ```
//!
//! A reference is a path inside `dir`, such as `server.key` or `prod/server.key`. Absolute paths
//! and `..` are refused. Content that is not UTF-8 reaches the Secret's `data`, base64-encoded,
//! by the host.
//!
//! It needs no capability: the host preopens the provider file's directory read-only at
//! `/manifest`, and nothing else.

use schemars::JsonSchema;
use serde::Deserialize;
use tazuna_sdk::{PluginError, PluginInfo, SecretResolver};

/// Where the host preopens the directory of the file that declares the provider.
const PROVIDER_DIR: &str = "/manifest";

/// The `files:` block of a provider.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The directory that holds the files, relative to the file that declares the provider.
    pub dir: String,
}

/// The `files` secret resolver.
pub struct Files;

impl SecretResolver for Files {
    type Config = Config;
    const SCHEMES: &'static [&'static str] = &["files"];

    fn info() -> PluginInfo {
        PluginInfo::new("files", env!("CARGO_PKG_VERSION"))
            .with_description("The whole content of a file in a directory beside tazuna.yaml.")
    }

    fn resolve(config: &Config, reference: &str) -> Result<Vec<u8>, PluginError> {
        let dir = relative(&config.dir).ok_or_else(|| {
            PluginError::other(format_args!(
                "`dir: {}` must be a relative path that stays beside the file that declares the provider",
                config.dir
            ))
        })?;
        let file = relative(reference).ok_or_else(|| {
            PluginError::other(format_args!(
                "`{reference}` must be a relative path inside `{}`, without `..`",
                config.dir
            ))
        })?;
        let path = [PROVIDER_DIR, &dir, &file]
            .into_iter()
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join("/");
        std::fs::read(&path).map_err(|error| match error.kind() {
            std::io::ErrorKind::NotFound => {
                PluginError::not_found(format_args!("`{reference}` in `{}`", config.dir))
            }
            _ => PluginError::other(format_args!(
                "cannot read `{reference}` in `{}`: {error}",
                config.dir
            )),
        })
    }
}

/// `path` with `.` parts and repeated slashes dropped, or `None` if it is absolute, empty or
/// climbs out with `..`.
pub fn relative(path: &str) -> Option<String> {
    if path.starts_with('/') {
        return None;
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

tazuna_sdk::export_secret_resolver!(Files);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_that_stay_inside_are_relative() {
        assert_eq!(relative("server.key").as_deref(), Some("server.key"));
        assert_eq!(
            relative("./prod//server.key").as_deref(),
            Some("prod/server.key")
        );
        assert_eq!(relative(".").as_deref(), Some(""));
        for outside in ["/etc/passwd", "../x", "a/../../x", "a/.."] {
            assert_eq!(relative(outside), None, "{outside}");
        }
    }
}
