//! One module per verb. Each turns its flags into typed options and calls the
//! engine; shared steps (loading the file, starting the plugin host) live here.

pub mod apply;
pub mod build;
pub mod check;
pub mod cluster;
pub mod completions;
pub mod destroy;
pub mod init;
pub mod plan;
pub mod plugin;
pub mod schema;
pub mod state;
pub mod status;
pub mod tags;
pub mod verify;
pub mod version;

use tazuna_core::config::{self, Config, LoadOptions, Manifest};
use tazuna_engine::host::PluginHost;
use tazuna_engine::plugins::{self, PluginSet};

use crate::settings::GlobalSettings;

/// Load and validate the file the settings name, including that every
/// manifest's `type` has a plugin.
pub fn load_config(settings: &GlobalSettings) -> anyhow::Result<Config> {
    let options = LoadOptions {
        environment: settings.environment.clone(),
        tazuna_version: tazuna_version(),
    };
    let config = config::load(&settings.file, &options)?;
    let builtins: Vec<&str> = plugins::builtin_names().collect();
    config.check_types(&builtins)?;
    Ok(config)
}

/// The running Tazuna's version.
pub fn tazuna_version() -> semver::Version {
    semver::Version::parse(tazuna_engine::VERSION).expect("the crate version is semver")
}

/// Start the plugin host and load the plugins `manifests` need.
pub fn load_plugins(
    settings: &GlobalSettings,
    config: &Config,
    manifests: &[&Manifest],
) -> anyhow::Result<(PluginHost, PluginSet)> {
    let host = PluginHost::new(settings.host.clone())?;
    let mut types: Vec<&str> = manifests.iter().map(|m| m.kind.as_str()).collect();
    types.sort_unstable();
    types.dedup();
    let set = PluginSet::load(&host, &types, &config.spec.plugins)?;
    Ok((host, set))
}

/// The async runtime for commands that talk to a cluster.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}
