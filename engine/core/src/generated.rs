//! Fields a render generates anew each time: helm's `randAlphaNum`, `genCA`,
//! `uuidv4` or `now`, which a chart's `lookup` guard keeps stable under
//! `helm upgrade` but which `helm template`, having no cluster, draws again on
//! every run.
//!
//! The engine renders such sources twice with identical inputs;
//! [`differences`] names the fields that came out differently, and the apply
//! side keeps their live values, as the chart's guard would have.

use std::fmt;

use serde_json::Value;

/// One step of a [`Field`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Step {
    /// A key of an object.
    Key(String),
    /// An index of an array.
    Index(usize),
}

/// Where a value sits in an object, such as `data.password`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Field(pub Vec<Step>);

impl fmt::Display for Field {
    /// `data.password`, `spec.containers[0].env[1].value`, and keys that are
    /// not plain words quoted: `metadata.annotations["checksum/secret"]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            match step {
                Step::Key(key)
                    if !key.is_empty()
                        && key
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') =>
                {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(key)?;
                }
                Step::Key(key) => write!(f, "[{key:?}]")?,
                Step::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

impl Field {
    /// The value at this field of `value`.
    pub fn get<'a>(&self, value: &'a Value) -> Option<&'a Value> {
        self.0.iter().try_fold(value, |value, step| match step {
            Step::Key(key) => value.get(key),
            Step::Index(index) => value.get(index),
        })
    }

    /// Put `new` at this field of `value`; `false` when the path to it is
    /// not there.
    pub fn set(&self, value: &mut Value, new: Value) -> bool {
        let mut at = value;
        for step in &self.0 {
            let next = match step {
                Step::Key(key) => at.get_mut(key),
                Step::Index(index) => at.get_mut(index),
            };
            match next {
                Some(next) => at = next,
                None => return false,
            }
        }
        *at = new;
        true
    }
}

/// The fields at which `a` and `b` differ, deepest first where both sides
/// have the same shape: two objects differ at the keys they do not share and
/// inside the ones they do; arrays of one length, element by element;
/// anything else, as a whole.
pub fn differences(a: &Value, b: &Value) -> Vec<Field> {
    let mut out = Vec::new();
    walk(a, b, &mut Vec::new(), &mut out);
    out
}

fn walk(a: &Value, b: &Value, at: &mut Vec<Step>, out: &mut Vec<Field>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                at.push(Step::Key(key.clone()));
                match (x.get(key), y.get(key)) {
                    (Some(x), Some(y)) => walk(x, y, at, out),
                    _ => out.push(Field(at.clone())),
                }
                at.pop();
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (index, (x, y)) in x.iter().zip(y).enumerate() {
                at.push(Step::Index(index));
                walk(x, y, at, out);
                at.pop();
            }
        }
        _ if a == b => {}
        _ => out.push(Field(at.clone())),
    }
}

/// The template functions whose output differs between two renders of the
/// same inputs: sprig's random and clock functions, and helm's key and
/// certificate generators.
const DRAWN_ANEW: &[&str] = &[
    "randAlphaNum",
    "randAlpha",
    "randAscii",
    "randNumeric",
    "randBytes",
    "randInt",
    "uuidv4",
    "shuffle",
    "now",
    "htpasswd",
    "bcrypt",
    "encryptAES",
    "getHostByName",
    "genCA",
    "genCAWithKey",
    "genPrivateKey",
    "genSelfSignedCert",
    "genSelfSignedCertWithKey",
    "genSignedCert",
    "genSignedCertWithKey",
    // helmfile's, in a `.gotmpl` values file: it runs a command.
    "exec",
];

/// More than this much chart to read, or more files than [`SCAN_FILES`], and
/// it is taken to draw values anew.
pub const SCAN_LIMIT: u64 = 64 * 1024 * 1024;

/// See [`SCAN_LIMIT`].
const SCAN_FILES: usize = 10_000;

