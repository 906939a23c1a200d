//! Write to Tazuna's log through the host's `log` import.
//!
//! Messages are anything that implements `Display`, so `format_args!` avoids an allocation:
//! `log::info(format_args!("rendering {name}"))`. Outside a Tazuna host (unit tests on the host
//! target) messages go to stderr instead.

use std::fmt::Display;

pub use crate::bindings::source::tazuna::plugin::log::Level;

/// Writes `message` to the host's log at `level`.
pub fn log(level: Level, message: impl Display) {
    write(level, &message.to_string());
}

/// Writes a trace message.
pub fn trace(message: impl Display) {
    log(Level::Trace, message);
}

/// Writes a debug message.
pub fn debug(message: impl Display) {
    log(Level::Debug, message);
}

/// Writes an informational message.
pub fn info(message: impl Display) {
    log(Level::Info, message);
}

/// Writes a warning.
pub fn warn(message: impl Display) {
    log(Level::Warn, message);
}

/// Writes an error.
pub fn error(message: impl Display) {
    log(Level::Error, message);
}

#[cfg(target_arch = "wasm32")]
fn write(level: Level, message: &str) {
    crate::bindings::source::tazuna::plugin::log::log(level, message);
}

#[cfg(not(target_arch = "wasm32"))]
fn write(level: Level, message: &str) {
    eprintln!("{level:?}: {message}");
}

/// Routes a panic's message to the host's log before the component traps, so the user sees why
/// a plugin failed and not only that it did.
pub(crate) fn forward_panics() {
    #[cfg(target_arch = "wasm32")]
    {
        static HOOK: std::sync::Once = std::sync::Once::new();
        HOOK.call_once(|| std::panic::set_hook(Box::new(|panic| error(panic))));
    }
}
