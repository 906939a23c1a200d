//! Reading a `tazuna.yaml`: parse it, expand `includes` and Go's `parallel`, and validate
//! everything that needs no knowledge of plugins.
//!
//! Each file is parsed twice: once by serde_yaml into a `Value` (the data) and once by
//! yaml-rust2 into a position index (see [`super::source`]). Typed parts are deserialized
//! with serde_path_to_error, so a serde error knows its YAML path, and the index turns the
//! path into a line and column.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use serde::de::DeserializeOwned;
use serde_yaml::{Mapping, Value};

use super::error::{ConfigError, Span, suggest};
use super::model::{
    Check, Cluster, Environment, ExistNonExist, Manifest, MatchMode, Plugin, PluginSource,
    Provider, ResourceType, Spec, Test, Wait, WaitUntil,
};
use super::raw::{
    BUILTIN_BLOCKS, MANIFEST_FIELDS, PROVIDER_BLOCKS, RawCluster, RawEnvironment, RawManifest,
    RawMatchMode, RawPlugin, RawProvider, RawRoot, RawSpec, RawTest, RawTestType, RawWait,
};
use super::source::{Seg, Source, YamlPath, join_clean, parent_dir};
use super::{API_VERSION, Config, KIND, LoadOptions, RESERVED_NAME};
use crate::check::{CheckError, Condition};

/// A parsed file: its text and index, its data, and the directory its paths are relative to.
struct Document {
    source: Source,
    value: Value,
    dir: PathBuf,
}

impl Document {
    /// Read and parse `file`. `included_at` is the include entry that names it, if any, so a
    /// missing included file is reported there.
    fn read(
        file: &Path,
        environment: Option<&str>,
        included_at: Option<Box<Span>>,
    ) -> Result<Self, ConfigError> {
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Err(match included_at {
                    Some(at) => ConfigError::IncludeNotFound {
                        file: file.to_path_buf(),
                        at,
                    },
                    None => ConfigError::NotFound {
                        file: file.to_path_buf(),
                    },
                });
            }
            Err(source) => {
                return Err(ConfigError::Read {
                    file: file.to_path_buf(),
                    source,
                });
            }
        };
        let text = substitute_environment(&text, environment);
        let source = Source::new(file.to_path_buf(), text);
        let mut value: Value = match serde_yaml::from_str(source.text()) {
            Ok(value) => value,
            Err(err) => return Err(syntax_error(&source, &err)),
        };
        // Go Tazuna reads YAML 1.1 merge keys (`<<: *base`); serde_yaml needs asking.
        if let Err(err) = value.apply_merge() {
            return Err(syntax_error(&source, &err));
        }
        Ok(Self {
            dir: parent_dir(file),
            source,
            value,
        })
    }

    fn value_span(&self, path: &YamlPath) -> Box<Span> {
        self.source.value_span(path)
    }

    fn key_span(&self, path: &YamlPath) -> Box<Span> {
        self.source.key_span(path)
    }

    fn file(&self) -> &Path {
        &self.source.file
    }

    /// Deserialize `value`, found at `base`, and point any error at its line.
    fn deserialize<T: DeserializeOwned>(
        &self,
        base: &YamlPath,
        value: &Value,
    ) -> Result<T, ConfigError> {
        serde_path_to_error::deserialize(value).map_err(|err| self.serde_error(base, &err))
    }

    fn serde_error(
        &self,
        base: &YamlPath,
        err: &serde_path_to_error::Error<serde_yaml::Error>,
    ) -> ConfigError {
        let mut path = base.clone();
        for segment in err.path().iter() {
            match segment {
                serde_path_to_error::Segment::Seq { index } => path = path.index(*index),
                serde_path_to_error::Segment::Map { key }
                | serde_path_to_error::Segment::Enum { variant: key } => path = path.key(key),
                serde_path_to_error::Segment::Unknown => break,
            }
        }
        let message = err.inner().to_string();
        self.classify(&path, &message)
    }

    /// Turn serde's standard messages into specific variants.
    fn classify(&self, path: &YamlPath, message: &str) -> ConfigError {
        static UNKNOWN_FIELD: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r"^unknown field `(.*?)`, (?:expected (.*)|there are no fields)$").unwrap()
        });
        static MISSING_FIELD: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"^missing field `(.*)`$").unwrap());
        static INVALID_TYPE: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"^invalid type: (.*), expected (.*)$").unwrap());
        static INVALID_VALUE: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"^invalid value: (.*), expected (.*)$").unwrap());
        static UNKNOWN_VARIANT: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"^unknown variant `(.*?)`, expected (.*)$").unwrap());

        if let Some(caps) = UNKNOWN_FIELD.captures(message) {
            let field = caps[1].to_owned();
            let expected = backticked_words(caps.get(2).map_or("", |m| m.as_str()));
            let parent = if path.0.last() == Some(&Seg::Key(field.clone())) {
                path.parent()
            } else {
                path.clone()
            };
            return ConfigError::UnknownField {
                suggestion: suggest(&field, expected.iter().map(String::as_str)),
                at: self.key_span(&parent.key(&field)),
                section: section(&parent),
                field,
                expected,
            };
        }
        if let Some(caps) = MISSING_FIELD.captures(message) {
            return ConfigError::MissingField {
                field: caps[1].to_owned(),
                section: section(path),
                at: self.value_span(path),
            };
        }
        if let Some(caps) = INVALID_TYPE.captures(message) {
            return ConfigError::WrongType {
                field: path.to_string(),
                expected: humanize_expected(&caps[2]),
                found: humanize_found(&caps[1]),
                at: self.value_span(path),
            };
        }
        if let Some(caps) = INVALID_VALUE.captures(message) {
            return ConfigError::InvalidValue {
                field: path.to_string(),
                expected: humanize_expected(&caps[2]),
                found: humanize_found(&caps[1]),
                at: self.value_span(path),
            };
        }
        if let Some(caps) = UNKNOWN_VARIANT.captures(message) {
            let value = caps[1].to_owned();
            let expected = backticked_words(&caps[2]);
            return ConfigError::UnknownVariant {
                field: path.last_key().unwrap_or("value").to_owned(),
                suggestion: suggest(&value, expected.iter().map(String::as_str)),
                value,
                expected,
                at: self.value_span(path),
            };
        }
        ConfigError::Invalid {
            message: format!("invalid `{path}`: {message}"),
            hint: None,
            at: self.value_span(path),
        }
    }

    fn invalid(&self, path: &YamlPath, message: String, hint: Option<String>) -> ConfigError {
        ConfigError::Invalid {
            message,
            hint,
            at: self.value_span(path),
        }
    }
}

