//! Secret references a plugin hands to its tools.
//!
//! A plugin granted `secrets:exec` may set a variable of a tool's environment
//! (the `env` of an `exec` command) to `ref+<provider>:<reference>`. The host
//! resolves it through [`ToolSecrets`] just before the tool starts, so the
//! value goes from the provider to the tool and the plugin never passes it.
//! Without a [`ToolSecrets`] (`tazuna build`), the tool gets the reference
//! text itself, so what it renders shows references where values would be.
//!
//! A tool's output comes back to the plugin, so the host also guards the way
//! out. Each value a secret provider gave in a call is [`Revealed`]: it is
//! replaced by `(redacted)` in the plugin's log lines, diagnostics and errors,
//! and the render fails if an object other than a Secret holds it (as text or
//! base64). Values shorter than [`Revealed::MIN_LEN`] bytes are too common to
//! trace and are left alone.

use std::sync::Arc;

use base64::Engine as _;

use super::bindings::types::{Diagnostic, PluginError};
use super::capabilities::Capabilities;

/// The capability that lets a plugin hand secret references to its tools.
const CAPABILITY: &str = "secrets:exec";

/// What resolving one reference gave.
#[derive(Clone)]
pub struct ToolSecret {
    /// The value.
    pub value: Vec<u8>,
    /// Whether it is a secret (from a secret provider), traced on the way out,
    /// or plain configuration (from the environment), which is not.
    pub secret: bool,
}

impl std::fmt::Debug for ToolSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSecret")
            .field("value", &"(redacted)")
            .field("secret", &self.secret)
            .finish()
    }
}

/// Resolves `ref+<provider>:<reference>` for tools. Implemented over
/// `spec.providers` by [`crate::secrets::ProviderSecrets`].
pub trait ToolSecrets: Send + Sync {
    /// The value behind `reference` of `provider`, or why there is none (a
    /// message that names no value).
    fn resolve(&self, provider: &str, reference: &str) -> Result<ToolSecret, String>;
}

/// Shared handle to a [`ToolSecrets`].
pub type SharedToolSecrets = Arc<dyn ToolSecrets>;

/// The secret values one call has handed to tools.
#[derive(Debug, Default, Clone)]
pub struct Revealed {
    values: Vec<String>,
}

impl Revealed {
    /// Shorter values are not traced.
    pub const MIN_LEN: usize = 4;

    /// Remember `value`, and its base64 form, if it is long enough to trace.
    fn add(&mut self, value: &str) {
        if value.len() < Self::MIN_LEN || self.values.iter().any(|v| v == value) {
            return;
        }
        self.values.push(value.to_owned());
        self.values
            .push(base64::engine::general_purpose::STANDARD.encode(value));
    }

    /// Whether nothing was revealed.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Whether `text` holds a revealed value.
    pub fn found_in(&self, text: &str) -> bool {
        self.values
            .iter()
            .any(|value| text.contains(value.as_str()))
    }

    /// `text` with every revealed value replaced by `(redacted)`.
    pub fn redact(&self, text: &str) -> String {
        let mut text = text.to_owned();
        // Longest first, so a value inside another is not left half shown.
        let mut values: Vec<&String> = self.values.iter().collect();
        values.sort_by_key(|value| std::cmp::Reverse(value.len()));
        for value in values {
            if text.contains(value.as_str()) {
                text = text.replace(value.as_str(), "(redacted)");
            }
        }
        text
    }

    /// The diagnostics with their messages redacted.
    pub fn redact_diagnostics(&self, diagnostics: &mut [Diagnostic]) {
        for diagnostic in diagnostics {
            diagnostic.message = self.redact(&diagnostic.message);
        }
    }

    /// `error` with every message in it redacted.
    pub fn redact_error(&self, error: PluginError) -> PluginError {
        if self.is_empty() {
            return error;
        }
        match error {
            PluginError::InvalidConfig(mut list) => {
                self.redact_diagnostics(&mut list);
                PluginError::InvalidConfig(list)
            }
            PluginError::InvalidInput(mut list) => {
                self.redact_diagnostics(&mut list);
                PluginError::InvalidInput(list)
            }
            PluginError::NotFound(text) => PluginError::NotFound(self.redact(&text)),
            PluginError::CapabilityDenied(text) => {
                PluginError::CapabilityDenied(self.redact(&text))
            }
            PluginError::ToolFailed(mut failure) => {
                failure.stderr_tail = self.redact(&failure.stderr_tail);
                PluginError::ToolFailed(failure)
            }
            PluginError::Network(text) => PluginError::Network(self.redact(&text)),
            PluginError::Timeout(text) => PluginError::Timeout(self.redact(&text)),
            PluginError::Other(text) => PluginError::Other(self.redact(&text)),
        }
    }
}

