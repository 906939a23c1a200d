//! `tazuna status`: whether what Tazuna's state records exists and is ready,
//! judged by the rules `apply` waits for, from one list call per kind and
//! namespace.

use std::collections::BTreeMap;

use tazuna_core::inventory::ObjectRef;
use tazuna_core::readiness::{self, LoadBalancers, Readiness};

use crate::cluster::Cluster;
use crate::live::LiveIndex;
use crate::state::Stored;

/// One object of the state, and how it is doing.
#[derive(Debug, Clone)]
pub struct Row {
    /// The manifest that applied it.
    pub manifest: String,
    /// The object.
    pub object: ObjectRef,
    /// Its readiness; missing objects and kinds no longer served are failed.
    pub readiness: Readiness,
    /// To whom and when it was handed over, if it was.
    pub handover: Option<tazuna_core::policy::HandedOver>,
    /// What its GitOps controller says of it ([`tazuna_core::policy::controller_view`]).
    pub controller: Option<String>,
}

/// The readiness of every object in `states`, in state order, and how many
/// list calls it took.
pub async fn readiness(
    cluster: &Cluster,
    states: &BTreeMap<String, Stored>,
) -> Result<(Vec<Row>, usize), kube::Error> {
    let mut live = LiveIndex::new(cluster);
    let mut rows = Vec::new();
    for stored in states.values() {
        for entry in &stored.state.objects {
            let object = entry.object();
            let mut controller = None;
            let readiness = match cluster.resolve(&object) {
                None => Readiness::Failed("its kind is no longer served".into()),
                Some(resolved) => match live.get(&object, &resolved).await? {
                    // Finished, and removed by its TTL as it should be.
                    None if entry.removed_when_done => Readiness::Ready,
                    None => Readiness::Failed("missing".into()),
                    // As helm's `--wait` judges: a load balancer's address
                    // is not readiness.
                    Some(current) => {
                        controller = tazuna_core::policy::controller_view(current);
                        readiness::assess(current, LoadBalancers::Ignored)
                    }
                },
            };
            rows.push(Row {
                manifest: stored.state.manifest.clone(),
                object,
                readiness,
                handover: entry.handover.clone(),
                controller,
            });
        }
    }
    Ok((rows, live.requests()))
}
