//! The rest of `spec`: tests, version and type checks, context patterns,
//! plugins, providers, environments and the stack name.

use super::*;

pub(super) fn build_tests(
    doc: &Document,
    path: &YamlPath,
    raw: Option<Vec<RawTest>>,
) -> Result<Vec<Test>, ConfigError> {
    raw.into_iter()
        .flatten()
        .enumerate()
        .map(|(i, test)| build_test(doc, &path.index(i), test))
        .collect()
}

pub(super) fn build_test(
    doc: &Document,
    path: &YamlPath,
    raw: RawTest,
) -> Result<Test, ConfigError> {
    let (kind, block, other) = match raw.kind {
        RawTestType::WaitUntil => ("WaitUntil", "waitUntil", "existNonExist"),
        RawTestType::ExistNonExist => ("ExistNonExist", "existNonExist", "waitUntil"),
    };
    let has_other = match raw.kind {
        RawTestType::WaitUntil => raw.exist_non_exist.is_some(),
        RawTestType::ExistNonExist => raw.wait_until.is_some(),
    };
    if has_other {
        return Err(ConfigError::Invalid {
            message: format!("test of type `{kind}` has an `{other}` block"),
            hint: Some(format!(
                "remove `{other}`, or move it into a test of its own"
            )),
            at: doc.key_span(&path.key(other)),
        });
    }
    let missing = || ConfigError::MissingTestBlock {
        kind: kind.to_owned(),
        block: block.to_owned(),
        at: doc.value_span(&path.key("type")),
    };
    let check = match raw.kind {
        RawTestType::WaitUntil => {
            let args = raw.wait_until.ok_or_else(missing)?;
            if let Err(CheckError::Compile {
                reason, position, ..
            }) = Condition::compile(&args.condition)
            {
                let mut at = doc.value_span(&path.key("waitUntil").key("condition"));
                point_into(&mut at, &args.condition, position);
                return Err(ConfigError::InvalidCondition {
                    expression: args.condition,
                    reason,
                    at,
                });
            }
            Check::WaitUntil(WaitUntil {
                resource: ResourceType {
                    api_version: args.resource.api_version,
                    kind: args.resource.kind,
                },
                namespace: args.namespace.filter(|ns| !ns.is_empty()),
                name: args.name,
                condition: args.condition,
            })
        }
        RawTestType::ExistNonExist => {
            let args = raw.exist_non_exist.ok_or_else(missing)?;
            Check::ExistNonExist(ExistNonExist {
                resource: ResourceType {
                    api_version: args.resource.api_version,
                    kind: args.resource.kind,
                },
                namespace: args.namespace.filter(|ns| !ns.is_empty()),
                name: args.name,
                should_exist: args.should_exist,
            })
        }
    };
    Ok(Test {
        check,
        min_consecutive_success_count: raw.min_consecutive_success_count.unwrap_or(1).max(1),
        min_consecutive_failure_count: raw.min_consecutive_failure_count.filter(|n| *n > 0),
        timeout: raw
            .timeout_seconds
            .filter(|secs| *secs > 0)
            .map(Duration::from_secs),
        interval: Duration::from_secs(raw.interval_seconds.unwrap_or(0)),
        origin: doc.value_span(path).location,
    })
}

/// Narrow `span`, which covers a one-line `expression`, to the character at
/// `position` within it, when the file spells the expression out verbatim
/// (plain or quoted without escapes) so that the columns line up.
pub(super) fn point_into(span: &mut Span, expression: &str, position: Option<(usize, usize)>) {
    let Some((1, column)) = position else {
        return;
    };
    let rest: String = span
        .source_line
        .chars()
        .skip(span.location.column - 1)
        .collect();
    let quote = if rest.starts_with(expression) {
        0
    } else if rest.starts_with(['"', '\'']) && rest[1..].starts_with(expression) {
        1
    } else {
        return;
    };
    // The parser reports the end of input one past the last character.
    let offset = column.clamp(1, expression.chars().count().max(1)) - 1;
    span.location.column += quote + offset;
    span.width = 1;
}

