//! The `tazuna.yaml` file: loading, validation, and the typed model.
//!
//! [`load`] reads a file, expands `includes` (and Go Tazuna's `parallel`), and checks every
//! rule that needs no plugin: field names and types, manifest names, `dependsOn` targets and
//! cycles, context patterns, the selected environment and the minimum tazuna version. Checks
//! that need to know which plugins exist ([`Config::check_types`]) and the `--tags` selection
//! ([`Config::select`]) run afterwards, on the loaded [`Config`].
//!
//! A Go Tazuna file loads unchanged. Differences, each deliberate:
//! - `{{ .Environment }}` is substituted with the `-e` name (empty without `-e`) before
//!   parsing; no other Go template syntax is interpreted.
//! - An included file that has `includes` of its own is an error (Go silently skips them).
//! - `type: parallel` is read by flattening: its `children` become manifests at the parent's
//!   position that share the parent's `dependsOn`, tags (and `namespace`, `wait`, `prune`
//!   unless they set their own). The parent's tests move to its last child. The parent's name
//!   stays reserved but is not a manifest, so `dependsOn` cannot name it.
//! - Unknown keys are errors at every depth.

mod error;
mod load;
mod model;
mod raw;
mod source;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use error::{ConfigError, Edit, Location, Span, Warning};
pub use model::{
    Check, Cluster, ClusterApi, ContextRule, Environment, ExistNonExist, LoadBalancers, Manifest,
    MatchMode, OnFailure, Plugin, PluginSource, Provider, ResourceType, Rollout, Spec, Target,
    Test, Wait, WaitUntil, Wave,
};

use error::suggest;

/// The only `apiVersion` a file may declare.
pub const API_VERSION: &str = "tazuna.pepabo.com/v1";

/// The only `kind` a file may declare.
pub const KIND: &str = "Tazuna";

/// A manifest name reserved for tazuna's own use.
pub const RESERVED_NAME: &str = "_metadata";

/// The manifest types that ship with tazuna (Go Tazuna's, plus `manifests` and `helm`).
pub const BUILTIN_TYPES: &[&str] = &[
    "manifests",
    "kustomize",
    "helm",
    "helmfile",
    "genesissecret",
    "oras",
];

/// A commented starter `tazuna.yaml`, written by `tazuna init`.
pub const STARTER: &str = include_str!("config/starter.tazuna.yaml");

/// What the caller knows before the file is read.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// The environment selected with `-e`, if any. It must be declared under
    /// `spec.environments`, and it fills `{{ .Environment }}` in the file.
    pub environment: Option<String>,
    /// The cluster selected with `--cluster`, if any (it selects its
    /// environment too). Without it, `-e` selects the environment's cluster
    /// when it has only one.
    pub cluster: Option<String>,
    /// A cluster found in a Cluster API management cluster (see
    /// [`ClusterApi`]) to render for; it selects its environment, which must
    /// declare `clusterAPI`.
    pub discovered: Option<Target>,
    /// The running tazuna's version, checked against `minimumSupportedTazunaVersion`.
    pub tazuna_version: semver::Version,
}

impl LoadOptions {
    /// Options for `tazuna_version` and no environment.
    pub fn new(tazuna_version: semver::Version) -> Self {
        Self {
            environment: None,
            cluster: None,
            discovered: None,
            tazuna_version,
        }
    }
}

/// A loaded, expanded and validated `tazuna.yaml`.
#[derive(Clone, Debug)]
pub struct Config {
    /// The file as given to [`load`].
    pub file: PathBuf,
    /// The file's directory (`.` for a bare file name); root manifests' paths are relative
    /// to it.
    pub dir: PathBuf,
    /// `apiVersion`, if the file sets it (always [`API_VERSION`] then).
    pub api_version: Option<String>,
    /// `kind`, if the file sets it (always [`KIND`] then).
    pub kind: Option<String>,
    /// Everything under `spec` except the manifests.
    pub spec: Spec,
    /// Every manifest after includes and `parallel` are expanded, in declaration order.
    pub manifests: Vec<Manifest>,
    /// The environment selected with `-e` (or by `--cluster`).
    pub environment: Option<Environment>,
    /// The cluster the file was rendered for, when one is selected.
    pub target: Option<Target>,
    /// Every file read: the root first, then included files in order.
    pub files: Vec<PathBuf>,
    /// What the file may do but should not (names with spaces): a run
    /// prints them, `tazuna check` refuses them.
    pub warnings: Vec<Warning>,
    /// Where each manifest's `type` is, for [`Config::check_types`].
    type_spans: Vec<Span>,
}

