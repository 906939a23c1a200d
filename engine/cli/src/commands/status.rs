//! `tazuna status`: readiness of everything Tazuna applied, from its state.

use std::process::ExitCode;

use clap::Args;
use serde_json::Value;
use tazuna_engine::report::OutputFormat;
use tazuna_engine::state::Store;

use super::apply::state_error;
use super::cluster::{self, Access};
use crate::settings::GlobalSettings;

/// Show whether the objects in Tazuna's state exist and are ready.
///
/// Reads the state, then lists each kind once per namespace (not one request
/// per object) and judges readiness with the same rules `apply` waits for.
/// Exits with 2 when an object is missing or not ready.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  tazuna status --context kind-staging\n  tazuna status -o json | jq '.[] | select(.ready == false)'"
)]
pub struct Status {
    /// List every object, not only those that are not ready.
    #[arg(long, short = 'a')]
    all: bool,
}

impl Status {
    /// Run it.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        super::runtime()?.block_on(async {
            let config = super::load_config(settings)?;
            let cluster = cluster::connect(settings, &config, Access::Read).await?;
            let store = Store::new(cluster.client().clone());
            let states = store.load().await.map_err(state_error)?;
            let (rows, requests) = tazuna_engine::status::readiness(&cluster, &states).await?;
            let not_ready = rows.iter().filter(|r| !r.readiness.is_ready()).count();
            if settings.output == OutputFormat::Json {
                let json: Vec<Value> = rows
                    .iter()
                    .map(|r| serde_json::json!({"manifest": r.manifest, "object": r.object.to_string(), "ready": r.readiness.is_ready(), "reason": r.readiness.reason()}))
                    .collect();
                outln!("{}", serde_json::to_string_pretty(&json)?);
            } else {
                for row in &rows {
                    if self.all || !row.readiness.is_ready() {
                        outln!("{}  {}  {}", row.manifest, row.object, row.readiness);
                    }
                }
                outln!(
                    "{} manifests, {} objects: {} ready, {not_ready} not ready ({} list requests)",
                    states.len(),
                    rows.len(),
                    rows.len() - not_ready,
                    requests
                );
            }
            Ok(if not_ready == 0 { ExitCode::SUCCESS } else { ExitCode::from(2) })
        })
    }
}
