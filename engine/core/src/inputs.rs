//! Values from infrastructure: the outputs of an OpenTofu or Terraform state,
//! declared once in `spec.inputs` and used in the file's template as
//! `{{ .Inputs.<input>.<output> }}`.
//!
//! An output marked sensitive is a secret: the template gets the reference
//! `ref+<input>:<output>` in its place, which resolves only in a Secret's
//! `stringData`, on the way to the cluster, and is never printed (see
//! [`sensitive_value`]). A state that is missing, unreadable or of a format
//! version other than 4 is an error naming the input.
//!
//! A state is a local file, or an object of an S3 bucket (OpenTofu's and
//! Terraform's `s3` backend). This crate reaches no network: the CLI
//! registers the [`RemoteStates`] that fetches S3 objects (signed by the
//! plugin host's AWS chain), and without one an S3 input is an error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

/// The state format versions read: 4, what Terraform 0.12 and later and
/// every OpenTofu write.
pub const STATE_VERSION: u64 = 4;

/// The most bytes of a state file read.
pub const MAX_STATE_BYTES: u64 = 64 * 1024 * 1024;

/// An object of an S3 bucket, as the `s3` backend names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct S3Object {
    pub bucket: String,
    pub key: String,
    /// The region; else the AWS chain's.
    pub region: Option<String>,
    /// The profile of the shared AWS files; else `AWS_PROFILE`, else `default`.
    pub profile: Option<String>,
    /// Where S3 answers, when not at AWS (a local stand-in, a VPC endpoint).
    pub endpoint: Option<String>,
}

/// The kind of an object an input reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    /// Its keys are plain outputs.
    ConfigMap,
    /// Its keys are sensitive outputs.
    Secret,
}

/// A ConfigMap or Secret of a cluster a context of the run's kubeconfig reaches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectInput {
    pub kind: ObjectKind,
    pub context: String,
    pub namespace: String,
    pub name: String,
}

/// Where an input's outputs come from.
#[derive(Clone, Debug, PartialEq)]
pub enum Location {
    /// A state file, resolved against the declaring file's directory.
    File(PathBuf),
    /// A state in an S3 object.
    S3(Box<S3Object>),
    /// A ConfigMap or Secret of a cluster.
    Object(Box<ObjectInput>),
    /// The Cluster API `Cluster` the run targets: its fields, when it is one.
    ClusterApi(Option<Box<Value>>),
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::File(path) => write!(f, "{}", path.display()),
            Location::S3(object) => write!(f, "s3://{}/{}", object.bucket, object.key),
            Location::Object(object) => write!(
                f,
                "{} {}/{} on context {}",
                match object.kind {
                    ObjectKind::ConfigMap => "ConfigMap",
                    ObjectKind::Secret => "Secret",
                },
                object.namespace,
                object.name,
                object.context
            ),
            Location::ClusterApi(_) => f.write_str("the target's Cluster API Cluster"),
        }
    }
}

/// Why a remote state was not fetched. No variant holds a credential.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The store says it is not there.
    #[error("the object does not exist")]
    NotFound,
    /// No credentials, or the store refused them.
    #[error("{0}")]
    Refused(String),
    /// The store could not be reached, or answered otherwise.
    #[error("{0}")]
    Unreachable(String),
}

/// Fetches what inputs read remotely. Registered once per process by the CLI.
pub trait RemoteStates: Send + Sync {
    /// The bytes of `object`, at most [`MAX_STATE_BYTES`].
    fn fetch_s3(&self, object: &S3Object) -> Result<Vec<u8>, FetchError>;

    /// The data of a ConfigMap or Secret, each key and its bytes.
    fn read_object(&self, object: &ObjectInput) -> Result<BTreeMap<String, Vec<u8>>, FetchError>;
}

static REMOTE: OnceLock<Box<dyn RemoteStates>> = OnceLock::new();

/// Register the process's [`RemoteStates`]; the first call wins.
pub fn set_remote_states(remote: Box<dyn RemoteStates>) {
    let _ = REMOTE.set(remote);
}

/// One input of `spec.inputs`, read.
#[derive(Clone, Debug, PartialEq)]
pub struct Input {
    /// Its name: `.Inputs.<name>` and `ref+<name>:` use it.
    pub name: String,
    /// Where its state is kept.
    pub location: Location,
    /// The state's `serial`, to say which state a value came from.
    pub serial: Option<u64>,
    /// The outputs, by name.
    pub outputs: BTreeMap<String, Output>,
    /// The outputs the file's text uses (`.Inputs.<name>.<output>`), sorted.
    pub used: Vec<String>,
}

