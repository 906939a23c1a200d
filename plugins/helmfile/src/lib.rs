//! The built-in `helmfile` source: `helmfile template` of the helmfile at the manifest's
//! `path`, run by the host (grants `exec:helmfile`, and `exec:helm` so that helmfile finds the
//! `helm` Tazuna was given).
//!
//! ```yaml
//! - name: cert-manager
//!   type: helmfile
//!   path: ./helmfile/cert-manager      # a directory with helmfile.yaml(.gotmpl), or the file
//!   namespace: cert-manager
//!   helmfile:                          # Go Tazuna's block
//!     includeCRDs: true
//!     vars:
//!       extraLabels: { from: static, staticMap: { tier: platform } }
//! ```
//!
//! [`config`] holds the block; [`template_args`] builds the command line; [`releases`] reads
//! what helm wrote for each release, each object named after its release and chart template.

pub mod config;
pub mod releases;

use std::path::Path;

use tazuna_plugin_common::paths;
use tazuna_sdk::exec::Command;
use tazuna_sdk::{
    ClusterInfo, Diagnostic, PluginError, PluginInfo, RenderOutput, RenderRequest, SourcePlugin,
};

pub use config::Config;

/// Guest file name of the state values written for `vars`.
const STATE_VALUES_FILE: &str = "tazuna-state-values.json";

/// Scratch directory helm writes each release's templates to, as
/// `<release>_<namespace>/<chart>/templates/<file>`.
const OUTPUT_DIR: &str = "rendered";

/// Where each release's files go, below the output directory. Neither release names nor
/// namespaces contain `_`, and the namespace may be empty.
const OUTPUT_DIR_TEMPLATE: &str = "{{ .OutputDir }}/{{ .Release.Name }}_{{ .Release.Namespace }}";

/// The `helmfile` source plugin.
pub struct Helmfile;

impl SourcePlugin for Helmfile {
    type Config = Config;

    fn info() -> PluginInfo {
        PluginInfo::new("helmfile", env!("CARGO_PKG_VERSION"))
            .with_description("`helmfile template` of the helmfile at `path`.")
            .with_capability("exec:helmfile")
            .with_capability("exec:helm")
    }

    fn validate(config: &Config) -> Vec<Diagnostic> {
        config.check()
    }

    fn render(config: Config, request: &RenderRequest) -> Result<RenderOutput, PluginError> {
        let invalid = |diagnostic: Diagnostic| PluginError::InvalidConfig(vec![diagnostic]);
        let Some(path) = request.path.as_deref().filter(|path| !path.is_empty()) else {
            return Err(invalid(Diagnostic::error(format!(
                "manifest `{}` has type `helmfile` but no `path` naming its helmfile (a file, or a directory holding helmfile.yaml)",
                request.manifest_name
            ))));
        };
        let file = paths::inside(&request.workdir, path, "path").map_err(invalid)?;
        if !Path::new(&file).exists() {
            return Err(PluginError::not_found(format_args!(
                "helmfile `{path}` (the manifest's `path`) does not exist"
            )));
        }
        let mut values_files = Vec::new();
        for (index, extra) in config.extra_value_files.iter().enumerate() {
            let guest = paths::inside(
                &request.workdir,
                extra,
                &format!("/extraValueFiles/{index}"),
            )
            .map_err(invalid)?;
            if !Path::new(&guest).is_file() {
                return Err(PluginError::not_found(format_args!(
                    "values file `{extra}` (in `helmfile.extraValueFiles`) does not exist"
                )));
            }
            values_files.push(guest);
        }
        let state_values = config.state_values();
        let state_values_file = if state_values.is_empty() {
            None
        } else {
            let file = format!(
                "{}/{STATE_VALUES_FILE}",
                request.scratch.trim_end_matches('/')
            );
            let text = serde_json::to_string(&state_values).map_err(PluginError::other)?;
            std::fs::write(&file, text).map_err(|error| {
                PluginError::other(format_args!("cannot write `{file}`: {error}"))
            })?;
            Some(file)
        };
        let output_dir = format!("{}/{OUTPUT_DIR}", request.scratch.trim_end_matches('/'));
        let args = template_args(&Template {
            file: &file,
            config: &config,
            cluster: request.cluster.as_ref(),
            state_values_file: state_values_file.as_deref(),
            values_files: &values_files,
            output_dir: &output_dir,
        });
        Command::new("helmfile")
            .args(args)
            .cwd(request.scratch.as_str())
            .run_checked()?;
        let mut rendered = RenderOutput::new(Vec::new());
        for release in releases::read(Path::new(&output_dir)).map_err(PluginError::other)? {
            let read = release.read;
            if !read.objects.errors.is_empty() {
                return Err(PluginError::InvalidInput(read.objects.errors));
            }
            // Objects without a namespace go where `helm install` would put them: the
            // release's namespace, else the manifest's.
            let namespace = release
                .namespace
                .as_deref()
                .or(request.namespace.as_deref());
            rendered.manifests.extend(tazuna_plugin_common::encode(
                read.objects.objects,
                namespace,
                request.cluster.as_ref(),
            )?);
            rendered.diagnostics.extend(read.objects.notes);
            rendered.diagnostics.extend(read.hooks);
        }
        Ok(rendered)
    }
}

