//! `tazuna check`: validate tazuna.yaml without touching a cluster.

use std::process::ExitCode;

use crate::report::OutputFormat;
use clap::Args;
use tazuna_core::config::Manifest;
use tazuna_core::graph;
use tazuna_engine::distribution::Resolve;
use tazuna_engine::host::{Severity, locate_tool, tool_env_var};
use tazuna_engine::plugins::{PluginSet, Role};
use tazuna_engine::render::{self, PathProblem};
use tazuna_engine::stack::Writes;

use crate::failure::{self, Reported};
use crate::settings::GlobalSettings;

/// Validate tazuna.yaml without touching a cluster.
///
/// Checks the file's structure (unknown fields, types, names, `dependsOn`
/// targets and cycles, includes, environments), that every manifest's `type`
/// has a plugin and its `path` exists, asks each plugin to validate its
/// manifest's config, and loads the secret-resolver plugins providers name.
/// Errors point at the file, line and column.
///
/// Manifest names with spaces load elsewhere with a warning, as in Go
/// Tazuna, and are errors here; `--fix` renames them (spaces become `-`),
/// with every `dependsOn` that names them, in place.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  tazuna check\n  tazuna check --fix\n  tazuna check -f clusters/production/tazuna.yaml -e production"
)]
pub struct Check {
    /// Rewrite what can be fixed mechanically (manifest names with spaces,
    /// and the `dependsOn` naming them) in the files, then check again.
    #[arg(long)]
    fix: bool,
}

