//! The jail's signing forwarder: the user's logins stay in Tazuna. A tool in
//! the jail holds no login, not even a copy in its home; when it asks a
//! named host that one of the user's logins is for, the forwarder reads the
//! request, checks that it only reads, adds the login and passes it on.
//!
//! - Plain HTTP is read as it comes. TLS is answered with a certificate for
//!   the named host from an authority made for this run alone (its key never
//!   leaves Tazuna; the tool trusts it through `SSL_CERT_FILE`), and the host
//!   speaks TLS to the real registry with the user's own trust roots.
//! - What is signed is allowed by name: `GET` and `HEAD`, without a body,
//!   and a token request (`scope=repository:…:pull`) only for `pull`. Every
//!   other method or scope is answered here and never reaches the registry.
//! - A tool that brings its own `Authorization` (a token the registry gave
//!   it) keeps it; a login is added only where there is none.
//! - One request per connection (`Connection: close`), its head at most
//!   64 KiB, the answer framed by its own length, 60 s of silence ends it.
//!
//! So a helmfile or a chart template that reads every file in its jail finds
//! no login, and a tool can use a login only to read what the user's file
//! names. What a tool may still hold is a registry's short-lived pull token,
//! for one named registry.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};

use super::endpoint::Endpoint;

/// The longest request or answer head the forwarder reads.
const HEAD_LIMIT: usize = 64 * 1024;

/// How long either side may stay silent.
const SILENCE: Duration = Duration::from_secs(60);

/// One of the user's logins, for the requests to one host (under a path).
#[derive(Clone)]
struct Login {
    endpoint: Endpoint,
    /// Requests whose path starts with this get the login.
    path: String,
    /// The `Authorization` header's value.
    authorization: String,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Login({}{}, <redacted>)", self.endpoint, self.path)
    }
}

/// The logins a tool run's forwarders add, and the authority its TLS is
/// answered with. Cloning shares the authority.
#[derive(Clone, Debug, Default)]
pub struct Logins {
    logins: Vec<Login>,
    authority: Option<Arc<Authority>>,
}

impl Logins {
    /// The logins of the user's files for `endpoints`: the registry logins
    /// (`auths` of a docker or helm registry config, `registry_config`) of a
    /// named host, and the logins of the chart repositories `repositories`
    /// (the user's `repositories.yaml`) that the manifest names by name
    /// (`named`). Other entries, credential helpers and client certificates
    /// are not used.
    pub fn from_user_files(
        registry_config: Option<&str>,
        repositories: Option<&str>,
        endpoints: &[Endpoint],
        named: &[String],
    ) -> Logins {
        let mut logins = Vec::new();
        let registries = registry_config
            .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
            .unwrap_or_default();
        for (key, entry) in registries["auths"].as_object().into_iter().flatten() {
            let url = if key.contains("://") {
                key.clone()
            } else {
                format!("https://{key}")
            };
            let Some(endpoint) = super::endpoint_of_url(&url) else {
                continue;
            };
            if let Some(basic) = registry_basic(entry)
                && endpoints.iter().any(|named| same_host(named, &endpoint))
            {
                logins.push(Login {
                    endpoint,
                    path: "/".to_owned(),
                    authorization: format!("Basic {basic}"),
                });
            }
        }
        let repositories = repositories
            .and_then(|text| serde_yaml::from_str::<serde_yaml::Value>(text).ok())
            .unwrap_or_default();
        for entry in repositories["repositories"]
            .as_sequence()
            .into_iter()
            .flatten()
        {
            let (Some(name), Some(url), Some(user), Some(password)) = (
                entry["name"].as_str(),
                entry["url"].as_str(),
                entry["username"].as_str(),
                entry["password"].as_str(),
            ) else {
                continue;
            };
            if !named.iter().any(|n| n == name) || user.is_empty() {
                continue;
            }
            let Some(endpoint) = super::endpoint_of_url(url) else {
                continue;
            };
            let path = url
                .split_once("://")
                .and_then(|(_, rest)| rest.find('/').map(|at| rest[at..].to_owned()))
                .unwrap_or_else(|| "/".to_owned());
            let basic =
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
            logins.push(Login {
                endpoint,
                path,
                authorization: format!("Basic {basic}"),
            });
        }
        let authority = (!logins.is_empty())
            .then(|| Authority::new(Arc::clone(upstream_roots())).ok())
            .flatten()
            .map(Arc::new);
        Logins { logins, authority }
    }

