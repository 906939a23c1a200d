//! The built-in `onepassword` secret resolver, Go Tazuna's `onepassword` provider (and its
//! built-in `default-op`): values read with the 1Password CLI, `op read`, run by the host (grant
//! `exec:op`). `op` uses the sign-in or service account token of the machine it runs on.
//!
//! A reference is a GenesisSecret item: `op://<account>/<vault>/<item>#<field>`, or the same with
//! `/<field>` instead of `#<field>`. The field is named by label or by ID, as `op read` accepts
//! both; `<account>` becomes `op --account`. Without an account (`op://<vault>/<item>/<field>`
//! or `op://<vault>/<item>#<field>`, as helmfile vars `from: op` name it), `op` uses the account
//! it is signed in to.

use schemars::JsonSchema;
use serde::Deserialize;
use tazuna_sdk::exec::Command;
use tazuna_sdk::{PluginError, PluginInfo, SecretResolver};

/// The `onepassword:` block of a provider. It takes no fields yet.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {}

/// The `onepassword` secret resolver.
pub struct OnePassword;

/// A 1Password reference taken apart.
#[derive(Debug, PartialEq, Eq)]
pub struct Reference<'a> {
    /// The account (`my.1password.com`), `op --account`; `op`'s own when absent.
    pub account: Option<&'a str>,
    /// The vault.
    pub vault: &'a str,
    /// The item.
    pub item: &'a str,
    /// The field, by label or ID.
    pub field: &'a str,
}

/// Parses `op://[<account>/]<vault>/<item>#<field>` or `op://[<account>/]<vault>/<item>/<field>`.
pub fn parse(reference: &str) -> Result<Reference<'_>, PluginError> {
    let malformed = || {
        PluginError::InvalidConfig(vec![tazuna_sdk::Diagnostic::error(format!(
            "1Password reference `{reference}` is malformed; expected `op://<account>/<vault>/<item>#<field>` or `op://<vault>/<item>/<field>`"
        ))])
    };
    let rest = reference.strip_prefix("op://").ok_or_else(malformed)?;
    let (path, field) = match rest.split_once('#') {
        Some((path, field)) => (path, Some(field)),
        None => (rest, None),
    };
    let parts: Vec<&str> = path.split('/').collect();
    let (account, vault, item, field) = match (parts.as_slice(), field) {
        ([account, vault, item], Some(field)) => (Some(*account), *vault, *item, field),
        ([account, vault, item, field], None) => (Some(*account), *vault, *item, *field),
        ([vault, item], Some(field)) => (None, *vault, *item, field),
        ([vault, item, field], None) => (None, *vault, *item, *field),
        _ => return Err(malformed()),
    };
    if [account.unwrap_or("-"), vault, item, field]
        .iter()
        .any(|part| part.is_empty())
    {
        return Err(malformed());
    }
    Ok(Reference {
        account,
        vault,
        item,
        field,
    })
}

impl SecretResolver for OnePassword {
    type Config = Config;
    const SCHEMES: &'static [&'static str] = &["op"];

    fn info() -> PluginInfo {
        PluginInfo::new("onepassword", env!("CARGO_PKG_VERSION"))
            .with_description("Values read with the 1Password CLI (`op read`).")
            .with_capability("exec:op")
    }

    fn resolve(_: &Config, reference: &str) -> Result<Vec<u8>, PluginError> {
        let parsed = parse(reference)?;
        let mut command = Command::new("op").args(["read", "--no-newline"]);
        if let Some(account) = parsed.account {
            command = command.args(["--account", account]);
        }
        let output = command
            .arg(format!(
                "op://{}/{}/{}",
                parsed.vault, parsed.item, parsed.field
            ))
            .run_checked()?;
        Ok(output.stdout)
    }
}

tazuna_sdk::export_secret_resolver!(OnePassword);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn genesis_secret_items_and_op_paths_both_parse() {
        let expected = Reference {
            account: Some("my.1password.com"),
            vault: "Platform",
            item: "cert-manager",
            field: "cloudflare-api-token",
        };
        assert_eq!(
            parse("op://my.1password.com/Platform/cert-manager#cloudflare-api-token").unwrap(),
            expected
        );
        assert_eq!(
            parse("op://my.1password.com/Platform/cert-manager/cloudflare-api-token").unwrap(),
            expected
        );
    }

    #[test]
    fn without_an_account_op_uses_its_own() {
        let expected = Reference {
            account: None,
            vault: "Platform",
            item: "acme",
            field: "token",
        };
        assert_eq!(parse("op://Platform/acme/token").unwrap(), expected);
        assert_eq!(parse("op://Platform/acme#token").unwrap(), expected);
    }

    #[test]
    fn malformed_references_are_refused() {
        for bad in [
            "op://cert-manager#x",
            "op://a/b",
            "op://a/b/c/d/e",
            "vault://a/b/c#d",
            "op://a//c#d",
            "op:///b/c#d",
        ] {
            assert!(
                matches!(parse(bad), Err(PluginError::InvalidConfig(_))),
                "{bad}"
            );
        }
    }
}
