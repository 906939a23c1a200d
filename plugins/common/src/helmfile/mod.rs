//! The `helmfile` source as a library: `helmfile template` of the helmfile at the request's
//! `path`, run by the host (grants `exec:helmfile`, and `exec:helm` so that helmfile finds the
//! `helm` Tazuna was given). The `helmfile` plugin exports it; the `oras` plugin hands pulled
//! bundles to it.
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
pub mod needs;
pub mod releases;
pub mod traits;

use std::collections::BTreeMap;
use std::path::Path;

use tazuna_sdk::exec::Command;
use tazuna_sdk::traits::RenderTraits;
use tazuna_sdk::{ClusterInfo, Diagnostic, PluginError, RenderOutput, RenderRequest};

use crate::helm::kube_version_flag;
use crate::{APPLY_WAVE, paths};

pub use config::Config;

/// Guest file name of the state values written for `from: static` vars.
const STATE_VALUES_FILE: &str = "tazuna-state-values.json";

/// The state values file written for `environmentValues`, first (lowest).
const CLUSTER_VALUES_FILE: &str = "tazuna-cluster-values.json";

/// Guest file name of the template that reads `from: env` and `from: op` vars from helmfile's
/// environment; helmfile renders `.gotmpl` state values files.
const REFERENCED_VALUES_FILE: &str = "tazuna-referenced-values.yaml.gotmpl";

/// Prefix of the environment variables that carry those vars to helmfile.
const VAR_PREFIX: &str = "TAZUNA_VAR_";

/// Scratch directory helm writes each release's templates to, as
/// `<release>_<namespace>/<chart>/templates/<file>`.
const OUTPUT_DIR: &str = "rendered";

/// Where each release's files go, below the output directory. Neither release names nor
/// namespaces contain `_`, and the namespace may be empty.
const OUTPUT_DIR_TEMPLATE: &str = "{{ .OutputDir }}/{{ .Release.Name }}_{{ .Release.Namespace }}";

