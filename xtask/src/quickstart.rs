//! `cargo xtask quickstart`: build everything, prove the quickstart on a
//! throwaway control plane (`tazuna verify`), start a local control plane, and
//! run Tazuna's main job on it: apply the quickstart (Argo CD and an
//! AppProject), then show its status, and the workloads through kubectl.

use std::path::Path;
use std::process::Command;

use clap::Args;

use crate::shell::run;

/// Build the CLI (the built-in plugins are committed), start the local control plane `quickstart`
/// (etcd, kube-apiserver, controllers, kwok), and run `tazuna check`,
/// `tazuna verify`, `tazuna apply` and `tazuna status` on
/// examples/quickstart/tazuna.yaml.
/// The cluster keeps running afterwards; the last lines say how to use and
/// stop it.
#[derive(Debug, Args)]
pub struct Quickstart {
    /// Skip installing the control-plane binaries (they must be in the cache).
    #[arg(long)]
    no_install: bool,
}

const CLUSTER: &str = "quickstart";

/// The steps, for the step lines: what each does and how long it took the
/// first time on a 2-core machine with cold caches (docs: README.md).
const STEPS: [(&str, &str); 4] = [
    (
        "build the CLI (profile `quickstart`) while the control plane builds: Kubernetes, etcd and kwok from the Go module proxy, at once",
        "the first time on 2 cores, about 19 minutes (measured from cold caches: the CLI 14 min, the control plane beside it 18.5 min); seconds once cached",
    ),
    (
        "tazuna check and tazuna verify on a throwaway control plane",
        "under a minute",
    ),
    (
        "start the control plane `quickstart`; tazuna apply and tazuna status",
        "under a minute",
    ),
    ("an independent look with kubectl", "seconds"),
];

/// The step line of step `index` (0-based).
fn step(index: usize) {
    let (what, estimate) = STEPS[index];
    eprintln!("==> [{}/{}] {what} ({estimate})", index + 1, STEPS.len());
}

impl Quickstart {
    /// Run it.
    pub fn run(self) -> anyhow::Result<()> {
        let root = crate::shell::root();
        let install = root.join("tests/controlplane/install.sh");
        step(0);
        // The CLI's build and the Go builds share the two cores: each fills
        // the other's serial stretches (downloads, linking, the last crates).
        let mut cli = crate::plugins::spawn_cli(&root, "quickstart", None)?;
        if !self.no_install {
            // Only what the quickstart runs on: the tests' tools and stores are
            // built by `cargo xtask test`.
            let installed = run(Command::new("bash")
                .arg(&install)
                .arg("--control-plane-only"));
            if let Err(error) = installed {
                let _ = cli.child.kill();
                let _ = cli.child.wait();
                return Err(error);
            }
        }
        let tazuna = crate::plugins::finish_cli(&root, cli)?;
        let example = root.join("examples/quickstart");
        let kubeconfig = crate::cluster::default_kubeconfig();

        let target = [
            "--kubeconfig",
            &kubeconfig.to_string_lossy(),
            "--context",
            CLUSTER,
        ]
        .map(str::to_owned);
        // The new cluster has a new identity; `--rebind` records it in the
        // example's tazuna.lock (ignored by git) instead of refusing it.
        // `verify` needs no cluster: it brings up its own from the same
        // binaries, applies everything, runs the tests and tears down.
        for args in [
            vec!["check"],
            vec!["verify"],
            vec!["apply", "--rebind"],
            vec!["status", "--all"],
        ] {
            match args[0] {
                "check" => step(1),
                "apply" => {
                    step(2);
                    // A fresh cluster each time, so the run shows day one.
                    let _ = crate::cluster::down(CLUSTER, &kubeconfig);
                    crate::cluster::up(CLUSTER, 1, &kubeconfig)?;
                }
                _ => {}
            }
            eprintln!("==> tazuna {}  (in examples/quickstart)", args.join(" "));
            let mut command = Command::new(&tazuna);
            command.args(&args).current_dir(&example);
            if !matches!(args[0], "check" | "verify") {
                command.args(&target);
            }
            run(&mut command)?;
        }
        step(3);
        eprintln!("==> kubectl -n argocd get deployments,statefulsets");
        // The pinned kubectl when it was built, else a compatible one on PATH.
        run(
            Command::new(tazuna_controlplane::assets::Assets::locate().kubectl())
                .arg("--kubeconfig")
                .arg(&kubeconfig)
                .args([
                    "--context",
                    CLUSTER,
                    "-n",
                    "argocd",
                    "get",
                    "deployments,statefulsets",
                ]),
        )?;
        let kc = kubeconfig.display();
        eprintln!(
            "==> done. The cluster `{CLUSTER}` keeps running:\n  export KUBECONFIG={kc}\n  cd examples/quickstart && {t} plan --context {CLUSTER}\n  {t} destroy --context {CLUSTER} --yes\n  cargo xtask cluster down --name {CLUSTER}",
            t = display(&tazuna)
        );
        Ok(())
    }
}

fn display(path: &Path) -> String {
    path.display().to_string()
}
