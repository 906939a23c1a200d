//! Progress on stdout, from the engine's events: a live view redrawn in place
//! on a terminal, plain lines otherwise, JSON lines with `-o json`. Every form
//! comes from the same [`Event`] stream, so they cannot disagree.

use std::io::Write as _;
use std::sync::Mutex;
use std::time::Instant;

use crate::report::{Color, OutputFormat};
use tazuna_engine::apply::{Action, Event, ManifestOutcome, Observer, Outcome};

use crate::settings::GlobalSettings;

/// Progress on stdout, from the engine's events: a live view redrawn in place
/// on a terminal, plain lines otherwise, JSON lines with `-o json`.
pub struct Progress {
    format: OutputFormat,
    color: Color,
    started: Instant,
    verb: &'static str,
    /// The cluster, in a fleet run: prefixes text lines, and JSON lines carry it.
    label: Option<String>,
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
        // Clusters of a fleet run print plain lines side by side.
        let live = (settings.output == OutputFormat::Text
            && settings.label.is_none()
            && crate::stdout_is_terminal())
        .then(|| std::sync::Arc::new(Mutex::new(LiveView::default())));
        Self {
            format: settings.output,
            color: settings.stdout_color,
            started,
            verb,
            label: settings.label.clone(),
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
        let _ = match &self.label {
            Some(label) => writeln!(out, "[{label}] {text}"),
            None => writeln!(out, "{text}"),
        };
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
                view.layer = layer_line(*index, *of, manifests);
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
                // Deletions, kept objects and warnings stay on screen; the
                // rest are counts.
                if matches!(action, Action::Pruned | Action::Deleted | Action::Kept)
                    || note.is_some()
                {
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
            Event::Note {
                manifest,
                object,
                note,
            } => view.draw(&[format!("  {manifest}: {object} ({note})")], self.started),
            Event::TestPassed { .. } => return false,
        }
        true
    }

    fn json(&self, mut value: serde_json::Value) {
        if let Some(label) = &self.label {
            value["cluster"] = serde_json::json!(label);
        }
        let _guard = self.out.lock();
        let _ = writeln!(std::io::stdout().lock(), "{value}");
    }
}

impl Observer for Progress {
    fn event(&self, event: Event) {
        let elapsed = self.started.elapsed().as_secs_f64();
        if self.format == OutputFormat::Json {
            let mut value = event_json(&event);
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
            } => self.line(&layer_line(index, of, &manifests)),
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
            Event::Note {
                manifest,
                object,
                note,
            } => self.line(&format!("  {manifest}: {object} ({note})")),
            Event::TestPassed { manifest, test } => {
                self.line(&format!(
                    "  {}: passed {test}",
                    manifest.as_deref().unwrap_or("spec.tests")
                ));
            }
            Event::Finished(outcome) => self.line(&finished_line(&outcome, self.verb, self.color)),
        }
    }
}

