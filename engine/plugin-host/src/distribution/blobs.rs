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

    /// The component digest that `manifest_digest` was pulled as, if this
    /// cache pulled it.
    pub fn pulled_as(&self, manifest_digest: &str) -> Option<String> {
        let hex = manifest_digest.strip_prefix("sha256:")?;
        let path = self.dir.as_ref()?.parent()?.join("by-manifest").join(hex);
        let text = std::fs::read_to_string(path).ok()?;
        Some(text.trim().to_owned())
    }

    /// Remember that `manifest_digest` was pulled as `component_digest`.
    pub fn record_pull(&self, manifest_digest: &str, component_digest: &str) {
        let (Some(dir), Some(hex)) = (&self.dir, manifest_digest.strip_prefix("sha256:")) else {
            return;
        };
        let Some(root) = dir.parent() else { return };
        let dir = root.join("by-manifest");
        let written = std::fs::create_dir_all(&dir).and_then(|()| {
            let temporary = dir.join(format!(".{hex}.{}", std::process::id()));
            std::fs::write(&temporary, component_digest)?;
            std::fs::rename(&temporary, dir.join(hex))
        });
        if let Err(error) = written {
            tracing::warn!(dir = %dir.display(), %error, "cannot record where a plugin component came from; the next run pulls it again");
        }
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
    fn the_cache_remembers_which_manifest_each_component_came_from() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::new(Some(dir.path()));
        assert_eq!(blobs.pulled_as("sha256:aa"), None);
        blobs.record_pull("sha256:aa", "sha256:bb");
        assert_eq!(blobs.pulled_as("sha256:aa").as_deref(), Some("sha256:bb"));
        assert_eq!(Blobs::new(None).pulled_as("sha256:aa"), None);
    }

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
