//! `spec.environments` and `spec.rollout`: the clusters of a file, their
//! labels and values, and the waves a fleet run goes in.

use super::*;

pub(super) fn build_environments(
    doc: &Document,
    path: &YamlPath,
    raw: BTreeMap<String, RawEnvironment>,
) -> Result<BTreeMap<String, Environment>, ConfigError> {
    let mut environments = BTreeMap::new();
    let mut names: BTreeMap<String, YamlPath> = BTreeMap::new();
    for (name, raw) in raw {
        let at = path.key(&name);
        let context_matches = raw.context_matches.unwrap_or_default();
        compile_patterns(doc, &at.key("context_matches"), &context_matches)?;
        let values = values(doc, &at.key("values"), raw.values)?;
        let labels = raw.labels.unwrap_or_default();
        check_labels(doc, &at.key("labels"), &labels)?;
        let identity = cluster(raw.cluster);
        let own = Target {
            name: name.clone(),
            environment: name.clone(),
            context: raw.context.clone(),
            kubeconfig: raw
                .kubeconfig
                .as_deref()
                .map(|k| join_clean(&doc.dir, Path::new(k))),
            labels: labels.clone(),
            values: values.clone(),
            identity: identity.clone(),
            cluster_api: None,
        };
        let cluster_api = match raw.cluster_api {
            None => None,
            Some(source) => {
                let set = [
                    ("clusters", raw.clusters.is_some()),
                    ("context", raw.context.is_some()),
                    ("kubeconfig", raw.kubeconfig.is_some()),
                ];
                if let Some((field, _)) = set.into_iter().find(|(_, set)| *set) {
                    return Err(doc.invalid(
                        &at.key(field),
                        format!("environment `{name}` has both `{field}` and `clusterAPI`"),
                        Some("a Cluster API environment's clusters, and how to reach them, come from the management cluster; give `clusterAPI` its `context` and `kubeconfig`".into()),
                    ));
                }
                let selector = match source.selector {
                    None => None,
                    Some(text) => {
                        Some(crate::selector::Selector::parse(&text).map_err(|error| {
                            doc.invalid(
                                &at.key("clusterAPI").key("selector"),
                                error.to_string(),
                                crate::hint::Hint::hint(&error),
                            )
                        })?)
                    }
                };
                Some(ClusterApi {
                    context: source.context,
                    kubeconfig: source
                        .kubeconfig
                        .as_deref()
                        .map(|k| join_clean(&doc.dir, Path::new(k))),
                    namespace: source.namespace,
                    selector,
                })
            }
        };
        let clusters = match raw.clusters {
            None if cluster_api.is_some() => Vec::new(),
            None => vec![own],
            Some(entries) => {
                let set = [
                    ("context", raw.context.is_some()),
                    ("kubeconfig", raw.kubeconfig.is_some()),
                ];
                if let Some((field, _)) = set.into_iter().find(|(_, set)| *set) {
                    return Err(doc.invalid(
                        &at.key(field),
                        format!("environment `{name}` has both `{field}` and `clusters`"),
                        Some(format!(
                            "give each of `spec.environments.{name}.clusters` its own `{field}`"
                        )),
                    ));
                }
                if entries.is_empty() {
                    return Err(doc.invalid(
                        &at.key("clusters"),
                        format!("environment `{name}` has an empty `clusters`"),
                        Some("name at least one cluster, or leave `clusters` out".into()),
                    ));
                }
                let mut targets = Vec::with_capacity(entries.len());
                for (cluster_name, entry) in entries {
                    let entry_at = at.key("clusters").key(&cluster_name);
                    let mut merged = labels.clone();
                    let own_labels = entry.labels.unwrap_or_default();
                    check_labels(doc, &entry_at.key("labels"), &own_labels)?;
                    merged.extend(own_labels);
                    let own_values = values_of(doc, &entry_at.key("values"), entry.values)?;
                    targets.push(Target {
                        name: cluster_name,
                        environment: name.clone(),
                        context: entry.context,
                        kubeconfig: entry
                            .kubeconfig
                            .as_deref()
                            .map(|k| join_clean(&doc.dir, Path::new(k))),
                        labels: merged,
                        values: merge_values(values.clone(), own_values),
                        identity: cluster(entry.cluster).or_else(|| identity.clone()),
                        cluster_api: None,
                    });
                }
                targets
            }
        };
        for target in &clusters {
            let target_at = if target.name == name {
                at.clone()
            } else {
                at.key("clusters").key(&target.name)
            };
            check_cluster_name(doc, &target_at, &target.name)?;
            if let Some(first) = names.insert(target.name.clone(), target_at.clone()) {
                let first = doc.key_span(&first).location;
                return Err(doc.invalid_key(
                    &target_at,
                    format!(
                        "cluster name `{}` is used twice (first at {first})",
                        target.name
                    ),
                    Some(
                        "cluster names are unique in the file: they key bindings in tazuna.lock and select clusters with `--cluster`".into(),
                    ),
                ));
            }
        }
        environments.insert(
            name.clone(),
            Environment {
                name,
                context_matches,
                context_match_mode: raw.context_match_mode.map(match_mode),
                values,
                labels,
                cluster: identity,
                clusters,
                cluster_api,
            },
        );
    }
    Ok(environments)
}

/// `values`, `{}` when absent or null.
fn values(
    doc: &Document,
    path: &YamlPath,
    raw: Option<Value>,
) -> Result<serde_json::Value, ConfigError> {
    Ok(values_of(doc, path, raw)?.unwrap_or_else(|| serde_json::Value::Object(Default::default())))
}

