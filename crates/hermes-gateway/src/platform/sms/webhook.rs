//! The webhook Twilio calls for each inbound SMS (<https://www.twilio.com/docs/messaging/guides/webhook-request>):
//! `POST /webhooks/twilio`, form-encoded (`From`, `To`, `Body`, `MessageSid`, ...), signed
//! `X-Twilio-Signature: base64(HMAC-SHA1(auth token, URL + every parameter name and value,
//! sorted by name))` (<https://www.twilio.com/docs/usage/security#validating-requests>),
//! checked in constant time against `SMS_WEBHOOK_URL` with and without the scheme's default
//! port (Twilio may sign either), before anything is read from the form. 403 on a missing or
//! bad signature, 413 over 64 KiB (Python's cap), 400 for a body that is not a form. The
//! answer is an empty TwiML `<Response/>` (replies go out through the REST API); a
//! `MessageSid` seen before is answered but not handled again (Twilio retries), and one the
//! core's queue cannot take within 10 s gets a 503 so Twilio retries. `GET /health`: `ok`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use ring::hmac;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::settings::{SmsSettings, WEBHOOK_PATH};
use crate::platform::gate::RecentSet;
use crate::platform::http::constant_time_eq;
use crate::platform::status::StatusCell;
use crate::platform::types::InboundEvent;

/// Python's cap: Twilio's payloads are small.
pub(crate) const MAX_BODY: usize = 64 * 1024;
/// Message SIDs remembered against redelivery.
const SEEN: usize = 5000;
/// How long a delivery waits for room in the core's queue before Twilio is told to retry.
const QUEUE_WAIT: Duration = Duration::from_secs(10);
const EMPTY_TWIML: &str = r#"<?xml version="1.0" encoding="UTF-8"?><Response></Response>"#;

/// One inbound SMS, as the form gave it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Incoming {
    pub from: String,
    pub text: String,
    pub sid: String,
}

/// `base64(HMAC-SHA1(token, url + sorted name+value pairs))`.
fn signature_for(token: &[u8], url: &str, params: &BTreeMap<String, String>) -> String {
    let mut data = url.to_string();
    for (k, v) in params {
        data.push_str(k);
        data.push_str(v);
    }
    let tag = hmac::sign(
        &hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, token),
        data.as_bytes(),
    );
    base64::engine::general_purpose::STANDARD.encode(tag.as_ref())
}

/// `url` with the scheme's default port added when absent, or removed when present; `None`
/// for another port or scheme (Python's `_port_variant_url`).
fn port_variant(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let default = match scheme.to_ascii_lowercase().as_str() {
        "https" => "443",
        "http" => "80",
        _ => return None,
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    // `user:password@` stays as it is.
    let (userinfo, hostport) = match authority.rfind('@') {
        Some(at) => authority.split_at(at + 1),
        None => ("", authority),
    };
    let (host, port) = if hostport.starts_with('[') {
        let close = hostport.find(']')?;
        let (host, after) = hostport.split_at(close + 1);
        (host, after.strip_prefix(':'))
    } else {
        match hostport.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (hostport, None),
        }
    };
    if host.is_empty() {
        return None;
    }
    match port {
        Some(p) if p == default => Some(format!("{scheme}://{userinfo}{host}{tail}")),
        Some(_) => None,
        None => Some(format!("{scheme}://{userinfo}{host}:{default}{tail}")),
    }
}

/// Whether `signature` is Twilio's for this request, under `url` or its port variant.
pub(crate) fn signature_ok(
    token: &str,
    url: &str,
    params: &BTreeMap<String, String>,
    signature: &str,
) -> bool {
    let signature = signature.trim().as_bytes();
    if token.is_empty() || signature.is_empty() {
        return false;
    }
    let matches = |u: &str| {
        constant_time_eq(
            signature_for(token.as_bytes(), u, params).as_bytes(),
            signature,
        )
    };
    matches(url) || port_variant(url).is_some_and(|v| matches(&v))
}

/// The form's parameters, the first value of each name (Python's `parse_qs(...)[0]`).
pub(crate) fn parse_form(body: &[u8]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (k, v) in form_urlencoded::parse(body) {
        out.entry(k.into_owned()).or_insert_with(|| v.into_owned());
    }
    out
}

/// What the endpoint needs from the adapter.
pub(crate) struct Endpoint {
    pub settings: SmsSettings,
    pub inbound: mpsc::Sender<InboundEvent>,
    pub shutdown: CancellationToken,
    pub status: Arc<StatusCell>,
    pub convert: Box<dyn Fn(Incoming) -> InboundEvent + Send + Sync>,
    seen: Mutex<RecentSet>,
}

impl Endpoint {
    pub fn new(
        settings: SmsSettings,
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
        }
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, RecentSet> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn twiml(status: StatusCode) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/xml")],
        EMPTY_TWIML,
    )
        .into_response()
}

