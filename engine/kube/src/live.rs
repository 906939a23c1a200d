//! Live objects read a kind and a namespace at a time.
//!
//! `apply` (to skip unchanged objects), `plan`, `state drift` and `status` all
//! need the live form of many objects. [`LiveIndex`] answers each of them from
//! one list call per kind and namespace, made the first time that pair is
//! asked about, never one GET per object.

use std::collections::HashMap;

use kube::api::ListParams;
use serde_json::Value;
use tazuna_core::inventory::ObjectRef;

use crate::cluster::{Cluster, Resolved};
use crate::objects::api_for;

/// Live objects by kind and namespace, listed on first use.
pub struct LiveIndex<'a> {
    cluster: &'a Cluster,
    metadata_only: bool,
    lists: HashMap<(String, Option<String>), HashMap<String, Value>>,
}

impl std::fmt::Debug for LiveIndex<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveIndex")
            .field("lists", &self.lists.len())
            .finish()
    }
}

impl<'a> LiveIndex<'a> {
    /// An empty index of whole objects on `cluster`.
    pub fn new(cluster: &'a Cluster) -> Self {
        Self {
            cluster,
            metadata_only: false,
            lists: HashMap::new(),
        }
    }

    /// An empty index of object metadata only: names, annotations and the
    /// fields Tazuna owns. Much less to transfer and keep when the status and
    /// the content are not needed.
    pub fn metadata(cluster: &'a Cluster) -> Self {
        Self {
            metadata_only: true,
            ..Self::new(cluster)
        }
    }

    /// The live form of `object` (with `apiVersion` and `kind` filled in),
    /// or `None` when it does not exist.
    pub async fn get(
        &mut self,
        object: &ObjectRef,
        resolved: &Resolved,
    ) -> Result<Option<&Value>, kube::Error> {
        let key = key(object, resolved);
        if !self.lists.contains_key(&key) {
            let listed = list(self.cluster, self.metadata_only, object, resolved).await?;
            self.lists.insert(key.clone(), listed);
        }
        Ok(self.lists[&key].get(&object.name))
    }

    /// List every kind and namespace of `objects` not listed yet, each list
    /// holding one of `seats`, so that [`Self::get`] then asks the server
    /// nothing: a phase of many kinds waits for one round of lists rather
    /// than one list after another. A list that fails is left for `get`,
    /// which reports it against the object that asked.
    pub async fn prefetch<'o>(
        &mut self,
        objects: impl IntoIterator<Item = (&'o ObjectRef, &'o Resolved)>,
        seats: &tokio::sync::Semaphore,
    ) {
        let mut wanted: HashMap<(String, Option<String>), (&ObjectRef, &Resolved)> = HashMap::new();
        for (object, resolved) in objects {
            let key = key(object, resolved);
            if !self.lists.contains_key(&key) {
                wanted.entry(key).or_insert((object, resolved));
            }
        }
        if wanted.len() < 2 {
            return;
        }
        let (cluster, metadata_only) = (self.cluster, self.metadata_only);
        let mut lists = Vec::with_capacity(wanted.len());
        for (key, (object, resolved)) in wanted {
            lists.push(async move {
                let _seat = seats.acquire().await;
                (key, list(cluster, metadata_only, object, resolved).await)
            });
        }
        let listed = futures::future::join_all(lists).await;
        for (key, result) in listed {
            if let Ok(by_name) = result {
                self.lists.insert(key, by_name);
            }
        }
    }

    /// How many list calls were made.
    pub fn requests(&self) -> usize {
        self.lists.len()
    }
}

/// The list an object is found in: its resource and namespace.
fn key(object: &ObjectRef, resolved: &Resolved) -> (String, Option<String>) {
    (
        format!(
            "{}/{}",
            resolved.resource.api_version, resolved.resource.plural
        ),
        object.namespace.clone(),
    )
}

/// The objects of `object`'s kind in its namespace, by name (metadata only
/// when `metadata_only`), each with `apiVersion` and `kind` filled in.
async fn list(
    cluster: &Cluster,
    metadata_only: bool,
    object: &ObjectRef,
    resolved: &Resolved,
) -> Result<HashMap<String, Value>, kube::Error> {
    let api = api_for(cluster.client(), resolved, object.namespace.as_deref());
    let items: Vec<(Option<String>, Value)> = if metadata_only {
        let list = api.list_metadata(&ListParams::default()).await?;
        list.items
            .into_iter()
            .map(|i| (i.metadata.name.clone(), slim(i.metadata)))
            .collect()
    } else {
        let list = api.list(&ListParams::default()).await?;
        list.items
            .into_iter()
            .map(|i| {
                (
                    i.metadata.name.clone(),
                    serde_json::to_value(&i).unwrap_or(Value::Null),
                )
            })
            .collect()
    };
    let mut by_name = HashMap::with_capacity(items.len());
    for (name, mut value) in items {
        crate::objects::fill_type(&mut value, object);
        by_name.insert(name.unwrap_or_default(), value);
    }
    Ok(by_name)
}

/// What a metadata-only index keeps of an object: its name, annotations,
/// the managed-fields entries of Tazuna's field managers (every stack's, and
/// the legacy name), only the names, operations and subresources of the
/// other managers, in their order, and the bootstrap label (the takeover
/// verdict reads who made an object, `crate::takeover`). At 10,000 objects
/// the rest of the metadata would be most of the memory.
fn slim(metadata: kube::api::ObjectMeta) -> Value {
    let managed: Vec<Value> = metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .map(|f| {
            if f.manager.as_deref().is_some_and(crate::objects::is_tazunas) {
                serde_json::to_value(f).unwrap_or(Value::Null)
            } else {
                serde_json::json!({
                    "manager": f.manager,
                    "operation": f.operation,
                    "subresource": f.subresource,
                })
            }
        })
        .collect();
    let bootstrap = metadata
        .labels
        .unwrap_or_default()
        .remove(crate::objects::BOOTSTRAP_LABEL)
        .map(|value| serde_json::json!({ crate::objects::BOOTSTRAP_LABEL: value }));
    serde_json::json!({
        "metadata": {
            "name": metadata.name,
            "annotations": metadata.annotations,
            "labels": bootstrap,
            "managedFields": managed,
        }
    })
}

/// The live form of every object `states` record, by manifest, in record
/// order; objects that are gone or whose kind is no longer served are left
/// out. One list call per kind and namespace.
pub async fn recorded(
    cluster: &Cluster,
    states: &std::collections::BTreeMap<String, crate::state::Stored>,
) -> Result<Vec<(String, Value)>, kube::Error> {
    let mut live = LiveIndex::new(cluster);
    let mut objects = Vec::new();
    for stored in states.values() {
        for entry in &stored.state.objects {
            let object = entry.object();
            let Some(resolved) = cluster.resolve(&object) else {
                continue;
            };
            if let Some(current) = live.get(&object, &resolved).await? {
                objects.push((stored.state.manifest.clone(), current.clone()));
            }
        }
    }
    Ok(objects)
}
