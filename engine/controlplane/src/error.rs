//! Why a control plane does not start, and what to do about it.

use std::path::PathBuf;

use tazuna_core::hint::Hint;

/// A control plane that cannot start before any process runs.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Binaries the control plane needs are not installed.
    #[error("missing test binaries: {}", list(.0))]
    MissingBinaries(Vec<PathBuf>),
    /// kwok's stage files are not installed.
    #[error("kwok's stage files are missing from `{}`", .0.display())]
    MissingStages(PathBuf),
    /// A cluster of that name runs in that directory already.
    #[error("cluster `{name}` is already running in `{}`", dir.display())]
    AlreadyRunning {
        /// The cluster's name.
        name: String,
        /// Its directory.
        dir: PathBuf,
    },
    /// The name cannot be a cluster's.
    #[error("invalid cluster name `{0}`")]
    InvalidName(String),
}

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|path| format!("`{}`", path.display()))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Hint for StartError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            Self::MissingBinaries(_) => format!(
                "run `tests/controlplane/install.sh`, or set {} to a directory that holds them",
                crate::assets::ASSETS_ENV
            ),
            Self::MissingStages(_) => "run `tests/controlplane/install.sh`".to_owned(),
            Self::AlreadyRunning { name, .. } => {
                format!("stop it with `cargo xtask cluster down --name {name}`")
            }
            Self::InvalidName(_) => "use lowercase letters, digits and `-`, at most 63".to_owned(),
        })
    }
}
