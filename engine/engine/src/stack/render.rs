//! Rendering a stack's manifests: its plugins (built-ins, pinned
//! third-party components), one sandboxed call per manifest, the pins of
//! what the renders pulled, secret references resolved, and the second
//! render that finds generated fields.

use super::*;

impl Stack {
    /// What each plugin of `spec.plugins` is used as: a secret resolver when a
    /// provider of `spec.providers` has its name as `type`, a source when a
    /// manifest does, else whichever world it targets.
    pub fn declared_roles(&self) -> Vec<(&str, Role)> {
        let config = &self.config;
        config
            .spec
            .plugins
            .iter()
            .map(|d| {
                let role = if config.spec.providers.iter().any(|p| p.kind == d.name) {
                    Role::Resolver
                } else if config.manifests.iter().any(|m| m.kind == d.name) {
                    Role::Source
                } else {
                    Role::Either
                };
                (d.name.as_str(), role)
            })
            .collect()
    }

    /// Start the plugin host and load the source plugins `manifests` need.
    pub fn source_plugins(
        &self,
        manifests: &[&Manifest],
    ) -> Result<(PluginHost, PluginSet), RunError> {
        let mut types: Vec<&str> = manifests.iter().map(|m| m.kind.as_str()).collect();
        types.sort_unstable();
        types.dedup();
        let wanted: Vec<(&str, Role)> = types.into_iter().map(|t| (t, Role::Source)).collect();
        let host = PluginHost::new(self.options.host.clone())?;
        // What the secret providers read is in no plugin's input.
        let providers = secrets::working_dir(&self.options.file);
        host.set_protected(Protected::new(
            self.config
                .spec
                .providers
                .iter()
                .flat_map(|provider| Protected::of_config(&providers, &provider.config)),
        ));
        let set = self.plugin_set(&host, &wanted, Resolve::Pinned)?;
        Ok((host, set))
    }

    /// Load the plugins `wanted` names in their roles: built-ins, and declared
    /// plugins, `oci://` ones by their pins in tazuna.lock (resolved and
    /// pinned when they have none, or again with [`Resolve::Again`]).
    pub fn plugin_set(
        &self,
        host: &PluginHost,
        wanted: &[(&str, Role)],
        resolve: Resolve,
    ) -> Result<PluginSet, RunError> {
        load_plugin_set(
            &self.config,
            &self.lock,
            &self.options.host,
            &self.notices,
            host,
            wanted,
            resolve,
        )
    }

    /// Render `manifests` with `render_settings`, then check what they
    /// pulled from upstream against the pins in tazuna.lock, recording new
    /// ones (see [`crate::render::check_pins`]). Secret references stay as they are.
    pub fn render(
        &self,
        host: &PluginHost,
        plugins: &PluginSet,
        manifests: &[&Manifest],
        render_settings: &RenderSettings,
    ) -> Result<Vec<Result<Rendered, RenderError>>, RunError> {
        let mut results = crate::render::render_all(host, plugins, manifests, render_settings);
        self.check_pins(&mut results)?;
        Ok(results)
    }

    /// [`crate::render::check_pins`] for what `results` pulled, if anything.
    pub(super) fn check_pins(
        &self,
        results: &mut [Result<Rendered, RenderError>],
    ) -> Result<(), RunError> {
        let pulled = results
            .iter()
            .any(|r| r.as_ref().is_ok_and(|r| !r.upstream.is_empty()));
        if pulled {
            let notices = self.notices.clone();
            self.lock.update(|lock| {
                for line in crate::render::check_pins(lock, results) {
                    notices(&line);
                }
                Ok::<_, RunError>(())
            })?;
        }
        Ok(())
    }

    /// The settings of a render for `cluster` (or for none, as `build` does).
    pub fn render_settings(&self, cluster: Option<&Cluster>, concurrency: usize) -> RenderSettings {
        RenderSettings {
            environment: self.options.environment.clone(),
            values: self.config.values(),
            cluster: cluster.map(Cluster::info),
            concurrency,
        }
    }

