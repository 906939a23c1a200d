//! After a manifest's objects are sent: waiting until they are ready, and
//! the file's own `spec.tests`.

use super::*;

impl Run<'_> {
    /// Wait, as the manifest's `wait` says, until what one wave sent is ready.
    pub(super) async fn until_ready(
        &self,
        name: &str,
        wait: Wait,
        watched: Vec<Watched>,
    ) -> Result<(), ManifestError> {
        let Wait::On {
            timeout,
            load_balancers,
        } = wait
        else {
            return Ok(());
        };
        self.observer.event(Event::Waiting {
            manifest: name.to_owned(),
            objects: watched.len(),
        });
        let on_ready = |object: &ObjectRef| {
            self.observer.event(Event::Ready {
                manifest: name.to_owned(),
                object: object.clone(),
            });
        };
        wait::until_ready(self.client(), watched, timeout, load_balancers, &on_ready).await?;
        Ok(())
    }

    /// Run `spec.tests`.
    pub async fn spec_tests(&self, tests: &[Test]) -> Option<ManifestOutcome> {
        if tests.is_empty() {
            return None;
        }
        let started = Instant::now();
        for test in tests {
            if let Err(error) = crate::checks::run(self.client(), self.cluster, test).await {
                return Some(ManifestOutcome {
                    manifest: "spec.tests".into(),
                    outcome: Outcome::Failed(Failure::of(&error)),
                    counts: Counts::default(),
                    elapsed: started.elapsed(),
                });
            }
            self.observer.event(Event::TestPassed {
                manifest: None,
                test: crate::checks::describe(test),
            });
        }
        Some(ManifestOutcome {
            manifest: "spec.tests".into(),
            outcome: Outcome::Applied,
            counts: Counts::default(),
            elapsed: started.elapsed(),
        })
    }
}
