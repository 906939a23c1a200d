//! Plugin-host overhead, measured with criterion. Results: docs/benchmarks.md.
//!
//! - `load/cold/<plugin>`: compile, link and describe a built-in with no cache;
//! - `load/warm/<plugin>`: the same from the on-disk compile cache;
//! - `call/render-empty`: a fresh store, instantiation and one render of a
//!   manifest with nothing in it (the per-call overhead);
//! - `quickstart/tazuna`: load the quickstart's tazuna.yaml, load its plugin from
//!   a warm cache, render every manifest in the sandbox and write YAML;
//! - `quickstart/native`: the same objects parsed natively with serde_yaml,
//!   namespaced and written as YAML: what the sandbox costs against no sandbox.

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use tazuna_core::config::{self, LoadOptions};
use tazuna_plugin_host::host::{Grants, HostSettings, PluginHost, RenderRequest};
use tazuna_plugin_host::plugins::{BUILTINS, PluginSet, Role};
use tazuna_plugin_host::render::{self, RenderSettings};

fn quickstart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/quickstart")
}

fn host(cache: Option<&Path>) -> PluginHost {
    PluginHost::new(HostSettings {
        cache_dir: cache.map(Path::to_owned),
        ..HostSettings::default()
    })
    .expect("plugin host")
}

fn load(c: &mut Criterion) {
    let cache = tempfile::tempdir().unwrap();
    let cold = host(None);
    let warm = host(Some(cache.path()));
    let mut group = c.benchmark_group("load");
    for builtin in BUILTINS {
        group.bench_function(format!("cold/{}", builtin.name), |b| {
            b.iter(|| {
                cold.load_source(builtin.name, builtin.component, Grants::Requested)
                    .unwrap()
            })
        });
        // Fill the cache once; every measured load then compiles nothing.
        warm.load_source(builtin.name, builtin.component, Grants::Requested)
            .unwrap();
        group.bench_function(format!("warm/{}", builtin.name), |b| {
            b.iter(|| {
                warm.load_source(builtin.name, builtin.component, Grants::Requested)
                    .unwrap()
            })
        });
    }
    group.finish();
}

fn call(c: &mut Criterion) {
    let empty = tempfile::tempdir().unwrap();
    let host = host(None);
    let plugin = host
        .load_source("manifests", BUILTINS[0].component, Grants::Requested)
        .unwrap();
    let request = || RenderRequest {
        manifest_name: "empty".into(),
        path: Some(".".into()),
        config: "{}".into(),
        namespace: None,
        environment: None,
        values: "{}".into(),
        cluster: None,
        locked: None,
        workdir: String::new(),
        scratch: String::new(),
    };
    c.bench_function("call/render-empty", |b| {
        b.iter(|| {
            let out = host
                .render(&plugin, empty.path(), request())
                .unwrap()
                .unwrap();
            black_box(out)
        })
    });
}

fn build(c: &mut Criterion) {
    let dir = quickstart();
    let cache = tempfile::tempdir().unwrap();
    let options = LoadOptions::new(semver::Version::parse(env!("CARGO_PKG_VERSION")).unwrap());
    let host = host(Some(cache.path()));
    PluginSet::load(
        &host,
        &[("manifests", Role::Source)],
        &[],
        &Default::default(),
    )
    .unwrap();

    let mut group = c.benchmark_group("quickstart");
    group.sample_size(30);
    group.bench_function("tazuna", |b| {
        b.iter(|| {
            let config = config::load(&dir.join("tazuna.yaml"), &options).unwrap();
            let manifests: Vec<_> = config.manifests.iter().collect();
            let plugins = PluginSet::load(
                &host,
                &[("manifests", Role::Source)],
                &[],
                &Default::default(),
            )
            .unwrap();
            let results =
                render::render_all(&host, &plugins, &manifests, &RenderSettings::default());
            let rendered: Vec<_> = results.iter().map(|r| r.as_ref().unwrap()).collect();
            // What `tazuna build` prints (the CLI's YAML stream), without the
            // `# Source:` comments.
            let mut out = Vec::with_capacity(2 << 20);
            for object in rendered.iter().flat_map(|m| &m.objects) {
                out.extend_from_slice(b"---\n");
                out.extend_from_slice(serde_yaml::to_string(&object.value).unwrap().as_bytes());
            }
            black_box(out)
        })
    });
    group.bench_function("native", |b| {
        b.iter(|| {
            let mut out = Vec::with_capacity(2 << 20);
            for file in [
                "argo-cd/install.yaml",
                "argo-cd/namespace.yaml",
                "projects/platform.yaml",
            ] {
                let text = std::fs::read_to_string(dir.join(file)).unwrap();
                for doc in serde_yaml::Deserializer::from_str(&text) {
                    let mut value: serde_json::Value =
                        serde::Deserialize::deserialize(doc).unwrap();
                    if value.is_null() {
                        continue;
                    }
                    if value["metadata"]["namespace"].is_null() {
                        value["metadata"]["namespace"] = "argocd".into();
                    }
                    out.extend_from_slice(b"---\n");
                    out.extend_from_slice(serde_yaml::to_string(&value).unwrap().as_bytes());
                }
            }
            black_box(out)
        })
    });
    group.finish();
}

criterion_group!(benches, load, call, build);
criterion_main!(benches);