/// One output of an input.
#[derive(Clone, PartialEq)]
pub struct Output {
    /// Whether it is a secret: a state marks it sensitive, or it is a
    /// Secret's key.
    pub sensitive: bool,
    /// Its value; for a sensitive output, kept only for the host's resolver.
    value: Value,
    /// A Secret key's bytes, kept only for the host's resolver.
    bytes: Option<Vec<u8>>,
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = f.debug_struct("Output");
        out.field("sensitive", &self.sensitive);
        if !self.sensitive {
            out.field("value", &self.value);
        }
        out.finish_non_exhaustive()
    }
}

impl Output {
    fn plain(value: Value) -> Self {
        Self {
            sensitive: false,
            value,
            bytes: None,
        }
    }
}

/// Why an input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The state file is not there, or cannot be read.
    #[error("input `{input}`: cannot read the state `{at}`: {error}")]
    Read {
        /// The input.
        input: String,
        /// Where the state is.
        at: Location,
        /// Why.
        error: std::io::Error,
    },
    /// A remote state could not be fetched.
    #[error("input `{input}`: cannot read `{at}`: {error}")]
    Fetch {
        /// The input.
        input: String,
        /// Where the state is.
        at: Location,
        /// Why.
        error: FetchError,
    },
    /// The file is not a state.
    #[error("input `{input}`: `{at}` is not an OpenTofu or Terraform state: {why}")]
    NotAState {
        /// The input.
        input: String,
        /// Where the state is.
        at: Location,
        /// What is wrong (never a value of it).
        why: String,
    },
    /// A state of another format version.
    #[error(
        "input `{input}`: `{at}` is a state of format version {version}; Tazuna reads version {STATE_VERSION}"
    )]
    Version {
        /// The input.
        input: String,
        /// Where the state is.
        at: Location,
        /// The version it has.
        version: String,
    },
    /// A plain output the file uses holds text that could change the file's
    /// structure, or a secret reference.
    #[error("input `{input}`: output `{output}` {why}, and cannot fill a value of the file")]
    NotInert {
        /// The input.
        input: String,
        /// The output.
        output: String,
        /// What it holds that is not allowed (never the text itself).
        why: String,
    },
    /// A reference to an output the state lacks.
    #[error("input `{input}` has no output `{output}` (it has {})", if known.is_empty() { "none".to_owned() } else { known.join(", ") })]
    NoOutput {
        /// The input.
        input: String,
        /// The output asked for.
        output: String,
        /// The outputs it has, backticked.
        known: Vec<String>,
    },
}

impl crate::hint::Hint for InputError {
    fn hint(&self) -> Option<String> {
        match self {
            Self::Read { .. } => Some(
                "run `tofu apply` (or `terraform apply`) where the state is kept, or fix `path` in `spec.inputs`; it is relative to the file that declares the input".to_owned(),
            ),
            Self::Fetch {
                at: Location::Object(_),
                ..
            } => Some(
                "check the context, namespace and name, and that the context's user may `get` the object".to_owned(),
            ),
            Self::Fetch {
                at: Location::ClusterApi(_),
                ..
            } => Some(
                "an input of `type: cluster-api` is for an environment whose clusters come from `clusterAPI`; run with `--cluster` naming one of them".to_owned(),
            ),
            Self::Fetch {
                at: Location::S3(_),
                error: FetchError::NotFound,
                ..
            } => Some(
                "check `bucket` and `key` against the configuration's `backend \"s3\"` block, and that `tofu apply` ran".to_owned(),
            ),
            Self::Fetch {
                at: Location::S3(_),
                error: FetchError::Refused(_),
                ..
            } => Some(
                "check the AWS credentials the chain finds (the environment, the profile) and that they may `s3:GetObject` the key".to_owned(),
            ),
            Self::Fetch { .. } => None,
            Self::NotAState { .. } => Some(
                "point `path` at a `terraform.tfstate` (or `tofu state pull > file`)".to_owned(),
            ),
            Self::Version { .. } => Some(
                "write the state with Terraform 0.12 or later, or any OpenTofu".to_owned(),
            ),
            Self::NotInert { input, output, .. } => Some(format!(
                "an input's plain string may hold only letters, digits and `{INERT_PUNCTUATION}`, starting with a letter, a digit or one of `/._`: it is pasted into the file's text, so anything else could change the file. Mark the output sensitive and use `ref+{input}:{output}` in a Secret, or change the output"
            )),
            Self::NoOutput { .. } => Some(
                "declare the output in the configuration and run `tofu apply`, or fix the name".to_owned(),
            ),
        }
    }
}

