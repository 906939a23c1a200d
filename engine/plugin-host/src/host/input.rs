//! What a plugin sees at `/manifest`: its input, never the repository.
//!
//! For each render the host builds a view of its own, a temporary directory
//! that holds, at their paths relative to the declaring file's directory,
//! only:
//!
//! - the manifest's `path`: the file, the directory (walked), or the glob's
//!   matches;
//! - the files and directories its config names (`valuesFiles`, a chart
//!   directory, a helmfile), as relative paths inside that directory;
//! - with the capability [`REFERENCES`] (the built-in kustomize, helm and
//!   helmfile sources request it; a third-party plugin gets it only by a
//!   grant), what those files name in turn, relative to the file that names
//!   it: a kustomization's `../../base`, a helmfile's `chart: ../charts/app`,
//!   a chart's `file://../common`. Names are tokens of the file's text, so a
//!   template names files as plainly as YAML does; a directory the naming
//!   file is in (`../` from a helmfile at the top) is never added this way.
//!
//! Never in it, whatever names them: any path with a component that starts
//! with `.` (`.git`, `.env`, `.ssh`), a file called `tazuna.lock`, and the
//! files the secret providers read ([`Protected`]: an envfile's file, a SOPS
//! file), nor a file with other names (a hard link: one of its names may be
//! any of those). Nothing outside the declaring file's directory is ever in
//! it. Files are copies of the repository's; the view is read-only to the
//! plugin (a read-only preopen) and to its tools (a read-only mount, or
//! Landlock).

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use crate::config_strings::strings_in;

/// The capability that lets a plugin's input include what its files name.
pub const REFERENCES: &str = "read:references";

/// The most files one view may hold.
const MAX_FILES: usize = 100_000;

/// Files larger than this are not read for names.
const MAX_SCANNED_BYTES: u64 = 1 << 20;

/// The most files read for names in one view.
const MAX_SCANNED_FILES: usize = 5_000;

/// Files no plugin sees, whatever names them: those the secret providers read.
#[derive(Debug, Clone, Default)]
pub struct Protected {
    paths: Vec<PathBuf>,
}

impl Protected {
    /// The files (or directories) `paths` name; those that do not exist are
    /// left out.
    pub fn new(paths: impl IntoIterator<Item = PathBuf>) -> Self {
        Self {
            paths: paths
                .into_iter()
                .filter_map(|path| std::fs::canonicalize(path).ok())
                .collect(),
        }
    }

    /// The files a provider's config names, relative to `dir` (the
    /// directory providers' paths are read from).
    pub fn of_config(dir: &Path, config: &serde_json::Value) -> Vec<PathBuf> {
        strings_in(config)
            .into_iter()
            .filter(|text| !text.is_empty() && !text.contains("://"))
            .map(|text| dir.join(text))
            .collect()
    }

    fn covers(&self, canonical: &Path) -> bool {
        self.paths.iter().any(|path| canonical.starts_with(path))
    }
}

/// One render's view; removed when dropped.
#[derive(Debug)]
pub struct View {
    dir: tempfile::TempDir,
}

