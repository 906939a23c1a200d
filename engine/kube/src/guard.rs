//! The context guard: whether this `tazuna.yaml` may write to this cluster.
//!
//! Two checks, both before any request that writes:
//! 1. the context name against `context_matches` (of the selected environment
//!    when `-e` is given), checked without connecting;
//! 2. the cluster's identity (its `kube-system` UID) against the one the file
//!    is bound to: `spec.cluster.uid` (or the environment's) when the file says
//!    so, else the binding the first apply recorded in `tazuna.lock`.

use std::path::PathBuf;

use tazuna_core::config::{ContextRule, MatchMode};
use tazuna_core::lock::{ClusterBinding, Lockfile};

use crate::cluster::Destination;

/// Where the expected identity came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindingSource {
    /// `spec.cluster.uid` (or `spec.environments.<name>.cluster.uid`).
    File,
    /// `tazuna.lock`, recorded by an earlier apply.
    Lock(PathBuf),
}

/// Why the guard refused.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// The context name does not satisfy `context_matches`.
    #[error(
        "context `{context}` does not match {what} ({mode} of {patterns}); nothing was changed",
        what = match .environment { Some(e) => format!("`spec.environments.{e}.context_matches`"), None => "`spec.context_matches`".to_owned() },
        mode = match .mode { MatchMode::Or => "any", MatchMode::And => "all" },
        patterns = .patterns.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
    )]
    ContextMismatch {
        /// The context.
        context: String,
        /// The selected environment.
        environment: Option<String>,
        /// The patterns.
        patterns: Vec<String>,
        /// How they combine.
        mode: MatchMode,
    },
    /// The context matches but leads to another cluster.
    #[error(
        "context `{}` leads to cluster `{}` ({}), but this file is bound to cluster `{}`{}; nothing was changed",
        .target.context, .target.uid, .target.server, .expected,
        match .binding { BindingSource::File => " by `spec.cluster.uid`".to_owned(), BindingSource::Lock(path) => format!(" by `{}`{}", path.display(), .bound.as_ref().map(|b| format!(" (bound through context `{}`, server {}, at {})", b.context, b.server, b.bound_at)).unwrap_or_default()) }
    )]
    WrongCluster {
        /// What the context leads to.
        target: Box<Destination>,
        /// The expected UID.
        expected: String,
        /// Where that came from.
        binding: BindingSource,
        /// The lock's binding, when it came from the lock.
        bound: Option<Box<ClusterBinding>>,
    },
}

impl tazuna_core::hint::Hint for GuardError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            Self::ContextMismatch { .. } => "pick a matching context with `--context <name>`, select another environment with `-e <name>`, or fix `context_matches`; patterns match anywhere in the name unless anchored with ^…$".into(),
            Self::WrongCluster { binding: BindingSource::File, target, .. } => format!(
                "if this really is the cluster for this file now, set `spec.cluster.uid` to `{}`",
                target.uid
            ),
            Self::WrongCluster { .. } => "if the cluster was rebuilt on purpose and this file now belongs to it, rerun with `--rebind` to bind it to the new cluster".into(),
        })
    }
}

/// The checks for one run.
#[derive(Debug, Clone)]
pub struct ContextGuard {
    /// The rule in force.
    pub rule: ContextRule,
    /// The selected environment.
    pub environment: Option<String>,
    /// The selected cluster's name, which keys its binding in `tazuna.lock`
    /// (an environment's own cluster is named after it).
    pub cluster: Option<String>,
    /// `spec.cluster.uid` in force, if any.
    pub file_uid: Option<String>,
    /// The lock file.
    pub lock_path: PathBuf,
}

/// Whether a new identity replaces the recorded one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rebind {
    /// Refuse a different cluster.
    Refuse,
    /// Record the cluster the context leads to now (`--rebind`).
    Rebind,
}

impl ContextGuard {
    /// Check the context name. Needs no connection.
    pub fn check_context(&self, context: &str) -> Result<(), GuardError> {
        if self.rule.matches(context) {
            return Ok(());
        }
        Err(GuardError::ContextMismatch {
            context: context.to_owned(),
            environment: self.environment.clone(),
            patterns: self
                .rule
                .patterns
                .iter()
                .map(|p| p.as_str().to_owned())
                .collect(),
            mode: self.rule.mode,
        })
    }