impl Input {
    /// Read the outputs at `location` for the input `name`.
    pub fn read(name: &str, location: &Location) -> Result<Self, InputError> {
        let fetch_error = |error| InputError::Fetch {
            input: name.to_owned(),
            at: location.clone(),
            error,
        };
        let remote = || {
            REMOTE.get().ok_or_else(|| {
                fetch_error(FetchError::Unreachable(
                    "this command reaches no cluster or store".to_owned(),
                ))
            })
        };
        let text = match location {
            Location::File(path) => read_file(name, location, path)?,
            Location::S3(object) => {
                let bytes = remote()?.fetch_s3(object).map_err(fetch_error)?;
                if bytes.len() as u64 > MAX_STATE_BYTES {
                    return Err(InputError::NotAState {
                        input: name.to_owned(),
                        at: location.clone(),
                        why: format!("more than {} MiB", MAX_STATE_BYTES / 1024 / 1024),
                    });
                }
                bytes
            }
            Location::Object(object) => {
                let data = remote()?.read_object(object).map_err(fetch_error)?;
                let outputs = data
                    .into_iter()
                    .map(|(key, bytes)| {
                        let output = match object.kind {
                            ObjectKind::ConfigMap => Output::plain(Value::String(
                                String::from_utf8_lossy(&bytes).into_owned(),
                            )),
                            ObjectKind::Secret => Output {
                                sensitive: true,
                                value: Value::Null,
                                bytes: Some(bytes),
                            },
                        };
                        (key, output)
                    })
                    .collect();
                return Ok(Self::of(name, location, None, outputs));
            }
            Location::ClusterApi(fields) => {
                let Some(Value::Object(fields)) = fields.as_deref() else {
                    return Err(fetch_error(FetchError::Unreachable(
                        "the run does not target a cluster found through Cluster API (an environment's `clusterAPI`)".to_owned(),
                    )));
                };
                let outputs = fields
                    .iter()
                    .map(|(key, value)| (key.clone(), Output::plain(value.clone())))
                    .collect();
                return Ok(Self::of(name, location, None, outputs));
            }
        };
        Self::parse(name, location, &text)
    }

    fn of(
        name: &str,
        location: &Location,
        serial: Option<u64>,
        outputs: BTreeMap<String, Output>,
    ) -> Self {
        Self {
            name: name.to_owned(),
            location: location.clone(),
            serial,
            outputs,
            used: Vec::new(),
        }
    }

    /// Read a state's text.
    pub fn parse(name: &str, location: &Location, text: &[u8]) -> Result<Self, InputError> {
        let not_a_state = |why: String| InputError::NotAState {
            input: name.to_owned(),
            at: location.clone(),
            why,
        };
        // serde_json's message names a line and column, never the text.
        let state: Value = serde_json::from_slice(text)
            .map_err(|error| not_a_state(format!("not JSON ({error})")))?;
        match &state["version"] {
            Value::Number(n) if n.as_u64() == Some(STATE_VERSION) => {}
            Value::Null => return Err(not_a_state("it has no `version`".to_owned())),
            other => {
                return Err(InputError::Version {
                    input: name.to_owned(),
                    at: location.clone(),
                    // A state's text is not echoed: only a number is.
                    version: match other {
                        Value::Number(n) => n.to_string(),
                        _ => "(not a number)".to_owned(),
                    },
                });
            }
        }
        let mut outputs = BTreeMap::new();
        if let Some(map) = state["outputs"].as_object() {
            for (key, output) in map {
                outputs.insert(
                    key.clone(),
                    Output {
                        sensitive: output["sensitive"] == Value::Bool(true),
                        value: output["value"].clone(),
                        bytes: None,
                    },
                );
            }
        }
        Ok(Self::of(name, location, state["serial"].as_u64(), outputs))
    }

