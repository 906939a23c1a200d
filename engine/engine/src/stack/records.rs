//! What the cluster records of a stack: its own state and everyone else's,
//! the claim, name, namespace and takeover checks made before any write,
//! and the verbs that read or change state alone (`status`, `forget`,
//! `sync_state`).

use super::*;

impl Stack {
    /// The stack's records and everyone else's, from one list call.
    pub async fn states(&self, connection: &Connection) -> Result<StackStates, RunError> {
        let all = connection.store.load().await?;
        Ok(StackStates::split(
            all,
            self.name(),
            self.origin(),
            &self.declared(),
        ))
    }

    pub(super) fn declared(&self) -> HashSet<&str> {
        self.config
            .manifests
            .iter()
            .map(|m| m.name.as_str())
            .collect()
    }

    /// Which manifest claims each rendered object; objects rendered twice or
    /// into Tazuna's namespace are refused.
    pub(super) fn claims(
        &self,
        cluster: &Cluster,
        rendered: &[(&Manifest, &Rendered)],
    ) -> Result<Claims, RunError> {
        let inputs: Vec<(&str, Option<&str>, &Rendered)> = rendered
            .iter()
            .map(|(m, r)| (m.name.as_str(), m.namespace.as_deref(), *r))
            .collect();
        Claims::of(&inputs, |o| cluster.resolve(o).map(|r| r.namespaced))
            .map_err(RunError::Ownership)
    }

    /// Refuse a run that writes into a namespace that does not exist and that
    /// no manifest of the run renders or creates (`createNamespace`).
    pub(super) async fn check_namespaces(
        &self,
        cluster: &Cluster,
        run: &[(&Manifest, &Rendered)],
    ) -> Result<(), RunError> {
        let missing = tazuna_kube::namespaces::missing(cluster, run, &self.config.manifests)
            .await
            .map_err(RunError::Read)?;
        if missing.is_empty() {
            Ok(())
        } else {
            Err(RunError::MissingNamespaces(missing))
        }
    }

    /// Manifest names of this file that another stack owns, and objects of
    /// this run that another stack applied, are refused (the claim verdict,
    /// [`StackStates::claimed`]).
    pub(super) fn check_names(
        &self,
        states: &StackStates,
        claims: &Claims,
    ) -> Result<(), RunError> {
        let mut taken = states.collided(self.name(), self.origin());
        taken.extend(states.taken(self.config.manifests.iter().map(|m| m.name.as_str())));
        taken.extend(states.claimed(claims));
        if taken.is_empty() {
            Ok(())
        } else {
            Err(RunError::Ownership(taken))
        }
    }

    /// Objects that exist, that no stack applied, and that content the user
    /// did not write (or a hook) renders are taken over only when the
    /// manifest's `adopt:` names them (the takeover verdict,
    /// [`tazuna_kube::takeover::takeover`]); a third-party plugin's
    /// ClusterRole that an aggregated ClusterRole selects needs its name
    /// granted ([`tazuna_kube::aggregation`]), and so does its claim of a
    /// StorageClass nothing provisions ([`tazuna_kube::storage`]).
    pub(super) async fn check_takeovers(
        &self,
        cluster: &Cluster,
        states: &StackStates,
        run: &[(&Manifest, &Rendered)],
    ) -> Result<(), RunError> {
        let takeovers = tazuna_kube::takeover::check(cluster, states, run).await;
        let mut refused = takeovers.err().unwrap_or_default();
        refused.extend(tazuna_kube::aggregation::check(cluster, run).await);
        refused.extend(tazuna_kube::storage::check(cluster, run).await);
        if refused.is_empty() {
            Ok(())
        } else {
            Err(RunError::Ownership(refused))
        }
    }

    /// This stack's own manifest states on `store`, as they are now.
    pub(super) async fn states_of(
        &self,
        store: &Store,
    ) -> Result<BTreeMap<String, Stored>, RunError> {
        let all = store.load().await?;
        Ok(StackStates::split(all, self.name(), self.origin(), &self.declared()).own)
    }

    /// Whether the objects of the stack's state exist and are ready.
    pub async fn status(&self, connection: &Connection) -> Result<StatusReport, RunError> {
        let own = self.states(connection).await?.own;
        let (rows, requests) = crate::status::readiness(&connection.cluster, &own)
            .await
            .map_err(RunError::Read)?;
        Ok(StatusReport {
            rows,
            manifests: own.len(),
            incomplete: own
                .values()
                .filter(|s| s.state.incomplete)
                .map(|s| s.state.manifest.clone())
                .collect(),
            requests,
        })
    }

    /// The live objects of this stack's state on the cluster, by manifest
    /// (for comparing two clusters as they are).
    pub async fn live_objects(
        &self,
        connection: &Connection,
    ) -> Result<Vec<(String, serde_json::Value)>, RunError> {
        let own = self.states(connection).await?.own;
        tazuna_kube::live::recorded(&connection.cluster, &own)
            .await
            .map_err(RunError::Read)
    }

