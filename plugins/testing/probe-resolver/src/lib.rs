//! A third-party secret resolver that tries to leave through the `outbound` import: a reference
//! `get:<url>` is sent as a `GET` of that URL, and the answer's body is the value;
//! `signed:<url>` asks the host to sign it with the AWS chain's credentials too;
//! `vault:<address>|<path>` asks the host to send a `GET` of `<path>` to the Vault at
//! `<address>` with the token it logs in with (`VAULT_TOKEN`), and the answer's body is the value;
//! `vault-jwt:<address>|<file>` asks for a Kubernetes login with the token file `<file>`;
//! `secret:<context>|<namespace>/<name>` asks the host to read a Secret of a cluster;
//! `age:<file>` asks the host to open `<file>` (below the provider's directory) with the user's
//! age identities. A `caFile` in its config is the Vault's CA. It requests `net:*`, `sign:vault` and `keys:age`, so only the grants of its
//! declaration decide what it may do.

use tazuna_sdk::outbound::{
    self, AwsSigning, KubernetesLogin, Request, Signing, VaultLogin, VaultMethod,
};
use tazuna_sdk::{PluginError, PluginInfo, SecretResolver};

/// The probe.
pub struct ProbeResolver;

impl SecretResolver for ProbeResolver {
    /// Any object; `caFile` is given to the Vault logins.
    type Config = tazuna_sdk::serde_json::Value;
    const SCHEMES: &'static [&'static str] = &["probe"];

    fn info() -> PluginInfo {
        PluginInfo::new("probe-resolver", env!("CARGO_PKG_VERSION"))
            .with_description("Reaches out on request, to test the host's allow-list.")
            .with_capability("net:*")
            .with_capability("sign:vault")
            .with_capability("keys:age")
            .with_capability("read:cluster-secrets")
    }

    fn resolve(config: &Self::Config, reference: &str) -> Result<Vec<u8>, PluginError> {
        let get = |url: &str| Request {
            method: "GET".to_owned(),
            url: url.to_owned(),
            headers: Vec::new(),
            body: Vec::new(),
            sign: None,
        };
        let vault = |address: &str, method: VaultMethod| VaultLogin {
            address: address.to_owned(),
            namespace: None,
            method,
            ca_file: config["caFile"].as_str().map(str::to_owned),
        };
        match reference.split_once(':') {
            Some(("vault", rest)) => {
                let (address, path) = rest.split_once('|').unwrap_or((rest, "/v1/"));
                let answer = outbound::send_vault(
                    get(&format!("{address}{path}")),
                    &vault(address, VaultMethod::Token),
                )?;
                return Ok(answer.body);
            }
            Some(("vault-jwt", rest)) => {
                let (address, file) = rest.split_once('|').unwrap_or((rest, ""));
                let login = vault(
                    address,
                    VaultMethod::Kubernetes(KubernetesLogin {
                        mount: "kubernetes".to_owned(),
                        role: "probe".to_owned(),
                        jwt_file: Some(file.to_owned()),
                    }),
                );
                let answer =
                    outbound::send_vault(get(&format!("{address}/v1/secret/data/x")), &login)?;
                return Ok(answer.body);
            }
            Some(("secret", rest)) => {
                let (context, secret) = rest.split_once('|').unwrap_or((rest, ""));
                let (namespace, name) = secret.split_once('/').unwrap_or(("default", secret));
                let data = tazuna_sdk::clusters::read_secret(context, namespace, name)?;
                return Ok(format!("{} keys", data.len()).into_bytes());
            }
            Some(("age", file)) => {
                let bytes = std::fs::read(format!("/manifest/{file}"))
                    .map_err(|error| PluginError::not_found(format_args!("{file}: {error}")))?;
                return tazuna_sdk::age::open(&[bytes]);
            }
            _ => {}
        }
        let (url, sign) = match reference.split_once(':') {
            Some(("get", url)) => (url, None),
            Some(("signed", url)) => (
                url,
                Some(Signing::AwsSigv4(AwsSigning {
                    service: "secretsmanager".to_owned(),
                    region: "us-east-1".to_owned(),
                    profile: None,
                })),
            ),
            _ => return Err(PluginError::not_found(reference)),
        };
        let answer = outbound::send(Request {
            method: "GET".to_owned(),
            url: url.to_owned(),
            headers: Vec::new(),
            body: Vec::new(),
            sign,
        })?;
        Ok(format!("{} {}", answer.status, answer.body.len()).into_bytes())
    }
}

tazuna_sdk::export_secret_resolver!(ProbeResolver);
