//! `tazuna apply`: bring the cluster to what the file declares.

use std::collections::{BTreeMap, HashSet};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use tazuna_core::graph;
use tazuna_engine::apply::{ApplySettings, Conflicts, Mode, Prune, Recreate, Run, Unit};
use tazuna_engine::guard::Rebind;
use tazuna_engine::state::{Store, Stored};

use super::cluster::{self, Access};
use crate::failure::Reported;
use crate::progress::{self, Progress};
use crate::settings::GlobalSettings;

/// Apply every selected manifest to the cluster, in dependency order.
///
/// Manifests are rendered in sandboxes, then applied layer by layer with
/// server-side apply (field manager `tazuna`). Inside a manifest, Namespaces
/// and CRDs go first; CRDs are waited for until `Established`. Each manifest
/// then waits for its objects to be ready and runs its tests; only then is its
/// state written to namespace `tazuna`. Unchanged objects are not sent again.
///
/// Before anything is written, the context must match `context_matches` and
/// the cluster must be the one this file is bound to (recorded in
/// `tazuna.lock` on the first apply). A Lease keeps two runs from applying to
/// one cluster at once.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  tazuna apply --context kind-staging\n  tazuna apply -e production --prune\n  tazuna apply --dry-run -t core\n  tazuna apply -o json | jq 'select(.event == \"finished\")'"
)]
pub struct Apply {
    /// Delete objects Tazuna applied before that are no longer rendered,
    /// including those of manifests removed from the file.
    #[arg(long)]
    prune: bool,

    /// With --prune: also delete Namespaces, CRDs and PVCs (their data goes with them).
    #[arg(long)]
    prune_dangerous: bool,

    /// Send everything as a server-side dry run: nothing is persisted or waited for.
    #[arg(long)]
    dry_run: bool,

    /// Take over fields another field manager owns instead of failing.
    #[arg(long)]
    force_conflicts: bool,

    /// Delete and re-create objects whose immutable fields changed (Jobs, some Service fields).
    #[arg(long)]
    recreate: bool,

    /// Bind this file (or environment) to the cluster the context leads to now,
    /// replacing the binding in tazuna.lock.
    #[arg(long)]
    rebind: bool,

    /// How long to wait for another run's lock on the cluster, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    lock_timeout: u64,

    /// Manifests of one layer applied at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    concurrency: usize,

    /// Requests in flight per manifest.
    #[arg(long, value_name = "N", default_value_t = 32)]
    requests: usize,
}

