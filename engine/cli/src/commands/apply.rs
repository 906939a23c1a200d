//! `tazuna apply`: bring the cluster to what the file declares.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use tazuna_engine::apply::{Conflicts, Mode, Prune, REQUESTS_AT_ONCE, Recreate, Sends};
use tazuna_engine::guard::Rebind;
use tazuna_engine::stack::{Access, ApplyOptions, Writes};

use tazuna_engine::apply::ManifestOutcome;

use super::fleet::{self, Changes, ClusterReport, Order, RolloutArgs, Scope};
use crate::failure::Reported;
use crate::progress::{self, Progress};
use crate::settings::GlobalSettings;

/// Apply every selected manifest to the cluster, in dependency order.
///
/// Manifests are rendered in sandboxes, then applied in dependency order
/// (each as soon as its `dependsOn` have applied) with
/// server-side apply (field manager `tazuna`). Inside a manifest, Namespaces
/// and CRDs go first; CRDs are waited for until `Established`. Each manifest
/// then waits for its objects to be ready and runs its tests; only then is its
/// state written to namespace `tazuna`. Unchanged objects are not sent again.
///
/// Before anything is written, the context must match `context_matches` and
/// the cluster must be the one this file is bound to (recorded in
/// `tazuna.lock` on the first apply). The file is a stack (`spec.stack`, or
/// its place in its git repository): it sees, prunes and destroys only the
/// state it wrote, and a manifest name another stack owns on the cluster is
/// refused. An object rendered by two manifests, or into namespace `tazuna`,
/// is refused too, all before any write. A Lease keeps two runs from
/// applying to one cluster at once. `--dry-run` writes nothing anywhere,
/// `tazuna.lock` included.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  tazuna apply --context kind-staging\n  tazuna apply -e production --prune\n  tazuna apply --dry-run -t core\n  tazuna apply -o json | jq 'select(.event == \"finished\")'"
)]
pub struct Apply {
    /// Delete objects Tazuna applied before that no manifest of this file
    /// renders or records any more, including those of manifests removed from
    /// the file (Namespaces, CRDs and PVCs are kept).
    #[arg(long)]
    prune: bool,

    /// With --prune: also delete Namespaces, CRDs and PVCs (their data goes with them).
    #[arg(long)]
    prune_dangerous: bool,

    /// With --prune: delete this object although it was handed over to Flux
    /// or Argo CD (`handover:`), which prune otherwise leaves: `<Kind>/<name>`
    /// or `<Kind>/<namespace>/<name>`. Repeat for several.
    #[arg(long, value_name = "OBJECT", value_parser = object_name)]
    delete_handed_over: Vec<String>,

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

    /// Manifests applied at once (each starts when its `dependsOn` are done).
    #[arg(long, value_name = "N", default_value_t = 4)]
    concurrency: usize,

    /// Apply requests in flight at once, across the run's manifests. A lower
    /// number spares a busy API server; the one it cannot seat it queues or
    /// answers 429, and Tazuna retries.
    #[arg(long, value_name = "N", default_value_t = REQUESTS_AT_ONCE)]
    requests: usize,

    /// Go Tazuna's differential apply: send only what was added or changed
    /// in the file since the state (and what is missing live), and update
    /// the state; live drift of unchanged objects is left. Goes with
    /// `--prune` and `--atomic` as in Go.
    #[arg(long, conflicts_with = "resend")]
    sync: bool,

    /// Send every object, even those unchanged in the file and live (as
    /// `helmfile sync` is to `helmfile apply`).
    #[arg(long)]
    resend: bool,

    /// Undo the run when a manifest fails (Go Tazuna's `--atomic`): the
    /// objects it created are deleted, the ones it changed are put back as
    /// they were, and so is the state. With `--prune` only in Go's spelling
    /// `--sync --prune --atomic`: what prune deleted is not brought back
    /// (Go's `--atomic` keeps only the state).
    #[arg(long)]
    atomic: bool,

    #[command(flatten)]
    sources: super::SourceArgs,

    #[command(flatten)]
    rollout: RolloutArgs,
}

