//! The `artifacts` host import: pulling an OCI artifact into a plugin's scratch
//! directory with the host's credentials, so a plugin never sees a password.
//!
//! Each pull lands in a fresh `/scratch/artifacts/<n>/`. A layer becomes a file
//! named by its `org.opencontainers.image.title` annotation (its digest
//! otherwise); a layer that `oras push` made from a directory (annotation
//! `io.deis.oras.content.unpack: true`, a gzipped tar) is unpacked into that
//! directory, refusing entries that would land outside it. The artifact may
//! hold at most [`ARTIFACT_CAP`] bytes, and the pull must finish within the
//! call's time budget.

use std::io::Read;
use std::path::{Component, Path};
use std::time::Duration;

use oci_client::manifest::OciDescriptor;

use super::beneath::Beneath;
use super::bindings::artifacts::Fetched;
use super::bindings::types::PluginError;
use super::capabilities::Capabilities;
use super::mounts::Mount;
use crate::distribution::{self, Source};

/// The most bytes one artifact may hold, packed.
pub const ARTIFACT_CAP: u64 = 512 * 1024 * 1024;

/// The grant a pull needs.
const CAPABILITY: &str = "artifacts:pull";

const TITLE: &str = "org.opencontainers.image.title";
const UNPACK: &str = "io.deis.oras.content.unpack";

/// What one call's pulls may touch.
#[derive(Debug)]
pub struct PullContext<'a> {
    /// The plugin's name, for messages.
    pub plugin: &'a str,
    /// Capabilities in effect.
    pub capabilities: &'a Capabilities,
    /// The call's preopened directories; pulls go to the one at `/scratch`.
    pub mounts: &'a [Mount],
    /// Upper bound for the pull.
    pub timeout: Duration,
    /// The references the manifest's config names ([`named_references`]).
    pub named: &'a [String],
}

/// The OCI references a manifest's config (the user's `tazuna.yaml`) names:
/// every string value, without a leading `oci://` or `http://`. A plugin
/// pulls only one of these, exactly as written, so it reaches no registry
/// the file does not name and carries nothing out in a reference of its own
/// making (a tag or a path spelled from data).
pub fn named_references(strings: &[&str]) -> Vec<String> {
    let mut found: Vec<String> = strings.iter().map(|text| bare(text).to_owned()).collect();
    found.sort();
    found.dedup();
    found
}

/// `reference` without its `oci://` or `http://`.
fn bare(reference: &str) -> &str {
    reference
        .strip_prefix("http://")
        .or_else(|| reference.strip_prefix("oci://"))
        .unwrap_or(reference)
}

/// Pull `reference` (`registry/repo:tag`, `registry/repo@sha256:…`, with or
/// without `oci://`; `http://` in front asks for plain HTTP), keeping the layers whose media type is in `media_types`
/// (all layers when it is empty).
pub fn pull(
    ctx: &PullContext<'_>,
    reference: &str,
    media_types: &[String],
) -> Result<Fetched, PluginError> {
    if !ctx.capabilities.allows(CAPABILITY) {
        return Err(PluginError::CapabilityDenied(format!(
            "plugin `{}` may not pull `{reference}`: capability `{CAPABILITY}` is not granted",
            ctx.plugin
        )));
    }
    if !ctx.named.iter().any(|named| named == bare(reference)) {
        return Err(PluginError::CapabilityDenied(format!(
            "plugin `{}` may not pull `{reference}`: the manifest's config does not name it; a plugin pulls only the artifacts your tazuna.yaml names, exactly as written (`oci://{}`)",
            ctx.plugin,
            bare(reference)
        )));
    }
    // `http://` asks for plain HTTP; loopback registries get it anyway.
    let (bare, plain_http) = match reference.strip_prefix("http://") {
        Some(rest) => (rest, true),
        None => (reference.strip_prefix("oci://").unwrap_or(reference), false),
    };
    let source =
        Source::parse(ctx.plugin, bare).map_err(|error| PluginError::Other(error.to_string()))?;
    let scratch = ctx
        .mounts
        .iter()
        .find(|mount| mount.guest == super::SCRATCH_DIR)
        .ok_or_else(|| PluginError::Other("this call has no scratch directory".to_owned()))?;
    let (guest, dir) = fresh_dir(&scratch.host)?;
    let media_types = media_types.to_vec();
    let timeout = ctx.timeout;
    let reference = reference.to_owned();
    // The pull is async; run it on a thread of its own, whatever runtime the
    // caller is in.
    let digest = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| PluginError::Other(format!("cannot start a runtime: {e}")))?;
                runtime.block_on(async {
                    tokio::time::timeout(timeout, fetch(&source, plain_http, &media_types, &dir))
                        .await
                        .unwrap_or_else(|_| {
                            Err(PluginError::Timeout(format!(
                                "pulling `{reference}` took longer than {}s",
                                timeout.as_secs()
                            )))
                        })
                })
            })
            .join()
            .unwrap_or_else(|_| Err(PluginError::Other("the pull panicked".to_owned())))
    })?;
    Ok(Fetched {
        digest,
        path: guest,
    })
}

