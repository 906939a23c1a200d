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
//! ([`super::aws`]); toward a Vault, it logs in and adds the token itself,
//! and lets a resolver read only from KV mounts ([`super::vault`]). A plugin
//! sets only the headers of [`PLUGIN_HEADERS`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::aws;
use super::bindings::outbound::{Request, Response, Signing, VaultLogin, VaultMethod};
use super::bindings::types::PluginError;
use super::capabilities::Capabilities;
use super::jail::{Endpoint, endpoint_of_url};
use super::vault;

/// The most bytes of a request's or a response's body.
pub const MAX_BODY: usize = 16 * 1024 * 1024;

/// The capability prefix of a host a resolver may reach.
const NET: &str = "net:";

/// The capability a third-party resolver needs for the host to sign its
/// requests with the user's AWS credentials.
pub const SIGN_AWS: &str = "sign:aws-sigv4";

/// The capability a third-party resolver needs for the host to log in to a
/// Vault for it.
pub const SIGN_VAULT: &str = "sign:vault";

/// The headers a plugin may set; the host sets every other (`host`,
/// `authorization`, a signature's, a token's).
const PLUGIN_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "x-amz-target",
    "x-vault-namespace",
];

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
    /// Whether [`SIGN_VAULT`] is in effect.
    sign_vault: bool,
    /// The provider's config: what the host reads or reaches for a login
    /// (the Vault's address, a CA, a secret id, a token file, a context) is
    /// the value of its one field ([`fields`]), never any other string.
    config: serde_json::Value,
    /// The directory of the file that declares the provider, which a
    /// relative file name is read from.
    base: PathBuf,
}

impl Allowed {
    /// The allow-list of a call with this provider's config (its URLs are
    /// reached only by a built-in) and these capabilities.
    pub fn new(
        config: &serde_json::Value,
        capabilities: &Capabilities,
        builtin: bool,
        base: &Path,
    ) -> Self {
        Self {
            named: crate::config_strings::strings_in(config)
                .into_iter()
                .filter(|_| builtin)
                .filter_map(endpoint_of_url)
                .collect(),
            granted: capabilities
                .iter()
                .filter_map(|capability| capability.strip_prefix(NET))
                .map(str::to_owned)
                .collect(),
            sign_aws: capabilities.allows(SIGN_AWS),
            sign_vault: builtin || capabilities.allows(SIGN_VAULT),
            config: config.clone(),
            base: base.to_owned(),
        }
    }

    /// Whether `value` is what the provider's config holds at `field` (a
    /// JSON pointer of [`fields`]).
    pub fn config_says(&self, field: &str, value: &str) -> bool {
        self.config
            .pointer(field)
            .and_then(serde_json::Value::as_str)
            == Some(value)
    }

