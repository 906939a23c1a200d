//! `tazuna plugin run`: one config rendered by one component, locally.

use std::process::ExitCode;

use crate::report::OutputFormat;
use tazuna_engine::host::{Grants, PluginHost, SOURCE_WORLD};

use crate::failure::{self, Reported};
use crate::settings::GlobalSettings;

use super::*;

/// What `plugin run` renders, from its flags.
#[derive(Debug, clap::Args)]
pub struct RunPlugin {
    /// The component file (`.wasm`, or `file://<path>`).
    component: String,
    /// The config block: JSON or YAML, or `@<file>` to read it from a file.
    #[arg(long, value_name = "JSON|@FILE", default_value = "{}")]
    config: String,
    /// The manifest's name (default: the plugin's name).
    #[arg(long)]
    name: Option<String>,
    /// The manifest directory, which the plugin reads (read-only) as its
    /// working directory.
    #[arg(long, value_name = "DIR", default_value = ".")]
    dir: std::path::PathBuf,
    /// The manifest's `path`, relative to `--dir`.
    #[arg(long)]
    path: Option<String>,
    /// The manifest's default namespace.
    #[arg(long, short = 'n')]
    namespace: Option<String>,
    /// The environment's `values`: JSON or YAML, or `@<file>`.
    #[arg(long, value_name = "JSON|@FILE")]
    values: Option<String>,
    /// Grant a capability the plugin requests (`exec:helm`, `network`,
    /// `secrets:exec`, …); repeat it for several. Default: none.
    #[arg(long = "grant", value_name = "CAPABILITY")]
    grants: Vec<String>,
}

/// `text`, or the file `@text` names, as JSON (or YAML).
fn json_argument(flag: &str, text: &str) -> anyhow::Result<serde_json::Value> {
    let (from, text) = match text.strip_prefix('@') {
        Some(file) => (
            format!("`{file}`"),
            std::fs::read_to_string(file)
                .map_err(|e| anyhow::anyhow!("{flag}: cannot read `{file}`: {e}"))?,
        ),
        None => ("the argument".to_owned(), text.to_owned()),
    };
    let value: serde_json::Value = serde_yaml::from_str(&text).map_err(|e| {
        crate::failure::advised(format!("{flag}: {from} is neither JSON nor YAML: {e}"), format!("quote it for the shell, as in `{flag} '{{\"key\": \"value\"}}'`, or write `{flag} @config.yaml`"))
    })?;
    if !value.is_object() {
        return Err(crate::failure::advised(
            format!("{flag}: {from} is not a mapping"),
            format!(
                "it is the block under `<type>:` in tazuna.yaml, as in `{flag} '{{\"key\": \"value\"}}'`"
            ),
        ));
    }
    Ok(value)
}

