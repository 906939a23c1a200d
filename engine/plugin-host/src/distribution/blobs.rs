//! The blob cache: components by digest, every read checked against it.

use std::path::{Path, PathBuf};

use super::*;

/// The content-addressed cache of components: `<dir>/<hex>`.
#[derive(Debug, Clone)]
pub struct Blobs {
    dir: Option<PathBuf>,
}

impl Blobs {
    /// Blobs under `<root>/blobs/sha256`, or no cache at all.
    pub fn new(root: Option<&Path>) -> Self {
        Self {
            dir: root.map(|root| root.join("blobs").join("sha256")),
        }
    }

    /// The bytes with `digest` (`sha256:<hex>`), if cached and intact.
    pub fn get(&self, digest: &str) -> Option<Vec<u8>> {
        let hex = digest.strip_prefix("sha256:")?;
        let bytes = std::fs::read(self.dir.as_ref()?.join(hex)).ok()?;
        (sha256(&bytes) == digest).then_some(bytes)
    }

    /// Keep `bytes`; a cache that cannot be written is skipped with a warning.
    pub fn put(&self, bytes: &[u8]) {
        let Some(dir) = &self.dir else { return };
        let digest = sha256(bytes);
        let hex = digest.trim_start_matches("sha256:");
        let written = std::fs::create_dir_all(dir).and_then(|()| {
            let temporary = dir.join(format!(".{hex}.{}", std::process::id()));
            std::fs::write(&temporary, bytes)?;
            std::fs::rename(&temporary, dir.join(hex))
        });
        if let Err(error) = written {
            tracing::warn!(dir = %dir.display(), %error, "cannot cache a plugin component; the next run pulls it again");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_returns_only_intact_blobs() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::new(Some(dir.path()));
        let digest = sha256(b"component");
        assert!(blobs.get(&digest).is_none());
        blobs.put(b"component");
        assert_eq!(blobs.get(&digest).as_deref(), Some(&b"component"[..]));
        let file = dir
            .path()
            .join("blobs/sha256")
            .join(digest.trim_start_matches("sha256:"));
        std::fs::write(file, b"tampered").unwrap();
        assert!(blobs.get(&digest).is_none(), "a changed file is not served");
    }
}
