//! `cargo xtask bench-secrets`: a Secret of N references resolved through AWS Secrets Manager
//! (moto, the real AWS API, with signatures checked) beside the same Secret through an env
//! file, in one run, on one harness cluster; reported as a ratio, with the requests the store
//! answered.
//!
//! Each round runs `tazuna plan` (which renders, resolves every reference and compares with the
//! cluster) on both projects, alternating which goes first, after one apply of each so that the
//! plans compare with a Secret that is there. Medians are reported.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use clap::Args;

use crate::bench::fresh;

/// Resolve N references through AWS Secrets Manager and through an env file.
#[derive(Debug, Args)]
pub struct BenchSecrets {
    /// References in the Secret (each to its own secret).
    #[arg(long, default_value_t = 500)]
    references: usize,
    /// Rounds; medians are reported.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
}

impl BenchSecrets {
    /// Run it and print a Markdown report.
    pub fn run(self) -> anyhow::Result<()> {
        let root = crate::shell::root();
        let tazuna = crate::plugins::release_cli(&root, None)?;
        let moto = tazuna_tests::Moto::start()?;
        let cluster = fresh("bench-secrets")?;
        let work = crate::bench::tempfile_dir()?.join("secrets");
        let n = self.references;
        moto.aws(&format!(
            "c = client('secretsmanager')\nfor i in range({n}):\n    c.create_secret(Name=f'bench/{{i}}', SecretString=f'value-{{i}}')\n"
        ));
        let mut aws = String::new();
        let mut env = String::new();
        let mut envfile = String::new();
        for i in 0..n {
            writeln!(aws, "  k{i}: ref+aws:bench/{i}")?;
            writeln!(env, "  k{i}: ref+file:K{i}")?;
            writeln!(envfile, "K{i}=value-{i}")?;
        }
        let project = |name: &str, data: &str| -> anyhow::Result<std::path::PathBuf> {
            let dir = work.join(name);
            std::fs::create_dir_all(&dir)?;
            std::fs::write(dir.join("values.env"), &envfile)?;
            std::fs::write(
                dir.join("secret.yaml"),
                format!(
                    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\nstringData:\n{data}"
                ),
            )?;
            std::fs::write(
                dir.join("tazuna.yaml"),
                format!(
                    "apiVersion: tazuna.pepabo.com/v1
kind: Tazuna
spec:
  providers:
    - name: aws
      type: aws-secrets-manager
      aws-secrets-manager:
        region: us-east-1
        endpoint: {}/
    - name: file
      type: envfile
      envfile:
        path: ./values.env
  manifests:
    - name: {name}
      type: manifests
      path: secret.yaml
      namespace: default
",
                    moto.url()
                ),
            )?;
            Ok(dir)
        };
        let with_aws = project("aws", &aws)?;
        let with_file = project("envfile", &env)?;
        let run = |dir: &Path, verb: &str| -> anyhow::Result<Duration> {
            let started = Instant::now();
            let output = Command::new(&tazuna)
                .current_dir(dir)
                .env("AWS_ACCESS_KEY_ID", moto.credentials().0)
                .env("AWS_SECRET_ACCESS_KEY", moto.credentials().1)
                .env_remove("AWS_PROFILE")
                .env("NO_COLOR", "1")
                .arg("--kubeconfig")
                .arg(cluster.kubeconfig())
                .arg("--context")
                .arg(cluster.context())
                .arg(verb)
                .output()?;
            let elapsed = started.elapsed();
            anyhow::ensure!(
                output.status.success(),
                "`tazuna {verb}` in {} failed:\n{}",
                dir.display(),
                String::from_utf8_lossy(&output.stderr)
            );
            Ok(elapsed)
        };
        run(&with_aws, "apply")?;
        run(&with_file, "apply")?;
        let mut aws_times = Vec::new();
        let mut file_times = Vec::new();
        let mut store_times = Vec::new();
        let mut calls = Vec::new();
        // The store's own time: boto3 (AWS's SDK) making the same batch calls, one after
        // another as the resolver does.
        let boto3 = format!(
            "import time\nc = client('secretsmanager')\nids = [f'bench/{{i}}' for i in range({n})]\n\
             t = time.time()\nfor j in range(0, {n}, 20):\n    c.batch_get_secret_value(SecretIdList=ids[j:j + 20])\n\
             print(time.time() - t)\n"
        );
        for round in 0..self.rounds {
            eprintln!("==> round {}/{}", round + 1, self.rounds);
            let before = moto.api_calls();
            if round % 2 == 0 {
                aws_times.push(run(&with_aws, "plan")?);
                file_times.push(run(&with_file, "plan")?);
            } else {
                file_times.push(run(&with_file, "plan")?);
                aws_times.push(run(&with_aws, "plan")?);
            }
            calls.push(moto.api_calls() - before);
            let seconds: f64 = moto.aws(&boto3).trim().parse()?;
            store_times.push(Duration::from_secs_f64(seconds));
        }
        let median = |values: &mut Vec<Duration>| {
            values.sort();
            values[values.len() / 2].as_secs_f64()
        };
        let (aws, file) = (median(&mut aws_times), median(&mut file_times));
        let store = median(&mut store_times);
        calls.sort_unstable();
        let mut report = String::new();
        writeln!(
            report,
            "One Secret of {n} references, `tazuna plan` on a harness cluster; {} rounds, medians.",
            self.rounds
        )?;
        writeln!(report)?;
        writeln!(
            report,
            "| References from | plan | ratio to the env file | store requests |"
        )?;
        writeln!(report, "|---|---|---|---|")?;
        writeln!(
            report,
            "| an env file (`envfile`) | {file:.2} s | 1.00x | |"
        )?;
        writeln!(
            report,
            "| AWS Secrets Manager (moto, signatures checked) | {aws:.2} s | {:.2}x | {} |",
            aws / file,
            calls[calls.len() / 2]
        )?;
        writeln!(
            report,
            "| the store alone: boto3 making the same batch calls | {store:.2} s | | |"
        )?;
        writeln!(report)?;
        writeln!(
            report,
            "Tazuna's time with the store beyond the env file: {:.2} s, against the store's own {store:.2} s.",
            aws - file
        )?;
        println!("{report}");
        Ok(())
    }
}