pub(super) fn check_type_meta(doc: &Document, raw: &RawRoot) -> Result<(), ConfigError> {
    let root = YamlPath::root();
    if let Some(value) = raw.api_version.as_deref().filter(|v| !v.is_empty())
        && value != API_VERSION
    {
        return Err(ConfigError::ApiVersion {
            value: value.to_owned(),
            at: doc.value_span(&root.key("apiVersion")),
        });
    }
    if let Some(value) = raw.kind.as_deref().filter(|v| !v.is_empty())
        && value != KIND
    {
        return Err(ConfigError::Kind {
            value: value.to_owned(),
            at: doc.value_span(&root.key("kind")),
        });
    }
    Ok(())
}

/// Check `minimumSupportedTazunaVersion` before anything else, so that a file written for a
/// newer tazuna says so instead of tripping over fields this one does not know.
///
/// Only the running version's major.minor.patch counts: a `1.4.0-dev` build may process a
/// file that needs `1.4.0`, as Go Tazuna lets local builds through.
pub(super) fn check_minimum_version(
    doc: &Document,
    running: &semver::Version,
) -> Result<Option<semver::Version>, ConfigError> {
    let path = YamlPath::root()
        .key("spec")
        .key("minimumSupportedTazunaVersion");
    let value = doc
        .value
        .get("spec")
        .and_then(|spec| spec.get("minimumSupportedTazunaVersion"));
    let text = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(text)) => text.trim().to_owned(),
        // An unquoted `1.4` is a YAML number; read it as the version it was meant to be.
        Some(Value::Number(number)) => number.to_string(),
        Some(other) => {
            return Err(ConfigError::WrongType {
                field: path.to_string(),
                expected: "a string".to_owned(),
                found: describe(other),
                at: doc.value_span(&path),
            });
        }
    };
    if text.is_empty() {
        return Ok(None);
    }
    let required = parse_version(&text).map_err(|reason| ConfigError::InvalidVersion {
        value: text.clone(),
        reason,
        at: doc.value_span(&path),
    })?;
    let running_core = semver::Version::new(running.major, running.minor, running.patch);
    if running_core < required {
        return Err(ConfigError::TooOld {
            required,
            running: running.clone(),
            at: doc.value_span(&path),
        });
    }
    Ok(Some(required))
}

/// Parse a version with an optional leading `v`; `1.4` reads as `1.4.0`.
pub(super) fn parse_version(text: &str) -> Result<semver::Version, String> {
    let bare = text.strip_prefix('v').unwrap_or(text);
    match semver::Version::parse(bare) {
        Ok(version) => Ok(version),
        Err(err) => {
            let core_dots = bare
                .split(['-', '+'])
                .next()
                .unwrap_or_default()
                .matches('.')
                .count();
            if core_dots < 2 && !bare.contains(['-', '+']) {
                let padded = format!("{bare}{}", ".0".repeat(2 - core_dots));
                if let Ok(version) = semver::Version::parse(&padded) {
                    return Ok(version);
                }
            }
            Err(err.to_string())
        }
    }
}

pub(super) fn compile_patterns(
    doc: &Document,
    path: &YamlPath,
    patterns: &[String],
) -> Result<(), ConfigError> {
    for (i, pattern) in patterns.iter().enumerate() {
        if let Err(err) = Regex::new(pattern) {
            let reason = err.to_string();
            let reason = reason
                .lines()
                .rev()
                .find(|line| !line.trim().is_empty())
                .unwrap_or_default()
                .trim_start_matches("error: ")
                .to_owned();
            return Err(ConfigError::InvalidRegex {
                pattern: pattern.clone(),
                reason,
                at: doc.value_span(&path.index(i)),
            });
        }
    }
    Ok(())
}

pub(super) fn match_mode(raw: RawMatchMode) -> MatchMode {
    match raw {
        RawMatchMode::Or => MatchMode::Or,
        RawMatchMode::And => MatchMode::And,
    }
}

pub(super) fn cluster(raw: Option<RawCluster>) -> Option<Cluster> {
    raw.map(|raw| Cluster {
        uid: raw.uid.filter(|uid| !uid.is_empty()),
    })
}

