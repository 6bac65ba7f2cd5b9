//! What every request to the API server passes before a route sees it: the defences against
//! web pages and slow clients. A page in the user's browser can send requests to a loopback
//! server without any key (a "simple" cross-origin POST needs no preflight, and DNS rebinding
//! makes a hostile name resolve to 127.0.0.1), so:
//!
//! - a request carrying an `Origin` that `API_SERVER_CORS_ORIGINS` does not allow is refused
//!   (403), preflights included; allowed origins get CORS headers (Python's set);
//! - a server bound to loopback answers only requests whose `Host` is a loopback name
//!   (`localhost`, `*.localhost`, `127.x.x.x`, `[::1]`) or one of `API_SERVER_ALLOWED_HOSTS`
//!   (403 otherwise);
//! - a request with a body must say it is JSON (415 otherwise: `text/plain` is what a page can
//!   send without a preflight);
//! - the body is read here, whole, within the body deadline and the size cap (408 / 413), so a
//!   client trickling its body cannot hold a turn slot or a connection for ever;
//! - every answer carries Python's security headers (`nosniff`, `DENY` framing, no referrer).

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use super::{MAX_BODY_BYTES, Shared, error_response};

/// Python's CORS headers for an allowed origin.
const CORS_METHODS: &str = "GET, POST, PATCH, DELETE, OPTIONS";
const CORS_HEADERS: &str =
    "Authorization, Content-Type, Idempotency-Key, X-Hermes-Session-Id, X-Hermes-Tool-Progress";
const CORS_MAX_AGE: &str = "600";

/// Python's security headers, on every answer (errors included).
const SECURITY_HEADERS: &[(&str, &str)] = &[
    (
        "content-security-policy",
        "default-src 'none'; frame-ancestors 'none'",
    ),
    (
        "permissions-policy",
        "camera=(), microphone=(), geolocation=()",
    ),
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "no-referrer"),
];

/// The browser-facing rules of one server, fixed at bind time.
#[derive(Debug, Clone, Default)]
pub(crate) struct BrowserPolicy {
    /// Allowed `Origin` values; `*` allows any.
    cors_origins: Vec<String>,
    /// Whether `Host` must be a loopback name (the server is bound to loopback).
    loopback_only: bool,
    /// `Host` names accepted besides the loopback ones (`*`: any).
    allowed_hosts: Vec<String>,
    body_timeout: Duration,
}

impl BrowserPolicy {
    pub(crate) fn new(
        cors_origins: &[String],
        bound_to_loopback: bool,
        allowed_hosts: &[String],
        body_timeout: Duration,
    ) -> Self {
        let clean = |list: &[String]| -> Vec<String> {
            list.iter()
                .map(|s| s.trim().trim_end_matches('/').to_ascii_lowercase())
                .filter(|s| !s.is_empty())
                .collect()
        };
        BrowserPolicy {
            cors_origins: clean(cors_origins),
            loopback_only: bound_to_loopback,
            allowed_hosts: clean(allowed_hosts),
            body_timeout,
        }
    }

    /// Whether any browser origin is allowed at all (reported by `/v1/capabilities`).
    pub(crate) fn cors_enabled(&self) -> bool {
        !self.cors_origins.is_empty()
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
        self.cors_origins
            .iter()
            .any(|allowed| allowed == "*" || *allowed == origin)
    }

    /// The CORS headers for an allowed `origin`.
    fn cors_headers(&self, origin: &str) -> Vec<(HeaderName, HeaderValue)> {
        let any = self.cors_origins.iter().any(|o| o == "*");
        let allow_origin = if any {
            HeaderValue::from_static("*")
        } else {
            match HeaderValue::from_str(origin.trim()) {
                Ok(v) => v,
                Err(_) => return Vec::new(),
            }
        };
        let mut headers = vec![
            (header::ACCESS_CONTROL_ALLOW_ORIGIN, allow_origin),
            (
                header::ACCESS_CONTROL_ALLOW_METHODS,
                HeaderValue::from_static(CORS_METHODS),
            ),
            (
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                HeaderValue::from_static(CORS_HEADERS),
            ),
            (
                header::ACCESS_CONTROL_EXPOSE_HEADERS,
                HeaderValue::from_static("X-Hermes-Session-Id"),
            ),
            (
                header::ACCESS_CONTROL_MAX_AGE,
                HeaderValue::from_static(CORS_MAX_AGE),
            ),
        ];
        if !any {
            headers.push((header::VARY, HeaderValue::from_static("Origin")));
        }
        headers
    }

