//! A plugin's typed config: parsing the JSON the host sends, and describing its schema.
//!
//! The host passes a manifest's per-type block as JSON text. Parse failures become error
//! diagnostics whose `path` is a JSON pointer (`/data/0`) into that block, so the host can point
//! at the offending line of `tazuna.yaml`.

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_path_to_error::Segment;

use crate::Diagnostic;

/// The config of a plugin that takes none: only `{}` is accepted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoConfig {}

/// Parses `json` into `T`, or explains with one error diagnostic why it does not fit.
///
/// Blank text counts as `{}`: the host sends `{}` for an absent block, and an older host might
/// send nothing.
pub(crate) fn parse<T: DeserializeOwned>(json: &str) -> Result<T, Vec<Diagnostic>> {
    let json = if json.trim().is_empty() { "{}" } else { json };
    let mut deserializer = serde_json::Deserializer::from_str(json);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        vec![diagnostic(
            message_without_position(error.inner()),
            json_pointer(error.path()),
        )]
    })?;
    deserializer
        .end()
        .map_err(|error| vec![diagnostic(message_without_position(&error), None)])?;
    Ok(value)
}

fn diagnostic(message: String, pointer: Option<String>) -> Diagnostic {
    let diagnostic = Diagnostic::error(message);
    match pointer {
        Some(pointer) => diagnostic.at(pointer),
        None => diagnostic,
    }
}

/// The JSON schema of `T`, as JSON text.
pub(crate) fn schema_of<T: JsonSchema>() -> String {
    schemars::schema_for!(T).as_value().to_string()
}

/// Renders a `serde_path_to_error` path as an RFC 6901 JSON pointer; `None` for the root.
fn json_pointer(path: &serde_path_to_error::Path) -> Option<String> {
    let mut pointer = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => {
                pointer.push('/');
                pointer.push_str(&index.to_string());
            }
            Segment::Map { key } | Segment::Enum { variant: key } => {
                pointer.push('/');
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
            }
            Segment::Unknown => {}
        }
    }
    (!pointer.is_empty()).then_some(pointer)
}

/// serde_json appends ` at line L column C`; the config is machine-written JSON on one line, so
/// the path says more than the position does.
fn message_without_position(error: &serde_json::Error) -> String {
    let message = error.to_string();
    let suffix = format!(" at line {} column {}", error.line(), error.column());
    match message.strip_suffix(&suffix) {
        Some(stripped) => stripped.to_owned(),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Example {
        data: BTreeMap<String, String>,
        replicas: Option<u32>,
        #[serde(default)]
        ports: Vec<u16>,
    }

    fn error_of(json: &str) -> Diagnostic {
        let mut diagnostics = parse::<Example>(json).unwrap_err();
        assert_eq!(diagnostics.len(), 1);
        diagnostics.remove(0)
    }

    #[test]
    fn wrong_type_points_at_the_field() {
        let diagnostic = error_of(r#"{"data": {"a": 1}}"#);
        assert_eq!(diagnostic.path.as_deref(), Some("/data/a"));
        assert_eq!(
            diagnostic.message,
            "invalid type: integer `1`, expected a string"
        );
        assert!(diagnostic.is_error());
    }

    #[test]
    fn sequence_index_and_escaped_keys() {
        let diagnostic = error_of(r#"{"data": {}, "ports": [80, 70000]}"#);
        assert_eq!(diagnostic.path.as_deref(), Some("/ports/1"));
        let diagnostic = error_of(r#"{"data": {"a/b~c": []}}"#);
        assert_eq!(diagnostic.path.as_deref(), Some("/data/a~1b~0c"));
    }

    #[test]
    fn missing_field_is_reported_at_the_root() {
        let diagnostic = error_of("{}");
        assert_eq!(diagnostic.path, None);
        assert_eq!(diagnostic.message, "missing field `data`");
    }

    #[test]
    fn unknown_field_is_an_error() {
        let diagnostic = error_of(r#"{"data": {}, "replica": 2}"#);
        assert!(diagnostic.message.starts_with("unknown field `replica`"));
    }

    #[test]
    fn blank_config_counts_as_empty_object() {
        assert_eq!(parse::<NoConfig>("").unwrap(), NoConfig {});
        assert_eq!(parse::<NoConfig>(" {} ").unwrap(), NoConfig {});
        assert!(parse::<NoConfig>(r#"{"x": 1}"#).is_err());
    }

    #[test]
    fn trailing_text_is_an_error() {
        let diagnostics = parse::<NoConfig>("{} {}").unwrap_err();
        assert_eq!(diagnostics[0].message, "trailing characters");
    }

    #[test]
    fn schema_describes_the_fields() {
        let schema: serde_json::Value = serde_json::from_str(&schema_of::<Example>()).unwrap();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], serde_json::json!(["data"]));
        assert!(schema["properties"]["ports"].is_object());
    }
}
