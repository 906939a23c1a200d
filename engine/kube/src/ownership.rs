//! Who owns what: which state records belong to this stack, which manifest
//! of the run claims each rendered object, and whether an object a manifest
//! no longer renders may leave the cluster.
//!
//! Prune is decided by ownership, not by names. An object is a candidate for
//! deletion only when no manifest of this run renders it and no other
//! manifest of the stack still records it, so a renamed manifest, or an
//! object moved between manifests, keeps its object. Before any write, a run
//! refuses objects rendered twice, objects in Tazuna's own namespace, and
//! manifest names another stack owns.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;
use tazuna_core::hint::Hint;
use tazuna_core::inventory::{ObjectKey, ObjectRef};

use crate::state::{NAMESPACE, Stored};
use tazuna_core::emit::{Made, Needed};
use tazuna_core::render::Rendered;

/// Tazuna's state of one cluster, split by stack.
#[derive(Debug, Clone, Default)]
pub struct StackStates {
    /// This stack's records, by manifest name. State without a stack (Go
    /// Tazuna's, or from before stacks) is adopted when this stack declares
    /// the manifest.
    pub own: BTreeMap<String, Stored>,
    /// Every other stack's records, by manifest name.
    pub others: BTreeMap<String, Stored>,
    /// Records under this stack's name that a file in another repository
    /// applied (manifest, that repository): two files derived one name.
    pub collisions: Vec<(String, String)>,
}

/// What state records as the origin of a stack whose name a file sets with
/// `spec.stack`: a file that derives the same name is not that stack.
pub const NAMED_ORIGIN: &str = "spec.stack";

impl StackStates {
    /// Split `all` into the records of `stack` (which declares `declared`,
    /// from the repository `origin` when its name is derived) and the rest.
    /// A record under the same name from another repository is not ours: it
    /// is a collision ([`Self::collided`]).
    pub fn split(
        all: BTreeMap<String, Stored>,
        stack: &str,
        origin: Option<&str>,
        declared: &HashSet<&str>,
    ) -> Self {
        let mut split = Self::default();
        for (name, stored) in all {
            let ours = match stored.state.stack.as_deref() {
                Some(owner) => owner == stack,
                None => declared.contains(name.as_str()),
            };
            if let (true, Some(theirs), Some(origin)) =
                (ours, stored.state.origin.as_deref(), origin)
                && theirs != origin
            {
                split.collisions.push((name.clone(), theirs.to_owned()));
                split.others.insert(name, stored);
                continue;
            }
            if ours {
                split.own.insert(name, stored);
            } else {
                split.others.insert(name, stored);
            }
        }
        split
    }

    /// The first of `declared` that another stack owns, with that stack.
    pub fn taken<'a>(&self, declared: impl IntoIterator<Item = &'a str>) -> Vec<OwnershipError> {
        declared
            .into_iter()
            .filter_map(|name| {
                let stored = self.others.get(name)?;
                Some(OwnershipError::OwnedByOtherStack {
                    manifest: name.to_owned(),
                    stack: stored.state.stack.clone().unwrap_or_default(),
                })
            })
            .collect()
    }

    /// A stack name two files derived, or one a file named with
    /// `spec.stack` and another derived: refused, never merged.
    pub fn collided(&self, stack: &str, origin: Option<&str>) -> Vec<OwnershipError> {
        let Some((manifest, theirs)) = self.collisions.first() else {
            return Vec::new();
        };
        if theirs == NAMED_ORIGIN {
            return vec![OwnershipError::NamedElsewhere {
                stack: stack.to_owned(),
                manifest: manifest.clone(),
                ours: origin.unwrap_or_default().to_owned(),
            }];
        }
        vec![OwnershipError::SameNameElsewhere {
            stack: stack.to_owned(),
            manifest: manifest.clone(),
            theirs: theirs.clone(),
            ours: origin.unwrap_or_default().to_owned(),
        }]
    }

    /// The claim verdict: each object this run's `claims` give a manifest
    /// that another stack's state records, with that stack. A stack never
    /// takes over what another applied; once that stack forgets the object
    /// (`tazuna state forget`, or its destroy), it is free. Records without a
    /// stack (Go Tazuna's) are not a stack's claim.
    pub fn claimed(&self, claims: &Claims) -> Vec<OwnershipError> {
        let mut refused = Vec::new();
        for (theirs, stored) in &self.others {
            let Some(stack) = stored.state.stack.as_deref() else {
                continue;
            };
            for entry in &stored.state.objects {
                let object = entry.object();
                if let Some(manifest) = claims.owner(&object.key()) {
                    refused.push(OwnershipError::ClaimedByOtherStack {
                        object: object.clone(),
                        manifest: manifest.to_owned(),
                        stack: stack.to_owned(),
                        theirs: theirs.clone(),
                    });
                }
            }
        }
        refused.sort_by_key(|a| a.to_string());
        refused.dedup();
        refused
    }
}

