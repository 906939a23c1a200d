//! Go Tazuna's hint files: a `tazuna.hint.yaml` (kind `TazunaHint`) beside a
//! helmfile says which state values (`vars` of the manifest's `helmfile:`
//! block) the helmfile expects, of which type and format, which are required
//! (alone, with or without others, or one of a group), and their defaults.
//!
//! ```yaml
//! apiVersion: tazuna.pepabo.com/v1
//! kind: TazunaHint
//! spec:
//!   vars:
//!     domain:   { type: string, required: true, format: hostname }
//!     replicas: { type: int, default: 2 }
//!     tlsSecret: { type: string, required_with: [domain] }
//!     issuer:   { type: string, required_without: [tlsSecret] }
//!     email:    { type: string, format: email, oneof_required: [issuer] }
//! ```
//!
//! The loader reads it when it reads the manifest: a default fills a var the
//! manifest does not give (as a `from: static` var, so helmfile gets it), and
//! a broken rule is an error pointing at the var in `tazuna.yaml`, or at the
//! rule in the hint file. Vars read from the environment or 1Password are
//! given, but their values are never read here: type and format are checked
//! on static values (and on environment values with `environmentValues`).

use super::*;

/// The hint file's name, in the helmfile's directory.
pub(super) const HINT_FILE: &str = "tazuna.hint.yaml";

/// The hint file's `kind`.
const HINT_KIND: &str = "TazunaHint";

/// The keys a rule may have.
const RULE_KEYS: &[&str] = &[
    "type",
    "required",
    "default",
    "format",
    "required_with",
    "required_without",
    "oneof_required",
    "description",
];

/// A value's type, as hint files spell them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Type {
    String,
    Int,
    Float,
    Bool,
    List,
    Map,
}

impl Type {
    fn parse(text: &str) -> Option<Type> {
        Some(match text {
            "string" | "str" => Type::String,
            "int" | "integer" => Type::Int,
            "float" | "number" => Type::Float,
            "bool" | "boolean" => Type::Bool,
            "list" | "array" | "slice" => Type::List,
            "map" | "object" | "dict" => Type::Map,
            _ => return None,
        })
    }

    /// The type with its article, for messages.
    fn name(self) -> &'static str {
        match self {
            Type::String => "a string",
            Type::Int => "an int",
            Type::Float => "a float",
            Type::Bool => "a bool",
            Type::List => "a list",
            Type::Map => "a map",
        }
    }

    fn matches(self, value: &serde_json::Value) -> bool {
        use serde_json::Value as J;
        match (self, value) {
            (Type::String, J::String(_)) | (Type::Bool, J::Bool(_)) => true,
            (Type::Int, J::Number(n)) => n.is_i64() || n.is_u64(),
            (Type::Float, J::Number(_)) => true,
            (Type::List, J::Array(_)) | (Type::Map, J::Object(_)) => true,
            _ => false,
        }
    }
}

/// The formats a string value may be held to.
const FORMATS: &[&str] = &[
    "email", "hostname", "url", "uri", "ipv4", "ipv6", "ip", "cidr", "semver", "duration", "uuid",
    "dns1123",
];

