//! `tazuna verify`: prove the bootstrap procedure on a throwaway control plane.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use tazuna_controlplane::{Assets, ClusterConfig, Tool};

use super::apply::Apply;
use crate::failure::Reported;
use crate::settings::GlobalSettings;
use tazuna_engine::stack::{Access, Writes};

/// Apply the whole file to a throwaway control plane, run every test, and tear it down.
///
/// Starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
/// kwok (fake nodes, so Deployments really become ready) on loopback ports,
/// applies every manifest in order with readiness waits and tests, runs
/// `spec.tests`, prints the result and removes the control plane. Nothing
/// touches a real cluster: the file's `context_matches` and cluster binding
/// are not checked, and `tazuna.lock` is not written.
///
/// The binaries are found like envtest's `KUBEBUILDER_ASSETS`: `--assets` or
/// `TAZUNA_ASSETS` names one directory holding them all; otherwise the cache
/// that `tests/controlplane/install.sh` fills (`~/.cache/tazuna-dev/bin/`).
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  tazuna verify\n  tazuna verify -e production --assets /opt/k8s/bin"
)]
pub struct Verify {
    /// The directory holding etcd, kube-apiserver, kube-controller-manager,
    /// kube-scheduler, kwok and kubectl.
    #[arg(long, env = "TAZUNA_ASSETS", value_name = "DIR")]
    assets: Option<PathBuf>,

    /// Fake nodes to start.
    #[arg(long, value_name = "N", default_value_t = 2)]
    nodes: usize,
}

impl Verify {
    /// Run it.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        // Check the file before starting anything.
        super::open(settings, Writes::Persist)?;
        let assets = match &self.assets {
            Some(dir) => Assets::flat(dir),
            None => Assets::locate(),
        };
        let missing = assets.missing(&Tool::CONTROL_PLANE);
        if !missing.is_empty() {
            let names: Vec<String> = missing
                .iter()
                .map(|t| format!("`{}`", t.binary_name()))
                .collect();
            return Err(crate::failure::advised(
                format!(
                    "cannot start a control plane: {} not found in {}",
                    names.join(", "),
                    assets.describe()
                ),
                "run `tests/controlplane/install.sh` from a Tazuna checkout, or point `--assets`/`TAZUNA_ASSETS` at a directory with these binaries",
            ));
        }
        eprintln!(
            "verify: starting a throwaway control plane ({} fake nodes)",
            self.nodes
        );
        let cluster = ClusterConfig::new("tazuna-verify")
            .nodes(self.nodes)
            .assets(assets)
            .start()
            .context("cannot start the throwaway control plane")?;
        let mut target = settings.clone();
        target.connect.kubeconfig = Some(cluster.kubeconfig().to_owned());
        target.connect.context = Some(cluster.context().to_owned());
        let outcome =
            super::runtime()?.block_on(Apply::defaults().execute(&target, Access::Throwaway));
        let passed = matches!(outcome, Ok(ExitCode::SUCCESS));
        if let Err(error) = &outcome
            && error.downcast_ref::<Reported>().is_none()
        {
            crate::failure::report(error, settings.stderr_color);
        }
        drop(cluster);
        eprintln!("verify: control plane removed");
        if passed {
            eprintln!("verify: passed: every manifest applied, became ready and passed its tests");
            Ok(ExitCode::SUCCESS)
        } else {
            eprintln!("verify: failed");
            Err(Reported.into())
        }
    }
}
