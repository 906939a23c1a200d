//! Running the tests of a manifest or of `spec.tests` against the cluster:
//! `WaitUntil` (a CEL condition over the object) and `ExistNonExist`.
//!
//! Tests are polled at their `intervalSeconds`, because that is what the file
//! asks for; a verdict needs `minConsecutiveSuccessCount` successes (or
//! `minConsecutiveFailureCount` failures) in a row, see
//! [`tazuna_core::check::Streak`].

use std::time::Duration;

use kube::Client;
use serde_json::Value;
use tazuna_core::check::{Condition, TestVerdict};
use tazuna_core::config::{Check, ResourceType, Test};
use tazuna_core::inventory::ObjectRef;

use crate::cluster::Cluster;
use crate::objects::api_for;

/// A one-line description of `test`.
pub fn describe(test: &Test) -> String {
    match &test.check {
        Check::WaitUntil(w) => format!(
            "WaitUntil {} `{}`",
            reference(&w.resource, w.namespace.as_deref(), &w.name),
            w.condition
        ),
        Check::ExistNonExist(e) => format!(
            "ExistNonExist {} {}",
            reference(&e.resource, e.namespace.as_deref(), &e.name),
            if e.should_exist {
                "exists"
            } else {
                "does not exist"
            }
        ),
    }
}

fn object_ref(resource: &ResourceType, namespace: Option<&str>, name: &str) -> ObjectRef {
    let (group, version) = match resource.api_version.split_once('/') {
        Some((g, v)) => (g.to_owned(), v.to_owned()),
        None => (String::new(), resource.api_version.clone()),
    };
    ObjectRef {
        group,
        version,
        kind: resource.kind.clone(),
        namespace: namespace.map(str::to_owned),
        name: name.to_owned(),
    }
}

fn reference(resource: &ResourceType, namespace: Option<&str>, name: &str) -> String {
    object_ref(resource, namespace, name).to_string()
}

/// Why a test did not pass: which test, where it is declared, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TestError {
    /// Its CEL condition does not compile.
    #[error("{origin}: {error}")]
    Condition {
        /// Where the test is declared.
        origin: String,
        /// Why the condition does not compile.
        error: String,
    },
    /// It failed `minConsecutiveFailureCount` times in a row.
    #[error("test {test} ({origin}) failed: {reason}")]
    Failed {
        /// The test ([`describe`]).
        test: String,
        /// Where it is declared.
        origin: String,
        /// What the last attempt saw.
        reason: String,
    },
    /// It did not pass within its `timeoutSeconds`.
    #[error("test {test} ({origin}) timed out after {seconds}s: {reason}")]
    TimedOut {
        /// The test ([`describe`]).
        test: String,
        /// Where it is declared.
        origin: String,
        /// Its timeout.
        seconds: u64,
        /// What the last attempt saw.
        reason: String,
    },
}

impl tazuna_core::hint::Hint for TestError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            Self::Condition { .. } => {
                "fix the CEL expression; `tazuna check` reports it without a cluster".to_owned()
            }
            Self::Failed { .. } => "look at the object with kubectl; the test is checked again on the next apply".to_owned(),
            Self::TimedOut { .. } => "look at the object with kubectl, or raise the test's `timeoutSeconds` if it only needs longer".to_owned(),
        })
    }
}

/// Run `test` until it passes or fails; the error says which test, where it
/// is declared and why.
pub async fn run(client: &Client, cluster: &Cluster, test: &Test) -> Result<(), TestError> {
    let (target, condition, should_exist) = match &test.check {
        Check::WaitUntil(w) => {
            let condition = Condition::compile(&w.condition).map_err(|e| TestError::Condition {
                origin: test.origin.to_string(),
                error: e.to_string(),
            })?;
            (
                object_ref(&w.resource, w.namespace.as_deref(), &w.name),
                Some(condition),
                true,
            )
        }
        Check::ExistNonExist(e) => (
            object_ref(&e.resource, e.namespace.as_deref(), &e.name),
            None,
            e.should_exist,
        ),
    };
    let started = tokio::time::Instant::now();
    let mut streak = test.streak();
    let mut last_reason;
    loop {
        let observed = match cluster.resolve(&target) {
            None => Ok(None),
            Some(resolved) => api_for(client, &resolved, target.namespace.as_deref())
                .get_opt(&target.name)
                .await
                .map(|o| o.map(|o| serde_json::to_value(o).unwrap_or(Value::Null)))
                .map_err(|e| e.to_string()),
        };
        let ok = match (&observed, &condition) {
            (Err(error), _) => {
                last_reason = format!("cannot read it: {error}");
                false
            }
            (Ok(None), _) => {
                last_reason = "it does not exist".into();
                !should_exist
            }
            (Ok(Some(_)), None) => {
                last_reason = "it exists".into();
                should_exist
            }
            (Ok(Some(object)), Some(condition)) => match condition.evaluate(object) {
                Ok(result) => {
                    last_reason = format!("the condition is {result}");
                    result
                }
                Err(error) => {
                    last_reason = error.to_string();
                    false
                }
            },
        };
        match streak.record(ok) {
            TestVerdict::Passed => return Ok(()),
            TestVerdict::Failed => {
                return Err(TestError::Failed {
                    test: describe(test),
                    origin: test.origin.to_string(),
                    reason: last_reason,
                });
            }
            TestVerdict::Pending => {}
        }
        if let Some(timeout) = test.timeout
            && started.elapsed() >= timeout
        {
            return Err(TestError::TimedOut {
                test: describe(test),
                origin: test.origin.to_string(),
                seconds: timeout.as_secs(),
                reason: last_reason,
            });
        }
        tokio::time::sleep(test.interval.max(Duration::from_millis(100))).await;
    }
}
