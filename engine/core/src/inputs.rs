//! Values from infrastructure: the outputs of an OpenTofu or Terraform state,
//! declared once in `spec.inputs` and used in the file's template as
//! `{{ .Inputs.<input>.<output> }}`.
//!
//! An output marked sensitive is a secret: the template gets the reference
//! `ref+<input>:<output>` in its place, which resolves only in a Secret's
//! `stringData`, on the way to the cluster, and is never printed (see
//! [`sensitive_value`]). A state that is missing, unreadable or of a format
//! version other than 4 is an error naming the input.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The state format versions read: 4, what Terraform 0.12 and later and
/// every OpenTofu write.
pub const STATE_VERSION: u64 = 4;

/// The most bytes of a state file read.
pub const MAX_STATE_BYTES: u64 = 64 * 1024 * 1024;

/// One input of `spec.inputs`, read.
#[derive(Clone, Debug, PartialEq)]
pub struct Input {
    /// Its name: `.Inputs.<name>` and `ref+<name>:` use it.
    pub name: String,
    /// The state file, resolved against the declaring file's directory.
    pub path: PathBuf,
    /// The state's `serial`, to say which state a value came from.
    pub serial: Option<u64>,
    /// The outputs, by name.
    pub outputs: BTreeMap<String, Output>,
    /// The outputs the file's text uses (`.Inputs.<name>.<output>`), sorted.
    pub used: Vec<String>,
}

/// One output of a state.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    /// Whether the state marks it sensitive.
    pub sensitive: bool,
    /// Its value; for a sensitive output, kept only for the host's resolver.
    value: Value,
}

/// Why an input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The state file is not there, or cannot be read.
    #[error("input `{input}`: cannot read the state `{}`: {error}", path.display())]
    Read {
        /// The input.
        input: String,
        /// The state file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The file is not a state.
    #[error("input `{input}`: `{}` is not an OpenTofu or Terraform state: {why}", path.display())]
    NotAState {
        /// The input.
        input: String,
        /// The state file.
        path: PathBuf,
        /// What is wrong (never a value of it).
        why: String,
    },
    /// A state of another format version.
    #[error("input `{input}`: `{}` is a state of format version {version}; Tazuna reads version {STATE_VERSION}", path.display())]
    Version {
        /// The input.
        input: String,
        /// The state file.
        path: PathBuf,
        /// The version it has.
        version: String,
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
            Self::NotAState { .. } => Some(
                "point `path` at a `terraform.tfstate` (or `tofu state pull > file`)".to_owned(),
            ),
            Self::Version { .. } => Some(
                "write the state with Terraform 0.12 or later, or any OpenTofu".to_owned(),
            ),
            Self::NoOutput { .. } => Some(
                "declare the output in the configuration and run `tofu apply`, or fix the name".to_owned(),
            ),
        }
    }
}

impl Input {
    /// Read the state at `path` for the input `name`.
    pub fn read(name: &str, path: &Path) -> Result<Self, InputError> {
        let read_error = |error| InputError::Read {
            input: name.to_owned(),
            path: path.to_owned(),
            error,
        };
        let metadata = std::fs::metadata(path).map_err(read_error)?;
        let not_a_state = |why: String| InputError::NotAState {
            input: name.to_owned(),
            path: path.to_owned(),
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
        let text = std::fs::read(path).map_err(read_error)?;
        Self::parse(name, path, &text)
    }

    /// Read a state's text.
    pub fn parse(name: &str, path: &Path, text: &[u8]) -> Result<Self, InputError> {
        let not_a_state = |why: String| InputError::NotAState {
            input: name.to_owned(),
            path: path.to_owned(),
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
                    path: path.to_owned(),
                    version: other.to_string(),
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
                    },
                );
            }
        }
        Ok(Self {
            name: name.to_owned(),
            path: path.to_owned(),
            serial: state["serial"].as_u64(),
            outputs,
            used: Vec::new(),
        })
    }

    /// `.Inputs.<name>` of the template: each output's value, a sensitive one
    /// as the reference `ref+<name>:<output>`.
    pub fn template_value(&self) -> Value {
        Value::Object(
            self.outputs
                .iter()
                .map(|(key, output)| {
                    let value = if output.sensitive {
                        Value::String(format!("ref+{}:{key}", self.name))
                    } else {
                        output.value.clone()
                    };
                    (key.clone(), value)
                })
                .collect(),
        )
    }
}

/// The bytes of output `output` of the state at `input.path`, read again as a
/// reference is resolved (a string as it is, anything else as JSON): what
/// the host's resolver of `ref+<input>:<output>` gives.
pub fn sensitive_value(input: &Input, output: &str) -> Result<Vec<u8>, InputError> {
    let fresh = Input::read(&input.name, &input.path)?;
    let Some(found) = fresh.outputs.get(output) else {
        return Err(InputError::NoOutput {
            input: input.name.clone(),
            output: output.to_owned(),
            known: fresh.outputs.keys().map(|k| format!("`{k}`")).collect(),
        });
    };
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
        let input = Input::parse("infra", Path::new("s.tfstate"), STATE.as_bytes()).unwrap();
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
            Input::parse("infra", Path::new("s.tfstate"), text.as_bytes())
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
        let input = Input::read("infra", &path).unwrap();
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
        let gone = Input::read("infra", &dir.path().join("missing.tfstate")).unwrap_err();
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
        let error = Input::read("infra", &huge).unwrap_err().to_string();
        assert!(error.contains("more than 64 MiB"), "{error}");
        #[cfg(unix)]
        {
            let zero = dir.path().join("zero.tfstate");
            std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
            let error = Input::read("infra", &zero).unwrap_err().to_string();
            assert!(error.contains("not a regular file"), "{error}");
        }
        let deep = format!("{{\"version\": 4, \"outputs\": {}", "[".repeat(200_000));
        let error = Input::parse("infra", Path::new("deep.tfstate"), deep.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(error.contains("not JSON"), "{error}");
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
