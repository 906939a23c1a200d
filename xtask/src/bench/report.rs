//! The benchmark's results file and its report: the Markdown that goes
//! between the markers of `docs/benchmarks.md`, and `docs/benchmarks.svg`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::measure::{Sample, stats};
use super::workloads::thousands;
use super::{Record, Tool};

const BEGIN: &str = "<!-- cargo xtask bench: begin (generated; edit xtask/src/bench/report.rs) -->";
const END: &str = "<!-- cargo xtask bench: end -->";

/// Facts about the run.
#[derive(Clone, Debug, Default)]
pub struct Meta {
    pub date: String,
    pub commit: String,
    pub rounds: usize,
    pub cores: usize,
    pub floor_concurrency: usize,
    pub floor_calibration: Vec<(usize, f64)>,
    pub profile: Option<Profile>,
}

/// Tazuna's instruction profile on one workload.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    pub workload: String,
    pub total: u64,
    /// Self cost and function, most expensive first.
    pub top: Vec<(u64, String)>,
    /// Self cost by crate (the first path segment), most expensive first.
    pub crates: Vec<(u64, String)>,
}

impl Meta {
    pub fn now(root: &Path, rounds: usize) -> anyhow::Result<Meta> {
        let git = |args: &[&str]| -> String {
            std::process::Command::new("git")
                .current_dir(root)
                .args(args)
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
                .unwrap_or_default()
        };
        let date = std::process::Command::new("date")
            .arg("+%Y-%m-%d")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        Ok(Meta {
            date,
            commit: git(&["rev-parse", "--short", "HEAD"]),
            rounds,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            ..Meta::default()
        })
    }
}

pub fn save(path: &Path, records: &[Record], meta: &Meta) -> anyhow::Result<()> {
    let records: Vec<Value> = records
        .iter()
        .map(|r| {
            let s = &r.sample;
            json!({
                "workload": r.workload, "tool": r.tool, "round": r.round, "step": r.step,
                "wall": s.wall, "client_cpu": s.client_cpu, "server_cpu": s.server_cpu,
                "rss_mib": s.rss_mib, "verbs": s.verbs, "writes": s.writes,
                "bookkeeping_writes": s.bookkeeping_writes,
            })
        })
        .collect();
    let profile = meta.profile.as_ref().map(
        |p| json!({"workload": p.workload, "total": p.total, "top": p.top, "crates": p.crates}),
    );
    let doc = json!({
        "date": meta.date, "commit": meta.commit, "rounds": meta.rounds, "cores": meta.cores,
        "floor_concurrency": meta.floor_concurrency,
        "floor_calibration": meta.floor_calibration,
        "profile": profile,
        "records": records,
    });
    std::fs::write(path, serde_json::to_string_pretty(&doc)?)?;
    Ok(())
}

pub fn load(path: &Path) -> anyhow::Result<(Vec<Record>, Meta)> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "reading {}\nhint: run `cargo xtask bench` first; --report-only reuses its results",
            path.display()
        )
    })?;
    let doc: Value = serde_json::from_str(&text)?;
    let number = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    let records = doc["records"]
        .as_array()
        .context("no records")?
        .iter()
        .map(|r| Record {
            workload: r["workload"].as_str().unwrap_or_default().to_owned(),
            tool: r["tool"].as_str().unwrap_or_default().to_owned(),
            round: r["round"].as_u64().unwrap_or(0) as usize,
            step: r["step"].as_str().unwrap_or_default().to_owned(),
            sample: Sample {
                wall: number(&r["wall"]),
                client_cpu: number(&r["client_cpu"]),
                server_cpu: number(&r["server_cpu"]),
                rss_mib: number(&r["rss_mib"]),
                verbs: r["verbs"]
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0) as usize))
                            .collect()
                    })
                    .unwrap_or_default(),
                writes: r["writes"].as_u64().unwrap_or(0) as usize,
                bookkeeping_writes: r["bookkeeping_writes"].as_u64().unwrap_or(0) as usize,
            },
        })
        .collect();
    let pairs = |v: &Value| -> Vec<(u64, String)> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .map(|p| {
                        (
                            p[0].as_u64().unwrap_or(0),
                            p[1].as_str().unwrap_or("").to_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let profile = (!doc["profile"].is_null()).then(|| Profile {
        workload: doc["profile"]["workload"].as_str().unwrap_or("").to_owned(),
        total: doc["profile"]["total"].as_u64().unwrap_or(0),
        top: pairs(&doc["profile"]["top"]),
        crates: pairs(&doc["profile"]["crates"]),
    });
    let meta = Meta {
        date: doc["date"].as_str().unwrap_or("").to_owned(),
        commit: doc["commit"].as_str().unwrap_or("").to_owned(),
        rounds: doc["rounds"].as_u64().unwrap_or(0) as usize,
        cores: doc["cores"].as_u64().unwrap_or(1) as usize,
        floor_concurrency: doc["floor_concurrency"].as_u64().unwrap_or(0) as usize,
        floor_calibration: doc["floor_calibration"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|p| (p[0].as_u64().unwrap_or(0) as usize, number(&p[1])))
                    .collect()
            })
            .unwrap_or_default(),
        profile,
    };
    Ok((records, meta))
}

