//! What a tool is handed is data, not code.
//!
//! Before a tool starts, the host looks at what its arguments name inside
//! the plugin's directories (a chart, a kustomization, a helmfile and the
//! files beside it, an artifact pulled into scratch):
//!
//! - no symbolic link in a handed directory leads out of that directory, and a
//!   handed file that is a link stays inside its mount: `helm` follows links in
//!   a chart, and the jail lets every tool read the system's libraries;
//! - for `helmfile`, no template (`*.gotmpl`) calls `exec` or `envExec`, and no
//!   helmfile sets `helmBinary`, `kustomizeBinary`, `postRenderer` or `hooks`,
//!   each of which runs a program. The jail would refuse to start that program
//!   anyway (it starts only granted tools); this check says why, naming the
//!   file and line, before anything runs.

use std::path::{Path, PathBuf};

use super::mounts::Mount;

/// The most entries looked at below one handed directory.
const MAX_ENTRIES: usize = 20_000;

/// The largest template read for `exec` calls; a bigger one is refused.
const MAX_TEMPLATE: u64 = 4 * 1024 * 1024;

/// Helmfile keys that name a program to run.
const PROGRAM_KEYS: &[(&str, &str)] = &[
    ("helmBinary", "names the program helmfile runs as helm"),
    (
        "kustomizeBinary",
        "names the program helmfile runs as kustomize",
    ),
    (
        "postRenderer",
        "names a program helm runs on the rendered objects",
    ),
    ("hooks", "runs programs at helmfile's events"),
];

/// Template functions that run a program.
const PROGRAM_FUNCTIONS: &[&str] = &["exec", "envExec"];

/// Refuse what `tool` would be handed, if any of it is code or leaves its
/// directory: `paths` are the host paths the arguments name.
pub fn check(tool: &str, mounts: &[Mount], paths: &[PathBuf]) -> Result<(), String> {
    let mut walked: Vec<PathBuf> = Vec::new();
    for path in paths {
        let Some(mount) = mounts.iter().find(|m| path.starts_with(&m.host)) else {
            continue;
        };
        let (Ok(real), Ok(root)) = (path.canonicalize(), mount.host.canonicalize()) else {
            continue;
        };
        if !real.starts_with(&root) {
            return Err(format!(
                "`{}` is a symbolic link to `{}`, outside {}: a tool reads only what is inside the directories Tazuna gives it; copy the file in instead",
                shown(mounts, path),
                real.display(),
                shown(mounts, &mount.host),
            ));
        }
        let dir = if real.is_dir() {
            real
        } else if tool == "helmfile" {
            // A helmfile's bases, values and sub-helmfiles lie beside it.
            match real.parent() {
                Some(parent) => parent.to_owned(),
                None => continue,
            }
        } else {
            continue;
        };
        if walked.iter().any(|done| dir.starts_with(done)) {
            continue;
        }
        walk(tool, mounts, &dir)?;
        walked.push(dir);
    }
    Ok(())
}

/// Check every entry below `dir`.
fn walk(tool: &str, mounts: &[Mount], dir: &Path) -> Result<(), String> {
    let mut pending = vec![dir.to_owned()];
    let mut seen = 0usize;
    while let Some(current) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                return Err(format!(
                    "`{}` holds more than {MAX_ENTRIES} files, more than Tazuna checks before handing a directory to a tool: point the manifest's `path` at the chart, kustomization or helmfile directory itself",
                    shown(mounts, dir)
                ));
            }
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_symlink() {
                // A dangling link reaches nothing; the tool reports it.
                if let Ok(target) = path.canonicalize()
                    && !target.starts_with(dir)
                {
                    return Err(format!(
                        "`{}` is a symbolic link to `{}`, outside `{}`: a chart, kustomization or helmfile may not reach files outside its directory; copy the file in instead",
                        shown(mounts, &path),
                        target.display(),
                        shown(mounts, dir),
                    ));
                }
            } else if kind.is_dir() {
                if entry.file_name() != ".git" {
                    pending.push(path);
                }
            } else if tool == "helmfile" && kind.is_file() {
                helmfile_file(mounts, &path)?;
            }
        }
    }
    Ok(())
}

