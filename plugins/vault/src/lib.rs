//! The built-in `vault` secret resolver: values from HashiCorp Vault's KV secrets engines, version
//! 2 and version 1.
//!
//! ```yaml
//! spec:
//!   providers:
//!     - name: vault
//!       type: vault
//!       vault:
//!         address: https://vault.example.com:8200
//!         namespace: platform            # Vault Enterprise; optional
//!         caFile: certs/vault-ca.pem     # trusted besides the system's roots; optional
//!         auth:                          # optional; the default is `method: token`
//!           method: kubernetes           # token | approle | kubernetes
//!           role: tazuna
//!           # mount: kubernetes          # where the method is enabled; the default is its name
//!           # jwtFile: /var/run/secrets/kubernetes.io/serviceaccount/token
//! ```
//!
//! A reference names a mount, a path on it, and a key of the secret's data:
//! `ref+vault:secret/argocd/repo#password`, `ref+vault:secret/argocd/repo?version=3#password`
//! (KV v2 only), `ref+vault:kv1/app#/nested/key`. The mount is found the way the Vault CLI finds
//! it, so a mount may have slashes in its name. Without a key the whole data comes out as JSON.
//!
//! The plugin holds no token and opens no socket: the host logs in (a token from `VAULT_TOKEN` or
//! `~/.vault-token`, AppRole with `VAULT_SECRET_ID` or a `secretIdFile`, or Kubernetes with the
//! pod's service account token or a `jwtFile`), sends each request only to `address`, and lets the
//! plugin read only from KV mounts. Each secret is read once a run, however many keys of it are
//! used.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tazuna_sdk::outbound::{
    self, ApproleLogin, KubernetesLogin, Request, Response, VaultLogin, VaultMethod,
};
use tazuna_sdk::{Diagnostic, PluginError, PluginInfo, SecretResolver};

/// The `vault:` block of a provider.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Config {
    /// The Vault's address, such as `https://vault.example.com:8200`.
    pub address: Option<String>,
    /// The Vault Enterprise namespace.
    pub namespace: Option<String>,
    /// A PEM file of the CA that signed the Vault's certificate, relative to the file that
    /// declares the provider.
    pub ca_file: Option<String>,
    /// How the host logs in; a token (`VAULT_TOKEN`, `~/.vault-token`) when absent.
    pub auth: Option<Auth>,
}

/// `auth:` of a `vault` provider.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Auth {
    /// `token`, `approle` or `kubernetes`.
    pub method: AuthMethod,
    /// Where the method is enabled (`auth/<mount>`); its name by default.
    pub mount: Option<String>,
    /// AppRole: the role id.
    pub role_id: Option<String>,
    /// AppRole: a file holding the secret id, when `VAULT_SECRET_ID` is not set.
    pub secret_id_file: Option<String>,
    /// Kubernetes: the Vault role.
    pub role: Option<String>,
    /// Kubernetes: the service account token's file, when not the pod's own.
    pub jwt_file: Option<String>,
}

/// A login method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AuthMethod {
    Token,
    Approle,
    Kubernetes,
}

fn invalid(message: &str, at: &str) -> PluginError {
    PluginError::InvalidConfig(vec![Diagnostic::error(message).at(at)])
}

/// The host's login of `config`.
pub fn login_of(config: &Config) -> Result<VaultLogin, PluginError> {
    let address = config
        .address
        .clone()
        .filter(|a| !a.is_empty())
        .ok_or_else(|| {
            invalid(
                "no `address`: name the Vault, such as `https://vault.example.com:8200`",
                "/address",
            )
        })?;
    let method = match &config.auth {
        None => VaultMethod::Token,
        Some(auth) => {
            let mount = |default: &str| auth.mount.clone().unwrap_or_else(|| default.to_owned());
            match auth.method {
                AuthMethod::Token => VaultMethod::Token,
                AuthMethod::Approle => VaultMethod::Approle(ApproleLogin {
                    mount: mount("approle"),
                    role_id: auth.role_id.clone().ok_or_else(|| {
                        invalid("`method: approle` needs a `roleId`", "/auth/roleId")
                    })?,
                    secret_id_file: auth.secret_id_file.clone(),
                }),
                AuthMethod::Kubernetes => VaultMethod::Kubernetes(KubernetesLogin {
                    mount: mount("kubernetes"),
                    role: auth.role.clone().ok_or_else(|| {
                        invalid("`method: kubernetes` needs a `role`", "/auth/role")
                    })?,
                    jwt_file: auth.jwt_file.clone(),
                }),
            }
        }
    };
    Ok(VaultLogin {
        address: address.trim_end_matches('/').to_owned(),
        namespace: config.namespace.clone(),
        method,
        ca_file: config.ca_file.clone(),
    })
}

/// One reference, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The path, mount included (`secret/argocd/repo`).
    pub path: String,
    /// `?version=N` (KV v2).
    pub version: Option<u64>,
    /// The key of the secret's data.
    pub key: Option<String>,
}

