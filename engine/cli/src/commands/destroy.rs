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
///
/// Go Tazuna's guard works too: where `TAZUNA_DESTROY_EXECUTABLE` is set to
/// anything but `true` (a production runner, say), destroy refuses to run;
/// Go's `--force` confirms like `--yes`, and only where
/// `TAZUNA_DESTROY_EXECUTABLE=true` is set.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  tazuna destroy --context kind-ci --yes\n  tazuna destroy -t addons\n  TAZUNA_DESTROY_EXECUTABLE=true tazuna destroy --force   # Go Tazuna's spelling"
)]
pub struct Destroy {
    /// Do not ask for confirmation (for CI).
    #[arg(long, short = 'y')]
    yes: bool,

    /// Go Tazuna's confirmation: as `--yes`, and only where the environment
    /// sets `TAZUNA_DESTROY_EXECUTABLE=true`.
    #[arg(long)]
    force: bool,

    /// How long to wait for another run's lock on the cluster, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    lock_timeout: u64,

    /// How long each step may wait for its deleted objects (held by
    /// finalizers, or Namespaces the namespace controller empties) to be
    /// gone, in seconds. A timeout names what holds them.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    timeout: u64,

    /// Delete this object although it was handed over to Flux or Argo CD
    /// (`handover:`), which destroy otherwise leaves: `<Kind>/<name>` or
    /// `<Kind>/<namespace>/<name>`. Repeat for several.
    #[arg(long, value_name = "OBJECT", value_parser = super::apply::object_name)]
    delete_handed_over: Vec<String>,

    #[command(flatten)]
    rollout: RolloutArgs,
}

/// Go Tazuna's environment guard on destroy.
const DESTROY_GUARD: &str = "TAZUNA_DESTROY_EXECUTABLE";

/// Whether the environment lets destroy run: a guard set to anything but
/// `true` forbids it, and `--force` needs it set to `true`.
fn guard_allows(guard: Option<&str>, force: bool) -> anyhow::Result<()> {
    match guard {
        Some("true") => Ok(()),
        Some(other) => Err(crate::failure::advised(
            format!("destroy is forbidden here: {DESTROY_GUARD} is `{other}`"),
            format!(
                "this environment guards against destroy; set {DESTROY_GUARD}=true where destroying is intended"
            ),
        )),
        None if force => Err(crate::failure::advised(
            format!("`--force` destroys only where {DESTROY_GUARD}=true is set, as in Go Tazuna"),
            format!("set {DESTROY_GUARD}=true for this run, or confirm with `--yes`"),
        )),
        None => Ok(()),
    }
}

impl Destroy {
    /// Run it.
    pub fn run(mut self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        let guard = std::env::var(DESTROY_GUARD).ok();
        self.yes |= self.force;
        guard_allows(guard.as_deref(), self.force)?;
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
                &self.delete_handed_over,
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
            return Err(crate::failure::advised(
                format!(
                    "destroy deletes {} objects of {} manifests and needs a confirmation",
                    teardown.objects,
                    teardown.manifests.len()
                ),
                "pass `--yes` to confirm without a terminal",
            ));
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

#[cfg(test)]
mod tests {
    use super::guard_allows;

    #[test]
    fn the_environment_guard_works_as_in_go_tazuna() {
        assert!(guard_allows(None, false).is_ok());
        assert!(guard_allows(Some("true"), true).is_ok());
        assert!(guard_allows(Some("true"), false).is_ok());
        let forced = guard_allows(None, true).unwrap_err().to_string();
        assert!(
            forced.contains("TAZUNA_DESTROY_EXECUTABLE=true"),
            "{forced}"
        );
        for value in ["false", "", "1", "TRUE"] {
            let refused = guard_allows(Some(value), false).unwrap_err().to_string();
            assert!(refused.contains("forbidden"), "{value}: {refused}");
        }
    }
}
