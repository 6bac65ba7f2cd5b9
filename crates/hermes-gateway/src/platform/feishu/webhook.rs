//! The request URL Feishu posts events and card callbacks to
//! (<https://open.feishu.cn/document/server-docs/event-subscription-guide/event-subscription-configure-/request-url-configuration-case>):
//!
//! - the body is JSON, at most 1 MiB (Python's cap; 413 over it), `{"encrypt": …}` when the
//!   app has an Encrypt Key (decrypted with it; 400 when it cannot be, when no key is
//!   configured here, or when a plain body comes while one is);
//! - `{"type": "url_verification", "challenge", "token"}`: answered `{"challenge"}` once the
//!   token matches (Feishu does not sign this one: its encryption, or the token, proves it);
//! - every other delivery must carry a valid `X-Lark-Signature` when an Encrypt Key is set,
//!   and the Verification Token when one is set (compared in constant time): 401 otherwise,
//!   before anything reaches the core;
//! - an `event_id` seen before is skipped (Feishu redelivers what it thinks failed); the
//!   answer is `{"code": 0}` (`{}` for a card callback) once the event is in the core's
//!   queue, 503 when the queue stays full (Feishu retries).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::crypto;
use super::events::{self, Incoming};
use super::settings::FeishuSettings;
use crate::platform::gate::RecentSet;
use crate::platform::http::constant_time_eq;
use crate::platform::status::StatusCell;
use crate::platform::types::InboundEvent;

/// Python's body cap.
pub(crate) const MAX_BODY: usize = 1024 * 1024;
/// Event ids and card tokens remembered against redelivery (Python keeps 2,048).
const SEEN: usize = 4096;
/// How long a delivery waits for room in the core's queue before Feishu is told to retry.
const QUEUE_WAIT: Duration = Duration::from_secs(10);

/// Turns a parsed item into the core's event, or `None` when it is not for the bot (a group
/// message without the @mention, another bot).
pub(crate) type Convert = Box<
    dyn Fn(Incoming) -> futures_util::future::BoxFuture<'static, Option<InboundEvent>>
        + Send
        + Sync,
>;

#[derive(Debug, Default)]
struct Counters {
    accepted: AtomicU64,
    duplicates: AtomicU64,
    rejected: AtomicU64,
}

/// What the endpoint needs from the adapter.
pub(crate) struct Endpoint {
    pub settings: FeishuSettings,
    pub inbound: mpsc::Sender<InboundEvent>,
    pub shutdown: CancellationToken,
    pub status: Arc<StatusCell>,
    pub convert: Convert,
    seen: Mutex<RecentSet>,
    counters: Counters,
}

