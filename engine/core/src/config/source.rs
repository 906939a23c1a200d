//! One YAML document as read from disk, with a position index over it.
//!
//! serde_yaml forgets where a value came from once it is a `Value`, so this module walks the
//! same text with yaml-rust2's event parser and records, for every path such as
//! `spec.manifests[3].dependsOn[0]`, where its key and its value start. Errors found later on
//! the typed model look their path up here to point at a line and column.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use yaml_rust2::Event;
use yaml_rust2::parser::{MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use super::error::{Location, Span};

/// One step of a path into a YAML document.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Seg {
    /// A mapping key; shared, since every path below it repeats it.
    Key(std::sync::Arc<str>),
    Index(usize),
}

/// A path into a YAML document, printed as `spec.manifests[3].dependsOn[0]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct YamlPath(pub(crate) Vec<Seg>);

impl YamlPath {
    pub(crate) fn root() -> Self {
        Self(Vec::new())
    }

    pub(crate) fn key(&self, key: &str) -> Self {
        let mut segs = self.0.clone();
        segs.push(Seg::Key(std::sync::Arc::from(key)));
        Self(segs)
    }

    pub(crate) fn index(&self, index: usize) -> Self {
        let mut segs = self.0.clone();
        segs.push(Seg::Index(index));
        Self(segs)
    }

    pub(crate) fn parent(&self) -> Self {
        let mut segs = self.0.clone();
        segs.pop();
        Self(segs)
    }

    pub(crate) fn last_key(&self) -> Option<&str> {
        self.0.iter().rev().find_map(|seg| match seg {
            Seg::Key(key) => Some(&**key),
            Seg::Index(_) => None,
        })
    }
}

impl fmt::Display for YamlPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Key(key) if i == 0 => write!(f, "{key}")?,
                Seg::Key(key) => write!(f, ".{key}")?,
                Seg::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// Where something starts in the text: 1-based line, 0-based character column, and how many
/// characters it covers on that line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Mark {
    line: usize,
    col: usize,
    width: usize,
}

#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    key: Option<Mark>,
    value: Option<Mark>,
}

/// The text of one file and the position of every key and value in it.
#[derive(Debug)]
pub(crate) struct Source {
    /// The path as shown to the user (relative when the user gave a relative path).
    pub(crate) file: PathBuf,
    text: String,
    index: HashMap<YamlPath, Entry>,
    /// The text's lines, shared by every span that quotes one.
    lines: Vec<std::sync::Arc<str>>,
}

impl Source {
    pub(crate) fn new(file: PathBuf, text: String) -> Self {
        let index = build_index(&text);
        let lines = text.lines().map(std::sync::Arc::from).collect();
        Self {
            file,
            text,
            index,
            lines,
        }
    }

    /// The text as parsed (after `{{ .Environment }}` substitution).
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The span of the value at `path`, or of its nearest ancestor that the index knows.
    pub(crate) fn value_span(&self, path: &YamlPath) -> Box<Span> {
        let mut path = path.clone();
        loop {
            if let Some(mark) = self.index.get(&path).and_then(|e| e.value.or(e.key)) {
                return self.span_at_mark(mark);
            }
            if path.0.pop().is_none() {
                return self.span_at(1, 1, 1);
            }
        }
    }

    /// The span of the key that leads to `path`; the value's span when `path` ends in an index.
    pub(crate) fn key_span(&self, path: &YamlPath) -> Box<Span> {
        match self.index.get(path).and_then(|e| e.key) {
            Some(mark) => self.span_at_mark(mark),
            None => self.value_span(path),
        }
    }

    /// A span at a 1-based line and column, as serde_yaml reports syntax errors.
    pub(crate) fn span_at(&self, line: usize, column: usize, width: usize) -> Box<Span> {
        let line = line.max(1);
        let source_line = self
            .lines
            .get(line - 1)
            .cloned()
            .unwrap_or_else(|| "".into());
        Box::new(Span {
            location: Location {
                file: self.file.clone(),
                line,
                column: column.max(1),
            },
            width: width.max(1),
            source_line,
        })
    }

    fn span_at_mark(&self, mark: Mark) -> Box<Span> {
        self.span_at(mark.line, mark.col + 1, mark.width)
    }
}

