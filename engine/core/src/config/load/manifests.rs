//! `spec.manifests`: expanding `includes` and Go's `parallel`, claiming names,
//! reading each entry, and checking `dependsOn`.

use super::*;

/// The regex that manifest names (and plugin names) must match.
pub(super) fn name_pattern() -> &'static Regex {
    static NAME: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^[a-zA-Z0-9_-]+$").unwrap());
    &NAME
}

/// A manifest name Go Tazuna loads with a warning and refuses only in
/// `check`: the name pattern plus inner spaces.
fn spaced_name(name: &str) -> bool {
    static SPACED: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^[a-zA-Z0-9_-]+( +[a-zA-Z0-9_-]+)+$").unwrap());
    SPACED.is_match(name)
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
pub(super) struct Entry {
    pub(super) manifest: Manifest,
    pub(super) type_at: Span,
    pub(super) depends_at: Vec<Span>,
}

/// A name claimed by a manifest (or by a `parallel` parent, whose children replace it).
pub(super) struct Claim {
    pub(super) name: String,
    pub(super) at: Box<Span>,
}

/// What a `parallel` parent passes on to its children.
pub(super) struct Parent {
    pub(super) depends_on: Vec<(String, Box<Span>)>,
    pub(super) tags: Vec<String>,
    pub(super) namespace: Option<String>,
    pub(super) wait: Option<Wait>,
    pub(super) prune: Option<bool>,
    pub(super) create_namespace: Option<bool>,
    /// Its name: its children's [`Manifest::parallel`].
    pub(super) name: String,
}

pub(super) enum Nesting<'a> {
    Root,
    Included,
    ParallelChild(&'a Parent),
}

pub(super) struct Expander<'o> {
    /// Includes must stay inside this directory (see `project_of`).
    pub(super) project: PathBuf,
    /// `.` for included files' templates.
    pub(super) data: &'o serde_json::Value,
    pub(super) plugin_names: BTreeSet<String>,
    pub(super) files: Vec<PathBuf>,
    pub(super) entries: Vec<Entry>,
    pub(super) claims: Vec<Claim>,
}