/// Read, parse and validate the `tazuna.yaml` at `path`, expanding its includes.
///
/// Validates everything that needs no plugin knowledge; call [`Config::check_types`] once
/// the available plugins are known.
pub fn load(path: &Path, opts: &LoadOptions) -> Result<Config, ConfigError> {
    load::load(path, opts)
}

/// The clusters a file declares and how a fleet command runs them, read
/// without selecting one (see [`Fleet`]).
pub fn fleet(path: &Path, opts: &LoadOptions) -> Result<Fleet, ConfigError> {
    let (environments, rollout) = load::targets(path, opts)?;
    Ok(Fleet {
        environments,
        rollout,
    })
}

/// What a file says about its clusters, before one is selected.
#[derive(Clone, Debug)]
pub struct Fleet {
    /// `spec.environments` with their clusters.
    pub environments: BTreeMap<String, Environment>,
    /// `spec.rollout`.
    pub rollout: Rollout,
}

impl Fleet {
    /// Every cluster, environment by environment, in name order.
    pub fn targets(&self) -> impl Iterator<Item = &Target> {
        self.environments.values().flat_map(|e| e.clusters.iter())
    }
}

impl Config {
    /// Errors for the first manifest whose `type` is neither in `known` (the caller's
    /// built-ins) nor the name of a plugin in `spec.plugins`, pointing at the `type:` value.
    pub fn check_types(&self, known: &[&str]) -> Result<(), ConfigError> {
        self.check_types_tagged(known, &[])
    }

    /// Like [`Config::check_types`], for the manifests carrying any of `tags`
    /// only (all of them when `tags` is empty): a run that leaves a manifest
    /// out does not need its plugin.
    pub fn check_types_tagged(&self, known: &[&str], tags: &[String]) -> Result<(), ConfigError> {
        let mut all: Vec<String> = known.iter().map(|k| (*k).to_owned()).collect();
        all.extend(self.spec.plugins.iter().map(|p| p.name.clone()));
        for (manifest, at) in self.manifests.iter().zip(&self.type_spans) {
            let selected = tags.is_empty() || manifest.tags.iter().any(|t| tags.contains(t));
            if selected && !all.contains(&manifest.kind) {
                return Err(ConfigError::UnknownType {
                    name: manifest.name.clone(),
                    kind: manifest.kind.clone(),
                    suggestion: suggest(&manifest.kind, all.iter().map(String::as_str)),
                    known: all,
                    at: Box::new(at.clone()),
                });
            }
        }
        Ok(())
    }

    /// The manifests carrying any of `tags`, in declaration order; all of them when `tags`
    /// is empty. A tag that no manifest carries is an error listing the known tags.
    pub fn select(&self, tags: &[String]) -> Result<Vec<&Manifest>, ConfigError> {
        if tags.is_empty() {
            return Ok(self.manifests.iter().collect());
        }
        let known = self.tags();
        if let Some(tag) = tags.iter().find(|tag| !known.contains_key(*tag)) {
            return Err(ConfigError::UnknownTag {
                tag: tag.clone(),
                suggestion: suggest(tag, known.keys().map(String::as_str)),
                known: known.into_keys().collect(),
                file: self.file.clone(),
            });
        }
        Ok(self
            .manifests
            .iter()
            .filter(|m| m.tags.iter().any(|t| tags.contains(t)))
            .collect())
    }

    /// Every tag, with the names of the manifests that carry it in declaration order.
    pub fn tags(&self) -> BTreeMap<String, Vec<String>> {
        let mut tags: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for manifest in &self.manifests {
            for tag in &manifest.tags {
                let names = tags.entry(tag.clone()).or_default();
                if !names.contains(&manifest.name) {
                    names.push(manifest.name.clone());
                }
            }
        }
        tags
    }

    /// The manifest called `name`.
    pub fn manifest(&self, name: &str) -> Option<&Manifest> {
        self.manifests.iter().find(|m| m.name == name)
    }

    /// The context check in force: the selected environment's `context_matches` when it
    /// sets any (they replace the root's), otherwise the root's; the mode likewise, `or`
    /// by default. Matching is partial unless a pattern is anchored.
    pub fn context_rule(&self) -> ContextRule {
        let root = &self.spec;
        let (patterns, mode) = match &self.environment {
            Some(env) if !env.context_matches.is_empty() => (
                &env.context_matches,
                env.context_match_mode.unwrap_or(root.context_match_mode),
            ),
            Some(env) => (
                &root.context_matches,
                env.context_match_mode.unwrap_or(root.context_match_mode),
            ),
            None => (&root.context_matches, root.context_match_mode),
        };
        ContextRule {
            // The loader compiled every pattern already.
            patterns: patterns
                .iter()
                .filter_map(|p| regex::Regex::new(p).ok())
                .collect(),
            mode,
        }
    }