/// The deepest nesting the position index describes.
const MAX_INDEX_DEPTH: usize = 64;

fn build_index(text: &str) -> HashMap<YamlPath, Entry> {
    let mut builder = IndexBuilder {
        chars: text.chars().collect(),
        stack: Vec::new(),
        index: HashMap::new(),
        skip_depth: 0,
    };
    // A document that yaml-rust2 cannot parse still gets whatever was indexed before the
    // error; serde_yaml reports the syntax error itself.
    let _ = Parser::new_from_str(text).load(&mut builder, false);
    builder.index
}

enum Frame {
    Mapping {
        path: YamlPath,
        /// The key just read, waiting for its value; `None` while a key is expected.
        pending: Option<(String, Mark)>,
        /// Set once the first key is seen, so that a block mapping points at that key.
        first_key: bool,
    },
    Sequence {
        path: YamlPath,
        next: usize,
    },
}

struct IndexBuilder {
    chars: Vec<char>,
    stack: Vec<Frame>,
    index: HashMap<YamlPath, Entry>,
    /// Depth inside a complex (non-scalar) mapping key, which the index does not describe.
    skip_depth: usize,
}

impl IndexBuilder {
    fn mark(&self, marker: Marker, width: usize) -> Mark {
        Mark {
            line: marker.line(),
            col: marker.col(),
            width,
        }
    }

    fn char_at(&self, marker: Marker) -> Option<char> {
        self.chars.get(marker.index()).copied()
    }

    /// Decide where the node that starts now lives. Returns `None` when the node is a key
    /// (scalar keys are remembered by the caller) or sits inside a complex key.
    fn place_node(&mut self) -> Place {
        match self.stack.last_mut() {
            None => Place::Value(YamlPath::root(), None),
            Some(Frame::Sequence { path, next }) => {
                let path = path.index(*next);
                *next += 1;
                Place::Value(path, None)
            }
            Some(Frame::Mapping { path, pending, .. }) => match pending.take() {
                Some((key, key_mark)) => Place::Value(path.key(&key), Some(key_mark)),
                None => Place::Key,
            },
        }
    }

    fn record(&mut self, path: YamlPath, key: Option<Mark>, value: Option<Mark>) {
        let entry = self.index.entry(path).or_default();
        if key.is_some() {
            entry.key = key;
        }
        if value.is_some() {
            entry.value = value;
        }
    }

    fn scalar_width(&self, value: &str, style: TScalarStyle) -> usize {
        let first_line = value.lines().next().unwrap_or("").chars().count();
        match style {
            TScalarStyle::Plain => first_line,
            TScalarStyle::SingleQuoted | TScalarStyle::DoubleQuoted => first_line + 2,
            TScalarStyle::Literal | TScalarStyle::Folded => 1,
        }
    }
}

enum Place {
    Key,
    Value(YamlPath, Option<Mark>),
}