/// Why a run refuses to start writing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OwnershipError {
    /// Another stack applied a manifest of this name to the cluster.
    #[error(
        "manifest `{manifest}` is owned by stack `{stack}` on this cluster; nothing was changed"
    )]
    OwnedByOtherStack {
        /// The manifest.
        manifest: String,
        /// The stack that owns it.
        stack: String,
    },
    /// Two manifests render the same object.
    #[error(
        "{object} is rendered by both manifest `{first}` and manifest `{second}`; nothing was changed"
    )]
    Duplicate {
        /// The object.
        object: ObjectRef,
        /// The first manifest that renders it.
        first: String,
        /// The other one.
        second: String,
    },
    /// A rendered object would land in Tazuna's own namespace.
    #[error(
        "manifest `{manifest}` renders {object} into namespace `{NAMESPACE}`, which is reserved for Tazuna's state; nothing was changed"
    )]
    Reserved {
        /// The object.
        object: ObjectRef,
        /// The manifest.
        manifest: String,
    },
    /// Two files in two repositories derive one stack name.
    #[error(
        "stack `{stack}` on this cluster was applied from `{theirs}` (manifest `{manifest}`), and this file is in `{ours}`: two files in two repositories derive one stack name; nothing was changed"
    )]
    SameNameElsewhere {
        /// The derived name.
        stack: String,
        /// A manifest the other file applied.
        manifest: String,
        /// The other file's repository.
        theirs: String,
        /// This file's repository.
        ours: String,
    },
    /// A file derives the name of a stack another file named with
    /// `spec.stack`.
    #[error(
        "stack `{stack}` on this cluster was applied by a file that sets `spec.stack: {stack}` (manifest `{manifest}`); this file does not set `spec.stack` and derives the same name in `{ours}`; nothing was changed"
    )]
    NamedElsewhere {
        /// The name.
        stack: String,
        /// A manifest the other file applied.
        manifest: String,
        /// This file's repository.
        ours: String,
    },
    /// A third-party plugin's ClusterRole that an aggregated ClusterRole on
    /// the cluster selects.
    #[error(
        "manifest `{manifest}`: plugin `{plugin}` rendered ClusterRole {role}, which the aggregated ClusterRole `{aggregate}` on the cluster selects, so its rules would join `{aggregate}`'s; it may not create it without `emit:object:ClusterRole/{role}`; nothing was changed"
    )]
    Aggregated {
        /// The manifest.
        manifest: String,
        /// The plugin that rendered it.
        plugin: String,
        /// The rendered ClusterRole.
        role: String,
        /// The aggregated ClusterRole that selects it.
        aggregate: String,
    },
    /// A third-party plugin's claim names a class nothing provisions.
    #[error(
        "manifest `{manifest}`: plugin `{plugin}` rendered {kind} {name}, whose claim names StorageClass `{class}`, which nothing on the cluster or in this run provisions, so only a volume someone left with that class can bind it; it may not create it without `emit:object:{kind}/{name}`; nothing was changed"
    )]
    UnprovisionedClass {
        /// The manifest.
        manifest: String,
        /// The plugin that rendered it.
        plugin: String,
        /// The object's kind.
        kind: String,
        /// The object's name.
        name: String,
        /// The class its claim names.
        class: String,
    },
    /// A rendered object is one another stack applied.
    #[error(
        "manifest `{manifest}` renders {object}, which stack `{stack}` applied (its manifest `{theirs}`); nothing was changed"
    )]
    ClaimedByOtherStack {
        /// The object.
        object: ObjectRef,
        /// This stack's manifest that renders it.
        manifest: String,
        /// The stack whose state records it.
        stack: String,
        /// That stack's manifest.
        theirs: String,
    },
    /// Content the user did not write (or a hook) renders an object that
    /// exists and that no stack applied, and `adopt:` does not name it.
    #[error(
        "manifest `{manifest}`: {writer} renders {object}, which exists on the cluster ({}) and which no stack applied; it is not taken over without being named; nothing was changed",
        if .managers.is_empty() { "no field manager".to_owned() } else { format!("written by {}", .managers.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ")) }
    )]
    TakeoverNotNamed {
        /// The object.
        object: ObjectRef,
        /// The manifest.
        manifest: String,
        /// Who wrote it: a plugin, fetched content, a hook.
        writer: String,
        /// Its field managers so far.
        managers: Vec<String>,
        /// How `adopt:` would name it.
        adopt: String,
    },
    /// A helm hook renders an object the API server made.
    #[error(
        "manifest `{manifest}`: a helm hook renders {object}, which the cluster's control plane made; a hook deletes before it creates, so it never replaces such an object; nothing was changed"
    )]
    HookReplacesServerObject {
        /// The object.
        object: ObjectRef,
        /// The manifest.
        manifest: String,
    },
    /// A third-party plugin rendered an object outside what it may create.
    #[error(
        "manifest `{manifest}`: plugin `{plugin}` rendered {object}, which it may not create without {} ({}); nothing was changed",
        .needs.iter().map(|n| format!("`{}`", n.grant)).collect::<Vec<_>>().join(" and "),
        .needs.iter().map(|n| n.why.as_str()).collect::<Vec<_>>().join("; ")
    )]
    OutsideScope {
        /// The object.
        object: ObjectRef,
        /// The manifest.
        manifest: String,
        /// The plugin that rendered it.
        plugin: String,
        /// The grants it lacks, each with why.
        needs: Vec<Needed>,
    },
}

