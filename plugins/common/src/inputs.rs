//! Finds the files a manifest's `path` names.
//!
//! The path is relative to the manifest directory (the request's `workdir`, preopened read-only
//! by the host) and names one of:
//!
//! - a file, read whatever its extension;
//! - a directory, walked recursively for `*.yaml`, `*.yml` and `*.json` files (symlinked files are
//!   read, symlinked directories are not walked);
//! - a glob, when it contains `*`, `?` or `[`: matching files with those extensions are read, and
//!   matching directories are walked.
//!
//! Files come back sorted by the bytes of their path, so a render never depends on the order the
//! file system lists entries in.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use tazuna_sdk::PluginError;

use crate::documents::Format;

/// One file to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// The path as the user sees it: relative to the manifest directory.
    pub name: String,
    /// The path to open.
    pub path: PathBuf,
    /// How to parse it.
    pub format: Format,
}

/// What a manifest's path turned out to name.
#[derive(Debug)]
pub struct Found {
    /// The files to read, sorted by name.
    pub inputs: Vec<Input>,
    /// Whether the path named a directory or a glob (rather than one file), for messages about
    /// finding nothing to read.
    pub searched: bool,
}

/// Finds the files `path` names inside `workdir`.
pub fn find(workdir: &Path, path: &str) -> Result<Found, PluginError> {
    let mut found = Found {
        inputs: Vec::new(),
        searched: true,
    };
    if path.contains(['*', '?', '[']) {
        glob(workdir, path, &mut found.inputs)?;
        if found.inputs.is_empty() {
            return Err(PluginError::not_found(path));
        }
    } else {
        let full = workdir.join(path);
        let metadata = fs::metadata(&full).map_err(|error| match error.kind() {
            io::ErrorKind::NotFound => PluginError::not_found(path),
            _ => PluginError::other(format_args!("cannot read `{path}`: {error}")),
        })?;
        if metadata.is_dir() {
            walk(workdir, &full, &mut found.inputs)?;
        } else {
            found.searched = false;
            found.inputs.push(input(workdir, full));
        }
    }
    found
        .inputs
        .sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    found.inputs.dedup();
    Ok(found)
}

fn glob(workdir: &Path, pattern: &str, inputs: &mut Vec<Input>) -> Result<(), PluginError> {
    let root = glob::Pattern::escape(&workdir.to_string_lossy());
    let full = format!("{}/{pattern}", root.trim_end_matches('/'));
    let matches = glob::glob(&full)
        .map_err(|error| PluginError::other(format_args!("invalid glob `{pattern}`: {error}")))?;
    for entry in matches {
        let path = entry.map_err(|error| {
            let name = display_name(workdir, error.path());
            let error = error.error();
            PluginError::other(format_args!("cannot read `{name}`: {error}"))
        })?;
        if path.is_dir() {
            walk(workdir, &path, inputs)?;
        } else if has_manifest_extension(&path) {
            inputs.push(input(workdir, path));
        }
    }
    Ok(())
}

fn walk(workdir: &Path, dir: &Path, inputs: &mut Vec<Input>) -> Result<(), PluginError> {
    let cannot_read = |error: io::Error| {
        let name = display_name(workdir, dir);
        PluginError::other(format_args!("cannot read `{name}`: {error}"))
    };
    for entry in fs::read_dir(dir).map_err(cannot_read)? {
        let entry = entry.map_err(cannot_read)?;
        let path = entry.path();
        let file_type = entry.file_type().map_err(cannot_read)?;
        if file_type.is_dir() {
            walk(workdir, &path, inputs)?;
        } else if has_manifest_extension(&path) && (file_type.is_file() || path.is_file()) {
            inputs.push(input(workdir, path));
        }
    }
    Ok(())
}

fn input(workdir: &Path, path: PathBuf) -> Input {
    let name = display_name(workdir, &path);
    Input {
        format: Format::of(&name),
        name,
        path,
    }
}

fn has_manifest_extension(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|extension| extension.to_str()),
        Some("yaml" | "yml" | "json")
    )
}

/// `path` relative to the manifest directory, with `/` separators.
fn display_name(workdir: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(workdir).unwrap_or(path);
    let parts: Vec<_> = relative
        .components()
        .map(|part| part.as_os_str().to_string_lossy())
        .collect();
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory under the crate's target dir, removed and recreated per test.
    fn scratch(test: &str, files: &[&str]) -> PathBuf {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../target/test-scratch")
            .join(test);
        let _ = fs::remove_dir_all(&root);
        for file in files {
            let path = root.join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "").unwrap();
        }
        fs::create_dir_all(&root).unwrap();
        root
    }

    fn names(found: &Found) -> Vec<&str> {
        found
            .inputs
            .iter()
            .map(|input| input.name.as_str())
            .collect()
    }

    #[test]
    fn a_directory_is_walked_in_byte_order() {
        let root = scratch(
            "walk",
            &[
                "m/b.yaml",
                "m/a.yml",
                "m/B.json",
                "m/sub/z.yaml",
                "m/README.md",
                "m/a.yaml.bak",
                "m/sub.yaml",
            ],
        );
        let found = find(&root, "m").unwrap();
        assert_eq!(
            names(&found),
            [
                "m/B.json",
                "m/a.yml",
                "m/b.yaml",
                "m/sub.yaml",
                "m/sub/z.yaml"
            ]
        );
        assert!(found.searched);
        assert_eq!(found.inputs[0].format, Format::Json);
        assert_eq!(find(&root, "./m/").unwrap().inputs, found.inputs);
    }

    #[test]
    fn a_file_is_read_whatever_its_extension() {
        let root = scratch("file", &["install.txt"]);
        let found = find(&root, "install.txt").unwrap();
        assert_eq!(names(&found), ["install.txt"]);
        assert!(!found.searched);
        assert_eq!(found.inputs[0].format, Format::Yaml);
    }

    #[test]
    fn a_glob_matches_files_and_walks_directories() {
        let root = scratch(
            "glob",
            &[
                "crds/b.yaml",
                "crds/a.yaml",
                "crds/notes.txt",
                "crds/nested/c.json",
                "other/d.yaml",
            ],
        );
        let found = find(&root, "crds/*").unwrap();
        assert_eq!(
            names(&found),
            ["crds/a.yaml", "crds/b.yaml", "crds/nested/c.json"]
        );
        let found = find(&root, "*/[ad].yaml").unwrap();
        assert_eq!(names(&found), ["crds/a.yaml", "other/d.yaml"]);
    }

    #[test]
    fn a_missing_path_is_not_found() {
        let root = scratch("missing", &["a.yaml"]);
        assert_eq!(
            find(&root, "nope.yaml").unwrap_err(),
            PluginError::NotFound("nope.yaml".into())
        );
        assert_eq!(
            find(&root, "*.json").unwrap_err(),
            PluginError::NotFound("*.json".into())
        );
    }
}
