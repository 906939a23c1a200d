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
    let mut eval = Eval {
        source: text,
        root: data,
        out: &mut out,
        steps: 0,
        keys,
    };
    eval.nodes(&nodes, data)?;
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

struct Parser<'a> {
    source: &'a str,
}

impl<'a> Parser<'a> {
    fn new(source: &'a str) -> Self {
        Self { source }
    }

    fn error(&self, at: usize, message: impl Into<String>) -> TemplateError {
        TemplateError::at(self.source, at, message)
    }

    /// Split into text and actions, applying trim markers.
    fn items(&self) -> Result<Vec<Item>, TemplateError> {
        let mut items = Vec::new();
        let mut rest = 0;
        let text = self.source;
        while let Some(found) = text[rest..].find("{{") {
            let open = rest + found;
            let mut literal = text[rest..open].to_owned();
            let mut start = open + 2;
            if text[start..].starts_with("- ")
                || text[start..].starts_with("-\t")
                || text[start..].starts_with("-\n")
            {
                literal.truncate(literal.trim_end().len());
                start += 1;
            }
            let Some(length) = text[start..].find("}}") else {
                return Err(self.error(open, "unclosed action: `{{` without `}}`"));
            };
            let mut end = start + length;
            let mut after = end + 2;
            let trim_after = end > start && text[..end].ends_with(" -")
                || text[..end].ends_with("\t-")
                || text[..end].ends_with("\n-");
            if trim_after {
                end -= 1;
            }
            items.push(Item::Text(literal));
            let inner = &text[start..end];
            let trimmed = inner.trim();
            if !(trimmed.starts_with("/*") && trimmed.ends_with("*/")) {
                items.push(Item::Action(self.lex(inner, start)?));
            }
            if trim_after {
                let skipped = text[after..].len() - text[after..].trim_start().len();
                after += skipped;
            }
            rest = after;
        }
        items.push(Item::Text(text[rest..].to_owned()));
        Ok(items)
    }