/// Whether a chart directory and the values given to it may draw a value
/// anew on each render: some template action (`{{ … }}`) in a file of the
/// chart (its subcharts, values and helpers included) or in `values` (the
/// texts of values files and inline values, which `tpl` can render) names
/// one of the functions that do. Anything that cannot be read as text, a
/// chart archive (a packed subchart), a symbolic link or more than 64 MiB is
/// taken to draw anew: a second render then finds out. So is anything that
/// is not a directory or a regular file (a FIFO, a device), and a chart of
/// more than 10,000 files.
pub fn may_draw_anew(chart: &std::path::Path, values: &[String]) -> bool {
    if values.iter().any(|text| names_a_drawing_function(text)) {
        return true;
    }
    let mut read = 0u64;
    let mut files = 0usize;
    let mut pending = vec![chart.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return true;
        };
        for entry in entries {
            let Ok(entry) = entry else {
                return true;
            };
            let Ok(kind) = entry.file_type() else {
                return true;
            };
            if kind.is_dir() {
                pending.push(entry.path());
                continue;
            }
            if !kind.is_file() {
                return true;
            }
            // Sized before it is read: a huge file costs nothing.
            let Ok(metadata) = entry.metadata() else {
                return true;
            };
            files += 1;
            read = read.saturating_add(metadata.len());
            if read > SCAN_LIMIT || files > SCAN_FILES {
                return true;
            }
            let Ok(bytes) = std::fs::read(entry.path()) else {
                return true;
            };
            match std::str::from_utf8(&bytes) {
                Ok(text) if !names_a_drawing_function(text) => {}
                _ => return true,
            }
        }
    }
    false
}

/// The names helmfile looks for in a directory, in its order (as the
/// helmfile source does).
const HELMFILE_NAMES: &[&str] = &[
    "helmfile.yaml.gotmpl",
    "helmfile.yaml",
    "helmfile.yml.gotmpl",
    "helmfile.yml",
    "helmfile.d",
];

/// Keys of a helmfile through which something outside its directory takes
/// part in a render: a chart repository, another helmfile, a command, an
/// encrypted file, a patch or a chart built on the fly.
const HELMFILE_REACHES_OUT: &[&str] = &[
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

/// The directory of the helmfile at `path` (the file, or a directory holding
/// it) when everything its render reads lies in that directory, so that
/// [`may_draw_anew`] of the directory answers for the render: the helmfile is
/// one plain YAML document (no `.gotmpl`, no `{{`, no `helmfile.d`) whose
/// every release names a chart directory below it, with none of
/// [`HELMFILE_REACHES_OUT`] and no string that leads out of it (an absolute
/// path, `..`, a URL). `None` whenever that is not sure.
pub fn self_contained_helmfile(path: &std::path::Path) -> Option<std::path::PathBuf> {
    let file = if path.is_dir() {
        HELMFILE_NAMES
            .iter()
            .map(|name| path.join(name))
            .find(|candidate| candidate.exists())?
    } else {
        path.to_path_buf()
    };
    let name = file.file_name()?.to_str()?;
    if !(name.ends_with(".yaml") || name.ends_with(".yml")) {
        return None;
    }
    let metadata = std::fs::symlink_metadata(&file).ok()?;
    if !metadata.is_file() || metadata.len() > SCAN_LIMIT {
        return None;
    }
    let text = std::fs::read_to_string(&file).ok()?;
    if text.contains("{{") {
        return None;
    }
    let helmfile: Value = serde_yaml::from_str(&text).ok()?;
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

/// Whether `value` has a key of [`HELMFILE_REACHES_OUT`], or a string that
/// names something outside the helmfile's directory.
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
            .any(|(key, value)| HELMFILE_REACHES_OUT.contains(&key.as_str()) || reaches_out(value)),
        _ => false,
    }
}

