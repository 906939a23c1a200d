//! Table tests from case folders, following Spin's `tests/ui`.
//!
//! Each folder under `tests/cases/` holds a `tazuna.yaml` (plus whatever it includes), an
//! optional `options` file, and `expected.txt`: either the rendered error or a summary of the
//! loaded config. Run with `BLESS=1` to rewrite the expected files from the actual output.
//!
//! `options` lines, all optional:
//! - `environment: <name>`: `-e`;
//! - `cluster: <name>`: `--cluster`;
//! - `version: <semver>`: the running tazuna (default `0.5.0`);
//! - `known: a, b`: types for `check_types` (default: the built-ins);
//! - `tags: a, b`: a `--tags` selection to print (and whose errors to render).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use tazuna_core::config::{self, Check, Config, LoadBalancers, LoadOptions, PluginSource, Wait};
use tazuna_core::graph;

#[derive(Default)]
struct Options {
    environment: Option<String>,
    cluster: Option<String>,
    version: Option<String>,
    known: Option<Vec<String>>,
    tags: Vec<String>,
}

fn list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn read_options(dir: &Path) -> Options {
    let mut options = Options::default();
    let Ok(text) = std::fs::read_to_string(dir.join("options")) else {
        return options;
    };
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (key, value) = line
            .split_once(':')
            .expect("options lines are `key: value`");
        let value = value.trim();
        match key.trim() {
            "environment" => options.environment = Some(value.to_owned()),
            "cluster" => options.cluster = Some(value.to_owned()),
            "version" => options.version = Some(value.to_owned()),
            "known" => options.known = Some(list(value)),
            "tags" => options.tags = list(value),
            other => panic!("unknown option `{other}` in {}", dir.display()),
        }
    }
    options
}

fn run_case(dir: &Path) -> String {
    let options = read_options(dir);
    let version = options.version.as_deref().unwrap_or("0.5.0");
    let opts = LoadOptions {
        environment: options.environment.clone(),
        cluster: options.cluster.clone(),
        discovered: None,
        tazuna_version: semver::Version::parse(version).unwrap(),
    };
    let config = match config::load(&dir.join("tazuna.yaml"), &opts) {
        Ok(config) => config,
        Err(err) => return err.render(),
    };
    let known: Vec<&str> = match &options.known {
        Some(known) => known.iter().map(String::as_str).collect(),
        None => config::BUILTIN_TYPES.to_vec(),
    };
    if let Err(err) = config.check_types(&known) {
        return err.render();
    }
    let selected = match config.select(&options.tags) {
        Ok(selected) => selected,
        Err(err) => return err.render(),
    };
    summary(&config, &selected, &options.tags)
}

fn json(value: &serde_json::Value) -> String {
    serde_json::to_string(value).unwrap()
}

