//! A WhatsApp Cloud API double on 127.0.0.1, following Meta's reference
//! (<https://developers.facebook.com/docs/whatsapp/cloud-api/reference>), and the other half
//! of the conversation: Meta's webhook deliveries to the gateway, signed as Meta signs them.
//!
//! - Graph API `/{version}/…` with `Authorization: Bearer <token>` (anything else: HTTP 401,
//!   `{"error": {"message", "type": "OAuthException", "code": 190, "fbtrace_id"}}`):
//!   - `POST /{phone-number-id}/messages`: `text` (body at most 4,096 characters),
//!     `interactive` (`button`: one to three reply buttons, titles at most 20 characters,
//!     unique ids; `list`: at most ten rows, titles at most 24), `image`/`audio`/`document`/
//!     `video` by uploaded `id` or `link`, and read receipts (`status: read`, optionally
//!     `typing_indicator`), each recorded; answered
//!     `{"messaging_product": "whatsapp", "contacts": [{"input", "wa_id"}], "messages":
//!     [{"id": "wamid.…"}]}` (`{"success": true}` for a read receipt). Invalid parameters:
//!     HTTP 400 with code 100, as Graph answers them.
//!   - `POST /{phone-number-id}/media` (multipart `messaging_product`, `type`, `file`) →
//!     `{"id"}`;
//!   - `GET /{media-id}` → `{"messaging_product", "url", "mime_type", "sha256", "file_size",
//!     "id"}`; the URL serves the bytes to a request with the token only;
//!   - `GET /{phone-number-id}` → `{"verified_name", "display_phone_number", "id",
//!     "quality_rating"}`.
//! - Faults: the next request to a path answers a Graph error (`fail_next`), e.g. code 130429
//!   (throughput) or 131056 (pair rate limit).
//! - [`WebhookSender`]: posts a payload to the gateway's webhook with
//!   `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>` (or a given signature), and
//!   makes the `GET` subscription handshake. [`text_message`], [`image_message`],
//!   [`button_reply`] and [`list_reply`] build the payloads Meta sends.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use ring::hmac;
use serde_json::{Value, json};

use super::server::{BoxFuture, MockRequest, MockResponse, Server, Service};
use crate::http_client::{HttpReply, http};

pub const API_VERSION: &str = "v20.0";
pub const PHONE_NUMBER_ID: &str = "106540352242922";
pub const DISPLAY_PHONE_NUMBER: &str = "15550100000";
pub const VERIFIED_NAME: &str = "Hermes Test";

/// A request the Graph double received.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphRequest {
    pub method: String,
    pub path: String,
    pub authorization: Option<String>,
    /// JSON bodies as sent; multipart bodies as `{field: value}` (files as
    /// `{"filename", "content_type", "size"}`).
    pub body: Value,
}

#[derive(Debug, Default)]
struct State {
    requests: Vec<GraphRequest>,
    /// Accepted message bodies (read receipts excluded).
    messages: Vec<Value>,
    receipts: Vec<Value>,
    /// media id → (mime, bytes).
    media: HashMap<String, (String, Vec<u8>)>,
    faults: HashMap<String, VecDeque<(u16, i64, String)>>,
    next_id: u64,
}

