//! Resolving, pulling and pushing plugin components.

use std::path::Path;

use oci_client::Reference;
use oci_wasm::WasmConfig;
use tazuna_core::config::Plugin;
use tazuna_core::lock::{PluginPin, grants_hash};

use super::*;

/// Resolve `plugin`, whose source is `oci://<reference>`, to a component.
///
/// With a pin that still matches `tazuna.yaml` and [`Resolve::Pinned`], the
/// component comes from the cache, or is pulled by the pinned manifest digest.
/// Otherwise the source is resolved: by its digest, by its tag, or by the
/// highest semver tag that satisfies `version`. A new pin records `world`,
/// the WIT world the component is loaded as.
pub async fn fetch(
    plugin: &Plugin,
    reference: &str,
    pin: Option<&PluginPin>,
    resolve: Resolve,
    blobs: &Blobs,
    world: &str,
) -> Result<Fetched, DistributionError> {
    let name = plugin.name.as_str();
    let source = Source::parse(name, reference)?;
    let declared_source = format!("oci://{reference}");
    let constraint = plugin.version.as_ref().map(ToString::to_string);
    let grants = grants_hash(&plugin.grants);
    if let (Some(pin), Resolve::Pinned | Resolve::Offline) = (pin, resolve) {
        check_pin(name, pin, &declared_source, constraint.as_deref(), &grants)?;
        if let Some(expected) = &plugin.digest
            && *expected != pin.manifest_digest
        {
            return Err(DistributionError::PinOutOfDate {
                name: name.to_owned(),
                what: "`digest`",
                pinned: pin.manifest_digest.clone(),
                declared: expected.clone(),
            });
        }
        // The cache serves the pinned component only if this cache pulled it
        // by the pinned manifest digest: a lock whose digests were both
        // edited to another cached component is pulled again, and refused.
        let provenance = blobs.pulled_as(&source.origin(), &pin.manifest_digest);
        if provenance.as_deref() == Some(pin.component_digest.as_str())
            && let Some(bytes) = blobs.get(&pin.component_digest)
        {
            return Ok(Fetched {
                bytes,
                pin: pin.clone(),
                repinned: false,
                pulled: false,
            });
        }
        if resolve == Resolve::Offline {
            return Err(DistributionError::Offline {
                name: name.to_owned(),
                why: "its pinned component is not in the cache (run once without `--offline` to fill it)",
            });
        }
        let pulled = pull(name, &source, &source.with_digest(&pin.manifest_digest)).await?;
        if pulled.component_digest != pin.component_digest {
            return Err(DistributionError::DigestMismatch {
                name: name.to_owned(),
                expected_from: "tazuna.lock",
                expected: pin.component_digest.clone(),
                actual_from: "the component pulled by the pinned manifest digest",
                actual: pulled.component_digest,
            });
        }
        blobs.put(&pulled.bytes);
        blobs.record_pull(
            &source.origin(),
            &pulled.manifest_digest,
            &pulled.component_digest,
        );
        return Ok(Fetched {
            bytes: pulled.bytes,
            pin: pin.clone(),
            repinned: false,
            pulled: true,
        });
    }

    if resolve == Resolve::Offline {
        return Err(DistributionError::Offline {
            name: name.to_owned(),
            why: "tazuna.lock has no pin for it (run once without `--offline` to pin and cache it)",
        });
    }
    let (reference, tag) = match (&source.digest, &source.tag) {
        (Some(digest), tag) => (source.with_digest(digest), tag.clone()),
        (None, Some(tag)) => (source.with_tag(tag), Some(tag.clone())),
        (None, None) => {
            let tag = newest_tag(name, &source, plugin.version.as_ref()).await?;
            (source.with_tag(&tag), Some(tag))
        }
    };
    let pulled = pull(name, &source, &reference).await?;
    let wanted = plugin.digest.as_ref().or(source.digest.as_ref());
    if let Some(expected) = wanted
        && *expected != pulled.manifest_digest
    {
        return Err(DistributionError::DigestMismatch {
            name: name.to_owned(),
            expected_from: "tazuna.yaml",
            expected: expected.clone(),
            actual_from: "the manifest the registry serves",
            actual: pulled.manifest_digest,
        });
    }
    blobs.put(&pulled.bytes);
    blobs.record_pull(
        &source.origin(),
        &pulled.manifest_digest,
        &pulled.component_digest,
    );
    let new_pin = PluginPin {
        source: declared_source,
        constraint,
        version: tag.unwrap_or_default(),
        manifest_digest: pulled.manifest_digest,
        component_digest: pulled.component_digest,
        world: world.to_owned(),
        grants,
    };
    let repinned = pin != Some(&new_pin);
    Ok(Fetched {
        bytes: pulled.bytes,
        pin: new_pin,
        repinned,
        pulled: true,
    })
}

