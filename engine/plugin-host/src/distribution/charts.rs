//! The newest version of a Helm chart, for `tazuna chart list --check-latest`:
//! from an HTTP chart repository's `index.yaml`, or an OCI repository's tags.

use std::time::Duration;

use super::{Source, auth_for};

/// The largest `index.yaml` read (big public repositories are tens of MB).
const MAX_INDEX_BYTES: usize = 64 * 1024 * 1024;

/// How long one repository may take to answer.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Why a chart's versions could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// The repository or registry did not answer as one.
    #[error("chart `{chart}`: cannot read `{url}`: {message}")]
    Unreadable {
        /// The chart.
        chart: String,
        /// What was read.
        url: String,
        /// Why not.
        message: String,
    },
}

/// The highest stable semver version of `chart` in the repository at
/// `repo` (its `index.yaml`); none when the index does not list the chart.
pub async fn newest_in_chart_repository(
    repo: &str,
    chart: &str,
) -> Result<Option<String>, ChartError> {
    let url = format!("{}/index.yaml", repo.trim_end_matches('/'));
    let unreadable = |message: String| ChartError::Unreadable {
        chart: chart.to_owned(),
        url: url.clone(),
        message,
    };
    crate::tls::install();
    let client = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .build()
        .map_err(|e| unreadable(e.to_string()))?;
    let mut response = client
        .get(&url)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| unreadable(e.to_string()))?;
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| unreadable(e.to_string()))?
    {
        if body.len() + chunk.len() > MAX_INDEX_BYTES {
            return Err(unreadable(format!(
                "the index is larger than {} MiB",
                MAX_INDEX_BYTES / 1024 / 1024
            )));
        }
        body.extend_from_slice(&chunk);
    }
    let index: serde_yaml::Value =
        serde_yaml::from_slice(&body).map_err(|e| unreadable(format!("not a chart index: {e}")))?;
    let versions = index["entries"][chart]
        .as_sequence()
        .into_iter()
        .flatten()
        .filter_map(|entry| entry["version"].as_str());
    Ok(newest_stable(versions))
}

/// The highest stable semver tag of the OCI repository `reference`
/// (`registry/repository`), as helm tags charts (`+` written `_`).
pub async fn newest_chart_version(reference: &str) -> Result<Option<String>, ChartError> {
    let unreadable = |message: String| ChartError::Unreadable {
        chart: reference.to_owned(),
        url: format!("oci://{reference}"),
        message,
    };
    let source = Source::parse("chart", reference).map_err(|e| unreadable(e.to_string()))?;
    let registry = source.client();
    let tags = registry
        .list_tags(
            &source.with_tag("latest"),
            &auth_for(&source.registry),
            None,
            None,
        )
        .await
        .map_err(|e| unreadable(registry.explain(e)))?
        .tags;
    Ok(newest_stable(tags.iter().map(String::as_str)).map(|v| v.replace('+', "_")))
}

/// The highest version without a pre-release part, as written (a leading
/// `v` allowed; `_` read as `+`).
fn newest_stable<'a>(versions: impl Iterator<Item = &'a str>) -> Option<String> {
    versions
        .filter_map(|written| {
            let version =
                semver::Version::parse(&written.trim_start_matches('v').replace('_', "+")).ok()?;
            version.pre.is_empty().then_some((version, written))
        })
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, written)| written.to_owned())
}

#[cfg(test)]
mod tests {
    use super::newest_stable;

    #[test]
    fn the_newest_stable_version_wins() {
        let versions = ["v1.9.0", "v1.10.0", "v1.11.0-rc.1", "junk", "v1.10.0+build"];
        assert_eq!(
            newest_stable(versions.into_iter()).as_deref(),
            Some("v1.10.0+build")
        );
        assert_eq!(
            newest_stable(["1.0.0_1", "1.0.0"].into_iter()).as_deref(),
            Some("1.0.0_1")
        );
        assert_eq!(newest_stable(std::iter::empty()), None);
    }
}
