//! The tool operations the host knows (`helm template`, `kustomize build`,
//! `helmfile template`), asked for with typed options: the host builds the
//! command line itself, so no value of yours (or of your users) can become a
//! flag. Each needs the grant `exec:<tool>`. This is how a third-party plugin
//! renders with these tools; free arguments through [`crate::exec`] need the
//! grant `exec-argv:<tool>` too. Outside a Tazuna host every call is denied.
//!
//! ```no_run
//! use tazuna_sdk::tools::{self, HelmTemplateRequest};
//!
//! # fn render() -> Result<(), tazuna_sdk::PluginError> {
//! let output = tools::helm_template(&HelmTemplateRequest {
//!     release: "demo".into(),
//!     chart: "/manifest/charts/demo".into(),
//!     version: None,
//!     repo: None,
//!     namespace: Some("web".into()),
//!     values_files: vec!["/manifest/values/prod.yaml".into()],
//!     include_crds: true,
//!     kube_version: None,
//!     api_versions: Vec::new(),
//! })?;
//! let yaml = output.stdout_text();
//! # Ok(()) }
//! ```

use crate::PluginError;
use crate::exec::{Output, checked};

pub use crate::bindings::source::tazuna::plugin::tools::{
    HelmTemplateRequest, HelmfileTemplateRequest, KustomizeBuildRequest,
};

/// `helm template`; a non-zero exit is [`PluginError::ToolFailed`].
pub fn helm_template(request: &HelmTemplateRequest) -> Result<Output, PluginError> {
    #[cfg(target_arch = "wasm32")]
    let output = crate::bindings::source::tazuna::plugin::tools::helm_template(request)?;
    #[cfg(not(target_arch = "wasm32"))]
    let output = outside_host("helm", request)?;
    checked("helm", output)
}

/// `kustomize build`; a non-zero exit is [`PluginError::ToolFailed`].
pub fn kustomize_build(request: &KustomizeBuildRequest) -> Result<Output, PluginError> {
    #[cfg(target_arch = "wasm32")]
    let output = crate::bindings::source::tazuna::plugin::tools::kustomize_build(request)?;
    #[cfg(not(target_arch = "wasm32"))]
    let output = outside_host("kustomize", request)?;
    checked("kustomize", output)
}

/// `helmfile template`, printed to stdout; a non-zero exit is
/// [`PluginError::ToolFailed`].
pub fn helmfile_template(request: &HelmfileTemplateRequest) -> Result<Output, PluginError> {
    #[cfg(target_arch = "wasm32")]
    let output = crate::bindings::source::tazuna::plugin::tools::helmfile_template(request)?;
    #[cfg(not(target_arch = "wasm32"))]
    let output = outside_host("helmfile", request)?;
    checked("helmfile", output)
}

#[cfg(not(target_arch = "wasm32"))]
fn outside_host<T>(tool: &str, _: &T) -> Result<Output, PluginError> {
    Err(PluginError::CapabilityDenied(format!(
        "exec:{tool} (not running inside a Tazuna host)"
    )))
}
