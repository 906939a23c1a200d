//! `tazuna compare A B`: what two environments or clusters receive from the
//! file, or hold live, object by object.

use std::process::ExitCode;

use clap::Args;
use serde_json::Value;
use tazuna_core::compare::{self, Compared, Comparison};
use tazuna_core::config::{self, Target};
use tazuna_engine::stack::{Access, Writes};

use crate::report::{Color, OutputFormat};
use crate::settings::GlobalSettings;

/// Show how two environments or clusters of the file differ: the objects
/// only one of them gets, and a diff of each object both get differently.
///
/// Each side is rendered as `tazuna build` renders it (no cluster is
/// contacted), with its own `.Environment`, `.Cluster` and `.Values`, so a
/// difference by accident shows before it ships. With `--live`, each
/// cluster's live objects (those its state records) are compared instead.
/// Objects pair up by group, kind, namespace and name; Secret values never
/// show, only that they differ. `diff-env` is another name for it.
#[derive(Debug, Args)]
#[command(
    visible_alias = "diff-env",
    after_help = "Examples:\n  tazuna compare staging production\n  tazuna compare prod-tokyo prod-osaka --live\n  tazuna compare staging production --detailed-exitcode   # 0: same, 2: different"
)]
pub struct Compare {
    /// The first environment or cluster.
    #[arg(value_name = "A")]
    first: String,

    /// The second environment or cluster.
    #[arg(value_name = "B")]
    second: String,

    /// Compare the clusters' live objects, not the renderings.
    #[arg(long)]
    live: bool,

    /// Exit with 2 when they differ (1 stays for errors).
    #[arg(long)]
    detailed_exitcode: bool,
}

impl Compare {
    /// Run it.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        let runtime = super::runtime()?;
        // Names that are no cluster of the file may be Cluster API clusters.
        let mut asked = settings.clone();
        asked.selection.clusters = vec![self.first.clone(), self.second.clone()];
        let (declared, found) = match runtime.block_on(super::fleet::declared(&asked)) {
            Ok(declared) => declared,
            // Without the management cluster, the file's own clusters still compare.
            Err(error) => {
                eprintln!(
                    "warning: Cluster API clusters were not searched: {}",
                    crate::failure::describe(&error, crate::report::Color::Never)
                        .unwrap_or_default()
                        .trim_start_matches("error: ")
                );
                let mut plain = asked.clone();
                plain.selection = Default::default();
                runtime.block_on(super::fleet::declared(&plain))?
            }
        };
        let first = side(&declared, &self.first)?;
        let second = side(&declared, &self.second)?;
        let (first_settings, second_settings) = (
            settings.for_target(&first, &found),
            settings.for_target(&second, &found),
        );
        let (a, b) = if self.live {
            runtime.block_on(async {
                let (a, b) = tokio::join!(live(&first_settings), live(&second_settings));
                Ok::<_, anyhow::Error>((a?, b?))
            })?
        } else {
            (rendered(&first_settings)?, rendered(&second_settings)?)
        };
        let comparison = compare::compare(&entries(&a), &entries(&b));
        if settings.output == OutputFormat::Json {
            let mut json = serde_json::to_value(&comparison)?;
            json["first"] = Value::String(first.name.clone());
            json["second"] = Value::String(second.name.clone());
            json["live"] = Value::Bool(self.live);
            outln!("{}", serde_json::to_string_pretty(&json)?);
        } else {
            print(
                &comparison,
                &first.name,
                &second.name,
                settings.stdout_color,
            )?;
        }
        Ok(if comparison.is_empty() || !self.detailed_exitcode {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(2)
        })
    }
}

/// One side's objects as [`compare`] takes them.
fn entries(side: &[(String, Option<String>, Value)]) -> Vec<Compared<'_>> {
    side.iter()
        .map(|(manifest, namespace, value)| Compared {
            manifest,
            value,
            default_namespace: namespace.as_deref(),
        })
        .collect()
}

