//! One module per verb. Each turns its flags into typed options, makes one
//! call to the engine's [`Stack`] and prints what it returns.

pub mod apply;
pub mod build;
pub mod chart;
pub mod check;
pub mod clusters;
pub mod compare;
pub mod completions;
pub mod destroy;
pub mod fleet;
pub mod genesis;
pub mod init;
pub mod plan;
pub mod plugin;
pub mod scaffold;
pub mod schema;
pub mod state;
pub mod status;
pub mod tags;
pub mod test;
pub mod verify;
pub mod version;

use std::sync::Arc;

use tazuna_engine::stack::{Notices, Stack, StackOptions, Writes};

use crate::settings::GlobalSettings;

/// How renders reach plugins and the network (`apply`, `build`, `plan`).
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct SourceArgs {
    /// Use no cache: plugins are pulled and compiled afresh, and nothing is
    /// written to Tazuna's cache directory.
    #[arg(long)]
    no_cache: bool,

    /// Reach no network to render: OCI plugins come from the cache by their
    /// pins, and the tools plugins run get no network, so a chart or
    /// artifact that is not local fails its manifest.
    #[arg(long)]
    offline: bool,
}

impl SourceArgs {
    /// `settings` with these flags applied.
    pub fn settings(&self, settings: &GlobalSettings) -> GlobalSettings {
        let mut settings = settings.clone();
        if self.no_cache {
            settings.host.cache_dir = None;
        }
        settings.host.offline |= self.offline;
        settings
    }
}

/// Open the file the settings name as a stack: validated, every manifest's
/// `type` with a plugin. With [`Writes::Discard`], nothing the run does is
/// written to `tazuna.lock`.
pub fn open(settings: &GlobalSettings, writes: Writes) -> anyhow::Result<Stack> {
    let stack = open_quietly(settings, writes)?;
    let notices = notices(settings);
    for warning in &stack.config().warnings {
        notices(&crate::failure::paint(
            &crate::failure::with_hints(
                "warning",
                &format_args!("{}\n  --> {}", warning.message, warning.at.location),
                [&warning.hint],
            ),
            settings.stderr_color,
        ));
    }
    // Which state each value of `.Inputs` came from (never a value).
    for input in &stack.config().spec.inputs {
        if input.used.is_empty() {
            continue;
        }
        let outputs: Vec<String> = input
            .used
            .iter()
            .map(|name| match input.outputs.get(name) {
                Some(output) if output.sensitive => {
                    format!(
                        "`{name}` (sensitive: `ref+{}:{name}`, resolved only in a Secret)",
                        input.name
                    )
                }
                _ => format!("`{name}`"),
            })
            .collect();
        let from = match input.location {
            tazuna_core::inputs::Location::File(_) | tazuna_core::inputs::Location::S3(_) => {
                "state"
            }
            _ => "from",
        };
        notices(&format!(
            "note: input `{}` ({from} `{}`{}): {}",
            input.name,
            input.location,
            input
                .serial
                .map(|serial| format!(", serial {serial}"))
                .unwrap_or_default(),
            outputs.join(", ")
        ));
    }
    Ok(stack)
}

/// [`open`] without printing the file's warnings (`tazuna check` reports
/// them as errors).
pub fn open_quietly(settings: &GlobalSettings, writes: Writes) -> anyhow::Result<Stack> {
    if !settings.is_single() {
        return Err(crate::failure::advised(
            "this command runs on one cluster, and the flags select several",
            "select one with `-e <environment>` or `--cluster <name>`; `apply`, `plan`, `status`, `state drift` and `destroy` run on several",
        ));
    }
    let options = StackOptions {
        file: settings.file.clone(),
        environment: settings.environment.clone(),
        cluster: settings.cluster.clone(),
        discovered: settings.discovered.clone(),
        tags: settings.tags.clone(),
        host: settings.host.clone(),
        connect: settings.connect.clone(),
        lock_file: settings.lock_file.clone(),
    };
    Ok(Stack::open(options, writes, notices(settings))?)
}

/// What the engine tells people along the way goes to stderr, prefixed by
/// the cluster in a fleet run.
pub fn notices(settings: &GlobalSettings) -> Notices {
    match settings.label.clone() {
        None => Arc::new(|text: &str| eprintln!("{text}")),
        Some(label) => Arc::new(move |text: &str| {
            for line in text.lines() {
                eprintln!("[{label}] {line}");
            }
        }),
    }
}

/// The async runtime for commands that talk to a cluster.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}