/// The samples of one (workload, tool, step).
struct Cell<'a> {
    samples: Vec<&'a Sample>,
}

impl Cell<'_> {
    fn wall(&self) -> (f64, f64, f64) {
        stats(&self.samples.iter().map(|s| s.wall).collect::<Vec<_>>())
    }
    fn median(&self, f: impl Fn(&Sample) -> f64) -> f64 {
        stats(&self.samples.iter().map(|s| f(s)).collect::<Vec<_>>()).0
    }
    fn verbs(&self) -> String {
        // The verbs of the median run by wall time.
        let mut sorted = self.samples.clone();
        sorted.sort_by(|a, b| a.wall.total_cmp(&b.wall));
        let median = sorted[sorted.len() / 2];
        let mut parts: Vec<String> = median
            .verbs
            .iter()
            .map(|(verb, n)| format!("{verb} {n}"))
            .collect();
        if parts.is_empty() {
            parts.push("none".to_owned());
        }
        parts.join(", ")
    }
    fn max_writes(&self) -> (usize, usize) {
        (
            self.samples.iter().map(|s| s.writes).max().unwrap_or(0),
            self.samples
                .iter()
                .map(|s| s.bookkeeping_writes)
                .max()
                .unwrap_or(0),
        )
    }
}

struct Table<'a> {
    cells: BTreeMap<(String, String, String), Cell<'a>>,
    /// Workloads in the order they ran.
    workloads: Vec<String>,
}

impl<'a> Table<'a> {
    fn new(records: &'a [Record]) -> Table<'a> {
        let mut cells: BTreeMap<(String, String, String), Cell<'a>> = BTreeMap::new();
        let mut workloads = Vec::new();
        for r in records {
            if !workloads.contains(&r.workload) {
                workloads.push(r.workload.clone());
            }
            cells
                .entry((r.workload.clone(), r.tool.clone(), r.step.clone()))
                .or_insert(Cell {
                    samples: Vec::new(),
                })
                .samples
                .push(&r.sample);
        }
        Table { cells, workloads }
    }

    fn get(&self, workload: &str, tool: Tool, step: &str) -> Option<&Cell<'a>> {
        self.cells
            .get(&(workload.to_owned(), tool.id().to_owned(), step.to_owned()))
    }

    fn tools(&self, workload: &str) -> Vec<Tool> {
        Tool::ALL
            .into_iter()
            .filter(|t| self.get(workload, *t, "apply").is_some())
            .collect()
    }
}

fn title(workload: &str) -> String {
    if let Some(n) = workload.strip_prefix("bulk-") {
        let n: usize = n.parse().unwrap_or(0);
        return format!(
            "1. Argo CD + {} ConfigMaps ({} objects), no waits",
            thousands(n),
            thousands(n + super::workloads::ARGO_OBJECTS + 2)
        );
    }
    match workload {
        "charts" => {
            "2. cert-manager (its CRDs on) and ingress-nginx, real charts, waited for".into()
        }
        "helmfile" => {
            "3. the same charts as two helmfile releases, ingress-nginx `needs:` cert-manager"
                .into()
        }
        "dag" => "4. 20 manifests in a dependency graph of depth 5, Deployments waited for".into(),
        other => other.to_owned(),
    }
}

