//! AWS credentials and Signature Version 4, on the host side of the
//! `outbound` import: a resolver asks for a signed request and never sees a
//! key.
//!
//! The credentials come from the standard chain, in its order: the
//! environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//! `AWS_SESSION_TOKEN`); the shared credentials and config files
//! (`AWS_SHARED_CREDENTIALS_FILE`, `AWS_CONFIG_FILE`, else `~/.aws/`) for the
//! profile (`AWS_PROFILE`, else `default`); a web identity token
//! (`AWS_WEB_IDENTITY_TOKEN_FILE` with `AWS_ROLE_ARN`, as IRSA and EKS pod
//! identity set them) exchanged at STS (`AWS_ENDPOINT_URL_STS` or
//! `AWS_ENDPOINT_URL` when set). Nothing here logs a key or a token.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};

pub use super::environment::{Environment, ProcessEnvironment};
use sha2::{Digest, Sha256};

/// Credentials to sign with. `Debug` shows the key id only.
#[derive(Clone)]
pub struct Credentials {
    access_key: String,
    secret_key: String,
    session_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key", &self.access_key)
            .finish_non_exhaustive()
    }
}

/// Why no credentials were found or taken.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// The chain has nothing for the profile.
    #[error(
        "no AWS credentials: none in the environment (`AWS_ACCESS_KEY_ID`), none for profile `{profile}` in the shared files, no web identity token (`AWS_WEB_IDENTITY_TOKEN_FILE`)"
    )]
    Missing {
        /// The profile looked up.
        profile: String,
    },
    /// STS refused the web identity token, or could not be reached.
    #[error("AWS STS did not take the web identity token: {0}")]
    WebIdentity(String),
}

/// The profile in use: `profile`, else `AWS_PROFILE`, else `default`.
fn profile_name(env: &dyn Environment, profile: Option<&str>) -> String {
    profile
        .map(str::to_owned)
        .or_else(|| env.var("AWS_PROFILE"))
        .unwrap_or_else(|| "default".to_owned())
}

fn home_file(env: &dyn Environment, variable: &str, name: &str) -> Option<PathBuf> {
    env.var(variable)
        .map(PathBuf::from)
        .or_else(|| env.home().map(|home| home.join(".aws").join(name)))
}

/// The keys of `[section]` in an INI file such as `~/.aws/credentials`.
fn ini_section(path: Option<PathBuf>, section: &str) -> HashMap<String, String> {
    let Some(text) = path.and_then(|path| super::environment::read_credential_text(&path).ok())
    else {
        return HashMap::new();
    };
    let mut current = String::new();
    let mut keys = HashMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = name.trim().to_owned();
        } else if current == section
            && let Some((key, value)) = line.split_once('=')
        {
            keys.insert(key.trim().to_owned(), value.trim().to_owned());
        }
    }
    keys
}

/// The profile's keys in the config file (`[profile x]`, or `[default]`).
fn config_profile(env: &dyn Environment, profile: &str) -> HashMap<String, String> {
    let section = if profile == "default" {
        "default".to_owned()
    } else {
        format!("profile {profile}")
    };
    ini_section(home_file(env, "AWS_CONFIG_FILE", "config"), &section)
}

/// The region the chain names for `profile`, if any.
pub fn region(env: &dyn Environment, profile: Option<&str>) -> Option<String> {
    env.var("AWS_REGION")
        .or_else(|| env.var("AWS_DEFAULT_REGION"))
        .or_else(|| {
            let profile = profile_name(env, profile);
            config_profile(env, &profile).remove("region")
        })
}

/// Exchanges a web identity token for credentials: the STS endpoint, the
/// token, the role, the session name.
pub type Sts<'a> = &'a dyn Fn(&str, &str, &str, &str) -> Result<Credentials, CredentialsError>;

