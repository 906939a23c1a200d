//! Run a tool the host knows by a logical name (`helm`, `kustomize`) through the `exec` import.
//!
//! Every call needs the grant `exec:<tool>`; without it the host answers
//! [`PluginError::CapabilityDenied`]. Outside a Tazuna host every call is denied.
//!
//! ```no_run
//! use tazuna_sdk::exec::Command;
//!
//! # fn render() -> Result<(), tazuna_sdk::PluginError> {
//! let output = Command::new("helm")
//!     .args(["template", "demo", "./chart"])
//!     .timeout(std::time::Duration::from_secs(60))
//!     .run_checked()?;
//! let yaml = output.stdout_text();
//! # Ok(()) }
//! ```

use std::borrow::Cow;
use std::time::Duration;

use crate::{PluginError, ToolFailure};

pub use crate::bindings::source::tazuna::plugin::exec::{Command, Output};

/// How much of stderr a [`PluginError::ToolFailed`] keeps.
const STDERR_TAIL_BYTES: usize = 4096;

/// Runs `command` on the host. A tool that runs and fails is still `Ok`; see
/// [`Command::run_checked`] to turn a non-zero exit into an error.
pub fn run(command: &Command) -> Result<Output, PluginError> {
    #[cfg(target_arch = "wasm32")]
    {
        crate::bindings::source::tazuna::plugin::exec::run(command)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        Err(PluginError::CapabilityDenied(format!(
            "exec:{} (not running inside a Tazuna host)",
            command.tool
        )))
    }
}

impl Command {
    /// A command for the tool the host knows as `tool`, with no arguments.
    pub fn new(tool: impl Into<String>) -> Self {
        Self {
            tool: tool.into(),
            args: Vec::new(),
            stdin: None,
            env: Vec::new(),
            cwd: None,
            timeout_ms: None,
        }
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends several arguments.
    pub fn args<I>(mut self, args: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Feeds `input` to the tool's stdin.
    pub fn stdin(mut self, input: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(input.into());
        self
    }

    /// Sets one environment variable; the rest of the environment is scrubbed by the host.
    ///
    /// A value `ref+<provider>:<reference>` (such as `ref+default-op:op://vault/item/field`)
    /// is resolved by the host as the tool starts, if the plugin has the capability
    /// `secrets:exec`; the plugin never holds the value. Where nothing is resolved
    /// (`tazuna build`), the tool gets the reference text. A value from a secret provider
    /// may come back only inside a Secret: any other object that holds it fails the render.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Runs the tool in `dir`, a guest path inside a preopened directory.
    pub fn cwd(mut self, dir: impl Into<String>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Bounds the run; the host caps it at its own budget.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout_ms = Some(u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX));
        self
    }

    /// Runs the command; see [`run`].
    pub fn run(&self) -> Result<Output, PluginError> {
        run(self)
    }

    /// Runs the command and turns a non-zero exit into [`PluginError::ToolFailed`] carrying the
    /// end of stderr.
    pub fn run_checked(&self) -> Result<Output, PluginError> {
        checked(&self.tool, self.run()?)
    }
}

/// `output`, or [`PluginError::ToolFailed`] carrying the end of stderr when
/// `tool` exited non-zero.
pub(crate) fn checked(tool: &str, output: Output) -> Result<Output, PluginError> {
    if output.success() {
        return Ok(output);
    }
    let tail_start = output.stderr.len().saturating_sub(STDERR_TAIL_BYTES);
    Err(PluginError::ToolFailed(ToolFailure {
        tool: tool.to_owned(),
        exit_code: Some(output.exit_code),
        stderr_tail: String::from_utf8_lossy(&output.stderr[tail_start..]).into_owned(),
    }))
}

impl Output {
    /// Whether the tool exited with status 0.
    pub fn success(&self) -> bool {
        self.exit_code == 0
    }

    /// stdout as text, with invalid UTF-8 replaced.
    pub fn stdout_text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.stdout)
    }

    /// stderr as text, with invalid UTF-8 replaced.
    pub fn stderr_text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.stderr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_fills_the_record() {
        let command = Command::new("helm")
            .arg("template")
            .args(["a", "b"])
            .env("HELM_CACHE_HOME", "/scratch")
            .cwd("/workdir")
            .stdin("x")
            .timeout(Duration::from_secs(5));
        assert_eq!(command.args, ["template", "a", "b"]);
        assert_eq!(command.timeout_ms, Some(5000));
        assert_eq!(command.stdin.as_deref(), Some(&b"x"[..]));
    }

    #[test]
    fn outside_a_host_exec_is_denied() {
        let error = Command::new("helm").run().unwrap_err();
        assert!(
            matches!(error, PluginError::CapabilityDenied(what) if what.starts_with("exec:helm"))
        );
    }
}
