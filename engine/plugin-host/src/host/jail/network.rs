//! The jail's network: a namespace with only loopback, and in it a forwarder
//! for each endpoint the manifest names (the same port on loopback for a
//! loopback endpoint, one CONNECT proxy for the others).

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::endpoint::Endpoint;
use super::signing::{Logins, Wire};

/// Where connections to one of the jail's listeners go.
pub(super) enum Route {
    /// To this address on Tazuna's side, for this endpoint.
    Forward(SocketAddr, Endpoint),
    /// Through a CONNECT proxy, to these endpoints only.
    Proxy(Vec<Endpoint>),
}

/// No network namespaces off Linux.
#[cfg(not(target_os = "linux"))]
pub(super) fn enter_network_namespace() -> Result<(), String> {
    Err("no network namespace: tools are jailed on Linux only".into())
}

/// Enter a new network namespace on this thread and bring its loopback up.
#[cfg(target_os = "linux")]
pub(super) fn enter_network_namespace() -> Result<(), String> {
    #[allow(unsafe_code)]
    // SAFETY: unshare(2) and the ioctls below take only the flags and the
    // zeroed `ifreq` we own; CLONE_NEWNET changes this thread alone.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNET) != 0 {
            return Err(format!(
                "no network namespace ({}; unprivileged users need user namespaces, which this kernel or its settings refuse)",
                std::io::Error::last_os_error()
            ));
        }
        let socket = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if socket < 0 {
            return Err(format!(
                "cannot bring up loopback: {}",
                std::io::Error::last_os_error()
            ));
        }
        let mut request: libc::ifreq = std::mem::zeroed();
        for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
            *slot = *byte as libc::c_char;
        }
        let up = libc::ioctl(socket, libc::SIOCGIFFLAGS as _, &mut request) == 0 && {
            request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            libc::ioctl(socket, libc::SIOCSIFFLAGS as _, &request) == 0
        };
        let error = std::io::Error::last_os_error();
        libc::close(socket);
        if !up {
            return Err(format!("cannot bring up loopback: {error}"));
        }
    }
    Ok(())
}

/// Listen, inside the namespace this thread is in, for each endpoint.
/// Loopback endpoints keep their port; the others go through one CONNECT
/// proxy named in `HTTPS_PROXY`.
pub(super) fn listen(
    endpoints: &[Endpoint],
    command: &mut Command,
) -> Result<Vec<(TcpListener, Route)>, String> {
    let mut routes = Vec::new();
    let mut ports = Vec::new();
    let (local, remote): (Vec<&Endpoint>, Vec<&Endpoint>) =
        endpoints.iter().partition(|e| e.is_loopback());
    for endpoint in local {
        if ports.contains(&endpoint.port) {
            continue;
        }
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, endpoint.port))
            .map_err(|e| format!("cannot forward {endpoint}: {e}"))?;
        let target = SocketAddr::from((Ipv4Addr::LOCALHOST, endpoint.port));
        routes.push((listener, Route::Forward(target, endpoint.clone())));
        ports.push(endpoint.port);
    }
    if !remote.is_empty() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(|e| format!("cannot start the jail's proxy: {e}"))?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let url = format!("http://127.0.0.1:{port}");
        for key in ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"] {
            command.env(key, &url);
        }
        // A loopback endpoint is forwarded on its own port (the proxy would
        // refuse loopback): curl, and so git, reach it directly; Go does so
        // unasked.
        for key in ["NO_PROXY", "no_proxy"] {
            command.env(key, "localhost,127.0.0.1,::1");
        }
        routes.push((
            listener,
            Route::Proxy(remote.into_iter().cloned().collect()),
        ));
    }
    Ok(routes)
}

/// Accept connections on `listener` until `stop` is set, handing each to
/// `handle` on a thread of its own.
pub(super) fn serve(
    listener: TcpListener,
    stop: Arc<AtomicBool>,
    handle: impl Fn(TcpStream) + Send + Sync + 'static,
) {
    let handle = Arc::new(handle);
    let _ = listener.set_nonblocking(true);
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((stream, _)) => {
                    let _ = stream.set_nonblocking(false);
                    let handle = handle.clone();
                    std::thread::spawn(move || handle(stream));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    });
}

/// Carry one connection to `target`: through the signing forwarder where
/// one of `logins` is for it, else byte for byte.
pub(super) fn forward(inbound: TcpStream, outbound: TcpStream, target: &Endpoint, logins: &Logins) {
    if logins.covers(target) {
        // A login crosses the network only over TLS; on loopback it stays
        // on this machine whichever way the registry speaks.
        let wire = if target.is_loopback() {
            Wire::AsTheTool
        } else {
            Wire::Tls
        };
        super::signing::sign(inbound, outbound, target, logins, wire);
    } else {
        splice(inbound, outbound);
    }
}

