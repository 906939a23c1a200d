//! `tazuna build`: render every selected manifest, in dependency order, to stdout.

use std::io::Write;
use std::process::ExitCode;

use crate::report::{self, OutputFormat};
use clap::Args;
use tazuna_core::hint::Hint;
use tazuna_engine::stack::Writes;

use crate::failure::{self, Reported};
use crate::settings::GlobalSettings;

/// Render every manifest to stdout, in dependency order, without a cluster.
///
/// Each manifest is rendered by its plugin inside a sandbox, all in parallel;
/// the output order is the dependency order and is the same on every run.
/// Text output is one YAML stream with a `# Source: <manifest>/<origin>` comment
/// above each object; `-o json` prints one `v1/List`.
///
/// A manifest that fails to render is reported on stderr, the others are still
/// printed, and the exit code is 1.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  tazuna build > rendered.yaml\n  tazuna build -t core -e staging\n  tazuna build -o json | jq '.items | length'"
)]
pub struct Build {
    /// Render at most this many manifests at once (default: one per CPU).
    #[arg(long, value_name = "N", default_value_t = 0)]
    concurrency: usize,

    #[command(flatten)]
    sources: super::SourceArgs,
}

impl Build {
    /// Render and print.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        let settings = &self.sources.settings(settings);
        let stack = super::open(settings, Writes::Persist)?;
        let ordered = stack.ordered()?;
        let (host, plugins) = stack.source_plugins(&ordered)?;
        let render_settings = stack.render_settings(None, self.concurrency);
        let results = stack.render(&host, &plugins, &ordered, &render_settings)?;

        let mut rendered = Vec::new();
        let mut failures = 0;
        for result in &results {
            match result {
                Ok(manifest) => rendered.push(manifest),
                Err(error) => {
                    failures += 1;
                    eprintln!(
                        "{}",
                        failure::paint(
                            &failure::with_hints("error", error, error.hints()),
                            settings.stderr_color
                        )
                    );
                }
            }
        }
        let mut out = std::io::stdout().lock();
        match settings.output {
            OutputFormat::Text => report::write_yaml(&mut out, &rendered)?,
            OutputFormat::Json => report::write_json(&mut out, &rendered)?,
        }
        out.flush()?;
        if failures > 0 {
            eprintln!(
                "{}",
                failure::paint(
                    &format!(
                        "error: {failures} of {} manifests failed to render; the others were printed",
                        results.len()
                    ),
                    settings.stderr_color
                )
            );
            return Err(Reported.into());
        }
        Ok(ExitCode::SUCCESS)
    }
}
