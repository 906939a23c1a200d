//! `tazuna plugin new`: a new plugin crate from the SDK's template (`sdk/template/`).
//!
//! The template is embedded, so the command works from the binary alone. Placeholders are
//! `{{name}}` (the plugin name), `{{crate}}`, `{{lib}}` (the `.wasm` file's stem),
//! `{{description}}`, `{{kind}}` and `{{sdk}}` (the `tazuna-sdk` dependency).

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

/// What to make.
#[derive(Debug)]
pub struct NewPlugin {
    /// The directory to create; its name is the plugin's name.
    pub dir: PathBuf,
    /// A secret resolver rather than a source plugin.
    pub resolver: bool,
    /// A local checkout's `sdk/` to depend on, instead of Tazuna's repository.
    pub sdk_path: Option<PathBuf>,
}

/// The files written, relative to the new directory.
pub fn create(plan: &NewPlugin) -> anyhow::Result<Vec<&'static str>> {
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
        anyhow::bail!(
            "`{}`: the directory's name is the plugin's name, and `{name}` is not one\nhint: use lowercase letters, digits and `-`, starting with a letter (it becomes the manifest or provider `type`)",
            plan.dir.display()
        );
    }
    if std::fs::read_dir(&plan.dir).is_ok_and(|mut entries| entries.next().is_some()) {
        anyhow::bail!(
            "`{}` already exists and is not empty\nhint: pick a new directory; nothing was written",
            plan.dir.display()
        );
    }
    let sdk = match &plan.sdk_path {
        Some(path) => {
            let path = std::path::absolute(path)?;
            if !path.join("Cargo.toml").is_file() {
                anyhow::bail!(
                    "`{}` has no Cargo.toml\nhint: `--sdk-path` names the `sdk/` directory of a Tazuna checkout",
                    path.display()
                );
            }
            format!("{{ path = {} }}", toml_string(&path.to_string_lossy()))
        }
        None => format!(
            "{{ git = {}, tag = \"v{}\" }}",
            toml_string(env!("CARGO_PKG_REPOSITORY")),
            env!("CARGO_PKG_VERSION")
        ),
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
    Ok(files.iter().map(|(file, _)| *file).collect())
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
                let text = std::fs::read_to_string(plan.dir.join(file)).unwrap();
                assert!(!text.contains("{{"), "{file}: {text}");
            }
        }
        let manifest = std::fs::read_to_string(dir.path().join("vault/Cargo.toml")).unwrap();
        assert!(
            manifest.contains("name = \"tazuna-plugin-vault\""),
            "{manifest}"
        );
        assert!(manifest.contains("tazuna-sdk = { git = \""), "{manifest}");
        assert_eq!(toml_string("a\"b\\c"), r#""a\"b\\c""#);
    }
}
