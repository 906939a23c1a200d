//! Registry credentials, from the user's docker and helm configs, which
//! plugins never see.

use std::path::PathBuf;

use oci_client::secrets::RegistryAuth;

/// Credentials for `registry` from the docker config, else anonymous.
pub fn auth_for(registry: &str) -> RegistryAuth {
    let Some(text) = docker_config().and_then(|path| std::fs::read_to_string(path).ok()) else {
        return RegistryAuth::Anonymous;
    };
    docker_auth(&text, registry).unwrap_or(RegistryAuth::Anonymous)
}

/// The docker config file: `$DOCKER_CONFIG/config.json`, else
/// `~/.docker/config.json`.
pub fn docker_config() -> Option<PathBuf> {
    std::env::var_os("DOCKER_CONFIG")
        .map(|dir| PathBuf::from(dir).join("config.json"))
        .or_else(|| {
            std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".docker/config.json"))
        })
}

/// The registry logins helm should use for OCI charts: `$HELM_REGISTRY_CONFIG`,
/// else helm's own `~/.config/helm/registry/config.json` when `helm registry
/// login` wrote one, else the docker config. Only an existing file counts.
pub fn helm_registry_config() -> Option<PathBuf> {
    let helm_default = std::env::var_os("HOME")
        .map(|home| PathBuf::from(home).join(".config/helm/registry/config.json"));
    [
        std::env::var_os("HELM_REGISTRY_CONFIG").map(PathBuf::from),
        helm_default,
        docker_config(),
    ]
    .into_iter()
    .flatten()
    .find(|path| path.is_file())
}

/// The chart repositories `helm repo add` recorded, for helm to find a chart
/// named `<repository>/<chart>` with the repository's login:
/// `HELM_REPOSITORY_CONFIG` (`$HELM_REPOSITORY_CONFIG`, else helm's
/// `repositories.yaml` under `$XDG_CONFIG_HOME` or `~/.config`) and
/// `HELM_REPOSITORY_CACHE` (`$HELM_REPOSITORY_CACHE`, else helm's
/// `repository` directory under `$XDG_CACHE_HOME` or `~/.cache`), the ones
/// that exist.
pub fn helm_repositories() -> Vec<(&'static str, PathBuf)> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let base = |xdg: &str, fallback: &str| {
        std::env::var_os(xdg)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|home| home.join(fallback)))
    };
    let config = std::env::var_os("HELM_REPOSITORY_CONFIG")
        .map(PathBuf::from)
        .or_else(|| {
            base("XDG_CONFIG_HOME", ".config").map(|dir| dir.join("helm/repositories.yaml"))
        })
        .filter(|path| path.is_file());
    let cache = std::env::var_os("HELM_REPOSITORY_CACHE")
        .map(PathBuf::from)
        .or_else(|| base("XDG_CACHE_HOME", ".cache").map(|dir| dir.join("helm/repository")))
        .filter(|path| path.is_dir());
    [
        ("HELM_REPOSITORY_CONFIG", config),
        ("HELM_REPOSITORY_CACHE", cache),
    ]
    .into_iter()
    .filter_map(|(key, path)| Some((key, path?)))
    .collect()
}

/// The basic-auth entry for `registry` in a docker config file.
fn docker_auth(config: &str, registry: &str) -> Option<RegistryAuth> {
    use base64::Engine as _;
    let config: serde_json::Value = serde_json::from_str(config).ok()?;
    let auths = config.get("auths")?.as_object()?;
    let entry = auths.iter().find_map(|(key, entry)| {
        let host = key
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .trim_end_matches('/');
        (host == registry).then_some(entry)
    })?;
    if let Some(encoded) = entry.get("auth").and_then(|a| a.as_str()) {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()?;
        let (user, password) = String::from_utf8(decoded)
            .ok()?
            .split_once(':')
            .map(|(user, password)| (user.to_owned(), password.to_owned()))?;
        return Some(RegistryAuth::Basic(user, password));
    }
    let user = entry.get("username")?.as_str()?;
    let password = entry.get("password")?.as_str()?;
    Some(RegistryAuth::Basic(user.to_owned(), password.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_config_entries_give_basic_auth() {
        // "robot:s3cret" in base64.
        let config = r#"{"auths": {"https://127.0.0.1:5000": {"auth": "cm9ib3Q6czNjcmV0"},
                                   "other.example": {"username": "u", "password": "p"}}}"#;
        let RegistryAuth::Basic(user, password) = docker_auth(config, "127.0.0.1:5000").unwrap()
        else {
            panic!("basic auth expected")
        };
        assert_eq!((user.as_str(), password.as_str()), ("robot", "s3cret"));
        assert!(matches!(
            docker_auth(config, "other.example"),
            Some(RegistryAuth::Basic(..))
        ));
        assert!(docker_auth(config, "ghcr.io").is_none());
    }
}