/// Writes the report: into docs/ after a full run, under target/bench/ always.
pub fn write(
    root: &Path,
    out: &Path,
    records: &[Record],
    meta: &Meta,
    quick: bool,
) -> anyhow::Result<()> {
    if records.is_empty() {
        bail!("no results to report");
    }
    let table = Table::new(records);
    let markdown = markdown(&table, meta, quick)?;
    let svg = svg(&table);
    std::fs::write(out.join("report.md"), &markdown)?;
    std::fs::write(out.join("benchmarks.svg"), &svg)?;
    eprintln!("{markdown}");
    if quick {
        eprintln!(
            "==> report in {} (docs/ is left alone by --quick)",
            out.display()
        );
        return Ok(());
    }
    let doc_path = root.join("docs/benchmarks.md");
    let doc = std::fs::read_to_string(&doc_path)?;
    let (Some(begin), Some(end)) = (doc.find(BEGIN), doc.find(END)) else {
        bail!(
            "docs/benchmarks.md lacks the markers\nhint: put `{BEGIN}` and `{END}` where the report goes"
        );
    };
    // The report ends with its own end marker.
    let updated = format!(
        "{}{BEGIN}\n{markdown}{}",
        &doc[..begin],
        &doc[end + END.len()..].trim_start_matches('\n')
    );
    std::fs::write(&doc_path, updated)?;
    std::fs::write(root.join("docs/benchmarks.svg"), svg)?;
    eprintln!("==> wrote docs/benchmarks.md and docs/benchmarks.svg");
    Ok(())
}

fn ratio_text(peer: f64, tazuna: f64) -> String {
    let r = peer / tazuna;
    if r >= 1.0 {
        format!("**{r:.2}x** faster")
    } else {
        format!("{:.2}x slower", 1.0 / r)
    }
}

