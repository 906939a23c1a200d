//! Kinds a run's own CRDs define: which manifest provides each, waiting
//! for a new CRD to be `Established` and for its kind to reach discovery.

use super::*;

/// How long a new CRD may take to become `Established`.
pub(super) const CRD_TIMEOUT: Duration = Duration::from_secs(60);

/// How long an `Established` CRD's kind may take to appear in discovery.
pub(super) const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(15);

impl Run<'_> {
    /// The kind of `object` on the cluster. A kind whose CRD this manifest, or
    /// one applied before it, has just created is waited for: the CRD until
    /// it is `Established`, then discovery is refreshed. Objects that need no
    /// new kind never wait for CRDs. In a dry run, such a kind is `None`: the
    /// run would create it, so its objects are creates that cannot be sent.
    pub(super) async fn resolve_kind(
        &self,
        object: &ObjectRef,
        manifest: &Manifest,
        shared: &Shared,
    ) -> Result<Option<Resolved>, ManifestError> {
        if let Some(resolved) = self.cluster.resolve(object) {
            return Ok(Some(resolved));
        }
        let provider = shared
            .providers
            .get(&(object.group.clone(), object.kind.clone()));
        if let Some(provider) = provider {
            let applied = provider.manifest == manifest.name
                || shared
                    .applied
                    .lock()
                    .expect("applied lock")
                    .contains(&provider.manifest);
            if applied && self.settings.mode == Mode::DryRun {
                return Ok(None);
            }
            if applied {
                self.await_established(&provider.crd).await?;
                if let Some(resolved) = self.await_discovered(object).await? {
                    return Ok(Some(resolved));
                }
            }
        }
        let hint = match provider {
            Some(provider) if provider.manifest == manifest.name => None,
            Some(provider) => Some(format!(
                "CRD for `{}` is applied by manifest `{}`; add `{}` to `dependsOn` of `{}`",
                object.kind, provider.manifest, provider.manifest, manifest.name
            )),
            None => tazuna_core::removed::hint(&object.api_version(), &object.kind).or_else(|| {
                Some(format!(
                    "no manifest in this file provides a CRD for `{}.{}`; install it first, or add the manifest that does to `dependsOn`",
                    object.kind, object.group
                ))
            }),
        };
        Err(ManifestError::UnknownKind {
            kind: object.kind.clone(),
            api_version: object.api_version(),
            object: object.clone(),
            hint,
        })
    }

    /// Refresh discovery until it serves the kind of `object`. The API
    /// server publishes a CRD's kind in discovery a moment after the CRD is
    /// `Established`, not with it, so one refresh can miss it.
    pub(super) async fn await_discovered(
        &self,
        object: &ObjectRef,
    ) -> Result<Option<Resolved>, ManifestError> {
        let deadline = tokio::time::Instant::now() + DISCOVERY_TIMEOUT;
        let mut pause = Duration::from_millis(50);
        loop {
            self.cluster
                .refresh()
                .await
                .map_err(ManifestError::Discovery)?;
            if let Some(resolved) = self.cluster.resolve(object) {
                return Ok(Some(resolved));
            }
            if tokio::time::Instant::now() + pause > deadline {
                return Ok(None);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }

    /// Wait until CRD `name` is `Established`.
    pub(super) async fn await_established(&self, name: &str) -> Result<(), ManifestError> {
        let crd = ObjectRef {
            group: "apiextensions.k8s.io".into(),
            version: "v1".into(),
            kind: "CustomResourceDefinition".into(),
            namespace: None,
            name: name.to_owned(),
        };
        let resolved = self
            .cluster
            .resolve(&crd)
            .expect("every API server serves CRDs");
        let watched = vec![Watched {
            object: crd,
            resolved,
            last: None,
        }];
        wait::until_ready(
            self.client(),
            watched,
            CRD_TIMEOUT,
            LoadBalancers::Ignored,
            &|_| {},
        )
        .await?;
        Ok(())
    }
}

/// The CRD that defines a kind, and the manifest that applies it.
#[derive(Debug, Clone)]
pub(super) struct Provider {
    manifest: String,
    crd: String,
}

/// Which manifest's CRDs provide each (group, kind).
pub(super) fn crd_providers(units: &[Unit<'_>]) -> HashMap<(String, String), Provider> {
    let mut providers = HashMap::new();
    for unit in units {
        let Ok(rendered) = &unit.rendered else {
            continue;
        };
        for object in &rendered.objects {
            let Some(reference) = ObjectRef::of(&object.value) else {
                continue;
            };
            if let Some((group, kind)) = defined_kind(&object.value) {
                providers
                    .entry((group.to_owned(), kind.to_owned()))
                    .or_insert_with(|| Provider {
                        manifest: unit.manifest.name.clone(),
                        crd: reference.name.clone(),
                    });
            }
        }
    }
    providers
}

/// The (group, kind) a CRD defines; `None` for anything else.
pub(super) fn defined_kind(object: &Value) -> Option<(&str, &str)> {
    let reference = ObjectRef::of(object)?;
    if Phase::of(&reference) != Phase::Definitions {
        return None;
    }
    let group = object.pointer("/spec/group")?.as_str()?;
    let kind = object.pointer("/spec/names/kind")?.as_str()?;
    Some((group, kind))
}
