//! Kubeconfig files for harness clusters: a standalone file per cluster, and merging
//! several clusters into one file so that `staging` and `production` live side by side
//! as contexts (the cluster, user and context entries are all named after the cluster).

use std::fs;
use std::path::Path;

use anyhow::Context as _;
use serde_yaml::{Mapping, Value};

/// One cluster's entry: its API server and the admin credentials, embedded as data so
/// the file stands on its own.
#[derive(Clone, Debug)]
pub struct ClusterEntry {
    /// The name of the context, cluster and user.
    pub name: String,
    /// `https://127.0.0.1:<port>`.
    pub server: String,
    /// PEM of the CA that signed the serving certificate.
    pub ca_pem: String,
    /// PEM of the admin client certificate.
    pub client_cert_pem: String,
    /// PEM of the admin client key.
    pub client_key_pem: String,
}

impl ClusterEntry {
    /// A kubeconfig holding only this entry, as its current context.
    pub fn to_yaml(&self) -> String {
        let mut doc = empty();
        upsert(&mut doc, self);
        serde_yaml::to_string(&doc).expect("a kubeconfig serialises")
    }
}

/// Adds (or replaces) `entry` in the kubeconfig at `path`, creating the file if needed,
/// and makes it the current context. Other entries are kept as they are.
pub fn merge_into(path: &Path, entry: &ClusterEntry) -> anyhow::Result<()> {
    let mut doc = read(path)?;
    upsert(&mut doc, entry);
    write(path, &doc)
}

/// Removes the entries named `name` from the kubeconfig at `path`. The current context
/// falls back to another context, or is cleared. A missing file is left missing.
pub fn remove_from(path: &Path, name: &str) -> anyhow::Result<()> {
    if !path.exists() {
        return Ok(());
    }
    let mut doc = read(path)?;
    for list in ["clusters", "users", "contexts"] {
        if let Some(Value::Sequence(items)) = doc.get_mut(list) {
            items.retain(|item| item.get("name").and_then(Value::as_str) != Some(name));
        }
    }
    if doc.get("current-context").and_then(Value::as_str) == Some(name) {
        let next = doc
            .get("contexts")
            .and_then(Value::as_sequence)
            .and_then(|c| c.first())
            .and_then(|c| c.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        set(&mut doc, "current-context", Value::String(next));
    }
    write(path, &doc)
}

/// The context names in the kubeconfig at `path`.
pub fn contexts(path: &Path) -> anyhow::Result<Vec<String>> {
    let doc = read(path)?;
    Ok(doc
        .get("contexts")
        .and_then(Value::as_sequence)
        .map(|items| {
            items
                .iter()
                .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default())
}

fn empty() -> Value {
    let mut doc = Mapping::new();
    doc.insert("apiVersion".into(), "v1".into());
    doc.insert("kind".into(), "Config".into());
    doc.insert("preferences".into(), Value::Mapping(Mapping::new()));
    doc.insert("clusters".into(), Value::Sequence(Vec::new()));
    doc.insert("users".into(), Value::Sequence(Vec::new()));
    doc.insert("contexts".into(), Value::Sequence(Vec::new()));
    doc.insert("current-context".into(), "".into());
    Value::Mapping(doc)
}

fn read(path: &Path) -> anyhow::Result<Value> {
    match fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(empty()),
        Ok(text) => serde_yaml::from_str(&text)
            .with_context(|| format!("invalid kubeconfig `{}`", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(empty()),
        Err(e) => Err(e).with_context(|| format!("reading `{}`", path.display())),
    }
}

fn write(path: &Path, doc: &Value) -> anyhow::Result<()> {
    use std::io::Write as _;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent)?;
    }
    // Write a sibling and rename it, so a reader never sees half a file.
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    // Keys and credentials: readable by their owner only.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(&tmp)
        .with_context(|| format!("writing `{}`", tmp.display()))?;
    file.write_all(serde_yaml::to_string(doc)?.as_bytes())?;
    drop(file);
    fs::rename(&tmp, path).with_context(|| format!("writing `{}`", path.display()))
}

fn upsert(doc: &mut Value, entry: &ClusterEntry) {
    let name = entry.name.as_str();
    let cluster = yaml(&[
        ("name", name.into()),
        (
            "cluster",
            yaml(&[
                ("server", entry.server.as_str().into()),
                (
                    "certificate-authority-data",
                    base64(entry.ca_pem.as_bytes()).into(),
                ),
            ]),
        ),
    ]);
    let user = yaml(&[
        ("name", name.into()),
        (
            "user",
            yaml(&[
                (
                    "client-certificate-data",
                    base64(entry.client_cert_pem.as_bytes()).into(),
                ),
                (
                    "client-key-data",
                    base64(entry.client_key_pem.as_bytes()).into(),
                ),
            ]),
        ),
    ]);
    let context = yaml(&[
        ("name", name.into()),
        (
            "context",
            yaml(&[("cluster", name.into()), ("user", name.into())]),
        ),
    ]);
    for (list, item) in [
        ("clusters", cluster),
        ("users", user),
        ("contexts", context),
    ] {
        if !matches!(doc.get(list), Some(Value::Sequence(_))) {
            set(doc, list, Value::Sequence(Vec::new()));
        }
        if let Some(Value::Sequence(items)) = doc.get_mut(list) {
            match items
                .iter_mut()
                .find(|i| i.get("name").and_then(Value::as_str) == Some(name))
            {
                Some(existing) => *existing = item,
                None => items.push(item),
            }
        }
    }
    set(doc, "current-context", name.into());
}

fn set(doc: &mut Value, key: &str, value: Value) {
    if !doc.is_mapping() {
        *doc = empty();
    }
    if let Value::Mapping(map) = doc {
        map.insert(key.into(), value);
    }
}

fn yaml(pairs: &[(&str, Value)]) -> Value {
    let mut map = Mapping::new();
    for (k, v) in pairs {
        map.insert((*k).into(), v.clone());
    }
    Value::Mapping(map)
}

/// Standard base64 with padding, for the `*-data` fields.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, port: u16) -> ClusterEntry {
        ClusterEntry {
            name: name.to_owned(),
            server: format!("https://127.0.0.1:{port}"),
            ca_pem: "ca".into(),
            client_cert_pem: "cert".into(),
            client_key_pem: "key".into(),
        }
    }

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (input, want) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(input.as_bytes()), want, "{input}");
        }
    }

    #[test]
    fn merging_keeps_clusters_side_by_side() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        merge_into(&path, &entry("staging", 1)).unwrap();
        merge_into(&path, &entry("production", 2)).unwrap();
        merge_into(&path, &entry("staging", 3)).unwrap();
        assert_eq!(contexts(&path).unwrap(), ["staging", "production"]);
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains("https://127.0.0.1:3"));
        assert!(!text.contains("https://127.0.0.1:1"));
        assert!(text.contains("current-context: staging"));

        remove_from(&path, "staging").unwrap();
        assert_eq!(contexts(&path).unwrap(), ["production"]);
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains("current-context: production"));
    }

    #[test]
    fn merging_keeps_foreign_entries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        fs::write(
            &path,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kind-dev\n  cluster: {server: https://x}\n\
             contexts:\n- name: kind-dev\n  context: {cluster: kind-dev, user: kind-dev}\n\
             users:\n- name: kind-dev\n  user: {token: t}\ncurrent-context: kind-dev\n",
        )
        .unwrap();
        merge_into(&path, &entry("staging", 1)).unwrap();
        assert_eq!(contexts(&path).unwrap(), ["kind-dev", "staging"]);
    }
}