async fn receive(State(ep): State<Arc<Endpoint>>, headers: HeaderMap, body: Bytes) -> Response {
    if body.len() > MAX_BODY {
        return twiml(StatusCode::PAYLOAD_TOO_LARGE);
    }
    if std::str::from_utf8(&body).is_err() {
        return twiml(StatusCode::BAD_REQUEST);
    }
    let form = parse_form(&body);
    if let Some(url) = &ep.settings.webhook_url {
        let signature = headers
            .get("x-twilio-signature")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if !signature_ok(&ep.settings.auth_token, url, &form, signature) {
            ep.status
                .error("rejected a webhook POST with a missing or bad X-Twilio-Signature");
            return twiml(StatusCode::FORBIDDEN);
        }
    }
    let field = |k: &str| {
        form.get(k)
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    let (from, text, sid) = (field("From"), field("Body"), field("MessageSid"));
    // Nothing to answer, or our own number echoed back.
    if from.is_empty() || text.is_empty() || from == ep.settings.phone_number {
        return twiml(StatusCode::OK);
    }
    if !sid.is_empty() && ep.seen().contains(&sid) {
        return twiml(StatusCode::OK);
    }
    let event = (ep.convert)(Incoming {
        from,
        text,
        sid: sid.clone(),
    });
    let delivered = tokio::select! {
        _ = ep.shutdown.cancelled() => false,
        sent = tokio::time::timeout(QUEUE_WAIT, ep.inbound.send(event)) => matches!(sent, Ok(Ok(()))),
    };
    if !delivered {
        return twiml(StatusCode::SERVICE_UNAVAILABLE);
    }
    if !sid.is_empty() {
        ep.seen().insert(&sid);
    }
    ep.status.add_received();
    twiml(StatusCode::OK)
}

/// The routes: Python's webhook path and `/health`.
pub(crate) fn router(ep: Arc<Endpoint>) -> Router {
    Router::new()
        .route(WEBHOOK_PATH, post(receive))
        .route("/health", get(|| async { "ok" }))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(ep)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_real_twilio_sms_request_validates() {
        // An SMS request and its signature, as Twilio's own libraries test their validators.
        let p = params(&[
            ("ToState", "CA"),
            ("FromState", "CA"),
            ("AccountSid", "ACba8bc05eacf94afdae398e642c9cc32d"),
            ("SmsMessageSid", "SM2003cbd5e6a3701999aa3e5f20ff2787"),
            ("Body", "Orly"),
            ("From", "+14159354345"),
            ("FromCity", "SAN FRANCISCO"),
            ("SmsStatus", "received"),
            ("FromZip", "94107"),
            ("FromCountry", "US"),
            ("To", "+14158141819"),
            ("ToCity", "SAN FRANCISCO"),
            ("ToZip", "94105"),
            ("ToCountry", "US"),
            ("ApiVersion", "2010-04-01"),
            ("SmsSid", "SM2003cbd5e6a3701999aa3e5f20ff2787"),
        ]);
        let token = "2bd9e9638872de601313dc77410d3b23";
        let url = "http://twiliotests.heroku.com/validate/sms";
        let signature = "mxeiv65lEe0b8L6LdVw2jgJi8yw=";
        assert!(signature_ok(token, url, &p, signature));
        // The default port written out: still valid.
        assert!(signature_ok(
            token,
            "http://twiliotests.heroku.com:80/validate/sms",
            &p,
            signature
        ));
        assert!(!signature_ok("another-token", url, &p, signature));
        let mut changed = p.clone();
        changed.insert("Body".into(), "Orly?".into());
        assert!(!signature_ok(token, url, &changed, signature));
    }

    #[test]
    fn the_default_port_may_be_signed_or_not() {
        let p = params(&[("Body", "hi")]);
        let with_port = signature_for(b"t", "https://h.example:443/webhooks/twilio", &p);
        assert!(signature_ok(
            "t",
            "https://h.example/webhooks/twilio",
            &p,
            &with_port
        ));
        let without = signature_for(b"t", "https://h.example/webhooks/twilio", &p);
        assert!(signature_ok(
            "t",
            "https://h.example:443/webhooks/twilio",
            &p,
            &without
        ));
        // Another port is never a variant.
        let other = signature_for(b"t", "https://h.example:8443/webhooks/twilio", &p);
        assert!(!signature_ok(
            "t",
            "https://h.example/webhooks/twilio",
            &p,
            &other
        ));
        assert_eq!(port_variant("https://h.example:8443/x"), None);
        assert_eq!(port_variant("ftp://h/x"), None);
    }

    #[test]
    fn hostile_signatures_and_forms_do_not_panic() {
        let p = params(&[("Body", "hi")]);
        for sig in ["", " ", "===", &"A".repeat(100_000), "é"] {
            assert!(!signature_ok("t", "https://h/x", &p, sig));
        }
        assert!(!signature_ok("", "https://h/x", &p, "abc"));
        let form = parse_form(b"From=%2B1555&Body=a+b%26c&Body=second&bad=%ZZ&=empty");
        assert_eq!(form["From"], "+1555");
        assert_eq!(form["Body"], "a b&c", "the first value wins");
        assert_eq!(form["bad"], "%ZZ");
        assert!(port_variant("not a url").is_none());
        assert_eq!(
            port_variant("https://[::1]/x").as_deref(),
            Some("https://[::1]:443/x")
        );
        assert_eq!(
            port_variant("https://u:p@h:443/x?a=1").as_deref(),
            Some("https://u:p@h/x?a=1")
        );
    }
}
