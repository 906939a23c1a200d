//! Evaluating nodes against the data: fields, variables, pipelines, the
//! blocks, and the bounds on work and output.

use serde_json::Value;

use super::functions::call;
use super::values::{kind, print, truthy};
use super::*;

/// One render's evaluation: the source (for positions), the data, the
/// output so far and the work done.
pub(super) struct Eval<'a> {
    source: &'a str,
    root: &'a Value,
    out: &'a mut String,
    /// Nodes evaluated so far.
    steps: usize,
    keys: Keys,
}

impl<'a> Eval<'a> {
    /// An evaluation of `source` with `root` as `.`, writing to `out`.
    pub(super) fn new(source: &'a str, root: &'a Value, out: &'a mut String, keys: Keys) -> Self {
        Eval {
            source,
            root,
            out,
            steps: 0,
            keys,
        }
    }

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

    pub(super) fn nodes(&mut self, nodes: &[Node], dot: &Value) -> Result<(), TemplateError> {
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