impl Expander<'_> {
    pub(super) fn manifest_items<'v>(
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
            // Go Tazuna's `tazuna init` writes `manifests: []`: a valid file
            // with nothing to apply yet.
            Some(Value::Sequence(items)) => Ok(items),
            Some(other) => Err(ConfigError::WrongType {
                field: path.to_string(),
                expected: "a sequence".to_owned(),
                found: describe(other),
                at: doc.value_span(&path),
            }),
        }
    }

    pub(super) fn expand_included(&mut self, doc: &Document) -> Result<(), ConfigError> {
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
    pub(super) fn split(
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

    pub(super) fn expand(
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
                // Through symlinks too: an include never reads outside the project.
                if let Ok(real) = std::fs::canonicalize(&file)
                    && !real.starts_with(&self.project)
                {
                    return Err(ConfigError::Invalid {
                        message: format!(
                            "included file `{}` is outside this project (the root file's git repository, or its directory outside one)",
                            include.path
                        ),
                        hint: Some(
                            "includes never leave the project, through symlinks neither; copy the file into the project".to_owned(),
                        ),
                        at,
                    });
                }
                let included = Document::read(&file, self.data, Some(at))?;
                self.files.push(file);
                self.expand_included(&included)?;
            }
            return Ok(());
        }

        let Some(name) = raw.name.clone() else {
            let suggested = Self::go_name(raw.kind.as_deref(), raw.path.as_deref(), &self.claims);
            let at = doc.value_span(path);
            // Inserted before the manifest's first key, at its indentation;
            // a flow mapping (`{type: …}`) takes no such line.
            let block = at
                .source_line
                .chars()
                .nth(at.location.column - 1)
                .is_none_or(|c| c != '{');
            let fix = block.then(|| {
                Box::new(Edit {
                    at: (*at).clone(),
                    from: String::new(),
                    to: format!("name: {suggested}\n{}", " ".repeat(at.location.column - 1)),
                })
            });
            return Err(ConfigError::Unnamed { suggested, fix, at });
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
        let mut create_namespace = raw.create_namespace;
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
            create_namespace = create_namespace.or(parent.create_namespace);
        }

        if kind == "parallel" {
            if matches!(nesting, Nesting::ParallelChild(_)) {
                return Err(ConfigError::Invalid {
                    message: "`parallel` manifests do not nest".to_owned(),
                    hint: Some("list these children in the outer `parallel` instead".to_owned()),
                    at: doc.value_span(&path.key("type")),
                });
            }
            self.claims.push(Claim {
                name: name.clone(),
                at: name_at,
            });
            let parent = Parent {
                depends_on,
                tags,
                namespace,
                wait,
                prune,
                create_namespace,
                name,
            };
            let first_child = self.entries.len();
            self.expand_parallel(doc, path, blocks.remove("parallel"), &parent)?;
            // The parent's tests run after all its children: the last child
            // takes them and, in declaration order, goes after its siblings.
            if let Some(last) = self.entries[first_child..].last_mut()
                && !tests.is_empty()
            {
                last.manifest.tests.extend(tests);
                last.manifest.parallel = None;
            }
            return Ok(());
        }

        let key = block_key(&kind);
        let block_path = path.key(key);
        let mut config = match blocks.remove(key) {
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
        if create_namespace == Some(true) && namespace.is_none() {
            return Err(ConfigError::Invalid {
                message: format!("manifest `{name}` sets `createNamespace` but no `namespace`"),
                hint: Some(
                    "add `namespace: <name>` to the manifest, the namespace to create".to_owned(),
                ),
                at: doc.value_span(&path.key("createNamespace")),
            });
        }
        if kind == "helmfile" {
            if wait.is_none() {
                wait = go_helmfile_wait(&config);
            }
            if let Some(helmfile) = &raw.path {
                super::hints::apply(doc, self.data, &name, &block_path, helmfile, &mut config)?;
            }
        }
        let adopt = raw.adopt.unwrap_or_default();
        for (k, named) in adopt.iter().enumerate() {
            let parts: Vec<&str> = named.split('/').collect();
            if !(2..=3).contains(&parts.len()) || parts.iter().any(|p| p.is_empty()) {
                return Err(ConfigError::Invalid {
                    message: format!(
                        "manifest `{name}`: `adopt` entry `{named}` is not `<Kind>/<name>` or `<Kind>/<namespace>/<name>`"
                    ),
                    hint: Some(
                        "name one object per entry, as `ConfigMap/kube-system/coredns` or `ClusterRole/edit`".to_owned(),
                    ),
                    at: doc.value_span(&path.key("adopt").index(k)),
                });
            }
        }
        let handover = match raw.handover {
            None => None,
            Some(raw_handover) => {
                let objects = raw_handover.objects.unwrap_or_default();
                let objects_path = path.key("handover").key("objects");
                for (k, named) in objects.iter().enumerate() {
                    let parts: Vec<&str> = named.split('/').collect();
                    if !(2..=3).contains(&parts.len()) || parts.iter().any(|p| p.is_empty()) {
                        return Err(ConfigError::Invalid {
                            message: format!(
                                "manifest `{name}`: `handover.objects` entry `{named}` is not `<Kind>/<name>` or `<Kind>/<namespace>/<name>`"
                            ),
                            hint: Some(
                                "name one object per entry, as `Kustomization/flux-system/flux-system`, or leave `objects` out to hand over every object".to_owned(),
                            ),
                            at: doc.value_span(&objects_path.index(k)),
                        });
                    }
                }
                let after = match raw_handover.after {
                    Some(crate::config::raw::RawAfter::Applied) => crate::policy::After::Applied,
                    Some(crate::config::raw::RawAfter::Ready) | None => crate::policy::After::Ready,
                };
                if after == crate::policy::After::Ready && wait == Some(Wait::Off) {
                    return Err(ConfigError::Invalid {
                        message: format!(
                            "manifest `{name}` hands over `after: ready` but does not wait (`wait: false`)"
                        ),
                        hint: Some(
                            "set `handover.after: applied` to hand over without waiting, or let the manifest wait".to_owned(),
                        ),
                        at: doc.value_span(&path.key("wait")),
                    });
                }
                Some(crate::policy::Handover {
                    to: raw_handover.to,
                    after,
                    objects,
                })
            }
        };
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
                create_namespace: create_namespace.unwrap_or(false),
                adopt,
                handover,
                tests,
                parallel: match nesting {
                    Nesting::ParallelChild(parent) => Some(parent.name.clone()),
                    _ => None,
                },
                config,
                base_dir: doc.dir.clone(),
                origin: doc.value_span(path).location,
            },
            type_at: *doc.value_span(&path.key("type")),
            depends_at,
        });
        Ok(())
    }

    /// The name Go Tazuna's `check --fix` gives a manifest without one:
    /// `<type>-<dir>`, with `<dir>` the last element of `path`, lowercased, and
    /// anything but `[a-z0-9-]` made `-`; `<type>` without a path, `manifest`
    /// without a type; `-2`, `-3`, … after a name already taken.
    pub(super) fn go_name(kind: Option<&str>, path: Option<&str>, claims: &[Claim]) -> String {
        let kind = kind.filter(|k| !k.is_empty()).unwrap_or("manifest");
        let dir: String = path
            .and_then(|p| p.trim_end_matches('/').rsplit('/').next())
            .unwrap_or("")
            .to_lowercase()
            .chars()
            .map(|c| {
                if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        let dir = dir.trim_matches('-');
        let base = if dir.is_empty() {
            kind.to_owned()
        } else {
            format!("{kind}-{dir}")
        };
        let taken = |name: &str| claims.iter().any(|c| c.name == name);
        if !taken(&base) {
            return base;
        }
        (2..)
            .map(|n| format!("{base}-{n}"))
            .find(|name| !taken(name))
            .expect("some suffix is free")
    }

    /// Go Tazuna's `type: parallel`: its children become manifests of their own at the
    /// parent's position, sharing the parent's `dependsOn` and tags.
    pub(super) fn expand_parallel(
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
pub(super) fn go_helmfile_wait(config: &serde_json::Value) -> Option<Wait> {
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
            load_balancers: LoadBalancers::Ignored,
        }),
    }
}

