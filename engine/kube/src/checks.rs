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
use tazuna_core::check::{Condition, Verdict};
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

/// Run `test` until it passes or fails; the error says which test, where it
/// is declared and why.
pub async fn run(client: &Client, cluster: &Cluster, test: &Test) -> Result<(), String> {
    let (target, condition, should_exist) = match &test.check {
        Check::WaitUntil(w) => {
            let condition =
                Condition::compile(&w.condition).map_err(|e| format!("{}: {e}", test.origin))?;
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
            Verdict::Passed => return Ok(()),
            Verdict::Failed => {
                return Err(format!(
                    "test {} ({}) failed: {last_reason}",
                    describe(test),
                    test.origin
                ));
            }
            Verdict::Pending => {}
        }
        if let Some(timeout) = test.timeout
            && started.elapsed() >= timeout
        {
            return Err(format!(
                "test {} ({}) timed out after {}s: {last_reason}",
                describe(test),
                test.origin,
                timeout.as_secs()
            ));
        }
        tokio::time::sleep(test.interval.max(Duration::from_millis(100))).await;
    }
}
