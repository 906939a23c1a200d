//! kwok, which plays kubelet for the fake Nodes: its configuration, the
//! Nodes, and whether they are ready.

use std::fs;
use std::path::Path;

use anyhow::Context as _;
use serde_json::json;

use super::*;

/// kwok's configuration: the upstream "fast" stages in the order kwokctl loads them.
/// The options are kwok's defaults plus the command-line flags.
pub(super) fn kwok_config_yaml(stages: &Path) -> anyhow::Result<String> {
    // No KwokConfiguration document: kwok defaults only one it creates itself (given
    // one, v0.8.0 leaves `nodeLeaseParallelism` at 0 and refuses to start).
    let mut out = String::new();
    for file in [
        "node-initialize.yaml",
        "node-heartbeat-with-lease.yaml",
        "pod-ready.yaml",
        "pod-complete.yaml",
        "pod-delete.yaml",
    ] {
        let path = stages.join(file);
        let text =
            fs::read_to_string(&path).with_context(|| format!("reading `{}`", path.display()))?;
        out.push_str("---\n");
        out.push_str(text.trim_start_matches("---\n"));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

/// Fake Nodes with the labels charts select on and no taint, so that ordinary
/// workloads schedule onto them.
pub(super) fn nodes_manifest(nodes: usize) -> String {
    let items: Vec<serde_json::Value> = (0..nodes)
        .map(|i| {
            let name = format!("kwok-node-{i}");
            let resources = json!({"cpu": "32", "memory": "256Gi", "pods": "110"});
            json!({
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
                    "labels": {
                        "kubernetes.io/arch": "amd64",
                        "kubernetes.io/os": "linux",
                        "kubernetes.io/hostname": name,
                        "type": "kwok",
                    },
                },
                "status": {"allocatable": resources, "capacity": resources},
            })
        })
        .collect();
    json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()
}

/// The number of Nodes that are Ready and have no taints.
pub(super) fn ready_nodes(cluster: &Cluster) -> anyhow::Result<usize> {
    let out = cluster
        .kubectl()
        .args(["get", "nodes", "-o", "json"])
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let items = list["items"].as_array().cloned().unwrap_or_default();
    Ok(items
        .iter()
        .filter(|node| {
            let ready = node["status"]["conditions"]
                .as_array()
                .is_some_and(|conds| {
                    conds
                        .iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                });
            let untainted = node["spec"]["taints"]
                .as_array()
                .is_none_or(|t| t.is_empty());
            ready && untainted
        })
        .count())
}
