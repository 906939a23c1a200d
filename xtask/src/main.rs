//! Developer tasks: `cargo xtask <task>`. Each task lives in its own module.

mod bench;
mod bench_fleet;
mod bench_inputs;
mod bench_secrets;
mod cluster;
mod dist;
mod fuzz;
mod image;
mod plugins;
mod quickstart;
mod shell;
mod test;

use clap::{Parser, Subcommand};

/// Developer tasks for the Tazuna workspace.
#[derive(Parser)]
#[command(name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Build the built-in plugins, the SDK example and the sandbox test plugins
    /// for wasm32-wasip2 in one cargo invocation, into target/plugins/; the
    /// built-ins also into engine/plugin-host/builtins/ (committed, embedded).
    BuildPlugins(plugins::BuildPlugins),
    /// Install what the tests need (rustup target, Debian packages, the Go-built
    /// control plane and tools), build the plugins, and run every test. CI runs this.
    Test(test::Test),
    /// Start a local control plane and apply the quickstart to it (Tazuna's main job).
    Quickstart(quickstart::Quickstart),
    /// Benchmark Tazuna beside kubectl, helm, helmfile, Flux and a minimal
    /// kube-rs client on the same workloads, on fresh harness clusters; writes
    /// docs/benchmarks.md (between its markers) and docs/benchmarks.svg.
    Bench(bench::Bench),
    /// Benchmark three clusters applied in one wave against the same three one
    /// after another and against the slowest alone; prints a Markdown report.
    BenchFleet(bench_fleet::BenchFleet),
    /// Measure `tazuna check` (time, peak RSS) on inputs built to exhaust
    /// memory or time; prints a Markdown table.
    BenchInputs(bench_inputs::BenchInputs),
    /// Resolve a Secret of N references through AWS Secrets Manager (moto) and through an
    /// env file, side by side; prints a Markdown report with the ratio and the store's requests.
    BenchSecrets(bench_secrets::BenchSecrets),
    /// Fuzz the config loader (`fuzz/`) with libFuzzer for a bounded time.
    Fuzz(fuzz::Fuzz),
    /// Start, stop and list local harness clusters (real control planes on loopback).
    Cluster(cluster::ClusterArgs),
    /// Build release archives of `tazuna` (`target/dist/tazuna-<version>-<target>.tar.gz`)
    /// and their SHA256SUMS.
    Dist(dist::Dist),
    /// Build an OCI image of the static `tazuna` binary without a container daemon
    /// (`target/image`, an OCI layout), and with `--push` copy it to a registry with skopeo.
    Image(image::Image),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().task {
        Task::BuildPlugins(args) => args.run(),
        Task::Test(args) => args.run(),
        Task::Quickstart(args) => args.run(),
        Task::Cluster(args) => args.run(),
        Task::Bench(args) => args.run(),
        Task::BenchFleet(args) => args.run(),
        Task::Fuzz(args) => args.run(),
        Task::BenchInputs(args) => args.run(),
        Task::BenchSecrets(args) => args.run(),
        Task::Dist(args) => args.run(),
        Task::Image(args) => args.run(),
    }
}