struct Shared {
    token: String,
    state: Mutex<State>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Graph's error body.
pub fn graph_error(status: u16, code: i64, message: &str) -> MockResponse {
    let kind = if code == 190 {
        "OAuthException"
    } else {
        "GraphMethodException"
    };
    MockResponse::json(
        status,
        &json!({"error": {"message": message, "type": kind, "code": code, "error_subcode": null, "fbtrace_id": "AbCdEfGhIjK"}}),
    )
}

fn invalid(message: &str) -> MockResponse {
    graph_error(400, 100, &format!("(#100) {message}"))
}

/// Checks a send against the documented parameter rules; the reason when it breaks one.
fn check_message(body: &Value) -> Result<(), String> {
    if body["messaging_product"] != "whatsapp" {
        return Err("The parameter messaging_product is required.".into());
    }
    let to = body["to"].as_str().unwrap_or_default();
    if to.is_empty() {
        return Err("The parameter to is required.".into());
    }
    let kind = body["type"].as_str().unwrap_or("text");
    match kind {
        "text" => {
            let text = body["text"]["body"].as_str().unwrap_or_default();
            if text.is_empty() {
                return Err("Param text['body'] is required.".into());
            }
            if text.chars().count() > 4096 {
                return Err("Param text['body'] must be at most 4096 characters long.".into());
            }
        }
        "interactive" => {
            let inter = &body["interactive"];
            let text = inter["body"]["text"].as_str().unwrap_or_default();
            if text.is_empty() || text.chars().count() > 1024 {
                return Err(
                    "Param interactive['body']['text'] must be 1 to 1024 characters.".into(),
                );
            }
            match inter["type"].as_str() {
                Some("button") => {
                    let buttons = inter["action"]["buttons"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default();
                    if buttons.is_empty() || buttons.len() > 3 {
                        return Err(
                            "Param interactive['action']['buttons'] must have 1 to 3 buttons."
                                .into(),
                        );
                    }
                    let mut ids = std::collections::HashSet::new();
                    for b in &buttons {
                        let title = b["reply"]["title"].as_str().unwrap_or_default();
                        let id = b["reply"]["id"].as_str().unwrap_or_default();
                        if b["type"] != "reply" || title.is_empty() || title.chars().count() > 20 {
                            return Err("Button title must be 1 to 20 characters.".into());
                        }
                        if id.is_empty() || id.len() > 256 || !ids.insert(id.to_string()) {
                            return Err("Button ids must be unique, 1 to 256 characters.".into());
                        }
                    }
                }
                Some("list") => {
                    let rows: Vec<Value> = inter["action"]["sections"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .flat_map(|s| s["rows"].as_array().cloned().unwrap_or_default())
                        .collect();
                    if rows.is_empty() || rows.len() > 10 {
                        return Err("A list message has 1 to 10 rows.".into());
                    }
                    if inter["action"]["button"].as_str().is_none_or(str::is_empty) {
                        return Err("Param interactive['action']['button'] is required.".into());
                    }
                    for r in &rows {
                        let title = r["title"].as_str().unwrap_or_default();
                        if title.is_empty() || title.chars().count() > 24 {
                            return Err("Row title must be 1 to 24 characters.".into());
                        }
                        if r["description"]
                            .as_str()
                            .is_some_and(|d| d.chars().count() > 72)
                        {
                            return Err("Row description must be at most 72 characters.".into());
                        }
                    }
                }
                _ => return Err("Param interactive['type'] is invalid.".into()),
            }
        }
        "image" | "audio" | "document" | "video" | "sticker" => {
            let media = &body[kind];
            if media["id"].as_str().is_none() == media["link"].as_str().is_none() {
                return Err(format!("Param {kind} needs exactly one of id or link."));
            }
        }
        other => {
            return Err(format!(
                "Param type {other:?} is not supported by this double."
            ));
        }
    }
    Ok(())
}

struct GraphService {
    shared: Arc<Shared>,
    base: Mutex<String>,
}

impl GraphService {
    fn handle(&self, req: &MockRequest) -> MockResponse {
        let path = req.path().to_string();
        let authorization = req.header("authorization").map(str::to_string);
        let body = if req
            .header("content-type")
            .is_some_and(|c| c.to_ascii_lowercase().starts_with("multipart/"))
        {
            req.params()
        } else {
            serde_json::from_slice(&req.body).unwrap_or(Value::Null)
        };
        let mut st = self.shared.lock();
        st.requests.push(GraphRequest {
            method: req.method.clone(),
            path: path.clone(),
            authorization: authorization.clone(),
            body: body.clone(),
        });
        if authorization.as_deref() != Some(&format!("Bearer {}", self.shared.token)) {
            return graph_error(
                401,
                190,
                "Invalid OAuth access token - Cannot parse access token",
            );
        }
        if let Some((status, code, message)) =
            st.faults.get_mut(&path).and_then(VecDeque::pop_front)
        {
            return graph_error(status, code, &message);
        }
        if let Some(id) = path.strip_prefix("/media-download/") {
            return match st.media.get(id) {
                Some((mime, bytes)) => MockResponse::bytes(200, mime, bytes.clone()),
                None => MockResponse::empty(404),
            };
        }
        let Some(rest) = path.strip_prefix(&format!("/{API_VERSION}/")) else {
            return graph_error(400, 2500, "Unknown path components");
        };
        let segments: Vec<&str> = rest.split('/').collect();
        match (req.method.as_str(), segments.as_slice()) {
            ("POST", [phone, "messages"]) if *phone == PHONE_NUMBER_ID => {
                if body["status"] == "read" {
                    if body["message_id"].as_str().is_none_or(str::is_empty) {
                        return invalid("The parameter message_id is required.");
                    }
                    st.receipts.push(body);
                    return MockResponse::json(200, &json!({"success": true}));
                }
                if let Err(why) = check_message(&body) {
                    return invalid(&why);
                }
                st.next_id += 1;
                let wamid = format!("wamid.HBgLMTU1NTAxMDAwMDAV{:08X}", st.next_id);
                let to = body["to"].as_str().unwrap_or_default().to_string();
                st.messages.push(body);
                MockResponse::json(
                    200,
                    &json!({
                        "messaging_product": "whatsapp",
                        "contacts": [{"input": to, "wa_id": to}],
                        "messages": [{"id": wamid}],
                    }),
                )
            }
            ("POST", [phone, "media"]) if *phone == PHONE_NUMBER_ID => {
                if body["messaging_product"] != "whatsapp" {
                    return invalid("The parameter messaging_product is required.");
                }
                let Some(file) = body.get("file").filter(|f| f.is_object()) else {
                    return invalid("The parameter file is required.");
                };
                st.next_id += 1;
                let id = format!("{}", 900_000_000_000u64 + st.next_id);
                let mime = file["content_type"]
                    .as_str()
                    .or(body["type"].as_str())
                    .unwrap_or("application/octet-stream")
                    .to_string();
                let bytes = file["text"]
                    .as_str()
                    .map(|t| t.as_bytes().to_vec())
                    .unwrap_or_default();
                st.media.insert(id.clone(), (mime, bytes));
                MockResponse::json(200, &json!({"id": id}))
            }
            ("GET", [phone]) if *phone == PHONE_NUMBER_ID => MockResponse::json(
                200,
                &json!({
                    "verified_name": VERIFIED_NAME,
                    "code_verification_status": "VERIFIED",
                    "display_phone_number": DISPLAY_PHONE_NUMBER,
                    "quality_rating": "GREEN",
                    "id": PHONE_NUMBER_ID,
                }),
            ),
            ("GET", [media_id]) => match st.media.get(*media_id) {
                Some((mime, bytes)) => {
                    let base = self
                        .base
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .clone();
                    MockResponse::json(
                        200,
                        &json!({
                            "messaging_product": "whatsapp",
                            "url": format!("{base}/media-download/{media_id}"),
                            "mime_type": mime,
                            "sha256": "0000",
                            "file_size": bytes.len().to_string(),
                            "id": media_id,
                        }),
                    )
                }
                None => graph_error(
                    400,
                    100,
                    "Unsupported get request. Object with ID does not exist",
                ),
            },
            _ => graph_error(400, 2500, "Unknown path components"),
        }
    }
}

impl Service for GraphService {
    fn http(self: Arc<Self>, req: MockRequest) -> BoxFuture<MockResponse> {
        Box::pin(async move { self.handle(&req) })
    }
}

/// The Graph API double.
pub struct WhatsAppCloudMock {
    server: Server,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for WhatsAppCloudMock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WhatsAppCloudMock")
            .field("addr", &self.server.addr)
            .finish()
    }
}

impl WhatsAppCloudMock {
    /// A Graph API whose system user has the access token `token`.
    #[allow(clippy::expect_used)]
    pub fn start(token: &str) -> WhatsAppCloudMock {
        let shared = Arc::new(Shared {
            token: token.to_string(),
            state: Mutex::new(State::default()),
        });
        let service = Arc::new(GraphService {
            shared: Arc::clone(&shared),
            base: Mutex::new(String::new()),
        });
        let server =
            Server::start("whatsapp-cloud", Arc::clone(&service)).expect("start the Graph mock");
        *service.base.lock().unwrap_or_else(PoisonError::into_inner) =
            format!("http://127.0.0.1:{}", server.addr.port());
        WhatsAppCloudMock { server, shared }
    }

    /// The value for `platforms.whatsapp_cloud.extra.graph_url`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.server.addr.port())
    }

    /// An inbound file users can send (its id goes in the webhook payload).
    pub fn add_media(&self, id: &str, mime: &str, bytes: Vec<u8>) {
        self.shared
            .lock()
            .media
            .insert(id.to_string(), (mime.to_string(), bytes));
    }

    /// A file the gateway uploaded: its MIME type and size.
    pub fn media(&self, id: &str) -> Option<(String, Vec<u8>)> {
        self.shared.lock().media.get(id).cloned()
    }

    pub fn requests(&self) -> Vec<GraphRequest> {
        self.shared.lock().requests.clone()
    }

    /// The message bodies accepted, in order (read receipts are in [`receipts`](Self::receipts)).
    pub fn messages(&self) -> Vec<Value> {
        self.shared.lock().messages.clone()
    }

    /// Accepted messages to `wa_id`.
    pub fn messages_to(&self, wa_id: &str) -> Vec<Value> {
        self.messages()
            .into_iter()
            .filter(|m| m["to"] == wa_id)
            .collect()
    }

    /// Text bodies sent to `wa_id`, interactive bodies included.
    pub fn texts_to(&self, wa_id: &str) -> Vec<String> {
        self.messages_to(wa_id)
            .iter()
            .filter_map(|m| {
                m["text"]["body"]
                    .as_str()
                    .or(m["interactive"]["body"]["text"].as_str())
                    .map(str::to_string)
            })
            .collect()
    }

    /// Read receipts (with their typing indicators).
    pub fn receipts(&self) -> Vec<Value> {
        self.shared.lock().receipts.clone()
    }

    /// The next request to `path` (e.g. `/v20.0/<phone>/messages`) answers HTTP `status` with
    /// Graph error `code`.
    pub fn fail_next(&self, path: &str, status: u16, code: i64, message: &str) {
        self.shared
            .lock()
            .faults
            .entry(path.to_string())
            .or_default()
            .push_back((status, code, message.to_string()));
    }

    /// `/{version}/{phone-number-id}/messages`
    pub fn messages_path() -> String {
        format!("/{API_VERSION}/{PHONE_NUMBER_ID}/messages")
    }
}

/// `sha256=<hex>` of the HMAC-SHA256 of `body` under the app secret, as Meta signs.
pub fn signature(app_secret: &str, body: &[u8]) -> String {
    let tag = hmac::sign(
        &hmac::Key::new(hmac::HMAC_SHA256, app_secret.as_bytes()),
        body,
    );
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

/// Meta's side of the webhook: delivers to the gateway's listener.
#[derive(Debug, Clone)]
pub struct WebhookSender {
    /// `127.0.0.1:PORT`
    pub addr: String,
    pub path: String,
    pub app_secret: String,
}

impl WebhookSender {
    /// Posts `payload` signed with the app secret.
    pub fn deliver(&self, payload: &Value) -> HttpReply {
        let body = payload.to_string();
        let sig = signature(&self.app_secret, body.as_bytes());
        self.deliver_signed(&body, &sig)
    }

    /// Posts `body` with `X-Hub-Signature-256: signature` as given.
    pub fn deliver_signed(&self, body: &str, signature: &str) -> HttpReply {
        let header = format!("X-Hub-Signature-256: {signature}");
        http(&self.addr, "POST", &self.path, &[&header], body)
    }

    /// The subscription handshake: `GET path?hub.mode=…&hub.verify_token=…&hub.challenge=…`.
    pub fn verify(&self, mode: &str, token: &str, challenge: &str) -> HttpReply {
        let target = format!(
            "{}?hub.mode={}&hub.verify_token={}&hub.challenge={}",
            self.path,
            encode(mode),
            encode(token),
            encode(challenge)
        );
        http(&self.addr, "GET", &target, &[], "")
    }
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The envelope of every delivery: one change in the `messages` field.
pub fn envelope(from: &str, name: &str, message: Value) -> Value {
    json!({
        "object": "whatsapp_business_account",
        "entry": [{
            "id": "102290129340398",
            "changes": [{
                "field": "messages",
                "value": {
                    "messaging_product": "whatsapp",
                    "metadata": {"display_phone_number": DISPLAY_PHONE_NUMBER, "phone_number_id": PHONE_NUMBER_ID},
                    "contacts": [{"profile": {"name": name}, "wa_id": from}],
                    "messages": [message],
                },
            }],
        }],
    })
}

fn now() -> String {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
        .to_string()
}

/// A text message from `from` (a wa_id), as Meta delivers it.
pub fn text_message(from: &str, name: &str, wamid: &str, body: &str) -> Value {
    envelope(
        from,
        name,
        json!({"from": from, "id": wamid, "timestamp": now(), "type": "text", "text": {"body": body}}),
    )
}

/// An image message (the media must be added to the mock with [`WhatsAppCloudMock::add_media`]).
pub fn image_message(
    from: &str,
    name: &str,
    wamid: &str,
    media_id: &str,
    mime: &str,
    caption: &str,
) -> Value {
    envelope(
        from,
        name,
        json!({"from": from, "id": wamid, "timestamp": now(), "type": "image",
               "image": {"caption": caption, "mime_type": mime, "sha256": "0000", "id": media_id}}),
    )
}

/// A tap on reply button `id` of message `context_id`.
pub fn button_reply(
    from: &str,
    name: &str,
    wamid: &str,
    context_id: &str,
    id: &str,
    title: &str,
) -> Value {
    envelope(
        from,
        name,
        json!({"context": {"from": DISPLAY_PHONE_NUMBER, "id": context_id}, "from": from, "id": wamid,
               "timestamp": now(), "type": "interactive",
               "interactive": {"type": "button_reply", "button_reply": {"id": id, "title": title}}}),
    )
}

/// A pick of row `id` from list message `context_id`.
pub fn list_reply(
    from: &str,
    name: &str,
    wamid: &str,
    context_id: &str,
    id: &str,
    title: &str,
) -> Value {
    envelope(
        from,
        name,
        json!({"context": {"from": DISPLAY_PHONE_NUMBER, "id": context_id}, "from": from, "id": wamid,
               "timestamp": now(), "type": "interactive",
               "interactive": {"type": "list_reply", "list_reply": {"id": id, "title": title}}}),
    )
}
