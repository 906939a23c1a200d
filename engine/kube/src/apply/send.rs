//! Sending one phase of a manifest: preparing each object, skipping what is
//! unchanged live, server-side apply with conflicts, hand edits and
//! re-creation handled, and the legacy field manager handed over.

use super::*;

impl Run<'_> {
    /// Namespace defaulting and resolution against discovery.
    pub(crate) async fn prepare(
        &self,
        mut value: Value,
        manifest: &Manifest,
        shared: &Shared,
    ) -> Result<Prepared, ManifestError> {
        let object = ObjectRef::of(&value).expect("identity checked before");
        let resolved = self.resolve_kind(&object, manifest, shared).await?;
        if let Some(resolved) = &resolved {
            crate::objects::prepare_object(&mut value, resolved, manifest);
        }
        let object = ObjectRef::of(&value).expect("identity checked before");
        let hash = inventory::content_hash(&value, self.hash_key);
        Ok(Prepared {
            object,
            value,
            hash,
            resolved,
            restore: false,
            takeover: false,
            rename: None,
            acts_as: None,
            decision: Decision::Apply,
            ignored: Vec::new(),
        })
    }

    /// Send what changed in one phase; returns every object's new state entry,
    /// with the apply response for those that were sent, in rendered order,
    /// and the first error. Objects handled before an error are returned too.
    pub(crate) async fn apply_phase(
        &self,
        manifest: &str,
        phase: &'static str,
        prepared: Vec<Prepared>,
        prior: &HashMap<ObjectRef, &Entry>,
        shared: &Shared,
        counts: &mut Counts,
    ) -> (Vec<Handled>, Option<ManifestError>) {
        if prepared.is_empty() {
            return (Vec::new(), None);
        }
        let span = tracing::info_span!(
            target: tazuna_core::TRACE,
            "apply phase",
            tazuna.phase = phase,
            tazuna.objects = prepared.len(),
            otel.status_code = tracing::field::Empty,
            otel.status_description = tracing::field::Empty,
        );
        let work = async {
            // One list per kind and namespace (metadata only) tells whether an
            // object exists (created or configured) and whether the fields
            // Tazuna owns are unchanged live (skipped).
            let mut index = LiveIndex::metadata(self.cluster);
            // Kinds in namespaces a dry run creates are not listed (see below).
            let listed = prepared.iter().filter_map(|item| {
                let created = self.settings.mode == Mode::DryRun
                    && item
                        .object
                        .namespace
                        .as_ref()
                        .is_some_and(|namespace| shared.namespaces.contains(namespace));
                Some((&item.object, item.resolved.as_ref().filter(|_| !created)?))
            });
            index.prefetch(listed, &shared.requests).await;
            let mut results: Vec<Option<(ObjectRef, Option<Handled>, Action)>> =
                vec![None; prepared.len()];
            // What the API server warned about, per object sent.
            let mut notes: Vec<Option<String>> = vec![None; prepared.len()];
            let mut to_send = Vec::new();
            let mut first_error: Option<(usize, ManifestError)> = None;
            for (position, mut item) in prepared.into_iter().enumerate() {
                let Some(resolved) = item.resolved.clone() else {
                    results[position] = Some((item.object, None, Action::Created));
                    notes[position] = Some("its kind is created by this run; not sent".into());
                    continue;
                };
                if self.settings.mode == Mode::DryRun
                    && let Some(namespace) = &item.object.namespace
                    && shared.namespaces.contains(namespace)
                    && !self.live_namespaces(shared).await.contains(namespace)
                {
                    notes[position] = Some(format!(
                        "namespace `{namespace}` is created by this run; not sent"
                    ));
                    results[position] = Some((item.object, None, Action::Created));
                    continue;
                }
                let mut writers = Vec::new();
                let current = match index.get(&item.object, &resolved).await {
                    Ok(current) => {
                        if let Some(live) = current {
                            writers = prune::writers(live, self.manager.name());
                            item.rename = self.manager.rename_legacy(live);
                            let acts_as = self.manager.as_for(Some(live));
                            item.acts_as =
                                (acts_as != self.manager.name()).then(|| acts_as.to_owned());
                        }
                        current.map(|live| self.manager.owned_fields_hash(live))
                    }
                    Err(e) => {
                        first_error.get_or_insert((
                            position,
                            ManifestError::Rejected {
                                object: item.object.clone(),
                                message: format!("cannot list its kind: {}", status_message(&e)),
                            },
                        ));
                        break;
                    }
                };
                let before = prior.get(&item.object);
                // Create-only, or handed over: what exists is left as it is.
                if !item.decision.sends(current.is_some()) {
                    let entry = match before {
                        Some(entry) => (*entry).clone(),
                        None => {
                            let mut entry = Entry::new(&item.object, item.hash.clone(), None);
                            entry.adopted_from = writers;
                            entry
                        }
                    };
                    notes[position] = item.decision.note();
                    results[position] = Some((item.object, Some((entry, None)), Action::Kept));
                    continue;
                }
                // Unchanged in the file and live (or, in Go Tazuna's
                // differential mode, in the file and present live).
                let unchanged_live = match self.settings.sends {
                    Sends::Changed => entry_fields_match(before.copied(), current.as_ref()),
                    Sends::FileChanges => current.is_some(),
                    Sends::Everything => false,
                };
                if let Some(entry) = before
                    && entry.hash == item.hash
                    && unchanged_live
                {
                    let entry = (*entry).clone().removed_when_done(&item.value);
                    results[position] = Some((item.object, Some((entry, None)), Action::Unchanged));
                    continue;
                }
                // Applied as it is now, finished and removed by its TTL: done.
                if let Some(entry) = before
                    && current.is_none()
                    && entry.done_and_removed(&item.hash, &item.value)
                {
                    let entry = (*entry).clone().removed_when_done(&item.value);
                    results[position] = Some((item.object, Some((entry, None)), Action::Unchanged));
                    continue;
                }
                let action = if current.is_some() {
                    Action::Configured
                } else {
                    Action::Created
                };
                to_send.push((position, item, action));
            }

            if self.settings.atomic && self.settings.mode == Mode::Apply && first_error.is_none() {
                for (position, item, action) in &to_send {
                    let resolved = item
                        .resolved
                        .as_ref()
                        .expect("only resolved objects are sent");
                    let before = if *action == Action::Created {
                        None
                    } else {
                        let api =
                            api_for(self.client(), resolved, item.object.namespace.as_deref());
                        match api.get_opt(&item.object.name).await {
                            Ok(found) => found.and_then(|o| serde_json::to_value(o).ok()),
                            Err(e) => {
                                first_error.get_or_insert((
                                    *position,
                                    ManifestError::Rejected {
                                        object: item.object.clone(),
                                        message: format!(
                                            "cannot read it before changing it (`--atomic` keeps it to undo the run): {}",
                                            status_message(&e)
                                        ),
                                    },
                                ));
                                break;
                            }
                        }
                    };
                    self.journal.record(&item.object, resolved, before);
                }
                if first_error.is_some() {
                    to_send.clear();
                }
            }
            let sends = futures::stream::iter(to_send.into_iter().map(
                |(position, item, action)| async move {
                    let result = {
                        let _turn = shared.requests.acquire().await;
                        self.send(&item).await
                    };
                    (position, item, action, result)
                },
            ))
            .buffer_unordered(self.settings.requests_at_once.max(1))
            .collect::<Vec<_>>()
            .await;
            for (position, item, action, result) in sends {
                match result {
                    Ok(Sent {
                        applied,
                        notes: said,
                    }) => {
                        if !said.is_empty() {
                            notes[position] = Some(said.join("; "));
                        }
                        let fields = self.manager.owned_fields_hash(&applied);
                        let mut entry = Entry::new(&item.object, item.hash, fields)
                            .removed_when_done(&item.value);
                        // Who had written it before the stack first did decides
                        // whether prune and destroy may delete it.
                        entry.adopted_from = match prior.get(&item.object) {
                            Some(before) => before.adopted_from.clone(),
                            None => prune::writers(&applied, self.manager.name()),
                        };
                        results[position] =
                            Some((item.object, Some((entry, Some(applied))), action));
                    }
                    Err(error) => {
                        if first_error.as_ref().is_none_or(|(i, _)| position < *i) {
                            first_error = Some((position, error));
                        }
                    }
                }
            }
            let mut out = Vec::with_capacity(results.len());
            // In rendered order; what was sent before or beside a failure is
            // reported and recorded too.
            for ((object, handled, action), note) in results
                .into_iter()
                .zip(notes)
                .filter_map(|(r, n)| Some((r?, n)))
            {
                counts.add(action);
                self.observer.event(Event::Object {
                    manifest: manifest.to_owned(),
                    object,
                    action,
                    note,
                });
                if let Some(handled) = handled {
                    out.push(handled);
                }
            }
            (out, first_error.map(|(_, e)| e))
        };
        tazuna_core::traced(span, work, |_, (_, error)| {
            error.as_ref().map_or(Ok(()), |e| Err(e.to_string()))
        })
        .await
    }

    /// Server-side apply of one object (with `--recreate` handling), with
    /// what the API server warned about.
    pub(super) async fn send(&self, item: &Prepared) -> Result<Sent, ManifestError> {
        let resolved = item
            .resolved
            .clone()
            .expect("only resolved objects are sent");
        let api = api_for(self.client(), &resolved, item.object.namespace.as_deref());
        let mut params = self.manager.apply_params();
        params.force = self.settings.conflicts == Conflicts::Force || item.takeover;
        params.dry_run = self.settings.mode == Mode::DryRun;
        let mut notes = Vec::new();
        match (&item.rename, &item.acts_as) {
            // A dry run renames nothing: it acts as the legacy manager, which
            // meets the conflicts that the rename and the apply would.
            (_, Some(legacy)) if params.dry_run => params.field_manager = Some(legacy.clone()),
            (Some(rename), _) if !params.dry_run => self.rename_legacy(item, &api, rename).await?,
            _ => {}
        }
        if item.takeover && self.settings.conflicts != Conflicts::Force {
            notes.push("took over the fields Go Tazuna applied".to_owned());
        }
        // Fields left to others go as they are live, so that neither a
        // conflict nor a change comes of them.
        let mut sent = std::borrow::Cow::Borrowed(&item.value);
        if !item.ignored.is_empty() {
            let live =
                api.get_opt(&item.object.name)
                    .await
                    .map_err(|e| ManifestError::Rejected {
                        object: item.object.clone(),
                        message: format!(
                            "cannot read it for the fields it leaves to others: {}",
                            status_message(&e)
                        ),
                    })?;
            if let Some(live) = live.and_then(|l| serde_json::to_value(l).ok()) {
                let pointers = tazuna_core::policy::resolve(&item.ignored, &live);
                tazuna_core::policy::keep_live(sent.to_mut(), &live, &pointers);
            }
        }
        if item.decision == Decision::Replace {
            let (result, warnings) = crate::warnings::collect(crate::objects::replace(
                &api,
                sent.as_ref(),
                params
                    .field_manager
                    .as_deref()
                    .unwrap_or(self.manager.name()),
                params.dry_run,
            ))
            .await;
            let applied = result.map_err(|e| ManifestError::Rejected {
                object: item.object.clone(),
                message: format!(
                    "cannot replace it (`tazuna.dev/apply: replace`): {}",
                    status_message(&e)
                ),
            })?;
            let mut value = serde_json::to_value(&applied).unwrap_or(Value::Null);
            crate::objects::fill_type(&mut value, &item.object);
            notes.push("replaced whole (`tazuna.dev/apply: replace`)".to_owned());
            if !warnings.is_empty() {
                notes.push(format!("warning: {}", warnings.join("; ")));
            }
            return Ok(Sent {
                applied: value,
                notes,
            });
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            let (result, warnings) = crate::warnings::collect(api.patch(
                &item.object.name,
                &params,
                &Patch::Apply(sent.as_ref()),
            ))
            .await;
            match result {
                Ok(applied) => {
                    let mut value = serde_json::to_value(&applied).unwrap_or(Value::Null);
                    crate::objects::fill_type(&mut value, &item.object);
                    if !warnings.is_empty() {
                        notes.push(format!("warning: {}", warnings.join("; ")));
                    }
                    return Ok(Sent {
                        applied: value,
                        notes,
                    });
                }
                Err(kube::Error::Api(status)) if status.code == 409 && !params.force => {
                    // Tazuna's intent is unchanged and the fields were changed
                    // by hand (an update, not another applier): that is drift,
                    // and apply puts the declared values back.
                    if item.restore {
                        let live = api.get_opt(&item.object.name).await.ok().flatten();
                        let live = live.and_then(|l| serde_json::to_value(l).ok());
                        if let Some(editors) = hand_edits(&status.message, live.as_ref()) {
                            notes.push(format!(
                                "took back fields changed live by {}",
                                editors.join(", ")
                            ));
                            params.force = true;
                            continue;
                        }
                    }
                    return Err(ManifestError::Conflict {
                        object: item.object.clone(),
                        message: status.message.clone(),
                    });
                }
                Err(kube::Error::Api(status)) if is_unknown_field(&status.message) => {
                    return Err(ManifestError::UnknownField {
                        object: item.object.clone(),
                        message: status.message.clone(),
                    });
                }
                Err(kube::Error::Api(status))
                    if status.code == 422 && is_immutable(&status.message) =>
                {
                    if self.settings.recreate == Recreate::Never || attempt > 1 || params.dry_run {
                        return Err(ManifestError::Immutable {
                            object: item.object.clone(),
                            message: status.message.clone(),
                        });
                    }
                    let delete = DeleteParams {
                        propagation_policy: Some(PropagationPolicy::Foreground),
                        ..DeleteParams::default()
                    };
                    api.delete(&item.object.name, &delete).await.map_err(|e| {
                        ManifestError::Rejected {
                            object: item.object.clone(),
                            message: format!(
                                "cannot delete it to re-create it: {}",
                                status_message(&e)
                            ),
                        }
                    })?;
                    wait::until_gone(
                        self.client(),
                        vec![(item.object.clone(), resolved.clone())],
                        Duration::from_secs(120),
                    )
                    .await?;
                }
                Err(error) => {
                    return Err(ManifestError::Rejected {
                        object: item.object.clone(),
                        message: status_message(&error),
                    });
                }
            }
        }
    }

    /// Hand the legacy field manager's entry of `item` to the stack's
    /// manager (`rename`, from [`FieldManager::rename_legacy`]).
    pub(super) async fn rename_legacy(
        &self,
        item: &Prepared,
        api: &Api<DynamicObject>,
        rename: &Value,
    ) -> Result<(), ManifestError> {
        let refused = |message: String| ManifestError::Rejected {
            object: item.object.clone(),
            message: format!(
                "cannot hand the fields of field manager `{LEGACY_FIELD_MANAGER}` to `{}`: {message}; run `apply` again",
                self.manager.name()
            ),
        };
        let patch: json_patch::Patch =
            serde_json::from_value(rename.clone()).map_err(|e| refused(e.to_string()))?;
        api.patch(
            &item.object.name,
            &PatchParams::default(),
            &Patch::Json::<()>(patch),
        )
        .await
        .map_err(|e| refused(status_message(&e)))?;
        Ok(())
    }

    /// Namespaces that exist live, read once per run (dry runs only).
    pub(super) async fn live_namespaces<'s>(&self, shared: &'s Shared) -> &'s HashSet<String> {
        shared
            .live_namespaces
            .get_or_init(|| async {
                let api: Api<k8s_openapi::api::core::v1::Namespace> =
                    Api::all(self.client().clone());
                api.list_metadata(&kube::api::ListParams::default())
                    .await
                    .map(|list| {
                        list.items
                            .into_iter()
                            .filter_map(|n| n.metadata.name)
                            .collect()
                    })
                    .unwrap_or_default()
            })
            .await
    }
}

/// What the API server answered to one apply.
pub(super) struct Sent {
    /// The object as applied.
    applied: Value,
    /// Warnings, and fields taken back from hand edits.
    notes: Vec<String>,
}

/// Whether the fields Tazuna set are as `entry` recorded them, by `live`'s
/// hash of them ([`FieldManager::owned_fields_hash`]).
fn entry_fields_match(entry: Option<&Entry>, live: Option<&Option<String>>) -> bool {
    entry.is_some_and(|e| e.fields.is_some() && live.is_some_and(|l| *l == e.fields))
}
