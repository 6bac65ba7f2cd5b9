//! HTTP plumbing shared by the wire formats: the client (rustls with the ring provider, connect
//! and idle timeouts), posting a JSON body, and turning error responses into
//! [`LlmError::Http`] with the provider's own message and `Retry-After`.

use std::time::Duration;

use futures_util::StreamExt;

use crate::{HttpTimeouts, LlmError};

/// Longest error body we keep from a failed response.
const MAX_ERROR_BODY: usize = 64 * 1024;

pub(crate) fn client(timeouts: &HttpTimeouts) -> Result<reqwest::Client, LlmError> {
    // Installing twice is harmless; the first provider stays.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(timeouts.connect)
        .read_timeout(timeouts.idle)
        .tcp_nodelay(true)
        .user_agent(concat!("hermes-rs/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| LlmError::Config(format!("cannot build the HTTP client: {e}")))
}

/// POSTs a JSON body asking for an event stream; a non-2xx answer becomes an error.
pub(crate) async fn post_json(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&str, String)],
    body: Vec<u8>,
) -> Result<reqwest::Response, LlmError> {
    let mut request = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(
            reqwest::header::ACCEPT,
            "text/event-stream, application/json",
        )
        .body(body);
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let response = request
        .send()
        .await
        .map_err(|e| LlmError::from_reqwest(&e, false))?;
    if response.status().is_success() {
        Ok(response)
    } else {
        Err(http_error(response).await)
    }
}

/// Whether the response is one JSON document (a server that ignored `stream: true`).
pub(crate) fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/json"))
}

/// Turns an error response into an [`LlmError::Http`] with the provider's message.
async fn http_error(response: reqwest::Response) -> LlmError {
    let status = response.status().as_u16();
    let retry_after = retry_after(response.headers());
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_ERROR_BODY {
            break;
        }
    }
    LlmError::Http {
        status,
        message: crate::error::error_message(&body, status),
        retry_after,
    }
}

fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return Some(Duration::from_secs_f64((ms / 1000.0).clamp(0.0, 86_400.0)));
    }
    get("retry-after")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite())
        .map(|s| Duration::from_secs_f64(s.clamp(0.0, 86_400.0)))
}
