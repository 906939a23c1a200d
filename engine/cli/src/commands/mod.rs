//! One module per verb. Each turns its flags into typed options, makes one
//! call to the engine's [`Stack`] and prints what it returns.

pub mod apply;
pub mod build;
pub mod check;
pub mod completions;
pub mod destroy;
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

/// Open the file the settings name as a stack: validated, every manifest's
/// `type` with a plugin. With [`Writes::Discard`], nothing the run does is
/// written to `tazuna.lock`.
pub fn open(settings: &GlobalSettings, writes: Writes) -> anyhow::Result<Stack> {
    let options = StackOptions {
        file: settings.file.clone(),
        environment: settings.environment.clone(),
        tags: settings.tags.clone(),
        host: settings.host.clone(),
        connect: settings.connect.clone(),
    };
    Ok(Stack::open(options, writes, notices())?)
}

/// What the engine tells people along the way goes to stderr.
pub fn notices() -> Notices {
    Arc::new(|text: &str| eprintln!("{text}"))
}

/// The async runtime for commands that talk to a cluster.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}
