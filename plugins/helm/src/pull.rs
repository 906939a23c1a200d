//! A remote chart fetched before it is rendered (`helm pull`). The pull is
//! the run that signs in; the render that follows gets no login, so nothing
//! a chart contains meets a credential. A repository chart's archive digest
//! pins it in `tazuna.lock`, as an OCI chart's manifest digest (which the
//! pull reports) does: a chart republished under the same version is
//! noticed, not rendered.

use sha2::{Digest, Sha256};
use tazuna_sdk::exec::Command;
use tazuna_sdk::{PluginError, RenderRequest};

use crate::config::Config;

/// A chart archive `helm pull` wrote.
#[derive(Debug)]
pub struct Pulled {
    /// What helm said while pulling (an OCI chart's `Pulled:` and `Digest:`).
    pub said: String,
    /// Its guest path.
    pub archive: String,
    /// The version it is (from `<name>-<version>.tgz`).
    pub version: Option<String>,
    /// `sha256:<hex>` of the archive.
    pub digest: String,
}

/// Where a remote chart is.
#[derive(Debug, Clone, Copy)]
pub enum Remote<'a> {
    /// Chart `name` of `repo` (a URL, or a name `helm repo add` recorded).
    Repository {
        /// The repository.
        repo: &'a str,
        /// The chart's name there.
        name: &'a str,
    },
    /// `oci://…`.
    Oci(&'a str),
}

/// `helm pull` the chart `remote` names into the scratch directory.
pub fn pull(
    remote: Remote<'_>,
    config: &Config,
    request: &RenderRequest,
) -> Result<Pulled, PluginError> {
    let destination = format!("{}/pulled", request.scratch.trim_end_matches('/'));
    std::fs::create_dir_all(&destination).map_err(|error| {
        PluginError::other(format_args!("cannot create `{destination}`: {error}"))
    })?;
    let mut args = vec!["pull".to_owned()];
    let name = match remote {
        Remote::Repository { repo, name } if repo.contains("://") => {
            args.push(name.to_owned());
            args.push(format!("--repo={repo}"));
            name
        }
        Remote::Repository { repo, name } => {
            args.push(format!("{repo}/{name}"));
            name
        }
        Remote::Oci(reference) => {
            args.push(reference.to_owned());
            if config.plain_http {
                args.push("--plain-http".to_owned());
            }
            reference.rsplit('/').next().unwrap_or(reference)
        }
    };
    if let Some(version) = &config.version {
        args.push(format!("--version={version}"));
    }
    args.push(format!("--destination={destination}"));
    let run = Command::new("helm")
        .args(args)
        .cwd(request.scratch.as_str())
        .run_checked()?;
    let said = format!("{}\n{}", run.stdout_text(), run.stderr_text());
    let archive = std::fs::read_dir(&destination)
        .map_err(|error| PluginError::other(format_args!("cannot read `{destination}`: {error}")))?
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .find(|file| file.ends_with(".tgz"))
        .ok_or_else(|| {
            PluginError::other(format_args!(
                "`helm pull` of `{name}` wrote no chart archive"
            ))
        })?;
    let version = archive
        .strip_prefix(&format!("{name}-"))
        .and_then(|rest| rest.strip_suffix(".tgz"))
        .map(str::to_owned);
    let path = format!("{destination}/{archive}");
    let bytes = std::fs::read(&path)
        .map_err(|error| PluginError::other(format_args!("cannot read `{path}`: {error}")))?;
    let digest = Sha256::digest(&bytes)
        .iter()
        .fold(String::from("sha256:"), |mut hex, byte| {
            hex.push_str(&format!("{byte:02x}"));
            hex
        });
    Ok(Pulled {
        said,
        archive: path,
        version,
        digest,
    })
}
