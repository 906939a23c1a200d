//! The built-in `oras` source: an OCI artifact (for example a bundle pushed with `oras push`),
//! pulled by the host with its own credentials (grant `artifacts:pull`), then rendered as a
//! kustomization (grant `exec:kustomize`), a helmfile (grants `exec:helmfile`, `exec:helm`) or
//! plain files.
//!
//! ```yaml
//! - name: ingress-nginx
//!   type: oras
//!   oras:                                   # Go Tazuna's block
//!     reference: registry.example.com/platform/ingress-bundle@sha256:…
//!     target: kustomize/ingress-nginx       # a path inside the artifact
//!     delegate:
//!       type: kustomize
//!       kustomize:
//!         defaultNamespace: ingress-nginx
//! ```

use schemars::JsonSchema;
use serde::Deserialize;
use tazuna_plugin_common::{files, helmfile, kustomize, paths};
use tazuna_sdk::{
    Diagnostic, PluginError, PluginInfo, RenderOutput, RenderRequest, ResolvedRef, SourcePlugin,
};

/// The `oras:` block.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Config {
    /// The artifact: `registry/repository:tag` or `registry/repository@sha256:…`; `oci://` may
    /// be written in front.
    pub reference: String,
    /// What to render, as a path inside the artifact; all of it when left out.
    pub target: Option<String>,
    /// Go Tazuna's registry login. Not used: Tazuna pulls with the credentials of the docker
    /// config (`docker login`, `oras login`), so no plugin ever holds a password.
    pub auth: Option<serde_json::Value>,
    /// Reach the registry over plain HTTP (registries on a loopback address always are).
    #[serde(default, rename = "plainHTTP")]
    pub plain_http: bool,
    /// Go Tazuna's switch to skip TLS verification. Not honoured: Tazuna always verifies the
    /// registry's certificate.
    #[serde(default, rename = "insecureSkipVerify")]
    pub insecure_skip_verify: bool,
    /// How to render what was pulled: as a kustomization (`type: kustomize`, with its
    /// `kustomize:` block), a helmfile (`type: helmfile`, with its `helmfile:` block) or files
    /// (`type: manifests`, the default).
    pub delegate: Option<Delegate>,
}

/// The source the pulled files are handed to.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Delegate {
    /// `kustomize`, `helmfile` or `manifests`.
    #[serde(rename = "type")]
    pub kind: DelegateType,
    /// The `kustomize` block, with `type: kustomize`.
    pub kustomize: Option<kustomize::Config>,
    /// The `helmfile` block, with `type: helmfile`.
    pub helmfile: Option<helmfile::Config>,
    /// The `manifests` block (it takes no fields), with `type: manifests`.
    pub manifests: Option<serde_json::Map<String, serde_json::Value>>,
}

/// The sources a pulled artifact can be rendered by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DelegateType {
    /// YAML and JSON files, as the `manifests` source reads them.
    Manifests,
    /// A kustomization, as the `kustomize` source builds it.
    Kustomize,
    /// A helmfile, as the `helmfile` source templates it.
    Helmfile,
}

impl DelegateType {
    /// The name `delegate.type` gives it.
    fn name(self) -> &'static str {
        match self {
            Self::Manifests => "manifests",
            Self::Kustomize => "kustomize",
            Self::Helmfile => "helmfile",
        }
    }
}

/// The `oras` source plugin.
pub struct Oras;

impl SourcePlugin for Oras {
    type Config = Config;

    fn info() -> PluginInfo {
        PluginInfo::new("oras", env!("CARGO_PKG_VERSION"))
            .with_description(
                "An OCI artifact, pulled by the host and rendered as files or a kustomization.",
            )
            .with_capability("artifacts:pull")
            .with_capability("exec:kustomize")
            .with_capability("exec:helmfile")
            .with_capability("exec:helm")
            .with_capability("secrets:exec")
    }

    fn validate(config: &Config) -> Vec<Diagnostic> {
        let mut found = Vec::new();
        if config.auth.is_some() {
            found.push(
                Diagnostic::warning(
                    "`auth` is not used: Tazuna pulls with the registry credentials of the docker config (`docker login` or `oras login`), so no plugin holds a password; remove `auth` once the login is there",
                )
                .at("/auth"),
            );
        }
        if config.insecure_skip_verify {
            found.push(
                Diagnostic::warning(
                    "`insecureSkipVerify` is not honoured: Tazuna always verifies the registry's certificate",
                )
                .at("/insecureSkipVerify"),
            );
        }
        if let Some(delegate) = &config.delegate {
            let blocks = [
                (
                    "kustomize",
                    delegate.kustomize.is_some(),
                    DelegateType::Kustomize,
                ),
                (
                    "helmfile",
                    delegate.helmfile.is_some(),
                    DelegateType::Helmfile,
                ),
                (
                    "manifests",
                    delegate.manifests.is_some(),
                    DelegateType::Manifests,
                ),
            ];
            for (block, given, kind) in blocks {
                if given && kind != delegate.kind {
                    found.push(
                        Diagnostic::error(format!(
                            "`delegate.{block}` does not go with `delegate.type: {}`",
                            delegate.kind.name()
                        ))
                        .at(format!("/delegate/{block}")),
                    );
                }
            }
            if delegate
                .manifests
                .as_ref()
                .is_some_and(|block| !block.is_empty())
            {
                found.push(
                    Diagnostic::error("the `manifests` source takes no fields")
                        .at("/delegate/manifests"),
                );
            }
            if let Some(block) = &delegate.helmfile {
                found.extend(block.check().into_iter().map(|mut d| {
                    d.path = Some(format!("/delegate/helmfile{}", d.path.unwrap_or_default()));
                    d
                }));
            }
        }
        found
    }

