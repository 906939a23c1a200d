//! The `outbound` host import: one HTTP request a secret resolver asks the
//! host to send to its store.
//!
//! Where it may go is the host's decision, made from an allow-list: for a
//! built-in, the hosts (and ports) the provider's config names as URLs; and
//! the `net:<host>[:<port>]` capabilities in effect (a built-in's requests, a
//! third-party resolver's grants; `net:*.example.com` covers every name below
//! `example.com`, port 443 unless one is named). Only `https`, but to a loopback host; only `GET` and
//! `POST`; no redirect; a body of at most [`MAX_BODY`] each way. With a
//! signing, the host signs with credentials the plugin never sees
//! ([`super::aws`]).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::aws;
use super::bindings::outbound::{Request, Response, Signing};
use super::bindings::types::PluginError;
use super::capabilities::Capabilities;
use super::jail::{Endpoint, endpoint_of_url};

/// The most bytes of a request's or a response's body.
pub const MAX_BODY: usize = 16 * 1024 * 1024;

/// The capability prefix of a host a resolver may reach.
const NET: &str = "net:";

/// The capability a third-party resolver needs for the host to sign its
/// requests with the user's AWS credentials.
pub const SIGN_AWS: &str = "sign:aws-sigv4";

/// The names AWS serves its APIs under: the only hosts a signed request may
/// go to, besides an endpoint a built-in's provider names.
const AWS_SUFFIXES: &[&str] = &[".amazonaws.com", ".amazonaws.com.cn", ".api.aws"];

/// Where one call's requests may go.
#[derive(Debug, Clone, Default)]
pub struct Allowed {
    /// Named by the provider's config, exactly.
    named: Vec<Endpoint>,
    /// `net:` capabilities in effect: a host, `*.suffix`, either with
    /// `:port`.
    granted: Vec<String>,
    /// Whether [`SIGN_AWS`] is in effect (a built-in asks for none: it
    /// signs only toward AWS or the endpoint its provider names).
    sign_aws: bool,
}

impl Allowed {
    /// The allow-list of a call with this config's strings and these
    /// capabilities.
    pub fn new(config_strings: &[String], capabilities: &Capabilities) -> Self {
        Self {
            named: config_strings
                .iter()
                .filter_map(|text| endpoint_of_url(text))
                .collect(),
            granted: capabilities
                .iter()
                .filter_map(|capability| capability.strip_prefix(NET))
                .map(str::to_owned)
                .collect(),
            sign_aws: capabilities.allows(SIGN_AWS),
        }
    }

    /// Whether a request to `host:port` may carry a signature: toward AWS's
    /// own names, or an endpoint the provider's config names (a built-in's
    /// VPC endpoint or local stand-in). A signature made for any other host
    /// would hand that host the use of the user's credentials.
    fn may_sign(&self, host: &str, port: u16) -> bool {
        let host = host.to_ascii_lowercase();
        self.named
            .iter()
            .any(|e| e.host.eq_ignore_ascii_case(&host) && e.port == port)
            || AWS_SUFFIXES.iter().any(|suffix| host.ends_with(suffix))
    }

    /// Whether `host:port` is on the list.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        let host = host.to_ascii_lowercase();
        self.named
            .iter()
            .any(|e| e.host.eq_ignore_ascii_case(&host) && e.port == port)
            || self.granted.iter().any(|grant| {
                let (pattern, wanted_port) = match grant.rsplit_once(':') {
                    Some((pattern, port)) => (pattern, port.parse::<u16>().ok()),
                    None => (grant.as_str(), None),
                };
                let pattern = pattern.to_ascii_lowercase();
                let name = match pattern.strip_prefix("*.") {
                    Some(suffix) => host
                        .strip_suffix(suffix)
                        .is_some_and(|head| head.ends_with('.') && head.len() > 1),
                    None => host == pattern,
                };
                name && wanted_port.is_none_or(|p| p == port)
                    && (wanted_port.is_some() || port == 443)
            })
    }
}