    /// Render `manifests` for `cluster` (plugins see its version and API
    /// groups) and resolve the secret references in their Secrets. Each result
    /// is the rendered manifest or why it did not render.
    pub(super) fn render_for(
        &self,
        manifests: &[&Manifest],
        cluster: &Cluster,
    ) -> Result<Vec<Result<Rendered, Failure>>, RunError> {
        let _render = tracing::info_span!(
            target: tazuna_core::TRACE,
            "render",
            tazuna.manifests = manifests.len(),
        )
        .entered();
        let (host, plugins) = self.source_plugins(manifests)?;
        // Secret references are resolved only here, on the way to a cluster,
        // in rendered Secrets and for the tools plugins run; `tazuna build`
        // prints them as they are. Resolvers load on first use.
        let config = self.config.clone();
        let lock = self.lock.clone();
        let host_settings = self.options.host.clone();
        let notices = self.notices.clone();
        let secrets = Arc::new(
            ProviderSecrets::new(
                self.config.spec.providers.clone(),
                self.config.spec.inputs.clone(),
                secrets::working_dir(&self.options.file),
                self.options.host.clone(),
                Box::new(move |host, kind| {
                    load_plugin_set(
                        &config,
                        &lock,
                        &host_settings,
                        &notices,
                        host,
                        &[(kind, Role::Resolver)],
                        Resolve::Pinned,
                    )
                    .map_err(|error| error.to_string())
                }),
            )
            .with_clusters(Arc::new(management::ManagementSecrets {
                kubeconfig: self.options.connect.kubeconfig.clone(),
            })),
        );
        host.set_tool_secrets(secrets.clone());
        let settings = self.render_settings(Some(cluster), 0);
        let mut results = self.render_marked(&host, &plugins, manifests, &settings)?;
        // A chart gated on a CRD that an earlier layer of this run creates
        // sees it, on the first apply and in a plan, as it will be served.
        for (again, info) in later_capabilities(manifests, &results, &settings) {
            let chosen: Vec<&Manifest> = again.iter().map(|&i| manifests[i]).collect();
            let settings = RenderSettings {
                cluster: Some(info),
                ..settings.clone()
            };
            let rendered = self.render_marked(&host, &plugins, &chosen, &settings)?;
            for (index, result) in again.into_iter().zip(rendered) {
                results[index] = result;
            }
        }
        secrets::resolve_all(&secrets, manifests, &mut results);
        Ok(results
            .into_iter()
            .map(|r| r.map_err(|e| Failure::of(&e)))
            .collect())
    }

    /// [`Self::render_for`], then the live values of generated fields kept
    /// (see [`tazuna_kube::generated`]).
    pub(super) async fn render_on(
        &self,
        manifests: &[&Manifest],
        cluster: &Cluster,
    ) -> Result<Vec<Result<Rendered, Failure>>, RunError> {
        let mut rendered = tokio::task::block_in_place(|| self.render_for(manifests, cluster))?;
        for (manifest, result) in manifests.iter().zip(&mut rendered) {
            let Ok(ok) = result else {
                continue;
            };
            if ok.objects.iter().all(|o| o.generated.is_empty()) {
                continue;
            }
            if let Err(error) = tazuna_kube::generated::keep_live(cluster, manifest, ok).await {
                *result = Err(Failure {
                    message: format!(
                        "cannot read the live objects whose generated fields it keeps: {error}"
                    ),
                    hint: None,
                });
            }
        }
        Ok(rendered)
    }

    /// [`Self::render`], and for the renders that declared themselves not
    /// deterministic (a helm chart with `randAlphaNum`, `genCA`, `uuidv4`;
    /// see the WIT `render-traits`), a second render of the same inputs:
    /// the fields that come out differently are marked generated, and named
    /// (Secrets aside) with a hint to pin them. The second renders run
    /// together, in one pool of workers.
    pub(super) fn render_marked(
        &self,
        host: &PluginHost,
        plugins: &PluginSet,
        manifests: &[&Manifest],
        settings: &RenderSettings,
    ) -> Result<Vec<Result<Rendered, RenderError>>, RunError> {
        let mut results = crate::render::render_all(host, plugins, manifests, settings);
        self.check_pins(&mut results)?;
        let again: Vec<usize> = (0..manifests.len())
            .filter(|&i| {
                results[i]
                    .as_ref()
                    .is_ok_and(|rendered| !rendered.traits.deterministic)
            })
            .collect();
        if again.is_empty() {
            return Ok(results);
        }
        let chosen: Vec<&Manifest> = again.iter().map(|&i| manifests[i]).collect();
        let second = crate::render::render_all(host, plugins, &chosen, settings);
        for (index, second) in again.into_iter().zip(second) {
            if let (Ok(first), Ok(second)) = (&mut results[index], second) {
                for line in mark_generated(first, &second) {
                    self.notice(&line);
                }
            }
        }
        Ok(results)
    }
}

