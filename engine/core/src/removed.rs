//! API versions Kubernetes has removed, and what replaced them, so that an
//! object of such a version gets a hint that names the version to move to
//! rather than one that blames a missing CRD.

/// A removed API version of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Removed {
    /// The Kubernetes minor version that stopped serving it, such as `1.22`.
    pub since: &'static str,
    /// The apiVersion to use instead; `None` when the kind is gone too.
    pub replacement: Option<&'static str>,
}

/// `(apiVersion, kind or "*" for every kind of it, removed in, replacement)`.
const REMOVED: &[(&str, &str, &str, Option<&str>)] = &[
    (
        "extensions/v1beta1",
        "Ingress",
        "1.22",
        Some("networking.k8s.io/v1"),
    ),
    (
        "extensions/v1beta1",
        "NetworkPolicy",
        "1.16",
        Some("networking.k8s.io/v1"),
    ),
    ("extensions/v1beta1", "PodSecurityPolicy", "1.16", None),
    ("extensions/v1beta1", "*", "1.16", Some("apps/v1")),
    ("apps/v1beta1", "*", "1.16", Some("apps/v1")),
    ("apps/v1beta2", "*", "1.16", Some("apps/v1")),
    (
        "networking.k8s.io/v1beta1",
        "*",
        "1.22",
        Some("networking.k8s.io/v1"),
    ),
    (
        "apiextensions.k8s.io/v1beta1",
        "*",
        "1.22",
        Some("apiextensions.k8s.io/v1"),
    ),
    (
        "admissionregistration.k8s.io/v1beta1",
        "*",
        "1.22",
        Some("admissionregistration.k8s.io/v1"),
    ),
    (
        "apiregistration.k8s.io/v1beta1",
        "*",
        "1.22",
        Some("apiregistration.k8s.io/v1"),
    ),
    (
        "rbac.authorization.k8s.io/v1beta1",
        "*",
        "1.22",
        Some("rbac.authorization.k8s.io/v1"),
    ),
    (
        "scheduling.k8s.io/v1beta1",
        "*",
        "1.22",
        Some("scheduling.k8s.io/v1"),
    ),
    (
        "coordination.k8s.io/v1beta1",
        "*",
        "1.22",
        Some("coordination.k8s.io/v1"),
    ),
    (
        "certificates.k8s.io/v1beta1",
        "*",
        "1.22",
        Some("certificates.k8s.io/v1"),
    ),
    (
        "storage.k8s.io/v1beta1",
        "CSIStorageCapacity",
        "1.27",
        Some("storage.k8s.io/v1"),
    ),
    (
        "storage.k8s.io/v1beta1",
        "*",
        "1.22",
        Some("storage.k8s.io/v1"),
    ),
    ("batch/v1beta1", "*", "1.25", Some("batch/v1")),
    (
        "discovery.k8s.io/v1beta1",
        "*",
        "1.25",
        Some("discovery.k8s.io/v1"),
    ),
    (
        "events.k8s.io/v1beta1",
        "*",
        "1.25",
        Some("events.k8s.io/v1"),
    ),
    ("autoscaling/v2beta1", "*", "1.25", Some("autoscaling/v2")),
    ("autoscaling/v2beta2", "*", "1.26", Some("autoscaling/v2")),
    ("policy/v1beta1", "PodSecurityPolicy", "1.25", None),
    ("policy/v1beta1", "*", "1.25", Some("policy/v1")),
    ("node.k8s.io/v1beta1", "*", "1.25", Some("node.k8s.io/v1")),
    (
        "flowcontrol.apiserver.k8s.io/v1beta1",
        "*",
        "1.26",
        Some("flowcontrol.apiserver.k8s.io/v1"),
    ),
    (
        "flowcontrol.apiserver.k8s.io/v1beta2",
        "*",
        "1.29",
        Some("flowcontrol.apiserver.k8s.io/v1"),
    ),
    (
        "flowcontrol.apiserver.k8s.io/v1beta3",
        "*",
        "1.32",
        Some("flowcontrol.apiserver.k8s.io/v1"),
    ),
];

/// Whether Kubernetes removed `api_version` for `kind`, and what replaced it.
pub fn removed(api_version: &str, kind: &str) -> Option<Removed> {
    REMOVED
        .iter()
        .find(|(version, k, _, _)| *version == api_version && (*k == kind || *k == "*"))
        .map(|&(_, _, since, replacement)| Removed { since, replacement })
}

/// The hint for an object of a removed API version.
pub fn hint(api_version: &str, kind: &str) -> Option<String> {
    let removed = removed(api_version, kind)?;
    Some(match removed.replacement {
        Some(to) => format!(
            "`{api_version}` {kind} was removed in Kubernetes {}; use `apiVersion: {to}` (its fields may differ; see the Kubernetes deprecated API migration guide)",
            removed.since
        ),
        None => format!(
            "`{api_version}` {kind} was removed in Kubernetes {} with no replacement of that kind; remove it from the manifest",
            removed.since
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removed_versions_name_their_replacement() {
        assert_eq!(
            hint("extensions/v1beta1", "Ingress").unwrap(),
            "`extensions/v1beta1` Ingress was removed in Kubernetes 1.22; use `apiVersion: networking.k8s.io/v1` (its fields may differ; see the Kubernetes deprecated API migration guide)"
        );
        assert_eq!(
            removed("extensions/v1beta1", "Deployment")
                .unwrap()
                .replacement,
            Some("apps/v1")
        );
        assert_eq!(
            removed("policy/v1beta1", "PodSecurityPolicy")
                .unwrap()
                .replacement,
            None
        );
        assert_eq!(removed("batch/v1beta1", "CronJob").unwrap().since, "1.25");
        assert_eq!(removed("apps/v1", "Deployment"), None);
        assert_eq!(removed("example.com/v1beta1", "Widget"), None);
    }
}
