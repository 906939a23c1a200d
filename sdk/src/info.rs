//! What a plugin says about itself in `describe`.

use schemars::JsonSchema;

use crate::bindings::source::tazuna::plugin::types as wit;

/// A plugin's name, version, description and requested capabilities.
///
/// The SDK adds the JSON schema of the plugin's `Config` when it answers `describe`, so the
/// plugin never writes a schema by hand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginInfo {
    /// The plugin's name, used as the manifest `type` (`manifests`, `helm`).
    pub name: String,
    /// The plugin's version, usually `env!("CARGO_PKG_VERSION")`.
    pub version: String,
    /// One sentence saying what the plugin renders or resolves.
    pub description: String,
    /// Capabilities the plugin asks for, such as `exec:helm` or `artifacts:pull`. Only those the
    /// user also grants take effect.
    pub capabilities: Vec<String>,
}

impl PluginInfo {
    /// A plugin called `name` at `version`, without description or capabilities.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            description: String::new(),
            capabilities: Vec::new(),
        }
    }

    /// Sets the one-sentence description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Asks for one more capability, such as `exec:helm`.
    pub fn with_capability(mut self, capability: impl Into<String>) -> Self {
        self.capabilities.push(capability.into());
        self
    }

    /// The WIT `plugin-info` for a plugin whose config is `C`.
    pub(crate) fn into_wit<C: JsonSchema>(self) -> wit::PluginInfo {
        wit::PluginInfo {
            name: self.name,
            version: self.version,
            description: self.description,
            config_schema: crate::config::schema_of::<C>(),
            capabilities: self.capabilities,
        }
    }
}
