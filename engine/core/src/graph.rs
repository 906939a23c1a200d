//! Ordering, in one place: the layers manifests are applied in (a DAG built from
//! `dependsOn`), the dependency cycles the loader refuses, and the order in which
//! `destroy` and prune take manifests down.
//!
//! Every manifest in a layer depends only on manifests in earlier layers, so a layer can be
//! applied in parallel once the previous one is done. Within a layer, declaration order is
//! kept, so the output is the same on every run.
//!
//! When none of the given manifests declares `dependsOn`, each manifest is its own layer in
//! declaration order: Go Tazuna's sequential mode, kept for compatibility. The children of
//! one `type: parallel` entry share a layer there, as Go Tazuna runs them together. (Go
//! decides this over the whole file; here it is decided over the manifests passed in, so a
//! `--tags` selection without any `dependsOn` runs sequentially. That is never less safe.)

use std::collections::HashMap;

/// What ordering needs to know of a manifest (or of a manifest's state
/// record, for teardown).
pub trait Node {
    /// Its name.
    fn name(&self) -> &str;
    /// The names it depends on.
    fn depends_on(&self) -> &[String];
    /// The `type: parallel` entry it is a child of, if any.
    fn parallel(&self) -> Option<&str> {
        None
    }
}

impl<T: Node + ?Sized> Node for &T {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn depends_on(&self) -> &[String] {
        (**self).depends_on()
    }

    fn parallel(&self) -> Option<&str> {
        (**self).parallel()
    }
}

/// For each node, the indices of the nodes it depends on among `nodes`
/// (itself and unknown names left out), sorted and without repeats.
fn edges<N: Node>(nodes: &[N]) -> Vec<Vec<usize>> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, node) in nodes.iter().enumerate() {
        index.entry(node.name()).or_insert(i);
    }
    nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            let mut deps: Vec<usize> = node
                .depends_on()
                .iter()
                .filter_map(|name| index.get(name.as_str()).copied())
                .filter(|&d| d != i)
                .collect();
            deps.sort_unstable();
            deps.dedup();
            deps
        })
        .collect()
}

/// Layers of indices into `manifests`. Dependencies on manifests outside `manifests` (left
/// out by a selection) are ignored. Cycles are rejected by the config loader; should one
/// reach here anyway, its members form a last layer rather than vanishing.
pub fn layers<N: Node>(manifests: &[N]) -> Vec<Vec<usize>> {
    if manifests.iter().all(|m| m.depends_on().is_empty()) {
        // Declaration order; the children of one `parallel` entry together.
        let mut layers: Vec<Vec<usize>> = Vec::new();
        for (i, manifest) in manifests.iter().enumerate() {
            let group = manifest.parallel();
            match layers.last_mut() {
                Some(last) if group.is_some() && manifests[last[0]].parallel() == group => {
                    last.push(i);
                }
                _ => layers.push(vec![i]),
            }
        }
        return layers;
    }
    let (layers, _) = levels(&edges(manifests));
    layers
}

/// Kahn's algorithm by levels, linear in nodes plus edges: each node's layer
/// is one past its deepest dependency's. Nodes on a cycle (never free) come
/// last, in one layer. Also returns each node's layer.
fn levels(deps: &[Vec<usize>]) -> (Vec<Vec<usize>>, Vec<usize>) {
    let n = deps.len();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut waiting: Vec<usize> = vec![0; n];
    for (i, node_deps) in deps.iter().enumerate() {
        waiting[i] = node_deps.len();
        for &d in node_deps {
            dependents[d].push(i);
        }
    }
    let mut level = vec![usize::MAX; n];
    let mut layers = Vec::new();
    let mut current: Vec<usize> = (0..n).filter(|&i| waiting[i] == 0).collect();
    while !current.is_empty() {
        let mut next = Vec::new();
        for &u in &current {
            level[u] = layers.len();
            for &v in &dependents[u] {
                waiting[v] -= 1;
                if waiting[v] == 0 {
                    next.push(v);
                }
            }
        }
        next.sort_unstable();
        layers.push(std::mem::replace(&mut current, next));
    }
    let stuck: Vec<usize> = (0..n).filter(|&i| waiting[i] > 0).collect();
    if !stuck.is_empty() {
        for &i in &stuck {
            level[i] = layers.len();
        }
        layers.push(stuck);
    }
    (layers, level)
}

/// The layers flattened: one deterministic order that respects every dependency.
pub fn order<N: Node>(manifests: &[N]) -> Vec<usize> {
    layers(manifests).concat()
}

