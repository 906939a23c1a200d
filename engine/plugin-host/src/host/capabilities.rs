//! Capability grants: what a plugin asks for, what the user grants, and the
//! intersection that takes effect.
//!
//! A capability is a short string: `exec:<tool>` to run a tool through the `exec`
//! import, `artifacts:pull` to fetch OCI artifacts. A grant may end in `*` to cover
//! a family (`exec:*`). Nothing takes effect unless the plugin requested it *and*
//! it was granted; every host call checks the effective set again.

use std::collections::BTreeSet;
use std::fmt;

/// The capabilities in effect for one plugin.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Capabilities {
    effective: BTreeSet<String>,
    /// The requests in effect that no grant names exactly, only a wildcard
    /// (`emit:namespace:kube-system` under `emit:namespace:*`): they cover
    /// only what that wildcard would ([`Capabilities::widened`]).
    widened: BTreeSet<String>,
}

impl Capabilities {
    /// No capabilities at all: the default for a third-party plugin.
    pub fn none() -> Self {
        Self::default()
    }

    /// The intersection of what was requested and what was granted: each
    /// request some grant covers, and each grant some request covers (a plugin
    /// that requests `emit:kind:*` gets `emit:kind:RoleBinding` when only that
    /// is granted). A request that only a wildcard grant covers is noted as
    /// widened: the user granted the family, not that name.
    pub fn effective(requested: &[String], granted: &[String]) -> Self {
        let wanted: Vec<&String> = requested
            .iter()
            .filter(|want| granted.iter().any(|grant| covers(grant, want)))
            .collect();
        let widened = wanted
            .iter()
            .filter(|want| !want.ends_with('*') && !granted.contains(want))
            .map(|want| (*want).clone())
            .collect();
        let narrowed = granted
            .iter()
            .filter(|grant| requested.iter().any(|want| covers(want, grant)));
        Self {
            effective: wanted.into_iter().chain(narrowed).cloned().collect(),
            widened,
        }
    }

    /// The capabilities in effect by a wildcard grant only, not by name. The
    /// emit scope gives them no more than the wildcard covers: no `kube-*`
    /// namespace and no custom resource's kind.
    pub fn widened(&self) -> impl Iterator<Item = &str> {
        self.widened.iter().map(String::as_str)
    }

    /// Whether `capability` is in effect.
    pub fn allows(&self, capability: &str) -> bool {
        self.effective.contains(capability)
    }

    /// The effective capabilities, sorted.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.effective.iter().map(String::as_str)
    }
}

impl fmt::Display for Capabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.effective.is_empty() {
            return f.write_str("none");
        }
        let list: Vec<&str> = self.iter().collect();
        f.write_str(&list.join(", "))
    }
}

fn covers(grant: &str, wanted: &str) -> bool {
    match grant.strip_suffix('*') {
        Some(prefix) => wanted.starts_with(prefix),
        None => grant == wanted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn only_requested_and_granted_capabilities_take_effect() {
        let caps = Capabilities::effective(
            &strings(&["exec:helm", "exec:kustomize", "artifacts:pull"]),
            &strings(&["exec:helm", "exec:helmfile"]),
        );
        assert_eq!(caps.iter().collect::<Vec<_>>(), ["exec:helm"]);
        assert!(!caps.allows("exec:helmfile"), "granted but never requested");
        assert!(
            !caps.allows("exec:kustomize"),
            "requested but never granted"
        );
    }

    #[test]
    fn wildcard_grant_covers_a_family_only() {
        let caps = Capabilities::effective(
            &strings(&["exec:helm", "artifacts:pull"]),
            &strings(&["exec:*"]),
        );
        assert!(caps.allows("exec:helm"));
        assert!(!caps.allows("artifacts:pull"));
    }

    #[test]
    fn a_wildcard_exec_grant_does_not_grant_free_arguments_to_known_tools() {
        let caps = Capabilities::effective(
            &strings(&["exec:helm", "exec-argv:helm"]),
            &strings(&["exec:*"]),
        );
        assert!(caps.allows("exec:helm"));
        assert!(!caps.allows("exec-argv:helm"));
    }

    #[test]
    fn a_narrow_grant_of_a_wide_request_takes_effect_narrowly() {
        let caps = Capabilities::effective(
            &strings(&["emit:kind:*", "exec:helm"]),
            &strings(&["emit:kind:RoleBinding"]),
        );
        assert_eq!(caps.iter().collect::<Vec<_>>(), ["emit:kind:RoleBinding"]);
    }

    #[test]
    fn a_named_request_under_a_wildcard_grant_is_noted_as_widened() {
        let caps = Capabilities::effective(
            &strings(&[
                "emit:namespace:*",
                "emit:namespace:kube-system",
                "exec:helm",
            ]),
            &strings(&["emit:namespace:*", "exec:*", "exec:helm"]),
        );
        assert!(caps.allows("emit:namespace:kube-system"));
        assert_eq!(
            caps.widened().collect::<Vec<_>>(),
            ["emit:namespace:kube-system"],
            "granted by the wildcard only; `exec:helm` is granted by name"
        );
    }

    #[test]
    fn nothing_granted_means_nothing_allowed() {
        let caps = Capabilities::effective(&strings(&["exec:helm"]), &[]);
        assert_eq!(caps, Capabilities::none());
        assert_eq!(caps.to_string(), "none");
    }
}
