//! Paths from `tazuna.yaml`, checked and turned into guest paths inside the manifest directory.
//!
//! The host maps a guest path such as `/manifest/overlays/prod` to the directory behind it when
//! it passes the path to a tool; it refuses paths that leave their mount. Checking here first
//! turns a path that climbs out (`../other`) or is absolute into a config error that names the
//! field, instead of a tool failing on a path it cannot find.

use std::path::{Component, Path};

use tazuna_sdk::Diagnostic;

/// `path` (relative to the manifest directory, as written in `tazuna.yaml`) as a guest path
/// under `workdir`, normalised. `field` is the JSON pointer or field name reported on error.
pub fn inside(workdir: &str, path: &str, field: &str) -> Result<String, Diagnostic> {
    let mut parts: Vec<&str> = Vec::new();
    for component in Path::new(path).components() {
        match component {
            Component::CurDir => {}
            Component::Normal(part) => parts.push(part.to_str().expect("from a str")),
            Component::ParentDir if parts.pop().is_some() => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(Diagnostic::error(format!(
                    "`{path}` is outside the manifest directory; give a path relative to the file that declares the manifest, without leading `/` or `..` that climbs out"
                ))
                .at(field));
            }
        }
    }
    let workdir = workdir.trim_end_matches('/');
    Ok(if parts.is_empty() {
        workdir.to_owned()
    } else {
        format!("{workdir}/{}", parts.join("/"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_normalised_under_the_workdir() {
        assert_eq!(
            inside("/manifest", "./overlays/prod", "path").unwrap(),
            "/manifest/overlays/prod"
        );
        assert_eq!(
            inside("/manifest/", "a/../b/", "path").unwrap(),
            "/manifest/b"
        );
        assert_eq!(inside("/manifest", ".", "path").unwrap(), "/manifest");
    }

    #[test]
    fn paths_that_leave_the_workdir_are_config_errors_naming_the_field() {
        for bad in ["../base", "a/../../b", "/etc"] {
            let error = inside("/manifest", bad, "/valuesFiles/0").unwrap_err();
            assert!(error.is_error());
            assert_eq!(error.path.as_deref(), Some("/valuesFiles/0"), "{bad}");
            assert!(error.message.contains(bad), "{}", error.message);
        }
    }
}
