//! `tazuna schema`: the JSON schema of tazuna.yaml, for editors.

use std::process::ExitCode;

use clap::Args;

use crate::settings::GlobalSettings;

/// Print the JSON schema of tazuna.yaml.
///
/// Point your editor at it for completion and inline validation, for example
/// with the YAML language server:
///
///   tazuna schema > tazuna.schema.json
///   # first line of tazuna.yaml:
///   # yaml-language-server: $schema=./tazuna.schema.json
#[derive(Debug, Args)]
pub struct Schema {}

impl Schema {
    /// Print the schema.
    pub fn run(self, _settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        let schema = tazuna_core::config::json_schema();
        println!("{}", serde_json::to_string_pretty(&schema)?);
        Ok(ExitCode::SUCCESS)
    }
}
