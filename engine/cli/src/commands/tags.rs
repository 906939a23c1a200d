//! `tazuna tags`: the tags used in tazuna.yaml and the manifests carrying them.

use std::process::ExitCode;

use crate::report::OutputFormat;
use clap::Args;

use crate::settings::GlobalSettings;

/// List the tags in tazuna.yaml and the manifests carrying each.
///
/// Select manifests by tag with `-t` on any command, for example
/// `tazuna build -t core,network` (a manifest with any of the tags is selected).
#[derive(Debug, Args)]
pub struct Tags {}

impl Tags {
    /// Print the tags.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        let stack = super::open(settings, tazuna_engine::stack::Writes::Persist)?;
        let tags = stack.config().tags();
        match settings.output {
            OutputFormat::Json => outln!("{}", serde_json::to_string_pretty(&tags)?),
            OutputFormat::Text if tags.is_empty() => {
                eprintln!("no manifest in `{}` has tags", settings.file.display());
            }
            OutputFormat::Text => {
                let width = tags.keys().map(String::len).max().unwrap_or(3).max(3);
                outln!("{:width$}  MANIFESTS", "TAG");
                for (tag, manifests) in &tags {
                    outln!("{tag:width$}  {}", manifests.join(", "));
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}