    /// Whether `host` (a `Host` header value, port included) may be answered.
    fn host_allowed(&self, host: &str) -> bool {
        if !self.loopback_only {
            return true;
        }
        let name = host_name(host).to_ascii_lowercase();
        loopback_host(host)
            || self
                .allowed_hosts
                .iter()
                .any(|allowed| allowed == "*" || *allowed == name)
    }
}

/// The name part of a `Host` value: `[::1]:8642` → `::1`, `localhost:8642` → `localhost`.
fn host_name(host: &str) -> &str {
    let host = host.trim();
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default();
    }
    match host.rsplit_once(':') {
        // One colon: a port; more: a bare IPv6 address (not valid in Host, but not a port).
        Some((name, port)) if !name.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => {
            name
        }
        _ => host,
    }
}

/// Whether a `Host` value (port included) names this machine: the DNS-rebinding check of the
/// API server and the dashboard.
pub fn loopback_host(host: &str) -> bool {
    is_loopback_name(&host_name(host).to_ascii_lowercase())
}

/// Names that always mean this machine: `localhost` and its subdomains (RFC 6761; browsers
/// resolve them to loopback themselves) and loopback address literals.
fn is_loopback_name(name: &str) -> bool {
    let name = name.trim_end_matches('.');
    name == "localhost"
        || name.ends_with(".localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether a request says it carries a body (a zero `Content-Length` does not).
fn has_body(headers: &HeaderMap) -> bool {
    if headers.contains_key(header::TRANSFER_ENCODING) {
        return true;
    }
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .is_some_and(|n| n > 0)
}

/// `application/json`, with parameters, or any `application/*+json`.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let media = value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    media == "application/json" || (media.starts_with("application/") && media.ends_with("+json"))
}

fn forbidden(message: &str, code: &str) -> Response {
    error_response(
        StatusCode::FORBIDDEN,
        message,
        "invalid_request_error",
        Some(code),
    )
}

/// The middleware: every request of the router goes through it.
pub(crate) async fn guard(State(s): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let policy = &s.browser;
    let origin = request
        .headers()
        .get(header::ORIGIN)
        .map(|v| v.to_str().unwrap_or("\u{0}").to_string());
    let cors = match &origin {
        None => Vec::new(),
        Some(o) if policy.origin_allowed(o) => policy.cors_headers(o),
        Some(o) => {
            return with_security_headers(forbidden(
                &format!(
                    "Cross-origin requests from {o:?} are not allowed; list the origin in API_SERVER_CORS_ORIGINS to allow it"
                ),
                "origin_not_allowed",
            ));
        }
    };
    let mut response = match check(policy, request).await {
        Ok((request, true)) => {
            // A preflight of an allowed origin: the CORS headers are the answer.
            drop(request);
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::NO_CONTENT;
            r
        }
        Ok((request, false)) => next.run(request).await,
        Err(refusal) => *refusal,
    };
    let headers = response.headers_mut();
    for (name, value) in cors {
        headers.insert(name, value);
    }
    with_security_headers(response)
}

/// The Host, preflight, Content-Type and body checks: the request with its body read (and
/// whether it is a preflight to answer), or the refusal.
async fn check(policy: &BrowserPolicy, request: Request) -> Result<(Request, bool), Box<Response>> {
    if let Some(host) = request.headers().get(header::HOST) {
        let host = host.to_str().unwrap_or("\u{0}");
        if !policy.host_allowed(host) {
            return Err(Box::new(forbidden(
                &format!(
                    "Host {host:?} is not a loopback name and this server listens on loopback (a guard against DNS rebinding); list it in API_SERVER_ALLOWED_HOSTS to allow it"
                ),
                "host_not_allowed",
            )));
        }
    }
    if request.method() == Method::OPTIONS {
        if request.headers().contains_key(header::ORIGIN) {
            return Ok((request, true));
        }
        return Err(Box::new(forbidden(
            "Preflight requests are answered only for origins listed in API_SERVER_CORS_ORIGINS",
            "origin_not_allowed",
        )));
    }
    if !has_body(request.headers()) {
        return Ok((request, false));
    }
    if !is_json(request.headers()) {
        let given = request
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap_or("?").to_string())
            .unwrap_or_else(|| "none".into());
        return Err(Box::new(error_response(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            &format!("Request bodies must be JSON (Content-Type: application/json); got {given}"),
            "invalid_request_error",
            Some("unsupported_media_type"),
        )));
    }
    let (parts, body) = request.into_parts();
    let read = axum::body::to_bytes(body, MAX_BODY_BYTES);
    let bytes = match tokio::time::timeout(policy.body_timeout, read).await {
        Err(_) => {
            return Err(Box::new(error_response(
                StatusCode::REQUEST_TIMEOUT,
                &format!(
                    "The request body did not arrive within {} s",
                    policy.body_timeout.as_secs_f64()
                ),
                "invalid_request_error",
                Some("body_timeout"),
            )));
        }
        Ok(Err(e)) => {
            let too_large = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            return Err(Box::new(if too_large {
                error_response(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("Request body too large (the limit is {MAX_BODY_BYTES} bytes)"),
                    "invalid_request_error",
                    Some("body_too_large"),
                )
            } else {
                error_response(
                    StatusCode::BAD_REQUEST,
                    &format!("Cannot read the request body: {e}"),
                    "invalid_request_error",
                    None,
                )
            }));
        }
        Ok(Ok(bytes)) => bytes,
    };
    Ok((Request::from_parts(parts, Body::from(bytes)), false))
}

