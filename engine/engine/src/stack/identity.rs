//! A stack's identity: the name its state is recorded under, and the
//! repository that tells two files of one derived name apart.
//!
//! A file that does not set `spec.stack` is named by its place in its
//! repository, so every clone of the repository names the same stack. Two
//! repositories can still give one name (two `platform` repositories, a
//! name outside git that differs only in spaces), so state records the
//! repository's identity beside the name, and a run whose identity differs
//! is refused ([`crate::ownership::StackStates::split`]), never merged.

use std::path::{Path, PathBuf};

/// The stack name of a file that does not set `spec.stack`: its place in
/// its git repository (`<repository>/<path>`, the repository named after its
/// `origin` remote, else its top directory), so every clone of the repository
/// names the same stack; outside git, `<directory>/<file>`.
pub fn derived_name(file: &Path) -> String {
    let absolute = std::path::absolute(file).unwrap_or_else(|_| file.to_owned());
    let absolute = absolute.canonicalize().unwrap_or(absolute);
    let dir = absolute.parent().unwrap_or(Path::new("/")).to_owned();
    let git = |args: &[&str]| git(&dir, args);
    let file_name = absolute
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tazuna.yaml".into());
    let name = match git(&["rev-parse", "--show-toplevel"]) {
        Some(top) => {
            let top = PathBuf::from(top);
            let top = top.canonicalize().unwrap_or(top);
            let repository = git(&["config", "--get", "remote.origin.url"])
                .and_then(|url| {
                    without_query(&url)
                        .trim_end_matches('/')
                        .rsplit(['/', ':'])
                        .next()
                        .map(|last| last.trim_end_matches(".git").to_owned())
                })
                .filter(|n| !n.is_empty())
                .or_else(|| top.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "repository".into());
            let relative = absolute
                .strip_prefix(&top)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or(file_name);
            format!("{repository}/{relative}")
        }
        None => {
            let parent = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            format!("{parent}/{file_name}")
        }
    };
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// What tells the repository `file` is in from every other, recorded in
/// state beside a derived stack name so that two files that derive one
/// name never share a stack:
///
/// - its `origin` remote, as `host/path` (scheme, login, query and `.git`
///   left out, so a URL that carries a token never reaches state), which
///   every clone shares;
/// - without `origin`, `commit:<id>` of its first commit (every full clone
///   shares that too);
/// - outside git, in a shallow clone without `origin` or in a repository
///   with no commit yet, `dir:<its canonical directory>`.
pub fn repository_identity(file: &Path) -> String {
    let absolute = std::path::absolute(file).unwrap_or_else(|_| file.to_owned());
    let absolute = absolute.canonicalize().unwrap_or(absolute);
    let dir = absolute.parent().unwrap_or(Path::new("/")).to_owned();
    let top = git(&dir, &["rev-parse", "--show-toplevel"]).map(PathBuf::from);
    if let Some(origin) = git(&dir, &["config", "--get", "remote.origin.url"])
        .map(|url| local_origin(&url, top.as_deref().unwrap_or(&dir)).unwrap_or(url))
        .as_deref()
        .and_then(normalized_origin)
    {
        return origin;
    }
    let shallow = git(&dir, &["rev-parse", "--is-shallow-repository"]);
    if shallow.as_deref() == Some("false")
        && let Some(roots) = git(&dir, &["rev-list", "--max-parents=0", "HEAD"])
        && let Some(first) = roots.lines().map(str::trim).filter(|r| !r.is_empty()).min()
    {
        return format!("commit:{first}");
    }
    let top = top.unwrap_or(dir);
    let top = top.canonicalize().unwrap_or(top);
    format!("dir:{}", top.display())
}

/// A remote that is a path on this machine (`../zeta.git`, `/srv/git/x`),
/// as the absolute path git reaches it by from the repository's top `top`:
/// two repositories whose `origin` is `../zeta.git` in two places name two
/// repositories. `None` for a URL (`scheme://…`) or an scp-like address
/// (`host:path`, a `:` before any `/`).
fn local_origin(url: &str, top: &Path) -> Option<String> {
    // `file://` and `file:` name a path too, relative ones included.
    let url = url
        .strip_prefix("file://")
        .or_else(|| url.strip_prefix("file:"))
        .unwrap_or(url);
    let before_slash = url.split('/').next().unwrap_or(url);
    if url.contains("://") || before_slash.contains(':') {
        return None;
    }
    let joined = top.join(url);
    let mut path = PathBuf::new();
    for part in joined.components() {
        match part {
            std::path::Component::ParentDir => {
                path.pop();
            }
            std::path::Component::CurDir => {}
            other => path.push(other),
        }
    }
    let path = path.canonicalize().unwrap_or(path);
    Some(path.to_string_lossy().into_owned())
}

/// `git -C dir args`'s trimmed output, when it succeeds and says anything.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    (output.status.success() && !text.is_empty()).then_some(text)
}