/// Renders the helmfile at `request.path` inside `request.workdir`.
pub fn render(config: Config, request: &RenderRequest) -> Result<RenderOutput, PluginError> {
    let invalid = |diagnostic: Diagnostic| PluginError::InvalidConfig(vec![diagnostic]);
    let Some(path) = request.path.as_deref().filter(|path| !path.is_empty()) else {
        return Err(invalid(Diagnostic::error(format!(
            "manifest `{}` has type `helmfile` but no `path` naming its helmfile (a file, or a directory holding helmfile.yaml)",
            request.manifest_name
        ))));
    };
    let given = paths::inside(&request.workdir, path, "path").map_err(invalid)?;
    let Some(file) = find_helmfile(Path::new(&given)) else {
        return Err(PluginError::not_found(format_args!(
            "helmfile `{path}` (the manifest's `path`) does not exist, or holds none of {}",
            HELMFILE_NAMES.join(", ")
        )));
    };
    // As in Go Tazuna, `extraValueFiles` are relative to the helmfile's directory.
    let helmfile_dir = if Path::new(&given).is_dir() {
        path.to_owned()
    } else {
        Path::new(path)
            .parent()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let mut values_files = Vec::new();
    for (index, extra) in config.extra_value_files.iter().enumerate() {
        let relative = format!("{}/{extra}", helmfile_dir.trim_end_matches('/'));
        let guest = paths::inside(
            &request.workdir,
            relative.trim_start_matches('/'),
            &format!("/extraValueFiles/{index}"),
        )
        .map_err(invalid)?;
        if !Path::new(&guest).is_file() {
            return Err(PluginError::not_found(format_args!(
                "values file `{extra}` (in `helmfile.extraValueFiles`, relative to the helmfile) does not exist"
            )));
        }
        values_files.push(guest);
    }
    let namespace = crate::default_namespace(
        request.namespace.as_deref(),
        config.default_namespace.as_deref(),
    )
    .map_err(invalid)?;
    // Tazuna's `-e` is the helmfile's environment, as in Go Tazuna, so
    // `.Environment.Name` is its name. helmfile refuses an environment its
    // file does not declare: such a file is read from stdin, in its own
    // directory (relative paths mean what they meant), after a part that
    // declares the environment empty. A `helmfile.d` directory is many files,
    // and keeps helmfile's `default`.
    let mut environment = config.environment.clone();
    let mut declared_here = None;
    if environment.is_none()
        && let Some(name) = request.environment.as_deref()
        && name != "default"
        && let Ok(text) = std::fs::read_to_string(&file)
    {
        environment = Some(name.to_owned());
        if !declares_environment(&text, name) {
            let key = serde_json::to_string(name).map_err(PluginError::other)?;
            declared_here = Some(format!("environments:\n  {key}: {{}}\n---\n{text}"));
        }
    }
    let scratch = request.scratch.trim_end_matches('/');
    let write = |name: &str, text: String| {
        let file = format!("{scratch}/{name}");
        std::fs::write(&file, text)
            .map_err(|error| PluginError::other(format_args!("cannot write `{file}`: {error}")))?;
        Ok::<_, PluginError>(file)
    };
    let mut state_values_files = Vec::new();
    if config.environment_values
        && let Some(file) = crate::write_cluster_values(request, CLUSTER_VALUES_FILE)?
    {
        state_values_files.push(file);
    }
    let state_values = config.state_values();
    if !state_values.is_empty() {
        let text = serde_json::to_string(&state_values).map_err(PluginError::other)?;
        state_values_files.push(write(STATE_VALUES_FILE, text)?);
    }
    // `from: env` and `from: op` values never pass through the plugin: each is
    // a reference in helmfile's environment, which the host resolves as the
    // tool starts, and a template helmfile renders reads it from there.
    let referenced = config.referenced_vars();
    // What the render reads besides the helmfile's directory, for the host.
    let mut values_texts: Vec<String> = Vec::new();
    let mut unknown = !referenced.is_empty();
    if config.environment_values {
        values_texts.push(request.values.clone());
    }
    if !state_values.is_empty() {
        values_texts.push(serde_json::Value::Object(state_values.clone()).to_string());
    }
    for file in &values_files {
        match std::fs::metadata(file) {
            Ok(metadata) if metadata.len() <= tazuna_sdk::traits::templates::SCAN_LIMIT => {
                match std::fs::read_to_string(file) {
                    Ok(text) => values_texts.push(text),
                    Err(_) => unknown = true,
                }
            }
            _ => unknown = true,
        }
    }
    let mut tool_env = Vec::new();
    let mut var_names = Vec::new();
    if !referenced.is_empty() {
        let mut template = String::new();
        for (index, (name, reference)) in referenced.into_iter().enumerate() {
            let variable = format!("{VAR_PREFIX}{index}");
            let key = serde_json::to_string(name).map_err(PluginError::other)?;
            template.push_str(&format!("{key}: {{{{ env \"{variable}\" | toJson }}}}\n"));
            var_names.push((
                format!("`{variable}` for `helmfile`"),
                format!("var `{name}`"),
            ));
            tool_env.push((variable, reference));
        }
        state_values_files.push(write(REFERENCED_VALUES_FILE, template)?);
    }
    let output_dir = format!("{}/{OUTPUT_DIR}", request.scratch.trim_end_matches('/'));
    let (file_arg, cwd) = match &declared_here {
        Some(_) => ("-".to_owned(), helmfile_dir_of(&file)),
        None => (file.clone(), request.scratch.clone()),
    };
    let mut template = Template {
        file: &file_arg,
        config: &config,
        environment: environment.as_deref(),
        cluster: request.cluster.as_ref(),
        state_values_files: &state_values_files,
        values_files: &values_files,
        output_dir: &output_dir,
        skip_deps: false,
    };
    // Both runs read the same helmfile with the same state values.
    let helmfile = |args: Vec<String>| {
        let mut command = Command::new("helmfile").args(args).cwd(cwd.as_str());
        if let Some(text) = &declared_here {
            // helmfile renders a file as a template by its `.gotmpl` name; stdin
            // has none, so it is told.
            if file.ends_with(".gotmpl") {
                command = command.env("HELMFILE_RENDER_YAML", "true");
            }
            command = command.stdin(text.clone());
        }
        for (key, value) in &tool_env {
            command = command.env(key.clone(), value.clone());
        }
        // The host names the variable it could not fill; the user knows the var.
        command.run_checked().map_err(|error| match error {
            PluginError::NotFound(message) => {
                PluginError::NotFound(var_names.iter().fold(message, |message, (variable, var)| {
                    message.replace(variable, var)
                }))
            }
            other => crate::remotes::explain(other, "helmfile", &config.remotes),
        })
    };
    // The state first: its releases carry their `needs:` and their charts.
    // A plain helmfile is its own state, read here; selectors pick releases
    // as helmfile matches labels, so they are left to `helmfile build`.
    let plain = (config.selectors.is_empty() && is_plain_yaml(&file))
        .then(|| std::fs::read_to_string(&file).ok())
        .flatten()
        .and_then(|text| needs::read_plain(&text));
    let state = match plain {
        Some(state) => state,
        None => {
            let build = helmfile(build_args(&template))?;
            needs::read_build(&build.stdout_text()).map_err(PluginError::other)?
        }
    };
    // Before it renders, helmfile runs `helm dependency build` on every chart,
    // one helm after another. A chart on disk that declares no dependencies has
    // none to build: when every release's is one, that step is skipped. (The
    // releases of a `helmfile.d` are relative to files of their own.)
    let base = Path::new(&file).is_file().then(|| helmfile_dir_of(&file));
    template.skip_deps = !state.is_empty()
        && state.iter().all(|release| {
            release
                .chart_dir
                .as_deref()
                .zip(base.as_deref())
                .is_some_and(|(dir, base)| builds_no_dependencies(&Path::new(base).join(dir)))
        });
    let run = helmfile(template_args(&template))?;
    let releases = releases::read(Path::new(&output_dir)).map_err(PluginError::other)?;
    // One release has no order to keep; several may `need` each other.
    let waves = if releases.len() > 1 {
        needs::waves(&state).map_err(|message| {
            PluginError::InvalidInput(vec![Diagnostic::error(message).at(file.clone())])
        })?
    } else {
        BTreeMap::new()
    };
    // When some release waits for another, every release carries its wave,
    // 0 included: a hook goes with its release's wave, and one without a wave
    // would run before the first wave or after the last.
    let ordered = waves.values().any(|wave| *wave > 0);
    let mut rendered = RenderOutput::new(Vec::new());
    for release in releases {
        let mut read = release.read;
        if !read.objects.errors.is_empty() {
            return Err(PluginError::InvalidInput(read.objects.errors));
        }
        let wave = waves
            .get(&(release.name.clone(), release.namespace.clone()))
            .copied()
            .unwrap_or_default();
        if ordered {
            for object in &mut read.objects.objects {
                crate::annotate(&mut object.fields, APPLY_WAVE, &wave.to_string());
            }
        }
        // Objects without a namespace go where `helm install` would put them: the
        // release's namespace, else the manifest's.
        let namespace = release.namespace.as_deref().or(namespace.as_deref());
        rendered.manifests.extend(crate::encode(
            read.objects.objects,
            namespace,
            request.cluster.as_ref(),
        )?);
        rendered.diagnostics.extend(read.objects.notes);
    }
    rendered
        .diagnostics
        .extend(crate::tool_warnings("helmfile", &run.stderr_text(), false));
    tazuna_sdk::traits::declare(RenderTraits {
        reads_cluster: true,
        deterministic: traits::deterministic(&file, &values_texts, unknown),
    });
    Ok(rendered)
}

/// The names helmfile looks for in a directory, in its order.
const HELMFILE_NAMES: &[&str] = &[
    "helmfile.yaml.gotmpl",
    "helmfile.yaml",
    "helmfile.yml.gotmpl",
    "helmfile.yml",
    "helmfile.d",
];

/// The helmfile `path` names: the file itself, or the first of
/// [`HELMFILE_NAMES`] in the directory. helmfile is given that, never the
/// directory: it would read every YAML file there as a helmfile.
fn find_helmfile(path: &Path) -> Option<String> {
    if path.is_file() {
        return Some(path.to_string_lossy().into_owned());
    }
    HELMFILE_NAMES
        .iter()
        .map(|name| path.join(name))
        .find(|candidate| {
            if candidate.ends_with("helmfile.d") {
                candidate.is_dir()
            } else {
                candidate.is_file()
            }
        })
        .map(|found| found.to_string_lossy().into_owned())
}

/// Whether the chart in directory `dir` has no dependencies for `helm dependency build` to
/// fetch: its `Chart.yaml` is there and lists none. Anything else (no such file, one that is
/// not YAML, a `requirements.yaml` of an old chart) is left to helmfile.
fn builds_no_dependencies(dir: &Path) -> bool {
    if dir.join("requirements.yaml").exists() {
        return false;
    }
    let Ok(text) = std::fs::read_to_string(dir.join("Chart.yaml")) else {
        return false;
    };
    let mut documents = crate::yaml::documents(&text);
    let Some(Ok(chart)) = documents.next() else {
        return false;
    };
    chart
        .value
        .get("dependencies")
        .is_none_or(|dependencies| dependencies.as_array().is_some_and(Vec::is_empty))
}

/// Whether guest path `file` is a helmfile helmfile reads as plain YAML: a
/// file named `.yaml` or `.yml` (a `.gotmpl` is a template, `helmfile.d` many
/// files).
fn is_plain_yaml(file: &str) -> bool {
    (file.ends_with(".yaml") || file.ends_with(".yml")) && Path::new(file).is_file()
}

/// The directory of the helmfile at guest path `file`.
fn helmfile_dir_of(file: &str) -> String {
    Path::new(file)
        .parent()
        .map_or_else(|| ".".to_owned(), |dir| dir.to_string_lossy().into_owned())
}

/// Whether a helmfile's text declares environment `name` (a key of its
/// top-level `environments:`).
pub fn declares_environment(text: &str, name: &str) -> bool {
    let mut inside = false;
    for line in text.lines() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let indented = line.starts_with([' ', '\t']);
        if !indented {
            inside = line.trim_end() == "environments:";
            continue;
        }
        if inside
            && let Some(key) = line
                .trim()
                .strip_suffix(':')
                .or_else(|| line.trim().split_once(':').map(|(k, _)| k))
            && key.trim_matches(['"', '\'']) == name
            && line.len() - line.trim_start().len() <= 4
        {
            return true;
        }
    }
    false
}