impl View {
    /// Where it is on the host.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Build the view for a manifest declared in `base`, with `path` and
/// `config`; `references` adds what its files name.
pub fn view(
    base: &Path,
    path: Option<&str>,
    config: &serde_json::Value,
    references: bool,
    protected: &Protected,
) -> Result<View, String> {
    let base = std::fs::canonicalize(base).map_err(|e| {
        format!(
            "cannot read the manifest directory `{}`: {e}",
            base.display()
        )
    })?;
    let mut builder = Builder {
        base: &base,
        protected,
        chosen: BTreeSet::new(),
        scanned: 0,
    };
    if let Some(path) = path.filter(|p| !p.is_empty()) {
        if path.contains(['*', '?', '[']) {
            let pattern = format!(
                "{}/{path}",
                glob::Pattern::escape(&base.to_string_lossy()).trim_end_matches('/')
            );
            for matched in glob::glob(&pattern).into_iter().flatten().flatten() {
                builder.add(&matched);
            }
        } else {
            builder.add(&base.join(path));
        }
    }
    for text in strings_in(config) {
        // A guest path (`/manifest/chart`) names the same file as `chart`.
        let text = match text.strip_prefix(super::MANIFEST_DIR) {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => rest.trim_start_matches('/'),
            _ => text,
        };
        if text.is_empty() {
            continue;
        }
        if let Some(named) = relative(&base, text) {
            builder.add(&named);
        }
    }
    if references {
        builder.follow();
    }
    let dir = tempfile::Builder::new()
        .prefix("tazuna-input-")
        .tempdir()
        .map_err(|e| format!("cannot make the manifest's view: {e}"))?;
    let mut files = 0usize;
    for relative in &builder.chosen {
        // A directory chosen after a file in it holds the file already.
        let inside_another = relative
            .ancestors()
            .skip(1)
            .any(|ancestor| builder.chosen.contains(ancestor));
        if !inside_another {
            builder.materialize(relative, dir.path(), &mut files)?;
        }
    }
    Ok(View { dir })
}

/// `text` read as a path relative to `dir`, if it stays inside `base`
/// (lexically; what it resolves to is checked when it is added).
fn relative(dir: &Path, text: &str) -> Option<PathBuf> {
    let text = text.strip_prefix("file://").unwrap_or(text);
    if text.is_empty() || text.contains("://") || Path::new(text).is_absolute() {
        return None;
    }
    let mut out = dir.to_path_buf();
    for component in Path::new(text).components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

struct Builder<'a> {
    base: &'a Path,
    protected: &'a Protected,
    /// Chosen paths, relative to `base`.
    chosen: BTreeSet<PathBuf>,
    scanned: usize,
}

impl Builder<'_> {
    /// Whether `relative` (to `base`) may be in a view at all.
    fn allowed(&self, relative: &Path) -> bool {
        relative.components().all(|c| match c {
            Component::Normal(part) => !part.to_string_lossy().starts_with('.'),
            _ => false,
        }) && relative
            .file_name()
            .is_none_or(|name| name != "tazuna.lock")
            && !self.protected.covers(&self.base.join(relative))
    }

    /// Add `path` (absolute, under `base`) if it exists and both where it is
    /// and what it resolves to (through any link) are allowed.
    fn add(&mut self, path: &Path) -> bool {
        let Ok(canonical) = std::fs::canonicalize(path) else {
            return false;
        };
        let (Ok(resolved), Ok(written)) = (
            canonical.strip_prefix(self.base),
            path.strip_prefix(self.base),
        ) else {
            return false;
        };
        if written.as_os_str().is_empty() {
            // The whole directory: each allowed entry of it.
            let entries: Vec<PathBuf> = std::fs::read_dir(self.base)
                .into_iter()
                .flatten()
                .flatten()
                .map(|entry| entry.path())
                .collect();
            let mut any = false;
            for entry in entries {
                any |= self.add(&entry);
            }
            return any;
        }
        if !self.allowed(resolved) || !self.allowed(written) || self.covered(written) {
            return false;
        }
        // A link is kept as a link (so what reads the view sees where it
        // leads); what it leads to comes along.
        if resolved != written && !self.covered(resolved) {
            self.chosen.insert(resolved.to_path_buf());
        }
        self.chosen.insert(written.to_path_buf())
    }

    /// Whether a chosen directory already holds `relative`.
    fn covered(&self, relative: &Path) -> bool {
        relative
            .ancestors()
            .any(|ancestor| self.chosen.contains(ancestor))
    }

