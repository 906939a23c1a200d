//! `tazuna state`: look at and edit what Tazuna recorded in the cluster.

use std::process::ExitCode;

use crate::report::OutputFormat;
use clap::{Args, Subcommand};
use tazuna_engine::plan::Question;
use tazuna_engine::stack::{Access, Writes};

use crate::settings::GlobalSettings;

/// Tazuna's state in namespace `tazuna`: one ConfigMap per manifest, each
/// naming the stack (the file) that applied it. Every subcommand sees only
/// this file's stack.
#[derive(Debug, Subcommand)]
pub enum State {
    /// List the objects in state, one line each: manifest, resource
    /// (`apps/v1/Deployment`), namespace and name, as Go Tazuna lists them.
    ///
    /// `--manifests` lists the manifests instead, with their object counts
    /// and when they were applied.
    #[command(
        after_help = "Examples:\n  tazuna state list\n  tazuna state list --manifests\n  tazuna state list -o json | jq '.[].objects | length'"
    )]
    List(List),
    /// Report what changed in the file since the last apply (with
    /// `--detailed-exitcode`, exit 2 on changes).
    ///
    /// Compares what the file renders now with the content hashes Tazuna
    /// recorded when it last applied: objects not applied yet, objects whose
    /// intent changed, and objects no longer rendered (which `apply --prune`
    /// deletes). Reads only Tazuna's state, never the live objects; `tazuna
    /// plan` shows the field-by-field diff against live.
    #[command(
        after_help = "Examples:\n  tazuna state diff\n  tazuna state diff --detailed-exitcode   # 0: no changes, 2: changes\n  tazuna state diff -o json | jq -r '.changes[].object'"
    )]
    Diff(Diff),
    /// Report what changed live since the last apply (exit 2 on drift).
    ///
    /// Compares live objects against the last applied intent with a
    /// server-side dry run, so defaults the server fills in are not drift.
    /// Objects whose intent changed in the file are left to `tazuna plan`.
    Drift(Drift),
    /// Stop managing objects without deleting them, so Argo CD or Flux can adopt them.
    ///
    /// `<manifest>` forgets all of a manifest's objects and its state;
    /// `<manifest>/<Kind>/<name>` or `<manifest>/<Kind>/<namespace>/<name>`
    /// forgets one object. Forgotten objects are never pruned or destroyed.
    #[command(
        after_help = "Examples:\n  tazuna state forget argocd\n  tazuna state forget argocd/ConfigMap/argocd/argocd-cm"
    )]
    Forget(Forget),
    /// Drop from the state the objects that are gone from the cluster (Go
    /// Tazuna's `state sync`).
    ///
    /// An object deleted by hand, or with a CRD that went away, stays in
    /// state until this runs: plan counts it, prune and destroy try to delete
    /// it. `state sync` reads every recorded object live (one list call per
    /// kind and namespace) and forgets those that are gone; a Job its TTL
    /// removed stays, so apply does not run it again. Nothing live changes.
    #[command(
        after_help = "Examples:\n  tazuna state sync --dry-run\n  tazuna state sync -o json | jq -r '.dropped[].name'"
    )]
    Sync(Sync),
}

/// `state sync`.
#[derive(Debug, Args)]
pub struct Sync {
    /// Report what would be dropped, and write nothing.
    #[arg(long)]
    dry_run: bool,
}

/// `state list`.
#[derive(Debug, Args)]
pub struct List {
    /// One line per manifest (object count, plugin, when and by which tazuna).
    #[arg(long)]
    manifests: bool,
}

/// `state diff`.
#[derive(Debug, Args)]
pub struct Diff {
    /// Exit with 2 when the file renders something else than was last
    /// applied (1 stays for errors); without it, as in Go Tazuna, 0.
    #[arg(long)]
    detailed_exitcode: bool,
}

/// `state drift`.
#[derive(Debug, Args)]
pub struct Drift {
    /// Clusters compared at once, when the flags select several.
    #[arg(long, value_name = "N")]
    max_parallel: Option<usize>,
}

/// `state forget`.
#[derive(Debug, Args)]
pub struct Forget {
    /// What to forget.
    #[arg(value_name = "MANIFEST[/KIND[/NAMESPACE]/NAME]")]
    target: String,
}

impl State {
    /// Run it.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        super::runtime()?.block_on(async {
            match self {
                State::List(args) => list(settings, args.manifests).await,
                State::Diff(diff) => {
                    let code = report(
                        settings,
                        Question::Pending,
                        "diff",
                        "No changes detected. The file renders what was last applied",
                    )
                    .await?;
                    Ok(if diff.detailed_exitcode {
                        code
                    } else {
                        ExitCode::SUCCESS
                    })
                }
                State::Drift(drift) => {
                    super::plan::report_on(
                        settings,
                        drift.max_parallel,
                        Question::Drift,
                        ("drift", "no drift: live objects match the last apply"),
                        super::fleet::Changes::Exit2,
                    )
                    .await
                }
                State::Forget(forget) => forget.run(settings).await,
                State::Sync(sync) => sync.run(settings).await,
            }
        })
    }
}

