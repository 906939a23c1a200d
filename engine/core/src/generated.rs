//! Fields a render generates anew each time: helm's `randAlphaNum`, `genCA`,
//! `uuidv4` or `now`, which a chart's `lookup` guard keeps stable under
//! `helm upgrade` but which `helm template`, having no cluster, draws again on
//! every run.
//!
//! The engine renders such sources twice with identical inputs (those whose
//! plugin declares its render not deterministic, through the WIT
//! `render-traits`; see `tazuna_gotmpl::may_draw_anew` for how the helm and
//! helmfile plugins tell);
//! [`differences`] names the fields that came out differently, and the apply
//! side keeps their live values, as the chart's guard would have.

use std::fmt;

use serde_json::Value;

/// One step of a [`Field`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Step {
    /// A key of an object.
    Key(String),
    /// An index of an array.
    Index(usize),
}

/// Where a value sits in an object, such as `data.password`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Field(pub Vec<Step>);

impl fmt::Display for Field {
    /// `data.password`, `spec.containers[0].env[1].value`, and keys that are
    /// not plain words quoted: `metadata.annotations["checksum/secret"]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            match step {
                Step::Key(key)
                    if !key.is_empty()
                        && key
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') =>
                {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(key)?;
                }
                Step::Key(key) => write!(f, "[{key:?}]")?,
                Step::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

impl Field {
    /// The value at this field of `value`.
    pub fn get<'a>(&self, value: &'a Value) -> Option<&'a Value> {
        self.0.iter().try_fold(value, |value, step| match step {
            Step::Key(key) => value.get(key),
            Step::Index(index) => value.get(index),
        })
    }

    /// Put `new` at this field of `value`; `false` when the path to it is
    /// not there.
    pub fn set(&self, value: &mut Value, new: Value) -> bool {
        let mut at = value;
        for step in &self.0 {
            let next = match step {
                Step::Key(key) => at.get_mut(key),
                Step::Index(index) => at.get_mut(index),
            };
            match next {
                Some(next) => at = next,
                None => return false,
            }
        }
        *at = new;
        true
    }
}

/// The fields at which `a` and `b` differ, deepest first where both sides
/// have the same shape: two objects differ at the keys they do not share and
/// inside the ones they do; arrays of one length, element by element;
/// anything else, as a whole.
pub fn differences(a: &Value, b: &Value) -> Vec<Field> {
    let mut out = Vec::new();
    walk(a, b, &mut Vec::new(), &mut out);
    out
}

fn walk(a: &Value, b: &Value, at: &mut Vec<Step>, out: &mut Vec<Field>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                at.push(Step::Key(key.clone()));
                match (x.get(key), y.get(key)) {
                    (Some(x), Some(y)) => walk(x, y, at, out),
                    _ => out.push(Field(at.clone())),
                }
                at.pop();
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (index, (x, y)) in x.iter().zip(y).enumerate() {
                at.push(Step::Index(index));
                walk(x, y, at, out);
                at.pop();
            }
        }
        _ if a == b => {}
        _ => out.push(Field(at.clone())),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_the_fields_that_came_out_differently_are_named() {
        let first = json!({
            "kind": "Secret", "metadata": { "name": "grafana", "annotations": { "checksum/secret": "aa" } },
            "data": { "admin-user": "YWRtaW4=", "admin-password": "Zmlyc3Q=" },
            "list": [1, { "x": "a" }],
        });
        let second = json!({
            "kind": "Secret", "metadata": { "name": "grafana", "annotations": { "checksum/secret": "bb" } },
            "data": { "admin-user": "YWRtaW4=", "admin-password": "c2Vjb25k" },
            "list": [1, { "x": "b" }],
        });
        let fields: Vec<String> = differences(&first, &second)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            fields,
            [
                "data.admin-password",
                "list[1].x",
                r#"metadata.annotations["checksum/secret"]"#
            ]
        );
        assert!(differences(&first, &first).is_empty());
    }

    #[test]
    fn a_field_is_read_and_written_where_it_is() {
        let mut value = json!({ "data": { "k": "old" }, "items": [{ "v": 1 }] });
        let field = Field(vec![Step::Key("data".into()), Step::Key("k".into())]);
        assert_eq!(field.get(&value), Some(&json!("old")));
        assert!(field.set(&mut value, json!("new")));
        assert_eq!(value["data"]["k"], "new");
        let item = Field(vec![
            Step::Key("items".into()),
            Step::Index(0),
            Step::Key("v".into()),
        ]);
        assert!(item.set(&mut value, json!(2)));
        assert_eq!(value["items"][0]["v"], 2);
        let missing = Field(vec![Step::Key("nope".into()), Step::Key("k".into())]);
        assert!(!missing.set(&mut value, json!(0)));
    }
}