    /// Whether no login is added anywhere.
    pub fn is_empty(&self) -> bool {
        self.logins.is_empty()
    }

    /// Whether requests to `endpoint` go through the forwarder that signs.
    pub(super) fn covers(&self, endpoint: &Endpoint) -> bool {
        self.logins.iter().any(|l| same_host(&l.endpoint, endpoint))
    }

    /// The certificate (PEM) of the authority this run answers TLS with, for
    /// the tool to trust beside the system's roots.
    pub fn authority_pem(&self) -> Option<&str> {
        self.authority.as_ref().map(|a| a.pem.as_str())
    }

    /// The `Authorization` for a request to `path` on `endpoint`: the login
    /// with the longest matching path, else the host's only login.
    fn authorization(&self, endpoint: &Endpoint, path: &str) -> Option<&str> {
        let on_host: Vec<&Login> = self
            .logins
            .iter()
            .filter(|l| same_host(&l.endpoint, endpoint))
            .collect();
        on_host
            .iter()
            .filter(|l| path.starts_with(l.path.trim_end_matches('/')))
            .max_by_key(|l| l.path.len())
            .or(match on_host.as_slice() {
                [only] => Some(only),
                _ => None,
            })
            .map(|l| l.authorization.as_str())
    }
}

/// One host: the same port, and the same name, or both on loopback (the
/// forwarder of a loopback port serves every loopback spelling).
fn same_host(a: &Endpoint, b: &Endpoint) -> bool {
    a.port == b.port && (a.host == b.host || (a.is_loopback() && b.is_loopback()))
}

/// The base64 `user:password` of a registry config entry.
fn registry_basic(entry: &serde_json::Value) -> Option<String> {
    if let Some(auth) = entry["auth"].as_str().filter(|a| !a.is_empty()) {
        return Some(auth.to_owned());
    }
    let user = entry["username"].as_str()?;
    let password = entry["password"].as_str()?;
    Some(base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}")))
}

/// The trust roots the host speaks TLS to registries with: the system's (or
/// `SSL_CERT_FILE`'s), loaded once.
fn upstream_roots() -> &'static Arc<rustls::RootCertStore> {
    static ROOTS: std::sync::OnceLock<Arc<rustls::RootCertStore>> = std::sync::OnceLock::new();
    ROOTS.get_or_init(|| {
        let mut roots = rustls::RootCertStore::empty();
        let found = rustls_native_certs::load_native_certs();
        roots.add_parsable_certificates(found.certs);
        Arc::new(roots)
    })
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A certificate authority made for one tool run: it signs a certificate for
/// each named host the tool reaches over TLS. Its key stays in this process.
struct Authority {
    pem: String,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    ca_der: CertificateDer<'static>,
    servers: Mutex<Vec<(String, Arc<rustls::ServerConfig>)>>,
    upstream: Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Authority(<key in memory>)")
    }
}

impl Authority {
    fn new(roots: Arc<rustls::RootCertStore>) -> Result<Authority, String> {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
        let error = |e: rcgen::Error| format!("cannot make the run's certificate authority: {e}");
        let key = KeyPair::generate().map_err(error)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(error)?;
        params
            .distinguished_name
            .push(DnType::CommonName, "Tazuna tool run (signing forwarder)");
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let now = std::time::SystemTime::now();
        params.not_before = (now - Duration::from_secs(3600)).into();
        params.not_after = (now + Duration::from_secs(2 * 86_400)).into();
        let cert = params.self_signed(&key).map_err(error)?;
        let upstream = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Authority {
            pem: cert.pem(),
            ca_der: cert.der().clone(),
            issuer: rcgen::Issuer::new(params, key),
            servers: Mutex::new(Vec::new()),
            upstream: Arc::new(upstream),
        })
    }

    /// The TLS server config that answers as `host`.
    fn server_for(&self, host: &str) -> Result<Arc<rustls::ServerConfig>, String> {
        let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, config)) = servers.iter().find(|(h, _)| h == host) {
            return Ok(Arc::clone(config));
        }
        let error = |e: rcgen::Error| format!("cannot sign a certificate for `{host}`: {e}");
        let key = rcgen::KeyPair::generate().map_err(error)?;
        let mut params = rcgen::CertificateParams::new(vec![host.to_owned()]).map_err(error)?;
        params.not_before = (std::time::SystemTime::now() - Duration::from_secs(3600)).into();
        params.not_after = (std::time::SystemTime::now() + Duration::from_secs(86_400)).into();
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let cert = params.signed_by(&key, &self.issuer).map_err(error)?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone(), self.ca_der.clone()], key)
            .map_err(|e| e.to_string())?;
        let config = Arc::new(config);
        servers.push((host.to_owned(), Arc::clone(&config)));
        Ok(config)
    }
}