/// Load the plugins `wanted` names (see [`Stack::plugin_set`]); a free
/// function so that the secret-resolver loader can call it without the stack.
pub(super) fn load_plugin_set(
    config: &Config,
    lock: &LockFile,
    host_settings: &HostSettings,
    notices: &Notices,
    host: &PluginHost,
    wanted: &[(&str, Role)],
    resolve: Resolve,
) -> Result<PluginSet, RunError> {
    let resolve = match resolve {
        Resolve::Pinned if host_settings.offline => Resolve::Offline,
        other => other,
    };
    let declared = &config.spec.plugins;
    let needs_oci = declared.iter().any(|d| {
        matches!(d.source, PluginSource::Oci { .. })
            && wanted.iter().any(|(name, _)| *name == d.name)
    });
    if !needs_oci {
        return Ok(PluginSet::load(
            host,
            wanted,
            declared,
            &Default::default(),
        )?);
    }
    let pinned = lock.load()?;
    let blobs = Blobs::new(host_settings.cache_dir.as_deref());
    let fetched = block_on(plugins::fetch_oci(
        declared, wanted, &pinned, resolve, &blobs,
    ))?;
    let set = PluginSet::load(host, wanted, declared, &fetched)?;
    let pins = plugins::new_pins(&set, fetched);
    if !pins.is_empty() {
        lock.update(|lock_file| {
            for (name, pin) in pins {
                notices(&format!(
                    "pinned plugin `{name}` {} ({}) in {}",
                    pin.version,
                    pin.manifest_digest,
                    lock.path.display()
                ));
                lock_file.plugins.insert(name, pin);
            }
            Ok::<_, RunError>(())
        })?;
    }
    Ok(set)
}

/// Mark the fields of `first` that `second`, a render of the same inputs,
/// has otherwise; returns what to tell the user, once per manifest: each
/// value drawn anew, a Secret's with the chart value that would pin it
/// (`admin-password` → `adminPassword`), and the `checksum/…` annotations
/// that only follow such values folded into that note; and objects only one
/// render has.
pub(super) fn mark_generated(first: &mut Rendered, second: &Rendered) -> Vec<String> {
    use std::collections::HashMap;
    use tazuna_core::generated::{Field, Step};
    use tazuna_core::inventory::ObjectRef;
    let others: HashMap<ObjectRef, &serde_json::Value> = second
        .objects
        .iter()
        .filter_map(|o| Some((ObjectRef::of(&o.value)?, &o.value)))
        .collect();
    // A checksum annotation (`checksum/config`) changes because what it
    // sums was drawn anew: a consequence, not a value to pin.
    let is_checksum = |field: &Field| {
        matches!(field.0.as_slice(), [.., Step::Key(annotations), Step::Key(key)]
            if annotations == "annotations" && key.starts_with("checksum/"))
    };
    let mut drawn = Vec::new();
    let mut checksums = 0;
    let mut unmatched = Vec::new();
    for object in &mut first.objects {
        let Some(reference) = ObjectRef::of(&object.value) else {
            continue;
        };
        let Some(other) = others.get(&reference) else {
            unmatched.push(reference.to_string());
            continue;
        };
        object.generated = tazuna_core::generated::differences(&object.value, other);
        let (sums, values): (Vec<&Field>, Vec<&Field>) =
            object.generated.iter().partition(|f| is_checksum(f));
        checksums += sums.len();
        if values.is_empty() {
            continue;
        }
        if reference.is_secret() {
            for field in values {
                let Some(Step::Key(key)) = field.0.last() else {
                    continue;
                };
                drawn.push(format!(
                    "{reference} `{key}` (pin it with the chart value behind it, such as `{}`)",
                    chart_value(key)
                ));
            }
        } else {
            let fields: Vec<String> = values.iter().map(|f| format!("`{f}`")).collect();
            drawn.push(format!("{reference} at {}", fields.join(", ")));
        }
    }
    let mut notes = Vec::new();
    let follow = match checksums {
        0 => String::new(),
        1 => "; the `checksum/…` annotation that follows them is kept too".to_owned(),
        n => format!("; the {n} `checksum/…` annotations that follow them are kept too"),
    };
    if !drawn.is_empty() {
        notes.push(format!(
            "note: manifest `{}` draws values anew on each render; the live values are kept: {}{follow}",
            first.manifest,
            drawn.join("; ")
        ));
    } else if checksums > 0 {
        notes.push(format!(
            "note: manifest `{}`: {checksums} `checksum/…` annotations follow values drawn anew; the live values are kept",
            first.manifest
        ));
    }
    if !unmatched.is_empty() || others.len() != first.objects.len() {
        notes.push(format!(
            "note: manifest `{}` renders a different set of objects on identical inputs{}; pin what chooses them in the values",
            first.manifest,
            if unmatched.is_empty() { String::new() } else { format!(" ({})", unmatched.join(", ")) }
        ));
    }
    notes
}