    /// Check the cluster's identity against the binding; returns the binding
    /// to record when there is none yet (or when rebinding).
    pub fn check_identity(
        &self,
        target: &Destination,
        lock: &Lockfile,
        rebind: Rebind,
    ) -> Result<Option<ClusterBinding>, GuardError> {
        if let Some(expected) = &self.file_uid {
            if *expected != target.uid {
                return Err(GuardError::WrongCluster {
                    target: Box::new(target.clone()),
                    expected: expected.clone(),
                    binding: BindingSource::File,
                    bound: None,
                });
            }
            return Ok(None);
        }
        let new_binding = || ClusterBinding {
            uid: target.uid.clone(),
            context: target.context.clone(),
            server: target.server.clone(),
            bound_at: crate::state::now_rfc3339(),
        };
        match lock.binding(self.cluster.as_deref()) {
            None => Ok(Some(new_binding())),
            Some(bound) if bound.uid == target.uid => Ok(None),
            Some(_) if rebind == Rebind::Rebind => Ok(Some(new_binding())),
            Some(bound) => Err(GuardError::WrongCluster {
                target: Box::new(target.clone()),
                expected: bound.uid.clone(),
                binding: BindingSource::Lock(self.lock_path.clone()),
                bound: Some(Box::new(bound.clone())),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use tazuna_core::hint::Hint as _;

    use super::*;

    fn guard(patterns: &[&str], mode: MatchMode) -> ContextGuard {
        ContextGuard {
            rule: ContextRule {
                patterns: patterns
                    .iter()
                    .map(|p| regex::Regex::new(p).unwrap())
                    .collect(),
                mode,
            },
            environment: None,
            cluster: None,
            file_uid: None,
            lock_path: PathBuf::from("tazuna.lock"),
        }
    }

    fn target(uid: &str) -> Destination {
        Destination {
            context: "kind-staging".into(),
            server: "https://127.0.0.1:6443".into(),
            uid: uid.into(),
            version: "v1.37.2".into(),
        }
    }

    #[test]
    fn partial_match_accepts_a_substring_and_anchors_make_it_full() {
        assert!(
            guard(&["staging"], MatchMode::Or)
                .check_context("gke_staging-tokyo")
                .is_ok()
        );
        assert!(
            guard(&["^staging$"], MatchMode::Or)
                .check_context("gke_staging-tokyo")
                .is_err()
        );
        assert!(
            guard(&["^staging$"], MatchMode::Or)
                .check_context("staging")
                .is_ok()
        );
    }

    #[test]
    fn and_needs_every_pattern() {
        let g = guard(&["staging", "tokyo"], MatchMode::And);
        assert!(g.check_context("gke_staging-tokyo").is_ok());
        let error = g
            .check_context("gke_staging-osaka")
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "context `gke_staging-osaka` does not match `spec.context_matches` (all of `staging`, `tokyo`); nothing was changed"
        );
        assert!(
            guard(&["staging", "tokyo"], MatchMode::Or)
                .check_context("gke_staging-osaka")
                .is_ok()
        );
    }

    #[test]
    fn the_first_run_binds_and_a_later_one_on_another_cluster_is_refused() {
        let g = guard(&[], MatchMode::Or);
        let mut lock = Lockfile::default();
        let binding = g
            .check_identity(&target("uid-a"), &lock, Rebind::Refuse)
            .unwrap()
            .unwrap();
        lock.bind(None, binding);
        assert_eq!(
            g.check_identity(&target("uid-a"), &lock, Rebind::Refuse)
                .unwrap(),
            None
        );
        let error = g
            .check_identity(&target("uid-b"), &lock, Rebind::Refuse)
            .unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("`uid-b`") && text.contains("`uid-a`"),
            "{text}"
        );
        assert!(error.hint().unwrap().contains("--rebind"));
        let rebound = g
            .check_identity(&target("uid-b"), &lock, Rebind::Rebind)
            .unwrap()
            .unwrap();
        assert_eq!(rebound.uid, "uid-b");
    }

    #[test]
    fn a_uid_in_the_file_wins_over_the_lock_and_rebind() {
        let mut g = guard(&[], MatchMode::Or);
        g.file_uid = Some("uid-file".into());
        let lock = Lockfile::default();
        assert!(
            g.check_identity(&target("uid-file"), &lock, Rebind::Refuse)
                .unwrap()
                .is_none()
        );
        let error = g
            .check_identity(&target("uid-x"), &lock, Rebind::Rebind)
            .unwrap_err();
        assert!(error.hint().unwrap().contains("spec.cluster.uid"));
    }
}
