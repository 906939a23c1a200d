//! `tazuna destroy`: delete everything Tazuna applied, from its state.

use std::io::{BufRead, IsTerminal};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;
use clap::Args;
use tazuna_engine::guard::Rebind;
use tazuna_engine::stack::{Access, Teardown, Writes};

use super::fleet::{self, Changes, ClusterReport, Order, RolloutArgs, Scope};
use crate::failure::Reported;
use crate::progress::{self, Progress};
use crate::settings::GlobalSettings;

/// Delete every object this file's state records, then the state itself.
///
/// Works from the state in the cluster, not from a new render, so it removes
/// exactly what was applied, and only what this file (its stack) applied:
/// other files' objects on the same cluster stay. Manifests go in reverse dependency order; custom
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

    /// How long each step may wait for its deleted objects (held by
    /// finalizers, or Namespaces the namespace controller empties) to be
    /// gone, in seconds. A timeout names what holds them.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    timeout: u64,

    #[command(flatten)]
    rollout: RolloutArgs,
}

impl Destroy {
    /// Run it.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        super::runtime()?.block_on(async move {
            match fleet::scope(settings, &self.rollout, Order::Waves).await? {
                Scope::One(one) => self.destroy(&one).await.map(|_| ExitCode::SUCCESS),
                Scope::Many(waves, pace, found) => {
                    if !self.yes {
                        bail!(
                            "destroy on {} clusters needs `--yes`: it asks no question per cluster",
                            waves.iter().map(|w| w.targets.len()).sum::<usize>()
                        );
                    }
                    let this = std::sync::Arc::new(self);
                    fleet::run(
                        settings,
                        (waves, pace, found),
                        "destroy",
                        Changes::Succeed,
                        |one| {
                            let this = this.clone();
                            async move {
                                let deleted = this.destroy(&one).await?;
                                Ok(ClusterReport {
                                    changed: Some(deleted),
                                    ..ClusterReport::default()
                                })
                            }
                        },
                    )
                    .await
                }
            }
        })
    }

    /// Destroy on one cluster; how many objects were deleted.
    async fn destroy(&self, settings: &GlobalSettings) -> anyhow::Result<usize> {
        let stack = super::open(settings, Writes::Persist)?;
        let connection = stack.connect(Access::Write(Rebind::Refuse)).await?;
        let progress = Progress::new(settings, "destroy");
        let mut refused = None;
        let confirm = |teardown: &Teardown| match self.confirm(teardown) {
            Ok(yes) => yes,
            Err(error) => {
                refused = Some(error);
                false
            }
        };
        let outcomes = stack
            .destroy(
                &connection,
                Duration::from_secs(self.lock_timeout),
                Duration::from_secs(self.timeout),
                confirm,
                &progress,
            )
            .await?;
        if let Some(error) = refused {
            return Err(error);
        }
        match outcomes {
            None => Ok(0),
            Some(outcomes) if progress::summary(&progress, &outcomes) => {
                Ok(outcomes.iter().map(|o| o.counts.pruned).sum())
            }
            Some(_) => Err(Reported.into()),
        }
    }

    /// `--yes`, or a `yes` typed at the terminal.
    fn confirm(&self, teardown: &Teardown) -> anyhow::Result<bool> {
        if self.yes {
            return Ok(true);
        }
        if !std::io::stdin().is_terminal() {
            bail!(
                "destroy deletes {} objects of {} manifests and needs a confirmation\nhint: pass `--yes` to confirm without a terminal",
                teardown.objects,
                teardown.manifests.len()
            );
        }
        eprint!(
            "delete {} objects of {} manifests ({}) from {}? type `yes`: ",
            teardown.objects,
            teardown.manifests.len(),
            teardown.manifests.join(", "),
            teardown.context
        );
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if answer.trim() != "yes" {
            eprintln!("nothing was deleted");
            return Err(Reported.into());
        }
        Ok(true)
    }
}