impl MarkedEventReceiver for IndexBuilder {
    fn on_event(&mut self, ev: Event, marker: Marker) {
        if self.skip_depth > 0 {
            match ev {
                Event::MappingStart(..) | Event::SequenceStart(..) => self.skip_depth += 1,
                Event::MappingEnd | Event::SequenceEnd => self.skip_depth -= 1,
                _ => {}
            }
            return;
        }
        match ev {
            Event::Scalar(value, style, _, _) => {
                let width = self.scalar_width(&value, style);
                let mark = self.mark(marker, width);
                match self.place_node() {
                    Place::Key => {
                        if let Some(Frame::Mapping {
                            pending,
                            first_key,
                            path,
                        }) = self.stack.last_mut()
                        {
                            let path = path.clone();
                            *pending = Some((value, mark));
                            if !*first_key {
                                *first_key = true;
                                // A block mapping's start marker is unreliable; its first key
                                // is where a reader sees it begin.
                                let entry = self.index.entry(path).or_default();
                                if entry.value.is_none() {
                                    entry.value = Some(Mark { width: 1, ..mark });
                                }
                            }
                        }
                    }
                    Place::Value(path, key) => self.record(path, key, Some(mark)),
                }
            }
            Event::Alias(_) => {
                if let Place::Value(path, key) = self.place_node() {
                    let mark = self.mark(marker, 1);
                    self.record(path, key, Some(mark));
                }
            }
            Event::MappingStart(..) | Event::SequenceStart(..)
                if self.stack.len() >= MAX_INDEX_DEPTH =>
            {
                // Deeper than any config needs: not indexed (errors there point
                // at the nearest indexed ancestor), so a file of nested `- - -`
                // costs no more than its size.
                let _ = self.place_node();
                self.skip_depth = 1;
            }
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                let is_mapping = matches!(ev, Event::MappingStart(..));
                match self.place_node() {
                    Place::Key => {
                        // A complex key: leave the whole subtree out of the index and make the
                        // mapping expect a value that nobody can name.
                        if let Some(Frame::Mapping { pending, .. }) = self.stack.last_mut() {
                            *pending = Some((
                                String::from("<complex key>"),
                                Mark {
                                    line: 0,
                                    col: 0,
                                    width: 1,
                                },
                            ));
                        }
                        self.skip_depth = 1;
                    }
                    Place::Value(path, key) => {
                        // Flow collections start where the marker says; a block mapping is
                        // placed at its first key instead (see the scalar branch).
                        let flow = matches!(self.char_at(marker), Some('{' | '[' | '-'));
                        let value = flow.then(|| self.mark(marker, 1));
                        self.record(path.clone(), key, value);
                        self.stack.push(if is_mapping {
                            Frame::Mapping {
                                path,
                                pending: None,
                                first_key: false,
                            }
                        } else {
                            Frame::Sequence { path, next: 0 }
                        });
                    }
                }
            }
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
            }
            _ => {}
        }
    }
}

/// Join `rel` onto `dir` for display, dropping `.` components so that `./infra/tazuna.yaml`
/// included from `examples/tazuna.yaml` reads `examples/infra/tazuna.yaml`.
pub(crate) fn join_clean(dir: &Path, rel: &Path) -> PathBuf {
    let joined = dir.join(rel);
    let cleaned: PathBuf = joined
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect();
    if cleaned.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        cleaned
    }
}

/// The directory of `file`, `.` for a bare file name.
pub(crate) fn parent_dir(file: &Path) -> PathBuf {
    match file.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(source: &Source, path: &YamlPath) -> (usize, usize, usize) {
        let span = source.value_span(path);
        (span.location.line, span.location.column, span.width)
    }

    #[test]
    fn indexes_keys_values_and_items() {
        let text =
            "spec:\n  manifests:\n    - name: \"é\"\n      tags: [x, 'y']\n    - {name: b}\n";
        let source = Source::new(PathBuf::from("t.yaml"), text.to_owned());
        let m0 = YamlPath::root().key("spec").key("manifests").index(0);
        assert_eq!(at(&source, &m0), (3, 7, 1));
        assert_eq!(at(&source, &m0.key("name")), (3, 13, 3));
        let key = source.key_span(&m0.key("tags"));
        assert_eq!(
            (key.location.line, key.location.column, key.width),
            (4, 7, 4)
        );
        assert_eq!(at(&source, &m0.key("tags").index(1)), (4, 17, 3));
        let m1 = YamlPath::root().key("spec").key("manifests").index(1);
        assert_eq!(at(&source, &m1), (5, 7, 1));
        assert_eq!(at(&source, &m1.key("name")), (5, 14, 1));
        // Unknown paths fall back to the nearest known ancestor.
        assert_eq!(at(&source, &m1.key("nothing").index(3)), (5, 7, 1));
    }

    #[test]
    fn displays_paths_like_serde_path_to_error() {
        let path = YamlPath::root()
            .key("spec")
            .key("manifests")
            .index(3)
            .key("dependsOn")
            .index(0);
        assert_eq!(path.to_string(), "spec.manifests[3].dependsOn[0]");
    }

    #[test]
    fn cleans_joined_paths() {
        assert_eq!(
            join_clean(Path::new("examples"), Path::new("./infra/tazuna.yaml")),
            PathBuf::from("examples/infra/tazuna.yaml")
        );
        assert_eq!(
            join_clean(Path::new("."), Path::new("./a")),
            PathBuf::from("a")
        );
        assert_eq!(parent_dir(Path::new("tazuna.yaml")), PathBuf::from("."));
    }
}