/// Refuses a pin that no longer matches what `tazuna.yaml` declares.
fn check_pin(
    name: &str,
    pin: &PluginPin,
    source: &str,
    constraint: Option<&str>,
    grants: &str,
) -> Result<(), DistributionError> {
    let out_of_date = |what, pinned: &str, declared: &str| DistributionError::PinOutOfDate {
        name: name.to_owned(),
        what,
        pinned: pinned.to_owned(),
        declared: declared.to_owned(),
    };
    if pin.source != source {
        return Err(out_of_date("`source`", &pin.source, source));
    }
    if pin.constraint.as_deref() != constraint {
        return Err(out_of_date(
            "`version`",
            pin.constraint.as_deref().unwrap_or("none"),
            constraint.unwrap_or("none"),
        ));
    }
    if pin.grants != grants {
        return Err(out_of_date("`grants`", &pin.grants, grants));
    }
    Ok(())
}

/// The highest semver tag of `source` that satisfies `constraint` (any, when
/// none is given); a leading `v` is allowed.
async fn newest_tag(
    name: &str,
    source: &Source,
    constraint: Option<&semver::VersionReq>,
) -> Result<String, DistributionError> {
    let reference = source.with_tag("latest");
    let auth = auth_for(&source.registry);
    let registry = source.client();
    let tags = registry
        .list_tags(&reference, &auth, None, None)
        .await
        .map_err(|error| DistributionError::Registry {
            name: name.to_owned(),
            action: "cannot list the tags of",
            reference: source.repository_url(),
            message: registry.explain(error),
        })?
        .tags;
    let (tag, available) = pick_tag(&tags, constraint);
    tag.ok_or_else(|| DistributionError::NoMatchingVersion {
        name: name.to_owned(),
        reference: source.repository_url(),
        constraint: constraint.map_or_else(|| "*".to_owned(), ToString::to_string),
        available,
    })
}

/// The highest tag satisfying `constraint`, and every semver tag, sorted.
fn pick_tag(
    tags: &[String],
    constraint: Option<&semver::VersionReq>,
) -> (Option<String>, Vec<String>) {
    let mut versions: Vec<(semver::Version, &String)> = tags
        .iter()
        .filter_map(|tag| {
            semver::Version::parse(tag.strip_prefix('v').unwrap_or(tag))
                .ok()
                .map(|version| (version, tag))
        })
        .collect();
    versions.sort();
    let available = versions.iter().map(|(_, tag)| (*tag).clone()).collect();
    let best = versions
        .iter()
        .rev()
        .find(|(version, _)| match constraint {
            Some(constraint) => constraint.matches(version),
            None => version.pre.is_empty(),
        })
        .map(|(_, tag)| (*tag).clone());
    (best, available)
}

/// One pulled component.
struct Pulled {
    bytes: Vec<u8>,
    manifest_digest: String,
    component_digest: String,
}

async fn pull(
    name: &str,
    source: &Source,
    reference: &Reference,
) -> Result<Pulled, DistributionError> {
    let failed = |message: String| DistributionError::Registry {
        name: name.to_owned(),
        action: "cannot pull",
        reference: format!("oci://{reference}"),
        message,
    };
    let registry = source.client();
    let auth = auth_for(&source.registry);
    // The manifest first, on the allowance for manifests alone; then the one
    // layer, once its declared size is checked, on that size.
    let (manifest, manifest_digest) = registry
        .oci()
        .pull_image_manifest(reference, &auth)
        .await
        .map_err(|error| {
            if is_not_found(&error) {
                failed("the registry has no such tag or digest".to_owned())
            } else {
                failed(registry.explain(format!("{error:#}")))
            }
        })?;
    let [layer] = manifest.layers.as_slice() else {
        return Err(failed(format!(
            "a Wasm component is one layer, and this artifact has {}",
            manifest.layers.len()
        )));
    };
    if layer.media_type != oci_wasm::WASM_LAYER_MEDIA_TYPE
        || manifest.config.media_type != oci_wasm::WASM_MANIFEST_CONFIG_MEDIA_TYPE
    {
        return Err(failed(format!(
            "not a Wasm component: its layer is `{}` and its config `{}` (a plugin is `{}` with config `{}`)",
            layer.media_type,
            manifest.config.media_type,
            oci_wasm::WASM_LAYER_MEDIA_TYPE,
            oci_wasm::WASM_MANIFEST_CONFIG_MEDIA_TYPE
        )));
    }
    let size = u64::try_from(layer.size)
        .ok()
        .filter(|size| *size <= super::metered::COMPONENT)
        .ok_or_else(|| {
            failed(format!(
                "its component declares {} bytes, more than the {} MiB a plugin may be",
                layer.size,
                super::metered::COMPONENT >> 20
            ))
        })?;
    registry.allow(size);
    let mut bytes = Vec::new();
    registry
        .oci()
        .pull_blob(reference, layer, &mut bytes)
        .await
        .map_err(|error| failed(registry.explain(format!("{error:#}"))))?;
    let component_digest = sha256(&bytes);
    if layer.digest != component_digest {
        return Err(DistributionError::DigestMismatch {
            name: name.to_owned(),
            expected_from: "the OCI manifest",
            expected: layer.digest.clone(),
            actual_from: "the layer received",
            actual: component_digest,
        });
    }
    Ok(Pulled {
        bytes,
        manifest_digest,
        component_digest,
    })
}

