//! Every byte a registry sends Tazuna passes a meter.
//!
//! oci-client reads a manifest, a tag list and a token answer whole, with no
//! bound, so a hostile registry's endless body would grow Tazuna without
//! limit. Each registry client therefore talks through a proxy of its own on
//! loopback ([`Registry`]), which counts what the far side sends (a CONNECT
//! tunnel for HTTPS, the connection itself for plain HTTP) and cuts every
//! connection once the client's allowance is spent. The allowance starts at
//! [`BODIES`] (manifests, tag lists, tokens) and grows only by what a
//! caller has checked: the sizes an artifact's manifest declares, or the most
//! a plugin's component may be.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_wasm::WasmClient;

/// What one client may receive before a caller allows more: enough for the
/// manifests, tag lists and token answers of one operation (the distribution
/// spec has registries accept manifests of at least 4 MiB).
pub const BODIES: u64 = 8 << 20;

/// The largest plugin component Tazuna pulls.
pub const COMPONENT: u64 = 128 << 20;

/// How long one client may take in all, however slowly the registry sends.
pub const TIME: Duration = Duration::from_secs(300);

/// How long a connection may carry nothing before it is closed.
const SILENCE: Duration = Duration::from_secs(60);

/// A registry client whose every connection goes through a meter. Derefs to
/// the oci-wasm client; dropping it stops the proxy.
pub struct Registry {
    client: WasmClient,
    meter: Arc<Meter>,
    port: u16,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("received", &self.meter.received.load(Ordering::Relaxed))
            .field("allowed", &self.meter.allowed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct Meter {
    allowed: AtomicU64,
    received: AtomicU64,
    over: AtomicBool,
    late: AtomicBool,
    stop: AtomicBool,
    until: std::time::Instant,
}

impl Registry {
    /// A client speaking `protocol`, metered from the start at [`BODIES`],
    /// for at most [`TIME`].
    pub(super) fn new(protocol: ClientProtocol) -> Self {
        Self::lasting(protocol, TIME)
    }

    /// A client that ends after `time` in all.
    fn lasting(protocol: ClientProtocol, time: Duration) -> Self {
        let meter = Arc::new(Meter {
            allowed: AtomicU64::new(BODIES),
            received: AtomicU64::new(0),
            over: AtomicBool::new(false),
            late: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            until: std::time::Instant::now() + time,
        });
        let (proxy, port) = match TcpListener::bind(("127.0.0.1", 0)) {
            Ok(listener) => {
                let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
                let meter = meter.clone();
                std::thread::spawn(move || accept(&listener, &meter));
                (Some(format!("http://127.0.0.1:{port}")), port)
            }
            // Without a loopback listener there is no client that is not
            // metered: every request fails to connect to port 0.
            Err(_) => (Some("http://127.0.0.1:0".to_owned()), 0),
        };
        crate::tls::install();
        let client = WasmClient::new(oci_client::Client::new(ClientConfig {
            protocol,
            https_proxy: proxy.clone(),
            http_proxy: proxy,
            no_proxy: None,
            ..ClientConfig::default()
        }));
        Self {
            client,
            meter,
            port,
        }
    }

    /// Allow `more` bytes on top of what is allowed, once the caller has
    /// checked what they are for.
    pub fn allow(&self, more: u64) {
        let _ = self
            .meter
            .allowed
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |now| {
                Some(now.saturating_add(more))
            });
    }

    /// Whether the registry sent more than allowed (and was cut off).
    pub fn over(&self) -> bool {
        self.meter.over.load(Ordering::Relaxed)
    }

    /// `error`, or what it means when the meter cut the registry off.
    pub fn explain(&self, error: impl std::fmt::Display) -> String {
        if self.meter.late.load(Ordering::Relaxed) {
            format!(
                "the registry did not finish within {} s; refused",
                TIME.as_secs()
            )
        } else if self.over() {
            format!(
                "the registry sent more than the {} MiB Tazuna reads for this (manifests, tag lists and token answers take at most {} MiB; a layer at most the size its manifest declares); refused",
                self.meter.allowed.load(Ordering::Relaxed) >> 20,
                BODIES >> 20
            )
        } else {
            error.to_string()
        }
    }

    /// The plain oci-client, still metered (while `self` lives).
    pub fn oci(&self) -> &oci_client::Client {
        &self.client
    }
}

impl std::ops::Deref for Registry {
    type Target = WasmClient;

