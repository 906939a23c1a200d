//! What plan says of objects others wrote too: who wrote an object it takes
//! over, and who else owns fields of one it changes.

use serde_json::Value;
use tazuna_core::inventory::ObjectRef;

use crate::objects::{FieldManager, LEGACY_FIELD_MANAGER};
use crate::prune;

/// What plan says of an object it takes over: who wrote it so far, and
/// whether prune and destroy will delete it (the prune verdict's rule for
/// adopted objects, [`prune::deployed`]).
pub(super) fn adopt_note(
    object: &ObjectRef,
    live: Option<&Value>,
    manager: &FieldManager,
) -> String {
    let mut managers: Vec<String> = live
        .and_then(|l| l.pointer("/metadata/managedFields"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| f.get("manager").and_then(Value::as_str))
        .map(|m| format!("`{m}`"))
        .collect();
    managers.sort();
    managers.dedup();
    let writers = live
        .map(|l| prune::writers(l, manager.name()))
        .unwrap_or_default();
    let kept = if live.is_some_and(|l| prune::kept_by_control_plane(object, l)) {
        "; the control plane needs it, so prune and destroy will keep it"
    } else if prune::unread(
        object,
        prune::Recorded {
            adopted_from: &writers,
            handed_over: None,
        },
    ) == prune::Verdict::Adopted
    {
        "; not only tools that deploy from files wrote it, so prune and destroy will keep it"
    } else {
        ""
    };
    if managers.is_empty() {
        format!("exists, and no stack applied it: taken over{kept}")
    } else {
        format!(
            "exists, and no stack applied it: taken over from {}{kept}",
            managers.join(", ")
        )
    }
}

/// Managers other than Tazuna that own fields of `live`: after a hand-over
/// (Argo CD, Flux), plan says who else writes the object.
pub(super) fn other_managers(live: Option<&Value>, manager: &FieldManager) -> Option<String> {
    let managed = live?.pointer("/metadata/managedFields")?.as_array()?;
    let mut others: Vec<String> = managed
        .iter()
        .filter_map(|f| f.get("manager").and_then(Value::as_str))
        .filter(|m| {
            *m != manager.name()
                && *m != LEGACY_FIELD_MANAGER
                && !m.starts_with("kube-")
                && *m != "kwok"
        })
        .map(|m| format!("`{m}`"))
        .collect();
    others.sort();
    others.dedup();
    if others.is_empty() {
        None
    } else {
        Some(format!("fields are also owned by {}", others.join(", ")))
    }
}