pub(super) fn build_plugins(
    doc: &Document,
    path: &YamlPath,
    raw: Vec<RawPlugin>,
) -> Result<Vec<Plugin>, ConfigError> {
    static DIGEST: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^sha256:[0-9a-f]{64}$").unwrap());
    let mut plugins: Vec<Plugin> = Vec::with_capacity(raw.len());
    for (i, raw) in raw.into_iter().enumerate() {
        let at = path.index(i);
        let name = raw.name;
        if !name_pattern().is_match(&name) {
            return Err(doc.invalid(
                &at.key("name"),
                format!("invalid plugin name `{name}`"),
                Some("plugin names use letters, digits, `-` and `_` only".to_owned()),
            ));
        }
        if MANIFEST_FIELDS.contains(&name.as_str()) {
            return Err(doc.invalid(
                &at.key("name"),
                format!("plugin name `{name}` is a manifest field"),
                Some(
                    "a plugin's name is also the key of its config block; pick another name"
                        .to_owned(),
                ),
            ));
        }
        if let Some(first) = plugins.iter().find(|p| p.name == name) {
            return Err(doc.invalid(
                &at.key("name"),
                format!("duplicate plugin name `{name}`"),
                Some(format!("the first `{name}` is at {}", first.origin)),
            ));
        }
        let source = if let Some(reference) = raw.source.strip_prefix("oci://") {
            if !is_oci_reference(reference) {
                return Err(invalid_source(doc, &at, &raw.source));
            }
            PluginSource::Oci {
                reference: reference.to_owned(),
            }
        } else if let Some(file) = raw.source.strip_prefix("file://") {
            if file.is_empty() {
                return Err(invalid_source(doc, &at, &raw.source));
            }
            PluginSource::File {
                path: join_clean(&doc.dir, Path::new(file)),
            }
        } else {
            return Err(invalid_source(doc, &at, &raw.source));
        };
        let version = match raw.version {
            None => None,
            Some(text) => Some(semver::VersionReq::parse(&text).map_err(|err| {
                doc.invalid(
                    &at.key("version"),
                    format!("invalid version constraint `{text}` for plugin `{name}`: {err}"),
                    Some("write a semver constraint such as `^1.2` or `=1.2.3`".to_owned()),
                )
            })?),
        };
        if let Some(digest) = &raw.digest
            && !DIGEST.is_match(digest)
        {
            return Err(doc.invalid(
                &at.key("digest"),
                format!("invalid digest `{digest}` for plugin `{name}`"),
                Some("a digest is `sha256:` followed by 64 lowercase hex digits".to_owned()),
            ));
        }
        let grants = raw.grants.unwrap_or_default();
        if let Some(g) = grants.iter().position(|grant| grant.trim().is_empty()) {
            return Err(doc.invalid(
                &at.key("grants").index(g),
                format!("empty grant for plugin `{name}`"),
                None,
            ));
        }
        plugins.push(Plugin {
            name,
            source,
            version,
            digest: raw.digest,
            grants,
            origin: doc.value_span(&at).location,
        });
    }
    Ok(plugins)
}

pub(super) fn invalid_source(doc: &Document, at: &YamlPath, source: &str) -> ConfigError {
    doc.invalid(
        &at.key("source"),
        format!("invalid plugin source `{source}`"),
        Some("use `oci://registry/repository` or `file://./plugin.wasm`".to_owned()),
    )
}

