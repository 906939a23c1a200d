//! Vault, on the host side of the `outbound` import's `send-vault`: the
//! host logs in and holds the token; the plugin only says where its store is
//! and what to read.
//!
//! The login: a token (`VAULT_TOKEN`, else `~/.vault-token`, which `vault
//! login` writes), AppRole (the role id from the provider, the secret id from
//! `VAULT_SECRET_ID` or a file the provider names), or Kubernetes (the role
//! from the provider, the service account token from a file the provider
//! names, else the one Kubernetes mounts in a pod). One login per Vault,
//! namespace and method in a run.
//!
//! What a resolver may read through the token is an allow-list the host
//! checks itself: `GET` only, of the preflight the Vault CLI makes
//! (`/v1/sys/internal/ui/mounts/<path>`, which names a path's mount and its
//! type and holds no secret), and of paths on a mount of type `kv` (or its
//! old name `generic`). Everything else a token might reach (its own
//! lookup, `auth/`, `sys/`, other engines) stays out of reach. Nothing here
//! logs a token.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::environment::Environment;

/// Where the service account token of a pod is mounted.
pub const POD_TOKEN: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/// The preflight path prefix of the Vault CLI: a path's mount and its type.
const PREFLIGHT: &str = "sys/internal/ui/mounts/";

/// The secrets engines a resolver may read from.
const READABLE_ENGINES: &[&str] = &["kv", "generic"];

/// How the host logs in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Method {
    /// A token from the environment or `~/.vault-token`.
    Token,
    /// AppRole at `auth/<mount>/login`.
    AppRole {
        mount: String,
        role_id: String,
        secret_id_file: Option<PathBuf>,
    },
    /// Kubernetes at `auth/<mount>/login`.
    Kubernetes {
        mount: String,
        role: String,
        jwt_file: Option<PathBuf>,
    },
}

impl Method {
    /// Its name in messages.
    pub fn name(&self) -> &'static str {
        match self {
            Method::Token => "token",
            Method::AppRole { .. } => "AppRole",
            Method::Kubernetes { .. } => "Kubernetes",
        }
    }
}

/// Why the host holds no token for a Vault.
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// Neither `VAULT_TOKEN` nor the token file.
    #[error(
        "no Vault token: `VAULT_TOKEN` is not set and `{}` does not exist (run `vault login`, or give the provider an `auth` method)",
        file.display()
    )]
    NoToken { file: PathBuf },
    /// AppRole without a secret id.
    #[error(
        "no AppRole secret id: set `VAULT_SECRET_ID`, or name a `secretIdFile` in the provider's `auth`"
    )]
    NoSecretId,
    /// A credential file could not be read.
    #[error("`{}`: {error}", file.display())]
    Read {
        file: PathBuf,
        error: std::io::Error,
    },
    /// The Vault refused the login, or could not be reached.
    #[error("Vault's {method} login at `{path}`: {why}")]
    Refused {
        method: &'static str,
        path: String,
        why: String,
    },
}

fn read(file: &Path) -> Result<String, LoginError> {
    super::environment::read_credential_text(file)
        .map(|text| text.trim().to_owned())
        .map_err(|error| LoginError::Read {
            file: file.to_owned(),
            error,
        })
}

/// The token of the `token` method.
pub fn token_of_environment(env: &dyn Environment) -> Result<String, LoginError> {
    if let Some(token) = env.var("VAULT_TOKEN") {
        return Ok(token);
    }
    let file = env.home().unwrap_or_default().join(".vault-token");
    match super::environment::read_credential_text(&file) {
        Ok(text) if !text.trim().is_empty() => Ok(text.trim().to_owned()),
        Ok(_) => Err(LoginError::NoToken { file }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            Err(LoginError::NoToken { file })
        }
        Err(error) => Err(LoginError::Read { file, error }),
    }
}