/// Whether `reference` (after `oci://`) has the shape
/// `host[:port]/repo[:tag][@digest]`: a tag's `:` is in the last path segment,
/// a port's in the first.
pub(super) fn is_oci_reference(reference: &str) -> bool {
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

pub(super) fn parse_wait(
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
            let load_balancers = if raw.load_balancers == Some(true) {
                LoadBalancers::Awaited
            } else {
                LoadBalancers::Ignored
            };
            Ok(Some(Wait::On {
                timeout,
                load_balancers,
            }))
        }
        Some(other) => Err(ConfigError::WrongType {
            field: path.to_string(),
            expected:
                "`true`, `false` or a mapping with `enabled`, `timeoutSeconds` and `loadBalancers`"
                    .to_owned(),
            found: describe(other),
            at: doc.value_span(path),
        }),
    }
}

/// Names: pattern, reserved word, uniqueness (in declaration order, after expansion).
pub(super) fn check_names(claims: &[Claim]) -> Result<(), ConfigError> {
    let mut seen: HashMap<&str, &Claim> = HashMap::new();
    for claim in claims {
        let name = claim.name.as_str();
        let reason = if name.is_empty() {
            Some("names must not be empty")
        } else if name == RESERVED_NAME {
            Some("the name is reserved")
        } else if !name_pattern().is_match(name) && !spaced_name(name) {
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

/// A warning for each manifest name with spaces, with the edits that rename
/// it (spaces to `-`) and every `dependsOn` that names it, unless the new
/// name is taken.
pub(super) fn name_warnings(claims: &[Claim], entries: &[Entry]) -> Vec<Warning> {
    let taken: std::collections::HashSet<&str> = claims.iter().map(|c| c.name.as_str()).collect();
    claims
        .iter()
        .filter(|claim| spaced_name(&claim.name))
        .map(|claim| {
            let to = claim.name.split(' ').filter(|w| !w.is_empty()).collect::<Vec<_>>().join("-");
            let free = !taken.contains(to.as_str());
            let mut edits = Vec::new();
            if free {
                edits.push(Edit {
                    at: (*claim.at).clone(),
                    from: claim.name.clone(),
                    to: to.clone(),
                });
                for entry in entries {
                    for (target, at) in entry.manifest.depends_on.iter().zip(&entry.depends_at) {
                        if *target == claim.name {
                            edits.push(Edit {
                                at: at.clone(),
                                from: target.clone(),
                                to: to.clone(),
                            });
                        }
                    }
                }
            }
            Warning {
                message: format!(
                    "manifest name `{}` has spaces, which `tazuna check` refuses",
                    claim.name
                ),
                hint: if free {
                    format!("rename it `{to}` (and every `dependsOn` naming it): `tazuna check --fix` does both")
                } else {
                    format!("rename it: `{to}` is taken, so `tazuna check --fix` cannot")
                },
                at: (*claim.at).clone(),
                edits,
            }
        })
        .collect()
}

pub(super) fn check_dependencies(entries: &[Entry]) -> Result<(), ConfigError> {
    let names: Vec<&str> = entries.iter().map(|e| e.manifest.name.as_str()).collect();
    let known: std::collections::HashSet<&str> = names.iter().copied().collect();
    for entry in entries {
        let name = &entry.manifest.name;
        for (target, at) in entry.manifest.depends_on.iter().zip(&entry.depends_at) {
            if target == name {
                return Err(ConfigError::SelfDependency {
                    name: name.clone(),
                    at: Box::new(at.clone()),
                });
            }
            if !known.contains(target.as_str()) {
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