/// Who hands a tool its environment: the plugin, the tool, what the plugin
/// may do and every string of the manifest's config.
#[derive(Debug)]
pub struct Handing<'a> {
    /// The plugin.
    pub plugin: &'a str,
    /// The tool it runs.
    pub tool: &'a str,
    /// The plugin's capabilities.
    pub capabilities: &'a Capabilities,
    /// Every string of the manifest's config.
    pub named: &'a [String],
    /// Whether a provider's secrets are withheld: each stands in as
    /// [`PLACEHOLDER`].
    pub withhold: bool,
}

/// What stands in for a withheld secret: one fixed text, nothing of the
/// value (not its length, not its characters), so whatever a tool makes of
/// the value differs from what it makes of this.
pub const PLACEHOLDER: &str = "tazuna-withheld-secret";

/// Resolve the references among the values of `env`, for a run of
/// `handing.tool` by `handing.plugin`. Secret values are added to `revealed`.
/// A `ref+env:NAME` resolves only when the manifest's config names `NAME`
/// (or writes the reference): a tool never gets a variable of Tazuna's own
/// environment the user did not name, such as a CI token.
pub fn resolve_env(
    handing: &Handing<'_>,
    secrets: Option<&dyn ToolSecrets>,
    env: &mut [(String, String)],
    revealed: &mut Revealed,
) -> Result<(), PluginError> {
    let Handing {
        plugin,
        tool,
        capabilities,
        named,
        withhold,
    } = handing;
    for (key, value) in env.iter_mut() {
        let Some((provider, reference)) = crate::references::parse(value) else {
            continue;
        };
        if !capabilities.allows(CAPABILITY) {
            return Err(PluginError::CapabilityDenied(format!(
                "plugin `{plugin}` passed a secret reference to `{tool}` in `{key}`: capability `{CAPABILITY}` is not granted (effective: {capabilities})"
            )));
        }
        if provider == "env" && !named.iter().any(|n| n == reference || n == value.as_str()) {
            return Err(PluginError::CapabilityDenied(format!(
                "plugin `{plugin}` passed `ref+env:{reference}` to `{tool}` in `{key}`, but the manifest's config does not name `{reference}`: a tool gets only the environment variables your config names (name it there, as `env: {reference}` of a helmfile var)"
            )));
        }
        let Some(secrets) = secrets else {
            // `tazuna build`: the tool sees the reference itself.
            continue;
        };
        // Withheld, a provider's secret is not asked for at all; the
        // environment's values are configuration and are given as ever.
        if *withhold && provider != "env" {
            *value = PLACEHOLDER.to_owned();
            continue;
        }
        let resolved = secrets
            .resolve(provider, reference)
            .map_err(|message| PluginError::NotFound(format!("`{key}` for `{tool}`: {message}")))?;
        let text = String::from_utf8(resolved.value).map_err(|_| {
            PluginError::Other(format!(
                "`{key}` for `{tool}`: provider `{provider}` gave a value that is not UTF-8 text, which an environment variable cannot hold"
            ))
        })?;
        if resolved.secret {
            revealed.add(&text);
        }
        *value = text;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed;

    impl ToolSecrets for Fixed {
        fn resolve(&self, provider: &str, reference: &str) -> Result<ToolSecret, String> {
            match (provider, reference) {
                ("ops", "TOKEN") => Ok(ToolSecret {
                    value: b"s3cr3t-token".to_vec(),
                    secret: true,
                }),
                ("env", "EMAIL") => Ok(ToolSecret {
                    value: b"ops@example.com".to_vec(),
                    secret: false,
                }),
                _ => Err(format!("provider `{provider}` has no `{reference}`")),
            }
        }
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn references_resolve_only_with_the_grant_and_secrets_are_remembered() {
        let granted = Capabilities::effective(&[CAPABILITY.into()], &[CAPABILITY.into()]);
        let mut vars = env(&[
            ("A", "ref+ops:TOKEN"),
            ("B", "ref+env:EMAIL"),
            ("C", "plain"),
        ]);
        let mut revealed = Revealed::default();
        let named = vec!["EMAIL".to_owned()];
        let handing = |capabilities| Handing {
            plugin: "p",
            tool: "t",
            capabilities,
            named: &named,
            withhold: false,
        };
        resolve_env(&handing(&granted), Some(&Fixed), &mut vars, &mut revealed).unwrap();
        assert_eq!(
            vars,
            env(&[
                ("A", "s3cr3t-token"),
                ("B", "ops@example.com"),
                ("C", "plain")
            ])
        );
        assert!(revealed.found_in("x s3cr3t-token y"));
        assert!(revealed.found_in("czNjcjN0LXRva2Vu"), "base64 too");
        assert!(
            !revealed.found_in("ops@example.com"),
            "environment values are not secrets"
        );
        assert_eq!(revealed.redact("got s3cr3t-token"), "got (redacted)");

        let mut vars = env(&[("A", "ref+ops:TOKEN")]);
        let none = Capabilities::none();
        let denied =
            resolve_env(&handing(&none), Some(&Fixed), &mut vars, &mut revealed).unwrap_err();
        assert!(matches!(denied, PluginError::CapabilityDenied(m) if m.contains("`secrets:exec`")));

        // Without a resolver (`tazuna build`), the reference stays.
        let mut vars = env(&[("A", "ref+ops:TOKEN")]);
        resolve_env(
            &handing(&granted),
            None,
            &mut vars,
            &mut Revealed::default(),
        )
        .unwrap();
        assert_eq!(vars, env(&[("A", "ref+ops:TOKEN")]));

        let mut vars = env(&[("A", "ref+ops:MISSING")]);
        let missing =
            resolve_env(&handing(&granted), Some(&Fixed), &mut vars, &mut revealed).unwrap_err();
        assert!(
            matches!(missing, PluginError::NotFound(m) if m.contains("`A` for `t`: provider `ops` has no `MISSING`"))
        );

        // A variable the config does not name is refused, whatever it holds.
        let mut vars = env(&[("A", "ref+env:CI_DEPLOY_TOKEN")]);
        let unnamed =
            resolve_env(&handing(&granted), Some(&Fixed), &mut vars, &mut revealed).unwrap_err();
        assert!(
            matches!(&unnamed, PluginError::CapabilityDenied(m) if m.contains("does not name `CI_DEPLOY_TOKEN`")),
            "{unnamed:?}"
        );
        assert_eq!(vars, env(&[("A", "ref+env:CI_DEPLOY_TOKEN")]));

        // Withheld: a placeholder of the secret's shape, nothing revealed.
        let mut vars = env(&[("A", "ref+ops:TOKEN"), ("B", "ref+env:EMAIL")]);
        let mut quiet = Revealed::default();
        let withheld = Handing {
            withhold: true,
            ..handing(&granted)
        };
        resolve_env(&withheld, Some(&Fixed), &mut vars, &mut quiet).unwrap();
        assert_eq!(vars, env(&[("A", PLACEHOLDER), ("B", "ops@example.com")]));
        assert!(quiet.is_empty());
    }

    #[test]
    fn errors_and_diagnostics_lose_the_value_but_keep_the_rest() {
        let mut revealed = Revealed::default();
        revealed.add("s3cr3t-token");
        let failure = revealed.redact_error(PluginError::ToolFailed(
            super::super::bindings::types::ToolFailure {
                tool: "helmfile".into(),
                exit_code: Some(1),
                stderr_tail: "bad token s3cr3t-token for api".into(),
            },
        ));
        assert!(
            matches!(&failure, PluginError::ToolFailed(f) if f.stderr_tail == "bad token (redacted) for api"),
            "{failure:?}"
        );
        let invalid = revealed.redact_error(PluginError::InvalidInput(vec![Diagnostic {
            severity: super::super::bindings::types::Severity::Error,
            message: "line `czNjcjN0LXRva2Vu` is not YAML".into(),
            path: Some("a.yaml".into()),
        }]));
        assert!(
            matches!(&invalid, PluginError::InvalidInput(d) if d[0].message == "line `(redacted)` is not YAML"),
            "base64 too: {invalid:?}"
        );
        let other = revealed.redact_error(PluginError::Other("no secret here".into()));
        assert!(matches!(other, PluginError::Other(m) if m == "no secret here"));
    }

    #[test]
    fn short_values_are_not_traced() {
        let mut revealed = Revealed::default();
        revealed.add("abc");
        assert!(revealed.is_empty());
        assert_eq!(revealed.redact("abc"), "abc");
    }
}
