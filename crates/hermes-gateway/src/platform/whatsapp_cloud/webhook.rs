//! The webhook Meta calls (<https://developers.facebook.com/docs/graph-api/webhooks/getting-started>):
//!
//! - `GET <path>?hub.mode=subscribe&hub.verify_token=…&hub.challenge=…`: the subscription
//!   handshake, answered with the challenge as plain text when the token matches (compared in
//!   constant time); 403 when it does not, 400 for another mode or no challenge, 503 while no
//!   verify token is configured (accepting any would let anyone subscribe).
//! - `POST <path>`: events, signed `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw
//!   body keyed with the app secret>`, checked in constant time before the body is parsed;
//!   401 on a bad or missing signature, 503 while no app secret is configured, 413 over 3 MiB
//!   (Meta's documented maximum). A message id seen before is skipped (Meta retries
//!   deliveries it thinks failed); the answer is 200 as soon as the events are in the core's
//!   queue, 503 when the queue stays full (Meta retries, and what was already taken is
//!   remembered, so nothing is handled twice).
//! - `GET <health_path>`: a JSON health answer with counters, as Python's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use ring::hmac;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::events::{self, Incoming};
use super::settings::{PLATFORM, WhatsAppCloudSettings};
use crate::platform::gate::RecentSet;
use crate::platform::http::constant_time_eq;
use crate::platform::status::StatusCell;
use crate::platform::types::InboundEvent;

/// Meta's documented payload maximum.
pub(crate) const MAX_BODY: usize = 3 * 1024 * 1024;
/// Message ids remembered against redelivery (Python keeps 5,000).
const SEEN: usize = 5000;
/// How long a delivery waits for room in the core's queue before Meta is told to retry.
const QUEUE_WAIT: Duration = Duration::from_secs(10);