impl Hint for OwnershipError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            Self::OwnedByOtherStack { manifest, stack } => format!(
                "rename the manifest in this file; or, if this file now is stack `{stack}`, set `spec.stack: {stack}`; `tazuna state list` in that stack shows what it owns, and `tazuna state forget {manifest}` there gives the name up"
            ),
            Self::Duplicate { first, second, .. } => format!(
                "keep the object in one manifest; if `{second}` needs it, add `{first}` to its `dependsOn`"
            ),
            Self::Reserved { .. } => {
                "give the object (or the manifest's `namespace:`) another namespace".into()
            }
            Self::UnprovisionedClass {
                plugin, kind, name, ..
            } => format!(
                "if you trust plugin `{plugin}` to bind volumes left on the cluster, add `emit:object:{kind}/{name}` to its `grants` in `spec.plugins` (the plugin must request them too); otherwise name a StorageClass that provisions; see docs/security.md"
            ),
            Self::Aggregated { plugin, role, .. } => format!(
                "if you trust plugin `{plugin}` to add rules to that role, add `emit:object:ClusterRole/{role}` to its `grants` in `spec.plugins` (the plugin must request them too); otherwise leave the labels the aggregation selects out of the render; see docs/security.md"
            ),
            Self::NamedElsewhere { stack, .. } => format!(
                "if this file is that stack, set `spec.stack: {stack}` in it; otherwise give it a name of its own with `spec.stack` (for example `spec.stack: {stack}-2`), so each stack sees, prunes and destroys only its own"
            ),
            Self::SameNameElsewhere { stack, theirs, .. } => format!(
                "give this file a stack name of its own with `spec.stack` (for example `spec.stack: {stack}-2`), so each stack sees, prunes and destroys only its own; if `{theirs}` is this repository at its old address, set `spec.stack: {stack}` to keep the name"
            ),
            Self::ClaimedByOtherStack {
                manifest,
                stack,
                theirs,
                ..
            } => format!(
                "remove the object from manifest `{manifest}` and leave it to stack `{stack}`; if this stack should own it, run `tazuna state forget {theirs}` with stack `{stack}`'s file first"
            ),
            Self::TakeoverNotNamed {
                manifest, adopt, ..
            } => format!(
                "if manifest `{manifest}` should take it over (its fields move to Tazuna, and prune and destroy then delete it with the manifest), add `adopt: [\"{adopt}\"]` to the manifest; otherwise rename it, or leave it out of the render"
            ),
            Self::HookReplacesServerObject { manifest, .. } => format!(
                "leave the object out of manifest `{manifest}`'s hooks; to manage it, render it as a plain object of your own files"
            ),
            Self::OutsideScope { plugin, needs, .. } => format!(
                "if you trust plugin `{plugin}` to create it, add {} to its `grants` in `spec.plugins` (the plugin must request them too); see docs/security.md",
                needs
                    .iter()
                    .map(|n| format!("`{}`", n.grant))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
    }
}

