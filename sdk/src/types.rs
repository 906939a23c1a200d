//! Conveniences on the types generated from the WIT `types` interface.
//!
//! The generated records keep their public fields; these constructors only save the noise of
//! spelling out every field.

use std::fmt::Display;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{Diagnostic, Manifest, PluginError, RenderOutput, RenderRequest, Severity};

impl Diagnostic {
    /// A finding with the given severity and no location.
    pub fn new(severity: Severity, message: impl Into<String>) -> Self {
        Self {
            severity,
            message: message.into(),
            path: None,
        }
    }

    /// An error: the config or input cannot be used as it is.
    pub fn error(message: impl Into<String>) -> Self {
        Self::new(Severity::Error, message)
    }

    /// A warning: the render works, but probably not as intended.
    pub fn warning(message: impl Into<String>) -> Self {
        Self::new(Severity::Warning, message)
    }

    /// Information for the user, such as a `List` that was expanded.
    pub fn info(message: impl Into<String>) -> Self {
        Self::new(Severity::Info, message)
    }

    /// Sets where the finding is: a JSON pointer into the config (`/data/key`) or a file path.
    pub fn at(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Whether this finding is an error.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl Manifest {
    /// One rendered document from YAML or JSON text.
    pub fn new(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            origin: None,
        }
    }

    /// One rendered document from any serializable object, encoded as compact JSON (which the
    /// host parses faster than YAML).
    pub fn from_object<T: Serialize + ?Sized>(object: &T) -> Result<Self, PluginError> {
        serde_json::to_string(object)
            .map(Self::new)
            .map_err(|error| PluginError::other(format_args!("cannot encode object: {error}")))
    }

    /// Sets where the document came from, such as `dir/a.yaml#2`.
    pub fn with_origin(mut self, origin: impl Into<String>) -> Self {
        self.origin = Some(origin.into());
        self
    }
}

impl Default for RenderOutput {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl RenderOutput {
    /// A render that produced `manifests`, with no diagnostics and no upstream pins.
    pub fn new(manifests: Vec<Manifest>) -> Self {
        Self {
            manifests,
            diagnostics: Vec::new(),
            resolved: Vec::new(),
        }
    }

    /// Adds a diagnostic for the user.
    pub fn with_diagnostic(mut self, diagnostic: Diagnostic) -> Self {
        self.diagnostics.push(diagnostic);
        self
    }
}

impl RenderRequest {
    /// The selected environment's `values`, parsed into `T`.
    ///
    /// A mismatch is reported as [`PluginError::InvalidConfig`] with JSON pointers under
    /// `/values`.
    pub fn values<T: DeserializeOwned>(&self) -> Result<T, PluginError> {
        crate::config::parse(&self.values).map_err(|diagnostics| {
            let diagnostics = diagnostics
                .into_iter()
                .map(|mut diagnostic| {
                    diagnostic.path = Some(format!(
                        "/values{}",
                        diagnostic.path.as_deref().unwrap_or_default()
                    ));
                    diagnostic
                })
                .collect();
            PluginError::InvalidConfig(diagnostics)
        })
    }
}

impl PluginError {
    /// A failure no other case describes.
    pub fn other(message: impl Display) -> Self {
        Self::Other(message.to_string())
    }

    /// A file, chart, artifact or secret named by the config does not exist.
    pub fn not_found(what: impl Display) -> Self {
        Self::NotFound(what.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(values: &str) -> RenderRequest {
        RenderRequest {
            manifest_name: "demo".into(),
            path: None,
            config: "{}".into(),
            namespace: None,
            environment: None,
            values: values.into(),
            cluster: None,
            locked: None,
            workdir: "/workdir".into(),
            scratch: "/scratch".into(),
        }
    }

    #[test]
    fn values_errors_point_under_values() {
        #[derive(serde::Deserialize)]
        #[allow(dead_code)]
        struct Values {
            replicas: u32,
        }
        let error = request(r#"{"replicas": "two"}"#)
            .values::<Values>()
            .err()
            .unwrap();
        let PluginError::InvalidConfig(diagnostics) = error else {
            panic!("expected invalid-config, got {error:?}");
        };
        assert_eq!(diagnostics[0].path.as_deref(), Some("/values/replicas"));
    }

    #[test]
    fn manifest_from_object_is_compact_json() {
        let manifest = Manifest::from_object(&serde_json::json!({"kind": "ConfigMap", "b": 1}))
            .unwrap()
            .with_origin("a.yaml#0");
        assert_eq!(manifest.content, r#"{"kind":"ConfigMap","b":1}"#);
        assert_eq!(manifest.origin.as_deref(), Some("a.yaml#0"));
    }
}
