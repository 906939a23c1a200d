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
use tazuna_sdk::traits::{RenderTraits, templates};
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
        tazuna_sdk::traits::declare(RenderTraits {
            reads_cluster: true,
            deterministic: deterministic(&rendered_chart, &values_files, &config, request),
        });
        Ok(rendered)
    }
}

/// Whether two renders of `chart` with these values agree: a chart directory
/// in which, as in the values given to it, no template calls a function
/// that draws a value anew (see [`templates::may_draw_anew`]). An archive
/// (pulled, or packed by `helm package`) is not read, and is taken not to be.
fn deterministic(
    chart: &config::Chart,
    values_files: &[String],
    config: &Config,
    request: &RenderRequest,
) -> bool {
    let config::Chart::Local { directory, .. } = chart else {
        return false;
    };
    let directory = std::path::Path::new(directory);
    if !directory.is_dir() {
        return false;
    }
    let mut values = Vec::new();
    for file in values_files {
        match std::fs::metadata(file) {
            Ok(metadata) if metadata.is_file() && metadata.len() <= templates::SCAN_LIMIT => {
                match std::fs::read_to_string(file) {
                    Ok(text) => values.push(text),
                    Err(_) => return false,
                }
            }
            _ => return false,
        }
    }
    if let Some(inline) = &config.values {
        values.push(serde_json::Value::Object(inline.clone()).to_string());
    }
    if config.environment_values {
        values.push(request.values.clone());
    }
    !templates::may_draw_anew(directory, &values)
}

tazuna_sdk::export_source_plugin!(Helm);

#[cfg(test)]
mod tests {
    use super::*;

    fn request(values: &str) -> RenderRequest {
        RenderRequest {
            manifest_name: "app".into(),
            path: None,
            config: "{}".into(),
            namespace: None,
            environment: None,
            values: values.into(),
            cluster: None,
            locked: None,
            workdir: "/manifest".into(),
            scratch: "/scratch".into(),
        }
    }

    #[test]
    fn only_a_chart_directory_whose_templates_and_values_draw_nothing_anew_is_deterministic() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |path: &str, text: &str| {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(
            "plain/Chart.yaml",
            "apiVersion: v2\nname: plain\nversion: 0.1.0\n",
        );
        write("plain/templates/cm.yaml", "data: {{ .Values.x | quote }}\n");
        write(
            "drawn/Chart.yaml",
            "apiVersion: v2\nname: drawn\nversion: 0.1.0\n",
        );
        write(
            "drawn/templates/s.yaml",
            "data: {{ randAlphaNum 8 | quote }}\n",
        );
        write("plain.yaml", "x: a\n");
        write("tpl.yaml", "x: '{{ uuidv4 }}'\n");
        write("chart.tgz", "\u{1f}\u{8b}");
        let local = |name: &str| config::Chart::Local {
            path: name.to_owned(),
            directory: root.join(name).to_string_lossy().into_owned(),
        };
        let config = |json: &str| -> Config { serde_json::from_str(json).unwrap() };
        let file = |name: &str| root.join(name).to_string_lossy().into_owned();
        let plain = config("{}");
        assert!(deterministic(
            &local("plain"),
            &[file("plain.yaml")],
            &plain,
            &request("{}")
        ));
        assert!(
            !deterministic(&local("drawn"), &[], &plain, &request("{}")),
            "randAlphaNum"
        );
        assert!(
            !deterministic(&local("plain"), &[file("tpl.yaml")], &plain, &request("{}")),
            "a values file that tpl may render"
        );
        let inline = config(r#"{"values": {"z": "{{ now }}"}}"#);
        assert!(
            !deterministic(&local("plain"), &[], &inline, &request("{}")),
            "inline values"
        );
        let from_environment = config(r#"{"environmentValues": true}"#);
        let drawn_values = request(r#"{"z": "{{ now }}"}"#);
        assert!(!deterministic(
            &local("plain"),
            &[],
            &from_environment,
            &drawn_values
        ));
        assert!(
            deterministic(&local("plain"), &[], &plain, &drawn_values),
            "values it does not take"
        );
        assert!(
            !deterministic(&local("chart.tgz"), &[], &plain, &request("{}")),
            "an archive"
        );
        let remote = config::Chart::Oci("oci://registry.example/charts/app".into());
        assert!(
            !deterministic(&remote, &[], &plain, &request("{}")),
            "a pulled chart"
        );
        assert!(
            !deterministic(
                &local("plain"),
                &[file("missing.yaml")],
                &plain,
                &request("{}")
            ),
            "a values file it cannot read"
        );
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/dev/zero", root.join("zero.yaml")).unwrap();
            assert!(
                !deterministic(
                    &local("plain"),
                    &[file("zero.yaml")],
                    &plain,
                    &request("{}")
                ),
                "a device as a values file is not read"
            );
        }
    }
}
