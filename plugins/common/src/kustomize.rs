//! The `kustomize` source as a library: `kustomize build` of the kustomization directory at the
//! request's `path`, run by the host (grant `exec:kustomize`). The `kustomize` plugin exports it;
//! the `oras` plugin hands pulled bundles to it.
//!
//! The output stream is read into objects like the `manifests` source's files, with origins
//! `<path>#<document index>`. Kustomize plugins and exec functions stay off: the host refuses
//! `--enable-exec` and `--enable-alpha-plugins`.

use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;
use tazuna_sdk::exec::Command;
use tazuna_sdk::{Diagnostic, PluginError, RenderOutput, RenderRequest};

use crate::documents::{Format, Objects};
use crate::paths;

/// The files that make a directory a kustomization, as kustomize looks for them.
const KUSTOMIZATION_FILES: &[&str] = &["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// The `kustomize:` block of a manifest.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Config {
    /// Namespace for namespaced objects that carry none, as Go Tazuna files write it. Same as
    /// the manifest's `namespace`; give one or the other.
    pub default_namespace: Option<String>,
    /// The hosts the kustomization's remote bases live on, as URLs (`https://git.example.com/org`,
    /// or `http://127.0.0.1:<port>/…` for a server on this machine). `kustomize` (and the `git` it
    /// runs for a remote base) reaches these hosts and no other.
    #[serde(default)]
    pub remotes: Vec<String>,
}

/// Renders the kustomization at `request.path` inside `request.workdir`.
pub fn render(config: Config, request: &RenderRequest) -> Result<RenderOutput, PluginError> {
    let plan = plan(&config, request)?;
    if !Path::new(&plan.directory).is_dir() {
        return Err(PluginError::not_found(format_args!(
            "kustomization directory `{}` (the manifest's `path`) does not exist",
            plan.path
        )));
    }
    if !KUSTOMIZATION_FILES
        .iter()
        .any(|file| Path::new(&plan.directory).join(file).is_file())
    {
        return Err(PluginError::not_found(format_args!(
            "`{}` has no kustomization.yaml; `path` must name a kustomization directory",
            plan.path
        )));
    }
    let output = Command::new("kustomize")
        .args(["build", plan.directory.as_str()])
        .cwd(request.scratch.as_str())
        .run_checked()
        .map_err(|error| crate::remotes::explain(error, "kustomize", &config.remotes))?;
    // Origins name the directory as `tazuna build` shows it: `overlays/prod#3`.
    let origin = plan
        .directory
        .strip_prefix(request.workdir.trim_end_matches('/'))
        .map(|rest| rest.trim_start_matches('/'))
        .filter(|rest| !rest.is_empty())
        .unwrap_or(&plan.path);
    let mut objects = Objects::default();
    objects.read(origin, &output.stdout_text(), Format::Yaml);
    if !objects.errors.is_empty() {
        return Err(PluginError::InvalidInput(objects.errors));
    }
    let manifests = crate::encode(
        objects.objects,
        plan.namespace.as_deref(),
        request.cluster.as_ref(),
    )?;
    let mut rendered = RenderOutput::new(manifests);
    rendered.diagnostics = objects.notes;
    crate::files::declare_plain(plan.namespace.as_deref());
    rendered.diagnostics.extend(crate::tool_warnings(
        "kustomize",
        &output.stderr_text(),
        true,
    ));
    Ok(rendered)
}

/// What one render runs, worked out from the config alone.
#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    /// `path` as written in `tazuna.yaml`, for messages.
    pub path: String,
    /// The guest path of the kustomization directory.
    pub directory: String,
    /// The default namespace, if any.
    pub namespace: Option<String>,
}

/// Checks the manifest's `path` and namespace settings.
pub fn plan(config: &Config, request: &RenderRequest) -> Result<Plan, PluginError> {
    let invalid = |diagnostic: Diagnostic| PluginError::InvalidConfig(vec![diagnostic]);
    let Some(path) = request.path.as_deref().filter(|path| !path.is_empty()) else {
        return Err(invalid(Diagnostic::error(format!(
            "manifest `{}` has type `kustomize` but no `path` naming its kustomization directory",
            request.manifest_name
        ))));
    };
    let directory = paths::inside(&request.workdir, path, "path").map_err(invalid)?;
    crate::remotes::check(&config.remotes).map_err(PluginError::InvalidConfig)?;
    let namespace = crate::default_namespace(
        request.namespace.as_deref(),
        config.default_namespace.as_deref(),
    )
    .map_err(invalid)?;
    Ok(Plan {
        path: path.to_owned(),
        directory,
        namespace,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(path: Option<&str>, namespace: Option<&str>) -> RenderRequest {
        RenderRequest {
            manifest_name: "app".into(),
            path: path.map(Into::into),
            config: "{}".into(),
            namespace: namespace.map(Into::into),
            environment: None,
            values: "{}".into(),
            cluster: None,
            locked: None,
            workdir: "/manifest".into(),
            scratch: "/scratch".into(),
        }
    }

    fn config(default_namespace: Option<&str>) -> Config {
        Config {
            default_namespace: default_namespace.map(Into::into),
            remotes: Vec::new(),
        }
    }

    #[test]
    fn the_directory_is_the_path_under_the_workdir_and_either_namespace_field_works() {
        let plan = plan(
            &config(Some("web")),
            &request(Some("./overlays/prod"), None),
        )
        .unwrap();
        assert_eq!(plan.directory, "/manifest/overlays/prod");
        assert_eq!(plan.namespace.as_deref(), Some("web"));
        let plan = plan_of(None, Some("web"));
        assert_eq!(plan.namespace.as_deref(), Some("web"));
        let plan = plan_of(Some("web"), Some("web"));
        assert_eq!(plan.namespace.as_deref(), Some("web"));
    }

    fn plan_of(default_namespace: Option<&str>, namespace: Option<&str>) -> Plan {
        plan(
            &config(default_namespace),
            &request(Some("base"), namespace),
        )
        .unwrap()
    }

    #[test]
    fn conflicting_namespaces_a_missing_path_and_an_escaping_path_are_config_errors() {
        let conflict = plan(&config(Some("a")), &request(Some("base"), Some("b"))).unwrap_err();
        let PluginError::InvalidConfig(found) = conflict else {
            panic!("{conflict:?}")
        };
        assert_eq!(found[0].path.as_deref(), Some("/defaultNamespace"));

        let missing = plan(&config(None), &request(None, None)).unwrap_err();
        assert!(
            matches!(&missing, PluginError::InvalidConfig(d) if d[0].message.contains("no `path`"))
        );

        let escaping = plan(&config(None), &request(Some("../elsewhere"), None)).unwrap_err();
        assert!(
            matches!(&escaping, PluginError::InvalidConfig(d) if d[0].message.contains("outside the manifest directory"))
        );
    }
}