/// Refuse a helmfile template that calls a program, or a helmfile that names one.
fn helmfile_file(mounts: &[Mount], path: &Path) -> Result<(), String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let template = name.ends_with(".gotmpl");
    let state = name.starts_with("helmfile")
        || path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|dir| dir == "helmfile.d");
    if !template && !state {
        return Ok(());
    }
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if size > MAX_TEMPLATE {
        return Err(format!(
            "`{}` is {size} bytes, more than the {MAX_TEMPLATE} Tazuna reads of a helmfile or template",
            shown(mounts, path)
        ));
    }
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(());
    };
    if template && let Some((line, function)) = program_call(&text) {
        return Err(format!(
            "`{}` line {line} calls `{function}`, which runs a program: Tazuna renders repository content as data, so helmfile templates may not run programs; compute the value before the run and pass it in as a var (`helmfile.vars`)",
            shown(mounts, path)
        ));
    }
    if state
        && !template
        && let Some(verdict) = helmfile_state(&text, &[])
    {
        return verdict.map_err(|problem| format!("`{}`: {problem}", shown(mounts, path)));
    }
    if state && let Some((line, key, what)) = program_key(&text) {
        return Err(format!(
            "`{}` line {line} sets `{key}`, which {what}: Tazuna renders repository content as data, and runs only the helm it was given; remove `{key}`",
            shown(mounts, path)
        ));
    }
    Ok(())
}

/// Refuse a helmfile state that names a program to run, read as helmfile
/// reads it (the documents `helmfile build` prints, or a plain YAML helmfile),
/// so no spelling of a key (a flow mapping, a key set in a base) gets past:
/// `helmBinary` or `kustomizeBinary` other than the ones in `binaries` (what
/// the host passed helmfile), `hooks` at the top or on a release, a
/// `postRenderer` in `helmDefaults` or on a release, and helm `args` with a
/// flag helm's render grammar does not name. `None` when the text is not
/// YAML (a template, checked as text instead).
pub fn helmfile_state(text: &str, binaries: &[(&str, &str)]) -> Option<Result<(), String>> {
    use serde::Deserialize as _;
    let mut documents = Vec::new();
    for document in serde_yaml::Deserializer::from_str(text) {
        documents.push(serde_yaml::Value::deserialize(document).ok()?);
    }
    Some(
        documents
            .iter()
            .try_for_each(|state| state_names_no_program(state, binaries)),
    )
}

fn state_names_no_program(
    state: &serde_yaml::Value,
    binaries: &[(&str, &str)],
) -> Result<(), String> {
    let set = |value: &serde_yaml::Value| match value {
        serde_yaml::Value::Null => false,
        serde_yaml::Value::Sequence(items) => !items.is_empty(),
        serde_yaml::Value::Mapping(entries) => !entries.is_empty(),
        serde_yaml::Value::String(text) => !text.is_empty(),
        _ => true,
    };
    for key in ["helmBinary", "kustomizeBinary"] {
        let given = &state[key];
        let passed = binaries
            .iter()
            .find(|(name, _)| *name == key)
            .map(|(_, path)| *path);
        if set(given) && given.as_str() != passed {
            return Err(format!(
                "the helmfile sets `{key}`, which names the program helmfile runs: Tazuna renders repository content as data, and runs only the tools it was given; remove `{key}`"
            ));
        }
    }
    if set(&state["hooks"]) {
        return Err("the helmfile sets `hooks`, which run programs at helmfile's events: Tazuna renders repository content as data; remove `hooks`".to_owned());
    }
    let releases = state["releases"].as_sequence().into_iter().flatten();
    let places = std::iter::once(("helmDefaults".to_owned(), &state["helmDefaults"])).chain(
        releases.map(|release| {
            let name = release["name"].as_str().unwrap_or("?");
            (format!("release `{name}`"), release)
        }),
    );
    for (place, entry) in places {
        if place != "helmDefaults" && set(&entry["hooks"]) {
            return Err(format!(
                "{place} sets `hooks`, which run programs at helmfile's events: Tazuna renders repository content as data; remove `hooks`"
            ));
        }
        if set(&entry["postRenderer"]) {
            return Err(format!(
                "{place} sets `postRenderer`, a program helm runs on the rendered objects: Tazuna renders repository content as data; remove `postRenderer`"
            ));
        }
        let args: Vec<String> = entry["args"]
            .as_sequence()
            .into_iter()
            .flatten()
            .filter_map(|arg| arg.as_str().map(str::to_owned))
            .collect();
        let mut command = vec![
            "template".to_owned(),
            "release".to_owned(),
            "chart".to_owned(),
        ];
        command.extend(args);
        if let Some(problem) = super::grammar::refused("helm", &command, &[]) {
            return Err(format!("{place} passes helm {problem}"));
        }
    }
    Ok(())
}

