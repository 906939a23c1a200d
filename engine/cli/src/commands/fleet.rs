//! The verbs that run on several clusters (`apply`, `plan`, `status`,
//! `state drift`, `destroy`): which clusters the flags select, and one run
//! per cluster under `spec.rollout` through [`tazuna_engine::fleet`], each
//! with its own settings, its output prefixed `[cluster]`, and a table at
//! the end.

use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

use tazuna_core::config::{self, LoadOptions, OnFailure};
use tazuna_engine::fleet::{self, ClusterRun, ClusterVerdict, Discovered, Pace, RolloutWave};

use crate::failure::{self, Reported};
use crate::report::OutputFormat;
use crate::settings::GlobalSettings;

/// Flags of the verbs that write to several clusters.
#[derive(Debug, Clone, clap::Args)]
pub struct RolloutArgs {
    /// Clusters of one wave run at once (default: `spec.rollout.maxParallel`, else 4).
    #[arg(long, value_name = "N")]
    max_parallel: Option<usize>,

    /// When a cluster fails, let the rest of its wave run before stopping
    /// (default: `spec.rollout.onFailure`, else stop at once).
    #[arg(long)]
    finish_wave: bool,
}

impl RolloutArgs {
    /// Defaults for every flag.
    pub fn defaults() -> Self {
        Self::at_most(None)
    }

    /// At most `max_parallel` clusters at once, for verbs that only read.
    pub fn at_most(max_parallel: Option<usize>) -> Self {
        Self {
            max_parallel,
            finish_wave: false,
        }
    }
}

/// How a verb takes a rollout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// In waves, stopping after a failure (verbs that write).
    Waves,
    /// Every cluster, whatever fails (verbs that read: one cluster's error
    /// hides nothing about the others).
    Everywhere,
}

/// What the flags select for a fleet verb.
pub enum Scope {
    /// One cluster (or the file's default target): an ordinary run with
    /// these settings.
    One(Box<GlobalSettings>),
    /// Several clusters, in waves, with the kubeconfigs of those found
    /// through Cluster API.
    Many(Vec<RolloutWave>, Pace, Discovered),
}

/// The file's clusters, with those of the Cluster API environments the
/// selection can reach found in their management clusters.
pub async fn declared(settings: &GlobalSettings) -> anyhow::Result<(config::Fleet, Discovered)> {
    let opts = LoadOptions::new(tazuna_engine::stack::tazuna_version());
    let mut declared = config::fleet(&settings.file, &opts)?;
    let selection = &settings.selection;
    let declared_names: Vec<String> = declared.targets().map(|t| t.name.clone()).collect();
    let reaches = |environment: &config::Environment| {
        environment.cluster_api.is_some()
            && (selection.all
                || selection.selector.is_some()
                || selection.environments.contains(&environment.name)
                || selection
                    .clusters
                    .iter()
                    .any(|c| !declared_names.contains(c)))
    };
    if !declared.environments.values().any(reaches) {
        return Ok((declared, Discovered::new()));
    }
    // Only the environments the selection reaches: no management cluster is
    // asked for what the command will not touch.
    let mut reached = declared.clone();
    reached.environments.retain(|_, e| reaches(e));
    let (found, not_ready) = fleet::discover(&mut reached).await?;
    for line in not_ready {
        eprintln!("warning: {line}");
    }
    for (name, environment) in reached.environments {
        declared.environments.insert(name, environment);
    }
    Ok((declared, found))
}

/// Work out the scope. A plain `-e` whose environment has one cluster, or
/// one `--cluster`, is a single run exactly as before.
pub async fn scope(
    settings: &GlobalSettings,
    rollout: &RolloutArgs,
    order: Order,
) -> anyhow::Result<Scope> {
    let selection = &settings.selection;
    if selection.is_empty() {
        return Ok(Scope::One(Box::new(settings.clone())));
    }
    let (declared, found) = declared(settings).await?;
    if settings.is_single() && found.is_empty() {
        let one_cluster = settings.environment.as_ref().is_some_and(|environment| {
            declared
                .environments
                .get(environment)
                .is_none_or(|e| e.clusters.len() <= 1)
        });
        // An unknown environment or cluster is reported by the ordinary run.
        if settings.cluster.is_some() || one_cluster {
            return Ok(Scope::One(Box::new(settings.clone())));
        }
    }
    let targets = selection.resolve(&declared)?;
    if let [only] = targets.as_slice() {
        // One cluster prints as an ordinary run, without a `[cluster]` prefix.
        let mut one = settings.for_target(only, &found);
        one.label = None;
        return Ok(Scope::One(Box::new(one)));
    }
    if settings.connect.context.is_some() || settings.connect.kubeconfig.is_some() {
        return Err(crate::failure::advised(
            format!(
                "`--context` and `--kubeconfig` name one cluster, and the flags select {} ({})",
                targets.len(),
                targets
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "give each cluster its `context` (and `kubeconfig`) in `spec.environments`, or select one cluster",
        ));
    }
    let mut pace = Pace::from(&declared.rollout);
    if let Some(max) = rollout.max_parallel {
        if max == 0 {
            return Err(crate::failure::advised(
                "`--max-parallel 0` would run no cluster",
                "use 1 to run clusters one at a time",
            ));
        }
        pace.max_parallel = max;
    }
    if rollout.finish_wave {
        pace.on_failure = OnFailure::FinishWave;
    }
    let waves = match order {
        Order::Waves => fleet::waves(targets, &declared.rollout)?,
        Order::Everywhere => {
            pace.on_failure = OnFailure::FinishWave;
            vec![RolloutWave {
                name: "all".to_owned(),
                targets,
            }]
        }
    };
    Ok(Scope::Many(waves, pace, found))
}

/// What one cluster's run gives the fleet.
#[derive(Debug, Default)]
pub struct ClusterReport {
    /// Whether it found something to change or not ready (plan, drift,
    /// status: for their exit code 2); verbs that write leave it `false`.
    pub changes: bool,
    /// Objects changed (apply, destroy) or to change (plan, drift), when known.
    pub changed: Option<usize>,
    /// Output that is printed when the cluster is done, as one block.
    pub text: String,
    /// Its result for `-o json`.
    pub json: Option<serde_json::Value>,
}

/// How the fleet's exit code is worked out once every cluster succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Changes {
    /// Changes are success (exit 0).
    Succeed,
    /// Changes exit 2 (`--detailed-exitcode`, drift, not ready).
    Exit2,
}

