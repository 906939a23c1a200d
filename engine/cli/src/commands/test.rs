//! `tazuna test`: run the charts' own tests, as `helm test` does.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use tazuna_engine::guard::Rebind;
use tazuna_engine::stack::{Access, Writes};

use crate::failure::Reported;
use crate::progress::{self, Progress};
use crate::settings::GlobalSettings;

/// Run the chart tests of the applied manifests, as `helm test` does.
///
/// A chart's tests are its objects annotated `helm.sh/hook: test`. `apply`
/// renders them but leaves them out (it says so); `test` runs them on a
/// cluster the manifests were applied to: each test is created anew (the
/// previous one deleted first, unless its delete policy says otherwise), in
/// order of `helm.sh/hook-weight`, waited for until it succeeds (a Pod
/// `Succeeded`, a Job complete) within the manifest's wait timeout, and
/// deleted after by its `helm.sh/hook-delete-policy`. Tests are not recorded
/// in Tazuna's state. Exits 1 when a test fails. Use `-t` to test some
/// manifests only.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  tazuna test --context kind-ci\n  tazuna test -t ingress")]
pub struct Test {
    /// How long to wait for another run's lock on the cluster, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    lock_timeout: u64,
}

impl Test {
    /// Run it.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        super::runtime()?.block_on(async {
            let stack = super::open(settings, Writes::Persist)?;
            let connection = stack.connect(Access::Write(Rebind::Refuse)).await?;
            let progress = Progress::new(settings, "test");
            let outcomes = stack
                .test(&connection, Duration::from_secs(self.lock_timeout), &progress)
                .await?;
            if outcomes.is_empty() {
                eprintln!("no chart tests: no selected manifest renders an object annotated `helm.sh/hook: test`");
                return Ok(ExitCode::SUCCESS);
            }
            if progress::summary(&progress, &outcomes) {
                Ok(ExitCode::SUCCESS)
            } else {
                Err(Reported.into())
            }
        })
    }
}
