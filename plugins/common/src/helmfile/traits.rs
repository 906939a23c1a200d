//! Whether a helmfile's render is deterministic, for the host (the WIT
//! `render-traits`): only when everything it reads lies in the helmfile's
//! directory, and nothing there, nor in the values it is given, calls a
//! function that draws a value anew (see [`tazuna_sdk::traits::templates`]).

use std::path::Path;

use serde_json::Value;
use tazuna_sdk::traits::templates::{SCAN_LIMIT, may_draw_anew};

/// Keys of a helmfile through which something outside its directory takes
/// part in a render: a chart repository, another helmfile, a command, an
/// encrypted file, a patch or a chart built on the fly.
const REACHES_OUT: &[&str] = &[
    "repositories",
    "helmfiles",
    "bases",
    "hooks",
    "secrets",
    "postRenderer",
    "postRendererArgs",
    "transformers",
    "jsonPatches",
    "strategicMergePatches",
    "dependencies",
    "kustomize",
];

/// Whether rendering the helmfile `file` with `values` (the texts of every
/// values file and state value it is given) twice gives the same output.
/// False whenever that is not sure: values read from the environment as the
/// tool starts (`unknown`), a helmfile that is not self-contained (see
/// [`self_contained`]), or a function that draws anew in its directory.
pub fn deterministic(file: &str, values: &[String], unknown: bool) -> bool {
    !unknown && self_contained(Path::new(file)).is_some_and(|dir| !may_draw_anew(&dir, values))
}

/// The directory of the helmfile `file` when everything its render reads
/// lies in that directory: the helmfile is one plain YAML document (no
/// `.gotmpl`, no `{{`, no `helmfile.d`) whose every release names a chart
/// directory below it, with none of [`REACHES_OUT`] and no string that leads
/// out of it (an absolute path, `..`, a URL). `None` whenever that is not
/// sure.
pub fn self_contained(file: &Path) -> Option<std::path::PathBuf> {
    let name = file.file_name()?.to_str()?;
    if !(name.ends_with(".yaml") || name.ends_with(".yml")) {
        return None;
    }
    let metadata = std::fs::symlink_metadata(file).ok()?;
    if !metadata.is_file() || metadata.len() > SCAN_LIMIT {
        return None;
    }
    let text = std::fs::read_to_string(file).ok()?;
    if text.contains("{{") {
        return None;
    }
    let mut documents = crate::yaml::documents(&text);
    let helmfile = documents.next()?.ok()?.value;
    if documents.any(|more| more.map_or(true, |doc| !doc.value.is_null())) {
        return None;
    }
    if reaches_out(&helmfile) {
        return None;
    }
    let dir = file.parent()?.to_path_buf();
    let releases = helmfile.get("releases")?.as_array()?;
    let local = releases.iter().all(|release| {
        release["chart"]
            .as_str()
            .is_some_and(|chart| dir.join(chart).join("Chart.yaml").is_file())
    });
    (local && !releases.is_empty()).then_some(dir)
}