/// The login request of a method other than `token`: its path below the
/// address, and its JSON body (which holds a credential: never logged).
pub fn login_request(
    env: &dyn Environment,
    method: &Method,
) -> Result<Option<(String, Value)>, LoginError> {
    Ok(match method {
        Method::Token => None,
        Method::AppRole {
            mount,
            role_id,
            secret_id_file,
        } => {
            let secret_id = match env.var("VAULT_SECRET_ID") {
                Some(id) => id,
                None => match secret_id_file {
                    Some(file) => read(file)?,
                    None => return Err(LoginError::NoSecretId),
                },
            };
            Some((
                format!("/v1/auth/{}/login", mount.trim_matches('/')),
                serde_json::json!({ "role_id": role_id, "secret_id": secret_id }),
            ))
        }
        Method::Kubernetes {
            mount,
            role,
            jwt_file,
        } => {
            let file = jwt_file.clone().unwrap_or_else(|| PathBuf::from(POD_TOKEN));
            let jwt = read(&file)?;
            Some((
                format!("/v1/auth/{}/login", mount.trim_matches('/')),
                serde_json::json!({ "role": role, "jwt": jwt }),
            ))
        }
    })
}

/// The Vault's own words in an error answer (`{"errors": [...]}`), which
/// name paths and reasons, never a value.
pub fn errors_of(status: u16, body: &[u8]) -> String {
    let said: Vec<String> = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|json| json.get("errors").and_then(Value::as_array).cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|e| e.as_str().map(str::to_owned))
        .collect();
    if said.is_empty() {
        format!("HTTP {status}")
    } else {
        format!("HTTP {status}: {}", said.join("; "))
    }
}

/// The token of a login's answer.
pub fn token_of_answer(
    method: &Method,
    path: &str,
    status: u16,
    body: &[u8],
) -> Result<String, LoginError> {
    let refused = |why: String| LoginError::Refused {
        method: method.name(),
        path: path.to_owned(),
        why,
    };
    if status != 200 {
        return Err(refused(errors_of(status, body)));
    }
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|json| {
            json.pointer("/auth/client_token")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .filter(|token| !token.is_empty())
        .ok_or_else(|| refused("the answer holds no `auth.client_token`".to_owned()))
}

/// Why a request through a Vault login is not a read a resolver may make.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotARead {
    /// Not below `/v1/`.
    #[error("`{0}`, which is not a Vault API path (`/v1/…`)")]
    NotApi(String),
    /// An empty, dot or escaped segment.
    #[error("`{0}`, which has an empty, dot or escaped segment")]
    Segment(String),
    /// A query other than a KV v2 version.
    #[error("the query `?{0}`; a read takes only `?version=<n>`")]
    Query(String),
}

/// What a resolver asks to read, by its URL path.
#[derive(Debug, PartialEq, Eq)]
pub enum Read<'a> {
    /// The preflight of a path (`sys/internal/ui/mounts/<path>`).
    Preflight,
    /// A path that must be on a readable mount: the path below `/v1/`.
    OnMount(&'a str),
}

/// Which kind of read `path` (a URL path) is, or why none: every path is
/// below `/v1/`, with no `.` or `..` segment and no empty one.
pub fn read_of(path: &str) -> Result<Read<'_>, NotARead> {
    let Some(rest) = path.strip_prefix("/v1/") else {
        return Err(NotARead::NotApi(path.to_owned()));
    };
    if rest
        .split('/')
        .any(|segment| segment.is_empty() || segment == "." || segment == "..")
        || rest.contains('%')
    {
        return Err(NotARead::Segment(path.to_owned()));
    }
    if rest.starts_with(PREFLIGHT) {
        Ok(Read::Preflight)
    } else {
        Ok(Read::OnMount(rest))
    }
}

/// Whether `query` may come with `read`: a KV v2 read may ask for a
/// `version=<n>`; nothing else takes a query (no `list=true`).
pub fn query_allowed(read: &Read<'_>, query: Option<&str>) -> Result<(), NotARead> {
    match (read, query) {
        (_, None) => Ok(()),
        (Read::OnMount(_), Some(query))
            if query
                .strip_prefix("version=")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) =>
        {
            Ok(())
        }
        (_, Some(query)) => Err(NotARead::Query(query.to_owned())),
    }
}

/// The preflight path of `path` (below `/v1/`).
pub fn preflight_of(path: &str) -> String {
    format!("/v1/{PREFLIGHT}{path}")
}

/// A mount, as a preflight answer names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Its path, with a trailing `/` (`secret/`).
    pub path: String,
    /// Its engine (`kv`).
    pub engine: String,
}

