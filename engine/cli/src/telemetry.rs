//! Traces to an OpenTelemetry collector: `--otlp-endpoint`, `--otlp-insecure`
//! (Go Tazuna's flags) and the standard `OTEL_*` variables.
//!
//! The engine opens `tracing` spans under the target [`tazuna_core::TRACE`]
//! (the run, each cluster, render, plugin call, tool run, manifest, apply
//! phase and wait); only this layer sees them, so logs on stderr read as they
//! do without tracing. Without an endpoint nothing here is built and those
//! spans cost a disabled callsite each.
//!
//! The exporter is OTLP over gRPC (`OTEL_EXPORTER_OTLP_PROTOCOL=grpc`, the
//! default) or over HTTP with protobuf (`http/protobuf`). Spans are sent in
//! batches from a thread of their own; [`Telemetry::shutdown`] sends the rest
//! before the process exits.

use std::time::Duration;

use anyhow::{Context, bail};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig, WithTonicConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;

/// Where traces go, resolved from the flags and the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The collector's URL, with its scheme.
    pub url: String,
    /// How the spans travel.
    pub protocol: Protocol,
}

/// OTLP's transports that Tazuna speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OTLP/gRPC (port 4317 by convention).
    Grpc,
    /// OTLP/HTTP with protobuf bodies (port 4318, path `/v1/traces`).
    HttpProtobuf,
}

/// The environment as the resolution reads it (a function, for tests).
type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

impl Endpoint {
    /// The endpoint `--otlp-endpoint` (else `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
    /// else `OTEL_EXPORTER_OTLP_ENDPOINT`) names, or `None` when tracing is off.
    /// An endpoint without a scheme (`collector:4317`, as Go Tazuna takes it)
    /// is `https`, or `http` with `--otlp-insecure` (or
    /// `OTEL_EXPORTER_OTLP_INSECURE=true`).
    pub fn resolve(
        flag: Option<&str>,
        insecure: bool,
        env: Env<'_>,
    ) -> anyhow::Result<Option<Self>> {
        let set = |key: &str| env(key).filter(|v| !v.trim().is_empty());
        if set("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
            || set("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"))
        {
            return Ok(None);
        }
        let protocol = match set("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| set("OTEL_EXPORTER_OTLP_PROTOCOL"))
            .as_deref()
        {
            None | Some("grpc") => Protocol::Grpc,
            Some("http/protobuf") => Protocol::HttpProtobuf,
            Some(other) => bail!(
                "OTEL_EXPORTER_OTLP_PROTOCOL is `{other}`; Tazuna sends traces as `grpc` or `http/protobuf`"
            ),
        };
        // A signal's own endpoint is used as it is; the general one gets the
        // signal's path (OTLP/HTTP only), as the OTLP exporter spec says.
        let (given, source, append_path) = if let Some(flag) = flag.filter(|f| !f.trim().is_empty())
        {
            (flag.trim().to_owned(), "--otlp-endpoint", true)
        } else if let Some(url) = set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            (url, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", false)
        } else if let Some(url) = set("OTEL_EXPORTER_OTLP_ENDPOINT") {
            (url, "OTEL_EXPORTER_OTLP_ENDPOINT", true)
        } else {
            if insecure {
                bail!(
                    "--otlp-insecure needs --otlp-endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT), the collector to send traces to"
                );
            }
            return Ok(None);
        };
        let insecure = insecure
            || set("OTEL_EXPORTER_OTLP_TRACES_INSECURE")
                .or_else(|| set("OTEL_EXPORTER_OTLP_INSECURE"))
                .is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let mut url = match given.split_once("://") {
            Some(("https", _)) if insecure => {
                return Err(crate::failure::advised(
                    format!(
                        "{source} is `{given}`, an https URL, but --otlp-insecure asks for plain text"
                    ),
                    "give `http://…`, or leave out --otlp-insecure",
                ));
            }
            Some(("http" | "https", rest)) if !rest.is_empty() => given.clone(),
            Some(_) => {
                bail!("{source} is `{given}`; give `host:port` or an `http://` or `https://` URL")
            }
            None if insecure => format!("http://{given}"),
            None => format!("https://{given}"),
        };
        if protocol == Protocol::HttpProtobuf && append_path {
            let after_host = url.split_once("://").map_or("", |(_, rest)| rest);
            match after_host.split_once('/') {
                None => url.push_str("/v1/traces"),
                Some((_, "")) => url.push_str("v1/traces"),
                Some((_, path)) if !path.ends_with("v1/traces") => {
                    url = format!("{}/v1/traces", url.trim_end_matches('/'));
                }
                Some(_) => {}
            }
        }
        Ok(Some(Self { url, protocol }))
    }
}

/// A running exporter; dropping it without [`Self::shutdown`] loses the spans
/// not yet sent.
pub struct Telemetry {
    provider: SdkTracerProvider,
    /// The runtime tonic's channel lives on (gRPC only): the batch thread
    /// sends through it, after every command's own runtime has ended.
    runtime: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry").finish_non_exhaustive()
    }
}

