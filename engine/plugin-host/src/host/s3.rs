//! States kept by the `s3` backend, fetched for `spec.inputs` (the engine's
//! `RemoteInputs` calls [`S3States::fetch_s3`]): one `GetObject`, signed
//! with the standard AWS chain like a resolver's requests, to AWS's own name
//! for the bucket or to the `endpoint` the input names.

use std::time::Duration;

use tazuna_core::inputs::{FetchError, MAX_STATE_BYTES, S3Object};

use super::aws;
use super::environment::ProcessEnvironment;

/// How long a fetch may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Fetches S3 objects for `tazuna_core::inputs`.
#[derive(Debug, Default)]
pub struct S3States;

/// The URL of `object` in `region`: path-style below an endpoint, else
/// AWS's virtual-hosted name.
fn url_of(object: &S3Object, region: &str) -> Result<reqwest::Url, FetchError> {
    let base = match &object.endpoint {
        Some(endpoint) => format!("{}/{}/", endpoint.trim_end_matches('/'), object.bucket),
        None => format!("https://{}.s3.{region}.amazonaws.com/", object.bucket),
    };
    let mut url = reqwest::Url::parse(&base)
        .map_err(|error| FetchError::Unreachable(format!("`{base}` is not a URL: {error}")))?;
    url.path_segments_mut()
        .map_err(|()| FetchError::Unreachable(format!("`{base}` cannot hold a key")))?
        .pop_if_empty()
        .extend(object.key.split('/'));
    Ok(url)
}

/// The `<Code>` of an S3 error answer.
fn code_of(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    text.split_once("<Code>")
        .and_then(|(_, rest)| rest.split_once("</Code>"))
        .map_or_else(|| "error".to_owned(), |(code, _)| code.to_owned())
}

impl S3States {
    /// The bytes of `object`, at most `MAX_STATE_BYTES`.
    pub fn fetch_s3(&self, object: &S3Object) -> Result<Vec<u8>, FetchError> {
        // The file is loaded from async code too: the request gets a thread
        // of its own, off any runtime.
        std::thread::scope(|scope| {
            scope
                .spawn(|| fetch(object))
                .join()
                .unwrap_or_else(|_| Err(FetchError::Unreachable("the fetch panicked".to_owned())))
        })
    }
}

/// [`S3States::fetch_s3`], on a thread of its own.
fn fetch(object: &S3Object) -> Result<Vec<u8>, FetchError> {
    {
        let env = ProcessEnvironment;
        let region = object
            .region
            .clone()
            .or_else(|| aws::region(&env, object.profile.as_deref()))
            .ok_or_else(|| {
                FetchError::Refused(
                    "no AWS region: set `region` in the input's `s3`, or `AWS_REGION`".to_owned(),
                )
            })?;
        let url = url_of(object, &region)?;
        let credentials = super::outbound::aws_credentials(object.profile.as_deref(), TIMEOUT)
            .map_err(|error| FetchError::Refused(error.to_string()))?;
        let headers = super::outbound::sign_now(&credentials, "s3", &region, "GET", &url, &[], &[]);
        let authority = format!(
            "{}:{}",
            url.host_str().unwrap_or_default(),
            url.port_or_known_default().unwrap_or(443)
        );
        let answer = super::outbound::http(
            reqwest::Method::GET,
            url.clone(),
            &headers,
            Vec::new(),
            None,
            TIMEOUT,
        )
        .map_err(|error| FetchError::Unreachable(format!("`{authority}`: {error}")))?;
        match answer.status {
            200 if answer.body.len() as u64 <= MAX_STATE_BYTES => Ok(answer.body),
            200 => Err(FetchError::Unreachable(format!(
                "an object of more than {} MiB",
                MAX_STATE_BYTES / 1024 / 1024
            ))),
            404 => Err(FetchError::NotFound),
            401 | 403 => Err(FetchError::Refused(format!(
                "S3 refused the request ({}, HTTP {})",
                code_of(&answer.body),
                answer.status
            ))),
            status => Err(FetchError::Unreachable(format!(
                "S3 answered HTTP {status} ({})",
                code_of(&answer.body)
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_is_addressed_path_style_below_an_endpoint_and_by_name_at_aws() {
        let object = S3Object {
            bucket: "tofu-state".into(),
            key: "env/prod/terraform.tfstate".into(),
            region: None,
            profile: None,
            endpoint: Some("http://127.0.0.1:5000/".into()),
        };
        assert_eq!(
            url_of(&object, "us-east-1").unwrap().as_str(),
            "http://127.0.0.1:5000/tofu-state/env/prod/terraform.tfstate"
        );
        let at_aws = S3Object {
            endpoint: None,
            ..object
        };
        assert_eq!(
            url_of(&at_aws, "eu-west-1").unwrap().as_str(),
            "https://tofu-state.s3.eu-west-1.amazonaws.com/env/prod/terraform.tfstate"
        );
        assert_eq!(
            code_of(b"<Error><Code>AccessDenied</Code></Error>"),
            "AccessDenied"
        );
    }
}