/// `https://token@GitHub.com/acme/platform.git/` and
/// `git@github.com:acme/platform.git` as `github.com/acme/platform`.
///
/// A query or fragment (`?private_token=…`) is left out too: only the
/// repository's address is a name, never what authenticates to it.
fn normalized_origin(url: &str) -> Option<String> {
    let url = without_query(url);
    let (rest, scp) = match url.split_once("://") {
        Some((_, rest)) => (rest, false),
        None => (url, true),
    };
    let (authority, path) = if scp && !rest.starts_with('/') {
        rest.split_once(':').unwrap_or((rest, ""))
    } else {
        rest.split_once('/').unwrap_or((rest, ""))
    };
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let path = path
        .trim_matches('/')
        .trim_end_matches(".git")
        .trim_end_matches('/');
    let host = host.to_ascii_lowercase();
    (!host.is_empty() || !path.is_empty()).then(|| {
        if host.is_empty() {
            path.to_owned()
        } else {
            format!("{host}/{path}")
        }
    })
}

/// `url` up to its query or fragment, which may carry a token.
fn without_query(url: &str) -> &str {
    url.split(['?', '#']).next().unwrap_or(url)
}

/// The git commit of `dir`, if it is in a work tree.
pub fn git_commit(dir: &Path) -> Option<String> {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["rev-parse", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .filter(|c| !c.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repository_origin_is_kept_without_scheme_login_or_git_suffix() {
        for url in [
            "https://x-access-token:ghp_secret@GitHub.com/acme/platform.git",
            "https://github.com/acme/platform/",
            "git@github.com:acme/platform.git",
            "ssh://git@github.com/acme/platform",
            "https://github.com/acme/platform?private_token=glpat-secret",
            "https://github.com/acme/platform.git#token=secret",
        ] {
            assert_eq!(
                normalized_origin(url).as_deref(),
                Some("github.com/acme/platform"),
                "{url}"
            );
        }
        assert_eq!(
            normalized_origin("/srv/git/platform.git").as_deref(),
            Some("srv/git/platform")
        );
        assert_eq!(normalized_origin(""), None);
    }

    #[test]
    fn a_file_outside_git_is_named_by_its_directory_and_name() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("team-a");
        std::fs::create_dir(&project).unwrap();
        let file = project.join("tazuna.yaml");
        std::fs::write(&file, "").unwrap();
        assert_eq!(derived_name(&file), "team-a/tazuna.yaml");
    }

    #[test]
    fn a_file_in_git_is_named_by_its_repository_and_path_in_every_clone() {
        let dir = tempfile::tempdir().unwrap();
        let git = |dir: &Path, args: &[&str]| {
            let status = std::process::Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
            status.is_ok_and(|s| s.success())
        };
        let clone = |name: &str| {
            let root = dir.path().join(name);
            std::fs::create_dir_all(root.join("clusters/prod")).unwrap();
            std::fs::write(root.join("clusters/prod/tazuna.yaml"), "").unwrap();
            git(&root, &["init", "-q"])
                && git(
                    &root,
                    &[
                        "remote",
                        "add",
                        "origin",
                        "git@example.com:org/platform.git",
                    ],
                )
        };
        assert!(clone("one") && clone("two"), "git init failed");
        let one = derived_name(&dir.path().join("one/clusters/prod/tazuna.yaml"));
        let two = derived_name(&dir.path().join("two/clusters/prod/tazuna.yaml"));
        assert_eq!(one, "platform/clusters/prod/tazuna.yaml");
        assert_eq!(one, two);
    }

    #[test]
    fn repositories_that_derive_one_name_have_different_identities() {
        let dir = tempfile::tempdir().unwrap();
        let git = |dir: &Path, args: &[&str]| {
            std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
                .arg("-C")
                .arg(dir)
                .args(args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        // Two repositories called `platform`, neither with `origin`, and a
        // clone of the first.
        let repository = |parent: &str, text: &str| {
            let root = dir.path().join(parent).join("platform");
            std::fs::create_dir_all(&root).unwrap();
            std::fs::write(root.join("tazuna.yaml"), text).unwrap();
            assert!(git(&root, &["init", "-q"]));
            assert!(git(&root, &["add", "."]));
            assert!(git(&root, &["commit", "-q", "-m", "first"]));
            root.join("tazuna.yaml")
        };
        let one = repository("a", "# one");
        let two = repository("b", "# two");
        let clone = dir.path().join("c/platform");
        assert!(git(
            dir.path(),
            &[
                "clone",
                "-q",
                one.parent().unwrap().to_str().unwrap(),
                clone.to_str().unwrap()
            ]
        ));
        assert!(git(&clone, &["remote", "remove", "origin"]));
        assert_eq!(derived_name(&one), derived_name(&two));
        assert_ne!(repository_identity(&one), repository_identity(&two));
        assert!(repository_identity(&one).starts_with("commit:"));
        assert_eq!(
            repository_identity(&one),
            repository_identity(&clone.join("tazuna.yaml"))
        );
        // With `origin`, the remote is the identity, whoever clones it.
        assert!(git(
            one.parent().unwrap(),
            &[
                "remote",
                "add",
                "origin",
                "https://token@example.com/org/platform.git?x=y"
            ]
        ));
        assert_eq!(repository_identity(&one), "example.com/org/platform");
    }

    #[test]
    fn a_relative_origin_names_the_repository_it_reaches() {
        let dir = tempfile::tempdir().unwrap();
        let repository = |parent: &str| {
            let root = dir.path().join(parent).join("platform");
            std::fs::create_dir_all(&root).unwrap();
            std::fs::write(root.join("tazuna.yaml"), "").unwrap();
            let git = |args: &[&str]| {
                std::process::Command::new("git")
                    .arg("-C")
                    .arg(&root)
                    .args(args)
                    .status()
                    .is_ok_and(|s| s.success())
            };
            assert!(git(&["init", "-q"]) && git(&["remote", "add", "origin", "../zeta.git"]));
            root.join("tazuna.yaml")
        };
        let (one, two) = (repository("a"), repository("b"));
        assert_eq!(derived_name(&one), derived_name(&two));
        let (a, b) = (repository_identity(&one), repository_identity(&two));
        assert_ne!(a, b, "`../zeta.git` of two places is two repositories");
        assert!(a.ends_with("a/zeta"), "{a}");
        assert_eq!(
            local_origin("git@github.com:acme/platform.git", Path::new("/x")),
            None
        );
        assert_eq!(
            local_origin("https://github.com/acme/p", Path::new("/x")),
            None
        );
        assert_eq!(
            local_origin("./up/../zeta.git", Path::new("/srv/repo")).as_deref(),
            Some("/srv/repo/zeta.git")
        );
        for url in ["file://../zeta.git", "file:../zeta.git"] {
            assert_eq!(
                local_origin(url, Path::new("/srv/repo")).as_deref(),
                Some("/srv/zeta.git"),
                "{url}"
            );
        }
    }

    #[test]
    fn files_outside_git_whose_names_collapse_alike_have_different_identities() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str| {
            let project = dir.path().join(name);
            std::fs::create_dir(&project).unwrap();
            std::fs::write(project.join("tazuna.yaml"), "").unwrap();
            project.join("tazuna.yaml")
        };
        let (spaced, dashed) = (file("team a"), file("team-a"));
        assert_eq!(derived_name(&spaced), derived_name(&dashed));
        let (a, b) = (repository_identity(&spaced), repository_identity(&dashed));
        assert!(a.starts_with("dir:") && a.ends_with("team a"), "{a}");
        assert_ne!(a, b);
    }
}
