//! The `helm template` command line for one render.

use tazuna_plugin_common::helm::kube_version_flag;
use tazuna_sdk::ClusterInfo;

use crate::config::{Chart, Config};

/// Everything one `helm template` run depends on.
pub struct Template<'a> {
    /// `.Release.Name`.
    pub release: &'a str,
    /// Where the chart comes from.
    pub chart: &'a Chart,
    /// The manifest's `helm:` block.
    pub config: &'a Config,
    /// `.Release.Namespace`, when the manifest has one.
    pub namespace: Option<&'a str>,
    /// The target cluster, when one is known.
    pub cluster: Option<&'a ClusterInfo>,
    /// Guest paths of values files, lowest precedence first.
    pub values_files: Vec<&'a str>,
}

/// The arguments of `helm template` for `template`.
///
/// Chart tests are rendered, as `helm template` renders them; the engine leaves them out of an
/// apply and `tazuna test` runs them.
/// With a known cluster, `.Capabilities` describe it: its version, and every group version it
/// serves, with and without each kind, as `helm install` would see them.
pub fn template_args(template: &Template<'_>) -> Vec<String> {
    let config = template.config;
    let mut args = vec!["template".to_owned(), template.release.to_owned()];
    match template.chart {
        Chart::Local { directory, .. } => args.push(directory.clone()),
        Chart::Oci(reference) => args.push(reference.clone()),
        Chart::Repository { repo, name } if repo.contains("://") => {
            args.push(name.clone());
            args.push(format!("--repo={repo}"));
        }
        // A repository `helm repo add` recorded: helm finds it, and its
        // login, in the files the host hands it.
        Chart::Repository { repo, name } => args.push(format!("{repo}/{name}")),
    }
    // A local chart (also one `pull` fetched) is the version it is.
    if let Some(version) = &config.version
        && !matches!(template.chart, Chart::Local { .. })
    {
        args.push(format!("--version={version}"));
    }
    if let Some(namespace) = template.namespace {
        args.push(format!("--namespace={namespace}"));
    }
    if config.include_crds {
        args.push("--include-crds".to_owned());
    }
    if config.plain_http {
        args.push("--plain-http".to_owned());
    }
    args.extend(kube_version_flag(
        config.kube_version.as_deref(),
        template.cluster,
    ));
    let mut api_versions: Vec<String> = Vec::new();
    if let Some(cluster) = template.cluster {
        api_versions.extend(cluster.api_versions.iter().cloned());
        api_versions.extend(
            cluster
                .resources
                .iter()
                .map(|resource| format!("{}/{}", resource.group_version, resource.kind)),
        );
    }
    api_versions.extend(config.api_versions.iter().cloned());
    if !api_versions.is_empty() {
        args.push(format!("--api-versions={}", api_versions.join(",")));
    }
    for file in &template.values_files {
        args.push(format!("--values={file}"));
    }
    args
}

#[cfg(test)]
mod tests {
    use tazuna_sdk::ApiResource;

    use super::*;

    fn config(json: &str) -> Config {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_local_chart_without_a_cluster() {
        let chart = Chart::Local {
            path: "hello".into(),
            directory: "/manifest/hello".into(),
        };
        let config = config("{}");
        let args = template_args(&Template {
            release: "demo",
            chart: &chart,
            config: &config,
            namespace: Some("apps"),
            cluster: None,
            values_files: vec!["/manifest/prod.yaml", "/scratch/tazuna-values.json"],
        });
        assert_eq!(
            args,
            [
                "template",
                "demo",
                "/manifest/hello",
                "--namespace=apps",
                "--include-crds",
                "--values=/manifest/prod.yaml",
                "--values=/scratch/tazuna-values.json",
            ]
        );
    }

    #[test]
    fn a_repository_name_from_helm_repo_add_prefixes_the_chart() {
        let chart = Chart::Repository {
            repo: "acme".into(),
            name: "hello".into(),
        };
        let config = config(r#"{"version": "0.1.0"}"#);
        let args = template_args(&Template {
            release: "hello",
            chart: &chart,
            config: &config,
            namespace: None,
            cluster: None,
            values_files: Vec::new(),
        });
        assert_eq!(args[..3], ["template", "hello", "acme/hello"]);
        assert!(
            !args.iter().any(|arg| arg.starts_with("--repo")),
            "{args:?}"
        );
    }

    #[test]
    fn remote_charts_and_a_cluster_fill_version_repo_and_capabilities() {
        let cluster = ClusterInfo {
            kube_version: "v1.37.2".into(),
            api_versions: vec!["apps/v1".into(), "v1".into()],
            resources: vec![ApiResource {
                group_version: "apps/v1".into(),
                kind: "Deployment".into(),
                namespaced: true,
            }],
        };
        let chart = Chart::Repository {
            repo: "https://charts.example".into(),
            name: "nginx".into(),
        };
        let config = config(
            r#"{"version": "1.2.3", "includeCRDs": false, "apiVersions": ["x.io/v1"], "plainHttp": true}"#,
        );
        let args = template_args(&Template {
            release: "web",
            chart: &chart,
            config: &config,
            namespace: None,
            cluster: Some(&cluster),
            values_files: vec![],
        });
        assert_eq!(
            args,
            [
                "template",
                "web",
                "nginx",
                "--repo=https://charts.example",
                "--version=1.2.3",
                "--plain-http",
                "--kube-version=v1.37.2",
                "--api-versions=apps/v1,v1,apps/v1/Deployment,x.io/v1",
            ]
        );
    }

    #[test]
    fn the_block_s_kube_version_wins_over_the_cluster_s() {
        let chart = Chart::Oci("oci://r/a".into());
        let config = config(r#"{"version": "1", "kubeVersion": "1.30.0"}"#);
        let cluster = ClusterInfo {
            kube_version: "v1.37.2".into(),
            api_versions: vec![],
            resources: vec![],
        };
        let args = template_args(&Template {
            release: "a",
            chart: &chart,
            config: &config,
            namespace: None,
            cluster: Some(&cluster),
            values_files: vec![],
        });
        assert!(
            args.contains(&"--kube-version=1.30.0".to_owned()),
            "{args:?}"
        );
    }
}