/// Read `ref+<provider>:<mount>/<path>[?version=N][#key]`.
pub fn parse(reference: &str) -> Result<Reference, PluginError> {
    let (rest, key) = match reference.split_once('#') {
        Some((rest, key)) => (rest, Some(key.to_owned())),
        None => (reference, None),
    };
    let (path, query) = match rest.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (rest, None),
    };
    let path = path.trim_matches('/');
    if path.is_empty()
        || !path.contains('/')
        || path
            .split('/')
            .any(|segment| segment.is_empty() || segment == "." || segment == "..")
    {
        return Err(PluginError::not_found(format_args!(
            "`{path}` is no secret path: write `ref+<provider>:<mount>/<path>#<key>`"
        )));
    }
    let version = match query {
        None => None,
        Some(query) => match query.split_once('=') {
            Some(("version", number)) => Some(number.parse::<u64>().map_err(|_| {
                PluginError::not_found(format_args!(
                    "`?{query}` in the reference to `{path}`: a version is a number"
                ))
            })?),
            _ => {
                return Err(PluginError::not_found(format_args!(
                    "`?{query}` in the reference to `{path}`: write `?version=<n>`"
                )));
            }
        },
    };
    Ok(Reference {
        path: path.to_owned(),
        version,
        key: key.filter(|key| !key.is_empty()),
    })
}

/// A KV mount, as the preflight names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// With a trailing `/`.
    pub path: String,
    /// The KV version: 1 or 2.
    pub version: u8,
}

impl Mount {
    /// The API path of `path` on this mount, at `version`.
    pub fn api_path(&self, path: &str, version: Option<u64>) -> Result<String, PluginError> {
        let below = path.strip_prefix(&self.path).unwrap_or(path);
        match (self.version, version) {
            (2, None) => Ok(format!("/v1/{}data/{below}", self.path)),
            (2, Some(n)) => Ok(format!("/v1/{}data/{below}?version={n}", self.path)),
            (_, None) => Ok(format!("/v1/{path}")),
            (_, Some(_)) => Err(PluginError::not_found(format_args!(
                "`{path}?version=…`: the mount `{}` is KV version 1, which keeps no versions",
                self.path
            ))),
        }
    }
}

/// The mount of a preflight answer.
pub fn mount_of(answer: &Value) -> Option<Mount> {
    let data = answer.get("data")?;
    let path = data.get("path")?.as_str()?.to_owned();
    let version = match data.pointer("/options/version").and_then(Value::as_str) {
        Some("2") => 2,
        _ => 1,
    };
    Some(Mount { path, version })
}

/// The data of a read's answer: KV v2 nests it once more.
pub fn data_of(mount: &Mount, answer: &Value) -> Option<Value> {
    let data = answer.get("data")?;
    if mount.version == 2 {
        data.get("data").filter(|d| d.is_object()).cloned()
    } else {
        Some(data.clone())
    }
}