/// Whether `text` is in `format` (one of [`FORMATS`]).
fn in_format(format: &str, text: &str) -> bool {
    static PATTERNS: LazyLock<Vec<(&str, Regex)>> = LazyLock::new(|| {
        [
            ("email", r"^[^@\s]+@[^@\s]+\.[^@\s]+$"),
            (
                "hostname",
                r"^(?i)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$",
            ),
            ("url", r"^[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/?#]+[^\s]*$"),
            ("uri", r"^[a-zA-Z][a-zA-Z0-9+.-]*:[^\s]+$"),
            ("duration", r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"),
            (
                "uuid",
                r"^(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
            ),
            ("dns1123", r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"),
        ]
        .into_iter()
        .map(|(name, pattern)| (name, Regex::new(pattern).unwrap()))
        .collect()
    });
    match format {
        "ipv4" => text.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => text.parse::<std::net::Ipv6Addr>().is_ok(),
        "ip" => text.parse::<std::net::IpAddr>().is_ok(),
        "cidr" => text.split_once('/').is_some_and(|(address, bits)| {
            let max = match address.parse::<std::net::IpAddr>() {
                Ok(std::net::IpAddr::V4(_)) => 32,
                Ok(std::net::IpAddr::V6(_)) => 128,
                Err(_) => return false,
            };
            bits.parse::<u8>().is_ok_and(|bits| bits <= max)
        }),
        "semver" => semver::Version::parse(text).is_ok(),
        "hostname" if text.len() > 253 => false,
        name => PATTERNS
            .iter()
            .find(|(known, _)| *known == name)
            .is_some_and(|(_, pattern)| pattern.is_match(text)),
    }
}

/// One var's rules, read from the hint file.
struct Rule {
    name: String,
    kind: Option<Type>,
    required: bool,
    default: Option<serde_json::Value>,
    format: Option<String>,
    required_with: Vec<String>,
    required_without: Vec<String>,
    oneof_required: Vec<String>,
    description: Option<String>,
}

/// Read the hint file beside the helmfile at `helmfile` (the manifest's
/// `path`, relative to `doc`), if there is one, check `config` (the
/// manifest's `helmfile:` block at `block`) against it, and fill in defaults.
pub(super) fn apply(
    doc: &Document,
    data: &serde_json::Value,
    manifest: &str,
    block: &YamlPath,
    helmfile: &str,
    config: &mut serde_json::Value,
) -> Result<(), ConfigError> {
    let path = join_clean(&doc.dir, Path::new(helmfile));
    let dir = if path.is_dir() {
        path
    } else {
        parent_dir(&path)
    };
    let file = dir.join(HINT_FILE);
    if !file.is_file() {
        return Ok(());
    }
    let hints = Document::read(&file, data, Some(doc.value_span(block)))?;
    let rules = read_rules(&hints)?;
    if !config.is_object() {
        *config = serde_json::Value::Object(serde_json::Map::new());
    }
    let from_environment = config["environmentValues"].as_bool() == Some(true);
    let environment = data.get("Values").and_then(|v| v.as_object());
    let vars_path = block.key("vars");
    let declared: BTreeSet<String> = config["vars"]
        .as_object()
        .map(|vars| vars.keys().cloned().collect())
        .unwrap_or_default();
    let given = |name: &str| {
        declared.contains(name)
            || (from_environment && environment.is_some_and(|values| values.contains_key(name)))
    };
    // Defaults first: a defaulted var counts as given for the other rules.
    let mut defaulted = BTreeSet::new();
    for rule in &rules {
        if let Some(default) = &rule.default
            && !given(&rule.name)
        {
            let vars = config
                .as_object_mut()
                .expect("made an object above")
                .entry("vars")
                .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
            if let Some(vars) = vars.as_object_mut() {
                vars.insert(
                    rule.name.clone(),
                    serde_json::json!({ "from": "static", "static": default }),
                );
            }
            defaulted.insert(rule.name.clone());
        }
    }
    let present = |name: &str| given(name) || defaulted.contains(name);
    let shown = file.display().to_string();
    let missing = |rule: &Rule, why: String| {
        let about = rule
            .description
            .as_deref()
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        ConfigError::Invalid {
            message: format!(
                "manifest `{manifest}`: helmfile var `{}`{about} is required {why}, by `{shown}`",
                rule.name
            ),
            hint: Some(format!(
                "give it in the manifest's `helmfile.vars`, e.g. `{}: {{ from: static, static: … }}`",
                rule.name
            )),
            at: doc.value_span(block),
        }
    };
    for rule in &rules {
        let name = rule.name.as_str();
        if present(name) {
            let value = static_value(config, name).or_else(|| {
                (!declared.contains(name) && from_environment)
                    .then(|| environment.and_then(|values| values.get(name)).cloned())
                    .flatten()
            });
            let Some(value) = value else {
                continue;
            };
            let at = doc.value_span(&vars_path.key(name));
            if let Some(kind) = rule.kind
                && !kind.matches(&value)
            {
                return Err(ConfigError::Invalid {
                    message: format!(
                        "manifest `{manifest}`: helmfile var `{name}` must be {}, by `{shown}`",
                        kind.name()
                    ),
                    hint: Some(format!("give `{name}` {} value", kind.name())),
                    at,
                });
            }
            if let (Some(format), Some(text)) = (&rule.format, value.as_str())
                && !in_format(format, text)
            {
                return Err(ConfigError::Invalid {
                    message: format!(
                        "manifest `{manifest}`: helmfile var `{name}` is not a valid {format}, by `{shown}`"
                    ),
                    hint: Some(format!("give `{name}` a value in the format `{format}`")),
                    at,
                });
            }
            continue;
        }
        if rule.required {
            return Err(missing(rule, "and not given".to_owned()));
        }
        if let Some(other) = rule.required_with.iter().find(|other| present(other)) {
            return Err(missing(rule, format!("with `{other}`, which is given")));
        }
        if let Some(other) = rule.required_without.iter().find(|other| !present(other)) {
            return Err(missing(
                rule,
                format!("without `{other}`, which is not given"),
            ));
        }
        if !rule.oneof_required.is_empty() && !rule.oneof_required.iter().any(|o| present(o)) {
            return Err(missing(
                rule,
                format!(
                    "unless one of {} is given",
                    rule.oneof_required
                        .iter()
                        .map(|o| format!("`{o}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// The value of a `from: static` var of `config`, if `name` is one.
fn static_value(config: &serde_json::Value, name: &str) -> Option<serde_json::Value> {
    let var = config["vars"].get(name)?;
    if var["from"].as_str() != Some("static") {
        return None;
    }
    ["static", "staticSlice", "staticMap"]
        .iter()
        .find_map(|key| var.get(*key).cloned())
}

/// The rules of a hint file, checked.
fn read_rules(hints: &Document) -> Result<Vec<Rule>, ConfigError> {
    let root = YamlPath::root();
    let Some(top) = hints.value.as_mapping() else {
        return Err(hints.invalid(
            &root,
            format!("`{}` is not a mapping", hints.file().display()),
            Some(format!("a hint file starts with `kind: {HINT_KIND}`")),
        ));
    };
    for (key, value) in top {
        let key = key.as_str().unwrap_or_default();
        match key {
            "apiVersion" if value.as_str() == Some(API_VERSION) => {}
            "apiVersion" => {
                return Err(hints.invalid(
                    &root.key(key),
                    format!("`apiVersion` of a hint file must be `{API_VERSION}`"),
                    None,
                ));
            }
            "kind" if value.as_str() == Some(HINT_KIND) => {}
            "kind" => {
                return Err(hints.invalid(
                    &root.key(key),
                    format!("`kind` of a hint file must be `{HINT_KIND}`"),
                    None,
                ));
            }
            "spec" | "metadata" => {}
            other => {
                return Err(hints.invalid_key(
                    &root.key(other),
                    format!("unknown field `{other}` in a hint file"),
                    Some("a hint file has `apiVersion`, `kind` and `spec.vars`".to_owned()),
                ));
            }
        }
    }
    if top.get("kind").and_then(Value::as_str) != Some(HINT_KIND) {
        return Err(hints.invalid(
            &root,
            format!("`{}` has no `kind: {HINT_KIND}`", hints.file().display()),
            Some(format!("a hint file starts with `kind: {HINT_KIND}`")),
        ));
    }
    let spec_path = root.key("spec");
    let spec = top.get("spec").cloned().unwrap_or(Value::Null);
    let vars = match &spec {
        Value::Null => return Ok(Vec::new()),
        Value::Mapping(spec) => {
            for key in spec.keys() {
                let key = key.as_str().unwrap_or_default();
                if key != "vars" {
                    return Err(hints.invalid_key(
                        &spec_path.key(key),
                        format!("unknown field `{key}` in `spec` of a hint file"),
                        Some("`spec` has `vars`: the helmfile's values, by name".to_owned()),
                    ));
                }
            }
            spec.get("vars").cloned().unwrap_or(Value::Null)
        }
        other => {
            return Err(ConfigError::WrongType {
                field: "spec".to_owned(),
                expected: "a mapping".to_owned(),
                found: describe(other),
                at: hints.value_span(&spec_path),
            });
        }
    };
    let vars_path = spec_path.key("vars");
    let vars = match vars {
        Value::Null => return Ok(Vec::new()),
        Value::Mapping(vars) => vars,
        other => {
            return Err(ConfigError::WrongType {
                field: "spec.vars".to_owned(),
                expected: "a mapping of var names to rules".to_owned(),
                found: describe(&other),
                at: hints.value_span(&vars_path),
            });
        }
    };
    let mut rules = Vec::new();
    for (name, body) in &vars {
        let name = name.as_str().unwrap_or_default().to_owned();
        let path = vars_path.key(&name);
        let body = match body {
            Value::Null => Mapping::new(),
            Value::Mapping(body) => body.clone(),
            other => {
                return Err(ConfigError::WrongType {
                    field: format!("spec.vars.{name}"),
                    expected: "a mapping of rules".to_owned(),
                    found: describe(other),
                    at: hints.value_span(&path),
                });
            }
        };
        rules.push(read_rule(hints, &path, name, &body)?);
    }
    Ok(rules)
}

fn read_rule(
    hints: &Document,
    path: &YamlPath,
    name: String,
    body: &Mapping,
) -> Result<Rule, ConfigError> {
    let wrong = |key: &str, expected: &str, found: &Value| ConfigError::WrongType {
        field: format!("spec.vars.{name}.{key}"),
        expected: expected.to_owned(),
        found: describe(found),
        at: hints.value_span(&path.key(key)),
    };
    let names = |key: &str| -> Result<Vec<String>, ConfigError> {
        match body.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::String(one)) => Ok(vec![one.clone()]),
            Some(Value::Sequence(list)) => list
                .iter()
                .map(|item| {
                    item.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| wrong(key, "a list of var names", item))
                })
                .collect(),
            Some(other) => Err(wrong(key, "a list of var names", other)),
        }
    };
    for key in body.keys() {
        let key = key.as_str().unwrap_or_default();
        if !RULE_KEYS.contains(&key) {
            return Err(hints.invalid_key(
                &path.key(key),
                format!("unknown rule `{key}` for var `{name}`"),
                Some(match suggest(key, RULE_KEYS.iter().copied()) {
                    Some(near) => format!("did you mean `{near}`?"),
                    None => format!("rules are {}", RULE_KEYS.join(", ")),
                }),
            ));
        }
    }
    let kind = match body.get("type") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(Type::parse(text).ok_or_else(|| {
            hints.invalid(
                &path.key("type"),
                format!("unknown type `{text}` for var `{name}`"),
                Some("types are string, int, float, bool, list and map".to_owned()),
            )
        })?),
        Some(other) => return Err(wrong("type", "a type name", other)),
    };
    let required = match body.get("required") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(wrong("required", "`true` or `false`", other)),
    };
    let format = match body.get("format") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) if FORMATS.contains(&text.as_str()) => {
            if kind.is_some_and(|k| k != Type::String) {
                return Err(hints.invalid(
                    &path.key("format"),
                    format!("var `{name}` has a `format`, which only a string can have"),
                    Some("drop `format`, or make the var `type: string`".to_owned()),
                ));
            }
            Some(text.clone())
        }
        Some(Value::String(text)) => {
            return Err(hints.invalid(
                &path.key("format"),
                format!("unknown format `{text}` for var `{name}`"),
                Some(format!("formats are {}", FORMATS.join(", "))),
            ));
        }
        Some(other) => return Err(wrong("format", "a format name", other)),
    };
    let description = match body.get("description") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.clone()),
        Some(other) => return Err(wrong("description", "a string", other)),
    };
    let default = match body.get("default") {
        None | Some(Value::Null) => None,
        Some(value) => {
            let json = to_json(hints, &path.key("default"), value)?;
            let at = &path.key("default");
            if let Some(kind) = kind
                && !kind.matches(&json)
            {
                return Err(hints.invalid(
                    at,
                    format!("the default of var `{name}` is not {}", kind.name()),
                    None,
                ));
            }
            if let (Some(format), Some(text)) = (&format, json.as_str())
                && !in_format(format, text)
            {
                return Err(hints.invalid(
                    at,
                    format!("the default of var `{name}` is not a valid {format}"),
                    None,
                ));
            }
            Some(json)
        }
    };
    Ok(Rule {
        required_with: names("required_with")?,
        required_without: names("required_without")?,
        oneof_required: names("oneof_required")?,
        name,
        kind,
        required,
        default,
        format,
        description,
    })
}

#[cfg(test)]
mod tests {
    use super::in_format;

    #[test]
    fn formats_accept_and_refuse_as_named() {
        for (format, good, bad) in [
            ("email", "ops@example.com", "ops.example.com"),
            ("hostname", "api.example.com", "api_example.com"),
            ("url", "https://example.com/x", "example.com"),
            ("ipv4", "10.0.0.1", "10.0.0.256"),
            ("ipv6", "fd00::1", "10.0.0.1"),
            ("cidr", "10.0.0.0/8", "10.0.0.0/33"),
            ("semver", "1.2.3", "v1.2"),
            ("duration", "1h30m", "90 minutes"),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567"),
            ("dns1123", "cert-manager", "Cert_Manager"),
        ] {
            assert!(in_format(format, good), "{format}: {good}");
            assert!(!in_format(format, bad), "{format}: {bad}");
        }
    }
}
