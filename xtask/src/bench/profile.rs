//! An instruction profile of Tazuna on its slowest workload:
//! `valgrind --tool=callgrind` of one day-one `tazuna apply` on a fresh
//! cluster, read with `callgrind_annotate`. Instruction counts do not move
//! with the machine's load, as wall time does on two shared cores.

use std::process::Command;

use anyhow::{Context, bail};

use super::report::Profile;
use super::workloads::Workload;
use super::{Env, Tool, fresh};
use tazuna_controlplane::Tool as Binary;

pub fn run(env: &Env, workloads: &[Workload]) -> anyhow::Result<Profile> {
    let slowest = workloads
        .iter()
        .filter_map(|w| {
            let times: Vec<f64> = env
                .records
                .iter()
                .filter(|r| r.workload == w.id && r.tool == Tool::Tazuna.id() && r.step == "apply")
                .map(|r| r.sample.wall)
                .collect();
            (!times.is_empty()).then(|| (w, super::measure::stats(&times).0))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(w, _)| w)
        .context("no Tazuna run to profile")?;
    eprintln!("==> callgrind of tazuna apply on {}", slowest.id);
    let cluster = fresh("bench-profile")?;
    let _ = std::fs::remove_file(slowest.dir.join("tazuna.lock"));
    let out = env.work.join(format!("callgrind.{}.out", slowest.id));
    let mut command = Command::new("valgrind");
    command
        .current_dir(&slowest.dir)
        .args(["--tool=callgrind", "--quiet"])
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(&env.tazuna)
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig())
        .arg("--context")
        .arg(cluster.context())
        .arg("apply");
    for (name, binary) in [
        ("TAZUNA_TOOL_HELM", Binary::Helm),
        ("TAZUNA_TOOL_HELMFILE", Binary::Helmfile),
        ("TAZUNA_TOOL_KUSTOMIZE", Binary::Kustomize),
    ] {
        command.env(name, env.assets.path(binary));
    }
    let status = command
        .stdout(std::process::Stdio::null())
        .status()
        .context("running valgrind (Debian package `valgrind`)")?;
    if !status.success() {
        bail!("tazuna apply under callgrind failed ({status})");
    }
    let annotated = Command::new("callgrind_annotate")
        .arg("--threshold=100")
        .arg(&out)
        .output()
        .context("running callgrind_annotate")?;
    let text = String::from_utf8_lossy(&annotated.stdout);
    let mut profile = parse(&text)?;
    profile.workload = slowest.id.clone();
    Ok(profile)
}

/// Reads `callgrind_annotate`'s self-cost listing.
fn parse(text: &str) -> anyhow::Result<Profile> {
    let mut total = 0;
    let mut top = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let Some((count, rest)) = line.split_once(' ') else {
            continue;
        };
        let Ok(ir) = count.replace(',', "").parse::<u64>() else {
            continue;
        };
        // `1,234 (12.3%)  file:function [object]`
        let rest = rest.trim();
        let rest = rest
            .strip_prefix('(')
            .and_then(|r| r.split_once(')'))
            .map_or(rest, |(_, r)| r)
            .trim();
        if rest.starts_with("PROGRAM TOTALS") {
            total = ir;
            continue;
        }
        let function = function_of(rest);
        if !function.is_empty() {
            top.push((ir, function));
        }
    }
    if total == 0 {
        bail!("callgrind_annotate printed no totals");
    }
    let mut crates: std::collections::BTreeMap<String, u64> = Default::default();
    for (ir, function) in &top {
        *crates.entry(crate_of(function)).or_default() += ir;
    }
    let mut crates: Vec<(u64, String)> = crates.into_iter().map(|(k, v)| (v, k)).collect();
    crates.sort_by_key(|c| std::cmp::Reverse(c.0));
    top.sort_by_key(|t| std::cmp::Reverse(t.0));
    Ok(Profile {
        workload: String::new(),
        total,
        top,
        crates,
    })
}

/// `file:function [object]` to `function`: the file ends at the first
/// single colon.
fn function_of(entry: &str) -> String {
    let entry = entry.rsplit_once(" [").map_or(entry, |(f, _)| f);
    let bytes = entry.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b':' {
            if bytes.get(i + 1) == Some(&b':') {
                i += 2;
                continue;
            }
            return entry[i + 1..].trim().to_owned();
        }
        i += 1;
    }
    entry.trim().to_owned()
}

/// The crate a symbol belongs to: its first path segment.
fn crate_of(function: &str) -> String {
    let name = function.trim_start_matches(['<', '&', '*', ' ']);
    let name = name.strip_prefix("mut ").unwrap_or(name);
    if name.starts_with("0x") {
        return "(no symbol: compiled wasm or stripped code)".to_owned();
    }
    match name.split_once("::") {
        Some((first, _)) if !first.contains(' ') => first.to_owned(),
        _ => format!("(C: {})", name.split('(').next().unwrap_or(name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotate_output_is_read_into_functions_and_crates() {
        let text = "--------\nIr\n--------\n10,000 (100.0%)  PROGRAM TOTALS\n\n--------\nIr  file:function\n--------\n6,000 (60.0%)  ???:serde_json::de::Deserializer<R>::parse_value [/x/tazuna]\n3,000 (30.0%)  src/lib.rs:<tazuna_kube::apply::Plan as core::fmt::Debug>::fmt [/x/tazuna]\n1,000 (10.0%)  ./malloc/malloc.c:_int_malloc [/usr/lib/libc.so.6]\n";
        let profile = parse(text).unwrap();
        assert_eq!(profile.total, 10_000);
        assert_eq!(
            profile.top[0].1,
            "serde_json::de::Deserializer<R>::parse_value"
        );
        assert_eq!(profile.crates[0], (6000, "serde_json".to_owned()));
        assert!(profile.crates.contains(&(3000, "tazuna_kube".to_owned())));
        assert!(
            profile
                .crates
                .contains(&(1000, "(C: _int_malloc)".to_owned()))
        );
    }
}
