//! What a tool may start beside itself to fetch remote content: `git` and
//! its HTTP transport, for kustomize's remote bases and helmfile's remote
//! helmfiles, when the manifest names a host. The one place that decides it;
//! the jail enforces it (`jail/landlock.rs`, `jail/view.rs`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::exec::{Network, locate};

/// The tools that fetch remote content with `git`: a kustomization's remote
/// bases (`https://host/org/repo//path?ref=v1`, `git::…`), a helmfile's
/// remote helmfiles.
const FETCH_WITH_GIT: &[&str] = &["kustomize", "helmfile"];

/// The git helpers a fetch over HTTP(S) starts, from git's exec path.
const GIT_HELPERS: [&str; 3] = ["git", "git-remote-http", "git-remote-https"];

/// What `tool` may start beside itself to fetch from the hosts the manifest
/// names: `git` and its HTTP transport, for the tools of
/// [`FETCH_WITH_GIT`], and only when the manifest names a host (offline,
/// nothing).
#[derive(Default)]
pub(super) struct Fetchers {
    /// The programs, as the jail allows them.
    pub(super) programs: Vec<PathBuf>,
    /// git's exec path (`git --exec-path`).
    exec_path: Option<PathBuf>,
}

impl Fetchers {
    pub(super) fn of(tool: &str, network: &Network) -> Self {
        if !FETCH_WITH_GIT.contains(&tool) || network.offline || network.endpoints.is_empty() {
            return Self::default();
        }
        let Some(git) = locate("git") else {
            return Self::default();
        };
        static EXEC_PATH: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
        let exec_path = EXEC_PATH
            .get_or_init(|| {
                let output = Command::new(&git)
                    .arg("--exec-path")
                    .env_clear()
                    .stdin(Stdio::null())
                    .output()
                    .ok()
                    .filter(|output| output.status.success())?;
                let text = String::from_utf8(output.stdout).ok()?;
                Some(PathBuf::from(text.trim())).filter(|dir| dir.is_absolute())
            })
            .clone();
        let mut programs: Vec<PathBuf> = std::iter::once(git)
            .chain(
                exec_path
                    .iter()
                    .flat_map(|dir| GIT_HELPERS.map(|name| dir.join(name))),
            )
            .filter(|path| path.is_file())
            .map(|path| std::fs::canonicalize(&path).unwrap_or(path))
            .collect();
        programs.sort();
        programs.dedup();
        Self {
            programs,
            exec_path,
        }
    }

    /// git's environment in the jail, with its exec path at `dir` (in the
    /// tool's private home): links to [`GIT_HELPERS`] alone. git's other
    /// helpers do not exist there (SSH, `ext::`, its shell scripts), and
    /// `git submodule` (a shell script in older gits, which would need a
    /// shell) becomes the `submodule--helper` it calls, so a remote base
    /// with submodules is fetched without any shell.
    pub(super) fn environment(&self, dir: &Path) -> std::io::Result<Vec<(&'static str, PathBuf)>> {
        let Some(exec_path) = self
            .exec_path
            .as_deref()
            .filter(|_| !self.programs.is_empty())
        else {
            return Ok(Vec::new());
        };
        std::fs::create_dir_all(dir)?;
        for name in GIT_HELPERS {
            let target = exec_path.join(name);
            if target.exists() {
                #[cfg(unix)]
                std::os::unix::fs::symlink(&target, dir.join(name))?;
                // No jail off Unix: the helper is copied, not linked.
                #[cfg(not(unix))]
                std::fs::copy(&target, dir.join(name))?;
            }
        }
        Ok(vec![
            ("GIT_EXEC_PATH", dir.to_owned()),
            ("GIT_CONFIG_COUNT", PathBuf::from("1")),
            ("GIT_CONFIG_KEY_0", PathBuf::from("alias.submodule")),
            ("GIT_CONFIG_VALUE_0", PathBuf::from("submodule--helper")),
        ])
    }
}