/// What a request needs of its call.
pub struct Context<'a> {
    /// The plugin, for messages.
    pub plugin: &'a str,
    /// Whether it is a built-in.
    pub builtin: bool,
    pub allowed: &'a Allowed,
    /// What is left of the call's time.
    pub timeout: Duration,
}

fn denied(message: String) -> PluginError {
    PluginError::CapabilityDenied(message)
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Check `request` against the call, sign it if asked, send it.
pub fn send(ctx: &Context<'_>, request: Request) -> Result<Response, PluginError> {
    let url = reqwest::Url::parse(&request.url)
        .map_err(|error| PluginError::Other(format!("`{}` is not a URL: {error}", request.url)))?;
    let host = url.host_str().unwrap_or_default().to_owned();
    let port = url.port_or_known_default().unwrap_or(443);
    match url.scheme() {
        "https" if !host.is_empty() => {}
        "http" if is_loopback(&host) => {}
        other => {
            return Err(denied(format!(
                "plugin `{}` asked for `{other}://{host}`: a store is reached over https (plain http only on loopback)",
                ctx.plugin
            )));
        }
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(denied(format!(
            "plugin `{}` put credentials in a URL; the host signs requests itself",
            ctx.plugin
        )));
    }
    if !ctx.allowed.allows(&host, port) {
        return Err(denied(format!(
            "plugin `{}` may not reach `{host}:{port}`: a resolver reaches only the hosts its provider's config names, and the `net:<host>` capabilities in effect",
            ctx.plugin
        )));
    }
    let method = match request.method.as_str() {
        "GET" => reqwest::Method::GET,
        "POST" => reqwest::Method::POST,
        other => {
            return Err(denied(format!(
                "plugin `{}` asked for method `{other}`; a resolver reads with `GET` and `POST`",
                ctx.plugin
            )));
        }
    };
    if request.body.len() > MAX_BODY {
        return Err(PluginError::Other(format!(
            "a request body of {} bytes is more than the {MAX_BODY} a resolver may send",
            request.body.len()
        )));
    }
    let mut headers: Vec<(String, String)> = Vec::new();
    for (name, value) in request.headers {
        let lower = name.to_ascii_lowercase();
        // What the host sets, or what would say something else than the URL.
        if matches!(
            lower.as_str(),
            "host" | "authorization" | "content-length" | "transfer-encoding" | "connection"
        ) || lower.starts_with("x-amz-") && lower != "x-amz-target"
            || lower.starts_with("proxy-")
        {
            return Err(denied(format!(
                "plugin `{}` may not set the header `{name}`; the host sets it",
                ctx.plugin
            )));
        }
        headers.push((name, value));
    }
    if let Some(Signing::AwsSigv4(scope)) = &request.sign {
        if !ctx.allowed.may_sign(&host, port) || !ctx.builtin && !ctx.allowed.sign_aws {
            return Err(denied(format!(
                "plugin `{}` asked the host to sign a request to `{host}:{port}` with your AWS credentials: the host signs only toward AWS ({}) or an endpoint a built-in's provider names, and a third-party resolver needs the grant `{SIGN_AWS}`",
                ctx.plugin,
                AWS_SUFFIXES.join(", ")
            )));
        }
        let credentials = aws_credentials(scope.profile.as_deref(), ctx.timeout)?;
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.clone(),
        };
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs());
        let added = aws::sign(
            &credentials,
            &scope.service,
            &scope.region,
            method.as_str(),
            &authority,
            url.path(),
            url.query().unwrap_or_default(),
            &headers,
            &request.body,
            unix,
        );
        headers.extend(added);
    }
    let response = http(method, url.clone(), &headers, request.body, ctx.timeout)
        .map_err(|error| PluginError::Network(format!("`{host}:{port}`: {error}")))?;
    Ok(response)
}

