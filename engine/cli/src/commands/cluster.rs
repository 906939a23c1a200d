//! Steps every command that talks to a cluster shares: the context guard,
//! connecting, showing the target, and rendering with the cluster's
//! capabilities.

use std::sync::Arc;

use anyhow::anyhow;
use tazuna_core::config::{Config, Manifest};
use tazuna_core::lock::Lockfile;
use tazuna_engine::cluster::{self, Cluster};
use tazuna_engine::distribution::Resolve;
use tazuna_engine::guard::{ContextGuard, Rebind};
use tazuna_engine::plugins::Role;
use tazuna_engine::render::{RenderSettings, Rendered};
use tazuna_engine::secrets::{self, ProviderSecrets};

use crate::settings::GlobalSettings;

/// Whether the command writes to the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads only.
    Read,
    /// Writes to a throwaway control plane `tazuna verify` started: the file's
    /// context rules and cluster binding are about real clusters, not this one.
    Throwaway,
    /// Writes; records the cluster binding on first use.
    Write(Rebind),
}

/// Check the context name, connect, check the cluster identity, and (for
/// writes) print the target and record the binding. Nothing is written to
/// the cluster here.
pub async fn connect(
    settings: &GlobalSettings,
    config: &Config,
    access: Access,
) -> anyhow::Result<Cluster> {
    let lock_path = Lockfile::path_for(&settings.file);
    let guard = ContextGuard {
        rule: config.context_rule(),
        environment: settings.environment.clone(),
        file_uid: config.cluster().and_then(|c| c.uid.clone()),
        lock_path: lock_path.clone(),
    };
    let context = cluster::context_name(&settings.connect).map_err(cluster_error)?;
    if access == Access::Throwaway {
        let mut options = settings.connect.clone();
        options.context = Some(context);
        let cluster = Cluster::connect(&options).await.map_err(cluster_error)?;
        eprintln!("target: {} (throwaway)", cluster.target());
        return Ok(cluster);
    }
    guard
        .check_context(&context)
        .map_err(|e| anyhow!("{e}\nhint: {}", e.hint()))?;
    let mut options = settings.connect.clone();
    options.context = Some(context);
    let cluster = Cluster::connect(&options).await.map_err(cluster_error)?;
    let rebind = match access {
        Access::Read | Access::Throwaway => Rebind::Refuse,
        Access::Write(rebind) => rebind,
    };
    let identity = |lock: &Lockfile| {
        guard
            .check_identity(cluster.target(), lock, rebind)
            .map_err(|e| anyhow!("{e}\nhint: {}", e.hint()))
    };
    if access == Access::Read {
        identity(&Lockfile::load(&lock_path)?)?;
        return Ok(cluster);
    }
    eprintln!("target: {}", cluster.target());
    // Checked again under the lock: a run that bound the file meanwhile
    // decides for this one.
    Lockfile::update(&lock_path, |lock| {
        if let Some(binding) = identity(lock)? {
            eprintln!(
                "binding {} to cluster {} in `{}`",
                settings
                    .environment
                    .as_deref()
                    .map_or("this file".to_owned(), |e| format!("environment `{e}`")),
                binding.uid,
                lock_path.display()
            );
            lock.bind(settings.environment.as_deref(), binding);
        }
        anyhow::Ok(())
    })?;
    Ok(cluster)
}

fn cluster_error(error: cluster::ClusterError) -> anyhow::Error {
    match error.hint() {
        Some(hint) => anyhow!("{}\nhint: {hint}", describe(&error)),
        None => anyhow!("{}", describe(&error)),
    }
}

fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        // Some causes already quote their own source; say each thing once.
        let said = cause.to_string();
        if !text.ends_with(&said) {
            text.push_str(&format!(": {said}"));
        }
        source = cause.source();
    }
    text
}

/// Render `manifests` for `cluster` (plugins see its version and API
/// groups) and resolve the secret references in their Secrets. Each result
/// is the rendered manifest or its error message.
pub fn render(
    settings: &GlobalSettings,
    config: &Config,
    manifests: &[&Manifest],
    cluster: &Cluster,
) -> anyhow::Result<Vec<Result<Rendered, String>>> {
    let (host, plugins) = super::load_plugins(settings, config, manifests)?;
    // Secret references are resolved only here, on the way to a cluster, in
    // rendered Secrets and for the tools plugins run; `tazuna build` prints
    // them as they are. Resolvers load on first use.
    let loader_settings = settings.clone();
    let loader_config = config.clone();
    let secrets = Arc::new(ProviderSecrets::new(
        config.spec.providers.clone(),
        secrets::working_dir(&settings.file),
        settings.host.clone(),
        Box::new(move |host, kind| {
            super::load_plugin_set(
                &loader_settings,
                &loader_config,
                host,
                &[(kind, Role::Resolver)],
                Resolve::Pinned,
            )
            .map_err(|error| format!("{error:#}"))
        }),
    ));
    host.set_tool_secrets(secrets.clone());
    let render_settings = RenderSettings {
        environment: settings.environment.clone(),
        values: config.values(),
        cluster: Some(cluster.info()),
        concurrency: 0,
    };
    let mut results = super::render_pinned(settings, &host, &plugins, manifests, &render_settings)?;
    secrets::resolve_all(&secrets, &mut results);
    Ok(results
        .into_iter()
        .map(|r| r.map_err(|e| e.to_string()))
        .collect())
}

/// The git commit of the directory holding the config, if it is a work tree.
pub fn git_commit(config: &Config) -> Option<String> {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(&config.dir)
        .args(["rev-parse", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .filter(|c| !c.is_empty())
}
