//! The `tools` host import: the tool operations the host knows (`helm
//! template`, `kustomize build`, `helmfile template`), asked for with typed
//! options. The host builds the command line itself, with only the flags each
//! operation needs and every value in `--flag=value` form or checked not to
//! start with `-`, then runs it through [`super::exec::run`] (grant, jail, budgets,
//! content checks) like any other tool run.

use super::bindings::exec::Command;
use super::bindings::tools::{HelmTemplateRequest, HelmfileTemplateRequest, KustomizeBuildRequest};
use super::bindings::types::PluginError;

/// The command line of `helm template`.
pub fn helm_template(plugin: &str, request: HelmTemplateRequest) -> Result<Command, PluginError> {
    let release = &request.release;
    let valid_release = !release.is_empty()
        && release.len() <= 53
        && release
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !release.starts_with('-')
        && !release.ends_with('-');
    if !valid_release {
        return Err(refused(
            plugin,
            "helm-template",
            format!(
                "release `{release}` is not a release name (lowercase letters, digits and `-`, at most 53)"
            ),
        ));
    }
    value(plugin, "helm-template", "chart", &request.chart)?;
    let mut args = vec![
        "template".to_owned(),
        release.clone(),
        request.chart.clone(),
    ];
    let mut flag = |name: &str, given: &Option<String>| -> Result<(), PluginError> {
        if let Some(given) = given {
            value(plugin, "helm-template", name, given)?;
            args.push(format!("--{name}={given}"));
        }
        Ok(())
    };
    flag("version", &request.version)?;
    flag("repo", &request.repo)?;
    flag("namespace", &request.namespace)?;
    flag("kube-version", &request.kube_version)?;
    for file in &request.values_files {
        args.push(format!("--values={file}"));
    }
    for api in &request.api_versions {
        args.push(format!("--api-versions={api}"));
    }
    if request.include_crds {
        args.push("--include-crds".to_owned());
    }
    Ok(command("helm", args))
}

/// The command line of `kustomize build`.
pub fn kustomize_build(
    plugin: &str,
    request: KustomizeBuildRequest,
) -> Result<Command, PluginError> {
    value(plugin, "kustomize-build", "dir", &request.dir)?;
    Ok(command("kustomize", vec!["build".to_owned(), request.dir]))
}

/// The command line of `helmfile template`.
pub fn helmfile_template(
    plugin: &str,
    request: HelmfileTemplateRequest,
) -> Result<Command, PluginError> {
    let mut args = vec![format!("--file={}", request.file), "--no-color".to_owned()];
    if let Some(environment) = &request.environment {
        value(plugin, "helmfile-template", "environment", environment)?;
        args.push(format!("--environment={environment}"));
    }
    for selector in &request.selectors {
        args.push(format!("--selector={selector}"));
    }
    for file in &request.state_values_files {
        args.push(format!("--state-values-file={file}"));
    }
    args.push("template".to_owned());
    if request.include_crds {
        args.push("--include-crds".to_owned());
    }
    for file in &request.values_files {
        args.push(format!("--values={file}"));
    }
    Ok(command("helmfile", args))
}

/// A value that becomes an argument of its own may not read as a flag.
fn value(plugin: &str, operation: &str, field: &str, given: &str) -> Result<(), PluginError> {
    if given.is_empty() || given.starts_with('-') {
        return Err(refused(
            plugin,
            operation,
            format!("`{field}` is `{given}`, which is empty or starts with `-`"),
        ));
    }
    Ok(())
}

fn refused(plugin: &str, operation: &str, problem: String) -> PluginError {
    PluginError::CapabilityDenied(format!(
        "plugin `{plugin}` asked for `{operation}`: {problem}"
    ))
}

fn command(tool: &str, args: Vec<String>) -> Command {
    Command {
        tool: tool.to_owned(),
        args,
        stdin: None,
        env: Vec::new(),
        cwd: Some(super::SCRATCH_DIR.to_owned()),
        timeout_ms: None,
    }
}

/// Whether `tool` is one whose free arguments a third-party plugin needs
/// `exec-argv:<tool>` for.
pub fn has_typed_operations(tool: &str) -> bool {
    matches!(tool, "helm" | "kustomize" | "helmfile")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn helm(release: &str, chart: &str) -> HelmTemplateRequest {
        HelmTemplateRequest {
            release: release.into(),
            chart: chart.into(),
            version: Some("1.2.3".into()),
            repo: None,
            namespace: Some("web".into()),
            values_files: vec!["/manifest/values.yaml".into()],
            include_crds: true,
            kube_version: None,
            api_versions: vec!["monitoring.coreos.com/v1".into()],
        }
    }

    #[test]
    fn the_host_builds_helm_template_from_typed_options() {
        let command = helm_template("p", helm("demo", "/manifest/chart")).unwrap();
        assert_eq!(command.tool, "helm");
        assert_eq!(
            command.args,
            [
                "template",
                "demo",
                "/manifest/chart",
                "--version=1.2.3",
                "--namespace=web",
                "--values=/manifest/values.yaml",
                "--api-versions=monitoring.coreos.com/v1",
                "--include-crds"
            ]
        );
    }

    #[test]
    fn no_typed_value_becomes_a_flag() {
        for (release, chart) in [
            ("--post-renderer=/bin/sh", "/manifest/chart"),
            ("demo", "--kubeconfig=/root/.kube/config"),
            ("Demo", "/manifest/chart"),
            ("", "/manifest/chart"),
        ] {
            let error = helm_template("p", helm(release, chart)).unwrap_err();
            assert!(
                matches!(&error, PluginError::CapabilityDenied(m) if m.starts_with("plugin `p` asked for `helm-template`")),
                "{error:?}"
            );
        }
        let mut request = helm("demo", "/manifest/chart");
        request.namespace = Some("--kube-context=prod".into());
        assert!(helm_template("p", request).is_err());
        assert!(
            kustomize_build(
                "p",
                KustomizeBuildRequest {
                    dir: "--enable-exec".into()
                }
            )
            .is_err()
        );
    }

    #[test]
    fn helmfile_template_writes_to_stdout_with_its_chart_tests() {
        let command = helmfile_template(
            "p",
            HelmfileTemplateRequest {
                file: "/manifest/helmfile.yaml".into(),
                environment: Some("production".into()),
                selectors: vec!["tier=web".into()],
                state_values_files: vec![],
                values_files: vec![],
                include_crds: false,
            },
        )
        .unwrap();
        assert_eq!(
            command.args,
            [
                "--file=/manifest/helmfile.yaml",
                "--no-color",
                "--environment=production",
                "--selector=tier=web",
                "template"
            ]
        );
        assert!(super::super::grammar::refused("helmfile", &command.args, &command.env).is_none());
    }
}
