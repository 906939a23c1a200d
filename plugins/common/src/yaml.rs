//! Loads YAML documents straight into JSON values, reading scalars the way `kubectl` does.
//!
//! `kubectl` converts YAML with a YAML 1.1 resolver, so an unquoted `0644` is the octal number
//! 420, `yes` and `on` are `true`, and `1_000` is 1000. A YAML 1.2 loader would turn
//! `defaultMode: 0644` into a string the API server rejects. This loader applies the YAML 1.1 rules
//! to plain scalars only; quoted and block scalars are always strings, and mapping keys are always
//! the key's text. Anchors, aliases and merge keys (`<<`) are expanded.
//!
//! Values go straight from parser events into `serde_json::Value`, without an intermediate YAML
//! tree, since the render's output is JSON anyway.

use std::collections::HashMap;

use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::{Marker, ScanError, TScalarStyle};

/// One document of a YAML stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// 0-based position in the stream, counting empty documents.
    pub index: usize,
    /// Line where the document's root node starts, 1-based.
    pub line: usize,
    /// Column where the document's root node starts, 1-based.
    pub column: usize,
    /// The document's content; `Null` for an empty document.
    pub value: Value,
}

/// Why a document could not be read. Reading stops at the first error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// 0-based position of the document in the stream.
    pub index: usize,
    /// What is wrong, without the position.
    pub message: String,
    /// 1-based line of the problem.
    pub line: usize,
    /// 1-based column of the problem.
    pub column: usize,
}

/// The documents of `text`, one at a time.
///
/// A leading byte order mark is skipped, as editors on Windows like to write one.
pub fn documents(text: &str) -> Documents<'_> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    Documents {
        parser: Parser::new_from_str(text),
        next_index: 0,
        finished: false,
    }
}

/// Iterator over the documents of a YAML stream; see [`documents`].
pub struct Documents<'a> {
    parser: Parser<std::str::Chars<'a>>,
    next_index: usize,
    finished: bool,
}

impl Iterator for Documents<'_> {
    type Item = Result<Document, LoadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.finished {
            return None;
        }
        let document = self.next_document();
        if !matches!(document, Some(Ok(_))) {
            self.finished = true;
        }
        document
    }
}

impl Documents<'_> {
    fn next_document(&mut self) -> Option<Result<Document, LoadError>> {
        let index = self.next_index;
        loop {
            let (event, _) = match self.parser.next_token() {
                Ok(next) => next,
                Err(error) => return Some(Err(scan_error(index, &error))),
            };
            match event {
                Event::StreamEnd => return None,
                Event::DocumentStart => break,
                _ => {}
            }
        }
        self.next_index += 1;
        let mut builder = Builder::default();
        loop {
            let (event, mark) = match self.parser.next_token() {
                Ok(next) => next,
                Err(error) => return Some(Err(scan_error(index, &error))),
            };
            if let Event::DocumentEnd = event {
                let (value, (line, column)) = builder.root.unwrap_or((Value::Null, position(mark)));
                return Some(Ok(Document {
                    index,
                    line,
                    column,
                    value,
                }));
            }
            if let Err(message) = builder.event(event, mark) {
                return Some(Err(LoadError {
                    index,
                    message,
                    line: mark.line(),
                    column: mark.col() + 1,
                }));
            }
        }
    }
}

/// A marker's 1-based line and column.
fn position(mark: Marker) -> (usize, usize) {
    (mark.line(), mark.col() + 1)
}

/// yaml-rust2 marks a block mapping where it recognised it, at the first `:`; the mapping really
/// starts at its first key, which is earlier.
fn earlier(start: &mut (usize, usize), key: Marker) {
    if position(key) < *start {
        *start = position(key);
    }
}

fn scan_error(index: usize, error: &ScanError) -> LoadError {
    LoadError {
        index,
        message: error.info().to_owned(),
        line: error.marker().line(),
        column: error.marker().col() + 1,
    }
}

