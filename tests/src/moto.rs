//! A real AWS API for tests: moto in server mode (PyPI, pinned as `MOTO_VERSION` in
//! versions.env and installed by install.sh into a venv), on a free 127.0.0.1 port, with IAM
//! authentication on: every request after the three that make its one user must carry a valid
//! Signature Version 4 of that user's key ([`Moto::credentials`]), as AWS checks. Its venv's
//! Python carries boto3, the tests' independent AWS client ([`Moto::aws`]). Dropping a
//! [`Moto`] stops it.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::cluster::http_request;
use crate::process::{self, Process};

/// Env var naming the venv (a directory with `bin/moto_server` and `bin/python`).
pub const MOTO_ENV: &str = "TAZUNA_MOTO";

/// How long moto may take to answer.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A running moto server.
#[derive(Debug)]
pub struct Moto {
    process: Option<Process>,
    watchdog: Option<Process>,
    port: u16,
    venv: PathBuf,
    dir: tempfile::TempDir,
    /// The access key id and secret key of moto's one user.
    key: (String, String),
}

impl Moto {
    /// The venv: `TAZUNA_MOTO`, else install.sh's `~/.cache/tazuna-dev/bin/moto-<version>/`,
    /// if it holds `bin/moto_server`.
    pub fn venv() -> Option<PathBuf> {
        let venv = std::env::var_os(MOTO_ENV)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                let version = crate::assets::pinned_version("MOTO_VERSION").unwrap_or("unknown");
                crate::assets::cache_dir()
                    .join("bin")
                    .join(format!("moto-{version}"))
            });
        venv.join("bin/moto_server").is_file().then_some(venv)
    }

    /// Starts moto on a free port.
    pub fn start() -> anyhow::Result<Moto> {
        let venv = Moto::venv().context(
            "no moto server: run `tests/controlplane/install.sh` (it installs moto from PyPI), or set TAZUNA_MOTO",
        )?;
        let root = std::env::temp_dir().join("tazuna-tests");
        std::fs::create_dir_all(&root)?;
        let dir = tempfile::Builder::new().prefix("moto-").tempdir_in(&root)?;
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut command = Command::new(venv.join("bin/moto_server"));
        command.args(["-H", "127.0.0.1", "-p", &port.to_string()]);
        // Requests after the first three (which make the user) are authenticated.
        command.env("INITIAL_NO_AUTH_ACTION_COUNT", "3");
        let process = Process::spawn("moto", command, &dir.path().join("moto.log"))?;
        let watchdog = process::watchdog(std::process::id(), &[process.pid()], dir.path())?;
        let mut moto = Moto {
            process: Some(process),
            watchdog: Some(watchdog),
            port,
            venv,
            dir,
            key: (String::new(), String::new()),
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(p) = moto.process.as_mut() {
                p.check_running()?;
            }
            if http_request(port, "/moto-api/", None).is_ok_and(|(status, _)| status == 200) {
                let made = moto.python(
                    "iam = boto3.client('iam', region_name='us-east-1', endpoint_url=URL, aws_access_key_id='setup', aws_secret_access_key='setup')\n\
                     iam.create_user(UserName='tazuna-tests')\n\
                     iam.put_user_policy(UserName='tazuna-tests', PolicyName='all', PolicyDocument=json.dumps({'Version': '2012-10-17', 'Statement': [{'Effect': 'Allow', 'Action': '*', 'Resource': '*'}]}))\n\
                     key = iam.create_access_key(UserName='tazuna-tests')['AccessKey']\n\
                     print(key['AccessKeyId'], key['SecretAccessKey'])\n",
                );
                let (id, secret) = made
                    .trim()
                    .split_once(' ')
                    .context("moto made no access key")?;
                moto.key = (id.to_owned(), secret.to_owned());
                return Ok(moto);
            }
            if Instant::now() > deadline {
                anyhow::bail!(
                    "moto did not answer on 127.0.0.1:{port} after {}s; the end of its log:\n{}",
                    START_TIMEOUT.as_secs(),
                    moto.log_tail(30)
                );
            }
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// `http://127.0.0.1:<port>`: the endpoint of every service.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The access key id and secret key of moto's one user, which every request is signed with.
    pub fn credentials(&self) -> (&str, &str) {
        (&self.key.0, &self.key.1)
    }

    /// Run `script` in the venv's Python with boto3 and `client(service)` (a client of this moto,
    /// region `us-east-1`, signed with [`Self::credentials`]) defined; its stdout.
    pub fn aws(&self, script: &str) -> String {
        let prelude = format!(
            "def client(service):\n    return boto3.client(service, region_name='us-east-1', endpoint_url=URL, aws_access_key_id='{}', aws_secret_access_key='{}')\n",
            self.key.0, self.key.1
        );
        self.python(&format!("{prelude}{script}"))
    }

    /// Turn moto's request authentication off or back on (`/moto-api/reset-auth`). Off only
    /// for a peer whose requests moto 5.1.4 itself checks wrongly: its S3 signature check
    /// fails any request with a `/` in a query value (`ListObjectsV2` with `prefix=env/`, as
    /// boto3 and OpenTofu's `s3` backend send it).
    pub fn authentication(&self, on: bool) {
        let count = if on { "0" } else { "inf" };
        self.python(&format!(
            "import urllib.request
urllib.request.urlopen(urllib.request.Request(URL + '/moto-api/reset-auth', data=b'{count}', headers={{'Content-Type': 'text/plain'}}, method='POST')).read()
"
        ));
    }

    /// Run `script` in the venv's Python with `boto3`, `json` and `URL` (this moto) defined.
    fn python(&self, script: &str) -> String {
        let prelude = format!("import boto3, json\nURL = '{}'\n", self.url());
        let output = Command::new(self.venv.join("bin/python"))
            .arg("-c")
            .arg(format!("{prelude}{script}"))
            .output()
            .expect("the venv's python runs");
        assert!(
            output.status.success(),
            "boto3 script failed:\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// How many API calls (`POST /`, as the JSON APIs are called) moto has served, by its own
    /// access log.
    pub fn api_calls(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("moto.log"))
            .unwrap_or_default()
            .lines()
            .filter(|line| line.contains("\"POST / HTTP"))
            .count()
    }

    /// The last `lines` lines of its log.
    pub fn log_tail(&self, lines: usize) -> String {
        process::tail(&self.dir.path().join("moto.log"), lines)
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        if thread::panicking() {
            eprintln!(
                "tazuna-tests: moto on 127.0.0.1:{} is being torn down during a panic; its log:\n{}",
                self.port,
                self.log_tail(40)
            );
        }
        if let Some(mut dog) = self.watchdog.take() {
            dog.kill();
        }
        if let Some(mut p) = self.process.take() {
            p.kill();
        }
    }
}
