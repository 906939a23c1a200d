//! `apply` (and `test`) of a stack: checks before any write, the run under
//! the Lease, and `--atomic`'s roll back.

use super::*;

impl Stack {
    /// Bring the cluster to the file: render, refuse what the stack may not
    /// write, take the Lease, apply layer by layer, prune by ownership (also
    /// the manifests removed from the file), and run `spec.tests`.
    pub async fn apply(
        &self,
        connection: &Connection,
        options: &ApplyOptions,
        observer: &dyn Observer,
    ) -> Result<Vec<ManifestOutcome>, RunError> {
        let verb = match options.mode {
            Mode::Apply => "apply",
            Mode::DryRun => "apply --dry-run",
        };
        let span = self.run_span(verb, &connection.cluster);
        let work = async {
            let selected = self.selected()?;
            let rendered = self.render_on(&selected, &connection.cluster).await?;
            let ok: Vec<(&Manifest, &Rendered)> = selected
                .iter()
                .zip(&rendered)
                .filter_map(|(m, r)| Some((*m, r.as_ref().ok()?)))
                .collect();
            // Before anything is written, Tazuna's own namespace and Lease included.
            let claims = self.claims(&connection.cluster, &ok)?;
            self.check_namespaces(&connection.cluster, &ok).await?;
            let run = self.apply_locked(connection, options, &selected, rendered, claims, observer);
            match options.mode {
                Mode::Apply => {
                    connection.store.ensure_namespace().await?;
                    self.leased(connection, options.lock_timeout, run).await
                }
                // A dry run writes nothing, the Lease included.
                Mode::DryRun => run.await,
            }
        };
        tazuna_core::traced(span, work, |span, outcome| {
            run_status(span, outcome.as_ref().map(Vec::as_slice))
        })
        .await
    }

    pub(super) async fn apply_locked(
        &self,
        connection: &Connection,
        options: &ApplyOptions,
        selected: &[&Manifest],
        rendered: Vec<Result<Rendered, Failure>>,
        claims: Claims,
        observer: &dyn Observer,
    ) -> Result<Vec<ManifestOutcome>, RunError> {
        let Connection { cluster, store } = connection;
        // Read under the Lease: what another run wrote before it is seen.
        let states = self.states(connection).await?;
        self.check_names(&states, &claims)?;
        let ok: Vec<(&Manifest, &Rendered)> = selected
            .iter()
            .zip(&rendered)
            .filter_map(|(m, r)| Some((*m, r.as_ref().ok()?)))
            .collect();
        self.check_takeovers(cluster, &states, &ok).await?;
        let complete = rendered.iter().all(Result::is_ok);
        if !complete && options.prune != Prune::Off && options.mode == Mode::Apply {
            self.notice(
                "note: nothing is pruned in this run: a manifest failed to render, so what it keeps is unknown",
            );
        }
        let declared = self.declared();
        let ownership = Ownership::new(claims, &states.own, &declared, complete)
            .with_other_stacks(&states.others);
        let hash_key = match options.mode {
            Mode::Apply => store.ensure_hash_key().await?,
            Mode::DryRun => store.hash_key().await?.unwrap_or_default(),
        };
        let settings = ApplySettings {
            conflicts: options.conflicts,
            recreate: options.recreate,
            prune: options.prune,
            mode: options.mode,
            manifests_at_once: options.manifests_at_once,
            requests_at_once: options.requests_at_once,
            sends: options.sends,
            atomic: options.atomic,
            git_commit: git_commit(&self.config.dir),
            origin: Some(
                self.origin()
                    .unwrap_or(tazuna_kube::ownership::NAMED_ORIGIN)
                    .to_owned(),
            ),
            tazuna_version: crate::VERSION.to_owned(),
            run_spec_tests: self.options.tags.is_empty(),
            deletion_timeout: Wait::DEFAULT_TIMEOUT,
            delete_handed_over: options.delete_handed_over.clone(),
        };
        let run = self.run(
            connection,
            &states.own,
            &ownership,
            &hash_key,
            &settings,
            observer,
        );
        let positions: BTreeMap<&str, usize> = self
            .config
            .manifests
            .iter()
            .enumerate()
            .map(|(i, m)| (m.name.as_str(), i))
            .collect();
        let units: Vec<Unit> = selected
            .iter()
            .zip(rendered)
            .map(|(manifest, rendered)| Unit {
                manifest,
                position: positions[manifest.name.as_str()],
                rendered,
            })
            .collect();
        let layers = graph::layers(selected);
        let sequential = selected.iter().all(|m| m.depends_on.is_empty());
        let mut outcomes = run.apply(&units, &layers, sequential).await;

        // The stack's manifests removed from the file: their objects go by
        // the rules of in-file prune, unless another manifest keeps them.
        let removed: BTreeMap<String, Stored> = states
            .own
            .iter()
            .filter(|(name, _)| !declared.contains(name.as_str()))
            .map(|(n, s)| (n.clone(), s.clone()))
            .collect();
        if !removed.is_empty() {
            let names = removed
                .keys()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ");
            if options.prune == Prune::Off || options.mode == Mode::DryRun {
                self.notice(&format!(
                    "note: {names} removed from the file still {} objects in the cluster; `tazuna apply --prune` deletes them",
                    if removed.len() == 1 { "has" } else { "have" }
                ));
            } else if ownership.may_prune() {
                let order = crate::destroy::order(&removed);
                outcomes.extend(run.prune_removed(&order, options.prune).await);
            }
        }
        let all_ok = outcomes.iter().all(|o| o.outcome == Outcome::Applied);
        if !all_ok && options.atomic && options.mode == Mode::Apply {
            self.roll_back(&run, &states.own).await?;
            return Ok(outcomes);
        }
        if all_ok
            && settings.run_spec_tests
            && options.mode == Mode::Apply
            && let Some(outcome) = run.spec_tests(&self.config.spec.tests).await
        {
            observer.event(Event::Finished(outcome.clone()));
            outcomes.push(outcome);
        }
        Ok(outcomes)
    }