/// A mapping key waiting for its value.
enum Key {
    Name(String),
    /// The merge key `<<`: the value's entries are merged in when the mapping ends.
    Merge,
}

/// A collection whose end has not been seen yet.
enum Open {
    Sequence(Vec<Value>),
    Mapping {
        entries: Map<String, Value>,
        key: Option<Key>,
        merges: Vec<Value>,
    },
}

/// Builds one document's value from parser events.
#[derive(Default)]
struct Builder {
    /// Open collections, each with its anchor id and where it starts.
    open: Vec<(Open, usize, (usize, usize))>,
    anchors: HashMap<usize, Value>,
    root: Option<(Value, (usize, usize))>,
}

impl Builder {
    fn event(&mut self, event: Event, mark: Marker) -> Result<(), String> {
        match event {
            Event::Scalar(text, style, anchor, tag) => {
                if let Some((
                    Open::Mapping {
                        key: key @ None, ..
                    },
                    _,
                    start,
                )) = self.open.last_mut()
                {
                    earlier(start, mark);
                    let is_merge = style == TScalarStyle::Plain && text == "<<" && tag.is_none();
                    *key = Some(if is_merge {
                        Key::Merge
                    } else {
                        Key::Name(text.clone())
                    });
                    if anchor != 0 {
                        self.anchors.insert(anchor, Value::String(text));
                    }
                    return Ok(());
                }
                let value = scalar(text, style, tag.as_ref());
                self.complete(value, anchor, position(mark))
            }
            Event::Alias(anchor) => {
                let Some(value) = self.anchors.get(&anchor).cloned() else {
                    return Err("unknown anchor".to_owned());
                };
                if let Some((
                    Open::Mapping {
                        key: key @ None, ..
                    },
                    _,
                    start,
                )) = self.open.last_mut()
                {
                    earlier(start, mark);
                    let name = match value {
                        Value::String(name) => name,
                        Value::Null => "null".to_owned(),
                        Value::Bool(flag) => flag.to_string(),
                        Value::Number(number) => number.to_string(),
                        Value::Array(_) | Value::Object(_) => {
                            return Err("mapping keys must be scalars, not collections".to_owned());
                        }
                    };
                    *key = Some(Key::Name(name));
                    return Ok(());
                }
                self.complete(value, 0, position(mark))
            }
            Event::SequenceStart(anchor, _) => {
                self.refuse_collection_key()?;
                self.open
                    .push((Open::Sequence(Vec::new()), anchor, position(mark)));
                Ok(())
            }
            Event::MappingStart(anchor, _) => {
                self.refuse_collection_key()?;
                let mapping = Open::Mapping {
                    entries: Map::new(),
                    key: None,
                    merges: Vec::new(),
                };
                self.open.push((mapping, anchor, position(mark)));
                Ok(())
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let Some((open, anchor, at)) = self.open.pop() else {
                    return Err("unbalanced collection end".to_owned());
                };
                let value = match open {
                    Open::Sequence(items) => Value::Array(items),
                    Open::Mapping {
                        entries, merges, ..
                    } => Value::Object(merge(entries, merges)?),
                };
                self.complete(value, anchor, at)
            }
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart
            | Event::DocumentEnd => Ok(()),
        }
    }

    fn refuse_collection_key(&self) -> Result<(), String> {
        match self.open.last() {
            Some((Open::Mapping { key: None, .. }, ..)) => {
                Err("mapping keys must be scalars, not collections".to_owned())
            }
            _ => Ok(()),
        }
    }

    /// Places a finished value, which started at `at`, into the collection that holds it.
    fn complete(&mut self, value: Value, anchor: usize, at: (usize, usize)) -> Result<(), String> {
        if anchor != 0 {
            self.anchors.insert(anchor, value.clone());
        }
        match self.open.last_mut() {
            None => self.root = Some((value, at)),
            Some((Open::Sequence(items), ..)) => items.push(value),
            Some((
                Open::Mapping {
                    entries,
                    key,
                    merges,
                },
                ..,
            )) => match key.take() {
                Some(Key::Name(name)) => {
                    entries.insert(name, value);
                }
                Some(Key::Merge) => merges.push(value),
                None => return Err("mapping value without a key".to_owned()),
            },
        }
        Ok(())
    }
}