    fn deref(&self) -> &WasmClient {
        &self.client
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.meter.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so it sees the stop.
        let _ = TcpStream::connect_timeout(
            &std::net::SocketAddr::from(([127, 0, 0, 1], self.port)),
            Duration::from_millis(100),
        );
    }
}

fn accept(listener: &TcpListener, meter: &Arc<Meter>) {
    for stream in listener.incoming() {
        if meter.stop.load(Ordering::Relaxed) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let meter = meter.clone();
        std::thread::spawn(move || relay(stream, &meter));
    }
}

/// One connection of the client: a CONNECT tunnel, or a plain HTTP request
/// in absolute form (which an HTTP server accepts as it is).
fn relay(mut inbound: TcpStream, meter: &Meter) {
    let _ = inbound.set_read_timeout(Some(Duration::from_secs(30)));
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 64 * 1024 {
        match inbound.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let _ = inbound.set_read_timeout(None);
    let text = String::from_utf8_lossy(&head).into_owned();
    let mut words = text.lines().next().unwrap_or_default().split_whitespace();
    let (Some(method), Some(target)) = (words.next(), words.next()) else {
        return;
    };
    let tunnel = method == "CONNECT";
    let authority = if tunnel {
        Some(target.to_owned())
    } else {
        target
            .strip_prefix("http://")
            .map(|rest| rest.split('/').next().unwrap_or_default())
            .map(|host| match host.rsplit_once(':') {
                Some((_, port)) if port.parse::<u16>().is_ok() && !host.ends_with(']') => {
                    host.to_owned()
                }
                _ => format!("{host}:80"),
            })
    };
    let Some(authority) = authority else {
        let _ = inbound.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        return;
    };
    // The user's own proxy, if the environment names one for this host: the
    // request goes to it as it came (absolute form, or CONNECT), and its
    // answers are metered like the registry's.
    let upstream = upstream_proxy(tunnel, &authority, |name| std::env::var(name).ok());
    let Some(outbound) = TcpStream::connect(upstream.as_deref().unwrap_or(&authority)).ok() else {
        let _ = inbound.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
        return;
    };
    if tunnel && upstream.is_some() {
        if (&outbound).write_all(&head).is_err() {
            return;
        }
    } else if tunnel {
        if inbound
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .is_err()
        {
            return;
        }
    } else if (&outbound).write_all(&head).is_err() {
        return;
    }
    let (Ok(up_from), Ok(up_to)) = (inbound.try_clone(), outbound.try_clone()) else {
        return;
    };
    let up = std::thread::spawn(move || {
        let (mut from, mut to) = (up_from, up_to);
        let _ = std::io::copy(&mut from, &mut to);
        let _ = to.shutdown(Shutdown::Write);
    });
    metered_copy(&outbound, &inbound, meter);
    let _ = inbound.shutdown(Shutdown::Both);
    let _ = outbound.shutdown(Shutdown::Both);
    let _ = up.join();
}

/// Copy what the registry sends to the client, counting it; past the
/// allowance, stop.
fn metered_copy(mut from: &TcpStream, mut to: &TcpStream, meter: &Meter) {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let left = meter
            .until
            .saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            meter.late.store(true, Ordering::Relaxed);
            return;
        }
        let _ = from.set_read_timeout(Some(left.min(SILENCE)));
        let n = match from.read(&mut buffer) {
            Ok(0) => return,
            // Past the client's time, or silent for long (or idle in the
            // client's pool): closed; the client opens another if it still
            // needs one and has time left.
            Err(_) => {
                if std::time::Instant::now() >= meter.until {
                    meter.late.store(true, Ordering::Relaxed);
                }
                return;
            }
            Ok(n) => n,
        };
        let received = meter.received.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
        if received > meter.allowed.load(Ordering::Relaxed) {
            meter.over.store(true, Ordering::Relaxed);
            return;
        }
        if to.write_all(&buffer[..n]).is_err() {
            return;
        }
    }
}

