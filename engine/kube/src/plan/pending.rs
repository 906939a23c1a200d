//! `state diff`: the file against state alone, without a request.

use std::collections::{BTreeMap, HashSet};

use serde_json::Value;
use tazuna_core::inventory::{self, ObjectRef};
use tazuna_core::policy::{self, Decision, Why};

use super::{
    Change, ChangeKind, Handed, Intent, Report, hooks_left_out, prune_change, recorded, retried,
    unread,
};
use crate::cluster::Resolved;
use crate::objects::prepare_object;
use crate::ownership::Ownership;
use crate::state::Stored;

/// The file against state: objects rendered now that state does not hold
/// (create), whose content hash differs from the one recorded (update), and
/// state entries no longer rendered (delete). `resolve` is discovery, which
/// tells namespaced kinds apart; no request is made.
pub fn pending(
    resolve: impl Fn(&ObjectRef) -> Option<Resolved>,
    states: &BTreeMap<String, Stored>,
    intents: &[Intent<'_>],
    all_names: &HashSet<String>,
    ownership: &Ownership,
    hash_key: Option<&[u8]>,
) -> Report {
    let key = hash_key.unwrap_or(b"");
    let mut report = Report::default();
    for intent in intents {
        let name = &intent.manifest.name;
        let prior = recorded(states, name);
        let values: Vec<&Value> = intent.rendered.objects.iter().map(|o| &o.value).collect();
        let left_out = hooks_left_out(&values, prior.is_empty());
        let mut seen = HashSet::new();
        for index in inventory::apply_order(&values) {
            let mut value = values[index].clone();
            let Some(object) = ObjectRef::of(&value) else {
                continue;
            };
            if left_out.contains(&index) {
                if let Some(resolved) = resolve(&object) {
                    prepare_object(&mut value, &resolved, intent.manifest);
                    seen.extend(ObjectRef::of(&value));
                }
                continue;
            }
            let Some(resolved) = resolve(&object) else {
                // The kind is not served yet, so its scope is unknown: it
                // cannot have been applied in this form.
                report.changes.push(Change {
                    manifest: name.clone(),
                    object: object.to_string(),
                    change: ChangeKind::Create,
                    diff: None,
                    note: Some(format!(
                        "not applied yet; kind `{}` is not served by the cluster",
                        object.kind
                    )),
                });
                continue;
            };
            prepare_object(&mut value, &resolved, intent.manifest);
            let object = ObjectRef::of(&value).expect("identity checked");
            let hash = inventory::content_hash(&value, key);
            // Recorded, so applied: create-only or handed over, apply leaves
            // it (an unknown policy is plan's and apply's to refuse).
            if let Some(entry) = prior.get(&object)
                && let Ok(Decision::CreateOnly(why)) = policy::decide(
                    &value,
                    intent.manifest.handover.as_ref(),
                    entry.handover.as_ref(),
                )
            {
                report.unchanged += 1;
                if let Why::HandedOver(handover) = why {
                    report.handed_over.push(Handed {
                        manifest: name.clone(),
                        object: object.to_string(),
                        handover,
                    });
                }
                seen.insert(object);
                continue;
            }
            let retry = retried(states, name, prior.get(&object).copied());
            let change = match prior.get(&object) {
                // Go Tazuna's classes lead each note: added, modified, removed.
                None => Some((ChangeKind::Create, "added: not applied yet")),
                Some(_) if retry.is_some() => Some((ChangeKind::Update, retry.unwrap_or_default())),
                Some(entry) if entry.hash != hash => Some((
                    ChangeKind::Update,
                    "modified: changed in the file since the last apply",
                )),
                Some(_) => None,
            };
            match change {
                Some((change, note)) => report.changes.push(Change {
                    manifest: name.clone(),
                    object: object.to_string(),
                    change,
                    diff: None,
                    note: Some(note.into()),
                }),
                None => report.unchanged += 1,
            }
            seen.insert(object);
        }
        let recorded = states.get(name).map(|s| s.state.objects.as_slice());
        for entry in recorded.unwrap_or_default() {
            let object = entry.object();
            if !seen.contains(&object) && ownership.kept_by(&object.key(), name).is_none() {
                report.changes.push(prune_change(
                    name,
                    &object,
                    "removed: no longer rendered",
                    intent.manifest.prune,
                    unread(entry),
                ));
            }
        }
    }
    removed_manifests(states, all_names, ownership, &mut report);
    report
}

/// Every object of the stack's manifests that are in state but no longer
/// in the file, unless another manifest keeps it, judged from state alone
/// (`state diff`).
fn removed_manifests(
    states: &BTreeMap<String, Stored>,
    all_names: &HashSet<String>,
    ownership: &Ownership,
    report: &mut Report,
) {
    for (name, stored) in states {
        if all_names.contains(name) {
            continue;
        }
        for entry in &stored.state.objects {
            let object = entry.object();
            if ownership.kept_by(&object.key(), name).is_some() {
                continue;
            }
            report.changes.push(prune_change(
                name,
                &object,
                "removed: its manifest was removed from the file",
                false,
                unread(entry),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use kube::discovery::ApiResource;
    use serde_json::json;
    use tazuna_core::config::{Location, Wait};

    use super::*;
    use crate::state::{Entry, ManifestState, PluginRecord};
    use tazuna_core::config::Manifest;
    use tazuna_core::render::Rendered;

    fn manifest(name: &str) -> Manifest {
        Manifest {
            name: name.to_owned(),
            description: None,
            kind: "manifests".to_owned(),
            path: None,
            tags: Vec::new(),
            depends_on: Vec::new(),
            namespace: Some("apps".to_owned()),
            wait: Wait::default(),
            prune: false,
            create_namespace: false,
            adopt: Vec::new(),
            handover: None,
            parallel: None,
            tests: Vec::new(),
            config: json!({}),
            base_dir: PathBuf::from("."),
            origin: Location {
                file: PathBuf::from("tazuna.yaml"),
                line: 1,
                column: 1,
            },
        }
    }

    fn configmap(name: &str, value: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name}, "data": {"key": value}})
    }

    fn rendered(manifest: &str, objects: Vec<Value>) -> Rendered {
        Rendered::of(manifest, "manifests", objects)
    }

    /// Only ConfigMaps are served, as on a cluster without CRDs.
    fn resolve(object: &ObjectRef) -> Option<Resolved> {
        (object.kind == "ConfigMap").then(|| Resolved {
            resource: ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
            namespaced: true,
        })
    }

    /// State as `apply` would have written it for `objects` of `manifest`.
    fn applied(manifest: &Manifest, objects: &[Value]) -> Stored {
        let entries = objects
            .iter()
            .map(|o| {
                let mut value = o.clone();
                prepare_object(
                    &mut value,
                    &resolve(&ObjectRef::of(o).unwrap()).unwrap(),
                    manifest,
                );
                let object = ObjectRef::of(&value).unwrap();
                Entry::new(&object, inventory::content_hash(&value, b""), None)
            })
            .collect();
        Stored {
            state: ManifestState {
                manifest: manifest.name.clone(),
                depends_on: Vec::new(),
                position: 0,
                plugin: PluginRecord::default(),
                tazuna_version: "0.1.0".into(),
                git_commit: None,
                applied_at: "2026-11-30T00:00:00Z".into(),
                cluster: "uid".into(),
                stack: None,
                origin: None,
                incomplete: false,
                objects: entries,
            },
            resource_version: Some("1".into()),
            legacy: None,
        }
    }

    fn summary(report: &Report) -> Vec<(String, ChangeKind)> {
        report
            .changes
            .iter()
            .map(|c| (c.object.clone(), c.change))
            .collect()
    }

    #[test]
    fn pending_reports_created_changed_and_no_longer_rendered_objects() {
        let app = manifest("app");
        let before = [
            configmap("same", "a"),
            configmap("edited", "a"),
            configmap("gone", "a"),
        ];
        let states = BTreeMap::from([("app".to_owned(), applied(&app, &before))]);
        let now = rendered(
            "app",
            vec![
                configmap("same", "a"),
                configmap("edited", "b"),
                configmap("new", "a"),
            ],
        );
        let intents = [Intent {
            manifest: &app,
            rendered: &now,
        }];
        let names = HashSet::from(["app".to_owned()]);

        let report = pending(
            resolve,
            &states,
            &intents,
            &names,
            &Ownership::default(),
            None,
        );

        assert_eq!(
            summary(&report),
            [
                ("v1 ConfigMap apps/edited".to_owned(), ChangeKind::Update),
                ("v1 ConfigMap apps/new".to_owned(), ChangeKind::Create),
                ("v1 ConfigMap apps/gone".to_owned(), ChangeKind::Delete),
            ]
        );
        assert_eq!(report.unchanged, 1);
        assert_eq!(report.requests, 0);
    }

    #[test]
    fn pending_is_empty_when_the_file_renders_what_was_applied() {
        let app = manifest("app");
        let objects = vec![configmap("one", "a"), configmap("two", "b")];
        let states = BTreeMap::from([("app".to_owned(), applied(&app, &objects))]);
        let now = rendered("app", objects);
        let intents = [Intent {
            manifest: &app,
            rendered: &now,
        }];

        let report = pending(
            resolve,
            &states,
            &intents,
            &HashSet::from(["app".to_owned()]),
            &Ownership::default(),
            None,
        );

        assert!(report.changes.is_empty(), "{:?}", report.changes);
        assert_eq!(report.unchanged, 2);
    }

    #[test]
    fn pending_lists_every_object_of_a_removed_manifest_and_unserved_kinds() {
        let old = manifest("old");
        let app = manifest("app");
        let states = BTreeMap::from([("old".to_owned(), applied(&old, &[configmap("left", "a")]))]);
        let custom = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                            "metadata": {"name": "w"}});
        let now = rendered("app", vec![custom]);
        let intents = [Intent {
            manifest: &app,
            rendered: &now,
        }];

        let report = pending(
            resolve,
            &states,
            &intents,
            &HashSet::from(["app".to_owned()]),
            &Ownership::default(),
            None,
        );

        assert_eq!(
            summary(&report),
            [
                ("example.com/v1 Widget w".to_owned(), ChangeKind::Create),
                ("v1 ConfigMap apps/left".to_owned(), ChangeKind::Delete),
            ]
        );
        assert!(
            report.changes[0]
                .note
                .as_deref()
                .unwrap()
                .contains("`Widget` is not served")
        );
        assert!(
            report.changes[1]
                .note
                .as_deref()
                .unwrap()
                .contains("removed from the file")
        );
    }
}