    /// The cluster identity in force: the selected environment's, else the root's.
    pub fn cluster(&self) -> Option<&Cluster> {
        self.target
            .as_ref()
            .and_then(|target| target.identity.as_ref())
            .or_else(|| {
                self.environment
                    .as_ref()
                    .and_then(|env| env.cluster.as_ref())
            })
            .or(self.spec.cluster.as_ref())
    }

    /// The selected cluster's values (its environment's with its own merged
    /// over them), `{}` without one.
    pub fn values(&self) -> serde_json::Value {
        self.target.as_ref().map_or_else(
            || serde_json::Value::Object(serde_json::Map::new()),
            |target| target.values.clone(),
        )
    }
}

/// The JSON schema of the whole file, for `tazuna schema` and editors.
///
/// Per-type blocks of the built-ins are described as open objects; a caller that knows the
/// plugins' own config schemas can splice them in at
/// `$defs.Manifest.properties.<block>`.
pub fn json_schema() -> serde_json::Value {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<raw::RawRoot>();
    schema.to_value()
}

/// Why `tazuna check --fix` changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum FixError {
    /// A file could not be read or written.
    #[error("cannot {verb} `{}`: {error}", file.display())]
    Io {
        /// `read` or `write`.
        verb: &'static str,
        /// The file.
        file: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The file no longer has the line a warning named.
    #[error("{at}: the file has no such line")]
    NoLine {
        /// Where the warning pointed.
        at: String,
    },
    /// The file holds something else where a warning pointed.
    #[error("{at}: expected `{expected}` there, found `{found}`")]
    Moved {
        /// Where the warning pointed.
        at: String,
        /// The old value the edit replaces.
        expected: String,
        /// What the file holds there.
        found: String,
    },
}

impl crate::hint::Hint for FixError {
    fn hint(&self) -> Option<String> {
        match self {
            Self::Io { .. } => None,
            Self::NoLine { .. } => Some("run `tazuna check` again".to_owned()),
            Self::Moved { .. } => Some("fix it by hand (the file may be a template)".to_owned()),
        }
    }
}

/// Apply the edits of `warnings` to their files (`tazuna check --fix`);
/// returns each file changed with its number of edits.
///
/// An edit is made only where the file still holds the old value at its
/// line and column (bare or quoted); one that does not (the file changed,
/// or a template moved the text) is an error naming where, and no file is
/// written.
pub fn fix(warnings: &[Warning]) -> Result<Vec<(PathBuf, usize)>, FixError> {
    apply_edits(warnings.iter().flat_map(|w| &w.edits))
}

/// Apply `edits` to their files, as [`fix`] does.
pub fn apply_edits<'a>(
    edits: impl IntoIterator<Item = &'a Edit>,
) -> Result<Vec<(PathBuf, usize)>, FixError> {
    let mut by_file: BTreeMap<&Path, Vec<&Edit>> = BTreeMap::new();
    for edit in edits {
        by_file
            .entry(edit.at.location.file.as_path())
            .or_default()
            .push(edit);
    }
    let mut fixed = Vec::new();
    for (file, mut edits) in by_file {
        let text = std::fs::read_to_string(file).map_err(|error| FixError::Io {
            verb: "read",
            file: file.to_owned(),
            error,
        })?;
        let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
        // Right to left, so an edit never moves the columns of the next.
        edits.sort_by_key(|e| std::cmp::Reverse((e.at.location.line, e.at.location.column)));
        edits.dedup_by_key(|e| (e.at.location.line, e.at.location.column));
        for edit in &edits {
            let at = &edit.at.location;
            let line = lines
                .get_mut(at.line - 1)
                .ok_or_else(|| FixError::NoLine { at: at.to_string() })?;
            let start = line
                .char_indices()
                .nth(at.column - 1)
                .map(|(i, _)| i)
                .unwrap_or(line.len());
            let rest = &line[start..];
            let found = [
                edit.from.clone(),
                format!("\"{}\"", edit.from),
                format!("'{}'", edit.from),
            ]
            .into_iter()
            .find(|spelling| rest.starts_with(spelling.as_str()))
            .ok_or_else(|| FixError::Moved {
                at: at.to_string(),
                expected: edit.from.clone(),
                found: rest.chars().take(40).collect(),
            })?;
            line.replace_range(start..start + found.len(), &edit.to);
        }
        fixed.push((file.to_owned(), edits.len(), lines.join("\n")));
    }
    for (file, _, text) in &fixed {
        std::fs::write(file, text).map_err(|error| FixError::Io {
            verb: "write",
            file: file.clone(),
            error,
        })?;
    }
    Ok(fixed.into_iter().map(|(file, n, _)| (file, n)).collect())
}