    /// Read the chosen files for names of further files, until nothing new
    /// is named (or the bounds are reached).
    fn follow(&mut self) {
        let mut queue: Vec<PathBuf> = self.chosen.iter().cloned().collect();
        let mut seen = BTreeSet::new();
        while let Some(relative) = queue.pop() {
            for file in self.files_under(&relative) {
                if self.scanned >= MAX_SCANNED_FILES || !seen.insert(file.clone()) {
                    continue;
                }
                self.scanned += 1;
                let full = self.base.join(&file);
                let small = std::fs::metadata(&full).is_ok_and(|m| m.len() <= MAX_SCANNED_BYTES);
                let Some(text) = small.then(|| std::fs::read(&full).ok()).flatten() else {
                    continue;
                };
                let text = String::from_utf8_lossy(&text);
                let dir = full.parent().unwrap_or(self.base).to_path_buf();
                for token in tokens(&text) {
                    // A file may name its siblings and what lies beside its
                    // directory, never a directory it is in: `readDir "../"`
                    // would be the whole repository.
                    if let Some(named) = relative_to_base(self.base, &dir, token)
                        && !dir.starts_with(&named)
                        && self.add(&named)
                        && let Ok(canonical) = std::fs::canonicalize(&named)
                        && let Ok(rel) = canonical.strip_prefix(self.base)
                    {
                        queue.push(rel.to_path_buf());
                    }
                }
            }
        }
    }

    /// The regular files at or under `relative`, allowed ones only.
    fn files_under(&self, relative: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![relative.to_path_buf()];
        while let Some(path) = stack.pop() {
            let full = self.base.join(&path);
            let Ok(meta) = std::fs::metadata(&full) else {
                continue;
            };
            if meta.is_file() {
                out.push(path);
            } else if meta.is_dir()
                && !std::fs::symlink_metadata(&full).is_ok_and(|m| m.is_symlink())
            {
                for entry in std::fs::read_dir(&full).into_iter().flatten().flatten() {
                    let child = path.join(entry.file_name());
                    if self.allowed(&child) {
                        stack.push(child);
                    }
                }
            }
        }
        out
    }

    /// Put `relative` (a file, a link, or a directory walked) into the view
    /// at `root`.
    fn materialize(&self, relative: &Path, root: &Path, files: &mut usize) -> Result<(), String> {
        let source = self.base.join(relative);
        let target = root.join(relative);
        let cannot = |e: std::io::Error| format!("cannot read `{}`: {e}", relative.display());
        let view_error = |e: std::io::Error| format!("cannot make the manifest's view: {e}");
        let meta = std::fs::symlink_metadata(&source).map_err(cannot)?;
        *files += 1;
        if *files > MAX_FILES {
            return Err(format!(
                "the manifest's input holds more than {MAX_FILES} files; point its `path` at less"
            ));
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(view_error)?;
        }
        if meta.is_symlink() {
            // Kept as written, so a check of the content still sees a link
            // (and where it leads); only a link that resolves inside the
            // directory, to what may be in a view, is kept at all.
            let inside = std::fs::canonicalize(&source).is_ok_and(|resolved| {
                resolved
                    .strip_prefix(self.base)
                    .is_ok_and(|rel| self.allowed(rel))
            });
            if inside {
                let link = std::fs::read_link(&source).map_err(cannot)?;
                #[cfg(unix)]
                match std::os::unix::fs::symlink(&link, &target) {
                    Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                        return Err(view_error(e));
                    }
                    _ => {}
                }
                #[cfg(not(unix))]
                let _ = link;
            }
            return Ok(());
        }
        if meta.is_dir() {
            std::fs::create_dir_all(&target).map_err(view_error)?;
            for entry in std::fs::read_dir(&source).map_err(cannot)?.flatten() {
                let child = relative.join(entry.file_name());
                if self.allowed(&child) {
                    self.materialize(&child, root, files)?;
                }
            }
            return Ok(());
        }
        if !meta.is_file() {
            return Ok(());
        }
        // A file with other names (a hard link) may be a file no plugin may
        // read under another name (`.git/config`, a provider's file, one
        // outside the directory): its names cannot all be checked, so it is
        // not in the view.
        #[cfg(unix)]
        if std::os::unix::fs::MetadataExt::nlink(&meta) > 1 {
            tracing::warn!(
                "`{}` is left out of the manifest's input: it is a hard link (a file with other names, which may be files no plugin may read); copy it instead",
                relative.display()
            );
            return Ok(());
        }
        // A copy, new: never written through, and the repository's files
        // keep their link counts.
        let mut from = std::fs::File::open(&source).map_err(cannot)?;
        let mut to = match std::fs::File::create_new(&target) {
            Ok(to) => to,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
            Err(e) => return Err(view_error(e)),
        };
        std::io::copy(&mut from, &mut to).map_err(cannot)?;
        Ok(())
    }
}

