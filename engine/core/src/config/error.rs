//! Errors found while loading a `tazuna.yaml`, each pointing at a line and column.
//!
//! Every variant says what is wrong; [`ConfigError::hint`] says what to do about it, and
//! [`ConfigError::render`] draws both under the offending line, without colour, the way rustc
//! and uv do.

use std::fmt::{self, Write as _};
use std::io;
use std::path::{Path, PathBuf};

/// A position in a file: 1-based line and column (columns count characters, not bytes).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Location {
    /// The file as the user named it, or as an include named it relative to that.
    pub file: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

/// What an error points at: a location, how many characters to underline, and the text of
/// that line so the error can be drawn without reading the file again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    /// Where the offending text starts.
    pub location: Location,
    /// How many characters to underline (at least one).
    pub width: usize,
    /// The whole source line that `location.line` names.
    pub source_line: std::sync::Arc<str>,
}

/// Something a file may do but should not: the run goes on, `tazuna check`
/// refuses it, and `tazuna check --fix` applies [`Warning::edits`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// What is wrong.
    pub message: String,
    /// What to do about it.
    pub hint: String,
    /// Where it is.
    pub at: Span,
    /// The text edits that fix it; empty when it needs a person.
    pub edits: Vec<Edit>,
}

/// Replace the scalar at `at` (`from`, possibly quoted) with `to`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    /// Where the scalar is.
    pub at: Span,
    /// Its value now.
    pub from: String,
    /// Its value after the fix.
    pub to: String,
}

