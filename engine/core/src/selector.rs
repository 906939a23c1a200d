//! Label selectors over clusters, in Kubernetes' syntax: `env=production`,
//! `region!=osaka`, `tier in (a, b)`, `tier notin (c)`, `canary`, `!canary`,
//! joined by commas (all must hold).

use std::collections::BTreeMap;

/// A parsed label selector. The empty selector matches everything.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Selector {
    requirements: Vec<Requirement>,
    text: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    Absent(String),
}

/// Why a selector does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid label selector `{text}`: {reason}")]
pub struct SelectorError {
    /// The selector as written.
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

impl crate::hint::Hint for SelectorError {
    fn hint(&self) -> Option<String> {
        Some(
            "write requirements joined by commas: `env=production`, `region!=osaka`, `tier in (a,b)`, `canary`, `!canary`"
                .to_owned(),
        )
    }
}

impl Selector {
    /// Parse `text`.
    pub fn parse(text: &str) -> Result<Self, SelectorError> {
        let error = |reason: String| SelectorError {
            text: text.to_owned(),
            reason,
        };
        let mut requirements = Vec::new();
        for part in split_top(text) {
            let part = part.trim();
            if part.is_empty() {
                if text.trim().is_empty() {
                    continue;
                }
                return Err(error("an empty requirement between commas".into()));
            }
            requirements.push(requirement(part).map_err(error)?);
        }
        Ok(Self {
            requirements,
            text: text.trim().to_owned(),
        })
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| match r {
            Requirement::In(key, values) => labels.get(key).is_some_and(|v| values.contains(v)),
            Requirement::NotIn(key, values) => labels.get(key).is_none_or(|v| !values.contains(v)),
            Requirement::Exists(key) => labels.contains_key(key),
            Requirement::Absent(key) => !labels.contains_key(key),
        })
    }
}

impl std::fmt::Display for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// Split on commas outside parentheses.
fn split_top(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn requirement(part: &str) -> Result<Requirement, String> {
    if let Some(key) = part.strip_prefix('!') {
        return Ok(Requirement::Absent(label_key(key.trim())?));
    }
    if let Some((key, value)) = part.split_once("!=") {
        return Ok(Requirement::NotIn(
            label_key(key.trim())?,
            vec![label_value(value.trim())?],
        ));
    }
    if let Some((key, value)) = part.split_once('=') {
        let value = value.strip_prefix('=').unwrap_or(value);
        return Ok(Requirement::In(
            label_key(key.trim())?,
            vec![label_value(value.trim())?],
        ));
    }
    let words: Vec<&str> = part.splitn(2, char::is_whitespace).collect();
    if let [key, rest] = words[..] {
        let rest = rest.trim();
        let (negated, list) = if let Some(list) = rest.strip_prefix("notin") {
            (true, list)
        } else if let Some(list) = rest.strip_prefix("in") {
            (false, list)
        } else {
            return Err(format!(
                "`{rest}` after `{key}`: expected `in (…)` or `notin (…)`"
            ));
        };
        let list = list.trim();
        let Some(inner) = list.strip_prefix('(').and_then(|l| l.strip_suffix(')')) else {
            return Err(format!("`{list}`: a set is written `(a, b)`"));
        };
        let values = inner
            .split(',')
            .map(|v| label_value(v.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        let key = label_key(key)?;
        return Ok(if negated {
            Requirement::NotIn(key, values)
        } else {
            Requirement::In(key, values)
        });
    }
    Ok(Requirement::Exists(label_key(part)?))
}

fn label_key(key: &str) -> Result<String, String> {
    let valid = !key.is_empty()
        && key.len() <= 317
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if valid {
        Ok(key.to_owned())
    } else {
        Err(format!("`{key}` is not a label key"))
    }
}

fn label_value(value: &str) -> Result<String, String> {
    let valid = value.len() <= 63
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        Ok(value.to_owned())
    } else {
        Err(format!("`{value}` is not a label value"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn selects_by_equality_sets_and_existence() {
        let tokyo = labels(&[("env", "production"), ("region", "tokyo")]);
        let osaka = labels(&[("env", "production"), ("region", "osaka"), ("canary", "")]);
        let staging = labels(&[("env", "staging")]);
        let select = |text: &str| {
            let selector = Selector::parse(text).unwrap();
            [&tokyo, &osaka, &staging]
                .iter()
                .map(|l| selector.matches(l))
                .collect::<Vec<_>>()
        };
        assert_eq!(select("env=production"), [true, true, false]);
        assert_eq!(
            select("env==production,region!=osaka"),
            [true, false, false]
        );
        assert_eq!(select("region in (tokyo, osaka)"), [true, true, false]);
        assert_eq!(select("region notin (tokyo)"), [false, true, true]);
        assert_eq!(select("canary"), [false, true, false]);
        assert_eq!(select("!canary"), [true, false, true]);
        assert_eq!(select(""), [true, true, true]);
    }

    #[test]
    fn a_malformed_selector_names_the_requirement() {
        let error = Selector::parse("env=production,,x").unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid label selector `env=production,,x`: an empty requirement between commas"
        );
        let error = Selector::parse("region within (a)").unwrap_err();
        assert!(error.reason.contains("expected `in (…)`"), "{error}");
        assert!(Selector::parse("region in a,b").is_err());
        assert!(Selector::parse("a b=c").is_err());
    }
}
