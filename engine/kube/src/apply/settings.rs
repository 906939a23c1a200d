//! How a run applies: its settings (conflicts, re-creation, dry run,
//! requests in flight) and the manifests it is given.

use super::*;

/// Apply requests a run keeps in flight unless told otherwise (`--requests`).
/// Measured on the benchmark's 2-core harness (a fresh control plane per
/// run, Argo CD and 1,000 ConfigMaps), 128 took 13% less time than 32 and
/// the control plane 14% less CPU for the same patches; 256 took 4 to 7%
/// less than 128, and is what the benchmark's minimal client found best. A
/// server that has no seat for one (API Priority and Fairness) queues it,
/// and answers 429 only when the user's queues are full as well (a
/// non-exempt user's priority level queues 6 x 50 by default); the client
/// retries a 429 after the time the server names.
pub const REQUESTS_AT_ONCE: usize = 256;

/// What happens on a field conflict with another manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conflicts {
    /// Fail the object and say who owns the field.
    Report,
    /// Take ownership (`--force-conflicts`).
    Force,
}

/// What happens when an immutable field changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recreate {
    /// Fail the object with a hint.
    Never,
    /// Delete it, wait until it is gone, and apply it again (`--recreate`).
    Allowed,
}

/// Which objects an apply sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sends {
    /// What changed in the file since the state, and what changed live in
    /// the fields Tazuna set (drift, taken back): the default.
    #[default]
    Changed,
    /// Only what changed in the file since the state, and what is missing
    /// live: Go Tazuna's differential `apply --sync`. Live drift of an
    /// object unchanged in the file stays.
    FileChanges,
    /// Everything, unchanged or not (`--resend`, as `helmfile sync` is to
    /// `helmfile apply`).
    Everything,
}

/// Whether anything is persisted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Apply for real.
    Apply,
    /// Server-side dry run: nothing is persisted, nothing is waited for.
    DryRun,
}

/// How one apply runs.
#[derive(Debug, Clone)]
pub struct ApplySettings {
    /// On field conflicts.
    pub conflicts: Conflicts,
    /// On immutable fields.
    pub recreate: Recreate,
    /// Pruning.
    pub prune: Prune,
    /// Apply or dry run.
    pub mode: Mode,
    /// Manifests of a layer applied at once.
    pub manifests_at_once: usize,
    /// Apply requests in flight at once, across the run's manifests.
    pub requests_at_once: usize,
    /// Which objects are sent.
    pub sends: Sends,
    /// Keep what each object was before this run changed it, so that a
    /// failing run can be undone ([`Run::roll_back`], `--atomic`).
    pub atomic: bool,
    /// The git commit of the config, recorded in state.
    pub git_commit: Option<String>,
    /// The repository of the file, recorded with a derived stack name
    /// (see `ManifestState::origin`).
    pub origin: Option<String>,
    /// The tazuna version, recorded in state.
    pub tazuna_version: String,
    /// Whether `spec.tests` run at the end.
    pub run_spec_tests: bool,
    /// How long deleted objects (pruned, destroyed) may take to be gone.
    pub deletion_timeout: Duration,
    /// Handed-over objects that prune and destroy may delete after all, as
    /// `<Kind>/<name>` or `<Kind>/<namespace>/<name>` (`--delete-handed-over`).
    pub delete_handed_over: Vec<String>,
}

/// One manifest to apply.
#[derive(Debug)]
pub struct Unit<'a> {
    /// The manifest.
    pub manifest: &'a Manifest,
    /// Its position in the file.
    pub position: usize,
    /// What it rendered to, or why it did not.
    pub rendered: Result<Rendered, Failure>,
}