/// Everything one `helmfile template` run depends on.
pub struct Template<'a> {
    /// Guest path of the helmfile, or of its directory.
    pub file: &'a str,
    /// The manifest's `helmfile:` block.
    pub config: &'a Config,
    /// The helmfile environment to render, if any.
    pub environment: Option<&'a str>,
    /// The target cluster, when one is known.
    pub cluster: Option<&'a ClusterInfo>,
    /// Guest paths of the state values files written for `vars`.
    pub state_values_files: &'a [String],
    /// Guest paths of `extraValueFiles`.
    pub values_files: &'a [String],
    /// Guest path of the directory helm writes the releases to.
    pub output_dir: &'a str,
    /// `--skip-deps`: no `helm dependency build` (nor `helm repo update`) before rendering.
    pub skip_deps: bool,
}

/// The arguments of `helmfile template` for `template`. Chart tests are left out, as in the
/// `helm` source. Releases are written to files, one directory per release, because helm's
/// stdout does not say which release an object belongs to, and an object without a namespace
/// belongs in its release's. helmfile's `--namespace` is not passed: it would override the
/// namespace of every release.
pub fn template_args(template: &Template<'_>) -> Vec<String> {
    let config = template.config;
    let mut args = global_args(template);
    args.push("template".to_owned());
    if template.skip_deps {
        args.push("--skip-deps".to_owned());
    }
    if config.include_crds {
        args.push("--include-crds".to_owned());
    }
    args.extend(kube_version_flag(
        config.kube_version.as_deref(),
        template.cluster,
    ));
    for file in template.values_files {
        args.push(format!("--values={file}"));
    }
    args.push(format!("--output-dir={}", template.output_dir));
    args.push(format!("--output-dir-template={OUTPUT_DIR_TEMPLATE}"));
    args
}