/// Run `each` on every cluster of `waves` and print the outcome: each
/// cluster's block and errors as it finishes, prefixed by its name, then a
/// table (or one JSON document). Exits 1 when a cluster failed or did not
/// run, else 2 when one has changes and `changes` says so, else 0.
pub async fn run<F, Fut>(
    settings: &GlobalSettings,
    (waves, pace, found): (Vec<RolloutWave>, Pace, Discovered),
    verb: &str,
    changes: Changes,
    each: F,
) -> anyhow::Result<ExitCode>
where
    F: Fn(GlobalSettings) -> Fut,
    Fut: Future<Output = anyhow::Result<ClusterReport>> + Send + 'static,
{
    let text = settings.output == OutputFormat::Text;
    if text {
        for (i, wave) in waves.iter().enumerate() {
            let names: Vec<&str> = wave.targets.iter().map(|t| t.name.as_str()).collect();
            eprintln!(
                "{verb} wave {}/{} ({}): {}",
                i + 1,
                waves.len(),
                wave.name,
                names.join(", ")
            );
        }
    }
    let runs = fleet::run(&waves, pace, |target| {
        let settings = settings.for_target(&target, &found);
        let color = settings.stderr_color;
        let result = each(settings);
        async move {
            let result = result.await;
            let name = &target.name;
            match &result {
                Ok(report) if text && !report.text.is_empty() => {
                    let block: String = report
                        .text
                        .lines()
                        .map(|l| format!("[{name}] {l}\n"))
                        .collect();
                    print!("{block}");
                }
                Err(error) => {
                    if let Some(message) = failure::describe(error, color) {
                        let block: String =
                            message.lines().map(|l| format!("[{name}] {l}\n")).collect();
                        eprint!("{block}");
                    }
                }
                Ok(_) => {}
            }
            result
        }
    })
    .await;
    let failed = runs
        .iter()
        .any(|r| !matches!(r.verdict, ClusterVerdict::Done(_)));
    let changed = runs
        .iter()
        .any(|r| matches!(&r.verdict, ClusterVerdict::Done(report) if report.changes));
    if text {
        outln!("{}", table(&runs));
    } else {
        let clusters: Vec<serde_json::Value> = runs.iter().map(json_row).collect();
        outln!(
            "{}",
            serde_json::to_string(&serde_json::json!({ "verb": verb, "clusters": clusters }))?
        );
    }
    if failed {
        return Err(Reported.into());
    }
    Ok(if changed && changes == Changes::Exit2 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

fn result_word(run: &ClusterRun<ClusterReport, anyhow::Error>) -> &'static str {
    match &run.verdict {
        ClusterVerdict::Done(report) if report.changes => "changes",
        ClusterVerdict::Done(_) => "ok",
        ClusterVerdict::Failed(_) => "failed",
        ClusterVerdict::NotRun => "not run",
    }
}

fn seconds(duration: Duration) -> String {
    format!("{:.1}s", duration.as_secs_f64())
}

/// The closing table: cluster, environment, wave, result, objects changed, duration.
fn table(runs: &[ClusterRun<ClusterReport, anyhow::Error>]) -> String {
    let mut rows = vec![[
        "CLUSTER".to_owned(),
        "ENVIRONMENT".to_owned(),
        "WAVE".to_owned(),
        "RESULT".to_owned(),
        "CHANGED".to_owned(),
        "DURATION".to_owned(),
    ]];
    for run in runs {
        let changed = match &run.verdict {
            ClusterVerdict::Done(ClusterReport {
                changed: Some(n), ..
            }) => n.to_string(),
            _ => "-".to_owned(),
        };
        let duration = match run.verdict {
            ClusterVerdict::NotRun => "-".to_owned(),
            _ => seconds(run.duration),
        };
        rows.push([
            run.target.name.clone(),
            run.target.environment.clone(),
            run.wave.clone(),
            result_word(run).to_owned(),
            changed,
            duration,
        ]);
    }
    crate::report::table(&rows)
}

fn json_row(run: &ClusterRun<ClusterReport, anyhow::Error>) -> serde_json::Value {
    let mut row = serde_json::json!({
        "cluster": run.target.name,
        "environment": run.target.environment,
        "wave": run.wave,
        "result": result_word(run),
        "seconds": (run.duration.as_secs_f64() * 1000.0).round() / 1000.0,
    });
    match &run.verdict {
        ClusterVerdict::Done(report) => {
            if let Some(changed) = report.changed {
                row["changed"] = serde_json::json!(changed);
            }
            if let Some(json) = &report.json {
                row["report"] = json.clone();
            }
        }
        ClusterVerdict::Failed(error) => {
            row["error"] = serde_json::json!(
                failure::describe(error, crate::report::Color::Never)
                    .unwrap_or_else(|| "failed; see the lines above".to_owned())
            );
        }
        ClusterVerdict::NotRun => {}
    }
    row
}
