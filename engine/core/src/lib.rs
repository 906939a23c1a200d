//! Tazuna's pure core: the `tazuna.yaml` model with its validation ([`config`]), the
//! order in which manifests are applied ([`graph`]), object identities, apply
//! phases, content hashes and redaction ([`inventory`]), when a live object counts
//! as ready ([`readiness`]), the cluster bindings in `tazuna.lock` ([`lock`]), what
//! `plan` and `state drift` show ([`diff`]), the evaluation of `tests` ([`check`]),
//! and what a render takes and gives ([`render`]), which the plugin side and the
//! Kubernetes side of the engine share.
//!
//! This crate does no I/O beyond reading the config files, and depends on no runtime,
//! Kubernetes client or WebAssembly engine, so everything in it is unit-testable.

/// The `tracing` target of the spans a run opens for OpenTelemetry (the run,
/// each cluster, render, plugin call, tool run, manifest, apply phase and
/// wait). Only the trace exporter listens to it; stderr logs leave it out.
pub const TRACE: &str = "tazuna_trace";

/// Run `work` inside `span`, then mark the span with how it ended
/// ([`trace_status`] of what `status` says, which may record more fields on
/// the span first), and give the outcome back: the one way a step of a run
/// is traced.
pub async fn traced<T>(
    span: tracing::Span,
    work: impl std::future::Future<Output = T>,
    status: impl FnOnce(&tracing::Span, &T) -> Result<(), String>,
) -> T {
    use tracing::Instrument as _;
    let outcome = work.instrument(span.clone()).await;
    trace_status(&span, status(&span, &outcome));
    outcome
}

/// Mark a [`TRACE`] span `ok`, or `error` with why (its
/// `otel.status_code` and `otel.status_description` fields).
pub fn trace_status(span: &tracing::Span, status: Result<(), impl std::fmt::Display>) {
    match status {
        Ok(()) => {
            span.record("otel.status_code", "ok");
        }
        Err(why) => {
            span.record("otel.status_code", "error");
            span.record("otel.status_description", why.to_string().as_str());
        }
    }
}

pub mod check;
pub mod compare;
pub mod config;
pub mod diff;
pub mod emit;
pub mod generated;
pub mod graph;
pub mod handover;
pub mod hint;
pub mod hooks;
pub mod inputs;
pub mod inventory;
pub mod lock;
pub mod policy;
pub mod readiness;
pub mod removed;
pub mod render;
pub mod selector;
pub mod template;