/// The credentials of the standard chain for `profile`; `sts` exchanges a
/// web identity token for credentials.
pub fn credentials(
    env: &dyn Environment,
    profile: Option<&str>,
    sts: Sts<'_>,
) -> Result<Credentials, CredentialsError> {
    if let (Some(access_key), Some(secret_key)) = (
        env.var("AWS_ACCESS_KEY_ID"),
        env.var("AWS_SECRET_ACCESS_KEY"),
    ) {
        return Ok(Credentials {
            access_key,
            secret_key,
            session_token: env.var("AWS_SESSION_TOKEN"),
        });
    }
    let profile = profile_name(env, profile);
    let mut keys = ini_section(
        home_file(env, "AWS_SHARED_CREDENTIALS_FILE", "credentials"),
        &profile,
    );
    let config = config_profile(env, &profile);
    for (key, value) in &config {
        keys.entry(key.clone()).or_insert_with(|| value.clone());
    }
    if let (Some(access_key), Some(secret_key)) = (
        keys.get("aws_access_key_id"),
        keys.get("aws_secret_access_key"),
    ) {
        return Ok(Credentials {
            access_key: access_key.clone(),
            secret_key: secret_key.clone(),
            session_token: keys.get("aws_session_token").cloned(),
        });
    }
    let token_file = env
        .var("AWS_WEB_IDENTITY_TOKEN_FILE")
        .or_else(|| keys.get("web_identity_token_file").cloned());
    let role = env
        .var("AWS_ROLE_ARN")
        .or_else(|| keys.get("role_arn").cloned());
    if let (Some(token_file), Some(role)) = (token_file, role) {
        let token = super::environment::read_credential_text(Path::new(&token_file))
            .map_err(|error| CredentialsError::WebIdentity(format!("`{token_file}`: {error}")))?;
        let region = region(env, Some(&profile)).unwrap_or_else(|| "us-east-1".to_owned());
        let endpoint = env
            .var("AWS_ENDPOINT_URL_STS")
            .or_else(|| env.var("AWS_ENDPOINT_URL"))
            .unwrap_or_else(|| format!("https://sts.{region}.amazonaws.com"));
        let session = env
            .var("AWS_ROLE_SESSION_NAME")
            .unwrap_or_else(|| "tazuna".to_owned());
        return sts(&endpoint, token.trim(), &role, &session);
    }
    Err(CredentialsError::Missing { profile })
}

/// The form body of STS `AssumeRoleWithWebIdentity`.
pub fn web_identity_form(token: &str, role: &str, session: &str) -> String {
    format!(
        "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn={}&RoleSessionName={}&WebIdentityToken={}",
        encode(role, true),
        encode(session, true),
        encode(token, true)
    )
}

/// The credentials in STS's XML answer.
pub fn web_identity_answer(xml: &str) -> Result<Credentials, CredentialsError> {
    let field = |name: &str| {
        let open = format!("<{name}>");
        let close = format!("</{name}>");
        let start = xml.find(&open)? + open.len();
        let end = xml[start..].find(&close)? + start;
        Some(xml[start..end].trim().to_owned())
    };
    match (
        field("AccessKeyId"),
        field("SecretAccessKey"),
        field("SessionToken"),
    ) {
        (Some(access_key), Some(secret_key), session_token) => Ok(Credentials {
            access_key,
            secret_key,
            session_token,
        }),
        _ => Err(CredentialsError::WebIdentity(
            field("Message").unwrap_or_else(|| "an answer without credentials".to_owned()),
        )),
    }
}

