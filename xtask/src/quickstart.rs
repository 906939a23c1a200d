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

impl Quickstart {
    /// Run it.
    pub fn run(self) -> anyhow::Result<()> {
        let root = crate::shell::root();
        let install = root.join("tests/controlplane/install.sh");
        if !self.no_install {
            // Only what the quickstart runs on: the tests' tools and stores are
            // built by `cargo xtask test`.
            eprintln!(
                "==> tests/controlplane/install.sh --control-plane-only  (cached after the first run)"
            );
            run(Command::new("bash")
                .arg(&install)
                .arg("--control-plane-only"))?;
        }
        let tazuna = crate::plugins::release_cli(&root)?;
        let example = root.join("examples/quickstart");
        let kubeconfig = crate::cluster::default_kubeconfig();

        // A fresh cluster each time, so the run shows day one.
        let _ = crate::cluster::down(CLUSTER, &kubeconfig);
        crate::cluster::up(CLUSTER, 1, &kubeconfig)?;

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
            eprintln!("==> tazuna {}  (in examples/quickstart)", args.join(" "));
            let mut command = Command::new(&tazuna);
            command.args(&args).current_dir(&example);
            if !matches!(args[0], "check" | "verify") {
                command.args(&target);
            }
            run(&mut command)?;
        }
        eprintln!("==> kubectl -n argocd get deployments,statefulsets  (an independent look)");
        run(Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args([
                "--context",
                CLUSTER,
                "-n",
                "argocd",
                "get",
                "deployments,statefulsets",
            ]))?;
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