/// Whether a template action in `text` calls a function of [`DRAWN_ANEW`].
fn names_a_drawing_function(text: &str) -> bool {
    crate::template::first_call(text, DRAWN_ANEW).is_some()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

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
            self_contained_helmfile(root)
        };
        let local = "releases:\n  - name: a\n    chart: ./charts/a\n    values: [a.yaml, {x: 1}]\n";
        assert_eq!(helmfile(local).as_deref(), Some(root));
        assert_eq!(
            self_contained_helmfile(&root.join("helmfile.yaml")).as_deref(),
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
        assert_eq!(self_contained_helmfile(root), None, "a 64 GiB helmfile");
        std::fs::remove_file(root.join("helmfile.yaml")).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/dev/zero", root.join("helmfile.yaml")).unwrap();
            assert_eq!(
                self_contained_helmfile(root),
                None,
                "/dev/zero as the helmfile"
            );
            std::fs::remove_file(root.join("helmfile.yaml")).unwrap();
        }
        // helmfile prefers the template; so is it taken to reach out.
        helmfile(local);
        std::fs::write(root.join("helmfile.yaml.gotmpl"), local).unwrap();
        assert_eq!(
            self_contained_helmfile(root),
            None,
            "helmfile.yaml.gotmpl first"
        );
    }

    #[test]
    fn a_chart_that_calls_a_random_function_may_draw_anew_and_one_without_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let chart = dir.path();
        std::fs::create_dir_all(chart.join("templates")).unwrap();
        std::fs::create_dir_all(chart.join("charts/sub/templates")).unwrap();
        std::fs::write(chart.join("Chart.yaml"), "name: app\nversion: 0.1.0\n").unwrap();
        std::fs::write(
            chart.join("templates/cm.yaml"),
            "# known, unknown and now in a comment are not calls\ndata:\n  at: {{ .Values.now | quote }}\n  v: {{ $now := 1 }}{{ $now }}\n",
        )
        .unwrap();
        std::fs::write(
            chart.join("charts/sub/templates/s.yaml"),
            "x: {{ include \"a\" . }}\n",
        )
        .unwrap();
        assert!(!may_draw_anew(chart, &[]));
        assert!(may_draw_anew(
            chart,
            &["password: '{{ randAlphaNum 16 }}'".to_owned()]
        ));

        std::fs::write(
            chart.join("charts/sub/templates/s.yaml"),
            "ca: {{- $ca := genCA \"x\" 365 }}{{ $ca.Cert | b64enc }}\n",
        )
        .unwrap();
        assert!(may_draw_anew(chart, &[]), "a subchart's genCA");
        std::fs::write(
            chart.join("charts/sub/templates/s.yaml"),
            "at: {{ now | date \"2006\" }}\n",
        )
        .unwrap();
        assert!(may_draw_anew(chart, &[]), "now");
        std::fs::remove_file(chart.join("charts/sub/templates/s.yaml")).unwrap();
        assert!(!may_draw_anew(chart, &[]));

        // A file built to exhaust memory is sized, not read (sparse: no disk).
        let huge = std::fs::File::create(chart.join("templates/huge.yaml")).unwrap();
        huge.set_len(64 * 1024 * 1024 * 1024).unwrap();
        assert!(may_draw_anew(chart, &[]), "over the limit");
        std::fs::remove_file(chart.join("templates/huge.yaml")).unwrap();
        assert!(!may_draw_anew(chart, &[]));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/dev/zero", chart.join("templates/zero.yaml")).unwrap();
            assert!(may_draw_anew(chart, &[]), "a link is not followed");
            std::fs::remove_file(chart.join("templates/zero.yaml")).unwrap();
        }

        std::fs::write(chart.join("charts/dep-1.0.0.tgz"), [0x1f, 0x8b, 0x08, 0x00]).unwrap();
        assert!(may_draw_anew(chart, &[]), "a packed subchart is not read");
        assert!(may_draw_anew(&chart.join("missing"), &[]));
    }

    #[test]
    fn only_the_fields_that_came_out_differently_are_named() {
        let first = json!({
            "kind": "Secret", "metadata": { "name": "grafana", "annotations": { "checksum/secret": "aa" } },
            "data": { "admin-user": "YWRtaW4=", "admin-password": "Zmlyc3Q=" },
            "list": [1, { "x": "a" }],
        });
        let second = json!({
            "kind": "Secret", "metadata": { "name": "grafana", "annotations": { "checksum/secret": "bb" } },
            "data": { "admin-user": "YWRtaW4=", "admin-password": "c2Vjb25k" },
            "list": [1, { "x": "b" }],
        });
        let fields: Vec<String> = differences(&first, &second)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            fields,
            [
                "data.admin-password",
                "list[1].x",
                r#"metadata.annotations["checksum/secret"]"#
            ]
        );
        assert!(differences(&first, &first).is_empty());
    }

    #[test]
    fn a_field_is_read_and_written_where_it_is() {
        let mut value = json!({ "data": { "k": "old" }, "items": [{ "v": 1 }] });
        let field = Field(vec![Step::Key("data".into()), Step::Key("k".into())]);
        assert_eq!(field.get(&value), Some(&json!("old")));
        assert!(field.set(&mut value, json!("new")));
        assert_eq!(value["data"]["k"], "new");
        let item = Field(vec![
            Step::Key("items".into()),
            Step::Index(0),
            Step::Key("v".into()),
        ]);
        assert!(item.set(&mut value, json!(2)));
        assert_eq!(value["items"][0]["v"], 2);
        let missing = Field(vec![Step::Key("nope".into()), Step::Key("k".into())]);
        assert!(!missing.set(&mut value, json!(0)));
    }
}