/// The region the AWS chain names for `profile`.
pub fn aws_region(profile: Option<&str>) -> Option<String> {
    aws::region(&aws::ProcessEnvironment, profile)
}

/// The AWS chain's credentials for `profile`, a web identity exchanged at
/// STS by this host.
fn aws_credentials(
    profile: Option<&str>,
    timeout: Duration,
) -> Result<aws::Credentials, PluginError> {
    let sts = |endpoint: &str, token: &str, role: &str, session: &str| {
        let failed =
            |why: String| aws::CredentialsError::WebIdentity(format!("`{endpoint}`: {why}"));
        let url = reqwest::Url::parse(endpoint).map_err(|error| failed(error.to_string()))?;
        let form = aws::web_identity_form(token, role, session);
        let response = http(
            reqwest::Method::POST,
            url,
            &[(
                "content-type".to_owned(),
                "application/x-www-form-urlencoded".to_owned(),
            )],
            form.into_bytes(),
            timeout,
        )
        .map_err(|error| failed(error.to_string()))?;
        aws::web_identity_answer(&String::from_utf8_lossy(&response.body))
    };
    aws::credentials(&aws::ProcessEnvironment, profile, &sts)
        .map_err(|error| PluginError::CapabilityDenied(error.to_string()))
}

/// Why a request got no answer.
#[derive(Debug, thiserror::Error)]
enum SendError {
    /// The client could not be made, or the request not sent or read (with
    /// its causes).
    #[error("{0}")]
    Transport(String),
    /// The answer was longer than [`MAX_BODY`].
    #[error("an answer of more than {MAX_BODY} bytes")]
    TooLong,
}

