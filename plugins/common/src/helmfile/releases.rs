//! Reading what `helmfile template --output-dir` wrote: one directory per release, as
//! `<release>_<namespace>/<chart>/templates/<file>` (the namespace may be empty).

use std::io;
use std::path::{Path, PathBuf};

use crate::helm::{self, Read};

/// One release's objects.
#[derive(Debug)]
pub struct Release {
    /// The release's name.
    pub name: String,
    /// The release's namespace; `None` when helmfile gave it none.
    pub namespace: Option<String>,
    /// Its objects, origins prefixed with the release name
    /// (`cert-manager/cert-manager/templates/deployment.yaml#0`).
    pub read: Read,
}

/// Reads every release under `dir`, in release name order; nothing when helmfile rendered no
/// release.
pub fn read(dir: &Path) -> io::Result<Vec<Release>> {
    let mut releases = Vec::new();
    if !dir.is_dir() {
        return Ok(releases);
    }
    for release_dir in sorted_entries(dir)? {
        let name = file_name(&release_dir);
        let (release, namespace) = name.split_once('_').unwrap_or((&name, ""));
        let mut files = Vec::new();
        collect_files(&release_dir, &mut files)?;
        let mut text = String::new();
        for file in files {
            text.push_str("\n---\n");
            text.push_str(&std::fs::read_to_string(&file)?);
        }
        let mut read = helm::read(&text);
        for object in &mut read.objects.objects {
            object.origin = format!("{release}/{}", object.origin);
        }
        releases.push(Release {
            name: release.to_owned(),
            namespace: Some(namespace.to_owned()).filter(|ns| !ns.is_empty()),
            read,
        });
    }
    Ok(releases)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn sorted_entries(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut entries = std::fs::read_dir(dir)?
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<io::Result<Vec<_>>>()?;
    entries.sort();
    Ok(entries)
}

/// The files below `dir`, depth first, in name order: a chart's `crds/` before its
/// `templates/`, and subcharts (`charts/`) before both.
fn collect_files(dir: &Path, files: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in sorted_entries(dir)? {
        if entry.is_dir() {
            collect_files(&entry, files)?;
        } else {
            files.push(entry);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, path: &str, content: &str) {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    #[test]
    fn releases_keep_their_namespace_and_objects_name_their_release() {
        let dir = std::env::temp_dir().join(format!("tazuna-helmfile-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let config_map = |name: &str| {
            format!(
                "---\n# Source: hello/templates/configmap.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"
            )
        };
        write(
            &dir,
            "second_other/hello/templates/configmap.yaml",
            &config_map("second"),
        );
        write(
            &dir,
            "first_/hello/templates/configmap.yaml",
            &config_map("first"),
        );
        write(
            &dir,
            "first_/hello/templates/job.yaml",
            "---\n# Source: hello/templates/job.yaml\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations:\n    helm.sh/hook: pre-install\n",
        );
        let releases = read(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();

        let namespaces: Vec<_> = releases.iter().map(|r| r.namespace.as_deref()).collect();
        assert_eq!(namespaces, [None, Some("other")]);
        let origins: Vec<_> = releases[0]
            .read
            .objects
            .objects
            .iter()
            .map(|o| o.origin.as_str())
            .collect();
        assert_eq!(
            origins,
            [
                "first/hello/templates/configmap.yaml#0",
                "first/hello/templates/job.yaml#0"
            ]
        );
        assert_eq!(
            releases[1].read.objects.objects[0].fields["metadata"]["name"],
            "second"
        );
    }

    #[test]
    fn no_output_directory_means_no_releases() {
        assert!(read(Path::new("/nonexistent/tazuna")).unwrap().is_empty());
    }
}