fn markdown(table: &Table, meta: &Meta, quick: bool) -> anyhow::Result<String> {
    let mut md = String::new();
    let cores = meta.cores as f64;
    writeln!(
        md,
        "Measured {} at `{}` on this machine ({} cores), {} round{} per tool and workload, each on a fresh harness control plane. {}Reproduce with:\n\n```sh\ntests/controlplane/install.sh   # the pinned kubectl, helm, helmfile, oras and Flux's controllers\ncargo xtask bench{}\n```\n",
        meta.date,
        meta.commit,
        meta.cores,
        meta.rounds,
        if meta.rounds == 1 { "" } else { "s" },
        if quick {
            "Quick mode (`--quick`): dev builds, a check that the driver works, not figures to quote. "
        } else {
            ""
        },
        if quick { " --quick" } else { "" }
    )?;
    writeln!(
        md,
        "![Day one and no-op, each tool's median](benchmarks.svg)\n"
    )?;

    // Targets.
    let mut fastest = Vec::new();
    let mut fastest_noop = Vec::new();
    let mut floor_ratios = Vec::new();
    let mut noop_writes = Vec::new();
    // Tazuna's median against the fastest peer's (the floor is no peer).
    let against_peers = |w: &str, step: &str| -> Option<String> {
        let t = table.get(w, Tool::Tazuna, step)?.wall().0;
        let (peer, time) = table
            .tools(w)
            .into_iter()
            .filter(|p| !matches!(p, Tool::Tazuna | Tool::Floor))
            .filter_map(|p| table.get(w, p, step).map(|c| (p, c.wall().0)))
            .min_by(|a, b| a.1.total_cmp(&b.1))?;
        Some(format!(
            "{w}: {} ({} {time:.2} s, Tazuna {t:.2} s)",
            if t <= time { "yes" } else { "**no**" },
            peer.id(),
        ))
    };
    for w in &table.workloads {
        let Some(tazuna) = table.get(w, Tool::Tazuna, "apply") else {
            continue;
        };
        let t = tazuna.wall().0;
        fastest.extend(against_peers(w, "apply"));
        fastest_noop.extend(against_peers(w, "noop"));
        if let Some(floor) = table.get(w, Tool::Floor, "apply") {
            floor_ratios.push(format!("{w}: {:.2}x", t / floor.wall().0));
        }
        if let Some(noop) = table.get(w, Tool::Tazuna, "noop") {
            let (writes, _) = noop.max_writes();
            noop_writes.push(format!("{w}: {writes}"));
        }
    }
    writeln!(md, "| Target | Measured |\n|---|---|")?;
    writeln!(
        md,
        "| fastest of all peers on day one (every workload; the target names 1, 2 and 4) | {} |",
        fastest.join("; ")
    )?;
    writeln!(
        md,
        "| fastest of all peers on the no-op re-apply (workload 5) | {} |",
        fastest_noop.join("; ")
    )?;
    writeln!(
        md,
        "| within 1.2x of the floor (Tazuna's median over the floor's) | {} |",
        floor_ratios.join("; ")
    )?;
    writeln!(
        md,
        "| zero writes to the workload's objects on every no-op (Tazuna, the most in any round) | {} |",
        noop_writes.join("; ")
    )?;
    let rss: Vec<(usize, f64)> = table
        .workloads
        .iter()
        .filter_map(|w| {
            let n: usize = w.strip_prefix("bulk-")?.parse().ok()?;
            Some((
                n,
                table.get(w, Tool::Tazuna, "apply")?.median(|s| s.rss_mib),
            ))
        })
        .collect();
    if rss.len() > 1 {
        let parts: Vec<String> = rss
            .iter()
            .map(|(n, mib)| format!("{} ConfigMaps: {mib:.0} MiB", thousands(*n)))
            .collect();
        writeln!(
            md,
            "| peak RSS sub-linear from 1,000 to 10,000 objects, under 200 MB at 10,000 | {} |",
            parts.join("; ")
        )?;
    }
    writeln!(md)?;

    // Per workload.
    for w in &table.workloads {
        writeln!(md, "### {}\n", title(w))?;
        let Some(tazuna) = table.get(w, Tool::Tazuna, "apply") else {
            continue;
        };
        let t = tazuna.wall().0;
        writeln!(
            md,
            "| Day one | median | range | Tazuna against it | client CPU | client peak RSS | control plane CPU | requests by verb (median run) | writes |\n|---|---|---|---|---|---|---|---|---|"
        )?;
        for tool in table.tools(w) {
            let cell = table.get(w, tool, "apply").expect("listed");
            let (median, min, max) = cell.wall();
            let against = if tool == Tool::Tazuna {
                String::new()
            } else {
                ratio_text(median, t)
            };
            writeln!(
                md,
                "| {} | {median:.2} s | {min:.2}–{max:.2} s | {against} | {:.2} s | {:.0} MiB | {:.2} s | {} | {} |",
                tool.label(),
                cell.median(|s| s.client_cpu),
                cell.median(|s| s.rss_mib),
                cell.median(|s| s.server_cpu),
                cell.verbs(),
                cell.max_writes().0,
            )?;
        }
        let bound = tazuna.median(|s| s.client_cpu + s.server_cpu) / cores;
        writeln!(
            md,
            "\nThe CPU bound: Tazuna's run cost {:.2} CPU-seconds (client and control plane), so on {} cores no client could finish it in less than {bound:.2} s; Tazuna took **{:.2}x** that bound.{}\n",
            tazuna.median(|s| s.client_cpu + s.server_cpu),
            meta.cores,
            t / bound,
            table
                .get(w, Tool::Floor, "apply")
                .map(|f| format!(" It took **{:.2}x** the floor's time.", t / f.wall().0))
                .unwrap_or_default()
        )?;
        // No-op and the other steps.
        writeln!(
            md,
            "| Again, nothing changed | median | range | Tazuna against it | requests by verb (median run) | writes to objects | own records written |\n|---|---|---|---|---|---|---|"
        )?;
        let tn = table.get(w, Tool::Tazuna, "noop").map(|c| c.wall().0);
        for tool in table.tools(w) {
            let Some(cell) = table.get(w, tool, "noop") else {
                continue;
            };
            let (median, min, max) = cell.wall();
            let against = match (tool, tn) {
                (Tool::Tazuna, _) | (_, None) => String::new(),
                (_, Some(tn)) => ratio_text(median, tn),
            };
            let (writes, own) = cell.max_writes();
            writeln!(
                md,
                "| {} | {median:.2} s | {min:.2}–{max:.2} s | {against} | {} | {writes} | {own} |",
                tool.label(),
                cell.verbs(),
            )?;
        }
        let steps: Vec<(Tool, &str, &str)> = vec![
            (Tool::Tazuna, "plan", "`tazuna plan`"),
            (Tool::Kubectl, "plan", "`kubectl diff --server-side`"),
            (Tool::Tazuna, "status", "`tazuna status`"),
            (
                Tool::Tazuna,
                "drift",
                "`tazuna state drift` (11 objects changed)",
            ),
            (
                Tool::Kubectl,
                "drift",
                "`kubectl diff --server-side --force-conflicts` (11 objects changed)",
            ),
        ];
        if steps.iter().any(|(t, s, _)| table.get(w, *t, s).is_some()) {
            writeln!(
                md,
                "\n| Read-only step | median | range | requests by verb (median run) | client peak RSS |\n|---|---|---|---|---|"
            )?;
            for (tool, step, label) in steps {
                if let Some(cell) = table.get(w, tool, step) {
                    let (median, min, max) = cell.wall();
                    writeln!(
                        md,
                        "| {label} | {median:.2} s | {min:.2}–{max:.2} s | {} | {:.0} MiB |",
                        cell.verbs(),
                        cell.median(|s| s.rss_mib)
                    )?;
                }
            }
        }
        writeln!(md)?;
    }

    // Growth.
    let bulk: Vec<&String> = table
        .workloads
        .iter()
        .filter(|w| w.starts_with("bulk-"))
        .collect();
    if bulk.len() > 1 {
        writeln!(
            md,
            "### Growth: workload 1 from {} to {} ConfigMaps\n",
            bulk[0].trim_start_matches("bulk-"),
            bulk[bulk.len() - 1].trim_start_matches("bulk-")
        )?;
        let tools = table.tools(bulk[0]);
        let header: Vec<String> = tools.iter().map(|t| t.id().to_owned()).collect();
        writeln!(
            md,
            "| ConfigMaps | {} | {} |\n|---|{}",
            header
                .iter()
                .map(|t| format!("{t} time"))
                .collect::<Vec<_>>()
                .join(" | "),
            header
                .iter()
                .map(|t| format!("{t} peak RSS"))
                .collect::<Vec<_>>()
                .join(" | "),
            "---|".repeat(2 * tools.len())
        )?;
        for w in &bulk {
            let times: Vec<String> = tools
                .iter()
                .map(|t| {
                    table
                        .get(w, *t, "apply")
                        .map_or("".into(), |c| format!("{:.2} s", c.wall().0))
                })
                .collect();
            let rss: Vec<String> = tools
                .iter()
                .map(|t| {
                    table
                        .get(w, *t, "apply")
                        .map_or("".into(), |c| format!("{:.0} MiB", c.median(|s| s.rss_mib)))
                })
                .collect();
            writeln!(
                md,
                "| {} | {} | {} |",
                thousands(w.trim_start_matches("bulk-").parse().unwrap_or(0)),
                times.join(" | "),
                rss.join(" | ")
            )?;
        }
        writeln!(md)?;
    }

    if !meta.floor_calibration.is_empty() {
        let tried: Vec<String> = meta
            .floor_calibration
            .iter()
            .map(|(c, s)| format!("{c}: {s:.2} s"))
            .collect();
        writeln!(
            md,
            "The floor's concurrency, calibrated once on 1,000 ConfigMaps and Argo CD (requests in flight: day-one time): {}. It ran with {}.\n",
            tried.join(", "),
            meta.floor_concurrency
        )?;
    } else {
        writeln!(
            md,
            "The floor kept {} requests in flight.\n",
            meta.floor_concurrency
        )?;
    }

    if let Some(profile) = &meta.profile {
        writeln!(
            md,
            "### Profile: Tazuna's instructions on {}\n\n`valgrind --tool=callgrind` of `tazuna apply` (day one, fresh cluster): {} instructions in Tazuna's own process (the tools it runs are other processes). By crate, self cost:\n",
            title(&profile.workload),
            thousands(profile.total as usize)
        )?;
        writeln!(md, "| crate | instructions | share |\n|---|---|---|")?;
        for (ir, name) in profile.crates.iter().take(8) {
            writeln!(
                md,
                "| `{name}` | {} | {:.1}% |",
                thousands(*ir as usize),
                100.0 * *ir as f64 / profile.total.max(1) as f64
            )?;
        }
        writeln!(
            md,
            "\nThe most expensive functions, self cost:\n\n| instructions | share | function |\n|---|---|---|"
        )?;
        for (ir, name) in profile.top.iter().take(10) {
            let short: String = name.chars().take(110).collect();
            writeln!(
                md,
                "| {} | {:.1}% | `{}` |",
                thousands(*ir as usize),
                100.0 * *ir as f64 / profile.total.max(1) as f64,
                short.replace('|', "\\|")
            )?;
        }
        writeln!(md)?;
    }
    writeln!(md, "{END}")?;
    Ok(md)
}