/// Whether `header` is `sha256=<hex>` of the HMAC-SHA256 of `body` under `secret`; the
/// comparison takes the same time wherever the first difference is.
pub(crate) fn signature_ok(secret: &[u8], body: &[u8], header: &str) -> bool {
    if secret.is_empty() {
        return false;
    }
    let Some(hex) = header.trim().strip_prefix("sha256=") else {
        return false;
    };
    let hex = hex.trim().as_bytes();
    if hex.len() != 64 {
        return false;
    }
    let mut tag = [0u8; 32];
    for (i, pair) in hex.chunks(2).enumerate() {
        let (Some(hi), Some(lo)) = (nibble(pair[0]), nibble(pair[1])) else {
            return false;
        };
        tag[i] = (hi << 4) | lo;
    }
    hmac::verify(&hmac::Key::new(hmac::HMAC_SHA256, secret), body, &tag).is_ok()
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Counters for the health answer.
#[derive(Debug, Default)]
struct Counters {
    accepted: AtomicU64,
    duplicates: AtomicU64,
    rejected_signature: AtomicU64,
}

/// What the endpoint needs from the adapter.
pub(crate) struct Endpoint {
    pub settings: WhatsAppCloudSettings,
    pub inbound: mpsc::Sender<InboundEvent>,
    pub shutdown: CancellationToken,
    pub status: Arc<StatusCell>,
    /// Turns a parsed item into the core's event (and remembers the chat's last message id).
    pub convert: Box<dyn Fn(Incoming) -> InboundEvent + Send + Sync>,
    seen: Mutex<RecentSet>,
    counters: Counters,
}

impl Endpoint {
    pub fn new(
        settings: WhatsAppCloudSettings,
        inbound: mpsc::Sender<InboundEvent>,
        shutdown: CancellationToken,
        status: Arc<StatusCell>,
        convert: Box<dyn Fn(Incoming) -> InboundEvent + Send + Sync>,
    ) -> Endpoint {
        Endpoint {
            settings,
            inbound,
            shutdown,
            status,
            convert,
            seen: Mutex::new(RecentSet::new(SEEN)),
            counters: Counters::default(),
        }
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, RecentSet> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn text(status: StatusCode, body: &'static str) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain")], body).into_response()
}

async fn verify(
    State(ep): State<Arc<Endpoint>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let expected = ep.settings.verify_token.as_bytes();
    if expected.is_empty() {
        return text(
            StatusCode::SERVICE_UNAVAILABLE,
            "verify_token not configured",
        );
    }
    if query.get("hub.mode").map(String::as_str) != Some("subscribe") {
        return text(StatusCode::BAD_REQUEST, "bad mode");
    }
    let given = query
        .get("hub.verify_token")
        .map(String::as_bytes)
        .unwrap_or_default();
    if !constant_time_eq(given, expected) {
        return text(StatusCode::FORBIDDEN, "verify_token mismatch");
    }
    match query.get("hub.challenge").filter(|c| !c.is_empty()) {
        Some(challenge) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/plain")],
            challenge.clone(),
        )
            .into_response(),
        None => text(StatusCode::BAD_REQUEST, "missing challenge"),
    }
}

async fn receive(State(ep): State<Arc<Endpoint>>, headers: HeaderMap, body: Bytes) -> Response {
    if ep.settings.app_secret.is_empty() {
        return text(StatusCode::SERVICE_UNAVAILABLE, "app_secret not configured");
    }
    let signature = headers
        .get("x-hub-signature-256")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !signature_ok(ep.settings.app_secret.as_bytes(), &body, signature) {
        ep.counters
            .rejected_signature
            .fetch_add(1, Ordering::Relaxed);
        ep.status
            .error("rejected a webhook POST with a bad X-Hub-Signature-256");
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let Ok(payload) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    if !payload.is_object() {
        return StatusCode::BAD_REQUEST.into_response();
    }
    for item in events::parse(&payload) {
        let wamid = item.wamid().to_string();
        if ep.seen().contains(&wamid) {
            ep.counters.duplicates.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let event = (ep.convert)(item);
        let delivered = tokio::select! {
            _ = ep.shutdown.cancelled() => false,
            sent = tokio::time::timeout(QUEUE_WAIT, ep.inbound.send(event)) => {
                matches!(sent, Ok(Ok(())))
            }
        };
        if !delivered {
            // Meta retries the whole payload; what was taken is remembered and skipped.
            return StatusCode::SERVICE_UNAVAILABLE.into_response();
        }
        ep.seen().insert(&wamid);
        ep.counters.accepted.fetch_add(1, Ordering::Relaxed);
        ep.status.add_received();
    }
    StatusCode::OK.into_response()
}

async fn health(State(ep): State<Arc<Endpoint>>) -> Response {
    let s = &ep.settings;
    axum::Json(json!({
        "status": "ok",
        "platform": PLATFORM,
        "phone_number_id": s.phone_number_id,
        "webhook_path": s.path,
        "verify_token_configured": !s.verify_token.is_empty(),
        "app_secret_configured": !s.app_secret.is_empty(),
        "accepted": ep.counters.accepted.load(Ordering::Relaxed),
        "duplicates": ep.counters.duplicates.load(Ordering::Relaxed),
        "rejected_signature": ep.counters.rejected_signature.load(Ordering::Relaxed),
    }))
    .into_response()
}

/// The routes: the webhook path (GET handshake, POST events) and the health path.
pub(crate) fn router(ep: Arc<Endpoint>) -> Router {
    let path = ep.settings.path.clone();
    let mut app = Router::new().route(&path, get(verify).post(receive));
    if ep.settings.health_path != path {
        app = app.route(&ep.settings.health_path, get(health));
    }
    app.layer(DefaultBodyLimit::max(MAX_BODY)).with_state(ep)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(secret: &str, body: &[u8]) -> String {
        let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes()), body);
        let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        format!("sha256={hex}")
    }

    #[test]
    fn signatures_are_checked_over_the_raw_body() {
        let body = br#"{"object":"whatsapp_business_account"}"#;
        let good = sign("app-secret", body);
        assert!(signature_ok(b"app-secret", body, &good));
        assert!(signature_ok(
            b"app-secret",
            body,
            &good.to_ascii_uppercase().replace("SHA256=", "sha256=")
        ));
        // Another secret, another body (one space more), no prefix, an empty secret.
        assert!(!signature_ok(b"other", body, &good));
        assert!(!signature_ok(
            b"app-secret",
            br#"{"object": "whatsapp_business_account"}"#,
            &good
        ));
        assert!(!signature_ok(
            b"app-secret",
            body,
            good.trim_start_matches("sha256=")
        ));
        assert!(!signature_ok(b"", body, &sign("", body)));
    }

    #[test]
    fn hostile_signature_headers_are_refused_without_panicking() {
        let body = b"{}";
        for header in [
            "",
            "sha256=",
            "sha1=abcd",
            "sha256=zz",
            &format!("sha256={}", "g".repeat(64)),
            &format!("sha256={}", "a".repeat(63)),
            &format!("sha256={}", "a".repeat(65)),
            &format!("sha256={}", "é".repeat(32)),
            &format!("sha256={}", "0".repeat(100_000)),
        ] {
            assert!(!signature_ok(b"k", body, header), "{header:.40}");
        }
    }
}
