//! What a manifest's config names: every string value in it, at any depth.
//! The endpoints a tool may reach, the artifacts a plugin may pull and the
//! secret references the user wrote are all read from these.

use serde_json::Value;

/// Every string value of `value`, depth first.
pub(crate) fn strings_in(value: &Value) -> Vec<&str> {
    fn walk<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
        match value {
            Value::String(text) => out.push(text),
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            Value::Object(map) => map.values().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_found_at_any_depth() {
        let value = serde_json::json!({"a": "x", "b": [1, "y", {"c": "z"}], "d": null});
        assert_eq!(strings_in(&value), ["x", "y", "z"]);
    }
}