/// Applies merge keys: explicit entries win, then earlier merged mappings over later ones.
fn merge(
    mut entries: Map<String, Value>,
    merges: Vec<Value>,
) -> Result<Map<String, Value>, String> {
    let mut add = |source: Map<String, Value>| {
        for (key, value) in source {
            entries.entry(key).or_insert(value);
        }
    };
    for source in merges {
        match source {
            Value::Object(map) => add(map),
            Value::Array(items) => {
                for item in items {
                    let Value::Object(map) = item else {
                        return Err("a merge key (`<<`) needs mappings".to_owned());
                    };
                    add(map);
                }
            }
            _ => return Err("a merge key (`<<`) needs a mapping or a list of mappings".to_owned()),
        }
    }
    Ok(entries)
}

/// The value of a scalar node.
fn scalar(text: String, style: TScalarStyle, tag: Option<&Tag>) -> Value {
    let core_tag = tag
        .filter(|tag| tag.handle == "tag:yaml.org,2002:")
        .map(|tag| tag.suffix.as_str());
    match core_tag {
        Some("str" | "binary" | "timestamp") => return Value::String(text),
        Some("null") => return Value::Null,
        _ => {}
    }
    if style == TScalarStyle::Plain || core_tag.is_some() {
        plain(text)
    } else {
        Value::String(text)
    }
}

/// Resolves a plain scalar with the YAML 1.1 rules `kubectl` uses.
pub fn plain(text: String) -> Value {
    match text.as_str() {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Value::Bool(true);
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Value::Bool(false);
        }
        _ => {}
    }
    let could_be_number = matches!(text.as_bytes()[0], b'+' | b'-' | b'.' | b'0'..=b'9');
    match could_be_number.then(|| number(&text)).flatten() {
        Some(number) => Value::Number(number),
        None => Value::String(text),
    }
}

/// A YAML 1.1 integer (decimal, `0x` hex, `0o` or leading-zero octal, `0b` binary, with `_`
/// separators) or float. Infinity and NaN have no JSON form and stay strings.
fn number(text: &str) -> Option<Number> {
    let digits = if text.contains('_') {
        std::borrow::Cow::Owned(text.replace('_', ""))
    } else {
        std::borrow::Cow::Borrowed(text)
    };
    integer(&digits).or_else(|| float(&digits))
}

