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
}

#[cfg(test)]
mod tests {
    /// The rule above, checked: no `#[error(...)]` message of the engine's
    /// crates carries a `hint:` line; hints go through [`super::Hint`].
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
            }
        }
        assert!(offenders.is_empty(), "{offenders:#?}");
    }
}
