//! Evaluation of the `tests` in a `tazuna.yaml`, short of fetching objects.
//!
//! A `WaitUntil` test's CEL condition is compiled into a [`Condition`] and
//! evaluated with the fetched object bound to `object`. Each attempt's outcome
//! goes into a [`Streak`], which says when the test has passed or failed
//! according to its `minConsecutiveSuccessCount` and
//! `minConsecutiveFailureCount`; timeouts and pauses are the caller's.

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::{Key, Map};
use cel::{Context, Program};
use serde_json::Value;

/// Why a condition could not be compiled or evaluated.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The expression is not valid CEL.
    #[error("invalid CEL condition `{expression}`: {reason}")]
    Compile {
        /// The expression as written.
        expression: String,
        /// The parser's complaint, with the line and column in the expression.
        reason: String,
        /// Where in the expression the parser gave up: 1-based line and column.
        position: Option<(usize, usize)>,
    },
    /// Evaluating the expression failed, for example because it reads a field
    /// the object does not have (guard with `has(object.status)`).
    #[error("cannot evaluate CEL condition `{expression}`: {reason}")]
    Evaluate {
        /// The expression as written.
        expression: String,
        /// The interpreter's complaint.
        reason: String,
    },
    /// The expression evaluated to something other than a boolean.
    #[error("CEL condition `{expression}` gave a {found}, not a bool")]
    NotBool {
        /// The expression as written.
        expression: String,
        /// The type it gave, such as `string`.
        found: String,
    },
}

/// A compiled CEL condition over a Kubernetes object.
#[derive(Debug)]
pub struct Condition {
    expression: String,
    program: Program,
}

impl Condition {
    /// Compile `expression`; the object will be bound to the variable `object`.
    pub fn compile(expression: &str) -> Result<Condition, CheckError> {
        let program = Program::compile(expression).map_err(|errors| {
            let first = errors.errors.first();
            CheckError::Compile {
                expression: expression.to_owned(),
                reason: first.map_or_else(
                    || "syntax error".to_owned(),
                    |e| parse_reason(expression, e),
                ),
                position: first.and_then(|e| {
                    let (line, column) = e.pos;
                    Some((usize::try_from(line).ok()?, usize::try_from(column).ok()?))
                }),
            }
        })?;
        Ok(Condition {
            expression: expression.to_owned(),
            program,
        })
    }

    /// The expression as written.
    pub fn expression(&self) -> &str {
        &self.expression
    }

    /// Whether the condition holds for `object`.
    pub fn evaluate(&self, object: &Value) -> Result<bool, CheckError> {
        let mut context = Context::default();
        context.add_variable_from_value("object", to_cel(object));
        match self.program.execute(&context) {
            Ok(cel::Value::Bool(holds)) => Ok(holds),
            Ok(other) => Err(CheckError::NotBool {
                expression: self.expression.clone(),
                found: other.type_of().to_string(),
            }),
            Err(err) => Err(CheckError::Evaluate {
                expression: self.expression.clone(),
                reason: err.to_string(),
            }),
        }
    }
}

/// `syntax error at column 23: mismatched input …`, with the line too when
/// the expression has several.
fn parse_reason(expression: &str, error: &cel::ParseError) -> String {
    let (line, column) = error.pos;
    let at = if expression.contains('\n') {
        format!("line {line}, column {column}")
    } else {
        format!("column {column}")
    };
    match error.msg.strip_prefix("Syntax error: ") {
        Some(msg) => format!("syntax error at {at}: {msg}"),
        None => format!("{at}: {}", error.msg),
    }
}

/// JSON as CEL sees it: integers as `int` (or `uint` beyond `i64`), other
/// numbers as `double`.
fn to_cel(value: &Value) -> cel::Value {
    use cel::Value as Cel;
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Cel::Int(i),
            (None, Some(u)) => Cel::UInt(u),
            (None, None) => Cel::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(items) => Cel::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(map) => {
            let entries: HashMap<Key, Cel> = map
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel(v)))
                .collect();
            Cel::Map(Map {
                map: Arc::new(entries),
            })
        }
    }
}

/// Where a test stands after an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TestVerdict {
    /// Not decided yet; try again after the interval.
    Pending,
    /// Enough consecutive successes.
    Passed,
    /// Enough consecutive failures.
    Failed,
}

/// The run of identical outcomes that decides a test.
#[derive(Clone, Debug)]
pub struct Streak {
    successes_needed: u32,
    failures_allowed: Option<u32>,
    successes: u32,
    failures: u32,
}

impl Streak {
    /// A fresh streak that passes after `successes` consecutive successes (at
    /// least one) and fails after `failures` consecutive failures, if given.
    pub fn with_counts(successes: u32, failures: Option<u32>) -> Streak {
        Streak {
            successes_needed: successes.max(1),
            failures_allowed: failures.filter(|n| *n > 0),
            successes: 0,
            failures: 0,
        }
    }

