//! `tazuna plugin new`: a new plugin crate from the SDK's template (`sdk/template/`).
//!
//! The template is embedded, so the command works from the binary alone. Placeholders are
//! `{{name}}` (the plugin name), `{{crate}}`, `{{lib}}` (the `.wasm` file's stem),
//! `{{description}}`, `{{kind}}`, `{{sdk}}` (the `tazuna-sdk` dependency), `{{patch}}`
//! (what stands in for it until it is on crates.io) and `{{vendored}}` (the README's word on
//! that).
//!
//! The SDK itself is embedded too ([`VENDORED_SDK`]), from the very files `sdk/` builds from, and
//! written to `vendor/tazuna-sdk/` of the new crate: the crate depends on `tazuna-sdk` by version,
//! as it will once the SDK is published, and `[patch.crates-io]` points that at the copy. A
//! plugin author therefore needs only this binary, Rust and crates.io, and the SDK a plugin
//! builds against is the one this Tazuna speaks.

use std::path::{Path, PathBuf};

/// The crate's manifest.
const CARGO_TOML: &str = include_str!("../../../../sdk/template/Cargo.toml.tmpl");
/// Its `.gitignore`.
const GITIGNORE: &str = include_str!("../../../../sdk/template/gitignore.tmpl");
/// Its README.
const README: &str = include_str!("../../../../sdk/template/README.md.tmpl");
/// `src/lib.rs` of a source plugin.
const SOURCE_LIB: &str = include_str!("../../../../sdk/template/source/lib.rs.tmpl");
/// `src/lib.rs` of a secret resolver.
const RESOLVER_LIB: &str = include_str!("../../../../sdk/template/resolver/lib.rs.tmpl");

/// Where the SDK is vendored in a new crate.
const VENDOR_DIR: &str = "vendor/tazuna-sdk";

/// The SDK's own manifest, which inherits from the workspace's ([`WORKSPACE_MANIFEST`]).
const SDK_MANIFEST: &str = include_str!("../../../../sdk/Cargo.toml");
/// The workspace manifest, for what the SDK inherits.
const WORKSPACE_MANIFEST: &str = include_str!("../../../../Cargo.toml");

/// Where the SDK's one dependency of its own, `tazuna-gotmpl`, goes in the vendored SDK: the
/// path its manifest names (`path = "gotmpl"`), so the copy resolves it as the checkout does.
const VENDOR_GOTMPL_DIR: &str = "gotmpl";
/// `tazuna-gotmpl`'s manifest.
const GOTMPL_MANIFEST: &str = include_str!("../../../../sdk/gotmpl/Cargo.toml");
/// `tazuna-gotmpl`'s files besides its manifest.
const VENDORED_GOTMPL: [(&str, &str); 1] = [(
    "src/lib.rs",
    include_str!("../../../../sdk/gotmpl/src/lib.rs"),
)];

/// The SDK's files besides its manifest, as `cargo package -p tazuna-sdk` packages them (a test
/// checks that every file of `sdk/src` is here).
const VENDORED_SDK: [(&str, &str); 16] = [
    ("README.md", include_str!("../../../../sdk/README.md")),
    (
        "wit/plugin.wit",
        // The file `sdk/wit` links to, read directly: a checkout without
        // symlinks (Git for Windows' default) has a text file there.
        include_str!("../../../../wit/plugin.wit"),
    ),
    ("src/age.rs", include_str!("../../../../sdk/src/age.rs")),
    (
        "src/artifacts.rs",
        include_str!("../../../../sdk/src/artifacts.rs"),
    ),
    (
        "src/clusters.rs",
        include_str!("../../../../sdk/src/clusters.rs"),
    ),
    (
        "src/config.rs",
        include_str!("../../../../sdk/src/config.rs"),
    ),
    ("src/exec.rs", include_str!("../../../../sdk/src/exec.rs")),
    ("src/info.rs", include_str!("../../../../sdk/src/info.rs")),
    ("src/lib.rs", include_str!("../../../../sdk/src/lib.rs")),
    ("src/log.rs", include_str!("../../../../sdk/src/log.rs")),
    (
        "src/outbound.rs",
        include_str!("../../../../sdk/src/outbound.rs"),
    ),
    (
        "src/secret.rs",
        include_str!("../../../../sdk/src/secret.rs"),
    ),
    (
        "src/source.rs",
        include_str!("../../../../sdk/src/source.rs"),
    ),
    ("src/tools.rs", include_str!("../../../../sdk/src/tools.rs")),
    (
        "src/traits.rs",
        include_str!("../../../../sdk/src/traits.rs"),
    ),
    ("src/types.rs", include_str!("../../../../sdk/src/types.rs")),
];