/// Print the closing summary; returns whether everything succeeded.
pub fn summary(progress: &Progress, outcomes: &[ManifestOutcome]) -> bool {
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

/// `layer 2/3: argocd, projects`.
fn layer_line(index: usize, of: usize, manifests: &[String]) -> String {
    format!("layer {index}/{of}: {}", manifests.join(", "))
}

/// One event as a JSON line's object (without `elapsed`).
fn event_json(event: &Event) -> serde_json::Value {
    match event {
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
        Event::Note {
            manifest,
            object,
            note,
        } => {
            serde_json::json!({"event": "note", "manifest": manifest, "object": object.to_string(), "note": note})
        }
        Event::TestPassed { manifest, test } => {
            serde_json::json!({"event": "test-passed", "manifest": manifest, "test": test})
        }
        Event::Finished(outcome) => {
            let (result, reason) = match &outcome.outcome {
                Outcome::Applied => ("ok", None),
                Outcome::Failed(e) => ("failed", Some(e.message.clone())),
                Outcome::Skipped(r) => ("skipped", Some(r.clone())),
            };
            let hint = match &outcome.outcome {
                Outcome::Failed(e) => e.hint.clone(),
                _ => None,
            };
            serde_json::json!({"event": "finished", "manifest": outcome.manifest, "result": result, "reason": reason, "hint": hint,
                "created": outcome.counts.created, "configured": outcome.counts.configured, "unchanged": outcome.counts.unchanged,
                "pruned": outcome.counts.pruned, "kept": outcome.counts.kept, "seconds": outcome.elapsed.as_secs_f64()})
        }
    }
}

/// The plain line for a finished manifest: its result, counts and time.
fn finished_line(outcome: &ManifestOutcome, verb: &str, color: Color) -> String {
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
    match &outcome.outcome {
        Outcome::Applied => color.ok(&format!(
            "  {}: {} done{counts} in {:.1}s",
            outcome.manifest,
            verb,
            outcome.elapsed.as_secs_f64()
        )),
        Outcome::Failed(failure) => {
            let mut lines = failure.message.lines();
            let first = lines.next().unwrap_or_default();
            let mut text = color.error(&format!("  {}: failed: {first}", outcome.manifest));
            for line in lines {
                text.push_str(&format!("\n    {line}"));
            }
            if let Some(hint) = &failure.hint {
                text.push_str(&format!("\n    {} {hint}", color.hint("hint:")));
            }
            text
        }
        Outcome::Skipped(reason) => {
            color.warning(&format!("  {}: skipped: {reason}", outcome.manifest))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tazuna_core::inventory::ObjectRef;
    use tazuna_engine::apply::Counts;
    use tazuna_engine::apply::Failure;

    use super::*;

    fn outcome(outcome: Outcome, counts: Counts) -> ManifestOutcome {
        ManifestOutcome {
            manifest: "argocd".into(),
            outcome,
            counts,
            elapsed: Duration::from_millis(1530),
        }
    }

    #[test]
    fn a_finished_line_names_the_result_the_counts_that_are_not_zero_and_the_time() {
        let counts = Counts {
            created: 3,
            unchanged: 57,
            ..Counts::default()
        };
        assert_eq!(
            finished_line(&outcome(Outcome::Applied, counts), "apply", Color::Never),
            "  argocd: apply done (3 created, 57 unchanged) in 1.5s"
        );
        let failed = Outcome::Failed(Failure {
            message: "v1 ConfigMap argocd/x: refused".into(),
            hint: Some("fix it".into()),
        });
        assert_eq!(
            finished_line(&outcome(failed, Counts::default()), "apply", Color::Never),
            "  argocd: failed: v1 ConfigMap argocd/x: refused\n    hint: fix it"
        );
        let skipped = Outcome::Skipped("`operators` failed".into());
        assert_eq!(
            finished_line(&outcome(skipped, Counts::default()), "apply", Color::Never),
            "  argocd: skipped: `operators` failed"
        );
    }

    #[test]
    fn json_lines_carry_every_field_of_the_event() {
        let object = ObjectRef {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("argocd".into()),
            name: "argocd-cm".into(),
        };
        let event = Event::Object {
            manifest: "argocd".into(),
            object,
            action: Action::Created,
            note: None,
        };
        assert_eq!(
            event_json(&event),
            serde_json::json!({"event": "object", "manifest": "argocd",
                "object": "v1 ConfigMap argocd/argocd-cm", "action": "created", "note": null})
        );
        let finished = Event::Finished(outcome(
            Outcome::Failed(Failure {
                message: "boom".into(),
                hint: Some("rerun with `--recreate`".into()),
            }),
            Counts {
                configured: 2,
                ..Counts::default()
            },
        ));
        assert_eq!(
            event_json(&finished),
            serde_json::json!({"event": "finished", "manifest": "argocd", "result": "failed",
                "reason": "boom", "hint": "rerun with `--recreate`", "created": 0, "configured": 2, "unchanged": 0, "pruned": 0,
                "kept": 0, "seconds": 1.53})
        );
    }
}
