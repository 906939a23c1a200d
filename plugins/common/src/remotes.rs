//! `remotes:`, the hosts a manifest lets its tool reach: the git servers of a kustomization's
//! remote bases, the chart repositories of a helmfile's `repositories:`.
//!
//! The list decides nothing here: the host reads every URL of the manifest's config and opens
//! the jail's network to those hosts alone (see `docs/security.md`). This module checks that
//! each entry is a URL the jail can open, and, when the tool failed to reach a host that is not
//! on the list, says what to add.

use tazuna_sdk::{Diagnostic, PluginError};

/// Checks each entry of `remotes` (the block's `remotes`, reported at `/remotes/<i>`): an
/// `https://` URL, or `http://` for a server on loopback, with a host.
pub fn check(remotes: &[String]) -> Result<(), Vec<Diagnostic>> {
    let errors: Vec<Diagnostic> = remotes
        .iter()
        .enumerate()
        .filter_map(|(index, remote)| {
            let problem = match remote.split_once("://") {
                None => "is not a URL",
                Some((scheme, _)) if !matches!(scheme, "http" | "https") => {
                    "has a scheme the jail does not open"
                }
                Some((scheme, rest)) => {
                    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
                    if authority.is_empty() {
                        "is not a URL with a host"
                    } else if authority.contains('@') {
                        // `https://git.example.com@10.0.0.1` names 10.0.0.1.
                        "carries a login (`user@`); name the host alone, and keep logins out of tazuna.yaml"
                    } else if scheme == "http" && !is_loopback(authority) {
                        "uses plain HTTP to a host that is not on loopback"
                    } else {
                        return None;
                    }
                }
            };
            Some(
                Diagnostic::error(format!(
                    "remote `{remote}` {problem}; give `https://<host>[:<port>]/…` (or `http://127.0.0.1:<port>/…` for a server on this machine)"
                ))
                .at(&format!("/remotes/{index}")),
            )
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The `host[:port]` of an `http://` or `https://` URL, without user info.
fn host_of(url: &str) -> Option<&str> {
    let (scheme, rest) = url.split_once("://")?;
    if !matches!(scheme, "http" | "https") {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    (!authority.is_empty()).then_some(authority)
}

/// Whether `authority` (`host[:port]`) names this machine.
fn is_loopback(authority: &str) -> bool {
    let host = match authority.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => authority,
    };
    let host = host.trim_matches(['[', ']']);
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `error` with a hint when the tool's stderr names a URL whose host is not in `remotes`:
/// the jail refused it, and the fix is to name it in `<block>.remotes`. Any other error is
/// returned as it is.
pub fn explain(error: PluginError, block: &str, remotes: &[String]) -> PluginError {
    let PluginError::ToolFailed(failure) = &error else {
        return error;
    };
    let named: Vec<&str> = remotes.iter().filter_map(|r| host_of(r)).collect();
    let unnamed = failure
        .stderr_tail
        .split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | ',' | ';'))
        .filter_map(|word| {
            let word = word.strip_prefix("git::").unwrap_or(word);
            host_of(word).map(|host| (word, host))
        })
        .find(|(_, host)| !named.contains(host));
    let Some((url, host)) = unnamed else {
        return error;
    };
    let scheme = if url.starts_with("https://") {
        "https"
    } else {
        "http"
    };
    PluginError::Network(format!(
        "`{}` could not reach `{url}`: the jail lets it reach only the hosts the manifest names in `{block}.remotes` ({}); if `{host}` is meant, add `{scheme}://{host}` to `{block}.remotes`. The tool said: {}",
        failure.tool,
        if named.is_empty() {
            "none".to_owned()
        } else {
            named.join(", ")
        },
        failure.stderr_tail.trim()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tazuna_sdk::ToolFailure;

    #[test]
    fn https_urls_and_plain_http_on_loopback_are_remotes_and_nothing_else() {
        let good = [
            "https://git.example.com/org/repo",
            "https://charts.example.com:8443",
            "http://127.0.0.1:8080/git/base.git",
            "http://localhost:9000",
            "http://[::1]:9000/",
        ]
        .map(String::from);
        assert!(check(&good).is_ok());
        let bad = [
            "git.example.com",
            "http://git.example.com/org/repo",
            "ssh://git@example.com/org/repo",
            "file:///etc",
            "https://",
            "https://git.example.com@127.0.0.1:6443/",
        ]
        .map(String::from);
        let errors = check(&bad).unwrap_err();
        assert_eq!(errors.len(), bad.len());
        assert_eq!(errors[1].path.as_deref(), Some("/remotes/1"));
        assert!(
            errors[1].message.contains("plain HTTP"),
            "{}",
            errors[1].message
        );
        assert!(
            errors[2].message.contains("scheme"),
            "{}",
            errors[2].message
        );
        assert!(errors[5].message.contains("login"), "{}", errors[5].message);
    }

    fn failed(stderr: &str) -> PluginError {
        PluginError::ToolFailed(ToolFailure {
            tool: "kustomize".into(),
            exit_code: Some(1),
            stderr_tail: stderr.into(),
        })
    }

    #[test]
    fn a_host_the_tool_could_not_reach_and_the_manifest_does_not_name_gets_the_fix() {
        let remotes = ["http://127.0.0.1:8080/git".to_owned()];
        let error = explain(
            failed(
                "Error: accumulating resources: git fetch: fatal: unable to access 'http://127.0.0.1:9999/git/other.git/': Failed to connect",
            ),
            "kustomize",
            &remotes,
        );
        let PluginError::Network(message) = error else {
            panic!("{error:?}")
        };
        assert!(
            message.contains("add `http://127.0.0.1:9999` to `kustomize.remotes`"),
            "{message}"
        );
        assert!(message.contains("(127.0.0.1:8080)"), "{message}");
        // A named host's failure is the tool's own.
        let error = explain(
            failed("fatal: unable to access 'http://127.0.0.1:8080/git/base.git/': 404"),
            "kustomize",
            &remotes,
        );
        assert!(matches!(error, PluginError::ToolFailed(_)), "{error:?}");
    }
}
