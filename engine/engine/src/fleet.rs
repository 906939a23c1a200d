//! Many clusters under one rollout: which clusters a command selects, the
//! waves `spec.rollout` puts them in, and running one [`Stack`] per cluster,
//! in parallel within a wave under a bound. A failing cluster stops what
//! comes after it as the rollout says. There is no second code path: each
//! cluster is an ordinary run over the file with that cluster selected, with
//! its own context guard, identity binding, Lease and state.
//!
//! [`Stack`]: crate::stack::Stack

use std::collections::BTreeSet;
use std::future::Future;
use std::time::{Duration, Instant};

use tracing::Instrument as _;

use tazuna_core::config::{Fleet, OnFailure, Rollout, Target};
use tazuna_core::hint::Hint;
use tazuna_core::selector::Selector;
use tazuna_kube::capi::{self, ClusterApiError};
use tazuna_kube::cluster::InMemoryKubeconfig;

/// Which clusters a command runs on: `-e` (every cluster of those
/// environments), `--cluster`, `--selector`, `--all-clusters`.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Environments, all of whose clusters are selected.
    pub environments: Vec<String>,
    /// Clusters by name.
    pub clusters: Vec<String>,
    /// Only clusters whose labels match (of those named, or of all).
    pub selector: Option<Selector>,
    /// Every cluster the file declares.
    pub all: bool,
}

/// Why a selection or a rollout cannot be worked out.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// `-e` names an environment the file does not declare.
    #[error("unknown environment `{name}`")]
    UnknownEnvironment {
        /// The name given.
        name: String,
        /// The declared ones.
        declared: Vec<String>,
    },
    /// `--cluster` names a cluster no environment declares.
    #[error("unknown cluster `{name}`")]
    UnknownCluster {
        /// The name given.
        name: String,
        /// The declared ones.
        declared: Vec<String>,
    },
    /// The selection is empty.
    #[error("no cluster is selected: {why}")]
    Empty {
        /// What selected nothing.
        why: String,
    },
    /// A selected cluster belongs to no wave of `spec.rollout`.
    #[error("cluster `{0}` is in no wave of `spec.rollout`, so it would never run")]
    NoWave(String),
}