/// Why a `tazuna.yaml` could not be loaded or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file named with `-f` (or the default `tazuna.yaml`) does not exist.
    #[error("`{}` not found", file.display())]
    NotFound {
        /// The missing file.
        file: PathBuf,
    },
    /// The file exists but could not be read.
    #[error("cannot read `{}`", file.display())]
    Read {
        /// The unreadable file.
        file: PathBuf,
        /// Why reading failed.
        #[source]
        source: io::Error,
    },
    /// The file's Go template does not render.
    #[error("template: {message}")]
    Template {
        /// What is wrong, such as ``map has no entry for key `Valeus` ``.
        message: String,
        /// The action at fault.
        at: Box<Span>,
    },
    /// The text is not valid YAML.
    #[error("invalid YAML: {message}")]
    Syntax {
        /// The parser's description, without its position.
        message: String,
        /// Where the parser gave up.
        at: Box<Span>,
    },
    /// A mapping has a key that is not a field of its section.
    #[error("unknown field `{field}` in {section}")]
    UnknownField {
        /// The unknown key.
        field: String,
        /// What the mapping is, such as `manifest` or `spec`.
        section: String,
        /// The closest known field, when one is close enough.
        suggestion: Option<String>,
        /// Every field the section accepts.
        expected: Vec<String>,
        /// Where the unknown key is.
        at: Box<Span>,
    },
    /// A manifest has no `name` (Go Tazuna applied it anyway, but records
    /// no state for it); `check --fix` names it as Go's `check --fix` does.
    #[error("manifest has no `name`")]
    Unnamed {
        /// The name Go Tazuna's `check --fix` gives it: `<type>-<dir>`.
        suggested: String,
        /// The edit that adds it; `None` where the file cannot take one
        /// (a flow mapping).
        fix: Option<Box<Edit>>,
        /// Where the manifest starts.
        at: Box<Span>,
    },
    /// A required field is absent.
    #[error("missing field `{field}` in {section}")]
    MissingField {
        /// The required key.
        field: String,
        /// What the mapping is, such as `manifest` or `spec`.
        section: String,
        /// Where the mapping that lacks it starts.
        at: Box<Span>,
    },
    /// A field holds the wrong kind of value, such as a string where a list belongs.
    #[error("wrong type for `{field}`: expected {expected}, found {found}")]
    WrongType {
        /// The path of the field, such as `spec.manifests[0].tags`.
        field: String,
        /// What the field takes.
        expected: String,
        /// What the file has.
        found: String,
        /// Where the value is.
        at: Box<Span>,
    },
    /// A field holds a value of the right kind but out of range, such as a negative count.
    #[error("invalid value for `{field}`: expected {expected}, found {found}")]
    InvalidValue {
        /// The path of the field.
        field: String,
        /// What the field takes.
        expected: String,
        /// What the file has.
        found: String,
        /// Where the value is.
        at: Box<Span>,
    },
    /// A field that takes one of a fixed set of words has another.
    #[error("invalid value `{value}` for `{field}`")]
    UnknownVariant {
        /// The field's key, such as `context_match_mode`.
        field: String,
        /// The value in the file.
        value: String,
        /// The accepted values.
        expected: Vec<String>,
        /// The closest accepted value, when one is close enough.
        suggestion: Option<String>,
        /// Where the value is.
        at: Box<Span>,
    },
    /// `apiVersion` is set to something other than `tazuna.pepabo.com/v1`.
    #[error("unsupported apiVersion `{value}`")]
    ApiVersion {
        /// The value in the file.
        value: String,
        /// Where the value is.
        at: Box<Span>,
    },
    /// `kind` is set to something other than `Tazuna`.
    #[error("unsupported kind `{value}`")]
    Kind {
        /// The value in the file.
        value: String,
        /// Where the value is.
        at: Box<Span>,
    },
    /// `minimumSupportedTazunaVersion` is not a semantic version.
    #[error("invalid version `{value}` in `minimumSupportedTazunaVersion`: {reason}")]
    InvalidVersion {
        /// The value in the file.
        value: String,
        /// Why it does not parse.
        reason: String,
        /// Where the value is.
        at: Box<Span>,
    },
    /// The file asks for a newer tazuna than the one running.
    #[error("this file needs tazuna `{required}` or newer, but this is tazuna `{running}`")]
    TooOld {
        /// `minimumSupportedTazunaVersion`.
        required: semver::Version,
        /// The running binary's version.
        running: semver::Version,
        /// Where the requirement is.
        at: Box<Span>,
    },
    /// A `context_matches` entry does not compile as a regular expression.
    #[error("invalid regular expression `{pattern}`: {reason}")]
    InvalidRegex {
        /// The pattern in the file.
        pattern: String,
        /// The regex compiler's complaint.
        reason: String,
        /// Where the pattern is.
        at: Box<Span>,
    },
    /// A `WaitUntil` test's `condition` does not compile as CEL.
    #[error("invalid CEL condition `{expression}`: {reason}")]
    InvalidCondition {
        /// The condition in the file.
        expression: String,
        /// The CEL parser's complaint, with the position in the expression.
        reason: String,
        /// Where the condition is.
        at: Box<Span>,
    },
    /// `spec.manifests` is absent or empty.
    #[error("`spec.manifests` is empty")]
    NoManifests {
        /// Where `spec` (or `spec.manifests`) is.
        at: Box<Span>,
    },
    /// A manifest name breaks the naming rule or uses a reserved name.
    #[error("invalid manifest name `{name}`: {reason}")]
    InvalidName {
        /// The name in the file.
        name: String,
        /// Which rule it breaks.
        reason: String,
        /// Where the name is.
        at: Box<Span>,
    },
    /// Two manifests share a name once includes are expanded.
    #[error("duplicate manifest name `{name}`")]
    DuplicateName {
        /// The shared name.
        name: String,
        /// Where the first manifest with that name is.
        first: Location,
        /// Where the second one is.
        at: Box<Span>,
    },
    /// A `dependsOn` entry names no manifest.
    #[error("manifest `{name}` depends on unknown manifest `{target}`")]
    UnknownDependency {
        /// The manifest that declares the dependency.
        name: String,
        /// The name it depends on.
        target: String,
        /// The closest manifest name, when one is close enough.
        suggestion: Option<String>,
        /// Where the entry is.
        at: Box<Span>,
    },
    /// A manifest lists itself in `dependsOn`.
    #[error("manifest `{name}` depends on itself")]
    SelfDependency {
        /// The manifest.
        name: String,
        /// Where the entry is.
        at: Box<Span>,
    },
    /// `dependsOn` entries form a cycle.
    #[error("dependency cycle `{}`", path.join(" -> "))]
    Cycle {
        /// The cycle, starting and ending with the same manifest.
        path: Vec<String>,
        /// The `dependsOn` entry of the first manifest that leads into the cycle.
        at: Box<Span>,
    },
    /// A manifest's `type` is neither a built-in nor a declared plugin.
    #[error("{} manifest type `{kind}` in manifest `{name}`", if crate::config::BUILTIN_TYPES.contains(&kind.as_str()) { "not yet supported" } else { "unknown" })]
    UnknownType {
        /// The manifest.
        name: String,
        /// Its `type`.
        kind: String,
        /// The types the caller knows.
        known: Vec<String>,
        /// The closest known type, when one is close enough.
        suggestion: Option<String>,
        /// Where the `type` value is.
        at: Box<Span>,
    },
    /// A file named in `includes` does not exist.
    #[error("included file `{}` not found", file.display())]
    IncludeNotFound {
        /// The missing file, relative to the including file's directory.
        file: PathBuf,
        /// Where the include's `path` is.
        at: Box<Span>,
    },
    /// An included file has `includes` of its own; includes do not nest.
    #[error("included file `{}` has `includes` of its own", file.display())]
    NestedIncludes {
        /// The included file.
        file: PathBuf,
        /// Where its `includes` key is.
        at: Box<Span>,
    },
    /// `-e` names an environment that `spec.environments` does not declare.
    #[error("unknown environment `{name}`")]
    UnknownEnvironment {
        /// The requested environment.
        name: String,
        /// The declared environments.
        declared: Vec<String>,
        /// The closest declared name, when one is close enough.
        suggestion: Option<String>,
        /// Where `spec.environments` (or `spec`) is.
        at: Box<Span>,
    },
    /// `--tags` names a tag that no manifest carries.
    #[error("unknown tag `{tag}`")]
    UnknownTag {
        /// The requested tag.
        tag: String,
        /// Every tag in the file.
        known: Vec<String>,
        /// The closest tag, when one is close enough.
        suggestion: Option<String>,
        /// The file that was searched.
        file: PathBuf,
    },
    /// A test lacks the block that its `type` needs.
    #[error("test of type `{kind}` has no `{block}` block")]
    MissingTestBlock {
        /// The test's `type`.
        kind: String,
        /// The block it needs, such as `waitUntil`.
        block: String,
        /// Where the test's `type` is.
        at: Box<Span>,
    },
    /// Any other broken rule of the file format.
    #[error("{message}")]
    Invalid {
        /// What is wrong, lowercase, with the offending value in backticks.
        message: String,
        /// What to do about it.
        hint: Option<String>,
        /// Where the offending value is.
        at: Box<Span>,
    },
}