    fn render(config: Config, request: &RenderRequest) -> Result<RenderOutput, PluginError> {
        // `http://` asks the host for plain HTTP.
        let bare = config.reference.trim_start_matches("oci://");
        let reference = if config.plain_http {
            format!("http://{bare}")
        } else {
            bare.to_owned()
        };
        let fetched = tazuna_sdk::artifacts::pull_oci(&reference, &[])?;
        let target = config.target.as_deref().unwrap_or(".");
        // Checked here so a target that climbs out names the field.
        paths::inside(&fetched.path, target, "/target")
            .map_err(|diagnostic| PluginError::InvalidConfig(vec![diagnostic]))?;
        let inner = RenderRequest {
            path: Some(target.to_owned()),
            config: "{}".to_owned(),
            workdir: fetched.path.clone(),
            ..request.clone()
        };
        let kind = config
            .delegate
            .as_ref()
            .map_or(DelegateType::Manifests, |d| d.kind);
        let mut output = match kind {
            DelegateType::Manifests => files::render(&inner),
            DelegateType::Kustomize => {
                let block = config
                    .delegate
                    .and_then(|d| d.kustomize)
                    .unwrap_or_default();
                kustomize::render(block, &inner)
            }
            DelegateType::Helmfile => {
                let block = config.delegate.and_then(|d| d.helmfile).unwrap_or_default();
                helmfile::render(block, &inner)
            }
        }
        .map_err(|error| in_artifact(error, &config.reference))?;
        output.resolved.push(ResolvedRef {
            location: config.reference.clone(),
            version: None,
            digest: Some(fetched.digest),
        });
        Ok(output)
    }
}

/// Says that a not-found path is inside the artifact, not the repository.
fn in_artifact(error: PluginError, reference: &str) -> PluginError {
    match error {
        PluginError::NotFound(what) => {
            PluginError::NotFound(format!("{what} (in the artifact `{reference}`)"))
        }
        other => other,
    }
}

tazuna_sdk::export_source_plugin!(Oras);

#[cfg(test)]
mod tests {
    use super::*;

    fn config(json: &str) -> Config {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn go_tazuna_blocks_parse_and_auth_is_pointed_out() {
        let config = config(
            r#"{"reference": "registry.example.com/platform/bundle@sha256:abc",
                "target": "kustomize/ingress-nginx", "plainHTTP": false,
                "auth": {"username": "ci-bot", "password": "${REGISTRY_TOKEN}"},
                "delegate": {"type": "kustomize", "kustomize": {"defaultNamespace": "ingress-nginx"}}}"#,
        );
        let found = Oras::validate(&config);
        assert_eq!(found.len(), 1);
        assert!(!found[0].is_error());
        assert_eq!(found[0].path.as_deref(), Some("/auth"));
        assert_eq!(
            config
                .delegate
                .unwrap()
                .kustomize
                .unwrap()
                .default_namespace
                .as_deref(),
            Some("ingress-nginx")
        );
    }

    #[test]
    fn a_block_for_the_other_delegate_is_an_error() {
        let config =
            config(r#"{"reference": "r/x:1", "delegate": {"type": "manifests", "kustomize": {}}}"#);
        let found = Oras::validate(&config);
        assert_eq!(found[0].path.as_deref(), Some("/delegate/kustomize"));
        assert!(found[0].is_error());
    }

    #[test]
    fn outside_a_host_the_pull_is_denied() {
        let request = RenderRequest {
            manifest_name: "bundle".into(),
            path: None,
            config: "{}".into(),
            namespace: None,
            environment: None,
            values: "{}".into(),
            cluster: None,
            locked: None,
            workdir: "/manifest".into(),
            scratch: "/scratch".into(),
        };
        let error = Oras::render(config(r#"{"reference": "r/x:1"}"#), &request).unwrap_err();
        assert!(
            matches!(error, PluginError::CapabilityDenied(_)),
            "{error:?}"
        );
    }
}