/// Copy both ways between `a` and `b` until each side has closed.
fn splice(a: TcpStream, b: TcpStream) {
    let (Ok(a2), Ok(b2)) = (a.try_clone(), b.try_clone()) else {
        return;
    };
    let one = std::thread::spawn(move || copy_then_close(a, b2));
    copy_then_close(b, a2);
    let _ = one.join();
}

fn copy_then_close(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
}

/// One CONNECT request: through to an allowed endpoint, else 403. A host
/// one of `logins` is for gets the signing forwarder, the others a splice.
pub(super) fn proxy(mut inbound: TcpStream, allowed: &[Endpoint], logins: &Logins) {
    let _ = inbound.set_read_timeout(Some(Duration::from_secs(10)));
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 8192 {
        match inbound.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let _ = inbound.set_read_timeout(None);
    let line = String::from_utf8_lossy(&head);
    let target = line
        .lines()
        .next()
        .and_then(|first| first.strip_prefix("CONNECT "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|authority| {
            let (host, port) = authority.rsplit_once(':')?;
            Some(Endpoint {
                host: host.trim_matches(['[', ']']).to_owned(),
                port: port.parse().ok()?,
            })
        });
    let Some(target) = target.filter(|t| allowed.contains(t)) else {
        let _ = inbound.write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
        return;
    };
    let resolved: Vec<SocketAddr> = (target.host.as_str(), target.port)
        .to_socket_addrs()
        .map(Iterator::collect)
        .unwrap_or_default();
    // Connect to an address checked here, never to a second lookup's.
    let reachable: Vec<SocketAddr> = resolved
        .into_iter()
        .filter(|addr| reachable(&target, addr.ip()))
        .collect();
    if reachable.is_empty() {
        let _ = inbound.write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
        return;
    }
    let outbound = reachable
        .iter()
        .find_map(|addr| TcpStream::connect_timeout(addr, Duration::from_secs(10)).ok());
    let Some(outbound) = outbound else {
        let _ = inbound.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
        return;
    };
    if inbound
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .is_ok()
    {
        forward(inbound, outbound, &target, logins);
    }
}

/// Whether the proxy may connect to `ip` for `named`: an address on the
/// public internet, or the very address the file names (a registry at
/// `10.0.0.5`). A name that resolves to loopback, a private or link-local
/// network (cloud metadata at `169.254.169.254`) or the unspecified address
/// is refused, and `0.0.0.0` and `::` are refused even when named: they reach
/// the host's own services.
fn reachable(named: &Endpoint, ip: IpAddr) -> bool {
    // `::ffff:0.0.0.0` is `0.0.0.0` to the kernel: compare what it routes.
    let ip = ip.to_canonical();
    if ip.is_unspecified() {
        return false;
    }
    let literal = named
        .host
        .parse::<IpAddr>()
        .is_ok_and(|given| given.to_canonical() == ip);
    literal || public(ip)
}

/// An address of the public internet: IPv6 global unicast (`2000::/3`, but
/// documentation), and IPv4 outside the special-purpose blocks of RFC 6890.
fn public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_multicast()
                || a == 0
                || a >= 240
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (b == 18 || b == 19))
                || (a == 192 && b == 0))
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => public(IpAddr::V4(v4)),
            None => {
                let [first, second, ..] = v6.segments();
                (first & 0xe000) == 0x2000 && !(first == 0x2001 && second == 0x0db8)
            }
        },
    }
}