/// Push the component at `path`, the plugin `name`, to `oci://<reference>`
/// (which must name a tag) in the CNCF Wasm layout, with `annotations` on the
/// manifest (what `plugin inspect` reads back); returns the manifest digest.
pub async fn push(
    name: &str,
    path: &Path,
    reference: &str,
    annotations: &PluginAnnotations,
) -> Result<String, DistributionError> {
    let source = Source::parse(name, reference)?;
    let Some(tag) = &source.tag else {
        return Err(DistributionError::InvalidReference {
            name: name.to_owned(),
            reference: reference.to_owned(),
            message: "a push needs a tag, the plugin's version (`:0.1.0`)".to_owned(),
        });
    };
    let bytes = std::fs::read(path).map_err(|error| DistributionError::Read {
        path: path.to_owned(),
        error,
    })?;
    let (config, layer) = WasmConfig::from_raw_component(bytes, None).map_err(|error| {
        DistributionError::NotAComponent {
            path: path.to_owned(),
            message: format!("{error:#}"),
        }
    })?;
    let image = source.with_tag(tag);
    let response = source
        .client()
        .push(
            &image,
            &auth_for(&source.registry),
            layer,
            config,
            Some(annotations.to_map()),
        )
        .await
        .map_err(|error| DistributionError::Registry {
            name: name.to_owned(),
            action: "cannot push to",
            reference: format!("oci://{reference}"),
            message: format!("{error:#}"),
        })?;
    // The manifest URL ends with the digest the registry stored it under.
    let digest = source
        .client()
        .fetch_manifest_digest(&image, &auth_for(&source.registry))
        .await
        .map_err(|error| DistributionError::Registry {
            name: name.to_owned(),
            action: "cannot read back",
            reference: response.manifest_url.clone(),
            message: error.to_string(),
        })?;
    Ok(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_matching_semver_tag_wins() {
        let tags: Vec<String> = ["0.1.0", "v0.1.3", "0.2.0", "latest", "0.3.0-rc.1"]
            .map(String::from)
            .to_vec();
        let constraint = semver::VersionReq::parse(">=0.1, <0.2").unwrap();
        let (best, available) = pick_tag(&tags, Some(&constraint));
        assert_eq!(best.as_deref(), Some("v0.1.3"));
        assert_eq!(available, ["0.1.0", "v0.1.3", "0.2.0", "0.3.0-rc.1"]);
        let (best, _) = pick_tag(&tags, None);
        assert_eq!(
            best.as_deref(),
            Some("0.2.0"),
            "no pre-release without asking"
        );
        let none = semver::VersionReq::parse("^9").unwrap();
        assert_eq!(pick_tag(&tags, Some(&none)).0, None);
    }

    #[test]
    fn a_pin_that_no_longer_matches_the_file_names_what_changed() {
        let pin = PluginPin {
            source: "oci://r/x".into(),
            constraint: Some("^0.1".into()),
            version: "0.1.0".into(),
            manifest_digest: "sha256:m".into(),
            component_digest: "sha256:c".into(),
            world: "w".into(),
            grants: grants_hash(&[]),
        };
        assert!(check_pin("x", &pin, "oci://r/x", Some("^0.1"), &grants_hash(&[])).is_ok());
        let refused =
            check_pin("x", &pin, "oci://r/x", Some("^0.2"), &grants_hash(&[])).unwrap_err();
        let error = refused.to_string();
        assert!(
            error.contains(
                "`version` changed since tazuna.lock pinned it (^0.1 there, ^0.2 in tazuna.yaml)"
            ),
            "{error}"
        );
        // What to do is the hint, not the message.
        let hint = tazuna_core::hint::Hint::hint(&refused).unwrap();
        assert!(hint.contains("tazuna plugin update x"), "{hint}");
        assert!(!error.contains("hint"), "{error}");
        let error = check_pin(
            "x",
            &pin,
            "oci://r/x",
            Some("^0.1"),
            &grants_hash(&["exec:helm".into()]),
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("`grants` changed"), "{error}");
    }
}