impl Apply {
    /// Run it.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        let access = Access::Write(if self.rebind {
            Rebind::Rebind
        } else {
            Rebind::Refuse
        });
        super::runtime()?.block_on(self.execute(settings, access))
    }

    /// A plain apply with the defaults of every flag (for `tazuna verify`).
    pub fn defaults() -> Self {
        Self {
            prune: false,
            prune_dangerous: false,
            dry_run: false,
            force_conflicts: false,
            recreate: false,
            rebind: false,
            lock_timeout: 60,
            concurrency: 4,
            requests: 32,
        }
    }

    /// Apply to the cluster `settings` point at, with the guard `access` asks for.
    pub async fn execute(
        self,
        settings: &GlobalSettings,
        access: Access,
    ) -> anyhow::Result<ExitCode> {
        let config = super::load_config(settings)?;
        let selected = config.select(&settings.tags)?;
        let cluster = cluster::connect(settings, &config, access).await?;
        let rendered = {
            let selected = selected.clone();
            tokio::task::block_in_place(|| cluster::render(settings, &config, &selected, &cluster))?
        };
        let store = Store::new(cluster.client().clone());
        let mode = if self.dry_run {
            Mode::DryRun
        } else {
            Mode::Apply
        };
        let lock = if mode == Mode::Apply {
            store.ensure_namespace().await?;
            Some(
                store
                    .lock(&holder(), Duration::from_secs(self.lock_timeout))
                    .await
                    .map_err(state_error)?,
            )
        } else {
            None
        };
        let outcome = self
            .apply_locked(
                settings, &config, &selected, rendered, &cluster, &store, mode,
            )
            .await;
        if let Some(lock) = lock {
            lock.release().await;
        }
        outcome
    }

    #[allow(clippy::too_many_arguments)]
    async fn apply_locked(
        &self,
        settings: &GlobalSettings,
        config: &tazuna_core::config::Config,
        selected: &[&tazuna_core::config::Manifest],
        rendered: Vec<Result<tazuna_engine::render::Rendered, String>>,
        cluster: &tazuna_engine::cluster::Cluster,
        store: &Store,
        mode: Mode,
    ) -> anyhow::Result<ExitCode> {
        let states = store.load().await.map_err(state_error)?;
        let hash_key = match mode {
            Mode::Apply => store.ensure_hash_key().await.map_err(state_error)?,
            Mode::DryRun => store
                .hash_key()
                .await
                .map_err(state_error)?
                .unwrap_or_default(),
        };
        let prune = match (self.prune, self.prune_dangerous) {
            (_, true) => Prune::Dangerous,
            (true, false) => Prune::On,
            (false, false) => Prune::Off,
        };
        let apply_settings = ApplySettings {
            conflicts: if self.force_conflicts {
                Conflicts::Force
            } else {
                Conflicts::Report
            },
            recreate: if self.recreate {
                Recreate::Allowed
            } else {
                Recreate::Never
            },
            prune,
            mode,
            manifests_at_once: self.concurrency,
            requests_at_once: self.requests,
            git_commit: cluster::git_commit(config),
            tazuna_version: tazuna_engine::VERSION.to_owned(),
            run_spec_tests: settings.tags.is_empty(),
        };
        let progress = Progress::new(
            settings,
            if mode == Mode::DryRun {
                "apply --dry-run"
            } else {
                "apply"
            },
        );
        let run = Run {
            cluster,
            store,
            states: &states,
            hash_key: &hash_key,
            settings: &apply_settings,
            observer: &progress,
        };
        let positions: BTreeMap<&str, usize> = config
            .manifests
            .iter()
            .enumerate()
            .map(|(i, m)| (m.name.as_str(), i))
            .collect();
        let units: Vec<Unit> = selected
            .iter()
            .zip(rendered)
            .map(|(manifest, rendered)| Unit {
                manifest,
                position: positions[manifest.name.as_str()],
                rendered,
            })
            .collect();
        let layers = graph::layers(selected);
        let sequential = selected.iter().all(|m| m.depends_on.is_empty());
        let mut outcomes = run.apply(&units, &layers, sequential).await;

        // Manifests removed from the file: their objects go with --prune.
        let in_file: HashSet<&str> = config.manifests.iter().map(|m| m.name.as_str()).collect();
        let removed: BTreeMap<String, Stored> = states
            .iter()
            .filter(|(name, _)| !in_file.contains(name.as_str()))
            .map(|(n, s)| (n.clone(), s.clone()))
            .collect();
        if !removed.is_empty() {
            if prune != Prune::Off && mode == Mode::Apply {
                let order = tazuna_engine::destroy::order(&removed);
                outcomes.extend(run.destroy(&order).await);
            } else {
                let names: Vec<&str> = removed.keys().map(String::as_str).collect();
                eprintln!(
                    "note: {} removed from the file still {} objects in the cluster; `tazuna apply --prune` deletes them",
                    names
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if names.len() == 1 { "has" } else { "have" }
                );
            }
        }
        let all_ok = outcomes
            .iter()
            .all(|o| o.outcome == tazuna_engine::apply::Outcome::Applied);
        if all_ok
            && apply_settings.run_spec_tests
            && mode == Mode::Apply
            && let Some(outcome) = run.spec_tests(&config.spec.tests).await
        {
            progress.event(tazuna_engine::apply::Event::Finished(outcome.clone()));
            outcomes.push(outcome);
        }
        if progress::summary(&progress, &outcomes) {
            Ok(ExitCode::SUCCESS)
        } else {
            Err(Reported.into())
        }
    }
}

use tazuna_engine::apply::Observer as _;

/// Who holds the lock, for the message another run shows.
pub fn holder() -> String {
    tazuna_engine::state::holder_identity()
}

/// A state error with its hint.
pub fn state_error(error: tazuna_engine::state::StateError) -> anyhow::Error {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    match error.hint() {
        Some(hint) => anyhow::anyhow!("{text}\nhint: {hint}"),
        None => anyhow::anyhow!("{text}"),
    }
}
