//! Reading a template into nodes: text, actions and blocks, with the trim
//! markers, comments and nesting bounds of Go's `text/template`.

use super::*;

pub(super) struct Parser<'a> {
    source: &'a str,
}

impl<'a> Parser<'a> {
    pub(super) fn new(source: &'a str) -> Self {
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

    pub(super) fn parse(&self) -> Result<Vec<Node>, TemplateError> {
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
