//! The benchmark's workloads, each written once into its own directory with
//! what every tool needs: Tazuna's `tazuna.yaml`, the plain objects kubectl,
//! Flux and the floor apply, and the charts and helmfile helm and helmfile
//! install. The objects are the same for every tool.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;
use tazuna_controlplane::{Assets, Tool as Binary};

use super::Tool;
use crate::shell::run;

/// What a workload is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Argo CD's install manifests plus N ConfigMaps, no waits.
    Bulk(usize),
    /// cert-manager (with its CRDs) and ingress-nginx, waited for.
    Charts,
    /// The same two charts as two helmfile releases, ingress-nginx `needs:`
    /// cert-manager.
    Helmfile,
    /// 20 manifests in a dependency graph of depth 5, each a Deployment
    /// waited for.
    Dag,
}

/// One workload, written out.
#[derive(Clone, Debug)]
pub struct Workload {
    pub id: String,
    pub kind: Kind,
    pub dir: PathBuf,
}

/// The DAG workload's shape: levels of manifests, each manifest depending on
/// two of the level before it.
pub const DAG_LEVELS: usize = 5;
pub const DAG_WIDTH: usize = 4;

impl Workload {
    /// The tools measured on it; Tazuna first.
    pub fn tools(&self) -> &'static [Tool] {
        match self.kind {
            Kind::Bulk(_) => &[Tool::Tazuna, Tool::Kubectl, Tool::Flux, Tool::Floor],
            Kind::Charts => &[Tool::Tazuna, Tool::Helm, Tool::Floor],
            Kind::Helmfile => &[Tool::Tazuna, Tool::Helmfile, Tool::Floor],
            Kind::Dag => &[Tool::Tazuna, Tool::Kubectl, Tool::Flux, Tool::Floor],
        }
    }

    /// The plain objects (kubectl, Flux, floor): a directory Flux's artifact
    /// is made of.
    pub fn objects(&self) -> PathBuf {
        self.dir.join("objects")
    }

    /// The floor's stages, as its arguments (see engine/kube/examples/ssa_floor.rs).
    pub fn floor_stages(&self) -> Vec<String> {
        let file = |ns: &str, path: &str| format!("{ns}={}", self.dir.join(path).display());
        match self.kind {
            Kind::Bulk(_) => vec![
                [
                    file("argocd", "objects/argo-cd/namespace.yaml"),
                    file("argocd", "objects/argo-cd/install.yaml"),
                    file("bulk", "objects/bulk/namespace.yaml"),
                    file("bulk", "objects/bulk/configmaps.yaml"),
                ]
                .join(","),
            ],
            // helm's phases, each waited for: pre-install hooks, the
            // release, post-install hooks. Both charts side by side, as the
            // helm peer runs them.
            Kind::Charts => PHASES
                .iter()
                .enumerate()
                .map(|(i, phase)| {
                    let mut files: Vec<String> = CHARTS
                        .iter()
                        .map(|chart| file(chart, &format!("rendered/{chart}-{phase}.yaml")))
                        .collect();
                    if i == 0 {
                        files.insert(0, file("default", "rendered/namespaces.yaml"));
                    }
                    files.join(",")
                })
                .collect(),
            // The same phases, ingress-nginx after cert-manager (`needs:`).
            Kind::Helmfile => CHARTS
                .iter()
                .flat_map(|chart| {
                    PHASES
                        .iter()
                        .map(move |phase| file(chart, &format!("rendered/{chart}-{phase}.yaml")))
                })
                .enumerate()
                .map(|(i, stage)| {
                    if i == 0 {
                        format!("{},{stage}", file("default", "rendered/namespaces.yaml"))
                    } else {
                        stage
                    }
                })
                .collect(),
            Kind::Dag => (0..DAG_LEVELS)
                .map(|level| {
                    (0..DAG_WIDTH)
                        .map(|i| {
                            let m = dag_name(level, i);
                            file(&format!("dag-{m}"), &format!("objects/{m}/objects.yaml"))
                        })
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .collect(),
        }
    }

    /// Whether the floor waits for Deployments between stages.
    pub fn waits(&self) -> bool {
        !matches!(self.kind, Kind::Bulk(_))
    }
}

/// Objects in Argo CD's install.yaml and its Namespace.
pub const ARGO_OBJECTS: usize = 60;

pub fn dag_name(level: usize, i: usize) -> String {
    format!("m{:02}", level * DAG_WIDTH + i)
}

/// The manifests `dag_name(level, i)` depends on.
pub fn dag_needs(level: usize, i: usize) -> Vec<String> {
    if level == 0 {
        return Vec::new();
    }
    vec![
        dag_name(level - 1, i),
        dag_name(level - 1, (i + 1) % DAG_WIDTH),
    ]
}

/// Writes every workload under `work`.
pub fn write_all(root: &Path, work: &Path, kinds: &[Kind]) -> anyhow::Result<Vec<Workload>> {
    let assets = Assets::locate();
    kinds
        .iter()
        .map(|&kind| {
            let id = match kind {
                Kind::Bulk(n) => format!("bulk-{n}"),
                Kind::Charts => "charts".to_owned(),
                Kind::Helmfile => "helmfile".to_owned(),
                Kind::Dag => "dag".to_owned(),
            };
            let dir = work.join(&id);
            std::fs::create_dir_all(&dir)?;
            match kind {
                Kind::Bulk(n) => write_bulk(root, &assets, &dir, n)?,
                Kind::Charts => write_charts(root, &assets, &dir)?,
                Kind::Helmfile => write_helmfile(root, &assets, &dir)?,
                Kind::Dag => write_dag(&dir)?,
            }
            Ok(Workload { id, kind, dir })
        })
        .collect::<anyhow::Result<Vec<_>>>()
        .context("writing the workloads")
}

const HEADER: &str = "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n  manifests:\n";

fn write_bulk(root: &Path, assets: &Assets, dir: &Path, count: usize) -> anyhow::Result<()> {
    let argo = dir.join("objects/argo-cd");
    std::fs::create_dir_all(&argo)?;
    std::fs::create_dir_all(dir.join("objects/bulk"))?;
    let quickstart = root.join("examples/quickstart/argo-cd");
    std::fs::copy(
        quickstart.join("namespace.yaml"),
        argo.join("namespace.yaml"),
    )?;
    // Every tool gets the objects with their namespace written in, as
    // `kustomize build` with `namespace: argocd` gives them.
    let scratch = dir.join("scratch");
    std::fs::create_dir_all(&scratch)?;
    std::fs::copy(
        quickstart.join("install.yaml"),
        scratch.join("install.yaml"),
    )?;
    std::fs::write(
        scratch.join("kustomization.yaml"),
        "namespace: argocd\nresources: [install.yaml]\n",
    )?;
    let rendered = Command::new(assets.path(Binary::Kustomize))
        .arg("build")
        .arg(&scratch)
        .output()
        .context("running the pinned kustomize")?;
    anyhow::ensure!(
        rendered.status.success(),
        "kustomize build: {}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    std::fs::write(argo.join("install.yaml"), &rendered.stdout)?;
    std::fs::remove_dir_all(&scratch)?;
    std::fs::write(
        dir.join("objects/bulk/namespace.yaml"),
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: bulk\n",
    )?;
    std::fs::write(dir.join("objects/bulk/configmaps.yaml"), configmaps(count))?;
    std::fs::write(
        dir.join("tazuna.yaml"),
        format!(
            "{HEADER}    - name: argocd\n      type: manifests\n      path: objects/argo-cd/*.yaml\n      namespace: argocd\n      wait: false\n    - name: bulk\n      type: manifests\n      path: objects/bulk/*.yaml\n      wait: false\n"
        ),
    )?;
    Ok(())
}

/// `count` ConfigMaps with 64-byte payloads in namespace `bulk`.
pub fn configmaps(count: usize) -> String {
    let mut text = String::new();
    for i in 0..count {
        let _ = write!(
            text,
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bulk-{i:05}\n  namespace: bulk\ndata:\n  index: \"{i}\"\n  payload: \"{}\"\n",
            "x".repeat(64)
        );
    }
    text
}

/// The values both chart workloads install with: cert-manager's CRDs on,
/// and ingress-nginx's Service a ClusterIP (a LoadBalancer gets no address
/// on a harness cluster, and `helm --wait` would wait for one).
const CERT_MANAGER_VALUES: &str = "crds:\n  enabled: true\n";
const INGRESS_NGINX_VALUES: &str = "controller:\n  service:\n    type: ClusterIP\n";

fn copy_charts(root: &Path, into: &Path) -> anyhow::Result<()> {
    for chart in ["cert-manager", "ingress-nginx"] {
        copy_dir(
            &root.join("tests/data/charts").join(chart),
            &into.join(chart),
        )?;
    }
    Ok(())
}

fn write_charts(root: &Path, assets: &Assets, dir: &Path) -> anyhow::Result<()> {
    copy_charts(root, &dir.join("charts"))?;
    std::fs::write(dir.join("cert-manager-values.yaml"), CERT_MANAGER_VALUES)?;
    std::fs::write(dir.join("ingress-nginx-values.yaml"), INGRESS_NGINX_VALUES)?;
    std::fs::write(
        dir.join("tazuna.yaml"),
        format!(
            "{HEADER}    - name: charts\n      type: parallel\n      parallel:\n        children:\n          - name: cert-manager\n            type: helm\n            path: charts/cert-manager\n            namespace: cert-manager\n            createNamespace: true\n            helm:\n              valuesFiles: [cert-manager-values.yaml]\n            wait: {{ timeoutSeconds: 300 }}\n          - name: ingress-nginx\n            type: helm\n            path: charts/ingress-nginx\n            namespace: ingress-nginx\n            createNamespace: true\n            helm:\n              valuesFiles: [ingress-nginx-values.yaml]\n            wait: {{ timeoutSeconds: 300 }}\n"
        ),
    )?;
    render_for_floor(assets, dir, &dir.join("charts"))
}

fn write_helmfile(root: &Path, assets: &Assets, dir: &Path) -> anyhow::Result<()> {
    let helmfile = dir.join("helmfile");
    copy_charts(root, &helmfile.join("charts"))?;
    std::fs::write(
        helmfile.join("cert-manager-values.yaml"),
        CERT_MANAGER_VALUES,
    )?;
    std::fs::write(
        helmfile.join("ingress-nginx-values.yaml"),
        INGRESS_NGINX_VALUES,
    )?;
    std::fs::write(
        helmfile.join("helmfile.yaml"),
        "helmDefaults:\n  wait: true\n  timeout: 300\nreleases:\n  - name: cert-manager\n    namespace: cert-manager\n    createNamespace: true\n    chart: ./charts/cert-manager\n    values: [cert-manager-values.yaml]\n  - name: ingress-nginx\n    namespace: ingress-nginx\n    createNamespace: true\n    chart: ./charts/ingress-nginx\n    needs: [cert-manager/cert-manager]\n    values: [ingress-nginx-values.yaml]\n",
    )?;
    std::fs::write(
        dir.join("tazuna.yaml"),
        format!(
            "{HEADER}    - name: namespaces\n      type: manifests\n      path: namespaces.yaml\n    - name: platform\n      type: helmfile\n      path: helmfile\n      dependsOn: [namespaces]\n      helmfile:\n        wait: true\n        timeoutSeconds: 300\n"
        ),
    )?;
    render_for_floor(assets, dir, &helmfile.join("charts"))?;
    // Tazuna's helmfile source does not create the releases' namespaces
    // (helmfile's `createNamespace`); a manifest before it does.
    std::fs::copy(
        dir.join("rendered/namespaces.yaml"),
        dir.join("namespaces.yaml"),
    )?;
    Ok(())
}

/// `helm template` of both charts (hooks included, as helm installs them),
/// split into helm's phases, and their Namespaces, for the floor.
fn render_for_floor(assets: &Assets, dir: &Path, charts: &Path) -> anyhow::Result<()> {
    let rendered = dir.join("rendered");
    std::fs::create_dir_all(&rendered)?;
    std::fs::write(
        rendered.join("namespaces.yaml"),
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: cert-manager\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: ingress-nginx\n",
    )?;
    for (chart, values) in [
        ("cert-manager", CERT_MANAGER_VALUES),
        ("ingress-nginx", INGRESS_NGINX_VALUES),
    ] {
        let values_file = rendered.join(format!("{chart}-values.yaml"));
        std::fs::write(&values_file, values)?;
        let out = Command::new(assets.path(Binary::Helm))
            .args(["template", chart])
            .arg(charts.join(chart))
            .args(["--namespace", chart, "--include-crds", "--values"])
            .arg(&values_file)
            .output()
            .context("running the pinned helm")?;
        anyhow::ensure!(
            out.status.success(),
            "helm template {chart}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        split_phases(&String::from_utf8(out.stdout)?, &rendered, chart)?;
    }
    Ok(())
}

/// The charts, in the order the helmfile `needs:` them.
const CHARTS: [&str; 2] = ["cert-manager", "ingress-nginx"];

/// helm's phases of an install, as file suffixes.
const PHASES: [&str; 3] = ["pre", "main", "post"];

/// Splits a chart's `helm template` into its pre-install hooks, its release
/// and its post-install hooks (`rendered/<chart>-<phase>.yaml`).
fn split_phases(text: &str, rendered: &Path, chart: &str) -> anyhow::Result<()> {
    let mut phases: [String; 3] = Default::default();
    for document in serde_yaml::Deserializer::from_str(text) {
        let value = <serde_yaml::Value as serde::Deserialize>::deserialize(document).with_context(
            || format!("helm template {chart} printed a document that is not YAML"),
        )?;
        if value.is_null() {
            continue;
        }
        let hook = value["metadata"]["annotations"]["helm.sh/hook"]
            .as_str()
            .unwrap_or_default();
        let phase = if hook.contains("pre-install") {
            0
        } else if hook.contains("post-install") {
            2
        } else {
            1
        };
        phases[phase].push_str("---\n");
        phases[phase].push_str(&serde_yaml::to_string(&value)?);
    }
    for (phase, text) in PHASES.iter().zip(phases) {
        std::fs::write(rendered.join(format!("{chart}-{phase}.yaml")), text)?;
    }
    Ok(())
}

fn write_dag(dir: &Path) -> anyhow::Result<()> {
    let mut config = HEADER.to_owned();
    for level in 0..DAG_LEVELS {
        for i in 0..DAG_WIDTH {
            let m = dag_name(level, i);
            let manifest_dir = dir.join("objects").join(&m);
            std::fs::create_dir_all(&manifest_dir)?;
            std::fs::write(manifest_dir.join("objects.yaml"), dag_objects(&m))?;
            let needs = dag_needs(level, i);
            let _ = writeln!(
                config,
                "    - name: {m}\n      type: manifests\n      path: objects/{m}/*.yaml\n      namespace: dag-{m}\n      dependsOn: [{}]\n      wait: {{ timeoutSeconds: 300 }}",
                needs.join(", ")
            );
        }
    }
    std::fs::write(dir.join("tazuna.yaml"), config)?;
    Ok(())
}

/// One DAG manifest: its Namespace, a ConfigMap, a Service and a
/// Deployment of two replicas (kwok makes the Pods ready).
fn dag_objects(m: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: dag-{m}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {m}\n  namespace: dag-{m}\ndata:\n  level: \"{m}\"\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: {m}\n  namespace: dag-{m}\nspec:\n  selector:\n    app: {m}\n  ports:\n    - port: 80\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {m}\n  namespace: dag-{m}\nspec:\n  replicas: 2\n  selector:\n    matchLabels:\n      app: {m}\n  template:\n    metadata:\n      labels:\n        app: {m}\n    spec:\n      containers:\n        - name: app\n          image: registry.k8s.io/pause:3.10\n          envFrom:\n            - configMapRef:\n                name: {m}\n"
    )
}

pub fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Runs a command that must succeed, its output dropped.
pub fn quiet(command: &mut Command) -> anyhow::Result<()> {
    run(command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(10_061), "10,061");
        assert_eq!(thousands(100), "100");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }

    #[test]
    fn the_dag_has_depth_five_and_every_manifest_past_the_first_level_needs_two() {
        for level in 1..DAG_LEVELS {
            for i in 0..DAG_WIDTH {
                let needs = dag_needs(level, i);
                assert_eq!(needs.len(), 2);
                assert!(needs.iter().all(|n| {
                    let index: usize = n[1..].parse().unwrap();
                    index / DAG_WIDTH == level - 1
                }));
            }
        }
        assert!(dag_needs(0, 3).is_empty());
    }
}
