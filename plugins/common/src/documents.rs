//! Splits an input file into Kubernetes objects.
//!
//! A YAML file holds any number of documents, a JSON file any number of concatenated values.
//! Empty documents are skipped; a `List` (or any `*List` with `items`) is expanded into its items.
//! Everything else must be a mapping with a string `apiVersion` and `kind`. Problems become error
//! diagnostics naming the file, the 0-based document index and, where known, the line and column.

use serde_json::{Map, Value};
use tazuna_sdk::Diagnostic;

use crate::yaml;

/// How an input file is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// YAML, possibly several `---`-separated documents.
    Yaml,
    /// JSON, possibly several concatenated values.
    Json,
}

impl Format {
    /// `.json` files are JSON; everything else is read as YAML.
    pub fn of(name: &str) -> Self {
        if name.ends_with(".json") {
            Self::Json
        } else {
            Self::Yaml
        }
    }
}

/// A Kubernetes object read from an input.
#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    /// `<file>#<document index>`.
    pub origin: String,
    /// The object, keys in input order.
    pub fields: Map<String, Value>,
}

/// Everything read from the inputs so far.
#[derive(Debug, Default)]
pub struct Objects {
    /// The objects, in input order.
    pub objects: Vec<Object>,
    /// Information for the user, such as expanded lists.
    pub notes: Vec<Diagnostic>,
    /// Problems that make the input unusable.
    pub errors: Vec<Diagnostic>,
}

impl Objects {
    /// Reads the objects of the file `name` (as shown to the user) whose content is `text`.
    pub fn read(&mut self, name: &str, text: &str, format: Format) {
        match format {
            Format::Yaml => self.read_yaml(name, text),
            Format::Json => self.read_json(name, text),
        }
    }

    fn read_yaml(&mut self, name: &str, text: &str) {
        for document in yaml::documents(text) {
            match document {
                Ok(document) => {
                    let at = Position::LineColumn(document.line, document.column);
                    self.add(name, document.index, at, document.value);
                }
                Err(error) => {
                    let at = Position::LineColumn(error.line, error.column);
                    self.error(name, error.index, format!("{}{at}", error.message));
                }
            }
        }
    }

    fn read_json(&mut self, name: &str, text: &str) {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
        for index in 0.. {
            let start = stream.byte_offset();
            match stream.next() {
                None => break,
                Some(Ok(value)) => {
                    let at = Position::Offset(text, start);
                    self.add(name, index, at, value);
                }
                Some(Err(error)) => {
                    // serde_json's message already ends with the line and column.
                    self.error(name, index, error.to_string());
                    break;
                }
            }
        }
    }

    /// Adds one document's value: nothing for an empty one, the items of a list, or the object.
    fn add(&mut self, name: &str, index: usize, at: Position<'_>, value: Value) {
        let fields = match value {
            Value::Null => return,
            Value::Object(fields) => fields,
            other => {
                let found = describe(&other);
                let message = format!("expected a Kubernetes object, found {found}{at}");
                return self.error(name, index, message);
            }
        };
        let kind = match identity(&fields) {
            Ok((_, kind)) => kind,
            Err(problem) => return self.error(name, index, format!("{problem}{at}")),
        };
        if !is_list(kind, &fields) {
            let origin = format!("{name}#{index}");
            self.objects.push(Object { origin, fields });
            return;
        }
        self.expand(name, index, at, fields);
    }

    fn expand(&mut self, name: &str, index: usize, at: Position<'_>, mut list: Map<String, Value>) {
        let kind = list
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("List")
            .to_owned();
        let items = match list.remove("items") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items,
            Some(other) => {
                let found = describe(&other);
                let message = format!("`items` of the `{kind}` must be a list, found {found}{at}");
                return self.error(name, index, message);
            }
        };
        let count = items.len();
        for (item_index, item) in items.into_iter().enumerate() {
            let fields = match item {
                Value::Object(fields) => fields,
                other => {
                    let found = describe(&other);
                    let message = format!(
                        "item {item_index}: expected a Kubernetes object, found {found}{at}"
                    );
                    self.error(name, index, message);
                    continue;
                }
            };
            if let Err(problem) = identity(&fields) {
                self.error(name, index, format!("item {item_index}: {problem}{at}"));
                continue;
            }
            let origin = format!("{name}#{index}");
            self.objects.push(Object { origin, fields });
        }
        let objects = if count == 1 { "object" } else { "objects" };
        let note = format!("{name}: document {index}: expanded `{kind}` into {count} {objects}");
        self.notes.push(Diagnostic::info(note).at(name));
    }

    fn error(&mut self, name: &str, index: usize, message: String) {
        let message = format!("{name}: document {index}: {message}");
        self.errors.push(Diagnostic::error(message).at(name));
    }
}

/// Where in the file a document starts, for messages.
#[derive(Clone, Copy)]
enum Position<'a> {
    LineColumn(usize, usize),
    /// A byte offset into the text, turned into a line and column only when printed.
    Offset(&'a str, usize),
}

impl std::fmt::Display for Position<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (line, column) = match *self {
            Self::LineColumn(line, column) => (line, column),
            Self::Offset(text, offset) => {
                let skipped = text[offset..].len() - text[offset..].trim_start().len();
                let before = &text[..offset + skipped];
                let line_start = before.rfind('\n').map_or(0, |at| at + 1);
                let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
                (line, before[line_start..].chars().count() + 1)
            }
        };
        write!(f, " at line {line} column {column}")
    }
}