    fn lex(&self, inner: &str, offset: usize) -> Result<Action, TemplateError> {
        let bytes = inner.as_bytes();
        let mut tokens = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            let c = bytes[i] as char;
            let at = offset + i;
            match c {
                ' ' | '\t' | '\n' | '\r' => i += 1,
                '|' => {
                    tokens.push((Token::Pipe, at));
                    i += 1;
                }
                '(' => {
                    tokens.push((Token::Open, at));
                    i += 1;
                }
                ')' => {
                    tokens.push((Token::Close, at));
                    i += 1;
                }
                '"' => {
                    let mut value = String::new();
                    let mut j = i + 1;
                    loop {
                        let Some(&b) = bytes.get(j) else {
                            return Err(self.error(at, "unterminated quoted string"));
                        };
                        match b {
                            b'"' => break,
                            b'\\' => {
                                let escaped = bytes.get(j + 1).copied().unwrap_or(b'\\');
                                value.push(match escaped {
                                    b'n' => '\n',
                                    b't' => '\t',
                                    other => other as char,
                                });
                                j += 2;
                            }
                            _ => {
                                let ch = inner[j..].chars().next().expect("in bounds");
                                value.push(ch);
                                j += ch.len_utf8();
                            }
                        }
                    }
                    tokens.push((Token::Literal(Value::String(value)), at));
                    i = j + 1;
                }
                '`' => {
                    let Some(end) = inner[i + 1..].find('`') else {
                        return Err(self.error(at, "unterminated raw string"));
                    };
                    let value = inner[i + 1..i + 1 + end].to_owned();
                    tokens.push((Token::Literal(Value::String(value)), at));
                    i += end + 2;
                }
                '.' | '$' => {
                    let start = i;
                    let root = c == '$';
                    if root {
                        i += 1;
                        if bytes.get(i) != Some(&b'.') {
                            let rest = &inner[start..];
                            return Err(self.error(
                                at,
                                format!(
                                    "variables are not supported (`{}`); use `$.` or `.`",
                                    rest.split_whitespace().next().unwrap_or(rest)
                                ),
                            ));
                        }
                    }
                    let mut path = Vec::new();
                    while bytes.get(i) == Some(&b'.') {
                        i += 1;
                        let begin = i;
                        while bytes
                            .get(i)
                            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
                        {
                            i += 1;
                        }
                        if begin == i {
                            if path.is_empty()
                                && bytes.get(i).is_none_or(|b| !b.is_ascii_alphabetic())
                            {
                                break;
                            }
                            return Err(
                                self.error(at, format!("bad field in `{}`", &inner[start..i]))
                            );
                        }
                        path.push(inner[begin..i].to_owned());
                    }
                    tokens.push((Token::Field(path, root), at));
                }
                c if c.is_ascii_digit() || c == '-' => {
                    let start = i;
                    i += 1;
                    while bytes
                        .get(i)
                        .is_some_and(|b| b.is_ascii_digit() || *b == b'.')
                    {
                        i += 1;
                    }
                    let number: Value = inner[start..i]
                        .parse::<i64>()
                        .map(Value::from)
                        .or_else(|_| inner[start..i].parse::<f64>().map(Value::from))
                        .map_err(|_| {
                            self.error(at, format!("bad number `{}`", &inner[start..i]))
                        })?;
                    tokens.push((Token::Literal(number), at));
                }
                c if c.is_ascii_alphabetic() || c == '_' => {
                    let start = i;
                    while bytes
                        .get(i)
                        .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
                    {
                        i += 1;
                    }
                    let word = &inner[start..i];
                    let token = match word {
                        "true" => Token::Literal(Value::Bool(true)),
                        "false" => Token::Literal(Value::Bool(false)),
                        "nil" => Token::Literal(Value::Null),
                        _ => Token::Word(word.to_owned()),
                    };
                    tokens.push((token, at));
                }
                other => return Err(self.error(at, format!("unexpected `{other}` in an action"))),
            }
        }
        Ok(Action { tokens, at: offset })
    }

    fn parse(&self) -> Result<Vec<Node>, TemplateError> {
        let mut items = self.items()?.into_iter();
        let (nodes, end) = self.block(&mut items, 0)?;
        if let Some(end) = end {
            return Err(self.error(
                end.action.at,
                format!("`{{{{ {} }}}}` without a block to close", end.key),
            ));
        }
        Ok(nodes)
    }

    /// Nodes up to a closing keyword (`end`, `else`, `else if`), which is
    /// returned with its action.
    fn block(
        &self,
        items: &mut std::vec::IntoIter<Item>,
        depth: usize,
    ) -> Result<(Vec<Node>, Option<Closing>), TemplateError> {
        let mut nodes = Vec::new();
        while let Some(item) = items.next() {
            let action = match item {
                Item::Text(text) => {
                    if !text.is_empty() {
                        nodes.push(Node::Text(text));
                    }
                    continue;
                }
                Item::Action(action) => action,
            };
            let keyword = match action.tokens.first() {
                Some((Token::Word(word), _)) => word.clone(),
                None => return Err(self.error(action.at, "empty action `{{ }}`")),
                _ => String::new(),
            };
            match keyword.as_str() {
                "end" | "else" => {
                    let key = match (keyword.as_str(), action.tokens.get(1)) {
                        ("else", Some((Token::Word(word), _))) if word == "if" => "else if",
                        (keyword, _) => keyword,
                    };
                    return Ok((
                        nodes,
                        Some(Closing {
                            key: key.to_owned(),
                            action,
                        }),
                    ));
                }
                "if" | "range" | "with" => {
                    self.depth(depth + 1, action.at)?;
                    let pipeline = self.pipeline(&action.tokens[1..], action.at, depth + 1)?;
                    let (body, mut end) = self.block(items, depth + 1)?;
                    let mut branches = vec![(pipeline, body)];
                    let mut otherwise = Vec::new();
                    let unclosed =
                        |at| self.error(at, format!("`{keyword}` without `{{{{ end }}}}`"));
                    loop {
                        let Some(closing) = end else {
                            return Err(unclosed(action.at));
                        };
                        let at = closing.action.at;
                        match closing.key.as_str() {
                            "end" => break,
                            "else if" if keyword == "if" => {
                                let condition =
                                    self.pipeline(&closing.action.tokens[2..], at, depth + 1)?;
                                let (body, next) = self.block(items, depth + 1)?;
                                branches.push((condition, body));
                                end = next;
                            }
                            "else" => {
                                let (body, next) = self.block(items, depth + 1)?;
                                otherwise = body;
                                match next {
                                    Some(next) if next.key == "end" => break,
                                    Some(next) => {
                                        return Err(self.error(
                                            next.action.at,
                                            "a second `else` in one block",
                                        ));
                                    }
                                    None => return Err(unclosed(at)),
                                }
                            }
                            other => {
                                return Err(self.error(
                                    at,
                                    format!("`{other}` does not belong to `{keyword}`"),
                                ));
                            }
                        }
                    }
                    nodes.push(match keyword.as_str() {
                        "if" => Node::If {
                            branches,
                            otherwise,
                        },
                        "range" => {
                            let (pipeline, body) = branches.remove(0);
                            Node::Range {
                                pipeline,
                                body,
                                otherwise,
                            }
                        }
                        _ => {
                            let (pipeline, body) = branches.remove(0);
                            Node::With {
                                pipeline,
                                body,
                                otherwise,
                            }
                        }
                    });
                }
                "define" | "template" | "block" | "break" | "continue" => {
                    return Err(self.error(
                        action.at,
                        format!("`{keyword}` is not supported in tazuna.yaml"),
                    ));
                }
                _ => nodes.push(Node::Action(self.pipeline(
                    &action.tokens,
                    action.at,
                    depth,
                )?)),
            }
        }
        Ok((nodes, None))
    }

    fn depth(&self, depth: usize, at: usize) -> Result<(), TemplateError> {
        if depth > MAX_DEPTH {
            Err(self.error(at, format!("nested deeper than {MAX_DEPTH} levels")))
        } else {
            Ok(())
        }
    }

    fn pipeline(
        &self,
        tokens: &[(Token, usize)],
        at: usize,
        depth: usize,
    ) -> Result<Pipeline, TemplateError> {
        self.depth(depth, at)?;
        if tokens.is_empty() {
            return Err(self.error(at, "missing value in an action"));
        }
        let mut commands = vec![Vec::new()];
        let mut i = 0;
        while i < tokens.len() {
            let (token, position) = &tokens[i];
            match token {
                Token::Pipe => {
                    if commands.last().is_some_and(Vec::is_empty) {
                        return Err(self.error(*position, "`|` without a command before it"));
                    }
                    commands.push(Vec::new());
                }
                Token::Open => {
                    let mut level = 0;
                    let mut j = i;
                    loop {
                        match tokens.get(j) {
                            Some((Token::Open, _)) => level += 1,
                            Some((Token::Close, _)) => {
                                level -= 1;
                                if level == 0 {
                                    break;
                                }
                            }
                            Some(_) => {}
                            None => return Err(self.error(*position, "unclosed `(`")),
                        }
                        j += 1;
                    }
                    let nested = self.pipeline(&tokens[i + 1..j], *position, depth + 1)?;
                    commands
                        .last_mut()
                        .expect("one command")
                        .push(Operand::Nested(nested));
                    i = j;
                }
                Token::Close => return Err(self.error(*position, "unexpected `)`")),
                Token::Word(word) => commands
                    .last_mut()
                    .expect("one command")
                    .push(Operand::Function(word.clone())),
                Token::Field(path, root) => {
                    commands
                        .last_mut()
                        .expect("one command")
                        .push(Operand::Field {
                            path: path.clone(),
                            root: *root,
                            at: *position,
                        })
                }
                Token::Literal(value) => commands
                    .last_mut()
                    .expect("one command")
                    .push(Operand::Literal(value.clone())),
            }
            i += 1;
        }
        if commands.last().is_some_and(Vec::is_empty) {
            return Err(self.error(at, "`|` without a command after it"));
        }
        Ok(Pipeline { commands, at })
    }
}