/// Whether `value` has a key of [`REACHES_OUT`], or a string that names
/// something outside the helmfile's directory.
fn reaches_out(value: &Value) -> bool {
    match value {
        Value::String(text) => {
            text.starts_with('/')
                || text.contains("://")
                || text.split(['/', '\\']).any(|part| part == "..")
        }
        Value::Array(items) => items.iter().any(reaches_out),
        Value::Object(map) => map
            .iter()
            .any(|(key, value)| REACHES_OUT.contains(&key.as_str()) || reaches_out(value)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_helmfile_is_self_contained_only_when_its_render_reads_nothing_outside_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("charts/a")).unwrap();
        std::fs::write(
            root.join("charts/a/Chart.yaml"),
            "name: a\nversion: 0.1.0\n",
        )
        .unwrap();
        let helmfile = |text: &str| {
            std::fs::write(root.join("helmfile.yaml"), text).unwrap();
            self_contained(&root.join("helmfile.yaml"))
        };
        let local = "releases:\n  - name: a\n    chart: ./charts/a\n    values: [a.yaml, {x: 1}]\n";
        assert_eq!(helmfile(local).as_deref(), Some(root));
        assert_eq!(
            self_contained(&root.join("helmfile.yaml")).as_deref(),
            Some(root),
            "the file itself"
        );
        for (text, why) in [
            (
                "releases:\n  - {name: a, chart: ../charts/a}\n",
                "a chart outside",
            ),
            (
                "releases:\n  - {name: a, chart: ./charts/b}\n",
                "no such chart",
            ),
            (
                "releases:\n  - {name: a, chart: oci://r.example/a}\n",
                "a remote chart",
            ),
            (
                "releases:\n  - {name: a, chart: ./charts/a, values: [/etc/v.yaml]}\n",
                "an absolute path",
            ),
            (
                "releases:\n  - {name: a, chart: ./charts/a, hooks: [{events: [prepare], command: date}]}\n",
                "a hook",
            ),
            (
                "helmfiles: [../other]\nreleases:\n  - {name: a, chart: ./charts/a}\n",
                "another helmfile",
            ),
            (
                "releases:\n  - {name: a, chart: '{{ .Values.chart }}'}\n",
                "a template",
            ),
            ("releases: []\n", "no release"),
            (
                "releases:\n  - {name: a, chart: ./charts/a}\n---\nreleases: []\n",
                "two parts",
            ),
        ] {
            assert_eq!(helmfile(text), None, "{why}");
        }
        // Built to hang or exhaust the host: sized or typed, never read.
        std::fs::remove_file(root.join("helmfile.yaml")).unwrap();
        let huge = std::fs::File::create(root.join("helmfile.yaml")).unwrap();
        huge.set_len(64 * 1024 * 1024 * 1024).unwrap();
        assert_eq!(
            self_contained(&root.join("helmfile.yaml")),
            None,
            "a 64 GiB helmfile"
        );
        std::fs::remove_file(root.join("helmfile.yaml")).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/dev/zero", root.join("helmfile.yaml")).unwrap();
            assert_eq!(
                self_contained(&root.join("helmfile.yaml")),
                None,
                "/dev/zero as the helmfile"
            );
            std::fs::remove_file(root.join("helmfile.yaml")).unwrap();
        }
        // helmfile prefers the template; so is it taken to reach out.
        helmfile(local);
        std::fs::write(root.join("helmfile.yaml.gotmpl"), local).unwrap();
        let found = super::super::find_helmfile(root).unwrap();
        assert_eq!(
            self_contained(Path::new(&found)),
            None,
            "helmfile.yaml.gotmpl first"
        );
    }

    #[test]
    fn only_a_self_contained_helmfile_without_drawing_functions_is_deterministic() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("charts/a/templates")).unwrap();
        std::fs::write(
            root.join("charts/a/Chart.yaml"),
            "name: a\nversion: 0.1.0\n",
        )
        .unwrap();
        std::fs::write(
            root.join("charts/a/templates/cm.yaml"),
            "x: {{ .Values.x }}\n",
        )
        .unwrap();
        std::fs::write(
            root.join("helmfile.yaml"),
            "releases:\n  - {name: a, chart: ./charts/a, values: [a.yaml]}\n",
        )
        .unwrap();
        std::fs::write(root.join("a.yaml"), "x: 1\n").unwrap();
        let file = root.join("helmfile.yaml");
        let file = file.to_str().unwrap();
        assert!(deterministic(file, &[], false));
        assert!(
            !deterministic(file, &[], true),
            "a var read from the environment"
        );
        assert!(
            !deterministic(file, &["{\"v\": \"{{ now }}\"}".to_owned()], false),
            "a static var that calls now"
        );
        std::fs::write(
            root.join("a.yaml.gotmpl"),
            "x: {{ exec \"date\" (list) }}\n",
        )
        .unwrap();
        assert!(
            !deterministic(file, &[], false),
            "a values template that runs a command"
        );
    }
}
