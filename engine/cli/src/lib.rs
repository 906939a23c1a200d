//! The `tazuna` command line: flags in, typed settings out, then the engine.
//!
//! Each verb lives in `commands/<verb>.rs` as a clap struct with a `run` method.
//! Flags are resolved into [`settings::GlobalSettings`] before any work starts;
//! raw clap structs never reach the engine.

/// `println!` that returns an error instead of panicking when stdout is gone
/// (`tazuna build | head`).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)?;
    }};
}

mod commands;
mod failure;
mod progress;
mod report;
mod settings;
mod telemetry;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};

use crate::commands::{
    apply, build, chart, check, clusters, compare, completions, destroy, genesis, init, plan,
    plugin, schema, state, status, tags, test, verify, version,
};
use crate::settings::{GlobalArgs, GlobalSettings};

/// Bootstrap Kubernetes clusters from one declarative file.
///
/// `tazuna.yaml` lists the layers that turn a bare API server into a usable
/// cluster (CNI, ingress, cert-manager, CRDs and operators, Argo CD or Flux),
/// their order and the cluster they belong to. Each manifest is rendered by a
/// WebAssembly plugin running in a sandbox.
///
/// Start with `tazuna init`, check the file with `tazuna check`, see what it
/// renders with `tazuna build`, what it would change with `tazuna plan`, and
/// bring a cluster to it with `tazuna apply`.
#[derive(Debug, Parser)]
#[command(name = "tazuna", version, max_term_width = 100)]
pub struct Cli {
    #[command(flatten)]
    global: GlobalArgs,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Init(init::Init),
    Check(check::Check),
    Build(build::Build),
    Plan(plan::Plan),
    Apply(apply::Apply),
    Status(status::Status),
    Clusters(clusters::Clusters),
    Compare(compare::Compare),
    #[command(subcommand)]
    State(state::State),
    Destroy(destroy::Destroy),
    Test(test::Test),
    Verify(verify::Verify),
    Tags(tags::Tags),
    #[command(subcommand)]
    Chart(chart::Chart),
    #[command(name = "secret-to-genesissecret")]
    SecretToGenesisSecret(genesis::SecretToGenesisSecret),
    #[command(subcommand)]
    Plugin(plugin::Plugin),
    Schema(schema::Schema),
    Version(version::Version),
    Completions(completions::Completions),
}

/// Parse the command line, run the command, and turn the outcome into an exit
/// code: 0 for success, 1 for a failure (already reported on stderr), 2 for
/// bad usage.
pub fn run() -> ExitCode {
    // While the process has one thread: mounts of Tazuna's own, so scratch
    // can be bounded (see `jail::private_mounts`). Without them it is not.
    let private_mounts = tazuna_engine::host::jail::private_mounts();
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|error| error.exit());
    // `state drift`, `plugin push`: the words of the command, for its span.
    let mut verb = Vec::new();
    let mut level = &matches;
    while let Some((name, below)) = level.subcommand() {
        verb.push(name);
        level = below;
    }
    let verb = verb.join(" ");
    let settings = match GlobalSettings::resolve(&cli.global) {
        Ok(settings) => settings,
        Err(error) => {
            failure::report(&error, settings::stderr_color());
            return ExitCode::from(2);
        }
    };
    let telemetry = settings.init_logging();
    // `spec.inputs` kept in S3 (fetched with the AWS chain's credentials) or
    // on a management cluster (read with its context's).
    tazuna_core::inputs::set_remote_states(Box::new(tazuna_engine::stack::RemoteInputs {
        kubeconfig: settings.connect.kubeconfig.clone(),
    }));
    if let Err(missing) = private_mounts {
        tracing::debug!("{missing}");
    }
    let span = tracing::info_span!(
        target: tazuna_core::TRACE,
        "tazuna",
        otel.name = format!("tazuna {verb}"),
        tazuna.command = verb.as_str(),
        tazuna.file = %settings.file.display(),
        otel.status_code = tracing::field::Empty,
    );
    let entered = span.enter();
    let code = run_command(cli.command, &settings);
    drop(entered);
    drop(span);
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    code
}

fn run_command(command: Command, settings: &GlobalSettings) -> ExitCode {
    let outcome = match command {
        Command::Init(cmd) => cmd.run(settings),
        Command::Check(cmd) => cmd.run(settings),
        Command::Build(cmd) => cmd.run(settings),
        Command::Plan(cmd) => cmd.run(settings),
        Command::Apply(cmd) => cmd.run(settings),
        Command::Status(cmd) => cmd.run(settings),
        Command::Clusters(cmd) => cmd.run(settings),
        Command::Compare(cmd) => cmd.run(settings),
        Command::State(cmd) => cmd.run(settings),
        Command::Destroy(cmd) => cmd.run(settings),
        Command::Test(cmd) => cmd.run(settings),
        Command::Verify(cmd) => cmd.run(settings),
        Command::Tags(cmd) => cmd.run(settings),
        Command::Chart(cmd) => cmd.run(settings),
        Command::SecretToGenesisSecret(cmd) => cmd.run(settings),
        Command::Plugin(cmd) => cmd.run(settings),
        Command::Schema(cmd) => cmd.run(settings),
        Command::Version(cmd) => cmd.run(settings),
        Command::Completions(cmd) => cmd.run::<Cli>(),
    };
    match outcome {
        Ok(code) => {
            let status = if code == ExitCode::SUCCESS {
                "ok"
            } else {
                "error"
            };
            tracing::Span::current().record("otel.status_code", status);
            code
        }
        // The reader went away (`| head`): what it wanted, it got.
        Err(error) if failure::is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::Span::current().record("otel.status_code", "error");
            failure::report(&error, settings.stderr_color);
            ExitCode::FAILURE
        }
    }
}

/// Whether stdout is a terminal (for colour and progress).
fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}