/// The cluster `name` means: a cluster, or an environment with one cluster.
fn side(declared: &config::Fleet, name: &str) -> anyhow::Result<Target> {
    if let Some(target) = declared.targets().find(|t| t.name == name) {
        return Ok(target.clone());
    }
    match declared.environments.get(name) {
        Some(environment) => {
            let names: Vec<String> = environment
                .clusters
                .iter()
                .map(|t| format!("`{}`", t.name))
                .collect();
            Err(crate::failure::advised(
                format!(
                    "environment `{name}` has {} clusters; compare two clusters",
                    names.len()
                ),
                format!("its clusters: {}", names.join(", ")),
            ))
        }
        None => {
            let known: Vec<String> = declared
                .environments
                .keys()
                .cloned()
                .chain(declared.targets().map(|t| t.name.clone()))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .map(|n| format!("`{n}`"))
                .collect();
            Err(crate::failure::advised(
                format!("`{name}` is neither an environment nor a cluster of this file"),
                if known.is_empty() {
                    "this file declares no environments; add them under `spec.environments`"
                        .to_owned()
                } else {
                    format!("declared: {}", known.join(", "))
                },
            ))
        }
    }
}

/// One side's rendering: (manifest, its namespace, object).
fn rendered(settings: &GlobalSettings) -> anyhow::Result<Vec<(String, Option<String>, Value)>> {
    let stack = super::open(settings, Writes::Discard)?;
    let ordered = stack.ordered()?;
    let (host, plugins) = stack.source_plugins(&ordered)?;
    let results = stack.render(&host, &plugins, &ordered, &stack.render_settings(None, 0))?;
    let mut objects = Vec::new();
    let mut failures = Vec::new();
    for (manifest, result) in ordered.iter().zip(results) {
        match result {
            Ok(rendered) => objects.extend(
                rendered
                    .objects
                    .into_iter()
                    .map(|o| (manifest.name.clone(), manifest.namespace.clone(), o.value)),
            ),
            Err(error) => failures.push(format!("manifest `{}`: {error}", manifest.name)),
        }
    }
    if !failures.is_empty() {
        anyhow::bail!(
            "cannot render {} for `{}`:\n  {}",
            if failures.len() == 1 {
                "a manifest"
            } else {
                "manifests"
            },
            settings.cluster.as_deref().unwrap_or_default(),
            failures.join("\n  ")
        );
    }
    Ok(objects)
}

/// One side's live objects, from its state.
async fn live(settings: &GlobalSettings) -> anyhow::Result<Vec<(String, Option<String>, Value)>> {
    let stack = super::open(settings, Writes::Discard)?;
    let connection = stack.connect(Access::Read).await?;
    let objects = stack.live_objects(&connection).await?;
    Ok(objects
        .into_iter()
        .map(|(manifest, value)| (manifest, None, value))
        .collect())
}

fn print(comparison: &Comparison, first: &str, second: &str, color: Color) -> anyhow::Result<()> {
    outln!(
        "compare {first} → {second}: {} only in {first}, {} only in {second}, {} different, {} the same",
        comparison.only_in_first.len(),
        comparison.only_in_second.len(),
        comparison.different.len(),
        comparison.same
    );
    for object in &comparison.only_in_first {
        outln!("{} {object}", color.error(&format!("- only in {first}:")));
    }
    for object in &comparison.only_in_second {
        outln!("{} {object}", color.ok(&format!("+ only in {second}:")));
    }
    for difference in &comparison.different {
        outln!("{} {}", color.warning("~ different:"), difference.object);
        for line in difference.diff.lines() {
            let painted = if line.starts_with('+') {
                color.ok(line)
            } else if line.starts_with('-') {
                color.error(line)
            } else {
                line.to_owned()
            };
            outln!("    {painted}");
        }
    }
    Ok(())
}
