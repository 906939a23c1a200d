//! What the API server's audit log records, and how a test reads it.

/// Audit policy: the metadata of every request once its response is sent.
pub(super) const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
  - level: Metadata
";

/// One request from the API server's audit log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditEvent {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, ...
    pub verb: String,
    /// The resource (`configmaps`), empty for non-resource URLs.
    pub resource: String,
    /// The namespace, if any.
    pub namespace: Option<String>,
    /// The object name, if the request named one.
    pub name: Option<String>,
    /// Whether it was a server-side dry run.
    pub dry_run: bool,
    /// When the API server received it (RFC 3339 with microseconds, so
    /// times compare as text).
    pub at: String,
    /// When its response was complete, in the same form.
    pub done: String,
    /// The response's HTTP status (429 when API Priority and Fairness
    /// turned it away).
    pub code: Option<u16>,
    /// Who sent it (`system:admin`, `system:serviceaccount:<ns>:<name>`).
    pub user: String,
}

impl AuditEvent {
    /// Whether the request would change the cluster (a write that is not a dry run).
    pub fn is_write(&self) -> bool {
        !self.dry_run
            && matches!(
                self.verb.as_str(),
                "create" | "update" | "patch" | "delete" | "deletecollection"
            )
    }
}
