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

    /// The component digest that `manifest_digest` was pulled as from the
    /// repository `origin` (`registry/repository`), if this cache pulled it
    /// from there. A component pulled from another repository under the same
    /// manifest digest is not served: the record names its origin and is
    /// checked on every read.
    pub fn pulled_as(&self, origin: &str, manifest_digest: &str) -> Option<String> {
        let path = self.provenance(origin, manifest_digest)?;
        let text = std::fs::read_to_string(path).ok()?;
        let (recorded, component) = text.trim().split_once('\n')?;
        (recorded == origin).then(|| component.trim().to_owned())
    }

    /// Remember that `manifest_digest` from `origin` was pulled as
    /// `component_digest`.
    pub fn record_pull(&self, origin: &str, manifest_digest: &str, component_digest: &str) {
        let Some(path) = self.provenance(origin, manifest_digest) else {
            return;
        };
        let Some(dir) = path.parent() else { return };
        let written = std::fs::create_dir_all(dir).and_then(|()| {
            let temporary = dir.join(format!(".tmp.{}", std::process::id()));
            std::fs::write(&temporary, format!("{origin}\n{component_digest}\n"))?;
            std::fs::rename(&temporary, &path)
        });
        if let Err(error) = written {
            tracing::warn!(dir = %dir.display(), %error, "cannot record where a plugin component came from; the next run pulls it again");
        }
    }

    /// `<root>/blobs/by-origin/<sha256 of origin>/<manifest hex>`.
    fn provenance(&self, origin: &str, manifest_digest: &str) -> Option<PathBuf> {
        let hex = manifest_digest.strip_prefix("sha256:")?;
        if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let origin_key = sha256(origin.as_bytes());
        let origin_hex = origin_key.trim_start_matches("sha256:");
        Some(
            self.dir
                .as_ref()?
                .parent()?
                .join("by-origin")
                .join(origin_hex)
                .join(hex),
        )
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
        let team = "registry.example/team/plugin";
        assert_eq!(blobs.pulled_as(team, "sha256:aa"), None);
        blobs.record_pull(team, "sha256:aa", "sha256:bb");
        assert_eq!(
            blobs.pulled_as(team, "sha256:aa").as_deref(),
            Some("sha256:bb")
        );
        assert_eq!(Blobs::new(None).pulled_as(team, "sha256:aa"), None);
        // Cached for another repository: not served for this one.
        assert_eq!(
            blobs.pulled_as("registry.example/other/plugin", "sha256:aa"),
            None
        );
        // A record whose origin was edited is not believed either.
        let record = dir
            .path()
            .join("blobs/by-origin")
            .join(sha256(team.as_bytes()).trim_start_matches("sha256:"))
            .join("aa");
        std::fs::write(&record, "registry.example/other/plugin\nsha256:bb\n").unwrap();
        assert_eq!(blobs.pulled_as(team, "sha256:aa"), None);
        assert_eq!(blobs.pulled_as(team, "sha256:../../x"), None);
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