/// Refuse a helmfile handed on stdin (`--file=-`) that names a program to
/// run or, read as a template, calls one: the same rules as for a file.
pub fn helmfile_stdin(text: &[u8]) -> Result<(), String> {
    if text.len() as u64 > MAX_TEMPLATE {
        return Err(format!(
            "the helmfile on stdin is {} bytes, more than the {MAX_TEMPLATE} Tazuna reads of a helmfile",
            text.len()
        ));
    }
    let text = String::from_utf8_lossy(text);
    if let Some((line, function)) = program_call(&text) {
        return Err(format!(
            "the helmfile (line {line} on stdin) calls `{function}`, which runs a program: Tazuna renders repository content as data, so helmfile templates may not run programs; compute the value before the run and pass it in as a var (`helmfile.vars`)"
        ));
    }
    if let Some((line, key, what)) = program_key(&text) {
        return Err(format!(
            "the helmfile (line {line} on stdin) sets `{key}`, which {what}: Tazuna renders repository content as data, and runs only the helm it was given; remove `{key}`"
        ));
    }
    Ok(())
}

/// The first call of a [`PROGRAM_FUNCTIONS`] function inside a template
/// action (`{{ … }}`), with its line.
fn program_call(text: &str) -> Option<(usize, &'static str)> {
    tazuna_core::template::first_call(text, PROGRAM_FUNCTIONS)
}

/// The first [`PROGRAM_KEYS`] key set in a helmfile, with its line.
fn program_key(text: &str) -> Option<(usize, &'static str, &'static str)> {
    text.lines().enumerate().find_map(|(number, line)| {
        let line = line.trim_start().trim_start_matches("- ").trim_start();
        let (key, _) = line.split_once(':')?;
        let key = key.trim().trim_matches(['"', '\'']);
        PROGRAM_KEYS
            .iter()
            .find(|(name, _)| *name == key)
            .map(|(name, what)| (number + 1, *name, *what))
    })
}