impl Check {
    /// Validate and report.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        let mut stack = if self.fix {
            open_naming_manifests(settings)?
        } else {
            super::open_quietly(settings, Writes::Persist)?
        };
        if self.fix && !stack.config().warnings.is_empty() {
            let fixed = tazuna_core::config::fix(&stack.config().warnings).map_err(|error| {
                let hints = tazuna_core::hint::Hint::hints(&error);
                match hints.into_iter().next() {
                    Some(hint) => failure::advised(format!("cannot fix: {error}"), hint),
                    None => anyhow::anyhow!("cannot fix: {error}"),
                }
            })?;
            for (file, edits) in fixed {
                eprintln!("fixed {edits} names in {}", file.display());
            }
            stack = super::open_quietly(settings, Writes::Persist)?;
        }
        let config = stack.config();
        let manifests: Vec<_> = config.manifests.iter().collect();
        let (host, plugins) = stack.source_plugins(&manifests)?;
        // A provider whose type names a plugin needs a secret resolver there:
        // loading it now finds a wrong world before a run needs a value.
        let resolvers: Vec<(&str, Role)> = stack
            .declared_roles()
            .into_iter()
            .filter(|(_, role)| *role == Role::Resolver)
            .collect();
        if !resolvers.is_empty() {
            stack.plugin_set(&host, &resolvers, Resolve::Pinned)?;
        }

        let mut problems: Vec<String> = config
            .warnings
            .iter()
            .map(|w| {
                let hint = if w.edits.is_empty() {
                    w.hint.clone()
                } else {
                    w.hint.replace("`tazuna check --fix`", "`--fix`")
                };
                failure::with_hints(
                    "error",
                    &format_args!("{}\n  --> {}", w.message, w.at.location),
                    [hint],
                )
            })
            .collect();
        for manifest in &manifests {
            let at = format!(
                "{}:{}:{}",
                manifest.origin.file.display(),
                manifest.origin.line,
                manifest.origin.column
            );
            if let Some(path) = &manifest.path
                && let Some(problem) = render::check_path(&manifest.base_dir, path)
            {
                let (what, hint) = match problem {
                    PathProblem::Missing => (
                        "does not exist",
                        "paths are relative to the directory of the file that declares the manifest",
                    ),
                    PathProblem::OutsideManifestDir => (
                        "leaves the manifest directory",
                        "a plugin only sees the directory of the file that declares the manifest; move tazuna.yaml up, or declare the manifest in an included file nearer its files",
                    ),
                };
                problems.push(failure::with_hints(
                    "error",
                    &format_args!(
                        "manifest `{}`: path `{path}` {what} (manifest directory: `{}`)\n  --> {at}",
                        manifest.name,
                        manifest.base_dir.display()
                    ),
                    [hint],
                ));
            }
            let Some(plugin) = plugins.get(&manifest.kind) else {
                continue;
            };
            for diagnostic in host.validate(plugin, &manifest.config.to_string())? {
                let label = match diagnostic.severity {
                    Severity::Error => "error",
                    Severity::Warning => "warning",
                    Severity::Info => continue,
                };
                let field = diagnostic
                    .path
                    .map(|p| format!(" at `{p}`"))
                    .unwrap_or_default();
                problems.push(format!(
                    "{label}: manifest `{}`: plugin `{}`{field}: {}\n  --> {at}",
                    manifest.name,
                    plugin.info().name,
                    diagnostic.message
                ));
            }
        }
        problems.extend(missing_tools(&manifests, &plugins));
        let errors = problems.iter().filter(|p| p.starts_with("error:")).count();
        for problem in &problems {
            eprintln!("{}", failure::paint(problem, settings.stderr_color));
        }
        let layers = graph::layers(&manifests);
        match settings.output {
            OutputFormat::Json => outln!(
                "{}",
                serde_json::json!({
                    "file": settings.file,
                    "valid": errors == 0,
                    "errors": errors,
                    "warnings": problems.len() - errors,
                    "layers": layers
                        .iter()
                        .map(|layer| layer.iter().map(|&i| &manifests[i].name).collect::<Vec<_>>())
                        .collect::<Vec<_>>(),
                })
            ),
            OutputFormat::Text if errors == 0 => outln!(
                "{} {}: {} manifests in {} layers",
                settings.stdout_color.ok("ok:"),
                settings.file.display(),
                manifests.len(),
                layers.len()
            ),
            OutputFormat::Text => {}
        }
        if errors > 0 {
            return Err(Reported.into());
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// A warning for each tool the manifests' plugins may run that is not
/// installed, naming the manifests that need it. Not an error: a file can be
/// checked where the tools are not.
fn missing_tools(manifests: &[&Manifest], plugins: &PluginSet) -> Vec<String> {
    let mut needed: std::collections::BTreeMap<String, Vec<&str>> = Default::default();
    for manifest in manifests {
        let Some(plugin) = plugins.get(&manifest.kind) else {
            continue;
        };
        for tool in plugin
            .capabilities()
            .iter()
            .filter_map(|capability| capability.strip_prefix("exec:"))
            .filter(|tool| !tool.contains('*'))
        {
            needed
                .entry(tool.to_owned())
                .or_default()
                .push(&manifest.name);
        }
    }
    needed
        .into_iter()
        .filter(|(tool, _)| locate_tool(tool).is_none())
        .map(|(tool, names)| {
            let who = match names.as_slice() {
                [one] => format!("manifest `{one}` runs"),
                many => format!(
                    "manifests {} run",
                    many.iter()
                        .map(|name| format!("`{name}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            failure::with_hints(
                "warning",
                &format_args!("`{tool}` is not installed, and {who} it"),
                [format!(
                    "put `{tool}` on PATH or set {}",
                    tool_env_var(&tool)
                )],
            )
        })
        .collect()
}

/// Open the file, naming each manifest that has no name as Go Tazuna's
/// `check --fix` does (`<type>-<dir>`), one edit at a time, keeping the rest
/// of the file (comments included) as it is.
fn open_naming_manifests(settings: &GlobalSettings) -> anyhow::Result<tazuna_engine::stack::Stack> {
    // At most one rename per manifest a file can hold before giving up.
    for _ in 0..512 {
        let error = match super::open_quietly(settings, Writes::Persist) {
            Ok(stack) => return Ok(stack),
            Err(error) => error,
        };
        let unnamed = error
            .downcast_ref::<tazuna_core::config::ConfigError>()
            .or_else(
                || match error.downcast_ref::<tazuna_engine::stack::RunError>() {
                    Some(tazuna_engine::stack::RunError::Config(config)) => Some(config),
                    _ => None,
                },
            );
        let Some(tazuna_core::config::ConfigError::Unnamed {
            suggested,
            fix: Some(fix),
            ..
        }) = unnamed
        else {
            return Err(error);
        };
        tazuna_core::config::apply_edits([fix.as_ref()])
            .map_err(|e| anyhow::anyhow!("cannot fix: {e}"))?;
        eprintln!(
            "fixed: named a manifest `{suggested}` in {}",
            fix.at.location.file.display()
        );
    }
    super::open_quietly(settings, Writes::Persist)
}
