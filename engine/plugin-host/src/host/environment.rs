//! The process environment as the host's credential lookups read it (AWS's
//! chain, Vault's token, SOPS's age identities): the real one in use, a
//! fixed map in tests.

use std::collections::HashMap;
use std::path::PathBuf;

/// The variables a lookup reads.
pub trait Environment {
    /// The variable `name`, if set and not empty.
    fn var(&self, name: &str) -> Option<String>;

    /// `$HOME`, if set.
    fn home(&self) -> Option<PathBuf> {
        self.var("HOME").map(PathBuf::from)
    }
}

/// The process environment.
pub struct ProcessEnvironment;

impl Environment for ProcessEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|value| !value.is_empty())
    }
}

impl Environment for HashMap<&str, String> {
    fn var(&self, name: &str) -> Option<String> {
        self.get(name).cloned()
    }
}
