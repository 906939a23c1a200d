//! `tazuna state`: look at and edit what Tazuna recorded in the cluster.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;
use clap::{Args, Subcommand};
use tazuna_engine::plan::Question;
use tazuna_engine::report::OutputFormat;
use tazuna_engine::state::Store;

use super::apply::{holder, state_error};
use super::cluster::{self, Access};
use crate::settings::GlobalSettings;

/// Tazuna's state in namespace `tazuna`: one ConfigMap per manifest.
#[derive(Debug, Subcommand)]
pub enum State {
    /// List the manifests in state, with their object counts and when they were applied.
    List,
    /// Report what changed in the file since the last apply (exit 2 on changes).
    ///
    /// Compares what the file renders now with the content hashes Tazuna
    /// recorded when it last applied: objects not applied yet, objects whose
    /// intent changed, and objects no longer rendered (which `apply --prune`
    /// deletes). Reads only Tazuna's state, never the live objects; `tazuna
    /// plan` shows the field-by-field diff against live.
    #[command(
        after_help = "Examples:\n  tazuna state diff\n  tazuna state diff -o json | jq -r '.changes[].object'"
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
}

/// `state diff`.
#[derive(Debug, Args)]
pub struct Diff {}

/// `state drift`.
#[derive(Debug, Args)]
pub struct Drift {}

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
                State::List => list(settings).await,
                State::Diff(_) => {
                    report(
                        settings,
                        Question::Pending,
                        "diff",
                        "no changes: the file renders what was last applied",
                    )
                    .await
                }
                State::Drift(_) => {
                    report(
                        settings,
                        Question::Drift,
                        "drift",
                        "no drift: live objects match the last apply",
                    )
                    .await
                }
                State::Forget(forget) => forget.run(settings).await,
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

async fn list(settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
    let config = super::load_config(settings)?;
    let cluster = cluster::connect(settings, &config, Access::Read).await?;
    let states = Store::new(cluster.client().clone())
        .load()
        .await
        .map_err(state_error)?;
    if settings.output == OutputFormat::Json {
        let all: Vec<_> = states.values().map(|s| &s.state).collect();
        outln!("{}", serde_json::to_string_pretty(&all)?);
        return Ok(ExitCode::SUCCESS);
    }
    if states.is_empty() {
        outln!("no state: Tazuna has not applied anything to this cluster");
    }
    for stored in states.values() {
        let s = &stored.state;
        let origin = if stored.legacy.is_some() {
            "  (Go Tazuna state, migrated on next apply)"
        } else {
            ""
        };
        outln!(
            "{}  {} objects  {} {}  applied {} by tazuna {}{}{origin}",
            s.manifest,
            s.objects.len(),
            s.plugin.name,
            s.plugin.version,
            s.applied_at,
            s.tazuna_version,
            s.git_commit
                .as_ref()
                .map(|c| format!(" at {}", &c[..c.len().min(12)]))
                .unwrap_or_default()
        );
    }
    Ok(ExitCode::SUCCESS)
}

impl Forget {
    async fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        let config = super::load_config(settings)?;
        let cluster = cluster::connect(
            settings,
            &config,
            Access::Write(tazuna_engine::guard::Rebind::Refuse),
        )
        .await?;
        let store = Store::new(cluster.client().clone());
        let lock = store
            .lock(&holder(), Duration::from_secs(60))
            .await
            .map_err(state_error)?;
        let result = self.forget(&store).await;
        lock.release().await;
        result
    }

    async fn forget(&self, store: &Store) -> anyhow::Result<ExitCode> {
        let states = store.load().await.map_err(state_error)?;
        let mut parts = self.target.splitn(2, '/');
        let manifest = parts.next().unwrap_or_default();
        let Some(stored) = states.get(manifest) else {
            let known: Vec<&str> = states.keys().map(String::as_str).collect();
            bail!(
                "manifest `{manifest}` is not in Tazuna's state\nhint: `tazuna state list` shows what is; known: {}",
                known.join(", ")
            );
        };
        let Some(rest) = parts.next() else {
            store.delete(stored).await.map_err(state_error)?;
            outln!(
                "forgot manifest `{manifest}` and its {} objects; they stay in the cluster",
                stored.state.objects.len()
            );
            return Ok(ExitCode::SUCCESS);
        };
        let pieces: Vec<&str> = rest.split('/').collect();
        let (kind, namespace, name) = match pieces.as_slice() {
            [kind, name] => (*kind, None, *name),
            [kind, namespace, name] => (*kind, Some(*namespace), *name),
            _ => bail!(
                "`{}` is not `<manifest>/<Kind>/<name>` or `<manifest>/<Kind>/<namespace>/<name>`",
                self.target
            ),
        };
        let mut state = stored.state.clone();
        let before = state.objects.len();
        state.objects.retain(|e| {
            !(e.kind == kind
                && e.name == name
                && (namespace.is_none() || e.namespace.as_deref() == namespace))
        });
        let removed = before - state.objects.len();
        if removed == 0 {
            bail!(
                "manifest `{manifest}` has no {kind} `{name}` in its state\nhint: `tazuna state list -o json` shows its objects"
            );
        }
        store
            .save(&state, Some(stored))
            .await
            .map_err(state_error)?;
        outln!("forgot {removed} object(s) of manifest `{manifest}`; they stay in the cluster");
        Ok(ExitCode::SUCCESS)
    }
}
