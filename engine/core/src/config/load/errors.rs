//! Serde and YAML errors in the words of the file: which section, what was
//! expected and what was found.

use super::*;

pub(super) fn syntax_error(source: &Source, err: &serde_yaml::Error) -> ConfigError {
    static POSITION: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r" at line \d+ column \d+").unwrap());
    let message = err.to_string();
    let message = POSITION.replace(&message, "").into_owned();
    let (mut line, mut column) = err
        .location()
        .map_or((1, 1), |location| (location.line(), location.column()));
    // libyaml often gives up at the end of the file, past the last line that has text;
    // point just after that line instead, where the reader sees the problem.
    let lines: Vec<&str> = source.text().lines().collect();
    if lines
        .get(line - 1)
        .is_none_or(|text| text.trim().is_empty())
        && let Some((index, text)) = lines[..(line - 1).min(lines.len())]
            .iter()
            .enumerate()
            .rev()
            .find(|(_, text)| !text.trim().is_empty())
    {
        line = index + 1;
        column = text.trim_end().chars().count() + 1;
    }
    let at = source.span_at(line, column, 1);
    ConfigError::Syntax { message, at }
}

/// What a mapping at `path` is, for messages such as "unknown field `x` in manifest".
pub(super) fn section(path: &YamlPath) -> String {
    match path.0.as_slice() {
        [] => "the root".to_owned(),
        [Seg::Key(spec)] if &**spec == "spec" => "`spec`".to_owned(),
        [Seg::Key(spec), Seg::Key(envs), Seg::Key(name)]
            if &**spec == "spec" && &**envs == "environments" =>
        {
            format!("environment `{name}`")
        }
        [.., Seg::Key(list), Seg::Index(_)] => match &**list {
            "manifests" | "children" => "manifest".to_owned(),
            "tests" => "test".to_owned(),
            "plugins" => "plugin".to_owned(),
            "providers" => "provider".to_owned(),
            "includes" => "include".to_owned(),
            other => format!("`{other}` entry"),
        },
        [.., Seg::Key(key)] => format!("`{key}`"),
        [.., Seg::Index(_)] => "list entry".to_owned(),
    }
}

pub(super) fn backticked_words(text: &str) -> Vec<String> {
    static WORD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"`([^`]*)`").unwrap());
    WORD.captures_iter(text)
        .map(|caps| caps[1].to_owned())
        .collect()
}

pub(super) fn humanize_expected(expected: &str) -> String {
    static STRUCT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^struct \w+$").unwrap());
    match expected {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a non-negative integer".to_owned(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "an integer".to_owned(),
        "a map" => "a mapping".to_owned(),
        _ if STRUCT.is_match(expected) => "a mapping".to_owned(),
        _ if expected.starts_with("enum ") => "a string".to_owned(),
        _ => expected.to_owned(),
    }
}

pub(super) fn humanize_found(found: &str) -> String {
    static QUOTED: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r#"^(string|character) "(.*)"$"#).unwrap());
    match QUOTED.captures(found) {
        Some(caps) => format!("{} `{}`", &caps[1], &caps[2]),
        None => found.replace("map", "mapping"),
    }
}

pub(super) fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("boolean `{b}`"),
        Value::Number(n) => format!("number `{}`", clip(&n.to_string())),
        Value::String(s) => format!("string `{}`", clip(s)),
        Value::Sequence(_) => "a sequence".to_owned(),
        Value::Mapping(_) => "a mapping".to_owned(),
        Value::Tagged(tagged) => format!("tagged value `{}`", clip(&tagged.tag.to_string())),
    }
}

/// At most [`CLIPPED`] characters of `text` (with `…` when cut), on one
/// line, so that a value quoted in an error keeps the error readable.
fn clip(text: &str) -> String {
    const CLIPPED: usize = 60;
    let flat = text.replace(['\n', '\r'], " ");
    if flat.chars().count() <= CLIPPED {
        return flat;
    }
    let mut kept: String = flat.chars().take(CLIPPED).collect();
    kept.push('…');
    kept
}

pub(super) fn to_json(
    doc: &Document,
    path: &YamlPath,
    value: &Value,
) -> Result<serde_json::Value, ConfigError> {
    serde_json::to_value(value).map_err(|err| {
        doc.invalid(
            path,
            format!("`{path}` cannot be represented as JSON: {err}"),
            Some("use string keys in this mapping".to_owned()),
        )
    })
}

#[cfg(test)]
mod clip_tests {
    use super::*;

    /// Found by the fuzzer: a whole document quoted into one error line.
    #[test]
    fn a_long_value_is_clipped_in_errors() {
        let long = "apiVersion: tazuna.pepabo.com/v1 ".repeat(20);
        let described = describe(&Value::String(long));
        assert!(described.chars().count() < 80, "{described}");
        assert!(described.ends_with("…`"), "{described}");
        assert_eq!(describe(&Value::String("a\nb".into())), "string `a b`");
    }
}
