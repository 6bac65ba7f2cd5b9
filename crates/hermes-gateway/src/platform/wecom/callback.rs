//! The callback URL WeCom calls for a self-built app
//! (<https://developer.work.weixin.qq.com/document/path/90238>):
//!
//! - `GET ?msg_signature&timestamp&nonce&echostr`: the URL check when the app's API-receive
//!   settings are saved; answered with the decrypted `echostr` once the signature holds, 403
//!   otherwise;
//! - `POST ?msg_signature&timestamp&nonce` with `<xml><ToUserName/><AgentID/><Encrypt/></xml>`
//!   (at most 64 KiB, Python's cap): the signature over `Encrypt` checked, the message inside
//!   decrypted and read; answered `success` (WeCom wants an answer within five seconds and
//!   retries three times otherwise: the agent's answer goes out later through the API), 400
//!   for a delivery that is not signed or encrypted for this app (Python's answer);
//! - a `MsgId` seen before is skipped (WeCom's retries), `GET /health` says it is up.
//!
//! XML is read with a small reader of flat elements (text or CDATA, the five predefined
//! entities): no DTDs or entity expansion, so nothing unauthenticated can make it work hard.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;
use std::collections::HashMap;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::crypto;
use super::settings::WeComSettings;
use crate::platform::gate::RecentSet;
use crate::platform::status::StatusCell;
use crate::platform::types::InboundEvent;

/// Python's cap on callback bodies.
pub(crate) const MAX_BODY: usize = 64 * 1024;
/// Message ids remembered against WeCom's retries.
const SEEN: usize = 4096;
/// How long a delivery waits for room in the core's queue (WeCom gives five seconds).
const QUEUE_WAIT: Duration = Duration::from_secs(4);

/// A decrypted message as WeCom sends it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Callback {
    pub to: String,
    pub from: String,
    pub create_time: u64,
    pub msg_type: String,
    pub content: String,
    pub msg_id: String,
    pub event: String,
}

/// The text of the first `<tag>` element of a flat XML document: CDATA as it is, text with
/// the predefined entities decoded.
pub(crate) fn xml_field(xml: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = xml.find(&open)? + open.len();
    let end = start + xml[start..].find(&close)?;
    let inner = xml[start..end].trim();
    if let Some(cdata) = inner
        .strip_prefix("<![CDATA[")
        .and_then(|r| r.strip_suffix("]]>"))
    {
        return Some(cdata.to_string());
    }
    Some(
        inner
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&"),
    )
}

impl Callback {
    pub fn parse(xml: &str) -> Callback {
        let field = |t: &str| xml_field(xml, t).unwrap_or_default();
        Callback {
            to: field("ToUserName"),
            from: field("FromUserName"),
            create_time: field("CreateTime").trim().parse().unwrap_or(0),
            msg_type: field("MsgType").to_ascii_lowercase(),
            content: field("Content").trim().to_string(),
            msg_id: field("MsgId"),
            event: field("Event").to_ascii_lowercase(),
        }
    }
}

/// Turns a decrypted message into the core's event, or `None` when it is not one for the bot.
pub(crate) type Convert = Box<dyn Fn(Callback) -> Option<InboundEvent> + Send + Sync>;

#[derive(Debug, Default)]
struct Counters {
    accepted: AtomicU64,
    duplicates: AtomicU64,
    rejected: AtomicU64,
}

pub(crate) struct Endpoint {
    pub settings: WeComSettings,
    pub inbound: mpsc::Sender<InboundEvent>,
    pub shutdown: CancellationToken,
    pub status: Arc<StatusCell>,
    pub convert: Convert,
    seen: Mutex<RecentSet>,
    counters: Counters,
}