/// Which manifest of this run renders each object.
#[derive(Debug, Clone, Default)]
pub struct Claims {
    owners: HashMap<ObjectKey, String>,
}

impl Claims {
    /// The claims of `rendered` manifests (with their default namespaces).
    /// `namespaced` tells a kind's scope from discovery; kinds whose CRD is
    /// in the run take the CRD's scope. Every conflict is returned.
    pub fn of(
        rendered: &[(&str, Option<&str>, &Rendered)],
        namespaced: impl Fn(&ObjectRef) -> Option<bool>,
    ) -> Result<Self, Vec<OwnershipError>> {
        let defined: HashMap<(String, String), bool> = rendered
            .iter()
            .flat_map(|(_, _, r)| r.objects.iter())
            .filter_map(|o| crd_scope(&o.value))
            .collect();
        let mut claims = Self::default();
        let mut errors = Vec::new();
        for (manifest, default_namespace, rendered) in rendered {
            // What the render creates, for the emit verdict (third-party only).
            let mut made: Option<Made> = None;
            for object in &rendered.objects {
                let Some(mut reference) = ObjectRef::of(&object.value) else {
                    continue;
                };
                let scope = namespaced(&reference).or_else(|| {
                    defined
                        .get(&(reference.group.clone(), reference.kind.clone()))
                        .copied()
                });
                match scope {
                    Some(true) if reference.namespace.is_none() => {
                        reference.namespace =
                            Some(default_namespace.unwrap_or("default").to_owned());
                    }
                    Some(false) => reference.namespace = None,
                    _ => {}
                }
                let reserved = reference.namespace.as_deref() == Some(NAMESPACE)
                    || (reference.group.is_empty()
                        && reference.kind == "Namespace"
                        && reference.name == NAMESPACE);
                if reserved {
                    errors.push(OwnershipError::Reserved {
                        object: reference.clone(),
                        manifest: (*manifest).to_owned(),
                    });
                }
                if let Some(scope) = &rendered.scope {
                    let home = default_namespace.unwrap_or("default");
                    let made = made.get_or_insert_with(|| {
                        Made::of(rendered.objects.iter().map(|o| &o.value), home)
                    });
                    let needs = scope.missing(&reference, &object.value, home, made);
                    if !needs.is_empty() {
                        errors.push(OwnershipError::OutsideScope {
                            object: reference.clone(),
                            manifest: (*manifest).to_owned(),
                            plugin: rendered.plugin.clone(),
                            needs,
                        });
                    }
                }
                match claims.owners.get(&reference.key()) {
                    Some(first) if first != manifest => {
                        errors.push(OwnershipError::Duplicate {
                            object: reference,
                            first: first.clone(),
                            second: (*manifest).to_owned(),
                        });
                    }
                    Some(_) => {}
                    None => {
                        claims
                            .owners
                            .insert(reference.key(), (*manifest).to_owned());
                    }
                }
            }
        }
        if errors.is_empty() {
            Ok(claims)
        } else {
            errors.dedup();
            Err(errors)
        }
    }