/// Go Tazuna renders `{{ .Environment }}` in tazuna.yaml with the `-e` name (empty without
/// `-e`). That one variable is all Go files use; no other template syntax is interpreted.
fn substitute_environment(text: &str, environment: Option<&str>) -> String {
    static TEMPLATE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\{\{-?\s*\.Environment\s*-?\}\}").unwrap());
    TEMPLATE
        .replace_all(text, regex::NoExpand(environment.unwrap_or("")))
        .into_owned()
}

fn syntax_error(source: &Source, err: &serde_yaml::Error) -> ConfigError {
    static POSITION: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r" at line \d+ column \d+").unwrap());
    let message = err.to_string();
    let message = POSITION.replace(&message, "").into_owned();
    let (mut line, mut column) = err
        .location()
        .map_or((1, 1), |location| (location.line(), location.column()));
    // libyaml often gives up at the end of the file, past the last line that has text;
    // point just after that line instead, where the reader sees the problem.
    let lines: Vec<&str> = source.text().lines().collect();
    if lines
        .get(line - 1)
        .is_none_or(|text| text.trim().is_empty())
        && let Some((index, text)) = lines[..(line - 1).min(lines.len())]
            .iter()
            .enumerate()
            .rev()
            .find(|(_, text)| !text.trim().is_empty())
    {
        line = index + 1;
        column = text.trim_end().chars().count() + 1;
    }
    let at = source.span_at(line, column, 1);
    ConfigError::Syntax { message, at }
}

/// What a mapping at `path` is, for messages such as "unknown field `x` in manifest".
fn section(path: &YamlPath) -> String {
    match path.0.as_slice() {
        [] => "the root".to_owned(),
        [Seg::Key(spec)] if spec == "spec" => "`spec`".to_owned(),
        [Seg::Key(spec), Seg::Key(envs), Seg::Key(name)]
            if spec == "spec" && envs == "environments" =>
        {
            format!("environment `{name}`")
        }
        [.., Seg::Key(list), Seg::Index(_)] => match list.as_str() {
            "manifests" | "children" => "manifest".to_owned(),
            "tests" => "test".to_owned(),
            "plugins" => "plugin".to_owned(),
            "providers" => "provider".to_owned(),
            "includes" => "include".to_owned(),
            other => format!("`{other}` entry"),
        },
        [.., Seg::Key(key)] => format!("`{key}`"),
        [.., Seg::Index(_)] => "list entry".to_owned(),
    }
}

fn backticked_words(text: &str) -> Vec<String> {
    static WORD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"`([^`]*)`").unwrap());
    WORD.captures_iter(text)
        .map(|caps| caps[1].to_owned())
        .collect()
}

fn humanize_expected(expected: &str) -> String {
    static STRUCT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^struct \w+$").unwrap());
    match expected {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a non-negative integer".to_owned(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "an integer".to_owned(),
        "a map" => "a mapping".to_owned(),
        _ if STRUCT.is_match(expected) => "a mapping".to_owned(),
        _ if expected.starts_with("enum ") => "a string".to_owned(),
        _ => expected.to_owned(),
    }
}

