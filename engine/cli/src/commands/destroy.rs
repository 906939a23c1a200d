//! `tazuna destroy`: delete everything Tazuna applied, from its state.

use std::io::{BufRead, IsTerminal};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;
use clap::Args;
use tazuna_engine::apply::{ApplySettings, Conflicts, Mode, Prune, Recreate, Run};
use tazuna_engine::guard::Rebind;
use tazuna_engine::state::Store;

use super::apply::{holder, state_error};
use super::cluster::{self, Access};
use crate::failure::Reported;
use crate::progress::{self, Progress};
use crate::settings::GlobalSettings;

/// Delete every object Tazuna's state records, then the state itself.
///
/// Works from the state in the cluster, not from a new render, so it removes
/// exactly what was applied. Manifests go in reverse dependency order; custom
/// resources go before their CRDs, and each deletion is waited for. Objects
/// annotated `tazuna.dev/prune: disabled`, and objects Tazuna no longer
/// manages, are left alone. The context guard must pass, and it asks for
/// confirmation unless `--yes` is given.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  tazuna destroy --context kind-ci --yes\n  tazuna destroy -t addons"
)]
pub struct Destroy {
    /// Do not ask for confirmation (for CI).
    #[arg(long, short = 'y')]
    yes: bool,

    /// How long to wait for another run's lock on the cluster, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    lock_timeout: u64,
}

impl Destroy {
    /// Run it.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        super::runtime()?.block_on(self.run_async(settings))
    }

    async fn run_async(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        let config = super::load_config(settings)?;
        let cluster = cluster::connect(settings, &config, Access::Write(Rebind::Refuse)).await?;
        let store = Store::new(cluster.client().clone());
        let mut states = store.load().await.map_err(state_error)?;
        if !settings.tags.is_empty() {
            let selected: Vec<String> = config
                .select(&settings.tags)?
                .iter()
                .map(|m| m.name.clone())
                .collect();
            states.retain(|name, _| selected.contains(name));
        }
        if states.is_empty() {
            eprintln!("nothing to destroy: Tazuna's state on this cluster is empty");
            return Ok(ExitCode::SUCCESS);
        }
        let objects: usize = states.values().map(|s| s.state.objects.len()).sum();
        if !self.yes {
            if !std::io::stdin().is_terminal() {
                bail!(
                    "destroy deletes {objects} objects of {} manifests and needs a confirmation\nhint: pass `--yes` to confirm without a terminal",
                    states.len()
                );
            }
            eprint!(
                "delete {objects} objects of {} manifests ({}) from {}? type `yes`: ",
                states.len(),
                states.keys().cloned().collect::<Vec<_>>().join(", "),
                cluster.target().context
            );
            let mut answer = String::new();
            std::io::stdin().lock().read_line(&mut answer)?;
            if answer.trim() != "yes" {
                eprintln!("nothing was deleted");
                return Err(Reported.into());
            }
        }
        let lock = store
            .lock(&holder(), Duration::from_secs(self.lock_timeout))
            .await
            .map_err(state_error)?;
        // Read again under the lock: another run may have changed it.
        let fresh = store.load().await.map_err(state_error);
        let outcome = match fresh {
            Ok(fresh) => {
                let states: std::collections::BTreeMap<_, _> = fresh
                    .into_iter()
                    .filter(|(name, _)| states.contains_key(name))
                    .collect();
                let settings_ = ApplySettings {
                    conflicts: Conflicts::Report,
                    recreate: Recreate::Never,
                    prune: Prune::Dangerous,
                    mode: Mode::Apply,
                    manifests_at_once: 1,
                    requests_at_once: 32,
                    git_commit: None,
                    tazuna_version: tazuna_engine::VERSION.to_owned(),
                    run_spec_tests: false,
                };
                let progress = Progress::new(settings, "destroy");
                let run = Run {
                    cluster: &cluster,
                    store: &store,
                    states: &states,
                    hash_key: &[],
                    settings: &settings_,
                    observer: &progress,
                };
                let order = tazuna_engine::destroy::order(&states);
                let outcomes = run.destroy(&order).await;
                Ok(progress::summary(&progress, &outcomes))
            }
            Err(error) => Err(error),
        };
        lock.release().await;
        if outcome? {
            Ok(ExitCode::SUCCESS)
        } else {
            Err(Reported.into())
        }
    }
}