    /// The manifest of this run that renders `object`.
    pub fn owner(&self, object: &ObjectKey) -> Option<&str> {
        self.owners.get(object).map(String::as_str)
    }
}

/// What keeps objects in the cluster: this run's claims, and the records of
/// the stack's manifests that are still in the file.
#[derive(Debug, Clone, Default)]
pub struct Ownership {
    claims: Claims,
    recorded: HashMap<ObjectKey, Vec<String>>,
    /// Namespaces that hold objects other stacks record, with one of them.
    holding: HashMap<String, String>,
    /// API groups of which other stacks record objects, with one of them:
    /// a CRD of that group takes them with it.
    of_group: HashMap<String, String>,
    /// Whether every selected manifest rendered; when one did not, what it
    /// would claim is unknown, so nothing is pruned.
    complete: bool,
}

impl Ownership {
    /// Ownership for a run with `claims`, over the stack's `own` records;
    /// `in_file` names the manifests still declared. `complete` says every
    /// selected manifest rendered.
    pub fn new(
        claims: Claims,
        own: &BTreeMap<String, Stored>,
        in_file: &HashSet<&str>,
        complete: bool,
    ) -> Self {
        let mut recorded: HashMap<ObjectKey, Vec<String>> = HashMap::new();
        for (name, stored) in own {
            if !in_file.contains(name.as_str()) {
                continue;
            }
            for entry in &stored.state.objects {
                recorded
                    .entry(entry.object().key())
                    .or_default()
                    .push(name.clone());
            }
        }
        Self {
            claims,
            recorded,
            holding: HashMap::new(),
            of_group: HashMap::new(),
            complete,
        }
    }

    /// The same, keeping also what other stacks' states record (a stack's
    /// prune or destroy never deletes an object another stack applied, even
    /// one both recorded before the claim verdict refused that).
    pub fn with_other_stacks(mut self, others: &BTreeMap<String, Stored>) -> Self {
        for (name, stored) in others {
            let Some(stack) = stored.state.stack.as_deref() else {
                continue;
            };
            for entry in &stored.state.objects {
                let object = entry.object();
                let who = format!("{name}` of stack `{stack}");
                if let Some(namespace) = &object.namespace {
                    self.holding
                        .entry(namespace.clone())
                        .or_insert_with(|| who.clone());
                }
                if !object.group.is_empty() {
                    self.of_group
                        .entry(object.group.clone())
                        .or_insert_with(|| who.clone());
                }
                self.recorded.entry(object.key()).or_default().push(who);
            }
        }
        self
    }

    /// Whether anything may be pruned in this run.
    pub fn may_prune(&self) -> bool {
        self.complete
    }

    /// The manifest that keeps `object` when `manifest` lets go of it: the
    /// one of this run that renders it, else another of the stack's
    /// manifests in the file that records it.
    /// A Namespace that holds, or a CRD that defines, what another stack
    /// records is kept by that stack ([`Self::holds_others`]).
    pub fn kept_by(&self, object: &ObjectKey, manifest: &str) -> Option<&str> {
        if let Some(owner) = self.claims.owner(object) {
            return (owner != manifest).then_some(owner);
        }
        self.recorded
            .get(object)
            .and_then(|managers| managers.iter().find(|m| *m != manifest))
            .map(String::as_str)
            .or_else(|| self.holds_others(object))
    }

    /// The other stack's manifest (`` `m` of stack `s` ``) whose objects
    /// `object` would take with it: a Namespace they are in, or a CRD of
    /// their group (the group is what a CRD's name `<plural>.<group>` says;
    /// any object of it counts). Deleting either deletes them too.
    pub fn holds_others(&self, object: &ObjectKey) -> Option<&str> {
        match (object.group.as_str(), object.kind.as_str()) {
            ("", "Namespace") => self.holding.get(&object.name),
            ("apiextensions.k8s.io", "CustomResourceDefinition") => object
                .name
                .split_once('.')
                .and_then(|(_, group)| self.of_group.get(group)),
            _ => None,
        }
        .map(String::as_str)
    }
}