fn humanize_found(found: &str) -> String {
    static QUOTED: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r#"^(string|character) "(.*)"$"#).unwrap());
    match QUOTED.captures(found) {
        Some(caps) => format!("{} `{}`", &caps[1], &caps[2]),
        None => found.replace("map", "mapping"),
    }
}

fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("boolean `{b}`"),
        Value::Number(n) => format!("number `{n}`"),
        Value::String(s) => format!("string `{s}`"),
        Value::Sequence(_) => "a sequence".to_owned(),
        Value::Mapping(_) => "a mapping".to_owned(),
        Value::Tagged(tagged) => format!("tagged value `{}`", tagged.tag),
    }
}

fn to_json(
    doc: &Document,
    path: &YamlPath,
    value: &Value,
) -> Result<serde_json::Value, ConfigError> {
    serde_json::to_value(value).map_err(|err| {
        doc.invalid(
            path,
            format!("`{path}` cannot be represented as JSON: {err}"),
            Some("use string keys in this mapping".to_owned()),
        )
    })
}

/// The regex that manifest names (and plugin names) must match.
fn name_pattern() -> &'static Regex {
    static NAME: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^[a-zA-Z0-9_-]+$").unwrap());
    &NAME
}

/// The key of the per-type block for a manifest `type`. Go spells the GenesisSecret block
/// `genesisSecret` while its type is `genesissecret`.
pub(crate) fn block_key(kind: &str) -> &str {
    if kind == "genesissecret" {
        "genesisSecret"
    } else {
        kind
    }
}

/// A manifest with the spans that later checks point at.
struct Entry {
    manifest: Manifest,
    type_at: Span,
    depends_at: Vec<Span>,
}

/// A name claimed by a manifest (or by a `parallel` parent, whose children replace it).
struct Claim {
    name: String,
    at: Box<Span>,
}

/// What a `parallel` parent passes on to its children.
struct Parent {
    depends_on: Vec<(String, Box<Span>)>,
    tags: Vec<String>,
    namespace: Option<String>,
    wait: Option<Wait>,
    prune: Option<bool>,
}

enum Nesting<'a> {
    Root,
    Included,
    ParallelChild(&'a Parent),
}

struct Expander<'o> {
    environment: Option<&'o str>,
    plugin_names: BTreeSet<String>,
    files: Vec<PathBuf>,
    entries: Vec<Entry>,
    claims: Vec<Claim>,
}