fn summary(config: &Config, selected: &[&config::Manifest], tags: &[String]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "ok: {}", config.file.display());
    let files: Vec<String> = config
        .files
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    let _ = writeln!(out, "files: {}", files.join(", "));
    if let Some(version) = &config.spec.minimum_supported_tazuna_version {
        let _ = writeln!(out, "minimum tazuna: {version}");
    }
    if let Some(env) = &config.environment {
        let _ = writeln!(
            out,
            "environment: {} values={}",
            env.name,
            json(&env.values)
        );
    }
    if let Some(target) = &config.target {
        let _ = writeln!(
            out,
            "cluster {} of {}: context={:?} kubeconfig={:?} labels={:?} values={}",
            target.name,
            target.environment,
            target.context,
            target.kubeconfig.as_ref().map(|k| k.display().to_string()),
            target.labels,
            json(&target.values)
        );
    }
    for wave in &config.spec.rollout.waves {
        let _ = writeln!(
            out,
            "wave {}: environments={:?} clusters={:?} selector={:?}",
            wave.name,
            wave.environments,
            wave.clusters,
            wave.selector.as_ref().map(ToString::to_string)
        );
    }
    let rule = config.context_rule();
    let patterns: Vec<&str> = rule.patterns.iter().map(|p| p.as_str()).collect();
    let _ = writeln!(out, "context: {:?} {:?}", rule.mode, patterns);
    if let Some(cluster) = config.cluster() {
        let _ = writeln!(out, "cluster: uid={:?}", cluster.uid);
    }
    for plugin in &config.spec.plugins {
        let source = match &plugin.source {
            PluginSource::Oci { reference } => format!("oci {reference}"),
            PluginSource::File { path } => format!("file {}", path.display()),
        };
        let version = plugin.version.as_ref().map(ToString::to_string);
        let _ = writeln!(
            out,
            "plugin: {} from {source} version={version:?} digest={:?} grants={:?}",
            plugin.name, plugin.digest, plugin.grants
        );
    }
    for provider in &config.spec.providers {
        let _ = writeln!(
            out,
            "provider: {} ({}) {}",
            provider.name,
            provider.kind,
            json(&provider.config)
        );
    }
    for test in &config.spec.tests {
        let _ = writeln!(out, "spec test: {}", describe_test(test));
    }
    for warning in &config.warnings {
        let _ = writeln!(
            out,
            "warning: {} at {} (hint: {}; {} edits)",
            warning.message,
            warning.at.location,
            warning.hint,
            warning.edits.len()
        );
    }
    let _ = writeln!(out, "manifests:");
    for m in &config.manifests {
        let _ = writeln!(out, "  - {} ({}) at {}", m.name, m.kind, m.origin);
        if let Some(description) = &m.description {
            let _ = writeln!(out, "      description: {description}");
        }
        let _ = writeln!(
            out,
            "      path: {:?} in {} -> {:?}",
            m.path,
            m.base_dir.display(),
            m.resolved_path().map(|p| p.display().to_string())
        );
        if !m.tags.is_empty() {
            let _ = writeln!(out, "      tags: {:?}", m.tags);
        }
        if !m.depends_on.is_empty() {
            let _ = writeln!(out, "      dependsOn: {:?}", m.depends_on);
        }
        if let Some(parent) = &m.parallel {
            let _ = writeln!(out, "      parallel child of: {parent}");
        }
        if let Some(namespace) = &m.namespace {
            let _ = writeln!(out, "      namespace: {namespace}");
        }
        let wait = match m.wait {
            Wait::Off => "off".to_owned(),
            Wait::On {
                timeout,
                load_balancers: LoadBalancers::Ignored,
            } => format!("{}s", timeout.as_secs()),
            Wait::On {
                timeout,
                load_balancers: LoadBalancers::Awaited,
            } => format!("{}s, load balancers", timeout.as_secs()),
        };
        let _ = writeln!(out, "      wait: {wait}, prune: {}", m.prune);
        if let Some(handover) = &m.handover {
            let _ = writeln!(out, "      handover: {handover:?}");
        }
        let _ = writeln!(out, "      config: {}", json(&m.config));
        for test in &m.tests {
            let _ = writeln!(out, "      test: {}", describe_test(test));
        }
    }
    let refs: Vec<&config::Manifest> = config.manifests.iter().collect();
    let _ = writeln!(out, "layers:");
    for (n, layer) in graph::layers(&refs).iter().enumerate() {
        let names: Vec<&str> = layer.iter().map(|&i| refs[i].name.as_str()).collect();
        let _ = writeln!(out, "  {}: {}", n + 1, names.join(", "));
    }
    let tag_map = config.tags();
    if !tag_map.is_empty() {
        let _ = writeln!(out, "tags:");
        for (tag, names) in &tag_map {
            let _ = writeln!(out, "  {tag}: {}", names.join(", "));
        }
    }
    if !tags.is_empty() {
        let _ = writeln!(out, "selected by {}:", tags.join(","));
        for (n, layer) in graph::layers(selected).iter().enumerate() {
            let names: Vec<&str> = layer.iter().map(|&i| selected[i].name.as_str()).collect();
            let _ = writeln!(out, "  {}: {}", n + 1, names.join(", "));
        }
    }
    out
}

fn describe_test(test: &config::Test) -> String {
    let check = match &test.check {
        Check::WaitUntil(w) => format!(
            "WaitUntil {} {} {:?}/{} until {:?}",
            w.resource.api_version, w.resource.kind, w.namespace, w.name, w.condition
        ),
        Check::ExistNonExist(e) => format!(
            "ExistNonExist {} {} {:?}/{} shouldExist={}",
            e.resource.api_version, e.resource.kind, e.namespace, e.name, e.should_exist
        ),
    };
    format!(
        "{check} success>={} failure={:?} timeout={:?} interval={:?} at {}",
        test.min_consecutive_success_count,
        test.min_consecutive_failure_count,
        test.timeout.map(|t| t.as_secs()),
        test.interval.as_secs(),
        test.origin
    )
}

#[test]
fn cases() {
    let root = PathBuf::from("tests/cases");
    let bless = std::env::var_os("BLESS").is_some_and(|v| v != "0");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no cases under {}", root.display());
    let mut failures = Vec::new();
    for dir in &dirs {
        let actual = run_case(dir);
        let expected_path = dir.join("expected.txt");
        if bless {
            std::fs::write(&expected_path, &actual).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if expected != actual {
            failures.push(format!(
                "--- {}\n--- expected:\n{expected}--- actual:\n{actual}",
                dir.display()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ (run with BLESS=1 to accept):\n{}",
        failures.len(),
        dirs.len(),
        failures.join("\n")
    );
}