/// The endpoints named in a manifest's config (the user's `tazuna.yaml`,
/// as its strings, [`crate::config_strings::strings_in`]): every `oci://`,
/// `http://` and `https://` URL in it, and the chart repositories of
/// `repositories` (name, URL) whose name appears as a value or as the
/// `<name>/` of a chart reference.
pub fn endpoints_named_in(strings: &[&str], repositories: &[(String, String)]) -> Vec<Endpoint> {
    let mut found = Vec::new();
    for text in strings {
        for word in text.split(|c: char| c.is_whitespace() || c == ',' || c == '"') {
            if let Some(endpoint) = endpoint_of_url(word) {
                found.push(endpoint);
            }
        }
        for (name, url) in repositories {
            let named = *text == name || text.starts_with(&format!("{name}/"));
            if named && let Some(endpoint) = endpoint_of_url(url) {
                found.push(endpoint);
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// `oci://host:port/…`, `https://host/…` or `http://host:port/…` as an endpoint.
pub fn endpoint_of_url(url: &str) -> Option<Endpoint> {
    let (scheme, rest) = url.split_once("://")?;
    let default = match scheme {
        "https" | "oci" => 443,
        "http" => 80,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    if authority.is_empty() {
        return None;
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => {
            match port.parse() {
                Ok(port) => (host, port),
                Err(_) => (authority, default),
            }
        }
        _ => (authority, default),
    };
    Some(Endpoint {
        host: host.trim_matches(['[', ']']).to_owned(),
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The endpoints a config (JSON text) names.
    fn endpoints_in(config: &str, repositories: &[(String, String)]) -> Vec<Endpoint> {
        let value: serde_json::Value = serde_json::from_str(config).unwrap();
        endpoints_named_in(&crate::config_strings::strings_in(&value), repositories)
    }

    #[test]
    fn urls_in_the_config_name_their_endpoints() {
        let config = r#"{"chart":"oci://127.0.0.1:5000/charts/hello","repo":"https://charts.example","values":{"x":"http://10.0.0.1:8080/a"}}"#;
        let found = endpoints_in(config, &[]);
        let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            ["10.0.0.1:8080", "127.0.0.1:5000", "charts.example:443"]
        );
    }

    #[test]
    fn a_repository_is_named_by_its_name_or_a_chart_in_it() {
        let repos = vec![
            ("acme".to_owned(), "http://127.0.0.1:8879/charts".to_owned()),
            ("other".to_owned(), "https://other.example".to_owned()),
        ];
        let found = endpoints_in(r#"{"repo":"acme","chart":"hello"}"#, &repos);
        assert_eq!(
            found,
            [Endpoint {
                host: "127.0.0.1".into(),
                port: 8879
            }]
        );
        let found = endpoints_in(r#"{"chart":"other/app"}"#, &repos);
        assert_eq!(
            found,
            [Endpoint {
                host: "other.example".into(),
                port: 443
            }]
        );
        assert!(endpoints_in(r#"{"chart":"local/dir"}"#, &repos).is_empty());
    }

    #[test]
    fn words_that_are_not_urls_name_nothing() {
        assert_eq!(endpoint_of_url("ftp://x"), None);
        assert_eq!(endpoint_of_url("charts/hello"), None);
        assert_eq!(
            endpoint_of_url("https://user:pw@h.example:8443/x"),
            Some(Endpoint {
                host: "h.example".into(),
                port: 8443
            })
        );
    }

    #[test]
    fn a_name_is_reached_only_at_a_public_address_and_a_literal_only_where_named() {
        let named = |host: &str| Endpoint {
            host: host.to_owned(),
            port: 443,
        };
        let ip = |text: &str| text.parse::<IpAddr>().unwrap();
        assert!(reachable(&named("registry.example"), ip("93.184.215.14")));
        assert!(reachable(
            &named("registry.example"),
            ip("2606:2800:21f:cb07::1")
        ));
        for inside in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
        ] {
            assert!(!reachable(&named("evil.example"), ip(inside)), "{inside}");
        }
        assert!(reachable(&named("10.0.0.5"), ip("10.0.0.5")));
        assert!(!reachable(&named("10.0.0.5"), ip("10.0.0.6")));
        assert!(!reachable(&named("0.0.0.0"), ip("0.0.0.0")));
        // The IPv4-mapped spellings of the unspecified address, even named.
        for host in ["::ffff:0.0.0.0", "::ffff:0:0", "::"] {
            assert!(!reachable(&named(host), ip(host)), "{host}");
        }
    }

    #[test]
    fn the_proxy_does_not_carry_a_named_host_to_the_hosts_own_services() {
        let service = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = service.local_addr().unwrap().port();
        service.set_nonblocking(true).unwrap();
        // `localhost` resolves to loopback; `0.0.0.0` is the host itself.
        for (host, authority) in [
            ("localhost", "localhost"),
            ("0.0.0.0", "0.0.0.0"),
            ("::ffff:0.0.0.0", "[::ffff:0.0.0.0]"),
        ] {
            let allowed = vec![Endpoint {
                host: host.to_owned(),
                port,
            }];
            let front = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
            let address = front.local_addr().unwrap();
            let handle = std::thread::spawn(move || {
                let (inbound, _) = front.accept().unwrap();
                proxy(inbound, &allowed, &Logins::default());
            });
            let mut client = TcpStream::connect(address).unwrap();
            write!(
                client,
                "CONNECT {authority}:{port} HTTP/1.1\r\nHost: {authority}:{port}\r\n\r\n"
            )
            .unwrap();
            let mut answer = String::new();
            client.read_to_string(&mut answer).unwrap();
            handle.join().unwrap();
            assert!(answer.starts_with("HTTP/1.1 403"), "{host}: {answer}");
        }
        assert!(
            service.accept().is_err(),
            "the host's service saw a connection"
        );
    }
}
