//! What the API server's refusals mean: error classification every verb
//! shares, so that apply, plan and prune tell conflicts, immutable fields,
//! unknown fields and hand edits apart the same way.

use serde_json::Value;

/// What to do about a field the API server's schema does not have.
pub const UNKNOWN_FIELD_HINT: &str = "the API server's schema for this kind has no such field; check its spelling, its indentation and the apiVersion";

/// What the API server said, without kube-rs's wrapping.
pub fn status_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => status.message.clone(),
        other => other.to_string(),
    }
}

/// Whether the API server refused a change to a field that cannot change
/// (its wording differs by field: Job templates, Service cluster IPs, ...).
pub fn is_immutable(message: &str) -> bool {
    message.contains("immutable") || message.contains("may not change once set")
}

/// Whether server-side apply refused a field the kind's schema does not have
/// (the same wording for built-in kinds and custom resources).
pub fn is_unknown_field(message: &str) -> bool {
    message.contains("field not declared in schema")
}

/// The field managers named in a server-side apply conflict, in backticks,
/// when each of them changed its fields by an update (`kubectl edit`,
/// `kubectl patch`, a client-side apply), not by an apply of its own: such
/// changes are drift from what Tazuna applied. `None` when any of them is
/// another applier (Argo CD or Flux applying server-side), whose fields
/// stay a conflict.
pub fn hand_edits(conflict: &str, live: Option<&Value>) -> Option<Vec<String>> {
    let managed = live?.pointer("/metadata/managedFields")?.as_array()?;
    let names = conflicting_managers(conflict);
    if names.is_empty() {
        return None;
    }
    let by_update = |name: &str| {
        let entries: Vec<&Value> = managed
            .iter()
            .filter(|f| f.get("manager").and_then(Value::as_str) == Some(name))
            .collect();
        !entries.is_empty()
            && entries
                .iter()
                .all(|f| f.get("operation").and_then(Value::as_str) == Some("Update"))
    };
    names
        .iter()
        .all(|name| by_update(name))
        .then(|| names.iter().map(|n| format!("`{n}`")).collect())
}

/// The field managers a server-side apply conflict names, sorted, each once.
pub fn conflicting_managers(conflict: &str) -> Vec<&str> {
    // One manager: `conflict with "m": .f`; several fields or managers:
    // `conflicts with "m" using v1:\n- .f`.
    let mut names: Vec<&str> = conflict
        .match_indices("with \"")
        .filter(|(at, _)| {
            let before = &conflict[..*at];
            before.ends_with("conflict ") || before.ends_with("conflicts ")
        })
        .filter_map(|(at, with)| conflict[at + with.len()..].split('"').next())
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// What to do about a conflict with other appliers: each named, with the
/// tool it is when Tazuna knows it ([`crate::prune::DEPLOY_TOOLS`]), and
/// the ways out; never to force by default, since an applier that reconciles
/// takes the fields back and the two would fight.
pub fn conflict_hint(conflict: &str) -> String {
    let named: Vec<String> = conflicting_managers(conflict)
        .into_iter()
        .map(|name| {
            match crate::prune::DEPLOY_TOOLS
                .iter()
                .find(|(manager, _)| *manager == name)
            {
                Some((_, what)) => format!("`{name}` ({what})"),
                None => format!("`{name}`"),
            }
        })
        .collect();
    let who = if named.is_empty() {
        "another tool".to_owned()
    } else {
        named.join(", ")
    };
    format!(
        "{who} applies these fields too, so the two would take them from each other: leave them to it (drop them from this manifest, or hand the object over with `handover:`), or rerun with `--force-conflicts` to take them"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_are_told_apart_from_other_refusals() {
        // As kube-apiserver v1.37.2 words them (the Job's template shortened).
        let unknown_builtin = "failed to create typed patch object (default/typo; /v1, Kind=ConfigMap): .datta: field not declared in schema";
        let unknown_custom = "failed to create typed patch object (default/g; example.tazuna.dev/v1, Kind=Gadget): .spec.colour: field not declared in schema";
        let service = r#"The Service "web" is invalid: spec.clusterIPs[0]: Invalid value: ["10.96.0.10"]: may not change once set"#;
        let job = r#"The Job "migrate" is invalid: spec.template: Invalid value: {"labels":{}}: field is immutable"#;
        assert!(is_unknown_field(unknown_builtin));
        assert!(is_unknown_field(unknown_custom));
        assert!(!is_unknown_field(service));
        assert!(!is_unknown_field(job));
        assert!(is_immutable(service));
        assert!(is_immutable(job));
        assert!(!is_immutable(unknown_builtin));
    }

    #[test]
    fn a_conflict_hint_names_each_other_applier_and_the_tool_it_is() {
        // As kube-apiserver v1.37.2 words it.
        let message = "Apply failed with 3 conflicts: conflicts with \"kustomize-controller\" using v1:\n- .data.color\n- .data.size\nconflicts with \"my-operator\":\n- .data.x";
        assert_eq!(
            conflicting_managers(message),
            ["kustomize-controller", "my-operator"]
        );
        let hint = conflict_hint(message);
        assert!(
            hint.starts_with(
                "`kustomize-controller` (Flux applies a Kustomization's files), `my-operator` applies these fields too"
            ),
            "{hint}"
        );
        assert!(hint.contains("`handover:`") && hint.contains("`--force-conflicts`"));
    }
}
