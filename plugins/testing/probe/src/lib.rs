//! `probe`: a source plugin that misbehaves on request, so tests can check the host's sandbox.
//!
//! Its config picks what it does on `render`:
//!
//! | config                                   | behaviour                                                   |
//! |------------------------------------------|-------------------------------------------------------------|
//! | `{}` or `{"action": "ok"}`               | renders one ConfigMap named after the manifest              |
//! | `{"action": "loop"}`                     | spins forever (the host's time budget must stop it)         |
//! | `{"action": "alloc"}`                    | allocates 1 MiB chunks without bound (the memory budget must stop it) |
//! | `{"action": "read", "file": "/etc/passwd"}` or `{"file": "../outside"}` | reads a file; a relative `file` is taken from the manifest directory. Failing is `other(<error>)`; succeeding renders a ConfigMap holding the content, so a test sees the sandbox leak |
//! | `{"action": "exec", "tool": "helm", "args": ["version"]}` | calls the `exec` import; a denial is returned as is, an output is rendered as a ConfigMap. `"variables": {"NAME": ["ref+env:CI_", "TOKEN"]}` sets the tool's environment, each value joined from its parts (so a test can hand a reference its config never writes whole) |
//! | `{"action": "env"}`                      | renders a ConfigMap of the environment variables it can see |
//! | `{"action": "log"}`                      | logs one message at each level, then renders like `ok`      |
//! | `{"action": "trap"}`                     | panics                                                      |
//! | `{"action": "invalid-yaml"}`             | returns a document that is not valid YAML                   |
//! | `{"action": "emit", "objects": [...]}`   | renders the given objects as they are (a plugin that reaches for cluster-admin) |
//! | `{"action": "helm-template", "release": "demo", "chart": "/manifest/chart"}` | asks the host for `helm template` through the typed `tools` import; the output is rendered as a ConfigMap |
//! | `{"action": "sleep", "seconds": 600}`    | sleeps in a WASI clock wait (the host's time budget must end the wait) |
//! | `{"action": "flood", "count": 200000, "bytes": 10}` | renders `count` ConfigMaps of `bytes` bytes of data each (the host's output caps must refuse it) |
//! | `{"action": "walk"}`                     | reads every file it can find under `/manifest` (links followed) and renders a ConfigMap of path to content: what a plugin that reads all it sees would take |
//! | `{"action": "fill", "count": 3, "bytes": 536870912}` | writes `count` files of `bytes` bytes each to `/scratch` (the host's scratch bound must stop it); renders how many bytes it wrote, or fails with the error |
//!
//! It requests `exec:echo`, so tests can show both halves of the rule: a requested
//! capability takes effect only once granted, and a grant of anything it did not request
//! gives it nothing. It also requests every `emit:` scope (`emit:namespace:*`,
//! `emit:namespace:kube-system`, `emit:cluster:*`, `emit:kind:*`, `emit:object:*`), so what it may create
//! is exactly what a test grants, and `secrets:env:*`, so which environment variables its
//! Secrets may name is too, and `secrets:exec`, so a test can hand its tools references.

use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;
use tazuna_sdk::exec::Command;
use tazuna_sdk::tools::HelmTemplateRequest;
use tazuna_sdk::{Manifest, PluginError, PluginInfo, RenderOutput, RenderRequest, SourcePlugin};

/// What the probe should do.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
enum Action {
    #[default]
    Ok,
    Loop,
    Alloc,
    Read,
    Exec,
    Env,
    Log,
    Trap,
    InvalidYaml,
    Emit,
    /// `emit`, each string `{{random}}` drawn anew, declared not deterministic.
    Drawn,
    Sleep,
    Flood,
    Fill,
    Walk,
    HelmTemplate,
}