    /// The outputs the template may not use, and why: a plain string output
    /// (or an output name) that is not inert ([`inert`]) or reads as a
    /// secret reference. Whoever controls a state, a bucket, a ConfigMap or a
    /// Cluster must not be able to add a manifest, a plugin or a reference to
    /// the file. Inside a list or map output, such strings are left out
    /// ([`sanitized`]).
    pub fn unusable(&self) -> Vec<(String, String)> {
        self.outputs
            .iter()
            .filter(|(_, output)| !output.sensitive)
            .filter_map(|(key, output)| {
                let why = not_inert(key)
                    .map(|_| "has a name that could change the file".to_owned())
                    .or_else(|| match &output.value {
                        Value::String(text) => not_inert(text),
                        _ => None,
                    });
                why.map(|why| (key.clone(), why))
            })
            .collect()
    }

    /// The error for output `output` if the template may not use it.
    pub fn check_usable(&self, output: &str) -> Result<(), InputError> {
        match self.unusable().into_iter().find(|(key, _)| key == output) {
            Some((key, why)) => Err(InputError::NotInert {
                input: self.name.clone(),
                output: key,
                why,
            }),
            None => Ok(()),
        }
    }

    /// `.Inputs.<name>` of the template: each output's value, a sensitive one
    /// as the reference `ref+<name>:<output>`; an unusable one
    /// ([`Input::unusable`]) is left out.
    pub fn template_value(&self) -> Value {
        let unusable = self.unusable();
        Value::Object(
            self.outputs
                .iter()
                .filter(|(key, _)| !unusable.iter().any(|(bad, _)| bad == *key))
                .map(|(key, output)| {
                    let value = if output.sensitive {
                        Value::String(format!("ref+{}:{key}", self.name))
                    } else {
                        sanitized(&output.value).unwrap_or(Value::Null)
                    };
                    (key.clone(), value)
                })
                .collect(),
        )
    }
}

/// The punctuation an inert string may hold besides letters and digits.
pub const INERT_PUNCTUATION: &str = "-._~/:@=+%";

/// Whether `text` may be pasted anywhere in the file's YAML text (a plain,
/// single- or double-quoted scalar) and change nothing of its structure: an
/// allow-list of characters (an ARN, a URL's host and path, a CIDR, a name,
/// base64), starting with a letter, a digit or one of `/._`, not ending with
/// `:`.
pub fn inert(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_alphanumeric() || INERT_PUNCTUATION.as_bytes().contains(&b))
        && text
            .bytes()
            .next()
            .is_none_or(|b| b.is_ascii_alphanumeric() || b"/._".contains(&b))
        && !text.ends_with(':')
}

/// Why the string `text` may not fill the file, if it may not.
fn not_inert(text: &str) -> Option<String> {
    if text.contains("ref+") {
        Some("holds a secret reference (`ref+`)".to_owned())
    } else if !inert(text) {
        Some(
            "holds a space, a line break, a quote or another character that could change the file"
                .to_owned(),
        )
    } else {
        None
    }
}

/// `value` with what may not fill the file taken out, at any depth: a map
/// entry whose key or string is not [`inert`] is left out, a list item
/// becomes `null`. `None` when `value` itself is such a string.
fn sanitized(value: &Value) -> Option<Value> {
    match value {
        Value::String(text) => not_inert(text).is_none().then(|| value.clone()),
        Value::Array(items) => Some(Value::Array(
            items
                .iter()
                .map(|item| sanitized(item).unwrap_or(Value::Null))
                .collect(),
        )),
        Value::Object(map) => Some(Value::Object(
            map.iter()
                .filter(|(key, _)| not_inert(key).is_none())
                .filter_map(|(key, item)| Some((key.clone(), sanitized(item)?)))
                .collect(),
        )),
        other => Some(other.clone()),
    }
}

/// The bytes of a state file, sized and typed before it is read.
fn read_file(name: &str, location: &Location, path: &Path) -> Result<Vec<u8>, InputError> {
    let read_error = |error| InputError::Read {
        input: name.to_owned(),
        at: location.clone(),
        error,
    };
    let metadata = std::fs::metadata(path).map_err(read_error)?;
    let not_a_state = |why: String| InputError::NotAState {
        input: name.to_owned(),
        at: location.clone(),
        why,
    };
    if !metadata.is_file() {
        return Err(not_a_state("not a regular file".to_owned()));
    }
    if metadata.len() > MAX_STATE_BYTES {
        return Err(not_a_state(format!(
            "more than {} MiB",
            MAX_STATE_BYTES / 1024 / 1024
        )));
    }
    std::fs::read(path).map_err(read_error)
}

