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

use super::error::{ConfigError, Edit, Span, Warning, suggest};
use super::model::{
    Check, Cluster, ClusterApi, Environment, ExistNonExist, LoadBalancers, Manifest, MatchMode,
    OnFailure, Plugin, PluginSource, Provider, ResourceType, Rollout, Spec, Target, Test, Wait,
    WaitUntil, Wave,
};
use super::raw::{
    BUILTIN_BLOCKS, MANIFEST_FIELDS, PROVIDER_BLOCKS, RawCluster, RawEnvironment, RawManifest,
    RawMatchMode, RawOnFailure, RawPlugin, RawProvider, RawRollout, RawRoot, RawSpec, RawTest,
    RawTestType, RawWait,
};
use super::source::{Seg, Source, YamlPath, join_clean, parent_dir};
use super::{API_VERSION, Config, KIND, LoadOptions, RESERVED_NAME};
use crate::check::{CheckError, Condition};
use crate::template::Keys;

mod errors;
mod fleet;
mod hints;
mod inputs;
mod manifests;
mod spec;

use errors::*;
use fleet::*;
use inputs::inputs_of;
use manifests::*;
use spec::*;

/// The largest config file read (a `tazuna.yaml` or an included file).
pub const MAX_CONFIG_BYTES: u64 = 4 * 1024 * 1024;

/// `file`'s text, if it is a regular file of at most [`MAX_CONFIG_BYTES`].
/// Anything else (a device, a FIFO, `/proc` files that never end) is refused
/// before it is read whole.
fn read_bounded(file: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let handle = std::fs::File::open(file)?;
    if !handle.metadata()?.is_file() {
        return Err(std::io::Error::other(
            "not a regular file; config files must be plain files",
        ));
    }
    let mut text = String::new();
    handle
        .take(MAX_CONFIG_BYTES + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX_CONFIG_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {} MiB; config files must be smaller",
            MAX_CONFIG_BYTES / 1024 / 1024
        )));
    }
    Ok(text)
}

/// The project a root file belongs to: its git repository, else its
/// directory. Includes must stay inside it.
fn project_of(root_file: &Path) -> PathBuf {
    let dir =
        std::fs::canonicalize(parent_dir(root_file)).unwrap_or_else(|_| parent_dir(root_file));
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(&dir)
        .to_path_buf()
}

