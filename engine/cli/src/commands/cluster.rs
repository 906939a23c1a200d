//! Steps every command that talks to a cluster shares: the context guard,
//! connecting, showing the target, rendering with the cluster's capabilities,
//! and the progress view.

use std::io::Write as _;
use std::sync::Mutex;
use std::time::Instant;

use anyhow::anyhow;
use tazuna_core::config::{Config, Manifest};
use tazuna_core::lock::Lockfile;
use tazuna_engine::apply::{Action, Event, Observer, Outcome};
use tazuna_engine::cluster::{self, Cluster};
use tazuna_engine::guard::{ContextGuard, Rebind};
use tazuna_engine::render::{self, RenderSettings, Rendered};
use tazuna_engine::report::{Color, OutputFormat};

use crate::settings::GlobalSettings;

/// Whether the command writes to the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads only.
    Read,
    /// Writes to a throwaway control plane `tazuna verify` started: the file's
    /// context rules and cluster binding are about real clusters, not this one.
    Throwaway,
    /// Writes; records the cluster binding on first use.
    Write(Rebind),
}

/// Check the context name, connect, check the cluster identity, and (for
/// writes) print the target and record the binding. Nothing is written to
/// the cluster here.
pub async fn connect(
    settings: &GlobalSettings,
    config: &Config,
    access: Access,
) -> anyhow::Result<Cluster> {
    let lock_path = Lockfile::path_for(&settings.file);
    let guard = ContextGuard {
        rule: config.context_rule(),
        environment: settings.environment.clone(),
        file_uid: config.cluster().and_then(|c| c.uid.clone()),
        lock_path: lock_path.clone(),
    };
    let context = cluster::context_name(&settings.connect).map_err(cluster_error)?;
    if access == Access::Throwaway {
        let mut options = settings.connect.clone();
        options.context = Some(context);
        let cluster = Cluster::connect(&options).await.map_err(cluster_error)?;
        eprintln!("target: {} (throwaway)", cluster.target());
        return Ok(cluster);
    }
    guard
        .check_context(&context)
        .map_err(|e| anyhow!("{e}\nhint: {}", e.hint()))?;
    let mut options = settings.connect.clone();
    options.context = Some(context);
    let cluster = Cluster::connect(&options).await.map_err(cluster_error)?;
    let mut lock = Lockfile::load(&lock_path)?;
    let rebind = match access {
        Access::Read | Access::Throwaway => Rebind::Refuse,
        Access::Write(rebind) => rebind,
    };
    let binding = guard
        .check_identity(cluster.target(), &lock, rebind)
        .map_err(|e| anyhow!("{e}\nhint: {}", e.hint()))?;
    if let Access::Write(_) = access {
        eprintln!("target: {}", cluster.target());
        if let Some(binding) = binding {
            eprintln!(
                "binding {} to cluster {} in `{}`",
                settings
                    .environment
                    .as_deref()
                    .map_or("this file".to_owned(), |e| format!("environment `{e}`")),
                binding.uid,
                lock_path.display()
            );
            lock.bind(settings.environment.as_deref(), binding);
            lock.save(&lock_path)?;
        }
    }
    Ok(cluster)
}

fn cluster_error(error: cluster::ClusterError) -> anyhow::Error {
    match error.hint() {
        Some(hint) => anyhow!("{}\nhint: {hint}", describe(&error)),
        None => anyhow!("{}", describe(&error)),
    }
}

fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        // Some causes already quote their own source; say each thing once.
        let said = cause.to_string();
        if !text.ends_with(&said) {
            text.push_str(&format!(": {said}"));
        }
        source = cause.source();
    }
    text
}

/// Render `manifests` for `cluster` (plugins see its version and API
/// groups). Each result is the rendered manifest or its error message.
pub fn render(
    settings: &GlobalSettings,
    config: &Config,
    manifests: &[&Manifest],
    cluster: &Cluster,
) -> anyhow::Result<Vec<Result<Rendered, String>>> {
    let (host, plugins) = super::load_plugins(settings, config, manifests)?;
    let render_settings = RenderSettings {
        environment: settings.environment.clone(),
        values: config.values(),
        cluster: Some(cluster.info()),
        concurrency: 0,
    };
    Ok(
        render::render_all(&host, &plugins, manifests, &render_settings)
            .into_iter()
            .map(|r| r.map_err(|e| e.to_string()))
            .collect(),
    )
}

