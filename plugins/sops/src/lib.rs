//! The built-in `sops` secret resolver: values of SOPS-encrypted files in the repository.
//!
//! ```yaml
//! spec:
//!   providers:
//!     - name: sops
//!       type: sops
//!       sops: {}
//! ```
//!
//! A reference names a file, relative to the file that declares the provider, and a key of it:
//! `ref+sops:secrets/argocd.enc.yaml#repo/password` (a path of keys), `#/repo/password` (a JSON
//! pointer), `ref+sops:secrets/.env.enc#TOKEN`. YAML (`.yaml`, `.yml`), JSON (`.json`) and dotenv
//! (`.env`, or a name ending in `.env.<anything>` or starting with `.env`) are read. Without a key
//! the whole decrypted document comes out as JSON.
//!
//! The file's data key is opened by the host with the user's age identities (`SOPS_AGE_KEY`,
//! `SOPS_AGE_KEY_FILE`, `~/.config/sops/age/keys.txt`), which the plugin never sees; the values
//! are decrypted in the plugin's memory and nothing is written anywhere. Every value's tag and the
//! file's MAC are checked, so a file changed by hand (a value added, removed or swapped) is refused
//! as SOPS refuses it. Each file is read and decrypted once a run.

use std::collections::BTreeMap;

use aes_gcm::aead::consts::U32;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::aes::Aes256;
use aes_gcm::{AesGcm, Nonce};
use base64::Engine as _;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha512};
use tazuna_sdk::{Diagnostic, PluginError, PluginInfo, SecretResolver};

/// Where the host preopens the directory of the file that declares the provider.
const PROVIDER_DIR: &str = "/manifest";

/// The most bytes of a SOPS file.
const MAX_FILE: u64 = 16 * 1024 * 1024;

/// What SOPS hashes first when only encrypted values are in the MAC (`mac_only_encrypted`).
const MAC_ONLY_ENCRYPTED: [u8; 32] = [
    0x8a, 0x3f, 0xd2, 0xad, 0x54, 0xce, 0x66, 0x52, 0x7b, 0x10, 0x34, 0xf3, 0xd1, 0x47, 0xbe, 0x0b,
    0x0b, 0x97, 0x5b, 0x3b, 0xf4, 0x4f, 0x72, 0xc6, 0xfd, 0xad, 0xec, 0x81, 0x76, 0xf2, 0x7d, 0x69,
];

/// The `sops:` block of a provider: nothing to set yet.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {}

/// A file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Yaml,
    Json,
    Dotenv,
}

/// The format of `file`, by its name as SOPS decides it.
pub fn format_of(file: &str) -> Result<Format, PluginError> {
    let name = file.rsplit('/').next().unwrap_or(file);
    if name.ends_with(".yaml") || name.ends_with(".yml") {
        Ok(Format::Yaml)
    } else if name.ends_with(".json") {
        Ok(Format::Json)
    } else if name.ends_with(".env") || name.starts_with(".env") || name.contains(".env.") {
        Ok(Format::Dotenv)
    } else {
        Err(PluginError::InvalidInput(vec![
            Diagnostic::error(
                "not a SOPS format this resolver reads: name the file `.yaml`, `.yml`, `.json` or `.env`",
            )
            .at(file),
        ]))
    }
}

fn malformed(file: &str, why: impl std::fmt::Display) -> PluginError {
    PluginError::InvalidInput(vec![
        Diagnostic::error(format!("not a SOPS file: {why}")).at(file),
    ])
}

fn tampered(file: &str, why: impl std::fmt::Display) -> PluginError {
    PluginError::InvalidInput(vec![
        Diagnostic::error(format!(
            "the SOPS file was changed after it was encrypted, or is damaged: {why}; encrypt it again with `sops`"
        ))
        .at(file),
    ])
}