    /// Undo a failed `--atomic` run: its objects as they were, and the state
    /// of every manifest it wrote as it was read at the start (`before`).
    pub(super) async fn roll_back(
        &self,
        run: &Run<'_>,
        before: &BTreeMap<String, Stored>,
    ) -> Result<(), RunError> {
        let undone = run.roll_back().await;
        let now = self.states_of(run.store).await?;
        let mut states = 0;
        for (name, current) in &now {
            match before.get(name) {
                Some(previous) if previous.resource_version == current.resource_version => {}
                Some(previous) => {
                    run.store.save(&previous.state, Some(current)).await?;
                    states += 1;
                }
                None => {
                    run.store.delete(current).await?;
                    states += 1;
                }
            }
        }
        self.notice(&format!(
            "rolled back (--atomic): {} created object(s) deleted, {} changed object(s) restored, the state of {states} manifest(s) put back",
            undone.deleted, undone.restored
        ));
        for failure in &undone.failures {
            self.notice(&format!("warning: could not undo {failure}"));
        }
        Ok(())
    }

    /// Run the chart tests (helm test hooks) of the selected manifests on a
    /// cluster they were applied to, under the Lease, as `helm test` does.
    /// Nothing is recorded in state.
    pub async fn test(
        &self,
        connection: &Connection,
        lock_timeout: Duration,
        observer: &dyn Observer,
    ) -> Result<Vec<ManifestOutcome>, RunError> {
        let selected = self.selected()?;
        let rendered = self.render_on(&selected, &connection.cluster).await?;
        let store = &connection.store;
        self.leased(connection, lock_timeout, async {
            let states = self.states(connection).await?;
            let declared = self.declared();
            let ownership = Ownership::new(Claims::default(), &states.own, &declared, false);
            let hash_key = store.hash_key().await?.unwrap_or_default();
            let settings = teardown_settings(Wait::DEFAULT_TIMEOUT, Vec::new());
            let run = self.run(
                connection,
                &states.own,
                &ownership,
                &hash_key,
                &settings,
                observer,
            );
            let units: Vec<Unit> = selected
                .iter()
                .zip(rendered)
                .enumerate()
                .map(|(position, (manifest, rendered))| Unit {
                    manifest,
                    position,
                    rendered,
                })
                .collect();
            Ok(run.chart_tests(&units).await)
        })
        .await
    }
}
