//! Checks that the built-in plugins were built before the engine embeds them.
//!
//! The components are built by `cargo xtask build-plugins` (one cargo invocation
//! for the whole wasm32-wasip2 plugins workspace); a nested cargo here would
//! deadlock on the build directory lock and hide the wasm build's output.

use std::path::PathBuf;

const BUILTINS: &[&str] = &[
    "manifests",
    "kustomize",
    "helm",
    "helmfile",
    "oras",
    "genesissecret",
    "envfile",
    "onepassword",
];

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/plugins");
    let mut missing = Vec::new();
    for name in BUILTINS {
        let path = root.join(format!("{name}.wasm"));
        println!("cargo:rerun-if-changed={}", path.display());
        if !path.is_file() {
            missing.push(path);
        }
    }
    if !missing.is_empty() {
        let list: Vec<String> = missing.iter().map(|p| p.display().to_string()).collect();
        panic!(
            "\n\nthe built-in plugins are not built yet (missing: {}).\n\
             hint: run `cargo xtask build-plugins` first (it needs `rustup target add wasm32-wasip2`).\n\n",
            list.join(", ")
        );
    }
}
