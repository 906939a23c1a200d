//! `tazuna schema`: the JSON schema of tazuna.yaml, for editors.

use std::process::ExitCode;

use clap::Args;

use crate::settings::GlobalSettings;

/// Print the JSON schema of tazuna.yaml.
///
/// Point your editor at it for completion and inline validation, for example
/// with the YAML language server.
#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  tazuna schema > tazuna.schema.json\n  # then, as the first line of tazuna.yaml:\n  # yaml-language-server: $schema=./tazuna.schema.json"
)]
pub struct Schema {}

impl Schema {
    /// Print the schema.
    pub fn run(self, _settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        let schema = tazuna_core::config::json_schema();
        outln!("{}", serde_json::to_string_pretty(&schema)?);
        Ok(ExitCode::SUCCESS)
    }
}