/// `path` as the user knows it: relative to the manifest directory, or as the
/// plugin sees it.
fn shown(mounts: &[Mount], path: &Path) -> String {
    for mount in mounts {
        let root = mount
            .host
            .canonicalize()
            .unwrap_or_else(|_| mount.host.clone());
        for base in [&mount.host, &root] {
            if let Ok(rest) = path.strip_prefix(base) {
                if mount.guest == super::MANIFEST_DIR {
                    let rest = rest.display().to_string();
                    return if rest.is_empty() {
                        ".".to_owned()
                    } else {
                        rest
                    };
                }
                return Path::new(&mount.guest).join(rest).display().to_string();
            }
        }
    }
    path.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_calls_of_programs_are_found_with_their_line() {
        assert_eq!(
            program_call("a: 1\nb: {{ exec \"sh\" (list) }}\n"),
            Some((2, "exec"))
        );
        assert_eq!(
            program_call("{{- $x := envExec (dict) \"sh\" -}}"),
            Some((1, "envExec"))
        );
        assert_eq!(program_call("x: {{ \"ls\" | exec }}"), Some((1, "exec")));
        // Fields, strings and text outside actions are not calls.
        assert_eq!(program_call("{{ .Values.exec }} {{ $exec }}"), None);
        assert_eq!(program_call("{{ printf \"exec\" }} exec: true"), None);
        assert_eq!(program_call("{{ execute }}"), None);
    }

    #[test]
    fn helmfile_keys_that_run_programs_are_found_with_their_line() {
        assert_eq!(
            program_key("releases:\n  - name: a\n    hooks:\n"),
            Some((3, "hooks", "runs programs at helmfile's events"))
        );
        assert_eq!(
            program_key("helmBinary: /bin/sh\n").map(|f| f.1),
            Some("helmBinary")
        );
        assert_eq!(
            program_key("- postRenderer: x\n").map(|f| f.1),
            Some("postRenderer")
        );
        assert_eq!(program_key("releases:\n  - name: hooks\n"), None);
    }

    #[test]
    fn a_helmfile_on_stdin_is_held_to_the_rules_of_a_file() {
        assert!(helmfile_stdin(b"environments:\n  production: {}\n---\nreleases: []\n").is_ok());
        let error = helmfile_stdin(b"environments: {}\n---\nhelmBinary: /bin/sh\n").unwrap_err();
        assert!(
            error.contains("line 3 on stdin") && error.contains("`helmBinary`"),
            "{error}"
        );
        let error = helmfile_stdin(b"x: {{ exec \"sh\" (list) }}\n").unwrap_err();
        assert!(error.contains("calls `exec`"), "{error}");
        let flood = vec![b'#'; MAX_TEMPLATE as usize + 1];
        assert!(helmfile_stdin(&flood).unwrap_err().contains("more than"));
    }

    fn mounts(root: &Path) -> Vec<Mount> {
        vec![Mount {
            guest: super::super::MANIFEST_DIR.to_owned(),
            host: root.to_owned(),
            shown: None,
        }]
    }

    #[test]
    fn a_link_out_of_a_handed_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let chart = root.join("charts/app/templates");
        std::fs::create_dir_all(&chart).unwrap();
        std::fs::write(root.join("secret.env"), "TOKEN=x").unwrap();
        std::os::unix::fs::symlink("../../../secret.env", chart.join("leak.yaml")).unwrap();
        let error = check("helm", &mounts(&root), &[root.join("charts/app")]).unwrap_err();
        assert!(
            error.contains("`charts/app/templates/leak.yaml` is a symbolic link to")
                && error.contains("outside `charts/app`"),
            "{error}"
        );
        // A link that stays inside is fine.
        std::fs::remove_file(chart.join("leak.yaml")).unwrap();
        std::fs::write(chart.join("a.yaml"), "").unwrap();
        std::os::unix::fs::symlink("a.yaml", chart.join("b.yaml")).unwrap();
        check("helm", &mounts(&root), &[root.join("charts/app")]).unwrap();
    }

    #[test]
    fn a_handed_file_that_links_out_of_its_mount_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("values.yaml")).unwrap();
        let error = check("helm", &mounts(&root), &[root.join("values.yaml")]).unwrap_err();
        assert!(
            error.contains("`values.yaml` is a symbolic link to `/etc/passwd`"),
            "{error}"
        );
    }

    #[test]
    fn a_helmfile_beside_a_template_that_runs_a_program_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let helmfile = root.join("hf");
        std::fs::create_dir_all(helmfile.join("values")).unwrap();
        std::fs::write(helmfile.join("helmfile.yaml.gotmpl"), "releases: []\n").unwrap();
        std::fs::write(
            helmfile.join("values/app.yaml.gotmpl"),
            "a: 1\nb: {{ exec \"/bin/sh\" (list \"-c\" \"id\") }}\n",
        )
        .unwrap();
        let error = check(
            "helmfile",
            &mounts(&root),
            &[helmfile.join("helmfile.yaml.gotmpl")],
        )
        .unwrap_err();
        assert!(
            error.starts_with("`hf/values/app.yaml.gotmpl` line 2 calls `exec`"),
            "{error}"
        );
        // Other tools are not helmfile: the same directory is fine for them.
        check("kustomize", &mounts(&root), &[helmfile]).unwrap();
    }

    #[test]
    fn a_helmfile_state_that_names_a_program_is_refused_in_any_spelling() {
        let ours = [
            ("helmBinary", "/tools/helm"),
            ("kustomizeBinary", "/tools/kustomize"),
        ];
        let verdict = |text: &str| helmfile_state(text, &ours).expect("YAML");
        for text in [
            "helmBinary: /scratch/artifacts/0/helm\n",
            "{helmBinary: /scratch/x, releases: []}\n",
            "\"helmBinary\": /scratch/x\n",
            "releases: []\n---\nkustomizeBinary: ./k\n",
            "hooks:\n- events: [prepare]\n  command: sh\n",
            "releases:\n- name: app\n  hooks: [{events: [presync], command: sh}]\n",
            "releases:\n- {name: app, postRenderer: ./pr}\n",
            "helmDefaults: {postRenderer: ./pr}\n",
            "helmDefaults:\n  args: [--post-renderer, ./pr]\n",
            "releases:\n- name: app\n  args: [\"--kubeconfig=/k\"]\n",
            "? helmBinary\n: /scratch/x\n",
        ] {
            assert!(verdict(text).is_err(), "passed: {text}");
        }
        // What `helmfile build` prints with the host's binaries, and plain releases.
        for text in [
            "helmBinary: /tools/helm\nkustomizeBinary: /tools/kustomize\nreleases:\n- name: hooks\n  chart: ./c\n  values:\n  - hooks: {a: 1}\n",
            "releases:\n- name: app\n  args: [--skip-tests]\n  hooks: []\n",
        ] {
            assert_eq!(verdict(text), Ok(()), "{text}");
        }
        assert_eq!(helmfile_state("releases: [\n", &ours), None);
    }
}