/// The probe's config block.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Config {
    /// What to do; `read` when only `file` is given, else `ok`.
    action: Option<Action>,
    /// The guest path `read` opens.
    file: Option<String>,
    /// The tool `exec` runs.
    tool: Option<String>,
    /// Arguments for `exec`.
    #[serde(default)]
    args: Vec<String>,
    /// The tool's environment for `exec`: each value joined from its parts.
    #[serde(default)]
    variables: BTreeMap<String, Vec<String>>,
    /// The objects `emit` renders.
    #[serde(default)]
    objects: Vec<serde_json::Value>,
    /// How long `sleep` sleeps.
    #[serde(default)]
    seconds: u64,
    /// How many objects `flood` renders.
    #[serde(default)]
    count: usize,
    /// How many bytes of data each object of `flood` holds.
    #[serde(default)]
    bytes: usize,
    /// The release `helm-template` asks for.
    release: Option<String>,
    /// The chart `helm-template` asks for.
    chart: Option<String>,
}

struct Probe;

impl SourcePlugin for Probe {
    type Config = Config;

    fn info() -> PluginInfo {
        PluginInfo::new("probe", env!("CARGO_PKG_VERSION"))
            .with_description("Misbehaves on request, to test the host's sandbox.")
            .with_capability("exec:echo")
            .with_capability("exec:helm")
            .with_capability("exec-argv:helm")
            .with_capability("emit:namespace:*")
            .with_capability("emit:namespace:kube-system")
            .with_capability("emit:cluster:*")
            .with_capability("emit:kind:*")
            .with_capability("emit:object:*")
            .with_capability("secrets:env:*")
            .with_capability("secrets:exec")
    }

    fn render(config: Config, request: &RenderRequest) -> Result<RenderOutput, PluginError> {
        let action = match (config.action, &config.file) {
            (Some(action), _) => action,
            (None, Some(_)) => Action::Read,
            (None, None) => Action::Ok,
        };
        let data = match action {
            Action::Ok => BTreeMap::from([("action".to_owned(), "ok".to_owned())]),
            Action::Loop => spin(),
            Action::Alloc => exhaust_memory(),
            Action::Read => read(config.file.as_deref(), &request.workdir)?,
            Action::Exec => exec(config.tool.as_deref(), config.args, &config.variables)?,
            Action::Env => std::env::vars().collect(),
            Action::Log => {
                tazuna_sdk::log::trace("probe: trace");
                tazuna_sdk::log::debug("probe: debug");
                tazuna_sdk::log::info("probe: info");
                tazuna_sdk::log::warn("probe: warn");
                tazuna_sdk::log::error("probe: error");
                BTreeMap::from([("action".to_owned(), "log".to_owned())])
            }
            Action::Trap => panic!("probe: trap requested"),
            Action::Emit => {
                let mut documents = Vec::new();
                for object in &config.objects {
                    documents.push(Manifest::from_object(object)?.with_origin("emit"));
                }
                return Ok(RenderOutput::new(documents));
            }
            Action::Drawn => {
                use std::hash::{BuildHasher, RandomState};
                let drawn = format!("{:016x}", RandomState::new().hash_one(0u8));
                let mut documents = Vec::new();
                for object in &config.objects {
                    let text = object.to_string().replace("{{random}}", &drawn);
                    let object: serde_json::Value =
                        serde_json::from_str(&text).map_err(PluginError::other)?;
                    documents.push(Manifest::from_object(&object)?.with_origin("drawn"));
                }
                tazuna_sdk::traits::declare(tazuna_sdk::traits::RenderTraits {
                    reads_cluster: false,
                    deterministic: false,
                });
                return Ok(RenderOutput::new(documents));
            }
            Action::HelmTemplate => {
                let output = tazuna_sdk::tools::helm_template(&HelmTemplateRequest {
                    release: config.release.unwrap_or_default(),
                    chart: config.chart.unwrap_or_default(),
                    version: None,
                    repo: None,
                    namespace: request.namespace.clone(),
                    values_files: Vec::new(),
                    include_crds: false,
                    kube_version: None,
                    api_versions: Vec::new(),
                })?;
                BTreeMap::from([("stdout".to_owned(), output.stdout_text().into_owned())])
            }
            Action::Sleep => {
                std::thread::sleep(std::time::Duration::from_secs(config.seconds));
                BTreeMap::from([("action".to_owned(), "slept".to_owned())])
            }
            Action::Flood => {
                let data = "x".repeat(config.bytes);
                let documents = (0..config.count)
                    .map(|index| {
                        Manifest::new(format!(
                            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: flood-{index}\ndata:\n  x: {data}\n"
                        ))
                    })
                    .collect();
                return Ok(RenderOutput::new(documents));
            }
            Action::Fill => fill(config.count, config.bytes)?,
            Action::Walk => walk(&request.workdir),
            Action::InvalidYaml => {
                return Ok(RenderOutput::new(vec![
                    Manifest::new("kind: ConfigMap\nmetadata: {name: [unclosed\n")
                        .with_origin("broken.yaml#0"),
                ]));
            }
        };
        let config_map = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": format!("probe-{}", request.manifest_name.to_lowercase().replace('_', "-")),
                "namespace": request.namespace,
            },
            "data": data,
        });
        Ok(RenderOutput::new(vec![
            Manifest::from_object(&config_map)?.with_origin("probe"),
        ]))
    }
}