/// The arguments of `helmfile build` for `template`: the state, whose releases carry their
/// `needs:` (see [`needs`]).
pub fn build_args(template: &Template<'_>) -> Vec<String> {
    let mut args = global_args(template);
    args.push("build".to_owned());
    args
}

/// The global flags both `template` and `build` take: the file, the environment, state values,
/// selectors.
fn global_args(template: &Template<'_>) -> Vec<String> {
    let config = template.config;
    let mut args = vec![format!("--file={}", template.file), "--no-color".to_owned()];
    if let Some(environment) = template.environment {
        args.push(format!("--environment={environment}"));
    }
    for file in template.state_values_files {
        args.push(format!("--state-values-file={file}"));
    }
    for selector in &config.selectors {
        args.push(format!("--selector={selector}"));
    }
    if config.plain_http {
        args.push("--oci-plain-http".to_owned());
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environments_are_found_among_the_top_level_keys_only() {
        let text = "environments:\n  staging:\n    values: [a.yaml]\n  \"prod\": {}\nreleases:\n  - name: staging\n";
        assert!(declares_environment(text, "staging"));
        assert!(declares_environment(text, "prod"));
        assert!(!declares_environment(text, "dev"));
        assert!(!declares_environment(
            "releases:\n  - name: staging\n",
            "staging"
        ));
    }

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
            environment: config.environment.as_deref(),
            cluster: Some(&cluster),
            state_values_files: &["/scratch/tazuna-state-values.json".to_owned()],
            values_files: &values,
            output_dir: "/scratch/rendered",
            skip_deps: true,
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
                "--skip-deps",
                "--include-crds",
                "--kube-version=v1.37.2",
                "--values=/manifest/common.yaml",
                "--output-dir=/scratch/rendered",
                "--output-dir-template={{ .OutputDir }}/{{ .Release.Name }}_{{ .Release.Namespace }}",
            ]
        );
    }

    #[test]
    fn only_a_chart_on_disk_that_lists_no_dependencies_skips_their_build() {
        let root =
            std::env::temp_dir().join(format!("tazuna-helmfile-deps-{}", std::process::id()));
        let chart = |name: &str, text: Option<&str>| {
            let dir = root.join(name);
            std::fs::create_dir_all(&dir).unwrap();
            if let Some(text) = text {
                std::fs::write(dir.join("Chart.yaml"), text).unwrap();
            }
            dir
        };
        let plain = chart(
            "plain",
            Some("apiVersion: v2\nname: plain\nversion: 1.0.0\n"),
        );
        let empty = chart(
            "empty",
            Some("apiVersion: v2\nname: e\nversion: 1.0.0\ndependencies: []\n"),
        );
        let with = chart(
            "with",
            Some(
                "apiVersion: v2\nname: w\nversion: 1.0.0\ndependencies:\n  - name: redis\n    version: 1.x\n    repository: https://charts.example.com\n",
            ),
        );
        let old = chart("old", Some("apiVersion: v1\nname: o\nversion: 1.0.0\n"));
        std::fs::write(
            old.join("requirements.yaml"),
            "dependencies:\n  - name: redis\n",
        )
        .unwrap();
        let missing = chart("missing", None);
        let not_yaml = chart("broken", Some("dependencies: [\n"));
        assert!(builds_no_dependencies(&plain));
        assert!(builds_no_dependencies(&empty));
        assert!(!builds_no_dependencies(&with));
        assert!(!builds_no_dependencies(&old));
        assert!(!builds_no_dependencies(&missing));
        assert!(!builds_no_dependencies(&not_yaml));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
