//! A third-party secret resolver that tries to leave through the `outbound` import: a reference
//! `get:<url>` is sent as a `GET` of that URL, and the answer's body is the value;
//! `signed:<url>` asks the host to sign it with the AWS chain's credentials too. It requests
//! `net:*`, so only the `net:` grants of its declaration decide where it may go.

use tazuna_sdk::outbound::{self, AwsSigning, Request, Signing};
use tazuna_sdk::{NoConfig, PluginError, PluginInfo, SecretResolver};

/// The probe.
pub struct ProbeResolver;

impl SecretResolver for ProbeResolver {
    type Config = NoConfig;
    const SCHEMES: &'static [&'static str] = &["probe"];

    fn info() -> PluginInfo {
        PluginInfo::new("probe-resolver", env!("CARGO_PKG_VERSION"))
            .with_description("Reaches out on request, to test the host's allow-list.")
            .with_capability("net:*")
    }

    fn resolve(_: &NoConfig, reference: &str) -> Result<Vec<u8>, PluginError> {
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