/// The object's `apiVersion` and `kind`, or what is wrong with them.
fn identity(fields: &Map<String, Value>) -> Result<(&str, &str), String> {
    let field = |key: &str| match fields.get(key) {
        None | Some(Value::Null) => Err(format!("the object has no `{key}`")),
        Some(Value::String(text)) if !text.is_empty() => Ok(text.as_str()),
        Some(Value::String(_)) => Err(format!("the object's `{key}` is empty")),
        Some(other) => Err(format!(
            "the object's `{key}` must be a string, found {}",
            describe(other)
        )),
    };
    Ok((field("apiVersion")?, field("kind")?))
}

/// `kind: List`, or a typed list such as `ConfigMapList` that carries `items`.
fn is_list(kind: &str, fields: &Map<String, Value>) -> bool {
    kind == "List"
        || (kind.ends_with("List") && matches!(fields.get("items"), Some(Value::Array(_))))
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(name: &str, text: &str) -> Objects {
        let mut objects = Objects::default();
        objects.read(name, text, Format::of(name));
        objects
    }

    fn messages(diagnostics: &[Diagnostic]) -> Vec<&str> {
        diagnostics.iter().map(|d| d.message.as_str()).collect()
    }

    #[test]
    fn documents_are_split_and_empty_ones_skipped() {
        let text = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\nnull\n---\n\
                    apiVersion: v1\nkind: Secret\nmetadata: {name: b}\n...\n";
        let objects = read("dir/a.yaml", text);
        assert!(objects.errors.is_empty(), "{:?}", objects.errors);
        let origins: Vec<_> = objects.objects.iter().map(|o| o.origin.as_str()).collect();
        assert_eq!(origins, ["dir/a.yaml#0", "dir/a.yaml#3"]);
        assert_eq!(objects.objects[1].fields["kind"], "Secret");
    }

    #[test]
    fn json_streams_are_read() {
        let text = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}"#;
        let objects = read("a.json", text);
        assert!(objects.errors.is_empty());
        assert_eq!(objects.objects.len(), 2);
        assert_eq!(objects.objects[1].origin, "a.json#1");
    }

    #[test]
    fn a_json_byte_order_mark_is_skipped() {
        let objects = read(
            "a.json",
            "\u{feff}{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\"}",
        );
        assert!(objects.errors.is_empty(), "{:?}", objects.errors);
        assert_eq!(objects.objects.len(), 1);
    }

    #[test]
    fn lists_are_expanded_with_a_note() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n\
                    - {apiVersion: v1, kind: Secret, metadata: {name: b}}\n---\n\
                    apiVersion: v1\nkind: ConfigMapList\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n";
        let objects = read("list.yaml", text);
        assert!(objects.errors.is_empty(), "{:?}", objects.errors);
        let kinds: Vec<_> = objects
            .objects
            .iter()
            .map(|o| o.fields["kind"].clone())
            .collect();
        assert_eq!(
            kinds,
            [json!("ConfigMap"), json!("Secret"), json!("ConfigMap")]
        );
        assert_eq!(
            messages(&objects.notes),
            [
                "list.yaml: document 0: expanded `List` into 2 objects",
                "list.yaml: document 1: expanded `ConfigMapList` into 1 object",
            ]
        );
        assert_eq!(objects.notes[0].severity, tazuna_sdk::Severity::Info);
        assert_eq!(objects.objects[2].origin, "list.yaml#1");
    }

    #[test]
    fn a_kind_ending_in_list_without_items_is_an_object() {
        let objects = read(
            "a.yaml",
            "apiVersion: example.com/v1\nkind: AllowList\nspec: {}\n",
        );
        assert_eq!(objects.objects.len(), 1);
        assert!(objects.notes.is_empty());
    }

    #[test]
    fn syntax_errors_name_file_document_and_position() {
        let text = "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nkind: Secret\n---\n\
                    apiVersion: v1\n  kind: [\n";
        let objects = read("install.yaml", text);
        assert_eq!(
            messages(&objects.errors),
            [
                "install.yaml: document 2: mapping values are not allowed in this context at line 8 column 7"
            ]
        );
        assert_eq!(objects.errors[0].path.as_deref(), Some("install.yaml"));
        assert_eq!(objects.objects.len(), 2);
    }

    #[test]
    fn json_syntax_errors_name_file_and_document() {
        let objects = read(
            "a.json",
            "{\"apiVersion\": \"v1\", \"kind\": \"A\"}\n{\"kind\": }\n",
        );
        assert_eq!(
            messages(&objects.errors),
            ["a.json: document 1: expected value at line 2 column 10"]
        );
    }

    #[test]
    fn shape_errors_name_file_document_and_position() {
        let text = "- a\n- b\n---\napiVersion: v1\nmetadata: {name: x}\n---\n\n  kind: Pod\n  apiVersion: 1\n";
        let objects = read("bad.yaml", text);
        assert_eq!(
            messages(&objects.errors),
            [
                "bad.yaml: document 0: expected a Kubernetes object, found a list at line 1 column 1",
                "bad.yaml: document 1: the object has no `kind` at line 4 column 1",
                "bad.yaml: document 2: the object's `apiVersion` must be a string, found a number at line 8 column 3",
            ]
        );
        let objects = read("bad.json", "  \n  [1]");
        assert_eq!(
            messages(&objects.errors),
            ["bad.json: document 0: expected a Kubernetes object, found a list at line 2 column 3"]
        );
    }

    #[test]
    fn bad_list_items_are_errors() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- 3\n- {kind: ConfigMap}\n";
        let objects = read("l.yaml", text);
        assert_eq!(
            messages(&objects.errors),
            [
                "l.yaml: document 0: item 0: expected a Kubernetes object, found a number at line 1 column 1",
                "l.yaml: document 0: item 1: the object has no `apiVersion` at line 1 column 1",
            ]
        );
    }
}
