//! Generated fields keep their live values: a field that came out
//! differently in two renders of identical inputs (a random password, a
//! generated certificate; see [`tazuna_core::generated`]) is given the value
//! the live object has, as a chart's own `lookup` guard would under
//! `helm upgrade`. Only the objects with such fields are read, one GET each,
//! and nothing is written.

use serde_json::Value;
use tazuna_core::config::Manifest;
use tazuna_core::generated::Step;
use tazuna_core::inventory::ObjectRef;
use tazuna_core::render::Rendered;

use crate::cluster::Cluster;
use crate::objects::api_for;

/// Give the generated fields of `rendered` (of `manifest`) the values of
/// their live objects; returns how many fields kept a live value.
pub async fn keep_live(
    cluster: &Cluster,
    manifest: &Manifest,
    rendered: &mut Rendered,
) -> Result<usize, kube::Error> {
    let mut kept = 0;
    for object in &mut rendered.objects {
        if object.generated.is_empty() {
            continue;
        }
        let Some(mut reference) = ObjectRef::of(&object.value) else {
            continue;
        };
        let Some(resolved) = cluster.resolve(&reference) else {
            continue;
        };
        if resolved.namespaced && reference.namespace.is_none() {
            reference.namespace = Some(
                manifest
                    .namespace
                    .clone()
                    .unwrap_or_else(|| "default".into()),
            );
        }
        if !resolved.namespaced {
            reference.namespace = None;
        }
        let api = api_for(cluster.client(), &resolved, reference.namespace.as_deref());
        let Some(live) = api.get_opt(&reference.name).await? else {
            continue;
        };
        let live = serde_json::to_value(live).unwrap_or(Value::Null);
        // Live Secrets hold `data` only; so does what an apply sends.
        if reference.is_secret() {
            crate::objects::string_data_to_data(&mut object.value);
            for field in &mut object.generated {
                if let [Step::Key(first), ..] = field.0.as_mut_slice()
                    && first == "stringData"
                {
                    *first = "data".to_owned();
                }
            }
        }
        for field in &object.generated {
            if let Some(value) = field.get(&live).cloned()
                && field.set(&mut object.value, value)
            {
                kept += 1;
            }
        }
    }
    Ok(kept)
}