impl crate::hint::Hint for ConfigError {
    fn hint(&self) -> Option<String> {
        ConfigError::hint(self)
    }
}

impl ConfigError {
    /// Where the error points, when it points into a file.
    pub fn location(&self) -> Option<&Location> {
        self.span().map(|span| &span.location)
    }

    /// The span that the error points at, with the text of its line.
    pub fn span(&self) -> Option<&Span> {
        match self {
            Self::NotFound { .. } | Self::Read { .. } | Self::UnknownTag { .. } => None,
            Self::Syntax { at, .. }
            | Self::Template { at, .. }
            | Self::UnknownField { at, .. }
            | Self::MissingField { at, .. }
            | Self::Unnamed { at, .. }
            | Self::WrongType { at, .. }
            | Self::InvalidValue { at, .. }
            | Self::UnknownVariant { at, .. }
            | Self::ApiVersion { at, .. }
            | Self::Kind { at, .. }
            | Self::InvalidVersion { at, .. }
            | Self::TooOld { at, .. }
            | Self::InvalidRegex { at, .. }
            | Self::InvalidCondition { at, .. }
            | Self::NoManifests { at }
            | Self::InvalidName { at, .. }
            | Self::DuplicateName { at, .. }
            | Self::UnknownDependency { at, .. }
            | Self::SelfDependency { at, .. }
            | Self::Cycle { at, .. }
            | Self::UnknownType { at, .. }
            | Self::IncludeNotFound { at, .. }
            | Self::NestedIncludes { at, .. }
            | Self::UnknownEnvironment { at, .. }
            | Self::MissingTestBlock { at, .. }
            | Self::Invalid { at, .. } => Some(at.as_ref()),
        }
    }

