//! The rest of `spec`: tests, version and type checks, context patterns,
//! plugins, providers and the stack name.

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
            if name == "name" || name == "type" || name == "handover" {
                fixed.insert(key.clone(), value.clone());
            } else if PROVIDER_BLOCKS.contains(&name) || plugin_names.contains(name) {
                blocks.insert(name.to_owned(), value.clone());
            } else {
                let candidates: Vec<&str> = ["name", "type", "handover"]
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
        let handover = match fixed.handover {
            None => None,
            Some(raw) => {
                let here = at.key("handover");
                if !crate::handover::HANDOVER_TYPES.contains(&kind.as_str()) {
                    return Err(doc.invalid(
                        &here,
                        format!("provider `{name}` of type `{kind}` cannot hand its sync to External Secrets"),
                        Some(format!(
                            "handover is for providers of type {}",
                            crate::handover::HANDOVER_TYPES
                                .iter()
                                .map(|t| format!("`{t}`"))
                                .collect::<Vec<_>>()
                                .join(" and ")
                        )),
                    ));
                }
                let store = raw.external_secrets.store;
                if !matches!(store.kind.as_str(), "SecretStore" | "ClusterSecretStore") {
                    return Err(doc.invalid(
                        &here.key("externalSecrets").key("store").key("kind"),
                        format!("a store of kind `{}`", store.kind),
                        Some("the store is a `SecretStore` or a `ClusterSecretStore`".to_owned()),
                    ));
                }
                Some(crate::handover::Handover {
                    store_kind: store.kind,
                    store_name: store.name,
                    refresh_interval: raw
                        .external_secrets
                        .refresh_interval
                        .unwrap_or_else(|| "1h".to_owned()),
                })
            }
        };
        providers.push(Provider {
            name,
            kind,
            config,
            origin: doc.value_span(&at).location,
            handover,
        });
    }
    Ok(providers)
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