impl Expander<'_> {
    fn manifest_items<'v>(
        &self,
        doc: &Document,
        spec_value: Option<&'v Value>,
    ) -> Result<&'v [Value], ConfigError> {
        let spec_path = YamlPath::root().key("spec");
        let path = spec_path.key("manifests");
        match spec_value {
            None | Some(Value::Null) => Err(ConfigError::NoManifests {
                at: doc.key_span(&spec_path),
            }),
            Some(Value::Sequence(items)) if items.is_empty() => Err(ConfigError::NoManifests {
                at: doc.value_span(&path),
            }),
            Some(Value::Sequence(items)) => Ok(items),
            Some(other) => Err(ConfigError::WrongType {
                field: path.to_string(),
                expected: "a sequence".to_owned(),
                found: describe(other),
                at: doc.value_span(&path),
            }),
        }
    }

    fn expand_included(&mut self, doc: &Document) -> Result<(), ConfigError> {
        let root = YamlPath::root();
        let raw: RawRoot = deserialize_root(doc)?;
        check_type_meta(doc, &raw)?;
        let spec_path = root.key("spec");
        let Some(spec) = raw.spec else {
            return Err(ConfigError::MissingField {
                field: "spec".to_owned(),
                section: "the root".to_owned(),
                at: doc.value_span(&root),
            });
        };
        // Plugins and the cluster binding belong to the root file, which pins them; other
        // spec fields of an included file are ignored, as Go Tazuna does.
        for (field, present) in [
            ("plugins", spec.plugins.is_some()),
            ("cluster", spec.cluster.is_some()),
            ("stack", spec.stack.is_some()),
        ] {
            if present {
                return Err(ConfigError::Invalid {
                    message: format!("an included file cannot declare `spec.{field}`"),
                    hint: Some(format!("move `{field}` to the root tazuna.yaml")),
                    at: doc.key_span(&spec_path.key(field)),
                });
            }
        }
        let items = self.manifest_items(doc, spec.manifests.as_ref())?;
        for (i, item) in items.iter().enumerate() {
            self.expand(
                doc,
                &spec_path.key("manifests").index(i),
                item,
                &Nesting::Included,
            )?;
        }
        Ok(())
    }

    /// Split a manifest mapping into its fixed fields and its per-type blocks.
    fn split(
        &self,
        doc: &Document,
        path: &YamlPath,
        map: &Mapping,
    ) -> Result<(Mapping, BTreeMap<String, Value>), ConfigError> {
        let kind = map.get("type").and_then(Value::as_str);
        let mut fixed = Mapping::new();
        let mut blocks = BTreeMap::new();
        for (key, value) in map {
            let Some(name) = key.as_str() else {
                return Err(doc.invalid(
                    path,
                    format!("manifest key {} is not a string", describe(key)),
                    None,
                ));
            };
            if MANIFEST_FIELDS.contains(&name) {
                fixed.insert(key.clone(), value.clone());
            } else if BUILTIN_BLOCKS.contains(&name) || self.plugin_names.contains(name) {
                blocks.insert(name.to_owned(), value.clone());
            } else if kind == Some(name) {
                return Err(ConfigError::Invalid {
                    message: format!("unknown field `{name}` in manifest"),
                    hint: Some(format!(
                        "declare a plugin named `{name}` under `spec.plugins` to configure it here"
                    )),
                    at: doc.key_span(&path.key(name)),
                });
            } else {
                let candidates: Vec<&str> = MANIFEST_FIELDS
                    .iter()
                    .chain(BUILTIN_BLOCKS)
                    .copied()
                    .chain(self.plugin_names.iter().map(String::as_str))
                    .collect();
                return Err(ConfigError::UnknownField {
                    field: name.to_owned(),
                    section: "manifest".to_owned(),
                    suggestion: suggest(name, candidates.iter().copied()),
                    expected: candidates.iter().map(|c| (*c).to_owned()).collect(),
                    at: doc.key_span(&path.key(name)),
                });
            }
        }
        Ok((fixed, blocks))
    }

    fn expand(
        &mut self,
        doc: &Document,
        path: &YamlPath,
        item: &Value,
        nesting: &Nesting<'_>,
    ) -> Result<(), ConfigError> {
        let Some(map) = item.as_mapping() else {
            return Err(ConfigError::WrongType {
                field: path.to_string(),
                expected: "a mapping".to_owned(),
                found: describe(item),
                at: doc.value_span(path),
            });
        };
        let (fixed, mut blocks) = self.split(doc, path, map)?;
        let raw: RawManifest = doc.deserialize(path, &Value::Mapping(fixed))?;

        if let Some(includes) = &raw.includes {
            let includes_path = path.key("includes");
            match nesting {
                Nesting::Root => {}
                Nesting::Included => {
                    return Err(ConfigError::NestedIncludes {
                        file: doc.file().to_path_buf(),
                        at: doc.key_span(&includes_path),
                    });
                }
                Nesting::ParallelChild(_) => {
                    return Err(ConfigError::Invalid {
                        message: "a `parallel` child cannot have `includes`".to_owned(),
                        hint: Some("move the includes to `spec.manifests`".to_owned()),
                        at: doc.key_span(&includes_path),
                    });
                }
            }
            // Go Tazuna ignores every other field of an include entry, `name` included.
            for (j, include) in includes.iter().enumerate() {
                let at = doc.value_span(&includes_path.index(j).key("path"));
                let file = join_clean(&doc.dir, Path::new(&include.path));
                let included = Document::read(&file, self.environment, Some(at))?;
                self.files.push(file);
                self.expand_included(&included)?;
            }
            return Ok(());
        }

        let Some(name) = raw.name.clone() else {
            return Err(ConfigError::MissingField {
                field: "name".to_owned(),
                section: "manifest".to_owned(),
                at: doc.value_span(path),
            });
        };
        let Some(kind) = raw.kind.clone() else {
            return Err(ConfigError::MissingField {
                field: "type".to_owned(),
                section: format!("manifest `{name}`"),
                at: doc.value_span(path),
            });
        };
        let name_at = doc.value_span(&path.key("name"));
        let mut depends_on: Vec<(String, Box<Span>)> = raw
            .depends_on
            .iter()
            .flatten()
            .enumerate()
            .map(|(k, dep)| (dep.clone(), doc.value_span(&path.key("dependsOn").index(k))))
            .collect();
        let mut tags = raw.tags.clone().unwrap_or_default();
        let mut namespace = raw.namespace.clone().filter(|ns| !ns.is_empty());
        let mut wait = parse_wait(doc, &path.key("wait"), raw.wait.as_ref())?;
        let mut prune = raw.prune;
        let tests = build_tests(doc, &path.key("tests"), raw.tests)?;

        if let Nesting::ParallelChild(parent) = nesting {
            let mut inherited = parent.depends_on.clone();
            inherited.append(&mut depends_on);
            depends_on = inherited;
            let mut inherited_tags = parent.tags.clone();
            for tag in tags {
                if !inherited_tags.contains(&tag) {
                    inherited_tags.push(tag);
                }
            }
            tags = inherited_tags;
            namespace = namespace.or_else(|| parent.namespace.clone());
            wait = wait.or(parent.wait);
            prune = prune.or(parent.prune);
        }

        if kind == "parallel" {
            if matches!(nesting, Nesting::ParallelChild(_)) {
                return Err(ConfigError::Invalid {
                    message: "`parallel` manifests do not nest".to_owned(),
                    hint: Some("list these children in the outer `parallel` instead".to_owned()),
                    at: doc.value_span(&path.key("type")),
                });
            }
            self.claims.push(Claim { name, at: name_at });
            let parent = Parent {
                depends_on,
                tags,
                namespace,
                wait,
                prune,
            };
            let first_child = self.entries.len();
            self.expand_parallel(doc, path, blocks.remove("parallel"), &parent)?;
            // The parent's tests ran after all its children; in declaration order the last
            // child is applied last, so its tests run at the same point.
            if let Some(last) = self.entries[first_child..].last_mut() {
                last.manifest.tests.extend(tests);
            }
            return Ok(());
        }

        let key = block_key(&kind);
        let block_path = path.key(key);
        let config = match blocks.remove(key) {
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
        if kind == "helmfile" && wait.is_none() {
            wait = go_helmfile_wait(&config);
        }
        let (depends_on, depends_at) = depends_on.into_iter().map(|(name, at)| (name, *at)).unzip();
        self.claims.push(Claim {
            name: name.clone(),
            at: name_at,
        });
        self.entries.push(Entry {
            manifest: Manifest {
                name,
                description: raw.description,
                kind,
                path: raw.path,
                tags,
                depends_on,
                namespace,
                wait: wait.unwrap_or_default(),
                prune: prune.unwrap_or(false),
                tests,
                config,
                base_dir: doc.dir.clone(),
                origin: doc.value_span(path).location,
            },
            type_at: *doc.value_span(&path.key("type")),
            depends_at,
        });
        Ok(())
    }

    /// Go Tazuna's `type: parallel`: its children become manifests of their own at the
    /// parent's position, sharing the parent's `dependsOn` and tags.
    fn expand_parallel(
        &mut self,
        doc: &Document,
        path: &YamlPath,
        block: Option<Value>,
        parent: &Parent,
    ) -> Result<(), ConfigError> {
        let block_path = path.key("parallel");
        let children_path = block_path.key("children");
        let no_children = || ConfigError::Invalid {
            message: "`parallel` manifest has no `children`".to_owned(),
            hint: Some("list at least one manifest under `parallel.children`".to_owned()),
            at: doc.value_span(&path.key("type")),
        };
        let Some(block) = block else {
            return Err(no_children());
        };
        let Some(map) = block.as_mapping() else {
            return Err(ConfigError::WrongType {
                field: block_path.to_string(),
                expected: "a mapping".to_owned(),
                found: describe(&block),
                at: doc.value_span(&block_path),
            });
        };
        for key in map.keys() {
            let key = key.as_str().unwrap_or_default();
            if key != "children" {
                return Err(ConfigError::UnknownField {
                    field: key.to_owned(),
                    section: "`parallel`".to_owned(),
                    suggestion: suggest(key, ["children"]),
                    expected: vec!["children".to_owned()],
                    at: doc.key_span(&block_path.key(key)),
                });
            }
        }
        let children = match map.get("children") {
            Some(Value::Sequence(children)) if !children.is_empty() => children,
            None | Some(Value::Null) | Some(Value::Sequence(_)) => return Err(no_children()),
            Some(other) => {
                return Err(ConfigError::WrongType {
                    field: children_path.to_string(),
                    expected: "a sequence".to_owned(),
                    found: describe(other),
                    at: doc.value_span(&children_path),
                });
            }
        };
        for (c, child) in children.iter().enumerate() {
            self.expand(
                doc,
                &children_path.index(c),
                child,
                &Nesting::ParallelChild(parent),
            )?;
        }
        Ok(())
    }
}

