//! `tazuna plan`: what `apply` would change, as a diff against live.

use std::process::ExitCode;

use crate::report::{Color, OutputFormat};
use clap::Args;
use tazuna_engine::plan::{ChangeKind, Question, Report};
use tazuna_engine::stack::{Access, Writes};

use super::fleet::{self, Changes, ClusterReport, Order, RolloutArgs, Scope};
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

    /// Clusters planned at once, when the flags select several.
    #[arg(long, value_name = "N")]
    max_parallel: Option<usize>,
}

impl Plan {
    /// Run it.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        let changes = if self.detailed_exitcode {
            Changes::Exit2
        } else {
            Changes::Succeed
        };
        super::runtime()?.block_on(report_on(
            settings,
            self.max_parallel,
            Question::Plan,
            ("plan", "no changes: the cluster matches the file"),
            changes,
        ))
    }
}

/// Compare on every selected cluster and print each report; with
/// [`Changes::Exit2`], exit 2 when any has changes.
pub async fn report_on(
    settings: &GlobalSettings,
    max_parallel: Option<usize>,
    question: Question,
    (verb, empty): (&str, &str),
    changes: Changes,
) -> anyhow::Result<ExitCode> {
    let rollout = RolloutArgs::at_most(max_parallel);
    match fleet::scope(settings, &rollout, Order::Everywhere).await? {
        Scope::One(one) => {
            let report = compare(&one, question).await?;
            print(&one, &report, verb, empty)?;
            if report.refused() > 0 {
                // Every other change is shown; the plan itself failed.
                return Err(crate::failure::Reported.into());
            }
            Ok(
                if report.changes.is_empty() || changes == Changes::Succeed {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(2)
                },
            )
        }
        Scope::Many(waves, pace, found) => {
            let (verb_owned, empty) = (verb.to_owned(), empty.to_owned());
            fleet::run(settings, (waves, pace, found), verb, changes, |one| {
                let (verb, empty) = (verb_owned.clone(), empty.clone());
                async move {
                    let report = compare(&one, question).await?;
                    if report.refused() > 0 {
                        anyhow::bail!(
                            "the API server refused the dry run of {} objects:\n{}",
                            report.refused(),
                            text(&one, &report, &verb, &empty)
                        );
                    }
                    Ok(ClusterReport {
                        changes: !report.changes.is_empty(),
                        changed: Some(report.changes.len()),
                        text: text(&one, &report, &verb, &empty),
                        json: Some(serde_json::to_value(&report)?),
                    })
                }
            })
            .await
        }
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
    outln!("{}", text(settings, report, verb, empty));
    Ok(())
}

/// A report as text lines.
fn text(settings: &GlobalSettings, report: &Report, verb: &str, empty: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let color = settings.stdout_color;
    for change in &report.changes {
        let label = match change.change {
            ChangeKind::Create => color.ok("+ create"),
            ChangeKind::Update => color.warning("~ update"),
            ChangeKind::Delete => color.error("- delete"),
            ChangeKind::Conflict => color.error("! conflict"),
            ChangeKind::Adopt => color.warning("> adopt"),
            ChangeKind::Refused => color.error("? refused"),
        };
        let note = change
            .note
            .as_ref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        let _ = writeln!(out, "{label} {}: {}{note}", change.manifest, change.object);
        if let Some(diff) = &change.diff {
            for line in diff.lines() {
                let _ = writeln!(out, "    {}", paint_diff(line, color));
            }
        }
    }
    // The helm hooks apply will run.
    for hook in &report.hooks {
        let _ = writeln!(
            out,
            "{} {}: {} ({}: {})",
            color.hint("» hook"),
            hook.manifest,
            hook.object,
            tazuna_core::hooks::HOOK,
            hook.events
        );
    }
    // What a GitOps controller owns now: not compared, said once each.
    for handed in &report.handed_over {
        let _ = writeln!(
            out,
            "{} {}: {} ({}; not compared)",
            color.hint("= handed over"),
            handed.manifest,
            handed.object,
            handed.handover
        );
    }
    if report.changes.is_empty() {
        let _ = write!(out, "{empty} ({} objects unchanged)", report.unchanged);
    } else {
        let _ = write!(
            out,
            "{verb}: {} changes, {} objects unchanged",
            report.changes.len(),
            report.unchanged
        );
    }
    out
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