/// A horizontal bar chart: for each workload, each tool's median day one
/// and no-op, bars scaled within the workload, Tazuna first.
fn svg(table: &Table) -> String {
    let colour = |tool: Tool| match tool {
        Tool::Tazuna => "#d9480f",
        Tool::Kubectl => "#1c7ed6",
        Tool::Helm => "#0b7285",
        Tool::Helmfile => "#5f3dc4",
        Tool::Flux => "#2b8a3e",
        Tool::Floor => "#868e96",
    };
    let (width, label_w, bar_w, row_h) = (900.0, 250.0, 520.0, 18.0);
    let mut rows = String::new();
    let mut y = 40.0;
    for step in ["apply", "noop"] {
        let heading = if step == "apply" {
            "Day one on a fresh cluster (median; shorter is faster)"
        } else {
            "Again, nothing changed (median)"
        };
        let _ = writeln!(
            rows,
            r#"<text x="10" y="{y}" font-size="15" font-weight="bold">{heading}</text>"#
        );
        y += 14.0;
        for w in &table.workloads {
            let tools: Vec<(Tool, f64)> = table
                .tools(w)
                .into_iter()
                .filter_map(|t| table.get(w, t, step).map(|c| (t, c.wall().0)))
                .collect();
            if tools.is_empty() {
                continue;
            }
            let max = tools.iter().map(|t| t.1).fold(0.0, f64::max).max(1e-9);
            y += 16.0;
            let name = title(w);
            let name: String = name.chars().take(120).collect();
            let _ = writeln!(
                rows,
                r#"<text x="10" y="{y}" font-size="12" font-weight="bold">{}</text>"#,
                escape(&name)
            );
            y += 4.0;
            for (tool, time) in tools {
                let len = bar_w * time / max;
                let _ = writeln!(
                    rows,
                    r#"<text x="{:.0}" y="{:.0}" font-size="11" text-anchor="end">{}</text><rect x="{label_w}" y="{:.0}" width="{len:.1}" height="{:.0}" fill="{}"/><text x="{:.1}" y="{:.0}" font-size="11">{time:.2} s</text>"#,
                    label_w - 6.0,
                    y + 12.0,
                    tool.id(),
                    y + 2.0,
                    row_h - 4.0,
                    colour(tool),
                    label_w + len + 4.0,
                    y + 12.0
                );
                y += row_h;
            }
        }
        y += 20.0;
    }
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{:.0}" font-family="sans-serif" viewBox="0 0 {width} {:.0}">
<rect width="100%" height="100%" fill="white"/>
<text x="10" y="22" font-size="17" font-weight="bold">cargo xtask bench: Tazuna beside kubectl, helm, helmfile, Flux and the floor</text>
{rows}</svg>
"#,
        y + 10.0,
        y + 10.0
    )
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('`', "")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(workload: &str, tool: &str, step: &str, wall: f64, writes: usize) -> Record {
        Record {
            workload: workload.into(),
            tool: tool.into(),
            round: 0,
            step: step.into(),
            sample: Sample {
                wall,
                writes,
                ..Sample::default()
            },
        }
    }

    #[test]
    fn results_survive_a_round_trip_and_the_report_names_ratios_and_misses() {
        let records = vec![
            record("bulk-100", "tazuna", "apply", 2.0, 100),
            record("bulk-100", "kubectl", "apply", 3.0, 100),
            record("bulk-100", "floor", "apply", 1.0, 100),
            record("bulk-100", "tazuna", "noop", 0.2, 0),
            record("dag", "tazuna", "apply", 5.0, 80),
            record("dag", "flux", "apply", 4.0, 80),
        ];
        let meta = Meta {
            rounds: 1,
            cores: 2,
            ..Meta::default()
        };
        let dir = std::env::temp_dir().join(format!("bench-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("results.json");
        save(&path, &records, &meta).unwrap();
        let (loaded, meta) = load(&path).unwrap();
        assert_eq!(loaded.len(), records.len());
        let md = markdown(&Table::new(&loaded), &meta, true).unwrap();
        assert!(md.contains("**1.50x** faster"), "{md}");
        assert!(
            md.contains("bulk-100: yes (kubectl 3.00 s, Tazuna 2.00 s)"),
            "{md}"
        );
        assert!(
            md.contains("dag: **no** (flux 4.00 s, Tazuna 5.00 s)"),
            "{md}"
        );
        assert!(md.contains("bulk-100: 2.00x"), "{md}");
        assert!(svg(&Table::new(&loaded)).contains("kubectl"));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