/// The document of a dotenv file, with the `sops_` keys gathered into a `sops` object as the
/// other formats hold them.
pub fn dotenv(file: &str, text: &str) -> Result<Value, PluginError> {
    let mut data = Map::new();
    let mut metadata = Map::new();
    let mut age: BTreeMap<usize, Map<String, Value>> = BTreeMap::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .ok_or_else(|| malformed(file, format!("line {} is not `KEY=VALUE`", number + 1)))?;
        let value = Value::String(value.replace("\\n", "\n"));
        match key.strip_prefix("sops_") {
            None => {
                data.insert(key.to_owned(), value);
            }
            Some(meta) => match meta.strip_prefix("age__list_") {
                Some(item) => {
                    if let Some((index, field)) = item.split_once("__map_")
                        && let Ok(index) = index.parse::<usize>()
                    {
                        age.entry(index)
                            .or_default()
                            .insert(field.to_owned(), value);
                    }
                }
                None => {
                    metadata.insert(meta.to_owned(), value);
                }
            },
        }
    }
    if !age.is_empty() {
        metadata.insert(
            "age".to_owned(),
            Value::Array(age.into_values().map(Value::Object).collect()),
        );
    }
    if !metadata.is_empty() {
        data.insert("sops".to_owned(), Value::Object(metadata));
    }
    Ok(Value::Object(data))
}

/// The documents of a file.
pub fn documents(file: &str, format: Format, text: &str) -> Result<Vec<Value>, PluginError> {
    match format {
        Format::Json => serde_json::from_str(text)
            .map(|value| vec![value])
            .map_err(|error| malformed(file, format!("JSON: {error}"))),
        Format::Dotenv => dotenv(file, text).map(|value| vec![value]),
        Format::Yaml => tazuna_plugin_common::yaml::documents(text)
            .map(|document| {
                document.map(|d| d.value).map_err(|error| {
                    malformed(
                        file,
                        format!("YAML at line {}: {}", error.line, error.message),
                    )
                })
            })
            .filter(|document| !matches!(document, Ok(Value::Null)))
            .collect(),
    }
}

/// One value SOPS encrypted: `ENC[AES256_GCM,data:…,iv:…,tag:…,type:…]`.
#[derive(Debug)]
pub struct Sealed {
    data: Vec<u8>,
    iv: Vec<u8>,
    tag: Vec<u8>,
    kind: String,
}

/// What is wrong with an `ENC[…]` value or what it opens to. No variant
/// holds a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// A part that is not `name:value` (its name, or its position).
    Part(usize),
    /// A field is missing.
    Missing(&'static str),
    /// A field is not base64.
    NotBase64(&'static str),
    /// The IV or the tag has the wrong length.
    Lengths,
    /// The plaintext does not read as its declared type.
    Type(&'static str),
    /// A type SOPS does not write.
    UnknownType(String),
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Part(index) => {
                write!(f, "part {} of an ENC value is not `name:value`", index + 1)
            }
            Self::Missing(name) => write!(f, "no `{name}` in an ENC value"),
            Self::NotBase64(name) => write!(f, "`{name}` of an ENC value is not base64"),
            Self::Lengths => f.write_str("an ENC value's iv or tag has the wrong length"),
            Self::Type(kind) => write!(f, "a `{kind}` value that does not read as one"),
            Self::UnknownType(kind) => write!(f, "an ENC value of unknown type `{kind}`"),
        }
    }
}

/// The sealed value `text` holds, if it is one.
pub fn sealed(text: &str) -> Option<Result<Sealed, Unreadable>> {
    let inner = text.strip_prefix("ENC[AES256_GCM,")?.strip_suffix(']')?;
    let mut fields: BTreeMap<&str, &str> = BTreeMap::new();
    for (index, part) in inner.split(',').enumerate() {
        let Some((name, value)) = part.split_once(':') else {
            return Some(Err(Unreadable::Part(index)));
        };
        fields.insert(name, value);
    }
    let b64 = |name: &'static str| {
        let text = fields.get(name).ok_or(Unreadable::Missing(name))?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|_| Unreadable::NotBase64(name))
    };
    Some((|| {
        let sealed = Sealed {
            data: b64("data")?,
            iv: b64("iv")?,
            tag: b64("tag")?,
            kind: fields.get("type").copied().unwrap_or("str").to_owned(),
        };
        if sealed.iv.len() != 32 || sealed.tag.len() != 16 {
            return Err(Unreadable::Lengths);
        }
        Ok(sealed)
    })())
}

/// Open `sealed` with the data key, bound to `aad` (the value's path, `a:b:`).
fn open(key: &[u8; 32], sealed: &Sealed, aad: &str) -> Result<Vec<u8>, ()> {
    let cipher = AesGcm::<Aes256, U32>::new(key.into());
    let mut message = sealed.data.clone();
    message.extend_from_slice(&sealed.tag);
    cipher
        .decrypt(
            Nonce::<U32>::from_slice(&sealed.iv),
            Payload {
                msg: &message,
                aad: aad.as_bytes(),
            },
        )
        .map_err(|_| ())
}

