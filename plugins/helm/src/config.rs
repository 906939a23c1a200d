//! The `helm:` block of a manifest, and where its chart comes from.

use schemars::JsonSchema;
use serde::Deserialize;
use tazuna_plugin_common::paths;
use tazuna_sdk::{Diagnostic, PluginError, RenderRequest};

/// The `helm:` block. Every field is optional for a chart in the repository at `path`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Config {
    /// A remote chart: `oci://registry/repo/chart`, or a chart name in `repo`. Leave it out for
    /// a chart in this repository, named by the manifest's `path`.
    pub chart: Option<String>,
    /// The chart repository when `chart` is a name: its URL (`https://charts.example.com`), or
    /// the name `helm repo add` gave it (`bitnami`), whose login helm then uses.
    pub repo: Option<String>,
    /// The chart version, or a constraint such as `~1.2`. Required for a remote chart, so every
    /// run renders the same chart.
    pub version: Option<String>,
    /// The release name (`.Release.Name`); defaults to the manifest's name.
    pub release_name: Option<String>,
    /// Values files, relative to the directory of the file that declares the manifest, applied
    /// in order (later files win).
    #[serde(default)]
    pub values_files: Vec<String>,
    /// Values, as a values file would hold them; applied after `valuesFiles`.
    pub values: Option<serde_json::Map<String, serde_json::Value>>,
    /// Give the chart the selected cluster's values (`spec.environments.<env>.values`, with
    /// the cluster's own over them) as its first values file, so `valuesFiles` and `values`
    /// win over them. Off by default: a chart sees only what its manifest gives it.
    #[serde(default)]
    pub environment_values: bool,
    /// Render the chart's `crds/` directory too (default `true`), so Tazuna applies CRDs first
    /// and waits for them.
    #[serde(default = "yes", rename = "includeCRDs")]
    pub include_crds: bool,
    /// The Kubernetes version for `.Capabilities.KubeVersion`; defaults to the target cluster's.
    pub kube_version: Option<String>,
    /// API versions to add to `.Capabilities.APIVersions`, on top of what the cluster serves
    /// (`monitoring.coreos.com/v1`, or with a kind: `monitoring.coreos.com/v1/ServiceMonitor`).
    #[serde(default)]
    pub api_versions: Vec<String>,
    /// Fetch an OCI chart over plain HTTP (a registry without TLS, such as a local one).
    #[serde(default)]
    pub plain_http: bool,
}

fn yes() -> bool {
    true
}

/// Whether `repo` can be a name `helm repo add` gave a repository.
fn is_repository_name(repo: &str) -> bool {
    !repo.is_empty()
        && repo
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// Where the chart comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chart {
    /// A chart directory in the repository.
    Local {
        /// `path` as written, for messages.
        path: String,
        /// Its guest path.
        directory: String,
    },
    /// `oci://...`.
    Oci(String),
    /// A chart name in a repository.
    Repository {
        /// The repository's URL, or the name `helm repo add` gave it.
        repo: String,
        /// The chart's name there.
        name: String,
    },
}