/// Compare, print, and exit 2 when there is something to report.
async fn report(
    settings: &GlobalSettings,
    question: Question,
    verb: &str,
    empty: &str,
) -> anyhow::Result<ExitCode> {
    let report = super::plan::compare(settings, question).await?;
    super::plan::print(settings, &report, verb, empty)?;
    Ok(if report.changes.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

async fn list(settings: &GlobalSettings, manifests: bool) -> anyhow::Result<ExitCode> {
    let stack = super::open(settings, Writes::Persist)?;
    let connection = stack.connect(Access::Read).await?;
    let states = stack.states(&connection).await?;
    if settings.output == OutputFormat::Json {
        let all: Vec<_> = states.own.values().map(|s| &s.state).collect();
        outln!("{}", serde_json::to_string_pretty(&all)?);
        return Ok(ExitCode::SUCCESS);
    }
    if states.own.is_empty() {
        outln!(
            "no state: stack `{}` has not applied anything to this cluster",
            stack.name()
        );
    }
    if !manifests && !states.own.is_empty() {
        let mut rows = vec![[
            "MANIFEST".to_owned(),
            "RESOURCE".to_owned(),
            "NAMESPACE".to_owned(),
            "NAME".to_owned(),
        ]];
        for stored in states.own.values() {
            for entry in &stored.state.objects {
                let object = entry.object();
                rows.push([
                    stored.state.manifest.clone(),
                    format!("{}/{}", object.api_version(), object.kind),
                    object.namespace.clone().unwrap_or_else(|| "-".to_owned()),
                    object.name.clone(),
                ]);
            }
        }
        outln!("{}", crate::report::table(&rows));
    }
    for stored in states.own.values() {
        let s = &stored.state;
        let origin = match (&stored.legacy, &s.stack) {
            (Some(_), _) => "  (Go Tazuna state, migrated on next apply)",
            (None, None) => "  (state from before stacks, adopted on next apply)",
            _ => "",
        };
        if !manifests {
            if !origin.is_empty() || s.incomplete {
                outln!(
                    "{}:{origin}{}",
                    s.manifest,
                    if s.incomplete {
                        "  (last apply failed part way)"
                    } else {
                        ""
                    }
                );
            }
            continue;
        }
        outln!(
            "{}  {} objects  {} {}  applied {} by tazuna {}{}{}{origin}",
            s.manifest,
            s.objects.len(),
            s.plugin.name,
            s.plugin.version,
            s.applied_at,
            s.tazuna_version,
            s.git_commit
                .as_ref()
                .map(|c| format!(" at {}", &c[..c.len().min(12)]))
                .unwrap_or_default(),
            if s.incomplete {
                "  (last apply failed part way)"
            } else {
                ""
            }
        );
    }
    let mut others: Vec<String> = states
        .others
        .values()
        .map(|s| s.state.stack.clone().unwrap_or_else(|| "(none)".into()))
        .collect();
    others.sort();
    others.dedup();
    if !others.is_empty() {
        outln!(
            "{} more manifests on this cluster belong to other stacks: {}",
            states.others.len(),
            others.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

impl Forget {
    async fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        let stack = super::open(settings, Writes::Persist)?;
        let connection = stack
            .connect(Access::Write(tazuna_engine::guard::Rebind::Refuse))
            .await?;
        let said = stack.forget(&connection, &self.target).await?;
        outln!("{said}");
        Ok(ExitCode::SUCCESS)
    }
}

impl Sync {
    async fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        let stack = super::open(settings, Writes::Persist)?;
        let connection = stack
            .connect(Access::Write(tazuna_engine::guard::Rebind::Refuse))
            .await?;
        let dropped = stack.sync_state(&connection, self.dry_run).await?;
        match settings.output {
            OutputFormat::Json => outln!(
                "{}",
                serde_json::json!({
                    "dryRun": self.dry_run,
                    "dropped": dropped.iter().map(|(manifest, object)| serde_json::json!({
                        "manifest": manifest,
                        "apiVersion": object.api_version(),
                        "kind": object.kind,
                        "namespace": object.namespace,
                        "name": object.name,
                    })).collect::<Vec<_>>(),
                })
            ),
            OutputFormat::Text => {
                for (manifest, object) in &dropped {
                    outln!(
                        "{manifest}\t{}/{}\t{}\t{}",
                        object.api_version(),
                        object.kind,
                        object.namespace.as_deref().unwrap_or(""),
                        object.name
                    );
                }
                let verb = if self.dry_run {
                    "would drop"
                } else {
                    "dropped"
                };
                match dropped.len() {
                    0 => outln!("state is in sync: every recorded object exists"),
                    n => outln!("{verb} {n} object(s) gone from the cluster from the state"),
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}
