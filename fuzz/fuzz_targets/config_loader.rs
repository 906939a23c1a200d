//! The config loader on any bytes: it must answer with a config or an error,
//! within the bounds docs/security.md lists, and never panic, hang or run out
//! of memory (libFuzzer's `-rss_limit_mb` and `-timeout` catch the last two).
//!
//! The input is the root `tazuna.yaml`; the same bytes are also `included.yaml`
//! beside it, so an input that includes that file exercises includes too.

#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tazuna_core::config::{self, LoadOptions};

fn project() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("tazuna-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("fuzz project directory");
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let dir = project();
    let root = dir.join("tazuna.yaml");
    std::fs::write(&root, data).expect("write tazuna.yaml");
    std::fs::write(dir.join("included.yaml"), data).expect("write included.yaml");
    let options = LoadOptions::new(semver::Version::new(0, 1, 0));
    if let Err(error) = config::load(&root, &options) {
        // Rendering the error builds its excerpt, which must be bounded too.
        let shown = error.render();
        assert!(
            shown.lines().all(|line| line.chars().count() <= 400),
            "an error line longer than 400 characters: {shown}"
        );
    }
});