/// A decrypted value as SOPS types it, and the bytes SOPS hashes for it.
fn typed(kind: &str, plain: Vec<u8>) -> Result<(Value, Vec<u8>), Unreadable> {
    let text = String::from_utf8(plain.clone());
    Ok(match kind {
        "str" | "time" => {
            let text = text.map_err(|_| Unreadable::Type("str"))?;
            (Value::String(text), plain)
        }
        "bytes" => (
            Value::String(String::from_utf8_lossy(&plain).into_owned()),
            plain,
        ),
        "int" => {
            let number: i64 = text
                .ok()
                .and_then(|t| t.parse().ok())
                .ok_or(Unreadable::Type("int"))?;
            (Value::from(number), number.to_string().into_bytes())
        }
        "float" => {
            let number: f64 = text
                .ok()
                .and_then(|t| t.parse().ok())
                .ok_or(Unreadable::Type("float"))?;
            (
                Number::from_f64(number).map_or(Value::Null, Value::Number),
                format!("{number}").into_bytes(),
            )
        }
        "bool" => {
            let truth = match text.as_deref() {
                Ok("true" | "True" | "TRUE" | "1" | "t" | "T") => true,
                Ok("false" | "False" | "FALSE" | "0" | "f" | "F") => false,
                _ => return Err(Unreadable::Type("bool")),
            };
            (
                Value::Bool(truth),
                if truth {
                    b"True".to_vec()
                } else {
                    b"False".to_vec()
                },
            )
        }
        other => return Err(Unreadable::UnknownType(other.to_owned())),
    })
}

/// The bytes SOPS hashes for a value it did not encrypt.
fn plain_bytes(value: &Value) -> Option<Vec<u8>> {
    match value {
        Value::String(text) => Some(text.as_bytes().to_vec()),
        Value::Bool(true) => Some(b"True".to_vec()),
        Value::Bool(false) => Some(b"False".to_vec()),
        Value::Number(number) => Some(match number.as_i64() {
            Some(int) => int.to_string().into_bytes(),
            None => format!("{}", number.as_f64().unwrap_or_default()).into_bytes(),
        }),
        _ => None,
    }
}

/// Walks a document as SOPS does, decrypting each sealed value and hashing each value for the MAC.
struct Walk<'a> {
    file: &'a str,
    key: &'a [u8; 32],
    hash: Sha512,
    only_encrypted: bool,
}

impl Walk<'_> {
    fn value(&mut self, value: &Value, path: &mut Vec<String>) -> Result<Value, PluginError> {
        match value {
            Value::Object(map) => {
                let mut out = Map::new();
                for (key, item) in map {
                    path.push(key.clone());
                    let opened = self.value(item, path)?;
                    path.pop();
                    out.insert(key.clone(), opened);
                }
                Ok(Value::Object(out))
            }
            // The items of a list keep their list's path.
            Value::Array(items) => items
                .iter()
                .map(|item| self.value(item, path))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
            Value::String(text) => match sealed(text) {
                None => {
                    if !self.only_encrypted {
                        self.hash.update(text.as_bytes());
                    }
                    Ok(value.clone())
                }
                Some(Err(why)) => Err(malformed(
                    self.file,
                    format!("at `{}`: {why}", path.join("/")),
                )),
                Some(Ok(sealed)) => {
                    let aad = format!("{}:", path.join(":"));
                    let plain = open(self.key, &sealed, &aad).map_err(|()| {
                        tampered(
                            self.file,
                            format!("the value at `{}` does not open", path.join("/")),
                        )
                    })?;
                    let (opened, hashed) = typed(&sealed.kind, plain).map_err(|why| {
                        malformed(self.file, format!("at `{}`: {why}", path.join("/")))
                    })?;
                    self.hash.update(&hashed);
                    Ok(opened)
                }
            },
            other => {
                if !self.only_encrypted
                    && let Some(bytes) = plain_bytes(other)
                {
                    self.hash.update(&bytes);
                }
                Ok(other.clone())
            }
        }
    }
}