    /// The file `name` stands for, when the provider's config holds it at
    /// `field`; a plugin cannot make the host read any other file.
    fn named_file(&self, what: &str, field: &str, name: &str) -> Result<PathBuf, PluginError> {
        if !self.config_says(field, name) {
            return Err(denied(format!(
                "the {what} `{name}` is not the provider's `{}`; the host reads only the file the config names there",
                field.trim_start_matches('/').replace('/', ".")
            )));
        }
        Ok(self.base.join(name))
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

/// A request that passed the allow-list.
struct Checked {
    url: reqwest::Url,
    host: String,
    port: u16,
    method: reqwest::Method,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// Check `request` against the call: scheme, host, method, size, headers.
fn check(ctx: &Context<'_>, request: Request) -> Result<Checked, PluginError> {
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
    let mut headers = Vec::new();
    for (name, value) in request.headers {
        if !PLUGIN_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            return Err(denied(format!(
                "plugin `{}` may not set the header `{name}`; a resolver sets only {}, and the host the rest",
                ctx.plugin,
                PLUGIN_HEADERS.join(", ")
            )));
        }
        headers.push((name, value));
    }
    Ok(Checked {
        url,
        host,
        port,
        method,
        headers,
        body: request.body,
    })
}

/// Check `request` against the call, sign it if asked, send it.
pub fn send(ctx: &Context<'_>, request: Request) -> Result<Response, PluginError> {
    let sign = request.sign.clone();
    let Checked {
        url,
        host,
        port,
        method,
        mut headers,
        body,
    } = check(ctx, request)?;
    if let Some(Signing::AwsSigv4(scope)) = &sign {
        if !ctx.allowed.may_sign(&host, port) || !ctx.builtin && !ctx.allowed.sign_aws {
            return Err(denied(format!(
                "plugin `{}` asked the host to sign a request to `{host}:{port}` with your AWS credentials: the host signs only toward AWS ({}) or an endpoint a built-in's provider names, and a third-party resolver needs the grant `{SIGN_AWS}`",
                ctx.plugin,
                AWS_SUFFIXES.join(", ")
            )));
        }
        let credentials = aws_credentials(scope.profile.as_deref(), ctx.timeout)?;
        let added = sign_now(
            &credentials,
            &scope.service,
            &scope.region,
            method.as_str(),
            &url,
            &headers,
            &body,
        );
        headers.extend(added);
    }
    http(method, url, &headers, body, None, ctx.timeout)
        .map_err(|error| PluginError::Network(format!("`{host}:{port}`: {error}")))
}

/// The fields of a provider's config the host reads for a login: the one
/// place each is named, for the built-ins and a third-party resolver alike.
pub mod fields {
    /// The Vault's address.
    pub const ADDRESS: &str = "/address";
    /// A PEM file of the CA of the Vault's certificate.
    pub const CA_FILE: &str = "/caFile";
    /// AppRole's secret id file.
    pub const SECRET_ID_FILE: &str = "/auth/secretIdFile";
    /// Kubernetes auth's service account token file.
    pub const JWT_FILE: &str = "/auth/jwtFile";
    /// The kubeconfig context of the `clusters` import.
    pub const CONTEXT: &str = "/context";
}

/// A Vault login as the host reads it: its address and files checked
/// against the provider's config.
struct Login {
    address: reqwest::Url,
    namespace: Option<String>,
    method: vault::Method,
    ca: Option<PathBuf>,
}

fn login_of(ctx: &Context<'_>, login: VaultLogin) -> Result<Login, PluginError> {
    let allowed = ctx.allowed;
    let file = |what: &str, field: &str, name: Option<String>| {
        name.map(|name| allowed.named_file(what, field, &name))
            .transpose()
    };
    // The token goes only to the Vault the user named.
    let address = reqwest::Url::parse(&login.address).map_err(|error| {
        PluginError::Other(format!("the Vault address `{}`: {error}", login.address))
    })?;
    let named = allowed
        .config
        .pointer(fields::ADDRESS)
        .and_then(serde_json::Value::as_str)
        .and_then(|text| reqwest::Url::parse(text.trim_end_matches('/')).ok());
    let same = |a: &reqwest::Url, b: &reqwest::Url| {
        a.scheme() == b.scheme()
            && a.host_str().map(str::to_ascii_lowercase)
                == b.host_str().map(str::to_ascii_lowercase)
            && a.port_or_known_default() == b.port_or_known_default()
    };
    if !named.as_ref().is_some_and(|named| same(named, &address)) {
        return Err(denied(format!(
            "plugin `{}` asked to log in to the Vault at `{}`, which is not the provider's `address`; the host sends a Vault token only to the Vault the config names",
            ctx.plugin, login.address
        )));
    }
    let method = match login.method {
        VaultMethod::Token => vault::Method::Token,
        VaultMethod::Approle(approle) => vault::Method::AppRole {
            mount: approle.mount,
            role_id: approle.role_id,
            secret_id_file: file(
                "secret id file",
                fields::SECRET_ID_FILE,
                approle.secret_id_file,
            )?,
        },
        VaultMethod::Kubernetes(kubernetes) => vault::Method::Kubernetes {
            mount: kubernetes.mount,
            role: kubernetes.role,
            jwt_file: file("token file", fields::JWT_FILE, kubernetes.jwt_file)?,
        },
    };
    Ok(Login {
        address,
        namespace: login.namespace,
        method,
        ca: file("CA file", fields::CA_FILE, login.ca_file)?,
    })
}

/// What one run has learned of its Vaults: the token of each login, and the
/// mounts its preflights named.
#[derive(Default)]
struct VaultMemory {
    tokens: HashMap<String, String>,
    mounts: HashMap<String, Vec<vault::Mount>>,
}

/// The process's Vault memory (a process is one run).
fn memory() -> std::sync::MutexGuard<'static, VaultMemory> {
    static MEMORY: std::sync::OnceLock<Mutex<VaultMemory>> = std::sync::OnceLock::new();
    MEMORY
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Send `request` to a Vault, logged in as `login` says; only reads the
/// [`vault`] allow-list admits.
pub fn send_vault(
    ctx: &Context<'_>,
    request: Request,
    login: VaultLogin,
) -> Result<Response, PluginError> {
    if !ctx.allowed.sign_vault {
        return Err(denied(format!(
            "plugin `{}` asked the host to log in to a Vault: a third-party resolver needs the grant `{SIGN_VAULT}`",
            ctx.plugin
        )));
    }
    if request.sign.is_some() {
        return Err(denied(format!(
            "plugin `{}` asked for an AWS signature on a Vault request",
            ctx.plugin
        )));
    }
    let login = login_of(ctx, login)?;
    let checked = check(ctx, request)?;
    let same_place = checked.url.scheme() == login.address.scheme()
        && checked
            .host
            .eq_ignore_ascii_case(login.address.host_str().unwrap_or_default())
        && Some(checked.port) == login.address.port_or_known_default();
    if !same_place {
        return Err(denied(format!(
            "plugin `{}` asked for `{}` with the login of the Vault at `{}`; a token goes only to its own Vault",
            ctx.plugin, checked.url, login.address
        )));
    }
    if checked.method != reqwest::Method::GET {
        return Err(denied(format!(
            "plugin `{}` asked for `{}` on a Vault; a resolver only reads (`GET`)",
            ctx.plugin, checked.method
        )));
    }
    let read = vault::read_of(checked.url.path())
        .and_then(|read| vault::query_allowed(&read, checked.url.query()).map(|()| read))
        .map_err(|why| denied(format!("plugin `{}` asked for {why}", ctx.plugin)))?;
    let token = vault_token(ctx, &login)?;
    let mut headers = checked.headers.clone();
    if let Some(namespace) = &login.namespace {
        headers.retain(|(name, _)| !name.eq_ignore_ascii_case("x-vault-namespace"));
        headers.push(("x-vault-namespace".to_owned(), namespace.clone()));
    }
    headers.push(("x-vault-token".to_owned(), token));
    let place = format!("{}:{}", checked.host, checked.port);
    let get = |url: reqwest::Url| {
        http(
            reqwest::Method::GET,
            url,
            &headers,
            Vec::new(),
            login.ca.as_deref(),
            ctx.timeout,
        )
        .map_err(|error| PluginError::Network(format!("the Vault at `{place}`: {error}")))
    };
    if let vault::Read::OnMount(path) = read {
        let key = vault_key(&login);
        let known = memory()
            .mounts
            .get(&key)
            .and_then(|mounts| mounts.iter().find(|m| m.holds(path)).cloned());
        let mount = match known {
            Some(mount) => mount,
            None => {
                let mut url = checked.url.clone();
                url.set_path(&vault::preflight_of(path));
                url.set_query(None);
                let answer = get(url)?;
                // The mount must hold the path as the request names it (an
                // `auth/` mount answers with its path below `auth/`).
                let mount = (answer.status == 200)
                    .then(|| vault::mount_of_answer(&answer.body))
                    .flatten()
                    .filter(|mount| mount.holds(path))
                    .ok_or_else(|| {
                        denied(format!(
                            "plugin `{}` asked for `/v1/{path}`, which is on no mount the Vault names to this login ({})",
                            ctx.plugin,
                            vault::errors_of(answer.status, &answer.body)
                        ))
                    })?;
                memory().mounts.entry(key).or_default().push(mount.clone());
                mount
            }
        };
        if !mount.readable() {
            return Err(denied(format!(
                "plugin `{}` asked for `/v1/{path}` on the `{}` mount `{}`; a resolver reads only from KV mounts",
                ctx.plugin, mount.engine, mount.path
            )));
        }
    }
    let answer = get(checked.url.clone())?;
    // A preflight says what a mount is; it is answered only for a KV mount.
    if read == vault::Read::Preflight
        && answer.status == 200
        && !vault::mount_of_answer(&answer.body).is_some_and(|mount| mount.readable())
    {
        return Err(denied(format!(
            "plugin `{}` asked for `{}`, which is not on a KV mount; a resolver learns only of KV mounts",
            ctx.plugin,
            checked.url.path()
        )));
    }
    Ok(answer)
}

/// The key of a login in [`VaultMemory`]: its Vault, namespace and method.
fn vault_key(login: &Login) -> String {
    format!(
        "{}|{}|{:?}",
        login.address.origin().ascii_serialization(),
        login.namespace.as_deref().unwrap_or_default(),
        login.method
    )
}

/// The token of `login`: remembered, else from the environment or a login.
fn vault_token(ctx: &Context<'_>, login: &Login) -> Result<String, PluginError> {
    let key = vault_key(login);
    if let Some(token) = memory().tokens.get(&key) {
        return Ok(token.clone());
    }
    let env = super::environment::ProcessEnvironment;
    let refused = |error: vault::LoginError| PluginError::CapabilityDenied(error.to_string());
    let token = match vault::login_request(&env, &login.method).map_err(refused)? {
        None => vault::token_of_environment(&env).map_err(refused)?,
        Some((path, body)) => {
            let mut url = login.address.clone();
            url.set_path(&path);
            url.set_query(None);
            let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
            if let Some(namespace) = &login.namespace {
                headers.push(("x-vault-namespace".to_owned(), namespace.clone()));
            }
            let answer = http(
                reqwest::Method::POST,
                url,
                &headers,
                body.to_string().into_bytes(),
                login.ca.as_deref(),
                ctx.timeout,
            )
            .map_err(|error| {
                refused(vault::LoginError::Refused {
                    method: login.method.name(),
                    path: path.clone(),
                    why: error.to_string(),
                })
            })?;
            vault::token_of_answer(&login.method, &path, answer.status, &answer.body)
                .map_err(refused)?
        }
    };
    memory().tokens.insert(key, token.clone());
    Ok(token)
}

/// The headers that sign a request to `url` now (SigV4): the one place a
/// URL becomes what [`aws::sign`] signs.
pub(super) fn sign_now(
    credentials: &aws::Credentials,
    service: &str,
    region: &str,
    method: &str,
    url: &reqwest::Url,
    headers: &[(String, String)],
    body: &[u8],
) -> Vec<(String, String)> {
    let host = url.host_str().unwrap_or_default();
    let authority = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    aws::sign(
        credentials,
        service,
        region,
        method,
        &authority,
        url.path(),
        url.query().unwrap_or_default(),
        headers,
        body,
        unix,
    )
}

/// The region the AWS chain names for `profile`.
pub fn aws_region(profile: Option<&str>) -> Option<String> {
    aws::region(&aws::ProcessEnvironment, profile)
}

/// The AWS chain's credentials for `profile`, a web identity exchanged at
/// STS by this host.
pub(super) fn aws_credentials(
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
            None,
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
pub(super) enum SendError {
    /// The client could not be made, or the request not sent or read (with
    /// its causes).
    #[error("{0}")]
    Transport(String),
    /// The answer was longer than [`MAX_BODY`].
    #[error("an answer of more than {MAX_BODY} bytes")]
    TooLong,
}

/// The client for requests that trust `ca` besides the system's roots: one
/// for each in the process, so connections (and TLS sessions) are kept
/// between the requests of a run, as a store's SDK keeps them.
fn client(ca: Option<&Path>) -> Result<reqwest::Client, SendError> {
    static CLIENTS: std::sync::OnceLock<Mutex<HashMap<Option<PathBuf>, reqwest::Client>>> =
        std::sync::OnceLock::new();
    let mut clients = CLIENTS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(client) = clients.get(&ca.map(Path::to_owned)) {
        return Ok(client.clone());
    }
    crate::tls::install();
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy();
    if let Some(ca) = ca {
        let pem = super::environment::read_credential(ca).map_err(|error| {
            SendError::Transport(format!("the CA file `{}`: {error}", ca.display()))
        })?;
        let roots = reqwest::Certificate::from_pem_bundle(&pem).map_err(|error| {
            SendError::Transport(format!("the CA file `{}`: {error}", ca.display()))
        })?;
        if roots.is_empty() {
            return Err(SendError::Transport(format!(
                "the CA file `{}` holds no PEM certificate",
                ca.display()
            )));
        }
        for root in roots {
            builder = builder.add_root_certificate(root);
        }
    }
    let client = builder
        .build()
        .map_err(|error| SendError::Transport(format!("no HTTP client could be made: {error}")))?;
    clients.insert(ca.map(Path::to_owned), client.clone());
    Ok(client)
}

/// Send one request, no redirect followed, the body bounded; with `ca`, a
/// PEM file of roots trusted besides the system's.
pub(super) fn http(
    method: reqwest::Method,
    url: reqwest::Url,
    headers: &[(String, String)],
    body: Vec<u8>,
    ca: Option<&Path>,
    timeout: Duration,
) -> Result<Response, SendError> {
    let client = client(ca)?;
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
        let config = serde_json::json!({ "endpoints": named });
        let grants: Vec<String> = granted.iter().map(|g| format!("net:{g}")).collect();
        Allowed::new(
            &config,
            &Capabilities::effective(&grants, &grants),
            true,
            Path::new("."),
        )
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

    /// A Vault login takes its address and files only from their own fields
    /// of the provider's config: a plugin names no other Vault, and no file
    /// that appears elsewhere in the config.
    #[test]
    fn a_vault_login_is_pinned_to_the_fields_of_the_providers_config() {
        use super::super::bindings::outbound::KubernetesLogin;
        let config = serde_json::json!({
            "address": "https://vault.example.com:8200/",
            "caFile": "ca.pem",
            "description": "other.jwt",
            "auth": {"jwtFile": "sa.jwt"},
        });
        let list = Allowed::new(
            &config,
            &Capabilities::effective(&[], &[]),
            false,
            Path::new("/repo"),
        );
        let ctx = ctx(&list);
        let login = |address: &str, jwt: &str, ca: Option<&str>| VaultLogin {
            address: address.to_owned(),
            namespace: None,
            method: VaultMethod::Kubernetes(KubernetesLogin {
                mount: "kubernetes".into(),
                role: "r".into(),
                jwt_file: Some(jwt.to_owned()),
            }),
            ca_file: ca.map(str::to_owned),
        };
        let ok = login_of(
            &ctx,
            login("https://VAULT.example.com:8200", "sa.jwt", Some("ca.pem")),
        )
        .unwrap();
        assert_eq!(ok.ca.as_deref(), Some(Path::new("/repo/ca.pem")));
        for (address, jwt, ca, said) in [
            (
                "https://attacker.example:8200",
                "sa.jwt",
                None,
                "not the provider's `address`",
            ),
            (
                "http://vault.example.com:8200",
                "sa.jwt",
                None,
                "not the provider's `address`",
            ),
            (
                "https://vault.example.com:8200",
                "other.jwt",
                None,
                "not the provider's `auth.jwtFile`",
            ),
            (
                "https://vault.example.com:8200",
                "sa.jwt",
                Some("other.jwt"),
                "not the provider's `caFile`",
            ),
        ] {
            match login_of(&ctx, login(address, jwt, ca)) {
                Err(PluginError::CapabilityDenied(message)) => {
                    assert!(message.contains(said), "{message}")
                }
                other => panic!("{address} {jwt}: {:?}", other.map(|l| l.address)),
            }
        }
    }
}
