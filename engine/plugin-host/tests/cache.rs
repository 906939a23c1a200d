//! The compile cache: a warm run compiles nothing, and a cache directory that
//! cannot be written falls back to compiling in memory.

use std::os::unix::fs::PermissionsExt;

use tazuna_plugin_host::host::{Grants, HostSettings, PluginHost, Provenance};
use tazuna_plugin_host::plugins::BUILTINS;

fn host(cache: &std::path::Path) -> PluginHost {
    PluginHost::new(HostSettings {
        cache_dir: Some(cache.to_owned()),
        ..HostSettings::default()
    })
    .unwrap()
}

#[test]
fn a_second_process_loads_compiled_components_from_the_cache() {
    let cache = tempfile::tempdir().unwrap();
    let builtin = BUILTINS[0];

    let first = host(cache.path())
        .load_source(builtin.name, builtin.component, Grants::Requested)
        .unwrap();
    assert_eq!(first.provenance(), Provenance::Compiled);

    // A new host stands in for the next run: same engine settings, new engine.
    let second = host(cache.path())
        .load_source(builtin.name, builtin.component, Grants::Requested)
        .unwrap();
    assert_eq!(second.provenance(), Provenance::Cached);
    assert_eq!(second.info().name, "manifests");

    let entries: Vec<_> = walk(cache.path());
    assert_eq!(entries.len(), 1, "one compiled file: {entries:?}");
    assert!(
        entries[0].ends_with(format!("{}.cwasm", first.digest())),
        "keyed by the component digest: {entries:?}"
    );
}

#[test]
fn a_read_only_cache_directory_falls_back_to_memory() {
    if nix_is_root() {
        // root ignores directory permissions; point the cache at a file
        // instead, which no one can create a directory under.
        let file = tempfile::NamedTempFile::new().unwrap();
        let plugin = host(file.path())
            .load_source(BUILTINS[0].name, BUILTINS[0].component, Grants::Requested)
            .unwrap();
        assert_eq!(plugin.provenance(), Provenance::CompiledUncached);
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    std::fs::set_permissions(cache.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    let plugin = host(cache.path())
        .load_source(BUILTINS[0].name, BUILTINS[0].component, Grants::Requested)
        .unwrap();
    assert_eq!(plugin.provenance(), Provenance::CompiledUncached);
}

fn nix_is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.starts_with(b"0"))
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
