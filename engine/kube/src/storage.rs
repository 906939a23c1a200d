//! The storage verdict: a claim a third-party plugin renders that names a
//! StorageClass nothing on the cluster or in the run provisions (none of
//! that name, or one of `kubernetes.io/no-provisioner`).
//!
//! Such a class provisions nothing, so only a PersistentVolume someone left
//! with that class (the usual way to offer static volumes: `manual`) can bind
//! the claim, with that someone's data. The emit verdict refuses the spellings
//! it can see in the object (`volumeName`, a selector, the empty class); which
//! classes exist is only known on the cluster, so `plan` and `apply` read the
//! StorageClasses before any write, once, and only when a plugin's claim
//! names a class. A claim that names no class takes the cluster's default.
//!
//! [`claim_classes`] finds the classes an object's claims name, with no I/O;
//! [`check`] reads the cluster and asks it.

use std::collections::HashSet;

use k8s_openapi::api::storage::v1::StorageClass;
use kube::Api;
use kube::api::ListParams;
use serde_json::Value;
use tazuna_core::config::Manifest;
use tazuna_core::render::Rendered;

use crate::cluster::Cluster;
use crate::ownership::OwnershipError;

/// The StorageClasses the claims of `object` name: a claim's own, a
/// StatefulSet's claim templates, and the ephemeral volumes of the Pods it
/// makes (its own spec, a template, a CronJob's job template).
pub fn claim_classes(object: &Value) -> Vec<&str> {
    let spec = &object["spec"];
    let mut claims: Vec<&Value> = Vec::new();
    if object["apiVersion"] == "v1" && object["kind"] == "PersistentVolumeClaim" {
        claims.push(spec);
    }
    claims.extend(
        spec["volumeClaimTemplates"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|template| &template["spec"]),
    );
    for pod in [
        spec,
        &spec["template"]["spec"],
        &spec["jobTemplate"]["spec"]["template"]["spec"],
    ] {
        claims.extend(
            pod["volumes"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|volume| &volume["ephemeral"]["volumeClaimTemplate"]["spec"]),
        );
    }
    claims
        .into_iter()
        .filter_map(|claim| claim["storageClassName"].as_str())
        .filter(|class| !class.is_empty())
        .collect()
}

/// Whether a class of `provisioner` makes volumes: not the placeholder that
/// static volumes (`local`, `manual`) are offered under.
fn provisions(provisioner: &str) -> bool {
    provisioner != "kubernetes.io/no-provisioner"
}

/// Each claim a third-party plugin of `run` renders, without a grant naming
/// its object, whose class nothing on `cluster` or in the run provisions.
pub async fn check(cluster: &Cluster, run: &[(&Manifest, &Rendered)]) -> Vec<OwnershipError> {
    let mut asked = Vec::new();
    for (manifest, rendered) in run {
        let Some(scope) = rendered.scope.as_ref() else {
            continue;
        };
        for object in &rendered.objects {
            let value = &object.value;
            let kind = value["kind"].as_str().unwrap_or_default();
            let name = value["metadata"]["name"].as_str().unwrap_or_default();
            if scope.names(kind, name) {
                continue;
            }
            for class in claim_classes(value) {
                asked.push((*manifest, *rendered, kind, name, class));
            }
        }
    }
    if asked.is_empty() {
        return Vec::new();
    }
    let mut classes: HashSet<String> = run
        .iter()
        .flat_map(|(_, rendered)| &rendered.objects)
        .filter(|o| {
            o.value["kind"] == "StorageClass" && o.value["apiVersion"] == "storage.k8s.io/v1"
        })
        .filter(|o| o.value["provisioner"].as_str().is_some_and(provisions))
        .filter_map(|o| o.value["metadata"]["name"].as_str().map(str::to_owned))
        .collect();
    let api: Api<StorageClass> = Api::all(cluster.client().clone());
    // Unreadable: the claim's class cannot be told; the write will say
    // what the user may not do.
    let Ok(existing) = api.list(&ListParams::default()).await else {
        return Vec::new();
    };
    classes.extend(
        existing
            .items
            .into_iter()
            .filter(|c| provisions(&c.provisioner))
            .filter_map(|c| c.metadata.name),
    );
    asked
        .into_iter()
        .filter(|(.., class)| !classes.contains(*class))
        .map(
            |(manifest, rendered, kind, name, class)| OwnershipError::UnprovisionedClass {
                manifest: manifest.name.clone(),
                plugin: rendered.plugin.clone(),
                kind: kind.to_owned(),
                name: name.to_owned(),
                class: class.to_owned(),
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_classes_of_claims_templates_and_ephemeral_volumes_are_found() {
        let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "spec": {"storageClassName": "manual"}});
        assert_eq!(claim_classes(&claim), ["manual"]);
        let set = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": {
            "volumeClaimTemplates": [{"spec": {"storageClassName": "a"}}, {"spec": {}}],
            "template": {"spec": {"volumes": [{"ephemeral": {"volumeClaimTemplate": {"spec": {"storageClassName": "b"}}}}]}}
        }});
        assert_eq!(claim_classes(&set), ["a", "b"]);
        let cron = json!({"apiVersion": "batch/v1", "kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"spec": {
            "volumes": [{"ephemeral": {"volumeClaimTemplate": {"spec": {"storageClassName": "c"}}}}]
        }}}}}});
        assert_eq!(claim_classes(&cron), ["c"]);
        // No class (the default) and the empty class (refused by the emit
        // verdict) are not asked about here.
        let default = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "spec": {"storageClassName": ""}});
        assert!(claim_classes(&default).is_empty());
        let other = json!({"apiVersion": "evil.example.com/v1", "kind": "PersistentVolumeClaim", "spec": {"storageClassName": "x"}});
        assert!(claim_classes(&other).is_empty());
    }
}