/// How long the last spans may take to leave at exit.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

impl Telemetry {
    /// Build the exporter for `endpoint`, and the tracer the `tracing` layer
    /// hands spans to.
    pub fn start(endpoint: &Endpoint) -> anyhow::Result<(Self, opentelemetry_sdk::trace::Tracer)> {
        let mut runtime = None;
        // tonic's TLS and reqwest's use the process's provider.
        tazuna_engine::tls::install();
        let exporter = match endpoint.protocol {
            Protocol::Grpc => {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("tazuna-otlp")
                    .enable_all()
                    .build()
                    .context("cannot start the thread that sends traces")?;
                let exporter = {
                    let _entered = rt.enter();
                    let mut builder = opentelemetry_otlp::SpanExporter::builder()
                        .with_tonic()
                        .with_endpoint(endpoint.url.clone())
                        .with_timeout(EXPORT_TIMEOUT);
                    if endpoint.url.starts_with("https://") {
                        builder = builder.with_tls_config(
                            opentelemetry_otlp::tonic_types::transport::ClientTlsConfig::new()
                                .with_native_roots(),
                        );
                    }
                    builder.build()
                };
                runtime = Some(rt);
                exporter
            }
            Protocol::HttpProtobuf => opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_http_client(BlockingHttp(
                    reqwest::blocking::Client::builder()
                        .timeout(EXPORT_TIMEOUT)
                        .build()
                        .context("cannot build the HTTP client that sends traces")?,
                ))
                .with_endpoint(endpoint.url.clone())
                .with_timeout(EXPORT_TIMEOUT)
                .build(),
        }
        .with_context(|| format!("cannot send traces to `{}`", endpoint.url))?;
        // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override these.
        let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.is_empty())
            || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| {
                v.split(',')
                    .any(|kv| kv.trim().starts_with("service.name="))
            });
        let mut resource = Resource::builder();
        if !named {
            resource = resource.with_service_name("tazuna");
        }
        let resource = resource
            .with_attribute(opentelemetry::KeyValue::new(
                "service.version",
                env!("CARGO_PKG_VERSION"),
            ))
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("tazuna");
        Ok((Self { provider, runtime }, tracer))
    }

    /// Send the spans still held, then stop. A collector that is not there
    /// costs at most the export timeout, never the command's outcome.
    pub fn shutdown(self) {
        if let Err(error) = self.provider.shutdown_with_timeout(EXPORT_TIMEOUT) {
            eprintln!("warning: not every trace span reached the collector: {error}");
        }
        if let Some(runtime) = self.runtime {
            runtime.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

/// OTLP/HTTP over the blocking reqwest client: the batch processor exports
/// from a plain thread, where an async client finds no runtime.
#[derive(Debug)]
struct BlockingHttp(reqwest::blocking::Client);

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for BlockingHttp {
    async fn send_bytes(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> Result<http::Response<bytes::Bytes>, opentelemetry_http::HttpError> {
        let (parts, body) = request.into_parts();
        let mut outgoing = self.0.request(parts.method, parts.uri.to_string());
        for (name, value) in &parts.headers {
            outgoing = outgoing.header(name, value);
        }
        let response = outgoing.body(body.to_vec()).send()?;
        let mut built = http::Response::builder().status(response.status());
        for (name, value) in response.headers() {
            built = built.header(name, value);
        }
        Ok(built.body(response.bytes()?)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(
        flag: Option<&str>,
        insecure: bool,
        vars: &[(&str, &str)],
    ) -> anyhow::Result<Option<Endpoint>> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Endpoint::resolve(flag, insecure, &|key| {
            vars.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
        })
    }

    fn url(flag: Option<&str>, insecure: bool, vars: &[(&str, &str)]) -> String {
        resolve(flag, insecure, vars).unwrap().unwrap().url
    }

    #[test]
    fn go_tazunas_host_and_port_is_https_unless_insecure() {
        assert_eq!(
            url(Some("collector:4317"), false, &[]),
            "https://collector:4317"
        );
        assert_eq!(
            url(Some("collector:4317"), true, &[]),
            "http://collector:4317"
        );
        assert_eq!(url(Some("http://c:4317"), false, &[]), "http://c:4317");
        assert_eq!(
            url(
                Some("c:4317"),
                false,
                &[("OTEL_EXPORTER_OTLP_INSECURE", "true")]
            ),
            "http://c:4317"
        );
    }

    #[test]
    fn the_flag_comes_before_the_variables_and_the_traces_variable_before_the_general_one() {
        let both = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://general:4317"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:4317"),
        ];
        assert_eq!(
            url(Some("http://flag:4317"), false, &both),
            "http://flag:4317"
        );
        assert_eq!(url(None, false, &both), "http://traces:4317");
        assert_eq!(url(None, false, &both[..1]), "http://general:4317");
    }

    #[test]
    fn over_http_the_general_endpoint_gets_the_traces_path_and_the_traces_endpoint_is_kept() {
        let http = ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf");
        assert_eq!(
            url(
                None,
                false,
                &[http, ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")]
            ),
            "http://c:4318/v1/traces"
        );
        assert_eq!(
            url(
                None,
                false,
                &[http, ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/otlp/")]
            ),
            "http://c:4318/otlp/v1/traces"
        );
        assert_eq!(
            url(
                None,
                false,
                &[
                    http,
                    ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c:4318/in")
                ]
            ),
            "http://c:4318/in"
        );
        assert_eq!(
            url(Some("c:4318"), true, &[http]),
            "http://c:4318/v1/traces"
        );
    }

    #[test]
    fn nothing_is_sent_without_an_endpoint_or_when_the_sdk_is_disabled() {
        assert_eq!(resolve(None, false, &[]).unwrap(), None);
        let disabled = [
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
        ];
        assert_eq!(resolve(None, false, &disabled).unwrap(), None);
        let none = [
            ("OTEL_TRACES_EXPORTER", "none"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
        ];
        assert_eq!(resolve(None, false, &none).unwrap(), None);
    }

    #[test]
    fn contradictions_and_unknown_protocols_are_refused_with_what_to_do() {
        let error = resolve(Some("https://c:4317"), true, &[]).unwrap_err();
        let said = crate::failure::describe(&error, crate::report::Color::Never).unwrap();
        assert!(
            said.contains("https URL") && said.contains("\nhint: give `http://"),
            "{said}"
        );
        let error = resolve(
            Some("c:4317"),
            false,
            &[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")],
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("`grpc` or `http/protobuf`"), "{error}");
        let error = resolve(None, true, &[]).unwrap_err().to_string();
        assert!(error.contains("needs --otlp-endpoint"), "{error}");
        let error = resolve(Some("ftp://c"), false, &[])
            .unwrap_err()
            .to_string();
        assert!(error.contains("host:port"), "{error}");
    }
}