/// The encrypted data keys of a file's `sops` metadata: one age file per recipient.
pub fn age_files(file: &str, metadata: &Value) -> Result<Vec<Vec<u8>>, PluginError> {
    let files: Vec<Vec<u8>> = metadata["age"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|recipient| recipient["enc"].as_str())
        .map(|enc| enc.as_bytes().to_vec())
        .collect();
    if files.is_empty() {
        let kinds: Vec<&str> = [
            "kms",
            "gcp_kms",
            "azure_kv",
            "hc_vault",
            "pgp",
            "key_groups",
        ]
        .into_iter()
        .filter(|kind| metadata[*kind].as_array().is_some_and(|a| !a.is_empty()))
        .collect();
        return Err(PluginError::InvalidInput(vec![
            Diagnostic::error(if kinds.is_empty() {
                "the SOPS file has no age recipient; encrypt it for an age recipient (`sops --age <recipient>`)".to_owned()
            } else {
                format!(
                    "the SOPS file is encrypted only with {}; this resolver opens age recipients: add one with `sops updatekeys`",
                    kinds.join(", ")
                )
            })
            .at(file),
        ]));
    }
    Ok(files)
}

/// The decrypted content of a SOPS file, its MAC checked. `open_data_key` opens one of the age
/// files of the data key (the host's `age` import).
pub fn decrypt(
    file: &str,
    format: Format,
    text: &str,
    open_data_key: &dyn Fn(&[Vec<u8>]) -> Result<Vec<u8>, PluginError>,
) -> Result<Value, PluginError> {
    let mut documents = documents(file, format, text)?;
    let metadata = documents
        .iter_mut()
        .find_map(|document| document.as_object_mut()?.remove("sops"))
        .ok_or_else(|| malformed(file, "it has no `sops` metadata (is it encrypted?)"))?;
    for document in &mut documents {
        if let Some(map) = document.as_object_mut() {
            map.remove("sops");
        }
    }
    let data_key = open_data_key(&age_files(file, &metadata)?)?;
    let key: [u8; 32] = data_key
        .try_into()
        .map_err(|_| malformed(file, "its data key is not 32 bytes"))?;
    let only_encrypted = metadata["mac_only_encrypted"] == Value::Bool(true)
        || metadata["mac_only_encrypted"] == "true";
    let mut walk = Walk {
        file,
        key: &key,
        hash: Sha512::new(),
        only_encrypted,
    };
    if only_encrypted {
        walk.hash.update(MAC_ONLY_ENCRYPTED);
    }
    let mut opened = Vec::new();
    for document in &documents {
        opened.push(walk.value(document, &mut Vec::new())?);
    }
    let computed: String = walk
        .hash
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02X}"))
        .collect();
    let mac = metadata["mac"]
        .as_str()
        .and_then(sealed)
        .and_then(Result::ok)
        .ok_or_else(|| malformed(file, "its `sops.mac` is missing or not an ENC value"))?;
    let modified = metadata["lastmodified"]
        .as_str()
        .ok_or_else(|| malformed(file, "its `sops.lastmodified` is missing"))?;
    let stored =
        open(&key, &mac, modified).map_err(|()| tampered(file, "the MAC does not open"))?;
    if stored != computed.as_bytes() {
        return Err(tampered(file, "the MAC does not match the values"));
    }
    Ok(match opened.len() {
        1 => opened.remove(0),
        _ => Value::Array(opened),
    })
}

/// One reference, read: the file and the key.
pub fn parse(reference: &str) -> Result<(String, Option<String>), PluginError> {
    let (file, key) = match reference.split_once('#') {
        Some((file, key)) => (file, Some(key)),
        None => (reference, None),
    };
    let file = tazuna_plugin_common::paths::inside("", file, "reference")
        .map_err(|diagnostic| PluginError::InvalidInput(vec![diagnostic]))?;
    let file = file.trim_start_matches('/').to_owned();
    if file.is_empty() {
        return Err(PluginError::not_found(
            "a reference with no file (write `ref+<provider>:<file>#<key>`)",
        ));
    }
    // `a/b` names a path of keys, `/a/b` a JSON pointer.
    let key = key.filter(|k| !k.is_empty()).map(|key| {
        if key.starts_with('/') || !key.contains('/') {
            key.to_owned()
        } else {
            format!("/{key}")
        }
    });
    Ok((file, key))
}

/// The `sops` secret resolver.
pub struct Sops;