/// `token` as a path relative to `dir`, if it stays inside `base`.
fn relative_to_base(base: &Path, dir: &Path, token: &str) -> Option<PathBuf> {
    let path = relative(dir, token)?;
    path.starts_with(base).then_some(path)
}

/// The words of `text` that could be relative paths: split at white space,
/// quotes and YAML's punctuation, with a `/` or a `.` in them.
fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || "\"'`,[]{}()=|<>".contains(c))
        .map(|token| token.trim_end_matches(':'))
        .filter(|token| token.len() > 1 && token.len() < 512 && token.contains(['/', '.']))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, path: &str, text: &str) {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn listing(view: &View) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![view.path().to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                if entry.file_type().unwrap().is_dir() {
                    stack.push(entry.path());
                } else {
                    let rel = entry.path().strip_prefix(view.path()).unwrap().to_owned();
                    out.push(rel.display().to_string());
                }
            }
        }
        out.sort();
        out
    }

    /// A repository with a secret in `.git`, an envfile provider's file, the
    /// lock, and another team's manifests beside this one's.
    fn repository() -> tempfile::TempDir {
        let repo = tempfile::tempdir().unwrap();
        let root = repo.path();
        write(
            root,
            ".git/config",
            "[remote] url = https://token@git.example",
        );
        write(root, ".env", "TOKEN=1");
        write(root, "secrets/ops.env", "DB_PASSWORD=hunter2");
        write(root, "tazuna.lock", "lock");
        write(root, "tazuna.yaml", "spec: {}");
        write(root, "other/team.yaml", "kind: ConfigMap");
        write(root, "apps/app.yaml", "kind: ConfigMap");
        write(root, "apps/.hidden.yaml", "kind: Secret");
        write(root, "values/app.yaml", "replicas: 1");
        write(
            root,
            "overlays/prod/kustomization.yaml",
            "resources: [../../base]\nconfigMapGenerator:\n  - name: x\n    envs: [../../secrets/ops.env]\n    files: [../../.git/config]\n",
        );
        write(
            root,
            "base/kustomization.yaml",
            "resources:\n  - deployment.yaml\n",
        );
        write(root, "base/deployment.yaml", "kind: Deployment");
        repo
    }

    #[test]
    fn a_view_holds_the_path_and_what_the_config_names_and_nothing_else() {
        let repo = repository();
        let protected = Protected::new([repo.path().join("secrets/ops.env")]);
        let config =
            serde_json::json!({"valuesFiles": ["/manifest/values/app.yaml", "../outside"]});
        let view = view(repo.path(), Some("apps"), &config, false, &protected).unwrap();
        assert_eq!(listing(&view), ["apps/app.yaml", "values/app.yaml"]);
        let globbed = super::view(
            repo.path(),
            Some("*/app.yaml"),
            &serde_json::json!({}),
            false,
            &protected,
        )
        .unwrap();
        assert_eq!(listing(&globbed), ["apps/app.yaml", "values/app.yaml"]);
    }

    #[test]
    fn references_bring_what_files_name_but_never_hidden_protected_or_outside_files() {
        let repo = repository();
        let protected = Protected::new([repo.path().join("secrets/ops.env")]);
        let view = view(
            repo.path(),
            Some("overlays/prod"),
            &serde_json::json!({}),
            true,
            &protected,
        )
        .unwrap();
        assert_eq!(
            listing(&view),
            [
                "base/deployment.yaml",
                "base/kustomization.yaml",
                "overlays/prod/kustomization.yaml"
            ]
        );
        // A file that names a directory it is in brings nothing more.
        write(
            repo.path(),
            "hf/helmfile.yaml.gotmpl",
            "{{ readDir \"../\" }} {{ readDir \"./\" }}\n",
        );
        let widened = super::view(
            repo.path(),
            Some("hf"),
            &serde_json::json!({}),
            true,
            &protected,
        )
        .unwrap();
        assert_eq!(listing(&widened), ["hf/helmfile.yaml.gotmpl"]);
        // Without the capability, the overlay alone.
        let alone = super::view(
            repo.path(),
            Some("overlays/prod"),
            &serde_json::json!({}),
            false,
            &protected,
        )
        .unwrap();
        assert_eq!(listing(&alone), ["overlays/prod/kustomization.yaml"]);
    }

    #[test]
    fn the_whole_directory_leaves_out_dotfiles_the_lock_and_provider_files() {
        let repo = repository();
        let protected = Protected::new([repo.path().join("secrets/ops.env")]);
        let view = view(
            repo.path(),
            Some("."),
            &serde_json::json!({}),
            true,
            &protected,
        )
        .unwrap();
        let listed = listing(&view);
        for hidden in [
            ".git/config",
            ".env",
            "secrets/ops.env",
            "tazuna.lock",
            "apps/.hidden.yaml",
        ] {
            assert!(
                !listed.iter().any(|f| f == hidden),
                "{hidden} in {listed:?}"
            );
        }
        assert!(listed.iter().any(|f| f == "apps/app.yaml"), "{listed:?}");
    }

    #[cfg(unix)]
    #[test]
    fn a_hard_link_is_never_in_a_view_whatever_its_other_name() {
        let repo = repository();
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), "secret", "the user's");
        for (from, to) in [
            (repo.path().join("secrets/ops.env"), "apps/env.yaml"),
            (repo.path().join(".git/config"), "apps/git.yaml"),
            (repo.path().join("tazuna.lock"), "apps/lock.yaml"),
            (outside.path().join("secret"), "apps/out.yaml"),
        ] {
            std::fs::hard_link(from, repo.path().join(to)).unwrap();
        }
        let protected = Protected::new([repo.path().join("secrets/ops.env")]);
        let view = view(
            repo.path(),
            Some("apps"),
            &serde_json::json!({}),
            true,
            &protected,
        )
        .unwrap();
        assert_eq!(listing(&view), ["apps/app.yaml"]);
        // Its files are copies: the repository's keep one name each.
        let meta = std::fs::metadata(repo.path().join("apps/app.yaml")).unwrap();
        assert_eq!(std::os::unix::fs::MetadataExt::nlink(&meta), 1);
    }

    #[cfg(unix)]
    #[test]
    fn a_link_counts_by_what_it_resolves_to() {
        let repo = repository();
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), "secret", "the user's");
        std::os::unix::fs::symlink(
            outside.path().join("secret"),
            repo.path().join("apps/out.yaml"),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            repo.path().join(".git/config"),
            repo.path().join("apps/git.yaml"),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            repo.path().join("values/app.yaml"),
            repo.path().join("apps/v.yaml"),
        )
        .unwrap();
        let view = view(
            repo.path(),
            Some("apps"),
            &serde_json::json!({}),
            false,
            &Protected::default(),
        )
        .unwrap();
        assert_eq!(listing(&view), ["apps/app.yaml", "apps/v.yaml"]);
        // Named directly, a link to outside is not followed either.
        let named = super::view(
            repo.path(),
            None,
            &serde_json::json!({"file": "apps/out.yaml"}),
            false,
            &Protected::default(),
        )
        .unwrap();
        assert!(listing(&named).is_empty());
    }
}
