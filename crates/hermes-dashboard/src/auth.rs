//! Who may use the dashboard. A page in the user's browser can send requests to a loopback
//! server (a "simple" cross-origin POST needs no preflight, and DNS rebinding makes a hostile
//! name resolve to 127.0.0.1), and any local user can connect to a loopback port, so:
//!
//! - a random login token (256 bits) is made at start and printed in the login link; it is
//!   exchanged (`GET /?token=T` or `POST /api/auth/login`) for a session cookie (`HttpOnly`,
//!   `SameSite=Strict`, a separate random value, so the token never sits in the browser), and
//!   scripts may send it as `Authorization: Bearer T`. A new start makes a new token;
//! - every `/api` request without the token or a live session cookie is refused (401);
//! - every request whose `Host` is not a name of this server is refused (403): on loopback,
//!   `localhost`, `*.localhost` or a loopback address;
//! - every `/api` request from another origin is refused (403): an `Origin` other than the
//!   server's own, or a `Sec-Fetch-Site` other than `same-origin`/`none`;
//! - every answer carries a content security policy that allows only this server's own script,
//!   style and connections, and forbids framing.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use ring::rand::{SecureRandom, SystemRandom};

use crate::reply::{ApiError, BODY_TIMEOUT, MAX_BODY_BYTES};
use crate::{App, DashboardError};

/// The session cookie's name.
pub const COOKIE_NAME: &str = "hermes_dashboard";
/// Sessions remembered at once (browsers, tabs after a restart of the browser); the oldest is
/// forgotten first.
const MAX_SESSIONS: usize = 32;
/// The one route that takes the token in its body.
pub const LOGIN_PATH: &str = "/api/auth/login";

const SECURITY_HEADERS: &[(&str, &str)] = &[
    (
        "content-security-policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "no-referrer"),
    ("cache-control", "no-store"),
];

pub(crate) struct Auth {
    token: String,
    sessions: Mutex<VecDeque<String>>,
    addr: SocketAddr,
    rng: SystemRandom,
}

fn random_hex(rng: &SystemRandom) -> Result<String, DashboardError> {
    let mut bytes = [0u8; 32];
    rng.fill(&mut bytes).map_err(|_| DashboardError::Random)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Compares without stopping at the first difference (the token is a secret).
fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Auth {
    pub(crate) fn new(addr: SocketAddr) -> Result<Auth, DashboardError> {
        let rng = SystemRandom::new();
        Ok(Auth {
            token: random_hex(&rng)?,
            sessions: Mutex::new(VecDeque::new()),
            addr,
            rng,
        })
    }

    pub(crate) fn token(&self) -> &str {
        &self.token
    }

    pub(crate) fn token_matches(&self, given: &str) -> bool {
        same_secret(given.trim(), &self.token)
    }

    /// A new session for a browser that showed the token.
    pub(crate) fn new_session(&self) -> Result<String, ApiError> {
        let value = random_hex(&self.rng)
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        let mut sessions = self
            .sessions
            .lock()
            .map_err(|_| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "session table"))?;
        if sessions.len() >= MAX_SESSIONS {
            sessions.pop_front();
        }
        sessions.push_back(value.clone());
        Ok(value)
    }

    pub(crate) fn end_session(&self, value: &str) {
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.retain(|s| !same_secret(s, value));
        }
    }

    fn session_live(&self, value: &str) -> bool {
        self.sessions
            .lock()
            .is_ok_and(|s| s.iter().any(|live| same_secret(live, value)))
    }

    /// Whether `host` names this server: loopback names on a loopback bind; on another bind
    /// (`--insecure`) any name, since the origin and token checks still apply.
    pub(crate) fn host_allowed(&self, host: Option<&str>) -> bool {
        let Some(host) = host else {
            // HTTP/1.1 requires Host; only an HTTP/1.0 client omits it, and no browser does.
            return true;
        };
        if !self.addr.ip().is_loopback() {
            return true;
        }
        hermes_gateway::api_server::loopback_host(host)
    }

    /// Whether the request comes from this server's own pages (or from no page at all).
    pub(crate) fn same_origin(headers: &HeaderMap) -> bool {
        if let Some(site) = headers.get("sec-fetch-site") {
            let site = site.to_str().unwrap_or("").trim().to_ascii_lowercase();
            if site != "same-origin" && site != "none" {
                return false;
            }
        }
        let Some(origin) = headers.get(header::ORIGIN) else {
            return true;
        };
        let origin = origin.to_str().unwrap_or("").trim().trim_end_matches('/');
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("")
            .trim();
        !host.is_empty() && origin.eq_ignore_ascii_case(&format!("http://{host}"))
    }

    /// The token as `Authorization: Bearer`, or a live session cookie.
    pub(crate) fn authorized(&self, headers: &HeaderMap) -> bool {
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().strip_prefix("Bearer "))
            .is_some_and(|t| self.token_matches(t));
        bearer || session_cookie(headers).is_some_and(|v| self.session_live(&v))
    }
}

/// The value of our cookie, if the request carries it.
pub(crate) fn session_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE_NAME)
        .map(|(_, value)| value.trim().to_string())
}