/// The git commit of the directory holding the config, if it is a work tree.
pub fn git_commit(config: &Config) -> Option<String> {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(&config.dir)
        .args(["rev-parse", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .filter(|c| !c.is_empty())
}

/// Progress on stdout, from the engine's events: a live view redrawn in place
/// on a terminal, plain lines otherwise, JSON lines with `-o json`.
pub struct Progress {
    format: OutputFormat,
    color: Color,
    started: Instant,
    verb: &'static str,
    out: Mutex<()>,
    /// On a terminal: the block of running manifests, redrawn in place.
    live: Option<std::sync::Arc<Mutex<LiveView>>>,
    /// Redraws the live view while nothing happens, so the clock moves.
    _ticker: Option<Ticker>,
}

/// A thread that redraws the live view four times a second until dropped.
struct Ticker {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ticker {
    fn start(live: std::sync::Arc<Mutex<LiveView>>, started: Instant) -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(250));
                let mut view = live.lock().expect("live view lock");
                if !view.running.is_empty() && view.due() {
                    view.draw(&[], started);
                }
            }
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The live view on a terminal: one line per running manifest with its
/// counts, redrawn in place below the lines that are final, on each event and
/// four times a second.
#[derive(Default)]
struct LiveView {
    layer: String,
    running: std::collections::BTreeMap<String, Running>,
    drawn: usize,
    last_draw: Option<Instant>,
}

struct Running {
    objects: usize,
    handled: usize,
    waiting: usize,
    ready: usize,
    started: Instant,
}

const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

impl LiveView {
    /// Erase the block, print `lines` for good, and draw the block again.
    fn draw(&mut self, lines: &[String], started: Instant) {
        let mut out = std::io::stdout().lock();
        let mut text = String::new();
        if self.drawn > 0 {
            // Up to the block's first line, and clear from there down.
            text.push_str(&format!("\x1b[{}F\x1b[J", self.drawn));
        }
        for line in lines {
            text.push_str(line);
            text.push('\n');
        }
        self.drawn = 0;
        if !self.running.is_empty() {
            let elapsed = started.elapsed();
            let spin = SPINNER[(elapsed.as_millis() / 100) as usize % SPINNER.len()];
            text.push_str(&format!(
                "{spin} {} ({:.1}s)\n",
                self.layer,
                elapsed.as_secs_f64()
            ));
            self.drawn += 1;
            for (name, run) in &self.running {
                let mut line = format!("    {name}: {}/{} objects", run.handled, run.objects);
                if run.waiting > 0 {
                    line.push_str(&format!(", {}/{} ready", run.ready, run.waiting));
                }
                line.push_str(&format!(" ({:.1}s)", run.started.elapsed().as_secs_f64()));
                text.push_str(&line);
                text.push('\n');
                self.drawn += 1;
            }
        }
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        self.last_draw = Some(Instant::now());
    }

    /// Whether a redraw for a small change is due (at most ten a second).
    fn due(&self) -> bool {
        self.last_draw
            .is_none_or(|t| t.elapsed() >= std::time::Duration::from_millis(100))
    }
}

impl Progress {
    /// A progress printer for `verb` (`apply`, `destroy`).
    pub fn new(settings: &GlobalSettings, verb: &'static str) -> Self {
        let started = Instant::now();
        let live = (settings.output == OutputFormat::Text && crate::stdout_is_terminal())
            .then(|| std::sync::Arc::new(Mutex::new(LiveView::default())));
        Self {
            format: settings.output,
            color: settings.stdout_color,
            started,
            verb,
            out: Mutex::new(()),
            _ticker: live.clone().map(|live| Ticker::start(live, started)),
            live,
        }
    }

    fn line(&self, text: &str) {
        if let Some(live) = &self.live {
            live.lock()
                .expect("live view lock")
                .draw(&[text.to_owned()], self.started);
            return;
        }
        let _guard = self.out.lock();
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{text}");
    }

    /// Update the live view; `true` when it handled the event (on a terminal,
    /// per-object lines are counts in the view instead).
    fn live_event(&self, event: &Event) -> bool {
        let Some(live) = &self.live else {
            return false;
        };
        let mut view = live.lock().expect("live view lock");
        match event {
            Event::Layer {
                index,
                of,
                manifests,
            } => {
                view.layer = format!("layer {index}/{of}: {}", manifests.join(", "));
                view.draw(&[], self.started);
            }
            Event::Started { manifest, objects } => {
                view.running.insert(
                    manifest.clone(),
                    Running {
                        objects: *objects,
                        handled: 0,
                        waiting: 0,
                        ready: 0,
                        started: Instant::now(),
                    },
                );
                view.draw(&[], self.started);
            }
            Event::Object {
                manifest,
                object,
                action,
                note,
            } => {
                if let Some(run) = view.running.get_mut(manifest) {
                    run.handled += 1;
                }
                // Deletions and kept objects stay on screen; the rest are counts.
                if matches!(action, Action::Pruned | Action::Kept) {
                    let note = note.as_ref().map(|n| format!(" ({n})")).unwrap_or_default();
                    view.draw(
                        &[format!("  {manifest}: {} {object}{note}", action.label())],
                        self.started,
                    );
                } else if view.due() {
                    view.draw(&[], self.started);
                }
            }
            Event::Waiting { manifest, objects } => {
                if let Some(run) = view.running.get_mut(manifest) {
                    run.waiting += objects;
                }
                view.draw(&[], self.started);
            }
            Event::Ready { manifest, .. } => {
                if let Some(run) = view.running.get_mut(manifest) {
                    run.ready += 1;
                }
                if view.due() {
                    view.draw(&[], self.started);
                }
            }
            Event::Finished(outcome) => {
                view.running.remove(&outcome.manifest);
                return false;
            }
            Event::TestPassed { .. } => return false,
        }
        true
    }

    fn json(&self, value: serde_json::Value) {
        self.line(&value.to_string());
    }
}

impl Observer for Progress {
    fn event(&self, event: Event) {
        let elapsed = self.started.elapsed().as_secs_f64();
        if self.format == OutputFormat::Json {
            let value = match &event {
                Event::Layer {
                    index,
                    of,
                    manifests,
                } => {
                    serde_json::json!({"event": "layer", "index": index, "of": of, "manifests": manifests})
                }
                Event::Started { manifest, objects } => {
                    serde_json::json!({"event": "started", "manifest": manifest, "objects": objects})
                }
                Event::Object {
                    manifest,
                    object,
                    action,
                    note,
                } => {
                    serde_json::json!({"event": "object", "manifest": manifest, "object": object.to_string(), "action": action.label(), "note": note})
                }
                Event::Waiting { manifest, objects } => {
                    serde_json::json!({"event": "waiting", "manifest": manifest, "objects": objects})
                }
                Event::Ready { manifest, object } => {
                    serde_json::json!({"event": "ready", "manifest": manifest, "object": object.to_string()})
                }
                Event::TestPassed { manifest, test } => {
                    serde_json::json!({"event": "test-passed", "manifest": manifest, "test": test})
                }
                Event::Finished(outcome) => {
                    let (result, reason) = match &outcome.outcome {
                        Outcome::Applied => ("ok", None),
                        Outcome::Failed(e) => ("failed", Some(e.clone())),
                        Outcome::Skipped(r) => ("skipped", Some(r.clone())),
                    };
                    serde_json::json!({"event": "finished", "manifest": outcome.manifest, "result": result, "reason": reason,
                        "created": outcome.counts.created, "configured": outcome.counts.configured, "unchanged": outcome.counts.unchanged,
                        "pruned": outcome.counts.pruned, "kept": outcome.counts.kept, "seconds": outcome.elapsed.as_secs_f64()})
                }
            };
            let mut value = value;
            value["elapsed"] = serde_json::json!((elapsed * 1000.0).round() / 1000.0);
            self.json(value);
            return;
        }
        if self.live_event(&event) {
            return;
        }
        match event {
            Event::Layer {
                index,
                of,
                manifests,
            } => self.line(&format!("layer {index}/{of}: {}", manifests.join(", "))),
            Event::Started { manifest, objects } => {
                self.line(&format!("  {manifest}: {objects} objects"))
            }
            Event::Object {
                action: Action::Unchanged,
                ..
            } => {}
            Event::Object {
                manifest,
                object,
                action,
                note,
            } => {
                let note = note.map(|n| format!(" ({n})")).unwrap_or_default();
                self.line(&format!("  {manifest}: {} {object}{note}", action.label()));
            }
            Event::Waiting { manifest, objects } if objects > 0 => {
                self.line(&format!(
                    "  {manifest}: waiting for {objects} objects to be ready"
                ));
            }
            Event::Waiting { .. } | Event::Ready { .. } => {}
            Event::TestPassed { manifest, test } => {
                self.line(&format!(
                    "  {}: passed {test}",
                    manifest.as_deref().unwrap_or("spec.tests")
                ));
            }
            Event::Finished(outcome) => {
                let c = &outcome.counts;
                let mut parts = Vec::new();
                for (n, label) in [
                    (c.created, "created"),
                    (c.configured, "configured"),
                    (c.unchanged, "unchanged"),
                    (c.pruned, "deleted"),
                    (c.kept, "kept"),
                ] {
                    if n > 0 {
                        parts.push(format!("{n} {label}"));
                    }
                }
                let counts = if parts.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", parts.join(", "))
                };
                let text = match &outcome.outcome {
                    Outcome::Applied => self.color.ok(&format!(
                        "  {}: {} done{counts} in {:.1}s",
                        outcome.manifest,
                        self.verb,
                        outcome.elapsed.as_secs_f64()
                    )),
                    Outcome::Failed(error) => {
                        let mut lines = error.lines();
                        let first = lines.next().unwrap_or_default();
                        let mut text = self
                            .color
                            .error(&format!("  {}: failed: {first}", outcome.manifest));
                        for line in lines {
                            text.push_str(&format!("\n    {line}"));
                        }
                        text
                    }
                    Outcome::Skipped(reason) => self
                        .color
                        .warning(&format!("  {}: skipped: {reason}", outcome.manifest)),
                };
                self.line(&text);
            }
        }
    }
}

/// Print the closing summary; returns whether everything succeeded.
pub fn summary(progress: &Progress, outcomes: &[tazuna_engine::apply::ManifestOutcome]) -> bool {
    let applied = outcomes
        .iter()
        .filter(|o| o.outcome == Outcome::Applied)
        .count();
    let failed: Vec<&str> = outcomes
        .iter()
        .filter(|o| matches!(o.outcome, Outcome::Failed(_)))
        .map(|o| o.manifest.as_str())
        .collect();
    let skipped: Vec<&str> = outcomes
        .iter()
        .filter(|o| matches!(o.outcome, Outcome::Skipped(_)))
        .map(|o| o.manifest.as_str())
        .collect();
    let elapsed = progress.started.elapsed().as_secs_f64();
    if progress.format == OutputFormat::Json {
        progress.json(serde_json::json!({"event": "summary", "ok": applied, "failed": failed, "skipped": skipped, "seconds": elapsed}));
    } else {
        let mut text = format!("{}: {applied} ok", progress.verb);
        if !failed.is_empty() {
            text.push_str(&format!(
                ", {} failed ({})",
                failed.len(),
                failed.join(", ")
            ));
        }
        if !skipped.is_empty() {
            text.push_str(&format!(
                ", {} skipped ({})",
                skipped.len(),
                skipped.join(", ")
            ));
        }
        text.push_str(&format!(" in {elapsed:.1}s"));
        progress.line(&text);
    }
    failed.is_empty() && skipped.is_empty()
}