impl Hint for FleetError {
    fn hint(&self) -> Option<String> {
        let list = |names: &[String]| {
            if names.is_empty() {
                "none".to_owned()
            } else {
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        Some(match self {
            Self::UnknownEnvironment { declared, .. } => {
                format!("declared environments: {}", list(declared))
            }
            Self::UnknownCluster { declared, .. } => {
                format!("declared clusters: {}", list(declared))
            }
            Self::Empty { .. } => {
                "`tazuna clusters` lists every cluster with its labels".to_owned()
            }
            Self::NoWave(_) => {
                "add it (or its environment, or a selector that matches it) to a wave".to_owned()
            }
        })
    }
}

impl Selection {
    /// Whether nothing was asked for: the file's default run (root context
    /// rules, no environment).
    pub fn is_empty(&self) -> bool {
        self.environments.is_empty()
            && self.clusters.is_empty()
            && self.selector.is_none()
            && !self.all
    }

    /// The selected clusters, in the file's order (environments by name,
    /// then their clusters by name).
    pub fn resolve(&self, fleet: &Fleet) -> Result<Vec<Target>, FleetError> {
        let declared_clusters = || fleet.targets().map(|t| t.name.clone()).collect();
        for name in &self.environments {
            if !fleet.environments.contains_key(name) {
                return Err(FleetError::UnknownEnvironment {
                    name: name.clone(),
                    declared: fleet.environments.keys().cloned().collect(),
                });
            }
        }
        for name in &self.clusters {
            if !fleet.targets().any(|t| &t.name == name) {
                return Err(FleetError::UnknownCluster {
                    name: name.clone(),
                    declared: declared_clusters(),
                });
            }
        }
        let named = !self.environments.is_empty() || !self.clusters.is_empty();
        let chosen: Vec<Target> = fleet
            .targets()
            .filter(|t| {
                self.all
                    || !named
                    || self.environments.contains(&t.environment)
                    || self.clusters.contains(&t.name)
            })
            .filter(|t| self.selector.as_ref().is_none_or(|s| s.matches(&t.labels)))
            .cloned()
            .collect();
        if chosen.is_empty() {
            return Err(FleetError::Empty {
                why: match &self.selector {
                    Some(selector) => format!("selector `{selector}` matches none of them"),
                    None => "the file declares no environments".to_owned(),
                },
            });
        }
        Ok(chosen)
    }
}

/// How to reach the clusters found through Cluster API, by name.
pub type Discovered = std::collections::HashMap<String, InMemoryKubeconfig>;

/// Find the clusters of every Cluster API environment of `fleet` in its
/// management cluster and add them to it; their kubeconfigs come back, in
/// memory only, with a line for each Cluster that is not ready yet (no
/// kubeconfig Secret), which is skipped. Environments without `clusterAPI`
/// are left as they are.
pub async fn discover(fleet: &mut Fleet) -> Result<(Discovered, Vec<String>), ClusterApiError> {
    let mut found = Discovered::new();
    let mut not_ready = Vec::new();
    let mut names: BTreeSet<String> = fleet.targets().map(|t| t.name.clone()).collect();
    for environment in fleet.environments.values_mut() {
        let Some(source) = environment.cluster_api.clone() else {
            continue;
        };
        let discovery = capi::discover(environment, &source).await?;
        not_ready.extend(discovery.not_ready);
        for cluster in discovery.found {
            if !names.insert(cluster.target.name.clone()) {
                return Err(ClusterApiError::Duplicate {
                    name: cluster.target.name.clone(),
                    first: "a cluster of the file".to_owned(),
                    second: format!("a Cluster of environment `{}`", environment.name),
                });
            }
            found.insert(cluster.target.name.clone(), cluster.kubeconfig);
            environment.clusters.push(cluster.target);
        }
    }
    Ok((found, not_ready))
}

/// One wave of a rollout, resolved to clusters.
#[derive(Debug, Clone)]
pub struct RolloutWave {
    /// Its name.
    pub name: String,
    /// Its clusters, in the file's order.
    pub targets: Vec<Target>,
}

/// Put `selected` into the waves of `rollout`: each cluster into the first
/// wave that takes it. Without waves, all of them are one wave. Waves that
/// take none of the selected clusters are left out.
pub fn waves(selected: Vec<Target>, rollout: &Rollout) -> Result<Vec<RolloutWave>, FleetError> {
    if rollout.waves.is_empty() {
        return Ok(vec![RolloutWave {
            name: "all".to_owned(),
            targets: selected,
        }]);
    }
    let mut waves: Vec<RolloutWave> = rollout
        .waves
        .iter()
        .map(|w| RolloutWave {
            name: w.name.clone(),
            targets: Vec::new(),
        })
        .collect();
    for target in selected {
        let Some(index) = rollout.waves.iter().position(|w| w.takes(&target)) else {
            return Err(FleetError::NoWave(target.name));
        };
        waves[index].targets.push(target);
    }
    waves.retain(|w| !w.targets.is_empty());
    Ok(waves)
}

/// What became of one cluster.
#[derive(Debug)]
pub enum ClusterVerdict<T, E> {
    /// It ran and succeeded.
    Done(T),
    /// It ran and failed.
    Failed(E),
    /// It did not run, because an earlier cluster failed.
    NotRun,
}

/// One cluster's run.
#[derive(Debug)]
pub struct ClusterRun<T, E> {
    /// The cluster.
    pub target: Target,
    /// The wave it was in.
    pub wave: String,
    /// What became of it.
    pub verdict: ClusterVerdict<T, E>,
    /// How long it took (zero when it did not run).
    pub duration: Duration,
}

/// How a rollout runs, from `spec.rollout` and flags.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    /// Clusters of a wave at once.
    pub max_parallel: usize,
    /// What a failure stops.
    pub on_failure: OnFailure,
}

impl From<&Rollout> for Pace {
    fn from(rollout: &Rollout) -> Self {
        Self {
            max_parallel: rollout.max_parallel,
            on_failure: rollout.on_failure,
        }
    }
}

/// Run `each` on every cluster of `waves`, wave after wave, at most
/// `pace.max_parallel` at once within a wave, each cluster on a task of its
/// own (a cluster that renders does not hold up another that waits). After a
/// failure no later wave starts; with [`OnFailure::Stop`] no other cluster
/// of its wave starts either (those running finish). Results come in wave
/// order, each wave in its clusters' order.
pub async fn run<T, E, F, Fut>(waves: &[RolloutWave], pace: Pace, each: F) -> Vec<ClusterRun<T, E>>
where
    F: Fn(Target) -> Fut,
    Fut: Future<Output = Result<T, E>> + Send + 'static,
    T: Send + 'static,
    E: Send + 'static,
{
    let mut failed = false;
    let mut runs = Vec::new();
    for wave in waves {
        if failed {
            runs.extend(
                wave.targets
                    .iter()
                    .map(|target| not_run(target, &wave.name)),
            );
            continue;
        }
        let mut done: Vec<Option<ClusterRun<T, E>>> = wave.targets.iter().map(|_| None).collect();
        let mut running = tokio::task::JoinSet::new();
        let mut next = 0;
        loop {
            while next < wave.targets.len()
                && running.len() < pace.max_parallel.max(1)
                && !(failed && pace.on_failure == OnFailure::Stop)
            {
                let target = &wave.targets[next];
                // A task starts with no span: the cluster's is the command's child.
                let span = tracing::info_span!(
                    target: tazuna_core::TRACE,
                    "cluster",
                    tazuna.cluster = target.name.as_str(),
                    tazuna.environment = target.environment.as_str(),
                    tazuna.wave = wave.name.as_str(),
                    otel.status_code = tracing::field::Empty,
                );
                let future = each(target.clone());
                let index = next;
                running.spawn(
                    async move {
                        let start = Instant::now();
                        let result = future.await;
                        let status = if result.is_ok() { "ok" } else { "error" };
                        tracing::Span::current().record("otel.status_code", status);
                        (index, result, start.elapsed())
                    }
                    .instrument(span),
                );
                next += 1;
            }
            let Some(joined) = running.join_next().await else {
                break;
            };
            let (index, result, duration) = match joined {
                Ok(finished) => finished,
                // A cluster's run panicked: the panic is the bug to report.
                Err(error) => std::panic::resume_unwind(error.into_panic()),
            };
            let verdict = match result {
                Ok(value) => ClusterVerdict::Done(value),
                Err(error) => {
                    failed = true;
                    ClusterVerdict::Failed(error)
                }
            };
            done[index] = Some(ClusterRun {
                target: wave.targets[index].clone(),
                wave: wave.name.clone(),
                verdict,
                duration,
            });
        }
        runs.extend(
            done.into_iter()
                .zip(&wave.targets)
                .map(|(run, target)| run.unwrap_or_else(|| not_run(target, &wave.name))),
        );
    }
    runs
}

fn not_run<T, E>(target: &Target, wave: &str) -> ClusterRun<T, E> {
    ClusterRun {
        target: target.clone(),
        wave: wave.to_owned(),
        verdict: ClusterVerdict::NotRun,
        duration: Duration::ZERO,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use tazuna_core::config::Wave as WaveSpec;

    use super::*;

    fn target(name: &str, environment: &str, labels: &[(&str, &str)]) -> Target {
        Target {
            name: name.into(),
            environment: environment.into(),
            context: None,
            kubeconfig: None,
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect::<BTreeMap<_, _>>(),
            values: serde_json::json!({}),
            identity: None,
            cluster_api: None,
        }
    }

    fn rollout(on_failure: OnFailure) -> Rollout {
        Rollout {
            waves: vec![
                WaveSpec {
                    name: "canary".into(),
                    environments: vec!["staging".into()],
                    clusters: vec![],
                    selector: None,
                },
                WaveSpec {
                    name: "rest".into(),
                    environments: vec![],
                    clusters: vec![],
                    selector: Some(Selector::parse("tier=prod").unwrap()),
                },
            ],
            max_parallel: 1,
            on_failure,
        }
    }

    fn three() -> Vec<Target> {
        vec![
            target("dr", "dr", &[("tier", "prod")]),
            target("production", "production", &[("tier", "prod")]),
            target("staging", "staging", &[]),
        ]
    }

    #[test]
    fn clusters_go_to_the_first_wave_that_takes_them_and_an_unplaced_one_is_refused() {
        let waves = waves(three(), &rollout(OnFailure::Stop)).unwrap();
        let names: Vec<(String, Vec<String>)> = waves
            .iter()
            .map(|w| {
                (
                    w.name.clone(),
                    w.targets.iter().map(|t| t.name.clone()).collect(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                ("canary".into(), vec!["staging".into()]),
                ("rest".into(), vec!["dr".into(), "production".into()])
            ]
        );
        let mut others = three();
        others.push(target("lab", "lab", &[]));
        let error = super::waves(others, &rollout(OnFailure::Stop)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "cluster `lab` is in no wave of `spec.rollout`, so it would never run"
        );
    }

    fn ran(runs: &[ClusterRun<(), ()>]) -> Vec<(&str, &str)> {
        runs.iter()
            .map(|r| {
                let verdict = match r.verdict {
                    ClusterVerdict::Done(()) => "done",
                    ClusterVerdict::Failed(()) => "failed",
                    ClusterVerdict::NotRun => "not run",
                };
                (r.target.name.as_str(), verdict)
            })
            .collect()
    }

    #[tokio::test]
    async fn a_failure_stops_later_waves_and_stop_also_the_rest_of_its_wave() {
        let failing = |fail: &'static str| {
            let calls = Mutex::new(Vec::new());
            (calls, fail)
        };
        for (on_failure, fail, expected) in [
            (
                OnFailure::Stop,
                "staging",
                vec![
                    ("staging", "failed"),
                    ("dr", "not run"),
                    ("production", "not run"),
                ],
            ),
            (
                OnFailure::Stop,
                "dr",
                vec![
                    ("staging", "done"),
                    ("dr", "failed"),
                    ("production", "not run"),
                ],
            ),
            (
                OnFailure::FinishWave,
                "dr",
                vec![
                    ("staging", "done"),
                    ("dr", "failed"),
                    ("production", "done"),
                ],
            ),
        ] {
            let rollout = rollout(on_failure);
            let waves = waves(three(), &rollout).unwrap();
            let (calls, fail) = failing(fail);
            let runs = run(&waves, Pace::from(&rollout), |t: Target| {
                calls.lock().unwrap().push(t.name.clone());
                let result = if t.name == fail { Err(()) } else { Ok(()) };
                async move { result }
            })
            .await;
            assert_eq!(ran(&runs), expected, "{on_failure:?} failing {fail}");
            let called = calls.into_inner().unwrap();
            let started: Vec<&str> = expected
                .iter()
                .filter(|(_, v)| *v != "not run")
                .map(|(n, _)| *n)
                .collect();
            assert_eq!(called, started, "only clusters that run are called");
        }
    }

    #[test]
    fn a_selection_names_environments_clusters_and_labels() {
        let fleet = Fleet {
            environments: three()
                .into_iter()
                .map(|t| {
                    (
                        t.environment.clone(),
                        tazuna_core::config::Environment {
                            name: t.environment.clone(),
                            context_matches: vec![],
                            context_match_mode: None,
                            values: serde_json::json!({}),
                            labels: BTreeMap::new(),
                            cluster: None,
                            clusters: vec![t],
                            cluster_api: None,
                        },
                    )
                })
                .collect(),
            rollout: Rollout::default(),
        };
        let names = |selection: Selection| -> Vec<String> {
            selection
                .resolve(&fleet)
                .unwrap()
                .into_iter()
                .map(|t| t.name)
                .collect()
        };
        let by_label = Selection {
            selector: Some(Selector::parse("tier=prod").unwrap()),
            ..Selection::default()
        };
        assert_eq!(names(by_label), ["dr", "production"]);
        let by_name = Selection {
            environments: vec!["staging".into()],
            clusters: vec!["dr".into()],
            ..Selection::default()
        };
        assert_eq!(names(by_name), ["dr", "staging"]);
        let all = Selection {
            all: true,
            ..Selection::default()
        };
        assert_eq!(names(all), ["dr", "production", "staging"]);
        let unknown = Selection {
            clusters: vec!["prod".into()],
            ..Selection::default()
        };
        assert!(matches!(
            unknown.resolve(&fleet),
            Err(FleetError::UnknownCluster { .. })
        ));
        let none = Selection {
            selector: Some(Selector::parse("tier=lab").unwrap()),
            ..Selection::default()
        };
        assert_eq!(
            none.resolve(&fleet).unwrap_err().to_string(),
            "no cluster is selected: selector `tier=lab` matches none of them"
        );
    }
}
