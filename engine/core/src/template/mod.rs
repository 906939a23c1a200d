//! The Go `text/template` language as Go Tazuna renders `tazuna.yaml` with it
//! (`missingkey=error`): `{{ .Environment }}`, `{{ if eq .Environment
//! "production" }}…{{ else }}…{{ end }}`, `{{ range }}`, `{{ with }}`,
//! pipelines (`{{ .Values.region | quote }}`), the trim markers `{{-` and
//! `-}}`, comments, and the functions such files use (Go's builtins and a few
//! of sprig's). The data is JSON: the environment's name, the selected
//! cluster's name, labels and values.
//!
//! A key that is not there is an error naming its line and column, never an
//! empty string, so a typo in `.Values` cannot render a wrong file quietly.
//! Rendering is bounded: nesting depth and output size are capped, so a
//! hostile file cannot exhaust memory or the stack.

use serde_json::Value;

/// Deepest nesting of blocks and parentheses.
const MAX_DEPTH: usize = 64;
/// Most bytes a render may produce.
const MAX_OUTPUT: usize = 64 << 20;
/// Most nodes a render may evaluate (loops in loops over long lists).
const MAX_STEPS: usize = 10_000_000;

/// Why a template did not render.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{column}: {message}")]
pub struct TemplateError {
    /// 1-based line of the action at fault.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong, such as ``map has no entry for key `regoin` ``.
    pub message: String,
}

impl TemplateError {
    /// The error `message` about byte `at` of `source`.
    fn at(source: &str, at: usize, message: impl Into<String>) -> Self {
        let (line, column) = position(source, at);
        Self {
            line,
            column,
            message: message.into(),
        }
    }
}

/// Render `text` with `data` as `.`.
pub fn render(text: &str, data: &Value) -> Result<String, TemplateError> {
    render_with(text, data, Keys::Required)
}

/// Render `text` with `data` as `.`, leaving out what it cannot evaluate:
/// an action that fails (a missing key, a function given nothing) prints
/// nothing, and an `if`, `with` or `range` whose pipeline fails takes no
/// branch, not even `else`. For a first
/// look at a file whose data is not all known yet (the environments, before
/// the cluster's values that they declare). Syntax errors and the bounds on
/// work and output still fail.
pub fn render_partial(text: &str, data: &Value) -> Result<String, TemplateError> {
    render_with(text, data, Keys::Optional)
}

/// What a key that is not in the data means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    /// An error (`missingkey=error`).
    Required,
    /// What needs a missing key is left out (see [`render_partial`]).
    Optional,
}

/// [`render`] or [`render_partial`], as `keys` says.
pub fn render_with(text: &str, data: &Value, keys: Keys) -> Result<String, TemplateError> {
    let nodes = Parser::new(text).parse()?;
    let mut out = String::new();
    Eval::new(text, data, &mut out, keys).nodes(&nodes, data)?;
    Ok(out)
}

/// Whether `text` holds template actions at all (`{{`).
pub fn has_actions(text: &str) -> bool {
    text.contains("{{")
}

#[derive(Debug, Clone)]
enum Node {
    Text(String),
    Action(Pipeline),
    If {
        branches: Vec<(Pipeline, Vec<Node>)>,
        otherwise: Vec<Node>,
    },
    Range {
        pipeline: Pipeline,
        body: Vec<Node>,
        otherwise: Vec<Node>,
    },
    With {
        pipeline: Pipeline,
        body: Vec<Node>,
        otherwise: Vec<Node>,
    },
}

#[derive(Debug, Clone)]
struct Pipeline {
    commands: Vec<Vec<Operand>>,
    at: usize,
}

#[derive(Debug, Clone)]
enum Operand {
    /// `.a.b`; empty for `.` itself. `root` for `$.a`; `at` where it is.
    Field {
        path: Vec<String>,
        root: bool,
        at: usize,
    },
    Literal(Value),
    Function(String),
    Nested(Pipeline),
}

/// One `{{ … }}` after lexing.
#[derive(Debug)]
struct Action {
    tokens: Vec<(Token, usize)>,
    at: usize,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Field(Vec<String>, bool),
    Literal(Value),
    Pipe,
    Open,
    Close,
}

enum Item {
    Text(String),
    Action(Action),
}

/// The keyword that ended a block (`end`, `else`, `else if`), with its action.
struct Closing {
    key: String,
    action: Action,
}

/// 1-based line and column of byte `at` in `text`.
fn position(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

pub use tazuna_gotmpl::first_call;

mod eval;
mod functions;
mod parse;
mod values;

use eval::Eval;
use parse::Parser;

#[cfg(test)]
mod tests;
