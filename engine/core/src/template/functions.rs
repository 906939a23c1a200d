//! The functions such files use: Go's builtins and a few of sprig's.

use serde_json::Value;

use super::values::{compare, equal, kind, text_of, truthy};

fn arity(name: &str, args: &[Value], n: usize) -> Result<(), String> {
    if args.len() == n {
        Ok(())
    } else {
        Err(format!("`{name}` takes {n} arguments, got {}", args.len()))
    }
}

/// The functions: Go's builtins and the sprig ones Tazuna files use.
pub(super) fn call(name: &str, args: &[Value]) -> Result<Value, String> {
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
pub(super) fn printf(format: &str, args: &[Value]) -> Result<String, String> {
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