/// The (group, kind) a CRD defines and whether it is namespaced.
fn crd_scope(object: &Value) -> Option<((String, String), bool)> {
    if object.get("kind")?.as_str()? != "CustomResourceDefinition" {
        return None;
    }
    let group = object.pointer("/spec/group")?.as_str()?;
    let kind = object.pointer("/spec/names/kind")?.as_str()?;
    let namespaced = object.pointer("/spec/scope").and_then(Value::as_str) != Some("Cluster");
    Some(((group.to_owned(), kind.to_owned()), namespaced))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::state::{Entry, ManifestState, PluginRecord};

    fn rendered(objects: Vec<Value>) -> Rendered {
        Rendered::of("", "manifests", objects)
    }

    fn configmap(name: &str, namespace: Option<&str>) -> Value {
        let mut value =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
        if let Some(namespace) = namespace {
            value["metadata"]["namespace"] = json!(namespace);
        }
        value
    }

    fn core_scope(object: &ObjectRef) -> Option<bool> {
        match object.kind.as_str() {
            "ConfigMap" | "Secret" => Some(true),
            "Namespace" | "ClusterRole" => Some(false),
            _ => None,
        }
    }

    fn stored(manifest: &str, stack: Option<&str>, objects: &[&str]) -> Stored {
        Stored {
            state: ManifestState {
                manifest: manifest.into(),
                depends_on: Vec::new(),
                position: 0,
                plugin: PluginRecord::default(),
                tazuna_version: "0.1.0".into(),
                git_commit: None,
                applied_at: String::new(),
                cluster: String::new(),
                stack: stack.map(str::to_owned),
                origin: None,
                incomplete: false,
                objects: objects
                    .iter()
                    .map(|name| {
                        let object = ObjectRef {
                            group: String::new(),
                            version: "v1".into(),
                            kind: "ConfigMap".into(),
                            namespace: Some("default".into()),
                            name: (*name).into(),
                        };
                        Entry::new(&object, String::new(), None)
                    })
                    .collect(),
            },
            resource_version: Some("1".into()),
            legacy: None,
        }
    }

    #[test]
    fn the_same_object_in_two_manifests_is_refused_naming_both() {
        let a = rendered(vec![configmap("twice", None)]);
        let b = rendered(vec![configmap("twice", Some("default"))]);
        let errors =
            Claims::of(&[("first", None, &a), ("second", None, &b)], core_scope).unwrap_err();
        assert_eq!(
            errors,
            [OwnershipError::Duplicate {
                object: ObjectRef::of(&configmap("twice", Some("default"))).unwrap(),
                first: "first".into(),
                second: "second".into(),
            }]
        );
        // One manifest rendering an object twice is its own business.
        let c = rendered(vec![configmap("same", None), configmap("same", None)]);
        assert!(Claims::of(&[("one", None, &c)], core_scope).is_ok());
    }

    #[test]
    fn objects_in_tazunas_namespace_are_refused_wherever_the_namespace_comes_from() {
        let explicit = rendered(vec![configmap("lease", Some("tazuna"))]);
        let defaulted = rendered(vec![configmap("state", None)]);
        let namespace = rendered(vec![
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tazuna"}}),
        ]);
        let custom = rendered(vec![
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                   "metadata": {"name": "gadgets.example.dev"},
                   "spec": {"group": "example.dev", "scope": "Namespaced", "names": {"kind": "Gadget"}}}),
            json!({"apiVersion": "example.dev/v1", "kind": "Gadget", "metadata": {"name": "g"}}),
        ]);
        let errors = Claims::of(
            &[
                ("explicit", None, &explicit),
                ("defaulted", Some("tazuna"), &defaulted),
                ("namespace", None, &namespace),
                ("custom", Some("tazuna"), &custom),
            ],
            core_scope,
        )
        .unwrap_err();
        let manifests: Vec<&str> = errors
            .iter()
            .map(|e| match e {
                OwnershipError::Reserved { manifest, .. } => manifest.as_str(),
                other => panic!("{other}"),
            })
            .collect();
        assert_eq!(manifests, ["explicit", "defaulted", "namespace", "custom"]);
        // A cluster-scoped object loses a namespace it names.
        let cluster_scoped = rendered(vec![
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r", "namespace": "tazuna"}}),
        ]);
        assert!(Claims::of(&[("rbac", None, &cluster_scoped)], core_scope).is_ok());
    }

    #[test]
    fn a_renamed_or_moved_object_is_kept_by_its_new_manifest() {
        let renamed = rendered(vec![configmap("app", Some("default"))]);
        let claims = Claims::of(&[("app-v2", None, &renamed)], core_scope).unwrap();
        let own = BTreeMap::from([
            ("app".to_owned(), stored("app", Some("s"), &["app"])),
            ("other".to_owned(), stored("other", Some("s"), &["shared"])),
            (
                "removed".to_owned(),
                stored("removed", Some("s"), &["orphan"]),
            ),
        ]);
        let in_file = HashSet::from(["app-v2", "other"]);
        let ownership = Ownership::new(claims, &own, &in_file, true);
        let key = |name: &str| {
            ObjectRef::of(&configmap(name, Some("default")))
                .unwrap()
                .key()
        };
        assert_eq!(ownership.kept_by(&key("app"), "app"), Some("app-v2"));
        assert_eq!(ownership.kept_by(&key("app"), "app-v2"), None);
        // Not rendered in this run (a tag selection), but still recorded by
        // a manifest in the file.
        assert_eq!(ownership.kept_by(&key("shared"), "removed"), Some("other"));
        assert_eq!(ownership.kept_by(&key("shared"), "other"), None);
        assert_eq!(ownership.kept_by(&key("orphan"), "removed"), None);
        // What another stack applied is never this stack's to delete.
        let others = BTreeMap::from([
            (
                "platform".to_owned(),
                stored("platform", Some("platform"), &["orphan"]),
            ),
            ("go".to_owned(), stored("go", None, &["orphan"])),
        ]);
        let mut others = others;
        let gadget = ObjectRef {
            group: "example.com".into(),
            version: "v1".into(),
            kind: "Gadget".into(),
            namespace: None,
            name: "g".into(),
        };
        others
            .get_mut("platform")
            .unwrap()
            .state
            .objects
            .push(Entry::new(&gadget, String::new(), None));
        let ownership = ownership.with_other_stacks(&others);
        assert_eq!(
            ownership.kept_by(&key("orphan"), "removed"),
            Some("platform` of stack `platform")
        );
        // The Namespace its objects are in, and the CRD of their group,
        // would take them along: kept too.
        let object = |group: &str, kind: &str, name: &str| ObjectKey {
            group: group.into(),
            kind: kind.into(),
            namespace: None,
            name: name.into(),
        };
        let crd = "apiextensions.k8s.io";
        for (key, kept) in [
            (object("", "Namespace", "default"), true),
            (object("", "Namespace", "elsewhere"), false),
            (
                object(crd, "CustomResourceDefinition", "gadgets.example.com"),
                true,
            ),
            (
                object(crd, "CustomResourceDefinition", "gadgets.other.example.com"),
                false,
            ),
        ] {
            assert_eq!(
                ownership.kept_by(&key, "removed") == Some("platform` of stack `platform"),
                kept,
                "{key:?}"
            );
        }
    }

    #[test]
    fn an_object_another_stack_applied_is_refused_naming_that_stack() {
        let all = BTreeMap::from([
            (
                "platform".to_owned(),
                stored("platform", Some("platform"), &["shared", "theirs"]),
            ),
            ("legacy".to_owned(), stored("legacy", None, &["old"])),
            ("team".to_owned(), stored("team", Some("team"), &["mine"])),
        ]);
        let states = StackStates::split(all, "team", None, &HashSet::from(["team"]));
        let ours = |names: &[&str]| {
            rendered(
                names
                    .iter()
                    .map(|n| configmap(n, Some("default")))
                    .collect(),
            )
        };
        let rendered = ours(&["mine", "shared", "old", "new"]);
        let claims = Claims::of(&[("team", None, &rendered)], core_scope).unwrap();
        let refused = states.claimed(&claims);
        assert_eq!(refused.len(), 1, "{refused:?}");
        let OwnershipError::ClaimedByOtherStack {
            object,
            manifest,
            stack,
            theirs,
        } = &refused[0]
        else {
            panic!("{refused:?}")
        };
        assert_eq!(
            (
                object.name.as_str(),
                manifest.as_str(),
                stack.as_str(),
                theirs.as_str()
            ),
            ("shared", "team", "platform", "platform")
        );
        // Go Tazuna's records (no stack) and the stack's own are no claim.
        let rendered = ours(&["mine", "old"]);
        let claims = Claims::of(&[("team", None, &rendered)], core_scope).unwrap();
        assert!(states.claimed(&claims).is_empty());
    }

    #[test]
    fn one_derived_name_from_two_repositories_is_a_collision_never_a_merge() {
        let mut theirs = stored("app", Some("platform/tazuna.yaml"), &["a"]);
        theirs.state.origin = Some("github.com/acme/platform".into());
        let older = stored("old", Some("platform/tazuna.yaml"), &["b"]);
        let all = BTreeMap::from([("app".to_owned(), theirs), ("old".to_owned(), older)]);
        let declared = HashSet::from(["app", "old"]);
        let states = StackStates::split(
            all.clone(),
            "platform/tazuna.yaml",
            Some("github.com/other-org/platform"),
            &declared,
        );
        assert_eq!(
            states.own.keys().collect::<Vec<_>>(),
            ["old"],
            "older state is adopted"
        );
        assert_eq!(states.others.keys().collect::<Vec<_>>(), ["app"]);
        let refused = states.collided(
            "platform/tazuna.yaml",
            Some("github.com/other-org/platform"),
        );
        assert!(
            matches!(&refused[..], [OwnershipError::SameNameElsewhere { theirs, .. }] if theirs == "github.com/acme/platform"),
            "{refused:?}"
        );
        // The same repository, or a name set with spec.stack: ours.
        for origin in [Some("github.com/acme/platform"), None] {
            let states = StackStates::split(all.clone(), "platform/tazuna.yaml", origin, &declared);
            assert_eq!(states.own.len(), 2);
            assert!(states.collided("platform/tazuna.yaml", origin).is_empty());
        }
        // A stack a file named with spec.stack is not one that another
        // file derives the same name for; the named file still is.
        let mut named = stored("app", Some("platform/tazuna.yaml"), &["a"]);
        named.state.origin = Some(NAMED_ORIGIN.into());
        let all = BTreeMap::from([("app".to_owned(), named)]);
        let derived = Some("github.com/acme/platform");
        let states = StackStates::split(all.clone(), "platform/tazuna.yaml", derived, &declared);
        assert!(states.own.is_empty());
        let refused = states.collided("platform/tazuna.yaml", derived);
        assert!(
            matches!(&refused[..], [OwnershipError::NamedElsewhere { ours, .. }] if ours == "github.com/acme/platform"),
            "{refused:?}"
        );
        assert!(
            refused[0]
                .hint()
                .unwrap()
                .contains("set `spec.stack: platform/tazuna.yaml`")
        );
        let states = StackStates::split(all, "platform/tazuna.yaml", None, &declared);
        assert_eq!(states.own.len(), 1);
    }

    #[test]
    fn records_split_by_stack_and_unowned_ones_go_to_the_stack_that_declares_them() {
        let all = BTreeMap::from([
            (
                "platform".to_owned(),
                stored("platform", Some("platform"), &[]),
            ),
            ("team".to_owned(), stored("team", Some("team"), &[])),
            ("legacy".to_owned(), stored("legacy", None, &[])),
            ("stray".to_owned(), stored("stray", None, &[])),
        ]);
        let states = StackStates::split(
            all,
            "platform",
            None,
            &HashSet::from(["platform", "legacy"]),
        );
        assert_eq!(
            states.own.keys().collect::<Vec<_>>(),
            ["legacy", "platform"]
        );
        assert_eq!(states.others.keys().collect::<Vec<_>>(), ["stray", "team"]);
        assert_eq!(
            states.taken(["platform", "team"]),
            [OwnershipError::OwnedByOtherStack {
                manifest: "team".into(),
                stack: "team".into()
            }]
        );
    }
}
