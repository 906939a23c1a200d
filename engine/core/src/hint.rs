//! What to do about an error, kept apart from what is wrong.
//!
//! Every error type of Tazuna implements [`Hint`]. Its `Display` says only
//! what is wrong; the hint says what to do, and the binary prints it as its
//! own `hint:` line after walking the error chain, so hints never travel
//! inside message strings.

/// What a person can do about an error.
pub trait Hint {
    /// The advice, if there is any; one line, without a `hint:` prefix.
    fn hint(&self) -> Option<String> {
        None
    }

    /// Every piece of advice, one line each (as uv's `hints()`): an error
    /// that gathers several (objects owned elsewhere, namespaces missing)
    /// gives each its own `hint:` line. By default [`Self::hint`], if any.
    fn hints(&self) -> Vec<String> {
        self.hint().into_iter().collect()
    }
}

/// An error that is a message and what to do about it, for code that has no
/// error type of its own to say it (a command's own check, a harness step).
#[derive(Debug)]
pub struct Advised {
    message: String,
    hints: Vec<String>,
}

impl Advised {
    /// The error `message`, with `hint` for what to do.
    pub fn new(message: impl Into<String>, hint: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hints: vec![hint.into()],
        }
    }
}

impl std::fmt::Display for Advised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Advised {}

impl Hint for Advised {
    fn hint(&self) -> Option<String> {
        self.hints.first().cloned()
    }

    fn hints(&self) -> Vec<String> {
        self.hints.clone()
    }
}

#[cfg(test)]
mod tests {
    /// The rule above, checked: no source of the engine's crates writes a
    /// `hint:` line into a message (an `#[error(...)]` or any other string)
    /// but the CLI's one writer, `failure::with_hints`; hints go through
    /// [`super::Hint`]. Tests, which read what the CLI printed, may.
    #[test]
    fn no_error_message_carries_a_hint() {
        let engine = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut dirs = vec![engine];
        let mut offenders = Vec::new();
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    if path.file_name().is_some_and(|n| n != "target") {
                        dirs.push(path);
                    }
                    continue;
                }
                if path.extension().is_none_or(|e| e != "rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                for (at, _) in text.match_indices("#[error(") {
                    let attribute = &text[at..];
                    let end = attribute.find(")]").unwrap_or(attribute.len());
                    if attribute[..end].contains("\\nhint:") {
                        offenders.push(format!("{}:{at}", path.display()));
                    }
                }
                // Outside tests and the writer, no string starts a `hint:` line.
                let writer = path.ends_with("cli/src/failure.rs");
                let tests = path.components().any(|c| c.as_os_str() == "tests");
                let source = text.split("#[cfg(test)]").next().unwrap_or_default();
                if !writer && !tests && source.contains("\\nhint: ") {
                    offenders.push(format!("{}: a `\\nhint: ` line", path.display()));
                }
            }
        }
        assert!(offenders.is_empty(), "{offenders:#?}");
    }
}
