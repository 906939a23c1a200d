//! The on-disk cache of compiled components.
//!
//! Compiling a component with Cranelift takes tens of milliseconds; loading a
//! precompiled one takes about one. Entries live under
//! `<cache>/compiled/<engine-key>/<component-sha256>.cwasm`, where the engine key
//! hashes wasmtime's compatibility hash together with Tazuna's version, so a new
//! wasmtime or new engine settings never load stale code. Only files this cache
//! wrote itself are ever deserialized. Writes go to a temporary file that is
//! renamed into place, so concurrent runs never see half a file. When the cache
//! directory cannot be written, components are compiled in memory and one warning
//! says why.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

/// Where compiled components are kept, if anywhere.
#[derive(Debug, Clone)]
pub struct CompileCache {
    dir: Option<PathBuf>,
}

/// How a component was obtained, for `--log-level debug` and benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provenance {
    /// Loaded from a precompiled file: nothing was compiled.
    Cached,
    /// Compiled now, and stored for the next run.
    Compiled,
    /// Compiled now; the cache could not be written.
    CompiledUncached,
}

impl CompileCache {
    /// A cache under `root/compiled/<engine-key>/`, or none.
    pub fn new(engine: &Engine, root: Option<&Path>) -> Self {
        let dir = root.map(|root| root.join("compiled").join(engine_key(engine)));
        Self { dir }
    }

    /// Load the component with content digest `digest` (hex sha256 of `bytes`),
    /// compiling and storing it when it is not cached yet.
    pub fn load(
        &self,
        engine: &Engine,
        digest: &str,
        bytes: &[u8],
    ) -> wasmtime::Result<(Component, Provenance)> {
        let Some(dir) = &self.dir else {
            return Ok((Component::new(engine, bytes)?, Provenance::CompiledUncached));
        };
        let path = dir.join(format!("{digest}.cwasm"));
        if path.is_file() {
            // SAFETY: the file was written by `store` below, from `Component::serialize`
            // of an engine with the same compatibility hash (it is part of the
            // directory name); wasmtime re-checks that hash in the file header.
            #[allow(unsafe_code)]
            match unsafe { Component::deserialize_file(engine, &path) } {
                Ok(component) => return Ok((component, Provenance::Cached)),
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "ignoring unreadable compiled component; recompiling");
                }
            }
        }
        let component = Component::new(engine, bytes)?;
        let provenance = match store(&path, &component) {
            Ok(()) => Provenance::Compiled,
            Err(error) => {
                tracing::warn!(
                    dir = %dir.display(),
                    %error,
                    "cannot write the plugin compile cache; compiling in memory (set TAZUNA_CACHE_DIR to a writable directory to make later runs faster)"
                );
                Provenance::CompiledUncached
            }
        };
        Ok((component, provenance))
    }
}

fn store(path: &Path, component: &Component) -> std::io::Result<()> {
    let dir = path.parent().expect("cache entries live in a directory");
    std::fs::create_dir_all(dir)?;
    let bytes = component
        .serialize()
        .map_err(|error| std::io::Error::other(format!("{error:#}")))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, &bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// A directory name that changes whenever compiled code would be incompatible.
fn engine_key(engine: &Engine) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    env!("CARGO_PKG_VERSION").hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}