/// The bytes of output `output` of the state at `input.location`, read again as a
/// reference is resolved (a string as it is, anything else as JSON): what
/// the host's resolver of `ref+<input>:<output>` gives.
pub fn sensitive_value(input: &Input, output: &str) -> Result<Vec<u8>, InputError> {
    // A Secret's key is kept from the load; a state is read again.
    let fresh = match &input.location {
        Location::File(_) | Location::S3(_) => Input::read(&input.name, &input.location)?,
        Location::Object(_) | Location::ClusterApi(_) => input.clone(),
    };
    let Some(found) = fresh.outputs.get(output) else {
        return Err(InputError::NoOutput {
            input: input.name.clone(),
            output: output.to_owned(),
            known: fresh.outputs.keys().map(|k| format!("`{k}`")).collect(),
        });
    };
    if let Some(bytes) = &found.bytes {
        return Ok(bytes.clone());
    }
    Ok(match &found.value {
        Value::String(text) => text.as_bytes().to_vec(),
        other => other.to_string().into_bytes(),
    })
}

/// The outputs of input `name` that `text` uses as `.Inputs.<name>.<output>`,
/// sorted and each once.
pub fn used_in(text: &str, name: &str) -> Vec<String> {
    let prefix = format!(".Inputs.{name}.");
    let mut used: Vec<String> = text
        .match_indices(&prefix)
        .filter_map(|(at, _)| {
            let rest = &text[at + prefix.len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(rest.len());
            (end > 0).then(|| rest[..end].to_owned())
        })
        .collect();
    used.sort();
    used.dedup();
    used
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str) -> Location {
        Location::File(PathBuf::from(name))
    }

    const STATE: &str = r#"{
      "version": 4, "terraform_version": "1.10.10", "serial": 7, "lineage": "x",
      "outputs": {
        "alb_target_group_arn": {"value": "arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/web/abc", "type": "string"},
        "db_password": {"value": "hunter2-state-value", "type": "string", "sensitive": true},
        "subnets": {"value": ["a", "b"], "type": ["list", "string"]}
      },
      "resources": []
    }"#;

    #[test]
    fn outputs_are_values_and_sensitive_ones_references() {
        let input = Input::parse("infra", &file("s.tfstate"), STATE.as_bytes()).unwrap();
        assert_eq!(input.serial, Some(7));
        let value = input.template_value();
        assert_eq!(
            value["alb_target_group_arn"],
            "arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/web/abc"
        );
        assert_eq!(value["subnets"], serde_json::json!(["a", "b"]));
        assert_eq!(value["db_password"], "ref+infra:db_password");
        assert!(!value.to_string().contains("hunter2"));
    }

    #[test]
    fn what_is_not_a_version_4_state_is_named() {
        let parse = |text: &str| {
            Input::parse("infra", &file("s.tfstate"), text.as_bytes())
                .unwrap_err()
                .to_string()
        };
        assert!(parse(r#"{"version": 3, "outputs": {}}"#).contains("format version 3"));
        assert!(parse(r#"{"outputs": {}}"#).contains("no `version`"));
        let broken = parse("{\"version\": 4, \"outputs\": {\"p\": {\"value\": \"hunter2\"");
        assert!(
            broken.contains("not JSON") && !broken.contains("hunter2"),
            "{broken}"
        );
    }

    #[test]
    fn a_sensitive_output_is_read_anew_and_a_missing_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("terraform.tfstate");
        std::fs::write(&path, STATE).unwrap();
        let input = Input::read("infra", &Location::File(path)).unwrap();
        assert_eq!(
            sensitive_value(&input, "db_password").unwrap(),
            b"hunter2-state-value"
        );
        assert_eq!(sensitive_value(&input, "subnets").unwrap(), br#"["a","b"]"#);
        let missing = sensitive_value(&input, "nope").unwrap_err().to_string();
        assert!(
            missing.contains("input `infra` has no output `nope`"),
            "{missing}"
        );
        let gone =
            Input::read("infra", &Location::File(dir.path().join("missing.tfstate"))).unwrap_err();
        assert!(gone.to_string().contains("cannot read the state"));
    }

    /// States built to exhaust memory or time: sized, typed and bounded
    /// before anything is read or parsed.
    #[test]
    fn a_hostile_state_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let huge = dir.path().join("huge.tfstate");
        std::fs::File::create(&huge)
            .unwrap()
            .set_len(64 * 1024 * 1024 * 1024)
            .unwrap();
        let error = Input::read("infra", &Location::File(huge))
            .unwrap_err()
            .to_string();
        assert!(error.contains("more than 64 MiB"), "{error}");
        #[cfg(unix)]
        {
            let zero = dir.path().join("zero.tfstate");
            std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
            let error = Input::read("infra", &Location::File(zero))
                .unwrap_err()
                .to_string();
            assert!(error.contains("not a regular file"), "{error}");
        }
        let deep = format!("{{\"version\": 4, \"outputs\": {}", "[".repeat(200_000));
        let error = Input::parse("infra", &file("deep.tfstate"), deep.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(error.contains("not JSON"), "{error}");
    }

    #[test]
    fn a_cluster_api_input_gives_the_clusters_fields_and_needs_one() {
        let fields = serde_json::json!({
            "name": "tokyo", "namespace": "fleet",
            "labels": {"region": "tokyo"}, "annotations": {"zone": "a"},
            "clusterNetwork": {"pods": {"cidrBlocks": ["10.244.0.0/16"]}},
        });
        let input = Input::read("capi", &Location::ClusterApi(Some(Box::new(fields)))).unwrap();
        let value = input.template_value();
        assert_eq!(value["labels"]["region"], "tokyo");
        assert_eq!(
            value["clusterNetwork"]["pods"]["cidrBlocks"][0],
            "10.244.0.0/16"
        );
        let error = Input::read("capi", &Location::ClusterApi(None)).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("not target a cluster found through Cluster API")
        );
        assert!(
            crate::hint::Hint::hint(&error)
                .unwrap()
                .contains("clusterAPI")
        );
    }

    /// A state, a bucket or a ConfigMap controlled by someone else fills
    /// values only: text that could add a manifest or a plugin to the file,
    /// or a reference to a secret, is not available to the template.
    #[test]
    fn an_output_that_could_change_the_file_or_name_a_secret_is_not_usable() {
        let state = r#"{"version": 4, "outputs": {
            "arn": {"value": "arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/web/abc"},
            "url": {"value": "https://git.example.com/platform.git"},
            "cidr": {"value": "10.0.0.0/16"},
            "count": {"value": 3},
            "ns": {"value": "default'\n      tags: [injected]\n    - name: evil"},
            "quote": {"value": "a\"b"},
            "space": {"value": "a b"},
            "colon": {"value": "evil:"},
            "dash": {"value": "-x"},
            "ref": {"value": "ref+env:CI_TOKEN"},
            "nested": {"value": {"ok": ["a", "b"], "bad": ["x\ny"]}},
            "badkey": {"value": {"a b": "x", "tazuna.io/fleet": "web"}},
            "secret": {"value": "any text 'at all'\n", "sensitive": true}
        }}"#;
        let input = Input::parse("infra", &file("s.tfstate"), state.as_bytes()).unwrap();
        let mut unusable: Vec<String> = input.unusable().into_iter().map(|(k, _)| k).collect();
        unusable.sort();
        assert_eq!(unusable, ["colon", "dash", "ns", "quote", "ref", "space"]);
        let value = input.template_value();
        assert!(value["ns"].is_null() && value["arn"].is_string() && value["count"] == 3);
        // Inside lists and maps, what could change the file is taken out.
        assert_eq!(
            value["nested"],
            serde_json::json!({"ok": ["a", "b"], "bad": [null]})
        );
        assert_eq!(
            value["badkey"],
            serde_json::json!({"tazuna.io/fleet": "web"})
        );
        assert_eq!(value["secret"], "ref+infra:secret");
        let error = input.check_usable("ns").unwrap_err();
        let said = error.to_string();
        assert!(
            said.contains("output `ns`") && !said.contains("injected"),
            "{said}"
        );
        assert!(
            crate::hint::Hint::hint(&error)
                .unwrap()
                .contains("ref+infra:ns")
        );
        assert!(input.check_usable("url").is_ok());
    }

    #[test]
    fn the_outputs_a_text_uses_are_found() {
        let text = "arn: {{ .Inputs.infra.alb_target_group_arn }}\nx: {{ .Inputs.infra.db_password | quote }} {{ .Inputs.other.y }} {{ .Inputs.infra.alb_target_group_arn }}";
        assert_eq!(
            used_in(text, "infra"),
            ["alb_target_group_arn", "db_password"]
        );
        assert_eq!(used_in(text, "none"), Vec::<String>::new());
    }
}
