//! `tazuna chart list`: the Helm charts the file installs, and whether newer
//! versions exist.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::json;
use tazuna_core::config::Manifest;
use tazuna_engine::stack::Writes;

use crate::report::OutputFormat;
use crate::settings::GlobalSettings;

/// The Helm charts the file installs (Go Tazuna's `chart`).
#[derive(Debug, Subcommand)]
pub enum Chart {
    /// List each chart: the manifest, release, chart and pinned version, from
    /// `helm` manifests and the releases of `helmfile` manifests.
    ///
    /// `--check-latest` asks each chart's repository (`index.yaml`) or OCI
    /// registry (its tags) for the newest stable version, and exits 2 when
    /// one is newer than the pin. A helmfile whose releases come from
    /// templates is listed as far as it reads as plain YAML.
    #[command(
        after_help = "Examples:\n  tazuna chart list\n  tazuna chart list --check-latest\n  tazuna chart list -o json | jq -r '.[] | select(.outdated) | .chart'"
    )]
    List(List),
}

/// `chart list`.
#[derive(Debug, Args)]
pub struct List {
    /// Ask each chart's repository for its newest stable version.
    #[arg(long)]
    check_latest: bool,
}

/// One chart the file installs.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    manifest: String,
    release: String,
    chart: String,
    /// The repository URL (`https://…`), or none for OCI and local charts.
    repo: Option<String>,
    version: Option<String>,
}

impl Chart {
    /// Run it.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        let Chart::List(list) = self;
        let stack = super::open(settings, Writes::Persist)?;
        let mut rows = Vec::new();
        for manifest in &stack.config().manifests {
            rows.extend(charts_of(manifest));
        }
        let latest: Vec<Option<Result<Option<String>, String>>> = if list.check_latest {
            super::runtime()?.block_on(async {
                let mut found = Vec::with_capacity(rows.len());
                for row in &rows {
                    found.push(Some(newest(row).await));
                }
                found
            })
        } else {
            vec![None; rows.len()]
        };
        let outdated = |row: &Row, latest: &Option<Result<Option<String>, String>>| match (
            &row.version,
            latest,
        ) {
            (Some(pinned), Some(Ok(Some(newest)))) => is_newer(newest, pinned),
            _ => false,
        };
        let mut any_outdated = false;
        match settings.output {
            OutputFormat::Json => {
                let items: Vec<_> = rows
                    .iter()
                    .zip(&latest)
                    .map(|(row, found)| {
                        let newer = outdated(row, found);
                        any_outdated |= newer;
                        let mut item = json!({
                            "manifest": row.manifest,
                            "release": row.release,
                            "chart": row.chart,
                            "repo": row.repo,
                            "version": row.version,
                        });
                        if let Some(found) = found {
                            match found {
                                Ok(newest) => item["latest"] = json!(newest),
                                Err(error) => item["error"] = json!(error),
                            }
                            item["outdated"] = json!(newer);
                        }
                        item
                    })
                    .collect();
                outln!("{}", serde_json::to_string_pretty(&items)?);
            }
            OutputFormat::Text if rows.is_empty() => {
                eprintln!(
                    "no manifest in `{}` installs a Helm chart",
                    settings.file.display()
                );
            }
            OutputFormat::Text => {
                let mut table = vec![[
                    "MANIFEST".to_owned(),
                    "RELEASE".to_owned(),
                    "CHART".to_owned(),
                    "VERSION".to_owned(),
                    "LATEST".to_owned(),
                ]];
                for (row, found) in rows.iter().zip(&latest) {
                    let chart = match &row.repo {
                        Some(repo) => format!("{} ({repo})", row.chart),
                        None => row.chart.clone(),
                    };
                    let newer = outdated(row, found);
                    any_outdated |= newer;
                    let newest = match found {
                        None => String::new(),
                        Some(Ok(Some(newest))) if newer => format!("{newest} (newer)"),
                        Some(Ok(Some(newest))) => newest.clone(),
                        Some(Ok(None)) => "-".to_owned(),
                        Some(Err(error)) => format!("error: {error}"),
                    };
                    table.push([
                        row.manifest.clone(),
                        row.release.clone(),
                        chart,
                        row.version.clone().unwrap_or_else(|| "-".to_owned()),
                        newest,
                    ]);
                }
                let text = if list.check_latest {
                    crate::report::table(&table)
                } else {
                    let four: Vec<[String; 4]> = table
                        .into_iter()
                        .map(|[a, b, c, d, _]| [a, b, c, d])
                        .collect();
                    crate::report::table(&four)
                };
                outln!("{}", text.trim_end());
            }
        }
        Ok(if any_outdated {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        })
    }
}

