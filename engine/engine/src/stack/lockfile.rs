//! `tazuna.lock`: read once, written only through [`LockFile::update`],
//! and never with `Writes::Discard`.

use std::path::Path;

use super::*;

/// The one way to `tazuna.lock`: read it, or change it under its lock
/// unless the run writes nothing.
#[derive(Debug, Clone)]
pub(super) struct LockFile {
    /// Where it is.
    pub(super) path: PathBuf,
    /// Whether changes reach the file.
    pub(super) writes: Writes,
    /// With `--lock-file`, the `tazuna.lock` beside the file: what the lock
    /// starts from while `path` does not exist yet (the pins and bindings a
    /// read-only mount ships).
    pub(super) seed: Option<PathBuf>,
}

impl LockFile {
    /// Where the lock of `options` is: `--lock-file`, else beside the file.
    pub(super) fn of(options: &StackOptions, writes: Writes) -> Self {
        let beside = Lockfile::path_for(&options.file);
        match &options.lock_file {
            Some(path) if *path != beside => Self {
                path: path.clone(),
                writes,
                seed: Some(beside),
            },
            _ => Self {
                path: beside,
                writes,
                seed: None,
            },
        }
    }

    /// The seed, while the lock itself does not exist yet.
    fn unseeded(&self) -> Option<&Path> {
        self.seed
            .as_deref()
            .filter(|seed| !self.path.exists() && seed.is_file())
    }

    /// The lock as the file holds it now.
    pub(super) fn load(&self) -> Result<Lockfile, LockError> {
        Lockfile::load(self.unseeded().unwrap_or(&self.path))
    }

    /// Apply `change` to the lock file; with [`Writes::Discard`], to a copy
    /// in memory that is then dropped.
    pub(super) fn update<T, E: From<LockError>>(
        &self,
        change: impl FnOnce(&mut Lockfile) -> Result<T, E>,
    ) -> Result<T, E> {
        match self.writes {
            Writes::Persist => {
                if let Some(seed) = self.unseeded() {
                    // The first write starts from the shipped lock.
                    Lockfile::load(seed)?.save(&self.path)?;
                }
                Lockfile::update(&self.path, change)
            }
            Writes::Discard => change(&mut self.load()?),
        }
    }
}
