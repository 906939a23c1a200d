//! Warnings the API server sends with its answers (`Warning` headers: a
//! deprecated API or field, a value that will be ignored), passed on to the
//! code that made the request instead of being dropped.
//!
//! [`WarningLayer`] sits in the client's service stack and reads the headers.
//! A request awaited inside [`collect`] hands its warnings to that call; the
//! sink is task-local, so requests in flight together keep theirs apart. A
//! warning on any other request is logged.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{Request, Response};
use tower::{Layer, Service};

tokio::task_local! {
    static SINK: RefCell<Vec<String>>;
}

/// Run `future` and return its output with the warnings the API server sent
/// for the requests it made.
pub async fn collect<F: Future>(future: F) -> (F::Output, Vec<String>) {
    SINK.scope(RefCell::new(Vec::new()), async {
        let output = future.await;
        let warnings = SINK.with(|sink| sink.take());
        (output, warnings)
    })
    .await
}

fn record(warning: String, request: impl std::fmt::Display) {
    let unheard = SINK
        .try_with(|sink| sink.borrow_mut().push(warning.clone()))
        .is_err();
    if unheard {
        tracing::warn!("the API server warns about {request}: {warning}");
    }
}

/// The text of one `Warning` header value: `299 - "text"` gives `text`
/// (RFC 7234 section 5.5; Kubernetes always sends code 299 and agent `-`).
pub fn text(header: &str) -> Option<String> {
    let mut parts = header.splitn(3, ' ');
    let (_code, _agent, rest) = (parts.next()?, parts.next()?, parts.next()?);
    let quoted = rest.strip_prefix('"')?;
    let mut text = String::new();
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => text.push(chars.next()?),
            '"' => return Some(text),
            c => text.push(c),
        }
    }
    None
}

/// The client layer that reads `Warning` headers.
#[derive(Debug, Clone, Copy, Default)]
pub struct WarningLayer;

impl<S> Layer<S> for WarningLayer {
    type Service = WarningService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        WarningService { inner }
    }
}

/// The service [`WarningLayer`] wraps around the client's stack.
#[derive(Debug, Clone)]
pub struct WarningService<S> {
    inner: S,
}

impl<S, Req, Res> Service<Request<Req>> for WarningService<S>
where
    S: Service<Request<Req>, Response = Response<Res>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    Res: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Res>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Req>) -> Self::Future {
        // Kept cheaply (both clone by reference count); written out only for
        // a warning nobody collects.
        let (method, uri) = (request.method().clone(), request.uri().clone());
        let response = self.inner.call(request);
        // The client's buffer calls this on its own task, but the returned
        // future is awaited by the caller, inside its `collect` if any.
        Box::pin(async move {
            let response = response.await?;
            for value in response.headers().get_all(http::header::WARNING) {
                if let Some(warning) = value.to_str().ok().and_then(text) {
                    record(warning, format_args!("{method} {}", uri.path()));
                }
            }
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_of_a_warning_header_is_unquoted_and_unescaped() {
        assert_eq!(
            text(r#"299 - "spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use \"kubernetes.io/os\" instead""#).as_deref(),
            Some(r#"spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead"#)
        );
        assert_eq!(text("299 - \"unterminated"), None);
        assert_eq!(text("garbage"), None);
    }

    #[tokio::test]
    async fn collected_warnings_stay_with_their_own_future() {
        let (a, b) = tokio::join!(
            collect(async {
                record("first".into(), "GET /a");
                tokio::task::yield_now().await;
                1
            }),
            collect(async {
                tokio::task::yield_now().await;
                record("second".into(), "GET /b");
                2
            })
        );
        assert_eq!(a, (1, vec!["first".to_owned()]));
        assert_eq!(b, (2, vec!["second".to_owned()]));
    }
}