pub(super) fn run(settings: &GlobalSettings, plan: &RunPlugin) -> anyhow::Result<ExitCode> {
    use tazuna_core::hint::Hint;
    use tazuna_engine::host::{RenderRequest, Severity};
    use tazuna_engine::render::RenderError;

    let config = json_argument("--config", &plan.config)?;
    let values = match &plan.values {
        Some(values) => json_argument("--values", values)?,
        None => serde_json::json!({}),
    };
    if !plan.dir.is_dir() {
        return Err(crate::failure::advised(
            format!("`{}` is not a directory", plan.dir.display()),
            "`--dir` is the manifest directory the plugin reads, where tazuna.yaml would be",
        ));
    }
    let component = std::path::Path::new(
        plan.component
            .strip_prefix("file://")
            .unwrap_or(&plan.component),
    );
    let (label, bytes) = read_component(component)?;
    let host = PluginHost::new(settings.host.clone())?;
    let plugin = match host.load_source(&label, &bytes, Grants::List(&plan.grants)) {
        Ok(plugin) => plugin,
        Err(not_a_source) => {
            if host
                .load_resolver(&label, &bytes, Grants::List(&[]))
                .is_ok()
            {
                return Err(crate::failure::advised(
                    format!(
                        "`{}` is a secret resolver, and `plugin run` renders with source plugins",
                        component.display()
                    ),
                    "declare it in spec.plugins and name it as a provider's `type`; `tazuna plugin inspect` shows what it is",
                ));
            }
            return Err(crate::failure::advised(
                format!("{not_a_source}"),
                format!("a plugin targets `{SOURCE_WORLD}`; build it with tazuna-sdk"),
            ));
        }
    };
    let info = plugin.info().clone();
    let granted: Vec<&str> = plugin.capabilities().iter().collect();
    let shown = |list: &[&str]| {
        if list.is_empty() {
            "none".to_owned()
        } else {
            list.join(", ")
        }
    };
    let requested: Vec<&str> = info.capabilities.iter().map(String::as_str).collect();
    eprintln!(
        "plugin `{}` {}: requests {}; granted {}",
        info.name,
        info.version,
        shown(&requested),
        shown(&granted)
    );
    let manifest = plan.name.clone().unwrap_or_else(|| info.name.clone());
    let print_diagnostics = |diagnostics: &[tazuna_engine::host::Diagnostic]| {
        for diagnostic in diagnostics {
            let label = match diagnostic.severity {
                Severity::Error => "error:",
                Severity::Warning => "warning:",
                Severity::Info => "info:",
            };
            let at = diagnostic
                .path
                .as_deref()
                .map(|path| format!(" (at `{path}`)"))
                .unwrap_or_default();
            eprintln!(
                "{}",
                failure::paint(
                    &format!("{label} {}{at}", diagnostic.message),
                    settings.stderr_color
                )
            );
        }
    };

    let found = host.validate(&plugin, &config.to_string())?;
    print_diagnostics(&found);
    if found.iter().any(|d| matches!(d.severity, Severity::Error)) {
        return Err(failure::advised(
            format!(
                "manifest `{manifest}`: plugin `{}` finds the config invalid; nothing was rendered",
                info.name
            ),
            "fix the config at the paths named above; the plugin's config type says what it accepts",
        ));
    }

    let request = RenderRequest {
        manifest_name: manifest.clone(),
        path: plan.path.clone(),
        config: config.to_string(),
        namespace: plan.namespace.clone(),
        environment: settings.environment.clone(),
        values: values.to_string(),
        cluster: None,
        locked: None,
        workdir: String::new(),
        scratch: String::new(),
    };
    let failed = |error: RenderError, extra: Option<String>| {
        let hints = error.hints().into_iter().chain(extra);
        eprintln!(
            "{}",
            failure::paint(
                &failure::with_hints("error", &error, hints),
                settings.stderr_color
            )
        );
        Reported
    };
    let render = match host.render(&plugin, &plan.dir, request) {
        Err(error) => {
            return Err(failed(RenderError::Host { manifest, error }, None).into());
        }
        Ok(Err(error)) => {
            let hint = match &error {
                tazuna_engine::host::PluginError::CapabilityDenied(_) => Some(format!(
                    "grant what it needs with `--grant <capability>` (it requests: {}); in tazuna.yaml that is `spec.plugins[].grants`",
                    shown(&requested)
                )),
                _ => None,
            };
            return Err(failed(
                RenderError::Plugin {
                    manifest,
                    plugin: info.name.clone(),
                    error,
                },
                hint,
            )
            .into());
        }
        Ok(Ok(render)) => render,
    };
    let output = render.output;
    print_diagnostics(&output.diagnostics);
    // What the engine will do with it: render it again once CRDs arrive, or
    // twice to find generated fields.
    eprintln!(
        "{}",
        match render.traits {
            Some(traits) => format!(
                "note: the render declared that it {} the cluster and is {}deterministic",
                if traits.reads_cluster { "reads" } else { "does not read" },
                if traits.deterministic { "" } else { "not " }
            ),
            None => "note: the render declared no traits: it is taken to read the cluster and to be deterministic".to_owned(),
        }
    );
    let mut objects = Vec::with_capacity(output.manifests.len());
    for document in &output.manifests {
        let object: serde_json::Value = serde_yaml::from_str(&document.content).map_err(|e| {
            crate::failure::advised(
                format!(
                    "manifest `{manifest}`: plugin `{}` returned a document that is not YAML: {e}",
                    info.name
                ),
                "each `Manifest` the plugin returns holds one Kubernetes object",
            )
        })?;
        objects.push((document.origin.clone(), object));
    }
    match settings.output {
        OutputFormat::Json => {
            let list = serde_json::json!({
                "apiVersion": "v1",
                "kind": "List",
                "items": objects.iter().map(|(_, object)| object).collect::<Vec<_>>(),
            });
            outln!("{}", serde_json::to_string_pretty(&list)?);
        }
        OutputFormat::Text => {
            for (origin, object) in &objects {
                let source = match origin {
                    Some(origin) => format!("{manifest}/{origin}"),
                    None => manifest.clone(),
                };
                outln!(
                    "---\n# Source: {source}\n{}",
                    serde_yaml::to_string(object)?.trim_end()
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
