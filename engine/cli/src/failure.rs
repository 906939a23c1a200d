//! How a failed command is reported: what went wrong, where, and a `hint:`
//! line that says what to do.

use crate::report::Color;
use tazuna_core::config::ConfigError;
use tazuna_core::hint::Hint;
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

/// An error of the CLI's own: what is wrong, and apart from it what to do
/// (printed as its `hint:` line, like every other error's [`Hint`]).
#[derive(Debug)]
pub struct Advised {
    message: String,
    hint: String,
}

impl std::fmt::Display for Advised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Advised {}

impl Hint for Advised {
    fn hint(&self) -> Option<String> {
        Some(self.hint.clone())
    }
}

/// The error `message`, with `hint` for what to do.
pub fn advised(message: impl Into<String>, hint: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Advised {
        message: message.into(),
        hint: hint.into(),
    })
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
            .map(|failure| {
                let hint = failure
                    .hint
                    .as_deref()
                    .map(|hint| format!("\nhint: {hint}"))
                    .unwrap_or_default();
                paint(&format!("error: {failure}{hint}"), color)
            })
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
    for hint in hints(error) {
        message.push_str(&format!("\nhint: {hint}"));
    }
    Some(paint(&format!("error: {message}"), color))
}

/// The hints of the errors in `error`'s chain, in order, each once (an
/// error and the one it wraps may give the same).
fn hints(error: &anyhow::Error) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    error
        .chain()
        .filter_map(|cause| {
            if let Some(run) = cause.downcast_ref::<RunError>() {
                return run.hint();
            }
            if let Some(fleet) = cause.downcast_ref::<tazuna_engine::fleet::FleetError>() {
                return fleet.hint();
            }
            if let Some(advised) = cause.downcast_ref::<Advised>() {
                return advised.hint();
            }
            if let Some(plugin) = cause.downcast_ref::<tazuna_engine::plugins::PluginLoadError>() {
                return plugin.hint();
            }
            if let Some(pull) =
                cause.downcast_ref::<tazuna_engine::distribution::DistributionError>()
            {
                return pull.hint();
            }
            cause.downcast_ref::<OwnershipError>().and_then(Hint::hint)
        })
        .filter(|hint| seen.insert(hint.clone()))
        .collect()
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