/// Everything one `helmfile template` run depends on.
pub struct Template<'a> {
    /// Guest path of the helmfile, or of its directory.
    pub file: &'a str,
    /// The manifest's `helmfile:` block.
    pub config: &'a Config,
    /// The target cluster, when one is known.
    pub cluster: Option<&'a ClusterInfo>,
    /// Guest path of the state values written for `vars`.
    pub state_values_file: Option<&'a str>,
    /// Guest paths of `extraValueFiles`.
    pub values_files: &'a [String],
    /// Guest path of the directory helm writes the releases to.
    pub output_dir: &'a str,
}

/// The arguments of `helmfile template` for `template`. Chart tests are left out, as in the
/// `helm` source. Releases are written to files, one directory per release, because helm's
/// stdout does not say which release an object belongs to, and an object without a namespace
/// belongs in its release's. helmfile's `--namespace` is not passed: it would override the
/// namespace of every release.
pub fn template_args(template: &Template<'_>) -> Vec<String> {
    let config = template.config;
    let mut args = vec![format!("--file={}", template.file), "--no-color".to_owned()];
    if let Some(environment) = &config.environment {
        args.push(format!("--environment={environment}"));
    }
    if let Some(file) = template.state_values_file {
        args.push(format!("--state-values-file={file}"));
    }
    for selector in &config.selectors {
        args.push(format!("--selector={selector}"));
    }
    if config.plain_http {
        args.push("--oci-plain-http".to_owned());
    }
    args.push("template".to_owned());
    if config.include_crds {
        args.push("--include-crds".to_owned());
    }
    args.push("--skip-tests".to_owned());
    let kube_version = config
        .kube_version
        .clone()
        .or_else(|| template.cluster.map(|cluster| cluster.kube_version.clone()));
    if let Some(version) = kube_version {
        args.push(format!("--kube-version={version}"));
    }
    for file in template.values_files {
        args.push(format!("--values={file}"));
    }
    args.push(format!("--output-dir={}", template.output_dir));
    args.push(format!("--output-dir-template={OUTPUT_DIR_TEMPLATE}"));
    args
}

tazuna_sdk::export_source_plugin!(Helmfile);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_tazuna_blocks_become_global_flags_then_template_flags() {
        let config: Config = serde_json::from_str(
            r#"{"includeCRDs": true, "environment": "staging", "selectors": ["tier=platform"],
                "vars": {"x": {"from": "static", "static": 1}}}"#,
        )
        .unwrap();
        let cluster = ClusterInfo {
            kube_version: "v1.37.2".into(),
            api_versions: vec![],
            resources: vec![],
        };
        let values = vec!["/manifest/common.yaml".to_owned()];
        let args = template_args(&Template {
            file: "/manifest/helmfile",
            config: &config,
            cluster: Some(&cluster),
            state_values_file: Some("/scratch/tazuna-state-values.json"),
            values_files: &values,
            output_dir: "/scratch/rendered",
        });
        assert_eq!(
            args,
            [
                "--file=/manifest/helmfile",
                "--no-color",
                "--environment=staging",
                "--state-values-file=/scratch/tazuna-state-values.json",
                "--selector=tier=platform",
                "template",
                "--include-crds",
                "--skip-tests",
                "--kube-version=v1.37.2",
                "--values=/manifest/common.yaml",
                "--output-dir=/scratch/rendered",
                "--output-dir-template={{ .OutputDir }}/{{ .Release.Name }}_{{ .Release.Namespace }}",
            ]
        );
    }

    #[test]
    fn the_plugin_asks_for_helmfile_and_the_helm_it_runs() {
        assert_eq!(
            Helmfile::info().capabilities,
            ["exec:helmfile", "exec:helm"]
        );
    }
}
