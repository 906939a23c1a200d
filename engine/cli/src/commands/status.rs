//! `tazuna status`: readiness of everything Tazuna applied, from its state.

use std::process::ExitCode;

use crate::report::OutputFormat;
use clap::Args;
use serde_json::Value;
use tazuna_engine::stack::{Access, Writes};

use super::fleet::{self, Changes, ClusterReport, Order, RolloutArgs, Scope};
use crate::settings::GlobalSettings;

/// Show whether the objects this file's state records exist and are ready.
///
/// Reads the state, then lists each kind once per namespace (not one request
/// per object) and judges readiness with the same rules `apply` waits for.
/// Exits with 2 when an object is missing or not ready, or when a manifest's
/// last apply failed part way (its objects are recorded; rerun `apply`).
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  tazuna status --context kind-staging\n  tazuna status -o json | jq '.[] | select(.ready == false)'"
)]
pub struct Status {
    /// List every object, not only those that are not ready.
    #[arg(long, short = 'a')]
    all: bool,

    /// Clusters read at once, when the flags select several.
    #[arg(long, value_name = "N")]
    max_parallel: Option<usize>,
}

impl Status {
    /// Run it.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        super::runtime()?.block_on(async move {
            let rollout = RolloutArgs::at_most(self.max_parallel);
            match fleet::scope(settings, &rollout, Order::Everywhere).await? {
                Scope::One(one) => {
                    let report = self.report(&one).await?;
                    match (&report.json, one.output) {
                        (Some(json), OutputFormat::Json) => {
                            outln!("{}", serde_json::to_string_pretty(json)?)
                        }
                        _ => outln!("{}", report.text),
                    }
                    Ok(if report.changes {
                        ExitCode::from(2)
                    } else {
                        ExitCode::SUCCESS
                    })
                }
                Scope::Many(waves, pace, found) => {
                    let this = std::sync::Arc::new(self);
                    fleet::run(
                        settings,
                        (waves, pace, found),
                        "status",
                        Changes::Exit2,
                        |one| {
                            let this = this.clone();
                            async move { this.report(&one).await }
                        },
                    )
                    .await
                }
            }
        })
    }

    /// The readiness on one cluster; `changes` when something is not ready.
    async fn report(&self, settings: &GlobalSettings) -> anyhow::Result<ClusterReport> {
        use std::fmt::Write as _;
        let stack = super::open(settings, Writes::Persist)?;
        let connection = stack.connect(Access::Read).await?;
        let status = stack.status(&connection).await?;
        let rows = &status.rows;
        let not_ready = rows.iter().filter(|r| !r.readiness.is_ready()).count();
        let json: Vec<Value> = rows
            .iter()
            .map(|r| serde_json::json!({"manifest": r.manifest, "object": r.object.to_string(), "ready": r.readiness.is_ready(), "reason": r.readiness.reason(), "handover": r.handover, "controller": r.controller}))
            .collect();
        let mut text = String::new();
        for row in rows {
            // What a GitOps controller took over is always shown, in its
            // controller's words.
            if let Some(handover) = &row.handover {
                let view = row.controller.as_deref().unwrap_or("");
                let _ = writeln!(
                    text,
                    "{}  {}  {} ({handover}){}{view}",
                    row.manifest,
                    row.object,
                    row.readiness,
                    if view.is_empty() { "" } else { ": " },
                );
            } else if self.all || !row.readiness.is_ready() {
                let _ = writeln!(text, "{}  {}  {}", row.manifest, row.object, row.readiness);
            }
        }
        for manifest in &status.incomplete {
            let _ = writeln!(
                text,
                "{manifest}: its last apply failed part way; `tazuna apply` sends and waits for its objects again"
            );
        }
        let _ = write!(
            text,
            "{} manifests, {} objects: {} ready, {not_ready} not ready ({} list requests)",
            status.manifests,
            rows.len(),
            rows.len() - not_ready,
            status.requests
        );
        Ok(ClusterReport {
            changes: not_ready > 0 || !status.incomplete.is_empty(),
            changed: Some(not_ready),
            text,
            json: Some(Value::Array(json)),
        })
    }
}