impl Config {
    /// Checks that need no request: a remote chart is pinned, and `repo` goes with a name.
    pub fn check(&self) -> Vec<Diagnostic> {
        let mut found = Vec::new();
        match (&self.chart, &self.repo) {
            (Some(chart), None) if !chart.starts_with("oci://") => found.push(
                Diagnostic::error(format!(
                    "chart `{chart}` is neither `oci://…` nor a name in `repo`; add `repo: <url>`, or for a chart in this repository drop `chart` and set the manifest's `path`"
                ))
                .at("/chart"),
            ),
            (Some(chart), Some(_)) if chart.starts_with("oci://") => found.push(
                Diagnostic::error("an `oci://` chart takes no `repo`; remove `repo`").at("/repo"),
            ),
            (None, Some(_)) => found.push(
                Diagnostic::error("`repo` needs `chart`: the chart's name in that repository")
                    .at("/chart"),
            ),
            (Some(_), Some(repo)) if !repo.contains("://") && !is_repository_name(repo) => found
                .push(
                    Diagnostic::error(format!(
                        "`repo: {repo}` is neither a URL nor a repository name from `helm repo add` (letters, digits, `.`, `_` and `-`)"
                    ))
                    .at("/repo"),
                ),
            _ => {}
        }
        // User strings go to helm as arguments: none may read as a flag.
        if let Some(name) = &self.release_name
            && !is_release_name(name)
        {
            found.push(
                Diagnostic::error(format!(
                    "`releaseName: {name}` is not a release name helm takes: lowercase letters, digits, `-` and `.`, starting and ending with a letter or digit, at most 53 characters"
                ))
                .at("/releaseName"),
            );
        }
        for (field, value) in [("chart", &self.chart), ("version", &self.version)] {
            if let Some(value) = value
                && value.starts_with('-')
            {
                found.push(
                    Diagnostic::error(format!(
                        "`{field}: {value}` starts with `-`, which helm would take as a flag"
                    ))
                    .at(format!("/{field}")),
                );
            }
        }
        if self.chart.is_some() && self.version.as_deref().is_none_or(str::is_empty) {
            found.push(
                Diagnostic::error(
                    "a remote chart needs `version`, so every run renders the same chart (an exact version such as `1.2.3`, or a constraint)",
                )
                .at("/version"),
            );
        }
        found
    }

    /// Where the chart comes from, given the manifest's `path`.
    pub fn chart(&self, request: &RenderRequest) -> Result<Chart, PluginError> {
        let invalid = |diagnostic: Diagnostic| PluginError::InvalidConfig(vec![diagnostic]);
        let path = request.path.as_deref().filter(|path| !path.is_empty());
        match (&self.chart, path) {
            (Some(_), Some(path)) => Err(invalid(
                Diagnostic::error(format!(
                    "the chart is given twice: as the manifest's `path: {path}` and as `helm.chart`; keep `path` for a chart in this repository or `chart` for a remote one"
                ))
                .at("/chart"),
            )),
            (None, None) => Err(invalid(Diagnostic::error(format!(
                "manifest `{}` has type `helm` but no chart: set `path` to a chart directory, or `helm.chart` to a remote chart",
                request.manifest_name
            )))),
            (None, Some(path)) => Ok(Chart::Local {
                path: path.to_owned(),
                directory: paths::inside(&request.workdir, path, "path").map_err(invalid)?,
            }),
            (Some(chart), None) => Ok(match &self.repo {
                Some(repo) => Chart::Repository {
                    repo: repo.clone(),
                    name: chart.clone(),
                },
                None => Chart::Oci(chart.clone()),
            }),
        }
    }

    /// The guest paths of `valuesFiles`, in order.
    pub fn values_files(&self, request: &RenderRequest) -> Result<Vec<String>, PluginError> {
        self.values_files
            .iter()
            .enumerate()
            .map(|(index, file)| {
                paths::inside(&request.workdir, file, &format!("/valuesFiles/{index}"))
                    .map_err(|diagnostic| PluginError::InvalidConfig(vec![diagnostic]))
            })
            .collect()
    }
}

