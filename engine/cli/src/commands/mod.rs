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
pub mod scaffold;
pub mod schema;
pub mod state;
pub mod status;
pub mod tags;
pub mod verify;
pub mod version;

use tazuna_core::config::{self, Config, LoadOptions, Manifest};
use tazuna_core::lock::Lockfile;
use tazuna_engine::distribution::{Blobs, Resolve};
use tazuna_engine::host::PluginHost;
use tazuna_engine::plugins::{self, PluginSet, Role};
use tazuna_engine::render::{self, RenderError, RenderSettings, Rendered};

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
    config.check_types_tagged(&builtins, &settings.tags)?;
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
    let mut types: Vec<&str> = manifests.iter().map(|m| m.kind.as_str()).collect();
    types.sort_unstable();
    types.dedup();
    let wanted: Vec<(&str, Role)> = types.into_iter().map(|t| (t, Role::Source)).collect();
    let host = PluginHost::new(settings.host.clone())?;
    let set = load_plugin_set(settings, config, &host, &wanted, Resolve::Pinned)?;
    Ok((host, set))
}

/// What each plugin of `spec.plugins` is used as: a secret resolver when a
/// provider of `spec.providers` has its name as `type`, a source when a
/// manifest does, else whichever world it targets.
pub fn declared_roles(config: &Config) -> Vec<(&str, Role)> {
    config
        .spec
        .plugins
        .iter()
        .map(|d| {
            let role = if config.spec.providers.iter().any(|p| p.kind == d.name) {
                Role::Resolver
            } else if config.manifests.iter().any(|m| m.kind == d.name) {
                Role::Source
            } else {
                Role::Either
            };
            (d.name.as_str(), role)
        })
        .collect()
}

/// Load the plugins `wanted` names in their roles: built-ins, and declared
/// plugins, `oci://` ones by their pins in tazuna.lock (resolved and pinned
/// when they have none, or again with [`Resolve::Again`]).
pub fn load_plugin_set(
    settings: &GlobalSettings,
    config: &Config,
    host: &PluginHost,
    wanted: &[(&str, Role)],
    resolve: Resolve,
) -> anyhow::Result<PluginSet> {
    let declared = &config.spec.plugins;
    let lock_path = Lockfile::path_for(&settings.file);
    let needs_oci = declared.iter().any(|d| {
        matches!(d.source, config::PluginSource::Oci { .. })
            && wanted.iter().any(|(name, _)| *name == d.name)
    });
    if !needs_oci {
        return Ok(PluginSet::load(
            host,
            wanted,
            declared,
            &Default::default(),
        )?);
    }
    let lock = Lockfile::load(&lock_path)?;
    let blobs = Blobs::new(settings.host.cache_dir.as_deref());
    let fetched = block_on(plugins::fetch_oci(declared, wanted, &lock, resolve, &blobs))?;
    let set = PluginSet::load(host, wanted, declared, &fetched)?;
    let pins = plugins::new_pins(&set, fetched);
    if !pins.is_empty() {
        Lockfile::update(&lock_path, |lock| {
            for (name, pin) in pins {
                eprintln!(
                    "pinned plugin `{name}` {} ({}) in {}",
                    pin.version,
                    pin.manifest_digest,
                    lock_path.display()
                );
                lock.plugins.insert(name, pin);
            }
            anyhow::Ok(())
        })?;
    }
    Ok(set)
}

/// Render `manifests`, then check what they pulled from upstream against the
/// pins in tazuna.lock, recording new ones (see [`render::check_pins`]).
pub fn render_pinned(
    settings: &GlobalSettings,
    host: &PluginHost,
    plugins: &PluginSet,
    manifests: &[&Manifest],
    render_settings: &RenderSettings,
) -> anyhow::Result<Vec<Result<Rendered, RenderError>>> {
    let mut results = render::render_all(host, plugins, manifests, render_settings);
    let pulled = results
        .iter()
        .any(|r| r.as_ref().is_ok_and(|r| !r.upstream.is_empty()));
    if pulled {
        let lock_path = Lockfile::path_for(&settings.file);
        Lockfile::update(&lock_path, |lock| {
            for line in render::check_pins(lock, &mut results) {
                eprintln!("{line}");
            }
            anyhow::Ok(())
        })?;
    }
    Ok(results)
}

/// Run `future` to completion, inside or outside a runtime.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => tokio::task::block_in_place(|| handle.block_on(future)),
        Err(_) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime starts")
            .block_on(future),
    }
}

/// The async runtime for commands that talk to a cluster.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}
