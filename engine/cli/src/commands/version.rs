//! `tazuna version`: versions of Tazuna, its plugin contract and its runtime.

use std::process::ExitCode;

use crate::report::OutputFormat;
use clap::Args;
use tazuna_engine::host::SOURCE_WORLD;

use crate::settings::GlobalSettings;

/// Print the versions of Tazuna and of the plugin contract it speaks.
#[derive(Debug, Args)]
pub struct Version {}

impl Version {
    /// Print the versions.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        let contract = SOURCE_WORLD.rsplit_once('@').map_or("", |(_, v)| v);
        match settings.output {
            OutputFormat::Json => outln!(
                "{}",
                serde_json::json!({
                    "tazuna": tazuna_engine::VERSION,
                    "pluginContract": contract,
                    "worlds": [SOURCE_WORLD],
                })
            ),
            OutputFormat::Text => {
                outln!("tazuna {}", tazuna_engine::VERSION);
                outln!("plugin contract tazuna:plugin@{contract}");
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}