    /// The file the error is about, even when it points at no line.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Self::NotFound { file } | Self::Read { file, .. } | Self::UnknownTag { file, .. } => {
                Some(file)
            }
            _ => self.location().map(|location| location.file.as_path()),
        }
    }

    /// What to do about the error, when there is something to say.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::NotFound { .. } => Some(
                "run `tazuna init` to create a starter file, or pass `-f <path>` to use another"
                    .to_owned(),
            ),
            Self::Read { .. } | Self::Syntax { .. } => None,
            Self::Template { .. } => Some(
                "tazuna.yaml is rendered as a Go template, as Go Tazuna does: `{{ .Environment }}` is the `-e` name, `{{ .Cluster.Name }}` and `{{ .Cluster.Labels }}` the selected cluster's, `{{ .Values }}` its values, `{{ .Inputs }}` the outputs of `spec.inputs`; a literal `{{` is `{{ \"{{\" }}`"
                    .to_owned(),
            ),
            Self::UnknownField {
                suggestion,
                expected,
                ..
            } => {
                did_you_mean(suggestion.as_deref()).or_else(|| one_of("expected one of", expected))
            }
            Self::MissingField { field, .. } => Some(format!("add `{field}:`")),
            Self::Unnamed { suggested, fix, .. } => Some(match fix {
                Some(_) => format!(
                    "add `name: {suggested}`, or run `tazuna check --fix`, which names it so (as Go Tazuna's does)"
                ),
                None => format!("add `name: {suggested}`"),
            }),
            Self::WrongType {
                expected, found, ..
            } if expected.contains("sequence") && found.starts_with("string") => {
                let item = found.trim_start_matches("string ").trim_matches('`');
                Some(format!("write a list, such as `[{item}]`"))
            }
            Self::WrongType { .. } | Self::InvalidValue { .. } => None,
            Self::UnknownVariant {
                suggestion,
                expected,
                ..
            } => {
                did_you_mean(suggestion.as_deref()).or_else(|| one_of("expected one of", expected))
            }
            Self::ApiVersion { .. } => {
                Some("use `apiVersion: tazuna.pepabo.com/v1`, or leave `apiVersion` out".to_owned())
            }
            Self::Kind { .. } => Some("use `kind: Tazuna`, or leave `kind` out".to_owned()),
            Self::InvalidVersion { .. } => {
                Some("write a semantic version such as `1.4.0` (a leading `v` is fine)".to_owned())
            }
            Self::TooOld { required, .. } => {
                Some(format!("upgrade tazuna to `{required}` or newer"))
            }
            Self::InvalidRegex { .. } => Some(
                "patterns use RE2 syntax and match anywhere in the context name; escape `.` \
                 and brackets with `\\`"
                    .to_owned(),
            ),
            Self::InvalidCondition { .. } => Some(
                "a condition is a CEL expression over `object`, such as \
                 `object.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')`"
                    .to_owned(),
            ),
            Self::NoManifests { .. } => {
                Some("list at least one manifest under `spec.manifests`".to_owned())
            }
            Self::InvalidName { name, .. } if name == super::RESERVED_NAME => Some(format!(
                "`{name}` is reserved for tazuna's own use; pick another name"
            )),
            Self::InvalidName { .. } => Some(
                "manifest names use letters, digits, `-` and `_` only (`^[a-zA-Z0-9_-]+$`)"
                    .to_owned(),
            ),
            Self::DuplicateName { name, first, .. } => Some(format!(
                "the first `{name}` is at {first}; names must be unique after includes are expanded"
            )),
            Self::UnknownDependency { suggestion, .. } => did_you_mean(suggestion.as_deref()),
            Self::SelfDependency { name, .. } => {
                Some(format!("remove `{name}` from its own `dependsOn`"))
            }
            Self::Cycle { .. } => {
                Some("remove one of these `dependsOn` entries to break the cycle".to_owned())
            }
            Self::UnknownType {
                kind,
                known,
                suggestion,
                ..
            } if crate::config::BUILTIN_TYPES.contains(&kind.as_str()) => Some(format!(
                "`{kind}` is a Go Tazuna type this version does not render yet; leave the manifest out of the run with `-t <tags>`, or declare a plugin named `{kind}` under `spec.plugins`"
            )),
            Self::UnknownType {
                kind,
                known,
                suggestion,
                ..
            } => did_you_mean(suggestion.as_deref()).or_else(|| {
                let mut hint = format!(
                    "declare a plugin named `{kind}` under `spec.plugins`, or use a known type"
                );
                if !known.is_empty() {
                    hint.push_str(": ");
                    hint.push_str(&backticked(known));
                }
                Some(hint)
            }),
            Self::IncludeNotFound { .. } => Some(
                "include paths are relative to the directory of the file that declares them"
                    .to_owned(),
            ),
            Self::NestedIncludes { .. } => Some(
                "includes do not nest; include that file's includes from the root file instead"
                    .to_owned(),
            ),
            Self::UnknownEnvironment {
                declared,
                suggestion,
                ..
            } => did_you_mean(suggestion.as_deref()).or_else(|| {
                if declared.is_empty() {
                    Some(
                        "this file declares no environments; add one under `spec.environments`"
                            .to_owned(),
                    )
                } else {
                    one_of("declared environments:", declared)
                }
            }),
            Self::UnknownTag {
                known, suggestion, ..
            } => did_you_mean(suggestion.as_deref()).or_else(|| {
                if known.is_empty() {
                    Some("no manifest in this file has `tags`".to_owned())
                } else {
                    one_of("known tags:", known)
                }
            }),
            Self::MissingTestBlock { block, .. } => {
                Some(format!("add `{block}:` next to `type:` in this test"))
            }
            Self::Invalid { hint, .. } => hint.clone(),
        }
    }

    /// The error as a human report, without colour:
    ///
    /// ```text
    /// error: unknown field `nmae` in manifest
    ///   --> examples/bad/tazuna.yaml:7:7
    ///    |
    ///  7 |     - nmae: argocd
    ///    |       ^^^^
    /// hint: did you mean `name`?
    /// ```
    pub fn render(&self) -> String {
        let mut out = clip_lines(&format!("error: {self}"));
        let mut cause = std::error::Error::source(self);
        while let Some(err) = cause {
            out.push_str(&clip_lines(&format!("  caused by: {err}")));
            cause = err.source();
        }
        match self.span() {
            Some(span) => out.push_str(&render_span(span)),
            None => {
                if let Some(file) = self.file() {
                    let _ = writeln!(out, "  --> {}", file.display());
                }
            }
        }
        if let Some(hint) = self.hint() {
            out.push_str(&clip_lines(&format!("hint: {hint}")));
        }
        out
    }
}