fn spin() -> ! {
    let mut turns = 0u64;
    loop {
        turns = std::hint::black_box(turns.wrapping_add(1));
    }
}

fn exhaust_memory() -> ! {
    const CHUNK: usize = 1 << 20;
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut chunk = vec![0u8; CHUNK];
        // Touch every page so the memory is really committed.
        for page in chunk.iter_mut().step_by(4096) {
            *page = 1;
        }
        chunks.push(std::hint::black_box(chunk));
    }
}

fn read(file: Option<&str>, workdir: &str) -> Result<BTreeMap<String, String>, PluginError> {
    let file = file.ok_or_else(|| PluginError::other("`read` needs a `file`"))?;
    let path = Path::new(workdir).join(file);
    let content = std::fs::read_to_string(&path)
        .map_err(|error| PluginError::other(format_args!("read `{}`: {error}", path.display())))?;
    Ok(BTreeMap::from([
        ("file".to_owned(), path.display().to_string()),
        ("content".to_owned(), content),
    ]))
}

fn exec(
    tool: Option<&str>,
    args: Vec<String>,
    variables: &BTreeMap<String, Vec<String>>,
) -> Result<BTreeMap<String, String>, PluginError> {
    let tool = tool.ok_or_else(|| PluginError::other("`exec` needs a `tool`"))?;
    let mut command = Command::new(tool).args(args);
    for (name, parts) in variables {
        command = command.env(name.clone(), parts.concat());
    }
    let output = command.run()?;
    Ok(BTreeMap::from([
        ("exitCode".to_owned(), output.exit_code.to_string()),
        ("stdout".to_owned(), output.stdout_text().into_owned()),
        ("stderr".to_owned(), output.stderr_text().into_owned()),
        ("truncated".to_owned(), output.truncated.to_string()),
    ]))
}

tazuna_sdk::export_source_plugin!(Probe);

/// Write `count` files of `bytes` bytes each to scratch, 16 MiB at a time.
fn fill(count: usize, bytes: usize) -> Result<BTreeMap<String, String>, PluginError> {
    use std::io::Write;
    let chunk = vec![1u8; 16 << 20];
    let mut written = 0usize;
    for index in 0..count {
        let path = format!("/scratch/fill-{index}");
        let mut file =
            std::fs::File::create(&path).map_err(|e| PluginError::Other(format!("{path}: {e}")))?;
        let mut left = bytes;
        while left > 0 {
            let n = left.min(chunk.len());
            file.write_all(&chunk[..n])
                .map_err(|e| PluginError::Other(format!("{path} after {written} bytes: {e}")))?;
            written += n;
            left -= n;
        }
    }
    Ok(BTreeMap::from([(
        "written".to_owned(),
        written.to_string(),
    )]))
}

/// Every file under `root`, path to content (unreadable ones say why).
fn walk(root: &str) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    let mut pending = vec![std::path::PathBuf::from(root)];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let key = path
                    .display()
                    .to_string()
                    .trim_start_matches(root)
                    .trim_start_matches('/')
                    .replace('/', "__");
                let content = std::fs::read_to_string(&path).unwrap_or_else(|e| format!("({e})"));
                found.insert(key, content);
            }
        }
    }
    found
}
