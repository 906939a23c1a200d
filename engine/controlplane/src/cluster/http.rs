//! Plain HTTP on loopback, for the components' health endpoints.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::Context as _;

/// A plain-HTTP GET on 127.0.0.1:`port`, returning the body.
pub(crate) fn http_get(port: u16, path: &str) -> anyhow::Result<String> {
    http_request(port, path, None).map(|(_, body)| body)
}

/// A plain-HTTP GET on 127.0.0.1:`port` with optional basic credentials, returning the
/// status code and the body.
pub fn http_request(
    port: u16,
    path: &str,
    basic_auth: Option<&str>,
) -> anyhow::Result<(u16, String)> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
    stream.set_read_timeout(Some(Duration::from_secs(3)))?;
    let auth = basic_auth
        .map(|b| format!("Authorization: Basic {b}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n{auth}Connection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .context("not an HTTP response")?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}
