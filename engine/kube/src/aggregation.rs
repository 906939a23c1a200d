//! The aggregation verdict: a ClusterRole a third-party plugin renders that
//! an aggregated ClusterRole on the cluster selects.
//!
//! The API server's aggregation controller copies the rules of every
//! ClusterRole that an aggregated role's `clusterRoleSelectors` match into
//! that role. The emit verdict keeps a plugin's ClusterRole (granted by
//! kind) to a few label families ([`tazuna_core::emit`]), but what a
//! cluster's own aggregated roles select is only known on the cluster: one
//! may select `app.kubernetes.io/part-of: monitoring`. So before any write,
//! `plan` and `apply` read the aggregated ClusterRoles once (and take those
//! the run itself renders) and refuse a plugin's ClusterRole that one of
//! them selects, unless its name is granted. An aggregated role someone
//! makes later selects what its maker chose; that is their grant.
//!
//! [`selects`] matches one selector, with no I/O; [`check`] reads the
//! cluster and asks it.

use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::Api;
use kube::api::ListParams;
use serde_json::{Map, Value};
use tazuna_core::config::Manifest;
use tazuna_core::render::Rendered;

use crate::cluster::Cluster;
use crate::ownership::OwnershipError;

/// Whether the label selector `selector` (as the API returns it) matches
/// `labels`. An empty selector matches every ClusterRole, as the
/// aggregation controller reads it; a selector this code cannot read
/// (an unknown operator) is taken to match.
pub fn selects(selector: &Value, labels: &Map<String, Value>) -> bool {
    let label = |key: &str| labels.get(key).and_then(Value::as_str);
    let match_labels = selector["matchLabels"].as_object();
    let labels_match = match_labels
        .into_iter()
        .flatten()
        .all(|(key, value)| label(key) == value.as_str());
    let expressions = selector["matchExpressions"].as_array();
    let expressions_match = expressions.into_iter().flatten().all(|expression| {
        let key = expression["key"].as_str().unwrap_or_default();
        let values: Vec<&str> = expression["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        match expression["operator"].as_str() {
            Some("In") => label(key).is_some_and(|v| values.contains(&v)),
            Some("NotIn") => label(key).is_none_or(|v| !values.contains(&v)),
            Some("Exists") => label(key).is_some(),
            Some("DoesNotExist") => label(key).is_none(),
            _ => true,
        }
    });
    labels_match && expressions_match
}

/// Each ClusterRole a third-party plugin of `run` renders, without a grant
/// naming it, that an aggregated ClusterRole on `cluster` selects. The
/// aggregated roles are read only when such a ClusterRole is rendered.
pub async fn check(cluster: &Cluster, run: &[(&Manifest, &Rendered)]) -> Vec<OwnershipError> {
    let roles: Vec<(&Manifest, &Rendered, &str, Map<String, Value>)> = run
        .iter()
        .filter_map(|(manifest, rendered)| Some((manifest, rendered, rendered.scope.as_ref()?)))
        .flat_map(|(manifest, rendered, scope)| {
            rendered.objects.iter().filter_map(move |object| {
                let value = &object.value;
                let role = value["apiVersion"] == "rbac.authorization.k8s.io/v1"
                    && value["kind"] == "ClusterRole";
                let name = value["metadata"]["name"].as_str()?;
                (role && !scope.names("ClusterRole", name)).then(|| {
                    let labels = value["metadata"]["labels"]
                        .as_object()
                        .cloned()
                        .unwrap_or_default();
                    (*manifest, *rendered, name, labels)
                })
            })
        })
        .collect();
    if roles.is_empty() {
        return Vec::new();
    }
    let api: Api<ClusterRole> = Api::all(cluster.client().clone());
    // Unreadable: the write itself needs the same rights, and will say.
    let existing = api
        .list(&ListParams::default())
        .await
        .map(|list| list.items)
        .unwrap_or_default();
    let mut aggregates: Vec<(String, Vec<Value>)> = existing
        .into_iter()
        .filter_map(|role| {
            let name = role.metadata.name?;
            let selectors = role.aggregation_rule?.cluster_role_selectors?;
            let selectors = selectors
                .into_iter()
                .filter_map(|s| serde_json::to_value(s).ok())
                .collect();
            Some((name, selectors))
        })
        .collect();
    // And those this run creates, by any manifest (the user's own too): an
    // aggregate and the role it selects may come in one apply.
    aggregates.extend(run.iter().flat_map(|(_, rendered)| {
        rendered.objects.iter().filter_map(|object| {
            let value = &object.value;
            let role = value["apiVersion"] == "rbac.authorization.k8s.io/v1"
                && value["kind"] == "ClusterRole";
            let selectors = value["aggregationRule"]["clusterRoleSelectors"].as_array()?;
            role.then(|| {
                (
                    value["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    selectors.clone(),
                )
            })
        })
    }));
    roles
        .into_iter()
        .filter_map(|(manifest, rendered, role, labels)| {
            let (aggregate, _) = aggregates.iter().find(|(aggregate, selectors)| {
                aggregate != role && selectors.iter().any(|s| selects(s, &labels))
            })?;
            Some(OwnershipError::Aggregated {
                manifest: manifest.name.clone(),
                plugin: rendered.plugin.clone(),
                role: role.to_owned(),
                aggregate: aggregate.clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn labels(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn match_labels_select_a_role_that_carries_them_all() {
        let selector = json!({"matchLabels": {"app.kubernetes.io/part-of": "monitoring"}});
        assert!(selects(
            &selector,
            &labels(json!({"app.kubernetes.io/part-of": "monitoring", "x": "y"}))
        ));
        assert!(!selects(
            &selector,
            &labels(json!({"app.kubernetes.io/part-of": "other"}))
        ));
        assert!(!selects(&selector, &Map::new()));
    }

    #[test]
    fn an_empty_selector_selects_every_role() {
        assert!(selects(&json!({}), &Map::new()));
    }

    #[test]
    fn expressions_select_by_operator_and_an_unknown_one_counts_as_selecting() {
        let role = labels(json!({"tier": "ops"}));
        for (operator, values, selected) in [
            ("In", json!(["ops", "dev"]), true),
            ("In", json!(["dev"]), false),
            ("NotIn", json!(["dev"]), true),
            ("NotIn", json!(["ops"]), false),
            ("Exists", json!([]), true),
            ("DoesNotExist", json!([]), false),
            ("Gt", json!(["1"]), true),
        ] {
            let selector = json!({"matchExpressions": [{"key": "tier", "operator": operator, "values": values}]});
            assert_eq!(selects(&selector, &role), selected, "{operator} {values}");
        }
        let absent = json!({"matchExpressions": [{"key": "other", "operator": "DoesNotExist"}]});
        assert!(selects(&absent, &role));
    }
}