/// The `Set-Cookie` value for a session (`None`: the cookie removed).
pub(crate) fn cookie_header(value: Option<&str>) -> HeaderValue {
    let text = match value {
        Some(v) => format!("{COOKIE_NAME}={v}; Path=/; HttpOnly; SameSite=Strict"),
        None => format!("{COOKIE_NAME}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    };
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

pub(crate) fn with_security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in SECURITY_HEADERS {
        headers
            .entry(*name)
            .or_insert(HeaderValue::from_static(value));
    }
    response
}

fn host_of(request: &Request) -> Option<&str> {
    request
        .headers()
        .get(header::HOST)
        .map(|h| h.to_str().unwrap_or("\u{0}"))
}

/// Every request to the page and its assets: the `Host` check.
pub(crate) async fn page_guard(
    State(app): State<Arc<App>>,
    request: Request,
    next: Next,
) -> Response {
    if !app.auth.host_allowed(host_of(&request)) {
        let mut r = Response::new(Body::from(
            "This dashboard answers only to its own address (a guard against DNS rebinding).\n",
        ));
        *r.status_mut() = StatusCode::FORBIDDEN;
        return with_security_headers(r);
    }
    with_security_headers(next.run(request).await)
}

/// Every `/api` request: `Host`, then origin, then the token or the session cookie.
pub(crate) async fn api_guard(
    State(app): State<Arc<App>>,
    request: Request,
    next: Next,
) -> Response {
    if !app.auth.host_allowed(host_of(&request)) {
        return with_security_headers(
            ApiError::new(
                StatusCode::FORBIDDEN,
                "Host is not this dashboard's address (a guard against DNS rebinding)",
            )
            .into_response(),
        );
    }
    if !Auth::same_origin(request.headers()) {
        return with_security_headers(
            ApiError::new(
                StatusCode::FORBIDDEN,
                "Cross-origin requests to the dashboard are refused",
            )
            .into_response(),
        );
    }
    if request.uri().path() != LOGIN_PATH && !app.auth.authorized(request.headers()) {
        return with_security_headers(
            ApiError::new(
                StatusCode::UNAUTHORIZED,
                "Not logged in: open the link `hermes dashboard` printed, or send Authorization: Bearer TOKEN",
            )
            .into_response(),
        );
    }
    let request = match read_body(request).await {
        Ok(r) => r,
        Err(e) => return with_security_headers(e.into_response()),
    };
    with_security_headers(next.run(request).await)
}

/// The body read whole here, within [`BODY_TIMEOUT`] and [`MAX_BODY_BYTES`], so a client
/// trickling it cannot hold a request open (408) and an oversized one is refused (413).
async fn read_body(request: Request) -> Result<Request, ApiError> {
    let (parts, body) = request.into_parts();
    let read = axum::body::to_bytes(body, MAX_BODY_BYTES);
    match tokio::time::timeout(BODY_TIMEOUT, read).await {
        Err(_) => Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request body did not arrive within {} s",
                BODY_TIMEOUT.as_secs()
            ),
        )),
        Ok(Err(e))
            if std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>()) =>
        {
            Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the request body is over the limit of {MAX_BODY_BYTES} bytes"),
            ))
        }
        Ok(Err(e)) => Err(ApiError::bad_request(format!(
            "cannot read the request body: {e}"
        ))),
        Ok(Ok(bytes)) => Ok(Request::from_parts(parts, Body::from(bytes))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn loopback_binds_answer_loopback_names_only() {
        let auth = Auth::new("127.0.0.1:9119".parse().unwrap()).unwrap();
        for ok in [
            "localhost:9119",
            "127.0.0.1:9119",
            "[::1]:9119",
            "app.localhost",
        ] {
            assert!(auth.host_allowed(Some(ok)), "{ok}");
        }
        for bad in [
            "evil.example:9119",
            "localhost.evil.example",
            "10.0.0.1:9119",
            "",
        ] {
            assert!(!auth.host_allowed(Some(bad)), "{bad}");
        }
    }

    #[test]
    fn origins_must_be_the_servers_own() {
        assert!(Auth::same_origin(&headers(&[("host", "127.0.0.1:5")])));
        assert!(Auth::same_origin(&headers(&[
            ("host", "127.0.0.1:5"),
            ("origin", "http://127.0.0.1:5"),
            ("sec-fetch-site", "same-origin"),
        ])));
        assert!(!Auth::same_origin(&headers(&[
            ("host", "127.0.0.1:5"),
            ("origin", "http://evil.example"),
        ])));
        assert!(!Auth::same_origin(&headers(&[
            ("host", "127.0.0.1:5"),
            ("sec-fetch-site", "cross-site"),
        ])));
        assert!(!Auth::same_origin(&headers(&[
            ("host", "127.0.0.1:5"),
            ("origin", "null"),
        ])));
    }

    #[test]
    fn token_or_live_session_cookie() {
        let auth = Auth::new("127.0.0.1:9119".parse().unwrap()).unwrap();
        assert_eq!(auth.token().len(), 64);
        assert!(!auth.authorized(&HeaderMap::new()));
        let bearer = format!("Bearer {}", auth.token());
        assert!(auth.authorized(&headers(&[("authorization", &bearer)])));
        assert!(!auth.authorized(&headers(&[("authorization", "Bearer nope")])));
        let session = auth.new_session().unwrap();
        let cookie = format!("other=1; {COOKIE_NAME}={session}");
        assert!(auth.authorized(&headers(&[("cookie", &cookie)])));
        auth.end_session(&session);
        assert!(!auth.authorized(&headers(&[("cookie", &cookie)])));
        // The token itself is not a session cookie.
        let token_cookie = format!("{COOKIE_NAME}={}", auth.token());
        assert!(!auth.authorized(&headers(&[("cookie", &token_cookie)])));
    }
}