/// How the login may travel to a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wire {
    /// Only over TLS: a host across the network, reached through the
    /// jail's proxy.
    Tls,
    /// As the tool speaks: a host on this machine's loopback.
    AsTheTool,
}

/// Carry one connection from the tool (`inbound`) to `target` (`outbound`,
/// already connected to an address the jail allows), signing its request.
pub(super) fn sign(
    inbound: TcpStream,
    outbound: TcpStream,
    target: &Endpoint,
    logins: &Logins,
    wire: Wire,
) {
    let _ = inbound.set_read_timeout(Some(SILENCE));
    let _ = outbound.set_read_timeout(Some(SILENCE));
    let mut first = [0u8; 1];
    // TLS begins with a handshake record (0x16); plain HTTP with a method.
    let tls = matches!(inbound.peek(&mut first), Ok(1) if first[0] == 0x16);
    if !tls && wire == Wire::Tls {
        // A tool that speaks plain HTTP in a tunnel to a host across the
        // network would have the login cross it in the clear.
        let mut client = inbound;
        let _ = refuse(
            &mut client,
            400,
            &format!("Tazuna sends a login to `{target}` only over TLS"),
        );
        finish(&client);
        return;
    }
    if !tls {
        let (mut client, mut upstream) = (inbound, outbound);
        let _ = relay(&mut client, &mut upstream, target, logins);
        finish(&client);
        return;
    }
    let Some(authority) = &logins.authority else {
        return;
    };
    let Ok(server) = authority.server_for(&target.host) else {
        return;
    };
    let Ok(name) = ServerName::try_from(target.host.clone()) else {
        return;
    };
    let (Ok(server), Ok(client)) = (
        rustls::ServerConnection::new(server),
        rustls::ClientConnection::new(Arc::clone(&authority.upstream), name),
    ) else {
        return;
    };
    let mut tool = rustls::StreamOwned::new(server, inbound);
    let mut registry = rustls::StreamOwned::new(client, outbound);
    if relay(&mut tool, &mut registry, target, logins).is_ok() {
        tool.conn.send_close_notify();
        let _ = tool.flush();
    }
    finish(&tool.sock);
}

/// End the tool's connection so it reads the whole answer: close our side,
/// then take what it still sends (a refused request's body), for a moment,
/// so the kernel does not reset the connection over unread bytes.
fn finish(tool: &TcpStream) {
    let _ = tool.shutdown(std::net::Shutdown::Write);
    let _ = tool.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = io::copy(&mut tool.take(1 << 20), &mut io::sink());
}

/// A request head, read up to its blank line.
fn read_head(stream: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut head = Vec::new();
    let mut chunk = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() >= HEAD_LIMIT {
            return Err(io::Error::other("head too long"));
        }
        match stream.read(&mut chunk)? {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            _ => head.push(chunk[0]),
        }
    }
    Ok(head)
}

/// What the forwarder makes of one request head.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// Pass on this head.
    Forward(Vec<u8>),
    /// Answer the tool with this status and reason, and send nothing on.
    Refuse(u16, String),
}