/// The chart value a Secret's key usually comes from, as charts name their
/// values: `admin-password` → `adminPassword`, `tls.key` → `tlsKey`.
fn chart_value(key: &str) -> String {
    let mut value = String::new();
    for (i, word) in key
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .enumerate()
    {
        // `API` in `API_TOKEN` is a word, not three.
        let word = if word.chars().all(|c| !c.is_ascii_lowercase()) {
            word.to_ascii_lowercase()
        } else {
            word.to_owned()
        };
        let mut chars = word.chars();
        match chars.next() {
            Some(first) if i > 0 => {
                value.push(first.to_ascii_uppercase());
                value.extend(chars);
            }
            Some(first) => {
                value.push(first.to_ascii_lowercase());
                value.extend(chars);
            }
            None => {}
        }
    }
    value
}

/// For each layer of `manifests` after one whose renders hold CRDs the
/// cluster does not serve yet: the manifests of it whose source reads the
/// cluster's capabilities, and the cluster as it will be when their turn
/// comes (those CRDs served). A render that declared it does not read the
/// cluster (`manifests`, `kustomize`) is not done again; one that failed is.
pub(super) fn later_capabilities(
    manifests: &[&Manifest],
    results: &[Result<Rendered, RenderError>],
    settings: &RenderSettings,
) -> Vec<(Vec<usize>, tazuna_core::render::ClusterInfo)> {
    let Some(cluster) = &settings.cluster else {
        return Vec::new();
    };
    let mut definitions: Vec<&serde_json::Value> = Vec::new();
    let mut again = Vec::new();
    for layer in graph::layers(manifests) {
        let reads: Vec<usize> = layer
            .iter()
            .copied()
            .filter(|&i| results[i].as_ref().map_or(true, |r| r.traits.reads_cluster))
            .collect();
        if !definitions.is_empty()
            && !reads.is_empty()
            && let Some(info) = cluster.with_definitions(definitions.iter().copied())
        {
            again.push((reads, info));
        }
        for &i in &layer {
            if let Ok(rendered) = &results[i] {
                definitions.extend(
                    rendered
                        .objects
                        .iter()
                        .map(|o| &o.value)
                        .filter(|v| v["kind"] == "CustomResourceDefinition"),
                );
            }
        }
    }
    again
}

#[cfg(test)]
mod tests {
    use super::chart_value;

    #[test]
    fn a_secret_key_names_the_chart_value_as_charts_spell_them() {
        assert_eq!(chart_value("admin-password"), "adminPassword");
        assert_eq!(chart_value("tls.key"), "tlsKey");
        assert_eq!(chart_value("API_TOKEN"), "apiToken");
        assert_eq!(chart_value("adminPassword"), "adminPassword");
    }
}
