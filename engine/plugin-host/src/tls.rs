//! The process's TLS provider. Tazuna compiles one rustls backend, ring (the
//! workspace's `rustls` features): aws-lc-rs, reqwest's default, is a C
//! library that alone took minutes of a first build. reqwest does not pick a
//! provider by itself, so every HTTP client of this crate (OCI registries,
//! chart repositories, outbound requests) is built after [`install`].

/// Make ring the process's rustls provider; idempotent.
pub fn install() {
    // Only fails when a provider is installed already, which is the same one.
    let _ = rustls::crypto::ring::default_provider().install_default();
}