/// Whether helm takes `name` as a release name (DNS-1123 subdomain, 53 at most).
fn is_release_name(name: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !name.is_empty()
        && name.len() <= 53
        && name.split('.').all(|part| {
            part.starts_with(alnum)
                && part.ends_with(alnum)
                && part.chars().all(|c| alnum(c) || c == '-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(json: &str) -> Config {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn user_strings_that_read_as_flags_are_refused() {
        let said = |json: &str| {
            config(json)
                .check()
                .into_iter()
                .map(|d| d.message)
                .collect::<Vec<_>>()
                .join("; ")
        };
        assert!(
            said(r#"{"releaseName": "--set-file=x=/proc/1/environ"}"#)
                .contains("not a release name")
        );
        assert!(said(r#"{"releaseName": "Hello"}"#).contains("not a release name"));
        assert_eq!(said(r#"{"releaseName": "hello-1.web"}"#), "");
        assert!(
            said(r#"{"chart": "--repo=http://x", "repo": "acme", "version": "1"}"#)
                .contains("starts with `-`")
        );
        assert!(
            said(r#"{"chart": "oci://r/c", "version": "--devel"}"#).contains("starts with `-`")
        );
    }

    fn request(path: Option<&str>) -> RenderRequest {
        RenderRequest {
            manifest_name: "hello".into(),
            path: path.map(Into::into),
            config: "{}".into(),
            namespace: None,
            environment: None,
            values: "{}".into(),
            cluster: None,
            locked: None,
            workdir: "/manifest".into(),
            scratch: "/scratch".into(),
        }
    }

    fn pointers(found: &[Diagnostic]) -> Vec<&str> {
        found.iter().filter_map(|d| d.path.as_deref()).collect()
    }

    #[test]
    fn defaults_include_crds_and_nothing_else() {
        let config = config("{}");
        assert!(config.include_crds);
        assert!(!config.plain_http);
        assert!(config.check().is_empty());
        assert_eq!(
            config.chart(&request(Some("./charts/hello"))).unwrap(),
            Chart::Local {
                path: "./charts/hello".into(),
                directory: "/manifest/charts/hello".into()
            }
        );
    }

    #[test]
    fn remote_charts_need_a_version_and_a_known_kind_of_source() {
        assert_eq!(
            pointers(&config(r#"{"chart": "oci://r.example/charts/a"}"#).check()),
            ["/version"]
        );
        assert_eq!(
            pointers(&config(r#"{"chart": "bitnami/nginx", "version": "1"}"#).check()),
            ["/chart"]
        );
        assert_eq!(
            pointers(
                &config(r#"{"chart": "oci://r/a", "repo": "https://x", "version": "1"}"#).check()
            ),
            ["/repo"]
        );
        assert_eq!(
            pointers(&config(r#"{"repo": "https://x"}"#).check()),
            ["/chart"]
        );
        let repo =
            config(r#"{"chart": "nginx", "repo": "https://charts.example", "version": "1.2.3"}"#);
        assert!(repo.check().is_empty());
        assert_eq!(
            repo.chart(&request(None)).unwrap(),
            Chart::Repository {
                repo: "https://charts.example".into(),
                name: "nginx".into()
            }
        );
    }

    #[test]
    fn repo_is_a_url_or_a_repository_name() {
        for ok in [
            r#""https://charts.example""#,
            r#""bitnami""#,
            r#""my.repo_1-x""#,
        ] {
            let config = config(&format!(
                r#"{{"chart": "nginx", "repo": {ok}, "version": "1"}}"#
            ));
            assert!(config.check().is_empty(), "{ok}");
        }
        let bad = config(r#"{"chart": "nginx", "repo": "charts example", "version": "1"}"#);
        let found = bad.check();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path.as_deref(), Some("/repo"));
    }

    #[test]
    fn a_chart_given_twice_or_not_at_all_is_a_config_error() {
        let twice = config(r#"{"chart": "oci://r/a", "version": "1"}"#)
            .chart(&request(Some("chart")))
            .unwrap_err();
        assert!(
            matches!(&twice, PluginError::InvalidConfig(d) if d[0].message.contains("given twice"))
        );
        let none = config("{}").chart(&request(None)).unwrap_err();
        assert!(
            matches!(&none, PluginError::InvalidConfig(d) if d[0].message.contains("no chart"))
        );
    }

    #[test]
    fn values_files_stay_inside_the_manifest_directory() {
        let config = config(r#"{"valuesFiles": ["values/prod.yaml", "../secret.yaml"]}"#);
        let error = config.values_files(&request(None)).unwrap_err();
        let PluginError::InvalidConfig(found) = error else {
            panic!("{error:?}")
        };
        assert_eq!(pointers(&found), ["/valuesFiles/1"]);
    }
}