/// Go Tazuna kept a helmfile manifest's wait in its block (`helmfile.wait`,
/// `helmfile.timeoutSeconds`); they count when the manifest has no `wait` of its own.
fn go_helmfile_wait(config: &serde_json::Value) -> Option<Wait> {
    let wait = config.get("wait").and_then(serde_json::Value::as_bool);
    let timeout = config
        .get("timeoutSeconds")
        .and_then(serde_json::Value::as_u64)
        .filter(|secs| *secs > 0)
        .map(Duration::from_secs);
    match (wait, timeout) {
        (Some(false), _) => Some(Wait::Off),
        (None, None) => None,
        (_, timeout) => Some(Wait::On {
            timeout: timeout.unwrap_or(Wait::DEFAULT_TIMEOUT),
        }),
    }
}

/// Whether `reference` (after `oci://`) has the shape
/// `host[:port]/repo[:tag][@digest]`: a tag's `:` is in the last path segment,
/// a port's in the first.
fn is_oci_reference(reference: &str) -> bool {
    let named = reference
        .split_once('@')
        .map_or(reference, |(named, _)| named);
    let Some((host, path)) = named.split_once('/') else {
        return false;
    };
    // As docker reads it: a host has a `.` or a `:`, or is `localhost`.
    if !(host.contains(['.', ':']) || host == "localhost") {
        return false;
    }
    let repository = match path.rsplit_once('/') {
        Some((parent, last)) => (parent, last.split_once(':').map_or(last, |(l, _)| l)),
        None => ("", path.split_once(':').map_or(path, |(p, _)| p)),
    };
    !host.is_empty() && !repository.1.is_empty() && !repository.0.starts_with('/')
}

