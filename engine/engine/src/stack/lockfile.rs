//! `tazuna.lock`: read once, written only through [`LockFile::update`],
//! and never with `Writes::Discard`.

use super::*;

/// The one way to `tazuna.lock`: read it, or change it under its lock
/// unless the run writes nothing.
#[derive(Debug, Clone)]
pub(super) struct LockFile {
    /// Where it is.
    pub(super) path: PathBuf,
    /// Whether changes reach the file.
    pub(super) writes: Writes,
}

impl LockFile {
    /// The lock as the file holds it now.
    pub(super) fn load(&self) -> Result<Lockfile, LockError> {
        Lockfile::load(&self.path)
    }

    /// Apply `change` to the lock file; with [`Writes::Discard`], to a copy
    /// in memory that is then dropped.
    pub(super) fn update<T, E: From<LockError>>(
        &self,
        change: impl FnOnce(&mut Lockfile) -> Result<T, E>,
    ) -> Result<T, E> {
        match self.writes {
            Writes::Persist => Lockfile::update(&self.path, change),
            Writes::Discard => change(&mut self.load()?),
        }
    }
}
