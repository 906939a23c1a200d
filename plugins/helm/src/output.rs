//! The pin of a remote chart, from what helm reports.

use tazuna_sdk::ResolvedRef;

use crate::config::{Chart, Config};

/// The pin of a remote chart: its version and, for OCI, the digest helm reports on stderr.
pub fn resolved(chart: &Chart, config: &Config, stderr: &str) -> Option<ResolvedRef> {
    let location = match chart {
        Chart::Local { .. } => return None,
        Chart::Oci(reference) => reference.clone(),
        Chart::Repository { repo, name } => format!("{}/{name}", repo.trim_end_matches('/')),
    };
    let digest = stderr
        .lines()
        .find_map(|line| line.strip_prefix("Digest: "))
        .map(|digest| digest.trim().to_owned());
    let version = stderr
        .lines()
        .find_map(|line| line.strip_prefix("Pulled: "))
        .and_then(|pulled| pulled.trim().rsplit_once(':'))
        .map(|(_, tag)| tag.to_owned())
        .or_else(|| config.version.clone());
    Some(ResolvedRef {
        location,
        version,
        digest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oci_pins_come_from_helm_s_stderr() {
        let config: Config = serde_json::from_str(r#"{"version": "~0.1"}"#).unwrap();
        let chart = Chart::Oci("oci://127.0.0.1:5000/charts/hello".into());
        let stderr = "Pulled: 127.0.0.1:5000/charts/hello:0.1.0\nDigest: sha256:abc\n";
        let pin = resolved(&chart, &config, stderr).unwrap();
        assert_eq!(pin.location, "oci://127.0.0.1:5000/charts/hello");
        assert_eq!(pin.version.as_deref(), Some("0.1.0"));
        assert_eq!(pin.digest.as_deref(), Some("sha256:abc"));
        let local = Chart::Local {
            path: "c".into(),
            directory: "/manifest/c".into(),
        };
        assert!(resolved(&local, &config, stderr).is_none());
    }
}