/// `text` percent-encoded as SigV4 wants: unreserved characters as they are,
/// and `/` too unless `slash`.
fn encode(text: &str, slash: bool) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char);
            }
            b'/' if !slash => out.push('/'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

fn hmac(key: &[u8], data: &str) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(data.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// `YYYYMMDDTHHMMSSZ` of `unix` seconds.
pub fn amz_date(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let seconds = unix % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        seconds / 3_600,
        seconds / 60 % 60,
        seconds % 60
    )
}

/// Sign a request: the headers to add (`x-amz-date`, `x-amz-content-sha256`,
/// `x-amz-security-token` when there is a session, `authorization`).
/// `headers` are those sent besides; `host` is the URL's authority.
#[allow(clippy::too_many_arguments)]
pub fn sign(
    credentials: &Credentials,
    service: &str,
    region: &str,
    method: &str,
    host: &str,
    path: &str,
    query: &str,
    headers: &[(String, String)],
    body: &[u8],
    unix: u64,
) -> Vec<(String, String)> {
    let date = amz_date(unix);
    let day = &date[..8];
    let payload = hex::encode(Sha256::digest(body));
    let mut added = vec![
        ("x-amz-date".to_owned(), date.clone()),
        ("x-amz-content-sha256".to_owned(), payload.clone()),
    ];
    if let Some(token) = &credentials.session_token {
        added.push(("x-amz-security-token".to_owned(), token.clone()));
    }
    let mut signed: Vec<(String, String)> = headers
        .iter()
        .chain(&added)
        .map(|(name, value)| {
            (
                name.to_ascii_lowercase(),
                value.split_whitespace().collect::<Vec<_>>().join(" "),
            )
        })
        .chain([("host".to_owned(), host.to_owned())])
        .collect();
    signed.sort();
    let canonical_headers: String = signed
        .iter()
        .map(|(name, value)| format!("{name}:{value}\n"))
        .collect();
    let signed_names = signed
        .iter()
        .map(|(name, _)| name.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let mut pairs: Vec<(String, String)> = query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (encode(key, true), encode(value, true))
        })
        .collect();
    pairs.sort();
    let canonical_query = pairs
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect::<Vec<_>>()
        .join("&");
    let path = if path.is_empty() { "/" } else { path };
    let canonical = format!(
        "{method}\n{}\n{canonical_query}\n{canonical_headers}\n{signed_names}\n{payload}",
        encode(path, false)
    );
    let scope = format!("{day}/{region}/{service}/aws4_request");
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{date}\n{scope}\n{}",
        hex::encode(Sha256::digest(canonical.as_bytes()))
    );
    let key = [day, region, service, "aws4_request"].iter().fold(
        format!("AWS4{}", credentials.secret_key).into_bytes(),
        |key, part| hmac(&key, part),
    );
    let signature = hex::encode(hmac(&key, &to_sign));
    added.push((
        "authorization".to_owned(),
        format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_names}, Signature={signature}",
            credentials.access_key
        ),
    ));
    added
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&'static str, &str)]) -> HashMap<&'static str, String> {
        pairs.iter().map(|(k, v)| (*k, (*v).to_owned())).collect()
    }

    fn no_sts(_: &str, _: &str, _: &str, _: &str) -> Result<Credentials, CredentialsError> {
        Err(CredentialsError::WebIdentity("no STS here".to_owned()))
    }

    /// The example of AWS's SigV4 documentation ("GET Object" of the S3
    /// signing examples), signed here to the same signature.
    #[test]
    fn a_request_is_signed_as_aws_documents() {
        let credentials = Credentials {
            access_key: "AKIAIOSFODNN7EXAMPLE".into(),
            secret_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
        };
        // 2013-05-24T00:00:00Z
        let added = sign(
            &credentials,
            "s3",
            "us-east-1",
            "GET",
            "examplebucket.s3.amazonaws.com",
            "/test.txt",
            "",
            &[("Range".to_owned(), "bytes=0-9".to_owned())],
            b"",
            1_369_353_600,
        );
        let authorization = &added.iter().find(|(k, _)| k == "authorization").unwrap().1;
        assert_eq!(
            authorization,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
        assert_eq!(amz_date(1_369_353_600), "20130524T000000Z");
        assert_eq!(amz_date(951_782_400), "20000229T000000Z", "a leap day");
    }

    #[test]
    fn the_chain_takes_the_environment_then_the_profile_then_a_web_identity() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("credentials");
        let config = dir.path().join("config");
        std::fs::write(
            &shared,
            "[default]\naws_access_key_id = AKIDEFAULT\naws_secret_access_key = s1\n[ops]\naws_access_key_id=AKIDOPS\naws_secret_access_key=s2\naws_session_token=t2\n",
        )
        .unwrap();
        std::fs::write(
            &config,
            "[profile ops]\nregion = eu-west-1\n[profile web]\nrole_arn = arn:aws:iam::1:role/r\nweb_identity_token_file = TOKEN\n",
        )
        .unwrap();
        let files = |extra: &[(&'static str, &str)]| {
            let mut pairs = vec![
                ("AWS_SHARED_CREDENTIALS_FILE", shared.to_str().unwrap()),
                ("AWS_CONFIG_FILE", config.to_str().unwrap()),
            ];
            pairs.extend_from_slice(extra);
            env(&pairs)
        };
        let from_env = files(&[
            ("AWS_ACCESS_KEY_ID", "AKIDENV"),
            ("AWS_SECRET_ACCESS_KEY", "s0"),
        ]);
        assert_eq!(credentials_of(&from_env, None).access_key, "AKIDENV");
        assert_eq!(credentials_of(&files(&[]), None).access_key, "AKIDEFAULT");
        let ops = credentials_of(&files(&[]), Some("ops"));
        assert_eq!(
            (ops.access_key.as_str(), ops.session_token.as_deref()),
            ("AKIDOPS", Some("t2"))
        );
        assert_eq!(
            credentials_of(&files(&[("AWS_PROFILE", "ops")]), None).access_key,
            "AKIDOPS"
        );
        assert_eq!(
            region(&files(&[]), Some("ops")).as_deref(),
            Some("eu-west-1")
        );
        assert_eq!(
            region(&files(&[("AWS_REGION", "ap-northeast-1")]), Some("ops")).as_deref(),
            Some("ap-northeast-1")
        );

        let token = dir.path().join("token");
        std::fs::write(&token, "eyJ.token\n").unwrap();
        let web = files(&[
            ("AWS_WEB_IDENTITY_TOKEN_FILE", token.to_str().unwrap()),
            ("AWS_ROLE_ARN", "arn:aws:iam::1:role/r"),
            ("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:5000"),
            ("AWS_PROFILE", "none"),
        ]);
        let asked = std::cell::RefCell::new(Vec::new());
        let sts = |endpoint: &str, token: &str, role: &str, session: &str| {
            asked
                .borrow_mut()
                .push(format!("{endpoint} {token} {role} {session}"));
            web_identity_answer(
                "<AssumeRoleWithWebIdentityResponse><Credentials><AccessKeyId>ASIAWEB</AccessKeyId><SecretAccessKey>s3</SecretAccessKey><SessionToken>t3</SessionToken></Credentials></AssumeRoleWithWebIdentityResponse>",
            )
        };
        let taken = credentials(&web, None, &sts).unwrap();
        assert_eq!(taken.access_key, "ASIAWEB");
        assert_eq!(
            asked.borrow().as_slice(),
            ["http://127.0.0.1:5000 eyJ.token arn:aws:iam::1:role/r tazuna"]
        );
        assert!(
            !format!("{taken:?}").contains("s3"),
            "Debug shows no secret"
        );

        let none = files(&[("AWS_PROFILE", "nobody")]);
        let error = credentials(&none, None, &no_sts).unwrap_err().to_string();
        assert!(error.contains("profile `nobody`"), "{error}");
    }

    fn credentials_of(env: &HashMap<&'static str, String>, profile: Option<&str>) -> Credentials {
        credentials(env, profile, &no_sts).unwrap()
    }

    #[test]
    fn the_web_identity_form_is_encoded() {
        assert_eq!(
            web_identity_form("a.b/c+d", "arn:aws:iam::1:role/r", "s"),
            "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fr&RoleSessionName=s&WebIdentityToken=a.b%2Fc%2Bd"
        );
        assert!(
            web_identity_answer("<ErrorResponse><Message>denied</Message></ErrorResponse>")
                .unwrap_err()
                .to_string()
                .contains("denied")
        );
    }
}
