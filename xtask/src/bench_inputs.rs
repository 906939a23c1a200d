//! `cargo xtask bench-inputs`: how long `tazuna check` takes, and how much
//! memory it peaks at, on inputs built to exhaust memory or time (the bounds
//! cases of docs/security.md). Each must fail fast with a clear error, or
//! pass fast where it is valid; this reports what each cost, as a Markdown
//! table, with the release binary. Peak RSS from `/usr/bin/time`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::Context;
use clap::Args;

/// Measure `tazuna check` on hostile inputs.
#[derive(Debug, Args)]
pub struct BenchInputs {}

/// One hostile input: a name, and a project written into a directory.
struct Case {
    name: &'static str,
    what: &'static str,
    write: fn(&Path) -> anyhow::Result<()>,
}

const HEADER: &str = "apiVersion: tazuna.pepabo.com/v1\nkind: Tazuna\nspec:\n";

const CASES: &[Case] = &[
    Case {
        name: "nested-block-sequences",
        what: "40 KB of `- - - …`, 20,000 levels",
        write: |dir| {
            write(
                dir,
                &format!("{HEADER}  manifests:\n    {}x\n", "- ".repeat(20_000)),
            )
        },
    },
    Case {
        name: "nested-flow",
        what: "20,000 `[`",
        write: |dir| {
            write(
                dir,
                &format!("{HEADER}  manifests: {}\n", "[".repeat(20_000)),
            )
        },
    },
    Case {
        name: "alias-bomb",
        what: "9 levels of 10 aliases each (10⁹ nodes once expanded)",
        write: |dir| {
            let mut text =
                format!("{HEADER}  values:\n    a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
            for level in 1..10 {
                let previous = format!("*a{}", level - 1);
                let list = [previous.as_str(); 10].join(", ");
                let _ = writeln!(text, "    a{level}: &a{level} [{list}]");
            }
            text.push_str("  manifests: []\n");
            write(dir, &text)
        },
    },
    Case {
        name: "dense-dependsOn-1000",
        what: "1,000 manifests, each depending on all earlier ones (499,500 edges)",
        write: |dir| dense(dir, 1_000, usize::MAX),
    },
    Case {
        name: "wide-dependsOn-10000",
        what: "10,000 manifests, each depending on the 20 before it",
        write: |dir| dense(dir, 10_000, 20),
    },
    Case {
        name: "include-dev-zero",
        what: "an include that is a link to /dev/zero",
        write: |dir| {
            std::os::unix::fs::symlink("/dev/zero", dir.join("zero.yaml"))?;
            write(
                dir,
                &format!("{HEADER}  manifests:\n    - includes:\n        - path: zero.yaml\n"),
            )
        },
    },
    Case {
        name: "oversize-file",
        what: "a 6 MiB file",
        write: |dir| {
            let comment = format!("# {}\n", "x".repeat(1022));
            write(
                dir,
                &format!("{HEADER}{}  manifests: []\n", comment.repeat(6 * 1024)),
            )
        },
    },
    Case {
        name: "long-line-error",
        what: "an error on a 3 MiB line",
        write: |dir| {
            write(
                dir,
                &format!(
                    "{HEADER}  manifests: [{{name: \"{}\", type: 7}}]\n",
                    "n".repeat(3 << 20)
                ),
            )
        },
    },
];

fn write(dir: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(dir.join("tazuna.yaml"), text).context("writing tazuna.yaml")
}

/// `count` manifests, each depending on the `window` before it.
fn dense(dir: &Path, count: usize, window: usize) -> anyhow::Result<()> {
    std::fs::write(dir.join("empty.yaml"), "")?;
    let mut text = format!("{HEADER}  manifests:\n");
    for index in 0..count {
        let _ = write!(
            text,
            "    - {{name: m{index}, type: manifests, path: empty.yaml, dependsOn: ["
        );
        let first = index.saturating_sub(window);
        let names: Vec<String> = (first..index).map(|d| format!("m{d}")).collect();
        text.push_str(&names.join(", "));
        text.push_str("]}\n");
    }
    write(dir, &text)
}

impl BenchInputs {
    /// Run every case and print the table.
    pub fn run(self) -> anyhow::Result<()> {
        let root = crate::shell::root();
        let tazuna = crate::plugins::release_cli(&root, None)?;
        let work = std::env::temp_dir().join(format!("tazuna-bench-inputs-{}", std::process::id()));
        let mut table = String::from(
            "| input | what | exit | time | peak RSS | first line of the answer |\n|---|---|---|---|---|---|\n",
        );
        for case in CASES {
            let dir = work.join(case.name);
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir)?;
            (case.write)(&dir)?;
            let size = std::fs::metadata(dir.join("tazuna.yaml"))
                .map(|m| m.len())
                .unwrap_or(0);
            let (code, millis, kb, said) = measure(&tazuna, &dir)?;
            let said: String = said.chars().take(110).collect();
            let _ = writeln!(
                table,
                "| `{}` ({} KiB) | {} | {code} | {millis} ms | {:.1} MiB | {} |",
                case.name,
                size / 1024,
                case.what,
                kb as f64 / 1024.0,
                said.replace('|', "\\|"),
            );
        }
        let _ = std::fs::remove_dir_all(&work);
        println!("{table}");
        Ok(())
    }
}

/// Exit code, wall time, peak RSS in KiB and the first line of stderr of
/// `tazuna check` in `dir`.
fn measure(tazuna: &PathBuf, dir: &Path) -> anyhow::Result<(i32, u128, u64, String)> {
    let started = Instant::now();
    let out = Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg(tazuna)
        .arg("check")
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .output()
        .context("running /usr/bin/time (Debian package `time`)")?;
    let millis = started.elapsed().as_millis();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut lines: Vec<&str> = stderr.lines().collect();
    let kb = lines
        .pop()
        .and_then(|line| line.trim().parse().ok())
        .context("no RSS from /usr/bin/time")?;
    let code = lines
        .iter()
        .rev()
        .find_map(|line| line.strip_prefix("Command exited with non-zero status "))
        .and_then(|code| code.trim().parse().ok())
        .unwrap_or(0);
    let first = lines
        .iter()
        .find(|line| !line.starts_with("Command exited"))
        .map_or("(nothing)", |line| line.trim());
    Ok((code, millis, kb, first.to_owned()))
}
