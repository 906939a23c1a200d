//! What a run reports: the action on each object, the events the progress
//! view hears, the counts, and each manifest's outcome or failure.

use super::*;

/// What happened to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Sent; it was not in state before.
    Created,
    /// Sent; it changed (or changed live).
    Configured,
    /// Not sent: unchanged in intent and live.
    Unchanged,
    /// Deleted because it is no longer rendered.
    Pruned,
    /// Deleted by `tazuna destroy`.
    Deleted,
    /// Left as it is on purpose: create-only or handed over to a GitOps
    /// controller and present live, or no longer rendered but kept
    /// (annotation, or a dangerous kind without `--prune-dangerous`).
    Kept,
}

impl Action {
    /// The word shown for it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Configured => "configured",
            Self::Unchanged => "unchanged",
            Self::Pruned => "pruned",
            Self::Deleted => "deleted",
            Self::Kept => "kept",
        }
    }
}

/// Progress events: the one source of every progress view and log line.
#[derive(Debug, Clone)]
pub enum Event {
    /// A layer starts.
    Layer {
        /// 1-based.
        index: usize,
        /// How many layers there are.
        of: usize,
        /// Its manifests.
        manifests: Vec<String>,
    },
    /// A manifest starts.
    Started {
        /// The manifest.
        manifest: String,
        /// How many objects it rendered.
        objects: usize,
    },
    /// An object was handled.
    Object {
        /// The manifest.
        manifest: String,
        /// The object.
        object: ObjectRef,
        /// What happened.
        action: Action,
        /// Why, for kept objects.
        note: Option<String>,
    },
    /// A manifest waits for readiness.
    Waiting {
        /// The manifest.
        manifest: String,
        /// How many objects it waits for.
        objects: usize,
    },
    /// An object became ready.
    Ready {
        /// The manifest.
        manifest: String,
        /// The object.
        object: ObjectRef,
    },
    /// Something about an object the user should know, that is no change:
    /// a helm hook an apply leaves out.
    Note {
        /// The manifest.
        manifest: String,
        /// The object.
        object: ObjectRef,
        /// What to know.
        note: String,
    },
    /// A test passed.
    TestPassed {
        /// The manifest (`None` for `spec.tests`).
        manifest: Option<String>,
        /// What was tested.
        test: String,
    },
    /// A manifest is done.
    Finished(ManifestOutcome),
}

/// Receives [`Event`]s.
pub trait Observer: Sync {
    /// One event.
    fn event(&self, event: Event);
}

/// Counts per action.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Created.
    pub created: usize,
    /// Configured.
    pub configured: usize,
    /// Unchanged.
    pub unchanged: usize,
    /// Pruned, or deleted by destroy.
    pub pruned: usize,
    /// Kept.
    pub kept: usize,
}

impl Counts {
    pub(crate) fn add(&mut self, action: Action) {
        match action {
            Action::Created => self.created += 1,
            Action::Configured => self.configured += 1,
            Action::Unchanged => self.unchanged += 1,
            Action::Pruned | Action::Deleted => self.pruned += 1,
            Action::Kept => self.kept += 1,
        }
    }
}

/// How a manifest ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Applied, ready, tests passed, state written.
    Applied,
    /// Failed: what went wrong, and what to do about it.
    Failed(Failure),
    /// Not attempted, with the reason.
    Skipped(String),
}

/// One manifest's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestOutcome {
    /// The manifest (or `spec.tests`).
    pub manifest: String,
    /// How it ended.
    pub outcome: Outcome,
    /// What happened to its objects.
    pub counts: Counts,
    /// How long it took.
    pub elapsed: Duration,
}

/// Why a manifest failed, as the engine hands it out: what is wrong, and
/// apart from it what to do ([`Hint`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// What went wrong; it names the object where there is one.
    pub message: String,
    /// What to do about it.
    pub hint: Option<String>,
}

impl Failure {
    /// A failure with no advice.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: None,
        }
    }

    /// The failure `error` describes, with its hint.
    pub fn of(error: &(impl std::error::Error + Hint)) -> Self {
        Self {
            message: error.to_string(),
            hint: error.hint(),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Why one manifest failed; it becomes a [`Failure`]. It is big (it names
/// the object), but it is only built on the way out of a manifest.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ManifestError {
    #[error("{object}: unknown kind `{kind}` in `{api_version}`")]
    UnknownKind {
        object: ObjectRef,
        kind: String,
        api_version: String,
        hint: Option<String>,
    },
    #[error("{object}: conflict with another field manager: {message}")]
    Conflict { object: ObjectRef, message: String },
    #[error("{object}: an immutable field changed: {message}")]
    Immutable { object: ObjectRef, message: String },
    #[error("{object}: {message}")]
    UnknownField { object: ObjectRef, message: String },
    #[error("{object}: {message}")]
    Rejected { object: ObjectRef, message: String },
    #[error("{0}")]
    Wait(#[from] wait::WaitError),
    #[error("helm hook {object} did not succeed: {wait}")]
    Hook {
        object: ObjectRef,
        wait: wait::WaitError,
    },
    #[error("{0}")]
    State(#[from] crate::state::StateError),
    #[error("{0}")]
    Test(#[from] crate::checks::TestError),
    #[error("cannot refresh discovery after applying CRDs: {0}")]
    Discovery(kube::Error),
    #[error("object #{index} has no apiVersion, kind or metadata.name")]
    Anonymous { index: usize },
    #[error("{object}: annotation `{APPLY_WAVE}` is `{value}`, not a whole number")]
    Wave { object: ObjectRef, value: String },
    #[error("{0}")]
    Policy(#[from] tazuna_core::policy::PolicyError),
}

impl Hint for ManifestError {
    fn hint(&self) -> Option<String> {
        match self {
            Self::UnknownKind { hint, .. } => hint.clone(),
            Self::Conflict { message, .. } => Some(crate::objects::errors::conflict_hint(message)),
            Self::Immutable { .. } => {
                Some("rerun with `--recreate` to delete and re-create it".into())
            }
            Self::UnknownField { .. } => Some(UNKNOWN_FIELD_HINT.into()),
            Self::Wave { .. } => Some(format!(
                "waves go in ascending order, such as `{APPLY_WAVE}: \"-1\"` or `\"2\"`; objects without it are wave 0"
            )),
            Self::State(error) => error.hint(),
            Self::Policy(error) => error.hint(),
            Self::Test(error) => error.hint(),
            Self::Wait(wait::WaitError::NotGone { blocking, .. }) if !blocking.is_empty() => {
                let names = blocking.join("`, `");
                Some(format!(
                    "the namespace controller deletes no Namespace while APIService `{names}` is unavailable; bring its backend up, or remove it with `kubectl delete apiservice {}`, and rerun",
                    blocking.join(" ")
                ))
            }
            _ => None,
        }
    }
}
