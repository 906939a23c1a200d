//! `tazuna plan`: what `apply` would change, as a diff against live.

use std::process::ExitCode;

use crate::report::{Color, OutputFormat};
use clap::Args;
use tazuna_engine::plan::{ChangeKind, Question, Report};
use tazuna_engine::stack::{Access, Writes};

use crate::settings::GlobalSettings;

/// Show what `tazuna apply` would change, object by object, without writing.
///
/// Objects whose intent and live fields are unchanged since the last apply
/// cost no request; the others are sent as a server-side dry run and diffed
/// against live, so defaults the server fills in never show as changes.
/// Secret values are redacted. Works on a bare cluster: objects in namespaces
/// and of kinds the run itself creates are shown as creates. Objects that
/// `apply --prune` would delete are listed too (only this file's own, with
/// what `--prune-dangerous` would add), and so are fields of Tazuna's
/// objects that other field managers (Argo CD, Flux) now own. What apply
/// would refuse (an object in two manifests, in namespace `tazuna`, or a
/// manifest name another stack owns) fails the plan the same way.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  tazuna plan --context kind-staging\n  tazuna plan --detailed-exitcode   # 0: no changes, 2: changes\n  tazuna plan -o json | jq '.changes[].object'"
)]
pub struct Plan {
    /// Exit with 2 when there are changes (1 stays for errors).
    #[arg(long)]
    detailed_exitcode: bool,
}

impl Plan {
    /// Run it.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        super::runtime()?.block_on(async {
            let report = compare(settings, Question::Plan).await?;
            print(
                settings,
                &report,
                "plan",
                "no changes: the cluster matches the file",
            )?;
            Ok(if report.changes.is_empty() || !self.detailed_exitcode {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            })
        })
    }
}

/// Render, read state and live objects, and compare.
pub async fn compare(settings: &GlobalSettings, question: Question) -> anyhow::Result<Report> {
    let stack = super::open(settings, Writes::Persist)?;
    let connection = stack.connect(Access::Read).await?;
    Ok(stack.plan(&connection, question).await?)
}

/// Print a report as text or JSON.
pub fn print(
    settings: &GlobalSettings,
    report: &Report,
    verb: &str,
    empty: &str,
) -> anyhow::Result<()> {
    if settings.output == OutputFormat::Json {
        outln!("{}", serde_json::to_string_pretty(report)?);
        return Ok(());
    }
    let color = settings.stdout_color;
    for change in &report.changes {
        let label = match change.change {
            ChangeKind::Create => color.ok("+ create"),
            ChangeKind::Update => color.warning("~ update"),
            ChangeKind::Delete => color.error("- delete"),
            ChangeKind::Conflict => color.error("! conflict"),
        };
        let note = change
            .note
            .as_ref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        outln!("{label} {}: {}{note}", change.manifest, change.object);
        if let Some(diff) = &change.diff {
            for line in diff.lines() {
                outln!("    {}", paint_diff(line, color));
            }
        }
    }
    if report.changes.is_empty() {
        outln!("{empty} ({} objects unchanged)", report.unchanged);
    } else {
        outln!(
            "{verb}: {} changes, {} objects unchanged",
            report.changes.len(),
            report.unchanged
        );
    }
    Ok(())
}

fn paint_diff(line: &str, color: Color) -> String {
    if line.starts_with('+') {
        color.ok(line)
    } else if line.starts_with('-') {
        color.error(line)
    } else {
        line.to_owned()
    }
}
