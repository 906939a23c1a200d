//! How a failed command is reported: what went wrong, where, and a `hint:`
//! line that says what to do.

use crate::report::Color;
use tazuna_core::config::ConfigError;
use tazuna_core::hint::{Advised, Hint};
use tazuna_engine::ownership::OwnershipError;
use tazuna_engine::stack::RunError;

/// A failure already reported in detail (for example a list of render errors);
/// only the exit code is left to set.
#[derive(Debug)]
pub struct Reported;

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("failed")
    }
}

impl std::error::Error for Reported {}

/// The error `message`, with `hint` for what to do.
pub fn advised(message: impl Into<String>, hint: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Advised::new(message, hint))
}

/// Print `error` on stderr: what is wrong, its causes, then one `hint:`
/// line for each error in the chain that has one ([`Hint`]).
pub fn report(error: &anyhow::Error, color: Color) {
    if let Some(text) = describe(error, color) {
        eprintln!("{text}");
    }
}

/// What [`report`] prints, `None` for [`Reported`].
pub fn describe(error: &anyhow::Error, color: Color) -> Option<String> {
    if error.downcast_ref::<Reported>().is_some() {
        return None;
    }
    let config =
        error
            .downcast_ref::<ConfigError>()
            .or_else(|| match error.downcast_ref::<RunError>() {
                Some(RunError::Config(config)) => Some(config),
                _ => None,
            });
    if let Some(config) = config {
        return Some(paint(&config.render(), color));
    }
    // Each manifest that failed to render, on its own line.
    if let Some(RunError::Render(errors)) = error.downcast_ref::<RunError>() {
        let lines: Vec<String> = errors
            .iter()
            .map(|failure| paint(&with_hints("error", failure, failure.hint.iter()), color))
            .collect();
        return Some(lines.join("\n"));
    }
    let mut message = format!("{error}");
    for cause in error.chain().skip(1) {
        // Errors that quote their cause already have said it.
        let cause = cause.to_string();
        if !message.contains(&cause) {
            message.push_str(&format!("\n  caused by: {cause}"));
        }
    }
    Some(paint(&with_hints("error", &message, hints(error)), color))
}

/// The one shape of a reported problem: `<label>: <message>`, then one
/// `hint:` line per hint. Every error and warning the CLI prints goes through
/// here (the progress view and `-o json` carry the hints as a field).
pub fn with_hints(
    label: &str,
    message: &dyn std::fmt::Display,
    hints: impl IntoIterator<Item = impl AsRef<str>>,
) -> String {
    let mut text = format!("{label}: {message}");
    for hint in hints {
        text.push_str("\nhint: ");
        text.push_str(hint.as_ref());
    }
    text
}

/// The hints of the errors in `error`'s chain, in order, each once (an
/// error and the one it wraps may give the same).
pub fn hints(error: &anyhow::Error) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    error
        .chain()
        .flat_map(hints_of)
        .filter(|hint| seen.insert(hint.clone()))
        .collect()
}

/// The hints of one error of a chain: the error types that reach the CLI
/// through `anyhow`, each asked through [`Hint`].
fn hints_of(cause: &(dyn std::error::Error + 'static)) -> Vec<String> {
    fn of<E: Hint + std::error::Error + 'static>(
        cause: &(dyn std::error::Error + 'static),
    ) -> Option<Vec<String>> {
        cause.downcast_ref::<E>().map(Hint::hints)
    }
    of::<RunError>(cause)
        .or_else(|| of::<tazuna_engine::fleet::FleetError>(cause))
        .or_else(|| of::<Advised>(cause))
        .or_else(|| of::<tazuna_engine::plugins::PluginLoadError>(cause))
        .or_else(|| of::<tazuna_engine::distribution::DistributionError>(cause))
        .or_else(|| of::<OwnershipError>(cause))
        .or_else(|| of::<tazuna_controlplane::StartError>(cause))
        .unwrap_or_default()
}

/// Colour the `error:`, `warning:` and `hint:` labels at line starts.
pub fn paint(text: &str, color: Color) -> String {
    text.lines()
        .map(|line| {
            for (label, style) in [
                ("error:", Color::error as fn(Color, &str) -> String),
                ("warning:", Color::warning),
                ("hint:", Color::hint),
            ] {
                if let Some(rest) = line.strip_prefix(label) {
                    return format!("{}{rest}", style(color, label));
                }
            }
            line.to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `error` is stdout closing under us.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