/// Send one request, no redirect followed, the body bounded.
fn http(
    method: reqwest::Method,
    url: reqwest::Url,
    headers: &[(String, String)],
    body: Vec<u8>,
    timeout: Duration,
) -> Result<Response, SendError> {
    // One client for the process: its connections (and TLS sessions) are
    // kept between the requests of a run, as a store's SDK keeps them.
    static CLIENT: std::sync::OnceLock<Option<reqwest::Client>> = std::sync::OnceLock::new();
    let client = CLIENT
        .get_or_init(|| {
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy()
                .build()
                .ok()
        })
        .clone()
        .ok_or_else(|| SendError::Transport("no HTTP client could be made".to_owned()))?;
    wasmtime_wasi::runtime::in_tokio(async move {
        let mut builder = client.request(method, url).timeout(timeout).body(body);
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        let mut response = builder.send().await.map_err(|error| {
            let mut message = error.to_string();
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                message.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            SendError::Transport(message)
        })?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_owned(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect();
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|error| SendError::Transport(error.to_string()))?
        {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(SendError::TooLong);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Response {
            status,
            headers,
            body,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(named: &[&str], granted: &[&str]) -> Allowed {
        let strings: Vec<String> = named.iter().map(|s| (*s).to_owned()).collect();
        let grants: Vec<String> = granted.iter().map(|g| format!("net:{g}")).collect();
        Allowed::new(&strings, &Capabilities::effective(&grants, &grants))
    }

    #[test]
    fn only_named_hosts_and_granted_patterns_are_reached() {
        let list = allowed(
            &[
                "https://vault.example.com:8200",
                "not a url",
                "http://127.0.0.1:5000",
            ],
            &["*.amazonaws.com", "api.example.org:8443"],
        );
        assert!(list.allows("vault.example.com", 8200));
        assert!(!list.allows("vault.example.com", 443), "another port");
        assert!(list.allows("127.0.0.1", 5000));
        assert!(list.allows("secretsmanager.eu-west-1.amazonaws.com", 443));
        assert!(!list.allows("secretsmanager.eu-west-1.amazonaws.com", 8080));
        assert!(
            !list.allows("amazonaws.com", 443),
            "the suffix itself is no name below it"
        );
        assert!(!list.allows("evilamazonaws.com", 443));
        assert!(!list.allows("amazonaws.com.evil.example", 443));
        assert!(list.allows("api.example.org", 8443));
        assert!(!list.allows("api.example.org", 443));
        assert!(!list.allows("example.org", 443));
        assert!(
            list.allows("SecretsManager.US-East-1.AmazonAWS.com", 443),
            "names ignore case"
        );
    }

    fn ctx(list: &Allowed) -> Context<'_> {
        Context {
            plugin: "probe",
            builtin: false,
            allowed: list,
            timeout: Duration::from_secs(5),
        }
    }

    fn request(method: &str, url: &str, headers: &[(&str, &str)]) -> Request {
        Request {
            method: method.to_owned(),
            url: url.to_owned(),
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            body: Vec::new(),
            sign: None,
        }
    }

    /// Each way out a resolver might try, refused before anything is sent.
    #[test]
    fn what_leaves_the_list_is_refused_before_a_byte_is_sent() {
        let list = allowed(&["http://127.0.0.1:9", "https://store.example.com"], &[]);
        let refused = |request: Request| match send(&ctx(&list), request) {
            Err(PluginError::CapabilityDenied(message)) => message,
            other => panic!("{other:?}"),
        };
        assert!(
            refused(request("GET", "https://elsewhere.example.com/", &[]))
                .contains("may not reach")
        );
        assert!(refused(request("GET", "http://store.example.com/", &[])).contains("https"));
        assert!(
            refused(request("GET", "https://store.example.com:8443/", &[]))
                .contains("may not reach")
        );
        assert!(
            refused(request("GET", "https://u:p@store.example.com/", &[])).contains("credentials")
        );
        assert!(
            refused(request(
                "GET",
                "https://store.example.com@elsewhere.example.com/",
                &[]
            ))
            .contains("credentials")
        );
        assert!(refused(request("PUT", "https://store.example.com/", &[])).contains("method"));
        assert!(refused(request("DELETE", "https://store.example.com/", &[])).contains("method"));
        for header in [
            "Host",
            "authorization",
            "X-Amz-Security-Token",
            "Proxy-Authorization",
            "Transfer-Encoding",
        ] {
            assert!(
                refused(request(
                    "GET",
                    "https://store.example.com/",
                    &[(header, "x")]
                ))
                .contains("header"),
                "{header}"
            );
        }
        assert!(refused(request("GET", "file:///etc/passwd", &[])).contains("https"));
        assert!(refused(request("GET", "https://[::1]:9/", &[])).contains("may not reach"));
        // A signature goes only toward AWS, and from a third party only with its grant.
        let mut signed = request("GET", "https://store.example.com/", &[]);
        signed.sign = Some(Signing::AwsSigv4(
            super::super::bindings::outbound::AwsSigning {
                service: "sts".into(),
                region: "us-east-1".into(),
                profile: None,
            },
        ));
        assert!(refused(signed.clone()).contains("sign"));
        let aws = allowed(&[], &["*.amazonaws.com"]);
        let mut to_aws = signed.clone();
        to_aws.url = "https://sts.amazonaws.com/".into();
        match send(&ctx(&aws), to_aws) {
            Err(PluginError::CapabilityDenied(message)) => {
                assert!(message.contains(SIGN_AWS), "{message}")
            }
            other => panic!("{other:?}"),
        }
        assert!(aws.may_sign("secretsmanager.eu-west-1.amazonaws.com", 443));
        assert!(!aws.may_sign("amazonaws.com.evil.example", 443));
        assert!(!allowed(&[], &["attacker.example"]).may_sign("attacker.example", 443));
        assert!(
            allowed(&["http://127.0.0.1:9/"], &[]).may_sign("127.0.0.1", 9),
            "a named endpoint"
        );
        let mut flood = request("POST", "https://store.example.com/", &[]);
        flood.body = vec![0; MAX_BODY + 1];
        assert!(
            matches!(send(&ctx(&list), flood), Err(PluginError::Other(m)) if m.contains("more than"))
        );
    }
}