    /// Stop managing `target` (`<manifest>` or `<manifest>/<Kind>[/<namespace>]/<name>`)
    /// without deleting it. Returns what was forgotten, for people.
    pub async fn forget(&self, connection: &Connection, target: &str) -> Result<String, RunError> {
        self.leased(
            connection,
            Duration::from_secs(60),
            self.forget_locked(connection, target),
        )
        .await
    }

    pub(super) async fn forget_locked(
        &self,
        connection: &Connection,
        target: &str,
    ) -> Result<String, RunError> {
        let states = self.states(connection).await?;
        let mut parts = target.splitn(2, '/');
        let manifest = parts.next().unwrap_or_default();
        let Some(stored) = states.own.get(manifest) else {
            let known: Vec<&str> = states.own.keys().map(String::as_str).collect();
            let elsewhere = states
                .others
                .get(manifest)
                .and_then(|s| s.state.stack.clone())
                .map(|stack| {
                    format!(
                        "; it belongs to stack `{stack}`: run `tazuna state forget` with that file"
                    )
                })
                .unwrap_or_default();
            return Err(RunError::NotInState(
                format!(
                    "manifest `{manifest}` is not in the state of stack `{}`",
                    self.name()
                ),
                format!(
                    "`tazuna state list` shows what is; known: {}{elsewhere}",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        };
        let store = &connection.store;
        let Some(rest) = parts.next() else {
            store.delete(stored).await?;
            return Ok(format!(
                "forgot manifest `{manifest}` and its {} objects; they stay in the cluster",
                stored.state.objects.len()
            ));
        };
        let pieces: Vec<&str> = rest.split('/').collect();
        let (kind, namespace, name) = match pieces.as_slice() {
            [kind, name] => (*kind, None, *name),
            [kind, namespace, name] => (*kind, Some(*namespace), *name),
            _ => {
                return Err(RunError::NotInState(
                    format!(
                        "`{target}` is not `<manifest>/<Kind>/<name>` or `<manifest>/<Kind>/<namespace>/<name>`"
                    ),
                    "for example `tazuna state forget argocd/ConfigMap/argocd/argocd-cm`".into(),
                ));
            }
        };
        let mut state = stored.state.clone();
        let before = state.objects.len();
        state.objects.retain(|e| {
            !(e.kind == kind
                && e.name == name
                && (namespace.is_none() || e.namespace.as_deref() == namespace))
        });
        let removed = before - state.objects.len();
        if removed == 0 {
            return Err(RunError::NotInState(
                format!("manifest `{manifest}` has no {kind} `{name}` in its state"),
                "`tazuna state list -o json` shows its objects".into(),
            ));
        }
        state.stack = Some(self.name().to_owned());
        store.save(&state, Some(stored)).await?;
        Ok(format!(
            "forgot {removed} object(s) of manifest `{manifest}`; they stay in the cluster"
        ))
    }
}

impl Stack {
    /// Go Tazuna's `state sync`: drop from this stack's state the objects
    /// that are gone from the cluster (deleted by hand, or with a CRD that
    /// went away), so that plan, prune and destroy stop counting them. A Job
    /// removed by its TTL stays: it finished, it is not lost. With
    /// `dry_run`, only reports. Returns each dropped object with its manifest.
    pub async fn sync_state(
        &self,
        connection: &Connection,
        dry_run: bool,
    ) -> Result<Vec<(String, tazuna_core::inventory::ObjectRef)>, RunError> {
        self.leased(
            connection,
            Duration::from_secs(60),
            self.sync_state_locked(connection, dry_run),
        )
        .await
    }

    pub(super) async fn sync_state_locked(
        &self,
        connection: &Connection,
        dry_run: bool,
    ) -> Result<Vec<(String, tazuna_core::inventory::ObjectRef)>, RunError> {
        let states = self.states(connection).await?;
        let mut live = tazuna_kube::live::LiveIndex::metadata(&connection.cluster);
        let mut dropped = Vec::new();
        for stored in states.own.values() {
            let mut kept = Vec::with_capacity(stored.state.objects.len());
            let mut gone = Vec::new();
            for entry in &stored.state.objects {
                let object = entry.object();
                let exists = match connection.cluster.resolve(&object) {
                    // Its kind is served no more: nothing of it exists.
                    None => false,
                    Some(resolved) => live
                        .get(&object, &resolved)
                        .await
                        .map_err(RunError::Read)?
                        .is_some(),
                };
                if exists || entry.removed_when_done {
                    kept.push(entry.clone());
                } else {
                    gone.push(object);
                }
            }
            if gone.is_empty() {
                continue;
            }
            if !dry_run {
                let mut state = stored.state.clone();
                state.objects = kept;
                state.stack = Some(self.name().to_owned());
                connection.store.save(&state, Some(stored)).await?;
            }
            dropped.extend(gone.into_iter().map(|o| (stored.state.manifest.clone(), o)));
        }
        Ok(dropped)
    }
}