impl Mount {
    /// Whether a resolver may read below it.
    pub fn readable(&self) -> bool {
        READABLE_ENGINES.contains(&self.engine.as_str())
    }

    /// Whether `path` (below `/v1/`) is on it.
    pub fn holds(&self, path: &str) -> bool {
        path.starts_with(&self.path)
    }
}

/// The mount of a preflight's answer.
pub fn mount_of_answer(body: &[u8]) -> Option<Mount> {
    let json: Value = serde_json::from_slice(body).ok()?;
    let data = json.get("data")?;
    Some(Mount {
        path: data.get("path")?.as_str()?.to_owned(),
        engine: data.get("type")?.as_str()?.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn the_token_method_reads_the_environment_then_the_token_file() {
        let home = tempfile::tempdir().unwrap();
        let mut env: HashMap<&str, String> = HashMap::new();
        env.insert("HOME", home.path().display().to_string());
        let missing = token_of_environment(&env).unwrap_err().to_string();
        assert!(missing.contains(".vault-token"), "{missing}");
        std::fs::write(home.path().join(".vault-token"), "hvs.file\n").unwrap();
        assert_eq!(token_of_environment(&env).unwrap(), "hvs.file");
        env.insert("VAULT_TOKEN", "hvs.env".into());
        assert_eq!(token_of_environment(&env).unwrap(), "hvs.env");
    }

    #[test]
    fn logins_carry_their_credential_and_answers_give_the_token() {
        let dir = tempfile::tempdir().unwrap();
        let jwt = dir.path().join("jwt");
        std::fs::write(&jwt, "eyJ.jwt\n").unwrap();
        let env: HashMap<&str, String> = HashMap::new();
        let kubernetes = Method::Kubernetes {
            mount: "kubernetes".into(),
            role: "tazuna".into(),
            jwt_file: Some(jwt),
        };
        let (path, body) = login_request(&env, &kubernetes).unwrap().unwrap();
        assert_eq!(path, "/v1/auth/kubernetes/login");
        assert_eq!(body["jwt"], "eyJ.jwt");
        let approle = Method::AppRole {
            mount: "approle".into(),
            role_id: "r".into(),
            secret_id_file: None,
        };
        assert!(matches!(
            login_request(&env, &approle),
            Err(LoginError::NoSecretId)
        ));
        let answer = br#"{"auth":{"client_token":"hvs.x"}}"#;
        assert_eq!(
            token_of_answer(&approle, &path, 200, answer).unwrap(),
            "hvs.x"
        );
        let refused = token_of_answer(
            &approle,
            "/v1/auth/approle/login",
            400,
            br#"{"errors":["invalid role or secret ID"]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(refused.contains("invalid role or secret ID"), "{refused}");
        assert!(refused.contains("AppRole"), "{refused}");
    }

    #[test]
    fn only_preflights_and_paths_on_a_mount_are_reads() {
        assert_eq!(
            read_of("/v1/sys/internal/ui/mounts/secret/app"),
            Ok(Read::Preflight)
        );
        assert_eq!(
            read_of("/v1/secret/data/app"),
            Ok(Read::OnMount("secret/data/app"))
        );
        let on_mount = Read::OnMount("secret/data/app");
        assert!(query_allowed(&on_mount, Some("version=3")).is_ok());
        for query in ["list=true", "version=3&list=true", "version=", "version=x"] {
            assert!(query_allowed(&on_mount, Some(query)).is_err(), "{query}");
        }
        assert!(query_allowed(&Read::Preflight, Some("version=1")).is_err());
        for bad in [
            "/v2/secret/app",
            "/v1/secret/../auth/token/lookup-self",
            "/v1/secret//app",
            "/v1/secret/./x",
            "/v1/secret/%2e%2e/sys",
            "/sys/health",
        ] {
            assert!(read_of(bad).is_err(), "{bad}");
        }
        let kv = mount_of_answer(
            br#"{"data":{"path":"secret/","type":"kv","options":{"version":"2"}}}"#,
        )
        .unwrap();
        assert!(kv.readable() && kv.holds("secret/data/app"));
        assert!(!kv.holds("secretx/app"));
        let token = Mount {
            path: "auth/token/".into(),
            engine: "token".into(),
        };
        assert!(!token.readable());
    }
}