/// The most characters of a message line [`ConfigError::render`] shows: a
/// name or value from the file may be any length.
const MESSAGE_CHARS: usize = 300;

/// `text` with every line cut to [`MESSAGE_CHARS`], each ending in `\n`.
fn clip_lines(text: &str) -> String {
    text.lines()
        .map(|line| {
            if line.chars().count() <= MESSAGE_CHARS {
                format!("{line}\n")
            } else {
                let kept: String = line.chars().take(MESSAGE_CHARS).collect();
                format!("{kept}…\n")
            }
        })
        .collect()
}

/// The most characters of a source line an excerpt shows.
const EXCERPT_CHARS: usize = 120;

fn render_span(span: &Span) -> String {
    let line_no = span.location.line.to_string();
    let pad = " ".repeat(line_no.len() + 1);
    let mut text = span.source_line.replace('\t', " ");
    let mut column = span.location.column.max(1);
    // A long line (a minified file, a flow sequence of thousands) shows only
    // the stretch around the column.
    if text.chars().count() > EXCERPT_CHARS {
        let start = column.saturating_sub(EXCERPT_CHARS / 2 + 1);
        let window: String = text.chars().skip(start).take(EXCERPT_CHARS).collect();
        let (lead, more) = (start > 0, start + EXCERPT_CHARS < text.chars().count());
        text = format!(
            "{}{window}{}",
            if lead { "…" } else { "" },
            if more { "…" } else { "" }
        );
        column = column - start + usize::from(lead);
    }
    let line_len = text.chars().count();
    // Keep the underline on the line, but never shorter than one caret.
    let width = span.width.min(line_len.saturating_sub(column - 1)).max(1);
    let mut out = String::new();
    let _ = writeln!(out, "{pad}--> {}", span.location);
    let _ = writeln!(out, "{pad} |");
    let _ = writeln!(out, " {line_no} | {}", text.trim_end());
    let _ = writeln!(
        out,
        "{pad} | {}{}",
        " ".repeat(column - 1),
        "^".repeat(width)
    );
    out
}