/// The Vault's words in an error answer: paths and reasons, never a value.
fn errors(answer: &Response) -> String {
    let json: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    let said: Vec<&str> = json["errors"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if said.is_empty() {
        format!("HTTP {}", answer.status)
    } else {
        format!("HTTP {}: {}", answer.status, said.join("; "))
    }
}

/// One Vault, logged in.
struct Store {
    login: VaultLogin,
    mounts: Vec<Mount>,
}

impl Store {
    fn get(&self, path_and_query: &str) -> Result<Response, PluginError> {
        outbound::send_vault(
            Request {
                method: "GET".to_owned(),
                url: format!("{}{path_and_query}", self.login.address),
                headers: Vec::new(),
                body: Vec::new(),
                sign: None,
            },
            &self.login,
        )
    }

    /// The mount `path` is on.
    fn mount(&mut self, path: &str) -> Result<Mount, PluginError> {
        if let Some(mount) = self.mounts.iter().find(|m| path.starts_with(&m.path)) {
            return Ok(mount.clone());
        }
        let answer = self.get(&format!("/v1/sys/internal/ui/mounts/{path}"))?;
        let json: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
        let mount = (answer.status == 200)
            .then(|| mount_of(&json))
            .flatten()
            .ok_or_else(|| refused(&answer, &format!("no mount of `{path}`")))?;
        self.mounts.push(mount.clone());
        Ok(mount)
    }

    /// The data of the secret at `path`.
    fn read(&mut self, path: &str, version: Option<u64>) -> Result<Value, PluginError> {
        let mount = self.mount(path)?;
        let answer = self.get(&mount.api_path(path, version)?)?;
        let json: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
        if answer.status == 200 {
            return data_of(&mount, &json).ok_or_else(|| {
                PluginError::not_found(format_args!("secret `{path}` in Vault (it was deleted)"))
            });
        }
        Err(refused(&answer, &format!("secret `{path}`")))
    }
}

/// The error of an answer that is not 200.
fn refused(answer: &Response, what: &str) -> PluginError {
    let said = format!("Vault: {what}: {}", errors(answer));
    match answer.status {
        404 => PluginError::NotFound(said),
        401 | 403 => PluginError::CapabilityDenied(format!(
            "{said}; check that the login's policy grants `read` on the path"
        )),
        _ => PluginError::Network(said),
    }
}

/// The `vault` secret resolver.
pub struct Vault;

impl SecretResolver for Vault {
    type Config = Config;
    const SCHEMES: &'static [&'static str] = &["vault"];

    fn info() -> PluginInfo {
        PluginInfo::new("vault", env!("CARGO_PKG_VERSION"))
            .with_description("Values from Vault's KV engines; the host logs in and sends.")
    }

    fn resolve(config: &Config, reference: &str) -> Result<Vec<u8>, PluginError> {
        Self::resolve_all(config, &[reference.to_owned()])
            .pop()
            .unwrap_or_else(|| Err(PluginError::other("no answer")))
    }

    fn resolve_all(config: &Config, references: &[String]) -> Vec<Result<Vec<u8>, PluginError>> {
        let mut store = match login_of(config) {
            Ok(login) => Store {
                login,
                mounts: Vec::new(),
            },
            Err(error) => return references.iter().map(|_| Err(error.clone())).collect(),
        };
        let mut read: BTreeMap<(String, Option<u64>), Result<Value, PluginError>> = BTreeMap::new();
        references
            .iter()
            .map(|reference| {
                let reference = parse(reference)?;
                let at = (reference.path.clone(), reference.version);
                let data = read
                    .entry(at)
                    .or_insert_with(|| store.read(&reference.path, reference.version))
                    .clone()?;
                match &reference.key {
                    Some(key) => tazuna_sdk::secret::pick(
                        &format!("secret `{}`", reference.path),
                        &data,
                        key,
                    ),
                    None => Ok(data.to_string().into_bytes()),
                }
            })
            .collect()
    }
}

tazuna_sdk::export_secret_resolver!(Vault);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_names_a_path_a_version_and_a_key() {
        assert_eq!(
            parse("secret/argocd/repo#password").unwrap(),
            Reference {
                path: "secret/argocd/repo".into(),
                version: None,
                key: Some("password".into())
            }
        );
        assert_eq!(parse("secret/app?version=3#k").unwrap().version, Some(3));
        for bad in [
            "",
            "secret",
            "secret/../sys/x",
            "secret//x",
            "a/b?v=1",
            "a/b?version=x",
        ] {
            assert!(
                matches!(parse(bad), Err(PluginError::NotFound(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn kv_versions_make_their_own_paths_and_data() {
        let v2 = mount_of(&serde_json::json!({"data": {"path": "secret/", "type": "kv", "options": {"version": "2"}}})).unwrap();
        assert_eq!(
            v2.api_path("secret/a/b", None).unwrap(),
            "/v1/secret/data/a/b"
        );
        assert_eq!(
            v2.api_path("secret/a", Some(2)).unwrap(),
            "/v1/secret/data/a?version=2"
        );
        let v1 = mount_of(
            &serde_json::json!({"data": {"path": "team/kv/", "type": "kv", "options": null}}),
        )
        .unwrap();
        assert_eq!(v1.version, 1);
        assert_eq!(v1.api_path("team/kv/app", None).unwrap(), "/v1/team/kv/app");
        assert!(v1.api_path("team/kv/app", Some(1)).is_err());
        let read = serde_json::json!({"data": {"data": {"k": "v"}, "metadata": {}}});
        assert_eq!(data_of(&v2, &read).unwrap(), serde_json::json!({"k": "v"}));
        let deleted =
            serde_json::json!({"data": {"data": null, "metadata": {"deletion_time": "x"}}});
        assert!(data_of(&v2, &deleted).is_none());
    }

    #[test]
    fn a_login_needs_what_its_method_needs() {
        let config = |auth: Option<Auth>| Config {
            address: Some("https://vault.example.com:8200/".into()),
            auth,
            ..Config::default()
        };
        let login = login_of(&config(None)).unwrap();
        assert_eq!(login.address, "https://vault.example.com:8200");
        assert_eq!(login.method, VaultMethod::Token);
        let approle = Auth {
            method: AuthMethod::Approle,
            mount: None,
            role_id: None,
            secret_id_file: None,
            role: None,
            jwt_file: None,
        };
        assert!(matches!(
            login_of(&config(Some(approle.clone()))),
            Err(PluginError::InvalidConfig(_))
        ));
        let with_role = Auth {
            role_id: Some("r".into()),
            ..approle
        };
        match login_of(&config(Some(with_role))).unwrap().method {
            VaultMethod::Approle(login) => assert_eq!(login.mount, "approle"),
            other => panic!("{other:?}"),
        }
        assert!(login_of(&Config::default()).is_err());
    }
}