struct Eval<'a> {
    source: &'a str,
    root: &'a Value,
    out: &'a mut String,
    /// Nodes evaluated so far.
    steps: usize,
    keys: Keys,
}

impl Eval<'_> {
    fn error(&self, at: usize, message: impl Into<String>) -> TemplateError {
        TemplateError::at(self.source, at, message)
    }

    /// Count one step against [`MAX_STEPS`].
    fn step(&mut self) -> Result<(), TemplateError> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(self.error(
                0,
                format!("evaluates more than {MAX_STEPS} actions; a loop runs too long"),
            ));
        }
        Ok(())
    }

    fn write(&mut self, text: &str, at: usize) -> Result<(), TemplateError> {
        if self.out.len() + text.len() > MAX_OUTPUT {
            return Err(self.error(at, format!("renders more than {} MiB", MAX_OUTPUT >> 20)));
        }
        self.out.push_str(text);
        Ok(())
    }

    fn nodes(&mut self, nodes: &[Node], dot: &Value) -> Result<(), TemplateError> {
        for node in nodes {
            self.steps += 1;
            if self.steps > MAX_STEPS {
                return Err(self.error(
                    0,
                    format!("evaluates more than {MAX_STEPS} actions; a loop runs too long"),
                ));
            }
            match node {
                Node::Text(text) => self.write(text, 0)?,
                Node::Action(pipeline) => {
                    let Some(value) = self.settled(pipeline, dot)? else {
                        continue;
                    };
                    self.write(&print(&value), pipeline.at)?;
                }
                Node::If {
                    branches,
                    otherwise,
                } => {
                    let mut taken = false;
                    for (condition, body) in branches {
                        let Some(value) = self.settled(condition, dot)? else {
                            taken = true;
                            break;
                        };
                        if truthy(&value) {
                            self.nodes(body, dot)?;
                            taken = true;
                            break;
                        }
                    }
                    if !taken {
                        self.nodes(otherwise, dot)?;
                    }
                }
                Node::With {
                    pipeline,
                    body,
                    otherwise,
                } => {
                    let Some(value) = self.settled(pipeline, dot)? else {
                        continue;
                    };
                    if truthy(&value) {
                        self.nodes(body, &value)?;
                    } else {
                        self.nodes(otherwise, dot)?;
                    }
                }
                Node::Range {
                    pipeline,
                    body,
                    otherwise,
                } => {
                    let Some(value) = self.settled(pipeline, dot)? else {
                        continue;
                    };
                    let items: Vec<Value> = match &value {
                        Value::Array(items) => items.clone(),
                        // Go ranges over a map in key order.
                        Value::Object(map) => {
                            let mut keys: Vec<&String> = map.keys().collect();
                            keys.sort();
                            keys.into_iter().map(|k| map[k].clone()).collect()
                        }
                        Value::Null => Vec::new(),
                        _ if self.keys == Keys::Optional => continue,
                        other => {
                            return Err(self
                                .error(pipeline.at, format!("cannot range over {}", kind(other))));
                        }
                    };
                    if items.is_empty() {
                        self.nodes(otherwise, dot)?;
                    }
                    for item in &items {
                        self.step()?;
                        self.nodes(body, item)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// A pipeline's result, or `None` where [`Keys::Optional`] takes its
    /// failure as nothing.
    fn settled(
        &mut self,
        pipeline: &Pipeline,
        dot: &Value,
    ) -> Result<Option<Value>, TemplateError> {
        match self.pipeline(pipeline, dot) {
            Ok(value) => Ok(Some(value)),
            Err(_) if self.keys == Keys::Optional => Ok(None),
            Err(error) => Err(error),
        }
    }

    fn pipeline(&mut self, pipeline: &Pipeline, dot: &Value) -> Result<Value, TemplateError> {
        let mut last: Option<Value> = None;
        for command in &pipeline.commands {
            last = Some(self.command(command, dot, last, pipeline.at)?);
        }
        Ok(last.unwrap_or(Value::Null))
    }

    fn command(
        &mut self,
        operands: &[Operand],
        dot: &Value,
        piped: Option<Value>,
        at: usize,
    ) -> Result<Value, TemplateError> {
        match operands {
            [Operand::Function(name), args @ ..] => {
                let mut values = Vec::with_capacity(args.len() + 1);
                for arg in args {
                    values.push(self.operand(arg, dot, at)?);
                }
                values.extend(piped);
                call(name, &values).map_err(|message| self.error(at, message))
            }
            [single] if piped.is_none() => self.operand(single, dot, at),
            [_] => Err(self.error(at, "only a function can take a piped value")),
            _ => Err(self.error(
                at,
                "a value cannot take arguments; did you mean a function?",
            )),
        }
    }

    fn operand(
        &mut self,
        operand: &Operand,
        dot: &Value,
        at: usize,
    ) -> Result<Value, TemplateError> {
        match operand {
            Operand::Literal(value) => Ok(value.clone()),
            Operand::Nested(pipeline) => self.pipeline(pipeline, dot),
            Operand::Function(name) => call(name, &[]).map_err(|message| self.error(at, message)),
            Operand::Field { path, root, at } => {
                let at = *at;
                let mut value = if *root { self.root } else { dot };
                for (i, key) in path.iter().enumerate() {
                    value = match value {
                        Value::Object(map) => map.get(key).ok_or_else(|| {
                            let mut known: Vec<&String> = map.keys().collect();
                            known.sort();
                            let known: Vec<String> =
                                known.iter().map(|k| format!("`{k}`")).collect();
                            self.error(
                                at,
                                format!(
                                    "map has no entry for key `{key}` in `.{}`{}",
                                    path[..=i].join("."),
                                    if known.is_empty() {
                                        String::new()
                                    } else {
                                        format!(" (it has {})", known.join(", "))
                                    }
                                ),
                            )
                        })?,
                        other => {
                            return Err(self.error(
                                at,
                                format!(
                                    "`.{}` is {}, which has no field `{key}`",
                                    path[..i].join("."),
                                    kind(other)
                                ),
                            ));
                        }
                    };
                }
                Ok(value.clone())
            }
        }
    }
}

/// Go's truth: false, 0, nil and empty strings, lists and maps are false.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

fn print(value: &Value) -> String {
    match value {
        Value::Null => "<no value>".to_owned(),
        Value::String(s) => s.clone(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(print).collect::<Vec<_>>().join(" ")
        ),
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            format!(
                "map[{}]",
                keys.iter()
                    .map(|k| format!("{k}:{}", print(&map[*k])))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        }
        other => other.to_string(),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "nil",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => print(other),
    }
}

fn compare(a: &Value, b: &Value) -> Result<std::cmp::Ordering, String> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x
            .as_f64()
            .zip(y.as_f64())
            .and_then(|(x, y)| x.partial_cmp(&y))
            .ok_or_else(|| "numbers that cannot be compared".to_owned()),
        (Value::String(x), Value::String(y)) => Ok(x.cmp(y)),
        _ => Err(format!("cannot compare {} with {}", kind(a), kind(b))),
    }
}

fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

fn arity(name: &str, args: &[Value], n: usize) -> Result<(), String> {
    if args.len() == n {
        Ok(())
    } else {
        Err(format!("`{name}` takes {n} arguments, got {}", args.len()))
    }
}

/// The functions: Go's builtins and the sprig ones Tazuna files use.
fn call(name: &str, args: &[Value]) -> Result<Value, String> {
    let text = |i: usize| args.get(i).map(text_of).unwrap_or_default();
    Ok(match name {
        "eq" => {
            let (first, rest) = args.split_first().ok_or("`eq` needs two arguments")?;
            if rest.is_empty() {
                return Err("`eq` needs two arguments".into());
            }
            Value::Bool(rest.iter().any(|other| equal(first, other)))
        }
        "ne" => {
            arity(name, args, 2)?;
            Value::Bool(!equal(&args[0], &args[1]))
        }
        "lt" | "le" | "gt" | "ge" => {
            arity(name, args, 2)?;
            let order = compare(&args[0], &args[1])?;
            Value::Bool(match name {
                "lt" => order.is_lt(),
                "le" => order.is_le(),
                "gt" => order.is_gt(),
                _ => order.is_ge(),
            })
        }
        "not" => {
            arity(name, args, 1)?;
            Value::Bool(!truthy(&args[0]))
        }
        "and" => args
            .iter()
            .find(|v| !truthy(v))
            .or(args.last())
            .cloned()
            .ok_or("`and` needs arguments")?,
        "or" => args
            .iter()
            .find(|v| truthy(v))
            .or(args.last())
            .cloned()
            .ok_or("`or` needs arguments")?,
        "len" => {
            arity(name, args, 1)?;
            Value::from(match &args[0] {
                Value::String(s) => s.chars().count(),
                Value::Array(a) => a.len(),
                Value::Object(o) => o.len(),
                other => return Err(format!("`len` of {}", kind(other))),
            })
        }
        "index" => {
            let (mut value, keys) = args.split_first().ok_or("`index` needs a collection")?;
            for key in keys {
                value = match (value, key) {
                    (Value::Object(map), Value::String(k)) => map
                        .get(k)
                        .ok_or_else(|| format!("map has no entry for key `{k}`"))?,
                    (Value::Array(items), Value::Number(n)) => n
                        .as_u64()
                        .and_then(|i| items.get(i as usize))
                        .ok_or_else(|| format!("index {n} out of range"))?,
                    (other, _) => return Err(format!("cannot index {}", kind(other))),
                };
            }
            value.clone()
        }
        "print" => Value::String(args.iter().map(text_of).collect()),
        "println" => Value::String(format!(
            "{}\n",
            args.iter().map(text_of).collect::<Vec<_>>().join(" ")
        )),
        "printf" => {
            let (format, rest) = args.split_first().ok_or("`printf` needs a format")?;
            Value::String(printf(&text_of(format), rest)?)
        }
        "quote" => Value::String(
            args.iter()
                .map(|v| format!("{:?}", text_of(v)))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        "squote" => Value::String(format!("'{}'", text(0))),
        "default" => {
            let (fallback, given) = match args {
                [fallback] => (fallback, &Value::Null),
                [fallback, given] => (fallback, given),
                _ => return Err("`default` takes a default and a value".into()),
            };
            if truthy(given) {
                given.clone()
            } else {
                fallback.clone()
            }
        }
        "empty" => {
            arity(name, args, 1)?;
            Value::Bool(!truthy(&args[0]))
        }
        "lower" => Value::String(text(0).to_lowercase()),
        "upper" => Value::String(text(0).to_uppercase()),
        "trim" => Value::String(text(0).trim().to_owned()),
        "contains" => {
            arity(name, args, 2)?;
            Value::Bool(text(1).contains(&text(0)))
        }
        "hasPrefix" => {
            arity(name, args, 2)?;
            Value::Bool(text(1).starts_with(&text(0)))
        }
        "hasSuffix" => {
            arity(name, args, 2)?;
            Value::Bool(text(1).ends_with(&text(0)))
        }
        "join" => {
            arity(name, args, 2)?;
            let items = args[1]
                .as_array()
                .ok_or("`join` takes a separator and a list")?;
            Value::String(items.iter().map(text_of).collect::<Vec<_>>().join(&text(0)))
        }
        _ => return Err(format!("function `{name}` not defined")),
    })
}

/// Go's `%s`, `%d`, `%v`, `%q` and `%%`.
fn printf(format: &str, args: &[Value]) -> Result<String, String> {
    let mut out = String::new();
    let mut args = args.iter();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some(verb @ ('s' | 'd' | 'v' | 'q')) => {
                let arg = args
                    .next()
                    .ok_or_else(|| format!("`printf`: missing argument for %{verb}"))?;
                match verb {
                    'q' => out.push_str(&format!("{:?}", text_of(arg))),
                    _ => out.push_str(&text_of(arg)),
                }
            }
            Some(other) => return Err(format!("`printf`: verb %{other} is not supported")),
            None => return Err("`printf`: a format that ends in %".into()),
        }
    }
    Ok(out)
}

/// 1-based line and column of byte `at` in `text`.
fn position(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// The first call of one of `functions` inside a template action (`{{ … }}`)
/// of `text`, with its line. String literals are skipped, and a word after
/// `.` or `$` is a field or a variable, not a call. Used to scan files Tazuna
/// does not render itself: charts and helmfiles.
pub fn first_call(text: &str, functions: &[&'static str]) -> Option<(usize, &'static str)> {
    let mut rest = text;
    let mut offset = 0;
    while let Some(start) = rest.find("{{") {
        let action = &rest[start + 2..];
        let end = action.find("}}").unwrap_or(action.len());
        let inside = &action[..end];
        let base = offset + start + 2;
        let mut index = 0;
        let bytes = inside.as_bytes();
        while index < bytes.len() {
            let byte = bytes[index];
            if byte == b'"' || byte == b'`' {
                // Skip a string literal.
                let close = inside[index + 1..]
                    .find(byte as char)
                    .map_or(bytes.len(), |at| index + 1 + at + 1);
                index = close;
                continue;
            }
            if byte.is_ascii_alphabetic() || byte == b'_' {
                let word_end = inside[index..]
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .map_or(bytes.len(), |at| index + at);
                let word = &inside[index..word_end];
                let after_field = index > 0 && matches!(bytes[index - 1], b'.' | b'$');
                if !after_field && let Some(found) = functions.iter().find(|f| **f == word) {
                    let line = text[..base + index].matches('\n').count() + 1;
                    return Some((line, found));
                }
                index = word_end;
                continue;
            }
            index += 1;
        }
        let consumed = start + 2 + end;
        offset += consumed;
        rest = &rest[consumed..];
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn data() -> Value {
        json!({
            "Environment": "production",
            "Cluster": { "Name": "prod-tokyo", "Labels": { "env": "production", "region": "tokyo" } },
            "Values": { "replicas": 3, "features": ["a", "b"], "debug": false, "name": "web" },
        })
    }

    fn ok(text: &str) -> String {
        render(text, &data()).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn a_partial_render_leaves_out_what_it_cannot_evaluate_and_keeps_the_rest() {
        let data = json!({ "Environment": "staging", "Values": {} });
        let text = "env: {{ .Environment }}\nreplicas: {{ .Values.replicas }}\n{{ if gt .Values.replicas 1 }}big: true\n{{ else }}small: true\n{{ end }}{{ range .Values.zones }}- {{ . }}\n{{ end }}{{ with .Cluster.Name }}name: {{ . }}{{ end }}done";
        assert_eq!(
            render_partial(text, &data).unwrap(),
            "env: staging\nreplicas: \ndone"
        );
        assert!(render(text, &data).is_err(), "a full render still refuses");
        // Syntax errors and bounds still fail.
        assert!(render_partial("{{ if }}", &data).is_err());
        assert!(render_partial("{{ range .Values.x }}", &data).is_err());
    }

    #[test]
    fn go_tazuna_files_render_as_go_renders_them() {
        assert_eq!(
            ok("path: ./overlays/{{ .Environment }}"),
            "path: ./overlays/production"
        );
        assert_eq!(
            ok("{{ if eq .Environment \"production\" }}replicas: 5{{ else }}replicas: 1{{ end }}"),
            "replicas: 5"
        );
        assert_eq!(
            ok(
                "{{ if eq .Environment \"staging\" }}a{{ else if eq .Cluster.Labels.region \"tokyo\" }}b{{ else }}c{{ end }}"
            ),
            "b"
        );
        assert_eq!(
            ok("region: {{ .Cluster.Labels.region | quote }}"),
            "region: \"tokyo\""
        );
        assert_eq!(
            ok("{{ range .Values.features }}- {{ . }}\n{{ end }}"),
            "- a\n- b\n"
        );
        assert_eq!(
            ok("{{ with .Cluster.Labels }}{{ .env }}{{ end }}"),
            "production"
        );
        assert_eq!(ok("a:\n  {{- if .Values.debug }} x{{ end }}\nb"), "a:\nb");
        assert_eq!(ok("{{ .Values.replicas -}}   \n  next"), "3next");
        assert_eq!(ok("{{/* a comment */}}x"), "x");
        assert_eq!(
            ok("{{ printf \"%s-%d\" .Values.name .Values.replicas }}"),
            "web-3"
        );
        assert_eq!(
            ok("{{ default \"x\" .Values.debug }} {{ len .Values.features }}"),
            "x 2"
        );
        assert_eq!(
            ok("{{ and (gt .Values.replicas 2) (not .Values.debug) }}"),
            "true"
        );
        assert_eq!(
            ok("{{ index .Cluster.Labels \"env\" }} {{ $.Environment }}"),
            "production production"
        );
        assert_eq!(ok("no actions: {not one}"), "no actions: {not one}");
    }

    #[test]
    fn a_missing_key_is_an_error_with_its_line_and_column() {
        let error = render("a: 1\nb: {{ .Values.regoin }}\n", &data()).unwrap_err();
        assert_eq!((error.line, error.column), (2, 7));
        assert_eq!(
            error.message,
            "map has no entry for key `regoin` in `.Values.regoin` (it has `debug`, `features`, `name`, `replicas`)"
        );
        let error = render("{{ .Environment.Name }}", &data()).unwrap_err();
        assert_eq!(
            error.message,
            "`.Environment` is a string, which has no field `Name`"
        );
    }

    #[test]
    fn malformed_templates_are_refused_with_a_position() {
        for (text, message) in [
            ("{{ if .Values.debug }}x", "`if` without `{{ end }}`"),
            ("x {{ end }}", "`{{ end }}` without a block to close"),
            ("{{ .Values.name", "unclosed action: `{{` without `}}`"),
            ("{{ nosuch 1 }}", "function `nosuch` not defined"),
            ("{{ \"open }}", "unterminated quoted string"),
            (
                "{{ $x := 1 }}",
                "variables are not supported (`$x`); use `$.` or `.`",
            ),
            (
                "{{ define \"x\" }}{{ end }}",
                "`define` is not supported in tazuna.yaml",
            ),
        ] {
            let error = render(text, &data()).unwrap_err();
            assert_eq!(error.message, message, "{text}");
        }
    }

    #[test]
    fn hostile_nesting_and_output_are_bounded() {
        let deep = format!(
            "{}x{}",
            "{{ if true }}".repeat(200),
            "{{ end }}".repeat(200)
        );
        let error = render(&deep, &data()).unwrap_err();
        assert!(
            error.message.contains("nested deeper than 64 levels"),
            "{error}"
        );
        let parens = format!("{{{{ {}1{} }}}}", "(".repeat(200), ")".repeat(200));
        assert!(
            render(&parens, &data())
                .unwrap_err()
                .message
                .contains("nested deeper")
        );
        // A range that would write far past the output cap stops at it.
        let wide = json!({ "Values": { "many": vec![0; 5000] } });
        let text = format!(
            "{{{{ range .Values.many }}}}{{{{ range $.Values.many }}}}{}{{{{ end }}}}{{{{ end }}}}",
            "x".repeat(4096)
        );
        assert!(
            render(&text, &wide)
                .unwrap_err()
                .message
                .contains("renders more than")
        );
    }
}
