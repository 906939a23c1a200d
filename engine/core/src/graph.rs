//! The order in which manifests are applied: layers of a DAG built from `dependsOn`.
//!
//! Every manifest in a layer depends only on manifests in earlier layers, so a layer can be
//! applied in parallel once the previous one is done. Within a layer, declaration order is
//! kept, so the output is the same on every run.
//!
//! When none of the given manifests declares `dependsOn`, each manifest is its own layer in
//! declaration order: Go Tazuna's sequential mode, kept for compatibility. (Go decides this
//! over the whole file; here it is decided over the manifests passed in, so a `--tags`
//! selection without any `dependsOn` runs sequentially. That is never less safe.)

use std::collections::HashMap;

use crate::config::Manifest;

/// Layers of indices into `manifests`. Dependencies on manifests outside `manifests` (left
/// out by a selection) are ignored. Cycles are rejected by the config loader; should one
/// reach here anyway, its members form a last layer rather than vanishing.
pub fn layers(manifests: &[&Manifest]) -> Vec<Vec<usize>> {
    if manifests.iter().all(|m| m.depends_on.is_empty()) {
        return (0..manifests.len()).map(|i| vec![i]).collect();
    }
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, manifest) in manifests.iter().enumerate() {
        index.entry(manifest.name.as_str()).or_insert(i);
    }
    let deps: Vec<Vec<usize>> = manifests
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut deps: Vec<usize> = m
                .depends_on
                .iter()
                .filter_map(|name| index.get(name.as_str()).copied())
                .filter(|&d| d != i)
                .collect();
            deps.sort_unstable();
            deps.dedup();
            deps
        })
        .collect();

    let mut placed = vec![false; manifests.len()];
    let mut remaining = manifests.len();
    let mut layers = Vec::new();
    while remaining > 0 {
        let layer: Vec<usize> = (0..manifests.len())
            .filter(|&i| !placed[i] && deps[i].iter().all(|&d| placed[d]))
            .collect();
        if layer.is_empty() {
            layers.push((0..manifests.len()).filter(|&i| !placed[i]).collect());
            break;
        }
        for &i in &layer {
            placed[i] = true;
        }
        remaining -= layer.len();
        layers.push(layer);
    }
    layers
}

/// The layers flattened: one deterministic order that respects every dependency.
pub fn order(manifests: &[&Manifest]) -> Vec<usize> {
    layers(manifests).concat()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::config::{Location, Wait};

    fn manifest(name: &str, deps: &[&str]) -> Manifest {
        Manifest {
            name: name.to_owned(),
            description: None,
            kind: "manifests".to_owned(),
            path: None,
            tags: Vec::new(),
            depends_on: deps.iter().map(|d| (*d).to_owned()).collect(),
            namespace: None,
            wait: Wait::default(),
            prune: false,
            tests: Vec::new(),
            config: serde_json::json!({}),
            base_dir: PathBuf::from("."),
            origin: Location {
                file: PathBuf::from("tazuna.yaml"),
                line: 1,
                column: 1,
            },
        }
    }

    fn names(manifests: &[Manifest], layers: &[Vec<usize>]) -> Vec<Vec<String>> {
        layers
            .iter()
            .map(|layer| layer.iter().map(|&i| manifests[i].name.clone()).collect())
            .collect()
    }

    #[test]
    fn without_depends_on_each_manifest_is_its_own_layer() {
        let ms = [
            manifest("cni", &[]),
            manifest("ingress", &[]),
            manifest("app", &[]),
        ];
        let refs: Vec<&Manifest> = ms.iter().collect();
        assert_eq!(layers(&refs), vec![vec![0], vec![1], vec![2]]);
        assert_eq!(order(&refs), vec![0, 1, 2]);
    }

    #[test]
    fn depends_on_builds_layers_in_declaration_order() {
        // The example from Go Tazuna's docs/src/concepts/depends-on.md.
        let ms = [
            manifest("cni", &[]),
            manifest("cert-manager", &["cni"]),
            manifest("ingress", &["cni"]),
            manifest("app", &["cert-manager", "ingress"]),
            manifest("monitoring", &[]),
        ];
        let refs: Vec<&Manifest> = ms.iter().collect();
        assert_eq!(
            names(&ms, &layers(&refs)),
            vec![
                vec!["cni", "monitoring"],
                vec!["cert-manager", "ingress"],
                vec!["app"]
            ]
        );
    }

    #[test]
    fn a_dependency_declared_later_still_comes_first() {
        let ms = [manifest("app", &["crds"]), manifest("crds", &[])];
        let refs: Vec<&Manifest> = ms.iter().collect();
        assert_eq!(order(&refs), vec![1, 0]);
    }

    #[test]
    fn selection_ignores_dependencies_outside_it() {
        let ms = [
            manifest("cni", &[]),
            manifest("cert-manager", &["cni"]),
            manifest("app", &["cert-manager", "cni"]),
        ];
        // Select cert-manager and app only: cni is outside the selection.
        let refs: Vec<&Manifest> = vec![&ms[1], &ms[2]];
        assert_eq!(layers(&refs), vec![vec![0], vec![1]]);
        let refs: Vec<&Manifest> = vec![&ms[0], &ms[2]];
        assert_eq!(layers(&refs), vec![vec![0], vec![1]]);
    }

    #[test]
    fn layers_are_deterministic() {
        let ms: Vec<Manifest> = (0..20)
            .map(|i| {
                let deps: Vec<String> = (0..i)
                    .filter(|j| j % 3 == i % 3)
                    .map(|j| format!("m{j}"))
                    .collect();
                let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
                manifest(&format!("m{i}"), &deps)
            })
            .collect();
        let refs: Vec<&Manifest> = ms.iter().collect();
        let first = layers(&refs);
        for _ in 0..10 {
            assert_eq!(layers(&refs), first);
        }
        assert_eq!(first[0], vec![0, 1, 2]);
        assert_eq!(first.len(), 7);
    }

    #[test]
    fn a_cycle_that_slipped_through_lands_in_a_last_layer() {
        let ms = [
            manifest("a", &["b"]),
            manifest("b", &["a"]),
            manifest("c", &[]),
        ];
        let refs: Vec<&Manifest> = ms.iter().collect();
        assert_eq!(layers(&refs), vec![vec![2], vec![0, 1]]);
    }
}