fn with_security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in SECURITY_HEADERS {
        headers
            .entry(*name)
            .or_insert(HeaderValue::from_static(value));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(origins: &[&str], loopback: bool, hosts: &[&str]) -> BrowserPolicy {
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        BrowserPolicy::new(&v(origins), loopback, &v(hosts), Duration::from_secs(1))
    }

    #[test]
    fn host_names_are_split_from_ports() {
        assert_eq!(host_name("localhost:8642"), "localhost");
        assert_eq!(host_name("[::1]:8642"), "::1");
        assert_eq!(host_name("[::1]"), "::1");
        assert_eq!(host_name("127.0.0.1"), "127.0.0.1");
        assert_eq!(host_name("evil.example:80"), "evil.example");
    }

    #[test]
    fn loopback_servers_answer_loopback_names_only() {
        let p = policy(&[], true, &[]);
        for ok in [
            "localhost",
            "localhost:8642",
            "LOCALHOST.",
            "app.localhost:1",
            "127.0.0.1:8642",
            "127.1.2.3",
            "[::1]:8642",
        ] {
            assert!(p.host_allowed(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8642",
            "localhost.evil.example",
            "10.0.0.1",
            "0.0.0.0:8642",
            "",
        ] {
            assert!(!p.host_allowed(bad), "{bad}");
        }
        let p = policy(&[], true, &["hermes.lan"]);
        assert!(p.host_allowed("hermes.lan:8642"));
        assert!(policy(&[], true, &["*"]).host_allowed("anything"));
        assert!(policy(&[], false, &[]).host_allowed("evil.example"));
    }

    #[test]
    fn origins_need_listing() {
        let none = policy(&[], true, &[]);
        assert!(!none.origin_allowed("https://evil.example"));
        assert!(!none.cors_enabled());
        let one = policy(&["https://app.example/"], true, &[]);
        assert!(one.origin_allowed("https://app.example"));
        assert!(one.origin_allowed("HTTPS://APP.EXAMPLE"));
        assert!(!one.origin_allowed("https://app.example.evil"));
        assert!(!one.origin_allowed("null"));
        let headers = one.cors_headers("https://app.example");
        assert!(
            headers.iter().any(
                |(n, v)| n == header::ACCESS_CONTROL_ALLOW_ORIGIN && v == "https://app.example"
            )
        );
        assert!(headers.iter().any(|(n, _)| n == header::VARY));
        let any = policy(&["*"], true, &[]);
        assert!(any.origin_allowed("https://whatever.example"));
        assert!(
            any.cors_headers("https://whatever.example")
                .iter()
                .any(|(n, v)| n == header::ACCESS_CONTROL_ALLOW_ORIGIN && v == "*")
        );
    }

    #[test]
    fn json_content_types() {
        let with = |ct: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_str(ct).unwrap());
            h
        };
        assert!(is_json(&with("application/json")));
        assert!(is_json(&with("Application/JSON; charset=utf-8")));
        assert!(is_json(&with("application/merge-patch+json")));
        assert!(!is_json(&with("text/plain")));
        assert!(!is_json(&with("application/x-www-form-urlencoded")));
        assert!(!is_json(&with("multipart/form-data; boundary=x")));
        assert!(!is_json(&HeaderMap::new()));
    }

    #[test]
    fn bodies_are_announced_by_length_or_chunking() {
        let mut h = HeaderMap::new();
        assert!(!has_body(&h));
        h.insert(header::CONTENT_LENGTH, HeaderValue::from_static("0"));
        assert!(!has_body(&h));
        h.insert(header::CONTENT_LENGTH, HeaderValue::from_static("12"));
        assert!(has_body(&h));
        let mut h = HeaderMap::new();
        h.insert(
            header::TRANSFER_ENCODING,
            HeaderValue::from_static("chunked"),
        );
        assert!(has_body(&h));
    }
}