impl Endpoint {
    pub fn new(
        settings: FeishuSettings,
        inbound: mpsc::Sender<InboundEvent>,
        shutdown: CancellationToken,
        status: Arc<StatusCell>,
        convert: Convert,
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

    fn reject(&self, status: StatusCode, why: &'static str) -> Response {
        self.counters.rejected.fetch_add(1, Ordering::Relaxed);
        self.status
            .error(format!("rejected a webhook delivery: {why}"));
        (
            status,
            axum::Json(json!({"code": status.as_u16(), "msg": why})),
        )
            .into_response()
    }
}

fn ok() -> Response {
    axum::Json(json!({"code": 0, "msg": "ok"})).into_response()
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> &'h str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// The payload: the body itself, or what its `encrypt` decrypts to.
fn open(settings: &FeishuSettings, body: &[u8]) -> Result<Value, &'static str> {
    let outer: Value = serde_json::from_slice(body).map_err(|_| "the body is not JSON")?;
    let Some(encrypted) = outer.get("encrypt") else {
        if !settings.encrypt_key.is_empty() {
            // Feishu encrypts every delivery of an app with an Encrypt Key; a plain one is not
            // from Feishu (and a plain challenge would otherwise be echoed unauthenticated).
            return Err("a plain delivery, but FEISHU_ENCRYPT_KEY is set");
        }
        return outer
            .is_object()
            .then_some(outer)
            .ok_or("the body is not an object");
    };
    if settings.encrypt_key.is_empty() {
        return Err("an encrypted delivery, but FEISHU_ENCRYPT_KEY is not set");
    }
    let plain = crypto::decrypt(
        &settings.encrypt_key,
        encrypted.as_str().ok_or("encrypt is not a string")?,
    )
    .map_err(|_| "the delivery does not decrypt with FEISHU_ENCRYPT_KEY")?;
    let inner: Value =
        serde_json::from_str(&plain).map_err(|_| "the decrypted delivery is not JSON")?;
    inner
        .is_object()
        .then_some(inner)
        .ok_or("the decrypted delivery is not an object")
}

async fn receive(State(ep): State<Arc<Endpoint>>, headers: HeaderMap, body: Bytes) -> Response {
    let s = &ep.settings;
    let payload = match open(s, &body) {
        Ok(p) => p,
        Err(why) => return ep.reject(StatusCode::BAD_REQUEST, why),
    };
    let token_ok = |given: &str| {
        s.verification_token.is_empty()
            || constant_time_eq(given.as_bytes(), s.verification_token.as_bytes())
    };
    if payload["type"] == "url_verification" {
        // Checked before the challenge is echoed, so nobody can prove control of this URL.
        if !token_ok(payload["token"].as_str().unwrap_or_default()) {
            return ep.reject(
                StatusCode::UNAUTHORIZED,
                "url_verification with a wrong token",
            );
        }
        let challenge = payload["challenge"].as_str().unwrap_or_default();
        return axum::Json(json!({"challenge": challenge})).into_response();
    }
    if !s.encrypt_key.is_empty()
        && !crypto::signature_ok(
            &s.encrypt_key,
            header(&headers, "x-lark-request-timestamp"),
            header(&headers, "x-lark-request-nonce"),
            header(&headers, "x-lark-signature"),
            &body,
        )
    {
        return ep.reject(StatusCode::UNAUTHORIZED, "a bad X-Lark-Signature");
    }
    if !token_ok(events::token(&payload)) {
        return ep.reject(StatusCode::UNAUTHORIZED, "a wrong verification token");
    }
    let is_card = payload["header"]["event_type"] == "card.action.trigger";
    let answer = || {
        if is_card {
            // A card callback's answer may replace the card or show a toast; empty changes
            // nothing.
            axum::Json(json!({})).into_response()
        } else {
            ok()
        }
    };
    let Some(item) = events::parse(&payload) else {
        return answer();
    };
    // The event id, or for a press the callback's own token.
    let key = match &item {
        Incoming::Press { token, .. } if !token.is_empty() => Some(format!("card:{token}")),
        _ => events::event_id(&payload),
    };
    if let Some(key) = &key
        && ep.seen().contains(key)
    {
        ep.counters.duplicates.fetch_add(1, Ordering::Relaxed);
        return answer();
    }
    let Some(event) = (ep.convert)(item).await else {
        if let Some(key) = &key {
            ep.seen().insert(key);
        }
        return answer();
    };
    let delivered = tokio::select! {
        _ = ep.shutdown.cancelled() => false,
        sent = tokio::time::timeout(QUEUE_WAIT, ep.inbound.send(event)) => matches!(sent, Ok(Ok(()))),
    };
    if !delivered {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    if let Some(key) = &key {
        ep.seen().insert(key);
    }
    ep.counters.accepted.fetch_add(1, Ordering::Relaxed);
    ep.status.add_received();
    answer()
}

async fn health(State(ep): State<Arc<Endpoint>>) -> Response {
    let s = &ep.settings;
    axum::Json(json!({
        "status": "ok",
        "platform": "feishu",
        "app_id": s.app_id,
        "webhook_path": s.path,
        "encrypt_key_configured": !s.encrypt_key.is_empty(),
        "verification_token_configured": !s.verification_token.is_empty(),
        "accepted": ep.counters.accepted.load(Ordering::Relaxed),
        "duplicates": ep.counters.duplicates.load(Ordering::Relaxed),
        "rejected": ep.counters.rejected.load(Ordering::Relaxed),
    }))
    .into_response()
}

/// The routes: the webhook path (POST) and `GET` on it for a health answer.
pub(crate) fn router(ep: Arc<Endpoint>) -> Router {
    let path = ep.settings.path.clone();
    Router::new()
        .route(&path, post(receive).get(health))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(ep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::settings::{AllowBots, MentionSettings};

    fn settings(encrypt_key: &str, token: &str) -> FeishuSettings {
        FeishuSettings {
            app_id: "cli_a".into(),
            app_secret: "s".into(),
            domain: "feishu".into(),
            base_url: "http://127.0.0.1:9".into(),
            encrypt_key: encrypt_key.into(),
            verification_token: token.into(),
            host: "127.0.0.1".into(),
            port: 0,
            path: "/feishu/webhook".into(),
            bot_open_id: String::new(),
            bot_user_id: String::new(),
            bot_name: String::new(),
            mentions: MentionSettings::default(),
            allow_bots: AllowBots::None,
            max_rate_limit_wait: Duration::from_secs(1),
        }
    }

    #[test]
    fn plain_and_encrypted_bodies_open() {
        let s = settings("", "vt");
        assert_eq!(open(&s, br#"{"a":1}"#).unwrap()["a"], 1);
        for bad in [&b"[1]"[..], b"nope", b"\xff", br#"{"encrypt":"x"}"#] {
            assert!(open(&s, bad).is_err());
        }
        let s = settings("test key", "");
        // The documented vector decrypts to "hello world", which is not JSON.
        assert_eq!(
            open(
                &s,
                br#"{"encrypt":"P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk="}"#
            ),
            Err("the decrypted delivery is not JSON")
        );
        assert!(open(&s, br#"{"encrypt":5}"#).is_err());
        assert_eq!(
            open(&s, br#"{"type":"url_verification","challenge":"c"}"#),
            Err("a plain delivery, but FEISHU_ENCRYPT_KEY is set")
        );
        assert!(open(&s, br#"{"encrypt":"AAAA"}"#).is_err());
    }
}