fn integer(text: &str) -> Option<Number> {
    let (negative, unsigned) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let (radix, digits) = match unsigned.as_bytes() {
        [b'0', b'x' | b'X', ..] => (16, &unsigned[2..]),
        [b'0', b'o' | b'O', ..] => (8, &unsigned[2..]),
        [b'0', b'b' | b'B', ..] => (2, &unsigned[2..]),
        [b'0', _, ..] => (8, &unsigned[1..]),
        _ => (10, unsigned),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let magnitude = u64::from_str_radix(digits, radix).ok()?;
    if !negative {
        return Some(Number::from(magnitude));
    }
    let value = 0i64.checked_sub_unsigned(magnitude)?;
    Some(Number::from(value))
}

fn float(text: &str) -> Option<Number> {
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let (whole, fraction) = match mantissa.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (mantissa, None),
    };
    let all_digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match fraction {
        None => !whole.is_empty() && all_digits(whole),
        Some(fraction) if whole.is_empty() => !fraction.is_empty() && all_digits(fraction),
        Some(fraction) => all_digits(whole) && all_digits(fraction),
    };
    let exponent_ok = exponent.is_none_or(|exponent| {
        let exponent = exponent.strip_prefix(['-', '+']).unwrap_or(exponent);
        !exponent.is_empty() && all_digits(exponent)
    });
    if !(mantissa_ok && exponent_ok) {
        return None;
    }
    text.parse::<f64>().ok().and_then(Number::from_f64)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn load(text: &str) -> Vec<Value> {
        documents(text).map(|d| d.unwrap().value).collect()
    }

    fn one(text: &str) -> Value {
        let mut all = load(text);
        assert_eq!(all.len(), 1, "{all:?}");
        all.remove(0)
    }

    #[test]
    fn plain_scalars_follow_yaml_1_1() {
        let value = one(
            "octal: 0644\nhex: 0x1F\nbin: 0b101\nsep: 1_000\nneg: -12\nbig: 18446744073709551615\n\
             yes: yes\noff: off\ny: n\nnull1: ~\nnull2:\nfloat: 1.5\nexp: 1e3\ndot: .5\n\
             nine: 09\ninf: .inf\nversion: 1.2.3\nword: hello\n",
        );
        assert_eq!(
            value,
            json!({
                "octal": 420, "hex": 31, "bin": 5, "sep": 1000, "neg": -12,
                "big": 18446744073709551615u64, "yes": true, "off": false, "y": false,
                "null1": null, "null2": null, "float": 1.5, "exp": 1000.0, "dot": 0.5,
                "nine": 9.0, "inf": ".inf", "version": "1.2.3", "word": "hello",
            })
        );
    }

    #[test]
    fn quoted_and_block_scalars_stay_strings() {
        let value = one("a: '0644'\nb: \"yes\"\nc: |\n  10\nd: !!str 12\ne: !!int 0x10\n");
        assert_eq!(
            value,
            json!({"a": "0644", "b": "yes", "c": "10\n", "d": "12", "e": 16})
        );
    }

    #[test]
    fn key_order_is_kept() {
        let value = one("z: 1\na: 2\nm: 3\n");
        let keys: Vec<_> = value.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["z", "a", "m"]);
    }

    #[test]
    fn anchors_aliases_and_merge_keys_expand() {
        let value = one("base: &base {a: 1, b: 2}\nother: &o {c: 3}\n\
             one: {<<: *base, b: 20}\nmany: {<<: [*o, *base], a: 10}\nlist: [*o, *o]\n");
        assert_eq!(value["one"], json!({"b": 20, "a": 1}));
        assert_eq!(value["many"], json!({"a": 10, "c": 3, "b": 2}));
        assert_eq!(value["list"], json!([{"c": 3}, {"c": 3}]));
    }

    #[test]
    fn documents_are_counted_including_empty_ones() {
        let docs: Vec<_> = documents("a: 1\n---\n---\n# only a comment\n---\nb: 2\n")
            .map(Result::unwrap)
            .collect();
        let summary: Vec<_> = docs.iter().map(|d| (d.index, d.value.clone())).collect();
        assert_eq!(
            summary,
            [
                (0, json!({"a": 1})),
                (1, Value::Null),
                (2, Value::Null),
                (3, json!({"b": 2}))
            ]
        );
        assert_eq!(docs[3].line, 6);
        assert!(load("").is_empty());
    }

    #[test]
    fn syntax_error_names_document_and_position() {
        let text = "a: 1\n---\nb: 2\n---\nkind: x\n  bad: [\n";
        let results: Vec<_> = documents(text).collect();
        assert_eq!(results.len(), 3);
        let error = results[2].clone().unwrap_err();
        assert_eq!(error.index, 2);
        assert_eq!((error.line, error.column), (6, 6), "{error:?}");
        assert!(
            error.message.contains("mapping values are not allowed"),
            "{error:?}"
        );
    }

    #[test]
    fn byte_order_mark_and_crlf_line_ends_are_accepted() {
        let value =
            one("\u{feff}apiVersion: v1\r\nkind: ConfigMap\r\ndata:\r\n  a: |\r\n    x\r\n");
        assert_eq!(
            value,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "x\n"}})
        );
    }

    #[test]
    fn collection_keys_are_refused() {
        let error = documents("? [a, b]\n: c\n").next().unwrap().unwrap_err();
        assert!(error.message.contains("mapping keys must be scalars"));
    }
}
