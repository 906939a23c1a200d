//! Output shared by every command: the formats, colour, and the rendering of
//! objects as YAML streams or JSON lists.
//!
//! Commands describe what happened; this module decides how it looks. Text is
//! readable without colour, and colour is off when `NO_COLOR` is set or the
//! stream is not a terminal.

use std::io::{self, Write};

use serde_json::Value;

use tazuna_engine::render::Rendered;

/// How results are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// For people (YAML for objects).
    #[default]
    Text,
    /// For programs.
    Json,
}

/// Whether to colour text output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Color {
    /// ANSI colour.
    Always,
    /// Plain text.
    Never,
}

impl Color {
    /// Colour for a terminal, unless `NO_COLOR` is set (to anything non-empty).
    pub fn detect(is_terminal: bool) -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        if is_terminal && !no_color {
            Self::Always
        } else {
            Self::Never
        }
    }

    /// `text` in bold red, or plain.
    pub fn error(self, text: &str) -> String {
        self.paint("1;31", text)
    }

    /// `text` in bold yellow, or plain.
    pub fn warning(self, text: &str) -> String {
        self.paint("1;33", text)
    }

    /// `text` in bold cyan, or plain.
    pub fn hint(self, text: &str) -> String {
        self.paint("1;36", text)
    }

    /// `text` in bold green, or plain.
    pub fn ok(self, text: &str) -> String {
        self.paint("1;32", text)
    }

    fn paint(self, code: &str, text: &str) -> String {
        match self {
            Self::Always => format!("\x1b[{code}m{text}\x1b[0m"),
            Self::Never => text.to_owned(),
        }
    }
}

/// Write rendered manifests as one YAML stream: a `---` document per object,
/// preceded by a `# Source:` comment naming the manifest and origin.
pub fn write_yaml(out: &mut impl Write, rendered: &[&Rendered]) -> io::Result<()> {
    for manifest in rendered {
        for object in &manifest.objects {
            writeln!(out, "---")?;
            match &object.origin {
                Some(origin) => writeln!(out, "# Source: {}/{origin}", manifest.manifest)?,
                None => writeln!(out, "# Source: {}", manifest.manifest)?,
            }
            let yaml = serde_yaml::to_string(&object.value).map_err(io::Error::other)?;
            out.write_all(yaml.as_bytes())?;
        }
    }
    Ok(())
}

/// Write rendered manifests as one JSON `List`, objects in order, and a newline.
pub fn write_json(out: &mut impl Write, rendered: &[&Rendered]) -> io::Result<()> {
    let items: Vec<&Value> = rendered
        .iter()
        .flat_map(|m| m.objects.iter().map(|o| &o.value))
        .collect();
    let list = serde_json::json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": items,
    });
    serde_json::to_writer_pretty(&mut *out, &list).map_err(io::Error::other)?;
    writeln!(out)
}

/// Rows as columns padded to their widest cell, the first row a header.
pub fn table<const N: usize>(rows: &[[String; N]]) -> String {
    let widths: Vec<usize> = (0..N)
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    rows.iter()
        .map(|row| {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell:<width$}"))
                .collect();
            cells.join("  ").trim_end().to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}