/// The charts one manifest installs.
fn charts_of(manifest: &Manifest) -> Vec<Row> {
    match manifest.kind.as_str() {
        "helm" => {
            let config = &manifest.config;
            let text = |key: &str| config.get(key).and_then(|v| v.as_str()).map(str::to_owned);
            let chart = text("chart")
                .or_else(|| manifest.path.clone())
                .unwrap_or_else(|| "-".to_owned());
            vec![Row {
                manifest: manifest.name.clone(),
                release: text("releaseName").unwrap_or_else(|| manifest.name.clone()),
                repo: text("repo").filter(|_| !chart.starts_with("oci://")),
                version: text("version"),
                chart,
            }]
        }
        "helmfile" => manifest
            .resolved_path()
            .map(|path| helmfile_releases(&manifest.name, &path))
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// The releases of the helmfile at `path` (a file, or a directory holding
/// `helmfile.yaml` or `helmfile.yaml.gotmpl`), as far as it reads as YAML.
fn helmfile_releases(manifest: &str, path: &Path) -> Vec<Row> {
    let file: PathBuf = if path.is_dir() {
        ["helmfile.yaml", "helmfile.yaml.gotmpl", "helmfile.yml"]
            .iter()
            .map(|name| path.join(name))
            .find(|candidate| candidate.is_file())
            .unwrap_or_else(|| path.join("helmfile.yaml"))
    } else {
        path.to_owned()
    };
    let Ok(text) = std::fs::read_to_string(&file) else {
        return Vec::new();
    };
    // Template lines are left out; what stays is read document by document.
    let plain: String = text
        .lines()
        .filter(|line| !line.contains("{{"))
        .map(|line| format!("{line}\n"))
        .collect();
    let mut repositories = std::collections::BTreeMap::new();
    let mut rows = Vec::new();
    for document in serde_yaml::Deserializer::from_str(&plain) {
        let Ok(value) = <serde_yaml::Value as serde::Deserialize>::deserialize(document) else {
            continue;
        };
        for repository in value["repositories"].as_sequence().into_iter().flatten() {
            if let (Some(name), Some(url)) =
                (repository["name"].as_str(), repository["url"].as_str())
            {
                let oci = repository["oci"].as_bool().unwrap_or(false);
                repositories.insert(name.to_owned(), (url.to_owned(), oci));
            }
        }
        for release in value["releases"].as_sequence().into_iter().flatten() {
            let Some(chart) = release["chart"].as_str() else {
                continue;
            };
            let (chart, repo) = match chart.split_once('/') {
                Some((repo, name)) if repositories.contains_key(repo) => {
                    let (url, oci) = &repositories[repo];
                    if *oci {
                        (format!("oci://{}/{name}", url.trim_end_matches('/')), None)
                    } else {
                        (name.to_owned(), Some(url.clone()))
                    }
                }
                _ => (chart.to_owned(), None),
            };
            rows.push(Row {
                manifest: manifest.to_owned(),
                release: release["name"].as_str().unwrap_or("-").to_owned(),
                chart,
                repo,
                version: release["version"].as_str().map(str::to_owned),
            });
        }
    }
    rows
}

/// The newest stable version of `row`'s chart, from its repository's index
/// or its OCI registry's tags; none for a local chart.
async fn newest(row: &Row) -> Result<Option<String>, String> {
    if let Some(reference) = row.chart.strip_prefix("oci://") {
        return tazuna_engine::distribution::newest_chart_version(reference)
            .await
            .map_err(|e| e.to_string());
    }
    match &row.repo {
        Some(repo) => tazuna_engine::distribution::newest_in_chart_repository(repo, &row.chart)
            .await
            .map_err(|e| e.to_string()),
        None => Ok(None),
    }
}

/// Whether `newest` is a higher semver than `pinned` (a leading `v` allowed).
fn is_newer(newest: &str, pinned: &str) -> bool {
    let parse = |v: &str| semver::Version::parse(v.trim_start_matches('v')).ok();
    match (parse(newest), parse(pinned)) {
        (Some(newest), Some(pinned)) => newest > pinned,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_helmfile_lists_its_releases_with_their_repositories() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("helmfile.yaml"),
            "repositories:\n  - name: jetstack\n    url: https://charts.jetstack.io\n  - name: ghcr\n    url: ghcr.io/example\n    oci: true\nreleases:\n  - name: cert-manager\n    chart: jetstack/cert-manager\n    version: v1.19.1\n    values:\n      - replicas: {{ .Values.replicas }}\n  - name: app\n    chart: ghcr/app\n    version: 1.0.0\n  - name: local\n    chart: ./charts/local\n",
        )
        .unwrap();
        let rows = helmfile_releases("platform", dir.path());
        assert_eq!(
            rows,
            vec![
                Row {
                    manifest: "platform".into(),
                    release: "cert-manager".into(),
                    chart: "cert-manager".into(),
                    repo: Some("https://charts.jetstack.io".into()),
                    version: Some("v1.19.1".into()),
                },
                Row {
                    manifest: "platform".into(),
                    release: "app".into(),
                    chart: "oci://ghcr.io/example/app".into(),
                    repo: None,
                    version: Some("1.0.0".into()),
                },
                Row {
                    manifest: "platform".into(),
                    release: "local".into(),
                    chart: "./charts/local".into(),
                    repo: None,
                    version: None,
                },
            ]
        );
    }

    #[test]
    fn newer_is_semver_order() {
        assert!(is_newer("v1.20.0", "v1.19.1"));
        assert!(is_newer("1.10.0", "1.9.0"));
        assert!(!is_newer("1.9.0", "1.9.0"));
        assert!(!is_newer("not-semver", "1.0.0"));
    }
}
