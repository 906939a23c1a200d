//! Namespaces a run needs: each namespaced object's namespace must exist, be
//! rendered by a manifest of the run, or be created by one with
//! `createNamespace`. [`missing`] is checked before anything is written, so a
//! release into a namespace nobody creates fails before half its objects do.

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{ListParams, PostParams};
use tazuna_core::config::Manifest;
use tazuna_core::inventory::ObjectRef;
use tazuna_core::render::Rendered;

use crate::cluster::Cluster;

/// A namespace the run writes into that nothing creates.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "namespace `{namespace}` does not exist, and nothing in this run creates it; manifest `{manifest}` puts {object} there"
)]
pub struct Missing {
    /// The namespace.
    pub namespace: String,
    /// The first manifest that needs it.
    pub manifest: String,
    /// Its first object there.
    pub object: String,
    /// A manifest of the file that creates it (`createNamespace`) but is not
    /// in this run (not selected by `--tags`).
    pub elsewhere: Option<String>,
}

impl tazuna_core::hint::Hint for Missing {
    fn hint(&self) -> Option<String> {
        Some(match &self.elsewhere {
            Some(other) => format!(
                "manifest `{other}` creates it but is not in this run: select it too (`--tags`), or apply it first"
            ),
            None => format!(
                "set `createNamespace: true` on manifest `{}` (with `namespace: {}`), or add the Namespace to a manifest it depends on",
                self.manifest, self.namespace
            ),
        })
    }
}

/// Whether `rendered` holds the Namespace `name`.
pub fn renders(rendered: &Rendered, name: &str) -> bool {
    rendered.objects.iter().any(|object| {
        ObjectRef::of(&object.value)
            .is_some_and(|o| o.group.is_empty() && o.kind == "Namespace" && o.name == name)
    })
}

/// The namespaces the run provides: rendered as Namespaces, or created by
/// `createNamespace`.
pub fn provided<'a>(
    run: impl IntoIterator<Item = (&'a Manifest, &'a Rendered)>,
) -> HashSet<String> {
    let mut found = HashSet::new();
    for (manifest, rendered) in run {
        if manifest.create_namespace
            && let Some(namespace) = &manifest.namespace
        {
            found.insert(namespace.clone());
        }
        for object in &rendered.objects {
            if let Some(o) = ObjectRef::of(&object.value)
                && o.group.is_empty()
                && o.kind == "Namespace"
            {
                found.insert(o.name);
            }
        }
    }
    found
}

/// Every namespace the run writes into that does not exist and that no
/// manifest of the run provides, with the first manifest and object that
/// need it. `file` is every manifest of the file, to name one outside the
/// run that would create it. One list of namespaces, and only when some
/// namespace is not provided.
pub async fn missing(
    cluster: &Cluster,
    run: &[(&Manifest, &Rendered)],
    file: &[Manifest],
) -> Result<Vec<Missing>, kube::Error> {
    let provided = provided(run.iter().copied());
    let mut needed: BTreeMap<String, (String, String)> = BTreeMap::new();
    for (manifest, rendered) in run {
        for object in &rendered.objects {
            let Some(reference) = ObjectRef::of(&object.value) else {
                continue;
            };
            let namespaced = cluster.resolve(&reference).map(|r| r.namespaced);
            let Some(true) = namespaced else {
                continue;
            };
            let namespace = reference
                .namespace
                .clone()
                .or_else(|| manifest.namespace.clone())
                .unwrap_or_else(|| "default".to_owned());
            if !provided.contains(&namespace) {
                needed
                    .entry(namespace)
                    .or_insert_with(|| (manifest.name.clone(), reference.to_string()));
            }
        }
    }
    if needed.is_empty() {
        return Ok(Vec::new());
    }
    let api: Api<Namespace> = Api::all(cluster.client().clone());
    let live: HashSet<String> = api
        .list_metadata(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    Ok(needed
        .into_iter()
        .filter(|(namespace, _)| !live.contains(namespace))
        .map(|(namespace, (manifest, object))| {
            let elsewhere = file
                .iter()
                .find(|m| m.create_namespace && m.namespace.as_deref() == Some(namespace.as_str()))
                .map(|m| m.name.clone());
            Missing {
                namespace,
                manifest,
                object,
                elsewhere,
            }
        })
        .collect())
}

/// Create the namespace `name` if it does not exist (helm's
/// `--create-namespace`). It is not recorded as any manifest's, so neither
/// prune nor destroy deletes it.
pub async fn ensure(
    cluster: &Cluster,
    name: &str,
    manager: &crate::objects::FieldManager,
) -> Result<bool, kube::Error> {
    let api: Api<Namespace> = Api::all(cluster.client().clone());
    if api.get_metadata_opt(name).await?.is_some() {
        return Ok(false);
    }
    let namespace = Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(
                [(
                    "app.kubernetes.io/created-by".to_owned(),
                    "tazuna".to_owned(),
                )]
                .into(),
            ),
            ..Default::default()
        },
        ..Default::default()
    };
    let params = PostParams {
        field_manager: Some(manager.name().to_owned()),
        ..PostParams::default()
    };
    match api.create(&params, &namespace).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(error) => Err(error),
    }
}
