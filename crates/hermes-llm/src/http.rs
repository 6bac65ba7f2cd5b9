//! HTTP plumbing shared by the wire formats: the client (rustls with the ring provider, connect
//! and idle timeouts; a short connect timeout for servers on this machine), posting a JSON
//! body under the call's deadlines, and turning error responses into [`LlmError::Http`] with
//! the provider's own message (credentials redacted) and `Retry-After`. A refused connection to
//! a loopback endpoint becomes [`LlmError::Unreachable`], which is not retried.

use std::time::Duration;

use futures_util::StreamExt;
use tokio::time::Instant;

use crate::limits::{LimitExceeded, StreamLimits};
use crate::redact::Secrets;
use crate::{HttpTimeouts, LlmError};

/// Longest error body we keep from a failed response.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Longest wait for an error body (a server may open one and never finish it).
const ERROR_BODY_DEADLINE: Duration = Duration::from_secs(10);
/// Connect timeout for a server on this machine: it answers at once or is not running.
const LOOPBACK_CONNECT: Duration = Duration::from_secs(2);

pub(crate) fn client(timeouts: &HttpTimeouts) -> Result<reqwest::Client, LlmError> {
    build(timeouts.connect, timeouts.idle)
}

/// The client for requests to `base_url`: loopback endpoints connect within 2 s.
pub(crate) fn client_for(
    timeouts: &HttpTimeouts,
    base_url: &str,
) -> Result<reqwest::Client, LlmError> {
    let connect = if crate::resolve::is_loopback(base_url) {
        timeouts.connect.min(LOOPBACK_CONNECT)
    } else {
        timeouts.connect
    };
    build(connect, timeouts.idle)
}

fn build(connect: Duration, idle: Duration) -> Result<reqwest::Client, LlmError> {
    // Installing twice is harmless; the first provider stays.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(connect)
        .read_timeout(idle)
        .tcp_nodelay(true)
        .user_agent(concat!("hermes-rs/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| LlmError::Config(format!("cannot build the HTTP client: {e}")))
}

/// What a call carries from its request to the end of its response: the limits, when it
/// started, and the credentials to keep out of error text.
#[derive(Debug, Clone)]
pub(crate) struct CallCtx {
    pub limits: StreamLimits,
    pub started: Instant,
    pub secrets: Secrets,
}

impl CallCtx {
    /// When the overall deadline passes.
    pub fn deadline(&self) -> Instant {
        self.started + self.limits.total
    }
}

/// A response that began, and its call.
pub(crate) struct Sent {
    pub response: reqwest::Response,
    pub ctx: CallCtx,
}

/// POSTs a JSON body asking for an event stream; a non-2xx answer becomes an error. Waiting
/// for the response to start counts against the idle deadline and the overall one.
pub(crate) async fn post_json(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&str, String)],
    body: Vec<u8>,
    limits: &StreamLimits,
) -> Result<Sent, LlmError> {
    let ctx = CallCtx {
        limits: *limits,
        started: Instant::now(),
        secrets: Secrets::from_headers(headers.iter().map(|(n, v)| (*n, v.as_str()))),
    };
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
    let wait = limits.idle.min(limits.total);
    let response = match tokio::time::timeout(wait, request.send()).await {
        Err(_) => {
            let limit = if limits.idle <= limits.total {
                LimitExceeded::Stalled { after: wait }
            } else {
                LimitExceeded::Deadline { after: wait }
            };
            return Err(LlmError::Limit(limit));
        }
        Ok(Err(e)) => return Err(send_error(&e, url).redacted(&ctx.secrets)),
        Ok(Ok(r)) => r,
    };
    if response.status().is_success() {
        Ok(Sent { response, ctx })
    } else {
        Err(http_error(response).await.redacted(&ctx.secrets))
    }
}

/// A request that never got a response: a loopback server refusing the connection (or not
/// accepting it in time) is not running, anything else is a transport failure worth a retry.
fn send_error(e: &reqwest::Error, url: &str) -> LlmError {
    if e.is_connect() && crate::resolve::is_loopback(url) {
        let refused = source_io_kind(e) == Some(std::io::ErrorKind::ConnectionRefused);
        if refused || e.is_timeout() {
            return LlmError::Unreachable {
                endpoint: url.to_string(),
                detail: if refused {
                    "connection refused".into()
                } else {
                    "no answer within 2s".into()
                },
            };
        }
    }
    LlmError::from_reqwest(e, false)
}

/// The kind of the I/O error at the root of `e`, if there is one.
fn source_io_kind(e: &(dyn std::error::Error + 'static)) -> Option<std::io::ErrorKind> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = current {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return Some(io.kind());
        }
        current = err.source();
    }
    None
}

/// Whether the response is one JSON document (a server that ignored `stream: true`).
pub(crate) fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/json"))
}

/// Turns an error response into an [`LlmError::Http`] with the provider's message, reading at
/// most 64 KiB of its body for at most 10 s.
async fn http_error(response: reqwest::Response) -> LlmError {
    let status = response.status().as_u16();
    let retry_after = retry_after(response.headers());
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    let deadline = Instant::now() + ERROR_BODY_DEADLINE;
    while let Ok(Some(Ok(chunk))) = tokio::time::timeout_at(deadline, stream.next()).await {
        let room = MAX_ERROR_BODY.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
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
    // NaN parses as a float, and would panic in `from_secs_f64`.
    if let Some(ms) = get("retry-after-ms")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite())
    {
        return Some(Duration::from_secs_f64((ms / 1000.0).clamp(0.0, 86_400.0)));
    }
    get("retry-after")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite())
        .map(|s| Duration::from_secs_f64(s.clamp(0.0, 86_400.0)))
}