impl Apply {
    /// Run it.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        if self.atomic && (self.prune || self.prune_dangerous) && !self.sync {
            return Err(crate::failure::advised(
                "`--atomic` cannot undo what `--prune` deletes",
                "run `--prune` on its own, or spell it as Go Tazuna does, `--sync --prune --atomic`, which keeps the deletions when the rest is undone",
            ));
        }
        let settings = &self.sources.settings(settings);
        let access = Access::Write(if self.rebind {
            Rebind::Rebind
        } else {
            Rebind::Refuse
        });
        super::runtime()?.block_on(async move {
            match fleet::scope(settings, &self.rollout, Order::Waves).await? {
                Scope::One(one) => self.execute(&one, access).await,
                Scope::Many(waves, pace, found) => {
                    let verb = self.verb();
                    let this = std::sync::Arc::new(self);
                    fleet::run(
                        settings,
                        (waves, pace, found),
                        verb,
                        Changes::Succeed,
                        |one| {
                            let this = this.clone();
                            async move {
                                let (ok, outcomes) = this.apply(&one, access).await?;
                                if !ok {
                                    return Err(Reported.into());
                                }
                                let changed = outcomes
                                    .iter()
                                    .map(|o| {
                                        o.counts.created + o.counts.configured + o.counts.pruned
                                    })
                                    .sum();
                                Ok(ClusterReport {
                                    changed: Some(changed),
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

    fn verb(&self) -> &'static str {
        if self.dry_run {
            "apply --dry-run"
        } else {
            "apply"
        }
    }

    /// A plain apply with the defaults of every flag (for `tazuna verify`).
    pub fn defaults() -> Self {
        Self {
            prune: false,
            prune_dangerous: false,
            delete_handed_over: Vec::new(),
            dry_run: false,
            force_conflicts: false,
            recreate: false,
            rebind: false,
            lock_timeout: 60,
            concurrency: 4,
            requests: REQUESTS_AT_ONCE,
            sync: false,
            resend: false,
            atomic: false,
            sources: super::SourceArgs::default(),
            rollout: RolloutArgs::defaults(),
        }
    }

    /// The flags as the engine's options.
    fn options(&self) -> ApplyOptions {
        ApplyOptions {
            prune: match (self.prune, self.prune_dangerous) {
                (_, true) => Prune::Dangerous,
                (true, false) => Prune::On,
                (false, false) => Prune::Off,
            },
            mode: if self.dry_run {
                Mode::DryRun
            } else {
                Mode::Apply
            },
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
            lock_timeout: Duration::from_secs(self.lock_timeout),
            manifests_at_once: self.concurrency,
            requests_at_once: self.requests,
            sends: match (self.sync, self.resend) {
                (_, true) => Sends::Everything,
                (true, false) => Sends::FileChanges,
                (false, false) => Sends::Changed,
            },
            delete_handed_over: self.delete_handed_over.clone(),
            atomic: self.atomic,
        }
    }

    /// Apply to the cluster `settings` point at, with the guard `access` asks for.
    pub async fn execute(
        &self,
        settings: &GlobalSettings,
        access: Access,
    ) -> anyhow::Result<ExitCode> {
        if self.apply(settings, access).await?.0 {
            Ok(ExitCode::SUCCESS)
        } else {
            Err(Reported.into())
        }
    }

    /// Apply on one cluster and print its summary; whether every manifest
    /// succeeded, and how each ended.
    async fn apply(
        &self,
        settings: &GlobalSettings,
        access: Access,
    ) -> anyhow::Result<(bool, Vec<ManifestOutcome>)> {
        let options = self.options();
        let writes = match options.mode {
            Mode::Apply => Writes::Persist,
            Mode::DryRun => Writes::Discard,
        };
        let stack = super::open(settings, writes)?;
        let connection = stack.connect(access).await?;
        let progress = Progress::new(settings, self.verb());
        let outcomes = stack.apply(&connection, &options, &progress).await?;
        Ok((progress::summary(&progress, &outcomes), outcomes))
    }
}

/// An object named on the command line that is not one.
#[derive(Debug)]
pub(crate) struct NotAnObject(String);

impl std::fmt::Display for NotAnObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}` is not `<Kind>/<name>` or `<Kind>/<namespace>/<name>`, such as `Kustomization/flux-system/flux-system`",
            self.0
        )
    }
}

impl std::error::Error for NotAnObject {}

/// An object named on the command line: `<Kind>/<name>` or
/// `<Kind>/<namespace>/<name>`, as `handover.objects` names them.
pub(crate) fn object_name(value: &str) -> Result<String, NotAnObject> {
    let parts: Vec<&str> = value.split('/').collect();
    if (2..=3).contains(&parts.len()) && parts.iter().all(|p| !p.is_empty()) {
        Ok(value.to_owned())
    } else {
        Err(NotAnObject(value.to_owned()))
    }
}
