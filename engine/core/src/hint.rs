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
