//! `destroy`: taking a stack's manifests down from its state.

use super::*;

impl Stack {
    /// Delete everything the stack's state records (of the selected
    /// manifests), then the state, in reverse dependency order, but what
    /// was handed over to a GitOps controller unless `delete_handed_over`
    /// names it. `confirm` sees what would go and says whether to go on.
    /// `None` when there was nothing to destroy or it was not confirmed.
    pub async fn destroy(
        &self,
        connection: &Connection,
        lock_timeout: Duration,
        deletion_timeout: Duration,
        delete_handed_over: &[String],
        confirm: impl FnOnce(&Teardown) -> bool,
        observer: &dyn Observer,
    ) -> Result<Option<Vec<ManifestOutcome>>, RunError> {
        let span = self.run_span("destroy", &connection.cluster);
        let work = async {
            let chosen = self.chosen(self.states(connection).await?.own)?;
            if chosen.is_empty() {
                self.notice(&format!(
                    "nothing to destroy: stack `{}` has no state on this cluster",
                    self.name()
                ));
                return Ok(None);
            }
            let teardown = Teardown {
                manifests: chosen.keys().cloned().collect(),
                objects: chosen.values().map(|s| s.state.objects.len()).sum(),
                context: connection.cluster.target().context.clone(),
            };
            if !confirm(&teardown) {
                return Ok(None);
            }
            self.leased(connection, lock_timeout, async {
                // Read again under the lock: another run may have changed it.
                let states = self.states(connection).await?;
                let (doomed, rest): (BTreeMap<_, _>, BTreeMap<_, _>) = states
                    .own
                    .into_iter()
                    .partition(|(name, _)| chosen.contains_key(name));
                // Objects a manifest that stays, or another stack, also records
                // are left to it.
                let staying: HashSet<&str> = rest.keys().map(String::as_str).collect();
                let ownership = Ownership::new(Claims::default(), &rest, &staying, true)
                    .with_other_stacks(&states.others);
                for entry in doomed.values().flat_map(|stored| &stored.state.objects) {
                    let object = entry.object();
                    if let Some(other) = ownership.holds_others(&object.key()) {
                        self.notice(&format!(
                            "kept {object}: manifest `{other}` has objects it would take with it; destroy that stack first to delete it"
                        ));
                    }
                }
                let settings = teardown_settings(deletion_timeout, delete_handed_over.to_vec());
                let run = self.run(connection, &doomed, &ownership, &[], &settings, observer);
                let order = crate::destroy::order(&doomed);
                Ok(run.destroy(&order).await)
            })
            .await
            .map(Some)
        };
        tazuna_core::traced(span, work, |span, outcome| {
            run_status(
                span,
                outcome
                    .as_ref()
                    .map(|outcomes| outcomes.as_deref().unwrap_or_default()),
            )
        })
        .await
    }

    /// The records of the manifests the tags select (all without tags).
    pub(super) fn chosen(
        &self,
        mut own: BTreeMap<String, Stored>,
    ) -> Result<BTreeMap<String, Stored>, RunError> {
        if !self.options.tags.is_empty() {
            let selected: HashSet<&str> =
                self.selected()?.iter().map(|m| m.name.as_str()).collect();
            own.retain(|name, _| selected.contains(name.as_str()));
        }
        Ok(own)
    }
}

/// What taking objects down needs of the apply settings: deletes only, one
/// manifest at a time, each step's deletions waited for at most
/// `deletion_timeout`.
pub(super) fn teardown_settings(
    deletion_timeout: Duration,
    delete_handed_over: Vec<String>,
) -> ApplySettings {
    ApplySettings {
        conflicts: Conflicts::Report,
        recreate: Recreate::Never,
        prune: Prune::Dangerous,
        mode: Mode::Apply,
        manifests_at_once: 1,
        requests_at_once: tazuna_kube::apply::REQUESTS_AT_ONCE,
        sends: tazuna_kube::apply::Sends::Changed,
        atomic: false,
        git_commit: None,
        origin: None,
        tazuna_version: crate::VERSION.to_owned(),
        run_spec_tests: false,
        deletion_timeout,
        delete_handed_over,
    }
}