impl SecretResolver for Sops {
    type Config = Config;
    const SCHEMES: &'static [&'static str] = &["sops"];

    fn info() -> PluginInfo {
        PluginInfo::new("sops", env!("CARGO_PKG_VERSION")).with_description(
            "Values of SOPS files in the repository; the host opens the data key with your age identities.",
        )
    }

    fn resolve(config: &Config, reference: &str) -> Result<Vec<u8>, PluginError> {
        Self::resolve_all(config, &[reference.to_owned()])
            .pop()
            .unwrap_or_else(|| Err(PluginError::other("no answer")))
    }

    fn resolve_all(_: &Config, references: &[String]) -> Vec<Result<Vec<u8>, PluginError>> {
        let mut files: BTreeMap<String, Result<Value, PluginError>> = BTreeMap::new();
        references
            .iter()
            .map(|reference| {
                let (file, key) = parse(reference)?;
                let content = files
                    .entry(file.clone())
                    .or_insert_with(|| read(&file))
                    .clone()?;
                match key {
                    Some(key) => {
                        tazuna_sdk::secret::pick(&format!("SOPS file `{file}`"), &content, &key)
                    }
                    None => Ok(content.to_string().into_bytes()),
                }
            })
            .collect()
    }
}

/// The file `file` (below the provider's directory), read and decrypted.
fn read(file: &str) -> Result<Value, PluginError> {
    let format = format_of(file)?;
    let path = format!("{PROVIDER_DIR}/{file}");
    let size = std::fs::metadata(&path)
        .map_err(|error| PluginError::not_found(format_args!("SOPS file `{file}`: {error}")))?
        .len();
    if size > MAX_FILE {
        return Err(malformed(
            file,
            format!("it has {size} bytes, more than {MAX_FILE}"),
        ));
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|error| malformed(file, format!("it cannot be read as text: {error}")))?;
    decrypt(file, format, &text, &|files| tazuna_sdk::age::open(files))
}

tazuna_sdk::export_secret_resolver!(Sops);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_named_as_sops_names_them() {
        assert_eq!(format_of("a/b.enc.yaml").unwrap(), Format::Yaml);
        assert_eq!(format_of("b.yml").unwrap(), Format::Yaml);
        assert_eq!(format_of("c.json").unwrap(), Format::Json);
        assert_eq!(format_of(".env").unwrap(), Format::Dotenv);
        assert_eq!(format_of("prod.env").unwrap(), Format::Dotenv);
        assert_eq!(format_of(".env.prod").unwrap(), Format::Dotenv);
        assert!(format_of("secrets.ini").is_err());
    }

    #[test]
    fn a_reference_names_a_file_inside_and_a_key_path() {
        assert_eq!(
            parse("secrets/app.yaml#db/password").unwrap(),
            ("secrets/app.yaml".into(), Some("/db/password".into()))
        );
        assert_eq!(
            parse("./app.yaml#token").unwrap(),
            ("app.yaml".into(), Some("token".into()))
        );
        assert!(parse("../outside.yaml#k").is_err());
        assert!(parse("/etc/shadow#k").is_err());
        assert!(parse("#k").is_err());
    }

    #[test]
    fn enc_values_are_read_and_bad_ones_named_without_their_content() {
        let good = "ENC[AES256_GCM,data:AAAA,iv:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=,tag:AAAAAAAAAAAAAAAAAAAAAA==,type:str]";
        let value = sealed(good).unwrap().unwrap();
        assert_eq!(
            (value.iv.len(), value.tag.len(), value.kind.as_str()),
            (32, 16, "str")
        );
        assert!(sealed("plain").is_none());
        assert!(
            sealed("ENC[AES256_GCM,data:!!,iv:x,tag:y,type:str]")
                .unwrap()
                .is_err()
        );
        assert!(sealed("ENC[AES256_GCM,garbage]").unwrap().is_err());
    }

    #[test]
    fn dotenv_metadata_is_gathered_as_the_other_formats_hold_it() {
        let text = "TOKEN=ENC[x]\n#comment\nsops_age__list_0__map_enc=-----BEGIN\\nA\\n\nsops_age__list_0__map_recipient=age1x\nsops_mac=ENC[m]\nsops_lastmodified=2026-12-07T00:00:00Z\n";
        let document = dotenv(".env", text).unwrap();
        assert_eq!(document["TOKEN"], "ENC[x]");
        assert_eq!(document["sops"]["age"][0]["enc"], "-----BEGIN\nA\n");
        assert_eq!(document["sops"]["mac"], "ENC[m]");
        assert!(dotenv(".env", "no equals sign").is_err());
    }

    #[test]
    fn a_file_without_age_recipients_says_what_it_has() {
        let error = age_files("a.yaml", &serde_json::json!({"kms": [{"arn": "x"}]})).unwrap_err();
        assert!(format!("{error:?}").contains("kms"));
    }
}
