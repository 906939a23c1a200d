//! A repository chart fetched before it is rendered (`helm pull`), so that
//! its archive's digest pins it in `tazuna.lock`, as an OCI chart's is: a
//! chart republished under the same version is noticed, not rendered.

use sha2::{Digest, Sha256};
use tazuna_sdk::exec::Command;
use tazuna_sdk::{PluginError, RenderRequest};

use crate::config::Config;

/// A chart archive `helm pull` wrote.
#[derive(Debug)]
pub struct Pulled {
    /// Its guest path.
    pub archive: String,
    /// The version it is (from `<name>-<version>.tgz`).
    pub version: Option<String>,
    /// `sha256:<hex>` of the archive.
    pub digest: String,
}

/// `helm pull` chart `name` of `repo` (a URL, or a name `helm repo add`
/// recorded) into the scratch directory.
pub fn pull(
    repo: &str,
    name: &str,
    config: &Config,
    request: &RenderRequest,
) -> Result<Pulled, PluginError> {
    let destination = format!("{}/pulled", request.scratch.trim_end_matches('/'));
    std::fs::create_dir_all(&destination).map_err(|error| {
        PluginError::other(format_args!("cannot create `{destination}`: {error}"))
    })?;
    let mut args = vec!["pull".to_owned()];
    if repo.contains("://") {
        args.push(name.to_owned());
        args.push(format!("--repo={repo}"));
    } else {
        args.push(format!("{repo}/{name}"));
    }
    if let Some(version) = &config.version {
        args.push(format!("--version={version}"));
    }
    args.push(format!("--destination={destination}"));
    Command::new("helm")
        .args(args)
        .cwd(request.scratch.as_str())
        .run_checked()?;
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
        archive: path,
        version,
        digest,
    })
}