fn did_you_mean(suggestion: Option<&str>) -> Option<String> {
    suggestion.map(|s| format!("did you mean `{s}`?"))
}

fn one_of(lead: &str, items: &[String]) -> Option<String> {
    (!items.is_empty()).then(|| format!("{lead} {}", backticked(items)))
}

pub(crate) fn backticked(items: &[String]) -> String {
    items
        .iter()
        .map(|item| format!("`{item}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The candidate closest to `input`, if it is close enough to be a likely typo.
pub(crate) fn suggest<'a, I>(input: &str, candidates: I) -> Option<String>
where
    I: IntoIterator<Item = &'a str>,
{
    let input_lower = input.to_lowercase();
    candidates
        .into_iter()
        .map(|candidate| {
            let score = strsim::jaro_winkler(&input_lower, &candidate.to_lowercase());
            (score, candidate)
        })
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, candidate)| candidate.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        let fields = ["name", "description", "type", "dependsOn"];
        assert_eq!(suggest("nmae", fields), Some("name".to_owned()));
        assert_eq!(suggest("dependson", fields), Some("dependsOn".to_owned()));
        assert_eq!(suggest("zzz", fields), None);
    }

    #[test]
    fn renders_the_example_from_the_design() {
        let err = ConfigError::UnknownField {
            field: "nmae".to_owned(),
            section: "manifest".to_owned(),
            suggestion: Some("name".to_owned()),
            expected: vec!["name".to_owned()],
            at: Box::new(Span {
                location: Location {
                    file: PathBuf::from("examples/bad/tazuna.yaml"),
                    line: 7,
                    column: 7,
                },
                width: 4,
                source_line: "    - nmae: argocd".into(),
            }),
        };
        assert_eq!(
            err.render(),
            "error: unknown field `nmae` in manifest\n  --> examples/bad/tazuna.yaml:7:7\n   |\n 7 |     - nmae: argocd\n   |       ^^^^\nhint: did you mean `name`?\n"
        );
    }

    #[test]
    fn a_long_line_is_shown_around_its_column() {
        let line = format!("    dependsOn: [{}nope]", "m1, ".repeat(100));
        let column = line.find("nope").unwrap() + 1;
        let span = Span {
            location: Location {
                file: PathBuf::from("t.yaml"),
                line: 3,
                column,
            },
            width: 4,
            source_line: line.as_str().into(),
        };
        let shown = render_span(&span);
        let lines: Vec<&str> = shown.lines().collect();
        assert!(
            lines[2].starts_with(" 3 | …") && lines[2].ends_with("nope]"),
            "{shown}"
        );
        assert!(lines[2].chars().count() < EXCERPT_CHARS + 10, "{shown}");
        let caret = lines[3].find('^').unwrap();
        assert_eq!(
            &lines[2][lines[2].char_indices().nth(caret).unwrap().0..][..4],
            "nope",
            "{shown}"
        );
    }
}