    /// Record one attempt's outcome; a success breaks a run of failures and
    /// the other way round.
    pub fn record(&mut self, ok: bool) -> TestVerdict {
        if ok {
            self.failures = 0;
            self.successes = self.successes.saturating_add(1);
            if self.successes >= self.successes_needed {
                return TestVerdict::Passed;
            }
        } else {
            self.successes = 0;
            self.failures = self.failures.saturating_add(1);
            if self.failures_allowed.is_some_and(|n| self.failures >= n) {
                return TestVerdict::Failed;
            }
        }
        TestVerdict::Pending
    }
}

#[cfg(test)]
mod tests {

    use serde_json::json;

    use super::*;

    fn deployment(available: &str) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": { "name": "web", "labels": { "app.kubernetes.io/name": "web" } },
            "spec": { "replicas": 3, "paused": false },
            "status": {
                "readyReplicas": 3,
                "ratio": 0.5,
                "conditions": [
                    { "type": "Progressing", "status": "True" },
                    { "type": "Available", "status": available },
                ],
                "nothing": null,
            },
        })
    }

    #[test]
    fn conditions_see_the_object() {
        let cases = [
            (
                "object.status.conditions.exists(c, c.type == 'Available' && c.status == 'True')",
                true,
                false,
            ),
            ("object.spec.replicas == 3", true, true),
            (
                "object.status.readyReplicas >= object.spec.replicas",
                true,
                true,
            ),
            ("object.status.ratio < 1.0", true, true),
            ("!object.spec.paused", true, true),
            ("object.status.nothing == null", true, true),
            ("size(object.status.conditions) == 2", true, true),
            (
                "object.metadata.labels['app.kubernetes.io/name'] == 'web'",
                true,
                true,
            ),
            ("has(object.status.conditions)", true, true),
            ("has(object.status.missing)", false, false),
            (
                "object.status.conditions.all(c, c.status == 'True')",
                true,
                false,
            ),
        ];
        for (expression, when_available, when_not) in cases {
            let condition = Condition::compile(expression).unwrap();
            assert_eq!(
                condition.evaluate(&deployment("True")).unwrap(),
                when_available,
                "{expression}"
            );
            assert_eq!(
                condition.evaluate(&deployment("False")).unwrap(),
                when_not,
                "{expression}"
            );
        }
    }

    #[test]
    fn a_syntax_error_names_the_expression_and_column() {
        let err = Condition::compile("object.status.ready ==").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid CEL condition `object.status.ready ==`: syntax error at column 23: \
             mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', \
             'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"
        );
        let err = Condition::compile("object.status\n  .ready ==").unwrap_err();
        assert!(
            err.to_string()
                .contains("syntax error at line 2, column 12: "),
            "{err}"
        );
    }

    /// cel-interpreter 0.10's parser panicked on these instead of returning
    /// an error.
    #[test]
    fn incomplete_expressions_are_errors_not_panics() {
        for expression in ["1 +", "(", ")", ".", "/", "a ? b", "a.b(", "x == 'open"] {
            let err = Condition::compile(expression).unwrap_err();
            assert!(
                matches!(&err, CheckError::Compile { .. }),
                "{expression}: {err}"
            );
        }
    }

    #[test]
    fn a_missing_field_is_an_evaluation_error() {
        let condition = Condition::compile("object.status.missing == 1").unwrap();
        let err = condition.evaluate(&deployment("True")).unwrap_err();
        assert!(matches!(err, CheckError::Evaluate { .. }), "{err}");
        assert!(
            err.to_string()
                .starts_with("cannot evaluate CEL condition `object.status.missing == 1`: "),
            "{err}"
        );
    }

    #[test]
    fn a_non_boolean_result_is_an_error() {
        let condition = Condition::compile("object.metadata.name").unwrap();
        let err = condition.evaluate(&deployment("True")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "CEL condition `object.metadata.name` gave a string, not a bool"
        );
    }

    #[test]
    fn conditions_can_cross_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<Condition>();
    }

    fn verdicts(streak: &mut Streak, outcomes: &[bool]) -> Vec<TestVerdict> {
        outcomes.iter().map(|&ok| streak.record(ok)).collect()
    }

    #[test]
    fn one_success_passes_by_default() {
        let mut streak = Streak::with_counts(1, None);
        assert_eq!(
            verdicts(&mut streak, &[false, false, true]),
            [
                TestVerdict::Pending,
                TestVerdict::Pending,
                TestVerdict::Passed
            ]
        );
    }

    #[test]
    fn successes_must_be_consecutive() {
        let mut streak = Streak::with_counts(3, None);
        use TestVerdict::{Passed, Pending};
        assert_eq!(
            verdicts(&mut streak, &[true, true, false, true, true, true]),
            [Pending, Pending, Pending, Pending, Pending, Passed]
        );
    }

    #[test]
    fn failures_fail_only_when_counted_and_consecutive() {
        use TestVerdict::{Failed, Pending};
        let mut unlimited = Streak::with_counts(1, None);
        assert_eq!(verdicts(&mut unlimited, &[false; 50]), [Pending; 50]);

        let mut streak = Streak::with_counts(2, Some(2));
        assert_eq!(
            verdicts(&mut streak, &[false, true, false, false]),
            [Pending, Pending, Pending, Failed]
        );
        assert_eq!(
            Streak::with_counts(0, Some(0)).record(true),
            TestVerdict::Passed
        );
    }
}
