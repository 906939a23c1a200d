//! Source plugins: the [`SourcePlugin`] trait and the adapter the export macro wires to WIT.

use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::bindings::source::exports::tazuna::plugin::source::Guest;
use crate::bindings::source::tazuna::plugin::types as wit;
use crate::{Diagnostic, PluginError, PluginInfo, RenderOutput, RenderRequest, config};

/// A plugin that turns one manifest entry of `tazuna.yaml` into Kubernetes objects.
///
/// Export an implementation with [`export_source_plugin!`](crate::export_source_plugin). The SDK
/// then answers the host as follows:
///
/// - `describe` returns [`info`](Self::info) plus the JSON schema of [`Config`](Self::Config).
/// - `validate` parses the config and calls [`validate`](Self::validate).
/// - `render` parses the config, calls [`validate`](Self::validate), fails with
///   [`PluginError::InvalidConfig`] if any finding is an error, and otherwise calls
///   [`render`](Self::render), putting the remaining findings before the render's own
///   diagnostics.
///
/// A config that does not parse fails with [`PluginError::InvalidConfig`], its diagnostic's path
/// being the JSON pointer of the offending value.
pub trait SourcePlugin {
    /// The manifest's per-type block, parsed with serde. Use [`NoConfig`](crate::NoConfig) for a
    /// plugin that takes none.
    type Config: DeserializeOwned + JsonSchema;

    /// The plugin's name, version, description and requested capabilities.
    fn info() -> PluginInfo;

    /// Checks a parsed config beyond what its type enforces. The default finds nothing.
    fn validate(config: &Self::Config) -> Vec<Diagnostic> {
        let _ = config;
        Vec::new()
    }

    /// Renders one manifest.
    fn render(config: Self::Config, request: &RenderRequest) -> Result<RenderOutput, PluginError>;
}

/// Implements the WIT `source` interface for any [`SourcePlugin`].
#[doc(hidden)]
pub struct SourceExport<P>(PhantomData<P>);

impl<P: SourcePlugin> Guest for SourceExport<P> {
    fn describe() -> wit::PluginInfo {
        crate::log::forward_panics();
        P::info().into_wit::<P::Config>()
    }

    fn validate(config: String) -> Vec<Diagnostic> {
        crate::log::forward_panics();
        match config::parse::<P::Config>(&config) {
            Ok(config) => P::validate(&config),
            Err(diagnostics) => diagnostics,
        }
    }

    fn render(request: RenderRequest) -> Result<RenderOutput, PluginError> {
        crate::log::forward_panics();
        render::<P>(&request)
    }
}

/// The body of the exported `render`, separate so it can be tested on the host target.
fn render<P: SourcePlugin>(request: &RenderRequest) -> Result<RenderOutput, PluginError> {
    let config = config::parse::<P::Config>(&request.config).map_err(PluginError::InvalidConfig)?;
    let mut findings = P::validate(&config);
    if findings.iter().any(Diagnostic::is_error) {
        return Err(PluginError::InvalidConfig(findings));
    }
    let mut output = P::render(config, request)?;
    findings.append(&mut output.diagnostics);
    output.diagnostics = findings;
    Ok(output)
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;
    use crate::Manifest;

    #[derive(Deserialize, JsonSchema)]
    struct Config {
        replicas: i32,
    }

    struct Demo;

    impl SourcePlugin for Demo {
        type Config = Config;

        fn info() -> PluginInfo {
            PluginInfo::new("demo", "1.0.0").with_capability("exec:helm")
        }

        fn validate(config: &Config) -> Vec<Diagnostic> {
            match config.replicas {
                ..0 => vec![Diagnostic::error("replicas must not be negative").at("/replicas")],
                0 => vec![Diagnostic::warning("zero replicas").at("/replicas")],
                _ => Vec::new(),
            }
        }

        fn render(config: Config, request: &RenderRequest) -> Result<RenderOutput, PluginError> {
            let object = serde_json::json!({"name": request.manifest_name, "n": config.replicas});
            Ok(RenderOutput::new(vec![Manifest::from_object(&object)?])
                .with_diagnostic(Diagnostic::info("rendered")))
        }
    }

    fn request(config: &str) -> RenderRequest {
        RenderRequest {
            manifest_name: "demo".into(),
            path: None,
            config: config.into(),
            namespace: None,
            environment: None,
            values: "{}".into(),
            cluster: None,
            locked: None,
            workdir: "/workdir".into(),
            scratch: "/scratch".into(),
        }
    }

    #[test]
    fn describe_reports_the_config_schema() {
        let info = <SourceExport<Demo> as Guest>::describe();
        assert_eq!(info.name, "demo");
        assert_eq!(info.capabilities, ["exec:helm"]);
        let schema: serde_json::Value = serde_json::from_str(&info.config_schema).unwrap();
        assert_eq!(schema["properties"]["replicas"]["type"], "integer");
    }

    #[test]
    fn validate_reports_parse_errors_and_findings() {
        let parse_error = <SourceExport<Demo> as Guest>::validate(r#"{"replicas": "x"}"#.into());
        assert_eq!(parse_error[0].path.as_deref(), Some("/replicas"));
        assert!(<SourceExport<Demo> as Guest>::validate(r#"{"replicas": 2}"#.into()).is_empty());
    }

    #[test]
    fn render_refuses_a_config_with_errors() {
        let error = render::<Demo>(&request(r#"{"replicas": -1}"#)).unwrap_err();
        assert!(
            matches!(error, PluginError::InvalidConfig(d) if d[0].message.contains("negative"))
        );
    }

    #[test]
    fn render_keeps_warnings_before_its_own_diagnostics() {
        let output = render::<Demo>(&request(r#"{"replicas": 0}"#)).unwrap();
        let messages: Vec<_> = output
            .diagnostics
            .iter()
            .map(|d| d.message.as_str())
            .collect();
        assert_eq!(messages, ["zero replicas", "rendered"]);
        assert_eq!(output.manifests[0].content, r#"{"name":"demo","n":0}"#);
    }
}