/// What the README says about the vendored SDK.
const VENDORED_NOTE: &str = "\
`vendor/tazuna-sdk/` is the SDK this version of Tazuna speaks, copied by `tazuna plugin new`
until `tazuna-sdk` is on crates.io; `[patch.crates-io]` in `Cargo.toml` says so. Once the SDK is
published, delete that section and `vendor/`.

";

/// The `[patch.crates-io]` of a crate with the vendored SDK.
const PATCH: &str = "\
# `tazuna plugin new` copied the SDK into vendor/tazuna-sdk until tazuna-sdk is on crates.io.
# Once it is, delete this section and vendor/, and `cargo update -p tazuna-sdk`.
[patch.crates-io]
tazuna-sdk = { path = \"vendor/tazuna-sdk\" }

";

/// What to make.
#[derive(Debug)]
pub struct NewPlugin {
    /// The directory to create; its name is the plugin's name.
    pub dir: PathBuf,
    /// A secret resolver rather than a source plugin.
    pub resolver: bool,
    /// A local checkout's `sdk/` to depend on, instead of the SDK embedded in the binary.
    pub sdk_path: Option<PathBuf>,
}

/// The files written, relative to the new directory; the vendored SDK is one entry,
/// `vendor/tazuna-sdk/`.
pub fn create(plan: &NewPlugin) -> anyhow::Result<Vec<String>> {
    let name = plan
        .dir
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or_default();
    let valid = name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !valid {
        return Err(crate::failure::advised(
            format!(
                "`{}`: the directory's name is the plugin's name, and `{name}` is not one",
                plan.dir.display()
            ),
            "use lowercase letters, digits and `-`, starting with a letter (it becomes the manifest or provider `type`)",
        ));
    }
    if std::fs::read_dir(&plan.dir).is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(crate::failure::advised(
            format!("`{}` already exists and is not empty", plan.dir.display()),
            "pick a new directory; nothing was written",
        ));
    }
    let (sdk, patch) = match &plan.sdk_path {
        Some(path) => {
            let path = std::path::absolute(path)?;
            if !path.join("Cargo.toml").is_file() {
                return Err(crate::failure::advised(
                    format!("`{}` has no Cargo.toml", path.display()),
                    "`--sdk-path` names the `sdk/` directory of a Tazuna checkout",
                ));
            }
            (
                format!("{{ path = {} }}", toml_string(&path.to_string_lossy())),
                "",
            )
        }
        None => (toml_string(env!("CARGO_PKG_VERSION")), PATCH),
    };
    // Before anything is written: an embedded SDK that cannot stand alone is a bug of this build.
    let vendored_manifest = match plan.sdk_path {
        Some(_) => None,
        None => Some((
            standalone_manifest("tazuna-sdk", SDK_MANIFEST)?,
            standalone_manifest("tazuna-gotmpl", GOTMPL_MANIFEST)?,
        )),
    };
    let crate_name = format!("tazuna-plugin-{name}");
    let (kind, description, lib) = if plan.resolver {
        (
            "secret resolver",
            format!("`{name}`: a Tazuna secret resolver."),
            RESOLVER_LIB,
        )
    } else {
        (
            "source plugin",
            format!("`{name}`: a Tazuna source plugin."),
            SOURCE_LIB,
        )
    };
    let fill = |template: &str| {
        template
            .replace("{{name}}", name)
            .replace("{{crate}}", &crate_name)
            .replace("{{lib}}", &crate_name.replace('-', "_"))
            .replace("{{description}}", &description)
            .replace("{{kind}}", kind)
            .replace("{{sdk}}", &sdk)
            .replace("{{patch}}", patch)
            .replace(
                "{{vendored}}",
                if patch.is_empty() { "" } else { VENDORED_NOTE },
            )
    };
    let files: [(&'static str, &str); 4] = [
        ("Cargo.toml", CARGO_TOML),
        (".gitignore", GITIGNORE),
        ("README.md", README),
        ("src/lib.rs", lib),
    ];
    for (file, template) in files {
        write(&plan.dir.join(file), &fill(template))?;
    }
    let mut written: Vec<String> = files.iter().map(|(file, _)| (*file).to_owned()).collect();
    if let Some((manifest, gotmpl_manifest)) = vendored_manifest {
        let vendor = plan.dir.join(VENDOR_DIR);
        write(&vendor.join("Cargo.toml"), &manifest)?;
        for (file, text) in VENDORED_SDK {
            write(&vendor.join(file), text)?;
        }
        let gotmpl = vendor.join(VENDOR_GOTMPL_DIR);
        write(&gotmpl.join("Cargo.toml"), &gotmpl_manifest)?;
        for (file, text) in VENDORED_GOTMPL {
            write(&gotmpl.join(file), text)?;
        }
        written.push(format!("{VENDOR_DIR}/"));
    }
    Ok(written)
}

/// The manifest `text` of the workspace's crate `name` (the SDK, or the crate it depends on)
/// with what it inherits from the workspace written out, so that it builds on its own: what
/// `cargo package` would publish. Comments are left out; they speak of the checkout.
fn standalone_manifest(name: &str, text: &str) -> anyhow::Result<String> {
    let inherited = |table: &str, key: &str| -> anyhow::Result<String> {
        let mut current = "";
        for line in WORKSPACE_MANIFEST.lines() {
            let line = line.trim();
            if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                current = header;
            } else if current == table
                && let Some((name, value)) = line.split_once('=')
                && name.trim() == key
            {
                return Ok(value.trim().to_owned());
            }
        }
        anyhow::bail!(
            "the embedded {name} inherits `{key}` from `[{table}]`, and the workspace manifest has none (a bug in this build of tazuna)"
        )
    };
    let mut manifest = format!(
        "# {name} {version}, written by `tazuna plugin new` (tazuna {version}).\n",
        version = env!("CARGO_PKG_VERSION")
    );
    let mut section = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(header) = trimmed.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = header.to_owned();
            // Workspace lints are the checkout's business, not a plugin author's.
            if section != "lints" {
                manifest.push_str(line);
                manifest.push('\n');
            }
            continue;
        }
        if section == "lints" || trimmed.starts_with('#') {
            continue;
        }
        let table = match section.as_str() {
            "package" => "workspace.package",
            _ => "workspace.dependencies",
        };
        let key = trimmed
            .strip_suffix(".workspace = true")
            .or_else(|| trimmed.strip_suffix(" = { workspace = true }"));
        match key {
            Some(key) => {
                manifest.push_str(&format!("{key} = {}\n", inherited(table, key)?));
            }
            None if trimmed.contains("workspace") => anyhow::bail!(
                "the embedded {name}'s manifest line `{trimmed}` cannot be written out (a bug in this build of tazuna)"
            ),
            None => {
                manifest.push_str(line);
                manifest.push('\n');
            }
        }
    }
    Ok(manifest)
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create `{}`: {e}", dir.display()))?;
    }
    std::fs::write(path, text)
        .map_err(|e| anyhow::anyhow!("cannot write `{}`: {e}", path.display()))
}

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    let mut quoted = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            c if c.is_control() => quoted.push_str(&format!("\\u{:04X}", c as u32)),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_cannot_be_a_type_and_used_directories_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for bad in ["Vault", "1pass", "my_plugin"] {
            let plan = NewPlugin {
                dir: dir.path().join(bad),
                resolver: false,
                sdk_path: None,
            };
            let error = create(&plan).unwrap_err().to_string();
            assert!(error.contains("is not one"), "{bad}: {error}");
        }
        std::fs::create_dir(dir.path().join("taken")).unwrap();
        std::fs::write(dir.path().join("taken/keep"), "").unwrap();
        let plan = NewPlugin {
            dir: dir.path().join("taken"),
            resolver: true,
            sdk_path: None,
        };
        assert!(create(&plan).unwrap_err().to_string().contains("not empty"));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("taken/keep")).unwrap(),
            ""
        );
    }

    #[test]
    fn every_placeholder_is_filled() {
        let dir = tempfile::tempdir().unwrap();
        for resolver in [false, true] {
            let plan = NewPlugin {
                dir: dir
                    .path()
                    .join(if resolver { "vault" } else { "configmap" }),
                resolver,
                sdk_path: None,
            };
            for file in create(&plan).unwrap() {
                if file.ends_with('/') {
                    continue;
                }
                let text = std::fs::read_to_string(plan.dir.join(&file)).unwrap();
                assert!(!text.contains("{{"), "{file}: {text}");
            }
        }
        let manifest = std::fs::read_to_string(dir.path().join("vault/Cargo.toml")).unwrap();
        assert!(
            manifest.contains("name = \"tazuna-plugin-vault\""),
            "{manifest}"
        );
        let version = env!("CARGO_PKG_VERSION");
        assert!(
            manifest.contains(&format!("\ntazuna-sdk = \"{version}\"\n")),
            "{manifest}"
        );
        assert!(
            manifest.contains("[patch.crates-io]\ntazuna-sdk = { path = \"vendor/tazuna-sdk\" }\n"),
            "{manifest}"
        );
        assert_eq!(toml_string("a\"b\\c"), r#""a\"b\\c""#);
    }

    #[test]
    fn the_sdk_path_replaces_the_vendored_sdk() {
        let dir = tempfile::tempdir().unwrap();
        let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sdk");
        let plan = NewPlugin {
            dir: dir.path().join("local"),
            resolver: false,
            sdk_path: Some(sdk.clone()),
        };
        let files = create(&plan).unwrap();
        assert!(!files.iter().any(|f| f.starts_with("vendor")), "{files:?}");
        assert!(!plan.dir.join("vendor").exists());
        let manifest = std::fs::read_to_string(plan.dir.join("Cargo.toml")).unwrap();
        let path = std::path::absolute(&sdk).unwrap();
        assert!(
            manifest.contains(&format!(
                "tazuna-sdk = {{ path = {} }}",
                toml_string(&path.to_string_lossy())
            )),
            "{manifest}"
        );
        assert!(!manifest.contains("[patch"), "{manifest}");
    }

    /// A file added to `sdk/src` must be embedded too, or the vendored SDK does not build.
    #[test]
    fn the_vendored_sdk_is_every_file_the_sdk_packages() {
        let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sdk");
        let mut on_disk: Vec<String> = std::fs::read_dir(sdk.join("src"))
            .unwrap()
            .map(|entry| format!("src/{}", entry.unwrap().file_name().to_string_lossy()))
            .chain(
                // What `include = ["wit/*.wit"]` packages: not `wit/released/`.
                std::fs::read_dir(sdk.join("wit"))
                    .unwrap()
                    .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                    .filter(|name| name.ends_with(".wit"))
                    .map(|name| format!("wit/{name}")),
            )
            .chain(["README.md".to_owned()])
            .collect();
        on_disk.sort();
        let mut embedded: Vec<String> = VENDORED_SDK.iter().map(|(f, _)| (*f).to_owned()).collect();
        embedded.sort();
        assert_eq!(embedded, on_disk, "update VENDORED_SDK in scaffold.rs");
        for (file, text) in VENDORED_SDK {
            assert_eq!(
                std::fs::read_to_string(sdk.join(file)).unwrap(),
                text,
                "{file}"
            );
        }
        // The WIT is the workspace's one contract, not a copy of it.
        assert_eq!(
            std::fs::read_to_string(sdk.join("../wit/plugin.wit")).unwrap(),
            VENDORED_SDK[1].1
        );
        // And the crate the SDK depends on, whole.
        let gotmpl: Vec<String> = std::fs::read_dir(sdk.join("gotmpl/src"))
            .unwrap()
            .map(|entry| format!("src/{}", entry.unwrap().file_name().to_string_lossy()))
            .collect();
        let embedded: Vec<&str> = VENDORED_GOTMPL.iter().map(|(f, _)| *f).collect();
        assert_eq!(embedded, gotmpl, "update VENDORED_GOTMPL in scaffold.rs");
        for (file, text) in VENDORED_GOTMPL {
            assert_eq!(
                std::fs::read_to_string(sdk.join("gotmpl").join(file)).unwrap(),
                text
            );
        }
    }

    /// The vendored SDK's manifest stands alone and asks for the workspace's versions.
    #[test]
    fn the_vendored_sdk_manifest_writes_out_what_it_inherits() {
        let manifest = standalone_manifest("tazuna-sdk", SDK_MANIFEST).unwrap();
        let gotmpl = standalone_manifest("tazuna-gotmpl", GOTMPL_MANIFEST).unwrap();
        assert!(!gotmpl.contains("workspace"), "{gotmpl}");
        assert!(
            manifest.contains("tazuna-gotmpl = { version = \"0.1.0\", path = \"gotmpl\" }"),
            "the SDK finds the copy of tazuna-gotmpl beside it: {manifest}"
        );
        assert!(!manifest.contains("workspace"), "{manifest}");
        assert!(!manifest.contains("[lints]"), "{manifest}");
        let version = env!("CARGO_PKG_VERSION");
        assert!(
            manifest.contains(&format!("\nversion = \"{version}\"\n")),
            "{manifest}"
        );
        assert!(manifest.contains("\nedition = \"2024\"\n"), "{manifest}");
        // Every dependency, with the workspace's own requirement.
        let dependencies = SDK_MANIFEST
            .split("[dependencies]")
            .nth(1)
            .unwrap()
            .split("\n[")
            .next()
            .unwrap();
        let mut count = 0;
        for line in dependencies.lines().filter(|l| l.contains("workspace")) {
            let name = line.split(['.', ' ']).next().unwrap();
            let workspace = WORKSPACE_MANIFEST
                .lines()
                .find(|l| l.starts_with(&format!("{name} = ")))
                .unwrap_or_else(|| panic!("the workspace declares `{name}`"));
            assert!(
                manifest.contains(&format!("\n{workspace}\n")),
                "{name}: {manifest}"
            );
            count += 1;
        }
        assert!(count >= 5, "{dependencies}");
        assert!(manifest.contains("\nwit-bindgen = \"0."), "{manifest}");
    }
}