/// Read a request head and decide: only reads are passed on, with the login
/// added where the tool brought none.
fn judge(head: &[u8], target: &Endpoint, logins: &Logins) -> Verdict {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut words = first.split(' ');
    let (Some(method), Some(uri), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Verdict::Refuse(400, "a request line Tazuna cannot read".to_owned());
    };
    if !matches!(method, "GET" | "HEAD") {
        return Verdict::Refuse(
            405,
            format!("a tool in Tazuna's jail only reads from `{target}`; `{method}` is not sent"),
        );
    }
    // An absolute form (`http://host/path`) names the same target.
    let path = match uri.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |at| &rest[at..]),
        None => uri,
    };
    if !path.starts_with('/') {
        return Verdict::Refuse(400, format!("a request target Tazuna cannot read: `{uri}`"));
    }
    if let Some(problem) = refused_query(path) {
        return Verdict::Refuse(403, problem);
    }
    // The host is the named one, whatever the tool says: a front end that
    // routes by `Host` must not take the login elsewhere.
    let name = if target.host.contains(':') {
        format!("[{}]", target.host)
    } else {
        target.host.clone()
    };
    let host = match target.port {
        443 => name,
        port => format!("{name}:{port}"),
    };
    let mut out = format!("{method} {path} {version}\r\nHost: {host}\r\n");
    let mut authorized = false;
    for line in lines.filter(|line| !line.is_empty()) {
        let Some((name, value)) = line.split_once(':') else {
            return Verdict::Refuse(400, "a header Tazuna cannot read".to_owned());
        };
        if name != name.trim() || name.is_empty() {
            return Verdict::Refuse(400, "a header Tazuna cannot read".to_owned());
        }
        let lower = name.to_ascii_lowercase();
        match lower.as_str() {
            "transfer-encoding" => {
                return Verdict::Refuse(400, "a read with a body is not sent".to_owned());
            }
            "content-length" if value.trim() != "0" => {
                return Verdict::Refuse(400, "a read with a body is not sent".to_owned());
            }
            "authorization" => authorized = true,
            // What a registry client sends on a read; every other header
            // (`Host`, method overrides, forwarding headers) stays here.
            "user-agent"
            | "accept"
            | "accept-encoding"
            | "range"
            | "if-none-match"
            | "if-modified-since"
            | "docker-distribution-api-version" => {}
            _ => continue,
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    if !authorized && let Some(login) = logins.authorization(target, path) {
        out.push_str("Authorization: ");
        out.push_str(login);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    Verdict::Forward(out.into_bytes())
}

/// What is wrong with `path`'s query for a signed read, if anything. Its
/// parameters are read as the registry's Go or Python server reads them
/// (names and values percent-decoded, `+` a space) and allowed by name:
/// token parameters (`scope`, each `repository:<name>:pull`, and `service`,
/// `account`, `client_id`) and paging (`n`, `last`, `artifactType`). A
/// refresh token (`offline_token`), a `;` separator (which Go refuses and
/// others read as `&`) and every other name are refused.
fn refused_query(path: &str) -> Option<String> {
    let (_, query) = path.split_once('?')?;
    if query.contains([';', '?', '#']) {
        return Some(format!(
            "a query Tazuna does not read the way every server does: `{query}`"
        ));
    }
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = percent_decode(&key.replace('+', " "));
        let value = percent_decode(&value.replace('+', " "));
        match key.as_str() {
            "scope" => {
                for scope in value.split(' ').filter(|s| !s.is_empty()) {
                    let pull = scope.strip_prefix("repository:").is_some_and(|rest| {
                        rest.rsplit_once(':')
                            .is_some_and(|(_, actions)| actions.split(',').all(|a| a == "pull"))
                    });
                    if !pull {
                        return Some(format!(
                            "a tool in Tazuna's jail only pulls; the token scope `{scope}` is not asked for"
                        ));
                    }
                }
            }
            "service" | "account" | "client_id" | "n" | "last" | "artifactType" => {}
            other => {
                return Some(format!(
                    "a tool in Tazuna's jail only reads; the query parameter `{other}` is not sent"
                ));
            }
        }
    }
    None
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%'
            && let Some(byte) = text
                .get(at + 1..at + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(byte);
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One request from `tool` to `registry`, and its answer back.
fn relay(
    tool: &mut (impl Read + Write),
    registry: &mut (impl Read + Write),
    target: &Endpoint,
    logins: &Logins,
) -> io::Result<()> {
    let head = read_head(tool)?;
    let head_request = head.starts_with(b"HEAD ");
    match judge(&head, target, logins) {
        Verdict::Refuse(status, reason) => refuse(tool, status, &reason),
        Verdict::Forward(head) => {
            // The TLS handshake with the registry happens here: say why it
            // failed (an unknown certificate authority, say), not just EOF.
            if let Err(error) = registry.write_all(&head).and_then(|()| registry.flush()) {
                return refuse(
                    tool,
                    502,
                    &format!("Tazuna could not send the request on to `{target}`: {error}"),
                );
            }
            let answer = read_head(registry)?;
            tool.write_all(&answer)?;
            let status = String::from_utf8_lossy(&answer)
                .split(' ')
                .nth(1)
                .and_then(|code| code.parse::<u16>().ok())
                .unwrap_or(0);
            let length = String::from_utf8_lossy(&answer)
                .split("\r\n")
                .filter_map(|line| line.split_once(':'))
                .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
                .and_then(|(_, value)| value.trim().parse::<u64>().ok());
            let bodiless = head_request || status == 204 || status == 304 || status < 200;
            match (bodiless, length) {
                (true, _) => {}
                (false, Some(length)) => {
                    io::copy(&mut registry.take(length), tool)?;
                }
                // Chunked or to the end: the registry closes (we asked it to).
                (false, None) => copy_to_end(registry, tool)?,
            }
            tool.flush()
        }
    }
}

/// Answer the tool with `status` and `reason`, from Tazuna.
fn refuse(tool: &mut impl Write, status: u16, reason: &str) -> io::Result<()> {
    let body = format!("{reason}\n");
    write!(
        tool,
        "HTTP/1.1 {status} Refused by Tazuna\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    tool.flush()
}

/// Copy until the registry closes; a TLS peer that closes without
/// `close_notify` has still ended.
fn copy_to_end(from: &mut impl Read, to: &mut impl Write) -> io::Result<()> {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(n) => to.write_all(&buffer[..n])?,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, TcpListener};

    fn endpoint(host: &str, port: u16) -> Endpoint {
        Endpoint {
            host: host.to_owned(),
            port,
        }
    }

    // "robot:s3cret" and "team:t3am-pass".
    const ROBOT: &str = "cm9ib3Q6czNjcmV0";
    const REGISTRIES: &str = r#"{"auths": {"127.0.0.1:5000": {"auth": "cm9ib3Q6czNjcmV0"},
        "https://other.example": {"username": "o", "password": "p"},
        "registry.example": {"auth": "cm9ib3Q6czNjcmV0"}}}"#;
    const REPOSITORIES: &str = "repositories:
  - name: acme
    url: https://charts.example/acme
    username: team
    password: t3am-pass
  - name: unnamed
    url: https://charts.example/unnamed
    username: x
    password: y
";

    fn logins() -> Logins {
        Logins::from_user_files(
            Some(REGISTRIES),
            Some(REPOSITORIES),
            &[
                endpoint("127.0.0.1", 5000),
                endpoint("registry.example", 443),
                endpoint("charts.example", 443),
            ],
            &["acme".to_owned()],
        )
    }

    fn forwarded(verdict: Verdict) -> String {
        match verdict {
            Verdict::Forward(head) => String::from_utf8(head).unwrap(),
            Verdict::Refuse(status, why) => panic!("refused {status}: {why}"),
        }
    }

    #[test]
    fn only_the_named_hosts_logins_are_kept() {
        let logins = logins();
        assert!(logins.covers(&endpoint("127.0.0.1", 5000)));
        assert!(logins.covers(&endpoint("localhost", 5000)));
        assert!(logins.covers(&endpoint("registry.example", 443)));
        assert!(!logins.covers(&endpoint("other.example", 443)), "not named");
        assert!(!logins.covers(&endpoint("127.0.0.1", 5001)));
        assert_eq!(
            logins.authorization(&endpoint("charts.example", 443), "/acme/index.yaml"),
            Some("Basic dGVhbTp0M2FtLXBhc3M=")
        );
        // A repository the manifest does not name lends nothing.
        assert_eq!(logins.logins.len(), 3, "{logins:?}");
        assert!(!format!("{logins:?}").contains(ROBOT), "Debug redacts");
        assert!(
            logins
                .authority_pem()
                .is_some_and(|pem| pem.contains("BEGIN CERTIFICATE"))
        );
        assert!(
            Logins::from_user_files(None, None, &[], &[])
                .authority_pem()
                .is_none()
        );
    }

    #[test]
    fn a_read_is_signed_and_a_token_the_tool_brings_is_kept() {
        let target = endpoint("127.0.0.1", 5000);
        let head = forwarded(judge(
            b"GET /v2/charts/hello/manifests/0.1.0 HTTP/1.1\r\nHost: evil.example\r\nConnection: keep-alive\r\nProxy-Authorization: x\r\nX-HTTP-Method-Override: PUT\r\nX-Forwarded-Host: evil.example\r\nAccept: */*\r\n\r\n",
            &target,
            &logins(),
        ));
        assert_eq!(
            head,
            format!(
                "GET /v2/charts/hello/manifests/0.1.0 HTTP/1.1\r\nHost: 127.0.0.1:5000\r\nAccept: */*\r\nAuthorization: Basic {ROBOT}\r\nConnection: close\r\n\r\n"
            )
        );
        let head = forwarded(judge(
            b"HEAD /v2/ HTTP/1.1\r\nauthorization: Bearer abc\r\n\r\n",
            &target,
            &logins(),
        ));
        assert_eq!(
            head,
            "HEAD /v2/ HTTP/1.1\r\nHost: 127.0.0.1:5000\r\nauthorization: Bearer abc\r\nConnection: close\r\n\r\n"
        );
        let head = forwarded(judge(
            b"GET /token?service=r&scope=repository%3Acharts%2Fhello%3Apull HTTP/1.1\r\n\r\n",
            &target,
            &logins(),
        ));
        assert!(head.contains(ROBOT), "{head}");
    }

    #[test]
    fn anything_but_a_read_is_refused_in_every_spelling() {
        let target = endpoint("127.0.0.1", 5000);
        for head in [
            "PUT /v2/charts/hello/manifests/evil HTTP/1.1\r\n\r\n",
            "POST /v2/charts/hello/blobs/uploads/ HTTP/1.1\r\n\r\n",
            "DELETE /v2/charts/hello/manifests/sha256:0 HTTP/1.1\r\n\r\n",
            "PATCH /v2/x HTTP/1.1\r\n\r\n",
            "get /v2/ HTTP/1.1\r\n\r\n",
            "GET /v2/ HTTP/1.1\r\nContent-Length: 5\r\n\r\n",
            "GET /v2/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            "GET /token?scope=repository:charts/hello:pull,push HTTP/1.1\r\n\r\n",
            "GET /token?scope=repository%3Acharts%2Fhello%3Apush HTTP/1.1\r\n\r\n",
            "GET /token?scope=repository:a:pull+repository:b:delete HTTP/1.1\r\n\r\n",
            "GET /token?scope=repository:a:pull&scope=repository:b:* HTTP/1.1\r\n\r\n",
            "GET /token?scope=registry:catalog:* HTTP/1.1\r\n\r\n",
            // Spellings a server decodes to a scope, or to more than a pull.
            "GET /token?scope=repository:a:pull&sc%6fpe=repository:a:push HTTP/1.1\r\n\r\n",
            "GET /token?scope=repository:a:pull&SCOPE=repository:a:push HTTP/1.1\r\n\r\n",
            "GET /token?scope=repository:a:pull;scope=repository:a:push HTTP/1.1\r\n\r\n",
            "GET /token?scope=repository:a:pull&offline_token=true HTTP/1.1\r\n\r\n",
            "GET /token?%73cope=repository:a:delete HTTP/1.1\r\n\r\n",
            "GET /v2/?x=1 HTTP/1.1\r\n\r\n",
            "GET /v2/ HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n",
            "GET /v2/ HTTP/1.1 extra\r\n\r\n",
            "GET v2 HTTP/1.1\r\n\r\n",
        ] {
            assert!(
                matches!(
                    judge(head.as_bytes(), &target, &logins()),
                    Verdict::Refuse(..)
                ),
                "{head}"
            );
        }
    }

    /// A registry on loopback that records the one request it gets and
    /// answers `answer`.
    fn registry(answer: &'static [u8]) -> (u16, std::thread::JoinHandle<Vec<u8>>) {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let handle = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let head = read_head(&mut stream).unwrap_or_default();
            stream.write_all(answer).unwrap();
            head
        });
        (port, handle)
    }

    /// `sign` between a fresh client connection and `port`; the client end.
    fn through_forwarder(port: u16, logins: Logins, wire: Wire) -> TcpStream {
        let front = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let address = front.local_addr().unwrap();
        std::thread::spawn(move || {
            let (inbound, _) = front.accept().unwrap();
            let outbound = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap();
            sign(
                inbound,
                outbound,
                &endpoint("127.0.0.1", port),
                &logins,
                wire,
            );
        });
        TcpStream::connect(address).unwrap()
    }

    fn logins_for(port: u16) -> Logins {
        Logins::from_user_files(
            Some(&format!(
                r#"{{"auths": {{"127.0.0.1:{port}": {{"auth": "{ROBOT}"}}}}}}"#
            )),
            None,
            &[endpoint("127.0.0.1", port)],
            &[],
        )
    }

    #[test]
    fn plain_http_reaches_the_registry_signed_and_the_answer_comes_back() {
        let (port, seen) = registry(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello and more");
        let mut client = through_forwarder(port, logins_for(port), Wire::AsTheTool);
        client
            .write_all(b"GET /v2/ HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        client.read_to_string(&mut answer).unwrap();
        assert_eq!(answer, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
        let seen = String::from_utf8(seen.join().unwrap()).unwrap();
        assert!(
            seen.contains(&format!("Authorization: Basic {ROBOT}")),
            "{seen}"
        );
    }

    #[test]
    fn a_login_crosses_the_network_only_over_tls() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut client = through_forwarder(port, logins_for(port), Wire::Tls);
        client
            .write_all(b"GET /v2/ HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        client.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        let (mut registry, _) = listener.accept().unwrap();
        registry
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut got = Vec::new();
        let _ = registry.read_to_end(&mut got);
        assert!(got.is_empty(), "the registry got {got:?}");
    }

    #[test]
    fn a_write_never_reaches_the_registry() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut client = through_forwarder(port, logins_for(port), Wire::AsTheTool);
        client
            .write_all(
                b"PUT /v2/charts/hello/manifests/evil HTTP/1.1\r\nContent-Length: 4\r\n\r\ndata",
            )
            .unwrap();
        let mut answer = String::new();
        client.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 405"), "{answer}");
        let (mut registry, _) = listener.accept().unwrap();
        registry
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut got = Vec::new();
        let _ = registry.read_to_end(&mut got);
        assert!(got.is_empty(), "the registry got {got:?}");
    }

    /// A GET through the forwarder to a TLS registry, from a tool that
    /// trusts only the run's authority; with `trusted`, the host trusts the
    /// registry's. What the tool reads, and what the registry saw.
    fn tls_round_trip(trusted: bool) -> (String, Option<String>) {
        let registry_ca = Authority::new(Arc::new(rustls::RootCertStore::empty())).unwrap();
        let registry_tls = registry_ca.server_for("127.0.0.1").unwrap();
        let mut roots = rustls::RootCertStore::empty();
        if trusted {
            roots.add(registry_ca.ca_der.clone()).unwrap();
        }
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut tls = rustls::StreamOwned::new(
                rustls::ServerConnection::new(registry_tls).unwrap(),
                stream,
            );
            let head = read_head(&mut tls).ok()?;
            tls.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .unwrap();
            tls.conn.send_close_notify();
            let _ = tls.flush();
            Some(String::from_utf8(head).unwrap())
        });
        let mut logins = logins_for(port);
        logins.authority = Some(Arc::new(Authority::new(Arc::new(roots)).unwrap()));
        // The tool trusts only the run's authority, as its SSL_CERT_FILE says.
        let mut tool_roots = rustls::RootCertStore::empty();
        tool_roots
            .add(logins.authority.as_ref().unwrap().ca_der.clone())
            .unwrap();
        let tool_config = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(tool_roots)
            .with_no_client_auth();
        let client = through_forwarder(port, logins, Wire::Tls);
        let mut tls = rustls::StreamOwned::new(
            rustls::ClientConnection::new(
                Arc::new(tool_config),
                ServerName::try_from("127.0.0.1").unwrap(),
            )
            .unwrap(),
            client,
        );
        tls.write_all(b"GET /v2/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .unwrap();
        let mut answer = Vec::new();
        copy_to_end(&mut tls, &mut answer).unwrap();
        (String::from_utf8(answer).unwrap(), seen.join().unwrap())
    }

    #[test]
    fn tls_is_answered_for_the_named_host_and_signed_on_to_the_registry() {
        let (answer, seen) = tls_round_trip(true);
        assert_eq!(answer, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        let seen = seen.expect("the registry got the request");
        assert!(
            seen.contains(&format!("Authorization: Basic {ROBOT}")),
            "{seen}"
        );
    }

    #[test]
    fn a_registry_the_host_does_not_trust_gets_nothing_and_the_tool_hears_why() {
        let (answer, seen) = tls_round_trip(false);
        assert!(
            answer.starts_with("HTTP/1.1 502") && answer.contains("UnknownIssuer"),
            "{answer}"
        );
        assert_eq!(seen, None);
    }
}
