//! The built-in `helm` source: `helm template` of a chart, run by the host (grant `exec:helm`).
//!
//! ```yaml
//! - name: hello
//!   type: helm
//!   path: ./charts/hello            # a chart in this repository, or:
//!   namespace: hello
//!   helm:
//!     # chart: oci://registry.example.com/charts/hello   # an OCI chart, or a name in `repo`
//!     # version: 1.2.3                                   # required for remote charts
//!     releaseName: hello            # default: the manifest's name
//!     environmentValues: true     # the cluster's values first, as a values file
//!     valuesFiles: [values/prod.yaml]
//!     values: { replicas: 3 }
//! ```
//!
//! [`config`] holds the block and its checks, [`command`] turns it into `helm template`
//! arguments (with the target cluster's version and API versions for `.Capabilities`),
//! `tazuna-plugin-common` reads helm's output back into objects named after their template, and
//! [`output`] finds the pin of a remote chart.

pub mod command;
pub mod config;
pub mod output;
pub mod pull;

use tazuna_sdk::exec::Command;
use tazuna_sdk::{PluginError, PluginInfo, RenderOutput, RenderRequest, SourcePlugin};

pub use config::Config;

/// The capability this plugin needs; built-ins are granted what they ask for.
const CAPABILITY: &str = "exec:helm";

/// Guest path of the values file written for the inline `values`.
const VALUES_FILE: &str = "tazuna-values.json";

/// Guest path of the values file written for `environmentValues`.
const CLUSTER_VALUES_FILE: &str = "tazuna-cluster-values.json";

/// The `helm` source plugin.
pub struct Helm;

impl SourcePlugin for Helm {
    type Config = Config;

    fn info() -> PluginInfo {
        PluginInfo::new("helm", env!("CARGO_PKG_VERSION"))
            .with_description(
                "`helm template` of a chart: local (at `path`), OCI (`oci://`) or from a repository.",
            )
            .with_capability(CAPABILITY)
            .with_capability("read:references")
    }

    fn validate(config: &Config) -> Vec<tazuna_sdk::Diagnostic> {
        config.check()
    }

    fn render(config: Config, request: &RenderRequest) -> Result<RenderOutput, PluginError> {
        let chart = config.chart(request)?;
        if let config::Chart::Local { directory, path } = &chart {
            let local = std::path::Path::new(directory);
            // A chart directory, or one packaged by `helm package`.
            let packaged = local.is_file() && (path.ends_with(".tgz") || path.ends_with(".tar.gz"));
            if !packaged && !local.join("Chart.yaml").is_file() {
                return Err(PluginError::not_found(format_args!(
                    "`{path}` (the manifest's `path`) is not a chart: it has no Chart.yaml, and it is not a chart archive (`.tgz`) either"
                )));
            }
        }
        // A remote chart is pulled first: the pull signs in, the render
        // does not (and a repository chart's archive digest pins it).
        let pulled = match &chart {
            config::Chart::Repository { repo, name } => Some(pull::pull(
                pull::Remote::Repository { repo, name },
                &config,
                request,
            )?),
            config::Chart::Oci(reference) => {
                Some(pull::pull(pull::Remote::Oci(reference), &config, request)?)
            }
            config::Chart::Local { .. } => None,
        };
        let rendered_chart = match &pulled {
            Some(pulled) => config::Chart::Local {
                path: pulled.archive.clone(),
                directory: pulled.archive.clone(),
            },
            None => chart.clone(),
        };
        let values_files = config.values_files(request)?;
        for (file, field) in values_files.iter().zip(&config.values_files) {
            if !std::path::Path::new(file).is_file() {
                return Err(PluginError::not_found(format_args!(
                    "values file `{field}` (in `helm.valuesFiles`) does not exist"
                )));
            }
        }
        let cluster_values = if config.environment_values {
            tazuna_plugin_common::write_cluster_values(request, CLUSTER_VALUES_FILE)?
        } else {
            None
        };
        let inline = match &config.values {
            Some(values) if !values.is_empty() => {
                let file = format!("{}/{VALUES_FILE}", request.scratch.trim_end_matches('/'));
                let text = serde_json::to_string(values).map_err(PluginError::other)?;
                std::fs::write(&file, text).map_err(|error| {
                    PluginError::other(format_args!("cannot write `{file}`: {error}"))
                })?;
                Some(file)
            }
            _ => None,
        };
        let args = command::template_args(&command::Template {
            release: config
                .release_name
                .as_deref()
                .unwrap_or(&request.manifest_name),
            chart: &rendered_chart,
            config: &config,
            namespace: request.namespace.as_deref().filter(|ns| !ns.is_empty()),
            cluster: request.cluster.as_ref(),
            values_files: cluster_values
                .iter()
                .chain(&values_files)
                .map(String::as_str)
                .chain(inline.as_deref())
                .collect(),
        });
        let run = Command::new("helm")
            .args(args)
            .cwd(request.scratch.as_str())
            .run_checked()?;
        let read = tazuna_plugin_common::helm::read(&run.stdout_text());
        if !read.objects.errors.is_empty() {
            return Err(PluginError::InvalidInput(read.objects.errors));
        }
        let manifests = tazuna_plugin_common::encode(
            read.objects.objects,
            request.namespace.as_deref(),
            request.cluster.as_ref(),
        )?;
        let mut rendered = RenderOutput::new(manifests);
        rendered.diagnostics = read.objects.notes;
        rendered
            .diagnostics
            .extend(tazuna_plugin_common::tool_warnings(
                "helm",
                &run.stderr_text(),
                false,
            ));
        // An OCI chart is pinned by the manifest digest its pull reports, a
        // repository chart by its archive's digest.
        let said = pulled
            .as_ref()
            .map_or_else(|| run.stderr_text().into_owned(), |p| p.said.clone());
        let mut pin = output::resolved(&chart, &config, &said);
        if let (Some(pin), Some(pulled)) = (pin.as_mut(), &pulled)
            && matches!(chart, config::Chart::Repository { .. })
        {
            pin.version = pulled.version.clone().or(pin.version.take());
            pin.digest = Some(pulled.digest.clone());
        }
        rendered.resolved.extend(pin);
        Ok(rendered)
    }
}

tazuna_sdk::export_source_plugin!(Helm);