impl Endpoint {
    pub fn new(
        settings: WeComSettings,
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

    fn reject(&self, status: StatusCode, why: String) -> Response {
        self.counters.rejected.fetch_add(1, Ordering::Relaxed);
        self.status
            .error(format!("rejected a WeCom callback: {why}"));
        (status, why).into_response()
    }

    fn open(
        &self,
        q: &HashMap<String, String>,
        encrypted: &str,
    ) -> Result<String, crypto::CryptoError> {
        let s = &self.settings;
        let arg = |k: &str| q.get(k).map(String::as_str).unwrap_or_default();
        crypto::open(
            &s.token,
            &s.aes_key,
            &s.corp_id,
            arg("msg_signature"),
            arg("timestamp"),
            arg("nonce"),
            encrypted,
        )
    }
}

fn success() -> Response {
    ([("content-type", "text/plain")], "success").into_response()
}

async fn verify(
    State(ep): State<Arc<Endpoint>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let Some(echostr) = q.get("echostr") else {
        return health(State(ep)).await;
    };
    match ep.open(&q, echostr) {
        Ok(plain) => ([("content-type", "text/plain")], plain).into_response(),
        Err(e) => ep.reject(StatusCode::FORBIDDEN, format!("URL check: {e}")),
    }
}

async fn receive(
    State(ep): State<Arc<Endpoint>>,
    Query(q): Query<HashMap<String, String>>,
    body: Bytes,
) -> Response {
    let Ok(body) = std::str::from_utf8(&body) else {
        return ep.reject(StatusCode::BAD_REQUEST, "the body is not UTF-8".into());
    };
    let Some(encrypted) = xml_field(body, "Encrypt") else {
        return ep.reject(StatusCode::BAD_REQUEST, "no <Encrypt> in the body".into());
    };
    let xml = match ep.open(&q, &encrypted) {
        Ok(xml) => xml,
        Err(e) => return ep.reject(StatusCode::BAD_REQUEST, e.to_string()),
    };
    let callback = Callback::parse(&xml);
    let key = if callback.msg_id.is_empty() {
        format!("{}:{}", callback.from, callback.create_time)
    } else {
        callback.msg_id.clone()
    };
    if ep
        .seen
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .contains(&key)
    {
        ep.counters.duplicates.fetch_add(1, Ordering::Relaxed);
        return success();
    }
    if let Some(event) = (ep.convert)(callback) {
        let delivered = tokio::select! {
            _ = ep.shutdown.cancelled() => false,
            sent = tokio::time::timeout(QUEUE_WAIT, ep.inbound.send(event)) => matches!(sent, Ok(Ok(()))),
        };
        if !delivered {
            // WeCom retries an unanswered callback.
            return StatusCode::SERVICE_UNAVAILABLE.into_response();
        }
        ep.counters.accepted.fetch_add(1, Ordering::Relaxed);
        ep.status.add_received();
    }
    ep.seen
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(&key);
    success()
}

async fn health(State(ep): State<Arc<Endpoint>>) -> Response {
    axum::Json(json!({
        "status": "ok",
        "platform": "wecom_callback",
        "corp_id": ep.settings.corp_id,
        "path": ep.settings.path,
        "accepted": ep.counters.accepted.load(Ordering::Relaxed),
        "duplicates": ep.counters.duplicates.load(Ordering::Relaxed),
        "rejected": ep.counters.rejected.load(Ordering::Relaxed),
    }))
    .into_response()
}

/// The routes: the callback path (GET for the URL check, POST for messages) and `/health`.
pub(crate) fn router(ep: Arc<Endpoint>) -> Router {
    let path = ep.settings.path.clone();
    let mut router = Router::new().route(&path, get(verify).post(receive));
    if path != "/health" {
        router = router.route("/health", get(health));
    }
    router.layer(DefaultBodyLimit::max(MAX_BODY)).with_state(ep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_xml_fields() {
        let xml = "<xml><ToUserName><![CDATA[ww1]]></ToUserName><FromUserName><![CDATA[zhangsan]]></FromUserName>\
                   <CreateTime>1348831860</CreateTime><MsgType><![CDATA[text]]></MsgType>\
                   <Content><![CDATA[a <b> & ]]]></Content><MsgId>1234567890123456</MsgId><AgentID>1</AgentID></xml>";
        let c = Callback::parse(xml);
        assert_eq!(c.to, "ww1");
        assert_eq!(c.from, "zhangsan");
        assert_eq!(c.create_time, 1_348_831_860);
        assert_eq!(c.msg_type, "text");
        assert_eq!(c.content, "a <b> & ]");
        assert_eq!(c.msg_id, "1234567890123456");
        assert_eq!(
            xml_field("<a>x &amp;lt; y</a>", "a").as_deref(),
            Some("x &lt; y")
        );
        assert_eq!(xml_field("<a>x", "a"), None);
    }
}