/// `/scratch/artifacts/<n>`, created empty, and a handle on it. Made through
/// a handle on scratch, never following a link the plugin planted there.
fn fresh_dir(scratch: &Path) -> Result<(String, Beneath), PluginError> {
    let refused = |e: std::io::Error| {
        PluginError::Other(format!(
            "cannot create `{}/artifacts`: {e}",
            super::SCRATCH_DIR
        ))
    };
    let root = Beneath::open(scratch)
        .and_then(|scratch| scratch.create_dir_all(Path::new("artifacts")))
        .map_err(refused)?;
    for n in 0u32.. {
        match root.make_dir(&n.to_string()) {
            Ok(()) => {
                let dir = root
                    .create_dir_all(Path::new(&n.to_string()))
                    .map_err(refused)?;
                return Ok((format!("{}/artifacts/{n}", super::SCRATCH_DIR), dir));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(refused(e)),
        }
    }
    unreachable!("some directory number is free")
}

/// Pull the manifest and the wanted layers of `source` into `dir`; returns the
/// manifest digest.
async fn fetch(
    source: &Source,
    plain_http: bool,
    media_types: &[String],
    dir: &Beneath,
) -> Result<String, PluginError> {
    let reference = source.reference();
    let network = |what: &str, error: &dyn std::fmt::Display| {
        PluginError::Network(format!("{what} `oci://{reference}`: {error}"))
    };
    let client = source.client_over(plain_http);
    let auth = distribution::auth_for(&source.registry);
    let (manifest, digest) = client
        .pull_image_manifest(&reference, &auth)
        .await
        .map_err(|e| {
            if distribution::is_not_found(&e) {
                PluginError::NotFound(format!(
                    "artifact `oci://{reference}` (the registry has no such repository, tag or digest)"
                ))
            } else {
                network("cannot pull", &client.explain(&e))
            }
        })?;
    let layers: Vec<&OciDescriptor> = manifest
        .layers
        .iter()
        .filter(|layer| media_types.is_empty() || media_types.contains(&layer.media_type))
        .collect();
    let Some(total) = declared_total(&layers) else {
        return Err(PluginError::Other(format!(
            "artifact `oci://{reference}` declares layers of more than the {ARTIFACT_CAP} bytes a plugin may pull (or a size that is not one); refused"
        )));
    };
    // What the manifest declares, checked, is all the registry may send.
    client.allow(total);
    for layer in layers {
        // Never more than the manifest declares, whatever the registry sends.
        let declared = u64::try_from(layer.size).unwrap_or(0);
        let mut blob = Capped::new(declared);
        let pulled = client.pull_blob(&reference, layer, &mut blob).await;
        if blob.over {
            return Err(PluginError::Other(format!(
                "a layer of `oci://{reference}` is larger than the {declared} bytes its manifest declares; refused"
            )));
        }
        pulled.map_err(|e| network("cannot pull a layer of", &client.explain(&e)))?;
        let blob = blob.bytes;
        if distribution::sha256(&blob) != layer.digest {
            return Err(PluginError::Other(format!(
                "a layer of `oci://{reference}` does not match its digest `{}`",
                layer.digest
            )));
        }
        let annotation = |key: &str| layer.annotations.as_ref().and_then(|a| a.get(key));
        let name = annotation(TITLE)
            .cloned()
            .unwrap_or_else(|| layer.digest.replace(':', "-"));
        if !plain(&name) {
            return Err(PluginError::Other(format!(
                "a layer of `oci://{reference}` is titled `{name}`, which leaves its directory"
            )));
        }
        let write = |e: std::io::Error| {
            PluginError::Other(format!("cannot write `{name}` of `oci://{reference}`: {e}"))
        };
        if annotation(UNPACK).is_some_and(|v| v == "true") {
            dir.create_dir_all(Path::new(&name)).map_err(write)?;
            unpack(&blob, dir).map_err(write)?;
        } else {
            dir.write(Path::new(&name), &blob).map_err(write)?;
        }
    }
    Ok(digest)
}

/// The bytes `layers` declare, if each size is one and their sum stays
/// within [`ARTIFACT_CAP`]. Sizes are the registry's word: a negative one, or
/// a sum past the cap (or past `u64`), is refused before any layer is pulled.
fn declared_total(layers: &[&OciDescriptor]) -> Option<u64> {
    layers.iter().try_fold(0u64, |sum, layer| {
        sum.checked_add(u64::try_from(layer.size).ok()?)
            .filter(|total| *total <= ARTIFACT_CAP)
    })
}

/// A sink that keeps at most `limit` bytes and fails the write past it.
struct Capped {
    bytes: Vec<u8>,
    limit: u64,
    over: bool,
}

impl Capped {
    fn new(limit: u64) -> Self {
        Self {
            bytes: Vec::new(),
            limit,
            over: false,
        }
    }
}

impl tokio::io::AsyncWrite for Capped {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        data: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if self.bytes.len() as u64 + data.len() as u64 > self.limit {
            self.over = true;
            return std::task::Poll::Ready(Err(std::io::Error::other(
                "more bytes than the manifest declares",
            )));
        }
        self.bytes.extend_from_slice(data);
        std::task::Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// Whether `name` is a relative path of plain names (it stays inside its
/// directory).
fn plain(name: &str) -> bool {
    let path = Path::new(name);
    !name.is_empty()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// Unpack a gzipped tar into `dir`. `oras push <dir>` packs the directory under
/// its own name, so its entries start with the title. Entries that would leave
/// `dir` (absolute, `..`) are refused; links and devices are skipped; no file
/// is executable, whatever its mode in the archive.
fn unpack(blob: &[u8], dir: &Beneath) -> std::io::Result<()> {
    let mut gz = flate2::read::GzDecoder::new(blob);
    let mut tarball = Vec::new();
    gz.by_ref().take(ARTIFACT_CAP).read_to_end(&mut tarball)?;
    let mut archive = tar::Archive::new(&tarball[..]);
    for entry in archive.entries()? {
        let mut entry = entry?;
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir()) {
            continue;
        }
        let path = entry.path()?.into_owned();
        if !path.to_str().is_some_and(plain) {
            return Err(std::io::Error::other(format!(
                "the archive entry `{}` leaves its directory",
                path.display()
            )));
        }
        if kind.is_dir() {
            dir.create_dir_all(&path)?;
        } else {
            // The tarball is already in memory and capped; so is each entry.
            let mut bytes = Vec::new();
            entry.by_ref().take(ARTIFACT_CAP).read_to_end(&mut bytes)?;
            dir.write(&path, &bytes)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blob_larger_than_declared_is_cut_off_at_the_declared_size() {
        use tokio::io::AsyncWriteExt as _;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut sink = Capped::new(4);
        let wrote = runtime.block_on(sink.write_all(b"12345678"));
        assert!(wrote.is_err());
        assert!(sink.over);
        assert!(sink.bytes.len() <= 4);
        let mut fits = Capped::new(8);
        runtime.block_on(fits.write_all(b"12345678")).unwrap();
        assert_eq!(fits.bytes, b"12345678");
    }

    fn tar_gz(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (name, data) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, name, *data).unwrap();
        }
        let tarball = builder.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &tarball).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn directories_unpack_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let blob = tar_gz(&[("bundle/kustomization.yaml", b"resources: []\n")]);
        unpack(&blob, &Beneath::open(dir.path()).unwrap()).unwrap();
        let text = std::fs::read_to_string(dir.path().join("bundle/kustomization.yaml")).unwrap();
        assert_eq!(text, "resources: []\n");
    }

    #[test]
    fn entries_and_titles_that_leave_the_directory_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_size(1);
        header.set_mode(0o644);
        // `append_data` refuses `..` itself, so write the name raw.
        header.as_gnu_mut().unwrap().name[..9].copy_from_slice(b"../escape");
        header.set_cksum();
        builder.append(&header, &b"x"[..]).unwrap();
        let tarball = builder.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &tarball).unwrap();
        let error = unpack(&gz.finish().unwrap(), &Beneath::open(dir.path()).unwrap()).unwrap_err();
        assert!(
            error.to_string().contains("leaves its directory"),
            "{error}"
        );
        assert!(!dir.path().parent().unwrap().join("escape").exists());

        assert!(plain("bundle/a.yaml"));
        assert!(!plain("../a"));
        assert!(!plain("/etc/passwd"));
        assert!(!plain(""));
    }

    #[test]
    fn without_the_grant_nothing_is_pulled() {
        let capabilities = Capabilities::none();
        let ctx = PullContext {
            plugin: "oras",
            capabilities: &capabilities,
            mounts: &[],
            timeout: Duration::from_secs(1),
            named: &["127.0.0.1:1/x:1".to_owned()],
        };
        let error = pull(&ctx, "127.0.0.1:1/x:1", &[]).unwrap_err();
        assert!(
            matches!(&error, PluginError::CapabilityDenied(m) if m.contains("`artifacts:pull` is not granted")),
            "{error:?}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_link_the_plugin_planted_in_scratch_never_leads_a_pull_out() {
        let scratch = tempfile::tempdir().unwrap();
        let repository = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(repository.path(), scratch.path().join("artifacts")).unwrap();
        let error = fresh_dir(scratch.path()).unwrap_err();
        assert!(
            format!("{error:?}").contains("/scratch/artifacts"),
            "{error:?}"
        );
        // A link where a numbered directory would go is passed over.
        std::fs::remove_file(scratch.path().join("artifacts")).unwrap();
        std::fs::create_dir(scratch.path().join("artifacts")).unwrap();
        std::os::unix::fs::symlink(repository.path(), scratch.path().join("artifacts/0")).unwrap();
        let (guest, dir) = fresh_dir(scratch.path()).unwrap();
        assert_eq!(guest, "/scratch/artifacts/1");
        let blob = tar_gz(&[("bundle/crb.yaml", b"kind: ClusterRoleBinding\n")]);
        unpack(&blob, &dir).unwrap();
        assert!(scratch.path().join("artifacts/1/bundle/crb.yaml").is_file());
        assert_eq!(std::fs::read_dir(repository.path()).unwrap().count(), 0);
    }

    #[test]
    fn layer_sizes_that_overflow_or_are_negative_are_refused_before_a_pull() {
        let sum = |sizes: &[i64]| {
            let layers: Vec<OciDescriptor> = sizes
                .iter()
                .map(|size| OciDescriptor {
                    size: *size,
                    ..OciDescriptor::default()
                })
                .collect();
            declared_total(&layers.iter().collect::<Vec<_>>())
        };
        assert_eq!(sum(&[1, 2]), Some(3));
        assert_eq!(sum(&[i64::MAX, i64::MAX, 4]), None);
        assert_eq!(sum(&[-1]), None);
        assert_eq!(sum(&[ARTIFACT_CAP as i64, 1]), None);
        assert_eq!(sum(&[ARTIFACT_CAP as i64]), Some(ARTIFACT_CAP));
    }

    #[test]
    fn a_plugin_pulls_only_a_reference_the_config_names_as_written() {
        let config: serde_json::Value = serde_json::from_str(
            r#"{"reference":"oci://registry.example/platform/bundle:1.0","values":{"x":["http://127.0.0.1:5000/a@sha256:ab"]}}"#,
        )
        .unwrap();
        let named = named_references(&crate::config_strings::strings_in(&config));
        assert_eq!(
            named,
            [
                "127.0.0.1:5000/a@sha256:ab",
                "registry.example/platform/bundle:1.0"
            ]
        );
        let grant = vec!["artifacts:pull".to_owned()];
        let capabilities = Capabilities::effective(&grant, &grant);
        let ctx = PullContext {
            plugin: "probe",
            capabilities: &capabilities,
            mounts: &[],
            timeout: Duration::from_secs(1),
            named: &named,
        };
        // Another registry, another repository, data spelled into a tag.
        for reference in [
            "attacker.example/exfil:1.0",
            "registry.example/platform/other:1.0",
            "registry.example/platform/bundle:c2VjcmV0",
            "oci://registry.example/platform/bundle:1.0x",
        ] {
            let error = pull(&ctx, reference, &[]).unwrap_err();
            assert!(
                matches!(&error, PluginError::CapabilityDenied(m) if m.contains("does not name it")),
                "{reference}: {error:?}"
            );
        }
    }
}
