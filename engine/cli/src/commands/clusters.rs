//! `tazuna clusters`: the clusters the file declares, or that the flags
//! select, with their waves: a table, or JSON for a CI matrix.

use std::process::ExitCode;

use clap::Args;
use tazuna_engine::fleet;

use crate::report::OutputFormat;
use crate::settings::GlobalSettings;

/// List the clusters of `spec.environments` (all of them, or those `-e`,
/// `--cluster`, `--selector` select) with their wave, context and labels.
///
/// With `-o json` it prints a list with one entry per cluster, for a CI
/// matrix: each job then runs `tazuna apply --cluster <cluster>` on its own.
/// Reads the file, and for environments with `clusterAPI`, the Cluster
/// objects of their management clusters.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  tazuna clusters\n  tazuna clusters --selector env=production\n  tazuna clusters -o json   # [{\"cluster\": \"staging\", \"environment\": \"staging\", \"wave\": 1, …}]"
)]
pub struct Clusters {}

impl Clusters {
    /// Run it.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        let mut settings = settings.clone();
        if settings.selection.is_empty() {
            settings.selection.all = true;
        }
        let (declared, _) = super::runtime()?.block_on(super::fleet::declared(&settings))?;
        let targets = settings.selection.resolve(&declared)?;
        let waves = fleet::waves(targets, &declared.rollout)?;
        if settings.output == OutputFormat::Json {
            let entries: Vec<serde_json::Value> = waves
                .iter()
                .enumerate()
                .flat_map(|(i, wave)| {
                    wave.targets.iter().map(move |t| {
                        serde_json::json!({
                            "cluster": t.name,
                            "environment": t.environment,
                            "wave": i + 1,
                            "waveName": wave.name,
                            "context": t.context,
                            "labels": t.labels,
                        })
                    })
                })
                .collect();
            outln!("{}", serde_json::to_string(&entries)?);
            return Ok(ExitCode::SUCCESS);
        }
        let mut rows = vec![[
            "CLUSTER".to_owned(),
            "ENVIRONMENT".to_owned(),
            "WAVE".to_owned(),
            "CONTEXT".to_owned(),
            "LABELS".to_owned(),
        ]];
        for (i, wave) in waves.iter().enumerate() {
            for t in &wave.targets {
                let labels: Vec<String> =
                    t.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
                rows.push([
                    t.name.clone(),
                    t.environment.clone(),
                    format!("{} ({})", i + 1, wave.name),
                    t.context.clone().unwrap_or_else(|| "(current)".to_owned()),
                    labels.join(","),
                ]);
            }
        }
        outln!("{}", crate::report::table(&rows));
        Ok(ExitCode::SUCCESS)
    }
}