fn values_of(
    doc: &Document,
    path: &YamlPath,
    raw: Option<Value>,
) -> Result<Option<serde_json::Value>, ConfigError> {
    match raw {
        None | Some(Value::Null) => Ok(None),
        Some(values) => to_json(doc, path, &values).map(Some),
    }
}

/// `over` merged onto `base`: maps key by key, anything else replaced.
pub(crate) fn merge_values(
    base: serde_json::Value,
    over: Option<serde_json::Value>,
) -> serde_json::Value {
    match (base, over) {
        (base, None) => base,
        (serde_json::Value::Object(mut base), Some(serde_json::Value::Object(over))) => {
            for (key, value) in over {
                let merged = match base.remove(&key) {
                    Some(old) => merge_values(old, Some(value)),
                    None => value,
                };
                base.insert(key, merged);
            }
            serde_json::Value::Object(base)
        }
        (_, Some(over)) => over,
    }
}

/// Label keys and values as Kubernetes allows them, so selectors can name them.
fn check_labels(
    doc: &Document,
    path: &YamlPath,
    labels: &BTreeMap<String, String>,
) -> Result<(), ConfigError> {
    for (key, value) in labels {
        let selector = format!("{key}={value}");
        if let Err(error) = crate::selector::Selector::parse(&selector) {
            return Err(doc.invalid(
                &path.key(key),
                format!("invalid label `{key}: {value}`: {}", error.reason),
                Some(
                    "label keys are letters, digits, `-`, `_`, `.` and `/`; values the same without `/`, at most 63 characters".into(),
                ),
            ));
        }
    }
    Ok(())
}

/// A cluster name keys tazuna.lock and names the cluster in output.
fn check_cluster_name(doc: &Document, path: &YamlPath, name: &str) -> Result<(), ConfigError> {
    let valid = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        return Ok(());
    }
    Err(doc.invalid_key(
        path,
        format!("invalid cluster name `{name}`"),
        Some("use up to 63 letters, digits, `-`, `_` and `.`".into()),
    ))
}

/// `spec.rollout`, checked against the clusters the file declares.
pub(super) fn build_rollout(
    doc: &Document,
    path: &YamlPath,
    raw: Option<RawRollout>,
    environments: &BTreeMap<String, Environment>,
) -> Result<Rollout, ConfigError> {
    let Some(raw) = raw else {
        return Ok(Rollout::default());
    };
    let clusters: Vec<&str> = environments
        .values()
        .flat_map(|e| e.clusters.iter().map(|t| t.name.as_str()))
        .collect();
    let mut waves = Vec::new();
    for (i, wave) in raw.waves.unwrap_or_default().into_iter().enumerate() {
        let at = path.key("waves").index(i);
        let environment_names = wave.environments.unwrap_or_default();
        for (j, name) in environment_names.iter().enumerate() {
            if !environments.contains_key(name) {
                let declared: Vec<String> = environments.keys().cloned().collect();
                return Err(doc.invalid(
                    &at.key("environments").index(j),
                    format!("wave {} names environment `{name}`, which `spec.environments` does not declare", i + 1),
                    Some(match suggest(name, declared.iter().map(String::as_str)) {
                        Some(s) => format!("did you mean `{s}`?"),
                        None => format!("declared: {}", backticked(&declared)),
                    }),
                ));
            }
        }
        let cluster_names = wave.clusters.unwrap_or_default();
        for (j, name) in cluster_names.iter().enumerate() {
            if !clusters.contains(&name.as_str()) {
                return Err(doc.invalid(
                    &at.key("clusters").index(j),
                    format!(
                        "wave {} names cluster `{name}`, which no environment declares",
                        i + 1
                    ),
                    Some(match suggest(name, clusters.iter().copied()) {
                        Some(s) => format!("did you mean `{s}`?"),
                        None => format!(
                            "declared: {}",
                            backticked(
                                &clusters.iter().map(|c| (*c).to_owned()).collect::<Vec<_>>()
                            )
                        ),
                    }),
                ));
            }
        }
        let selector = match wave.selector {
            None => None,
            Some(text) => Some(crate::selector::Selector::parse(&text).map_err(|error| {
                doc.invalid(
                    &at.key("selector"),
                    error.to_string(),
                    crate::hint::Hint::hint(&error),
                )
            })?),
        };
        if environment_names.is_empty() && cluster_names.is_empty() && selector.is_none() {
            return Err(doc.invalid(
                &at,
                format!("wave {} selects no cluster", i + 1),
                Some("give it `environments`, `clusters` or a `selector`".into()),
            ));
        }
        waves.push(Wave {
            name: wave.name.unwrap_or_else(|| format!("wave {}", i + 1)),
            environments: environment_names,
            clusters: cluster_names,
            selector,
        });
    }
    let max_parallel = raw.max_parallel.unwrap_or(Rollout::DEFAULT_MAX_PARALLEL);
    if max_parallel == 0 {
        return Err(doc.invalid(
            &path.key("maxParallel"),
            "`maxParallel` is 0, so no cluster would run".into(),
            Some("use 1 to run clusters one at a time".into()),
        ));
    }
    Ok(Rollout {
        waves,
        max_parallel,
        on_failure: match raw.on_failure {
            None | Some(RawOnFailure::Stop) => OnFailure::Stop,
            Some(RawOnFailure::FinishWave) => OnFailure::FinishWave,
        },
    })
}

fn backticked(names: &[String]) -> String {
    if names.is_empty() {
        return "none".to_owned();
    }
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