/// The order to take `nodes` down in (they are given in apply order, as
/// declared): the deepest in the dependency graph first, and among equals the
/// last declared first, so nothing goes before what depends on it.
pub fn teardown<N: Node>(nodes: &[N]) -> Vec<usize> {
    // A node's depth is its layer: one past its deepest dependency's.
    let (_, depth) = levels(&edges(nodes));
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_by(|&a, &b| depth[b].cmp(&depth[a]).then(b.cmp(&a)));
    order
}

/// A dependency cycle among `nodes`, as indices from a node back to itself
/// (`[a, b, a]`), if there is one.
pub fn find_cycle<N: Node>(nodes: &[N]) -> Option<Vec<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        New,
        OnPath,
        Done,
    }
    fn visit(
        u: usize,
        edges: &[Vec<usize>],
        state: &mut [State],
        path: &mut Vec<usize>,
    ) -> Option<Vec<usize>> {
        state[u] = State::OnPath;
        path.push(u);
        for &v in &edges[u] {
            match state[v] {
                State::OnPath => {
                    let start = path.iter().position(|&p| p == v).unwrap_or(0);
                    let mut cycle = path[start..].to_vec();
                    cycle.push(v);
                    return Some(cycle);
                }
                State::New => {
                    if let Some(cycle) = visit(v, edges, state, path) {
                        return Some(cycle);
                    }
                }
                State::Done => {}
            }
        }
        path.pop();
        state[u] = State::Done;
        None
    }

    // Unlike `edges`, a node's dependency on itself is a cycle here (the
    // loader reports that case first, with its own message).
    let index: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name(), i))
        .collect();
    let edges: Vec<Vec<usize>> = nodes
        .iter()
        .map(|n| {
            n.depends_on()
                .iter()
                .filter_map(|dep| index.get(dep.as_str()).copied())
                .collect()
        })
        .collect();
    let mut state = vec![State::New; nodes.len()];
    for start in 0..nodes.len() {
        if state[start] == State::New {
            let mut path = Vec::new();
            if let Some(cycle) = visit(start, &edges, &mut state, &mut path) {
                return Some(cycle);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::config::Manifest;
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
            create_namespace: false,
            adopt: Vec::new(),
            handover: None,
            parallel: None,
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

    /// `count` manifests, each depending on the `window` before it.
    fn dense(count: usize, window: usize) -> Vec<Manifest> {
        let names: Vec<String> = (0..count).map(|i| format!("m{i}")).collect();
        (0..count)
            .map(|i| {
                let deps: Vec<&str> = names[i.saturating_sub(window)..i]
                    .iter()
                    .map(String::as_str)
                    .collect();
                manifest(&names[i], &deps)
            })
            .collect()
    }

    #[test]
    fn dense_graphs_order_in_one_pass_over_their_edges() {
        // 1,000 manifests on all earlier ones (499,500 edges), and 10,000 on
        // the 20 before each: chains, one manifest per layer.
        for (count, window) in [(1_000, usize::MAX), (10_000, 20)] {
            let manifests = dense(count, window);
            let layers = layers(&manifests);
            assert_eq!(layers.len(), count);
            assert!(layers.iter().enumerate().all(|(i, layer)| layer == &[i]));
            assert_eq!(find_cycle(&manifests), None);
            let down = teardown(&manifests);
            assert_eq!(down.first(), Some(&(count - 1)));
            assert_eq!(down.last(), Some(&0));
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

    #[test]
    fn teardown_goes_deepest_first_and_last_declared_first() {
        let all = [
            manifest("cni", &[]),
            manifest("cert-manager", &["cni"]),
            manifest("argocd", &["cni"]),
            manifest("projects", &["argocd"]),
        ];
        let refs: Vec<&Manifest> = all.iter().collect();
        let order: Vec<&str> = teardown(&refs)
            .into_iter()
            .map(|i| all[i].name.as_str())
            .collect();
        assert_eq!(order, ["projects", "argocd", "cert-manager", "cni"]);
        let sequential = [manifest("a", &[]), manifest("b", &[])];
        assert_eq!(teardown(&sequential), [1, 0]);
    }

    #[test]
    fn a_cycle_is_found_from_a_node_back_to_itself() {
        let all = [
            manifest("a", &["b"]),
            manifest("b", &["c"]),
            manifest("c", &["a"]),
            manifest("d", &[]),
        ];
        assert_eq!(find_cycle(&all), Some(vec![0, 1, 2, 0]));
        assert_eq!(find_cycle(&all[3..]), None);
    }
}