pub(super) fn build_providers(
    doc: &Document,
    path: &YamlPath,
    raw: Vec<Value>,
    plugin_names: &BTreeSet<String>,
) -> Result<Vec<Provider>, ConfigError> {
    let mut providers: Vec<Provider> = Vec::with_capacity(raw.len());
    for (i, item) in raw.iter().enumerate() {
        let at = path.index(i);
        let Some(map) = item.as_mapping() else {
            return Err(ConfigError::WrongType {
                field: at.to_string(),
                expected: "a mapping".to_owned(),
                found: describe(item),
                at: doc.value_span(&at),
            });
        };
        let mut fixed = Mapping::new();
        let mut blocks = BTreeMap::new();
        for (key, value) in map {
            let name = key.as_str().unwrap_or_default();
            if name == "name" || name == "type" {
                fixed.insert(key.clone(), value.clone());
            } else if PROVIDER_BLOCKS.contains(&name) || plugin_names.contains(name) {
                blocks.insert(name.to_owned(), value.clone());
            } else {
                let candidates: Vec<&str> = ["name", "type"]
                    .into_iter()
                    .chain(PROVIDER_BLOCKS.iter().copied())
                    .chain(plugin_names.iter().map(String::as_str))
                    .collect();
                return Err(ConfigError::UnknownField {
                    field: name.to_owned(),
                    section: "provider".to_owned(),
                    suggestion: suggest(name, candidates.iter().copied()),
                    expected: candidates.iter().map(|c| (*c).to_owned()).collect(),
                    at: doc.key_span(&at.key(name)),
                });
            }
        }
        let fixed: RawProvider = doc.deserialize(&at, &Value::Mapping(fixed))?;
        let name = fixed.name;
        if name.is_empty() {
            return Err(doc.invalid(&at.key("name"), "empty provider name".to_owned(), None));
        }
        let reserved = match name.as_str() {
            "default-op" => Some("`default-op` is the built-in 1Password provider"),
            "env" => {
                Some("`env` is the built-in provider for environment variables (`ref+env:NAME`)")
            }
            _ => None,
        };
        if let Some(why) = reserved {
            return Err(doc.invalid(
                &at.key("name"),
                format!("provider name `{name}` is reserved"),
                Some(format!("{why}; pick another name")),
            ));
        }
        if let Some(first) = providers.iter().find(|p| p.name == name) {
            return Err(doc.invalid(
                &at.key("name"),
                format!("duplicate provider name `{name}`"),
                Some(format!("the first `{name}` is at {}", first.origin)),
            ));
        }
        let kind = fixed.kind;
        let known_kind = PROVIDER_BLOCKS.contains(&kind.as_str()) || plugin_names.contains(&kind);
        if !known_kind {
            let expected: Vec<String> = PROVIDER_BLOCKS
                .iter()
                .map(|s| (*s).to_owned())
                .chain(plugin_names.iter().cloned())
                .collect();
            return Err(ConfigError::UnknownVariant {
                field: "type".to_owned(),
                suggestion: suggest(&kind, expected.iter().map(String::as_str)),
                value: kind,
                expected,
                at: doc.value_span(&at.key("type")),
            });
        }
        if let Some(other) = blocks.keys().find(|key| **key != kind) {
            return Err(ConfigError::Invalid {
                message: format!("provider `{name}` of type `{kind}` has an `{other}` block"),
                hint: Some(format!("remove `{other}`, or set `type: {other}`")),
                at: doc.key_span(&at.key(other)),
            });
        }
        let block_path = at.key(&kind);
        let config = match blocks.remove(&kind) {
            None | Some(Value::Null) => serde_json::Value::Object(serde_json::Map::new()),
            Some(value @ Value::Mapping(_)) => to_json(doc, &block_path, &value)?,
            Some(other) => {
                return Err(ConfigError::WrongType {
                    field: block_path.to_string(),
                    expected: "a mapping".to_owned(),
                    found: describe(&other),
                    at: doc.value_span(&block_path),
                });
            }
        };
        if kind == "envfile" {
            let path_ok = config
                .get("path")
                .and_then(serde_json::Value::as_str)
                .is_some_and(|p| !p.is_empty());
            if !path_ok {
                return Err(ConfigError::MissingField {
                    field: "path".to_owned(),
                    section: "`envfile`".to_owned(),
                    at: doc.value_span(&block_path),
                });
            }
        }
        providers.push(Provider {
            name,
            kind,
            config,
            origin: doc.value_span(&at).location,
        });
    }
    Ok(providers)
}

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

/// A stack name is recorded in state annotations and shown in messages: a
/// short, plain name.
pub(super) fn check_stack_name(
    doc: &Document,
    path: &YamlPath,
    name: &str,
) -> Result<(), ConfigError> {
    let valid = !name.is_empty()
        && name.len() <= 200
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if valid {
        return Ok(());
    }
    Err(ConfigError::Invalid {
        message: format!("invalid stack name `{name}`"),
        hint: Some(
            "use up to 200 letters, digits, `-`, `_`, `.` and `/`, such as `platform/base`".into(),
        ),
        at: doc.value_span(path),
    })
}