/// `file`'s text. `included_at` is the include entry that names it, if any,
/// so a missing included file is reported there.
fn read_text(file: &Path, included_at: Option<Box<Span>>) -> Result<String, ConfigError> {
    let text = match read_bounded(file) {
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
    Ok(text)
}

/// A parsed file: its text and index, its data, and the directory its paths are relative to.
struct Document {
    source: Source,
    value: Value,
    dir: PathBuf,
}

impl Document {
    /// Read and parse `file` (see [`read_text`]).
    fn read(
        file: &Path,
        data: &serde_json::Value,
        included_at: Option<Box<Span>>,
    ) -> Result<Self, ConfigError> {
        let text = read_text(file, included_at)?;
        Self::parse(file, text, data, Keys::Required)
    }

    /// Render `text` (read from `file`) with `data` and parse it.
    fn parse(
        file: &Path,
        text: String,
        data: &serde_json::Value,
        keys: Keys,
    ) -> Result<Self, ConfigError> {
        let text = render_template(file, text, data, keys)?;
        let source = Source::new(file.to_path_buf(), text);
        // libyaml's scanner takes time quadratic in flow nesting (`[[[[…`):
        // refuse deep nesting before it starts.
        if let Some((line, column)) = flow_too_deep(source.text()) {
            return Err(ConfigError::Syntax {
                message: format!(
                    "flow collections (`[`, `{{`) nest deeper than {MAX_FLOW_DEPTH} levels here; Tazuna reads at most {MAX_FLOW_DEPTH}"
                ),
                at: source.span_at(line, column, 1),
            });
        }
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
            let parent = if path.0.last() == Some(&Seg::Key(field.as_str().into())) {
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

    /// Like [`Self::invalid`], pointing at the key of `path` rather than its value.
    fn invalid_key(&self, path: &YamlPath, message: String, hint: Option<String>) -> ConfigError {
        ConfigError::Invalid {
            message,
            hint,
            at: self.key_span(path),
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

/// Go Tazuna renders tazuna.yaml as a Go template (`missingkey=error`) with
/// `.Environment`, the `-e` name (empty without `-e`); Tazuna adds `.Cluster`
/// and `.Values` (see [`template_data`]). A file without `{{` is taken as it is.
fn render_template(
    file: &Path,
    text: String,
    data: &serde_json::Value,
    keys: Keys,
) -> Result<String, ConfigError> {
    if !crate::template::has_actions(&text) {
        return Ok(text);
    }
    crate::template::render_with(&text, data, keys).map_err(|error| ConfigError::Template {
        message: error.message,
        at: Source::new(file.to_path_buf(), text.clone()).span_at(error.line, error.column, 1),
    })
}

/// `.` of the file's template: `.Environment` (the environment's name, empty
/// without one), `.Cluster` (`.Name`, `.Environment`, `.Labels`) and
/// `.Values` (the cluster's values), empty when no cluster is selected, and
/// `.Inputs` (each input's outputs, see [`crate::inputs`]).
fn template_data(
    environment: Option<&str>,
    target: Option<&Target>,
    inputs: &[crate::inputs::Input],
) -> serde_json::Value {
    let empty = || serde_json::Value::Object(serde_json::Map::new());
    serde_json::json!({
        "Inputs": inputs
            .iter()
            .map(|input| (input.name.clone(), input.template_value()))
            .collect::<serde_json::Map<String, serde_json::Value>>(),
        "Environment": environment.unwrap_or(""),
        "Cluster": {
            "Name": target.map_or("", |t| t.name.as_str()),
            "Environment": environment.unwrap_or(""),
            "Labels": target.map_or_else(empty, |t| serde_json::json!(t.labels)),
        },
        "Values": target.map_or_else(empty, |t| t.values.clone()),
    })
}

/// The environments and rollout of the file at `path`, read before the
/// cluster they declare is known: the file is rendered with `.Cluster` and
/// `.Values` empty, and what cannot be evaluated without them left out (see
/// [`crate::template::render_partial`]). So `spec.environments` and
/// `spec.rollout` must not use them; [`load`] checks that the cluster it
/// rendered for is the one declared here.
fn first_look(
    path: &Path,
    text: &str,
    opts: &LoadOptions,
) -> Result<(BTreeMap<String, Environment>, Rollout), ConfigError> {
    let data = template_data(opts.environment.as_deref(), None, &[]);
    let doc = Document::parse(path, text.to_owned(), &data, Keys::Optional)?;
    clusters_of(&doc, opts)
}

/// `spec.environments` and `spec.rollout` of `doc`, after the version check
/// (a file for a newer Tazuna says so before any field it does not know).
fn clusters_of(
    doc: &Document,
    opts: &LoadOptions,
) -> Result<(BTreeMap<String, Environment>, Rollout), ConfigError> {
    if doc.value.is_mapping() {
        check_minimum_version(doc, &opts.tazuna_version)?;
    }
    let spec_path = YamlPath::root().key("spec");
    let spec = doc.value.get("spec");
    let environments = match spec.and_then(|s| s.get("environments")) {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(raw) => {
            let at = spec_path.key("environments");
            let raw: BTreeMap<String, RawEnvironment> = doc.deserialize(&at, raw)?;
            build_environments(doc, &at, raw)?
        }
    };
    let rollout = match spec.and_then(|s| s.get("rollout")) {
        None | Some(Value::Null) => Rollout::default(),
        Some(raw) => {
            let at = spec_path.key("rollout");
            let raw: RawRollout = doc.deserialize(&at, raw)?;
            build_rollout(doc, &at, Some(raw), &environments)?
        }
    };
    Ok((environments, rollout))
}

/// Every cluster the file at `path` declares, and its rollout.
pub(crate) fn targets(
    path: &Path,
    opts: &LoadOptions,
) -> Result<(BTreeMap<String, Environment>, Rollout), ConfigError> {
    let text = read_text(path, None)?;
    first_look(path, &text, opts)
}

/// The cluster `opts` selects among `environments`, and its environment's
/// name: `--cluster`'s, or the `-e` environment's only cluster.
fn select_target(
    path: &Path,
    text: &str,
    environments: &BTreeMap<String, Environment>,
    opts: &LoadOptions,
) -> Result<(Option<String>, Option<Target>), ConfigError> {
    let spot = || {
        let source = Source::new(path.to_path_buf(), text.to_owned());
        let spec = YamlPath::root().key("spec");
        if environments.is_empty() {
            source.key_span(&spec)
        } else {
            source.key_span(&spec.key("environments"))
        }
    };
    let all = || {
        environments
            .values()
            .flat_map(|e| e.clusters.iter())
            .map(|t| format!("`{}`", t.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(target) = &opts.discovered {
        return match environments.get(&target.environment) {
            Some(env) if env.cluster_api.is_some() => {
                Ok((Some(target.environment.clone()), Some(target.clone())))
            }
            _ => Err(ConfigError::Invalid {
                message: format!(
                    "cluster `{}` comes from Cluster API, and environment `{}` declares no `clusterAPI`",
                    target.name, target.environment
                ),
                hint: None,
                at: spot(),
            }),
        };
    }
    match (&opts.environment, &opts.cluster) {
        (environment, Some(name)) => {
            let found = environments
                .values()
                .flat_map(|e| e.clusters.iter())
                .find(|t| &t.name == name);
            let Some(target) = found else {
                return Err(ConfigError::Invalid {
                    message: format!("unknown cluster `{name}`"),
                    hint: Some(if environments.is_empty() {
                        "this file declares no environments; clusters are declared under `spec.environments`".to_owned()
                    } else {
                        format!("declared clusters: {}", all())
                    }),
                    at: spot(),
                });
            };
            if let Some(environment) = environment.as_deref()
                && environment != target.environment
            {
                return Err(ConfigError::Invalid {
                    message: format!(
                        "cluster `{name}` belongs to environment `{}`, not `{environment}`",
                        target.environment
                    ),
                    hint: Some(format!(
                        "drop `-e {environment}`, or pick one of its clusters"
                    )),
                    at: spot(),
                });
            }
            Ok((Some(target.environment.clone()), Some(target.clone())))
        }
        (Some(environment), None) => match environments.get(environment) {
            // An unknown environment is reported by `load`, where the file is read in full.
            None => Ok((Some(environment.clone()), None)),
            Some(env) => match env.clusters.as_slice() {
                [only] => Ok((Some(environment.clone()), Some(only.clone()))),
                several => Err(ConfigError::Invalid {
                    message: format!(
                        "environment `{environment}` has {} clusters, and this command runs on one",
                        several.len()
                    ),
                    hint: Some(format!(
                        "pick one with `--cluster <name>`: {}",
                        several
                            .iter()
                            .map(|t| format!("`{}`", t.name))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                    at: spot(),
                }),
            },
        },
        (None, None) => Ok((None, None)),
    }
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

/// Load, expand and validate a `tazuna.yaml`. See [`super::load`].
pub(crate) fn load(path: &Path, opts: &LoadOptions) -> Result<Config, ConfigError> {
    let text = read_text(path, None)?;
    // A file without template actions is the same for every cluster: it is
    // parsed once.
    let (doc, environment, target, inputs) = if crate::template::has_actions(&text) {
        let (declared, _) = first_look(path, &text, opts)?;
        let (environment, target) = select_target(path, &text, &declared, opts)?;
        // The inputs, read from the file as `first_look` sees it.
        let first = Document::parse(
            path,
            text.clone(),
            &template_data(environment.as_deref(), None, &[]),
            Keys::Optional,
        )?;
        let mut inputs = inputs_of(&first, target.as_ref())?;
        for input in &mut inputs {
            input.used = crate::inputs::used_in(&text, &input.name);
            // Values from outside the file fill values only.
            for output in &input.used {
                input
                    .check_usable(output)
                    .map_err(|error| ConfigError::Invalid {
                        message: error.to_string(),
                        hint: crate::hint::Hint::hint(&error),
                        at: first.value_span(&YamlPath::root().key("spec").key("inputs")),
                    })?;
            }
        }
        let data = template_data(environment.as_deref(), target.as_ref(), &inputs);
        let doc = Document::parse(path, text, &data, Keys::Required)?;
        (doc, environment, target, inputs)
    } else {
        let doc = Document::parse(path, text, &serde_json::Value::Null, Keys::Required)?;
        let (declared, _) = clusters_of(&doc, opts)?;
        let (environment, target) = select_target(path, doc.source.text(), &declared, opts)?;
        let inputs = inputs_of(&doc, target.as_ref())?;
        (doc, environment, target, inputs)
    };
    let environment = environment.as_deref();
    let data = template_data(environment, target.as_ref(), &inputs);
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
        rollout,
        inputs: _,
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

    if let Some(clash) = inputs
        .iter()
        .find(|input| providers.iter().any(|p| p.name == input.name))
    {
        return Err(doc.invalid(
            &spec_path.key("inputs"),
            format!(
                "`{}` names both an input and a provider; `ref+{}:` would mean either",
                clash.name, clash.name
            ),
            Some("rename one of them".to_owned()),
        ));
    }
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
    let rollout = build_rollout(&doc, &spec_path.key("rollout"), rollout, &environments)?;
    let target = match target {
        None => None,
        // Found in a management cluster: there is nothing in the file to match.
        Some(found) if opts.discovered.is_some() => Some(found),
        Some(first) => {
            let rendered = environments
                .get(&first.environment)
                .and_then(|e| e.clusters.iter().find(|t| t.name == first.name));
            if rendered != Some(&first) {
                return Err(doc.invalid(
                    &spec_path.key("environments").key(&first.environment),
                    format!(
                        "environment `{}` comes out differently once cluster `{}` is known",
                        first.environment, first.name
                    ),
                    Some("`spec.environments` declares the clusters, so it cannot use `.Cluster` or `.Values`; use `.Environment` there".into()),
                ));
            }
            Some(first)
        }
    };
    let tests = build_tests(&doc, &spec_path.key("tests"), tests)?;

    let mut expander = Expander {
        project: project_of(path),
        data: &data,
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
    let warnings = name_warnings(&expander.claims, &expander.entries);

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
            rollout,
            inputs,
        },
        manifests,
        environment: selected,
        target,
        files: expander.files,
        warnings,
        type_spans,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_the_environment_like_go_templates() {
        let render = |text: &str, environment| {
            let data = template_data(environment, None, &[]);
            render_template(
                Path::new("tazuna.yaml"),
                text.to_owned(),
                &data,
                Keys::Required,
            )
        };
        assert_eq!(
            render("path: ./overlays/{{ .Environment }}", Some("staging")).unwrap(),
            "path: ./overlays/staging"
        );
        assert_eq!(
            render("path: ./overlays/{{.Environment}}/x", None).unwrap(),
            "path: ./overlays//x"
        );
        assert_eq!(
            render(
                "replicas: {{ if eq .Environment \"production\" }}3{{ else }}1{{ end }}",
                Some("production")
            )
            .unwrap(),
            "replicas: 3"
        );
        let error = render("a: 1\nb: {{ .Enviroment }}\n", Some("dr")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "template: map has no entry for key `Enviroment` in `.Enviroment` (it has `Cluster`, `Environment`, `Inputs`, `Values`)"
        );
        assert_eq!(error.span().map(|s| s.location.line), Some(2));
    }

    /// `spec.inputs`: a state's outputs in the template, a sensitive one as a
    /// reference; a missing state, a missing output and a name a provider
    /// has are errors naming the input.
    #[test]
    fn inputs_fill_the_template_from_a_state_and_keep_sensitive_outputs_as_references() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("infra")).unwrap();
        std::fs::write(
            root.join("infra/terraform.tfstate"),
            r#"{"version": 4, "serial": 3, "outputs": {
                "tg_arn": {"value": "arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/web/abc", "type": "string"},
                "db_password": {"value": "state-secret-91", "type": "string", "sensitive": true},
                "ns": {"value": "default'\n    - name: evil\n      type: manifests\n      path: app.yaml\n      namespace: 'kube-system", "type": "string"},
                "db_url": {"value": "ref+env:CI_TOKEN", "type": "string"}}}"#,
        )
        .unwrap();
        let file = |inputs: &str, body: &str| {
            std::fs::write(
                root.join("tazuna.yaml"),
                format!(
                    "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n{inputs}  manifests:\n    - name: app\n      type: helm\n      path: ./chart\n      helm:\n        values:\n{body}"
                ),
            )
            .unwrap();
            super::load(
                &root.join("tazuna.yaml"),
                &LoadOptions::new(semver::Version::new(1, 0, 0)),
            )
        };
        let inputs = "  inputs:\n    - name: infra\n      type: opentofu-state\n      path: ./infra/terraform.tfstate\n";
        let config = file(
            inputs,
            "          arn: '{{ .Inputs.infra.tg_arn }}'\n          password: '{{ .Inputs.infra.db_password }}'\n",
        )
        .unwrap();
        let values = &config.manifests[0].config["values"];
        assert_eq!(
            values["arn"],
            "arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/web/abc"
        );
        assert_eq!(values["password"], "ref+infra:db_password");
        let input = &config.spec.inputs[0];
        assert_eq!(
            (input.serial, input.used.as_slice()),
            (
                Some(3),
                ["db_password".to_owned(), "tg_arn".to_owned()].as_slice()
            )
        );

        let missing_output = file(inputs, "          x: '{{ .Inputs.infra.nope }}'\n")
            .unwrap_err()
            .to_string();
        assert!(
            missing_output.contains("`.Inputs.infra.nope`") && missing_output.contains("`tg_arn`"),
            "{missing_output}"
        );
        let gone = file(
            &inputs.replace("terraform.tfstate", "gone.tfstate"),
            "          x: 1\n",
        )
        .unwrap_err();
        assert!(
            gone.to_string()
                .contains("input `infra`: cannot read the state"),
            "{gone}"
        );
        let clash = file(
            &format!("{inputs}  providers:\n    - name: infra\n      type: envfile\n      envfile:\n        path: x.env\n"),
            "          x: 1\n",
        )
        .unwrap_err();
        assert!(
            clash
                .to_string()
                .contains("names both an input and a provider"),
            "{clash}"
        );
        assert!(!format!("{gone}{clash}{missing_output}").contains("state-secret-91"));

        // Whoever writes the state may not add a manifest, or a reference.
        for (output, said) in [
            ("ns", "could change the file"),
            ("db_url", "secret reference"),
        ] {
            let refused = file(
                inputs,
                &format!("          x: '{{{{ .Inputs.infra.{output} }}}}'\n"),
            )
            .unwrap_err()
            .to_string();
            assert!(
                refused.contains(&format!("input `infra`: output `{output}`"))
                    && refused.contains(said),
                "{refused}"
            );
            assert!(
                !refused.contains("kube-system") && !refused.contains("CI_TOKEN"),
                "{refused}"
            );
        }
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
        assert_eq!(wait(r#"{"wait": true}"#), Some(Wait::default()));
        assert_eq!(
            wait(r#"{"timeoutSeconds": 120}"#),
            Some(Wait::On {
                timeout: Duration::from_secs(120),
                load_balancers: LoadBalancers::Ignored,
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
            source_line: line.into(),
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

/// The deepest flow nesting (`[`, `{`) a config file may have.
const MAX_FLOW_DEPTH: usize = 64;

/// Where (line, column, from 1) flow collections first nest deeper than
/// [`MAX_FLOW_DEPTH`], skipping quoted strings and comments; linear in the
/// text. Brackets inside plain scalars count too, so this errs only towards
/// refusing a file with more than that many unclosed ones.
fn flow_too_deep(text: &str) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    for (number, line) in text.lines().enumerate() {
        let mut quote: Option<char> = None;
        let mut escaped = false;
        let mut previous = ' ';
        for (column, c) in line.chars().enumerate() {
            match quote {
                Some('"') if escaped => escaped = false,
                Some('"') if c == '\\' => escaped = true,
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None => match c {
                    '#' if previous.is_whitespace() => break,
                    '"' | '\'' if previous.is_whitespace() || "[{,:".contains(previous) => {
                        quote = Some(c);
                    }
                    '[' | '{' => {
                        depth += 1;
                        if depth > MAX_FLOW_DEPTH {
                            return Some((number + 1, column + 1));
                        }
                    }
                    ']' | '}' => depth = depth.saturating_sub(1),
                    _ => {}
                },
            }
            previous = c;
        }
    }
    None
}

#[cfg(test)]
mod flow_depth_tests {
    use super::*;

    #[test]
    fn deep_flow_nesting_is_found_where_it_passes_the_limit() {
        let deep = format!("spec:\n  manifests: {}\n", "[".repeat(100));
        assert_eq!(flow_too_deep(&deep), Some((2, 14 + MAX_FLOW_DEPTH)));
        let fine = format!("a: {}{}\n", "[".repeat(64), "]".repeat(64));
        assert_eq!(flow_too_deep(&fine), None);
        // Brackets in strings and comments do not count.
        let quoted = format!(
            "a: \"{}\"\nb: '{}' # {}\n",
            "[".repeat(100),
            "{".repeat(100),
            "[".repeat(100)
        );
        assert_eq!(flow_too_deep(&quoted), None);
    }
}