/// `host:port` of the proxy the environment names for `authority` (HTTPS for
/// a tunnel, HTTP otherwise), unless `NO_PROXY` lists the host or it is on
/// loopback.
fn upstream_proxy(
    tunnel: bool,
    authority: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    let variable = |names: [&str; 2]| {
        names
            .into_iter()
            .find_map(|name| env(name).filter(|v| !v.is_empty()))
    };
    let proxy = if tunnel {
        variable(["HTTPS_PROXY", "https_proxy"])
    } else {
        variable(["HTTP_PROXY", "http_proxy"])
    }?;
    let host = authority
        .rsplit_once(':')
        .map_or(authority, |(host, _)| host)
        .trim_matches(['[', ']']);
    let loopback = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    let skipped = variable(["NO_PROXY", "no_proxy"]).is_some_and(|list| {
        list.split(',').map(str::trim).any(|entry| {
            let entry = entry.trim_start_matches('.');
            entry == "*" || host == entry || host.ends_with(&format!(".{entry}"))
        })
    });
    if loopback || skipped {
        return None;
    }
    let rest = proxy
        .split_once("://")
        .map_or(proxy.as_str(), |(_, rest)| rest);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let rest = rest.trim_end_matches('/');
    Some(match rest.rsplit_once(':') {
        Some((_, port)) if port.parse::<u16>().is_ok() => rest.to_owned(),
        _ => format!("{rest}:80"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A registry that answers every request with a body that never ends.
    fn endless_registry() -> String {
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let address = listener.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                std::thread::spawn(move || {
                    let mut head = [0u8; 4096];
                    let _ = stream.read(&mut head);
                    let _ = stream.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nTransfer-Encoding: chunked\r\n\r\n",
                    );
                    let chunk = format!("10000\r\n{}\r\n", " ".repeat(0x10000));
                    while stream.write_all(chunk.as_bytes()).is_ok() {}
                });
            }
        });
        address
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn an_endless_manifest_or_tag_list_is_cut_off_at_the_allowance() {
        let address = endless_registry();
        let registry = Registry::new(ClientProtocol::HttpsExcept(vec![address.clone()]));
        let reference: oci_client::Reference = format!("{address}/plugins/p:1").parse().unwrap();
        let auth = oci_client::secrets::RegistryAuth::Anonymous;
        let error = registry
            .oci()
            .pull_manifest_raw(
                &reference,
                &auth,
                &["application/vnd.oci.image.manifest.v1+json"],
            )
            .await
            .unwrap_err();
        assert!(registry.over(), "{error}");
        assert!(
            registry
                .explain(&error)
                .contains("the registry sent more than the 8 MiB"),
            "{}",
            registry.explain(&error)
        );
        let registry = Registry::new(ClientProtocol::HttpsExcept(vec![address]));
        let error = registry
            .list_tags(&reference, &auth, None, None)
            .await
            .unwrap_err();
        assert!(registry.over(), "{error}");
    }

    /// A registry that sends a manifest one byte a second.
    fn trickling_registry() -> String {
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let address = listener.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                std::thread::spawn(move || {
                    let mut head = [0u8; 4096];
                    let _ = stream.read(&mut head);
                    let _ = stream.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nContent-Length: 1000000\r\n\r\n",
                    );
                    while stream.write_all(b" ").is_ok() {
                        std::thread::sleep(Duration::from_secs(1));
                    }
                });
            }
        });
        address
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_registry_that_sends_slowly_is_cut_off_at_the_clients_time() {
        let address = trickling_registry();
        let registry = Registry::lasting(
            ClientProtocol::HttpsExcept(vec![address.clone()]),
            Duration::from_secs(2),
        );
        let reference: oci_client::Reference = format!("{address}/plugins/p:1").parse().unwrap();
        let started = std::time::Instant::now();
        let error = registry
            .oci()
            .pull_manifest_raw(
                &reference,
                &oci_client::secrets::RegistryAuth::Anonymous,
                &["application/vnd.oci.image.manifest.v1+json"],
            )
            .await
            .unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert!(
            registry
                .explain(&error)
                .contains("the registry did not finish within"),
            "{}",
            registry.explain(&error)
        );
    }

    #[test]
    fn the_users_proxy_is_used_except_for_loopback_and_no_proxy() {
        let env = |name: &str| match name {
            "HTTPS_PROXY" => Some("http://user:pw@proxy.corp:3128/".to_owned()),
            "no_proxy" => Some("internal.corp,.svc".to_owned()),
            _ => None,
        };
        assert_eq!(
            upstream_proxy(true, "ghcr.io:443", env).as_deref(),
            Some("proxy.corp:3128")
        );
        assert_eq!(upstream_proxy(true, "127.0.0.1:5000", env), None);
        assert_eq!(
            upstream_proxy(true, "registry.internal.corp:443", env),
            None
        );
        assert_eq!(upstream_proxy(true, "r.ns.svc:443", env), None);
        assert_eq!(
            upstream_proxy(false, "ghcr.io:80", env),
            None,
            "no HTTP_PROXY set"
        );
    }
}