fn parse_wait(
    doc: &Document,
    path: &YamlPath,
    value: Option<&Value>,
) -> Result<Option<Wait>, ConfigError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(true)) => Ok(Some(Wait::default())),
        Some(Value::Bool(false)) => Ok(Some(Wait::Off)),
        Some(value @ Value::Mapping(_)) => {
            let raw: RawWait = doc.deserialize(path, value)?;
            if raw.enabled == Some(false) {
                return Ok(Some(Wait::Off));
            }
            let timeout = match raw.timeout_seconds {
                None | Some(0) => Wait::DEFAULT_TIMEOUT,
                Some(secs) => Duration::from_secs(secs),
            };
            Ok(Some(Wait::On { timeout }))
        }
        Some(other) => Err(ConfigError::WrongType {
            field: path.to_string(),
            expected: "`true`, `false` or a mapping with `enabled` and `timeoutSeconds`".to_owned(),
            found: describe(other),
            at: doc.value_span(path),
        }),
    }
}

fn build_tests(
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

fn build_test(doc: &Document, path: &YamlPath, raw: RawTest) -> Result<Test, ConfigError> {
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
fn point_into(span: &mut Span, expression: &str, position: Option<(usize, usize)>) {
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

fn deserialize_root(doc: &Document) -> Result<RawRoot, ConfigError> {
    let root = YamlPath::root();
    match &doc.value {
        Value::Mapping(_) => doc.deserialize(&root, &doc.value),
        Value::Null => Err(doc.invalid(
            &root,
            format!("`{}` is empty", doc.file().display()),
            Some(
                "a tazuna.yaml has `apiVersion`, `kind` and `spec`; `tazuna init` writes one"
                    .to_owned(),
            ),
        )),
        other => Err(doc.invalid(
            &root,
            format!(
                "`{}` is {}, not a mapping",
                doc.file().display(),
                describe(other)
            ),
            Some(
                "a tazuna.yaml has `apiVersion`, `kind` and `spec`; `tazuna init` writes one"
                    .to_owned(),
            ),
        )),
    }
}

fn check_type_meta(doc: &Document, raw: &RawRoot) -> Result<(), ConfigError> {
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
fn check_minimum_version(
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
fn parse_version(text: &str) -> Result<semver::Version, String> {
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

fn compile_patterns(
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

fn match_mode(raw: RawMatchMode) -> MatchMode {
    match raw {
        RawMatchMode::Or => MatchMode::Or,
        RawMatchMode::And => MatchMode::And,
    }
}

fn cluster(raw: Option<RawCluster>) -> Option<Cluster> {
    raw.map(|raw| Cluster {
        uid: raw.uid.filter(|uid| !uid.is_empty()),
    })
}

fn build_plugins(
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

fn invalid_source(doc: &Document, at: &YamlPath, source: &str) -> ConfigError {
    doc.invalid(
        &at.key("source"),
        format!("invalid plugin source `{source}`"),
        Some("use `oci://registry/repository` or `file://./plugin.wasm`".to_owned()),
    )
}

fn build_providers(
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

fn build_environments(
    doc: &Document,
    path: &YamlPath,
    raw: BTreeMap<String, RawEnvironment>,
) -> Result<BTreeMap<String, Environment>, ConfigError> {
    let mut environments = BTreeMap::new();
    for (name, raw) in raw {
        let at = path.key(&name);
        let context_matches = raw.context_matches.unwrap_or_default();
        compile_patterns(doc, &at.key("context_matches"), &context_matches)?;
        let values = match raw.values {
            None | Some(Value::Null) => serde_json::Value::Object(serde_json::Map::new()),
            Some(values) => to_json(doc, &at.key("values"), &values)?,
        };
        environments.insert(
            name.clone(),
            Environment {
                name,
                context_matches,
                context_match_mode: raw.context_match_mode.map(match_mode),
                values,
                cluster: cluster(raw.cluster),
            },
        );
    }
    Ok(environments)
}

/// Names: pattern, reserved word, uniqueness (in declaration order, after expansion).
fn check_names(claims: &[Claim]) -> Result<(), ConfigError> {
    let mut seen: HashMap<&str, &Claim> = HashMap::new();
    for claim in claims {
        let name = claim.name.as_str();
        let reason = if name.is_empty() {
            Some("names must not be empty")
        } else if name == RESERVED_NAME {
            Some("the name is reserved")
        } else if !name_pattern().is_match(name) {
            Some("names may contain only letters, digits, `-` and `_`")
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(ConfigError::InvalidName {
                name: name.to_owned(),
                reason: reason.to_owned(),
                at: claim.at.clone(),
            });
        }
        if let Some(first) = seen.get(name) {
            return Err(ConfigError::DuplicateName {
                name: name.to_owned(),
                first: first.at.location.clone(),
                at: claim.at.clone(),
            });
        }
        seen.insert(name, claim);
    }
    Ok(())
}

fn check_dependencies(entries: &[Entry]) -> Result<(), ConfigError> {
    let names: Vec<&str> = entries.iter().map(|e| e.manifest.name.as_str()).collect();
    for entry in entries {
        let name = &entry.manifest.name;
        for (target, at) in entry.manifest.depends_on.iter().zip(&entry.depends_at) {
            if target == name {
                return Err(ConfigError::SelfDependency {
                    name: name.clone(),
                    at: Box::new(at.clone()),
                });
            }
            if !names.contains(&target.as_str()) {
                return Err(ConfigError::UnknownDependency {
                    name: name.clone(),
                    target: target.clone(),
                    suggestion: suggest(target, names.iter().copied()),
                    at: Box::new(at.clone()),
                });
            }
        }
    }
    let manifests: Vec<&Manifest> = entries.iter().map(|e| &e.manifest).collect();
    if let Some(cycle) = crate::graph::find_cycle(&manifests) {
        let first = &entries[cycle[0]];
        let next = &entries[cycle[1]].manifest.name;
        let k = first
            .manifest
            .depends_on
            .iter()
            .position(|dep| dep == next)
            .unwrap_or(0);
        return Err(ConfigError::Cycle {
            path: cycle
                .iter()
                .map(|&i| entries[i].manifest.name.clone())
                .collect(),
            at: Box::new(first.depends_at[k].clone()),
        });
    }
    Ok(())
}

/// Load, expand and validate a `tazuna.yaml`. See [`super::load`].
pub(crate) fn load(path: &Path, opts: &LoadOptions) -> Result<Config, ConfigError> {
    let environment = opts.environment.as_deref();
    let doc = Document::read(path, environment, None)?;
    let root = YamlPath::root();
    let spec_path = root.key("spec");

    let minimum = if doc.value.is_mapping() {
        check_minimum_version(&doc, &opts.tazuna_version)?
    } else {
        None
    };
    let raw = deserialize_root(&doc)?;
    check_type_meta(&doc, &raw)?;
    let Some(spec) = raw.spec else {
        return Err(ConfigError::MissingField {
            field: "spec".to_owned(),
            section: "the root".to_owned(),
            at: doc.value_span(&root),
        });
    };
    let RawSpec {
        minimum_supported_tazuna_version: _,
        context_matches,
        context_match_mode,
        environments,
        manifests,
        tests,
        providers,
        plugins,
        cluster: raw_cluster,
        stack,
    } = spec;
    if let Some(name) = &stack {
        check_stack_name(&doc, &spec_path.key("stack"), name)?;
    }

    let plugins = build_plugins(&doc, &spec_path.key("plugins"), plugins.unwrap_or_default())?;
    let plugin_names: BTreeSet<String> = plugins.iter().map(|p| p.name.clone()).collect();
    let providers = build_providers(
        &doc,
        &spec_path.key("providers"),
        providers.unwrap_or_default(),
        &plugin_names,
    )?;

    let context_matches = context_matches.unwrap_or_default();
    compile_patterns(&doc, &spec_path.key("context_matches"), &context_matches)?;
    let environments = build_environments(
        &doc,
        &spec_path.key("environments"),
        environments.unwrap_or_default(),
    )?;
    let selected = match environment {
        None => None,
        Some(name) => match environments.get(name) {
            Some(env) => Some(env.clone()),
            None => {
                let declared: Vec<String> = environments.keys().cloned().collect();
                let env_path = spec_path.key("environments");
                let at = if doc
                    .value
                    .get("spec")
                    .and_then(|s| s.get("environments"))
                    .is_some()
                {
                    doc.key_span(&env_path)
                } else {
                    doc.key_span(&spec_path)
                };
                return Err(ConfigError::UnknownEnvironment {
                    name: name.to_owned(),
                    suggestion: suggest(name, declared.iter().map(String::as_str)),
                    declared,
                    at,
                });
            }
        },
    };
    let tests = build_tests(&doc, &spec_path.key("tests"), tests)?;

    let mut expander = Expander {
        environment,
        plugin_names,
        files: vec![path.to_path_buf()],
        entries: Vec::new(),
        claims: Vec::new(),
    };
    let items = expander.manifest_items(&doc, manifests.as_ref())?;
    for (i, item) in items.iter().enumerate() {
        expander.expand(
            &doc,
            &spec_path.key("manifests").index(i),
            item,
            &Nesting::Root,
        )?;
    }
    check_names(&expander.claims)?;
    check_dependencies(&expander.entries)?;

    let (manifests, type_spans) = expander
        .entries
        .into_iter()
        .map(|entry| (entry.manifest, entry.type_at))
        .unzip();
    Ok(Config {
        file: path.to_path_buf(),
        dir: doc.dir.clone(),
        api_version: raw.api_version,
        kind: raw.kind,
        spec: Spec {
            minimum_supported_tazuna_version: minimum,
            context_matches,
            context_match_mode: context_match_mode.map(match_mode).unwrap_or_default(),
            environments,
            tests,
            providers,
            plugins,
            cluster: cluster(raw_cluster),
            stack,
        },
        manifests,
        environment: selected,
        files: expander.files,
        type_spans,
    })
}

/// A stack name is recorded in state annotations and shown in messages: a
/// short, plain name.
fn check_stack_name(doc: &Document, path: &YamlPath, name: &str) -> Result<(), ConfigError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutes_the_environment_like_go_templates() {
        assert_eq!(
            substitute_environment("path: ./overlays/{{ .Environment }}", Some("staging")),
            "path: ./overlays/staging"
        );
        assert_eq!(
            substitute_environment("path: ./overlays/{{.Environment}}/x", None),
            "path: ./overlays//x"
        );
    }

    #[test]
    fn oci_references_may_carry_a_port_a_tag_and_a_digest() {
        for good in [
            "ghcr.io/acme/vault",
            "127.0.0.1:5000/plugins/configmap",
            "127.0.0.1:5000/plugins/configmap:0.1.0",
            "ghcr.io/acme/vault:1.2.3@sha256:abc",
            "localhost:5000/x",
        ] {
            assert!(is_oci_reference(good), "{good}");
        }
        for bad in [
            "vault",
            "/acme/vault",
            "ghcr.io/",
            "ghcr.io/acme/",
            "127.0.0.1:5000",
        ] {
            assert!(!is_oci_reference(bad), "{bad}");
        }
    }

    #[test]
    fn go_helmfile_blocks_carry_their_wait() {
        let wait = |json: &str| go_helmfile_wait(&serde_json::from_str(json).unwrap());
        assert_eq!(wait("{}"), None);
        assert_eq!(
            wait(r#"{"wait": false, "timeoutSeconds": 9}"#),
            Some(Wait::Off)
        );
        assert_eq!(
            wait(r#"{"wait": true}"#),
            Some(Wait::On {
                timeout: Wait::DEFAULT_TIMEOUT
            })
        );
        assert_eq!(
            wait(r#"{"timeoutSeconds": 120}"#),
            Some(Wait::On {
                timeout: Duration::from_secs(120)
            })
        );
    }

    #[test]
    fn parses_versions_leniently() {
        assert_eq!(parse_version("v1.4.0"), Ok(semver::Version::new(1, 4, 0)));
        assert_eq!(parse_version("1.4"), Ok(semver::Version::new(1, 4, 0)));
        assert_eq!(parse_version("2"), Ok(semver::Version::new(2, 0, 0)));
        assert!(parse_version("one").is_err());
    }

    #[test]
    fn points_into_a_condition_only_where_the_columns_line_up() {
        let span = |line: &str, column| Span {
            location: super::super::Location {
                file: PathBuf::from("tazuna.yaml"),
                line: 3,
                column,
            },
            width: 9,
            source_line: line.to_owned(),
        };
        let columns = |line: &str, column, expression, position| {
            let mut at = span(line, column);
            point_into(&mut at, expression, position);
            (at.location.column, at.width)
        };
        assert_eq!(
            columns("  condition: a == &&", 14, "a == &&", Some((1, 6))),
            (19, 1)
        );
        assert_eq!(
            columns("  condition: \"a ==\"", 14, "a ==", Some((1, 5))),
            (18, 1)
        );
        assert_eq!(
            columns("  condition: \"a \\\\x ==\"", 14, "a \\x ==", Some((1, 1))),
            (14, 9)
        );
        assert_eq!(
            columns("  condition: |", 14, "a ==\n b", Some((2, 2))),
            (14, 9)
        );
    }

    #[test]
    fn maps_genesissecret_to_its_go_block_name() {
        assert_eq!(block_key("genesissecret"), "genesisSecret");
        assert_eq!(block_key("kustomize"), "kustomize");
    }
}
